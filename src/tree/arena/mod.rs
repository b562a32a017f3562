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
//!   listing and get one id range), where its children's names start, its own sizes
//!   (512-byte blocks and bytes in 32 bits each, else in `own_overflow`), running totals
//!   of the subtree, item count, inode number and mtime (for the browser's delete check
//!   and sort), and pending work with the flags in its top bits.
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
//! Totals saturate at `u64::MAX` (GNU du's "Infinity") instead of wrapping;
//! `pending` reaches 0 when a directory's whole subtree is done. Every cell is an atomic,
//! so the arena needs no `unsafe` and no lock on the read path.
//!
//! # Totals in linear time
//!
//! A directory's stored totals hold its own size, what its listing committed (files and
//! the like), and the totals of its subdirectories *that are done*: a directory adds its
//! totals to its parent exactly once, when it is done (`finish`). So the work per entry is
//! constant however deep the tree is (adding every listing to every ancestor made a
//! 20,000-level chain cost 200 million additions). The totals of a done directory are
//! complete; for one still being scanned, `dir_totals` adds the stored totals of the
//! unfinished directories below it, which are the only ones that have not reported yet
//! (a walk over the scan's frontier, not over the tree).
//!
//! What changes the tree after the scan (the browser's deletes and rescans, and taking
//! back what a rescan replaced) is in `change.rs`; the chunked storage in `chunked.rs`;
//! the unit tests in `tests.rs`.

use crate::meta::Kind;
use std::collections::{BTreeSet, HashMap, HashSet};
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicU8, Ordering::*};
use std::sync::Mutex;

mod change;
mod chunked;
mod flags;
mod kept_figures;
#[cfg(test)]
mod tests;

pub use chunked::Chunked;
pub use flags::*;

/// "No id": the arena never hands out this entry id or directory index (reserving stops
/// below `ID_END`), so a `u32` that may name no entry or directory holds it. Keeping "none"
/// in band keeps `Entry` at 8 bytes and `DirSlot` at 64 (an `Option<u32>` is 8 bytes).
pub const NONE: u32 = u32::MAX;
/// Parent of a root directory.
pub const NO_DIR: u32 = NONE;
/// No entry: the first child of a listing that got no ids (the arena was full), the entry
/// of a directory record not attached yet (`new_dir_detached`), a figure of no one entry.
pub const NO_ENTRY: u32 = NONE;
/// Entry ids and directory indexes stay below this, so none of them is ever `NONE` (nor
/// `NONE - 1`, which the treemap uses for "the directory itself").
const ID_END: u64 = NONE as u64 - 1;
/// `child_count` of a directory whose listing has not been published.
pub const UNLISTED: u32 = u32::MAX;
/// An apparent size that lives in the overflow table.
const OVERFLOW: u32 = u32::MAX;

/// One entry: two words, see the module doc.
#[derive(Default)]
pub struct Entry {
    flags_blocks: AtomicU32,
    apparent: AtomicU32,
}

/// Disk blocks that fit beside the flags in word 0; this value means "overflow".
const BLOCKS_OVERFLOW: u32 = (1 << 24) - 1;

/// Whether an entry of these sizes fits its two words (no row in the overflow table).
pub fn fits_in_entry(disk_bytes: u64, apparent_bytes: u64) -> bool {
    disk_bytes.div_ceil(512) < BLOCKS_OVERFLOW as u64 && apparent_bytes < OVERFLOW as u64
}
const _: () = assert!(std::mem::size_of::<Entry>() == 8);

/// One directory. See the module doc.
#[derive(Default)]
pub struct DirSlot {
    parent: AtomicU32,
    entry: AtomicU32,
    first_child: AtomicU32,
    child_count: AtomicU32,
    /// Own disk use in 512-byte blocks and own apparent size; `OVERFLOW` in `own_blocks`
    /// means both live in `own_overflow`.
    own_blocks: AtomicU32,
    own_apparent: AtomicU32,
    total_disk: AtomicU64,
    total_apparent: AtomicU64,
    /// Inode number, checked before the browser deletes anything inside.
    ino: AtomicU64,
    /// Entries below (recursively); ids are `u32`, so this fits.
    items: AtomicU32,
    /// Modification time in seconds since the epoch, clamped to `0..=u32::MAX`.
    mtime: AtomicU32,
    /// Units of unfinished work (low 28 bits) and the `D_*` flags (top 4 bits).
    pending_flags: AtomicU32,
    names_at: AtomicU32,
}
const _: () = assert!(std::mem::size_of::<DirSlot>() == 64);

