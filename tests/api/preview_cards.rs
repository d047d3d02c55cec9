//! The link-preview card (`/p/{campaign}/{lead}/og.png`), which anyone with a page's address
//! can ask for: the costliest one within the documented limits answered in time, one drawing
//! however many ask for it at once, a stand-in (never a `503`) when it cannot be made in time,
//! and a headline whose card could cost more than allowed refused when it is written.

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use serde_json::json;

use crate::common::*;

/// A card as a link unfurler gets it.
struct Answer {
    etag: String,
    cache_control: String,
    png: Vec<u8>,
}

impl Answer {
    fn is(&self, card: &str) -> bool {
        self.etag.ends_with(&format!("-{card}\""))
    }

    /// Whether every pixel has one colour.
    fn is_one_colour(&self) -> bool {
        let image = image::load_from_memory(&self.png).unwrap().to_rgb8();
        assert_eq!((image.width(), image.height()), (1200, 630));
        let first = *image.get_pixel(0, 0);
        image.pixels().all(|p| *p == first)
    }
}

async fn fetch(server: &Server, card: &str) -> Answer {
    let response = server
        .client
        .get(card)
        .header("user-agent", "Slackbot-LinkExpanding 1.0")
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200, "{card}");
    assert_eq!(response.headers()["content-type"], "image/png");
    let header = |name: &str| response.headers()[name].to_str().unwrap().to_owned();
    let (etag, cache_control) = (header("etag"), header("cache-control"));
    let png = response.bytes().await.unwrap().to_vec();
    Answer {
        etag,
        cache_control,
        png,
    }
}

/// A counter's value in `GET /metrics`, labels included (0 when not counted yet).
async fn counted(server: &Server, sample: &str) -> f64 {
    let text = server
        .send(server.client.get(server.url_of("/metrics")))
        .await
        .expect(200)
        .text;
    text.lines()
        .find_map(|line| line.strip_prefix(sample)?.trim().parse().ok())
        .unwrap_or(0.0)
}

/// Each lead's card address, for a live campaign of `count` leads.
async fn cards(server: &Server, account: &Account, count: usize) -> Vec<String> {
    let (_, pages) = live_campaign(
        server,
        &account.api_key,
        account.workspace_id,
        "Cards",
        count,
    )
    .await;
    pages
        .iter()
        .map(|(_, page)| format!("{page}/og.png"))
        .collect()
}

#[tokio::test]
async fn the_costliest_card_within_the_documented_limits_is_the_leads_own_in_time() {
    let db = TestDb::new();
    let account = bootstrap(&db, &[]);
    let server = Server::serve(&db, &["--preview-card-deadline-ms", "10000"]);
    let (key, ws) = (&account.api_key, account.workspace_id);
    let (campaign, _) = create_campaign(&server, key, ws, "Longest").await;
    // A headline naming four values, each at its longest: what a card's text may come to.
    server
        .post(
            key,
            "/campaigns/update",
            json!({"workspace_id": ws, "campaign_id": campaign, "copy": {"headline":
                "{{ first_name }} {{ company_name }} {{ first_name }} {{ company_name }}"}}),
        )
        .await
        .expect(200);
    publish_premade(&server, key, ws, campaign, "Personal Spotlight").await;
    let longest = "i".repeat(10_000);
    let job = upsert(
        &server,
        key,
        json!({"campaign_id": campaign, "leads": [{"values": {
            "email": "longest@example.com", "first_name": longest, "company_name": longest}}]}),
    )
    .await;
    wait_for_job(&server, key, &job).await;
    let page = server
        .get(key, &format!("/leads/get-leads?job_id={job}"))
        .await
        .expect(200)
        .json()[0]["service_page_url"]
        .as_str()
        .unwrap()
        .to_owned();

    let started = Instant::now();
    let card = fetch(&server, &format!("{page}/og.png")).await;
    let took = started.elapsed();
    println!(
        "og.png, 10,000-character values: {:.0} ms",
        took.as_secs_f64() * 1e3
    );
    assert!(card.is("og"), "the lead's own card: {}", card.etag);
    assert!(took < Duration::from_secs(3), "{took:?}");
}

