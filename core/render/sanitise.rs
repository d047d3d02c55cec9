//! Designs that come from outside (an API caller, later a model) are cleaned before they reach a
//! draft: an allow-list of elements and attributes (ammonia), so no `<script>`, no inline event
//! handlers, no `javascript:` addresses, no iframes, objects or embeds, no external stylesheets.
//! The design's minijinja expressions survive: they are set aside before the HTML is parsed and
//! put back after. (Template tags inside a tag itself, `<div {% if x %}...{% endif %}>`, cannot
//! survive an HTML parser; use them in attribute values or around elements.)

use std::cell::RefCell;
use std::collections::{BTreeSet, HashSet};
use std::sync::LazyLock;

/// The cleaned HTML and CSS of a design.
pub fn design(html: &str, css: &str) -> (String, String) {
    let (protected, expressions) = protect(html);
    let cleaned = CLEANER.clean(&protected).to_string();
    (restore(&cleaned, &expressions), stylesheet(css))
}

/// A rendered design cleaned by the same rules as a design's markup: whatever its expressions
/// yielded (a `javascript:` address in an `href`, a `<meta http-equiv=refresh>`), what reaches
/// a visitor is as safe as markup a design may contain.
pub fn rendered(html: &str) -> String {
    CLEANER.clean(html).to_string()
}

/// Whether no value an expression of `html` (a design as stored) can yield would make
/// [`rendered`] change its render, so that clean can be left out: it is most of a first
/// visit's own work (an html5ever parse, tree and serialisation of the whole page), while the
/// design needs this proof once per published version. Proven, never guessed; a design that is
/// not proven is cleaned on every render, as before. The proof:
/// - the design is in the clean's own form (cleaning it, expressions set aside, changes
///   nothing): every tag, attribute and literal address in it passed the clean, and every
///   attribute value is quoted;
/// - every value is HTML-escaped (auto-escaping; no filter a design may use marks a value safe,
///   see `budget`), so an expression in text adds only text, and in a quoted attribute value
///   only text of that value;
/// - a block (`{% if %}`, `{% for %}`) between elements leaves out or repeats whole clean
///   elements and text; inside an attribute value it must open and close there, in a text
///   attribute, or in a `style` whose literal parts cannot form a function, escape or at-rule
///   however they are joined;
/// - in an address (`href`, `src`, `action`...) a value decides the scheme only when it comes
///   first, and there it must be a whole page-level address, which is kept only when it is
///   `http(s)`, `mailto:` or `tel:` (`PageContext::new`); after literal text that fixes the
///   scheme (a `:`, `/`, `?` or `#`) a value cannot change it;
/// - in a `style`, only the page-level colours (`#rrggbb`) may appear.
///
/// `assigned`: the names the design assigns (they could shadow a page-level value).
pub fn clean_by_construction(html: &str, assigned: &BTreeSet<String>) -> bool {
    let (protected, expressions) = protect(html);
    let recording = Recording::start();
    let cleaned = CLEANER.clean(&protected).to_string();
    let kept = recording.finish();
    cleaned == protected
        && kept.iter().all(|(attribute, value)| {
            let found = placeholders_in(value, expressions.len());
            found.is_empty()
                || attribute_value_is_safe(attribute, value, &found, &expressions, assigned)
        })
}

thread_local! {
    /// The attributes the clean keeps (name, value), recorded while [`clean_by_construction`]
    /// looks at a design; `None` the rest of the time.
    static KEPT_ATTRIBUTES: RefCell<Option<Vec<(String, String)>>> =
        const { RefCell::new(None) };
}

/// Recording of the attributes the clean keeps, on this thread, until finished or dropped
/// (a clean that panicked must not leave every later clean of the thread recorded).
struct Recording;

impl Recording {
    fn start() -> Self {
        KEPT_ATTRIBUTES.with_borrow_mut(|kept| *kept = Some(Vec::new()));
        Self
    }

    fn finish(self) -> Vec<(String, String)> {
        KEPT_ATTRIBUTES
            .with_borrow_mut(Option::take)
            .unwrap_or_default()
    }
}

