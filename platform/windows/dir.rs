//! The Windows reader and the process: handles, NT names, opening and listing directories,
//! stat, messages, local time, and the browser's delete.

use super::ffi::*;
use crate::meta::{Errno, Kind, Meta, Timespec};
use crate::platform::Follow;
use std::ffi::{c_void, CStr, OsString};
use std::os::windows::ffi::{OsStrExt, OsStringExt};
use std::ptr::null;

// ---------------------------------------------------------------------------------------
// Handles, errors, names.

/// A handle this module opened and closes.
pub(super) struct Owned(Handle);

impl Drop for Owned {
    fn drop(&mut self) {
        // SAFETY: `self.0` came from a successful NtOpenFile and is closed exactly once,
        // here; nothing else holds on to it after the owner is dropped.
        unsafe {
            NtClose(self.0);
        }
    }
}

/// Converts an NTSTATUS to the Win32 error code std and the rest of dfdu use.
pub(super) fn errno_of(status: NtStatus) -> Errno {
    // SAFETY: a pure table lookup on a plain integer; it touches no caller memory.
    let code = unsafe { RtlNtStatusToDosError(status) };
    if code == 0 || code == ERROR_MR_MID_NOT_FOUND {
        Errno(status)
    } else {
        Errno(code as i32)
    }
}

/// Appends `units` as WTF-8: UTF-8 for every scalar value, and the generalised 3-byte
/// form for a surrogate that is not part of a pair, so nothing is lost or replaced.
pub(super) fn push_wtf8(out: &mut Vec<u8>, units: impl IntoIterator<Item = u16>) {
    for c in char::decode_utf16(units) {
        let cp = match c {
            Ok(c) => c as u32,
            Err(e) => u32::from(e.unpaired_surrogate()),
        };
        match cp {
            0..=0x7F => out.push(cp as u8),
            0x80..=0x7FF => out.extend_from_slice(&[0xC0 | (cp >> 6) as u8, 0x80 | (cp & 0x3F) as u8]),
            0x800..=0xFFFF => out.extend_from_slice(&[
                0xE0 | (cp >> 12) as u8,
                0x80 | ((cp >> 6) & 0x3F) as u8,
                0x80 | (cp & 0x3F) as u8,
            ]),
            _ => out.extend_from_slice(&[
                0xF0 | (cp >> 18) as u8,
                0x80 | ((cp >> 12) & 0x3F) as u8,
                0x80 | ((cp >> 6) & 0x3F) as u8,
                0x80 | (cp & 0x3F) as u8,
            ]),
        }
    }
}

/// Appends the UTF-16 form of WTF-8 `bytes` (the inverse of `push_wtf8`). Bytes that are
/// not WTF-8 at all (only possible for text that never came from Windows) become U+FFFD.
pub(super) fn push_utf16(out: &mut Vec<u16>, bytes: &[u8]) {
    let cont = |i: usize| bytes.get(i).copied().filter(|b| b & 0xC0 == 0x80).map(|b| u32::from(b & 0x3F));
    let mut i = 0;
    while i < bytes.len() {
        let b = bytes[i];
        let (cp, len) = match b {
            0x00..=0x7F => (Some(u32::from(b)), 1),
            0xC2..=0xDF => (cont(i + 1).map(|c1| (u32::from(b & 0x1F) << 6) | c1), 2),
            0xE0..=0xEF => match (cont(i + 1), cont(i + 2)) {
                (Some(c1), Some(c2)) => {
                    let cp = (u32::from(b & 0x0F) << 12) | (c1 << 6) | c2;
                    (Some(cp).filter(|&cp| cp >= 0x800), 3)
                }
                _ => (None, 1),
            },
            0xF0..=0xF4 => match (cont(i + 1), cont(i + 2), cont(i + 3)) {
                (Some(c1), Some(c2), Some(c3)) => {
                    let cp = (u32::from(b & 0x07) << 18) | (c1 << 12) | (c2 << 6) | c3;
                    (Some(cp).filter(|&cp| (0x1_0000..=0x10_FFFF).contains(&cp)), 4)
                }
                _ => (None, 1),
            },
            _ => (None, 1),
        };
        match cp {
            Some(cp) if cp >= 0x1_0000 => {
                let v = cp - 0x1_0000;
                out.push(0xD800 | (v >> 10) as u16);
                out.push(0xDC00 | (v & 0x3FF) as u16);
                i += len;
            }
            Some(cp) => {
                out.push(cp as u16);
                i += len;
            }
            None => {
                out.push(0xFFFD);
                i += 1;
            }
        }
    }
}

