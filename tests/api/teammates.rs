//! Teammates and their invitations, driven through the dashboard as people would (issue 44):
//! an invitation records who made it and is only as good as its maker's power to invite.

use crate::oauth::{Browser, PASSWORD, Setup, hidden, setup};
use crate::people_app::setup_link;

/// Signs in as the bootstrap owner.
async fn first_owner(s: &Setup) -> Browser {
    let mut owner = Browser::new(&s.server);
    owner
        .log_in("owner@example.com", PASSWORD, "/dashboard")
        .await;
    owner
}

/// Invites `email` as `role` from the person's Settings page: the link shown once.
async fn invite(by: &mut Browser, email: &str, role: &str) -> String {
    let (_, _, settings) = by.get("/dashboard/settings").await;
    let csrf = hidden(&settings, "csrf_token");
    let (status, location, _) = by
        .post(
            "/dashboard/teammates/invite",
            &[
                ("csrf_token", csrf.as_str()),
                ("email", email),
                ("role", role),
            ],
        )
        .await;
    assert_eq!(status, 303);
    let (_, _, invited) = by.get(location.as_deref().unwrap()).await;
    assert!(
        invited.contains(&format!("{email} was invited")),
        "{invited}"
    );
    setup_link(&invited)
}

/// Chooses a password through a link: the status of the answer and the browser it signed in.
async fn accept(s: &Setup, link: &str) -> (u16, Browser) {
    let mut person = Browser::new(&s.server);
    let (status, _, form) = person.get(link).await;
    assert_eq!(status, 200, "{form}");
    let token = hidden(&form, "token");
    let (status, _, _) = person
        .post(
            "/dashboard/setup",
            &[
                ("token", token.as_str()),
                ("password", "their own password"),
            ],
        )
        .await;
    (status, person)
}

/// The id of the teammate with this email in a Settings page's teammates table.
fn user_id_of(settings: &str, email: &str) -> String {
    let row = settings
        .split("<tr>")
        .find(|row| row.contains(&format!("<td>{email}</td>")))
        .unwrap_or_else(|| panic!("{email} in {settings}"));
    let start = row.find("user_id=").expect("an action naming the person") + "user_id=".len();
    row[start..]
        .chars()
        .take_while(char::is_ascii_digit)
        .collect()
}

/// Whether the browser's session still opens the dashboard.
async fn signed_in(person: &mut Browser) -> bool {
    let (status, location, _) = person.get("/dashboard").await;
    match status {
        200 => true,
        303 if location.as_deref() == Some("/dashboard/login") => false,
        other => panic!("unexpected {other} {location:?}"),
    }
}

#[tokio::test]
async fn a_removed_owner_cannot_come_back_through_an_invitation_they_made() {
    let s = setup().await;
    let mut alice = first_owner(&s).await;
    let bob_link = invite(&mut alice, "bob@example.com", "owner").await;
    let (status, mut bob) = accept(&s, &bob_link).await;
    assert_eq!(status, 303);
    assert!(signed_in(&mut bob).await);
    let backdoor_link = invite(&mut bob, "backdoor@example.com", "owner").await;

    let (_, _, settings) = alice.get("/dashboard/settings").await;
    let bob_id = user_id_of(&settings, "bob@example.com");
    let csrf = hidden(&settings, "csrf_token");
    let (status, _, _) = alice
        .post(
            "/dashboard/teammates/remove",
            &[("csrf_token", csrf.as_str()), ("user_id", bob_id.as_str())],
        )
        .await;
    assert_eq!(status, 303);
    assert!(!signed_in(&mut bob).await, "Bob's session ended");

    // Bob's invitation went with him: the link answers gone and signs nobody in.
    let (status, mut backdoor) = accept(&s, &backdoor_link).await;
    assert_eq!(status, 410);
    assert!(!signed_in(&mut backdoor).await);
    let (_, _, settings) = alice.get("/dashboard/settings").await;
    assert!(!settings.contains("backdoor@example.com"), "{settings}");
}
