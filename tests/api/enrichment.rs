//! Enrichment: `POST /leads/enrich`, the upsert flags that queue it, the job statuses it goes
//! through, results on `/leads/get`, credits spent and given back. The websites (a profile
//! page with Open Graph and JSON-LD, a company site with an Atom feed, an RSS feed) and the
//! model server are fakes on loopback; the hosts `acme.test` and `people.test` reach the fake
//! site through `--resolve`.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::common::*;
use axum::http::{StatusCode, header};
use axum::response::IntoResponse;
use serde_json::{Value, json};
use tokio::sync::Semaphore;

const PROFILE: &str = r#"<!doctype html><html><head><title>Jane Doe | People</title>
<meta property="og:title" content="Jane Doe - Head of Growth">
<meta property="og:description" content="Growth at Acme.">
<link rel="alternate" type="application/rss+xml" href="/in/jane/feed.xml">
<script type="application/ld+json">{"@context":"https://schema.org","@type":"Person",
 "name":"Jane Doe","jobTitle":"Head of Growth","description":"Builds growth teams that last.",
 "worksFor":{"@type":"Organization","name":"Acme"}}</script></head><body>Jane</body></html>"#;

const PERSON_FEED: &str = r#"<?xml version="1.0"?><rss version="2.0"><channel><title>Jane</title>
<item><title>Why onboarding beats acquisition</title><link>https://people.example/p/2</link>
<pubDate>Fri, 20 Nov 2026 10:00:00 GMT</pubDate></item>
<item><title>Hiring my first growth PM</title><link>https://people.example/p/1</link>
<pubDate>Mon, 02 Nov 2026 10:00:00 GMT</pubDate></item></channel></rss>"#;

const COMPANY_HOME: &str = r#"<!doctype html><html><head><title>Acme</title>
<meta name="description" content="Acme makes invoicing painless for small firms.">
<link rel="alternate" type="application/atom+xml" href="/blog/atom.xml">
<script type="application/ld+json">[{"@context":"https://schema.org","@type":"Organization",
 "name":"Acme Ltd","logo":"https://acme.test/logo.png"}]</script></head><body></body></html>"#;

const COMPANY_FEED: &str = r#"<?xml version="1.0" encoding="utf-8"?>
<feed xmlns="http://www.w3.org/2005/Atom"><title>Acme blog</title><id>urn:acme</id>
<updated>2026-11-18T09:00:00Z</updated>
<entry><title>Acme raises Series B</title><id>urn:acme:2</id>
<link href="https://acme.test/blog/series-b"/><updated>2026-11-18T09:00:00Z</updated></entry>
<entry><title>New invoicing API</title><id>urn:acme:1</id>
<link href="https://acme.test/blog/api"/><updated>2026-10-01T09:00:00Z</updated></entry>
</feed>"#;

/// The fake websites: every request is logged and waits for a permit of `gate`.
struct Site {
    port: u16,
    requests: Arc<Mutex<Vec<String>>>,
    gate: Arc<Semaphore>,
}

impl Site {
    /// A profile page: `people.test` is the fake site too.
    fn profile_url(&self, path: &str) -> String {
        format!("http://people.test{path}")
    }

    fn resolve(&self) -> String {
        format!(
            "acme.test=127.0.0.1:{port},people.test=127.0.0.1:{port}",
            port = self.port
        )
    }

    fn requests(&self) -> Vec<String> {
        self.requests.lock().unwrap().clone()
    }
}

async fn fake_site(open: bool) -> Site {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let requests: Arc<Mutex<Vec<String>>> = Arc::default();
    let gate = Arc::new(Semaphore::new(if open { 10_000 } else { 0 }));
    let (log, permits) = (requests.clone(), gate.clone());
    let app = axum::Router::new().fallback(move |uri: axum::http::Uri| {
        let (log, permits) = (log.clone(), permits.clone());
        async move {
            log.lock().unwrap().push(uri.path().to_owned());
            permits.acquire().await.unwrap().forget();
            let (kind, body) = match uri.path() {
                "/in/jane" => ("text/html", PROFILE),
                "/in/jane/feed.xml" => ("application/rss+xml", PERSON_FEED),
                "/" => ("text/html; charset=utf-8", COMPANY_HOME),
                "/blog/atom.xml" => ("application/atom+xml", COMPANY_FEED),
                "/in/nobody" => ("text/html", "<html><body>nothing here</body></html>"),
                "/in/broken" => {
                    return (StatusCode::INTERNAL_SERVER_ERROR, "down").into_response();
                }
                _ => return StatusCode::NOT_FOUND.into_response(),
            };
            ([(header::CONTENT_TYPE, kind)], body).into_response()
        }
    });
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    Site {
        port,
        requests,
        gate,
    }
}

