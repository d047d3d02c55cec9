//! The HTTP listener of the edge: hyper with limits a stranger cannot exhaust.
//!
//! Each connection costs a few kilobytes until it sends something; a connection must deliver a
//! whole request head within the header timeout (also the longest an idle keep-alive
//! connection is kept), a request body must keep arriving (body timeout) and arrive whole
//! within the body deadline, and at most `max_connections` are served at once: one more is
//! answered 503 with `Retry-After` at once and closed, never left waiting in the backlog.

use std::convert::Infallible;
use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use axum::body::Body;
use axum::response::Response;
use http::Request;
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::server::graceful::GracefulShutdown;
use hyper_util::service::TowerToHyperService;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Semaphore;
use tower::{Service, ServiceBuilder};
use tower_http::timeout::TimeoutBody;

use super::answers_together::AnswersTogether;

/// Limits on the HTTP listener (flags of `lps serve` and `lps edge`).
#[derive(Debug, Clone, Copy)]
pub struct HttpLimits {
    /// Time to send a complete request head, and the longest an idle connection stays open.
    pub header_timeout: Duration,
    /// Longest wait for the next piece of a request body.
    pub body_timeout: Duration,
    /// Longest a whole request body may take to arrive, from its request's start.
    pub body_deadline: Duration,
    /// Connections served at once.
    pub max_connections: usize,
}

