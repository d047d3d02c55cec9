//! Outbound HTTP (callbacks, and every later fetch of the outside world) through one
//! SSRF-guarded client.
//!
//! Unless private networks are allowed, a request may only reach globally routable addresses:
//! every special-purpose range of the IANA IPv4 and IPv6 registries is refused, including IPv6
//! forms that embed an IPv4 address (mapped `::ffff:a.b.c.d`, compatible `::a.b.c.d`, NAT64
//! `64:ff9b::/96`, 6to4 `2002::/16`, Teredo `2001::/32`). Host names are resolved once, by the
//! client's own resolver, which drops refused addresses, so the address checked is the address
//! connected to (no DNS-rebinding window). Addresses written into a URL (`127.0.0.1`,
//! `[::ffff:127.0.0.1]`, `2130706433`, `0.0.0.0`) are checked before the request, and so is
//! every redirect target. The guard cannot be skipped: [`Client`] is the only way to send, and
//! it starts every request with the check.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

use reqwest::dns::{Addrs, Name, Resolve, Resolving};

/// Why a destination was refused by policy: retrying cannot help.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct Refused(pub String);

/// Limits of one outbound client.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    pub connect_timeout: Duration,
    pub timeout: Duration,
    /// Redirects followed (each target checked); 0 follows none.
    pub max_redirects: usize,
}

/// The one way lps sends a request to the outside world: every request's URL is checked
/// ([`check_url`]) before it is built, and every address a name resolves to by the client's
/// own resolver.
#[derive(Clone)]
pub struct Client {
    inner: reqwest::Client,
    allow_private: bool,
}

impl Client {
    /// A `GET` of `url`, if policy allows the address (with the current trace's
    /// `traceparent` when tracing).
    pub fn get(&self, url: &str) -> Result<reqwest::RequestBuilder, Refused> {
        Ok(traced(self.inner.get(self.checked(url)?)))
    }

    /// A `POST` to `url`, if policy allows the address (with the current trace's
    /// `traceparent` when tracing).
    pub fn post(&self, url: &str) -> Result<reqwest::RequestBuilder, Refused> {
        Ok(traced(self.inner.post(self.checked(url)?)))
    }

    fn checked(&self, url: &str) -> Result<reqwest::Url, Refused> {
        let url = reqwest::Url::parse(url).map_err(|e| Refused(format!("invalid URL: {e}")))?;
        check_url(&url, self.allow_private)?;
        Ok(url)
    }
}

/// `request` carrying the current span's trace context, when tracing.
pub fn traced(request: reqwest::RequestBuilder) -> reqwest::RequestBuilder {
    if !crate::telemetry::enabled() {
        return request;
    }
    let mut headers = http::HeaderMap::new();
    crate::telemetry::inject(&mut headers);
    request.headers(headers)
}

/// A client that reaches only public addresses unless `allow_private`. `resolve` names hosts
/// reached at a given address instead of their DNS answer (`--resolve`, like curl's); those
/// addresses are held to the same policy.
pub fn client(
    allow_private: bool,
    resolve: &[(String, SocketAddr)],
    limits: Limits,
) -> reqwest::Result<Client> {
    let max_redirects = limits.max_redirects;
    let redirect = if max_redirects == 0 {
        reqwest::redirect::Policy::none()
    } else {
        reqwest::redirect::Policy::custom(move |attempt| {
            if attempt.previous().len() > max_redirects {
                return attempt.error(Refused("too many redirects".into()));
            }
            match check_url(attempt.url(), allow_private) {
                Ok(()) => attempt.follow(),
                Err(refused) => attempt.error(refused),
            }
        })
    };
    reqwest::Client::builder()
        .connect_timeout(limits.connect_timeout)
        .timeout(limits.timeout)
        .redirect(redirect)
        .no_proxy()
        .dns_resolver(Arc::new(GuardedResolver {
            allow_private,
            resolve: resolve.to_vec(),
        }))
        .user_agent(concat!("lps/", env!("CARGO_PKG_VERSION")))
        .build()
        .map(|inner| Client {
            inner,
            allow_private,
        })
}

