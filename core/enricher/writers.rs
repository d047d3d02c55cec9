//! The written parts of enrichment: the company and person analyses and the AI variables, by
//! the model provider ([`crate::llm`]) when one is configured, else by an offline writer that
//! states the fetched facts plainly and claims nothing else; and the briefs the model gets.

use super::{EnrichError, LeadFacts, Run, Values, clip};

impl Run<'_> {
    /// The model's analysis of `facts`, or `None` when no model is configured.
    pub(super) async fn analysis(
        &self,
        brief: &str,
        facts: &str,
    ) -> Result<Option<String>, EnrichError> {
        let Some(llm) = &self.enricher.llm else {
            return Ok(None);
        };
        let written = llm.chat(brief, facts, None).await?;
        if written.trim().is_empty() {
            return Err(EnrichError::EmptyAnalysis);
        }
        Ok(Some(written.trim().to_owned()))
    }

    pub(super) fn offline_person_analysis(&self) -> String {
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

    pub(super) fn offline_ai_variables(&self) -> (String, String) {
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

/// The company analysis without a model: the facts fetched, stated plainly.
pub(super) fn offline_company_analysis(
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

pub(super) const COMPANY_BRIEF: &str = "You help a salesperson prepare outreach. From the facts given about \
a company (taken from its own website), write 2 to 4 sentences: what it does, whom it serves, \
and one angle worth raising with it. Use only the facts given; if they are thin, say so. Plain \
text, no lists, no markdown.";

pub(super) const PERSON_BRIEF: &str = "You help a salesperson prepare outreach. From the facts given about a \
person (taken from their public profile and their company's website), write 2 to 4 sentences: \
their role, what they likely care about, and one angle worth raising with them. Use only the \
facts given; if they are thin, say so. Plain text, no lists, no markdown.";

pub(super) const AI_VARIABLES_BRIEF: &str = "You write two short texts for a personalised sales page, from \
the facts given about a lead: `opening_line` (one friendly sentence that opens the page and \
addresses them by first name when known, referring to one specific fact) and `headline` (at \
most eight words). Use only the facts given. Answer a JSON object with those two strings.";
