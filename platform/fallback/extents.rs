//! No extent maps in the std::fs backend: no file system is treated as sharing.

use super::dir::Dir;

/// Extent maps are read on Linux only (see `linux/extents.rs`); elsewhere no file system
/// is treated as sharing and nothing is asked.
#[derive(Default)]
pub struct ExtentBuf;

pub fn fs_shares_extents(_dir: &Dir) -> bool {
    false
}

pub fn file_extents_at(
    _dir: &Dir,
    _name: &std::ffi::CStr,
    _buf: &mut ExtentBuf,
    _each: &mut dyn FnMut(&crate::meta::Extent),
) -> Result<(), crate::meta::Errno> {
    Err(crate::meta::Errno::NOTSUP)
}

/// No file system here lists every file's extents in one go (Linux's XFS reverse map,
/// `linux/fsmap.rs`): the scan asks each file.
pub fn bulk_extents_estimate(_dir: &Dir) -> Option<u64> {
    None
}

pub fn bulk_extents(
    _dir: &Dir,
    _each: &mut dyn FnMut(u64, &crate::meta::Extent, u32),
) -> Result<(), crate::meta::Errno> {
    Err(crate::meta::Errno::NOTSUP)
}
