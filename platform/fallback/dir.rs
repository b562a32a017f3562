//! Portable reader on `std::fs`: the fallback for targets without a native reader yet,
//! and the oracle the native readers are checked against in tests (`DFDU_READER=portable`).
//! Same names as the native readers; slower (full paths, one allocation per entry) and
//! limited to paths the OS accepts whole (PATH_MAX). The terminal, local time and extent
//! maps are `term.rs`, `time.rs` and `extents.rs` beside this file.

use crate::meta::{Errno, Kind, Meta, Timespec};
use crate::platform::io_errno;
use crate::platform::Follow;
use std::ffi::{CStr, CString};
use std::fs;
use std::path::{Path, PathBuf};

/// An "open" directory: here just its path.
pub struct Dir {
    path: PathBuf,
}

/// Nothing to keep between listings.
#[derive(Default)]
pub struct Lister;

#[cfg(unix)]
fn path_of(bytes: &[u8]) -> PathBuf {
    use std::os::unix::ffi::OsStrExt;
    PathBuf::from(std::ffi::OsStr::from_bytes(bytes))
}

#[cfg(not(unix))]
fn path_of(bytes: &[u8]) -> PathBuf {
    PathBuf::from(String::from_utf8_lossy(bytes).into_owned())
}

#[cfg(unix)]
fn name_bytes(name: &std::ffi::OsStr) -> Vec<u8> {
    use std::os::unix::ffi::OsStrExt;
    name.as_bytes().to_vec()
}

#[cfg(not(unix))]
fn name_bytes(name: &std::ffi::OsStr) -> Vec<u8> {
    name.to_string_lossy().into_owned().into_bytes()
}

fn open(path: PathBuf, follow: Follow) -> Result<Dir, Errno> {
    let md = if follow == Follow::Yes { fs::metadata(&path) } else { fs::symlink_metadata(&path) };
    let md = md.map_err(io_errno)?;
    if md.file_type().is_symlink() {
        return Err(Errno::LOOP);
    }
    if !md.is_dir() {
        return Err(Errno::NOTDIR);
    }
    // Listing rights are checked here, as opening a directory would.
    fs::read_dir(&path).map_err(io_errno)?;
    Ok(Dir { path })
}

pub fn open_path(path: &CStr, follow: Follow) -> Result<Dir, Errno> {
    open(path_of(path.to_bytes()), follow)
}

pub fn open_at(parent: &Dir, name: &CStr, follow: Follow) -> Result<Dir, Errno> {
    open(parent.path.join(path_of(name.to_bytes())), follow)
}

pub fn stat_path(path: &CStr, follow: Follow) -> Result<Meta, Errno> {
    stat_file(&path_of(path.to_bytes()), follow)
}

pub fn stat_at(dir: &Dir, name: &CStr, follow: Follow) -> Result<Meta, Errno> {
    stat_file(&dir.path.join(path_of(name.to_bytes())), follow)
}

/// Opens the entry `name` of `dir` to read its bytes if it is a regular file:
/// `(None, meta)` for anything else. By path, as everything here: the last component is
/// not followed (on Unix) and checked before and after the open, but a directory above
/// it swapped meanwhile is not noticed — the native backends open relative to handles.
pub fn open_file_at(dir: &Dir, name: &CStr, _others_may_write: bool) -> Result<(Option<fs::File>, Meta), Errno> {
    open_file(&dir.path.join(path_of(name.to_bytes())))
}

/// `open_file_at` for a path relative to the working directory (a file argument).
pub fn open_file_path(path: &CStr) -> Result<(Option<fs::File>, Meta), Errno> {
    open_file(&path_of(path.to_bytes()))
}

fn open_file(path: &Path) -> Result<(Option<fs::File>, Meta), Errno> {
    let before = stat_file(path, Follow::No)?;
    if before.kind != Kind::File {
        return Ok((None, before));
    }
    let mut opts = fs::OpenOptions::new();
    opts.read(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        let flags = rustix::fs::OFlags::NOFOLLOW | rustix::fs::OFlags::NONBLOCK | rustix::fs::OFlags::NOCTTY;
        opts.custom_flags(flags.bits() as i32);
    }
    let file = opts.open(path).map_err(io_errno)?;
    let meta = meta_of(&file.metadata().map_err(io_errno)?);
    if meta.kind != Kind::File || (meta.dev, meta.ino) != (before.dev, before.ino) {
        return Ok((None, meta));
    }
    Ok((Some(file), meta))
}

