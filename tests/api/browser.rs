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
struct Driver {
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
async fn driver(test: &str) -> Option<Driver> {
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
    let child = Command::new(path)
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
    let mut args = vec![
        "--headless=new".to_owned(),
        "--no-sandbox".to_owned(),
        "--disable-dev-shm-usage".to_owned(),
        "--disable-gpu".to_owned(),
        // Short, so the page is taller than the window and reaching its bottom takes a scroll.
        "--window-size=1024,400".to_owned(),
    ];
    let mut options = json!({});
    if as_person {
        args.push(format!("--user-agent={DESKTOP_BROWSER}"));
        args.push("--disable-blink-features=AutomationControlled".to_owned());
        options["excludeSwitches"] = json!(["enable-automation"]);
    }
    options["args"] = json!(args);
    if let Ok(binary) = std::env::var("LPS_CHROMIUM") {
        options["binary"] = json!(binary);
    }
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
    let server = Server::serve(&db, &[]);
    let (key, ws) = (&account.api_key, account.workspace_id);
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
