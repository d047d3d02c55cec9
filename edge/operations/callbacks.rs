//! Extensions: `GET /callbacks/deliveries`, `POST /callbacks/redeliver`,
//! `GET /callbacks/endpoints`, `POST /callbacks/rotate-secret`.

use lps::{proto, wire};
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use super::caller::{Caller, Reply};
use super::error::{ApiError, ErrorBody};
use super::input::{Input, Lenient};
use super::workspaces::WorkspaceQuery;

#[derive(Debug, Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct DeliveriesQuery {
    #[param(value_type = i64)]
    pub workspace_id: Lenient<i64>,
    /// `pending`, `delivered` or `failed`.
    #[param(value_type = Option<String>, pattern = "^(pending|delivered|failed)$")]
    pub status: Lenient<String>,
    /// `lead.page_generated`, `lead.page_viewed`, `lead.form_submitted` or `lead.hot`.
    #[param(value_type = Option<String>,
            pattern = "^lead\\.(page_generated|page_viewed|form_submitted|hot)$")]
    pub event: Lenient<String>,
    /// Only the callbacks about this lead.
    #[param(value_type = Option<i64>)]
    pub lead_id: Lenient<i64>,
    /// Only deliveries older than this one: the previous answer's `next_before_id`.
    #[param(value_type = Option<i64>)]
    pub before_id: Lenient<i64>,
    /// 1 to 100, default 50.
    #[param(value_type = Option<i64>, minimum = 1, maximum = 100, default = 50)]
    pub limit: Lenient<i64>,
}

/// One callback and how its delivery went.
#[derive(Serialize, ToSchema)]
pub struct DeliveryBody {
    pub id: i64,
    /// The `webhook-id` header it is sent with, the same on every attempt and redelivery.
    #[schema(example = "msg_42")]
    pub webhook_id: String,
    #[schema(example = "lead.page_generated")]
    pub event: String,
    pub lead_id: i64,
    /// The job that led to it; null for events no job led to.
    pub job_id: Option<String>,
    /// Where it is sent.
    pub url: String,
    /// `pending`, `delivered` or `failed` (given up after its attempts).
    #[schema(example = "delivered")]
    pub status: String,
    pub attempts: i64,
    /// The receiver's HTTP status on the last attempt; null when no answer came.
    pub last_status_code: Option<i64>,
    /// Why the last attempt failed.
    pub last_error: Option<String>,
    /// How long the last attempt took, in milliseconds.
    pub last_latency_ms: Option<i64>,
    pub last_attempt_at: Option<String>,
    /// When it is attempted next; null unless pending.
    pub next_attempt_at: Option<String>,
    pub delivered_at: Option<String>,
    /// How often it was sent again by `POST /callbacks/redeliver`.
    pub redeliveries: i64,
    pub created_at: String,
}

#[derive(Serialize, ToSchema)]
pub struct DeliveriesBody {
    pub deliveries: Vec<DeliveryBody>,
    /// Set when there may be more: pass it as `before_id` for the next page.
    pub next_before_id: Option<i64>,
}

#[derive(Debug, Default, Deserialize, ToSchema)]
pub struct RedeliverRequest {
    #[schema(value_type = i64)]
    pub workspace_id: Lenient<i64>,
    /// A delivery's `id`.
    #[schema(value_type = i64)]
    pub delivery_id: Lenient<i64>,
}

/// A receiving host of the workspace's callbacks and its health.
#[derive(Serialize, ToSchema)]
pub struct EndpointBody {
    /// The receiving host.
    #[schema(example = "hooks.example.com")]
    pub destination: String,
    /// `healthy`, `failing` (failed lately, not paused) or `paused` (unhealthy: its callbacks
    /// wait until `paused_until`, then one attempt probes it).
    #[schema(example = "paused")]
    pub state: String,
    pub consecutive_failures: i64,
    pub unhealthy_since: Option<String>,
    pub paused_until: Option<String>,
    pub last_error: Option<String>,
    pub last_failure_at: Option<String>,
    /// When it last came back from being unhealthy.
    pub resumed_at: Option<String>,
    /// Its callbacks waiting to be delivered.
    pub pending: i64,
}

#[derive(Serialize, ToSchema)]
pub struct EndpointsBody {
    pub endpoints: Vec<EndpointBody>,
}

#[derive(Debug, Default, Deserialize, ToSchema)]
pub struct RotateSecretRequest {
    #[schema(value_type = i64)]
    pub workspace_id: Lenient<i64>,
    /// How long the old secret keeps signing beside the new one, in seconds: 0 to 604800,
    /// default 86400.
    #[schema(value_type = Option<i64>, minimum = 0, maximum = 604800)]
    pub overlap_seconds: Lenient<i64>,
}

#[derive(Serialize, ToSchema)]
pub struct RotatedSecretBody {
    /// The new signing secret (Standard Webhooks, `whsec_` and base64). Keep it secret.
    pub secret: String,
    /// Until when callbacks are signed with the old secret too (a second `v1,` signature).
    pub previous_valid_until: String,
}

/// Extension: the workspace's callbacks, newest first, with how each delivery went (attempts,
/// the receiver's last status code or error, latency, next attempt, delivered at), a page at a
/// time.
#[utoipa::path(get, path = "/callbacks/deliveries", tag = "Callbacks", params(DeliveriesQuery),
    responses((status = 200, body = DeliveriesBody),
        (status = 403, body = ErrorBody),
        (status = 422, body = ErrorBody)))]
