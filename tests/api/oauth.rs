//! OAuth 2.1 for AI assistants and the dashboard, driven over HTTP as a client and a person
//! would: discovery from the 401 of `/mcp`, registration, authorize with PKCE, logging in,
//! consent picking the second of two workspaces, the code exchange, the token on `/mcp`, REST
//! and gRPC, refresh rotation, revocation (dashboard and RFC 7009), and the refusals.

use base64::Engine;
use rmcp::ServiceExt;
use rmcp::model::{CallToolRequestParams, ClientConfig};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use crate::common::*;

/// Form bodies (`application/x-www-form-urlencoded`), as browsers and OAuth clients send them.
pub(crate) trait FormExt {
    fn form<K: AsRef<str>, V: AsRef<str>>(self, pairs: &[(K, V)]) -> Self;
}

impl FormExt for reqwest::RequestBuilder {
    fn form<K: AsRef<str>, V: AsRef<str>>(self, pairs: &[(K, V)]) -> Self {
        let mut body = form_urlencoded::Serializer::new(String::new());
        for (key, value) in pairs {
            body.append_pair(key.as_ref(), value.as_ref());
        }
        self.header("content-type", "application/x-www-form-urlencoded")
            .body(body.finish())
    }
}

pub(crate) const PASSWORD: &str = "correct horse battery";
pub(crate) const REDIRECT: &str = "http://127.0.0.1:47999/callback";

/// A browser-like client: no automatic redirects, cookies kept by hand.
pub(crate) struct Browser {
    http: reqwest::Client,
    base: String,
    cookies: Vec<(String, String)>,
    /// Sent as `X-Forwarded-For` (a server trusting loopback as its proxy takes it as the
    /// client's address).
    pub(crate) forwarded_for: Option<String>,
}

impl Browser {
    pub(crate) fn new(server: &Server) -> Self {
        Self {
            http: reqwest::Client::builder()
                .redirect(reqwest::redirect::Policy::none())
                .build()
                .unwrap(),
            base: server.http.clone(),
            cookies: Vec::new(),
            forwarded_for: None,
        }
    }

    fn url(&self, path: &str) -> String {
        if path.starts_with("http") {
            path.to_owned()
        } else {
            format!("{}{path}", self.base)
        }
    }

    fn forwarded(&self, request: reqwest::RequestBuilder) -> reqwest::RequestBuilder {
        match &self.forwarded_for {
            Some(address) => request.header("x-forwarded-for", address),
            None => request,
        }
    }

    fn cookie_header(&self) -> String {
        self.cookies
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect::<Vec<_>>()
            .join("; ")
    }

    fn keep_cookies(&mut self, response: &reqwest::Response) {
        for value in response.headers().get_all("set-cookie") {
            let text = value.to_str().unwrap();
            // Every cookie is HttpOnly but a page's load token and the person's own time zone,
            // which scripts read.
            assert!(
                (text.contains("HttpOnly")
                    || text.starts_with("lps_load=")
                    || text.starts_with("lps_tz=")
                    || text.starts_with("lps_tz_own="))
                    && text.contains("SameSite=Lax"),
                "{text}"
            );
            let (pair, _) = text.split_once(';').unwrap();
            let (name, value) = pair.split_once('=').unwrap();
            self.cookies.retain(|(k, _)| k != name);
            if !value.is_empty() {
                self.cookies.push((name.to_owned(), value.to_owned()));
            }
        }
    }

    /// The value of a cookie the browser keeps.
    pub(crate) fn cookie(&self, name: &str) -> Option<String> {
        self.cookies
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.clone())
    }

    /// Keeps a cookie as the page's script would set it.
    pub(crate) fn set_cookie(&mut self, name: &str, value: &str) {
        self.cookies.retain(|(k, _)| k != name);
        self.cookies.push((name.to_owned(), value.to_owned()));
    }

    pub(crate) async fn get(&mut self, path: &str) -> (u16, Option<String>, String) {
        let response = self
            .forwarded(self.http.get(self.url(path)))
            .header("cookie", self.cookie_header())
            .send()
            .await
            .unwrap();
        self.finish(response).await
    }

    /// `GET path`, its answer left to be read as it streams (server-sent events).
    pub(crate) async fn open(&mut self, path: &str) -> reqwest::Response {
        self.forwarded(self.http.get(self.url(path)))
            .header("cookie", self.cookie_header())
            .send()
            .await
            .unwrap()
    }

    /// `GET path` with the answer's headers.
    pub(crate) async fn get_with_headers(
        &mut self,
        path: &str,
    ) -> (u16, reqwest::header::HeaderMap, String) {
        let response = self
            .forwarded(self.http.get(self.url(path)))
            .header("cookie", self.cookie_header())
            .send()
            .await
            .unwrap();
        self.keep_cookies(&response);
        let status = response.status().as_u16();
        let headers = response.headers().clone();
        (status, headers, response.text().await.unwrap())
    }

    /// `POST path` as a form sent from the page at `origin` (a browser's `Origin` header).
    pub(crate) async fn post_from(
        &mut self,
        origin: &str,
        path: &str,
        form: &[(&str, &str)],
    ) -> (u16, Option<String>, String) {
        let response = self
            .forwarded(self.http.post(self.url(path)))
            .header("cookie", self.cookie_header())
            .header("origin", origin)
            .form(form)
            .send()
            .await
            .unwrap();
        self.finish(response).await
    }

    /// Sets a cookie as another site could have (a sibling subdomain, a man in the middle).
    pub(crate) fn plant_cookie(&mut self, name: &str, value: &str) {
        self.cookies.retain(|(k, _)| k != name);
        self.cookies.push((name.to_owned(), value.to_owned()));
    }

    /// `POST path` with a body of its own type (a `multipart/form-data` upload, say), sent
    /// from this site.
    pub(crate) async fn post_body(
        &mut self,
        path: &str,
        content_type: &str,
        body: Vec<u8>,
    ) -> (u16, Option<String>, String) {
        let response = self
            .forwarded(self.http.post(self.url(path)))
            .header("cookie", self.cookie_header())
            .header("content-type", content_type)
            .body(body)
            .send()
            .await
            .unwrap();
        self.finish(response).await
    }

    pub(crate) async fn post(
        &mut self,
        path: &str,
        form: &[(&str, &str)],
    ) -> (u16, Option<String>, String) {
        let response = self
            .forwarded(self.http.post(self.url(path)))
            .header("cookie", self.cookie_header())
            .form(form)
            .send()
            .await
            .unwrap();
        self.finish(response).await
    }

    async fn finish(&mut self, response: reqwest::Response) -> (u16, Option<String>, String) {
        self.keep_cookies(&response);
        let status = response.status().as_u16();
        let location = response
            .headers()
            .get("location")
            .map(|v| v.to_str().unwrap().to_owned());
        (status, location, response.text().await.unwrap())
    }

    /// Signs in through the login form.
    pub(crate) async fn log_in(
        &mut self,
        email: &str,
        password: &str,
        next: &str,
    ) -> (u16, Option<String>, String) {
        let (status, _, page) = self
            .get(&format!("/dashboard/login?next={}", urlencode(next)))
            .await;
        assert_eq!(status, 200);
        let csrf = hidden(&page, "csrf_token");
        self.post(
            "/dashboard/login",
            &[
                ("csrf_token", &csrf),
                ("next", next),
                ("email", email),
                ("password", password),
            ],
        )
        .await
    }
}

