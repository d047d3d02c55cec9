//! `audit`'s unit tests.

use super::*;

fn refused(html: &str) -> String {
    audit(html).expect_err(html).reason
}

#[test]
fn nested_loops_that_multiply_past_the_budget_are_refused() {
    let bomb = "{% for i in range(100000) %}{% for j in range(100000) %}{% for k in range(100000) %}{% endfor %}{% endfor %}{% endfor %}ok";
    assert!(refused(bomb).contains("steps"));
    let forty: String = (0..40)
        .map(|_| "{% for i in range(2) %}")
        .collect::<String>()
        + &"{% endfor %}".repeat(40);
    assert!(refused(&forty).contains("steps"));
    // The same bomb behind a branch a lead's values open is refused too.
    let hidden = format!("{{% if first_name %}}{bomb}{{% endif %}}");
    assert!(refused(&hidden).contains("steps"));
}

#[test]
fn what_builds_unbounded_values_is_refused() {
    assert!(refused("{{ 'x' * 100000000 }}").contains("multiply"));
    assert!(refused("{{ first_name * 3 }}").contains("multiply"));
    assert!(refused("{% set a = first_name ~ first_name %}").contains("assign"));
    assert!(refused("{% set a %}x{% endset %}").contains("endset"));
    assert!(refused("{% filter upper %}x{% endfilter %}").contains("filter"));
    assert!(refused("{{ first_name | replace('', first_name) }}").contains("replace"));
    assert!(refused("{{ range(100000) | join(first_name) }}").contains("join"));
    assert!(refused("{{ namespace(a=1) }}").contains("call only"));
    assert!(refused("{{ x | safe }}").contains("safe"));
    assert!(refused("{% autoescape false %}{{ x }}{% endautoescape %}").contains("escaped"));
    let many: String = std::iter::repeat_n("first_name", 90)
        .collect::<Vec<_>>()
        .join(" ~ ");
    assert!(refused(&format!("{{{{ {many} }}}}")).contains("bytes"));
    let deep: String = std::iter::repeat_n("x", 3000)
        .collect::<Vec<_>>()
        .join(" ~ ");
    assert!(refused(&format!("{{{{ {deep} }}}}")).contains("nests"));
}

#[test]
fn what_designs_use_is_accepted_with_the_variables_it_reads() {
    let audit = audit(
        "{% set name = first_name | default('there') %}<h1>Hi {{ name }}</h1>\
         {% if branding.logo_url %}<img src=\"{{ branding.logo_url }}\">{% endif %}\
         {% for i in range(3) %}<i style=\"--d:{{ loop.index * 100 }}ms\">{{ i }}</i>{% endfor %}\
         {{ company_name | upper ~ ' & co' }}",
    )
    .unwrap();
    let read: Vec<&str> = audit.variables.iter().map(String::as_str).collect();
    assert_eq!(read, ["branding.logo_url", "company_name", "first_name"]);
    assert!(audit.cost < 100, "{}", audit.cost);
}

#[test]
fn for_every_premade_design_the_cost_is_far_below_the_budget() {
    for premade in crate::render::premade::all() {
        let audit = audit(premade.html).unwrap_or_else(|r| panic!("{}: {r:?}", premade.key));
        assert!(audit.cost < FUEL / 100, "{}: {}", premade.key, audit.cost);
    }
}
