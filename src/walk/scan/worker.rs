//! One scan worker: its job loop, listing a directory, stat'ing a chunk, committing to the
//! sink, and re-opening closed handles (`with_handle`). The protocol it follows is at the
//! top of `scan.rs`.

use super::*;
use crate::platform::Follow;
use crate::walk::join::Source;

pub(super) struct Worker<'s, 'a, R: Reader, S: Sink> {
    shared: &'s Shared<'a, R, S>,
    stack: Vec<Job<R::Dir>>,
    /// The listing buffer; taken out while a listing runs (the callback needs `self`).
    lister: Option<R::Lister>,
    local: S::Local,
    children: Vec<Child>,
    path_buf: Vec<u8>,
    /// With `Walk::shared`: the extent-map buffer, one file's figures, and which devices
    /// can share extents and which of them the sink reads in bulk (a handful at most, so
    /// a list).
    extent_buf: Option<R::ExtentBuf>,
    file_extents: FileExtents,
    sharing_devs: Vec<(u64, bool, Option<u32>)>,
    /// The scan's plan for reading each device's extents in bulk (`walk/bulk.rs`), kept
    /// here once asked so that a file needs no lock.
    bulk_devs: Vec<(u64, Arc<Bulk>)>,
}

/// CPU per entry above which the lister's first stats of a directory missed the cache
/// (measured on XFS: about 1.3 µs warm, 9 µs cold, per `statx` with its lookup).
const COLD_STAT_NS: u64 = 4_000;

/// Whether the rest of a big directory on a file system whose cold lookups serialize
/// (`Reader::lookups_serialize`) stays with its lister: when its first `stats` entries
/// cost the lister `cpu_ns` of CPU, more than `COLD_STAT_NS` each, they missed the cache,
/// and more threads looking up names in it would wait on each other. Warm, the chunks
/// go to idle workers as everywhere else.
fn stays_serial(cpu_ns: u64, stats: u32) -> bool {
    cpu_ns > cold_stat_ns().saturating_mul(u64::from(stats))
}

/// `COLD_STAT_NS`, or what the debugging knob `DFDU_DEBUG_COLD_STAT_NS` says
/// (docs/benchmarks.md, "One cold folder on XFS"; tests set 0 to take the one-thread path
/// whatever the cache holds).
fn cold_stat_ns() -> u64 {
    static KNOB: std::sync::OnceLock<u64> = std::sync::OnceLock::new();
    *KNOB.get_or_init(|| {
        std::env::var("DFDU_DEBUG_COLD_STAT_NS").ok().and_then(|v| v.parse().ok()).unwrap_or(COLD_STAT_NS)
    })
}

/// One directory's listing while it runs (`Worker::list_dir`): how far it got, the chunk
/// of names being filled past the first `SPLIT_AFTER` entries, and the chunks kept for
/// after the listing's commit.
#[derive(Default)]
struct Listing {
    /// Entries listed so far, and the sink's name cost of them (`Pos::name_pos`).
    idx: u32,
    name_pos: u64,
    /// The chunk being filled: each entry's inode number (unless the sink is
    /// `CONTIGUOUS`) and NUL-terminated name; how many entries; the first one's position.
    chunk: Vec<u8>,
    chunk_len: usize,
    chunk_base: (u32, u64),
    /// Full chunks nobody took yet, dispatched once the listing is committed.
    split: Vec<((u32, u64), Vec<u8>)>,
    /// Chunks handed to other workers early (a `CONTIGUOUS` sink parks their results).
    offered: usize,
    /// Whether this directory's stats stay with the lister (`stays_serial`): on a file
    /// system whose lookups serialize, the lister's CPU clock is read halfway through
    /// its first `split_after` entries and again at the end of them, so directories
    /// too small to be split, and other file systems, pay no extra call.
    cpu_at_half: Option<u64>,
    serial: bool,
}

impl Listing {
    /// Adds one entry to the chunk being filled (its inode number too when `with_ino`);
    /// `true` when the chunk is now full.
    fn push_name(&mut self, name: &CStr, d_ino: u64, with_ino: bool) -> bool {
        if self.chunk_len == 0 {
            self.chunk_base = (self.idx, self.name_pos);
        }
        if with_ino {
            self.chunk.extend_from_slice(&d_ino.to_ne_bytes());
        }
        self.chunk.extend_from_slice(name.to_bytes_with_nul());
        self.chunk_len += 1;
        self.chunk_len == CHUNK_ENTRIES
    }
}

