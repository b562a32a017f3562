//! What every backend shares, written once: `dupes.rs` (the types of the `dupes`
//! contract, the hash file's lock and the hash file's directory handle, which differ
//! between Unix and Windows only inside the functions), `oom.rs` (the global allocator)
//! and `trash.rs` (the browser's moves into a trash directory). None belongs to one OS
//! family, so none lives in one backend's folder.

pub mod dupes;
pub mod oom;
pub mod trash;

use crate::meta::Errno;

/// The OS error number of a std error; EIO for one that has none (std's own errors).
pub(in crate::platform) fn io_errno(e: std::io::Error) -> Errno {
    e.raw_os_error().map_or(Errno::IO, Errno)
}
