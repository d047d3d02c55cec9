//! Durable background work: lead jobs (`worker`), their callbacks (`callbacks`), and the
//! status events that feed `WatchJob` (`events`).

pub mod callbacks;
pub mod events;
pub mod ingest;
pub mod worker;

use serde::{Deserialize, Serialize};

/// What a job was asked to do besides storing leads, kept as requested on the job
/// (`jobs.options`). Acting on the enrichment flags belongs to the enrichment work.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct JobOptions {
    #[serde(default)]
    pub from: Option<String>,
    /// Every campaign whose pages the leads get (the job's `campaign_id` is the first).
    #[serde(default)]
    pub campaign_ids: Vec<i64>,
    #[serde(default)]
    pub send_email: bool,
    #[serde(default)]
    pub is_generate_ai_analysis: bool,
    #[serde(default)]
    pub is_generate_person_analysis: bool,
    #[serde(default)]
    pub is_scrape_person_posts: bool,
    #[serde(default)]
    pub is_scrape_company_posts: bool,
    #[serde(default)]
    pub enrich_data: bool,
    #[serde(default)]
    pub generate_ai_variables: bool,
    #[serde(default)]
    pub trigger_audience_summary: bool,
}

impl JobOptions {
    /// Whether any enrichment or AI work was requested (these always run queued).
    pub fn wants_enrichment(&self) -> bool {
        self.is_generate_ai_analysis
            || self.is_generate_person_analysis
            || self.is_scrape_person_posts
            || self.is_scrape_company_posts
            || self.enrich_data
            || self.generate_ai_variables
            || self.trigger_audience_summary
    }
}
