//! Campaign designs (draft, publish, unpublish), templates, and visitors' pages.

use std::collections::BTreeMap;
use std::sync::Arc;

use sha2::{Digest, Sha256};

use crate::auth::Principal;
use crate::domain::campaigns::{self, NO_DESIGN_NOTE};
use crate::domain::lead::lead_variables;
use crate::domain::page_changes::{self, Changed, Reading};
use crate::render::copy::CampaignCopy;
use crate::render::{self, BrandingContext, Compiled, CompiledDesign, PageContext, SenderContext};
use crate::store::designs::{self, DesignRow, PageLook, PageRow, PreviewRow, TemplateRow};
use crate::store::{Db, leads, like_pattern};
use crate::time::Micros;
use crate::{App, Error, Result, time};

const NO_DESIGN_TO_PREVIEW: &str = "This campaign has no design yet. Apply a template \
    (POST /templates/apply) or generate one (POST /pages/generate) first, then preview it.";

const NO_DESIGN_TO_PUBLISH: &str = "This campaign has no design yet. Apply a template \
    (POST /templates/apply) or generate one (POST /pages/generate) first, then publish.";

/// A campaign's design as `GET /pages/design` shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DesignView {
    pub campaign_id: i64,
    pub has_design: bool,
    pub is_live: bool,
    pub has_unpublished_changes: bool,
    pub html: Option<String>,
    pub css: Option<String>,
    pub updated_at: Option<Micros>,
    pub note: Option<String>,
    /// The draft's words as written.
    pub copy: CampaignCopy,
}

impl DesignView {
    fn of(row: DesignRow) -> Self {
        let has_design = row.draft_html.is_some();
        let is_live = row.is_live != 0;
        let differs = row.draft_html != row.live_html
            || row.draft_css != row.live_css
            || CampaignCopy::parse(&row.draft_copy) != CampaignCopy::parse(&row.live_copy);
        let has_unpublished_changes = has_design && (!is_live || differs);
        let note = if !has_design {
            Some(NO_DESIGN_NOTE.to_owned())
        } else if !is_live {
            Some("Not published: visitors see the 'not live yet' page until you publish (POST /pages/publish).".to_owned())
        } else if has_unpublished_changes {
            Some("The draft has changes visitors do not see yet; publish (POST /pages/publish) to switch.".to_owned())
        } else {
            None
        };
        Self {
            campaign_id: row.campaign_id,
            has_design,
            is_live,
            has_unpublished_changes,
            html: row.draft_html,
            css: row.draft_css,
            updated_at: row.design_updated_at,
            note,
            copy: CampaignCopy::parse(&row.draft_copy),
        }
    }
}

async fn design_row(db: &Db, campaign_id: i64) -> Result<DesignRow> {
    designs::get(db.pool(), campaign_id)
        .await?
        .ok_or(Error::NotFound("Campaign not found"))
}

pub async fn design(
    db: &Db,
    principal: &Principal,
    workspace_id: i64,
    campaign_id: i64,
) -> Result<DesignView> {
    let campaign = campaigns::in_workspace(db, principal, workspace_id, campaign_id).await?;
    Ok(DesignView::of(design_row(db, campaign.id).await?))
}

/// Copies the draft over the published snapshot; returns when it was published.
pub async fn publish(
    app: &App,
    principal: &Principal,
    workspace_id: i64,
    campaign_id: i64,
) -> Result<Micros> {
    let db = &app.db;
    let campaign = campaigns::in_workspace(db, principal, workspace_id, campaign_id).await?;
    let row = design_row(db, campaign.id).await?;
    let (Some(html), css) = (&row.draft_html, &row.draft_css) else {
        return Err(Error::Precondition(NO_DESIGN_TO_PUBLISH));
    };
    render::checked(html, css.as_deref().unwrap_or_default()).await?;
    let now = time::now();
    let mut tx = db.begin_write().await?;
    designs::publish(&mut *tx, campaign.id, now).await?;
    page_changes::commit(app, tx, Changed::Campaigns(vec![campaign.id])).await?;
    Ok(now)
}

