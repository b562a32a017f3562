//! Local time on Windows: the system's zone rules for each date
//! (`SystemTimeToTzSpecificLocalTime`) and its names for the zone.

use super::ffi::*;
use crate::meta::LocalTime;
use std::ptr::null;

/// Nothing to do: Windows reads its zone settings on every conversion.
pub fn reload_zone() {}

/// Local time by the system's time zone rules for that date (daylight saving included).
pub fn local_time(sec: i64) -> Option<LocalTime> {
    let utc_ticks = sec.checked_add(SECS_1601_TO_1970)?.checked_mul(10_000_000)?;
    let utc_ticks = u64::try_from(utc_ticks).ok()?;
    let mut utc = SystemTime::default();
    let mut local = SystemTime::default();
    let mut local_ticks = 0u64;
    // SAFETY: each call reads and writes only the locals passed by pointer, all live and
    // properly aligned; a null zone means "the current system time zone".
    let ok = unsafe {
        FileTimeToSystemTime(&utc_ticks, &mut utc) != 0
            && SystemTimeToTzSpecificLocalTime(null(), &utc, &mut local) != 0
            && SystemTimeToFileTime(&local, &mut local_ticks) != 0
    };
    if !ok {
        return None;
    }
    let gmtoff = (local_ticks as i64 - utc_ticks as i64) / 10_000_000;
    let mut out = crate::platform::fallback::local_time(sec.checked_add(gmtoff)?)?;
    out.gmtoff = gmtoff;
    out.zone = zone_name(gmtoff).into_bytes();
    Some(out)
}

/// The system's name for the standard or daylight zone, whichever has this offset.
pub(super) fn zone_name(gmtoff: i64) -> String {
    // SAFETY: TIME_ZONE_INFORMATION is plain integers; all zeroes is a valid value.
    let mut tz: TimeZoneInformation = unsafe { std::mem::zeroed() };
    // SAFETY: writes only into `tz`, which is live and of the declared type.
    if unsafe { GetTimeZoneInformation(&mut tz) } == u32::MAX {
        return String::new();
    }
    let daylight = -i64::from(tz.bias_minutes + tz.daylight_bias_minutes) * 60;
    let name = if tz.daylight_date.month != 0 && tz.daylight_bias_minutes != 0 && gmtoff == daylight {
        &tz.daylight_name
    } else {
        &tz.standard_name
    };
    let end = name.iter().position(|&u| u == 0).unwrap_or(name.len());
    String::from_utf16_lossy(&name[..end])
}
