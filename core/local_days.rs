//! Days as a reader counts them: in an IANA time zone (`Europe/Berlin`, with its daylight
//! saving time) or at a fixed offset from UTC. Analytics count engagement on the day it fell
//! where the reader is, so a day's bar and the times listed beside it agree.
//!
//! A day is a number: days since 1970-01-01 in the zone's own calendar. The zone's offset can
//! change within a range of days (twice a year where clocks change), so storage groups rows by
//! [`LocalDays::day_sql`]: the range cut where the offset changes, each piece with its own.

use jiff::Timestamp;
use jiff::civil::Date;
use jiff::tz::{Offset, TimeZone};

use crate::time::{MICROS_PER_DAY, Micros};

/// The most offset changes one range is cut at: a year has two in zones that change clocks,
/// so 366 days have at most a handful; the bound keeps the SQL small whatever a zone does.
const MOST_CHANGES: usize = 32;

/// The longest time-zone name accepted (IANA's longest is 32 characters).
pub const NAME_MOST_CHARS: usize = 64;

/// The calendar days are counted in.
#[derive(Debug, Clone)]
pub struct LocalDays {
    zone: TimeZone,
}

impl LocalDays {
    /// An IANA time zone by name (`America/Los_Angeles`, `UTC`); `None` for a name the time-zone
    /// database does not know.
    pub fn named(name: &str) -> Option<Self> {
        let name = name.trim();
        if name.is_empty() || name.len() > NAME_MOST_CHARS {
            return None;
        }
        TimeZone::get(name).ok().map(|zone| Self { zone })
    }

    /// A fixed offset, in minutes east of UTC (callers bound it; an impossible one is UTC).
    pub fn offset_minutes(minutes: i64) -> Self {
        let seconds = i32::try_from(minutes * 60).unwrap_or(0);
        let offset = Offset::from_seconds(seconds).unwrap_or(Offset::UTC);
        Self {
            zone: TimeZone::fixed(offset),
        }
    }

    /// The day `at` falls on.
    pub fn day_of(&self, at: Micros) -> i64 {
        (at + self.offset_at(at)).div_euclid(MICROS_PER_DAY)
    }

    /// When `day` starts (its first instant, in UTC microseconds): local midnight, or the first
    /// instant after it where clocks skip midnight.
    pub fn start_of(&self, day: i64) -> Micros {
        let date = Date::new(1970, 1, 1)
            .ok()
            .and_then(|epoch| epoch.checked_add(jiff::Span::new().days(day)).ok());
        date.and_then(|date| date.to_zoned(self.zone.clone()).ok())
            .map(|zoned| zoned.timestamp().as_microsecond())
            // Out of the calendar's range: the day as if at UTC.
            .unwrap_or(day * MICROS_PER_DAY)
    }

    /// The SQL expression (a BIGINT) of the local day of `column` (UTC microseconds), exact for
    /// instants in `[from, to)`. The offsets and the instants they change at are numbers the
    /// time-zone database gives, written into the SQL as literals because how many there are
    /// varies with the range; no text of a caller's reaches it.
    pub fn day_sql(&self, column: &str, from: Micros, to: Micros) -> String {
        let (first, changes) = self.offsets(from, to);
        let mut shift = first.to_string();
        if !changes.is_empty() {
            shift = String::from("CASE");
            let mut before = first;
            for (at, offset) in &changes {
                shift.push_str(&format!(" WHEN {column} < {at} THEN {before}"));
                before = *offset;
            }
            shift.push_str(&format!(" ELSE {before} END"));
        }
        format!("CAST(({column} + {shift}) / {MICROS_PER_DAY} AS BIGINT)")
    }

    /// The offset (microseconds) at `from`, and each change in `[from, to)`: when, and to what.
    fn offsets(&self, from: Micros, to: Micros) -> (Micros, Vec<(Micros, Micros)>) {
        let first = self.offset_at(from);
        let Ok(start) = Timestamp::from_microsecond(from) else {
            return (first, Vec::new());
        };
        let changes = self
            .zone
            .following(start)
            .map(|change| {
                let offset = i64::from(change.offset().seconds()) * 1_000_000;
                (change.timestamp().as_microsecond(), offset)
            })
            .take_while(|(at, _)| *at < to)
            .take(MOST_CHANGES)
            .collect();
        (first, changes)
    }

    fn offset_at(&self, at: Micros) -> Micros {
        Timestamp::from_microsecond(at)
            .map(|t| i64::from(self.zone.to_offset(t).seconds()) * 1_000_000)
            .unwrap_or(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn micros(text: &str) -> Micros {
        text.parse::<Timestamp>().unwrap().as_microsecond()
    }

    fn day(date: &str) -> i64 {
        let date: Date = date.parse().unwrap();
        i64::from(
            date.since(Date::new(1970, 1, 1).unwrap())
                .unwrap()
                .get_days(),
        )
    }

    #[test]
    fn an_evening_in_pago_pago_is_the_day_before_in_utc() {
        let pago_pago = LocalDays::named("Pacific/Pago_Pago").unwrap();
        let at = micros("2026-11-26T06:32:00Z");
        assert_eq!(pago_pago.day_of(at), day("2026-11-25"));
        assert_eq!(LocalDays::offset_minutes(0).day_of(at), day("2026-11-26"));
    }

    #[test]
    fn unknown_and_overlong_names_are_none() {
        assert!(LocalDays::named("Mars/Olympus_Mons").is_none());
        assert!(LocalDays::named("").is_none());
        assert!(LocalDays::named(&"A".repeat(100)).is_none());
        assert!(LocalDays::named(" Europe/Berlin ").is_some());
        assert!(LocalDays::named("UTC").is_some());
    }

    #[test]
    fn days_start_at_local_midnight_across_a_clock_change() {
        let berlin = LocalDays::named("Europe/Berlin").unwrap();
        // Clocks go back on 2026-10-25: that day is 25 hours long.
        let before = berlin.start_of(day("2026-10-25"));
        let after = berlin.start_of(day("2026-10-26"));
        assert_eq!(before, micros("2026-10-24T22:00:00Z"));
        assert_eq!(after, micros("2026-10-25T23:00:00Z"));
        assert_eq!(after - before, 25 * 3_600_000_000);
        assert_eq!(berlin.day_of(after - 1), day("2026-10-25"));
        assert_eq!(berlin.day_of(after), day("2026-10-26"));
    }

    #[test]
    fn the_sql_cuts_a_range_where_the_offset_changes() {
        let berlin = LocalDays::named("Europe/Berlin").unwrap();
        let from = micros("2026-10-01T00:00:00Z");
        let to = micros("2026-11-01T00:00:00Z");
        let change = micros("2026-10-25T01:00:00Z");
        assert_eq!(
            berlin.day_sql("e.created_at", from, to),
            format!(
                "CAST((e.created_at + CASE WHEN e.created_at < {change} THEN 7200000000 \
                 ELSE 3600000000 END) / 86400000000 AS BIGINT)"
            )
        );
        let fixed = LocalDays::offset_minutes(-90);
        assert_eq!(
            fixed.day_sql("f.created_at", from, to),
            "CAST((f.created_at + -5400000000) / 86400000000 AS BIGINT)"
        );
    }
}
