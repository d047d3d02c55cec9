//! The attack review's cases, kept: what a stranger (a key, an OAuth app, an assistant
//! following injected instructions, an anonymous visitor) tried against a running lps, and what
//! lps must answer instead. Each test failed before its fix.

use std::time::{Duration, Instant};

use serde_json::json;

use crate::common::*;

const TRIPLE_RANGE_BOMB: &str = "{% for i in range(100000) %}{% for j in range(100000) %}\
    {% for k in range(100000) %}{% endfor %}{% endfor %}{% endfor %}ok";

fn forty_nested_loops() -> String {
    "{% for i in range(2) %}".repeat(40) + &"{% endfor %}".repeat(40)
}

/// `/healthz`'s latency, printed for the note (a stall would take seconds, not milliseconds).
async fn healthz_latency(server: &Server) -> Duration {
    let started = Instant::now();
    server
        .send(server.client.get(server.url_of("/healthz")))
        .await
        .expect(200);
    started.elapsed()
}

#[tokio::test]
async fn design_bombs_are_refused_at_submission_and_the_server_keeps_answering() {
    let db = TestDb::new();
    let account = bootstrap(&db, &[]);
    let server = Server::serve(&db, &[]);
    let key = &account.api_key;
    let (campaign, _) = create_campaign(&server, key, account.workspace_id, "Bombs").await;
    let update = |html: String| {
        let body =
            json!({"workspace_id": account.workspace_id, "campaign_id": campaign, "html": html});
        server.post(key, "/pages/update-design", body)
    };
    let hidden = format!("{{% if first_name %}}{TRIPLE_RANGE_BOMB}{{% endif %}}");
    let (a, b, c, d, health) = tokio::join!(
        update(TRIPLE_RANGE_BOMB.to_owned()),
        update(TRIPLE_RANGE_BOMB.to_owned()),
        update(forty_nested_loops()),
        update(hidden),
        async {
            tokio::time::sleep(Duration::from_millis(20)).await;
            healthz_latency(&server).await
        }
    );
    for refused in [a, b, c, d] {
        let body = refused.expect(422).json();
        let message = body["errors"]["html"][0].as_str().unwrap();
        assert!(message.starts_with("The design is not allowed"), "{body}");
    }
    println!("healthz during two design bombs: {health:?}");
    assert!(health < Duration::from_secs(2), "{health:?}");
    // Nothing was stored: the campaign still has no design.
    let design = server
        .get(
            key,
            &format!(
                "/pages/design?workspace_id={}&campaign_id={campaign}",
                account.workspace_id
            ),
        )
        .await
        .expect(200)
        .json();
    assert_eq!(design["has_design"], false, "{design}");
}

#[tokio::test]
async fn a_design_too_large_for_a_lead_with_long_values_is_refused_when_submitted() {
    let db = TestDb::new();
    let account = bootstrap(&db, &[]);
    let server = Server::serve(&db, &[]);
    let key = &account.api_key;
    let (campaign, _) = create_campaign(&server, key, account.workspace_id, "Large").await;
    let ids = json!({"workspace_id": account.workspace_id, "campaign_id": campaign});
    // Empty for a lead without a company, megabytes for one with a long company name.
    let html = "{% if company_name %}{% for i in range(400) %}<p>{{ company_name }}</p>{% endfor %}{% endif %}";
    let mut body = ids.clone();
    body["html"] = json!(html);
    let refused = server
        .post(key, "/pages/update-design", body)
        .await
        .expect(422)
        .json();
    let message = refused["errors"]["html"][0].as_str().unwrap();
    assert!(message.contains("larger than the 2 MiB"), "{refused}");
    // Output of one page past the bound: refused too.
    let mut body = ids.clone();
    body["html"] = json!(format!(
        "{{% for i in range(100000) %}}<p>{}</p>{{% endfor %}}",
        "x".repeat(100)
    ));
    server
        .post(key, "/pages/update-design", body)
        .await
        .expect(422);
    // A draft stored before the check (by an older lps) is refused when published: a page
    // that cannot fit is never live.
    let store = lps::admin::Db::connect(&db.url).await.unwrap();
    sqlx::query("UPDATE campaigns SET draft_html = $1, draft_css = '' WHERE id = $2")
        .bind(format!(
            "{{% for i in range(50000) %}}<p>{}</p>{{% endfor %}}",
            "x".repeat(100)
        ))
        .bind(campaign)
        .execute(store.pool())
        .await
        .unwrap();
    let refused = server
        .post(key, "/pages/publish", ids.clone())
        .await
        .expect(422)
        .json();
    assert!(
        refused["errors"]["html"][0]
            .as_str()
            .unwrap()
            .contains("2 MiB"),
        "{refused}"
    );
}

