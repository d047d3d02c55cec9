//! Lead pages: designs compiled once per published version (minijinja, HTML auto-escaping on
//! for every value, so a lead's values can never inject markup), the document around them, and
//! the pages shown when there is no page to show.

pub mod premade;
pub mod sanitise;

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};

use minijinja::{AutoEscape, Environment};
use serde::Serialize;

use crate::error::FieldViolation;

/// A published design ready to render: parsed once, rendered per visit.
pub struct CompiledDesign {
    env: Environment<'static>,
    css: String,
    /// The campaign's call to action and branding, part of the published version.
    page: PageContext,
}

const PAGE: &str = "page";

fn environment() -> Environment<'static> {
    let mut env = Environment::new();
    env.set_auto_escape_callback(|_| AutoEscape::Html);
    env
}

impl CompiledDesign {
    pub fn compile(html: &str, css: &str) -> Result<Self, minijinja::Error> {
        let mut env = environment();
        env.add_template_owned(PAGE, html.to_owned())?;
        Ok(Self {
            env,
            css: css.to_owned(),
            page: PageContext::default(),
        })
    }

    /// The design with the page-level values (`cta_url`, `branding`, `sender`) it renders with.
    pub fn with_page(mut self, page: PageContext) -> Self {
        self.page = page;
        self
    }