/// The NT form of a path argument: `\??\` plus the absolute Win32 path (`UNC\` for
/// `\\server\share`); a `\\?\` path is taken verbatim, as Win32 does.
pub(super) fn nt_path(path: &CStr) -> Result<Vec<u16>, Errno> {
    pub(super) const NT_PREFIX: [u16; 4] = [b'\\' as u16, b'?' as u16, b'?' as u16, b'\\' as u16];
    pub(super) const VERBATIM: [u16; 4] = [b'\\' as u16, b'\\' as u16, b'?' as u16, b'\\' as u16];
    pub(super) const DEVICE: [u16; 4] = [b'\\' as u16, b'\\' as u16, b'.' as u16, b'\\' as u16];
    let mut wide = Vec::new();
    push_utf16(&mut wide, path.to_bytes());
    if wide.is_empty() {
        return Err(Errno(ERROR_FILE_NOT_FOUND));
    }
    let mut out = NT_PREFIX.to_vec();
    if wide.starts_with(&VERBATIM) || wide.starts_with(&NT_PREFIX) {
        out.extend_from_slice(&wide[4..]);
        return Ok(out);
    }
    let absolute = std::path::absolute(OsString::from_wide(&wide))
        .map_err(|e| Errno(e.raw_os_error().unwrap_or(ERROR_FILE_NOT_FOUND)))?;
    let full: Vec<u16> = absolute.as_os_str().encode_wide().collect();
    if full.starts_with(&VERBATIM) || full.starts_with(&DEVICE) {
        out.extend_from_slice(&full[4..]);
    } else if full.starts_with(&[b'\\' as u16, b'\\' as u16]) {
        out.extend("UNC".encode_utf16());
        out.extend_from_slice(&full[1..]);
    } else {
        out.extend_from_slice(&full);
    }
    Ok(out)
}

/// Runs `f` with the UTF-16 form of a single name, without allocating for usual names.
/// A name holding `\` is refused: relative to a handle it would name another directory
/// (no Windows file system lets a listing return one, but Wine does for Unix names).
pub(super) fn with_wide<T>(name: &CStr, f: impl FnOnce(&[u16]) -> Result<T, Errno>) -> Result<T, Errno> {
    let bytes = name.to_bytes();
    if bytes.is_ascii() && bytes.len() <= 256 && !bytes.contains(&b'\\') {
        let mut buf = [0u16; 256];
        for (w, &b) in buf.iter_mut().zip(bytes) {
            *w = u16::from(b);
        }
        return f(&buf[..bytes.len()]);
    }
    let mut wide = Vec::with_capacity(bytes.len());
    push_utf16(&mut wide, bytes);
    if wide.contains(&(b'\\' as u16)) {
        return Err(Errno(ERROR_INVALID_NAME));
    }
    f(&wide)
}

/// `NtOpenFile` on `name`, relative to `root` (or absolute when `root` is 0).
pub(super) fn nt_open(
    root: Handle,
    name: &[u16],
    ignore_case: bool,
    access: u32,
    options: u32,
) -> Result<Owned, Errno> {
    let len_bytes = u16::try_from(name.len() * 2).map_err(|_| Errno(ERROR_FILENAME_EXCED_RANGE))?;
    let object_name = UnicodeString { length_bytes: len_bytes, maximum_length_bytes: len_bytes, buffer: name.as_ptr() };
    let attributes = ObjectAttributes {
        length: std::mem::size_of::<ObjectAttributes>() as u32,
        root_directory: root,
        object_name: &object_name,
        attributes: if ignore_case { OBJ_CASE_INSENSITIVE } else { 0 },
        security_descriptor: null(),
        security_quality_of_service: null(),
    };
    let mut io = IoStatusBlock::default();
    let mut handle: Handle = 0;
    // SAFETY: every pointer refers to a live local (`object_name` borrows `name`, which
    // outlives the call); `root` is 0 or a handle owned by a live `Dir`; NtOpenFile writes
    // only `handle` and `io`.
    let status = unsafe { NtOpenFile(&mut handle, access, &attributes, &mut io, FILE_SHARE_ALL, options) };
    if status < 0 {
        return Err(errno_of(status));
    }
    Ok(Owned(handle))
}

