//! du's sink: one small record per directory (sizes of its plain files folded in) plus
//! the few entries that must be looked at again in traversal order — subdirectories,
//! hard-link candidates, errors, and every file only when `-a` prints files. Those items
//! wait per directory until du's ordered pass, which runs while the scan goes on, takes
//! them (`Records::enter`): memory follows what is found but not yet printed, not the tree.

use crate::meta::{Errno, Kind, Measure, Meta, TimeKind, Timespec};
use crate::walk::scan::{Child, Listed, Pos, Seen, Sink};
use std::collections::{HashMap, HashSet};
use std::ffi::CString;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Condvar, Mutex, MutexGuard};

/// What an item stands for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum ItemKind {
    /// A subdirectory; `target` is its record.
    Dir,
    /// A directory already claimed by another path (`-L`): visit it through the claim.
    Alias,
    /// A plain file already summed into its directory, kept for printing (`-a`).
    File,
    /// A file that may have another name: counted only if first in traversal order.
    Candidate,
    /// `stat` failed; `target` is the error number.
    NoAccess,
}

/// One entry kept for the ordered pass (it waits in its directory's `DirItems`). 40 bytes.
#[derive(Clone, Copy, Debug)]
pub struct Item {
    /// Position in the directory listing (readdir order).
    pub idx: u32,
    /// Listing inode for directories and errors (the sort key), stat'ed inode for files.
    pub ino: u64,
    pub dev: u64,
    /// Measured size in bytes.
    pub size_bytes: u64,
    pub name_off: u32,
    pub name_len: u16,
    pub kind: ItemKind,
    pub target: u32,
}
const _: () = assert!(std::mem::size_of::<Item>() == 40);

/// The flags of one directory record: how to list it, what went wrong, and how far the
/// workers got with it (the ordered pass waits on those).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RecFlags(u8);

impl RecFlags {
    /// Whether every bit of `bits` is set.
    pub fn contains(self, bits: RecFlags) -> bool {
        self.0 & bits.0 == bits.0
    }

    /// Whether any bit of `bits` is set.
    pub fn intersects(self, bits: RecFlags) -> bool {
        self.0 & bits.0 != 0
    }
}

impl std::ops::BitOr for RecFlags {
    type Output = RecFlags;
    fn bitor(self, bits: RecFlags) -> RecFlags {
        RecFlags(self.0 | bits.0)
    }
}

impl std::ops::BitOrAssign for RecFlags {
    fn bitor_assign(&mut self, bits: RecFlags) {
        self.0 |= bits.0;
    }
}

/// Its batches of entries are sorted by inode number (see `DirItems`).
pub const REC_SORT_BY_INODE: RecFlags = RecFlags(1);
/// Its listing failed before any entry came (GNU's "cannot read directory"), or could not
/// be opened at all (with `REC_GONE`).
pub const REC_UNREADABLE: RecFlags = RecFlags(2);
/// Its listing failed part-way; what came before the error is in.
pub const REC_PARTIAL: RecFlags = RecFlags(4);
/// Moved away from its parent while it was being scanned (`Sink::moved`).
pub const REC_MOVED: RecFlags = RecFlags(8);
/// Every item of the directory is in (`Sink::written`).
const REC_WRITTEN: RecFlags = RecFlags(16);
/// Its whole subtree is scanned, so `REC_MOVED` is final (`Sink::finished`).
const REC_FINISHED: RecFlags = RecFlags(32);
/// It could not be opened (`Sink::unreadable`): nothing more will come for it.
const REC_GONE: RecFlags = RecFlags(64);
/// Its whole subtree is summed into it (`Keep::fold_subtrees`): `files_bytes`,
/// `files_count` and the files' time cover everything below it, and its subdirectories'
/// records are gone.
const REC_FOLDED: RecFlags = RecFlags(128);

/// No record: what the ordered pass asks for when it waits for the end of the scan.
/// Record ids stay below it (`commit` stops the tree there).
const SCAN_END: u32 = u32::MAX;

/// One directory. Sums cover the plain (non-candidate) files directly inside it.
#[derive(Clone, Copy, Debug, Default)]
pub struct DirRec {
    pub dev: u64,
    pub ino: u64,
    pub self_bytes: u64,
    pub files_bytes: u64,
    pub files_count: u64,
    pub n_entries: u32,
    pub errno: i32,
    pub flags: RecFlags,
}

/// The items of one directory, in the order they were committed.
#[derive(Default)]
pub struct DirItems {
    pub items: Vec<Item>,
    /// Names, at `Item::name_off`.
    pub names: Vec<u8>,
    /// One per item, only when `--time` asked for times.
    pub times: Vec<Timespec>,
}

impl DirItems {
    pub fn name(&self, item: &Item) -> &[u8] {
        let off = item.name_off as usize;
        &self.names[off..off + item.name_len as usize]
    }