/// Why policy refuses `url` as a destination (an address that is not public, a scheme other
/// than http(s), no host), for refusing it when it is given rather than when it is first
/// used; `None` when it may be tried.
pub fn refusal_of(url: &str, allow_private: bool) -> Option<String> {
    match reqwest::Url::parse(url) {
        Ok(url) => check_url(&url, allow_private)
            .err()
            .map(|refused| refused.0),
        Err(err) => Some(format!("invalid URL: {err}")),
    }
}

/// Checks a URL before it is requested: http(s), a host, and no refused address literal (names
/// are checked when the client resolves them).
fn check_url(url: &reqwest::Url, allow_private: bool) -> Result<(), Refused> {
    if !matches!(url.scheme(), "http" | "https") {
        return Err(Refused(format!(
            "the scheme {} is not allowed",
            url.scheme()
        )));
    }
    let ip = match url.host() {
        None => return Err(Refused("the URL has no host".into())),
        Some(url::Host::Domain(_)) => return Ok(()),
        Some(url::Host::Ipv4(v4)) => IpAddr::V4(v4),
        Some(url::Host::Ipv6(v6)) => IpAddr::V6(v6),
    };
    if allow_private || is_public(ip) {
        Ok(())
    } else {
        Err(Refused(format!("{ip} is not a public address; refused")))
    }
}

/// Whether a refusal by policy (rather than a network failure) stopped a request.
pub fn is_refused(err: &reqwest::Error) -> Option<String> {
    let mut source: Option<&(dyn std::error::Error + 'static)> = Some(err);
    while let Some(current) = source {
        if let Some(refused) = current.downcast_ref::<Refused>() {
            return Some(refused.0.clone());
        }
        source = current.source();
    }
    None
}

/// Resolves with the system resolver and keeps only the addresses policy allows.
struct GuardedResolver {
    allow_private: bool,
    resolve: Vec<(String, SocketAddr)>,
}

impl Resolve for GuardedResolver {
    fn resolve(&self, name: Name) -> Resolving {
        let allow_private = self.allow_private;
        let fixed: Vec<SocketAddr> = self
            .resolve
            .iter()
            .filter(|(host, _)| host.eq_ignore_ascii_case(name.as_str()))
            .map(|(_, address)| *address)
            .collect();
        Box::pin(async move {
            let host = name.as_str().to_owned();
            let found: Vec<SocketAddr> = if fixed.is_empty() {
                tokio::net::lookup_host((host.as_str(), 0)).await?.collect()
            } else {
                // The connector keeps a fixed address's port when the URL names none.
                fixed
            };
            let allowed: Vec<SocketAddr> = found
                .iter()
                .copied()
                .filter(|address| allow_private || is_public(address.ip()))
                .collect();
            if allowed.is_empty() {
                let refused: Box<dyn std::error::Error + Send + Sync> = if found.is_empty() {
                    format!("{host} has no address").into()
                } else {
                    Box::new(Refused(format!(
                        "{host} resolves to a non-public address; refused"
                    )))
                };
                return Err(refused);
            }
            let addrs: Addrs = Box::new(allowed.into_iter());
            Ok(addrs)
        })
    }
}

/// Whether an address is globally reachable: outside every special-purpose range, and for
/// IPv6 forms that embed an IPv4 address, the embedded address too.
pub fn is_public(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => is_public_v4(v4),
        IpAddr::V6(v6) => is_public_v6(v6),
    }
}

fn is_public_v4(ip: Ipv4Addr) -> bool {
    let [a, b, c, _] = ip.octets();
    let special = a == 0 // "this network"
        || a == 10
        || (a == 100 && (64..128).contains(&b)) // shared address space (CGN)
        || a == 127
        || (a == 169 && b == 254)
        || (a == 172 && (16..32).contains(&b))
        || (a == 192 && b == 0 && c == 0) // IETF protocol assignments
        || (a == 192 && b == 0 && c == 2) // documentation
        || (a == 192 && b == 31 && c == 196) // AS112
        || (a == 192 && b == 52 && c == 193) // AMT
        || (a == 192 && b == 88 && c == 99) // 6to4 relay anycast
        || (a == 192 && b == 168)
        || (a == 192 && b == 175 && c == 48) // direct delegation AS112
        || (a == 198 && (b == 18 || b == 19)) // benchmarking
        || (a == 198 && b == 51 && c == 100) // documentation
        || (a == 203 && b == 0 && c == 113) // documentation
        || a >= 224; // multicast, reserved, broadcast
    !special
}

