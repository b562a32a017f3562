//! Two trees in one arena, matched by path: what `dfdu diff` reports and what the
//! browser's change column shows.
//!
//! # Matching
//!
//! The two roots match each other whatever their names. Below them, a child of a matched
//! directory pair matches the child of the other side with the same name (names are
//! bytes; the comparison is bytewise) when both are directories or both are not; a
//! name whose kind changed (a file became a directory) is one removal and one addition.
//! The walk keeps a stack of matched directory pairs, never recurses, and for each pair
//! sorts the two children's names once (`O(k log k)` per directory of `k` children);
//! nothing is stored per entry beyond what the caller keeps from the events.
//!
//! # Which directories a report lists
//!
//! Every ancestor of a grown directory grew by as much, so listing all changed
//! directories would repeat one change once per level. A matched directory `D` whose size
//! changed by `Δ ≠ 0` is **listed** unless a single child explains most of it: a matched
//! child directory whose change has the same sign and more than half of `|Δ|`, or a child
//! directory that exists only on one side (added when `Δ > 0`, removed when `Δ < 0`) whose
//! size is more than half of `|Δ|` (that directory is reported as added or removed
//! instead). Files never explain a directory's change: files added, removed or resized in
//! `D` are `D`'s own change. So a 100 MB file added three levels down lists exactly that
//! directory, a removed directory lists nothing (it is in the removed list), and a
//! directory whose two subdirectories grew by the same amount is listed along with both.

use crate::meta::{Kind, Measure};
use crate::tree::arena::{self, Arena};

/// What the matching walk found; see the module doc.
pub enum Event {
    /// A matched directory pair (old dir index, new dir index), its sizes on each side,
    /// and whether a report lists it.
    Dirs { old_dir: u32, new_dir: u32, old_size: u64, new_size: u64, listed: bool },
    /// Entry `id`, a child of directory `dir` on the old side, is gone.
    Removed { dir: u32, id: u32, size: u64 },
    /// Entry `id`, a child of directory `dir` on the new side, is new.
    Added { dir: u32, id: u32, size: u64 },
    /// A matched pair of entries that are not directories (`old` and `new` are each
    /// (directory, entry)) whose sizes differ.
    Files { old: (u32, u32), new: (u32, u32), old_size: u64, new_size: u64 },
}

/// The size of entry `id` (a child) by `m`: a directory's subtree, a further name of a
/// hard-linked file nothing (it is counted under its first name).
pub fn entry_size(a: &Arena, id: u32, m: Measure) -> u64 {
    let flags = a.flags(id);
    let (disk, apparent) = if flags.is_dir() {
        let t = a.dir_totals(a.dir_of(id));
        (t.0, t.1)
    } else if flags.intersects(arena::F_DUP_LINK | arena::F_REMOVED) {
        (0, 0)
    } else {
        a.own_sizes(id)
    };
    pick(disk, apparent, m)
}

/// A directory's total by `m`.
pub fn dir_size(a: &Arena, dir: u32, m: Measure) -> u64 {
    let t = a.dir_totals(dir);
    pick(t.0, t.1, m)
}

fn pick(disk: u64, apparent: u64, m: Measure) -> u64 {
    match m {
        Measure::Disk => disk,
        Measure::Apparent => apparent,
    }
}

/// The children of one directory with their names, sorted by name: reused per directory.
#[derive(Default)]
struct Listing {
    names: Vec<u8>,
    /// (start in `names`, length, entry id), sorted by name after `fill`.
    items: Vec<(u32, u32, u32)>,
}

impl Listing {
    fn fill(&mut self, a: &Arena, dir: u32) {
        self.names.clear();
        self.items.clear();
        let Some(range) = a.children(dir) else { return };
        let mut at = a.names_at(dir);
        let mut name = Vec::new();
        for id in range {
            at = a.read_name(at, &mut name);
            if a.flags(id).contains(arena::F_REMOVED) {
                continue;
            }
            self.items.push((self.names.len() as u32, name.len() as u32, id));
            self.names.extend_from_slice(&name);
        }
        let names = &self.names;
        self.items.sort_unstable_by(|x, y| {
            names[x.0 as usize..(x.0 + x.1) as usize].cmp(&names[y.0 as usize..(y.0 + y.1) as usize])
        });
    }

    fn name(&self, k: usize) -> &[u8] {
        let (s, l, _) = self.items[k];
        &self.names[s as usize..(s + l) as usize]
    }
}

