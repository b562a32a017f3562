//! `dfdu dupes --dirs`: directories whose whole trees are identical — the same names, the
//! same structure, and for each file the same content (the file groups `find` formed) —
//! reported instead of the files inside them.
//!
//! # How
//!
//! Every file gets a content id: its group's index when it is in one, else an id of its
//! inode (two names of one inode have one content). Tokens are handed out parents first,
//! so one pass from the last token to the first sees every child before its parent: a
//! directory's signature is BLAKE3 over its entries sorted by name, each as (name, file
//! and content id, or directory and signature). A directory is never a duplicate when it
//! or anything below it holds an entry the scan did not keep (`Found::incomplete`: an
//! empty file, a symlink, a file outside the size limits, an excluded, unreadable or
//! other-file-system entry): what was not seen cannot be compared. Nor is one whose tree
//! holds no byte of data (empty directories are not duplicates). Equal signatures are a
//! group; a directory whose parent is itself in a group is reported with its parent, not
//! on its own, so no partial match of a reported tree is listed.

use super::find::Group;
use super::sink::{Found, ARGS_DIR, NO_DIR};
use std::collections::HashMap;

/// Directories with identical trees.
pub struct DirGroup {
    /// Bytes of data in one of the trees.
    pub size: u64,
    /// Directory tokens, in path order, and their paths.
    pub dirs: Vec<u32>,
    pub paths: Vec<Vec<u8>>,
}

impl DirGroup {
    pub fn wasted(&self) -> u64 {
        self.size.saturating_mul(self.dirs.len() as u64 - 1)
    }

    /// The group as the output prints file groups: its directories' paths, the bytes of
    /// one tree, every copy but one reclaimable. Its members are directory tokens, not
    /// files: for printing only.
    pub fn as_group(&self) -> Group {
        let n = self.dirs.len();
        Group {
            size: self.size,
            members: self.dirs.clone(),
            paths: self.paths.clone(),
            layout_of: (0..n).collect(),
            devs: vec![0; n],
        }
    }
}

/// A content id per file of `found` (index into `Found::files`).
fn content_ids(found: &Found, groups: &[Group]) -> Vec<u64> {
    let mut of_inode: HashMap<(u64, u64), u64> = HashMap::new();
    for (gi, g) in groups.iter().enumerate() {
        for &m in &g.members {
            let f = &found.files[m as usize];
            of_inode.insert((f.dev, f.ino), gi as u64);
        }
    }
    let mut next = groups.len() as u64;
    found
        .files
        .iter()
        .map(|f| {
            *of_inode.entry((f.dev, f.ino)).or_insert_with(|| {
                next += 1;
                next - 1
            })
        })
        .collect()
}

/// What one directory's tree comes to.
#[derive(Clone, Copy, Default)]
struct Tree {
    sig: [u8; 32],
    size: u64,
    /// Something below was not kept by the scan: never a duplicate.
    incomplete: bool,
}

/// Signatures of every directory (`Tree` per token), children before parents.
fn trees(found: &Found, groups: &[Group]) -> Vec<Tree> {
    let ids = content_ids(found, groups);
    let n = found.dirs.len();
    // Entries per directory: (name, 0 file / 1 directory, id or token).
    let mut entries: Vec<Vec<(&[u8], u8, u64)>> = vec![Vec::new(); n];
    for (i, f) in found.files.iter().enumerate() {
        if f.dir != ARGS_DIR {
            entries[f.dir as usize].push((found.file_name(f), 0, i as u64));
        }
    }
    let mut out = vec![Tree::default(); n];
    for &d in &found.incomplete {
        out[d as usize].incomplete = true;
    }
    for d in (0..n).rev() {
        let parent = found.dirs[d].parent;
        let mut list = std::mem::take(&mut entries[d]);
        list.sort_unstable();
        let mut h = blake3::Hasher::new();
        let mut tree = out[d];
        for (name, kind, x) in list {
            h.update(&(name.len() as u64).to_le_bytes());
            h.update(name);
            h.update(&[kind]);
            if kind == 0 {
                let f = &found.files[x as usize];
                h.update(&ids[x as usize].to_le_bytes());
                tree.size += f.size;
            } else {
                let child = out[x as usize];
                h.update(&child.sig);
                tree.size += child.size;
                tree.incomplete |= child.incomplete;
            }
        }
        tree.sig = *h.finalize().as_bytes();
        out[d] = tree;
        if parent != NO_DIR && d != ARGS_DIR as usize {
            entries[parent as usize].push((found.dir_name(d as u32), 1, d as u64));
        }
    }
    out
}

/// The groups of identical directory trees, largest waste first (then by first path).
pub fn dir_groups(found: &Found, groups: &[Group]) -> Vec<DirGroup> {
    let trees = trees(found, groups);
    let mut by_sig: HashMap<[u8; 32], Vec<u32>> = HashMap::new();
    for (d, t) in trees.iter().enumerate() {
        if d != ARGS_DIR as usize && !t.incomplete && t.size > 0 {
            by_sig.entry(t.sig).or_default().push(d as u32);
        }
    }
    let dup: std::collections::HashSet<u32> =
        by_sig.values().filter(|v| v.len() >= 2).flat_map(|v| v.iter().copied()).collect();
    let mut out = Vec::new();
    for (sig, dirs) in by_sig {
        let parent_dup = |d: &u32| dup.contains(&found.dirs[*d as usize].parent);
        let mut dirs: Vec<(Vec<u8>, u32)> = dirs
            .into_iter()
            .filter(|d| !parent_dup(d))
            .map(|d| {
                let mut p = Vec::new();
                found.dir_path(d, &mut p);
                (p, d)
            })
            .collect();
        if dirs.len() < 2 {
            continue;
        }
        dirs.sort();
        let size = trees[dirs[0].1 as usize].size;
        let _ = sig;
        out.push(DirGroup {
            size,
            dirs: dirs.iter().map(|d| d.1).collect(),
            paths: dirs.into_iter().map(|d| d.0).collect(),
        });
    }
    out.sort_by(|x, y| y.wasted().cmp(&x.wasted()).then_with(|| x.paths[0].cmp(&y.paths[0])));
    out
}
