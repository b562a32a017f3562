//! The entry arena: every scanned entry, addressed by a `u32` id, in a few bytes each,
//! readable while the scan is still writing it.
//!
//! # Layout
//!
//! * **Entries**: 12 bytes each (`Entry`): disk use in 512-byte blocks and apparent size
//!   in bytes as `u32`s (a value of `u32::MAX` means "see the overflow table"), and the
//!   offset of the entry's record in the name store. For a directory the size words
//!   hold its directory index instead (its sizes live in the directory table).
//! * **Name store**: per entry `[flags: u8][len: u8][name bytes]`; names longer than 254
//!   bytes write `len = 255` followed by a little-endian `u16` length. The flags byte
//!   holds the kind (file, dir, symlink, other) and the error/exclusion/hard-link bits,
//!   so an entry costs 12 + 2 + name bytes.
//! * **Directory table**: 64 bytes per directory (`DirSlot`): parent, own entry, first
//!   child and child count (children of one directory are contiguous: they come from one
//!   listing and get one id range), its own sizes, running totals of the subtree, item
//!   count, pending work and flags.
//! * **Side tables**: sizes that do not fit a `u32` (`overflow`), the device of each
//!   directory that differs from its parent's (`devs`), and (dev, ino) of multiply-linked
//!   files (`links`) — only entries with nlink > 1 pay for it.
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
/// A size word that lives in the overflow table.
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

/// One entry: three words, see the module doc.
#[derive(Default)]
pub struct Entry {
    disk_blocks: AtomicU32,
    apparent: AtomicU32,
    name_at: AtomicU32,
}
const _: () = assert!(std::mem::size_of::<Entry>() == 12);

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
    pending: AtomicU32,
    flags: AtomicU32,
}
const _: () = assert!(std::mem::size_of::<DirSlot>() == 64);

/// Directory flags.
pub const D_DONE: u32 = 1;
pub const D_READ_ERROR: u32 = 2;
pub const D_ERROR_BELOW: u32 = 4;

const LEAF_BITS: u32 = 16;
const MID_BITS: u32 = 8;

/// A growable array of `T` in fixed chunks of 65,536, indexed by `u32`, shared by
/// threads: chunk `i` is created once (by whoever needs it first) and never moves.
pub struct Chunked<T> {
    top: Box<[OnceLock<Mid<T>>]>,
}

/// The middle level of a `Chunked`: 256 lazily created chunks.
type Mid<T> = Box<[OnceLock<Box<[T]>>]>;

impl<T: Default> Chunked<T> {
    pub fn new() -> Self {
        let top_len = 1usize << (32 - LEAF_BITS - MID_BITS);
        Chunked { top: (0..top_len).map(|_| OnceLock::new()).collect() }
    }

    fn leaf(&self, i: u32) -> &[T] {
        let mid = self.top[(i >> (LEAF_BITS + MID_BITS)) as usize]
            .get_or_init(|| (0..1usize << MID_BITS).map(|_| OnceLock::new()).collect());
        mid[((i >> LEAF_BITS) & ((1 << MID_BITS) - 1)) as usize]
            .get_or_init(|| (0..1usize << LEAF_BITS).map(|_| T::default()).collect())
    }

    /// The slot for index `i`, creating its chunk if needed.
    #[inline]
    pub fn at(&self, i: u32) -> &T {
        &self.leaf(i)[(i & ((1 << LEAF_BITS) - 1)) as usize]
    }
}

impl<T: Default> Default for Chunked<T> {
    fn default() -> Self {
        Self::new()
    }
}

/// Bytes of the name store a writer reserves at a time.
const NAME_BLOCK: u32 = 64 * 1024;

/// A writer's private slice of the name store.
#[derive(Default)]
pub struct NameCursor {
    at: u32,
    end: u32,
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
    entries: Chunked<Entry>,
    dirs: Chunked<DirSlot>,
    names: Chunked<AtomicU8>,
    next_entry: AtomicU64,
    next_dir: AtomicU64,
    next_name: AtomicU64,
    overflow: Mutex<HashMap<u32, (u64, u64)>>,
    /// Device of a directory, where it differs from its parent's.
    devs: Mutex<HashMap<u32, u64>>,
    /// (dev, ino, nlink) of multiply-linked files, by entry id.
    links: Mutex<HashMap<u32, (u64, u64, u32)>>,
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

