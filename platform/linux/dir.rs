//! Linux reader: directories opened relative to their parent (`openat`, no-follow,
//! close-on-exec), listed with raw `getdents64` into a caller-owned buffer (rustix
//! `RawDir`), entries sized with `statx` (no-follow, no-automount, don't-sync), falling
//! back to `fstatat` where the kernel or a seccomp filter refuses `statx`; and the files
//! `dupes` reads, opened only once an `O_PATH` handle shows a regular file.
//!
//! Implements the contract in `platform/mod.rs`; the directory handles and terminal are
//! `unix/`'s, shared with macOS; local time is `time.rs` (glibc's rules in Rust).

use crate::meta::{Errno, Kind, Meta, Timespec};
use crate::platform::Follow;
use rustix::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};
use rustix::fs::{AtFlags, Mode, OFlags, RawDir, StatxAttributes, StatxFlags, CWD};
use std::ffi::CStr;
use std::fs::File;
use std::mem::MaybeUninit;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::OnceLock;

use super::unix::dir::{dir_id, errno, Dir};

/// Bytes handed to one `getdents64` call; allocated once per worker.
const LIST_BUFFER_BYTES: usize = 32 * 1024;

/// A worker's listing buffer.
pub struct Lister {
    buf: Vec<MaybeUninit<u8>>,
}

impl Default for Lister {
    fn default() -> Self {
        Lister { buf: vec![MaybeUninit::uninit(); LIST_BUFFER_BYTES] }
    }
}

/// Set once `statx` has answered ENOSYS (old kernel, seccomp): use `fstatat` from then on.
static NO_STATX: AtomicBool = AtomicBool::new(false);

/// Stats a path relative to the working directory.
pub fn stat_path(path: &CStr, follow: Follow) -> Result<Meta, Errno> {
    stat_impl(CWD, path, follow)
}

/// Stats the entry `name` of `dir`: one system call.
#[inline]
pub fn stat_at(dir: &Dir, name: &CStr, follow: Follow) -> Result<Meta, Errno> {
    stat_impl(dir.fd.as_fd(), name, follow)
}

/// Which mount an open directory is on, and whether it is that mount's root: (a key
/// equal for two directories exactly when they are on the same mount, is a mount root).
/// Here the key is the kernel's mount id (`statx` `STATX_MNT_ID`, else the `mnt_id:`
/// line of `/proc/self/fdinfo`), so a bind mount on the same device is told apart too.
pub fn dir_mount(dir: &Dir) -> Result<(u64, bool), Errno> {
    let mask = StatxFlags::INO | StatxFlags::MNT_ID;
    let st = match rustix::fs::statx(&dir.fd, c"", AtFlags::EMPTY_PATH | AtFlags::STATX_DONT_SYNC, mask) {
        Ok(st) => Some(st),
        Err(rustix::io::Errno::NOSYS) => None,
        Err(e) => return Err(errno(e)),
    };
    let root = st.as_ref().is_some_and(|st| {
        st.stx_attributes_mask.contains(StatxAttributes::MOUNT_ROOT)
            && st.stx_attributes.contains(StatxAttributes::MOUNT_ROOT)
    });
    if let Some(st) = st.as_ref().filter(|st| st.stx_mask & StatxFlags::MNT_ID.bits() != 0) {
        return Ok((st.stx_mnt_id, root));
    }
    // Kernels before 5.8: the mount id is in fdinfo (since 3.15); failing that, the device.
    let fdinfo = format!("/proc/self/fdinfo/{}", dir.fd.as_raw_fd());
    let from_fdinfo = std::fs::read_to_string(fdinfo).ok().and_then(|text| {
        text.lines().find_map(|l| l.strip_prefix("mnt_id:")).and_then(|v| v.trim().parse::<u64>().ok())
    });
    match from_fdinfo {
        Some(id) => Ok((id, root)),
        None => Ok((dir_id(dir)?.0 | 1 << 63, root)),
    }
}

/// The mount points of this process's mount namespace, as absolute paths (the fifth
/// field of `/proc/self/mountinfo`, with its octal escapes undone); `None` if unknown.
pub fn mount_points() -> Option<Vec<Vec<u8>>> {
    let text = std::fs::read("/proc/self/mountinfo").ok()?;
    Some(text.split(|&b| b == b'\n').filter_map(|line| line.split(|&b| b == b' ').nth(4)).map(unescape_octal).collect())
}

