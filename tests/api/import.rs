//! `lps import`: a CSV of 10,000 rows with a BOM, quoted commas and quotes, bad rows and
//! repeated people goes in with exact counts and a file of rejects; run again, it makes no
//! second job and no duplicate.

use crate::common::*;

/// The file, and what it should come to.
fn spreadsheet() -> String {
    let mut csv = String::from("\u{feff}email,first_name,company_name,job_title\n");
    for i in 0..10_000 {
        let line = match i % 1000 {
            // The API refuses these (10 rows).
            7 => format!("not-an-email-{i},Bad,\"Acme, Inc.\",Sales\n"),
            // Too few fields: refused before sending (10 rows).
            8 => format!("short{i}@example.com,Short\n"),
            // The same person as row i - 9, again (10 rows).
            9 => format!("IMP{}@example.com,Again,\"Acme, Inc.\",Sales\n", i - 9),
            _ => format!("imp{i}@example.com,Lead {i},\"Acme, Inc.\",\"Head of \"\"Growth\"\"\"\n"),
        };
        csv.push_str(&line);
    }
    csv
}

fn import(
    server: &Server,
    account: &Account,
    campaign: i64,
    file: &std::path::Path,
) -> serde_json::Value {
    lps_json(&[
        "import",
        file.to_str().unwrap(),
        "--url",
        &server.url_of("/"),
        "--key",
        &account.api_key,
        "--workspace",
        &account.workspace_id.to_string(),
        "--campaign",
        &campaign.to_string(),
        "--batch",
        "1000",
    ])
}

#[tokio::test]
async fn a_csv_of_ten_thousand_rows_imports_exactly_and_a_rerun_changes_nothing() {
    let db = TestDb::new();
    let account = bootstrap(&db, &[]);
    let server = std::sync::Arc::new(Server::serve(&db, &["--rate-limit-per-minute", "100000"]));
    let (key, ws) = (account.api_key.clone(), account.workspace_id);
    let (campaign, _) = create_campaign(&server, &key, ws, "Imported").await;
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("leads.csv");
    std::fs::write(&file, spreadsheet()).unwrap();

    let first = {
        let (server, account, file) = (server.clone(), account.clone(), file.clone());
        tokio::task::spawn_blocking(move || import(&server, &account, campaign, &file))
            .await
            .unwrap()
    };
    assert_eq!(first["rows"], 10_000, "{first}");
    assert_eq!(first["imported"], 9_980, "{first}");
    assert_eq!(first["failed"], 20, "{first}");
    // Ten rows repeat a person an earlier row made: they update that lead.
    assert_eq!(first["created"], 9_970, "{first}");
    assert_eq!(first["updated"], 10, "{first}");
    assert_eq!(first["job_ids"].as_array().unwrap().len(), 10, "{first}");
    assert_eq!(lead_total(&server, &key, ws).await, 9_970);

    // The rejects: each row with its line and reason, its fields as they were.
    let rejects = std::fs::read_to_string(dir.path().join("leads.rejects.csv")).unwrap();
    let lines: Vec<&str> = rejects.lines().collect();
    assert_eq!(lines.len(), 21, "{rejects}");
    assert_eq!(
        lines[0],
        "line,reason,email,first_name,company_name,job_title"
    );
    assert!(lines[1].starts_with("9,"), "{}", lines[1]);
    assert!(lines[1].contains("not-an-email-7"), "{}", lines[1]);
    assert!(lines[1].contains("\"Acme, Inc.\""), "{}", lines[1]);
    assert!(
        lines[2].starts_with("10,The row has 2 fields; the header has 4."),
        "{}",
        lines[2]
    );

    // Quoted commas and quotes arrive whole.
    let job = first["job_ids"][0].as_str().unwrap();
    let made = server
        .get(&key, &format!("/leads/get-leads?job_id={job}"))
        .await
        .expect(200)
        .json();
    assert_eq!(made[0]["company_name"], "Acme, Inc.");
    // (Row 2's lead; row 1's was updated by its repeat on row 11.)
    let lead = server
        .get(&key, &format!("/leads/get?lead_id={}", made[1]["lead_id"]))
        .await
        .expect(200)
        .json();
    assert!(
        lead.to_string().contains("Head of \\\"Growth\\\""),
        "{lead}"
    );

    // Again, as after an interruption: the same jobs answer, nothing is added.
    let again = {
        let (server, account, file) = (server.clone(), account.clone(), file.clone());
        tokio::task::spawn_blocking(move || import(&server, &account, campaign, &file))
            .await
            .unwrap()
    };
    assert_eq!(again["job_ids"], first["job_ids"]);
    assert_eq!(again["imported"], 9_980);
    assert_eq!(lead_total(&server, &key, ws).await, 9_970);
}

#[tokio::test]
async fn an_import_cut_off_half_way_and_run_again_makes_each_job_once() {
    let db = TestDb::new();
    let account = bootstrap(&db, &[]);
    let server = Server::serve(&db, &["--rate-limit-per-minute", "100000"]);
    let (key, ws) = (account.api_key.clone(), account.workspace_id);
    let (campaign, _) = create_campaign(&server, &key, ws, "Cut off").await;
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("leads.csv");
    std::fs::write(&file, spreadsheet()).unwrap();
    let args = |batch: &str| -> Vec<String> {
        [
            "import",
            file.to_str().unwrap(),
            "--url",
            &server.url_of("/"),
            "--key",
            &key,
            "--workspace",
            &ws.to_string(),
            "--campaign",
            &campaign.to_string(),
            "--batch",
            batch,
            "--json",
        ]
        .map(str::to_owned)
        .to_vec()
    };

    // Killed while it is sending its 100 batches.
    let mut cut = std::process::Command::new(BIN)
        .args(args("100"))
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let started = std::time::Instant::now();
    while jobs_in(&db).await < 5 {
        assert!(
            started.elapsed() < std::time::Duration::from_secs(30),
            "no batch was sent"
        );
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    cut.kill().unwrap();
    cut.wait().unwrap();
    let sent = jobs_in(&db).await;
    assert!(sent < 100, "it finished before it was cut off");

    let arguments = args("100");
    let output = tokio::task::spawn_blocking(move || {
        lps(&arguments.iter().map(String::as_str).collect::<Vec<_>>())
    })
    .await
    .unwrap();
    let output: serde_json::Value = serde_json::from_str(output.trim()).unwrap();
    assert_eq!(output["imported"], 9_980, "{output}");
    assert_eq!(output["created"], 9_970, "{output}");
    assert_eq!(
        jobs_in(&db).await,
        100,
        "one job per batch, whatever was sent before"
    );
    assert_eq!(lead_total(&server, &key, ws).await, 9_970);
}

/// Jobs in the database.
async fn jobs_in(db: &TestDb) -> i64 {
    use sqlx::Connection;
    let mut conn = db.connect().await;
    let n = sqlx::query_scalar("SELECT COUNT(*) FROM jobs")
        .fetch_one(&mut conn)
        .await
        .unwrap();
    conn.close().await.ok();
    n
}