    pub fn time(&self, i: usize) -> Timespec {
        self.times.get(i).copied().unwrap_or(Timespec::MIN)
    }
}

/// A directory as the ordered pass sees it.
#[derive(Clone, Copy)]
pub struct RecView {
    pub rec: DirRec,
    /// The directory's own time and the newest plain file directly inside it (`--time`).
    pub self_time: Timespec,
    pub files_time: Timespec,
}

/// A directory between its discovery and the moment the ordered pass leaves it. Small:
/// the directories in flight are many when the workers are far ahead.
#[derive(Default)]
struct Slot {
    rec: DirRec,
    extra: Option<Box<Extra>>,
}

/// What only some directories have.
#[derive(Default)]
struct Extra {
    /// Its own time and the newest plain file directly inside (`--time`).
    times: (Timespec, Timespec),
    /// Items not yet taken by the ordered pass.
    items: DirItems,
}

impl Slot {
    fn new(rec: DirRec, time: Option<Timespec>) -> Slot {
        Slot { rec, extra: time.map(|t| Box::new(Extra { times: (t, Timespec::MIN), items: DirItems::default() })) }
    }

    fn times(&self) -> (Timespec, Timespec) {
        self.extra.as_ref().map_or((Timespec::MIN, Timespec::MIN), |e| e.times)
    }

    fn extra(&mut self) -> &mut Extra {
        self.extra.get_or_insert_with(Box::default)
    }
}

/// What the scan built; the ordered pass takes directories out as it goes, so only those
/// in flight are held.
#[derive(Default)]
struct Tree {
    slots: HashMap<u32, Slot>,
    /// Records handed out so far (the next id).
    next_id: u64,
    /// (dev, ino) of every counted entry, when `collect_inodes`, and of the multiply-
    /// linked files counted with `fold_links`.
    inodes: Vec<(u64, u64)>,
    /// With `-L`: the record holding each directory claimed during the scan.
    claims: Vec<((u64, u64), u32)>,
    /// Set when the tree outgrew 32-bit ids.
    overflow: bool,
    /// The scan has returned: nothing more will come.
    done: bool,
    /// What the ordered pass waits for on `Records::ready`: (record, flags), or
    /// `(SCAN_END, no flags)` for the end of the scan.
    wanted: Option<(u32, RecFlags)>,
    /// Workers waiting on `Records::drained` in `throttle`.
    throttled: u32,
}

/// What is left once the scan and the ordered pass are over.
pub struct Rest {
    pub inodes: Vec<(u64, u64)>,
    pub overflow: bool,
}

/// What du keeps, and how.
#[derive(Clone, Copy)]
pub struct Keep {
    pub measure: Measure,
    pub time: Option<TimeKind>,
    /// Keep plain files as items when their directory is shallower than this (`-a`).
    pub files_depth: Option<u32>,
    /// Every non-directory is a hard-link candidate (`-L`).
    pub all_candidates: bool,
    /// Collect (dev, ino) of every counted entry, for later arguments.
    pub collect_inodes: bool,
    /// Record claims of directories (`-L` with deduplication).
    pub claims: bool,
    /// Count each multiply-linked inode once as it is seen, instead of keeping its names
    /// for the ordered pass: right when only the argument's total is printed (`-s`),
    /// where which name is charged cannot show.
    pub fold_links: bool,
    /// Sum each finished subtree the ordered pass has not reached into its top directory
    /// (`REC_FOLDED`) and forget the records below it, so that what waits for the ordered
    /// pass stays small when the workers run far ahead. Only where nothing below a
    /// directory can print or change a later decision: `-s` (with `fold_links`) over one
    /// argument, whose subdirectories are never looked up again (`Records::key`), and
    /// never a subtree with an error in it (the ordered pass reports those in order).
    pub fold_subtrees: bool,
    /// `PENDING_BUDGET`, or what the debugging knob `DFDU_DEBUG_PENDING_BUDGET` says.
    pub pending_budget: usize,
}

/// What the ordered pass finds when it enters a directory.
pub enum Entered {
    /// Its record and items, to be visited.
    Dir(RecView, DirItems),
    /// A folded subtree (`REC_FOLDED`): the record alone, already forgotten here.
    Folded(RecView),
}

/// Bytes of items waiting for the ordered pass above which workers wait for it while it
/// is busy; while it waits for them, they go on up to twice as much, and past that only
/// the workers holding what it waits for go on (`Sink::throttle`): the others would pile
/// up more of the tree behind it. `Keep::pending_budget`'s default.
pub const PENDING_BUDGET: usize = 2 << 20;

