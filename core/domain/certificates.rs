//! TLS certificates for the names lps answers on, ordered by ACME (RFC 8555) when lps
//! terminates TLS itself (`--https`; the ACME server: `--acme-directory`).
//!
//! The names are the public URL's host (when it is a DNS name, not an address or `localhost`)
//! and every verified domain: nothing else is ever ordered, whatever a stranger's TLS client
//! names (the edge answers an unknown name with no certificate and never asks core to order).
//! Each name has its own certificate, so one domain's failure or deletion touches no other.
//!
//! Every pass (every few seconds), the names wanted are written down (`certificates` rows; a
//! name no longer served is forgotten), and the names due are ordered: at once when new, 30
//! days before expiry once issued (or a third of the lifetime before, for certificates
//! shorter than 90 days), after a failure with backoff (`--acme-retry-seconds`, doubling, at
//! most daily). A process takes a name under a lease in the database, so on PostgreSQL one
//! process at a time orders it; the answers the ACME server's validation asks for
//! (`acme_challenges`) are kept in the database too, so whichever process the validation
//! reaches answers it. A certificate issued is kept, then announced as a page change
//! (`certificates`), on which every edge reads the certificates again: no restart.

use std::path::PathBuf;
use std::sync::atomic::{AtomicI64, Ordering};
use std::time::Duration;

use instant_acme::{
    Account, AccountCredentials, AuthorizationStatus, ChallengeType, Identifier, NewAccount,
    NewOrder, OrderStatus, RetryPolicy,
};

use crate::domain::page_changes::{self, Changed};
use crate::store::certificates::{self as store, CertificateRow, Issued};
use crate::time::{self, Micros};
use crate::{App, Error, Result};

/// Let's Encrypt's production directory: the default of `--acme-directory`.
pub const LETS_ENCRYPT: &str = "https://acme-v02.api.letsencrypt.org/directory";
/// How long before expiry a certificate is renewed (Let's Encrypt's advice).
const RENEW_BEFORE: Duration = Duration::from_secs(30 * 86_400);
/// How long a process holds a name it is ordering before another may.
const ORDER_LEASE: Duration = Duration::from_secs(300);
/// The longest one order may take, from its creation to its certificate.
const ORDER_DEADLINE: Duration = Duration::from_secs(180);
/// The longest backoff after failed orders.
const MOST_RETRY: Duration = Duration::from_secs(86_400);
/// Names ordered per pass of the worker.
const ORDERED_PER_PASS: i64 = 5;
/// How often the worker looks for names due.
const PASS_EVERY: Duration = Duration::from_secs(3);
/// Orders the deployment starts in an hour at most, whatever the names: Let's Encrypt allows
/// an account 300 new orders in three hours, and one tenant adding and deleting names must
/// not use up every tenant's renewals.
pub const MOST_ORDERS_AN_HOUR: i64 = 100;
/// How long a certificate no longer wanted is kept, for its name wanted again.
const KEPT_UNWANTED: Duration = Duration::from_secs(90 * 86_400);

/// The ACME label a TLS client offers (ALPN) when it validates a TLS-ALPN-01 challenge.
pub const ACME_TLS_ALPN: &[u8] = b"acme-tls/1";

/// Where and how certificates are ordered (`--acme-*` flags).
#[derive(Debug, Clone)]
pub struct AcmeConfig {
    /// The ACME server's directory URL.
    pub directory: String,
    /// The account's contact (`mailto:`), if any.
    pub email: Option<String>,
    /// A PEM file with the root the ACME server's own HTTPS certificate chains to, for a
    /// private ACME server (Pebble, step-ca); the system's roots when unset.
    pub ca_file: Option<PathBuf>,
    /// How names are proven.
    pub challenge: Challenge,
    /// The first retry after a failed order; each later one waits twice as long.
    pub retry: Duration,
}

/// How the ACME server validates that lps answers for a name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Challenge {
    /// `http://{name}/.well-known/acme-challenge/{token}` on the plain listener (port 80).
    Http01,
    /// A TLS handshake to `{name}:443` offering `acme-tls/1` (RFC 8737): needs only the HTTPS
    /// listener.
    TlsAlpn01,
}

