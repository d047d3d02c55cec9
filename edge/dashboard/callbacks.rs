//! `/dashboard/callbacks`: the workspace's callback deliveries (filtered by status, newest
//! first, a page at a time), each given-up or delivered one sent again on request; the
//! receivers that are failing or paused as unhealthy; and for owners, rotating the secret that
//! signs them (the new one shown once).

use std::collections::BTreeMap;

use axum::extract::{Query, State};
use axum::response::Response;
use http::HeaderMap;
use lps::proto;
use serde::Serialize;

use super::{
    Notice, Settings, SignedForm, SignedIn, When, after_action, chosen_workspace, number,
    redirect_with, screen, unavailable, when,
};
use crate::core_client::Core;

type Form_ = BTreeMap<String, String>;

fn callbacks_address(workspace_id: Option<i64>) -> String {
    match workspace_id {
        Some(id) => format!("/dashboard/callbacks?workspace_id={id}"),
        None => "/dashboard/callbacks".to_owned(),
    }
}

#[derive(Serialize)]
struct CallbacksView {
    workspaces: Vec<(i64, String)>,
    workspace_id: i64,
    csrf: String,
    owner: bool,
    status: String,
    deliveries: Vec<DeliveryRow>,
    /// The next page's `before_id`, when there may be more.
    older: Option<i64>,
    endpoints: Vec<EndpointRow>,
}

#[derive(Serialize)]
struct DeliveryRow {
    id: i64,
    event: String,
    lead_id: i64,
    url: String,
    status: String,
    attempts: i64,
    /// The last answer or error, in words.
    outcome: String,
    latency: Option<String>,
    last_attempt: Option<When>,
    next_attempt: Option<When>,
    delivered: Option<When>,
    redeliverable: bool,
}

#[derive(Serialize)]
struct EndpointRow {
    destination: String,
    state: String,
    failures: i64,
    paused_until: Option<When>,
    last_error: String,
    pending: i64,
}

pub async fn page(
    State(core): State<Core>,
    SignedIn(session, person): SignedIn,
    headers: HeaderMap,
    Query(query): Query<Form_>,
) -> Response {
    let Some(workspace) = chosen_workspace(&query, &person) else {
        return super::no_workspace("Callbacks");
    };
    let status = query
        .get("status")
        .filter(|s| ["pending", "delivered", "failed"].contains(&s.as_str()))
        .cloned();
    let id = Some(workspace.id);
    let deliveries = core
        .callbacks()
        .list_deliveries(session.request(proto::ListDeliveriesRequest {
            workspace_id: id,
            status: status.clone(),
            before_id: number(&query, "before_id"),
            limit: Some(50),
            ..Default::default()
        }))
        .await;
    let endpoints = core
        .callbacks()
        .list_endpoints(session.request(proto::ListEndpointsRequest { workspace_id: id }))
        .await;
    let (deliveries, endpoints) = match (deliveries, endpoints) {
        (Ok(d), Ok(e)) => (d.into_inner(), e.into_inner()),
        (Err(status), _) | (_, Err(status)) => return unavailable(&status),
    };
    let view = CallbacksView {
        workspaces: person
            .workspaces
            .iter()
            .map(|w| (w.id, w.name.clone()))
            .collect(),
        workspace_id: workspace.id,
        csrf: person.csrf_token.clone(),
        owner: person.role != "member",
        status: status.unwrap_or_default(),
        older: deliveries.next_before_id,
        deliveries: deliveries
            .deliveries
            .into_iter()
            .map(delivery_row)
            .collect(),
        endpoints: endpoints
            .endpoints
            .into_iter()
            .map(|e| EndpointRow {
                paused_until: when(e.paused_until.as_ref()).filter(|_| e.state == "paused"),
                destination: e.destination,
                state: e.state,
                failures: e.consecutive_failures,
                last_error: e.last_error.unwrap_or_default(),
                pending: e.pending,
            })
            .collect(),
    };
    screen(&headers, "Callbacks", "callbacks.html", view)
}

fn delivery_row(d: proto::Delivery) -> DeliveryRow {
    let outcome = match (&d.last_status_code, &d.last_error) {
        (_, Some(error)) => error.clone(),
        (Some(code), None) => format!("answered {code}"),
        (None, None) => "not attempted yet".to_owned(),
    };
    DeliveryRow {
        redeliverable: d.status != "pending",
        latency: d.last_latency_ms.map(|ms| format!("{ms} ms")),
        last_attempt: when(d.last_attempt_at.as_ref()),
        next_attempt: when(d.next_attempt_at.as_ref()),
        delivered: when(d.delivered_at.as_ref()),
        id: d.id,
        event: d.event,
        lead_id: d.lead_id,
        url: d.url,
        status: d.status,
        attempts: d.attempts,
        outcome,
    }
}

pub async fn redeliver(
    State(core): State<Core>,
    axum::Extension(settings): Settings,
    SignedForm(session, form): SignedForm,
) -> Response {
    let workspace_id = number(&form, "workspace_id");
    let request = proto::RedeliverRequest {
        workspace_id,
        delivery_id: number(&form, "delivery_id"),
    };
    let outcome = core.callbacks().redeliver(session.request(request)).await;
    after_action(
        &settings,
        &callbacks_address(workspace_id),
        outcome,
        "The callback is queued to be sent again.",
    )
}

pub async fn rotate_secret(
    State(core): State<Core>,
    axum::Extension(settings): Settings,
    SignedForm(session, form): SignedForm,
) -> Response {
    let workspace_id = number(&form, "workspace_id");
    let request = proto::RotateSecretRequest {
        workspace_id,
        overlap_seconds: None,
    };
    let notice = match core
        .callbacks()
        .rotate_secret(session.request(request))
        .await
    {
        Ok(reply) => Notice {
            alert: false,
            text: "The new signing secret (copy it now: it is shown only once; the old one \
                   also signs for 24 hours):"
                .to_owned(),
            secret: Some(reply.into_inner().secret),
        },
        Err(status) => Notice::alert(status.message()),
    };
    redirect_with(&settings, &callbacks_address(workspace_id), &notice)
}
