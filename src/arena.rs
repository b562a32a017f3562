//! The entry arena: every scanned entry, addressed by a `u32` id, in a few bytes each,
//! readable while the scan is still writing it.
//!
//! # Layout
//!
//! * **Entries**: 8 bytes each (`Entry`): word 0 holds the flags byte (kind — file,
//!   dir, symlink, other — and the error/exclusion/hard-link bits) above 24 bits of disk
//!   use in 512-byte blocks; word 1 the apparent size in bytes. A size that does not fit
//!   (8 GiB of blocks, 4 GiB of bytes) is marked and kept in the overflow table. For a
//!   directory, word 1 holds its directory index instead (its sizes live in the
//!   directory table).
//! * **Names**: one byte store. The names of a directory's children are contiguous and
//!   in child order, each `[len: u8][bytes]` (names of 255 bytes or more: `255`, then a
//!   little-endian `u16` length), starting at the directory's `names_at`. An entry has
//!   no name pointer of its own: the `k`-th child's name is found by stepping over `k`
//!   names, which readers do in order anyway (export, reports) or once per directory
//!   they show (the browser). So an entry costs 8 + 1 + name bytes.
//! * **Directory table**: 64 bytes per directory (`DirSlot`): parent, own entry, first
//!   child and child count (children of one directory are contiguous: they come from one
//!   listing and get one id range), where its children's names start, its own sizes,
//!   running totals of the subtree, item count, and pending work with the flags in its
//!   top bits.
//! * **Side tables**: sizes that do not fit (`overflow`), the device of each directory
//!   that differs from its parent's (`devs`), (dev, ino, nlink) of multiply-linked files
//!   (`links`, only entries with nlink > 1 pay for it), and the names of the roots.
//!
//! Storage grows in fixed chunks (`Chunked`), never by doubling and copying, so a
//! 1,000,000-entry tree costs what it holds plus at most one partly used chunk per array.
//!
//! # Publishing while scanning
//!
//! A directory's children are written into their reserved ids first; then its
//! `child_count` is stored with `Release`. A reader loads `child_count` with `Acquire`:
//! `UNLISTED` means "not listed yet", anything else means the children are complete.
//! Totals grow monotonically (`fetch_add` on every ancestor, once per listed directory);
//! `pending` reaches 0 when a directory's whole subtree is done. Every cell is an atomic,
//! so the arena needs no `unsafe` and no lock on the read path.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU32, AtomicU64, AtomicU8, Ordering::*};
use std::sync::{Mutex, OnceLock};

/// `child_count` of a directory whose listing has not been published.
pub const UNLISTED: u32 = u32::MAX;
/// Parent of a root directory.
pub const NO_DIR: u32 = u32::MAX;
/// An apparent size that lives in the overflow table.
const OVERFLOW: u32 = u32::MAX;

/// Entry kinds (low two bits of the flags byte).
pub const KIND_FILE: u8 = 0;
pub const KIND_DIR: u8 = 1;
pub const KIND_SYMLINK: u8 = 2;
pub const KIND_OTHER: u8 = 3;
/// `stat` (for a file) or listing (for a directory) failed.
pub const F_ERROR: u8 = 1 << 2;
/// Excluded by a pattern.
pub const F_EXCLUDED: u8 = 1 << 3;
/// On another file system and not entered (`-x`).
pub const F_OTHER_FS: u8 = 1 << 4;
/// A file with more than one link.
pub const F_HARDLINK: u8 = 1 << 5;
/// A further name of a multiply-linked file already counted elsewhere.
pub const F_DUP_LINK: u8 = 1 << 6;

/// One entry: two words, see the module doc.
#[derive(Default)]
pub struct Entry {
    flags_blocks: AtomicU32,
    apparent: AtomicU32,
}

/// Disk blocks that fit beside the flags in word 0; this value means "overflow".
const BLOCKS_OVERFLOW: u32 = (1 << 24) - 1;
const _: () = assert!(std::mem::size_of::<Entry>() == 8);

