//! Where a workspace hears about its leads: notification channels (Slack, Microsoft Teams, a
//! workspace webhook), managed by its owners, and the messages they are sent as events happen.
//!
//! A message is a row of the callback outbox (`jobs/callbacks.rs` delivers it), queued in the
//! transaction of the event that caused it: retried with backoff, in the delivery log,
//! redeliverable, paused when its receiver is unhealthy, never blocking anything else, and
//! never lost once the event is stored. Messages to people (Slack, Teams) are bounded: one per
//! lead, event and channel an hour, and [`MOST_PER_HOUR`] per channel an hour, past which one
//! message says the rest are in the app. A workspace webhook gets every event it asks for, as
//! a lead's own callback does.

mod messages;

use crate::App;
use crate::auth::Principal;
use crate::domain::callback_events::CallbackEvent;
use crate::error::FieldViolation;
use crate::store::callbacks::{self, EndpointRow, NewCallback};
use crate::store::notification_channels::{self as store, ChannelFields, ChannelRow};
use crate::store::workspaces::WorkspaceRow;
use crate::time::{self, Micros};
use crate::validate;
use crate::{Error, Result};

pub use messages::About;

/// The most channels a workspace may have.
pub const MOST_CHANNELS: usize = 20;
/// The most messages a Slack or Teams channel is sent an hour (then one summary).
pub const MOST_PER_HOUR: i64 = 100;
const HOUR: Micros = 3_600_000_000;
const NOT_FOUND: &str = "Notification channel not found";

/// Where a channel's messages go.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChannelKind {
    /// A Slack incoming webhook: Block Kit messages.
    Slack,
    /// A Microsoft Teams Workflows webhook: Adaptive Cards.
    Teams,
    /// Any HTTPS receiver: the events' JSON, signed (Standard Webhooks) as callbacks are.
    Webhook,
}

impl ChannelKind {
    pub const NAMES: [&'static str; 3] = ["slack", "teams", "webhook"];

    pub fn parse(name: &str) -> Option<Self> {
        match name {
            "slack" => Some(Self::Slack),
            "teams" => Some(Self::Teams),
            "webhook" => Some(Self::Webhook),
            _ => None,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Slack => "slack",
            Self::Teams => "teams",
            Self::Webhook => "webhook",
        }
    }

    /// The events a channel of this kind may receive: people are told what a person did, a
    /// webhook hears everything.
    pub fn events(self) -> &'static [&'static str] {
        match self {
            Self::Slack | Self::Teams => &["lead.hot", "lead.form_submitted", "lead.page_viewed"],
            Self::Webhook => &CallbackEvent::NAMES,
        }
    }

    /// What a new channel receives unless told otherwise.
    pub fn default_events(self) -> &'static [&'static str] {
        match self {
            Self::Slack | Self::Teams => &["lead.hot", "lead.form_submitted"],
            Self::Webhook => &CallbackEvent::NAMES,
        }
    }
}

/// A channel as its owners see it.
#[derive(Debug, Clone)]
pub struct Channel {
    pub id: i64,
    pub workspace_id: i64,
    pub kind: ChannelKind,
    pub url: String,
    pub events: Vec<String>,
    pub time_zone: String,
    /// Its receiving host's health: `healthy`, `failing` or `paused`.
    pub state: &'static str,
    /// Why its receiving host last failed, while not healthy.
    pub last_error: Option<String>,
    pub created_at: Micros,
    pub updated_at: Micros,
}

impl Channel {
    fn of(row: ChannelRow) -> Result<Self> {
        let kind = ChannelKind::parse(&row.kind).ok_or_else(|| {
            Error::Internal(anyhow::anyhow!(
                "channel {} has the unknown kind {}",
                row.id,
                row.kind
            ))
        })?;
        Ok(Self {
            id: row.id,
            workspace_id: row.workspace_id,
            kind,
            url: row.url,
            events: row
                .events
                .split(',')
                .filter(|e| !e.is_empty())
                .map(str::to_owned)
                .collect(),
            time_zone: row.time_zone,
            state: "healthy",
            last_error: None,
            created_at: row.created_at,
            updated_at: row.updated_at,
        })
    }

