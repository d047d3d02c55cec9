//! AI design runs: `POST /pages/generate`, `GET /pages/generate/status`,
//! `POST /pages/generate/cancel`, `PagesService.WatchDesignRun`, and the credits they spend.
//! The model server is a fake OpenAI-compatible one on loopback; without one, generation is
//! refused unpaid.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::common::*;
use axum::http::StatusCode;
use serde_json::{Value, json};
use tokio::sync::Semaphore;

/// How the fake model answers.
#[derive(Clone)]
enum Answer {
    /// `{html, css}` as the message content.
    Design(String, String),
    /// A message content that is not the asked-for object.
    Junk,
    /// 500, always.
    Broken,
}

/// A fake OpenAI-compatible server: records request bodies; each answer waits for a permit of
/// `gate` (tests hold runs in `running` by withholding permits).
struct FakeModel {
    url: String,
    requests: Arc<Mutex<Vec<Value>>>,
    gate: Arc<Semaphore>,
}

async fn fake_model(answer: Answer, open: bool) -> FakeModel {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/v1", listener.local_addr().unwrap());
    let requests: Arc<Mutex<Vec<Value>>> = Arc::default();
    let gate = Arc::new(Semaphore::new(if open { 1_000 } else { 0 }));
    let (log, permits) = (requests.clone(), gate.clone());
    let app = axum::Router::new().route(
        "/v1/chat/completions",
        axum::routing::post(move |body: axum::Json<Value>| {
            let (log, permits, answer) = (log.clone(), permits.clone(), answer.clone());
            async move {
                let asks_copy = body.0["response_format"]["json_schema"]["name"] == "campaign_copy";
                log.lock().unwrap().push(body.0);
                permits.acquire().await.unwrap().forget();
                let content = match answer {
                    Answer::Design(..) if asks_copy => json!({
                        "headline": "{{ first_name | default(\"there\") }}, a faster close",
                        "intro": "Three ideas for {{ company_name | default(\"your team\") }}.",
                        "points": "Shorter audits\nFewer handoffs",
                        "cta_label": "Book 20 minutes",
                        "signoff": "Talk soon."
                    })
                    .to_string(),
                    Answer::Design(html, css) => json!({"html": html, "css": css}).to_string(),
                    Answer::Junk => "Sorry, I can't do that.".to_owned(),
                    Answer::Broken => {
                        return (StatusCode::INTERNAL_SERVER_ERROR, "down".to_owned());
                    }
                };
                let reply =
                    json!({"choices": [{"message": {"role": "assistant", "content": content}}]});
                (StatusCode::OK, reply.to_string())
            }
        }),
    );
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    FakeModel {
        url,
        requests,
        gate,
    }
}

struct Studio {
    server: Server,
    db: TestDb,
    account: Account,
    campaign: i64,
}

async fn studio(extra: &[&str]) -> Studio {
    let db = TestDb::new();
    let account = bootstrap(&db, &[]);
    let mut args = vec!["--rate-limit-per-minute", "100000"];
    args.extend_from_slice(extra);
    let server = Server::serve(&db, &args);
    let (campaign, _) =
        create_campaign(&server, &account.api_key, account.workspace_id, "Generated").await;
    Studio {
        server,
        db,
        account,
        campaign,
    }
}

impl Studio {
    async fn generate(&self, prompt: &str, replace: bool) -> Reply {
        let body = json!({"workspace_id": self.account.workspace_id, "campaign_id": self.campaign,
                          "prompt": prompt, "replace": replace});
        self.server
            .post(&self.account.api_key, "/pages/generate", body)
            .await
    }

    async fn status(&self, run: &str) -> Value {
        self.server
            .get(
                &self.account.api_key,
                &format!(
                    "/pages/generate/status?workspace_id={}&run_id={run}",
                    self.account.workspace_id
                ),
            )
            .await
            .expect(200)
            .json()
    }

