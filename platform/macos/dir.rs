//! macOS reader: one system call per batch of entries. Each directory is opened relative
//! to its parent (`openat`, no-follow, close-on-exec) and listed with `getattrlistbulk`,
//! which returns names together with type, device, file id, link count, allocated size,
//! data length and times; `platform/macos/attrs.rs` decodes that buffer (pure, safe,
//! unit-tested everywhere). The listing hands each entry's metadata to the scanner
//! (`Some(meta)`), so a directory costs one `openat` and one `getattrlistbulk` per few
//! hundred entries, instead of one `fstatat` per entry.
//!
//! Decisions:
//!
//! * **Declarations by hand.** `getattrlistbulk`, `sysctlbyname`, `localtime_r`,
//!   `tzset` and `signal` are declared here (`extern "C"`, libSystem is always linked);
//!   `openat`, `fstatat`, `readdir`, `getrlimit` come from rustix's libc backend.
//! * **An entry the listing cannot vouch for is stat'ed** (`None` to the scanner): an
//!   attribute the file system did not return, a per-entry error (`ATTR_CMN_ERROR`; the
//!   scanner's `fstatat` then reports it, as GNU du would), and a mount point, whose
//!   listed attributes describe the directory underneath the mount rather than the
//!   mounted root (`fstatat` crosses into it, so `-x` sees the other device).
//! * **Fallback.** If the first `getattrlistbulk` call on a directory fails (a file
//!   system without support, or a directory that is readable but not searchable), the
//!   directory is listed with `readdir` on a duplicate descriptor and every entry is
//!   stat'ed. An `ERANGE` after a batch is the end of the directory (a 10.13 APFS bug).
//! * **Firmlinks** (`/Users`, `/Applications`, … on the sealed system volume lead into
//!   the data volume, which is also mounted at `/System/Volumes/Data`) are reported as
//!   links, not followed, so `dfdu /` counts the data once, under
//!   `/System/Volumes/Data`. With `-x /` only the system volume is measured: the data
//!   volume is another device and firmlinks are links. `-L` follows them like symlinks
//!   (and then counts each directory once).
//! * **Hard links** are counted once by (device, file id), the same key `stat` gives.
//! * **Clones** (`--shared`): on APFS each regular file with data gets one
//!   `getattrlistat` for its private size, clone id and `EF_*` flags (no open), turned
//!   into the extents the sharing-aware figures count (`attrs::Clones::extents`).
//! * **Threads**: the performance cores (`hw.perflevel0.physicalcpu`, else
//!   `hw.physicalcpu`), at most 8: more threads make APFS slower.

use super::attrs::{self, AttrSet};
use crate::meta::{Errno, Kind, Meta, Timespec};
use crate::platform::Follow;
use rustix::fd::{AsFd, AsRawFd, BorrowedFd};
use rustix::fs::{AtFlags, CWD};
use std::ffi::{c_char, c_int, c_long, c_void, CStr};

use super::unix::dir::{dir_id, errno, Dir};

/// Bytes handed to one `getattrlistbulk` call: about 900 entries with typical names.
/// Allocated once per worker; far larger than any single entry (so ERANGE cannot mean
/// "buffer too small").
const LIST_BUFFER_BYTES: usize = 128 * 1024;

/// A worker's listing buffer.
pub struct Lister {
    buf: Vec<u8>,
}

impl Default for Lister {
    fn default() -> Self {
        Lister { buf: vec![0; LIST_BUFFER_BYTES] }
    }
}

/// `struct attrlist` (`sys/attr.h`).
#[repr(C)]
pub(super) struct AttrList {
    pub(super) bitmapcount: u16,
    pub(super) reserved: u16,
    pub(super) commonattr: u32,
    pub(super) volattr: u32,
    pub(super) dirattr: u32,
    pub(super) fileattr: u32,
    pub(super) forkattr: u32,
}

