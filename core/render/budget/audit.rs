//! The audit of a design: refused when it uses what the budget cannot bound (see the parent
//! module), or when its estimated instructions or output could exceed [`FUEL`] or
//! [`MAX_PAGE_BYTES`].

use std::collections::{BTreeSet, HashMap};

use minijinja::machinery::ast::{BinOpKind, CallArg, CompareOpKind, Expr, Stmt};
use minijinja::value::Value;

use super::{FUEL, MAX_PAGE_BYTES};
use crate::domain::lead::MAX_VALUE_CHARS;

/// The most any value from outside the design can be: a lead's value, in bytes.
const MAX_OUTSIDE_VALUE_BYTES: u64 = MAX_VALUE_CHARS as u64 * 4;

/// How often a loop over something the audit cannot count (a lead's value, a range whose bounds
/// are not written in the design) may run: minijinja's own cap on a range.
const UNKNOWN_ITERATIONS: u64 = 100_000;
/// What the engine spends on each item of a loop, besides its body.
const LOOP_ITEM_STEPS: u64 = 5;
/// What the engine spends entering and leaving a loop.
const LOOP_STEPS: u64 = 6;

/// Filters a design may use: none repeats, pads or joins its input into something larger.
const FILTERS: &[&str] = &[
    "abs",
    "bool",
    "capitalize",
    "count",
    "d",
    "default",
    "e",
    "escape",
    "first",
    "float",
    "int",
    "last",
    "length",
    "lower",
    "reverse",
    "round",
    "string",
    "title",
    "trim",
    "truncate",
    "upper",
    "urlencode",
    "wordcount",
];

/// Filters that keep a value's size (or shrink it): allowed in assignments too.
const SIZE_KEEPING_FILTERS: &[&str] = &[
    "capitalize",
    "d",
    "default",
    "first",
    "last",
    "lower",
    "title",
    "trim",
    "truncate",
    "upper",
];

/// Why a design was refused, and where.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    pub line: Option<usize>,
    pub reason: String,
    /// The design does not parse (rather than using what the budget cannot bound).
    pub syntax: bool,
}

/// What the audit learned of a design it accepts.
#[derive(Debug, Default)]
pub struct Audit {
    /// The variables the design reads from outside, dotted for attributes (`branding.logo_url`).
    pub variables: BTreeSet<String>,
    /// The most instructions a render could take, every branch counted.
    pub cost: u64,
    /// The names the design assigns (`set`, `with`, loop targets).
    pub assigned: BTreeSet<String>,
}

/// Refuses a design that uses what the budget cannot bound, or that could cost more than it.
pub fn audit(html: &str) -> Result<Audit, Refusal> {
    let ast =
        minijinja::machinery::parse(html, "design", Default::default()).map_err(|err| Refusal {
            line: err.line(),
            reason: err
                .detail()
                .map_or_else(|| err.kind().to_string(), str::to_owned),
            syntax: true,
        })?;
    let mut auditor = Auditor::default();
    let cost = auditor.stmt(&ast)?;
    if cost > FUEL {
        return Err(Refusal {
            syntax: false,
            line: None,
            reason: format!(
                "a render could take about {cost} steps, more than the {FUEL} a page may take \
                 (loops nested inside loops multiply; every branch counts)"
            ),
        });
    }
    Ok(Audit {
        variables: auditor.variables,
        cost,
        assigned: auditor.assigned.into_keys().collect(),
    })
}

#[derive(Default)]
struct Auditor {
    variables: BTreeSet<String>,
    /// Names the design assigns (`set`, `with`, loop targets), with the most they can hold.
    assigned: HashMap<String, u64>,
    /// How deep in an expression the audit is (a chain of `~` is as deep as it is long).
    depth: usize,
}

/// How deep an expression may nest: deeper ones would take the audit's and the compiler's stacks.
const MAX_DEPTH: usize = 100;

fn refuse<T>(line: u16, reason: impl Into<String>) -> Result<T, Refusal> {
    Err(Refusal {
        line: Some(usize::from(line)),
        reason: reason.into(),
        syntax: false,
    })
}

