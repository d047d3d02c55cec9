//! `POST /leads/import-csv` and `lps import`'s mapping: each export family's headers
//! recognised, `--dry-run` and `--map`, a file that is not a CSV refused with nothing stored,
//! a million rows streamed within a memory bound.

use serde_json::Value;

use crate::common::*;

/// A sample export kept in the repository (`tests/data/exports/`).
fn export_path(name: &str) -> String {
    format!(
        "{}/tests/data/exports/{name}.csv",
        env!("CARGO_MANIFEST_DIR")
    )
}

async fn post_csv(
    server: &Server,
    key: &str,
    query: &str,
    body: impl Into<reqwest::Body>,
) -> Reply {
    server
        .send(
            server
                .client
                .post(server.url(&format!("/leads/import-csv?{query}")))
                .bearer_auth(key)
                .header("content-type", "text/csv")
                .body(body),
        )
        .await
}

#[tokio::test]
async fn import_csv_recognises_hubspot_headers_and_answers_a_job_whose_bad_rows_say_why() {
    let db = TestDb::new();
    let account = bootstrap(&db, &[]);
    let server = Server::serve(&db, &[]);
    let (key, ws) = (account.api_key.clone(), account.workspace_id);
    let (campaign, _) = create_campaign(&server, &key, ws, "From HubSpot").await;
    let mut file = std::fs::read_to_string(export_path("hubspot")).unwrap();
    // A row with nothing a lead is named by.
    file.push_str("1003,,,,,,,,Lead,\n");

    let reply = post_csv(
        &server,
        &key,
        &format!("workspace_id={ws}&campaign_id={campaign}"),
        file,
    )
    .await
    .expect(200);
    let job_id = reply.json()["job_id"].as_str().unwrap().to_owned();
    let status = wait_for_job(&server, &key, &job_id).await;
    assert_eq!(status["status"], "completed", "{status}");
    assert_eq!(status["total_rows"], 3, "{status}");
    assert_eq!(status["failed_rows"], 1, "{status}");
    assert!(
        status["errors"][0]["message"]
            .as_str()
            .unwrap()
            .starts_with("Line 4: "),
        "{status}"
    );
    let found = server
        .get(
            &key,
            &format!("/leads/search?workspace_id={ws}&search=ada@analytical.example"),
        )
        .await
        .expect(200)
        .json();
    let lead = &found["leads"][0];
    assert_eq!(lead["company_name"], "Analytical Engines", "{found}");
    assert_eq!(lead["company_domain"], "analytical.example", "{found}");
    let lead = server
        .get(&key, &format!("/leads/get?lead_id={}", lead["lead_id"]))
        .await
        .expect(200)
        .json();
    let text = lead.to_string();
    for expected in ["Mathematician", "Lovelace", "lifecycle_stage"] {
        assert!(text.contains(expected), "{expected}: {text}");
    }
}

#[tokio::test]
async fn import_csv_mapping_overrides_recognition_and_is_remembered_for_the_same_headers() {
    let db = TestDb::new();
    let account = bootstrap(&db, &[]);
    let server = Server::serve(&db, &[]);
    let (key, ws) = (account.api_key.clone(), account.workspace_id);
    let (campaign, _) = create_campaign(&server, &key, ws, "Mapped").await;
    let file = "Contact,Notes\nada@analytical.example,first\n";
    let query = format!("workspace_id={ws}&campaign_id={campaign}");

    // Unmapped: 'Contact' is a custom variable and the row names no lead.
    let job = post_csv(&server, &key, &query, file)
        .await
        .expect(200)
        .json();
    let status = wait_for_job(&server, &key, job["job_id"].as_str().unwrap()).await;
    assert_eq!(status["failed_rows"], 1, "{status}");

    let mapped = format!("{query}&mapping=Contact%3Demail");
    let job = post_csv(&server, &key, &mapped, file)
        .await
        .expect(200)
        .json();
    let status = wait_for_job(&server, &key, job["job_id"].as_str().unwrap()).await;
    assert_eq!(status["failed_rows"], 0, "{status}");

    // The next file with the same headers, without a mapping: the one chosen before.
    let again = "Contact,Notes\ngrace@navy.example,second\n";
    let job = post_csv(&server, &key, &query, again)
        .await
        .expect(200)
        .json();
    let status = wait_for_job(&server, &key, job["job_id"].as_str().unwrap()).await;
    assert_eq!(status["failed_rows"], 0, "{status}");
    assert_eq!(lead_total(&server, &key, ws).await, 2);
}

