//! A workspace's own domains in the dashboard, used as an owner's browser would: added (the
//! TXT value shown once), checked now, refused with why, deleted after a confirmation, chosen
//! as a campaign's pages' address; a member is shown none of it. The server looks names up at a closed port of loopback, so no real
//! network is used and every look-up fails at once (pending, with that reason), and checks by
//! itself only after an hour.

use serde_json::{Value, json};

use crate::common::live_campaign;
use crate::dashboard::unescape;
use crate::dashboard_import::signed_in_member;
use crate::oauth::{Browser, PASSWORD, Setup, hidden, setup_with};

/// A port of loopback nothing listens on, as a DNS server that never answers.
fn closed_port() -> String {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    format!("127.0.0.1:{}", listener.local_addr().unwrap().port())
}

async fn domains_setup() -> Setup {
    let dns = closed_port();
    setup_with(&["--dns-server", &dns, "--domain-retry-seconds", "3600"]).await
}

async fn signed_in_owner(s: &Setup) -> Browser {
    let mut owner = Browser::new(&s.server);
    owner
        .log_in("owner@example.com", PASSWORD, "/dashboard")
        .await;
    owner
}

/// The workspace's domains as the API lists them.
async fn listed(s: &Setup) -> Vec<Value> {
    let ws = s.account.workspace_id;
    s.server
        .get(
            &s.account.api_key,
            &format!("/domains/get-list?workspace_id={ws}"),
        )
        .await
        .expect(200)
        .json()["domains"]
        .as_array()
        .unwrap()
        .clone()
}

/// The TXT record's value a page shows, if it shows one.
fn txt_value(page: &str) -> Option<String> {
    let start = page.find("<code>lps-verify")? + "<code>".len();
    let end = start + page[start..].find("</code>").unwrap();
    Some(unescape(&page[start..end]))
}

/// Adds `hostname` from the domains page: the answer's status, where it leads and its page.
async fn add(browser: &mut Browser, ws: &str, hostname: &str) -> (u16, Option<String>, String) {
    let (status, _, page) = browser
        .get(&format!("/dashboard/domains?workspace_id={ws}"))
        .await;
    assert_eq!(status, 200, "{page}");
    let csrf = hidden(&page, "csrf_token");
    browser
        .post(
            "/dashboard/domains/create",
            &[
                ("csrf_token", csrf.as_str()),
                ("workspace_id", ws),
                ("hostname", hostname),
            ],
        )
        .await
}

/// The value of the option a page's `domain_id` select has selected; `None` without the select.
fn chosen_domain(page: &str) -> Option<String> {
    let start = page.find("name=\"domain_id\"")?;
    let select = &page[start..start + page[start..].find("</select>").unwrap()];
    let chosen = select
        .split("<option value=\"")
        .find(|option| option.contains("\" selected>"))
        .unwrap_or_else(|| panic!("a chosen option in {select}"));
    Some(chosen[..chosen.find('"').unwrap()].to_owned())
}

/// Saves the campaign's settings form of `page` as shown, with `domain_id` when given.
async fn save_settings(
    browser: &mut Browser,
    page: &str,
    campaign: i64,
    domain_id: Option<&str>,
) -> String {
    let (csrf, ws) = (hidden(page, "csrf_token"), hidden(page, "workspace_id"));
    let mut fields = vec![
        ("csrf_token", csrf.as_str()),
        ("workspace_id", ws.as_str()),
        ("name", "Spring"),
        ("cta_url", ""),
    ];
    fields.extend(domain_id.map(|id| ("domain_id", id)));
    let (status, location, answer) = browser
        .post(
            &format!("/dashboard/campaigns/{campaign}/settings"),
            &fields,
        )
        .await;
    assert_eq!(status, 303, "{answer}");
    let (status, _, page) = browser.get(&location.unwrap()).await;
    assert_eq!(status, 200, "{page}");
    assert!(page.contains("The campaign was saved"), "{page}");
    page
}

