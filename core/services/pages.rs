//! `lps.v1.PagesService`: designs, publishing and templates.

use tonic::{Request, Response, Status};

use super::{WatchStream, watch_until_ended};
use crate::App;
use crate::auth::Principal;
use crate::domain::design_runs::{self, MAX_PROMPT_CHARS};
use crate::domain::pages::{self, DesignView};
use crate::proto::{self, design_run::State, pages_service_server};
use crate::store::design_runs::RunRow;
use crate::store::designs::TemplateRow;
use crate::time;
use crate::validate::{
    Earlier, EarlierViolations, Validated, document, optional_text, required, required_text,
};

pub struct PagesService {
    app: App,
}

impl PagesService {
    pub fn new(app: &App) -> Self {
        Self { app: app.clone() }
    }
}

fn campaign_fields(
    workspace_id: Option<i64>,
    campaign_id: Option<i64>,
    earlier: &impl Earlier,
) -> Result<(i64, i64), Status> {
    Ok((
        required("workspace_id", workspace_id),
        required("campaign_id", campaign_id),
    )
        .validated(earlier)?)
}

fn run_fields(request: &Request<proto::DesignRunRequest>) -> Result<(i64, String), Status> {
    let message = request.get_ref();
    Ok((
        required("workspace_id", message.workspace_id),
        required_text("run_id", message.run_id.clone(), 64),
    )
        .validated(request)?)
}

#[tonic::async_trait]
impl pages_service_server::PagesService for PagesService {
    async fn generate_design(
        &self,
        request: Request<proto::GenerateDesignRequest>,
    ) -> Result<Response<proto::DesignRun>, Status> {
        let principal = Principal::of(&request)?;
        let proto::GenerateDesignRequest {
            workspace_id,
            campaign_id,
            prompt,
            replace,
        } = request.get_ref().clone();
        let (workspace_id, campaign_id, prompt) = (
            required("workspace_id", workspace_id),
            required("campaign_id", campaign_id),
            document("prompt", prompt, MAX_PROMPT_CHARS, true),
        )
            .validated(&request)?;
        let run = design_runs::start(
            &self.app,
            principal,
            workspace_id,
            campaign_id,
            prompt.trim(),
            replace.unwrap_or(false),
        )
        .await?;
        Ok(Response::new(design_run(run)))
    }

    async fn get_design_run(
        &self,
        request: Request<proto::DesignRunRequest>,
    ) -> Result<Response<proto::DesignRun>, Status> {
        let principal = Principal::of(&request)?;
        let (workspace_id, run_id) = run_fields(&request)?;
        let run = design_runs::get(&self.app, principal, workspace_id, &run_id).await?;
        Ok(Response::new(design_run(run)))
    }

    async fn cancel_design_run(
        &self,
        request: Request<proto::DesignRunRequest>,
    ) -> Result<Response<proto::DesignRun>, Status> {
        let principal = Principal::of(&request)?;
        let (workspace_id, run_id) = run_fields(&request)?;
        let run = design_runs::cancel(&self.app, principal, workspace_id, &run_id).await?;
        Ok(Response::new(design_run(run)))
    }

    type WatchDesignRunStream = WatchStream<proto::DesignRun>;

    async fn watch_design_run(
        &self,
        request: Request<proto::DesignRunRequest>,
    ) -> Result<Response<Self::WatchDesignRunStream>, Status> {
        let principal = Principal::of(&request)?.clone();
        let (workspace_id, run_id) = run_fields(&request)?;
        let app = self.app.clone();
        let events = app.events.subscribe();
        let first = design_run(design_runs::get(&app, &principal, workspace_id, &run_id).await?);
        let id = run_id.clone();
        let read = move || {
            let (app, principal, run_id) = (app.clone(), principal.clone(), id.clone());
            async move {
                let run = design_runs::get(&app, &principal, workspace_id, &run_id).await?;
                Ok(design_run(run))
            }
        };
        Ok(Response::new(watch_until_ended(
            events,
            run_id,
            first,
            read,
            |run| !matches!(run.status(), State::Queued | State::Running),
        )))
    }

