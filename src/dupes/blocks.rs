//! `dfdu dedupe --blocks`: after whole-file groups, ranges of equal content between files
//! that differ as a whole, and inside one file, come to share extents — through
//! `FIDEDUPERANGE` only, with every rule of whole-file dedupe (`dedupe.rs`).
//!
//! # How a match is found
//!
//! 1. **Candidates**: every scanned file of at least one block, one name per inode, one
//!    member per whole-file group and device (the others share its extents by now or were
//!    left out for a reason that holds here too), on a file system that can share extents (ext4
//!    and the like are known before anything is read). Files that changed since the scan
//!    and active swap files are left out; immutable, append-only and read-only-snapshot
//!    files may only be sources.
//! 2. **Fingerprints**: each candidate is read once, in order, through the checked
//!    handles of `open.rs`; every whole aligned block (the file system's block size, or
//!    `--block-size`) gets 8 bytes of BLAKE3. A block of zeros gets none: it is a hole or
//!    preallocated space more often than data, and sharing it gives nothing back. The
//!    unaligned tail of a file is not fingerprinted. A file whose size or times moved
//!    while it was read is dropped as changed.
//! 3. **Links**: fingerprints are sorted by file system, then value; in each set of
//!    equal ones on one file system the first (a source-only file first, then path
//!    order, then offset) is the block every other one comes to share (`FIDEDUPERANGE`
//!    never crosses file systems; the subvolumes of one btrfs, each a device of its
//!    own, are one file system here: `platform::fs_uuid`). Because every copy of a content points at the same first block, a
//!    destination's consecutive blocks whose sources are consecutive too form one run,
//!    grown block by block; each run is one range (at most 1 GiB a call). A run inside one
//!    file never overlaps its source (its source comes first and is no destination).
//! 4. **Already shared**: the extent maps (FIEMAP) of a run's two files say which of its
//!    bytes already sit at the same disk address; only the rest is submitted, so a rerun
//!    over deduplicated files makes no call.
//!
//! Data shifted by less than a block (an insertion of a few bytes) is not looked for:
//! `FIDEDUPERANGE` wants ranges that start on a block boundary of both files, so no extent
//! file system can share such data, whatever finds it; blocks are aligned on both sides.
//! A copy shifted by whole blocks (a page) is found, as are runs moved by whole blocks and
//! repeats inside one file (tests: `dupes_blocks_lists_the_duplicate_ranges_on_any_file_system`
//! and the shape-V ones of `tests/dedupe_blocks.rs`).
//!
//! `dfdu dupes --blocks` (`Options::look_only`) runs steps 1–3 on any file system, with
//! every file on one file system for the links, and lists the runs instead of calling.
//!
//! # Memory
//!
//! 8 bytes per block while a file's fingerprints are kept, 16 per block in the sorted
//! index (`Print`), 16 per duplicate block in the links (`Link`), 20 per run; about 24
//! bytes per block hashed at the peak: 6 MiB for 1 GiB at 4 KiB blocks, 192 KiB at
//! 128 KiB. At most `MAX_BLOCKS` blocks a run: more asks for a larger `--block-size`.
//!
//! # Calls
//!
//! Runs are taken in (destination, offset) order. Right before every call both files
//! are checked again (size, mtime, ctime, identity) and a signal stops the run. A range
//! the kernel refuses ("data differs") makes both files' hash-file entries stale. The
//! first call on a file system that cannot share extents, before anything was shared,
//! stops the run with one message, as whole-file dedupe does.
//!
//! On btrfs, which frees an extent only when no part of it is referenced, a destination's
//! partly matched extents first have their unmatched rest copied and moved onto the copy
//! (`remainder.rs`: when, and how), so that the old extents are freed.

use super::cache::Blocks;
use super::dedupe::{FsKey, Run, Skip, CALL_BYTES, EOPNOTSUPP};
use super::find::{same, Group};
use super::open::Refused;
use super::remainder;
use crate::meta::{Errno, Extent};
use crate::platform::{self, DedupeStatus, Layout};
use crate::text::quote::quotef;
use std::collections::{HashMap, HashSet};
use std::fs::File;
use std::io::{self, Read, Write};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Blocks fingerprinted in one run at most (24 bytes each at the peak: 6 GiB).
pub const MAX_BLOCKS: u64 = 1 << 28;
/// `--block-size` bounds: a page, and a size that still finds something.
pub const MIN_BLOCK_BYTES: u64 = 4096;
pub const MAX_BLOCK_BYTES: u64 = 16 << 20;
/// Bytes one read asks for (a whole number of blocks up to this).
const READ_BYTES: u64 = 1 << 20;
/// Open files kept for sources: a destination's runs usually come from a few files.
const SOURCES_KEPT: usize = 64;

/// What block mode did (or, in a dry run, would do).
#[derive(Default, Debug)]
pub struct Report {
    pub block_bytes: u64,
    pub files_read: u64,
    pub bytes_read: u64,
    /// Files whose fingerprints the hash file held (nothing read).
    pub files_cached: u64,
    /// Blocks that are a copy of an earlier one (the sum of the runs).
    pub dup_blocks: u64,
    pub runs: u64,
    /// Of the runs' bytes, those already at their source's disk address (FIEMAP).
    pub bytes_shared: u64,
    /// The runs' ranges.
    pub shared: Tally,
    /// The remainder copies (btrfs, `remainder.rs`): extents whose rest was copied, and
    /// the calls that moved the destinations' rests onto the copies.
    pub copy: Tally,
    pub extents_copied: u64,
    /// On file systems that free an extent only whole (btrfs): the matched bytes of the
    /// extents that lose every reference (copied, or matched whole), which is what they
    /// give back once every range is shared.
    pub bytes_freeable: u64,
    /// More blocks than `MAX_BLOCKS`: nothing was read.
    pub too_many_blocks: bool,
    /// With a hash file: the fingerprints of the files read, to be saved in it.
    pub entries: Vec<Blocks>,
    /// `dupes --blocks` (`Options::look_only`): the runs, listed, and of their bytes
    /// those whose source is in the same file; the files that could not be read, and
    /// whether something failed.
    pub listed: Vec<Listed>,
    pub bytes_inside: u64,
    pub messages: Vec<String>,
    pub failed: bool,
}