    /// Polls until the run has ended (30 s at most).
    async fn finished(&self, run: &str) -> Value {
        let started = Instant::now();
        loop {
            let status = self.status(run).await;
            if !matches!(status["status"].as_str(), Some("queued" | "running")) {
                return status;
            }
            assert!(started.elapsed() < Duration::from_secs(30), "{status}");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    async fn credits(&self) -> Value {
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
            .json()
    }

    async fn design(&self) -> Value {
        self.server
            .get(
                &self.account.api_key,
                &format!(
                    "/pages/design?workspace_id={}&campaign_id={}",
                    self.account.workspace_id, self.campaign
                ),
            )
            .await
            .expect(200)
            .json()
    }
}

#[tokio::test]
async fn without_a_model_generation_is_refused_with_503_and_spends_no_credit() {
    let s = studio(&[]).await;
    let before = s.credits().await["remaining"].as_i64().unwrap();
    let refused = s
        .generate("Invite the lead to our pricing webinar.", true)
        .await
        .expect(503);
    assert!(
        refused.json()["message"]
            .as_str()
            .unwrap()
            .starts_with("No model is configured"),
        "{}",
        refused.text
    );
    assert_eq!(s.credits().await["remaining"].as_i64().unwrap(), before);
    let design = s.design().await;
    assert_eq!(design["has_design"], false, "nothing was queued or drafted");
    // An unknown campaign is still "not found", whatever the model.
    let body = json!({"workspace_id": s.account.workspace_id, "campaign_id": 999_999,
                      "prompt": "x"});
    s.server
        .post(&s.account.api_key, "/pages/generate", body)
        .await
        .expect(404);
}

#[tokio::test]
async fn a_model_designs_a_page_that_is_served_and_spends_its_credits() {
    let model = fake_model(
        Answer::Design(
            "<h1>Hello {{ first_name | default(\"there\") }}</h1>".into(),
            "h1{color:#123}".into(),
        ),
        true,
    )
    .await;
    let s = studio(&["--llm-base-url", &model.url]).await;
    let before = s.credits().await["remaining"].as_i64().unwrap();
    let started = s
        .generate(
            "Invite the lead to our pricing webinar. Friendly tone.",
            true,
        )
        .await
        .expect(200)
        .json();
    assert_eq!(started["status"], "queued");
    assert_eq!(started["campaign_id"], s.campaign);
    let run = started["run_id"].as_str().unwrap().to_owned();
    let done = s.finished(&run).await;
    assert_eq!(
        done,
        json!({"run_id": run, "status": "success", "campaign_id": s.campaign, "error": null})
    );
    assert_eq!(
        s.credits().await["remaining"].as_i64().unwrap(),
        before - 10
    );
    let design = s.design().await;
    assert_eq!(design["has_design"], true);
    assert_eq!(design["is_live"], false);
    assert_eq!(design["has_unpublished_changes"], true);
    let html = design["html"].as_str().unwrap();
    assert!(html.contains("Hello"), "{html}");
    assert!(!html.contains("Invite the lead"), "{html}");

    let ids = json!({"workspace_id": s.account.workspace_id, "campaign_id": s.campaign});
    s.server
        .post(&s.account.api_key, "/pages/publish", ids)
        .await
        .expect(200);
    let job = upsert(
        &s.server,
        &s.account.api_key,
        json!({"campaign_id": s.campaign, "leads": [{"values": {"email": "ada@example.com", "first_name": "Ada"}}]}),
    )
    .await;
    wait_for_job(&s.server, &s.account.api_key, &job).await;
    let page = s
        .server
        .get(
            &s.account.api_key,
            &format!("/leads/get-leads?job_id={job}"),
        )
        .await
        .json()[0]["service_page_url"]
        .as_str()
        .unwrap()
        .to_owned();
    let served = s.server.send(s.server.client.get(&page)).await.expect(200);
    assert!(!served.text.contains("Invite the lead"), "{}", served.text);
    assert!(served.text.contains("Hello Ada"), "{}", served.text);

    // Unknown runs and bad input.
    let missing = s
        .server
        .get(
            &s.account.api_key,
            &format!(
                "/pages/generate/status?workspace_id={}&run_id=nope",
                s.account.workspace_id
            ),
        )
        .await
        .expect(404)
        .json();
    assert_eq!(missing["message"], "Design run not found");
    let invalid = s
        .server
        .post(
            &s.account.api_key,
            "/pages/generate",
            json!({"workspace_id": s.account.workspace_id}),
        )
        .await
        .expect(422)
        .json();
    assert!(invalid["errors"]["campaign_id"].is_array() && invalid["errors"]["prompt"].is_array());
}

#[tokio::test]
async fn a_model_edits_the_current_design_and_what_it_writes_is_cleaned() {
    let model = fake_model(
        Answer::Design(
            "<h1 onclick=\"steal()\">Hi {{ first_name | default('there') }}</h1><script>alert(1)</script>".into(),
            "h1{color:#0f766e}".into(),
        ),
        true,
    )
    .await;
    let s = studio(&[
        "--llm-base-url",
        &model.url,
        "--llm-api-key",
        "sk-test",
        "--llm-model",
        "m1",
    ])
    .await;
    publish_premade(
        &s.server,
        &s.account.api_key,
        s.account.workspace_id,
        s.campaign,
        "Personal Note",
    )
    .await;
    let run = s.generate("Make it warmer", false).await.expect(200).json()["run_id"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_eq!(s.finished(&run).await["status"], "success");
    let asked = model.requests.lock().unwrap()[0].clone();
    assert_eq!(asked["model"], "m1");
    assert_eq!(
        asked["response_format"]["json_schema"]["name"],
        "page_design"
    );
    let user = asked["messages"][1]["content"].as_str().unwrap();
    assert!(
        user.contains("Make it warmer") && user.contains("{{ copy.headline }}"),
        "{user}"
    );
    let html = s.design().await["html"].as_str().unwrap().to_owned();
    assert_eq!(html, "<h1>Hi {{ first_name | default('there') }}</h1>");
}

#[tokio::test]
async fn unusable_or_failing_models_end_the_run_in_error_and_give_the_credits_back() {
    for (answer, why) in [(Answer::Junk, "could not be used"), (Answer::Broken, "500")] {
        let model = fake_model(answer, true).await;
        let s = studio(&["--llm-base-url", &model.url]).await;
        let before = s.credits().await;
        let run = s.generate("Anything", true).await.expect(200).json()["run_id"]
            .as_str()
            .unwrap()
            .to_owned();
        let done = s.finished(&run).await;
        assert_eq!(done["status"], "error", "{done}");
        assert!(done["error"].as_str().unwrap().contains(why), "{done}");
        assert_eq!(s.credits().await, before, "refunded");
        assert_eq!(s.design().await["has_design"], false);
    }
}

#[tokio::test]
async fn without_credits_generation_is_refused_with_402_and_nothing_is_queued() {
    let model = fake_model(Answer::Design("<p>x</p>".into(), String::new()), true).await;
    let s = studio(&["--llm-base-url", &model.url]).await;
    let account = s.account.account_id.to_string();
    let ws = s.account.workspace_id.to_string();
    lps(&[
        "admin",
        "account",
        "set-plan",
        "--database-url",
        &s.db.url,
        "--account",
        &account,
        "--plan",
        "pro_monthly",
        "--credits",
        "5",
    ]);
    let refused = s.generate("A page", true).await.expect(402).json();
    assert!(
        refused["message"]
            .as_str()
            .unwrap()
            .contains("No credits remaining"),
        "{refused}"
    );
    assert_eq!(s.credits().await["remaining"], 5);
    // Enough in the pool, but not under the workspace's cap.
    lps(&[
        "admin",
        "account",
        "set-plan",
        "--database-url",
        &s.db.url,
        "--account",
        &account,
        "--plan",
        "pro_monthly",
        "--credits",
        "100",
    ]);
    lps(&[
        "admin",
        "workspace",
        "set-limit",
        "--database-url",
        &s.db.url,
        "--workspace",
        &ws,
        "--limit",
        "15",
    ]);
    s.generate("A page", true).await.expect(200);
    s.generate("Another page", true).await.expect(402);
    let credits = s.credits().await;
    assert_eq!(
        (
            credits["remaining"].as_i64(),
            credits["workspace_used"].as_i64()
        ),
        (Some(90), Some(10))
    );
}

#[tokio::test]
async fn concurrent_requests_never_spend_more_than_the_pool_holds() {
    let model = fake_model(Answer::Design("<p>x</p>".into(), String::new()), true).await;
    let s = studio(&["--llm-base-url", &model.url]).await;
    let account = s.account.account_id.to_string();
    lps(&[
        "admin",
        "account",
        "set-plan",
        "--database-url",
        &s.db.url,
        "--account",
        &account,
        "--plan",
        "pro_monthly",
        "--credits",
        "100",
    ]);
    let body = json!({"workspace_id": s.account.workspace_id, "campaign_id": s.campaign,
                      "prompt": "A page", "replace": true});
    let url = s.server.url("/pages/generate");
    let tasks: Vec<_> = (0..50)
        .map(|_| {
            let request = s
                .server
                .client
                .post(&url)
                .bearer_auth(&s.account.api_key)
                .header("content-type", "application/json")
                .body(body.to_string());
            tokio::spawn(async move { request.send().await.unwrap().status().as_u16() })
        })
        .collect();
    let mut statuses = Vec::new();
    for task in tasks {
        statuses.push(task.await.unwrap());
    }
    let accepted = statuses.iter().filter(|s| **s == 200).count();
    let refused = statuses.iter().filter(|s| **s == 402).count();
    assert_eq!((accepted, refused), (10, 40), "{statuses:?}");
    assert_eq!(s.credits().await["remaining"], 0);
}

#[tokio::test]
async fn watch_sees_a_run_queued_running_and_done_and_cancel_gives_credits_back() {
    let model = fake_model(
        Answer::Design("<p>Made for {{ first_name }}</p>".into(), String::new()),
        false,
    )
    .await;
    let s = studio(&["--llm-base-url", &model.url]).await;
    let first = s.generate("First", true).await.expect(200).json()["run_id"]
        .as_str()
        .unwrap()
        .to_owned();
    // One worker: while the model holds the first run, the second stays queued.
    let started = Instant::now();
    while s.status(&first).await["status"] != "running" {
        assert!(started.elapsed() < Duration::from_secs(10));
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let second = s.generate("Second", true).await.expect(200).json()["run_id"]
        .as_str()
        .unwrap()
        .to_owned();
    let third = s.generate("Third", true).await.expect(200).json()["run_id"]
        .as_str()
        .unwrap()
        .to_owned();
    let before_cancel = s.credits().await["remaining"].as_i64().unwrap();
    let cancel = json!({"workspace_id": s.account.workspace_id, "run_id": third});
    let cancelled = s
        .server
        .post(&s.account.api_key, "/pages/generate/cancel", cancel.clone())
        .await
        .expect(200)
        .json();
    assert_eq!(cancelled["status"], "cancelled");
    assert_eq!(
        s.credits().await["remaining"].as_i64().unwrap(),
        before_cancel + 10
    );
    s.server
        .post(&s.account.api_key, "/pages/generate/cancel", cancel)
        .await
        .expect(409);

    let mut pages =
        lps::proto::pages_service_client::PagesServiceClient::new(s.server.grpc_channel().await);
    let mut stream = pages
        .watch_design_run(grpc_request(
            &s.account.api_key,
            lps::proto::DesignRunRequest {
                workspace_id: Some(s.account.workspace_id),
                run_id: Some(second.clone()),
            },
        ))
        .await
        .unwrap()
        .into_inner();
    // The first run's answer lets the second run start; the second's answer waits until the
    // stream has shown it running (a watcher reads the run on each change, so a change
    // overtaken by the next before the read shows as that next one).
    model.gate.add_permits(1);
    let mut seen = Vec::new();
    while let Some(run) = tokio::time::timeout(Duration::from_secs(20), stream.message())
        .await
        .expect("in time")
        .unwrap()
    {
        seen.push(run.status().as_str_name().to_owned());
        if seen.last().map(String::as_str) == Some("RUNNING") {
            model.gate.add_permits(1);
        }
    }
    assert_eq!(seen, ["QUEUED", "RUNNING", "SUCCESS"]);
    assert_eq!(s.status(&first).await["status"], "success");
    assert_eq!(s.status(&third).await["status"], "cancelled");
    assert_eq!(
        model.requests.lock().unwrap().len(),
        2,
        "the cancelled run never reached the model"
    );
}

#[tokio::test]
async fn the_design_run_stream_follows_a_run_until_it_ends() {
    let model = fake_model(
        Answer::Design("<p>Streamed for {{ first_name }}</p>".into(), String::new()),
        false,
    )
    .await;
    let s = studio(&["--llm-base-url", &model.url]).await;
    let run = s.generate("Streamed", true).await.expect(200).json()["run_id"]
        .as_str()
        .unwrap()
        .to_owned();
    let path = format!(
        "/pages/generate/status/stream?workspace_id={}&run_id={run}",
        s.account.workspace_id
    );
    let mut stream = SseReader::open(&s.server, &s.account.api_key, &path)
        .await
        .unwrap_or_else(|reply| panic!("not a stream: {} {}", reply.status, reply.text));
    // The model holds the run until a permit is given: the stream shows it unfinished first.
    let (_, first) = stream.next_event().await.expect("a first event");
    assert!(
        matches!(first["status"].as_str(), Some("queued" | "running")),
        "{first}"
    );
    assert_eq!(first["run_id"], run.as_str());
    model.gate.add_permits(1);
    let rest = stream.rest().await;
    let (_, last) = rest.last().expect("the run's end");
    assert_eq!(last["status"], "success", "{rest:?}");
    assert_eq!(*last, s.status(&run).await);

    let unknown = format!(
        "/pages/generate/status/stream?workspace_id={}&run_id=nope",
        s.account.workspace_id
    );
    let reply = SseReader::open(&s.server, &s.account.api_key, &unknown).await;
    assert_eq!(
        reply.err().expect("no stream for an unknown run").status,
        404
    );
}

#[tokio::test]
async fn a_run_whose_process_dies_is_taken_over_after_a_restart() {
    let model = fake_model(
        Answer::Design("<p>Resumed for {{ first_name }}</p>".into(), String::new()),
        false,
    )
    .await;
    let db = TestDb::new();
    let account = bootstrap(&db, &[]);
    let args = [
        "--llm-base-url",
        model.url.as_str(),
        "--design-run-lease-seconds",
        "2",
    ];
    let mut server = Server::serve(&db, &args);
    let key = &account.api_key;
    let ws = account.workspace_id;
    let (campaign, _) = create_campaign(&server, key, ws, "Resumed").await;
    let body =
        json!({"workspace_id": ws, "campaign_id": campaign, "prompt": "A page", "replace": true});
    let run = server
        .post(key, "/pages/generate", body)
        .await
        .expect(200)
        .json()["run_id"]
        .as_str()
        .unwrap()
        .to_owned();
    let status_path = format!("/pages/generate/status?workspace_id={ws}&run_id={run}");
    let started = Instant::now();
    while server.get(key, &status_path).await.json()["status"] != "running" {
        assert!(started.elapsed() < Duration::from_secs(10));
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // The process dies while the model is still thinking (it has been asked).
    while model.requests.lock().unwrap().is_empty() {
        assert!(started.elapsed() < Duration::from_secs(10));
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    server.kill();
    model.gate.add_permits(10);
    let server = Server::serve(&db, &args);
    let started = Instant::now();
    let done = loop {
        let status = server.get(key, &status_path).await.json();
        if status["status"] != "running" && status["status"] != "queued" {
            break status;
        }
        assert!(started.elapsed() < Duration::from_secs(30), "{status}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    assert_eq!(done["status"], "success", "{done}");
    assert_eq!(
        model.requests.lock().unwrap().len(),
        2,
        "asked again by the new process"
    );
    let design = server
        .get(
            key,
            &format!("/pages/design?workspace_id={ws}&campaign_id={campaign}"),
        )
        .await
        .json();
    assert_eq!(design["html"], "<p>Resumed for {{ first_name }}</p>");
}

#[tokio::test]
async fn with_a_model_a_campaigns_brief_drafts_its_words_never_pasted_raw() {
    let model = fake_model(Answer::Design("<h1>x</h1>".into(), String::new()), true).await;
    let s = studio(&["--llm-base-url", &model.url]).await;
    let ws = s.account.workspace_id;
    let brief = "Cut freight audit costs by 30% for Northwind. Keep it short.";
    let created = s
        .server
        .post(
            &s.account.api_key,
            "/campaigns/create",
            json!({"workspace_id": ws, "name": "Freight", "prompt": brief}),
        )
        .await
        .expect(200)
        .json();
    let campaign = created["campaign_id"].as_i64().unwrap();
    let read = json!({"workspace_id": ws, "campaign_id": campaign, "copy": {}});
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    let copy = loop {
        let settings = s
            .server
            .post(&s.account.api_key, "/campaigns/update", read.clone())
            .await
            .expect(200)
            .json();
        if settings["copy"]["headline"].is_string() || std::time::Instant::now() > deadline {
            break settings["copy"].clone();
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    };
    assert_eq!(copy["cta_label"], "Book 20 minutes", "{copy}");
    assert_eq!(copy["points"], json!(["Shorter audits", "Fewer handoffs"]));
    let asked = model.requests.lock().unwrap().clone();
    let user = asked[0]["messages"][1]["content"].as_str().unwrap();
    assert!(user.contains(brief), "{user}");
    assert!(
        !copy.to_string().contains("Cut freight"),
        "never pasted: {copy}"
    );
}