/// Whether `job` brings directory `dir` closer: it lists `dir` or stats a chunk of it, or
/// (with `subtree`) does any of that for a directory below it.
fn feeds<D>(job: &Job<D>, dir: u32, subtree: bool) -> bool {
    let within = |node: &Node<D>| {
        let mut cur = Some(node);
        while let Some(n) = cur {
            if n.dir == dir {
                return true;
            }
            if !subtree {
                return false;
            }
            cur = n.parent.as_deref();
        }
        false
    };
    match job {
        Job::Dir { parent, child } => child.dir == dir || (subtree && within(parent)),
        Job::Chunk { node, .. } | Job::Commit { node, .. } => within(node),
    }
}

/// For `Sink::throttle`: puts a job that `feeds` `dir` on top of `stack`, from the stack
/// itself or else from the shared queue; `false` when neither holds one.
fn take_feeding<R: Reader, S: Sink>(
    shared: &Shared<'_, R, S>,
    stack: &mut Vec<Job<R::Dir>>,
    dir: u32,
    subtree: bool,
) -> bool {
    if let Some(i) = stack.iter().rposition(|j| feeds(j, dir, subtree)) {
        let job = stack.remove(i);
        stack.push(job);
        return true;
    }
    let mut q = shared.queue.lock().unwrap();
    let Some(i) = q.jobs.iter().rposition(|j| feeds(j, dir, subtree)) else {
        return false;
    };
    let job = q.jobs.remove(i);
    drop(q);
    stack.push(job);
    true
}