#[tokio::test]
async fn a_published_design_that_cannot_render_shows_unavailable_to_every_visitor() {
    let db = TestDb::new();
    let account = bootstrap(&db, &[]);
    let server = Server::serve(&db, &[]);
    let key = &account.api_key;
    let (campaign, slug) = create_campaign(&server, key, account.workspace_id, "Old").await;
    publish_premade(
        &server,
        key,
        account.workspace_id,
        campaign,
        "Demo Invitation",
    )
    .await;
    // A bomb published by an older lps (before submissions were audited).
    let store = lps::admin::Db::connect(&db.url).await.unwrap();
    sqlx::query(
        "UPDATE campaigns SET live_html = $1, live_version = live_version + 1 WHERE id = $2",
    )
    .bind(format!(
        "{{% if first_name %}}{TRIPLE_RANGE_BOMB}{{% endif %}}"
    ))
    .bind(campaign)
    .execute(store.pool())
    .await
    .unwrap();
    let preview = server.url_of(&format!("/p/{slug}/preview-{campaign}"));
    let visits = (0..4).map(|_| server.send(server.client.get(&preview)));
    for visit in futures_util::future::join_all(visits).await {
        let visit = visit.expect(503);
        assert!(
            visit.text.contains("Temporarily unavailable"),
            "{}",
            visit.text
        );
    }
    // And the server still answers.
    healthz_latency(&server).await;
}

#[tokio::test]
async fn sigterm_ends_the_process_while_designs_are_submitted() {
    let db = TestDb::new();
    let account = bootstrap(&db, &[]);
    let mut server = Server::serve(&db, &[]);
    let key = account.api_key.clone();
    let (campaign, _) = create_campaign(&server, &key, account.workspace_id, "Term").await;
    let body = json!({"workspace_id": account.workspace_id, "campaign_id": campaign,
                      "html": forty_nested_loops()});
    let pending: Vec<_> = (0..4)
        .map(|_| {
            let request = server
                .client
                .post(server.url("/pages/update-design"))
                .bearer_auth(&key)
                .json(&body)
                .send();
            tokio::spawn(request)
        })
        .collect();
    tokio::time::sleep(Duration::from_millis(50)).await;
    server.terminate();
    let status = server.wait_for_exit(Duration::from_secs(30));
    assert!(status.success(), "{status:?}");
    for request in pending {
        let _: Result<_, _> = request.await.unwrap();
    }
}

#[tokio::test]
async fn what_a_design_s_expressions_yield_is_as_safe_as_its_markup() {
    let db = TestDb::new();
    let account = bootstrap(&db, &[]);
    let server = Server::serve(&db, &[]);
    let key = &account.api_key;
    let (campaign, slug) = create_campaign(&server, key, account.workspace_id, "Escape").await;
    let ids = json!({"workspace_id": account.workspace_id, "campaign_id": campaign});
    let with_html = |html: &str, css: &str| {
        let mut body = ids.clone();
        body["html"] = json!(html);
        body["css"] = json!(css);
        body
    };
    // No way to emit unescaped markup.
    for refused in [
        "{{ \"<meta http-equiv=refresh content='0;url=https://evil.example'>\" | safe }}",
        "{% autoescape false %}{{ first_name }}{% endautoescape %}",
    ] {
        let body = server
            .post(key, "/pages/update-design", with_html(refused, ""))
            .await
            .expect(422)
            .json();
        assert!(
            body["errors"]["html"][0]
                .as_str()
                .unwrap()
                .contains("escaped"),
            "{body}"
        );
    }
    // Addresses an expression yields are held to the same schemes as written ones.
    let html = "<a href=\"{{ 'javascript:alert(1)' }}\">a</a>\
                <a href=\"{{ ' JaVaScRiPt:alert(2)' }}\">b</a>\
                <img src=\"{{ 'data:text/html,x' }}\" srcset=\"{{ 'javascript:alert(3) 1x' }}\">\
                <img srcset=\"https://cdn.example/a.png 1x, /b.png 2x\">\
                <a href=\"{{ 'https://ok.example/' }}\">ok</a>";
    let css = "@im\\port url(https://evil.example/x.css); @\\69mport 'y.css'; \
               h1{background:url(java\\script:alert(4))} p{color:#123}";
    server
        .post(key, "/pages/update-design", with_html(html, css))
        .await
        .expect(200);
    server
        .post(key, "/pages/publish", ids.clone())
        .await
        .expect(200);
    let page = server
        .send(
            server
                .client
                .get(server.url_of(&format!("/p/{slug}/preview-{campaign}"))),
        )
        .await
        .expect(200)
        .text;
    let lower = page.to_lowercase();
    for gone in [
        "javascript",
        "data:text",
        "evil.example",
        "@import",
        "@\\69mport",
        "@im\\port",
    ] {
        assert!(!lower.contains(gone), "{gone} in {page}");
    }
    assert!(
        page.contains("srcset=\"https://cdn.example/a.png 1x, /b.png 2x\""),
        "{page}"
    );
    assert!(page.contains("href=\"https://ok.example/\""), "{page}");
    assert!(page.contains("p{color:#123}"), "{page}");
}