/// One run as `dupes --blocks` lists it: `length` bytes of `path` at `offset` equal to
/// those of `source` at `source_offset`.
#[derive(Debug, PartialEq, Eq)]
pub struct Listed {
    pub path: Vec<u8>,
    pub offset: u64,
    pub length: u64,
    pub source: Vec<u8>,
    pub source_offset: u64,
}

impl Report {
    pub fn text(&self, cmd: &str, dry_run: bool) -> String {
        if self.block_bytes == 0 {
            return format!("{cmd}: blocks: no file of a block or more to read\n");
        }
        if self.too_many_blocks {
            return format!(
                "{cmd}: blocks: more than {MAX_BLOCKS} blocks of {} bytes: nothing done (a larger --block-size)\n",
                self.block_bytes
            );
        }
        let found = format!(
            "{cmd}: blocks of {} bytes: read {}, {} bytes, {} from the hash file; {} bytes in {} (duplicate blocks), \
             {} bytes already shared",
            self.block_bytes,
            super::count(self.files_read, "file", "files"),
            self.bytes_read,
            self.files_cached,
            self.dup_blocks.saturating_mul(self.block_bytes),
            super::count(self.runs, "run", "runs"),
            self.bytes_shared,
        );
        let (sh, cp) = (&self.shared, &self.copy);
        let mut out = if dry_run {
            format!(
                "{found}\n{cmd}: blocks: dry run: would submit {} bytes in {} (what XFS would give back); \
                 nothing was changed\n",
                sh.bytes_submitted,
                super::count(sh.ranges, "range", "ranges")
            )
        } else {
            format!(
                "{found}\n{cmd}: blocks: {} bytes submitted in {}, {} bytes deduplicated by the kernel, {} bytes refused \
                 (data differs); {}\n",
                sh.bytes_submitted,
                super::count(sh.ranges, "range", "ranges"),
                sh.bytes_deduped,
                sh.bytes_refused,
                super::count(sh.ioctl_calls, "ioctl call", "ioctl calls")
            )
        };
        if self.bytes_freeable == 0 && self.extents_copied == 0 {
            return out;
        }
        let extents = super::count(self.extents_copied, "extent", "extents");
        out.push_str(&if dry_run {
            format!(
                "{cmd}: blocks: dry run: would copy the rest of {extents}, {} bytes, so that btrfs gives back {} bytes \
                 (it frees an extent only whole)\n",
                cp.bytes_written, self.bytes_freeable
            )
        } else {
            format!(
                "{cmd}: blocks: the rest of {extents} copied (btrfs frees an extent only whole): {} bytes written, \
                 {} bytes moved onto the copies in {}, {} bytes refused; {}; {} bytes of matched extents let go\n",
                cp.bytes_written,
                cp.bytes_deduped,
                super::count(cp.ranges, "range", "ranges"),
                cp.bytes_refused,
                super::count(cp.ioctl_calls, "ioctl call", "ioctl calls"),
                self.bytes_freeable
            )
        });
        out
    }

    /// `dupes --blocks`' line on standard error.
    pub fn text_look(&self, cmd: &str) -> String {
        if self.block_bytes == 0 || self.too_many_blocks {
            return self.text(cmd, true).replace("blocks: dry run", "blocks");
        }
        format!(
            "{cmd}: blocks of {} bytes: read {}, {} bytes, {} from the hash file; {} bytes in {} are copies of \
             earlier blocks ({} bytes of them inside one file); nothing was changed\n",
            self.block_bytes,
            super::count(self.files_read, "file", "files"),
            self.bytes_read,
            self.files_cached,
            self.dup_blocks.saturating_mul(self.block_bytes),
            super::count(self.runs, "run", "runs"),
            self.bytes_inside
        )
    }

    /// `dupes --blocks`' JSON object: the figures and every run.
    pub fn json_look(&self) -> String {
        let mut s = format!(
            "{{\"block_bytes\":{},\"files_read\":{},\"bytes_read\":{},\"files_cached\":{},\"dup_blocks\":{},\"runs\":{},\
             \"bytes_duplicate\":{},\"bytes_inside\":{},\"too_many_blocks\":{},\"ranges\":[",
            self.block_bytes,
            self.files_read,
            self.bytes_read,
            self.files_cached,
            self.dup_blocks,
            self.runs,
            self.dup_blocks.saturating_mul(self.block_bytes),
            self.bytes_inside,
            self.too_many_blocks
        );
        for (i, l) in self.listed.iter().enumerate() {
            s.push_str(if i == 0 { "\n{\"path\":" } else { ",\n{\"path\":" });
            crate::text::quote::json_str(&mut s, &l.path);
            s.push_str(&format!(",\"offset\":{},\"length\":{},\"source\":", l.offset, l.length));
            crate::text::quote::json_str(&mut s, &l.source);
            s.push_str(&format!(",\"source_offset\":{}}}", l.source_offset));
        }
        s.push_str("]}");
        s
    }

    /// `dupes --blocks`' lines on standard output, each ended by `end` (a newline, or NUL
    /// with -0); with `quote`, paths as `ls` shows them on a terminal.
    pub fn write_ranges(&self, out: &mut impl Write, end: &[u8], quote: bool) -> io::Result<()> {
        let path = |out: &mut dyn Write, p: &[u8]| match quote {
            true => out.write_all(quotef(p).as_bytes()),
            false => out.write_all(p),
        };
        for l in &self.listed {
            write!(out, "{} bytes: ", l.length)?;
            path(out, &l.path)?;
            write!(out, " at {} = ", l.offset)?;
            path(out, &l.source)?;
            write!(out, " at {}", l.source_offset)?;
            out.write_all(end)?;
        }
        Ok(())
    }

