//! No extent maps on Windows: no file system is treated as sharing.

use super::dir::Dir;
use super::ffi::ERROR_NOT_SUPPORTED;
use crate::meta::Errno;

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
    Err(Errno(ERROR_NOT_SUPPORTED))
}

/// No bulk extent listing on Windows (Linux's XFS reverse map, `linux/fsmap.rs`).
pub fn bulk_extents_estimate(_dir: &Dir) -> Option<u64> {
    None
}

pub fn bulk_extents(
    _dir: &Dir,
    _each: &mut dyn FnMut(u64, &crate::meta::Extent, u32),
) -> Result<(), crate::meta::Errno> {
    Err(Errno(ERROR_NOT_SUPPORTED))
}

/// btrfs's bulk metadata reader exists on Linux only (`linux/btrfs.rs`): here there is
/// never a tree to read, so the scan reads extents per file (or not at all).
pub enum BtrfsTree {}

/// The bulk reader's buffers (none here).
#[derive(Default)]
pub struct SearchBuf;

pub fn btrfs_tree(_dir: &super::dir::Dir) -> Option<BtrfsTree> {
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
