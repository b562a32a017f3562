//! Extent figures for a whole file system at once, joined to the scan by inode number
//! (`--shared` on XFS with `rmapbt`, as root).
//!
//! Asking each file for its extent map costs an `openat`, an `FS_IOC_FIEMAP` and a `close`
//! per file. Where the platform can list every file's extents in one pass
//! (`Reader::bulk_extents`: XFS's reverse map, a few large calls), the scan reads that
//! listing once per device into an `ExtentMap` and looks each file up in it by inode
//! number; the figures are the same (the listing's shared flags are exact, see
//! `platform/linux/fsmap.rs`), the per-file calls are gone.
//!
//! The listing covers the whole file system, the scan maybe a small part of it, so it is
//! read only when it pays (`Bulk::after`): at once when the scan entered the device at its
//! root (it will see the whole file system, excludes aside); otherwise after the scan asked
//! `FILES_PER_INODE_IN_USE` files one by one per inode in use there, a bound that keeps the
//! worst case within about twice the cheaper path's cost. A file the listing does not
//! know (created after it was read, or with data not written yet) is asked on its own.
//!
//! Each shared extent comes as a whole (a stretch the same files share throughout) with
//! the number of files sharing it, so "frees" is exact on this path
//! (`FileExtents::add_known`).
//!
//! Memory: while the listing is read, 16 bytes per extent not shared and 32 per shared
//! one; then 24 bytes per file with data and 24 per shared extent, for the rest of the
//! scan.

use super::extents::{FileExtents, WholeExtent};
use super::reader::Reader;
use crate::meta::{Errno, Extent};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock};

/// One file of the listing: the bytes of its extents not shared, and where its shared
/// ones start in `ExtentMap::shared` (they end where the next file's start).
struct Row {
    ino: u64,
    plain: u64,
    shared_at: usize,
}

/// One shared extent of a file: its physical range and how many files share it.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
struct Shared {
    start: u64,
    end: u64,
    files: u32,
}

/// Every file's extent figures on one file system, by inode number.
pub struct ExtentMap {
    rows: Vec<Row>,
    shared: Vec<Shared>,
}

impl ExtentMap {
    /// Reads the listing of `dir`'s file system.
    pub fn read<R: Reader>(dir: &R::Dir) -> Result<ExtentMap, Errno> {
        Self::build(|each| R::bulk_extents(dir, each))
    }

    /// Builds the map from a listing that hands over `(inode, extent, files sharing it)`
    /// in any order.
    pub fn build(
        list: impl FnOnce(&mut dyn FnMut(u64, &Extent, u32)) -> Result<(), Errno>,
    ) -> Result<ExtentMap, Errno> {
        let mut plain: Vec<(u64, u64)> = Vec::new();
        let mut shared: Vec<(u64, Shared)> = Vec::new();
        list(&mut |ino, e, files| {
            // The same extents count as in a file's own map (`FileExtents::add`).
            let mut one = FileExtents::default();
            one.add(e);
            if one.shared > 0 {
                shared.push((ino, Shared { start: e.physical, end: e.physical + one.shared, files }));
            } else if one.total > 0 {
                plain.push((ino, one.total));
            }
        })?;
        plain.sort_unstable();
        shared.sort_unstable();
        Ok(Self::fold(&plain, &shared))
    }

    /// One row per inode from the two sorted lists.
    fn fold(plain: &[(u64, u64)], shared: &[(u64, Shared)]) -> ExtentMap {
        let mut map = ExtentMap { rows: Vec::new(), shared: Vec::with_capacity(shared.len()) };
        let (mut p, mut s) = (0, 0);
        loop {
            let ino = match (plain.get(p), shared.get(s)) {
                (Some(a), Some(b)) => a.0.min(b.0),
                (Some(a), None) => a.0,
                (None, Some(b)) => b.0,
                (None, None) => break,
            };
            let mut row = Row { ino, plain: 0, shared_at: map.shared.len() };
            while let Some(&(_, len)) = plain.get(p).filter(|r| r.0 == ino) {
                row.plain += len;
                p += 1;
            }
            while let Some(&(_, one)) = shared.get(s).filter(|r| r.0 == ino) {
                map.shared.push(one);
                s += 1;
            }
            map.rows.push(row);
        }
        map.rows.shrink_to_fit();
        map
    }

