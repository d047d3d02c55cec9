//! The teammates' state machine driven at random through core's own functions, on a real
//! SQLite database (issue 44): any sequence of invitations, acceptances, removals, role changes
//! and apps connected, among a few people, checked after every step: nobody removed can sign
//! in, nobody who is not an owner holds an owner's powers (sessions, apps), and no live setup
//! link or pending invitation stands on powers its maker no longer has. What is true is read
//! from the database (roles, passwords); what is held is what the people were handed (session
//! tokens, links, codes, apps' tokens), tried as they would try them.

use std::collections::HashMap;

use base64::Engine;
use proptest::prelude::*;
use proptest::test_runner::{Config, TestCaseError, TestRunner};
use sha2::{Digest, Sha256};

use super::{Invitation, Invited, change_role, invite, remove};
use crate::admin::{BootstrapInput, bootstrap};
use crate::auth::{authenticate, hash_key};
use crate::domain::oauth::{self, Approval, Exchange};
use crate::principal::Principal;
use crate::store::users::Role;
use crate::{App, Error, time};

/// People in play, by slot: slot `n` is `p{n}@example.com` (a slot removed may be invited
/// again, as a new person). Slot 0 is the account's first owner.
const PEOPLE: usize = 4;
const REDIRECT: &str = "http://127.0.0.1:47999/callback";
const VERIFIER: &str = "the-verifier-of-every-app-in-this-test-0123456789";
/// What a link sets as the password: never checked here (argon2 is not the subject).
const PASSWORD_HASH: &str = "$argon2id$not-checked-here";

/// A step. Who acts is one of the people holding a session (`by`-th of them, round), so most
/// steps are tried by someone; whether they still may is the question.
#[derive(Debug, Clone, Copy)]
enum Step {
    /// `by` invites the `who`-th person not in the account (never invited, or removed) as an
    /// owner or a member.
    Invite {
        by: usize,
        who: usize,
        owner: bool,
    },
    /// The `who`-th person holding a link takes it.
    Accept {
        who: usize,
    },
    Remove {
        by: usize,
        who: usize,
    },
    ChangeRole {
        by: usize,
        who: usize,
        owner: bool,
    },
    /// `by` approves an app: a code the app holds.
    Approve {
        by: usize,
    },
    /// The app exchanges the `code`-th code it holds for tokens.
    Exchange {
        code: usize,
    },
}

fn step() -> impl Strategy<Value = Step> {
    let person = || 0..PEOPLE;
    prop_oneof![
        4 => (person(), person(), any::<bool>())
            .prop_map(|(by, who, owner)| Step::Invite { by, who, owner }),
        4 => person().prop_map(|who| Step::Accept { who }),
        2 => (person(), person()).prop_map(|(by, who)| Step::Remove { by, who }),
        3 => (person(), person(), any::<bool>())
            .prop_map(|(by, who, owner)| Step::ChangeRole { by, who, owner }),
        1 => person().prop_map(|by| Step::Approve { by }),
        1 => (0..3usize).prop_map(|code| Step::Exchange { code }),
    ]
}

fn role(owner: bool) -> Role {
    if owner { Role::Owner } else { Role::Member }
}

/// A slot's current person and what they were handed last.
#[derive(Default)]
struct Slot {
    user_id: Option<i64>,
    session: Option<String>,
    link: Option<String>,
}

/// A link handed out: its token, its person and who made it.
struct Link {
    token: String,
    invitee: i64,
    maker: Option<i64>,
}

/// One account's people and everything they were ever handed.
struct World<'a> {
    app: &'a App,
    account_id: i64,
    workspace_id: i64,
    client_id: String,
    slots: Vec<Slot>,
    sessions: Vec<(i64, String)>,
    apps: Vec<(i64, String)>,
    links: Vec<Link>,
    /// Codes an app holds, with the person who approved each.
    codes: Vec<(i64, String)>,
    /// Who invited whom, as the test saw it happen.
    makers: HashMap<i64, i64>,
}

/// A refusal is an answer; anything else (an internal error) fails the case.
fn refused(err: Error) -> Result<(), TestCaseError> {
    match err {
        Error::Forbidden(_)
        | Error::NotFound(_)
        | Error::Precondition(_)
        | Error::Invalid(_)
        | Error::Unauthenticated
        | Error::OAuth(..) => Ok(()),
        other => Err(TestCaseError::fail(format!("not a refusal: {other:?}"))),
    }
}

/// What the database says of a person: their role and whether they have a password.
struct Truth {
    role: String,
    has_password: bool,
}

const OWNER: &str = "owner";
const REMOVED: &str = "removed";

