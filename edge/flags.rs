//! The command line's flags (clap) for serving: the groups `lps serve`, `lps core` and `lps
//! edge` take, each flag documented where it is declared (`lps <command> --help` shows the same
//! words), and what they are turned into (a database, the HTTP server's limits, metrics). The
//! commands themselves are in `main.rs`; `cli/` has the commands that do not serve.

use std::net::SocketAddr;

use clap::Args;
use lps::admin::Db;
use tokio::sync::watch;

use crate::http::{client_address, metrics, server as http_server};
use crate::{announce, bind, mcp, wait};

#[derive(Args, Clone)]
pub struct DatabaseArg {
    /// `sqlite://FILE` (created if missing) or `postgres://USER@HOST:PORT/DB`.
    #[arg(long, env = "LPS_DATABASE_URL", default_value = "sqlite://lps.db")]
    pub database_url: String,
    /// Seconds a request waits for a database connection (every one busy, or the database
    /// unreachable) before it is answered 503 with `Retry-After`.
    #[arg(long, env = "LPS_DATABASE_WAIT", default_value_t = 5)]
    pub database_wait: u64,
}

impl DatabaseArg {
    pub async fn connect(&self) -> anyhow::Result<Db> {
        Db::connect_waiting(
            &self.database_url,
            std::time::Duration::from_secs(self.database_wait.max(1)),
        )
        .await
    }
}

