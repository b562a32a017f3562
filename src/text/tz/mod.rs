//! Local time as glibc 2.36 computes it, in plain Rust with no I/O, so that every Linux
//! build of dfdu (glibc or static musl, whose own zone code differs) prints the times GNU
//! du prints. The caller hands in `TZ`, `TZDIR` and a way to read a file
//! (`platform/linux/time.rs`); `Zone::resolve` decides what glibc's `tzset` would load:
//!
//! * `TZ` unset: the file `/etc/localtime`; `TZ` empty: the zone `Universal`. A leading
//!   `:` is dropped and changes nothing else.
//! * The value names a file first: an absolute path as it is, anything else under `TZDIR`
//!   (when set and not empty) or `/usr/share/zoneinfo`. So `EST5EDT` is the zone file of
//!   that name where tzdata ships one, not the POSIX string.
//! * No such file (or one glibc refuses): `UTC` when nothing is left after the `:` or
//!   the value is `/etc/localtime`, else the value read as a POSIX string (`posix.rs`). A string with
//!   daylight names but no rules takes its switch times from the `posixrules` zone file,
//!   moved to its offsets; past that file's last transition its footer applies, with that
//!   file's own offsets and names (as glibc 2.36 does).
//!
//! How often the zone was loaded matters for such a `posixrules` zone: glibc moves its
//! switches out of daylight time by the string's whole daylight offset on the first load
//! in a process (it no longer reads the file's daylight offset, and its variable starts at
//! 0), and not at all on a later load (the variable then holds the string's own). GNU du
//! loads once, and again each time `%s` runs `mktime`: `resolve`'s `again` gives the zone
//! of a later load, which the platform switches to when du says `%s` ran.
//!
//! Not followed: what glibc does where it reads memory it does not own (a rule's month
//! outside 1-12, a type named by the index just past the names, a zone file's footer with
//! daylight names but no rules, which makes glibc load `posixrules` mid-conversion).
//!
//! `tzif.rs` reads zone files; `tests.rs` holds the unit tests.

mod posix;
mod tzif;

#[cfg(test)]
mod tests;

use crate::meta::LocalTime;
use posix::Rules;
use tzif::TzFile;

/// Where glibc looks for zone files named by a relative path.
const DEFAULT_TZDIR: &[u8] = b"/usr/share/zoneinfo";

/// A zone file's bytes (at most what its size says) and its size (`st_size`: 0 for a
/// device or pipe), as the platform read them.
pub struct ZoneFile {
    pub bytes: Vec<u8>,
    pub size_bytes: u64,
}

/// The local time zone, as `tzset` would have set it up.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Zone {
    /// A POSIX string, or UTC when nothing was found.
    Rules(Rules),
    /// A zone file.
    File(TzFile),
}

impl Zone {
    /// The zone glibc would use for `tz` (the value of `TZ`, `None` when unset) and
    /// `tzdir` (`TZDIR`); `read` loads a file by path, `None` when it cannot. `again`:
    /// as a later `tzset` in the same process loads it (see the module doc).
    pub fn resolve(
        tz: Option<&[u8]>,
        tzdir: Option<&[u8]>,
        again: bool,
        read: &mut dyn FnMut(&[u8]) -> Option<ZoneFile>,
    ) -> Zone {
        let spec: &[u8] = match tz {
            None => b"/etc/localtime",
            Some(b"") => b"Universal",
            Some(value) => value.strip_prefix(b":").unwrap_or(value),
        };
        let mut load = |name: &[u8]| -> Option<TzFile> {
            if name.is_empty() {
                return None;
            }
            let path = if name.starts_with(b"/") {
                name.to_vec()
            } else {
                let dir = tzdir.filter(|d| !d.is_empty()).unwrap_or(DEFAULT_TZDIR);
                [dir, b"/", name].concat()
            };
            let file = read(&path)?;
            TzFile::parse(&file.bytes, file.size_bytes)
        };
        if let Some(file) = load(spec) {
            return Zone::File(file);
        }
        if spec.is_empty() || spec == b"/etc/localtime" {
            return Zone::Rules(Rules::utc());
        }
        let parsed = Rules::parse(spec);
        if parsed.ruleless {
            let [std, dst] = parsed.rules.names_and_offsets();
            if let Some(file) = load(b"posixrules").and_then(|f| f.with_names(std, dst, again)) {
                return Zone::File(file);
            }
        }
        Zone::Rules(parsed.rules)
    }

    /// `sec` (seconds since the epoch) in this zone, as `localtime_r` gives it; `None`
    /// when its year does not fit C's `tm_year`.
    pub fn local_time(&self, sec: i64) -> Option<LocalTime> {
        let (offset, leap_correction_secs, leap_hit_secs) = match self {
            Zone::Rules(rules) => (rules.offset_at(sec)?, 0, 0),
            Zone::File(file) => {
                let at = file.offset_at(sec);
                (at.offset, at.leap_correction_secs, at.leap_hit_secs)
            }
        };
        let mut lt = civil(sec, i64::from(offset.offset_secs) - leap_correction_secs)?;
        lt.second += leap_hit_secs;
        lt.gmtoff = i64::from(offset.offset_secs);
        lt.zone = offset.name.to_vec();
        Some(lt)
    }
}

/// `sec + offset_secs` broken down into a proleptic Gregorian date and time (glibc's
/// `__offtime`), with no zone; `None` when the year minus 1900 does not fit an `i32`.
pub fn civil(sec: i64, offset_secs: i64) -> Option<LocalTime> {
    const DAY: i64 = 86_400;
    let secs_of_day = sec.rem_euclid(DAY) + offset_secs;
    let days = sec.div_euclid(DAY) + secs_of_day.div_euclid(DAY);
    let secs_of_day = secs_of_day.rem_euclid(DAY);
    let (year, month, day) = civil_from_days(days);
    i32::try_from(year - 1900).ok()?;
    Some(LocalTime {
        year,
        month,
        day,
        hour: (secs_of_day / 3600) as u32,
        minute: (secs_of_day / 60 % 60) as u32,
        second: (secs_of_day % 60) as u32,
        weekday: (days + 4).rem_euclid(7) as u32,
        yearday: (days - days_from_civil(year, 1, 1)) as u32,
        gmtoff: 0,
        zone: Vec::new(),
    })
}

/// Days since 1970-01-01 to (year, month, day), by eras of 400 years (146,097 days) that
/// start on March 1, so the leap day falls last in each era year.
pub fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let day_of_era = z.rem_euclid(146_097);
    let year_of_era = (day_of_era - day_of_era / 1460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    let month_from_march = (5 * day_of_year + 2) / 153;
    let day = (day_of_year - (153 * month_from_march + 2) / 5 + 1) as u32;
    let month = if month_from_march < 10 { month_from_march + 3 } else { month_from_march - 9 } as u32;
    (year_of_era + era * 400 + i64::from(month <= 2), month, day)
}

/// (year, month, day) to days since 1970-01-01: the inverse of `civil_from_days`.
fn days_from_civil(year: i64, month: u32, day: u32) -> i64 {
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let year_of_era = y.rem_euclid(400);
    let m = i64::from(month);
    let day_of_year = (153 * (if m > 2 { m - 3 } else { m + 9 }) + 2) / 5 + i64::from(day) - 1;
    let day_of_era = year_of_era * 365 + year_of_era / 4 - year_of_era / 100 + day_of_year;
    era * 146_097 + day_of_era - 719_468
}
