//! Sharing-aware sizes: what `btrfs filesystem du` reports, for every directory, and
//! what deleting it frees.
//!
//! On a file system that can share extents (reflink copies, snapshots, deduplicated
//! files), the scanner reads each regular file's extent map (`platform::file_extents_at`)
//! and hands the sink one `FileExtents` per file (`walk/extents.rs`). For a directory (its whole subtree):
//!
//! * **total** — bytes of the data extents its files reference;
//! * **exclusive** — the part of total in extents not flagged shared;
//! * **set shared** — the union of the shared physical ranges its files reference, each
//!   byte counted once however many files (inside or outside) reference it;
//! * **disk once** — its disk usage with each shared byte counted once: set shared, plus
//!   each file's disk usage (`st_blocks`) minus its shared bytes, plus what is not a file
//!   with an extent map (directories, symlinks);
//! * **frees** — what deleting it frees (`frees.rs`): the exclusive bytes of the files
//!   whose every name lies inside, plus the whole disk bytes of each shared extent whose
//!   every reference lies inside. Exact where the source knows each shared extent's
//!   reference count (`WholeExtent`); where it does not (FIEMAP) a lower bound, and
//!   frees + set shared an upper one.
//!
//! Extents flagged inline (data inside metadata), delalloc or unknown (not written yet)
//! are skipped, as `btrfs filesystem du` skips them; extents of length 0 too. A file with
//! several names counts once per subtree (once per (dev, ino), as btrfs-progs counts an
//! inode once per argument), even when its names lie in different directories.
//!
//! # Memory
//!
//! Only shared extents keep a range: while scanning, 24 bytes per shared extent
//! reference (`(dir, start, end)`), 40 more per reference whose whole extent the source
//! names (`Known`), plus 40 bytes per directory for the non-shared sums and 56 bytes per
//! multiply-linked file name. `Collector::compute` (`fold.rs`) then goes bottom-up
//! (a child directory's index is always above its parent's) and keeps, for each
//! directory not yet folded into its parent, its shared ranges as a sorted, merged
//! interval list (16 bytes per disjoint range); the result is 48 bytes per directory.
//! A file system without sharing pays nothing: no extent map is read there. The browser
//! keeps each file's sums instead of folding them (48 bytes per file with data), so
//! that deletes and rescans can update the figures (`Collector::keeping_files`).

mod fold;
mod frees;
#[cfg(test)]
mod tests;

use crate::tree::arena::NO_ENTRY;
use crate::walk::extents::WholeExtent;

/// The figures of one directory's subtree.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Share {
    pub total: u64,
    pub exclusive: u64,
    pub set_shared: u64,
    pub disk_once: u64,
    /// What deleting it frees: exact when `frees_exact`, else a lower bound (see the
    /// module doc).
    pub frees: u64,
    pub frees_exact: bool,
}

impl Share {
    /// The most deleting it can free: `frees` when exact, else frees + set shared (a
    /// shared byte is freed at most once).
    pub fn frees_most(&self) -> u64 {
        if self.frees_exact {
            self.frees
        } else {
            self.frees.saturating_add(self.set_shared)
        }
    }
}

/// Figures by directory index (an arena's `dir`).
#[derive(Default)]
pub struct Figures {
    by_dir: Vec<Option<Share>>,
    /// Some directory's figures are still being read (the browser's background fill):
    /// one without figures may get them.
    pub pending: bool,
}

/// How far a background read of the extent maps has come: directories below `limit`
/// count as final only when `done` says so (everything below them read); those made
/// later (rescans) read their own.
#[derive(Clone, Default)]
pub struct Progress {
    pub limit: u32,
    pub done: Vec<bool>,
}

impl Progress {
    fn is_final(&self, dir: u32) -> bool {
        dir >= self.limit || self.done.get(dir as usize).copied().unwrap_or(false)
    }
}

impl Figures {
    /// No figures yet, all of them to come.
    pub fn pending() -> Figures {
        Figures { by_dir: Vec::new(), pending: true }
    }

    pub fn get(&self, dir: u32) -> Option<Share> {
        self.by_dir.get(dir as usize).copied().flatten()
    }

