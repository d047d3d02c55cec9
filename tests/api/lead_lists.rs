//! Lists of leads through the API: `/leads/search`'s extensions (the last-activity range, hot
//! only, sorts, keyset pages by `after`/`next_cursor`), `GET /leads/export-csv` read with a
//! CSV parser, and every campaign page of a lead on `/leads/get`.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use crate::common::*;
use serde_json::{Value, json};

/// The export's fixed columns, in order.
const COLUMNS: [&str; 13] = [
    "lead_id",
    "email",
    "first_name",
    "last_name",
    "company_name",
    "company_domain",
    "title",
    "campaign_id",
    "campaign",
    "page_url",
    "score",
    "last_activity_at",
    "created_at",
];

/// A CSV answer read by a CSV parser: its header and its rows, each by column name.
fn parse_csv(text: &str) -> (Vec<String>, Vec<BTreeMap<String, String>>) {
    let mut reader = csv::Reader::from_reader(text.as_bytes());
    let header: Vec<String> = reader
        .headers()
        .expect("a header line")
        .iter()
        .map(str::to_owned)
        .collect();
    let rows = reader
        .records()
        .map(|record| {
            let record = record.expect("a well-formed row");
            assert_eq!(record.len(), header.len(), "every row has every column");
            header
                .iter()
                .cloned()
                .zip(record.iter().map(str::to_owned))
                .collect()
        })
        .collect();
    (header, rows)
}

/// `GET /leads/export-csv?{query}`, parsed.
async fn export(
    server: &Server,
    key: &str,
    query: &str,
) -> (Vec<String>, Vec<BTreeMap<String, String>>) {
    let reply = server
        .get(key, &format!("/leads/export-csv?{query}"))
        .await
        .expect(200);
    assert_eq!(
        reply.header("content-type"),
        Some("text/csv; charset=utf-8")
    );
    assert!(reply.header("x-ratelimit-remaining").is_some());
    parse_csv(&reply.text)
}

