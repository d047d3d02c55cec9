//! The running core's shared state: storage, configuration and the rate limiter.

use std::sync::Arc;

use tokio::sync::Notify;

use crate::jobs::events::JobEvents;
use crate::ratelimit::RateLimiter;
use crate::store::{Db, Dialect};

pub use crate::domain::credits::Costs;
pub use crate::jobs::callbacks::Health as CallbackHealth;
pub use crate::llm::LlmConfig;

/// How a core instance is configured (from `lps serve` / `lps core` flags).
#[derive(Debug, Clone)]
pub struct CoreConfig {
    /// Where visitors reach pages, e.g. `http://127.0.0.1:8080`; page addresses start with it.
    pub public_url: String,
    /// Requests per minute allowed to one credential.
    pub rate_limit_per_minute: u32,
    /// Shares rate-limit state between instances when set.
    pub redis_url: Option<String>,
    /// Lets callbacks and enrichment fetches go to private and loopback addresses (for tests
    /// and private networks).
    pub allow_private_network: bool,
    /// Hosts that outbound requests reach at a fixed address instead of their DNS answer.
    pub resolve: Vec<(String, std::net::SocketAddr)>,
    /// How many job workers this process runs (0: none, and no design worker either).
    pub job_workers: usize,
    /// What operations cost.
    pub costs: crate::domain::credits::Costs,
    /// The model server for design generation and analyses; the offline writers when unset.
    pub llm: Option<crate::llm::LlmConfig>,
    /// How long a running design run belongs to its process before another may take it over.
    pub design_run_lease: std::time::Duration,
    /// How long an OAuth access token is accepted.
    pub access_token_lifetime: std::time::Duration,
    /// What an edge running apart presents to assert its clients' addresses.
    pub edge_secret: Option<String>,
    /// Networks whose views are mail scanners' (`--scanner-networks FILE`).
    pub scanner_networks: Option<std::path::PathBuf>,
    /// The engagement score at which a lead is hot (`lead.hot`); 0 never.
    pub hot_score: f64,
    /// Days raw engagement events are kept; 0 forever.
    pub event_retention_days: u32,
    /// A CSV import still receiving its file, idle this long, was abandoned and is deleted.
    pub import_abandoned_after: std::time::Duration,
    /// Honour `Sec-GPC: 1`: no per-visitor identity for such a browser's beacons.
    pub respect_gpc: bool,
    /// When a callback receiver is taken for unhealthy and paused.
    pub callback_health: CallbackHealth,
    /// How long a lead's link-preview card may take to be made before the campaign's card
    /// stands in (`domain::preview_cards`).
    pub preview_card_deadline: std::time::Duration,
    /// The SMTP server email goes through (`--smtp-url`) and its `From` (`--smtp-from`); no
    /// email without it (invitation links are shown instead, email channels refused).
    pub smtp: Option<SmtpConfig>,
    /// The DNS server custom domains are looked up with (`--dns-server`); the system's when
    /// unset.
    pub dns_server: Option<std::net::SocketAddr>,
    /// When custom domains are checked (`domain::domains`).
    pub domain_checks: DomainChecks,
    /// Where TLS certificates are ordered (`domain::certificates`); none ordered when unset.
    pub acme: Option<AcmeConfig>,
}

pub use crate::domain::certificates::{
    ACME_TLS_ALPN, AcmeConfig, Challenge as AcmeChallenge, LETS_ENCRYPT, orderable_public_host,
};
pub use crate::domain::domains::DomainChecks;

/// Where email goes out.
#[derive(Debug, Clone)]
pub struct SmtpConfig {
    /// `smtp[s]://user:pass@host:port`.
    pub url: String,
    /// The `From` address, e.g. `lps <lps@example.com>`.
    pub from: String,
}

impl CoreConfig {
    /// The address of the dashboard's `path` (`/leads/7`), as links lps sends out name it.
    pub fn dashboard_url(&self, path: &str) -> String {
        format!("{}/dashboard{path}", self.public_url.trim_end_matches('/'))
    }
}

/// Everything a request handler in core needs. Cheap to clone (one reference count: every
/// gRPC call clones it).
#[derive(Clone)]
pub struct App(Arc<AppState>);

impl std::ops::Deref for App {
    type Target = AppState;

    fn deref(&self) -> &AppState {
        &self.0
    }
}

