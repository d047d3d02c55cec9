//! Lead pages: designs compiled once per published version (minijinja, HTML auto-escaping on
//! for every value, so a lead's values can never inject markup) and the document around them.
//! When there is no page to show, core says why (`RenderPageResponse.outcome`) and the edge
//! shows its notice (`edge/visitor/notices.rs`).

pub mod budget;
pub mod contrast;
pub mod copy;
pub mod pool;
pub mod premade;
pub mod preview_image;
pub mod sanitise;

use std::cell::Cell;
use std::collections::{BTreeMap, HashMap};
use std::fmt::Write as _;
use std::sync::{Arc, Mutex};

use minijinja::{AutoEscape, Environment, ErrorKind};
use serde::Serialize;

use crate::error::FieldViolation;
use budget::{Budgeted, Exceeded};

/// A published design ready to render: audited and parsed once, rendered per visit.
pub struct CompiledDesign {
    env: Environment<'static>,
    /// The stylesheet as the page's `<style>` holds it ([`style_text`]), made once.
    style: String,
    /// The campaign's call to action and branding, part of the published version.
    page: PageContext,
    /// Whether each render is cleaned again ([`sanitise::rendered`]): unless the design was
    /// proven clean by construction ([`sanitise::clean_by_construction`]).
    cleaned_per_render: bool,
    /// The most instructions a render can take (the audit's estimate).
    steps: u64,
}

const PAGE: &str = "page";

fn environment() -> Environment<'static> {
    let mut env = Environment::new();
    env.set_auto_escape_callback(|_| AutoEscape::Html);
    env.set_formatter(|out, state, value| match value.as_str() {
        Some(text) if !value.is_safe() && *state.auto_escape() == AutoEscape::Html => {
            write_escaped(out, text).map_err(minijinja::Error::from)
        }
        _ => minijinja::escape_formatter(out, state, value),
    });
    env.set_fuel(Some(budget::FUEL));
    env
}

/// Writes text escaped for HTML content and double-quoted attribute values: the page as the
/// clean per render wrote it, which a page proven clean by construction is sent without
/// ([`sanitise::clean_by_construction`]). minijinja's own escaping also writes `/` as `&#x2f;`
/// and `'` as `&#x27;`: harmless, but every address and apostrophe a page shows would be
/// written so. `'` ends no value here: a proven design quotes every attribute value with `"`
/// (as the clean writes it), and an unproven one is cleaned after it is rendered.
fn write_escaped(out: &mut minijinja::Output, text: &str) -> std::fmt::Result {
    write_html_text(out, text, false)
}

/// Writes `text` with `&`, `<`, `>`, `"` and, when `apostrophe`, `'` as their entities, in one
/// pass: the one escape of a render's values ([`write_escaped`]) and of the text lps writes
/// into a page's head ([`escape_html`]).
fn write_html_text(
    out: &mut impl std::fmt::Write,
    text: &str,
    apostrophe: bool,
) -> std::fmt::Result {
    let mut from = 0;
    for (at, byte) in text.bytes().enumerate() {
        let escaped = match byte {
            b'&' => "&amp;",
            b'<' => "&lt;",
            b'>' => "&gt;",
            b'"' => "&quot;",
            b'\'' if apostrophe => "&#x27;",
            _ => continue,
        };
        out.write_str(&text[from..at])?;
        out.write_str(escaped)?;
        from = at + 1;
    }
    out.write_str(&text[from..])
}

/// Why a design could not be compiled or rendered.
#[derive(Debug, thiserror::Error)]
pub enum RenderError {
    /// The audit refused it (see [`budget`]).
    #[error("{}", .0.reason)]
    Refused(budget::Refusal),
    /// A render ran into one of its bounds.
    #[error("{}", .0.reason())]
    OverBudget(Exceeded),
    /// minijinja could not compile or render it.
    #[error(transparent)]
    Template(#[from] minijinja::Error),
}

impl CompiledDesign {
    /// Audits and compiles a design: every compiled design passed [`budget::audit`].
    pub fn compile(html: &str, css: &str) -> Result<Self, RenderError> {
        Self::compile_audited(html, css).map(|(design, _)| design)
    }