    pub fn dir_count(&self) -> u32 {
        self.next_dir.load(Acquire).min(u32::MAX as u64) as u32
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
        d.pending.store(1, Relaxed);
        let e = self.entries.at(entry);
        e.disk_blocks.store(id, Release);
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
        d.pending.store(1, Relaxed);
        Ok(id)
    }

    /// Binds directory record `dir` to its (written) entry `entry`.
    pub fn attach_dir(&self, dir: u32, entry: u32) {
        self.dirs.at(dir).entry.store(entry, Relaxed);
        self.entries.at(entry).disk_blocks.store(dir, Release);
    }

    /// Replaces a directory's own sizes (its totals move by the difference).
    pub fn set_own(&self, dir: u32, own_disk: u64, own_apparent: u64) {
        let d = self.dirs.at(dir);
        let old_disk = d.own_disk.swap(own_disk, Relaxed);
        let old_apparent = d.own_apparent.swap(own_apparent, Relaxed);
        d.total_disk.fetch_add(own_disk.wrapping_sub(old_disk), Relaxed);
        d.total_apparent.fetch_add(own_apparent.wrapping_sub(old_apparent), Relaxed);
    }

    /// Writes entry `id` (reserved earlier). Directories get their index via `new_dir`.
    pub fn write_entry(&self, id: u32, e: &NewEntry, cursor: &mut NameCursor) -> Result<(), Full> {
        let at = self.put_name(e.flags, e.name, cursor)?;
        let slot = self.entries.at(id);
        if e.flags & 3 != KIND_DIR {
            let blocks = e.disk_bytes.div_ceil(512);
            if blocks >= OVERFLOW as u64 || e.apparent_bytes >= OVERFLOW as u64 {
                self.overflow.lock().unwrap().insert(id, (e.disk_bytes, e.apparent_bytes));
                slot.disk_blocks.store(OVERFLOW, Relaxed);
                slot.apparent.store(OVERFLOW, Relaxed);
            } else {
                slot.disk_blocks.store(blocks as u32, Relaxed);
                slot.apparent.store(e.apparent_bytes as u32, Relaxed);
            }
        }
        slot.name_at.store(at, Release);
        Ok(())
    }

    fn put_name(&self, flags: u8, name: &[u8], cursor: &mut NameCursor) -> Result<u32, Full> {
        let len = name.len().min(u16::MAX as usize);
        let need = 2 + len as u32 + if len >= 255 { 2 } else { 0 };
        if cursor.end - cursor.at < need {
            let block = need.max(NAME_BLOCK);
            let start = self.next_name.fetch_add(block as u64, Relaxed);
            if start + block as u64 > u32::MAX as u64 {
                return Err(self.refuse(Full::Names));
            }
            cursor.at = start as u32;
            cursor.end = cursor.at + block;
        }
        let at = cursor.at;
        let mut p = at;
        let mut put = |b: u8| {
            self.names.at(p).store(b, Relaxed);
            p += 1;
        };
        put(flags);
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
        cursor.at += need;
        Ok(at)
    }

    /// Publishes a directory's children: `first .. first + count`.
    pub fn publish_children(&self, dir: u32, first: u32, count: u32) {
        let d = self.dirs.at(dir);
        d.first_child.store(first, Relaxed);
        d.child_count.store(count, Release);
    }

    // ---- reading ----

    pub fn flags(&self, id: u32) -> u8 {
        let at = self.entries.at(id).name_at.load(Acquire);
        self.names.at(at).load(Relaxed)
    }

    pub fn kind(&self, id: u32) -> u8 {
        self.flags(id) & 3
    }

    /// Copies entry `id`'s name into `out` (cleared first).
    pub fn name_into(&self, id: u32, out: &mut Vec<u8>) {
        out.clear();
        let at = self.entries.at(id).name_at.load(Acquire);
        let mut p = at + 1;
        let mut len = self.names.at(p).load(Relaxed) as usize;
        p += 1;
        if len == 255 {
            len = self.names.at(p).load(Relaxed) as usize | (self.names.at(p + 1).load(Relaxed) as usize) << 8;
            p += 2;
        }
        out.extend((0..len as u32).map(|i| self.names.at(p + i).load(Relaxed)));
    }

    pub fn name(&self, id: u32) -> Vec<u8> {
        let mut v = Vec::new();
        self.name_into(id, &mut v);
        v
    }

    /// The directory index of a directory entry.
    pub fn dir_of(&self, id: u32) -> u32 {
        self.entries.at(id).disk_blocks.load(Acquire)
    }