/// Views an 8-byte aligned buffer as bytes.
pub(super) fn as_bytes(buf: &[u64]) -> &[u8] {
    // SAFETY: u64 has no padding and every bit pattern is a valid u8; the byte view
    // covers exactly the same memory and borrows `buf` for its lifetime.
    unsafe { std::slice::from_raw_parts(buf.as_ptr().cast::<u8>(), buf.len() * 8) }
}

pub(super) fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(b[at..at + 4].try_into().expect("4 bytes"))
}

pub(super) fn i64_at(b: &[u8], at: usize) -> i64 {
    i64::from_le_bytes(b[at..at + 8].try_into().expect("8 bytes"))
}

/// One `NtQueryInformationFile` (or, with `volume`, `NtQueryVolumeInformationFile`) into
/// `buf`. A buffer overflow still fills the fixed part, which is all we read.
pub(super) fn query(handle: Handle, class: u32, volume: bool, buf: &mut [u64]) -> Result<(), Errno> {
    let mut io = IoStatusBlock::default();
    let ptr = buf.as_mut_ptr().cast::<c_void>();
    let len = (buf.len() * 8) as u32;
    // SAFETY: `handle` is open for the duration of the call; `ptr` is valid, writable and
    // 8-byte aligned for `len` bytes; the call writes at most `len` bytes there.
    let status = unsafe {
        if volume {
            NtQueryVolumeInformationFile(handle, &mut io, ptr, len, class)
        } else {
            NtQueryInformationFile(handle, &mut io, ptr, len, class)
        }
    };
    if status < 0 && status != STATUS_BUFFER_OVERFLOW {
        return Err(errno_of(status));
    }
    Ok(())
}

/// The volume's serial number and whether it can hold hard links.
pub(super) fn volume_of(handle: Handle) -> (u64, bool) {
    let mut buf = [0u64; 16];
    let serial = match query(handle, FILE_FS_VOLUME_INFORMATION, true, &mut buf) {
        Ok(()) => u64::from(u32_at(as_bytes(&buf), 8)),
        Err(_) => 0,
    };
    let mut buf = [0u64; 16];
    let links = match query(handle, FILE_FS_ATTRIBUTE_INFORMATION, true, &mut buf) {
        Ok(()) => {
            let b = as_bytes(&buf);
            let name_len = (u32_at(b, 8) as usize).min(b.len() - 12);
            let name: Vec<u16> =
                b[12..12 + name_len].chunks_exact(2).map(|p| u16::from_le_bytes([p[0], p[1]])).collect();
            u32_at(b, 0) & FILE_SUPPORTS_HARD_LINKS != 0
                || !NO_LINK_FILE_SYSTEMS.iter().any(|fs| fs.encode_utf16().eq(name.iter().copied()))
        }
        Err(_) => true,
    };
    (serial, links)
}

/// File systems that cannot hold a hard link. Elsewhere a volume without the
/// `FILE_SUPPORTS_HARD_LINKS` flag is still assumed to have them (Wine, which does
/// support them, does not set the flag): counting a file once too carefully costs
/// memory, counting a linked file twice gives a wrong total.
pub(super) const NO_LINK_FILE_SYSTEMS: [&str; 5] = ["FAT", "FAT32", "exFAT", "CDFS", "UDF"];

