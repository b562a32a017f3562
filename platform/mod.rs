//! The operating system, behind one set of names: everything here is `platform::NAME`,
//! whichever OS the build is for. This file is the only place that chooses a platform.
//!
//! # Layout
//!
//! One folder per OS family, the backend outer and the feature inner, with the same file
//! name for the same feature wherever a backend has it:
//!
//! * `linux/` — `dir.rs` (reading trees: `getdents64`, `statx`; mounts; the process),
//!   `extents.rs` (FIEMAP), `dupes.rs` (FIDEDUPERANGE and the rest of `dupes`' calls),
//!   `time.rs` (local time).
//! * `macos/` — `dir.rs` (`getattrlistbulk`; the process), `attrs.rs` (its buffer
//!   parser), `extents.rs` (APFS clone figures), `time.rs` (local time).
//! * `windows/` — `dir.rs` (the NT reader; the process, delete), `ffi.rs` (the
//!   declarations), `term.rs` (the console), `time.rs` (local time), `extents.rs` (none).
//! * `unix/` — what the Linux and macOS backends share and take in themselves: `dir.rs`
//!   (directory handles, their identity and removal) and `term.rs` (termios and signals).
//! * `fallback/` — std::fs: `dir.rs` (reading by paths), `dupes.rs` (`dupes` without
//!   extents or dedupe, which macOS and Windows use too), and stubs or plain answers for
//!   the rest (`term.rs`, `time.rs` in UTC, `extents.rs`). It is the backend on any
//!   other OS, and it is built everywhere as the oracle the native readers are tested
//!   against (`DFDU_READER=portable`).
//! * `common/` — what no OS family owns, written once for all: `dupes.rs` (the `dupes`
//!   contract's types, the hash file's lock and directory handle) and `oom.rs` (the global
//!   allocator). A folder of its own rather than files beside this one, so that `ls
//!   platform` shows only this file and folders.
//!
//! # The contract every backend implements
//!
//! The same type and function names, no printing, no policy. Each backend's `mod.rs`
//! lists by name what it offers, and `contract!` below states every name with its type:
//! the build checks the backend it compiles and `fallback` (and `make check-targets` the
//! macOS and Windows ones), so a backend that lacks a name or types it differently does
//! not build. What the names are for:
//!
//! * Reading a tree (`walk::reader::Native`): `Dir` (an open directory handle), `Lister`
//!   (one worker's listing buffer, `Default`), `open_path`, `open_at`, `stat_path`,
//!   `stat_at` (each told whether to `Follow` a symlink, a type of this file),
//!   `Lister::list`, `sorts_by_inode`, `kernel_fs` (a directory on proc, sysfs, cgroup
//!   and the like, for `--exclude-kernfs`), `lookups_serialize` (whether a cold
//!   directory's stats had better stay on one thread) with `thread_cpu_ns`, and
//!   `errno_text`.
//! * The process: `local_time` (and `reload_zone`: as after a second `tzset`, which GNU
//!   du's `%s` runs), `raise_fd_limit`, `open_fds`, `address_space_left`,
//!   `default_threads`, `default_sigpipe`.
//! * The files `dupes` reads: `open_file_at` (one name inside a directory handle) and
//!   `open_file_path`, which open nothing but a regular file, never following a symlink
//!   (Linux: an `O_PATH` handle first, reopened through `/proc/self/fd`, unless
//!   `dir_others_may_write` says nobody else may change the directory).
//! * The browser's delete and `dupes`' checked handles: `dir_id`, `dir_mount` (which
//!   mount a directory is on, and whether it is a mount root), `mount_points` (the mount
//!   table, where there is one) and `remove_at`; `dupes`' actions add `link_at`,
//!   `symlink_at` and `rename_at` (relative to directory handles, never following a
//!   symlink; Windows: not supported).
//! * Sharing-aware sizes (`--shared`): `ExtentBuf` (one worker's buffer, `Default`),
//!   `fs_shares_extents` and `file_extents_at` (Linux: `linux/extents.rs`; macOS: APFS
//!   clone attributes through `getattrlistat`, in `macos/dir.rs`; elsewhere stubs that
//!   say no file system shares).
//! * The browser's terminal: `term_raw_enter`, `term_raw_leave`, `term_size`,
//!   `term_write`, `term_wait`, `term_signals`, `term_stop_self` and the `SIG_*` bits
//!   (Linux and macOS share theirs in `unix/term.rs`); the same handler serves
//!   `interrupt_catch` and `interrupt_requested` (SIGINT and SIGTERM noted, for
//!   `dedupe`'s clean stop; stubs on Windows and in `fallback/`).
//! * `dupes` and `dedupe`: `check_file`, `cached`, `layout`, `rotational`,
//!   `physical_start`, `extents_never_shared`, `read_only_snapshot`, `dedupe_supported`,
//!   `dedupe`, `fs_block_bytes`, `fs_uuid`, `free_bytes`, `swap_files` and the hash file's `replace_in`:
//!   `linux/dupes.rs` on Linux (FIEMAP, FIDEDUPERANGE, statfs, O_TMPFILE,
//!   GET_SUBVOL_INFO), `fallback/dupes.rs` (std::fs; no extents, no dedupe) everywhere
//!   else. The types they speak (`FileCheck`, `Layout` of `meta::Extent`s, `DedupeStatus`,
//!   `MAX_DEDUPE_DESTS`) and the calls that are the same everywhere (`lock_file`; for the
//!   hash file `WriteDir`, `Owner`, `WalkError`, `open_write_dir`, `write_dir_owner`,
//!   `file_owner`, `effective_uid`, `entry_at`, `open_at_nofollow`) are
//!   `common/dupes.rs`'s, not the backends'.
//! * The browser's trash: `make_dir_in`, `remove_in`, `write_dir_id` and `move_into`
//!   (`rename` without replacing, never across file systems), `common/trash.rs`'s for all.
//!
//! Everything `unsafe` in dfdu lives in this directory, each block under a `// SAFETY:`
//! comment.

