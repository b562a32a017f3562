//! Sharing-aware sizes: what `btrfs filesystem du` reports, for every directory.
//!
//! On a file system that can share extents (reflink copies, snapshots, deduplicated
//! files), the scanner reads each regular file's extent map (`platform::file_extents_at`)
//! and hands the sink one `FileExtents` per file (`walk/extents.rs`). For a directory (its whole subtree):
//!
//! * **total** — bytes of the data extents its files reference;
//! * **exclusive** — the part of total in extents not flagged shared: what deleting the
//!   directory certainly frees;
//! * **set shared** — the union of the shared physical ranges its files reference, each
//!   byte counted once however many files (inside or outside) reference it;
//! * **disk once** — its disk usage with each shared byte counted once: set shared, plus
//!   each file's disk usage (`st_blocks`) minus its shared bytes, plus what is not a file
//!   with an extent map (directories, symlinks).
//!
//! Extents flagged inline (data inside metadata), delalloc or unknown (not written yet)
//! are skipped, as `btrfs filesystem du` skips them; extents of length 0 too. A file with
//! several names counts once per subtree (once per (dev, ino), as btrfs-progs counts an
//! inode once per argument), even when its names lie in different directories.
//!
//! # Memory
//!
//! Only shared extents keep a range: while scanning, 24 bytes per shared extent
//! reference (`(dir, start, end)`), plus 32 bytes per directory for the non-shared sums
//! and 48 bytes per multiply-linked file name. `Collector::compute` then goes bottom-up
//! (a child directory's index is always above its parent's) and keeps, for each
//! directory not yet folded into its parent, its shared ranges as a sorted, merged
//! interval list (16 bytes per disjoint range); the result is 32 bytes per directory.
//! A file system without sharing pays nothing: no extent map is read there. The browser
//! keeps each file's sums instead of folding them (40 bytes per file with data), so
//! that deletes and rescans can update the figures (`Collector::keeping_files`).

use crate::tree::arena::NO_ENTRY;
use std::collections::HashMap;

/// The four figures of one directory's subtree.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Share {
    pub total: u64,
    pub exclusive: u64,
    pub set_shared: u64,
    pub disk_once: u64,
}

/// Figures by directory index (an arena's `dir`).
#[derive(Default)]
pub struct Figures {
    by_dir: Vec<Option<Share>>,
}

impl Figures {
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
}

/// Additive sums of a directory's files (singly linked ones, or all names for `charged`).
#[derive(Clone, Copy, Default)]
struct Sums {
    total: u64,
    exclusive: u64,
    /// Disk usage minus shared bytes, per file (never below 0).
    unshared_disk: u64,
    charged: u64,
}

/// A multiply-linked file: counted once per subtree.
#[derive(Clone, Copy)]
struct Link {
    dev: u64,
    ino: u64,
    total: u64,
    exclusive: u64,
    unshared_disk: u64,
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

/// What the sink gathers during a scan.
///
/// A scan (`dfdu scan`) folds the files' figures into per-directory sums as they come
/// and computes the figures once. The browser keeps every file's figures instead
/// (`keeping_files`, 40 more bytes per file with data), so that after a delete the
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
    /// directory `dir` with its shared `ranges`; `link` is its (dev, ino) when it may have
    /// other names.
    pub fn add(&mut self, dir: u32, entry: u32, link: Option<(u64, u64)>, f: FileFigures, ranges: &[(u64, u64)]) {
        let exclusive = f.total - f.shared;
        let unshared_disk = f.disk.saturating_sub(f.shared);
        let mut sums = Sums { charged: f.charged, ..Sums::default() };
        match link {
            Some((dev, ino)) => {
                self.links.push((dir, entry, Link { dev, ino, total: f.total, exclusive, unshared_disk }))
            }
            None => {
                sums.total = f.total;
                sums.exclusive = exclusive;
                sums.unshared_disk = unshared_disk;
            }
        }
        if self.keep_files {
            self.files.push((dir, entry, sums));
        } else {
            let i = dir as usize;
            if self.own.len() <= i {
                self.own.resize(i + 1, Sums::default());
            }
            let own = &mut self.own[i];
            own.total += sums.total;
            own.exclusive += sums.exclusive;
            own.unshared_disk += sums.unshared_disk;
            own.charged += sums.charged;
        }
        self.ranges.extend(ranges.iter().map(|&(start, end)| Range { dir, entry, start, end }));
    }

    pub fn keeps_files(&self) -> bool {
        self.keep_files
    }

    /// Takes in what another collector (a rescan's) gathered.
    pub fn merge(&mut self, other: Collector) {
        let Collector { own, mut files, keep_files: _, mut ranges, mut links } = other;
        for (dir, s) in own.into_iter().enumerate() {
            if s.total | s.charged != 0 {
                files.push((dir as u32, NO_ENTRY, s));
            }
        }
        self.files.append(&mut files);
        self.ranges.append(&mut ranges);
        self.links.append(&mut links);
    }

