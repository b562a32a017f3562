//! From the scan's files to groups of identical files, reading as little as possible.
//!
//! # Stages
//!
//! 1. **Size**: files are sorted by (size, dev, ino); a size shared by fewer than two
//!    inodes ends the story for its files (nothing is read).
//! 2. **One inode, one file**: names of one inode (hard links) collapse to one candidate,
//!    the name whose path sorts first; the others are counted as `extra_links`.
//! 3. **Sample**: each candidate's first 4 KiB and last 4 KiB are hashed (files up to
//!    `WHOLE_BYTES` are read whole instead, which also gives their full hash). Candidates
//!    whose (size, sample) is unique are done.
//! 4. **Full**: the remaining candidates are hashed whole with BLAKE3 in 64 KiB reads.
//!    Equal (size, full hash) is a group. The full hash is 24 bytes of BLAKE3's output
//!    (192 bits: finding any two files with one hash takes ~2^96 work), so a user who owns
//!    some files cannot make dfdu call two different files duplicates.
//!
//! Stages 3 and 4 run on a fixed pool of `threads` workers pulling jobs (in size order)
//! from one atomic counter. Each read is checked against the scan once, after it: a file
//! whose size, mtime, ctime or identity differ is dropped as changed (a change before or
//! during the read moves its ctime, which cannot be set back; a file put in its place has
//! another identity). Reads stop at the scanned size, so a file that grew costs nothing.
//! A valid hash-file entry (`cache.rs`) stands in for either stage's read.

use super::cache::{Cache, Entry};
use super::open::{Handles, Refused};
use super::par;
use super::sink::{DirPaths, FileRec, Found};
use crate::meta::{Errno, Extent, Kind};
use crate::platform;
use crate::walk::threads::on_threads;
use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Mutex;

pub const DIGEST_BYTES: usize = 24;
pub type Digest = [u8; DIGEST_BYTES];

/// Files up to this size are read whole at the sample stage.
pub const WHOLE_BYTES: u64 = 64 * 1024;
/// Bytes hashed at each end of a larger file for its sample.
const SAMPLE_BYTES: u64 = 4096;
/// One read while hashing a whole file, 64 KiB: a few more syscalls than reads of 1 MiB
/// would take, for a lot less memory per reader (peak RSS is part of the benchmark).
const READ_BYTES: usize = 64 << 10;

/// A file still in the running, with what is known of its contents.
#[derive(Clone, Copy, Debug)]
pub struct Cand {
    pub rec: u32,
    pub sample: Option<u64>,
    pub full: Option<Digest>,
    pub dead: bool,
    /// What is known came from the hash file (`--verify` reads it again).
    pub cached: bool,
    /// This run read the file (and so learned something the hash file may not hold).
    pub fresh: bool,
}

/// A group of identical files.
pub struct Group {
    pub size: u64,
    /// Indices into `Found::files`, in path order.
    pub members: Vec<u32>,
    pub paths: Vec<Vec<u8>>,
    /// For each member, the index of the first member with the same extent layout (itself
    /// when none): members with equal values already share all their extents. `INLINE`
    /// for data kept inline in metadata, which cannot be shared.
    pub layout_of: Vec<usize>,
    /// For each member, its device: copies on different file systems can never come to
    /// share, so what is reclaimable is counted per device.
    pub devs: Vec<u64>,
}

/// `Group::layout_of` of a member whose data is inline.
pub const INLINE: usize = usize::MAX;

impl Group {
    /// Distinct extent layouts that could share: the copies that take space of their own.
    pub fn layouts(&self) -> usize {
        self.layout_of.iter().enumerate().filter(|(i, l)| *i == **l).count()
    }
    /// Every member already shares one set of extents.
    pub fn all_shared(&self) -> bool {
        self.layouts() == 1 && !self.layout_of.contains(&INLINE)
    }
    pub fn wasted(&self) -> u64 {
        self.size.saturating_mul(self.members.len() as u64 - 1)
    }
    /// The bytes dedupe could give back: on each device, every distinct layout but one.
    pub fn reclaimable(&self) -> u64 {
        let mut firsts: Vec<u64> =
            self.layout_of.iter().enumerate().filter(|(i, l)| *i == **l).map(|(i, _)| self.devs[i]).collect();
        firsts.sort_unstable();
        let distinct = firsts.len();
        firsts.dedup();
        self.size.saturating_mul((distinct - firsts.len()) as u64)
    }
}

/// Counters for the summary and the progress line.
#[derive(Default)]
pub struct Stats {
    /// Files read (in part or whole) at least once.
    pub files_read: AtomicU64,
    /// Reads of a file: a file sampled and then hashed whole is read twice.
    pub reads: AtomicU64,
    pub bytes_read: AtomicU64,
    pub jobs_done: AtomicU64,
    pub jobs_total: AtomicU64,
    pub cache_hits: AtomicU64,
    pub candidates: AtomicU64,
    pub extra_links: AtomicU64,
    pub changed: AtomicU64,
    /// `--verify`: files whose hash-file entry no longer matched their contents.
    pub stale: AtomicU64,
}

/// Why a file was dropped while being read.
enum Drop_ {
    Changed,
    Error(Errno),
}

/// Everything `find` learned.
pub struct Outcome {
    pub groups: Vec<Group>,
    /// Candidates with what was learned (for the hash file).
    pub cands: Vec<Cand>,
    pub errors: Vec<(Vec<u8>, Errno)>,
}

/// Opens `f` for reading through checked directory handles (`open.rs`): its type and
/// identity are checked before it is opened, its size and times by `recheck` after the
/// read (a file that changed before or while it was read has another ctime).
fn open_checked(handles: &Handles, f: &FileRec) -> Result<File, Drop_> {
    handles.open(f).map_err(|r| match r {
        Refused::Changed => Drop_::Changed,
        Refused::Os(e) => Drop_::Error(e),
    })
}

/// A read failed: `Changed` if the file is no longer the one the scan saw (a directory or
/// another file put in its place), else the error itself.
fn read_failed(file: &std::fs::File, f: &FileRec, e: std::io::Error) -> Drop_ {
    match recheck(file, f) {
        Ok(()) => io_err(e),
        Err(drop) => drop,
    }
}

