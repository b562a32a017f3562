//! The parallel scanner: a fixed pool of workers that lists and stats one directory
//! tree and leaves behind, per directory, one small record plus the few entries that
//! must be looked at again in traversal order (subdirectories, hard-link candidates,
//! errors, and every file when `-a` prints files).
//!
//! # Protocol
//!
//! * A **job** is either "open directory `name` inside `parent`" (`Job::Dir`) or "stat
//!   these names of an already listed directory" (`Job::Chunk`, how a very wide
//!   directory's stat work is spread over all workers).
//! * Each worker owns a LIFO stack of jobs and one listing buffer. It pops its own stack
//!   first (depth-first, so few directories are open at once). Before each job, if some
//!   worker is idle and the stack holds more than one job, it moves the older half to
//!   the **shared queue** (bounded to `SHARED_QUEUE_JOBS`; the rest stays local).
//! * A worker with nothing local takes from the shared queue, or sleeps on its condvar.
//!   When the last worker goes idle with the queue empty, the scan is complete: every
//!   job ever created was created by a running worker and pushed somewhere, so an empty
//!   queue with all workers idle means no work exists. All workers then exit.
//! * Listing a directory: one `getdents64` loop; each entry gets one `stat` relative to
//!   the directory handle. Entries past the first `SPLIT_AFTER` are cut into chunks of
//!   `CHUNK_ENTRIES` names; a chunk goes to the shared queue when a worker is idle,
//!   otherwise the lister stats it itself.
//! * Results are **committed once per directory (or chunk)** under the tree lock:
//!   sums of plain files go into the directory's record, subdirectories get records
//!   and become jobs. No lock and no allocation per entry.
//! * **Handles**: a `Node` is a directory that has been opened. It keeps its handle
//!   while any job still needs it (`pending` counts them); the last one closes it. When
//!   more than `fd_budget` handles are open, a lister closes its handle right after
//!   listing, and its children re-open it from the nearest open ancestor by names
//!   (never by a long path), so a huge tree never runs into EMFILE.
//! * Workers never print and never decide what the user sees: they record errors as
//!   data; the caller walks the records in GNU order afterwards.

use crate::exclude::Exclude;
use crate::meta::{Errno, Kind, Meta, Timespec};
use crate::reader::Reader;
use std::collections::HashSet;
use std::ffi::{CStr, CString};
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, RwLock};

/// Entries of one directory stat'ed by its lister before the rest is cut into chunks.
const SPLIT_AFTER: u32 = 2048;
/// Names per chunk job.
const CHUNK_ENTRIES: usize = 2048;
/// Bound on the shared queue; beyond it jobs stay on the workers' own stacks.
const SHARED_QUEUE_JOBS: usize = 256;

/// Which size of an entry is summed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Measure {
    /// Allocated bytes (`st_blocks * 512`).
    Disk,
    /// `st_size`.
    Apparent,
}

/// Which time stamp `--time` reports.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TimeKind {
    Mtime,
    Atime,
    Ctime,
}

/// What one scan must do and keep.
pub struct ScanOpts<'a> {
    pub threads: usize,
    pub measure: Measure,
    /// Follow every symlink (`-L`).
    pub follow_all: bool,
    /// Follow the argument itself when it is a symlink (`-D`, `-H`, `-L`).
    pub follow_root: bool,
    /// With `-x`: the device of the argument; entries on another device are skipped.
    pub one_fs_dev: Option<u64>,
    pub exclude: Option<&'a Exclude>,
    /// Keep plain files as entries when they are at most this deep (`-a`).
    pub keep_files_depth: Option<u32>,
    /// Every non-directory is a hard-link candidate (`-L`: one inode can show up under
    /// several names even with a single link).
    pub all_candidates: bool,
    /// Entries already counted under an earlier argument: skipped silently.
    pub seen_before: &'a HashSet<(u64, u64)>,
    /// Collect (dev, ino) of every counted entry, for later arguments to skip.
    pub collect_inodes: bool,
    /// With `follow_all`: scan each directory once, however many links lead to it.
    pub claim_dirs: bool,
    pub time: Option<TimeKind>,
}

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

