//! Audiences: the built-in Default Audience (id 0: every lead in no audience of its own) and
//! the workspace's own segments, their members and campaign links.

use crate::auth::Principal;
use crate::domain::campaigns;
use crate::error::FieldViolation;
use crate::store::audiences::{self, AudienceRow};
use crate::store::{Db, WorkspaceTable, ids_in_workspace};
use crate::{Error, Result, time};

pub const DEFAULT_AUDIENCE_NAME: &str = "Default Audience";
const DEFAULT_AUDIENCE_DESCRIPTION: &str = "Every lead that is in no audience of its own.";

/// Audience 0 first, with its live size, then the workspace's audiences, oldest first.
pub async fn list(db: &Db, principal: &Principal, workspace_id: i64) -> Result<Vec<AudienceRow>> {
    let workspace = principal.reach(db, workspace_id).await?;
    let default = AudienceRow {
        id: 0,
        workspace_id: workspace.id,
        name: DEFAULT_AUDIENCE_NAME.to_owned(),
        description: Some(DEFAULT_AUDIENCE_DESCRIPTION.to_owned()),
        color: None,
        lead_count: audiences::count_unassigned(db.pool(), workspace.id).await?,
        created_at: workspace.created_at,
        updated_at: workspace.created_at,
    };
    let mut all = vec![default];
    all.extend(audiences::list(db.pool(), workspace.id).await?);
    Ok(all)
}

/// `#rgb` or `#rrggbb` (the `#` may be left out); returned with its `#`, in lower case.
pub fn hex_color(value: &str) -> std::result::Result<String, FieldViolation> {
    let digits = value.trim().trim_start_matches('#');
    if matches!(digits.len(), 3 | 6) && digits.chars().all(|c| c.is_ascii_hexdigit()) {
        Ok(format!("#{}", digits.to_ascii_lowercase()))
    } else {
        Err(FieldViolation::new(
            "color",
            "The color field must be a hex colour such as #1a2b3c.",
        ))
    }
}

/// A new audience holding those of `lead_ids` that are leads of the workspace.
pub async fn create(
    db: &Db,
    principal: &Principal,
    workspace_id: i64,
    name: &str,
    description: Option<&str>,
    color: Option<&str>,
    lead_ids: &[i64],
) -> Result<AudienceRow> {
    let workspace = principal.reach(db, workspace_id).await?;
    let members =
        ids_in_workspace(db.pool(), WorkspaceTable::Leads, workspace.id, lead_ids).await?;
    let now = time::now();
    let mut tx = db.begin_write().await?;
    let id = audiences::insert(&mut *tx, workspace.id, name, description, color, now).await?;
    audiences::add_members(&mut tx, id, &members).await?;
    tx.commit().await?;
    own(db, workspace.id, id).await
}

/// One of the workspace's own audiences (never 0).
async fn own(db: &Db, workspace_id: i64, audience_id: i64) -> Result<AudienceRow> {
    audiences::get(db.pool(), workspace_id, audience_id)
        .await?
        .ok_or(Error::NotFound("Audience not found"))
}

fn refuse_default(audience_id: i64, what: &str) -> Result<()> {
    if audience_id == 0 {
        return Err(Error::invalid(FieldViolation::new(
            "audience_id",
            format!(
                "The Default Audience (0) is every lead in no audience of its own; it cannot be \
                 {what}. Use an audience of your own."
            ),
        )));
    }
    Ok(())
}

/// What adding leads did.
pub struct Added {
    pub added: i64,
    pub skipped: i64,
    pub lead_count: i64,
}

