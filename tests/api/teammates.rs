//! Teammates and their invitations, driven through the dashboard as people would (issue 44):
//! an invitation records who made it and is only as good as its maker's power to invite.

use lps::proto::account_service_client::AccountServiceClient;
use lps::proto::o_auth_service_client::OAuthServiceClient;

use crate::common::grpc_request;
use crate::oauth::{Browser, PASSWORD, Setup, authorize, hidden, setup};
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
    let csrf = hidden(&form, "csrf_token");
    let (status, _, _) = person
        .post(
            "/dashboard/setup",
            &[
                ("token", token.as_str()),
                ("csrf_token", csrf.as_str()),
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

/// Posts a Settings form of the person's: the notice the redirect lands on.
async fn act(person: &mut Browser, action: &str, fields: &[(&str, &str)]) -> String {
    let (_, _, settings) = person.get("/dashboard/settings").await;
    let csrf = hidden(&settings, "csrf_token");
    let mut form = vec![("csrf_token", csrf.as_str())];
    form.extend_from_slice(fields);
    let (status, location, _) = person.post(action, &form).await;
    assert_eq!(status, 303);
    person.get(location.as_deref().unwrap()).await.2
}

#[tokio::test]
async fn an_owner_made_a_member_loses_their_pending_invitations_and_apps_at_once() {
    let s = setup().await;
    let mut alice = first_owner(&s).await;
    let bob_link = invite(&mut alice, "bob@example.com", "owner").await;
    let (_, mut bob) = accept(&s, &bob_link).await;
    let carol_link = invite(&mut bob, "carol@example.com", "owner").await;
    let dave_link = invite(&mut bob, "dave@example.com", "member").await;
    let (_, tokens) = authorize(&s, &mut bob, s.account.workspace_id).await;
    let app = tokens["access_token"].as_str().unwrap().to_owned();
    let credits = format!("/account/credits?workspace_id={}", s.account.workspace_id);
    assert_eq!(s.server.get(&app, &credits).await.status, 200);

    let (_, _, settings) = alice.get("/dashboard/settings").await;
    let bob_id = user_id_of(&settings, "bob@example.com");
    let done = act(
        &mut alice,
        "/dashboard/teammates/role",
        &[("user_id", bob_id.as_str()), ("role", "member")],
    )
    .await;
    assert!(done.contains("bob is now a member"), "{done}");

    // Every invitation Bob made that was pending is revoked: members invite nobody.
    for link in [&carol_link, &dave_link] {
        let (status, mut person) = accept(&s, link).await;
        assert_eq!(status, 410);
        assert!(!signed_in(&mut person).await);
    }
    let (_, _, settings) = alice.get("/dashboard/settings").await;
    assert!(
        !settings.contains("carol@example.com") && !settings.contains("dave@example.com"),
        "{settings}"
    );
    // His session works on as a member's, from its next request; his app is disconnected.
    assert!(signed_in(&mut bob).await);
    let (_, _, his) = bob.get("/dashboard/settings").await;
    assert!(his.contains("managed by an owner"), "{his}");
    let refused = act(
        &mut bob,
        "/dashboard/teammates/invite",
        &[("email", "eve@example.com"), ("role", "owner")],
    )
    .await;
    assert!(refused.contains("managed by an owner"), "{refused}");
    assert_eq!(s.server.get(&app, &credits).await.status, 401);

    // Made an owner again, he invites again; what was revoked stays revoked.
    let done = act(
        &mut alice,
        "/dashboard/teammates/role",
        &[("user_id", bob_id.as_str()), ("role", "owner")],
    )
    .await;
    assert!(done.contains("bob is now an owner"), "{done}");
    invite(&mut bob, "erin@example.com", "member").await;
    assert_eq!(accept(&s, &carol_link).await.0, 410);
    // Nobody changes their own role.
    let alice_id = s.account.user_id.to_string();
    let refused = act(
        &mut alice,
        "/dashboard/teammates/role",
        &[("user_id", alice_id.as_str()), ("role", "member")],
    )
    .await;
    assert!(refused.contains("your own role"), "{refused}");
}

#[tokio::test]
async fn a_pending_invitation_shows_its_maker_and_expiry_and_can_be_revoked() {
    let s = setup().await;
    let mut alice = first_owner(&s).await;
    let bob_link = invite(&mut alice, "bob@example.com", "owner").await;
    let (_, mut bob) = accept(&s, &bob_link).await;
    let before = lps::wire::now();
    let carol_link = invite(&mut bob, "carol@example.com", "member").await;

    // Over gRPC: who made each invitation, and until when a link nobody used works.
    let channel = s.server.grpc_channel().await;
    let session = OAuthServiceClient::new(channel.clone())
        .login(lps::proto::LoginRequest {
            email: Some("owner@example.com".into()),
            password: Some(PASSWORD.into()),
        })
        .await
        .unwrap()
        .into_inner()
        .session_token;
    let listed = AccountServiceClient::new(channel)
        .list_teammates(grpc_request(&session, lps::proto::ListTeammatesRequest {}))
        .await
        .unwrap()
        .into_inner()
        .teammates;
    let [first, bob_row, carol] = listed.as_slice() else {
        panic!("{listed:?}");
    };
    assert_eq!(
        (first.invited_by_user_id, &first.invited_by_name),
        (None, &None)
    );
    assert_eq!(bob_row.invited_by_user_id, Some(s.account.user_id));
    assert!(bob_row.has_password && bob_row.link_expires_at.is_none());
    assert_eq!(carol.invited_by_user_id, Some(bob_row.user_id));
    assert_eq!(carol.invited_by_name.as_deref(), Some("bob"));
    let expires = lps::wire::from_proto_micros(carol.link_expires_at.as_ref().unwrap());
    let week = 7 * 24 * 3_600 * 1_000_000;
    assert!(
        (before + week..before + week + 60_000_000).contains(&expires),
        "{expires}"
    );

    // On the Settings page: who invited them, when the link expires, a way to revoke it.
    let (_, _, settings) = alice.get("/dashboard/settings").await;
    let row = settings
        .split("<tr>")
        .find(|row| row.contains("carol@example.com"))
        .unwrap();
    assert!(row.contains("Invited by bob · link expires <time"), "{row}");
    assert!(row.contains("Revoke invitation"), "{row}");
    let carol_id = carol.user_id.to_string();
    let (status, _, confirm) = alice
        .get(&format!("/dashboard/teammates/revoke?user_id={carol_id}"))
        .await;
    assert_eq!(status, 200);
    assert!(
        confirm.contains("Revoke the invitation of carol"),
        "{confirm}"
    );
    let csrf = hidden(&confirm, "csrf_token");
    // A forged form does nothing.
    let (status, _, _) = alice
        .post(
            "/dashboard/teammates/revoke",
            &[("csrf_token", "forged"), ("user_id", carol_id.as_str())],
        )
        .await;
    assert_eq!(status, 403);
    let (status, location, _) = alice
        .post(
            "/dashboard/teammates/revoke",
            &[
                ("csrf_token", csrf.as_str()),
                ("user_id", carol_id.as_str()),
            ],
        )
        .await;
    assert_eq!(status, 303);
    let (_, _, done) = alice.get(location.as_deref().unwrap()).await;
    assert!(done.contains("The invitation was revoked"), "{done}");
    assert!(!done.contains("carol@example.com"), "{done}");
    assert_eq!(accept(&s, &carol_link).await.0, 410);
    // A joined teammate's invitation is not pending: nothing to revoke there.
    let bob_id = bob_row.user_id.to_string();
    let (status, _, _) = alice
        .get(&format!("/dashboard/teammates/revoke?user_id={bob_id}"))
        .await;
    assert_eq!(status, 404);
}