impl Challenge {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Http01 => "http-01",
            Self::TlsAlpn01 => "tls-alpn-01",
        }
    }

    fn acme_type(self) -> ChallengeType {
        match self {
            Self::Http01 => ChallengeType::Http01,
            Self::TlsAlpn01 => ChallengeType::TlsAlpn01,
        }
    }
}

/// The ACME account, made or read once per process.
#[derive(Default)]
pub struct AcmeAccount(tokio::sync::OnceCell<Account>);

/// An issued certificate, as the edges serve it.
pub struct Served {
    pub hostname: String,
    pub chain_pem: String,
    pub key_pem: String,
    pub not_after: Micros,
}

/// Where a name's certificate stands, as its domain's owners see it.
#[derive(Debug, Clone)]
pub struct Https {
    /// `issued` (served over HTTPS), `ordering` (the first order not done yet) or `failing`
    /// (the last order failed; tried again at `next_order_at`; an issued one stays served).
    pub status: &'static str,
    /// When the certificate served ends.
    pub expires_at: Option<Micros>,
    /// Why the last order failed.
    pub reason: Option<String>,
    /// When it is ordered (again) next.
    pub next_order_at: Micros,
}

/// Where `hostname`'s certificate stands; `None` when lps orders none (no ACME, or the name
/// is not verified).
pub async fn https_of(app: &App, hostname: &str) -> Result<Option<Https>> {
    if app.config.acme.is_none() {
        return Ok(None);
    }
    let Some(row) = store::find(app.db.pool(), hostname).await? else {
        return Ok(None);
    };
    let status = match (&row.chain_pem, &row.last_error) {
        (Some(_), None) => "issued",
        (None, None) => "ordering",
        (_, Some(_)) => "failing",
    };
    Ok(Some(Https {
        status,
        expires_at: row.not_after,
        reason: row.last_error,
        next_order_at: row.next_order_at,
    }))
}

/// Every issued certificate (for the edges: `VisitorService.ListCertificates`, which only a
/// trusted edge may call).
pub async fn issued(app: &App) -> Result<Vec<Served>> {
    Ok(store::issued(app.db.pool())
        .await?
        .into_iter()
        .filter_map(|row| {
            Some(Served {
                chain_pem: row.chain_pem?,
                key_pem: row.key_pem?,
                not_after: row.not_after?,
                hostname: row.hostname,
            })
        })
        .collect())
}

/// The answer kept for an ACME validation of `kind` under `name` (a token, or a hostname):
/// the key authorization (HTTP-01), or a certificate and key in PEM (TLS-ALPN-01).
pub async fn challenge(app: &App, kind: Challenge, name: &str) -> Result<Option<String>> {
    Ok(store::challenge(app.db.pool(), kind.as_str(), name).await?)
}

/// Orders what is due, now and every few seconds, until the process ends (only when ACME is
/// configured).
pub async fn order_due_forever(app: App) {
    loop {
        if let Err(err) = order_due(&app).await {
            tracing::warn!(error = %err, "certificates could not be ordered; trying again");
        }
        tokio::time::sleep(PASS_EVERY).await;
    }
}

/// One pass: the names wanted written down, those due ordered.
pub async fn order_due(app: &App) -> Result<()> {
    let Some(acme) = app.config.acme.as_ref() else {
        return Ok(());
    };
    want_names(app).await?;
    let now = time::now();
    if !store::any_due(app.db.pool(), now).await? {
        return Ok(());
    }
    let an_hour_ago = now - time::micros(Duration::from_secs(3600));
    let budget = MOST_ORDERS_AN_HOUR - store::ordered_since(app.db.pool(), an_hour_ago).await?;
    if budget <= 0 {
        // Said once a minute at most, not every pass.
        static SAID_AT_MINUTE: AtomicI64 = AtomicI64::new(0);
        let minute = now / 60_000_000;
        if SAID_AT_MINUTE.swap(minute, Ordering::Relaxed) != minute {
            tracing::warn!(
                "{MOST_ORDERS_AN_HOUR} certificate orders were started in the last hour: the \
                 names due wait"
            );
        }
        return Ok(());
    }
    let due = {
        let mut tx = app.db.begin_write().await?;
        let lease_until = now + time::micros(ORDER_LEASE);
        let most = ORDERED_PER_PASS.min(budget);
        let due = store::claim_due(&mut tx, now, lease_until, most).await?;
        tx.commit().await?;
        due
    };
    for row in due {
        order_and_keep(app, acme, row).await?;
    }
    Ok(())
}

