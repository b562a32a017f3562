//! `--hashfile FILE`: what earlier runs read, so a rerun on an unchanged tree reads no
//! file data.
//!
//! # Format (version 2, little-endian)
//!
//! ```text
//! 0   magic "DFDUHASH"            8 bytes
//! 8   version (2; 1 has no block part and is still read)  u32
//! 12  record bytes (64)           u32
//! 16  sections                    u32
//! 20  reserved (0)                u32
//! 24  records in all              u64
//! 32  per section (one device, ascending): dev u64, records u64, then its records
//!     sorted by inode, each 64 bytes:
//!       ino u64, size u64, mtime ns i64, ctime ns i64, sample u64,
//!       full hash 24 bytes (all zero: not known)
//!     block part (version 2): entries u64, then per file (`dedupe --blocks`), sorted by
//!     (dev, ino): dev u64, ino u64, size u64, mtime ns i64, ctime ns i64, block bytes
//!     u64 (a power of two, 4 KiB to 16 MiB), then size / block bytes fingerprints of
//!     8 bytes each (0: a block of zeros)
//! end BLAKE3 of every byte before it, 32 bytes
//! ```
//!
//! A file's block entry costs 48 bytes plus 8 per block, in the file and in memory while
//! the run holds the cache.
//!
//! Entries are keyed by (device, inode) and trusted only while size, mtime and ctime (in
//! nanoseconds; ctime cannot be set back by `touch`) are what they were; no paths are
//! stored. Anything that does not parse exactly — wrong magic, version, lengths, order or
//! checksum — is reported and ignored, never partly used. A file that does not start
//! with the magic (give or take two damaged bytes) is not ours: it is left alone and the run goes on without a cache.
//!
//! # Concurrency
//!
//! The run holds an exclusive `flock` on the hash file from reading it until the new
//! one is in place. The new file is written next to it and renamed over it, so a reader
//! never sees half a file; a run that waited for the lock checks that the path still
//! names the file it locked, and starts over on the new one if not.
//!
//! # Other users
//!
//! Root may be given a hash file in a directory another user can write. Every name is
//! looked up relative to one handle on the directory (`platform::WriteDir`): the hash file
//! is opened with `O_NOFOLLOW` (a symlink is refused) and created only with `O_EXCL`, and
//! `platform::replace_in` writes the new contents to a file that can only be new and ours
//! (mode 0600) before renaming it into place. Trust follows ownership, as
//! `walk::trust` judges a file dfdu writes (`Use::Write`): in a directory others may
//! write the file is neither read nor written; a file others could have written is
//! ignored and rebuilt. The directory itself is reached one name at a time, each step
//! judged: a name another user could swap (for a symlink to `/etc`, say) makes the path
//! untrusted, as its directory.

use super::find::{Digest, DIGEST_BYTES};
use crate::meta::Kind;
use crate::out::io_text;
use crate::platform;
use crate::walk::trust::{self, split, Judge, Use};
use std::collections::HashSet;
use std::ffi::{OsStr, OsString};
use std::fs::File;
use std::io::Read;
use std::path::Path;

const MAGIC: &[u8; 8] = b"DFDUHASH";
const VERSION: u32 = 2;
/// The version before the block part: still read (its files have no block entries).
const VERSION_NO_BLOCKS: u32 = 1;
const HEADER_BYTES: usize = 32;
const SECTION_BYTES: usize = 16;
pub const RECORD_BYTES: usize = 64;
const SUM_BYTES: usize = 32;
const BLOCK_HEAD_BYTES: usize = 48;
/// Bounds of a block entry's block size (`blocks.rs` allows no other).
const MIN_BLOCK_BYTES: u64 = 4096;
const MAX_BLOCK_BYTES: u64 = 16 << 20;

/// What is known about one file's contents.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Entry {
    pub dev: u64,
    pub ino: u64,
    pub size: u64,
    pub mtime_ns: i64,
    pub ctime_ns: i64,
    pub sample: u64,
    pub full: Option<Digest>,
}

/// One file's block fingerprints (`dedupe --blocks`), trusted as an `Entry` is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Blocks {
    pub dev: u64,
    pub ino: u64,
    pub size: u64,
    pub mtime_ns: i64,
    pub ctime_ns: i64,
    pub block_bytes: u64,
    /// One per whole block (`size / block_bytes`), 0 for a block of zeros.
    pub prints: Vec<u64>,
}

/// The entries of a hash file, each list sorted by (dev, ino).
#[derive(Default)]
pub struct Cache {
    entries: Vec<Entry>,
    blocks: Vec<Blocks>,
}

impl Cache {
    /// A cache of these entries (sorted by (dev, ino), as a parsed file's are).
    #[cfg(test)]
    pub fn of_entries(entries: Vec<Entry>) -> Cache {
        Cache { entries, blocks: Vec::new() }
    }

