//! The REST face under `/api/external/v1`: the operations of `operations/` as HTTP routes
//! (their input read from the query string and body, `read.rs`), `Idempotency-Key` on every
//! POST (`idempotency.rs`), the OpenAPI document at `{BASE_PATH}/openapi.json`, and the JSON
//! refusals of the router itself (`fallback.rs`).

pub mod fallback;
pub mod idempotency;
mod read;

use axum::Router;
use axum::response::IntoResponse;
use axum::routing::get;

use crate::core_client::Core;
use crate::operations::BASE_PATH;

/// The API's routes with the idempotency guard, and its OpenAPI document.
pub fn router(routes: Router<Core>, document: &serde_json::Value, core: Core) -> Router<Core> {
    // Serialised once and shared: a handler's captured state is cloned with the router for
    // every connection, so it must be cheap to clone.
    let served =
        axum::body::Bytes::from(serde_json::to_vec(document).expect("the document serialises"));
    routes
        .layer(idempotency::GuardLayer { core })
        // No credential: a proxy asks it (`operations/domains.rs`).
        .route(
            &format!("{BASE_PATH}/domains/ask"),
            get(crate::operations::domains::ask),
        )
        .route(
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
        )
}
