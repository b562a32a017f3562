//! One file's extent figures, as the scanner builds them from its extent map for the
//! sharing-aware sizes (`tree/sharing/` folds them per directory). The rule is
//! `btrfs filesystem du`'s: extents flagged inline (data inside metadata), delalloc or
//! unknown (not written yet) are skipped, as are extents of length 0.
//!
//! A source that knows each shared extent itself (the bulk metadata readers: btrfs's
//! extent items, XFS's reverse map) hands it over with `add_known`, so that "frees"
//! (what deleting a directory frees) can be exact; FIEMAP knows only the shared flag
//! (`add`), and there "frees" is an estimate.

use crate::meta::Extent;
use crate::platform::Follow;
use crate::walk::reader::Reader;
use std::ffi::CStr;

/// Flags whose extents are not counted (see the module doc).
const SKIP: u32 = Extent::INLINE | Extent::DELALLOC | Extent::UNKNOWN;

/// A shared extent as a whole, where the source knows it: what deleting its last
/// reference frees.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct WholeExtent {
    /// Where the whole extent begins on disk, in bytes (btrfs: its `disk_bytenr`; XFS:
    /// the first block of a range whose blocks all have the same owners). With
    /// `disk_bytes` it names the extent: equal pairs are one extent.
    pub start: u64,
    /// Its whole length on disk, in bytes, as deleting it returns them (btrfs: its
    /// `disk_num_bytes`, compressed, with the parts no file references any longer).
    pub disk_bytes: u64,
    /// How many files reference it in the whole file system, counted as the scan meets
    /// them: each inode once (however many of its ranges or names use it), the same
    /// inode in each snapshot (subvolume) once more. 0 when the source cannot tell:
    /// then "frees" is an estimate, as with FIEMAP.
    pub refs: u32,
}

/// One file's extent figures, built by the scanner from its extent map.
#[derive(Default)]
pub struct FileExtents {
    pub total: u64,
    pub shared: u64,
    /// Shared physical ranges, `[start, end)`.
    pub ranges: Vec<(u64, u64)>,
    /// The whole extents behind the shared ranges, where the source knows them
    /// (`add_known`; one a file uses twice is here twice, the collector counts it once).
    pub known: Vec<WholeExtent>,
    /// Some shared extent came without its whole extent and reference count (`add`, or
    /// `add_known` with `refs` 0): what deleting the file's directory frees is an estimate.
    pub refs_unknown: bool,
}

impl FileExtents {
    pub fn clear(&mut self) {
        self.total = 0;
        self.shared = 0;
        self.ranges.clear();
        self.known.clear();
        self.refs_unknown = false;
    }

    /// Counts one extent of the file, as FIEMAP reports it: whether a shared one is
    /// freed with the file's directory is not known.
    pub fn add(&mut self, e: &Extent) {
        if self.count(e) {
            self.refs_unknown = true;
        }
    }

    /// Counts one extent of the file as `add` does; when it is shared, `whole` is the
    /// extent it lies in (see `WholeExtent`). Called by the bulk readers' join
    /// (`walk/bulk.rs` for XFS, `walk/join.rs` for btrfs).
    pub fn add_known(&mut self, e: &Extent, whole: WholeExtent) {
        if self.count(e) {
            self.refs_unknown |= whole.refs == 0;
            self.known.push(whole);
        }
    }

    /// Counts extent `e`; returns whether it is a shared one that was counted.
    fn count(&mut self, e: &Extent) -> bool {
        if e.flags & SKIP != 0 || e.length == 0 {
            return false;
        }
        self.total += e.length;
        if e.flags & Extent::SHARED == 0 {
            return false;
        }
        self.shared += e.length;
        self.ranges.push((e.physical, e.physical.saturating_add(e.length)));
        true
    }
}

/// Whether the sharing-aware figures are computed: `--no-shared`, neither option, or
/// `--shared` (`--by-exclusive` implies it). The decision of what the default means is
/// here, for `scan` and `browse` alike (docs/shared-extents.md, "Default").
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Sharing {
    Off,
    Auto,
    On,
}

impl Sharing {
    /// Whether `dfdu scan` reads extent maps as it goes: only with `--shared`. No source
    /// keeps the cost within the 1.3× of the plain scan a default may add: one FIEMAP per
    /// file costs 2.6–4.2×, and even the bulk sources cost more on a 1M-entry tree with a
    /// tenth of it reflink-copied (`cargo xtask bench --fs xfs|btrfs --sharing`): XFS's
    /// reverse-map listing 2.1× the CPU and 2.9× the wall time (the kernel checks every
    /// mapping against the reference-count tree, on one thread), btrfs's tree searches
    /// (with two snapshots) 1.5× the CPU. The browser shows them by default (`in_browse`).
    pub fn in_scan(self) -> bool {
        self == Sharing::On
    }

    /// Whether the browser reads extent maps after the scan, in the background: unless
    /// `--no-shared`. By default only when the scanned directory's file system can share
    /// extents (`root_shares`), so ext4 or tmpfs see no extra call; with `--shared` also
    /// for a sharing file system mounted below one that cannot.
    pub fn in_browse(self, root_shares: bool) -> bool {
        match self {
            Sharing::Off => false,
            Sharing::Auto => root_shares,
            Sharing::On => true,
        }
    }
}

/// Whether a bulk source of extent metadata serves a scan of `root`: running as root, on
/// a file system whose every file's extents the platform lists in a few calls
/// (`Reader::bulk_extents`: XFS with a reverse map). One `open` and one `fstatfs` (and a
/// look at the reverse map's presence) of the root.
pub fn bulk_source<R: Reader>(root: &CStr) -> bool {
    crate::platform::effective_uid() == Some(0)
        && R::open_path(root, Follow::Yes).is_ok_and(|d| R::bulk_extents_estimate(&d).is_some())
}
