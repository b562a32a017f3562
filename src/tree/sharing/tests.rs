//! The sharing figures' unit tests: the interval merge, the extent rule, the fold, and
//! what deleting frees.

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
    let id = LinkId { dev: 1, ino: 7, nlink: 2 };
    c.add_file(1, Some(id), &linked);
    // The second name: the arena charged nothing for it.
    let fig = FileFigures { total: 4096, shared: 0, disk: 4096, charged: 0, refs_unknown: false };
    c.add(2, NO_ENTRY, Some(id), fig, &linked.ranges, &[]);
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
        let fig =
            FileFigures { total: f.total, shared: f.shared, disk: f.total, charged: f.total, refs_unknown: false };
        c.add(dir, entry, None, fig, &f.ranges, &[]);
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
        let fig = FileFigures { total: f.total, shared: f.shared, disk: alloc, charged: alloc, refs_unknown: false };
        c.add(0, NO_ENTRY, None, fig, &f.ranges, &[]);
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

/// A shared extent as a bulk source names it: `len` bytes at `start`, `refs` files.
fn whole(start: u64, len: u64, refs: u32) -> WholeExtent {
    WholeExtent { start, disk_bytes: len, refs }
}

/// A file with one private extent of `private` bytes and a shared reference to each of
/// `shared` (the whole extent, all of it referenced).
fn known_file(private: u64, shared: &[WholeExtent]) -> FileExtents {
    let mut f = FileExtents::default();
    f.add(&ext(1 << 50, private, 0));
    for w in shared {
        f.add_known(&ext(w.start, w.disk_bytes, Extent::SHARED), *w);
    }
    f
}

/// The tree of the frees tests: 0 the root, 1 and 2 its children, 3 a child of 1.
fn tree4(d: u32) -> u32 {
    [NO_DIR, 0, 0, 1][d as usize]
}

fn frees_of(f: &Figures, d: u32) -> (u64, bool) {
    f.get(d).map(|s| (s.frees, s.frees_exact)).unwrap()
}

/// Issue 28.4: an extent is freed with the lowest directory holding every reference to
/// it, and with each directory above; one with a reference outside the scan never is.
#[test]
fn frees_counts_an_extent_where_all_its_references_lie() {
    let (x, y, z) = (whole(1 << 20, 131072, 2), whole(2 << 20, 65536, 2), whole(3 << 20, 8192, 3));
    let mut c = Collector::default();
    c.add_file(3, None, &known_file(4096, &[x, z]));
    c.add_file(1, None, &known_file(4096, &[x, y, z]));
    c.add_file(2, None, &known_file(4096, &[y]));
    let f = c.compute(4, tree4, |_| 0, &AllLive);
    // Dir 3 holds one of x's two references: only its private bytes go.
    assert_eq!(frees_of(&f, 3), (4096, true));
    assert_eq!(frees_of(&f, 1), (2 * 4096 + 131072, true));
    assert_eq!(frees_of(&f, 2), (4096, true));
    // The root holds both of y's too; z has a third reference nobody saw.
    assert_eq!(frees_of(&f, 0), (3 * 4096 + 131072 + 65536, true));
    assert_eq!(f.get(0).unwrap().exclusive, 3 * 4096);
}

/// A file that references one extent twice (two cloned ranges of it) is one reference.
#[test]
fn frees_counts_a_file_once_however_often_it_uses_an_extent() {
    let x = whole(1 << 20, 131072, 2);
    let mut twice = known_file(0, &[x]);
    twice.add_known(&ext(x.start, 4096, Extent::SHARED), x);
    let mut c = Collector::default();
    c.add_file(1, None, &twice);
    c.add_file(2, None, &known_file(0, &[x]));
    let f = c.compute(4, tree4, |_| 0, &AllLive);
    assert_eq!((frees_of(&f, 1), frees_of(&f, 0)), ((0, true), (131072, true)));
}

