//! People and apps: passwords (argon2id), server-side sessions, and OAuth 2.1 for apps acting
//! on one workspace (authorization code with PKCE S256, refresh tokens rotated on use,
//! revocation). Every decision is made here; the edge only serves the HTTP faces.
//!
//! Here what the parts share; passwords and sessions in `sessions.rs`; "Forgot your
//! password?" in `password_resets.rs`; client registration in `clients.rs`; codes, tokens and
//! grants in `grants.rs`.

use crate::Error;
use crate::time::Micros;

mod clients;
mod grants;
mod password_resets;
mod sessions;

pub use clients::*;
pub use grants::*;
pub use password_resets::request_reset;
pub use sessions::*;

pub use crate::auth::{ACCESS_PREFIX, SESSION_PREFIX, is_own_resource};
pub const REFRESH_PREFIX: &str = "lps_rt_";
const CLIENT_PREFIX: &str = "lps_client_";

/// How long things live (access tokens: `--oauth-access-token-seconds`).
const REFRESH_TOKEN_SECONDS: i64 = 30 * 24 * 3_600;
const CODE_SECONDS: i64 = 600;
const SESSION_SECONDS: i64 = 7 * 24 * 3_600;
const SECOND: Micros = 1_000_000;

/// Shortest password accepted.
pub const MIN_PASSWORD_CHARS: usize = 8;

fn oauth_error(code: &'static str, description: impl Into<String>) -> Error {
    Error::OAuth(code, description.into())
}