pub async fn unpublish(
    app: &App,
    principal: &Principal,
    workspace_id: i64,
    campaign_id: i64,
) -> Result<()> {
    let campaign = campaigns::in_workspace(&app.db, principal, workspace_id, campaign_id).await?;
    let mut tx = app.db.begin_write().await?;
    designs::unpublish(&mut *tx, campaign.id).await?;
    page_changes::commit(app, tx, Changed::Campaigns(vec![campaign.id])).await?;
    Ok(())
}

/// Replaces the campaign's draft with a design from outside, cleaned and compiled first.
pub async fn update_design(
    db: &Db,
    principal: &Principal,
    workspace_id: i64,
    campaign_id: i64,
    html: &str,
    css: &str,
) -> Result<DesignView> {
    let campaign = campaigns::in_workspace(db, principal, workspace_id, campaign_id).await?;
    let (html, css) = render::cleaned_and_checked(html.to_owned(), css.to_owned()).await?;
    designs::set_draft(db.pool(), campaign.id, &html, &css, time::now()).await?;
    Ok(DesignView::of(design_row(db, campaign.id).await?))
}

pub async fn templates(
    db: &Db,
    principal: &Principal,
    workspace_id: i64,
    search: Option<&str>,
) -> Result<Vec<TemplateRow>> {
    let workspace = principal.reach(db, workspace_id).await?;
    let pattern = search.map(like_pattern);
    Ok(designs::list_templates(db.pool(), workspace.id, pattern.as_deref()).await?)
}

/// Replaces the campaign's draft with the template's design; returns whether visitors see a
/// published design (which this does not change).
pub async fn apply_template(
    db: &Db,
    principal: &Principal,
    workspace_id: i64,
    campaign_id: i64,
    template_id: i64,
) -> Result<bool> {
    let campaign = campaigns::in_workspace(db, principal, workspace_id, campaign_id).await?;
    let template = designs::template_for(db.pool(), campaign.workspace_id, template_id)
        .await?
        .ok_or(Error::NotFound("Template not found"))?;
    render::checked(&template.html, &template.css).await?;
    designs::set_draft(
        db.pool(),
        campaign.id,
        &template.html,
        &template.css,
        time::now(),
    )
    .await?;
    Ok(design_row(db, campaign.id).await?.is_live != 0)
}

/// Saves the campaign's current draft as a template of its workspace.
pub async fn create_template(
    db: &Db,
    principal: &Principal,
    workspace_id: i64,
    campaign_id: i64,
    name: &str,
    description: Option<&str>,
) -> Result<TemplateRow> {
    let campaign = campaigns::in_workspace(db, principal, workspace_id, campaign_id).await?;
    let row = design_row(db, campaign.id).await?;
    let Some(html) = row.draft_html else {
        return Err(Error::Precondition(
            "This campaign has no design to save as a template. Apply a template or generate a design first.",
        ));
    };
    let css = row.draft_css.unwrap_or_default();
    let id = designs::insert_template(
        db.pool(),
        campaign.workspace_id,
        name,
        description,
        &html,
        &css,
        time::now(),
    )
    .await?;
    Ok(TemplateRow {
        id,
        workspace_id: Some(campaign.workspace_id),
        name: name.to_owned(),
        description: description.map(str::to_owned),
        html,
        css,
    })
}

/// What a visitor's address leads to.
pub enum Visit {
    Page {
        html: String,
        etag: String,
        of: PageOf,
    },
    NotLive {
        of: PageOf,
    },
    /// The page cannot be rendered within its budget (see `render::budget`): the visitor is
    /// told to come back, and the page is not rendered again until it changes.
    Unavailable {
        of: PageOf,
    },
    NotFound,
    /// The campaign's pages moved to another path segment (`page_slug`): where this one is
    /// now (a path).
    Moved {
        location: String,
    },
}