#[tokio::test]
async fn import_csv_refuses_what_is_not_a_csv_with_a_json_error_and_stores_nothing() {
    let db = TestDb::new();
    let account = bootstrap(&db, &[]);
    let server = Server::serve(&db, &[]);
    let (key, ws) = (account.api_key.clone(), account.workspace_id);
    let (campaign, _) = create_campaign(&server, &key, ws, "Refusals").await;
    let query = format!("workspace_id={ws}&campaign_id={campaign}");

    let binary: Vec<u8> = (0..4096u32).map(|i| (i % 256) as u8).collect();
    let one_line = vec![b'a'; 3 * 1024 * 1024];
    let wide = (0..10_000)
        .map(|i| format!("c{i}"))
        .collect::<Vec<_>>()
        .join(",")
        + "\n1\n";
    let mut late = String::from("email\n");
    for i in 0..5_000 {
        late.push_str(&format!("late{i}@example.com\n"));
    }
    late.push_str(&"x".repeat(2 * 1024 * 1024));
    for (name, body) in [
        ("binary", binary),
        ("one huge line", one_line),
        ("10,000 columns", wide.into_bytes()),
        ("a huge line after 5,000 rows", late.into_bytes()),
    ] {
        let reply = post_csv(&server, &key, &query, body).await.expect(422);
        let error = reply.json();
        assert!(error["errors"]["file"][0].is_string(), "{name}: {error}");
        assert!(error["message"].is_string(), "{name}: {error}");
    }
    // Over 50 MiB: announced by its Content-Length (refused before it is read), or found so
    // as it streams in without one (the rows read so far are dropped with their job).
    let too_large = "email\n".to_owned() + &"someone@example.com\n".repeat(2_700_000);
    let reply = post_csv(&server, &key, &query, too_large.clone())
        .await
        .expect(413);
    assert!(reply.json()["message"].as_str().unwrap().contains("50 MiB"));
    let chunks: Vec<Result<Vec<u8>, std::io::Error>> = too_large
        .into_bytes()
        .chunks(1024 * 1024)
        .map(|chunk| Ok(chunk.to_vec()))
        .collect();
    let streamed = reqwest::Body::wrap_stream(futures_util::stream::iter(chunks));
    let reply = post_csv(&server, &key, &query, streamed).await.expect(413);
    assert!(reply.json()["message"].as_str().unwrap().contains("50 MiB"));
    assert_eq!(lead_total(&server, &key, ws).await, 0);
    let jobs: i64 = {
        let mut conn = db.connect().await;
        sqlx::query_scalar("SELECT CAST(COUNT(*) AS BIGINT) FROM jobs")
            .fetch_one(&mut conn)
            .await
            .unwrap()
    };
    assert_eq!(jobs, 0, "no job is left behind");
}

#[tokio::test]
async fn import_csv_streams_a_million_rows_within_a_memory_bound() {
    let db = TestDb::new();
    let account = bootstrap(&db, &[]);
    let server = Server::serve(&db, &[]);
    let (key, ws) = (account.api_key.clone(), account.workspace_id);
    let (campaign, _) = create_campaign(&server, &key, ws, "A million").await;
    let before = rss_kib(server.pid());
    // About 35 MB (the test's own copy; the server's memory is what is measured).
    let mut rows = String::from("Email,First Name\n");
    for i in 0..1_000_000u32 {
        rows.push_str(&format!("m{i}@example.com,Person {i}\n"));
    }
    let reply = post_csv(
        &server,
        &key,
        &format!("workspace_id={ws}&campaign_id={campaign}"),
        rows,
    )
    .await
    .expect(200);
    let job_id = reply.json()["job_id"].as_str().unwrap().to_owned();
    let peak = memory_kib(server.pid(), "VmHWM:");
    let status: Value = server
        .get(&key, &format!("/leads/get-status?job_id={job_id}"))
        .await
        .expect(200)
        .json();
    assert_eq!(status["total_rows"], 1_000_000, "{status}");
    // Generous: the file is ~30 MB; a server that held it (and its rows as values) would pass
    // several hundred MB.
    assert!(
        peak < before + 200 * 1024,
        "peak RSS {peak} KiB against {before} KiB before the upload"
    );
}

