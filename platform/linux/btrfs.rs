//! btrfs metadata in bulk (root only): a subvolume's file extent items and the extent
//! tree's references through `BTRFS_IOC_TREE_SEARCH_V2`, many files per call and no
//! file opened, and `BTRFS_IOC_LOGICAL_INO_V2` for the owners of one data extent.
//!
//! * `btrfs_tree(dir)` — the subvolume `dir` lies in: its tree id (`INO_LOOKUP`) and the
//!   generation of its last snapshot (its `ROOT_ITEM` in the root tree). `None` on any
//!   other file system, and without `CAP_SYS_ADMIN` (the searches answer EPERM), so a
//!   caller falls back to FIEMAP.
//! * `BtrfsTree::file_extents(lo, hi, …)` — every `EXTENT_DATA` item of inodes `lo..=hi`
//!   in key order. A search returns every item between its two keys, whatever its type
//!   (inode, reference and directory items of the inodes in between too): those are
//!   skipped here.
//! * `BtrfsTree::data_extents(lo, hi, …)` — the data extents starting in `lo..=hi` with
//!   their reference counts and back references, inline and keyed, gathered per extent.
//! * `BtrfsTree::extent_owners(bytenr, …)` — every (tree, inode) whose file extent items
//!   reference the data extent at `bytenr`, through shared tree blocks too (the kernel
//!   walks the back references).
//!
//! Item bodies are the on-disk format, little-endian, parsed by hand from bytes with every
//! offset checked: an item shorter than its type needs, or an unknown kind, is an error
//! (EIO), never a panic. Search headers and the argument structs are in CPU byte order.

use super::unix::dir::Dir;
use crate::meta::{BtrfsDataExtent, BtrfsExtentKind, BtrfsFileExtent, BtrfsRef, Errno};
use linux_raw_sys::ioctl as k;
use rustix::fd::{AsFd, OwnedFd};

/// Item types (linux/btrfs_tree.h).
const EXTENT_DATA_KEY: u32 = 108;
const ROOT_ITEM_KEY: u32 = 132;
const EXTENT_ITEM_KEY: u32 = 168;
const TREE_BLOCK_REF_KEY: u8 = 176;
const EXTENT_DATA_REF_KEY: u8 = 178;
const SHARED_BLOCK_REF_KEY: u8 = 182;
const SHARED_DATA_REF_KEY: u8 = 184;
const EXTENT_OWNER_REF_KEY: u8 = 172;
/// The root tree and the extent tree.
const ROOT_TREE: u64 = 1;
const EXTENT_TREE: u64 = 2;
/// The first inode number of a subvolume (its top directory).
const FIRST_FREE_OBJECTID: u64 = 256;
/// `BTRFS_EXTENT_FLAG_DATA`.
const EXTENT_FLAG_DATA: u64 = 1;
/// `BTRFS_LOGICAL_INO_ARGS_IGNORE_OFFSET`: every reference to the extent, not only those
/// covering the byte asked about.
const LOGICAL_INO_IGNORE_OFFSET: u64 = 1;

/// `struct btrfs_ioctl_search_args_v2` without its buffer: the 104-byte key and buf_size.
const SEARCH_HEAD_WORDS: usize = 14;
/// `struct btrfs_ioctl_search_header`.
const ITEM_HEAD_BYTES: usize = 32;
/// The search buffer a reader starts with; grown on EOVERFLOW (an item larger than it).
const SEARCH_BYTES: usize = 4 << 20;
/// `struct btrfs_ioctl_ino_lookup_args`.
const INO_LOOKUP_WORDS: usize = 4096 / 8;
/// The owners' buffer `extent_owners` starts with, and the most it grows to (the
/// kernel's limit for LOGICAL_INO_V2).
const OWNERS_BYTES: usize = 64 << 10;
const OWNERS_MAX_BYTES: usize = 16 << 20;

/// One subvolume of a mounted btrfs, open for bulk reads.
pub struct BtrfsTree {
    fd: OwnedFd,
    tree: u64,
    last_snapshot: u64,
    fs_id: [u8; 16],
}

/// The buffers of the bulk reads (allocated on first use, reused).
#[derive(Default)]
pub struct SearchBuf {
    words: Vec<u64>,
    owners: Vec<u64>,
}

/// A search key range in a tree: (objectid, type, offset) from `min` to `max`.
#[derive(Clone, Copy)]
struct Range {
    tree: u64,
    min: (u64, u32, u64),
    max: (u64, u32, u64),
}