/// One directory. See the module doc.
#[derive(Default)]
pub struct DirSlot {
    parent: AtomicU32,
    entry: AtomicU32,
    first_child: AtomicU32,
    child_count: AtomicU32,
    own_disk: AtomicU64,
    own_apparent: AtomicU64,
    total_disk: AtomicU64,
    total_apparent: AtomicU64,
    items: AtomicU64,
    /// Units of unfinished work (low 28 bits) and the `D_*` flags (top 4 bits).
    pending_flags: AtomicU32,
    names_at: AtomicU32,
}
const _: () = assert!(std::mem::size_of::<DirSlot>() == 64);

/// Directory flags (kept in the top bits of `pending_flags`).
pub const D_DONE: u32 = 1 << 28;
pub const D_READ_ERROR: u32 = 1 << 29;
pub const D_ERROR_BELOW: u32 = 1 << 30;
const PENDING_MASK: u32 = (1 << 28) - 1;

/// A growable array of `T` in fixed chunks of 2^`LEAF` slots, indexed by `u32`, shared by
/// threads: chunk `i` is created once (by whoever needs it first) and never moves. Two
/// lazily created index levels above the chunks keep an empty array small.
pub struct Chunked<T, const LEAF: u32> {
    top: Box<[OnceLock<Mid<T>>]>,
}

/// The middle level of a `Chunked`: lazily created chunks.
type Mid<T> = Box<[OnceLock<Box<[T]>>]>;

impl<T: Default, const LEAF: u32> Chunked<T, LEAF> {
    const MID: u32 = (32 - LEAF) / 2;
    const TOP: u32 = 32 - LEAF - Self::MID;

    pub fn new() -> Self {
        Chunked { top: (0..1usize << Self::TOP).map(|_| OnceLock::new()).collect() }
    }

    fn leaf(&self, i: u32) -> &[T] {
        let mid = self.top[(i >> (LEAF + Self::MID)) as usize]
            .get_or_init(|| (0..1usize << Self::MID).map(|_| OnceLock::new()).collect());
        mid[((i >> LEAF) & ((1 << Self::MID) - 1)) as usize]
            .get_or_init(|| (0..1usize << LEAF).map(|_| T::default()).collect())
    }

    /// The slot for index `i`, creating its chunk if needed.
    #[inline]
    pub fn at(&self, i: u32) -> &T {
        &self.leaf(i)[(i & ((1 << LEAF) - 1)) as usize]
    }
}

impl<T: Default, const LEAF: u32> Default for Chunked<T, LEAF> {
    fn default() -> Self {
        Self::new()
    }
}

/// Bytes a name takes in the store.
pub fn name_cost(len: usize) -> u64 {
    let len = len.min(u16::MAX as usize) as u64;
    if len >= 255 {
        len + 3
    } else {
        len + 1
    }
}

/// Why the arena refused more data.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Full {
    /// More than 2^32 - 1 entries or directories.
    Ids,
    /// More than 4 GiB of names.
    Names,
}

/// What the writer knows about one entry.
#[derive(Clone, Copy, Debug, Default)]
pub struct NewEntry<'a> {
    pub name: &'a [u8],
    pub flags: u8,
    pub disk_bytes: u64,
    pub apparent_bytes: u64,
}

/// The arena. See the module doc.
pub struct Arena {
    // Chunks of 768 KiB, 256 KiB and 64 KiB: a partly used last chunk wastes little.
    entries: Chunked<Entry, 16>,
    dirs: Chunked<DirSlot, 12>,
    names: Chunked<AtomicU8, 16>,
    next_entry: AtomicU64,
    next_dir: AtomicU64,
    next_name: AtomicU64,
    overflow: Mutex<HashMap<u32, (u64, u64)>>,
    /// Device of a directory, where it differs from its parent's.
    devs: Mutex<HashMap<u32, u64>>,
    /// (dev, ino, nlink) of multiply-linked files, by entry id.
    links: Mutex<HashMap<u32, (u64, u64, u32)>>,
    /// Names of root directories (they have no parent to hold them).
    root_names: Mutex<HashMap<u32, Vec<u8>>>,
    full: Mutex<Option<Full>>,
}

impl Default for Arena {
    fn default() -> Self {
        Self::new()
    }
}

impl Arena {
    pub fn new() -> Self {
        Arena {
            entries: Chunked::new(),
            dirs: Chunked::new(),
            names: Chunked::new(),
            next_entry: AtomicU64::new(0),
            next_dir: AtomicU64::new(0),
            next_name: AtomicU64::new(0),
            overflow: Mutex::new(HashMap::new()),
            devs: Mutex::new(HashMap::new()),
            links: Mutex::new(HashMap::new()),
            root_names: Mutex::new(HashMap::new()),
            full: Mutex::new(None),
        }
    }

