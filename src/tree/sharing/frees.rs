//! What deleting a directory frees (the "frees" figure of `sharing/mod.rs`).
//!
//! A file is freed by deleting a directory when all its names lie inside it; a shared
//! extent when all the files referencing it do. Each file and each extent therefore has
//! a home: the lowest directory holding all of them (the lowest common ancestor of its
//! names', or its referencing files', homes), and deleting a directory frees exactly
//! what has its home inside. So frees is additive once homes are known: the fold adds
//! each directory's `freed_here` to its parent's, as it adds the other sums.
//!
//! A file whose names are not all in the scan (its link count is higher, or unknown)
//! has no home, nor has an extent with such a file, with more references than the scan
//! saw, or without a reference count: none of them is freed by any directory. Singly-
//! linked files' exclusive bytes are in the fold's sums already; here go the exclusive
//! bytes of multiply-linked files and the whole disk bytes of extents.

use super::{Known, Link, LINKED};
use crate::tree::arena::NO_DIR;
use std::collections::HashMap;

/// The directory tree as parents and depths, for lowest common ancestors.
pub(super) struct Tree {
    parent: Vec<u32>,
    depth: Vec<u32>,
}

impl Tree {
    /// From every directory's parent (`NO_DIR` for a root); a child's index is above its
    /// parent's, and a parent that is not is taken for none.
    pub fn new(parent: Vec<u32>) -> Tree {
        let mut depth = vec![0u32; parent.len()];
        for d in 0..parent.len() {
            let p = parent[d];
            if (p as usize) < d {
                depth[d] = depth[p as usize] + 1;
            }
        }
        Tree { parent, depth }
    }

    pub fn parent(&self, d: u32) -> u32 {
        let p = self.parent[d as usize];
        if p < d {
            p
        } else {
            NO_DIR
        }
    }

    pub fn len(&self) -> usize {
        self.parent.len()
    }

    /// The lowest directory holding both `a` and `b`, or `NO_DIR` (different roots, or
    /// either is `NO_DIR`).
    pub fn lca(&self, mut a: u32, mut b: u32) -> u32 {
        while a != b {
            if a == NO_DIR || b == NO_DIR {
                return NO_DIR;
            }
            if self.depth[a as usize] >= self.depth[b as usize] {
                a = self.parent(a);
            } else {
                b = self.parent(b);
            }
        }
        a
    }
}

/// A multiply-linked file's names as the scan found them.
#[derive(Clone, Copy)]
struct Names {
    seen: u32,
    nlink: u32,
    home: u32,
    exclusive: u64,
}

/// Bytes freed with each directory `d` that are not in its singly-linked files' sums:
/// multiply-linked files and whole extents whose home is `d`. `live(dir, entry)` says
/// whether a name still counts.
pub(super) fn freed_here(
    tree: &Tree,
    links: &[(u32, u32, Link)],
    known: Vec<Known>,
    live: &dyn Fn(u32, u32) -> bool,
) -> Vec<u64> {
    let mut here = vec![0u64; tree.len()];
    let homes = link_homes(tree, links, live);
    for n in homes.values() {
        if n.home != NO_DIR {
            here[n.home as usize] += n.exclusive;
        }
    }
    // Every live reference; a file's several references to one extent count once.
    // `Ref` is as large as `Known`, so the list is made where `known` was (no copy).
    let mut refs: Vec<Ref> = known
        .into_iter()
        .filter(|k| live(k.dir, k.entry))
        .map(|k| {
            let (file, home) = if k.file & LINKED != 0 {
                let id = links[(k.file & !LINKED) as usize].2.id;
                ((id.dev, id.ino), homes.get(&(id.dev, id.ino)).map_or(NO_DIR, |n| n.home))
            } else {
                ((u64::MAX, u64::from(k.file)), k.dir)
            };
            Ref { extent: (k.whole.start, k.whole.disk_bytes), refs: k.whole.refs, file, home }
        })
        .collect();
    refs.sort_unstable_by_key(|r| (r.extent, r.file));
    refs.dedup_by_key(|r| (r.extent, r.file));
    for group in refs.chunk_by(|a, b| a.extent == b.extent) {
        let refs_all = group[0].refs;
        let agreed = group.iter().all(|r| r.refs == refs_all);
        if !agreed || refs_all == 0 || group.len() != refs_all as usize {
            continue;
        }
        let home = group.iter().skip(1).fold(group[0].home, |h, r| tree.lca(h, r.home));
        if home != NO_DIR {
            here[home as usize] += group[0].extent.1;
        }
    }
    here
}

/// One file's reference to a whole extent, for grouping by extent.
#[derive(Clone, Copy)]
struct Ref {
    /// (start, disk bytes): the extent's identity.
    extent: (u64, u64),
    /// Its reference count as the source gave it.
    refs: u32,
    /// The file: (dev, ino) of a multiply-linked one, else `(u64::MAX, its number)`.
    file: (u64, u64),
    /// Where the file is freed (`NO_DIR`: nowhere).
    home: u32,
}
const _: () = assert!(std::mem::size_of::<Ref>() == std::mem::size_of::<Known>());

/// Each multiply-linked file's home: the lowest directory holding all its names, or
/// `NO_DIR` when the scan did not see them all.
fn link_homes(tree: &Tree, links: &[(u32, u32, Link)], live: &dyn Fn(u32, u32) -> bool) -> HashMap<(u64, u64), Names> {
    let mut names: HashMap<(u64, u64), Names> = HashMap::new();
    for &(dir, _, l) in links.iter().filter(|l| live(l.0, l.1)) {
        names
            .entry((l.id.dev, l.id.ino))
            .and_modify(|n| {
                n.seen += 1;
                n.home = tree.lca(n.home, dir);
            })
            .or_insert(Names { seen: 1, nlink: l.id.nlink, home: dir, exclusive: l.exclusive });
    }
    for n in names.values_mut() {
        if n.nlink == 0 || n.seen != n.nlink {
            n.home = NO_DIR;
        }
    }
    names
}