/// One item a search returned: its key and its body.
struct Item<'a> {
    objectid: u64,
    kind: u32,
    offset: u64,
    body: &'a [u8],
}

/// The subvolume `dir` lies in, when it is on btrfs and the caller may search its trees.
pub fn btrfs_tree(dir: &Dir) -> Option<BtrfsTree> {
    match rustix::fs::fstatfs(&dir.fd) {
        Ok(fs) if fs.f_type as u32 == linux_raw_sys::general::BTRFS_SUPER_MAGIC => {}
        _ => return None,
    }
    let fd = rustix::io::fcntl_dupfd_cloexec(&dir.fd, 0).ok()?;
    let mut args = vec![0u64; INO_LOOKUP_WORDS];
    args[1] = FIRST_FREE_OBJECTID;
    ioctl(&fd, k::BTRFS_IOC_INO_LOOKUP, &mut args).ok()?;
    let tree = args[0];
    // struct btrfs_ioctl_fs_info_args, 1024 bytes: max_id, num_devices, then fsid[16].
    let mut info = vec![0u64; 1024 / 8];
    ioctl(&fd, k::BTRFS_IOC_FS_INFO, &mut info).ok()?;
    let mut fs_id = [0u8; 16];
    fs_id[..8].copy_from_slice(&info[2].to_ne_bytes());
    fs_id[8..].copy_from_slice(&info[3].to_ne_bytes());
    let mut t = BtrfsTree { fd, tree, last_snapshot: 0, fs_id };
    // The root item: its last_snapshot, and the proof that searches are allowed.
    let range = Range { tree: ROOT_TREE, min: (tree, ROOT_ITEM_KEY, 0), max: (tree, ROOT_ITEM_KEY, u64::MAX) };
    let mut found = None;
    let mut buf = SearchBuf::default();
    t.search(range, &mut buf, 4096, &mut |item| {
        // struct btrfs_root_item: a 160-byte inode item, then generation, root_dirid,
        // bytenr, byte_limit, bytes_used and last_snapshot.
        found = Some(le64(item.body, 200)?);
        Ok(())
    })
    .ok()?;
    t.last_snapshot = found?;
    Some(t)
}

impl BtrfsTree {
    /// The subvolume's tree id (5 for the top level).
    pub fn tree_id(&self) -> u64 {
        self.tree
    }

    /// The file system's UUID: subvolumes with equal ones share one extent tree.
    pub fn fs_id(&self) -> [u8; 16] {
        self.fs_id
    }

    /// The transaction of the last snapshot taken of this subvolume (0: none). A data
    /// extent written after it cannot be shared through a snapshot.
    pub fn last_snapshot(&self) -> u64 {
        self.last_snapshot
    }

    /// Every file extent item of inodes `lo..=hi`, in key order.
    pub fn file_extents(
        &self,
        lo: u64,
        hi: u64,
        buf: &mut SearchBuf,
        each: &mut dyn FnMut(&BtrfsFileExtent),
    ) -> Result<(), Errno> {
        let range = Range { tree: self.tree, min: (lo, EXTENT_DATA_KEY, 0), max: (hi, EXTENT_DATA_KEY, u64::MAX) };
        self.search(range, buf, SEARCH_BYTES, &mut |item| {
            if item.kind == EXTENT_DATA_KEY {
                each(&file_extent(item.objectid, item.offset, item.body)?);
            }
            Ok(())
        })
    }

    /// The data extents that start in `lo..=hi`, each with its references.
    pub fn data_extents(
        &self,
        lo: u64,
        hi: u64,
        buf: &mut SearchBuf,
        each: &mut dyn FnMut(&BtrfsDataExtent),
    ) -> Result<(), Errno> {
        let range =
            Range { tree: EXTENT_TREE, min: (lo, EXTENT_ITEM_KEY, 0), max: (hi, SHARED_DATA_REF_KEY as u32, u64::MAX) };
        let mut pending: Option<BtrfsDataExtent> = None;
        self.search(range, buf, SEARCH_BYTES, &mut |item| {
            if item.kind == EXTENT_ITEM_KEY {
                if let Some(done) = pending.take() {
                    each(&done);
                }
                pending = data_extent(item.objectid, item.offset, item.body)?;
                return Ok(());
            }
            let Some(p) = pending.as_mut().filter(|p| p.bytenr == item.objectid) else { return Ok(()) };
            let found = match item.kind as u8 {
                EXTENT_DATA_REF_KEY => Some(data_ref(item.body, 0)?),
                SHARED_DATA_REF_KEY => Some(BtrfsRef::Parent(item.offset)),
                _ => None,
            };
            if let Some(r) = found {
                add_ref(p, r);
            }
            Ok(())
        })?;
        if let Some(done) = pending {
            each(&done);
        }
        Ok(())
    }