/// Walks the trees under `old_root` and `new_root` (directory indices in `a`), calling
/// `f` for every matched directory pair (parents before children) and every entry only
/// one side has (not its descendants).
pub fn walk(a: &Arena, old_root: u32, new_root: u32, m: Measure, f: &mut dyn FnMut(Event)) {
    let mut stack = vec![(old_root, new_root)];
    let (mut lo, mut ln) = (Listing::default(), Listing::default());
    while let Some((od, nd)) = stack.pop() {
        let old_size = dir_size(a, od, m);
        let new_size = dir_size(a, nd, m);
        let delta = new_size as i128 - old_size as i128;
        let mut explained = false;
        let mut explains = |child_delta: i128| {
            if child_delta.signum() == delta.signum() && child_delta.abs() * 2 > delta.abs() {
                explained = true;
            }
        };
        lo.fill(a, od);
        ln.fill(a, nd);
        let mut events = Vec::new();
        let (mut i, mut j) = (0, 0);
        while i < lo.items.len() || j < ln.items.len() {
            let ord = match (i < lo.items.len(), j < ln.items.len()) {
                (true, true) => lo.name(i).cmp(ln.name(j)),
                (true, false) => std::cmp::Ordering::Less,
                _ => std::cmp::Ordering::Greater,
            };
            let (oid, nid) = (lo.items.get(i).map(|x| x.2), ln.items.get(j).map(|x| x.2));
            match ord {
                std::cmp::Ordering::Less => {
                    let id = oid.unwrap_or(0);
                    removed(a, od, id, m, &mut explains, &mut events);
                    i += 1;
                }
                std::cmp::Ordering::Greater => {
                    let id = nid.unwrap_or(0);
                    added(a, nd, id, m, &mut explains, &mut events);
                    j += 1;
                }
                std::cmp::Ordering::Equal => {
                    let (oid, nid) = (oid.unwrap_or(0), nid.unwrap_or(0));
                    let (odir, ndir) = (a.kind(oid) == Kind::Dir, a.kind(nid) == Kind::Dir);
                    if odir && ndir {
                        let (os, ns) = (a.dir_of(oid), a.dir_of(nid));
                        explains(dir_size(a, ns, m) as i128 - dir_size(a, os, m) as i128);
                        stack.push((os, ns));
                    } else if odir != ndir {
                        removed(a, od, oid, m, &mut explains, &mut events);
                        added(a, nd, nid, m, &mut explains, &mut events);
                    } else {
                        let (old_size, new_size) = (entry_size(a, oid, m), entry_size(a, nid, m));
                        if old_size != new_size {
                            events.push(Event::Files { old: (od, oid), new: (nd, nid), old_size, new_size });
                        }
                    }
                    i += 1;
                    j += 1;
                }
            }
        }
        f(Event::Dirs { old_dir: od, new_dir: nd, old_size, new_size, listed: delta != 0 && !explained });
        for e in events {
            f(e);
        }
    }
}

fn removed(a: &Arena, dir: u32, id: u32, m: Measure, explains: &mut dyn FnMut(i128), ev: &mut Vec<Event>) {
    let size = entry_size(a, id, m);
    if a.kind(id) == Kind::Dir {
        explains(-(size as i128));
    }
    ev.push(Event::Removed { dir, id, size });
}

fn added(a: &Arena, dir: u32, id: u32, m: Measure, explains: &mut dyn FnMut(i128), ev: &mut Vec<Event>) {
    let size = entry_size(a, id, m);
    if a.kind(id) == Kind::Dir {
        explains(size as i128);
    }
    ev.push(Event::Added { dir, id, size });
}

/// Calls `f` with (directory, entry, size) for entry `id`, a child of `dir`, when it is
/// not a directory, else for every entry below it that is not one: the files of an entry
/// added or removed as a whole.
pub fn files_of(a: &Arena, dir: u32, id: u32, m: Measure, f: &mut dyn FnMut(u32, u32, u64)) {
    if a.kind(id) != Kind::Dir {
        return f(dir, id, entry_size(a, id, m));
    }
    let mut stack = vec![a.dir_of(id)];
    while let Some(d) = stack.pop() {
        for id in a.children(d).unwrap_or(0..0) {
            let flags = a.flags(id);
            if flags.contains(arena::F_REMOVED) {
                continue;
            }
            if flags.is_dir() {
                stack.push(a.dir_of(id));
            } else {
                f(d, id, entry_size(a, id, m));
            }
        }
    }
}

/// The path of directory `dir` below the root it belongs to, `.` for the root itself.
pub fn rel_dir_path(a: &Arena, dir: u32) -> Vec<u8> {
    let mut parts = Vec::new();
    let mut d = dir;
    while a.dir_parent(d) != arena::NO_DIR {
        parts.push(a.dir_name(d));
        d = a.dir_parent(d);
    }
    if parts.is_empty() {
        return b".".to_vec();
    }
    parts.reverse();
    parts.join(&b'/')
}

