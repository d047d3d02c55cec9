//! Business operations, free of any transport: each takes the acting [`Principal`] (or, for
//! admin commands, nothing but the database) and plain values, and returns store rows or domain
//! values. The tonic services in `core/services/` translate to and from proto around them.
//!
//! [`Principal`]: crate::auth::Principal

pub mod account;
pub mod announcements;
pub mod api_tokens;
pub mod audiences;
pub mod beacon;
pub mod beacon_budget;
pub mod brandings;
pub mod callback_events;
pub mod callbacks;
pub mod campaigns;
pub mod certificates;
pub mod credits;
pub mod csv_imports;
pub mod design_runs;
pub mod domains;
pub mod engagement;
pub mod engagement_feed;
pub mod enrichment;
pub mod erasure;
pub mod form_submissions;
pub mod idempotency;
pub mod ingest;
pub mod jobs;
pub mod lead;
pub mod lead_lists;
pub mod leads;
pub mod letters;
pub mod notifications;
pub mod oauth;
pub mod page_changes;
pub mod pages;
pub mod preview_cards;
pub mod retention;
pub mod scanner_networks;
pub mod score;
pub mod score_decay;
pub mod teammates;
pub mod visit_class;
pub mod webhook_signature;
pub mod workspaces;
