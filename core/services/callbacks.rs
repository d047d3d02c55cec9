//! `lps.v1.CallbacksService`: the delivery log, redelivery, receivers' health and the signing
//! secret.

use std::time::Duration;

use tonic::{Request, Response, Status};

use crate::App;
use crate::auth::Principal;
use crate::domain::{callbacks, notifications, webhook_signature};
use crate::proto::{self, callbacks_service_server};
use crate::store::callbacks::{DeliveryFilter, DeliveryRow, EndpointRow};
use crate::time;
use crate::validate::{Validated, limit, one_of, required, required_text};

/// What a delivery's status may be.
const STATUSES: [&str; 3] = ["pending", "delivered", "failed"];
/// What a callback's event may be.
const EVENTS: [&str; 4] = crate::domain::callback_events::CallbackEvent::NAMES;

pub struct CallbacksService {
    app: App,
}

impl CallbacksService {
    pub fn new(app: &App) -> Self {
        Self { app: app.clone() }
    }
}

#[tonic::async_trait]
impl callbacks_service_server::CallbacksService for CallbacksService {
    async fn list_deliveries(
        &self,
        request: Request<proto::ListDeliveriesRequest>,
    ) -> Result<Response<proto::ListDeliveriesResponse>, Status> {
        let principal = Principal::of(&request)?;
        let proto::ListDeliveriesRequest {
            workspace_id,
            status,
            event,
            lead_id,
            before_id,
            limit: page_size,
        } = request.get_ref().clone();
        let (workspace_id, status, event, page_size) = (
            required("workspace_id", workspace_id),
            one_of("status", status, &STATUSES),
            one_of("event", event, &EVENTS),
            limit("limit", page_size, 1, callbacks::MAX_LIMIT, 50),
        )
            .validated(&request)?;
        let filter = DeliveryFilter {
            status,
            event,
            lead_id,
            before_id,
        };
        let rows = callbacks::list(&self.app, principal, workspace_id, &filter, page_size).await?;
        let next_before_id = (rows.len() as i64 == page_size)
            .then(|| rows.last().map(|row| row.id))
            .flatten();
        Ok(Response::new(proto::ListDeliveriesResponse {
            deliveries: rows.into_iter().map(delivery).collect(),
            next_before_id,
        }))
    }

    async fn redeliver(
        &self,
        request: Request<proto::RedeliverRequest>,
    ) -> Result<Response<proto::Delivery>, Status> {
        let principal = Principal::of(&request)?;
        let proto::RedeliverRequest {
            workspace_id,
            delivery_id,
        } = *request.get_ref();
        let (workspace_id, delivery_id) = (
            required("workspace_id", workspace_id),
            required("delivery_id", delivery_id),
        )
            .validated(&request)?;
        let row = callbacks::redeliver(&self.app, principal, workspace_id, delivery_id).await?;
        Ok(Response::new(delivery(row)))
    }

    async fn list_endpoints(
        &self,
        request: Request<proto::ListEndpointsRequest>,
    ) -> Result<Response<proto::ListEndpointsResponse>, Status> {
        let principal = Principal::of(&request)?;
        let proto::ListEndpointsRequest { workspace_id } = *request.get_ref();
        let (workspace_id,) = (required("workspace_id", workspace_id),).validated(&request)?;
        let rows = callbacks::endpoints(&self.app, principal, workspace_id).await?;
        let now = time::now();
        Ok(Response::new(proto::ListEndpointsResponse {
            endpoints: rows.into_iter().map(|row| endpoint(row, now)).collect(),
        }))
    }

    async fn rotate_secret(
        &self,
        request: Request<proto::RotateSecretRequest>,
    ) -> Result<Response<proto::RotateSecretResponse>, Status> {
        let principal = Principal::of(&request)?;
        let proto::RotateSecretRequest {
            workspace_id,
            overlap_seconds,
        } = *request.get_ref();
        let max = callbacks::MAX_OVERLAP.as_secs() as i64;
        let default = callbacks::DEFAULT_OVERLAP.as_secs() as i64;
        let (workspace_id, overlap_seconds) = (
            required("workspace_id", workspace_id),
            limit("overlap_seconds", overlap_seconds, 0, max, default),
        )
            .validated(&request)?;
        let overlap = Duration::from_secs(overlap_seconds as u64);
        let rotated = callbacks::rotate_secret(&self.app, principal, workspace_id, overlap).await?;
        Ok(Response::new(proto::RotateSecretResponse {
            secret: rotated.secret,
            previous_valid_until: Some(time::to_proto(rotated.previous_valid_until)),
        }))
    }

    async fn create_channel(
        &self,
        request: Request<proto::CreateChannelRequest>,
    ) -> Result<Response<proto::NotificationChannel>, Status> {
        let principal = Principal::of(&request)?;
        let proto::CreateChannelRequest {
            workspace_id,
            kind,
            url,
            events,
            time_zone,
            emails,
        } = request.get_ref().clone();
        // What every channel needs, reported with the workspace (a url, once the kind says it
        // is not email); the domain checks the rest.
        let needs_url = kind.as_deref().is_some_and(|k| k.trim() != "email");
        let url = match url {
            url if needs_url => required_text("url", url, 2048).map(Some),
            url => Ok(url),
        };
        let (workspace_id, kind, url) = (
            required("workspace_id", workspace_id),
            required_text("kind", kind, 16),
            url,
        )
            .validated(&request)?;
        let asked = notifications::Settings {
            kind: Some(kind),
            url,
            emails: (!emails.is_empty()).then_some(emails),
            events: (!events.is_empty()).then_some(events),
            time_zone,
        };
        let made = notifications::create(&self.app, principal, workspace_id, asked).await?;
        Ok(Response::new(channel(made)))
    }