use crate::meta::{Errno, Extent, LocalTime, Meta};
use std::ffi::{CStr, OsStr};
use std::fs::File;

// The one switch: which folder is this build's backend.
#[cfg_attr(target_os = "linux", path = "linux/mod.rs")]
#[cfg_attr(target_os = "macos", path = "macos/mod.rs")]
#[cfg_attr(windows, path = "windows/mod.rs")]
#[cfg_attr(not(any(target_os = "linux", target_os = "macos", windows)), path = "fallback/mod.rs")]
mod backend;

mod common;
/// The std::fs backend, on every OS: the oracle (`walk::reader::Portable`).
#[allow(dead_code)]
pub mod fallback;

/// The macOS listing parser is plain Rust over bytes: its tests run on every OS (this
/// is `macos/attrs.rs` again, reached without the rest of the macOS backend; on macOS
/// itself it is then built twice and its tests run twice, which costs nothing that
/// matters and keeps the switch above the only one).
#[cfg(test)]
#[allow(dead_code, clippy::duplicate_mod)]
pub mod macos {
    #[allow(clippy::duplicate_mod)]
    pub mod attrs;
}

pub use backend::{
    address_space_left, cached, check_file, dedupe, dedupe_supported, default_sigpipe, default_threads, dir_id,
    dir_mount, dir_others_may_write, errno_text, extents_never_shared, file_extents_at, free_bytes, fs_block_bytes,
    fs_shares_extents, fs_uuid, interrupt_catch, interrupt_requested, kernel_fs, layout, link_at, local_time,
    lookups_serialize, mount_points, open_at, open_fds, open_file_at, open_file_path, open_path, physical_start,
    raise_fd_limit, read_only_snapshot, reload_zone, remove_at, rename_at, replace_in, rotational, sorts_by_inode,
    stat_at, stat_path, swap_files, symlink_at, term_raw_enter, term_raw_leave, term_signals, term_size,
    term_stop_self, term_wait, term_write, thread_cpu_ns, Dir, ExtentBuf, Lister, SIG_CONTINUE, SIG_QUIT, SIG_SUSPEND,
};
pub use common::dupes::{
    effective_uid, entry_at, file_owner, lock_file, open_at_nofollow, open_write_dir, write_dir_owner, DedupeStatus,
    FileCheck, Layout, Owner, WalkError, WriteDir, MAX_DEDUPE_DESTS,
};
pub use common::oom;
pub use common::trash::{make_dir_in, move_into, remove_in, write_dir_id};

/// Whether a call that names an entry acts on what a symbolic link there points to
/// (`Yes`: `-L`, `-H`/`-D` for arguments) or on the entry itself (`No`). On Windows a
/// name-surrogate reparse point (a symlink, a junction) is such a link.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Follow {
    Yes,
    No,
}

impl Follow {
    /// `Yes` when `cond` holds: for the options that keep following as a flag.
    pub fn when(cond: bool) -> Follow {
        if cond {
            Follow::Yes
        } else {
            Follow::No
        }
    }
}

