//! Local time without the C library's zone code: UTC. Also what the Windows backend
//! builds its local time on (the calendar arithmetic, after it adds the zone's offset).

use crate::meta::LocalTime;

/// Nothing to do: times here are UTC, which no reload changes.
pub fn reload_zone() {}

/// Without the C library's time zone code, times are shown in UTC.
pub fn local_time(sec: i64) -> Option<LocalTime> {
    let days = sec.div_euclid(86_400);
    let secs = sec.rem_euclid(86_400);
    let (year, month, day) = civil_from_days(days);
    let jan1 = days_from_civil(year, 1, 1);
    Some(LocalTime {
        year,
        month,
        day,
        hour: (secs / 3600) as u32,
        minute: (secs / 60 % 60) as u32,
        second: (secs % 60) as u32,
        weekday: (days + 4).rem_euclid(7) as u32,
        yearday: (days - jan1) as u32,
        gmtoff: 0,
        zone: b"UTC".to_vec(),
    })
}

/// Days since 1970-01-01 to a proleptic Gregorian date (Howard Hinnant's algorithm). A
/// copy of `text::tz`'s: `tests/wine` builds this file on its own, without the crate.
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d)
}

fn days_from_civil(y: i64, m: u32, d: u32) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y.rem_euclid(400);
    let mp = (m as i64 + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d as i64 - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}
