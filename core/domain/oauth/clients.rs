//! OAuth clients: dynamic registration (RFC 7591) with its bounds, unused clients forgotten,
//! redirect URIs checked, and a client named by its metadata document's URL fetched.

use super::{CLIENT_PREFIX, SECOND, oauth_error};
use crate::auth::hash_key;
use crate::store::oauth::{self, ClientRow};
use crate::wire::is_loopback;
use crate::{App, Error, Result, time};

/// Bounds of one registration (anyone may register: RFC 7591 open registration).
pub const MAX_REDIRECT_URIS: usize = 10;
pub const MAX_REDIRECT_URI_CHARS: usize = 2_000;
pub const MAX_CLIENT_NAME_CHARS: usize = 100;
/// How long a registered client that nobody used (no grant, no pending code) is kept.
pub const UNUSED_CLIENT_SECONDS: i64 = 24 * 3_600;

/// Dynamic client registration: a name and redirect URIs (https, or http on a loopback
/// address, or a native app's private-use scheme in reverse-domain form), within bounds; at
/// most ten are stored a minute from one client address.
pub async fn register_client(
    app: &App,
    name: Option<&str>,
    redirect_uris: &[String],
    client_address: &str,
) -> Result<ClientRow> {
    if redirect_uris.is_empty() {
        return Err(oauth_error(
            "invalid_redirect_uri",
            "redirect_uris is required.",
        ));
    }
    if redirect_uris.len() > MAX_REDIRECT_URIS {
        return Err(oauth_error(
            "invalid_redirect_uri",
            format!("At most {MAX_REDIRECT_URIS} redirect_uris may be registered."),
        ));
    }
    for uri in redirect_uris {
        check_redirect_uri(uri)?;
    }
    let name = name.map(str::trim).filter(|n| !n.is_empty());
    if name.is_some_and(|n| {
        n.chars().count() > MAX_CLIENT_NAME_CHARS || n.chars().any(char::is_control)
    }) {
        return Err(oauth_error(
            "invalid_client_metadata",
            format!("client_name must be at most {MAX_CLIENT_NAME_CHARS} printable characters."),
        ));
    }
    // Counted once valid: what is stored is what fills a disk.
    let deployment = &hash_key(app.db.url())[..12];
    app.login_limiter
        .check(&format!("register-ip:{deployment}:{client_address}"))
        .await
        .into_result()?;
    let client = ClientRow {
        id: format!("{CLIENT_PREFIX}{}", crate::random::token(24)),
        name: name.unwrap_or("Unnamed app").to_owned(),
        redirect_uris: serde_json::to_string(redirect_uris).unwrap_or_default(),
        created_at: time::now(),
    };
    oauth::upsert_client(app.db.pool(), &client).await?;
    Ok(client)
}

/// A redirect URI lps may send a code to: `https`, `http` on a loopback address, or a native
/// app's private-use scheme in reverse-domain form (RFC 8252 7.1: `com.example.app:/cb`);
/// never longer than [`MAX_REDIRECT_URI_CHARS`], never with a fragment.
fn check_redirect_uri(uri: &str) -> Result<()> {
    let shown: String = uri.chars().take(100).collect();
    let bad = || {
        oauth_error(
            "invalid_redirect_uri",
            format!(
                "{shown} is not an acceptable redirect URI: https, http on a loopback address, or a private-use scheme in reverse-domain form (com.example.app:/callback)."
            ),
        )
    };
    if uri.chars().count() > MAX_REDIRECT_URI_CHARS {
        return Err(oauth_error(
            "invalid_redirect_uri",
            format!("A redirect URI may be at most {MAX_REDIRECT_URI_CHARS} characters."),
        ));
    }
    let url = url::Url::parse(uri).map_err(|_| bad())?;
    if url.fragment().is_some() {
        return Err(bad());
    }
    match url.scheme() {
        "https" if url.host().is_some() => Ok(()),
        "http" if is_loopback(&url) => Ok(()),
        scheme if is_private_use_scheme(scheme) => Ok(()),
        _ => Err(bad()),
    }
}

/// `com.example.app`: at least two labels, each of letters, digits and `-` (RFC 8252 7.1).
fn is_private_use_scheme(scheme: &str) -> bool {
    let labels: Vec<&str> = scheme.split('.').collect();
    labels.len() >= 2
        && labels.iter().all(|label| {
            !label.is_empty()
                && label
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'-')
        })
}