fn stat_file(path: &Path, follow: Follow) -> Result<Meta, Errno> {
    let md = if follow == Follow::Yes { fs::metadata(path) } else { fs::symlink_metadata(path) };
    Ok(meta_of(&md.map_err(io_errno)?))
}

fn kind_of(ft: fs::FileType) -> Kind {
    if ft.is_dir() {
        Kind::Dir
    } else if ft.is_symlink() {
        Kind::Symlink
    } else if ft.is_file() {
        Kind::File
    } else {
        Kind::Other
    }
}

#[cfg(unix)]
fn meta_of(md: &fs::Metadata) -> Meta {
    use std::os::unix::fs::MetadataExt;
    Meta {
        kind: kind_of(md.file_type()),
        dev: md.dev(),
        ino: md.ino(),
        nlink: md.nlink(),
        blocks: md.blocks(),
        size: md.size(),
        mtime: Timespec { sec: md.mtime(), nsec: md.mtime_nsec() as u32 },
        atime: Timespec { sec: md.atime(), nsec: md.atime_nsec() as u32 },
        ctime: Timespec { sec: md.ctime(), nsec: md.ctime_nsec() as u32 },
    }
}

#[cfg(not(unix))]
fn meta_of(md: &fs::Metadata) -> Meta {
    let t = |r: std::io::Result<std::time::SystemTime>| {
        r.ok()
            .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
            .map(|d| Timespec { sec: d.as_secs() as i64, nsec: d.subsec_nanos() })
            .unwrap_or_default()
    };
    let size = md.len();
    Meta {
        kind: kind_of(md.file_type()),
        dev: 0,
        ino: 0,
        nlink: 1,
        blocks: size.div_ceil(512),
        size,
        mtime: t(md.modified()),
        atime: t(md.accessed()),
        ctime: t(md.modified()),
    }
}

impl Lister {
    pub fn list(&mut self, dir: &Dir, each: &mut dyn FnMut(&CStr, u64, Option<&Meta>)) -> Result<(), Errno> {
        for entry in fs::read_dir(&dir.path).map_err(io_errno)? {
            let entry = entry.map_err(io_errno)?;
            let name = name_bytes(&entry.file_name());
            let Ok(name) = CString::new(name) else {
                continue;
            };
            #[cfg(unix)]
            let ino = std::os::unix::fs::DirEntryExt::ino(&entry);
            #[cfg(not(unix))]
            let ino = 0;
            each(&name, ino, None);
        }
        Ok(())
    }
}

/// The portable reader cannot tell the file system type: no bound on a directory's
/// entries (`linux::dir::entries_bound`).
pub fn entries_bound<D>(_dir: &D) -> Option<(u64, u64)> {
    None
}

/// The portable reader cannot tell the file system type; it keeps readdir order. (This
/// and the next three are generic over the directory handle: the Windows backend takes
/// them in as they are.)
pub fn sorts_by_inode<D>(_dir: &D) -> bool {
    false
}

/// The portable reader cannot tell the file system type: no directory is on a kernel
/// file system for it (`--exclude-kernfs` leaves nothing out).
pub fn kernel_fs<D>(_dir: &D) -> bool {
    false
}

/// Lookups in one directory are not known to serialize here (see the Linux reader).
pub fn lookups_serialize<D>(_dir: &D) -> bool {
    false
}

/// Not needed where lookups do not serialize.
pub fn thread_cpu_ns() -> u64 {
    0
}

/// Default worker count: every CPU this process may use (affinity and cgroup quotas are
/// honoured by `available_parallelism`), at most 64.
pub fn default_threads() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get()).clamp(1, 64)
}

pub fn raise_fd_limit() -> u64 {
    1024
}

/// Descriptors assumed open: standard input, output and error.
pub fn open_fds() -> u64 {
    3
}

/// No address-space limit is known here.
pub fn address_space_left() -> Option<u64> {
    None
}

