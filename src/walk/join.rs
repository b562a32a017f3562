//! Sharing figures from bulk metadata: the join of a file system's own extent records to
//! the files a scan found, instead of one open + extent map + close per file.
//!
//! During the scan a sink that reads in bulk keeps, for each regular file with blocks on
//! such a file system, a `BulkFile` (where it is in the sink, its tree and inode, what it
//! was charged) and no extent map is read. After the scan `Join::resolve` asks each
//! source a few wide questions and hands every file the `FileExtents` a FIEMAP would
//! have given it, name by name.
//!
//! # XFS with a reverse map (root only)
//!
//! When the scan enters such a file system at its root, the whole file system's
//! listing (`walk/bulk.rs`, `FS_IOC_GETFSMAP`) is read on a thread of its own from that
//! moment (`bulk::Listing`), beside the scan instead of before it (the scan's workers
//! used to wait for it: most of it is the kernel's look-up of every mapping in the
//! reference-count tree); after the scan each kept file gets its figures from it by
//! inode number.
//!
//! # btrfs (root only)
//!
//! 1. Each subvolume's file extent items for the inode range of the files kept, in
//!    windows (`INO_GAP`), from `platform::BtrfsTree::file_extents`.
//! 2. The data extents they reference, from the extent tree (`data_extents`, in windows
//!    of bytenrs, `BYTENR_GAP`): each one's back references.
//! 3. Shared or not, as the kernel's FIEMAP decides (`btrfs_is_data_extent_shared`):
//!    shared when the extent has two or more back references, or one for another tree or
//!    inode than the file extent item's, or when the scan itself met it from two
//!    (tree, inode, offset) references (a snapshot inside the scan); not shared when its
//!    one back reference is the item's own and the item is newer than the subvolume's
//!    last snapshot (the kernel's shortcut). What is left (one reference, older than a
//!    snapshot outside the scan) is asked of the kernel, which walks the shared tree
//!    blocks: `extent_owners` (LOGICAL_INO_V2), once per extent.
//! 4. The extent as FIEMAP reports it: `physical` is the disk address plus the offset
//!    into the extent (for a compressed extent the extent's start, as FIEMAP does),
//!    `length` the bytes the file references; inline extents are flagged inline (and so
//!    not counted, as `btrfs filesystem du` does not count them), holes skipped.
//!
//! A search that fails after the scan (the probe in `btrfs_tree` succeeded) leaves the
//! files of that tree without figures, as a file whose extent map cannot be read has
//! none. Memory: 32 bytes per file kept during the scan; while resolving, 56 bytes per
//! data extent reference and 40 per distinct data extent.
//!
//! For "frees" (`WholeExtent::refs`) the reference count is known where the kernel was
//! asked (step 3's rest); elsewhere a shared extent's count stays unknown (0), and its
//! directories' "frees" an estimate, as with FIEMAP.

use crate::meta::{BtrfsDataExtent, BtrfsExtentKind, BtrfsFileExtent, BtrfsRef, Extent};
use crate::platform::{BtrfsTree, SearchBuf};
use crate::walk::bulk::Listing;
use crate::walk::extents::{FileExtents, WholeExtent};
use crate::walk::threads::on_threads;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

/// Wanted inodes further apart than this start a new search: between them the search
/// returns every item of every inode (directory entries too), which costs more than a
/// new search.
const INO_GAP: u64 = 4096;
/// Data extents further apart than this (bytes) start a new search of the extent tree.
const BYTENR_GAP: u64 = 256 << 20;

/// One regular file whose figures come from bulk metadata.
#[derive(Clone, Copy, Debug)]
pub struct BulkFile {
    /// The sink's directory and entry of this name.
    pub dir: u32,
    pub entry: u32,
    /// The bulk source (`Join::tree`'s token).
    pub tree: u16,
    /// `LINK`: it may have other names; `DUP`: the sink charged nothing for this name.
    pub flags: u16,
    /// Its link count (with `LINK`).
    pub nlink: u32,
    pub ino: u64,
    /// Its disk usage (`st_blocks`).
    pub disk: u64,
}
const _: () = assert!(std::mem::size_of::<BulkFile>() == 32);

