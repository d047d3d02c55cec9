//! Credentials: API keys (`sk-proj-...`) resolved to the principal who acts, and the rule of
//! which workspaces that principal reaches.

use sha2::{Digest, Sha256};

use crate::store::api_tokens;
use crate::store::oauth as store_oauth;
use crate::store::users::{Role, UserRow};
use crate::time::Micros;
use crate::{App, Error, Result, time};

/// Every API key starts with this.
pub const KEY_PREFIX: &str = CredentialKind::ApiKey.prefix();

/// Random characters after the prefix: 48 alphanumerics, about 285 bits.
const KEY_RANDOM_LEN: usize = 48;

/// How long a request waits for its key's `last_used_at` to be written.
const TOUCH_PATIENCE: std::time::Duration = std::time::Duration::from_millis(100);

pub use crate::principal::{CredentialKind, Principal};

/// A dashboard session's token starts with this.
pub const SESSION_PREFIX: &str = CredentialKind::Session.prefix();
/// An OAuth access token starts with this.
pub const ACCESS_PREFIX: &str = CredentialKind::AppToken.prefix();

/// Whether `resource` (RFC 8707) names lps itself: `{public_url}/mcp` (the MCP server) or
/// `{public_url}` (the API), a trailing slash aside. Tokens are issued for nothing else.
pub fn is_own_resource(public_url: &str, resource: &str) -> bool {
    let public_url = public_url.trim_end_matches('/');
    let resource = resource.trim_end_matches('/');
    resource == public_url || resource.strip_prefix(public_url) == Some("/mcp")
}

/// A new key's plaintext (shown once) and the hash that is stored.
pub struct NewKey {
    pub plaintext: String,
    pub hash: String,
}

impl NewKey {
    pub fn generate() -> Self {
        let plaintext = format!("{KEY_PREFIX}{}", crate::random::token(KEY_RANDOM_LEN));
        let hash = hash_key(&plaintext);
        Self { plaintext, hash }
    }
}

/// Keys carry enough entropy that a fast hash is the right one: nothing to brute-force.
pub fn hash_key(key: &str) -> String {
    // Into a buffer at once: `hex::encode` collects a `String` one `char` at a time, and every
    // authenticated request hashes its key.
    let mut text = [0u8; 64];
    hex::encode_to_slice(Sha256::digest(key.as_bytes()), &mut text)
        .expect("32 bytes are 64 hex digits");
    String::from_utf8_lossy(&text).into_owned()
}

/// The credential of an `Authorization: Bearer <credential>` header value, if it is
/// well-formed: an API key, an OAuth access token or a dashboard session.
pub(crate) fn bearer_key(authorization: &str) -> Option<&str> {
    let (scheme, key) = authorization.trim().split_once(' ')?;
    let key = key.trim();
    let known = CredentialKind::of(key).is_some();
    (scheme.eq_ignore_ascii_case("bearer") && known && key.bytes().all(|b| b.is_ascii_graphic()))
        .then_some(key)
}

/// Resolves an `Authorization` header value to a principal; anything missing, malformed,
/// expired or revoked is [`Error::Unauthenticated`]. An OAuth access token acts like a key
/// bound to its grant's workspace (its own rate-limit bucket, `grant:{id}`); a session acts
/// for its person across their account's workspaces. In the steady state the answer comes from
/// memory ([`crate::credentials`]); `last_used_at` is written at most once a second per
/// credential.
pub async fn authenticate(app: &App, authorization: Option<&str>) -> Result<Principal> {
    let key = authorization
        .and_then(bearer_key)
        .ok_or(Error::Unauthenticated)?;
    let hash = hash_key(key);
    let now = time::now();
    if let Some(principal) = app.credentials.get(&hash, now) {
        record_use(app, &principal, now, false).await;
        return Ok(principal);
    }
    let epoch = app.credentials.epoch();
    let (principal, expires_at) = resolve(app, key, &hash, now).await?;
    // The first use waits (briefly) for its bookkeeping, so a key's list shows it at once.
    record_use(app, &principal, now, true).await;
    app.credentials
        .remember(epoch, hash, principal.clone(), now, expires_at);
    Ok(principal)
}