/// A path as `/proc/self/mountinfo` and `/proc/swaps` print it, back to its bytes: the
/// kernel writes space, tab, newline and backslash as `\040`, `\011`, `\012` and `\134`.
/// A backslash not followed by three octal digits (at most `\377`) is kept as it is.
pub(super) fn unescape_octal(field: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(field.len());
    let mut i = 0;
    while i < field.len() {
        let octal = field.get(i + 1..i + 4).filter(|d| d.iter().all(|b| (b'0'..=b'7').contains(b)));
        match octal {
            Some(d) if field[i] == b'\\' && d[0] <= b'3' => {
                out.push((d[0] - b'0') << 6 | (d[1] - b'0') << 3 | (d[2] - b'0'));
                i += 4;
            }
            _ => {
                out.push(field[i]);
                i += 1;
            }
        }
    }
    out
}

fn stat_impl<Fd: AsFd>(dirfd: Fd, name: &CStr, follow: Follow) -> Result<Meta, Errno> {
    let mut at = AtFlags::NO_AUTOMOUNT | AtFlags::STATX_DONT_SYNC;
    if follow == Follow::No {
        at |= AtFlags::SYMLINK_NOFOLLOW;
    }
    stat_flags(dirfd, name, at)
}

fn stat_flags<Fd: AsFd>(dirfd: Fd, name: &CStr, at: AtFlags) -> Result<Meta, Errno> {
    if !NO_STATX.load(Ordering::Relaxed) {
        let mask = StatxFlags::TYPE
            | StatxFlags::MODE
            | StatxFlags::NLINK
            | StatxFlags::INO
            | StatxFlags::SIZE
            | StatxFlags::BLOCKS
            | StatxFlags::MTIME
            | StatxFlags::ATIME
            | StatxFlags::CTIME;
        match rustix::fs::statx(dirfd.as_fd(), name, at, mask) {
            Ok(st) => {
                return Ok(Meta {
                    kind: Kind::from_mode(st.stx_mode as u32),
                    dev: rustix::fs::makedev(st.stx_dev_major, st.stx_dev_minor),
                    ino: st.stx_ino,
                    nlink: st.stx_nlink as u64,
                    blocks: st.stx_blocks,
                    size: st.stx_size,
                    mtime: Timespec { sec: st.stx_mtime.tv_sec, nsec: st.stx_mtime.tv_nsec },
                    atime: Timespec { sec: st.stx_atime.tv_sec, nsec: st.stx_atime.tv_nsec },
                    ctime: Timespec { sec: st.stx_ctime.tv_sec, nsec: st.stx_ctime.tv_nsec },
                })
            }
            Err(rustix::io::Errno::NOSYS) => NO_STATX.store(true, Ordering::Relaxed),
            Err(e) => return Err(errno(e)),
        }
    }
    let at = at & !AtFlags::STATX_DONT_SYNC;
    let st = rustix::fs::statat(dirfd, name, at).map_err(errno)?;
    Ok(Meta {
        kind: Kind::from_mode(st.st_mode as u32),
        dev: st.st_dev as u64,
        ino: st.st_ino as u64,
        nlink: st.st_nlink as u64,
        blocks: st.st_blocks as u64,
        size: st.st_size as u64,
        mtime: Timespec { sec: st.st_mtime as i64, nsec: st.st_mtime_nsec as u32 },
        atime: Timespec { sec: st.st_atime as i64, nsec: st.st_atime_nsec as u32 },
        ctime: Timespec { sec: st.st_ctime as i64, nsec: st.st_ctime_nsec as u32 },
    })
}

/// Opens the entry `name` of `dir` to read its bytes if it is a regular file, and only
/// then: `(None, meta)` for anything else, which is never opened for reading, so no
/// device driver's `open` runs and no FIFO is waited on. A symlink is not followed.
/// `meta` is the entry's stat taken before the open for reading (see `open_file_in`).
/// Where nobody but root and this user may change `dir`'s entries
/// (`!others_may_write`, from `dir_others_may_write`), nobody else can swap the entry
/// either: it is opened directly (no-follow, non-blocking, no controlling terminal) and
/// stat'ed, two system calls fewer than through `O_PATH` and `/proc`.
pub fn open_file_at(dir: &Dir, name: &CStr, others_may_write: bool) -> Result<(Option<File>, Meta), Errno> {
    if others_may_write {
        return open_file_in(dir.fd.as_fd(), name);
    }
    let fd = match open_read_noatime(dir.fd.as_fd(), name, OFlags::NOFOLLOW | OFlags::NONBLOCK) {
        Ok(fd) => fd,
        // A symlink (ELOOP) or a socket (ENXIO) is not a file: say what it is instead.
        Err(e) if e == Errno::LOOP || e == Errno::NXIO => return open_file_in(dir.fd.as_fd(), name),
        Err(e) => return Err(e),
    };
    let meta = stat_flags(&fd, c"", AtFlags::EMPTY_PATH | AtFlags::STATX_DONT_SYNC)?;
    let file = (meta.kind == Kind::File).then(|| File::from(fd));
    Ok((file, meta))
}