/// Which campaign and lead (0 for a preview's sample lead) a page shows, and when it was read:
/// what a cache of pages needs to know when it goes stale (see `page_changes`).
#[derive(Debug, Clone, Copy)]
pub struct PageOf {
    pub workspace_id: i64,
    pub campaign_id: i64,
    pub lead_id: i64,
    pub reading: Reading,
}

/// A campaign's preview: sample lead values (the page-level ones come with its version).
fn sample_lead(campaign: PreviewRow) -> PageRow {
    PageRow {
        campaign_id: campaign.campaign_id,
        workspace_id: campaign.workspace_id,
        is_live: campaign.is_live,
        live_version: campaign.live_version,
        lead_id: 0,
        first_name: Some("Alex".into()),
        email: Some("alex@example.com".into()),
        company_name: Some("Example Co".into()),
        company_domain: Some("example.com".into()),
        social_profile_url: None,
        custom_values: "{}".into(),
        lead_updated_at: 0,
    }
}

/// The page at `/p/{campaign_slug}/{lead_slug}`: the published design rendered with the lead's
/// values (or, at the preview address, sample values), compiled once per published version.
pub async fn render_page(app: &App, campaign_slug: &str, lead_slug: &str) -> Result<Visit> {
    crate::telemetry::traced(
        || tracing::info_span!("render page", otel.kind = "internal"),
        render(app, campaign_slug, lead_slug),
    )
    .await
}

async fn render(app: &App, campaign_slug: &str, lead_slug: &str) -> Result<Visit> {
    // Before any row is read (see `page_changes`).
    let reading = app.page_changes.reading();
    let preview_of = lead_slug
        .strip_prefix("preview-")
        .and_then(|id| id.parse::<i64>().ok());
    let found = match preview_of {
        Some(campaign_id) => designs::preview(app.db.pool(), campaign_slug, campaign_id)
            .await?
            .map(sample_lead),
        None => app.db.read_lane().page(campaign_slug, lead_slug).await?,
    };
    let Some(page) = found else {
        // A campaign whose pages moved: its old links lead to the new address.
        if preview_of.is_none()
            && let Some(now_at) =
                crate::store::campaigns::moved_to(app.db.pool(), campaign_slug, lead_slug).await?
        {
            return Ok(Visit::Moved {
                location: format!("/p/{now_at}/{lead_slug}"),
            });
        }
        return Ok(Visit::NotFound);
    };
    let of = PageOf {
        workspace_id: page.workspace_id,
        campaign_id: page.campaign_id,
        lead_id: page.lead_id,
        reading,
    };
    if page.is_live == 0 {
        return Ok(Visit::NotLive { of });
    }
    let etag = etag(&page);
    let unavailable = Visit::Unavailable {
        of: PageOf {
            reading: Reading {
                cacheable: false,
                ..reading
            },
            ..of
        },
    };
    if app.designs.failed(&etag) {
        return Ok(unavailable);
    }
    let design = match app.designs.get(page.campaign_id, page.live_version) {
        Some(Compiled::Ready(design)) => design,
        Some(Compiled::Refused) => return Ok(unavailable),
        None => {
            let Some(snapshot) =
                designs::live_snapshot(app.db.pool(), page.campaign_id, page.live_version).await?
            else {
                // Published again meanwhile: the next visit sees the new version.
                return Ok(Visit::NotLive {
                    of: PageOf {
                        reading: Reading {
                            cacheable: false,
                            ..reading
                        },
                        ..of
                    },
                });
            };
            let (look, _) = first_party(app, snapshot.look).await?;
            let look = page_level(look).with_copy(CampaignCopy::parse(&snapshot.copy));
            let compiled = render::pool::run(move || {
                CompiledDesign::compile(&snapshot.html, &snapshot.css)
                    .map(|design| Arc::new(design.with_page(look)))
            })
            .await?;
            match compiled {
                Ok(design) => {
                    app.designs.put(
                        page.campaign_id,
                        page.live_version,
                        Compiled::Ready(design.clone()),
                    );
                    design
                }
                Err(err) => {
                    // Published before the budget's audit (or compiled by an older lps).
                    app.designs
                        .put(page.campaign_id, page.live_version, Compiled::Refused);
                    app.designs
                        .note_failure(page.campaign_id, page.live_version, &err);
                    return Ok(unavailable);
                }
            }
        }
    };
    // Previews are the team's own visits: never tracked.
    let live_at = match preview_of {
        None => Some(crate::domain::domains::page_addresses(app).await?.page_url(
            page.workspace_id,
            campaign_slug,
            lead_slug,
        )),
        Some(_) => None,
    };
    let lead = lead_values(&page);
    let rendered = if design.renders_inline(&lead) {
        design.render(lead, live_at.as_deref())
    } else {
        let rendering = design.clone();
        render::pool::run(move || rendering.render(lead, live_at.as_deref())).await?
    };
    match rendered {
        Ok(html) => Ok(Visit::Page { html, etag, of }),
        Err(err) => {
            app.designs.fail(etag);
            app.designs
                .note_failure(page.campaign_id, page.live_version, &err);
            Ok(unavailable)
        }
    }
}