/// Waits until the lead's last activity is recorded (beacons are stored in batches).
async fn active(server: &Server, key: &str, lead: i64) -> Value {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let body = server
            .get(key, &format!("/leads/get?lead_id={lead}"))
            .await
            .expect(200)
            .json();
        if !body["last_activity_at"].is_null() || Instant::now() > deadline {
            return body;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test]
async fn the_csv_export_is_one_row_per_lead_and_page_with_custom_variables_and_safe_cells() {
    let db = TestDb::new();
    let account = bootstrap(&db, &[]);
    // A view makes a lead hot.
    let server = Server::serve(&db, &["--hot-score", "1"]);
    let (key, ws) = (&account.api_key, account.workspace_id);
    let (spring, pages) = live_campaign_with(
        &server,
        key,
        ws,
        "Spring",
        "Demo Invitation",
        vec![
            json!({"values": {"email": "ada@example.com", "first_name": "Ada",
                              "last_name": "Lovelace", "title": "Countess",
                              "company_name": "Engines, \"Analytical\"", "plan": "gold"}}),
            json!({"values": {"email": "bob@example.com", "first_name": "=1+1",
                              "plan": "@SUM(A1)"}}),
        ],
    )
    .await;
    let (ada, ada_spring_page) = pages[0].clone();
    let (bob, _) = pages[1].clone();
    let (autumn, autumn_pages) = live_campaign_with(
        &server,
        key,
        ws,
        "Autumn",
        "Demo Invitation",
        vec![json!({"values": {"email": "ada@example.com"}})],
    )
    .await;
    assert_eq!(autumn_pages[0].0, ada, "the same person, a second page");
    let imported = server
        .post(
            key,
            "/leads/import-to-workspace",
            json!({"workspace_id": ws, "sync": true,
                   "leads": [{"values": {"email": "cleo@example.com", "first_name": "Cleo",
                                         "region": "north"}}]}),
        )
        .await
        .expect(200)
        .json();
    let cleo = imported["lead_ids"][0].as_i64().unwrap();

    // Ada views her Spring page: she is active and hot.
    send_person_beacon(
        &server,
        &ada_spring_page,
        json!({"type": "view"}),
        DESKTOP_BROWSER,
        "visitor-ada",
    )
    .await
    .expect(204);
    let ada_read = active(&server, key, ada).await;
    assert!(
        is_iso8601_micros(&ada_read["last_activity_at"]),
        "{ada_read}"
    );
    // Her lead page lists both her pages, oldest first.
    let listed: Vec<(i64, &str)> = ada_read["pages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            (
                p["campaign_id"].as_i64().unwrap(),
                p["campaign_name"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(listed, [(spring, "Spring"), (autumn, "Autumn")]);
    assert_eq!(ada_read["pages"][0]["url"], ada_spring_page.as_str());

    let (header, rows) = export(&server, key, &format!("workspace_id={ws}")).await;
    let mut expected: Vec<&str> = COLUMNS.to_vec();
    expected.extend(["plan", "region"]);
    assert_eq!(
        header, expected,
        "the fixed columns, then each custom variable"
    );
    // Newest lead first; a lead's pages oldest first; a lead without a page once.
    let order: Vec<(String, String)> = rows
        .iter()
        .map(|r| (r["lead_id"].clone(), r["campaign"].clone()))
        .collect();
    assert_eq!(
        order,
        [
            (cleo.to_string(), String::new()),
            (bob.to_string(), "Spring".to_owned()),
            (ada.to_string(), "Spring".to_owned()),
            (ada.to_string(), "Autumn".to_owned()),
        ]
    );
    let ada_row = &rows[2];
    assert_eq!(ada_row["email"], "ada@example.com");
    assert_eq!(ada_row["first_name"], "Ada");
    assert_eq!(ada_row["last_name"], "Lovelace");
    assert_eq!(ada_row["title"], "Countess");
    assert_eq!(ada_row["company_name"], "Engines, \"Analytical\"");
    assert_eq!(ada_row["campaign_id"], spring.to_string());
    assert_eq!(ada_row["page_url"], ada_spring_page);
    assert_eq!(ada_row["plan"], "gold");
    assert_eq!(rows[3]["page_url"], autumn_pages[0].1);
    assert!(
        ada_row["score"].parse::<f64>().unwrap() >= 1.0,
        "{ada_row:?}"
    );
    assert_eq!(ada_row["last_activity_at"], ada_read["last_activity_at"]);
    assert!(is_iso8601_micros(&json!(ada_row["created_at"])));
    // Formula-safe: what would run in a spreadsheet is text.
    assert_eq!(rows[1]["first_name"], "'=1+1");
    assert_eq!(rows[1]["plan"], "'@SUM(A1)");
    assert_eq!(rows[1]["last_activity_at"], "");
    assert_eq!(rows[0]["region"], "north");
    assert_eq!(rows[0]["page_url"], "");

    // One campaign's pages only.
    let (_, spring_rows) = export(
        &server,
        key,
        &format!("workspace_id={ws}&campaign_id={spring}"),
    )
    .await;
    let spring_leads: Vec<(&str, &str)> = spring_rows
        .iter()
        .map(|r| (r["lead_id"].as_str(), r["campaign"].as_str()))
        .collect();
    assert_eq!(
        spring_leads,
        [
            (bob.to_string().as_str(), "Spring"),
            (ada.to_string().as_str(), "Spring")
        ]
    );
    // The search's filters.
    let (_, found) = export(&server, key, &format!("workspace_id={ws}&search=cleo")).await;
    assert_eq!(found.len(), 1);
    let (_, hot) = export(&server, key, &format!("workspace_id={ws}&hot_only=true")).await;
    assert!(hot.iter().all(|r| r["lead_id"] == ada.to_string()) && hot.len() == 2);
    let (_, today) = export(
        &server,
        key,
        &format!("workspace_id={ws}&last_activity_from=2000-01-01&campaign_ids={autumn}"),
    )
    .await;
    assert_eq!(today.len(), 1, "Ada's Autumn page: {today:?}");
    assert_eq!(today[0]["campaign"], "Autumn");
    let (header, none) = export(
        &server,
        key,
        &format!("workspace_id={ws}&last_activity_to=2000-01-01"),
    )
    .await;
    assert!(none.is_empty() && header.len() == 15);
    let (_, chosen) = export(
        &server,
        key,
        &format!("workspace_id={ws}&lead_ids={bob},{cleo}"),
    )
    .await;
    assert_eq!(chosen.len(), 2);

    // Refusals are JSON, before any row.
    let missing = server
        .get(key, "/leads/export-csv")
        .await
        .expect(422)
        .json();
    assert!(missing["errors"]["workspace_id"].is_array(), "{missing}");
    let unknown = server
        .get(
            key,
            &format!("/leads/export-csv?workspace_id={ws}&campaign_id=999999"),
        )
        .await
        .expect(404)
        .json();
    assert_eq!(unknown["message"], "Campaign not found");
    let bad = server
        .get(
            key,
            &format!("/leads/export-csv?workspace_id={ws}&last_activity_from=yesterday"),
        )
        .await
        .expect(422)
        .json();
    assert!(bad["errors"]["last_activity_from"].is_array(), "{bad}");
    server
        .get(
            "sk-proj-nope",
            &format!("/leads/export-csv?workspace_id={ws}"),
        )
        .await
        .expect(401);
}

#[tokio::test]
async fn an_export_of_more_leads_than_one_batch_streams_every_one_once() {
    let db = TestDb::new();
    let account = bootstrap(&db, &[]);
    let server = Server::serve(&db, &[]);
    let (key, ws) = (&account.api_key, account.workspace_id);
    let leads: Vec<Value> = (0..1_234)
        .map(|n| json!({"values": {"email": format!("p{n}@example.com"), "seat": n}}))
        .collect();
    server
        .post(
            key,
            "/leads/import-to-workspace",
            json!({"workspace_id": ws, "sync": true, "leads": leads}),
        )
        .await
        .expect(200);
    let reply = server
        .get(key, &format!("/leads/export-csv?workspace_id={ws}"))
        .await
        .expect(200);
    assert!(
        reply.header("content-length").is_none(),
        "streamed, not held whole"
    );
    let (header, rows) = parse_csv(&reply.text);
    assert_eq!(header.last().map(String::as_str), Some("seat"));
    let ids: Vec<i64> = rows.iter().map(|r| r["lead_id"].parse().unwrap()).collect();
    assert_eq!(ids.len(), 1_234);
    assert!(
        ids.windows(2).all(|w| w[0] > w[1]),
        "newest first, each once"
    );
}

/// Every lead id `/leads/search?{query}` lists, following `next_cursor` a page of `limit` at
/// a time.
async fn every_page(server: &Server, key: &str, query: &str, limit: i64) -> Vec<i64> {
    let mut ids = Vec::new();
    let mut after: Option<String> = None;
    for _ in 0..100 {
        let mut path = format!("/leads/search?{query}&limit={limit}");
        if let Some(cursor) = &after {
            path.push_str(&format!("&after={cursor}"));
        }
        let body = server.get(key, &path).await.expect(200).json();
        ids.extend(
            body["leads"]
                .as_array()
                .unwrap()
                .iter()
                .map(|l| l["lead_id"].as_i64().unwrap()),
        );
        match body["next_cursor"].as_str() {
            Some(cursor) => after = Some(cursor.to_owned()),
            None => return ids,
        }
    }
    panic!("the pages never ended")
}

#[tokio::test]
async fn search_pages_by_cursor_in_every_sort_and_filters_by_activity_and_heat() {
    let db = TestDb::new();
    let account = bootstrap(&db, &[]);
    let server = Server::serve(&db, &["--hot-score", "4"]);
    let (key, ws) = (&account.api_key, account.workspace_id);
    let (_, pages) = live_campaign(&server, key, ws, "Paged", 7).await;
    // Three leads do something: a view (1), a view and a click (4), a view again later.
    let (quiet, loud, late) = (&pages[1], &pages[3], &pages[5]);
    for (lead, page) in [quiet, loud] {
        send_person_beacon(
            &server,
            page,
            json!({"type": "view"}),
            DESKTOP_BROWSER,
            "v1",
        )
        .await
        .expect(204);
        active(&server, key, *lead).await;
    }
    send_person_beacon(
        &server,
        &loud.1,
        json!({"type": "click", "target": "Book"}),
        DESKTOP_BROWSER,
        "v1",
    )
    .await
    .expect(204);
    tokio::time::sleep(Duration::from_millis(50)).await;
    send_person_beacon(
        &server,
        &late.1,
        json!({"type": "view"}),
        DESKTOP_BROWSER,
        "v2",
    )
    .await
    .expect(204);
    active(&server, key, late.0).await;
    let deadline = Instant::now() + Duration::from_secs(10);
    while server
        .get(key, &format!("/leads/get?lead_id={}", loud.0))
        .await
        .json()["engagement"]["clicks"]
        != 1
    {
        assert!(Instant::now() < deadline, "the click was never counted");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }

    let base = format!("workspace_id={ws}");
    let mut all: Vec<i64> = pages.iter().map(|(id, _)| *id).collect();
    all.sort_unstable_by(|a, b| b.cmp(a));
    assert_eq!(
        every_page(&server, key, &base, 3).await,
        all,
        "newest first"
    );
    let by_score = every_page(&server, key, &format!("{base}&sort=score"), 2).await;
    assert_eq!(by_score.len(), 7);
    assert_eq!(by_score[0], loud.0, "{by_score:?}");
    let by_activity = every_page(&server, key, &format!("{base}&sort=last_activity"), 3).await;
    assert_eq!(
        &by_activity[..3],
        [late.0, loud.0, quiet.0],
        "{by_activity:?}"
    );
    let mut never: Vec<i64> = all
        .iter()
        .copied()
        .filter(|id| ![late.0, loud.0, quiet.0].contains(id))
        .collect();
    never.sort_unstable_by(|a, b| b.cmp(a));
    assert_eq!(&by_activity[3..], never, "never active last, newest first");
    // A cursor continues the order it was made in, and has the shape the document gives.
    let first = server
        .get(key, &format!("/leads/search?{base}&limit=2&sort=score"))
        .await
        .expect(200)
        .json();
    assert_eq!(first["total"], 7);
    let cursor = first["next_cursor"].as_str().unwrap();
    let second = server
        .get(key, &format!("/leads/search?{base}&limit=2&after={cursor}"))
        .await
        .expect(200)
        .json();
    let second: Vec<i64> = second["leads"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l["lead_id"].as_i64().unwrap())
        .collect();
    assert_eq!(second, by_score[2..4]);
    let document = server.get(key, "/openapi.json").await.expect(200).json();
    let after_schema = document["paths"]["/api/external/v1/leads/search"]["get"]["parameters"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["name"] == "after")
        .unwrap()["schema"]
        .clone();
    let shape = jsonschema::validator_for(&after_schema).unwrap();
    for sort in ["created", "score", "last_activity"] {
        let page = server
            .get(key, &format!("/leads/search?{base}&limit=1&sort={sort}"))
            .await
            .expect(200)
            .json();
        assert!(shape.is_valid(&page["next_cursor"]), "{page}");
    }
    let refused = server
        .get(key, &format!("/leads/search?{base}&after=not-a-cursor"))
        .await
        .expect(422)
        .json();
    assert!(refused["errors"]["after"].is_array(), "{refused}");
    // Hot only: the score now at or above --hot-score.
    let hot = server
        .get(key, &format!("/leads/search?{base}&hot_only=1"))
        .await
        .expect(200)
        .json();
    assert_eq!(hot["total"], 1, "{hot}");
    assert_eq!(hot["leads"][0]["lead_id"], loud.0);
    // Last activity in a range; a date is its midnight UTC.
    let active_ever = server
        .get(
            key,
            &format!("/leads/search?{base}&last_activity_from=2000-01-01"),
        )
        .await
        .expect(200)
        .json();
    assert_eq!(active_ever["total"], 3);
    let future = server
        .get(
            key,
            &format!("/leads/search?{base}&last_activity_from=2999-01-01T00:00:00Z"),
        )
        .await
        .expect(200)
        .json();
    assert_eq!(future["total"], 0);
    let chosen = server
        .get(
            key,
            &format!("/leads/search?{base}&lead_ids={},{}", quiet.0, late.0),
        )
        .await
        .expect(200)
        .json();
    assert_eq!(chosen["total"], 2);
}