/// One entry kept for the ordered pass. 48 bytes.
#[derive(Clone, Copy, Debug)]
pub struct Item {
    /// The directory record it lives in.
    pub dir: u32,
    /// Position in the directory listing (readdir order).
    pub idx: u32,
    pub ino: u64,
    pub dev: u64,
    /// Measured size in bytes.
    pub size_bytes: u64,
    pub name_off: u32,
    pub name_len: u16,
    pub kind: ItemKind,
    pub target: u32,
}
const _: () = assert!(std::mem::size_of::<Item>() == 48);

/// Record flags.
pub const REC_SORT_BY_INODE: u8 = 1;
pub const REC_UNREADABLE: u8 = 2;
pub const REC_PARTIAL: u8 = 4;

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
    pub flags: u8,
}

/// Times per record / item, only when `--time` asked for them.
#[derive(Default)]
pub struct Times {
    /// (the directory's own time, newest plain file directly inside).
    pub recs: Vec<(Timespec, Timespec)>,
    pub items: Vec<Timespec>,
}

/// Everything one scan leaves behind.
#[derive(Default)]
pub struct Tree {
    pub recs: Vec<DirRec>,
    pub items: Vec<Item>,
    pub names: Vec<u8>,
    pub times: Option<Times>,
    /// (dev, ino) of every counted entry, when `collect_inodes`.
    pub inodes: Vec<(u64, u64)>,
    /// With `-L`: the record holding each directory claimed during the scan.
    pub claims: Vec<((u64, u64), u32)>,
    /// Set when the tree outgrew 32-bit ids or name offsets.
    pub overflow: bool,
}

impl Tree {
    pub fn name(&self, item: &Item) -> &[u8] {
        let off = item.name_off as usize;
        &self.names[off..off + item.name_len as usize]
    }
}

/// An opened directory that jobs may still need.
struct Node<D> {
    parent: Option<Arc<Node<D>>>,
    /// Name inside the parent; for the root, the path as given.
    name: CString,
    handle: RwLock<Option<D>>,
    /// Jobs that still need `handle`, plus one for the lister while it runs.
    pending: AtomicU32,
    rec: u32,
    depth: u32,
    dev: u64,
    ino: u64,
    /// Whether a symlink in this node's place is followed when (re-)opening it.
    follow: bool,
    /// Path as du prints it, kept only when exclude patterns need it.
    path: Option<Vec<u8>>,
}

enum Job<D> {
    Dir {
        parent: Arc<Node<D>>,
        name: CString,
        rec: u32,
        dev: u64,
        ino: u64,
    },
    Chunk {
        node: Arc<Node<D>>,
        base_idx: u32,
        names: Vec<u8>,
    },
}

/// What a listing or a chunk found, before it is committed.
#[derive(Default)]
struct Local {
    items: Vec<Item>,
    item_times: Vec<Timespec>,
    names: Vec<u8>,
    /// (index into `items`, record to create)
    subdirs: Vec<(usize, DirRec, Timespec)>,
    files_bytes: u64,
    files_count: u64,
    files_tmax: Timespec,
    inodes: Vec<(u64, u64)>,
    path_buf: Vec<u8>,
}

impl Local {
    fn clear(&mut self) {
        self.items.clear();
        self.item_times.clear();
        self.names.clear();
        self.subdirs.clear();
        self.files_bytes = 0;
        self.files_count = 0;
        self.files_tmax = Timespec::MIN;
        self.inodes.clear();
    }
}

struct Queue<D> {
    jobs: Vec<Job<D>>,
    idle: usize,
    done: bool,
}

struct Shared<'a, R: Reader> {
    opts: &'a ScanOpts<'a>,
    queue: Mutex<Queue<R::Dir>>,
    wake: Condvar,
    idle_hint: AtomicUsize,
    tree: Mutex<Tree>,
    claims: Mutex<HashSet<(u64, u64)>>,
    open_handles: AtomicUsize,
    fd_budget: usize,
    overflow: AtomicBool,
}

