//! Custom lead variables of a workspace (the five defaults are not stored).

use sqlx::{Any, Executor};

pub async fn list_custom_keys<'c>(
    ex: impl Executor<'c, Database = Any>,
    workspace_id: i64,
) -> sqlx::Result<Vec<String>> {
    sqlx::query_scalar("SELECT key FROM variables WHERE workspace_id = $1 ORDER BY id")
        .bind(workspace_id)
        .fetch_all(ex)
        .await
}