/// Writes down the names a certificate is wanted for, and forgets those no longer served (kept
/// a while, unwanted: see the migration).
async fn want_names(app: &App) -> Result<()> {
    // The verified domains, read from their store: `domains` asks this module how each
    // domain's certificate stands, not the other way round.
    let mut wanted: Vec<String> = crate::store::domains::served(app.db.pool())
        .await?
        .into_iter()
        .map(|row| row.hostname)
        .collect();
    if let Some(public) = orderable_public_host(&app.config.public_url) {
        wanted.push(public);
    }
    // Sets: a deployment may serve thousands of domains, compared every pass.
    let wanted: std::collections::HashSet<String> = wanted.into_iter().collect();
    let kept: std::collections::HashSet<String> =
        store::hostnames(app.db.pool()).await?.into_iter().collect();
    let new: Vec<&String> = wanted.difference(&kept).collect();
    let gone: Vec<&String> = kept.difference(&wanted).collect();
    if new.is_empty() && gone.is_empty() {
        return Ok(());
    }
    let now = time::now();
    let mut tx = app.db.begin_write().await?;
    let mut served_changed = false;
    for name in new {
        served_changed |= store::want(&mut tx, name, now).await?;
    }
    for name in gone {
        served_changed |= store::forget(&mut tx, name, now).await?;
    }
    store::prune(&mut *tx, now - time::micros(KEPT_UNWANTED)).await?;
    if served_changed {
        page_changes::commit(app, tx, Changed::Certificates).await?;
    } else {
        tx.commit().await?;
    }
    Ok(())
}

/// The public URL's host, if a CA could issue for it: a DNS name with a dot, not an address
/// nor `localhost`.
pub fn orderable_public_host(public_url: &str) -> Option<String> {
    let url = url::Url::parse(public_url).ok()?;
    match url.host()? {
        url::Host::Domain(name) if name.contains('.') && !name.ends_with(".localhost") => {
            Some(name.trim_end_matches('.').to_ascii_lowercase())
        }
        _ => None,
    }
}

/// Orders `row`'s name and keeps what came of it.
async fn order_and_keep(app: &App, acme: &AcmeConfig, row: CertificateRow) -> Result<()> {
    let hostname = row.hostname.clone();
    let outcome = tokio::time::timeout(ORDER_DEADLINE, order(app, acme, &hostname)).await;
    // The answers are only asked for while ordering.
    store::drop_challenges(app.db.pool(), &hostname).await?;
    let now = time::now();
    match outcome.unwrap_or_else(|_| Err(OrderError("the order took too long".to_owned()))) {
        Ok(ordered) => {
            crate::metrics::acme_order("issued");
            tracing::info!(%hostname, "certificate issued");
            let issued = Issued {
                chain_pem: &ordered.chain_pem,
                key_pem: &ordered.key_pem,
                not_after: ordered.not_after,
                renew_at: renew_at(now, ordered.not_before, ordered.not_after),
            };
            let mut tx = app.db.begin_write().await?;
            if store::keep_issued(&mut tx, &hostname, &issued, now).await? {
                page_changes::commit(app, tx, Changed::Certificates).await?;
            } else {
                tx.commit().await?;
            }
        }
        Err(OrderError(error)) => {
            crate::metrics::acme_order("failed");
            let attempts = row.attempts + 1;
            let wait = retry_after(acme.retry, attempts);
            tracing::warn!(%hostname, %error, attempts, retry_in_seconds = wait.as_secs(),
                "a certificate could not be ordered");
            let mut tx = app.db.begin_write().await?;
            store::keep_failure(
                &mut tx,
                &hostname,
                &error,
                attempts,
                now + time::micros(wait),
                now,
            )
            .await?;
            tx.commit().await?;
        }
    }
    Ok(())
}

/// When a certificate valid from `not_before` to `not_after`, issued `now`, is renewed: 30
/// days before it ends, or a third of its lifetime before for one shorter than 90 days, and
/// never before half its remaining time has passed (a CA that backdates `not_before` a lot
/// cannot make lps order again at once, and again).
fn renew_at(now: Micros, not_before: Micros, not_after: Micros) -> Micros {
    let lifetime = (not_after - not_before).max(0);
    let remaining = (not_after - now).max(0);
    not_after
        - time::micros(RENEW_BEFORE)
            .min(lifetime / 3)
            .min(remaining / 2)
}

