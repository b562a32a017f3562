//! `dfdu dupes` on every OS but Linux, through `std::fs`: the size and times of an open
//! file (files are opened by the walker side's `open_file_at` and `open_file_path`). No
//! extent maps and no deduplication here: macOS's and Windows's clone calls do not
//! compare bytes, so `dedupe` says it is unsupported.
//! Same names as `linux/dupes.rs`; the types are `platform/mod.rs`'s, the hash file's
//! calls `write.rs`'s (`unix/write.rs` on Unix). The macOS and Windows backends offer
//! these as theirs.

use crate::meta::{Errno, Kind};
use crate::platform::{io_errno, DedupeStatus, FileCheck, Layout};
use std::fs::File;

/// Whether a byte is in the page cache: never known here (no rotational devices either).
pub fn cached(_file: &File, _offset: u64) -> bool {
    false
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
    #[cfg(unix)]
    let blocks_512 = std::os::unix::fs::MetadataExt::blocks(&md);
    #[cfg(not(unix))]
    let (dev, ino, ctime_ns, blocks_512) = (0, 0, ns_of(md.modified()), 0);
    Ok(FileCheck {
        kind,
        dev,
        ino,
        size: md.len(),
        mtime_ns: ns_of(md.modified()),
        ctime_ns,
        pinned: false,
        blocks_512,
    })
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

/// Always: no extent here is mapped or shared by dfdu (APFS clones are, but not by dedupe).
pub fn extents_never_shared(_file: &File) -> bool {
    true
}

/// No read-only snapshots that dedupe could change here (there is no dedupe).
pub fn read_only_snapshot(_file: &File) -> bool {
    false
}

pub fn dedupe_supported() -> bool {
    false
}

pub fn dedupe(_src: &File, _src_off: u64, _len: u64, _dests: &[(&File, u64)]) -> Result<Vec<DedupeStatus>, Errno> {
    Err(Errno::NOTSUP)
}

/// No dedupe here, so no block size it would need.
pub fn fs_block_bytes(_file: &File) -> Option<u64> {
    None
}

/// No btrfs here: a file system is its device.
pub fn fs_uuid(_file: &File) -> Option<[u8; 16]> {
    None
}

pub fn free_bytes(_file: &File) -> Option<u64> {
    None
}

pub fn swap_files() -> Vec<(u64, u64)> {
    Vec::new()
}

/// No unnamed temporary files here: `dedupe --blocks` copies nothing (it does not run
/// where `dedupe` does not). Generic over the directory type, since macOS and Windows
/// take these calls with directory handles of their own.
pub fn temp_file_in<D>(_dir: &D) -> Result<File, Errno> {
    Err(Errno::NOTSUP)
}
