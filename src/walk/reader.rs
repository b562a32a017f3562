//! The one seam between the scanner and the platform layer: a `Reader` is a set of
//! directory operations. `Native` is the reader `platform/` provides for this OS;
//! `Portable` is the `std::fs` oracle (selected with `DFDU_READER=portable`, used by
//! the tests to check the native reader against an independent one).

use crate::meta::{Errno, Extent, Meta};
use crate::platform::Follow;
use std::ffi::CStr;

/// `list` calls `each(name, inode, meta)` once per entry (never `.` or `..`). A reader
/// whose directory listing already carries the sizes (NT directory queries,
/// `getattrlistbulk`) passes them as `Some(meta)` and the scanner skips `stat_at` for that
/// entry (except for a symlink under `-L`, which must be stat'ed through); readers that
/// only learn names pass `None`.
pub trait Reader: 'static {
    type Dir: Send + Sync;
    type Lister: Default + Send;
    fn open_path(path: &CStr, follow: Follow) -> Result<Self::Dir, Errno>;
    fn open_at(parent: &Self::Dir, name: &CStr, follow: Follow) -> Result<Self::Dir, Errno>;
    fn stat_path(path: &CStr, follow: Follow) -> Result<Meta, Errno>;
    fn stat_at(dir: &Self::Dir, name: &CStr, follow: Follow) -> Result<Meta, Errno>;
    fn list(
        lister: &mut Self::Lister,
        dir: &Self::Dir,
        each: &mut dyn FnMut(&CStr, u64, Option<&Meta>),
    ) -> Result<(), Errno>;
    fn sorts_by_inode(dir: &Self::Dir) -> bool;
    /// At most how many entries `dir` holds and how many bytes their names take in the
    /// arena, where its file system's directory format bounds them (`None` elsewhere).
    fn entries_bound(dir: &Self::Dir) -> Option<(u64, u64)>;
    /// `dir` is on a kernel file system (proc, sysfs, cgroup, ...): `--exclude-kernfs`.
    fn kernel_fs(dir: &Self::Dir) -> bool;
    /// `dir` holds a valid `CACHEDIR.TAG` (a regular file that starts with the signature
    /// of the Cache Directory Tagging Specification): `--exclude-caches`.
    fn cachedir_tagged(dir: &Self::Dir) -> bool;
    /// Lookups of names in `dir` that miss the cache serialize (XFS): several threads
    /// stat'ing one directory then cost more than one.
    fn lookups_serialize(dir: &Self::Dir) -> bool;
    /// CPU time of the calling thread in nanoseconds (0 where `lookups_serialize` is
    /// always false).
    fn thread_cpu_ns() -> u64;
    /// A per-worker buffer for `file_extents_at`.
    type ExtentBuf: Default + Send;
    /// True when files in `dir` can share extents and extent maps are available.
    fn fs_shares_extents(dir: &Self::Dir) -> bool;
    /// Calls `each` for every extent of the regular file `name` in `dir`.
    fn file_extents_at(
        dir: &Self::Dir,
        name: &CStr,
        buf: &mut Self::ExtentBuf,
        each: &mut dyn FnMut(&Extent),
    ) -> Result<(), Errno>;
    /// The inodes in use on `dir`'s file system when `bulk_extents` can list every file's
    /// extents there at once; `None` when it cannot.
    fn bulk_extents_estimate(dir: &Self::Dir) -> Option<u64>;
    /// Calls `each(inode, extent, files)` for every data extent of every file on `dir`'s
    /// file system, flagged as `file_extents_at` would flag it; a shared one is a whole
    /// extent (the same files share all of it), `files` how many (0: not shared).
    fn bulk_extents(dir: &Self::Dir, each: &mut dyn FnMut(u64, &Extent, u32)) -> Result<(), Errno>;
    /// As root on btrfs: the subvolume `dir` lies in, opened for bulk metadata reads
    /// (`walk/join.rs`), so that its files need no extent map each.
    fn bulk_tree(dir: &Self::Dir) -> Option<crate::platform::BtrfsTree>;
}

