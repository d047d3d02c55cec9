//! The link-preview card (`/p/{campaign}/{lead}/og.png`), which anyone with a page's address
//! can ask for: the costliest one within the documented limits answered in time, one drawing
//! however many ask for it at once, a stand-in (never a `503`) when it cannot be made in time,
//! and a headline whose card could cost more than allowed refused when it is written.

use serde_json::json;

use crate::common::*;

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