    /// Puts the figures of inode `ino` into `f`; `false` when the listing has no data
    /// extent of it.
    pub fn fill(&self, ino: u64, f: &mut FileExtents) -> bool {
        let Ok(i) = self.rows.binary_search_by_key(&ino, |r| r.ino) else { return false };
        self.fill_row(i, f);
        true
    }

    /// `fill` for inodes asked in ascending order: `at` is where the last one was found
    /// (start at 0), and each look-up goes on from there.
    pub fn fill_from(&self, at: &mut usize, ino: u64, f: &mut FileExtents) -> bool {
        *at += self.rows[(*at).min(self.rows.len())..].partition_point(|r| r.ino < ino);
        if self.rows.get(*at).is_none_or(|r| r.ino != ino) {
            return false;
        }
        self.fill_row(*at, f);
        true
    }

    fn fill_row(&self, i: usize, f: &mut FileExtents) {
        let row = &self.rows[i];
        let end = self.rows.get(i + 1).map_or(self.shared.len(), |r| r.shared_at);
        f.clear();
        f.total = row.plain;
        for one in &self.shared[row.shared_at..end] {
            let length = one.end - one.start;
            let e = Extent { logical: 0, physical: one.start, length, flags: Extent::SHARED };
            f.add_known(&e, WholeExtent { start: one.start, disk_bytes: length, refs: one.files });
        }
    }
}

/// A device's listing read on a thread of its own while the scan goes on (when the scan
/// entered the device at its root: `lists_at_once`); its files wait in the join
/// (`walk/join.rs`) and get their figures from it after the scan. Where no thread can
/// start, the listing is read when the join asks for it.
pub struct Listing {
    state: Mutex<Reading>,
}

enum Reading {
    Started(std::thread::JoinHandle<Option<ExtentMap>>),
    /// Not started yet, or its thread could not start: read by `wait` itself.
    Held(std::sync::Arc<Mutex<Option<ReadFn>>>),
    Done,
}

type ReadFn = Box<dyn FnOnce() -> Option<ExtentMap> + Send>;

impl Listing {
    /// Starts reading the listing of `dir`'s file system, on a handle of its own (`dir`
    /// opened again); `None` when that cannot be opened.
    pub fn start<R: Reader>(dir: &R::Dir) -> Option<Listing> {
        let own = R::open_at(dir, c".", crate::platform::Follow::No).ok()?;
        let read: ReadFn = Box::new(move || ExtentMap::read::<R>(&own).ok());
        // `spawn` consumes its closure even when it fails: the reading waits in a slot
        // both sides can reach, and whoever takes it first runs it.
        let slot = std::sync::Arc::new(Mutex::new(Some(read)));
        let theirs = slot.clone();
        let spawned = std::thread::Builder::new().spawn(move || {
            let read = theirs.lock().unwrap_or_else(|p| p.into_inner()).take();
            read.and_then(|r| r())
        });
        let state = match spawned {
            Ok(h) => Reading::Started(h),
            Err(_) => Reading::Held(slot),
        };
        Some(Listing { state: Mutex::new(state) })
    }

    /// The map, once read (waiting for its thread); `None` when the listing failed.
    /// Only the first call gets it.
    pub fn wait(&self) -> Option<ExtentMap> {
        let state = std::mem::replace(&mut *self.state.lock().unwrap_or_else(|p| p.into_inner()), Reading::Done);
        match state {
            Reading::Started(h) => h.join().ok().flatten(),
            Reading::Held(slot) => slot.lock().unwrap_or_else(|p| p.into_inner()).take().and_then(|r| r()),
            Reading::Done => None,
        }
    }
}

/// Whether the scan reads the listing of `dir`'s device beside itself and joins its files
/// to it after (`Listing`): where the listing exists and the scan entered the device at
/// its root (`whole`), or the test aid forces the listing.
pub fn lists_at_once<R: Reader>(dir: &R::Dir, whole: impl FnOnce() -> bool) -> bool {
    match forced() {
        Some(false) => false,
        Some(true) => R::bulk_extents_estimate(dir).is_some(),
        None => R::bulk_extents_estimate(dir).is_some() && whole(),
    }
}

/// Files the scan asks one by one, per inode in use on the device, before it reads the
/// listing instead (see the module doc and docs/shared-extents.md for the measurement).
const FILES_PER_INODE_IN_USE: f64 = 0.25;

