//! `lps`: the lead personalisation service.
//!
//! `lps serve` runs core and the REST edge in one process (the edge calls core in-process);
//! `lps core` and `lps edge --core-url URL` run the halves apart; `lps admin ...` sets up
//! accounts, workspaces and keys directly in the database.

mod cli;
mod core_client;
mod dashboard;
mod http;
mod mcp;
mod oauth;
mod operations;
mod rest;
mod spreadsheet;
mod visitor;

use cli::{admin, import};
use http::{client_address, metrics, server as http_server};
use visitor::beacons;

use std::io::Write;
use std::net::SocketAddr;

use anyhow::Context;
use clap::{Args, Parser, Subcommand};
use lps::{App, CoreConfig, admin::Db, grpc};
use tokio::net::TcpListener;
use tokio::sync::watch;
use tower::ServiceExt;
use tower::util::BoxCloneSyncService;

#[derive(Parser)]
#[command(name = "lps", version, about = "Lead personalisation service")]
struct Cli {
    /// How log lines (on standard error) are written: `text` for people, `json` for log
    /// collectors. Colours only on a terminal, and never with `NO_COLOR` set.
    #[arg(long, global = true, env = "LPS_LOG_FORMAT", value_enum, default_value_t = LogFormat::Text)]
    log_format: LogFormat,
    /// Export OpenTelemetry traces to this OTLP collector (e.g. `http://127.0.0.1:4317` for
    /// gRPC, `http://127.0.0.1:4318` for HTTP): one trace per request across edge, core, SQL
    /// statements, renders and outbound calls, continuing the caller's `traceparent`. Off when
    /// unset, at no cost.
    #[arg(long, global = true, env = "LPS_OTLP_ENDPOINT")]
    otlp_endpoint: Option<String>,
    /// How traces travel to `--otlp-endpoint`: `grpc` or `http` (protobuf, `/v1/traces`).
    #[arg(long, global = true, env = "LPS_OTLP_PROTOCOL", value_enum,
          default_value_t = lps::telemetry::Protocol::Grpc)]
    otlp_protocol: lps::telemetry::Protocol,
    /// The share of requests traced, 0 to 1: sampled at the edge before any span is made, so a
    /// request not sampled costs next to nothing. A caller's `traceparent` decides for its
    /// own requests (sampled or not).
    #[arg(
        long,
        global = true,
        env = "LPS_OTLP_SAMPLE_RATIO",
        default_value_t = 1.0
    )]
    otlp_sample_ratio: f64,
    /// The `service.name` traces are exported under.
    #[arg(
        long,
        global = true,
        env = "LPS_OTLP_SERVICE_NAME",
        default_value = "lps"
    )]
    otlp_service_name: String,
    #[command(subcommand)]
    command: Command,
}

#[derive(Clone, Copy, clap::ValueEnum)]
enum LogFormat {
    Text,
    Json,
}

#[derive(Subcommand)]
enum Command {
    /// Core and REST edge in one process (the default way to run lps).
    Serve(ServeArgs),
    /// Core alone: the gRPC services, storage and workers.
    Core(CoreArgs),
    /// The REST edge alone, calling a core over gRPC.
    Edge(EdgeArgs),
    /// Operator commands against the database.
    #[command(subcommand)]
    Admin(admin::AdminCommand),
    /// Loads a CSV of leads through the API, with progress and a file of rejected rows.
    Import(import::ImportArgs),
}

#[derive(Args, Clone)]
struct DatabaseArg {
    /// `sqlite://FILE` (created if missing) or `postgres://USER@HOST:PORT/DB`.
    #[arg(long, env = "LPS_DATABASE_URL", default_value = "sqlite://lps.db")]
    database_url: String,
    /// Seconds a request waits for a database connection (every one busy, or the database
    /// unreachable) before it is answered 503 with `Retry-After`.
    #[arg(long, env = "LPS_DATABASE_WAIT", default_value_t = 5)]
    database_wait: u64,
}

