//! `/dashboard/settings`: a workspace's brandings (created and edited) and its hot threshold
//! and time zone (`/dashboard/workspace/settings`), and for owners its API keys (created:
//! shown once; deleted after a confirmation), the apps connected through OAuth (revoked after
//! a confirmation), credits (remaining, this workspace's use, the ledger's latest entries),
//! teammates (listed here; invited and removed in `teammates.rs`), notification channels
//! (`notifications.rs`) and a link to the workspace's own domains (`domains.rs`, a page of
//! their own). Members see the brandings (created and edited in `brandings.rs`) and
//! the workspace's settings, which only owners change.

use std::collections::BTreeMap;

use axum::extract::{Query, State};
use axum::response::Response;
use http::HeaderMap;
use lps::proto;
use serde::Serialize;

use super::{
    Confirmation, Notice, Settings, SignedForm, SignedIn, When, after_action, chosen_workspace,
    confirm, gone, number, plural, redirect_with, screen, settings_address, teammates, unavailable,
    when, when_micros,
};
use crate::core_client::Core;
use crate::http::session_cookie::Session;

mod brandings;
mod domains;
mod notifications;

pub use brandings::{branding_form, create_branding, update_branding};
pub(super) use domains::Status as DomainStatus;
pub use domains::{
    confirm_delete as confirm_delete_domain, create as create_domain, delete as delete_domain,
    page as domains_page, verify as verify_domain,
};
pub use notifications::{
    confirm_delete as confirm_delete_channel, create as create_channel, delete as delete_channel,
    test as test_channel,
};

type Form_ = BTreeMap<String, String>;

#[derive(Serialize)]
struct SettingsView {
    workspaces: Vec<(i64, String)>,
    workspace_id: i64,
    workspace: String,
    csrf: String,
    owner: bool,
    plan: String,
    brandings: Vec<BrandingRow>,
    keys: Vec<KeyRow>,
    apps: Vec<AppRow>,
    credits: Option<CreditsView>,
    teammates: Vec<teammates::TeammateRow>,
    channels: Vec<notifications::ChannelRow>,
    events: Vec<notifications::EventChoice>,
    /// Whether the server sends email (email channels offered).
    email: bool,
    me: i64,
    /// The workspace's own settings (owners change them).
    hot_score: String,
    hot_score_is_default: bool,
    time_zone: String,
    /// Every IANA time zone name, to pick from.
    zones: Vec<String>,
    /// The person's own time zone; empty: their browser's.
    my_time_zone: String,
}

#[derive(Serialize)]
struct BrandingRow {
    id: i64,
    name: String,
    default: bool,
    company: String,
    color: String,
}

#[derive(Serialize)]
struct KeyRow {
    id: String,
    name: String,
    created_by: String,
    last_used: Option<When>,
}

#[derive(Serialize)]
struct AppRow {
    id: String,
    app: String,
    workspace: String,
    created: When,
    last_used: Option<When>,
}

#[derive(Serialize)]
struct CreditsView {
    remaining: String,
    used: String,
    limit: String,
    renews: Option<When>,
    entries: Vec<(String, String, Option<When>)>,
}

pub async fn page(
    State(core): State<Core>,
    SignedIn(session, person): SignedIn,
    headers: HeaderMap,
    Query(query): Query<Form_>,
) -> Response {
    let Some(workspace) = chosen_workspace(&query, &person) else {
        return super::no_workspace("Settings");
    };
    match settings_view(&core, &session, &person, workspace).await {
        Ok(view) => screen(&headers, "Settings", "settings.html", view),
        Err(status) => unavailable(&status),
    }
}