    /// [`Self::compile`], with what the audit learned.
    fn compile_audited(html: &str, css: &str) -> Result<(Self, budget::Audit), RenderError> {
        let audit = budget::audit(html).map_err(RenderError::Refused)?;
        let mut env = environment();
        env.add_template_owned(PAGE, html.to_owned())?;
        let design = Self {
            env,
            style: style_text(css),
            page: PageContext::default(),
            cleaned_per_render: !sanitise::clean_by_construction(html, &audit.assigned),
            steps: audit.cost,
        };
        Ok((design, audit))
    }

    /// Whether the render of this lead's page is cheap enough to run where it is asked for,
    /// instead of being handed to the render pool: no clean per render, at most
    /// [`pool::INLINE_STEPS`] instructions, and the lead's values at most
    /// [`pool::INLINE_LEAD_BYTES`] in all (what one instruction can work on grows with them).
    /// The hand-off to a blocking thread and back costs more than such a render.
    pub fn renders_inline(&self, lead: &BTreeMap<String, String>) -> bool {
        !self.cleaned_per_render
            && self.steps <= pool::INLINE_STEPS
            && lead.values().map(String::len).sum::<usize>() <= pool::INLINE_LEAD_BYTES
    }

    /// The design with the page-level values (`cta_url`, `branding`, `sender`) it renders with.
    pub fn with_page(mut self, page: PageContext) -> Self {
        self.page = page;
        self
    }

    /// The whole HTML document of one lead's page; a live page's address (`live_at`) adds the
    /// tracking script and its link-preview card (never previews). Within the render budget (blocking: call it from
    /// [`pool::run`]); the design's output is cleaned like a design's markup, so no value an
    /// expression yields can add a script, a handler, a refresh or an unsafe address.
    pub fn render(
        &self,
        lead: BTreeMap<String, String>,
        live_at: Option<&str>,
    ) -> Result<String, RenderError> {
        let context = self.page.with_lead(lead);
        let body = self.render_body(minijinja::value::Value::from(minijinja::value::Serde(
            &context,
        )))?;
        let body = if self.cleaned_per_render {
            sanitise::rendered(&body)
        } else {
            body
        };
        let (title, description) = context.title_and_description();
        let mut head = format!(
            "<meta name=\"description\" content=\"{description}\">\n\
             <meta property=\"og:type\" content=\"website\">\n\
             <meta property=\"og:title\" content=\"{title}\">\n\
             <meta property=\"og:description\" content=\"{description}\">\n\
             <meta name=\"twitter:card\" content=\"summary_large_image\">\n",
            title = escape_html(&title),
            description = escape_html(&description),
        );
        // A live page (its address known) is tracked and previews as a card of its own.
        if let Some(address) = live_at {
            let address = escape_html(address);
            let _ = write!(
                head,
                "<meta property=\"og:url\" content=\"{address}\">\n\
                 <meta property=\"og:image\" content=\"{address}/og.png\">\n\
                 <meta property=\"og:image:width\" content=\"{}\">\n\
                 <meta property=\"og:image:height\" content=\"{}\">\n\
                 <meta name=\"twitter:image\" content=\"{address}/og.png\">\n",
                preview_image::WIDTH,
                preview_image::HEIGHT,
            );
            head.push_str(TRACKING_SCRIPT_TAG);
        }
        Ok(document_with_head(&title, &self.style, &head, &body))
    }