    pub fn json(&self) -> String {
        let (sh, cp) = (&self.shared, &self.copy);
        format!(
            "{{\"block_bytes\":{},\"files_read\":{},\"bytes_read\":{},\"files_cached\":{},\"dup_blocks\":{},\"runs\":{},\
             \"bytes_shared\":{},\"ranges\":{},\"bytes_submitted\":{},\"bytes_deduplicated\":{},\"bytes_refused\":{},\
             \"ioctl_calls\":{},\"extents_copied\":{},\"bytes_written\":{},\"copy_ranges\":{},\"copy_bytes_submitted\":{},\
             \"copy_bytes_deduplicated\":{},\"copy_bytes_refused\":{},\"copy_ioctl_calls\":{},\"bytes_freeable\":{},\
             \"too_many_blocks\":{}}}",
            self.block_bytes,
            self.files_read,
            self.bytes_read,
            self.files_cached,
            self.dup_blocks,
            self.runs,
            self.bytes_shared,
            sh.ranges,
            sh.bytes_submitted,
            sh.bytes_deduped,
            sh.bytes_refused,
            sh.ioctl_calls,
            self.extents_copied,
            cp.bytes_written,
            cp.ranges,
            cp.bytes_submitted,
            cp.bytes_deduped,
            cp.bytes_refused,
            cp.ioctl_calls,
            self.bytes_freeable,
            self.too_many_blocks
        )
    }
}

/// The calls of one kind and what they did (in a dry run, what they would do).
#[derive(Default, Debug, Clone, Copy)]
pub struct Tally {
    /// Ranges submitted (a range over 1 GiB takes more than one call).
    pub ranges: u64,
    pub bytes_submitted: u64,
    pub bytes_deduped: u64,
    /// Bytes of ranges the kernel found to differ.
    pub bytes_refused: u64,
    pub ioctl_calls: u64,
    /// Bytes written to temporary copies (the remainder copy's only).
    pub bytes_written: u64,
}

/// One file of block mode: its index in `Found::files`, its path, and whether it may
/// only be a source.
pub(super) struct Cand {
    pub(super) rec: u32,
    pub(super) path: Vec<u8>,
    source_only: bool,
}

/// One block's fingerprint in the sorted index (16 bytes).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Print {
    fp: u64,
    file: u32,
    block: u32,
}

const _: () = assert!(std::mem::size_of::<Print>() == 16);

/// What places a file's blocks among equal fingerprints: its file system (no block is
/// linked to one on another) and its rank (0: it may only be a source, so it serves first).
#[derive(Clone, Copy, Debug, Default)]
struct FileKey {
    fs: u32,
    rank: u32,
}

/// A duplicate block and the first block of its content (16 bytes).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
struct Link {
    dst: u32,
    dst_block: u32,
    src: u32,
    src_block: u32,
}

/// `n_blocks` blocks of `dst` from `dst_block` on equal to those of `src` from `src_block`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Span {
    pub dst: u32,
    pub dst_block: u32,
    pub src: u32,
    pub src_block: u32,
    pub n_blocks: u32,
}

/// Counters the progress line shows while block mode runs.
#[derive(Default)]
struct Progress {
    bytes_read: AtomicU64,
    bytes_total: AtomicU64,
    ranges: AtomicU64,
    done: AtomicBool,
}

/// Block mode over `found`'s files; `Err` when the run must stop (a file system that
/// cannot share extents, found by the first call).
pub fn run(run: &mut Run, groups: &[Group], block_bytes: Option<u64>) -> Result<Report, String> {
    let progress = Progress::default();
    let show = run.opts.progress;
    std::thread::scope(|s| {
        if show {
            let p = &progress;
            crate::walk::threads::try_spawn(s, move || draw(p));
        }
        let out = steps(run, groups, block_bytes, &progress);
        progress.done.store(true, Ordering::Relaxed);
        out
    })
}

fn steps(run: &mut Run, groups: &[Group], block_bytes: Option<u64>, progress: &Progress) -> Result<Report, String> {
    let mut rep = Report::default();
    let cands = candidates(run, groups);
    let bs = match block_size(run, &cands, block_bytes) {
        Ok(bs) => bs,
        Err(None) => return Ok(rep),
        // Files, none of them on a file system that can share extents: one message, and
        // the run stops as whole-file dedupe stops (unless that changed something).
        Err(Some(c)) if run.r.bytes_deduped == 0 => {
            return Err(format!(
                "the file system of {} cannot share extents (ext4, tmpfs and the like; XFS needs reflink=1): \
                 nothing was changed",
                quotef(&cands[c].path)
            ))
        }
        Err(Some(c)) => {
            run.r.fail(&cands[c].path, Errno(EOPNOTSUPP));
            return Ok(rep);
        }
    };
    rep.block_bytes = bs;
    let mut cands: Vec<Cand> = cands.into_iter().filter(|c| run.file(c.rec).size >= bs).collect();
    let total_blocks: u64 = cands.iter().map(|c| run.file(c.rec).size / bs).sum();
    if total_blocks > MAX_BLOCKS {
        rep.too_many_blocks = true;
        run.r.failed = true;
        return Ok(rep);
    }
    progress.bytes_total.store(cands.iter().map(|c| run.file(c.rec).size).sum(), Ordering::Relaxed);
    let (prints, keys) = fingerprints(run, &mut cands, bs, progress, &mut rep);
    let spans = spans(prints, &keys);
    rep.runs = spans.len() as u64;
    rep.dup_blocks = spans.iter().map(|s| u64::from(s.n_blocks)).sum();
    let inside = spans.iter().filter(|s| s.src == s.dst);
    rep.bytes_inside = inside.map(|s| u64::from(s.n_blocks) * bs).sum();
    if run.opts.look_only {
        rep.listed = spans.iter().map(|s| listed(&cands, s, bs)).collect();
        return Ok(rep);
    }
    if run.r.interrupted {
        return Ok(rep);
    }
    submit_all(run, &cands, &spans, bs, progress, &mut rep)?;
    Ok(rep)
}

