//! Who the client is: the TCP peer, or, when the peer is a proxy named by `--trusted-proxies`,
//! the address that proxy reports in `X-Forwarded-For` (the nearest one not itself trusted).
//! Forms record it, and unauthenticated API calls are rate-limited by it.

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;

use axum::extract::{ConnectInfo, Request};
use http::HeaderName;
use ipnet::IpNet;

const X_FORWARDED_FOR: HeaderName = HeaderName::from_static("x-forwarded-for");

/// The client's address, put on every request by [`resolve`].
#[derive(Debug, Clone, Copy)]
pub struct ClientAddress(pub IpAddr);

/// The proxies whose `X-Forwarded-For` is believed.
#[derive(Debug, Clone, Default)]
pub struct TrustedProxies(Arc<Vec<IpNet>>);

impl TrustedProxies {
    /// `CIDR,CIDR,...` (a bare address is one host); empty trusts no one.
    pub fn parse(list: &str) -> Result<Self, String> {
        let mut nets = Vec::new();
        for item in list
            .split(',')
            .map(str::trim)
            .filter(|item| !item.is_empty())
        {
            let net = item
                .parse::<IpNet>()
                .or_else(|_| item.parse::<IpAddr>().map(IpNet::from))
                .map_err(|_| format!("{item:?} is not an address or CIDR range"))?;
            nets.push(net);
        }
        Ok(Self(Arc::new(nets)))
    }

    fn trusts(&self, address: IpAddr) -> bool {
        self.0.iter().any(|net| net.contains(&address))
    }

    /// The client behind `peer`: walking `X-Forwarded-For` from the nearest hop, the first
    /// address that is not a trusted proxy (or the farthest one if all are).
    fn client(&self, peer: IpAddr, forwarded_for: Option<&str>) -> IpAddr {
        if !self.trusts(peer) {
            return peer;
        }
        let mut client = peer;
        for hop in forwarded_for.into_iter().flat_map(|v| v.rsplit(',')) {
            match hop.trim().parse::<IpAddr>() {
                Ok(address) => {
                    client = address;
                    if !self.trusts(address) {
                        break;
                    }
                }
                Err(_) => break,
            }
        }
        client
    }
}

/// Puts the request's [`ClientAddress`] ([`of`]) on it (see `every_request.rs`).
pub fn resolve(trusted: &TrustedProxies, request: &mut Request) {
    if let Some(client) = of(trusted, request) {
        request.extensions_mut().insert(ClientAddress(client));
    }
}

/// The client of `request`: its peer, or the address its trusted proxies report (`None` only
/// for a request that came through no connection, as in a test calling the app directly).
pub fn of(trusted: &TrustedProxies, request: &Request) -> Option<IpAddr> {
    let ConnectInfo(peer) = request.extensions().get::<ConnectInfo<SocketAddr>>()?;
    let peer = peer.ip();
    if !trusted.trusts(peer) {
        return Some(peer);
    }
    // The header is only read when the peer is a trusted proxy, and its values joined only
    // when it came more than once: nothing is allocated on the way for anyone else.
    let mut values = request
        .headers()
        .get_all(X_FORWARDED_FOR)
        .iter()
        .filter_map(|value| value.to_str().ok());
    let joined: String;
    let forwarded_for = match (values.next(), values.next()) {
        (None, _) => None,
        (Some(one), None) => Some(one),
        (Some(first), Some(second)) => {
            joined = [first, second]
                .into_iter()
                .chain(values)
                .collect::<Vec<_>>()
                .join(",");
            Some(joined.as_str())
        }
    };
    Some(trusted.client(peer, forwarded_for))
}

/// `request` with the client's address for core's per-address limits (logins, registrations).
pub fn with_client_address<T>(
    mut request: tonic::Request<T>,
    address: Option<&ClientAddress>,
) -> tonic::Request<T> {
    if let Some(ClientAddress(ip)) = address
        && let Ok(value) = ip.to_string().parse()
    {
        request
            .metadata_mut()
            .insert(lps::grpc::CLIENT_ADDRESS, value);
    }
    request
}

/// `address` as text, as `IpAddr`'s `Display` writes it (what beacons and forms carry to core).
/// An IPv4 address, every beacon's most often, is written octet by octet with `itoa`:
/// `Display` runs the formatter's machinery for each octet, 1.3% of lps's CPU while it took a
/// stream of beacons.
pub fn text_of(address: IpAddr) -> String {
    match address {
        IpAddr::V4(v4) => {
            let mut text = String::with_capacity(15);
            let mut digits = itoa::Buffer::new();
            for (n, octet) in v4.octets().into_iter().enumerate() {
                if n > 0 {
                    text.push('.');
                }
                text.push_str(digits.format(octet));
            }
            text
        }
        IpAddr::V6(_) => address.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(text: &str) -> IpAddr {
        text.parse().unwrap()
    }

    #[test]
    fn an_address_is_written_as_display_writes_it() {
        for octets in [
            [0, 0, 0, 0],
            [255, 255, 255, 255],
            [10, 0, 9, 1],
            [192, 168, 100, 27],
        ] {
            let address = IpAddr::from(octets);
            assert_eq!(text_of(address), address.to_string());
        }
        for n in 0..=u16::MAX {
            let [a, b] = n.to_be_bytes();
            let address = IpAddr::from([a, b, b ^ 0x5a, a.wrapping_mul(7)]);
            assert_eq!(text_of(address), address.to_string());
        }
        let v6 = ip("2001:db8::ff00:42:8329");
        assert_eq!(text_of(v6), "2001:db8::ff00:42:8329");
        assert_eq!(text_of(ip("::ffff:10.0.0.1")), "::ffff:10.0.0.1");
    }

    #[test]
    fn only_trusted_proxies_are_believed() {
        let none = TrustedProxies::default();
        assert_eq!(
            none.client(ip("10.0.0.1"), Some("203.0.113.9")),
            ip("10.0.0.1")
        );
        let proxies = TrustedProxies::parse("10.0.0.0/8, 192.0.2.7").unwrap();
        assert_eq!(
            proxies.client(ip("10.0.0.1"), Some("203.0.113.9")),
            ip("203.0.113.9")
        );
        // A client cannot pose as someone else by sending the header itself: the nearest
        // untrusted hop wins.
        assert_eq!(
            proxies.client(ip("10.0.0.1"), Some("198.51.100.1, 203.0.113.9, 192.0.2.7")),
            ip("203.0.113.9")
        );
        assert_eq!(
            proxies.client(ip("203.0.113.5"), Some("1.2.3.4")),
            ip("203.0.113.5")
        );
        assert_eq!(proxies.client(ip("10.0.0.1"), Some("junk")), ip("10.0.0.1"));
        assert!(TrustedProxies::parse("not-a-net").is_err());
    }
}
