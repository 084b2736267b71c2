//! Calendar windows (the `calendar` word of a rule): a fixed window that starts and ends on the civil
//! calendar's boundaries (hour, day, ISO week, month, year) in UTC or at a fixed offset from it, so a
//! month is as long as that month. Mirrored by `calendar_window` in `lua/limit.lua`.

use std::fmt;

use crate::error::{Error, Result};

const HOUR_US: u64 = 3_600_000_000;
const DAY_US: u64 = 24 * HOUR_US;
/// The widest offset from UTC accepted, in minutes (just under a day either way).
pub const MAX_OFFSET_MINUTES: i32 = 24 * 60 - 1;

/// The calendar unit a window lasts: one hour, day, ISO week (Monday to Sunday), month or year.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CalendarUnit {
    /// A clock hour.
    Hour,
    /// A day, from midnight to midnight.
    Day,
    /// An ISO week, from Monday's midnight to the next Monday's.
    Week,
    /// A month, from its first day's midnight to the next month's.
    Month,
    /// A year, from January 1st's midnight to the next year's.
    Year,
}

impl CalendarUnit {
    /// The word of the rule text (`"500/day calendar"`).
    pub fn name(self) -> &'static str {
        match self {
            CalendarUnit::Hour => "hour",
            CalendarUnit::Day => "day",
            CalendarUnit::Week => "week",
            CalendarUnit::Month => "month",
            CalendarUnit::Year => "year",
        }
    }

    /// The code passed to `limit.lua` and the server module in place of the algorithm's (see
    /// `limit.lua`'s header): `ch`, `cd`, `cw`, `cm` or `cy`.
    pub fn code(self) -> &'static str {
        match self {
            CalendarUnit::Hour => "ch",
            CalendarUnit::Day => "cd",
            CalendarUnit::Week => "cw",
            CalendarUnit::Month => "cm",
            CalendarUnit::Year => "cy",
        }
    }

    /// The unit of a wire code ([`CalendarUnit::code`]).
    pub fn from_code(code: &[u8]) -> Option<Self> {
        [Self::Hour, Self::Day, Self::Week, Self::Month, Self::Year]
            .into_iter()
            .find(|unit| unit.code().as_bytes() == code)
    }

    /// The longest this unit lasts (31 days for a month, 366 for a year): the rule's nominal period.
    pub fn longest_us(self) -> u64 {
        match self {
            CalendarUnit::Hour => HOUR_US,
            CalendarUnit::Day => DAY_US,
            CalendarUnit::Week => 7 * DAY_US,
            CalendarUnit::Month => 31 * DAY_US,
            CalendarUnit::Year => 366 * DAY_US,
        }
    }
}

/// Where a calendar window lies: its unit, and the fixed offset from UTC its boundaries are taken at.
///
/// ```
/// use ratelock::{Calendar, CalendarUnit};
///
/// // 2026-01-31T23:00:00Z, in the month of January (UTC) but February at +02:00.
/// let now = 1_769_900_400_000_000;
/// let (_, ends) = Calendar::new(CalendarUnit::Month).window(now);
/// assert_eq!(ends, 1_769_904_000_000_000, "2026-02-01T00:00:00Z");
/// let (_, ends) = Calendar::new(CalendarUnit::Month).at_offset(120)?.window(now);
/// assert_eq!(ends, 1_772_316_000_000_000, "2026-03-01T00:00:00+02:00, February's 28 days later");
/// # Ok::<(), ratelock::Error>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Calendar {
    unit: CalendarUnit,
    offset_minutes: i32,
}

impl Calendar {
    /// Windows of `unit` in UTC.
    pub fn new(unit: CalendarUnit) -> Self {
        Calendar {
            unit,
            offset_minutes: 0,
        }
    }

    /// The same windows at `minutes` east of UTC (`-330` is -05:30), at most 23:59 either way.
    pub fn at_offset(self, minutes: i32) -> Result<Self> {
        if minutes.abs() > MAX_OFFSET_MINUTES {
            return Err(Error::invalid_rule(
                &self.to_string(),
                &format_offset(minutes),
                "the offset from UTC must be within ±23:59",
            ));
        }
        Ok(Calendar {
            unit: self.unit,
            offset_minutes: minutes,
        })
    }

