//! The Notifications part of `/dashboard/settings` (owners): a workspace's channels listed with
//! their health, added (`POST /dashboard/notifications/create`), sent a test message
//! (`POST /dashboard/notifications/test`) and deleted after a confirmation
//! (`/dashboard/notifications/delete`).

use axum::extract::{Query, State};
use axum::response::Response;
use lps::proto;
use serde::Serialize;

use super::{
    Confirmation, Form_, Notice, Settings, SignedForm, SignedIn, after_action, confirm, gone,
    number, redirect_with, settings_address, unavailable,
};
use crate::core_client::Core;
use crate::http::session_cookie::Session;

/// The events a person may pick, by the form's checkbox names: (checkbox, event, words).
const EVENTS: [(&str, &str, &str); 5] = [
    ("event_hot", "lead.hot", "A lead becomes hot"),
    ("event_form", "lead.form_submitted", "A form is submitted"),
    ("event_viewed", "lead.page_viewed", "A page is first viewed"),
    (
        "event_digest",
        "digest.daily",
        "Each morning at 08:00, yesterday's engaged leads (not webhooks)",
    ),
    (
        "event_generated",
        "lead.page_generated",
        "A page is made (webhooks only)",
    ),
];

#[derive(Serialize)]
pub(super) struct ChannelRow {
    id: i64,
    kind: &'static str,
    /// The receiving host (the whole address is a secret of the chat's), or an email
    /// channel's teammates.
    host: String,
    events: String,
    state: String,
    last_error: Option<String>,
}

/// The event checkboxes of the form to add a channel.
#[derive(Serialize)]
pub(super) struct EventChoice {
    name: &'static str,
    label: &'static str,
    checked: bool,
}

pub(super) fn event_choices() -> Vec<EventChoice> {
    EVENTS
        .iter()
        .map(|(name, event, label)| EventChoice {
            name,
            label,
            checked: matches!(*event, "lead.hot" | "lead.form_submitted"),
        })
        .collect()
}

pub(super) async fn list(
    core: &Core,
    session: &Session,
    workspace_id: i64,
) -> Result<Vec<ChannelRow>, tonic::Status> {
    let request = session.request(proto::ListChannelsRequest {
        workspace_id: Some(workspace_id),
    });
    let channels = core
        .callbacks()
        .list_channels(request)
        .await?
        .into_inner()
        .channels;
    Ok(channels.into_iter().map(row).collect())
}

fn row(channel: proto::NotificationChannel) -> ChannelRow {
    let words = |event: &String| {
        EVENTS
            .iter()
            .find(|(_, name, _)| name == event)
            .map_or(event.clone(), |(_, _, label)| (*label).to_owned())
    };
    ChannelRow {
        id: channel.channel_id,
        kind: match channel.kind.as_str() {
            "slack" => "Slack",
            "teams" => "Microsoft Teams",
            "email" => "Email",
            _ => "Webhook",
        },
        host: if channel.kind == "email" {
            channel.emails.join(", ")
        } else {
            url::Url::parse(&channel.url)
                .ok()
                .and_then(|url| url.host_str().map(str::to_owned))
                .unwrap_or_default()
        },
        events: channel
            .events
            .iter()
            .map(words)
            .chain(
                (channel.events.iter().any(|e| e == "digest.daily"))
                    .then(|| format!("time zone {}", channel.time_zone)),
            )
            .collect::<Vec<_>>()
            .join("; "),
        state: channel.state,
        last_error: channel.last_error,
    }
}

/// Adds a channel from the form (`kind`, `url` or the teammate checkboxes, the event
/// checkboxes, `time_zone`, by default the browser's).
pub async fn create(
    State(core): State<Core>,
    axum::Extension(settings): Settings,
    SignedForm(session, form): SignedForm,
) -> Response {
    let workspace_id = number(&form, "workspace_id");
    let events = EVENTS
        .iter()
        .filter(|(name, _, _)| form.contains_key(*name))
        .map(|(_, event, _)| (*event).to_owned())
        .collect();
    let email = form.get("kind").is_some_and(|kind| kind == "email");
    let emails = form
        .iter()
        .filter(|(name, _)| name.starts_with("teammate_"))
        .map(|(_, email)| email.clone())
        .collect();
    let request = proto::CreateChannelRequest {
        workspace_id,
        kind: form.get("kind").cloned(),
        // One form for every kind: its address field is left out for email.
        url: form.get("url").cloned().filter(|_| !email),
        emails: if email { emails } else { Vec::new() },
        events,
        time_zone: form
            .get("time_zone")
            .cloned()
            .filter(|zone| !zone.is_empty())
            .or_else(|| session.time_zone()),
    };
    let outcome = core
        .callbacks()
        .create_channel(session.request(request))
        .await;
    after_action(
        &settings,
        &settings_address(workspace_id),
        outcome,
        "The channel was added: send it a test message to see it work.",
    )
}

/// Sends a channel a test message now.
pub async fn test(
    State(core): State<Core>,
    axum::Extension(settings): Settings,
    SignedForm(session, form): SignedForm,
) -> Response {
    let (workspace_id, request) = channel_of(&form);
    let notice = match core
        .callbacks()
        .test_channel(session.request(request))
        .await
    {
        Ok(_) => Notice::news(
            "A test message is on its way; the Callbacks page shows how its delivery went.",
        ),
        Err(status) => Notice::alert(status.message()),
    };
    redirect_with(&settings, &settings_address(workspace_id), &notice)
}

/// A step before deleting a channel.
pub async fn confirm_delete(
    State(core): State<Core>,
    SignedIn(session, person): SignedIn,
    Query(query): Query<Form_>,
) -> Response {
    let (Some(workspace_id), Some(channel_id)) =
        (number(&query, "workspace_id"), number(&query, "channel_id"))
    else {
        return gone("This channel does not exist any more.");
    };
    let channels = match list(&core, &session, workspace_id).await {
        Ok(channels) => channels,
        Err(status) if status.code() == tonic::Code::PermissionDenied => Vec::new(),
        Err(status) => return unavailable(&status),
    };
    let Some(channel) = channels.into_iter().find(|c| c.id == channel_id) else {
        return gone("This channel does not exist any more.");
    };
    confirm(
        "Delete a channel",
        Confirmation {
            question: format!("Delete the {} channel to {}?", channel.kind, channel.host),
            consequence: "It hears nothing more; its messages not yet sent are dropped.",
            action: "/dashboard/notifications/delete",
            csrf: person.csrf_token,
            fields: vec![
                ("workspace_id", workspace_id.to_string()),
                ("channel_id", channel_id.to_string()),
            ],
            button: "Delete the channel",
            back: settings_address(Some(workspace_id)),
        },
    )
}

pub async fn delete(
    State(core): State<Core>,
    axum::Extension(settings): Settings,
    SignedForm(session, form): SignedForm,
) -> Response {
    let (workspace_id, request) = channel_of(&form);
    let outcome = core
        .callbacks()
        .delete_channel(session.request(request))
        .await;
    after_action(
        &settings,
        &settings_address(workspace_id),
        outcome,
        "The channel was deleted.",
    )
}

/// The channel a form names, and its workspace (where the person goes back to).
fn channel_of(form: &Form_) -> (Option<i64>, proto::ChannelRequest) {
    let workspace_id = number(form, "workspace_id");
    let request = proto::ChannelRequest {
        workspace_id,
        channel_id: number(form, "channel_id"),
    };
    (workspace_id, request)
}
