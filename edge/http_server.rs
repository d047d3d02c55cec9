//! The HTTP listener of the edge: hyper with limits a stranger cannot exhaust.
//!
//! Each connection costs a few kilobytes until it sends something; a connection must deliver a
//! whole request head within the header timeout (also the longest an idle keep-alive
//! connection is kept), a request body must keep arriving (body timeout), and at most
//! `max_connections` are served at once (further ones wait in the listen backlog).

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use hyper::server::conn::http1;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::server::graceful::GracefulShutdown;
use hyper_util::service::TowerToHyperService;
use tokio::net::TcpListener;
use tokio::sync::Semaphore;
use tower::ServiceExt;

/// Limits on the HTTP listener (flags of `lps serve` and `lps edge`).
#[derive(Debug, Clone, Copy)]
pub struct HttpLimits {
    /// Time to send a complete request head, and the longest an idle connection stays open.
    pub header_timeout: Duration,
    /// Longest wait for the next piece of a request body.
    pub body_timeout: Duration,
    /// Connections served at once.
    pub max_connections: usize,
}

/// Serves `router` on `listener` until `shutdown` resolves, then lets requests in flight finish.
pub async fn serve(
    listener: TcpListener,
    router: Router,
    limits: HttpLimits,
    shutdown: impl Future<Output = ()>,
) -> anyhow::Result<()> {
    let router = router.layer(tower_http::timeout::RequestBodyTimeoutLayer::new(
        limits.body_timeout,
    ));
    // HTTP/1.1 only: protocol detection (HTTP/2 prior knowledge) would wait for bytes with no
    // timeout of its own, which is exactly what a silent connection exploits.
    let mut builder = http1::Builder::new();
    builder
        .timer(TokioTimer::new())
        .header_read_timeout(limits.header_timeout)
        .max_buf_size(64 * 1024);
    let slots = Arc::new(Semaphore::new(limits.max_connections.max(1)));
    let graceful = GracefulShutdown::new();
    tokio::pin!(shutdown);
    loop {
        let permit = tokio::select! {
            permit = slots.clone().acquire_owned() => permit?,
            () = &mut shutdown => break,
        };
        let (stream, peer) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                Err(err) => {
                    // Out of file descriptors and the like: pause instead of spinning.
                    tracing::warn!(error = %err, "accept failed");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
            () = &mut shutdown => break,
        };
        let _ = stream.set_nodelay(true);
        let service =
            router
                .clone()
                .map_request(move |request: http::Request<hyper::body::Incoming>| {
                    let mut request = request.map(axum::body::Body::new);
                    request
                        .extensions_mut()
                        .insert(axum::extract::ConnectInfo(peer));
                    request
                });
        let connection =
            builder.serve_connection(TokioIo::new(stream), TowerToHyperService::new(service));
        let connection = graceful.watch(connection);
        tokio::spawn(async move {
            if let Err(err) = connection.await {
                tracing::debug!(error = %err, %peer, "connection ended with an error");
            }
            drop(permit);
        });
    }
    drop(listener);
    // Requests in flight get a while to finish; idle connections close at once.
    if tokio::time::timeout(Duration::from_secs(30), graceful.shutdown())
        .await
        .is_err()
    {
        tracing::warn!("some connections did not finish within 30 s of shutdown");
    }
    Ok(())
}