/// The open file still has the size, times and identity the scan recorded.
pub fn same(check: &platform::FileCheck, f: &FileRec) -> bool {
    if check.kind != Kind::File || check.size != f.size || check.mtime_ns != f.mtime_ns {
        return false;
    }
    // Identity and ctime only where the OS's metadata carries them (not std on Windows).
    check.ino == 0 || (check.dev == f.dev && check.ino == f.ino && check.ctime_ns == f.ctime_ns)
}

fn digest(h: &blake3::Hasher) -> Digest {
    let mut out = [0u8; DIGEST_BYTES];
    h.finalize_xof().fill(&mut out);
    out
}

fn sample_of(full: &Digest) -> u64 {
    u64::from_le_bytes(full[..8].try_into().expect("8 bytes"))
}

fn read_full(file: &mut std::fs::File, buf: &mut [u8], want: usize) -> std::io::Result<usize> {
    let mut got = 0;
    while got < want {
        match file.read(&mut buf[got..want]) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(got)
}

fn io_err(e: std::io::Error) -> Drop_ {
    Drop_::Error(Errno(e.raw_os_error().unwrap_or(5)))
}

/// Stage 3 for one file: (sample, full hash when the file was read whole). Exactly the
/// bytes wanted are read; a file that grew or shrank has another size at `recheck`.
fn sample_file(mut file: File, f: &FileRec, buf: &mut Vec<u8>, stats: &Stats) -> Result<(u64, Option<Digest>), Drop_> {
    let result = if f.size <= WHOLE_BYTES {
        let want = f.size as usize;
        buf.resize(buf.len().max(want), 0);
        let got = read_full(&mut file, buf, want).map_err(|e| read_failed(&file, f, e))?;
        stats.bytes_read.fetch_add(got as u64, Ordering::Relaxed);
        if got != want {
            return Err(Drop_::Changed);
        }
        let mut h = blake3::Hasher::new();
        h.update(&buf[..want]);
        let full = digest(&h);
        (sample_of(&full), Some(full))
    } else {
        let n = SAMPLE_BYTES as usize;
        buf.resize(buf.len().max(2 * n), 0);
        let (head, tail) = buf[..2 * n].split_at_mut(n);
        let got = read_full(&mut file, head, n).map_err(|e| read_failed(&file, f, e))?;
        file.seek(SeekFrom::Start(f.size - SAMPLE_BYTES)).map_err(|e| read_failed(&file, f, e))?;
        let got2 = read_full(&mut file, tail, n).map_err(|e| read_failed(&file, f, e))?;
        stats.bytes_read.fetch_add((got + got2) as u64, Ordering::Relaxed);
        if got != n || got2 != n {
            return Err(Drop_::Changed);
        }
        let mut h = blake3::Hasher::new();
        h.update(head);
        h.update(tail);
        (sample_of(&digest(&h)), None)
    };
    stats.reads.fetch_add(1, Ordering::Relaxed);
    recheck(&file, f)?;
    Ok(result)
}

/// After a read: the file did not change while it was read.
fn recheck(file: &std::fs::File, f: &FileRec) -> Result<(), Drop_> {
    match platform::check_file(file) {
        Ok(c) if same(&c, f) => Ok(()),
        Ok(_) => Err(Drop_::Changed),
        Err(e) => Err(Drop_::Error(e)),
    }
}

/// Stage 4 for one file: BLAKE3 of all of it, in reads of up to `READ_BYTES`, stopping
/// at the scanned size (no read to see the end: a file that grew fails `recheck`).
fn hash_file(mut file: File, f: &FileRec, buf: &mut Vec<u8>, stats: &Stats) -> Result<Digest, Drop_> {
    buf.resize(buf.len().max(READ_BYTES), 0);
    let mut h = blake3::Hasher::new();
    let mut total = 0u64;
    while total < f.size {
        let want = (f.size - total).min(READ_BYTES as u64) as usize;
        let n = match file.read(&mut buf[..want]) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(read_failed(&file, f, e)),
        };
        total += n as u64;
        stats.bytes_read.fetch_add(n as u64, Ordering::Relaxed);
        h.update(&buf[..n]);
    }
    stats.reads.fetch_add(1, Ordering::Relaxed);
    if total != f.size {
        return Err(Drop_::Changed);
    }
    recheck(&file, f)?;
    Ok(digest(&h))
}

/// A worker hands its results over after this many jobs: the shared slots are locked
/// rarely, and no worker holds more than this many results of its own.
const FLUSH_JOBS: usize = 64;

/// Where workers hand their results: `(job index, result)`, called under the lock.
pub type Deliver<'a, T> = Mutex<&'a mut (dyn FnMut(usize, T) + Send)>;

fn deliver_all<T>(deliver: &Deliver<T>, mine: &mut Vec<(usize, T)>) {
    let mut put = deliver.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    for (i, t) in mine.drain(..) {
        (*put)(i, t);
    }
}

/// Runs `job(buffer, i)` for every `i` in `0..n` on `threads` workers and hands each
/// result to `deliver`. Jobs are taken one at a time (the largest files come last, and one
/// worker must not take a batch of them); results are handed over `FLUSH_JOBS` at a time,
/// so the lock is rare and no list of all results is ever built (the caller stores each
/// where it belongs: peak RSS is part of the benchmark). The calling thread is one of
/// the workers, and a worker that cannot be started is done without (`on_threads`).
pub fn pool_into<T: Send>(
    threads: usize,
    n: usize,
    stats: &Stats,
    job: impl Fn(&mut Vec<u8>, usize) -> T + Sync,
    deliver: &Deliver<T>,
) {
    let next = AtomicUsize::new(0);
    stats.jobs_total.fetch_add(n as u64, Ordering::Relaxed);
    on_threads(threads.clamp(1, n.max(1)), || {
        let mut buf = Vec::new();
        let mut mine = Vec::with_capacity(FLUSH_JOBS);
        loop {
            let i = next.fetch_add(1, Ordering::Relaxed);
            if i >= n {
                break;
            }
            mine.push((i, job(&mut buf, i)));
            stats.jobs_done.fetch_add(1, Ordering::Relaxed);
            if mine.len() >= FLUSH_JOBS {
                deliver_all(deliver, &mut mine);
            }
        }
        deliver_all(deliver, &mut mine);
    });
}