#[derive(Args, Clone)]
pub struct CoreOptions {
    /// Where core's gRPC services listen.
    #[arg(
        long = "grpc",
        env = "LPS_GRPC_ADDR",
        default_value = "127.0.0.1:50051"
    )]
    pub grpc_addr: String,
    /// Share rate limits between instances through this Redis.
    #[arg(long, env = "LPS_REDIS_URL")]
    pub redis_url: Option<String>,
    /// Requests per minute allowed to one credential.
    #[arg(long, env = "LPS_RATE_LIMIT_PER_MINUTE", default_value_t = 120,
          value_parser = clap::value_parser!(u32).range(1..))]
    pub rate_limit_per_minute: u32,
    /// Let callbacks and enrichment fetches reach private and loopback addresses (refused by
    /// default).
    #[arg(long, env = "LPS_ALLOW_PRIVATE_NETWORK")]
    pub allow_private_network: bool,
    /// `HOST=ADDR:PORT`: outbound requests (callbacks, enrichment) reach HOST at ADDR:PORT
    /// instead of its DNS answer, like curl's `--resolve` (the port applies when the URL names
    /// none). The address is still held to the private-network policy. Repeatable.
    #[arg(long = "resolve", env = "LPS_RESOLVE", value_delimiter = ',', value_parser = parse_resolve)]
    pub resolve: Vec<(String, SocketAddr)>,
    /// Background workers storing queued leads; 0 serves the API without processing jobs
    /// (another core on the same PostgreSQL does).
    #[arg(long, env = "LPS_JOB_WORKERS", default_value_t = 1)]
    pub job_workers: usize,
    /// Credits one AI design run (`POST /pages/generate`) costs.
    #[arg(long, env = "LPS_CREDITS_PER_DESIGN_RUN", default_value_t = 10,
          value_parser = clap::value_parser!(i64).range(0..))]
    pub credits_per_design_run: i64,
    /// Credits one fetching enrichment of one lead costs (`social_profile_url`,
    /// `social_posts_person`, `social_posts_company`).
    #[arg(long, env = "LPS_CREDITS_PER_ENRICHMENT", default_value_t = 1,
          value_parser = clap::value_parser!(i64).range(0..))]
    pub credits_per_enrichment: i64,
    /// Credits one written analysis of one lead costs (`company_domain`, `person_analysis`,
    /// and the AI variables of `generate_ai_variables`).
    #[arg(long, env = "LPS_CREDITS_PER_ANALYSIS", default_value_t = 2,
          value_parser = clap::value_parser!(i64).range(0..))]
    pub credits_per_analysis: i64,
    /// An OpenAI-compatible API for design generation, e.g. `https://api.openai.com/v1`
    /// (OpenAI, vLLM, Ollama, llama.cpp server). Without it design generation is refused
    /// (503, no credits spent) and enrichment analyses use the offline writers.
    #[arg(long, env = "LPS_LLM_BASE_URL")]
    pub llm_base_url: Option<String>,
    /// Sent as `Authorization: Bearer ...` to the model server.
    #[arg(long, env = "LPS_LLM_API_KEY", hide_env_values = true)]
    pub llm_api_key: Option<String>,
    /// The model to ask.
    #[arg(long, env = "LPS_LLM_MODEL", default_value = "gpt-4o-mini")]
    pub llm_model: String,
    /// Seconds a running design run belongs to its process; after that (the process died)
    /// another process, or this one restarted, takes it over. Longer than a generation takes.
    #[arg(long, env = "LPS_DESIGN_RUN_LEASE_SECONDS", default_value_t = 300,
          value_parser = clap::value_parser!(u64).range(1..))]
    pub design_run_lease_seconds: u64,
    /// Seconds an OAuth access token is accepted (refresh tokens live 30 days).
    #[arg(long, env = "LPS_OAUTH_ACCESS_TOKEN_SECONDS", default_value_t = 3600,
          value_parser = clap::value_parser!(u64).range(1..=86_400))]
    pub oauth_access_token_seconds: u64,
    /// A secret an edge running apart (`lps edge`) presents to assert its clients' addresses
    /// (login and registration limits, forms' `ip_address`); without it, an address a gRPC
    /// caller asserts is ignored and its own peer address counts.
    #[arg(long, env = "LPS_EDGE_SECRET", hide_env_values = true)]
    pub edge_secret: Option<String>,
    /// A file of networks whose page views are mail scanners' (one CIDR range or address per
    /// line, `#` comments), read again when it changes; such views are kept as
    /// `scanner_network`, never counted. See docs/api-guide.md, "Engagement: what counts",
    /// for building one.
    #[arg(long, env = "LPS_SCANNER_NETWORKS")]
    pub scanner_networks: Option<std::path::PathBuf>,
    /// The engagement score at which a lead is hot: a `lead.hot` callback is sent the first
    /// time it is reached; 0 never.
    #[arg(long, env = "LPS_HOT_SCORE", default_value_t = 8.0)]
    pub hot_score: f64,
    /// Days raw engagement events (each view, click, ...) are kept; older ones are pruned in
    /// the background, the sums and scores staying as they were. 0 keeps them forever.
    #[arg(long, env = "LPS_EVENT_RETENTION_DAYS", default_value_t = 400)]
    pub event_retention_days: u32,
    /// Seconds after which a CSV import whose file stopped arriving (its uploader killed
    /// mid-file), or whose upload was left at the dashboard's mapping step, is deleted with
    /// its staged rows.
    #[arg(long, env = "LPS_IMPORT_ABANDONED_AFTER_SECONDS",
          default_value_t = lps::csv_import::ABANDONED_AFTER.as_secs(),
          value_parser = clap::value_parser!(u64).range(1..))]
    pub import_abandoned_after_seconds: u64,
    /// Honour Global Privacy Control (`Sec-GPC: 1`): such a browser's visits are counted
    /// anonymously, with no visitor cookie and no per-visitor hash.
    #[arg(long, env = "LPS_RESPECT_GPC")]
    pub respect_gpc: bool,
    /// Failed callback attempts in a row after which a receiving host is unhealthy and paused
    /// (its callbacks wait; none is dropped).
    #[arg(long, env = "LPS_CALLBACK_UNHEALTHY_AFTER", default_value_t = 5,
          value_parser = clap::value_parser!(i64).range(1..=1000))]
    pub callback_unhealthy_after: i64,
    /// An unhealthy receiving host's first pause, in seconds; each next one doubles, at most an
    /// hour.
    #[arg(long, env = "LPS_CALLBACK_PAUSE_SECONDS", default_value_t = 60,
          value_parser = clap::value_parser!(u64).range(1..=3600))]
    pub callback_pause_seconds: u64,
    /// Milliseconds a lead's link-preview card (`og.png`) may take to be made (waiting for a
    /// renderer included) before the campaign's card stands in; that one has half as long
    /// again, then a plain card in the brand colour stands in. The lead's card is still made
    /// and kept for the next request.
    #[arg(long, env = "LPS_PREVIEW_CARD_DEADLINE_MS", default_value_t = 1000,
          value_parser = clap::value_parser!(u64).range(0..=10_000))]
    pub preview_card_deadline_ms: u64,
    /// The SMTP server email goes through: `smtps://user:pass@host:465`,
    /// `smtp://user:pass@host:587?tls=required` (STARTTLS), or `smtp://host:25` (plain, for
    /// a relay on the same network). Email channels, invitations and password resets by email
    /// need it; without it invitation links are shown on screen instead.
    #[arg(long, env = "LPS_SMTP_URL", hide_env_values = true)]
    pub smtp_url: Option<String>,
    /// The `From` of the email lps sends, e.g. `lps <lps@example.com>`; default
    /// `lps <lps@HOST>` with `--public-url`'s host.
    #[arg(long, env = "LPS_SMTP_FROM")]
    pub smtp_from: Option<String>,
    /// The DNS server workspaces' own domains are looked up with (`HOST:PORT`), for tests and
    /// private networks; default the system's resolvers (`/etc/resolv.conf`).
    #[arg(long, env = "LPS_DNS_SERVER")]
    pub dns_server: Option<std::net::SocketAddr>,
    /// How long after a domain is added (or its last failed check) it is checked again; each
    /// later retry waits twice as long, at most an hour.
    #[arg(long, env = "LPS_DOMAIN_RETRY_SECONDS", default_value_t = 30)]
    pub domain_retry_seconds: u64,
    /// How often a verified domain's DNS records are checked again.
    #[arg(long, env = "LPS_DOMAIN_RECHECK_SECONDS", default_value_t = 86_400)]
    pub domain_recheck_seconds: u64,
    /// How long a verified domain whose records are gone is still served (then it lapses).
    #[arg(long, env = "LPS_DOMAIN_GRACE_SECONDS", default_value_t = 259_200)]
    pub domain_grace_seconds: u64,
    /// The ACME server TLS certificates are ordered from (its directory URL). `lps serve
    /// --https` orders from Let's Encrypt when unset; `lps core` orders only when it is set.
    #[arg(long, env = "LPS_ACME_DIRECTORY")]
    pub acme_directory: Option<String>,
    /// The ACME account's contact email (expiry notices from the CA).
    #[arg(long, env = "LPS_ACME_EMAIL")]
    pub acme_email: Option<String>,
    /// A PEM file with the root the ACME server's own HTTPS certificate chains to (a private
    /// ACME server such as Pebble or step-ca); the system's roots when unset.
    #[arg(long, env = "LPS_ACME_CA_FILE")]
    pub acme_ca_file: Option<std::path::PathBuf>,
    /// How names are proven to the ACME server: `tls-alpn-01` (a handshake on the HTTPS
    /// listener, port 443) or `http-01` (a request on the plain HTTP listener, port 80).
    #[arg(long, env = "LPS_ACME_CHALLENGE", value_enum, default_value_t = AcmeChallenge::TlsAlpn01)]
    pub acme_challenge: AcmeChallenge,
    /// How long after a failed certificate order it is tried again; each later retry waits
    /// twice as long, at most a day.
    #[arg(long, env = "LPS_ACME_RETRY_SECONDS", default_value_t = 60)]
    pub acme_retry_seconds: u64,
}