    async fn get_design(
        &self,
        request: Request<proto::GetDesignRequest>,
    ) -> Result<Response<proto::Design>, Status> {
        let principal = Principal::of(&request)?;
        let earlier = EarlierViolations::of(&request);
        let proto::GetDesignRequest {
            workspace_id,
            campaign_id,
        } = *request.get_ref();
        let (workspace_id, campaign_id) = campaign_fields(workspace_id, campaign_id, &earlier)?;
        let view = pages::design(&self.app.db, principal, workspace_id, campaign_id).await?;
        Ok(Response::new(design(view)))
    }

    async fn update_design(
        &self,
        request: Request<proto::UpdateDesignRequest>,
    ) -> Result<Response<proto::Design>, Status> {
        let principal = Principal::of(&request)?;
        let proto::UpdateDesignRequest {
            workspace_id,
            campaign_id,
            html,
            css,
        } = request.get_ref().clone();
        let (workspace_id, campaign_id, html, css) = (
            required("workspace_id", workspace_id),
            required("campaign_id", campaign_id),
            document("html", html, 500_000, true),
            document("css", css, 200_000, false),
        )
            .validated(&request)?;
        let view = pages::update_design(
            &self.app.db,
            principal,
            workspace_id,
            campaign_id,
            &html,
            &css,
        )
        .await?;
        Ok(Response::new(design(view)))
    }

    async fn publish(
        &self,
        request: Request<proto::CampaignDesignRequest>,
    ) -> Result<Response<proto::PublishResponse>, Status> {
        let principal = Principal::of(&request)?;
        let earlier = EarlierViolations::of(&request);
        let proto::CampaignDesignRequest {
            workspace_id,
            campaign_id,
        } = *request.get_ref();
        let (workspace_id, campaign_id) = campaign_fields(workspace_id, campaign_id, &earlier)?;
        let at = pages::publish(&self.app, principal, workspace_id, campaign_id).await?;
        Ok(Response::new(proto::PublishResponse {
            campaign_id,
            is_live: true,
            published_at: Some(time::to_proto(at)),
            message: "Design published. Every page of the campaign shows it now.".into(),
        }))
    }

    async fn unpublish(
        &self,
        request: Request<proto::CampaignDesignRequest>,
    ) -> Result<Response<proto::PublishResponse>, Status> {
        let principal = Principal::of(&request)?;
        let earlier = EarlierViolations::of(&request);
        let proto::CampaignDesignRequest {
            workspace_id,
            campaign_id,
        } = *request.get_ref();
        let (workspace_id, campaign_id) = campaign_fields(workspace_id, campaign_id, &earlier)?;
        pages::unpublish(&self.app, principal, workspace_id, campaign_id).await?;
        Ok(Response::new(proto::PublishResponse {
            campaign_id,
            is_live: false,
            published_at: None,
            message: "Design unpublished. Pages show the 'not live yet' page; the draft is kept."
                .into(),
        }))
    }

    async fn list_templates(
        &self,
        request: Request<proto::ListTemplatesRequest>,
    ) -> Result<Response<proto::ListTemplatesResponse>, Status> {
        let principal = Principal::of(&request)?;
        let proto::ListTemplatesRequest {
            workspace_id,
            search,
        } = request.get_ref().clone();
        let (workspace_id, search) = (
            required("workspace_id", workspace_id),
            optional_text("search", search, 255),
        )
            .validated(&request)?;
        let rows =
            pages::templates(&self.app.db, principal, workspace_id, search.as_deref()).await?;
        Ok(Response::new(proto::ListTemplatesResponse {
            templates: rows.into_iter().map(template).collect(),
        }))
    }

