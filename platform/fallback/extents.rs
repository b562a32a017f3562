//! No extent maps in the std::fs backend: no file system is treated as sharing.

use super::dir::Dir;

/// Extent maps are read on Linux only (see `linux/extents.rs`); elsewhere no file system
/// is treated as sharing and nothing is asked.
#[derive(Default)]
pub struct ExtentBuf;

pub fn fs_shares_extents<D>(_dir: &D) -> bool {
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
/// `linux/fsmap.rs`): the scan asks each file. Generic over the directory handle, as are
/// the btrfs stubs below, so that the macOS and Windows backends take them in as they are.
pub fn bulk_extents_estimate<D>(_dir: &D) -> Option<u64> {
    None
}

pub fn bulk_extents(
    _dir: &Dir,
    _each: &mut dyn FnMut(u64, &crate::meta::Extent, u32),
) -> Result<(), crate::meta::Errno> {
    Err(crate::meta::Errno::NOTSUP)
}

/// btrfs's bulk metadata reader exists on Linux only (`linux/btrfs.rs`): here there is
/// never a tree to read, so the scan reads extents per file (or not at all).
pub enum BtrfsTree {}

/// The bulk reader's buffers (none here).
#[derive(Default)]
pub struct SearchBuf;

pub fn btrfs_tree<D>(_dir: &D) -> Option<BtrfsTree> {
    None
}

impl BtrfsTree {
    pub fn tree_id(&self) -> u64 {
        match *self {}
    }

    pub fn last_snapshot(&self) -> u64 {
        match *self {}
    }

    pub fn fs_id(&self) -> [u8; 16] {
        match *self {}
    }

    pub fn file_extents(
        &self,
        _lo: u64,
        _hi: u64,
        _buf: &mut SearchBuf,
        _each: &mut dyn FnMut(&crate::meta::BtrfsFileExtent),
    ) -> Result<(), crate::meta::Errno> {
        match *self {}
    }

    pub fn data_extents(
        &self,
        _lo: u64,
        _hi: u64,
        _buf: &mut SearchBuf,
        _each: &mut dyn FnMut(&crate::meta::BtrfsDataExtent),
    ) -> Result<(), crate::meta::Errno> {
        match *self {}
    }

    pub fn extent_owners(
        &self,
        _bytenr: u64,
        _buf: &mut SearchBuf,
        _each: &mut dyn FnMut(u64, u64),
    ) -> Result<(), crate::meta::Errno> {
        match *self {}
    }
}
