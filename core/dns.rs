//! DNS look-ups for custom domains' records (`domain/domains.rs`), through hickory-resolver: the
//! system's resolvers (`/etc/resolv.conf`), or `--dns-server HOST:PORT` for tests and private
//! networks. Answers are not cached here (a record just created is seen at the next check),
//! and every look-up is bounded in time.

use std::net::{IpAddr, SocketAddr};
use std::time::Duration;

use hickory_resolver::config::{ConnectionConfig, NameServerConfig, ResolverConfig, ResolverOpts};
use hickory_resolver::net::runtime::TokioRuntimeProvider;
use hickory_resolver::proto::rr::{RData, RecordType};
use hickory_resolver::{Resolver, TokioResolver};

/// How long one look-up may take, retries included.
const LOOKUP_TIMEOUT: Duration = Duration::from_secs(5);

/// What a look-up found wrong.
#[derive(Debug, thiserror::Error)]
pub enum DnsError {
    /// The name has no record of the type (or does not exist).
    #[error("no {0} record")]
    NoRecords(&'static str),
    /// The resolver could not answer (timeout, server failure).
    #[error("the DNS look-up failed: {0}")]
    Failed(String),
}

#[derive(Clone)]
pub struct Dns {
    resolver: TokioResolver,
}

impl Dns {
    /// The system's resolvers, or the one at `server`.
    pub fn new(server: Option<SocketAddr>) -> anyhow::Result<Self> {
        let mut options = ResolverOpts::default();
        options.timeout = LOOKUP_TIMEOUT / 2;
        options.attempts = 1;
        // Nothing kept: a record created a moment ago must be seen at the next check.
        options.cache_size = 0;
        let builder = match server {
            Some(server) => {
                let connection = |mut config: ConnectionConfig| {
                    config.port = server.port();
                    config
                };
                let name_server = NameServerConfig::new(
                    server.ip(),
                    true,
                    vec![
                        connection(ConnectionConfig::udp()),
                        connection(ConnectionConfig::tcp()),
                    ],
                );
                let config = ResolverConfig::from_parts(None, Vec::new(), vec![name_server]);
                Resolver::builder_with_config(config, TokioRuntimeProvider::default())
            }
            None => Resolver::builder(TokioRuntimeProvider::default())?,
        };
        Ok(Self {
            resolver: builder.with_options(options).build()?,
        })
    }

    /// The strings of every TXT record at `name`.
    pub async fn txt(&self, name: &str) -> Result<Vec<String>, DnsError> {
        let answers = self.lookup(name, RecordType::TXT, "TXT").await?;
        Ok(answers
            .iter()
            .filter_map(|data| match data {
                RData::TXT(txt) => Some(
                    txt.txt_data
                        .iter()
                        .map(|part| String::from_utf8_lossy(part))
                        .collect::<String>(),
                ),
                _ => None,
            })
            .collect())
    }

    /// Where `name`'s CNAME points (no trailing dot, lower case), if it has one.
    pub async fn cname(&self, name: &str) -> Result<Option<String>, DnsError> {
        match self.lookup(name, RecordType::CNAME, "CNAME").await {
            Ok(answers) => Ok(answers.iter().find_map(|data| match data {
                RData::CNAME(target) => Some(
                    target
                        .0
                        .to_ascii()
                        .trim_end_matches('.')
                        .to_ascii_lowercase(),
                ),
                _ => None,
            })),
            Err(DnsError::NoRecords(_)) => Ok(None),
            Err(err) => Err(err),
        }
    }

    /// `name`'s addresses (A and AAAA, following CNAMEs).
    pub async fn addresses(&self, name: &str) -> Result<Vec<IpAddr>, DnsError> {
        let fqdn = fqdn(name);
        let lookup = tokio::time::timeout(LOOKUP_TIMEOUT, self.resolver.lookup_ip(fqdn.as_str()))
            .await
            .map_err(|_| DnsError::Failed("timed out".to_owned()))?;
        match lookup {
            Ok(found) => Ok(found.iter().collect()),
            Err(err) if err.is_no_records_found() || err.is_nx_domain() => {
                Err(DnsError::NoRecords("A or AAAA"))
            }
            Err(err) => Err(DnsError::Failed(err.to_string())),
        }
    }

    async fn lookup(
        &self,
        name: &str,
        kind: RecordType,
        label: &'static str,
    ) -> Result<Vec<RData>, DnsError> {
        let fqdn = fqdn(name);
        let lookup =
            tokio::time::timeout(LOOKUP_TIMEOUT, self.resolver.lookup(fqdn.as_str(), kind))
                .await
                .map_err(|_| DnsError::Failed("timed out".to_owned()))?;
        match lookup {
            Ok(found) => Ok(found
                .answers()
                .iter()
                .filter(|record| record.record_type() == kind)
                .map(|record| record.data.clone())
                .collect()),
            Err(err) if err.is_no_records_found() || err.is_nx_domain() => {
                Err(DnsError::NoRecords(label))
            }
            Err(err) => Err(DnsError::Failed(err.to_string())),
        }
    }
}

/// A name looked up as is (no search domains): with its final dot.
fn fqdn(name: &str) -> String {
    format!("{}.", name.trim_end_matches('.'))
}