    /// With its receiving host's health from the workspace's `endpoints`.
    fn with_health(mut self, endpoints: &[EndpointRow], now: Micros) -> Self {
        let destination = callbacks::destination_of(&self.url);
        if let Some(endpoint) = endpoints.iter().find(|e| e.destination == destination) {
            self.state = crate::domain::callbacks::endpoint_state(endpoint, now);
            if self.state != "healthy" {
                self.last_error = endpoint.last_error.clone();
            }
        }
        self
    }

    fn receives(&self, event: &str) -> bool {
        self.events.iter().any(|e| e == event)
    }
}

/// A channel's settings as asked for: each `None` is the default (create) or unchanged
/// (update).
#[derive(Debug, Clone, Default)]
pub struct Settings {
    pub kind: Option<String>,
    pub url: Option<String>,
    pub events: Option<Vec<String>>,
    pub time_zone: Option<String>,
}

/// Checks `asked` over `current` (a new channel's defaults when `None`): every bad field at once.
fn checked(app: &App, asked: Settings, current: Option<&Channel>) -> Result<Channel> {
    let mut violations = Vec::new();
    let kind_name = asked
        .kind
        .map(|k| k.trim().to_owned())
        .filter(|k| !k.is_empty());
    let kind = match (kind_name, current) {
        (Some(name), _) => ChannelKind::parse(&name),
        (None, Some(current)) => Some(current.kind),
        (None, None) => {
            violations.push(FieldViolation::required("kind"));
            None
        }
    };
    if kind.is_none() && violations.is_empty() {
        violations.push(FieldViolation::new(
            "kind",
            format!(
                "The kind field must be one of {}.",
                ChannelKind::NAMES.join(", ")
            ),
        ));
    }
    let url = match (
        asked
            .url
            .map(|u| u.trim().to_owned())
            .filter(|u| !u.is_empty()),
        current,
    ) {
        (Some(url), _) => Some(url),
        (None, Some(current)) => Some(current.url.clone()),
        (None, None) => {
            violations.push(FieldViolation::required("url"));
            None
        }
    };
    if let Some(url) = &url {
        if url.chars().count() > 2048 {
            violations.push(FieldViolation::new(
                "url",
                "The url field must not be greater than 2048 characters.",
            ));
        } else if let Some(why) = crate::outbound::refusal_of(url, app.config.allow_private_network)
        {
            violations.push(FieldViolation::new(
                "url",
                format!("The url field must be a public http(s) address: {why}."),
            ));
        }
    }
    let events = match (asked.events, current, kind) {
        (Some(events), _, Some(kind)) => {
            let mut chosen: Vec<String> = Vec::new();
            for event in events.iter().map(|e| e.trim()) {
                if !kind.events().contains(&event) {
                    violations.push(FieldViolation::new(
                        "events",
                        format!(
                            "The events of a {} channel must be among {}.",
                            kind.as_str(),
                            kind.events().join(", ")
                        ),
                    ));
                    break;
                }
                if !chosen.iter().any(|c| c == event) {
                    chosen.push(event.to_owned());
                }
            }
            if chosen.is_empty() && !violations.iter().any(|v| v.field == "events") {
                violations.push(FieldViolation::required("events"));
            }
            chosen
        }
        (None, Some(current), Some(kind)) if current.kind == kind => current.events.clone(),
        (None, _, Some(kind)) => kind
            .default_events()
            .iter()
            .map(|e| (*e).to_owned())
            .collect(),
        (_, _, None) => Vec::new(),
    };
    let asked_zone = asked.time_zone.map(|z| z.trim().to_owned());
    if let Err(violation) = validate::time_zone("time_zone", asked_zone.clone()) {
        violations.push(violation);
    }
    let time_zone = match asked_zone.filter(|z| !z.is_empty()) {
        Some(zone) => zone,
        None => current.map_or_else(|| "UTC".to_owned(), |c| c.time_zone.clone()),
    };
    if !violations.is_empty() {
        return Err(Error::Invalid(violations));
    }
    Ok(Channel {
        id: current.map_or(0, |c| c.id),
        workspace_id: current.map_or(0, |c| c.workspace_id),
        kind: kind.expect("checked above"),
        url: url.expect("checked above"),
        events,
        time_zone,
        state: "healthy",
        last_error: None,
        created_at: current.map_or(0, |c| c.created_at),
        updated_at: current.map_or(0, |c| c.updated_at),
    })
}

