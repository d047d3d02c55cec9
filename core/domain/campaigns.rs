//! Campaigns and brandings.

use crate::auth::Principal;
use crate::domain::page_changes::{self, Changed};
use crate::domain::workspaces::{first_free_slug, slugify};
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
        })
    })
    .await
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

/// What changes of a campaign's settings: `cta_url` `Some(None)` removes the address.
pub struct SettingsChange {
    pub cta_url: Option<Option<String>>,
    pub branding_id: Option<i64>,
}

/// Changes where the campaign's call to action leads, or its branding.
pub async fn update_settings(
    app: &App,
    principal: &Principal,
    workspace_id: i64,
    campaign_id: i64,
    change: SettingsChange,
) -> Result<CampaignRow> {
    let db = &app.db;
    let mut campaign = in_workspace(db, principal, workspace_id, campaign_id).await?;
    if let Some(id) = change.branding_id {
        campaign.branding_id = branding_of(db, campaign.workspace_id, Some(id)).await?.id;
    }
    if let Some(cta_url) = change.cta_url {
        campaign.cta_url = cta_url;
    }
    let mut tx = db.begin_write().await?;
    campaigns::update_settings(
        &mut *tx,
        campaign.id,
        campaign.cta_url.as_deref(),
        campaign.branding_id,
    )
    .await?;
    // Pages show the change at once, in every process.
    designs::bump_versions(&mut *tx, Affected::Campaign(campaign.id)).await?;
    page_changes::commit(app, tx, Changed::Campaigns(vec![campaign.id])).await?;
    Ok(campaign)
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
