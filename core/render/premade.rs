//! The premade templates shipped in `templates/premade/<key>/` (`template.json` with name and
//! description, `page.html`, `page.css`), built into the binary and installed into the
//! database at start, keeping their ids across restarts.

use serde::Deserialize;

use crate::store::{Db, designs};
use crate::{Result, time};

/// One premade template.
pub struct Premade {
    pub key: &'static str,
    pub name: String,
    pub description: String,
    pub html: &'static str,
    pub css: &'static str,
}

#[derive(Deserialize)]
struct Meta {
    name: String,
    description: String,
}

macro_rules! premade {
    ($($key:literal),+ $(,)?) => {
        [$((
            $key,
            include_str!(concat!("../../templates/premade/", $key, "/template.json")),
            include_str!(concat!("../../templates/premade/", $key, "/page.html")),
            include_str!(concat!("../../templates/premade/", $key, "/page.css")),
        )),+]
    };
}

const FILES: [(&str, &str, &str, &str); 6] = premade!(
    "spotlight",
    "proposal",
    "demo-invite",
    "case-study",
    "event-invite",
    "personal-note",
);

/// Every premade template.
pub fn all() -> Vec<Premade> {
    FILES
        .iter()
        .map(|(key, meta, html, css)| {
            let meta: Meta = serde_json::from_str(meta)
                .unwrap_or_else(|err| panic!("templates/premade/{key}/template.json: {err}"));
            Premade {
                key,
                name: meta.name,
                description: meta.description,
                html,
                css,
            }
        })
        .collect()
}

/// Adds or refreshes the premade templates in the database.
pub async fn install(db: &Db) -> Result<()> {
    let now = time::now();
    let mut tx = db.begin_write().await?;
    for premade in all() {
        designs::upsert_premade(
            &mut *tx,
            premade.key,
            &premade.name,
            &premade.description,
            premade.html,
            premade.css,
            now,
        )
        .await?;
    }
    tx.commit().await?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;
    use crate::render::{BrandingContext, CompiledDesign, PageContext, SenderContext, check};

    #[test]
    fn every_premade_template_compiles_and_renders_with_and_without_values() {
        let lead: BTreeMap<String, String> = [
            ("first_name", "Ada"),
            ("email", "ada@example.com"),
            ("company_name", "Analytical Engines"),
            ("company_domain", "engines.example"),
        ]
        .iter()
        .map(|(k, v)| ((*k).into(), (*v).into()))
        .collect();
        let full = PageContext::new(
            Some("https://cal.example/ada"),
            BrandingContext {
                name: Some("Brand".into()),
                company_name: Some("Acme Outreach".into()),
                logo_url: Some("https://cdn.example/logo.png".into()),
                primary_color: Some("#0f766e".into()),
                website: Some("https://acme.example".into()),
                ..Default::default()
            },
            SenderContext {
                name: Some("Sam Sender".into()),
                title: Some("Account Executive".into()),
                photo_url: Some("https://cdn.example/sam.jpg".into()),
            },
        );
        let only_email: BTreeMap<String, String> =
            [("email".to_owned(), "x@example.com".to_owned())].into();
        let templates = all();
        assert!(templates.len() >= 6);
        for premade in templates {
            check(premade.html, premade.css)
                .unwrap_or_else(|e| panic!("{}: {}", premade.key, e.message));
            let design = CompiledDesign::compile(premade.html, premade.css)
                .unwrap()
                .with_page(full.clone());
            let page = design
                .render(lead.clone(), Some("https://lps.example/p/c/l"))
                .unwrap();
            assert!(
                page.contains("Ada") && page.contains("Analytical Engines"),
                "{}",
                premade.key
            );
            for used in [
                "https://cal.example/ada",
                "https://cdn.example/logo.png",
                "Sam Sender",
                "#0f766e",
            ] {
                assert!(page.contains(used), "{} uses {used}: {page}", premade.key);
            }
            let bare = CompiledDesign::compile(premade.html, premade.css).unwrap();
            let page = bare
                .render(only_email.clone(), Some("https://lps.example/p/c/l"))
                .unwrap();
            assert!(
                !page.contains("{{") && !page.contains("None"),
                "{}",
                premade.key
            );
            assert!(
                page.contains("data-lps-cta"),
                "{} has a call to action",
                premade.key
            );
            // Without a call-to-action address, the call to action is a form that works.
            assert!(
                page.contains("<form") && page.contains("method=\"post\""),
                "{} falls back to a form: {page}",
                premade.key
            );
        }
    }

    /// Pages of the premade designs are rendered without a clean per render (a first visit's
    /// largest own cost) and on the caller's thread: each must stay provably clean as written
    /// and cheap.
    #[test]
    fn every_premade_template_is_clean_by_construction_and_renders_inline() {
        for premade in all() {
            let (cleaned, _) = crate::render::sanitise::design(premade.html, premade.css);
            assert_eq!(
                cleaned, premade.html,
                "{}: write it as the clean writes it",
                premade.key
            );
            let design = CompiledDesign::compile(premade.html, premade.css).unwrap();
            let lead = [("first_name".to_owned(), "Ada".to_owned())].into();
            assert!(design.renders_inline(&lead), "{}", premade.key);
        }
    }
}