pub(super) fn timespec_of(file_time: i64) -> Timespec {
    Timespec {
        sec: file_time.div_euclid(10_000_000) - SECS_1601_TO_1970,
        nsec: file_time.rem_euclid(10_000_000) as u32 * 100,
    }
}

pub(super) fn kind_of(attributes: u32, reparse_tag: u32) -> Kind {
    if attributes & FILE_ATTRIBUTE_REPARSE_POINT != 0 && reparse_tag & REPARSE_TAG_NAME_SURROGATE != 0 {
        Kind::Symlink
    } else if attributes & FILE_ATTRIBUTE_DIRECTORY != 0 {
        Kind::Dir
    } else if attributes & FILE_ATTRIBUTE_DEVICE != 0 {
        Kind::Other
    } else {
        Kind::File
    }
}

pub(super) fn blocks_of(allocation_bytes: i64) -> u64 {
    (allocation_bytes.max(0) as u64).div_ceil(512)
}

// ---------------------------------------------------------------------------------------
// Directories.

/// An open directory handle, with the volume it lives on.
pub struct Dir {
    pub(super) handle: Owned,
    pub(super) volume: u64,
    /// The volume can hold hard links: listed files may have other names.
    pub(super) links: bool,
}

pub(super) fn dir_options(follow: Follow) -> u32 {
    let base = FILE_DIRECTORY_FILE | FILE_SYNCHRONOUS_IO_NONALERT | FILE_OPEN_FOR_BACKUP_INTENT;
    if follow == Follow::Yes {
        base
    } else {
        base | FILE_OPEN_REPARSE_POINT
    }
}

pub(super) const DIR_ACCESS: u32 = FILE_LIST_DIRECTORY | FILE_READ_ATTRIBUTES | SYNCHRONIZE;

/// Opens a directory named by a path (relative to the working directory or absolute).
pub fn open_path(path: &CStr, follow: Follow) -> Result<Dir, Errno> {
    let nt = nt_path(path)?;
    let handle = nt_open(0, &nt, true, DIR_ACCESS, dir_options(follow))?;
    let (volume, links) = volume_of(handle.0);
    Ok(Dir { handle, volume, links })
}

/// Opens the directory `name` inside `parent`: one name, relative to the parent handle.
pub fn open_at(parent: &Dir, name: &CStr, follow: Follow) -> Result<Dir, Errno> {
    let handle = with_wide(name, |w| nt_open(parent.handle.0, w, false, DIR_ACCESS, dir_options(follow)))?;
    // Without following a reparse point a child cannot be on another volume.
    let (volume, links) = if follow == Follow::Yes { volume_of(handle.0) } else { (parent.volume, parent.links) };
    Ok(Dir { handle, volume, links })
}

// ---------------------------------------------------------------------------------------
// Stat: only for arguments and followed links; listings carry their own sizes.

pub(super) fn stat_options(follow: Follow) -> u32 {
    let base = FILE_SYNCHRONOUS_IO_NONALERT | FILE_OPEN_FOR_BACKUP_INTENT;
    if follow == Follow::Yes {
        base
    } else {
        base | FILE_OPEN_REPARSE_POINT
    }
}

pub(super) const STAT_ACCESS: u32 = FILE_READ_ATTRIBUTES | SYNCHRONIZE;

/// Stats a path relative to the working directory (or absolute).
pub fn stat_path(path: &CStr, follow: Follow) -> Result<Meta, Errno> {
    let nt = nt_path(path)?;
    let handle = nt_open(0, &nt, true, STAT_ACCESS, stat_options(follow))?;
    stat_handle(handle.0, None)
}

/// Stats the entry `name` of `dir`: one open, four queries, one close.
pub fn stat_at(dir: &Dir, name: &CStr, follow: Follow) -> Result<Meta, Errno> {
    let handle = with_wide(name, |w| nt_open(dir.handle.0, w, false, STAT_ACCESS, stat_options(follow)))?;
    stat_handle(handle.0, (follow == Follow::No).then_some(dir.volume))
}

