//! The one way an event of [`crate::domain::callback_events`] is announced: in the caller's
//! transaction, into the outbox that `jobs/callbacks.rs` delivers from once it commits, for
//! the lead's own callback address and the workspace's notification channels
//! ([`crate::domain::notifications`]).

use sqlx::AnyConnection;

use crate::domain::callback_events::CallbackEvent;
use crate::domain::notifications;
use crate::store::callbacks::{self, NewCallback};
use crate::store::leads;
use crate::time::Micros;
use crate::{App, Result};

/// Where events go: the workspace (its notification channels hear them), the lead's own
/// callback address if it has one, and the job that led to them (`None` for events that come
/// from no job).
pub struct Receiver<'a> {
    pub workspace_id: i64,
    pub url: Option<&'a str>,
    pub job_id: Option<&'a str>,
}

/// Announces `events` in `tx`: queued for the lead's callback address, if any, and as messages
/// to each of the workspace's notification channels that receives them; delivered once the
/// transaction commits, never before and never lost after. Answers whether anything was
/// queued (the deliverer is then woken).
pub async fn announce(
    tx: &mut AnyConnection,
    app: &App,
    to: &Receiver<'_>,
    events: Vec<CallbackEvent>,
    now: Micros,
) -> Result<bool> {
    let mut queued = false;
    if let Some(url) = to.url {
        let destination = callbacks::destination_of(url);
        let rows: Vec<NewCallback> = events
            .iter()
            .map(|event| NewCallback {
                event: event.name(),
                workspace_id: to.workspace_id,
                destination: destination.clone(),
                job_id: to.job_id.unwrap_or_default().to_owned(),
                lead_id: event.lead_id(),
                url: url.to_owned(),
                payload: serde_json::to_string(event).expect("a callback body serialises"),
                channel_id: None,
            })
            .collect();
        callbacks::insert_many(&mut *tx, &rows, now).await?;
        queued = !rows.is_empty();
    }
    queued |= notifications::fan_out(tx, app, to.workspace_id, &events, now).await?;
    Ok(queued)
}

/// Whether events of `workspace_id` would be heard by anyone but a lead's own callback: its
/// notification channels (so that emitters make events only when someone listens).
pub async fn heard_in(tx: &mut AnyConnection, workspace_id: i64) -> Result<bool> {
    notifications::any_channel(tx, workspace_id).await
}

/// Who hears events about one lead: its own callback address, if it was upserted with one, and
/// the workspace's channels.
pub struct LeadListeners {
    pub callback_url: Option<String>,
}

/// The listeners of events about `lead_id`; `None` when nobody listens, so that the emitter
/// makes no event.
pub async fn listeners_of_lead(
    tx: &mut AnyConnection,
    workspace_id: i64,
    lead_id: i64,
) -> Result<Option<LeadListeners>> {
    let callback_url = leads::callback_url(&mut *tx, lead_id).await?;
    if callback_url.is_none() && !heard_in(tx, workspace_id).await? {
        return Ok(None);
    }
    Ok(Some(LeadListeners { callback_url }))
}
