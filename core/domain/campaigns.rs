//! Campaigns and brandings.

use crate::auth::Principal;
use crate::domain::page_changes::{self, Changed};
use crate::domain::workspaces::{first_free_slug, slugify};
use crate::render::copy::CampaignCopy;
use crate::store::Db;
use crate::store::brandings::{self, BrandingRow};
use crate::store::campaigns::{self, CampaignRow, NewCampaign};
use crate::store::designs::{self, Affected};
use crate::store::retry_conflicts;
use crate::{App, Error, Result, time};

/// What every new campaign's `note` says.
pub const NO_DESIGN_NOTE: &str = "This campaign has no design yet, so its pages are blank. \
    Apply a template (POST /templates/apply) or generate one (POST /pages/generate), check it \
    with GET /pages/design, then publish it (POST /pages/publish).";

pub async fn list(db: &Db, principal: &Principal, workspace_id: i64) -> Result<Vec<CampaignRow>> {
    let workspace = principal.reach(db, workspace_id).await?;
    Ok(campaigns::list(db.pool(), workspace.id).await?)
}

/// A new campaign with no design, with a slug unique in its workspace.
pub async fn create(
    db: &Db,
    principal: &Principal,
    workspace_id: i64,
    name: &str,
    branding_id: Option<i64>,
    prompt: Option<&str>,
    cta_url: Option<&str>,
) -> Result<CampaignRow> {
    let workspace = principal.reach(db, workspace_id).await?;
    let branding = branding_of(db, workspace.id, branding_id).await?;
    let base = slugify(name);
    retry_conflicts(|| async {
        let mut tx = db.begin_write().await?;
        let taken = campaigns::slugs_like(&mut *tx, workspace.id, &base).await?;
        let slug = first_free_slug(&base, &taken);
        let campaign = NewCampaign {
            workspace_id: workspace.id,
            branding_id: branding.id,
            name,
            slug: &slug,
            prompt,
            cta_url,
        };
        let id = campaigns::insert(&mut *tx, &campaign, time::now()).await?;
        tx.commit().await?;
        Ok(CampaignRow {
            id,
            workspace_id: workspace.id,
            branding_id: branding.id,
            name: name.to_owned(),
            slug,
            cta_url: cta_url.map(str::to_owned),
            page_slug: None,
            domain_id: None,
        })
    })
    .await
}

/// Words drafted from the campaign's brief become its draft's, unless someone wrote some first.
pub async fn draft_copy(app: &App, campaign_id: i64, copy: &CampaignCopy) -> Result<()> {
    let mut tx = app.db.begin_write().await?;
    designs::set_copy_if_unwritten(&mut *tx, campaign_id, &copy.to_json(), time::now()).await?;
    tx.commit().await?;
    Ok(())
}

/// The workspace's branding `id`, or its default one.
async fn branding_of(db: &Db, workspace_id: i64, id: Option<i64>) -> Result<BrandingRow> {
    let available = brandings::list(db.pool(), workspace_id).await?;
    match id {
        Some(id) => available
            .into_iter()
            .find(|b| b.id == id)
            .ok_or(Error::NotFound("Branding not found")),
        None => available
            .into_iter()
            .next()
            .ok_or_else(|| Error::Internal(anyhow::anyhow!("workspace without branding"))),
    }
}

/// What changes of a campaign's settings: `cta_url` `Some(None)` removes the address; `copy`
/// changes the draft's words (each field given replaces it; see [`Copy::merged`]).
pub struct SettingsChange {
    pub cta_url: Option<Option<String>>,
    pub branding_id: Option<i64>,
    pub copy: Option<CampaignCopy>,
    /// Where the pages move (their old addresses redirect).
    pub page_slug: Option<String>,
    /// A new name (validated); the slug and the pages' addresses stay.
    pub name: Option<String>,
    /// The workspace domain its pages are handed out on; 0 none.
    pub domain_id: Option<i64>,
}

/// A public path segment: lower-case letters, digits and single hyphens, at most 60.
fn valid_page_slug(slug: &str) -> bool {
    (1..=60).contains(&slug.len())
        && slug.split('-').all(|part| {
            !part.is_empty()
                && part
                    .bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit())
        })
}