impl BulkFile {
    pub const LINK: u16 = 1;
    pub const DUP: u16 = 2;
}

/// The bulk sources of one scan and the files waiting for them.
#[derive(Default)]
pub struct Join {
    /// (device, its source's token if it has one).
    devs: Mutex<Vec<(u64, Option<u32>)>>,
    /// btrfs subvolumes, token = index.
    trees: Mutex<Vec<(u64, BtrfsTree)>>,
    /// XFS reverse-map listings being read beside the scan, token = `LISTING_TOKEN` +
    /// index.
    listings: Mutex<Vec<(u64, Listing)>>,
    files: Mutex<Vec<BulkFile>>,
}

/// A bulk source as opened for a device.
pub enum Source {
    Tree(BtrfsTree),
    Listing(Listing),
}

/// Tokens from here on are listings'; below, subvolumes'.
const LISTING_TOKEN: u32 = 0x8000;

/// What `Join::resolve` calls per name: the file, its (device, inode) when it may have
/// other names, its figures.
pub type Resolved<'a> = dyn FnMut(&BulkFile, Option<(u64, u64)>, &FileExtents) + 'a;

/// One data extent reference read for a kept file, as `resolve` works on it.
#[derive(Clone, Copy)]
struct Ref {
    /// Index into `resolve`'s inode groups.
    group: u32,
    flags: u32,
    /// How many (tree, inode) pairs reference its extent (0: not known; see `WholeExtent`).
    owners: u32,
    bytenr: u64,
    /// The whole extent's length on disk.
    disk_bytes: u64,
    physical: u64,
    length: u64,
    /// File offset minus the offset into the extent: the key of the kernel's back reference.
    key_offset: u64,
}
const _: () = assert!(std::mem::size_of::<Ref>() == 56);

/// `Ref` flags.
const NEWER_THAN_SNAPSHOT: u32 = 1;
const PREALLOC: u32 = 2;
const SHARED: u32 = 4;

/// One (tree, inode) of the kept files: where its references come from.
#[derive(Clone, Copy)]
struct Group {
    tree: u32,
    ino: u64,
}

impl Join {
    /// The token of device `dev`'s bulk source, opened with `open` the first time (none
    /// past the 32,768th subvolume or listing: those files get their own extent maps).
    pub fn source(&self, dev: u64, open: &mut dyn FnMut() -> Option<Source>) -> Option<u32> {
        let mut devs = self.devs.lock().unwrap();
        if let Some(&(_, t)) = devs.iter().find(|(d, _)| *d == dev) {
            return t;
        }
        let t = match open() {
            Some(Source::Tree(tree)) => {
                let mut trees = self.trees.lock().unwrap();
                (trees.len() < LISTING_TOKEN as usize).then(|| {
                    trees.push((dev, tree));
                    (trees.len() - 1) as u32
                })
            }
            Some(Source::Listing(l)) => {
                let mut listings = self.listings.lock().unwrap();
                (listings.len() < LISTING_TOKEN as usize).then(|| {
                    listings.push((dev, l));
                    LISTING_TOKEN + (listings.len() - 1) as u32
                })
            }
            None => None,
        };
        devs.push((dev, t));
        t
    }

    /// Keeps a batch of files (a directory's, at its commit).
    pub fn add(&self, batch: &mut Vec<BulkFile>) {
        self.files.lock().unwrap().append(batch);
    }