impl DatabaseArg {
    async fn connect(&self) -> anyhow::Result<Db> {
        Db::connect_waiting(
            &self.database_url,
            std::time::Duration::from_secs(self.database_wait.max(1)),
        )
        .await
    }
}

#[derive(Args, Clone)]
struct CoreOptions {
    /// Where core's gRPC services listen.
    #[arg(
        long = "grpc",
        env = "LPS_GRPC_ADDR",
        default_value = "127.0.0.1:50051"
    )]
    grpc_addr: String,
    /// Share rate limits between instances through this Redis.
    #[arg(long, env = "LPS_REDIS_URL")]
    redis_url: Option<String>,
    /// Requests per minute allowed to one credential.
    #[arg(long, env = "LPS_RATE_LIMIT_PER_MINUTE", default_value_t = 120,
          value_parser = clap::value_parser!(u32).range(1..))]
    rate_limit_per_minute: u32,
    /// Let callbacks and enrichment fetches reach private and loopback addresses (refused by
    /// default).
    #[arg(long, env = "LPS_ALLOW_PRIVATE_NETWORK")]
    allow_private_network: bool,
    /// `HOST=ADDR:PORT`: outbound requests (callbacks, enrichment) reach HOST at ADDR:PORT
    /// instead of its DNS answer, like curl's `--resolve` (the port applies when the URL names
    /// none). The address is still held to the private-network policy. Repeatable.
    #[arg(long = "resolve", env = "LPS_RESOLVE", value_delimiter = ',', value_parser = parse_resolve)]
    resolve: Vec<(String, SocketAddr)>,
    /// Background workers storing queued leads; 0 serves the API without processing jobs
    /// (another core on the same PostgreSQL does).
    #[arg(long, env = "LPS_JOB_WORKERS", default_value_t = 1)]
    job_workers: usize,
    /// Credits one AI design run (`POST /pages/generate`) costs.
    #[arg(long, env = "LPS_CREDITS_PER_DESIGN_RUN", default_value_t = 10,
          value_parser = clap::value_parser!(i64).range(0..))]
    credits_per_design_run: i64,
    /// Credits one fetching enrichment of one lead costs (`social_profile_url`,
    /// `social_posts_person`, `social_posts_company`).
    #[arg(long, env = "LPS_CREDITS_PER_ENRICHMENT", default_value_t = 1,
          value_parser = clap::value_parser!(i64).range(0..))]
    credits_per_enrichment: i64,
    /// Credits one written analysis of one lead costs (`company_domain`, `person_analysis`,
    /// and the AI variables of `generate_ai_variables`).
    #[arg(long, env = "LPS_CREDITS_PER_ANALYSIS", default_value_t = 2,
          value_parser = clap::value_parser!(i64).range(0..))]
    credits_per_analysis: i64,
    /// An OpenAI-compatible API for design generation, e.g. `https://api.openai.com/v1`
    /// (OpenAI, vLLM, Ollama, llama.cpp server). Without it design generation is refused
    /// (503, no credits spent) and enrichment analyses use the offline writers.
    #[arg(long, env = "LPS_LLM_BASE_URL")]
    llm_base_url: Option<String>,
    /// Sent as `Authorization: Bearer ...` to the model server.
    #[arg(long, env = "LPS_LLM_API_KEY", hide_env_values = true)]
    llm_api_key: Option<String>,
    /// The model to ask.
    #[arg(long, env = "LPS_LLM_MODEL", default_value = "gpt-4o-mini")]
    llm_model: String,
    /// Seconds a running design run belongs to its process; after that (the process died)
    /// another process, or this one restarted, takes it over. Longer than a generation takes.
    #[arg(long, env = "LPS_DESIGN_RUN_LEASE_SECONDS", default_value_t = 300,
          value_parser = clap::value_parser!(u64).range(1..))]
    design_run_lease_seconds: u64,
    /// Seconds an OAuth access token is accepted (refresh tokens live 30 days).
    #[arg(long, env = "LPS_OAUTH_ACCESS_TOKEN_SECONDS", default_value_t = 3600,
          value_parser = clap::value_parser!(u64).range(1..=86_400))]
    oauth_access_token_seconds: u64,
    /// A secret an edge running apart (`lps edge`) presents to assert its clients' addresses
    /// (login and registration limits, forms' `ip_address`); without it, an address a gRPC
    /// caller asserts is ignored and its own peer address counts.
    #[arg(long, env = "LPS_EDGE_SECRET", hide_env_values = true)]
    edge_secret: Option<String>,
    /// A file of networks whose page views are mail scanners' (one CIDR range or address per
    /// line, `#` comments), read again when it changes; such views are kept as
    /// `scanner_network`, never counted. See docs/api-guide.md, "Engagement: what counts",
    /// for building one.
    #[arg(long, env = "LPS_SCANNER_NETWORKS")]
    scanner_networks: Option<std::path::PathBuf>,
    /// The engagement score at which a lead is hot: a `lead.hot` callback is sent the first
    /// time it is reached; 0 never.
    #[arg(long, env = "LPS_HOT_SCORE", default_value_t = 8.0)]
    hot_score: f64,
    /// Days raw engagement events (each view, click, ...) are kept; older ones are pruned in
    /// the background, the sums and scores staying as they were. 0 keeps them forever.
    #[arg(long, env = "LPS_EVENT_RETENTION_DAYS", default_value_t = 400)]
    event_retention_days: u32,
    /// Honour Global Privacy Control (`Sec-GPC: 1`): such a browser's visits are counted
    /// anonymously, with no visitor cookie and no per-visitor hash.
    #[arg(long, env = "LPS_RESPECT_GPC")]
    respect_gpc: bool,
    /// Failed callback attempts in a row after which a receiving host is unhealthy and paused
    /// (its callbacks wait; none is dropped).
    #[arg(long, env = "LPS_CALLBACK_UNHEALTHY_AFTER", default_value_t = 5,
          value_parser = clap::value_parser!(i64).range(1..=1000))]
    callback_unhealthy_after: i64,
    /// An unhealthy receiving host's first pause, in seconds; each next one doubles, at most an
    /// hour.
    #[arg(long, env = "LPS_CALLBACK_PAUSE_SECONDS", default_value_t = 60,
          value_parser = clap::value_parser!(u64).range(1..=3600))]
    callback_pause_seconds: u64,
    /// Milliseconds a lead's link-preview card (`og.png`) may take to be made (waiting for a
    /// renderer included) before the campaign's card stands in; that one has half as long
    /// again, then a plain card in the brand colour stands in. The lead's card is still made
    /// and kept for the next request.
    #[arg(long, env = "LPS_PREVIEW_CARD_DEADLINE_MS", default_value_t = 1000,
          value_parser = clap::value_parser!(u64).range(0..=10_000))]
    preview_card_deadline_ms: u64,
}