    /// The unit.
    pub fn unit(self) -> CalendarUnit {
        self.unit
    }

    /// Minutes east of UTC.
    pub fn offset_minutes(self) -> i32 {
        self.offset_minutes
    }

    /// The window `now_us` (µs since the Unix epoch) falls in: its index (distinct for each window of
    /// the unit) and the µs since the epoch it ends at. An instant before the epoch at the offset is
    /// taken as the epoch itself.
    pub fn window(self, now_us: u64) -> (u64, u64) {
        let offset = i64::from(self.offset_minutes) * 60_000_000;
        let local = (now_us as i64).saturating_add(offset).max(0) as u64;
        let day = local / DAY_US;
        let (index, ends_local) = match self.unit {
            CalendarUnit::Hour => {
                let hour = local / HOUR_US;
                (hour, (hour + 1) * HOUR_US)
            }
            CalendarUnit::Day => (day, (day + 1) * DAY_US),
            // 1970-01-01 was a Thursday: day + 3 counts from the Monday before it.
            CalendarUnit::Week => {
                let week = (day + 3) / 7;
                (week, ((week + 1) * 7 - 3) * DAY_US)
            }
            CalendarUnit::Month => {
                let (year, month, _) = civil_from_days(day);
                let (next_year, next_month) = if month == 12 {
                    (year + 1, 1)
                } else {
                    (year, month + 1)
                };
                (
                    year * 12 + month - 1,
                    days_from_civil(next_year, next_month, 1) * DAY_US,
                )
            }
            CalendarUnit::Year => {
                let (year, _, _) = civil_from_days(day);
                (year, days_from_civil(year + 1, 1, 1) * DAY_US)
            }
        };
        (index, (ends_local as i64 - offset) as u64)
    }

    /// The rule-text words after the period: `calendar`, then ` at ±HH:MM` unless in UTC.
    pub(crate) fn words(self) -> String {
        match self.offset_minutes {
            0 => "calendar".to_owned(),
            minutes => format!("calendar at {}", format_offset(minutes)),
        }
    }

    /// The end of a rule's storage id: the unit, then the offset in minutes unless in UTC (`month`,
    /// `day+120`, `day-330`).
    pub(crate) fn id_part(self) -> String {
        match self.offset_minutes {
            0 => self.unit.name().to_owned(),
            minutes => format!("{}{minutes:+}", self.unit.name()),
        }
    }
}

impl fmt::Display for Calendar {
    /// `month calendar at +02:00`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {}", self.unit.name(), self.words())
    }
}

/// `±HH:MM`.
pub(crate) fn format_offset(minutes: i32) -> String {
    let sign = if minutes < 0 { '-' } else { '+' };
    let minutes = minutes.unsigned_abs();
    format!("{sign}{:02}:{:02}", minutes / 60, minutes % 60)
}

