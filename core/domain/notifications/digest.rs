//! The morning digest: at 08:00 in a channel's time zone, yesterday's engaged leads (there)
//! and what each did, for the Slack, Teams and email channels that ask for `digest.daily`.
//! Nothing is sent for a day when nothing happened.
//!
//! Every process looks once a minute; the first to find a channel past 08:00 whose digest for
//! today is not yet queued claims it (`digest_day`, set in the transaction that queues the
//! message), so a day's digest is queued once whatever the number of processes, and a process
//! that was down at 08:00 sends it when it is back (the same day). The message is a row of
//! the callback outbox, delivered, retried and logged as every channel message is.

use std::time::Duration;

use jiff::Timestamp;
use jiff::tz::TimeZone;

use super::messages::{self, DigestLine};
use super::{Channel, ChannelKind, DIGEST};
use crate::local_days::LocalDays;
use crate::store::callbacks;
use crate::store::notification_channels as store;
use crate::time::Micros;
use crate::{App, Result, time};

/// The local hour a digest is sent at.
pub const HOUR: i8 = 8;
/// The most leads a digest names (the rest are counted, with a link to the app).
pub const MOST_LINES: i64 = 20;
const EVERY: Duration = Duration::from_secs(60);

/// Queues the digests due, once a minute, until the process ends.
pub async fn send_due_forever(app: App) {
    loop {
        if let Err(err) = send_due(&app, time::now()).await {
            tracing::warn!(error = %err, "morning digests not queued; trying again in a minute");
        }
        tokio::time::sleep(EVERY).await;
    }
}

/// Queues every digest due at `now`: how many were queued.
pub async fn send_due(app: &App, now: Micros) -> Result<usize> {
    let mut queued = 0;
    for row in store::asking_for(app.db.pool(), DIGEST).await? {
        let channel = Channel::of(row)?;
        if channel.kind == ChannelKind::Webhook {
            continue;
        }
        let Some(due) = due(&channel, now) else {
            continue;
        };
        if send(app, &channel, &due, now).await? {
            queued += 1;
        }
    }
    if queued > 0 {
        app.callbacks_due.notify_one();
    }
    Ok(queued)
}

/// The local day a channel's digest is for, when one is due.
#[derive(Debug, PartialEq)]
struct Due {
    /// Today there (`2026-11-27`): what `digest_day` is set to once queued.
    today: String,
    /// Yesterday there, in words (`Thursday 26 November`).
    yesterday: String,
    /// Yesterday's first instant and the first instant after it.
    from: Micros,
    to: Micros,
}

/// Whether the channel's digest is due at `now`: past 08:00 in its time zone, and today's
/// not yet queued.
fn due(channel: &Channel, now: Micros) -> Option<Due> {
    let zone = TimeZone::get(&channel.time_zone).ok()?;
    let local = Timestamp::from_microsecond(now).ok()?.to_zoned(zone);
    if local.hour() < HOUR {
        return None;
    }
    let today = local.date().to_string();
    if channel.digest_day.as_deref() == Some(today.as_str()) {
        return None;
    }
    let days = LocalDays::named(&channel.time_zone)?;
    let day = days.day_of(now);
    let yesterday = local.date().yesterday().ok()?;
    Some(Due {
        today,
        yesterday: yesterday.strftime("%A %-d %B").to_string(),
        from: days.start_of(day - 1),
        to: days.start_of(day),
    })
}