/// The du sink: a `Tree` behind one lock, taken once per directory or chunk.
pub struct Records {
    keep: Keep,
    /// Bytes of items committed and not yet taken by the ordered pass.
    pending_bytes: AtomicUsize,
    /// The ordered pass is waiting for the scan (`Tree::wanted` is set): a hint for
    /// `throttle`'s fast path, read without the lock.
    consumer_waits: AtomicBool,
    tree: Mutex<Tree>,
    /// Signalled (under the `tree` lock, only when `Tree::wanted` is met) for the ordered
    /// pass: workers pay one comparison per flag, and no syscall when nobody waits.
    ready: Condvar,
    /// Signalled for throttled workers when the ordered pass has caught up or waits.
    drained: Condvar,
    /// (dev, ino) counted so far, with `fold_links`.
    folded: Mutex<HashSet<(u64, u64)>>,
}

/// A worker's findings before they are committed.
#[derive(Default)]
pub struct Local {
    items: Vec<Item>,
    item_times: Vec<Timespec>,
    names: Vec<u8>,
    /// (index into `items`, record to create, its time)
    subdirs: Vec<(usize, DirRec, Timespec)>,
    files_bytes: u64,
    files_count: u64,
    files_tmax: Option<Timespec>,
    inodes: Vec<(u64, u64)>,
}

/// What `DirItems` counts for in `Records::pending_bytes`.
fn pending_cost(d: &DirItems) -> usize {
    d.items.len() * std::mem::size_of::<Item>() + d.names.len() + d.times.len() * 16
}

#[inline]
pub fn measure(meta: &Meta, m: Measure) -> u64 {
    match m {
        Measure::Disk => meta.disk_bytes(),
        Measure::Apparent => meta.size,
    }
}

#[inline]
pub fn time_of(meta: &Meta, t: Option<TimeKind>) -> Timespec {
    match t {
        Some(TimeKind::Atime) => meta.atime,
        Some(TimeKind::Ctime) => meta.ctime,
        _ => meta.mtime,
    }
}

impl Records {
    /// A sink whose record 0 is the argument `root`.
    pub fn new(keep: Keep, root: &Meta) -> Records {
        let mut tree = Tree { next_id: 1, ..Tree::default() };
        let rec = DirRec { dev: root.dev, ino: root.ino, self_bytes: measure(root, keep.measure), ..DirRec::default() };
        tree.slots.insert(0, Slot::new(rec, keep.time.map(|_| time_of(root, keep.time))));
        Records {
            keep,
            pending_bytes: AtomicUsize::new(0),
            consumer_waits: AtomicBool::new(false),
            tree: Mutex::new(tree),
            ready: Condvar::new(),
            drained: Condvar::new(),
            folded: Mutex::new(HashSet::new()),
        }
    }

    /// Says that the scan has returned (also when it panicked): the ordered pass stops
    /// waiting for directories that will never come.
    pub fn close(&self) {
        let mut tree = self.lock();
        tree.done = true;
        self.ready.notify_all();
        self.drained.notify_all();
    }

    fn lock(&self) -> MutexGuard<'_, Tree> {
        self.tree.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Waits until `ready` holds for record `rec` or the scan is over, then runs `take`
    /// under the lock. While it waits, `Tree::wanted` says what for, and the worker that
    /// sets those flags (`flag`) or ends the scan (`close`) signals `Records::ready`.
    fn wait_for<T>(&self, rec: u32, ready: RecFlags, take: impl FnOnce(&mut Tree) -> T) -> T {
        let mut tree = self.lock();
        loop {
            if tree.done || tree.slots.get(&rec).is_some_and(|s| s.rec.flags.intersects(ready)) {
                tree.wanted = None;
                self.consumer_waits.store(false, Ordering::Relaxed);
                return take(&mut tree);
            }
            tree.wanted = Some((rec, ready));
            self.consumer_waits.store(true, Ordering::Relaxed);
            if tree.throttled > 0 {
                self.drained.notify_all();
            }
            tree = self.ready.wait(tree).unwrap_or_else(|e| e.into_inner());
        }
    }

    fn view(slot: Option<&Slot>) -> RecView {
        let (rec, (self_time, files_time)) =
            slot.map_or((DirRec::default(), (Timespec::MIN, Timespec::MIN)), |s| (s.rec, s.times()));
        RecView { rec, self_time, files_time }
    }

    /// The ordered pass enters directory `rec`: waits until all its items are in, and
    /// hands them over (they are no longer kept here).
    pub fn enter(&self, rec: u32) -> Entered {
        self.wait_for(rec, REC_WRITTEN | REC_GONE, |tree| {
            let slot = tree.slots.get_mut(&rec);
            if let Some(s) = slot.as_ref().filter(|s| s.rec.flags.contains(REC_FOLDED)) {
                let view = Self::view(Some(s));
                tree.slots.remove(&rec);
                return Entered::Folded(view);
            }
            let items = slot.and_then(|s| s.extra.as_mut()).map(|e| std::mem::take(&mut e.items)).unwrap_or_default();
            self.release(tree, &items);
            Entered::Dir(Self::view(tree.slots.get(&rec)), items)
        })
    }