    pub fn set(&mut self, dir: u32, s: Share) {
        let i = dir as usize;
        if self.by_dir.len() <= i {
            self.by_dir.resize(i + 1, None);
        }
        self.by_dir[i] = Some(s);
    }
}

/// One file's figures as the sink hands them to the collector.
#[derive(Clone, Copy, Default)]
pub struct FileFigures {
    pub total: u64,
    pub shared: u64,
    /// Its disk usage (`st_blocks`).
    pub disk: u64,
    /// What the arena charged for this name: its disk usage, or 0 for a further name of
    /// a file already counted.
    pub charged: u64,
    /// Some shared extent of it came without a reference count (`FileExtents::refs_unknown`).
    pub refs_unknown: bool,
}

/// A file that may have several names: its identity and how many names it has (0: not
/// known, as NT directory queries report it).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LinkId {
    pub dev: u64,
    pub ino: u64,
    pub nlink: u32,
}

/// Additive sums of a directory's files (singly linked ones, or all names for `charged`).
#[derive(Clone, Copy, Default)]
struct Sums {
    total: u64,
    exclusive: u64,
    /// Disk usage minus shared bytes, per file (never below 0).
    unshared_disk: u64,
    charged: u64,
    /// Some file's shared extents came without reference counts.
    refs_unknown: bool,
}

impl Sums {
    fn add(&mut self, s: &Sums) {
        self.total += s.total;
        self.exclusive += s.exclusive;
        self.unshared_disk += s.unshared_disk;
        self.charged += s.charged;
        self.refs_unknown |= s.refs_unknown;
    }
}

/// A multiply-linked file: counted once per subtree.
#[derive(Clone, Copy)]
struct Link {
    id: LinkId,
    total: u64,
    exclusive: u64,
    unshared_disk: u64,
    refs_unknown: bool,
}

/// One shared range of a file: the directory and entry that reference it.
#[derive(Clone, Copy)]
struct Range {
    dir: u32,
    entry: u32,
    start: u64,
    end: u64,
}
const _: () = assert!(std::mem::size_of::<Range>() == 24);

/// One file's reference to a whole shared extent, where the source names it.
#[derive(Clone, Copy)]
struct Known {
    dir: u32,
    entry: u32,
    /// Which file: the number of the `add` that brought it (singly-linked files), or
    /// `LINKED | i` for the name `links[i]` of a multiply-linked one.
    file: u32,
    whole: WholeExtent,
}
const _: () = assert!(std::mem::size_of::<Known>() == 40);

/// `Known::file` of a multiply-linked file's name: the rest is its index in `links`.
const LINKED: u32 = 1 << 31;

/// What the sink gathers during a scan.
///
/// A scan (`dfdu scan`) folds the files' figures into per-directory sums as they come
/// and computes the figures once. The browser keeps every file's figures instead
/// (`keeping_files`, 48 more bytes per file with data), so that after a delete the
/// figures can be computed again without what was deleted, and a rescan's figures can
/// replace those of the subtree it replaced (`merge`).
#[derive(Default)]
pub struct Collector {
    /// Sums by directory (when files are not kept).
    own: Vec<Sums>,
    /// With `keep_files`: (directory, entry, sums) of every singly-linked file, and the
    /// charged bytes of every name.
    files: Vec<(u32, u32, Sums)>,
    keep_files: bool,
    /// Shared ranges.
    ranges: Vec<Range>,
    /// (directory, entry, link).
    links: Vec<(u32, u32, Link)>,
    /// References to whole shared extents.
    known: Vec<Known>,
    /// How many singly-linked files brought whole extents (numbers them in `Known::file`).
    known_files: u32,
    /// While extent maps are still being read: which directories' figures are final.
    progress: Option<Progress>,
}

/// Which directories and entries are still in the tree (after deletes and rescans).
pub trait Liveness {
    fn dir_live(&self, dir: u32) -> bool;
    fn entry_live(&self, entry: u32) -> bool;
}

/// Everything is live: a scan that did not change.
#[cfg(test)]
pub struct AllLive;