    /// The entry for (dev, ino) if it is still valid for this size and these times.
    #[cfg(test)]
    pub fn lookup(&self, dev: u64, ino: u64, size: u64, mtime_ns: i64, ctime_ns: i64) -> Option<Entry> {
        let i = self.entries.binary_search_by_key(&(dev, ino), |e| (e.dev, e.ino)).ok()?;
        let e = self.entries[i];
        (e.size == size && e.mtime_ns == mtime_ns && e.ctime_ns == ctime_ns).then_some(e)
    }

    /// A reader of many entries in ascending (dev, ino) order: each look-up goes on from
    /// where the last one stopped, so a whole run's look-ups are one pass over the entries
    /// (a binary search per file missed the cache at every step: 10 ms of a 30 ms rerun
    /// of 13,000 files).
    pub fn in_order(&self) -> InOrder<'_> {
        InOrder { rest: &self.entries }
    }

    /// The block fingerprints of (dev, ino) if they are still valid for this size, these
    /// times and this block size.
    pub fn lookup_blocks(&self, key: (u64, u64), size: u64, times_ns: (i64, i64), block_bytes: u64) -> Option<&[u64]> {
        let i = self.blocks.binary_search_by_key(&key, |e| (e.dev, e.ino)).ok()?;
        let e = &self.blocks[i];
        let valid = e.size == size && (e.mtime_ns, e.ctime_ns) == times_ns && e.block_bytes == block_bytes;
        valid.then_some(&e.prints[..])
    }
}

/// `Cache::in_order`'s cursor.
pub struct InOrder<'a> {
    /// The entries not passed yet.
    rest: &'a [Entry],
}

impl InOrder<'_> {
    /// `Cache::lookup`, for keys asked in ascending (dev, ino) order (a smaller key than
    /// the last one asked finds nothing). Gallops, so a key far ahead costs a logarithm,
    /// not a walk.
    pub fn lookup(&mut self, dev: u64, ino: u64, size: u64, mtime_ns: i64, ctime_ns: i64) -> Option<Entry> {
        let key = (dev, ino);
        let below = |e: &Entry| (e.dev, e.ino) < key;
        let mut step = 1;
        while step < self.rest.len() && below(&self.rest[step - 1]) {
            step *= 2;
        }
        let window = step.min(self.rest.len());
        let skip = self.rest[..window].partition_point(below);
        self.rest = &self.rest[skip..];
        let e = *self.rest.first().filter(|e| (e.dev, e.ino) == key)?;
        (e.size == size && e.mtime_ns == mtime_ns && e.ctime_ns == ctime_ns).then_some(e)
    }
}

fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(b[at..at + 4].try_into().expect("4 bytes"))
}

fn u64_at(b: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(b[at..at + 8].try_into().expect("8 bytes"))
}

/// Parses a whole hash file. `Err` says what is wrong with it.
pub fn parse(bytes: &[u8]) -> Result<Cache, &'static str> {
    if bytes.len() < HEADER_BYTES + SUM_BYTES {
        return Err("truncated");
    }
    if &bytes[..8] != MAGIC {
        return Err("not a dfdu hash file");
    }
    let (body, sum) = bytes.split_at(bytes.len() - SUM_BYTES);
    if blake3::hash(body).as_bytes() != sum {
        return Err("checksum mismatch (damaged or truncated)");
    }
    let version = u32_at(body, 8);
    if version != VERSION && version != VERSION_NO_BLOCKS {
        return Err("unknown version");
    }
    if u32_at(body, 12) as usize != RECORD_BYTES || u32_at(body, 20) != 0 {
        return Err("unknown layout");
    }
    let (entries, mut at) = parse_files(body)?;
    let blocks = match version {
        VERSION => parse_blocks(body, &mut at)?,
        _ => Vec::new(),
    };
    if at != body.len() {
        return Err("length does not match the counts");
    }
    Ok(Cache { entries, blocks })
}

/// The file sections after the header; the offset where they end.
fn parse_files(body: &[u8]) -> Result<(Vec<Entry>, usize), &'static str> {
    let sections = u32_at(body, 16) as u64;
    let total = u64_at(body, 24);
    let room = (body.len() - HEADER_BYTES) as u64;
    if total > room / RECORD_BYTES as u64 || sections > room / SECTION_BYTES as u64 {
        return Err("counts larger than the file");
    }
    let mut entries = Vec::with_capacity(total as usize);
    let mut at = HEADER_BYTES;
    let mut last_dev = None;
    for _ in 0..sections {
        if body.len() - at < SECTION_BYTES {
            return Err("truncated section");
        }
        let dev = u64_at(body, at);
        let n = u64_at(body, at + 8);
        at += SECTION_BYTES;
        if last_dev.is_some_and(|d| d >= dev) {
            return Err("sections out of order");
        }
        last_dev = Some(dev);
        if n > ((body.len() - at) / RECORD_BYTES) as u64 {
            return Err("truncated records");
        }
        let mut last_ino = None;
        for _ in 0..n {
            let r = &body[at..at + RECORD_BYTES];
            at += RECORD_BYTES;
            let ino = u64_at(r, 0);
            if last_ino.is_some_and(|i| i >= ino) {
                return Err("records out of order");
            }
            last_ino = Some(ino);
            let full: Digest = r[40..40 + DIGEST_BYTES].try_into().expect("digest bytes");
            entries.push(Entry {
                dev,
                ino,
                size: u64_at(r, 8),
                mtime_ns: u64_at(r, 16) as i64,
                ctime_ns: u64_at(r, 24) as i64,
                sample: u64_at(r, 32),
                full: (full != [0u8; DIGEST_BYTES]).then_some(full),
            });
        }
    }
    if entries.len() as u64 != total {
        return Err("length does not match the counts");
    }
    Ok((entries, at))
}