#[derive(Args, Clone)]
struct HttpOptions {
    /// Where the REST API and visitor pages listen.
    #[arg(long = "http", env = "LPS_HTTP_ADDR", default_value = "127.0.0.1:8080")]
    http_addr: String,
    /// Seconds a connection has to send a complete request head; also how long an idle
    /// keep-alive connection is kept.
    #[arg(long, env = "LPS_HTTP_HEADER_TIMEOUT", default_value_t = 10,
          value_parser = clap::value_parser!(u64).range(1..))]
    http_header_timeout: u64,
    /// Seconds a request body may pause before the request is dropped.
    #[arg(long, env = "LPS_HTTP_BODY_TIMEOUT", default_value_t = 30,
          value_parser = clap::value_parser!(u64).range(1..))]
    http_body_timeout: u64,
    /// Seconds a whole request body may take to arrive, however steadily it trickles in (408
    /// past it).
    #[arg(long, env = "LPS_HTTP_BODY_DEADLINE", default_value_t = 120,
          value_parser = clap::value_parser!(u64).range(1..))]
    http_body_deadline: u64,
    /// Who may frame visitor pages (CSP `frame-ancestors`), e.g. `'self' https://app.example`.
    #[arg(long, env = "LPS_FRAME_ANCESTORS", default_value = "'none'")]
    frame_ancestors: String,
    /// Proxies (`CIDR,...`) whose `X-Forwarded-For` names the client; by default the TCP peer
    /// is the client.
    #[arg(long, env = "LPS_TRUSTED_PROXIES", default_value = "",
          value_parser = client_address::TrustedProxies::parse)]
    trusted_proxies: client_address::TrustedProxies,
    /// Browser origins (`https://app.example,...`) allowed to call `/mcp`, besides the public
    /// URL's own; any other `Origin` is refused (DNS-rebinding protection).
    #[arg(long, env = "LPS_MCP_ALLOWED_ORIGINS", value_delimiter = ',')]
    mcp_allowed_origins: Vec<String>,
    /// HTTP connections served at once; more wait to be accepted.
    #[arg(long, env = "LPS_HTTP_MAX_CONNECTIONS", default_value_t = 4096,
          value_parser = clap::value_parser!(u64).range(1..))]
    http_max_connections: u64,
    /// Memory for visitors' pages kept as rendered, in MiB (0: every visit asks core). Pages
    /// are dropped the moment they change; the least valuable go first when it is full.
    #[arg(long, env = "LPS_PAGE_CACHE_MB", default_value_t = 64)]
    page_cache_mb: u64,
}