    fn render_body(&self, context: minijinja::value::Value) -> Result<String, RenderError> {
        let exceeded = Cell::new(None);
        let mut out = Budgeted::new(&exceeded);
        let outcome = self
            .env
            .get_template(PAGE)?
            .render_captured_to(context, &mut out);
        match (outcome, exceeded.get()) {
            (Ok(_), _) => Ok(String::from_utf8(out.out)
                .unwrap_or_else(|err| String::from_utf8_lossy(err.as_bytes()).into_owned())),
            (Err(_), Some(exceeded)) => Err(RenderError::OverBudget(exceeded)),
            (Err(err), None) if err.kind() == ErrorKind::OutOfFuel => {
                Err(RenderError::OverBudget(Exceeded::Instructions))
            }
            (Err(err), None) => Err(err.into()),
        }
    }
}

/// What a design can use: the lead's variables (`{{ first_name }}`, custom keys), where the
/// call to action leads (`{{ cta_url }}`), and the sender's look (`{{ branding.logo_url }}`,
/// `{{ sender.name }}`, ...). Everything is text; what is not set is undefined, so
/// `{% if branding.logo_url %}` and `| default(...)` give graceful fallbacks.
#[derive(Debug, Clone, Default, Serialize)]
pub struct PageContext {
    #[serde(flatten)]
    lead: BTreeMap<String, String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    cta_url: Option<String>,
    branding: BrandingContext,
    sender: SenderContext,
    /// The campaign's words for this lead (`{{ copy.headline }}`, ...).
    copy: copy::CopyContext,
    /// The words as written, filled in per lead.
    #[serde(skip)]
    written: copy::CampaignCopy,
}

#[derive(Debug, Clone, Default, Serialize)]
pub struct BrandingContext {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub company_name: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub logo_url: Option<String>,
    /// `#rrggbb` only (it goes into style attributes).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub primary_color: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub website: Option<String>,
    /// Derived, never set: the text colour readable on the brand colour (`#ffffff` or
    /// `#111111`, whichever contrasts more), for buttons and bands filled with it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub on_primary: Option<String>,
    /// Derived: the brand colour darkened until it reads on white at 4.5:1 (WCAG AA), for
    /// links and text.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub primary_text: Option<String>,
    /// Derived: the website's host, to show instead of the whole address.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub website_label: Option<String>,
}

#[derive(Debug, Clone, Default, Serialize)]
pub struct SenderContext {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub photo_url: Option<String>,
}

/// The page-level names a lead's own variable cannot take.
const RESERVED: [&str; 4] = ["cta_url", "branding", "sender", "copy"];

impl PageContext {
    /// The page-level values of a published version (no lead yet: see [`Self::with_lead`]).
    /// Addresses that are not `http(s)`, `mailto:` or `tel:` and colours that are not hex are
    /// left out (they would go into `href`, `src` and `style` attributes).
    pub fn new(
        cta_url: Option<&str>,
        mut branding: BrandingContext,
        mut sender: SenderContext,
    ) -> Self {
        let url = |value: Option<String>| value.map(|v| safe_url(&v)).filter(|v| !v.is_empty());
        let text = |value: Option<String>| value.filter(|v| !v.trim().is_empty());
        branding.logo_url = url(branding.logo_url);
        branding.website = url(branding.website);
        let rgb = branding
            .primary_color
            .as_deref()
            .and_then(|c| contrast::parse(&safe_color(c)));
        branding.primary_color = rgb.map(contrast::hex);
        branding.on_primary = rgb.map(|c| contrast::hex(contrast::readable_on(c)));
        branding.primary_text = rgb.map(|c| contrast::hex(contrast::readable_on_white(c)));
        branding.website_label = branding
            .website
            .as_deref()
            .and_then(|w| url::Url::parse(w).ok())
            .and_then(|u| {
                u.host_str()
                    .map(|h| h.trim_start_matches("www.").to_owned())
            });
        branding.name = text(branding.name);
        branding.company_name = text(branding.company_name);
        sender.photo_url = url(sender.photo_url);
        sender.name = text(sender.name);
        sender.title = text(sender.title);
        Self {
            lead: BTreeMap::new(),
            cta_url: url(cta_url.map(str::to_owned)),
            branding,
            sender,
            copy: copy::CopyContext::default(),
            written: copy::CampaignCopy::default(),
        }
    }

    /// The copy's headline for a lead (the last line of the link-preview card).
    pub fn headline_for(&self, lead: BTreeMap<String, String>) -> String {
        self.with_lead(lead).copy.headline
    }

    /// The brand colour as pages show it (`#rrggbb`), if any.
    pub fn brand_color(&self) -> Option<String> {
        self.branding.primary_color.clone()
    }

    /// These page-level values with the campaign's words.
    pub fn with_copy(mut self, written: copy::CampaignCopy) -> Self {
        self.written = written;
        self
    }

    /// What the page is called where the prospect sees it (the tab, a link preview): the
    /// copy's headline and introduction for this lead, never the campaign's internal name.
    fn title_and_description(&self) -> (String, String) {
        let mut description: String = self.copy.intro.chars().take(160).collect();
        if description.len() < self.copy.intro.len() {
            description.push('\u{2026}');
        }
        (self.copy.headline.clone(), description)
    }