/// A checked channel's settings as stored (`events` joined).
fn fields<'a>(channel: &'a Channel, events: &'a str) -> ChannelFields<'a> {
    ChannelFields {
        kind: channel.kind.as_str(),
        url: &channel.url,
        events,
        time_zone: &channel.time_zone,
    }
}

/// Adds a channel to the workspace. Owners only (their keys, sessions and apps).
pub async fn create(
    app: &App,
    principal: &Principal,
    workspace_id: i64,
    asked: Settings,
) -> Result<Channel> {
    principal.is_owner()?;
    let workspace = principal.reach(&app.db, workspace_id).await?;
    let channel = checked(app, asked, None)?;
    let pool = app.db.pool();
    if store::list(pool, workspace.id).await?.len() >= MOST_CHANNELS {
        return Err(Error::Precondition(
            "A workspace has at most 20 notification channels: delete one first.",
        ));
    }
    let events = channel.events.join(",");
    let id = store::insert(pool, workspace.id, &fields(&channel, &events), time::now()).await?;
    find(app, workspace.id, id).await
}

/// The workspace's channels, oldest first.
pub async fn list(app: &App, principal: &Principal, workspace_id: i64) -> Result<Vec<Channel>> {
    principal.is_owner()?;
    let workspace = principal.reach(&app.db, workspace_id).await?;
    let pool = app.db.pool();
    let rows = store::list(pool, workspace.id).await?;
    let endpoints = callbacks::list_endpoints(pool, workspace.id).await?;
    let now = time::now();
    rows.into_iter()
        .map(|row| Ok(Channel::of(row)?.with_health(&endpoints, now)))
        .collect()
}

/// Changes what is given of a channel's settings.
pub async fn update(
    app: &App,
    principal: &Principal,
    workspace_id: i64,
    channel_id: i64,
    asked: Settings,
) -> Result<Channel> {
    principal.is_owner()?;
    let workspace = reached(app, principal, workspace_id).await?.id;
    let current = find(app, workspace, channel_id).await?;
    let channel = checked(app, asked, Some(&current))?;
    let events = channel.events.join(",");
    let row = fields(&channel, &events);
    if !store::update(app.db.pool(), workspace, channel_id, &row, time::now()).await? {
        return Err(Error::NotFound(NOT_FOUND));
    }
    find(app, workspace, channel_id).await
}

/// Deletes a channel; its messages not yet sent are dropped.
pub async fn delete(
    app: &App,
    principal: &Principal,
    workspace_id: i64,
    channel_id: i64,
) -> Result<()> {
    principal.is_owner()?;
    let workspace = reached(app, principal, workspace_id).await?.id;
    let mut tx = app.db.begin_write().await?;
    if !store::delete(&mut tx, workspace, channel_id).await? {
        return Err(Error::NotFound(NOT_FOUND));
    }
    tx.commit().await?;
    Ok(())
}

/// Queues a message to the channel now (outside every bound): its delivery's id.
pub async fn test(
    app: &App,
    principal: &Principal,
    workspace_id: i64,
    channel_id: i64,
) -> Result<i64> {
    principal.is_owner()?;
    let workspace = reached(app, principal, workspace_id).await?;
    let channel = find(app, workspace.id, channel_id).await?;
    let app_url = app.config.dashboard_url("");
    let message = NewCallback {
        event: "channel.test",
        workspace_id: workspace.id,
        destination: callbacks::destination_of(&channel.url),
        job_id: String::new(),
        lead_id: 0,
        url: channel.url.clone(),
        payload: messages::test_body(channel.kind, &workspace.name, &app_url),
        channel_id: Some(channel.id),
    };
    let mut tx = app.db.begin_write().await?;
    let id = callbacks::insert_one(&mut tx, &message, time::now()).await?;
    tx.commit().await?;
    app.callbacks_due.notify_one();
    Ok(id)
}

