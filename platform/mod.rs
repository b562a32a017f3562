//! The operating system, behind one set of names: everything here is `platform::NAME`,
//! whichever OS the build is for. This file is the only place that chooses a platform.
//!
//! # Layout
//!
//! One folder per OS family, the backend outer and the feature inner, with the same file
//! name for the same feature wherever a backend has it:
//!
//! * `linux/` — `dir.rs` (reading trees: `getdents64`, `statx`; mounts; the process),
//!   `extents.rs` (FIEMAP), `fsmap.rs` (XFS's reverse map: every file's extents), `btrfs.rs` (btrfs tree searches), `dupes.rs` (FIDEDUPERANGE and the rest of `dupes`' calls,
//!   the hash file's `O_TMPFILE` replacement), `time.rs` (local time).
//! * `macos/` — `dir.rs` (`getattrlistbulk`; the process), `attrs.rs` (its buffer
//!   parser), `extents.rs` (APFS clone figures), `time.rs` (local time).
//! * `windows/` — `dir.rs` (the NT reader; the process, delete), `ffi.rs` (the
//!   declarations), `term.rs` (the console), `time.rs` (local time), `extents.rs` (none),
//!   `write.rs` (the files dfdu writes: the fallback's, but for a no-follow open).
//! * `unix/` — what the Linux and macOS backends share and take in themselves: `dir.rs`
//!   (directory handles, their identity and removal, the trash's move), `term.rs`
//!   (termios and signals) and `write.rs` (the files dfdu writes, the hash file and the
//!   trash, through checked directory handles; the fallback backend takes it in on any
//!   other Unix).
//! * `fallback/` — std::fs: `dir.rs` (reading by paths), `dupes.rs` (`dupes` without
//!   extents or dedupe, which macOS and Windows use too), `write.rs` (the files dfdu
//!   writes, by paths, where there are no Unix handles), and stubs or plain answers for
//!   the rest (`term.rs`, `time.rs` in UTC, `extents.rs`). It is the backend on any
//!   other OS, and it is built everywhere as the oracle the native readers are tested
//!   against (`DFDU_READER=portable`).
//!
//! What no OS family owns is written once, in this file: the types the `dupes` and
//! write calls speak (`FileCheck`, `Layout`, `DedupeStatus`, `Owner`, `WalkError`), the
//! temporary names they pick, and `oom` (the global allocator).
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
//!   `Lister::list`, `sorts_by_inode`, `entries_bound`, `kernel_fs` (a directory on proc, sysfs, cgroup
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
//!   say no file system shares); `bulk_extents_estimate` and `bulk_extents`, every
//!   file's extents in one listing of the file system (Linux: XFS's reverse map,
//!   `linux/fsmap.rs`; elsewhere `None` and `ENOTSUP`).
//!   As root on btrfs, `btrfs_tree` opens a subvolume for bulk reads instead
//!   (`BtrfsTree`: its file extent items, the extent tree's references and one extent's
//!   owners, with a `SearchBuf`; `linux/btrfs.rs`; elsewhere an empty type that
//!   `btrfs_tree` never returns).
//! * The browser's terminal: `term_raw_enter`, `term_raw_leave`, `term_size`,
//!   `term_write`, `term_wait`, `term_signals`, `term_stop_self` and the `SIG_*` bits
//!   (Linux and macOS share theirs in `unix/term.rs`); the same handler serves
//!   `interrupt_catch` and `interrupt_requested` (SIGINT and SIGTERM noted, for
//!   `dedupe`'s clean stop; stubs on Windows and in `fallback/`).
//! * `dupes` and `dedupe`: `check_file`, `cached`, `layout`, `rotational`,
//!   `physical_start`, `extents_never_shared`, `read_only_snapshot`, `dedupe_supported`,
//!   `dedupe`, `fs_block_bytes`, `fs_uuid`, `free_bytes`, `swap_files`, `temp_file_in`
//!   (block dedupe's unnamed copy): `linux/dupes.rs` on Linux (FIEMAP, FIDEDUPERANGE,
//!   statfs, GET_SUBVOL_INFO, O_TMPFILE), `fallback/dupes.rs` (std::fs; no extents, no
//!   dedupe, no copy) everywhere else. They speak this file's
//!   `FileCheck`, `Layout` (of `meta::Extent`s), `DedupeStatus` and `MAX_DEDUPE_DESTS`.
//! * The files dfdu writes (the hash file, `--plan`, the browser's trash) and the config
//!   files it reads: `WriteDir` (a directory reached by `open_write_dir`, one name at a
//!   time, each step shown to the caller's judge as this file's `Owner`s, refused as
//!   `WalkError::Refused`), `write_dir_owner`, `file_owner`, `effective_uid`,
//!   `write_dir_id`, `entry_at`, `open_at_nofollow`, `open_read_in`, `open_write_in`, `lock_file`,
//!   `replace_in` (a new file renamed over the old one; `create_temp_in` and `rename_in`
//!   the same in two steps, for a file written as it goes), and for the trash `make_dir_in`,
//!   `remove_in` and `move_into` (`rename` without replacing, never across file
//!   systems): `unix/write.rs` (Linux adds its `O_TMPFILE` `replace_in`),
//!   `fallback/write.rs` by paths elsewhere (no owners, no trash).
//!
//! Everything `unsafe` in dfdu lives in this directory, each block under a `// SAFETY:`
//! comment.

