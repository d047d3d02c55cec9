//! `GET`/`HEAD /p/{campaign_slug}/{lead_slug}`: a lead's page, from memory or rendered by core,
//! ahead of the router ([`PagesAheadOfRouter`]) or, for addresses with percent-escapes, through it
//! ([`page`]), answered the same way.

use std::convert::Infallible;
use std::future::{Future, Ready};
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Instant;

use axum::extract::{Path, Request, State};
use axum::response::{IntoResponse, Response};
use futures_util::future::Either;
use http::{HeaderValue, Method, StatusCode, header};
use lps::proto::render_page_response::Outcome;
use tracing::Instrument;

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
    let address = request.uri().path();
    let page = core.page(&campaign_slug, &lead_slug, address).await;
    core_answer(page, &request, address, &loads)
}

/// What a visitor is answered for what core said of the page at `address`: [`page_answer`],
/// the not-found page for another workspace's page on a workspace's own domain, or 503 when
/// core could not say.
fn core_answer(
    page: Result<Arc<RenderedPage>, tonic::Status>,
    request: &Request,
    address: &str,
    loads: &LoadCookies,
) -> Response {
    match page {
        Ok(page)
            if !own_domains::serves(request.extensions().get::<Served>(), page.workspace_id) =>
        {
            own_domains::not_found()
        }
        Ok(page) => page_answer(&page, request, address, loads),
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

/// Answers `GET`/`HEAD` of a lead's page ahead of the service it wraps (the router): from
/// memory when it is kept, else rendered by core; every other request passes on. The answer is
/// [`page`]'s for the same page ([`core_answer`]), with what the router's layers put on it
/// ([`AheadOfRouter`]). A first visit passes neither the router's matching and extractors nor
/// its layers: they were a fifth of its CPU. Addresses with percent-escapes go to the router,
/// whose `Path` decodes them (a kept page's address is its raw path, so a hit is answered
/// here whatever its spelling).
#[derive(Clone)]
pub struct PagesAheadOfRouter<S> {
    core: Core,
    policies: Policies,
    loads: LoadCookies,
    inner: S,
}

/// How [`PagesAheadOfRouter`] answers a request.
enum Route {
    /// A kept page, answered at once.
    Kept(Response),
    /// A page core is to render, at `/p/{campaign}/{lead}` (no escapes).
    Render,
    /// Anything else: the router's.
    Router,
}

impl<S> PagesAheadOfRouter<S> {
    pub fn new(core: Core, frame_ancestors: &str, loads: LoadCookies, inner: S) -> Self {
        Self {
            core,
            policies: Policies::new(frame_ancestors),
            loads,
            inner,
        }
    }

    fn route(&self, request: &Request) -> Route {
        let method = request.method();
        if method != Method::GET && method != Method::HEAD {
            return Route::Router;
        }
        let address = request.uri().path();
        if page_slugs(address).is_none() {
            return Route::Router;
        }
        let started = Instant::now();
        let Some(page) = self.core.kept_page(address) else {
            return if address.contains('%') {
                Route::Router
            } else {
                Route::Render
            };
        };
        // Another workspace's page on a workspace's own domain: the router says not found.
        if !own_domains::serves(request.extensions().get::<Served>(), page.workspace_id) {
            return Route::Router;
        }
        let log = AheadOfRouter::start(request, PAGE_ROUTE, started);
        let mut response = page_answer(&page, request, address, &self.loads);
        answer_head(method, &mut response);
        log.finish(&self.policies, &mut response);
        Route::Kept(response)
    }

    /// The page at the request's address (see [`Route::Render`]), rendered by core.
    fn render(&self, request: Request) -> Rendering {
        let started = Instant::now();
        let core = self.core.clone();
        let policies = self.policies.clone();
        let loads = self.loads.clone();
        let log = AheadOfRouter::start(&request, PAGE_ROUTE, started);
        let span = log.span.clone();
        Box::pin(
            async move {
                let address = request.uri().path();
                let (campaign_slug, lead_slug) = page_slugs(address).unwrap_or_default();
                let page = core.rendered_page(campaign_slug, lead_slug, address).await;
                let mut response = core_answer(page, &request, address, &loads);
                answer_head(request.method(), &mut response);
                log.finish(&policies, &mut response);
                Ok(response)
            }
            .instrument(span),
        )
    }
}

/// A page being rendered ahead of the router.
type Rendering = Pin<Box<dyn Future<Output = Result<Response, Infallible>> + Send>>;

/// A `HEAD` answered as the router answers it: the length the body would have, and no body.
fn answer_head(method: &Method, response: &mut Response) {
    if method == Method::HEAD {
        use axum::body::HttpBody;
        let length = response.body().size_hint().exact().unwrap_or(0);
        response
            .headers_mut()
            .insert(header::CONTENT_LENGTH, HeaderValue::from(length));
        *response.body_mut() = axum::body::Body::empty();
    }
}

/// The campaign's and lead's slugs of `path` when it is `/p/{campaign_slug}/{lead_slug}` (two
/// non-empty segments, as the router's route matches), as written (escapes not decoded).
fn page_slugs(path: &str) -> Option<(&str, &str)> {
    path.strip_prefix("/p/")
        .and_then(|rest| rest.split_once('/'))
        .filter(|(campaign, lead)| !campaign.is_empty() && !lead.is_empty() && !lead.contains('/'))
}

impl<S> tower::Service<Request> for PagesAheadOfRouter<S>
where
    S: tower::Service<Request, Response = Response, Error = Infallible>,
{
    type Response = Response;
    type Error = Infallible;
    type Future = Either<Ready<Result<Response, Infallible>>, Either<Rendering, S::Future>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: Request) -> Self::Future {
        match self.route(&request) {
            Route::Kept(response) => Either::Left(std::future::ready(Ok(response))),
            Route::Render => Either::Right(Either::Left(self.render(request))),
            Route::Router => Either::Right(Either::Right(self.inner.call(request))),
        }
    }
}
