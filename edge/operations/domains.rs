//! Extensions: a workspace's own domains for its pages, `POST /domains/create`,
//! `POST /domains/verify`, `GET /domains/get-list`, `POST /domains/delete` (owners only); and
//! `GET /domains/ask?domain=` (no credential: whether a hostname is served, for a proxy's
//! on-demand TLS), which `rest/mod.rs` routes outside the table.

use lps::{proto, wire};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::caller::{Caller, Reply};
use super::error::{ApiError, ErrorBody};
use super::input::{Input, Lenient};
use super::workspaces::WorkspaceQuery;

/// A hostname a workspace's pages are served on.
#[derive(Serialize, ToSchema)]
pub struct DomainBody {
    pub domain_id: i64,
    pub workspace_id: i64,
    #[schema(example = "go.example.com")]
    pub hostname: String,
    /// `pending` (not yet proven; checked again with backoff until it passes), `verified`
    /// (served) or `lapsed` (its records were gone past the three days' grace: no longer
    /// served; checked again).
    #[schema(example = "pending")]
    pub status: String,
    /// Why the last check did not pass; for a verified domain, what is wrong now while it is
    /// still served.
    pub reason: Option<String>,
    /// The TXT record to create: its name...
    #[schema(example = "_lps-challenge.go.example.com")]
    pub txt_name: String,
    /// ...and its value, answered by `/domains/create` only (keep it until the record exists;
    /// if it is lost, delete the domain and add it again).
    #[schema(example = "lps-verify=3q2+7w...")]
    pub txt_value: Option<String>,
    /// Where the hostname's CNAME points (or give it the same A/AAAA records as this host).
    #[schema(example = "lps.example.com")]
    pub cname_target: String,
    pub created_at: String,
    pub verified_at: Option<String>,
    pub checked_at: Option<String>,
    /// When it is checked again by itself (absent: not any more).
    pub next_check_at: Option<String>,
    /// Extension: its certificate, when this lps answers HTTPS itself (`--https`) and the
    /// domain is verified; `null` otherwise (behind a proxy, the certificates are the proxy's).
    pub https: Option<DomainHttpsBody>,
}

/// Where a domain's certificate stands.
#[derive(Serialize, ToSchema)]
pub struct DomainHttpsBody {
    /// `issued` (its pages answer over HTTPS), `ordering` (the first order not done yet) or
    /// `failing` (the last order failed: `reason`; ordered again at `next_order_at`; one
    /// issued before stays served).
    #[schema(example = "issued")]
    pub status: String,
    /// When the certificate answered with ends (renewed 30 days before).
    pub expires_at: Option<String>,
    pub reason: Option<String>,
    pub next_order_at: String,
}

impl From<proto::Domain> for DomainBody {
    fn from(d: proto::Domain) -> Self {
        let at = |t: Option<prost_types::Timestamp>| t.as_ref().map(wire::iso8601);
        Self {
            domain_id: d.domain_id,
            workspace_id: d.workspace_id,
            hostname: d.hostname,
            status: d.status,
            reason: d.reason,
            txt_name: d.txt_name,
            txt_value: d.txt_value,
            cname_target: d.cname_target,
            created_at: at(d.created_at).unwrap_or_default(),
            verified_at: at(d.verified_at),
            checked_at: at(d.checked_at),
            next_check_at: at(d.next_check_at),
            https: d.https.map(|https| DomainHttpsBody {
                status: https.status,
                expires_at: at(https.expires_at),
                reason: https.reason,
                next_order_at: at(https.next_order_at).unwrap_or_default(),
            }),
        }
    }
}

#[derive(Serialize, ToSchema)]
pub struct DomainsBody {
    pub domains: Vec<DomainBody>,
}

#[derive(Debug, Default, Deserialize, ToSchema)]
pub struct CreateDomainRequest {
    #[schema(value_type = i64)]
    pub workspace_id: Lenient<i64>,
    /// A domain name (`go.example.com`; an internationalised one is kept in its ASCII form).
    /// Refused: an IP address, a public suffix (`co.uk`, `github.io`), this server's own host.
    #[schema(value_type = String, max_length = 253, example = "go.example.com")]
    pub hostname: Lenient<String>,
}

/// Extension: adds a domain to the workspace (owners only), pending until its DNS records
/// are found: a TXT record `txt_name` holding `txt_value` (answered here only), and a CNAME to
/// `cname_target` (or the same A/AAAA records). At most 20 a workspace.
#[utoipa::path(post, path = "/domains/create", tag = "Domains",
    request_body = CreateDomainRequest,
    responses((status = 200, body = DomainBody),
        (status = 403, body = ErrorBody),
        (status = 409, body = ErrorBody, description = "The workspace has this hostname, or 20 domains"),
        (status = 422, body = ErrorBody)))]
pub(super) async fn create(
    caller: Caller,
    Input(body, mut check): Input<CreateDomainRequest>,
) -> Result<Reply<DomainBody>, ApiError> {
    let request = proto::CreateDomainRequest {
        workspace_id: check.field("workspace_id", body.workspace_id),
        hostname: check.field("hostname", body.hostname),
    };
    caller
        .call(
            check,
            request,
            |core, request| async move { core.workspaces().create_domain(request).await },
            DomainBody::from,
        )
        .await
}

