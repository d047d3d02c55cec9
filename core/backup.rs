//! `lps admin backup` and `lps admin restore`: a consistent copy of a SQLite database taken
//! while the server runs (`VACUUM INTO` reads one snapshot, so writers carry on and the copy is
//! exactly the database as of one commit), checked before it is called good; and putting such a
//! copy back. PostgreSQL has its own tools (`pg_dump`, `pg_restore`), which these name.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use sqlx::Connection;

use crate::store::{Db, Dialect, sqlite_path};

/// What a backup or restore wrote, as read back from the copy.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Copy {
    pub path: PathBuf,
    pub bytes: u64,
    pub leads: i64,
    pub migrations: i64,
}

/// Copies the SQLite database at `database_url` to `to` (which must not exist yet).
pub async fn backup(database_url: &str, to: &Path) -> Result<Copy> {
    refuse_postgres(database_url)?;
    if to.exists() {
        bail!(
            "{} already exists: a backup never overwrites a file",
            to.display()
        );
    }
    let db = Db::connect_existing(database_url).await?;
    let destination = to
        .to_str()
        .context("the backup path must be valid UTF-8")?
        .to_owned();
    crate::store::backup::vacuum_into(db.pool(), &destination)
        .await
        .with_context(|| format!("copying the database to {}", to.display()))?;
    db.pool().close().await;
    check(to).await
}

/// Puts the copy at `from` in place of the SQLite database at `database_url`. The server must
/// be stopped: a running one keeps the file it opened.
pub async fn restore(from: &Path, database_url: &str) -> Result<Copy> {
    refuse_postgres(database_url)?;
    check(from)
        .await
        .with_context(|| format!("{} is not a usable lps backup", from.display()))?;
    let target = PathBuf::from(sqlite_path(database_url));
    let staged = target.with_extension("restoring");
    std::fs::copy(from, &staged)
        .with_context(|| format!("copying {} to {}", from.display(), staged.display()))?;
    std::fs::File::open(&staged)?.sync_all()?;
    // The old database's write-ahead log belongs to the old file.
    for suffix in ["-wal", "-shm"] {
        let mut side = target.clone().into_os_string();
        side.push(suffix);
        match std::fs::remove_file(&side) {
            Err(err) if err.kind() != std::io::ErrorKind::NotFound => {
                return Err(err).with_context(|| format!("removing {side:?}"));
            }
            _ => {}
        }
    }
    std::fs::rename(&staged, &target)
        .with_context(|| format!("moving the copy to {}", target.display()))?;
    check(&target).await
}

fn refuse_postgres(database_url: &str) -> Result<()> {
    if Dialect::of_url(database_url) == Some(Dialect::Postgres) {
        bail!(
            "PostgreSQL is backed up with its own tools, consistently while the server runs: \
             `pg_dump --format=custom --file=lps.dump '{url}'`; restore into an empty database \
             with `pg_restore --no-owner --dbname='{url}' lps.dump`",
            url = crate::store::redact(database_url)
        );
    }
    Ok(())
}

/// Opens a copy read-only and checks it whole: SQLite's integrity check passes and it is an lps
/// database (its migrations recorded).
async fn check(path: &Path) -> Result<Copy> {
    sqlx::any::install_default_drivers();
    crate::store::configure_sqlite_once();
    let url = format!("sqlite://{}?mode=ro", path.display());
    let mut conn = sqlx::AnyConnection::connect(&url)
        .await
        .with_context(|| format!("opening {}", path.display()))?;
    let contents = crate::store::backup::contents(&mut conn)
        .await
        .context("not an lps database (no migrations or leads recorded)")?;
    if contents.integrity != "ok" {
        bail!(
            "{}: integrity check failed: {}",
            path.display(),
            contents.integrity
        );
    }
    let (migrations, leads) = (contents.migrations, contents.leads);
    conn.close().await.ok();
    Ok(Copy {
        path: path.to_owned(),
        bytes: std::fs::metadata(path)?.len(),
        leads,
        migrations,
    })
}
