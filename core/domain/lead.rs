//! What a lead is, wherever leads are handled: its five default variables, how each value is
//! checked and normalised, its display name, its variables as designs see them, and its page
//! addresses.

use std::borrow::Cow;
use std::collections::{BTreeMap, HashMap};

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::store::leads::LeadWithPage;
use crate::time::Micros;
use unicode_normalization::UnicodeNormalization;

/// One input lead as read from the request and queued in `job_chunks.payload`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct LeadPayload {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lead_id: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub service_page_url: Option<String>,
    #[serde(default)]
    pub values: BTreeMap<String, String>,
    /// Why the lead could not be read, if it could not: the row then fails with this message.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub invalid: Option<String>,
    /// The CSV row the lead was read from (a CSV import), kept until the row is handled so a
    /// row that fails can be given back as it was (`domain::csv_imports::rejects`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub row: Option<crate::csv_import::Row>,
}

impl LeadPayload {
    /// A lead as sent in a list, in JSON: an object with `values`, and for an update `lead_id`
    /// or `service_page_url` (beside `values` or inside it). Anything unreadable becomes a lead
    /// that fails with a message: a bad row never sinks the batch. Leads reach core as
    /// protobuf (`services::leads::conversions::payload`, checked against this reading).
    #[cfg(test)]
    pub fn read(item: Value) -> Self {
        let Value::Object(mut item) = item else {
            return Self::of_sent(SentLead::<Vec<_>>::NotAnObject);
        };
        let values = match item.remove("values") {
            Some(Value::Object(values)) => values,
            None | Some(Value::Null) => Map::new(),
            Some(_) => return Self::of_sent(SentLead::<Vec<_>>::ValuesNotAnObject),
        };
        Self::of_sent(SentLead::Lead {
            values: values
                .into_iter()
                .map(|(key, value)| (key, sent_json(value))),
            lead_id: item.get("lead_id").and_then(integer),
            service_page_url: match item.remove("service_page_url") {
                Some(Value::String(url)) => Some(url),
                _ => None,
            },
        })
    }

    /// A lead of a list as whatever carried it (JSON, protobuf) read it ([`LeadPayload::read`]).
    pub fn of_sent(lead: SentLead<impl IntoIterator<Item = (String, SentValue)>>) -> Self {
        let invalid = |message: &str| Self {
            invalid: Some(message.to_owned()),
            ..Self::default()
        };
        let (values, lead_id, service_page_url) = match lead {
            SentLead::NotAnObject => {
                return invalid("Each lead must be an object with a values object.");
            }
            SentLead::ValuesNotAnObject => {
                return invalid("The values of a lead must be an object.");
            }
            SentLead::Lead {
                values,
                lead_id,
                service_page_url,
            } => (values, lead_id, service_page_url),
        };
        let mut lead = match Self::from_sent_values(values) {
            Ok(lead) => lead,
            Err(message) => return invalid(&message),
        };
        lead.lead_id = lead_id.or(lead.lead_id);
        lead.service_page_url = service_page_url.or(lead.service_page_url);
        lead
    }

    /// A lead from its `values`, whose `lead_id` and `service_page_url` (if any) identify it
    /// rather than becoming variables.
    pub fn from_values(values: Map<String, Value>) -> Result<Self, String> {
        Self::from_sent_values(
            values
                .into_iter()
                .map(|(key, value)| (key, sent_json(value))),
        )
    }

    fn from_sent_values(
        values: impl IntoIterator<Item = (String, SentValue)>,
    ) -> Result<Self, String> {
        let mut lead = Self::default();
        for (key, value) in sent_texts(values)? {
            match key.as_str() {
                "lead_id" => lead.lead_id = value.trim().parse().ok(),
                "service_page_url" => lead.service_page_url = Some(value),
                _ => {
                    lead.values.insert(key, value);
                }
            }
        }
        Ok(lead)
    }
}