/// The wait before the next order after `attempts` failed ones: `first`, doubling, at most a
/// day.
fn retry_after(first: Duration, attempts: i64) -> Duration {
    let doublings = u32::try_from(attempts.saturating_sub(1).clamp(0, 20)).unwrap_or(20);
    first
        .saturating_mul(1 << doublings)
        .min(MOST_RETRY)
        .max(Duration::from_secs(1))
}

/// A certificate just issued.
struct Ordered {
    chain_pem: String,
    key_pem: String,
    not_before: Micros,
    not_after: Micros,
}

/// Why an order failed, as the operator reads it.
#[derive(Debug)]
struct OrderError(String);

impl<E: std::fmt::Display> From<E> for OrderError {
    fn from(error: E) -> Self {
        Self(error.to_string())
    }
}

/// One ACME order for `hostname`: the account, the order, its authorization proven by
/// `acme.challenge`, the key and CSR made here, the certificate fetched.
async fn order(app: &App, acme: &AcmeConfig, hostname: &str) -> Result<Ordered, OrderError> {
    let account = app
        .acme_account
        .0
        .get_or_try_init(|| account(app, acme))
        .await?;
    let identifiers = [Identifier::Dns(hostname.to_owned())];
    let mut order = account.new_order(&NewOrder::new(&identifiers)).await?;
    let mut authorizations = order.authorizations();
    while let Some(authorization) = authorizations.next().await {
        let mut authorization = authorization?;
        match authorization.status {
            AuthorizationStatus::Pending => {}
            AuthorizationStatus::Valid => continue,
            other => return Err(OrderError(format!("the authorization is {other:?}"))),
        }
        let mut challenge = authorization
            .challenge(acme.challenge.acme_type())
            .ok_or_else(|| {
                OrderError(format!(
                    "the ACME server offers no {} challenge",
                    acme.challenge.as_str()
                ))
            })?;
        let key_authorization = challenge.key_authorization();
        let (name, response) = match acme.challenge {
            Challenge::Http01 => (
                challenge.token.clone(),
                key_authorization.as_str().to_owned(),
            ),
            Challenge::TlsAlpn01 => (
                hostname.to_owned(),
                alpn_certificate(hostname, key_authorization.digest().as_ref())?,
            ),
        };
        store::keep_challenge(
            app.db.pool(),
            acme.challenge.as_str(),
            &name,
            hostname,
            &response,
            time::now(),
        )
        .await?;
        challenge.set_ready().await?;
    }
    let patient = RetryPolicy::new()
        .initial_delay(Duration::from_millis(250))
        .backoff(1.5)
        .timeout(Duration::from_secs(90));
    match order.poll_ready(&patient).await? {
        OrderStatus::Ready => {}
        other => return Err(OrderError(format!("the order is {other:?}, not ready"))),
    }
    let key_pem = order.finalize().await?;
    let chain_pem = order.poll_certificate(&patient).await?;
    let (not_before, not_after) = validity(&chain_pem)?;
    Ok(Ordered {
        chain_pem,
        key_pem,
        not_before,
        not_after,
    })
}

/// The account for `acme.directory`: the one kept in the database (every process uses the
/// same), else a new one, kept (unless another process kept one first: then that one).
async fn account(app: &App, acme: &AcmeConfig) -> Result<Account, OrderError> {
    let builder = || match &acme.ca_file {
        Some(path) => Account::builder_with_root(path),
        None => Account::builder(),
    };
    if let Some(kept) = store::account(app.db.pool(), &acme.directory).await? {
        let credentials: AccountCredentials = serde_json::from_str(&kept)?;
        return Ok(builder()?.from_credentials(credentials).await?);
    }
    let contact = acme.email.as_ref().map(|email| format!("mailto:{email}"));
    let contact: Vec<&str> = contact.iter().map(String::as_str).collect();
    let (account, credentials) = builder()?
        .create(
            &NewAccount {
                contact: &contact,
                terms_of_service_agreed: true,
                only_return_existing: false,
            },
            acme.directory.clone(),
            None,
        )
        .await?;
    store::keep_account(
        app.db.pool(),
        &acme.directory,
        &serde_json::to_string(&credentials)?,
        time::now(),
    )
    .await?;
    match store::account(app.db.pool(), &acme.directory).await? {
        Some(kept) if kept != serde_json::to_string(&credentials)? => {
            let credentials: AccountCredentials = serde_json::from_str(&kept)?;
            Ok(builder()?.from_credentials(credentials).await?)
        }
        _ => Ok(account),
    }
}

