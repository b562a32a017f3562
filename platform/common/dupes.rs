//! What `linux/dupes.rs` and `fallback/dupes.rs` have in common: the types of the `dupes`
//! contract (`FileCheck`, `Layout` of `meta::Extent`s, `DedupeStatus`, `MAX_DEDUPE_DESTS`), the
//! hash file's lock, which is `flock` on every Unix, and the hash file's directory handle
//! (`WriteDir`, `Owner` and the calls on them but `replace_in`, which differs: Linux has
//! `O_TMPFILE`). One definition, so that the Linux and the std
//! backends cannot drift apart; each backend fills these types its own way.

use super::io_errno;
use crate::meta::{Errno, Extent, Kind};
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
    /// Allocated blocks of 512 bytes (a hole takes none); 0 where the OS does not say.
    pub blocks_512: u64,
}

/// Where a file's data is, as far as sharing goes.
#[cfg_attr(not(target_os = "linux"), allow(dead_code))] // the std backend says Unknown
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Layout {
    /// Its extents (not empty; only Linux produces them), each with no flag but
    /// `Extent::SHARED` kept, so that two layouts compare equal exactly when they are the
    /// same blocks and agree on being shared.
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

// ---------------------------------------------------------------------------------------
// Files dfdu writes (the hash file). Everything is done relative to one handle on the
// directory, so a name swapped for a symlink between two calls is never followed: the
// last component is opened with `O_NOFOLLOW`, created only with `O_CREAT|O_EXCL`, and
// the new contents go to a file that can only be new and ours before `replace_in`
// renames it into place. The directory part of the path is resolved as the
// user gave it; whether to trust what is found there is `cache.rs`'s policy, from
// `Owner`. On Windows the same calls go through `std::fs` and there are no owners.

/// The directory holding a file that dfdu writes.
pub struct WriteDir {
    #[cfg(unix)]
    pub(in crate::platform) fd: rustix::fd::OwnedFd,
    #[cfg(not(unix))]
    pub(in crate::platform) path: std::path::PathBuf,
}

/// Who may change a file or directory: its owner and its permission bits (`st_mode`
/// without the type).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Owner {
    pub uid: u32,
    pub mode: u32,
}

/// A new file of ours that no other name reaches yet; `replace_in` puts it in place.
pub(in crate::platform) struct TempFile {
    pub(in crate::platform) file: File,
    /// Its name in the directory; `None` for an unnamed `O_TMPFILE` (Linux).
    pub(in crate::platform) name: Option<std::ffi::OsString>,
}

/// Mode of every file created here: the facts a hash file holds about other users' files
/// (inode numbers, sizes, hashes) are for its owner only.
#[cfg(unix)]
pub(in crate::platform) const WRITE_MODE: u32 = 0o600;

#[cfg(unix)]
pub(in crate::platform) fn errno(e: rustix::io::Errno) -> Errno {
    Errno(e.raw_os_error())
}

#[cfg(unix)]
pub(in crate::platform) fn c_name(name: &std::ffi::OsStr) -> Result<std::ffi::CString, Errno> {
    use std::os::unix::ffi::OsStrExt;
    std::ffi::CString::new(name.as_bytes()).map_err(|_| Errno::INVAL)
}

/// Why `open_write_dir` did not open the directory.
#[derive(Debug)]
pub enum WalkError {
    Os(Errno),
    /// The judge refused a step, for this reason (never without Unix owners).
    #[cfg_attr(not(unix), allow(dead_code))]
    Refused(String),
}

/// Symbolic links followed on the way before ELOOP, as the kernel allows.
#[cfg(unix)]
const MAX_LINKS: u32 = 40;