extern "C" {
    fn getattrlistbulk(
        dirfd: c_int,
        attr_list: *mut AttrList,
        attr_buf: *mut c_void,
        attr_buf_size: usize,
        options: u64,
    ) -> c_int;
    fn sysctlbyname(
        name: *const c_char,
        oldp: *mut c_void,
        oldlenp: *mut usize,
        newp: *mut c_void,
        newlen: usize,
    ) -> c_int;
}

pub(super) fn last_errno() -> Errno {
    std::io::Error::last_os_error().raw_os_error().map_or(Errno::IO, Errno)
}

/// Which mount an open directory is on (a key), and whether it is a mount root. macOS has no
/// bind mounts: another mount is another device (the device number is the key).
pub fn dir_mount(dir: &Dir) -> Result<(u64, bool), Errno> {
    Ok((dir_id(dir)?.0, false))
}

/// The mount points of the system, where they can be listed; `None` here.
pub fn mount_points() -> Option<Vec<Vec<u8>>> {
    None
}

/// Stats a path relative to the working directory.
pub fn stat_path(path: &CStr, follow: Follow) -> Result<Meta, Errno> {
    stat_impl(CWD, path, follow)
}

/// Stats the entry `name` of `dir`: one `fstatat`.
pub fn stat_at(dir: &Dir, name: &CStr, follow: Follow) -> Result<Meta, Errno> {
    stat_impl(dir.fd.as_fd(), name, follow)
}

fn stat_impl(dirfd: BorrowedFd<'_>, name: &CStr, follow: Follow) -> Result<Meta, Errno> {
    let at = if follow == Follow::Yes { AtFlags::empty() } else { AtFlags::SYMLINK_NOFOLLOW };
    Ok(meta_of(&rustix::fs::statat(dirfd, name, at).map_err(errno)?))
}

/// Opens the entry `name` of `dir` to read its bytes if it is a regular file:
/// `(None, meta)` for anything else. A symlink is not followed. macOS has no `O_PATH`:
/// where others may write `dir` (`dir_others_may_write`) the entry is stat'ed first, so
/// only a regular file is opened; then it is opened without blocking on a FIFO or taking
/// a controlling terminal, and its handle stat'ed. What remains is that a device node
/// put under the name between the stat and the open would have its driver's `open` run
/// (only someone who may create device nodes, or hard-link one on that volume, can put
/// one there); nothing is read from it.
pub fn open_file_at(dir: &Dir, name: &CStr, others_may_write: bool) -> Result<(Option<std::fs::File>, Meta), Errno> {
    open_file_in(dir.fd.as_fd(), name, others_may_write)
}

/// `open_file_at` for a path relative to the working directory (a file argument).
pub fn open_file_path(path: &CStr) -> Result<(Option<std::fs::File>, Meta), Errno> {
    open_file_in(CWD, path, true)
}

fn open_file_in(
    dirfd: BorrowedFd<'_>,
    name: &CStr,
    others_may_write: bool,
) -> Result<(Option<std::fs::File>, Meta), Errno> {
    let before = match others_may_write {
        true => Some(stat_impl(dirfd, name, Follow::No)?),
        false => None,
    };
    if let Some(before) = before.filter(|b| b.kind != Kind::File) {
        return Ok((None, before));
    }
    let fd = match super::unix::dir::open_file_plain(dirfd, name) {
        Ok(fd) => fd,
        // A symlink (ELOOP) or a socket (ENXIO, EOPNOTSUPP) is not a file: say what it is.
        Err(e) if before.is_none() && [Errno::LOOP, Errno::NXIO, Errno::OPNOTSUPP].contains(&e) => {
            return Ok((None, stat_impl(dirfd, name, Follow::No)?))
        }
        Err(e) => return Err(e),
    };
    let meta = meta_of(&rustix::fs::fstat(&fd).map_err(errno)?);
    let moved = before.is_some_and(|b| (meta.dev, meta.ino) != (b.dev, b.ino));
    if meta.kind != Kind::File || moved {
        return Ok((None, meta));
    }
    Ok((Some(std::fs::File::from(fd)), meta))
}