    /// The ordered pass leaves directory `rec`: waits until its subtree is scanned (so
    /// whether it moved is known), and forgets it — except with `-L`, where another name
    /// may lead to it again later in the order (then `Records::key` must still know it).
    pub fn leave(&self, rec: u32) -> RecView {
        self.wait_for(rec, REC_FINISHED | REC_GONE, |tree| {
            if self.keep.claims {
                Self::view(tree.slots.get(&rec))
            } else {
                Self::view(tree.slots.remove(&rec).as_ref())
            }
        })
    }

    /// Waits for the end of the scan; then, with `-L`, the record of each claimed directory.
    pub fn claims(&self) -> HashMap<(u64, u64), u32> {
        self.wait_for(SCAN_END, RecFlags::default(), |tree| tree.claims.iter().copied().collect())
    }

    /// Sets `flags` (and the error) on record `dir`, if it is still held.
    fn flag(&self, dir: u32, flags: RecFlags, err: Option<Errno>) {
        let mut tree = self.lock();
        if let Some(s) = tree.slots.get_mut(&dir) {
            s.rec.flags |= flags;
            if let Some(e) = err {
                s.rec.errno = e.0;
            }
        }
        if tree.wanted.is_some_and(|(rec, ready)| rec == dir && flags.intersects(ready)) {
            self.ready.notify_one();
        }
    }

    /// (dev, ino) of directory record `rec`.
    pub fn key(&self, rec: u32) -> (u64, u64) {
        let tree = self.tree.lock().unwrap_or_else(|e| e.into_inner());
        tree.slots.get(&rec).map_or((0, 0), |s| (s.rec.dev, s.rec.ino))
    }

    /// Once the scan is over.
    pub fn into_rest(self) -> Rest {
        let tree = self.tree.into_inner().unwrap_or_else(|e| e.into_inner());
        let mut inodes = tree.inodes;
        inodes.extend(self.folded.into_inner().unwrap_or_else(|e| e.into_inner()));
        Rest { inodes, overflow: tree.overflow }
    }

    /// Items taken out of the tree no longer wait for the ordered pass: wakes the
    /// throttled workers once what waits is within the budget.
    fn release(&self, tree: &Tree, items: &DirItems) {
        let cost = pending_cost(items);
        let left = self.pending_bytes.fetch_sub(cost, Ordering::Relaxed) - cost;
        if tree.throttled > 0 && left <= self.keep.pending_budget {
            self.drained.notify_all();
        }
    }

    /// `Keep::fold_subtrees`: directory `dir` (not the argument itself) has its whole
    /// subtree scanned. If nothing in it went wrong and every item is a subdirectory
    /// already folded, sums them into `dir` and forgets them. Children finish before their
    /// parents, so a clean subtree folds from the bottom up, each record once. A directory
    /// the ordered pass has entered has no items left here, so folding it changes nothing.
    fn lock_and_fold(&self, dir: u32) {
        let mut guard = self.lock();
        let tree = &mut *guard;
        let Some(slot) = tree.slots.get(&dir) else {
            return;
        };
        if slot.rec.flags.intersects(REC_UNREADABLE | REC_PARTIAL | REC_MOVED) {
            return;
        }
        let no_items = DirItems::default();
        let items = slot.extra.as_ref().map_or(&no_items, |e| &e.items);
        let all_folded = items.items.iter().all(|it| {
            it.kind == ItemKind::Dir && tree.slots.get(&it.target).is_some_and(|c| c.rec.flags.contains(REC_FOLDED))
        });
        if !all_folded {
            return;
        }
        // The items leave the slot first, so the children can be removed without a copy
        // of their ids.
        let slot = tree.slots.get_mut(&dir).expect("checked above");
        let (mut bytes, mut count, mut time) = (slot.rec.files_bytes, slot.rec.files_count, slot.times().1);
        let items = slot.extra.as_mut().map(|e| std::mem::take(&mut e.items)).unwrap_or_default();
        for it in &items.items {
            let c = tree.slots.remove(&it.target).expect("checked above");
            let (self_time, below_time) = c.times();
            bytes = bytes.saturating_add(c.rec.self_bytes).saturating_add(c.rec.files_bytes);
            count += 1 + c.rec.files_count;
            time = time.max(self_time).max(below_time);
        }
        let slot = tree.slots.get_mut(&dir).expect("checked above");
        slot.rec.files_bytes = bytes;
        slot.rec.files_count = count;
        slot.rec.flags |= REC_FOLDED;
        if self.keep.time.is_some() {
            if let Some(extra) = slot.extra.as_mut() {
                extra.times.1 = time;
            }
        } else {
            slot.extra = None;
        }
        self.release(tree, &items);
    }