/// A lead of a list as sent, its parts read by whatever carried it (JSON, protobuf).
pub enum SentLead<V> {
    /// The item is not an object.
    NotAnObject,
    /// Its `values` are not an object.
    ValuesNotAnObject,
    Lead {
        /// Variable key to value.
        values: V,
        /// Beside `values` (a whole number or numeric text), winning over one inside them.
        lead_id: Option<i64>,
        /// Beside `values` (text), winning over one inside them.
        service_page_url: Option<String>,
    },
}

/// A variable's value as sent: text (numbers and booleans written out), nothing (a null,
/// dropped), or a list or an object, which makes the lead unreadable.
pub enum SentValue {
    Text(String),
    Null,
    Nested,
}

/// A JSON value as a variable's value.
pub fn sent_json(value: Value) -> SentValue {
    match value {
        Value::Null => SentValue::Null,
        Value::String(s) => SentValue::Text(s),
        Value::Number(n) => SentValue::Text(n.to_string()),
        Value::Bool(b) => SentValue::Text(b.to_string()),
        Value::Array(_) | Value::Object(_) => SentValue::Nested,
    }
}

/// Variables as text: numbers and booleans are written out, nulls dropped; a nested array or
/// object makes the lead unreadable.
pub fn text_values(object: Map<String, Value>) -> Result<Vec<(String, String)>, String> {
    sent_texts(
        object
            .into_iter()
            .map(|(key, value)| (key, sent_json(value))),
    )
}

fn sent_texts(
    values: impl IntoIterator<Item = (String, SentValue)>,
) -> Result<Vec<(String, String)>, String> {
    let values = values.into_iter();
    let mut texts = Vec::with_capacity(values.size_hint().0);
    for (key, value) in values {
        match value {
            SentValue::Text(text) => texts.push((key, text)),
            SentValue::Null => {}
            SentValue::Nested => {
                return Err(format!(
                    "The value of {key} must be text, a number or a boolean."
                ));
            }
        }
    }
    Ok(texts)
}

/// A lead's id as sent: a whole number (exact up to 2^53) or numeric text.
pub fn integer(value: &Value) -> Option<i64> {
    match value {
        Value::Number(n) => n.as_i64().or_else(|| {
            n.as_f64()
                .filter(|f| f.fract() == 0.0 && f.abs() < 9e15)
                .map(|f| f as i64)
        }),
        Value::String(s) => s.trim().parse().ok(),
        _ => None,
    }
}

pub use crate::wire::DEFAULT_KEYS;

/// Longest value accepted for any variable.
pub const MAX_VALUE_CHARS: usize = 10_000;
/// Longest custom variable key.
pub const MAX_KEY_CHARS: usize = 100;

/// A lead's value of `key` as stored, or why it cannot be.
///
/// Every value: no control characters (custom values may hold tabs and line breaks), Unicode
/// NFC, trimmed. Identity fields (`email`, `company_domain`, `social_profile_url`) also lose
/// zero-width and bidirectional formatting characters, so that an invisible character cannot
/// make a second lead of the same person, and are checked for their form: an email address
/// by RFC 5321/5322 rules (ASCII, at most 64 characters before the `@` and 254 in all, a domain
/// that is a host name), a domain as an IDNA host name (stored in its ASCII form), a profile
/// URL as an `http(s)` URL with a host (stored as parsed, so markup never survives verbatim).
/// An empty result means "no value".
pub fn normalise_value(key: &str, value: &str) -> Result<String, String> {
    let is_default = DEFAULT_KEYS.contains(&key);
    if let Some(bad) = value
        .chars()
        .find(|c| c.is_control() && (is_default || !matches!(c, '\t' | '\n' | '\r')))
    {
        return Err(format!(
            "The value of {key} must not contain control characters (found U+{:04X}).",
            bad as u32
        ));
    }
    // Most values (all ASCII ones) are already in NFC: checked without building a copy.
    let normalised: String;
    let value = match unicode_normalization::is_nfc_quick(value.chars()) {
        unicode_normalization::IsNormalized::Yes => value,
        _ => {
            normalised = value.nfc().collect();
            &normalised
        }
    };
    let value = value.trim();
    if value.chars().count() > MAX_VALUE_CHARS {
        return Err(format!(
            "The value of {key} must not be longer than {MAX_VALUE_CHARS} characters."
        ));
    }
    match key {
        "email" => email(&visible(value)),
        "company_domain" => company_domain(&visible(value)),
        "social_profile_url" => profile_url(&visible(value)),
        _ => Ok(value.to_owned()),
    }
}