    /// These page-level values with a lead's variables (a lead's own variable of a page-level
    /// name is shadowed).
    fn with_lead(&self, mut lead: BTreeMap<String, String>) -> Self {
        for name in RESERVED {
            lead.remove(name);
        }
        // The words may name the lead's values and the sender's company and name.
        let mut values = lead.clone();
        for (key, value) in [
            ("branding.company_name", &self.branding.company_name),
            ("sender.name", &self.sender.name),
        ] {
            if let Some(value) = value {
                values.insert(key.to_owned(), value.clone());
            }
        }
        let mut copy = self.written.for_lead(&values);
        copy.names_sender = self
            .sender
            .name
            .as_deref()
            .is_some_and(|sender| copy::names_sender(&copy.signoff, sender));
        Self {
            copy,
            lead,
            cta_url: self.cta_url.clone(),
            branding: self.branding.clone(),
            sender: self.sender.clone(),
            written: copy::CampaignCopy::default(),
        }
    }
}

/// `url` if it is an address a page may link to or load, else empty.
pub fn safe_url(url: &str) -> String {
    let url = url.trim();
    let lower = url.to_ascii_lowercase();
    let allowed = ["https://", "http://", "mailto:", "tel:"]
        .iter()
        .any(|scheme| lower.starts_with(scheme) && lower.len() > scheme.len());
    if allowed && !url.chars().any(char::is_control) {
        url.to_owned()
    } else {
        String::new()
    }
}

/// `color` if it is `#rgb`, `#rgba`, `#rrggbb` or `#rrggbbaa`, else empty.
pub fn safe_color(color: &str) -> String {
    let color = color.trim();
    let valid = color.strip_prefix('#').is_some_and(|hex| {
        [3, 4, 6, 8].contains(&hex.len()) && hex.bytes().all(|b| b.is_ascii_hexdigit())
    });
    if valid {
        color.to_owned()
    } else {
        String::new()
    }
}

/// Refuses a design that does not compile, that the budget cannot bound, that fails to render
/// without lead values, or that runs out of its budget for a lead whose every value the design
/// reads is as long as a value may be; names the line and the reason (field `html`). Blocking:
/// call it from [`pool::run`].
/// What is wrong with a design, as the `html` field's violation (the line named when known).
pub fn design_violation(err: RenderError) -> FieldViolation {
    let (line, reason, verb) = match &err {
        RenderError::Refused(refusal) if refusal.syntax => {
            (refusal.line, refusal.reason.clone(), "does not compile")
        }
        RenderError::Refused(refusal) => (refusal.line, refusal.reason.clone(), "is not allowed"),
        RenderError::OverBudget(exceeded) => (None, exceeded.reason(), "is too costly"),
        RenderError::Template(err) => (
            err.line(),
            err.detail()
                .map_or_else(|| err.kind().to_string(), str::to_owned),
            "does not compile",
        ),
    };
    let line = line.map(|l| format!(" on line {l}")).unwrap_or_default();
    FieldViolation::new("html", format!("The design {verb}{line}: {reason}."))
}

pub fn check(html: &str, css: &str) -> Result<(), FieldViolation> {
    let refused = design_violation;
    let (design, audit) = CompiledDesign::compile_audited(html, css).map_err(refused)?;
    tracing::debug!(steps = audit.cost, "design audited");
    design
        .render_body(minijinja::value::Value::from(minijinja::value::Serde(
            &PageContext::default(),
        )))
        .map_err(refused)?;
    // A lead with the longest values: what it costs a real lead is what it costs here. Only the
    // budget is held against it (sample text may fail a filter like `int` a real value passes).
    match design.render_body(longest_values(&audit.variables)) {
        Err(err @ RenderError::OverBudget(_)) => Err(refused(err)),
        _ => Ok(()),
    }
}

/// A design from outside cleaned ([`sanitise::design`]) and [`check`]ed on the render pool:
/// what may be stored as a draft.
pub async fn cleaned_and_checked(html: String, css: String) -> crate::Result<(String, String)> {
    in_pool(move || {
        let (html, css) = sanitise::design(&html, &css);
        check(&html, &css).map(|()| (html, css))
    })
    .await
}

/// [`check`] on the render pool, for a design already stored (a draft to publish, a template).
pub async fn checked(html: &str, css: &str) -> crate::Result<()> {
    let (html, css) = (html.to_owned(), css.to_owned());
    in_pool(move || check(&html, &css)).await
}

async fn in_pool<T: Send + 'static>(
    work: impl FnOnce() -> Result<T, FieldViolation> + Send + 'static,
) -> crate::Result<T> {
    pool::run(work).await?.map_err(crate::Error::invalid)
}