/// What a file whose bytes are read is opened with: data and attributes, synchronous
/// (as std's `File` expects), never a directory, a reparse point opened itself.
const FILE_ACCESS: u32 = FILE_READ_DATA | FILE_READ_ATTRIBUTES | SYNCHRONIZE;
const FILE_OPTIONS: u32 =
    FILE_NON_DIRECTORY_FILE | FILE_SYNCHRONOUS_IO_NONALERT | FILE_OPEN_FOR_BACKUP_INTENT | FILE_OPEN_REPARSE_POINT;

/// Opens the entry `name` of `dir` to read its bytes if it is a regular file:
/// `(None, meta)` for anything else. One name relative to the directory's handle, a
/// reparse point opened itself (never followed): by one name inside a directory NT
/// reaches no device, so only a file of that directory is ever opened.
pub fn open_file_at(dir: &Dir, name: &CStr, _others_may_write: bool) -> Result<(Option<std::fs::File>, Meta), Errno> {
    let handle = with_wide(name, |w| nt_open(dir.handle.0, w, false, FILE_ACCESS, FILE_OPTIONS))?;
    let meta = stat_handle(handle.0, Some(dir.volume))?;
    Ok(file_of(handle, meta))
}

/// Without Unix owners (ACLs are not read here), anyone may have changed a directory as
/// far as dfdu can tell: `open_file_at` then checks before it opens, which it always does.
pub fn dir_others_may_write(_dir: &Dir) -> Result<bool, Errno> {
    Ok(true)
}

/// `open_file_at` for a path (a file argument, as the user typed it).
pub fn open_file_path(path: &CStr) -> Result<(Option<std::fs::File>, Meta), Errno> {
    let nt = nt_path(path)?;
    let handle = nt_open(0, &nt, true, FILE_ACCESS, FILE_OPTIONS)?;
    let meta = stat_handle(handle.0, None)?;
    Ok(file_of(handle, meta))
}

fn file_of(handle: Owned, meta: Meta) -> (Option<std::fs::File>, Meta) {
    use std::os::windows::io::{FromRawHandle, RawHandle};
    if meta.kind != Kind::File {
        return (None, meta);
    }
    let raw = handle.0;
    std::mem::forget(handle);
    // SAFETY: `raw` is an open handle nothing else owns: the `Owned` that held it was
    // forgotten above, so the `File` is its only owner and closes it once.
    let file = unsafe { std::fs::File::from_raw_handle(raw as RawHandle) };
    (Some(file), meta)
}

pub(super) fn stat_handle(handle: Handle, volume: Option<u64>) -> Result<Meta, Errno> {
    let mut basic = [0u64; 5];
    query(handle, FILE_BASIC_INFORMATION, false, &mut basic)?;
    let mut standard = [0u64; 3];
    query(handle, FILE_STANDARD_INFORMATION, false, &mut standard)?;
    let mut internal = [0u64; 1];
    query(handle, FILE_INTERNAL_INFORMATION, false, &mut internal)?;
    let (basic, standard) = (as_bytes(&basic), as_bytes(&standard));
    let attributes = u32_at(basic, 32);
    let mut reparse_tag = 0;
    if attributes & FILE_ATTRIBUTE_REPARSE_POINT != 0 {
        let mut tag = [0u64; 1];
        query(handle, FILE_ATTRIBUTE_TAG_INFORMATION, false, &mut tag)?;
        reparse_tag = u32_at(as_bytes(&tag), 4);
    }
    let kind = kind_of(attributes, reparse_tag);
    // A directory listing reports 0 bytes for every directory; a directory's own index
    // allocation, which this query would give, is left out the same way here, so that
    // an argument and the same directory met inside a scan agree.
    let (allocation, end_of_file) = if kind == Kind::Dir { (0, 0) } else { (i64_at(standard, 0), i64_at(standard, 8)) };
    Ok(Meta {
        kind,
        dev: volume.unwrap_or_else(|| volume_of(handle).0),
        ino: internal[0],
        nlink: u64::from(u32_at(standard, 16)),
        blocks: blocks_of(allocation),
        size: end_of_file.max(0) as u64,
        atime: timespec_of(i64_at(basic, 8)),
        mtime: timespec_of(i64_at(basic, 16)),
        ctime: timespec_of(i64_at(basic, 24)),
    })
}