#[tokio::test]
async fn a_client_metadata_document_at_a_private_address_is_never_fetched() {
    let db = TestDb::new();
    bootstrap(&db, &[]);
    let server = Server::serve(&db, &[]);
    // Something listening on loopback that must never be reached.
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let reached = tokio::spawn(async move { listener.accept().await.is_ok() });
    for host in [
        format!("127.0.0.1:{port}"),
        format!("[::1]:{port}"),
        format!("[::ffff:127.0.0.1]:{port}"),
        format!("0.0.0.0:{port}"),
        format!("2130706433:{port}"),
        "169.254.169.254".to_owned(),
        format!("0x7f.1:{port}"),
    ] {
        let client_id = format!("https://{host}/client.json");
        let path = authorize_path(&client_id, "https://app.example/cb", None);
        let answer = server.send(server.client.get(server.url_of(&path))).await;
        assert_eq!(answer.status, 400, "{client_id}: {}", answer.text);
        assert!(
            answer.text.contains("may not be fetched"),
            "{client_id}: {}",
            answer.text
        );
    }
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(!reached.is_finished(), "lps connected to loopback");
    reached.abort();
}

async fn register(server: &Server, body: serde_json::Value) -> Reply {
    server
        .send(
            server
                .client
                .post(server.url_of("/oauth/register"))
                .json(&body),
        )
        .await
}

/// A registered client's id.
async fn registered_client(server: &Server, redirect_uri: &str) -> String {
    let reply = register(
        server,
        json!({"client_name": "Shown", "redirect_uris": [redirect_uri]}),
    )
    .await
    .expect(201);
    reply.json()["client_id"].as_str().unwrap().to_owned()
}

/// `/oauth/authorize?...` for a PKCE code request, with a `resource` when given.
fn authorize_path(client_id: &str, redirect_uri: &str, resource: Option<&str>) -> String {
    let mut query = form_urlencoded::Serializer::new(String::new());
    query
        .append_pair("response_type", "code")
        .append_pair("client_id", client_id)
        .append_pair("redirect_uri", redirect_uri)
        .append_pair("code_challenge", &"c".repeat(43))
        .append_pair("code_challenge_method", "S256");
    if let Some(resource) = resource {
        query.append_pair("resource", resource);
    }
    format!("/oauth/authorize?{}", query.finish())
}

#[tokio::test]
async fn client_registration_is_bounded_in_every_field_and_in_rate() {
    let db = TestDb::new();
    bootstrap(&db, &[]);
    let server = Server::serve(&db, &[]);
    let refused = |reply: Reply, error: &str| {
        assert_eq!(reply.status, 400, "{}", reply.text);
        assert_eq!(reply.json()["error"], error, "{}", reply.text);
    };
    for scheme in [
        "ws://app.example/cb",
        "ftp://app.example/cb",
        "blob:https://app.example/x",
        "about:blank",
        "view-source:https://app.example/",
        "jar:https://app.example/x!/",
        "x:cb",
        "http://app.example/cb",
        "javascript:alert(1)",
    ] {
        refused(
            register(&server, json!({"redirect_uris": [scheme]})).await,
            "invalid_redirect_uri",
        );
    }
    let many: Vec<String> = (0..11)
        .map(|n| format!("https://app.example/{n}"))
        .collect();
    refused(
        register(&server, json!({"redirect_uris": many})).await,
        "invalid_redirect_uri",
    );
    let long = format!("https://app.example/{}", "a".repeat(2_000));
    refused(
        register(&server, json!({"redirect_uris": [long]})).await,
        "invalid_redirect_uri",
    );
    refused(
        register(
            &server,
            json!({"client_name": "n".repeat(101), "redirect_uris": ["https://app.example/cb"]}),
        )
        .await,
        "invalid_client_metadata",
    );
    let huge =
        json!({"redirect_uris": vec!["https://app.example/".to_owned() + &"a".repeat(1_000); 40]});
    assert_eq!(register(&server, huge).await.status, 413);
    // What RFC 8252 allows a native app, and a loopback address on any port.
    let accepted = register(
        &server,
        json!({"client_name": "Desk", "redirect_uris": ["com.example.desk:/cb", "http://127.0.0.1/cb", "https://app.example/cb"]}),
    )
    .await;
    assert_eq!(accepted.status, 201, "{}", accepted.text);
    // Ten a minute from one address: the burst that filled the disk stops at once.
    let mut statuses = Vec::new();
    for _ in 0..12 {
        let reply = register(
            &server,
            json!({"redirect_uris": ["https://app.example/cb"]}),
        )
        .await;
        if reply.status == 429 {
            assert!(reply.header("retry-after").is_some());
            assert_eq!(reply.json()["error"], "slow_down");
        }
        statuses.push(reply.status);
    }
    assert!(statuses.contains(&429), "{statuses:?}");
}