    pub fn full(&self) -> Option<Full> {
        *self.full.lock().unwrap()
    }

    fn refuse(&self, why: Full) -> Full {
        self.full.lock().unwrap().get_or_insert(why);
        why
    }

    /// Number of entries written (or reserved).
    pub fn entry_count(&self) -> u32 {
        self.next_entry.load(Acquire).min(u32::MAX as u64) as u32
    }

    /// Reserves `n` contiguous entry ids.
    pub fn reserve_entries(&self, n: u32) -> Result<u32, Full> {
        let first = self.next_entry.fetch_add(n as u64, Relaxed);
        if first + n as u64 > u32::MAX as u64 - 1 {
            return Err(self.refuse(Full::Ids));
        }
        Ok(first as u32)
    }

    /// Creates the directory record for entry `entry` (already written with KIND_DIR).
    pub fn new_dir(&self, entry: u32, parent: u32, own_disk: u64, own_apparent: u64) -> Result<u32, Full> {
        let id = self.next_dir.fetch_add(1, Relaxed);
        if id >= u32::MAX as u64 - 1 {
            return Err(self.refuse(Full::Ids));
        }
        let id = id as u32;
        let d = self.dirs.at(id);
        d.parent.store(parent, Relaxed);
        d.entry.store(entry, Relaxed);
        d.child_count.store(UNLISTED, Relaxed);
        d.own_disk.store(own_disk, Relaxed);
        d.own_apparent.store(own_apparent, Relaxed);
        d.total_disk.store(own_disk, Relaxed);
        d.total_apparent.store(own_apparent, Relaxed);
        d.pending_flags.store(1, Relaxed);
        self.entries.at(entry).apparent.store(id, Release);
        Ok(id)
    }

    /// Creates a directory record whose entry is written later (`attach_dir`): the
    /// importer learns a directory's contents before its own id.
    pub fn new_dir_detached(&self, parent: u32, own_disk: u64, own_apparent: u64) -> Result<u32, Full> {
        let id = self.next_dir.fetch_add(1, Relaxed);
        if id >= u32::MAX as u64 - 1 {
            return Err(self.refuse(Full::Ids));
        }
        let id = id as u32;
        let d = self.dirs.at(id);
        d.parent.store(parent, Relaxed);
        d.entry.store(u32::MAX, Relaxed);
        d.child_count.store(UNLISTED, Relaxed);
        d.own_disk.store(own_disk, Relaxed);
        d.own_apparent.store(own_apparent, Relaxed);
        d.total_disk.store(own_disk, Relaxed);
        d.total_apparent.store(own_apparent, Relaxed);
        d.pending_flags.store(1, Relaxed);
        Ok(id)
    }

    /// Binds directory record `dir` to its (written) entry `entry`.
    pub fn attach_dir(&self, dir: u32, entry: u32) {
        self.dirs.at(dir).entry.store(entry, Relaxed);
        self.entries.at(entry).apparent.store(dir, Release);
    }

    /// Replaces a directory's own sizes (its totals move by the difference).
    pub fn set_own(&self, dir: u32, own_disk: u64, own_apparent: u64) {
        let d = self.dirs.at(dir);
        let old_disk = d.own_disk.swap(own_disk, Relaxed);
        let old_apparent = d.own_apparent.swap(own_apparent, Relaxed);
        d.total_disk.fetch_add(own_disk.wrapping_sub(old_disk), Relaxed);
        d.total_apparent.fetch_add(own_apparent.wrapping_sub(old_apparent), Relaxed);
    }

    /// Reserves `bytes` of contiguous name store (a directory's children's names).
    pub fn reserve_names(&self, bytes: u64) -> Result<u32, Full> {
        let start = self.next_name.fetch_add(bytes, Relaxed);
        if start + bytes > u32::MAX as u64 {
            return Err(self.refuse(Full::Names));
        }
        Ok(start as u32)
    }

