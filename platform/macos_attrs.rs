//! The pure half of the macOS reader: decoding the buffer `getattrlistbulk(2)` fills.
//!
//! No system calls and no `unsafe`: this file is plain Rust over a byte slice, so it is
//! compiled and unit-tested on every platform (`cargo test` on Linux runs the tests below
//! against hand-built buffers). `platform/macos.rs` makes the call and hands the bytes here.
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

use crate::meta::{Kind, Meta, Timespec};
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
    fork: 0,
};
const _: () = assert!(REQUEST.attrs.common & !KNOWN.common == 0);
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
        return Ok(Some(Entry { name, ino: 0, status: Status::Failed(errno) }));
    }
    let mut raw = Raw::default();
    for &(bit, field) in COMMON_SLOTS {
        if layout.common & bit != 0 {
            raw.read(field, &mut c)?;
        }
    }
    let ino = if returned.common & ATTR_CMN_FILEID != 0 { raw.fileid } else { 0 };
    let needs_stat = Entry { name, ino, status: Status::NeedsStat };
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
    Ok(Some(Entry { name, ino, status: Status::Complete(meta) }))
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
mod tests {
    use super::*;

    /// One entry as a test describes it; `pack` lays it out the way XNU does.
    #[derive(Clone)]
    struct Spec {
        name: Vec<u8>,
        objtype: u32,
        dev: i32,
        fileid: u64,
        flags: u32,
        mtime: (i64, i64),
        ctime: (i64, i64),
        atime: (i64, i64),
        nlink: u32,
        mount_status: u32,
        alloc_bytes: i64,
        data_bytes: i64,
        error: u32,
        /// Attributes the "file system" did not return.
        missing: AttrSet,
    }

    fn file(name: &[u8]) -> Spec {
        Spec {
            name: name.to_vec(),
            objtype: VREG,
            dev: 0x0100_0004,
            fileid: 1000,
            flags: 0,
            mtime: (1_700_000_000, 5),
            ctime: (1_700_000_100, 6),
            atime: (1_700_000_200, 7),
            nlink: 1,
            mount_status: 0,
            alloc_bytes: 4096,
            data_bytes: 1234,
            error: 0,
            missing: AttrSet::default(),
        }
    }

    fn dir(name: &[u8]) -> Spec {
        Spec { objtype: VDIR, nlink: 3, alloc_bytes: 0, data_bytes: 96, ..file(name) }
    }

    fn put_u32(out: &mut Vec<u8>, v: u32) {
        out.extend_from_slice(&v.to_ne_bytes());
    }

    fn put_ts(out: &mut Vec<u8>, (sec, nsec): (i64, i64)) {
        out.extend_from_slice(&sec.to_ne_bytes());
        out.extend_from_slice(&nsec.to_ne_bytes());
    }

