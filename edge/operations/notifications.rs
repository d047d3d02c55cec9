//! Extensions: a workspace's notification channels, `POST /notifications/channels/create`,
//! `GET /notifications/channels/get-list`, `POST /notifications/channels/update`,
//! `POST /notifications/channels/delete`, `POST /notifications/channels/test`.

use lps::{proto, wire};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::caller::{Caller, Reply};
use super::error::{ApiError, ErrorBody};
use super::input::{Input, Lenient};
use super::workspaces::WorkspaceQuery;

/// Where a workspace hears about its leads.
#[derive(Serialize, ToSchema)]
pub struct ChannelBody {
    pub channel_id: i64,
    pub workspace_id: i64,
    /// `slack` (an incoming webhook: Block Kit messages), `teams` (a Workflows webhook: an
    /// Adaptive Card), `email` (teammates, over the server's SMTP) or `webhook` (the events'
    /// JSON, signed as callbacks are).
    #[schema(example = "slack")]
    pub kind: String,
    /// For an email channel, `mailto:` and its addresses.
    #[schema(example = "https://hooks.slack.com/services/T000/B000/XXXX")]
    pub url: String,
    /// An email channel's teammates (empty for the other kinds).
    #[schema(example = json!([]))]
    pub emails: Vec<String>,
    /// What it receives.
    #[schema(example = json!(["lead.hot", "lead.form_submitted"]))]
    pub events: Vec<String>,
    /// IANA name.
    #[schema(example = "Europe/Berlin")]
    pub time_zone: String,
    /// Its receiver's health, kept per channel: `healthy`, `failing` or `paused` (as in
    /// `GET /callbacks/endpoints`, where it is `{host} (channel {id})`).
    #[schema(example = "healthy")]
    pub state: String,
    /// Why its receiving host last failed, while it is not healthy.
    pub last_error: Option<String>,
    pub created_at: String,
    pub updated_at: String,
}

impl From<proto::NotificationChannel> for ChannelBody {
    fn from(c: proto::NotificationChannel) -> Self {
        let at =
            |t: Option<prost_types::Timestamp>| t.as_ref().map(wire::iso8601).unwrap_or_default();
        Self {
            channel_id: c.channel_id,
            workspace_id: c.workspace_id,
            kind: c.kind,
            url: c.url,
            emails: c.emails,
            events: c.events,
            time_zone: c.time_zone,
            state: c.state,
            last_error: c.last_error,
            created_at: at(c.created_at),
            updated_at: at(c.updated_at),
        }
    }
}

#[derive(Serialize, ToSchema)]
pub struct ChannelsBody {
    pub channels: Vec<ChannelBody>,
}

#[derive(Debug, Default, Deserialize, ToSchema)]
pub struct CreateChannelRequest {
    #[schema(value_type = i64)]
    pub workspace_id: Lenient<i64>,
    /// `slack`, `teams`, `email` or `webhook`.
    #[schema(value_type = String, pattern = "^(slack|teams|email|webhook)$")]
    pub kind: Lenient<String>,
    /// Required but for an email channel: a public http(s) address (a private, loopback or
    /// link-local one is refused).
    #[schema(value_type = Option<String>, max_length = 2048, pattern = "^https?://")]
    pub url: Lenient<String>,
    /// Required for an email channel (and only there): 1 to 20 addresses of the account's
    /// teammates (the server needs `--smtp-url`).
    #[schema(value_type = Option<Vec<String>>)]
    pub emails: Lenient<Vec<String>>,
    /// `lead.hot`, `lead.form_submitted`, `lead.page_viewed` and `digest.daily` (yesterday's
    /// engaged leads at 08:00 in the channel's time zone) for Slack, Teams and email;
    /// every `lead.*` event for a webhook. Default: `lead.hot` and `lead.form_submitted`
    /// for Slack, Teams and email, every event for a webhook.
    #[schema(value_type = Option<Vec<String>>)]
    pub events: Lenient<Vec<String>>,
    /// IANA name (`Europe/Berlin`); default `UTC`.
    #[schema(value_type = Option<String>, max_length = 64)]
    pub time_zone: Lenient<String>,
}

/// Extension: adds a notification channel (owners only): Slack, Microsoft Teams, email to
/// teammates or a workspace webhook. At most 20 a workspace (409 past it).
#[utoipa::path(post, path = "/notifications/channels/create", tag = "Notifications",
    request_body = CreateChannelRequest,
    responses((status = 200, body = ChannelBody),
        (status = 403, body = ErrorBody),
        (status = 409, body = ErrorBody, description = "The workspace has 20 channels"),
        (status = 422, body = ErrorBody)))]
pub(super) async fn create(
    caller: Caller,
    Input(body, mut check): Input<CreateChannelRequest>,
) -> Result<Reply<ChannelBody>, ApiError> {
    let request = proto::CreateChannelRequest {
        workspace_id: check.field("workspace_id", body.workspace_id),
        kind: check.field("kind", body.kind),
        url: check.field("url", body.url),
        emails: check.field("emails", body.emails).unwrap_or_default(),
        events: check.field("events", body.events).unwrap_or_default(),
        time_zone: check.field("time_zone", body.time_zone),
    };
    caller
        .call(
            check,
            request,
            |core, request| async move { core.callbacks().create_channel(request).await },
            ChannelBody::from,
        )
        .await
}