    /// Reads the metadata for every file kept, the searches on up to `threads` threads
    /// (the scan's), and calls `each(file, link, figures)` for each name, `link` being its
    /// (device, inode) when it may have other names.
    pub fn resolve(&self, threads: usize, each: &mut Resolved) {
        let mut files = std::mem::take(&mut *self.files.lock().unwrap());
        let trees = std::mem::take(&mut *self.trees.lock().unwrap());
        let listings = std::mem::take(&mut *self.listings.lock().unwrap());
        if !listings.is_empty() {
            let (listed, rest) = files.into_iter().partition(|f| u32::from(f.tree) >= LISTING_TOKEN);
            files = rest;
            resolve_listed(&listings, listed, each);
        }
        if files.is_empty() {
            return;
        }
        files.sort_unstable_by_key(|f| (f.tree, f.ino));
        let mut groups: Vec<Group> = Vec::new();
        for f in &files {
            if groups.last().is_none_or(|g| (g.tree, g.ino) != (u32::from(f.tree), f.ino)) {
                groups.push(Group { tree: u32::from(f.tree), ino: f.ino });
            }
        }
        // The searches are the kernel's CPU work (warm): no more threads than cores, as
        // the dupes readers do from the page cache (`dupes::find::read_pool`).
        let threads = threads.min(std::thread::available_parallelism().map_or(1, |n| n.get()));
        let (mut refs, failed) = read_file_extents(&trees, &groups, threads);
        // (An empty type where there is no bulk reader: `default()` is its constructor.)
        let mut buf: SearchBuf = Default::default();
        decide_shared(&trees, &groups, &mut refs, &mut buf);
        refs.sort_unstable_by_key(|r| r.group);
        let mut figures = FileExtents::default();
        let (mut at, mut g) = (0, 0usize);
        for f in &files {
            while (groups[g].tree, groups[g].ino) != (u32::from(f.tree), f.ino) {
                g += 1;
            }
            if failed.contains(&u32::from(f.tree)) {
                continue;
            }
            while refs.get(at).is_some_and(|r| (r.group as usize) < g) {
                at += 1;
            }
            let end = at + refs[at..].iter().take_while(|r| r.group as usize == g).count();
            figures.clear();
            for r in &refs[at..end] {
                let e = as_fiemap(r);
                if r.flags & SHARED != 0 {
                    let whole = WholeExtent { start: r.bytenr, disk_bytes: r.disk_bytes, refs: r.owners };
                    figures.add_known(&e, whole);
                } else {
                    figures.add(&e);
                }
            }
            let link = (f.flags & BulkFile::LINK != 0).then(|| (trees[f.tree as usize].0, f.ino));
            each(f, link, &figures);
        }
    }
}

/// The files kept for listings, each given its figures from its device's listing (in
/// inode order, one pass over each listing); a file the listing does not know (written
/// after it was read, or with data not written yet) gets none.
fn resolve_listed(listings: &[(u64, Listing)], mut files: Vec<BulkFile>, each: &mut Resolved) {
    files.sort_unstable_by_key(|f| (f.tree, f.ino));
    let mut figures = FileExtents::default();
    for one in files.chunk_by(|a, b| a.tree == b.tree) {
        let (dev, listing) = &listings[(u32::from(one[0].tree) - LISTING_TOKEN) as usize];
        let Some(map) = listing.wait() else { continue };
        let mut at = 0;
        for f in one {
            if map.fill_from(&mut at, f.ino, &mut figures) {
                let link = (f.flags & BulkFile::LINK != 0).then_some((*dev, f.ino));
                each(f, link, &figures);
            }
        }
    }
}

/// The extent FIEMAP reports for `r`.
fn as_fiemap(r: &Ref) -> Extent {
    let mut flags = 0;
    if r.flags & SHARED != 0 {
        flags |= Extent::SHARED;
    }
    Extent { logical: 0, physical: r.physical, length: r.length, flags }
}