impl HttpOptions {
    fn mcp_settings(&self, public_url: &str) -> mcp::McpSettings {
        mcp::McpSettings {
            public_url: public_url.trim_end_matches('/').to_owned(),
            allowed_origins: self.mcp_allowed_origins.clone(),
        }
    }

    fn limits(&self) -> http_server::HttpLimits {
        http_server::HttpLimits {
            header_timeout: std::time::Duration::from_secs(self.http_header_timeout),
            body_timeout: std::time::Duration::from_secs(self.http_body_timeout),
            body_deadline: std::time::Duration::from_secs(self.http_body_deadline),
            max_connections: self.http_max_connections as usize,
        }
    }
}

/// Where `GET /metrics` is served.
#[derive(Args, Clone)]
struct MetricsArg {
    /// Serve `GET /metrics` (Prometheus) on this address of its own (e.g. a private
    /// interface) instead of on the HTTP port; `lps core` serves metrics only when given one.
    /// `off`: nothing is measured (and `/metrics` is not served).
    #[arg(long = "metrics", env = "LPS_METRICS_ADDR")]
    metrics_addr: Option<String>,
}

impl MetricsArg {
    /// Installs the recorder and, when asked, listens for scrapes; true when `/metrics` stays
    /// on the HTTP port.
    async fn start(&self, shutdown: watch::Receiver<bool>) -> anyhow::Result<bool> {
        if self.metrics_addr.as_deref() == Some("off") {
            // No recorder: every measurement is a call that does nothing.
            return Ok(false);
        }
        lps::metrics::install();
        let Some(addr) = &self.metrics_addr else {
            return Ok(true);
        };
        let listener = bind(addr).await?;
        announce(&format!(
            "Metrics on http://{}{}",
            listener.local_addr()?,
            metrics::PATH
        ));
        tokio::spawn(async move {
            if let Err(err) = metrics::serve_alone(listener, wait(shutdown)).await {
                tracing::error!(error = %err, "the metrics listener failed");
            }
        });
        Ok(false)
    }
}