/// Whether a custom variable key may be used.
pub fn check_key(key: &str) -> Result<(), String> {
    if key.is_empty() {
        return Err("Variable keys must not be empty.".into());
    }
    if key.chars().count() > MAX_KEY_CHARS || key.chars().any(|c| c.is_control()) {
        return Err(format!(
            "Variable keys must be at most {MAX_KEY_CHARS} printable characters."
        ));
    }
    Ok(())
}

/// Zero-width and bidirectional formatting characters, and the byte-order mark.
fn is_invisible(c: char) -> bool {
    matches!(c,
        '\u{00AD}' | '\u{180E}' | '\u{200B}'..='\u{200F}' | '\u{202A}'..='\u{202E}'
        | '\u{2060}'..='\u{2064}' | '\u{2066}'..='\u{2069}' | '\u{FEFF}')
}

fn visible(value: &str) -> Cow<'_, str> {
    // Nearly every value has none: borrowed then, not copied.
    if value.chars().any(is_invisible) {
        Cow::Owned(value.chars().filter(|c| !is_invisible(*c)).collect())
    } else {
        Cow::Borrowed(value)
    }
}

const EMAIL_INVALID: &str = "The email must be a valid email address.";

pub(crate) fn email(value: &str) -> Result<String, String> {
    if value.is_empty() {
        return Ok(String::new());
    }
    let (local, domain) = value.rsplit_once('@').ok_or(EMAIL_INVALID)?;
    let valid = value.is_ascii()
        && value.len() <= 254
        && (1..=64).contains(&local.len())
        && email_address::EmailAddress::is_valid(value)
        && host_name(domain).is_some();
    if valid {
        Ok(value.to_owned())
    } else {
        Err(EMAIL_INVALID.into())
    }
}

fn company_domain(value: &str) -> Result<String, String> {
    if value.is_empty() {
        return Ok(String::new());
    }
    let without_scheme = value
        .strip_prefix("https://")
        .or_else(|| value.strip_prefix("http://"))
        .unwrap_or(value);
    let host = without_scheme
        .split(['/', '?', '#'])
        .next()
        .unwrap_or_default();
    host_name(host)
        .ok_or_else(|| "The company domain must be a domain such as example.com.".to_owned())
}

/// A host name in its lower-case ASCII (IDNA) form: labels of letters, digits and hyphens,
/// at least two of them.
fn host_name(text: &str) -> Option<String> {
    let text = text.trim_end_matches('.');
    plain_host_name(text).unwrap_or_else(|| parsed_host_name(text))
}

/// [`host_name`] by `url`'s host parser (IDNA, IPv4 and IPv6 forms).
fn parsed_host_name(text: &str) -> Option<String> {
    match url::Host::parse(text).ok()? {
        url::Host::Domain(domain) => {
            let labels: Vec<&str> = domain.split('.').collect();
            let valid = domain.len() <= 253
                && labels.len() >= 2
                && labels.iter().all(|label| {
                    (1..=63).contains(&label.len())
                        && !label.starts_with('-')
                        && !label.ends_with('-')
                        && label
                            .bytes()
                            .all(|b| b.is_ascii_alphanumeric() || b == b'-')
                });
            valid.then(|| domain.to_ascii_lowercase())
        }
        url::Host::Ipv4(_) | url::Host::Ipv6(_) => None,
    }
}