/// Scans the directory `root` (already stat'ed as `root_meta`) and returns its tree.
/// Record 0 is the root.
pub fn scan<R: Reader>(opts: &ScanOpts, root: &CStr, root_meta: &Meta, fd_budget: usize) -> Tree {
    let follow = opts.follow_all;
    let mut tree = Tree::default();
    if opts.time.is_some() {
        tree.times = Some(Times::default());
    }
    tree.recs.push(rec_of(root_meta, opts));
    if let Some(t) = tree.times.as_mut() {
        t.recs.push((time_of(root_meta, opts), Timespec::MIN));
    }
    let shared = Shared::<R> {
        opts,
        queue: Mutex::new(Queue {
            jobs: Vec::new(),
            idle: 0,
            done: false,
        }),
        wake: Condvar::new(),
        idle_hint: AtomicUsize::new(0),
        tree: Mutex::new(tree),
        claims: Mutex::new(HashSet::new()),
        open_handles: AtomicUsize::new(0),
        fd_budget,
        overflow: AtomicBool::new(false),
    };
    if follow {
        shared
            .claims
            .lock()
            .unwrap()
            .insert((root_meta.dev, root_meta.ino));
    }
    let handle = match R::open_path(root, opts.follow_root) {
        Ok(h) => h,
        Err(e) => {
            let mut tree = shared.tree.into_inner().unwrap();
            tree.recs[0].flags |= REC_UNREADABLE;
            tree.recs[0].errno = e.0;
            return tree;
        }
    };
    shared.open_handles.fetch_add(1, Ordering::Relaxed);
    let root_node = Arc::new(Node {
        parent: None,
        name: root.to_owned(),
        handle: RwLock::new(Some(handle)),
        pending: AtomicU32::new(1),
        rec: 0,
        depth: 0,
        dev: root_meta.dev,
        ino: root_meta.ino,
        follow: opts.follow_root,
        path: opts.exclude.map(|_| root.to_bytes().to_vec()),
    });
    let threads = opts.threads.max(1);
    std::thread::scope(|s| {
        let shared = &shared;
        let first = root_node;
        for i in 1..threads {
            let _ = i;
            s.spawn(move || Worker::<R>::new(shared).run(None));
        }
        Worker::<R>::new(shared).run(Some(first));
    });
    let mut tree = shared.tree.into_inner().unwrap();
    tree.overflow |= shared.overflow.load(Ordering::Relaxed);
    if follow {
        tree.claims.sort_unstable();
    }
    tree
}

fn rec_of(meta: &Meta, opts: &ScanOpts) -> DirRec {
    DirRec {
        dev: meta.dev,
        ino: meta.ino,
        self_bytes: measure(meta, opts.measure),
        ..DirRec::default()
    }
}

#[inline]
fn measure(meta: &Meta, m: Measure) -> u64 {
    match m {
        Measure::Disk => meta.disk_bytes(),
        Measure::Apparent => meta.size,
    }
}

#[inline]
fn time_of(meta: &Meta, opts: &ScanOpts) -> Timespec {
    match opts.time {
        Some(TimeKind::Atime) => meta.atime,
        Some(TimeKind::Ctime) => meta.ctime,
        _ => meta.mtime,
    }
}

/// Appends `name` to `base` the way fts builds child paths (no doubled slash after a
/// root that ends in `/`).
pub fn join_path(out: &mut Vec<u8>, base: &[u8], name: &[u8]) {
    out.clear();
    out.extend_from_slice(base);
    if !base.ends_with(b"/") {
        out.push(b'/');
    }
    out.extend_from_slice(name);
}

struct Worker<'s, 'a, R: Reader> {
    shared: &'s Shared<'a, R>,
    stack: Vec<Job<R::Dir>>,
    lister: R::Lister,
    local: Local,
}

impl<'s, 'a, R: Reader> Worker<'s, 'a, R> {
    fn new(shared: &'s Shared<'a, R>) -> Self {
        Worker {
            shared,
            stack: Vec::new(),
            lister: R::Lister::default(),
            local: Local::default(),
        }
    }

