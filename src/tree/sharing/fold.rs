//! `Collector::compute`: the gathered figures folded bottom-up into each directory's.
//!
//! It runs in steps: which directories are gone (`dead_dirs`), the singly-linked files'
//! sums by directory (`own_sums`), the shared ranges and the multiply-linked names that
//! still count, what each directory frees besides its files' exclusive bytes
//! (`frees::freed_here`), then one pass from the last directory to the first (`Fold`)
//! that finishes a directory's figures and hands its sums, ranges and names to its
//! parent.

use super::frees::{self, Tree};
use super::{merge, Collector, Figures, Link, Liveness, Range, Share, Sums};
use crate::tree::arena::NO_ENTRY;
use std::collections::HashMap;

impl Collector {
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
        let tree = Tree::new((0..n_dirs).map(parent).collect());
        let dead = dead_dirs(&tree, live);
        let gone = |dir: u32, entry: u32| {
            dir as usize >= dead.len() || dead[dir as usize] || (entry != NO_ENTRY && !live.entry_live(entry))
        };
        let own = self.own_sums(&dead, &gone);
        let mut ranges: Vec<Range> = if self.keep_files {
            self.ranges.iter().filter(|r| !gone(r.dir, r.entry)).copied().collect()
        } else {
            let mut taken = std::mem::take(&mut self.ranges);
            taken.retain(|r| !gone(r.dir, r.entry));
            taken
        };
        ranges.sort_unstable_by_key(|r| r.dir);
        let mut links: Vec<(u32, Link)> =
            self.links.iter().filter(|l| !gone(l.0, l.1)).map(|&(d, _, l)| (d, l)).collect();
        links.sort_unstable_by_key(|l| l.0);
        // A scan gives its references up: they become `frees`' own list in place.
        let known = if self.keep_files { self.known.clone() } else { std::mem::take(&mut self.known) };
        let freed = frees::freed_here(&tree, &self.links, known, &|d, e| !gone(d, e));
        if !self.keep_files {
            self.links = Vec::new();
        }
        let fold =
            Fold { tree: &tree, dead: &dead, own, freed, ranges, links, sets: HashMap::new(), names: HashMap::new() };
        let mut figures = fold.run(&disk);
        if let Some(p) = &self.progress {
            // Only final figures are shown; the others are still growing.
            for (d, f) in figures.by_dir.iter_mut().enumerate() {
                if !p.is_final(d as u32) {
                    *f = None;
                }
            }
            figures.pending = true;
        }
        figures
    }

    /// The singly-linked files' sums (and every name's charged bytes) by directory, none
    /// for a dead one.
    fn own_sums(&mut self, dead: &[bool], gone: &dyn Fn(u32, u32) -> bool) -> Vec<Sums> {
        let mut own = if self.keep_files { self.own.clone() } else { std::mem::take(&mut self.own) };
        own.resize(dead.len(), Sums::default());
        for &(dir, entry, s) in &self.files {
            if !gone(dir, entry) {
                own[dir as usize].add(&s);
            }
        }
        for (d, dead) in dead.iter().enumerate() {
            if *dead {
                own[d] = Sums::default();
            }
        }
        own
    }
}

/// Which directories are gone: not live themselves, or below one that is not.
fn dead_dirs(tree: &Tree, live: &dyn Liveness) -> Vec<bool> {
    let mut dead = vec![false; tree.len()];
    for d in 0..tree.len() as u32 {
        let p = tree.parent(d);
        dead[d as usize] = !live.dir_live(d) || (p != crate::tree::arena::NO_DIR && dead[p as usize]);
    }
    dead
}

/// The bottom-up pass: what is still to be handed up, from the last directory to the
/// first.
struct Fold<'a> {
    tree: &'a Tree,
    dead: &'a [bool],
    /// Sums by directory, a child's added to its parent's once it is done.
    own: Vec<Sums>,
    /// Bytes freed with each directory besides its files' exclusive ones, likewise.
    freed: Vec<u64>,
    /// Shared ranges and multiply-linked names still to be taken, sorted by directory.
    ranges: Vec<Range>,
    links: Vec<(u32, Link)>,
    /// Ranges and names handed up by done children, by directory.
    sets: HashMap<u32, Vec<(u64, u64)>>,
    names: HashMap<u32, Vec<Link>>,
}

impl Fold<'_> {
    fn run(mut self, disk: &dyn Fn(u32) -> u64) -> Figures {
        let n = self.tree.len();
        let mut figures = Figures { by_dir: vec![None; n], pending: false };
        for d in (0..n as u32).rev() {
            let mut set = self.sets.remove(&d).unwrap_or_default();
            while self.ranges.last().is_some_and(|r| r.dir == d) {
                let r = self.ranges.pop().expect("checked");
                set.push((r.start, r.end));
            }
            let mut ls = self.names.remove(&d).unwrap_or_default();
            while self.links.last().is_some_and(|l| l.0 == d) {
                ls.push(self.links.pop().expect("checked").1);
            }
            if self.dead[d as usize] {
                continue;
            }
            let set_shared = merge(&mut set);
            ls.sort_unstable_by_key(|l| (l.id.dev, l.id.ino));
            ls.dedup_by_key(|l| (l.id.dev, l.id.ino));
            figures.by_dir[d as usize] = Some(self.figures(d, set_shared, &ls, disk(d)));
            self.hand_up(d, set, ls);
        }
        figures
    }

    /// Directory `d`'s figures from its folded sums, its set shared and the names `ls`
    /// of multiply-linked files below it (each inode once); `disk` is its disk usage.
    fn figures(&self, d: u32, set_shared: u64, ls: &[Link], disk: u64) -> Share {
        let o = self.own[d as usize];
        let total = o.total + ls.iter().map(|l| l.total).sum::<u64>();
        let exclusive = o.exclusive + ls.iter().map(|l| l.exclusive).sum::<u64>();
        let unshared = o.unshared_disk + ls.iter().map(|l| l.unshared_disk).sum::<u64>();
        let rest = disk.saturating_sub(o.charged);
        let disk_once = set_shared + unshared + rest;
        let frees = o.exclusive + self.freed[d as usize];
        let frees_exact = !(o.refs_unknown || ls.iter().any(|l| l.refs_unknown));
        Share { total, exclusive, set_shared, disk_once, frees, frees_exact }
    }

    /// Hands what directory `d` gathered to its parent.
    fn hand_up(&mut self, d: u32, mut set: Vec<(u64, u64)>, mut ls: Vec<Link>) {
        let p = self.tree.parent(d);
        if p == crate::tree::arena::NO_DIR {
            return;
        }
        let o = self.own[d as usize];
        self.own[p as usize].add(&o);
        self.freed[p as usize] += self.freed[d as usize];
        if !set.is_empty() {
            self.sets.entry(p).or_default().append(&mut set);
        }
        if !ls.is_empty() {
            self.names.entry(p).or_default().append(&mut ls);
        }
    }
}
