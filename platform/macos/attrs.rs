//! The pure half of the macOS reader: decoding the buffer `getattrlistbulk(2)` fills.
//!
//! No system calls and no `unsafe`: this file is plain Rust over a byte slice, so it is
//! compiled and unit-tested on every platform (`cargo test` on Linux runs the tests below
//! against hand-built buffers). `platform/macos/dir.rs` makes the call and hands the bytes here.
//!
//! # Buffer layout (getattrlist(2), getattrlistbulk(2), XNU `bsd/vfs/vfs_attrlist.c`)
//!
//! A batch is `count` entry groups back to back. One group is:
//!
//! * a `u32` total length of the group, padding included; the next group starts that many
//!   bytes further on;
//! * the `attribute_set_t` (five `u32` bitmaps: common, volume, directory, file, fork) of
//!   the attributes actually returned for this entry (`ATTR_CMN_RETURNED_ATTRS`);
//! * a `u32` error number when `ATTR_CMN_ERROR` is in the layout: always right after the
//!   returned set, whatever its bit position;
//! * the other common attributes in ascending bit order, then the directory attributes
//!   (directories only) or the file attributes (everything else), also in bit order. Each
//!   value takes a multiple of 4 bytes and is only 4-byte aligned, 64-bit ones included,
//!   so every value is read unaligned, byte by byte;
//! * variable-length data after the fixed part. The name's `attrreference_t` (`i32`
//!   offset relative to the reference itself, `u32` length counting the trailing NUL)
//!   points into it.
//!
//! Which attributes take space: with `FSOPT_PACK_INVAL_ATTRS` (what dfdu asks for) every
//! requested attribute has its slot, and the returned set says which slots hold real
//! values; without it only the returned attributes are packed. [`Request::pack_invalid`]
//! selects the rule, so an attribute a file system lacks never shifts what follows it.
//!
//! Nothing in the buffer is trusted: every value is bounds-checked against its group and
//! every group against the buffer. A buffer that does not hold what it claims is a
//! [`Malformed`] error, never a panic and never a read outside the slice.

use crate::meta::{Extent, Kind, Meta, Timespec};
use std::ffi::CStr;

/// `attribute_set_t`, and the five bitmaps of `struct attrlist`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct AttrSet {
    pub common: u32,
    pub vol: u32,
    pub dir: u32,
    pub file: u32,
    pub fork: u32,
}

/// `struct attrlist.bitmapcount`.
pub const ATTR_BIT_MAP_COUNT: u16 = 5;
/// Option bit: pack every requested attribute, valid or not.
pub const FSOPT_PACK_INVAL_ATTRS: u64 = 0x0000_0008;

pub const ATTR_CMN_NAME: u32 = 0x0000_0001;
pub const ATTR_CMN_DEVID: u32 = 0x0000_0002;
pub const ATTR_CMN_OBJTYPE: u32 = 0x0000_0008;
pub const ATTR_CMN_MODTIME: u32 = 0x0000_0400;
pub const ATTR_CMN_CHGTIME: u32 = 0x0000_0800;
pub const ATTR_CMN_ACCTIME: u32 = 0x0000_1000;
pub const ATTR_CMN_FLAGS: u32 = 0x0004_0000;
pub const ATTR_CMN_FILEID: u32 = 0x0200_0000;
pub const ATTR_CMN_ERROR: u32 = 0x2000_0000;
pub const ATTR_CMN_RETURNED_ATTRS: u32 = 0x8000_0000;

pub const ATTR_DIR_LINKCOUNT: u32 = 0x0000_0001;
pub const ATTR_DIR_MOUNTSTATUS: u32 = 0x0000_0004;
pub const ATTR_DIR_ALLOCSIZE: u32 = 0x0000_0008;
pub const ATTR_DIR_DATALENGTH: u32 = 0x0000_0020;

pub const ATTR_FILE_LINKCOUNT: u32 = 0x0000_0001;
pub const ATTR_FILE_ALLOCSIZE: u32 = 0x0000_0004;
pub const ATTR_FILE_DATALENGTH: u32 = 0x0000_0200;