    fn run(mut self, root: Option<Arc<Node<R::Dir>>>) {
        if let Some(node) = root {
            self.list_dir(node);
        }
        loop {
            let job = match self.stack.pop() {
                Some(job) => {
                    self.share();
                    job
                }
                None => match self.take_shared() {
                    Some(job) => job,
                    None => return,
                },
            };
            match job {
                Job::Dir {
                    parent,
                    name,
                    rec,
                    dev,
                    ino,
                } => self.open_and_list(parent, name, rec, dev, ino),
                Job::Chunk {
                    node,
                    base_idx,
                    names,
                } => {
                    self.stat_chunk(&node, base_idx, &names);
                    self.release(&node);
                }
            }
        }
    }

    /// Moves the older half of the local stack to the shared queue when someone idles.
    fn share(&mut self) {
        if self.stack.len() < 2 || self.shared.idle_hint.load(Ordering::Relaxed) == 0 {
            return;
        }
        let mut q = self.shared.queue.lock().unwrap();
        let room = SHARED_QUEUE_JOBS.saturating_sub(q.jobs.len());
        let n = (self.stack.len() / 2).min(room);
        if n == 0 {
            return;
        }
        q.jobs.extend(self.stack.drain(..n));
        drop(q);
        self.shared.wake.notify_all();
    }

    fn take_shared(&mut self) -> Option<Job<R::Dir>> {
        let shared = self.shared;
        let mut q = shared.queue.lock().unwrap();
        loop {
            if let Some(job) = q.jobs.pop() {
                return Some(job);
            }
            if q.done {
                return None;
            }
            q.idle += 1;
            shared.idle_hint.store(q.idle, Ordering::Relaxed);
            if q.idle == shared.opts.threads.max(1) {
                q.done = true;
                shared.wake.notify_all();
                return None;
            }
            q = shared.wake.wait(q).unwrap();
            q.idle -= 1;
            shared.idle_hint.store(q.idle, Ordering::Relaxed);
        }
    }

    /// Hands a chunk to an idle worker if there is one; false means "do it yourself".
    fn offer(&self, job: Job<R::Dir>) -> Result<(), Job<R::Dir>> {
        if self.shared.idle_hint.load(Ordering::Relaxed) == 0 {
            return Err(job);
        }
        let mut q = self.shared.queue.lock().unwrap();
        if q.jobs.len() >= SHARED_QUEUE_JOBS {
            return Err(job);
        }
        q.jobs.push(job);
        drop(q);
        self.shared.wake.notify_one();
        Ok(())
    }

    fn open_and_list(
        &mut self,
        parent: Arc<Node<R::Dir>>,
        name: CString,
        rec: u32,
        dev: u64,
        ino: u64,
    ) {
        let follow = self.shared.opts.follow_all;
        let opened = with_handle::<R, _>(&parent, |dir| R::open_at(dir, &name, follow));
        self.release(&parent);
        match opened {
            Ok(handle) => {
                self.shared.open_handles.fetch_add(1, Ordering::Relaxed);
                let path = parent.path.as_ref().map(|p| {
                    let mut out = Vec::new();
                    join_path(&mut out, p, name.to_bytes());
                    out
                });
                let node = Arc::new(Node {
                    depth: parent.depth + 1,
                    parent: Some(parent),
                    name,
                    handle: RwLock::new(Some(handle)),
                    pending: AtomicU32::new(1),
                    rec,
                    dev,
                    ino,
                    follow,
                    path,
                });
                self.list_dir(node);
            }
            Err(e) => {
                let mut tree = self.shared.tree.lock().unwrap();
                let r = &mut tree.recs[rec as usize];
                r.flags |= REC_UNREADABLE;
                r.errno = e.0;
            }
        }
    }

    /// Drops one claim on `node`'s handle; the last claim closes it.
    fn release(&self, node: &Node<R::Dir>) {
        if node.pending.fetch_sub(1, Ordering::AcqRel) == 1
            && node.handle.write().unwrap().take().is_some()
        {
            self.shared.open_handles.fetch_sub(1, Ordering::Relaxed);
        }
    }

