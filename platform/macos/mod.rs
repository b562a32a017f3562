//! The macOS backend: `dir.rs` (directories listed with `getattrlistbulk`, stat, the
//! files `dupes` reads, APFS clone figures for `--shared`, and the process: threads,
//! descriptors, error texts), `attrs.rs` (the `getattrlistbulk` buffer parser: plain safe
//! Rust, its tests run on every OS), `time.rs` (local time through libc's `localtime_r`);
//! directory handles and the terminal are `unix/`'s, shared with Linux; `dupes` goes
//! through std::fs as in `fallback/dupes.rs` (macOS's clone calls do not compare bytes,
//! so there is no dedupe).
//!
//! What this backend offers is listed below by name, item by item; `platform/mod.rs`
//! checks each against the contract.

pub mod attrs;
mod dir;
mod extents;
mod time;
#[path = "../unix/mod.rs"]
mod unix;

pub use super::fallback::dupes::{
    cached, check_file, dedupe, dedupe_supported, extents_never_shared, free_bytes, fs_block_bytes, fs_uuid, layout,
    physical_start, read_only_snapshot, rotational, swap_files, temp_file_in,
};
pub use dir::{
    address_space_left, default_threads, dir_mount, entries_bound, errno_text, kernel_fs, lookups_serialize,
    mount_points, open_fds, open_file_at, open_file_path, raise_fd_limit, sorts_by_inode, stat_at, stat_path,
    thread_cpu_ns, Lister,
};
pub use extents::{
    btrfs_tree, bulk_extents, bulk_extents_estimate, file_extents_at, fs_shares_extents, BtrfsTree, ExtentBuf,
    SearchBuf,
};
pub use time::{local_time, reload_zone};
pub use unix::dir::{
    default_sigpipe, dir_id, dir_others_may_write, link_at, move_into, open_at, open_path, remove_at, rename_at,
    symlink_at, Dir,
};
pub use unix::term::{
    interrupt_catch, interrupt_requested, term_raw_enter, term_raw_leave, term_signals, term_size, term_stop_self,
    term_wait, term_write, SIG_CONTINUE, SIG_QUIT, SIG_RESIZE, SIG_SUSPEND,
};
pub use unix::write::{
    create_temp_in, effective_uid, entry_at, file_owner, lock_file, make_dir_in, open_at_nofollow, open_read_in,
    open_write_dir, open_write_in, remove_in, rename_in, replace_in, write_dir_id, write_dir_owner, WriteDir,
};
