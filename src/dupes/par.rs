//! The finding stages' bookkeeping on every core: a sort, and jobs over parts of a list.
//!
//! After the scan, a rerun from the hash file reads nothing; what is left is sorting
//! the files by size, one candidate per inode, the hash file's look-ups and the groups,
//! all CPU work over every file (62 ms for 160,000 files on one thread, against a
//! 136 ms scan). The parts below let that run on the cores the scan just used. Each
//! part's result lands in its own slot and the slots are read in part order, so the
//! answer is the one a single thread gives, whatever the thread count (the readers'
//! `find::pool`: threads that cannot start leave their parts to the ones that did).

use super::find::{pool, Stats};
use std::ops::Range;
use std::sync::Mutex;

/// Lists shorter than this are done on the calling thread alone: starting threads
/// costs more than it saves.
const PAR_MIN: usize = 16_384;
/// Parts per thread, so that a part that takes longer does not hold the others up.
const PARTS_PER_THREAD: usize = 4;

/// Threads worth using for CPU work: no more than `threads` (the scan's) nor the cores.
pub fn cpu_threads(threads: usize) -> usize {
    threads.clamp(1, std::thread::available_parallelism().map_or(1, |n| n.get()))
}

/// Sorts `v` on up to `threads` threads (a sample sort): `threads - 1` splitters taken
/// from a sorted sample put every value in a bucket, all of whose values sort after the
/// previous bucket's; the buckets are sorted side by side. Short lists and one thread:
/// `sort_unstable`.
pub fn sort<T: Ord + Copy + Send>(v: &mut Vec<T>, threads: usize) {
    let n = v.len();
    if threads <= 1 || n < PAR_MIN {
        v.sort_unstable();
        return;
    }
    let samples = 64 * threads;
    let mut sample: Vec<T> = (0..samples).map(|i| v[i * n / samples]).collect();
    sample.sort_unstable();
    let splitters: Vec<T> = (1..threads).map(|b| sample[b * samples / threads]).collect();
    let bucket = |x: &T| splitters.partition_point(|s| s <= x);
    let mut starts = vec![0usize; threads + 1];
    for x in v.iter() {
        starts[bucket(x) + 1] += 1;
    }
    for b in 1..=threads {
        starts[b] += starts[b - 1];
    }
    let mut out = v.clone();
    let mut at = starts.clone();
    for x in v.iter() {
        let b = bucket(x);
        out[at[b]] = *x;
        at[b] += 1;
    }
    let buckets: Vec<Range<usize>> = (0..threads).map(|b| starts[b]..starts[b + 1]).collect();
    each_part_mut(threads, &mut out, &buckets, |slice, _| slice.sort_unstable());
    *v = out;
}

/// Cuts `0..len` into about `threads * PARTS_PER_THREAD` parts of about equal length
/// (one part for a short list or one thread), each starting at an index where
/// `starts(i)` holds (`starts(0)` is taken to hold): so a run of equal keys stays in
/// one part.
pub fn parts(len: usize, threads: usize, starts: impl Fn(usize) -> bool) -> Vec<Range<usize>> {
    if len == 0 {
        return Vec::new();
    }
    if threads <= 1 || len < PAR_MIN {
        return std::iter::once(0..len).collect();
    }
    let want = threads * PARTS_PER_THREAD;
    let mut out = Vec::with_capacity(want);
    let mut start = 0;
    for k in 1..want {
        let mut cut = (k * len / want).max(start + 1);
        while cut < len && !starts(cut) {
            cut += 1;
        }
        if cut >= len {
            break;
        }
        if cut > start {
            out.push(start..cut);
            start = cut;
        }
    }
    out.push(start..len);
    out
}

/// `job(part)` for each of `parts` on up to `threads` threads; the results in part order
/// (the readers' pool, `find::pool`, with counters of its own: parts are not reads).
pub fn each_part<T: Send>(threads: usize, parts: &[Range<usize>], job: impl Fn(Range<usize>) -> T + Sync) -> Vec<T> {
    each_index(threads, parts.len(), |k| job(parts[k].clone()))
}