/// How big an expression can get and what evaluating it costs.
#[derive(Clone, Copy)]
struct Estimate {
    bytes: u64,
    steps: u64,
}

impl Estimate {
    fn join(self, other: Estimate) -> Estimate {
        Estimate {
            bytes: self.bytes.saturating_add(other.bytes),
            steps: self.steps.saturating_add(other.steps),
        }
    }
}

impl Auditor {
    fn stmts(&mut self, stmts: &[Stmt<'_>]) -> Result<u64, Refusal> {
        let mut cost = 0u64;
        for stmt in stmts {
            cost = cost.saturating_add(self.stmt(stmt)?);
        }
        Ok(cost)
    }

    /// The most instructions a statement can take.
    fn stmt(&mut self, stmt: &Stmt<'_>) -> Result<u64, Refusal> {
        match stmt {
            Stmt::Template(t) => self.stmts(&t.children),
            Stmt::EmitRaw(_) => Ok(1),
            Stmt::EmitExpr(e) => Ok(self.expr(&e.expr, e.span().start_line)?.steps + 1),
            Stmt::ForLoop(l) => {
                let line = l.span().start_line;
                if l.recursive {
                    return refuse(line, "recursive loops are not allowed in a design");
                }
                let iter = self.expr(&l.iter, line)?;
                let times = self.iterations(&l.iter);
                // A loop's variable holds an item of what it iterates: no bigger than it.
                self.assign(&l.target, iter.bytes);
                let filter = match &l.filter_expr {
                    Some(expr) => self.expr(expr, line)?.steps,
                    None => 0,
                };
                let body = self.stmts(&l.body)?;
                // Each item costs the engine its iteration, the loop variable's store and the
                // jump back; entering and leaving a loop costs it a frame. With 3 and nothing,
                // loops nested three deep (365 x 203 x 3 items) were estimated under the
                // budget and ran out of fuel (a property test found it).
                let per_item = body.saturating_add(filter).saturating_add(LOOP_ITEM_STEPS);
                let otherwise = self.stmts(&l.else_body)?;
                Ok(iter
                    .steps
                    .saturating_add(LOOP_STEPS)
                    .saturating_add(times.saturating_mul(per_item))
                    .saturating_add(otherwise))
            }
            Stmt::IfCond(c) => {
                let test = self.expr(&c.expr, c.span().start_line)?.steps;
                let yes = self.stmts(&c.true_body)?;
                let no = self.stmts(&c.false_body)?;
                Ok(test
                    .saturating_add(yes)
                    .saturating_add(no)
                    .saturating_add(1))
            }
            Stmt::WithBlock(w) => {
                let line = w.span().start_line;
                let mut cost = 1u64;
                for (target, value) in &w.assignments {
                    let value = self.assignment(value, line)?;
                    self.assign(target, value.bytes);
                    cost = cost.saturating_add(value.steps);
                }
                Ok(cost.saturating_add(self.stmts(&w.body)?))
            }
            Stmt::Set(s) => {
                let value = self.assignment(&s.expr, s.span().start_line)?;
                self.assign(&s.target, value.bytes);
                Ok(value.steps + 1)
            }
            Stmt::SetBlock(s) => refuse(
                s.span().start_line,
                "{% set %}...{% endset %} is not allowed in a design; assign a value with {% set name = value %}",
            ),
            Stmt::AutoEscape(a) => refuse(
                a.span().start_line,
                "{% autoescape %} is not allowed in a design: every value is escaped",
            ),
            Stmt::FilterBlock(f) => refuse(
                f.span().start_line,
                "{% filter %} blocks are not allowed in a design; apply filters to values",
            ),
            Stmt::Do(d) => refuse(d.span().start_line, "{% do %} is not allowed in a design"),
        }
    }

    /// A value a design assigns: it may name or lightly transform a value, not build a bigger
    /// one (which a loop could then grow without bound).
    fn assignment(&mut self, expr: &Expr<'_>, line: u16) -> Result<Estimate, Refusal> {
        let plain = match expr {
            Expr::Test(_) => true,
            Expr::IfExpr(i) => is_plain(&i.true_expr) && i.false_expr.as_ref().is_none_or(is_plain),
            other => is_plain(other),
        };
        if !plain {
            return refuse(
                line,
                "a design may assign only a value or a lookup, optionally through default, trim, \
                 upper, lower, title, capitalize, truncate, first or last; build text where it is shown",
            );
        }
        self.expr(expr, line)
    }

    fn assign(&mut self, target: &Expr<'_>, bytes: u64) {
        match target {
            Expr::Var(v) => {
                let held = self.assigned.entry(v.id.to_owned()).or_default();
                *held = (*held).max(bytes);
            }
            Expr::Tuple(t) => {
                for item in &t.items {
                    self.assign(item, bytes);
                }
            }
            _ => {}
        }
    }

    /// How often a loop over `expr` can run.
    fn iterations(&self, expr: &Expr<'_>) -> u64 {
        match expr {
            Expr::Call(call) if is_range(&call.expr) => {
                let bounds: Option<Vec<i64>> = call
                    .args
                    .iter()
                    .map(|arg| match arg {
                        CallArg::Pos(Expr::Const(c)) => c.value.as_i64(),
                        _ => None,
                    })
                    .collect();
                match bounds.as_deref() {
                    Some([upper]) => (*upper).max(0).unsigned_abs(),
                    Some([lower, upper]) => upper.saturating_sub(*lower).max(0).unsigned_abs(),
                    Some([lower, upper, step]) if *step != 0 => {
                        (upper.saturating_sub(*lower) / step).max(0).unsigned_abs() + 1
                    }
                    _ => UNKNOWN_ITERATIONS,
                }
                .min(UNKNOWN_ITERATIONS)
            }
            Expr::List(list) => list.items.len() as u64,
            Expr::Const(c) => c.value.len().map_or(UNKNOWN_ITERATIONS, |n| n as u64),
            // The campaign's points: core never keeps more.
            Expr::GetAttr(g)
                if g.name == "points" && matches!(&g.expr, Expr::Var(v) if v.id == "copy") =>
            {
                crate::render::copy::MAX_POINTS as u64
            }
            _ => UNKNOWN_ITERATIONS,
        }
    }

    /// The most an expression can hold and cost; refuses what the budget cannot bound.
    fn expr(&mut self, expr: &Expr<'_>, line: u16) -> Result<Estimate, Refusal> {
        if self.depth >= MAX_DEPTH {
            return refuse(
                line,
                format!("an expression nests deeper than {MAX_DEPTH} levels"),
            );
        }
        self.depth += 1;
        let estimate = self.expr_unchecked(expr, line);
        self.depth -= 1;
        let estimate = estimate?;
        if estimate.bytes > MAX_PAGE_BYTES as u64 {
            return refuse(
                line,
                format!(
                    "this expression could build about {} bytes, more than a whole page may have \
                     ({MAX_PAGE_BYTES})",
                    estimate.bytes
                ),
            );
        }
        Ok(estimate)
    }

    fn expr_unchecked(&mut self, expr: &Expr<'_>, line: u16) -> Result<Estimate, Refusal> {
        let one = Estimate { bytes: 0, steps: 1 };
        Ok(match expr {
            Expr::Var(v) => {
                let bytes = match self.assigned.get(v.id) {
                    Some(bytes) => *bytes,
                    None => {
                        if v.id != "loop" && v.id != "range" {
                            self.variables.insert(v.id.to_owned());
                        }
                        MAX_OUTSIDE_VALUE_BYTES
                    }
                };
                Estimate { bytes, steps: 1 }
            }
            Expr::Const(c) => Estimate {
                bytes: const_bytes(&c.value),
                steps: 1,
            },
            Expr::Slice(s) => {
                let mut estimate = self.expr(&s.expr, line)?;
                for part in [&s.start, &s.stop, &s.step].into_iter().flatten() {
                    estimate.steps += self.expr(part, line)?.steps;
                }
                estimate.steps += 1;
                estimate
            }
            Expr::UnaryOp(u) => {
                let inner = self.expr(&u.expr, line)?;
                Estimate {
                    bytes: inner.bytes.min(64),
                    steps: inner.steps + 1,
                }
            }
            Expr::BinOp(b) => {
                if matches!(b.op, BinOpKind::Mul | BinOpKind::Pow)
                    && !(is_number(&b.left) && is_number(&b.right))
                {
                    return refuse(
                        line,
                        "`*` and `**` multiply only numbers written in the design or a loop's \
                         counters (repeating text is not allowed in a design)",
                    );
                }
                let left = self.expr(&b.left, line)?;
                let right = self.expr(&b.right, line)?;
                let mut both = left.join(right).join(one);
                if matches!(b.op, BinOpKind::In) {
                    both.steps = both.steps.saturating_add(self.iterations(&b.right));
                }
                if !matches!(b.op, BinOpKind::Add | BinOpKind::Concat) {
                    // Numbers, booleans and one operand of `and`/`or`.
                    both.bytes = left.bytes.max(right.bytes);
                }
                both
            }
            Expr::Compare(c) => {
                let mut estimate = self.expr(&c.expr, line)?;
                for op in &c.ops {
                    estimate = estimate.join(self.expr(&op.expr, line)?);
                    if matches!(op.op, CompareOpKind::In | CompareOpKind::NotIn) {
                        estimate.steps = estimate.steps.saturating_add(self.iterations(&op.expr));
                    }
                }
                Estimate {
                    bytes: 8,
                    steps: estimate.steps + 1,
                }
            }
            Expr::IfExpr(i) => {
                let test = self.expr(&i.test_expr, line)?;
                let yes = self.expr(&i.true_expr, line)?;
                let no = match &i.false_expr {
                    Some(e) => self.expr(e, line)?,
                    None => Estimate { bytes: 0, steps: 0 },
                };
                Estimate {
                    bytes: yes.bytes.max(no.bytes),
                    steps: test.steps + yes.steps + no.steps + 1,
                }
            }
            Expr::Filter(f) => {
                if f.name == "safe" {
                    return refuse(
                        line,
                        "the safe filter is not allowed in a design: every value is escaped",
                    );
                }
                if !FILTERS.contains(&f.name) {
                    return refuse(
                        line,
                        format!(
                            "the filter {} is not allowed in a design (allowed: {})",
                            f.name,
                            FILTERS.join(", ")
                        ),
                    );
                }
                let mut estimate = match &f.expr {
                    Some(e) => self.expr(e, line)?,
                    None => Estimate { bytes: 0, steps: 0 },
                };
                for arg in &f.args {
                    let arg = self.expr(call_arg(arg, line)?, line)?;
                    // `default` may yield its argument instead.
                    estimate.bytes = estimate.bytes.max(arg.bytes);
                    estimate.steps += arg.steps;
                }
                // Escaping can make text up to six times longer (`'` -> `&#x27;`); the others
                // keep or shrink it, or turn it into a number or a short word.
                if matches!(f.name, "escape" | "e" | "urlencode") {
                    estimate.bytes = estimate.bytes.saturating_mul(6);
                }
                estimate.bytes = estimate.bytes.max(64);
                estimate.steps += 1;
                estimate
            }
            Expr::Test(t) => {
                let mut steps = self.expr(&t.expr, line)?.steps + 1;
                for arg in &t.args {
                    steps += self.expr(call_arg(arg, line)?, line)?.steps;
                }
                Estimate { bytes: 8, steps }
            }
            Expr::GetAttr(g) => {
                // `branding.logo_url` read from outside: the attribute is the variable.
                let inner = match &g.expr {
                    Expr::Var(v) if !self.assigned.contains_key(v.id) => {
                        if v.id != "loop" {
                            self.variables.insert(format!("{}.{}", v.id, g.name));
                        }
                        Estimate {
                            bytes: MAX_OUTSIDE_VALUE_BYTES,
                            steps: 1,
                        }
                    }
                    other => self.expr(other, line)?,
                };
                Estimate {
                    bytes: inner.bytes,
                    steps: inner.steps + 1,
                }
            }
            Expr::GetItem(g) => {
                let inner = self.expr(&g.expr, line)?;
                let subscript = self.expr(&g.subscript_expr, line)?;
                Estimate {
                    bytes: inner.bytes,
                    steps: inner.steps + subscript.steps + 1,
                }
            }
            Expr::Call(c) => {
                let allowed = is_range(&c.expr) || is_loop_method(&c.expr);
                if !allowed {
                    return refuse(
                        line,
                        "a design may call only range(...), loop.cycle(...) and loop.changed(...)",
                    );
                }
                let mut estimate = Estimate { bytes: 0, steps: 1 };
                for arg in &c.args {
                    let arg = self.expr(call_arg(arg, line)?, line)?;
                    estimate.bytes = estimate.bytes.max(arg.bytes);
                    estimate.steps += arg.steps;
                }
                if is_range(&c.expr) {
                    // A range is counted where it is iterated; as a value it prints its numbers.
                    estimate.bytes = self.iterations(expr).saturating_mul(8);
                }
                estimate
            }
            Expr::List(l) => self.items(&l.items, line)?,
            Expr::Tuple(t) => self.items(&t.items, line)?,
            Expr::Map(m) => {
                let keys = self.items(&m.keys, line)?;
                keys.join(self.items(&m.values, line)?)
            }
        })
    }

    fn items(&mut self, items: &[Expr<'_>], line: u16) -> Result<Estimate, Refusal> {
        let mut estimate = Estimate { bytes: 0, steps: 1 };
        for item in items {
            estimate = estimate.join(self.expr(item, line)?);
        }
        Ok(estimate)
    }
}

/// A value named, looked up, or passed through filters that keep its size.
fn is_plain(expr: &Expr<'_>) -> bool {
    match expr {
        Expr::Var(_) | Expr::Const(_) | Expr::GetAttr(_) | Expr::GetItem(_) => true,
        Expr::Filter(f) => {
            SIZE_KEEPING_FILTERS.contains(&f.name) && f.expr.as_ref().is_some_and(is_plain)
        }
        _ => false,
    }
}

fn call_arg<'a, 'b>(arg: &'b CallArg<'a>, line: u16) -> Result<&'b Expr<'a>, Refusal> {
    match arg {
        CallArg::Pos(e) | CallArg::Kwarg(_, e) => Ok(e),
        CallArg::PosSplat(_) | CallArg::KwargSplat(_) => refuse(
            line,
            "argument splats (*args, **kwargs) are not allowed in a design",
        ),
    }
}

fn is_range(expr: &Expr<'_>) -> bool {
    matches!(expr, Expr::Var(v) if v.id == "range")
}

fn is_loop_method(expr: &Expr<'_>) -> bool {
    matches!(expr, Expr::GetAttr(g) if matches!(&g.expr, Expr::Var(v) if v.id == "loop")
        && matches!(g.name, "cycle" | "changed"))
}

/// A number written in the design, a loop's counter, or arithmetic of those: what `*` may take.
fn is_number(expr: &Expr<'_>) -> bool {
    match expr {
        Expr::Const(c) => c.value.is_number(),
        Expr::GetAttr(g) => {
            matches!(&g.expr, Expr::Var(v) if v.id == "loop")
                && matches!(
                    g.name,
                    "index" | "index0" | "revindex" | "revindex0" | "length" | "depth" | "depth0"
                )
        }
        Expr::UnaryOp(u) => is_number(&u.expr),
        Expr::BinOp(b) => {
            matches!(
                b.op,
                BinOpKind::Add
                    | BinOpKind::Sub
                    | BinOpKind::Mul
                    | BinOpKind::Div
                    | BinOpKind::FloorDiv
                    | BinOpKind::Rem
                    | BinOpKind::Pow
            ) && is_number(&b.left)
                && is_number(&b.right)
        }
        _ => false,
    }
}

fn const_bytes(value: &Value) -> u64 {
    value
        .as_str()
        .map_or(32, |text| text.len() as u64)
        .max(value.len().unwrap_or(0) as u64 * 32)
}

#[cfg(test)]
mod tests;
