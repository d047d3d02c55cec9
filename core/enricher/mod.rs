//! Enrichment providers: what each enrichment type finds out about a lead, as variables.
//!
//! Fetching is real HTTP through the SSRF-guarded client ([`crate::outbound`]): a company
//! domain is fetched as `https://{domain}/`, falling back to `http://` when https cannot
//! connect; pages are read for their metadata (title, description, Open Graph, JSON-LD
//! `Person`/`Organization`) and for RSS/Atom feeds they link, whose newest entries are the
//! recent posts. The two analyses (and the AI variables) are written by the model provider
//! ([`crate::llm`]) when one is configured, else by a built-in offline writer that states the
//! fetched facts plainly and claims nothing else. Storage is the caller's: this module only
//! turns a lead's known values into new ones.
//!
//! The folder: `fetch.rs` (pages and feeds over the guarded client), `metadata.rs` (what a
//! page says of itself), `posts.rs` (feeds' newest entries), `run.rs` (one lead's kinds, in
//! order), `writers.rs` (the analyses, by the model or offline), `error.rs` ([`EnrichError`]:
//! why a kind found nothing).

mod error;
mod fetch;
mod metadata;
mod posts;
mod run;
mod writers;

use std::collections::{BTreeMap, HashMap};
use std::net::SocketAddr;
use std::time::Duration;

use crate::llm::{Llm, LlmConfig};
use crate::outbound;

pub use error::EnrichError;

/// One lead's enrichment: pages fetched once and shared by the kinds that need them. Defined
/// here, beside [`Enricher`], so that `run.rs` (the kinds) and `writers.rs` (the analyses) both
/// add to it without naming each other.
struct Run<'a> {
    enricher: &'a Enricher,
    lead: &'a LeadFacts,
    pages: HashMap<String, Result<fetch::Page, EnrichError>>,
    found: Enriched,
}

/// What enrichment can do for a lead. The first five are the public types of
/// `POST /leads/enrich`; `AiVariables` is requested by the `generate_ai_variables` flag.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Kind {
    SocialProfileUrl,
    SocialPostsPerson,
    SocialPostsCompany,
    CompanyDomain,
    PersonAnalysis,
    AiVariables,
}

impl Kind {
    /// Every kind, in the order they run for a lead (later ones read what earlier ones found).
    pub const ALL: [Kind; 6] = [
        Kind::SocialProfileUrl,
        Kind::SocialPostsPerson,
        Kind::SocialPostsCompany,
        Kind::CompanyDomain,
        Kind::PersonAnalysis,
        Kind::AiVariables,
    ];

    /// The public types, as the specification lists them.
    pub const PUBLIC: [&'static str; 5] = [
        "social_profile_url",
        "company_domain",
        "person_analysis",
        "social_posts_person",
        "social_posts_company",
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Kind::SocialProfileUrl => "social_profile_url",
            Kind::SocialPostsPerson => "social_posts_person",
            Kind::SocialPostsCompany => "social_posts_company",
            Kind::CompanyDomain => "company_domain",
            Kind::PersonAnalysis => "person_analysis",
            Kind::AiVariables => "ai_variables",
        }
    }

    pub fn parse(text: &str) -> Option<Kind> {
        Kind::ALL.into_iter().find(|kind| kind.as_str() == text)
    }

    /// Whether the model writes it (it then costs an analysis, not a fetch).
    pub fn is_analysis(self) -> bool {
        matches!(
            self,
            Kind::CompanyDomain | Kind::PersonAnalysis | Kind::AiVariables
        )
    }

    /// Why a lead cannot have this kind, if it lacks the inputs.
    pub fn missing_input(self, lead: &LeadFacts) -> Option<&'static str> {
        let has = |value: &Option<String>| value.as_deref().is_some_and(|v| !v.trim().is_empty());
        match self {
            Kind::SocialProfileUrl | Kind::SocialPostsPerson if !has(&lead.social_profile_url) => {
                Some("The lead has no social_profile_url.")
            }
            Kind::CompanyDomain | Kind::SocialPostsCompany if !has(&lead.company_domain) => {
                Some("The lead has no company_domain.")
            }
            Kind::PersonAnalysis
                if !(has(&lead.social_profile_url)
                    || has(&lead.first_name) && has(&lead.company_name)) =>
            {
                Some(
                    "The lead has neither a social_profile_url nor a first_name with a company_name.",
                )
            }
            _ => None,
        }
    }
}

/// What is known of a lead: its five default values and its custom variables (which hold
/// earlier enrichment results too).
#[derive(Debug, Clone, Default)]
pub struct LeadFacts {
    pub first_name: Option<String>,
    pub company_name: Option<String>,
    pub company_domain: Option<String>,
    pub social_profile_url: Option<String>,
    pub variables: BTreeMap<String, String>,
}

/// What a lead's enrichment produced: new variable values, and the kinds that failed, why.
#[derive(Debug, Default)]
pub struct Enriched {
    pub values: BTreeMap<String, String>,
    pub failures: Vec<(Kind, EnrichError)>,
}