/// The answer of [`host_name`] for the common case, an ASCII name whose labels are letters,
/// digits and hyphens and whose last label is letters only (as every top-level domain is),
/// without the IDNA and IPv4 parsing `url` does (~1.3% of an import's CPU):
/// such a name is its own IDNA form in lower case, and is no IPv4 address since its last
/// label is not a number. `None` when the name needs the full parse: other characters, a
/// punycode (`xn--`) label to validate, a digit in the last label.
fn plain_host_name(text: &str) -> Option<Option<String>> {
    let last = text.rsplit('.').next().unwrap_or_default();
    let plain = text
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'.')
        && !last.is_empty()
        && last.bytes().all(|b| b.is_ascii_alphabetic())
        && !text
            .split('.')
            .any(|label| label.len() >= 4 && label[..4].eq_ignore_ascii_case("xn--"));
    if !plain {
        return None;
    }
    let labels_valid = text.len() <= 253
        && text.contains('.')
        && text.split('.').all(|label| {
            (1..=63).contains(&label.len()) && !label.starts_with('-') && !label.ends_with('-')
        });
    Some(labels_valid.then(|| text.to_ascii_lowercase()))
}

fn profile_url(value: &str) -> Result<String, String> {
    const INVALID: &str = "The social profile url must be a valid URL.";
    if value.is_empty() {
        return Ok(String::new());
    }
    let with_scheme = if let Some(rest) = value.strip_prefix("//") {
        format!("https://{rest}")
    } else if value.contains("://") {
        value.to_owned()
    } else {
        format!("https://{value}")
    };
    let url = url::Url::parse(&with_scheme).map_err(|_| INVALID)?;
    let host_ok = url.host_str().is_some_and(|host| host_name(host).is_some());
    if !matches!(url.scheme(), "http" | "https") || !host_ok || !url.username().is_empty() {
        return Err(INVALID.into());
    }
    Ok(url.as_str().trim_end_matches('/').to_owned())
}

/// A person's name as listed: first name, and last name when a custom `last_name` exists.
pub fn display_name(first: Option<&str>, last: Option<&str>) -> String {
    [first, last]
        .into_iter()
        .flatten()
        .map(str::trim)
        .filter(|part| !part.is_empty())
        .collect::<Vec<_>>()
        .join(" ")
}

/// A lead's variables: its custom values with the five defaults (in [`DEFAULT_KEYS`] order)
/// that have a value.
pub fn lead_variables(
    mut custom: BTreeMap<String, String>,
    defaults: [&Option<String>; 5],
) -> BTreeMap<String, String> {
    for (key, value) in DEFAULT_KEYS.iter().zip(defaults) {
        if let Some(value) = value {
            custom.insert((*key).to_owned(), value.clone());
        }
    }
    custom
}

/// The address of a lead's page in a campaign.
pub fn page_url(public_url: &str, campaign_slug: &str, lead_slug: &str) -> String {
    format!("{public_url}/p/{campaign_slug}/{lead_slug}")
}

/// Where pages are handed out: a campaign's verified domain
/// (`https://{hostname}/{campaign_slug}/{lead_slug}`), else the server's public URL
/// (`{public_url}/p/{campaign_slug}/{lead_slug}`). Every address lps hands out (API answers,
/// exports, callbacks and channels' messages, the app, a page's own `og:url`) comes from here.
#[derive(Debug, Default)]
pub struct PageAddresses {
    public_url: String,
    /// Per workspace: the public slug of each campaign on a verified domain, and its hostname.
    hosts: HashMap<i64, HashMap<String, String>>,
}

impl PageAddresses {
    /// `hosts`: per workspace, the public slug of each campaign on a verified domain and that
    /// domain's hostname (`domains::page_addresses` reads them).
    pub fn new(public_url: &str, hosts: HashMap<i64, HashMap<String, String>>) -> Self {
        Self {
            public_url: public_url.to_owned(),
            hosts,
        }
    }

    /// The address of a lead's page in a campaign of `workspace_id` (at `campaign_slug`, its
    /// public path segment).
    pub fn page_url(&self, workspace_id: i64, campaign_slug: &str, lead_slug: &str) -> String {
        match self
            .hosts
            .get(&workspace_id)
            .and_then(|campaigns| campaigns.get(campaign_slug))
        {
            Some(host) => format!("https://{host}/{campaign_slug}/{lead_slug}"),
            None => page_url(&self.public_url, campaign_slug, lead_slug),
        }
    }
}

/// The lead-slug part of a campaign's preview address, `preview-{campaign_id}` (lead slugs are
/// 16 letters and digits, so the two never meet; the id disambiguates campaign slugs, which are
/// unique per workspace only).
pub fn preview_slug(campaign_id: i64) -> String {
    format!("preview-{campaign_id}")
}