fn meta_of(st: &rustix::fs::Stat) -> Meta {
    let kind = Kind::from_mode(u32::from(st.st_mode));
    Meta {
        kind,
        // dev_t is an i32: widened as std widens it, and as the listing parser does.
        dev: st.st_dev as u64,
        ino: st.st_ino,
        nlink: u64::from(st.st_nlink),
        blocks: u64::try_from(st.st_blocks).unwrap_or(0),
        size: u64::try_from(st.st_size).unwrap_or(0),
        mtime: timespec(st.st_mtime, st.st_mtime_nsec),
        atime: timespec(st.st_atime, st.st_atime_nsec),
        ctime: timespec(st.st_ctime, st.st_ctime_nsec),
    }
}

fn timespec(sec: i64, nsec: c_long) -> Timespec {
    Timespec { sec, nsec: nsec.clamp(0, 999_999_999) as u32 }
}

/// One `getattrlistbulk` call: the number of entries now at the start of `buf`, 0 at the
/// end of the directory.
fn bulk(fd: BorrowedFd<'_>, buf: &mut [u8]) -> Result<usize, Errno> {
    let req = &attrs::REQUEST;
    let AttrSet { common, vol, dir, file, fork } = req.attrs;
    let mut list = AttrList {
        bitmapcount: attrs::ATTR_BIT_MAP_COUNT,
        reserved: 0,
        commonattr: common,
        volattr: vol,
        dirattr: dir,
        fileattr: file,
        forkattr: fork,
    };
    let options = if req.pack_invalid { attrs::FSOPT_PACK_INVAL_ATTRS } else { 0 };
    // SAFETY: `fd` is an open descriptor borrowed for the duration of the call; `list` is
    // an initialised `struct attrlist` that outlives the call; the kernel writes at most
    // `buf.len()` bytes into `buf`, an initialised byte slice borrowed exclusively here.
    let n = unsafe { getattrlistbulk(fd.as_raw_fd(), &mut list, buf.as_mut_ptr().cast(), buf.len(), options) };
    usize::try_from(n).map_err(|_| last_errno())
}

impl Lister {
    /// Reads every entry of `dir` (without `.` and `..`), calling `each(name, inode,
    /// meta)` in the order the file system returns them; `meta` is `None` for an entry
    /// the scanner must stat itself. An error after some entries were delivered is
    /// returned as well; the caller decides what a partial listing means.
    pub fn list(&mut self, dir: &Dir, each: &mut dyn FnMut(&CStr, u64, Option<&Meta>)) -> Result<(), Errno> {
        let mut batches = 0u64;
        loop {
            let count = match bulk(dir.fd.as_fd(), &mut self.buf) {
                Ok(0) => return Ok(()),
                Ok(n) => n,
                Err(Errno::RANGE) => return Ok(()),
                Err(_) if batches == 0 => return list_readdir(dir, each),
                Err(e) => return Err(e),
            };
            batches += 1;
            attrs::parse_batch(&self.buf, count, &attrs::REQUEST, &mut |e| each(e.name, e.ino, e.meta()))
                .map_err(|_| Errno::IO)?;
        }
    }
}

/// The fallback listing: `readdir` on a duplicate of the descriptor (never mixed with
/// `getattrlistbulk` on the same stream), names only; the scanner stats each entry.
fn list_readdir(dir: &Dir, each: &mut dyn FnMut(&CStr, u64, Option<&Meta>)) -> Result<(), Errno> {
    let fd = rustix::io::dup(&dir.fd).map_err(errno)?;
    let mut stream = rustix::fs::Dir::new(fd).map_err(errno)?;
    while let Some(entry) = stream.read() {
        let entry = entry.map_err(errno)?;
        let name = entry.file_name();
        if matches!(name.to_bytes(), b"." | b"..") {
            continue;
        }
        each(name, entry.ino(), None);
    }
    Ok(())
}