    fn push(&self, l: &mut Local, pos: Pos, name: &[u8], kind: ItemKind, target: u32, meta: Option<&Meta>) -> usize {
        let name_off = l.names.len();
        l.names.extend_from_slice(name);
        let (ino, dev, size_bytes) = match meta {
            Some(m) if matches!(kind, ItemKind::File | ItemKind::Candidate | ItemKind::Alias) => {
                (m.ino, m.dev, measure(m, self.keep.measure))
            }
            Some(m) => (pos.d_ino, m.dev, measure(m, self.keep.measure)),
            None => (pos.d_ino, 0, 0),
        };
        l.items.push(Item {
            idx: pos.idx,
            ino,
            dev,
            size_bytes,
            name_off: name_off as u32,
            name_len: name.len() as u16,
            kind,
            target,
        });
        if self.keep.time.is_some() {
            l.item_times.push(meta.map_or(Timespec::MIN, |m| time_of(m, self.keep.time)));
        }
        l.items.len() - 1
    }
}

impl Sink for Records {
    type Local = Local;
    const CONTIGUOUS: bool = false;
    const ORDERED: bool = true;

    fn entry(&self, l: &mut Local, pos: Pos, name: &[u8], seen: Seen) {
        let keep = &self.keep;
        let meta = match seen {
            Seen::Ok(m) => m,
            Seen::Error(e) => {
                self.push(l, pos, name, ItemKind::NoAccess, e.0 as u32, None);
                return;
            }
            Seen::Repeat(m) => {
                self.push(l, pos, name, ItemKind::Alias, 0, Some(m));
                return;
            }
            // A loop is left out entirely, as GNU du leaves out fts's FTS_DC when the
            // cycle goes through a mount point.
            Seen::Excluded | Seen::ExcludedDir(_) | Seen::OtherFs(_) | Seen::Before | Seen::Loop(_) => return,
        };
        if keep.collect_inodes {
            l.inodes.push((meta.dev, meta.ino));
        }
        if meta.kind == Kind::Dir {
            let at = self.push(l, pos, name, ItemKind::Dir, 0, Some(meta));
            let rec =
                DirRec { dev: meta.dev, ino: meta.ino, self_bytes: measure(meta, keep.measure), ..DirRec::default() };
            l.subdirs.push((at, rec, time_of(meta, keep.time)));
            return;
        }
        if keep.all_candidates || meta.may_have_links() {
            if !keep.fold_links {
                self.push(l, pos, name, ItemKind::Candidate, 0, Some(meta));
                return;
            }
            if !self.folded.lock().unwrap().insert((meta.dev, meta.ino)) {
                return;
            }
        }
        l.files_bytes = l.files_bytes.saturating_add(measure(meta, keep.measure));
        l.files_count += 1;
        if keep.time.is_some() {
            let t = time_of(meta, keep.time);
            l.files_tmax = Some(l.files_tmax.map_or(t, |m| m.max(t)));
        }
        if keep.files_depth.is_some_and(|d| pos.depth < d) {
            self.push(l, pos, name, ItemKind::File, 0, Some(meta));
        }
    }

    fn commit(&self, l: &mut Local, dir: u32, listed: Option<Listed>, children: &mut Vec<Child>) {
        let mut tree = self.tree.lock().unwrap();
        let tree = &mut *tree;
        if tree.next_id + l.subdirs.len() as u64 > u64::from(SCAN_END) {
            tree.overflow = true;
            *l = Local::default();
            return;
        }
        for (at, rec, time) in l.subdirs.drain(..) {
            let id = tree.next_id as u32;
            tree.next_id += 1;
            tree.slots.insert(id, Slot::new(rec, self.keep.time.map(|_| time)));
            l.items[at].target = id;
            let it = &l.items[at];
            let off = it.name_off as usize;
            let name = CString::new(&l.names[off..off + it.name_len as usize]).expect("names hold no NUL");
            children.push(Child { name, dir: id, dev: rec.dev, ino: rec.ino });
            if self.keep.claims {
                tree.claims.push(((rec.dev, rec.ino), id));
            }
        }
        if !l.items.is_empty() {
            self.pending_bytes.fetch_add(
                l.items.len() * std::mem::size_of::<Item>() + l.names.len() + l.item_times.len() * 16,
                Ordering::Relaxed,
            );
            let mine = &mut tree.slots.entry(dir).or_default().extra().items;
            if mine.items.is_empty() {
                // The common case, one commit per directory: hand the buffers over whole,
                // trimmed to what they hold (growth by doubling leaves up to half of a
                // buffer unused, and with `-a` these wait by the thousand).
                std::mem::swap(&mut mine.items, &mut l.items);
                std::mem::swap(&mut mine.names, &mut l.names);
                std::mem::swap(&mut mine.times, &mut l.item_times);
                mine.items.shrink_to_fit();
                mine.names.shrink_to_fit();
                mine.times.shrink_to_fit();
            } else {
                let name_base = mine.names.len() as u32;
                mine.names.extend_from_slice(&l.names);
                mine.items.extend(l.items.iter().map(|it| Item { name_off: it.name_off + name_base, ..*it }));
                mine.times.extend_from_slice(&l.item_times);
            }
        }
        tree.inodes.extend_from_slice(&l.inodes);
        let slot = tree.slots.entry(dir).or_default();
        if let Some(m) = l.files_tmax {
            let t = &mut slot.extra().times;
            t.1 = t.1.max(m);
        }
        let rec = &mut slot.rec;
        rec.files_bytes = rec.files_bytes.saturating_add(l.files_bytes);
        rec.files_count += l.files_count;
        if let Some(done) = listed {
            rec.n_entries = done.entries;
            if done.sort_by_inode {
                rec.flags |= REC_SORT_BY_INODE;
            }
            if let Some((e, partial)) = done.error {
                rec.flags |= if partial { REC_PARTIAL } else { REC_UNREADABLE };
                rec.errno = e.0;
            }
        }
        l.items.clear();
        l.item_times.clear();
        l.names.clear();
        l.files_bytes = 0;
        l.files_count = 0;
        l.files_tmax = None;
        l.inodes.clear();
    }