/// `open_file_at` for a path relative to the working directory (a file argument): its
/// last component is not followed.
pub fn open_file_path(path: &CStr) -> Result<(Option<File>, Meta), Errno> {
    open_file_in(CWD, path)
}

/// First an `O_PATH` handle of the entry itself (no-follow; opening it runs no driver
/// code and reads nothing) and its stat; a regular file is then opened for reading
/// through `/proc/self/fd/N`, which reaches exactly the inode of that handle, whatever
/// happened to the name meanwhile. Without procfs (an initramfs, a chroot without
/// /proc) the name is opened again, no-follow, non-blocking and without taking a
/// controlling terminal, and stat'ed once more: what remains there is that a device node
/// put under the name between the two looks would have its driver's `open` run (only
/// someone who may create device nodes, or hard-link one on that file system, can put
/// one there); nothing is read from it, as its second stat is not a regular file's.
fn open_file_in(dirfd: BorrowedFd<'_>, name: &CStr) -> Result<(Option<File>, Meta), Errno> {
    let flags = OFlags::PATH | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    let handle = rustix::fs::openat(dirfd, name, flags, Mode::empty()).map_err(errno)?;
    let meta = stat_flags(&handle, c"", AtFlags::EMPTY_PATH | AtFlags::STATX_DONT_SYNC)?;
    if meta.kind != Kind::File {
        return Ok((None, meta));
    }
    let file = match proc_fd_dir() {
        Some(proc) => {
            let mut digits = itoa_fd(handle.as_raw_fd());
            open_read_noatime(proc.as_fd(), digits.as_cstr(), OFlags::empty())?
        }
        None => {
            let fd = open_read_noatime(dirfd, name, OFlags::NOFOLLOW | OFlags::NONBLOCK)?;
            let again = stat_flags(&fd, c"", AtFlags::EMPTY_PATH | AtFlags::STATX_DONT_SYNC)?;
            if again.kind != Kind::File || (again.dev, again.ino) != (meta.dev, meta.ino) {
                return Ok((None, again));
            }
            fd
        }
    };
    Ok((Some(File::from(file)), meta))
}

/// Opens for reading with `O_NOATIME` when permitted (the file's owner or CAP_FOWNER),
/// plain otherwise; never as a controlling terminal.
fn open_read_noatime(dirfd: BorrowedFd<'_>, name: &CStr, extra: OFlags) -> Result<OwnedFd, Errno> {
    let base = OFlags::RDONLY | OFlags::NOCTTY | OFlags::CLOEXEC | extra;
    match rustix::fs::openat(dirfd, name, base | OFlags::NOATIME, Mode::empty()) {
        Ok(fd) => Ok(fd),
        Err(rustix::io::Errno::PERM) => rustix::fs::openat(dirfd, name, base, Mode::empty()).map_err(errno),
        Err(e) => Err(errno(e)),
    }
}

/// The decimal digits of a descriptor number as a C string, without allocating.
struct FdName([u8; 12]);

impl FdName {
    fn as_cstr(&mut self) -> &CStr {
        CStr::from_bytes_until_nul(&self.0).unwrap_or(c"")
    }
}

fn itoa_fd(fd: i32) -> FdName {
    let mut out = [0u8; 12];
    let mut digits = [0u8; 10];
    let (mut n, mut len) = (fd.unsigned_abs(), 0);
    loop {
        digits[len] = b'0' + (n % 10) as u8;
        len += 1;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    for i in 0..len {
        out[i] = digits[len - 1 - i];
    }
    FdName(out)
}

/// `/proc/self/fd`, opened once for the process (its threads share one descriptor
/// table) and only if it is procfs: a directory of that name on another file system
/// would not hold magic links.
fn proc_fd_dir() -> Option<&'static OwnedFd> {
    static DIR: OnceLock<Option<OwnedFd>> = OnceLock::new();
    DIR.get_or_init(|| {
        let flags = OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC;
        let fd = rustix::fs::openat(CWD, c"/proc/self/fd", flags, Mode::empty()).ok()?;
        let fs = rustix::fs::fstatfs(&fd).ok()?;
        (fs.f_type as u32 == linux_raw_sys::general::PROC_SUPER_MAGIC).then_some(fd)
    })
    .as_ref()
}