fn listed(cands: &[Cand], s: &Span, bs: u64) -> Listed {
    Listed {
        path: cands[s.dst as usize].path.clone(),
        offset: u64::from(s.dst_block) * bs,
        length: u64::from(s.n_blocks) * bs,
        source: cands[s.src as usize].path.clone(),
        source_offset: u64::from(s.src_block) * bs,
    }
}

/// Redraws one progress line on standard error every 200 ms until block mode is done.
fn draw(p: &Progress) {
    let start = Instant::now();
    let mut err = io::stderr();
    while !p.done.load(Ordering::Relaxed) {
        std::thread::sleep(Duration::from_millis(200));
        let human = |n: u64| crate::text::units::format_size(n, crate::text::units::Scale::human(true));
        let _ = write!(
            err,
            "\r\x1b[Kblocks: {}/{} read, {} ranges submitted ({:.1} s)",
            human(p.bytes_read.load(Ordering::Relaxed)),
            human(p.bytes_total.load(Ordering::Relaxed)),
            p.ranges.load(Ordering::Relaxed),
            start.elapsed().as_secs_f64()
        );
    }
    let _ = write!(err, "\r\x1b[K");
}

/// The files block mode reads, in path order: one name per inode, one member per
/// whole-file group, nothing inline-sized (smaller than a page).
fn candidates(run: &Run, groups: &[Group]) -> Vec<Cand> {
    let found = run.found;
    // A member on the device of an earlier one was left to whole-file dedupe; one on a
    // device of its own (another btrfs subvolume) is a candidate here.
    let dev = |m: &u32| found.files[*m as usize].dev;
    let later = |g: &Group| -> Vec<u32> {
        let m = &g.members;
        (1..m.len()).filter(|&i| m[..i].iter().any(|e| dev(e) == dev(&m[i]))).map(|i| m[i]).collect()
    };
    let others: HashSet<u32> = groups.iter().flat_map(later).collect();
    let mut seen = HashSet::new();
    let mut out = Vec::new();
    for (i, f) in found.files.iter().enumerate() {
        if f.size < MIN_BLOCK_BYTES || others.contains(&(i as u32)) {
            continue;
        }
        let mut path = Vec::new();
        found.file_path(f, &mut path);
        out.push(Cand { rec: i as u32, path, source_only: false });
    }
    out.sort_by(|a, b| a.path.cmp(&b.path));
    out.retain(|c| {
        let f = &found.files[c.rec as usize];
        seen.insert((f.dev, f.ino))
    });
    out
}

/// The block size: `--block-size`, else the largest block size of the candidates' file
/// systems; notes in `run.block_devs` the devices whose files are read (not those known
/// not to share extents, nor those whose block `--block-size` is not a multiple of: a
/// message). `Err(None)`: no candidate; `Err(Some(i))`: none on a file system that can
/// share extents (candidate `i` is one).
fn block_size(run: &mut Run, cands: &[Cand], block_bytes: Option<u64>) -> Result<u64, Option<usize>> {
    let mut fs_block: HashMap<u64, Option<u64>> = HashMap::new();
    let mut fs_keys: Vec<FsKey> = Vec::new();
    let mut fs_of: HashMap<u64, u32> = HashMap::new();
    let mut largest = 0;
    for c in cands {
        let dev = run.file(c.rec).dev;
        if fs_block.contains_key(&dev) {
            continue;
        }
        let Ok(file) = run.handles.open(&run.file(c.rec)) else { continue };
        // Listing only, every file system is read; sharing, not those that cannot share.
        let bytes = if platform::extents_never_shared(&file) && !run.opts.look_only {
            None
        } else {
            platform::fs_block_bytes(&file).or(Some(MIN_BLOCK_BYTES))
        };
        largest = largest.max(bytes.unwrap_or(0));
        fs_block.insert(dev, bytes);
        let key = run.fs_key(dev, &file);
        let fs = fs_keys.iter().position(|&k| k == key).unwrap_or_else(|| {
            fs_keys.push(key);
            fs_keys.len() - 1
        });
        // Listing, a copy is a copy wherever it is: one file system for all.
        fs_of.insert(dev, if run.opts.look_only { 0 } else { fs as u32 });
    }
    if cands.is_empty() {
        return Err(None);
    }
    if largest == 0 {
        return Err(Some(0));
    }
    let bs = block_bytes.unwrap_or(largest);
    if !fs_block.values().any(|b| b.is_some_and(|b| bs % b == 0)) {
        return Err(None);
    }
    for b in fs_block.values().flatten().filter(|&&b| bs % b != 0) {
        run.r.messages.push(format!("blocks of {bs} bytes on a file system of {b}-byte blocks: not aligned"));
    }
    let usable = |d: &u64| fs_block[d].is_some_and(|b| bs % b == 0);
    run.block_devs = fs_of.into_iter().filter(|(d, _)| usable(d)).collect();
    Ok(bs)
}

/// What reading one file gave.
enum Hashed {
    /// One fingerprint per whole block (0: all zeros), whether it may only be a source,
    /// and whether they came from the hash file.
    Prints(Vec<u64>, bool, bool),
    Skipped(Skip),
    Failed(Errno),
    /// Its file system is not one block mode uses.
    Out,
}

