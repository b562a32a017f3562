//! The browser's sharing figures, filled in the background (issue 28.3).
//!
//! The tree shows as soon as it is scanned, without extent maps (one FIEMAP per file
//! costs 2.6–4.2× the scan: docs/shared-extents.md). Then `fill_as` reads each regular
//! file's extent map on the scan's worker count of threads, directory by directory from
//! the root down, and every quarter second (or longer, when computing takes longer)
//! hands what it read to the arena, which computes the figures again. A directory's
//! figures are shown once every directory below it has been read (`Progress`); until
//! then the browser shows a marker.
//!
//! Deletes and rescans while it runs: a deleted entry or directory counts nothing
//! (the arena's liveness, as after any delete); a file deleted before it was read is
//! simply not found. A rescan reads its subtree's extent maps itself, into directory
//! records made after the fill began, which the fill never enters; the records it
//! replaced are dead. Directories are opened from their parent's handle without
//! following symlinks, as the scan opens them.

use crate::meta::Kind;
use crate::platform::Follow;
use crate::tree::arena::{self, Arena, NO_DIR};
use crate::tree::sharing::{Collector, FileFigures, LinkId, Progress};
use crate::walk::extents::{FileExtents, Sharing};
use crate::walk::reader::Reader;
use std::ffi::{CStr, CString};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

/// A directory to read: its index and how to open it.
struct Task<D> {
    dir: u32,
    /// Its parent's handle and its name, or none for the root (opened by path).
    from: Option<(Arc<D>, CString)>,
}

/// What the fill's threads share.
struct Shared<D> {
    /// Directories to read (taken from the end: depth first, so few handles stay open)
    /// and how many threads are reading one.
    queue: Mutex<(Vec<Task<D>>, usize)>,
    wake: Condvar,
    /// Extent figures read since the last hand-over.
    read: Mutex<Collector>,
    /// Per directory below `limit`: directories below it (itself included) not read yet.
    left: Vec<AtomicU32>,
    /// Directories read with everything below them, by index.
    done: Mutex<Vec<bool>>,
    /// Directories made after the fill began (rescans) are not its to read.
    limit: u32,
}

/// Reads the extent maps of every regular file below directory `root` (the arena's,
/// scanned from `path`) on `threads` threads and hands the figures to the arena as
/// they come. What `sharing` says decides whether it reads at all (`Sharing::in_browse`:
/// by default not when the root's file system cannot share extents, so ext4, tmpfs or
/// NFS see no extra call).
pub fn fill_as<R: Reader>(a: &Arena, path: &CStr, root: u32, threads: usize, sharing: Sharing) {
    let Ok(top) = R::open_path(path, Follow::Yes) else { return };
    if !sharing.in_browse(R::fs_shares_extents(&top)) {
        return;
    }
    drop(top);
    let limit = a.dir_count();
    let sh = Shared {
        queue: Mutex::new((vec![Task { dir: root, from: None }], 0)),
        wake: Condvar::new(),
        read: Mutex::new(Collector::keeping_files()),
        left: (0..limit).map(|_| AtomicU32::new(1)).collect(),
        done: Mutex::new(vec![false; limit as usize]),
        limit,
    };
    a.set_shared_progress(Some(Progress { limit, done: vec![false; limit as usize] }));
    pause_before_fill();
    std::thread::scope(|s| {
        for _ in 0..threads.max(1) {
            crate::walk::threads::spawn_or_run(s, || worker::<R>(a, path, &sh));
        }
        hand_over(a, &sh);
    });
}

/// Hands what the threads read to the arena, every quarter second or longer, until they
/// are done; then once more, with every figure final.
fn hand_over<D>(a: &Arena, sh: &Shared<D>) {
    let mut wait = Duration::from_millis(250);
    loop {
        let finished = {
            let q = sh.queue.lock().unwrap();
            let (q, _) =
                sh.wake.wait_timeout_while(q, wait, |(tasks, busy)| !(tasks.is_empty() && *busy == 0)).unwrap();
            q.0.is_empty() && q.1 == 0
        };
        // Which directories are done, before taking what was read: a directory's files
        // are handed over before it is marked, so every one marked now is in `read`.
        let progress = (!finished).then(|| Progress { limit: sh.limit, done: sh.done.lock().unwrap().clone() });
        let read = std::mem::replace(&mut *sh.read.lock().unwrap(), Collector::keeping_files());
        let start = Instant::now();
        a.set_shared_progress(progress);
        a.add_shared_input(read);
        if finished {
            return;
        }
        // Computing the figures again goes over every file read: never more than a
        // fifth of the time.
        wait = wait.max(start.elapsed() * 4);
    }
}

