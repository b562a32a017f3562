//! What every backend shares, written once: `dupes.rs` (the types of the `dupes`
//! contract, the hash file's lock and the hash file's directory handle, which differ
//! between Unix and Windows only inside the functions) and `oom.rs` (the global
//! allocator), and `trash.rs` (the browser's moves into a trash directory). Neither belongs to one OS family, so neither lives in one backend's folder.

pub mod dupes;
pub mod oom;
pub mod trash;