/// What an [`App`] shares.
pub struct AppState {
    pub db: Db,
    pub config: Arc<CoreConfig>,
    pub limiter: Arc<RateLimiter>,
    /// Job status changes, for `WatchJob`.
    pub events: JobEvents,
    /// Wakes the job worker when rows are queued.
    pub work: Arc<Notify>,
    /// Wakes the callback sender when callbacks are queued.
    pub callbacks_due: Arc<Notify>,
    /// Compiled published designs, per campaign and version.
    pub designs: Arc<crate::render::DesignCache>,
    /// What recording beacons remembers between batches.
    pub recorder: Arc<crate::domain::engagement::Recorder>,
    /// Counted engagement as it is recorded, for `WatchEngagement`.
    pub feed: crate::domain::engagement_feed::Feed,
    /// Writes page designs from prompts.
    pub generator: Arc<crate::generator::Generator>,
    /// Wakes the design worker when a run is queued.
    pub design_runs_due: Arc<Notify>,
    /// Finds out about leads (enrichment).
    pub enricher: Arc<crate::enricher::Enricher>,
    /// Wakes the enrichment worker when leads are queued for enrichment.
    pub enrichments_due: Arc<Notify>,
    /// Credentials resolved recently, cleared by every revocation.
    pub credentials: Arc<crate::credentials::CredentialCache>,
    /// Login attempts (ten a minute per email and per client address) and client
    /// registrations (ten a minute per client address).
    pub login_limiter: Arc<RateLimiter>,
    /// What changes visitors' pages, for caches of rendered pages.
    pub page_changes: Arc<crate::domain::page_changes::PageChanges>,
    /// Link-preview cards made, by entity tag (published version and lead).
    pub preview_images: Arc<quick_cache::sync::Cache<String, Arc<Vec<u8>>>>,
    /// What the link-preview cards of a published version share, with that version's own card,
    /// by campaign and version.
    pub preview_looks:
        Arc<quick_cache::sync::Cache<(i64, i64), Arc<crate::domain::preview_cards::CampaignLook>>>,
    /// Networks whose page views are mail scanners'.
    pub scanner_networks: Arc<crate::domain::scanner_networks::ScannerNetworks>,
    /// Checks that a view's page load was one an edge served (`keys`).
    pub page_loads: crate::keys::PageLoads,
    /// Sends email, when an SMTP server is configured.
    pub mailer: Option<Arc<crate::mailer::Mailer>>,
    /// Looks up custom domains' DNS records.
    pub dns: crate::dns::Dns,
    /// Wakes the domain checker when a domain is added.
    pub domains_due: Arc<Notify>,
    /// Where pages are handed out, kept between changes (`domains::page_addresses`).
    pub page_addresses: crate::domain::domains::KeptAddresses,
    /// The ACME account certificates are ordered with, once made or read.
    pub acme_account: crate::domain::certificates::AcmeAccount,
}

/// Link-preview cards kept in memory (each 20 to 80 KB).
pub const PREVIEW_IMAGES_KEPT: usize = 128;

impl App {
    /// Connects the rate limiter's store (Redis when configured) around an open database.
    /// Also installs (or refreshes) the premade templates.
    pub async fn new(db: Db, config: CoreConfig) -> crate::Result<Self> {
        crate::render::premade::install(&db).await?;
        let limiter =
            RateLimiter::new(config.rate_limit_per_minute, config.redis_url.as_deref()).await?;
        let login_limiter = RateLimiter::new(10, config.redis_url.as_deref()).await?;
        let db_dialect = db.dialect();
        let config_edge_secret = config.edge_secret.clone();
        let generator = crate::generator::Generator::new(config.llm.clone());
        let enricher = crate::enricher::Enricher::new(
            config.llm.clone(),
            config.allow_private_network,
            &config.resolve,
        )
        .map_err(crate::Error::Internal)?;
        let scanner_networks =
            crate::domain::scanner_networks::ScannerNetworks::open(config.scanner_networks.clone())
                .map_err(crate::Error::Internal)?;
        let mailer = match &config.smtp {
            Some(smtp) => Some(Arc::new(
                crate::mailer::Mailer::new(&smtp.url, &smtp.from)
                    .map_err(crate::Error::Internal)?,
            )),
            None => None,
        };
        let dns = crate::dns::Dns::new(config.dns_server).map_err(crate::Error::Internal)?;
        Ok(Self(Arc::new(AppState {
            dns,
            domains_due: Arc::new(Notify::new()),
            page_addresses: Default::default(),
            acme_account: Default::default(),
            db,
            config: Arc::new(config),
            limiter: Arc::new(limiter),
            events: JobEvents::default(),
            work: Arc::new(Notify::new()),
            callbacks_due: Arc::new(Notify::new()),
            designs: Arc::default(),
            recorder: Arc::default(),
            feed: crate::domain::engagement_feed::Feed::default(),
            generator: Arc::new(generator),
            design_runs_due: Arc::new(Notify::new()),
            enricher: Arc::new(enricher),
            enrichments_due: Arc::new(Notify::new()),
            login_limiter: Arc::new(login_limiter),
            credentials: Arc::new(crate::credentials::CredentialCache::new(db_dialect)),
            page_changes: Arc::default(),
            preview_images: Arc::new(quick_cache::sync::Cache::new(PREVIEW_IMAGES_KEPT)),
            preview_looks: Arc::new(quick_cache::sync::Cache::new(
                crate::domain::preview_cards::LOOKS_KEPT,
            )),
            scanner_networks: Arc::new(scanner_networks),
            page_loads: crate::keys::PageLoads::new(config_edge_secret.as_deref()),
            mailer,
        })))
    }

