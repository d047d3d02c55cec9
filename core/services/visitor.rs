//! `lps.v1.VisitorService`: what visitors do, with no credential: pages rendered, forms
//! submitted, and the beacons of pages' tracking scripts.

use tonic::{Request, Response, Status};

use crate::App;
use crate::domain::engagement::{self, Beacon, BeaconKind};
use crate::domain::form_submissions;
use crate::domain::pages::{self, Visit};
use crate::proto::{
    self, beacon::Kind, render_page_response::Outcome,
    submit_form_response::Outcome as SubmitOutcome, visitor_service_server,
};
use crate::time;

/// Beacons one call may carry.
const MAX_BEACONS_PER_CALL: usize = 10_000;

pub struct VisitorService {
    app: App,
}

impl VisitorService {
    pub fn new(app: &App) -> Self {
        Self { app: app.clone() }
    }
}

#[tonic::async_trait]
impl visitor_service_server::VisitorService for VisitorService {
    async fn render_page(
        &self,
        request: Request<proto::RenderPageRequest>,
    ) -> Result<Response<proto::RenderPageResponse>, Status> {
        let proto::RenderPageRequest {
            campaign_slug,
            lead_slug,
            if_none_match,
        } = request.into_inner();
        let visit = pages::render_page(
            &self.app,
            &campaign_slug,
            &lead_slug,
            if_none_match.as_deref(),
        )
        .await?;
        let (outcome, html, etag) = match visit {
            Visit::Page { html, etag } => (Outcome::Page, html, etag),
            Visit::NotModified { etag } => (Outcome::NotModified, String::new(), etag),
            Visit::NotLive => (
                Outcome::NotLive,
                crate::render::not_live_page(),
                String::new(),
            ),
            Visit::NotFound => (
                Outcome::NotFound,
                crate::render::not_found_page(),
                String::new(),
            ),
        };
        Ok(Response::new(proto::RenderPageResponse {
            outcome: outcome as i32,
            html,
            etag,
        }))
    }

    async fn submit_form(
        &self,
        request: Request<proto::SubmitFormRequest>,
    ) -> Result<Response<proto::SubmitFormResponse>, Status> {
        let proto::SubmitFormRequest {
            campaign_slug,
            lead_slug,
            form_id,
            ip_address,
            fields,
        } = request.into_inner();
        let submission = form_submissions::Submission {
            campaign_slug,
            lead_slug,
            form_id,
            ip_address,
            fields: fields.into_iter().collect(),
        };
        let outcome = if form_submissions::submit(&self.app, submission).await? {
            SubmitOutcome::Stored
        } else {
            SubmitOutcome::NotFound
        };
        Ok(Response::new(proto::SubmitFormResponse {
            outcome: outcome as i32,
        }))
    }

    async fn record_beacons(
        &self,
        request: Request<proto::RecordBeaconsRequest>,
    ) -> Result<Response<proto::RecordBeaconsResponse>, Status> {
        let beacons = request.into_inner().beacons;
        if beacons.len() > MAX_BEACONS_PER_CALL {
            return Err(Status::invalid_argument(format!(
                "At most {MAX_BEACONS_PER_CALL} beacons per call."
            )));
        }
        let beacons: Vec<Beacon> = beacons.into_iter().filter_map(beacon).collect();
        let recorded = engagement::record(&self.app, beacons).await?;
        Ok(Response::new(proto::RecordBeaconsResponse {
            counted: recorded.counted,
            bots: recorded.bots,
            dropped: recorded.dropped,
        }))
    }
}

/// A beacon of a known kind (others, from a newer edge, are skipped).
fn beacon(beacon: proto::Beacon) -> Option<Beacon> {
    let kind = match beacon.kind() {
        Kind::View => BeaconKind::View,
        Kind::Click => BeaconKind::Click,
        Kind::Scroll => BeaconKind::Scroll,
        Kind::Time => BeaconKind::Time,
        Kind::Unspecified => return None,
    };
    Some(Beacon {
        campaign_slug: beacon.campaign_slug,
        lead_slug: beacon.lead_slug,
        kind,
        visitor_id: beacon.visitor_id,
        ip_address: beacon.ip_address,
        user_agent: beacon.user_agent,
        webdriver: beacon.webdriver,
        seconds: beacon.seconds,
        target: beacon.target,
        // When the edge received it; never later than now.
        occurred_at: beacon.occurred_at.as_ref().map_or_else(time::now, |at| {
            time::from_proto(at).timestamp_micros().min(time::now())
        }),
    })
}
