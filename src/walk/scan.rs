//! The parallel scanner: a fixed pool of workers that lists and stats one directory tree
//! through a `Reader` and hands every entry to a `Sink`, which decides what to keep (du's
//! per-directory records in `du/records.rs`, or every entry in the arena in `tree/sink.rs`).
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
//! * A worker with nothing local takes from the shared queue, or sleeps on the condvar.
//!   When the last worker goes idle with the queue empty, the scan is complete: every
//!   job ever created was created by a running worker and pushed somewhere, so an empty
//!   queue with all workers idle means no work exists. All workers then exit.
//! * Listing a directory: one `getdents64` loop; each entry gets one `stat` relative to
//!   the directory handle (none when the platform's listing already carries sizes).
//!   Entries past the first `SPLIT_AFTER` are cut into chunks of `CHUNK_ENTRIES` names.
//!   A chunk goes to the shared queue when a worker is idle, otherwise the lister stats
//!   it itself. A sink that needs a directory's children under contiguous ids
//!   (`Sink::CONTIGUOUS`) gets the entry count (`Sink::listed`) when the listing ends;
//!   chunks stat'ed before that park their results on the directory's node, and the
//!   lister commits them right after its own.
//! * Results are **committed once per directory (or chunk)** through `Sink::commit`:
//!   no lock and no allocation per entry. `Sink::written` follows once the listing and
//!   all its chunks are committed.
//! * **Handles**: a `Node` is a directory that has been opened. It keeps its handle
//!   while any job still needs it (`pending` counts them); the last one closes it. When
//!   more than `fd_budget` handles are open, a lister closes its handle right after
//!   listing, and its children re-open it from the nearest open ancestor by names
//!   (never by a long path), so a huge tree never runs into EMFILE.
//! * Workers never print: errors are handed to the sink as data.
//! * **Loops**: without `-L`, a directory can be its own ancestor only through a bind
//!   mount (directories have one name each). A listed directory whose listing inode
//!   (`d_ino`, the covered directory) differs from its stat'ed inode is a mount point;
//!   the nodes at or below one carry `crossed`, and only there is a subdirectory compared
//!   with its ancestors (`Seen::Loop`). Plain trees pay nothing for this.

use crate::meta::{Errno, Kind, Meta};
use crate::text::exclude::Exclude;
use crate::walk::extents::FileExtents;
use crate::walk::reader::Reader;
use std::any::Any;
use std::collections::{HashMap, HashSet};
use std::ffi::{CStr, CString};
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, RwLock};

/// Entries of one directory stat'ed by its lister before the rest is cut into chunks. A
/// `CONTIGUOUS` sink holds the lister's entries until the listing ends, so it cuts
/// earlier: its chunks wait as bare names, which cost less than sized entries.
const SPLIT_AFTER: u32 = 2048;
const SPLIT_AFTER_CONTIGUOUS: u32 = 512;
/// Names per chunk job.
const CHUNK_ENTRIES: usize = 2048;
/// Chunks of one listing a `CONTIGUOUS` sink lets run before the listing ends (their
/// results wait, about 70 bytes an entry, until the listing's ids are reserved).
const PARKED_CHUNKS: usize = 16;
/// The most chunk results that ever waited on one listing (tests check the bound).
#[cfg(test)]
pub static MOST_PARKED: AtomicUsize = AtomicUsize::new(0);
/// Path length (with its NUL) at which `stat` of a full path fails on Linux.
const PATH_MAX: usize = 4096;
/// GNU fts keeps the handles of the last four directories it descended from and climbs
/// back through them unchecked; only a directory with a subtree at least this many levels
/// deep is climbed out of through `..`, which fts compares with the parent it left.
const FTS_FD_RING: u32 = 4;
/// Symbolic links one path resolution may go through on Linux (MAXSYMLINKS).
const MAX_SYMLINKS: u32 = 40;
/// Stack of a worker thread. Nothing on the scan path recurses; a small stack keeps 32
/// workers within a tight address-space limit (Rust's default is 2 MiB each).
const WORKER_STACK_BYTES: usize = 256 * 1024;
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

/// How to walk.
pub struct Walk<'a> {
    pub threads: usize,
    /// Follow every symlink (`-L`).
    pub follow_all: bool,
    /// Follow the argument itself when it is a symlink (`-D`, `-H`, `-L`).
    pub follow_root: bool,
    /// With `-x`: the device of the argument; entries on another device are not entered.
    pub one_fs_dev: Option<u64>,
    pub exclude: Option<&'a Exclude>,
    /// Entries already counted under an earlier argument.
    pub seen_before: &'a HashSet<(u64, u64)>,
    /// With `follow_all`: scan each directory once, however many links lead to it (else
    /// only cycles through an ancestor are cut).
    pub claim_dirs: bool,
    pub fd_budget: usize,
    /// Check, once each directory's subtree is done, that its parent still holds it under
    /// the same name (GNU fts checks `..` on its way up: du mode only, never with `-L`).
    pub check_moved: bool,
    /// Read the extent map of each regular file on a file system that can share extents
    /// (`Sink::extents`); elsewhere this changes nothing.
    pub shared: bool,
}

