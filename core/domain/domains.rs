//! A workspace's own domains for its pages (`go.example.com/{campaign}/{lead}`).
//!
//! A hostname is added by an owner and proven theirs by DNS: a TXT record
//! `_lps-challenge.<hostname>` holding the token answered once at creation (only its SHA-256 is
//! kept), and the hostname pointed at lps, by CNAME to the public URL's host or by A/AAAA
//! records naming one of that host's addresses. Until both are found a domain is `pending`,
//! checked again with backoff (from `--domain-retry-seconds`, doubling, at most hourly) until
//! it passes or is deleted. A `verified` domain is served and checked again daily
//! (`--domain-recheck-seconds`); one whose records are gone is still served for a grace period
//! (`--domain-grace-seconds`, three days), with the reason shown, then `lapsed`: no longer
//! served, and checked again as a pending one. A look-up that fails (the resolver out) proves
//! nothing either way: it is retried, and never lapses a domain.
//!
//! Many workspaces may add a hostname; the first to verify it wins (a unique index), and the
//! others' checks stop with the reason. What is served changes only when a domain is verified,
//! lapses or is deleted: then a page change `domains` tells every edge to ask again
//! (`ListServedDomains`).

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::Arc;
use std::time::Duration;

use sha2::{Digest, Sha256};

use crate::auth::Principal;
use crate::dns::DnsError;
use crate::domain::certificates::{self, Https};
use crate::domain::lead::PageAddresses;
use crate::domain::page_changes::{self, Changed};
use crate::error::FieldViolation;
use crate::store::domains::{self as store, Checked, DomainRow};
use crate::time::{self, Micros};
use crate::{App, Error, Result};

/// The label the TXT record is put under: `_lps-challenge.<hostname>`.
pub const TXT_LABEL: &str = "_lps-challenge";
/// Domains a workspace may have.
pub const MOST_DOMAINS: i64 = 20;
/// The longest backoff between checks of a pending domain.
const MOST_RETRY: Duration = Duration::from_secs(3600);
/// How long a process holds a domain it is checking before another may.
const CHECK_LEASE: Duration = Duration::from_secs(60);
/// Domains checked per pass of the worker.
const CHECKED_PER_PASS: i64 = 20;
const NOT_FOUND: &str = "Domain not found";

/// When domains are checked (`--domain-retry-seconds`, `--domain-recheck-seconds`,
/// `--domain-grace-seconds`).
#[derive(Debug, Clone, Copy)]
pub struct DomainChecks {
    /// The first retry of a pending domain; each later one waits twice as long, at most hourly.
    pub retry: Duration,
    /// How often a verified domain's records are checked again.
    pub recheck: Duration,
    /// How long a verified domain whose records are gone is still served.
    pub grace: Duration,
}

impl Default for DomainChecks {
    fn default() -> Self {
        Self {
            retry: Duration::from_secs(30),
            recheck: Duration::from_secs(86_400),
            grace: Duration::from_secs(3 * 86_400),
        }
    }
}

/// What a domain is now (`domains.status`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Status {
    /// Not yet proven: checked again with backoff.
    Pending,
    /// Proven: served, and checked again daily.
    Verified,
    /// Its records were gone past the grace period: no longer served, checked again.
    Lapsed,
}

impl Status {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Pending => "pending",
            Self::Verified => "verified",
            Self::Lapsed => "lapsed",
        }
    }

    /// As stored; anything else (never written) reads as not served.
    pub fn of(stored: &str) -> Self {
        match stored {
            "verified" => Self::Verified,
            "lapsed" => Self::Lapsed,
            _ => Self::Pending,
        }
    }
}

/// A domain as its owners see it.
#[derive(Debug, Clone)]
pub struct Domain {
    pub row: DomainRow,
    /// `_lps-challenge.<hostname>`.
    pub txt_name: String,
    /// The TXT record's value: only when it was just made.
    pub txt_value: Option<String>,
    /// Where a CNAME points: the public URL's host.
    pub cname_target: String,
    /// Its certificate, when lps terminates TLS itself and the domain is verified.
    pub https: Option<Https>,
}

impl Domain {
    /// The domain of `row`, with its certificate's state.
    async fn of(app: &App, row: DomainRow) -> Result<Self> {
        Ok(Self {
            txt_name: format!("{TXT_LABEL}.{}", row.hostname),
            txt_value: None,
            cname_target: public_host(app),
            https: certificates::https_of(app, &row.hostname).await?,
            row,
        })
    }
}