/// What a preview shows of a campaign.
#[derive(Debug, Clone, Copy)]
pub enum Shown {
    /// Its draft.
    Draft,
    /// One of the workspace's templates on it, before applying it.
    Template(i64),
    /// Its published page, to compare with the draft before publishing changes.
    Published,
}

const NOT_LIVE_TO_PREVIEW: &str = "The campaign is not live: there is no published page to show.";

/// What `shown` says of the campaign (its draft, a template on it, or its published page) rendered as one of the
/// workspace's leads would see it (sample values without a lead): never tracked, counted or kept.
pub async fn preview_draft(
    app: &App,
    principal: &Principal,
    workspace_id: i64,
    campaign_id: i64,
    lead_id: Option<i64>,
    shown: Shown,
) -> Result<String> {
    let campaign = campaigns::in_workspace(&app.db, principal, workspace_id, campaign_id).await?;
    let snapshot = match shown {
        Shown::Published => designs::published_snapshot(app.db.pool(), campaign.id)
            .await?
            .ok_or(Error::Precondition(NOT_LIVE_TO_PREVIEW))?,
        Shown::Draft | Shown::Template(_) => designs::draft_snapshot(app.db.pool(), campaign.id)
            .await?
            .ok_or(Error::NotFound("Campaign not found"))?,
    };
    let mut draft = snapshot;
    if let Shown::Template(template_id) = shown {
        let template = designs::template_for(app.db.pool(), campaign.workspace_id, template_id)
            .await?
            .ok_or(Error::NotFound("Template not found"))?;
        (draft.html, draft.css) = (template.html, template.css);
    }
    if draft.html.trim().is_empty() {
        return Err(Error::Precondition(NO_DESIGN_TO_PREVIEW));
    }
    let mut page = sample_lead(PreviewRow {
        campaign_id: campaign.id,
        workspace_id: campaign.workspace_id,
        is_live: 1,
        live_version: 0,
    });
    if let Some(lead_id) = lead_id {
        let lead = leads::get(app.db.pool(), lead_id)
            .await?
            .map(|row| row.lead)
            .filter(|lead| lead.workspace_id == campaign.workspace_id)
            .ok_or(Error::NotFound("Lead not found"))?;
        page.first_name = lead.first_name;
        page.email = lead.email;
        page.company_name = lead.company_name;
        page.company_domain = lead.company_domain;
        page.social_profile_url = lead.social_profile_url;
        page.custom_values = lead.custom_values;
    }
    let (values, look) = (
        lead_values(&page),
        page_level(first_party(app, draft.look).await?.0)
            .with_copy(CampaignCopy::parse(&draft.copy)),
    );
    render::pool::run(move || {
        CompiledDesign::compile(&draft.html, &draft.css)
            .and_then(|design| design.with_page(look).render(values, None))
    })
    .await?
    .map_err(|err| Error::Invalid(vec![render::design_violation(err)]))
}

