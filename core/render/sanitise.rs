//! Designs that come from outside (an API caller, later a model) are cleaned before they reach a
//! draft: an allow-list of elements and attributes (ammonia), so no `<script>`, no inline event
//! handlers, no `javascript:` addresses, no iframes, objects or embeds, no external stylesheets.
//! The design's minijinja expressions survive: they are set aside before the HTML is parsed and
//! put back after. (Template tags inside a tag itself, `<div {% if x %}...{% endif %}>`, cannot
//! survive an HTML parser; use them in attribute values or around elements.)

use std::collections::HashSet;
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
        .attribute_filter(|_element, attribute, value| match attribute {
            "srcset" => safe_srcset(value).then(|| value.into()),
            "style" => Some(stylesheet(value).into()),
            _ => Some(value.into()),
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
mod tests {
    use super::*;

    #[test]
    fn scripts_handlers_and_frames_go_and_expressions_stay() {
        let (html, _) = design(
            "<h1 onclick=\"steal()\">Hi {{ first_name | default(\"there\") }}</h1>\
             <script>alert(1)</script><iframe src=\"https://x.example\"></iframe>\
             <a href=\"javascript:alert(1)\">x</a><a href=\"{{ cta_url }}\" data-lps-cta=\"go\">Go</a>\
             {% if company_name %}<p>{{ company_name }} & co</p>{% endif %}\
             <form method=\"post\" action=\"#\"><input name=\"email\" type=\"email\" value=\"{{ email }}\">\
             <button type=\"submit\">Send</button></form><!-- a comment -->",
            "",
        );
        assert!(
            !html.contains("onclick") && !html.contains("steal"),
            "{html}"
        );
        assert!(
            !html.contains("<script") && !html.contains("alert"),
            "{html}"
        );
        assert!(!html.contains("iframe"), "{html}");
        assert!(
            html.contains("Hi {{ first_name | default(\"there\") }}</h1>"),
            "{html}"
        );
        assert!(html.contains("href=\"{{ cta_url }}\""), "{html}");
        assert!(html.contains("data-lps-cta=\"go\""), "{html}");
        assert!(
            html.contains("{% if company_name %}<p>{{ company_name }} &amp; co</p>{% endif %}"),
            "{html}"
        );
        assert!(html.contains("value=\"{{ email }}\""), "{html}");
        assert!(
            html.contains("<form method=\"post\" action=\"#\">"),
            "{html}"
        );
        assert!(!html.contains("comment"), "{html}");
    }

    #[test]
    fn stylesheets_cannot_import_or_run_anything() {
        let css = stylesheet(
            "@import url(https://evil.example/x.css);\nh1{color:red;background:url(javascript:x)}\
             p{width:expression(alert(1))}",
        );
        assert!(!css.contains("@import") && !css.contains("evil"), "{css}");
        assert!(!css.to_lowercase().contains("javascript:"), "{css}");
        assert!(!css.contains("expression("), "{css}");
        assert!(css.contains("h1{color:red"), "{css}");
    }

    #[test]
    fn many_expressions_come_back_in_place() {
        let source: String = (0..12).map(|n| format!("<p>{{{{ v{n} }}}}</p>")).collect();
        let (html, _) = design(&source, "");
        assert_eq!(html, source);
    }
}
