//! CSV files of leads read for import: the one place that decides what a file's columns mean.
//!
//! Every face that imports a CSV (`lps import`, `POST /leads/import-csv`) reads the file through
//! [`CsvFile`] and maps its columns with [`Mapping`], so a header is recognised the same way
//! everywhere. Recognition ignores case, spaces, underscores and punctuation
//! ([`normalise_header`]) and knows the headers of the exports people have: HubSpot,
//! Salesforce, Apollo, LinkedIn Sales Navigator, lemlist, Pipedrive and Google Contacts (a
//! sample header row of each is in `tests/data/exports/`). A header it does not know becomes a
//! custom variable named from the header.
//!
//! The reader takes UTF-8 (with or without a byte-order mark) and Windows-1252 (chosen when
//! the first 64 KiB are not UTF-8), sniffs `,`, `;` or tab as the delimiter, and refuses what
//! is not a CSV of leads: NUL bytes (a binary file), a line longer than [`MAX_LINE_BYTES`] or
//! more than [`MAX_COLUMNS`] columns. It reads as it goes: memory is bounded by the longest
//! line, never the file.
//!
//! `mapping.rs` holds what columns mean (fields, recognition, a file's mapping); `reader.rs`
//! how a file is read (encoding, delimiter, refusals, rows).

mod mapping;
mod reader;

pub use mapping::*;
pub use reader::*;

/// Most columns a file may have.
pub const MAX_COLUMNS: usize = 1_000;
/// Longest line (bytes between two line breaks, quoted or not) a file may have.
pub const MAX_LINE_BYTES: usize = 1 << 20;
/// By default, an import still receiving its file with no row staged for this long was
/// abandoned and is deleted with its staged rows: its uploader killed mid-file (the body
/// deadline cuts a stalled upload far sooner), or a file uploaded in the dashboard whose
/// mapping step was left unanswered (`--import-abandoned-after-seconds`;
/// `domain::csv_imports::sweep`).
pub const ABANDONED_AFTER: std::time::Duration = std::time::Duration::from_secs(3600);
/// Most rows one `AddCsvImportRows` call may stage (staged as chunks of 1,000, as any job's).
pub const MAX_ROWS_PER_CALL: usize = 5_000;
/// How much of the file's start decides its encoding and delimiter.
pub const SNIFF_BYTES: usize = 64 * 1024;

#[cfg(test)]
mod tests;
