//! Files dfdu writes (the hash file, the browser's trash), on every Unix: everything is
//! done relative to one handle on the directory, so a name swapped for a symlink between
//! two calls is never followed. The last component is opened with `O_NOFOLLOW`, created
//! only with `O_CREAT|O_EXCL`, and new contents go to a file that can only be new and
//! ours before `replace_in` renames it into place. The directory part of the path is
//! walked one name at a time by `open_write_dir`; whether to trust what is found there is
//! the caller's policy (the judge it passes), from each step's `Owner`.
//!
//! Taken in by the Linux and macOS backends (through `unix/mod.rs`) and by `fallback/` on
//! any other Unix, so it reaches nothing of a backend's own: only `crate::platform`'s
//! OS-neutral types. Linux replaces `replace_in` with its `O_TMPFILE` one.

use crate::meta::{Errno, Kind};
use crate::platform::{io_errno, random_name, FileCheck, Owner, WalkError, TEMP_ATTEMPTS};
use rustix::fs::{AtFlags, Mode, OFlags, CWD};
use std::ffi::{CString, OsStr, OsString};
use std::fs::File;
use std::path::{Component, Path, PathBuf};

/// The directory holding a file that dfdu writes.
pub struct WriteDir {
    pub(in crate::platform) fd: rustix::fd::OwnedFd,
}

/// A new file of ours that no other name reaches yet; `replace_in` puts it in place.
pub(in crate::platform) struct TempFile {
    pub(in crate::platform) file: File,
    /// Its name in the directory; `None` for an unnamed `O_TMPFILE` (Linux).
    pub(in crate::platform) name: Option<OsString>,
}

/// Mode of every file created here: the facts a hash file holds about other users' files
/// (inode numbers, sizes, hashes) are for its owner only.
pub(in crate::platform) const WRITE_MODE: u32 = 0o600;

/// Symbolic links followed on the way before ELOOP, as the kernel allows.
const MAX_LINKS: u32 = 40;

/// Flags for a directory handle that is only looked up in: `O_PATH` on Linux (search
/// permission is enough), read-only elsewhere.
#[cfg(target_os = "linux")]
const LOOKUP_FLAGS: OFlags = OFlags::PATH.union(OFlags::DIRECTORY).union(OFlags::NOFOLLOW).union(OFlags::CLOEXEC);
#[cfg(not(target_os = "linux"))]
const LOOKUP_FLAGS: OFlags = OFlags::RDONLY.union(OFlags::DIRECTORY).union(OFlags::NOFOLLOW).union(OFlags::CLOEXEC);

fn errno(e: rustix::io::Errno) -> Errno {
    Errno(e.raw_os_error())
}

pub(in crate::platform) fn c_name(name: &OsStr) -> Result<CString, Errno> {
    use std::os::unix::ffi::OsStrExt;
    CString::new(name.as_bytes()).map_err(|_| Errno::INVAL)
}

#[allow(clippy::unnecessary_cast)] // the field types differ between systems
fn owner_of(st: &rustix::fs::Stat) -> Owner {
    Owner { uid: st.st_uid as u32, mode: st.st_mode as u32 & 0o7777 }
}

/// An exclusive `flock` on `file`; `Ok(false)` when `wait` is false and another process
/// holds it.
pub fn lock_file(file: &File, wait: bool) -> Result<bool, Errno> {
    use rustix::fs::FlockOperation;
    let op = if wait { FlockOperation::LockExclusive } else { FlockOperation::NonBlockingLockExclusive };
    match rustix::fs::flock(file, op) {
        Ok(()) => Ok(true),
        Err(rustix::io::Errno::WOULDBLOCK) if !wait => Ok(false),
        Err(e) => Err(errno(e)),
    }
}

/// The names of `p` still to walk, the next one last.
fn names_of(p: &Path) -> Vec<OsString> {
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
}