/// The block part from `at` on (version 2); `at` moves past it.
fn parse_blocks(body: &[u8], at: &mut usize) -> Result<Vec<Blocks>, &'static str> {
    if body.len() - *at < 8 {
        return Err("truncated block part");
    }
    let n = u64_at(body, *at);
    *at += 8;
    if n > ((body.len() - *at) / BLOCK_HEAD_BYTES) as u64 {
        return Err("counts larger than the file");
    }
    let mut out: Vec<Blocks> = Vec::with_capacity(n as usize);
    for _ in 0..n {
        if body.len() - *at < BLOCK_HEAD_BYTES {
            return Err("truncated block entry");
        }
        let h = &body[*at..*at + BLOCK_HEAD_BYTES];
        *at += BLOCK_HEAD_BYTES;
        let (dev, ino, size, block_bytes) = (u64_at(h, 0), u64_at(h, 8), u64_at(h, 16), u64_at(h, 40));
        if out.last().is_some_and(|l| (l.dev, l.ino) >= (dev, ino)) {
            return Err("block entries out of order");
        }
        if !block_bytes.is_power_of_two() || !(MIN_BLOCK_BYTES..=MAX_BLOCK_BYTES).contains(&block_bytes) {
            return Err("unknown block size");
        }
        let n_prints = size / block_bytes;
        if n_prints > ((body.len() - *at) / 8) as u64 {
            return Err("truncated block entry");
        }
        let prints = (0..n_prints as usize).map(|k| u64_at(body, *at + 8 * k)).collect();
        *at += 8 * n_prints as usize;
        let (mtime_ns, ctime_ns) = (u64_at(h, 24) as i64, u64_at(h, 32) as i64);
        out.push(Blocks { dev, ino, size, mtime_ns, ctime_ns, block_bytes, prints });
    }
    Ok(out)
}

/// Serialises `entries` and `blocks` (each sorted by (dev, ino), no duplicates).
pub fn serialize(entries: &[Entry], blocks: &[Blocks]) -> Vec<u8> {
    let mut sections: Vec<(u64, usize)> = Vec::new();
    for e in entries {
        match sections.last_mut() {
            Some((d, n)) if *d == e.dev => *n += 1,
            _ => sections.push((e.dev, 1)),
        }
    }
    let mut out =
        Vec::with_capacity(HEADER_BYTES + sections.len() * SECTION_BYTES + entries.len() * RECORD_BYTES + SUM_BYTES);
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&VERSION.to_le_bytes());
    out.extend_from_slice(&(RECORD_BYTES as u32).to_le_bytes());
    out.extend_from_slice(&(sections.len() as u32).to_le_bytes());
    out.extend_from_slice(&0u32.to_le_bytes());
    out.extend_from_slice(&(entries.len() as u64).to_le_bytes());
    let mut at = 0;
    for (dev, n) in sections {
        out.extend_from_slice(&dev.to_le_bytes());
        out.extend_from_slice(&(n as u64).to_le_bytes());
        for e in &entries[at..at + n] {
            out.extend_from_slice(&e.ino.to_le_bytes());
            out.extend_from_slice(&e.size.to_le_bytes());
            out.extend_from_slice(&e.mtime_ns.to_le_bytes());
            out.extend_from_slice(&e.ctime_ns.to_le_bytes());
            out.extend_from_slice(&e.sample.to_le_bytes());
            out.extend_from_slice(&e.full.unwrap_or([0; DIGEST_BYTES]));
        }
        at += n;
    }
    out.extend_from_slice(&(blocks.len() as u64).to_le_bytes());
    for b in blocks {
        for w in [b.dev, b.ino, b.size, b.mtime_ns as u64, b.ctime_ns as u64, b.block_bytes] {
            out.extend_from_slice(&w.to_le_bytes());
        }
        for p in &b.prints {
            out.extend_from_slice(&p.to_le_bytes());
        }
    }
    let sum = blake3::hash(&out);
    out.extend_from_slice(sum.as_bytes());
    out
}

/// A hash file, perhaps damaged: its first bytes are (nearly) the magic. Anything else
/// is someone else's file, which dfdu neither trusts nor overwrites.
fn looks_ours(bytes: &[u8]) -> bool {
    if bytes.len() < MAGIC.len() {
        return MAGIC.starts_with(bytes);
    }
    bytes.iter().zip(MAGIC).filter(|(a, b)| a == b).count() >= MAGIC.len() - 2
}

