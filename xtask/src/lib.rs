//! dfdu's benchmark harness, as a library: the test-tree generator (`gen`), the timer of
//! dfdu against its peers (`run`) and the two together (`bench`). The `xtask` binary
//! (`cargo xtask …`, see `main.rs`) is its command line; the product's tests use `gen` to
//! build realistic trees. Std only, no crates, no `unsafe`; a workspace member, so that the
//! product package builds for every target and `cargo install` installs only `dfdu`.
//!
//! Code map:
//! - `cli.rs`: argument cursor, number formatting.
//! - `rng.rs`: SplitMix64, the one source of randomness for `gen`.
//! - `names.rs`: entry names (ASCII, spaces, UTF-8, invalid UTF-8, one newline).
//! - `plan.rs`: the whole tree decided in memory before any I/O: shape, sizes, links;
//!   `TreeId`, the arguments that identify a tree.
//! - `make.rs`: creates a plan on disk with worker threads (a deep chain with one thread).
//! - `gen.rs`: the `gen` subcommand, the `DIR.gentree.json` marker, the summary.
//! - `image.rs`: `--fs`: a loop-mounted btrfs, XFS or ext4 image file for the tree.
//! - `json.rs`: writes the marker, reads one field back.
//! - `tools.rs`: the peer tools: commands, discovery, versions, byte-total parsing;
//!   `build_dfdu` (the release build every benchmark times).
//! - `measure.rs`: one timed run of one command (GNU time for CPU and peak RSS).
//! - `machine.rs`: the report header: CPU, memory, kernel, filesystem, date.
//! - `run.rs`: the `run` subcommand: reference totals, rounds, statistics, the report.
//! - `report.rs`: statistics (`stats`, `summary`) and the Markdown report (no I/O).
//! - `bench.rs`: `cargo xtask bench`: build dfdu, `gen` once, `run`, results in DIR.
//! - `dupes_gen.rs`: the duplicate shapes S, T and L (plan, then plain writes, truth).
//! - `dupes_bench.rs`: `cargo xtask bench --dupes`: dfdu dupes against the duplicate
//!   finders, groups checked against the truth, the Markdown report.
//! - `dupes_dedupe.rs`: `--dedupe btrfs|xfs`: dfdu dedupe against duperemove on a fresh
//!   loop-mounted copy of an image per run.
//!
//! Invariants: no `unsafe` (forbidden below); no import cycle among the modules (a
//! module never uses one that uses it back; `tests/imports.rs` checks it); `plan` and
//! `report` do no I/O; `make` workers never print; `run` times one command at a time,
//! never two at once. The harness
//! needs a Unix (it reads /proc on Linux for the machine description, and makes symlinks
//! and hard links); elsewhere the library is empty.

#![forbid(unsafe_code)]

/// `println!` that ignores a closed stdout: `cargo xtask run … | head` is not an error.
#[cfg(unix)]
macro_rules! say {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stdout(), $($arg)*);
    }};
}

#[cfg(unix)]
pub mod bench;
#[cfg(unix)]
mod cli;
#[cfg(unix)]
pub mod dupes_bench;
#[cfg(unix)]
mod dupes_dedupe;

mod dedupe_shape_v;
#[cfg(unix)]
pub mod dupes_gen;
#[cfg(unix)]
pub mod gen;
#[cfg(unix)]
mod image;
#[cfg(unix)]
mod json;
#[cfg(unix)]
mod machine;
#[cfg(unix)]
mod make;
#[cfg(unix)]
mod measure;
#[cfg(unix)]
mod names;
#[cfg(unix)]
mod plan;
#[cfg(unix)]
mod report;
#[cfg(unix)]
mod rng;
#[cfg(unix)]
pub mod run;
#[cfg(unix)]
mod tools;