macro_rules! reader_impl {
    ($ty:ident, $m:path, $bulk:expr) => {
        pub struct $ty;
        impl Reader for $ty {
            type Dir = <$ty as ReaderTypes>::Dir;
            type Lister = <$ty as ReaderTypes>::Lister;
            #[inline]
            fn open_path(path: &CStr, follow: Follow) -> Result<Self::Dir, Errno> {
                use $m as m;
                m::open_path(path, follow)
            }
            #[inline]
            fn open_at(parent: &Self::Dir, name: &CStr, follow: Follow) -> Result<Self::Dir, Errno> {
                use $m as m;
                m::open_at(parent, name, follow)
            }
            #[inline]
            fn stat_path(path: &CStr, follow: Follow) -> Result<Meta, Errno> {
                use $m as m;
                m::stat_path(path, follow)
            }
            #[inline]
            fn stat_at(dir: &Self::Dir, name: &CStr, follow: Follow) -> Result<Meta, Errno> {
                use $m as m;
                m::stat_at(dir, name, follow)
            }
            #[inline]
            fn list(
                lister: &mut Self::Lister,
                dir: &Self::Dir,
                each: &mut dyn FnMut(&CStr, u64, Option<&Meta>),
            ) -> Result<(), Errno> {
                lister.list(dir, each)
            }
            #[inline]
            fn sorts_by_inode(dir: &Self::Dir) -> bool {
                use $m as m;
                m::sorts_by_inode(dir)
            }
            fn entries_bound(dir: &Self::Dir) -> Option<(u64, u64)> {
                use $m as m;
                m::entries_bound(dir)
            }
            #[inline]
            fn kernel_fs(dir: &Self::Dir) -> bool {
                use $m as m;
                m::kernel_fs(dir)
            }
            fn cachedir_tagged(dir: &Self::Dir) -> bool {
                use $m as m;
                // Opened only if it is a regular file, never following a symlink.
                match m::open_file_at(dir, c"CACHEDIR.TAG", true) {
                    Ok((Some(f), _)) => tag_is_valid(f),
                    _ => false,
                }
            }
            #[inline]
            fn lookups_serialize(dir: &Self::Dir) -> bool {
                use $m as m;
                m::lookups_serialize(dir)
            }
            #[inline]
            fn thread_cpu_ns() -> u64 {
                use $m as m;
                m::thread_cpu_ns()
            }
            type ExtentBuf = <$ty as ReaderTypes>::ExtentBuf;
            #[inline]
            fn fs_shares_extents(dir: &Self::Dir) -> bool {
                use $m as m;
                m::fs_shares_extents(dir)
            }
            #[inline]
            fn file_extents_at(
                dir: &Self::Dir,
                name: &CStr,
                buf: &mut Self::ExtentBuf,
                each: &mut dyn FnMut(&Extent),
            ) -> Result<(), Errno> {
                use $m as m;
                m::file_extents_at(dir, name, buf, each)
            }
            fn bulk_extents_estimate(dir: &Self::Dir) -> Option<u64> {
                use $m as m;
                m::bulk_extents_estimate(dir)
            }
            fn bulk_extents(dir: &Self::Dir, each: &mut dyn FnMut(u64, &Extent, u32)) -> Result<(), Errno> {
                use $m as m;
                m::bulk_extents(dir, each)
            }
            fn bulk_tree(dir: &Self::Dir) -> Option<crate::platform::BtrfsTree> {
                $bulk(dir)
            }
        }
    };
}

/// The signature a `CACHEDIR.TAG` starts with (bford.info/cachedir).
pub const CACHEDIR_SIGNATURE: &[u8] = b"Signature: 8a477f597d28d172789f06886806bc55";

/// Whether the open tag file `f` starts with `CACHEDIR_SIGNATURE`.
fn tag_is_valid(mut f: std::fs::File) -> bool {
    use std::io::Read;
    let mut head = [0u8; CACHEDIR_SIGNATURE.len()];
    f.read_exact(&mut head).is_ok() && head == CACHEDIR_SIGNATURE
}

/// Associated types per reader, kept apart so the macro above stays one shape.
pub trait ReaderTypes {
    type Dir;
    type Lister;
    type ExtentBuf;
}

impl ReaderTypes for Native {
    type Dir = crate::platform::Dir;
    type Lister = crate::platform::Lister;
    type ExtentBuf = crate::platform::ExtentBuf;
}
reader_impl!(Native, crate::platform, crate::platform::btrfs_tree);

impl ReaderTypes for Portable {
    type Dir = crate::platform::fallback::Dir;
    type Lister = crate::platform::fallback::Lister;
    type ExtentBuf = crate::platform::fallback::ExtentBuf;
}
// The oracle reads every file's extent map itself: never a bulk tree.
reader_impl!(Portable, crate::platform::fallback, |_: &Self::Dir| None);

/// True when the user asked for the portable oracle reader.
pub fn portable_requested() -> bool {
    std::env::var_os("DFDU_READER").is_some_and(|v| v == "portable")
}
