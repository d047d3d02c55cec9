//! The HTTPS listener's handshakes (`--https`): rustls, answering each name a client asks for
//! (SNI) with the certificate core issued for it (`core_client::tls_certificates`), and a
//! client that names none with the public host's. A name with no certificate fails the
//! handshake: nothing a client names makes lps order anything.
//!
//! An ACME server validating a TLS-ALPN-01 challenge (RFC 8737) offers only `acme-tls/1`: for
//! a name lps answers on (the public host, or a served domain) it gets the self-signed
//! certificate core keeps for the order in progress, and the connection ends there.

use std::sync::Arc;
use std::time::Duration;

use rustls::ServerConfig;
use rustls::crypto::CryptoProvider;
use rustls::server::{ClientHello, ResolvesServerCert};
use rustls::sign::CertifiedKey;
use tokio::net::TcpStream;
use tokio_rustls::LazyConfigAcceptor;
use tokio_rustls::server::TlsStream;

use crate::core_client::Core;
use crate::core_client::tls_certificates::{TlsCertificates, from_pem};

/// The HTTP `Strict-Transport-Security` of every HTTPS answer: a year. Not
/// `includeSubDomains`: a sender's domain's other names are theirs, not lps's.
pub const HSTS: &str = "max-age=31536000";

/// Makes the TLS connections of the HTTPS listener.
#[derive(Clone)]
pub struct Handshakes {
    core: Core,
    config: Arc<ServerConfig>,
    provider: Arc<CryptoProvider>,
    public_host: Option<String>,
}

impl Handshakes {
    /// Handshakes answered from `core`'s certificates (a core client made with them).
    pub fn new(core: Core, public_host: Option<String>) -> anyhow::Result<Self> {
        let provider = provider();
        let certificates = core
            .certificates()
            .cloned()
            .ok_or_else(|| anyhow::anyhow!("the edge keeps no certificates"))?;
        let config = ServerConfig::builder_with_provider(provider.clone())
            .with_safe_default_protocol_versions()?
            .with_no_client_auth()
            .with_cert_resolver(Arc::new(ByName(certificates)));
        Ok(Self {
            core,
            config: Arc::new(config),
            provider,
            public_host,
        })
    }

    /// The TLS connection over `stream`, or `None` when there is none to serve HTTP on (a
    /// failed handshake, a name with no certificate, an ACME validation, too slow: within
    /// `deadline`).
    pub async fn accept(
        &self,
        stream: TcpStream,
        deadline: Duration,
    ) -> Option<TlsStream<TcpStream>> {
        let handshake = async {
            let start = LazyConfigAcceptor::new(rustls::server::Acceptor::default(), stream)
                .await
                .ok()?;
            let hello = start.client_hello();
            let name = hello.server_name().map(name_of);
            let validation = hello
                .alpn()
                .is_some_and(|mut offered| offered.any(|p| p == lps::app::ACME_TLS_ALPN));
            if validation {
                let config = self.validation_config(name.as_deref()?).await?;
                // The handshake is all a validation asks; the connection ends after it.
                let _ = start.into_stream(config).await;
                return None;
            }
            start.into_stream(self.config.clone()).await.ok()
        };
        tokio::time::timeout(deadline, handshake)
            .await
            .ok()
            .flatten()
    }

    /// The answer to a TLS-ALPN-01 validation of `name`: only for a name lps answers on, and
    /// only while an order for it waits.
    async fn validation_config(&self, name: &str) -> Option<Arc<ServerConfig>> {
        let ours =
            self.public_host.as_deref() == Some(name) || self.core.served_domain(name).is_some();
        if !ours {
            return None;
        }
        let pem = self
            .core
            .acme_challenge(lps::proto::AcmeChallengeKind::TlsAlpn01, name)
            .await?;
        // Not checked as a served certificate is (`pem_pair`): its critical acmeIdentifier
        // extension is one rustls's certificate parser refuses, by design.
        let key = from_pem(&pem, &pem)
            .and_then(|(chain, key)| {
                let key = self
                    .provider
                    .key_provider
                    .load_private_key(key)
                    .map_err(|err| err.to_string())?;
                Ok(CertifiedKey::new(chain, key))
            })
            .map_err(|error| {
                tracing::warn!(%name, %error, "an ACME validation's certificate could not be read")
            })
            .ok()?;
        let mut config = ServerConfig::builder_with_provider(self.provider.clone())
            .with_safe_default_protocol_versions()
            .ok()?
            .with_no_client_auth()
            .with_cert_resolver(Arc::new(One(Arc::new(key))));
        config.alpn_protocols = vec![lps::app::ACME_TLS_ALPN.to_vec()];
        Some(Arc::new(config))
    }
}

/// A name as a client sent it (SNI), as names are kept: lower case, without a final dot.
fn name_of(sent: &str) -> String {
    sent.trim_end_matches('.').to_ascii_lowercase()
}

/// The cryptography rustls uses here (ring, as the ACME client does).
pub fn provider() -> Arc<CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

/// Answers each handshake with the certificate of the name it asks for.
#[derive(Debug)]
struct ByName(Arc<TlsCertificates>);

impl ResolvesServerCert for ByName {
    fn resolve(&self, hello: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        let name = hello.server_name().map(name_of);
        self.0.get(name.as_deref())
    }
}

/// Answers every handshake with one certificate.
#[derive(Debug)]
struct One(Arc<CertifiedKey>);

impl ResolvesServerCert for One {
    fn resolve(&self, _hello: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        Some(self.0.clone())
    }
}