/// The host of the public URL (`lps.example.com`, or an address).
pub fn public_host(app: &App) -> String {
    url::Url::parse(&app.config.public_url)
        .ok()
        .and_then(|url| url.host_str().map(str::to_owned))
        .unwrap_or_default()
        .trim_start_matches('[')
        .trim_end_matches(']')
        .to_ascii_lowercase()
}

/// `asked` as a hostname lps can serve a workspace's pages on: lower case, ASCII (an
/// internationalised name in its punycode form), no trailing dot; refused (422 naming
/// `hostname`) when it is not a domain name, an IP literal, a public suffix (`co.uk`,
/// `github.io`) or the deployment's own host.
pub fn hostname(asked: &str, public_host: &str) -> Result<String> {
    let refuse = |message: &str| Err(Error::invalid(FieldViolation::new("hostname", message)));
    let asked = asked.trim().trim_end_matches('.');
    if asked.is_empty() {
        return refuse("The hostname field is required.");
    }
    if asked.contains(['/', ':', '@', '?', '#', ' ', '*']) {
        return refuse(
            "The hostname must be a name alone, such as go.example.com (no scheme, port, path \
             or wildcard).",
        );
    }
    let host = match url::Host::parse(asked) {
        Ok(url::Host::Domain(name)) => name.to_ascii_lowercase(),
        Ok(_) => return refuse("The hostname must be a domain name, not an IP address."),
        Err(_) => return refuse("The hostname is not a valid domain name."),
    };
    if host.parse::<std::net::Ipv4Addr>().is_ok() {
        return refuse("The hostname must be a domain name, not an IP address.");
    }
    let labels: Vec<&str> = host.split('.').collect();
    let label_ok = |label: &&str| {
        !label.is_empty()
            && label.len() <= 63
            && !label.starts_with('-')
            && !label.ends_with('-')
            && label
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-')
    };
    // `_lps-challenge.{host}` must fit a DNS name's 253 characters too.
    if host.len() > 253 - TXT_LABEL.len() - 1 {
        return refuse("The hostname is at most 238 characters long.");
    }
    if labels.len() < 2 || !labels.iter().all(label_ok) {
        return refuse("The hostname is not a valid domain name.");
    }
    let is_suffix = psl::suffix(host.as_bytes()).is_some_and(|suffix| {
        suffix.as_bytes() == host.as_bytes() && (suffix.is_known() || labels.len() < 2)
    });
    if is_suffix {
        return refuse(
            "The hostname is a public suffix (such as co.uk or github.io), which no one \
             workspace can own: use a name under it.",
        );
    }
    if host == public_host {
        return refuse("The hostname is this server's own address.");
    }
    Ok(host)
}

/// The hex SHA-256 of a TXT record's value, as kept.
fn token_hash(value: &str) -> String {
    hex::encode(Sha256::digest(value.trim().as_bytes()))
}

/// Adds a domain to the workspace (owners only), pending: its TXT value is answered here only.
pub async fn create(
    app: &App,
    principal: &Principal,
    workspace_id: i64,
    asked: &str,
) -> Result<Domain> {
    principal.is_owner()?;
    let workspace = principal.reach(&app.db, workspace_id).await?;
    let hostname = hostname(asked, &public_host(app))?;
    let value = format!("lps-verify={}", crate::random::token(32));
    let now = time::now();
    let mut tx = app.db.begin_write().await?;
    crate::store::workspaces::lock(&mut tx, app.db.dialect(), workspace.id).await?;
    if store::count(&mut *tx, workspace.id).await? >= MOST_DOMAINS {
        return Err(Error::Precondition(
            "A workspace has at most 20 domains: delete one first.",
        ));
    }
    let first_check = now + time::micros(app.config.domain_checks.retry);
    let Some(id) = store::insert(
        &mut tx,
        workspace.id,
        &hostname,
        &token_hash(&value),
        first_check,
        now,
    )
    .await?
    else {
        return Err(Error::Precondition(
            "The workspace already has this hostname: verify it, or delete it first.",
        ));
    };
    tx.commit().await?;
    app.domains_due.notify_one();
    let mut domain = find(app, workspace.id, id).await?;
    domain.txt_value = Some(value);
    Ok(domain)
}