    /// Every (tree, inode) whose file extent items reference the data extent starting at
    /// `bytenr`, each once per file extent item.
    pub fn extent_owners(&self, bytenr: u64, buf: &mut SearchBuf, each: &mut dyn FnMut(u64, u64)) -> Result<(), Errno> {
        let mut bytes = OWNERS_BYTES;
        loop {
            let words = bytes / 8;
            if buf.owners.len() < words {
                buf.owners.resize(words, 0);
            }
            let container = &mut buf.owners[..words];
            container[..2].fill(0);
            // struct btrfs_ioctl_logical_ino_args: logical, size, reserved[3], flags and
            // the address of a struct btrfs_data_container of `size` bytes.
            let mut args = [0u64; 7];
            args[0] = bytenr;
            args[1] = bytes as u64;
            args[5] = LOGICAL_INO_IGNORE_OFFSET;
            args[6] = container.as_mut_ptr() as u64;
            ioctl(&self.fd, k::BTRFS_IOC_LOGICAL_INO_V2, &mut args)?;
            // bytes_left, bytes_missing, elem_cnt, elem_missed (u32 each), then
            // (inum, offset, root) triples.
            let head = as_bytes(&container[..2]);
            let missing = ne32(head, 4) as usize;
            let count = (ne32(head, 8) as usize).min((words - 2) / 3 * 3);
            if missing > 0 && bytes < OWNERS_MAX_BYTES {
                bytes = (bytes + missing).next_power_of_two().min(OWNERS_MAX_BYTES);
                continue;
            }
            for t in container[2..2 + count].chunks_exact(3) {
                each(t[2], t[0]);
            }
            return Ok(());
        }
    }

    /// Runs `range` as searches of up to `bytes` of results each, calling `each` per item
    /// in key order until the range is done.
    fn search(
        &self,
        range: Range,
        buf: &mut SearchBuf,
        bytes: usize,
        each: &mut dyn FnMut(&Item) -> Result<(), Errno>,
    ) -> Result<(), Errno> {
        let mut words = SEARCH_HEAD_WORDS + bytes / 8;
        let mut min = range.min;
        loop {
            if buf.words.len() < words {
                buf.words.resize(words, 0);
            }
            let args = &mut buf.words[..words];
            put_key(args, range, min, (words - SEARCH_HEAD_WORDS) * 8);
            match ioctl(&self.fd, k::BTRFS_IOC_TREE_SEARCH_V2, args) {
                Ok(()) => {}
                // One item larger than the buffer: the kernel says how much it needs.
                Err(e) if e.0 == libc_eoverflow() && args[13] as usize > (words - SEARCH_HEAD_WORDS) * 8 => {
                    words = SEARCH_HEAD_WORDS + (args[13] as usize).div_ceil(8);
                    continue;
                }
                Err(e) => return Err(e),
            }
            let out = as_bytes(args);
            let n = ne32(out, 64);
            if n == 0 {
                return Ok(());
            }
            let mut at = SEARCH_HEAD_WORDS * 8;
            let mut last = min;
            for _ in 0..n {
                let head = out.get(at..at + ITEM_HEAD_BYTES).ok_or(Errno::IO)?;
                let len = ne32(head, 28) as usize;
                let body = out.get(at + ITEM_HEAD_BYTES..at + ITEM_HEAD_BYTES + len).ok_or(Errno::IO)?;
                let item = Item { objectid: ne64(head, 8), kind: ne32(head, 24), offset: ne64(head, 16), body };
                last = (item.objectid, item.kind, item.offset);
                each(&item)?;
                at += ITEM_HEAD_BYTES + len;
            }
            match next_key(last) {
                Some(next) if next <= range.max && next > min => min = next,
                _ => return Ok(()),
            }
        }
    }
}

/// EOVERFLOW's number on Linux.
fn libc_eoverflow() -> i32 {
    75
}

/// The key just after `k` in key order.
fn next_key(k: (u64, u32, u64)) -> Option<(u64, u32, u64)> {
    if k.2 < u64::MAX {
        Some((k.0, k.1, k.2 + 1))
    } else if k.1 < 255 {
        Some((k.0, k.1 + 1, 0))
    } else {
        k.0.checked_add(1).map(|o| (o, 0, 0))
    }
}