/// `--acme-challenge`.
#[derive(Clone, Copy, clap::ValueEnum)]
pub enum AcmeChallenge {
    #[value(name = "tls-alpn-01")]
    TlsAlpn01,
    #[value(name = "http-01")]
    Http01,
}

impl CoreOptions {
    /// Where certificates are ordered: `--acme-directory`, else Let's Encrypt when this
    /// process terminates TLS (`https`), else nowhere.
    pub fn acme(&self, https: bool) -> Option<lps::app::AcmeConfig> {
        let directory = match (&self.acme_directory, https) {
            (Some(directory), _) => directory.clone(),
            (None, true) => lps::app::LETS_ENCRYPT.to_owned(),
            (None, false) => return None,
        };
        Some(lps::app::AcmeConfig {
            directory,
            email: self.acme_email.clone(),
            ca_file: self.acme_ca_file.clone(),
            challenge: match self.acme_challenge {
                AcmeChallenge::TlsAlpn01 => lps::app::AcmeChallenge::TlsAlpn01,
                AcmeChallenge::Http01 => lps::app::AcmeChallenge::Http01,
            },
            retry: std::time::Duration::from_secs(self.acme_retry_seconds.max(1)),
        })
    }
}

#[derive(Args, Clone)]
pub struct HttpOptions {
    /// Where the REST API and visitor pages listen.
    #[arg(long = "http", env = "LPS_HTTP_ADDR", default_value = "127.0.0.1:8080")]
    pub http_addr: String,
    /// Where lps answers HTTPS itself (e.g. `0.0.0.0:443`), with certificates ordered by ACME
    /// for the public URL's host and every verified domain (`--acme-*`). Plain HTTP to a
    /// name with a certificate is then redirected here, and HTTPS answers carry HSTS.
    #[arg(long = "https", env = "LPS_HTTPS_ADDR")]
    pub https_addr: Option<String>,
    /// Seconds a connection has to send a complete request head; also how long an idle
    /// keep-alive connection is kept.
    #[arg(long, env = "LPS_HTTP_HEADER_TIMEOUT", default_value_t = 10,
          value_parser = clap::value_parser!(u64).range(1..))]
    pub http_header_timeout: u64,
    /// Seconds a request body may pause before the request is dropped.
    #[arg(long, env = "LPS_HTTP_BODY_TIMEOUT", default_value_t = 30,
          value_parser = clap::value_parser!(u64).range(1..))]
    pub http_body_timeout: u64,
    /// Seconds a whole request body may take to arrive, however steadily it trickles in (408
    /// past it).
    #[arg(long, env = "LPS_HTTP_BODY_DEADLINE", default_value_t = 120,
          value_parser = clap::value_parser!(u64).range(1..))]
    pub http_body_deadline: u64,
    /// Who may frame visitor pages (CSP `frame-ancestors`), e.g. `'self' https://app.example`.
    #[arg(long, env = "LPS_FRAME_ANCESTORS", default_value = "'none'")]
    pub frame_ancestors: String,
    /// Proxies (`CIDR,...`) whose `X-Forwarded-For` names the client; by default the TCP peer
    /// is the client.
    #[arg(long, env = "LPS_TRUSTED_PROXIES", default_value = "",
          value_parser = client_address::TrustedProxies::parse)]
    pub trusted_proxies: client_address::TrustedProxies,
    /// Browser origins (`https://app.example,...`) allowed to call `/mcp`, besides the public
    /// URL's own; any other `Origin` is refused (DNS-rebinding protection).
    #[arg(long, env = "LPS_MCP_ALLOWED_ORIGINS", value_delimiter = ',')]
    pub mcp_allowed_origins: Vec<String>,
    /// HTTP connections served at once; more wait to be accepted.
    #[arg(long, env = "LPS_HTTP_MAX_CONNECTIONS", default_value_t = 4096,
          value_parser = clap::value_parser!(u64).range(1..))]
    pub http_max_connections: u64,
    /// Memory for visitors' pages kept as rendered, in MiB (0: every visit asks core). Pages
    /// are dropped the moment they change; the least valuable go first when it is full.
    #[arg(long, env = "LPS_PAGE_CACHE_MB", default_value_t = 64)]
    pub page_cache_mb: u64,
    /// Memory for beacons acknowledged and not yet sent to core, in MiB; past it they go to
    /// the spill file.
    #[arg(long, env = "LPS_BEACON_QUEUE_MB", default_value_t = crate::visitor::beacons::DEFAULT_QUEUE_MB)]
    pub beacon_queue_mb: u64,
    /// Disk for beacons past the memory queue (`--beacon-queue-mb`), in MiB (0: none; past memory they are
    /// refused 503). The file is `lps-beacons-PORT.spill` in `--beacon-spill-dir`; a process
    /// started again on the same port and directory sends what an earlier one left in it.
    #[arg(long, env = "LPS_BEACON_SPILL_MB", default_value_t = 1024)]
    pub beacon_spill_mb: u64,
    /// Where the beacon spill file is kept (default: the system's temporary directory).
    #[arg(long, env = "LPS_BEACON_SPILL_DIR")]
    pub beacon_spill_dir: Option<std::path::PathBuf>,
}

