//! Custom lead variables of a workspace (the five defaults are not stored).

use sqlx::{Any, Executor};

use sqlx::AnyConnection;

use super::{bulk_sql, placeholder_rows, rows_per_statement};
use crate::time::Micros;

pub async fn list_custom_keys<'c>(
    ex: impl Executor<'c, Database = Any>,
    workspace_id: i64,
) -> sqlx::Result<Vec<String>> {
    sqlx::query_scalar("SELECT key FROM variables WHERE workspace_id = $1 ORDER BY id")
        .bind(workspace_id)
        .fetch_all(ex)
        .await
}

/// Records custom keys first seen in an upsert; keys already known are left as they are.
pub async fn ensure_keys(
    conn: &mut AnyConnection,
    workspace_id: i64,
    keys: &[&str],
    now: Micros,
) -> sqlx::Result<()> {
    for chunk in keys.chunks(rows_per_statement(conn, 3)) {
        let sql = format!(
            "INSERT INTO variables (workspace_id, key, created_at) VALUES {}
             ON CONFLICT DO NOTHING",
            placeholder_rows(chunk.len(), 3, 1, &[])
        );
        let mut query = sqlx::query(bulk_sql(conn, sql));
        for key in chunk {
            query = query.bind(workspace_id).bind(*key).bind(now);
        }
        query.execute(&mut *conn).await?;
    }
    Ok(())
}