// ---------------------------------------------------------------------------------------
// Listing.

/// Bytes handed to one `NtQueryDirectoryFile`: 64 KiB, the most an SMB server returns
/// per request, and several hundred entries of a local directory.
pub(super) const LIST_BUFFER_BYTES: usize = 64 * 1024;

/// `FILE_ID_FULL_DIR_INFORMATION` layout (fixed part, then the name).
pub(super) const REC_NEXT: usize = 0;
pub(super) const REC_LAST_ACCESS: usize = 16;
pub(super) const REC_LAST_WRITE: usize = 24;
pub(super) const REC_CHANGE: usize = 32;
pub(super) const REC_END_OF_FILE: usize = 40;
pub(super) const REC_ALLOCATION: usize = 48;
pub(super) const REC_ATTRIBUTES: usize = 56;
pub(super) const REC_NAME_BYTES: usize = 60;
/// Holds the reparse tag when the entry is a reparse point.
pub(super) const REC_EA_SIZE: usize = 64;
pub(super) const REC_FILE_ID: usize = 72;
pub(super) const REC_NAME: usize = 80;

/// A worker's listing buffer (8-byte aligned, as the records are) and name scratch.
pub struct Lister {
    pub(super) buf: Vec<u64>,
    pub(super) name: Vec<u8>,
}

impl Default for Lister {
    fn default() -> Self {
        Lister { buf: vec![0; LIST_BUFFER_BYTES / 8], name: Vec::with_capacity(1024) }
    }
}

impl Lister {
    /// Reads every entry of `dir` (without `.` and `..`) and calls
    /// `each(name, file id, Some(meta))` in the order the file system returns them. An
    /// error after some entries were delivered is returned as well.
    pub fn list(&mut self, dir: &Dir, each: &mut dyn FnMut(&CStr, u64, Option<&Meta>)) -> Result<(), Errno> {
        let mut restart = 1u8;
        loop {
            let mut io = IoStatusBlock::default();
            let len = (self.buf.len() * 8) as u32;
            // SAFETY: the handle is open (owned by `dir`, borrowed for the call) and was
            // opened for synchronous I/O, so the call completes before it returns and
            // writes at most `len` bytes into our 8-byte aligned buffer; the optional
            // event, APC and file name arguments are null.
            let status = unsafe {
                NtQueryDirectoryFile(
                    dir.handle.0,
                    0,
                    null(),
                    null(),
                    &mut io,
                    self.buf.as_mut_ptr().cast(),
                    len,
                    FILE_ID_FULL_DIRECTORY_INFORMATION,
                    0,
                    null(),
                    restart,
                )
            };
            restart = 0;
            match status {
                STATUS_NO_MORE_FILES | STATUS_NO_SUCH_FILE => return Ok(()),
                s if s < 0 => return Err(errno_of(s)),
                _ => {}
            }
            let filled = io.information.min(self.buf.len() * 8);
            if filled == 0 {
                return Ok(());
            }
            walk_records(&as_bytes(&self.buf)[..filled], dir, &mut self.name, each)?;
        }
    }
}

/// Delivers the records of one filled buffer. Offsets are checked, so a malformed
/// buffer ends the listing with an error instead of reading past it.
pub(super) fn walk_records(
    bytes: &[u8],
    dir: &Dir,
    name: &mut Vec<u8>,
    each: &mut dyn FnMut(&CStr, u64, Option<&Meta>),
) -> Result<(), Errno> {
    let malformed = Errno(ERROR_INVALID_DATA);
    let mut at = 0usize;
    loop {
        let rec = bytes.get(at..).filter(|r| r.len() >= REC_NAME).ok_or(malformed)?;
        let name_bytes = u32_at(rec, REC_NAME_BYTES) as usize;
        let raw = rec.get(REC_NAME..REC_NAME + name_bytes).ok_or(malformed)?;
        let units = raw.chunks_exact(2).map(|p| u16::from_le_bytes([p[0], p[1]]));
        let dots = raw == [b'.', 0] || raw == [b'.', 0, b'.', 0];
        if !dots && !raw.chunks_exact(2).any(|p| p == [0, 0]) {
            name.clear();
            push_wtf8(name, units);
            name.push(0);
            let cname = CStr::from_bytes_with_nul(name).expect("one NUL, at the end");
            let meta = listed_meta(rec, dir);
            each(cname, meta.ino, Some(&meta));
        }
        let next = u32_at(rec, REC_NEXT) as usize;
        if next == 0 {
            return Ok(());
        }
        at += next;
    }
}

