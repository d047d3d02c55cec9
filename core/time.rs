//! Time as stored (microseconds since the Unix epoch, UTC) and as shown on the wire.

use chrono::{DateTime, TimeZone, Utc};

/// Microseconds since the Unix epoch, UTC: the one timestamp representation in storage.
pub type Micros = i64;

/// Microseconds in a day.
pub const MICROS_PER_DAY: Micros = 86_400_000_000;

/// The current time in storage representation.
pub fn now() -> Micros {
    Utc::now().timestamp_micros()
}

/// A storage timestamp as a protobuf `Timestamp`.
pub fn to_proto(micros: Micros) -> prost_types::Timestamp {
    prost_types::Timestamp {
        seconds: micros.div_euclid(1_000_000),
        nanos: (micros.rem_euclid(1_000_000) * 1_000) as i32,
    }
}

/// A protobuf `Timestamp` in storage representation.
pub fn from_proto_micros(ts: &prost_types::Timestamp) -> Micros {
    from_proto(ts).timestamp_micros()
}

/// A protobuf `Timestamp` as a UTC date-time (out-of-range values clamp to the epoch).
pub fn from_proto(ts: &prost_types::Timestamp) -> DateTime<Utc> {
    Utc.timestamp_opt(ts.seconds, ts.nanos.clamp(0, 999_999_999) as u32)
        .single()
        .unwrap_or_default()
}

/// ISO 8601 with microseconds and a `Z` suffix, e.g. `2026-11-22T06:54:38.123456Z`.
pub fn iso8601(ts: &prost_types::Timestamp) -> String {
    from_proto(ts).format("%Y-%m-%dT%H:%M:%S%.6fZ").to_string()
}

/// ISO 8601 with microseconds and a `+00:00` offset, the form of form submissions'
/// `created_at`.
pub fn iso8601_offset(ts: &prost_types::Timestamp) -> String {
    from_proto(ts)
        .format("%Y-%m-%dT%H:%M:%S%.6f+00:00")
        .to_string()
}

/// `YYYY-MM-DD HH:MM:SS`, the form of `renews_at`.
pub fn plain_datetime(ts: &prost_types::Timestamp) -> String {
    from_proto(ts).format("%Y-%m-%d %H:%M:%S").to_string()
}

/// A span of time in storage representation.
pub fn micros(span: std::time::Duration) -> Micros {
    Micros::try_from(span.as_micros()).unwrap_or(Micros::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_both_wire_forms_from_storage_micros() {
        let ts = to_proto(1_795_330_478_123_456);
        assert_eq!(iso8601(&ts), "2026-11-22T06:54:38.123456Z");
        assert_eq!(plain_datetime(&ts), "2026-11-22 06:54:38");
    }

    #[test]
    fn negative_micros_keep_nanos_in_range() {
        let ts = to_proto(-1);
        assert_eq!((ts.seconds, ts.nanos), (-1, 999_999_000));
    }
}
