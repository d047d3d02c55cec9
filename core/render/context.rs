//! What a design can use: the lead's variables, where the call to action leads, the sender's
//! look and the campaign's words, with addresses and colours that may go into attributes made
//! safe.

use std::collections::BTreeMap;

use serde::Serialize;

use super::{contrast, copy};

/// What a design can use: the lead's variables (`{{ first_name }}`, custom keys), where the
/// call to action leads (`{{ cta_url }}`), and the sender's look (`{{ branding.logo_url }}`,
/// `{{ sender.name }}`, ...). Everything is text; what is not set is undefined, so
/// `{% if branding.logo_url %}` and `| default(...)` give graceful fallbacks.
#[derive(Debug, Clone, Default, Serialize)]
pub struct PageContext {
    #[serde(flatten)]
    lead: BTreeMap<String, String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    cta_url: Option<String>,
    branding: BrandingContext,
    sender: SenderContext,
    /// The campaign's words for this lead (`{{ copy.headline }}`, ...).
    copy: copy::CopyContext,
    /// The words as written, filled in per lead.
    #[serde(skip)]
    written: copy::CampaignCopy,
}

#[derive(Debug, Clone, Default, Serialize)]
pub struct BrandingContext {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub company_name: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub logo_url: Option<String>,
    /// `#rrggbb` only (it goes into style attributes).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub primary_color: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub website: Option<String>,
    /// Derived, never set: the text colour readable on the brand colour (`#ffffff` or
    /// `#111111`, whichever contrasts more), for buttons and bands filled with it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub on_primary: Option<String>,
    /// Derived: the brand colour darkened until it reads on white at 4.5:1 (WCAG AA), for
    /// links and text.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub primary_text: Option<String>,
    /// Derived: the website's host, to show instead of the whole address.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub website_label: Option<String>,
}

#[derive(Debug, Clone, Default, Serialize)]
pub struct SenderContext {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub photo_url: Option<String>,
}

/// The page-level names a lead's own variable cannot take.
const RESERVED: [&str; 4] = ["cta_url", "branding", "sender", "copy"];

impl PageContext {
    /// The page-level values of a published version (no lead yet: see [`Self::with_lead`]).
    /// Addresses that are not `http(s)`, `mailto:` or `tel:` and colours that are not hex are
    /// left out (they would go into `href`, `src` and `style` attributes).
    pub fn new(
        cta_url: Option<&str>,
        mut branding: BrandingContext,
        mut sender: SenderContext,
    ) -> Self {
        let url = |value: Option<String>| value.map(|v| safe_url(&v)).filter(|v| !v.is_empty());
        let text = |value: Option<String>| value.filter(|v| !v.trim().is_empty());
        branding.logo_url = url(branding.logo_url);
        branding.website = url(branding.website);
        let rgb = branding
            .primary_color
            .as_deref()
            .and_then(|c| contrast::parse(&safe_color(c)));
        branding.primary_color = rgb.map(contrast::hex);
        branding.on_primary = rgb.map(|c| contrast::hex(contrast::readable_on(c)));
        branding.primary_text = rgb.map(|c| contrast::hex(contrast::readable_on_white(c)));
        branding.website_label = branding
            .website
            .as_deref()
            .and_then(|w| url::Url::parse(w).ok())
            .and_then(|u| {
                u.host_str()
                    .map(|h| h.trim_start_matches("www.").to_owned())
            });
        branding.name = text(branding.name);
        branding.company_name = text(branding.company_name);
        sender.photo_url = url(sender.photo_url);
        sender.name = text(sender.name);
        sender.title = text(sender.title);
        Self {
            lead: BTreeMap::new(),
            cta_url: url(cta_url.map(str::to_owned)),
            branding,
            sender,
            copy: copy::CopyContext::default(),
            written: copy::CampaignCopy::default(),
        }
    }

    /// The copy's headline for a lead (the last line of the link-preview card).
    pub fn headline_for(&self, lead: BTreeMap<String, String>) -> String {
        self.with_lead(lead).copy.headline
    }

    /// The brand colour as pages show it (`#rrggbb`), if any.
    pub fn brand_color(&self) -> Option<String> {
        self.branding.primary_color.clone()
    }

    /// These page-level values with the campaign's words.
    pub fn with_copy(mut self, written: copy::CampaignCopy) -> Self {
        self.written = written;
        self
    }

    /// What the page is called where the prospect sees it (the tab, a link preview): the
    /// copy's headline and introduction for this lead, never the campaign's internal name.
    pub(super) fn title_and_description(&self) -> (String, String) {
        let mut description: String = self.copy.intro.chars().take(160).collect();
        if description.len() < self.copy.intro.len() {
            description.push('\u{2026}');
        }
        (self.copy.headline.clone(), description)
    }

    /// These page-level values with a lead's variables (a lead's own variable of a page-level
    /// name is shadowed).
    pub(super) fn with_lead(&self, mut lead: BTreeMap<String, String>) -> Self {
        for name in RESERVED {
            lead.remove(name);
        }
        // The words may name the lead's values and the sender's company and name.
        let mut values = lead.clone();
        for (key, value) in [
            ("branding.company_name", &self.branding.company_name),
            ("sender.name", &self.sender.name),
        ] {
            if let Some(value) = value {
                values.insert(key.to_owned(), value.clone());
            }
        }
        let mut copy = self.written.for_lead(&values);
        copy.names_sender = self
            .sender
            .name
            .as_deref()
            .is_some_and(|sender| copy::names_sender(&copy.signoff, sender));
        Self {
            copy,
            lead,
            cta_url: self.cta_url.clone(),
            branding: self.branding.clone(),
            sender: self.sender.clone(),
            written: copy::CampaignCopy::default(),
        }
    }
}

/// `url` if it is an address a page may link to or load, else empty.
pub fn safe_url(url: &str) -> String {
    let url = url.trim();
    let lower = url.to_ascii_lowercase();
    let allowed = ["https://", "http://", "mailto:", "tel:"]
        .iter()
        .any(|scheme| lower.starts_with(scheme) && lower.len() > scheme.len());
    if allowed && !url.chars().any(char::is_control) {
        url.to_owned()
    } else {
        String::new()
    }
}

/// `color` if it is `#rgb`, `#rgba`, `#rrggbb` or `#rrggbbaa`, else empty.
pub fn safe_color(color: &str) -> String {
    let color = color.trim();
    let valid = color.strip_prefix('#').is_some_and(|hex| {
        [3, 4, 6, 8].contains(&hex.len()) && hex.bytes().all(|b| b.is_ascii_hexdigit())
    });
    if valid {
        color.to_owned()
    } else {
        String::new()
    }
}