// Extended common attributes: they live in the fork bitmap (`getattrlistbulk` always
// sets `FSOPT_ATTR_CMN_EXTENDED`) and are packed after the directory or file
// attributes, for every kind of entry (XNU `attr_pack_common_extended`).
/// `off_t`: bytes of the file not shared with a clone (APFS), what deleting it frees.
pub const ATTR_CMNEXT_PRIVATESIZE: u32 = 0x0000_0008;
/// `u64`: the clone family: full clones of one file share it (a clone that was written
/// to gets a new one).
pub const ATTR_CMNEXT_CLONEID: u32 = 0x0000_0100;
/// `u64`: the `EF_*` flags below.
pub const ATTR_CMNEXT_EXT_FLAGS: u32 = 0x0000_0200;

/// `EF_*` (`sys/stat.h`): the file may share blocks with another file.
#[cfg(test)]
pub const EF_MAY_SHARE_BLOCKS: u64 = 0x0000_0001;
/// The file shares all of its blocks with another file (an unmodified clone).
pub const EF_SHARES_ALL_BLOCKS: u64 = 0x0000_0040;

/// `ATTR_DIR_MOUNTSTATUS` bit: something is mounted on this directory.
pub const DIR_MNTSTATUS_MNTPOINT: u32 = 0x0000_0001;
/// `st_flags` / `ATTR_CMN_FLAGS` bit of an APFS firmlink (macOS 10.15+).
pub const SF_FIRMLINK: u32 = 0x0080_0000;

/// `fsobj_type_t` values (`sys/vnode.h`).
pub const VREG: u32 = 1;
pub const VDIR: u32 = 2;
pub const VLNK: u32 = 5;

/// Names longer than this (bytes, without the NUL) are rejected: APFS and HFS+ allow 255
/// UTF-16 units, at most 765 bytes of UTF-8, and MAXPATHLEN is 1024.
const NAME_MAX_BYTES: usize = 1023;
/// The smallest group: its length and the returned set.
const GROUP_HEADER_BYTES: usize = 4 + 20;

/// What dfdu asks `getattrlistbulk` for, and how it is packed.
#[derive(Clone, Copy, Debug)]
pub struct Request {
    pub attrs: AttrSet,
    /// `FSOPT_PACK_INVAL_ATTRS`: every requested attribute has a slot.
    pub pack_invalid: bool,
}

/// Everything `stat` would tell the scanner, plus the flags that say whether the listed
/// attributes describe what opening the entry would reach (mount points and firmlinks).
pub const REQUEST: Request = Request {
    attrs: AttrSet {
        common: ATTR_CMN_RETURNED_ATTRS
            | ATTR_CMN_NAME
            | ATTR_CMN_ERROR
            | ATTR_CMN_DEVID
            | ATTR_CMN_OBJTYPE
            | ATTR_CMN_MODTIME
            | ATTR_CMN_CHGTIME
            | ATTR_CMN_ACCTIME
            | ATTR_CMN_FLAGS
            | ATTR_CMN_FILEID,
        vol: 0,
        dir: ATTR_DIR_LINKCOUNT | ATTR_DIR_MOUNTSTATUS | ATTR_DIR_ALLOCSIZE | ATTR_DIR_DATALENGTH,
        file: ATTR_FILE_LINKCOUNT | ATTR_FILE_ALLOCSIZE | ATTR_FILE_DATALENGTH,
        fork: 0,
    },
    pack_invalid: true,
};

/// `REQUEST` plus the APFS clone attributes, for sharing-aware figures (`--shared`).
pub const REQUEST_CLONES: Request = Request {
    attrs: AttrSet { fork: ATTR_CMNEXT_PRIVATESIZE | ATTR_CMNEXT_CLONEID | ATTR_CMNEXT_EXT_FLAGS, ..REQUEST.attrs },
    pack_invalid: true,
};

/// One file's metadata and clone attributes through `getattrlist(2)`, where
/// `ATTR_CMN_ERROR` is not valid (it belongs to `getattrlistbulk`).
pub const REQUEST_ONE_CLONES: Request = Request {
    attrs: AttrSet { common: REQUEST_CLONES.attrs.common & !ATTR_CMN_ERROR, ..REQUEST_CLONES.attrs },
    pack_invalid: true,
};