/// Changes where the campaign's call to action leads, or its branding.
pub async fn update_settings(
    app: &App,
    principal: &Principal,
    workspace_id: i64,
    campaign_id: i64,
    change: SettingsChange,
) -> Result<(CampaignRow, CampaignCopy)> {
    let db = &app.db;
    let mut campaign = in_workspace(db, principal, workspace_id, campaign_id).await?;
    let page_slug = match change.page_slug.as_deref().map(str::trim) {
        Some(slug) if slug == campaign.public_slug() => None,
        Some(slug) if !valid_page_slug(slug) => {
            return Err(Error::invalid(crate::error::FieldViolation::new(
                "page_slug",
                "The page slug field must be lower-case letters, digits and single hyphens (at most 60).",
            )));
        }
        Some(slug) => {
            if campaigns::public_slug_taken(db.pool(), campaign.workspace_id, campaign.id, slug)
                .await?
            {
                return Err(Error::Precondition(
                    "Another campaign of the workspace has its pages at this page slug; choose another.",
                ));
            }
            Some(slug.to_owned())
        }
        None => None,
    };
    if let Some(id) = change.branding_id {
        campaign.branding_id = branding_of(db, campaign.workspace_id, Some(id)).await?.id;
    }
    if let Some(cta_url) = change.cta_url {
        campaign.cta_url = cta_url;
    }
    if let Some(name) = change.name {
        campaign.name = name;
    }
    match change.domain_id {
        Some(0) => campaign.domain_id = None,
        Some(id) => {
            crate::store::domains::find(db.pool(), campaign.workspace_id, id)
                .await?
                .ok_or(Error::NotFound("Domain not found"))?;
            campaign.domain_id = Some(id);
        }
        None => {}
    }
    let mut tx = db.begin_write().await?;
    // The words are merged into the stored ones under the row's lock, so words drafted from
    // the brief in the background meanwhile are never written over with older ones.
    let stored = designs::draft_copy_for_update(&mut tx, db.dialect(), campaign.id)
        .await?
        .ok_or(Error::NotFound("Campaign not found"))?;
    let stored = CampaignCopy::parse(&stored);
    let copy = match change.copy {
        Some(change) => stored.clone().merged(change),
        None => stored.clone(),
    };
    let violations = copy.violations();
    if !violations.is_empty() {
        return Err(Error::Invalid(violations));
    }
    campaigns::update_settings(
        &mut *tx,
        campaign.id,
        &campaign.name,
        campaign.cta_url.as_deref(),
        campaign.branding_id,
        campaign.domain_id,
    )
    .await?;
    // The words are the draft's: visitors see them once published.
    if copy != stored {
        designs::set_copy(&mut *tx, campaign.id, &copy.to_json(), crate::time::now()).await?;
    }
    if let Some(slug) = page_slug {
        campaigns::move_pages(&mut tx, campaign.id, campaign.public_slug(), &slug).await?;
        campaign.page_slug = Some(slug);
    }
    // Pages show the change at once, in every process.
    designs::bump_versions(&mut *tx, Affected::Campaign(campaign.id)).await?;
    page_changes::commit(app, tx, Changed::Campaigns(vec![campaign.id])).await?;
    Ok((campaign, copy))
}

/// The campaign if it is in a workspace the principal reaches; otherwise "Campaign not found".
pub async fn reachable(db: &Db, principal: &Principal, campaign_id: i64) -> Result<CampaignRow> {
    let not_found = || Error::NotFound("Campaign not found");
    let campaign = campaigns::get(db.pool(), campaign_id)
        .await?
        .ok_or_else(not_found)?;
    principal
        .reach(db, campaign.workspace_id)
        .await
        .map_err(|err| err.unreachable_as(not_found()))?;
    Ok(campaign)
}

pub async fn brandings(
    db: &Db,
    principal: &Principal,
    workspace_id: i64,
) -> Result<Vec<BrandingRow>> {
    let workspace = principal.reach(db, workspace_id).await?;
    Ok(brandings::list(db.pool(), workspace.id).await?)
}

/// The campaign if it is in the given (reachable) workspace; otherwise "Campaign not found".
pub async fn in_workspace(
    db: &Db,
    principal: &Principal,
    workspace_id: i64,
    campaign_id: i64,
) -> Result<CampaignRow> {
    let workspace = principal.reach(db, workspace_id).await?;
    let campaign = reachable(db, principal, campaign_id).await?;
    if campaign.workspace_id != workspace.id {
        return Err(Error::NotFound("Campaign not found"));
    }
    Ok(campaign)
}
