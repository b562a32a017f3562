//! `Chunked`: the arena's storage, a growable array in fixed chunks that never move.

use std::sync::OnceLock;

/// A growable array of `T` in fixed chunks of 2^`LEAF` slots, indexed by `u32`, shared by
/// threads: chunk `i` is created once (by whoever needs it first) and never moves. Two
/// lazily created index levels above the chunks keep an empty array small.
pub struct Chunked<T, const LEAF: u32> {
    top: Box<[OnceLock<Mid<T>>]>,
}

/// The middle level of a `Chunked`: lazily created chunks.
type Mid<T> = Box<[OnceLock<Box<[T]>>]>;

impl<T: Default, const LEAF: u32> Chunked<T, LEAF> {
    const MID: u32 = (32 - LEAF) / 2;
    const TOP: u32 = 32 - LEAF - Self::MID;

    pub fn new() -> Self {
        Chunked { top: (0..1usize << Self::TOP).map(|_| OnceLock::new()).collect() }
    }

    fn leaf(&self, i: u32) -> &[T] {
        let mid = self.top[(i >> (LEAF + Self::MID)) as usize]
            .get_or_init(|| (0..1usize << Self::MID).map(|_| OnceLock::new()).collect());
        mid[((i >> LEAF) & ((1 << Self::MID) - 1)) as usize]
            .get_or_init(|| (0..1usize << LEAF).map(|_| T::default()).collect())
    }

    /// The slot for index `i`, creating its chunk if needed.
    #[inline]
    pub fn at(&self, i: u32) -> &T {
        &self.leaf(i)[(i & ((1 << LEAF) - 1)) as usize]
    }

    /// Slots `i .. i + len` as runs of slices (a run ends where a chunk does), so a
    /// caller looks each chunk up once rather than once per slot.
    pub fn runs(&self, mut i: u32, mut len: usize, f: &mut dyn FnMut(&[T])) {
        while len > 0 {
            let off = (i & ((1 << LEAF) - 1)) as usize;
            let leaf = self.leaf(i);
            let n = len.min(leaf.len() - off);
            f(&leaf[off..off + n]);
            i += n as u32;
            len -= n;
        }
    }
}

impl<T: Default, const LEAF: u32> Default for Chunked<T, LEAF> {
    fn default() -> Self {
        Self::new()
    }
}