struct Desk {
    server: Server,
    db: TestDb,
    account: Account,
}

async fn desk(site: &Site, extra: &[&str]) -> Desk {
    let db = TestDb::new();
    let account = bootstrap(&db, &[]);
    let resolve = site.resolve();
    let mut args = vec!["--rate-limit-per-minute", "100000", "--resolve", &resolve];
    args.extend_from_slice(extra);
    let server = Server::serve(&db, &args);
    let desk = Desk {
        server,
        db,
        account,
    };
    desk.set_credits(100);
    desk
}

impl Desk {
    fn set_credits(&self, credits: i64) {
        let account = self.account.account_id.to_string();
        let credits = credits.to_string();
        lps(&[
            "admin",
            "account",
            "set-plan",
            "--database-url",
            &self.db.url,
            "--account",
            &account,
            "--plan",
            "pro_monthly",
            "--credits",
            &credits,
        ]);
    }

    async fn remaining(&self) -> i64 {
        self.server
            .get(
                &self.account.api_key,
                &format!(
                    "/account/credits?workspace_id={}",
                    self.account.workspace_id
                ),
            )
            .await
            .expect(200)
            .json()["remaining"]
            .as_i64()
            .unwrap()
    }

    /// Imports leads at once (`sync`) and returns their ids.
    async fn leads(&self, values: Vec<Value>) -> Vec<i64> {
        let leads: Vec<Value> = values.into_iter().map(|v| json!({"values": v})).collect();
        let body = json!({"workspace_id": self.account.workspace_id, "sync": true, "leads": leads});
        let imported = self
            .server
            .post(&self.account.api_key, "/leads/import-to-workspace", body)
            .await
            .expect(200)
            .json();
        imported["lead_ids"]
            .as_array()
            .unwrap()
            .iter()
            .map(|id| id.as_i64().unwrap())
            .collect()
    }

    async fn enrich(&self, lead_ids: &[i64], types: &[&str]) -> Reply {
        let body = json!({"workspace_id": self.account.workspace_id, "lead_ids": lead_ids,
                          "enrichment_types": types});
        self.server
            .post(&self.account.api_key, "/leads/enrich", body)
            .await
    }

    async fn lead(&self, id: i64) -> Value {
        self.server
            .get(&self.account.api_key, &format!("/leads/get?lead_id={id}"))
            .await
            .expect(200)
            .json()
    }

    async fn status(&self, job: &str) -> Value {
        self.server
            .get(
                &self.account.api_key,
                &format!("/leads/get-status?job_id={job}"),
            )
            .await
            .expect(200)
            .json()
    }

    /// Polls the job until its status is `wanted` (30 s at most).
    async fn until_status(&self, job: &str, wanted: &str) -> Value {
        let started = Instant::now();
        loop {
            let status = self.status(job).await;
            if status["status"] == wanted {
                return status;
            }
            assert!(
                started.elapsed() < Duration::from_secs(30),
                "never {wanted}: {status}"
            );
            tokio::time::sleep(Duration::from_millis(25)).await;
        }
    }
}

const ALL_TYPES: [&str; 5] = [
    "social_profile_url",
    "company_domain",
    "person_analysis",
    "social_posts_person",
    "social_posts_company",
];

