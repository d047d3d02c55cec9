//! Pages from memory: whatever changes a page is on the very next visit in the process that
//! made the change, and (PostgreSQL) in another as soon as its `NOTIFY` arrives; one lead's
//! page is never served for another; the memory the cache may use is a bound.

use std::time::Duration;

use crate::common::*;
use serde_json::json;

const NOT_LIVE: &str = "This page is not live yet";

/// A server started with `flags`, with a live campaign of `count` leads, and their pages.
async fn live_pages(
    name: &str,
    count: usize,
    flags: &[&str],
) -> (TestDb, Server, Vec<(i64, String)>) {
    let db = TestDb::new();
    let account = bootstrap(&db, &[]);
    let server = Server::serve(&db, flags);
    let (_, pages) =
        live_campaign(&server, &account.api_key, account.workspace_id, name, count).await;
    (db, server, pages)
}

/// A visit's status and body.
async fn visit(server: &Server, url: &str) -> (u16, String) {
    let reply = server.send(server.client.get(url)).await;
    (reply.status, reply.text)
}

/// Visits `address` until its body satisfies `wanted`: at once in the process that made the
/// change (`first`), and in another within the time its `NOTIFY lps_pages` takes to arrive
/// (other processes hear of changes asynchronously, `core/domain/page_changes.rs`).
async fn shows(
    server: &Server,
    address: &str,
    first: bool,
    wanted: impl Fn(&str) -> bool,
) -> String {
    let started = std::time::Instant::now();
    loop {
        let (status, body) = visit(server, address).await;
        if status == 200 && wanted(&body) {
            return body;
        }
        assert!(
            !first && started.elapsed() < Duration::from_secs(5),
            "{status}: {body}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// The same page through another server.
fn through(other: &Server, url: &str) -> String {
    other.url_of(&format!("/p/{}", url.split_once("/p/").unwrap().1))
}

#[tokio::test]
async fn every_change_is_on_the_very_next_visit_here_and_in_another_process() {
    let db = TestDb::new();
    let account = bootstrap(&db, &[]);
    let server = Server::serve(&db, &[]);
    // On PostgreSQL a second process serves the same pages (and has them in memory too).
    let other = db
        .is_postgres()
        .then(|| Server::serve(&db, &["--job-workers", "0"]));
    let (key, ws) = (&account.api_key, account.workspace_id);
    let (campaign, pages) = live_campaign(&server, key, ws, "Cached", 2).await;
    let url = &pages[0].1;
    let mut addresses = vec![(&server, url.clone())];
    if let Some(other) = &other {
        addresses.push((other, through(other, url)));
    }
    // Everyone has the page in memory.
    for (server, address) in &addresses {
        for _ in 0..3 {
            let (status, body) = visit(server, address).await;
            assert_eq!(status, 200);
            assert!(body.contains("Lead0"), "{body}");
        }
    }
    let ids = json!({"workspace_id": ws, "campaign_id": campaign});

    // Unpublished: the next visit, anywhere, is the "not live" page.
    server
        .post(key, "/pages/unpublish", ids.clone())
        .await
        .expect(200);
    for (n, (server, address)) in addresses.iter().enumerate() {
        shows(server, address, n == 0, |body| body.contains(NOT_LIVE)).await;
    }

    // Published again: the page is back.
    server
        .post(key, "/pages/publish", ids.clone())
        .await
        .expect(200);
    for (n, (server, address)) in addresses.iter().enumerate() {
        shows(server, address, n == 0, |body| {
            !body.contains(NOT_LIVE) && body.contains("Lead0")
        })
        .await;
    }

    // Another template applied (the draft: visitors still see the published design), then
    // published: the new design.
    apply_premade(&server, key, ws, campaign, "Personal Spotlight").await;
    for (server, address) in &addresses {
        let (_, body) = visit(server, address).await;
        assert!(!body.contains("hero-card"), "draft shown: {body}");
    }
    server
        .post(key, "/pages/publish", ids.clone())
        .await
        .expect(200);
    for (n, (server, address)) in addresses.iter().enumerate() {
        shows(server, address, n == 0, |body| {
            body.contains("Hi Lead0, this page is yours.")
        })
        .await;
    }

    // The lead updated (an upsert matching its email): its page, and only its page, changes.
    let job = upsert(
        &server,
        key,
        json!({"campaign_id": campaign, "leads": [{"values": {"email": "cached-0@example.com", "first_name": "Grace"}}]}),
    )
    .await;
    wait_for_job(&server, key, &job).await;
    for (n, (server, address)) in addresses.iter().enumerate() {
        shows(server, address, n == 0, |body| {
            body.contains("Hi Grace, this page is yours.")
        })
        .await;
    }
    let (_, second) = visit(&server, &pages[1].1).await;
    assert!(second.contains("Hi Lead1, this page is yours."), "{second}");
}

#[tokio::test]
async fn one_leads_page_is_never_served_for_another() {
    let (_db, server, pages) = live_pages("Mixed", 2, &[]).await;
    let expected = ["Lead0", "Lead1"];
    let urls: Vec<String> = (0..400).map(|n| pages[n % 2].1.clone()).collect();
    for (n, status, body) in visit_concurrently(&server, &urls).await {
        let which = n % 2;
        assert_eq!(status, 200);
        assert!(body.contains(expected[which]), "{which}: {body}");
        assert!(!body.contains(expected[1 - which]), "{which}: {body}");
    }
}

/// Visits every address, 16 at a time; returns each one's (index, status, body).
async fn visit_concurrently(server: &Server, urls: &[String]) -> Vec<(usize, u16, String)> {
    let mut visits = tokio::task::JoinSet::new();
    let mut done = Vec::with_capacity(urls.len());
    for (n, url) in urls.iter().enumerate() {
        let (client, url) = (server.client.clone(), url.clone());
        visits.spawn(async move {
            let response = client.get(&url).send().await.unwrap();
            let status = response.status().as_u16();
            (n, status, response.text().await.unwrap())
        });
        if visits.len() >= 16 {
            done.push(visits.join_next().await.unwrap().unwrap());
        }
    }
    while let Some(visit) = visits.join_next().await {
        done.push(visit.unwrap());
    }
    done
}

#[tokio::test]
async fn a_304_and_a_head_come_from_memory_too() {
    let (_db, server, pages) = live_pages("Tags", 1, &[]).await;
    let url = &pages[0].1;
    let first = server.send(server.client.get(url)).await.expect(200);
    let etag = first.header("etag").unwrap().to_owned();
    for _ in 0..2 {
        let again = server
            .send(server.client.get(url).header("if-none-match", &etag))
            .await
            .expect(304);
        assert_eq!(again.header("etag"), Some(etag.as_str()));
        assert!(again.text.is_empty());
        let head = server.send(server.client.head(url)).await.expect(200);
        assert_eq!(head.header("etag"), Some(etag.as_str()));
        assert!(head.text.is_empty());
    }
}

/// What two answers of one page must share: status, headers and body, less what differs by
/// nature (the time, the request's own id) and the headers named in `left_out`; a page load's
/// cookie is compared by its attributes (its token is new on every answer).
fn comparable(reply: &Reply, left_out: &[&str]) -> (u16, Vec<(String, String)>, String) {
    let mut headers: Vec<(String, String)> = reply
        .headers
        .iter()
        .filter(|(name, _)| {
            !matches!(name.as_str(), "date" | "x-request-id") && !left_out.contains(&name.as_str())
        })
        .map(|(name, value)| {
            let value = value.to_str().unwrap();
            let value = match name.as_str() {
                "set-cookie" => value.split_once(';').unwrap().1,
                _ => value,
            };
            (name.to_string(), value.to_owned())
        })
        .collect();
    headers.sort();
    (reply.status, headers, reply.text.clone())
}

#[tokio::test]
async fn a_page_from_memory_is_answered_exactly_as_from_core() {
    let db = TestDb::new();
    let account = bootstrap(&db, &[]);
    let server = Server::serve(&db, &[]);
    let (key, ws) = (&account.api_key, account.workspace_id);
    let (campaign, pages) = live_campaign(&server, key, ws, "Same", 1).await;
    let url = &pages[0].1;
    // The first visit is rendered by core, the next from memory.
    let rendered = server.send(server.client.get(url)).await.expect(200);
    let kept = server.send(server.client.get(url)).await.expect(200);
    assert_eq!(comparable(&kept, &[]), comparable(&rendered, &[]));
    for name in [
        "content-security-policy",
        "referrer-policy",
        "permissions-policy",
        "x-content-type-options",
        "etag",
        "cache-control",
    ] {
        assert!(kept.header(name).is_some(), "{name} missing");
    }
    // A client's request id is kept; otherwise each answer gets its own.
    let traced = server
        .send(server.client.get(url).header("x-request-id", "visit-7"))
        .await
        .expect(200);
    assert_eq!(traced.header("x-request-id"), Some("visit-7"));
    assert_ne!(kept.header("x-request-id"), rendered.header("x-request-id"));
    assert_eq!(kept.header("x-request-id").unwrap().len(), 36);
    // HEAD: the length of the page and no body.
    let head = server.send(server.client.head(url)).await.expect(200);
    assert_eq!(
        head.header("content-length"),
        Some(rendered.text.len().to_string().as_str())
    );
    assert!(head.text.is_empty());
    // Only GET and HEAD of a page come from memory: a form post still reaches core.
    let posted = server
        .send(
            server
                .client
                .post(url)
                .header("content-type", "application/x-www-form-urlencoded")
                .body("message=hello"),
        )
        .await
        .expect(200);
    assert!(!posted.text.contains("Lead0"), "{}", posted.text);

    // The "not live" notice, from core and then from memory, alike as well.
    server
        .post(
            key,
            "/pages/unpublish",
            json!({"workspace_id": ws, "campaign_id": campaign}),
        )
        .await
        .expect(200);
    let rendered = server.send(server.client.get(url)).await.expect(200);
    let kept = server.send(server.client.get(url)).await.expect(200);
    assert!(kept.text.contains(NOT_LIVE), "{}", kept.text);
    assert_eq!(kept.header("cache-control"), Some("no-store"));
    assert_eq!(comparable(&kept, &[]), comparable(&rendered, &[]));
}

#[tokio::test]
async fn a_page_rendered_ahead_of_the_router_is_answered_as_through_it() {
    // Nothing kept: every visit is rendered by core. A plain address is answered ahead of the
    // router; the same address with a percent-escape goes through the router, whose `Path`
    // decodes it to the same slugs.
    let (_db, server, pages) = live_pages("Ahead", 1, &["--page-cache-mb", "0"]).await;
    let url = &pages[0].1;
    let (before, slug) = url.rsplit_once('/').unwrap();
    let escaped = format!("{before}/%{:02X}{}", slug.as_bytes()[0], &slug[1..]);
    // The page load's cookie only a plain address gets (nothing of an escaped one goes into a
    // header).
    let alike = |reply: &Reply| comparable(reply, &["set-cookie"]);
    let ahead = server.send(server.client.get(url)).await.expect(200);
    let routed = server.send(server.client.get(&escaped)).await.expect(200);
    assert!(ahead.text.contains("Lead0"), "{}", ahead.text);
    assert_eq!(alike(&ahead), alike(&routed));
    let cookie = ahead.header("set-cookie").unwrap();
    assert!(cookie.starts_with("lps_load="), "{cookie}");
    assert_eq!(routed.header("set-cookie"), None);
    for name in ["content-security-policy", "x-content-type-options", "etag"] {
        assert!(ahead.header(name).is_some(), "{name} missing");
    }
    assert_eq!(ahead.header("x-request-id").unwrap().len(), 36);
    let traced = server
        .send(server.client.get(url).header("x-request-id", "first-9"))
        .await
        .expect(200);
    assert_eq!(traced.header("x-request-id"), Some("first-9"));
    // A conditional visit and a HEAD, alike either way.
    let etag = ahead.header("etag").unwrap().to_owned();
    for address in [url.as_str(), escaped.as_str()] {
        let current = server
            .send(server.client.get(address).header("if-none-match", &etag))
            .await
            .expect(304);
        assert!(current.text.is_empty());
        let head = server.send(server.client.head(address)).await.expect(200);
        assert_eq!(
            head.header("content-length"),
            Some(ahead.text.len().to_string().as_str())
        );
        assert!(head.text.is_empty());
    }
    // An unknown page: the same not-found page either way.
    let unknown = server
        .send(server.client.get(server.url_of("/p/nobody/nothing")))
        .await
        .expect(404);
    let unknown_routed = server
        .send(server.client.get(server.url_of("/p/nob%6Fdy/nothing")))
        .await
        .expect(404);
    assert_eq!(alike(&unknown), alike(&unknown_routed));
    // Both are counted under the page's route.
    let metrics = server
        .send(server.client.get(server.url_of("/metrics")))
        .await;
    let served = metrics
        .text
        .lines()
        .filter(|line| {
            line.starts_with("lps_http_requests_total")
                && line.contains("route=\"/p/{campaign_slug}/{lead_slug}\"")
        })
        .filter_map(|line| line.rsplit_once(' ')?.1.parse::<f64>().ok())
        .sum::<f64>();
    assert_eq!(served, 9.0, "{}", metrics.text);
}

/// Visits every page twice and returns how much the server's resident memory grew, in KiB.
async fn growth_after_visiting(server: &Server, pages: &[(i64, String)]) -> u64 {
    let before = rss_kib(server.pid());
    let urls: Vec<String> = pages.iter().map(|(_, url)| url.clone()).collect();
    for _ in 0..2 {
        for (_, status, _) in visit_concurrently(server, &urls).await {
            assert_eq!(status, 200);
        }
    }
    tokio::time::sleep(Duration::from_millis(200)).await;
    rss_kib(server.pid()).saturating_sub(before)
}

#[tokio::test]
async fn the_page_cache_stays_within_its_memory() {
    let db = TestDb::new();
    let account = bootstrap(&db, &[]);
    let small = Server::serve(&db, &["--page-cache-mb", "1"]);
    let (_, probe) =
        live_campaign(&small, &account.api_key, account.workspace_id, "Probe", 1).await;
    let page_bytes = visit(&small, &probe[0].1).await.1.len();
    // Enough pages for 16 MiB, sixteen times the small cache's bound.
    let count = (16 * 1024 * 1024 / page_bytes).max(1000);
    let (_, pages) = live_campaign(
        &small,
        &account.api_key,
        account.workspace_id,
        "Filled",
        count,
    )
    .await;
    let large = Server::serve(&db, &["--job-workers", "0", "--page-cache-mb", "256"]);
    let through_large: Vec<(i64, String)> = pages
        .iter()
        .map(|(id, url)| (*id, through(&large, url)))
        .collect();
    // Both servers warmed up the same way before measuring.
    for (server, pages) in [(&small, &pages), (&large, &through_large)] {
        for (_, url) in pages.iter().take(200) {
            visit(server, url).await;
        }
    }
    let small_growth = growth_after_visiting(&small, &pages).await;
    let large_growth = growth_after_visiting(&large, &through_large).await;
    eprintln!(
        "{count} pages of ~{page_bytes} bytes: RSS grew {small_growth} KiB with a 1 MiB cache, \
         {large_growth} KiB with 256 MiB"
    );
    assert!(
        small_growth < 12 * 1024,
        "a 1 MiB cache grew the process by {small_growth} KiB"
    );
    assert!(
        large_growth > small_growth + 8 * 1024,
        "the large cache kept nothing? {large_growth} vs {small_growth} KiB"
    );
}

#[tokio::test]
async fn a_repeat_visit_is_answered_from_memory() {
    let (db, server, pages) = live_pages("Memory", 1, &[]).await;
    let (lead_id, url) = &pages[0];
    assert!(visit(&server, url).await.1.contains("Lead0"));
    // A row changed behind core's back (nothing announced): the kept page is served.
    let store = lps::admin::Db::connect(&db.url).await.unwrap();
    sqlx::query("UPDATE leads SET first_name = 'Behind' WHERE id = $1")
        .bind(lead_id)
        .execute(store.pool())
        .await
        .unwrap();
    let (_, body) = visit(&server, url).await;
    assert!(body.contains("Lead0") && !body.contains("Behind"), "{body}");
}