/// No bound on a directory's entries is known here (`linux::dir::entries_bound`).
pub fn entries_bound(_dir: &Dir) -> Option<(u64, u64)> {
    None
}

/// GNU fts sorts the entries of a big directory by inode number on every file system
/// whose type it cannot tell cheaply, which outside Linux is all of them.
pub fn sorts_by_inode(_dir: &Dir) -> bool {
    true
}

/// macOS has no kernel file systems of the kind `--exclude-kernfs` leaves out (devfs is
/// reached only at /dev, and holds no sizes).
pub fn kernel_fs(_dir: &Dir) -> bool {
    false
}

/// Lookups in one directory are not known to serialize here (see the Linux reader).
pub fn lookups_serialize(_dir: &Dir) -> bool {
    false
}

/// Not needed where lookups do not serialize.
pub fn thread_cpu_ns() -> u64 {
    0
}

/// Reads an integer sysctl by name.
fn sysctl_int(name: &CStr) -> Option<i32> {
    let mut value: i32 = 0;
    let mut len = std::mem::size_of::<i32>();
    // SAFETY: `name` is NUL-terminated; `value` and `len` are valid for writes and `len`
    // holds the size of `value`, so the kernel writes at most that many bytes; no new
    // value is set (null pointer, length 0).
    let rc = unsafe { sysctlbyname(name.as_ptr(), (&mut value as *mut i32).cast(), &mut len, std::ptr::null_mut(), 0) };
    (rc == 0 && len == std::mem::size_of::<i32>()).then_some(value)
}

/// Most threads worth running: beyond this APFS gets slower, not faster.
const MAX_THREADS: usize = 8;

/// Default worker count: the performance cores (Apple silicon has efficiency cores that
/// only slow a scan down), falling back to all physical cores, at most `MAX_THREADS`.
pub fn default_threads() -> usize {
    let cores = sysctl_int(c"hw.perflevel0.physicalcpu")
        .filter(|&n| n > 0)
        .or_else(|| sysctl_int(c"hw.physicalcpu").filter(|&n| n > 0));
    match cores {
        Some(n) => n as usize,
        None => std::thread::available_parallelism().map_or(1, |n| n.get()),
    }
    .clamp(1, MAX_THREADS)
}

/// Raises the soft limit on open files as far as the kernel allows a process
/// (`kern.maxfilesperproc`; macOS refuses `RLIM_INFINITY`). Returns the limit in force.
pub fn raise_fd_limit() -> u64 {
    use rustix::process::{getrlimit, setrlimit, Resource};
    const OPEN_MAX: u64 = 10_240;
    let per_process =
        sysctl_int(c"kern.maxfilesperproc").and_then(|n| u64::try_from(n).ok()).filter(|&n| n > 0).unwrap_or(OPEN_MAX);
    let mut lim = getrlimit(Resource::Nofile);
    let want = lim.maximum.map_or(per_process, |max| max.min(per_process));
    let cur = lim.current.unwrap_or(u64::MAX);
    if cur >= want {
        return cur.min(per_process);
    }
    lim.current = Some(want);
    if setrlimit(Resource::Nofile, lim).is_ok() {
        want
    } else {
        cur
    }
}

/// How many file descriptors are open now: the entries of /dev/fd, less the one that
/// lists them.
pub fn open_fds() -> u64 {
    std::fs::read_dir("/dev/fd").map_or(3, |d| (d.count() as u64).saturating_sub(1).max(3))
}

/// macOS keeps `RLIMIT_AS` as `RLIMIT_RSS`, which no mapping is held to: nothing to
/// plan for.
pub fn address_space_left() -> Option<u64> {
    None
}

/// The C library's text for an error number (macOS numbers and words them its own way,
/// and so does GNU du built there): the std::fs backend's reading of it.
pub use crate::platform::fallback::errno_text;
