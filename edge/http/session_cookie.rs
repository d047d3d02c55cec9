//! The dashboard's session cookie (`lps_session`): read from requests, written on login, and
//! the signed-in person it stands for. The session itself lives in core; the cookie only
//! carries its token.

use http::HeaderMap;
use http::header::COOKIE;
use http::request::Parts;
use lps::proto;
use lps::wire::CredentialKind;

use super::forwarded::Forwarded;
use crate::core_client::Core;

pub const NAME: &str = "lps_session";

/// The value of cookie `name`, if the request carries it.
pub fn read(headers: &HeaderMap, name: &str) -> Option<String> {
    headers
        .get_all(COOKIE)
        .iter()
        .filter_map(|value| value.to_str().ok())
        .flat_map(|value| value.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(key, _)| *key == name)
        .map(|(_, value)| value.trim().to_owned())
        .filter(|value| !value.is_empty())
}

/// The session token, if the request carries one.
pub fn session(headers: &HeaderMap) -> Option<String> {
    read(headers, NAME).filter(|token| CredentialKind::of(token) == Some(CredentialKind::Session))
}

/// A `Set-Cookie` value: HttpOnly, SameSite=Lax, Secure when the public URL is https.
pub fn set(name: &str, value: &str, secure: bool, max_age_seconds: i64) -> String {
    format!(
        "{name}={value}; Path=/; HttpOnly; SameSite=Lax; Max-Age={max_age_seconds}{}",
        if secure { "; Secure" } else { "" }
    )
}

/// The request metadata that makes a core call act for the session.
pub fn as_credential<T>(token: &str, message: T) -> tonic::Request<T> {
    let mut request = tonic::Request::new(message);
    if let Ok(value) = format!("Bearer {token}").parse() {
        request.metadata_mut().insert("authorization", value);
    }
    request
}

/// A signed-in person's session as the dashboard forwards it on every call to core: its
/// token as the credential, with the request's id and the client's address (`forwarded.rs`),
/// as the API's calls carry theirs, so the calls are in core's request logs and its limits by
/// address.
#[derive(Clone)]
pub struct Session {
    forwarded: Forwarded,
    time_zone: Option<String>,
}

impl Session {
    /// A gRPC request acting for the session.
    pub fn request<T>(&self, message: T) -> tonic::Request<T> {
        self.forwarded.request(message)
    }

    /// The browser's IANA time zone (its cookie [`TIME_ZONE`]), which charts count days in:
    /// `None` (UTC, as the times on screen are without the script) until the script said one.
    pub fn time_zone(&self) -> Option<String> {
        self.time_zone.clone()
    }
}

/// The cookie the dashboard's script keeps the browser's IANA time zone in (`Europe/Berlin`),
/// so that the days of a chart are the days of the times its script shows beside it.
pub const TIME_ZONE: &str = "lps_tz";

/// The browser's time zone, if its cookie names one the time-zone database knows.
fn time_zone(headers: &HeaderMap) -> Option<String> {
    read(headers, TIME_ZONE)
        .filter(|name| name.len() <= 64 && jiff::tz::TimeZone::get(name).is_ok())
}

/// The request's session and its person, if signed in (core checks the session, the call
/// forwarded like every other the session makes).
pub async fn session_of(
    core: &Core,
    parts: &Parts,
) -> Option<(Session, proto::GetSessionResponse)> {
    let token = session(&parts.headers)?;
    let session = Session {
        forwarded: Forwarded::from_parts(parts).with_bearer(&token),
        time_zone: time_zone(&parts.headers),
    };
    let person = core
        .oauth()
        .get_session(session.request(proto::GetSessionRequest {}))
        .await
        .ok()?
        .into_inner();
    Some((session, person))
}

/// The request's session and its person, if signed in (core checks the session).
pub async fn signed_in(
    core: &Core,
    headers: &HeaderMap,
) -> Option<(String, proto::GetSessionResponse)> {
    let token = session(headers)?;
    let person = core
        .oauth()
        .get_session(as_credential(&token, proto::GetSessionRequest {}))
        .await
        .ok()?
        .into_inner();
    Some((token, person))
}
