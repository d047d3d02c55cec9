//! A workspace's own domains (issue 49): added, verified by their DNS records through a real
//! DNS server on loopback (`pebble-challtestsrv` from Debian's `pebble` package, its records
//! set through its management API, lps pointed at it with `--dns-server`), then served by host:
//! only that workspace's pages, the `/p/` prefix optional; Caddy's `ask` answers for them
//! only. Skipped with a notice where `pebble-challtestsrv` is missing, unless
//! `LPS_REQUIRE_PEBBLE` is set, as CI sets it.

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::common::*;

/// `pebble-challtestsrv` on loopback: a DNS server whose records a test sets.
pub struct TestDns {
    child: Child,
    /// Where lps asks (`--dns-server`).
    pub server: String,
    management: String,
    client: reqwest::Client,
}

impl Drop for TestDns {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Whether `program` of Debian's `pebble` package is here to test with: where it is not, the
/// test is skipped with a notice, unless `LPS_REQUIRE_PEBBLE` is set (as CI sets it).
pub fn pebble_installed(program: &str) -> bool {
    let installed = Command::new(program)
        .arg("-h")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok();
    if !installed {
        assert!(
            std::env::var_os("LPS_REQUIRE_PEBBLE").is_none(),
            "{program} is required (apt-get install pebble)"
        );
        eprintln!("skipped: apt-get install pebble to test custom domains and HTTPS");
    }
    installed
}

impl TestDns {
    pub fn start() -> Option<Self> {
        if !pebble_installed("pebble-challtestsrv") {
            return None;
        }
        let (dns, management) = (free_port(), free_port());
        let mut child = Command::new("pebble-challtestsrv")
            .args(["-dns01", &format!("127.0.0.1:{dns}")])
            .args(["-management", &format!("127.0.0.1:{management}")])
            .args(["-http01", "", "-https01", "", "-tlsalpn01", ""])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        for _ in 0..100 {
            if std::net::TcpStream::connect(("127.0.0.1", management)).is_ok() {
                return Some(Self {
                    child,
                    server: format!("127.0.0.1:{dns}"),
                    management: format!("http://127.0.0.1:{management}"),
                    client: reqwest::Client::new(),
                });
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        let _ = child.kill();
        let _ = child.wait();
        panic!("pebble-challtestsrv did not start");
    }

    /// `body`'s `host` is made absolute (Debian's version matches names with their final dot).
    async fn manage(&self, path: &str, mut body: Value) {
        body["host"] = json!(format!(
            "{}.",
            body["host"].as_str().unwrap().trim_end_matches('.')
        ));
        let response = self
            .client
            .post(format!("{}{path}", self.management))
            .json(&body)
            .send()
            .await
            .unwrap();
        assert!(response.status().is_success(), "{path}: {response:?}");
    }

    pub async fn set_txt(&self, host: &str, value: &str) {
        self.manage("/set-txt", json!({"host": host, "value": value}))
            .await;
    }

    pub async fn clear_txt(&self, host: &str) {
        self.manage("/clear-txt", json!({"host": host})).await;
    }

    /// No AAAA record unless one is set (the default is `::1`, where lps does not listen in
    /// the tests): what an ACME server's validation dials is then lps's IPv4 address.
    pub async fn no_default_ipv6(&self) {
        let response = self
            .client
            .post(format!("{}/set-default-ipv6", self.management))
            .json(&json!({"ip": ""}))
            .send()
            .await
            .unwrap();
        assert!(response.status().is_success(), "{response:?}");
    }

    pub async fn set_a(&self, host: &str, addresses: &[&str]) {
        self.manage("/clear-a", json!({"host": host})).await;
        self.manage("/add-a", json!({"host": host, "addresses": addresses}))
            .await;
    }
}

/// A visit to `path` on `server` as if to `host` (its `Host` header).
pub async fn visit_as(server: &Server, host: &str, path: &str) -> Reply {
    server
        .send(server.client.get(server.url_of(path)).header("host", host))
        .await
}

/// The `/{campaign}/{lead}` of a page address.
pub fn page_path(url: &str) -> String {
    format!("/{}", url.split_once("/p/").unwrap().1)
}

async fn domains_of(server: &Server, key: &str, ws: i64) -> Vec<Value> {
    server
        .get(key, &format!("/domains/get-list?workspace_id={ws}"))
        .await
        .expect(200)
        .json()["domains"]
        .as_array()
        .unwrap()
        .clone()
}

/// A DNS server on loopback, and lps asking it (with these flags besides), with one account;
/// `None` where `pebble-challtestsrv` is missing (see [`TestDns::start`]).
async fn with_dns(flags: &[&str]) -> Option<(TestDns, TestDb, Account, Server)> {
    let dns = TestDns::start()?;
    let db = TestDb::new();
    let account = bootstrap(&db, &[]);
    let mut args = vec!["--dns-server", dns.server.as_str()];
    args.extend_from_slice(flags);
    let server = Server::serve(&db, &args);
    Some((dns, db, account, server))
}

/// [`with_dns`] with checks every second and a grace period of `grace` seconds, and a live
/// campaign of one lead: the address of its page (`/{campaign}/{lead}`).
async fn with_quick_checks(grace: &str) -> Option<(TestDns, TestDb, Account, Server, String)> {
    let flags = [
        "--domain-retry-seconds",
        "1",
        "--domain-recheck-seconds",
        "1",
        "--domain-grace-seconds",
        grace,
    ];
    let (dns, db, account, server) = with_dns(&flags).await?;
    let (key, ws) = (&account.api_key, account.workspace_id);
    let (_, pages) = live_campaign(&server, key, ws, "Spring", 1).await;
    let own = page_path(&pages[0].1);
    Some((dns, db, account, server, own))
}

/// Adds `hostname` to the workspace and creates its TXT record (the default A record of the
/// test DNS already points at lps): the domain as added.
pub async fn add_with_record(
    server: &Server,
    dns: &TestDns,
    key: &str,
    ws: i64,
    hostname: &str,
) -> Value {
    let domain = server
        .post(
            key,
            "/domains/create",
            json!({"workspace_id": ws, "hostname": hostname}),
        )
        .await
        .expect(200)
        .json();
    dns.set_txt(
        &format!("_lps-challenge.{hostname}"),
        domain["txt_value"].as_str().unwrap(),
    )
    .await;
    domain
}

#[tokio::test]
async fn a_domain_verified_by_its_records_serves_only_its_workspaces_pages() {
    let Some(dns) = TestDns::start() else { return };
    let db = TestDb::new();
    let account = bootstrap(&db, &[]);
    let (other_ws, other_key) = add_workspace(&db, account.account_id, "Other");
    let server = Server::serve(
        &db,
        &["--dns-server", &dns.server, "--domain-retry-seconds", "1"],
    );
    let (key, ws) = (&account.api_key, account.workspace_id);
    let (campaign, pages) = live_campaign(&server, key, ws, "Spring", 2).await;
    let (_, others) = live_campaign(&server, &other_key, other_ws, "Autumn", 1).await;

    // Added: pending, with the two records to create.
    let domain = server
        .post(
            key,
            "/domains/create",
            json!({"workspace_id": ws, "hostname": "Go.Example.Test."}),
        )
        .await
        .expect(200)
        .json();
    assert_eq!(domain["hostname"], "go.example.test");
    assert_eq!(domain["status"], "pending");
    assert_eq!(domain["txt_name"], "_lps-challenge.go.example.test");
    assert_eq!(domain["cname_target"], "127.0.0.1");
    let token = domain["txt_value"].as_str().unwrap().to_owned();
    assert!(token.starts_with("lps-verify="), "{domain}");
    let id = domain["domain_id"].as_i64().unwrap();
    let check = json!({"workspace_id": ws, "domain_id": id});

    // Not yet served: its host is no one's, and a page path without /p/ is nothing there.
    let own = page_path(&pages[0].1);
    assert_eq!(visit_as(&server, "go.example.test", &own).await.status, 404);

    // Verification fails until the TXT record exists...
    let checked = server
        .post(key, "/domains/verify", check.clone())
        .await
        .expect(200)
        .json();
    assert_eq!(checked["status"], "pending");
    assert!(
        checked["reason"]
            .as_str()
            .unwrap()
            .contains("_lps-challenge.go.example.test"),
        "{checked}"
    );
    assert_eq!(
        checked["txt_value"],
        Value::Null,
        "the value is answered once"
    );
    dns.set_txt("_lps-challenge.go.example.test", "lps-verify=someone-else")
        .await;
    let checked = server
        .post(key, "/domains/verify", check.clone())
        .await
        .json();
    assert_eq!(checked["status"], "pending");
    assert!(
        checked["reason"]
            .as_str()
            .unwrap()
            .contains("does not hold"),
        "{checked}"
    );
    // ...and while the host points elsewhere.
    dns.set_txt("_lps-challenge.go.example.test", &token).await;
    dns.set_a("go.example.test", &["192.0.2.7"]).await;
    let checked = server
        .post(key, "/domains/verify", check.clone())
        .await
        .json();
    assert_eq!(checked["status"], "pending");
    assert!(
        checked["reason"].as_str().unwrap().contains("192.0.2.7"),
        "{checked}"
    );
    dns.set_a("go.example.test", &["127.0.0.1"]).await;
    let checked = server
        .post(key, "/domains/verify", check.clone())
        .await
        .expect(200)
        .json();
    assert_eq!(checked["status"], "verified", "{checked}");
    assert!(is_iso8601_micros(&checked["verified_at"]), "{checked}");

    // Served at once: the workspace's pages, with or without /p/; nothing else.
    let page = visit_as(&server, "go.example.test", &own).await.expect(200);
    assert!(page.text.contains("<html"), "{}", page.text);
    assert!(page.header("content-security-policy").is_some());
    visit_as(&server, "GO.example.test:80", &format!("/p{own}"))
        .await
        .expect(200);
    let foreign = page_path(&others[0].1);
    visit_as(&server, "go.example.test", &foreign)
        .await
        .expect(404);
    visit_as(&server, "go.example.test", &format!("/p{foreign}"))
        .await
        .expect(404);
    // Nor its link-preview card, with or without the prefix.
    for card in [format!("{foreign}/og.png"), format!("/p{foreign}/og.png")] {
        visit_as(&server, "go.example.test", &card)
            .await
            .expect(404);
    }
    visit_as(&server, "go.example.test", &format!("{own}/og.png"))
        .await
        .expect(200);
    // The host routed on is the Host header's (what a proxy or cache in front keys on), and a
    // request naming two hosts is refused.
    let raw = |request: String| {
        let address = server
            .url_of("/")
            .trim_start_matches("http://")
            .trim_end_matches('/')
            .to_owned();
        async move {
            use tokio::io::{AsyncReadExt, AsyncWriteExt};
            let mut stream = tokio::net::TcpStream::connect(address).await.unwrap();
            stream.write_all(request.as_bytes()).await.unwrap();
            let mut answer = Vec::new();
            stream.read_to_end(&mut answer).await.unwrap();
            String::from_utf8_lossy(&answer).into_owned()
        }
    };
    let base = server.url_of("");
    let absolute = raw(format!(
        "GET {base}/p{foreign} HTTP/1.1\r\nHost: go.example.test\r\nConnection: close\r\n\r\n"
    ))
    .await;
    assert!(absolute.starts_with("HTTP/1.1 404"), "{absolute}");
    let two = raw(format!(
        "GET /p{foreign} HTTP/1.1\r\nHost: 127.0.0.1\r\nHost: go.example.test\r\nConnection: close\r\n\r\n"
    ))
    .await;
    assert!(two.starts_with("HTTP/1.1 400"), "{two}");
    for elsewhere in [
        "/",
        "/dashboard",
        "/api/external/v1/hello-world-user",
        "/api/external/v1/openapi.json",
        "/mcp",
    ] {
        visit_as(&server, "go.example.test", elsewhere)
            .await
            .expect(404);
    }
    visit_as(&server, "go.example.test", "/p/track.js")
        .await
        .expect(200);
    // The deployment's own host still serves every workspace's pages.
    server
        .send(server.client.get(&others[0].1))
        .await
        .expect(200);

    // The campaign picks the domain: every address lps hands out of its pages is on it (the
    // lead as the API answers it, its page's og:url), and back once it goes.
    let lead_url = |lead_id: i64| {
        let server = &server;
        async move {
            server
                .get(key, &format!("/leads/get?lead_id={lead_id}"))
                .await
                .expect(200)
                .json()["service_page_url"]
                .as_str()
                .unwrap()
                .to_owned()
        }
    };
    assert_eq!(lead_url(pages[0].0).await, pages[0].1);
    let picked = server
        .post(
            key,
            "/campaigns/update",
            json!({"workspace_id": ws, "campaign_id": campaign, "domain_id": id}),
        )
        .await
        .expect(200)
        .json();
    assert_eq!(picked["domain_id"], id);
    let on_domain = format!("https://go.example.test{own}");
    assert_eq!(lead_url(pages[0].0).await, on_domain);
    let page = visit_as(&server, "go.example.test", &own).await.expect(200);
    assert!(
        page.text.contains(&format!(
            "<meta property=\"og:url\" content=\"{on_domain}\">"
        )),
        "{}",
        page.text
    );
    server
        .post(
            &other_key,
            "/campaigns/update",
            json!({"workspace_id": other_ws, "campaign_id": campaign, "domain_id": id}),
        )
        .await
        .expect(404);

    // Beacons and forms on the host count for its own pages only.
    let beacon = |path: String| {
        server
            .client
            .post(server.url_of(&format!("{path}/beacon")))
            .header("host", "go.example.test")
            .header("content-type", "text/plain;charset=UTF-8")
            .header("user-agent", DESKTOP_BROWSER)
            .body(json!({"type": "click", "target": "https://example.com"}).to_string())
    };
    assert_eq!(server.send(beacon(own.clone())).await.status, 204);
    let form = |path: &str| {
        server
            .client
            .post(server.url_of(path))
            .header("host", "go.example.test")
            .header("user-agent", DESKTOP_BROWSER)
            .header("content-type", "application/x-www-form-urlencoded")
            .body("email=someone%40example.com")
    };
    let stored = server.send(form(&own)).await;
    assert_eq!(stored.status, 200, "{}", stored.text);
    let refused = server.send(form(&foreign)).await;
    assert_eq!(refused.status, 404, "{}", refused.text);
    let submissions = server
        .get(
            &other_key,
            &format!("/automation/get-form-submissions?workspace_id={other_ws}"),
        )
        .await
        .expect(200)
        .json();
    assert_eq!(submissions.as_array().unwrap().len(), 0, "{submissions}");

    // Caddy's ask: 200 for a verified domain only, no credential.
    let ask = |domain: &str| {
        server.send(
            server
                .client
                .get(server.url(&format!("/domains/ask?domain={domain}"))),
        )
    };
    ask("go.example.test").await.expect(200);
    ask("GO.EXAMPLE.TEST.").await.expect(200);
    ask("other.example.test").await.expect(404);
    let missing = server
        .send(server.client.get(server.url("/domains/ask")))
        .await
        .expect(422);
    assert!(missing.json()["errors"]["domain"].is_array());
    server
        .send(server.client.get(server.url("/domains/ask?domain=%00")))
        .await
        .expect(422);

    // Another workspace cannot take a verified hostname, even with its own record.
    let theirs = server
        .post(
            &other_key,
            "/domains/create",
            json!({"workspace_id": other_ws, "hostname": "go.example.test"}),
        )
        .await
        .expect(200)
        .json();
    dns.set_txt(
        "_lps-challenge.go.example.test",
        theirs["txt_value"].as_str().unwrap(),
    )
    .await;
    let taken = server
        .post(
            &other_key,
            "/domains/verify",
            json!({"workspace_id": other_ws, "domain_id": theirs["domain_id"]}),
        )
        .await
        .expect(200)
        .json();
    assert_eq!(taken["status"], "pending");
    assert!(
        taken["reason"]
            .as_str()
            .unwrap()
            .contains("Another workspace"),
        "{taken}"
    );
    visit_as(&server, "go.example.test", &foreign)
        .await
        .expect(404);

    // Deleted: no longer served; the workspace that lost the hostname gets it by itself.
    server
        .post(key, "/domains/delete", check.clone())
        .await
        .expect(200);
    visit_as(&server, "go.example.test", &own).await.expect(404);
    assert_eq!(lead_url(pages[0].0).await, pages[0].1);
    server.post(key, "/domains/verify", check).await.expect(404);
    let deadline = Instant::now() + Duration::from_secs(20);
    while domains_of(&server, &other_key, other_ws).await[0]["status"] != "verified" {
        assert!(
            Instant::now() < deadline,
            "the freed hostname was never taken"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    visit_as(&server, "go.example.test", &foreign)
        .await
        .expect(200);
    visit_as(&server, "go.example.test", &own).await.expect(404);
    ask("go.example.test").await.expect(200);
}

#[tokio::test]
async fn a_pending_domain_is_checked_by_itself_and_one_whose_records_go_lapses() {
    let Some((dns, _db, account, server, own)) = with_quick_checks("2").await else {
        return;
    };
    let (key, ws) = (&account.api_key, account.workspace_id);
    add_with_record(&server, &dns, key, ws, "www.example.test").await;
    // No one asks: lps checks again by itself (after 1 s, then 2 s, ...).
    let until = |wanted: &'static str| {
        let server = &server;
        async move {
            let deadline = Instant::now() + Duration::from_secs(30);
            loop {
                let listed = domains_of(server, key, ws).await;
                if listed[0]["status"] == wanted {
                    return listed[0].clone();
                }
                assert!(Instant::now() < deadline, "never {wanted}: {listed:?}");
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
        }
    };
    until("verified").await;
    visit_as(&server, "www.example.test", &own)
        .await
        .expect(200);

    // The records go: still served for the grace period, with what is wrong said, then lapsed
    // and no longer served.
    dns.clear_txt("_lps-challenge.www.example.test").await;
    let lapsed = until("lapsed").await;
    assert!(
        lapsed["reason"].as_str().unwrap().contains("No TXT record"),
        "{lapsed}"
    );
    visit_as(&server, "www.example.test", &own)
        .await
        .expect(404);
}

#[tokio::test]
async fn hostnames_that_no_one_workspace_can_own_are_refused() {
    let db = TestDb::new();
    let account = bootstrap(&db, &[]);
    let server = Server::serve(&db, &["--domain-retry-seconds", "3600"]);
    let (key, ws) = (&account.api_key, account.workspace_id);
    for hostname in [
        "co.uk",
        "github.io",
        "127.0.0.1",
        "[::1]",
        "https://go.example.com/",
        "go.example.com:8443",
        "*.example.com",
        "go_x.example.com",
        &format!("{}.example.com", vec!["a".repeat(56); 4].join(".")),
        "",
    ] {
        let refused = server
            .post(
                key,
                "/domains/create",
                json!({"workspace_id": ws, "hostname": hostname}),
            )
            .await
            .expect(422)
            .json();
        assert!(refused["errors"]["hostname"].is_array(), "{refused}");
    }
    server
        .post(
            key,
            "/domains/create",
            json!({"workspace_id": ws, "hostname": "example.co.uk"}),
        )
        .await
        .expect(200);
    let again = server
        .post(
            key,
            "/domains/create",
            json!({"workspace_id": ws, "hostname": "EXAMPLE.co.uk"}),
        )
        .await
        .expect(409);
    assert!(again.text.contains("already has"), "{}", again.text);
    server
        .post(
            key,
            "/domains/verify",
            json!({"workspace_id": ws, "domain_id": 999_999}),
        )
        .await
        .expect(404);
    server
        .get(key, "/domains/get-list?workspace_id=abc")
        .await
        .expect(422);
    let listed = domains_of(&server, key, ws).await;
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0]["txt_value"], Value::Null);
}

#[tokio::test]
async fn a_resolver_that_is_out_never_lapses_a_verified_domain() {
    let Some((dns, _db, account, server, own)) = with_quick_checks("1").await else {
        return;
    };
    let (key, ws) = (&account.api_key, account.workspace_id);
    let domain = add_with_record(&server, &dns, key, ws, "go.example.test").await;
    let check = json!({"workspace_id": ws, "domain_id": domain["domain_id"]});
    let verified = server
        .post(key, "/domains/verify", check.clone())
        .await
        .json();
    assert_eq!(verified["status"], "verified", "{verified}");

    // The DNS server goes: checks fail, which proves nothing; past the grace period the
    // domain is still verified and served, the reason saying why nothing could be checked.
    drop(dns);
    tokio::time::sleep(Duration::from_secs(4)).await;
    let still = server
        .post(key, "/domains/verify", check)
        .await
        .expect(200)
        .json();
    assert_eq!(still["status"], "verified", "{still}");
    assert!(
        still["reason"]
            .as_str()
            .unwrap()
            .contains("DNS look-up failed"),
        "{still}"
    );
    visit_as(&server, "go.example.test", &own).await.expect(200);
}

#[tokio::test]
async fn a_person_on_the_senders_domain_sees_its_address_and_is_counted_in_a_real_browser() {
    let Some((dns, _db, account, server)) = with_dns(&[]).await else {
        return;
    };
    let Some(driver) = crate::browser::driver("custom domain").await else {
        return;
    };
    let (key, ws) = (&account.api_key, account.workspace_id);
    let (campaign, pages) = live_campaign(&server, key, ws, "Spring", 1).await;
    let (lead, address) = &pages[0];
    let domain = add_with_record(&server, &dns, key, ws, "go.example.test").await;
    let check = json!({"workspace_id": ws, "domain_id": domain["domain_id"]});
    let verified = server.post(key, "/domains/verify", check).await.json();
    assert_eq!(verified["status"], "verified", "{verified}");
    server
        .post(
            key,
            "/campaigns/update",
            json!({"workspace_id": ws, "campaign_id": campaign, "domain_id": domain["domain_id"]}),
        )
        .await
        .expect(200);

    // The prospect's browser finds go.example.test at lps (as the CNAME would lead it there;
    // plain HTTP here, HTTPS in front of it in production).
    let port = server
        .url_of("/")
        .split(':')
        .nth(2)
        .unwrap()
        .trim_end_matches('/')
        .to_owned();
    let browser = crate::browser::browser_resolving(
        &driver,
        &format!("MAP go.example.test 127.0.0.1:{port}"),
    )
    .await;
    let path = page_path(address);
    browser
        .goto(&format!("http://go.example.test{path}"))
        .await
        .unwrap();
    let og_url = browser
        .execute(
            "return document.querySelector('meta[property=\"og:url\"]').content",
            vec![],
        )
        .await
        .unwrap();
    assert_eq!(og_url, json!(format!("https://go.example.test{path}")));
    // A person stays a few seconds: the view counts, its beacons sent on the domain.
    tokio::time::sleep(Duration::from_millis(3500)).await;
    one_view_counted(&server, key, *lead).await;
    browser.close().await.unwrap();
}

#[tokio::test]
async fn asking_whether_a_domain_is_served_is_limited_per_address() {
    let db = TestDb::new();
    bootstrap(&db, &[]);
    let server = Server::serve(&db, &["--rate-limit-per-minute", "3"]);
    let ask = || {
        server.send(
            server
                .client
                .get(server.url("/domains/ask?domain=go.example.test")),
        )
    };
    for _ in 0..3 {
        ask().await.expect(404);
    }
    let refused = ask().await.expect(429);
    let seconds: u64 = refused.header("retry-after").unwrap().parse().unwrap();
    assert!((1..=60).contains(&seconds), "{seconds}");
}