    /// The whole HTML document of one lead's page; `tracked` adds the tracking script (live
    /// lead pages only: never previews).
    pub fn render(
        &self,
        title: &str,
        lead: BTreeMap<String, String>,
        tracked: bool,
    ) -> Result<String, minijinja::Error> {
        let context = self.page.with_lead(lead);
        let body = self
            .env
            .get_template(PAGE)?
            .render(minijinja::value::Serde(&context))?;
        let head = if tracked { TRACKING_SCRIPT_TAG } else { "" };
        Ok(document_with_head(title, &self.css, head, &body))
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
}

#[derive(Debug, Clone, Default, Serialize)]
pub struct BrandingContext {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub company_name: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub logo_url: Option<String>,
    /// `#rgb`/`#rrggbb` only (it goes into style attributes).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub primary_color: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub website: Option<String>,
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
const RESERVED: [&str; 3] = ["cta_url", "branding", "sender"];

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
        branding.primary_color = branding
            .primary_color
            .map(|c| safe_color(&c))
            .filter(|c| !c.is_empty());
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
        }
    }

    /// These page-level values with a lead's variables (a lead's own variable of a page-level
    /// name is shadowed).
    fn with_lead(&self, mut lead: BTreeMap<String, String>) -> Self {
        for name in RESERVED {
            lead.remove(name);
        }
        Self {
            lead,
            cta_url: self.cta_url.clone(),
            branding: self.branding.clone(),
            sender: self.sender.clone(),
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

/// Refuses a design that does not compile, or fails to render even without lead values,
/// naming the line and the reason (field `html`).
pub fn check(html: &str, css: &str) -> Result<(), FieldViolation> {
    let outcome = CompiledDesign::compile(html, css)
        .and_then(|design| design.render("", BTreeMap::new(), false).map(drop));
    outcome.map_err(|err| {
        let line = err
            .line()
            .map(|l| format!(" on line {l}"))
            .unwrap_or_default();
        let reason = err
            .detail()
            .map_or_else(|| err.kind().to_string(), str::to_owned);
        FieldViolation::new(
            "html",
            format!("The design does not compile{line}: {reason}."),
        )
    })
}

/// Where live pages load the tracking script from (the edge serves it there).
pub const TRACKING_SCRIPT_PATH: &str = "/p/track.js";
const TRACKING_SCRIPT_TAG: &str = "<script src=\"/p/track.js\" defer></script>\n";

/// The document around a rendered design: the CSS inlined in the head.
pub fn document(title: &str, css: &str, body: &str) -> String {
    document_with_head(title, css, "", body)
}

/// [`document`] with more in the head (`head`, trusted markup).
fn document_with_head(title: &str, css: &str, head: &str, body: &str) -> String {
    // A stylesheet cannot close its own <style> element.
    let css = css.replace("</", "<\\/");
    format!(
        "<!doctype html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <title>{}</title>\n<style>\n{css}\n</style>\n{head}</head>\n<body>\n{body}\n</body>\n</html>\n",
        escape_html(title)
    )
}

/// Text made safe inside HTML content and attribute values.
pub fn escape_html(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
        .replace('\'', "&#x27;")
}

const NOTICE_CSS: &str = "body{margin:0;min-height:100vh;display:flex;align-items:center;\
justify-content:center;font-family:system-ui,sans-serif;background:#f6f7f9;color:#334155}\
main{text-align:center;padding:2rem}h1{font-size:1.6rem;margin:0 0 .5rem}p{color:#64748b}";

/// Shown while a campaign has no published design.
pub fn not_live_page() -> String {
    document(
        "Not live yet",
        NOTICE_CSS,
        "<main><h1>This page is not live yet</h1><p>It is being prepared. Please check back soon.</p></main>",
    )
}

/// Shown for an address that is no page.
pub fn not_found_page() -> String {
    document(
        "Page not found",
        NOTICE_CSS,
        "<main><h1>Page not found</h1><p>This link does not lead to a page.</p></main>",
    )
}

/// Shown after a form on a lead's page was submitted without JavaScript, with a link back to
/// the page at `back` (a path).
pub fn thank_you_page(back: &str) -> String {
    let back: String = back
        .chars()
        .map(|c| match c {
            '&' => "&amp;".to_owned(),
            '<' => "&lt;".to_owned(),
            '>' => "&gt;".to_owned(),
            '"' => "&quot;".to_owned(),
            '\'' => "&#39;".to_owned(),
            other => other.to_string(),
        })
        .collect();
    document(
        "Thank you",
        NOTICE_CSS,
        &format!(
            "<main><h1>Thank you</h1><p>Your message has been received.</p>\
             <p><a href=\"{back}\">Back to the page</a></p></main>"
        ),
    )
}

/// Shown when a visitor sends too many forms in a short time.
pub fn slow_down_page() -> String {
    document(
        "Please wait",
        NOTICE_CSS,
        "<main><h1>Please wait a moment</h1><p>Too many submissions from your address; try again in a minute.</p></main>",
    )
}

/// A short notice to a visitor: a heading and one sentence (both plain text).
pub fn notice_page(heading: &str, sentence: &str) -> String {
    document(
        heading,
        NOTICE_CSS,
        &format!(
            "<main><h1>{}</h1><p>{}</p></main>",
            escape_html(heading),
            escape_html(sentence)
        ),
    )
}

/// Shown when a page cannot be rendered right now.
pub fn unavailable_page() -> String {
    document(
        "Temporarily unavailable",
        NOTICE_CSS,
        "<main><h1>Temporarily unavailable</h1><p>Please try again in a moment.</p></main>",
    )
}

/// Compiled designs by campaign, each for the one published version it was compiled from.
#[derive(Default)]
pub struct DesignCache {
    designs: Mutex<HashMap<i64, (i64, Arc<CompiledDesign>)>>,
}

impl DesignCache {
    /// The campaign's design at `version`, if compiled already.
    pub fn get(&self, campaign_id: i64, version: i64) -> Option<Arc<CompiledDesign>> {
        let designs = self.designs.lock().unwrap_or_else(|p| p.into_inner());
        designs
            .get(&campaign_id)
            .filter(|(cached, _)| *cached == version)
            .map(|(_, design)| design.clone())
    }

    pub fn put(&self, campaign_id: i64, version: i64, design: Arc<CompiledDesign>) {
        let mut designs = self.designs.lock().unwrap_or_else(|p| p.into_inner());
        designs.insert(campaign_id, (version, design));
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
        let page = design.render("t", lead, false).unwrap();
        assert!(
            page.contains("href=\"https:&#x2f;&#x2f;cal.example&#x2f;ada\""),
            "{page}"
        );
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
            .render(
                "T",
                vars(&[("first_name", "<script>alert(1)</script>")]),
                false,
            )
            .unwrap();
        assert!(
            page.contains("Hi &lt;script&gt;alert(1)&lt;&#x2f;script&gt;"),
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
    fn css_cannot_close_its_style_element() {
        let page = document("t", "a{} </style><script>x()</script>", "");
        assert!(!page.contains("</style><script>"));
    }
}