/// Deletes registered clients nobody used within [`UNUSED_CLIENT_SECONDS`], hourly.
pub async fn forget_unused_clients_forever(app: App) {
    loop {
        let now = time::now();
        let cutoff = now - UNUSED_CLIENT_SECONDS * SECOND;
        match oauth::delete_unused_clients(app.db.pool(), cutoff, now).await {
            Ok(0) => {}
            Ok(deleted) => tracing::info!(deleted, "unused OAuth clients deleted"),
            Err(err) => tracing::warn!(error = %err, "unused OAuth clients could not be deleted"),
        }
        tokio::time::sleep(std::time::Duration::from_secs(60 * 60)).await;
    }
}

/// Whether `given` is one of the client's redirect URIs; loopback ones match on any port.
fn redirect_allowed(client: &ClientRow, given: &str) -> bool {
    let registered: Vec<String> = serde_json::from_str(&client.redirect_uris).unwrap_or_default();
    let Ok(given_url) = url::Url::parse(given) else {
        return false;
    };
    registered.iter().any(|uri| {
        if uri == given {
            return true;
        }
        match url::Url::parse(uri) {
            Ok(mut url) if is_loopback(&url) && is_loopback(&given_url) => {
                let _ = url.set_port(given_url.port());
                url.as_str() == given_url.as_str()
            }
            _ => false,
        }
    })
}

/// The client, if `redirect_uri` is one of its own: nothing is ever sent back to an address
/// not known to be the client's.
pub async fn client_for_redirect(
    app: &App,
    client_id: &str,
    redirect_uri: &str,
) -> Result<ClientRow> {
    let client = client(app, client_id).await?;
    if !redirect_allowed(&client, redirect_uri) {
        return Err(oauth_error(
            "invalid_request",
            "The redirect_uri is not one of the client's.",
        ));
    }
    Ok(client)
}

/// A client by id: registered, or an https client ID metadata document fetched now.
pub async fn client(app: &App, client_id: &str) -> Result<ClientRow> {
    if let Some(client) = oauth::client(app.db.pool(), client_id).await? {
        return Ok(client);
    }
    let is_document = client_id.starts_with("https://")
        || (app.config.allow_private_network && client_id.starts_with("http://"));
    if !is_document {
        return Err(oauth_error("invalid_client", "Unknown client_id."));
    }
    let document = fetch_client_document(app, client_id).await?;
    oauth::upsert_client(app.db.pool(), &document).await?;
    Ok(document)
}

async fn fetch_client_document(app: &App, url: &str) -> Result<ClientRow> {
    let unusable = |why: &str| {
        oauth_error(
            "invalid_client",
            format!("The client metadata document at {url} {why}."),
        )
    };
    let limits = crate::outbound::Limits {
        connect_timeout: std::time::Duration::from_secs(5),
        timeout: std::time::Duration::from_secs(10),
        max_redirects: 0,
    };
    let client = crate::outbound::client(
        app.config.allow_private_network,
        &app.config.resolve,
        limits,
    )
    .map_err(|e| Error::Internal(e.into()))?;
    let response = client
        .get(url)
        .map_err(|refused| unusable(&format!("may not be fetched ({refused})")))?
        .send()
        .await
        .map_err(|_| unusable("could not be fetched"))?;
    if !response.status().is_success() {
        return Err(unusable("could not be fetched"));
    }
    let bytes = response
        .bytes()
        .await
        .map_err(|_| unusable("could not be read"))?;
    if bytes.len() > 64 * 1024 {
        return Err(unusable("is too large"));
    }
    let document: serde_json::Value =
        serde_json::from_slice(&bytes).map_err(|_| unusable("is not JSON"))?;
    if document["client_id"].as_str() != Some(url) {
        return Err(unusable("names another client_id"));
    }
    let redirect_uris: Vec<String> = document["redirect_uris"]
        .as_array()
        .map(|uris| {
            uris.iter()
                .filter_map(|u| u.as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default();
    if redirect_uris.is_empty() {
        return Err(unusable("has no redirect_uris"));
    }
    for uri in &redirect_uris {
        check_redirect_uri(uri)?;
    }
    Ok(ClientRow {
        id: url.to_owned(),
        name: document["client_name"]
            .as_str()
            .unwrap_or(url)
            .chars()
            .take(100)
            .collect(),
        redirect_uris: serde_json::to_string(&redirect_uris).unwrap_or_default(),
        created_at: time::now(),
    })
}