/// `pool_into` with the results in a list, in job order.
pub fn pool<T: Send>(threads: usize, n: usize, stats: &Stats, job: impl Fn(&mut Vec<u8>, usize) -> T + Sync) -> Vec<T> {
    let mut slots: Vec<Option<T>> = (0..n).map(|_| None).collect();
    {
        let mut put = |i: usize, t: T| slots[i] = Some(t);
        let deliver: Deliver<T> = Mutex::new(&mut put);
        pool_into(threads, n, stats, job, &deliver);
    }
    slots.into_iter().map(|t| t.expect("every job ran once")).collect()
}

/// Runs `job(buffer, rec)` for the files `recs`, handing `(index in recs, result)` to
/// `deliver`. Files on a rotational device are read by `SPINNING_READERS` readers per
/// device taking them in physical order (FIEMAP's first extent), so the disk's head
/// sweeps instead of seeking between far places; the rest go to the whole pool, at the
/// same time. A rotational device whose data is already in
/// the page cache (`probably_cached`) has no head to move: the whole pool reads it; and
/// when all the data is cached, the pool has no more threads than there are cores.
#[allow(clippy::too_many_arguments)] // the pool's settings, each used once
fn read_pool<T: Send>(
    found: &Found,
    handles: &Handles,
    recs: &[u32],
    probe_at: fn(&FileRec) -> u64,
    threads: usize,
    stats: &Stats,
    job: &(dyn Fn(&mut Vec<u8>, u32) -> T + Sync),
    deliver: &Deliver<T>,
) {
    let mut devs: Vec<u64> = recs.iter().map(|&r| found.files[r as usize].dev).collect();
    devs.sort_unstable();
    devs.dedup();
    let cached: Vec<bool> = devs.iter().map(|&d| probably_cached(found, handles, recs, d, probe_at)).collect();
    // Reading from the page cache is copying and hashing: more threads than cores only
    // add switches and buffers. Waiting on a device, more of them keep its queue full.
    let threads = match cached.iter().all(|&c| c) {
        true => threads.min(std::thread::available_parallelism().map_or(1, |n| n.get())),
        false => threads,
    };
    let spinning: Vec<u64> =
        devs.iter().zip(&cached).filter(|&(&d, &c)| !c && platform::rotational(d)).map(|(&d, _)| d).collect();
    if spinning.is_empty() {
        return pool_into(threads, recs.len(), stats, |buf, n| job(buf, recs[n]), deliver);
    }
    // Where each file on a spinning disk starts (metadata only, on the whole pool).
    let on_spinning: Vec<usize> =
        (0..recs.len()).filter(|&n| spinning.contains(&found.files[recs[n] as usize].dev)).collect();
    let starts = pool(threads, on_spinning.len(), stats, |_, i| {
        let file = handles.open(&found.files[recs[on_spinning[i]] as usize]).ok()?;
        platform::physical_start(&file)
    });
    let mut lanes: Vec<Vec<usize>> = vec![Vec::new(); spinning.len() + 1];
    let mut ordered: Vec<(u64, u64, usize)> = on_spinning
        .iter()
        .zip(starts)
        .map(|(&n, s)| (found.files[recs[n] as usize].dev, s.unwrap_or(u64::MAX), n))
        .collect();
    ordered.sort_unstable();
    for (dev, _, n) in ordered {
        lanes[spinning.iter().position(|&d| d == dev).expect("a spinning device")].push(n);
    }
    let rest = lanes.len() - 1;
    lanes[rest] = (0..recs.len()).filter(|n| !spinning.contains(&found.files[recs[*n] as usize].dev)).collect();
    // One thread per lane, each running the lane's own pool; lanes whose thread cannot
    // start are run by those that did, one after the other.
    let next_lane = AtomicUsize::new(0);
    on_threads(lanes.len(), || loop {
        let i = next_lane.fetch_add(1, Ordering::Relaxed);
        let Some(lane) = lanes.get(i) else { break };
        let n_threads = if i == rest { threads } else { threads.min(SPINNING_READERS) };
        // The lane's own indices, mapped back to indices in `recs`.
        let mut put = |k: usize, t: T| {
            let mut outer = deliver.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
            (*outer)(lane[k], t);
        };
        let mine: Deliver<T> = Mutex::new(&mut put);
        pool_into(n_threads, lane.len(), stats, |buf, k| job(buf, recs[lane[k]]), &mine);
    });
}

/// Readers per rotational device. They take the files in physical order, so the requests
/// in flight are neighbours the disk's queue can sort; one reader alone left a virtio disk
/// that reports itself rotational (its backing store is not) idle between requests: S cold
/// took 1.06 s with one, 0.72 with two, 0.53 with four and 0.42 with eight, jdupes 1.31.
const SPINNING_READERS: usize = 4;

/// Files probed per device by `probably_cached`.
const PROBES: usize = 16;

/// Whether the data the job will read on device `dev` is in the page cache: the byte at
/// `probe_at` of up to `PROBES` files spread over `recs` all are (`platform::cached`).
fn probably_cached(found: &Found, handles: &Handles, recs: &[u32], dev: u64, probe_at: fn(&FileRec) -> u64) -> bool {
    let mine: Vec<u32> = recs.iter().copied().filter(|&r| found.files[r as usize].dev == dev).collect();
    let step = mine.len().div_ceil(PROBES).max(1);
    mine.iter().step_by(step).all(|&r| {
        let f = &found.files[r as usize];
        handles.open(f).is_ok_and(|file| platform::cached(&file, probe_at(f)))
    })
}

/// What every reading stage shares: the scan, the handles to open its files by, the pool's
/// size, the counters and the flag a signal sets.
struct Reads<'a> {
    found: &'a Found,
    handles: &'a Handles<'a>,
    threads: usize,
    stats: &'a Stats,
    stop: &'a AtomicBool,
}

