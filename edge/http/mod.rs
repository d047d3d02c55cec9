//! The edge's HTTP application, composed in one place: the REST API, visitors' pages, the JSON
//! answers for unknown routes and wrong methods, and what every response passes
//! (`every_request.rs`; all but the answers of lead pages and beacons, which
//! `visitor::PagesAheadOfRouter` and `visitor::BeaconPosts` give the same way ahead of the
//! router), behind the routing of workspaces' own domains (`visitor::OwnDomains`) and the
//! redirects to HTTPS (`https::HttpsRedirects`). The HTTPS listener's handshakes are in `tls.rs`.

use axum::Router;
use axum::extract::DefaultBodyLimit;
use tower::Layer;

mod answers_together;
pub mod client_address;
pub mod every_request;
pub mod forwarded;
pub mod health;
pub mod html_page;
pub mod https;
pub mod metrics;
pub mod request_log;
pub mod same_origin;
pub mod server;
pub mod session_cookie;
pub mod tls;

use crate::core_client::Core;
use crate::visitor::beacons::BeaconQueue;
use crate::{dashboard, mcp, oauth, operations, rest, visitor};
use client_address::TrustedProxies;

/// The edge's HTTP application: beacons and lead pages, else the router with its
/// default body limit, behind the redirects to HTTPS and the routing of own domains.
pub type App = https::HttpsRedirects<
    visitor::OwnDomains<
        visitor::PagesAheadOfRouter<
            visitor::BeaconPosts<<DefaultBodyLimit as Layer<Router>>::Service>,
        >,
    >,
>;

/// Every face of the edge, each reaching core only through `core`.
#[allow(clippy::too_many_arguments)]
pub fn app(
    core: Core,
    frame_ancestors: &str,
    trusted_proxies: TrustedProxies,
    beacons: BeaconQueue,
    mcp_settings: mcp::McpSettings,
    metrics_on_http: bool,
    edge_secret: Option<&str>,
    https_port: Option<u16>,
) -> App {
    let public_url = mcp_settings.public_url.clone();
    let secure = public_url.starts_with("https://");
    let loads =
        visitor::page_loads::LoadCookies::new(lps::keys::PageLoads::new(edge_secret), secure);
    let browser_origins = mcp_settings.origins();
    let api = operations::table();
    let router = Router::new()
        .merge(rest::router(api.routes, &api.document, core.clone()))
        .merge(mcp::router(
            core.clone(),
            api.tools,
            &api.document,
            mcp_settings,
        ))
        .merge(
            oauth::router(oauth::Issuer {
                url: public_url.clone(),
            })
            // Browser-based MCP clients register and exchange tokens from their own origin.
            .layer(mcp::cors(&browser_origins)),
        )
        .merge(dashboard::router(dashboard::DashboardSettings {
            secure_cookies: secure,
            own_origin: same_origin::OwnOrigin::of(&public_url),
            notice_key: lps::keys::derive(edge_secret, "lps dashboard notices v1"),
        }))
        .merge(visitor::router(
            frame_ancestors,
            beacons.clone(),
            loads.clone(),
        ))
        .merge(health::router())
        .merge(if metrics_on_http {
            metrics::router()
        } else {
            Router::new()
        })
        .fallback(rest::fallback::not_found)
        .method_not_allowed_fallback(rest::fallback::method_not_allowed)
        .layer(every_request::EveryRequestLayer {
            trusted_proxies: trusted_proxies.clone(),
        })
        .with_state(core.clone());
    // The default body limit is an extension on the request, set once around the whole router
    // (a route's own limit, set inside, wins): as a layer of the router it would wrap every
    // route in one more boxed service, cloned and called on every request.
    let router = DefaultBodyLimit::max(operations::BODY_LIMIT_BYTES).layer(router);
    // Beacons, the most frequent request of all, are taken before the router and its layers
    // are reached, and lead pages before that (a page's visit passes nothing else).
    let beacons = visitor::BeaconPosts::new(beacons, trusted_proxies, frame_ancestors, router);
    let pages = visitor::PagesAheadOfRouter::new(core.clone(), frame_ancestors, loads, beacons);
    // A workspace's own domain serves its pages only, and the rest is none of its business.
    let domains = visitor::OwnDomains::new(core.clone(), pages);
    // Plain HTTP to a name answered over HTTPS goes there.
    https::HttpsRedirects::new(core, https_port, domains)
}