    /// Records the file `f` found in directory `dir` (see `add`; disk = total).
    #[cfg(test)]
    fn add_file(&mut self, dir: u32, link: Option<(u64, u64)>, f: &crate::walk::extents::FileExtents) {
        let fig = FileFigures { total: f.total, shared: f.shared, disk: f.total, charged: f.total };
        self.add(dir, NO_ENTRY, link, fig, &f.ranges);
    }

    /// Folds everything bottom-up into per-directory figures for directories
    /// `0..n_dirs`; `parent(d)` is `NO_DIR` for a root, `disk(d)` the subtree's disk
    /// usage as the arena counts it. Needs every child index to be above its parent's.
    /// Directories and entries `live` says are gone (deleted, or replaced by a rescan)
    /// count nothing. A collector that keeps its files is left as it was, for the next
    /// time; any other gives up its sums and ranges (a scan computes once, and copying
    /// them would only cost memory).
    ///
    /// Disk usage with sharing counted once = set shared + Σ over files (each inode once)
    /// of their disk usage minus their shared bytes + what the subtree holds besides
    /// files whose extents were read (directories, symlinks, unreadable maps).
    pub fn compute(
        &mut self,
        n_dirs: u32,
        parent: impl Fn(u32) -> u32,
        disk: impl Fn(u32) -> u64,
        live: &dyn Liveness,
    ) -> Figures {
        let n = n_dirs as usize;
        let dead_dir = {
            let mut dead = vec![false; n];
            for d in 0..n_dirs {
                let p = parent(d);
                dead[d as usize] = !live.dir_live(d) || (p < d && dead[p as usize]);
            }
            dead
        };
        let gone = |dir: u32, entry: u32| {
            dir as usize >= n || dead_dir[dir as usize] || (entry != NO_ENTRY && !live.entry_live(entry))
        };
        let mut own = if self.keep_files { self.own.clone() } else { std::mem::take(&mut self.own) };
        own.resize(n, Sums::default());
        for &(dir, entry, s) in &self.files {
            if !gone(dir, entry) {
                let o = &mut own[dir as usize];
                o.total += s.total;
                o.exclusive += s.exclusive;
                o.unshared_disk += s.unshared_disk;
                o.charged += s.charged;
            }
        }
        for (d, dead) in dead_dir.iter().enumerate() {
            if *dead {
                own[d] = Sums::default();
            }
        }
        let mut ranges: Vec<Range> = if self.keep_files {
            self.ranges.iter().filter(|r| !gone(r.dir, r.entry)).copied().collect()
        } else {
            let mut taken = std::mem::take(&mut self.ranges);
            taken.retain(|r| !gone(r.dir, r.entry));
            taken
        };
        ranges.sort_unstable_by_key(|r| r.dir);
        let mut all_links: Vec<(u32, Link)> =
            self.links.iter().filter(|l| !gone(l.0, l.1)).map(|&(d, _, l)| (d, l)).collect();
        all_links.sort_unstable_by_key(|l| l.0);
        let mut sets: HashMap<u32, Vec<(u64, u64)>> = HashMap::new();
        let mut links: HashMap<u32, Vec<Link>> = HashMap::new();
        let mut figures = Figures { by_dir: vec![None; n] };
        for d in (0..n_dirs).rev() {
            let mut set = sets.remove(&d).unwrap_or_default();
            while ranges.last().is_some_and(|r| r.dir == d) {
                let r = ranges.pop().expect("checked");
                set.push((r.start, r.end));
            }
            let mut ls = links.remove(&d).unwrap_or_default();
            while all_links.last().is_some_and(|l| l.0 == d) {
                ls.push(all_links.pop().expect("checked").1);
            }
            if dead_dir[d as usize] {
                continue;
            }
            let set_shared = merge(&mut set);
            ls.sort_unstable_by_key(|l| (l.dev, l.ino));
            ls.dedup_by_key(|l| (l.dev, l.ino));
            let o = own[d as usize];
            let total = o.total + ls.iter().map(|l| l.total).sum::<u64>();
            let exclusive = o.exclusive + ls.iter().map(|l| l.exclusive).sum::<u64>();
            let unshared = o.unshared_disk + ls.iter().map(|l| l.unshared_disk).sum::<u64>();
            let rest = disk(d).saturating_sub(o.charged);
            let disk_once = set_shared + unshared + rest;
            figures.by_dir[d as usize] = Some(Share { total, exclusive, set_shared, disk_once });
            let p = parent(d);
            if p < n_dirs && p < d {
                let up = &mut own[p as usize];
                up.total += o.total;
                up.exclusive += o.exclusive;
                up.unshared_disk += o.unshared_disk;
                up.charged += o.charged;
                if !set.is_empty() {
                    sets.entry(p).or_default().append(&mut set);
                }
                if !ls.is_empty() {
                    links.entry(p).or_default().append(&mut ls);
                }
            }
        }
        figures
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::meta::Extent;
    use crate::tree::arena::NO_DIR;
    use crate::walk::extents::FileExtents;

    fn ext(physical: u64, length: u64, flags: u32) -> Extent {
        Extent { logical: 0, physical, length, flags }
    }

    fn file(exts: &[Extent]) -> FileExtents {
        let mut f = FileExtents::default();
        exts.iter().for_each(|e| f.add(e));
        f
    }

    #[test]
    fn merge_counts_overlaps_once() {
        let mut v = vec![(10, 20), (0, 5), (15, 30), (5, 6), (40, 41)];
        assert_eq!(merge(&mut v), 6 + 20 + 1);
        assert_eq!(v, vec![(0, 6), (10, 30), (40, 41)]);
    }

    /// Issue 25: a range inside an earlier, longer one (a partial reflink of a shared
    /// extent) leaves the longer one whole; so does one ending where it ends.
    #[test]
    fn merge_keeps_a_range_nested_in_an_earlier_one() {
        let mut v = vec![(256, 512), (0, 1024), (0, 1024), (1000, 1024), (2048, 4096), (3000, 3001)];
        assert_eq!(merge(&mut v), 1024 + 2048);
        assert_eq!(v, vec![(0, 1024), (2048, 4096)]);
    }

    #[test]
    fn inline_delalloc_unknown_and_empty_extents_are_skipped() {
        let f = file(&[
            ext(0, 100, Extent::INLINE | Extent::LAST),
            ext(0, 4096, Extent::DELALLOC),
            ext(0, 4096, Extent::UNKNOWN),
            ext(8192, 0, 0),
            ext(4096, 4096, Extent::SHARED),
            ext(65536, 8192, 0),
        ]);
        assert_eq!((f.total, f.shared, f.ranges.clone()), (12288, 4096, vec![(4096, 8192)]));
    }

    #[test]
    fn partial_overlaps_between_directories_count_once_at_the_parent() {
        // dir 0 = root, dirs 1 and 2 its children; dir 1 holds a file sharing [0, 8192),
        // dir 2 one sharing [4096, 12288) plus a private extent; a link appears in both.
        let mut c = Collector::default();
        c.add_file(1, None, &file(&[ext(0, 8192, Extent::SHARED)]));
        c.add_file(2, None, &file(&[ext(4096, 8192, Extent::SHARED), ext(1 << 20, 4096, 0)]));
        let linked = file(&[ext(2 << 20, 4096, 0)]);
        c.add_file(1, Some((1, 7)), &linked);
        // The second name: the arena charged nothing for it.
        let fig = FileFigures { total: 4096, shared: 0, disk: 4096, charged: 0 };
        c.add(2, NO_ENTRY, Some((1, 7)), fig, &linked.ranges);
        let parent = |d: u32| if d == 0 { NO_DIR } else { 0 };
        let charged = |d: u32| [8192 + 12288 + 4096, 8192 + 4096, 12288][d as usize];
        let f = c.compute(3, parent, |d| charged(d) + 4096, &AllLive);
        assert_eq!(f.get(1).map(|s| (s.total, s.exclusive, s.set_shared)), Some((12288, 4096, 8192)));
        assert_eq!(f.get(2).map(|s| (s.total, s.exclusive, s.set_shared)), Some((16384, 8192, 8192)));
        let root = f.get(0).unwrap();
        assert_eq!((root.total, root.exclusive, root.set_shared), (8192 + 12288 + 4096, 8192, 12288));
        // Disk here is what the arena charged (each file's total, the link once) plus 4096
        // for the directories themselves; sharing counted once takes the overlap off.
        assert_eq!(root.disk_once, root.set_shared + root.exclusive + 4096);
    }

    /// Liveness from two lists: dead directories and deleted entries.
    struct Gone(Vec<u32>, Vec<u32>);
    impl Liveness for Gone {
        fn dir_live(&self, dir: u32) -> bool {
            !self.0.contains(&dir)
        }
        fn entry_live(&self, entry: u32) -> bool {
            !self.1.contains(&entry)
        }
    }

    #[test]
    fn kept_files_leave_deleted_entries_and_dead_directories_out_and_take_a_rescan_in() {
        // dir 0 = root; dir 1 its child, dir 2 a child of dir 1. Entry 10 in dir 0 shares
        // [0, 8192) with entry 11 in dir 1; entry 12 in dir 2 holds 4096 private bytes.
        let mut c = Collector::keeping_files();
        let add = |c: &mut Collector, dir, entry, f: &FileExtents| {
            let fig = FileFigures { total: f.total, shared: f.shared, disk: f.total, charged: f.total };
            c.add(dir, entry, None, fig, &f.ranges);
        };
        add(&mut c, 0, 10, &file(&[ext(0, 8192, Extent::SHARED), ext(1 << 20, 4096, 0)]));
        add(&mut c, 1, 11, &file(&[ext(0, 8192, Extent::SHARED)]));
        add(&mut c, 2, 12, &file(&[ext(2 << 20, 4096, 0)]));
        let parent = |d: u32| [NO_DIR, 0, 1, 0][d as usize];
        let fig = |f: &Figures, d| f.get(d).map(|s| (s.total, s.exclusive, s.set_shared));
        let f = c.compute(3, parent, |_| 0, &Gone(vec![], vec![]));
        assert_eq!(fig(&f, 0), Some((8192 + 4096 + 8192 + 4096, 8192, 8192)));
        // Entry 10 deleted: its private and shared bytes leave the root's figures.
        let f = c.compute(3, parent, |_| 0, &Gone(vec![], vec![10]));
        assert_eq!(fig(&f, 0), Some((8192 + 4096, 4096, 8192)));
        // Directory 1 deleted (or replaced): dirs 1 and 2 count nothing and have no figures.
        let f = c.compute(3, parent, |_| 0, &Gone(vec![1], vec![]));
        assert_eq!(fig(&f, 0), Some((8192 + 4096, 4096, 8192)));
        assert_eq!((fig(&f, 1), fig(&f, 2)), (None, None));
        // A rescan replaced dir 1 by dir 3, where the file no longer shares its extent.
        let mut r = Collector::keeping_files();
        add(&mut r, 3, 13, &file(&[ext(3 << 20, 8192, 0)]));
        c.merge(r);
        let f = c.compute(4, parent, |_| 0, &Gone(vec![1], vec![]));
        assert_eq!(fig(&f, 3), Some((8192, 8192, 0)));
        assert_eq!(fig(&f, 0), Some((8192 + 4096 + 8192, 4096 + 8192, 8192)));
    }

    /// APFS clone figures (`platform/macos/attrs.rs`) as the reader would hand them on.
    #[test]
    fn clone_figures_become_extents_counted_like_fiemap_ones() {
        use crate::platform::macos::attrs::{Clones, EF_MAY_SHARE_BLOCKS, EF_SHARES_ALL_BLOCKS};
        let mib = 1u64 << 20;
        // Three full clones of one 1 MiB file (one family) and an edited clone sharing all
        // but 16 KiB with something: private bytes are exclusive; the family counts once.
        let full = Clones { private_bytes: 0, clone_id: 5, ext_flags: EF_MAY_SHARE_BLOCKS | EF_SHARES_ALL_BLOCKS };
        let edited = Clones { private_bytes: 16384, clone_id: 6, ext_flags: EF_MAY_SHARE_BLOCKS };
        let plain = Clones { private_bytes: 4096, clone_id: 0, ext_flags: 0 };
        let family_base = 1u64 << 40;
        let files = [
            (full, mib, 2u64 << 40),
            (full, mib, 3 << 40),
            (full, mib, 4 << 40),
            (edited, mib, 5 << 40),
            (plain, 4096, 6 << 40),
        ];
        let mut c = Collector::default();
        for (cl, alloc, own) in files {
            let (exts, n) = cl.extents(alloc, family_base, own);
            let mut f = FileExtents::default();
            exts[..n].iter().for_each(|e| f.add(e));
            assert_eq!(f.total, alloc);
            assert_eq!(f.total - f.shared, cl.private_bytes.min(alloc), "exclusive = private size");
            let fig = FileFigures { total: f.total, shared: f.shared, disk: alloc, charged: alloc };
            c.add(0, NO_ENTRY, None, fig, &f.ranges);
        }
        let s = c.compute(1, |_| NO_DIR, |_| 3 * mib + mib + 4096, &AllLive).get(0).unwrap();
        assert_eq!(s.total, 4 * mib + 4096);
        assert_eq!(s.exclusive, 16384 + 4096);
        // Set shared: the family's MiB once, plus the edited clone's shared part once.
        assert_eq!(s.set_shared, mib + (mib - 16384));
        assert_eq!(s.disk_once, s.set_shared + s.exclusive);
        // A private size above the allocation (compressed files) is capped by it.
        let (exts, n) = Clones { private_bytes: 1 << 30, ..plain }.extents(4096, 0, 0);
        assert_eq!((n, exts[0].length, exts[0].flags), (1, 4096, 0));
    }
}