/// (year, month 1-12, day 1-31) of a count of days since 1970-01-01 (Howard Hinnant's civil calendar
/// algorithm, for days on or after the epoch).
fn civil_from_days(days: u64) -> (u64, u64, u64) {
    let z = days + 719_468;
    let era = z / 146_097;
    let day_of_era = z - era * 146_097;
    let year_of_era = (day_of_era - day_of_era / 1460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    let shifted_month = (5 * day_of_year + 2) / 153;
    let day = day_of_year - (153 * shifted_month + 2) / 5 + 1;
    let month = if shifted_month < 10 {
        shifted_month + 3
    } else {
        shifted_month - 9
    };
    let year = year_of_era + era * 400 + u64::from(month <= 2);
    (year, month, day)
}

/// Days since 1970-01-01 of a civil date on or after it (the inverse of [`civil_from_days`]).
fn days_from_civil(year: u64, month: u64, day: u64) -> u64 {
    let year = year - u64::from(month <= 2);
    let era = year / 400;
    let year_of_era = year - era * 400;
    let shifted_month = if month > 2 { month - 3 } else { month + 9 };
    let day_of_year = (153 * shifted_month + 2) / 5 + day - 1;
    let day_of_era = year_of_era * 365 + year_of_era / 4 - year_of_era / 100 + day_of_year;
    era * 146_097 + day_of_era - 719_468
}

#[cfg(test)]
mod tests {
    use super::*;

    /// µs since the epoch of a UTC date and time.
    fn at(year: u64, month: u64, day: u64, hour: u64, minute: u64) -> u64 {
        days_from_civil(year, month, day) * DAY_US + hour * HOUR_US + minute * 60_000_000
    }

    #[test]
    fn civil_days_round_trip_across_four_centuries() {
        let mut expected = (1970, 1, 1);
        for days in 0..146_097 * 2 {
            assert_eq!(civil_from_days(days), expected, "day {days}");
            assert_eq!(days_from_civil(expected.0, expected.1, expected.2), days);
            let (y, m, d) = expected;
            let leap = y % 4 == 0 && (y % 100 != 0 || y % 400 == 0);
            let length = match m {
                2 if leap => 29,
                2 => 28,
                4 | 6 | 9 | 11 => 30,
                _ => 31,
            };
            expected = if d < length {
                (y, m, d + 1)
            } else if m < 12 {
                (y, m + 1, 1)
            } else {
                (y + 1, 1, 1)
            };
        }
    }

    #[test]
    fn months_have_their_real_lengths() {
        let month = Calendar::new(CalendarUnit::Month);
        assert_eq!(month.window(at(2026, 2, 10, 12, 0)).1, at(2026, 3, 1, 0, 0));
        assert_eq!(month.window(at(2028, 2, 29, 23, 59)).1, at(2028, 3, 1, 0, 0));
        assert_eq!(month.window(at(2026, 12, 31, 23, 59)).1, at(2027, 1, 1, 0, 0));
        let (january, _) = month.window(at(2026, 1, 31, 23, 59));
        let (february, _) = month.window(at(2026, 2, 1, 0, 0));
        assert_eq!(february, january + 1);
        assert_eq!(january, 2026 * 12);
    }

    #[test]
    fn weeks_start_on_monday_and_days_at_the_offsets_midnight() {
        // 2026-11-26 is a Thursday: its week ends on Monday 2026-11-30.
        let week = Calendar::new(CalendarUnit::Week);
        assert_eq!(week.window(at(2026, 11, 26, 9, 0)).1, at(2026, 11, 30, 0, 0));
        assert_eq!(week.window(at(2026, 11, 30, 0, 0)).1, at(2026, 12, 7, 0, 0));
        assert_eq!(week.window(at(1970, 1, 1, 0, 0)).1, at(1970, 1, 5, 0, 0));
        let berlin = Calendar::new(CalendarUnit::Day).at_offset(120).unwrap();
        // 22:30 UTC is already tomorrow at +02:00.
        assert_eq!(berlin.window(at(2026, 11, 26, 22, 30)).1, at(2026, 11, 27, 22, 0));
        assert_eq!(berlin.window(at(2026, 11, 26, 21, 59)).1, at(2026, 11, 26, 22, 0));
        let india = Calendar::new(CalendarUnit::Hour).at_offset(330).unwrap();
        assert_eq!(india.window(at(2026, 11, 26, 9, 10)).1, at(2026, 11, 26, 9, 30));
        let new_york = Calendar::new(CalendarUnit::Year).at_offset(-300).unwrap();
        assert_eq!(new_york.window(at(2027, 1, 1, 3, 0)).1, at(2027, 1, 1, 5, 0));
    }

    #[test]
    fn an_instant_before_the_epoch_at_the_offset_is_the_epoch() {
        let west = Calendar::new(CalendarUnit::Day).at_offset(-60).unwrap();
        assert_eq!(west.window(0), (0, DAY_US + HOUR_US));
    }

    #[test]
    fn offsets_beyond_a_day_are_refused() {
        let day = Calendar::new(CalendarUnit::Day);
        assert!(day.at_offset(1439).is_ok() && day.at_offset(-1439).is_ok());
        let err = day.at_offset(1440).unwrap_err();
        assert!(err.to_string().contains("+24:00"), "{err}");
        assert_eq!(format_offset(-330), "-05:30");
    }
}
