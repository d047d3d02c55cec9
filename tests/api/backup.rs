//! `lps admin backup` and `lps admin restore`: a copy taken while leads are being written is
//! consistent, opens, and restores to a database a server serves with the same counts.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use crate::common::*;
use serde_json::json;
use sqlx::Connection;

/// Counts in a SQLite file: leads, leads with no page in the campaign (a torn import would
/// leave some), and rows jobs say they processed against those their chunks record as done.
async fn counts(path: &std::path::Path) -> (i64, i64, i64, i64) {
    sqlx::any::install_default_drivers();
    let mut conn = sqlx::AnyConnection::connect(&format!("sqlite://{}?mode=ro", path.display()))
        .await
        .expect("the copy opens");
    let one = |sql: &'static str| sqlx::query_scalar::<_, i64>(sql);
    let leads = one("SELECT COUNT(*) FROM leads")
        .fetch_one(&mut conn)
        .await
        .unwrap();
    let orphans = one("SELECT COUNT(*) FROM leads l
         WHERE NOT EXISTS (SELECT 1 FROM campaign_leads cl WHERE cl.lead_id = l.id)")
    .fetch_one(&mut conn)
    .await
    .unwrap();
    let processed = one("SELECT COALESCE(SUM(processed_rows), 0) FROM jobs")
        .fetch_one(&mut conn)
        .await
        .unwrap();
    let done = one("SELECT COALESCE(SUM(row_count), 0) FROM job_chunks WHERE status = 'done'")
        .fetch_one(&mut conn)
        .await
        .unwrap();
    (leads, orphans, processed, done)
}

async fn jobs_in(path: &std::path::Path) -> Vec<String> {
    let mut conn = sqlx::AnyConnection::connect(&format!("sqlite://{}?mode=ro", path.display()))
        .await
        .expect("the copy opens");
    sqlx::query_scalar("SELECT id FROM jobs")
        .fetch_all(&mut conn)
        .await
        .unwrap()
}

#[tokio::test]
async fn a_backup_under_write_load_is_consistent_and_restores_to_the_same_counts() {
    let db = TestDb::new();
    if db.is_postgres() {
        eprintln!("skipped: backups are of SQLite databases (PostgreSQL uses pg_dump)");
        return;
    }
    let account = bootstrap(&db, &[]);
    let key = account.api_key.clone();
    let server = Arc::new(Server::serve(&db, &["--rate-limit-per-minute", "100000"]));
    let (campaign, _) = create_campaign(&server, &key, account.workspace_id, "Backed up").await;

    // Imports keep writing while the backup is taken.
    let stop = Arc::new(AtomicBool::new(false));
    let load = {
        let (server, key, stop) = (server.clone(), key.clone(), stop.clone());
        tokio::spawn(async move {
            let mut jobs = Vec::new();
            let mut round = 0;
            while !stop.load(Ordering::Relaxed) {
                let body = json!({"campaign_id": campaign,
                                  "leads": leads(&format!("load{round}-"), 500)});
                jobs.push(upsert(&server, &key, body).await);
                round += 1;
            }
            jobs
        })
    };
    // The copy is taken once some leads are stored (how soon depends on the machine).
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while lead_total(&server, &key, account.workspace_id).await == 0 {
        assert!(std::time::Instant::now() < deadline, "no lead was stored");
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    let dir = tempfile::tempdir().unwrap();
    let copy = dir.path().join("backup.db");
    let copy_arg = copy.to_str().unwrap().to_owned();
    let url = db.url.clone();
    let printed = tokio::task::spawn_blocking(move || {
        lps_json(&["admin", "backup", "--database-url", &url, "--to", &copy_arg])
    })
    .await
    .unwrap();
    stop.store(true, Ordering::Relaxed);
    let jobs = load.await.unwrap();
    assert!(jobs.len() >= 2, "the load ran while the backup was taken");

    let (leads_in_copy, orphans, processed, done) = counts(&copy).await;
    assert_eq!(printed["leads"], leads_in_copy, "{printed}");
    assert!(
        leads_in_copy > 0,
        "the copy holds what was stored before it"
    );
    assert_eq!(orphans, 0, "every lead in the copy has its page");
    assert_eq!(processed, done, "job counters and stored rows agree");
    assert_eq!(
        leads_in_copy % 500,
        0,
        "whole import batches only: {leads_in_copy}"
    );

    // The live database went on; the copy did not change with it.
    for job in &jobs {
        wait_for_job(&server, &key, job).await;
    }
    assert_eq!(
        lead_total(&server, &key, account.workspace_id).await,
        500 * jobs.len() as i64
    );

    // A backup never overwrites.
    let output = std::process::Command::new(BIN)
        .args(["admin", "backup", "--database-url", &db.url, "--to"])
        .arg(&copy)
        .output()
        .unwrap();
    assert!(!output.status.success());
    assert!(String::from_utf8_lossy(&output.stderr).contains("already exists"));

    // Restored into a new place, a server serves exactly the copy.
    let restored_db = TestDb::on(None);
    let printed = lps_json(&[
        "admin",
        "restore",
        "--database-url",
        &restored_db.url,
        "--from",
        copy.to_str().unwrap(),
    ]);
    assert_eq!(printed["leads"], leads_in_copy);
    // Jobs accepted before the copy but not yet stored are in it too: the restored server
    // finishes them, so every import the copy accepted ends whole.
    let accepted = jobs_in(&copy).await;
    let server = Server::serve(&restored_db, &[]);
    for job in &accepted {
        wait_for_job(&server, &key, job).await;
    }
    assert_eq!(
        lead_total(&server, &key, account.workspace_id).await,
        500 * accepted.len() as i64
    );
}

#[test]
fn postgres_databases_are_pointed_to_pg_dump_and_pg_restore() {
    for command in ["backup", "restore"] {
        let flag = if command == "backup" {
            "--to"
        } else {
            "--from"
        };
        let output = std::process::Command::new(BIN)
            .args([
                "admin",
                command,
                "--database-url",
                "postgres://u:secret@db.invalid/lps",
            ])
            .args([flag, "/tmp/lps-never-written.db"])
            .output()
            .unwrap();
        assert!(!output.status.success());
        let said = String::from_utf8_lossy(&output.stderr);
        assert!(
            said.contains("pg_dump") && said.contains("pg_restore"),
            "{said}"
        );
        assert!(!said.contains("secret"), "{said}");
    }
}
