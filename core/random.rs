//! Random tokens and slugs: everything lps makes unguessable.

use rand::Rng;

/// `len` random ASCII letters and digits (keys, secrets).
pub fn token(len: usize) -> String {
    rand::rng()
        .sample_iter(&rand::distr::Alphanumeric)
        .take(len)
        .map(char::from)
        .collect()
}

/// A new lead's slug: 16 lower-case letters and digits (about 83 bits), so page addresses
/// cannot be guessed or enumerated.
pub fn lead_slug() -> String {
    const ALPHABET: &[u8] = b"abcdefghijklmnopqrstuvwxyz0123456789";
    let mut rng = rand::rng();
    (0..16)
        .map(|_| ALPHABET[rng.random_range(0..ALPHABET.len())] as char)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_have_the_asked_length_and_differ() {
        assert_eq!(token(40).len(), 40);
        assert_ne!(token(40), token(40));
    }

    #[test]
    fn lead_slugs_are_sixteen_lower_case_letters_and_digits() {
        let slug = lead_slug();
        assert_eq!(slug.len(), 16);
        assert!(
            slug.chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit())
        );
        assert_ne!(slug, lead_slug());
    }
}