/// The workspace a channel is asked of; one the principal cannot reach hides its channels
/// (404, as an unknown channel).
async fn reached(app: &App, principal: &Principal, workspace_id: i64) -> Result<WorkspaceRow> {
    principal
        .reach(&app.db, workspace_id)
        .await
        .map_err(|err| err.unreachable_as(Error::NotFound(NOT_FOUND)))
}

async fn find(app: &App, workspace_id: i64, channel_id: i64) -> Result<Channel> {
    let pool = app.db.pool();
    let row = store::find(pool, workspace_id, channel_id).await?;
    let channel = Channel::of(row.ok_or(Error::NotFound(NOT_FOUND))?)?;
    let endpoints = callbacks::list_endpoints(pool, workspace_id).await?;
    Ok(channel.with_health(&endpoints, time::now()))
}

/// Whether the workspace has a notification channel.
pub async fn any_channel(tx: &mut sqlx::AnyConnection, workspace_id: i64) -> Result<bool> {
    Ok(store::exists(tx, workspace_id).await?)
}

/// Queues, in `tx`, the messages `events` of `workspace_id` make for its channels; whether it
/// queued any.
pub async fn fan_out(
    tx: &mut sqlx::AnyConnection,
    app: &App,
    workspace_id: i64,
    events: &[CallbackEvent],
    now: Micros,
) -> Result<bool> {
    if events.is_empty() {
        return Ok(false);
    }
    let rows = store::list(&mut *tx, workspace_id).await?;
    if rows.is_empty() {
        return Ok(false);
    }
    let mut queued = false;
    let channels: Vec<Channel> = rows.into_iter().map(Channel::of).collect::<Result<_>>()?;
    let mut to_webhooks = Vec::new();
    for event in events {
        for channel in channels.iter().filter(|c| c.receives(event.name())) {
            match channel.kind {
                ChannelKind::Webhook => {
                    let payload = messages::event_body(event);
                    to_webhooks.push(message(workspace_id, channel, event, payload));
                }
                ChannelKind::Slack | ChannelKind::Teams => {
                    // Queued one at a time, so that the next one's bound counts it.
                    if let Some(payload) = to_people(tx, app, channel, event, now).await? {
                        let one = message(workspace_id, channel, event, payload);
                        callbacks::insert_one(&mut *tx, &one, now).await?;
                        queued = true;
                    }
                }
            }
        }
    }
    callbacks::insert_many(tx, &to_webhooks, now).await?;
    Ok(queued || !to_webhooks.is_empty())
}

/// The message a Slack or Teams channel is sent about `event`, if its bounds allow one: the
/// event's, or the one saying the hour's bound is reached.
async fn to_people(
    tx: &mut sqlx::AnyConnection,
    app: &App,
    channel: &Channel,
    event: &CallbackEvent,
    now: Micros,
) -> Result<Option<String>> {
    let lead_id = event.lead_id();
    let (all, same) =
        store::sent_since(&mut *tx, channel.id, lead_id, event.name(), now - HOUR).await?;
    if same > 0 || all > MOST_PER_HOUR {
        return Ok(None);
    }
    if all == MOST_PER_HOUR {
        let app_url = app.config.dashboard_url("");
        return Ok(Some(messages::summary_body(
            channel.kind,
            MOST_PER_HOUR,
            &app_url,
        )));
    }
    let Some(card) = store::lead_card(&mut *tx, lead_id, event.campaign_id()).await? else {
        return Ok(None);
    };
    let score = crate::domain::score_decay::at(card.score_base, now);
    let about = About::of(
        card,
        score,
        app.config.dashboard_url(&format!("/leads/{lead_id}")),
    );
    Ok(Some(messages::body(channel.kind, event, &about)))
}

fn message(
    workspace_id: i64,
    channel: &Channel,
    event: &CallbackEvent,
    payload: String,
) -> NewCallback {
    NewCallback {
        event: event.name(),
        workspace_id,
        destination: callbacks::destination_of(&channel.url),
        job_id: event.job_id().unwrap_or_default().to_owned(),
        lead_id: event.lead_id(),
        url: channel.url.clone(),
        payload,
        channel_id: Some(channel.id),
    }
}
