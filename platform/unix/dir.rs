//! Directory handles as Linux and macOS both open them: relative to the parent
//! (`openat`), no-follow unless asked, close-on-exec, non-blocking; their identity and
//! removal for the browser's delete; and the default SIGPIPE action. The listing and
//! the stat are each system's own (`linux/dir.rs`, `macos/dir.rs`).

use crate::meta::Errno;
use crate::platform::Follow;
use rustix::fd::OwnedFd;
use rustix::fs::{AtFlags, Mode, OFlags, CWD};
use std::ffi::{c_int, CStr};

/// An open directory handle.
pub struct Dir {
    pub(in crate::platform) fd: OwnedFd,
}

pub(in crate::platform) fn errno(e: rustix::io::Errno) -> Errno {
    Errno(e.raw_os_error())
}

fn dir_flags(follow: Follow) -> OFlags {
    let base = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC | OFlags::NONBLOCK;
    if follow == Follow::Yes {
        base
    } else {
        base | OFlags::NOFOLLOW
    }
}

/// Opens a directory named by a path relative to the working directory.
pub fn open_path(path: &CStr, follow: Follow) -> Result<Dir, Errno> {
    rustix::fs::openat(CWD, path, dir_flags(follow), Mode::empty()).map(|fd| Dir { fd }).map_err(errno)
}

/// Opens the directory `name` inside `parent`.
pub fn open_at(parent: &Dir, name: &CStr, follow: Follow) -> Result<Dir, Errno> {
    rustix::fs::openat(&parent.fd, name, dir_flags(follow), Mode::empty()).map(|fd| Dir { fd }).map_err(errno)
}

/// Opens `name` in `dirfd` to read its bytes: no-follow, non-blocking (a FIFO put in a
/// file's place does not wait for a writer), never as a controlling terminal. For macOS,
/// which has no `O_PATH`, and on every Unix inside a directory nobody else may change.
#[cfg_attr(target_os = "linux", allow(dead_code))] // Linux adds O_NOATIME
pub(in crate::platform) fn open_file_plain(dirfd: rustix::fd::BorrowedFd<'_>, name: &CStr) -> Result<OwnedFd, Errno> {
    let flags = OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::NOCTTY | OFlags::CLOEXEC;
    rustix::fs::openat(dirfd, name, flags, Mode::empty()).map_err(errno)
}

/// (device, inode) of an open directory, as `stat_at` reports them (for the browser's
/// delete check).
// The field widths differ between the systems (macOS: a 32-bit device number).
#[allow(clippy::unnecessary_cast)]
pub fn dir_id(dir: &Dir) -> Result<(u64, u64), Errno> {
    let st = rustix::fs::fstat(&dir.fd).map_err(errno)?;
    Ok((st.st_dev as u64, st.st_ino as u64))
}

/// Whether anyone but root and this process's effective user may add, remove or rename
/// entries of `dir`: it belongs to another user, or its group or others may write it (a
/// POSIX ACL that lets a user or group write shows in the group bits).
pub fn dir_others_may_write(dir: &Dir) -> Result<bool, Errno> {
    let st = rustix::fs::fstat(&dir.fd).map_err(errno)?;
    let owner = st.st_uid;
    Ok((owner != 0 && owner != rustix::process::geteuid().as_raw()) || st.st_mode & 0o022 != 0)
}

/// Removes the entry `name` of `dir` itself, never what it points to: an empty
/// directory when `is_dir`, anything else (a symlink is unlinked, not followed) when not.
pub fn remove_at(dir: &Dir, name: &CStr, is_dir: bool) -> Result<(), Errno> {
    let flags = if is_dir { AtFlags::REMOVEDIR } else { AtFlags::empty() };
    rustix::fs::unlinkat(&dir.fd, name, flags).map_err(errno)
}

/// Makes `to` in `to_dir` one more name of what `from` names in `from_dir`, never
/// following a symlink (one is linked itself); EEXIST when `to` exists, so that a new
/// temporary name is only ever one of ours.
pub fn link_at(from_dir: &Dir, from: &CStr, to_dir: &Dir, to: &CStr) -> Result<(), Errno> {
    rustix::fs::linkat(&from_dir.fd, from, &to_dir.fd, to, AtFlags::empty()).map_err(errno)
}

/// Creates the symbolic link `name` in `dir` pointing at `target`; EEXIST when `name`
/// exists.
pub fn symlink_at(target: &CStr, dir: &Dir, name: &CStr) -> Result<(), Errno> {
    rustix::fs::symlinkat(target, &dir.fd, name).map_err(errno)
}

/// Renames `from` to `to` within `dir`, replacing what `to` names in one step (no
/// moment without `to`).
pub fn rename_at(dir: &Dir, from: &CStr, to: &CStr) -> Result<(), Errno> {
    rustix::fs::renameat(&dir.fd, from, &dir.fd, to).map_err(errno)
}

extern "C" {
    fn signal(signum: c_int, handler: usize) -> usize;
}

/// Restores the default action for SIGPIPE (Rust's runtime ignores it), so that a closed
/// pipe ends dfdu silently the way it ends GNU du.
pub fn default_sigpipe() {
    const SIGPIPE: c_int = 13;
    const SIG_DFL: usize = 0;
    // SAFETY: setting SIGPIPE back to SIG_DFL installs no handler code; it only changes
    // the kernel's disposition for a signal this process does not otherwise use.
    unsafe {
        signal(SIGPIPE, SIG_DFL);
    }
}

/// Moves entry `from_name` of `from` (a directory of the scanned tree, opened through
/// checked handles) to `to_name` in `to`, in one `rename` that fails with EEXIST instead
/// of replacing anything and with EXDEV across file systems: nothing is ever copied.
pub fn move_into(
    from: &Dir,
    from_name: &CStr,
    to: &super::write::WriteDir,
    to_name: &std::ffi::OsStr,
) -> Result<(), Errno> {
    let to_name = super::write::c_name(to_name)?;
    rustix::fs::renameat_with(&from.fd, from_name, &to.fd, &*to_name, rustix::fs::RenameFlags::NOREPLACE).map_err(errno)
}
