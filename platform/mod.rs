//! The operating system, behind one set of names. This file is the only place that
//! chooses a platform: `backend` is `linux.rs`, `macos.rs`, `windows/` or, anywhere
//! else, the std::fs `portable.rs`, and everything it exports is `platform::NAME`.
//!
//! # The contract every backend implements
//!
//! The same type and function names, no printing, no policy:
//!
//! * Reading a tree (`walk::reader::Native`): `Dir` (an open directory handle), `Lister`
//!   (one worker's listing buffer, `Default`), `open_path`, `open_at`, `stat_path`,
//!   `stat_at`, `Lister::list`, `sorts_by_inode`, `errno_text`.
//! * The process: `local_time` (and `reload_zone`: as after a second `tzset`, which GNU du's
//!   `%s` runs), `raise_fd_limit`, `open_fds`, `address_space_left`,
//!   `default_threads`, `default_sigpipe`.
//! * The files `dupes` reads: `open_file_at` (one name inside a directory handle) and
//!   `open_file_path`, which open nothing but a regular file, never following a symlink
//!   (Linux: an `O_PATH` handle first, reopened through `/proc/self/fd`, unless
//!   `dir_others_may_write` says nobody else may change the directory).
//! * The browser's delete and `dupes`' checked handles: `dir_id`, `dir_mount` (which
//!   mount a directory is on, and
//!   whether it is a mount root), `mount_points` (the mount table, where there is one)
//!   and `remove_at`.
//! * Sharing-aware sizes (`--shared`): `ExtentBuf` (one worker's buffer, `Default`),
//!   `fs_shares_extents` and `file_extents_at` (Linux: `linux_fiemap.rs`; macOS: APFS
//!   clone attributes through `getattrlistat`, in `macos.rs`; elsewhere stubs that say no
//!   file system shares).
//! * The browser's terminal: `term_raw_enter`, `term_raw_leave`, `term_size`,
//!   `term_write`, `term_wait`, `term_signals`, `term_stop_self` and the `SIG_*` bits
//!   (Linux and macOS share theirs in `unix/term.rs`); the same handler serves
//!   `interrupt_catch` and `interrupt_requested` (SIGINT and SIGTERM noted, for
//!   `dedupe`'s clean stop; stubs on Windows and in `portable.rs`).
//!
//! * `dupes` and `dedupe`: `check_file`, `cached`, `FileCheck`, `layout`, `Layout`,
//!   `Extent`, `rotational`, `physical_start`, `can_share_extents`, `read_only_snapshot`,
//!   `dedupe_supported`, `dedupe`, `DedupeStatus`, `MAX_DEDUPE_DESTS`, `lock_file`,
//!   `free_bytes`, `swap_files`, and for the hash file `WriteDir`, `Owner`,
//!   `open_write_dir`, `write_dir_owner`, `file_owner`, `effective_uid`, `entry_at`,
//!   `open_at_nofollow`, `replace_in`: `dupes_linux.rs` on Linux (FIEMAP, FIDEDUPERANGE,
//!   flock, statfs, O_TMPFILE, GET_SUBVOL_INFO), `dupes_std.rs` (std::fs; no extents, no
//!   dedupe) everywhere else; the types, `lock_file` and the hash-file calls but
//!   `replace_in`, which both share, in `dupes_common.rs`.
//!
//! `portable` is also compiled on every platform as the std::fs oracle
//! (`DFDU_READER=portable`, and the reference the native readers are tested against).
//! `macos_attrs` (the `getattrlistbulk` buffer parser) is plain safe Rust, built on macOS
//! and, for its tests, everywhere.
//!
//! Everything `unsafe` in dfdu lives in this directory, each block under a `// SAFETY:`
//! comment.

#[cfg_attr(target_os = "linux", path = "linux.rs")]
#[cfg_attr(target_os = "macos", path = "macos.rs")]
#[cfg_attr(windows, path = "windows/mod.rs")]
#[cfg_attr(not(any(target_os = "linux", target_os = "macos", windows)), path = "portable.rs")]
mod backend;
pub use backend::*;

#[cfg_attr(target_os = "linux", path = "dupes_linux.rs")]
#[cfg_attr(not(target_os = "linux"), path = "dupes_std.rs")]
mod dupes;
/// The `dupes` contract's types and the hash file's lock, shared by both backends.
mod dupes_common;
pub use dupes_common::*;
/// Extent maps (FIEMAP) for sharing-aware sizes; the other backends have stubs.
#[cfg(target_os = "linux")]
mod linux_fiemap;
pub use dupes::*;

/// What Linux and macOS share: the terminal, signals and local time.
#[cfg(any(target_os = "linux", target_os = "macos"))]
mod unix;

#[allow(dead_code)]
pub mod portable;

/// The global allocator, for every platform.
pub mod oom;

// The getattrlistbulk parser is plain Rust: built on macOS, and everywhere for its tests.
#[cfg(any(test, target_os = "macos"))]
#[cfg_attr(not(target_os = "macos"), allow(dead_code))]
pub mod macos_attrs;
