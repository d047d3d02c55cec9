//! The command-line tools beside the service: `lps admin ...` and `lps import`.

pub mod admin;
pub mod import;