pub(crate) fn urlencode(text: &str) -> String {
    form_urlencoded::byte_serialize(text.as_bytes()).collect()
}

/// The value of a hidden input in a page.
pub(crate) fn hidden(page: &str, name: &str) -> String {
    let marker = format!("name=\"{name}\" value=\"");
    let start = page
        .find(&marker)
        .unwrap_or_else(|| panic!("{name} in {page}"))
        + marker.len();
    let end = page[start..].find('"').unwrap() + start;
    page[start..end].replace("&amp;", "&")
}

pub(crate) fn query_of(location: &str) -> std::collections::HashMap<String, String> {
    let url = reqwest::Url::parse(location).unwrap();
    url.query_pairs().into_owned().collect()
}

pub(crate) struct Setup {
    pub(crate) server: Server,
    pub(crate) db: TestDb,
    pub(crate) account: Account,
    pub(crate) second_workspace: i64,
    pub(crate) metadata: Value,
}

pub(crate) async fn setup() -> Setup {
    setup_with(&[]).await
}

pub(crate) async fn setup_with(extra: &[&str]) -> Setup {
    let db = TestDb::new();
    let account = bootstrap(&db, &["--user-password", PASSWORD]);
    let (second_workspace, _) = add_workspace(&db, account.account_id, "Second");
    let mut args = vec!["--rate-limit-per-minute", "100000"];
    args.extend_from_slice(extra);
    let server = Server::serve(&db, &args);
    // Discovery, as an MCP client does it: 401 -> resource metadata -> AS metadata.
    let refused = server
        .client
        .post(format!("{}/mcp", server.http))
        .send()
        .await
        .unwrap();
    assert_eq!(refused.status(), 401);
    let challenge = refused.headers()["www-authenticate"]
        .to_str()
        .unwrap()
        .to_owned();
    let resource_metadata = challenge
        .split("resource_metadata=\"")
        .nth(1)
        .unwrap()
        .trim_end_matches('"')
        .to_owned();
    let resource: Value = server
        .client
        .get(&resource_metadata)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let issuer = resource["authorization_servers"][0]
        .as_str()
        .unwrap()
        .to_owned();
    let metadata: Value = server
        .client
        .get(format!("{issuer}/.well-known/oauth-authorization-server"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(metadata["issuer"], issuer);
    assert_eq!(
        metadata["code_challenge_methods_supported"],
        json!(["S256"])
    );
    let openid: Value = server
        .client
        .get(format!("{issuer}/.well-known/openid-configuration"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(openid["token_endpoint"], metadata["token_endpoint"]);
    Setup {
        server,
        db,
        account,
        second_workspace,
        metadata,
    }
}

/// A registered client, and a finished authorization for `workspace`: (client_id, tokens).
pub(crate) async fn authorize(s: &Setup, browser: &mut Browser, workspace: i64) -> (String, Value) {
    let (client_id, tokens, _) = authorize_keeping_code(s, browser, workspace).await;
    (client_id, tokens)
}

/// The code a finished authorization was exchanged with, as the client sent it.
pub(crate) struct UsedCode {
    pub(crate) code: String,
    pub(crate) verifier: String,
    pub(crate) resource: String,
}

/// [`authorize`], and the code it used.
pub(crate) async fn authorize_keeping_code(
    s: &Setup,
    browser: &mut Browser,
    workspace: i64,
) -> (String, Value, UsedCode) {
    let registered: Value = s
        .server
        .client
        .post(s.metadata["registration_endpoint"].as_str().unwrap())
        .json(&json!({"client_name": "Test Assistant", "redirect_uris": [REDIRECT]}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let client_id = registered["client_id"].as_str().unwrap().to_owned();
    let verifier = lps::wire::random_token(64);
    let challenge = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .encode(Sha256::digest(verifier.as_bytes()));
    let resource = format!("{}/mcp", s.server.http);
    let authorize_url = format!(
        "/oauth/authorize?response_type=code&client_id={}&redirect_uri={}&code_challenge={challenge}\
         &code_challenge_method=S256&state=st8&resource={}",
        urlencode(&client_id),
        urlencode(REDIRECT),
        urlencode(&resource)
    );
    let (status, location, _) = browser.get(&authorize_url).await;
    if status == 303 || status == 302 {
        let location = location.unwrap();
        assert!(location.starts_with("/dashboard/login?next="), "{location}");
        let (status, next, _) = browser
            .log_in("owner@example.com", PASSWORD, &authorize_url)
            .await;
        assert_eq!(
            (status, next.as_deref()),
            (303, Some(authorize_url.as_str()))
        );
    }
    let (status, _, consent) = browser.get(&authorize_url).await;
    assert_eq!(status, 200, "{consent}");
    assert!(consent.contains("Test Assistant"), "{consent}");
    assert!(consent.contains("Second"), "{consent}");
    let csrf = hidden(&consent, "csrf_token");
    let workspace = workspace.to_string();
    let (status, location, _) = browser
        .post(
            "/oauth/authorize",
            &[
                ("response_type", "code"),
                ("client_id", &client_id),
                ("redirect_uri", REDIRECT),
                ("code_challenge", &challenge),
                ("code_challenge_method", "S256"),
                ("state", "st8"),
                ("resource", &resource),
                ("csrf_token", &csrf),
                ("workspace_id", &workspace),
                ("decision", "approve"),
            ],
        )
        .await;
    assert_eq!(status, 303);
    let location = location.unwrap();
    assert!(location.starts_with(REDIRECT), "{location}");
    let params = query_of(&location);
    assert_eq!(params["state"], "st8");
    assert_eq!(params["iss"], s.metadata["issuer"].as_str().unwrap());
    let code = params["code"].clone();

    let token_url = s.metadata["token_endpoint"].as_str().unwrap();
    let exchange = |verifier: String, code: String| {
        s.server.client.post(token_url).form(&[
            ("grant_type", "authorization_code".to_owned()),
            ("code", code),
            ("redirect_uri", REDIRECT.to_owned()),
            ("client_id", client_id.clone()),
            ("code_verifier", verifier),
            ("resource", resource.clone()),
        ])
    };
    let tokens: Value = exchange(verifier.clone(), code.clone())
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(tokens["token_type"], "Bearer", "{tokens}");
    assert!(tokens["expires_in"].as_i64().unwrap() > 0, "{tokens}");
    (
        client_id,
        tokens,
        UsedCode {
            code,
            verifier,
            resource,
        },
    )
}

#[tokio::test]
async fn an_assistant_goes_from_the_mcp_url_to_calling_tools_in_the_chosen_workspace() {
    let s = setup().await;
    let mut browser = Browser::new(&s.server);
    // A wrong password first.
    let (status, _, page) = browser
        .log_in("owner@example.com", "wrong password!", "/dashboard")
        .await;
    assert_eq!(status, 401);
    assert!(page.contains("Wrong email or password"));

    let (client_id, tokens) = authorize(&s, &mut browser, s.second_workspace).await;
    assert_eq!(tokens["expires_in"], 3600, "an hour by default");
    let access = tokens["access_token"].as_str().unwrap().to_owned();

    // REST: bound to the chosen workspace.
    let me = s
        .server
        .get(&access, "/hello-world-user")
        .await
        .expect(200)
        .json();
    assert_eq!(me["workspace_id"], s.second_workspace, "{me}");
    s.server
        .get(
            &access,
            &format!(
                "/campaigns/get-list?workspace_id={}",
                s.account.workspace_id
            ),
        )
        .await
        .expect(403);
    // gRPC.
    let mut identity = lps::proto::identity_service_client::IdentityServiceClient::new(
        s.server.grpc_channel().await,
    );
    let who = identity
        .who_am_i(grpc_request(&access, lps::proto::WhoAmIRequest {}))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(who.workspace_id, Some(s.second_workspace));
    // MCP, with rmcp's client.
    let config = StreamableHttpClientTransportConfig::with_uri(format!("{}/mcp", s.server.http))
        .auth_header(access.clone());
    let client = ClientConfig::default()
        .serve(StreamableHttpClientTransport::from_config(config))
        .await
        .expect("connects with the OAuth token");
    let listed = client
        .call_tool(CallToolRequestParams::new("workspaces_get_list"))
        .await
        .unwrap();
    let workspaces = listed.structured_content.unwrap();
    assert_eq!(workspaces["result"].as_array().unwrap().len(), 1);
    assert_eq!(workspaces["result"][0]["id"], s.second_workspace);
    client.cancel().await.unwrap();

    // Refresh: a new pair; the old refresh token is refused, and its replay ends the grant.
    let token_url = s.metadata["token_endpoint"].as_str().unwrap();
    let refresh = |token: &str| {
        s.server
            .client
            .post(token_url)
            .form(&[
                ("grant_type", "refresh_token"),
                ("refresh_token", token),
                ("client_id", &client_id),
            ])
            .send()
    };
    let old_refresh = tokens["refresh_token"].as_str().unwrap();
    let renewed: Value = refresh(old_refresh).await.unwrap().json().await.unwrap();
    let new_access = renewed["access_token"].as_str().unwrap().to_owned();
    assert_ne!(new_access, access);
    s.server
        .get(&new_access, "/hello-world-user")
        .await
        .expect(200);
    let replay = refresh(old_refresh).await.unwrap();
    assert_eq!(replay.status(), 400);
    assert_eq!(
        replay.json::<Value>().await.unwrap()["error"],
        "invalid_grant"
    );
    s.server
        .get(&new_access, "/hello-world-user")
        .await
        .expect(401);
    // An invalid token on /mcp is a 401 the client can act on.
    let refused = s
        .server
        .client
        .post(format!("{}/mcp", s.server.http))
        .bearer_auth(&new_access)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .body(r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#)
        .send()
        .await
        .unwrap();
    assert_eq!(refused.status(), 401);
    assert!(
        refused.headers()["www-authenticate"]
            .to_str()
            .unwrap()
            .contains("invalid_token")
    );
}

#[tokio::test]
async fn revocation_from_the_dashboard_and_by_rfc_7009_takes_effect_on_the_next_call() {
    let s = setup().await;
    let mut browser = Browser::new(&s.server);
    let (_, first) = authorize(&s, &mut browser, s.second_workspace).await;
    let (_, second) = authorize(&s, &mut browser, s.account.workspace_id).await;
    let first_access = first["access_token"].as_str().unwrap();
    let second_access = second["access_token"].as_str().unwrap();
    s.server
        .get(first_access, "/hello-world-user")
        .await
        .expect(200);

    // The settings list both apps; revoking the first ends its tokens, refresh included.
    let (status, _, dashboard) = browser.get("/dashboard/settings").await;
    assert_eq!(status, 200);
    assert_eq!(
        dashboard.matches("<td>Test Assistant</td>").count(),
        2,
        "{dashboard}"
    );
    let csrf = hidden(&dashboard, "csrf_token");
    let marker = "apps/revoke?grant_id=";
    let start = dashboard.find(marker).unwrap() + marker.len();
    let link = &dashboard[start..start + dashboard[start..].find('"').unwrap()];
    let (status, _, confirm) = browser
        .get(&format!("/dashboard/apps/revoke?grant_id={link}"))
        .await;
    assert_eq!(status, 200, "{confirm}");
    assert!(confirm.contains("Test Assistant"), "{confirm}");
    let grant = hidden(&confirm, "grant_id");
    let (status, _, _) = browser
        .post(
            "/dashboard/apps/revoke",
            &[("csrf_token", &csrf), ("grant_id", &grant)],
        )
        .await;
    assert_eq!(status, 303);
    let mut live = Vec::new();
    for tokens in [&first, &second] {
        let access = tokens["access_token"].as_str().unwrap();
        if s.server.get(access, "/hello-world-user").await.status == 200 {
            live.push(tokens);
        }
    }
    assert_eq!(live.len(), 1, "the dashboard revoked exactly one app");
    // RFC 7009 on the other, with its refresh token: the whole grant ends.
    let revoke = s
        .server
        .client
        .post(s.metadata["revocation_endpoint"].as_str().unwrap())
        .form(&[("token", live[0]["refresh_token"].as_str().unwrap())])
        .send()
        .await
        .unwrap();
    assert_eq!(revoke.status(), 200);
    s.server
        .get(first_access, "/hello-world-user")
        .await
        .expect(401);
    s.server
        .get(second_access, "/hello-world-user")
        .await
        .expect(401);
}

#[tokio::test]
async fn pkce_mismatch_wrong_redirect_and_unknown_clients_are_refused() {
    let s = setup().await;
    let registered: Value = s
        .server
        .client
        .post(s.metadata["registration_endpoint"].as_str().unwrap())
        .json(&json!({"client_name": "Sloppy", "redirect_uris": [REDIRECT]}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let client_id = registered["client_id"].as_str().unwrap().to_owned();
    // Registration refuses a non-loopback http redirect.
    let bad = s
        .server
        .client
        .post(s.metadata["registration_endpoint"].as_str().unwrap())
        .json(&json!({"redirect_uris": ["http://evil.example/cb"]}))
        .send()
        .await
        .unwrap();
    assert_eq!(bad.status(), 400);
    assert_eq!(
        bad.json::<Value>().await.unwrap()["error"],
        "invalid_redirect_uri"
    );

    let mut browser = Browser::new(&s.server);
    let (status, _, _) = browser
        .log_in("owner@example.com", PASSWORD, "/dashboard")
        .await;
    assert_eq!(status, 303);
    let challenge = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .encode(Sha256::digest(b"the real verifier, long enough to count"));
    // A redirect URI the client did not register: an error page, never a redirect.
    let (status, location, _) = browser
        .get(&format!(
            "/oauth/authorize?response_type=code&client_id={}&redirect_uri={}&code_challenge={challenge}&code_challenge_method=S256",
            urlencode(&client_id),
            urlencode("http://attacker.example/cb")
        ))
        .await;
    assert_eq!((status, location), (400, None));
    // Without S256: back to the client with an error.
    let (status, location, _) = browser
        .get(&format!(
            "/oauth/authorize?response_type=code&client_id={}&redirect_uri={}&code_challenge=plain&code_challenge_method=plain&state=s",
            urlencode(&client_id),
            urlencode(REDIRECT)
        ))
        .await;
    assert_eq!(status, 303);
    assert_eq!(query_of(&location.unwrap())["error"], "invalid_request");
    // Unknown client.
    let (status, _, _) = browser
        .get(&format!(
            "/oauth/authorize?response_type=code&client_id=nobody&redirect_uri={}&code_challenge={challenge}&code_challenge_method=S256",
            urlencode(REDIRECT)
        ))
        .await;
    assert_eq!(status, 400);

    // A code exchanged with the wrong verifier.
    let url = format!(
        "/oauth/authorize?response_type=code&client_id={}&redirect_uri={}&code_challenge={challenge}&code_challenge_method=S256&state=s",
        urlencode(&client_id),
        urlencode(REDIRECT)
    );
    let (_, _, consent) = browser.get(&url).await;
    let csrf = hidden(&consent, "csrf_token");
    let workspace = s.account.workspace_id.to_string();
    let base = [
        ("response_type", "code"),
        ("client_id", client_id.as_str()),
        ("redirect_uri", REDIRECT),
        ("code_challenge", challenge.as_str()),
        ("code_challenge_method", "S256"),
        ("state", "s"),
        ("workspace_id", workspace.as_str()),
        ("decision", "approve"),
    ];
    // The consent form without its CSRF token is refused.
    let (status, _, _) = browser.post("/oauth/authorize", &base).await;
    assert_eq!(status, 403);
    let mut form = base.to_vec();
    form.push(("csrf_token", &csrf));
    let (_, location, _) = browser.post("/oauth/authorize", &form).await;
    let code = query_of(&location.unwrap())["code"].clone();
    let token_url = s.metadata["token_endpoint"].as_str().unwrap();
    let wrong = s
        .server
        .client
        .post(token_url)
        .form(&[
            ("grant_type", "authorization_code"),
            ("code", &code),
            ("redirect_uri", REDIRECT),
            ("client_id", &client_id),
            (
                "code_verifier",
                "a different verifier that does not match at all",
            ),
        ])
        .send()
        .await
        .unwrap();
    assert_eq!(wrong.status(), 400);
    assert_eq!(
        wrong.json::<Value>().await.unwrap()["error"],
        "invalid_grant"
    );
    // Deny: back to the client with access_denied.
    let (_, _, consent) = browser.get(&url).await;
    let csrf = hidden(&consent, "csrf_token");
    let mut form = base.to_vec();
    form.retain(|(k, _)| *k != "decision");
    form.push(("decision", "deny"));
    form.push(("csrf_token", &csrf));
    let (_, location, _) = browser.post("/oauth/authorize", &form).await;
    assert_eq!(query_of(&location.unwrap())["error"], "access_denied");
}

#[tokio::test]
async fn the_dashboard_creates_keys_shown_once_deletes_them_and_refuses_forged_forms() {
    let s = setup().await;
    let mut browser = Browser::new(&s.server);
    let (status, location, _) = browser.get("/dashboard").await;
    assert_eq!(
        (status, location.as_deref()),
        (303, Some("/dashboard/login"))
    );
    // The login form without its CSRF cookie is refused.
    let forged = s
        .server
        .client
        .post(format!("{}/dashboard/login", s.server.http))
        .form(&[
            ("email", "owner@example.com"),
            ("password", PASSWORD),
            ("csrf_token", "x"),
        ])
        .send()
        .await
        .unwrap();
    assert_eq!(forged.status(), 403);
    let (status, location, _) = browser
        .log_in("owner@example.com", PASSWORD, "/dashboard")
        .await;
    assert_eq!((status, location.as_deref()), (303, Some("/dashboard")));
    let (_, _, home) = browser.get("/dashboard").await;
    assert!(
        home.contains("My Workspace") && home.contains("Second"),
        "{home}"
    );
    let csrf = hidden(&home, "csrf_token");
    let workspace = s.second_workspace.to_string();
    let settings = format!("/dashboard/settings?workspace_id={workspace}");
    let (status, _, _) = browser
        .post(
            "/dashboard/keys/create",
            &[("workspace_id", &workspace), ("name", "Forged")],
        )
        .await;
    assert_eq!(status, 403);
    let (status, location, _) = browser
        .post(
            "/dashboard/keys/create",
            &[
                ("csrf_token", &csrf),
                ("workspace_id", &workspace),
                ("name", "From the dashboard"),
            ],
        )
        .await;
    // Post/redirect/get: the page after the action is a GET a reload repeats harmlessly.
    assert_eq!(
        (status, location.as_deref()),
        (303, Some(settings.as_str()))
    );
    let (status, _, created) = browser.get(&settings).await;
    assert_eq!(status, 200);
    let start = created.find("sk-proj-").expect("the key, shown once");
    let key: String = created[start..]
        .chars()
        .take_while(|c| c.is_ascii_alphanumeric() || *c == '-')
        .collect();
    let me = s
        .server
        .get(&key, "/hello-world-user")
        .await
        .expect(200)
        .json();
    assert_eq!(me["workspace_id"], s.second_workspace);
    let (_, _, home) = browser.get(&settings).await;
    assert!(!home.contains(&key), "shown only once");
    assert!(home.contains("From the dashboard"));
    // Delete it: refused from the next request.
    // Deleting asks first: the key's name and what deleting does, then the form.
    let token_id = {
        let marker = "keys/delete?token_id=";
        let at = home.find("From the dashboard").unwrap();
        let rest = &home[at..];
        let start = rest.find(marker).unwrap() + marker.len();
        rest[start..start + rest[start..].find('"').unwrap()].to_owned()
    };
    let (status, _, confirm) = browser
        .get(&format!("/dashboard/keys/delete?token_id={token_id}"))
        .await;
    assert_eq!(status, 200, "{confirm}");
    assert!(
        confirm.contains("From the dashboard") && confirm.contains("cannot be undone"),
        "{confirm}"
    );
    assert_eq!(hidden(&confirm, "token_id"), token_id);
    let (status, _, _) = browser
        .post(
            "/dashboard/keys/delete",
            &[("csrf_token", &csrf), ("token_id", &token_id)],
        )
        .await;
    assert_eq!(status, 303);
    s.server.get(&key, "/hello-world-user").await.expect(401);

    // The plan rule: no API access on a free plan, from the dashboard too.
    lps(&[
        "admin",
        "account",
        "set-plan",
        "--database-url",
        &s.db.url,
        "--account",
        &s.account.account_id.to_string(),
        "--plan",
        "free",
    ]);
    let (status, _, _) = browser
        .post(
            "/dashboard/keys/create",
            &[
                ("csrf_token", &csrf),
                ("workspace_id", &workspace),
                ("name", "Free"),
            ],
        )
        .await;
    assert_eq!(status, 303);
    let (_, _, refused) = browser.get(&settings).await;
    assert!(
        refused.contains("API access requires a Pro or Scale plan"),
        "{refused}"
    );
    // Sign out ends the session.
    let (status, _, _) = browser
        .post("/dashboard/logout", &[("csrf_token", &csrf)])
        .await;
    assert_eq!(status, 303);
    let (status, _, _) = browser.get("/dashboard").await;
    assert_eq!(status, 303);
}

#[tokio::test]
async fn an_expired_access_token_is_refused_and_its_refresh_token_still_works() {
    let s = setup_with(&["--oauth-access-token-seconds", "1"]).await;
    let mut browser = Browser::new(&s.server);
    let (client_id, tokens) = authorize(&s, &mut browser, s.second_workspace).await;
    assert_eq!(tokens["expires_in"], 1);
    let access = tokens["access_token"].as_str().unwrap();
    s.server.get(access, "/hello-world-user").await.expect(200);
    tokio::time::sleep(std::time::Duration::from_millis(1_300)).await;
    s.server.get(access, "/hello-world-user").await.expect(401);
    let renewed: Value = s
        .server
        .client
        .post(s.metadata["token_endpoint"].as_str().unwrap())
        .form(&[
            ("grant_type", "refresh_token"),
            ("refresh_token", tokens["refresh_token"].as_str().unwrap()),
            ("client_id", &client_id),
        ])
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let fresh = renewed["access_token"].as_str().unwrap();
    s.server.get(fresh, "/hello-world-user").await.expect(200);
}

#[tokio::test]
async fn an_operator_sets_a_password_from_standard_input_and_the_person_signs_in() {
    use std::io::Write;
    let db = TestDb::new();
    bootstrap(&db, &[]);
    let server = Server::serve(&db, &[]);
    let mut browser = Browser::new(&server);
    let (status, _, _) = browser
        .log_in("owner@example.com", "new password 1", "/dashboard")
        .await;
    assert_eq!(status, 401, "no password yet");
    let mut child = std::process::Command::new(BIN)
        .args([
            "admin",
            "user",
            "set-password",
            "--database-url",
            &db.url,
            "--email",
            "OWNER@example.com",
        ])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(b"new password 1\n")
        .unwrap();
    let output = child.wait_with_output().unwrap();
    assert!(output.status.success());
    assert!(String::from_utf8_lossy(&output.stdout).contains("Password set"));
    let (status, location, _) = browser
        .log_in("owner@example.com", "new password 1", "/dashboard")
        .await;
    assert_eq!((status, location.as_deref()), (303, Some("/dashboard")));
    // Too short: refused with a reason.
    let output = std::process::Command::new(BIN)
        .args([
            "admin",
            "user",
            "set-password",
            "--database-url",
            &db.url,
            "--email",
            "owner@example.com",
            "--password",
            "short",
        ])
        .output()
        .unwrap();
    assert!(!output.status.success());
    assert!(String::from_utf8_lossy(&output.stderr).contains("at least 8 characters"));
}

#[tokio::test]
async fn the_dashboard_shows_campaigns_with_their_state_and_publishes_and_unpublishes_them() {
    let s = setup().await;
    let key = &s.account.api_key;
    let (campaign, _) =
        create_campaign(&s.server, key, s.account.workspace_id, "Spring push").await;
    publish_premade(
        &s.server,
        key,
        s.account.workspace_id,
        campaign,
        "Demo Invitation",
    )
    .await;
    let mut browser = Browser::new(&s.server);
    browser
        .log_in("owner@example.com", PASSWORD, "/dashboard")
        .await;
    let (_, _, home) = browser.get("/dashboard").await;
    assert!(home.contains("Spring push"), "{home}");
    assert!(home.contains("Live · No pages yet"), "{home}");
    let page_path = format!("/dashboard/campaigns/{campaign}");
    let (_, _, page) = browser.get(&page_path).await;
    assert!(page.contains(&format!("preview-{campaign}")), "{page}");
    assert!(page.contains("<strong>Live</strong>"), "{page}");
    let csrf = hidden(&home, "csrf_token");
    let workspace = s.account.workspace_id.to_string();
    let campaign_id = campaign.to_string();
    let (status, _, _) = browser
        .post(
            "/dashboard/campaigns/unpublish",
            &[
                ("csrf_token", &csrf),
                ("workspace_id", &workspace),
                ("campaign_id", &campaign_id),
            ],
        )
        .await;
    assert_eq!(status, 303);
    let (_, _, after) = browser.get(&page_path).await;
    assert!(after.contains("Draft, not live"), "{after}");
    assert!(
        after.contains("role=\"status\""),
        "what happened is said: {after}"
    );
    let design = s
        .server
        .get(
            key,
            &format!("/pages/design?workspace_id={workspace}&campaign_id={campaign}"),
        )
        .await
        .expect(200)
        .json();
    assert_eq!(design["is_live"], false);
    browser
        .post(
            "/dashboard/campaigns/publish",
            &[
                ("csrf_token", &csrf),
                ("workspace_id", &workspace),
                ("campaign_id", &campaign_id),
            ],
        )
        .await;
    let (_, _, after) = browser.get(&page_path).await;
    assert!(after.contains("<strong>Live</strong>"), "{after}");
    // Said once: a reload shows the page without the notice.
    let (_, _, again) = browser.get(&page_path).await;
    assert!(!again.contains("role=\"status\""), "{again}");
}

#[tokio::test]
async fn failed_logins_are_rate_limited() {
    let s = setup().await;
    let mut browser = Browser::new(&s.server);
    let mut statuses = Vec::new();
    for _ in 0..12 {
        let (status, _, _) = browser
            .log_in("owner@example.com", "not the password", "/dashboard")
            .await;
        statuses.push(status);
    }
    assert_eq!(statuses[0], 401);
    assert_eq!(statuses.last(), Some(&429), "{statuses:?}");
    // Even the right password waits out the limit.
    let (status, _, page) = browser
        .log_in("owner@example.com", PASSWORD, "/dashboard")
        .await;
    assert_eq!(status, 429);
    assert!(page.contains("Too many attempts"));
}

#[tokio::test]
async fn a_client_id_metadata_document_names_the_client_on_the_consent_screen() {
    // The client's document on loopback (http is accepted only with --allow-private-network;
    // real documents are https).
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let document_url = format!("http://{}/client.json", listener.local_addr().unwrap());
    let document = json!({"client_id": document_url, "client_name": "Documented Assistant",
                          "redirect_uris": [REDIRECT]});
    let app = axum::Router::new().route(
        "/client.json",
        axum::routing::get(move || {
            let document = document.clone();
            async move { axum::Json(document) }
        }),
    );
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    let s = setup_with(&["--allow-private-network"]).await;
    assert_eq!(s.metadata["client_id_metadata_document_supported"], true);
    let mut browser = Browser::new(&s.server);
    browser
        .log_in("owner@example.com", PASSWORD, "/dashboard")
        .await;
    let challenge = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .encode(Sha256::digest(b"a verifier of the documented client"));
    let url = format!(
        "/oauth/authorize?response_type=code&client_id={}&redirect_uri={}&code_challenge={challenge}&code_challenge_method=S256",
        urlencode(&document_url),
        urlencode(REDIRECT)
    );
    let (status, _, consent) = browser.get(&url).await;
    assert_eq!(status, 200, "{consent}");
    assert!(consent.contains("Documented Assistant"), "{consent}");
    // A redirect the document does not list is refused.
    let (status, _, _) = browser
        .get(&url.replace(&urlencode(REDIRECT), &urlencode("http://127.0.0.1:1/other")))
        .await;
    assert_eq!(status, 400);
}

#[tokio::test]
async fn the_first_start_prints_a_one_time_link_to_choose_the_owners_password() {
    let db = TestDb::new();
    let server = Server::serve(&db, &[]);
    let printed = server.stdout.join("\n");
    assert!(
        printed.contains(&format!("{}/dashboard", server.http)),
        "{printed}"
    );
    let link = printed
        .split_whitespace()
        .find(|word| word.contains("/dashboard/setup?token="))
        .unwrap_or_else(|| panic!("a setup link in {printed}"))
        .to_owned();
    let path = link.trim_start_matches(&server.http).to_owned();
    let mut browser = Browser::new(&server);
    let (status, _, form) = browser.get(&path).await;
    assert_eq!(status, 200);
    let token = hidden(&form, "token");
    let setup_csrf = hidden(&form, "csrf_token");
    let (status, _, page) = browser
        .post(
            "/dashboard/setup",
            &[
                ("token", token.as_str()),
                ("csrf_token", setup_csrf.as_str()),
                ("password", "short"),
            ],
        )
        .await;
    assert_eq!(status, 422);
    assert!(page.contains("at least 8 characters"), "{page}");
    let (status, location, _) = browser
        .post(
            "/dashboard/setup",
            &[
                ("token", token.as_str()),
                ("csrf_token", setup_csrf.as_str()),
                ("password", PASSWORD),
            ],
        )
        .await;
    assert_eq!((status, location.as_deref()), (303, Some("/dashboard")));
    let (status, _, home) = browser.get("/dashboard").await;
    assert_eq!(status, 200);
    assert!(home.contains("owner@example.com"), "{home}");
    // The link works once; the password works from then on.
    let (status, _, _) = browser
        .post(
            "/dashboard/setup",
            &[
                ("token", token.as_str()),
                ("csrf_token", setup_csrf.as_str()),
                ("password", "another password"),
            ],
        )
        .await;
    assert_eq!(status, 410);
    let mut other = Browser::new(&server);
    let (status, _, _) = other
        .log_in("owner@example.com", PASSWORD, "/dashboard")
        .await;
    assert_eq!(status, 303);
}

#[tokio::test]
async fn a_changed_draft_of_a_live_campaign_is_compared_and_published_and_unpublishing_asks_first()
{
    let s = setup().await;
    let (key, ws) = (&s.account.api_key, s.account.workspace_id);
    let (campaign, pages) = live_campaign(&s.server, key, ws, "Changing", 1).await;
    let page = pages[0].1.clone();
    let before = s.server.send(s.server.client.get(&page)).await.expect(200);
    assert!(!before.text.contains("A brand new headline"));
    let ids = json!({"workspace_id": ws, "campaign_id": campaign});
    let mut edit = ids.clone();
    edit["html"] = json!("<h1>A brand new headline for {{ first_name }}</h1>");
    edit["css"] = json!("");
    s.server
        .post(key, "/pages/update-design", edit)
        .await
        .expect(200);

    let mut browser = Browser::new(&s.server);
    browser
        .log_in("owner@example.com", PASSWORD, "/dashboard")
        .await;
    let page_path = format!("/dashboard/campaigns/{campaign}");
    let (_, _, shown) = browser.get(&page_path).await;
    assert!(shown.contains("Publish changes"), "{shown}");
    let changes = format!("{page_path}/changes?workspace_id={ws}");
    assert!(shown.contains(&changes.replace('&', "&amp;")), "{shown}");
    let (status, _, compared) = browser.get(&changes).await;
    assert_eq!(status, 200, "{compared}");
    assert!(
        compared.contains("published=1"),
        "the live page: {compared}"
    );
    let (_, _, live) = browser
        .get(&format!(
            "{page_path}/preview?workspace_id={ws}&published=1"
        ))
        .await;
    let (_, _, draft) = browser
        .get(&format!("{page_path}/preview?workspace_id={ws}"))
        .await;
    assert!(!live.contains("A brand new headline"), "{live}");
    assert!(draft.contains("A brand new headline"), "{draft}");

    let csrf = hidden(&compared, "csrf_token");
    let (ws_text, id_text) = (ws.to_string(), campaign.to_string());
    let fields = [
        ("csrf_token", csrf.as_str()),
        ("workspace_id", ws_text.as_str()),
        ("campaign_id", id_text.as_str()),
    ];
    let (status, _, _) = browser.post("/dashboard/campaigns/publish", &fields).await;
    assert_eq!(status, 303);
    let after = s.server.send(s.server.client.get(&page)).await.expect(200);
    assert!(
        after.text.contains("A brand new headline"),
        "{}",
        after.text
    );
    let (_, _, shown) = browser.get(&page_path).await;
    assert!(!shown.contains("Publish changes"), "nothing left: {shown}");

    // Unpublishing is a link to a question that says what prospects will see.
    let confirm = format!("{page_path}/unpublish?workspace_id={ws}");
    assert!(shown.contains(&confirm.replace('&', "&amp;")), "{shown}");
    let (status, _, asked) = browser.get(&confirm).await;
    assert_eq!(status, 200);
    assert!(asked.contains("not live yet"), "{asked}");
    assert!(
        asked.contains("action=\"&#x2f;dashboard&#x2f;campaigns&#x2f;unpublish\""),
        "{asked}"
    );
    let still = s.server.send(s.server.client.get(&page)).await.expect(200);
    assert!(
        still.text.contains("A brand new headline"),
        "asking changed nothing"
    );
}

#[tokio::test]
async fn the_dashboard_edits_a_campaigns_name_and_call_to_action_after_creation() {
    let s = setup().await;
    let (key, ws) = (&s.account.api_key, s.account.workspace_id);
    let (campaign, _) = create_campaign(&s.server, key, ws, "Old name").await;
    let mut browser = Browser::new(&s.server);
    browser
        .log_in("owner@example.com", PASSWORD, "/dashboard")
        .await;
    let page_path = format!("/dashboard/campaigns/{campaign}");
    let (_, _, shown) = browser.get(&page_path).await;
    assert!(shown.contains("id=\"campaign-name\""), "{shown}");
    let csrf = hidden(&shown, "csrf_token");
    let ws_text = ws.to_string();
    let branding = hidden_select_first(&shown);
    let (status, location, _) = browser
        .post(
            &format!("{page_path}/settings"),
            &[
                ("csrf_token", csrf.as_str()),
                ("workspace_id", ws_text.as_str()),
                ("name", "New name"),
                ("cta_url", "https://example.com/meet"),
                ("branding_id", branding.as_str()),
            ],
        )
        .await;
    assert_eq!(
        (status, location.as_deref()),
        (303, Some(page_path.as_str()))
    );
    let (_, _, after) = browser.get(&page_path).await;
    assert!(after.contains("<h1>New name</h1>"), "{after}");
    assert!(
        after.contains("https:&#x2f;&#x2f;example.com&#x2f;meet"),
        "{after}"
    );
}

/// The value of the first option of the campaign's branding select.
fn hidden_select_first(page: &str) -> String {
    let select = page
        .split("name=\"branding_id\"")
        .nth(1)
        .unwrap_or_default();
    select
        .split("value=\"")
        .nth(1)
        .and_then(|rest| rest.split('"').next())
        .unwrap_or_default()
        .to_owned()
}

#[tokio::test]
async fn the_dashboard_lists_an_automated_form_submission_with_why_it_is_not_counted() {
    let s = setup().await;
    let (key, ws) = (&s.account.api_key, s.account.workspace_id);
    let (campaign, page) = crate::engagement::live_form_page(&s.server, key, ws, "Forms").await;
    let headless = DESKTOP_BROWSER.replace("Chrome/", "HeadlessChrome/");
    crate::engagement::submit_from(&s.server, &page, &[("email", "bot@example.com")], &headless)
        .await
        .expect(200);
    let mut browser = Browser::new(&s.server);
    browser
        .log_in("owner@example.com", PASSWORD, "/dashboard")
        .await;
    let (_, _, shown) = browser
        .get(&format!("/dashboard/campaigns/{campaign}"))
        .await;
    assert!(
        shown.contains("bot@example.com"),
        "kept and listed: {shown}"
    );
    assert!(
        shown.contains("not counted</strong>: headless browser (HeadlessChrome)"),
        "{shown}"
    );
}