/// The workspace's domains, oldest first (owners only).
pub async fn list(app: &App, principal: &Principal, workspace_id: i64) -> Result<Vec<Domain>> {
    principal.is_owner()?;
    let workspace = principal.reach(&app.db, workspace_id).await?;
    let rows = store::list(app.db.pool(), workspace.id).await?;
    let mut domains = Vec::with_capacity(rows.len());
    for row in rows {
        domains.push(Domain::of(app, row).await?);
    }
    Ok(domains)
}

/// Checks the domain's records now (owners only) and answers what it is after.
pub async fn verify(
    app: &App,
    principal: &Principal,
    workspace_id: i64,
    domain_id: i64,
) -> Result<Domain> {
    principal.is_owner()?;
    let workspace = reached(app, principal, workspace_id).await?;
    let row = store::find(app.db.pool(), workspace, domain_id)
        .await?
        .ok_or(Error::NotFound(NOT_FOUND))?;
    check_and_keep(app, row).await?;
    find(app, workspace, domain_id).await
}

/// Deletes a domain (owners only): no longer served; its campaigns' pages go back to the
/// public URL.
pub async fn delete(
    app: &App,
    principal: &Principal,
    workspace_id: i64,
    domain_id: i64,
) -> Result<()> {
    principal.is_owner()?;
    let workspace = reached(app, principal, workspace_id).await?;
    let row = store::find(app.db.pool(), workspace, domain_id)
        .await?
        .ok_or(Error::NotFound(NOT_FOUND))?;
    let mut tx = app.db.begin_write().await?;
    if !store::delete(&mut tx, workspace, domain_id).await? {
        return Err(Error::NotFound(NOT_FOUND));
    }
    if Status::of(&row.status) == Status::Verified {
        // The hostname is free: the workspaces that lost it to this one try again now.
        store::check_again(&mut tx, &row.hostname, time::now()).await?;
    }
    page_changes::commit(app, tx, Changed::Domains).await?;
    app.domains_due.notify_one();
    Ok(())
}

/// Every verified domain: what the edges serve.
pub async fn served(app: &App) -> Result<Vec<DomainRow>> {
    Ok(store::served(app.db.pool()).await?)
}

/// Whether `hostname` is a verified domain (a proxy's on-demand TLS asks, with no
/// credential): at most `--rate-limit-per-minute` answers a minute to one address.
pub async fn ask(app: &App, hostname: &str, address: &str) -> Result<bool> {
    app.limiter
        .check(&format!("domains-ask:{address}"))
        .await
        .into_result()?;
    let host = match url::Host::parse(hostname.trim().trim_end_matches('.')) {
        Ok(url::Host::Domain(name)) => name.to_ascii_lowercase(),
        _ => return Ok(false),
    };
    Ok(store::is_served(app.db.pool(), &host).await?)
}

/// The page addresses kept between calls, with the count of address changes they were read at
/// (`PageChanges::addresses_reading`): read again only after a campaign or domain changed.
#[derive(Default)]
pub struct KeptAddresses(std::sync::RwLock<Option<(u64, Arc<PageAddresses>)>>);

/// Where pages are handed out now.
pub async fn page_addresses(app: &App) -> Result<Arc<PageAddresses>> {
    let (reached, keep) = app.page_changes.addresses_reading();
    if let Some((at, kept)) = app
        .page_addresses
        .0
        .read()
        .unwrap_or_else(|e| e.into_inner())
        .as_ref()
        && *at == reached
    {
        return Ok(kept.clone());
    }
    let mut hosts: HashMap<i64, HashMap<String, String>> = HashMap::new();
    for (workspace_id, slug, host) in store::page_hosts(app.db.pool()).await? {
        hosts.entry(workspace_id).or_default().insert(slug, host);
    }
    let addresses = Arc::new(PageAddresses::new(&app.config.public_url, hosts));
    if keep {
        *app.page_addresses
            .0
            .write()
            .unwrap_or_else(|e| e.into_inner()) = Some((reached, addresses.clone()));
    }
    Ok(addresses)
}

async fn reached(app: &App, principal: &Principal, workspace_id: i64) -> Result<i64> {
    Ok(principal
        .reach(&app.db, workspace_id)
        .await
        .map_err(|err| err.unreachable_as(Error::NotFound(NOT_FOUND)))?
        .id)
}

