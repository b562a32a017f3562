//! One file's extent figures, as the scanner builds them from its extent map for the
//! sharing-aware sizes (`tree/sharing.rs` folds them per directory). The rule is
//! `btrfs filesystem du`'s: extents flagged inline (data inside metadata), delalloc or
//! unknown (not written yet) are skipped, as are extents of length 0.

use crate::meta::Extent;

/// Flags whose extents are not counted (see the module doc).
const SKIP: u32 = Extent::INLINE | Extent::DELALLOC | Extent::UNKNOWN;

/// One file's extent figures, built by the scanner from its extent map.
#[derive(Default)]
pub struct FileExtents {
    pub total: u64,
    pub shared: u64,
    /// Shared physical ranges, `[start, end)`.
    pub ranges: Vec<(u64, u64)>,
}

impl FileExtents {
    pub fn clear(&mut self) {
        self.total = 0;
        self.shared = 0;
        self.ranges.clear();
    }

    /// Counts one extent of the file.
    pub fn add(&mut self, e: &Extent) {
        if e.flags & SKIP != 0 || e.length == 0 {
            return;
        }
        self.total += e.length;
        if e.flags & Extent::SHARED != 0 {
            self.shared += e.length;
            self.ranges.push((e.physical, e.physical.saturating_add(e.length)));
        }
    }
}