#[derive(Args)]
struct ServeArgs {
    #[command(flatten)]
    database: DatabaseArg,
    #[command(flatten)]
    metrics: MetricsArg,
    #[command(flatten)]
    http: HttpOptions,
    #[command(flatten)]
    core: CoreOptions,
    /// The address visitors use to reach pages; defaults to `http://` plus the HTTP address.
    #[arg(long, env = "LPS_PUBLIC_URL")]
    public_url: Option<String>,
}

#[derive(Args)]
struct CoreArgs {
    #[command(flatten)]
    database: DatabaseArg,
    #[command(flatten)]
    metrics: MetricsArg,
    #[command(flatten)]
    core: CoreOptions,
    /// The address visitors use to reach pages (served by the edge).
    #[arg(long, env = "LPS_PUBLIC_URL", default_value = "http://127.0.0.1:8080")]
    public_url: String,
}

#[derive(Args)]
struct EdgeArgs {
    /// The core to call, e.g. `http://127.0.0.1:50051`.
    #[arg(long, env = "LPS_CORE_URL")]
    core_url: String,
    #[command(flatten)]
    metrics: MetricsArg,
    #[command(flatten)]
    http: HttpOptions,
    /// Where clients reach this edge (MCP's resource address); defaults to `http://` plus the
    /// HTTP address.
    #[arg(long, env = "LPS_PUBLIC_URL")]
    public_url: Option<String>,
    /// The core's `--edge-secret`: lets this edge tell core its clients' addresses, and core
    /// check the page-load tokens and notices this edge signs.
    #[arg(long, env = "LPS_EDGE_SECRET", hide_env_values = true)]
    edge_secret: Option<String>,
}

fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    // Within the runtime: the OTLP gRPC exporter's client needs it.
    runtime.block_on(async { init_logs(&cli) })?;
    let outcome = runtime.block_on(async {
        match cli.command {
            Command::Serve(args) => serve(args).await,
            Command::Core(args) => run_core(args).await,
            Command::Edge(args) => run_edge(args).await,
            Command::Admin(command) => admin::run(command).await,
            Command::Import(args) => import::run(args).await,
        }
    });
    // Renders still running on blocking threads (each within its budget) do not hold the
    // process past its shutdown.
    runtime.shutdown_timeout(SHUTDOWN_GRACE_FOR_BLOCKING_WORK);
    lps::telemetry::finish();
    outcome
}

/// How long, once the servers stopped, the process waits for blocking work (renders, design
/// checks) before it exits anyway.
const SHUTDOWN_GRACE_FOR_BLOCKING_WORK: std::time::Duration = std::time::Duration::from_secs(2);

async fn serve(args: ServeArgs) -> anyhow::Result<()> {
    let db = args.database.connect().await?;
    // Ports first: a first start that cannot listen must not create (and lose) the one key.
    let http = bind(&args.http.http_addr).await?;
    let grpc_listener = bind(&args.core.grpc_addr).await?;
    let shutdown = shutdown_signal();
    let metrics_on_http = args.metrics.start(shutdown.clone()).await?;
    let bootstrapped = lps::admin::bootstrap_if_empty(&db).await?;
    let http_addr = http.local_addr()?;
    let public_url = args
        .public_url
        .unwrap_or_else(|| format!("http://{http_addr}"));
    let app = App::new(db, core_config(&args.core, public_url))
        .await
        .map_err(lps::Error::into_cause)?;
    app.start_workers();

    let core = grpc::core_service(&app).await;
    let transport: core_client::Transport = BoxCloneSyncService::new(
        core.map_request(|mut request: ::http::Request<tonic::body::Body>| {
            request.extensions_mut().insert(grpc::FromEdge);
            request
        })
        .map_err(|never| match never {}),
    );
    let (router, beacon_flusher) = build_edge(
        transport,
        Some(lps::direct::DirectCore::new(&app)),
        &args.http,
        &app.config.public_url,
        metrics_on_http,
        // One process: core checks what this edge signs with the same keys.
        app.config.edge_secret.as_deref(),
    );
    // Starting allocated and dropped a few megabytes (migrations, the OpenAPI document as a
    // JSON tree, from which the served bytes and the MCP tool catalogue are made); they need
    // not stay resident while idle. `lps core` and `lps edge` do the same once started.
    lps::memory::release_freed();

    announce(&format!("HTTP listening on http://{http_addr}"));
    announce(&format!(
        "gRPC listening on http://{}",
        grpc_listener.local_addr()?
    ));
    if let Some(first) = bootstrapped {
        announce(&first_start_banner(
            &first,
            http_addr,
            &args.database.database_url,
        ));
    }
    let grpc_task = tokio::spawn(grpc::serve(app, grpc_listener, wait(shutdown.clone())));
    http_server::serve(http, router, args.http.limits(), wait(shutdown)).await?;
    // Beacons already answered are stored before the process ends (core runs in-process).
    beacon_flusher.finish().await;
    grpc_task.await??;
    Ok(())
}