impl Lister {
    /// Reads every entry of `dir` (without `.` and `..`), calling `each(name, inode, None)` in
    /// the order the kernel returns them. An error after some entries were delivered is
    /// returned as well; the caller decides what a partial listing means.
    pub fn list(&mut self, dir: &Dir, each: &mut dyn FnMut(&CStr, u64, Option<&Meta>)) -> Result<(), Errno> {
        let mut raw = RawDir::new(&dir.fd, &mut self.buf);
        while let Some(entry) = raw.next() {
            let entry = entry.map_err(errno)?;
            let name = entry.file_name();
            let bytes = name.to_bytes();
            if bytes == b"." || bytes == b".." {
                continue;
            }
            each(name, entry.ino(), None);
        }
        Ok(())
    }
}

/// GNU fts sorts the entries of a big directory by inode number except on file
/// systems where that is known not to help (tmpfs, NFS, CIFS/SMB).
pub fn sorts_by_inode(dir: &Dir) -> bool {
    match rustix::fs::fstatfs(&dir.fd) {
        Ok(fs) => {
            let magic = fs.f_type as u32;
            !matches!(
                magic,
                linux_raw_sys::general::TMPFS_MAGIC
                    | linux_raw_sys::general::NFS_SUPER_MAGIC
                    | linux_raw_sys::general::CIFS_SUPER_MAGIC
                    | linux_raw_sys::general::SMB2_SUPER_MAGIC
            )
        }
        Err(_) => true,
    }
}

/// At most how many entries directory `dir` holds, and at most how many bytes their
/// names take in the arena (`tree::arena::name_cost`: a length byte or three, then the
/// name), from its size and its file system's directory format, where that format
/// bounds them: ext2/3/4, an entry at least 12 bytes of the size and its name in it
/// (`ext4_dir_entry_2`: 8 bytes, the name, padded to 4); XFS, a data entry at least 16
/// bytes (inode number, length, name, file type, tag, padded to 8; the size counts the
/// data blocks); btrfs, the size twice the names' lengths; tmpfs, 20 bytes an entry
/// and names up to 255 bytes. `None` elsewhere, or when the directory cannot be asked.
/// A directory that grows after its size was read can hold more: callers must cope.
pub fn entries_bound(dir: &Dir) -> Option<(u64, u64)> {
    use linux_raw_sys::general as g;
    let size = rustix::fs::fstat(&dir.fd).ok()?.st_size as u64;
    let fs = rustix::fs::fstatfs(&dir.fd).ok()?;
    match fs.f_type as u32 {
        g::EXT4_SUPER_MAGIC => Some((size / 12, size)),
        g::XFS_SUPER_MAGIC => Some((size / 16, size)),
        g::BTRFS_SUPER_MAGIC => Some((size / 2, size)),
        g::TMPFS_MAGIC => Some((size / 20, size / 20 * 258)),
        _ => None,
    }
}

/// Whether `dir` is on one of the kernel's virtual file systems (`--exclude-kernfs`): the
/// ones ncdu leaves out, by `statfs` type. A directory whose type cannot be read is not.
pub fn kernel_fs(dir: &Dir) -> bool {
    use linux_raw_sys::general as g;
    rustix::fs::fstatfs(&dir.fd).is_ok_and(|fs| {
        matches!(
            fs.f_type as u32,
            g::BINFMTFS_MAGIC
                | g::BPF_FS_MAGIC
                | g::CGROUP_SUPER_MAGIC
                | g::CGROUP2_SUPER_MAGIC
                | g::DEBUGFS_MAGIC
                | g::DEVPTS_SUPER_MAGIC
                | g::PROC_SUPER_MAGIC
                | g::PSTOREFS_MAGIC
                | g::SECURITYFS_MAGIC
                | g::SELINUX_MAGIC
                | g::SYSFS_MAGIC
                | g::TRACEFS_MAGIC
        )
    })
}

/// Whether lookups of names in `dir` that miss the cache serialize: on XFS each one locks
/// the buffer of the directory's B-tree root, and threads waiting for it sleep and wake in
/// turn (1M files in one folder, cold: one thread 11.2 s and 8.7 s of CPU, two threads
/// 16.6 s and 16.2 s). The scanner then keeps a cold directory's stats on one thread.
pub fn lookups_serialize(dir: &Dir) -> bool {
    rustix::fs::fstatfs(&dir.fd).is_ok_and(|fs| fs.f_type as u32 == linux_raw_sys::general::XFS_SUPER_MAGIC)
}

/// CPU time this thread has used, in nanoseconds.
pub fn thread_cpu_ns() -> u64 {
    let t = rustix::time::clock_gettime(rustix::time::ClockId::ThreadCPUTime);
    (t.tv_sec as u64).saturating_mul(1_000_000_000).saturating_add(t.tv_nsec as u64)
}