#[tokio::test]
async fn an_owner_adds_a_domain_sees_its_txt_value_once_checks_it_and_deletes_it() {
    let s = domains_setup().await;
    let ws = s.account.workspace_id.to_string();
    let mut owner = signed_in_owner(&s).await;

    // Settings links the domains page, which has none yet.
    let (_, _, settings) = owner
        .get(&format!("/dashboard/settings?workspace_id={ws}"))
        .await;
    let link = format!("/dashboard/domains?workspace_id={ws}");
    assert!(
        unescape(&settings).contains(&format!("href=\"{link}\"")),
        "{settings}"
    );
    let (status, _, page) = owner.get(&link).await;
    assert_eq!(status, 200, "{page}");
    assert!(page.contains("No domain yet"), "{page}");

    // Added: back to the page, which shows the two records, the TXT value once.
    let (status, location, _) = add(&mut owner, &ws, "Go.Example.Test").await;
    assert_eq!(status, 303);
    let location = location.unwrap();
    let (status, _, page) = owner.get(&location).await;
    assert_eq!(status, 200, "{page}");
    let page = unescape(&page);
    assert!(page.contains("go.example.test was added"), "{page}");
    assert!(page.contains(">Pending</strong>"), "{page}");
    let value = txt_value(&page).expect("the TXT value, shown once");
    assert_eq!(
        page.matches(&value).count(),
        1,
        "shown in its record: {page}"
    );
    assert!(value.len() > "lps-verify=".len() + 20, "{value}");
    assert!(
        page.contains("<td>TXT</td><td><code>_lps-challenge.go.example.test</code></td>"),
        "{page}"
    );
    assert!(
        page.contains(
            "<td>CNAME</td><td><code>go.example.test</code></td><td><code>127.0.0.1</code></td>"
        ),
        "{page}"
    );
    assert!(
        page.contains("A/AAAA records with the same addresses as <code>127.0.0.1</code>"),
        "{page}"
    );
    assert!(
        page.contains("Not checked yet; checked next <time"),
        "{page}"
    );
    let domains = listed(&s).await;
    assert_eq!(domains.len(), 1);
    assert_eq!(domains[0]["hostname"], "go.example.test");
    assert_eq!(domains[0]["txt_value"], Value::Null);
    let id = domains[0]["domain_id"].as_i64().unwrap().to_string();

    // Reloaded: the value is gone for good, its cell says so.
    let (_, _, again) = owner.get(&location).await;
    assert!(txt_value(&again).is_none(), "{again}");
    assert!(!again.contains(&value), "{again}");
    assert!(!again.contains("was added"), "{again}");
    assert!(again.contains("shown once when added"), "{again}");

    // Checked now: the look-up fails, so it is still pending, and the page says why.
    let csrf = hidden(&again, "csrf_token");
    let (status, location, _) = owner
        .post(
            "/dashboard/domains/verify",
            &[
                ("csrf_token", csrf.as_str()),
                ("workspace_id", ws.as_str()),
                ("domain_id", id.as_str()),
            ],
        )
        .await;
    assert_eq!(status, 303);
    let (_, _, page) = owner.get(&location.unwrap()).await;
    assert!(
        page.contains("go.example.test is still pending. The DNS look-up failed"),
        "{page}"
    );
    assert!(page.contains("role=\"alert\""), "{page}");
    assert!(page.contains(">Pending</strong>"), "{page}");
    assert!(page.contains("Last checked <time"), "{page}");
    let domains = listed(&s).await;
    assert_eq!(domains[0]["status"], "pending");
    assert!(
        domains[0]["reason"]
            .as_str()
            .unwrap()
            .contains("The DNS look-up failed"),
        "{domains:?}"
    );
    // The reason stays on the page after the notice is gone.
    let (_, _, page) = owner
        .get(&format!("/dashboard/domains?workspace_id={ws}"))
        .await;
    assert!(!page.contains("is still pending"), "{page}");
    assert!(page.contains("The DNS look-up failed"), "{page}");

    // Deleting asks first, then the domain is gone.
    let confirm_path = format!("/dashboard/domains/delete?workspace_id={ws}&domain_id={id}");
    assert!(unescape(&page).contains(&confirm_path), "{page}");
    let (status, _, confirm) = owner.get(&confirm_path).await;
    assert_eq!(status, 200, "{confirm}");
    assert!(
        confirm.contains("Delete the domain go.example.test?"),
        "{confirm}"
    );
    let (status, location, _) = owner
        .post(
            "/dashboard/domains/delete",
            &[
                ("csrf_token", hidden(&confirm, "csrf_token").as_str()),
                ("workspace_id", hidden(&confirm, "workspace_id").as_str()),
                ("domain_id", hidden(&confirm, "domain_id").as_str()),
            ],
        )
        .await;
    assert_eq!(status, 303);
    let (_, _, page) = owner.get(&location.unwrap()).await;
    assert!(page.contains("The domain was deleted"), "{page}");
    assert!(page.contains("No domain yet"), "{page}");
    assert!(listed(&s).await.is_empty());
    let (status, _, _) = owner.get(&confirm_path).await;
    assert_eq!(status, 404);
}