#[tokio::test]
async fn every_type_lands_on_the_lead_with_its_credits_spent() {
    let site = fake_site(false).await;
    let d = desk(&site, &["--allow-private-network"]).await;
    let ids = d
        .leads(vec![json!({"first_name": "Jane", "company_name": "Acme",
                           "company_domain": "acme.test",
                           "social_profile_url": site.profile_url("/in/jane")})])
        .await;
    let accepted = d.enrich(&ids, &ALL_TYPES).await.expect(200).json();
    assert_eq!(accepted["leads_to_enrich"], 1);
    assert_eq!(accepted["skipped_leads"], 0);
    assert!(accepted["message"].as_str().unwrap().contains("1 lead"));
    let job = accepted["job_id"].as_str().unwrap().to_owned();
    // 1 per fetch (profile, two feeds), 2 per analysis (company, person).
    assert_eq!(d.remaining().await, 100 - 7);

    // The site holds every request: the types are pending, the job is fetching.
    let pending = d.lead(ids[0]).await["pending_enrichments"].clone();
    let mut pending: Vec<&str> = pending
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t.as_str().unwrap())
        .collect();
    pending.sort_unstable();
    let mut all = ALL_TYPES.to_vec();
    all.sort_unstable();
    assert_eq!(pending, all);
    d.until_status(&job, "step_social").await;

    site.gate.add_permits(10_000);
    let done = wait_for_job(&d.server, &d.account.api_key, &job).await;
    assert_eq!(done["status"], "completed", "{done}");
    assert_eq!(
        (done["processed_rows"].as_i64(), done["total_rows"].as_i64()),
        (Some(1), Some(1))
    );
    assert!(done.get("enrichment_errors").is_none(), "{done}");

    let lead = d.lead(ids[0]).await;
    assert_eq!(lead["pending_enrichments"], json!([]));
    let v = &lead["variables"];
    assert_eq!(v["profile_name"], "Jane Doe");
    assert_eq!(v["profile_headline"], "Head of Growth");
    assert_eq!(v["profile_summary"], "Builds growth teams that last.");
    assert_eq!(v["profile_company"], "Acme");
    assert_eq!(v["person_latest_post"], "Why onboarding beats acquisition");
    assert_eq!(v["person_latest_post_url"], "https://people.example/p/2");
    assert!(
        v["person_recent_posts"]
            .as_str()
            .unwrap()
            .starts_with("2026-11-20 Why onboarding beats acquisition <https://people.example/p/2>\n2026-11-02 Hiring"),
        "{v}"
    );
    assert_eq!(v["company_site_name"], "Acme Ltd");
    assert_eq!(
        v["company_description"],
        "Acme makes invoicing painless for small firms."
    );
    assert_eq!(v["company_logo_url"], "https://acme.test/logo.png");
    assert_eq!(v["company_latest_post"], "Acme raises Series B");
    // The offline analyses state what was fetched.
    let company = v["company_analysis"].as_str().unwrap();
    assert!(
        company.contains("Acme makes invoicing painless"),
        "{company}"
    );
    assert!(company.contains("Acme raises Series B"), "{company}");
    let person = v["person_analysis"].as_str().unwrap();
    assert!(
        person.contains("Jane Doe is Head of Growth at Acme."),
        "{person}"
    );
    // https could not connect to the plain-HTTP site, so http was used; each page once.
    let requests = site.requests();
    assert_eq!(
        requests.iter().filter(|p| *p == "/in/jane").count(),
        1,
        "{requests:?}"
    );
    assert_eq!(
        requests.iter().filter(|p| *p == "/").count(),
        1,
        "{requests:?}"
    );
    assert_eq!(
        d.remaining().await,
        93,
        "nothing failed, nothing given back"
    );
}

#[tokio::test]
async fn leads_without_inputs_are_skipped_and_the_error_bodies_say_why() {
    let site = fake_site(true).await;
    let d = desk(&site, &["--allow-private-network"]).await;
    let ids = d
        .leads(vec![
            json!({"email": "only@example.com"}),
            json!({"email": "acme@example.com", "company_domain": "acme.test"}),
        ])
        .await;
    let (bare, with_domain) = (ids[0], ids[1]);

    let accepted = d
        .enrich(&[bare, with_domain, 987_654], &["company_domain"])
        .await
        .expect(200)
        .json();
    assert_eq!(accepted["leads_to_enrich"], 1);
    assert_eq!(accepted["skipped_leads"], 2);
    assert_eq!(
        accepted["skipped"],
        json!([{"lead_id": bare, "reason": "The lead has no company_domain."},
               {"lead_id": 987_654, "reason": "Lead not found in this workspace."}])
    );
    wait_for_job(
        &d.server,
        &d.account.api_key,
        accepted["job_id"].as_str().unwrap(),
    )
    .await;
    assert_eq!(d.remaining().await, 98);

    let none = d
        .enrich(&[987_654], &["company_domain"])
        .await
        .expect(404)
        .json();
    assert_eq!(
        none,
        json!({"message": "No valid leads were found for the given lead ids."})
    );
    let nothing = d
        .enrich(&[bare], &["social_profile_url", "person_analysis"])
        .await
        .expect(422)
        .json();
    assert!(
        nothing["message"]
            .as_str()
            .unwrap()
            .starts_with("No lead has the fields"),
        "{nothing}"
    );
    assert_eq!(
        nothing["skipped_leads"],
        json!([{"lead_id": bare, "reason": "The lead has no social_profile_url. The lead has neither a social_profile_url nor a first_name with a company_name."}])
    );

    let unknown = d.enrich(&[bare], &["horoscope"]).await.expect(422).json();
    assert!(
        unknown["errors"]["enrichment_types"][0]
            .as_str()
            .unwrap()
            .contains("horoscope")
    );
    let missing = d
        .server
        .post(
            &d.account.api_key,
            "/leads/enrich",
            json!({"workspace_id": d.account.workspace_id}),
        )
        .await
        .expect(422)
        .json();
    assert!(missing["errors"]["lead_ids"].is_array(), "{missing}");
    assert!(
        missing["errors"]["enrichment_types"].is_array(),
        "{missing}"
    );

    // Another account's workspace is forbidden; nothing was spent on any refusal.
    let other = bootstrap(&d.db, &[]);
    d.server
        .post(
            &d.account.api_key,
            "/leads/enrich",
            json!({"workspace_id": other.workspace_id, "lead_ids": [bare],
                   "enrichment_types": ["company_domain"]}),
        )
        .await
        .expect(403);
    assert_eq!(d.remaining().await, 98);
}

