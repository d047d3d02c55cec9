//! `lps.v1.EngagementService`: what visitors did on lead pages, read back.

use tonic::{Request, Response, Status};

use crate::App;
use crate::auth::Principal;
use crate::domain::form_submissions;
use crate::proto::{self, engagement_service_server};
use crate::store::form_submissions::SubmissionRow;
use crate::time;
use crate::validate::{Validated, limit};

pub struct EngagementService {
    app: App,
}

impl EngagementService {
    pub fn new(app: &App) -> Self {
        Self { app: app.clone() }
    }
}

#[tonic::async_trait]
impl engagement_service_server::EngagementService for EngagementService {
    async fn list_form_submissions(
        &self,
        request: Request<proto::ListFormSubmissionsRequest>,
    ) -> Result<Response<proto::ListFormSubmissionsResponse>, Status> {
        let principal = &Principal::of(&request)?.clone();
        let proto::ListFormSubmissionsRequest {
            workspace_id,
            campaign_id,
            limit: page_size,
        } = request.into_inner();
        let (page_size,) = (limit("limit", page_size, 1, 100, 50),).validated()?;
        let rows =
            form_submissions::list(&self.app, principal, workspace_id, campaign_id, page_size)
                .await?;
        Ok(Response::new(proto::ListFormSubmissionsResponse {
            submissions: rows.into_iter().map(submission).collect(),
        }))
    }
}

fn submission(row: SubmissionRow) -> proto::FormSubmission {
    let SubmissionRow {
        id,
        workspace_id: _,
        campaign_id,
        lead_id,
        form_id,
        page_url,
        ip_address,
        email,
        fields,
        created_at,
    } = row;
    proto::FormSubmission {
        id,
        form_id,
        page_url,
        ip_address,
        created_at: Some(time::to_proto(created_at)),
        email,
        lead_id,
        campaign_id,
        fields: serde_json::from_str(&fields).unwrap_or_default(),
    }
}