    /// Appends one group for `s` as the kernel packs it under `req`.
    fn pack(out: &mut Vec<u8>, req: &Request, s: &Spec) {
        let is_dir = s.objtype == VDIR;
        let asked = AttrSet {
            dir: if is_dir { req.attrs.dir } else { 0 },
            file: if is_dir { 0 } else { req.attrs.file },
            ..req.attrs
        };
        let returned = if s.error != 0 {
            AttrSet { common: ATTR_CMN_RETURNED_ATTRS | ATTR_CMN_NAME | ATTR_CMN_ERROR, ..AttrSet::default() }
        } else {
            AttrSet {
                common: asked.common & !s.missing.common,
                dir: asked.dir & !s.missing.dir,
                file: asked.file & !s.missing.file,
                ..AttrSet::default()
            }
        };
        let layout = if req.pack_invalid { asked } else { returned };
        let start = out.len();
        let mut g = Vec::new();
        put_u32(&mut g, 0); // length, patched below
        for v in [returned.common, returned.vol, returned.dir, returned.file, returned.fork] {
            put_u32(&mut g, v);
        }
        if layout.common & ATTR_CMN_ERROR != 0 {
            put_u32(&mut g, s.error);
        }
        let name_ref = g.len();
        // The attrreference, patched below.
        g.extend_from_slice(&[0; 8]);
        // Values the entry does not have are packed as zeros (FSOPT_PACK_INVAL_ATTRS).
        let real = |set: u32, bit: u32| set & bit != 0;
        let common = |g: &mut Vec<u8>, bit: u32| {
            let ok = real(returned.common, bit);
            match bit {
                ATTR_CMN_DEVID => put_u32(g, if ok { s.dev as u32 } else { 0 }),
                ATTR_CMN_OBJTYPE => put_u32(g, if ok { s.objtype } else { 0 }),
                ATTR_CMN_MODTIME => put_ts(g, if ok { s.mtime } else { (0, 0) }),
                ATTR_CMN_CHGTIME => put_ts(g, if ok { s.ctime } else { (0, 0) }),
                ATTR_CMN_ACCTIME => put_ts(g, if ok { s.atime } else { (0, 0) }),
                ATTR_CMN_FLAGS => put_u32(g, if ok { s.flags } else { 0 }),
                ATTR_CMN_FILEID => g.extend_from_slice(&(if ok { s.fileid } else { 0 }).to_ne_bytes()),
                _ => unreachable!("test packs only known attributes"),
            }
        };
        for &(bit, _) in COMMON_SLOTS {
            if layout.common & bit != 0 {
                common(&mut g, bit);
            }
        }
        let (slots, layout_bits, returned_bits) =
            if is_dir { (DIR_SLOTS, layout.dir, returned.dir) } else { (FILE_SLOTS, layout.file, returned.file) };
        for &(bit, field) in slots {
            if layout_bits & bit == 0 {
                continue;
            }
            let ok = real(returned_bits, bit);
            match field {
                Field::LinkCount => put_u32(&mut g, if ok { s.nlink } else { 0 }),
                Field::MountStatus => put_u32(&mut g, if ok { s.mount_status } else { 0 }),
                Field::AllocSize => g.extend_from_slice(&(if ok { s.alloc_bytes } else { 0 }).to_ne_bytes()),
                Field::DataLength => g.extend_from_slice(&(if ok { s.data_bytes } else { 0 }).to_ne_bytes()),
                _ => unreachable!("not a directory or file attribute"),
            }
        }
        let name_at = g.len();
        g.extend_from_slice(&s.name);
        g.push(0);
        while g.len() % 4 != 0 {
            g.push(0);
        }
        while g.len() % 8 != 0 {
            g.push(0); // groups start 8-byte aligned
        }
        let offset = (name_at - name_ref) as i32;
        g[name_ref..name_ref + 4].copy_from_slice(&offset.to_ne_bytes());
        g[name_ref + 4..name_ref + 8].copy_from_slice(&(s.name.len() as u32 + 1).to_ne_bytes());
        let len = g.len() as u32;
        g[0..4].copy_from_slice(&len.to_ne_bytes());
        out.extend_from_slice(&g);
        assert_eq!((out.len() - start) % 8, 0);
    }

    fn batch(req: &Request, specs: &[Spec]) -> Vec<u8> {
        let mut out = Vec::new();
        for s in specs {
            pack(&mut out, req, s);
        }
        out
    }

    /// (name, ino, status) of every entry, or the error.
    fn parse(buf: &[u8], count: usize, req: &Request) -> Result<Vec<(Vec<u8>, u64, Status)>, Malformed> {
        let mut got = Vec::new();
        parse_batch(buf, count, req, &mut |e| got.push((e.name.to_bytes().to_vec(), e.ino, e.status)))?;
        Ok(got)
    }

    fn complete(st: &Status) -> Meta {
        match st {
            Status::Complete(m) => *m,
            other => panic!("expected complete metadata, got {other:?}"),
        }
    }

    const PACKED: Request = Request { pack_invalid: false, ..REQUEST };

    #[test]
    fn normal_file_and_directory() {
        for req in [REQUEST, PACKED] {
            let buf = batch(&req, &[file(b"notes.txt"), dir(b"src")]);
            let got = parse(&buf, 2, &req).unwrap();
            assert_eq!(got.len(), 2);
            assert_eq!(got[0].0, b"notes.txt");
            assert_eq!(got[0].1, 1000);
            let m = complete(&got[0].2);
            assert_eq!(m.kind, Kind::File);
            assert_eq!((m.dev, m.ino, m.nlink), (0x0100_0004, 1000, 1));
            assert_eq!((m.blocks, m.size), (8, 1234));
            assert_eq!(m.mtime, Timespec { sec: 1_700_000_000, nsec: 5 });
            assert_eq!(m.ctime, Timespec { sec: 1_700_000_100, nsec: 6 });
            assert_eq!(m.atime, Timespec { sec: 1_700_000_200, nsec: 7 });
            assert_eq!(got[1].0, b"src");
            let d = complete(&got[1].2);
            assert_eq!(d.kind, Kind::Dir);
            assert_eq!((d.nlink, d.blocks, d.size), (3, 0, 96));
        }
    }