/// A multiply-linked file is freed where all its names lie, and only if the scan saw
/// as many names as it has; so are the extents it references.
#[test]
fn frees_counts_a_linked_file_where_all_its_names_lie() {
    let x = whole(1 << 20, 131072, 2);
    let linked = known_file(4096, &[x]);
    let mut c = Collector::default();
    c.add_file(3, Some(LinkId { dev: 1, ino: 7, nlink: 2 }), &linked);
    c.add_file(2, Some(LinkId { dev: 1, ino: 7, nlink: 2 }), &linked);
    c.add_file(1, None, &known_file(0, &[x]));
    // A file of three names, two seen: never freed.
    c.add_file(3, Some(LinkId { dev: 1, ino: 8, nlink: 3 }), &known_file(8192, &[]));
    c.add_file(3, Some(LinkId { dev: 1, ino: 8, nlink: 3 }), &known_file(8192, &[]));
    let f = c.compute(4, tree4, |_| 0, &AllLive);
    assert_eq!(f.get(3).unwrap().exclusive, 4096 + 8192, "exclusive counts names, as btrfs-progs does");
    assert_eq!(frees_of(&f, 3), (0, true));
    assert_eq!(frees_of(&f, 1), (0, true));
    assert_eq!(frees_of(&f, 0), (4096 + 131072, true));
}

/// With FIEMAP (no reference counts) frees is a lower bound, and frees + set shared the
/// most it can be; a directory without shared extents knows exactly.
#[test]
fn frees_is_an_estimate_where_reference_counts_are_not_known() {
    let mut c = Collector::default();
    c.add_file(3, None, &file(&[ext(0, 8192, Extent::SHARED), ext(1 << 20, 4096, 0)]));
    c.add_file(2, None, &file(&[ext(2 << 20, 4096, 0)]));
    let linked = file(&[ext(16384, 4096, Extent::SHARED)]);
    c.add_file(1, Some(LinkId { dev: 1, ino: 9, nlink: 1 }), &linked);
    let f = c.compute(4, tree4, |_| 0, &AllLive);
    assert_eq!(frees_of(&f, 2), (4096, true));
    let s3 = f.get(3).unwrap();
    assert_eq!((s3.frees, s3.frees_exact, s3.frees_most()), (4096, false, 4096 + 8192));
    // Dir 1: the estimate comes up from dir 3 and from the linked file of its own.
    let s0 = f.get(0).unwrap();
    assert_eq!((s0.frees, s0.frees_exact, s0.frees_most()), (8192, false, 8192 + 8192 + 4096));
    let mut c = Collector::default();
    c.add_file(3, Some(LinkId { dev: 1, ino: 9, nlink: 1 }), &linked);
    let f = c.compute(4, tree4, |_| 0, &AllLive);
    assert_eq!((frees_of(&f, 3), frees_of(&f, 2)), ((0, false), (0, true)));
}

/// The browser's collector after a rescan: the rescan's references and those kept
/// before are different files, so an extent referenced once from each is freed with
/// their common ancestor.
#[test]
fn frees_after_a_merge_tells_the_files_of_both_collectors_apart() {
    let x = whole(1 << 20, 131072, 2);
    let mut c = Collector::keeping_files();
    let add = |c: &mut Collector, dir, entry| {
        let f = known_file(0, &[x]);
        let fig =
            FileFigures { total: f.total, shared: f.shared, disk: f.total, charged: f.total, refs_unknown: false };
        c.add(dir, entry, None, fig, &f.ranges, &f.known);
    };
    add(&mut c, 1, 10);
    let mut r = Collector::keeping_files();
    add(&mut r, 2, 11);
    c.merge(r);
    let f = c.compute(4, tree4, |_| 0, &AllLive);
    assert_eq!((frees_of(&f, 1), frees_of(&f, 0)), ((0, true), (131072, true)));
    // Entry 11 deleted: one reference left in the scan of two the extent had, so it
    // is not counted as freed (the figure waits for a rescan to learn the new count).
    let f = c.compute(4, tree4, |_| 0, &Gone(vec![], vec![11]));
    assert_eq!(frees_of(&f, 0), (0, true));
}