/// Opens the directory `path` one name at a time, each looked up relative to the handle
/// on the directory before it and never followed by the kernel: `judge(name_so_far, dir,
/// entry)` sees the owner of each directory a name is looked up in and of what the name
/// is, and may refuse the step (another user could swap that name). A symlink the judge
/// accepts is read and its target walked the same way. Without Unix owners (Windows) the
/// directory is opened as named and `judge` is not called.
pub fn open_write_dir(
    path: &std::path::Path,
    judge: &mut dyn FnMut(&std::path::Path, Owner, Owner) -> Option<String>,
) -> Result<WriteDir, WalkError> {
    #[cfg(unix)]
    return walk_dirs(path, judge);
    #[cfg(not(unix))]
    {
        let _ = judge;
        match std::fs::metadata(path) {
            Ok(m) if m.is_dir() => Ok(WriteDir { path: path.to_path_buf() }),
            Ok(_) => Err(WalkError::Os(Errno::NOTDIR)),
            Err(e) => Err(WalkError::Os(io_errno(e))),
        }
    }
}

/// Flags for a directory handle that is only looked up in: `O_PATH` on Linux (search
/// permission is enough), read-only elsewhere.
#[cfg(unix)]
fn lookup_flags() -> rustix::fs::OFlags {
    use rustix::fs::OFlags;
    #[cfg(target_os = "linux")]
    let base = OFlags::PATH;
    #[cfg(not(target_os = "linux"))]
    let base = OFlags::RDONLY;
    base | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC
}

#[cfg(unix)]
fn walk_dirs(
    path: &std::path::Path,
    judge: &mut dyn FnMut(&std::path::Path, Owner, Owner) -> Option<String>,
) -> Result<WriteDir, WalkError> {
    use rustix::fs::{AtFlags, Mode, CWD};
    use std::path::{Component, PathBuf};
    let os = |e: rustix::io::Errno| WalkError::Os(errno(e));
    let open_at = |dir: &rustix::fd::OwnedFd, name: &std::ffi::OsStr| {
        rustix::fs::openat(dir, &*c_name(name).map_err(WalkError::Os)?, lookup_flags(), Mode::empty()).map_err(os)
    };
    let root = |p: &std::path::Path| if p.has_root() { "/" } else { "." };
    let mut cur = rustix::fs::openat(CWD, root(path), lookup_flags(), Mode::empty()).map_err(os)?;
    let mut shown = PathBuf::from(if path.has_root() { "/" } else { "" });
    // Names still to walk, the next one last.
    let names = |p: &std::path::Path| -> Vec<std::ffi::OsString> {
        let mut v: Vec<_> = p
            .components()
            .filter_map(|c| match c {
                Component::Normal(n) => Some(n.to_os_string()),
                Component::ParentDir => Some("..".into()),
                _ => None,
            })
            .collect();
        v.reverse();
        v
    };
    let mut todo = names(path);
    let mut links = 0;
    while let Some(name) = todo.pop() {
        let dir = owner_of(&rustix::fs::fstat(&cur).map_err(os)?);
        let st =
            rustix::fs::statat(&cur, &*c_name(&name).map_err(WalkError::Os)?, AtFlags::SYMLINK_NOFOLLOW).map_err(os)?;
        if let Some(why) = judge(&shown.join(&name), dir, owner_of(&st)) {
            return Err(WalkError::Refused(why));
        }
        #[allow(clippy::unnecessary_cast)] // the field types differ between systems
        let is_link = Kind::from_mode(st.st_mode as u32) == Kind::Symlink;
        if is_link {
            links += 1;
            if links > MAX_LINKS {
                return Err(WalkError::Os(Errno::LOOP));
            }
            let target =
                rustix::fs::readlinkat(&cur, &*c_name(&name).map_err(WalkError::Os)?, Vec::new()).map_err(os)?;
            let target =
                PathBuf::from(<std::ffi::OsStr as std::os::unix::ffi::OsStrExt>::from_bytes(target.as_bytes()));
            if target.has_root() {
                cur = rustix::fs::openat(CWD, "/", lookup_flags(), Mode::empty()).map_err(os)?;
                shown = PathBuf::from("/");
            }
            todo.extend(names(&target));
            continue;
        }
        let next = open_at(&cur, &name)?;
        // The name may have been swapped for another directory since it was judged.
        let now = rustix::fs::fstat(&next).map_err(os)?;
        if (now.st_dev, now.st_ino) != (st.st_dev, st.st_ino) {
            return Err(WalkError::Os(Errno::AGAIN));
        }
        cur = next;
        shown.push(&name);
    }
    Ok(WriteDir { fd: cur })
}

