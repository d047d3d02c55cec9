//! Where a workspace hears about its leads: notification channels (Slack, Microsoft Teams,
//! email to teammates, a workspace webhook), managed by its owners, and the messages they are
//! sent as events happen.
//!
//! A message is a row of the callback outbox (`jobs/callbacks.rs` delivers it), queued in the
//! transaction of the event that caused it: retried with backoff, in the delivery log,
//! redeliverable, paused when its receiver is unhealthy, never blocking anything else, and
//! never lost once the event is stored. Messages to people (Slack, Teams, email) are bounded: one per
//! lead, event and channel an hour, and [`MOST_PER_HOUR`] per channel an hour, past which one
//! message says the rest are in the app. A workspace webhook gets every event it asks for, as
//! a lead's own callback does.
//!
//! An email channel goes to teammates only (never to a stranger's address: lps is no relay),
//! and only to those still in the account when a message is queued. Each copy carries a
//! one-click unsubscribe link ([`unsubscribe`]) that takes that address off the channel.

pub mod digest;

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
use messages::Message;

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
    /// Teammates' addresses, over the configured SMTP server (`--smtp-url`).
    Email,
    /// Any HTTPS receiver: the events' JSON, signed (Standard Webhooks) as callbacks are.
    Webhook,
}

/// The morning digest's name among a channel's events.
pub const DIGEST: &str = "digest.daily";

impl ChannelKind {
    pub const NAMES: [&'static str; 4] = ["slack", "teams", "email", "webhook"];

    pub fn parse(name: &str) -> Option<Self> {
        match name {
            "slack" => Some(Self::Slack),
            "teams" => Some(Self::Teams),
            "email" => Some(Self::Email),
            "webhook" => Some(Self::Webhook),
            _ => None,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Slack => "slack",
            Self::Teams => "teams",
            Self::Email => "email",
            Self::Webhook => "webhook",
        }
    }

    /// The events a channel of this kind may receive: people are told what a person did (and
    /// may have a morning digest), a webhook hears everything.
    pub fn events(self) -> &'static [&'static str] {
        match self {
            Self::Slack | Self::Teams | Self::Email => &[
                "lead.hot",
                "lead.form_submitted",
                "lead.page_viewed",
                DIGEST,
            ],
            Self::Webhook => &CallbackEvent::NAMES,
        }
    }

    /// What a new channel receives unless told otherwise.
    pub fn default_events(self) -> &'static [&'static str] {
        match self {
            Self::Slack | Self::Teams | Self::Email => &["lead.hot", "lead.form_submitted"],
            Self::Webhook => &CallbackEvent::NAMES,
        }
    }
}

/// The most teammates one email channel goes to.
pub const MOST_EMAILS: usize = crate::mailer::MOST_RECIPIENTS;
/// How an email channel's `url` starts (RFC 6068); its addresses follow, comma-separated.
const MAILTO: &str = "mailto:";

