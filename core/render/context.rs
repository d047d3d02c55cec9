//! What a design can use: the lead's variables, where the call to action leads, the sender's
//! look and the campaign's words, with addresses and colours that may go into attributes made
//! safe.

use std::collections::BTreeMap;
use std::sync::{Arc, OnceLock};

use minijinja::value::{Enumerator, Object, Serde, Value};
use serde::Serialize;

use super::{contrast, copy};

/// What a design can use: the lead's variables (`{{ first_name }}`, custom keys), where the
/// call to action leads (`{{ cta_url }}`), and the sender's look (`{{ branding.logo_url }}`,
/// `{{ sender.name }}`, ...). Everything is text; what is not set is undefined, so
/// `{% if branding.logo_url %}` and `| default(...)` give graceful fallbacks. The page-level
/// values, set once per published version; each render adds a lead's ([`Self::for_lead`]).
#[derive(Debug, Clone, Default)]
pub struct PageContext {
    cta_url: Option<String>,
    branding: BrandingContext,
    sender: SenderContext,
    /// The campaign's words, filled in per lead (`{{ copy.headline }}`, ...).
    written: copy::PreparedCopy,
    /// The page-level values as a design reads them, made at the first render: they do not
    /// change once made ([`Self::new`]), and every lead's page reads the same.
    values: OnceLock<Arc<PageValues>>,
}

/// The page-level values of a [`PageContext`] as minijinja values (each shared by every
/// render, not converted again for each).
#[derive(Debug)]
struct PageValues {
    cta_url: Option<Value>,
    branding: Value,
    sender: Value,
}

/// What a design reads for one lead: a name is looked up as the design asks for it (and only
/// then made a value), the page-level names first, so a lead's own variable of such a name
/// is shadowed.
#[derive(Debug)]
struct LeadScope {
    lead: BTreeMap<String, String>,
    copy: Value,
    page: Arc<PageValues>,
}

impl Object for LeadScope {
    fn get_value(self: &Arc<Self>, key: &Value) -> Option<Value> {
        match key.as_str()? {
            "cta_url" => self.page.cta_url.clone(),
            "branding" => Some(self.page.branding.clone()),
            "sender" => Some(self.page.sender.clone()),
            "copy" => Some(self.copy.clone()),
            name => self.lead.get(name).map(|value| Value::from(value.as_str())),
        }
    }

    fn enumerate(self: &Arc<Self>) -> Enumerator {
        let page = ["branding", "sender", "copy"]
            .into_iter()
            .chain(self.page.cta_url.as_ref().map(|_| "cta_url"));
        let lead = self
            .lead
            .keys()
            .map(String::as_str)
            .filter(|name| !RESERVED.contains(name));
        Enumerator::Values(lead.chain(page).map(Value::from).collect())
    }
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
    /// The page-level values of a published version (no lead yet: see [`Self::for_lead`]).
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
            cta_url: url(cta_url.map(str::to_owned)),
            branding,
            sender,
            written: copy::PreparedCopy::default(),
            values: OnceLock::new(),
        }
    }

    /// The copy's headline for a lead (the last line of the link-preview card).
    pub fn headline_for(&self, lead: BTreeMap<String, String>) -> String {
        self.copy_for(&lead).headline
    }

    /// The brand colour as pages show it (`#rrggbb`), if any.
    pub fn brand_color(&self) -> Option<String> {
        self.branding.primary_color.clone()
    }

    /// These page-level values with the campaign's words.
    pub fn with_copy(mut self, written: copy::CampaignCopy) -> Self {
        self.written = written.prepared();
        self
    }

    /// What a design reads for `lead` (the page-level values and the lead's variables, a
    /// lead's own variable of a page-level name shadowed), and the campaign's words filled in
    /// for them.
    pub(super) fn for_lead(&self, lead: BTreeMap<String, String>) -> (Value, copy::CopyContext) {
        let copy = self.copy_for(&lead);
        let page = self.values.get_or_init(|| {
            Arc::new(PageValues {
                cta_url: self.cta_url.as_deref().map(Value::from),
                branding: Value::from(Serde(&self.branding)),
                sender: Value::from(Serde(&self.sender)),
            })
        });
        let scope = LeadScope {
            copy: Value::from(Serde(&copy)),
            lead,
            page: page.clone(),
        };
        (Value::from_object(scope), copy)
    }

    /// The campaign's words for `lead`: they may name the lead's values and the sender's
    /// company and name.
    fn copy_for(&self, lead: &BTreeMap<String, String>) -> copy::CopyContext {
        let value = |name: &str| -> Option<&str> {
            let page_level = match name {
                "branding.company_name" => self.branding.company_name.as_deref(),
                "sender.name" => self.sender.name.as_deref(),
                _ => None,
            };
            page_level.or_else(|| {
                (!RESERVED.contains(&name))
                    .then(|| lead.get(name).map(String::as_str))
                    .flatten()
            })
        };
        let mut copy = self.written.for_lead(value);
        copy.names_sender = self
            .sender
            .name
            .as_deref()
            .is_some_and(|sender| copy::names_sender(&copy.signoff, sender));
        copy
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
