//! Local time through the C library (`tzset` + `localtime_r`), shared by the Unix
//! platform files, so `--time` honours `TZ` and `/etc/localtime` exactly as GNU du does.

use crate::meta::LocalTime;
use std::ffi::{c_char, c_int, c_long, CStr};
use std::mem::MaybeUninit;

/// Mirror of C's `struct tm` as glibc, musl and macOS's libc lay it out (the BSD
/// fields `tm_gmtoff` and `tm_zone` last).
#[repr(C)]
struct Tm {
    tm_sec: c_int,
    tm_min: c_int,
    tm_hour: c_int,
    tm_mday: c_int,
    tm_mon: c_int,
    tm_year: c_int,
    tm_wday: c_int,
    tm_yday: c_int,
    tm_isdst: c_int,
    tm_gmtoff: c_long,
    tm_zone: *const c_char,
}

extern "C" {
    fn localtime_r(t: *const i64, out: *mut Tm) -> *mut Tm;
    fn tzset();
}

/// Converts seconds since the epoch to local time the way the C library does (honouring
/// `TZ` and `/etc/localtime`). `None` when the time is out of the C library's range.
pub fn local_time(sec: i64) -> Option<LocalTime> {
    let mut tm = MaybeUninit::<Tm>::zeroed();
    // SAFETY: tzset takes no arguments and only reads the environment and zone files;
    // localtime_r reads `sec` and writes into `tm`, which is properly sized and aligned;
    // both pointers are valid for the duration of the call.
    let ok = unsafe {
        tzset();
        !localtime_r(&sec, tm.as_mut_ptr()).is_null()
    };
    if !ok {
        return None;
    }
    // SAFETY: localtime_r returned non-null, so it initialised every field of `tm`.
    let tm = unsafe { tm.assume_init() };
    let zone = if tm.tm_zone.is_null() {
        Vec::new()
    } else {
        // SAFETY: tm_zone, when non-null, points at a NUL-terminated string owned by the C
        // library that stays valid until the next tzset; it is copied out at once.
        unsafe { CStr::from_ptr(tm.tm_zone) }.to_bytes().to_vec()
    };
    Some(LocalTime {
        year: i64::from(tm.tm_year) + 1900,
        month: tm.tm_mon as u32 + 1,
        day: tm.tm_mday as u32,
        hour: tm.tm_hour as u32,
        minute: tm.tm_min as u32,
        second: tm.tm_sec as u32,
        weekday: tm.tm_wday as u32,
        yearday: tm.tm_yday as u32,
        gmtoff: tm.tm_gmtoff,
        zone,
    })
}

/// Nothing to do: `local_time` runs `tzset` before every conversion, as GNU du's `mktime`
/// (for `%s`) would.
pub fn reload_zone() {}