#[cfg(test)]
impl<'a> Walk<'a> {
    /// A plain arena scan (the root followed, no exclusions, no sharing figures): unit
    /// tests start from it and change the field they are about.
    pub fn arena(threads: usize, seen_before: &'a HashSet<(u64, u64)>) -> Self {
        Walk {
            threads,
            follow_all: false,
            follow_root: true,
            one_fs_dev: None,
            exclude: None,
            seen_before,
            claim_dirs: true,
            fd_budget: 64,
            check_moved: false,
            shared: false,
        }
    }
}

/// What the scanner learned about one entry.
#[derive(Clone, Copy, Debug)]
pub enum Seen<'m> {
    /// Stat'ed; a directory here will be entered if the sink says so.
    Ok(&'m Meta),
    /// `stat` failed.
    Error(Errno),
    /// Matched an exclude pattern (not stat'ed).
    Excluded,
    /// On another device under `-x`.
    OtherFs(&'m Meta),
    /// A directory already being scanned under another name (`-L`).
    Repeat(&'m Meta),
    /// A directory that is one of its own ancestors (same device and inode), reached
    /// through a bind mount: a loop, never entered (GNU fts's `FTS_DC`).
    Loop(&'m Meta),
    /// Counted under an earlier argument.
    Before,
}

/// Where an entry is: its listing position, listing inode, depth of
/// the directory (the argument is depth 0), and where its name goes in a sink that lays
/// a directory's names out contiguously.
#[derive(Clone, Copy, Debug)]
pub struct Pos {
    pub idx: u32,
    pub d_ino: u64,
    pub depth: u32,
    /// Sum of `Sink::name_cost` over the entries listed before this one.
    pub name_pos: u64,
}

/// A subdirectory to scan, as returned by `Sink::commit`.
pub struct Child {
    pub name: CString,
    /// The sink's token for the new directory.
    pub dir: u32,
    pub dev: u64,
    pub ino: u64,
}

/// How a listing ended.
#[derive(Clone, Copy, Debug)]
pub struct Listed {
    pub entries: u32,
    /// The file system wants big directories in inode order (GNU fts).
    pub sort_by_inode: bool,
    /// The listing failed: before any entry (`partial == false`) or after some.
    pub error: Option<(Errno, bool)>,
}

/// What a scan keeps. Tokens (`Pos::dir`, `Child::dir`) are the sink's own directory ids;
/// the argument is token 0.
pub trait Sink: Sync {
    /// Per-worker scratch between commits.
    type Local: Default + Send + 'static;
    /// Children of one directory need contiguous ids: `listed` must come first.
    const CONTIGUOUS: bool;
    /// What is committed is consumed in traversal order while the scan runs (du's ordered
    /// pass): workers keep to the front of that order instead of spreading out.
    const ORDERED: bool = false;
    /// Files one entry into `local`. A directory the sink wants entered comes back from
    /// the next `commit` as a `Child`.
    fn entry(&self, local: &mut Self::Local, pos: Pos, name: &[u8], seen: Seen);
    /// Publishes `local` for directory `dir`; appends the directories to scan to `children`.
    fn commit(&self, local: &mut Self::Local, dir: u32, listed: Option<Listed>, children: &mut Vec<Child>);
    /// The listing of `dir` is complete (called before `commit` of that listing), with
    /// its entry count and the sum of `name_cost` over all its names.
    fn listed(&self, _dir: u32, _entries: u32, _name_bytes: u64) {}
    /// Bytes a name of `len` bytes takes in the sink (for `Pos::name_pos`).
    fn name_cost(_len: usize) -> u64 {
        0
    }
    /// Called by each worker before each job: a sink consumed while the scan runs may
    /// hold workers back here until its consumer has caught up.
    fn throttle(&self) {}
    /// The listing and every chunk of `dir` are committed.
    fn written(&self, _dir: u32) {}
    /// With `Walk::shared`: directory `dir` lies on a file system that can share extents
    /// (called once, before its entries).
    fn sharing_dir(&self, _dir: u32) {}
    /// With `Walk::shared`: the extent figures of the regular file just handed to `entry`
    /// as `Seen::Ok(meta)` at `pos`.
    fn extents(&self, _local: &mut Self::Local, _pos: Pos, _meta: &Meta, _file: &FileExtents) {}
    /// Directory `dir` could not be opened.
    fn unreadable(&self, dir: u32, err: Errno);
    /// Once `dir`'s whole subtree was scanned, its name in its parent no longer led to it
    /// (renamed or moved away meanwhile; only with `Walk::check_moved`).
    fn moved(&self, _dir: u32) {}
    /// `dir`'s whole subtree was scanned, and `moved` was called first if it applies
    /// (only with `Walk::check_moved`).
    fn finished(&self, _dir: u32) {}
}

/// An opened directory that jobs may still need.
struct Node<D> {
    parent: Option<Arc<Node<D>>>,
    /// Name inside the parent; for the root, the path as given.
    name: CString,
    handle: RwLock<Option<D>>,
    /// Jobs that still need `handle`, plus one for the lister while it runs.
    pending: AtomicU32,
    /// Commits still to come for this listing: the lister's plus one per chunk.
    unwritten: AtomicU32,
    /// Work left in this subtree: one for the listing plus one per subdirectory not yet
    /// finished (only counted with `Walk::check_moved`).
    subtree: AtomicU32,
    /// Levels of directories below this one seen so far (final once `subtree` is 0).
    height: AtomicU32,
    dir: u32,
    depth: u32,
    dev: u64,
    ino: u64,
    /// Whether a symlink in this node's place is followed when (re-)opening it.
    follow: bool,
    /// This directory or one of its ancestors below the root is a mount point: its
    /// subdirectories are checked for loops.
    crossed: bool,
    /// Under `-L`: symbolic links followed on the way from the root to here (counted as
    /// directories whose listing inode differs from the inode they lead to).
    links: u32,
    /// Path as du prints it, kept only when exclude patterns need it.
    path: Option<Vec<u8>>,
    /// Length of that path (kept always: -L stops at PATH_MAX like GNU du).
    path_len: usize,
    /// For a `CONTIGUOUS` sink: chunks stat'ed before the listing ended wait here (as the
    /// sink's `Local`) until the listing is committed; `true` once it is.
    parked: Mutex<(bool, Vec<Box<dyn Any + Send>>)>,
}

impl<D> Node<D> {
    /// Bytes `join_path` puts between this directory's path and a child's name.
    fn separator(&self) -> usize {
        usize::from(self.parent.is_some() || !self.name.to_bytes().ends_with(b"/"))
    }
}

enum Job<D> {
    Dir {
        parent: Arc<Node<D>>,
        child: Child,
    },
    Chunk {
        node: Arc<Node<D>>,
        base_idx: u32,
        base_name_pos: u64,
        names: Vec<u8>,
    },
    /// Commit a parked chunk's results (a `CONTIGUOUS` sink's, once the listing is in).
    Commit {
        node: Arc<Node<D>>,
        local: Box<dyn Any + Send>,
    },
}

struct Queue<D> {
    jobs: Vec<Job<D>>,
    idle: usize,
    /// Workers running: `Walk::threads`, or fewer when some could not be started.
    workers: usize,
    done: bool,
}

struct Shared<'a, R: Reader, S: Sink> {
    walk: &'a Walk<'a>,
    sink: &'a S,
    queue: Mutex<Queue<R::Dir>>,
    wake: Condvar,
    idle_hint: AtomicUsize,
    claims: Mutex<HashSet<(u64, u64)>>,
    open_handles: AtomicUsize,
    /// (dev, ino) of the mount points met so far (see "Loops" above); `any_mounts` says
    /// whether the set is worth a look.
    mounts: Mutex<HashSet<(u64, u64)>>,
    any_mounts: AtomicBool,
    /// Under `-L`: `Node::links` of the directories reached through a symlink, and of
    /// those below them, for `open_and_list` (keyed by (dev, ino); 0 is left out).
    link_counts: Mutex<HashMap<(u64, u64), u32>>,
}

/// Scans the directory `root` (already stat'ed as `root_meta`; the sink's token 0) into
/// `sink`. Returns once every reachable entry has been handed over.
pub fn scan<R: Reader, S: Sink>(walk: &Walk, sink: &S, root: &CStr, root_meta: &Meta) {
    scan_as::<R, S>(walk, sink, root, root_meta, 0)
}

/// `scan` with the root under the sink's token `token` (a second root, or a rescan).
pub fn scan_as<R: Reader, S: Sink>(walk: &Walk, sink: &S, root: &CStr, root_meta: &Meta, token: u32) {
    let shared = Shared::<R, S> {
        walk,
        sink,
        queue: Mutex::new(Queue { jobs: Vec::new(), idle: 0, workers: walk.threads.max(1), done: false }),
        wake: Condvar::new(),
        idle_hint: AtomicUsize::new(0),
        claims: Mutex::new(HashSet::new()),
        open_handles: AtomicUsize::new(0),
        mounts: Mutex::new(HashSet::new()),
        any_mounts: AtomicBool::new(false),
        link_counts: Mutex::new(HashMap::new()),
    };
    if walk.follow_all {
        shared.claims.lock().unwrap().insert((root_meta.dev, root_meta.ino));
    }
    let handle = match R::open_path(root, walk.follow_root) {
        Ok(h) => h,
        Err(e) => {
            sink.unreadable(token, e);
            return;
        }
    };
    shared.open_handles.fetch_add(1, Ordering::Relaxed);
    let root_node = Arc::new(Node {
        parent: None,
        name: root.to_owned(),
        handle: RwLock::new(Some(handle)),
        pending: AtomicU32::new(1),
        unwritten: AtomicU32::new(1),
        subtree: AtomicU32::new(1),
        height: AtomicU32::new(0),
        dir: token,
        depth: 0,
        dev: root_meta.dev,
        ino: root_meta.ino,
        follow: walk.follow_root,
        crossed: false,
        links: if walk.follow_all { root_links::<R>(root) } else { 0 },
        path: walk.exclude.map(|_| root.to_bytes().to_vec()),
        path_len: root.to_bytes().len(),
        parked: Mutex::new((false, Vec::new())),
    });
    std::thread::scope(|s| {
        let shared = &shared;
        // A thread that cannot start (a low RLIMIT_AS or RLIMIT_NPROC, a pids limit) is
        // no error: the scan runs with those that did, at least this one.
        let mut started = 1;
        for _ in 1..walk.threads.max(1) {
            let spawned = std::thread::Builder::new()
                .stack_size(WORKER_STACK_BYTES)
                .spawn_scoped(s, move || Worker::<R, S>::new(shared).run(None));
            if spawned.is_err() {
                break;
            }
            started += 1;
        }
        // Under the lock: a worker that goes idle compares with this count.
        shared.queue.lock().unwrap().workers = started;
        Worker::<R, S>::new(shared).run(Some(root_node));
    });
}

/// Symbolic links among the components of the argument `root` (under `-L`, every path
/// below it resolves them again).
fn root_links<R: Reader>(root: &CStr) -> u32 {
    let bytes = root.to_bytes();
    let ends = bytes.iter().enumerate().filter(|&(i, &b)| b == b'/' && i > 0).map(|(i, _)| i);
    let mut links = 0;
    for end in ends.chain(std::iter::once(bytes.len())) {
        if end == 0 || bytes[end - 1] == b'/' {
            continue;
        }
        let Ok(prefix) = CString::new(&bytes[..end]) else { continue };
        if R::stat_path(&prefix, false).is_ok_and(|m| m.kind == Kind::Symlink) {
            links += 1;
        }
    }
    links
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

struct Worker<'s, 'a, R: Reader, S: Sink> {
    shared: &'s Shared<'a, R, S>,
    stack: Vec<Job<R::Dir>>,
    /// The listing buffer; taken out while a listing runs (the callback needs `self`).
    lister: Option<R::Lister>,
    local: S::Local,
    children: Vec<Child>,
    path_buf: Vec<u8>,
    /// With `Walk::shared`: the extent-map buffer, one file's figures, and which devices
    /// can share extents (a handful at most, so a list).
    extent_buf: Option<R::ExtentBuf>,
    file_extents: FileExtents,
    sharing_devs: Vec<(u64, bool)>,
}

impl<'s, 'a, R: Reader, S: Sink> Worker<'s, 'a, R, S> {
    fn new(shared: &'s Shared<'a, R, S>) -> Self {
        Worker {
            shared,
            stack: Vec::new(),
            lister: Some(R::Lister::default()),
            local: S::Local::default(),
            children: Vec::new(),
            path_buf: Vec::new(),
            extent_buf: None,
            file_extents: FileExtents::default(),
            sharing_devs: Vec::new(),
        }
    }

    fn run(mut self, root: Option<Arc<Node<R::Dir>>>) {
        if let Some(node) = root {
            self.list_dir(node);
        }
        loop {
            self.shared.sink.throttle();
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
                Job::Dir { parent, child } => self.open_and_list(parent, child),
                Job::Chunk { node, base_idx, base_name_pos, names } => {
                    self.stat_chunk(&node, (base_idx, base_name_pos), &names);
                    self.release(&node);
                }
                Job::Commit { node, local } => self.commit_local(&node, local),
            }
        }
    }

    /// Moves the older half of the local stack to the shared queue when someone idles
    /// (an `ORDERED` sink's worker gives one job instead: see `share_ordered`).
    fn share(&mut self) {
        if S::ORDERED {
            self.share_ordered();
            return;
        }
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

    /// For a sink consumed in traversal order while the scan runs: keeps every worker near
    /// the front of that order, so little waits to be consumed. The stack's depth only grows
    /// towards its top (the next job, earliest in order); the job given away is the
    /// earliest one of its shallowest level — the next subtree this worker would reach
    /// after everything above it — and never more than one job per idle worker.
    fn share_ordered(&mut self) {
        let len = self.stack.len();
        if len == 0 || self.shared.idle_hint.load(Ordering::Relaxed) == 0 {
            return;
        }
        let depth = |j: &Job<R::Dir>| match j {
            Job::Dir { parent, .. } => parent.depth,
            Job::Chunk { node, .. } | Job::Commit { node, .. } => node.depth,
        };
        let d0 = depth(&self.stack[0]);
        let k = self.stack.iter().position(|j| depth(j) != d0).unwrap_or(len);
        // Keep the next job when the whole stack is one level.
        let at = if k == len && len >= 2 { len - 2 } else { k - 1 };
        let mut q = self.shared.queue.lock().unwrap();
        if q.jobs.len() >= q.idle.min(SHARED_QUEUE_JOBS) {
            return;
        }
        q.jobs.push(self.stack.remove(at));
        drop(q);
        self.shared.wake.notify_one();
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
            if q.idle == q.workers {
                q.done = true;
                shared.wake.notify_all();
                return None;
            }
            q = shared.wake.wait(q).unwrap();
            q.idle -= 1;
            shared.idle_hint.store(q.idle, Ordering::Relaxed);
        }
    }

    /// Hands a chunk to an idle worker if there is one; `Err` gives it back.
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

    fn open_and_list(&mut self, parent: Arc<Node<R::Dir>>, child: Child) {
        let follow = self.shared.walk.follow_all;
        let opened = with_handle::<R, _>(&parent, |dir| R::open_at(dir, &child.name, follow));
        self.release(&parent);
        match opened {
            Ok(handle) => {
                self.shared.open_handles.fetch_add(1, Ordering::Relaxed);
                let path = parent.path.as_ref().map(|p| {
                    let mut out = Vec::new();
                    join_path(&mut out, p, child.name.to_bytes());
                    out
                });
                let path_len = parent.path_len + parent.separator() + child.name.to_bytes().len();
                let crossed = parent.crossed
                    || (self.shared.any_mounts.load(Ordering::Acquire)
                        && self.shared.mounts.lock().unwrap().contains(&(child.dev, child.ino)));
                let links = if follow {
                    self.shared.link_counts.lock().unwrap().get(&(child.dev, child.ino)).copied().unwrap_or(0)
                } else {
                    0
                };
                let node = Arc::new(Node {
                    crossed,
                    links,
                    path_len,
                    depth: parent.depth + 1,
                    parent: Some(parent),
                    name: child.name,
                    handle: RwLock::new(Some(handle)),
                    pending: AtomicU32::new(1),
                    unwritten: AtomicU32::new(1),
                    subtree: AtomicU32::new(1),
                    height: AtomicU32::new(0),
                    dir: child.dir,
                    dev: child.dev,
                    ino: child.ino,
                    follow,
                    path,
                    parked: Mutex::new((false, Vec::new())),
                });
                self.list_dir(node);
            }
            Err(e) => {
                self.shared.sink.unreadable(child.dir, e);
                self.subtree_done(&parent);
            }
        }
    }

    /// One unit of `node`'s subtree is finished; when it was the last, checks that the
    /// directory is still where it was found and passes the news up (no recursion).
    fn subtree_done(&self, node: &Arc<Node<R::Dir>>) {
        if !self.shared.walk.check_moved {
            return;
        }
        let mut cur = node.clone();
        while cur.subtree.fetch_sub(1, Ordering::AcqRel) == 1 {
            let Some(parent) = cur.parent.clone() else {
                self.shared.sink.finished(cur.dir);
                return;
            };
            let height = cur.height.load(Ordering::Acquire);
            parent.height.fetch_max(height + 1, Ordering::AcqRel);
            if height >= FTS_FD_RING {
                // When the parent itself cannot be reached any more, an ancestor moved:
                // that one is reported when its own subtree is done.
                let found = with_handle::<R, _>(&parent, |dir| Ok(R::stat_at(dir, &cur.name, false)));
                if let Ok(still) = found {
                    if !still.is_ok_and(|m| (m.dev, m.ino) == (cur.dev, cur.ino)) {
                        self.shared.sink.moved(cur.dir);
                    }
                }
            }
            self.shared.sink.finished(cur.dir);
            cur = parent;
        }
    }

    /// Drops one claim on `node`'s handle; the last claim closes it.
    fn release(&self, node: &Node<R::Dir>) {
        if node.pending.fetch_sub(1, Ordering::AcqRel) == 1 && node.handle.write().unwrap().take().is_some() {
            self.shared.open_handles.fetch_sub(1, Ordering::Relaxed);
        }
    }

    /// One commit of `node`'s listing is done; the last one tells the sink.
    fn wrote(&self, node: &Arc<Node<R::Dir>>) {
        if node.unwritten.fetch_sub(1, Ordering::AcqRel) == 1 {
            self.shared.sink.written(node.dir);
            self.subtree_done(node);
        }
    }

    fn list_dir(&mut self, node: Arc<Node<R::Dir>>) {
        let mut idx: u32 = 0;
        let mut name_pos: u64 = 0;
        let mut chunk: Vec<u8> = Vec::new();
        let mut chunk_base = (0u32, 0u64);
        let mut chunk_len = 0usize;
        let mut split: Vec<((u32, u64), Vec<u8>)> = Vec::new();
        let mut offered = 0usize;
        let guard = node.handle.read().unwrap();
        let dir = guard.as_ref().expect("a node being listed holds its handle");
        if self.shared.walk.shared && self.can_share(node.dev, dir) {
            self.shared.sink.sharing_dir(node.dir);
        }
        let mut lister = self.lister.take().unwrap_or_default();
        let result = R::list(&mut lister, dir, &mut |name, d_ino, meta| {
            let split_after = if S::CONTIGUOUS { SPLIT_AFTER_CONTIGUOUS } else { SPLIT_AFTER };
            if idx < split_after || meta.is_some() {
                let pos = Pos { idx, d_ino, depth: node.depth, name_pos };
                self.entry(&node, dir, name, pos, meta);
            } else {
                if chunk_len == 0 {
                    chunk_base = (idx, name_pos);
                }
                // A `CONTIGUOUS` sink has no use for the listing's inode numbers.
                if !S::CONTIGUOUS {
                    chunk.extend_from_slice(&d_ino.to_ne_bytes());
                }
                chunk.extend_from_slice(name.to_bytes_with_nul());
                chunk_len += 1;
                if chunk_len == CHUNK_ENTRIES {
                    let names = std::mem::take(&mut chunk);
                    chunk_len = 0;
                    // Hand the chunk to an idle worker now (a `CONTIGUOUS` sink's chunk
                    // results wait in `parked` until the listing is committed, so only
                    // `PARKED_CHUNKS` go early: the rest wait as bare names, which cost
                    // far less than stat'ed entries).
                    if S::CONTIGUOUS {
                        let early = offered < PARKED_CHUNKS;
                        match if early { self.offer_chunk(&node, chunk_base, names) } else { Err(names) } {
                            Ok(()) => offered += 1,
                            Err(names) => split.push((chunk_base, names)),
                        }
                    } else if let Err(names) = self.offer_chunk(&node, chunk_base, names) {
                        // Nobody is idle: commit what the listing found so far, then stat
                        // the chunk here, so memory stays flat however wide the directory.
                        self.commit(&node, None);
                        Self::each_name(&node, chunk_base, &names, &mut |name, pos| {
                            self.entry(&node, dir, name, pos, None)
                        });
                        self.commit(&node, None);
                    }
                }
            }
            idx = idx.saturating_add(1);
            name_pos += S::name_cost(name.to_bytes().len());
        });
        self.lister = Some(lister);
        if chunk_len > 0 {
            split.push((chunk_base, chunk));
        }
        let sort_by_inode = idx > 10_000 && R::sorts_by_inode(dir);
        drop(guard);
        let error = result.err().map(|e| (e, idx > 0));
        self.shared.sink.listed(node.dir, idx, name_pos);
        let listed = Listed { entries: idx, sort_by_inode, error };
        self.commit(&node, Some(listed));
        if S::CONTIGUOUS {
            self.commit_parked(&node);
        }
        for (base, names) in split {
            self.dispatch(&node, base, names);
        }
        if self.shared.open_handles.load(Ordering::Relaxed) > self.shared.walk.fd_budget
            && node.handle.write().unwrap().take().is_some()
        {
            self.shared.open_handles.fetch_sub(1, Ordering::Relaxed);
        }
        self.wrote(&node);
        self.release(&node);
    }

    /// Offers a chunk to an idle worker; gives the names back when nobody takes it.
    fn offer_chunk(&self, node: &Arc<Node<R::Dir>>, base: (u32, u64), names: Vec<u8>) -> Result<(), Vec<u8>> {
        node.pending.fetch_add(1, Ordering::AcqRel);
        node.unwritten.fetch_add(1, Ordering::AcqRel);
        match self.offer(Job::Chunk { node: node.clone(), base_idx: base.0, base_name_pos: base.1, names }) {
            Ok(()) => Ok(()),
            Err(job) => {
                node.pending.fetch_sub(1, Ordering::AcqRel);
                node.unwritten.fetch_sub(1, Ordering::AcqRel);
                match job {
                    Job::Chunk { names, .. } => Err(names),
                    _ => unreachable!("offer returns the job it was given"),
                }
            }
        }
    }

    /// Offers a chunk to idle workers, or stats it here.
    fn dispatch(&mut self, node: &Arc<Node<R::Dir>>, base: (u32, u64), names: Vec<u8>) {
        if let Err(names) = self.offer_chunk(node, base, names) {
            node.unwritten.fetch_add(1, Ordering::AcqRel);
            self.stat_chunk(node, base, &names);
        }
    }

    /// Calls `f` for each (name, position) packed in a chunk's name buffer.
    fn each_name(
        node: &Node<R::Dir>,
        (base_idx, base_name_pos): (u32, u64),
        names: &[u8],
        f: &mut dyn FnMut(&CStr, Pos),
    ) {
        let mut pos = 0;
        let mut idx = base_idx;
        let mut name_pos = base_name_pos;
        let ino_bytes = if S::CONTIGUOUS { 0 } else { 8 };
        while pos + ino_bytes < names.len() {
            let mut d_ino = 0;
            if !S::CONTIGUOUS {
                d_ino = u64::from_ne_bytes(names[pos..pos + 8].try_into().unwrap());
                pos += 8;
            }
            let name = CStr::from_bytes_until_nul(&names[pos..]).expect("chunk names are NUL-terminated");
            pos += name.to_bytes_with_nul().len();
            f(name, Pos { idx, d_ino, depth: node.depth, name_pos });
            idx += 1;
            name_pos += S::name_cost(name.to_bytes().len());
        }
    }

    fn stat_chunk(&mut self, node: &Arc<Node<R::Dir>>, base: (u32, u64), names: &[u8]) {
        let result = with_handle::<R, _>(node, |dir| {
            Self::each_name(node, base, names, &mut |name, pos| self.entry(node, dir, name, pos, None));
            Ok(())
        });
        if let Err(e) = result {
            // The directory vanished or could not be re-opened: every name in the chunk
            // is an entry that could not be reached.
            let sink = self.shared.sink;
            Self::each_name(node, base, names, &mut |name, pos| {
                sink.entry(&mut self.local, pos, name.to_bytes(), Seen::Error(e));
            });
        }
        if S::CONTIGUOUS {
            let mut parked = node.parked.lock().unwrap();
            if !parked.0 {
                // The listing is still being read: its ids are not reserved yet.
                parked.1.push(Box::new(std::mem::take(&mut self.local)));
                #[cfg(test)]
                MOST_PARKED.fetch_max(parked.1.len(), Ordering::Relaxed);
                return;
            }
        }
        self.commit(node, None);
        self.wrote(node);
    }

    /// After a `CONTIGUOUS` listing is committed: marks it so and has the chunks that
    /// finished while it was being read committed, by idle workers where there are any.
    fn commit_parked(&mut self, node: &Arc<Node<R::Dir>>) {
        let waiting = {
            let mut parked = node.parked.lock().unwrap();
            parked.0 = true;
            std::mem::take(&mut parked.1)
        };
        for local in waiting {
            if let Err(Job::Commit { node, local }) = self.offer(Job::Commit { node: node.clone(), local }) {
                self.commit_local(&node, local);
            }
        }
    }

    /// Commits a parked chunk's results.
    fn commit_local(&mut self, node: &Arc<Node<R::Dir>>, local: Box<dyn Any + Send>) {
        let own = std::mem::replace(
            &mut self.local,
            *local.downcast::<S::Local>().expect("parked values are the sink's Local"),
        );
        self.commit(node, None);
        self.wrote(node);
        self.local = own;
    }

    /// Stats one entry (unless the listing brought its metadata) and hands it to the sink.
    fn entry(&mut self, node: &Arc<Node<R::Dir>>, dir: &R::Dir, name: &CStr, pos: Pos, given: Option<&Meta>) {
        let walk = self.shared.walk;
        let sink = self.shared.sink;
        let bytes = name.to_bytes();
        if let (Some(ex), Some(base)) = (walk.exclude, node.path.as_ref()) {
            join_path(&mut self.path_buf, base, bytes);
            if ex.matches(&self.path_buf) {
                sink.entry(&mut self.local, pos, bytes, Seen::Excluded);
                return;
            }
        }
        // Under -L, GNU du (fts with FTS_LOGICAL) stats full paths, so anything whose path
        // reaches PATH_MAX is "File name too long" there; dfdu says the same.
        if walk.follow_all && node.path_len + node.separator() + bytes.len() >= PATH_MAX {
            sink.entry(&mut self.local, pos, bytes, Seen::Error(Errno::NAMETOOLONG));
            return;
        }
        // GNU du resolves each -L path from the argument, so the kernel's limit of 40
        // symbolic links per resolution applies to the whole path: one more link past
        // that is "Too many levels of symbolic links".
        if walk.follow_all
            && node.links >= MAX_SYMLINKS
            && given.or(R::stat_at(dir, name, false).ok().as_ref()).is_some_and(|m| m.kind == Kind::Symlink)
        {
            sink.entry(&mut self.local, pos, bytes, Seen::Error(Errno::LOOP));
            return;
        }
        let stat;
        let meta = match given {
            Some(m) if !(walk.follow_all && m.kind == Kind::Symlink) => m,
            _ => match R::stat_at(dir, name, walk.follow_all) {
                Ok(m) => {
                    stat = m;
                    &stat
                }
                Err(e) => {
                    // A dangling symlink under -L is reported without an error text, as
                    // fts's FTS_SLNONE is: errno 0.
                    let dangling = walk.follow_all && e == Errno::NOENT && R::stat_at(dir, name, false).is_ok();
                    sink.entry(&mut self.local, pos, bytes, Seen::Error(if dangling { Errno(0) } else { e }));
                    return;
                }
            },
        };
        if walk.follow_all && meta.kind == Kind::Dir {
            let links = node.links + u32::from(pos.d_ino != 0 && pos.d_ino != meta.ino);
            if links > 0 {
                self.shared.link_counts.lock().unwrap().insert((meta.dev, meta.ino), links);
            }
        }
        let seen = if walk.one_fs_dev.is_some_and(|dev| dev != meta.dev) {
            Seen::OtherFs(meta)
        } else if !walk.seen_before.is_empty() && walk.seen_before.contains(&(meta.dev, meta.ino)) {
            Seen::Before
        } else if meta.kind == Kind::Dir && walk.follow_all && self.is_repeat(node, meta) {
            Seen::Repeat(meta)
        } else if meta.kind == Kind::Dir && !walk.follow_all && self.is_loop(node, pos.d_ino, meta) {
            Seen::Loop(meta)
        } else {
            Seen::Ok(meta)
        };
        sink.entry(&mut self.local, pos, bytes, seen);
        if walk.shared && meta.kind == Kind::File && meta.blocks > 0 && matches!(seen, Seen::Ok(_)) {
            self.extents(node, dir, name, pos, meta);
        }
    }

    /// Whether directory `dir` on device `dev` lies on a file system that can share
    /// extents: asked once per device per worker.
    fn can_share(&mut self, dev: u64, dir: &R::Dir) -> bool {
        if let Some(&(_, yes)) = self.sharing_devs.iter().find(|(d, _)| *d == dev) {
            return yes;
        }
        let yes = R::can_share_extents(dir);
        self.sharing_devs.push((dev, yes));
        yes
    }

    /// Reads the extent map of the regular file `name` and hands its figures to the sink.
    /// A file whose map cannot be read (no permission, gone, no FIEMAP) counts nothing,
    /// as in `btrfs filesystem du`.
    fn extents(&mut self, node: &Node<R::Dir>, dir: &R::Dir, name: &CStr, pos: Pos, meta: &Meta) {
        if !self.can_share(node.dev, dir) {
            return;
        }
        let f = &mut self.file_extents;
        f.clear();
        // Allocated on first use, so scans without sharing never pay for it.
        let buf = self.extent_buf.get_or_insert_with(R::ExtentBuf::default);
        if R::file_extents_at(dir, name, buf, &mut |e| f.add(e)).is_ok() {
            self.shared.sink.extents(&mut self.local, pos, meta, &self.file_extents);
        }
    }

    /// Without `-L`: whether directory `meta`, listed in `node` with inode `d_ino`, is
    /// one of its ancestors (a loop through a bind mount). Notes mount points on the way.
    fn is_loop(&self, node: &Node<R::Dir>, d_ino: u64, meta: &Meta) -> bool {
        let mount_point = d_ino != 0 && d_ino != meta.ino;
        if mount_point {
            self.shared.mounts.lock().unwrap().insert((meta.dev, meta.ino));
            self.shared.any_mounts.store(true, Ordering::Release);
        }
        if !(mount_point || node.crossed) {
            return false;
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

    /// With `-L`: a directory reached again. When directories are claimed, any directory
    /// claimed before; otherwise (with `-l`) only an ancestor (a cycle).
    fn is_repeat(&self, node: &Node<R::Dir>, meta: &Meta) -> bool {
        if self.shared.walk.claim_dirs {
            return !self.shared.claims.lock().unwrap().insert((meta.dev, meta.ino));
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

    /// Commits through the sink, then turns the new subdirectories into local jobs.
    fn commit(&mut self, node: &Arc<Node<R::Dir>>, listed: Option<Listed>) {
        self.children.clear();
        self.shared.sink.commit(&mut self.local, node.dir, listed, &mut self.children);
        node.pending.fetch_add(self.children.len() as u32, Ordering::AcqRel);
        if self.shared.walk.check_moved {
            node.subtree.fetch_add(self.children.len() as u32, Ordering::AcqRel);
        }
        // Pushed in reverse so the first subdirectory is listed first.
        while let Some(child) = self.children.pop() {
            self.stack.push(Job::Dir { parent: node.clone(), child });
        }
    }
}

/// Runs `f` with `node`'s directory handle, re-opening it from the nearest open
/// ancestor (by names, one level at a time) when it was closed to save handles.
fn with_handle<R: Reader, T>(node: &Node<R::Dir>, f: impl FnOnce(&R::Dir) -> Result<T, Errno>) -> Result<T, Errno> {
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
                    let first = chain.last().expect("chain holds the node");
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