/// A channel as its owners see it.
#[derive(Debug, Clone)]
pub struct Channel {
    pub id: i64,
    pub workspace_id: i64,
    pub kind: ChannelKind,
    /// For an email channel, `mailto:` and its addresses.
    pub url: String,
    /// An email channel's teammates (empty for the other kinds).
    pub emails: Vec<String>,
    pub events: Vec<String>,
    pub time_zone: String,
    /// Keys its unsubscribe links.
    secret: String,
    /// The local date whose morning digest was last queued.
    digest_day: Option<String>,
    /// Its receiver's health (kept per channel): `healthy`, `failing` or `paused`.
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
            emails: emails_of(&row.url),
            secret: row.secret,
            digest_day: row.digest_day,
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
        let destination = callbacks::channel_destination(&self.url, self.id);
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

/// The addresses of a `mailto:` URL (none for any other).
fn emails_of(url: &str) -> Vec<String> {
    url.strip_prefix(MAILTO)
        .map(|list| {
            list.split(',')
                .filter(|e| !e.is_empty())
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default()
}

/// A channel's settings as asked for: each `None` is the default (create) or unchanged
/// (update).
#[derive(Debug, Clone, Default)]
pub struct Settings {
    pub kind: Option<String>,
    pub url: Option<String>,
    pub emails: Option<Vec<String>>,
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
    let url = match kind {
        Some(ChannelKind::Email) => {
            checked_emails(app, asked.url, asked.emails, current, &mut violations)
        }
        _ => checked_url(app, asked.url, asked.emails, current, &mut violations),
    };
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
    let url = url.expect("checked above");
    Ok(Channel {
        id: current.map_or(0, |c| c.id),
        workspace_id: current.map_or(0, |c| c.workspace_id),
        kind: kind.expect("checked above"),
        emails: emails_of(&url),
        secret: current.map_or_else(String::new, |c| c.secret.clone()),
        digest_day: current.and_then(|c| c.digest_day.clone()),
        url,
        events,
        time_zone,
        state: "healthy",
        last_error: None,
        created_at: current.map_or(0, |c| c.created_at),
        updated_at: current.map_or(0, |c| c.updated_at),
    })
}

/// A Slack, Teams or webhook channel's address: a public http(s) URL.
fn checked_url(
    app: &App,
    url: Option<String>,
    emails: Option<Vec<String>>,
    current: Option<&Channel>,
    violations: &mut Vec<FieldViolation>,
) -> Option<String> {
    if emails.is_some_and(|e| !e.is_empty()) {
        violations.push(FieldViolation::new(
            "emails",
            "Only an email channel takes emails.",
        ));
    }
    let url = match (
        url.map(|u| u.trim().to_owned()).filter(|u| !u.is_empty()),
        current,
    ) {
        (Some(url), _) => url,
        (None, Some(current)) if current.kind != ChannelKind::Email => current.url.clone(),
        (None, _) => {
            violations.push(FieldViolation::required("url"));
            return None;
        }
    };
    if url.chars().count() > 2048 {
        violations.push(FieldViolation::new(
            "url",
            "The url field must not be greater than 2048 characters.",
        ));
    } else if let Some(why) = crate::outbound::refusal_of(&url, app.config.allow_private_network) {
        violations.push(FieldViolation::new(
            "url",
            format!("The url field must be a public http(s) address: {why}."),
        ));
    }
    Some(url)
}

/// An email channel's teammates (whether they are teammates is checked by
/// [`teammates_only`]), as its `mailto:` URL; SMTP must be configured.
fn checked_emails(
    app: &App,
    url: Option<String>,
    emails: Option<Vec<String>>,
    current: Option<&Channel>,
    violations: &mut Vec<FieldViolation>,
) -> Option<String> {
    if app.mailer.is_none() {
        violations.push(FieldViolation::new(
            "kind",
            "Email channels need an SMTP server: start lps with --smtp-url.",
        ));
    }
    if url.is_some_and(|u| !u.trim().is_empty()) {
        violations.push(FieldViolation::new(
            "url",
            "An email channel is sent to its emails, not to a url.",
        ));
    }
    let asked = match (emails.filter(|e| !e.is_empty()), current) {
        (Some(emails), _) => emails,
        (None, Some(current)) if current.kind == ChannelKind::Email => current.emails.clone(),
        (None, _) => {
            violations.push(FieldViolation::required("emails"));
            return None;
        }
    };
    let mut chosen: Vec<String> = Vec::new();
    for email in &asked {
        let email = email.trim().to_lowercase();
        // Checked as a lead's email is; a comma would split the `mailto:` list.
        if crate::domain::lead::email(&email).is_err() || email.is_empty() || email.contains(',') {
            violations.push(FieldViolation::new(
                "emails",
                format!("The emails must be addresses; {email:?} is not."),
            ));
            return None;
        }
        if !chosen.contains(&email) {
            chosen.push(email);
        }
    }
    if chosen.len() > MOST_EMAILS {
        violations.push(FieldViolation::new(
            "emails",
            format!("An email channel goes to at most {MOST_EMAILS} teammates."),
        ));
    }
    Some(format!("{MAILTO}{}", chosen.join(",")))
}

/// Refuses an email channel whose addresses are not all the account's teammates'.
async fn teammates_only(app: &App, workspace: &WorkspaceRow, channel: &Channel) -> Result<()> {
    if channel.kind != ChannelKind::Email {
        return Ok(());
    }
    let teammates = store::teammate_emails(app.db.pool(), workspace.id).await?;
    if let Some(stranger) = channel.emails.iter().find(|e| !teammates.contains(e)) {
        return Err(Error::Invalid(vec![FieldViolation::new(
            "emails",
            format!(
                "An email channel goes to teammates only; {stranger} is not one of this \
                 account's teammates (invite them first)."
            ),
        )]));
    }
    Ok(())
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
    let mut asked = asked;
    // A channel's days are the workspace's unless it says otherwise.
    if asked
        .time_zone
        .as_deref()
        .is_none_or(|z| z.trim().is_empty())
    {
        asked.time_zone = workspace.time_zone.clone();
    }
    let channel = checked(app, asked, None)?;
    teammates_only(app, &workspace, &channel).await?;
    let events = channel.events.join(",");
    let secret = crate::random::token(32);
    // Counted and added in one transaction holding the workspace, so two creates at once
    // cannot both see 19 and make a 21st.
    let mut tx = app.db.begin_write().await?;
    crate::store::workspaces::lock(&mut tx, app.db.dialect(), workspace.id).await?;
    if store::list(&mut *tx, workspace.id).await?.len() >= MOST_CHANNELS {
        return Err(Error::Precondition(
            "A workspace has at most 20 notification channels: delete one first.",
        ));
    }
    let id = store::insert(
        &mut *tx,
        workspace.id,
        &fields(&channel, &events),
        &secret,
        time::now(),
    )
    .await?;
    tx.commit().await?;
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
    let reached = reached(app, principal, workspace_id).await?;
    let workspace = reached.id;
    let current = find(app, workspace, channel_id).await?;
    let channel = checked(app, asked, Some(&current))?;
    teammates_only(app, &reached, &channel).await?;
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
    let body = messages::test_body(channel.kind, &workspace.name, &app_url);
    let mut tx = app.db.begin_write().await?;
    let payload = payload(&mut tx, app, &channel, body).await?;
    let message = to_channel(&channel, "channel.test", 0, "", payload);
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
                    to_webhooks.push(about_event(channel, event, payload));
                }
                ChannelKind::Slack | ChannelKind::Teams | ChannelKind::Email => {
                    // Queued one at a time, so that the next one's bound counts it.
                    if let Some(body) = to_people(tx, app, channel, event, now).await? {
                        let payload = payload(tx, app, channel, body).await?;
                        let one = about_event(channel, event, payload);
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

/// The message a Slack, Teams or email channel is sent about `event`, if its bounds allow
/// one: the event's, or the one saying the hour's bound is reached.
async fn to_people(
    tx: &mut sqlx::AnyConnection,
    app: &App,
    channel: &Channel,
    event: &CallbackEvent,
    now: Micros,
) -> Result<Option<Message>> {
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

/// A message as queued: an email addressed to those of the channel's teammates still in the
/// account, each with their own unsubscribe link.
async fn payload(
    conn: &mut sqlx::AnyConnection,
    app: &App,
    channel: &Channel,
    message: Message,
) -> Result<String> {
    match message {
        Message::Json(body) => Ok(body),
        Message::Mail(mut mail) => {
            let teammates = store::teammate_emails(&mut *conn, channel.workspace_id).await?;
            mail.to = channel
                .emails
                .iter()
                .filter(|e| teammates.contains(e))
                .cloned()
                .collect();
            mail.unsubscribe = mail
                .to
                .iter()
                .map(|to| (to.clone(), unsubscribe_link(app, channel, to)))
                .collect();
            Ok(serde_json::to_string(&mail).expect("a mail serialises"))
        }
    }
}

/// What proves an unsubscribe link was sent to `email` by channel `channel_id`: its key is
/// the first 16 bytes of this HMAC, in hex.
fn unsubscribe_mac(secret: &str, channel_id: i64, email: &str) -> hmac::Hmac<sha2::Sha256> {
    use hmac::Mac;
    let mut mac = hmac::Hmac::<sha2::Sha256>::new_from_slice(secret.as_bytes())
        .expect("HMAC takes keys of any length");
    mac.update(format!("unsubscribe:{channel_id}:{email}").as_bytes());
    mac
}

fn unsubscribe_key(secret: &str, channel_id: i64, email: &str) -> String {
    use hmac::Mac;
    let tag = unsubscribe_mac(secret, channel_id, email)
        .finalize()
        .into_bytes();
    hex::encode(&tag[..16])
}

/// Whether `key` is the link's key, compared in constant time.
fn unsubscribe_key_holds(secret: &str, channel_id: i64, email: &str, key: &str) -> bool {
    use hmac::Mac;
    let mut tag = [0u8; 16];
    !secret.is_empty()
        && hex::decode_to_slice(key.trim(), &mut tag).is_ok()
        && unsubscribe_mac(secret, channel_id, email)
            .verify_truncated_left(&tag)
            .is_ok()
}

fn unsubscribe_link(app: &App, channel: &Channel, email: &str) -> String {
    let query = form_urlencoded::Serializer::new(String::new())
        .append_pair("channel", &channel.id.to_string())
        .append_pair("email", email)
        .append_pair("key", &unsubscribe_key(&channel.secret, channel.id, email))
        .finish();
    app.config.dashboard_url(&format!("/unsubscribe?{query}"))
}

/// Takes `email` off email channel `channel_id`, if `key` is the one its messages to them
/// carried (no credential: the link is the proof). Whether it was still on the channel; a
/// wrong key, or a channel since deleted, is a 404.
pub async fn unsubscribe(app: &App, channel_id: i64, email: &str, key: &str) -> Result<bool> {
    const NOT_A_LINK: &str = "This unsubscribe link is not valid (its channel may be deleted)";
    let email = email.trim().to_lowercase();
    let pool = app.db.pool();
    let row = store::find_any(pool, channel_id)
        .await?
        .ok_or(Error::NotFound(NOT_A_LINK))?;
    let channel = Channel::of(row)?;
    let proven = channel.kind == ChannelKind::Email
        && unsubscribe_key_holds(&channel.secret, channel.id, &email, key);
    if !proven {
        return Err(Error::NotFound(NOT_A_LINK));
    }
    let remaining: Vec<&str> = channel
        .emails
        .iter()
        .map(String::as_str)
        .filter(|e| *e != email)
        .collect();
    if remaining.len() == channel.emails.len() {
        return Ok(false);
    }
    let url = format!("{MAILTO}{}", remaining.join(","));
    if !store::set_url(pool, channel.id, &channel.url, &url, time::now()).await? {
        // Changed by an owner meanwhile: the link is tried again on what it is now.
        return Err(Error::Precondition(
            "The channel changed meanwhile: open the link again.",
        ));
    }
    tracing::info!(
        channel = channel.id,
        "an address unsubscribed from an email channel"
    );
    Ok(true)
}

/// A message to a channel, as the outbox keeps it: its receiver's health is the channel's own.
fn to_channel(
    channel: &Channel,
    event: &'static str,
    lead_id: i64,
    job_id: &str,
    payload: String,
) -> NewCallback {
    NewCallback {
        event,
        workspace_id: channel.workspace_id,
        destination: callbacks::channel_destination(&channel.url, channel.id),
        job_id: job_id.to_owned(),
        lead_id,
        url: channel.url.clone(),
        payload,
        channel_id: Some(channel.id),
    }
}

/// A message to a channel about `event`.
fn about_event(channel: &Channel, event: &CallbackEvent, payload: String) -> NewCallback {
    to_channel(
        channel,
        event.name(),
        event.lead_id(),
        event.job_id().unwrap_or_default(),
        payload,
    )
}
