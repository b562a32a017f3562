//! Walking a tree: the parallel scanner and its `Sink` protocol (`scan`), the `Reader`
//! seam between the scanner and a platform (`reader`: `Native` or the std::fs
//! `Portable`), one file's extent figures for sharing-aware sizes (`extents`) and their join from
//! bulk metadata after the scan (`join`: btrfs tree searches as root), the
//! benchmark's minimal walker (`floor`), and the command line every walking subcommand
//! shares (`opts`: the parse loop's frame and `-x`, `--exclude`, `-X`, `-L`, `-j`), the
//! config files' default options for `browse` and `scan` (`config`), whether a file
//! other users might have written may be trusted (`trust`: the config files', the hash
//! file's), and starting threads that may not start (`threads`). Nothing here prints or
//! decides what to keep: a sink (du's records, the arena) does.

pub mod bulk;
pub mod config;
pub mod extents;
pub mod floor;
pub mod join;
pub mod opts;
pub mod reader;
pub mod scan;
pub mod threads;
pub mod trust;
