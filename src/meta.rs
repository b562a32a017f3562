//! Plain data shared by the platform readers and the rest of dfdu: what one `stat` of an
//! entry yields, error numbers, and a broken-down local time. No I/O here.

/// An OS error number, as the platform reported it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Errno(pub i32);

impl Errno {
    /// Operation not permitted (EPERM: a capability is missing).
    #[allow(dead_code)] // one backend's
    pub const PERM: Errno = Errno(1);
    pub const NOENT: Errno = Errno(2);
    pub const NAMETOOLONG: Errno = Errno(36);
    /// Too many levels of symbolic links.
    pub const LOOP: Errno = Errno(if cfg!(target_os = "linux") { 40 } else { 62 });
    /// Try again (the same number as EWOULDBLOCK on both systems). Unused on Windows.
    #[cfg_attr(windows, allow(dead_code))]
    pub const AGAIN: Errno = Errno(if cfg!(target_os = "linux") { 11 } else { 35 });
    /// Function not implemented.
    pub const NOSYS: Errno = Errno(if cfg!(target_os = "linux") { 38 } else { 78 });
    /// Operation not supported (ENOTSUP; on Linux the same number as EOPNOTSUPP).
    pub const NOTSUP: Errno = Errno(if cfg!(target_os = "linux") { 95 } else { 45 });
    /// Operation not supported on a socket (what macOS's `open` answers for one).
    #[allow(dead_code)] // one backend's
    pub const OPNOTSUPP: Errno = Errno(if cfg!(target_os = "linux") { 95 } else { 102 });
    // The same numbers on Linux and macOS.
    pub const IO: Errno = Errno(5);
    /// No such device or address (what `open` answers for a socket).
    #[allow(dead_code)] // the Unix backends'
    pub const NXIO: Errno = Errno(6);
    /// Bad file descriptor.
    #[allow(dead_code)] // the Unix backends'
    pub const BADF: Errno = Errno(9);
    /// Not a terminal (what an ioctl the file system does not know answers).
    #[allow(dead_code)] // one backend's
    pub const NOTTY: Errno = Errno(25);
    /// Result too large (macOS's `getattrlistbulk` at the end of some directories).
    #[allow(dead_code)] // one backend's
    pub const RANGE: Errno = Errno(34);
    pub const EXIST: Errno = Errno(17);
    pub const NOTDIR: Errno = Errno(20);
    pub const INVAL: Errno = Errno(22);
    pub const NFILE: Errno = Errno(23);
    pub const MFILE: Errno = Errno(24);
}

/// What kind of file an entry is, as far as disk usage cares.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    File,
    Dir,
    Symlink,
    Other,
}

impl Kind {
    /// The kind from a Unix `st_mode` (its `S_IFMT` bits).
    #[cfg(unix)]
    pub fn from_mode(mode: u32) -> Kind {
        match mode & 0o170000 {
            0o040000 => Kind::Dir,
            0o100000 => Kind::File,
            0o120000 => Kind::Symlink,
            _ => Kind::Other,
        }
    }
}

/// Seconds and nanoseconds since the Unix epoch.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord)]
pub struct Timespec {
    pub sec: i64,
    pub nsec: u32,
}

impl Timespec {
    /// The earliest representable time: the identity for `max`.
    pub const MIN: Timespec = Timespec { sec: i64::MIN, nsec: 0 };

    /// Nanoseconds since the epoch in one number (saturating), as the hash file keeps
    /// mtime and ctime.
    pub fn as_ns(self) -> i64 {
        self.sec.saturating_mul(1_000_000_000).saturating_add(i64::from(self.nsec))
    }
}

/// One extent of a file, as an extent map (Linux FIEMAP) reports it: where it is in the
/// file (`logical`), where on the device (`physical`), how long, and `flags` (the bits
/// below, which are FIEMAP's own).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Extent {
    pub logical: u64,
    pub physical: u64,
    pub length: u64,
    pub flags: u32,
}

impl Extent {
    /// The file's last extent (only the Linux extent-map loop needs it).
    #[cfg_attr(not(target_os = "linux"), allow(dead_code))]
    pub const LAST: u32 = 0x1;
    /// Location not known yet.
    pub const UNKNOWN: u32 = 0x2;
    /// Delayed allocation: no disk space assigned yet.
    pub const DELALLOC: u32 = 0x4;
    /// Compressed or otherwise encoded (btrfs): its length is the decoded one, and its
    /// address does not move with the offset inside it.
    pub const ENCODED: u32 = 0x8;
    /// Data kept inside the file system's metadata (no data extent).
    pub const INLINE: u32 = 0x200;
    /// Also referenced by another file, snapshot or reflink.
    pub const SHARED: u32 = 0x2000;

    /// Whether the `SHARED` bit is set.
    pub fn is_shared(&self) -> bool {
        self.flags & Self::SHARED != 0
    }
}

/// The result of one `stat` of an entry.
#[derive(Clone, Copy, Debug)]
pub struct Meta {
    pub kind: Kind,
    pub dev: u64,
    pub ino: u64,
    /// Number of names; 0 when the listing that produced this `Meta` cannot tell (NT
    /// directory queries carry no link count): see `may_have_links`.
    pub nlink: u64,
    /// Allocated size in 512-byte units (`st_blocks`).
    pub blocks: u64,
    /// Apparent size in bytes (`st_size`).
    pub size: u64,
    pub mtime: Timespec,
    pub atime: Timespec,
    pub ctime: Timespec,
}

impl Meta {
    pub fn disk_bytes(&self) -> u64 {
        self.blocks.saturating_mul(512)
    }

