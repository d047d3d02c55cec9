//! A campaign's words, written once without HTML and read by designs as `{{ copy.headline }}`,
//! `{{ copy.intro }}`, `{{ copy.points }}` (a list), `{{ copy.cta_label }}`,
//! `{{ copy.signoff }}`, `{{ copy.event_when }}` and `{{ copy.event_where }}` (and
//! `{{ copy.names_sender }}`: whether the sign-off already names the sender). Each text may
//! name the lead's variables (`Hi {{ first_name | default("there") }}`); they are filled in
//! here, by plain substitution (no logic, so no budget to keep), and the design escapes the
//! result like any value. What is not written has a neutral default that claims nothing about
//! the prospect beyond their own values.

use serde::{Deserialize, Serialize};

use crate::domain::lead::MAX_VALUE_CHARS;
use crate::error::FieldViolation;

/// The copy as stored (JSON with the draft and with the published version): only what was
/// written.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CampaignCopy {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub headline: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub intro: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub points: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cta_label: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signoff: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub event_when: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub event_where: Option<String>,
}

/// Longest text of each field, and the most points.
const MAX_SHORT: usize = 200;
const MAX_LONG: usize = 1_000;
pub(crate) const MAX_POINTS: usize = 6;

/// The most characters the headline may come to for any lead ([`longest_filled`]: each value
/// it names at its longest). The headline is the last line of the link-preview card, which
/// anyone with a page's address can ask for: four values at their longest and the words around
/// them fit; a headline that could come to more is refused when it is written.
pub const MAX_FILLED_HEADLINE: usize = 50_000;

const DEFAULT_HEADLINE: &str = r#"Hi {{ first_name | default("there") }}, this page is yours."#;
const DEFAULT_INTRO: &str = r#"A few words for {{ company_name | default("you") }}, and an easy way to reply if you would like to talk."#;
const DEFAULT_POINTS: [&str; 3] = [
    r#"Where we could help {{ company_name | default("your team") }}"#,
    "How we would work together",
    "What happens next, if you would like to go ahead",
];
const DEFAULT_CTA: &str = "Let's talk";
const DEFAULT_SIGNOFF: &str = "Thank you for your time.";

/// The copy a design renders with, for one lead: every field filled.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct CopyContext {
    pub headline: String,
    pub intro: String,
    pub points: Vec<String>,
    pub cta_label: String,
    pub signoff: String,
    /// Events only; unset when not written, so designs can leave the line out.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub event_when: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub event_where: Option<String>,
    /// The sign-off already names the sender ([`names_sender`]): a design's own signature
    /// leaves the sender's name out (`{% if not copy.names_sender %}`), so it is not said twice.
    pub names_sender: bool,
}

/// Characters of the introduction a page's description holds.
const DESCRIPTION_CHARS: usize = 160;

impl CopyContext {
    /// What the page is described as where the prospect sees it (a link preview, a search
    /// result): the introduction's first [`DESCRIPTION_CHARS`] characters, an ellipsis after
    /// them when there were more.
    pub fn description(&self) -> std::borrow::Cow<'_, str> {
        match self.intro.char_indices().nth(DESCRIPTION_CHARS) {
            Some((cut, _)) => format!("{}\u{2026}", &self.intro[..cut]).into(),
            None => self.intro.as_str().into(),
        }
    }
}

/// Whether a sign-off, as a lead reads it, already names the sender: it holds their whole name
/// (`Best,\nAda Lovelace`), or ends with their first name (`Thanks, Ada`); words compared
/// without case or punctuation.
pub fn names_sender(signoff: &str, sender: &str) -> bool {
    let words = |text: &str| -> Vec<String> {
        text.split(|c: char| !c.is_alphanumeric() && c != '\'' && c != '\u{2019}')
            .filter(|w| !w.is_empty())
            .map(str::to_lowercase)
            .collect()
    };
    let (signoff, sender) = (words(signoff), words(sender));
    let Some(first) = sender.first() else {
        return false;
    };
    signoff
        .windows(sender.len())
        .any(|w| w == sender.as_slice())
        || signoff.last() == Some(first)
}

impl CampaignCopy {
    /// Stored JSON (empty or unreadable: nothing written).
    pub fn parse(json: &str) -> Self {
        serde_json::from_str(json).unwrap_or_default()
    }

    pub fn to_json(&self) -> String {
        serde_json::to_string(self).unwrap_or_else(|_| "{}".to_owned())
    }

