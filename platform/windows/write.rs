//! Files dfdu writes, on Windows: `fallback/write.rs` (by paths through std, no owners,
//! no lock) but for opening an existing file, which here never follows a reparse point,
//! and the browser's trash, which is not offered (but for `remove_in`) (there is no freedesktop trash here).

use super::ffi::ERROR_NOT_SUPPORTED;
use crate::meta::Errno;
use crate::platform::io_errno;
use std::ffi::{CStr, OsStr};
use std::fs::File;
use std::os::windows::fs::OpenOptionsExt;

pub use crate::platform::fallback::write::{
    create_temp_in, effective_uid, entry_at, file_owner, lock_file, open_write_dir, remove_in, rename_in, replace_in,
    write_dir_owner, WriteDir,
};

/// FILE_FLAG_OPEN_REPARSE_POINT: a symbolic link is opened itself, not followed.
const OPEN_REPARSE_POINT: u32 = 0x0020_0000;

/// What the trash's calls answer here.
const NOT_SUPPORTED: Errno = Errno(ERROR_NOT_SUPPORTED);

/// Opens the entry `name` of `dir` for reading and writing, a reparse point itself and
/// not what it points to; with `create_new`, creates it and fails when anything, a
/// dangling link included, has that name already.
pub fn open_at_nofollow(dir: &WriteDir, name: &OsStr, create_new: bool) -> Result<File, Errno> {
    let mut opts = std::fs::OpenOptions::new();
    opts.read(true).write(true).create_new(create_new).custom_flags(OPEN_REPARSE_POINT);
    opts.open(dir.path.join(name)).map_err(io_errno)
}

/// Opens the entry `name` of `dir` to read it, a reparse point itself and not what it
/// points to.
pub fn open_read_in(dir: &WriteDir, name: &OsStr) -> Result<File, Errno> {
    let mut opts = std::fs::OpenOptions::new();
    opts.read(true).custom_flags(OPEN_REPARSE_POINT);
    opts.open(dir.path.join(name)).map_err(io_errno)
}

/// Opens the existing entry `name` of `dir` to write into it where it is, a reparse point
/// itself and not what it points to.
pub fn open_write_in(dir: &WriteDir, name: &OsStr) -> Result<File, Errno> {
    let mut opts = std::fs::OpenOptions::new();
    opts.write(true).custom_flags(OPEN_REPARSE_POINT);
    opts.open(dir.path.join(name)).map_err(io_errno)
}

pub fn make_dir_in(_dir: &WriteDir, _name: &OsStr, _mode: u32) -> Result<(), Errno> {
    Err(NOT_SUPPORTED)
}

pub fn write_dir_id(_dir: &WriteDir) -> Result<(u64, u64), Errno> {
    Err(NOT_SUPPORTED)
}

pub fn move_into(_from: &super::Dir, _from_name: &CStr, _to: &WriteDir, _to_name: &OsStr) -> Result<(), Errno> {
    Err(NOT_SUPPORTED)
}