/// A lead as listed, with its page address resolved.
#[derive(Debug, Clone)]
pub struct LeadView {
    pub id: i64,
    pub service_page_url: Option<String>,
    pub name: String,
    pub first_name: Option<String>,
    pub email: Option<String>,
    pub company_name: Option<String>,
    pub company_domain: Option<String>,
    pub social_profile_url: Option<String>,
    pub custom: BTreeMap<String, String>,
    pub created_at: Micros,
    /// The engagement score now (two decimals); set where leads are listed or read one by one.
    pub score: f64,
    /// When a person was last active on its pages; set where leads are listed or read.
    pub last_activity_at: Option<Micros>,
    /// Every campaign page of the lead, oldest first; set where leads are listed or read.
    pub pages: Vec<LeadPage>,
}

/// One campaign page of a lead.
#[derive(Debug, Clone, PartialEq)]
pub struct LeadPage {
    pub campaign_id: i64,
    pub campaign_name: String,
    pub url: String,
    pub created_at: Micros,
}

impl LeadView {
    pub fn new(addresses: &PageAddresses, row: LeadWithPage) -> Self {
        let LeadWithPage {
            lead,
            campaign_slug,
        } = row;
        let custom: BTreeMap<String, String> =
            serde_json::from_str(&lead.custom_values).unwrap_or_default();
        Self {
            id: lead.id,
            service_page_url: campaign_slug
                .map(|c| addresses.page_url(lead.workspace_id, &c, &lead.slug)),
            name: display_name(
                lead.first_name.as_deref(),
                custom.get("last_name").map(String::as_str),
            ),
            first_name: lead.first_name,
            email: lead.email,
            company_name: lead.company_name,
            company_domain: lead.company_domain,
            social_profile_url: lead.social_profile_url,
            custom,
            created_at: lead.created_at,
            score: 0.0,
            last_activity_at: None,
            pages: Vec::new(),
        }
    }