    /// This copy with `change` applied: each field given replaces it, an empty text (or an
    /// empty list) goes back to the default.
    pub fn merged(mut self, change: CampaignCopy) -> Self {
        let set = |field: &mut Option<String>, value: Option<String>| {
            if let Some(value) = value {
                *field = Some(value.trim().to_owned()).filter(|v| !v.is_empty());
            }
        };
        set(&mut self.headline, change.headline);
        set(&mut self.intro, change.intro);
        set(&mut self.cta_label, change.cta_label);
        set(&mut self.signoff, change.signoff);
        set(&mut self.event_when, change.event_when);
        set(&mut self.event_where, change.event_where);
        if let Some(points) = change.points {
            let points: Vec<String> = points
                .into_iter()
                .map(|p| p.trim().to_owned())
                .filter(|p| !p.is_empty())
                .collect();
            self.points = Some(points).filter(|p| !p.is_empty());
        }
        self
    }

    /// What breaks the rules: lengths, control characters, the number of points.
    pub fn violations(&self) -> Vec<FieldViolation> {
        let mut found = Vec::new();
        let mut check = |field: String, text: &str, max: usize, lines: bool| {
            let label = field.replace(['_', '.'], " ");
            if text.chars().count() > max {
                found.push(FieldViolation::new(
                    &field,
                    format!("The {label} field must not be greater than {max} characters."),
                ));
            } else if text
                .chars()
                .any(|c| c.is_control() && !(lines && c == '\n'))
            {
                found.push(FieldViolation::new(
                    &field,
                    format!("The {label} field must not contain control characters."),
                ));
            }
        };
        for (name, value, max, lines) in [
            ("headline", &self.headline, MAX_SHORT, false),
            ("intro", &self.intro, MAX_LONG, true),
            ("cta_label", &self.cta_label, 60, false),
            ("signoff", &self.signoff, MAX_SHORT, true),
            ("event_when", &self.event_when, MAX_SHORT, false),
            ("event_where", &self.event_where, MAX_SHORT, false),
        ] {
            if let Some(value) = value {
                check(format!("copy.{name}"), value, max, lines);
            }
        }
        let too_many = self.points.as_ref().is_some_and(|p| p.len() > MAX_POINTS);
        for (i, point) in self.points.iter().flatten().enumerate() {
            check(format!("copy.points.{i}"), point, MAX_SHORT, false);
        }
        if let Some(headline) = &self.headline
            && !found.iter().any(|v| v.field == "copy.headline")
            && let Some(violation) = filled_headline_violation(headline)
        {
            found.push(violation);
        }
        if too_many {
            found.push(FieldViolation::new(
                "copy.points",
                format!("The copy points field must not have more than {MAX_POINTS} items."),
            ));
        }
        found
    }

    /// Whether the headline may be drawn on a link-preview card: a copy published before
    /// [`MAX_FILLED_HEADLINE`] was checked may name more values than it allows.
    pub fn headline_fits_card(&self) -> bool {
        self.headline
            .as_deref()
            .is_none_or(|headline| filled_headline_violation(headline).is_none())
    }

    /// Every field for one lead: written or default, variables filled in (renders fill a
    /// [`PreparedCopy`], read once).
    #[cfg(test)]
    pub fn for_lead(&self, values: &std::collections::BTreeMap<String, String>) -> CopyContext {
        self.prepared()
            .for_lead(|name| values.get(name).map(String::as_str))
    }

    /// This copy read into the pieces [`Prepared::fill`] reads, once, for every lead to fill them in.
    pub fn prepared(&self) -> PreparedCopy {
        let or = |field: &Option<String>, default: &str| {
            Prepared::new(field.as_deref().unwrap_or(default))
        };
        PreparedCopy {
            headline: or(&self.headline, DEFAULT_HEADLINE),
            intro: or(&self.intro, DEFAULT_INTRO),
            points: match &self.points {
                Some(points) => points.iter().map(|p| Prepared::new(p)).collect(),
                None => DEFAULT_POINTS.iter().map(|p| Prepared::new(p)).collect(),
            },
            cta_label: or(&self.cta_label, DEFAULT_CTA),
            signoff: or(&self.signoff, DEFAULT_SIGNOFF),
            event_when: self.event_when.as_deref().map(Prepared::new),
            event_where: self.event_where.as_deref().map(Prepared::new),
        }
    }
}

/// A campaign's copy as every render of its published version fills it in: each field,
/// written or default, read once into its pieces (a page's render no longer looks for
/// placeholders in the words).
#[derive(Debug, Clone)]
pub struct PreparedCopy {
    headline: Prepared,
    intro: Prepared,
    points: Vec<Prepared>,
    cta_label: Prepared,
    signoff: Prepared,
    event_when: Option<Prepared>,
    event_where: Option<Prepared>,
}

