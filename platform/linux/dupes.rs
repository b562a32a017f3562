//! Linux side of `dfdu dupes` and `dfdu dedupe`: `statx` of an open file with its
//! immutable/append-only attributes, the extent map (`FS_IOC_FIEMAP`), the comparing
//! `FIDEDUPERANGE` ioctl, free space after `syncfs`, and the hash file's replacement
//! (`O_TMPFILE`, linked and renamed relative to its directory's handle).
//!
//! Files are opened by the walker side (`open_file_at`, `open_file_path` in `dir.rs`:
//! relative to a directory handle, nothing but a regular file, `O_NOATIME` where allowed).
//! Contract (the same names in `fallback/dupes.rs` for every other OS): `check_file`,
//! `cached`, `layout`, `rotational`, `physical_start`, `extents_never_shared`,
//! `read_only_snapshot`, `dedupe_supported`, `dedupe`, `fs_block_bytes`, `fs_uuid`, `free_bytes`,
//! `swap_files`, `replace_in`, `temp_file_in`; the types are `platform/mod.rs`'s, `lock_file` and the other
//! hash-file calls `unix/write.rs`'s. No printing, no policy. The ioctls go through
//! `ioctl.rs`, on arguments laid out here in `u64` words, sized by us.

use super::unix::write::{c_name, fill_temp, named_temp_in, rename_in, TempFile, WriteDir, WRITE_MODE};
use crate::meta::{Errno, Extent, Kind, Timespec};
use crate::platform::{random_name, DedupeStatus, FileCheck, Layout, MAX_DEDUPE_DESTS, TEMP_ATTEMPTS};
use rustix::fd::AsFd;
use rustix::fs::{AtFlags, Mode, OFlags, StatxAttributes, StatxFlags, CWD};
use std::fs::File;

fn errno(e: rustix::io::Errno) -> Errno {
    Errno(e.raw_os_error())
}

/// Whether the byte at `offset` of `file` is in the page cache: a one-byte `preadv2` with
/// `RWF_NOWAIT` fails (EAGAIN) instead of waiting for the disk. `false` when it cannot tell.
pub fn cached(file: &File, offset: u64) -> bool {
    let mut byte = [0u8; 1];
    let mut bufs = [std::io::IoSliceMut::new(&mut byte)];
    matches!(rustix::io::preadv2(file, &mut bufs, offset, rustix::io::ReadWriteFlags::NOWAIT), Ok(1))
}

/// `statx` of an open file: identity, size, times in ns, and whether it is pinned.
pub fn check_file(file: &File) -> Result<FileCheck, Errno> {
    let mask = StatxFlags::TYPE
        | StatxFlags::INO
        | StatxFlags::SIZE
        | StatxFlags::BLOCKS
        | StatxFlags::MTIME
        | StatxFlags::CTIME;
    let st = rustix::fs::statx(file.as_fd(), c"", AtFlags::EMPTY_PATH, mask).map_err(errno)?;
    let pinned = st.stx_attributes.intersects(StatxAttributes::IMMUTABLE | StatxAttributes::APPEND);
    Ok(FileCheck {
        kind: Kind::from_mode(u32::from(st.stx_mode)),
        dev: rustix::fs::makedev(st.stx_dev_major, st.stx_dev_minor),
        ino: st.stx_ino,
        size: st.stx_size,
        mtime_ns: Timespec { sec: st.stx_mtime.tv_sec, nsec: st.stx_mtime.tv_nsec }.as_ns(),
        ctime_ns: Timespec { sec: st.stx_ctime.tv_sec, nsec: st.stx_ctime.tv_nsec }.as_ns(),
        pinned,
        blocks_512: st.stx_blocks,
    })
}

fn ioctl(file: &File, opcode: u32, buf: &mut [u64]) -> Result<(), Errno> {
    super::ioctl::ioctl(file.as_fd(), opcode, buf)
}

/// Data in a file's last block shared with metadata (linux/fiemap.h): cannot be shared.
const FIEMAP_EXTENT_DATA_TAIL: u32 = 0x400;
/// A file with more extents than this is treated as "layout unknown" (never skipped as
/// already shared; the kernel's compare decides).
const FIEMAP_MAX_EXTENTS: usize = 65_536;

fn lo32(w: u64) -> u32 {
    if cfg!(target_endian = "little") {
        w as u32
    } else {
        (w >> 32) as u32
    }
}

fn hi32(w: u64) -> u32 {
    if cfg!(target_endian = "little") {
        (w >> 32) as u32
    } else {
        w as u32
    }
}

fn pack32(lo: u32, hi: u32) -> u64 {
    if cfg!(target_endian = "little") {
        u64::from(lo) | (u64::from(hi) << 32)
    } else {
        (u64::from(lo) << 32) | u64::from(hi)
    }
}