#[test]
fn lps_import_dry_run_prints_each_export_familys_recognised_mapping() {
    for (family, expected) in [
        (
            "hubspot",
            [
                "Email Address -> email (recognised)",
                "Company Name -> company_name (recognised)",
            ],
        ),
        (
            "salesforce",
            [
                "Account Name -> company_name (recognised)",
                "Website -> company_domain (recognised)",
            ],
        ),
        (
            "apollo",
            [
                "Person Linkedin Url -> social_profile_url (recognised)",
                "Company -> company_name (recognised)",
            ],
        ),
        (
            "linkedin_sales_navigator",
            [
                "LinkedIn Profile -> social_profile_url (recognised)",
                "Work Email -> email (recognised)",
            ],
        ),
        (
            "lemlist",
            [
                "companyDomain -> company_domain (recognised)",
                "firstName -> first_name (recognised)",
            ],
        ),
        (
            "pipedrive",
            [
                "Person - Email - Work -> email (recognised)",
                "Person - Job title -> title (recognised)",
            ],
        ),
        (
            "google_contacts",
            [
                "E-mail 1 - Value -> email (recognised)",
                "Organization Name -> company_name (recognised)",
            ],
        ),
    ] {
        let out = lps(&["import", &export_path(family), "--dry-run"]);
        for line in expected {
            assert!(out.contains(line), "{family}: {line}\n{out}");
        }
        assert!(
            out.contains("line 2: {"),
            "{family}: the first row as stored\n{out}"
        );
    }
}

#[test]
fn lps_import_map_overrides_a_column_and_a_row_says_which_column_would_name_it() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("contacts.csv");
    std::fs::write(
        &file,
        "Notes;E-mail address\nhello;ada@analytical.example\n",
    )
    .unwrap();
    let path = file.to_str().unwrap();
    let out = lps(&[
        "import",
        path,
        "--dry-run",
        "--map",
        "E-mail address=ignore",
    ]);
    assert!(
        out.contains("E-mail address -> ignore (not recognised)"),
        "{out}"
    );
    assert!(
        out.contains("no column was mapped to email; 'E-mail address' looks like one"),
        "{out}"
    );
    let out = lps(&["import", path, "--dry-run", "--map", "Notes=custom:remark"]);
    assert!(out.contains("Notes -> custom:remark"), "{out}");
    assert!(out.contains(r#""email":"ada@analytical.example""#), "{out}");
    assert!(out.contains(r#""remark":"hello""#), "{out}");
}

#[tokio::test]
async fn rejected_rows_are_only_a_csv_imports_and_only_its_workspaces() {
    let db = TestDb::new();
    let account = bootstrap(&db, &[]);
    let server = Server::serve(&db, &[]);
    let (key, ws) = (account.api_key.clone(), account.workspace_id);
    let (campaign, _) = create_campaign(&server, &key, ws, "Rejects").await;
    let upserted = upsert(
        &server,
        &key,
        serde_json::json!({"campaign_id": campaign, "leads": leads("rejects-", 2)}),
    )
    .await;
    wait_for_job(&server, &key, &upserted).await;
    for job in [upserted.as_str(), "00000000-0000-4000-8000-000000000000"] {
        server
            .get(&key, &format!("/leads/export-rejected-csv?job_id={job}"))
            .await
            .expect(404);
    }
    server
        .get(&key, "/leads/export-rejected-csv")
        .await
        .expect(422);
    server
        .get("", &format!("/leads/export-rejected-csv?job_id={upserted}"))
        .await
        .expect(401);
    // A CSV import without a rejected row: the header row alone.
    let reply = post_csv(
        &server,
        &key,
        &format!("workspace_id={ws}&campaign_id={campaign}"),
        "email,first_name\nok@example.com,Ok\n",
    )
    .await
    .expect(200);
    let job = reply.json()["job_id"].as_str().unwrap().to_owned();
    wait_for_job(&server, &key, &job).await;
    let file = server
        .get(&key, &format!("/leads/export-rejected-csv?job_id={job}"))
        .await
        .expect(200);
    assert_eq!(
        file.text,
        "email,first_name,rejected_line,rejected_reason\n"
    );
}