async fn run_core(args: CoreArgs) -> anyhow::Result<()> {
    let db = args.database.connect().await?;
    let listener = bind(&args.core.grpc_addr).await?;
    let shutdown = shutdown_signal();
    args.metrics.start(shutdown.clone()).await?;
    let app = App::new(db, core_config(&args.core, args.public_url))
        .await
        .map_err(lps::Error::into_cause)?;
    app.start_workers();
    lps::memory::release_freed();
    announce(&format!(
        "gRPC listening on http://{}",
        listener.local_addr()?
    ));
    grpc::serve(app, listener, wait(shutdown)).await
}

async fn run_edge(args: EdgeArgs) -> anyhow::Result<()> {
    // No Nagle on the edge's side either; HTTP/2 pings notice a core that is paused or gone
    // (the connection is then made anew), and each call has a deadline (`deadlines`).
    let channel = tonic::transport::Endpoint::from_shared(args.core_url.clone())
        .with_context(|| format!("invalid --core-url {:?}", args.core_url))?
        .tcp_nodelay(true)
        .connect_timeout(std::time::Duration::from_secs(2))
        .http2_keep_alive_interval(std::time::Duration::from_secs(5))
        .keep_alive_timeout(std::time::Duration::from_secs(3))
        .keep_alive_while_idle(true)
        .connect_lazy();
    let secret = args
        .edge_secret
        .as_deref()
        .map(::http::HeaderValue::from_str)
        .transpose()
        .context("--edge-secret must be printable ASCII")?;
    let transport: core_client::Transport =
        BoxCloneSyncService::new(core_client::deadlines::Deadlines::new(
            channel
                .map_request(move |mut request: ::http::Request<tonic::body::Body>| {
                    if let Some(secret) = &secret {
                        request
                            .headers_mut()
                            .insert(lps::grpc::EDGE_SECRET, secret.clone());
                    }
                    lps::telemetry::inject(request.headers_mut());
                    request
                })
                .map_err(|err| core_client::TransportError(err.into())),
        ));
    let http = bind(&args.http.http_addr).await?;
    let http_addr = http.local_addr()?;
    let shutdown = shutdown_signal();
    let metrics_on_http = args.metrics.start(shutdown.clone()).await?;
    announce(&format!("HTTP listening on http://{http_addr}"));
    let public_url = args
        .public_url
        .clone()
        .unwrap_or_else(|| format!("http://{http_addr}"));
    if args.edge_secret.is_none() {
        tracing::warn!(
            "no --edge-secret: core cannot tell this edge's page loads (views are kept as \
             automated) nor its visitors' addresses; give core and edge the same secret"
        );
    }
    let (router, beacon_flusher) = build_edge(
        transport,
        None,
        &args.http,
        &public_url,
        metrics_on_http,
        args.edge_secret.as_deref(),
    );
    lps::memory::release_freed();
    http_server::serve(http, router, args.http.limits(), wait(shutdown)).await?;
    beacon_flusher.finish().await;
    Ok(())
}