/// Runs the stages over `found`'s files; with `verify`, the members of groups that the
/// hash file vouched for are read again before the groups are final (`verify_cached`).
pub fn find(
    found: &Found,
    handles: &Handles,
    cache: &Cache,
    threads: usize,
    stats: &Stats,
    stop: &AtomicBool,
    verify: bool,
) -> Outcome {
    let reads = Reads { found, handles, threads, stats, stop };
    let cpu = par::cpu_threads(threads);
    let (mut cands, runs) = candidates(found, cpu, stats);
    stats.candidates.store(cands.len() as u64, Ordering::Relaxed);
    ask_cache(found, cache, &mut cands, stats, cpu);
    let mut errors = Vec::new();
    let sampled = sample_stage(&reads, &mut cands, &mut errors);
    full_stage(&reads, &mut cands, &runs, sampled, &mut errors);
    let mut groups = group_all(found, &mut cands, &runs, cpu);
    if verify && verify_cached(&reads, &mut cands, &groups, &mut errors) {
        groups = group_all(found, &mut cands, &runs, cpu);
    }
    Outcome { groups, cands, errors }
}

/// Stages 1 and 2 on up to `cpu` threads: the files sorted by size, then in parts of
/// whole sizes, each sorted by (dev, ino) within a size and cut to one candidate per
/// inode; the parts' lists joined in order.
fn candidates(found: &Found, cpu: usize, stats: &Stats) -> (Vec<Cand>, Vec<std::ops::Range<usize>>) {
    let files = &found.files;
    let size = |i: u32| files[i as usize].size;
    let mut order = by_size(found, cpu);
    let parts = par::parts(order.len(), cpu, |i| size(order[i]) != size(order[i - 1]));
    let pieces = par::each_part_mut(cpu, &mut order, &parts, |part, _| {
        for one_size in part.chunk_by_mut(|&a, &b| size(a) == size(b)) {
            if one_size.len() > 1 {
                one_size.sort_unstable_by_key(|&i| (files[i as usize].dev, files[i as usize].ino));
            }
        }
        one_inode_one_file(found, part, stats)
    });
    let mut cands = Vec::with_capacity(pieces.iter().map(|p| p.0.len()).sum());
    let mut runs = Vec::with_capacity(pieces.iter().map(|p| p.1.len()).sum());
    for (mut c, r) in pieces {
        let base = cands.len();
        runs.extend(r.into_iter().map(|r| base + r.start..base + r.end));
        cands.append(&mut c);
    }
    (cands, runs)
}

/// Stage 1: every file's index, sorted by size (then index), so that one size is one
/// run; (dev, ino) order within a size is the parts' work (`candidates`).
fn by_size(found: &Found, cpu: usize) -> Vec<u32> {
    // The key sorted beside the index, one u128 per file, (size, index): looking each
    // file up in `files` at every comparison missed the cache (a tenth of a rerun's own
    // time on 20,000 files).
    let files = &found.files;
    let mut keyed: Vec<u128> = files.iter().enumerate().map(|(i, f)| (u128::from(f.size) << 32) | i as u128).collect();
    par::sort(&mut keyed, cpu);
    keyed.into_iter().map(|k| k as u32).collect()
}

/// Stage 2: one candidate per inode of each size (its name that sorts first), and the
/// ranges of candidates of one size; a size with fewer than two inodes leaves none.
fn one_inode_one_file(found: &Found, order: &[u32], stats: &Stats) -> (Vec<Cand>, Vec<std::ops::Range<usize>>) {
    let files = &found.files;
    let path_of = |i: u32| {
        let mut p = Vec::new();
        found.file_path(&files[i as usize], &mut p);
        p
    };
    let key = |x: u32| (files[x as usize].dev, files[x as usize].ino);
    let mut cands: Vec<Cand> = Vec::new();
    let mut runs: Vec<std::ops::Range<usize>> = Vec::new();
    for one_size in order.chunk_by(|&a, &b| files[a as usize].size == files[b as usize].size) {
        let start = cands.len();
        for names in one_size.chunk_by(|&a, &b| key(a) == key(b)) {
            let rep = if names.len() == 1 {
                names[0]
            } else {
                stats.extra_links.fetch_add((names.len() - 1) as u64, Ordering::Relaxed);
                *names.iter().min_by_key(|&&x| path_of(x)).expect("a run is not empty")
            };
            cands.push(Cand { rec: rep, sample: None, full: None, dead: false, cached: false, fresh: false });
        }
        if cands.len() - start >= 2 {
            runs.push(start..cands.len());
        } else {
            cands.truncate(start);
        }
    }
    (cands, runs)
}

/// A valid hash-file entry gives a candidate its sample (and full hash when known), so
/// the stages after it read nothing for that file. Asked before any read is chosen.
fn ask_cache(found: &Found, cache: &Cache, cands: &mut [Cand], stats: &Stats, cpu: usize) {
    // Asked in (dev, ino) order, the hash file's own: one pass over its entries, cut
    // into parts of consecutive keys on up to `cpu` threads (each part a stretch of the
    // hash file: asked in parts of sizes, every look-up skipped over the other parts'
    // keys and missed the cache).
    let key = |c: &Cand| (found.files[c.rec as usize].dev, found.files[c.rec as usize].ino);
    let mut order: Vec<(u128, u32)> = cands
        .iter()
        .enumerate()
        .map(|(k, c)| ((u128::from(key(c).0) << 64) | u128::from(key(c).1), k as u32))
        .collect();
    par::sort(&mut order, cpu);
    let parts = par::parts(order.len(), cpu, |_| true);
    let found_in_parts = par::each_part(cpu, &parts, |part| {
        let mut entries = cache.in_order();
        let mut hits = Vec::new();
        for &(_, k) in &order[part] {
            let f = &found.files[cands[k as usize].rec as usize];
            if let Some(e) = entries.lookup(f.dev, f.ino, f.size, f.mtime_ns, f.ctime_ns) {
                hits.push((k, e.sample, e.full));
            }
        }
        hits
    });
    let mut n = 0;
    for (k, sample, full) in found_in_parts.into_iter().flatten() {
        let c = &mut cands[k as usize];
        c.sample = Some(sample);
        c.full = full;
        c.cached = true;
        n += 1;
    }
    stats.cache_hits.fetch_add(n, Ordering::Relaxed);
}

