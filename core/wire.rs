//! What core and its callers (the edge, internal services) agree on beyond the proto messages:
//! metadata names, the values some string fields take, and how field violations found before
//! core travel. Defined once here, next to `proto/`, and used by both sides; nothing here is
//! core's inside.

pub use crate::error::FieldViolation;
/// What kind of credential a caller holds, from its prefix (a session cookie's value too).
pub use crate::principal::CredentialKind;
pub use crate::random::token as random_token;
/// A caller's rate-limit state, and the metadata (and HTTP headers) that report it.
pub use crate::ratelimit::Decision as RateLimitState;
/// Timestamps as stored (microseconds) and as written on the wire.
pub use crate::time::{
    Micros, from_proto_micros, iso8601, iso8601_offset, now, plain_datetime, to_proto,
};

/// Appends `address` as `Display` writes it, by hand for IPv4: every API request forwards its
/// client's address ([`CLIENT_ADDRESS`]) and an unauthenticated one is counted by it, and
/// `Ipv4Addr`'s `Display` costs more than the rest of that.
pub fn push_address(text: &mut String, address: std::net::IpAddr) {
    match address {
        std::net::IpAddr::V4(address) => {
            let mut digits = itoa::Buffer::new();
            for (n, octet) in address.octets().into_iter().enumerate() {
                if n > 0 {
                    text.push('.');
                }
                text.push_str(digits.format(octet));
            }
        }
        std::net::IpAddr::V6(address) => {
            use std::fmt::Write;
            let _ = write!(text, "{address}");
        }
    }
}

/// Request metadata: the HTTP client's address, as the edge saw it. Believed only from the
/// process's own edge or from an edge presenting `grpc::EDGE_SECRET`; removed from every other
/// call.
pub const CLIENT_ADDRESS: &str = "x-lps-client-address";

/// Response metadata: the generation of page changes core had reached when it answered.
pub const GENERATION_HEADER: &str = "x-lps-page-generation";

/// Binary request metadata carrying violations the caller's transport found before core: JSON
/// `[[field, message], ...]`.
pub const EARLIER_VIOLATIONS: &str = "x-lps-field-violations-bin";

/// Where live pages load the tracking script from (the edge serves it there).
pub const TRACKING_SCRIPT_PATH: &str = "/p/track.js";
/// Where the images pages show are served from lps's own origin (`{this}/{sha-256}`): core
/// writes these addresses into pages, the edge answers them.
pub const ASSETS_PATH: &str = "/assets";

/// The five variables every lead may have; every other key is a custom variable.
pub const DEFAULT_KEYS: [&str; 5] = [
    "first_name",
    "email",
    "company_name",
    "company_domain",
    "social_profile_url",
];

/// How a campaign's words name a lead's variable, as core fills them in
/// (`core/render/copy.rs`): `{{ key }}`, or `{{ key | default("fallback") }}` for a lead
/// without the value. Written here so that what the dashboard offers to type is what core
/// reads.
pub mod copy_placeholder {
    /// Whether the words can name `key`: ASCII letters, digits, `_` and `.` only (a custom
    /// variable named otherwise, say with a space, can be used by designs but not by the words).
    pub fn names(key: &str) -> bool {
        !key.is_empty()
            && key
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '.')
    }

    /// Whether `fallback` can stand in the words: no `}}` (which would end the placeholder)
    /// and no control character.
    pub fn fallback_fits(fallback: &str) -> bool {
        !fallback.contains("}}") && !fallback.chars().any(char::is_control)
    }

    /// The text naming `key` alone (blank for a lead without the value).
    pub fn plain(key: &str) -> Option<String> {
        names(key).then(|| format!("{{{{ {key} }}}}"))
    }

    /// The text naming `key` with a fallback, as what comes before the fallback and after it.
    pub fn around_fallback(key: &str) -> Option<(String, String)> {
        names(key).then(|| (format!("{{{{ {key} | default(\""), "\") }}".to_owned()))
    }

    /// The text to type for `key` with `fallback` (none when blank), if the words can hold it.
    pub fn text(key: &str, fallback: &str) -> Option<String> {
        if fallback.is_empty() {
            return plain(key);
        }
        let (before, after) = around_fallback(key)?;
        fallback_fits(fallback).then(|| format!("{before}{fallback}{after}"))
    }
}

/// Engagement filter values of `GET /leads/search` (`SearchLeadsRequest.engagement`).
pub const ENGAGEMENT_VALUES: [&str; 5] = [
    "all",
    "page_viewed",
    "button_clicked",
    "scroll_100_percent",
    "form_submitted",
];

/// Whether a redirect URI's host is this device (a native app's loopback redirect, RFC 8252
/// 7.3): such URIs may use `http` and match on any port, and a person is told so.
pub fn is_loopback(url: &url::Url) -> bool {
    matches!(url.host_str(), Some("127.0.0.1" | "localhost" | "[::1]"))
}

/// Encodes violations for [`EARLIER_VIOLATIONS`].
pub fn encode_violations(violations: &[FieldViolation]) -> Vec<u8> {
    let pairs: Vec<(&str, &str)> = violations
        .iter()
        .map(|v| (v.field.as_str(), v.message.as_str()))
        .collect();
    serde_json::to_vec(&pairs).unwrap_or_default()
}

/// Decodes [`EARLIER_VIOLATIONS`]; anything unreadable is one violation on `body`.
pub fn decode_violations(bytes: &[u8]) -> Vec<FieldViolation> {
    match serde_json::from_slice::<Vec<(String, String)>>(bytes) {
        Ok(pairs) => pairs
            .into_iter()
            .map(|(field, message)| FieldViolation::new(field, message))
            .collect(),
        Err(_) => vec![FieldViolation::new(
            "body",
            "The request could not be read.",
        )],
    }
}

/// A visit class as the REST API and its documents spell it (`person`, `unconfirmed`,
/// `automated`, `scanner_network`: the domain's own spelling); empty for an unset one (core
/// always sets it).
pub fn visit_class_name(class: crate::proto::VisitClass) -> &'static str {
    use crate::domain::visit_class::VisitClass;
    use crate::proto::VisitClass as Wire;
    match class {
        Wire::Person => VisitClass::Person.as_str(),
        Wire::Unconfirmed => VisitClass::Unconfirmed.as_str(),
        Wire::Automated => VisitClass::Automated.as_str(),
        Wire::ScannerNetwork => VisitClass::ScannerNetwork.as_str(),
        Wire::Unspecified => "",
    }
}
