//! FIEMAP on Linux: which file systems can share extents, and the extents of one file.
//!
//! Two functions and a buffer, meant to serve every caller that needs extent maps
//! (sharing-aware disk usage in `scan`; a "do these files already share?" check in
//! `dupes`/`dedupe`):
//!
//! * `fs_shares_extents(dir)` — one `fstatfs`: true on btrfs, XFS, bcachefs, OCFS2 (the
//!   Linux file systems with reflinks or snapshots that FIEMAP reports as shared).
//! * `file_extents_at(dir, name, buf, each)` / `file_extents_fd(fd, buf, each)` — the
//!   file's extents in logical order through `FS_IOC_FIEMAP` into `buf` (a fixed
//!   4 KiB buffer a worker keeps; a file with more extents takes several calls).
//!
//! `FIEMAP_FLAG_SYNC` is never passed: it makes the kernel write back the file's dirty
//! pages before mapping them, which turns a read-only scan into a flush of every
//! recently written file (slow, and a side effect on a disk someone else is using).
//! Without it, data not yet written has no extent, or a `DELALLOC`/`UNKNOWN` one: the
//! caller decides what those count for (the scanner skips them, as `btrfs filesystem
//! du` does).

use super::unix::dir::{errno, Dir};
use crate::meta::Errno;
use rustix::fd::{AsFd, BorrowedFd};
use rustix::fs::{Mode, OFlags};
use std::ffi::CStr;

use crate::meta::Extent;
use linux_raw_sys::ioctl as k;

// `Extent`'s flag bits are the kernel's FIEMAP bits.
const _: () = assert!(
    Extent::LAST == k::FIEMAP_EXTENT_LAST
        && Extent::UNKNOWN == k::FIEMAP_EXTENT_UNKNOWN
        && Extent::DELALLOC == k::FIEMAP_EXTENT_DELALLOC
        && Extent::INLINE == k::FIEMAP_EXTENT_DATA_INLINE
        && Extent::SHARED == k::FIEMAP_EXTENT_SHARED
);

/// Extents asked for per call: 72 × 56 bytes + the 32-byte header ≈ 4 KiB.
const EXTENTS_PER_CALL: usize = 72;
/// Bound on calls for one file (72 × 4096 extents); a file with more is reported up to here.
const MAX_CALLS: usize = 4096;

/// `struct fiemap_extent` (linux/fiemap.h).
#[repr(C)]
#[derive(Clone, Copy, Default)]
struct RawExtent {
    logical: u64,
    physical: u64,
    length: u64,
    reserved64: [u64; 2],
    flags: u32,
    reserved: [u32; 3],
}
const _: () = assert!(std::mem::size_of::<RawExtent>() == 56);

/// `struct fiemap` followed by room for `EXTENTS_PER_CALL` extents.
#[repr(C)]
struct RawFiemap {
    start: u64,
    length: u64,
    flags: u32,
    mapped_extents: u32,
    extent_count: u32,
    reserved: u32,
    extents: [RawExtent; EXTENTS_PER_CALL],
}
const _: () = assert!(std::mem::size_of::<RawFiemap>() == 32 + 56 * EXTENTS_PER_CALL);

/// A worker's FIEMAP buffer (allocated once, reused for every file).
pub struct ExtentBuf {
    raw: Box<RawFiemap>,
}

impl Default for ExtentBuf {
    fn default() -> Self {
        let raw = RawFiemap {
            start: 0,
            length: 0,
            flags: 0,
            mapped_extents: 0,
            extent_count: 0,
            reserved: 0,
            extents: [RawExtent::default(); EXTENTS_PER_CALL],
        };
        ExtentBuf { raw: Box::new(raw) }
    }
}

/// True when `dir` lies on a file system whose files can share extents.
pub fn fs_shares_extents(dir: &Dir) -> bool {
    const OCFS2_SUPER_MAGIC: u32 = 0x7461_636f;
    match rustix::fs::fstatfs(&dir.fd) {
        Ok(fs) => matches!(
            fs.f_type as u32,
            linux_raw_sys::general::BTRFS_SUPER_MAGIC
                | linux_raw_sys::general::XFS_SUPER_MAGIC
                | linux_raw_sys::general::BCACHEFS_SUPER_MAGIC
                | OCFS2_SUPER_MAGIC
        ),
        Err(_) => false,
    }
}

/// The extents of the regular file `name` in `dir` (opened read-only, no-follow,
/// non-blocking, so a FIFO or device that replaced the file cannot hang the caller).
pub fn file_extents_at(
    dir: &Dir,
    name: &CStr,
    buf: &mut ExtentBuf,
    each: &mut dyn FnMut(&Extent),
) -> Result<(), Errno> {
    let flags = OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC | OFlags::NOCTTY;
    let fd = rustix::fs::openat(&dir.fd, name, flags, Mode::empty()).map_err(errno)?;
    file_extents_fd(fd.as_fd(), buf, each)
}

/// The extents of the open file `fd`, in logical order.
pub fn file_extents_fd(fd: BorrowedFd, buf: &mut ExtentBuf, each: &mut dyn FnMut(&Extent)) -> Result<(), Errno> {
    extents_fd(fd, buf, false, each)
}

/// As `file_extents_fd`, but the file's dirty data is written back first
/// (`FIEMAP_FLAG_SYNC` on the first call), so delayed allocations have addresses: for
/// `dedupe`, which must know the layout of the files it is about to share, not for the
/// scan, where the write-back would be a slow side effect.
pub fn file_extents_synced(fd: BorrowedFd, buf: &mut ExtentBuf, each: &mut dyn FnMut(&Extent)) -> Result<(), Errno> {
    extents_fd(fd, buf, true, each)
}

/// `FIEMAP_FLAG_SYNC` (linux/fiemap.h).
const FLAG_SYNC: u32 = 1;

fn extents_fd(fd: BorrowedFd, buf: &mut ExtentBuf, sync: bool, each: &mut dyn FnMut(&Extent)) -> Result<(), Errno> {
    let raw = &mut *buf.raw;
    let mut start = 0u64;
    for call in 0..MAX_CALLS {
        raw.start = start;
        raw.length = u64::MAX;
        raw.flags = if sync && call == 0 { FLAG_SYNC } else { 0 };
        raw.mapped_extents = 0;
        raw.extent_count = EXTENTS_PER_CALL as u32;
        raw.reserved = 0;
        // SAFETY: FS_IOC_FIEMAP reads and writes one `struct fiemap` whose flexible array
        // holds `fm_extent_count` extents; `RawFiemap` has that C layout with exactly
        // `EXTENTS_PER_CALL` extents after the header, and `Updater` borrows it mutably for
        // the duration of the call only.
        unsafe {
            let ctl = rustix::ioctl::Updater::<{ k::FS_IOC_FIEMAP as rustix::ioctl::Opcode }, RawFiemap>::new(raw);
            rustix::ioctl::ioctl(fd, ctl).map_err(errno)?;
        }
        let n = (raw.mapped_extents as usize).min(EXTENTS_PER_CALL);
        if n == 0 {
            return Ok(());
        }
        for e in &raw.extents[..n] {
            each(&Extent { logical: e.logical, physical: e.physical, length: e.length, flags: e.flags });
        }
        let last = raw.extents[n - 1];
        let next = last.logical.saturating_add(last.length);
        if last.flags & Extent::LAST != 0 || next <= start {
            return Ok(());
        }
        start = next;
    }
    Ok(())
}