#[derive(Debug, Default, Deserialize, ToSchema)]
pub struct DomainRequest {
    #[schema(value_type = i64)]
    pub workspace_id: Lenient<i64>,
    #[schema(value_type = i64)]
    pub domain_id: Lenient<i64>,
}

/// Extension: looks up the domain's records now (owners only): `status` is `verified` once
/// both are found, else `pending` (or `lapsed`) with the `reason`. lps also checks by itself,
/// with backoff, until the domain is verified.
#[utoipa::path(post, path = "/domains/verify", tag = "Domains",
    request_body = DomainRequest,
    responses((status = 200, body = DomainBody),
        (status = 403, body = ErrorBody),
        (status = 404, body = ErrorBody, description = "Domain not found"),
        (status = 422, body = ErrorBody)))]
pub(super) async fn verify(
    caller: Caller,
    Input(body, mut check): Input<DomainRequest>,
) -> Result<Reply<DomainBody>, ApiError> {
    let request = proto::DomainRequest {
        workspace_id: check.field("workspace_id", body.workspace_id),
        domain_id: check.field("domain_id", body.domain_id),
    };
    caller
        .call(
            check,
            request,
            |core, request| async move { core.workspaces().verify_domain(request).await },
            DomainBody::from,
        )
        .await
}

/// Extension: the workspace's domains, oldest first (owners only).
#[utoipa::path(get, path = "/domains/get-list", tag = "Domains",
    params(WorkspaceQuery),
    responses((status = 200, body = DomainsBody),
        (status = 403, body = ErrorBody),
        (status = 422, body = ErrorBody)))]
pub(super) async fn get_list(
    caller: Caller,
    Input(query, mut check): Input<WorkspaceQuery>,
) -> Result<Reply<DomainsBody>, ApiError> {
    let request = proto::ListDomainsRequest {
        workspace_id: check.field("workspace_id", query.workspace_id),
    };
    caller
        .call(
            check,
            request,
            |core, request| async move { core.workspaces().list_domains(request).await },
            |r| DomainsBody {
                domains: r.domains.into_iter().map(DomainBody::from).collect(),
            },
        )
        .await
}

#[derive(Serialize, ToSchema)]
pub struct DeletedDomainBody {
    pub domain_id: i64,
}

/// Extension: deletes a domain (owners only): its pages are no longer served on it, and its
/// campaigns' page addresses go back to this server's own.
#[utoipa::path(post, path = "/domains/delete", tag = "Domains",
    request_body = DomainRequest,
    responses((status = 200, body = DeletedDomainBody),
        (status = 403, body = ErrorBody),
        (status = 404, body = ErrorBody, description = "Domain not found"),
        (status = 422, body = ErrorBody)))]
pub(super) async fn delete(
    caller: Caller,
    Input(body, mut check): Input<DomainRequest>,
) -> Result<Reply<DeletedDomainBody>, ApiError> {
    let domain_id = body.domain_id.clone();
    let request = proto::DomainRequest {
        workspace_id: check.field("workspace_id", body.workspace_id),
        domain_id: check.field("domain_id", domain_id),
    };
    let asked = request.domain_id.unwrap_or_default();
    caller
        .call(
            check,
            request,
            |core, request| async move { core.workspaces().delete_domain(request).await },
            move |_| DeletedDomainBody { domain_id: asked },
        )
        .await
}

/// `GET /domains/ask?domain=go.example.com` (no credential; at most `--rate-limit-per-minute`
/// a minute per address): 200 when the hostname is a verified domain lps serves, else 404. A
/// proxy's on-demand TLS asks it before it orders a certificate for a name (Caddy's
/// `on_demand_tls { ask ... }`), so a stranger's SNI cannot make it ask a CA for anything.
pub async fn ask(
    axum::extract::State(core): axum::extract::State<crate::core_client::Core>,
    axum::Extension(crate::http::client_address::ClientAddress(client)): axum::Extension<
        crate::http::client_address::ClientAddress,
    >,
    axum::extract::Query(query): axum::extract::Query<std::collections::BTreeMap<String, String>>,
) -> axum::response::Response {
    use axum::response::IntoResponse;
    let Some(domain) = query
        .get("domain")
        .map(|d| d.trim().to_owned())
        .filter(|d| !d.is_empty() && d.len() <= 253 && !d.chars().any(char::is_control))
    else {
        let message = "The domain field is required (a hostname of at most 253 characters).";
        return (
            http::StatusCode::UNPROCESSABLE_ENTITY,
            axum::Json(serde_json::json!({
                "message": message,
                "errors": { "domain": [message] },
            })),
        )
            .into_response();
    };
    let request = proto::AskDomainRequest {
        hostname: domain.clone(),
        ip_address: client.to_string(),
    };
    match core.visitor().ask_domain(request).await {
        Ok(answer) if answer.get_ref().served => (
            http::StatusCode::OK,
            axum::Json(serde_json::json!({ "domain": domain, "served": true })),
        )
            .into_response(),
        Ok(_) => (
            http::StatusCode::NOT_FOUND,
            axum::Json(serde_json::json!({
                "message": format!("{domain} is not a verified domain of this server.")
            })),
        )
            .into_response(),
        Err(status) => ApiError::from(status).into_response(),
    }
}
