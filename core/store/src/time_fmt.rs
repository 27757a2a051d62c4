//! Timestamps: stored as integer microseconds since the Unix epoch (portable
//! across SQLite and PostgreSQL and cheap to compare), shown as RFC 3339 UTC.

use time::OffsetDateTime;

pub fn now_micros() -> i64 {
    to_micros(OffsetDateTime::now_utc())
}

pub fn to_micros(t: OffsetDateTime) -> i64 {
    (t.unix_timestamp_nanos() / 1_000) as i64
}

pub fn from_micros(micros: i64) -> OffsetDateTime {
    OffsetDateTime::from_unix_timestamp_nanos(micros as i128 * 1_000).unwrap_or(OffsetDateTime::UNIX_EPOCH)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn micros_round_trip_keeps_microseconds() {
        let t = time::macros::datetime!(2026-11-23 07:41:00.123456 UTC);
        assert_eq!(from_micros(to_micros(t)), t);
    }
}