/// What one directory record says about an entry (see "Hard links" at the top).
pub(super) fn listed_meta(rec: &[u8], dir: &Dir) -> Meta {
    let attributes = u32_at(rec, REC_ATTRIBUTES);
    let reparse_tag = u32_at(rec, REC_EA_SIZE);
    let kind = kind_of(attributes, reparse_tag);
    let file_id = i64_at(rec, REC_FILE_ID);
    let matchable = file_id != 0 && file_id != -1;
    // 0: "unknown", which makes the scanner count the file once per file id.
    let nlink = if kind == Kind::File && dir.links && matchable { 0 } else { 1 };
    // Directories count 0 bytes, as NTFS lists them and as `stat_handle` reports them.
    let (allocation, end_of_file) =
        if kind == Kind::Dir { (0, 0) } else { (i64_at(rec, REC_ALLOCATION), i64_at(rec, REC_END_OF_FILE)) };
    Meta {
        kind,
        dev: dir.volume,
        ino: file_id as u64,
        nlink,
        blocks: blocks_of(allocation),
        size: end_of_file.max(0) as u64,
        atime: timespec_of(i64_at(rec, REC_LAST_ACCESS)),
        mtime: timespec_of(i64_at(rec, REC_LAST_WRITE)),
        ctime: timespec_of(i64_at(rec, REC_CHANGE)),
    }
}

// GNU fts sorts big directories by inode to save seeks on Unix disks; NTFS already
// returns entries in its index (name) order, and file ids are not disk positions. Windows
// has no kernel file systems of the kind `--exclude-kernfs` leaves out, and lookups in one
// directory are not known to serialize. The worker count is every CPU this process may
// use, at most 64, as on Linux (the best count for NTFS has yet to be measured on real
// Windows). All of that is the std::fs backend's answer too.
pub use crate::platform::fallback::{
    default_threads, entries_bound, kernel_fs, lookups_serialize, sorts_by_inode, thread_cpu_ns,
};

/// Windows has no small per-process handle limit (it is about 16 million).
pub fn raise_fd_limit() -> u64 {
    1 << 16
}

/// Handles assumed open: standard input, output and error.
pub fn open_fds() -> u64 {
    3
}

/// Windows has no per-process address-space limit like `RLIMIT_AS` (a job object's
/// memory limit counts committed memory, not reservations).
pub fn address_space_left() -> Option<u64> {
    None
}

// ---------------------------------------------------------------------------------------
// Messages and signals.

/// Texts in the words GNU du uses for the common cases (what Cygwin's errno mapping
/// gives); anything else in the system's own words.
pub fn errno_text(e: Errno) -> String {
    if e.0 < 0 {
        return format!("NTSTATUS {:#010X}", e.0 as u32);
    }
    let text = match e.0 {
        2 | 3 | 53 | 67 | 161 => "No such file or directory",
        4 => "Too many open files",
        5 | 1920 => "Permission denied",
        6 => "Bad file descriptor",
        8 | 14 => "Cannot allocate memory",
        23 | 29 | 1117 => "Input/output error",
        32 | 33 => "Device or resource busy",
        80 | 183 => "File exists",
        87 | 123 => "Invalid argument",
        112 => "No space left on device",
        206 => "File name too long",
        267 => "Not a directory",
        336 => "Is a directory",
        681 | 1921 => "Too many levels of symbolic links",
        _ => {
            let s = std::io::Error::from_raw_os_error(e.0).to_string();
            let s = s.find(" (os error").map_or(s.as_str(), |cut| &s[..cut]);
            return s.trim_end_matches(['.', '\r', '\n', ' ']).to_string();
        }
    };
    text.to_string()
}

