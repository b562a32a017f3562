//! The Linux backend: `dir.rs` (directories listed with `getdents64`, entries sized with
//! `statx`, the files `dupes` reads, mounts, and the process: threads, descriptors,
//! address space, error texts), `extents.rs` (FIEMAP: which file systems share extents
//! and one file's extent map), `fsmap.rs` (every file's extents at once from XFS's reverse
//! map, `FS_IOC_GETFSMAP`), `btrfs.rs` (btrfs metadata in bulk, root only: file extent
//! items and extent references by tree search), `dupes.rs` (`dupes` and `dedupe`: FIDEDUPERANGE, flock,
//! statfs, `O_TMPFILE`, GET_SUBVOL_INFO), `ioctl.rs` (the one raw ioctl those two
//! call), `time.rs` (local time: glibc's rules in Rust,
//! the same in glibc and musl builds); directory handles and the terminal are `unix/`'s,
//! shared with macOS.
//!
//! What this backend offers is listed below by name, item by item; `platform/mod.rs`
//! checks each against the contract.

mod btrfs;
mod dir;
mod dupes;
mod extents;
mod fsmap;
mod ioctl;
mod time;
#[path = "../unix/mod.rs"]
mod unix;

pub use btrfs::{btrfs_tree, BtrfsTree, SearchBuf};
pub use dir::{
    address_space_left, default_threads, dir_mount, entries_bound, errno_text, kernel_fs, lookups_serialize,
    mount_points, open_fds, open_file_at, open_file_path, raise_fd_limit, sorts_by_inode, stat_at, stat_path,
    thread_cpu_ns, Lister,
};
pub use dupes::{
    cached, check_file, dedupe, dedupe_supported, extents_never_shared, free_bytes, fs_block_bytes, fs_uuid, layout,
    physical_start, read_only_snapshot, replace_in, rotational, swap_files, temp_file_in,
};
pub use extents::{file_extents_at, fs_shares_extents, ExtentBuf};
pub use fsmap::{bulk_extents, bulk_extents_estimate};
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
    open_write_dir, open_write_in, remove_in, rename_in, write_dir_id, write_dir_owner, WriteDir,
};