fn is_public_v6(ip: Ipv6Addr) -> bool {
    let s = ip.segments();
    let embedded = |high: u16, low: u16| {
        Ipv4Addr::new((high >> 8) as u8, high as u8, (low >> 8) as u8, low as u8)
    };
    // IPv4-mapped ::ffff:0:0/96 and the deprecated IPv4-compatible ::/96 (:: and ::1 included).
    if s[..5] == [0; 5] && (s[5] == 0xffff || s[5] == 0) {
        return s[5] == 0xffff && is_public_v4(embedded(s[6], s[7]));
    }
    // NAT64 well-known prefix 64:ff9b::/96: as public as the IPv4 address it reaches.
    if s[..6] == [0x64, 0xff9b, 0, 0, 0, 0] {
        return is_public_v4(embedded(s[6], s[7]));
    }
    // 6to4 2002::/16 embeds the IPv4 address of its relay.
    if s[0] == 0x2002 {
        return is_public_v4(embedded(s[1], s[2]));
    }
    let special = (s[0] == 0x64 && s[1] == 0xff9b && s[2] == 1) // local-use NAT64 64:ff9b:1::/48
        || (s[0] == 0x100 && s[1..4] == [0, 0, 0]) // discard-only 100::/64
        || (s[0] == 0x2001 && s[1] < 0x200) // IETF protocol assignments 2001::/23 (Teredo 2001::/32 included)
        || (s[0] == 0x2001 && s[1] == 0xdb8) // documentation
        || s[0] == 0x3fff && s[1] < 0x1000 // documentation 3fff::/20
        || s[0] == 0x5f00 // segment routing
        || (s[0] & 0xfe00) == 0xfc00 // unique local
        || (s[0] & 0xffc0) == 0xfe80 // link-local
        || (s[0] & 0xffc0) == 0xfec0 // site-local (deprecated)
        || (s[0] & 0xff00) == 0xff00; // multicast
    !special
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn special_purpose_addresses_are_not_public() {
        for address in [
            "127.0.0.1",
            "10.1.2.3",
            "172.16.0.1",
            "192.168.0.1",
            "169.254.169.254",
            "100.64.0.1",
            "0.0.0.0",
            "198.18.0.1",
            "224.0.0.1",
            "255.255.255.255",
            "::1",
            "::",
            "fd00::1",
            "fe80::1",
            "ff02::1",
            "::ffff:127.0.0.1",
            "::ffff:169.254.169.254",
            "::127.0.0.1",
            "64:ff9b::7f00:1",
            "64:ff9b::a9fe:a9fe",
            "64:ff9b:1::1",
            "2002:7f00:1::",
            "2002:a9fe:a9fe::1",
            "2001:0:4136:e378:8000:63bf:3fff:fdd2",
            "2001:db8::1",
            "100::1",
        ] {
            let ip: IpAddr = address.parse().unwrap();
            assert!(!is_public(ip), "{address} must be refused");
        }
    }

    #[test]
    fn global_addresses_are_public() {
        for address in [
            "93.184.216.34",
            "8.8.8.8",
            "2606:2800:220:1::",
            "::ffff:93.184.216.34",
            "64:ff9b::808:808",
            "2002:808:808::1",
        ] {
            let ip: IpAddr = address.parse().unwrap();
            assert!(is_public(ip), "{address} must be allowed");
        }
    }

    #[test]
    fn address_literals_in_urls_are_checked_before_any_request() {
        let check = |url: &str| check_url(&reqwest::Url::parse(url).unwrap(), false);
        assert!(check("http://[::127.0.0.1]/").is_err());
        assert!(check("http://[64:ff9b::7f00:1]/").is_err());
        assert!(check("http://127.1/").is_err());
        assert!(check("ftp://example.com/").is_err());
        assert!(check("https://example.com/").is_ok());
        assert!(check("https://93.184.216.34/").is_ok());
        assert!(check_url(&reqwest::Url::parse("http://127.0.0.1/").unwrap(), true).is_ok());
    }
}