    /// Sets where `dir`'s children (ids and names) will be, before they are published.
    pub fn set_layout(&self, dir: u32, first_child: u32, names_at: u32) {
        let d = self.dirs.at(dir);
        d.first_child.store(first_child, Relaxed);
        d.names_at.store(names_at, Relaxed);
    }

    /// Names a root directory.
    pub fn set_root_name(&self, dir: u32, name: &[u8]) {
        self.root_names.lock().unwrap().insert(dir, name.to_vec());
    }

    /// Writes entry `id` (reserved earlier) with its name at `name_at` (inside its
    /// directory's reserved names). Directories get their index via `new_dir`.
    pub fn write_entry(&self, id: u32, e: &NewEntry, name_at: u32) {
        self.put_name(e.name, name_at);
        let slot = self.entries.at(id);
        let mut blocks = 0;
        if e.flags & 3 != KIND_DIR {
            let b = e.disk_bytes.div_ceil(512);
            if b >= BLOCKS_OVERFLOW as u64 || e.apparent_bytes >= OVERFLOW as u64 {
                self.overflow.lock().unwrap().insert(id, (e.disk_bytes, e.apparent_bytes));
                blocks = BLOCKS_OVERFLOW;
                slot.apparent.store(OVERFLOW, Relaxed);
            } else {
                blocks = b as u32;
                slot.apparent.store(e.apparent_bytes as u32, Relaxed);
            }
        }
        slot.flags_blocks.store((e.flags as u32) << 24 | blocks, Release);
    }

    fn put_name(&self, name: &[u8], at: u32) {
        let len = name.len().min(u16::MAX as usize);
        let mut p = at;
        let mut put = |b: u8| {
            self.names.at(p).store(b, Relaxed);
            p += 1;
        };
        if len >= 255 {
            put(255);
            put(len as u8);
            put((len >> 8) as u8);
        } else {
            put(len as u8);
        }
        for &b in &name[..len] {
            put(b);
        }
    }

    /// Reads the name stored at `at` into `out`; returns where the next name starts.
    pub fn read_name(&self, at: u32, out: &mut Vec<u8>) -> u32 {
        out.clear();
        let mut p = at;
        let mut len = self.names.at(p).load(Relaxed) as usize;
        p += 1;
        if len == 255 {
            len = self.names.at(p).load(Relaxed) as usize | (self.names.at(p + 1).load(Relaxed) as usize) << 8;
            p += 2;
        }
        out.extend((0..len as u32).map(|i| self.names.at(p + i).load(Relaxed)));
        p + len as u32
    }

    /// Where the names of `dir`'s children start (the first child's name).
    pub fn names_at(&self, dir: u32) -> u32 {
        self.dirs.at(dir).names_at.load(Relaxed)
    }

    /// The name of child `id` of `dir` (steps over the names before it).
    pub fn child_name(&self, dir: u32, id: u32, out: &mut Vec<u8>) {
        let first = self.dirs.at(dir).first_child.load(Relaxed);
        let mut at = self.names_at(dir);
        for _ in first..id {
            at = self.read_name(at, out);
        }
        self.read_name(at, out);
    }

    /// The name of directory index `dir` (a root's is its path).
    pub fn dir_name(&self, dir: u32) -> Vec<u8> {
        let parent = self.dir_parent(dir);
        if parent == NO_DIR {
            return self.root_names.lock().unwrap().get(&dir).cloned().unwrap_or_default();
        }
        let mut out = Vec::new();
        self.child_name(parent, self.dir_entry(dir), &mut out);
        out
    }

    /// Publishes a directory's children: `first .. first + count`.
    pub fn publish_children(&self, dir: u32, first: u32, count: u32) {
        let d = self.dirs.at(dir);
        d.first_child.store(first, Relaxed);
        d.child_count.store(count, Release);
    }

    // ---- reading ----

    pub fn flags(&self, id: u32) -> u8 {
        (self.entries.at(id).flags_blocks.load(Acquire) >> 24) as u8
    }

    pub fn kind(&self, id: u32) -> u8 {
        self.flags(id) & 3
    }

    /// The directory index of a directory entry.
    pub fn dir_of(&self, id: u32) -> u32 {
        self.entries.at(id).apparent.load(Acquire)
    }

