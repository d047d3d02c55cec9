//! The page-load token every answer of a lead's page carries: a cookie (`lps_load`, on the
//! page's own path, ten minutes) that the tracking script reads once, deletes, and reports as
//! its view id. Core counts a view only from a load it can tell an edge served
//! (`lps::keys::PageLoads`), so beacons made up without fetching the page are kept as
//! automated. A token is random and names one load, never a visitor.

use http::HeaderValue;
use lps::keys::PageLoads;

/// The cookie's name, as the tracking script reads it.
pub const COOKIE: &str = "lps_load";

#[derive(Clone)]
pub struct LoadCookies {
    loads: PageLoads,
    /// `Secure` when pages are served over https.
    secure: bool,
}

impl LoadCookies {
    pub fn new(loads: PageLoads, secure: bool) -> Self {
        Self { loads, secure }
    }

    /// The `Set-Cookie` of a new load of the page at `path` (`/p/{campaign}/{lead}`), asked for
    /// at `asked` (the cookie's `Path`: `path` itself, or on a workspace's own domain `path`
    /// without its `/p` prefix); `None` for a path that is not a page's plain address (nothing
    /// of it goes into a header then).
    pub fn for_page_at(&self, path: &str, asked: &str) -> Option<HeaderValue> {
        if asked != path && path.strip_prefix("/p") != Some(asked) {
            return None;
        }
        let (campaign, lead) = path.strip_prefix("/p/")?.split_once('/')?;
        let plain = |segment: &str| {
            !segment.is_empty()
                && segment
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
        };
        if !plain(campaign) || !plain(lead) {
            return None;
        }
        let token = self.loads.mint(campaign, lead);
        let mut cookie = String::with_capacity(96 + path.len());
        cookie.push_str(COOKIE);
        cookie.push('=');
        cookie.push_str(&token);
        cookie.push_str("; Path=");
        cookie.push_str(asked);
        cookie.push_str("; Max-Age=600; SameSite=Lax");
        if self.secure {
            cookie.push_str("; Secure");
        }
        HeaderValue::from_str(&cookie).ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_load_cookie_names_its_page_and_nothing_else_reaches_the_header() {
        let cookies = LoadCookies::new(PageLoads::new(Some("s")), true);
        let cookie = cookies
            .for_page_at("/p/acme/ada-l", "/p/acme/ada-l")
            .unwrap();
        let cookie = cookie.to_str().unwrap();
        assert!(cookie.starts_with("lps_load="), "{cookie}");
        assert!(
            cookie.ends_with("; Path=/p/acme/ada-l; Max-Age=600; SameSite=Lax; Secure"),
            "{cookie}"
        );
        let token = &cookie["lps_load=".len()..cookie.find(';').unwrap()];
        assert!(PageLoads::new(Some("s")).verify(token, "acme", "ada-l"));
        assert!(
            cookies
                .for_page_at("/p/acme/ada;Domain=evil", "/p/acme/ada;Domain=evil")
                .is_none()
        );
        assert!(
            cookies
                .for_page_at("/p/acme/ada/x", "/p/acme/ada/x")
                .is_none()
        );
        assert!(cookies.for_page_at("/p//ada", "/p//ada").is_none());
        let on_domain = cookies.for_page_at("/p/acme/ada-l", "/acme/ada-l").unwrap();
        assert!(on_domain.to_str().unwrap().contains("; Path=/acme/ada-l;"));
        assert!(cookies.for_page_at("/p/acme/ada-l", "/elsewhere").is_none());
    }
}
