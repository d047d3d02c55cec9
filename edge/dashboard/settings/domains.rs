//! A workspace's own domains in the dashboard (owners; linked from `/dashboard/settings`):
//! `/dashboard/domains` lists them with their status, why the last check did not pass, the two
//! DNS records to create and when they were and will be checked; a hostname is added
//! (`POST /dashboard/domains/create`: its TXT record's value is shown once, in its record, as a
//! new key is), checked at once (`POST /dashboard/domains/verify`, the outcome said after the
//! redirect) and deleted after a confirmation (`/dashboard/domains/delete`). A hostname core
//! refuses is shown again on the page with why, as typed.

use axum::extract::{Form, Query, State};
use axum::response::Response;
use http::{HeaderMap, StatusCode};
use lps::proto;
use serde::Serialize;

use super::Form_;
use crate::core_client::Core;
use crate::dashboard::{
    Confirmation, Notice, SCREENS, Settings, SignedForm, SignedIn, When, after_action,
    chosen_workspace, confirm, forged, gone, no_workspace, notice_of, number, redirect_with,
    screen_saying, unavailable, when,
};
use crate::http::html_page::{Link, message};
use crate::http::session_cookie::Session;

/// What a domain is now, as core says (`Domain.status`).
#[derive(Serialize, Clone, Copy, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub(in crate::dashboard) enum Status {
    /// Not yet proven: checked again with backoff.
    Pending,
    /// Proven: its pages are served on it.
    Verified,
    /// Its records were gone past the grace period: no longer served, checked again.
    Lapsed,
}

impl Status {
    /// Core's word for it; one it has not said before reads as not served.
    pub(in crate::dashboard) fn of(wire: &str) -> Self {
        match wire {
            "verified" => Self::Verified,
            "lapsed" => Self::Lapsed,
            _ => Self::Pending,
        }
    }

    fn label(self) -> &'static str {
        match self {
            Self::Pending => "Pending",
            Self::Verified => "Verified",
            Self::Lapsed => "Lapsed",
        }
    }
}

#[derive(Serialize)]
struct DomainsView {
    workspaces: Vec<(i64, String)>,
    workspace_id: i64,
    workspace: String,
    csrf: String,
    domains: Vec<DomainRow>,
    /// The add form's hostname: one core refused, as typed.
    hostname: String,
    /// Why core refused the hostname just posted.
    error: Option<String>,
}

#[derive(Serialize)]
struct DomainRow {
    id: i64,
    hostname: String,
    status: Status,
    status_label: &'static str,
    reason: Option<String>,
    txt_name: String,
    /// Only on the page the adding led to, once.
    txt_value: Option<String>,
    cname_target: String,
    added: Option<When>,
    verified: Option<When>,
    checked: Option<When>,
    /// Absent: not checked again by itself.
    next_check: Option<When>,
    /// Its certificate, when lps answers HTTPS itself.
    https: Option<HttpsRow>,
}

#[derive(Serialize)]
struct HttpsRow {
    /// `issued`, `ordering` or `failing` (`DomainHttps.status`).
    status: String,
    expires: Option<When>,
    reason: Option<String>,
    next_order: Option<When>,
}

fn row(domain: proto::Domain) -> DomainRow {
    let status = Status::of(&domain.status);
    DomainRow {
        id: domain.domain_id,
        status,
        status_label: status.label(),
        reason: domain.reason,
        txt_name: domain.txt_name,
        txt_value: domain.txt_value,
        cname_target: domain.cname_target,
        added: when(domain.created_at.as_ref()),
        verified: when(domain.verified_at.as_ref()),
        checked: when(domain.checked_at.as_ref()),
        next_check: when(domain.next_check_at.as_ref()),
        https: domain.https.map(|https| HttpsRow {
            status: https.status,
            expires: when(https.expires_at.as_ref()),
            reason: https.reason,
            next_order: when(https.next_order_at.as_ref()),
        }),
        hostname: domain.hostname,
    }
}

/// The domains page of a workspace (the person's first without one).
fn domains_address(workspace_id: Option<i64>) -> String {
    match workspace_id {
        Some(id) => format!("/dashboard/domains?workspace_id={id}"),
        None => "/dashboard/domains".to_owned(),
    }
}