/// Stage 3: the candidates without a sample are sampled (small files read whole). Returns
/// the files read here, sorted, so the full stage counts a file it reads first only once.
fn sample_stage(reads: &Reads, cands: &mut [Cand], errors: &mut Vec<(Vec<u8>, Errno)>) -> Vec<u32> {
    let Reads { found, handles, threads, stats, stop } = *reads;
    let todo: Vec<usize> = (0..cands.len()).filter(|&k| cands[k].sample.is_none()).collect();
    let recs: Vec<u32> = todo.iter().map(|&k| cands[k].rec).collect();
    {
        let mut put = |n: usize, r: Result<(u64, Option<Digest>), Drop_>| {
            stats.files_read.fetch_add(u64::from(r.is_ok()), Ordering::Relaxed);
            apply(&mut cands[todo[n]], r.map(|(s, full)| (Some(s), full)), found, errors, stats);
        };
        let deliver: Deliver<_> = Mutex::new(&mut put);
        let job = |buf: &mut Vec<u8>, rec: u32| {
            if stop.load(Ordering::Relaxed) {
                return Err(Drop_::Error(Errno(4)));
            }
            let f = &found.files[rec as usize];
            sample_file(open_checked(handles, f)?, f, buf, stats)
        };
        read_pool(found, handles, &recs, |_| 0, threads, stats, &job, &deliver);
    }
    let mut sampled = recs;
    sampled.sort_unstable();
    sampled
}

/// The candidates stage 4 reads: members of a (size, sample) run of two or more that lack
/// a full hash. Sorts each run's candidates by (dead, sample).
fn need_full(cands: &mut [Cand], runs: &[std::ops::Range<usize>]) -> Vec<usize> {
    let mut todo = Vec::new();
    for run in runs {
        let slice = &mut cands[run.clone()];
        slice.sort_unstable_by_key(|c| (c.dead, c.sample));
        let mut a = 0;
        while a < slice.len() && !slice[a].dead {
            let mut b = a + 1;
            while b < slice.len() && !slice[b].dead && slice[b].sample == slice[a].sample {
                b += 1;
            }
            if b - a >= 2 {
                todo.extend((a..b).filter(|&x| slice[x].full.is_none()).map(|x| run.start + x));
            }
            a = b;
        }
    }
    todo
}

/// Stage 4: `need_full`'s candidates hashed whole. `sampled` (sorted) holds the files
/// stage 3 read: a file whose sample came from the hash file is read here for the first
/// time. The probe looks at the middle: stage 3 read the ends, so they are cached.
fn full_stage(
    reads: &Reads,
    cands: &mut [Cand],
    runs: &[std::ops::Range<usize>],
    sampled: Vec<u32>,
    errors: &mut Vec<(Vec<u8>, Errno)>,
) {
    let Reads { found, handles, threads, stats, stop } = *reads;
    let todo = need_full(cands, runs);
    let recs: Vec<u32> = todo.iter().map(|&k| cands[k].rec).collect();
    let mut put = |n: usize, r: Result<Digest, Drop_>| {
        let first = r.is_ok() && sampled.binary_search(&cands[todo[n]].rec).is_err();
        stats.files_read.fetch_add(u64::from(first), Ordering::Relaxed);
        let sample = cands[todo[n]].sample;
        apply(&mut cands[todo[n]], r.map(|d| (sample, Some(d))), found, errors, stats);
    };
    let deliver: Deliver<_> = Mutex::new(&mut put);
    let job = |buf: &mut Vec<u8>, rec: u32| {
        if stop.load(Ordering::Relaxed) {
            return Err(Drop_::Error(Errno(4)));
        }
        let f = &found.files[rec as usize];
        hash_file(open_checked(handles, f)?, f, buf, stats)
    };
    read_pool(found, handles, &recs, |f| f.size / 2, threads, stats, &job, &deliver);
}

/// `group_runs` over parts of whole runs on up to `cpu` threads, the groups in run order.
fn group_all(found: &Found, cands: &mut [Cand], runs: &[std::ops::Range<usize>], cpu: usize) -> Vec<Group> {
    // Parts of `cands` cut only where a run starts hold whole runs (runs never overlap).
    let parts = par::parts(cands.len(), cpu, |i| runs.binary_search_by_key(&i, |r| r.start).is_ok());
    let pieces = par::each_part_mut(cpu, cands, &parts, |part, range| {
        let first = runs.partition_point(|r| r.start < range.start);
        let last = runs.partition_point(|r| r.start < range.end);
        let mine: Vec<_> = runs[first..last].iter().map(|r| r.start - range.start..r.end - range.start).collect();
        group_runs(found, part, &mine)
    });
    pieces.into_iter().flatten().collect()
}

/// Groups: candidates of one run with equal full hashes, members in path order.
fn group_runs(found: &Found, cands: &mut [Cand], runs: &[std::ops::Range<usize>]) -> Vec<Group> {
    let files = &found.files;
    let mut dirs = DirPaths::default();
    let mut path_of = |i: u32| {
        let mut p = Vec::new();
        found.file_path_with(&mut dirs, &files[i as usize], &mut p);
        p
    };
    let mut groups = Vec::new();
    for run in runs {
        let slice = &mut cands[run.clone()];
        // Compared by the hash's first 8 bytes first (big-endian: the same order as the
        // bytes'), the rest only on a tie: comparing every key's 24 bytes was a fifth of
        // a rerun's work after its scan.
        let key = |c: &Cand| {
            (c.dead || c.full.is_none(), c.full.map_or(0, |d| u64::from_be_bytes(d[..8].try_into().expect("8 bytes"))))
        };
        slice.sort_unstable_by(|x, y| key(x).cmp(&key(y)).then_with(|| x.full.cmp(&y.full)));
        let mut a = 0;
        while a < slice.len() && !slice[a].dead && slice[a].full.is_some() {
            let mut b = a + 1;
            while b < slice.len() && !slice[b].dead && slice[b].full == slice[a].full {
                b += 1;
            }
            if b - a >= 2 {
                let mut members: Vec<(Vec<u8>, u32)> = slice[a..b].iter().map(|c| (path_of(c.rec), c.rec)).collect();
                members.sort();
                let n = members.len();
                groups.push(Group {
                    size: files[slice[a].rec as usize].size,
                    devs: members.iter().map(|m| files[m.1 as usize].dev).collect(),
                    members: members.iter().map(|m| m.1).collect(),
                    paths: members.into_iter().map(|m| m.0).collect(),
                    layout_of: (0..n).collect(),
                });
            }
            a = b;
        }
    }
    groups
}

