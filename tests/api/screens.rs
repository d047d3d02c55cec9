//! Every screen a person can open, opened with its real context. Templates render with
//! strict undefined variables (`edge/http/html_page.rs`), so a template naming a value its
//! handler does not give fails here as a 500 instead of showing a blank to a person. The
//! design-run screen is opened by the tests that start runs (`tests/api/generate.rs`), the
//! import's mapping and progress screens by those that import (`tests/api/dashboard_import.rs`).

use serde_json::json;

use crate::common::{DESKTOP_BROWSER, live_campaign, send_person_beacon};
use crate::oauth::{Browser, PASSWORD, setup};

/// Asserts a screen answered 200 with a whole page, every table of it in the wrapper that
/// scrolls sideways on a phone instead of squashing it.
fn shown(path: &str, (status, _, page): (u16, Option<String>, String)) -> String {
    assert_eq!(status, 200, "{path}: {page}");
    assert!(page.contains("</html>"), "{path}: {page}");
    assert!(!page.contains("could not be shown"), "{path}: {page}");
    let tables = page.matches("<table").count();
    let wrapped = page.matches("tabindex=\"0\"><table>").count();
    assert_eq!(tables, wrapped, "{path}: a table outside `.wide`: {page}");
    let wrappers = page
        .matches("<div class=\"wide\" role=\"region\" aria-label=")
        .count();
    assert_eq!(tables, wrappers, "{path}: {page}");
    page
}

/// The first link on `page` that starts with `prefix`, as the browser follows it.
fn link_starting(page: &str, prefix: &str) -> String {
    let start = page
        .find(&format!("href=\"{prefix}"))
        .unwrap_or_else(|| panic!("a link to {prefix}: {page}"))
        + "href=\"".len();
    let end = start + page[start..].find('"').unwrap();
    crate::dashboard::unescape(&page[start..end])
}

#[tokio::test]
async fn every_screen_renders_with_what_its_handler_gives() {
    let s = setup().await;
    let key = &s.account.api_key;
    let ws = s.account.workspace_id;

    // Signed out: the sign-in screen, and the setup screen (a link is checked when it is
    // submitted).
    let mut browser = Browser::new(&s.server);
    shown("/dashboard/login", browser.get("/dashboard/login").await);
    shown(
        "/dashboard/setup",
        browser.get("/dashboard/setup?token=nothing").await,
    );
    shown("/dashboard/forgot", browser.get("/dashboard/forgot").await);
    // An email's unsubscribe link, before its key is checked (that takes the button).
    shown(
        "/dashboard/unsubscribe",
        browser
            .get("/dashboard/unsubscribe?channel=1&email=ada%40example.com&key=00")
            .await,
    );

    // A workspace with a live campaign, a lead who engaged, a branding and a key.
    let (campaign, pages) = live_campaign(&s.server, key, ws, "Screens", 2).await;
    let (lead, page_url) = pages[0].clone();
    send_person_beacon(
        &s.server,
        &page_url,
        json!({"type": "view"}),
        DESKTOP_BROWSER,
        "screens-visitor",
    )
    .await;
    s.server
        .post(
            key,
            "/brandings/create",
            json!({"workspace_id": ws, "name": "Northwind", "primary_color": "#123456"}),
        )
        .await
        .expect(200);

    browser
        .log_in("owner@example.com", PASSWORD, "/dashboard")
        .await;
    for path in [
        "/dashboard".to_owned(),
        format!("/dashboard?workspace_id={ws}"),
        "/dashboard/leads".to_owned(),
        format!("/dashboard/leads/import?workspace_id={ws}"),
        format!("/dashboard/leads?workspace_id={ws}&hot_only=true&sort=score"),
        format!("/dashboard/leads/{lead}?workspace_id={ws}"),
        format!("/dashboard/campaigns/{campaign}?workspace_id={ws}"),
        format!("/dashboard/campaigns/{campaign}/templates?workspace_id={ws}"),
        format!("/dashboard/campaigns/{campaign}/design?workspace_id={ws}"),
        "/dashboard/callbacks".to_owned(),
    ] {
        shown(&path, browser.get(&path).await);
    }

    // The settings, and the screens its links lead to.
    let settings = shown(
        "/dashboard/settings",
        browser.get("/dashboard/settings").await,
    );
    for prefix in [
        "/dashboard/brandings/",
        "/dashboard/keys/delete?",
        "/dashboard/domains?",
    ] {
        let path = link_starting(&settings, prefix);
        shown(&path, browser.get(&path).await);
    }

    // The draft preview is a lead's page (no layout of the dashboard's), never a screen error.
    let (status, _, preview) = browser
        .get(&format!(
            "/dashboard/campaigns/{campaign}/preview?workspace_id={ws}"
        ))
        .await;
    assert_eq!(status, 200, "{preview}");

    // A screen that is not there is a whole page too.
    let (status, _, missing) = browser
        .get(&format!("/dashboard/leads/999999?workspace_id={ws}"))
        .await;
    assert_eq!(status, 404, "{missing}");
    assert!(missing.contains("</html>"), "{missing}");
}
