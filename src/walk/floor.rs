//! `dfdu floor`: the benchmark's yardstick, not a feature. The least a walker can do on
//! this platform — open each directory relative to its parent, list it, stat each entry
//! once, add up the blocks — with N threads sharing one stack of work. Like dfdu, it
//! hands the names of a very wide directory to all threads in chunks, so both pay the
//! same kernel costs; it keeps no hard-link bookkeeping, no records and no order. The
//! same reader calls dfdu itself uses. `make bench` compares dfdu's CPU per entry with it.

use crate::meta::Kind;
use crate::platform::Follow;
use crate::walk::reader::Reader;
use std::ffi::CString;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex};

/// Names a lister stats itself before handing the rest out in chunks of this size.
const CHUNK: usize = 2048;

enum Work<D> {
    /// Open `name` inside the directory and list it.
    Dir(Arc<D>, CString),
    /// Stat these names of the directory.
    Names(Arc<D>, Vec<CString>),
}

struct Stack<D> {
    jobs: Vec<Work<D>>,
    idle: usize,
    /// Threads that started (the work is done when they all are idle).
    threads: usize,
    done: bool,
}

/// Walks `root` with `threads` threads; returns (entries, bytes on disk).
pub fn walk<R: Reader>(root: &CString, threads: usize) -> (u64, u64) {
    let Ok(dir) = R::open_path(root, Follow::No) else { return (0, 0) };
    let threads = threads.max(1);
    let blocks = AtomicU64::new(0);
    let entries = AtomicU64::new(1);
    let stack = Mutex::new(Stack { jobs: Vec::new(), idle: 0, threads, done: false });
    let wake = Condvar::new();
    let first = Arc::new(dir);
    std::thread::scope(|s| {
        let shared = (&stack, &wake, &blocks, &entries);
        // A thread that cannot start (RLIMIT_NPROC, a pids limit) is done without; the
        // count the last idle thread compares with is corrected before this one works.
        let mut started = 1;
        while started < threads {
            if std::thread::Builder::new().spawn_scoped(s, move || worker::<R>(None, shared)).is_err() {
                break;
            }
            started += 1;
        }
        stack.lock().unwrap().threads = started;
        worker::<R>(Some(first), shared);
    });
    (entries.into_inner(), blocks.into_inner() * 512)
}

/// What the threads share: the stack of work, its wake-up, and the two sums.
type Shared<'a, D> = (&'a Mutex<Stack<D>>, &'a Condvar, &'a AtomicU64, &'a AtomicU64);

/// One thread's loop: `start` first (the root, for the calling thread), then work from
/// the shared stack until every thread is idle.
fn worker<R: Reader>(mut start: Option<Arc<R::Dir>>, (stack, wake, blocks, entries): Shared<R::Dir>) {
    let mut lister = R::Lister::default();
    let mut out: Vec<Work<R::Dir>> = Vec::new();
    let stat = |dir: &Arc<R::Dir>, name: &std::ffi::CStr, out: &mut Vec<Work<R::Dir>>| -> u64 {
        match R::stat_at(dir, name, Follow::No) {
            Ok(m) => {
                if m.kind == Kind::Dir {
                    out.push(Work::Dir(dir.clone(), name.to_owned()));
                }
                m.blocks
            }
            Err(_) => 0,
        }
    };
    loop {
        let work = match start.take() {
            Some(d) => Work::Dir(d, CString::default()),
            None => match next(stack, wake) {
                Some(w) => w,
                None => return,
            },
        };
        let (mut n, mut b) = (0u64, 0u64);
        match work {
            Work::Names(dir, names) => {
                for name in &names {
                    b += stat(&dir, name, &mut out);
                }
            }
            Work::Dir(parent, name) => {
                let dir = if name.is_empty() {
                    parent
                } else {
                    match R::open_at(&parent, &name, Follow::No) {
                        Ok(d) => Arc::new(d),
                        Err(_) => continue,
                    }
                };
                let mut chunk: Vec<CString> = Vec::new();
                let _ = R::list(&mut lister, &dir, &mut |name, _, _| {
                    n += 1;
                    if n as usize <= CHUNK {
                        b += stat(&dir, name, &mut out);
                        return;
                    }
                    chunk.push(name.to_owned());
                    if chunk.len() == CHUNK {
                        // Out to the other threads at once, while listing goes on.
                        stack.lock().unwrap().jobs.push(Work::Names(dir.clone(), std::mem::take(&mut chunk)));
                        wake.notify_one();
                    }
                });
                if !chunk.is_empty() {
                    out.push(Work::Names(dir.clone(), chunk));
                }
            }
        }
        entries.fetch_add(n, Ordering::Relaxed);
        blocks.fetch_add(b, Ordering::Relaxed);
        if !out.is_empty() {
            stack.lock().unwrap().jobs.append(&mut out);
            wake.notify_all();
        }
    }
}

/// Takes work from the shared stack, or waits; `None` once every thread is idle.
fn next<D>(stack: &Mutex<Stack<D>>, wake: &Condvar) -> Option<Work<D>> {
    let mut st = stack.lock().unwrap();
    loop {
        if let Some(w) = st.jobs.pop() {
            return Some(w);
        }
        if st.done {
            return None;
        }
        st.idle += 1;
        if st.idle == st.threads {
            st.done = true;
            wake.notify_all();
            return None;
        }
        st = wake.wait(st).unwrap();
        st.idle -= 1;
    }
}