#[tokio::test]
async fn without_credits_enrichment_is_refused_with_402_and_nothing_is_queued() {
    let site = fake_site(true).await;
    let d = desk(&site, &["--allow-private-network"]).await;
    let ids = d
        .leads(vec![
            json!({"email": "a@example.com", "company_domain": "acme.test"}),
            json!({"email": "b@example.com", "company_domain": "acme.test"}),
        ])
        .await;
    d.set_credits(3);
    // Two company analyses cost 4.
    let refused = d.enrich(&ids, &["company_domain"]).await.expect(402).json();
    assert!(
        refused["message"]
            .as_str()
            .unwrap()
            .contains("No credits remaining"),
        "{refused}"
    );
    assert_eq!(d.remaining().await, 3);
    assert_eq!(d.lead(ids[0]).await["pending_enrichments"], json!([]));
    assert!(site.requests().is_empty());
    // One costs 2: accepted.
    d.enrich(&ids[..1], &["company_domain"]).await.expect(200);
    assert_eq!(d.remaining().await, 1);
}

#[tokio::test]
async fn failed_fetches_are_listed_and_given_back() {
    let site = fake_site(true).await;
    let d = desk(&site, &["--allow-private-network"]).await;
    let ids = d
        .leads(vec![
            json!({"email": "a@example.com", "social_profile_url": site.profile_url("/in/broken")}),
            json!({"email": "b@example.com", "social_profile_url": site.profile_url("/in/nobody")}),
        ])
        .await;
    let accepted = d
        .enrich(&ids, &["social_profile_url", "social_posts_person"])
        .await
        .expect(200)
        .json();
    let done = wait_for_job(
        &d.server,
        &d.account.api_key,
        accepted["job_id"].as_str().unwrap(),
    )
    .await;
    assert_eq!(
        done["status"], "failed",
        "no lead could be enriched: {done}"
    );
    assert_eq!(done["failed_rows"], 2);
    let errors = done["enrichment_errors"].as_array().unwrap();
    assert_eq!(errors.len(), 2, "{done}");
    assert_eq!(errors[0]["lead_id"], ids[0]);
    let broken = errors[0]["message"].as_str().unwrap();
    assert!(broken.contains("answered 500"), "{broken}");
    let nobody = errors[1]["message"].as_str().unwrap();
    assert!(nobody.contains("no name, description"), "{nobody}");
    assert!(nobody.contains("No RSS or Atom feed"), "{nobody}");
    assert_eq!(d.remaining().await, 100, "every failed type given back");
}

#[tokio::test]
async fn private_addresses_are_refused_without_the_flag() {
    let site = fake_site(true).await;
    let d = desk(&site, &[]).await;
    let ids = d
        .leads(vec![
            json!({"email": "a@example.com", "company_domain": "acme.test",
                           "social_profile_url": site.profile_url("/in/jane")}),
        ])
        .await;
    let accepted = d
        .enrich(&ids, &["social_profile_url", "company_domain"])
        .await
        .expect(200)
        .json();
    let done = wait_for_job(
        &d.server,
        &d.account.api_key,
        accepted["job_id"].as_str().unwrap(),
    )
    .await;
    let message = done["enrichment_errors"][0]["message"].as_str().unwrap();
    assert!(
        message.contains("people.test resolves to a non-public address; refused"),
        "{message}"
    );
    assert!(
        message.contains("acme.test resolves to a non-public address; refused"),
        "{message}"
    );
    assert!(site.requests().is_empty(), "{:?}", site.requests());
    assert_eq!(d.remaining().await, 100);
}

