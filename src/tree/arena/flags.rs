//! An entry's flags byte as a type: its kind (a `meta::Kind`) in the low two bits and the
//! `F_*` bits above them, stored in the top byte of the entry's word 0 (see the arena's
//! layout). A small newtype rather than a bare `u8`, so that a kind is never compared
//! with a mask by hand (`flags & 3`) and a size or id cannot be passed for flags.
//!
//! A directory's `D_*` flags are a type too (`DirFlags`): they share one atomic word
//! with the directory's count of pending work, so a bare `u32` could be a count, a
//! mask or both; the type holds only the flag bits, in their place in that word.

use crate::meta::Kind;
use std::ops::{BitOr, BitOrAssign};

/// The flags byte of one entry.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Flags(u8);

/// The low two bits: the kind.
const KIND_MASK: u8 = 3;

/// `stat` (for a file) or listing (for a directory) failed.
pub const F_ERROR: Flags = Flags(1 << 2);
/// Excluded by a pattern.
pub const F_EXCLUDED: Flags = Flags(1 << 3);
/// On another file system and not entered (`-x`).
pub const F_OTHER_FS: Flags = Flags(1 << 4);
/// A file with more than one link.
pub const F_HARDLINK: Flags = Flags(1 << 5);
/// A directory that is one of its own ancestors (a bind mount loop): not entered, not
/// counted. Both "excluded" and "other file system" bits, so every reader that skips
/// those skips a loop too (`Flags::is_loop` tells it apart).
pub const F_LOOP: Flags = Flags(F_EXCLUDED.0 | F_OTHER_FS.0);
/// A further name of a multiply-linked file already counted elsewhere.
pub const F_DUP_LINK: Flags = Flags(1 << 6);
/// Deleted by the browser: no longer part of the tree or of any total.
pub const F_REMOVED: Flags = Flags(1 << 7);

impl Flags {
    /// The flags of an entry of `kind` with no other bit set.
    pub const fn of(kind: Kind) -> Flags {
        Flags(match kind {
            Kind::File => 0,
            Kind::Dir => 1,
            Kind::Symlink => 2,
            Kind::Other => 3,
        })
    }

    /// The flags stored in an entry's top byte.
    pub const fn from_bits(bits: u8) -> Flags {
        Flags(bits)
    }

    /// The byte as stored.
    pub const fn bits(self) -> u8 {
        self.0
    }

    /// The flags in their place in an entry's word 0 (its top byte).
    pub(super) const fn in_word(self) -> u32 {
        (self.0 as u32) << 24
    }

    /// The flags of an entry's word 0.
    pub(super) const fn of_word(word: u32) -> Flags {
        Flags((word >> 24) as u8)
    }

    pub fn kind(self) -> Kind {
        match self.0 & KIND_MASK {
            0 => Kind::File,
            1 => Kind::Dir,
            2 => Kind::Symlink,
            _ => Kind::Other,
        }
    }

    pub fn is_dir(self) -> bool {
        self.kind() == Kind::Dir
    }

    /// The same flags with the kind replaced.
    pub fn with_kind(self, kind: Kind) -> Flags {
        Flags(self.0 & !KIND_MASK | Flags::of(kind).0)
    }

    /// Whether every bit of `bits` is set (`bits` holds no kind).
    pub fn contains(self, bits: Flags) -> bool {
        self.0 & bits.0 & !KIND_MASK == bits.0 & !KIND_MASK
    }

    /// Whether any bit of `bits` is set (`bits` holds no kind).
    pub fn intersects(self, bits: Flags) -> bool {
        self.0 & bits.0 & !KIND_MASK != 0
    }

    /// Whether the flags mark a directory loop (`F_LOOP`).
    pub fn is_loop(self) -> bool {
        self.contains(F_LOOP)
    }
}

impl BitOr for Flags {
    type Output = Flags;
    fn bitor(self, bits: Flags) -> Flags {
        Flags(self.0 | bits.0)
    }
}

impl BitOrAssign for Flags {
    fn bitor_assign(&mut self, bits: Flags) {
        self.0 |= bits.0;
    }
}

/// The flags of one directory: the top four bits of its pending word, in place (the
/// low 28 bits are the count of pending work, which `DirFlags` never holds).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DirFlags(u32);

