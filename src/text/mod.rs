//! Text in GNU's formats, with no I/O: sizes and their units (`units`), names quoted for
//! messages (`quote`), `--time-style` formats (`timefmt`), `--exclude` glob patterns
//! (`exclude`) and local time as glibc computes it from `TZ` and zone files (`tz`). The
//! lowest layer above `meta`: it imports nothing but `meta`.

pub mod exclude;
pub mod quote;
pub mod timefmt;
// Only Linux's platform backend computes local time here; macOS and Windows ask their libc.
#[cfg_attr(not(target_os = "linux"), allow(dead_code))]
pub mod tz;
pub mod units;