use crate::meta::{BtrfsDataExtent, BtrfsFileExtent, Errno, Extent, Kind, LocalTime, Meta};
use std::ffi::{CStr, OsStr};
use std::fs::File;
use std::path::Path;

// The one switch: which folder is this build's backend.
#[cfg_attr(target_os = "linux", path = "linux/mod.rs")]
#[cfg_attr(target_os = "macos", path = "macos/mod.rs")]
#[cfg_attr(windows, path = "windows/mod.rs")]
#[cfg_attr(not(any(target_os = "linux", target_os = "macos", windows)), path = "fallback/mod.rs")]
mod backend;

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
    address_space_left, btrfs_tree, bulk_extents, bulk_extents_estimate, cached, check_file, dedupe, dedupe_supported,
    default_sigpipe, default_threads, dir_id, dir_mount, dir_others_may_write, effective_uid, entries_bound, entry_at,
    errno_text, extents_never_shared, file_extents_at, file_owner, free_bytes, fs_block_bytes, fs_shares_extents,
    fs_uuid, interrupt_catch, interrupt_requested, kernel_fs, layout, link_at, local_time, lock_file,
    lookups_serialize, make_dir_in, mount_points, move_into, open_at, open_at_nofollow, open_fds, open_file_at,
    open_file_path, open_path, open_read_in, open_write_dir, physical_start, raise_fd_limit, read_only_snapshot,
    reload_zone, remove_at, remove_in, rename_at, replace_in, rotational, sorts_by_inode, stat_at, stat_path,
    swap_files, symlink_at, temp_file_in, term_raw_enter, term_raw_leave, term_signals, term_size, term_stop_self,
    term_wait, term_write, thread_cpu_ns, write_dir_id, write_dir_owner, BtrfsTree, Dir, ExtentBuf, Lister, SearchBuf,
    WriteDir, SIG_CONTINUE, SIG_QUIT, SIG_SUSPEND,
};
// The written files' calls added since the list above (kept apart: fewer merge conflicts).
pub use backend::{create_temp_in, open_write_in, rename_in};

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

/// What dupes re-checks about a file before trusting what it read or deduplicates.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FileCheck {
    pub kind: Kind,
    /// 0 where the OS's `std` metadata carries no file identity (Windows).
    pub dev: u64,
    pub ino: u64,
    pub size: u64,
    pub mtime_ns: i64,
    pub ctime_ns: i64,
    /// Immutable or append-only: the kernel refuses to change its extents (Linux only).
    pub pinned: bool,
    /// Allocated blocks of 512 bytes (a hole takes none); 0 where the OS does not say.
    pub blocks_512: u64,
}

/// Where a file's data is, as far as sharing goes.
#[cfg_attr(not(target_os = "linux"), allow(dead_code))] // the std backend says Unknown
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Layout {
    /// Its extents (not empty; only Linux produces them), each with no flag but
    /// `Extent::SHARED` and `Extent::ENCODED` kept, so that two layouts compare equal
    /// exactly when they are the same blocks and agree on being shared.
    Extents(Vec<Extent>),
    /// Stored inline in metadata (btrfs small files) or as a tail: cannot be shared.
    Inline,
    /// FIEMAP unsupported, no extents, unknown or delayed extents, or too many of them.
    Unknown,
}

/// What the kernel said about one destination of a `FIDEDUPERANGE` call.
#[cfg_attr(not(target_os = "linux"), allow(dead_code))] // built on Linux only
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DedupeStatus {
    /// The ranges were equal; this many bytes now share extents.
    Same(u64),
    /// The kernel compared and found different bytes: nothing was changed.
    Differs,
    Error(Errno),
}