/// One device's listing: whether and when to read it, and the map once read.
pub struct Bulk {
    /// Files asked one by one so far on this device.
    asked: AtomicU64,
    /// How many files are asked one by one before the listing is read (`u64::MAX`: never).
    after: u64,
    /// The map, `None` when the listing failed (not root, or no reverse map after all).
    map: OnceLock<Option<ExtentMap>>,
}

/// How the test aid `DFDU_DEBUG_EXTENTS` forces the choice: `fiemap` (each file asked on
/// its own) or `bulk` (the listing read at once wherever it exists).
fn forced() -> Option<bool> {
    static KNOB: OnceLock<Option<bool>> = OnceLock::new();
    *KNOB.get_or_init(|| match std::env::var("DFDU_DEBUG_EXTENTS").as_deref() {
        Ok("fiemap") => Some(false),
        Ok("bulk") => Some(true),
        _ => None,
    })
}

impl Bulk {
    /// The plan for a device first met in directory `dir`: `whole` says whether the scan
    /// entered the device at its root.
    fn new<R: Reader>(dir: &R::Dir, whole: impl FnOnce() -> bool) -> Bulk {
        let after = match R::bulk_extents_estimate(dir) {
            _ if lists_at_once::<R>(dir, whole) => 0,
            Some(in_use) if forced().is_none() => (in_use as f64 * FILES_PER_INODE_IN_USE) as u64,
            _ => u64::MAX,
        };
        Bulk { asked: AtomicU64::new(0), after, map: OnceLock::new() }
    }

    /// The map to look a file up in, reading it (once; other workers wait for it) when
    /// its time came; `None` while the file is to be asked on its own.
    pub fn map<R: Reader>(&self, dir: &R::Dir) -> Option<&ExtentMap> {
        if let Some(m) = self.map.get() {
            return m.as_ref();
        }
        if self.after == u64::MAX || self.asked.fetch_add(1, Ordering::Relaxed) < self.after {
            return None;
        }
        self.map.get_or_init(|| ExtentMap::read::<R>(dir).ok()).as_ref()
    }
}

/// The scan's plans by device (a handful at most, so a list).
#[derive(Default)]
pub struct Devices {
    by_dev: Mutex<Vec<(u64, std::sync::Arc<Bulk>)>>,
}

impl Devices {
    /// The plan for device `dev`, made on first use from `dir` (a directory on it).
    pub fn get<R: Reader>(&self, dev: u64, dir: &R::Dir, whole: impl FnOnce() -> bool) -> std::sync::Arc<Bulk> {
        let mut by_dev = self.by_dev.lock().unwrap();
        if let Some((_, b)) = by_dev.iter().find(|(d, _)| *d == dev) {
            return b.clone();
        }
        let b = std::sync::Arc::new(Bulk::new::<R>(dir, whole));
        by_dev.push((dev, b.clone()));
        b
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ext(physical: u64, length: u64, flags: u32) -> (Extent, u32) {
        (Extent { logical: 0, physical, length, flags }, if flags & Extent::SHARED != 0 { 2 } else { 0 })
    }

    #[test]
    fn each_inode_gets_its_own_sums_and_shared_ranges_whatever_the_order() {
        let list = vec![
            (9, ext(0, 100, Extent::SHARED)),
            (5, ext(1000, 10, 0)),
            (9, ext(500, 7, 0)),
            (5, ext(2000, 20, Extent::SHARED)),
            (7, ext(3000, 4096, Extent::DELALLOC)),
            (9, ext(200, 50, Extent::SHARED)),
        ];
        let map = ExtentMap::build(|each| {
            for (ino, (e, files)) in &list {
                each(*ino, e, *files);
            }
            Ok(())
        })
        .unwrap();
        let mut f = FileExtents::default();
        assert!(map.fill(5, &mut f));
        assert_eq!((f.total, f.shared, f.ranges.clone()), (30, 20, vec![(2000, 2020)]));
        assert_eq!(f.known, vec![WholeExtent { start: 2000, disk_bytes: 20, refs: 2 }]);
        assert!(!f.refs_unknown);
        assert!(map.fill(9, &mut f));
        assert_eq!((f.total, f.shared, f.ranges.clone()), (157, 150, vec![(0, 100), (200, 250)]));
        // Only a skipped (delalloc) extent: not in the listing, asked on its own.
        assert!(!map.fill(7, &mut f));
        assert!(!map.fill(6, &mut f));
    }

    #[test]
    fn a_failed_listing_is_its_error() {
        assert!(ExtentMap::build(|_| Err(Errno::NOTSUP)).is_err());
    }
}
