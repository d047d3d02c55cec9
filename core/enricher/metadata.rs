//! What a page says about itself: its title and description, Open Graph, and the JSON-LD
//! `Person` and `Organization` it carries.

use std::collections::BTreeMap;

use scraper::{Html, Selector};
use serde_json::Value;

use super::fetch::Page;
use super::{Values, collapse};

/// What a page says about itself.
#[derive(Debug, Default)]
pub(super) struct Metadata {
    title: Option<String>,
    description: Option<String>,
    open_graph: BTreeMap<String, String>,
    pub(super) person: Option<Value>,
    pub(super) organisation: Option<Value>,
}

impl Metadata {
    pub(super) fn read(html: &str) -> Metadata {
        let document = Html::parse_document(html);
        let mut found = Metadata {
            title: select_text(&document, "title"),
            ..Metadata::default()
        };
        let meta = Selector::parse("meta").expect("a valid selector");
        for element in document.select(&meta) {
            let attributes = element.value();
            let Some(content) = attributes
                .attr("content")
                .map(collapse)
                .filter(|c| !c.is_empty())
            else {
                continue;
            };
            if let Some(property) = attributes.attr("property").or(attributes.attr("name")) {
                let property = property.to_ascii_lowercase();
                if let Some(og) = property.strip_prefix("og:") {
                    found.open_graph.entry(og.to_owned()).or_insert(content);
                } else if property == "description" && found.description.is_none() {
                    found.description = Some(content);
                }
            }
        }
        let json_ld =
            Selector::parse(r#"script[type="application/ld+json"]"#).expect("a valid selector");
        for script in document.select(&json_ld) {
            let Ok(value) = serde_json::from_str::<Value>(&script.text().collect::<String>())
            else {
                continue;
            };
            for item in json_ld_items(&value) {
                if found.person.is_none() && has_type(item, &["Person"]) {
                    found.person = Some(item.clone());
                }
                if found.organisation.is_none()
                    && has_type(
                        item,
                        &[
                            "Organization",
                            "Corporation",
                            "LocalBusiness",
                            "OnlineBusiness",
                        ],
                    )
                {
                    found.organisation = Some(item.clone());
                }
            }
        }
        found
    }

    pub(super) fn og(&self, key: &str) -> Option<String> {
        self.open_graph.get(key).cloned()
    }

    pub(super) fn title(&self) -> Option<String> {
        self.og("title").or_else(|| self.title.clone())
    }

    pub(super) fn description(&self) -> Option<String> {
        self.og("description").or_else(|| self.description.clone())
    }
}

/// The objects of a JSON-LD document: the value itself, array items and `@graph` members.
fn json_ld_items(value: &Value) -> Vec<&Value> {
    match value {
        Value::Array(items) => items.iter().flat_map(json_ld_items).collect(),
        Value::Object(object) => {
            let mut items = vec![value];
            if let Some(graph) = object.get("@graph") {
                items.extend(json_ld_items(graph));
            }
            items
        }
        _ => Vec::new(),
    }
}

fn has_type(item: &Value, wanted: &[&str]) -> bool {
    match &item["@type"] {
        Value::String(kind) => wanted.contains(&kind.as_str()),
        Value::Array(kinds) => kinds
            .iter()
            .any(|k| k.as_str().is_some_and(|k| wanted.contains(&k))),
        _ => false,
    }
}

/// A text field of a JSON-LD object, its white space collapsed.
pub(super) fn text(item: &Value, key: &str) -> Option<String> {
    item[key].as_str().map(collapse).filter(|t| !t.is_empty())
}

/// The name a JSON-LD value gives: itself, its first named item, or its `name`.
pub(super) fn name_of(value: &Value) -> Option<String> {
    match value {
        Value::String(name) => Some(collapse(name)).filter(|n| !n.is_empty()),
        Value::Array(items) => items.iter().find_map(name_of),
        Value::Object(_) => text(value, "name"),
        _ => None,
    }
}

/// The image address a JSON-LD object gives.
pub(super) fn image(item: &Value) -> Option<String> {
    match &item["image"] {
        Value::String(url) => Some(url.clone()),
        Value::Object(_) => text(&item["image"], "url"),
        Value::Array(items) => items.iter().find_map(|i| i.as_str().map(str::to_owned)),
        _ => None,
    }
}

fn select_text(document: &Html, selector: &str) -> Option<String> {
    let selector = Selector::parse(selector).ok()?;
    document
        .select(&selector)
        .next()
        .map(|element| collapse(&element.text().collect::<String>()))
        .filter(|text| !text.is_empty())
}

/// What a profile page says of its person: name, headline, summary, image, company.
pub(super) fn profile_values(page: &Page) -> Values {
    let facts = Metadata::read(&page.body);
    let person = facts.person.as_ref();
    [
        (
            "profile_name",
            person.and_then(|p| text(p, "name")).or(facts.title()),
        ),
        ("profile_headline", person.and_then(|p| text(p, "jobTitle"))),
        (
            "profile_summary",
            person
                .and_then(|p| text(p, "description"))
                .or(facts.description()),
        ),
        (
            "profile_image_url",
            person.and_then(image).or(facts.og("image")),
        ),
        (
            "profile_company",
            person.and_then(|p| name_of(&p["worksFor"])),
        ),
    ]
    .into_iter()
    .filter_map(|(key, value)| value.map(|value| (key, value)))
    .collect()
}