#[tokio::test]
async fn a_registered_client_nobody_used_within_a_day_is_deleted() {
    let db = TestDb::new();
    bootstrap(&db, &[]);
    let server = Server::serve(&db, &[]);
    let mut ids = Vec::new();
    for name in ["Old", "New"] {
        let reply = register(
            &server,
            json!({"client_name": name, "redirect_uris": ["https://a.example/cb"]}),
        )
        .await;
        ids.push(
            reply.expect(201).json()["client_id"]
                .as_str()
                .unwrap()
                .to_owned(),
        );
    }
    drop(server);
    let store = lps::admin::Db::connect(&db.url).await.unwrap();
    let two_days = 2 * 24 * 3_600 * 1_000_000_i64;
    sqlx::query("UPDATE oauth_clients SET created_at = created_at - $1 WHERE id = $2")
        .bind(two_days)
        .bind(&ids[0])
        .execute(store.pool())
        .await
        .unwrap();
    // The sweep runs when the server starts, then hourly.
    let _server = Server::serve(&db, &[]);
    let count = |id: String| {
        let pool = store.pool().clone();
        async move {
            sqlx::query_scalar::<_, i64>("SELECT COUNT(*) FROM oauth_clients WHERE id = $1")
                .bind(id)
                .fetch_one(&pool)
                .await
                .unwrap()
        }
    };
    let deadline = Instant::now() + Duration::from_secs(10);
    while count(ids[0].clone()).await == 1 {
        assert!(Instant::now() < deadline, "the unused client was kept");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(count(ids[1].clone()).await, 1, "a new client is kept");
}

mod oauth_grants {
    //! What an app connected with OAuth, or a key, may not do with the person's grants.

    use lps::proto::o_auth_service_client::OAuthServiceClient;
    use serde_json::json;

    use crate::common::*;
    use crate::oauth::{
        Browser, FormExt, PASSWORD, REDIRECT, authorize, authorize_keeping_code, setup,
    };

    /// One MCP message (lps's MCP face is stateless: no session to open first); (HTTP
    /// status, body).
    async fn mcp(server: &Server, bearer: &str, method: &str) -> (u16, serde_json::Value) {
        let call = json!({"jsonrpc": "2.0", "id": 2, "method": method, "params": {}});
        let answer = server
            .client
            .post(server.url_of("/mcp"))
            .bearer_auth(bearer)
            .header("accept", "application/json, text/event-stream")
            .header("mcp-protocol-version", "2025-06-18")
            .json(&call)
            .send()
            .await
            .unwrap();
        let status = answer.status().as_u16();
        (status, answer.json().await.unwrap_or(json!(null)))
    }

    /// A token request; (HTTP status, body).
    async fn token(s: &crate::oauth::Setup, form: &[(&str, &str)]) -> (u16, serde_json::Value) {
        let answer = s
            .server
            .client
            .post(s.metadata["token_endpoint"].as_str().unwrap())
            .form(form)
            .send()
            .await
            .unwrap();
        let status = answer.status().as_u16();
        (status, answer.json().await.unwrap_or(json!(null)))
    }

    fn tool_names(list: &serde_json::Value) -> Vec<String> {
        list["result"]["tools"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["name"].as_str().unwrap().to_owned())
            .collect()
    }

    #[tokio::test]
    async fn a_connected_app_cannot_give_itself_a_key_and_is_not_offered_the_tools() {
        let s = setup().await;
        let mut browser = Browser::new(&s.server);
        let (_, tokens) = authorize(&s, &mut browser, s.second_workspace).await;
        let access = tokens["access_token"].as_str().unwrap();
        let refused = s
            .server
            .post(
                access,
                "/generate-api-token",
                json!({"workspace_id": s.second_workspace, "name": "mine forever"}),
            )
            .await
            .expect(403)
            .json();
        assert!(
            refused["message"].as_str().unwrap().contains("OAuth"),
            "{refused}"
        );
        s.server
            .delete(access, "/delete-api-token?token_id=1")
            .await
            .expect(403);
        let (status, list) = mcp(&s.server, access, "tools/list").await;
        assert_eq!(status, 200);
        let names = tool_names(&list);
        assert!(names.contains(&"campaigns_get_list".to_owned()) || !names.is_empty());
        for hidden in [
            "generate_api_token",
            "delete_api_token",
            "callbacks_rotate_secret",
        ] {
            assert!(
                !names.contains(&hidden.to_owned()),
                "{hidden} offered to an app"
            );
        }
        // An API key still has them, marked.
        let (_, list) = mcp(&s.server, &s.account.api_key, "tools/list").await;
        let tools = list["result"]["tools"].as_array().unwrap();
        let generate = tools
            .iter()
            .find(|t| t["name"] == "generate_api_token")
            .unwrap();
        assert!(
            generate["description"]
                .as_str()
                .unwrap()
                .contains("never to an app")
        );
    }

    #[tokio::test]
    async fn grants_are_listed_and_revoked_only_by_the_person() {
        let s = setup().await;
        let mut browser = Browser::new(&s.server);
        let (_, first) = authorize(&s, &mut browser, s.second_workspace).await;
        let (_, _second) = authorize(&s, &mut browser, s.account.workspace_id).await;
        let (_, bound_key) = add_workspace(&s.db, s.account.account_id, "Third");
        let app_token = first["access_token"].as_str().unwrap().to_owned();
        let mut grpc = OAuthServiceClient::new(s.server.grpc_channel().await);
        for credential in [
            bound_key.as_str(),
            s.account.api_key.as_str(),
            app_token.as_str(),
        ] {
            let listed = grpc
                .list_grants(grpc_request(credential, lps::proto::ListGrantsRequest {}))
                .await
                .unwrap_err();
            assert_eq!(listed.code(), tonic::Code::PermissionDenied, "{listed:?}");
            let revoked = grpc
                .revoke_grant(grpc_request(
                    credential,
                    lps::proto::RevokeGrantRequest {
                        grant_id: Some("any".into()),
                    },
                ))
                .await
                .unwrap_err();
            assert_eq!(revoked.code(), tonic::Code::PermissionDenied, "{revoked:?}");
        }
        // The app still works: nothing was revoked by those calls.
        s.server
            .get(&app_token, "/hello-world-user")
            .await
            .expect(200);
    }

    #[tokio::test]
    async fn a_token_for_another_resource_is_never_issued() {
        let s = setup().await;
        let mut browser = Browser::new(&s.server);
        browser
            .log_in("owner@example.com", PASSWORD, "/dashboard")
            .await;
        let client_id = &super::registered_client(&s.server, REDIRECT).await;
        let evil = Some("https://evil.example/mcp");
        let path = super::authorize_path(client_id, REDIRECT, evil);
        let (_, _, consent) = browser.get(&path).await;
        let csrf = crate::oauth::hidden(&consent, "csrf_token");
        let workspace = s.second_workspace.to_string();
        let (status, location, page) = browser
            .post(
                "/oauth/authorize",
                &[
                    ("response_type", "code"),
                    ("client_id", client_id),
                    ("redirect_uri", REDIRECT),
                    ("code_challenge", &"c".repeat(43)),
                    ("code_challenge_method", "S256"),
                    ("resource", "https://evil.example/mcp"),
                    ("csrf_token", &csrf),
                    ("workspace_id", &workspace),
                    ("decision", "approve"),
                ],
            )
            .await;
        let location = location.unwrap_or_default();
        assert_eq!(status, 303, "{page}");
        assert!(location.contains("error=invalid_target"), "{location}");
        assert!(!location.contains("code="), "{location}");
        // And the token endpoint refuses one too.
        let (status, refused) = token(
            &s,
            &[
                ("grant_type", "refresh_token"),
                ("refresh_token", "lps_rt_x"),
                ("client_id", client_id),
                ("resource", "https://evil.example/mcp"),
            ],
        )
        .await;
        assert_eq!((status, &refused["error"]), (400, &json!("invalid_target")));
    }

    #[tokio::test]
    async fn a_replayed_code_is_refused_and_revokes_what_it_gave_and_client_id_is_required() {
        let s = setup().await;
        let mut browser = Browser::new(&s.server);
        let (client_id, tokens, used) =
            authorize_keeping_code(&s, &mut browser, s.second_workspace).await;
        let access = tokens["access_token"].as_str().unwrap();
        s.server.get(access, "/hello-world-user").await.expect(200);
        let replay = token(
            &s,
            &[
                ("grant_type", "authorization_code"),
                ("code", used.code.as_str()),
                ("redirect_uri", REDIRECT),
                ("client_id", client_id.as_str()),
                ("code_verifier", used.verifier.as_str()),
                ("resource", used.resource.as_str()),
            ],
        )
        .await;
        assert_eq!(
            (replay.0, &replay.1["error"]),
            (400, &json!("invalid_grant"))
        );
        s.server.get(access, "/hello-world-user").await.expect(401);
        // A refresh without client_id is refused (and the refresh token is not spent).
        let (client_id, tokens) = authorize(&s, &mut browser, s.second_workspace).await;
        let refresh = tokens["refresh_token"].as_str().unwrap();
        let without = token(
            &s,
            &[("grant_type", "refresh_token"), ("refresh_token", refresh)],
        )
        .await;
        assert_eq!(
            (without.0, &without.1["error"]),
            (400, &json!("invalid_request"))
        );
        let with = token(
            &s,
            &[
                ("grant_type", "refresh_token"),
                ("refresh_token", refresh),
                ("client_id", client_id.as_str()),
            ],
        )
        .await;
        assert_eq!(with.0, 200);
    }

    #[tokio::test]
    async fn mcp_answers_every_message_with_a_bad_credential_with_401() {
        let s = setup().await;
        let mut browser = Browser::new(&s.server);
        let (_, tokens) = authorize(&s, &mut browser, s.second_workspace).await;
        let access = tokens["access_token"].as_str().unwrap().to_owned();
        let (status, _) = mcp(&s.server, &access, "tools/list").await;
        assert_eq!(status, 200);
        s.server
            .client
            .post(s.server.url_of("/oauth/revoke"))
            .form(&[("token", access.as_str())])
            .send()
            .await
            .unwrap();
        for bearer in [
            access.as_str(),
            "garbage",
            "lps_at_expiredorunknown",
            "sk-proj-nope",
        ] {
            for method in ["tools/list", "ping", "tools/call"] {
                let answer = s
                    .server
                    .client
                    .post(s.server.url_of("/mcp"))
                    .bearer_auth(bearer)
                    .header("accept", "application/json, text/event-stream")
                    .header("mcp-protocol-version", "2025-06-18")
                    .json(&json!({"jsonrpc": "2.0", "id": 3, "method": method, "params": {}}))
                    .send()
                    .await
                    .unwrap();
                assert_eq!(answer.status(), 401, "{bearer} {method}");
                let challenge = answer.headers()["www-authenticate"].to_str().unwrap();
                assert!(challenge.contains("invalid_token"), "{challenge}");
            }
        }
    }

    #[tokio::test]
    async fn the_consent_screen_says_where_the_code_goes_and_cannot_be_framed() {
        let s = setup().await;
        let mut browser = Browser::new(&s.server);
        browser
            .log_in("owner@example.com", PASSWORD, "/dashboard")
            .await;
        for (redirect, shown) in [
            (
                "https://app.example/callback",
                "<strong>app.example</strong>",
            ),
            (REDIRECT, "an app on this device"),
            (
                "com.example.desk:/cb",
                "an app on this device</strong> (com.example.desk:)",
            ),
        ] {
            let client_id = super::registered_client(&s.server, redirect).await;
            let url = super::authorize_path(&client_id, redirect, None);
            let (status, _, consent) = browser.get(&url).await;
            assert_eq!(status, 200, "{consent}");
            assert!(consent.contains(shown), "{redirect}: {consent}");
        }
        for path in ["/dashboard/login", "/oauth/authorize?client_id=x"] {
            let answer = s
                .server
                .send(s.server.client.get(s.server.url_of(path)))
                .await;
            assert_eq!(answer.header("x-frame-options"), Some("DENY"), "{path}");
        }
    }

    #[tokio::test]
    async fn after_login_only_a_path_on_this_site_is_followed() {
        let s = setup().await;
        for next in [
            "/\t/evil.example/",
            "//evil.example/",
            "/\\evil.example/",
            "https://evil.example/",
            "/dashboard\r\nSet-Cookie: x=1",
            "/dash\u{b}board",
            "/dash\0board",
            " /dashboard",
            "/\n/evil.example",
        ] {
            let mut browser = Browser::new(&s.server);
            let (status, location, page) =
                browser.log_in("owner@example.com", PASSWORD, next).await;
            assert_eq!(status, 303, "{next:?}: {page}");
            assert_eq!(location.as_deref(), Some("/dashboard"), "{next:?}");
        }
        let mut browser = Browser::new(&s.server);
        let (_, location, _) = browser
            .log_in("owner@example.com", PASSWORD, "/dashboard?tab=keys")
            .await;
        assert_eq!(location.as_deref(), Some("/dashboard?tab=keys"));
    }

    #[tokio::test]
    async fn an_unknown_email_takes_as_long_to_refuse_as_a_wrong_password() {
        let s = setup().await;
        let timed = |email: &'static str| {
            let server = &s.server;
            async move {
                let mut took = Vec::new();
                for _ in 0..5 {
                    let mut browser = Browser::new(server);
                    let started = std::time::Instant::now();
                    let (status, _, _) = browser.log_in(email, "wrong password!", "/").await;
                    took.push(started.elapsed());
                    assert_eq!(status, 401);
                }
                took.sort();
                took[2]
            }
        };
        let known = timed("owner@example.com").await;
        let unknown = timed("nobody@example.com").await;
        println!("login refused: known email {known:?}, unknown email {unknown:?}");
        // Before: 1.3 ms against 16 ms. Both now verify a hash.
        assert!(unknown * 3 > known, "known {known:?}, unknown {unknown:?}");
    }

    #[tokio::test]
    async fn failures_from_one_address_never_lock_the_owner_out_from_another() {
        let s = crate::oauth::setup_with(&["--trusted-proxies", "127.0.0.1/32"]).await;
        let mut attacker = Browser::new(&s.server);
        attacker.forwarded_for = Some("203.0.113.7".into());
        let mut statuses = Vec::new();
        for _ in 0..12 {
            let (status, _, _) = attacker
                .log_in("owner@example.com", "guess guess", "/dashboard")
                .await;
            statuses.push(status);
        }
        assert_eq!(statuses.last(), Some(&429), "{statuses:?}");
        let mut owner = Browser::new(&s.server);
        owner.forwarded_for = Some("198.51.100.9".into());
        let (status, location, page) = owner
            .log_in("owner@example.com", PASSWORD, "/dashboard")
            .await;
        assert_eq!(
            (status, location.as_deref()),
            (303, Some("/dashboard")),
            "{page}"
        );
    }

    #[tokio::test]
    async fn a_password_change_ends_other_sessions_and_every_setup_link() {
        let db = TestDb::new();
        let server = Server::serve(&db, &[]);
        let printed = server.stdout.join("\n");
        let link = printed
            .split_whitespace()
            .find(|word| word.contains("/dashboard/setup?token="))
            .unwrap()
            .trim_start_matches(&server.http)
            .to_owned();
        // The operator sets the password; the printed link no longer works.
        lps(&[
            "admin",
            "user",
            "set-password",
            "--database-url",
            &db.url,
            "--email",
            "owner@example.com",
            "--password",
            PASSWORD,
        ]);
        let mut browser = Browser::new(&server);
        let (status, _, form) = browser.get(&link).await;
        let token = crate::oauth::hidden(&form, "token");
        let setup_csrf = crate::oauth::hidden(&form, "csrf_token");
        let (status_after, _, _) = browser
            .post(
                "/dashboard/setup",
                &[
                    ("token", token.as_str()),
                    ("csrf_token", setup_csrf.as_str()),
                    ("password", "a brand new one"),
                ],
            )
            .await;
        assert_eq!((status, status_after), (200, 410));
        // A session from before a change ends with it.
        let (status, _, _) = browser
            .log_in("owner@example.com", PASSWORD, "/dashboard")
            .await;
        assert_eq!(status, 303);
        assert_eq!(browser.get("/dashboard").await.0, 200);
        lps(&[
            "admin",
            "user",
            "set-password",
            "--database-url",
            &db.url,
            "--email",
            "owner@example.com",
            "--password",
            "another password",
        ]);
        tokio::time::sleep(std::time::Duration::from_millis(1_100)).await;
        let (status, location, _) = browser.get("/dashboard").await;
        assert_eq!(
            (status, location.as_deref()),
            (303, Some("/dashboard/login"))
        );
    }
}