/// An open, locked hash file.
pub struct HashFile {
    /// Its directory: every name below is looked up, created and renamed relative to it.
    dir: platform::WriteDir,
    name: OsString,
    shown: String,
    lock: File,
    /// False when the file at `path` is not ours: it is neither read nor replaced.
    writable: bool,
    /// Its contents were not used (damaged, or not trusted): written anew even when this
    /// run learned nothing.
    rebuild: bool,
}

/// Creates `path` as a new file of ours (O_EXCL, mode 0600, never through a symlink) in
/// a directory reached and judged as the hash file's is: `--plan`'s script.
pub fn create_new(path: &Path) -> Result<File, String> {
    let shown = path.display();
    let (dir_path, name) = split(path).ok_or_else(|| format!("'{shown}' does not name a file"))?;
    let dir = match trust::open_dir(dir_path, Judge::new(Use::Write)) {
        Ok(d) => d,
        Err(platform::WalkError::Refused(why)) => return Err(format!("'{shown}' is not safe to create: {why}")),
        Err(platform::WalkError::Os(e)) => {
            return Err(format!("cannot open the directory of '{shown}': {}", platform::errno_text(e)))
        }
    };
    platform::open_at_nofollow(&dir, name, true)
        .map_err(|e| format!("cannot create '{shown}': {}", platform::errno_text(e)))
}

/// What became of one attempt at opening the hash file.
enum Opened {
    File(File),
    /// The name changed between the look and the open: look again.
    Again,
}

/// Opens the existing entry `name` of `dir`, or creates it empty (mode 0600) when there
/// is none; never through a symlink, never anything but a regular file.
fn open_entry(dir: &platform::WriteDir, name: &OsStr, shown: &str) -> Result<Opened, String> {
    let symlink = || format!("hash file '{shown}' is a symbolic link: refused (a hash file is never followed)");
    let not_regular = || format!("hash file '{shown}' is not a regular file");
    let cannot = |e| format!("cannot open hash file '{shown}': {}", platform::errno_text(e));
    let kind = |c: Option<platform::FileCheck>| c.map(|c| c.kind);
    let before = kind(platform::entry_at(dir, name).map_err(cannot)?);
    match before {
        Some(Kind::Symlink) => return Err(symlink()),
        Some(Kind::File) | None => {}
        Some(_) => return Err(not_regular()),
    }
    match platform::open_at_nofollow(dir, name, before.is_none()) {
        // Checked again on the handle: a FIFO or device may have taken the name.
        Ok(file) => match platform::check_file(&file) {
            Ok(c) if c.kind == Kind::File => Ok(Opened::File(file)),
            Ok(_) => Err(not_regular()),
            Err(e) => Err(cannot(e)),
        },
        // ELOOP (a symlink took its place), EEXIST (created meanwhile), ENOENT (removed):
        // what the name is now decides.
        Err(e) => match kind(platform::entry_at(dir, name).map_err(cannot)?) {
            Some(Kind::Symlink) => Err(symlink()),
            now if now != before => Ok(Opened::Again),
            _ => Err(cannot(e)),
        },
    }
}

/// Whether the entry `name` of `dir` still is the open `file`.
fn same_entry(dir: &platform::WriteDir, name: &OsStr, file: &File) -> bool {
    match (platform::check_file(file), platform::entry_at(dir, name)) {
        (Ok(x), Ok(Some(y))) => y.kind == Kind::File && (x.ino == 0 || (x.dev, x.ino) == (y.dev, y.ino)),
        _ => false,
    }
}

/// Opens and locks the hash file at `path` (creating it empty if missing) and reads it.
/// `note` receives one line for anything the user should know (a damaged or untrusted
/// file, waiting for the lock). `Ok(None, _)`: the file is in a directory others may
/// write, and the run goes on without one. `Err` when the file cannot be used at all (a
/// symlink, not a regular file, cannot be opened or locked).
pub fn open(path: &Path, note: &mut dyn FnMut(String)) -> Result<(Option<HashFile>, Unparsed), String> {
    let shown = path.display().to_string();
    let (dir_path, name) = split(path).ok_or_else(|| format!("hash file '{shown}' does not name a file"))?;
    let judge = Judge::new(Use::Write);
    let dir = match trust::open_dir(dir_path, judge) {
        Ok(d) => d,
        Err(platform::WalkError::Refused(why)) => {
            note(format!("hash file '{shown}' is not trusted: {why}; running without one, leaving it alone"));
            return Ok((None, Unparsed::default()));
        }
        Err(platform::WalkError::Os(e)) => {
            return Err(format!("cannot open the directory of hash file '{shown}': {}", platform::errno_text(e)))
        }
    };
    let dir_owner = platform::write_dir_owner(&dir);
    let untrusted = |file| judge.zip(dir_owner).and_then(|(j, d)| j.file(d, file));
    if let Some(why) = untrusted(None) {
        note(format!("hash file '{shown}' is not trusted: {why}; running without one, leaving it alone"));
        return Ok((None, Unparsed::default()));
    }
    for _ in 0..16 {
        let Opened::File(mut file) = open_entry(&dir, name, &shown)? else { continue };
        let lock = |wait| {
            platform::lock_file(&file, wait)
                .map_err(|e| format!("cannot lock hash file '{shown}': {}", platform::errno_text(e)))
        };
        if !lock(false)? {
            note(format!("waiting for another run that uses hash file '{shown}'"));
            lock(true)?;
        }
        if !same_entry(&dir, name, &file) {
            continue; // replaced while we waited: lock the new one
        }
        let mut bytes = Vec::new();
        file.read_to_end(&mut bytes).map_err(|e| format!("cannot read hash file '{shown}': {}", io_text(&e)))?;
        let (unparsed, writable, rebuild) = if bytes.is_empty() {
            (Vec::new(), true, false)
        } else if !looks_ours(&bytes) {
            note(format!("'{shown}' is not a dfdu hash file: leaving it alone and running without a cache"));
            (Vec::new(), false, false)
        } else if let Some(why) = untrusted(platform::file_owner(&file)) {
            note(format!("hash file '{shown}' is not trusted: {why}; ignoring it and writing a new one"));
            (Vec::new(), true, true)
        } else {
            (bytes, true, false)
        };
        let name = name.to_os_string();
        return Ok((Some(HashFile { dir, name, shown, lock: file, writable, rebuild }), Unparsed { bytes: unparsed }));
    }
    Err(format!("hash file '{shown}' keeps being replaced by another run"))
}