/// Adds the workspace's leads among `lead_ids`; the rest (unknown, foreign or already members)
/// are counted as skipped. New members get pages in the audience's linked campaigns.
pub async fn add_leads(
    db: &Db,
    principal: &Principal,
    workspace_id: i64,
    audience_id: i64,
    lead_ids: &[i64],
) -> Result<Added> {
    refuse_default(audience_id, "changed directly")?;
    let workspace = principal.reach(db, workspace_id).await?;
    let audience = own(db, workspace.id, audience_id).await?;
    let mut requested = lead_ids.to_vec();
    requested.sort_unstable();
    requested.dedup();
    let members =
        ids_in_workspace(db.pool(), WorkspaceTable::Leads, workspace.id, &requested).await?;
    let now = time::now();
    let mut tx = db.begin_write().await?;
    let added = audiences::add_members(&mut tx, audience.id, &members).await? as i64;
    let pairs: Vec<(i64, i64)> = audiences::linked_campaigns(&mut *tx, audience.id)
        .await?
        .into_iter()
        .flat_map(|campaign| members.iter().map(move |lead| (campaign, *lead)))
        .collect();
    crate::store::campaigns::attach_leads(&mut tx, &pairs, now).await?;
    audiences::touch(&mut *tx, audience.id, now).await?;
    tx.commit().await?;
    Ok(Added {
        added,
        skipped: lead_ids.len() as i64 - added,
        lead_count: audiences::count_members(db.pool(), audience.id).await?,
    })
}

/// Removes leads from the audience (the leads stay); returns (removed, lead_count).
pub async fn remove_leads(
    db: &Db,
    principal: &Principal,
    workspace_id: i64,
    audience_id: i64,
    lead_ids: &[i64],
) -> Result<(i64, i64)> {
    refuse_default(audience_id, "changed directly")?;
    let workspace = principal.reach(db, workspace_id).await?;
    let audience = own(db, workspace.id, audience_id).await?;
    let mut tx = db.begin_write().await?;
    let removed = audiences::remove_members(&mut tx, audience.id, lead_ids).await? as i64;
    audiences::touch(&mut *tx, audience.id, time::now()).await?;
    tx.commit().await?;
    Ok((
        removed,
        audiences::count_members(db.pool(), audience.id).await?,
    ))
}

/// Links the audience to a campaign: every member, now and later, gets a page there.
/// Returns how many members the audience has.
pub async fn link(
    db: &Db,
    principal: &Principal,
    workspace_id: i64,
    audience_id: i64,
    campaign_id: i64,
) -> Result<i64> {
    refuse_default(audience_id, "linked")?;
    let (audience, campaign) =
        audience_and_campaign(db, principal, workspace_id, audience_id, campaign_id).await?;
    let mut tx = db.begin_write().await?;
    audiences::link(&mut *tx, audience.id, campaign.id).await?;
    crate::store::campaigns::attach_audience(&mut *tx, campaign.id, audience.id, time::now())
        .await?;
    tx.commit().await?;
    Ok(audience.lead_count)
}

/// Removes the link only; pages already made stay.
pub async fn unlink(
    db: &Db,
    principal: &Principal,
    workspace_id: i64,
    audience_id: i64,
    campaign_id: i64,
) -> Result<()> {
    refuse_default(audience_id, "linked")?;
    let (audience, campaign) =
        audience_and_campaign(db, principal, workspace_id, audience_id, campaign_id).await?;
    audiences::unlink(db.pool(), audience.id, campaign.id).await?;
    Ok(())
}

async fn audience_and_campaign(
    db: &Db,
    principal: &Principal,
    workspace_id: i64,
    audience_id: i64,
    campaign_id: i64,
) -> Result<(AudienceRow, crate::store::campaigns::CampaignRow)> {
    let campaign = campaigns::in_workspace(db, principal, workspace_id, campaign_id).await?;
    let audience = own(db, campaign.workspace_id, audience_id).await?;
    Ok((audience, campaign))
}

/// Deletes the segment; its leads stay in the workspace. Returns how many it held.
pub async fn delete(
    db: &Db,
    principal: &Principal,
    workspace_id: i64,
    audience_id: i64,
) -> Result<i64> {
    refuse_default(audience_id, "deleted")?;
    let workspace = principal.reach(db, workspace_id).await?;
    let audience = own(db, workspace.id, audience_id).await?;
    audiences::delete(db.pool(), audience.id).await?;
    Ok(audience.lead_count)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn colours_are_hex_with_a_hash() {
        assert_eq!(hex_color("#1A2b3C").unwrap(), "#1a2b3c");
        assert_eq!(hex_color("fff").unwrap(), "#fff");
        for bad in ["red", "#12345", "#ggg", "", "#1234567"] {
            assert!(hex_color(bad).is_err(), "{bad}");
        }
    }
}
