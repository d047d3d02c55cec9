//! `GET`/`HEAD /p/{campaign_slug}/{lead_slug}`: a lead's page, from memory ahead of the
//! router ([`PagesFromMemory`]) or rendered by core through it ([`page`]), answered the same way.

use std::convert::Infallible;
use std::future::Ready;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Instant;

use axum::extract::{Path, Request, State};
use axum::response::{IntoResponse, Response};
use futures_util::future::Either;
use http::{HeaderValue, Method, StatusCode, header};
use lps::proto::render_page_response::Outcome;

use super::{AheadOfRouter, Policies, html, matches_etag, set_etag};
use crate::core_client::Core;
use crate::core_client::page_cache::RenderedPage;
use crate::visitor::notices::Notice;
use crate::visitor::own_domains::{self, AskedPath, Served};
use crate::visitor::page_loads::LoadCookies;

/// The route of a lead's page, as metrics and logs name it.
pub(super) const PAGE_ROUTE: &str = "/p/{campaign_slug}/{lead_slug}";

pub(super) async fn page(
    State(core): State<Core>,
    Path((campaign_slug, lead_slug)): Path<(String, String)>,
    // The request itself rather than its headers and URI: extracting those would copy them.
    request: Request,
    loads: LoadCookies,
) -> Response {
    let served = request.extensions().get::<Served>();
    match core
        .page(&campaign_slug, &lead_slug, request.uri().path())
        .await
    {
        Ok(page) if !own_domains::serves(served, page.workspace_id) => own_domains::not_found(),
        Ok(page) => page_answer(&page, &request, request.uri().path(), &loads),
        Err(status) => {
            tracing::error!(%status, "page could not be rendered");
            let mut response = html(
                StatusCode::SERVICE_UNAVAILABLE,
                Notice::Unavailable.html(),
                None,
            );
            // Core or its database out for now: a browser or crawler may come back.
            response
                .headers_mut()
                .insert(header::RETRY_AFTER, HeaderValue::from_static("5"));
            response
        }
    }
}

/// What a visitor is answered for a page core rendered at `path`: the page (with a new load's
/// token, `page_loads`), 304 when the browser's copy is current (a load too), or core's notice
/// (not live, not found).
pub(super) fn page_answer(
    page: &Arc<RenderedPage>,
    request: &Request,
    path: &str,
    loads: &LoadCookies,
) -> Response {
    let request_headers = request.headers();
    match page.outcome {
        Outcome::Page => {
            let etag = page.etag();
            let current = request_headers
                .get(header::IF_NONE_MATCH)
                .and_then(|v| v.to_str().ok())
                .zip(page.etag_text())
                .is_some_and(|(tags, etag)| matches_etag(tags, etag));
            let mut response = if current {
                let mut response = StatusCode::NOT_MODIFIED.into_response();
                set_etag(response.headers_mut(), etag.as_ref());
                response
            } else {
                html(StatusCode::OK, page.body(), etag.as_ref())
            };
            // On a workspace's own domain, the cookie is for the path the visitor asked for.
            let asked = request
                .extensions()
                .get::<AskedPath>()
                .map_or(path, |asked| asked.0.as_str());
            if let Some(cookie) = loads.for_page_at(path, asked) {
                response.headers_mut().insert(header::SET_COOKIE, cookie);
            }
            response
        }
        Outcome::NotLive => html(StatusCode::OK, page.body(), None),
        // The campaign's pages moved (`page_slug`): old links keep working.
        Outcome::Moved => match page.location() {
            Some(location) => (
                StatusCode::MOVED_PERMANENTLY,
                [(header::LOCATION, location)],
            )
                .into_response(),
            None => html(StatusCode::NOT_FOUND, Notice::NotFound.html(), None),
        },
        Outcome::Unavailable => html(StatusCode::SERVICE_UNAVAILABLE, page.body(), None),
        Outcome::NotFound | Outcome::Unspecified => html(StatusCode::NOT_FOUND, page.body(), None),
    }
}

/// Answers `GET`/`HEAD` of a lead's page kept in memory ahead of the service it wraps (the
/// router), and passes every other request on. The answer is [`page`]'s for the same page:
/// [`page_answer`], and what the router's layers put on it ([`AheadOfRouter`]).
#[derive(Clone)]
pub struct PagesFromMemory<S> {
    core: Core,
    policies: Policies,
    loads: LoadCookies,
    inner: S,
}

impl<S> PagesFromMemory<S> {
    pub fn new(core: Core, frame_ancestors: &str, loads: LoadCookies, inner: S) -> Self {
        Self {
            core,
            policies: Policies::new(frame_ancestors),
            loads,
            inner,
        }
    }

    fn answer(&self, request: &Request) -> Option<Response> {
        let method = request.method();
        if method != Method::GET && method != Method::HEAD {
            return None;
        }
        let address = request.uri().path();
        if !is_page_address(address) {
            return None;
        }
        let started = Instant::now();
        let page = self.core.kept_page(address)?;
        // Another workspace's page on a workspace's own domain: the router says not found.
        if !own_domains::serves(request.extensions().get::<Served>(), page.workspace_id) {
            return None;
        }
        let log = AheadOfRouter::start(request, PAGE_ROUTE, started);
        let mut response = page_answer(&page, request, address, &self.loads);
        if method == Method::HEAD {
            // As the router answers HEAD: the length the body would have, and no body.
            use axum::body::HttpBody;
            let length = response.body().size_hint().exact().unwrap_or(0);
            response
                .headers_mut()
                .insert(header::CONTENT_LENGTH, HeaderValue::from(length));
            *response.body_mut() = axum::body::Body::empty();
        }
        log.finish(&self.policies, &mut response);
        Some(response)
    }
}

/// Whether `path` is `/p/{campaign_slug}/{lead_slug}` (two non-empty segments, as the router's
/// route matches).
fn is_page_address(path: &str) -> bool {
    path.strip_prefix("/p/")
        .and_then(|rest| rest.split_once('/'))
        .is_some_and(|(campaign, lead)| {
            !campaign.is_empty() && !lead.is_empty() && !lead.contains('/')
        })
}

impl<S> tower::Service<Request> for PagesFromMemory<S>
where
    S: tower::Service<Request, Response = Response, Error = Infallible>,
{
    type Response = Response;
    type Error = Infallible;
    type Future = Either<Ready<Result<Response, Infallible>>, S::Future>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: Request) -> Self::Future {
        match self.answer(&request) {
            Some(response) => Either::Left(std::future::ready(Ok(response))),
            None => Either::Right(self.inner.call(request)),
        }
    }
}
