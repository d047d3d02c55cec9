//! The statements of backups (SQLite): a consistent copy while the server runs, and the checks
//! a copy must pass before it is trusted.

use sqlx::{Any, Executor};

/// Writes a consistent copy of the database to `destination` (a new file).
pub async fn vacuum_into<'c>(
    ex: impl Executor<'c, Database = Any>,
    destination: &str,
) -> sqlx::Result<()> {
    sqlx::query("VACUUM INTO $1")
        .bind(destination)
        .execute(ex)
        .await?;
    Ok(())
}

/// What a copy holds, as its checks read it.
pub struct CopyContents {
    /// `ok`, or what SQLite's integrity check found.
    pub integrity: String,
    pub migrations: i64,
    pub leads: i64,
}

/// SQLite's integrity check, the migrations recorded and the leads stored in a copy.
pub async fn contents(conn: &mut sqlx::AnyConnection) -> sqlx::Result<CopyContents> {
    let integrity: String = sqlx::query_scalar("PRAGMA integrity_check")
        .fetch_one(&mut *conn)
        .await?;
    let migrations: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM _sqlx_migrations")
        .fetch_one(&mut *conn)
        .await?;
    let leads: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM leads")
        .fetch_one(&mut *conn)
        .await?;
    Ok(CopyContents {
        integrity,
        migrations,
        leads,
    })
}
