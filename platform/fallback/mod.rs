//! The std::fs backend: the one used on an OS without a backend of its own, and built on
//! every OS as the oracle the native backends are tested against (`DFDU_READER=portable`,
//! `walk::reader::Portable`). `dir.rs` reads trees by full paths (slower, one allocation
//! per entry, limited to paths the OS accepts whole) and stubs what needs a native
//! backend (the terminal, extent maps); `dupes.rs` is `dupes` through std::fs (no extent
//! maps, no dedupe), which the macOS and Windows backends use as well.
//!
//! What this backend offers is listed below by name, item by item; `platform/mod.rs`
//! checks each against the contract.

mod dir;
pub(in crate::platform) mod dupes;
mod extents;
mod term;
mod time;
// Files dfdu writes: through checked directory handles wherever there are Unix ones (the
// file the Linux and macOS backends take in), by paths elsewhere.
#[cfg(unix)]
#[allow(clippy::duplicate_mod)]
#[path = "../unix/write.rs"]
pub(in crate::platform) mod write;
#[cfg(not(unix))]
pub(in crate::platform) mod write;

pub use dir::{
    address_space_left, default_sigpipe, default_threads, dir_id, dir_mount, dir_others_may_write, entries_bound,
    errno_text, kernel_fs, link_at, lookups_serialize, mount_points, move_into, open_at, open_fds, open_file_at,
    open_file_path, open_path, raise_fd_limit, remove_at, rename_at, sorts_by_inode, stat_at, stat_path, symlink_at,
    thread_cpu_ns, Dir, Lister,
};
pub use dupes::{
    cached, check_file, dedupe, dedupe_supported, extents_never_shared, free_bytes, fs_block_bytes, fs_uuid, layout,
    physical_start, read_only_snapshot, rotational, swap_files, temp_file_in,
};
pub use extents::{
    btrfs_tree, bulk_extents, bulk_extents_estimate, file_extents_at, fs_shares_extents, BtrfsTree, ExtentBuf,
    SearchBuf,
};
pub use term::{
    interrupt_catch, interrupt_requested, term_raw_enter, term_raw_leave, term_signals, term_size, term_stop_self,
    term_wait, term_write, SIG_CONTINUE, SIG_QUIT, SIG_RESIZE, SIG_SUSPEND,
};
pub use time::{local_time, reload_zone};
pub use write::{
    create_temp_in, effective_uid, entry_at, file_owner, lock_file, make_dir_in, open_at_nofollow, open_read_in,
    open_write_dir, open_write_in, remove_in, rename_in, replace_in, write_dir_id, write_dir_owner, WriteDir,
};
