//! The link-preview card of a live lead page (`/p/{campaign}/{lead}/og.png`, drawn by
//! `render::preview_image`), which anyone with the page's address can ask for.
//!
//! A lead's card is drawn once per published version and lead, on the render pool, by one
//! request at a time (others asking for it meanwhile wait for that one), then kept. It has
//! [`CoreConfig::preview_card_deadline`](crate::app::CoreConfig) to be made; past that, or when
//! the pool stays busy, the campaign's card (the same card without the lead's values, drawn
//! once per published version) stands in, and when that is not ready within half the deadline
//! either, a plain card in the brand's colour. A stand-in is never a `503`: the edge answers it
//! with a short cache lifetime and an entity tag of its own, and the lead's card, still being
//! drawn, is kept for the next request.

use std::sync::{Arc, OnceLock};

use crate::domain::pages;
use crate::render::copy::CampaignCopy;
use crate::render::{self, PageContext, preview_image};
use crate::store::designs::{self, PageRow};
use crate::{App, Error, Result};

/// Published versions whose look (and campaign card) is kept in memory: each holds its logo
/// (at most 512 px a side) and its campaign card (20 to 80 KB) once drawn.
pub const LOOKS_KEPT: usize = 32;

/// Which card answered: the lead's own or a stand-in. Counted by its name
/// (`lps_preview_cards_drawn_total`, `lps_preview_cards_answered_total`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CardKind {
    /// The lead's card: their first name, company and the headline filled for them.
    Lead,
    /// The campaign's card: no lead's values ("For you", the headline's defaults).
    Campaign,
    /// The brand's colour alone.
    Plain,
}

impl CardKind {
    /// As counted and as the entity tag's suffix.
    pub fn name(self) -> &'static str {
        match self {
            Self::Lead => "lead",
            Self::Campaign => "campaign",
            Self::Plain => "plain",
        }
    }
}

/// A card as answered.
#[derive(Debug, Clone)]
pub struct PreviewCard {
    pub png: Arc<Vec<u8>>,
    /// The lead's card's changes with the published version and the lead; a stand-in's differs
    /// from it (and from the other stand-in's).
    pub etag: String,
    pub kind: CardKind,
    /// The workspace of the page it previews.
    pub workspace_id: i64,
}

/// What every card of one published version shares: kept per campaign and version
/// (`App::preview_looks`).
pub struct CampaignLook {
    brand_color: Option<String>,
    logo_png: Option<Vec<u8>>,
    from: Option<String>,
    context: PageContext,
    /// Whether the headline may be drawn: a copy published before its longest was checked
    /// ([`CampaignCopy::headline_fits_card`]) is not, and the campaign's card stands in.
    headline_fits: bool,
    /// The campaign's card, once drawn.
    campaign_card: tokio::sync::OnceCell<Arc<Vec<u8>>>,
    plain_card: OnceLock<Arc<Vec<u8>>>,
}

impl CampaignLook {
    fn card(&self, lead: Option<&PageRow>) -> preview_image::Card {
        let value = |value: Option<&String>| value.filter(|v| !v.trim().is_empty()).cloned();
        preview_image::Card {
            brand_color: self.brand_color.clone(),
            logo_png: self.logo_png.clone(),
            from: self.from.clone(),
            first_name: value(lead.and_then(|lead| lead.first_name.as_ref())),
            company: value(lead.and_then(|lead| lead.company_name.as_ref())),
            headline: self
                .context
                .headline_for(lead.map(pages::lead_values).unwrap_or_default()),
        }
    }
}