    fn list_dir(&mut self, node: Arc<Node<R::Dir>>) {
        self.local.clear();
        let mut idx: u32 = 0;
        let mut chunk: Vec<u8> = Vec::new();
        let mut chunk_base = 0u32;
        let mut chunk_len = 0usize;
        let guard = node.handle.read().unwrap();
        let dir = guard
            .as_ref()
            .expect("a node being listed holds its handle");
        let mut lister = std::mem::take(&mut self.lister);
        let mut split: Vec<(u32, Vec<u8>)> = Vec::new();
        let result = R::list(&mut lister, dir, &mut |name, ino| {
            if idx < SPLIT_AFTER {
                self.entry(&node, dir, name, ino, idx);
            } else {
                if chunk_len == 0 {
                    chunk_base = idx;
                }
                chunk.extend_from_slice(&ino.to_ne_bytes());
                chunk.extend_from_slice(name.to_bytes_with_nul());
                chunk_len += 1;
                if chunk_len == CHUNK_ENTRIES {
                    split.push((chunk_base, std::mem::take(&mut chunk)));
                    chunk_len = 0;
                }
            }
            idx = idx.saturating_add(1);
        });
        self.lister = lister;
        if chunk_len > 0 {
            split.push((chunk_base, chunk));
        }
        let sort = idx > 10_000 && R::sorts_by_inode(dir);
        drop(guard);
        let mut flags = if sort { REC_SORT_BY_INODE } else { 0 };
        let mut err = 0;
        if let Err(e) = result {
            flags |= if idx == 0 {
                REC_UNREADABLE
            } else {
                REC_PARTIAL
            };
            err = e.0;
        }
        self.commit(&node, Some((idx, flags, err)));
        // Chunks: offer to idle workers, stat the rest here.
        for (base, names) in split {
            node.pending.fetch_add(1, Ordering::AcqRel);
            match self.offer(Job::Chunk {
                node: node.clone(),
                base_idx: base,
                names,
            }) {
                Ok(()) => {}
                Err(Job::Chunk {
                    node,
                    base_idx,
                    names,
                }) => {
                    self.stat_chunk(&node, base_idx, &names);
                    self.release(&node);
                }
                Err(_) => unreachable!("offer returns the job it was given"),
            }
        }
        if self.shared.open_handles.load(Ordering::Relaxed) > self.shared.fd_budget
            && node.handle.write().unwrap().take().is_some()
        {
            self.shared.open_handles.fetch_sub(1, Ordering::Relaxed);
        }
        self.release(&node);
    }

    fn stat_chunk(&mut self, node: &Arc<Node<R::Dir>>, base_idx: u32, names: &[u8]) {
        self.local.clear();
        let result = with_handle::<R, _>(node, |dir| {
            let mut pos = 0;
            let mut idx = base_idx;
            while pos + 8 < names.len() {
                let ino = u64::from_ne_bytes(names[pos..pos + 8].try_into().unwrap());
                pos += 8;
                let name = CStr::from_bytes_until_nul(&names[pos..])
                    .expect("chunk names are NUL-terminated");
                pos += name.to_bytes_with_nul().len();
                self.entry(node, dir, name, ino, idx);
                idx += 1;
            }
            Ok(())
        });
        if let Err(e) = result {
            // The directory vanished or could not be re-opened: every name in the chunk
            // is an entry that could not be reached.
            let mut pos = 0;
            let mut idx = base_idx;
            while pos + 8 < names.len() {
                let ino = u64::from_ne_bytes(names[pos..pos + 8].try_into().unwrap());
                pos += 8;
                let name = CStr::from_bytes_until_nul(&names[pos..]).unwrap();
                pos += name.to_bytes_with_nul().len();
                self.push_item(
                    node,
                    name.to_bytes(),
                    (idx, ino),
                    ItemKind::NoAccess,
                    e.0 as u32,
                    None,
                );
                idx += 1;
            }
        }
        self.commit(node, None);
    }