impl Drop for Recording {
    fn drop(&mut self) {
        KEPT_ATTRIBUTES.with_borrow_mut(|kept| *kept = None);
    }
}

/// Attributes whose value is only text to the browser: any escaped text is as safe as any other.
const TEXT_ATTRIBUTES: &[&str] = &[
    "alt",
    "autocomplete",
    "class",
    "cols",
    "datetime",
    "dir",
    "for",
    "height",
    "hreflang",
    "id",
    "lang",
    "max",
    "maxlength",
    "method",
    "min",
    "name",
    "placeholder",
    "role",
    "rows",
    "step",
    "tabindex",
    "target",
    "title",
    "type",
    "value",
    "width",
];

/// Attributes the clean checks as addresses (ammonia's list, whatever the element: stricter).
const ADDRESS_ATTRIBUTES: &[&str] = &[
    "href",
    "xlink:href",
    "src",
    "action",
    "data",
    "formaction",
    "ping",
    "poster",
];

/// Page-level values that are addresses, kept only when `http(s)`, `mailto:` or `tel:`.
const PAGE_ADDRESSES: &[&str] = &[
    "cta_url",
    "branding.logo_url",
    "branding.website",
    "sender.photo_url",
];

/// Page-level values that are colours, always `#rrggbb`.
const PAGE_COLOURS: &[&str] = &[
    "branding.primary_color",
    "branding.on_primary",
    "branding.primary_text",
];

fn attribute_value_is_safe(
    attribute: &str,
    value: &str,
    found: &[(usize, usize)],
    expressions: &[String],
    assigned: &BTreeSet<String>,
) -> bool {
    let expression = |n: usize| expressions[n].as_str();
    let is_block = |n: usize| !expression(n).starts_with("{{");
    let page_value = |n: usize, names: &[&str]| {
        let name = inner(expression(n));
        names.contains(&name) && !assigned.contains(name.split('.').next().unwrap_or_default())
    };
    let text = TEXT_ATTRIBUTES.contains(&attribute)
        || attribute.starts_with("aria-")
        || attribute.starts_with("data-");
    let blocks_close = || {
        blocks_close_within(
            found
                .iter()
                .filter(|(n, _)| is_block(*n))
                .map(|(n, _)| expression(*n)),
        )
    };
    if text {
        return blocks_close();
    }
    if attribute == "style" {
        let literal_parts_inert =
            literal_parts(value, found).all(|part| !part.contains(['(', '\\', '@', '&']));
        return literal_parts_inert
            && found
                .iter()
                .all(|(n, _)| is_block(*n) || page_value(*n, PAGE_COLOURS))
            && blocks_close();
    }
    if ADDRESS_ATTRIBUTES.contains(&attribute) {
        if found.iter().any(|(n, _)| is_block(*n)) {
            return false;
        }
        let (first, at) = found[0];
        let scheme_fixed = value[..at].contains([':', '/', '?', '#']);
        let whole_page_address =
            found.len() == 1 && value == placeholder(first) && page_value(first, PAGE_ADDRESSES);
        return scheme_fixed || whole_page_address;
    }
    // `srcset`, `style`-like or unknown attributes: cleaned at every render.
    false
}

/// The placeholders in `value` (expression number, byte offset), in order.
fn placeholders_in(value: &str, expressions: usize) -> Vec<(usize, usize)> {
    let mut found = Vec::new();
    let mut from = 0;
    while let Some(at) = value[from..].find("lpsexpr").map(|at| from + at) {
        let digits = &value[at + "lpsexpr".len()..];
        let end = digits
            .find(|c: char| !c.is_ascii_digit())
            .unwrap_or(digits.len());
        match digits[..end].parse::<usize>() {
            Ok(n) if n < expressions && digits[end..].starts_with('z') => found.push((n, at)),
            _ => {}
        }
        from = at + "lpsexpr".len();
    }
    found
}

/// The literal text of `value` between its placeholders.
fn literal_parts<'v>(value: &'v str, found: &[(usize, usize)]) -> impl Iterator<Item = &'v str> {
    let mut parts = Vec::with_capacity(found.len() + 1);
    let mut from = 0;
    for (n, at) in found {
        parts.push(&value[from..*at]);
        from = at + placeholder(*n).len();
    }
    parts.push(&value[from..]);
    parts.into_iter()
}

