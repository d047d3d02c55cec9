//! Keys that one lps process uses to sign and another to check: the page-load tokens of lead
//! pages (an edge makes one with every page it answers, core checks it on the view's beacon)
//! and the dashboard's notices (an edge sets one, whichever edge answers the redirect reads
//! it). Each is derived from `--edge-secret`, which every process of a deployment of several
//! shares; without one, from a key made when the process starts, which the faces of `lps
//! serve` share (a separate `lps edge` then needs `--edge-secret` for its page loads to be
//! recognised, as it does for its clients' addresses).

use std::sync::LazyLock;

use hmac::{Hmac, Mac};
use sha2::Sha256;
use siphasher::sip::SipHasher24;

/// This process's own key, for a deployment without `--edge-secret`.
static PROCESS_KEY: LazyLock<[u8; 32]> = LazyLock::new(rand::random);

/// The key for `purpose`, derived from `edge_secret` (else this process's own key).
pub fn derive(edge_secret: Option<&str>, purpose: &str) -> [u8; 32] {
    let secret = edge_secret.map_or(PROCESS_KEY.as_slice(), str::as_bytes);
    let mut mac = Hmac::<Sha256>::new_from_slice(secret).expect("HMAC takes any key length");
    mac.update(purpose.as_bytes());
    mac.finalize().into_bytes().into()
}

/// Bytes of a page-load token that are random, and of its tag.
const LOAD_RANDOM: usize = 12;
const LOAD_TAG: usize = 8;
/// A page-load token's length in hex: it is the view id the tracking script reports.
pub const LOAD_TOKEN_LEN: usize = 2 * (LOAD_RANDOM + LOAD_TAG);

/// Page-load tokens: a random id with a tag (SipHash-2-4, keyed) over it and the page's
/// address, so only lps can make one for a page, and each names one load of it.
#[derive(Clone)]
pub struct PageLoads {
    key: [u8; 16],
}

impl PageLoads {
    pub fn new(edge_secret: Option<&str>) -> Self {
        let derived = derive(edge_secret, "lps page-load tokens v1");
        let mut key = [0; 16];
        key.copy_from_slice(&derived[..16]);
        Self { key }
    }

    fn tag(&self, random: &[u8], campaign_slug: &str, lead_slug: &str) -> [u8; LOAD_TAG] {
        use std::hash::Hasher;
        let mut hasher = SipHasher24::new_with_key(&self.key);
        hasher.write(random);
        hasher.write(campaign_slug.as_bytes());
        hasher.write(b"/");
        hasher.write(lead_slug.as_bytes());
        hasher.finish().to_le_bytes()
    }

    /// A new token for one load of the page `/p/{campaign_slug}/{lead_slug}` (hex).
    pub fn mint(&self, campaign_slug: &str, lead_slug: &str) -> String {
        let random: [u8; LOAD_RANDOM] = rand::random();
        let tag = self.tag(&random, campaign_slug, lead_slug);
        let mut bytes = [0; LOAD_RANDOM + LOAD_TAG];
        bytes[..LOAD_RANDOM].copy_from_slice(&random);
        bytes[LOAD_RANDOM..].copy_from_slice(&tag);
        // Into a buffer of its own: `hex::encode` collects the text a character at a time,
        // which a page answered from memory paid with every answer.
        let mut text = [0; LOAD_TOKEN_LEN];
        hex::encode_to_slice(bytes, &mut text).expect("a token's text is twice its bytes");
        std::str::from_utf8(&text).expect("hex is ASCII").to_owned()
    }

    /// Whether `token` was made by [`PageLoads::mint`] for this page (with this key).
    pub fn verify(&self, token: &str, campaign_slug: &str, lead_slug: &str) -> bool {
        let mut bytes = [0; LOAD_RANDOM + LOAD_TAG];
        if token.len() != LOAD_TOKEN_LEN || hex::decode_to_slice(token, &mut bytes).is_err() {
            return false;
        }
        let (random, tag) = bytes.split_at(LOAD_RANDOM);
        // A tag compared in constant time: its bytes are not learned one by one from timing.
        let expected = self.tag(random, campaign_slug, lead_slug);
        expected
            .iter()
            .zip(tag)
            .fold(0u8, |diff, (a, b)| diff | (a ^ b))
            == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_load_token_holds_for_its_page_and_key_only() {
        let loads = PageLoads::new(Some("shared"));
        let token = loads.mint("acme-q4", "ada-lovelace");
        assert_eq!(token.len(), LOAD_TOKEN_LEN);
        assert!(loads.verify(&token, "acme-q4", "ada-lovelace"));
        // Another process of the same deployment checks it; another page or key does not.
        assert!(PageLoads::new(Some("shared")).verify(&token, "acme-q4", "ada-lovelace"));
        assert!(!loads.verify(&token, "acme-q4", "grace-hopper"));
        assert!(!PageLoads::new(Some("other")).verify(&token, "acme-q4", "ada-lovelace"));
        assert!(!PageLoads::new(None).verify(&token, "acme-q4", "ada-lovelace"));
        // Made up, altered or malformed: refused.
        let mut altered = token.clone().into_bytes();
        altered[0] = if altered[0] == b'0' { b'1' } else { b'0' };
        assert!(!loads.verify(
            &String::from_utf8(altered).unwrap(),
            "acme-q4",
            "ada-lovelace"
        ));
        assert!(!loads.verify(&"0".repeat(LOAD_TOKEN_LEN), "acme-q4", "ada-lovelace"));
        assert!(!loads.verify("zz", "acme-q4", "ada-lovelace"));
        assert_ne!(token, loads.mint("acme-q4", "ada-lovelace"));
        // One process without a secret agrees with itself.
        let own = PageLoads::new(None);
        assert!(own.verify(&own.mint("a", "b"), "a", "b"));
    }
}