/// A hash file's contents, read and judged ours and trusted but not parsed yet: the
/// parse (a checksum over the whole file and every record checked, 15 ms for 160,000
/// files) runs beside the scan, which does not need the entries (`dupes::scan_and_find`).
#[derive(Default)]
pub struct Unparsed {
    bytes: Vec<u8>,
}

impl Unparsed {
    /// The entries (none where there was nothing to read), or why the file is unusable;
    /// the caller says so and has it written anew (`HashFile::rebuild_after`).
    pub fn parse(&self) -> Result<Cache, &'static str> {
        if self.bytes.is_empty() {
            return Ok(Cache::default());
        }
        parse(&self.bytes)
    }
}

impl HashFile {
    /// The contents turned out unusable (`Unparsed::parse` failed): the line that says
    /// so, and the file is written anew even when this run learns nothing.
    pub fn rebuild_after(&mut self, why: &str) -> String {
        self.rebuild = true;
        format!("hash file '{}' is unusable ({why}): ignoring it and writing a new one", self.shown)
    }

    /// Writes `old`'s entries overridden by `new` (this run's), without those of `stale`
    /// (device, inode) pairs, to a new file next to the hash file (mode 0600, see
    /// `platform::replace_in`) and renames it into place; nothing when `new` adds or
    /// changes no entry, none is dropped and the old file was usable.
    pub fn save(
        self,
        old: Cache,
        mut new: Vec<Entry>,
        mut new_blocks: Vec<Blocks>,
        stale: &HashSet<(u64, u64)>,
    ) -> Result<(), String> {
        if !self.writable {
            return Ok(());
        }
        new.sort_unstable_by_key(|e| (e.dev, e.ino));
        new.dedup_by_key(|e| (e.dev, e.ino));
        new_blocks.sort_unstable_by_key(|e| (e.dev, e.ino));
        new_blocks.dedup_by_key(|e| (e.dev, e.ino));
        new_blocks.retain(|e| !stale.contains(&(e.dev, e.ino)));
        let (mut old_entries, mut old_blocks) = (old.entries, old.blocks);
        let n_old = old_entries.len() + old_blocks.len();
        old_entries.retain(|e| !stale.contains(&(e.dev, e.ino)));
        old_blocks.retain(|e| !stale.contains(&(e.dev, e.ino)));
        // A rerun on an unchanged tree learned nothing new: the file stays as it is (no
        // write, no rename: a rerun reads metadata and the hash file only).
        if !self.rebuild
            && old_entries.len() + old_blocks.len() == n_old
            && known(&old_entries, &new, |e| (e.dev, e.ino))
            && known(&old_blocks, &new_blocks, |e| (e.dev, e.ino))
        {
            return Ok(());
        }
        let merged = merge(old_entries, new, |e| (e.dev, e.ino));
        let merged_blocks = merge(old_blocks, new_blocks, |e| (e.dev, e.ino));
        let bytes = serialize(&merged, &merged_blocks);
        // No fsync: the file is a cache. If a crash leaves it short or stale, its
        // checksum says so and the next run rebuilds it; waiting for the disk here cost
        // whole seconds on a busy machine.
        platform::replace_in(&self.dir, &self.name, &bytes, self.lock)
            .map_err(|e| format!("cannot write hash file '{}': {}", self.shown, platform::errno_text(e)))
    }
}

