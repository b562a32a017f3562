//! No extent maps on Windows: no file system is treated as sharing.

use super::dir::Dir;
use super::ffi::ERROR_NOT_SUPPORTED;
use crate::meta::Errno;

/// Extent maps are read on Linux only (see `linux/extents.rs`): no file system is treated
/// as sharing and nothing is asked, as in the std::fs backend.
pub use crate::platform::fallback::{fs_shares_extents, ExtentBuf};

pub fn file_extents_at(
    _dir: &Dir,
    _name: &std::ffi::CStr,
    _buf: &mut ExtentBuf,
    _each: &mut dyn FnMut(&crate::meta::Extent),
) -> Result<(), crate::meta::Errno> {
    Err(Errno(ERROR_NOT_SUPPORTED))
}

/// No bulk extent listing here (Linux's XFS reverse map, `linux/fsmap.rs`): the scan asks
/// each file.
pub use crate::platform::fallback::bulk_extents_estimate;

pub fn bulk_extents(
    _dir: &Dir,
    _each: &mut dyn FnMut(u64, &crate::meta::Extent, u32),
) -> Result<(), crate::meta::Errno> {
    Err(Errno(ERROR_NOT_SUPPORTED))
}

/// btrfs's bulk metadata reader exists on Linux only (`linux/btrfs.rs`): the std::fs
/// backend's empty type, which `btrfs_tree` never returns.
pub use crate::platform::fallback::{btrfs_tree, BtrfsTree, SearchBuf};