impl HttpOptions {
    /// The file beacons past the memory queue go to, for the process serving HTTP on `port`.
    pub fn beacon_spill(&self, port: u16) -> Option<crate::visitor::beacon_spill::Spill> {
        let dir = self
            .beacon_spill_dir
            .clone()
            .unwrap_or_else(std::env::temp_dir);
        crate::visitor::beacon_spill::Spill::open(&dir, port, self.beacon_spill_mb * 1024 * 1024)
    }

    pub fn mcp_settings(&self, public_url: &str) -> mcp::McpSettings {
        mcp::McpSettings {
            public_url: public_url.trim_end_matches('/').to_owned(),
            allowed_origins: self.mcp_allowed_origins.clone(),
        }
    }

    pub fn limits(&self) -> http_server::HttpLimits {
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
pub struct MetricsArg {
    /// Serve `GET /metrics` (Prometheus) on this address of its own (e.g. a private
    /// interface) instead of on the HTTP port; `lps core` serves metrics only when given one.
    /// `off`: nothing is measured (and `/metrics` is not served).
    #[arg(long = "metrics", env = "LPS_METRICS_ADDR")]
    pub metrics_addr: Option<String>,
}

impl MetricsArg {
    /// Installs the recorder and, when asked, listens for scrapes; true when `/metrics` stays
    /// on the HTTP port.
    pub async fn start(&self, shutdown: watch::Receiver<bool>) -> anyhow::Result<bool> {
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
pub struct ServeArgs {
    #[command(flatten)]
    pub database: DatabaseArg,
    #[command(flatten)]
    pub metrics: MetricsArg,
    #[command(flatten)]
    pub http: HttpOptions,
    #[command(flatten)]
    pub core: CoreOptions,
    /// The address visitors use to reach pages; defaults to `http://` plus the HTTP address.
    #[arg(long, env = "LPS_PUBLIC_URL")]
    pub public_url: Option<String>,
}

#[derive(Args)]
pub struct CoreArgs {
    #[command(flatten)]
    pub database: DatabaseArg,
    #[command(flatten)]
    pub metrics: MetricsArg,
    #[command(flatten)]
    pub core: CoreOptions,
    /// The address visitors use to reach pages (served by the edge).
    #[arg(long, env = "LPS_PUBLIC_URL", default_value = "http://127.0.0.1:8080")]
    pub public_url: String,
}

#[derive(Args)]
pub struct EdgeArgs {
    /// The core to call, e.g. `http://127.0.0.1:50051`.
    #[arg(long, env = "LPS_CORE_URL")]
    pub core_url: String,
    #[command(flatten)]
    pub metrics: MetricsArg,
    #[command(flatten)]
    pub http: HttpOptions,
    /// Where clients reach this edge (MCP's resource address); defaults to `http://` plus the
    /// HTTP address.
    #[arg(long, env = "LPS_PUBLIC_URL")]
    pub public_url: Option<String>,
    /// The core's `--edge-secret`: lets this edge tell core its clients' addresses, and core
    /// check the page-load tokens and notices this edge signs.
    #[arg(long, env = "LPS_EDGE_SECRET", hide_env_values = true)]
    pub edge_secret: Option<String>,
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