/// Opens the directory `path` one name at a time, each looked up relative to the handle
/// on the directory before it and never followed by the kernel: `judge(name_so_far, dir,
/// entry)` sees the owner of each directory a name is looked up in and of what the name
/// is, and may refuse the step (another user could swap that name). A symlink the judge
/// accepts is read and its target walked the same way.
pub fn open_write_dir(
    path: &Path,
    judge: &mut dyn FnMut(&Path, Owner, Owner) -> Option<String>,
) -> Result<WriteDir, WalkError> {
    let os = |e: rustix::io::Errno| WalkError::Os(errno(e));
    let c = |name: &OsStr| c_name(name).map_err(WalkError::Os);
    let mut cur =
        rustix::fs::openat(CWD, if path.has_root() { "/" } else { "." }, LOOKUP_FLAGS, Mode::empty()).map_err(os)?;
    let mut shown = PathBuf::from(if path.has_root() { "/" } else { "" });
    let mut todo = names_of(path);
    let mut links = 0;
    while let Some(name) = todo.pop() {
        let dir = owner_of(&rustix::fs::fstat(&cur).map_err(os)?);
        let st = rustix::fs::statat(&cur, &*c(&name)?, AtFlags::SYMLINK_NOFOLLOW).map_err(os)?;
        if let Some(why) = judge(&shown.join(&name), dir, owner_of(&st)) {
            return Err(WalkError::Refused(why));
        }
        #[allow(clippy::unnecessary_cast)] // the field types differ between systems
        if Kind::from_mode(st.st_mode as u32) == Kind::Symlink {
            links += 1;
            if links > MAX_LINKS {
                return Err(WalkError::Os(Errno::LOOP));
            }
            let target = rustix::fs::readlinkat(&cur, &*c(&name)?, Vec::new()).map_err(os)?;
            let target = PathBuf::from(<OsStr as std::os::unix::ffi::OsStrExt>::from_bytes(target.as_bytes()));
            if target.has_root() {
                cur = rustix::fs::openat(CWD, "/", LOOKUP_FLAGS, Mode::empty()).map_err(os)?;
                shown = PathBuf::from("/");
            }
            todo.extend(names_of(&target));
            continue;
        }
        let next = rustix::fs::openat(&cur, &*c(&name)?, LOOKUP_FLAGS, Mode::empty()).map_err(os)?;
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

/// The directory's owner and mode.
pub fn write_dir_owner(dir: &WriteDir) -> Option<Owner> {
    rustix::fs::fstat(&dir.fd).ok().map(|st| owner_of(&st))
}

/// An open file's owner and mode.
pub fn file_owner(file: &File) -> Option<Owner> {
    rustix::fs::fstat(file).ok().map(|st| owner_of(&st))
}

/// The user whose files this process creates.
pub fn effective_uid() -> Option<u32> {
    Some(rustix::process::geteuid().as_raw())
}

/// The (device, inode) of `dir`.
pub fn write_dir_id(dir: &WriteDir) -> Result<(u64, u64), Errno> {
    #[allow(clippy::unnecessary_cast)] // the field types differ between systems
    rustix::fs::fstat(&dir.fd).map(|st| (st.st_dev as u64, st.st_ino as u64)).map_err(errno)
}

/// The entry `name` of `dir` itself (a symlink is reported as one, not followed):
/// kind, identity, size and times; `Ok(None)` when there is no such entry.
#[allow(clippy::unnecessary_cast)] // the field types differ between systems
pub fn entry_at(dir: &WriteDir, name: &OsStr) -> Result<Option<FileCheck>, Errno> {
    let ns = |sec, nsec| crate::meta::Timespec { sec, nsec }.as_ns();
    match rustix::fs::statat(&dir.fd, &*c_name(name)?, AtFlags::SYMLINK_NOFOLLOW) {
        Ok(st) => Ok(Some(FileCheck {
            kind: Kind::from_mode(st.st_mode as u32),
            dev: st.st_dev as u64,
            ino: st.st_ino as u64,
            size: st.st_size as u64,
            mtime_ns: ns(st.st_mtime as i64, st.st_mtime_nsec as u32),
            ctime_ns: ns(st.st_ctime as i64, st.st_ctime_nsec as u32),
            pinned: false,
            blocks_512: st.st_blocks as u64,
        })),
        Err(rustix::io::Errno::NOENT) => Ok(None),
        Err(e) => Err(errno(e)),
    }
}

/// Opens the entry `name` of `dir` for reading and writing without following a symlink
/// (ELOOP) and without waiting on a FIFO; with `create_new`, creates it (mode 0600) and
/// fails with EEXIST when anything, a dangling symlink included, has that name already.
pub fn open_at_nofollow(dir: &WriteDir, name: &OsStr, create_new: bool) -> Result<File, Errno> {
    open_nofollow(dir, name, create_new, WRITE_MODE)
}

/// `open_at_nofollow`, a new file taking `mode` (less the umask).
fn open_nofollow(dir: &WriteDir, name: &OsStr, create_new: bool, mode: u32) -> Result<File, Errno> {
    let mut flags = OFlags::RDWR | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC | OFlags::NOCTTY;
    if create_new {
        flags |= OFlags::CREATE | OFlags::EXCL;
    }
    let fd = rustix::fs::openat(&dir.fd, &*c_name(name)?, flags, Mode::from_bits_truncate(mode as _)).map_err(errno)?;
    Ok(File::from(fd))
}

/// Opens the entry `name` of `dir` to read it, without following a symlink (ELOOP),
/// waiting on a FIFO or taking a terminal; whether it is a regular file is the caller's
/// check (`check_file`).
pub fn open_read_in(dir: &WriteDir, name: &OsStr) -> Result<File, Errno> {
    let flags = OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC | OFlags::NOCTTY;
    let fd = rustix::fs::openat(&dir.fd, &*c_name(name)?, flags, Mode::empty()).map_err(errno)?;
    Ok(File::from(fd))
}

/// Opens the existing entry `name` of `dir` to write into it where it is (a device or
/// a FIFO: a FIFO waits for its reader), without following a symlink (ELOOP), creating
/// or truncating anything, or taking a terminal.
pub fn open_write_in(dir: &WriteDir, name: &OsStr) -> Result<File, Errno> {
    let flags = OFlags::WRONLY | OFlags::NOFOLLOW | OFlags::CLOEXEC | OFlags::NOCTTY;
    let fd = rustix::fs::openat(&dir.fd, &*c_name(name)?, flags, Mode::empty()).map_err(errno)?;
    Ok(File::from(fd))
}

/// Makes directory `name` (mode `mode`) in `dir`; EEXIST when anything has that name.
pub fn make_dir_in(dir: &WriteDir, name: &OsStr, mode: u32) -> Result<(), Errno> {
    rustix::fs::mkdirat(&dir.fd, &*c_name(name)?, Mode::from_bits_truncate(mode as _)).map_err(errno)
}

/// Removes the non-directory `name` from `dir` (never following a symlink).
pub fn remove_in(dir: &WriteDir, name: &OsStr) -> Result<(), Errno> {
    rustix::fs::unlinkat(&dir.fd, &*c_name(name)?, AtFlags::empty()).map_err(errno)
}

/// A new file in `dir` under a random name, created with `O_CREAT|O_EXCL|O_NOFOLLOW`
/// (mode 0600): whatever another user put under that name, it is never opened.
pub(in crate::platform) fn named_temp_in(dir: &WriteDir, base: &OsStr) -> Result<TempFile, Errno> {
    create_temp_in(dir, base, WRITE_MODE).map(|(file, name)| TempFile { file, name: Some(name) })
}

/// A new file in `dir` under a random name next to `base` (`.BASE.` and 16 hex digits),
/// created with `O_CREAT|O_EXCL|O_NOFOLLOW` and `mode` (less the umask): whatever another
/// user put under that name, it is never opened. `rename_in` puts it in `base`'s place.
pub fn create_temp_in(dir: &WriteDir, base: &OsStr, mode: u32) -> Result<(File, OsString), Errno> {
    let mut last = Errno::EXIST;
    for attempt in 0..TEMP_ATTEMPTS {
        let name = random_name(base, attempt);
        match open_nofollow(dir, &name, true, mode) {
            Ok(file) => return Ok((file, name)),
            Err(e) if e == Errno::EXIST => last = e,
            Err(e) => return Err(e),
        }
    }
    Err(last)
}

/// Writes `bytes` to `tmp` and returns its name in `dir`, giving an unnamed one a name
/// with `name_unnamed`. A named temporary that could not be filled is removed.
pub(in crate::platform) fn fill_temp(
    dir: &WriteDir,
    tmp: TempFile,
    bytes: &[u8],
    name_unnamed: impl FnOnce(&File) -> Result<OsString, Errno>,
) -> Result<OsString, Errno> {
    use std::io::Write;
    let TempFile { mut file, name } = tmp;
    let written = file.write_all(bytes).map_err(io_errno);
    match (written, name) {
        (Ok(()), Some(name)) => Ok(name),
        (Ok(()), None) => name_unnamed(&file),
        (Err(e), Some(name)) => {
            drop(file);
            let _ = remove_in(dir, &name);
            Err(e)
        }
        (Err(e), None) => Err(e),
    }
}

/// Renames the entry `from` of `dir` over `to`, both relative to the handle (whatever `to`
/// is, a symlink included, is replaced, never followed); on failure `from`, a temporary
/// of ours, is removed.
pub fn rename_in(dir: &WriteDir, from: &OsStr, to: &OsStr) -> Result<(), Errno> {
    let renamed = rustix::fs::renameat(&dir.fd, &*c_name(from)?, &dir.fd, &*c_name(to)?).map_err(errno);
    if renamed.is_err() {
        let _ = remove_in(dir, from);
    }
    renamed
}

/// Replaces the entry `name` of `dir` with a new file holding `bytes`, written under a
/// random name that `O_CREAT|O_EXCL|O_NOFOLLOW` makes ours, then renamed into place
/// relative to the handle: whatever had that name is replaced, never followed. Then lets
/// go of `lock`, the old file's lock, so that a run waiting for it finds the new file.
#[cfg_attr(target_os = "linux", allow(dead_code))] // Linux has its O_TMPFILE one
pub fn replace_in(dir: &WriteDir, name: &OsStr, bytes: &[u8], lock: File) -> Result<(), Errno> {
    let tmp = named_temp_in(dir, name)?;
    let from = fill_temp(dir, tmp, bytes, |_| Err(Errno::INVAL))?;
    let renamed = rename_in(dir, &from, name);
    drop(lock);
    renamed
}