#[cfg(test)]
impl Liveness for AllLive {
    fn dir_live(&self, _dir: u32) -> bool {
        true
    }
    fn entry_live(&self, _entry: u32) -> bool {
        true
    }
}

impl Collector {
    /// A collector that keeps each file's figures (see the type's doc).
    pub fn keeping_files() -> Self {
        Collector { keep_files: true, ..Collector::default() }
    }

    /// Records a file (entry `entry`, or `NO_ENTRY` for figures of no one entry) found in
    /// directory `dir` with its shared `ranges` and the whole extents `known` behind
    /// them (see `FileExtents`); `link` names it when it may have other names.
    pub fn add(
        &mut self,
        dir: u32,
        entry: u32,
        link: Option<LinkId>,
        f: FileFigures,
        ranges: &[(u64, u64)],
        known: &[WholeExtent],
    ) {
        let exclusive = f.total - f.shared;
        let unshared_disk = f.disk.saturating_sub(f.shared);
        let mut sums = Sums { charged: f.charged, ..Sums::default() };
        let file = match link {
            Some(id) => {
                let i = self.links.len() as u32;
                self.links.push((
                    dir,
                    entry,
                    Link { id, total: f.total, exclusive, unshared_disk, refs_unknown: f.refs_unknown },
                ));
                LINKED | i
            }
            None => {
                sums = Sums { total: f.total, exclusive, unshared_disk, refs_unknown: f.refs_unknown, ..sums };
                self.known_files += u32::from(!known.is_empty());
                self.known_files
            }
        };
        if self.keep_files {
            self.files.push((dir, entry, sums));
        } else {
            let i = dir as usize;
            if self.own.len() <= i {
                self.own.resize(i + 1, Sums::default());
            }
            self.own[i].add(&sums);
        }
        self.ranges.extend(ranges.iter().map(|&(start, end)| Range { dir, entry, start, end }));
        self.known.extend(known.iter().map(|&whole| Known { dir, entry, file, whole }));
    }

    pub fn keeps_files(&self) -> bool {
        self.keep_files
    }

    /// Says which directories' figures are final (`None`: all); `compute` leaves the
    /// others out.
    pub fn set_progress(&mut self, p: Option<Progress>) {
        self.progress = p;
    }

    /// Takes in what another collector (a rescan's) gathered.
    pub fn merge(&mut self, other: Collector) {
        let Collector { own, mut files, keep_files: _, mut ranges, mut links, known, known_files, progress: _ } = other;
        for (dir, s) in own.into_iter().enumerate() {
            if s.total | s.charged != 0 {
                files.push((dir as u32, NO_ENTRY, s));
            }
        }
        // The other's file numbers and link indexes come after ours.
        let (files_before, links_before) = (self.known_files, self.links.len() as u32);
        self.known.extend(known.into_iter().map(|k| {
            let file = if k.file & LINKED != 0 { k.file + links_before } else { k.file + files_before };
            Known { file, ..k }
        }));
        self.known_files += known_files;
        self.files.append(&mut files);
        self.ranges.append(&mut ranges);
        self.links.append(&mut links);
    }

    /// Records the file `f` found in directory `dir` (see `add`; disk = total).
    #[cfg(test)]
    fn add_file(&mut self, dir: u32, link: Option<LinkId>, f: &crate::walk::extents::FileExtents) {
        let fig = FileFigures {
            total: f.total,
            shared: f.shared,
            disk: f.total,
            charged: f.total,
            refs_unknown: f.refs_unknown,
        };
        self.add(dir, NO_ENTRY, link, fig, &f.ranges, &f.known);
    }
}

/// Sorts and merges `[start, end)` ranges in place (overlapping or touching ones become
/// one); returns the bytes they cover.
pub fn merge(set: &mut Vec<(u64, u64)>) -> u64 {
    set.sort_unstable();
    let mut out = 0usize;
    for i in 0..set.len() {
        let (s, e) = set[i];
        if out > 0 && s <= set[out - 1].1 {
            set[out - 1].1 = set[out - 1].1.max(e);
        } else {
            set[out] = (s, e);
            out += 1;
        }
    }
    set.truncate(out);
    set.iter().map(|&(s, e)| e - s).sum()
}
