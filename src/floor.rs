//! `dfdu floor`: the benchmark's yardstick, not a feature. The least a walker can do on
//! this platform — open each directory relative to its parent, list it, stat each
//! non-directory entry once, add up the blocks — with N threads sharing one stack of
//! directories. No hard-link bookkeeping, no records, no ordering; the same reader
//! calls dfdu itself uses. `make bench` compares dfdu's CPU per entry with this.

use crate::meta::Kind;
use crate::reader::Reader;
use std::ffi::CString;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex};

struct Stack<D> {
    jobs: Vec<(Arc<D>, CString)>,
    idle: usize,
    done: bool,
}

/// Walks `root` with `threads` threads; returns (entries, bytes on disk).
pub fn walk<R: Reader>(root: &CString, threads: usize) -> (u64, u64) {
    let Ok(dir) = R::open_path(root, false) else { return (0, 0) };
    let blocks = AtomicU64::new(0);
    let entries = AtomicU64::new(1);
    let stack = Mutex::new(Stack { jobs: Vec::new(), idle: 0, done: false });
    let wake = Condvar::new();
    let first = Arc::new(dir);
    std::thread::scope(|s| {
        for t in 0..threads.max(1) {
            let (stack, wake, blocks, entries) = (&stack, &wake, &blocks, &entries);
            let mut start = (t == 0).then(|| first.clone());
            s.spawn(move || {
                let mut lister = R::Lister::default();
                let mut found: Vec<(Arc<R::Dir>, CString)> = Vec::new();
                loop {
                    let dir = match start.take() {
                        Some(d) => d,
                        None => {
                            let mut st = stack.lock().unwrap();
                            let job = loop {
                                if let Some(j) = st.jobs.pop() {
                                    break Some(j);
                                }
                                if st.done {
                                    break None;
                                }
                                st.idle += 1;
                                if st.idle == threads.max(1) {
                                    st.done = true;
                                    wake.notify_all();
                                    break None;
                                }
                                st = wake.wait(st).unwrap();
                                st.idle -= 1;
                            };
                            let Some((parent, name)) = job else { return };
                            match R::open_at(&parent, &name, false) {
                                Ok(d) => Arc::new(d),
                                Err(_) => continue,
                            }
                        }
                    };
                    let (mut n, mut b) = (0u64, 0u64);
                    let _ = R::list(&mut lister, &dir, &mut |name, _, _| {
                        n += 1;
                        if let Ok(m) = R::stat_at(&dir, name, false) {
                            b += m.blocks;
                            if m.kind == Kind::Dir {
                                found.push((dir.clone(), name.to_owned()));
                            }
                        }
                    });
                    entries.fetch_add(n, Ordering::Relaxed);
                    blocks.fetch_add(b, Ordering::Relaxed);
                    if !found.is_empty() {
                        stack.lock().unwrap().jobs.append(&mut found);
                        wake.notify_all();
                    }
                }
            });
        }
    });
    (entries.into_inner(), blocks.into_inner() * 512)
}
