//! Telling other processes on one PostgreSQL what changed (`NOTIFY` at commit) and listening
//! for it (`LISTEN`, reconnecting); nothing on SQLite, where one process serves a database.

use super::Dialect;

/// Tells other processes listening on `channel` (PostgreSQL `LISTEN`) when the transaction
/// commits. Nothing on SQLite, where a database has one process serving it.
pub async fn notify(
    conn: &mut sqlx::AnyConnection,
    dialect: Dialect,
    channel: &str,
    payload: &str,
) -> sqlx::Result<()> {
    if dialect == Dialect::Postgres {
        sqlx::query("SELECT pg_notify($1, $2)")
            .bind(channel)
            .bind(payload)
            .execute(conn)
            .await?;
    }
    Ok(())
}

/// Calls `on_payload` with every PostgreSQL notification on `channel`, reconnecting a second
/// after the connection drops. Runs until the process ends.
pub async fn listen_forever(database_url: &str, channel: &str, on_payload: impl FnMut(&str)) {
    listen_forever_resyncing(database_url, channel, |_| {}, on_payload).await;
}

/// [`listen_forever`], calling `on_listening(true)` each time it (re)starts listening and
/// `on_listening(false)` when the connection is lost: whatever was notified while it was not
/// listening is lost, so a listener that must not miss anything starts afresh.
pub async fn listen_forever_resyncing(
    database_url: &str,
    channel: &str,
    mut on_listening: impl FnMut(bool),
    mut on_payload: impl FnMut(&str),
) {
    loop {
        match sqlx::postgres::PgListener::connect(database_url).await {
            Ok(mut listener) => {
                if let Err(err) = listener.listen(channel).await {
                    tracing::warn!(error = %err, channel, "cannot LISTEN");
                } else {
                    on_listening(true);
                    // `try_recv` says when the connection was lost (`recv` would reconnect
                    // silently, losing what was notified meanwhile): start afresh then.
                    while let Ok(Some(notification)) = listener.try_recv().await {
                        on_payload(notification.payload());
                    }
                    on_listening(false);
                }
            }
            Err(err) => tracing::warn!(error = %err, channel, "listener cannot connect"),
        }
        tokio::time::sleep(std::time::Duration::from_secs(1)).await;
    }
}