/// Whether every one of `new` is in `old` (both sorted by `key`, no key twice) as it
/// is: one pass over both.
fn known<T: PartialEq>(old: &[T], new: &[T], key: impl Fn(&T) -> (u64, u64)) -> bool {
    let mut rest = old;
    new.iter().all(|e| {
        let skip = rest.iter().position(|o| key(o) >= key(e)).unwrap_or(rest.len());
        rest = &rest[skip..];
        rest.first().is_some_and(|o| o == e)
    })
}

/// `old` and `new` (each sorted by `key`, no key twice) in one sorted list; `new`'s
/// entry wins where both have a key.
fn merge<T>(old: Vec<T>, new: Vec<T>, key: impl Fn(&T) -> (u64, u64)) -> Vec<T> {
    let mut merged = Vec::with_capacity(old.len() + new.len());
    let (mut a, mut b) = (old.into_iter().peekable(), new.into_iter().peekable());
    loop {
        let take_new = match (a.peek(), b.peek()) {
            (None, None) => break,
            (Some(_), None) => false,
            (None, Some(_)) => true,
            (Some(x), Some(y)) => {
                if key(x) == key(y) {
                    a.next();
                    true
                } else {
                    key(y) < key(x)
                }
            }
        };
        merged.extend(if take_new { b.next() } else { a.next() });
    }
    merged
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample_entries() -> Vec<Entry> {
        (0..50u64)
            .map(|i| Entry {
                dev: i / 20,
                ino: 1000 + i,
                size: i * 4097,
                mtime_ns: 1_700_000_000_000_000_000 + i as i64,
                ctime_ns: -5 + i as i64,
                sample: i.wrapping_mul(0x9E37_79B9_7F4A_7C15),
                full: (i % 3 != 0).then_some([i as u8; DIGEST_BYTES]),
            })
            .collect()
    }

    fn sample_blocks() -> Vec<Blocks> {
        (0..4u64)
            .map(|i| Blocks {
                dev: i / 2,
                ino: 77 + i,
                size: 3 * 4096 + i,
                mtime_ns: 10 + i as i64,
                ctime_ns: -(i as i64),
                block_bytes: 4096,
                prints: vec![i, 0, u64::MAX - i],
            })
            .collect()
    }

    /// Block entries: 48 bytes and 8 per block, found while size, times and block size
    /// are what they were.
    #[test]
    fn hashfile_block_entries_round_trip() {
        let (e, b) = (sample_entries(), sample_blocks());
        let bytes = serialize(&e, &b);
        let files = HEADER_BYTES + 3 * SECTION_BYTES + 50 * RECORD_BYTES;
        assert_eq!(bytes.len(), files + 8 + 4 * (BLOCK_HEAD_BYTES + 3 * 8) + SUM_BYTES);
        let c = parse(&bytes).unwrap();
        assert_eq!((c.entries.clone(), c.blocks.clone()), (e, b.clone()));
        let x = &b[2];
        let (key, times) = ((x.dev, x.ino), (x.mtime_ns, x.ctime_ns));
        assert_eq!(c.lookup_blocks(key, x.size, times, 4096), Some(&x.prints[..]));
        assert_eq!(c.lookup_blocks(key, x.size, times, 8192), None, "another block size");
        assert_eq!(c.lookup_blocks(key, x.size + 1, times, 4096), None);
        assert_eq!(c.lookup_blocks(key, x.size, (x.mtime_ns, x.ctime_ns + 1), 4096), None);
        assert_eq!(c.lookup_blocks((x.dev, x.ino + 9), x.size, times, 4096), None);
    }

    /// A version 2 file's block part, checked as the rest is; version 1 has none.
    #[test]
    fn hashfile_block_part_checked_behind_the_checksum() {
        let files = |v| [header(v, 64, 1, 0, 1), section(1, 1), record(5)].concat();
        let entry = |ino: u64, size: u64, bs: u64| {
            [1, ino, size, 0, 0, bs].iter().flat_map(|w: &u64| w.to_le_bytes()).collect::<Vec<u8>>()
        };
        let prints = |n: usize| vec![7u8; 8 * n];
        let count = |n: u64| n.to_le_bytes().to_vec();
        let blocks =
            |parts: &[Vec<u8>]| parse(&sealed([files(2)].iter().chain(parts).cloned().collect::<Vec<_>>().concat()));
        let n = |parts: &[Vec<u8>]| blocks(parts).map(|c| c.blocks.len());
        assert_eq!(n(&[count(0)]), Ok(0));
        assert_eq!(n(&[count(1), entry(9, 8192 + 5, 4096), prints(2)]), Ok(1));
        assert_eq!(n(&[count(2), entry(9, 4096, 4096), prints(1), entry(10, 0, 4096)]), Ok(2));
        assert_eq!(n(&[]), Err("truncated block part"));
        assert_eq!(n(&[count(1), entry(9, 8192, 4096), prints(1)]), Err("truncated block entry"));
        assert_eq!(n(&[count(1), entry(9, 8192, 4096), prints(3)]), Err("length does not match the counts"));
        assert_eq!(n(&[count(2), entry(9, 0, 4096), entry(9, 0, 4096)]), Err("block entries out of order"));
        assert_eq!(n(&[count(1), entry(9, 0, 2048)]), Err("unknown block size"));
        assert_eq!(n(&[count(1), entry(9, 0, 6144)]), Err("unknown block size"));
        assert_eq!(n(&[count(1), entry(9, 0, 32 << 20)]), Err("unknown block size"));
        assert_eq!(n(&[count(3), entry(9, 0, 4096)]), Err("counts larger than the file"));
        // Version 1 ends after its records: a block part there is bytes too many.
        assert_eq!(parse(&sealed(files(1))).map(|c| c.entries.len()), Ok(1));
        assert_eq!(parse(&sealed([files(1), count(0)].concat())).err(), Some("length does not match the counts"));
    }

    #[test]
    fn round_trip_and_64_bytes_per_file() {
        let e = sample_entries();
        let bytes = serialize(&e, &[]);
        assert_eq!(bytes.len(), HEADER_BYTES + 3 * SECTION_BYTES + 50 * RECORD_BYTES + 8 + SUM_BYTES);
        let c = parse(&bytes).unwrap();
        assert_eq!(c.entries, e);
        let x = e[7];
        assert_eq!(c.lookup(x.dev, x.ino, x.size, x.mtime_ns, x.ctime_ns), Some(x));
        assert_eq!(c.lookup(x.dev, x.ino, x.size, x.mtime_ns, x.ctime_ns + 1), None);
        assert_eq!(c.lookup(x.dev, x.ino, x.size + 1, x.mtime_ns, x.ctime_ns), None);
    }

    #[test]
    fn in_order_finds_what_lookup_finds() {
        let e = sample_entries();
        let c = Cache { entries: e.clone(), blocks: Vec::new() };
        // Every key, keys between and beyond them, and each asked twice in a row; with
        // one time wrong for every third.
        let mut asks: Vec<(u64, u64)> =
            e.iter().flat_map(|x| [(x.dev, x.ino), (x.dev, x.ino + 1), (x.dev, x.ino)]).collect();
        asks.extend([(0, 0), (u64::MAX, u64::MAX)]);
        asks.sort_unstable();
        for stride in 1..5 {
            let mut cursor = c.in_order();
            for (n, &(dev, ino)) in asks.iter().enumerate().step_by(stride) {
                let x = e.iter().find(|x| (x.dev, x.ino) == (dev, ino));
                let (size, mtime, ctime) =
                    x.map_or((0, 0, 0), |x| (x.size, x.mtime_ns, x.ctime_ns + i64::from(n % 3 == 0)));
                assert_eq!(
                    cursor.lookup(dev, ino, size, mtime, ctime),
                    c.lookup(dev, ino, size, mtime, ctime),
                    "{dev} {ino}"
                );
            }
        }
    }

    #[test]
    fn known_needs_every_new_entry_equal_in_old() {
        let old = sample_entries();
        let every_other: Vec<Entry> = old.iter().copied().step_by(2).collect();
        assert!(known(&old, &every_other, |e| (e.dev, e.ino)));
        assert!(known(&old, &old, |e| (e.dev, e.ino)));
        assert!(known(&old, &[], |e| (e.dev, e.ino)));
        assert!(!known(&every_other, &old, |e| (e.dev, e.ino)));
        let mut changed = every_other.clone();
        changed.last_mut().unwrap().sample ^= 1;
        assert!(!known(&old, &changed, |e| (e.dev, e.ino)));
        let mut past_end = old.clone();
        past_end.push(Entry { ino: u64::MAX, ..*old.last().unwrap() });
        assert!(!known(&old, &past_end, |e| (e.dev, e.ino)));
    }

    /// `body` with its checksum: a file whose damage the checksum cannot see (written by a
    /// broken or hostile program), so only the structure checks stand between it and the
    /// cache.
    fn sealed(mut body: Vec<u8>) -> Vec<u8> {
        let sum = blake3::hash(&body);
        body.extend_from_slice(sum.as_bytes());
        body
    }

    /// A header: version, record bytes, sections, reserved, records in all.
    fn header(version: u32, record: u32, sections: u32, reserved: u32, total: u64) -> Vec<u8> {
        let mut h = MAGIC.to_vec();
        for v in [version, record, sections, reserved] {
            h.extend_from_slice(&v.to_le_bytes());
        }
        h.extend_from_slice(&total.to_le_bytes());
        h
    }

    fn section(dev: u64, n: u64) -> Vec<u8> {
        [dev.to_le_bytes(), n.to_le_bytes()].concat()
    }

    fn record(ino: u64) -> Vec<u8> {
        let mut r = vec![0u8; RECORD_BYTES];
        r[..8].copy_from_slice(&ino.to_le_bytes());
        r[8..16].copy_from_slice(&100u64.to_le_bytes());
        r
    }

    fn why(parts: &[Vec<u8>]) -> Result<usize, &'static str> {
        parse(&sealed(parts.concat())).map(|c| c.entries.len())
    }

    /// Small and empty files, several devices, and sections without records all parse.
    #[test]
    fn hashfile_sizes_and_sections_that_are_valid() {
        assert_eq!(parse(&serialize(&[], &[])).map(|c| c.entries.len()), Ok(0));
        let e = sample_entries();
        for n in [1, 3, 13] {
            assert_eq!(parse(&serialize(&e[..n], &[])).map(|c| c.entries), Ok(e[..n].to_vec()));
        }
        let many_devs: Vec<Entry> = e.iter().enumerate().map(|(i, x)| Entry { dev: i as u64 / 3, ..*x }).collect();
        assert_eq!(parse(&serialize(&many_devs, &[])).map(|c| c.entries), Ok(many_devs.clone()));
        assert_eq!(why(&[header(1, 64, 1, 0, 0), section(7, 0)]), Ok(0));
        assert_eq!(why(&[header(1, 64, 2, 0, 1), section(7, 0), section(8, 1), record(5)]), Ok(1));
    }

    /// Files with a good checksum and a bad structure: each is refused for its own reason
    /// (the reason is shown to the user), never read past its end.
    #[test]
    fn hashfile_structure_checked_behind_the_checksum() {
        let one = |h: Vec<u8>| why(&[h, section(1, 1), record(5)]);
        assert_eq!(one(header(1, 64, 1, 0, 1)), Ok(1));
        assert_eq!(one(header(3, 64, 1, 0, 1)), Err("unknown version"));
        assert_eq!(one(header(0, 64, 1, 0, 1)), Err("unknown version"), "an older version too");
        assert_eq!(one(header(1, 32, 1, 0, 1)), Err("unknown layout"));
        assert_eq!(one(header(1, 64, 1, 1, 1)), Err("unknown layout"));
        // Three records fill the room exactly; a fourth is counted but not there.
        let three = [section(1, 3), record(1), record(2), record(3)].concat();
        assert_eq!(why(&[header(1, 64, 1, 0, 3), three.clone()]), Ok(3));
        assert_eq!(why(&[header(1, 64, 1, 0, 4), three.clone()]), Err("counts larger than the file"));
        assert_eq!(why(&[header(1, 64, 2, 0, 0), section(1, 0)]), Err("counts larger than the file"));
        assert_eq!(why(&[header(1, 64, 14, 0, 3), three.clone()]), Err("counts larger than the file"));
        assert_eq!(why(&[header(1, 64, 2, 0, 1), section(1, 1), record(5)]), Err("truncated section"));
        assert_eq!(why(&[header(1, 64, 1, 0, 1), section(1, 2), record(5)]), Err("truncated records"));
        assert_eq!(
            why(&[header(1, 64, 2, 0, 2), section(2, 1), record(5), section(1, 1), record(6)]),
            Err("sections out of order")
        );
        assert_eq!(why(&[header(1, 64, 1, 0, 2), section(1, 2), record(6), record(5)]), Err("records out of order"));
        assert_eq!(why(&[header(1, 64, 1, 0, 2), section(1, 2), record(5), record(5)]), Err("records out of order"));
        assert_eq!(one(header(1, 64, 1, 0, 0)), Err("length does not match the counts"));
        assert_eq!(
            why(&[header(1, 64, 1, 0, 1), section(1, 1), record(5), vec![0; 16]]),
            Err("length does not match the counts")
        );
    }

    /// Ours: the magic give or take two bytes, or a file shorter than the magic that
    /// starts it. Anything else is someone else's file.
    #[test]
    fn hashfile_looks_ours_by_its_magic() {
        for ours in [&b"D"[..], b"DFDUH", b"DFDUHAS", b"DFDUHASH", b"DFDUHAXX", b"XFDUHASX", b"DFDUHASH and more"] {
            assert!(looks_ours(ours), "{:?}", String::from_utf8_lossy(ours));
        }
        for theirs in [&b"x"[..], b"DFDUX", b"DFDUHAX", b"DFDUxxxx", b"DFDUHxxx", b"xFDUHxxH", b"precious notes"] {
            assert!(!looks_ours(theirs), "{:?}", String::from_utf8_lossy(theirs));
        }
    }

    /// Every truncation and every single-bit flip, plus random overwrites, is rejected
    /// (never a panic, never a partly trusted cache).
    #[test]
    fn damaged_files_are_rejected() {
        let bytes = serialize(&sample_entries(), &sample_blocks());
        for len in 0..bytes.len() {
            assert!(parse(&bytes[..len]).is_err(), "truncated to {len}");
        }
        for bit in 0..bytes.len() * 8 {
            let mut b = bytes.clone();
            b[bit / 8] ^= 1 << (bit % 8);
            assert!(parse(&b).is_err(), "bit {bit}");
        }
        let mut x = 0x2545_F491_4F6C_DD1Du64;
        for _ in 0..2000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let mut b = bytes.clone();
            let at = (x % b.len() as u64) as usize;
            let n = ((x >> 32) % 16) as usize;
            for k in at..(at + n).min(b.len()) {
                b[k] = (x >> (k % 56)) as u8;
            }
            if b != bytes {
                assert!(parse(&b).is_err());
            }
        }
    }
}