/// What a tag or expression says, without its delimiters and whitespace control.
fn inner(expression: &str) -> &str {
    expression
        .get(2..expression.len().saturating_sub(2))
        .unwrap_or_default()
        .trim_matches(['-', '+'])
        .trim()
}

/// Whether the blocks (in order) only open and close `if` and `for` among themselves (or are
/// comments): leaving out or repeating what they hold stays inside the one value.
fn blocks_close_within<'e>(blocks: impl Iterator<Item = &'e str>) -> bool {
    let mut open: Vec<&str> = Vec::new();
    for block in blocks {
        if block.starts_with("{#") {
            continue;
        }
        let tag = inner(block).split_whitespace().next().unwrap_or_default();
        let fits = match tag {
            "if" | "for" => {
                open.push(tag);
                true
            }
            // A loop's `else` is what it shows when there is nothing to repeat.
            "elif" => open.last() == Some(&"if"),
            "else" => matches!(open.last(), Some(&"if" | &"for")),
            "endif" => open.pop() == Some("if"),
            "endfor" => open.pop() == Some("for"),
            _ => false,
        };
        if !fits {
            return false;
        }
    }
    open.is_empty()
}

static CLEANER: LazyLock<ammonia::Builder<'static>> = LazyLock::new(|| {
    let mut builder = ammonia::Builder::default();
    builder
        .add_tags([
            "main",
            "header",
            "footer",
            "section",
            "article",
            "aside",
            "nav",
            "figure",
            "figcaption",
            "form",
            "input",
            "button",
            "select",
            "option",
            "label",
            "textarea",
            "fieldset",
            "legend",
            "picture",
            "source",
            "time",
            "mark",
        ])
        .add_generic_attributes([
            "class",
            "id",
            "style",
            "title",
            "lang",
            "dir",
            "role",
            "aria-label",
            "aria-hidden",
            "aria-describedby",
            "tabindex",
        ])
        .add_generic_attribute_prefixes(["data-"])
        .add_tag_attributes("a", ["target"])
        .add_tag_attributes("img", ["loading", "decoding", "srcset", "sizes"])
        .add_tag_attributes("source", ["srcset", "type", "media"])
        .add_tag_attributes("form", ["method", "action", "name", "autocomplete"])
        .add_tag_attributes(
            "input",
            [
                "type",
                "name",
                "value",
                "placeholder",
                "required",
                "checked",
                "min",
                "max",
                "step",
                "maxlength",
                "autocomplete",
            ],
        )
        .add_tag_attributes("button", ["type", "name", "value"])
        .add_tag_attributes("select", ["name", "required", "multiple"])
        .add_tag_attributes("option", ["value", "selected"])
        .add_tag_attributes(
            "textarea",
            ["name", "rows", "cols", "placeholder", "required"],
        )
        .add_tag_attributes("label", ["for"])
        .add_tag_attributes("time", ["datetime"])
        .url_schemes(HashSet::from(["http", "https", "mailto", "tel"]))
        .link_rel(Some("noopener noreferrer"))
        .attribute_filter(|_element, attribute, value| {
            let kept: Option<std::borrow::Cow<'_, str>> = match attribute {
                "srcset" => safe_srcset(value).then(|| value.into()),
                "style" => Some(stylesheet(value).into()),
                _ => Some(value.into()),
            };
            if let Some(kept) = &kept {
                KEPT_ATTRIBUTES.with_borrow_mut(|seen| {
                    if let Some(seen) = seen {
                        seen.push((attribute.into(), kept.to_string()));
                    }
                });
            }
            kept
        })
        .strip_comments(true);
    builder
});

/// Whether every address of a `srcset` is `http(s)` or relative (ammonia checks `src`, not
/// `srcset`).
fn safe_srcset(value: &str) -> bool {
    value.split(',').all(|candidate| {
        let url = candidate.split_whitespace().next().unwrap_or_default();
        let lower = url.to_ascii_lowercase();
        match lower.split_once(':') {
            // A colon before any slash, `?` or `#` starts a scheme.
            Some((scheme, _)) if !scheme.contains(['/', '?', '#']) => {
                scheme == "https" || scheme == "http"
            }
            _ => !url.chars().any(char::is_control),
        }
    })
}

