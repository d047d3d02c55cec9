//! `lps`: the lead personalisation service.
//!
//! `lps serve` runs core and the REST edge in one process (the edge calls core in-process);
//! `lps core` and `lps edge --core-url URL` run the halves apart; `lps admin ...` sets up
//! accounts, workspaces and keys directly in the database.

mod cli;
mod core_client;
mod csv_upload;
mod dashboard;
mod flags;
mod http;
mod mcp;
mod oauth;
mod operations;
mod rest;
mod spreadsheet;
mod visitor;

use cli::{admin, import};
use flags::{CoreArgs, CoreOptions, EdgeArgs, HttpOptions, ServeArgs};
use http::server as http_server;
use visitor::beacons;

use std::io::Write;
use std::net::SocketAddr;

use anyhow::Context;
use clap::{Parser, Subcommand};
use lps::{App, CoreConfig, grpc};
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

/// The scheduler for a process that may run on `cpus` CPUs at once (its affinity and cgroup
/// quota, as `available_parallelism` reads them).
///
/// Given one CPU, one thread runs every task, with no work-stealing machinery: a multi-threaded
/// runtime would run one worker anyway, and pay on every wake-up and park for the other workers
/// it could steal from or hand work to. Blocking work (SQLite, renders, file reads) still runs
/// on the blocking pool's threads either way.
fn runtime_for(cpus: usize) -> tokio::runtime::Builder {
    match cpus {
        1 => tokio::runtime::Builder::new_current_thread(),
        _ => tokio::runtime::Builder::new_multi_thread(),
    }
}

fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    // One cryptography for every TLS of the process (the HTTPS listener, the ACME client).
    let _ = rustls::crypto::ring::default_provider().install_default();
    let runtime = runtime_for(std::thread::available_parallelism().map_or(1, |n| n.get()))
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
    let https = bind_https(&args.http).await?;
    let grpc_listener = bind(&args.core.grpc_addr).await?;
    let shutdown = shutdown_signal();
    let metrics_on_http = args.metrics.start(shutdown.clone()).await?;
    let bootstrapped = lps::admin::bootstrap_if_empty(&db).await?;
    let http_addr = http.local_addr()?;
    let public_url = args
        .public_url
        .unwrap_or_else(|| format!("http://{http_addr}"));
    let acme = args.core.acme(args.http.https_addr.is_some());
    let app = App::new(db, core_config(&args.core, public_url, acme))
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
    let edge = build_edge(
        transport,
        Some(lps::direct::DirectCore::new(&app)),
        &args.http,
        &app.config.public_url,
        metrics_on_http,
        // One process: core checks what this edge signs with the same keys.
        app.config.edge_secret.as_deref(),
        http_addr.port(),
        https.as_ref(),
    )?;
    // Starting allocated and dropped a few megabytes (migrations, the OpenAPI document as a
    // JSON tree, from which the served bytes and the MCP tool catalogue are made); they need
    // not stay resident while idle. `lps core` and `lps edge` do the same once started.
    lps::memory::release_freed();

    announce(&format!("HTTP listening on http://{http_addr}"));
    announce_https(https.as_ref())?;
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
    serve_http(http, https, &edge, args.http.limits(), shutdown).await?;
    // Beacons already answered are stored before the process ends (core runs in-process).
    edge.beacon_flusher.finish().await;
    grpc_task.await??;
    Ok(())
}

async fn run_core(args: CoreArgs) -> anyhow::Result<()> {
    let db = args.database.connect().await?;
    let listener = bind(&args.core.grpc_addr).await?;
    let shutdown = shutdown_signal();
    args.metrics.start(shutdown.clone()).await?;
    let acme = args.core.acme(false);
    let app = App::new(db, core_config(&args.core, args.public_url, acme))
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
    let https = bind_https(&args.http).await?;
    let http_addr = http.local_addr()?;
    let shutdown = shutdown_signal();
    let metrics_on_http = args.metrics.start(shutdown.clone()).await?;
    announce(&format!("HTTP listening on http://{http_addr}"));
    announce_https(https.as_ref())?;
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
    let edge = build_edge(
        transport,
        None,
        &args.http,
        &public_url,
        metrics_on_http,
        args.edge_secret.as_deref(),
        http_addr.port(),
        https.as_ref(),
    )?;
    lps::memory::release_freed();
    serve_http(http, https, &edge, args.http.limits(), shutdown).await?;
    edge.beacon_flusher.finish().await;
    Ok(())
}