async fn domains_view(
    core: &Core,
    session: &Session,
    person: &proto::GetSessionResponse,
    workspace: &proto::SessionWorkspace,
) -> Result<DomainsView, tonic::Status> {
    let domains = core
        .workspaces()
        .list_domains(session.request(proto::ListDomainsRequest {
            workspace_id: Some(workspace.id),
        }))
        .await?
        .into_inner()
        .domains;
    Ok(DomainsView {
        workspaces: person
            .workspaces
            .iter()
            .map(|w| (w.id, w.name.clone()))
            .collect(),
        workspace_id: workspace.id,
        workspace: workspace.name.clone(),
        csrf: person.csrf_token.clone(),
        domains: domains.into_iter().map(row).collect(),
        hostname: String::new(),
        error: None,
    })
}

/// What a member sees instead: core answers a workspace's domains to its owners only.
fn owners_only() -> Response {
    message(
        StatusCode::FORBIDDEN,
        "Refused",
        "A workspace's domains are managed by an owner of the workspace.",
        Some(Link {
            href: "/dashboard/settings",
            text: "Back to Settings",
        }),
    )
}

/// The page, or what to show instead of it.
async fn domains_page(
    core: &Core,
    session: &Session,
    person: &proto::GetSessionResponse,
    workspace: &proto::SessionWorkspace,
) -> Result<DomainsView, Response> {
    match domains_view(core, session, person, workspace).await {
        Ok(view) => Ok(view),
        Err(status) if status.code() == tonic::Code::PermissionDenied => Err(owners_only()),
        Err(status) => Err(unavailable(&status)),
    }
}

pub async fn page(
    State(core): State<Core>,
    SignedIn(session, person): SignedIn,
    headers: HeaderMap,
    Query(query): Query<Form_>,
) -> Response {
    let Some(workspace) = chosen_workspace(&query, &person) else {
        return no_workspace("Domains");
    };
    let mut view = match domains_page(&core, &session, &person, workspace).await {
        Ok(view) => view,
        Err(instead) => return instead,
    };
    // Just added (`added` names it): its TXT value, which the notice carries, is shown in its
    // record rather than above it.
    let mut notice = notice_of(&headers);
    if let (Some(added), Some(notice)) = (number(&query, "added"), notice.as_mut())
        && let Some(domain) = view.domains.iter_mut().find(|d| d.id == added)
    {
        domain.txt_value = notice.secret.take();
    }
    screen_saying(notice, "Domains", "domains.html", view)
}

/// Adds a hostname. Refused (not a name one workspace can own, already added, too many), the
/// page again with why and the hostname as typed; else back to the page, the TXT value shown
/// once. The person is read too, as the page shown again needs them.
pub async fn create(
    State(core): State<Core>,
    axum::Extension(settings): Settings,
    SignedIn(session, person): SignedIn,
    Form(form): Form<Form_>,
) -> Response {
    if let Some(refusal) = forged(&person, &form) {
        return refusal;
    }
    let workspace_id = number(&form, "workspace_id");
    let hostname = form.get("hostname").cloned().unwrap_or_default();
    let request = proto::CreateDomainRequest {
        workspace_id,
        hostname: Some(hostname.clone()),
    };
    let refused = match core
        .workspaces()
        .create_domain(session.request(request))
        .await
    {
        Ok(domain) => {
            let domain = domain.into_inner();
            let notice = Notice {
                alert: false,
                text: format!(
                    "{} was added: create its two DNS records below. Copy the TXT record's \
                     value now: it is shown only once.",
                    domain.hostname
                ),
                secret: domain.txt_value,
            };
            let to = format!(
                "{}&added={}",
                domains_address(Some(domain.workspace_id)),
                domain.domain_id
            );
            return redirect_with(&settings, &to, &notice);
        }
        Err(status) => status,
    };
    let code = match refused.code() {
        tonic::Code::InvalidArgument => StatusCode::UNPROCESSABLE_ENTITY,
        tonic::Code::FailedPrecondition => StatusCode::CONFLICT,
        _ => {
            return redirect_with(
                &settings,
                &domains_address(workspace_id),
                &Notice::alert(refused.message()),
            );
        }
    };
    let Some(workspace) = chosen_workspace(&form, &person) else {
        return no_workspace("Domains");
    };
    match domains_page(&core, &session, &person, workspace).await {
        Ok(mut view) => {
            view.hostname = hostname;
            view.error = Some(refused.message().to_owned());
            SCREENS.page(code, "Domains", "domains.html", view)
        }
        Err(instead) => instead,
    }
}

