//! Sharing-aware sizes on macOS: APFS clone attributes (`getattrlistat`) turned into the
//! extents the scan's sharing figures count, in place of the extent maps macOS lacks.

use super::attrs::{self, AttrSet};
use super::dir::{last_errno, AttrList};
use super::unix::dir::Dir;
use crate::meta::Errno;
use rustix::fd::AsRawFd;
use std::ffi::{c_char, c_int, c_void, CStr};

extern "C" {
    fn getattrlistat(
        fd: c_int,
        path: *const c_char,
        attr_list: *mut AttrList,
        attr_buf: *mut c_void,
        attr_buf_size: usize,
        options: u64,
    ) -> c_int;
}

/// APFS clone figures stand in for extent maps: a per-worker buffer for one
/// `getattrlistat` answer (the fixed part and a name of up to 1,023 bytes).
pub struct ExtentBuf {
    buf: Vec<u8>,
}

impl Default for ExtentBuf {
    fn default() -> Self {
        ExtentBuf { buf: vec![0; 2048] }
    }
}

/// True on APFS, the macOS file system with clones (`f_fstypename`).
pub fn fs_shares_extents(dir: &Dir) -> bool {
    match rustix::fs::fstatfs(&dir.fd) {
        Ok(fs) => {
            let name: Vec<u8> = fs.f_fstypename.iter().take_while(|&&c| c != 0).map(|&c| c as u8).collect();
            name == b"apfs"
        }
        Err(_) => false,
    }
}

/// Options of `getattrlistat`: no-follow, a slot for every requested attribute, and the
/// extended common attributes in the fork bitmap.
const FSOPT_NOFOLLOW: u64 = 0x0000_0001;
const FSOPT_ATTR_CMN_EXTENDED: u64 = 0x0000_0020;

/// Clone families seen so far and the made-up address each one's shared data gets
/// (see `Clones::extents`): one family base per clone id, and one base per file that
/// shares only part of its blocks, 2^40 bytes apart (files are smaller than 1 TiB;
/// 2^24 bases; past that, shared bytes get no address and count as exclusive).
struct Bases {
    families: std::collections::HashMap<u64, u64>,
    next: u64,
}
static BASES: std::sync::Mutex<Option<Bases>> = std::sync::Mutex::new(None);
const BASE_STEP: u64 = 1 << 40;

fn next_base(family: Option<u64>) -> Option<u64> {
    let mut g = BASES.lock().unwrap_or_else(|e| e.into_inner());
    let b = g.get_or_insert_with(|| Bases { families: std::collections::HashMap::new(), next: 1 });
    if let Some(id) = family {
        if let Some(&base) = b.families.get(&id) {
            return Some(base);
        }
    }
    let base = b.next.checked_mul(BASE_STEP)?;
    b.next += 1;
    if let Some(id) = family {
        b.families.insert(id, base);
    }
    Some(base)
}

/// The "extents" of the regular file `name` in `dir` on APFS, from its clone attributes
/// (`ATTR_CMNEXT_PRIVATESIZE`, `ATTR_CMNEXT_CLONEID`, `ATTR_CMNEXT_EXT_FLAGS`): one
/// `getattrlistat`, no open. See `Clones::extents` for what they become.
pub fn file_extents_at(
    dir: &Dir,
    name: &CStr,
    buf: &mut ExtentBuf,
    each: &mut dyn FnMut(&crate::meta::Extent),
) -> Result<(), Errno> {
    let req = &attrs::REQUEST_ONE_CLONES;
    let AttrSet { common, vol, dir: dirattr, file, fork } = req.attrs;
    let mut list = AttrList {
        bitmapcount: attrs::ATTR_BIT_MAP_COUNT,
        reserved: 0,
        commonattr: common,
        volattr: vol,
        dirattr,
        fileattr: file,
        forkattr: fork,
    };
    let options = FSOPT_NOFOLLOW | attrs::FSOPT_PACK_INVAL_ATTRS | FSOPT_ATTR_CMN_EXTENDED;
    let b = &mut buf.buf;
    // SAFETY: `dir.fd` is an open descriptor and `name` a NUL-terminated string, both
    // borrowed for the duration of the call; `list` is an initialised `struct attrlist`
    // that outlives it; the kernel writes at most `b.len()` bytes into `b`, an
    // initialised byte buffer borrowed exclusively here.
    let r =
        unsafe { getattrlistat(dir.fd.as_raw_fd(), name.as_ptr(), &mut list, b.as_mut_ptr().cast(), b.len(), options) };
    if r != 0 {
        return Err(last_errno());
    }
    let mut found = None;
    attrs::parse_batch(b, 1, req, &mut |e| found = Some((e.meta().copied(), e.clones))).map_err(|_| Errno::IO)?;
    let Some((Some(meta), Some(clones))) = found else { return Err(Errno::IO) };
    let alloc = meta.blocks * 512;
    let family = clones.full_clone().then_some(clones.clone_id);
    let shared_base = if clones.private_bytes < alloc { next_base(family) } else { Some(0) };
    let Some(base) = shared_base else {
        // Out of made-up addresses: everything counts as the file's own.
        each(&crate::meta::Extent { logical: 0, physical: 0, length: alloc, flags: 0 });
        return Ok(());
    };
    let (exts, n) = clones.extents(alloc, base, base);
    exts[..n].iter().for_each(each);
    Ok(())
}

/// No bulk extent listing here (Linux's XFS reverse map, `linux/fsmap.rs`): the scan asks
/// each file.
pub use crate::platform::fallback::bulk_extents_estimate;

pub fn bulk_extents(
    _dir: &Dir,
    _each: &mut dyn FnMut(u64, &crate::meta::Extent, u32),
) -> Result<(), crate::meta::Errno> {
    Err(crate::meta::Errno::NOTSUP)
}

/// btrfs's bulk metadata reader exists on Linux only (`linux/btrfs.rs`): the std::fs
/// backend's empty type, which `btrfs_tree` never returns.
pub use crate::platform::fallback::{btrfs_tree, BtrfsTree, SearchBuf};
