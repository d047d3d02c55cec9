//! `/dashboard/unsubscribe`: the link an email channel's message carries for its reader
//! (`List-Unsubscribe`, with one-click unsubscription as RFC 8058 describes). `GET` asks
//! (a link scanner following it changes nothing); `POST`, from the page's button or from the
//! mail app's one-click (`List-Unsubscribe=One-Click` posted to the same address), takes the
//! address off the channel. No session: the link's key is the proof, checked by core. Served
//! outside the dashboard's same-origin check, since a mail provider posts from elsewhere.

use std::collections::BTreeMap;

use axum::extract::{Query, State};
use axum::response::Response;
use http::StatusCode;
use lps::proto;
use minijinja::context;

use super::SCREENS;
use crate::core_client::Core;

type Fields = BTreeMap<String, String>;

const TITLE: &str = "Stop these emails";

/// The question, with a button that posts the link's fields back.
pub(super) async fn ask(Query(link): Query<Fields>) -> Response {
    let field = |name: &str| link.get(name).cloned().unwrap_or_default();
    let (channel, email, key) = (field("channel"), field("email"), field("key"));
    if channel.is_empty() || email.is_empty() || key.is_empty() {
        return answer(
            StatusCode::NOT_FOUND,
            None,
            Some("This unsubscribe link is not whole: open the one in your email again."),
        );
    }
    SCREENS.page(
        StatusCode::OK,
        TITLE,
        "unsubscribe.html",
        context! { channel, email, key, done => None::<String>, error => None::<String> },
    )
}

/// Takes the address off the channel: the link's fields from its query (one-click) or from
/// the page's form.
pub(super) async fn confirm(
    State(core): State<Core>,
    Query(link): Query<Fields>,
    body: String,
) -> Response {
    let form: Fields = form_urlencoded::parse(body.as_bytes())
        .into_owned()
        .collect();
    let field = |name: &str| link.get(name).or_else(|| form.get(name)).cloned();
    let email = field("email").unwrap_or_default();
    let request = proto::UnsubscribeRequest {
        channel_id: field("channel").and_then(|c| c.parse().ok()),
        email: Some(email.clone()),
        key: field("key"),
    };
    match core.callbacks().unsubscribe(request).await {
        Ok(reply) => {
            let done = if reply.into_inner().removed {
                format!("Done: {email} gets no more emails from this channel.")
            } else {
                format!("{email} was already off this channel: nothing more is sent to it.")
            };
            answer(StatusCode::OK, Some(done), None)
        }
        Err(status) => {
            let code = match status.code() {
                tonic::Code::NotFound | tonic::Code::InvalidArgument => StatusCode::NOT_FOUND,
                tonic::Code::FailedPrecondition => StatusCode::CONFLICT,
                _ => StatusCode::SERVICE_UNAVAILABLE,
            };
            answer(code, None, Some(status.message()))
        }
    }
}

fn answer(status: StatusCode, done: Option<String>, error: Option<&str>) -> Response {
    SCREENS.page(
        status,
        TITLE,
        "unsubscribe.html",
        context! { done, error, channel => "", email => "", key => "" },
    )
}