    /// Stats one entry and files it into `self.local`.
    fn entry(&mut self, node: &Arc<Node<R::Dir>>, dir: &R::Dir, name: &CStr, d_ino: u64, idx: u32) {
        let opts = self.shared.opts;
        if let (Some(ex), Some(base)) = (opts.exclude, node.path.as_ref()) {
            let mut path = std::mem::take(&mut self.local.path_buf);
            join_path(&mut path, base, name.to_bytes());
            let excluded = ex.matches(&path);
            self.local.path_buf = path;
            if excluded {
                return;
            }
        }
        let meta = match R::stat_at(dir, name, opts.follow_all) {
            Ok(m) => m,
            Err(e) => {
                self.push_item(
                    node,
                    name.to_bytes(),
                    (idx, d_ino),
                    ItemKind::NoAccess,
                    e.0 as u32,
                    None,
                );
                return;
            }
        };
        if opts.one_fs_dev.is_some_and(|dev| dev != meta.dev) {
            return;
        }
        if !opts.seen_before.is_empty() && opts.seen_before.contains(&(meta.dev, meta.ino)) {
            return;
        }
        if opts.collect_inodes {
            self.local.inodes.push((meta.dev, meta.ino));
        }
        if meta.kind == Kind::Dir {
            if opts.follow_all && self.is_repeat(node, &meta) {
                self.push_item(
                    node,
                    name.to_bytes(),
                    (idx, d_ino),
                    ItemKind::Alias,
                    0,
                    Some(&meta),
                );
                return;
            }
            let at = self.push_item(
                node,
                name.to_bytes(),
                (idx, d_ino),
                ItemKind::Dir,
                0,
                Some(&meta),
            );
            self.local
                .subdirs
                .push((at, rec_of(&meta, opts), time_of(&meta, opts)));
            return;
        }
        let size = measure(&meta, opts.measure);
        if opts.all_candidates || meta.nlink > 1 {
            self.push_item(
                node,
                name.to_bytes(),
                (idx, d_ino),
                ItemKind::Candidate,
                0,
                Some(&meta),
            );
            return;
        }
        self.local.files_bytes += size;
        self.local.files_count += 1;
        if opts.time.is_some() {
            self.local.files_tmax = self.local.files_tmax.max(time_of(&meta, opts));
        }
        if opts.keep_files_depth.is_some_and(|d| node.depth < d) {
            self.push_item(
                node,
                name.to_bytes(),
                (idx, d_ino),
                ItemKind::File,
                0,
                Some(&meta),
            );
        }
    }

    /// With `-L`: a directory reached again. When directories are deduplicated, any
    /// directory claimed before; otherwise (with `-l`) only an ancestor (a cycle).
    fn is_repeat(&self, node: &Node<R::Dir>, meta: &Meta) -> bool {
        if self.shared.opts.claim_dirs {
            return !self
                .shared
                .claims
                .lock()
                .unwrap()
                .insert((meta.dev, meta.ino));
        }
        let mut cur = Some(node);
        while let Some(n) = cur {
            if (n.dev, n.ino) == (meta.dev, meta.ino) {
                return true;
            }
            cur = n.parent.as_deref();
        }
        false
    }

    fn push_item(
        &mut self,
        node: &Node<R::Dir>,
        name: &[u8],
        (idx, d_ino): (u32, u64),
        kind: ItemKind,
        target: u32,
        meta: Option<&Meta>,
    ) -> usize {
        let opts = self.shared.opts;
        let local = &mut self.local;
        let name_off = local.names.len();
        local.names.extend_from_slice(name);
        // Directories and errors sort by the listing's inode number, as fts does; files
        // keep the stat'ed one, which is also what hard links are matched on.
        let (ino, dev, size_bytes) = match meta {
            Some(m) if matches!(kind, ItemKind::File | ItemKind::Candidate | ItemKind::Alias) => {
                (m.ino, m.dev, measure(m, opts.measure))
            }
            Some(m) => (d_ino, m.dev, measure(m, opts.measure)),
            None => (d_ino, 0, 0),
        };
        local.items.push(Item {
            dir: node.rec,
            idx,
            ino,
            dev,
            size_bytes,
            name_off: name_off as u32,
            name_len: name.len() as u16,
            kind,
            target,
        });
        if opts.time.is_some() {
            local
                .item_times
                .push(meta.map_or(Timespec::MIN, |m| time_of(m, opts)));
        }
        local.items.len() - 1
    }

