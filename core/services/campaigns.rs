//! `lps.v1.CampaignsService`: campaigns and brandings.

use std::collections::HashMap;

use tonic::{Request, Response, Status};

use crate::App;
use crate::auth::Principal;
use crate::domain::brandings::{self, BrandingChange, LookChange};
use crate::domain::campaigns;
use crate::error::FieldViolation;
use crate::proto::{self, campaigns_service_server};
use crate::render::copy::CampaignCopy;
use crate::store::brandings::BrandingRow;
use crate::store::campaigns::CampaignRow;
use crate::validate::{Field, Validated, optional_text, optional_url, required, required_text};

pub struct CampaignsService {
    app: App,
}

impl CampaignsService {
    pub fn new(app: &App) -> Self {
        Self { app: app.clone() }
    }
}

#[tonic::async_trait]
impl campaigns_service_server::CampaignsService for CampaignsService {
    async fn list_campaigns(
        &self,
        request: Request<proto::ListCampaignsRequest>,
    ) -> Result<Response<proto::ListCampaignsResponse>, Status> {
        let principal = Principal::of(&request)?;
        let (workspace_id,) =
            (required("workspace_id", request.get_ref().workspace_id),).validated(&request)?;
        let rows = campaigns::list(&self.app.db, principal, workspace_id).await?;
        Ok(Response::new(proto::ListCampaignsResponse {
            campaigns: rows.into_iter().map(campaign).collect(),
        }))
    }

    async fn create_campaign(
        &self,
        request: Request<proto::CreateCampaignRequest>,
    ) -> Result<Response<proto::CreateCampaignResponse>, Status> {
        let principal = Principal::of(&request)?;
        let proto::CreateCampaignRequest {
            workspace_id,
            name,
            branding_id,
            prompt,
            cta_url,
        } = request.get_ref().clone();
        let (workspace_id, name, prompt, cta_url) = (
            required("workspace_id", workspace_id),
            required_text("name", name, 255),
            optional_text("prompt", prompt, 20_000),
            cta_url_field(cta_url),
        )
            .validated(&request)?;
        let created = campaigns::create(
            &self.app.db,
            principal,
            workspace_id,
            &name,
            branding_id,
            prompt.as_deref(),
            cta_url.as_deref(),
        )
        .await?;
        // With a model, the brief drafts the campaign's words in the background (the answer
        // does not wait for a model); nothing is written over words someone wrote meanwhile.
        if let Some(prompt) = prompt.filter(|_| self.app.generator.has_model()) {
            let (app, campaign_id) = (self.app.clone(), created.id);
            tokio::spawn(async move {
                if let Some(copy) = app.generator.copy(&prompt).await
                    && let Err(err) = campaigns::draft_copy(&app, campaign_id, &copy).await
                {
                    tracing::warn!(error = %err, "a campaign's drafted words could not be kept");
                }
            });
        }
        Ok(Response::new(proto::CreateCampaignResponse {
            campaign_id: created.id,
            name: created.name,
            slug: created.slug,
            note: campaigns::NO_DESIGN_NOTE.to_owned(),
        }))
    }

    async fn update_campaign(
        &self,
        request: Request<proto::UpdateCampaignRequest>,
    ) -> Result<Response<proto::CampaignSettings>, Status> {
        let principal = Principal::of(&request)?;
        let proto::UpdateCampaignRequest {
            workspace_id,
            campaign_id,
            cta_url,
            branding_id,
            copy,
            page_slug,
            name,
            domain_id,
        } = request.get_ref().clone();
        let clears = cta_url.as_deref().is_some_and(|url| url.trim().is_empty());
        // A blank name leaves the name as it is, as `/brandings/update` does with its own.
        let renames = name.as_deref().is_some_and(|name| !name.trim().is_empty());
        let (workspace_id, campaign_id, new_cta_url, name) = (
            required("workspace_id", workspace_id),
            required("campaign_id", campaign_id),
            cta_url_field(cta_url),
            if renames {
                required_text("name", name, 255).map(Some)
            } else {
                Ok(None)
            },
        )
            .validated(&request)?;
        let change = campaigns::SettingsChange {
            cta_url: if clears {
                Some(None)
            } else {
                new_cta_url.map(Some)
            },
            branding_id,
            copy: copy.map(copy_change),
            page_slug,
            name,
            domain_id,
        };
        let (campaign, copy) =
            campaigns::update_settings(&self.app, principal, workspace_id, campaign_id, change)
                .await?;
        Ok(Response::new(proto::CampaignSettings {
            page_slug: campaign.public_slug().to_owned(),
            campaign_id: campaign.id,
            name: campaign.name,
            slug: campaign.slug,
            branding_id: campaign.branding_id,
            cta_url: campaign.cta_url,
            copy: Some(copy_message(copy)),
            domain_id: campaign.domain_id,
        }))
    }

