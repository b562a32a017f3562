//! Files dfdu writes (the hash file, the browser's trash) where there are no Unix
//! directory handles: by paths through `std::fs`, with no owners to judge (so
//! `open_write_dir` calls no judge) and no lock (the hash file is opened without sharing
//! instead, see `dupes/cache.rs`). A new file is still only ever new: `create_new`
//! refuses any name that exists, a dangling symlink included. The trash is not offered
//! (`ENOSYS`). On every Unix `fallback/mod.rs` takes in `unix/write.rs` instead; the
//! Windows backend takes this file, with its own `open_at_nofollow` and `move_into`.

use crate::meta::{Errno, Kind};
use crate::platform::{io_errno, random_name, FileCheck, Owner, WalkError, TEMP_ATTEMPTS};
use std::ffi::{OsStr, OsString};
use std::fs::File;
use std::path::{Path, PathBuf};

/// The directory holding a file that dfdu writes: here its path.
pub struct WriteDir {
    pub(in crate::platform) path: PathBuf,
}

/// Always `Ok(true)`: there is no advisory lock here (see the file's doc).
pub fn lock_file(_file: &File, _wait: bool) -> Result<bool, Errno> {
    Ok(true)
}

/// The directory `path` as named; `judge` is not called, since there are no owners.
pub fn open_write_dir(
    path: &Path,
    _judge: &mut dyn FnMut(&Path, Owner, Owner) -> Option<String>,
) -> Result<WriteDir, WalkError> {
    match std::fs::metadata(path) {
        Ok(m) if m.is_dir() => Ok(WriteDir { path: path.to_path_buf() }),
        Ok(_) => Err(WalkError::Os(Errno::NOTDIR)),
        Err(e) => Err(WalkError::Os(io_errno(e))),
    }
}

/// `None`: no Unix owners here.
pub fn write_dir_owner(_dir: &WriteDir) -> Option<Owner> {
    None
}

/// `None`: no Unix owners here.
pub fn file_owner(_file: &File) -> Option<Owner> {
    None
}

/// `None`: no Unix owners here.
pub fn effective_uid() -> Option<u32> {
    None
}

/// No identity to check a trash directory by: the trash is not offered here.
pub fn write_dir_id(_dir: &WriteDir) -> Result<(u64, u64), Errno> {
    Err(Errno::NOSYS)
}

/// The entry `name` of `dir` itself (a symlink is reported as one, not followed): kind
/// and size, no identity or times; `Ok(None)` when there is no such entry.
pub fn entry_at(dir: &WriteDir, name: &OsStr) -> Result<Option<FileCheck>, Errno> {
    let m = match std::fs::symlink_metadata(dir.path.join(name)) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(io_errno(e)),
    };
    let kind = if m.is_symlink() {
        Kind::Symlink
    } else if m.is_dir() {
        Kind::Dir
    } else if m.is_file() {
        Kind::File
    } else {
        Kind::Other
    };
    let size = m.len();
    Ok(Some(FileCheck { kind, dev: 0, ino: 0, size, mtime_ns: 0, ctime_ns: 0, pinned: false, blocks_512: 0 }))
}

/// Opens the entry `name` of `dir` for reading and writing; with `create_new`, creates
/// it and fails with EEXIST when anything, a dangling symlink included, has that name.
/// Without `create_new` a symlink is refused (ELOOP) as far as a look before the open
/// can tell: std has no portable no-follow open.
pub fn open_at_nofollow(dir: &WriteDir, name: &OsStr, create_new: bool) -> Result<File, Errno> {
    let path = dir.path.join(name);
    if !create_new && std::fs::symlink_metadata(&path).is_ok_and(|m| m.is_symlink()) {
        return Err(Errno::LOOP);
    }
    std::fs::OpenOptions::new().read(true).write(true).create_new(create_new).open(path).map_err(io_errno)
}

/// Opens the entry `name` of `dir` to read it; a symlink is refused (ELOOP) as far as
/// a look before the open can tell.
pub fn open_read_in(dir: &WriteDir, name: &OsStr) -> Result<File, Errno> {
    let path = dir.path.join(name);
    if std::fs::symlink_metadata(&path).is_ok_and(|m| m.is_symlink()) {
        return Err(Errno::LOOP);
    }
    File::open(path).map_err(io_errno)
}

/// Opens the existing entry `name` of `dir` to write into it where it is; a symlink is
/// refused (ELOOP) as far as a look before the open can tell.
pub fn open_write_in(dir: &WriteDir, name: &OsStr) -> Result<File, Errno> {
    let path = dir.path.join(name);
    if std::fs::symlink_metadata(&path).is_ok_and(|m| m.is_symlink()) {
        return Err(Errno::LOOP);
    }
    std::fs::OpenOptions::new().write(true).open(path).map_err(io_errno)
}

/// Not offered here: there is no trash without Unix handles.
pub fn make_dir_in(_dir: &WriteDir, _name: &OsStr, _mode: u32) -> Result<(), Errno> {
    Err(Errno::NOSYS)
}

/// Removes the non-directory `name` from `dir` (a symlink itself, not what it points to).
pub fn remove_in(dir: &WriteDir, name: &OsStr) -> Result<(), Errno> {
    std::fs::remove_file(dir.path.join(name)).map_err(io_errno)
}

/// A new file in `dir` under a random name next to `base`, made ours by `create_new`;
/// `mode` is not set here (std's default, less the umask).
pub fn create_temp_in(dir: &WriteDir, base: &OsStr, _mode: u32) -> Result<(File, OsString), Errno> {
    for attempt in 0..TEMP_ATTEMPTS {
        let tmp = random_name(base, attempt);
        match open_at_nofollow(dir, &tmp, true) {
            Ok(file) => return Ok((file, tmp)),
            Err(e) if e == Errno::EXIST => {}
            Err(e) => return Err(e),
        }
    }
    Err(Errno::EXIST)
}

/// Renames the entry `from` of `dir` over `to`; on failure `from` is removed.
pub fn rename_in(dir: &WriteDir, from: &OsStr, to: &OsStr) -> Result<(), Errno> {
    let renamed = std::fs::rename(dir.path.join(from), dir.path.join(to)).map_err(io_errno);
    if renamed.is_err() {
        let _ = remove_in(dir, from);
    }
    renamed
}

/// Replaces the entry `name` of `dir` with a new file holding `bytes`, written under a
/// random name that `create_new` makes ours, then renamed into place. Lets go of `lock`
/// before the rename: a file held open cannot be renamed over on Windows, and the lock
/// is no lock here.
pub fn replace_in(dir: &WriteDir, name: &OsStr, bytes: &[u8], lock: File) -> Result<(), Errno> {
    use std::io::Write;
    let (mut file, tmp) = create_temp_in(dir, name, 0o600)?;
    let written = file.write_all(bytes).map_err(io_errno);
    drop(file);
    drop(lock);
    match written {
        Ok(()) => rename_in(dir, &tmp, name),
        Err(e) => {
            let _ = remove_in(dir, &tmp);
            Err(e)
        }
    }
}