/// The lead's variables, as the design sees them.
pub(super) fn lead_values(page: &PageRow) -> BTreeMap<String, String> {
    lead_variables(
        serde_json::from_str(&page.custom_values).unwrap_or_default(),
        [
            &page.first_name,
            &page.email,
            &page.company_name,
            &page.company_domain,
            &page.social_profile_url,
        ],
    )
}

/// The look with its images served by lps (`{public_url}/assets/{key}`), never from where
/// they came: an image not kept yet (or that could not be) is left out, and designs fall back
/// (the company's name, no photo). See `jobs::assets`.
/// Answers the logo's key too (the link-preview card draws it).
pub(super) async fn first_party(
    app: &App,
    mut look: PageLook,
) -> Result<(PageLook, Option<String>)> {
    let urls: Vec<&str> = [&look.logo_url, &look.sender_photo_url]
        .into_iter()
        .flatten()
        .map(String::as_str)
        .collect();
    let keys = crate::store::assets::keys_for(app.db.pool(), &urls).await?;
    let base = app.config.public_url.trim_end_matches('/');
    let served = |url: Option<String>| {
        url.and_then(|url| {
            keys.get(&url)
                .map(|key| format!("{base}{}/{key}", crate::wire::ASSETS_PATH))
        })
    };
    let logo_key = look
        .logo_url
        .as_ref()
        .and_then(|url| keys.get(url))
        .cloned();
    look.logo_url = served(look.logo_url.take());
    look.sender_photo_url = served(look.sender_photo_url.take());
    Ok((look, logo_key))
}

/// What a published version shows beyond the lead: the call to action and the branding.
pub(super) fn page_level(look: PageLook) -> PageContext {
    PageContext::new(
        look.cta_url.as_deref(),
        BrandingContext {
            name: look.branding_name,
            company_name: look.branding_company_name,
            logo_url: look.logo_url,
            primary_color: look.primary_color,
            website: look.website,
            ..Default::default()
        },
        SenderContext {
            name: look.sender_name,
            title: look.sender_title,
            photo_url: look.sender_photo_url,
        },
    )
}

/// Changes whenever the published version (the design, call to action or branding) or the lead
/// changes.
pub(super) fn etag(page: &PageRow) -> String {
    // The digest of `campaign_id:live_version:lead_id:lead_updated_at`, fed in pieces (a
    // first visit formatted that text only to hash it).
    let mut digest = Sha256::new();
    let mut digits = itoa::Buffer::new();
    for (n, part) in [
        page.campaign_id,
        page.live_version,
        page.lead_id,
        page.lead_updated_at,
    ]
    .into_iter()
    .enumerate()
    {
        if n > 0 {
            digest.update(b":");
        }
        digest.update(digits.format(part).as_bytes());
    }
    let digest = digest.finalize();
    // The first 20 hex digits, quoted: the first 10 bytes, the only ones encoded (into a
    // buffer: `hex::encode` collects a `String` one `char` at a time).
    let mut tag = [b'"'; 22];
    hex::encode_to_slice(&digest[..10], &mut tag[1..21]).expect("10 bytes are 20 hex digits");
    String::from_utf8_lossy(&tag).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_entity_tag_is_the_quoted_head_of_the_digest_of_the_four_numbers() {
        let page = PageRow {
            campaign_id: 12,
            workspace_id: 3,
            is_live: 1,
            live_version: 4,
            lead_id: 987_654,
            first_name: None,
            email: None,
            company_name: None,
            company_domain: None,
            social_profile_url: None,
            custom_values: "{}".into(),
            lead_updated_at: 1_764_000_000_123_456,
        };
        let digest = Sha256::digest(b"12:4:987654:1764000000123456");
        let expected = format!("\"{}\"", &hex::encode(digest)[..20]);
        assert_eq!(etag(&page), expected);
        assert_ne!(
            etag(&PageRow {
                live_version: 5,
                ..page.clone()
            }),
            expected
        );
    }
}