    /// A non-directory that may be reached under another name, so it must be counted
    /// once per (dev, ino): more than one link, or a link count nobody knows (`nlink` 0).
    pub fn may_have_links(&self) -> bool {
        self.kind != Kind::Dir && self.nlink != 1
    }
}

/// Which size of an entry is counted: du's `--apparent-size`, and the same choice in
/// scan, diff, browse and the treemap.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Measure {
    /// Allocated bytes (`st_blocks * 512`).
    Disk,
    /// `st_size`.
    Apparent,
}

/// Which time stamp of an entry du's `--time` reports.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TimeKind {
    Mtime,
    Atime,
    Ctime,
}

/// A time broken down in the local time zone, as `localtime_r` gives it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LocalTime {
    pub year: i64,
    pub month: u32,
    pub day: u32,
    pub hour: u32,
    pub minute: u32,
    pub second: u32,
    /// 0 = Sunday.
    pub weekday: u32,
    /// 0-based day of the year.
    pub yearday: u32,
    /// Seconds east of UTC.
    pub gmtoff: i64,
    /// The zone's name (`%Z`), as bytes: a zone file may hold any.
    pub zone: Vec<u8>,
}

/// The bytes of an OS string: exact on Unix, WTF-8 on Windows (lossless), elsewhere its
/// UTF-8 form.
#[cfg(unix)]
pub fn os_bytes(s: &std::ffi::OsStr) -> Vec<u8> {
    use std::os::unix::ffi::OsStrExt;
    s.as_bytes().to_vec()
}

/// Windows: WTF-8, which keeps an unpaired surrogate (as its 3-byte form) instead of
/// replacing it; `platform/windows/dir.rs` turns these bytes back into the same UTF-16.
#[cfg(windows)]
pub fn os_bytes(s: &std::ffi::OsStr) -> Vec<u8> {
    use std::os::windows::ffi::OsStrExt;
    let mut out = Vec::with_capacity(s.len());
    for c in char::decode_utf16(s.encode_wide()) {
        match c {
            Ok(c) => out.extend_from_slice(c.encode_utf8(&mut [0; 4]).as_bytes()),
            Err(e) => {
                let u = e.unpaired_surrogate();
                out.extend_from_slice(&[
                    0xE0 | (u >> 12) as u8,
                    0x80 | ((u >> 6) & 0x3F) as u8,
                    0x80 | (u & 0x3F) as u8,
                ]);
            }
        }
    }
    out
}

#[cfg(not(any(unix, windows)))]
pub fn os_bytes(s: &std::ffi::OsStr) -> Vec<u8> {
    s.to_string_lossy().into_owned().into_bytes()
}

/// An OS string of `bytes`, as `os_bytes` gives them: exact on Unix; elsewhere their
/// UTF-8 reading (a name that is not UTF-8 there loses its odd bytes).
#[cfg(unix)]
pub fn os_string(bytes: &[u8]) -> std::ffi::OsString {
    use std::os::unix::ffi::OsStringExt;
    std::ffi::OsString::from_vec(bytes.to_vec())
}

#[cfg(not(unix))]
pub fn os_string(bytes: &[u8]) -> std::ffi::OsString {
    String::from_utf8_lossy(bytes).into_owned().into()
}

/// One file extent item of a btrfs subvolume tree (`btrfs_file_extent_item` under the
/// key `(ino, EXTENT_DATA, file_offset)`), as the bulk reader (`platform::BtrfsTree`)
/// parses it. A hole is a regular extent at `disk_bytenr` 0.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct BtrfsFileExtent {
    pub ino: u64,
    pub file_offset: u64,
    /// The transaction that wrote the data (the item's own generation).
    pub generation: u64,
    pub kind: BtrfsExtentKind,
    /// 0 none, 1 zlib, 2 lzo, 3 zstd.
    pub compression: u8,
    /// The data's length uncompressed (for an inline extent: what the file reads).
    pub ram_bytes: u64,
    /// Where the data extent starts on disk, and its length there (compressed).
    pub disk_bytenr: u64,
    pub disk_bytes: u64,
    /// Which part of the (uncompressed) data extent the file references.
    pub offset: u64,
    pub num_bytes: u64,
    /// An inline extent's bytes inside the metadata (compressed when `compression` says).
    pub inline_bytes: u64,
}

/// The three kinds of btrfs file extent.
#[cfg_attr(not(target_os = "linux"), allow(dead_code))] // made by Linux's reader only
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum BtrfsExtentKind {
    /// Data inside the metadata item.
    #[default]
    Inline,
    Regular,
    /// Allocated and not written (`fallocate`).
    Prealloc,
}

/// A btrfs data extent's references in the extent tree (tree 2): the item's reference
/// count, and its back references, inline and keyed, each counted once.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct BtrfsDataExtent {
    pub bytenr: u64,
    pub disk_bytes: u64,
    /// The extent item's reference count (all references, each file extent item once).
    pub refs: u64,
    /// How many distinct back references it has (a (root, inode, offset) or a parent
    /// tree block each).
    pub backrefs: u32,
    /// The first of them.
    pub first: BtrfsRef,
}

/// One back reference of a btrfs data extent.
#[cfg_attr(not(target_os = "linux"), allow(dead_code))] // made by Linux's reader only
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum BtrfsRef {
    #[default]
    None,
    /// From file extent items of inode `ino` in tree `root` at file offset minus extent
    /// offset `offset` (`EXTENT_DATA_REF`).
    Keyed { root: u64, ino: u64, offset: u64 },
    /// From file extent items in the tree block at `parent` (`SHARED_DATA_REF`: after a
    /// snapshot's shared block was copied).
    Parent(u64),
}