/// One thread: takes directories until none is left and nobody can add any.
fn worker<R: Reader>(a: &Arena, path: &CStr, sh: &Shared<R::Dir>) {
    let mut buf = R::ExtentBuf::default();
    let mut ext = FileExtents::default();
    loop {
        let task = {
            let mut q = sh.queue.lock().unwrap();
            loop {
                if let Some(t) = q.0.pop() {
                    q.1 += 1;
                    break t;
                }
                if q.1 == 0 {
                    sh.wake.notify_all();
                    return;
                }
                q = sh.wake.wait(q).unwrap();
            }
        };
        let opened = match &task.from {
            None => R::open_path(path, Follow::Yes),
            Some((parent, name)) => R::open_at(parent, name, Follow::No),
        };
        drop(task.from);
        let subdirs = match opened {
            Ok(d) => read_dir::<R>(a, task.dir, d, sh, (&mut buf, &mut ext)),
            Err(_) => Vec::new(),
        };
        sh.left[task.dir as usize].fetch_add(subdirs.len() as u32, Ordering::AcqRel);
        let mut q = sh.queue.lock().unwrap();
        q.0.extend(subdirs);
        q.1 -= 1;
        drop(q);
        sh.wake.notify_all();
        finish(a, task.dir, sh);
    }
}

/// Directory `dir` and one below it read: counts it off, and marks done each
/// directory, from `dir` up, with nothing left below it.
fn finish<D>(a: &Arena, mut dir: u32, sh: &Shared<D>) {
    while dir < sh.limit && sh.left[dir as usize].fetch_sub(1, Ordering::AcqRel) == 1 {
        sh.done.lock().unwrap()[dir as usize] = true;
        dir = a.dir_parent(dir);
        if dir == NO_DIR {
            return;
        }
    }
}

/// Reads the extent maps of the regular files of directory `dir` (open as `d`) into the
/// shared figures; returns its subdirectories to read.
fn read_dir<R: Reader>(
    a: &Arena,
    dir: u32,
    d: R::Dir,
    sh: &Shared<R::Dir>,
    (buf, ext): (&mut R::ExtentBuf, &mut FileExtents),
) -> Vec<Task<R::Dir>> {
    let Some(kids) = a.children(dir) else { return Vec::new() };
    let shares = R::fs_shares_extents(&d);
    let d = Arc::new(d);
    let mut local = Collector::keeping_files();
    let mut subdirs = Vec::new();
    let (mut at, mut name) = (a.names_at(dir), Vec::new());
    for id in kids {
        at = a.read_name(at, &mut name);
        let flags = a.flags(id);
        if a.removed(id) || flags.intersects(arena::F_ERROR | arena::F_EXCLUDED | arena::F_OTHER_FS) {
            continue;
        }
        let Ok(cname) = CString::new(name.as_slice()) else { continue };
        if flags.is_dir() {
            let sub = a.dir_of(id);
            // Only directories the scan went into, and none a rescan made since.
            if sub < sh.limit && sub != dir && a.children(sub).is_some_and(|k| !k.is_empty()) {
                subdirs.push(Task { dir: sub, from: Some((d.clone(), cname)) });
            }
            continue;
        }
        let disk = a.own_sizes(id).0;
        if !shares || flags.kind() != Kind::File || disk == 0 {
            continue;
        }
        ext.clear();
        if R::file_extents_at(&d, &cname, buf, &mut |e| ext.add(e)).is_err() {
            continue;
        }
        let link = a.link_of(id).filter(|_| flags.contains(arena::F_HARDLINK));
        let link = link.map(|(dev, ino, nlink)| LinkId { dev, ino, nlink });
        let charged = if flags.contains(arena::F_DUP_LINK) { 0 } else { disk };
        let f = FileFigures { total: ext.total, shared: ext.shared, disk, charged, refs_unknown: ext.refs_unknown };
        local.add(dir, id, link, f, &ext.ranges, &ext.known);
    }
    sh.read.lock().unwrap().merge(local);
    subdirs
}

/// A test aid, as `DFDU_DEBUG_EXTENTS` is: with `DFDU_TEST_PAUSE_BEFORE_FILL` naming a
/// FIFO, the fill waits before reading any extent map until the test has opened the FIFO
/// for writing and closed it, so that it can see the first screen without figures. In
/// every build: `make test` tests the release build (it was debug-only once, and the
/// test then raced the fill). It only ever waits; unset, it costs one look at the
/// environment per fill.
fn pause_before_fill() {
    if let Some(fifo) = std::env::var_os("DFDU_TEST_PAUSE_BEFORE_FILL") {
        if let Ok(mut f) = std::fs::File::open(fifo) {
            let _ = std::io::Read::read_to_end(&mut f, &mut Vec::new());
        }
    }
}
