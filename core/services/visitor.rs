//! `lps.v1.VisitorService`: what visitors do, with no credential: pages rendered, forms
//! submitted, and the beacons of pages' tracking scripts.

use tokio_stream::wrappers::BroadcastStream;
use tokio_stream::wrappers::errors::BroadcastStreamRecvError;
use tokio_stream::{Stream, StreamExt};
use tonic::{Request, Response, Status};

use crate::App;
use crate::domain::certificates::{self, Challenge};
use crate::domain::domains;
use crate::domain::engagement::{self, Beacon, BeaconKind, MAX_SECONDS};
use crate::domain::form_submissions;
use crate::domain::page_changes::{Change, Changed};
use crate::domain::pages::{self, Visit};
use crate::domain::preview_cards;
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
        } = request.into_inner();
        let visit = pages::render_page(&self.app, &campaign_slug, &lead_slug).await?;
        let mut location = String::new();
        let (outcome, html, etag, of) = match visit {
            Visit::Page { html, etag, of } => (Outcome::Page, html, etag, Some(of)),
            Visit::Moved { location: to } => {
                location = to;
                (Outcome::Moved, String::new(), String::new(), None)
            }
            Visit::NotLive { of } => (Outcome::NotLive, String::new(), String::new(), Some(of)),
            Visit::Unavailable { of } => {
                (Outcome::Unavailable, String::new(), String::new(), Some(of))
            }
            Visit::NotFound => (Outcome::NotFound, String::new(), String::new(), None),
        };
        Ok(Response::new(proto::RenderPageResponse {
            outcome: outcome as i32,
            html,
            etag,
            campaign_id: of.map_or(0, |of| of.campaign_id),
            lead_id: of.map_or(0, |of| of.lead_id),
            generation: of.map_or(0, |of| of.reading.generation),
            cacheable: of.is_some_and(|of| of.reading.cacheable),
            location,
            workspace_id: of.map_or(0, |of| of.workspace_id),
        }))
    }

    async fn render_preview_image(
        &self,
        request: Request<proto::RenderPageRequest>,
    ) -> Result<Response<proto::PreviewImage>, Status> {
        let proto::RenderPageRequest {
            campaign_slug,
            lead_slug,
        } = request.into_inner();
        let card = preview_cards::preview_card(&self.app, &campaign_slug, &lead_slug)
            .await?
            .ok_or(crate::Error::NotFound("Page not found"))?;
        Ok(Response::new(proto::PreviewImage {
            png: card.png.as_ref().clone(),
            etag: card.etag,
            stand_in: card.kind != preview_cards::CardKind::Lead,
            workspace_id: card.workspace_id,
        }))
    }

    async fn get_asset(
        &self,
        request: Request<proto::GetAssetRequest>,
    ) -> Result<Response<proto::GetAssetResponse>, Status> {
        let key = &request.get_ref().key;
        let well_formed = key.len() == 64 && key.bytes().all(|b| b.is_ascii_hexdigit());
        let asset = if well_formed {
            crate::store::assets::by_key(self.app.db.pool(), key)
                .await
                .map_err(crate::Error::from)?
        } else {
            None
        };
        let asset = asset.ok_or(crate::Error::NotFound("Asset not found"))?;
        Ok(Response::new(proto::GetAssetResponse {
            content_type: asset.content_type,
            body: asset.body,
        }))
    }

    async fn submit_form(
        &self,
        request: Request<proto::SubmitFormRequest>,
    ) -> Result<Response<proto::SubmitFormResponse>, Status> {
        let address = super::visitor_address(&request);
        let proto::SubmitFormRequest {
            campaign_slug,
            lead_slug,
            form_id,
            ip_address,
            fields,
            user_agent,
            webdriver,
            workspace_id,
        } = request.into_inner();
        let ip_address = address(ip_address);
        let submission = form_submissions::Submission {
            campaign_slug,
            lead_slug,
            form_id,
            ip_address,
            user_agent,
            webdriver,
            fields: fields.into_iter().collect(),
            workspace_id,
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

    type WatchPageChangesStream = PageChangesStream;

    async fn list_served_domains(
        &self,
        _request: Request<proto::ListServedDomainsRequest>,
    ) -> Result<Response<proto::ListServedDomainsResponse>, Status> {
        let served = domains::served(&self.app).await?;
        Ok(Response::new(proto::ListServedDomainsResponse {
            domains: served
                .into_iter()
                .map(|row| proto::ServedDomain {
                    hostname: row.hostname,
                    workspace_id: row.workspace_id,
                    domain_id: row.id,
                })
                .collect(),
        }))
    }

    async fn ask_domain(
        &self,
        request: Request<proto::AskDomainRequest>,
    ) -> Result<Response<proto::AskDomainResponse>, Status> {
        let address = super::visitor_address(&request);
        let proto::AskDomainRequest {
            hostname,
            ip_address,
        } = request.into_inner();
        let served = domains::ask(&self.app, &hostname, &address(ip_address)).await?;
        Ok(Response::new(proto::AskDomainResponse { served }))
    }

    async fn list_certificates(
        &self,
        request: Request<proto::ListCertificatesRequest>,
    ) -> Result<Response<proto::ListCertificatesResponse>, Status> {
        only_from_a_trusted_edge(&request)?;
        let issued = certificates::issued(&self.app).await?;
        Ok(Response::new(proto::ListCertificatesResponse {
            certificates: issued
                .into_iter()
                .map(|served| proto::TlsCertificate {
                    hostname: served.hostname,
                    chain_pem: served.chain_pem,
                    key_pem: served.key_pem,
                    not_after: Some(time::to_proto(served.not_after)),
                })
                .collect(),
        }))
    }

    async fn get_acme_challenge(
        &self,
        request: Request<proto::GetAcmeChallengeRequest>,
    ) -> Result<Response<proto::GetAcmeChallengeResponse>, Status> {
        use proto::AcmeChallengeKind as Kind;
        let kind = match request.get_ref().kind() {
            Kind::Http01 => Challenge::Http01,
            Kind::TlsAlpn01 => {
                // The answer holds a key (if only a throwaway certificate's).
                only_from_a_trusted_edge(&request)?;
                Challenge::TlsAlpn01
            }
            Kind::Unspecified => return Err(Status::invalid_argument("`kind` is required.")),
        };
        match certificates::challenge(&self.app, kind, &request.get_ref().name).await? {
            Some(response) => Ok(Response::new(proto::GetAcmeChallengeResponse { response })),
            None => Err(Status::not_found("Challenge not found")),
        }
    }

    async fn watch_page_changes(
        &self,
        _request: Request<proto::WatchPageChangesRequest>,
    ) -> Result<Response<Self::WatchPageChangesStream>, Status> {
        Ok(Response::new(page_changes_stream(&self.app)))
    }

    async fn record_beacons(
        &self,
        request: Request<proto::RecordBeaconsRequest>,
    ) -> Result<Response<proto::RecordBeaconsResponse>, Status> {
        let address = super::visitor_address(&request);
        let mut beacons = request.into_inner().beacons;
        for beacon in &mut beacons {
            beacon.ip_address = address(std::mem::take(&mut beacon.ip_address));
        }
        if beacons.len() > MAX_BEACONS_PER_CALL {
            return Err(Status::invalid_argument(format!(
                "At most {MAX_BEACONS_PER_CALL} beacons per call."
            )));
        }
        let beacons: Vec<Beacon> = beacons.into_iter().filter_map(beacon).collect();
        let recorded = engagement::record(&self.app, beacons).await?;
        crate::metrics::beacons_recorded(&recorded);
        Ok(Response::new(proto::RecordBeaconsResponse {
            recorded: super::visit_classes::counts(&recorded.stored, |_, count| count != 0),
            dropped: recorded.dropped,
            throttled: recorded.throttled,
        }))
    }
}

/// Refuses a call but from an edge core trusts: this process's own, or one presenting
/// `--edge-secret`.
fn only_from_a_trusted_edge<T>(request: &Request<T>) -> Result<(), Status> {
    if request.extensions().get::<super::TrustedEdge>().is_none() {
        return Err(Status::permission_denied(
            "Only an edge presenting the edge secret may ask for this.",
        ));
    }
    Ok(())
}

/// The page changes a subscriber is sent: everything first, then each change; everything again
/// when it fell behind (the changes it missed are gone).
fn page_changes_stream(app: &App) -> PageChangesStream {
    let (start, receiver) = app.page_changes.subscribe();
    let changes = app.page_changes.clone();
    let everything = |generation| proto::PageChange {
        generation,
        everything: true,
        ..Default::default()
    };
    let first = tokio_stream::once(Ok(everything(start)));
    let rest = BroadcastStream::new(receiver).map(move |change| {
        Ok(match change {
            Ok(Change { generation, what }) => match what {
                Changed::Everything => everything(generation),
                // Which host serves what changed, and the addresses pages name with it.
                Changed::Domains => proto::PageChange {
                    domains: true,
                    ..everything(generation)
                },
                // Only the edges' TLS listeners: no page changed.
                Changed::Certificates => proto::PageChange {
                    generation,
                    certificates: true,
                    ..Default::default()
                },
                Changed::Campaigns(campaign_ids) => proto::PageChange {
                    generation,
                    campaign_ids,
                    ..Default::default()
                },
                Changed::Leads(lead_ids) => proto::PageChange {
                    generation,
                    lead_ids,
                    ..Default::default()
                },
            },
            // Fell behind: start afresh at the generation reached.
            Err(BroadcastStreamRecvError::Lagged(_)) => everything(changes.generation()),
        })
    });
    Box::pin(first.chain(rest))
}

type PageChangesStream =
    std::pin::Pin<Box<dyn Stream<Item = Result<proto::PageChange, Status>> + Send + 'static>>;

/// A beacon of a known kind (others, from a newer edge, are skipped).
fn beacon(beacon: proto::Beacon) -> Option<Beacon> {
    let kind = match beacon.kind() {
        Kind::View => BeaconKind::View,
        Kind::Click => BeaconKind::Click,
        Kind::Scroll => BeaconKind::Scroll,
        Kind::Time => BeaconKind::Time,
        Kind::Confirm => BeaconKind::Confirm,
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
        view_id: beacon.view_id,
        interaction: beacon.interaction,
        visible_seconds: beacon.visible_seconds.clamp(0, MAX_SECONDS),
        gpc: beacon.gpc,
        workspace_id: beacon.workspace_id,
        // When the edge received it; never later than now.
        occurred_at: beacon.occurred_at.as_ref().map_or_else(time::now, |at| {
            time::from_proto(at).timestamp_micros().min(time::now())
        }),
    })
}