/// The file's layout (flushed first, so delayed allocations have addresses).
pub fn layout(file: &File) -> Layout {
    match extents(file) {
        Err(true) => Layout::Inline,
        Ok(e) if !e.is_empty() => Layout::Extents(e),
        _ => Layout::Unknown,
    }
}

/// `Err(true)` for inline data, `Err(false)` when the map cannot be compared. The
/// FIEMAP loop is the scan's (`extents.rs`), with the write-back asked for first.
fn extents(file: &File) -> Result<Vec<Extent>, bool> {
    let mut out = Vec::new();
    let (mut inline, mut unknown) = (false, false);
    let mut buf = super::extents::ExtentBuf::default();
    super::extents::file_extents_synced(file.as_fd(), &mut buf, &mut |e| {
        if inline || unknown {
            return;
        }
        if e.flags & (Extent::INLINE | FIEMAP_EXTENT_DATA_TAIL) != 0 {
            inline = true;
        } else if e.flags & (Extent::UNKNOWN | Extent::DELALLOC) != 0 {
            unknown = true;
        } else {
            out.push(Extent { flags: e.flags & (Extent::SHARED | Extent::ENCODED), ..*e });
        }
    })
    .map_err(|_| false)?;
    if inline {
        return Err(true);
    }
    if unknown || out.len() > FIEMAP_MAX_EXTENTS {
        return Err(false);
    }
    // Kept for every member of every group: the exact size, not the growth's (a file of
    // one extent took 128 bytes, 32 of them used).
    out.shrink_to_fit();
    Ok(out)
}

/// Whether the block device behind device number `dev` is rotational (a spinning disk:
/// `/sys/dev/block/MAJ:MIN/queue/rotational`, or its parent's for a partition).
pub fn rotational(dev: u64) -> bool {
    let (maj, min) = (rustix::fs::major(dev), rustix::fs::minor(dev));
    ["queue/rotational", "../queue/rotational"]
        .iter()
        .find_map(|tail| std::fs::read(format!("/sys/dev/block/{maj}:{min}/{tail}")).ok())
        .is_some_and(|v| v.first() == Some(&b'1'))
}

/// Disk address of the file's first byte (FIEMAP, no sync), to read in physical order.
pub fn physical_start(file: &File) -> Option<u64> {
    let mut buf = vec![0u64; 4 + 7];
    buf[1] = u64::MAX;
    buf[3] = pack32(1, 0);
    ioctl(file, linux_raw_sys::ioctl::FS_IOC_FIEMAP, &mut buf).ok()?;
    (hi32(buf[2]) >= 1).then_some(buf[4 + 1])
}

/// Whether the file system holding `file` is one of the common ones known never to share
/// extents (ext2/3/4, tmpfs, FAT, exFAT, NTFS, F2FS, ramfs), so that dedupe need not be
/// tried there; `false` when only a `FIDEDUPERANGE` call can tell (btrfs and XFS can
/// share; XFS only with `reflink=1`) or the file system cannot be asked.
pub fn extents_never_shared(file: &File) -> bool {
    const NO: [u32; 8] = [0xEF53, 0x0102_1994, 0x4d44, 0x2011_BAB0, 0x5346_544e, 0xF2F5_2010, 0x8584_58f6, 0x7366_6673];
    rustix::fs::fstatfs(file).is_ok_and(|fs| NO.contains(&(fs.f_type as u32)))
}

/// Whether `file` is on a read-only btrfs subvolume (`btrfs subvolume snapshot -r`), whose
/// extents dedupe would move (the kernel allows it; the snapshot's generation changes, and
/// an incremental `btrfs send -p` relies on it not changing). Asked with
/// `BTRFS_IOC_GET_SUBVOL_INFO` (Linux 4.18, unprivileged) and the root item's
/// `BTRFS_ROOT_SUBVOL_RDONLY` flag; an older kernel says ENOTTY, and then a write-access check through
/// `/proc/self/fd` answers (btrfs says EROFS there for a read-only subvolume). Other file
/// systems have no such subvolumes: `false` without a call.
pub fn read_only_snapshot(file: &File) -> bool {
    let Ok(fs) = rustix::fs::fstatfs(file) else { return false };
    if fs.f_type as u32 != linux_raw_sys::general::BTRFS_SUPER_MAGIC {
        return false;
    }
    // struct btrfs_ioctl_get_subvol_info_args, 504 bytes (the size in the opcode):
    // treeid (u64), name[256], parent_id, dirid, generation, then flags (u64) at byte 288.
    let mut buf = vec![0u64; 504 / 8];
    match ioctl(file, linux_raw_sys::ioctl::BTRFS_IOC_GET_SUBVOL_INFO, &mut buf) {
        Ok(()) => buf[288 / 8] & BTRFS_ROOT_SUBVOL_RDONLY != 0,
        Err(Errno::NOTTY) => write_refused(file),
        Err(_) => false,
    }
}

