//! Windows reader: NT directory queries. Each directory is opened relative to its
//! parent's handle (`NtOpenFile` with `RootDirectory`, never following a reparse point
//! unless asked), then listed with `NtQueryDirectoryFile(FileIdFullDirectoryInformation)`
//! into one fixed buffer per worker. That class carries, per entry, the end-of-file size
//! (apparent size), the allocation size (disk usage), the attributes, the reparse tag and
//! the 64-bit file id, so the common case opens and queries no file on its own: `list`
//! hands the sizes to the scanner (`Some(meta)`) and the scanner never calls `stat_at`.
//!
//! Decisions, in the order a reader of this file will wonder about them:
//!
//! * **Declarations by hand.** Seven ntdll and twelve kernel32 functions, linked with
//!   `#[link(kind = "raw-dylib")]`: no import library, no `windows-sys` (a large crate
//!   whose features would add build time for ~150 lines we can check against the SDK
//!   headers ourselves; the design card asks for a reason for each dependency).
//! * **Names are WTF-8.** Windows names are UTF-16 and may hold unpaired surrogates; the
//!   scanner sees them as WTF-8 bytes (a lone surrogate becomes its 3-byte generalised
//!   UTF-8 form), which is lossless, and `open_at` turns them back into the same UTF-16.
//!   A name holding U+0000 (impossible on NTFS and FAT) cannot be a `CStr` and is skipped.
//! * **Reparse points** whose tag is a *name surrogate* (symlinks, junctions, mount
//!   points) are reported as `Kind::Symlink` and opened with `FILE_OPEN_REPARSE_POINT`
//!   unless the caller follows (`-L`, `-H`/`-D` for arguments). Other reparse points
//!   (deduplicated, compressed or cloud files) are ordinary files or directories.
//! * **Hard links.** No directory information class has a link count, and opening
//!   every file to ask would cost more than the listing itself. On a volume that may
//!   hold hard links (anything but FAT, exFAT, CDFS and UDF) a listed file therefore
//!   has `nlink = 0`, "unknown" (`Meta::may_have_links`): the scanner keeps it as a
//!   hard-link candidate and counts each file id once, as GNU du counts an inode once.
//!   The cost, instead of a stat per file, is a hash-set entry (or du's 48-byte item)
//!   per file; `stat_path`/`stat_at` (arguments, `-L`) report the true `NumberOfLinks`. A
//!   file id of 0 or -1 (some network and ReFS volumes) cannot be matched and is never
//!   a candidate.
//! * **Directories count 0 bytes**, however they are asked about: NTFS lists them with
//!   no size, and a directory given as an argument must agree with the same directory
//!   met inside a scan.
//! * **Devices** are volume serial numbers, queried once per root (and per followed
//!   reparse point); a directory reached without following one stays on its parent's
//!   volume, so children inherit it.
//! * **Errors** are Win32 error codes (`RtlNtStatusToDosError`), the same numbering
//!   `std::io::Error` uses on Windows, so errors from std and from here print alike. A
//!   status with no Win32 equivalent is kept as the negative NTSTATUS.
//! * **Long paths.** Below an argument everything is opened by one name relative to a
//!   handle, so depth has no limit. An argument is made absolute (`GetFullPathNameW`
//!   via `std::path::absolute`) and opened as an NT path (`\??\C:\...`), which skips the
//!   Win32 MAX_PATH check.
//!
//! Implements the contract in `platform/mod.rs`, no printing, no policy. Files:
//! `ffi.rs` (the declarations), `dir.rs` (handles, names, directories, stat, listing,
//! messages, time, delete), `term.rs` (the console). Every `unsafe` block is an FFI call
//! or a view of a buffer the OS filled; each states what makes it sound.

mod dir;
mod extents;
mod ffi;
mod term;
#[cfg(test)]
mod tests;
mod time;
mod write;

pub use dir::{
    address_space_left, default_sigpipe, default_threads, dir_id, dir_mount, dir_others_may_write, entries_bound,
    errno_text, kernel_fs, link_at, lookups_serialize, mount_points, open_at, open_fds, open_file_at, open_file_path,
    open_path, raise_fd_limit, remove_at, rename_at, sorts_by_inode, stat_at, stat_path, symlink_at, thread_cpu_ns,
    Dir, Lister,
};
pub use extents::{
    btrfs_tree, bulk_extents, bulk_extents_estimate, file_extents_at, fs_shares_extents, BtrfsTree, ExtentBuf,
    SearchBuf,
};
pub use time::{local_time, reload_zone};

// `dupes` through std::fs, as on every OS but Linux.
pub use super::fallback::dupes::{
    cached, check_file, dedupe, dedupe_supported, extents_never_shared, free_bytes, fs_block_bytes, fs_uuid, layout,
    physical_start, read_only_snapshot, rotational, swap_files, temp_file_in,
};
pub use term::{
    interrupt_catch, interrupt_requested, term_raw_enter, term_raw_leave, term_signals, term_size, term_stop_self,
    term_wait, term_write, SIG_CONTINUE, SIG_QUIT, SIG_RESIZE, SIG_SUSPEND,
};
pub use write::{
    create_temp_in, effective_uid, entry_at, file_owner, lock_file, make_dir_in, move_into, open_at_nofollow,
    open_read_in, open_write_dir, open_write_in, remove_in, rename_in, replace_in, write_dir_id, write_dir_owner,
    WriteDir,
};