/// Step 1: the data extent references of every group, and the trees whose search failed.
/// The groups are cut into search windows (one tree, inodes no more than `INO_GAP`
/// apart), searched on up to `threads` threads, each with its own buffer: the searches
/// are the kernel copying items out, most of what the join costs (on a 3.3M-entry btrfs
/// with two snapshots, one thread doing them after the scan made `--shared` 1.97× the
/// plain scan's wall time; on two, 1.74×). The references come out in window order, as one
/// thread would give them; one thread (`-j 1`) searches them in that order itself.
fn read_file_extents(trees: &[(u64, BtrfsTree)], groups: &[Group], threads: usize) -> (Vec<Ref>, Vec<u32>) {
    let mut windows: Vec<std::ops::Range<usize>> = Vec::new();
    let mut start = 0;
    while start < groups.len() {
        let tree = groups[start].tree;
        let mut end = start + 1;
        while end < groups.len() && groups[end].tree == tree && groups[end].ino - groups[end - 1].ino <= INO_GAP {
            end += 1;
        }
        windows.push(start..end);
        start = end;
    }
    // Each window's references, `None` where its search failed, in whatever order the
    // threads finish; put back in window order below.
    let next = AtomicUsize::new(0);
    let done: Mutex<Vec<(usize, Option<Vec<Ref>>)>> = Mutex::new(Vec::with_capacity(windows.len()));
    on_threads(threads.clamp(1, windows.len().max(1)), || {
        // (An empty type where there is no bulk reader: `default()` is its constructor.)
        let mut buf: SearchBuf = Default::default();
        while let Some(window) = windows.get(next.fetch_add(1, Ordering::Relaxed)) {
            let refs = search_window(trees, groups, window.clone(), &mut buf);
            done.lock().unwrap_or_else(|p| p.into_inner()).push((window.start, refs));
        }
    });
    let mut done = done.into_inner().unwrap_or_else(|p| p.into_inner());
    done.sort_unstable_by_key(|d| d.0);
    let mut refs = Vec::with_capacity(done.iter().filter_map(|d| d.1.as_ref()).map(Vec::len).sum());
    let mut failed = Vec::new();
    for (first, got) in done {
        match got {
            Some(mut mine) => refs.append(&mut mine),
            None => {
                let tree = groups[first].tree;
                if !failed.contains(&tree) {
                    failed.push(tree);
                }
            }
        }
    }
    (refs, failed)
}

/// The references of the groups `window` (one tree's, close inodes) from one search;
/// `None` when the search failed.
fn search_window(
    trees: &[(u64, BtrfsTree)],
    groups: &[Group],
    window: std::ops::Range<usize>,
    buf: &mut SearchBuf,
) -> Option<Vec<Ref>> {
    let t = &trees[groups[window.start].tree as usize].1;
    let (lo, hi) = (groups[window.start].ino, groups[window.end - 1].ino);
    let mut refs = Vec::new();
    let mut g = window.start;
    let result = t.file_extents(lo, hi, buf, &mut |e| {
        while g < window.end && groups[g].ino < e.ino {
            g += 1;
        }
        if g < window.end && groups[g].ino == e.ino {
            if let Some(r) = reference(g as u32, e, t.last_snapshot()) {
                refs.push(r);
            }
        }
    });
    result.is_ok().then_some(refs)
}

/// The reference a file extent item makes, as FIEMAP would report it; `None` for a hole
/// and an inline extent, which count nothing.
fn reference(group: u32, e: &BtrfsFileExtent, last_snapshot: u64) -> Option<Ref> {
    let mut r = Ref { group, flags: 0, owners: 0, bytenr: 0, disk_bytes: 0, physical: 0, length: 0, key_offset: 0 };
    match e.kind {
        // Data inside the metadata: FIEMAP flags it inline, and inline extents count
        // nothing (most small files on btrfs: not kept at all).
        BtrfsExtentKind::Inline => return None,
        BtrfsExtentKind::Prealloc => r.flags = PREALLOC,
        BtrfsExtentKind::Regular => {}
    }
    if e.disk_bytenr == 0 {
        return None;
    }
    if e.generation > last_snapshot {
        r.flags |= NEWER_THAN_SNAPSHOT;
    }
    r.bytenr = e.disk_bytenr;
    r.disk_bytes = e.disk_bytes;
    r.physical = if e.compression == 0 { e.disk_bytenr.saturating_add(e.offset) } else { e.disk_bytenr };
    r.length = e.num_bytes;
    r.key_offset = e.file_offset.wrapping_sub(e.offset);
    Some(r)
}