    #[test]
    fn allocation_rounds_up_to_512_byte_blocks() {
        let s = Spec { alloc_bytes: 513, ..file(b"odd") };
        let got = parse(&batch(&REQUEST, &[s]), 1, &REQUEST).unwrap();
        assert_eq!(complete(&got[0].2).blocks, 2);
        let s = Spec { alloc_bytes: -1, data_bytes: -5, ..file(b"negative") };
        let got = parse(&batch(&REQUEST, &[s]), 1, &REQUEST).unwrap();
        let m = complete(&got[0].2);
        assert_eq!((m.blocks, m.size), (0, 0));
    }

    #[test]
    fn hard_links_keep_device_file_id_and_link_count() {
        let a = Spec { nlink: 2, fileid: 77, ..file(b"a") };
        let b = Spec { name: b"b".to_vec(), ..a.clone() };
        let got = parse(&batch(&REQUEST, &[a, b]), 2, &REQUEST).unwrap();
        let (ma, mb) = (complete(&got[0].2), complete(&got[1].2));
        assert_eq!((ma.dev, ma.ino, ma.nlink), (mb.dev, mb.ino, 2));
        assert_eq!(ma.ino, 77);
    }

    #[test]
    fn kinds_from_object_type() {
        let link = Spec { objtype: VLNK, ..file(b"ln") };
        let fifo = Spec { objtype: 7, ..file(b"fifo") };
        let got = parse(&batch(&REQUEST, &[link, fifo]), 2, &REQUEST).unwrap();
        assert_eq!(complete(&got[0].2).kind, Kind::Symlink);
        assert_eq!(complete(&got[1].2).kind, Kind::Other);
    }

    #[test]
    fn missing_attribute_asks_for_a_stat_and_shifts_nothing() {
        let cases = [
            AttrSet { file: ATTR_FILE_ALLOCSIZE, ..AttrSet::default() },
            AttrSet { common: ATTR_CMN_DEVID, ..AttrSet::default() },
            AttrSet { common: ATTR_CMN_MODTIME, file: ATTR_FILE_LINKCOUNT, ..AttrSet::default() },
        ];
        for req in [REQUEST, PACKED] {
            for missing in cases {
                let lacking = Spec { missing, ..file(b"lacking") };
                let buf = batch(&req, &[lacking, file(b"after"), dir(b"d")]);
                let got = parse(&buf, 3, &req).unwrap();
                assert!(matches!(got[0].2, Status::NeedsStat), "{missing:?}");
                assert_eq!(got[0].0, b"lacking");
                assert_eq!(complete(&got[1].2).size, 1234, "{missing:?}");
                assert_eq!(complete(&got[2].2).kind, Kind::Dir);
            }
        }
    }

    #[test]
    fn missing_file_id_means_inode_zero() {
        let s = Spec { missing: AttrSet { common: ATTR_CMN_FILEID, ..AttrSet::default() }, ..file(b"x") };
        for req in [REQUEST, PACKED] {
            let got = parse(&batch(&req, &[s.clone(), file(b"y")]), 2, &req).unwrap();
            assert_eq!(got[0].1, 0);
            assert!(matches!(got[0].2, Status::NeedsStat));
            assert_eq!(got[1].1, 1000);
        }
    }

    #[test]
    fn missing_object_type_asks_for_a_stat() {
        let s = Spec { missing: AttrSet { common: ATTR_CMN_OBJTYPE, ..AttrSet::default() }, ..dir(b"what") };
        for req in [REQUEST, PACKED] {
            let got = parse(&batch(&req, &[s.clone(), file(b"next")]), 2, &req).unwrap();
            assert!(matches!(got[0].2, Status::NeedsStat));
            assert_eq!(got[1].0, b"next");
        }
    }