#[tokio::test]
async fn a_grpc_caller_cannot_assert_a_client_or_visitor_address() {
    use lps::proto::o_auth_service_client::OAuthServiceClient;
    use lps::proto::visitor_service_client::VisitorServiceClient;

    let db = TestDb::new();
    let account = bootstrap(&db, &["--user-password", "correct horse battery"]);
    let server = Server::serve(&db, &[]);
    let channel = server.grpc_channel().await;
    // Every guess from a new "address": still counted against the caller's own.
    let mut oauth = OAuthServiceClient::new(channel.clone());
    let mut codes = Vec::new();
    for n in 0..12 {
        let mut request = tonic::Request::new(lps::proto::LoginRequest {
            email: Some("owner@example.com".into()),
            password: Some("not it at all".into()),
        });
        request.metadata_mut().insert(
            "x-lps-client-address",
            format!("198.51.100.{n}").parse().unwrap(),
        );
        codes.push(oauth.login(request).await.unwrap_err().code());
    }
    assert_eq!(
        codes.last(),
        Some(&tonic::Code::ResourceExhausted),
        "{codes:?}"
    );
    // A form's address is the caller's, not what it says.
    let (_, page) = crate::engagement::live_form_page(
        &server,
        &account.api_key,
        account.workspace_id,
        "Forged",
    )
    .await;
    let path: Vec<&str> = page.split("/p/").nth(1).unwrap().split('/').collect();
    let mut visitor = VisitorServiceClient::new(channel);
    visitor
        .submit_form(lps::proto::SubmitFormRequest {
            campaign_slug: path[0].into(),
            lead_slug: path[1].into(),
            form_id: Some("demo".into()),
            ip_address: "203.0.113.66".into(),
            fields: [("email".to_owned(), "f@example.com".to_owned())].into(),
            user_agent: "Mozilla/5.0 (X11; Linux x86_64; rv:128.0) Gecko/20100101 Firefox/128.0"
                .into(),
            webdriver: false,
            workspace_id: None,
        })
        .await
        .unwrap();
    let listed = server
        .get(&account.api_key, "/automation/get-form-submissions")
        .await
        .expect(200)
        .json();
    assert_eq!(listed[0]["ip_address"], "127.0.0.1", "{listed}");
}