/// Extension: the workspace's notification channels, oldest first, each with its receiving
/// host's health (owners only).
#[utoipa::path(get, path = "/notifications/channels/get-list", tag = "Notifications",
    params(WorkspaceQuery),
    responses((status = 200, body = ChannelsBody),
        (status = 403, body = ErrorBody),
        (status = 422, body = ErrorBody)))]
pub(super) async fn get_list(
    caller: Caller,
    Input(query, mut check): Input<WorkspaceQuery>,
) -> Result<Reply<ChannelsBody>, ApiError> {
    let request = proto::ListChannelsRequest {
        workspace_id: check.field("workspace_id", query.workspace_id),
    };
    caller
        .call(
            check,
            request,
            |core, request| async move { core.callbacks().list_channels(request).await },
            |r| ChannelsBody {
                channels: r.channels.into_iter().map(ChannelBody::from).collect(),
            },
        )
        .await
}

#[derive(Debug, Default, Deserialize, ToSchema)]
pub struct UpdateChannelRequest {
    #[schema(value_type = i64)]
    pub workspace_id: Lenient<i64>,
    #[schema(value_type = i64)]
    pub channel_id: Lenient<i64>,
    /// Each field given replaces the channel's; one left out stays.
    #[schema(value_type = Option<String>, pattern = "^(slack|teams|email|webhook)$")]
    pub kind: Lenient<String>,
    #[schema(value_type = Option<String>, max_length = 2048, pattern = "^https?://")]
    pub url: Lenient<String>,
    /// Replaces an email channel's teammates when not empty.
    #[schema(value_type = Option<Vec<String>>)]
    pub emails: Lenient<Vec<String>>,
    /// Replaces its events when not empty.
    #[schema(value_type = Option<Vec<String>>)]
    pub events: Lenient<Vec<String>>,
    #[schema(value_type = Option<String>, max_length = 64)]
    pub time_zone: Lenient<String>,
}

/// Extension: changes a notification channel (owners only).
#[utoipa::path(post, path = "/notifications/channels/update", tag = "Notifications",
    request_body = UpdateChannelRequest,
    responses((status = 200, body = ChannelBody),
        (status = 403, body = ErrorBody),
        (status = 404, body = ErrorBody, description = "Notification channel not found"),
        (status = 422, body = ErrorBody)))]
pub(super) async fn update(
    caller: Caller,
    Input(body, mut check): Input<UpdateChannelRequest>,
) -> Result<Reply<ChannelBody>, ApiError> {
    let request = proto::UpdateChannelRequest {
        workspace_id: check.field("workspace_id", body.workspace_id),
        channel_id: check.field("channel_id", body.channel_id),
        kind: check.field("kind", body.kind),
        url: check.field("url", body.url),
        emails: check.field("emails", body.emails).unwrap_or_default(),
        events: check.field("events", body.events).unwrap_or_default(),
        time_zone: check.field("time_zone", body.time_zone),
    };
    caller
        .call(
            check,
            request,
            |core, request| async move { core.callbacks().update_channel(request).await },
            ChannelBody::from,
        )
        .await
}

#[derive(Debug, Default, Deserialize, ToSchema)]
pub struct ChannelRequest {
    #[schema(value_type = i64)]
    pub workspace_id: Lenient<i64>,
    #[schema(value_type = i64)]
    pub channel_id: Lenient<i64>,
}

#[derive(Serialize, ToSchema)]
pub struct DeletedChannelBody {
    pub channel_id: i64,
}

/// Extension: deletes a notification channel; its messages not yet sent are dropped (owners
/// only).
#[utoipa::path(post, path = "/notifications/channels/delete", tag = "Notifications",
    request_body = ChannelRequest,
    responses((status = 200, body = DeletedChannelBody),
        (status = 403, body = ErrorBody),
        (status = 404, body = ErrorBody, description = "Notification channel not found"),
        (status = 422, body = ErrorBody)))]
pub(super) async fn delete(
    caller: Caller,
    Input(body, mut check): Input<ChannelRequest>,
) -> Result<Reply<DeletedChannelBody>, ApiError> {
    let request = proto::ChannelRequest {
        workspace_id: check.field("workspace_id", body.workspace_id),
        channel_id: check.field("channel_id", body.channel_id),
    };
    caller
        .call(
            check,
            request,
            |core, request| async move { core.callbacks().delete_channel(request).await },
            |r| DeletedChannelBody {
                channel_id: r.channel_id,
            },
        )
        .await
}

#[derive(Serialize, ToSchema)]
pub struct TestedChannelBody {
    pub channel_id: i64,
    /// The test message's delivery, as `GET /callbacks/deliveries` lists it.
    pub delivery_id: i64,
}

/// Extension: sends the channel a test message now (outside its hourly bounds; owners only).
#[utoipa::path(post, path = "/notifications/channels/test", tag = "Notifications",
    request_body = ChannelRequest,
    responses((status = 200, body = TestedChannelBody),
        (status = 403, body = ErrorBody),
        (status = 404, body = ErrorBody, description = "Notification channel not found"),
        (status = 422, body = ErrorBody)))]
pub(super) async fn test(
    caller: Caller,
    Input(body, mut check): Input<ChannelRequest>,
) -> Result<Reply<TestedChannelBody>, ApiError> {
    let request = proto::ChannelRequest {
        workspace_id: check.field("workspace_id", body.workspace_id),
        channel_id: check.field("channel_id", body.channel_id),
    };
    caller
        .call(
            check,
            request,
            |core, request| async move { core.callbacks().test_channel(request).await },
            |r| TestedChannelBody {
                channel_id: r.channel_id,
                delivery_id: r.delivery_id,
            },
        )
        .await
}
