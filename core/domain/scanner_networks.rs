//! Networks whose page views are mail scanners' rather than people's (`--scanner-networks
//! FILE`): one CIDR range or address per line, `#` starts a comment. The file is read again
//! when it changes (checked at most every [`RECHECK`]); a file that cannot be read or holds a
//! line that is not a range keeps the ranges read before, with a warning naming the line.
//!
//! Ranges are kept merged and sorted as 128-bit intervals (IPv4 as IPv4-mapped IPv6), so a
//! lookup is a binary search however many ranges the providers publish.

use std::net::IpAddr;
use std::path::PathBuf;
use std::sync::Mutex;
use std::time::{Duration, Instant, SystemTime};

use ipnet::IpNet;

/// How often the file's modification time is looked at.
const RECHECK: Duration = Duration::from_secs(2);

/// The ranges, as sorted, merged `[first, last]` intervals with the text of the first range
/// that made each one (what a visit's reason names).
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Ranges(Vec<(u128, u128, String)>);

fn as_u128(address: IpAddr) -> u128 {
    match address {
        IpAddr::V4(v4) => u128::from(v4.to_ipv6_mapped()),
        IpAddr::V6(v6) => u128::from(v6),
    }
}

impl Ranges {
    /// The ranges of a file's text, or the first line that is not one (1-based) and why.
    pub fn parse(text: &str) -> Result<Self, String> {
        let mut intervals = Vec::new();
        for (number, line) in text.lines().enumerate() {
            let item = line.split('#').next().unwrap_or_default().trim();
            if item.is_empty() {
                continue;
            }
            let net = item
                .parse::<IpNet>()
                .or_else(|_| item.parse::<IpAddr>().map(IpNet::from))
                .map_err(|_| {
                    format!(
                        "line {}: {item:?} is not an address or CIDR range",
                        number + 1
                    )
                })?;
            let (first, last) = (as_u128(net.network()), as_u128(net.broadcast()));
            intervals.push((first, last, net.to_string()));
        }
        intervals.sort_by_key(|(first, _, _)| *first);
        let mut merged: Vec<(u128, u128, String)> = Vec::with_capacity(intervals.len());
        for (first, last, name) in intervals {
            match merged.last_mut() {
                Some(previous) if first <= previous.1.saturating_add(1) => {
                    previous.1 = previous.1.max(last);
                }
                _ => merged.push((first, last, name)),
            }
        }
        Ok(Self(merged))
    }

    /// The range holding `address`, if any.
    pub fn find(&self, address: IpAddr) -> Option<&str> {
        if self.is_empty() {
            return None;
        }
        let address = as_u128(address);
        let after = self.0.partition_point(|(first, _, _)| *first <= address);
        let (_, last, name) = self.0.get(after.checked_sub(1)?)?;
        (address <= *last).then_some(name.as_str())
    }

    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

struct Loaded {
    ranges: Ranges,
    modified: Option<SystemTime>,
    checked: Instant,
}

/// The configured scanner networks, read again when the file changes.
pub struct ScannerNetworks {
    path: Option<PathBuf>,
    loaded: Mutex<Loaded>,
}

impl ScannerNetworks {
    /// Reads the file once (an error if it cannot be read or parsed: a typo should stop the
    /// start, not silently count scanners as people).
    pub fn open(path: Option<PathBuf>) -> anyhow::Result<Self> {
        let (ranges, modified) = match &path {
            Some(path) => {
                let text = std::fs::read_to_string(path).map_err(|err| {
                    anyhow::anyhow!("--scanner-networks {}: {err}", path.display())
                })?;
                let ranges = Ranges::parse(&text).map_err(|err| {
                    anyhow::anyhow!("--scanner-networks {}: {err}", path.display())
                })?;
                (ranges, modified_at(path))
            }
            None => (Ranges::default(), None),
        };
        Ok(Self {
            path,
            loaded: Mutex::new(Loaded {
                ranges,
                modified,
                checked: Instant::now(),
            }),
        })
    }

    /// The configured range holding `address` (text as the edge sent it), if any.
    pub fn find(&self, address: &str) -> Option<String> {
        let path = self.path.as_ref()?;
        let address: IpAddr = address.parse().ok()?;
        let mut loaded = self.loaded.lock().unwrap_or_else(|p| p.into_inner());
        if loaded.checked.elapsed() >= RECHECK {
            loaded.checked = Instant::now();
            let modified = modified_at(path);
            if modified != loaded.modified {
                loaded.modified = modified;
                match std::fs::read_to_string(path)
                    .map_err(|err| err.to_string())
                    .and_then(|text| Ranges::parse(&text))
                {
                    Ok(ranges) => {
                        tracing::info!(path = %path.display(), ranges = ranges.len(), "scanner networks read again");
                        loaded.ranges = ranges;
                    }
                    Err(err) => tracing::warn!(
                        path = %path.display(), error = %err,
                        "scanner networks not read again; the ranges read before stay"
                    ),
                }
            }
        }
        loaded.ranges.find(address).map(str::to_owned)
    }
}

fn modified_at(path: &std::path::Path) -> Option<SystemTime> {
    std::fs::metadata(path).and_then(|m| m.modified()).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_are_found_by_binary_search_over_merged_intervals() {
        let ranges = Ranges::parse(
            "# Microsoft\n40.92.0.0/15\n40.93.0.0/16 # inside the first\n\n\
             52.100.0.0/14\n2a01:111:f400::/48\n198.51.100.7\n",
        )
        .unwrap();
        assert_eq!(ranges.len(), 4, "{ranges:?}");
        let find = |a: &str| ranges.find(a.parse().unwrap()).map(str::to_owned);
        assert_eq!(find("40.93.12.1").as_deref(), Some("40.92.0.0/15"));
        assert_eq!(find("52.103.255.255").as_deref(), Some("52.100.0.0/14"));
        assert_eq!(find("52.104.0.0"), None);
        assert_eq!(find("198.51.100.7").as_deref(), Some("198.51.100.7/32"));
        assert_eq!(find("198.51.100.8"), None);
        assert_eq!(
            find("2a01:111:f400:1::5").as_deref(),
            Some("2a01:111:f400::/48")
        );
        assert_eq!(find("10.0.0.1"), None);
        assert_eq!(find("::1"), None);
    }

    #[test]
    fn a_line_that_is_not_a_range_is_named() {
        let err = Ranges::parse("10.0.0.0/8\nnot-a-range\n").unwrap_err();
        assert!(err.starts_with("line 2:"), "{err}");
    }

    #[test]
    fn a_changed_file_is_read_again() {
        let dir = std::env::temp_dir().join(format!("lps-scanners-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("networks.txt");
        std::fs::write(&path, "192.0.2.0/24\n").unwrap();
        let networks = ScannerNetworks::open(Some(path.clone())).unwrap();
        assert!(networks.find("192.0.2.9").is_some());
        assert!(networks.find("203.0.113.9").is_none());
        std::fs::write(&path, "203.0.113.0/24\n").unwrap();
        // Force the next lookup to look at the file again, whatever the clock's resolution.
        {
            let mut loaded = networks.loaded.lock().unwrap();
            loaded.checked -= RECHECK;
            loaded.modified = None;
        }
        assert!(networks.find("203.0.113.9").is_some());
        assert!(networks.find("192.0.2.9").is_none());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