#[tokio::test]
async fn one_address_cannot_fake_thousands_of_visitors_or_hours_of_reading() {
    let db = TestDb::new();
    let account = bootstrap(&db, &[]);
    let server = Server::serve(&db, &[]);
    let (key, ws) = (&account.api_key, account.workspace_id);
    let (campaign, pages) = live_campaign(&server, key, ws, "Flood", 1).await;
    let page = &pages[0].1;
    let server = &server;
    let sends = (0..600).map(|n| {
        let visitor = format!("{n:032x}");
        async move {
            for body in [
                json!({"type": "view"}),
                json!({"type": "time", "seconds": 1800}),
                json!({"type": "time", "seconds": 1800}),
            ] {
                send_person_beacon(server, page, body, DESKTOP_BROWSER, &visitor).await;
            }
        }
    });
    futures_util::future::join_all(sends).await;
    // One address adds at most 5 visitors to one page an hour; the rest are kept as
    // automated, with the budget as the reason.
    let entry = analytics_until(server, key, ws, campaign, |e| {
        e["unique_visitors"] == 5 && e["filtered_visits"]["automated"] == 595
    })
    .await;
    assert_eq!(entry["unique_visitors"], 5, "{entry}");
    assert_eq!(entry["filtered_visits"]["automated"], 595, "{entry}");
    // Each counted view earns at most 30 minutes, however many time beacons claim more.
    assert!(
        entry["average_time_on_page_seconds"].as_f64().unwrap() <= 1800.0,
        "{entry}"
    );
    let metrics = server
        .send(server.client.get(server.url_of("/metrics")))
        .await
        .text;
    assert!(
        metrics.contains("class=\"automated\""),
        "beacons over a budget are counted as automated: {metrics}"
    );
    let activity = server
        .get(key, &format!("/leads/activity?lead_id={}", pages[0].0))
        .await
        .expect(200)
        .json();
    assert!(
        activity["entries"]
            .as_array()
            .unwrap()
            .iter()
            .any(|e| e["reason"] == "more than 5 visitors of one page from one address in an hour"),
        "{activity}"
    );
}