    async fn apply_template(
        &self,
        request: Request<proto::ApplyTemplateRequest>,
    ) -> Result<Response<proto::ApplyTemplateResponse>, Status> {
        let principal = Principal::of(&request)?;
        let proto::ApplyTemplateRequest {
            workspace_id,
            campaign_id,
            template_id,
        } = *request.get_ref();
        let (workspace_id, campaign_id, template_id) = (
            required("workspace_id", workspace_id),
            required("campaign_id", campaign_id),
            required("template_id", template_id),
        )
            .validated(&request)?;
        let is_live = pages::apply_template(
            &self.app.db,
            principal,
            workspace_id,
            campaign_id,
            template_id,
        )
        .await?;
        let message = if is_live {
            "Template applied to the draft. Visitors still see the published design: publish \
             (POST /pages/publish) to switch them to this one."
        } else {
            "Template applied to the draft. Publish it (POST /pages/publish) to make the pages live."
        };
        Ok(Response::new(proto::ApplyTemplateResponse {
            campaign_id,
            template_id,
            is_live,
            message: message.into(),
        }))
    }

    async fn create_template(
        &self,
        request: Request<proto::CreateTemplateRequest>,
    ) -> Result<Response<proto::Template>, Status> {
        let principal = Principal::of(&request)?;
        let proto::CreateTemplateRequest {
            workspace_id,
            campaign_id,
            name,
            description,
        } = request.get_ref().clone();
        let (workspace_id, campaign_id, name, description) = (
            required("workspace_id", workspace_id),
            required("campaign_id", campaign_id),
            required_text("name", name, 255),
            optional_text("description", description, 1_000),
        )
            .validated(&request)?;
        let row = pages::create_template(
            &self.app.db,
            principal,
            workspace_id,
            campaign_id,
            &name,
            description.as_deref(),
        )
        .await?;
        Ok(Response::new(template(row)))
    }

    async fn preview_draft(
        &self,
        request: Request<proto::PreviewDraftRequest>,
    ) -> Result<Response<proto::PreviewDraftResponse>, Status> {
        let principal = Principal::of(&request)?;
        let proto::PreviewDraftRequest {
            workspace_id,
            campaign_id,
            lead_id,
            template_id,
            published,
        } = *request.get_ref();
        let (workspace_id, campaign_id) = campaign_fields(workspace_id, campaign_id, &request)?;
        let shown = match (published.unwrap_or(false), template_id) {
            (true, _) => pages::Shown::Published,
            (false, Some(template_id)) => pages::Shown::Template(template_id),
            (false, None) => pages::Shown::Draft,
        };
        let html = pages::preview_draft(
            &self.app,
            principal,
            workspace_id,
            campaign_id,
            lead_id,
            shown,
        )
        .await?;
        Ok(Response::new(proto::PreviewDraftResponse { html }))
    }
}

fn design(view: DesignView) -> proto::Design {
    let DesignView {
        campaign_id,
        has_design,
        is_live,
        has_unpublished_changes,
        html,
        css,
        updated_at,
        note,
        copy,
    } = view;
    proto::Design {
        campaign_id,
        has_design,
        is_live,
        has_unpublished_changes,
        html,
        css,
        updated_at: updated_at.map(time::to_proto),
        note,
        copy: Some(super::campaigns::copy_message(copy)),
    }
}

fn template(row: TemplateRow) -> proto::Template {
    proto::Template {
        template_id: row.id,
        name: row.name,
        description: row.description,
        source: if row.workspace_id.is_some() {
            "workspace"
        } else {
            "premade"
        }
        .into(),
    }
}

fn design_run(run: RunRow) -> proto::DesignRun {
    let status = match run.status.as_str() {
        "queued" => State::Queued,
        "running" => State::Running,
        "success" => State::Success,
        "error" => State::Error,
        "cancelled" => State::Cancelled,
        _ => State::Unspecified,
    };
    proto::DesignRun {
        run_id: run.id,
        status: status as i32,
        campaign_id: run.campaign_id,
        error: run.error,
    }
}