    /// (disk bytes, apparent bytes) of the entry itself (for a directory: its own inode).
    pub fn own_sizes(&self, id: u32) -> (u64, u64) {
        if self.kind(id) == KIND_DIR {
            let d = self.dirs.at(self.dir_of(id));
            return (d.own_disk.load(Relaxed), d.own_apparent.load(Relaxed));
        }
        let e = self.entries.at(id);
        let blocks = e.flags_blocks.load(Relaxed) & BLOCKS_OVERFLOW;
        if blocks == BLOCKS_OVERFLOW {
            return self.overflow.lock().unwrap().get(&id).copied().unwrap_or((0, 0));
        }
        (blocks as u64 * 512, e.apparent.load(Relaxed) as u64)
    }

    /// (disk, apparent, items below) of directory index `dir`'s subtree.
    pub fn dir_totals(&self, dir: u32) -> (u64, u64, u64) {
        let d = self.dirs.at(dir);
        (d.total_disk.load(Relaxed), d.total_apparent.load(Relaxed), d.items.load(Relaxed))
    }

    /// (disk, apparent) of directory index `dir`'s own inode.
    pub fn dir_own(&self, dir: u32) -> (u64, u64) {
        let d = self.dirs.at(dir);
        (d.own_disk.load(Relaxed), d.own_apparent.load(Relaxed))
    }

    /// Children of directory index `dir`, or `None` while it is not listed.
    pub fn children(&self, dir: u32) -> Option<std::ops::Range<u32>> {
        let d = self.dirs.at(dir);
        let n = d.child_count.load(Acquire);
        if n == UNLISTED {
            return None;
        }
        let first = d.first_child.load(Relaxed);
        Some(first..first + n)
    }

    pub fn dir_entry(&self, dir: u32) -> u32 {
        self.dirs.at(dir).entry.load(Relaxed)
    }

    pub fn dir_parent(&self, dir: u32) -> u32 {
        self.dirs.at(dir).parent.load(Relaxed)
    }

    pub fn dir_flags(&self, dir: u32) -> u32 {
        self.dirs.at(dir).pending_flags.load(Acquire) & !PENDING_MASK
    }

    pub fn set_dir_flags(&self, dir: u32, add: u32) {
        self.dirs.at(dir).pending_flags.fetch_or(add & !PENDING_MASK, Release);
    }

    // ---- totals and completion ----

    /// Adds sizes and items to `dir` and all its ancestors.
    pub fn add_up(&self, mut dir: u32, disk: u64, apparent: u64, items: u64) {
        while dir != NO_DIR {
            let d = self.dirs.at(dir);
            d.total_disk.fetch_add(disk, Relaxed);
            d.total_apparent.fetch_add(apparent, Relaxed);
            d.items.fetch_add(items, Relaxed);
            dir = d.parent.load(Relaxed);
        }
    }

    /// Marks errors below `dir` on every ancestor.
    pub fn mark_error_below(&self, mut dir: u32) {
        while dir != NO_DIR {
            let d = self.dirs.at(dir);
            if d.pending_flags.fetch_or(D_ERROR_BELOW, Relaxed) & D_ERROR_BELOW != 0 {
                break;
            }
            dir = d.parent.load(Relaxed);
        }
    }

    /// Adds `n` units of pending work to `dir`.
    pub fn add_pending(&self, dir: u32, n: u32) {
        self.dirs.at(dir).pending_flags.fetch_add(n, AcqRel);
    }

    /// Finishes one unit of `dir`'s pending work; a directory whose count reaches zero is
    /// done, and finishes one unit of its parent's.
    pub fn finish(&self, mut dir: u32) {
        while dir != NO_DIR {
            let d = self.dirs.at(dir);
            if d.pending_flags.fetch_sub(1, AcqRel) & PENDING_MASK != 1 {
                return;
            }
            d.pending_flags.fetch_or(D_DONE, Release);
            dir = d.parent.load(Relaxed);
        }
    }

    // ---- side tables ----

    pub fn set_dev(&self, dir: u32, dev: u64) {
        self.devs.lock().unwrap().insert(dir, dev);
    }

    /// The device recorded for `dir` itself (only where it differs from its parent's).
    pub fn dev_of(&self, dir: u32) -> Option<u64> {
        self.devs.lock().unwrap().get(&dir).copied()
    }