/// A field the parser fills; which one a slot holds decides how many bytes it takes.
#[derive(Clone, Copy, Debug)]
enum Field {
    Dev,
    ObjType,
    Mtime,
    Ctime,
    Atime,
    Flags,
    FileId,
    LinkCount,
    MountStatus,
    AllocSize,
    DataLength,
    PrivateSize,
    CloneId,
    ExtFlags,
}

/// Common attributes after the name, in ascending bit order (the packing order).
const COMMON_SLOTS: &[(u32, Field)] = &[
    (ATTR_CMN_DEVID, Field::Dev),
    (ATTR_CMN_OBJTYPE, Field::ObjType),
    (ATTR_CMN_MODTIME, Field::Mtime),
    (ATTR_CMN_CHGTIME, Field::Ctime),
    (ATTR_CMN_ACCTIME, Field::Atime),
    (ATTR_CMN_FLAGS, Field::Flags),
    (ATTR_CMN_FILEID, Field::FileId),
];
const DIR_SLOTS: &[(u32, Field)] = &[
    (ATTR_DIR_LINKCOUNT, Field::LinkCount),
    (ATTR_DIR_MOUNTSTATUS, Field::MountStatus),
    (ATTR_DIR_ALLOCSIZE, Field::AllocSize),
    (ATTR_DIR_DATALENGTH, Field::DataLength),
];
const FILE_SLOTS: &[(u32, Field)] = &[
    (ATTR_FILE_LINKCOUNT, Field::LinkCount),
    (ATTR_FILE_ALLOCSIZE, Field::AllocSize),
    (ATTR_FILE_DATALENGTH, Field::DataLength),
];

/// Extended common attributes, in bit order, after the directory or file ones.
const EXTENDED_SLOTS: &[(u32, Field)] = &[
    (ATTR_CMNEXT_PRIVATESIZE, Field::PrivateSize),
    (ATTR_CMNEXT_CLONEID, Field::CloneId),
    (ATTR_CMNEXT_EXT_FLAGS, Field::ExtFlags),
];

const fn bits_of(slots: &[(u32, Field)]) -> u32 {
    let mut bits = 0;
    let mut i = 0;
    while i < slots.len() {
        bits |= slots[i].0;
        i += 1;
    }
    bits
}

/// Attributes this parser knows the size of; a layout holding any other bit cannot be
/// walked.
const KNOWN: AttrSet = AttrSet {
    common: bits_of(COMMON_SLOTS) | ATTR_CMN_NAME | ATTR_CMN_ERROR | ATTR_CMN_RETURNED_ATTRS,
    vol: 0,
    dir: bits_of(DIR_SLOTS),
    file: bits_of(FILE_SLOTS),
    fork: bits_of(EXTENDED_SLOTS),
};
const _: () = assert!(REQUEST.attrs.common & !KNOWN.common == 0);
const _: () = assert!(REQUEST_CLONES.attrs.fork & !KNOWN.fork == 0);
const _: () = assert!(REQUEST.attrs.dir & !KNOWN.dir == 0);
const _: () = assert!(REQUEST.attrs.file & !KNOWN.file == 0);

/// Attributes without which the listing cannot stand in for a `stat` of the entry.
const NEEDED_COMMON: u32 =
    ATTR_CMN_DEVID | ATTR_CMN_OBJTYPE | ATTR_CMN_MODTIME | ATTR_CMN_CHGTIME | ATTR_CMN_ACCTIME | ATTR_CMN_FILEID;
const NEEDED_DIR: u32 = ATTR_DIR_LINKCOUNT | ATTR_DIR_MOUNTSTATUS | ATTR_DIR_ALLOCSIZE | ATTR_DIR_DATALENGTH;
const NEEDED_FILE: u32 = ATTR_FILE_LINKCOUNT | ATTR_FILE_ALLOCSIZE | ATTR_FILE_DATALENGTH;

/// Why a buffer could not be decoded. Entries before the bad one were delivered.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Malformed {
    /// A group, a value or a name reaches past the end of the data.
    Truncated,
    /// A group claims a length too small to hold even its header.
    GroupLength,
    /// An attribute that was not asked for, or one this parser cannot size.
    Unexpected,
    /// A name that is missing, empty, too long, not NUL-terminated or with a NUL inside.
    BadName,
}