    /// Checks every field of `m` against what `s` packed.
    fn assert_meta(m: &Meta, s: &Spec) {
        let ts = |(sec, nsec): (i64, i64)| Timespec { sec, nsec: nsec as u32 };
        assert_eq!((m.dev, m.ino, m.nlink), (s.dev as u64, s.fileid, u64::from(s.nlink)));
        assert_eq!((m.blocks, m.size), ((s.alloc_bytes as u64).div_ceil(512), s.data_bytes as u64));
        assert_eq!((m.mtime, m.ctime, m.atime), (ts(s.mtime), ts(s.ctime), ts(s.atime)));
    }

    #[test]
    fn missing_flags_are_no_flags_and_shift_nothing() {
        // Flags are optional: the entry stays complete, so every later slot must be read
        // from its own place whichever packing rule is in force.
        let s = Spec {
            missing: AttrSet { common: ATTR_CMN_FLAGS, ..AttrSet::default() },
            flags: SF_FIRMLINK,
            fileid: 0x1122_3344_5566_7788,
            alloc_bytes: 8192,
            ..dir(b"d")
        };
        for req in [REQUEST, PACKED] {
            let got = parse(&batch(&req, std::slice::from_ref(&s)), 1, &req).unwrap();
            let m = complete(&got[0].2);
            assert_eq!(m.kind, Kind::Dir);
            assert_meta(&m, &s);
        }
    }

    #[test]
    fn error_entries_carry_the_error_number() {
        for req in [REQUEST, PACKED] {
            let bad = Spec { error: 13, ..file(b"secret") };
            let buf = batch(&req, &[file(b"a"), bad, dir(b"z")]);
            let got = parse(&buf, 3, &req).unwrap();
            assert_eq!(got[1].0, b"secret");
            assert!(matches!(got[1].2, Status::Failed(13)));
            assert_eq!(got[1].1, 0);
            assert_eq!(complete(&got[2].2).kind, Kind::Dir);
        }
    }

    #[test]
    fn names_are_bytes() {
        let long = vec![b'n'; 255];
        let names: [&[u8]; 7] =
            [b"new\nline", b"\xff\xfe not utf-8", b"tab\there", "ünïcødé 文件 🚀".as_bytes(), b"x", b"-rf", &long];
        for req in [REQUEST, PACKED] {
            let specs: Vec<Spec> = names.iter().map(|n| file(n)).collect();
            let got = parse(&batch(&req, &specs), specs.len(), &req).unwrap();
            let seen: Vec<&[u8]> = got.iter().map(|g| g.0.as_slice()).collect();
            assert_eq!(seen, names);
        }
    }

    #[test]
    fn dot_and_dot_dot_are_skipped() {
        let buf = batch(&REQUEST, &[dir(b"."), dir(b".."), file(b"..."), file(b".hidden")]);
        let got = parse(&buf, 4, &REQUEST).unwrap();
        let seen: Vec<&[u8]> = got.iter().map(|g| g.0.as_slice()).collect();
        assert_eq!(seen, [&b"..."[..], b".hidden"]);
    }

    #[test]
    fn firmlinks_are_links_and_mount_points_need_a_stat() {
        let firm = Spec { flags: SF_FIRMLINK, ..dir(b"Users") };
        let mount = Spec { mount_status: DIR_MNTSTATUS_MNTPOINT, ..dir(b"Data") };
        let got = parse(&batch(&REQUEST, &[firm, mount]), 2, &REQUEST).unwrap();
        let m = complete(&got[0].2);
        assert_eq!((m.kind, m.nlink), (Kind::Symlink, 1));
        assert!(matches!(got[1].2, Status::NeedsStat));
        assert_eq!(got[1].1, 1000);
    }

    #[test]
    fn every_truncation_is_an_error() {
        for req in [REQUEST, PACKED] {
            let buf = batch(&req, &[file(b"one"), dir(b"two"), file(b"three")]);
            assert!(parse(&buf, 3, &req).is_ok());
            for cut in 0..buf.len() {
                assert!(parse(&buf[..cut], 3, &req).is_err(), "cut at {cut}");
            }
            // More entries claimed than the buffer holds.
            assert!(parse(&buf, 4, &req).is_err());
        }
    }