/// `--verify`: the members of `groups` whose hashes came from the hash file are read
/// again (sample and whole file), since what the cache cannot see — a write through a
/// shared mapping that moves neither mtime nor ctime — would otherwise be reported as a
/// duplicate. True when a hash changed (or a file could not be read), so the groups must
/// be formed again.
fn verify_cached(reads: &Reads, cands: &mut [Cand], groups: &[Group], errors: &mut Vec<(Vec<u8>, Errno)>) -> bool {
    let Reads { found, handles, threads, stats, stop } = *reads;
    let in_groups: std::collections::HashSet<u32> = groups.iter().flat_map(|g| g.members.iter().copied()).collect();
    let todo: Vec<usize> = (0..cands.len()).filter(|&k| cands[k].cached && in_groups.contains(&cands[k].rec)).collect();
    let recs: Vec<u32> = todo.iter().map(|&k| cands[k].rec).collect();
    let mut regroup = false;
    let mut put = |n: usize, r: Result<(u64, Option<Digest>), Drop_>| {
        let c = &mut cands[todo[n]];
        let before = c.full;
        c.cached = false;
        regroup |= r.as_ref().map_or(true, |&(_, full)| full != before);
        if r.as_ref().is_ok_and(|&(_, full)| full != before) {
            stats.stale.fetch_add(1, Ordering::Relaxed);
        }
        apply(c, r.map(|(s, full)| (Some(s), full)), found, errors, stats);
    };
    let deliver: Deliver<_> = Mutex::new(&mut put);
    let job = |buf: &mut Vec<u8>, rec: u32| {
        if stop.load(Ordering::Relaxed) {
            return Err(Drop_::Error(Errno(4)));
        }
        let f = &found.files[rec as usize];
        let (sample, full) = sample_file(open_checked(handles, f)?, f, buf, stats)?;
        match full {
            Some(full) => Ok((sample, Some(full))),
            None => hash_file(open_checked(handles, f)?, f, buf, stats).map(|full| (sample, Some(full))),
        }
    };
    read_pool(found, handles, &recs, |_| 0, threads, stats, &job, &deliver);
    regroup
}

fn apply(
    c: &mut Cand,
    r: Result<(Option<u64>, Option<Digest>), Drop_>,
    found: &Found,
    errors: &mut Vec<(Vec<u8>, Errno)>,
    stats: &Stats,
) {
    match r {
        Ok((s, full)) => {
            c.sample = s;
            c.full = full;
            c.fresh = true;
        }
        Err(Drop_::Changed) => {
            c.dead = true;
            stats.changed.fetch_add(1, Ordering::Relaxed);
        }
        Err(Drop_::Error(e)) => {
            c.dead = true;
            let mut p = Vec::new();
            found.file_path(&found.files[c.rec as usize], &mut p);
            errors.push((p, e));
        }
    }
}

/// Fills each group's `layout_of` from the members' extent maps (Linux FIEMAP; elsewhere
/// every member keeps its own layout). Members whose maps are equal and not empty share
/// all their extents already.
pub fn layouts(found: &Found, handles: &Handles, groups: &mut [Group], threads: usize, stats: &Stats) {
    // File systems known not to share extents (ext4, tmpfs ...) are asked nothing more:
    // one open per device decides.
    let mut no_sharing: Vec<u64> = Vec::new();
    let mut asked: Vec<u64> = Vec::new();
    for g in groups.iter() {
        let dev = found.files[g.members[0] as usize].dev;
        if asked.contains(&dev) {
            continue;
        }
        asked.push(dev);
        let opened = handles.open(&found.files[g.members[0] as usize]);
        if opened.is_ok_and(|f| platform::extents_never_shared(&f)) {
            no_sharing.push(dev);
        }
    }
    // (group, member) as two u32: 8 bytes a member, not 16 (T: a million of them).
    let jobs: Vec<(u32, u32)> = groups
        .iter()
        .enumerate()
        .flat_map(|(g, gr)| (0..gr.members.len() as u32).map(move |m| (g as u32, m)))
        .filter(|&(g, m)| !no_sharing.contains(&found.files[groups[g as usize].members[m as usize] as usize].dev))
        .collect();
    let mut per_group: Vec<Vec<platform::Layout>> =
        groups.iter().map(|g| vec![platform::Layout::Unknown; g.members.len()]).collect();
    {
        // Each map goes straight to its member's slot: no list of all maps beside them.
        let mut put = |n: usize, layout: platform::Layout| {
            let (g, m) = jobs[n];
            per_group[g as usize][m as usize] = layout;
        };
        let deliver: Deliver<platform::Layout> = Mutex::new(&mut put);
        pool_into(
            threads,
            jobs.len(),
            stats,
            |_, n| {
                let (g, m) = jobs[n];
                match handles.open(&found.files[groups[g as usize].members[m as usize] as usize]) {
                    Ok(file) => platform::layout(&file),
                    Err(_) => platform::Layout::Unknown,
                }
            },
            &deliver,
        );
    }
    for (g, mine) in groups.iter_mut().zip(per_group) {
        first_layouts(&mine, &g.devs, &mut g.layout_of);
    }
}

/// Each member's layout: the first member whose extents it shares all of (`same_extents`),
/// itself when none, `INLINE` for inline data. The first member of each map is found by
/// sorting the members by (map, device), not by searching (searching every earlier member
/// took 100 s of CPU for one group of 200,000 copies that shared nothing yet) nor by hash
/// maps keyed by map (92 bytes a member; the sort needs 4).
fn first_layouts(mine: &[platform::Layout], devs: &[u64], layout_of: &mut [usize]) {
    let extents = |m: u32| match &mine[m as usize] {
        platform::Layout::Extents(e) => Some(e.as_slice()),
        _ => None,
    };
    for (m, layout) in mine.iter().enumerate() {
        layout_of[m] = match layout {
            platform::Layout::Inline => INLINE,
            _ => m,
        };
    }
    let mut order: Vec<u32> = (0..mine.len() as u32).filter(|&m| extents(m).is_some()).collect();
    let fields = |e: &Extent| (e.logical, e.physical, e.length, e.flags);
    let map_cmp = |a: u32, b: u32| {
        let (x, y) = (extents(a).unwrap_or_default(), extents(b).unwrap_or_default());
        x.iter().map(fields).cmp(y.iter().map(fields))
    };
    order.sort_unstable_by(|&a, &b| map_cmp(a, b).then(devs[a as usize].cmp(&devs[b as usize])).then(a.cmp(&b)));
    // Equal maps on one device; equal maps wholly flagged shared, on any device.
    for same_map in order.chunk_by(|&a, &b| extents(a) == extents(b)) {
        let e = extents(same_map[0]).expect("only members with extents are sorted");
        let first_any = *same_map.iter().min().expect("a run is not empty") as usize;
        // Another device's map counts only when every extent is flagged shared.
        let across = e.iter().all(Extent::is_shared);
        for same_dev in same_map.chunk_by(|&a, &b| devs[a as usize] == devs[b as usize]) {
            let first_dev = same_dev[0] as usize;
            for &m in same_dev {
                layout_of[m as usize] = if across { first_any.min(first_dev) } else { first_dev };
            }
        }
    }
}