async fn find(app: &App, workspace_id: i64, domain_id: i64) -> Result<Domain> {
    let row = store::find(app.db.pool(), workspace_id, domain_id)
        .await?
        .ok_or(Error::NotFound(NOT_FOUND))?;
    Domain::of(app, row).await
}

/// What a look at a domain's records found.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Found {
    /// The TXT record holds the token and the hostname points at lps.
    Proven,
    /// Something is missing or wrong: why.
    Missing(String),
    /// The look-up itself failed: nothing is known (why, as said).
    Unknown(String),
}

impl Found {
    fn failed_look_up(why: String) -> Self {
        Self::Unknown(format!("The DNS look-up failed ({why}); checked again."))
    }
}

async fn look(app: &App, row: &DomainRow) -> Found {
    let txt_name = format!("{TXT_LABEL}.{}", row.hostname);
    match app.dns.txt(&txt_name).await {
        Ok(values) if values.iter().any(|value| token_hash(value) == row.token) => {}
        Ok(_) => {
            return Found::Missing(format!(
                "The TXT record at {txt_name} does not hold this domain's value."
            ));
        }
        Err(DnsError::NoRecords(_)) => {
            return Found::Missing(format!("No TXT record at {txt_name} yet."));
        }
        Err(DnsError::Failed(why)) => return Found::failed_look_up(why),
    }
    let target = public_host(app);
    match app.dns.cname(&row.hostname).await {
        Ok(Some(cname)) if cname == target => return Found::Proven,
        Ok(_) | Err(DnsError::NoRecords(_)) => {}
        Err(DnsError::Failed(why)) => return Found::failed_look_up(why),
    }
    let ours: Vec<IpAddr> = match target.parse::<IpAddr>() {
        Ok(address) => vec![address],
        Err(_) => match app.dns.addresses(&target).await {
            Ok(addresses) => addresses,
            Err(DnsError::NoRecords(_)) => Vec::new(),
            Err(DnsError::Failed(why)) => return Found::failed_look_up(why),
        },
    };
    match app.dns.addresses(&row.hostname).await {
        Ok(theirs) if theirs.iter().any(|address| ours.contains(address)) => Found::Proven,
        Ok(theirs) => {
            let found: Vec<String> = theirs.iter().map(IpAddr::to_string).collect();
            Found::Missing(format!(
                "{} points neither by CNAME to {target} nor to its addresses (it has {}).",
                row.hostname,
                found.join(", ")
            ))
        }
        Err(DnsError::NoRecords(_)) => Found::Missing(format!(
            "{} has no CNAME to {target} and no A or AAAA record.",
            row.hostname
        )),
        Err(DnsError::Failed(why)) => Found::failed_look_up(why),
    }
}

/// The wait before the check after `attempts` failed ones.
fn backoff(app: &App, attempts: i64) -> Duration {
    let base = app.config.domain_checks.retry;
    let doubled = base.saturating_mul(1u32 << attempts.clamp(0, 16) as u32);
    doubled.min(MOST_RETRY.max(base))
}

/// What a domain becomes after a look found `found` at `now`.
fn next<'a>(app: &App, row: &'a DomainRow, found: &'a Found, now: Micros) -> Checked<'a> {
    let checks = app.config.domain_checks;
    let later = |wait: Duration| Some(now + time::micros(wait));
    let status = Status::of(&row.status);
    // A look that proved nothing new: the status stays, looked at again with backoff.
    let unproven = |why: &'a str| Checked {
        status: status.as_str(),
        reason: Some(why),
        attempts: row.attempts + 1,
        next_check_at: later(backoff(app, row.attempts)),
        verified_at: row.verified_at,
        missing_since: row.missing_since,
    };
    match found {
        Found::Proven => Checked {
            status: Status::Verified.as_str(),
            reason: None,
            attempts: 0,
            next_check_at: later(checks.recheck),
            verified_at: if status == Status::Verified {
                row.verified_at
            } else {
                Some(now)
            },
            missing_since: None,
        },
        Found::Missing(why) if status == Status::Verified => {
            let since = row.missing_since.unwrap_or(now);
            if now - since >= time::micros(checks.grace) {
                Checked {
                    status: Status::Lapsed.as_str(),
                    attempts: 0,
                    next_check_at: later(checks.retry),
                    missing_since: None,
                    ..unproven(why)
                }
            } else {
                Checked {
                    missing_since: Some(since),
                    ..unproven(why)
                }
            }
        }
        Found::Missing(why) | Found::Unknown(why) => unproven(why),
    }
}