impl DirSlot {
    /// The directory's flags, read with the ordering that makes its totals visible.
    fn flags(&self) -> DirFlags {
        DirFlags::of_word(self.pending_flags.load(Acquire))
    }
}

/// Free runs by (length, start): the smallest that fits is the first at or after (n, 0).
#[derive(Default)]
struct FreeRuns {
    entries: BTreeSet<(u64, u32)>,
    names: BTreeSet<(u64, u32)>,
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
    pub flags: Flags,
    pub disk_bytes: u64,
    pub apparent_bytes: u64,
}

/// The arena. See the module doc.
pub struct Arena {
    // Chunks of 128 KiB, 256 KiB and 64 KiB: a partly used last chunk wastes little.
    entries: Chunked<Entry, 14>,
    dirs: Chunked<DirSlot, 12>,
    names: Chunked<AtomicU8, 16>,
    next_entry: AtomicU64,
    next_dir: AtomicU64,
    next_name: AtomicU64,
    overflow: Mutex<HashMap<u32, (u64, u64)>>,
    /// Own sizes of directories that do not fit a `DirSlot`, by directory index.
    own_overflow: Mutex<HashMap<u32, (u64, u64)>>,
    /// Device of a directory, where it differs from its parent's.
    devs: Mutex<HashMap<u32, u64>>,
    /// (dev, ino, nlink) of multiply-linked files, by entry id.
    links: Mutex<HashMap<u32, (u64, u64, u32)>>,
    /// Names of root directories (they have no parent to hold them).
    root_names: Mutex<HashMap<u32, Vec<u8>>>,
    /// New records of running rescans (they report to every reopened ancestor).
    rescan_roots: Mutex<HashSet<u32>>,
    full: Mutex<Option<Full>>,
    /// Records replaced by rescans whose runs `reclaim` has not taken back yet.
    retired: Mutex<Vec<u32>>,
    /// Entry-id runs and name-store runs that `reclaim` took back, for the next
    /// reservations (see "Reuse after a rescan" in `change.rs`).
    free: Mutex<FreeRuns>,
    has_free: AtomicBool,
    /// Entries reserved in all (reused ids count again): the progress figures.
    reserved: AtomicU64,
    /// Directory records visited while moving totals (tests check it grows linearly).
    #[cfg(test)]
    pub steps: AtomicU64,
    /// Sharing-aware figures by directory, once a scan with `--shared` (or an import
    /// carrying them) has produced them.
    shared: Mutex<Option<std::sync::Arc<crate::tree::sharing::Figures>>>,
    /// The browser's extent figures of every file, kept to compute `shared` again after
    /// a delete or a rescan.
    shared_input: Mutex<Option<crate::tree::sharing::Collector>>,
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
            own_overflow: Mutex::new(HashMap::new()),
            devs: Mutex::new(HashMap::new()),
            links: Mutex::new(HashMap::new()),
            root_names: Mutex::new(HashMap::new()),
            rescan_roots: Mutex::new(HashSet::new()),
            full: Mutex::new(None),
            retired: Mutex::new(Vec::new()),
            free: Mutex::new(FreeRuns::default()),
            has_free: AtomicBool::new(false),
            reserved: AtomicU64::new(0),
            #[cfg(test)]
            steps: AtomicU64::new(0),
            shared: Mutex::new(None),
            shared_input: Mutex::new(None),
        }
    }

    pub fn full(&self) -> Option<Full> {
        *self.full.lock().unwrap()
    }

    fn refuse(&self, why: Full) -> Full {
        self.full.lock().unwrap().get_or_insert(why);
        why
    }

    /// Number of entries written (or reserved), counting an id again each time a rescan
    /// reuses it: what the progress lines show.
    pub fn entry_count(&self) -> u32 {
        self.reserved.load(Acquire).min(u32::MAX as u64) as u32
    }

    /// Entry ids in use or free (the high-water mark of the entry array).
    #[cfg(test)]
    pub fn entry_high_water(&self) -> u64 {
        self.next_entry.load(Acquire)
    }

    /// Rows of the overflow and hard-link tables (tests: they must not outlive entries).
    #[cfg(test)]
    pub fn side_rows(&self) -> (usize, usize) {
        (self.overflow.lock().unwrap().len(), self.links.lock().unwrap().len())
    }

    /// Free entry ids and free name bytes (tests: with what is live, they make up the
    /// high-water marks exactly).
    #[cfg(test)]
    pub fn free_totals(&self) -> (u64, u64) {
        let f = self.free.lock().unwrap();
        (f.entries.iter().map(|r| r.0).sum(), f.names.iter().map(|r| r.0).sum())
    }

    /// Bytes of name store in use or free (its high-water mark).
    #[cfg(test)]
    pub fn name_high_water(&self) -> u64 {
        self.next_name.load(Acquire)
    }

    /// Uses up all entry ids but `left` (tests of what happens when the arena is full).
    #[cfg(test)]
    pub fn leave_ids(&self, left: u32) {
        self.next_entry.store(ID_END - left as u64, Release);
    }

    /// Reserves `n` contiguous entry ids.
    pub fn reserve_entries(&self, n: u32) -> Result<u32, Full> {
        self.reserved.fetch_add(n as u64, Relaxed);
        if let Some(first) = self.take_free(n as u64, |f| &mut f.entries) {
            return Ok(first);
        }
        let first = self.next_entry.fetch_add(n as u64, Relaxed);
        if first + n as u64 > ID_END {
            return Err(self.refuse(Full::Ids));
        }
        Ok(first as u32)
    }

    /// Creates the directory record for entry `entry` (already written as a directory).
    pub fn new_dir(&self, entry: u32, parent: u32, own_disk: u64, own_apparent: u64) -> Result<u32, Full> {
        let id = self.next_dir.fetch_add(1, Relaxed);
        if id >= ID_END {
            return Err(self.refuse(Full::Ids));
        }
        let id = id as u32;
        self.init_dir(id, parent, entry, own_disk, own_apparent);
        self.entries.at(entry).apparent.store(id, Release);
        Ok(id)
    }

    /// Creates a directory record whose entry is written later (`attach_dir`): the
    /// importer learns a directory's contents before its own id.
    pub fn new_dir_detached(&self, parent: u32, own_disk: u64, own_apparent: u64) -> Result<u32, Full> {
        let id = self.next_dir.fetch_add(1, Relaxed);
        if id >= ID_END {
            return Err(self.refuse(Full::Ids));
        }
        let id = id as u32;
        self.init_dir(id, parent, NO_ENTRY, own_disk, own_apparent);
        Ok(id)
    }

    fn init_dir(&self, id: u32, parent: u32, entry: u32, own_disk: u64, own_apparent: u64) {
        let d = self.dirs.at(id);
        d.parent.store(parent, Relaxed);
        d.entry.store(entry, Relaxed);
        d.child_count.store(UNLISTED, Relaxed);
        self.store_own(id, own_disk, own_apparent);
        d.total_disk.store(own_disk, Relaxed);
        d.total_apparent.store(own_apparent, Relaxed);
        d.pending_flags.store(1, Relaxed);
    }

    /// Stores a directory's own sizes: in the slot when they fit exactly, else on the side.
    fn store_own(&self, dir: u32, disk: u64, apparent: u64) {
        let d = self.dirs.at(dir);
        let blocks = disk / 512;
        if disk % 512 == 0 && blocks < OVERFLOW as u64 && apparent < OVERFLOW as u64 {
            d.own_apparent.store(apparent as u32, Relaxed);
            d.own_blocks.store(blocks as u32, Relaxed);
        } else {
            self.own_overflow.lock().unwrap().insert(dir, (disk, apparent));
            d.own_blocks.store(OVERFLOW, Relaxed);
        }
    }

    /// Binds directory record `dir` to its (written) entry `entry`.
    pub fn attach_dir(&self, dir: u32, entry: u32) {
        self.dirs.at(dir).entry.store(entry, Relaxed);
        self.entries.at(entry).apparent.store(dir, Release);
    }

    /// Replaces a directory's own sizes (its totals move by the difference).
    pub fn set_own(&self, dir: u32, own_disk: u64, own_apparent: u64) {
        let d = self.dirs.at(dir);
        let (old_disk, old_apparent) = self.dir_own(dir);
        self.store_own(dir, own_disk, own_apparent);
        saturating_sub(&d.total_disk, old_disk);
        saturating_add(&d.total_disk, own_disk);
        saturating_sub(&d.total_apparent, old_apparent);
        saturating_add(&d.total_apparent, own_apparent);
    }

    /// Reserves `bytes` of contiguous name store (a directory's children's names).
    pub fn reserve_names(&self, bytes: u64) -> Result<u32, Full> {
        if let Some(start) = self.take_free(bytes, |f| &mut f.names) {
            return Ok(start);
        }
        let start = self.next_name.fetch_add(bytes, Relaxed);
        if start + bytes > u32::MAX as u64 {
            return Err(self.refuse(Full::Names));
        }
        Ok(start as u32)
    }

    /// Reserves `n` entry ids and `bytes` of name store for a listing whose size is only
    /// bounded so far (`tree::sink`'s early reservations): `None`, and nothing taken or
    /// marked full, when either does not fit, since the caller can go on without. The
    /// ids are not counted as entries (`entry_count`, the progress lines) until the
    /// listing's own count is known (`count_entries`).
    pub fn reserve_early(&self, n: u32, bytes: u64) -> Option<(u32, u32)> {
        let take = |next: &AtomicU64, want: u64, end: u64| {
            next.fetch_update(Relaxed, Relaxed, |at| (at + want <= end).then_some(at + want)).ok()
        };
        let first = take(&self.next_entry, n as u64, ID_END)?;
        let Some(names) = take(&self.next_name, bytes, u32::MAX as u64) else {
            self.give_back(first as u32, n, 0, 0);
            return None;
        };
        Some((first as u32, names as u32))
    }

    /// Gives back `n` entry ids from `first` and `bytes` of name store from `names_at`,
    /// reserved and never written (the rest of an early reservation): later listings
    /// take them as they take what a rescan freed.
    pub fn give_back(&self, first: u32, n: u32, names_at: u32, bytes: u64) {
        if n > 0 || bytes > 0 {
            self.put_free(&[(first, n)], &[(names_at, bytes)]);
        }
    }

    /// Counts `n` entries of an early reservation as reserved (`entry_count`).
    pub fn count_entries(&self, n: u32) {
        self.reserved.fetch_add(n as u64, Relaxed);
    }

    /// Copies entries `from..from + n` to `to..` and name bytes `names_from..names_from +
    /// bytes` to `names_to..`: an early reservation that turned out too small moves, its
    /// entries being plain ones (no directory record, side table or figure names their
    /// ids). No other writer may touch either range meanwhile.
    pub fn move_entries(&self, (from, to, n): (u32, u32, u32), (names_from, names_to, bytes): (u32, u32, u64)) {
        for k in 0..n {
            let (a, b) = (self.entries.at(from + k), self.entries.at(to + k));
            b.apparent.store(a.apparent.load(Relaxed), Relaxed);
            b.flags_blocks.store(a.flags_blocks.load(Acquire), Release);
        }
        for k in 0..bytes.min(u32::MAX as u64) as u32 {
            self.names.at(names_to + k).store(self.names.at(names_from + k).load(Relaxed), Relaxed);
        }
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
        if !e.flags.is_dir() {
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
        slot.flags_blocks.store(e.flags.in_word() | blocks, Release);
    }

    fn put_name(&self, name: &[u8], at: u32) {
        let len = name.len().min(u16::MAX as usize);
        let mut head = [len as u8, 0, 0];
        let head = if len >= 255 {
            head = [255, len as u8, (len >> 8) as u8];
            &head[..]
        } else {
            &head[..1]
        };
        let mut bytes = head.iter().chain(&name[..len]);
        self.names.runs(at, head.len() + len, &mut |run| {
            for (cell, &b) in run.iter().zip(&mut bytes) {
                cell.store(b, Relaxed);
            }
        });
    }

    /// (length, where the bytes start) of the name stored at `at`.
    fn name_header(&self, at: u32) -> (usize, u32) {
        let len = self.names.at(at).load(Relaxed) as usize;
        if len == 255 {
            let long =
                self.names.at(at + 1).load(Relaxed) as usize | (self.names.at(at + 2).load(Relaxed) as usize) << 8;
            return (long, at + 3);
        }
        (len, at + 1)
    }

    /// Reads the name stored at `at` into `out`; returns where the next name starts.
    pub fn read_name(&self, at: u32, out: &mut Vec<u8>) -> u32 {
        out.clear();
        let (len, p) = self.name_header(at);
        self.names.runs(p, len, &mut |run| out.extend(run.iter().map(|c| c.load(Relaxed))));
        p + len as u32
    }

    /// Where the name after the one stored at `at` starts.
    pub fn skip_name(&self, at: u32) -> u32 {
        let (len, p) = self.name_header(at);
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
            at = self.skip_name(at);
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

    pub fn flags(&self, id: u32) -> Flags {
        Flags::of_word(self.entries.at(id).flags_blocks.load(Acquire))
    }

    /// Adds flag bits to a written entry.
    pub fn add_flags(&self, id: u32, bits: Flags) {
        self.entries.at(id).flags_blocks.fetch_or(bits.in_word(), AcqRel);
    }

    pub fn kind(&self, id: u32) -> Kind {
        self.flags(id).kind()
    }

    /// The directory index of a directory entry.
    pub fn dir_of(&self, id: u32) -> u32 {
        self.entries.at(id).apparent.load(Acquire)
    }

    /// (disk bytes, apparent bytes) of the entry itself (for a directory: its own inode).
    pub fn own_sizes(&self, id: u32) -> (u64, u64) {
        if self.kind(id) == Kind::Dir {
            return self.dir_own(self.dir_of(id));
        }
        let e = self.entries.at(id);
        let blocks = e.flags_blocks.load(Relaxed) & BLOCKS_OVERFLOW;
        if blocks == BLOCKS_OVERFLOW {
            return self.overflow.lock().unwrap().get(&id).copied().unwrap_or((0, 0));
        }
        (blocks as u64 * 512, e.apparent.load(Relaxed) as u64)
    }

    /// (disk, apparent, items below) of directory index `dir`'s subtree: exact once it is
    /// done; while it is scanned, what has been found so far (the stored totals of the
    /// unfinished directories below are added, see the module doc).
    pub fn dir_totals(&self, dir: u32) -> (u64, u64, u64) {
        let mut sum = self.stored_totals(dir);
        if self.dir_flags(dir).is_done() {
            return sum;
        }
        let mut todo = vec![dir];
        while let Some(d) = todo.pop() {
            let Some(kids) = self.children(d) else { continue };
            for id in kids {
                let flags = self.flags(id);
                if !flags.is_dir() || flags.contains(F_REMOVED) {
                    continue;
                }
                let sub = self.dir_of(id);
                let flags = self.dirs.at(sub).flags();
                // The parent check keeps a half-written record from looping back.
                if flags.is_done() || self.dir_parent(sub) != d || sub == d {
                    continue;
                }
                // A directory reopened by a rescan reported before; only what is below it
                // (the rescan's new record) has not.
                if !flags.contains(D_RESCAN) || self.rescan_roots.lock().unwrap().contains(&sub) {
                    let t = self.stored_totals(sub);
                    sum = (sum.0.saturating_add(t.0), sum.1.saturating_add(t.1), sum.2 + t.2);
                }
                todo.push(sub);
            }
        }
        sum
    }

    /// The stored totals of `dir` (complete only once it is done).
    pub fn stored_totals(&self, dir: u32) -> (u64, u64, u64) {
        let d = self.dirs.at(dir);
        (d.total_disk.load(Relaxed), d.total_apparent.load(Relaxed), d.items.load(Relaxed) as u64)
    }

    /// (disk, apparent) of directory index `dir`'s own inode.
    pub fn dir_own(&self, dir: u32) -> (u64, u64) {
        let d = self.dirs.at(dir);
        let blocks = d.own_blocks.load(Relaxed);
        if blocks == OVERFLOW {
            return self.own_overflow.lock().unwrap().get(&dir).copied().unwrap_or((0, 0));
        }
        (blocks as u64 * 512, d.own_apparent.load(Relaxed) as u64)
    }

    /// Records a directory's inode number and modification time (seconds).
    pub fn set_dir_stat(&self, dir: u32, ino: u64, mtime_sec: i64) {
        let d = self.dirs.at(dir);
        d.ino.store(ino, Relaxed);
        d.mtime.store(mtime_sec.clamp(0, u32::MAX as i64) as u32, Relaxed);
    }

    /// The inode number recorded for directory `dir` (0 if unknown, as after an import).
    pub fn dir_ino(&self, dir: u32) -> u64 {
        self.dirs.at(dir).ino.load(Relaxed)
    }

    /// The modification time recorded for directory `dir`, in seconds (0 if unknown).
    pub fn dir_mtime(&self, dir: u32) -> u32 {
        self.dirs.at(dir).mtime.load(Relaxed)
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

    pub fn dir_flags(&self, dir: u32) -> DirFlags {
        self.dirs.at(dir).flags()
    }

    pub fn set_dir_flags(&self, dir: u32, add: DirFlags) {
        self.dirs.at(dir).pending_flags.fetch_or(add.in_word(), Release);
    }

    // ---- totals and completion ----

    /// Counts one directory record visited while moving totals (tests only).
    #[inline]
    fn step(&self) {
        #[cfg(test)]
        self.steps.fetch_add(1, Relaxed);
    }

    /// Adds sizes and items to `dir`'s stored totals only (a listing's entries; its
    /// subdirectories report when they are done).
    pub fn add_here(&self, dir: u32, disk: u64, apparent: u64, items: u64) {
        self.step();
        let d = self.dirs.at(dir);
        saturating_add(&d.total_disk, disk);
        saturating_add(&d.total_apparent, apparent);
        d.items.fetch_add(items as u32, Relaxed);
    }

    /// Runs `f` on `dir` and on each ancestor whose totals hold `dir`'s: upward while a
    /// directory is done (it reported to its parent) or reopened by a rescan, and on the
    /// first one that is neither.
    fn each_holder(&self, mut dir: u32, f: impl Fn(&DirSlot)) {
        while dir != NO_DIR {
            self.step();
            let d = self.dirs.at(dir);
            f(d);
            if !d.flags().intersects(D_DONE | D_RESCAN) {
                return;
            }
            dir = d.parent.load(Relaxed);
        }
    }

    /// Adds sizes and items to `dir` and every ancestor (trees built by hand in tests,
    /// where every directory is marked done).
    #[cfg(test)]
    pub fn add_up(&self, mut dir: u32, disk: u64, apparent: u64, items: u64) {
        while dir != NO_DIR {
            self.add_here(dir, disk, apparent, items);
            dir = self.dir_parent(dir);
        }
    }

    /// Takes sizes and items away from `dir` and the ancestors that hold them (a saturated
    /// total stays saturated: what it held is unknown).
    pub fn sub_up(&self, dir: u32, disk: u64, apparent: u64, items: u64) {
        self.each_holder(dir, |d| {
            saturating_sub(&d.total_disk, disk);
            saturating_sub(&d.total_apparent, apparent);
            d.items.fetch_sub(items as u32, Relaxed);
        });
    }

    /// Marks errors below `dir` on every ancestor.
    pub fn mark_error_below(&self, mut dir: u32) {
        while dir != NO_DIR {
            let d = self.dirs.at(dir);
            if DirFlags::of_word(d.pending_flags.fetch_or(D_ERROR_BELOW.in_word(), Relaxed)).error_below() {
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
    /// done: it reports its totals upward (`complete`) and finishes one unit of its
    /// parent's.
    pub fn finish(&self, mut dir: u32) {
        while dir != NO_DIR {
            let d = self.dirs.at(dir);
            if d.pending_flags.fetch_sub(1, AcqRel) & PENDING_MASK != 1 {
                return;
            }
            self.complete(dir);
            dir = d.parent.load(Relaxed);
        }
    }

    /// Marks `dir` done after adding its totals to the parent's, once. A rescan's new
    /// record adds them to every reopened ancestor (and the first other one) instead; a
    /// reopened ancestor adds nothing (it reported before the rescan).
    fn complete(&self, dir: u32) {
        let d = self.dirs.at(dir);
        let parent = d.parent.load(Relaxed);
        let (disk, apparent, items) = self.stored_totals(dir);
        let add = |p: &DirSlot| {
            saturating_add(&p.total_disk, disk);
            saturating_add(&p.total_apparent, apparent);
            p.items.fetch_add(items as u32, Relaxed);
        };
        if !d.flags().contains(D_RESCAN) {
            if parent != NO_DIR {
                self.step();
                add(self.dirs.at(parent));
            }
        } else if self.rescan_roots.lock().unwrap().remove(&dir) {
            self.each_holder(parent, add);
        }
        // Done before the flag goes: `each_holder` walks past done or reopened records.
        d.pending_flags.fetch_or(D_DONE.in_word(), Release);
        d.pending_flags.fetch_and(!D_RESCAN.in_word(), Release);
    }

    // ---- side tables ----

    pub fn set_dev(&self, dir: u32, dev: u64) {
        self.devs.lock().unwrap().insert(dir, dev);
    }

    /// The device recorded for `dir` itself (only where it differs from its parent's).
    pub fn dev_of(&self, dir: u32) -> Option<u64> {
        self.devs.lock().unwrap().get(&dir).copied()
    }

    /// The device `dir` is on: its own record or its nearest ancestor's.
    pub fn dir_dev(&self, mut dir: u32) -> u64 {
        let devs = self.devs.lock().unwrap();
        while dir != NO_DIR {
            if let Some(&dev) = devs.get(&dir) {
                return dev;
            }
            dir = self.dir_parent(dir);
        }
        0
    }

    /// Records (dev, ino, nlink) of a multiply-linked file.
    pub fn note_link(&self, id: u32, dev: u64, ino: u64, nlink: u32) {
        self.links.lock().unwrap().insert(id, (dev, ino, nlink));
    }

    /// Every multiply-linked file noted so far: (entry id, dev, ino).
    pub fn link_table(&self) -> Vec<(u32, u64, u64)> {
        self.links.lock().unwrap().iter().map(|(&id, &(dev, ino, _))| (id, dev, ino)).collect()
    }

    /// (dev, ino, nlink) of a multiply-linked file.
    pub fn link_of(&self, id: u32) -> Option<(u64, u64, u32)> {
        self.links.lock().unwrap().get(&id).copied()
    }
}

/// Adds `v` to a total, saturating at `u64::MAX`. The common case is one `fetch_add`; an
/// add that wrapped stores the saturated value back (any add racing with it wraps from
/// `u64::MAX` too and stores the same), so a total never ends below what it should hold.
fn saturating_add(total: &AtomicU64, v: u64) {
    let old = total.fetch_add(v, Relaxed);
    if old.checked_add(v).is_none() {
        total.store(u64::MAX, Relaxed);
    }
}

/// Takes `v` from a total, stopping at 0; a saturated total stays saturated.
fn saturating_sub(total: &AtomicU64, v: u64) {
    let _ = total.fetch_update(Relaxed, Relaxed, |t| Some(if t == u64::MAX { t } else { t.saturating_sub(v) }));
}