    #[test]
    fn every_damaged_byte_is_survived() {
        // Not every damage is detectable (a changed size is still a size), but none may
        // panic or read out of bounds.
        let buf = batch(&REQUEST, &[file(b"one"), dir(b"two"), Spec { error: 2, ..file(b"three") }]);
        for at in 0..buf.len() {
            for v in [0x00, 0xff, buf[at] ^ 0x80, buf[at].wrapping_add(4)] {
                let mut bad = buf.clone();
                bad[at] = v;
                let _ = parse(&bad, 3, &REQUEST);
            }
        }
        // And pseudo-random buffers.
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        for _ in 0..2000 {
            let mut bad = buf.clone();
            for _ in 0..4 {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                let at = (x as usize) % bad.len();
                bad[at] = (x >> 32) as u8;
            }
            let _ = parse(&bad, 3, &REQUEST);
        }
    }

    /// Overwrites the `u32` at `at` in a copy of `buf`.
    fn patched(buf: &[u8], at: usize, v: u32) -> Vec<u8> {
        let mut out = buf.to_vec();
        out[at..at + 4].copy_from_slice(&v.to_ne_bytes());
        out
    }

    /// Just the outcome of a parse, for comparing errors.
    fn check(buf: &[u8], count: usize, req: &Request) -> Result<(), Malformed> {
        parse(buf, count, req).map(|_| ())
    }

    #[test]
    fn bad_lengths_and_names_are_errors() {
        let buf = batch(&REQUEST, &[file(b"abc")]);
        // Offsets inside the group: length 0, returned set 4..24, error 24, name ref 28.
        assert_eq!(check(&patched(&buf, 0, 0), 1, &REQUEST), Err(Malformed::GroupLength));
        assert_eq!(check(&patched(&buf, 0, 23), 1, &REQUEST), Err(Malformed::GroupLength));
        assert_eq!(check(&patched(&buf, 0, buf.len() as u32 + 8), 1, &REQUEST), Err(Malformed::Truncated));
        assert_eq!(check(&patched(&buf, 0, u32::MAX), 1, &REQUEST), Err(Malformed::Truncated));
        // A returned attribute that was never requested.
        let returned = u32::from_ne_bytes(buf[4..8].try_into().unwrap());
        assert_eq!(check(&patched(&buf, 4, returned | 0x0000_0004), 1, &REQUEST), Err(Malformed::Unexpected));
        assert_eq!(check(&patched(&buf, 8, 1), 1, &REQUEST), Err(Malformed::Unexpected));
        // No name returned.
        assert_eq!(check(&patched(&buf, 4, returned & !ATTR_CMN_NAME), 1, &REQUEST), Err(Malformed::BadName));
        // Name offset negative, past the group, or far away.
        assert_eq!(check(&patched(&buf, 28, -4i32 as u32), 1, &REQUEST), Err(Malformed::BadName));
        assert_eq!(check(&patched(&buf, 28, buf.len() as u32), 1, &REQUEST), Err(Malformed::Truncated));
        assert_eq!(check(&patched(&buf, 28, i32::MAX as u32), 1, &REQUEST), Err(Malformed::Truncated));
        // Name length: empty, missing its NUL, too long, past the group.
        assert_eq!(check(&patched(&buf, 32, 1), 1, &REQUEST), Err(Malformed::BadName));
        assert_eq!(check(&patched(&buf, 32, 3), 1, &REQUEST), Err(Malformed::BadName));
        assert_eq!(check(&patched(&buf, 32, 5000), 1, &REQUEST), Err(Malformed::BadName));
        assert_eq!(check(&patched(&buf, 32, 900), 1, &REQUEST), Err(Malformed::Truncated));
        // A NUL inside the name.
        let inner = Spec { name: b"a\0b".to_vec(), ..file(b"") };
        assert_eq!(check(&batch(&REQUEST, &[inner]), 1, &REQUEST), Err(Malformed::BadName));
    }

    #[test]
    fn entries_before_a_bad_group_are_delivered() {
        let mut buf = batch(&REQUEST, &[file(b"good")]);
        buf.extend_from_slice(&[0u8; 8]);
        let mut names = Vec::new();
        let r = parse_batch(&buf, 2, &REQUEST, &mut |e| names.push(e.name.to_bytes().to_vec()));
        assert_eq!(r, Err(Malformed::GroupLength));
        assert_eq!(names, [b"good".to_vec()]);
    }

    #[test]
    fn an_empty_batch_is_fine() {
        assert_eq!(parse(&[], 0, &REQUEST).unwrap().len(), 0);
    }
}