    fn throttle(&self, feed: &mut dyn FnMut(u32, bool) -> bool) {
        let (budget, limit) = (self.keep.pending_budget, self.keep.pending_budget.saturating_mul(2));
        let pending = self.pending_bytes.load(Ordering::Relaxed);
        if pending <= budget || (pending <= limit && self.consumer_waits.load(Ordering::Relaxed)) {
            return;
        }
        // Checked again under the lock, which the ordered pass holds when it takes items
        // or starts to wait, so its signal on `drained` cannot be missed.
        let mut tree = self.lock();
        loop {
            let pending = self.pending_bytes.load(Ordering::Relaxed);
            if pending <= budget || tree.done {
                return;
            }
            match tree.wanted {
                Some((rec, ready))
                    if rec == SCAN_END || pending <= limit || feed(rec, ready.contains(REC_FINISHED)) =>
                {
                    return
                }
                _ => {}
            }
            tree.throttled += 1;
            tree = self.drained.wait(tree).unwrap_or_else(|e| e.into_inner());
            tree.throttled -= 1;
        }
    }

    fn written(&self, dir: u32) {
        self.flag(dir, REC_WRITTEN, None);
    }

    fn finished(&self, dir: u32) {
        if self.keep.fold_subtrees && dir != 0 {
            self.lock_and_fold(dir);
        }
        self.flag(dir, REC_FINISHED, None);
    }

    fn moved(&self, dir: u32) {
        self.flag(dir, REC_MOVED, None);
    }

