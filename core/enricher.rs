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

use std::collections::{BTreeMap, HashMap};
use std::net::SocketAddr;
use std::time::Duration;

use scraper::{Html, Selector};
use serde_json::Value;

use crate::llm::{self, Llm, LlmConfig, LlmError};
use crate::outbound;

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
    pub failures: Vec<(Kind, String)>,
}

/// Bytes of a fetched page or feed read at most.
const MAX_PAGE_BYTES: usize = 2_000_000;
/// Characters kept of any one value written to a lead.
const MAX_VALUE_CHARS: usize = 2_000;
/// Recent posts kept per feed.
const RECENT_POSTS: usize = 5;

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

/// A fetched page: where it ended up and its text.
#[derive(Debug, Clone)]
struct Page {
    url: reqwest::Url,
    body: String,
    is_feed: bool,
}

/// One lead's enrichment: pages fetched once and shared by the kinds that need them.
struct Run<'a> {
    enricher: &'a Enricher,
    lead: &'a LeadFacts,
    pages: HashMap<String, Result<Page, String>>,
    found: Enriched,
}

type Values = Vec<(&'static str, String)>;

impl Run<'_> {
    /// A value known so far: found in this run, else already on the lead.
    fn known(&self, key: &str) -> Option<&str> {
        self.found
            .values
            .get(key)
            .or_else(|| self.lead.variables.get(key))
            .map(String::as_str)
            .filter(|value| !value.is_empty())
    }

    async fn one(&mut self, kind: Kind) -> Result<Values, String> {
        match kind {
            Kind::SocialProfileUrl => {
                let page = self.profile_page().await?;
                let values = profile_values(&page);
                if values.is_empty() {
                    return Err(
                        "The profile page has no name, description or profile details.".into(),
                    );
                }
                Ok(values)
            }
            Kind::SocialPostsPerson => {
                let page = self.profile_page().await?;
                let posts = self.recent_posts(&page, false).await?;
                Ok(posts.into_values("person"))
            }
            Kind::SocialPostsCompany => {
                let page = self.company_page().await?;
                let posts = self.recent_posts(&page, true).await?;
                Ok(posts.into_values("company"))
            }
            Kind::CompanyDomain => {
                let page = self.company_page().await?;
                let facts = Metadata::read(&page.body);
                let organisation = facts.organisation.as_ref();
                let mut values: Values = [
                    (
                        "company_site_name",
                        organisation
                            .and_then(|o| text(o, "name"))
                            .or(facts.og("site_name"))
                            .or(facts.title()),
                    ),
                    (
                        "company_description",
                        organisation
                            .and_then(|o| text(o, "description"))
                            .or(facts.description()),
                    ),
                    (
                        "company_logo_url",
                        organisation
                            .and_then(|o| text(o, "logo").or_else(|| image(o)))
                            .or(facts.og("image")),
                    ),
                ]
                .into_iter()
                .filter_map(|(key, value)| value.map(|value| (key, value)))
                .collect();
                let facts_text = self.company_facts(&values);
                let analysis = self.analysis(COMPANY_BRIEF, &facts_text).await?;
                let analysis = match analysis {
                    Some(written) => written,
                    None => offline_company_analysis(self.lead, &values, self.posts_of("company")),
                };
                values.push(("company_analysis", analysis));
                Ok(values)
            }
            Kind::PersonAnalysis => {
                let mut profile = Vec::new();
                if self.known("profile_name").is_none() && self.lead.social_profile_url.is_some() {
                    match self.profile_page().await {
                        Ok(page) => profile.extend(profile_values(&page)),
                        // With a name and a company there is still something to write from.
                        Err(reason)
                            if self.lead.first_name.is_none()
                                || self.lead.company_name.is_none() =>
                        {
                            return Err(reason);
                        }
                        Err(_) => {}
                    }
                }
                for (key, value) in &profile {
                    self.found.values.insert((*key).to_owned(), value.clone());
                }
                let facts_text = self.person_facts();
                let analysis = match self.analysis(PERSON_BRIEF, &facts_text).await? {
                    Some(written) => written,
                    None => self.offline_person_analysis(),
                };
                Ok(vec![("person_analysis", analysis)])
            }
            Kind::AiVariables => {
                let facts_text = format!("{}\n{}", self.person_facts(), self.company_facts(&[]));
                let written = match &self.enricher.llm {
                    Some(llm) => {
                        let format = llm::string_fields_schema(
                            "ai_variables",
                            &["opening_line", "headline"],
                        );
                        let content = llm
                            .chat(AI_VARIABLES_BRIEF, &facts_text, Some(format))
                            .await
                            .map_err(analysis_failed)?;
                        let object = llm::json_object(&content).map_err(analysis_failed)?;
                        let field = |name: &str| {
                            object[name].as_str().map(str::to_owned).unwrap_or_default()
                        };
                        (field("opening_line"), field("headline"))
                    }
                    None => self.offline_ai_variables(),
                };
                if written.0.trim().is_empty() {
                    return Err("The model wrote no opening line.".into());
                }
                Ok(vec![
                    ("ai_opening_line", written.0),
                    ("ai_headline", written.1),
                ])
            }
        }
    }

    /// The lead's social profile page.
    async fn profile_page(&mut self) -> Result<Page, String> {
        let url = self.lead.social_profile_url.clone().unwrap_or_default();
        self.page(&url, false).await
    }

    /// The company's home page: `https://{domain}/`, or `http://` when https cannot connect.
    async fn company_page(&mut self) -> Result<Page, String> {
        let domain = self.lead.company_domain.clone().unwrap_or_default();
        let https = format!("https://{domain}/");
        match self.page(&https, true).await {
            Err(reason) if reason == CANNOT_CONNECT => {
                self.page(&format!("http://{domain}/"), false).await
            }
            other => other,
        }
    }

    /// A page, fetched once per run. With `quiet_connect`, a failure to connect is reported
    /// as [`CANNOT_CONNECT`] so the caller can try another scheme.
    async fn page(&mut self, url: &str, quiet_connect: bool) -> Result<Page, String> {
        if let Some(known) = self.pages.get(url) {
            return known.clone();
        }
        let fetched = fetch(self.enricher, url, quiet_connect).await;
        self.pages.insert(url.to_owned(), fetched.clone());
        fetched
    }

    /// The newest entries of the feed the page links (or is), else of `/feed` or `/rss.xml` on
    /// a company site.
    async fn recent_posts(&mut self, page: &Page, company_site: bool) -> Result<Posts, String> {
        if page.is_feed {
            return Posts::read(&page.body);
        }
        let mut candidates = feed_links(&page.body, &page.url);
        if company_site {
            for path in ["/feed", "/rss.xml"] {
                if let Ok(url) = page.url.join(path) {
                    candidates.push(url);
                }
            }
        }
        if candidates.is_empty() {
            return Err(format!("No RSS or Atom feed is linked from {}.", page.url));
        }
        let mut last_problem = String::new();
        for url in candidates.into_iter().take(4) {
            match self.page(url.as_str(), false).await {
                Ok(feed) => match Posts::read(&feed.body) {
                    Ok(posts) => return Ok(posts),
                    Err(problem) => last_problem = problem,
                },
                Err(problem) => last_problem = problem,
            }
        }
        Err(format!(
            "No readable feed was found on {}: {last_problem}",
            page.url
        ))
    }

    fn posts_of(&self, whose: &str) -> Option<&str> {
        self.known(&format!("{whose}_latest_post"))
    }

    fn person_facts(&self) -> String {
        let lead = self.lead;
        let mut lines = Vec::new();
        let mut push = |label: &str, value: Option<&str>| {
            if let Some(value) = value.filter(|v| !v.trim().is_empty()) {
                lines.push(format!("{label}: {value}"));
            }
        };
        push("First name", lead.first_name.as_deref());
        push("Company", lead.company_name.as_deref());
        push("Company domain", lead.company_domain.as_deref());
        push("Profile name", self.known("profile_name"));
        push("Headline", self.known("profile_headline"));
        push("Profile summary", self.known("profile_summary"));
        push("Works for", self.known("profile_company"));
        push("Recent posts", self.known("person_recent_posts"));
        lines.join("\n")
    }

    fn company_facts(&self, fresh: &[(&'static str, String)]) -> String {
        let value = |key: &str| {
            fresh
                .iter()
                .find(|(k, _)| *k == key)
                .map(|(_, v)| v.as_str())
                .or_else(|| self.known(key))
        };
        let mut lines = Vec::new();
        for (label, value) in [
            ("Company", self.lead.company_name.as_deref()),
            ("Domain", self.lead.company_domain.as_deref()),
            ("Site name", value("company_site_name")),
            ("Description", value("company_description")),
            ("Recent posts", value("company_recent_posts")),
        ] {
            if let Some(value) = value.filter(|v| !v.trim().is_empty()) {
                lines.push(format!("{label}: {value}"));
            }
        }
        lines.join("\n")
    }

    /// The model's analysis of `facts`, or `None` when no model is configured.
    async fn analysis(&self, brief: &str, facts: &str) -> Result<Option<String>, String> {
        let Some(llm) = &self.enricher.llm else {
            return Ok(None);
        };
        let written = llm
            .chat(brief, facts, None)
            .await
            .map_err(analysis_failed)?;
        if written.trim().is_empty() {
            return Err("The model wrote an empty analysis.".into());
        }
        Ok(Some(written.trim().to_owned()))
    }

    fn offline_person_analysis(&self) -> String {
        let lead = self.lead;
        let name = self
            .known("profile_name")
            .or(lead.first_name.as_deref())
            .unwrap_or("This lead");
        let company = self
            .known("profile_company")
            .or(lead.company_name.as_deref());
        let mut sentences = Vec::new();
        match (self.known("profile_headline"), company) {
            (Some(headline), Some(company)) => {
                sentences.push(format!("{name} is {headline} at {company}."))
            }
            (Some(headline), None) => sentences.push(format!("{name} is {headline}.")),
            (None, Some(company)) => sentences.push(format!("{name} works at {company}.")),
            (None, None) => sentences.push(format!("{name} has a public profile.")),
        }
        if let Some(summary) = self.known("profile_summary") {
            sentences.push(format!(
                "Their profile says: \u{201c}{}\u{201d}",
                clip(summary, 300)
            ));
        }
        if let Some(post) = self.posts_of("person") {
            sentences.push(format!(
                "They recently posted \u{201c}{}\u{201d}.",
                clip(post, 160)
            ));
        }
        if let Some(description) = self.known("company_description") {
            sentences.push(format!(
                "Their company describes itself as: \u{201c}{}\u{201d}",
                clip(description, 300)
            ));
        }
        sentences.join(" ")
    }

    fn offline_ai_variables(&self) -> (String, String) {
        let lead = self.lead;
        let greeting = match lead.first_name.as_deref() {
            Some(name) => format!("Hi {name},"),
            None => "Hello,".to_owned(),
        };
        let company = lead
            .company_name
            .as_deref()
            .or(self.known("company_site_name"));
        let opening = if let Some(post) = self.posts_of("person") {
            format!(
                "{greeting} I read your recent post \u{201c}{}\u{201d}.",
                clip(post, 120)
            )
        } else if let Some(post) = self.posts_of("company") {
            format!(
                "{greeting} I saw \u{201c}{}\u{201d} from your team.",
                clip(post, 120)
            )
        } else if let Some(company) = company {
            format!("{greeting} I put this page together for you and the team at {company}.")
        } else {
            format!("{greeting} I put this page together for you.")
        };
        let headline = match company {
            Some(company) => format!("Made for {company}"),
            None => "Made for you".to_owned(),
        };
        (opening, headline)
    }
}

/// What a profile page says of its person: name, headline, summary, image, company.
fn profile_values(page: &Page) -> Values {
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

/// The sentinel a quiet fetch reports when it cannot connect.
const CANNOT_CONNECT: &str = "cannot connect";

fn analysis_failed(err: LlmError) -> String {
    match err {
        LlmError::Failed(problem) => format!("The analysis could not be written: {problem}."),
        LlmError::Unusable(why) => format!("The model's answer could not be used: {why}."),
    }
}

async fn fetch(enricher: &Enricher, url: &str, quiet_connect: bool) -> Result<Page, String> {
    crate::telemetry::traced(
        || tracing::info_span!("enrichment fetch", otel.kind = "client"),
        fetch_untraced(enricher, url, quiet_connect),
    )
    .await
}

async fn fetch_untraced(
    enricher: &Enricher,
    url: &str,
    quiet_connect: bool,
) -> Result<Page, String> {
    reqwest::Url::parse(url).map_err(|_| format!("{url} is not a valid address."))?;
    let response = enricher
        .web
        .get(url)
        .map_err(|refused| format!("{url} was not fetched: {refused}."))?
        .header(
            reqwest::header::ACCEPT,
            "text/html,application/xhtml+xml,application/rss+xml,application/atom+xml,application/xml;q=0.9,*/*;q=0.5",
        )
        .send()
        .await
        .map_err(|err| {
            if let Some(refused) = outbound::is_refused(&err) {
                format!("{url} was not fetched: {refused}.")
            } else if err.is_connect() && quiet_connect {
                CANNOT_CONNECT.to_owned()
            } else if err.is_timeout() {
                format!("{url} did not answer in time.")
            } else if err.is_connect() {
                format!("{url} could not be reached.")
            } else {
                format!("{url} could not be fetched.")
            }
        })?;
    let status = response.status();
    if !status.is_success() {
        return Err(format!("{url} answered {status}."));
    }
    let final_url = response.url().clone();
    let content_type = response
        .headers()
        .get(reqwest::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_ascii_lowercase();
    let mut response = response;
    let mut bytes = Vec::new();
    while let Some(chunk) = response
        .chunk()
        .await
        .map_err(|_| format!("{url} was cut off."))?
    {
        bytes.extend_from_slice(&chunk);
        if bytes.len() > MAX_PAGE_BYTES {
            return Err(format!("{url} is larger than {MAX_PAGE_BYTES} bytes."));
        }
    }
    let body = String::from_utf8_lossy(&bytes).into_owned();
    let is_feed = content_type.contains("xml") && !content_type.contains("xhtml")
        || body.trim_start().starts_with("<?xml") && !body.contains("<html");
    Ok(Page {
        url: final_url,
        body,
        is_feed,
    })
}

/// What a page says about itself.
#[derive(Debug, Default)]
struct Metadata {
    title: Option<String>,
    description: Option<String>,
    open_graph: BTreeMap<String, String>,
    person: Option<Value>,
    organisation: Option<Value>,
}

impl Metadata {
    fn read(html: &str) -> Metadata {
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

    fn og(&self, key: &str) -> Option<String> {
        self.open_graph.get(key).cloned()
    }

    fn title(&self) -> Option<String> {
        self.og("title").or_else(|| self.title.clone())
    }

    fn description(&self) -> Option<String> {
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

fn text(item: &Value, key: &str) -> Option<String> {
    item[key].as_str().map(collapse).filter(|t| !t.is_empty())
}

fn name_of(value: &Value) -> Option<String> {
    match value {
        Value::String(name) => Some(collapse(name)).filter(|n| !n.is_empty()),
        Value::Array(items) => items.iter().find_map(name_of),
        Value::Object(_) => text(value, "name"),
        _ => None,
    }
}

fn image(item: &Value) -> Option<String> {
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

/// Feeds a page links (`<link rel="alternate" type="application/rss+xml|atom+xml">`).
fn feed_links(html: &str, base: &reqwest::Url) -> Vec<reqwest::Url> {
    let document = Html::parse_document(html);
    let selector = Selector::parse("link[rel~=alternate][href]").expect("a valid selector");
    document
        .select(&selector)
        .filter(|link| {
            link.value()
                .attr("type")
                .map(str::to_ascii_lowercase)
                .is_some_and(|t| t.contains("rss") || t.contains("atom"))
        })
        .filter_map(|link| base.join(link.value().attr("href")?).ok())
        .collect()
}

/// A feed's newest entries: `(title, link, published)`.
struct Posts(Vec<(String, Option<String>, Option<String>)>);

impl Posts {
    fn read(body: &str) -> Result<Posts, String> {
        let feed = feed_rs::parser::parse(body.as_bytes())
            .map_err(|_| "the feed could not be read".to_owned())?;
        let mut entries: Vec<_> = feed
            .entries
            .into_iter()
            .filter_map(|entry| {
                let title = entry
                    .title
                    .map(|t| collapse(&t.content))
                    .filter(|t| !t.is_empty())?;
                let when = entry.published.or(entry.updated);
                let link = entry.links.first().map(|l| l.href.clone());
                Some((when, title, link))
            })
            .collect();
        entries.sort_by_key(|entry| std::cmp::Reverse(entry.0));
        if entries.is_empty() {
            return Err("the feed has no posts".into());
        }
        Ok(Posts(
            entries
                .into_iter()
                .take(RECENT_POSTS)
                .map(|(when, title, link)| {
                    (title, link, when.map(|w| w.format("%Y-%m-%d").to_string()))
                })
                .collect(),
        ))
    }

    /// `{whose}_latest_post`, `{whose}_latest_post_url` and `{whose}_recent_posts` (one post
    /// per line: `date title <link>`).
    fn into_values(self, whose: &str) -> Values {
        let (latest_post, latest_url, recent) = match whose {
            "person" => (
                "person_latest_post",
                "person_latest_post_url",
                "person_recent_posts",
            ),
            _ => (
                "company_latest_post",
                "company_latest_post_url",
                "company_recent_posts",
            ),
        };
        let lines: Vec<String> = self
            .0
            .iter()
            .map(|(title, link, when)| {
                let mut line = String::new();
                if let Some(when) = when {
                    line.push_str(when);
                    line.push(' ');
                }
                line.push_str(title);
                if let Some(link) = link {
                    line.push_str(&format!(" <{link}>"));
                }
                line
            })
            .collect();
        let first = &self.0[0];
        let mut values = vec![(latest_post, first.0.clone()), (recent, lines.join("\n"))];
        if let Some(link) = &first.1 {
            values.push((latest_url, link.clone()));
        }
        values
    }
}

fn collapse(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

fn clip(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_owned();
    }
    let mut clipped: String = text.chars().take(max).collect();
    clipped.push('\u{2026}');
    clipped
}

fn offline_company_analysis(
    lead: &LeadFacts,
    values: &Values,
    latest_post: Option<&str>,
) -> String {
    let value = |key: &str| {
        values
            .iter()
            .find(|(k, _)| *k == key)
            .map(|(_, v)| v.as_str())
    };
    let domain = lead.company_domain.as_deref().unwrap_or_default();
    let name = lead
        .company_name
        .as_deref()
        .or(value("company_site_name"))
        .unwrap_or(domain);
    let mut sentences = vec![match value("company_description") {
        Some(description) => format!(
            "{name} ({domain}) describes itself as: \u{201c}{}\u{201d}",
            clip(description, 400)
        ),
        None => format!("{name} ({domain}) gives no description of itself on its home page."),
    }];
    if let Some(post) = latest_post {
        sentences.push(format!(
            "Its latest post is \u{201c}{}\u{201d}.",
            clip(post, 160)
        ));
    }
    sentences.join(" ")
}

const COMPANY_BRIEF: &str = "You help a salesperson prepare outreach. From the facts given about \
a company (taken from its own website), write 2 to 4 sentences: what it does, whom it serves, \
and one angle worth raising with it. Use only the facts given; if they are thin, say so. Plain \
text, no lists, no markdown.";

const PERSON_BRIEF: &str = "You help a salesperson prepare outreach. From the facts given about a \
person (taken from their public profile and their company's website), write 2 to 4 sentences: \
their role, what they likely care about, and one angle worth raising with them. Use only the \
facts given; if they are thin, say so. Plain text, no lists, no markdown.";

const AI_VARIABLES_BRIEF: &str = "You write two short texts for a personalised sales page, from \
the facts given about a lead: `opening_line` (one friendly sentence that opens the page and \
addresses them by first name when known, referring to one specific fact) and `headline` (at \
most eight words). Use only the facts given. Answer a JSON object with those two strings.";

#[cfg(test)]
mod tests {
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
        assert_eq!(facts.description.as_deref(), Some("Growth at Acme."));
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