/// Each variable the design reads (dotted for attributes) with a value of the longest length a
/// lead's value may have.
fn longest_values(variables: &std::collections::BTreeSet<String>) -> minijinja::value::Value {
    let long: String = "Sample value "
        .chars()
        .cycle()
        .take(crate::domain::lead::MAX_VALUE_CHARS)
        .collect();
    let mut context = serde_json::Map::new();
    for object in ["branding", "sender"] {
        context.insert(
            object.to_owned(),
            serde_json::Value::Object(Default::default()),
        );
    }
    for variable in variables {
        match variable.split_once('.') {
            Some((object, attribute)) => {
                let entry = context
                    .entry(object.to_owned())
                    .or_insert_with(|| serde_json::Value::Object(Default::default()));
                if let serde_json::Value::Object(map) = entry {
                    // The copy's points are a list (of at most six).
                    let value = if variable == "copy.points" {
                        vec![long.clone(); copy::MAX_POINTS].into()
                    } else {
                        long.clone().into()
                    };
                    map.insert(attribute.to_owned(), value);
                }
            }
            None => {
                context
                    .entry(variable.clone())
                    .or_insert_with(|| long.clone().into());
            }
        }
    }
    minijinja::value::Value::from(minijinja::value::Serde(&context))
}

const TRACKING_SCRIPT_TAG: &str = "<script src=\"/p/track.js\" defer></script>\n";

/// The document around a rendered design: the CSS inlined in the head, and more in the head
/// (`head`, trusted markup).
/// A stylesheet as a `<style>` element may hold it: it cannot close its own element.
fn style_text(css: &str) -> String {
    css.replace("</", "<\\/")
}

/// The page's document around its head's extra lines and its body; `style` as [`style_text`]
/// made it. Written piece by piece into one buffer of the right size: it is every page's.
fn document_with_head(title: &str, style: &str, head: &str, body: &str) -> String {
    const OPENING: &str = "<!doctype html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n<title>";
    let title = escape_html(title);
    let pieces = [
        OPENING,
        &title,
        "</title>\n<style>\n",
        style,
        "\n</style>\n",
        head,
        "</head>\n<body>\n",
        body,
        "\n</body>\n</html>\n",
    ];
    let mut document = String::with_capacity(pieces.iter().map(|piece| piece.len()).sum());
    for piece in pieces {
        document.push_str(piece);
    }
    document
}

/// Text made safe inside HTML content and attribute values, in one pass.
pub fn escape_html(text: &str) -> String {
    let mut escaped = String::with_capacity(text.len());
    // Writing into a `String` cannot fail.
    let _ = write_html_text(&mut escaped, text, true);
    escaped
}

/// Compiled designs by campaign, each for the one published version it was compiled from, and
/// the pages that failed to render, so a failure is neither retried hot nor logged per visit.
pub struct DesignCache {
    designs: Mutex<HashMap<i64, (i64, Compiled)>>,
    /// Pages whose render ran out of budget, by entity tag (which changes with the published
    /// version and the lead): answered 'unavailable' without rendering again.
    failed_pages: quick_cache::sync::Cache<String, ()>,
    /// Published versions (campaign, version) whose failure was logged.
    logged: quick_cache::sync::Cache<(i64, i64), ()>,
}

impl Default for DesignCache {
    fn default() -> Self {
        Self {
            designs: Mutex::default(),
            failed_pages: quick_cache::sync::Cache::new(10_000),
            logged: quick_cache::sync::Cache::new(1_000),
        }
    }
}

/// A published version as the cache keeps it.
#[derive(Clone)]
pub enum Compiled {
    Ready(Arc<CompiledDesign>),
    /// The audit refused it: every page of the version is unavailable.
    Refused,
}

impl DesignCache {
    /// The campaign's design at `version`, if compiled already.
    pub fn get(&self, campaign_id: i64, version: i64) -> Option<Compiled> {
        let designs = self.designs.lock().unwrap_or_else(|p| p.into_inner());
        designs
            .get(&campaign_id)
            .filter(|(cached, _)| *cached == version)
            .map(|(_, design)| design.clone())
    }