pub fn errno_text(e: Errno) -> String {
    let s = std::io::Error::from_raw_os_error(e.0).to_string();
    match s.find(" (os error") {
        Some(cut) => s[..cut].to_string(),
        None => s,
    }
}

/// Nothing to restore where the platform has no SIGPIPE or std leaves it alone.
pub fn default_sigpipe() {}

/// (device, inode) of a directory, from its path.
#[cfg(unix)]
pub fn dir_id(dir: &Dir) -> Result<(u64, u64), Errno> {
    use std::os::unix::fs::MetadataExt;
    let md = fs::symlink_metadata(&dir.path).map_err(io_errno)?;
    Ok((md.dev(), md.ino()))
}

/// Without device and inode numbers the browser cannot check a directory before
/// deleting inside it, so it deletes nothing.
#[cfg(not(unix))]
pub fn dir_id(_dir: &Dir) -> Result<(u64, u64), Errno> {
    Err(Errno::NOSYS)
}

/// Whether anyone but root and this process's effective user may change the entries of
/// `dir` (another owner, or writable by group or others); by path here.
#[cfg(unix)]
pub fn dir_others_may_write(dir: &Dir) -> Result<bool, Errno> {
    use std::os::unix::fs::MetadataExt;
    let md = fs::symlink_metadata(&dir.path).map_err(io_errno)?;
    Ok((md.uid() != 0 && md.uid() != rustix::process::geteuid().as_raw()) || md.mode() & 0o022 != 0)
}

/// Without Unix owners, anyone may have changed a directory, as far as dfdu can tell.
#[cfg(not(unix))]
pub fn dir_others_may_write(_dir: &Dir) -> Result<bool, Errno> {
    Ok(true)
}

/// Which mount an open directory is on (a key), and whether it is a mount root. Without
/// mount ids, another mount is another device
/// (the device number is the key), and a mount root is found by that difference.
pub fn dir_mount(dir: &Dir) -> Result<(u64, bool), Errno> {
    Ok((dir_id(dir)?.0, false))
}

/// The mount points of the system, where they can be listed; `None` here.
pub fn mount_points() -> Option<Vec<Vec<u8>>> {
    None
}

/// Removes the entry `name` of `dir` itself: an empty directory when `is_dir`, anything
/// else (a symlink, not its target) when not.
pub fn remove_at(dir: &Dir, name: &CStr, is_dir: bool) -> Result<(), Errno> {
    let path = dir.path.join(path_of(name.to_bytes()));
    if is_dir { fs::remove_dir(path) } else { fs::remove_file(path) }.map_err(io_errno)
}

/// Makes `to` in `to_dir` one more name of the file `from` in `from_dir`; fails when `to`
/// exists. std links a symlink itself on Unix (no follow).
pub fn link_at(from_dir: &Dir, from: &CStr, to_dir: &Dir, to: &CStr) -> Result<(), Errno> {
    let (src, dst) = (from_dir.path.join(path_of(from.to_bytes())), to_dir.path.join(path_of(to.to_bytes())));
    fs::hard_link(src, dst).map_err(io_errno)
}

/// Creates the symbolic link `name` in `dir` pointing at `target`; fails when `name`
/// exists. Unix only: elsewhere a symlink needs privileges dfdu does not assume.
pub fn symlink_at(target: &CStr, dir: &Dir, name: &CStr) -> Result<(), Errno> {
    let link = dir.path.join(path_of(name.to_bytes()));
    #[cfg(unix)]
    return std::os::unix::fs::symlink(path_of(target.to_bytes()), link).map_err(io_errno);
    #[cfg(not(unix))]
    {
        let _ = (target, link);
        Err(Errno::NOSYS)
    }
}

/// Renames `from` to `to` within `dir`, replacing what `to` names.
pub fn rename_at(dir: &Dir, from: &CStr, to: &CStr) -> Result<(), Errno> {
    fs::rename(dir.path.join(path_of(from.to_bytes())), dir.path.join(path_of(to.to_bytes()))).map_err(io_errno)
}

/// The trash's move: not offered by paths (std has no rename that refuses to replace).
pub fn move_into(
    _from: &Dir,
    _from_name: &CStr,
    _to: &super::WriteDir,
    _to_name: &std::ffi::OsStr,
) -> Result<(), Errno> {
    Err(Errno::NOSYS)
}
