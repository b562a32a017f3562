//! `dfdu dupes` on every OS but Linux, through `std::fs`: opening files for reading (on
//! Unix without following a symlink and without blocking on a FIFO), their size and times,
//! and a lock on the hash file. No extent maps and no deduplication here: macOS's and
//! Windows's clone calls do not compare bytes, so `dedupe` says it is unsupported.
//! Same names as `dupes_linux.rs`.

use crate::meta::{Errno, Kind};
use std::ffi::CStr;
use std::fs::File;

/// What dupes re-checks about a file before trusting what it read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FileCheck {
    pub kind: Kind,
    /// 0 where the OS's `std` metadata carries no file identity (Windows).
    pub dev: u64,
    pub ino: u64,
    pub size: u64,
    pub mtime_ns: i64,
    pub ctime_ns: i64,
    pub pinned: bool,
}

/// One extent of a file (never produced here).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Extent {
    pub logical: u64,
    pub physical: u64,
    pub length: u64,
    pub shared: bool,
}

/// What the kernel said about one destination of a deduplication call (never here).
#[allow(dead_code)] // built on Linux only; the contract keeps one shape everywhere
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DedupeStatus {
    Same(u64),
    Differs,
    Error(Errno),
}

pub const MAX_DEDUPE_DESTS: usize = 120;

fn io_errno(e: std::io::Error) -> Errno {
    Errno(e.raw_os_error().unwrap_or(5))
}

#[cfg(unix)]
fn path_of(path: &CStr) -> std::path::PathBuf {
    use std::os::unix::ffi::OsStrExt;
    std::path::PathBuf::from(std::ffi::OsStr::from_bytes(path.to_bytes()))
}

#[cfg(not(unix))]
fn path_of(path: &CStr) -> std::path::PathBuf {
    std::path::PathBuf::from(String::from_utf8_lossy(path.to_bytes()).into_owned())
}

/// Opens the regular file at `path` for reading.
pub fn open_file(path: &CStr) -> Result<(File, FileCheck), Errno> {
    let mut opts = std::fs::OpenOptions::new();
    opts.read(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        let flags = rustix::fs::OFlags::NOFOLLOW | rustix::fs::OFlags::NONBLOCK;
        opts.custom_flags(flags.bits() as i32);
    }
    let file = opts.open(path_of(path)).map_err(io_errno)?;
    let check = check_file(&file)?;
    Ok((file, check))
}

fn ns_of(t: std::io::Result<std::time::SystemTime>) -> i64 {
    t.ok()
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .map_or(0, |d| i64::try_from(d.as_nanos()).unwrap_or(i64::MAX))
}

/// Size, times and (on Unix) identity of an open file.
pub fn check_file(file: &File) -> Result<FileCheck, Errno> {
    let md = file.metadata().map_err(io_errno)?;
    let kind = if md.is_file() {
        Kind::File
    } else if md.is_dir() {
        Kind::Dir
    } else {
        Kind::Other
    };
    #[cfg(unix)]
    let (dev, ino, ctime_ns) = {
        use std::os::unix::fs::MetadataExt;
        (md.dev(), md.ino(), md.ctime().saturating_mul(1_000_000_000).saturating_add(md.ctime_nsec()))
    };
    #[cfg(not(unix))]
    let (dev, ino, ctime_ns) = (0, 0, ns_of(md.modified()));
    Ok(FileCheck { kind, dev, ino, size: md.len(), mtime_ns: ns_of(md.modified()), ctime_ns, pinned: false })
}

/// Where a file's data is, as far as sharing goes (never known here).
#[allow(dead_code)] // built on Linux only; the contract keeps one shape everywhere
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Layout {
    Extents(Vec<Extent>),
    Inline,
    Unknown,
}

pub fn rotational(_dev: u64) -> bool {
    false
}

pub fn physical_start(_file: &File) -> Option<u64> {
    None
}

pub fn layout(_file: &File) -> Layout {
    Layout::Unknown
}

pub fn can_share_extents(_file: &File) -> Option<bool> {
    Some(false)
}

pub fn dedupe_supported() -> bool {
    false
}

pub fn dedupe(_src: &File, _src_off: u64, _len: u64, _dests: &[(&File, u64)]) -> Result<Vec<DedupeStatus>, Errno> {
    Err(Errno(95))
}

/// An exclusive lock on `file`: `flock` on Unix; on other systems the hash file is
/// opened without sharing instead (see `cache.rs`), so this always succeeds.
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

pub fn free_bytes(_file: &File) -> Option<u64> {
    None
}

pub fn swap_files() -> Vec<(u64, u64)> {
    Vec::new()
}