/// Looks at a domain's records now; the page says what was found.
pub async fn verify(
    State(core): State<Core>,
    axum::Extension(settings): Settings,
    SignedForm(session, form): SignedForm,
) -> Response {
    let (workspace_id, request) = domain_of(&form);
    let notice = match core
        .workspaces()
        .verify_domain(session.request(request))
        .await
    {
        Ok(domain) => checked_notice(&domain.into_inner()),
        Err(status) => Notice::alert(status.message()),
    };
    redirect_with(&settings, &domains_address(workspace_id), &notice)
}

/// What a check found, in words: verified, or not (yet) and why.
fn checked_notice(domain: &proto::Domain) -> Notice {
    let host = &domain.hostname;
    let why = domain
        .reason
        .as_deref()
        .unwrap_or("Its records were not found.");
    match (Status::of(&domain.status), &domain.reason) {
        (Status::Verified, None) => {
            Notice::news(&format!("{host} is verified: its pages are served on it."))
        }
        (Status::Verified, Some(_)) => Notice::alert(&format!(
            "{host} is still served, but its records are not right now. {why} Unless they are \
             fixed, it lapses after its grace period."
        )),
        (Status::Pending, _) => Notice::alert(&format!("{host} is still pending. {why}")),
        (Status::Lapsed, _) => Notice::alert(&format!(
            "{host} has lapsed: its pages are not served on it. {why}"
        )),
    }
}

/// A step before deleting a domain.
pub async fn confirm_delete(
    State(core): State<Core>,
    SignedIn(session, person): SignedIn,
    Query(query): Query<Form_>,
) -> Response {
    let not_there = || gone("This domain does not exist any more.");
    let (Some(workspace_id), Some(domain_id)) =
        (number(&query, "workspace_id"), number(&query, "domain_id"))
    else {
        return not_there();
    };
    let domains = match core
        .workspaces()
        .list_domains(session.request(proto::ListDomainsRequest {
            workspace_id: Some(workspace_id),
        }))
        .await
    {
        Ok(reply) => reply.into_inner().domains,
        Err(status) if status.code() == tonic::Code::PermissionDenied => Vec::new(),
        Err(status) => return unavailable(&status),
    };
    let Some(domain) = domains.into_iter().find(|d| d.domain_id == domain_id) else {
        return not_there();
    };
    confirm(
        "Delete a domain",
        Confirmation {
            question: format!("Delete the domain {}?", domain.hostname),
            consequence: "If it is verified, the workspace's pages stop being served on it at once. Added again, it has a new TXT value, and its record must be changed.",
            action: "/dashboard/domains/delete",
            csrf: person.csrf_token,
            fields: vec![
                ("workspace_id", workspace_id.to_string()),
                ("domain_id", domain_id.to_string()),
            ],
            button: "Delete the domain",
            back: domains_address(Some(workspace_id)),
        },
    )
}

pub async fn delete(
    State(core): State<Core>,
    axum::Extension(settings): Settings,
    SignedForm(session, form): SignedForm,
) -> Response {
    let (workspace_id, request) = domain_of(&form);
    let outcome = core
        .workspaces()
        .delete_domain(session.request(request))
        .await;
    after_action(
        &settings,
        &domains_address(workspace_id),
        outcome,
        "The domain was deleted: the workspace's pages are not served on it any more.",
    )
}

/// The domain a form names, and its workspace (where the person goes back to).
fn domain_of(form: &Form_) -> (Option<i64>, proto::DomainRequest) {
    let workspace_id = number(form, "workspace_id");
    let request = proto::DomainRequest {
        workspace_id,
        domain_id: number(form, "domain_id"),
    };
    (workspace_id, request)
}