/// `job(k)` for each `k` in `0..n` on up to `threads` threads, in order (as `each_part`).
fn each_index<T: Send>(threads: usize, n: usize, job: impl Fn(usize) -> T + Sync) -> Vec<T> {
    pool(threads, n, &Stats::default(), |_, k| job(k))
}

/// `job(items[part], part)` for each of `parts` (ascending, not overlapping) on up to
/// `threads` threads, each part's items its own to change; the results in part order.
pub fn each_part_mut<I: Send, T: Send>(
    threads: usize,
    items: &mut [I],
    parts: &[Range<usize>],
    job: impl Fn(&mut [I], Range<usize>) -> T + Sync,
) -> Vec<T> {
    let mut slices: Vec<Mutex<Option<&mut [I]>>> = Vec::with_capacity(parts.len());
    let (mut rest, mut at) = (items, 0);
    for p in parts {
        let (_, from_start) = std::mem::take(&mut rest).split_at_mut(p.start - at);
        let (mine, after) = from_start.split_at_mut(p.len());
        slices.push(Mutex::new(Some(mine)));
        rest = after;
        at = p.end;
    }
    each_index(threads, parts.len(), |k| {
        let slice = slices[k].lock().unwrap_or_else(|e| e.into_inner()).take().expect("each part is taken once");
        job(slice, parts[k].clone())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A repeatable stream of values (xorshift), `modulo` apart at most.
    fn values(n: usize, modulo: u64, seed: u64) -> Vec<u64> {
        let mut x = seed | 1;
        (0..n)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                x % modulo
            })
            .collect()
    }

    #[test]
    fn sort_gives_what_one_thread_gives_whatever_the_threads_and_the_keys() {
        for (n, modulo) in [(0, 10), (5, 10), (PAR_MIN - 1, 1000), (PAR_MIN, 3), (100_000, u64::MAX), (70_001, 1)] {
            for threads in [1, 2, 3, 8] {
                let mut v = values(n, modulo, n as u64 + threads as u64);
                let mut want = v.clone();
                want.sort_unstable();
                sort(&mut v, threads);
                assert!(v == want, "n {n}, modulo {modulo}, threads {threads}");
            }
        }
    }

    #[test]
    fn parts_cover_the_list_once_and_start_only_where_allowed() {
        let keys = values(200_000, 50, 7);
        let mut keys_sorted = keys.clone();
        keys_sorted.sort_unstable();
        for threads in [1, 2, 4] {
            let p = parts(keys_sorted.len(), threads, |i| keys_sorted[i] != keys_sorted[i - 1]);
            assert_eq!(p.first().map(|r| r.start), Some(0));
            assert_eq!(p.last().map(|r| r.end), Some(keys_sorted.len()));
            assert!(p.windows(2).all(|w| w[0].end == w[1].start && !w[0].is_empty()), "{p:?}");
            assert!(p.iter().skip(1).all(|r| keys_sorted[r.start] != keys_sorted[r.start - 1]), "{p:?}");
            assert_eq!(p.len() > 1, threads > 1, "{p:?}");
        }
        // Nowhere to cut: one part.
        assert_eq!(parts(100_000, 4, |_| false), std::iter::once(0..100_000).collect::<Vec<_>>());
        assert!(parts(0, 4, |_| true).is_empty());
    }

    #[test]
    fn each_part_mut_hands_each_part_its_own_items_and_keeps_the_order() {
        let mut items: Vec<u32> = (0..100_000).collect();
        let p = parts(items.len(), 3, |i| i % 1000 == 0);
        let sums = each_part_mut(3, &mut items, &p, |slice, range| {
            assert_eq!(slice.len(), range.len());
            assert_eq!(slice.first().copied(), Some(range.start as u32));
            slice.iter_mut().for_each(|x| *x += 1);
            range.start
        });
        assert_eq!(sums, p.iter().map(|r| r.start).collect::<Vec<_>>());
        assert!(items.iter().enumerate().all(|(i, &x)| x == i as u32 + 1));
        let lens = each_part(3, &p, |r| r.len());
        assert_eq!(lens.iter().sum::<usize>(), 100_000);
    }
}