impl Default for PreparedCopy {
    /// The copy of a campaign whose words were never written: every default.
    fn default() -> Self {
        CampaignCopy::default().prepared()
    }
}

impl PreparedCopy {
    /// Every field for one lead, each variable's value as `value` gives it (by name).
    pub fn for_lead<'v>(&self, value: impl Fn(&str) -> Option<&'v str>) -> CopyContext {
        let fill = |text: &Prepared| text.fill(&value);
        CopyContext {
            headline: fill(&self.headline),
            intro: fill(&self.intro),
            points: self.points.iter().map(fill).collect(),
            cta_label: fill(&self.cta_label),
            signoff: fill(&self.signoff),
            event_when: self.event_when.as_ref().map(fill),
            event_where: self.event_where.as_ref().map(fill),
            names_sender: false,
        }
    }
}

/// A text in its pieces ([`pieces`]), owned.
#[derive(Debug, Clone)]
struct Prepared {
    parts: Vec<Part>,
    /// The length of its written parts: what a filled text holds at least.
    written: usize,
}

#[derive(Debug, Clone)]
enum Part {
    Written(String),
    Named { name: String, default: String },
}

impl Prepared {
    fn new(text: &str) -> Self {
        let parts: Vec<Part> = pieces(text)
            .map(|piece| match piece {
                Piece::Written(written) => Part::Written(written.to_owned()),
                Piece::Named { name, default } => Part::Named {
                    name: name.to_owned(),
                    default: default.to_owned(),
                },
            })
            .collect();
        let written = parts
            .iter()
            .map(|part| match part {
                Part::Written(written) => written.len(),
                Part::Named { .. } => 0,
            })
            .sum();
        Self { parts, written }
    }

    /// The text with each placeholder replaced by its value (trimmed; an empty or missing one
    /// by the placeholder's default).
    fn fill<'v>(&self, value: &impl Fn(&str) -> Option<&'v str>) -> String {
        let mut out = String::with_capacity(self.written + 16);
        for part in &self.parts {
            match part {
                Part::Written(written) => out.push_str(written),
                Part::Named { name, default } => {
                    let value = value(name).map(str::trim).filter(|v| !v.is_empty());
                    out.push_str(value.unwrap_or(default));
                }
            }
        }
        out
    }
}

/// Why a headline could come to more than [`MAX_FILLED_HEADLINE`] characters, if it could.
fn filled_headline_violation(headline: &str) -> Option<FieldViolation> {
    let longest = longest_filled(headline);
    (longest > MAX_FILLED_HEADLINE).then(|| {
        FieldViolation::new(
            "copy.headline",
            format!(
                "The headline field names too many values: with each at its longest \
                 ({MAX_VALUE_CHARS} characters) it could come to {longest} characters, more \
                 than the {MAX_FILLED_HEADLINE} its link-preview card allows."
            ),
        )
    })
}

/// The most characters `text` can come to once filled ([`Prepared::fill`]), for any lead: each value it
/// names at its longest ([`MAX_VALUE_CHARS`], or its default if that is longer).
pub fn longest_filled(text: &str) -> usize {
    pieces(text)
        .map(|piece| match piece {
            Piece::Written(written) => written.chars().count(),
            Piece::Named { default, .. } => default.chars().count().max(MAX_VALUE_CHARS),
        })
        .sum()
}

/// A part of a text as [`Prepared::fill`] reads it.
enum Piece<'a> {
    /// Kept as written.
    Written(&'a str),
    /// `{{ name }}` or `{{ name | default("text") }}`.
    Named { name: &'a str, default: &'a str },
}

/// `text` in the parts [`Prepared::fill`] reads: placeholders and what lies between them.
fn pieces(text: &str) -> impl Iterator<Item = Piece<'_>> {
    let mut rest = text;
    let mut queued = None;
    std::iter::from_fn(move || {
        if let Some(piece) = queued.take() {
            return Some(piece);
        }
        if rest.is_empty() {
            return None;
        }
        let Some(start) = rest.find("{{") else {
            return Some(Piece::Written(std::mem::take(&mut rest)));
        };
        let after = &rest[start + 2..];
        let Some(end) = after.find("}}") else {
            return Some(Piece::Written(std::mem::take(&mut rest)));
        };
        let (before, whole) = (&rest[..start], &rest[start..start + 2 + end + 2]);
        rest = &after[end + 2..];
        let piece = match placeholder(&after[..end]) {
            Some((name, default)) => Piece::Named { name, default },
            None => Piece::Written(whole),
        };
        if before.is_empty() {
            Some(piece)
        } else {
            queued = Some(piece);
            Some(Piece::Written(before))
        }
    })
}

