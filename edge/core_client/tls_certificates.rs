//! The TLS certificates this edge answers HTTPS with (`--https`), as core lists them
//! (`VisitorService.ListCertificates`, which only a trusted edge may call): asked again
//! whenever core's change stream says they changed, or starts afresh. Looked up by the name a
//! TLS client asks for (SNI) on every handshake, without a call to core: a name with no
//! certificate here is refused, and never makes anyone order one.

use std::collections::HashMap;
use std::sync::{Arc, RwLock};

use rustls::crypto::CryptoProvider;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::sign::CertifiedKey;

pub struct TlsCertificates {
    by_name: RwLock<HashMap<String, Arc<CertifiedKey>>>,
    /// The public URL's host: a client that names nothing (no SNI) is answered with its
    /// certificate.
    public_host: Option<String>,
    provider: Arc<CryptoProvider>,
}

impl std::fmt::Debug for TlsCertificates {
    // Names only: never a key in a log line.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let by_name = self.by_name.read().unwrap_or_else(|e| e.into_inner());
        f.debug_struct("TlsCertificates")
            .field("names", &by_name.keys().collect::<Vec<_>>())
            .finish()
    }
}

impl TlsCertificates {
    pub fn new(public_host: Option<String>, provider: Arc<CryptoProvider>) -> Self {
        Self {
            by_name: RwLock::default(),
            public_host,
            provider,
        }
    }

    /// The certificate for `name` (lower case), or for the public host when a client named
    /// none.
    pub fn get(&self, name: Option<&str>) -> Option<Arc<CertifiedKey>> {
        let name = name.or(self.public_host.as_deref())?;
        self.by_name
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .get(name)
            .cloned()
    }

    /// Whether HTTPS is answered for `name`.
    pub fn has(&self, name: &str) -> bool {
        self.by_name
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .contains_key(name)
    }

    /// Replaces what is served with core's list (a certificate that cannot be read is left
    /// out, and said so).
    pub fn replace(&self, certificates: Vec<lps::proto::TlsCertificate>) {
        let by_name: HashMap<String, Arc<CertifiedKey>> = certificates
            .into_iter()
            .filter_map(
                |certificate| match certified_key(&certificate, &self.provider) {
                    Ok(key) => Some((certificate.hostname.to_ascii_lowercase(), Arc::new(key))),
                    Err(error) => {
                        tracing::warn!(hostname = %certificate.hostname, %error,
                            "a certificate could not be read; its name is not answered over TLS");
                        None
                    }
                },
            )
            .collect();
        *self.by_name.write().unwrap_or_else(|e| e.into_inner()) = by_name;
    }
}

/// A certificate's chain and key, as rustls signs with them.
pub fn certified_key(
    certificate: &lps::proto::TlsCertificate,
    provider: &CryptoProvider,
) -> Result<CertifiedKey, String> {
    pem_pair(&certificate.chain_pem, &certificate.key_pem, provider)
}

/// A chain and its key, both PEM, as rustls signs with them, the key checked to be the
/// certificate's.
pub fn pem_pair(
    chain_pem: &str,
    key_pem: &str,
    provider: &CryptoProvider,
) -> Result<CertifiedKey, String> {
    let (chain, key) = from_pem(chain_pem, key_pem)?;
    CertifiedKey::from_der(chain, key, provider).map_err(|err| err.to_string())
}

/// A chain (at least one certificate) and its key, read from PEM (one text or two).
pub fn from_pem(
    chain_pem: &str,
    key_pem: &str,
) -> Result<(Vec<CertificateDer<'static>>, PrivateKeyDer<'static>), String> {
    let chain: Vec<CertificateDer<'static>> = CertificateDer::pem_slice_iter(chain_pem.as_bytes())
        .collect::<Result<_, _>>()
        .map_err(|err| err.to_string())?;
    if chain.is_empty() {
        return Err("no certificate".to_owned());
    }
    let key = PrivateKeyDer::from_pem_slice(key_pem.as_bytes()).map_err(|err| err.to_string())?;
    Ok((chain, key))
}