impl<'a> World<'a> {
    async fn new(app: &'a App, case: usize) -> World<'a> {
        let made = bootstrap(
            &app.db,
            &BootstrapInput {
                workspace_name: format!("Workspace {case}"),
                user_name: "P0".to_owned(),
                user_email: "p0@example.com".to_owned(),
                ..BootstrapInput::default()
            },
        )
        .await
        .unwrap();
        let client = oauth::register_client(
            app,
            Some("Assistant"),
            &[REDIRECT.to_owned()],
            &format!("10.{}.{}.1", case / 250, case % 250),
        )
        .await
        .unwrap();
        let mut world = World {
            app,
            account_id: made.account_id,
            workspace_id: made.workspace_id,
            client_id: client.id,
            slots: (0..PEOPLE).map(|_| Slot::default()).collect(),
            sessions: Vec::new(),
            apps: Vec::new(),
            links: Vec::new(),
            codes: Vec::new(),
            makers: HashMap::new(),
        };
        // The first start's link, taken at once.
        let token = crate::random::token(43);
        crate::store::oauth::insert_password_setup(
            app.db.pool(),
            &hash_key(&token),
            made.user_id,
            time::now() + time::MICROS_PER_DAY,
        )
        .await
        .unwrap();
        world.links.push(Link {
            token: token.clone(),
            invitee: made.user_id,
            maker: None,
        });
        world.slots[0] = Slot {
            user_id: Some(made.user_id),
            session: None,
            link: Some(token),
        };
        world.take(Step::Accept { who: 0 }).await.unwrap();
        world
    }

    /// The `n`-th (round) of the slots that hold what `holds` asks for.
    fn nth(&self, n: usize, holds: impl Fn(&Slot) -> bool) -> Option<usize> {
        let holding: Vec<usize> = (0..PEOPLE).filter(|&i| holds(&self.slots[i])).collect();
        (!holding.is_empty()).then(|| holding[n % holding.len()])
    }

    /// The principal of the `n`-th person holding a session, if it still authenticates.
    async fn principal(&self, n: usize) -> Option<Principal> {
        let slot = self.nth(n, |slot| slot.session.is_some())?;
        let token = self.slots[slot].session.as_deref()?;
        authenticate(self.app, Some(&format!("Bearer {token}")))
            .await
            .ok()
    }

    async fn take(&mut self, step: Step) -> Result<(), TestCaseError> {
        match step {
            Step::Invite { by, who, owner } => {
                let Some(principal) = self.principal(by).await else {
                    return Ok(());
                };
                // Someone not in the account now: never invited, or removed.
                let truth = self.truth().await;
                let Some(who) = self.nth(who, |slot| {
                    slot.user_id
                        .is_none_or(|id| truth.get(&id).is_some_and(|p| p.role == REMOVED))
                }) else {
                    return Ok(());
                };
                let invitation = Invitation {
                    email: format!("p{who}@example.com"),
                    name: Some(format!("P{who}")),
                    role: Some(role(owner).as_str().to_owned()),
                };
                match invite(self.app, &principal, invitation).await {
                    Ok(Invited {
                        teammate: row,
                        link,
                        ..
                    }) => {
                        let token = link.split("token=").nth(1).unwrap().to_owned();
                        self.links.push(Link {
                            token: token.clone(),
                            invitee: row.id,
                            maker: Some(principal.user.id),
                        });
                        self.makers.insert(row.id, principal.user.id);
                        self.slots[who] = Slot {
                            user_id: Some(row.id),
                            session: None,
                            link: Some(token),
                        };
                        Ok(())
                    }
                    Err(err) => refused(err),
                }
            }
            Step::Accept { who } => {
                let Some(who) = self.nth(who, |slot| slot.link.is_some()) else {
                    return Ok(());
                };
                let (Some(user_id), Some(token)) =
                    (self.slots[who].user_id, self.slots[who].link.take())
                else {
                    return Ok(());
                };
                let mut tx = self.app.db.begin_write().await.unwrap();
                let taken = oauth::take_setup_link(&mut tx, &token, PASSWORD_HASH, time::now());
                match taken.await {
                    Ok(session) => {
                        tx.commit().await.unwrap();
                        crate::credentials::revoked(self.app).await;
                        self.sessions.push((user_id, session.clone()));
                        self.slots[who].session = Some(session);
                        Ok(())
                    }
                    Err(err) => refused(err),
                }
            }
            Step::Remove { by, who } => {
                let (Some(principal), Some(user_id)) =
                    (self.principal(by).await, self.slots[who].user_id)
                else {
                    return Ok(());
                };
                match remove(self.app, &principal, user_id).await {
                    Ok(()) => {
                        let truth = self.truth().await;
                        prop_assert_eq!(&truth[&user_id].role, REMOVED);
                        Ok(())
                    }
                    Err(err) => refused(err),
                }
            }
            Step::ChangeRole { by, who, owner } => {
                let (Some(principal), Some(user_id)) =
                    (self.principal(by).await, self.slots[who].user_id)
                else {
                    return Ok(());
                };
                match change_role(self.app, &principal, user_id, role(owner)).await {
                    Ok(row) => {
                        prop_assert_eq!(row.role.as_str(), role(owner).as_str());
                        let truth = self.truth().await;
                        prop_assert_eq!(truth[&user_id].role.as_str(), role(owner).as_str());
                        Ok(())
                    }
                    Err(err) => refused(err),
                }
            }
            Step::Approve { by } => {
                let Some(principal) = self.principal(by).await else {
                    return Ok(());
                };
                let challenge = base64::engine::general_purpose::URL_SAFE_NO_PAD
                    .encode(Sha256::digest(VERIFIER.as_bytes()));
                let approval = Approval {
                    client_id: &self.client_id,
                    redirect_uri: REDIRECT,
                    code_challenge: &challenge,
                    resource: None,
                    workspace_id: self.workspace_id,
                };
                match oauth::authorize(self.app, &principal, approval).await {
                    Ok(code) => {
                        self.codes.push((principal.user.id, code));
                        Ok(())
                    }
                    Err(err) => refused(err),
                }
            }
            Step::Exchange { code } => {
                if code >= self.codes.len() {
                    return Ok(());
                }
                let (user_id, code) = self.codes.remove(code);
                let exchange = Exchange {
                    grant_type: "authorization_code",
                    client_id: Some(&self.client_id),
                    code: Some(&code),
                    redirect_uri: Some(REDIRECT),
                    code_verifier: Some(VERIFIER),
                    refresh_token: None,
                    resource: None,
                };
                match oauth::exchange(self.app, exchange).await {
                    Ok(tokens) => {
                        self.apps.push((user_id, tokens.access_token));
                        Ok(())
                    }
                    Err(err) => refused(err),
                }
            }
        }
    }

    /// Every person of the account as the database has them.
    async fn truth(&self) -> HashMap<i64, Truth> {
        let rows: Vec<(i64, String, i64)> = sqlx::query_as(
            "SELECT id, role, CASE WHEN password_hash IS NULL THEN 0 ELSE 1 END
             FROM users WHERE account_id = $1",
        )
        .bind(self.account_id)
        .fetch_all(self.app.db.pool())
        .await
        .unwrap();
        rows.into_iter()
            .map(|(id, role, has_password)| {
                let has_password = has_password != 0;
                (id, Truth { role, has_password })
            })
            .collect()
    }

    /// Takes the link in a transaction rolled back: whether it would sign its person in.
    async fn link_is_live(&self, token: &str) -> bool {
        let mut tx = self.app.db.begin_write().await.unwrap();
        let taken = oauth::take_setup_link(&mut tx, token, PASSWORD_HASH, time::now()).await;
        tx.rollback().await.unwrap();
        match taken {
            Ok(_) => true,
            Err(Error::NotFound(_)) => false,
            Err(other) => panic!("{other:?}"),
        }
    }

    async fn check(&self) -> Result<(), TestCaseError> {
        let truth = self.truth().await;
        for (user_id, token) in &self.sessions {
            let person = &truth[user_id];
            let bearer = format!("Bearer {token}");
            match authenticate(self.app, Some(&bearer)).await {
                Ok(principal) => {
                    prop_assert_ne!(&person.role, REMOVED, "a removed person's session works");
                    prop_assert_eq!(
                        principal.may_manage_teammates().is_ok(),
                        person.role == OWNER,
                        "owner powers of a session whose person is now {}",
                        person.role
                    );
                }
                Err(Error::Unauthenticated) => {
                    prop_assert_eq!(&person.role, REMOVED, "a person's session ended");
                }
                Err(other) => return Err(TestCaseError::fail(format!("{other:?}"))),
            }
        }
        for (user_id, token) in &self.apps {
            let bearer = format!("Bearer {token}");
            if let Ok(principal) = authenticate(self.app, Some(&bearer)).await {
                let role = &truth[user_id].role;
                prop_assert_eq!(
                    role,
                    OWNER,
                    "an app acting for a person who is now {}",
                    role
                );
                prop_assert!(principal.is_owner().is_ok());
            }
        }
        for link in &self.links {
            if self.link_is_live(&link.token).await {
                prop_assert_ne!(
                    &truth[&link.invitee].role,
                    REMOVED,
                    "a removed person's link"
                );
                if let Some(maker) = link.maker {
                    let role = &truth[&maker].role;
                    prop_assert_eq!(role, OWNER, "a live link whose maker is now {}", role);
                }
            }
        }
        for (user_id, person) in &truth {
            if person.role == REMOVED {
                prop_assert!(!person.has_password, "a removed person keeps a password");
            } else if !person.has_password
                && let Some(maker) = self.makers.get(user_id)
            {
                let role = &truth[maker].role;
                prop_assert_eq!(
                    role,
                    OWNER,
                    "a pending invitation whose maker is now {}",
                    role
                );
            }
        }
        Ok(())
    }
}

#[test]
fn nobody_keeps_a_power_they_no_longer_have_whatever_the_order_of_invitations_and_changes() {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let (_dir, app) = runtime.block_on(crate::app::test_app());
    let mut runner = TestRunner::new(Config {
        cases: 256,
        // Failures found are kept in proptest-regressions/ and tried first from then on.
        source_file: Some(file!()),
        ..Config::default()
    });
    let cases = std::cell::Cell::new(0);
    runner
        .run(&proptest::collection::vec(step(), 1..40), |steps| {
            cases.set(cases.get() + 1);
            runtime.block_on(async {
                let mut world = World::new(&app, cases.get()).await;
                world.check().await?;
                for step in steps {
                    world.take(step).await?;
                    world.check().await?;
                }
                Ok(())
            })
        })
        .unwrap();
}