/// The HTTPS listener (`--https`), if there is one.
async fn bind_https(http: &HttpOptions) -> anyhow::Result<Option<TcpListener>> {
    match &http.https_addr {
        Some(addr) => Ok(Some(bind(addr).await?)),
        None => Ok(None),
    }
}

fn announce_https(https: Option<&TcpListener>) -> anyhow::Result<()> {
    if let Some(https) = https {
        announce(&format!(
            "HTTPS listening on https://{}",
            https.local_addr()?
        ));
    }
    Ok(())
}

/// Serves the edge on the plain listener and, with `--https`, the HTTPS one, until shutdown.
async fn serve_http(
    http: TcpListener,
    https: Option<TcpListener>,
    edge: &Edge,
    limits: http_server::HttpLimits,
    shutdown: watch::Receiver<bool>,
) -> anyhow::Result<()> {
    let plain = http_server::serve(http, edge.app.clone(), limits, wait(shutdown.clone()), None);
    match (https, &edge.handshakes) {
        (Some(https), Some(handshakes)) => {
            let tls = http_server::serve(
                https,
                edge.app.clone(),
                limits,
                wait(shutdown),
                Some(handshakes.clone()),
            );
            tokio::try_join!(plain, tls)?;
        }
        _ => plain.await?,
    }
    Ok(())
}

/// The edge: its app, what stores its beacons before the process ends, and, answering
/// HTTPS, its handshakes.
struct Edge {
    app: http::App,
    beacon_flusher: beacons::Flusher,
    handshakes: Option<http::tls::Handshakes>,
}

/// The edge over `transport` (core in this process for `serve`, over the network for `edge`):
/// the core client with its page cache (and certificates, with an HTTPS listener), the beacon
/// queue and every face's routes.
#[allow(clippy::too_many_arguments)]
fn build_edge(
    transport: core_client::Transport,
    direct: Option<lps::direct::DirectCore>,
    http: &HttpOptions,
    public_url: &str,
    metrics_on_http: bool,
    edge_secret: Option<&str>,
    http_port: u16,
    https: Option<&TcpListener>,
) -> anyhow::Result<Edge> {
    let public_host = lps::app::orderable_public_host(public_url);
    let https_port = https
        .map(TcpListener::local_addr)
        .transpose()?
        .map(|addr| addr.port());
    let certificates = https.map(|_| {
        std::sync::Arc::new(core_client::tls_certificates::TlsCertificates::new(
            public_host.clone(),
            http::tls::provider(),
        ))
    });
    let core = core_client::Core::new(
        transport,
        direct,
        http.page_cache_mb * 1024 * 1024,
        certificates,
    );
    let handshakes = match https {
        Some(_) => Some(http::tls::Handshakes::new(core.clone(), public_host)?),
        None => None,
    };
    let (beacons, beacon_flusher) = beacons::start(
        core.clone(),
        (http.beacon_queue_mb * 1024 * 1024) as usize,
        http.beacon_spill(http_port),
    );
    let app = http::app(
        core,
        &http.frame_ancestors,
        http.trusted_proxies.clone(),
        beacons,
        http.mcp_settings(public_url),
        metrics_on_http,
        edge_secret,
        https_port,
    );
    Ok(Edge {
        app,
        beacon_flusher,
        handshakes,
    })
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

fn core_config(
    options: &CoreOptions,
    public_url: String,
    acme: Option<lps::app::AcmeConfig>,
) -> CoreConfig {
    let smtp = options.smtp_url.clone().map(|url| lps::app::SmtpConfig {
        url,
        from: options.smtp_from.clone().unwrap_or_else(|| {
            let host = url::Url::parse(&public_url)
                .ok()
                .and_then(|u| match u.host()? {
                    url::Host::Domain(domain) => Some(domain.to_owned()),
                    // An address is no mail domain.
                    _ => None,
                })
                .unwrap_or_else(|| "localhost".to_owned());
            format!("lps <lps@{host}>")
        }),
    });
    CoreConfig {
        smtp,
        acme,
        dns_server: options.dns_server,
        domain_checks: lps::app::DomainChecks {
            retry: std::time::Duration::from_secs(options.domain_retry_seconds.max(1)),
            recheck: std::time::Duration::from_secs(options.domain_recheck_seconds.max(1)),
            grace: std::time::Duration::from_secs(options.domain_grace_seconds),
        },
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
        import_abandoned_after: std::time::Duration::from_secs(
            options.import_abandoned_after_seconds,
        ),
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
