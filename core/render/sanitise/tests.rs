//! `sanitise`'s unit tests.

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

fn proven(html: &str) -> bool {
    let audit = crate::render::budget::audit(html).unwrap();
    clean_by_construction(html, &audit.assigned)
}

#[test]
fn designs_written_as_the_clean_writes_them_with_values_only_where_harmless_are_proven() {
    for html in [
        "<p>{{ first_name }}</p>{% if company_name %}<b>{{ company_name }}</b>{% endif %}",
        "<a href=\"{{ cta_url }}\" rel=\"noopener noreferrer\">Go</a>",
        "<a href=\"mailto:{{ email }}\" rel=\"noopener noreferrer\">Mail</a>",
        "<a href=\"/offer?for={{ company_name }}\" rel=\"noopener noreferrer\">Offer</a>",
        "<img src=\"{{ branding.logo_url }}\" alt=\"{{ company_name | default('Logo') }}\">",
        "<p title=\"{% if first_name %}{{ first_name }}{% else %}you{% endif %}\">x</p>",
        "<div style=\"{% if branding.primary_color %}--brand: {{ branding.primary_color }}{% endif %}\">x</div>",
        "<input name=\"email\" value=\"{{ email }}\" required=\"\">",
        "<ul>{% for point in copy.points %}<li>{{ point }}</li>{% else %}<li>-</li>{% endfor %}</ul>",
    ] {
        assert!(proven(html), "{html}");
    }
}

#[test]
fn a_value_that_could_change_what_the_clean_keeps_is_cleaned_at_every_render() {
    for html in [
        // Not as the clean writes it (a handler; an unquoted value; a bare boolean).
        "<p onclick=\"x()\">{{ first_name }}</p>",
        "<p title={{ first_name }}>x</p>",
        "<input name=\"email\" required>",
        // A lead's value deciding an address's scheme.
        "<a href=\"{{ website }}\" rel=\"noopener noreferrer\">x</a>",
        "<a href=\"{{ cta_url }}/x\" rel=\"noopener noreferrer\">x</a>",
        "<form action=\"{{ company_name }}\"></form>",
        "<img srcset=\"{{ branding.logo_url }} 1x\">",
        // A page-level address shadowed by the design.
        "{% set cta_url = first_name %}<a href=\"{{ cta_url }}\" rel=\"noopener noreferrer\">x</a>",
        "{% for branding in [first_name] %}<img src=\"{{ branding.logo_url }}\">{% endfor %}",
        // Styles: a lead's value, or literal parts that could form a function.
        "<div style=\"color: {{ first_name }}\">x</div>",
        "<div style=\"{% if first_name %}background: url(x.png){% endif %}\">x</div>",
        // A block that opens in one attribute and closes elsewhere joins them.
        "<b title=\"{% if first_name %}\"></b><a href=\"{% endif %}x\" rel=\"noopener noreferrer\">y</a>",
        "<b title=\"{% if first_name %}\">x</b>{% endif %}",
        "<a href=\"{% if first_name %}/a{% endif %}\" rel=\"noopener noreferrer\">x</a>",
    ] {
        assert!(!proven(html), "{html}");
    }
}

#[test]
fn many_expressions_come_back_in_place() {
    let source: String = (0..12).map(|n| format!("<p>{{{{ v{n} }}}}</p>")).collect();
    let (html, _) = design(&source, "");
    assert_eq!(html, source);
}