#[tokio::test]
async fn a_hostname_core_refuses_is_explained_on_the_page_and_kept_in_the_form() {
    let s = domains_setup().await;
    let ws = s.account.workspace_id.to_string();
    let mut owner = signed_in_owner(&s).await;

    // A form without the session's token is refused before core is asked.
    let (status, _, refused) = owner
        .post(
            "/dashboard/domains/create",
            &[
                ("csrf_token", "forged"),
                ("workspace_id", ws.as_str()),
                ("hostname", "go.example.test"),
            ],
        )
        .await;
    assert_eq!(status, 403, "{refused}");
    assert!(refused.contains("The form expired."), "{refused}");

    // A public suffix: refused with why, the hostname typed kept in the field.
    let (status, location, page) = add(&mut owner, &ws, "co.uk").await;
    assert_eq!(status, 422, "{page}");
    assert_eq!(location, None);
    assert!(
        page.contains("role=\"alert\" id=\"hostname-error\""),
        "{page}"
    );
    assert!(page.contains("public suffix"), "{page}");
    assert!(
        page.contains("name=\"hostname\" required maxlength=\"253\" value=\"co.uk\""),
        "{page}"
    );
    assert!(page.contains("aria-invalid=\"true\""), "{page}");
    assert!(listed(&s).await.is_empty());

    // Added once, then again: the second is refused, the first still listed on the page.
    let (status, _, _) = add(&mut owner, &ws, "example.co.uk").await;
    assert_eq!(status, 303);
    let (status, _, page) = add(&mut owner, &ws, "EXAMPLE.co.uk").await;
    assert_eq!(status, 409, "{page}");
    assert!(page.contains("already has this hostname"), "{page}");
    assert!(page.contains("value=\"EXAMPLE.co.uk\""), "{page}");
    assert!(
        page.contains("<h2 id=\"domain-") && page.contains("example.co.uk <strong"),
        "{page}"
    );
    assert!(txt_value(&page).is_none(), "{page}");
    assert_eq!(listed(&s).await.len(), 1);
}

#[tokio::test]
async fn a_member_is_shown_no_domains_and_refused_their_page() {
    let s = domains_setup().await;
    let ws = s.account.workspace_id.to_string();
    let mut owner = signed_in_owner(&s).await;
    let (status, _, _) = add(&mut owner, &ws, "go.example.test").await;
    assert_eq!(status, 303);
    let id = listed(&s).await[0]["domain_id"]
        .as_i64()
        .unwrap()
        .to_string();

    let mut member = signed_in_member(&s).await;
    let (status, _, settings) = member.get("/dashboard/settings").await;
    assert_eq!(status, 200, "{settings}");
    assert!(!settings.contains("/dashboard/domains"), "{settings}");
    let (status, _, page) = member
        .get(&format!("/dashboard/domains?workspace_id={ws}"))
        .await;
    assert_eq!(status, 403, "{page}");
    assert!(page.contains("managed by an owner"), "{page}");
    assert!(!page.contains("go.example.test"), "{page}");
    let (status, _, page) = member
        .get(&format!(
            "/dashboard/domains/delete?workspace_id={ws}&domain_id={id}"
        ))
        .await;
    assert_eq!(status, 404, "{page}");

    // Forms posted all the same change nothing.
    let csrf = hidden(&settings, "csrf_token");
    for (action, fields) in [
        (
            "/dashboard/domains/create",
            ("hostname", "www.example.test"),
        ),
        ("/dashboard/domains/verify", ("domain_id", id.as_str())),
        ("/dashboard/domains/delete", ("domain_id", id.as_str())),
    ] {
        let (status, _, _) = member
            .post(
                action,
                &[
                    ("csrf_token", csrf.as_str()),
                    ("workspace_id", ws.as_str()),
                    fields,
                ],
            )
            .await;
        assert_eq!(status, 303, "{action}");
    }
    let domains = listed(&s).await;
    assert_eq!(domains.len(), 1);
    assert_eq!(domains[0]["hostname"], "go.example.test");
    assert_eq!(domains[0]["checked_at"], Value::Null);
}

