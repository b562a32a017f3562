//! Starting threads that may not start. A low `RLIMIT_AS`, `RLIMIT_NPROC` or a cgroup's
//! pids limit makes `std::thread::spawn` panic ("failed to spawn thread"); here a thread
//! that cannot start is no error: the work runs on the threads that did, the calling
//! thread always among them, so the answer is the same and only slower.

use std::sync::{Arc, Mutex};
use std::thread::{Builder, Scope};

/// Stack of a worker started here. Nothing a worker runs recurses (reads, hashes, extent
/// maps), but BLAKE3's AVX2 code unoptimized (a debug build) takes between 288 and 320
/// KiB; 512 KiB leaves a margin and, for 32 workers, 48 MiB less of a tight address-space
/// limit than Rust's default of 2 MiB a thread.
pub const WORKER_STACK_BYTES: usize = 512 * 1024;

/// Runs `work` on up to `n` threads and returns how many ran it: `n - 1` are started
/// (until one fails to start) and the calling thread runs it too, so at least one does.
/// Every copy of `work` must take its jobs from a shared source (an atomic counter, a
/// queue) until none are left: which copies run, and how many, must not change what is
/// done. Returns when every copy has returned.
pub fn on_threads(n: usize, work: impl Fn() + Sync) -> usize {
    std::thread::scope(|s| {
        let work = &work;
        let mut started = 1;
        while started < n {
            if !try_spawn(s, work) {
                break;
            }
            started += 1;
        }
        work();
        started
    })
}

/// Starts `f` on a thread of scope `s` with a small stack (`WORKER_STACK_BYTES`); false
/// when no thread can be started (`f` is then dropped unrun: for work that may be left
/// out, such as a progress line).
pub fn try_spawn<'s, 'e, F>(s: &'s Scope<'s, 'e>, f: F) -> bool
where
    F: FnOnce() + Send + 's,
{
    Builder::new().stack_size(WORKER_STACK_BYTES).spawn_scoped(s, f).is_ok()
}

/// Runs `f` on a thread of scope `s`, or here, before returning, when no thread can be
/// started: work that must be done is done either way. The thread has std's default
/// stack: what runs there (a browser's scan, delete or rescan) is not a pool worker.
pub fn spawn_or_run<'s, 'e, F>(s: &'s Scope<'s, 'e>, f: F)
where
    F: FnOnce() + Send + 's,
{
    // `spawn_scoped` consumes its closure even when it fails: `f` waits in a slot both
    // sides can reach, and whoever takes it runs it.
    let slot = Arc::new(Mutex::new(Some(f)));
    let theirs = slot.clone();
    let spawned = Builder::new().spawn_scoped(s, move || {
        if let Some(f) = take(&theirs) {
            f()
        }
    });
    if spawned.is_err() {
        if let Some(f) = take(&slot) {
            f()
        }
    }
}

fn take<F>(slot: &Mutex<Option<F>>) -> Option<F> {
    slot.lock().unwrap_or_else(|poisoned| poisoned.into_inner()).take()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    #[test]
    fn every_job_runs_once_whatever_the_thread_count() {
        for n in [0, 1, 2, 7] {
            let next = AtomicUsize::new(0);
            let done: Vec<AtomicUsize> = (0..100).map(|_| AtomicUsize::new(0)).collect();
            let ran = on_threads(n, || loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some(slot) = done.get(i) else { break };
                slot.fetch_add(1, Ordering::Relaxed);
            });
            assert_eq!(ran, n.max(1), "threads for n = {n}");
            assert!(done.iter().all(|d| d.load(Ordering::Relaxed) == 1), "n = {n}");
        }
    }

    #[test]
    fn spawn_or_run_runs_its_work_once() {
        let runs = AtomicUsize::new(0);
        std::thread::scope(|s| {
            spawn_or_run(s, || {
                runs.fetch_add(1, Ordering::Relaxed);
            })
        });
        assert_eq!(runs.load(Ordering::Relaxed), 1);
    }
}