/// The edge over `transport` (core in this process for `serve`, over the network for `edge`):
/// the core client with its page cache, the beacon queue and every face's routes.
fn build_edge(
    transport: core_client::Transport,
    direct: Option<lps::direct::DirectCore>,
    http: &HttpOptions,
    public_url: &str,
    metrics_on_http: bool,
    edge_secret: Option<&str>,
) -> (http::App, beacons::Flusher) {
    let core = core_client::Core::new(transport, direct, http.page_cache_mb * 1024 * 1024);
    let (beacons, flusher) = beacons::start(core.clone());
    let router = http::app(
        core,
        &http.frame_ancestors,
        http.trusted_proxies.clone(),
        beacons,
        http.mcp_settings(public_url),
        metrics_on_http,
        edge_secret,
    );
    (router, flusher)
}

/// Log lines on standard error (filtered by `LPS_LOG`, default `info`) and, with
/// `--otlp-endpoint`, the OpenTelemetry layers (their own filters: spans at info, SQL
/// statements from sqlx's events).
fn init_logs(cli: &Cli) -> anyhow::Result<()> {
    use std::io::IsTerminal;
    use tracing_subscriber::Layer as _;
    use tracing_subscriber::layer::SubscriberExt as _;
    use tracing_subscriber::util::SubscriberInitExt as _;
    let filter =
        tracing_subscriber::EnvFilter::try_from_env("LPS_LOG").unwrap_or_else(|_| "info".into());
    let lines = tracing_subscriber::fmt::layer().with_writer(std::io::stderr);
    let lines = match cli.log_format {
        LogFormat::Json => lines
            .json()
            .with_current_span(true)
            .with_filter(filter)
            .boxed(),
        LogFormat::Text => {
            let colour = std::io::stderr().is_terminal()
                && std::env::var_os("NO_COLOR").is_none_or(|value| value.is_empty());
            lines.with_ansi(colour).with_filter(filter).boxed()
        }
    };
    // `None`, not an empty list, without an endpoint: an empty list of layers hints that no
    // level is enabled, which silences every log line.
    let traces = match &cli.otlp_endpoint {
        Some(endpoint) => Some(lps::telemetry::start(
            endpoint,
            cli.otlp_protocol,
            &cli.otlp_service_name,
            cli.otlp_sample_ratio,
        )?),
        None => None,
    };
    tracing_subscriber::registry()
        .with(lines)
        .with(traces)
        .init();
    Ok(())
}

fn core_config(options: &CoreOptions, public_url: String) -> CoreConfig {
    CoreConfig {
        public_url: public_url.trim_end_matches('/').to_owned(),
        rate_limit_per_minute: options.rate_limit_per_minute,
        redis_url: options.redis_url.clone(),
        allow_private_network: options.allow_private_network,
        resolve: options.resolve.clone(),
        job_workers: options.job_workers,
        costs: lps::app::Costs {
            design_run: options.credits_per_design_run,
            enrichment: options.credits_per_enrichment,
            analysis: options.credits_per_analysis,
        },
        design_run_lease: std::time::Duration::from_secs(options.design_run_lease_seconds),
        access_token_lifetime: std::time::Duration::from_secs(options.oauth_access_token_seconds),
        edge_secret: options.edge_secret.clone(),
        scanner_networks: options.scanner_networks.clone(),
        hot_score: options.hot_score,
        event_retention_days: options.event_retention_days,
        respect_gpc: options.respect_gpc,
        callback_health: lps::app::CallbackHealth {
            unhealthy_after: options.callback_unhealthy_after,
            first_pause: std::time::Duration::from_secs(options.callback_pause_seconds),
        },
        preview_card_deadline: std::time::Duration::from_millis(options.preview_card_deadline_ms),
        llm: options
            .llm_base_url
            .clone()
            .map(|base_url| lps::app::LlmConfig {
                base_url,
                api_key: options.llm_api_key.clone(),
                model: options.llm_model.clone(),
            }),
    }
}

