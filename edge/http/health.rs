//! Health over HTTP for load balancers and orchestrators, with no credential:
//! - `GET /healthz`: the process is up and serving HTTP (nothing else is asked);
//! - `GET /readyz`: core answers, its database answers, writes reach its storage and every
//!   migration is applied (200), else 503 with what stands in the way; answered within
//!   [`READY_DEADLINE`] whatever core does (a paused core is "unreachable", not a hang).

use axum::Json;
use axum::Router;
use axum::extract::State;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use http::StatusCode;
use serde_json::json;

use crate::core_client::Core;

pub fn router() -> Router<Core> {
    Router::new()
        .route("/healthz", get(healthz))
        .route("/readyz", get(readyz))
}

async fn healthz() -> Response {
    Json(json!({"status": "ok"})).into_response()
}

/// The longest `/readyz` takes to answer.
pub const READY_DEADLINE: std::time::Duration = std::time::Duration::from_millis(1_500);

async fn readyz(State(core): State<Core>) -> Response {
    let mut operations = core.operations();
    let asked = operations.check_ready(lps::proto::CheckReadyRequest {});
    let answer = tokio::time::timeout(READY_DEADLINE, asked)
        .await
        .unwrap_or_else(|_| {
            Err(tonic::Status::deadline_exceeded(format!(
                "no answer within {} ms",
                READY_DEADLINE.as_millis()
            )))
        });
    let (ready, body) = match answer {
        Ok(answer) => {
            let answer = answer.into_inner();
            // What is applied is unknown while the database does not answer.
            let applied = answer.database_answers.then_some(answer.migrations_applied);
            (
                answer.ready,
                json!({
                    "status": if answer.ready { "ready" } else { "not_ready" },
                    "core": "ok",
                    "database": if answer.database_answers { "ok" } else { "failing" },
                    "migrations": {
                        "applied": applied,
                        "known": answer.migrations_known,
                    },
                    "problems": answer.problems,
                }),
            )
        }
        Err(status) => (
            false,
            json!({
                "status": "not_ready",
                "core": "unreachable",
                "problems": [format!("core does not answer: {}", status.message())],
            }),
        ),
    };
    let code = if ready {
        StatusCode::OK
    } else {
        StatusCode::SERVICE_UNAVAILABLE
    };
    let mut response = (code, Json(body)).into_response();
    response.headers_mut().insert(
        http::header::CACHE_CONTROL,
        http::HeaderValue::from_static("no-store"),
    );
    response
}