#[tokio::test]
async fn an_owner_picks_a_campaigns_domain_whose_pages_stay_on_the_servers_address_until_verified()
{
    let s = domains_setup().await;
    let (key, ws) = (&s.account.api_key, s.account.workspace_id);
    let (campaign, pages) = live_campaign(&s.server, key, ws, "Spring", 1).await;
    let (lead, address) = pages[0].clone();
    let page_address = || async {
        s.server
            .get(key, &format!("/leads/get?lead_id={lead}"))
            .await
            .expect(200)
            .json()["service_page_url"]
            .as_str()
            .unwrap()
            .to_owned()
    };
    let campaign_page = format!("/dashboard/campaigns/{campaign}?workspace_id={ws}");
    let mut owner = signed_in_owner(&s).await;

    // Without a domain, there is nothing to choose.
    let (status, _, page) = owner.get(&campaign_page).await;
    assert_eq!(status, 200, "{page}");
    assert!(!page.contains("name=\"domain_id\""), "{page}");

    // With one (pending: the test server has no DNS), the settings offer it beside the
    // server's own address, which is chosen, and say where domains are verified.
    let domain = s
        .server
        .post(
            key,
            "/domains/create",
            json!({"workspace_id": ws, "hostname": "go.example.test"}),
        )
        .await
        .expect(200)
        .json();
    let id = domain["domain_id"].as_i64().unwrap().to_string();
    let (_, _, page) = owner.get(&campaign_page).await;
    let page = unescape(&page);
    assert!(page.contains("Pages' address</label>"), "{page}");
    assert!(
        page.contains("<option value=\"0\" selected>This server's address</option>"),
        "{page}"
    );
    assert!(
        page.contains(&format!(
            "<option value=\"{id}\">go.example.test (not verified yet)</option>"
        )),
        "{page}"
    );
    assert_eq!(chosen_domain(&page).as_deref(), Some("0"));
    assert!(
        page.contains("Pages are handed out on a domain once it is verified"),
        "{page}"
    );
    assert!(
        page.contains(&format!("href=\"/dashboard/domains?workspace_id={ws}\"")),
        "{page}"
    );

    // Picked and saved: kept, while the lead's page is still handed out on the server's
    // address, the domain not being verified.
    let page = save_settings(&mut owner, &page, campaign, Some(&id)).await;
    assert_eq!(chosen_domain(&page), Some(id.clone()), "{page}");
    assert_eq!(page_address().await, address);
    assert!(address.starts_with(&s.server.http), "{address}");

    // A member sees no choice; saving the settings leaves it as it is.
    let mut member = signed_in_member(&s).await;
    let (status, _, shown) = member.get(&campaign_page).await;
    assert_eq!(status, 200, "{shown}");
    assert!(!shown.contains("name=\"domain_id\""), "{shown}");
    assert!(!shown.contains("go.example.test"), "{shown}");
    let shown = save_settings(&mut member, &shown, campaign, None).await;
    assert_eq!(chosen_domain(&shown), None);
    let (_, _, page) = owner.get(&campaign_page).await;
    assert_eq!(chosen_domain(&page), Some(id.clone()), "{page}");

    // The server's own address chosen again: the choice is cleared.
    let page = save_settings(&mut owner, &page, campaign, Some("0")).await;
    assert_eq!(chosen_domain(&page).as_deref(), Some("0"), "{page}");
    assert!(
        page.contains(&format!(
            "<option value=\"{id}\">go.example.test (not verified yet)</option>"
        )),
        "{page}"
    );
    assert_eq!(page_address().await, address);
}
