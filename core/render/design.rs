//! A published design compiled once (minijinja, HTML auto-escaping on for every value, so a
//! lead's values can never inject markup) and rendered per visit within its budget.

use std::cell::Cell;
use std::collections::BTreeMap;
use std::sync::LazyLock;

use minijinja::{AutoEscape, Environment, ErrorKind};

use super::budget::{self, Budgeted, Exceeded};
use super::context::PageContext;
use super::document::{
    TRACKING_SCRIPT_TAG, document_with_head, escape_html, style_text, write_html_text,
};
use super::{pool, preview_image, sanitise};

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

/// The link-preview card's size, as a live page's head gives it.
static CARD_SIZE: LazyLock<String> = LazyLock::new(|| {
    format!(
        "<meta property=\"og:image:width\" content=\"{}\">\n\
         <meta property=\"og:image:height\" content=\"{}\">\n",
        preview_image::WIDTH,
        preview_image::HEIGHT,
    )
});

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
    pub(super) fn compile_audited(
        html: &str,
        css: &str,
    ) -> Result<(Self, budget::Audit), RenderError> {
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
        let (context, copy) = self.page.for_lead(lead);
        let body = self.render_body(context)?;
        let body = if self.cleaned_per_render {
            sanitise::rendered(&body)
        } else {
            body
        };
        // What the page is called where the prospect sees it (the tab, a link preview): the
        // copy's headline and introduction for this lead, never the campaign's internal name.
        let title = escape_html(&copy.headline);
        let description = escape_html(&copy.description());
        let address = live_at.map(escape_html);
        let mut head = vec![
            "<meta name=\"description\" content=\"",
            &description,
            "\">\n<meta property=\"og:type\" content=\"website\">\n\
             <meta property=\"og:title\" content=\"",
            &title,
            "\">\n<meta property=\"og:description\" content=\"",
            &description,
            "\">\n<meta name=\"twitter:card\" content=\"summary_large_image\">\n",
        ];
        // A live page (its address known) is tracked and previews as a card of its own.
        if let Some(address) = &address {
            head.extend([
                "<meta property=\"og:url\" content=\"",
                address,
                "\">\n<meta property=\"og:image\" content=\"",
                address,
                "/og.png\">\n",
                &CARD_SIZE,
                "<meta name=\"twitter:image\" content=\"",
                address,
                "/og.png\">\n",
                TRACKING_SCRIPT_TAG,
            ]);
        }
        // One allocation of the exact size.
        let head = head.concat();
        Ok(document_with_head(&title, &self.style, &head, &body))
    }

    pub(super) fn render_body(
        &self,
        context: minijinja::value::Value,
    ) -> Result<String, RenderError> {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::render::check::check;
    use crate::render::context::{BrandingContext, SenderContext, safe_color, safe_url};

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
    fn a_live_pages_head_names_it_by_its_copy_and_previews_it_at_its_address() {
        use crate::render::copy::CampaignCopy;
        let design = CompiledDesign::compile("<p>{{ first_name }}</p>", "")
            .unwrap()
            .with_page(PageContext::default().with_copy(CampaignCopy {
                headline: Some("<Hi> {{ first_name }}".into()),
                intro: Some("Tom & {{ first_name }}".into()),
                ..Default::default()
            }));
        let page = design
            .render(
                vars(&[("first_name", "\"Ada\"")]),
                Some("https://x.example/p/a&b/c"),
            )
            .unwrap();
        let head = &page[page.find("</style>\n").unwrap() + 9..page.find("</head>").unwrap()];
        let (width, height) = (preview_image::WIDTH, preview_image::HEIGHT);
        assert_eq!(
            head,
            format!(
                "<meta name=\"description\" content=\"Tom &amp; &quot;Ada&quot;\">\n\
                 <meta property=\"og:type\" content=\"website\">\n\
                 <meta property=\"og:title\" content=\"&lt;Hi&gt; &quot;Ada&quot;\">\n\
                 <meta property=\"og:description\" content=\"Tom &amp; &quot;Ada&quot;\">\n\
                 <meta name=\"twitter:card\" content=\"summary_large_image\">\n\
                 <meta property=\"og:url\" content=\"https://x.example/p/a&amp;b/c\">\n\
                 <meta property=\"og:image\" content=\"https://x.example/p/a&amp;b/c/og.png\">\n\
                 <meta property=\"og:image:width\" content=\"{width}\">\n\
                 <meta property=\"og:image:height\" content=\"{height}\">\n\
                 <meta name=\"twitter:image\" content=\"https://x.example/p/a&amp;b/c/og.png\">\n\
                 {TRACKING_SCRIPT_TAG}"
            )
        );
        assert!(
            page.contains("<title>&lt;Hi&gt; &quot;Ada&quot;</title>"),
            "{page}"
        );
        // A preview's head has neither the address nor the tracking script.
        let preview = design.render(vars(&[]), None).unwrap();
        assert!(!preview.contains("og:url") && !preview.contains("track.js"));
    }

    #[test]
    fn a_leads_own_variable_of_a_page_level_name_is_shadowed_and_others_are_read() {
        let design = CompiledDesign::compile(
            "<p>{{ copy.headline }}|{{ sender.name }}|{{ custom_1 }}|{{ cta_url }}</p>",
            "",
        )
        .unwrap();
        let lead = vars(&[
            ("copy", "mine"),
            ("sender", "mine"),
            ("cta_url", "https://evil.example"),
            ("custom_1", "kept"),
            ("first_name", "Ada"),
        ]);
        let page = design.render(lead, None).unwrap();
        assert!(
            page.contains("<p>Hi Ada, this page is yours.||kept|</p>"),
            "{page}"
        );
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
