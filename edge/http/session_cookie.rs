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

    /// The person's IANA time zone, which charts count days in: their own when they chose
    /// one, else their browser's (its cookie [`TIME_ZONE`]); `None` (UTC, as the times on
    /// screen are without the script) until either is known.
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
    let session = Session {
        time_zone: Some(person.time_zone.clone())
            .filter(|zone| !zone.is_empty())
            .or(session.time_zone),
        ..session
    };
    Some((session, person))
}

/// The cookie saying the zone in [`TIME_ZONE`] is the person's own choice, so the script shows
/// times in it and does not replace it with the browser's.
pub const TIME_ZONE_CHOSEN: &str = "lps_tz_own";

/// The cookies that tell the dashboard's script the person's own time zone (both readable by
/// it, as the one it sets itself is), or, with an empty zone, that it follows the browser's.
pub fn own_time_zone(zone: &str, secure: bool) -> [String; 2] {
    let secure = if secure { "; Secure" } else { "" };
    if zone.is_empty() {
        return [
            format!("{TIME_ZONE_CHOSEN}=; Path=/dashboard; SameSite=Lax; Max-Age=0{secure}"),
            format!("{TIME_ZONE}=; Path=/dashboard; SameSite=Lax; Max-Age=0{secure}"),
        ];
    }
    const YEAR: i64 = 31_536_000;
    [
        format!("{TIME_ZONE_CHOSEN}=1; Path=/dashboard; SameSite=Lax; Max-Age={YEAR}{secure}"),
        format!("{TIME_ZONE}={zone}; Path=/dashboard; SameSite=Lax; Max-Age={YEAR}{secure}"),
    ]
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
