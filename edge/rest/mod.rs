//! The REST API under `/api/external/v1`: one module per path group of the specification,
//! merged here into one router whose OpenAPI document is built from the same handlers.

mod account;
mod api_tokens;
mod audiences;
mod automation;
mod campaigns;
mod enrichment;
pub mod error;
pub mod idempotency;
mod identity;
mod input;
mod leads;
mod metadata;
mod openapi;
mod pages;
mod templates;
mod workspaces;

use axum::Router;
use axum::response::IntoResponse;
use axum::routing::get;
use utoipa_axum::router::OpenApiRouter;

use crate::core_client::Core;

/// Where the API lives.
pub const BASE_PATH: &str = "/api/external/v1";

/// The largest request body accepted (bulk lead upserts are the big ones); beyond it, 413.
/// Messages between edge and core may be as large ([`lps::grpc::MAX_MESSAGE_BYTES`]).
pub const BODY_LIMIT_BYTES: usize = 16 * 1024 * 1024;
const _: () = assert!(BODY_LIMIT_BYTES <= lps::grpc::MAX_MESSAGE_BYTES);

/// The whole REST API under [`BASE_PATH`], translating to core's gRPC services, with its
/// OpenAPI document at `{BASE_PATH}/openapi.json`; the document is returned too (the MCP
/// face's tools are made from it).
pub fn router() -> (Router<Core>, serde_json::Value) {
    let api = OpenApiRouter::new()
        // Account
        .merge(account::router())
        // Audiences
        .merge(audiences::router())
        // API tokens
        .merge(identity::router())
        .merge(api_tokens::router())
        // Campaigns, brandings
        .merge(campaigns::router())
        // Leads
        .merge(leads::router())
        .merge(enrichment::router())
        // Pages (design), templates
        .merge(pages::router())
        .merge(templates::router())
        // Workspaces
        .merge(workspaces::router())
        // Workflow-automation group
        .merge(automation::router());
    let (api, document) = OpenApiRouter::new().nest(BASE_PATH, api).split_for_parts();
    // Serialised once and shared: a handler's captured state is cloned with the router for
    // every connection, so it must be cheap to clone.
    let document = openapi::document_json(document);
    let served =
        axum::body::Bytes::from(serde_json::to_vec(&document).expect("the document serialises"));
    let api = api.route(
        &format!("{BASE_PATH}/openapi.json"),
        get(move || {
            std::future::ready(
                (
                    [(http::header::CONTENT_TYPE, "application/json")],
                    served.clone(),
                )
                    .into_response(),
            )
        }),
    );
    (api, document)
}
