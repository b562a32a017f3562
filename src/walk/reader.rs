//! The one seam between the scanner and the platform layer: a `Reader` is a set of
//! directory operations. `Native` is the reader `platform/` provides for this OS;
//! `Portable` is the `std::fs` oracle (selected with `DFDU_READER=portable`, used by
//! the tests to check the native reader against an independent one).

use crate::meta::{Errno, Meta};
use std::ffi::CStr;

/// `list` calls `each(name, inode, meta)` once per entry (never `.` or `..`). A reader
/// whose directory listing already carries the sizes (NT directory queries,
/// `getattrlistbulk`) passes them as `Some(meta)` and the scanner skips `stat_at` for that
/// entry (except for a symlink under `-L`, which must be stat'ed through); readers that
/// only learn names pass `None`.
pub trait Reader: 'static {
    type Dir: Send + Sync;
    type Lister: Default + Send;
    fn open_path(path: &CStr, follow: bool) -> Result<Self::Dir, Errno>;
    fn open_at(parent: &Self::Dir, name: &CStr, follow: bool) -> Result<Self::Dir, Errno>;
    fn stat_path(path: &CStr, follow: bool) -> Result<Meta, Errno>;
    fn stat_at(dir: &Self::Dir, name: &CStr, follow: bool) -> Result<Meta, Errno>;
    fn list(
        lister: &mut Self::Lister,
        dir: &Self::Dir,
        each: &mut dyn FnMut(&CStr, u64, Option<&Meta>),
    ) -> Result<(), Errno>;
    fn sorts_by_inode(dir: &Self::Dir) -> bool;
}

macro_rules! reader_impl {
    ($ty:ident, $m:path) => {
        pub struct $ty;
        impl Reader for $ty {
            type Dir = <$ty as ReaderTypes>::Dir;
            type Lister = <$ty as ReaderTypes>::Lister;
            #[inline]
            fn open_path(path: &CStr, follow: bool) -> Result<Self::Dir, Errno> {
                use $m as m;
                m::open_path(path, follow)
            }
            #[inline]
            fn open_at(parent: &Self::Dir, name: &CStr, follow: bool) -> Result<Self::Dir, Errno> {
                use $m as m;
                m::open_at(parent, name, follow)
            }
            #[inline]
            fn stat_path(path: &CStr, follow: bool) -> Result<Meta, Errno> {
                use $m as m;
                m::stat_path(path, follow)
            }
            #[inline]
            fn stat_at(dir: &Self::Dir, name: &CStr, follow: bool) -> Result<Meta, Errno> {
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
        }
    };
}

/// Associated types per reader, kept apart so the macro above stays one shape.
pub trait ReaderTypes {
    type Dir;
    type Lister;
}

impl ReaderTypes for Native {
    type Dir = crate::platform::Dir;
    type Lister = crate::platform::Lister;
}
reader_impl!(Native, crate::platform);

impl ReaderTypes for Portable {
    type Dir = crate::platform::portable::Dir;
    type Lister = crate::platform::portable::Lister;
}
reader_impl!(Portable, crate::platform::portable);

/// True when the user asked for the portable oracle reader.
pub fn portable_requested() -> bool {
    std::env::var_os("DFDU_READER").is_some_and(|v| v == "portable")
}
