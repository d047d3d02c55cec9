//! The CSV import in a real headless Chromium (see `browser.rs`): a member signs in, uploads a
//! HubSpot-style export of 3,000 rows, accepts the recognised mapping, watches the progress
//! follow the job to its end (no reload by hand), downloads the rejected rows (saved by the
//! browser, read with a CSV parser) and sees the leads with their page links; axe-core checks
//! every page on the way.

use std::time::{Duration, Instant};

use fantoccini::Locator;

use crate::browser::{axe_source, click, downloading_browser, driver, fill, look, visit};
use crate::browser_leads::downloaded;
use crate::common::*;
use crate::dashboard_import::signed_in_member;

#[tokio::test]
async fn a_member_imports_a_hubspot_export_in_a_real_browser_and_every_page_passes_axe() {
    let Some(driver) = driver("csv import").await else {
        return;
    };
    let axe = axe_source();
    let s = crate::oauth::setup().await;
    let (server, key, ws) = (&s.server, &s.account.api_key, s.account.workspace_id);
    let (campaign, _) = live_campaign(server, key, ws, "Imported", 1).await;
    signed_in_member(&s).await;

    // A HubSpot-style export: 3,000 people, two of whom are not leads.
    let files = tempfile::tempdir().unwrap();
    let file = files.path().join("hubspot-contacts.csv");
    let mut csv =
        String::from("Record ID,First Name,Last Name,Email Address,Company Name,Job Title\n");
    for i in 0..3_000 {
        let email = match i {
            10 => "not-an-email".to_owned(),
            20 => String::new(),
            _ => format!("person{i}@northwind.example"),
        };
        csv.push_str(&format!("{i},Person {i},Smith,{email},Northwind,Buyer\n"));
    }
    std::fs::write(&file, csv).unwrap();

    let downloads = tempfile::tempdir().unwrap();
    let browser = downloading_browser(&driver, downloads.path()).await;
    browser.set_window_size(1280, 900).await.unwrap();
    visit(&browser, server, &axe, "/dashboard/login", "import-login").await;
    fill(&browser, "#email", "rep@example.com").await;
    fill(&browser, "#password", "member password 1").await;
    click(&browser, "//button[.='Sign in']").await;

    let leads = visit(&browser, server, &axe, "/dashboard/leads", "import-leads").await;
    assert!(leads.contains("Import a CSV file"), "{leads}");
    click(&browser, "//a[.='Import a CSV file']").await;
    look(&browser, &axe, "import-upload").await;
    browser
        .find(Locator::Css("#campaign"))
        .await
        .unwrap()
        .select_by_value(&campaign.to_string())
        .await
        .unwrap();
    browser
        .find(Locator::Css("#file"))
        .await
        .unwrap()
        .send_keys(file.to_str().unwrap())
        .await
        .unwrap();
    click(&browser, "//button[.='Upload and check the columns']").await;

    // The recognised mapping, accepted as it is.
    let mapping = look(&browser, &axe, "import-mapping").await;
    assert!(mapping.contains("The file has 3000 rows"), "{mapping}");
    assert!(mapping.contains("person0@northwind.example"), "{mapping}");
    let email_column = browser.find(Locator::Css("#column_3")).await.unwrap();
    assert_eq!(
        email_column.prop("value").await.unwrap().as_deref(),
        Some("email")
    );
    click(&browser, "//button[.='Import 3000 rows']").await;

    // The progress follows the job to its end without a reload by hand.
    let deadline = Instant::now() + Duration::from_secs(60);
    let done = loop {
        // The page reloads itself into the summary: an element found just before the reload
        // is stale by the time it is read, and is looked for again.
        let text = match browser.find(Locator::Css("main")).await {
            Ok(main) => main.text().await.unwrap_or_default(),
            Err(_) => String::new(),
        };
        if text.contains("The import is done.") {
            break look(&browser, &axe, "import-done").await;
        }
        assert!(
            Instant::now() < deadline,
            "the progress never reached the end: {text}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    assert!(
        done.contains("New leads\n2998") || done.contains("New leads 2998"),
        "{done}"
    );
    assert_eq!(lead_total(server, key, ws).await, 1 + 2_998);

    // The rejected rows, as the browser saves them.
    browser
        .find(Locator::LinkText("Download the rejected rows"))
        .await
        .unwrap()
        .click()
        .await
        .unwrap();
    let rejected = downloaded(downloads.path(), "rejected-rows.csv").await;
    let mut reader = csv::Reader::from_reader(rejected.as_bytes());
    let header: Vec<String> = reader.headers().unwrap().iter().map(String::from).collect();
    assert_eq!(
        header,
        [
            "Record ID",
            "First Name",
            "Last Name",
            "Email Address",
            "Company Name",
            "Job Title",
            "rejected_line",
            "rejected_reason"
        ]
    );
    let rows: Vec<csv::StringRecord> = reader.records().map(Result::unwrap).collect();
    assert_eq!(rows.len(), 2, "{rejected}");
    assert_eq!((&rows[0][0], &rows[0][6]), ("10", "12"));
    assert_eq!((&rows[1][0], &rows[1][6]), ("20", "22"));
    assert!(!rows[1][7].is_empty());

    // The leads, with their pages.
    click(&browser, "//a[.='See the leads and their pages']").await;
    let list = look(&browser, &axe, "import-leads-listed").await;
    assert!(list.contains("2999 leads"), "{list}");
    assert!(list.contains("Person 2999"), "{list}");
    let page_link = browser
        .find(Locator::XPath("//a[starts-with(., 'Open')]"))
        .await
        .unwrap()
        .attr("href")
        .await
        .unwrap()
        .unwrap();
    assert!(page_link.contains("/p/"), "{page_link}");
}