/// The root item's read-only flag (linux/btrfs_tree.h), which GET_SUBVOL_INFO passes on
/// as it is (not `BTRFS_SUBVOL_RDONLY`, 1 << 1, the flag of SUBVOL_GETFLAGS).
const BTRFS_ROOT_SUBVOL_RDONLY: u64 = 1 << 0;

/// Whether the kernel refuses to write `file` because its file system (or subvolume) is
/// read-only: `access(W_OK)` on the open file itself, through its `/proc/self/fd` link.
fn write_refused(file: &File) -> bool {
    use std::os::fd::AsRawFd;
    let path = format!("/proc/self/fd/{}", file.as_raw_fd());
    matches!(rustix::fs::access(path.as_str(), rustix::fs::Access::WRITE_OK), Err(rustix::io::Errno::ROFS))
}

/// `FIDEDUPERANGE` exists here.
pub fn dedupe_supported() -> bool {
    true
}

/// One `FIDEDUPERANGE` call: the kernel compares `[src_off, src_off + len)` of `src` with the
/// same range of each destination and shares extents only where they are equal. At most
/// `MAX_DEDUPE_DESTS` destinations. `Err` when the call itself failed (EOPNOTSUPP, EINVAL,
/// EXDEV ...); otherwise one status per destination, in order.
pub fn dedupe(src: &File, src_off: u64, len: u64, dests: &[(&File, u64)]) -> Result<Vec<DedupeStatus>, Errno> {
    assert!(dests.len() <= MAX_DEDUPE_DESTS, "the caller batches destinations");
    // struct file_dedupe_range: src_offset, src_length (u64), dest_count (u16), reserved1
    // (u16), reserved2 (u32) = 3 words; then 4 words per file_dedupe_range_info: dest_fd
    // (s64), dest_offset, bytes_deduped (u64), status (s32), reserved (u32).
    let mut buf = vec![0u64; 3 + 4 * dests.len()];
    buf[0] = src_off;
    buf[1] = len;
    buf[2] = pack32(dests.len() as u32, 0);
    for (i, (f, off)) in dests.iter().enumerate() {
        use std::os::fd::AsRawFd;
        buf[3 + 4 * i] = f.as_raw_fd() as i64 as u64;
        buf[3 + 4 * i + 1] = *off;
    }
    ioctl(src, linux_raw_sys::ioctl::FIDEDUPERANGE, &mut buf)?;
    Ok((0..dests.len())
        .map(|i| {
            let status = lo32(buf[3 + 4 * i + 3]) as i32;
            match status {
                0 => DedupeStatus::Same(buf[3 + 4 * i + 2]),
                1 => DedupeStatus::Differs,
                s if s < 0 => DedupeStatus::Error(Errno(-s)),
                s => DedupeStatus::Error(Errno(s)),
            }
        })
        .collect())
}

/// The block size of `file`'s file system (`statfs`'s `f_bsize`): `FIDEDUPERANGE` wants
/// ranges aligned to it (but at the end of a file).
pub fn fs_block_bytes(file: &File) -> Option<u64> {
    let fs = rustix::fs::fstatfs(file).ok()?;
    u64::try_from(fs.f_bsize).ok().filter(|&b| b > 0)
}

/// What all btrfs subvolumes of `file`'s file system share (each has a device number of
/// its own): the file system's UUID (`BTRFS_IOC_FS_INFO`, unprivileged); `None` on any
/// other file system, whose device number names it.
pub fn fs_uuid(file: &File) -> Option<[u8; 16]> {
    let fs = rustix::fs::fstatfs(file).ok()?;
    if fs.f_type as u32 != linux_raw_sys::general::BTRFS_SUPER_MAGIC {
        return None;
    }
    // struct btrfs_ioctl_fs_info_args, 1024 bytes (the size in the opcode): max_id and
    // num_devices (u64 each), then fsid[16] at byte 16.
    let mut buf = vec![0u64; 1024 / 8];
    ioctl(file, linux_raw_sys::ioctl::BTRFS_IOC_FS_INFO, &mut buf).ok()?;
    let mut id = [0u8; 16];
    id[..8].copy_from_slice(&buf[2].to_ne_bytes());
    id[8..].copy_from_slice(&buf[3].to_ne_bytes());
    Some(id)
}

/// Bytes available to unprivileged users on `file`'s file system, after `syncfs` so that
/// freed extents are accounted.
pub fn free_bytes(file: &File) -> Option<u64> {
    let _ = rustix::fs::syncfs(file);
    let fs = rustix::fs::fstatfs(file).ok()?;
    Some((fs.f_bavail as u64).saturating_mul(fs.f_bsize as u64))
}