/// The self-signed certificate a TLS-ALPN-01 validation is answered with (RFC 8737): for
/// `hostname`, carrying the key authorization's digest; with its key, PEM.
fn alpn_certificate(hostname: &str, digest: &[u8]) -> Result<String, OrderError> {
    let mut params = rcgen::CertificateParams::new(vec![hostname.to_owned()])?;
    params.custom_extensions = vec![rcgen::CustomExtension::new_acme_identifier(digest)];
    let key = rcgen::KeyPair::generate()?;
    let certificate = params.self_signed(&key)?;
    Ok(format!("{}{}", certificate.pem(), key.serialize_pem()))
}

/// When the first certificate of `chain_pem` (the leaf) starts and ends.
fn validity(chain_pem: &str) -> Result<(Micros, Micros), OrderError> {
    use rustls::pki_types::CertificateDer;
    use rustls::pki_types::pem::PemObject;
    let leaf = CertificateDer::pem_slice_iter(chain_pem.as_bytes())
        .next()
        .ok_or_else(|| OrderError("the ACME server sent no certificate".to_owned()))??;
    let (_, parsed) = x509_parser::parse_x509_certificate(&leaf)?;
    let validity = parsed.validity();
    let micros = |at: &x509_parser::time::ASN1Time| at.timestamp().saturating_mul(1_000_000);
    Ok((micros(&validity.not_before), micros(&validity.not_after)))
}

impl From<OrderError> for Error {
    fn from(error: OrderError) -> Self {
        Error::Internal(anyhow::anyhow!(error.0))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn certificates_renew_thirty_days_before_expiry_or_a_third_of_a_short_life() {
        let day = time::micros(Duration::from_secs(86_400));
        assert_eq!(renew_at(0, 0, 90 * day), 60 * day);
        assert_eq!(renew_at(0, 0, 365 * day), 335 * day);
        // Six days (Let's Encrypt's short-lived profile): two days before.
        assert_eq!(renew_at(0, 0, 6 * day), 4 * day);
        // Backdated by a long way: not at once, but half-way through what remains.
        assert_eq!(renew_at(10 * day, 0, 12 * day), 11 * day);
        // Already over (a clock far off): renewed at once.
        assert_eq!(renew_at(10, 0, 5), 5);
    }

    #[test]
    fn failed_orders_back_off_doubling_to_a_day() {
        let first = Duration::from_secs(60);
        assert_eq!(retry_after(first, 1), Duration::from_secs(60));
        assert_eq!(retry_after(first, 2), Duration::from_secs(120));
        assert_eq!(retry_after(first, 5), Duration::from_secs(960));
        assert_eq!(retry_after(first, 40), MOST_RETRY);
        assert_eq!(retry_after(Duration::ZERO, 1), Duration::from_secs(1));
    }

    #[test]
    fn only_a_dns_name_of_the_public_url_is_ordered() {
        assert_eq!(
            orderable_public_host("https://Pages.Example.com/").as_deref(),
            Some("pages.example.com")
        );
        for not in [
            "http://127.0.0.1:8080",
            "http://[::1]:8080",
            "http://localhost:8080",
            "http://app.localhost",
            "not a url",
        ] {
            assert_eq!(orderable_public_host(not), None, "{not}");
        }
    }

    #[test]
    fn an_alpn_answer_is_a_certificate_and_its_key_for_the_name() {
        let pem = alpn_certificate("go.example.test", &[7; 32]).unwrap();
        assert!(pem.contains("BEGIN CERTIFICATE"));
        assert!(pem.contains("PRIVATE KEY"));
        let (not_before, not_after) = validity(&pem).unwrap();
        assert!(not_before < not_after);
    }
}