impl<'s, 'a, R: Reader, S: Sink> Worker<'s, 'a, R, S> {
    pub(super) fn new(shared: &'s Shared<'a, R, S>) -> Self {
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
            bulk_devs: Vec::new(),
        }
    }

    pub(super) fn run(mut self, root: Option<Arc<Node<R::Dir>>>) {
        if let Some(node) = root {
            self.list_dir(node);
        }
        loop {
            let (shared, stack) = (self.shared, &mut self.stack);
            shared.sink.throttle(&mut |dir, subtree| take_feeding(shared, stack, dir, subtree));
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
        let follow = Follow::when(self.shared.walk.follow_all);
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
                let links = if follow == Follow::Yes {
                    self.shared.link_counts.lock().unwrap().get(&(child.dev, child.ino)).copied().unwrap_or(0)
                } else {
                    0
                };
                let node = Arc::new(Node {
                    early: AtomicBool::new(false),
                    offered_live: AtomicU32::new(0),
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
    ///
    /// The check is fts's: the `..` of a directory left upward must be the parent it was
    /// entered from. It runs through handles carried up from level to level (`Held`), so
    /// each level costs one `open` of `..`, never a walk from the root by names.
    fn subtree_done(&self, node: &Arc<Node<R::Dir>>) {
        if !self.shared.walk.check_moved {
            return;
        }
        let mut held: Option<Held<'_, R::Dir>> = None;
        let mut cur = node.clone();
        while cur.subtree.fetch_sub(1, Ordering::AcqRel) == 1 {
            let Some(parent) = cur.parent.clone() else {
                self.shared.sink.finished(cur.dir);
                return;
            };
            // Nothing needs this handle any more (every job of the subtree is done), and
            // a handle on the directory itself is the cheapest start of a climb.
            if let Some(dir) = cur.handle.write().unwrap().take() {
                held = Some(Held { dir, node: cur.clone(), open_handles: &self.shared.open_handles });
            }
            let height = cur.height.load(Ordering::Acquire);
            parent.height.fetch_max(height + 1, Ordering::AcqRel);
            if height >= FTS_FD_RING {
                held = self.check_left_upward(&cur, &parent, held.take());
            }
            self.shared.sink.finished(cur.dir);
            cur = parent;
        }
    }

    /// Leaves `cur` (whose subtree is done) for `parent` as fts does once its ring of
    /// handles is empty: opens `cur`'s `..` and reports `cur` moved when that is not
    /// `parent`. Returns the handle on `parent` for the next level up, if it has one.
    fn check_left_upward<'h>(
        &'h self,
        cur: &Arc<Node<R::Dir>>,
        parent: &Arc<Node<R::Dir>>,
        held: Option<Held<'h, R::Dir>>,
    ) -> Option<Held<'h, R::Dir>> {
        let count = &self.shared.open_handles;
        let here = held.and_then(|h| h.climb_to::<R>(cur)).or_else(|| {
            // No handle came up from below (closed to save handles, or a directory on the
            // way moved): re-open `cur` by names, and believe it only if it is `cur`.
            let dir = reopen::<R>(cur).ok()?;
            count.fetch_add(1, Ordering::Relaxed);
            let h = Held { dir, node: cur.clone(), open_handles: count };
            is_node::<R>(&h.dir, cur).then_some(h)
        });
        if let Some(up) = here.as_ref().and_then(|h| R::open_at(&h.dir, c"..", Follow::No).ok()) {
            count.fetch_add(1, Ordering::Relaxed);
            let up = Held { dir: up, node: parent.clone(), open_handles: count };
            if !is_node::<R>(&up.dir, parent) {
                self.shared.sink.moved(cur.dir);
                return None;
            }
            return Some(up);
        }
        // `..` cannot be opened here (a reader without it, or `cur` lost its search
        // permission): its parent must still hold it under the same name. When the parent
        // itself cannot be reached any more, an ancestor moved: that one is reported when
        // its own subtree is done.
        let found = with_handle::<R, _>(parent, |dir| Ok(R::stat_at(dir, &cur.name, Follow::No)));
        if let Ok(still) = found {
            if !still.is_ok_and(|m| (m.dev, m.ino) == (cur.dev, cur.ino)) {
                self.shared.sink.moved(cur.dir);
            }
        }
        None
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

    /// Lists `node`'s directory: the first entries are stat'ed here as they come, the rest
    /// cut into chunks (`listed`, `Listing`); then the listing is committed with its count
    /// and the chunks nobody took are dispatched, and the handle is let go if handles are
    /// over budget.
    fn list_dir(&mut self, node: Arc<Node<R::Dir>>) {
        let guard = node.handle.read().unwrap();
        let dir = guard.as_ref().expect("a node being listed holds its handle");
        if self.shared.walk.shared && self.can_share(&node, dir).0 {
            self.shared.sink.sharing_dir(node.dir);
        }
        let mut l = Listing::default();
        let mut lister = self.lister.take().unwrap_or_default();
        let result =
            R::list(&mut lister, dir, &mut |name, d_ino, meta| self.listed(&mut l, &node, dir, name, d_ino, meta));
        self.lister = Some(lister);
        if l.chunk_len > 0 {
            l.split.push((l.chunk_base, std::mem::take(&mut l.chunk)));
        }
        let sort_by_inode = l.idx > 10_000 && R::sorts_by_inode(dir);
        drop(guard);
        let error = result.err().map(|e| (e, l.idx > 0));
        if S::CONTIGUOUS && early_cap().is_some() && node.early.load(Ordering::Acquire) {
            wait_for_offered(&node);
        }
        self.shared.sink.listed(node.dir, l.idx, l.name_pos);
        let listed = Listed { entries: l.idx, sort_by_inode, error };
        self.commit(&node, Some(listed));
        if S::CONTIGUOUS {
            self.commit_parked(&node);
        }
        for (base, names) in l.split {
            self.dispatch(&node, base, names, l.serial);
        }
        if self.shared.open_handles.load(Ordering::Relaxed) > self.shared.walk.fd_budget
            && node.handle.write().unwrap().take().is_some()
        {
            self.shared.open_handles.fetch_sub(1, Ordering::Relaxed);
        }
        self.wrote(&node);
        self.release(&node);
    }

    /// One entry of the listing `l` of `node`: the first `split_after` (and every entry
    /// the listing already sized) are stat'ed and handed to the sink now; later ones go
    /// into the chunk being filled, and a full chunk to `chunk_full`.
    fn listed(
        &mut self,
        l: &mut Listing,
        node: &Arc<Node<R::Dir>>,
        dir: &R::Dir,
        name: &CStr,
        d_ino: u64,
        meta: Option<&Meta>,
    ) {
        let split_after = if S::CONTIGUOUS { SPLIT_AFTER_CONTIGUOUS } else { SPLIT_AFTER };
        if l.idx == split_after / 2 && meta.is_none() && R::lookups_serialize(dir) {
            l.cpu_at_half = Some(R::thread_cpu_ns());
        }
        if l.idx < split_after || meta.is_some() {
            let pos = Pos { idx: l.idx, d_ino, depth: node.depth, name_pos: l.name_pos };
            self.entry(node, dir, name, pos, meta);
        } else {
            if l.idx == split_after {
                l.serial = l
                    .cpu_at_half
                    .is_some_and(|t| stays_serial(R::thread_cpu_ns().saturating_sub(t), split_after - split_after / 2));
                if S::CONTIGUOUS && !l.serial {
                    self.reserve_early(node, dir);
                }
            }
            if l.push_name(name, d_ino, !S::CONTIGUOUS) {
                self.chunk_full(l, node, dir);
            }
        }
        l.idx = l.idx.saturating_add(1);
        l.name_pos += S::name_cost(name.to_bytes().len());
    }

    /// Hands the full chunk of `l` to an idle worker now (a `CONTIGUOUS` sink's chunk
    /// results wait in `parked` until the listing is committed, so only `PARKED_CHUNKS`
    /// go early: the rest wait in `l.split` as bare names, which cost far less than
    /// stat'ed entries). With nobody idle, or a listing that stays serial, a
    /// non-contiguous sink gets what the listing found so far committed and the chunk
    /// stat'ed here, so memory stays flat however wide the directory.
    fn chunk_full(&mut self, l: &mut Listing, node: &Arc<Node<R::Dir>>, dir: &R::Dir) {
        let (base, names) = (l.chunk_base, std::mem::take(&mut l.chunk));
        l.chunk_len = 0;
        if S::CONTIGUOUS {
            // With an early reservation only what a chunk cannot write at once parks
            // (`commit_early`), so chunks go early as long as few results wait.
            let room = l.offered < PARKED_CHUNKS
                || (node.early.load(Ordering::Relaxed) && node.parked.lock().unwrap().1.len() < PARKED_CHUNKS);
            let early = room && !l.serial;
            match if early { self.offer_chunk(node, base, names) } else { Err(names) } {
                Ok(()) => {
                    l.offered += 1;
                    node.offered_live.fetch_add(1, Ordering::AcqRel);
                }
                Err(names) => l.split.push((base, names)),
            }
        } else if let Err(names) = if l.serial { Err(names) } else { self.offer_chunk(node, base, names) } {
            self.commit(node, None);
            Self::each_name(node, base, &names, &mut |name, pos| self.entry(node, dir, name, pos, None));
            self.commit(node, None);
        }
    }

    /// A `CONTIGUOUS` sink's listing that grew past `split_after` entries: ids for as
    /// many entries as its file system's format allows its size to hold
    /// (`Reader::entries_bound`), reserved now, so that its chunks are written as soon
    /// as they are stat'ed (on one folder of a million files, `dfdu scan` had waited for
    /// the listing's end and came 1.22× behind `dfdu -s`).
    fn reserve_early(&self, node: &Node<R::Dir>, dir: &R::Dir) {
        let bound = early_cap().or_else(|| R::entries_bound(dir));
        if let Some((entries, name_bytes)) = bound.filter(|b| b.0 > u64::from(SPLIT_AFTER_CONTIGUOUS)) {
            if self.shared.sink.reserve_early(node.dir, entries, name_bytes) {
                node.early.store(true, Ordering::Release);
            }
        }
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

    /// Offers a chunk to idle workers, or stats it here (always when `serial`).
    fn dispatch(&mut self, node: &Arc<Node<R::Dir>>, base: (u32, u64), names: Vec<u8>, serial: bool) {
        if let Err(names) = if serial { Err(names) } else { self.offer_chunk(node, base, names) } {
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
            if node.early.load(Ordering::Acquire) && self.shared.sink.commit_early(&mut self.local, node.dir) {
                node.offered_live.fetch_sub(1, Ordering::AcqRel);
                self.wrote(node);
                return;
            }
            let mut parked = node.parked.lock().unwrap();
            if !parked.0 {
                node.offered_live.fetch_sub(1, Ordering::AcqRel);
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
            && given.or(R::stat_at(dir, name, Follow::No).ok().as_ref()).is_some_and(|m| m.kind == Kind::Symlink)
        {
            sink.entry(&mut self.local, pos, bytes, Seen::Error(Errno::LOOP));
            return;
        }
        let stat;
        let meta = match given {
            Some(m) if !(walk.follow_all && m.kind == Kind::Symlink) => m,
            _ => match R::stat_at(dir, name, Follow::when(walk.follow_all)) {
                Ok(m) => {
                    stat = m;
                    &stat
                }
                Err(e) => {
                    // A dangling symlink under -L is reported without an error text, as
                    // fts's FTS_SLNONE is: errno 0.
                    let dangling = walk.follow_all && e == Errno::NOENT && R::stat_at(dir, name, Follow::No).is_ok();
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
        } else if meta.kind == Kind::Dir && self.left_out(node, dir, name, meta) {
            Seen::ExcludedDir(meta)
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

    /// Whether directory `name` of `dir` is left out by `--exclude-caches` (it holds a
    /// valid `CACHEDIR.TAG`) or `--exclude-kernfs` (a mount of a kernel file system: only
    /// a directory on another device than its parent is asked). One more open of the
    /// directory, only with those options.
    fn left_out(&self, node: &Node<R::Dir>, dir: &R::Dir, name: &CStr, meta: &Meta) -> bool {
        let walk = self.shared.walk;
        let kernfs = walk.exclude_kernfs && meta.dev != node.dev;
        if !(kernfs || walk.exclude_caches) {
            return false;
        }
        let Ok(sub) = R::open_at(dir, name, Follow::when(walk.follow_all)) else { return false };
        (kernfs && R::kernel_fs(&sub)) || (walk.exclude_caches && R::cachedir_tagged(&sub))
    }

    /// Whether directory `dir` of `node` lies on a file system that can share extents,
    /// and the sink's bulk source for it if it has one (a btrfs subvolume's tree; the
    /// reverse-map listing of an XFS the scan entered at its root, started now): asked
    /// once per device per worker (and the bulk source opened once per device by the
    /// sink).
    fn can_share(&mut self, node: &Node<R::Dir>, dir: &R::Dir) -> (bool, Option<u32>) {
        let dev = node.dev;
        if let Some(&(_, yes, bulk)) = self.sharing_devs.iter().find(|(d, ..)| *d == dev) {
            return (yes, bulk);
        }
        let yes = R::fs_shares_extents(dir);
        let mut open = || {
            if let Some(tree) = R::bulk_tree(dir) {
                return Some(Source::Tree(tree));
            }
            let at_once = bulk::lists_at_once::<R>(dir, || entered_at_root::<R>(node));
            at_once.then(|| bulk::Listing::start::<R>(dir)).flatten().map(Source::Listing)
        };
        let bulk = if yes { self.shared.sink.bulk_source(dev, &mut open) } else { None };
        self.sharing_devs.push((dev, yes, bulk));
        (yes, bulk)
    }

    /// Reads the extent map of the regular file `name` and hands its figures to the sink:
    /// where the sink reads btrfs's metadata in bulk it only tells the sink the file
    /// (`walk/join.rs`); else from the device's bulk listing when it is read
    /// (`walk/bulk.rs`), else from the file's own. A file whose map cannot be read (no
    /// permission, gone, no FIEMAP) counts nothing, as in `btrfs filesystem du`.
    fn extents(&mut self, node: &Node<R::Dir>, dir: &R::Dir, name: &CStr, pos: Pos, meta: &Meta) {
        let (yes, bulk) = self.can_share(node, dir);
        if !yes {
            return;
        }
        // A file mounted over one of the directory's names is on another device: its own
        // extent map.
        if meta.dev == node.dev {
            if let Some(tree) = bulk {
                self.shared.sink.bulk_file(&mut self.local, pos, meta, tree);
                return;
            }
            let bulk = self.bulk_plan(node, dir);
            if bulk.map::<R>(dir).is_some_and(|map| map.fill(meta.ino, &mut self.file_extents)) {
                self.shared.sink.extents(&mut self.local, pos, meta, &self.file_extents);
                return;
            }
        }
        let f = &mut self.file_extents;
        f.clear();
        // Allocated on first use, so scans without sharing never pay for it.
        let buf = self.extent_buf.get_or_insert_with(R::ExtentBuf::default);
        if R::file_extents_at(dir, name, buf, &mut |e| f.add(e)).is_ok() {
            self.shared.sink.extents(&mut self.local, pos, meta, &self.file_extents);
        }
    }

    /// The scan's bulk plan for `node`'s device.
    fn bulk_plan(&mut self, node: &Node<R::Dir>, dir: &R::Dir) -> Arc<Bulk> {
        if let Some((_, b)) = self.bulk_devs.iter().find(|(d, _)| *d == node.dev) {
            return b.clone();
        }
        let b = self.shared.bulk.get::<R>(node.dev, dir, || entered_at_root::<R>(node));
        self.bulk_devs.push((node.dev, b.clone()));
        b
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
        node.is_or_descends_from(meta)
    }

    /// With `-L`: a directory reached again. When directories are claimed, any directory
    /// claimed before; otherwise (with `-l`) only an ancestor (a cycle).
    fn is_repeat(&self, node: &Node<R::Dir>, meta: &Meta) -> bool {
        if self.shared.walk.claim_dirs {
            return !self.shared.claims.lock().unwrap().insert((meta.dev, meta.ino));
        }
        node.is_or_descends_from(meta)
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

/// A directory handle `subtree_done` carries up the tree: on `node`'s directory (or, after
/// a climb, checked to be it), counted in `open_handles` until dropped.
struct Held<'h, D> {
    dir: D,
    node: Arc<Node<D>>,
    open_handles: &'h AtomicUsize,
}

impl<D> Drop for Held<'_, D> {
    fn drop(&mut self) {
        self.open_handles.fetch_sub(1, Ordering::Relaxed);
    }
}

impl<'h, D> Held<'h, D> {
    /// Turns a handle on a directory at or below `target` into one on `target`, through
    /// `..` one level at a time, each checked to be the node above; `None` when one is not
    /// (something on the way moved: fts does not look at these levels, and nor does this).
    fn climb_to<R: Reader<Dir = D>>(mut self, target: &Arc<Node<D>>) -> Option<Self> {
        while !Arc::ptr_eq(&self.node, target) {
            let above = self.node.parent.clone()?;
            let dir = R::open_at(&self.dir, c"..", Follow::No).ok()?;
            self.open_handles.fetch_add(1, Ordering::Relaxed);
            self = Held { dir, node: above, open_handles: self.open_handles };
            if !is_node::<R>(&self.dir, &self.node) {
                return None;
            }
        }
        Some(self)
    }
}

/// Whether the scan entered `node`'s device at the root of a mount (then it sees all of
/// that file system, excludes aside): through a mount point below the scan's root, or at
/// the root itself when its `..` is on another device or is itself.
fn entered_at_root<R: Reader>(node: &Node<R::Dir>) -> bool {
    let mut top = node;
    while let Some(up) = top.parent.as_deref() {
        if up.dev != top.dev {
            return true;
        }
        top = up;
    }
    with_handle::<R, _>(top, |d| R::stat_at(d, c"..", Follow::No))
        .is_ok_and(|up| up.dev != top.dev || up.ino == top.ino)
}

/// The test aid `DFDU_TEST_EARLY_CAP=ENTRIES,NAME_BYTES`: the bound every big listing
/// gets instead of its file system's (small ones make its directory outgrow it).
fn early_cap() -> Option<(u64, u64)> {
    static KNOB: std::sync::OnceLock<Option<(u64, u64)>> = std::sync::OnceLock::new();
    *KNOB.get_or_init(|| {
        let v = std::env::var("DFDU_TEST_EARLY_CAP").ok()?;
        let (a, b) = v.split_once(',')?;
        Some((a.parse().ok()?, b.parse().ok()?))
    })
}

/// With the test aid `DFDU_TEST_EARLY_CAP`: the listing's end waits (at most 10 s) until
/// every chunk offered while it was read is written or parked, so that a test sees the
/// early writes (and a bound too small for them) whatever the timing; the chunks were
/// taken by idle workers, so they finish without this thread.
fn wait_for_offered<D>(node: &Node<D>) {
    let until = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while node.offered_live.load(Ordering::Acquire) != 0 && std::time::Instant::now() < until {
        std::thread::yield_now();
    }
}

/// Whether the handle `dir` is on `node`'s directory (same device and inode).
fn is_node<R: Reader>(dir: &R::Dir, node: &Node<R::Dir>) -> bool {
    R::stat_at(dir, c".", Follow::No).is_ok_and(|m| (m.dev, m.ino) == (node.dev, node.ino))
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
    f(&reopen::<R>(node)?)
}

/// A new handle on `node`'s directory, opened from the nearest ancestor that still holds
/// one, by names one level at a time (from the root path when none does).
fn reopen<R: Reader>(node: &Node<R::Dir>) -> Result<R::Dir, Errno> {
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
                    return Ok(open);
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
                return Ok(open);
            }
        }
    }
}
