//! `/dashboard/leads/import`: a member imports a HubSpot export in the app: the upload is
//! streamed and staged, the mapping step shows the recognised columns with their first values
//! and previews the rows as they will be stored (and a changed mapping), the import runs to a
//! summary (created, updated, rejected) and the rejected rows download as a CSV with their
//! reasons; the mapping is remembered; a cancelled upload is deleted; what is not a CSV is
//! refused with nothing stored; an upload abandoned mid-file (its server killed) is swept.

use std::time::{Duration, Instant};

use crate::common::*;
use crate::dashboard::unescape;
use crate::oauth::{Browser, PASSWORD, Setup, hidden, setup};
use crate::people_app::setup_link;

/// A `multipart/form-data` body: the fields, then the file (last, as the form sends it).
pub(crate) fn multipart(fields: &[(&str, &str)], file: &[u8]) -> (String, Vec<u8>) {
    let boundary = "lpsTestBoundary7MA4YWxkTrZu0gW";
    let mut body = Vec::new();
    for (name, value) in fields {
        body.extend_from_slice(
            format!(
                "--{boundary}\r\nContent-Disposition: form-data; name=\"{name}\"\r\n\r\n{value}\r\n"
            )
            .as_bytes(),
        );
    }
    body.extend_from_slice(
        format!(
            "--{boundary}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"leads.csv\"\r\nContent-Type: text/csv\r\n\r\n"
        )
        .as_bytes(),
    );
    body.extend_from_slice(file);
    body.extend_from_slice(format!("\r\n--{boundary}--\r\n").as_bytes());
    (format!("multipart/form-data; boundary={boundary}"), body)
}

/// An owner's invitation taken up: the member signed in.
pub(crate) async fn signed_in_member(s: &Setup) -> Browser {
    let mut owner = Browser::new(&s.server);
    owner
        .log_in("owner@example.com", PASSWORD, "/dashboard")
        .await;
    let (_, _, settings) = owner.get("/dashboard/settings").await;
    let csrf = hidden(&settings, "csrf_token");
    let (_, location, _) = owner
        .post(
            "/dashboard/teammates/invite",
            &[
                ("csrf_token", csrf.as_str()),
                ("email", "rep@example.com"),
                ("name", "Rep"),
                ("role", "member"),
            ],
        )
        .await;
    let (_, _, invited) = owner.get(location.as_deref().unwrap()).await;
    let link = setup_link(&invited);
    let mut member = Browser::new(&s.server);
    let (_, _, form) = member.get(&link).await;
    let (token, setup_csrf) = (hidden(&form, "token"), hidden(&form, "csrf_token"));
    let (status, _, _) = member
        .post(
            "/dashboard/setup",
            &[
                ("token", token.as_str()),
                ("csrf_token", setup_csrf.as_str()),
                ("password", "member password 1"),
            ],
        )
        .await;
    assert_eq!(status, 303);
    member
}

/// The HubSpot sample with a row whose email is not one and a row no lead is named by.
fn hubspot_with_bad_rows() -> String {
    let mut file = std::fs::read_to_string(format!(
        "{}/tests/data/exports/hubspot.csv",
        env!("CARGO_MANIFEST_DIR")
    ))
    .unwrap();
    file.push_str("1003,Bad,Row,not-an-email,,Nowhere,,,,\n");
    file.push_str("1004,,,,,,Janitor,,,\n");
    file
}

/// Uploads `file` through the form; answers where the upload led.
async fn upload(browser: &mut Browser, ws: i64, campaign: i64, file: &[u8]) -> (u16, String) {
    let (status, _, form) = browser.get("/dashboard/leads/import").await;
    assert_eq!(status, 200, "{form}");
    let csrf = hidden(&form, "csrf_token");
    let (content_type, body) = multipart(
        &[
            ("csrf_token", &csrf),
            ("workspace_id", &ws.to_string()),
            ("campaign_id", &campaign.to_string()),
        ],
        file,
    );
    let (status, location, _) = browser
        .post_body("/dashboard/leads/import", &content_type, body)
        .await;
    (status, location.unwrap_or_default())
}

