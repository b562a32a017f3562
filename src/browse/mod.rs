//! `dfdu browse`: the interactive browser, during and after the scan.
//!
//! # Shape
//!
//! * `Browser` is the view: where the user is, how the listing is sorted and drawn, and
//!   what each key does. It reads the arena and draws into a `term::Screen`; it does no
//!   terminal I/O, so tests replay keys against an in-memory screen. Keys that need work
//!   done (quit, delete, rescan) come back as an `Action`.
//! * `run` is the loop around it: the scan (or rescan, or delete) runs on other threads
//!   and writes the arena, while this thread waits for keys with `poll`, redraws at most
//!   ten times a second while something is running, and at once after a key.
//!
//! # Cost while scanning
//!
//! A redraw reads only the shown directory: its children's sizes are atomics in the
//! arena, its names are read once when it is entered (they never change once the
//! listing is published). Sorting is of the shown directory only, and only when
//! something changed: a key, or a tick while a scan, rescan or delete is running.
//!
//! # Sort by modification time
//!
//! The arena keeps mtimes for directories only (a field in its directory record; 4
//! bytes per file would break the memory budget). For files, the browser stats the
//! shown directory's files when it sorts by mtime or shows the info panel, and keeps
//! those times until it leaves the directory. An imported scan has directory times only.

pub mod delete;

mod draw;
mod fill;
mod jobs;
mod marks;
mod run;
mod search;
#[cfg(test)]
mod tests;
pub mod trash;
mod ui;
mod view;

use draw::*;
use jobs::*;
pub use run::*;
use ui::*;
use view::*;

use crate::tree::roots::WalkArgs;
use crate::walk::extents::Sharing;
use crate::walk::opts::{Cli, SizeOpts, SizeSet};
use std::ffi::OsString;
use std::time::Duration;

/// Below this the browser shows a one-line notice instead of the listing.
pub const MIN_WIDTH: usize = 40;
pub const MIN_HEIGHT: usize = 10;
/// Redraws while something is running: at most one per tick.
const TICK: Duration = Duration::from_millis(100);
/// How long a lone ESC waits for the rest of a sequence.
const ESC_WAIT_MS: u32 = 30;

// ---------------------------------------------------------------- options

/// `dfdu browse` options.
pub struct BrowseArgs {
    pub prog: String,
    /// `--apparent-size` and `--si`.
    pub sizes: SizeOpts,
    pub walk: WalkArgs,
    pub read_only: bool,
    /// `d` moves to the trash instead of deleting (`--trash`).
    pub trash: bool,
    pub ascii: bool,
    pub no_color: bool,
    /// Read extent maps for sharing-aware figures after the scan, in the background
    /// (by default where the file system can share extents; `--shared`, `--no-shared`).
    pub shared: Sharing,
    /// An export or a directory to compare with (`--diff`).
    pub diff: Option<OsString>,
    pub dir: OsString,
}

const HELP: &str = "\
Usage: dfdu browse [OPTION]... [DIR]
       dfdu browse -f FILE [OPTION]...
Browse the disk usage of DIR (default: the current directory) while it is being
scanned, and after: sort, inspect, rescan and delete. Press ? inside for the keys.

  -x, --one-file-system  do not enter other file systems
      --exclude=PATTERN  skip entries matching PATTERN (shell glob, as du)
  -X, --exclude-from=FILE  skip entries matching any pattern in FILE
      --exclude-caches   skip directories holding a valid CACHEDIR.TAG
      --exclude-kernfs   skip mounts of kernel file systems (proc, sysfs, ...)
  -L, --dereference      follow symbolic links (deleting never follows them)
  -j, --threads=N        scan with N threads, 1 to 1024 (also DFDU_THREADS=N);
                         default on Linux: four per usable CPU, 4 to 32
  -f FILE                browse an export (ncdu 1.x/2.x, gdu, dfdu) instead of
                         scanning; - reads standard input; nothing can be deleted
      --apparent-size    start by showing apparent sizes instead of disk usage
      --si               units of 1000 instead of 1024
      --diff=OLD         compare with OLD, an export (ncdu 1.x/2.x, gdu, dfdu; -
                         reads standard input) or a directory, scanned first with
                         the options above: a change column (+ grown, \u{2212} shrunk,
                         new), rows for what was removed (R), D to sort by change
      --read-only        no deleting
      --trash            d moves to the freedesktop.org trash instead of deleting
                         (by rename on the same file system only; T always does)
      --ascii            draw with plain ASCII only
      --no-color         no colours (also when NO_COLOR is set)
      --shared           after the scan, read extent maps in the background for an
                         exclusive-bytes column (sort: x; \u{2026} until a directory's
                         figure is final), the shared figures and what deleting
                         frees in the i box, and the footer's disk usage with shared
                         extents counted once; the default where DIR's file system
                         can share extents (btrfs, XFS, bcachefs, OCFS2, APFS; see
                         docs/shared-extents.md)
      --no-shared        do not read extent maps
      --ignore-config    do not read the config files (~/.config/dfdu/config,
                         /etc/dfdu/config: default options, one per line)
      --help             show this help
      --version          show the version

Exit status: 0 after quitting, 1 when the scan could not start or there is no
terminal, 2 for bad usage.
";

/// Parses `dfdu browse` arguments; `Err(code)` to exit right away.
pub fn parse(prog: &str, args: Vec<OsString>) -> Result<BrowseArgs, i32> {
    let args = crate::walk::config::with_config(prog, "browse", args);
    use lexopt::Arg::*;
    let mut a = BrowseArgs {
        prog: prog.to_string(),
        sizes: SizeOpts::default(),
        walk: WalkArgs::default(),
        read_only: false,
        trash: false,
        ascii: false,
        no_color: false,
        shared: Sharing::Auto,
        diff: None,
        dir: OsString::new(),
    };
    let mut dirs = Vec::new();
    let mut cli = Cli::configured(prog, "browse", HELP, args);
    while let Some(opt) = cli.next()? {
        match opt.arg() {
            Long("read-only") => a.read_only = true,
            Long("trash") => a.trash = true,
            Long("ascii") => a.ascii = true,
            Long("no-color") | Long("no-colour") => a.no_color = true,
            Long("shared") => a.shared = Sharing::On,
            Long("no-shared") => a.shared = Sharing::Off,
            Long("diff") => a.diff = Some(cli.value()?),
            Value(v) => dirs.push(v),
            _ if a.sizes.take(&opt, &mut cli, SizeSet::Browse)? => {}
            _ => a.walk.take(&opt, &mut cli)?,
        }
    }
    if a.walk.input.is_some() && !dirs.is_empty() {
        return Err(cli.bad("-f reads an export; it takes no directory"));
    }
    if a.diff.as_deref().is_some_and(|d| d == "-") && a.walk.input.as_deref().is_some_and(|f| f == "-") {
        return Err(cli.bad("only one of --diff and -f can read standard input"));
    }
    if dirs.len() > 1 {
        return Err(cli.bad("browse takes one directory"));
    }
    a.dir = dirs.pop().unwrap_or_else(|| ".".into());
    Ok(a)
}