    async fn list_channels(
        &self,
        request: Request<proto::ListChannelsRequest>,
    ) -> Result<Response<proto::ListChannelsResponse>, Status> {
        let principal = Principal::of(&request)?;
        let proto::ListChannelsRequest { workspace_id } = *request.get_ref();
        let (workspace_id,) = (required("workspace_id", workspace_id),).validated(&request)?;
        let listed = notifications::list(&self.app, principal, workspace_id).await?;
        Ok(Response::new(proto::ListChannelsResponse {
            channels: listed.into_iter().map(channel).collect(),
        }))
    }

    async fn update_channel(
        &self,
        request: Request<proto::UpdateChannelRequest>,
    ) -> Result<Response<proto::NotificationChannel>, Status> {
        let principal = Principal::of(&request)?;
        let proto::UpdateChannelRequest {
            workspace_id,
            channel_id,
            kind,
            url,
            events,
            time_zone,
            emails,
        } = request.get_ref().clone();
        let (workspace_id, channel_id) = (
            required("workspace_id", workspace_id),
            required("channel_id", channel_id),
        )
            .validated(&request)?;
        let asked = notifications::Settings {
            kind,
            url,
            emails: (!emails.is_empty()).then_some(emails),
            events: (!events.is_empty()).then_some(events),
            time_zone,
        };
        let changed =
            notifications::update(&self.app, principal, workspace_id, channel_id, asked).await?;
        Ok(Response::new(channel(changed)))
    }

    async fn delete_channel(
        &self,
        request: Request<proto::ChannelRequest>,
    ) -> Result<Response<proto::DeleteChannelResponse>, Status> {
        let principal = Principal::of(&request)?;
        let (workspace_id, channel_id) = channel_fields(&request)?;
        notifications::delete(&self.app, principal, workspace_id, channel_id).await?;
        Ok(Response::new(proto::DeleteChannelResponse { channel_id }))
    }

    async fn test_channel(
        &self,
        request: Request<proto::ChannelRequest>,
    ) -> Result<Response<proto::TestChannelResponse>, Status> {
        let principal = Principal::of(&request)?;
        let (workspace_id, channel_id) = channel_fields(&request)?;
        let delivery_id =
            notifications::test(&self.app, principal, workspace_id, channel_id).await?;
        Ok(Response::new(proto::TestChannelResponse {
            channel_id,
            delivery_id,
        }))
    }

    async fn unsubscribe(
        &self,
        request: Request<proto::UnsubscribeRequest>,
    ) -> Result<Response<proto::UnsubscribeResponse>, Status> {
        // No principal: the link's key is the proof.
        let proto::UnsubscribeRequest {
            channel_id,
            email,
            key,
        } = request.get_ref().clone();
        let (channel_id, email, key) = (
            required("channel_id", channel_id),
            required_text("email", email, 320),
            required_text("key", key, 64),
        )
            .validated(&request)?;
        let removed = notifications::unsubscribe(&self.app, channel_id, &email, &key).await?;
        Ok(Response::new(proto::UnsubscribeResponse { removed }))
    }
}

/// The workspace and channel a request names, checked.
fn channel_fields(request: &Request<proto::ChannelRequest>) -> Result<(i64, i64), Status> {
    let proto::ChannelRequest {
        workspace_id,
        channel_id,
    } = *request.get_ref();
    Ok((
        required("workspace_id", workspace_id),
        required("channel_id", channel_id),
    )
        .validated(request)?)
}

fn channel(channel: notifications::Channel) -> proto::NotificationChannel {
    let notifications::Channel {
        id,
        workspace_id,
        kind,
        url,
        emails,
        events,
        time_zone,
        state,
        last_error,
        created_at,
        updated_at,
        ..
    } = channel;
    proto::NotificationChannel {
        channel_id: id,
        workspace_id,
        kind: kind.as_str().to_owned(),
        url,
        emails,
        events,
        time_zone,
        state: state.to_owned(),
        last_error,
        created_at: Some(time::to_proto(created_at)),
        updated_at: Some(time::to_proto(updated_at)),
    }
}

fn delivery(row: DeliveryRow) -> proto::Delivery {
    let DeliveryRow {
        id,
        event,
        lead_id,
        job_id,
        url,
        status,
        attempts,
        last_status_code,
        last_error,
        last_latency_ms,
        last_attempt_at,
        next_attempt_at,
        delivered_at,
        redeliveries,
        created_at,
        // Internal: how health is kept, not part of a delivery's answer.
        destination: _,
    } = row;
    let pending = status == "pending";
    proto::Delivery {
        id,
        webhook_id: webhook_signature::message_id(id),
        event,
        lead_id,
        job_id,
        url,
        status,
        attempts,
        last_status_code,
        last_error,
        last_latency_ms,
        last_attempt_at: last_attempt_at.map(time::to_proto),
        next_attempt_at: pending.then(|| time::to_proto(next_attempt_at)),
        delivered_at: delivered_at.map(time::to_proto),
        redeliveries,
        created_at: Some(time::to_proto(created_at)),
    }
}

fn endpoint(row: EndpointRow, now: time::Micros) -> proto::Endpoint {
    let state = callbacks::endpoint_state(&row, now);
    let EndpointRow {
        destination,
        consecutive_failures,
        unhealthy_since,
        paused_until,
        last_error,
        last_failure_at,
        resumed_at,
        pending,
    } = row;
    proto::Endpoint {
        destination,
        state: state.into(),
        consecutive_failures,
        unhealthy_since: unhealthy_since.map(time::to_proto),
        paused_until: paused_until.map(time::to_proto),
        last_error,
        last_failure_at: last_failure_at.map(time::to_proto),
        resumed_at: resumed_at.map(time::to_proto),
        pending,
    }
}