    /// Every variable the lead has a value for, defaults and custom ones.
    pub fn variables(&self) -> BTreeMap<String, String> {
        lead_variables(
            self.custom.clone(),
            [
                &self.first_name,
                &self.email,
                &self.company_name,
                &self.company_domain,
                &self.social_profile_url,
            ],
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    proptest::proptest! {
        /// The plain-name shortcut answers exactly as `url`'s parser would, wherever it
        /// answers at all.
        #[test]
        fn plain_host_names_answer_as_the_parser_does(text in "[a-zA-Z0-9.-]{0,70}|[a-zA-Z0-9-]{1,12}(\\.[a-zA-Z0-9-]{0,12}){1,4}|[xX][nN]--[a-z0-9-]{0,10}\\.[a-z]{2,4}") {
            if let Some(plain) = plain_host_name(&text) {
                proptest::prop_assert_eq!(plain, parsed_host_name(&text), "{}", text);
            }
        }
    }

    #[test]
    fn plain_host_names_take_the_shortcut_and_others_do_not() {
        assert_eq!(
            plain_host_name("Company7.Example"),
            Some(Some("company7.example".into()))
        );
        assert_eq!(plain_host_name("a.-b.example"), Some(None));
        for parsed in [
            "xn--bcher-kva.example",
            "10.0.0.1",
            "example.com1",
            "bücher.example",
            "0x7f",
        ] {
            assert_eq!(plain_host_name(parsed), None, "{parsed}");
        }
    }

    #[test]
    fn control_characters_are_refused_everywhere() {
        for key in ["email", "first_name", "company_name", "notes"] {
            assert!(
                normalise_value(key, "admin\0@example.com").is_err(),
                "{key}"
            );
        }
        assert_eq!(
            normalise_value("notes", "line one\nline two").unwrap(),
            "line one\nline two"
        );
        assert!(normalise_value("first_name", "Ada\nLovelace").is_err());
    }

    #[test]
    fn invisible_characters_cannot_make_a_second_identity() {
        assert_eq!(
            normalise_value("email", "admin@example.com\u{200b}").unwrap(),
            "admin@example.com"
        );
        assert_eq!(
            normalise_value("company_domain", "\u{202e}example.com").unwrap(),
            "example.com"
        );
    }

    #[test]
    fn values_are_stored_in_nfc_whether_or_not_they_came_so() {
        // Decomposed (e + combining acute) becomes composed; composed and ASCII stay as sent.
        assert_eq!(
            normalise_value("first_name", " Rene\u{301} ").unwrap(),
            "Ren\u{e9}"
        );
        assert_eq!(
            normalise_value("first_name", "Ren\u{e9}").unwrap(),
            "Ren\u{e9}"
        );
        assert_eq!(normalise_value("city", "Paris\n").unwrap(), "Paris");
        // The Angstrom sign is not NFC: it becomes the letter.
        assert_eq!(normalise_value("city", "\u{212b}").unwrap(), "\u{c5}");
    }

    #[test]
    fn emails_follow_the_rfc_rules() {
        for bad in [
            ".a@example.com",
            "a..b@example.com",
            "a@example..com",
            "a@localhost",
            "ａｄｍｉｎ@example.com",
            "no-at-sign",
            "a b@example.com",
        ] {
            assert!(normalise_value("email", bad).is_err(), "{bad}");
        }
        let long_local = format!("{}@example.com", "a".repeat(300));
        assert!(normalise_value("email", &long_local).is_err());
        assert_eq!(
            normalise_value("email", " Ada.Lovelace+x@Example.com ").unwrap(),
            "Ada.Lovelace+x@Example.com"
        );
    }

    #[test]
    fn domains_are_host_names_in_ascii() {
        assert_eq!(
            normalise_value("company_domain", "https://Example.COM/about").unwrap(),
            "example.com"
        );
        assert_eq!(
            normalise_value("company_domain", "bücher.example").unwrap(),
            "xn--bcher-kva.example"
        );
        for bad in [
            "<script>.com",
            "localhost",
            "exa mple.com",
            "-bad.com",
            "1.2.3.4",
        ] {
            assert!(normalise_value("company_domain", bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn profile_urls_are_parsed_never_kept_verbatim() {
        assert_eq!(
            normalise_value("social_profile_url", "//social.example/in/ada").unwrap(),
            "https://social.example/in/ada"
        );
        assert_eq!(
            normalise_value("social_profile_url", "social.example/in/ada/").unwrap(),
            "https://social.example/in/ada"
        );
        let marked = normalise_value("social_profile_url", "https://s.example/<b>x</b>").unwrap();
        assert!(!marked.contains('<'), "{marked}");
        for bad in [
            "javascript:alert(1)",
            "https://",
            "ftp://s.example/x",
            "https://u:p@s.example/",
        ] {
            assert!(normalise_value("social_profile_url", bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn leads_are_read_as_sent_and_bad_ones_fail_alone() {
        let lead = LeadPayload::read(serde_json::json!({
            "values": {"email": "a@example.com", "age": 42, "vip": true, "gone": null,
                       "lead_id": "7"},
        }));
        assert_eq!(lead.lead_id, Some(7));
        assert_eq!(lead.values["age"], "42");
        assert_eq!(lead.values["vip"], "true");
        assert!(!lead.values.contains_key("gone") && !lead.values.contains_key("lead_id"));
        let by_page = LeadPayload::read(serde_json::json!({
            "service_page_url": "https://p.example/p/c/abc", "lead_id": 9.0, "values": {}}));
        assert_eq!(by_page.lead_id, Some(9));
        assert!(by_page.service_page_url.is_some());
        for bad in [
            serde_json::json!(3),
            serde_json::json!({"values": [1]}),
            serde_json::json!({"values": {"a": {"b": 1}}}),
        ] {
            assert!(LeadPayload::read(bad).invalid.is_some());
        }
    }

    #[test]
    fn names_join_first_and_last() {
        assert_eq!(display_name(Some("Ada"), Some("Lovelace")), "Ada Lovelace");
        assert_eq!(display_name(None, Some("Lovelace")), "Lovelace");
        assert_eq!(display_name(None, None), "");
    }
}