#[tokio::test]
async fn many_requests_at_once_for_a_card_not_yet_made_draw_it_once() {
    let db = TestDb::new();
    let account = bootstrap(&db, &[]);
    let server = Server::serve(&db, &["--preview-card-deadline-ms", "10000"]);
    let cards = cards(&server, &account, 1).await;
    let answers = futures_util::future::join_all((0..8).map(|_| fetch(&server, &cards[0]))).await;
    let etags: BTreeSet<&str> = answers.iter().map(|a| a.etag.as_str()).collect();
    assert_eq!(etags.len(), 1, "{etags:?}");
    assert!(answers[0].is("og"), "{etags:?}");
    let drawn = r#"lps_preview_cards_drawn_total{card="lead"}"#;
    assert_eq!(counted(&server, drawn).await, 1.0);
    let answered = r#"lps_preview_cards_answered_total{card="lead"}"#;
    assert_eq!(counted(&server, answered).await, 8.0);
}

#[tokio::test]
async fn a_card_not_made_in_time_is_answered_by_a_stand_in_kept_briefly_never_a_503() {
    let db = TestDb::new();
    let account = bootstrap(&db, &[]);
    // No time at all: every card not made yet is answered by a stand-in.
    let server = Server::serve(&db, &["--preview-card-deadline-ms", "0"]);
    let cards = cards(&server, &account, 8).await;

    // Nothing drawn yet: the plain card in the brand colour, at once.
    let plain = fetch(&server, &cards[0]).await;
    assert!(plain.is("og-plain"), "{}", plain.etag);
    assert_eq!(plain.cache_control, "public, max-age=30");
    assert!(plain.is_one_colour());

    // The lead's card is still drawn, and kept: asked again, it answers.
    let deadline = Instant::now() + Duration::from_secs(60);
    let lead = loop {
        let answer = fetch(&server, &cards[0]).await;
        if answer.is("og") || Instant::now() > deadline {
            break answer;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    assert!(lead.is("og"), "{}", lead.etag);
    assert_eq!(lead.cache_control, "public, max-age=300");
    assert!(!lead.is_one_colour());
    assert_ne!(lead.etag, plain.etag);

    // Other leads' cards, not drawn yet: the campaign's card (drawn once for the published
    // version, without any lead's values) stands in for each.
    let mut campaign = Vec::new();
    for card in &cards[1..] {
        let answer = fetch(&server, card).await;
        assert_eq!(
            answer.cache_control, "public, max-age=30",
            "{}",
            answer.etag
        );
        if answer.is("og-campaign") {
            campaign.push(answer);
        }
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
    assert!(campaign.len() >= 2, "{} campaign cards", campaign.len());
    assert_eq!(
        campaign[0].png, campaign[1].png,
        "the same card for every lead"
    );
    assert_ne!(
        campaign[0].etag, campaign[1].etag,
        "each page's tag of its own"
    );
    assert!(!campaign[0].is_one_colour());
    assert_ne!(campaign[0].png, lead.png);
    let drawn = r#"lps_preview_cards_drawn_total{card="campaign"}"#;
    assert_eq!(counted(&server, drawn).await, 1.0);
}

#[tokio::test]
async fn a_headline_whose_card_could_come_to_more_than_allowed_is_refused_when_written() {
    let db = TestDb::new();
    let account = bootstrap(&db, &[]);
    let server = Server::serve(&db, &[]);
    let (key, ws) = (&account.api_key, account.workspace_id);
    let (campaign, _) = create_campaign(&server, key, ws, "Names").await;
    let naming = |values: usize| {
        json!({"workspace_id": ws, "campaign_id": campaign, "copy": {
            "headline": vec!["{{ first_name }}"; values].join(" ")}})
    };
    let refused = server
        .post(key, "/campaigns/update", naming(5))
        .await
        .expect(422)
        .json();
    let why = refused["errors"]["copy.headline"][0]
        .as_str()
        .unwrap_or_default();
    assert!(why.contains("too many values"), "{refused}");
    assert!(why.contains("link-preview card"), "{refused}");
    server
        .post(key, "/campaigns/update", naming(4))
        .await
        .expect(200);
}