    fn unreadable(&self, dir: u32, err: Errno) {
        self.flag(dir, REC_UNREADABLE | REC_GONE, Some(err));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::mpsc;
    use std::time::Duration;

    fn meta(kind: Kind, ino: u64, blocks: u64) -> Meta {
        let t = Timespec::default();
        Meta { kind, dev: 7, ino, nlink: 1, blocks, size: blocks * 512, mtime: t, atime: t, ctime: t }
    }

    fn keep(files_depth: Option<u32>) -> Keep {
        Keep {
            measure: Measure::Disk,
            time: None,
            files_depth,
            all_candidates: false,
            collect_inodes: false,
            claims: false,
            fold_links: false,
            fold_subtrees: false,
            pending_budget: PENDING_BUDGET,
        }
    }

    fn pos(idx: u32, depth: u32) -> Pos {
        Pos { idx, d_ino: 100 + u64::from(idx), depth, name_pos: 0 }
    }

    fn listed(entries: u32) -> Option<Listed> {
        Some(Listed { entries, sort_by_inode: false, error: None })
    }

    fn opened(e: Entered) -> (RecView, DirItems) {
        match e {
            Entered::Dir(view, items) => (view, items),
            Entered::Folded(view) => panic!("record {:?} ino {} was folded", view.rec.flags, view.rec.ino),
        }
    }

    fn folded(e: Entered) -> RecView {
        match e {
            Entered::Folded(view) => view,
            Entered::Dir(view, _) => panic!("directory ino {} was not folded", view.rec.ino),
        }
    }

    fn timed(kind: Kind, ino: u64, blocks: u64, mtime_s: i64) -> Meta {
        Meta { mtime: Timespec { sec: mtime_s, nsec: 0 }, ..meta(kind, ino, blocks) }
    }

    /// `-s` over one argument: `root/a/{f, b/{g, h}, c/}` scanned before the ordered pass
    /// gets there. `a` comes out as one folded record holding everything below it (sizes,
    /// entry count and newest time), and the records of `b` and `c` are forgotten.
    #[test]
    fn a_finished_subtree_folds_into_its_top() {
        let keep = Keep { time: Some(TimeKind::Mtime), fold_links: true, fold_subtrees: true, ..keep(None) };
        let sink = Records::new(keep, &timed(Kind::Dir, 1, 8, 100));
        let mut l = Local::default();
        let mut children = Vec::new();
        let mut list = |dir: u32, entries: &[(&[u8], Meta)], children: &mut Vec<Child>| {
            for (i, (name, m)) in entries.iter().enumerate() {
                sink.entry(&mut l, pos(i as u32, 0), name, Seen::Ok(m));
            }
            sink.commit(&mut l, dir, listed(entries.len() as u32), children);
            sink.written(dir);
        };
        list(0, &[(b"a", timed(Kind::Dir, 2, 8, 200))], &mut children);
        let a = children[0].dir;
        list(
            a,
            &[
                (b"f", timed(Kind::File, 3, 16, 300)),
                (b"b", timed(Kind::Dir, 4, 8, 250)),
                (b"c", timed(Kind::Dir, 5, 8, 150)),
            ],
            &mut children,
        );
        let (b, c) = (children[1].dir, children[2].dir);
        list(b, &[(b"g", timed(Kind::File, 6, 32, 900)), (b"h", timed(Kind::File, 7, 64, 400))], &mut children);
        list(c, &[], &mut children);
        for dir in [b, c, a] {
            sink.finished(dir);
        }
        assert_eq!((sink.key(b), sink.key(c)), ((0, 0), (0, 0)), "the records below a fold are forgotten");
        assert_eq!(sink.key(a), (7, 2));
        sink.finished(0);
        let (root, items) = opened(sink.enter(0));
        assert_eq!((root.rec.files_bytes, items.items.len()), (0, 1), "the argument itself is never folded");
        let view = folded(sink.enter(a));
        assert_eq!(view.rec.self_bytes, 8 * 512);
        assert_eq!(view.rec.files_bytes, (16 + 8 + 32 + 64 + 8) * 512, "f, b, g, h and c");
        assert_eq!(view.rec.files_count, 5);
        assert_eq!((view.self_time.sec, view.files_time.sec), (200, 900));
        assert_eq!(sink.key(a), (0, 0), "a folded record is handed over once");
        assert_eq!(sink.pending_bytes.load(Ordering::Relaxed), 0, "the folded items are no longer counted as waiting");
    }

    /// What must not fold: a subtree with an unreadable directory, a partly listed one
    /// or one that moved (the ordered pass reports each where it stands), a directory the
    /// ordered pass has entered, and anything without `fold_subtrees`.
    #[test]
    fn what_must_be_visited_does_not_fold() {
        for case in ["unreadable", "partial", "moved", "entered", "off"] {
            let keep = Keep { fold_links: true, fold_subtrees: case != "off", ..keep(None) };
            let sink = Records::new(keep, &meta(Kind::Dir, 1, 8));
            let mut l = Local::default();
            let mut children = Vec::new();
            sink.entry(&mut l, pos(0, 0), b"a", Seen::Ok(&meta(Kind::Dir, 2, 8)));
            sink.commit(&mut l, 0, listed(1), &mut children);
            sink.written(0);
            let a = children[0].dir;
            sink.entry(&mut l, pos(0, 1), b"b", Seen::Ok(&meta(Kind::Dir, 3, 8)));
            sink.commit(&mut l, a, listed(1), &mut children);
            sink.written(a);
            let b = children[1].dir;
            let (_, root_items) = opened(sink.enter(0));
            assert_eq!(root_items.items.len(), 1);
            let mut entered_a = None;
            match case {
                "unreadable" => sink.unreadable(b, Errno(13)),
                "partial" => {
                    sink.commit(
                        &mut l,
                        b,
                        Some(Listed { entries: 0, sort_by_inode: false, error: Some((Errno(5), true)) }),
                        &mut children,
                    );
                    sink.written(b);
                    sink.finished(b);
                }
                "moved" => {
                    sink.commit(&mut l, b, listed(0), &mut children);
                    sink.written(b);
                    sink.moved(b);
                    sink.finished(b);
                }
                _ => {
                    if case == "entered" {
                        entered_a = Some(opened(sink.enter(a)));
                    }
                    sink.commit(&mut l, b, listed(0), &mut children);
                    sink.written(b);
                    sink.finished(b);
                }
            }
            sink.finished(a);
            let items = match entered_a {
                Some((_, items)) => items,
                None => opened(sink.enter(a)).1,
            };
            assert_eq!(items.items.len(), 1, "{case}: a keeps its item b");
            assert_eq!(sink.key(b), (7, 3), "{case}: b is still known");
            sink.close();
        }
    }

    /// du prints while it scans: the ordered pass gets a directory once the scan has said
    /// all its items are in (`written`) and leaves it once its subtree is done (`finished`),
    /// without waiting for the end of the scan (`close`, which comes only at the end here).
    #[test]
    fn the_ordered_pass_does_not_wait_for_the_end_of_the_scan() {
        let sink = Records::new(keep(None), &meta(Kind::Dir, 1, 8));
        let (tx, rx) = mpsc::channel::<&str>();
        std::thread::scope(|s| {
            let consumer = s.spawn(|| {
                let (view, items) = opened(sink.enter(0));
                tx.send("entered the root").unwrap();
                let sub = items.items[0].target;
                let (sub_view, _) = opened(sink.enter(sub));
                let sub_left = sink.leave(sub);
                tx.send("entered and left the subdirectory").unwrap();
                let left = sink.leave(0);
                tx.send("left the root").unwrap();
                (view.rec, items.items.len(), sub_view.rec, sub_left.rec, left.rec)
            });
            // Each step of the ordered pass must come before the scan ends; if one does not
            // come, the scan is closed so that the thread ends, and the test fails.
            let step = |want: &str| match rx.recv_timeout(Duration::from_secs(30)) {
                Ok(got) => assert_eq!(got, want),
                Err(_) => {
                    sink.close();
                    panic!("the ordered pass waited for the end of the scan before: {want}");
                }
            };
            let mut l = Local::default();
            let mut children = Vec::new();
            sink.entry(&mut l, pos(0, 0), b"sub", Seen::Ok(&meta(Kind::Dir, 2, 8)));
            sink.entry(&mut l, pos(1, 0), b"file", Seen::Ok(&meta(Kind::File, 3, 16)));
            sink.commit(&mut l, 0, listed(2), &mut children);
            sink.written(0);
            step("entered the root");
            assert_eq!(children.len(), 1, "one subdirectory to scan");
            let sub = children[0].dir;
            sink.entry(&mut l, pos(0, 1), b"inner", Seen::Ok(&meta(Kind::File, 4, 24)));
            sink.commit(&mut l, sub, listed(1), &mut children);
            sink.written(sub);
            sink.finished(sub);
            step("entered and left the subdirectory");
            sink.finished(0);
            step("left the root");
            sink.close();
            let (root, n_items, sub_entered, sub_left, root_left) = consumer.join().unwrap();
            assert_eq!((root.files_bytes, root.files_count, root.n_entries, n_items), (16 * 512, 1, 2, 1));
            assert_eq!((sub_entered.files_bytes, sub_entered.files_count), (24 * 512, 1));
            assert_eq!((sub_left.ino, sub_left.self_bytes), (2, 8 * 512));
            assert_eq!((root_left.ino, root_left.self_bytes), (1, 8 * 512));
        });
    }

    /// A directory of more than 2,048 entries is committed in several parts (the scan's
    /// chunks): the ordered pass gets the items of every part, each with its own name, and
    /// the sums of all of them.
    #[test]
    fn a_directory_committed_in_parts_keeps_every_name_and_sum() {
        let sink = Records::new(keep(Some(1)), &meta(Kind::Dir, 1, 8));
        let mut l = Local::default();
        let mut children = Vec::new();
        sink.entry(&mut l, pos(0, 0), b"first", Seen::Ok(&meta(Kind::File, 10, 1)));
        sink.entry(&mut l, pos(1, 0), b"second", Seen::Ok(&meta(Kind::File, 11, 2)));
        sink.commit(&mut l, 0, None, &mut children);
        sink.entry(&mut l, pos(2, 0), b"third-part", Seen::Ok(&meta(Kind::File, 12, 4)));
        sink.entry(&mut l, pos(3, 0), b"dir", Seen::Ok(&meta(Kind::Dir, 13, 8)));
        sink.commit(&mut l, 0, listed(4), &mut children);
        sink.written(0);
        sink.close();
        let (view, items) = opened(sink.enter(0));
        let names: Vec<&[u8]> = items.items.iter().map(|it| items.name(it)).collect();
        assert_eq!(names, [&b"first"[..], b"second", b"third-part", b"dir"]);
        let kinds: Vec<ItemKind> = items.items.iter().map(|it| it.kind).collect();
        assert_eq!(kinds, [ItemKind::File, ItemKind::File, ItemKind::File, ItemKind::Dir]);
        assert_eq!(items.items[3].target, children[0].dir);
        assert_eq!((view.rec.files_bytes, view.rec.files_count, view.rec.n_entries), (7 * 512, 3, 4));
    }
}
