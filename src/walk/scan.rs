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
//!   it itself — and always on a file system whose cold lookups serialize (XFS) once the
//!   directory's first stats have shown it cold (`worker::stays_serial`). A sink that
//!   needs a directory's children under contiguous ids (`Sink::CONTIGUOUS`) gets the
//!   entry count (`Sink::listed`) when the listing ends;
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
//! * **Moved directories** (`Walk::check_moved`, du mode): `Node::subtree` counts the
//!   listing and the unfinished subdirectories; whoever brings it to 0 climbs on, no
//!   recursion. Leaving a directory at least `FTS_FD_RING` levels high, it opens that
//!   directory's `..` and reports it moved when that is not its parent (GNU fts's check).
//!   The climb carries one handle up (`worker::Held`): the finished directory's own,
//!   taken from its node since nothing needs it any more, or the `..` just checked, so
//!   each level costs one open, whatever the depth. Only a handle closed to save
//!   handles, or a level that moved, makes it re-open by names from the nearest open
//!   ancestor. Nodes drop their ancestors iteratively (`Drop for Node`) for the same
//!   reason: a 20,000-level chain.
//! * Workers never print: errors are handed to the sink as data.
//! * **Loops**: without `-L`, a directory can be its own ancestor only through a bind
//!   mount (directories have one name each). A listed directory whose listing inode
//!   (`d_ino`, the covered directory) differs from its stat'ed inode is a mount point;
//!   the nodes at or below one carry `crossed`, and only there is a subdirectory compared
//!   with its ancestors (`Seen::Loop`). Plain trees pay nothing for this.

use crate::meta::{Errno, Kind, Meta};
use crate::text::exclude::Exclude;
use crate::walk::bulk::{self, Bulk};
use crate::walk::extents::FileExtents;
use crate::walk::reader::Reader;
use std::any::Any;
use std::collections::{HashMap, HashSet};
use std::ffi::{CStr, CString};
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, RwLock};

mod worker;
use crate::platform::Follow;
use worker::Worker;