    /// (disk bytes, apparent bytes) of the entry itself (for a directory: its own inode).
    pub fn own_sizes(&self, id: u32) -> (u64, u64) {
        if self.kind(id) == KIND_DIR {
            let d = self.dirs.at(self.dir_of(id));
            return (d.own_disk.load(Relaxed), d.own_apparent.load(Relaxed));
        }
        let e = self.entries.at(id);
        let blocks = e.disk_blocks.load(Relaxed);
        if blocks == OVERFLOW {
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
        self.dirs.at(dir).flags.load(Acquire)
    }

    pub fn set_dir_flags(&self, dir: u32, add: u32) {
        self.dirs.at(dir).flags.fetch_or(add, Release);
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
            if d.flags.fetch_or(D_ERROR_BELOW, Relaxed) & D_ERROR_BELOW != 0 {
                break;
            }
            dir = d.parent.load(Relaxed);
        }
    }

    /// Adds `n` units of pending work to `dir`.
    pub fn add_pending(&self, dir: u32, n: u32) {
        self.dirs.at(dir).pending.fetch_add(n, AcqRel);
    }

    /// Finishes one unit of `dir`'s pending work; a directory whose count reaches zero is
    /// done, and finishes one unit of its parent's.
    pub fn finish(&self, mut dir: u32) {
        while dir != NO_DIR {
            let d = self.dirs.at(dir);
            if d.pending.fetch_sub(1, AcqRel) != 1 {
                return;
            }
            d.flags.fetch_or(D_DONE, Release);
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

    #[test]
    fn entries_round_trip_and_overflow() {
        let a = Arena::new();
        let mut cur = NameCursor::default();
        let first = a.reserve_entries(3).unwrap();
        let long = vec![b'x'; 700];
        a.write_entry(first, &NewEntry { name: b"root", flags: KIND_DIR, ..Default::default() }, &mut cur).unwrap();
        let root = a.new_dir(first, NO_DIR, 4096, 4096).unwrap();
        a.write_entry(
            first + 1,
            &NewEntry { name: &long, flags: KIND_FILE, disk_bytes: 8192, apparent_bytes: 5000 },
            &mut cur,
        )
        .unwrap();
        let huge = 10u64 << 40;
        a.write_entry(
            first + 2,
            &NewEntry { name: b"\xffbig\n", flags: KIND_FILE, disk_bytes: huge, apparent_bytes: huge },
            &mut cur,
        )
        .unwrap();
        assert!(a.children(root).is_none(), "unlisted until published");
        a.publish_children(root, first + 1, 2);
        assert_eq!(a.children(root), Some(first + 1..first + 3));
        assert_eq!(a.name(first + 1), long);
        assert_eq!(a.name(first + 2), b"\xffbig\n");
        assert_eq!(a.own_sizes(first + 1), (8192, 5000));
        assert_eq!(a.own_sizes(first + 2), (huge, huge));
        assert_eq!(a.own_sizes(first), (4096, 4096));
        a.add_up(root, 8192 + huge, 5000 + huge, 2);
        assert_eq!(a.dir_totals(root), (4096 + 8192 + huge, 4096 + 5000 + huge, 2));
    }

    #[test]
    fn completion_cascades_to_ancestors() {
        let a = Arena::new();
        let mut cur = NameCursor::default();
        let e = a.reserve_entries(2).unwrap();
        a.write_entry(e, &NewEntry { name: b"r", flags: KIND_DIR, ..Default::default() }, &mut cur).unwrap();
        let r = a.new_dir(e, NO_DIR, 0, 0).unwrap();
        a.write_entry(e + 1, &NewEntry { name: b"s", flags: KIND_DIR, ..Default::default() }, &mut cur).unwrap();
        let s = a.new_dir(e + 1, r, 0, 0).unwrap();
        a.add_pending(r, 1);
        a.finish(r);
        assert!(a.dir_flags(r) & D_DONE == 0);
        a.finish(s);
        assert!(a.dir_flags(s) & D_DONE != 0 && a.dir_flags(r) & D_DONE != 0);
    }

    #[test]
    fn id_exhaustion_is_an_error_not_a_panic() {
        let a = Arena::new();
        assert_eq!(a.reserve_entries(u32::MAX), Err(Full::Ids));
        assert_eq!(a.full(), Some(Full::Ids));
    }
}