/// Destinations per `FIDEDUPERANGE` call: the argument must fit in one 4 KiB page.
pub const MAX_DEDUPE_DESTS: usize = 120;

/// Who may change a file or directory: its owner and its permission bits (`st_mode`
/// without the type).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Owner {
    pub uid: u32,
    pub mode: u32,
}

/// Why `open_write_dir` did not open the directory.
#[derive(Debug)]
pub enum WalkError {
    Os(Errno),
    /// The judge refused a step, for this reason (never without Unix owners).
    #[cfg_attr(not(unix), allow(dead_code))]
    Refused(String),
}

/// The OS error number of a std error; EIO for one that has none (std's own errors).
pub(in crate::platform) fn io_errno(e: std::io::Error) -> Errno {
    e.raw_os_error().map_or(Errno::IO, Errno)
}

/// Names tried for a new temporary file before giving up (each taken name is EEXIST).
pub(in crate::platform) const TEMP_ATTEMPTS: u32 = 32;

/// A name for a temporary file next to `base` that another user cannot guess:
/// `.BASE.` and 16 hex digits from std's per-process random hash keys.
pub(in crate::platform) fn random_name(base: &OsStr, attempt: u32) -> std::ffi::OsString {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u32(std::process::id());
    h.write_u32(attempt);
    if let Ok(t) = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH) {
        h.write_u128(t.as_nanos());
    }
    let mut name = std::ffi::OsString::from(".");
    name.push(base);
    name.push(format!(".{:016x}", h.finish()));
    name
}

pub mod oom {
    //! The global allocator, wrapped so that running out of memory puts the terminal back
    //! before the process ends: when the allocator underneath returns null, the hook set by
    //! `set_hook` runs (the browser sets `term::restore`, which allocates nothing), and then
    //! the null goes back to the caller as usual — std's handler prints "memory allocation
    //! of N bytes failed" on the restored screen and aborts. Underneath is mimalloc in the
    //! musl builds that enable it and the system allocator everywhere else.
    //!
    //! dfdu makes no fallible allocations (`try_reserve`), so a null here always ends the
    //! process; the hook cannot leave a running browser on a restored terminal.

    use std::alloc::{GlobalAlloc, Layout};
    use std::sync::OnceLock;

    #[cfg(all(feature = "mimalloc", target_os = "linux", target_env = "musl"))]
    type Inner = mimalloc::MiMalloc;
    #[cfg(all(feature = "mimalloc", target_os = "linux", target_env = "musl"))]
    const INNER: Inner = mimalloc::MiMalloc;
    #[cfg(not(all(feature = "mimalloc", target_os = "linux", target_env = "musl")))]
    type Inner = std::alloc::System;
    #[cfg(not(all(feature = "mimalloc", target_os = "linux", target_env = "musl")))]
    const INNER: Inner = std::alloc::System;

    /// The allocator dfdu runs on.
    pub struct Guarded(Inner);

    #[global_allocator]
    static GLOBAL: Guarded = Guarded(INNER);

    /// The function to run when an allocation fails.
    static HOOK: OnceLock<fn()> = OnceLock::new();

    /// Runs `f` when an allocation fails, before the process aborts (the first `f` set
    /// stays). `f` must not allocate.
    pub fn set_hook(f: fn()) {
        let _ = HOOK.set(f);
    }

    #[cold]
    fn failed() {
        if let Some(f) = HOOK.get() {
            f();
        }
    }

    fn checked(p: *mut u8) -> *mut u8 {
        if p.is_null() {
            failed();
        }
        p
    }

    // SAFETY: every method forwards to the inner allocator with the caller's arguments
    // unchanged, so the inner allocator's guarantees are the wrapper's; the failure path
    // only runs a hook and returns the inner null.
    unsafe impl GlobalAlloc for Guarded {
        unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
            // SAFETY: forwarded as received (see the impl).
            checked(unsafe { self.0.alloc(layout) })
        }

        unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
            // SAFETY: forwarded as received (see the impl).
            checked(unsafe { self.0.alloc_zeroed(layout) })
        }

        unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
            // SAFETY: forwarded as received (see the impl).
            unsafe { self.0.dealloc(ptr, layout) }
        }

        unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
            // SAFETY: forwarded as received (see the impl).
            checked(unsafe { self.0.realloc(ptr, layout, new_size) })
        }
    }
}