/// The card of a live lead page, or a stand-in made in time (see the module's header). `None`
/// for an address that is no live page.
pub async fn preview_card(
    app: &App,
    campaign_slug: &str,
    lead_slug: &str,
) -> Result<Option<PreviewCard>> {
    let Some(page) = designs::page(app.db.pool(), campaign_slug, lead_slug).await? else {
        return Ok(None);
    };
    if page.is_live == 0 {
        return Ok(None);
    }
    let digest = pages::etag(&page);
    let workspace_id = page.workspace_id;
    let answer = |png, kind: CardKind| {
        crate::metrics::preview_card_answered(kind.name());
        let suffix = match kind {
            CardKind::Lead => "og",
            CardKind::Campaign => "og-campaign",
            CardKind::Plain => "og-plain",
        };
        let etag = format!("\"{}-{suffix}\"", digest.trim_matches('"'));
        Ok(Some(PreviewCard {
            png,
            etag,
            kind,
            workspace_id,
        }))
    };
    let key = format!("\"{}-og\"", digest.trim_matches('"'));
    if let Some(png) = app.preview_images.get(&key) {
        return answer(png, CardKind::Lead);
    }
    let look = app
        .preview_looks
        .get_or_insert_async(&(page.campaign_id, page.live_version), async {
            load_look(app, &page).await
        })
        .await;
    let look = match look {
        Ok(look) => look,
        // Unpublished since the page was read.
        Err(Error::NotFound(_)) => return Ok(None),
        Err(err) => return Err(err),
    };

    let deadline = app.config.preview_card_deadline;
    if look.headline_fits {
        // Spawned, so that the card is still drawn and kept when this request stops waiting.
        let drawing = tokio::spawn(lead_card(app.clone(), page, key, look.clone()));
        match tokio::time::timeout(deadline, drawing).await {
            Ok(Ok(Some(png))) => return answer(png, CardKind::Lead),
            Ok(Ok(None)) | Err(_) => {}
            Ok(Err(failed)) => return Err(Error::Internal(failed.into())),
        }
    }
    if let Some(png) = look.campaign_card.get() {
        return answer(png.clone(), CardKind::Campaign);
    }
    let drawing = tokio::spawn(campaign_card(look.clone()));
    match tokio::time::timeout(deadline / 2, drawing).await {
        Ok(Ok(Some(png))) => return answer(png, CardKind::Campaign),
        Ok(Ok(None)) | Err(_) => {}
        Ok(Err(failed)) => return Err(Error::Internal(failed.into())),
    }
    let plain = look.plain_card.get_or_init(|| {
        crate::metrics::preview_card_drawn(CardKind::Plain.name());
        Arc::new(preview_image::plain(look.brand_color.as_deref()))
    });
    answer(plain.clone(), CardKind::Plain)
}

/// The lead's card: kept, drawn by another request (waited for), or drawn now and kept.
/// `None` when the render pool stayed busy.
async fn lead_card(
    app: App,
    page: PageRow,
    key: String,
    look: Arc<CampaignLook>,
) -> Option<Arc<Vec<u8>>> {
    let kept = app.preview_images.clone();
    let guard = match kept.get_value_or_guard_async(&key).await {
        Ok(png) => return Some(png),
        Err(guard) => guard,
    };
    let card = look.card(Some(&page));
    let png = Arc::new(
        render::pool::run(move || preview_image::render(&card))
            .await
            .ok()?,
    );
    crate::metrics::preview_card_drawn(CardKind::Lead.name());
    let _ = guard.insert(png.clone());
    Some(png)
}

/// The campaign's card, drawn once per published version. `None` when the render pool stayed
/// busy.
async fn campaign_card(look: Arc<CampaignLook>) -> Option<Arc<Vec<u8>>> {
    let drawn = look
        .campaign_card
        .get_or_try_init(|| async {
            let card = look.card(None);
            let png = render::pool::run(move || preview_image::render(&card)).await?;
            crate::metrics::preview_card_drawn(CardKind::Campaign.name());
            Ok::<_, render::pool::Busy>(Arc::new(png))
        })
        .await;
    drawn.ok().cloned()
}

/// The look of the page's published version; `NotFound` once it is no longer published.
async fn load_look(app: &App, page: &PageRow) -> Result<Arc<CampaignLook>> {
    let snapshot = designs::live_snapshot(app.db.pool(), page.campaign_id, page.live_version)
        .await?
        .ok_or(Error::NotFound("Page not found"))?;
    let from = snapshot.look.branding_company_name.clone();
    let (look, logo_key) = pages::first_party(app, snapshot.look).await?;
    let logo_png = match logo_key {
        Some(key) => crate::store::assets::by_key(app.db.pool(), &key)
            .await?
            .map(|asset| asset.body),
        None => None,
    };
    let copy = CampaignCopy::parse(&snapshot.copy);
    let headline_fits = copy.headline_fits_card();
    if !headline_fits {
        tracing::warn!(
            campaign_id = page.campaign_id,
            version = page.live_version,
            "a published headline could come to more than a link-preview card allows: \
             the campaign's card stands in for its leads' cards"
        );
    }
    let context = pages::page_level(look).with_copy(copy);
    Ok(Arc::new(CampaignLook {
        brand_color: context.brand_color(),
        logo_png,
        from,
        context,
        headline_fits,
        campaign_card: tokio::sync::OnceCell::new(),
        plain_card: OnceLock::new(),
    }))
}