/// Claims and queues one channel's digest; whether a message was queued (not when nothing
/// happened yesterday, nor when another process claimed it first).
async fn send(app: &App, channel: &Channel, due: &Due, now: Micros) -> Result<bool> {
    let mut tx = app.db.begin_write().await?;
    if !store::claim_digest(&mut tx, channel.id, &due.today).await? {
        return Ok(false);
    }
    let (engaged, total) =
        store::engaged_between(&mut tx, channel.workspace_id, due.from, due.to, MOST_LINES).await?;
    if engaged.is_empty() {
        tx.commit().await?;
        return Ok(false);
    }
    let mut lines = Vec::with_capacity(engaged.len());
    for lead in engaged {
        let card = store::lead_card(&mut tx, lead.lead_id, lead.campaign_id).await?;
        let score = card
            .as_ref()
            .map_or(0.0, |c| crate::domain::score_decay::at(c.score_base, now));
        let about = messages::About::of(
            card.unwrap_or_default(),
            score,
            app.config
                .dashboard_url(&format!("/leads/{}", lead.lead_id)),
        );
        lines.push(DigestLine::of(about, &lead));
    }
    let workspace = crate::store::workspaces::get(&mut *tx, channel.workspace_id)
        .await?
        .map(|w| w.name)
        .unwrap_or_default();
    let body = messages::digest_body(
        channel.kind,
        &workspace,
        &due.yesterday,
        &lines,
        total,
        &app.config.dashboard_url(""),
    );
    let payload = super::payload(&mut tx, app, channel, body).await?;
    let message = super::to_channel(channel, DIGEST, 0, "", payload);
    callbacks::insert_one(&mut tx, &message, now).await?;
    tx.commit().await?;
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::admin::{BootstrapInput, bootstrap};
    use crate::store::notification_channels::ChannelFields;

    fn at(text: &str) -> Micros {
        text.parse::<Timestamp>().unwrap().as_microsecond()
    }

    async fn channel(app: &App, workspace_id: i64, zone: &str) -> i64 {
        let fields = ChannelFields {
            kind: "slack",
            url: "https://hooks.slack.com/services/T/B/X",
            events: "lead.hot,digest.daily",
            time_zone: zone,
        };
        store::insert(app.db.pool(), workspace_id, &fields, "secret", 0)
            .await
            .unwrap()
    }

    async fn engaged(app: &App, workspace_id: i64, lead_id: i64, name: &str, at: Micros) {
        let pool = app.db.pool();
        sqlx::query(
            "INSERT INTO leads (id, workspace_id, slug, first_name, custom_values, created_at,
                                updated_at)
             VALUES ($1, $2, $3, $4, '{}', 0, 0)",
        )
        .bind(lead_id)
        .bind(workspace_id)
        .bind(format!("lead-{lead_id}"))
        .bind(name)
        .execute(pool)
        .await
        .unwrap();
        for kind in ["view", "click", "view"] {
            sqlx::query(
                "INSERT INTO page_events (workspace_id, campaign_id, lead_id, kind, visitor,
                                          is_bot, created_at)
                 VALUES ($1, 1, $2, $3, 'c:one', 0, $4)",
            )
            .bind(workspace_id)
            .bind(lead_id)
            .bind(kind)
            .bind(at)
            .execute(pool)
            .await
            .unwrap();
        }
    }

    async fn digests(app: &App) -> Vec<(i64, String)> {
        sqlx::query_as("SELECT channel_id, payload FROM callbacks WHERE event = $1 ORDER BY id")
            .bind(DIGEST)
            .fetch_all(app.db.pool())
            .await
            .unwrap()
    }

    #[tokio::test]
    async fn a_digest_is_sent_once_a_day_after_eight_there_about_yesterday_there() {
        let (_dir, app) = crate::app::test_app().await;
        let made = bootstrap(&app.db, &BootstrapInput::default())
            .await
            .unwrap();
        let ws = made.workspace_id;
        // Nov 25 05:00 UTC is Nov 24 (18:00) in Pago Pago and Nov 25 (19:00) in Kiritimati;
        // Nov 25 12:00 UTC is Nov 25 (01:00) in Pago Pago and Nov 26 (02:00) in Kiritimati.
        engaged(&app, ws, 501, "Ada", at("2026-11-25T05:00:00Z")).await;
        engaged(&app, ws, 502, "Grace", at("2026-11-25T12:00:00Z")).await;
        let utc = channel(&app, ws, "UTC").await;
        let pago = channel(&app, ws, "Pacific/Pago_Pago").await;
        let kiritimati = channel(&app, ws, "Pacific/Kiritimati").await;

        // Nov 26 07:59 UTC: not yet 08:00 in UTC; 20:59 on Nov 25 in Pago Pago, whose
        // yesterday saw Ada; 21:59 on Nov 26 in Kiritimati, whose yesterday saw Ada too.
        assert_eq!(send_due(&app, at("2026-11-26T07:59:00Z")).await.unwrap(), 2);
        let sent = digests(&app).await;
        let of = |sent: &[(i64, String)], channel: i64| {
            sent.iter()
                .rev()
                .find(|(id, _)| *id == channel)
                .map(|(_, payload)| payload.clone())
                .unwrap_or_else(|| panic!("a digest for {channel}: {sent:?}"))
        };
        let said = of(&sent, pago);
        assert!(said.contains("Ada") && !said.contains("Grace"), "{said}");
        assert!(said.contains("Tuesday 24 November"), "{said}");
        let said = of(&sent, kiritimati);
        assert!(said.contains("Ada") && !said.contains("Grace"), "{said}");
        assert!(said.contains("Wednesday 25 November"), "{said}");

        // 08:00 in UTC: its digest of Nov 25 names both; no channel is sent one twice.
        assert_eq!(send_due(&app, at("2026-11-26T08:00:00Z")).await.unwrap(), 1);
        let sent = digests(&app).await;
        assert_eq!(sent.len(), 3);
        let said = of(&sent, utc);
        assert!(said.contains("Ada") && said.contains("Grace"), "{said}");
        assert!(said.contains("2 leads"), "{said}");
        assert!(
            said.contains("viewed their page 2 times, clicked 1 time"),
            "{said}"
        );
        assert_eq!(send_due(&app, at("2026-11-26T09:00:00Z")).await.unwrap(), 0);

        // A day later: Grace's day in Pago Pago (Nov 25) and in Kiritimati (Nov 26); nothing
        // happened on Nov 26 in UTC, so it is sent nothing.
        assert_eq!(send_due(&app, at("2026-11-27T08:01:00Z")).await.unwrap(), 2);
        let sent = digests(&app).await;
        assert_eq!(sent.len(), 5);
        assert!(of(&sent, pago).contains("Grace"));
        assert!(of(&sent, kiritimati).contains("Grace"));
        // And a day when nothing happened anywhere: nothing, all day.
        assert_eq!(send_due(&app, at("2026-11-28T08:01:00Z")).await.unwrap(), 0);
        assert_eq!(send_due(&app, at("2026-11-28T20:00:00Z")).await.unwrap(), 0);
        assert_eq!(digests(&app).await.len(), 5);
    }
}