/// What the listing says about one entry.
#[derive(Clone, Copy, Debug)]
pub enum Status {
    /// Everything a `stat` of the entry would give.
    Complete(Meta),
    /// The caller must `stat` the entry: an attribute is missing, or the entry is a mount
    /// point, whose listed attributes describe the directory underneath the mount.
    NeedsStat,
    /// The kernel could not get this entry's attributes (`ATTR_CMN_ERROR`). The reader
    /// lets the scanner `stat` such an entry, which reports the error the way GNU du
    /// would; the number itself is kept for tests and debugging.
    Failed(#[allow(dead_code)] i32),
}

/// One decoded entry; `name` borrows the buffer.
#[derive(Clone, Copy, Debug)]
pub struct Entry<'a> {
    pub name: &'a CStr,
    /// The file id (`st_ino`), or 0 when the listing did not return it.
    pub ino: u64,
    pub status: Status,
    /// A regular file's clone figures, when they were asked for and returned.
    pub clones: Option<Clones>,
}

/// What APFS says about a regular file's sharing with its clones.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Clones {
    /// Bytes not shared with a clone (`ATTR_CMNEXT_PRIVATESIZE`).
    pub private_bytes: u64,
    /// The clone family (`ATTR_CMNEXT_CLONEID`), 0 when not returned.
    pub clone_id: u64,
    /// `EF_*` flags (`ATTR_CMNEXT_EXT_FLAGS`), 0 when not returned.
    pub ext_flags: u64,
}

impl Clones {
    /// Whether the file shares all its data with the other files of its clone family,
    /// so that the family's data is counted once.
    pub fn full_clone(&self) -> bool {
        self.clone_id != 0 && self.ext_flags & EF_SHARES_ALL_BLOCKS != 0
    }

    /// The file's figures as extents, for the same accounting as FIEMAP's
    /// (`walk/extents.rs`, `tree/sharing.rs`): of its `alloc_bytes`, the private bytes are
    /// one unshared extent (exclusive: freed by deleting it), the rest one extent flagged
    /// shared. APFS does not say where the shared blocks are, so the shared extent gets a
    /// made-up address: for a full clone, `family_base` (the same for every file of its
    /// clone family, which then counts once in "set shared"); for a file that shares only
    /// part of its blocks, `own_base` (unique to the file: its shared bytes are counted
    /// once per file, an upper bound). The caller hands out bases at least `alloc_bytes`
    /// apart. Returns the extents and how many of them are used.
    pub fn extents(&self, alloc_bytes: u64, family_base: u64, own_base: u64) -> ([Extent; 2], usize) {
        let private = self.private_bytes.min(alloc_bytes);
        let shared = alloc_bytes - private;
        let base = if self.full_clone() { family_base } else { own_base };
        let mut out = [Extent { logical: 0, physical: 0, length: 0, flags: 0 }; 2];
        let mut n = 0;
        if private > 0 {
            out[n] = Extent { logical: 0, physical: own_base, length: private, flags: 0 };
            n += 1;
        }
        if shared > 0 {
            out[n] = Extent { logical: private, physical: base, length: shared, flags: Extent::SHARED };
            n += 1;
        }
        (out, n)
    }
}

impl Entry<'_> {
    /// The metadata the scanner may use instead of a `stat`, if there is any.
    pub fn meta(&self) -> Option<&Meta> {
        match &self.status {
            Status::Complete(m) => Some(m),
            Status::NeedsStat | Status::Failed(_) => None,
        }
    }
}

/// Decodes the `count` groups at the start of `buf` (what one `getattrlistbulk` call
/// returned), calling `each` for every entry except `.` and `..`, in buffer order.
pub fn parse_batch<'a>(
    buf: &'a [u8],
    count: usize,
    req: &Request,
    each: &mut dyn FnMut(Entry<'a>),
) -> Result<(), Malformed> {
    let mut pos = 0usize;
    for _ in 0..count {
        let len = Cursor { buf, pos }.u32()? as usize;
        if len < GROUP_HEADER_BYTES {
            return Err(Malformed::GroupLength);
        }
        let end = pos.checked_add(len).ok_or(Malformed::Truncated)?;
        let group = buf.get(pos..end).ok_or(Malformed::Truncated)?;
        if let Some(entry) = parse_group(group, req)? {
            each(entry);
        }
        pos = end;
    }
    Ok(())
}