/// Default worker count: four per CPU this process may use (affinity and cgroup quotas
/// are honoured by `available_parallelism`), between 4 and 32. Measured on 2 CPUs (docs/design.md
/// "Threads"): with a warm cache 2 to 8 threads take the same time, and with a cold
/// cache 8 threads take half the time of 2, because the disk gets more requests at once.
pub fn default_threads() -> usize {
    (std::thread::available_parallelism().map_or(1, |n| n.get()) * 4).clamp(4, 32)
}

/// Raises the soft limit on open files to the hard limit, so deep or wide trees rarely
/// need the scanner's re-open path. Returns the soft limit now in force.
pub fn raise_fd_limit() -> u64 {
    use rustix::process::{getrlimit, setrlimit, Resource};
    let mut lim = getrlimit(Resource::Nofile);
    if let (Some(cur), Some(max)) = (lim.current, lim.maximum) {
        if cur < max {
            lim.current = Some(max);
            if setrlimit(Resource::Nofile, lim).is_ok() {
                return max;
            }
            return cur;
        }
    }
    lim.current.unwrap_or(1 << 20)
}

/// How many file descriptors are open now (an inherited one counts against the limit
/// like our own): the entries of /proc/self/fd, less the one that lists them.
pub fn open_fds() -> u64 {
    std::fs::read_dir("/proc/self/fd").map_or(3, |d| (d.count() as u64).saturating_sub(1).max(3))
}

/// Address space this process may still map under its soft `RLIMIT_AS` (the limit less
/// `VmSize` in /proc/self/status); `None` without a limit.
pub fn address_space_left() -> Option<u64> {
    use rustix::process::{getrlimit, Resource};
    let limit = getrlimit(Resource::As).current?;
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find_map(|l| l.strip_prefix("VmSize:"))?;
    let kib: u64 = line.trim().strip_suffix("kB")?.trim().parse().ok()?;
    Some(limit.saturating_sub(kib.saturating_mul(1024)))
}

/// The text GNU libc gives for an error number, so messages read the same as GNU du's
/// whichever C library the binary was linked with (musl words some of these differently).
pub fn errno_text(e: Errno) -> String {
    let text = match e.0 {
        1 => "Operation not permitted",
        2 => "No such file or directory",
        5 => "Input/output error",
        7 => "Argument list too long",
        9 => "Bad file descriptor",
        12 => "Cannot allocate memory",
        13 => "Permission denied",
        14 => "Bad address",
        16 => "Device or resource busy",
        17 => "File exists",
        18 => "Invalid cross-device link",
        19 => "No such device",
        20 => "Not a directory",
        21 => "Is a directory",
        22 => "Invalid argument",
        23 => "Too many open files in system",
        24 => "Too many open files",
        27 => "File too large",
        28 => "No space left on device",
        30 => "Read-only file system",
        36 => "File name too long",
        38 => "Function not implemented",
        39 => "Directory not empty",
        40 => "Too many levels of symbolic links",
        61 => "No data available",
        75 => "Value too large for defined data type",
        95 => "Operation not supported",
        107 => "Transport endpoint is not connected",
        110 => "Connection timed out",
        112 => "Host is down",
        116 => "Stale file handle",
        117 => "Structure needs cleaning",
        121 => "Remote I/O error",
        _ => {
            let s = std::io::Error::from_raw_os_error(e.0).to_string();
            return match s.find(" (os error") {
                Some(cut) => s[..cut].to_string(),
                None => s,
            };
        }
    };
    text.to_string()
}

#[cfg(test)]
mod tests {
    use super::unescape_octal;

    /// The four characters the kernel escapes in `/proc/swaps` and `mountinfo`, and
    /// sequences it never writes, which stay as they are.
    #[test]
    fn proc_names_are_unescaped() {
        assert_eq!(unescape_octal(b"/swap/plain"), b"/swap/plain");
        assert_eq!(unescape_octal(b"/mnt/a\\040b"), b"/mnt/a b");
        assert_eq!(unescape_octal(b"\\011x\\012\\134\\040"), b"\tx\n\\ ");
        assert_eq!(unescape_octal(b"a\\134040"), b"a\\040", "an escaped backslash, then digits");
        assert_eq!(unescape_octal(b"end\\04"), b"end\\04", "too few digits at the end");
        assert_eq!(unescape_octal(b"\\08x\\400\\"), b"\\08x\\400\\", "not octal, or over 255");
        assert_eq!(unescape_octal(b"\\303\\251t\\351"), b"\xc3\xa9t\xe9", "any byte");
    }
}