async fn settings_view(
    core: &Core,
    session: &Session,
    person: &proto::GetSessionResponse,
    workspace: &proto::SessionWorkspace,
) -> Result<SettingsView, tonic::Status> {
    let owner = person.role != "member";
    let id = Some(workspace.id);
    let brandings = core
        .campaigns()
        .list_brandings(session.request(proto::ListBrandingsRequest { workspace_id: id }))
        .await?
        .into_inner()
        .brandings
        .into_iter()
        .map(|b| BrandingRow {
            id: b.branding_id,
            name: b.name,
            default: b.is_default,
            company: b.company_name.unwrap_or_default(),
            color: b.primary_color.unwrap_or_default(),
        })
        .collect();
    let mut view = SettingsView {
        workspaces: person
            .workspaces
            .iter()
            .map(|w| (w.id, w.name.clone()))
            .collect(),
        workspace_id: workspace.id,
        workspace: workspace.name.clone(),
        csrf: person.csrf_token.clone(),
        owner,
        plan: person.plan.clone(),
        brandings,
        keys: Vec::new(),
        apps: Vec::new(),
        credits: None,
        teammates: Vec::new(),
        channels: Vec::new(),
        events: notifications::event_choices(),
        email: person.sends_email,
        me: person.user_id,
        hot_score: String::new(),
        hot_score_is_default: true,
        time_zone: String::new(),
        zones: jiff::tz::db()
            .available()
            .map(|name| name.as_str().to_owned())
            .collect(),
        my_time_zone: person.time_zone.clone(),
    };
    let settings = core
        .workspaces()
        .get_workspace_settings(
            session.request(proto::GetWorkspaceSettingsRequest { workspace_id: id }),
        )
        .await?
        .into_inner();
    view.hot_score = format!("{}", settings.hot_score);
    view.hot_score_is_default = settings.hot_score_is_default;
    view.time_zone = settings.time_zone;
    if !owner {
        return Ok(view);
    }
    view.keys = core
        .api_tokens()
        .list_api_tokens(session.request(proto::ListApiTokensRequest { workspace_id: id }))
        .await?
        .into_inner()
        .tokens
        .into_iter()
        .filter(|key| key.workspace_id == id)
        .map(|key| KeyRow {
            last_used: when(key.last_used_at.as_ref()),
            id: key.id,
            name: key.name,
            created_by: key.created_by,
        })
        .collect();
    view.apps = core
        .oauth()
        .list_grants(session.request(proto::ListGrantsRequest {}))
        .await?
        .into_inner()
        .grants
        .into_iter()
        .map(|grant| AppRow {
            created: when_micros(grant.created_at_micros),
            last_used: grant.last_used_at_micros.map(when_micros),
            id: grant.id,
            app: grant.client_name,
            workspace: grant.workspace_name,
        })
        .collect();
    let credits = core
        .account()
        .get_credits(session.request(proto::GetCreditsRequest { workspace_id: id }))
        .await?
        .into_inner();
    view.credits = Some(CreditsView {
        remaining: plural(credits.remaining, "credit", "credits"),
        used: plural(credits.workspace_used, "credit", "credits"),
        limit: credits
            .workspace_limit
            .map(|n| format!("capped at {}", plural(n, "credit", "credits")))
            .unwrap_or_else(|| "no cap".to_owned()),
        renews: when(credits.renews_at.as_ref()),
        entries: credits
            .recent_entries
            .iter()
            .map(|e| {
                let what = match e.reason.as_str() {
                    "design_run" => "AI design run",
                    "design_run_refund" => "AI design run given back",
                    "grant" => "Granted",
                    "renewal" => "Renewed",
                    other => other,
                };
                (
                    format!("{:+}", e.amount),
                    what.to_owned(),
                    when(e.created_at.as_ref()),
                )
            })
            .collect(),
    });
    view.teammates = teammates::list(core, session).await?;
    view.channels = notifications::list(core, session, workspace.id).await?;
    Ok(view)
}

/// A person chooses their own time zone (or, empty, their browser's): saved in core, and
/// told to the page's script by its cookies.
pub async fn update_my_time_zone(
    State(core): State<Core>,
    axum::Extension(settings): Settings,
    SignedForm(session, form): SignedForm,
) -> Response {
    let workspace_id = number(&form, "workspace_id");
    let request = proto::SetTimeZoneRequest {
        time_zone: form.get("my_time_zone").cloned(),
    };
    match core.oauth().set_time_zone(session.request(request)).await {
        Ok(reply) => {
            let zone = reply.into_inner().time_zone;
            let said = if zone.is_empty() {
                "Times and days now follow your browser's time zone.".to_owned()
            } else {
                format!("Times and days are now shown in {zone}.")
            };
            let mut response = redirect_with(
                &settings,
                &settings_address(workspace_id),
                &Notice::news(&said),
            );
            for cookie in crate::http::session_cookie::own_time_zone(&zone, settings.secure_cookies)
            {
                if let Ok(value) = http::HeaderValue::from_str(&cookie) {
                    response
                        .headers_mut()
                        .append(http::header::SET_COOKIE, value);
                }
            }
            response
        }
        Err(status) => redirect_with(
            &settings,
            &settings_address(workspace_id),
            &Notice::alert(status.message()),
        ),
    }
}

/// An owner changes the workspace's hot threshold and time zone.
pub async fn update_workspace(
    State(core): State<Core>,
    axum::Extension(settings): Settings,
    SignedForm(session, form): SignedForm,
) -> Response {
    let workspace_id = number(&form, "workspace_id");
    let hot_score = form.get("hot_score").map(|v| v.trim());
    let hot_score = match hot_score.filter(|v| !v.is_empty()).map(str::parse::<f64>) {
        Some(Ok(score)) => Some(score),
        // Not a number: core says what it must be.
        Some(Err(_)) => Some(f64::NAN),
        None => None,
    };
    let request = proto::UpdateWorkspaceSettingsRequest {
        workspace_id,
        hot_score,
        time_zone: form.get("time_zone").cloned(),
    };
    let outcome = core
        .workspaces()
        .update_workspace_settings(session.request(request))
        .await;
    after_action(
        &settings,
        &settings_address(workspace_id),
        outcome,
        "The workspace's settings were saved.",
    )
}