/// Values read from one group; `returned` says which are real.
#[derive(Default)]
struct Raw {
    dev: i32,
    objtype: u32,
    mtime: Timespec,
    ctime: Timespec,
    atime: Timespec,
    flags: u32,
    fileid: u64,
    nlink: u32,
    mount_status: u32,
    alloc_bytes: i64,
    data_bytes: i64,
    private_bytes: i64,
    clone_id: u64,
    ext_flags: u64,
}

fn parse_group<'a>(group: &'a [u8], req: &Request) -> Result<Option<Entry<'a>>, Malformed> {
    let mut c = Cursor { buf: group, pos: 4 };
    let returned = AttrSet { common: c.u32()?, vol: c.u32()?, dir: c.u32()?, file: c.u32()?, fork: c.u32()? };
    let asked = req.attrs;
    if !is_subset(returned, asked) || !is_subset(asked, KNOWN) {
        return Err(Malformed::Unexpected);
    }
    let layout = if req.pack_invalid { asked } else { returned };
    let mut errno = 0;
    if layout.common & ATTR_CMN_ERROR != 0 {
        errno = c.u32()?;
    }
    if layout.common & returned.common & ATTR_CMN_NAME == 0 {
        return Err(Malformed::BadName);
    }
    let name = c.name()?;
    if matches!(name.to_bytes(), b"." | b"..") {
        return Ok(None);
    }
    if returned.common & ATTR_CMN_ERROR != 0 && errno != 0 {
        let errno = i32::try_from(errno).unwrap_or(i32::MAX);
        return Ok(Some(Entry { name, ino: 0, status: Status::Failed(errno), clones: None }));
    }
    let mut raw = Raw::default();
    for &(bit, field) in COMMON_SLOTS {
        if layout.common & bit != 0 {
            raw.read(field, &mut c)?;
        }
    }
    let ino = if returned.common & ATTR_CMN_FILEID != 0 { raw.fileid } else { 0 };
    let needs_stat = Entry { name, ino, status: Status::NeedsStat, clones: None };
    if returned.common & ATTR_CMN_OBJTYPE == 0 {
        // Without the type there is no telling which group's slots follow.
        return Ok(Some(needs_stat));
    }
    let is_dir = raw.objtype == VDIR;
    let (slots, layout_bits, returned_bits, needed) = if is_dir {
        (DIR_SLOTS, layout.dir, returned.dir, NEEDED_DIR)
    } else {
        (FILE_SLOTS, layout.file, returned.file, NEEDED_FILE)
    };
    for &(bit, field) in slots {
        if layout_bits & bit != 0 {
            raw.read(field, &mut c)?;
        }
    }
    for &(bit, field) in EXTENDED_SLOTS {
        if layout.fork & bit != 0 {
            raw.read(field, &mut c)?;
        }
    }
    let clones = (raw.objtype == VREG && returned.fork & ATTR_CMNEXT_PRIVATESIZE != 0).then(|| Clones {
        private_bytes: u64::try_from(raw.private_bytes).unwrap_or(0),
        clone_id: if returned.fork & ATTR_CMNEXT_CLONEID != 0 { raw.clone_id } else { 0 },
        ext_flags: if returned.fork & ATTR_CMNEXT_EXT_FLAGS != 0 { raw.ext_flags } else { 0 },
    });
    if returned.common & NEEDED_COMMON != NEEDED_COMMON || returned_bits & needed != needed {
        return Ok(Some(needs_stat));
    }
    let flags = if returned.common & ATTR_CMN_FLAGS != 0 { raw.flags } else { 0 };
    let mut meta = raw.meta();
    if is_dir && flags & SF_FIRMLINK != 0 {
        // A firmlink (`/Users` on the sealed system volume leads into the data volume,
        // which is also mounted at /System/Volumes/Data): reported as a link, so that a
        // scan of `/` counts the data once, under its mount point.
        meta.kind = Kind::Symlink;
        meta.nlink = 1;
    } else if is_dir && raw.mount_status & DIR_MNTSTATUS_MNTPOINT != 0 {
        return Ok(Some(needs_stat));
    }
    Ok(Some(Entry { name, ino, status: Status::Complete(meta), clones }))
}