/// Characters kept of any one value written to a lead.
const MAX_VALUE_CHARS: usize = 2_000;

pub struct Enricher {
    llm: Option<Llm>,
    web: outbound::Client,
}

impl Enricher {
    pub fn new(
        llm: Option<LlmConfig>,
        allow_private: bool,
        resolve: &[(String, SocketAddr)],
    ) -> anyhow::Result<Self> {
        let limits = outbound::Limits {
            connect_timeout: Duration::from_secs(5),
            timeout: Duration::from_secs(15),
            max_redirects: 5,
        };
        Ok(Self {
            llm: llm.map(Llm::new),
            web: outbound::client(allow_private, resolve, limits)?,
        })
    }

    /// Runs `kinds` for a lead in [`Kind::ALL`] order; each kind's values are visible to the
    /// ones after it. A kind that fails leaves no values and its reason.
    pub async fn enrich(&self, lead: &LeadFacts, kinds: &[Kind]) -> Enriched {
        let mut run = Run {
            enricher: self,
            lead,
            pages: HashMap::new(),
            found: Enriched::default(),
        };
        for kind in Kind::ALL.into_iter().filter(|kind| kinds.contains(kind)) {
            match run.one(kind).await {
                Ok(values) => {
                    for (key, value) in values {
                        let value: String = value.trim().chars().take(MAX_VALUE_CHARS).collect();
                        if !value.is_empty() {
                            run.found.values.insert(key.to_owned(), value);
                        }
                    }
                }
                Err(reason) => run.found.failures.push((kind, reason)),
            }
        }
        run.found
    }
}

/// What one kind found: variable names and their values.
type Values = Vec<(&'static str, String)>;

/// `text` with its white space collapsed to single spaces.
fn collapse(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// `text` cut to `max` characters, with an ellipsis when cut.
fn clip(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_owned();
    }
    let mut clipped: String = text.chars().take(max).collect();
    clipped.push('\u{2026}');
    clipped
}

#[cfg(test)]
mod tests {
    use super::metadata::{Metadata, name_of, text};
    use super::posts::{Posts, feed_links};
    use super::*;

    const PROFILE: &str = r#"<!doctype html><html><head><title>Jane Doe | Profile</title>
<meta property="og:title" content="Jane Doe - Head of Growth">
<meta name="description" content="Growth at Acme.">
<link rel="alternate" type="application/rss+xml" href="/in/jane/feed.xml">
<script type="application/ld+json">{"@context":"https://schema.org","@graph":[
 {"@type":"Person","name":"Jane Doe","jobTitle":"Head of Growth",
  "description":"Builds growth teams.","worksFor":{"@type":"Organization","name":"Acme"}}]}</script>
</head><body></body></html>"#;

    #[test]
    fn metadata_reads_open_graph_and_json_ld() {
        let facts = Metadata::read(PROFILE);
        assert_eq!(facts.title().as_deref(), Some("Jane Doe - Head of Growth"));
        assert_eq!(facts.description().as_deref(), Some("Growth at Acme."));
        let person = facts.person.expect("the Person in @graph");
        assert_eq!(text(&person, "jobTitle").as_deref(), Some("Head of Growth"));
        assert_eq!(name_of(&person["worksFor"]).as_deref(), Some("Acme"));
        let base = reqwest::Url::parse("https://people.example/in/jane").unwrap();
        assert_eq!(
            feed_links(PROFILE, &base)[0].as_str(),
            "https://people.example/in/jane/feed.xml"
        );
    }

    #[test]
    fn feeds_give_their_newest_posts_first() {
        let rss = r#"<?xml version="1.0"?><rss version="2.0"><channel><title>Acme</title>
<item><title>Older</title><link>https://acme.example/1</link><pubDate>Mon, 02 Nov 2026 10:00:00 GMT</pubDate></item>
<item><title>Newest  post</title><link>https://acme.example/2</link><pubDate>Fri, 20 Nov 2026 10:00:00 GMT</pubDate></item>
</channel></rss>"#;
        let values = Posts::read(rss).unwrap().into_values("company");
        assert_eq!(values[0], ("company_latest_post", "Newest post".to_owned()));
        assert_eq!(
            values[1].1,
            "2026-11-20 Newest post <https://acme.example/2>\n2026-11-02 Older <https://acme.example/1>"
        );
        assert!(Posts::read("<html>not a feed</html>").is_err());
    }

    #[test]
    fn inputs_each_kind_needs() {
        let lead = LeadFacts {
            first_name: Some("Jane".into()),
            ..LeadFacts::default()
        };
        assert!(Kind::SocialProfileUrl.missing_input(&lead).is_some());
        assert!(Kind::CompanyDomain.missing_input(&lead).is_some());
        assert!(Kind::PersonAnalysis.missing_input(&lead).is_some());
        let lead = LeadFacts {
            company_name: Some("Acme".into()),
            ..lead
        };
        assert!(Kind::PersonAnalysis.missing_input(&lead).is_none());
        assert!(Kind::AiVariables.missing_input(&lead).is_none());
    }
}