/// Steps 2 and 3: sets `SHARED` on each reference FIEMAP would call shared.
fn decide_shared(trees: &[(u64, BtrfsTree)], groups: &[Group], refs: &mut [Ref], buf: &mut SearchBuf) {
    // By file system, then data extent.
    let fs_of: Vec<usize> = (0..trees.len())
        .map(|i| trees.iter().position(|(_, t)| t.fs_id() == trees[i].1.fs_id()).unwrap_or(i))
        .collect();
    let fs = |r: &Ref| fs_of[groups[r.group as usize].tree as usize];
    refs.sort_unstable_by_key(|r| (fs(r), r.bytenr));
    let data = refs.len();
    let mut start = 0;
    while start < data {
        let here = fs(&refs[start]);
        let mut end = start + 1;
        while end < data && fs(&refs[end]) == here && refs[end].bytenr - refs[end - 1].bytenr <= BYTENR_GAP {
            end += 1;
        }
        let tree = &trees[here].1;
        let window = &mut refs[start..end];
        let extents = extents_of(tree, window, buf);
        for (x, same) in extents.iter().zip(by_extent(window)) {
            decide_extent(trees, groups, x.as_ref(), same, tree, buf);
        }
        start = end;
    }
}

/// The extent tree's record of each distinct data extent of `window` (sorted by
/// bytenr), in order; `None` where the search found none or failed.
fn extents_of(tree: &BtrfsTree, window: &[Ref], buf: &mut SearchBuf) -> Vec<Option<BtrfsDataExtent>> {
    let mut wanted: Vec<u64> = window.iter().map(|r| r.bytenr).collect();
    wanted.dedup();
    let mut found = vec![None; wanted.len()];
    let (lo, hi) = (wanted[0], wanted[wanted.len() - 1]);
    let mut i = 0;
    let result = tree.data_extents(lo, hi, buf, &mut |x| {
        while i < wanted.len() && wanted[i] < x.bytenr {
            i += 1;
        }
        if i < wanted.len() && wanted[i] == x.bytenr {
            found[i] = Some(*x);
        }
    });
    if result.is_err() {
        found.fill(None);
    }
    found
}

/// `window` cut into runs of references to one data extent.
fn by_extent(window: &mut [Ref]) -> impl Iterator<Item = &mut [Ref]> {
    window.chunk_by_mut(|a, b| a.bytenr == b.bytenr)
}

/// Step 3 for the references `same` to one data extent, described by `x`.
fn decide_extent(
    trees: &[(u64, BtrfsTree)],
    groups: &[Group],
    x: Option<&BtrfsDataExtent>,
    same: &mut [Ref],
    fs_tree: &BtrfsTree,
    buf: &mut SearchBuf,
) {
    let owner = |r: &Ref| {
        let g = groups[r.group as usize];
        (trees[g.tree as usize].1.tree_id(), g.ino, r.key_offset)
    };
    let first = owner(&same[0]);
    let met_twice = same.iter().any(|r| owner(r) != first);
    let verdict = match x {
        _ if met_twice => Some(true),
        Some(x) if x.backrefs >= 2 => Some(true),
        Some(&BtrfsDataExtent { first: BtrfsRef::Keyed { root, ino, .. }, .. })
            if (root, ino) != (first.0, first.1) =>
        {
            Some(true)
        }
        Some(x) if x.backrefs == 1 && same.iter().all(|r| r.flags & NEWER_THAN_SNAPSHOT != 0) => Some(false),
        _ => None,
    };
    let mut owners = 0u32;
    let shared = verdict.unwrap_or_else(|| {
        // Reached through tree blocks a snapshot may share: the kernel knows, and says
        // who references it: each (tree, inode) once.
        let mut seen: Vec<(u64, u64)> = Vec::new();
        let ok = fs_tree.extent_owners(same[0].bytenr, buf, &mut |root, ino| {
            if !seen.contains(&(root, ino)) {
                seen.push((root, ino));
            }
        });
        owners = if ok.is_ok() { seen.len().min(u32::MAX as usize) as u32 } else { 0 };
        ok.is_ok() && seen.iter().any(|&o| o != (first.0, first.1))
    });
    if shared {
        for r in same.iter_mut() {
            r.flags |= SHARED;
            r.owners = owners;
        }
    }
}