/// Reads every candidate on `threads` workers and returns their non-zero fingerprints
/// and each candidate's key; counts the files left out.
fn fingerprints(
    run: &mut Run,
    cands: &mut [Cand],
    bs: u64,
    progress: &Progress,
    rep: &mut Report,
) -> (Vec<Print>, Vec<FileKey>) {
    let next = AtomicUsize::new(0);
    let results: Mutex<Vec<(usize, Hashed)>> = Mutex::new(Vec::new());
    {
        let run: &Run = run;
        let cands: &[Cand] = cands;
        crate::walk::threads::on_threads(run.opts.threads.clamp(1, cands.len().max(1)), || {
            let mut buf = Vec::new();
            loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                if i >= cands.len() || platform::interrupt_requested().is_some() {
                    break;
                }
                let h = hash_file(run, cands[i].rec, bs, &mut buf, progress);
                results.lock().unwrap_or_else(|p| p.into_inner()).push((i, h));
            }
        });
    }
    if platform::interrupt_requested().is_some() {
        run.r.interrupted = true;
    }
    let mut results = results.into_inner().unwrap_or_else(|p| p.into_inner());
    results.sort_by_key(|(i, _)| *i);
    let mut prints = Vec::new();
    let mut keys = vec![FileKey::default(); cands.len()];
    for (i, h) in results {
        match h {
            Hashed::Prints(fps, source_only, cached) => {
                if cached {
                    rep.files_cached += 1;
                } else {
                    rep.files_read += 1;
                    rep.bytes_read += fps.len() as u64 * bs;
                    if run.opts.keep_prints {
                        let f = run.file(cands[i].rec);
                        let (dev, ino, size, mtime_ns, ctime_ns) = (f.dev, f.ino, f.size, f.mtime_ns, f.ctime_ns);
                        rep.entries.push(Blocks {
                            dev,
                            ino,
                            size,
                            mtime_ns,
                            ctime_ns,
                            block_bytes: bs,
                            prints: fps.clone(),
                        });
                    }
                }
                cands[i].source_only = source_only;
                let fs = run.block_devs[&run.file(cands[i].rec).dev];
                keys[i] = FileKey { fs, rank: u32::from(!source_only) };
                let blocks = fps.into_iter().enumerate().filter(|(_, fp)| *fp != 0);
                prints.extend(blocks.map(|(b, fp)| Print { fp, file: i as u32, block: b as u32 }));
            }
            Hashed::Skipped(why) => run.r.skip(why, 1),
            Hashed::Failed(e) => run.r.fail(&cands[i].path, e),
            Hashed::Out => {}
        }
    }
    (prints, keys)
}

/// Opens, checks and reads one file (record `rec`), a block's fingerprint at a time.
fn hash_file(run: &Run, rec: u32, bs: u64, buf: &mut Vec<u8>, progress: &Progress) -> Hashed {
    let f = run.file(rec);
    if !run.block_devs.contains_key(&f.dev) {
        return Hashed::Out;
    }
    let mut file = match run.handles.open(&f) {
        Ok(file) => file,
        Err(Refused::Changed) => return Hashed::Skipped(Skip::Changed),
        Err(Refused::Os(e)) => return Hashed::Failed(e),
    };
    let check = match platform::check_file(&file) {
        Ok(c) => c,
        Err(e) => return Hashed::Failed(e),
    };
    let source_only = match super::dedupe::skip_reason(&check, &f, &run.swaps) {
        Some(why @ (Skip::Changed | Skip::Swap)) => return Hashed::Skipped(why),
        Some(_) => true,
        None => !run.opts.allow_readonly && platform::read_only_snapshot(&file),
    };
    let n_blocks = (f.size / bs).min(u64::from(u32::MAX));
    if let Some(fps) = run.cache.lookup_blocks((f.dev, f.ino), f.size, (f.mtime_ns, f.ctime_ns), bs) {
        if fps.len() as u64 == n_blocks {
            progress.bytes_read.fetch_add(n_blocks * bs, Ordering::Relaxed);
            return Hashed::Prints(fps.to_vec(), source_only, true);
        }
    }
    let per_read = (READ_BYTES / bs).max(1);
    buf.resize((per_read * bs) as usize, 0);
    let mut fps = Vec::with_capacity(n_blocks as usize);
    while (fps.len() as u64) < n_blocks {
        let want = per_read.min(n_blocks - fps.len() as u64);
        let chunk = &mut buf[..(want * bs) as usize];
        if let Err(e) = read_full(&mut file, chunk) {
            return match platform::check_file(&file) {
                Ok(c) if same(&c, &f) => Hashed::Failed(Errno(e.raw_os_error().unwrap_or(5))),
                _ => Hashed::Skipped(Skip::Changed),
            };
        }
        fps.extend(chunk.chunks_exact(bs as usize).map(fingerprint));
        progress.bytes_read.fetch_add(want * bs, Ordering::Relaxed);
    }
    // A write before or during the read moved the ctime; what was read is not trusted.
    match platform::check_file(&file) {
        Ok(c) if same(&c, &f) => Hashed::Prints(fps, source_only, false),
        Ok(_) => Hashed::Skipped(Skip::Changed),
        Err(e) => Hashed::Failed(e),
    }
}

