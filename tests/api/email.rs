//! Email (issue 48): email channels to teammates, invitations and "Forgot your password?",
//! through a real SMTP server on loopback (Python's `aiosmtpd`, installed by `.ci/run`), each
//! message read back with Python's own `email` parser. Skipped with a notice where `aiosmtpd`
//! is missing, unless `LPS_REQUIRE_SMTP` is set, as CI sets it.

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use serde_json::{Value, json};

use crate::common::*;
use crate::engagement::submit;
use crate::oauth::{Browser, PASSWORD, hidden, setup, setup_with};

/// An SMTP server on loopback keeping what it receives in a Maildir.
struct Smtp {
    child: Child,
    dir: tempfile::TempDir,
    url: String,
}

impl Drop for Smtp {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Smtp {
    /// Started and listening, or `None` (with a notice) where `aiosmtpd` is not installed.
    fn start() -> Option<Self> {
        Self::start_on(free_port())
    }

    /// Started and listening on `port`.
    fn start_on(port: u16) -> Option<Self> {
        let installed = Command::new("python3")
            .args(["-c", "import aiosmtpd"])
            .status()
            .is_ok_and(|s| s.success());
        if !installed {
            assert!(
                std::env::var_os("LPS_REQUIRE_SMTP").is_none(),
                "aiosmtpd is required (pip install aiosmtpd)"
            );
            eprintln!("skipped: pip install aiosmtpd to test email");
            return None;
        }
        let dir = tempfile::tempdir().unwrap();
        let maildir = dir.path().join("mail");
        let mut child = Command::new("python3")
            .args(["-m", "aiosmtpd", "-n", "-l"])
            .arg(format!("127.0.0.1:{port}"))
            .args(["-c", "aiosmtpd.handlers.Mailbox"])
            .arg(&maildir)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        for _ in 0..100 {
            if std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
                return Some(Self {
                    child,
                    dir,
                    url: format!("smtp://127.0.0.1:{port}"),
                });
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        let _ = child.kill();
        let _ = child.wait();
        panic!("aiosmtpd did not start on {port}");
    }

    fn maildir(&self) -> PathBuf {
        self.dir.path().join("mail")
    }

    /// Every message received, parsed by Python's `email` package: `to`, `subject`, the two
    /// `List-Unsubscribe` headers, and the plain-text and HTML parts decoded.
    fn mails(&self) -> Vec<Value> {
        const READ: &str = r#"
import json, mailbox, sys
out = []
for message in mailbox.Maildir(sys.argv[1], factory=None, create=False):
    parts = {}
    for part in message.walk():
        kind = part.get_content_type()
        if kind in ("text/plain", "text/html"):
            parts[kind] = part.get_payload(decode=True).decode(part.get_content_charset() or "utf-8")
    out.append({
        "to": message["To"], "from": message["From"], "subject": str(message["Subject"]),
        "list_unsubscribe": message["List-Unsubscribe"],
        "list_unsubscribe_post": message["List-Unsubscribe-Post"],
        "multipart": message.get_content_type(),
        "text": parts.get("text/plain"), "html": parts.get("text/html"),
    })
print(json.dumps(out))
"#;
        if !self.maildir().exists() {
            return Vec::new();
        }
        let output = Command::new("python3")
            .args(["-c", READ])
            .arg(self.maildir())
            .output()
            .unwrap();
        assert!(
            output.status.success(),
            "{}",
            String::from_utf8_lossy(&output.stderr)
        );
        serde_json::from_slice(&output.stdout).unwrap()
    }

    /// The messages to `to`, once there are at least `n` (within 20 s).
    async fn wait_for(&self, to: &str, n: usize) -> Vec<Value> {
        for _ in 0..200 {
            let mails = self.to(to);
            if mails.len() >= n {
                return mails;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        panic!("{n} messages to {to}: {:#?}", self.mails());
    }

    fn to(&self, to: &str) -> Vec<Value> {
        self.mails()
            .into_iter()
            .filter(|m| m["to"].as_str().is_some_and(|t| t.contains(to)))
            .collect()
    }
}

/// The first address in `text` that starts with `prefix`, up to whitespace or a quote.
fn link(text: &str, prefix: &str) -> String {
    let start = text
        .find(prefix)
        .unwrap_or_else(|| panic!("{prefix} in {text}"));
    text[start..]
        .split(|c: char| c.is_whitespace() || c == '"' || c == '<' || c == '>')
        .next()
        .unwrap()
        .to_owned()
}

#[tokio::test]
async fn an_email_channel_reaches_teammates_only_and_each_can_unsubscribe_in_one_click() {
    let Some(smtp) = Smtp::start() else { return };
    let s = setup_with(&[
        "--smtp-url",
        &smtp.url,
        "--smtp-from",
        "lps <lps@example.com>",
        "--allow-private-network",
    ])
    .await;
    let (key, ws) = (&s.account.api_key, s.account.workspace_id);

    // Strangers' addresses, a url, or no address at all are refused, each naming its field.
    for (body, field) in [
        (
            json!({"workspace_id": ws, "kind": "email", "emails": ["stranger@example.net"]}),
            "emails",
        ),
        (
            json!({"workspace_id": ws, "kind": "email", "emails": ["owner@example.com"],
                   "url": "https://example.com/hook"}),
            "url",
        ),
        (json!({"workspace_id": ws, "kind": "email"}), "emails"),
        (
            json!({"workspace_id": ws, "kind": "email", "emails": ["not an address"]}),
            "emails",
        ),
    ] {
        let refused = s
            .server
            .post(key, "/notifications/channels/create", body.clone())
            .await
            .expect(422)
            .json();
        assert!(
            refused["errors"].get(field).is_some(),
            "{body} -> {refused}"
        );
    }

    let made: Value = s
        .server
        .post(
            key,
            "/notifications/channels/create",
            json!({"workspace_id": ws, "kind": "email", "emails": ["Owner@Example.com"]}),
        )
        .await
        .expect(200)
        .json();
    assert_eq!(made["kind"], "email");
    assert_eq!(made["emails"], json!(["owner@example.com"]));
    assert_eq!(made["url"], "mailto:owner@example.com");
    assert_eq!(made["events"], json!(["lead.hot", "lead.form_submitted"]));
    let channel = made["channel_id"].as_i64().unwrap();

    // A test message: both parts, and one-click unsubscription (RFC 8058).
    s.server
        .post(
            key,
            "/notifications/channels/test",
            json!({"workspace_id": ws, "channel_id": channel}),
        )
        .await
        .expect(200);
    let mails = smtp.wait_for("owner@example.com", 1).await;
    let test = &mails[0];
    assert_eq!(test["from"], "lps <lps@example.com>");
    assert_eq!(test["multipart"], "multipart/alternative");
    assert!(
        test["subject"]
            .as_str()
            .unwrap()
            .contains("lps will post here"),
        "{test}"
    );
    assert!(
        test["text"].as_str().unwrap().contains("/dashboard"),
        "{test}"
    );
    assert!(test["html"].as_str().unwrap().contains("</html>"), "{test}");
    assert_eq!(test["list_unsubscribe_post"], "List-Unsubscribe=One-Click");
    let unsubscribe = test["list_unsubscribe"]
        .as_str()
        .unwrap()
        .trim_matches(|c| c == '<' || c == '>')
        .to_owned();
    assert!(
        unsubscribe.contains("/dashboard/unsubscribe?"),
        "{unsubscribe}"
    );

    // A form on a lead's page: an email saying who, escaped in the HTML part.
    let (_, pages) = live_campaign_with(
        &s.server,
        key,
        ws,
        "Autumn",
        "Demo Invitation",
        vec![json!({"values": {"email": "ada@example.com",
            "first_name": "<b>Ada</b>", "company_name": "Engines & Co"}})],
    )
    .await;
    let (lead, page) = &pages[0];
    submit(&s.server, page, &[("email", "ada@example.com")])
        .await
        .expect(200);
    let mails = smtp.wait_for("owner@example.com", 2).await;
    let form = mails
        .iter()
        .find(|m| {
            m["subject"]
                .as_str()
                .unwrap()
                .contains("submitted the form")
        })
        .unwrap_or_else(|| panic!("{mails:#?}"));
    assert!(
        form["subject"].as_str().unwrap().contains("<b>Ada</b>"),
        "{form}"
    );
    let html = form["html"].as_str().unwrap();
    // For looking at: the message as received, when asked (the docs' screenshot).
    if let Some(dir) = std::env::var_os("LPS_EMAIL_SAMPLES_DIR") {
        std::fs::write(PathBuf::from(dir).join("email-alert.html"), html).unwrap();
    }
    assert!(html.contains("&lt;b&gt;Ada"), "{html}");
    assert!(!html.contains("<b>Ada"), "{html}");
    assert!(html.contains("Engines &amp; Co"), "{html}");
    assert!(
        form["text"]
            .as_str()
            .unwrap()
            .contains(&format!("/dashboard/leads/{lead}")),
        "{form}"
    );
    // It is in the delivery log, as every channel message is.
    let deliveries: Value = s
        .server
        .get(key, &format!("/callbacks/deliveries?workspace_id={ws}"))
        .await
        .expect(200)
        .json();
    assert!(
        deliveries.to_string().contains("mailto:owner@example.com"),
        "{deliveries}"
    );

    // A link scanner following the link changes nothing; a forged key is refused.
    let plain = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    let asked = plain.get(&unsubscribe).send().await.unwrap();
    assert_eq!(asked.status(), 200);
    assert!(asked.text().await.unwrap().contains("Stop these emails"));
    let forged = unsubscribe.replace("key=", "key=00");
    let refused = plain
        .post(&forged)
        .header("content-type", "application/x-www-form-urlencoded")
        .body("List-Unsubscribe=One-Click")
        .send()
        .await
        .unwrap();
    assert_eq!(refused.status(), 404);
    let listed: Value = s
        .server
        .get(
            key,
            &format!("/notifications/channels/get-list?workspace_id={ws}"),
        )
        .await
        .expect(200)
        .json();
    assert_eq!(
        listed["channels"][0]["emails"],
        json!(["owner@example.com"])
    );

    // The mail app's one click (a POST from elsewhere, no cookie, no origin of ours).
    let done = plain
        .post(&unsubscribe)
        .header("content-type", "application/x-www-form-urlencoded")
        .header("origin", "https://mail.example")
        .body("List-Unsubscribe=One-Click")
        .send()
        .await
        .unwrap();
    assert_eq!(done.status(), 200);
    assert!(done.text().await.unwrap().contains("gets no more emails"));
    let listed: Value = s
        .server
        .get(
            key,
            &format!("/notifications/channels/get-list?workspace_id={ws}"),
        )
        .await
        .expect(200)
        .json();
    assert_eq!(listed["channels"][0]["emails"], json!([]));
    // Nothing more reaches them.
    submit(&s.server, page, &[("email", "ada@example.com")])
        .await
        .expect(200);
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert_eq!(smtp.to("owner@example.com").len(), 2);
}

#[tokio::test]
async fn invitations_and_password_resets_arrive_by_email() {
    let Some(smtp) = Smtp::start() else { return };
    let s = setup_with(&[
        "--smtp-url",
        &smtp.url,
        "--smtp-from",
        "lps <lps@example.com>",
    ])
    .await;
    let mut owner = Browser::new(&s.server);
    owner
        .log_in("owner@example.com", PASSWORD, "/dashboard")
        .await;

    // An invitation: emailed, not shown.
    let (_, _, settings) = owner.get("/dashboard/settings").await;
    let csrf = hidden(&settings, "csrf_token");
    let (status, location, _) = owner
        .post(
            "/dashboard/teammates/invite",
            &[
                ("csrf_token", csrf.as_str()),
                ("email", "bob@example.com"),
                ("role", "member"),
            ],
        )
        .await;
    assert_eq!(status, 303);
    let (_, _, shown) = owner.get(location.as_deref().unwrap()).await;
    assert!(shown.contains("they were emailed a link"), "{shown}");
    assert!(!shown.contains("/dashboard/setup?token="), "{shown}");
    let invitation = &smtp.wait_for("bob@example.com", 1).await[0];
    assert!(
        invitation["subject"]
            .as_str()
            .unwrap()
            .contains("invited you to lps"),
        "{invitation}"
    );
    assert!(invitation["list_unsubscribe"].is_null(), "{invitation}");
    let setup = link(invitation["text"].as_str().unwrap(), &s.server.http);
    let path = setup.strip_prefix(&s.server.http).unwrap().to_owned();
    let mut bob = Browser::new(&s.server);
    let (status, _, form) = bob.get(&path).await;
    assert_eq!(status, 200, "{form}");
    let (status, location, _) = bob
        .post(
            "/dashboard/setup",
            &[
                ("token", hidden(&form, "token").as_str()),
                ("csrf_token", hidden(&form, "csrf_token").as_str()),
                ("password", "bob's own password"),
            ],
        )
        .await;
    assert_eq!((status, location.as_deref()), (303, Some("/dashboard")));

    // "Forgot your password?" on the sign-in page; the same answer for anyone's address.
    let mut forgetful = Browser::new(&s.server);
    let (_, _, login) = forgetful.get("/dashboard/login").await;
    assert!(login.contains("href=\"/dashboard/forgot\""), "{login}");
    let mut answers = Vec::new();
    for email in ["bob@example.com", "nobody@example.com"] {
        let (status, _, page) = forgetful
            .post("/dashboard/forgot", &[("email", email)])
            .await;
        assert_eq!(status, 200, "{page}");
        let start = page.find("<main").unwrap_or(0);
        answers.push(page[start..].to_owned());
    }
    assert_eq!(answers[0], answers[1]);
    let mails = smtp.wait_for("bob@example.com", 2).await;
    let reset = mails
        .iter()
        .find(|m| m["subject"] == "Choose a new lps password")
        .unwrap_or_else(|| panic!("{mails:#?}"));
    // Asked again at once: no second email (one per five minutes).
    forgetful
        .post("/dashboard/forgot", &[("email", "bob@example.com")])
        .await;
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert_eq!(smtp.to("bob@example.com").len(), 2);
    assert!(smtp.to("nobody@example.com").is_empty());

    // The link chooses a new password once and ends Bob's other sessions.
    let path = link(reset["text"].as_str().unwrap(), &s.server.http)
        .strip_prefix(&s.server.http)
        .unwrap()
        .to_owned();
    let (status, _, form) = forgetful.get(&path).await;
    assert_eq!(status, 200);
    let (status, _, _) = forgetful
        .post(
            "/dashboard/setup",
            &[
                ("token", hidden(&form, "token").as_str()),
                ("csrf_token", hidden(&form, "csrf_token").as_str()),
                ("password", "a brand new password"),
            ],
        )
        .await;
    assert_eq!(status, 303);
    let (status, location, _) = bob.get("/dashboard").await;
    assert_eq!(status, 303, "{location:?}");
    let (status, _, _) = Browser::new(&s.server)
        .log_in("bob@example.com", "bob's own password", "/dashboard")
        .await;
    assert_eq!(status, 401);
    let (status, _, _) = Browser::new(&s.server)
        .log_in("bob@example.com", "a brand new password", "/dashboard")
        .await;
    assert_eq!(status, 303);
    let (status, _, used) = Browser::new(&s.server).get(&path).await;
    assert_eq!(status, 200);
    let (status, _, _) = Browser::new(&s.server)
        .post(
            "/dashboard/setup",
            &[
                ("token", hidden(&used, "token").as_str()),
                ("csrf_token", "x"),
                ("password", "yet another password"),
            ],
        )
        .await;
    assert_ne!(status, 303, "a used link chooses nothing");

    // A stranger asking again and again: ten a minute from one address, then 429 (this
    // browser asked three times above).
    let mut statuses = Vec::new();
    for _ in 0..8 {
        let (status, _, _) = forgetful
            .post("/dashboard/forgot", &[("email", "nobody@example.com")])
            .await;
        statuses.push(status);
    }
    assert_eq!(statuses, [200, 200, 200, 200, 200, 200, 200, 429]);
    assert!(smtp.to("nobody@example.com").is_empty());
}

/// The SMTP server down: a channel's messages wait (retried with backoff, the channel shown as
/// failing, then paused, nothing else held up) and all arrive once it is back.
#[tokio::test]
async fn email_waits_for_a_server_that_is_down_and_arrives_when_it_is_back() {
    // Whether aiosmtpd is there decides the test before anything is started.
    if Smtp::start().is_none() {
        return;
    }
    let port = free_port();
    let s = setup_with(&[
        "--smtp-url",
        &format!("smtp://127.0.0.1:{port}"),
        "--smtp-from",
        "lps <lps@example.com>",
        "--callback-unhealthy-after",
        "2",
        "--callback-pause-seconds",
        "1",
    ])
    .await;
    let (key, ws) = (&s.account.api_key, s.account.workspace_id);
    let made: Value = s
        .server
        .post(
            key,
            "/notifications/channels/create",
            json!({"workspace_id": ws, "kind": "email", "emails": ["owner@example.com"]}),
        )
        .await
        .expect(200)
        .json();
    let channel = made["channel_id"].as_i64().unwrap();
    let delivery = s
        .server
        .post(
            key,
            "/notifications/channels/test",
            json!({"workspace_id": ws, "channel_id": channel}),
        )
        .await
        .expect(200)
        .json()["delivery_id"]
        .as_i64()
        .unwrap();
    // Nothing listens: the attempts fail, and Settings' list says so with why.
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    loop {
        let listed: Value = s
            .server
            .get(
                key,
                &format!("/notifications/channels/get-list?workspace_id={ws}"),
            )
            .await
            .expect(200)
            .json();
        let state = listed["channels"][0]["state"].as_str().unwrap().to_owned();
        if state != "healthy" {
            let why = listed["channels"][0]["last_error"]
                .as_str()
                .unwrap_or_default();
            assert!(why.contains("SMTP"), "{listed}");
            break;
        }
        assert!(std::time::Instant::now() < deadline, "{listed}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    // The server comes up on that port: the message arrives by itself, once.
    let Some(smtp) = Smtp::start_on(port) else {
        return;
    };
    let mails = smtp.wait_for("owner@example.com", 1).await;
    assert!(
        mails[0]["subject"]
            .as_str()
            .unwrap()
            .contains("lps will post here"),
        "{mails:?}"
    );
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    loop {
        let log: Value = s
            .server
            .get(key, &format!("/callbacks/deliveries?workspace_id={ws}"))
            .await
            .expect(200)
            .json();
        let entry = log["deliveries"]
            .as_array()
            .and_then(|all| all.iter().find(|d| d["id"] == delivery).cloned())
            .unwrap_or_else(|| panic!("{log}"));
        if entry["status"] == "delivered" {
            assert!(entry["attempts"].as_i64().unwrap() >= 2, "{entry}");
            break;
        }
        assert!(std::time::Instant::now() < deadline, "{entry}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert_eq!(smtp.to("owner@example.com").len(), 1);
}

#[tokio::test]
async fn without_smtp_email_is_refused_plainly() {
    let s = setup().await;
    let (key, ws) = (&s.account.api_key, s.account.workspace_id);
    let refused = s
        .server
        .post(
            key,
            "/notifications/channels/create",
            json!({"workspace_id": ws, "kind": "email", "emails": ["owner@example.com"]}),
        )
        .await
        .expect(422)
        .json();
    assert!(
        refused["errors"]["kind"][0]
            .as_str()
            .unwrap()
            .contains("--smtp-url"),
        "{refused}"
    );
    let (status, _, page) = Browser::new(&s.server)
        .post("/dashboard/forgot", &[("email", "owner@example.com")])
        .await;
    assert_eq!(status, 409, "{page}");
    assert!(page.contains("sends no email"), "{page}");
    // Settings offers no email channel.
    let mut owner = Browser::new(&s.server);
    owner
        .log_in("owner@example.com", PASSWORD, "/dashboard")
        .await;
    let (_, _, settings) = owner.get("/dashboard/settings").await;
    assert!(!settings.contains("value=\"email\""), "{settings}");
}
