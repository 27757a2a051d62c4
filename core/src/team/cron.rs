//! Schedule times (spec 2.6): five-field cron in UTC, or one of the
//! `@yearly`-style names; `@reboot` names no time and is refused. Evaluated
//! with `croner` on a small UTC type of our own, so the server carries no
//! second date library.

use std::cmp::Ordering;

use croner::Cron;
use croner::errors::CronError;
use croner::parser::{CronParser, Seconds, Year};
use croner::time::{CivilDate, CivilDateTime, CivilTime, CronDateTime, Resolution, Weekday};
use time::{Date, Month, OffsetDateTime, PrimitiveDateTime, Time};

/// The names accepted besides five fields.
const NAMES: [&str; 7] = ["@yearly", "@annually", "@monthly", "@weekly", "@daily", "@midnight", "@hourly"];

/// A parsed schedule expression.
#[derive(Debug, Clone)]
pub struct Schedule(Cron);

/// Parses `expr`; the error is the sentence for `errors.cron`.
pub fn parse(expr: &str) -> Result<Schedule, String> {
    let expr = expr.trim();
    if expr.starts_with('@') {
        let name = expr.to_ascii_lowercase();
        if name == "@reboot" {
            return Err("`@reboot` is not supported: a schedule needs a time".into());
        }
        if !NAMES.contains(&name.as_str()) {
            return Err(format!("unknown name `{expr}`; use five fields or one of {}", NAMES.join(", ")));
        }
    } else if expr.split_whitespace().count() != 5 {
        return Err("should have five fields (minute hour day-of-month month day-of-week), in UTC".into());
    }
    // croner's own table lacks `@midnight`, which cron(8) spells for `@daily`.
    let expr = if expr.eq_ignore_ascii_case("@midnight") { "@daily" } else { expr };
    let parser = CronParser::builder().seconds(Seconds::Disallowed).year(Year::Disallowed).build();
    let cron = parser.parse(expr).map_err(|e| format!("is not a valid cron expression: {e}"))?;
    let schedule = Schedule(cron);
    // A pattern that never matches (say `0 0 30 2 *`) has no next run to show.
    if schedule.next_after(0).is_none() {
        return Err("never matches a date".into());
    }
    Ok(schedule)
}

impl Schedule {
    /// The first matching minute strictly after `micros` (microseconds since
    /// the epoch), in microseconds; `None` when there is none.
    pub fn next_after(&self, micros: i64) -> Option<i64> {
        let at = OffsetDateTime::from_unix_timestamp_nanos(i128::from(micros) * 1000).ok()?;
        let utc = Utc(PrimitiveDateTime::new(at.date(), at.time()));
        let next = self.0.find_next_occurrence(&utc, false).ok()?;
        let nanos = next.0.assume_utc().unix_timestamp_nanos();
        i64::try_from(nanos / 1000).ok()
    }
}

/// A UTC wall clock time, whole seconds, for croner's search.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
struct Utc(PrimitiveDateTime);

impl CronDateTime for Utc {
    fn to_civil(&self) -> CivilDateTime {
        let (d, t) = (self.0.date(), self.0.time());
        CivilDateTime::new(
            CivilDate::from_parts_unchecked(d.year(), u8::from(d.month()).into(), d.day().into()),
            CivilTime::from_parts_unchecked(t.hour().into(), t.minute().into(), t.second().into()),
        )
    }

    fn civil_weekday(&self) -> Weekday {
        Weekday::from_days_from_sunday(self.0.weekday().number_days_from_sunday().into())
    }

    fn resolve_civil(&self, civil: CivilDateTime) -> Result<Resolution<Self>, CronError> {
        let month =
            u8::try_from(civil.month()).ok().and_then(|m| Month::try_from(m).ok()).ok_or(CronError::InvalidDate)?;
        let day = u8::try_from(civil.day()).map_err(|_| CronError::InvalidDate)?;
        let date = Date::from_calendar_date(civil.year(), month, day).map_err(|_| CronError::InvalidDate)?;
        let part = |v: u32| u8::try_from(v).map_err(|_| CronError::InvalidTime);
        let time = Time::from_hms(part(civil.hour())?, part(civil.minute())?, part(civil.second())?)
            .map_err(|_| CronError::InvalidTime)?;
        Ok(Resolution::Single(Utc(PrimitiveDateTime::new(date, time))))
    }

    fn checked_add_seconds(&self, seconds: i64) -> Option<Self> {
        self.0.checked_add(time::Duration::seconds(seconds)).map(Utc)
    }

    fn cmp_instant(&self, other: &Self) -> Ordering {
        self.cmp(other)
    }
}

#[cfg(test)]
mod tests {
    use time::macros::datetime;

    use super::*;

    fn micros(t: OffsetDateTime) -> i64 {
        (t.unix_timestamp_nanos() / 1000) as i64
    }

    fn next(expr: &str, after: OffsetDateTime) -> OffsetDateTime {
        let n = parse(expr).unwrap().next_after(micros(after)).unwrap();
        OffsetDateTime::from_unix_timestamp_nanos(i128::from(n) * 1000).unwrap()
    }

    #[test]
    fn five_fields_run_in_utc_strictly_after_the_given_time() {
        let at = datetime!(2026-03-14 09:26:53.5 UTC);
        assert_eq!(next("* * * * *", at), datetime!(2026-03-14 09:27 UTC));
        assert_eq!(next("*/15 * * * *", at), datetime!(2026-03-14 09:30 UTC));
        assert_eq!(next("0 9 * * 1-5", at), datetime!(2026-03-16 09:00 UTC)); // Saturday -> Monday
        assert_eq!(next("30 4 1 * *", at), datetime!(2026-04-01 04:30 UTC));
        // Exactly on a matching minute: the next one, never the same.
        assert_eq!(next("* * * * *", datetime!(2026-03-14 09:27 UTC)), datetime!(2026-03-14 09:28 UTC));
        assert_eq!(next("0 0 29 2 *", at), datetime!(2028-02-29 00:00 UTC));
        // Day of month or day of week, as cron(8) reads both.
        assert_eq!(next("0 0 13 * 5", at), datetime!(2026-03-20 00:00 UTC));
    }

    #[test]
    fn names_stand_for_their_five_fields() {
        let at = datetime!(2026-03-14 09:26:53 UTC);
        for (name, want) in [
            ("@yearly", datetime!(2027-01-01 00:00 UTC)),
            ("@annually", datetime!(2027-01-01 00:00 UTC)),
            ("@monthly", datetime!(2026-04-01 00:00 UTC)),
            ("@weekly", datetime!(2026-03-15 00:00 UTC)),
            ("@daily", datetime!(2026-03-15 00:00 UTC)),
            ("@midnight", datetime!(2026-03-15 00:00 UTC)),
            ("@hourly", datetime!(2026-03-14 10:00 UTC)),
            ("@DAILY", datetime!(2026-03-15 00:00 UTC)),
        ] {
            assert_eq!(next(name, at), want, "{name}");
        }
    }

    #[test]
    fn reboot_seconds_years_and_nonsense_are_refused() {
        assert!(parse("@reboot").unwrap_err().contains("@reboot"));
        for bad in [
            "",
            "@often",
            "* * * *",
            "0 * * * * *",
            "0 0 * * * * 2030",
            "61 * * * *",
            "* 24 * * *",
            "* * 0 * *",
            "* * * 13 *",
            "* * * * 8",
            "x * * * *",
            "0 0 30 2 *",
        ] {
            assert!(parse(bad).is_err(), "{bad:?} was accepted");
        }
    }
}
