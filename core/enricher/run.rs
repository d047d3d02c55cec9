//! One lead's enrichment: each kind asked for, in [`Kind::ALL`] order, the pages it needs
//! fetched once and shared, what earlier kinds found visible to later ones.

use super::fetch::{Page, fetch};
use super::metadata::{Metadata, image, profile_values, text};
use super::posts::{Posts, feed_links};
use super::writers::{AI_VARIABLES_BRIEF, COMPANY_BRIEF, PERSON_BRIEF, offline_company_analysis};
use super::{EnrichError, Kind, Run, Values};
use crate::llm;

impl Run<'_> {
    /// A value known so far: found in this run, else already on the lead.
    pub(super) fn known(&self, key: &str) -> Option<&str> {
        self.found
            .values
            .get(key)
            .or_else(|| self.lead.variables.get(key))
            .map(String::as_str)
            .filter(|value| !value.is_empty())
    }

    pub(super) async fn one(&mut self, kind: Kind) -> Result<Values, EnrichError> {
        match kind {
            Kind::SocialProfileUrl => {
                let page = self.profile_page().await?;
                let values = profile_values(&page);
                if values.is_empty() {
                    return Err(EnrichError::NoProfileDetails);
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
                            .await?;
                        let object = llm::json_object(&content)?;
                        let field = |name: &str| {
                            object[name].as_str().map(str::to_owned).unwrap_or_default()
                        };
                        (field("opening_line"), field("headline"))
                    }
                    None => self.offline_ai_variables(),
                };
                if written.0.trim().is_empty() {
                    return Err(EnrichError::NoOpeningLine);
                }
                Ok(vec![
                    ("ai_opening_line", written.0),
                    ("ai_headline", written.1),
                ])
            }
        }
    }

    /// The lead's social profile page.
    async fn profile_page(&mut self) -> Result<Page, EnrichError> {
        let url = self.lead.social_profile_url.clone().unwrap_or_default();
        self.page(&url, false).await
    }

    /// The company's home page: `https://{domain}/`, or `http://` when https cannot connect.
    async fn company_page(&mut self) -> Result<Page, EnrichError> {
        let domain = self.lead.company_domain.clone().unwrap_or_default();
        let https = format!("https://{domain}/");
        match self.page(&https, true).await {
            Err(EnrichError::CannotConnect) => self.page(&format!("http://{domain}/"), false).await,
            other => other,
        }
    }

    /// A page, fetched once per run. With `quiet_connect`, a failure to connect is reported
    /// as [`EnrichError::CannotConnect`] so the caller can try another scheme.
    async fn page(&mut self, url: &str, quiet_connect: bool) -> Result<Page, EnrichError> {
        if let Some(known) = self.pages.get(url) {
            return known.clone();
        }
        let fetched = fetch(self.enricher, url, quiet_connect).await;
        self.pages.insert(url.to_owned(), fetched.clone());
        fetched
    }

    /// The newest entries of the feed the page links (or is), else of `/feed` or `/rss.xml` on
    /// a company site.
    async fn recent_posts(
        &mut self,
        page: &Page,
        company_site: bool,
    ) -> Result<Posts, EnrichError> {
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
            return Err(EnrichError::NoFeedLinked(page.url.to_string()));
        }
        let mut last_problem = EnrichError::FeedEmpty;
        for url in candidates.into_iter().take(4) {
            match self.page(url.as_str(), false).await {
                Ok(feed) => match Posts::read(&feed.body) {
                    Ok(posts) => return Ok(posts),
                    Err(problem) => last_problem = problem,
                },
                Err(problem) => last_problem = problem,
            }
        }
        Err(EnrichError::NoReadableFeed {
            page: page.url.to_string(),
            last: last_problem.to_string(),
        })
    }

    pub(super) fn posts_of(&self, whose: &str) -> Option<&str> {
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
}