/// Entries of one directory stat'ed by its lister before the rest is cut into chunks. A
/// `CONTIGUOUS` sink holds the lister's entries until the listing ends, so it cuts
/// earlier: its chunks wait as bare names, which cost less than sized entries.
const SPLIT_AFTER: u32 = 2048;
const SPLIT_AFTER_CONTIGUOUS: u32 = 512;
/// Names per chunk job.
const CHUNK_ENTRIES: usize = 2048;
/// Chunks of one listing a `CONTIGUOUS` sink lets run before the listing ends (their
/// results wait, about 70 bytes an entry, until the listing's ids are reserved). With an
/// early reservation (`Sink::reserve_early`) chunks keep going early as long as fewer
/// than this many results wait (only what `commit_early` cannot write waits).
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
    /// Leave out (as excluded) directories that hold a valid `CACHEDIR.TAG`
    /// (`--exclude-caches`), and mount points of kernel file systems (`--exclude-kernfs`).
    pub exclude_caches: bool,
    pub exclude_kernfs: bool,
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
            exclude_caches: false,
            exclude_kernfs: false,
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
    /// A directory left out after its stat: it holds a cache tag (`--exclude-caches`)
    /// or is a kernel file system's mount (`--exclude-kernfs`). Not entered, no size.
    ExcludedDir(&'m Meta),
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
    /// hold workers back here until its consumer has caught up. While it holds one back
    /// and its consumer waits for directory `dir`, it asks `feed(dir, subtree)` whether
    /// this worker has a job that brings `dir` closer (its listing or chunks; with
    /// `subtree`, any job below it too); `feed` answering `true` has put that job next,
    /// and the worker goes on with it.
    fn throttle(&self, _feed: &mut dyn FnMut(u32, bool) -> bool) {}
    /// The listing and every chunk of `dir` are committed.
    fn written(&self, _dir: u32) {}
    /// With `Walk::shared`: directory `dir` lies on a file system that can share extents
    /// (called once, before its entries).
    fn sharing_dir(&self, _dir: u32) {}
    /// With `Walk::shared`: the extent figures of the regular file just handed to `entry`
    /// as `Seen::Ok(meta)` at `pos`.
    fn extents(&self, _local: &mut Self::Local, _pos: Pos, _meta: &Meta, _file: &FileExtents) {}
    /// With `Walk::shared`: the bulk source of device `dev` (`walk/join.rs`), opened with
    /// `open` by the first worker that asks; its token, or `None` when the sink reads no
    /// metadata in bulk or `open` found none (then each file's extent map is read).
    fn bulk_source(&self, _dev: u64, _open: &mut dyn FnMut() -> Option<crate::walk::join::Source>) -> Option<u32> {
        None
    }
    /// With `Walk::shared`: the regular file just handed to `entry` as `Seen::Ok(meta)` at
    /// `pos` gets its figures from bulk source `tree` after the scan, instead of `extents`.
    fn bulk_file(&self, _local: &mut Self::Local, _pos: Pos, _meta: &Meta, _tree: u32) {}
    /// A `CONTIGUOUS` sink: directory `dir`, still being listed, holds at most `entries`
    /// entries whose names cost at most `name_bytes` (`Reader::entries_bound`); true when
    /// the sink reserved that much now, so that chunks stat'ed before the listing ends
    /// can be written at once (`commit_early`) instead of waiting for its ids. `listed`
    /// then says what the listing held, which may be more (the directory grew).
    fn reserve_early(&self, _dir: u32, _entries: u64, _name_bytes: u64) -> bool {
        false
    }
    /// After `reserve_early`: writes what it can of `local` (a chunk of `dir`) into the
    /// early reservation, keeping the rest (entries other records name: directories,
    /// hard links, errors, files with extent figures); true when nothing is left.
    fn commit_early(&self, _local: &mut Self::Local, _dir: u32) -> bool {
        false
    }
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
    /// The sink reserved this listing's ids before it ended (`Sink::reserve_early`).
    early: AtomicBool,
    /// Chunks offered while the listing is read and not yet written or parked (only
    /// the test aid `DFDU_TEST_EARLY_CAP` waits for it; it may wrap below zero for a
    /// moment, since a chunk can finish before its offer is counted).
    offered_live: AtomicU32,
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
    follow: Follow,
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

impl<D> Drop for Node<D> {
    /// Drops the ancestors this node held the last reference to one by one: left to the
    /// compiler, each level would drop its parent from inside its own drop, one stack
    /// frame per level, and a chain 20,000 deep overflowed the scan thread's stack.
    fn drop(&mut self) {
        let mut parent = self.parent.take();
        while let Some(mut node) = parent.and_then(Arc::into_inner) {
            parent = node.parent.take();
        }
    }
}

impl<D> Node<D> {
    /// Whether `meta` is this directory or one of its ancestors (same device and inode).
    fn is_or_descends_from(&self, meta: &Meta) -> bool {
        let mut cur = Some(self);
        while let Some(n) = cur {
            if (n.dev, n.ino) == (meta.dev, meta.ino) {
                return true;
            }
            cur = n.parent.as_deref();
        }
        false
    }

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
    /// With `Walk::shared`: which devices' extents are read in bulk, and when.
    bulk: bulk::Devices,
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
        bulk: bulk::Devices::default(),
    };
    if walk.follow_all {
        shared.claims.lock().unwrap().insert((root_meta.dev, root_meta.ino));
    }
    let handle = match R::open_path(root, Follow::when(walk.follow_root)) {
        Ok(h) => h,
        Err(e) => {
            sink.unreadable(token, e);
            return;
        }
    };
    shared.open_handles.fetch_add(1, Ordering::Relaxed);
    let root_node = Arc::new(Node {
        early: AtomicBool::new(false),
        offered_live: AtomicU32::new(0),
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
        follow: Follow::when(walk.follow_root),
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
        if R::stat_path(&prefix, Follow::No).is_ok_and(|m| m.kind == Kind::Symlink) {
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