#[cfg(unix)]
#[allow(clippy::unnecessary_cast)] // the field types differ between systems
fn owner_of(st: &rustix::fs::Stat) -> Owner {
    Owner { uid: st.st_uid as u32, mode: st.st_mode as u32 & 0o7777 }
}

/// The directory's owner and mode; `None` where the OS has no Unix owners.
pub fn write_dir_owner(dir: &WriteDir) -> Option<Owner> {
    #[cfg(unix)]
    return rustix::fs::fstat(&dir.fd).ok().map(|st| owner_of(&st));
    #[cfg(not(unix))]
    {
        let _ = dir;
        None
    }
}

/// An open file's owner and mode; `None` where the OS has no Unix owners.
pub fn file_owner(file: &File) -> Option<Owner> {
    #[cfg(unix)]
    return rustix::fs::fstat(file).ok().map(|st| owner_of(&st));
    #[cfg(not(unix))]
    {
        let _ = file;
        None
    }
}

/// The user whose files this process creates; `None` where the OS has no Unix owners.
pub fn effective_uid() -> Option<u32> {
    #[cfg(unix)]
    return Some(rustix::process::geteuid().as_raw());
    #[cfg(not(unix))]
    None
}

/// The entry `name` of `dir` itself (a symlink is reported as one, not followed):
/// kind, identity, size and times; `Ok(None)` when there is no such entry.
pub fn entry_at(dir: &WriteDir, name: &std::ffi::OsStr) -> Result<Option<FileCheck>, Errno> {
    #[cfg(unix)]
    {
        #[allow(clippy::unnecessary_cast)] // the field types differ between systems
        match rustix::fs::statat(&dir.fd, &*c_name(name)?, rustix::fs::AtFlags::SYMLINK_NOFOLLOW) {
            Ok(st) => Ok(Some(FileCheck {
                kind: Kind::from_mode(st.st_mode as u32),
                dev: st.st_dev as u64,
                ino: st.st_ino as u64,
                size: st.st_size as u64,
                mtime_ns: crate::meta::Timespec { sec: st.st_mtime as i64, nsec: st.st_mtime_nsec as u32 }.as_ns(),
                ctime_ns: crate::meta::Timespec { sec: st.st_ctime as i64, nsec: st.st_ctime_nsec as u32 }.as_ns(),
                pinned: false,
                blocks_512: st.st_blocks as u64,
            })),
            Err(rustix::io::Errno::NOENT) => Ok(None),
            Err(e) => Err(errno(e)),
        }
    }
    #[cfg(not(unix))]
    {
        match std::fs::symlink_metadata(dir.path.join(name)) {
            Ok(m) => {
                let kind = if m.is_symlink() {
                    Kind::Symlink
                } else if m.is_dir() {
                    Kind::Dir
                } else if m.is_file() {
                    Kind::File
                } else {
                    Kind::Other
                };
                Ok(Some(FileCheck {
                    kind,
                    dev: 0,
                    ino: 0,
                    size: m.len(),
                    mtime_ns: 0,
                    ctime_ns: 0,
                    pinned: false,
                    blocks_512: 0,
                }))
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(io_errno(e)),
        }
    }
}

/// Opens the entry `name` of `dir` for reading and writing without following a symlink
/// (ELOOP) and without waiting on a FIFO; with `create_new`, creates it (mode 0600) and
/// fails with EEXIST when anything, a dangling symlink included, has that name already.
pub fn open_at_nofollow(dir: &WriteDir, name: &std::ffi::OsStr, create_new: bool) -> Result<File, Errno> {
    #[cfg(unix)]
    {
        use rustix::fs::{Mode, OFlags};
        let mut flags = OFlags::RDWR | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC | OFlags::NOCTTY;
        if create_new {
            flags |= OFlags::CREATE | OFlags::EXCL;
        }
        let fd = rustix::fs::openat(&dir.fd, &*c_name(name)?, flags, Mode::from_bits_truncate(WRITE_MODE as _))
            .map_err(errno)?;
        Ok(File::from(fd))
    }
    #[cfg(not(unix))]
    {
        use std::os::windows::fs::OpenOptionsExt;
        // FILE_FLAG_OPEN_REPARSE_POINT: a symbolic link is opened itself, not followed.
        const OPEN_REPARSE_POINT: u32 = 0x0020_0000;
        let mut opts = std::fs::OpenOptions::new();
        opts.read(true).write(true).create_new(create_new).custom_flags(OPEN_REPARSE_POINT);
        opts.open(dir.path.join(name)).map_err(io_errno)
    }
}

/// A name for a temporary file next to `base` that another user cannot guess:
/// `.BASE.` and 16 hex digits from std's per-process random hash keys.
pub(in crate::platform) fn random_name(base: &std::ffi::OsStr, attempt: u32) -> std::ffi::OsString {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u32(std::process::id());
    h.write_u32(attempt);
    if let Ok(t) = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH) {
        h.write_u128(t.as_nanos());
    }
    let mut name = std::ffi::OsString::from(".");
    name.push(base);
    name.push(format!(".{:016x}", h.finish()));
    name
}