/// The contract as types: every name a backend offers, with the signature the callers
/// in `src/` rely on. `contract!(b)` does not build unless module `b` has each of them.
macro_rules! contract {
    ($b:ident) => {
        const _: () = {
            use $b as b;
            type OpenWriteDir =
                fn(&Path, &mut dyn FnMut(&Path, Owner, Owner) -> Option<String>) -> Result<b::WriteDir, WalkError>;
            // Reading a tree.
            let _: fn() -> b::Lister = <b::Lister as Default>::default;
            let _: fn(&mut b::Lister, &b::Dir, &mut dyn FnMut(&CStr, u64, Option<&Meta>)) -> Result<(), Errno> =
                b::Lister::list;
            let _: fn(&CStr, Follow) -> Result<b::Dir, Errno> = b::open_path;
            let _: fn(&b::Dir, &CStr, Follow) -> Result<b::Dir, Errno> = b::open_at;
            let _: fn(&CStr, Follow) -> Result<Meta, Errno> = b::stat_path;
            let _: fn(&b::Dir, &CStr, Follow) -> Result<Meta, Errno> = b::stat_at;
            let _: fn(&b::Dir) -> bool = b::sorts_by_inode;
            let _: fn(&b::Dir) -> Option<(u64, u64)> = b::entries_bound;
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
            let _: fn(&b::Dir) -> Option<u64> = b::bulk_extents_estimate;
            let _: fn(&b::Dir, &mut dyn FnMut(u64, &Extent, u32)) -> Result<(), Errno> = b::bulk_extents;
            let _: fn(&b::Dir) -> Option<b::BtrfsTree> = b::btrfs_tree;
            let _: fn() -> b::SearchBuf = <b::SearchBuf as Default>::default;
            let _: fn(&b::BtrfsTree) -> u64 = b::BtrfsTree::tree_id;
            let _: fn(&b::BtrfsTree) -> u64 = b::BtrfsTree::last_snapshot;
            let _: fn(&b::BtrfsTree) -> [u8; 16] = b::BtrfsTree::fs_id;
            let _: fn(
                &b::BtrfsTree,
                u64,
                u64,
                &mut b::SearchBuf,
                &mut dyn FnMut(&BtrfsFileExtent),
            ) -> Result<(), Errno> = b::BtrfsTree::file_extents;
            let _: fn(
                &b::BtrfsTree,
                u64,
                u64,
                &mut b::SearchBuf,
                &mut dyn FnMut(&BtrfsDataExtent),
            ) -> Result<(), Errno> = b::BtrfsTree::data_extents;
            let _: fn(&b::BtrfsTree, u64, &mut b::SearchBuf, &mut dyn FnMut(u64, u64)) -> Result<(), Errno> =
                b::BtrfsTree::extent_owners;
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
            let _: fn(&b::Dir) -> Result<File, Errno> = b::temp_file_in;
            // Files dfdu writes: the hash file and `--plan`, the browser's trash.
            let _: OpenWriteDir = b::open_write_dir;
            let _: fn(&b::WriteDir) -> Option<Owner> = b::write_dir_owner;
            let _: fn(&File) -> Option<Owner> = b::file_owner;
            let _: fn() -> Option<u32> = b::effective_uid;
            let _: fn(&b::WriteDir) -> Result<(u64, u64), Errno> = b::write_dir_id;
            let _: fn(&b::WriteDir, &OsStr) -> Result<Option<FileCheck>, Errno> = b::entry_at;
            let _: fn(&b::WriteDir, &OsStr, bool) -> Result<File, Errno> = b::open_at_nofollow;
            let _: fn(&b::WriteDir, &OsStr) -> Result<File, Errno> = b::open_read_in;
            let _: fn(&b::WriteDir, &OsStr) -> Result<File, Errno> = b::open_write_in;
            let _: fn(&File, bool) -> Result<bool, Errno> = b::lock_file;
            let _: fn(&b::WriteDir, &OsStr, &[u8], File) -> Result<(), Errno> = b::replace_in;
            let _: fn(&b::WriteDir, &OsStr, u32) -> Result<(File, std::ffi::OsString), Errno> = b::create_temp_in;
            let _: fn(&b::WriteDir, &OsStr, &OsStr) -> Result<(), Errno> = b::rename_in;
            let _: fn(&b::WriteDir, &OsStr, u32) -> Result<(), Errno> = b::make_dir_in;
            let _: fn(&b::WriteDir, &OsStr) -> Result<(), Errno> = b::remove_in;
            let _: fn(&b::Dir, &CStr, &b::WriteDir, &OsStr) -> Result<(), Errno> = b::move_into;
        };
    };
}

contract!(backend);
contract!(fallback);
