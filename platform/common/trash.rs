//! What the browser's trash needs beyond the hash file's calls (`dupes.rs`: `WriteDir`,
//! `open_write_dir`, `open_at_nofollow`): a directory made inside a checked directory
//! handle, a file removed from one, its identity, and an entry moved from a checked
//! handle of the scanned tree into one, never replacing what is there. Linux and macOS
//! do these through their handles; elsewhere they fail with `ENOSYS` (no freedesktop
//! trash there), so the trash is refused with that reason.

use super::dupes::WriteDir;
use crate::meta::Errno;
use std::ffi::{CStr, OsStr};

/// "Function not implemented": where the platform has no such call.
#[cfg(not(any(target_os = "linux", target_os = "macos")))]
const NOSYS: Errno = Errno(38);

/// Makes directory `name` (mode `mode`) in `dir`; EEXIST when anything has that name.
pub fn make_dir_in(dir: &WriteDir, name: &OsStr, mode: u32) -> Result<(), Errno> {
    #[cfg(any(target_os = "linux", target_os = "macos"))]
    {
        use super::dupes::{c_name, errno};
        rustix::fs::mkdirat(&dir.fd, &*c_name(name)?, rustix::fs::Mode::from_bits_truncate(mode as _)).map_err(errno)
    }
    #[cfg(not(any(target_os = "linux", target_os = "macos")))]
    {
        let _ = (dir, name, mode);
        Err(NOSYS)
    }
}

/// Removes the non-directory `name` from `dir` (never following a symlink).
pub fn remove_in(dir: &WriteDir, name: &OsStr) -> Result<(), Errno> {
    #[cfg(any(target_os = "linux", target_os = "macos"))]
    {
        use super::dupes::{c_name, errno};
        rustix::fs::unlinkat(&dir.fd, &*c_name(name)?, rustix::fs::AtFlags::empty()).map_err(errno)
    }
    #[cfg(not(any(target_os = "linux", target_os = "macos")))]
    {
        let _ = (dir, name);
        Err(NOSYS)
    }
}

/// The (device, inode) of `dir`.
pub fn write_dir_id(dir: &WriteDir) -> Result<(u64, u64), Errno> {
    #[cfg(any(target_os = "linux", target_os = "macos"))]
    {
        #[allow(clippy::unnecessary_cast)] // the field types differ between systems
        rustix::fs::fstat(&dir.fd).map(|st| (st.st_dev as u64, st.st_ino as u64)).map_err(super::dupes::errno)
    }
    #[cfg(not(any(target_os = "linux", target_os = "macos")))]
    {
        let _ = dir;
        Err(NOSYS)
    }
}

/// Moves entry `from_name` of `from` (a directory of the scanned tree, opened through
/// checked handles) to `to_name` in `to`, in one `rename` that fails with EEXIST instead
/// of replacing anything and with EXDEV across file systems: nothing is ever copied.
pub fn move_into(from: &crate::platform::Dir, from_name: &CStr, to: &WriteDir, to_name: &OsStr) -> Result<(), Errno> {
    #[cfg(any(target_os = "linux", target_os = "macos"))]
    {
        use super::dupes::{c_name, errno};
        let flags = rustix::fs::RenameFlags::NOREPLACE;
        rustix::fs::renameat_with(&from.fd, from_name, &to.fd, &*c_name(to_name)?, flags).map_err(errno)
    }
    #[cfg(not(any(target_os = "linux", target_os = "macos")))]
    {
        let _ = (from, from_name, to, to_name);
        Err(NOSYS)
    }
}
