//! What a workspace sees and does about its callbacks: the delivery log, redelivery, the health
//! of its receiving hosts, and rotating the secret that signs them. Delivering is
//! [`crate::jobs::callbacks`].

use std::time::Duration;

use crate::App;
use crate::auth::Principal;
use crate::domain::webhook_signature;
use crate::store::callbacks::{self, DeliveryFilter, DeliveryRow, EndpointRow};
use crate::store::workspaces;
use crate::{Error, Result, time};

/// Most deliveries listed at once.
pub const MAX_LIMIT: i64 = 100;
/// How long a rotated secret keeps signing beside the new one, unless asked otherwise.
pub const DEFAULT_OVERLAP: Duration = Duration::from_secs(24 * 3600);
/// The longest overlap a rotation may ask for.
pub const MAX_OVERLAP: Duration = Duration::from_secs(7 * 24 * 3600);

/// A page of the workspace's delivery log, newest first.
pub async fn list(
    app: &App,
    principal: &Principal,
    workspace_id: i64,
    filter: &DeliveryFilter,
    limit: i64,
) -> Result<Vec<DeliveryRow>> {
    let workspace = principal.reach(&app.db, workspace_id).await?;
    Ok(callbacks::list_deliveries(app.db.pool(), workspace.id, filter, limit).await?)
}

/// Sends a delivered or given-up callback again, with the same `webhook-id` and a fresh round
/// of attempts; its receiving host's pause, if any, ends now (the owner asked). One still
/// pending is already queued: a conflict saying so.
pub async fn redeliver(
    app: &App,
    principal: &Principal,
    workspace_id: i64,
    delivery_id: i64,
) -> Result<DeliveryRow> {
    const NOT_FOUND: &str = "Delivery not found";
    let workspace = principal
        .reach(&app.db, workspace_id)
        .await
        .map_err(|err| err.unreachable_as(Error::NotFound(NOT_FOUND)))?;
    let pool = app.db.pool();
    let now = time::now();
    let delivery = callbacks::find_delivery(pool, workspace.id, delivery_id)
        .await?
        .ok_or(Error::NotFound(NOT_FOUND))?;
    if !callbacks::redeliver(pool, workspace.id, delivery_id, now).await? {
        return Err(Error::Precondition(
            "This delivery is already queued: it is attempted at its next_attempt_at.",
        ));
    }
    callbacks::unpause_endpoint(pool, workspace.id, &delivery.destination, now).await?;
    app.callbacks_due.notify_one();
    callbacks::find_delivery(pool, workspace.id, delivery_id)
        .await?
        .ok_or(Error::NotFound(NOT_FOUND))
}

/// The workspace's receiving hosts that failed lately or are paused.
pub async fn endpoints(
    app: &App,
    principal: &Principal,
    workspace_id: i64,
) -> Result<Vec<EndpointRow>> {
    let workspace = principal.reach(&app.db, workspace_id).await?;
    Ok(callbacks::list_endpoints(app.db.pool(), workspace.id).await?)
}

/// A receiving host's state: `paused` (unhealthy, its callbacks held), `failing` (its last
/// attempts failed) or `healthy`.
pub fn endpoint_state(row: &EndpointRow, now: time::Micros) -> &'static str {
    if row.paused_until.is_some_and(|until| until > now) || row.unhealthy_since.is_some() {
        "paused"
    } else if row.consecutive_failures > 0 {
        "failing"
    } else {
        "healthy"
    }
}

/// A rotated secret: the new one, and until when the old one still signs beside it.
#[derive(Debug, Clone)]
pub struct Rotated {
    pub secret: String,
    pub previous_valid_until: time::Micros,
}

/// Replaces the workspace's callback secret; callbacks carry signatures by both until the
/// overlap ends. The owners' (like keys), and never an app's: a secret outlives a grant.
pub async fn rotate_secret(
    app: &App,
    principal: &Principal,
    workspace_id: i64,
    overlap: Duration,
) -> Result<Rotated> {
    principal.may_manage_keys()?;
    let workspace = principal.reach(&app.db, workspace_id).await?;
    let secret = webhook_signature::new_secret();
    let previous_valid_until = time::now() + overlap.as_micros() as i64;
    workspaces::rotate_callback_secret(app.db.pool(), workspace.id, &secret, previous_valid_until)
        .await?;
    Ok(Rotated {
        secret,
        previous_valid_until,
    })
}