/// `name` or `name | default("text")` (either quote), else `None`.
fn placeholder(inner: &str) -> Option<(&str, &str)> {
    let (name, filter) = match inner.split_once('|') {
        Some((name, filter)) => (name.trim(), Some(filter.trim())),
        None => (inner.trim(), None),
    };
    if !crate::wire::copy_placeholder::names(name) {
        return None;
    }
    let Some(filter) = filter else {
        return Some((name, ""));
    };
    let argument = filter
        .strip_prefix("default")?
        .trim()
        .strip_prefix('(')?
        .strip_suffix(')')?
        .trim();
    let default = argument
        .strip_prefix('"')
        .and_then(|a| a.strip_suffix('"'))
        .or_else(|| {
            argument
                .strip_prefix('\'')
                .and_then(|a| a.strip_suffix('\''))
        })?;
    Some((name, default))
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;

    /// `text` with each `{{ name }}` or `{{ name | default("text") }}` replaced by the value
    /// (or the default, or nothing); anything else between braces is left as written.
    fn fill(text: &str, values: &BTreeMap<String, String>) -> String {
        Prepared::new(text).fill(&|name| values.get(name).map(String::as_str))
    }

    fn values(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect()
    }

    #[test]
    fn variables_are_filled_with_their_defaults_and_anything_else_is_kept() {
        let lead = values(&[("first_name", "Grace"), ("company_name", " ")]);
        assert_eq!(fill("Hi {{ first_name }}!", &lead), "Hi Grace!");
        assert_eq!(
            fill(r#"For {{company_name|default("your team")}}"#, &lead),
            "For your team"
        );
        assert_eq!(fill("{{ missing }}x", &lead), "x");
        assert_eq!(fill("{{ a + b }} {{ open", &lead), "{{ a + b }} {{ open");
        assert_eq!(fill("{{ x | upper }}", &lead), "{{ x | upper }}");
        assert_eq!(fill("100% {{first_name}}", &lead), "100% Grace");
        assert_eq!(fill("{{first_name}}{{first_name}}.", &lead), "GraceGrace.");
    }

    #[test]
    fn the_text_the_dashboard_offers_to_type_is_filled_as_it_says() {
        use crate::wire::copy_placeholder::text;
        let lead = values(&[("first_name", "Grace"), ("industry_2", "Ships")]);
        let nobody = values(&[]);
        for fallback in ["", "there", "say \"hi\"", "a | b", "(x)", "it's", "{{ open"] {
            for key in ["first_name", "industry_2"] {
                let typed = text(key, fallback).unwrap();
                assert_eq!(fill(&typed, &lead), lead[key], "{typed}");
                assert_eq!(fill(&typed, &nobody), fallback, "{typed}");
            }
        }
        // What the words cannot hold is not offered.
        assert_eq!(text("Job Title", ""), None);
        assert_eq!(text("first_name", "a }} b"), None);
        assert_eq!(text("first_name", "a\u{7}"), None);
    }

    #[test]
    fn a_text_at_its_longest_counts_each_value_it_names_at_the_longest_a_lead_may_have() {
        assert_eq!(longest_filled("Hi there"), 8);
        assert_eq!(longest_filled("Hi {{ first_name }}!"), 4 + MAX_VALUE_CHARS);
        let long_default = format!(r#"{{{{ x | default("{}") }}}}"#, "d".repeat(10_001));
        assert_eq!(longest_filled(&long_default), 10_001);
        // Braces that name nothing are kept as written.
        assert_eq!(longest_filled("{{ a + b }} {{ open"), 19);
    }

    #[test]
    fn a_headline_that_could_come_to_more_than_its_card_allows_is_refused() {
        let naming = |values: usize| CampaignCopy {
            headline: Some(vec!["{{ first_name }}"; values].join(" ")),
            ..Default::default()
        };
        assert!(naming(4).violations().is_empty());
        assert!(naming(4).headline_fits_card());
        let refused = naming(5).violations();
        assert_eq!(refused.len(), 1, "{refused:?}");
        assert_eq!(refused[0].field, "copy.headline");
        assert!(
            refused[0].message.contains("too many values"),
            "{}",
            refused[0].message
        );
        assert!(!naming(5).headline_fits_card());
        // One violation a field: an overlong headline is refused for its length alone.
        let both = CampaignCopy {
            headline: Some("{{ first_name }}".repeat(13)),
            ..Default::default()
        };
        assert_eq!(both.violations().len(), 1);
    }

    #[test]
    fn unwritten_fields_have_neutral_defaults_and_written_ones_replace_them() {
        let lead = values(&[("first_name", "Grace"), ("company_name", "Hopper & Co")]);
        let copy = CampaignCopy::default().for_lead(&lead);
        assert_eq!(copy.headline, "Hi Grace, this page is yours.");
        assert!(copy.points[0].contains("Hopper & Co"));
        assert_eq!(copy.event_when, None);
        let written = CampaignCopy::default().merged(CampaignCopy {
            headline: Some("Hi {{ first_name }}".into()),
            points: Some(vec!["One".into(), " ".into()]),
            ..Default::default()
        });
        let copy = written.for_lead(&lead);
        assert_eq!(copy.headline, "Hi Grace");
        assert_eq!(copy.points, ["One"]);
        // An empty text goes back to the default.
        let reset = written.merged(CampaignCopy {
            headline: Some(String::new()),
            ..Default::default()
        });
        assert_eq!(reset.headline, None);
        assert_eq!(CampaignCopy::parse(&reset.to_json()), reset);
    }

    #[test]
    fn a_description_is_the_intros_first_160_characters_and_an_ellipsis_when_cut() {
        let with_intro = |intro: String| CopyContext {
            intro,
            ..Default::default()
        };
        let short = with_intro("Short \u{e9}".into());
        assert_eq!(short.description(), "Short \u{e9}");
        let exact = with_intro("\u{e9}".repeat(160));
        assert_eq!(exact.description(), exact.intro);
        let long = with_intro(format!("{}\u{1f600}tail", "\u{e9}".repeat(159)));
        assert_eq!(
            long.description(),
            format!("{}\u{1f600}\u{2026}", "\u{e9}".repeat(159))
        );
    }

    #[test]
    fn prepared_copy_fills_each_lead_as_the_words_read_afresh_would() {
        let written = CampaignCopy {
            headline: Some("Hi {{ first_name }}, {{ x | upper }} {{ open".into()),
            points: Some(vec!["For {{ company_name | default('you') }}".into()]),
            event_when: Some("{{first_name}}{{first_name}}".into()),
            ..Default::default()
        };
        let prepared = written.prepared();
        let grace = values(&[("first_name", " Grace "), ("company_name", "Hopper")]);
        let nobody = values(&[("company_name", "")]);
        for (lead, headline, company, twice) in [
            (
                &grace,
                "Hi Grace, {{ x | upper }} {{ open",
                "Hopper",
                "GraceGrace",
            ),
            (&nobody, "Hi , {{ x | upper }} {{ open", "you", ""),
        ] {
            let filled = prepared.for_lead(|name| lead.get(name).map(String::as_str));
            assert_eq!(filled.headline, headline);
            assert_eq!(filled.points, [format!("For {company}")]);
            assert_eq!(filled.event_when.as_deref(), Some(twice));
            assert_eq!(filled.event_where, None);
            assert_eq!(filled.cta_label, DEFAULT_CTA);
            assert!(
                filled.intro.contains(&format!("for {company},")),
                "{}",
                filled.intro
            );
            assert_eq!(filled, written.for_lead(lead));
        }
    }

    #[test]
    fn a_sign_off_names_the_sender_with_their_whole_name_or_ending_with_their_first() {
        let sender = "Ada Lovelace";
        for named in [
            "Best,\nAda Lovelace",
            "Thanks, ada lovelace.",
            "Cheers, Ada",
            "Warmly \u{2014} Ada Lovelace, CEO",
        ] {
            assert!(names_sender(named, sender), "{named}");
        }
        for not_named in [
            "Thank you for your time.",
            "Adam's team",
            "Ada, thanks for reading",
            "Lovelace",
        ] {
            assert!(!names_sender(not_named, sender), "{not_named}");
        }
        assert!(!names_sender("Best, Ada", ""));
    }

    #[test]
    fn overlong_and_control_texts_are_refused_by_field() {
        let copy = CampaignCopy {
            headline: Some("x".repeat(201)),
            cta_label: Some("a\u{7}".into()),
            points: Some(vec!["p".into(); 7]),
            ..Default::default()
        };
        let fields: Vec<String> = copy.violations().into_iter().map(|v| v.field).collect();
        assert_eq!(fields, ["copy.headline", "copy.cta_label", "copy.points"]);
    }
}