    pub fn put(&self, campaign_id: i64, version: i64, design: Compiled) {
        let mut designs = self.designs.lock().unwrap_or_else(|p| p.into_inner());
        designs.insert(campaign_id, (version, design));
    }

    /// Whether the page with this entity tag failed to render.
    pub fn failed(&self, etag: &str) -> bool {
        self.failed_pages.get(etag).is_some()
    }

    pub fn fail(&self, etag: String) {
        self.failed_pages.insert(etag, ());
    }

    /// Logs a failed render once per published version.
    pub fn note_failure(&self, campaign_id: i64, version: i64, err: &RenderError) {
        if self.logged.get(&(campaign_id, version)).is_none() {
            self.logged.insert((campaign_id, version), ());
            tracing::warn!(
                campaign_id,
                version,
                error = %err,
                "pages of this published design cannot be rendered; visitors see 'unavailable'"
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vars(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| ((*k).into(), (*v).into()))
            .collect()
    }

    #[test]
    fn page_level_values_are_reachable_and_unsafe_ones_are_left_out() {
        let design = CompiledDesign::compile(
            "<a href=\"{{ cta_url }}\">go</a><img src=\"{{ branding.logo_url }}\">\
             <i style=\"color:{{ branding.primary_color }}\">{{ sender.name | default('us') }}</i>",
            "",
        )
        .unwrap();
        let branding = BrandingContext {
            logo_url: Some("javascript:alert(1)".into()),
            primary_color: Some("red;background:url(x)".into()),
            ..Default::default()
        };
        let page_level = PageContext::new(
            Some("https://cal.example/ada"),
            branding,
            SenderContext::default(),
        );
        let design = design.with_page(page_level);
        let lead = vars(&[("cta_url", "https://evil.example")]);
        let page = design.render(lead, None).unwrap();
        assert!(page.contains("href=\"https://cal.example/ada\""), "{page}");
        assert!(page.contains("<img src=\"\">"), "{page}");
        assert!(page.contains("style=\"color:\""), "{page}");
        assert!(page.contains(">us</i>"), "{page}");
        assert_eq!(safe_color("#1a2B3c"), "#1a2B3c");
        assert_eq!(safe_url("mailto:ada@example.com"), "mailto:ada@example.com");
        assert_eq!(safe_url("http://"), "");
    }

    #[test]
    fn lead_values_are_escaped_and_missing_ones_render_empty_or_default() {
        let design = CompiledDesign::compile(
            "<h1>Hi {{ first_name }}</h1><p>{{ company_name | default(\"there\") }}</p><i>{{ nope }}</i>",
            "h1{color:red}",
        )
        .unwrap();
        let page = design
            .render(vars(&[("first_name", "<script>alert(1)</script>")]), None)
            .unwrap();
        assert!(
            page.contains("Hi &lt;script&gt;alert(1)&lt;/script&gt;"),
            "{page}"
        );
        assert!(page.contains("<p>there</p>"));
        assert!(page.contains("<i></i>"));
        assert!(page.contains("<style>\nh1{color:red}\n</style>"));
    }

    #[test]
    fn a_design_that_does_not_compile_is_refused_with_its_line() {
        let err = check("<p>ok</p>\n<p>{{ first_name </p>", "").unwrap_err();
        assert_eq!(err.field, "html");
        assert!(err.message.contains("line 2"), "{}", err.message);
        assert!(check("{% if %}", "").is_err());
        assert!(check("{{ x | no_such_filter }}", "").is_err());
        assert!(check("<p>{{ first_name | default('you') }}</p>", "").is_ok());
    }

    #[test]
    fn only_cheap_renders_of_designs_proven_clean_with_short_values_run_inline() {
        let proven = CompiledDesign::compile("<p>{{ first_name }}</p>", "").unwrap();
        assert!(proven.renders_inline(&vars(&[("first_name", "Ada")])));
        let long = "x".repeat(pool::INLINE_LEAD_BYTES + 1);
        assert!(!proven.renders_inline(&vars(&[("first_name", &long)])));
        let unproven = CompiledDesign::compile("<a href=\"{{ website }}\">x</a>", "").unwrap();
        assert!(!unproven.renders_inline(&vars(&[("website", "https://a.example")])));
        let costly = format!(
            "{{% for i in range({}) %}}<p>{{{{ i }}}}</p>{{% endfor %}}",
            2_000
        );
        let costly = CompiledDesign::compile(&costly, "").unwrap();
        assert!(!costly.renders_inline(&vars(&[])));
    }

    #[test]
    fn css_cannot_close_its_style_element() {
        let style = style_text("a{} </style><script>x()</script>");
        let page = document_with_head("t", &style, "", "");
        assert!(!page.contains("</style><script>"));
        let design = CompiledDesign::compile("<p>hi</p>", "a{} </style><script>x()</script>");
        let page = design.unwrap().render(BTreeMap::new(), None).unwrap();
        assert!(!page.contains("</style><script>"));
    }

    #[test]
    fn html_is_escaped_in_one_pass_as_it_was_in_five() {
        for text in [
            "",
            "plain",
            "<a href=\"x\">Tom & Jerry's</a>",
            "&amp;",
            "\u{e9}<\u{1f600}>'",
        ] {
            let five = text
                .replace('&', "&amp;")
                .replace('<', "&lt;")
                .replace('>', "&gt;")
                .replace('"', "&quot;")
                .replace('\'', "&#x27;");
            assert_eq!(escape_html(text), five);
        }
    }

    mod properties {
        use proptest::prelude::*;
        use scraper::Html;

        use super::*;

        /// Pieces of designs, harmless and hostile, written and computed.
        const PIECES: &[&str] = &[
            "<p>{{ first_name }}</p>",
            "<a href=\"{{ cta_url }}\">go</a>",
            "<a href=\"{{ first_name }}\">x</a>",
            "<img src=\"{{ company_name }}\" srcset=\"{{ first_name }} 1x\">",
            "<a href=\"{{ 'java' ~ 'script:alert(1)' }}\">x</a>",
            "<a href=\"{{ ' javascript:x' | trim }}\">x</a>",
            "{{ '<script>alert(1)</script>' }}",
            "{{ \"<meta http-equiv=refresh content='0;url=https://evil'>\" }}",
            "<div style=\"background:url({{ first_name }})\">s</div>",
            "<form action=\"{{ company_name }}\"><input name=\"a\"></form>",
            "{% if first_name %}<b onclick=\"x()\">{{ first_name | upper }}</b>{% endif %}",
            "{% for i in range(3) %}<i>{{ i }}</i>{% endfor %}",
            "<svg onload=\"x()\"></svg><iframe src=\"https://x\"></iframe>",
            "<a href=\"vbscript:x\">v</a><a href=\"data:text/html,x\">d</a>",
            // Designs the clean per render may be left out for, and near misses.
            "<a href=\"mailto:{{ first_name }}\" rel=\"noopener noreferrer\">m</a>",
            "<a href=\"/{{ first_name }}\" rel=\"noopener noreferrer\">r</a>",
            "<p title=\"{% if company_name %}{{ company_name }}{% endif %}\">{{ first_name }}</p>",
            "<div style=\"{% if branding.primary_color %}--brand: {{ branding.primary_color }}{% endif %}\">c</div>",
            "<b title=\"{% if first_name %}\"></b><a href=\"{% endif %}{{ company_name }}\">s</a>",
            "<a href=\"{{ cta_url }}\" rel=\"noopener noreferrer\">p</a><img src=\"{{ branding.logo_url }}\">",
            "{% set cta_url = first_name %}<a href=\"{{ cta_url }}\" rel=\"noopener noreferrer\">s</a>",
        ];

        const VALUES: &[&str] = &[
            "Ada",
            "javascript:alert(1)",
            " JAVASCRIPT:alert(1)",
            "\"><script>alert(1)</script>",
            "' onmouseover='x()",
            "data:text/html;base64,PHNjcmlwdD4=",
            "https://ok.example/a.png",
            "/relative/path",
            "vbscript:msgbox",
        ];

        fn allowed_address(value: &str) -> bool {
            let lower = value.trim().to_ascii_lowercase();
            match lower.split_once(':') {
                Some((scheme, _)) if !scheme.contains(['/', '?', '#']) => {
                    ["http", "https", "mailto", "tel"].contains(&scheme)
                }
                _ => true,
            }
        }

        proptest! {
            #![proptest_config(ProptestConfig::with_cases(200))]

            #[test]
            fn rendered_output_never_carries_a_script_handler_refresh_or_unsafe_address(
                pieces in proptest::collection::vec(0..PIECES.len(), 1..6),
                values in proptest::collection::vec(0..VALUES.len(), 3),
            ) {
                let html: String = pieces.iter().map(|&i| PIECES[i]).collect();
                let (html, css) = sanitise::design(&html, "");
                // Page-level values from the same hostile values, as a campaign could set them.
                let page_level = PageContext::new(
                    Some(VALUES[values[0]]),
                    BrandingContext {
                        logo_url: Some(VALUES[values[1]].to_owned()),
                        primary_color: Some(VALUES[values[2]].to_owned()),
                        ..Default::default()
                    },
                    SenderContext::default(),
                );
                let Ok(design) = CompiledDesign::compile(&html, &css) else {
                    // Refused by the audit (an assignment it does not allow): never rendered.
                    return Ok(());
                };
                let design = design.with_page(page_level);
                let lead: BTreeMap<String, String> = ["first_name", "company_name", "cta_url"]
                    .iter()
                    .zip(&values)
                    .map(|(key, &v)| ((*key).to_owned(), VALUES[v].to_owned()))
                    .collect();
                let page = design.render(lead, None).unwrap();
                let document = Html::parse_document(&page);
                let body = scraper::Selector::parse("body").unwrap();
                let body = document.select(&body).next().unwrap();
                for element in body.descendent_elements() {
                    let name = element.value().name();
                    prop_assert!(!["script", "meta", "iframe", "svg"].contains(&name), "{name}: {page}");
                    for (attribute, value) in element.value().attrs() {
                        prop_assert!(!attribute.starts_with("on"), "{attribute}: {page}");
                        if ["href", "src", "action"].contains(&attribute) {
                            prop_assert!(allowed_address(value), "{attribute}={value}: {page}");
                        }
                        if attribute == "srcset" {
                            for candidate in value.split(',') {
                                let url = candidate.split_whitespace().next().unwrap_or_default();
                                prop_assert!(allowed_address(url), "srcset={value}: {page}");
                            }
                        }
                        if attribute == "style" {
                            prop_assert!(!value.to_lowercase().contains("javascript:"), "{page}");
                        }
                    }
                }
            }

            #[test]
            fn a_design_the_audit_accepts_renders_within_its_budget(
                ranges in proptest::collection::vec(0u32..400, 1..5),
                body in 0..PIECES.len(),
                nested in any::<bool>(),
            ) {
                // Loops one after another, or each inside the one before.
                let mut html = String::new();
                for (n, upper) in ranges.iter().enumerate() {
                    html.push_str(&format!("{{% for i{n} in range({upper}) %}}"));
                    if !nested {
                        html.push_str(PIECES[body]);
                        html.push_str("{% endfor %}");
                    }
                }
                if nested {
                    html.push_str(PIECES[body]);
                    html.push_str(&"{% endfor %}".repeat(ranges.len()));
                }
                let lead: BTreeMap<String, String> =
                    [("first_name".to_owned(), "x".repeat(10_000))].into();
                match CompiledDesign::compile(&html, "") {
                    // The audit's estimate bounds every render: fuel never runs out after it.
                    Ok(design) => match design.render(lead, None) {
                        Ok(_) | Err(RenderError::OverBudget(Exceeded::Size)) => {}
                        Err(other) => prop_assert!(false, "{other}: {html}"),
                    },
                    Err(RenderError::Refused(refusal)) => {
                        prop_assert!(refusal.reason.contains("steps"), "{refusal:?}: {html}");
                    }
                    Err(other) => prop_assert!(false, "{other}: {html}"),
                }
            }
        }
    }

    #[test]
    fn fuel_ends_a_render_that_runs_long_however_it_was_compiled() {
        // Past the audit (as a design stored by an older lps would be when compiled directly).
        let mut env = environment();
        env.add_template_owned(PAGE, forty_loops()).unwrap();
        let design = CompiledDesign {
            env,
            style: String::new(),
            page: PageContext::default(),
            cleaned_per_render: true,
            steps: u64::MAX,
        };
        let err = design.render(BTreeMap::new(), None).unwrap_err();
        assert!(
            matches!(err, RenderError::OverBudget(Exceeded::Instructions)),
            "{err}"
        );
    }

    fn forty_loops() -> String {
        "{% for i in range(2) %}".repeat(40) + &"{% endfor %}".repeat(40)
    }
}