/// Text that stands in for an expression while the HTML is parsed: letters and digits only, so
/// it passes unchanged through text, attribute values and URL checks.
fn placeholder(n: usize) -> String {
    format!("lpsexpr{n}z")
}

/// The design with each `{{ ... }}`, `{% ... %}` and `{# ... #}` replaced by a placeholder, and
/// the expressions in order.
fn protect(html: &str) -> (String, Vec<String>) {
    let mut out = String::with_capacity(html.len());
    let mut expressions = Vec::new();
    let mut rest = html;
    while let Some(start) = rest.find('{') {
        let close = match rest[start..].chars().nth(1) {
            Some('{') => "}}",
            Some('%') => "%}",
            Some('#') => "#}",
            _ => {
                out.push_str(&rest[..=start]);
                rest = &rest[start + 1..];
                continue;
            }
        };
        let Some(length) = rest[start + 2..].find(close) else {
            break;
        };
        let end = start + 2 + length + close.len();
        out.push_str(&rest[..start]);
        out.push_str(&placeholder(expressions.len()));
        expressions.push(rest[start..end].to_owned());
        rest = &rest[end..];
    }
    out.push_str(rest);
    (out, expressions)
}

fn restore(html: &str, expressions: &[String]) -> String {
    let mut out = html.to_owned();
    // Highest first, so `lpsexpr1z` is never taken for the start of `lpsexpr10z`.
    for (n, expression) in expressions.iter().enumerate().rev() {
        out = out.replace(&placeholder(n), expression);
    }
    out
}

/// What a stylesheet may not contain (after its escapes are decoded).
const BANNED_IN_CSS: [&str; 5] = [
    "@import",
    "expression(",
    "javascript:",
    "behavior:",
    "-moz-binding",
];

/// The stylesheet without what could load or run something: `@import` rules, `expression(`,
/// `javascript:` and `behavior:` (the page's Content-Security-Policy refuses them too). Escapes
/// are decoded first where they would hide one (`@im\port`, `@\69mport`).
fn stylesheet(css: &str) -> String {
    let decoded = decode_css_escapes(css);
    let lower = decoded.to_ascii_lowercase();
    let css = if decoded != css && BANNED_IN_CSS.iter().any(|b| lower.contains(b)) {
        decoded.as_str()
    } else {
        css
    };
    let mut out = String::with_capacity(css.len());
    let mut rest = css;
    while let Some(at) = rest.to_ascii_lowercase().find("@import") {
        out.push_str(&rest[..at]);
        rest = match rest[at..].find(';') {
            Some(end) => &rest[at + end + 1..],
            None => "",
        };
    }
    out.push_str(rest);
    let mut cleaned = out;
    for banned in &BANNED_IN_CSS[1..] {
        while let Some(at) = cleaned.to_ascii_lowercase().find(banned) {
            cleaned.replace_range(at..at + banned.len(), "");
        }
    }
    cleaned
}

/// CSS with its escapes decoded: `\\` and one to six hex digits (and one optional space) is
/// that code point; `\\` and a newline is nothing; `\\` and any other character is that
/// character.
fn decode_css_escapes(css: &str) -> String {
    let mut out = String::with_capacity(css.len());
    let mut chars = css.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        let mut hex = String::new();
        while hex.len() < 6 {
            match chars.peek() {
                Some(h) if h.is_ascii_hexdigit() => {
                    hex.push(*h);
                    chars.next();
                }
                _ => break,
            }
        }
        if hex.is_empty() {
            match chars.next() {
                Some('\n') | None => {}
                Some(other) => out.push(other),
            }
        } else {
            if chars.peek().is_some_and(|c| c.is_ascii_whitespace()) {
                chars.next();
            }
            let code = u32::from_str_radix(&hex, 16).unwrap_or(0xFFFD);
            out.push(
                char::from_u32(code)
                    .filter(|c| *c != '\0')
                    .unwrap_or('\u{FFFD}'),
            );
        }
    }
    out
}

#[cfg(test)]
mod tests;