/// Names tried for a new temporary file before giving up (each taken name is EEXIST).
pub(in crate::platform) const TEMP_ATTEMPTS: u32 = 32;

/// A new file in `dir` under a random name, created with `O_CREAT|O_EXCL|O_NOFOLLOW`
/// (mode 0600): whatever another user put under that name, it is never opened.
pub(in crate::platform) fn named_temp_in(dir: &WriteDir, base: &std::ffi::OsStr) -> Result<TempFile, Errno> {
    let mut last = Errno::EXIST;
    for attempt in 0..TEMP_ATTEMPTS {
        let name = random_name(base, attempt);
        match open_at_nofollow(dir, &name, true) {
            Ok(file) => return Ok(TempFile { file, name: Some(name) }),
            Err(e) if e == Errno::EXIST => last = e,
            Err(e) => return Err(e),
        }
    }
    Err(last)
}

/// Renames the entry `from` of `dir` over `to`, both relative to the handle; on failure
/// the temporary name is removed.
pub(in crate::platform) fn rename_in(
    dir: &WriteDir,
    from: &std::ffi::OsStr,
    to: &std::ffi::OsStr,
) -> Result<(), Errno> {
    #[cfg(unix)]
    let renamed = rustix::fs::renameat(&dir.fd, &*c_name(from)?, &dir.fd, &*c_name(to)?).map_err(errno);
    #[cfg(not(unix))]
    let renamed = std::fs::rename(dir.path.join(from), dir.path.join(to)).map_err(io_errno);
    if renamed.is_err() {
        remove_in(dir, from);
    }
    renamed
}

/// Writes `bytes` to `tmp` and returns its name in `dir`, giving an unnamed one a name
/// with `name_unnamed`. A named temporary that could not be filled is removed.
pub(in crate::platform) fn fill_temp(
    dir: &WriteDir,
    tmp: TempFile,
    bytes: &[u8],
    name_unnamed: impl FnOnce(&File) -> Result<std::ffi::OsString, Errno>,
) -> Result<std::ffi::OsString, Errno> {
    use std::io::Write;
    let TempFile { mut file, name } = tmp;
    let written = file.write_all(bytes).map_err(io_errno);
    match (written, name) {
        (Ok(()), Some(name)) => Ok(name),
        (Ok(()), None) => name_unnamed(&file),
        (Err(e), Some(name)) => {
            drop(file);
            remove_in(dir, &name);
            Err(e)
        }
        (Err(e), None) => Err(e),
    }
}

/// Removes the entry `name` of `dir` (a temporary of ours), if it is there.
fn remove_in(dir: &WriteDir, name: &std::ffi::OsStr) {
    #[cfg(unix)]
    if let Ok(c) = c_name(name) {
        let _ = rustix::fs::unlinkat(&dir.fd, &*c, rustix::fs::AtFlags::empty());
    }
    #[cfg(not(unix))]
    let _ = std::fs::remove_file(dir.path.join(name));
}
