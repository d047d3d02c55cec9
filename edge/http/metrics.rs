//! `GET /metrics`: this process's metrics in the Prometheus text format (see `lps::metrics`
//! for what is measured). On the HTTP port unless `--metrics ADDR` gives them a listener of
//! their own (then only there), e.g. to keep scrapes on a private interface. No credential;
//! no tenant data.

use axum::Router;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use tokio::net::TcpListener;

pub const PATH: &str = "/metrics";

/// `GET /metrics` for a router of any state.
pub fn router<S: Clone + Send + Sync + 'static>() -> Router<S> {
    Router::new().route(PATH, get(scrape))
}

async fn scrape() -> Response {
    (
        [
            (
                http::header::CONTENT_TYPE,
                "text/plain; version=0.0.4; charset=utf-8",
            ),
            (http::header::CACHE_CONTROL, "no-store"),
        ],
        lps::metrics::render(),
    )
        .into_response()
}

/// Serves `GET /metrics` alone on `listener` until `shutdown` resolves.
pub async fn serve_alone(
    listener: TcpListener,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> anyhow::Result<()> {
    axum::serve(listener, router::<()>())
        .with_graceful_shutdown(shutdown)
        .await?;
    Ok(())
}