/// Writes the search key of `range` from `min` into `args`, with room for `bytes`.
fn put_key(args: &mut [u64], range: Range, min: (u64, u32, u64), bytes: usize) {
    args[..SEARCH_HEAD_WORDS].fill(0);
    args[0] = range.tree;
    args[1] = min.0;
    args[2] = range.max.0;
    args[3] = min.2;
    args[4] = range.max.2;
    args[6] = u64::MAX; // max_transid
    let b = as_bytes_mut(&mut args[7..9]);
    b[0..4].copy_from_slice(&min.1.to_ne_bytes());
    b[4..8].copy_from_slice(&range.max.1.to_ne_bytes());
    b[8..12].copy_from_slice(&u32::MAX.to_ne_bytes()); // nr_items: as many as fit
    args[13] = bytes as u64;
}

/// Parses a `btrfs_file_extent_item`.
fn file_extent(ino: u64, file_offset: u64, b: &[u8]) -> Result<BtrfsFileExtent, Errno> {
    let mut e = BtrfsFileExtent {
        ino,
        file_offset,
        generation: le64(b, 0)?,
        ram_bytes: le64(b, 8)?,
        compression: *b.get(16).ok_or(Errno::IO)?,
        ..BtrfsFileExtent::default()
    };
    match b.get(20) {
        Some(0) => {
            e.kind = BtrfsExtentKind::Inline;
            e.inline_bytes = (b.len() - 21) as u64;
        }
        Some(&kind @ (1 | 2)) => {
            e.kind = if kind == 1 { BtrfsExtentKind::Regular } else { BtrfsExtentKind::Prealloc };
            e.disk_bytenr = le64(b, 21)?;
            e.disk_bytes = le64(b, 29)?;
            e.offset = le64(b, 37)?;
            e.num_bytes = le64(b, 45)?;
        }
        _ => return Err(Errno::IO),
    }
    Ok(e)
}

/// Parses an `EXTENT_ITEM` and its inline references; `None` for a tree block's.
fn data_extent(bytenr: u64, disk_bytes: u64, b: &[u8]) -> Result<Option<BtrfsDataExtent>, Errno> {
    // struct btrfs_extent_item: refs, generation, flags.
    let refs = le64(b, 0)?;
    if le64(b, 16)? & EXTENT_FLAG_DATA == 0 {
        return Ok(None);
    }
    let mut x = BtrfsDataExtent { bytenr, disk_bytes, refs, ..BtrfsDataExtent::default() };
    let mut at = 24;
    while at < b.len() {
        // struct btrfs_extent_inline_ref: a type byte, then a u64 or the type's struct.
        let (r, len) = match b[at] {
            EXTENT_DATA_REF_KEY => (Some(data_ref(b, at + 1)?), 1 + 28),
            SHARED_DATA_REF_KEY => (Some(BtrfsRef::Parent(le64(b, at + 1)?)), 1 + 8 + 4),
            TREE_BLOCK_REF_KEY | SHARED_BLOCK_REF_KEY | EXTENT_OWNER_REF_KEY => (None, 1 + 8),
            _ => return Err(Errno::IO),
        };
        if at + len > b.len() {
            return Err(Errno::IO);
        }
        if let Some(r) = r {
            add_ref(&mut x, r);
        }
        at += len;
    }
    Ok(Some(x))
}

/// Parses a `btrfs_extent_data_ref` at `at`: root, objectid, offset, count.
fn data_ref(b: &[u8], at: usize) -> Result<BtrfsRef, Errno> {
    if b.len() < at + 28 {
        return Err(Errno::IO);
    }
    Ok(BtrfsRef::Keyed { root: le64(b, at)?, ino: le64(b, at + 8)?, offset: le64(b, at + 16)? })
}

fn add_ref(x: &mut BtrfsDataExtent, r: BtrfsRef) {
    if x.backrefs == 0 {
        x.first = r;
    }
    x.backrefs = x.backrefs.saturating_add(1);
}

fn le64(b: &[u8], at: usize) -> Result<u64, Errno> {
    let s = b.get(at..at + 8).ok_or(Errno::IO)?;
    Ok(u64::from_le_bytes(s.try_into().map_err(|_| Errno::IO)?))
}

/// A CPU-order u32 inside a buffer the caller has sized (header fields).
fn ne32(b: &[u8], at: usize) -> u32 {
    b.get(at..at + 4).map_or(0, |s| u32::from_ne_bytes([s[0], s[1], s[2], s[3]]))
}

fn ne64(b: &[u8], at: usize) -> u64 {
    b.get(at..at + 8).map_or(0, |s| u64::from_ne_bytes(s.try_into().unwrap_or([0; 8])))
}