/// Looks at a domain's records and keeps what was found; whether what is served changed.
async fn check_and_keep(app: &App, row: DomainRow) -> Result<bool> {
    let found = look(app, &row).await;
    let now = time::now();
    let mut checked = next(app, &row, &found, now);
    let verified = Status::Verified.as_str();
    let was_served = row.status == verified;
    let mut tx = app.db.begin_write().await?;
    if checked.status == verified
        && !was_served
        && store::verified_elsewhere(&mut *tx, &row.hostname, row.workspace_id).await?
    {
        // Lost: pending (or lapsed) as it was, and no longer checked until the winner's goes.
        checked.status = &row.status;
        checked.reason = Some("Another workspace verified this hostname first.");
        checked.verified_at = None;
        checked.next_check_at = None;
    }
    if !store::set_checked(&mut tx, row.id, &checked, now).await? {
        return Ok(false);
    }
    let serves = checked.status == verified;
    if serves != was_served {
        tracing::info!(
            hostname = %row.hostname,
            workspace = row.workspace_id,
            status = checked.status,
            "a domain's status changed"
        );
        page_changes::commit(app, tx, Changed::Domains).await?;
        return Ok(true);
    }
    tx.commit().await?;
    Ok(false)
}

/// Checks every domain whose check is due, now and whenever one is (a pass at least every
/// few seconds, sooner when a domain is added).
pub async fn check_due_forever(app: App) {
    let pause = app
        .config
        .domain_checks
        .retry
        .min(Duration::from_secs(5))
        .max(Duration::from_millis(200));
    loop {
        if let Err(err) = check_due(&app).await {
            tracing::warn!(error = %err, "domains could not be checked; trying again");
        }
        tokio::select! {
            () = app.domains_due.notified() => {}
            () = tokio::time::sleep(pause) => {}
        }
    }
}

/// One pass: the domains due, each checked.
pub async fn check_due(app: &App) -> Result<()> {
    let now = time::now();
    let lease_until = now + time::micros(CHECK_LEASE);
    let due = {
        let mut tx = app.db.begin_write().await?;
        let due = store::claim_due(&mut tx, now, lease_until, CHECKED_PER_PASS).await?;
        tx.commit().await?;
        due
    };
    for row in due {
        let hostname = row.hostname.clone();
        if let Err(err) = check_and_keep(app, row).await {
            tracing::warn!(%hostname, error = %err, "a domain could not be checked");
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refused(asked: &str) -> bool {
        hostname(asked, "lps.example.com").is_err()
    }

    #[test]
    fn hostnames_are_names_under_a_public_suffix_and_never_addresses() {
        assert_eq!(
            hostname(" Go.Example.COM. ", "lps.example.com").unwrap(),
            "go.example.com"
        );
        assert_eq!(
            hostname("bücher.example.de", "lps.example.com").unwrap(),
            "xn--bcher-kva.example.de"
        );
        assert_eq!(
            hostname("go.example.test", "127.0.0.1").unwrap(),
            "go.example.test"
        );
        for bad in [
            "",
            "co.uk",
            "github.io",
            "com",
            "127.0.0.1",
            "[::1]",
            "::1",
            "https://go.example.com",
            "go.example.com:8443",
            "go.example.com/path",
            "*.example.com",
            "-bad.example.com",
            "lps.example.com",
            "a..b.com",
            "go_x.example.com",
            &format!("{}.example.com", vec!["a".repeat(56); 4].join(".")),
        ] {
            assert!(refused(bad), "{bad:?} was accepted");
        }
        assert!(!refused("example.co.uk"));
        assert!(!refused("someone.github.io"));
    }

    #[test]
    fn tokens_are_compared_by_their_hash_and_trimmed() {
        assert_eq!(token_hash(" lps-verify=abc "), token_hash("lps-verify=abc"));
        assert_ne!(token_hash("lps-verify=abc"), token_hash("lps-verify=abd"));
    }
}
