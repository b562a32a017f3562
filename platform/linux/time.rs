//! Local time on Linux: `TZ`, `TZDIR` and the zone files read here, once per process, and
//! handed to `text::tz`, which computes what glibc's `localtime_r` would. The same code
//! runs in glibc and static musl builds, so both print GNU du's times (musl's own zone
//! code reads rule-less strings such as `EST5EDT`, unknown names and some files
//! differently).

use crate::meta::LocalTime;
use crate::text::tz::{Zone, ZoneFile};
use std::ffi::OsStr;
use std::io::Read;
use std::os::unix::ffi::OsStrExt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::OnceLock;

/// At most this much is read from a file that is not a regular one (a device or a pipe
/// named by `TZ`), so that `TZ=/dev/zero` cannot hang; a zone file is a few kilobytes.
const NON_REGULAR_READ_BYTES: u64 = 1 << 20;

/// The zone as the first load in a process sees it, and as later loads do.
static FIRST: OnceLock<Zone> = OnceLock::new();
static AGAIN: OnceLock<Zone> = OnceLock::new();
/// Set once GNU du would have loaded the zone again (`reload_zone`).
static RELOADED: AtomicBool = AtomicBool::new(false);

/// Converts seconds since the epoch to local time as glibc does (honouring `TZ`, `TZDIR`
/// and `/etc/localtime`). `None` when the year does not fit C's `tm_year`.
pub fn local_time(sec: i64) -> Option<LocalTime> {
    if RELOADED.load(Ordering::Relaxed) {
        AGAIN.get_or_init(|| load(true)).local_time(sec)
    } else {
        FIRST.get_or_init(|| load(false)).local_time(sec)
    }
}

/// From now on, local time as after a second `tzset` (GNU du's `%s` runs `mktime`, which
/// runs it; only a rule-less `TZ` string answers differently then: `text::tz`).
pub fn reload_zone() {
    RELOADED.store(true, Ordering::Relaxed);
}

fn load(again: bool) -> Zone {
    let tz = std::env::var_os("TZ");
    let tzdir = std::env::var_os("TZDIR");
    let (tz, tzdir) = (tz.as_deref().map(OsStr::as_bytes), tzdir.as_deref().map(OsStr::as_bytes));
    Zone::resolve(tz, tzdir, again, &mut read_zone_file)
}

/// Reads a zone file as glibc's `fopen` would find it (following symlinks); `None` when
/// it cannot be opened or read.
fn read_zone_file(path: &[u8]) -> Option<ZoneFile> {
    let file = std::fs::File::open(OsStr::from_bytes(path)).ok()?;
    let meta = file.metadata().ok()?;
    let size_bytes = if meta.is_file() { meta.len() } else { 0 };
    let limit = if meta.is_file() { meta.len() } else { NON_REGULAR_READ_BYTES };
    let mut bytes = Vec::new();
    file.take(limit).read_to_end(&mut bytes).ok()?;
    Some(ZoneFile { bytes, size_bytes })
}