/// Windows has no SIGPIPE; a closed pipe is a write error (`BrokenPipe`) handled above.
pub fn default_sigpipe() {}

// ---------------------------------------------------------------------------------------
// Deletion, for the browser: check a directory's identity, remove one entry.

/// (volume serial, file id) of an open directory: what the listing reported for it.
pub fn dir_id(dir: &Dir) -> Result<(u64, u64), Errno> {
    let mut internal = [0u64; 1];
    query(dir.handle.0, FILE_INTERNAL_INFORMATION, false, &mut internal)?;
    Ok((dir.volume, internal[0]))
}

/// Which mount an open directory is on (a key: its volume), and whether it is a mount
/// root. A volume mounted in a folder is a reparse point, which `open_at` never enters.
pub fn dir_mount(dir: &Dir) -> Result<(u64, bool), Errno> {
    Ok((dir.volume, false))
}

/// The mount points of the system, where they can be listed; `None` here.
pub fn mount_points() -> Option<Vec<Vec<u8>>> {
    None
}

/// Removes the entry `name` of `dir` itself: an empty directory when `is_dir`; anything
/// else when not (a symlink or junction, never what it points to; a real directory is
/// refused). The entry is opened by one name relative to `dir`, without following a
/// reparse point, and marked for deletion on that handle.
pub fn remove_at(dir: &Dir, name: &CStr, is_dir: bool) -> Result<(), Errno> {
    let kind = if is_dir { FILE_DIRECTORY_FILE } else { 0 };
    let options = kind | FILE_SYNCHRONOUS_IO_NONALERT | FILE_OPEN_FOR_BACKUP_INTENT | FILE_OPEN_REPARSE_POINT;
    let access = DELETE | FILE_READ_ATTRIBUTES | SYNCHRONIZE;
    let handle = with_wide(name, |w| nt_open(dir.handle.0, w, false, access, options))?;
    if !is_dir {
        let mut tag = [0u64; 1];
        query(handle.0, FILE_ATTRIBUTE_TAG_INFORMATION, false, &mut tag)?;
        let attributes = u32_at(as_bytes(&tag), 0);
        if attributes & FILE_ATTRIBUTE_DIRECTORY != 0 && attributes & FILE_ATTRIBUTE_REPARSE_POINT == 0 {
            return Err(Errno(ERROR_DIRECTORY_NOT_SUPPORTED));
        }
    }
    let mut disposition = [1u64];
    let mut io = IoStatusBlock::default();
    // SAFETY: the handle is open with DELETE access; the buffer holds a
    // FILE_DISPOSITION_INFORMATION (one BOOLEAN, here TRUE) and outlives the call.
    let status = unsafe {
        NtSetInformationFile(handle.0, &mut io, disposition.as_mut_ptr().cast(), 1, FILE_DISPOSITION_INFORMATION)
    };
    if status < 0 {
        return Err(errno_of(status));
    }
    Ok(())
}

/// ERROR_NOT_SUPPORTED: what the calls below answer.
const NOT_SUPPORTED: Errno = Errno(ERROR_NOT_SUPPORTED);

/// Hard links, symbolic links and renames relative to a handle are not built here yet
/// (NT's FileLinkInformation and FileRenameInformation would do them): `dupes`' actions
/// but `--delete` say "not supported" on Windows.
pub fn link_at(_from_dir: &Dir, _from: &CStr, _to_dir: &Dir, _to: &CStr) -> Result<(), Errno> {
    Err(NOT_SUPPORTED)
}

/// See `link_at`.
pub fn symlink_at(_target: &CStr, _dir: &Dir, _name: &CStr) -> Result<(), Errno> {
    Err(NOT_SUPPORTED)
}

/// See `link_at`.
pub fn rename_at(_dir: &Dir, _from: &CStr, _to: &CStr) -> Result<(), Errno> {
    Err(NOT_SUPPORTED)
}
