//! The leads list in a real headless Chromium (see `browser.rs`): ticking leads and adding
//! them to an audience, downloading the CSV (saved by the browser, read with a CSV parser),
//! erasing once the confirmation says yes, adding one lead from a campaign's page; axe-core
//! checks every page on the way.

use std::collections::BTreeSet;
use std::path::Path;
use std::time::{Duration, Instant};

use fantoccini::Locator;
use serde_json::json;

use crate::browser::{axe_source, click, downloading_browser, driver, fill, look, visit};
use crate::common::*;

/// The file the browser saved as `name` in `dir`, once the download has finished.
pub(crate) async fn downloaded(dir: &Path, name: &str) -> String {
    let path = dir.join(name);
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let partial = std::fs::read_dir(dir)
            .unwrap()
            .filter_map(Result::ok)
            .any(|entry| entry.file_name().to_string_lossy().ends_with(".crdownload"));
        if path.exists() && !partial {
            return std::fs::read_to_string(&path).unwrap();
        }
        assert!(
            Instant::now() < deadline,
            "no {name} downloaded: {:?}",
            std::fs::read_dir(dir)
                .unwrap()
                .filter_map(Result::ok)
                .map(|e| e.file_name())
                .collect::<Vec<_>>()
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test]
async fn a_person_works_the_leads_list_in_a_real_browser_and_every_page_passes_axe() {
    let Some(driver) = driver("leads list").await else {
        return;
    };
    let axe = axe_source();
    let s = crate::oauth::setup().await;
    let (server, key, ws) = (&s.server, &s.account.api_key, s.account.workspace_id);
    let (campaign, pages) = live_campaign(server, key, ws, "Spring", 5).await;
    let audience = server
        .post(
            key,
            "/audiences/create",
            json!({"workspace_id": ws, "name": "Prospects"}),
        )
        .await
        .expect(200)
        .json()["audience_id"]
        .as_i64()
        .unwrap();
    let downloads = tempfile::tempdir().unwrap();
    let browser = downloading_browser(&driver, downloads.path()).await;
    browser.set_window_size(1280, 900).await.unwrap();

    visit(&browser, server, &axe, "/dashboard/login", "login").await;
    fill(&browser, "#email", "owner@example.com").await;
    fill(&browser, "#password", crate::oauth::PASSWORD).await;
    click(&browser, "//button[.='Sign in']").await;
    let list = visit(&browser, server, &axe, "/dashboard/leads", "leads-list").await;
    assert!(list.contains("5 leads"), "{list}");

    // Two leads ticked, added to an audience.
    for (lead, _) in &pages[..2] {
        browser
            .find(Locator::Css(&format!("#lead_{lead}")))
            .await
            .unwrap()
            .click()
            .await
            .unwrap();
    }
    browser
        .find(Locator::Css("#to_audience"))
        .await
        .unwrap()
        .select_by_value(&audience.to_string())
        .await
        .unwrap();
    click(&browser, "//button[.='Add to the audience']").await;
    let added = look(&browser, &axe, "leads-added").await;
    assert!(
        added.contains("Added 2 leads to the audience \u{201c}Prospects\u{201d}."),
        "{added}"
    );
    let audiences = server
        .get(key, &format!("/audiences/get-list?workspace_id={ws}"))
        .await
        .expect(200)
        .json();
    let prospects = audiences
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["id"] == audience)
        .unwrap()
        .clone();
    assert_eq!(prospects["lead_count"], 2, "{prospects}");
    let in_audience = visit(
        &browser,
        server,
        &axe,
        &format!("/dashboard/leads?workspace_id={ws}&audience_id={audience}"),
        "leads-in-audience",
    )
    .await;
    assert!(in_audience.contains("2 leads"), "{in_audience}");

    // Every lead as CSV, saved by the browser and read by a CSV parser.
    visit(
        &browser,
        server,
        &axe,
        "/dashboard/leads",
        "leads-list-again",
    )
    .await;
    browser
        .find(Locator::LinkText("Download all as CSV"))
        .await
        .unwrap()
        .click()
        .await
        .unwrap();
    let csv = downloaded(downloads.path(), "leads.csv").await;
    let mut reader = csv::Reader::from_reader(csv.as_bytes());
    let header: Vec<String> = reader
        .headers()
        .unwrap()
        .iter()
        .map(str::to_owned)
        .collect();
    assert_eq!(
        &header[..13],
        [
            "lead_id",
            "email",
            "first_name",
            "last_name",
            "company_name",
            "company_domain",
            "title",
            "campaign_id",
            "campaign",
            "page_url",
            "score",
            "last_activity_at",
            "created_at"
        ]
    );
    let rows: Vec<csv::StringRecord> = reader.records().map(Result::unwrap).collect();
    let exported: BTreeSet<(i64, String)> = rows
        .iter()
        .map(|row| (row[0].parse().unwrap(), row[9].to_owned()))
        .collect();
    let expected: BTreeSet<(i64, String)> = pages.iter().cloned().collect();
    assert_eq!(exported, expected, "every lead with its page, once");
    let campaign_text = campaign.to_string();
    assert!(rows.iter().all(|row| row[7] == campaign_text));

    // Erasing one: asked first, then gone.
    let (gone, _) = &pages[4];
    browser
        .find(Locator::Css(&format!("#lead_{gone}")))
        .await
        .unwrap()
        .click()
        .await
        .unwrap();
    click(&browser, "//button[.='Erase\u{2026}']").await;
    let asked = look(&browser, &axe, "leads-erase-confirm").await;
    assert!(
        asked.contains("Erase 1 lead and every trace of them?"),
        "{asked}"
    );
    assert_eq!(lead_total(server, key, ws).await, 5, "nothing erased yet");
    click(&browser, "//button[.='Erase for good']").await;
    let erased = look(&browser, &axe, "leads-erased").await;
    assert!(
        erased.contains("Erased 1 lead and every trace of them."),
        "{erased}"
    );
    assert_eq!(lead_total(server, key, ws).await, 4);

    // One more lead, from the campaign's page: its page link at once.
    visit(
        &browser,
        server,
        &axe,
        &format!("/dashboard/campaigns/{campaign}"),
        "campaign-add-lead",
    )
    .await;
    fill(&browser, "#add-email", "new@example.com").await;
    fill(&browser, "#add-first-name", "Nell").await;
    click(&browser, "//button[.='Add the lead and make their page']").await;
    let lead = look(&browser, &axe, "lead-added").await;
    assert!(lead.contains("Lead added. Their page: http"), "{lead}");
    let link = browser
        .find(Locator::Css("main ul a[href*='/p/']"))
        .await
        .unwrap()
        .attr("href")
        .await
        .unwrap()
        .unwrap();
    let found = server
        .get(key, &format!("/leads/search?workspace_id={ws}&search=nell"))
        .await
        .expect(200)
        .json();
    assert_eq!(found["leads"][0]["service_page_url"], link.as_str());
    browser.close().await.unwrap();
}
