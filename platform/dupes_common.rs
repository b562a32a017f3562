//! What `dupes_linux.rs` and `dupes_std.rs` have in common: the types of the `dupes`
//! contract (`FileCheck`, `Extent`, `Layout`, `DedupeStatus`, `MAX_DEDUPE_DESTS`) and the
//! hash file's lock, which is `flock` on every Unix. One definition, so that the Linux and
//! the std backends cannot drift apart; each backend fills these types its own way.

use crate::meta::{Errno, Kind};
use std::fs::File;

/// What dupes re-checks about a file before trusting what it read or deduplicates.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FileCheck {
    pub kind: Kind,
    /// 0 where the OS's `std` metadata carries no file identity (Windows).
    pub dev: u64,
    pub ino: u64,
    pub size: u64,
    pub mtime_ns: i64,
    pub ctime_ns: i64,
    /// Immutable or append-only: the kernel refuses to change its extents (Linux only).
    pub pinned: bool,
}

/// One extent of a file as FIEMAP reports it (bytes); only Linux produces them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Extent {
    pub logical: u64,
    pub physical: u64,
    pub length: u64,
    pub shared: bool,
}

/// Where a file's data is, as far as sharing goes.
#[cfg_attr(not(target_os = "linux"), allow(dead_code))] // the std backend says Unknown
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Layout {
    /// Its extents (not empty).
    Extents(Vec<Extent>),
    /// Stored inline in metadata (btrfs small files) or as a tail: cannot be shared.
    Inline,
    /// FIEMAP unsupported, no extents, unknown or delayed extents, or too many of them.
    Unknown,
}

/// What the kernel said about one destination of a `FIDEDUPERANGE` call.
#[cfg_attr(not(target_os = "linux"), allow(dead_code))] // built on Linux only
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DedupeStatus {
    /// The ranges were equal; this many bytes now share extents.
    Same(u64),
    /// The kernel compared and found different bytes: nothing was changed.
    Differs,
    Error(Errno),
}

/// Destinations per `FIDEDUPERANGE` call: the argument must fit in one 4 KiB page.
pub const MAX_DEDUPE_DESTS: usize = 120;

/// An exclusive lock on `file`: `flock` on Unix, `Ok(false)` when `wait` is false and
/// another process holds it. Elsewhere the hash file is opened without sharing instead
/// (see `cache.rs`), so this always succeeds.
pub fn lock_file(file: &File, wait: bool) -> Result<bool, Errno> {
    #[cfg(unix)]
    {
        use rustix::fs::FlockOperation;
        let op = if wait { FlockOperation::LockExclusive } else { FlockOperation::NonBlockingLockExclusive };
        match rustix::fs::flock(file, op) {
            Ok(()) => Ok(true),
            Err(rustix::io::Errno::WOULDBLOCK) if !wait => Ok(false),
            Err(e) => Err(Errno(e.raw_os_error())),
        }
    }
    #[cfg(not(unix))]
    {
        let _ = (file, wait);
        Ok(true)
    }
}
