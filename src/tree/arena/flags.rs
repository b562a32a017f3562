//! An entry's flags byte as a type: its kind (a `meta::Kind`) in the low two bits and the
//! `F_*` bits above them, stored in the top byte of the entry's word 0 (see the arena's
//! layout). A small newtype rather than a bare `u8`, so that a kind is never compared
//! with a mask by hand (`flags & 3`) and a size or id cannot be passed for flags.

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
}