/// Whether a member with extents `e` on device `dev` shares all of them with one whose
/// layout is `other` on `other_dev`. FIEMAP's addresses are per file system: on one device
/// equal maps are the same blocks. Two devices may be two file systems whose equal
/// addresses are a coincidence (two fresh images that got the same file first), or two
/// subvolumes of one btrfs (a snapshot's copy): only there does the kernel flag every
/// extent as shared, so across devices that flag must be on every extent too. The rule as
/// one comparison; `first_layouts` applies it by lookup, and its test holds it to this.
#[cfg(test)]
fn same_extents(other: &platform::Layout, other_dev: u64, e: &[Extent], dev: u64) -> bool {
    match other {
        platform::Layout::Extents(o) => o == e && (other_dev == dev || e.iter().all(Extent::is_shared)),
        _ => false,
    }
}

/// The hash-file entries for what this run learned.
pub fn cache_entries(found: &Found, cands: &[Cand]) -> Vec<Entry> {
    cands
        .iter()
        .filter(|c| !c.dead)
        .filter_map(|c| {
            let f = &found.files[c.rec as usize];
            Some(Entry {
                dev: f.dev,
                ino: f.ino,
                size: f.size,
                mtime_ns: f.mtime_ns,
                ctime_ns: f.ctime_ns,
                sample: c.sample?,
                full: c.full,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// 50,000 files in one directory (more than `par` splits), 997 sizes, every 50th a
    /// second name of the file before it, every file's sample and hash in the hash file
    /// (three contents per size): what the stages make of it on three threads is what
    /// they make of it on one, candidates, runs and groups alike.
    #[test]
    fn the_stages_give_on_many_threads_what_they_give_on_one() {
        let mut found = Found::default();
        let dir = found.add_dir(super::super::sink::NO_DIR, b"/r", (1, 2)).unwrap();
        let mut entries = Vec::new();
        for i in 0..50_000u64 {
            let ino = if i % 50 == 49 { 1000 + i - 1 } else { 1000 + i };
            let size = if i % 50 == 49 { 1 + (i - 1) % 997 * 10 } else { 1 + i % 997 * 10 };
            let name = format!("f{:05}", (i * 7919) % 50_000);
            let name_off = found.names.len() as u64;
            found.names.extend_from_slice(name.as_bytes());
            let times = (ino as i64, ino as i64 + 1);
            found.files.push(FileRec {
                size,
                dev: 5,
                ino,
                mtime_ns: times.0,
                ctime_ns: times.1,
                name_off,
                name_len: name.len() as u32,
                dir,
            });
            if i % 50 != 49 {
                let mut full = [0u8; DIGEST_BYTES];
                full[..8].copy_from_slice(&(size * 3 + ino % 3).to_be_bytes());
                full[20] = (ino % 7) as u8 & u8::from(ino % 3 == 1);
                entries.push(Entry {
                    dev: 5,
                    ino,
                    size,
                    mtime_ns: times.0,
                    ctime_ns: times.1,
                    sample: size,
                    full: Some(full),
                });
            }
        }
        let cache = Cache::of_entries(entries);
        let stats = Stats::default();
        let run = |cpu| {
            let (mut cands, runs) = candidates(&found, cpu, &stats);
            ask_cache(&found, &cache, &mut cands, &stats, cpu);
            let groups = group_all(&found, &mut cands, &runs, cpu);
            let cands: Vec<_> = cands.iter().map(|c| (c.rec, c.sample, c.full, c.cached)).collect();
            let groups: Vec<_> = groups.into_iter().map(|g| (g.size, g.members, g.paths, g.devs)).collect();
            (cands, runs, groups)
        };
        let one = run(1);
        assert!(one.0.iter().all(|c| c.3), "every candidate from the hash file");
        assert!(one.2.len() > 2000 && one.2.iter().any(|g| g.1.len() > 10), "{} groups", one.2.len());
        assert!(one == run(3), "three threads differ from one");
        assert!(one == run(2), "two threads differ from one");
    }

    fn group(size: u64, layout_of: Vec<usize>) -> Group {
        let n = layout_of.len();
        Group { size, members: (0..n as u32).collect(), paths: vec![Vec::new(); n], layout_of, devs: vec![7; n] }
    }

    #[test]
    fn wasted_and_reclaimable_count_copies_beyond_the_first() {
        let g = group(1000, vec![0, 1, 2]);
        assert_eq!((g.wasted(), g.reclaimable(), g.all_shared()), (2000, 2000, false));
        // Members 1 and 2 already share one set of extents: one copy less to give back.
        let g = group(1000, vec![0, 1, 1]);
        assert_eq!((g.wasted(), g.reclaimable(), g.all_shared()), (2000, 1000, false));
        let g = group(1000, vec![0, 0, 0]);
        assert_eq!((g.wasted(), g.reclaimable(), g.all_shared()), (2000, 0, true));
        let g = group(1000, vec![0, INLINE]);
        assert!(!g.all_shared());
        // Copies on two file systems never come to share: one reclaimable copy per device
        // with two layouts, none for a device with one.
        let g = Group { devs: vec![1, 1, 2, 3, 3], ..group(1000, vec![0, 1, 2, 3, 3]) };
        assert_eq!((g.wasted(), g.reclaimable(), g.all_shared()), (4000, 1000, false));
        let g = Group { devs: vec![1, 2], ..group(1000, vec![0, 1]) };
        assert_eq!(g.reclaimable(), 0);
    }

    /// Equal maps on one device are one set of blocks; across devices only when every
    /// extent is flagged shared (subvolumes of one btrfs), never by coincidence of addresses.
    #[test]
    fn equal_extent_maps_across_devices_need_the_shared_flag() {
        let ext = |shared| Extent {
            logical: 0,
            physical: 98_304,
            length: 200_704,
            flags: if shared { Extent::SHARED } else { 0 },
        };
        let plain = platform::Layout::Extents(vec![ext(false)]);
        let flagged = platform::Layout::Extents(vec![ext(true)]);
        assert!(same_extents(&plain, 5, &[ext(false)], 5));
        assert!(!same_extents(&plain, 5, &[ext(false)], 6));
        assert!(same_extents(&flagged, 5, &[ext(true)], 6));
        assert!(!same_extents(&flagged, 5, &[ext(false)], 5));
        assert!(!same_extents(&platform::Layout::Unknown, 5, &[ext(true)], 5));
    }

    /// `first_layouts` by lookup gives what searching every earlier member with
    /// `same_extents` gives: on members over two devices, maps drawn from a few (some
    /// wholly shared, some not, one shared in part), inline and unknown ones among them.
    #[test]
    fn first_layouts_is_the_first_earlier_member_with_the_same_extents() {
        let ext = |physical: u64, shared: bool| Extent {
            logical: 0,
            physical,
            length: 4096,
            flags: if shared { Extent::SHARED } else { 0 },
        };
        let maps = [
            platform::Layout::Extents(vec![ext(1 << 20, false)]),
            platform::Layout::Extents(vec![ext(1 << 20, true)]),
            platform::Layout::Extents(vec![ext(2 << 20, true), ext(3 << 20, false)]),
            platform::Layout::Extents(vec![ext(4 << 20, true), ext(5 << 20, true)]),
            platform::Layout::Inline,
            platform::Layout::Unknown,
        ];
        let mut seed = 0x9e37_79b9_7f4a_7c15u64;
        for n in [0, 1, 2, 7, 40, 300] {
            let (mut mine, mut devs) = (Vec::new(), Vec::new());
            for _ in 0..n {
                seed = seed.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
                mine.push(maps[(seed >> 33) as usize % maps.len()].clone());
                devs.push(5 + (seed >> 40) % 2);
            }
            let want: Vec<usize> = (0..n)
                .map(|m| match &mine[m] {
                    platform::Layout::Extents(e) => {
                        (0..m).find(|&p| same_extents(&mine[p], devs[p], e, devs[m])).unwrap_or(m)
                    }
                    platform::Layout::Inline => INLINE,
                    platform::Layout::Unknown => m,
                })
                .collect();
            let mut got = vec![0; n];
            first_layouts(&mine, &devs, &mut got);
            assert_eq!(got, want, "{n} members");
        }
    }

    #[test]
    fn same_needs_size_times_and_identity_where_the_os_has_them() {
        let f = FileRec { size: 10, dev: 1, ino: 2, mtime_ns: 3, ctime_ns: 4, name_off: 0, name_len: 0, dir: 0 };
        let c = platform::FileCheck {
            kind: Kind::File,
            dev: 1,
            ino: 2,
            size: 10,
            mtime_ns: 3,
            ctime_ns: 4,
            pinned: false,
            blocks_512: 0,
        };
        assert!(same(&c, &f));
        assert!(!same(&platform::FileCheck { ctime_ns: 5, ..c }, &f));
        assert!(!same(&platform::FileCheck { dev: 9, ..c }, &f));
        assert!(!same(&platform::FileCheck { size: 11, ..c }, &f));
        assert!(!same(&platform::FileCheck { kind: Kind::Dir, ..c }, &f));
        // No identity (std on Windows): size and mtime decide.
        assert!(same(&platform::FileCheck { dev: 0, ino: 0, ctime_ns: 0, ..c }, &f));
    }

    fn scratch(name: &str) -> std::path::PathBuf {
        let dir = std::env::temp_dir().join(format!("dfdu-dupes-find-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    /// The record the scan would have made of `path` now.
    fn rec_of(path: &std::path::Path) -> FileRec {
        let f = std::fs::File::open(path).unwrap();
        let c = platform::check_file(&f).unwrap();
        FileRec {
            size: c.size,
            dev: c.dev,
            ino: c.ino,
            mtime_ns: c.mtime_ns,
            ctime_ns: c.ctime_ns,
            name_off: 0,
            name_len: 0,
            dir: 0,
        }
    }

    fn pattern(len: usize, seed: u8) -> Vec<u8> {
        (0..len).map(|i| (i as u8).wrapping_mul(31).wrapping_add(seed) ^ (i >> 8) as u8).collect()
    }

    /// A file that is not what the scan recorded (other ctime, size or identity) is
    /// dropped as changed by both stages, after its read.
    #[test]
    fn dupes_reads_drop_a_file_that_changed_since_the_scan() {
        let dir = scratch("changed");
        for (name, len) in [("small", 3000usize), ("big", 100_000)] {
            let p = dir.join(name);
            std::fs::write(&p, pattern(len, 3)).unwrap();
            let now = rec_of(&p);
            let stats = Stats::default();
            let mut buf = Vec::new();
            let path = || std::fs::File::open(&p).unwrap();
            assert!(sample_file(path(), &now, &mut buf, &stats).is_ok());
            assert!(hash_file(path(), &now, &mut buf, &stats).is_ok());
            for then in [
                FileRec { ctime_ns: now.ctime_ns - 1, ..now },
                FileRec { ino: now.ino + 1, ..now },
                FileRec { mtime_ns: now.mtime_ns + 1, ..now },
            ] {
                assert!(matches!(sample_file(path(), &then, &mut buf, &stats), Err(Drop_::Changed)), "{name} sample");
                assert!(matches!(hash_file(path(), &then, &mut buf, &stats), Err(Drop_::Changed)), "{name} full");
            }
            // Shorter than recorded: the read comes up short.
            let longer = FileRec { size: now.size + 10, ..now };
            assert!(matches!(sample_file(path(), &longer, &mut buf, &stats), Err(Drop_::Changed)), "{name}");
            assert!(matches!(hash_file(path(), &longer, &mut buf, &stats), Err(Drop_::Changed)), "{name}");
        }
        let _ = std::fs::remove_dir_all(&dir);
    }
}