pub(super) async fn deliveries(
    caller: Caller,
    Input(query, mut check): Input<DeliveriesQuery>,
) -> Result<Reply<DeliveriesBody>, ApiError> {
    let request = proto::ListDeliveriesRequest {
        workspace_id: check.field("workspace_id", query.workspace_id),
        status: check.field("status", query.status),
        event: check.field("event", query.event),
        lead_id: check.field("lead_id", query.lead_id),
        before_id: check.field("before_id", query.before_id),
        limit: check.field("limit", query.limit),
    };
    caller
        .call(
            check,
            request,
            |core, request| async move { core.callbacks().list_deliveries(request).await },
            |r| DeliveriesBody {
                deliveries: r.deliveries.into_iter().map(delivery).collect(),
                next_before_id: r.next_before_id,
            },
        )
        .await
}

/// Extension: sends a delivered or given-up callback again now, with the same `webhook-id`
/// and a fresh round of attempts; a pause of its receiving host ends. One still pending is
/// already queued: 409.
#[utoipa::path(post, path = "/callbacks/redeliver", tag = "Callbacks",
    request_body = RedeliverRequest,
    responses((status = 200, body = DeliveryBody),
        (status = 404, body = ErrorBody, description = "Delivery not found"),
        (status = 409, body = ErrorBody, description = "The delivery is already queued"),
        (status = 422, body = ErrorBody)))]
pub(super) async fn redeliver(
    caller: Caller,
    Input(body, mut check): Input<RedeliverRequest>,
) -> Result<Reply<DeliveryBody>, ApiError> {
    let request = proto::RedeliverRequest {
        workspace_id: check.field("workspace_id", body.workspace_id),
        delivery_id: check.field("delivery_id", body.delivery_id),
    };
    caller
        .call(
            check,
            request,
            |core, request| async move { core.callbacks().redeliver(request).await },
            delivery,
        )
        .await
}

/// Extension: the workspace's receiving hosts that failed since their last success or are
/// paused as unhealthy (after `--callback-unhealthy-after` failures in a row), with their
/// callbacks waiting.
#[utoipa::path(get, path = "/callbacks/endpoints", tag = "Callbacks", params(WorkspaceQuery),
    responses((status = 200, body = EndpointsBody),
        (status = 403, body = ErrorBody),
        (status = 422, body = ErrorBody)))]
pub(super) async fn endpoints(
    caller: Caller,
    Input(query, mut check): Input<WorkspaceQuery>,
) -> Result<Reply<EndpointsBody>, ApiError> {
    let request = proto::ListEndpointsRequest {
        workspace_id: check.field("workspace_id", query.workspace_id),
    };
    caller
        .call(
            check,
            request,
            |core, request| async move { core.callbacks().list_endpoints(request).await },
            |r| EndpointsBody {
                endpoints: r.endpoints.into_iter().map(endpoint).collect(),
            },
        )
        .await
}

/// Extension: a new secret for signing the workspace's callbacks; until
/// `previous_valid_until` each callback carries signatures by both (Standard Webhooks verifiers
/// accept either). Owners' keys only, never an app connected with OAuth.
#[utoipa::path(post, path = "/callbacks/rotate-secret", tag = "Callbacks",
    request_body = RotateSecretRequest,
    responses((status = 200, body = RotatedSecretBody),
        (status = 403, body = ErrorBody, description = "Workspace not reachable, a member's key, or an app connected with OAuth"),
        (status = 422, body = ErrorBody)))]
pub(super) async fn rotate_secret(
    caller: Caller,
    Input(body, mut check): Input<RotateSecretRequest>,
) -> Result<Reply<RotatedSecretBody>, ApiError> {
    let request = proto::RotateSecretRequest {
        workspace_id: check.field("workspace_id", body.workspace_id),
        overlap_seconds: check.field("overlap_seconds", body.overlap_seconds),
    };
    caller
        .call(
            check,
            request,
            |core, request| async move { core.callbacks().rotate_secret(request).await },
            |r| RotatedSecretBody {
                secret: r.secret,
                previous_valid_until: r
                    .previous_valid_until
                    .as_ref()
                    .map(wire::iso8601)
                    .unwrap_or_default(),
            },
        )
        .await
}

fn delivery(delivery: proto::Delivery) -> DeliveryBody {
    let iso = |at: Option<prost_types::Timestamp>| at.as_ref().map(wire::iso8601);
    DeliveryBody {
        id: delivery.id,
        webhook_id: delivery.webhook_id,
        event: delivery.event,
        lead_id: delivery.lead_id,
        job_id: Some(delivery.job_id).filter(|id| !id.is_empty()),
        url: delivery.url,
        status: delivery.status,
        attempts: delivery.attempts,
        last_status_code: delivery.last_status_code,
        last_error: delivery.last_error,
        last_latency_ms: delivery.last_latency_ms,
        last_attempt_at: iso(delivery.last_attempt_at),
        next_attempt_at: iso(delivery.next_attempt_at),
        delivered_at: iso(delivery.delivered_at),
        redeliveries: delivery.redeliveries,
        created_at: iso(delivery.created_at).unwrap_or_default(),
    }
}

fn endpoint(endpoint: proto::Endpoint) -> EndpointBody {
    let iso = |at: Option<prost_types::Timestamp>| at.as_ref().map(wire::iso8601);
    EndpointBody {
        destination: endpoint.destination,
        state: endpoint.state,
        consecutive_failures: endpoint.consecutive_failures,
        unhealthy_since: iso(endpoint.unhealthy_since),
        paused_until: iso(endpoint.paused_until),
        last_error: endpoint.last_error,
        last_failure_at: iso(endpoint.last_failure_at),
        resumed_at: iso(endpoint.resumed_at),
        pending: endpoint.pending,
    }
}