/// The path of child `id` of `dir` below its root.
pub fn rel_child_path(a: &Arena, dir: u32, id: u32) -> Vec<u8> {
    let mut out = if a.dir_parent(dir) == arena::NO_DIR { Vec::new() } else { rel_dir_path(a, dir) };
    let mut name = Vec::new();
    a.child_name(dir, id, &mut name);
    if !out.is_empty() {
        out.push(b'/');
    }
    out.extend_from_slice(&name);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tree::arena::{Flags, NewEntry};

    /// A root with children `(name, kind, disk bytes)`; directories get an empty listing.
    fn root(a: &Arena, name: &[u8]) -> u32 {
        let e = a.reserve_entries(1).unwrap();
        a.write_entry(e, &NewEntry { name: b"", flags: Flags::of(Kind::Dir), ..Default::default() }, 0);
        let d = a.new_dir(e, arena::NO_DIR, 0, 0).unwrap();
        a.set_root_name(d, name);
        d
    }

    fn list(a: &Arena, dir: u32, kids: &[(&[u8], Kind, u64)]) -> Vec<u32> {
        let bytes: u64 = kids.iter().map(|k| arena::name_cost(k.0.len())).sum();
        let first = a.reserve_entries(kids.len() as u32).unwrap();
        let names_at = a.reserve_names(bytes).unwrap();
        a.set_layout(dir, first, names_at);
        let mut at = names_at;
        let mut dirs = Vec::new();
        for (k, &(name, kind, size)) in kids.iter().enumerate() {
            let e = NewEntry { name, flags: Flags::of(kind), disk_bytes: size, apparent_bytes: size };
            a.write_entry(first + k as u32, &e, at);
            at += arena::name_cost(name.len()) as u32;
            if kind == Kind::Dir {
                dirs.push(a.new_dir(first + k as u32, dir, 0, 0).unwrap());
            } else {
                a.add_here(dir, size, size, 1);
            }
        }
        a.publish_children(dir, first, kids.len() as u32);
        dirs
    }

    fn listed(a: &Arena, o: u32, n: u32) -> Vec<(Vec<u8>, i128)> {
        let mut out = Vec::new();
        walk(a, o, n, Measure::Disk, &mut |e| {
            if let Event::Dirs { new_dir, old_size, new_size, listed: true, .. } = e {
                out.push((rel_dir_path(a, new_dir), new_size as i128 - old_size as i128));
            }
        });
        out.sort();
        out
    }

    #[test]
    fn only_the_deepest_explaining_directory_is_listed() {
        let a = Arena::new();
        let (o, n) = (root(&a, b"old"), root(&a, b"new"));
        let d = Kind::Dir;
        let f = Kind::File;
        let od = list(&a, o, &[(b"a", d, 0), (b"gone", d, 0), (b"x", f, 512)]);
        let nd = list(&a, n, &[(b"a", d, 0), (b"x", f, 512)]);
        let ob = list(&a, od[0], &[(b"b", d, 0)]);
        let nb = list(&a, nd[0], &[(b"b", d, 0)]);
        list(&a, ob[0], &[(b"f", f, 1024)]);
        list(&a, nb[0], &[(b"f", f, 1024), (b"big", f, 1 << 20)]);
        list(&a, od[1], &[(b"g", f, 4096)]);
        assert_eq!(listed(&a, o, n), vec![(b"a/b".to_vec(), 1 << 20)]);
        let mut removed = Vec::new();
        walk(&a, o, n, Measure::Disk, &mut |e| {
            if let Event::Removed { dir, id, size } = e {
                removed.push((rel_child_path(&a, dir, id), size));
            }
        });
        assert_eq!(removed, vec![(b"gone".to_vec(), 4096)]);
    }

    /// Issue 25: two subdirectories explaining exactly half each do not explain their
    /// parent (listed with both); one block more for one of them does. Both signs.
    #[test]
    fn a_half_and_half_change_is_listed_and_one_block_more_is_not() {
        let (d, f) = (Kind::Dir, Kind::File);
        for (s1_bytes, parent_listed) in [(4096u64, true), (4608, false)] {
            let a = Arena::new();
            let (o, n) = (root(&a, b"old"), root(&a, b"new"));
            let od = list(&a, o, &[(b"d", d, 0)]);
            let nd = list(&a, n, &[(b"d", d, 0)]);
            let os = list(&a, od[0], &[(b"s1", d, 0), (b"s2", d, 0)]);
            let ns = list(&a, nd[0], &[(b"s1", d, 0), (b"s2", d, 0)]);
            list(&a, os[0], &[(b"f", f, 512)]);
            list(&a, os[1], &[(b"f", f, 512)]);
            list(&a, ns[0], &[(b"f", f, 512 + s1_bytes)]);
            list(&a, ns[1], &[(b"f", f, 512 + 4096)]);
            let both = (s1_bytes + 4096) as i128;
            let mut want = vec![(b"d/s1".to_vec(), s1_bytes as i128), (b"d/s2".to_vec(), 4096)];
            if parent_listed {
                want.insert(0, (b"d".to_vec(), both));
            }
            assert_eq!(listed(&a, o, n), want, "grown by {s1_bytes} and 4096");
            let shrunk: Vec<(Vec<u8>, i128)> = want.iter().map(|(p, c)| (p.clone(), -c)).collect();
            assert_eq!(listed(&a, n, o), shrunk, "shrunk by {s1_bytes} and 4096");
        }
    }

    /// Every event of a walk as (kind, path, size), sorted.
    fn events(a: &Arena, o: u32, n: u32) -> Vec<(&'static str, Vec<u8>, u64)> {
        let mut out = Vec::new();
        walk(a, o, n, Measure::Disk, &mut |e| match e {
            Event::Dirs { new_dir, old_size, new_size, listed, .. } => {
                let word = if listed { "listed" } else { "matched" };
                out.push((word, rel_dir_path(a, new_dir), new_size.abs_diff(old_size)));
            }
            Event::Removed { dir, id, size } => out.push(("removed", rel_child_path(a, dir, id), size)),
            Event::Added { dir, id, size } => out.push(("added", rel_child_path(a, dir, id), size)),
            Event::Files { new: (dir, id), old_size, new_size, .. } => {
                out.push(("file", rel_child_path(a, dir, id), new_size.abs_diff(old_size)))
            }
        });
        out.sort();
        out
    }

    /// A subdirectory that shrank does not explain a parent that grew, however big its
    /// change: the parent's own files grew, so the parent is listed (and so is the child).
    #[test]
    fn a_child_that_shrank_does_not_explain_a_parent_that_grew() {
        let (d, f) = (Kind::Dir, Kind::File);
        let a = Arena::new();
        let (o, n) = (root(&a, b"old"), root(&a, b"new"));
        let od = list(&a, o, &[(b"d", d, 0)]);
        let nd = list(&a, n, &[(b"d", d, 0)]);
        let os = list(&a, od[0], &[(b"f", f, 512), (b"s", d, 0)]);
        let ns = list(&a, nd[0], &[(b"f", f, 512 + 10240), (b"s", d, 0)]);
        list(&a, os[0], &[(b"g", f, 8192)]);
        list(&a, ns[0], &[(b"g", f, 1024)]);
        assert_eq!(listed(&a, o, n), vec![(b"d".to_vec(), 3072), (b"d/s".to_vec(), -7168)]);
    }

    /// A name whose kind changed (a file became a directory) is one removal and one
    /// addition, and the new directory is not entered as a match.
    #[test]
    fn a_file_that_became_a_directory_is_removed_and_added() {
        let (d, f) = (Kind::Dir, Kind::File);
        let a = Arena::new();
        let (o, n) = (root(&a, b"old"), root(&a, b"new"));
        list(&a, o, &[(b"keep", f, 512), (b"x", f, 4096)]);
        let nx = list(&a, n, &[(b"keep", f, 512), (b"x", d, 0)]);
        list(&a, nx[0], &[(b"inside", f, 8192)]);
        let want =
            vec![("added", b"x".to_vec(), 8192), ("matched", b".".to_vec(), 4096), ("removed", b"x".to_vec(), 4096)];
        assert_eq!(events(&a, o, n), want);
    }

    /// Entries deleted in the browser are left out of the matching, and the names after
    /// them still belong to their own entries.
    #[test]
    fn deleted_entries_are_skipped_and_the_names_after_them_kept() {
        let (d, f) = (Kind::Dir, Kind::File);
        let a = Arena::new();
        let (o, n) = (root(&a, b"old"), root(&a, b"new"));
        let os = list(&a, o, &[(b"a", f, 512), (b"b", f, 1024), (b"c", d, 0)]);
        let ns = list(&a, n, &[(b"a", f, 512), (b"b", f, 1024), (b"c", d, 0)]);
        list(&a, os[0], &[(b"in", f, 2048)]);
        list(&a, ns[0], &[(b"in", f, 2048)]);
        let new_a = a.children(n).unwrap().start;
        assert!(a.remove(n, new_a), "a leaves the new side");
        // The root lost a file of its own: that is its change, so it is listed.
        let want = vec![("listed", b".".to_vec(), 512), ("matched", b"c".to_vec(), 0), ("removed", b"a".to_vec(), 512)];
        assert_eq!(events(&a, o, n), want);
    }
}
