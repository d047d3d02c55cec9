//! How a lead's engagement score fades: each piece of evidence halves every
//! [`HALF_LIFE_DAYS`] days, kept as its value at a fixed epoch (see `score.rs`, which weighs
//! the evidence and announces a hot lead). Apart from it so that what reads a score (a
//! notification's message) needs nothing of what writes one.

use crate::time::{self, Micros};

pub const HALF_LIFE_DAYS: i64 = 14;
/// 2025-01-01T00:00:00Z.
pub const EPOCH: Micros = 1_735_689_600_000_000;

fn half_lives_since_epoch(at: Micros) -> f64 {
    (at - EPOCH) as f64 / (HALF_LIFE_DAYS * time::MICROS_PER_DAY) as f64
}

/// What evidence of `weight` at `at` adds to the stored score.
pub fn stored(weight: f64, at: Micros) -> f64 {
    weight * half_lives_since_epoch(at).exp2()
}

/// The score at `now` of a stored score, to two decimals.
pub fn at(score_base: f64, now: Micros) -> f64 {
    let score = score_base * (-half_lives_since_epoch(now)).exp2();
    (score * 100.0).round() / 100.0
}
