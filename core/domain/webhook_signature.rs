//! How a callback is signed: the Standard Webhooks scheme (<https://www.standardwebhooks.com>),
//! which the official `standardwebhooks` libraries verify, and lps's older scheme, kept for
//! receivers written before it (deprecated).
//!
//! Standard Webhooks: `webhook-id` (the same on every attempt and redelivery of one callback),
//! `webhook-timestamp` (Unix seconds) and `webhook-signature`: `v1,` and the base64
//! HMAC-SHA256 of `"{id}.{timestamp}.{body}"`, keyed by the secret's bytes (a `whsec_` secret
//! is base64 after its prefix). While a rotated secret overlaps the new one, the header carries
//! both signatures, separated by a space, the new one first.
//!
//! Deprecated: `X-Lps-Signature: sha256=HEX(HMAC-SHA256(secret, "{timestamp}.{body}"))`, keyed
//! by the whole secret string, with the current secret only.

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use hmac::{Hmac, Mac};
use sha2::Sha256;

/// The prefix of a callback secret.
pub const SECRET_PREFIX: &str = "whsec_";

/// A new secret: `whsec_` and 32 random bytes in base64.
pub fn new_secret() -> String {
    let bytes: [u8; 32] = rand::random();
    format!("{SECRET_PREFIX}{}", STANDARD.encode(bytes))
}

/// The `webhook-id` of a callback: the same for every attempt of it.
pub fn message_id(callback_id: i64) -> String {
    format!("msg_{callback_id}")
}

/// The key a secret signs with: the bytes its base64 (after `whsec_`) stands for, as the
/// specification's libraries read it; a secret that is not base64 signs with its own bytes.
fn key_of(secret: &str) -> Vec<u8> {
    let encoded = secret.strip_prefix(SECRET_PREFIX).unwrap_or(secret);
    STANDARD
        .decode(encoded)
        .unwrap_or_else(|_| secret.as_bytes().to_vec())
}

/// `webhook-signature`: `v1,<base64>` for each secret, space-separated.
pub fn standard(secrets: &[&str], message_id: &str, timestamp: i64, body: &str) -> String {
    secrets
        .iter()
        .map(|secret| {
            let mut mac = Hmac::<Sha256>::new_from_slice(&key_of(secret))
                .expect("HMAC takes keys of any length");
            mac.update(format!("{message_id}.{timestamp}.{body}").as_bytes());
            format!("v1,{}", STANDARD.encode(mac.finalize().into_bytes()))
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// Deprecated `X-Lps-Signature`: `sha256=HEX(HMAC-SHA256(secret, "{timestamp}.{body}"))`.
pub fn legacy(secret: &str, timestamp: i64, body: &str) -> String {
    let mut mac =
        Hmac::<Sha256>::new_from_slice(secret.as_bytes()).expect("HMAC takes keys of any length");
    mac.update(format!("{timestamp}.{body}").as_bytes());
    format!("sha256={}", hex::encode(mac.finalize().into_bytes()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn standard_signatures_match_the_specifications_example() {
        // The example in the Standard Webhooks specification (and its libraries' tests).
        let secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
        let body = r#"{"test": 2432232314}"#;
        assert_eq!(
            standard(&[secret], "msg_p5jXN8AQM9LWM0D4loKWxJek", 1614265330, body),
            "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="
        );
    }

    #[test]
    fn an_overlap_signs_with_both_secrets_new_first() {
        let (new, old) = (new_secret(), new_secret());
        let both = standard(&[&new, &old], "msg_1", 1, "{}");
        let parts: Vec<&str> = both.split(' ').collect();
        assert_eq!(
            parts,
            [
                standard(&[&new], "msg_1", 1, "{}"),
                standard(&[&old], "msg_1", 1, "{}")
            ]
        );
    }

    #[test]
    fn new_secrets_are_whsec_and_32_bytes_of_base64() {
        let secret = new_secret();
        assert_eq!(key_of(&secret).len(), 32);
        assert_ne!(secret, new_secret());
        // Secrets made before (`whsec_` and 40 letters and digits) are base64 too.
        assert_eq!(key_of(&format!("whsec_{}", "a".repeat(40))).len(), 30);
    }

    #[test]
    fn legacy_signatures_are_hmac_sha256_of_timestamp_dot_body() {
        // Expected value computed independently with Python's hmac module.
        assert_eq!(
            legacy("whsec_test", 1_700_000_000, r#"{"lead_id":1}"#),
            "sha256=502eab631001f78e47319a5e616d1155ada73141f88186167535af6a810e2413"
        );
        assert_ne!(legacy("k", 1, "x"), legacy("k", 2, "x"));
    }
}