/// Fills `buf` whole; a file that ends before is an error (it shrank: the re-check says
/// changed).
fn read_full(file: &mut File, mut buf: &mut [u8]) -> io::Result<()> {
    while !buf.is_empty() {
        match file.read(buf) {
            Ok(0) => return Err(io::Error::from(io::ErrorKind::UnexpectedEof)),
            Ok(n) => buf = &mut buf[n..],
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// 8 bytes of BLAKE3 of a block, never 0; 0 for a block of zeros.
fn fingerprint(block: &[u8]) -> u64 {
    if block.iter().all(|&b| b == 0) {
        return 0;
    }
    let h = blake3::hash(block);
    let mut first = [0u8; 8];
    first.copy_from_slice(&h.as_bytes()[..8]);
    u64::from_le_bytes(first).max(1)
}

/// The runs of `prints`: each block whose fingerprint an earlier one has (in
/// `Print` order) is linked to that first block, and a destination's consecutive links
/// to consecutive source blocks of one file are one run. A source-only file (rank 0) is
/// never a destination.
fn spans(mut prints: Vec<Print>, keys: &[FileKey]) -> Vec<Span> {
    let key = |p: &Print| (keys[p.file as usize].fs, p.fp, keys[p.file as usize].rank, p.file, p.block);
    prints.sort_unstable_by_key(key);
    let content = |p: &Print| (keys[p.file as usize].fs, p.fp);
    let mut links = Vec::new();
    let mut first = 0;
    for i in 0..prints.len() {
        if content(&prints[i]) != content(&prints[first]) {
            first = i;
            continue;
        }
        let (s, d) = (prints[first], prints[i]);
        if i != first && keys[d.file as usize].rank != 0 {
            links.push(Link { dst: d.file, dst_block: d.block, src: s.file, src_block: s.block });
        }
    }
    drop(prints);
    links.sort_unstable();
    let mut out: Vec<Span> = Vec::new();
    for l in links {
        if let Some(last) = out.last_mut() {
            let end = last.dst_block + last.n_blocks;
            if last.dst == l.dst
                && end == l.dst_block
                && last.src == l.src
                && last.src_block + last.n_blocks == l.src_block
            {
                last.n_blocks += 1;
                continue;
            }
        }
        out.push(Span { dst: l.dst, dst_block: l.dst_block, src: l.src, src_block: l.src_block, n_blocks: 1 });
    }
    out
}

/// An open candidate with its extent map.
struct Opened {
    file: File,
    layout: Layout,
}

/// The state of the calls: open sources, and the candidates found changed (counted once,
/// never opened again).
struct Calls<'c> {
    cands: &'c [Cand],
    bs: u64,
    sources: HashMap<u32, Option<Opened>>,
    changed: HashSet<u32>,
}

/// How a range ended.
pub(super) enum Ended {
    Done,
    /// This candidate changed since it was read: none of its ranges is submitted.
    Changed(u32),
    /// Refused, failed, or a signal: the next range is tried (the signal stops them all).
    Stopped,
}

/// Submits every span (or, in a dry run, counts what would be), destination by
/// destination; `Err` when the run must stop.
fn submit_all(
    run: &mut Run,
    cands: &[Cand],
    spans: &[Span],
    bs: u64,
    progress: &Progress,
    rep: &mut Report,
) -> Result<(), String> {
    let mut calls = Calls { cands, bs, sources: HashMap::new(), changed: HashSet::new() };
    for of_dst in spans.chunk_by(|a, b| a.dst == b.dst) {
        if run.r.interrupted {
            break;
        }
        calls.destination(run, of_dst, progress, rep)?;
    }
    Ok(())
}

impl Calls<'_> {
    /// The spans of one destination (`spans`, all of one `dst`).
    fn destination(
        &mut self,
        run: &mut Run,
        spans: &[Span],
        progress: &Progress,
        rep: &mut Report,
    ) -> Result<(), String> {
        let dst = spans[0].dst;
        let Some(mut d) = self.open(run, dst) else { return Ok(()) };
        run.note_fs(run.file(self.cands[dst as usize].rec).dev, &d.file);
        // btrfs (the one file system with a UUID of its own here) frees an extent only
        // whole: the unmatched rest of a partly matched one is copied first.
        if platform::fs_uuid(&d.file).is_some() {
            if let remainder::Copied::Changed = self.remainder(run, &mut d, spans, progress, rep)? {
                self.note_changed(run, dst);
                return Ok(());
            }
        }
        for s in spans {
            if run.r.interrupted {
                return Ok(());
            }
            if self.sources.len() >= SOURCES_KEPT && !self.sources.contains_key(&s.src) {
                self.sources.clear();
            }
            if s.src != dst && !self.sources.contains_key(&s.src) {
                let opened = self.open(run, s.src);
                self.sources.insert(s.src, opened);
            }
            let src = match s.src == dst {
                true => &d,
                false => match &self.sources[&s.src] {
                    Some(o) => o,
                    None => continue,
                },
            };
            let (soff, doff) = (u64::from(s.src_block) * self.bs, u64::from(s.dst_block) * self.bs);
            let len = u64::from(s.n_blocks) * self.bs;
            let pieces = unshared(&src.layout, soff, &d.layout, doff, len);
            rep.bytes_shared += len - pieces.iter().map(|p| p.1).sum::<u64>();
            for (rel, n) in pieces {
                progress.ranges.fetch_add(1, Ordering::Relaxed);
                rep.shared.ranges += 1;
                if run.opts.dry_run {
                    rep.shared.bytes_submitted += n;
                    continue;
                }
                let pair = (&self.cands[s.src as usize], &self.cands[dst as usize]);
                let (files, offs) = ((&src.file, &d.file), (soff + rel, doff + rel));
                match share(run, &mut rep.shared, (Some(pair.0), pair.1), files, offs, n)? {
                    Ended::Done => {}
                    Ended::Stopped => break,
                    Ended::Changed(rec) => {
                        let which = if rec == pair.1.rec { dst } else { s.src };
                        self.note_changed(run, which);
                        if which == dst {
                            return Ok(());
                        }
                        self.sources.insert(s.src, None);
                        break;
                    }
                }
            }
        }
        Ok(())
    }

    /// The remainder copy of destination `d` before its `spans` are shared
    /// (`remainder.rs`); in a dry run, its figures only. Its map is read again after.
    fn remainder(
        &mut self,
        run: &mut Run,
        d: &mut Opened,
        spans: &[Span],
        progress: &Progress,
        rep: &mut Report,
    ) -> Result<remainder::Copied, String> {
        let bs = self.bs;
        let matched: Vec<(u64, u64)> =
            spans.iter().map(|s| (u64::from(s.dst_block) * bs, u64::from(s.n_blocks) * bs)).collect();
        let cand = &self.cands[spans[0].dst as usize];
        let plan = remainder::plan(&d.layout, &matched, run.file(cand.rec).size);
        rep.bytes_freeable += plan.bytes_freed;
        rep.extents_copied += plan.extents;
        if plan.pieces.is_empty() {
            return Ok(remainder::Copied::Done);
        }
        progress.ranges.fetch_add(plan.pieces.len() as u64, Ordering::Relaxed);
        if run.opts.dry_run {
            rep.copy.ranges += plan.pieces.len() as u64;
            rep.copy.bytes_submitted += plan.bytes();
            rep.copy.bytes_written += plan.bytes();
            return Ok(remainder::Copied::Done);
        }
        let done = remainder::copy(run, cand, &d.file, &plan, &mut rep.copy)?;
        d.layout = platform::layout(&d.file);
        Ok(done)
    }

    /// Counts candidate `i` as changed, once.
    fn note_changed(&mut self, run: &mut Run, i: u32) {
        if self.changed.insert(i) {
            run.r.skip(Skip::Changed, 1);
        }
    }

    /// Opens candidate `i` through the checked handles; `None` (counted) when it changed
    /// since it was read or cannot be opened.
    fn open(&mut self, run: &mut Run, i: u32) -> Option<Opened> {
        if self.changed.contains(&i) {
            return None;
        }
        let c = &self.cands[i as usize];
        let f = run.file(c.rec);
        let file = match run.handles.open(&f) {
            Ok(file) => file,
            Err(Refused::Changed) => {
                self.note_changed(run, i);
                return None;
            }
            Err(Refused::Os(e)) => {
                run.r.fail(&c.path, e);
                return None;
            }
        };
        match platform::check_file(&file) {
            Ok(check) if same(&check, &f) => Some(Opened { layout: platform::layout(&file), file }),
            Ok(_) => {
                self.note_changed(run, i);
                None
            }
            Err(e) => {
                run.r.fail(&c.path, e);
                None
            }
        }
    }
}

/// Shares `len` bytes of the destination at `off.1` with the source's at `off.0`, a call
/// of at most `CALL_BYTES` at a time, both files checked again before each.
pub(super) fn share(
    run: &mut Run,
    rep: &mut Tally,
    (src, dst): (Option<&Cand>, &Cand),
    (src_file, dst_file): (&File, &File),
    (soff, doff): (u64, u64),
    len: u64,
) -> Result<Ended, String> {
    let mut done = 0;
    while done < len {
        if platform::interrupt_requested().is_some() {
            run.r.interrupted = true;
            return Ok(Ended::Stopped);
        }
        // A source with no candidate is a temporary copy of ours: nobody else has it.
        for (file, c) in [(src_file, src), (dst_file, Some(dst))] {
            let Some(c) = c else { continue };
            if !platform::check_file(file).is_ok_and(|k| same(&k, &run.file(c.rec))) {
                return Ok(Ended::Changed(c.rec));
            }
        }
        let n = (len - done).min(CALL_BYTES);
        rep.ioctl_calls += 1;
        rep.bytes_submitted += n;
        let cannot = |e: Errno| {
            format!(
                "the file system of {} cannot share extents ({}; XFS needs reflink=1): nothing was changed",
                quotef(&dst.path),
                platform::errno_text(e)
            )
        };
        let nothing_yet = run.r.bytes_deduped == 0 && rep.bytes_deduped == 0;
        let status = match platform::dedupe(src_file, soff + done, n, &[(dst_file, doff + done)]) {
            Ok(st) => st.first().copied().unwrap_or(DedupeStatus::Error(Errno::INVAL)),
            Err(e) if (e.0 == EOPNOTSUPP || e == Errno::INVAL) && nothing_yet => return Err(cannot(e)),
            Err(e) => DedupeStatus::Error(e),
        };
        match status {
            DedupeStatus::Same(0) => return Ok(Ended::Stopped),
            DedupeStatus::Same(k) => {
                rep.bytes_deduped += k;
                done += k;
            }
            DedupeStatus::Differs => {
                // The fingerprints said equal, the kernel says not: a write the size and
                // times do not show (or a collision of 8 bytes). Both are read again.
                rep.bytes_refused += len - done;
                run.r.stale.extend(src.map(|c| c.rec).into_iter().chain([dst.rec]));
                return Ok(Ended::Stopped);
            }
            DedupeStatus::Error(e) if e.0 == EOPNOTSUPP && nothing_yet => return Err(cannot(e)),
            DedupeStatus::Error(e) => {
                run.r.fail(&dst.path, e);
                return Ok(Ended::Stopped);
            }
        }
    }
    Ok(Ended::Done)
}

/// The pieces (offset from the start, length) of `len` bytes at `soff` of a source and
/// `doff` of a destination that do not already sit at one disk address: where both maps
/// have an extent and their addresses agree, the bytes are shared; everything else
/// (holes, unknown maps) is submitted and the kernel decides.
pub fn unshared(src: &Layout, soff: u64, dst: &Layout, doff: u64, len: u64) -> Vec<(u64, u64)> {
    let (Layout::Extents(se), Layout::Extents(de)) = (src, dst) else { return vec![(0, len)] };
    let mut out: Vec<(u64, u64)> = Vec::new();
    let mut rel = 0;
    while rel < len {
        let (s, d) = (at(se, soff + rel), at(de, doff + rel));
        let mut step = len - rel;
        let mut shared = true;
        for (e, off) in [(s, soff + rel), (d, doff + rel)] {
            match e {
                Some(e) => step = step.min(e.logical + e.length - off),
                None => shared = false,
            }
        }
        if let (Some(s), Some(d)) = (s, d) {
            shared &= s.physical + (soff + rel - s.logical) == d.physical + (doff + rel - d.logical);
        } else {
            // A hole on either side: up to the next extent of either map.
            let next =
                |x: &[Extent], off: u64| x.iter().find(|e| e.logical > off).map_or(u64::MAX, |e| e.logical - off);
            step = step.min(next(se, soff + rel)).min(next(de, doff + rel));
        }
        if !shared {
            match out.last_mut() {
                Some(last) if last.0 + last.1 == rel => last.1 += step,
                _ => out.push((rel, step)),
            }
        }
        rel += step;
    }
    out
}

/// The extent of `map` (sorted by offset) holding byte `off`.
fn at(map: &[Extent], off: u64) -> Option<&Extent> {
    let i = map.partition_point(|e| e.logical + e.length <= off);
    map.get(i).filter(|e| e.logical <= off)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn print(fp: u64, file: u32, block: u32) -> Print {
        Print { fp, file, block }
    }

    /// Keys of 4 files on one file system, none of them source-only.
    const PLAIN: [FileKey; 4] = [FileKey { fs: 0, rank: 1 }; 4];

    fn span(dst: u32, dst_block: u32, src: u32, src_block: u32, n_blocks: u32) -> Span {
        Span { dst, dst_block, src, src_block, n_blocks }
    }

    /// A copy with one block rewritten: two runs around it, both from the first file.
    #[test]
    fn blocks_runs_around_a_rewritten_block() {
        let mut p: Vec<Print> = (0..6).map(|b| print(10 + u64::from(b), 0, b)).collect();
        p.extend((0..6).filter(|&b| b != 2).map(|b| print(10 + u64::from(b), 1, b)));
        p.push(print(99, 1, 2));
        assert_eq!(spans(p, &PLAIN), vec![span(1, 0, 0, 0, 2), span(1, 3, 0, 3, 3)]);
    }

    /// A run moved to another offset, a repeat inside one file, and three copies of one
    /// content: every copy points at the first, never at another copy.
    #[test]
    fn blocks_moved_repeated_and_many_copies() {
        // File 0: A B C D; file 1: C D A B (moved halves); file 2: A B A B (a repeat).
        let (a, b, c, d) = (1, 2, 3, 4);
        let p = vec![
            print(a, 0, 0),
            print(b, 0, 1),
            print(c, 0, 2),
            print(d, 0, 3),
            print(c, 1, 0),
            print(d, 1, 1),
            print(a, 1, 2),
            print(b, 1, 3),
            print(a, 2, 0),
            print(b, 2, 1),
            print(a, 2, 2),
            print(b, 2, 3),
        ];
        let want = vec![span(1, 0, 0, 2, 2), span(1, 2, 0, 0, 2), span(2, 0, 0, 0, 2), span(2, 2, 0, 0, 2)];
        assert_eq!(spans(p.clone(), &PLAIN), want);
        // Each file on a file system of its own: only the repeat inside file 2 is linked.
        let apart = [0, 1, 2, 3].map(|fs| FileKey { fs, rank: 1 });
        assert_eq!(spans(p, &apart), vec![span(2, 2, 2, 0, 2)]);
        // Within one file alone: A B A B points its second half at its first.
        let p = vec![print(a, 0, 0), print(b, 0, 1), print(a, 0, 2), print(b, 0, 3)];
        assert_eq!(spans(p, &PLAIN), vec![span(0, 2, 0, 0, 2)]);
    }

    /// A source-only file serves first and is never a destination, even when it sorts last.
    #[test]
    fn blocks_source_only_files_serve() {
        let keys = [1, 0, 0].map(|rank| FileKey { fs: 0, rank });
        let p = vec![print(5, 0, 0), print(6, 0, 1), print(5, 1, 0), print(6, 1, 1), print(5, 2, 0)];
        assert_eq!(spans(p, &keys), vec![span(0, 0, 1, 0, 2)]);
    }

    fn ext(logical: u64, physical: u64, length: u64) -> Extent {
        Extent { logical, physical, length, flags: Extent::SHARED }
    }

    /// Only the bytes not already at their source's address are submitted; holes and
    /// unknown maps are.
    #[test]
    fn blocks_unshared_pieces() {
        let src = Layout::Extents(vec![ext(0, 1000, 100), ext(100, 5000, 100)]);
        // Shares the source's first extent from 20 on, then its own blocks, then a hole.
        let dst = Layout::Extents(vec![ext(0, 900, 20), ext(20, 1020, 80), ext(100, 7000, 50)]);
        assert_eq!(unshared(&src, 0, &dst, 0, 200), vec![(0, 20), (100, 100)]);
        assert_eq!(unshared(&src, 20, &dst, 20, 80), vec![]);
        assert_eq!(unshared(&src, 0, &Layout::Unknown, 0, 64), vec![(0, 64)]);
        // At other offsets: the source's 100.. is at 5000, the destination's 0.. elsewhere.
        let moved = Layout::Extents(vec![ext(0, 5000, 100)]);
        assert_eq!(unshared(&src, 100, &moved, 0, 100), vec![]);
        assert_eq!(unshared(&src, 100, &moved, 0, 150), vec![(100, 50)]);
    }

    #[test]
    fn blocks_fingerprint_of_zeros_is_none() {
        assert_eq!(fingerprint(&[0u8; 4096]), 0);
        let mut b = [0u8; 4096];
        b[4095] = 1;
        assert_ne!(fingerprint(&b), 0);
        assert_ne!(fingerprint(&b), fingerprint(&[1u8; 4096]));
    }
}