/// (device, inode) of every active swap file (`/proc/swaps`): never deduplicated.
pub fn swap_files() -> Vec<(u64, u64)> {
    let Ok(text) = std::fs::read("/proc/swaps") else { return Vec::new() };
    let mut out = Vec::new();
    for line in text.split(|&b| b == b'\n').skip(1) {
        // The kernel escapes blanks inside the name, so the first blank ends it.
        let Some(field) = line.split(|&b| b == b' ' || b == b'\t').next().filter(|p| !p.is_empty()) else {
            continue;
        };
        let Ok(c) = std::ffi::CString::new(super::dir::unescape_octal(field)) else { continue };
        if let Ok(st) = rustix::fs::statat(CWD, &c, AtFlags::empty()) {
            if st.st_mode & 0o170000 == 0o100000 {
                #[allow(clippy::unnecessary_cast)] // the field types differ between architectures
                out.push((st.st_dev as u64, st.st_ino as u64));
            }
        }
    }
    out
}

/// A new file with no name in `dir`'s file system, for `dedupe --blocks` to copy the rest
/// of a partly matched extent into (`O_TMPFILE|O_EXCL`, mode 0600): it never has a name,
/// so nothing of it is left when the run ends or is killed, and `O_EXCL` keeps it from
/// ever being linked in. Without `O_TMPFILE` (a kernel or file system without it) the
/// error is returned and nothing is copied.
pub fn temp_file_in(dir: &super::Dir) -> Result<File, Errno> {
    let flags = OFlags::RDWR | OFlags::TMPFILE | OFlags::EXCL | OFlags::CLOEXEC;
    rustix::fs::openat(&dir.fd, c".", flags, Mode::from_bits_truncate(WRITE_MODE)).map(File::from).map_err(errno)
}

/// A new file to replace `base` in `dir` with: unnamed (`O_TMPFILE`, mode 0600) where
/// the file system has them, else under a random name that `O_CREAT|O_EXCL|O_NOFOLLOW`
/// makes ours. Either way no name another user prepared is ever opened.
fn temp_in(dir: &WriteDir, base: &std::ffi::OsStr) -> Result<TempFile, Errno> {
    let flags = OFlags::RDWR | OFlags::TMPFILE | OFlags::CLOEXEC;
    match rustix::fs::openat(&dir.fd, c".", flags, Mode::from_bits_truncate(WRITE_MODE)) {
        Ok(fd) => Ok(TempFile { file: File::from(fd), name: None }),
        // EISDIR: a kernel older than O_TMPFILE; EOPNOTSUPP: a file system without it.
        Err(rustix::io::Errno::OPNOTSUPP | rustix::io::Errno::ISDIR | rustix::io::Errno::INVAL) => {
            named_temp_in(dir, base)
        }
        Err(e) => Err(errno(e)),
    }
}

/// Gives the unnamed file a random name in `dir` (`linkat`, which never replaces an
/// entry: a name taken meanwhile is EEXIST and another is tried).
fn link_unnamed(dir: &WriteDir, file: &File, base: &std::ffi::OsStr) -> Result<std::ffi::OsString, Errno> {
    use std::os::fd::AsRawFd;
    for attempt in 0..TEMP_ATTEMPTS {
        let name = random_name(base, attempt);
        let c = c_name(&name)?;
        // AT_EMPTY_PATH needs CAP_DAC_READ_SEARCH (ENOENT without it); the /proc link of
        // the descriptor works for every user where /proc is mounted.
        let linked = rustix::fs::linkat(file, c"", &dir.fd, &*c, AtFlags::EMPTY_PATH).or_else(|e| match e {
            rustix::io::Errno::NOENT | rustix::io::Errno::PERM => {
                let proc = format!("/proc/self/fd/{}", file.as_raw_fd());
                rustix::fs::linkat(CWD, proc.as_str(), &dir.fd, &*c, AtFlags::SYMLINK_FOLLOW)
            }
            e => Err(e),
        });
        match linked {
            Ok(()) => return Ok(name),
            Err(rustix::io::Errno::EXIST) => {}
            Err(e) => return Err(errno(e)),
        }
    }
    Err(Errno::EXIST)
}

/// Replaces the entry `name` of `dir` with a new file holding `bytes` (see `temp_in`),
/// renamed into place relative to the handle: the old file, or whatever else had that
/// name, is replaced, never followed. Then lets go of `lock`, the old file's lock, so
/// that a run waiting for it finds the new file.
pub fn replace_in(dir: &WriteDir, name: &std::ffi::OsStr, bytes: &[u8], lock: File) -> Result<(), Errno> {
    let tmp = temp_in(dir, name)?;
    let from = fill_temp(dir, tmp, bytes, |f| link_unnamed(dir, f, name))?;
    let renamed = rename_in(dir, &from, name);
    drop(lock);
    renamed
}