#[tokio::test]
async fn upsert_flags_queue_enrichment_after_the_import() {
    let site = fake_site(false).await;
    let d = desk(&site, &["--allow-private-network"]).await;
    let (campaign, _) = create_campaign(
        &d.server,
        &d.account.api_key,
        d.account.workspace_id,
        "Flags",
    )
    .await;
    let job = upsert(
        &d.server,
        &d.account.api_key,
        json!({"campaign_id": campaign, "enrich_data": true, "generate_ai_variables": true,
               "is_scrape_company_posts": true,
               "leads": [{"values": {"email": "jane@acme.test", "first_name": "Jane",
                                     "company_name": "Acme", "company_domain": "acme.test",
                                     "social_profile_url": site.profile_url("/in/jane")}},
                         {"values": {"email": "bare@example.com"}}]}),
    )
    .await;
    // Stored, then held in the social step by the site.
    let status = d.until_status(&job, "step_social").await;
    assert_eq!(status["processed_rows"], 2);
    site.gate.add_permits(10_000);
    let done = wait_for_job(&d.server, &d.account.api_key, &job).await;
    assert_eq!(done["status"], "completed", "{done}");

    let leads = d
        .server
        .get(
            &d.account.api_key,
            &format!("/leads/get-leads?job_id={job}"),
        )
        .await
        .expect(200)
        .json();
    let jane = leads
        .as_array()
        .unwrap()
        .iter()
        .find(|l| l["email"] == "jane@acme.test")
        .unwrap()["lead_id"]
        .as_i64()
        .unwrap();
    let v = d.lead(jane).await["variables"].clone();
    assert_eq!(v["profile_name"], "Jane Doe");
    assert_eq!(v["company_site_name"], "Acme Ltd");
    assert_eq!(v["company_latest_post"], "Acme raises Series B");
    assert_eq!(
        v["ai_opening_line"],
        "Hi Jane, I saw \u{201c}Acme raises Series B\u{201d} from your team."
    );
    assert_eq!(v["ai_headline"], "Made for Acme");
    // Jane: profile 1 + company 2 + posts 1 + AI variables 2; the bare lead has no inputs but
    // for the AI variables (2).
    assert_eq!(d.remaining().await, 100 - 6 - 2);
}

#[tokio::test]
async fn analyses_are_written_by_the_model_when_one_is_configured() {
    let site = fake_site(true).await;
    let asked: Arc<Mutex<Vec<Value>>> = Arc::default();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let model = format!("http://{}/v1", listener.local_addr().unwrap());
    let log = asked.clone();
    let app = axum::Router::new().route(
        "/v1/chat/completions",
        axum::routing::post(move |body: axum::Json<Value>| {
            let log = log.clone();
            async move {
                let content = if body.0.get("response_format").is_some() {
                    json!({"opening_line": "Jane, congrats on the growth team.", "headline": "Growth, faster"}).to_string()
                } else {
                    "Jane leads growth at Acme; raise onboarding.".to_owned()
                };
                log.lock().unwrap().push(body.0);
                axum::Json(json!({"choices": [{"message": {"role": "assistant", "content": content}}]}))
            }
        }),
    );
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    let d = desk(
        &site,
        &[
            "--allow-private-network",
            "--llm-base-url",
            &model,
            "--llm-model",
            "fake",
        ],
    )
    .await;
    let ids = d
        .leads(vec![json!({"first_name": "Jane", "company_name": "Acme",
                           "social_profile_url": site.profile_url("/in/jane")})])
        .await;
    let accepted = d
        .enrich(&ids, &["person_analysis"])
        .await
        .expect(200)
        .json();
    wait_for_job(
        &d.server,
        &d.account.api_key,
        accepted["job_id"].as_str().unwrap(),
    )
    .await;
    let v = d.lead(ids[0]).await["variables"].clone();
    assert_eq!(
        v["person_analysis"],
        "Jane leads growth at Acme; raise onboarding."
    );
    let asked = asked.lock().unwrap().clone();
    assert_eq!(asked.len(), 1);
    let facts = asked[0]["messages"][1]["content"].as_str().unwrap();
    assert!(
        facts.contains("Headline: Head of Growth"),
        "the profile was read first: {facts}"
    );
    assert_eq!(asked[0]["model"], "fake");
}