    /// Starts the background work of a core process: the job worker, the callback sender and,
    /// on PostgreSQL, the relays of other processes' job and engagement events.
    pub fn start_workers(&self) {
        crate::jobs::worker::start(self, self.config.job_workers);
        if self.config.job_workers > 0 {
            tokio::spawn(crate::jobs::design_runs::run(self.clone()));
            tokio::spawn(crate::jobs::enrichment::run(self.clone()));
            tokio::spawn(crate::jobs::assets::run(self.clone()));
        }
        tokio::spawn(crate::jobs::callbacks::run(self.clone()));
        tokio::spawn(crate::domain::notifications::digest::send_due_forever(
            self.clone(),
        ));
        tokio::spawn(crate::domain::erasure::resume_at_start(self.clone()));
        tokio::spawn(crate::domain::idempotency::forget_expired_forever(
            self.clone(),
        ));
        tokio::spawn(crate::domain::oauth::forget_unused_clients_forever(
            self.clone(),
        ));
        tokio::spawn(crate::domain::page_changes::relay(self.clone()));
        tokio::spawn(crate::domain::csv_imports::sweep_forever(self.clone()));
        tokio::spawn(crate::domain::domains::check_due_forever(self.clone()));
        if self.config.acme.is_some() {
            tokio::spawn(crate::domain::certificates::order_due_forever(self.clone()));
        }
        if self.config.event_retention_days > 0 {
            tokio::spawn(crate::domain::retention::prune_forever(self.clone()));
        }
        tokio::spawn(crate::metrics::sample_forever(
            self.clone(),
            crate::time::now(),
        ));
        if self.db.dialect() == Dialect::Postgres {
            tokio::spawn(self.events.clone().relay_postgres(self.db.url().to_owned()));
            tokio::spawn(self.feed.clone().relay_postgres(self.db.url().to_owned()));
            tokio::spawn(crate::credentials::relay_postgres(
                self.credentials.clone(),
                self.db.url().to_owned(),
            ));
        }
    }
}

/// An app on a migrated SQLite file of its own, configured as `lps serve` is by default with
/// no workers, for tests that drive core's domain functions.
#[cfg(test)]
pub(crate) async fn test_app() -> (tempfile::TempDir, App) {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}", dir.path().join("lps.db").display());
    let db = Db::connect(&url).await.unwrap();
    let config = CoreConfig {
        public_url: "http://127.0.0.1:8080".to_owned(),
        rate_limit_per_minute: 100_000,
        redis_url: None,
        allow_private_network: false,
        resolve: Vec::new(),
        job_workers: 0,
        costs: Costs::default(),
        llm: None,
        design_run_lease: std::time::Duration::from_secs(60),
        access_token_lifetime: std::time::Duration::from_secs(3_600),
        edge_secret: None,
        scanner_networks: None,
        hot_score: 0.0,
        event_retention_days: 0,
        import_abandoned_after: crate::csv_import::ABANDONED_AFTER,
        respect_gpc: false,
        callback_health: CallbackHealth {
            unhealthy_after: 5,
            first_pause: std::time::Duration::from_secs(60),
        },
        preview_card_deadline: std::time::Duration::from_secs(1),
        smtp: None,
        dns_server: None,
        domain_checks: DomainChecks::default(),
        acme: None,
    };
    (dir, App::new(db, config).await.unwrap())
}