/// The contract as types: every name a backend offers, with the signature the callers
/// in `src/` rely on. `contract!(b)` does not build unless module `b` has each of them.
macro_rules! contract {
    ($b:ident) => {
        const _: () = {
            use $b as b;
            // Reading a tree.
            let _: fn() -> b::Lister = <b::Lister as Default>::default;
            let _: fn(&mut b::Lister, &b::Dir, &mut dyn FnMut(&CStr, u64, Option<&Meta>)) -> Result<(), Errno> =
                b::Lister::list;
            let _: fn(&CStr, Follow) -> Result<b::Dir, Errno> = b::open_path;
            let _: fn(&b::Dir, &CStr, Follow) -> Result<b::Dir, Errno> = b::open_at;
            let _: fn(&CStr, Follow) -> Result<Meta, Errno> = b::stat_path;
            let _: fn(&b::Dir, &CStr, Follow) -> Result<Meta, Errno> = b::stat_at;
            let _: fn(&b::Dir) -> bool = b::sorts_by_inode;
            let _: fn(&b::Dir) -> bool = b::lookups_serialize;
            let _: fn(&b::Dir) -> bool = b::kernel_fs;
            let _: fn() -> u64 = b::thread_cpu_ns;
            let _: fn(Errno) -> String = b::errno_text;
            // The process.
            let _: fn(i64) -> Option<LocalTime> = b::local_time;
            let _: fn() = b::reload_zone;
            let _: fn() -> u64 = b::raise_fd_limit;
            let _: fn() -> u64 = b::open_fds;
            let _: fn() -> Option<u64> = b::address_space_left;
            let _: fn() -> usize = b::default_threads;
            let _: fn() = b::default_sigpipe;
            // The files `dupes` reads.
            let _: fn(&b::Dir, &CStr, bool) -> Result<(Option<File>, Meta), Errno> = b::open_file_at;
            let _: fn(&CStr) -> Result<(Option<File>, Meta), Errno> = b::open_file_path;
            let _: fn(&b::Dir) -> Result<bool, Errno> = b::dir_others_may_write;
            // Delete and checked handles.
            let _: fn(&b::Dir) -> Result<(u64, u64), Errno> = b::dir_id;
            let _: fn(&b::Dir) -> Result<(u64, bool), Errno> = b::dir_mount;
            let _: fn() -> Option<Vec<Vec<u8>>> = b::mount_points;
            let _: fn(&b::Dir, &CStr, bool) -> Result<(), Errno> = b::remove_at;
            // `dupes`' actions.
            let _: fn(&b::Dir, &CStr, &b::Dir, &CStr) -> Result<(), Errno> = b::link_at;
            let _: fn(&CStr, &b::Dir, &CStr) -> Result<(), Errno> = b::symlink_at;
            let _: fn(&b::Dir, &CStr, &CStr) -> Result<(), Errno> = b::rename_at;
            // Sharing-aware sizes.
            let _: fn() -> b::ExtentBuf = <b::ExtentBuf as Default>::default;
            let _: fn(&b::Dir) -> bool = b::fs_shares_extents;
            let _: fn(&b::Dir, &CStr, &mut b::ExtentBuf, &mut dyn FnMut(&Extent)) -> Result<(), Errno> =
                b::file_extents_at;
            // The terminal and signals.
            let _: fn() -> Result<(), Errno> = b::term_raw_enter;
            let _: fn() = b::term_raw_leave;
            let _: fn() -> Option<(u16, u16)> = b::term_size;
            let _: fn(&[u8]) -> Result<(), Errno> = b::term_write;
            let _: fn(&mut [u8], u32) -> Result<usize, Errno> = b::term_wait;
            let _: fn() -> (u32, i32) = b::term_signals;
            let _: fn() = b::term_stop_self;
            let _: [u32; 4] = [b::SIG_QUIT, b::SIG_SUSPEND, b::SIG_CONTINUE, b::SIG_RESIZE];
            let _: fn() = b::interrupt_catch;
            let _: fn() -> Option<i32> = b::interrupt_requested;
            // `dupes` and `dedupe`.
            let _: fn(&File) -> Result<FileCheck, Errno> = b::check_file;
            let _: fn(&File, u64) -> bool = b::cached;
            let _: fn(&File) -> Layout = b::layout;
            let _: fn(u64) -> bool = b::rotational;
            let _: fn(&File) -> Option<u64> = b::physical_start;
            let _: fn(&File) -> bool = b::extents_never_shared;
            let _: fn(&File) -> bool = b::read_only_snapshot;
            let _: fn() -> bool = b::dedupe_supported;
            let _: fn(&File, u64, u64, &[(&File, u64)]) -> Result<Vec<DedupeStatus>, Errno> = b::dedupe;
            let _: fn(&File) -> Option<u64> = b::free_bytes;
            let _: fn(&File) -> Option<u64> = b::fs_block_bytes;
            let _: fn(&File) -> Option<[u8; 16]> = b::fs_uuid;
            let _: fn() -> Vec<(u64, u64)> = b::swap_files;
            let _: fn(&WriteDir, &OsStr, &[u8], File) -> Result<(), Errno> = b::replace_in;
        };
    };
}

contract!(backend);
contract!(fallback);