/// Serves `app` on `listener` until `shutdown` resolves, then lets requests in flight finish;
/// with `tls`, each connection is a TLS one first (the HTTPS listener: `tls.rs`), its requests
/// marked [`OverTls`] and its answers carrying HSTS.
pub async fn serve<A>(
    listener: TcpListener,
    app: A,
    limits: HttpLimits,
    shutdown: impl Future<Output = ()>,
    tls: Option<super::tls::Handshakes>,
) -> anyhow::Result<()>
where
    A: Service<Request<Body>, Response = Response, Error = Infallible> + Clone + Send + 'static,
    A::Future: Send + 'static,
{
    // HTTP/1.1 only: protocol detection (HTTP/2 prior knowledge) would wait for bytes with no
    // timeout of its own, which is exactly what a silent connection exploits.
    let mut builder = http1::Builder::new();
    builder
        .timer(TokioTimer::new())
        .header_read_timeout(limits.header_timeout)
        .max_buf_size(64 * 1024)
        // Vectored writes: a page's body goes out as it is, not copied behind its head. A
        // refusal hyper writes by itself has no body, so it still arrives whole (the first
        // buffer) to `JsonRefusals`.
        .writev(true);
    let slots = Arc::new(Semaphore::new(limits.max_connections.max(1)));
    let graceful = GracefulShutdown::new();
    tokio::pin!(shutdown);
    loop {
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
        let Ok(permit) = slots.clone().try_acquire_owned() else {
            // Over TLS, a plain-text answer would be garbage to the client: closed at once.
            if tls.is_none() {
                tokio::spawn(refuse_when_full(stream));
            }
            continue;
        };
        let body_deadline = limits.body_deadline;
        let over_tls = tls.is_some();
        let service = ServiceBuilder::new()
            .map_request(move |mut request: Request<Incoming>| {
                request
                    .extensions_mut()
                    .insert(axum::extract::ConnectInfo(peer));
                if over_tls {
                    request.extensions_mut().insert(OverTls);
                }
                request
            })
            .service(SlowBodies {
                inner: app.clone(),
                pause: limits.body_timeout,
                deadline: body_deadline,
                over_tls,
            });
        let service = TowerToHyperService::new(service);
        let Some(tls) = &tls else {
            let connection = builder.serve_connection(
                TokioIo::new(JsonRefusals::new(AnswersTogether::new(stream))),
                service,
            );
            let connection = graceful.watch(connection);
            tokio::spawn(async move {
                if let Err(err) = connection.await {
                    tracing::debug!(error = %err, %peer, "connection ended with an error");
                }
                drop(permit);
            });
            continue;
        };
        // The handshake and the first request head within the time a plain request head has:
        // a slow client holds a slot no longer than a slow plain one.
        let (tls, mut builder, watcher) = (tls.clone(), builder.clone(), graceful.watcher());
        tokio::spawn(async move {
            let started = tokio::time::Instant::now();
            if let Some(stream) = tls.accept(stream, limits.header_timeout).await {
                let left = limits.header_timeout.saturating_sub(started.elapsed());
                builder.header_read_timeout(left.max(Duration::from_millis(100)));
                let connection = builder.serve_connection(
                    TokioIo::new(JsonRefusals::new(AnswersTogether::new(stream))),
                    service,
                );
                if let Err(err) = watcher.watch(connection).await {
                    tracing::debug!(error = %err, %peer, "connection ended with an error");
                }
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

/// Marks a request that came over TLS (the HTTPS listener), for what differs there: no
/// redirect to HTTPS (`https.rs`).
#[derive(Debug, Clone, Copy)]
pub struct OverTls;

/// What a connection over `max_connections` is answered before it is closed: at once, so a
/// client learns to come back instead of waiting in the backlog behind idle connections.
const FULL: &[u8] = b"HTTP/1.1 503 Service Unavailable\r\ncontent-type: application/json\r\n\
retry-after: 1\r\nx-content-type-options: nosniff\r\nconnection: close\r\n\
content-length: 70\r\n\r\n\
{\"message\":\"Too many connections at once. Please retry in a moment.\"}\n";

/// Writes [`FULL`] (within a second: a client that does not read is simply dropped) and
/// closes the connection.
async fn refuse_when_full(mut stream: TcpStream) {
    use tokio::io::AsyncWriteExt;
    let _ = tokio::time::timeout(Duration::from_secs(1), async {
        stream.write_all(FULL).await?;
        stream.shutdown().await
    })
    .await;
}

/// The app, with each request's body held to [`DeadlineBody`] over tower-http's
/// [`TimeoutBody`] (`pause`): whatever route read a body that came too slowly (past the
/// deadline, or paused past the body timeout), and whatever it made of the failure (a form's
/// 400, a JSON 500), the answer is `408` (unless the route already answered 408 itself, with
/// its own headers). A request without a body (every `GET`) has nothing to time and costs
/// nothing here: no timer, no flag, no allocation.
#[derive(Clone)]
struct SlowBodies<A> {
    inner: A,
    pause: Duration,
    deadline: Duration,
    /// Answers carry HSTS (`tls::HSTS`).
    over_tls: bool,
}

impl<A> Service<Request<Incoming>> for SlowBodies<A>
where
    A: Service<Request<Body>, Response = Response, Error = Infallible>,
{
    type Response = Response;
    type Error = Infallible;
    type Future = SlowBodiesAnswer<A::Future>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: Request<Incoming>) -> Self::Future {
        use http_body::Body as _;
        let (request, too_slow) = if request.body().is_end_stream() {
            (request.map(|_| Body::empty()), None)
        } else {
            let too_slow = Arc::new(std::sync::atomic::AtomicBool::new(false));
            let (pause, deadline, watched) = (self.pause, self.deadline, too_slow.clone());
            let request = request.map(|body| {
                let body = TimeoutBody::new(pause, body);
                Body::new(DeadlineBody::new(body, deadline, watched))
            });
            (request, Some(too_slow))
        };
        SlowBodiesAnswer {
            inner: self.inner.call(request),
            too_slow,
            over_tls: self.over_tls,
        }
    }
}

pin_project_lite::pin_project! {
    /// The app's answer, replaced by `408` when the request's body came too slowly, with HSTS
    /// over TLS.
    pub struct SlowBodiesAnswer<F> {
        #[pin]
        inner: F,
        too_slow: Option<Arc<std::sync::atomic::AtomicBool>>,
        over_tls: bool,
    }
}

impl<F> Future for SlowBodiesAnswer<F>
where
    F: Future<Output = Result<Response, Infallible>>,
{
    type Output = Result<Response, Infallible>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.project();
        let Ok(mut response) = std::task::ready!(this.inner.poll(cx));
        let too_slow = this
            .too_slow
            .as_ref()
            .is_some_and(|flag| flag.load(std::sync::atomic::Ordering::SeqCst));
        if too_slow && response.status() != http::StatusCode::REQUEST_TIMEOUT {
            response = too_slow_answer();
        }
        if *this.over_tls {
            response.headers_mut().insert(
                http::header::STRICT_TRANSPORT_SECURITY,
                http::HeaderValue::from_static(super::tls::HSTS),
            );
        }
        Poll::Ready(Ok(response))
    }
}

/// The `408` of a body that came too slowly, as JSON like every answer of lps.
fn too_slow_answer() -> Response {
    use axum::response::IntoResponse;
    (
        http::StatusCode::REQUEST_TIMEOUT,
        [(http::header::CONNECTION, "close")],
        axum::Json(serde_json::json!({
            "message": "The request body did not arrive in time. Please send it again."
        })),
    )
        .into_response()
}

pin_project_lite::pin_project! {
    /// A request body that must arrive whole within a deadline from its request's start
    /// (`--http-body-deadline`): a body trickled just fast enough to beat the body timeout
    /// still ends. Past the deadline, reading it fails (the request is answered 408).
    pub struct DeadlineBody<B> {
        #[pin]
        inner: B,
        #[pin]
        deadline: tokio::time::Sleep,
        // Set when the body came too slowly (this deadline, or the body timeout beneath).
        too_slow: Arc<std::sync::atomic::AtomicBool>,
    }
}

impl<B> DeadlineBody<B> {
    fn new(inner: B, within: Duration, too_slow: Arc<std::sync::atomic::AtomicBool>) -> Self {
        Self {
            inner,
            deadline: tokio::time::sleep(within),
            too_slow,
        }
    }
}

/// The error of a body that did not arrive within its deadline.
#[derive(Debug, thiserror::Error)]
#[error("the request body did not arrive within its deadline")]
pub struct BodyDeadlineExceeded;

impl<B> http_body::Body for DeadlineBody<B>
where
    B: http_body::Body,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    type Data = B::Data;
    type Error = Box<dyn std::error::Error + Send + Sync>;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<http_body::Frame<Self::Data>, Self::Error>>> {
        let this = self.project();
        if let Poll::Ready(frame) = this.inner.poll_frame(cx) {
            return Poll::Ready(frame.map(|frame| {
                frame.map_err(|err| {
                    let err = err.into();
                    if is_slow_body(err.as_ref()) {
                        this.too_slow
                            .store(true, std::sync::atomic::Ordering::SeqCst);
                    }
                    err
                })
            }));
        }
        if this.deadline.poll(cx).is_ready() {
            this.too_slow
                .store(true, std::sync::atomic::Ordering::SeqCst);
            return Poll::Ready(Some(Err(Box::new(BodyDeadlineExceeded))));
        }
        Poll::Pending
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> http_body::SizeHint {
        self.inner.size_hint()
    }
}

/// Whether `error` (a body's, as axum reports it) is a body that came too slowly: past its
/// deadline or paused past the body timeout.
pub fn is_slow_body(error: &(dyn std::error::Error + 'static)) -> bool {
    let mut cause = Some(error);
    while let Some(error) = cause {
        if error.is::<BodyDeadlineExceeded>() || error.is::<tower_http::timeout::TimeoutError>() {
            return true;
        }
        cause = error.source();
    }
    false
}

/// The connection's stream, giving the refusals hyper writes by itself (400 for a malformed
/// request, 414 for an overlong URI, 431 for oversized headers: requests that never reach the
/// router) a JSON body with a `message`, like every other answer of lps.
struct JsonRefusals<S> {
    stream: S,
    /// A rewritten refusal still to be sent.
    pending: Vec<u8>,
}

/// How hyper's own refusals begin after the status line: nothing else lps sends looks so.
const HYPER_REFUSAL: &[u8] = b"\r\nconnection: close\r\ncontent-length: 0\r\n";

impl<S> JsonRefusals<S> {
    fn new(stream: S) -> Self {
        Self {
            stream,
            pending: Vec::new(),
        }
    }

    /// The JSON version of a refusal head, if `head` is one.
    fn rewrite(head: &[u8]) -> Option<Vec<u8>> {
        let text = std::str::from_utf8(head).ok()?;
        let status_line_end = text.find("\r\n")?;
        let (status_line, rest) = text.split_at(status_line_end);
        let rest = rest.strip_prefix(std::str::from_utf8(HYPER_REFUSAL).ok()?)?;
        let mut parts = status_line.splitn(3, ' ');
        let (_version, code) = (parts.next()?, parts.next()?);
        let message = match code {
            "400" => "The request could not be read: it is not well-formed HTTP.",
            "414" => "The request URI is too long.",
            "431" => "The request headers are too large.",
            _ => return None,
        };
        let body = serde_json::json!({ "message": message }).to_string();
        Some(
            format!(
                "{status_line}\r\ncontent-type: application/json\r\n\
                 x-content-type-options: nosniff\r\nconnection: close\r\n\
                 content-length: {}\r\n{rest}{body}",
                body.len()
            )
            .into_bytes(),
        )
    }

    /// Whether `head` may be one of hyper's refusals: a 4xx whose status line is followed by
    /// hyper's `connection: close` and empty body (cheap: no parsing).
    fn maybe_refusal(head: &[u8]) -> bool {
        head.starts_with(b"HTTP/1.1 4")
            && head
                .iter()
                .position(|&b| b == b'\r')
                .is_some_and(|end| head[end..].starts_with(HYPER_REFUSAL))
    }
}

impl<S: AsyncWrite + Unpin> JsonRefusals<S> {
    /// Sends what is pending; ready once nothing is.
    fn poll_pending(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        while !self.pending.is_empty() {
            let written =
                std::task::ready!(Pin::new(&mut self.stream).poll_write(cx, &self.pending))?;
            if written == 0 {
                return Poll::Ready(Err(io::ErrorKind::WriteZero.into()));
            }
            self.pending.drain(..written);
        }
        Poll::Ready(Ok(()))
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for JsonRefusals<S> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.stream).poll_read(cx, buf)
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for JsonRefusals<S> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        std::task::ready!(self.poll_pending(cx))?;
        if Self::maybe_refusal(buf)
            && let Some(rewritten) = Self::rewrite(buf)
        {
            self.pending = rewritten;
            // The original bytes count as written; the rewritten ones go out now or on the
            // flush that follows.
            let _ = self.poll_pending(cx)?;
            return Poll::Ready(Ok(buf.len()));
        }
        Pin::new(&mut self.stream).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        // lps's own 4xx answers (a 404, a 401, a 422) go out in one vectored write like any
        // other: only a head that looks like hyper's refusal is taken apart.
        if self.pending.is_empty() && bufs.first().is_none_or(|first| !Self::maybe_refusal(first)) {
            return Pin::new(&mut self.stream).poll_write_vectored(cx, bufs);
        }
        // A possible refusal, or something still pending: one buffer at a time.
        match bufs.iter().find(|buf| !buf.is_empty()) {
            Some(buf) => self.poll_write(cx, buf),
            None => Poll::Ready(Ok(0)),
        }
    }

    fn is_write_vectored(&self) -> bool {
        true
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        std::task::ready!(self.poll_pending(cx))?;
        Pin::new(&mut self.stream).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        std::task::ready!(self.poll_pending(cx))?;
        Pin::new(&mut self.stream).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hyper_refusals_get_a_json_message_and_nothing_else_is_touched() {
        let refusal = b"HTTP/1.1 414 URI Too Long\r\nconnection: close\r\ncontent-length: 0\r\n\
                        date: Sun, 22 Nov 2026 15:05:52 GMT\r\n\r\n";
        type Refusals = JsonRefusals<TcpStream>;
        let rewritten = String::from_utf8(Refusals::rewrite(refusal).unwrap()).unwrap();
        assert!(rewritten.starts_with("HTTP/1.1 414 URI Too Long\r\n"));
        assert!(rewritten.contains("content-type: application/json\r\n"));
        assert!(rewritten.contains("date: Sun, 22 Nov 2026 15:05:52 GMT\r\n\r\n{"));
        let (_, body) = rewritten.split_once("\r\n\r\n").unwrap();
        let length: usize = rewritten
            .split("content-length: ")
            .nth(1)
            .and_then(|rest| rest.split("\r\n").next())
            .and_then(|n| n.parse().ok())
            .unwrap();
        assert_eq!(body.len(), length);
        assert!(body.contains("too long"));
        let ours = b"HTTP/1.1 404 Not Found\r\ncontent-type: application/json\r\n\r\n";
        assert!(Refusals::rewrite(ours).is_none());
        // Only hyper's refusals are taken apart; lps's own 4xx answers go out whole.
        assert!(Refusals::maybe_refusal(refusal));
        assert!(!Refusals::maybe_refusal(ours));
        assert!(!Refusals::maybe_refusal(
            b"HTTP/1.1 200 OK\r\nconnection: close\r\n"
        ));
    }
}