    /// Publishes `self.local` into the tree (one lock), then turns new subdirectories into
    /// jobs on the local stack. `listing` carries (entries, flags, errno) when a listing
    /// (not a chunk) ends.
    fn commit(&mut self, node: &Arc<Node<R::Dir>>, listing: Option<(u32, u8, i32)>) {
        let local = &mut self.local;
        let mut jobs: Vec<(u32, usize, u64, u64)> = Vec::with_capacity(local.subdirs.len());
        {
            let mut tree = self.shared.tree.lock().unwrap();
            let tree = &mut *tree;
            let name_base = tree.names.len();
            if name_base + local.names.len() > u32::MAX as usize
                || tree.recs.len() + local.subdirs.len() > u32::MAX as usize
            {
                self.shared.overflow.store(true, Ordering::Relaxed);
                return;
            }
            tree.names.extend_from_slice(&local.names);
            for (at, rec, time) in local.subdirs.drain(..) {
                let id = tree.recs.len() as u32;
                tree.recs.push(rec);
                if let Some(t) = tree.times.as_mut() {
                    t.recs.push((time, Timespec::MIN));
                }
                local.items[at].target = id;
                jobs.push((id, at, rec.dev, rec.ino));
            }
            for item in &local.items {
                let mut item = *item;
                item.name_off += name_base as u32;
                tree.items.push(item);
            }
            if let Some(t) = tree.times.as_mut() {
                t.items.extend_from_slice(&local.item_times);
                let slot = &mut t.recs[node.rec as usize].1;
                *slot = (*slot).max(local.files_tmax);
            }
            tree.inodes.extend_from_slice(&local.inodes);
            if self.shared.opts.follow_all {
                for &(id, _, dev, ino) in &jobs {
                    tree.claims.push(((dev, ino), id));
                }
            }
            let rec = &mut tree.recs[node.rec as usize];
            rec.files_bytes += local.files_bytes;
            rec.files_count += local.files_count;
            if let Some((n, flags, err)) = listing {
                rec.n_entries = n;
                rec.flags |= flags;
                if err != 0 {
                    rec.errno = err;
                }
            }
        }
        node.pending.fetch_add(jobs.len() as u32, Ordering::AcqRel);
        // Pushed in reverse so the first subdirectory is popped (listed) first.
        for &(id, at, dev, ino) in jobs.iter().rev() {
            let it = local.items[at];
            let off = it.name_off as usize;
            let name = CString::new(&local.names[off..off + it.name_len as usize])
                .expect("names hold no NUL");
            self.stack.push(Job::Dir {
                parent: node.clone(),
                name,
                rec: id,
                dev,
                ino,
            });
        }
    }
}

/// Runs `f` with `node`'s directory handle, re-opening it from the nearest open
/// ancestor (by names, one level at a time) when it was closed to save handles.
fn with_handle<R: Reader, T>(
    node: &Node<R::Dir>,
    f: impl FnOnce(&R::Dir) -> Result<T, Errno>,
) -> Result<T, Errno> {
    {
        let guard = node.handle.read().unwrap();
        if let Some(dir) = guard.as_ref() {
            return f(dir);
        }
    }
    let mut chain: Vec<&Node<R::Dir>> = vec![node];
    let mut cur = node;
    loop {
        match cur.parent.as_deref() {
            Some(p) => {
                let guard = p.handle.read().unwrap();
                if let Some(dir) = guard.as_ref() {
                    let first = chain.last().unwrap();
                    let mut open = R::open_at(dir, &first.name, first.follow)?;
                    drop(guard);
                    for n in chain.iter().rev().skip(1) {
                        open = R::open_at(&open, &n.name, n.follow)?;
                    }
                    return f(&open);
                }
                chain.push(p);
                cur = p;
            }
            None => {
                let root = chain.pop().expect("chain holds the root");
                let mut open = R::open_path(&root.name, root.follow)?;
                for n in chain.iter().rev() {
                    open = R::open_at(&open, &n.name, n.follow)?;
                }
                return f(&open);
            }
        }
    }
}