fn is_subset(a: AttrSet, b: AttrSet) -> bool {
    a.common & !b.common == 0
        && a.vol & !b.vol == 0
        && a.dir & !b.dir == 0
        && a.file & !b.file == 0
        && a.fork & !b.fork == 0
}

impl Raw {
    fn read(&mut self, field: Field, c: &mut Cursor) -> Result<(), Malformed> {
        match field {
            Field::Dev => self.dev = c.i32()?,
            Field::ObjType => self.objtype = c.u32()?,
            Field::Mtime => self.mtime = c.timespec()?,
            Field::Ctime => self.ctime = c.timespec()?,
            Field::Atime => self.atime = c.timespec()?,
            Field::Flags => self.flags = c.u32()?,
            Field::FileId => self.fileid = c.u64()?,
            Field::LinkCount => self.nlink = c.u32()?,
            Field::MountStatus => self.mount_status = c.u32()?,
            Field::AllocSize => self.alloc_bytes = c.i64()?,
            Field::DataLength => self.data_bytes = c.i64()?,
            Field::PrivateSize => self.private_bytes = c.i64()?,
            Field::CloneId => self.clone_id = c.u64()?,
            Field::ExtFlags => self.ext_flags = c.u64()?,
        }
        Ok(())
    }

    /// The entry as `stat` reports it: `st_blocks` is the allocation of all forks in
    /// 512-byte units, rounded up, as XNU's `vn_stat` computes it.
    fn meta(&self) -> Meta {
        let kind = match self.objtype {
            VREG => Kind::File,
            VDIR => Kind::Dir,
            VLNK => Kind::Symlink,
            _ => Kind::Other,
        };
        Meta {
            kind,
            // dev_t is an i32 on macOS; widened the way std and the stat path widen it.
            dev: self.dev as u64,
            ino: self.fileid,
            nlink: u64::from(self.nlink),
            blocks: u64::try_from(self.alloc_bytes).unwrap_or(0).div_ceil(512),
            size: u64::try_from(self.data_bytes).unwrap_or(0),
            mtime: self.mtime,
            atime: self.atime,
            ctime: self.ctime,
        }
    }
}

/// A bounds-checked reader over one group.
struct Cursor<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Cursor<'a> {
    fn take<const N: usize>(&mut self) -> Result<[u8; N], Malformed> {
        let end = self.pos.checked_add(N).ok_or(Malformed::Truncated)?;
        let bytes = self.buf.get(self.pos..end).ok_or(Malformed::Truncated)?;
        self.pos = end;
        bytes.try_into().map_err(|_| Malformed::Truncated)
    }

    fn u32(&mut self) -> Result<u32, Malformed> {
        self.take().map(u32::from_ne_bytes)
    }

    fn i32(&mut self) -> Result<i32, Malformed> {
        self.take().map(i32::from_ne_bytes)
    }

    fn u64(&mut self) -> Result<u64, Malformed> {
        self.take().map(u64::from_ne_bytes)
    }

    fn i64(&mut self) -> Result<i64, Malformed> {
        self.take().map(i64::from_ne_bytes)
    }

    /// `struct timespec` of a 64-bit process: `i64` seconds, `i64` nanoseconds.
    fn timespec(&mut self) -> Result<Timespec, Malformed> {
        let sec = self.i64()?;
        let nsec = self.i64()?.clamp(0, 999_999_999) as u32;
        Ok(Timespec { sec, nsec })
    }

    /// An `attrreference_t` to a NUL-terminated name inside this group.
    fn name(&mut self) -> Result<&'a CStr, Malformed> {
        let at = self.pos;
        let offset = self.i32()?;
        let len = self.u32()? as usize;
        let offset = usize::try_from(offset).map_err(|_| Malformed::BadName)?;
        if !(2..=NAME_MAX_BYTES + 1).contains(&len) {
            return Err(Malformed::BadName);
        }
        let start = at.checked_add(offset).ok_or(Malformed::Truncated)?;
        let end = start.checked_add(len).ok_or(Malformed::Truncated)?;
        let bytes = self.buf.get(start..end).ok_or(Malformed::Truncated)?;
        CStr::from_bytes_with_nul(bytes).map_err(|_| Malformed::BadName)
    }
}

#[cfg(test)]
mod tests;