fn as_bytes(w: &[u64]) -> &[u8] {
    // SAFETY: u8 has no alignment or validity requirement, and the slice covers exactly
    // the `w.len() * 8` bytes of `w`, borrowed for as long as `w` is.
    unsafe { std::slice::from_raw_parts(w.as_ptr().cast(), w.len() * 8) }
}

fn as_bytes_mut(w: &mut [u64]) -> &mut [u8] {
    // SAFETY: as `as_bytes`, and the mutable borrow of `w` is held for the result's life.
    unsafe { std::slice::from_raw_parts_mut(w.as_mut_ptr().cast(), w.len() * 8) }
}

fn ioctl(fd: &OwnedFd, opcode: u32, buf: &mut [u64]) -> Result<(), Errno> {
    super::ioctl::ioctl(fd.as_fd(), opcode, buf)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn le(v: &[u64]) -> Vec<u8> {
        v.iter().flat_map(|x| x.to_le_bytes()).collect()
    }

    #[test]
    fn a_regular_file_extent_item_is_parsed_field_by_field() {
        let mut b = le(&[7, 131072]);
        b.extend_from_slice(&[3, 0, 0, 0, 1]);
        b.extend(le(&[1 << 20, 16384, 4096, 65536]));
        let e = file_extent(260, 8192, &b).unwrap();
        assert_eq!(
            e,
            BtrfsFileExtent {
                ino: 260,
                file_offset: 8192,
                generation: 7,
                kind: BtrfsExtentKind::Regular,
                compression: 3,
                ram_bytes: 131072,
                disk_bytenr: 1 << 20,
                disk_bytes: 16384,
                offset: 4096,
                num_bytes: 65536,
                inline_bytes: 0,
            }
        );
        // Any shorter body, and an unknown kind, are errors.
        for len in 0..b.len() {
            assert_eq!(file_extent(260, 0, &b[..len]), Err(Errno::IO), "{len} bytes");
        }
        b[20] = 3;
        assert_eq!(file_extent(260, 0, &b), Err(Errno::IO));
    }

    #[test]
    fn an_inline_extent_counts_its_bytes_in_the_metadata() {
        let mut b = le(&[9, 11]);
        b.extend_from_slice(&[0, 0, 0, 0, 0]);
        b.extend_from_slice(b"small one\n\0");
        let e = file_extent(300, 0, &b).unwrap();
        assert_eq!((e.kind, e.ram_bytes, e.inline_bytes), (BtrfsExtentKind::Inline, 11, 11));
    }

    #[test]
    fn extent_items_count_their_inline_back_references() {
        let mut b = le(&[3, 5, EXTENT_FLAG_DATA]);
        b.push(EXTENT_DATA_REF_KEY);
        b.extend(le(&[5, 257, 0]));
        b.extend_from_slice(&2u32.to_le_bytes());
        b.push(SHARED_DATA_REF_KEY);
        b.extend(le(&[30 << 20]));
        b.extend_from_slice(&1u32.to_le_bytes());
        let x = data_extent(1 << 30, 4096, &b).unwrap().unwrap();
        assert_eq!((x.refs, x.backrefs), (3, 2));
        assert_eq!(x.first, BtrfsRef::Keyed { root: 5, ino: 257, offset: 0 });
        // A tree block's item is not a data extent.
        assert_eq!(data_extent(1, 16384, &le(&[1, 5, 2])), Ok(None));
        // A reference cut short, and an unknown reference type, are errors.
        for len in (25..b.len()).filter(|&len| len != 24 + 29) {
            assert_eq!(data_extent(1, 1, &b[..len]), Err(Errno::IO), "{len} bytes");
        }
        assert_eq!(data_extent(1, 1, &b[..24 + 29]).unwrap().unwrap().backrefs, 1, "the first reference alone");
        let mut odd = le(&[1, 5, EXTENT_FLAG_DATA]);
        odd.extend_from_slice(&[99; 9]);
        assert_eq!(data_extent(1, 1, &odd), Err(Errno::IO));
    }

    #[test]
    fn keys_follow_in_btrfs_order() {
        assert_eq!(next_key((5, 108, 7)), Some((5, 108, 8)));
        assert_eq!(next_key((5, 108, u64::MAX)), Some((5, 109, 0)));
        assert_eq!(next_key((5, 255, u64::MAX)), Some((6, 0, 0)));
        assert_eq!(next_key((u64::MAX, 255, u64::MAX)), None);
    }
}
