//! Walking a tree: the parallel scanner and its `Sink` protocol (`scan`), the `Reader`
//! seam between the scanner and a platform (`reader`: `Native` or the std::fs
//! `Portable`), one file's extent figures for sharing-aware sizes (`extents`), and the
//! benchmark's minimal walker (`floor`). Nothing here prints or
//! decides what to keep: a sink (du's records, the arena) does.

pub mod extents;
pub mod floor;
pub mod reader;
pub mod scan;