/// `HOST=ADDR:PORT` of `--resolve`.
fn parse_resolve(text: &str) -> Result<(String, SocketAddr), String> {
    let (host, address) = text
        .split_once('=')
        .ok_or_else(|| format!("{text}: expected HOST=ADDR:PORT"))?;
    let address: SocketAddr = address
        .parse()
        .map_err(|_| format!("{address}: expected an address with a port, e.g. 10.0.0.5:443"))?;
    if host.is_empty() {
        return Err(format!("{text}: the host is empty"));
    }
    Ok((host.to_ascii_lowercase(), address))
}

async fn bind(addr: &str) -> anyhow::Result<TcpListener> {
    TcpListener::bind(addr)
        .await
        .with_context(|| format!("cannot listen on {addr}"))
}

/// A line for the person (or test) that started the process, on standard output.
fn announce(line: &str) {
    let mut stdout = std::io::stdout().lock();
    let _ = writeln!(stdout, "{line}");
    let _ = stdout.flush();
}

fn first_start_banner(
    first: &lps::admin::Bootstrapped,
    http_addr: SocketAddr,
    database_url: &str,
) -> String {
    format!(
        "First start: created account {account}, workspace {workspace} and this API key \
         (it is shown only once):\n\n    {key}\n\nTry it:\n\n    curl -H \"Authorization: Bearer \
         {key}\" http://{http_addr}{base}/hello-world-user\n\nLost it? Make another (the server may \
         keep running):\n\n    {lps} admin key create --database-url {database_url} --workspace \
         {workspace}\n\nDashboard: http://{http_addr}/dashboard (sign in as {email}). Choose your \
         password with this link (it works once, for a day):\n\n    \
         http://{http_addr}/dashboard/setup?token={setup}\n\nor at any time with:\n\n    {lps} admin \
         user set-password --database-url {database_url} --email {email}\n\nAI assistants \
         connect to http://{http_addr}/mcp (OAuth happens by itself).\n",
        account = first.account_id,
        workspace = first.workspace_id,
        key = first.api_key,
        base = operations::BASE_PATH,
        database_url = lps::admin::redact(database_url),
        email = first.user_email,
        setup = first.password_setup.as_deref().unwrap_or_default(),
        lps = running_binary(),
    )
}

/// The path of this binary, as a shell would take it: `lps` may not be on the PATH (after
/// `cargo run` it is `target/release/lps`), so the banner's commands name what is running.
fn running_binary() -> String {
    let path = std::env::current_exe()
        .map(|path| path.display().to_string())
        .unwrap_or_else(|_| "lps".to_owned());
    if path.contains(|c: char| c.is_whitespace() || c == '\'') {
        format!("'{}'", path.replace('\'', r"'\''"))
    } else {
        path
    }
}

/// Resolves (flips to true) on Ctrl-C or SIGTERM; every server waits on a clone.
fn shutdown_signal() -> watch::Receiver<bool> {
    let (sender, receiver) = watch::channel(false);
    tokio::spawn(async move {
        let ctrl_c = tokio::signal::ctrl_c();
        #[cfg(unix)]
        let terminate = async {
            match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
                Ok(mut signal) => {
                    signal.recv().await;
                }
                Err(_) => std::future::pending().await,
            }
        };
        #[cfg(not(unix))]
        let terminate = std::future::pending::<()>();
        tokio::select! {
            _ = ctrl_c => {},
            _ = terminate => {},
        }
        tracing::info!("shutting down");
        let _ = sender.send(true);
    });
    receiver
}

async fn wait(mut shutdown: watch::Receiver<bool>) {
    let _ = shutdown.wait_for(|stop| *stop).await;
}