pub async fn create_key(
    State(core): State<Core>,
    axum::Extension(settings): Settings,
    SignedForm(session, form): SignedForm,
) -> Response {
    let workspace_id = number(&form, "workspace_id");
    let request = proto::GenerateApiTokenRequest {
        name: form.get("name").cloned(),
        workspace_id,
    };
    let notice = match core
        .api_tokens()
        .generate_api_token(session.request(request))
        .await
    {
        Ok(reply) => Notice {
            alert: false,
            text: "Your new key (copy it now: it is shown only once):".to_owned(),
            secret: Some(reply.into_inner().token),
        },
        Err(status) => Notice::alert(status.message()),
    };
    redirect_with(&settings, &settings_address(workspace_id), &notice)
}

pub async fn delete_key(
    State(core): State<Core>,
    axum::Extension(settings): Settings,
    SignedForm(session, form): SignedForm,
) -> Response {
    let request = proto::DeleteApiTokenRequest {
        token_id: form.get("token_id").cloned(),
    };
    let outcome = core
        .api_tokens()
        .delete_api_token(session.request(request))
        .await;
    after_action(
        &settings,
        "/dashboard/settings",
        outcome,
        "The key was deleted.",
    )
}

pub async fn revoke_app(
    State(core): State<Core>,
    axum::Extension(settings): Settings,
    SignedForm(session, form): SignedForm,
) -> Response {
    let request = proto::RevokeGrantRequest {
        grant_id: form.get("grant_id").cloned(),
    };
    let outcome = core.oauth().revoke_grant(session.request(request)).await;
    after_action(
        &settings,
        "/dashboard/settings",
        outcome,
        "The app's access was revoked.",
    )
}

/// A step before deleting a key: what it is and what deleting does, then the form.
pub async fn confirm_delete_key(
    State(core): State<Core>,
    SignedIn(session, person): SignedIn,
    Query(query): Query<Form_>,
) -> Response {
    let wanted = query.get("token_id").cloned().unwrap_or_default();
    let mut found = None;
    for workspace in &person.workspaces {
        let keys = core
            .api_tokens()
            .list_api_tokens(session.request(proto::ListApiTokensRequest {
                workspace_id: Some(workspace.id),
            }))
            .await;
        match keys {
            Ok(keys) => {
                if let Some(key) = keys
                    .into_inner()
                    .tokens
                    .into_iter()
                    .find(|k| k.id == wanted)
                {
                    found = Some(key);
                    break;
                }
            }
            // A member reaches no keys.
            Err(status) if status.code() == tonic::Code::PermissionDenied => break,
            Err(status) => return unavailable(&status),
        }
    }
    let Some(key) = found else {
        return gone("This key does not exist any more.");
    };
    confirm(
        "Delete a key",
        Confirmation {
            question: format!("Delete the key \u{201c}{}\u{201d}?", key.name),
            consequence: "Every integration using it is refused from its next request. This cannot be undone.",
            action: "/dashboard/keys/delete",
            csrf: person.csrf_token,
            fields: vec![("token_id", key.id)],
            button: "Delete the key",
            back: "/dashboard".to_owned(),
        },
    )
}

/// A step before revoking an app's access.
pub async fn confirm_revoke_app(
    State(core): State<Core>,
    SignedIn(session, person): SignedIn,
    Query(query): Query<Form_>,
) -> Response {
    let wanted = query.get("grant_id").cloned().unwrap_or_default();
    let grants = core
        .oauth()
        .list_grants(session.request(proto::ListGrantsRequest {}))
        .await;
    let grant = match grants {
        Ok(grants) => grants
            .into_inner()
            .grants
            .into_iter()
            .find(|g| g.id == wanted),
        Err(status) if status.code() == tonic::Code::PermissionDenied => None,
        Err(status) => return unavailable(&status),
    };
    let Some(grant) = grant else {
        return gone("This app is not connected any more.");
    };
    confirm(
        "Disconnect an app",
        Confirmation {
            question: format!(
                "Revoke \u{201c}{}\u{201d}\u{2019}s access to {}?",
                grant.client_name, grant.workspace_name
            ),
            consequence: "Its access and refresh tokens stop working from its next request; to connect again, someone must approve it again.",
            action: "/dashboard/apps/revoke",
            csrf: person.csrf_token,
            fields: vec![("grant_id", grant.id)],
            button: "Revoke access",
            back: "/dashboard".to_owned(),
        },
    )
}