/// The `column_N` choices a mapping page shows selected, in order.
fn chosen_columns(page: &str) -> Vec<(String, String)> {
    let mut chosen = Vec::new();
    for (at, _) in page.match_indices("<select id=\"column_") {
        let rest = &page[at..];
        let name_start = rest.find("name=\"").unwrap() + 6;
        let name = &rest[name_start..name_start + rest[name_start..].find('"').unwrap()];
        let end = rest.find("</select>").unwrap();
        let selected = rest[..end]
            .split("<option value=\"")
            .skip(1)
            .find(|option| option.contains("\" selected>"))
            .map(|option| unescape(&option[..option.find('"').unwrap()]))
            .unwrap_or_default();
        chosen.push((name.to_owned(), selected));
    }
    chosen
}

/// Waits until the import's page shows its summary.
async fn summary(browser: &mut Browser, path: &str) -> String {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let (status, _, page) = browser.get(path).await;
        assert_eq!(status, 200, "{page}");
        if !page.contains("data-import-events") {
            return page;
        }
        assert!(
            Instant::now() < deadline,
            "the import never finished: {page}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

fn figure(page: &str, name: &str) -> i64 {
    let marker = format!("<dd data-{name}>");
    let at = page
        .find(&marker)
        .unwrap_or_else(|| panic!("{name} in {page}"))
        + marker.len();
    page[at..at + page[at..].find('<').unwrap()]
        .parse()
        .unwrap()
}

#[tokio::test]
async fn a_member_imports_a_hubspot_export_in_the_app_and_downloads_the_rejected_rows() {
    let s = setup().await;
    let (server, key, ws) = (&s.server, &s.account.api_key, s.account.workspace_id);
    let (campaign, _) = create_campaign(server, key, ws, "From HubSpot").await;
    let mut member = signed_in_member(&s).await;
    let (_, _, leads) = member.get("/dashboard/leads").await;
    assert!(leads.contains("/dashboard/leads/import"), "{leads}");

    let (status, location) = upload(
        &mut member,
        ws,
        campaign,
        hubspot_with_bad_rows().as_bytes(),
    )
    .await;
    assert_eq!(status, 303);
    assert!(
        location.starts_with("/dashboard/leads/import/"),
        "{location}"
    );
    // Staged, not imported: no lead yet.
    assert_eq!(lead_total(server, key, ws).await, 0);

    // The mapping step: recognised columns with their first values, rows as they will be stored.
    let (status, _, page) = member.get(&location).await;
    assert_eq!(status, 200, "{page}");
    assert!(page.contains("4 rows"), "{page}");
    let chosen = chosen_columns(&page);
    assert_eq!(chosen.len(), 10, "{chosen:?}");
    assert_eq!(chosen[1].1, "first_name");
    assert_eq!(chosen[3].1, "email");
    assert_eq!(chosen[5].1, "company_name");
    assert_eq!(chosen[6].1, "title");
    assert!(page.contains("ada@analytical.example"), "{page}");
    assert!(page.contains("Will be rejected"), "{page}");
    assert!(
        page.contains("no column was mapped to") || page.contains("which a lead needs"),
        "{page}"
    );

    // A changed mapping previewed: the job title left out.
    let csrf = hidden(&page, "csrf_token");
    let mut form: Vec<(String, String)> = chosen.clone();
    form[6].1 = "ignore".to_owned();
    let mut fields: Vec<(&str, &str)> =
        form.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    fields.push(("csrf_token", &csrf));
    fields.push(("action", "preview"));
    let (status, previewing, _) = member.post(&location, &fields).await;
    assert_eq!(status, 303);
    let (_, _, preview) = member.get(&unescape(previewing.as_deref().unwrap())).await;
    assert_eq!(chosen_columns(&preview)[6].1, "ignore", "{preview}");
    assert!(
        !preview.contains("<th scope=\"col\">title</th>"),
        "{preview}"
    );
    assert_eq!(
        preview.matches("Mathematician").count(),
        1,
        "only among the first values: {preview}"
    );

    // Started with that mapping: the summary.
    fields.retain(|(k, _)| *k != "action");
    fields.push(("action", "start"));
    let (status, started, _) = member.post(&location, &fields).await;
    assert_eq!(status, 303);
    assert_eq!(started.as_deref(), Some(location.as_str()));
    let done = summary(&mut member, &location).await;
    assert_eq!(figure(&done, "created"), 2, "{done}");
    assert_eq!(figure(&done, "updated"), 0, "{done}");
    assert_eq!(figure(&done, "rejected"), 2, "{done}");
    assert_eq!(lead_total(server, key, ws).await, 2);
    let found = server
        .get(
            key,
            &format!("/leads/search?workspace_id={ws}&search=ada@analytical.example"),
        )
        .await
        .expect(200)
        .json();
    let ada = found.to_string();
    assert!(
        !ada.contains("Mathematician"),
        "the title was left out: {ada}"
    );

    // The rejected rows, as they were, with why.
    let (status, headers, csv) = member
        .get_with_headers(&format!("{location}/rejected.csv"))
        .await;
    assert_eq!(status, 200, "{csv}");
    assert!(
        headers["content-type"]
            .to_str()
            .unwrap()
            .starts_with("text/csv")
    );
    let mut reader = csv::Reader::from_reader(csv.as_bytes());
    let header: Vec<String> = reader.headers().unwrap().iter().map(String::from).collect();
    assert_eq!(header.first().map(String::as_str), Some("Record ID"));
    assert_eq!(
        &header[header.len() - 2..],
        &["rejected_line".to_owned(), "rejected_reason".to_owned()]
    );
    let rows: Vec<csv::StringRecord> = reader.records().map(Result::unwrap).collect();
    assert_eq!(rows.len(), 2, "{csv}");
    assert_eq!(&rows[0][3], "not-an-email");
    assert_eq!(&rows[0][10], "4");
    assert!(rows[0][11].to_lowercase().contains("email"), "{csv}");
    assert_eq!(&rows[1][10], "5");
    assert!(!rows[1][11].starts_with("Line"), "{csv}");
    // The same file through the API's export.
    let api = server
        .get(
            key,
            &format!(
                "/leads/export-rejected-csv?job_id={}",
                location.rsplit('/').next().unwrap()
            ),
        )
        .await
        .expect(200);
    assert_eq!(api.text, csv);

    // The mapping is remembered for the next file with the same headers; a cancelled upload
    // is deleted.
    let (_, again) = upload(
        &mut member,
        ws,
        campaign,
        hubspot_with_bad_rows().as_bytes(),
    )
    .await;
    let (_, _, page) = member.get(&again).await;
    assert_eq!(chosen_columns(&page)[6].1, "ignore", "{page}");
    let csrf = hidden(&page, "csrf_token");
    let (status, _, _) = member
        .post(
            &again,
            &[("csrf_token", csrf.as_str()), ("action", "cancel")],
        )
        .await;
    assert_eq!(status, 303);
    let (status, _, _) = member.get(&again).await;
    assert_eq!(status, 404);
    assert_eq!(lead_total(server, key, ws).await, 2);
}

#[tokio::test]
async fn what_is_not_a_csv_or_not_from_the_form_is_refused_and_nothing_is_stored() {
    let s = setup().await;
    let (server, key, ws) = (&s.server, &s.account.api_key, s.account.workspace_id);
    let (campaign, _) = create_campaign(server, key, ws, "Refusals").await;
    let mut owner = Browser::new(server);
    owner
        .log_in("owner@example.com", PASSWORD, "/dashboard")
        .await;
    let jobs = || async {
        let mut db = s.db.connect().await;
        sqlx::query_scalar::<_, i64>("SELECT CAST(COUNT(*) AS BIGINT) FROM jobs")
            .fetch_one(&mut db)
            .await
            .unwrap()
    };
    let before = jobs().await;

    let mut binary = b"email,name\n".to_vec();
    binary.extend_from_slice(&[0u8, 159, 146, 150, 0, 1, 2, 3]);
    for (file, says) in [
        (binary, "cannot be imported"),
        (b"email\n".to_vec(), "no rows"),
        (vec![b'x'; 2 * 1024 * 1024], "cannot be imported"),
    ] {
        let (status, location) = upload(&mut owner, ws, campaign, &file).await;
        assert_eq!(status, 303);
        assert_eq!(location, "/dashboard/leads/import");
        let (_, _, page) = owner.get(&location).await;
        assert!(page.contains(says), "{says}: {page}");
    }
    // Over 50 MB, as the browser announces it: refused before it is read, said. (A file that
    // turns out too large as it streams is refused by the same reader, in csv_import.rs.)
    let big = {
        let mut file = b"email,first_name\n".to_vec();
        let row = b"someone@example.com,Someone with a rather long first name to fill the file\n";
        while file.len() <= 51 * 1024 * 1024 {
            file.extend_from_slice(row);
        }
        file
    };
    let (status, location) = upload(&mut owner, ws, campaign, &big).await;
    assert_eq!(status, 303);
    let (_, _, page) = owner.get(&location).await;
    assert!(page.contains("over 50 MB"), "{page}");
    assert_eq!(jobs().await, before, "nothing stored");
    assert_eq!(lead_total(server, key, ws).await, 0);

    // A form without the session's CSRF token: refused before the file is read.
    let (content_type, body) = multipart(
        &[
            ("csrf_token", "forged"),
            ("campaign_id", &campaign.to_string()),
        ],
        b"email\na@example.com\n",
    );
    let (status, _, _) = owner
        .post_body("/dashboard/leads/import", &content_type, body)
        .await;
    assert_eq!(status, 403);
    assert_eq!(jobs().await, before);
}

#[tokio::test]
async fn an_upload_cut_off_by_a_killed_server_is_swept_when_lps_runs_again() {
    let db = TestDb::new();
    let account = bootstrap(&db, &[]);
    let flags = ["--import-abandoned-after-seconds", "1"];
    let mut server = Server::serve(&db, &flags);
    let (key, ws) = (account.api_key.clone(), account.workspace_id);
    let (campaign, _) = create_campaign(&server, &key, ws, "Cut off").await;
    let counts = || async {
        let mut conn = db.connect().await;
        let jobs: i64 = sqlx::query_scalar("SELECT CAST(COUNT(*) AS BIGINT) FROM jobs")
            .fetch_one(&mut conn)
            .await
            .unwrap();
        let staged: i64 = sqlx::query_scalar(
            "SELECT CAST(COUNT(*) AS BIGINT) FROM job_chunks WHERE status = 'staged'",
        )
        .fetch_one(&mut conn)
        .await
        .unwrap();
        (jobs, staged)
    };
    let before = counts().await.0;

    // A file whose first 6,000 rows arrive (more than one batch sent to core), then nothing:
    // the server is killed mid-file.
    let (sender, receiver) = tokio::sync::mpsc::channel::<Result<Vec<u8>, std::io::Error>>(4);
    let mut rows = String::from("email,first_name\n");
    for i in 0..6_000 {
        rows.push_str(&format!("cut{i}@example.com,Cut {i}\n"));
    }
    sender.send(Ok(rows.into_bytes())).await.unwrap();
    let body = reqwest::Body::wrap_stream(tokio_stream::wrappers::ReceiverStream::new(receiver));
    let request = server
        .client
        .post(server.url(&format!(
            "/leads/import-csv?workspace_id={ws}&campaign_id={campaign}"
        )))
        .bearer_auth(&key)
        .header("content-type", "text/csv")
        .body(body)
        .send();
    let uploading = tokio::spawn(request);
    let deadline = Instant::now() + Duration::from_secs(20);
    while counts().await.1 == 0 {
        assert!(Instant::now() < deadline, "no row was ever staged");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(counts().await.0, before + 1);
    server.kill();
    drop(sender);
    let _ = uploading.await;
    // Still there: nothing swept it while lps was down.
    assert_eq!(counts().await.0, before + 1);

    let _again = Server::serve(&db, &flags);
    let deadline = Instant::now() + Duration::from_secs(20);
    while counts().await != (before, 0) {
        assert!(
            Instant::now() < deadline,
            "the abandoned import was never swept: {:?}",
            counts().await
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(lead_total(&_again, &key, ws).await, 0);
}