/// The low bits of a directory's pending word: units of unfinished work.
pub(super) const PENDING_MASK: u32 = (1 << 28) - 1;

/// Every unit of work below is finished and the totals reported to the parent.
pub const D_DONE: DirFlags = DirFlags(1 << 28);
/// The directory itself could not be listed (or an import said so).
pub const D_READ_ERROR: DirFlags = DirFlags(1 << 29);
/// Some directory or file below had an error.
pub const D_ERROR_BELOW: DirFlags = DirFlags(1 << 30);
/// Part of a rescan: a reopened ancestor, or the rescan's new record (see `change.rs`).
pub(super) const D_RESCAN: DirFlags = DirFlags(1 << 31);

impl DirFlags {
    /// The flags of a directory's pending word (its count dropped).
    pub(super) const fn of_word(word: u32) -> DirFlags {
        DirFlags(word & !PENDING_MASK)
    }

    /// The flags in their place in the pending word (no count bits).
    pub(super) const fn in_word(self) -> u32 {
        self.0
    }

    /// Whether every bit of `bits` is set.
    pub fn contains(self, bits: DirFlags) -> bool {
        self.0 & bits.0 == bits.0
    }

    /// Whether any bit of `bits` is set.
    pub fn intersects(self, bits: DirFlags) -> bool {
        self.0 & bits.0 != 0
    }

    /// Whether the directory is done (`D_DONE`): its totals are final.
    pub fn is_done(self) -> bool {
        self.contains(D_DONE)
    }

    /// Whether the directory could not be read (`D_READ_ERROR`).
    pub fn read_error(self) -> bool {
        self.contains(D_READ_ERROR)
    }

    /// Whether something below had an error (`D_ERROR_BELOW`).
    pub fn error_below(self) -> bool {
        self.contains(D_ERROR_BELOW)
    }

    /// Whether the directory or anything below it had an error.
    pub fn any_error(self) -> bool {
        self.intersects(D_READ_ERROR | D_ERROR_BELOW)
    }
}

impl BitOr for DirFlags {
    type Output = DirFlags;
    fn bitor(self, bits: DirFlags) -> DirFlags {
        DirFlags(self.0 | bits.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_and_bits_stay_apart() {
        for kind in [Kind::File, Kind::Dir, Kind::Symlink, Kind::Other] {
            let f = Flags::of(kind) | F_ERROR | F_DUP_LINK;
            assert_eq!(f.kind(), kind);
            assert_eq!(Flags::from_bits(f.bits()), f);
            assert!(f.contains(F_ERROR) && f.intersects(F_EXCLUDED | F_DUP_LINK));
            assert!(!f.contains(F_ERROR | F_EXCLUDED) && !f.intersects(F_LOOP));
            assert_eq!(f.with_kind(Kind::Dir), Flags::of(Kind::Dir) | F_ERROR | F_DUP_LINK);
        }
        // A loop is both bits; either alone is not one.
        assert!((Flags::of(Kind::Dir) | F_LOOP).is_loop());
        assert!(!(Flags::of(Kind::Dir) | F_EXCLUDED).is_loop());
        // The kind bits never count as flags: an "other" entry (both low bits) has none.
        assert!(!Flags::of(Kind::Other).intersects(Flags::from_bits(0xff)));
    }

    #[test]
    fn dir_flags_drop_the_count() {
        // A word with every count bit set and two flags reads as just those flags.
        let f = DirFlags::of_word(PENDING_MASK | (D_DONE | D_ERROR_BELOW).in_word());
        assert_eq!(f, D_DONE | D_ERROR_BELOW);
        assert!(f.is_done() && f.error_below() && !f.read_error() && f.any_error());
        assert!(D_READ_ERROR.any_error() && !(D_DONE | D_RESCAN).any_error());
        assert!(f.intersects(D_READ_ERROR | D_ERROR_BELOW) && !f.contains(D_READ_ERROR | D_ERROR_BELOW));
        assert_eq!(DirFlags::of_word(PENDING_MASK), DirFlags::default());
        // The four flags are distinct bits above the count.
        let all = [D_DONE, D_READ_ERROR, D_ERROR_BELOW, D_RESCAN];
        assert_eq!(all.iter().fold(0, |w, f| w | f.in_word()).count_ones(), 4);
        assert!(all.iter().all(|f| f.in_word() & PENDING_MASK == 0));
    }
}