    async fn list_brandings(
        &self,
        request: Request<proto::ListBrandingsRequest>,
    ) -> Result<Response<proto::ListBrandingsResponse>, Status> {
        let principal = Principal::of(&request)?;
        let (workspace_id,) =
            (required("workspace_id", request.get_ref().workspace_id),).validated(&request)?;
        let rows = campaigns::brandings(&self.app.db, principal, workspace_id).await?;
        let failures =
            brandings::image_failures(&self.app.db, &rows.iter().collect::<Vec<_>>()).await?;
        Ok(Response::new(proto::ListBrandingsResponse {
            brandings: rows
                .into_iter()
                .map(|row| branding(row, &failures))
                .collect(),
        }))
    }

    async fn create_branding(
        &self,
        request: Request<proto::CreateBrandingRequest>,
    ) -> Result<Response<proto::Branding>, Status> {
        let principal = Principal::of(&request)?;
        let proto::CreateBrandingRequest {
            workspace_id,
            name,
            is_default,
            look,
        } = request.get_ref().clone();
        let (workspace_id, name) = (
            required("workspace_id", workspace_id),
            required_text("name", name, 255),
        )
            .validated(&request)?;
        let row = brandings::create(
            &self.app.db,
            principal,
            workspace_id,
            &name,
            is_default.unwrap_or(false),
            look_change(look),
        )
        .await?;
        self.with_images(row).await
    }

    async fn update_branding(
        &self,
        request: Request<proto::UpdateBrandingRequest>,
    ) -> Result<Response<proto::Branding>, Status> {
        let principal = Principal::of(&request)?;
        let proto::UpdateBrandingRequest {
            workspace_id,
            branding_id,
            name,
            is_default,
            look,
        } = request.get_ref().clone();
        let (workspace_id, branding_id) = (
            required("workspace_id", workspace_id),
            required("branding_id", branding_id),
        )
            .validated(&request)?;
        let change = BrandingChange {
            name,
            make_default: is_default.unwrap_or(false),
            look: look_change(look),
        };
        let row =
            brandings::update(&self.app.db, principal, workspace_id, branding_id, change).await?;
        self.with_images(row).await
    }
}

impl CampaignsService {
    /// A branding just stored, answered once its images not kept yet were fetched (saving is
    /// how a person tries again), saying why one could not be.
    async fn with_images(&self, row: BrandingRow) -> Result<Response<proto::Branding>, Status> {
        let urls: Vec<&str> = brandings::image_urls(&row).collect();
        crate::jobs::assets::fetch_now(&self.app, &urls).await?;
        let failures = brandings::image_failures(&self.app.db, &[&row]).await?;
        Ok(Response::new(branding(row, &failures)))
    }
}

fn look_change(look: Option<proto::BrandingFields>) -> LookChange {
    let look = look.unwrap_or_default();
    LookChange {
        company_name: look.company_name,
        logo_url: look.logo_url,
        primary_color: look.primary_color,
        website: look.website,
        sender_name: look.sender_name,
        sender_title: look.sender_title,
        sender_photo_url: look.sender_photo_url,
    }
}

/// A branding as answered, with why each of its images could not be kept (`failures`, by
/// address).
fn branding(row: BrandingRow, failures: &HashMap<String, String>) -> proto::Branding {
    let failure = |url: &Option<String>| url.as_ref().and_then(|url| failures.get(url)).cloned();
    proto::Branding {
        logo_error: failure(&row.look.logo_url),
        sender_photo_error: failure(&row.look.sender_photo_url),
        branding_id: row.id,
        name: row.name,
        is_default: row.is_default != 0,
        company_name: row.look.company_name,
        logo_url: row.look.logo_url,
        primary_color: row.look.primary_color,
        website: row.look.website,
        sender_name: row.look.sender_name,
        sender_title: row.look.sender_title,
        sender_photo_url: row.look.sender_photo_url,
    }
}

fn campaign(row: CampaignRow) -> proto::Campaign {
    proto::Campaign {
        id: row.id,
        name: row.name,
        slug: row.slug,
        cta_url: row.cta_url,
        branding_id: row.branding_id,
        domain_id: row.domain_id,
    }
}

/// A call-to-action address: http(s), at most 2,048 characters.
fn cta_url_field(value: Option<String>) -> Field<Option<String>> {
    let url = optional_url("cta_url", value)?;
    match url {
        Some(url) if url.len() > 2048 => Err(FieldViolation::new(
            "cta_url",
            "The cta url field must not be greater than 2048 characters.",
        )),
        url => Ok(url),
    }
}

/// The words asked for: each field given replaces it.
fn copy_change(copy: proto::CampaignCopy) -> CampaignCopy {
    CampaignCopy {
        headline: copy.headline,
        intro: copy.intro,
        points: copy.points.map(|p| p.items),
        cta_label: copy.cta_label,
        signoff: copy.signoff,
        event_when: copy.event_when,
        event_where: copy.event_where,
    }
}

/// The words as written.
pub(super) fn copy_message(copy: CampaignCopy) -> proto::CampaignCopy {
    proto::CampaignCopy {
        headline: copy.headline,
        intro: copy.intro,
        points: copy.points.map(|items| proto::CopyPoints { items }),
        cta_label: copy.cta_label,
        signoff: copy.signoff,
        event_when: copy.event_when,
        event_where: copy.event_where,
    }
}