/// The credential's principal from the database, and when it expires (tokens).
async fn resolve(
    app: &App,
    key: &str,
    hash: &str,
    now: Micros,
) -> Result<(Principal, Option<Micros>)> {
    let db = &app.db;
    let kind = CredentialKind::of(key).ok_or(Error::Unauthenticated)?;
    match kind {
        CredentialKind::AppToken => {
            // The token's audience is lps: a grant for another resource (issued before lps
            // checked it) is no credential here.
            let row = store_oauth::token(db.pool(), hash)
                .await?
                .filter(|row| row.kind == "access" && row.expires_at > now)
                .filter(|row| {
                    row.resource
                        .as_deref()
                        .is_none_or(|r| is_own_resource(&app.config.public_url, r))
                })
                .ok_or(Error::Unauthenticated)?;
            let user = UserRow {
                id: row.user_id,
                account_id: row.account_id,
                name: row.user_name,
                email: row.user_email,
            };
            let principal = Principal::of_credential(
                kind,
                &row.grant_id,
                user,
                Some(row.workspace_id),
                row.user_role != Role::Owner.as_str(),
            );
            Ok((principal, Some(row.expires_at)))
        }
        CredentialKind::Session => {
            let session = store_oauth::session(db.pool(), hash, now)
                .await?
                .ok_or(Error::Unauthenticated)?;
            let user = UserRow {
                id: session.user_id,
                account_id: session.account_id,
                name: session.name,
                email: session.email,
            };
            let principal = Principal::of_credential(
                kind,
                &hash[..16],
                user,
                None,
                session.role != Role::Owner.as_str(),
            );
            Ok((principal, None))
        }
        CredentialKind::ApiKey => {
            let row = api_tokens::find_credential(db.pool(), hash)
                .await?
                .ok_or(Error::Unauthenticated)?;
            let user = UserRow {
                id: row.user_id,
                account_id: row.account_id,
                name: row.user_name,
                email: row.user_email,
            };
            let principal =
                Principal::of_credential(kind, &row.token_id, user, row.workspace_id, false);
            Ok((principal, None))
        }
    }
}

/// Writes the credential's `last_used_at` (keys) or its grant's (OAuth tokens), at most once a
/// second each. On SQLite the write can wait for a job's write turn, so a request waits at most
/// `TOUCH_PATIENCE` for it when `wait`, and never otherwise.
async fn record_use(app: &App, principal: &Principal, now: Micros, wait: bool) {
    // A session's use is not recorded: it has no `last_used_at`.
    let is_grant = match principal.kind {
        CredentialKind::Session => return,
        CredentialKind::AppToken => true,
        CredentialKind::ApiKey => false,
    };
    if !app.credentials.due_for_touch(&principal.token_id, now) {
        return;
    }
    let (db, id) = (app.db.clone(), principal.credential_id().to_owned());
    let touch = tokio::spawn(async move {
        // In this process's write turn: on SQLite, a write outside it that meets a job's
        // batch waits in SQLite's busy handler, which sleeps in steps of up to 100 ms however
        // soon the batch ends.
        let written = async {
            let mut tx = db.begin_write().await?;
            match is_grant {
                true => store_oauth::touch_grant(&mut *tx, &id, now).await?,
                false => api_tokens::touch(&mut *tx, &id, now).await?,
            }
            tx.commit().await
        };
        if let Err(err) = written.await {
            tracing::warn!(error = %err, "recording a credential's last use failed");
        }
    });
    if wait {
        let _ = tokio::time::timeout(TOUCH_PATIENCE, touch).await;
    }
}

/// Whether a plan includes API and MCP access: current tiers from Pro upward (`pro...`,
/// `scale...`) and the grandfathered `ultimate`; trials and free plans never.
pub fn plan_allows_api(plan: &str) -> bool {
    let plan = plan.trim().to_ascii_lowercase();
    let tier_qualifies = plan.starts_with("pro") || plan.starts_with("scale") || plan == "ultimate";
    tier_qualifies && !plan.contains("trial") && !plan.contains("free")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generated_keys_carry_the_prefix_and_hash_to_what_is_stored() {
        let key = NewKey::generate();
        assert!(key.plaintext.starts_with("sk-proj-"));
        assert_eq!(key.plaintext.len(), KEY_PREFIX.len() + KEY_RANDOM_LEN);
        assert_eq!(key.hash, hash_key(&key.plaintext));
        assert_ne!(key.plaintext, NewKey::generate().plaintext);
    }

    #[test]
    fn only_well_formed_bearer_headers_yield_a_key() {
        assert_eq!(bearer_key("Bearer sk-proj-abc"), Some("sk-proj-abc"));
        assert_eq!(bearer_key("bearer  sk-proj-abc "), Some("sk-proj-abc"));
        assert_eq!(bearer_key("Basic sk-proj-abc"), None);
        assert_eq!(bearer_key("Bearer abc"), None);
        assert_eq!(bearer_key("Bearer sk-proj-"), None);
        assert_eq!(bearer_key("sk-proj-abc"), None);
    }

    #[test]
    fn plans_from_pro_upward_include_api_access() {
        for plan in [
            "pro",
            "pro_monthly",
            "pro-2-yearly",
            "scale",
            "scale_3",
            "ultimate",
        ] {
            assert!(plan_allows_api(plan), "{plan} should qualify");
        }
        for plan in [
            "free",
            "trial",
            "pro_trial",
            "starter",
            "basic",
            "",
            "enterprise",
        ] {
            assert!(!plan_allows_api(plan), "{plan} should not qualify");
        }
    }
}