    /// Records (dev, ino, nlink) of a multiply-linked file.
    pub fn note_link(&self, id: u32, dev: u64, ino: u64, nlink: u32) {
        self.links.lock().unwrap().insert(id, (dev, ino, nlink));
    }

    /// (dev, ino, nlink) of a multiply-linked file.
    pub fn link_of(&self, id: u32) -> Option<(u64, u64, u32)> {
        self.links.lock().unwrap().get(&id).copied()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Writes `names` as the children of `dir`, returning the first id.
    fn children(a: &Arena, dir: u32, kids: &[NewEntry]) -> u32 {
        let first = a.reserve_entries(kids.len() as u32).unwrap();
        let bytes: u64 = kids.iter().map(|k| name_cost(k.name.len())).sum();
        let mut at = a.reserve_names(bytes).unwrap();
        a.set_layout(dir, first, at);
        for (i, k) in kids.iter().enumerate() {
            a.write_entry(first + i as u32, k, at);
            at += name_cost(k.name.len()) as u32;
        }
        first
    }

    fn root(a: &Arena, own: u64) -> u32 {
        let id = a.reserve_entries(1).unwrap();
        a.write_entry(id, &NewEntry { name: b"", flags: KIND_DIR, ..Default::default() }, a.reserve_names(1).unwrap());
        let dir = a.new_dir(id, NO_DIR, own, own).unwrap();
        a.set_root_name(dir, b"/the/root");
        dir
    }

    #[test]
    fn entries_round_trip_and_overflow() {
        let a = Arena::new();
        let r = root(&a, 4096);
        let long = vec![b'x'; 700];
        let huge = 10u64 << 40;
        let first = children(
            &a,
            r,
            &[
                NewEntry { name: &long, flags: KIND_FILE, disk_bytes: 8192, apparent_bytes: 5000 },
                NewEntry { name: b"\xffbig\n", flags: KIND_FILE | F_HARDLINK, disk_bytes: huge, apparent_bytes: huge },
                NewEntry { name: b"", flags: KIND_SYMLINK, disk_bytes: 0, apparent_bytes: 3 },
            ],
        );
        assert!(a.children(r).is_none(), "unlisted until published");
        a.publish_children(r, first, 3);
        assert_eq!(a.children(r), Some(first..first + 3));
        let mut name = Vec::new();
        a.child_name(r, first, &mut name);
        assert_eq!(name, long);
        a.child_name(r, first + 1, &mut name);
        assert_eq!(name, b"\xffbig\n");
        a.child_name(r, first + 2, &mut name);
        assert_eq!(name, b"");
        assert_eq!(a.dir_name(r), b"/the/root");
        assert_eq!(a.flags(first + 1), KIND_FILE | F_HARDLINK);
        assert_eq!(a.own_sizes(first), (8192, 5000));
        assert_eq!(a.own_sizes(first + 1), (huge, huge));
        assert_eq!(a.own_sizes(first + 2), (0, 3));
        a.add_up(r, 8192 + huge, 5000 + huge + 3, 3);
        assert_eq!(a.dir_totals(r), (4096 + 8192 + huge, 4096 + 5000 + huge + 3, 3));
    }

    #[test]
    fn completion_cascades_to_ancestors() {
        let a = Arena::new();
        let r = root(&a, 0);
        let e = children(&a, r, &[NewEntry { name: b"s", flags: KIND_DIR, ..Default::default() }]);
        let s = a.new_dir(e, r, 0, 0).unwrap();
        assert_eq!(a.dir_name(s), b"s");
        a.add_pending(r, 1);
        a.finish(r);
        assert!(a.dir_flags(r) & D_DONE == 0);
        a.set_dir_flags(s, D_ERROR_BELOW);
        a.finish(s);
        assert!(a.dir_flags(s) & D_DONE != 0 && a.dir_flags(r) & D_DONE != 0);
        assert!(a.dir_flags(s) & D_ERROR_BELOW != 0, "flags survive the pending count");
    }

    #[test]
    fn id_exhaustion_is_an_error_not_a_panic() {
        let a = Arena::new();
        assert_eq!(a.reserve_entries(u32::MAX), Err(Full::Ids));
        assert_eq!(a.full(), Some(Full::Ids));
        assert_eq!(a.reserve_names(u64::from(u32::MAX) + 1), Err(Full::Names));
    }
}
