//! dfdu: where did my disk space go? One small binary that answers fast.
//!
//! # Bird's-eye view
//!
//! `argv` → `du::cli` (what the user typed) → `du` (the GNU du drop-in) → `walk::scan` (a
//! fixed pool of workers that lists and stats the tree through a `walk::reader::Reader`,
//! which is `platform/`) → `du::records` → `du` walks the records in GNU order and
//! prints. `dfdu scan` (`report`) and `dfdu browse` (`browse`) run the same pool into the
//! `tree::arena::Arena` instead; the browser reads the arena while the scan writes it.
//!
//! # Code map
//!
//! `ls src platform` reads as the layers, lowest first:
//!
//! * `meta.rs` — plain data every layer speaks: `Meta` (one stat), `Kind`, `Errno`,
//!   `Timespec`, `LocalTime`, `Measure` and `TimeKind` (which size and time of a `Meta`).
//! * `text/` — GNU's formats, no I/O: `units.rs` (sizes, `--block-size`), `quote.rs`
//!   (`quote`, `quotef`), `timefmt.rs` (`--time-style`), `exclude.rs` (`Exclude` globs).
//! * `platform/` (beside `src/`) — the operating system, one folder per OS family, the same
//!   file name for the same feature in each. `mod.rs`: the one `cfg` switch, the names
//!   `src/` sees and the contract every backend implements, checked by the compiler.
//!   `linux/` (`dir.rs` getdents64 + statx, `extents.rs` FIEMAP, `fsmap.rs` XFS's reverse map, `btrfs.rs` tree searches, `dupes.rs` FIDEDUPERANGE
//!   and the rest of `dupes`' calls, `time.rs`), `macos/` (`dir.rs` getattrlistbulk with
//!   `attrs.rs`, its buffer parser: pure, safe, tested everywhere; `time.rs`), `windows/`
//!   (`ffi.rs` declarations, `dir.rs` the NT reader, `term.rs` the console, `write.rs`),
//!   `unix/` (what Linux and macOS share: `dir.rs` handles and delete, `term.rs` termios
//!   and signals, `write.rs` the hash file's and the trash's checked directory handles),
//!   `fallback/` (std::fs: `dir.rs` the oracle and the fallback reader, `dupes.rs` for
//!   every OS but Linux, `write.rs` by paths). What no OS owns is in `mod.rs`: the types
//!   of `dupes` and of the written files, and `oom`, the global allocator, wrapped to put
//!   the terminal back when memory runs out.
//! * `out.rs` — standard output as every command ends it: help and version texts
//!   (`print_stdout`, `version_line`), a failed write reported once (`finish`: "PROG CMD:
//!   write error: REASON", exit status 1; a broken pipe quiet), `io_text`.
//! * `walk/` — `scan.rs`: the pool and its protocol (documented at the top of the file),
//!   `Walk` settings, handing entries to a `Sink`, with `scan/worker.rs` (one worker: its
//!   job loop, listing, stat'ing chunks, committing, re-opening closed handles); `reader.rs`: the `Reader` seam (`Native`,
//!   `Portable`); `extents.rs`: one file's extent figures (`--shared`); `bulk.rs`: every
//!   file's extent figures from one listing of the file system, joined by inode number; `join.rs`: those figures from btrfs's
//!   metadata after the scan (as root: tree searches joined to the scanned files); `floor.rs`: the
//!   benchmark's minimal walker; `opts.rs`: the command line of every walking subcommand
//!   (`Cli`, the parse loop's frame, usage errors, `--help` and `--version`; `WalkOpts`:
//!   `-x`, `--exclude`, `-X`, `--exclude-caches`, `--exclude-kernfs`, `-L`, `-j`; `SizeOpts`: `-b -h --si -k -m -B
//!   --apparent-size --json --top`; `thread_count`, the one reading of `-j`); `config.rs`: the config files'
//!   default options for `browse` and `scan` (trusted only if no one else could write
//!   them); `trust.rs`: that judge, ssh's `StrictModes` for the config files and for the
//!   files `dupes` writes (its hash file, `--plan`); `threads.rs`: starting threads that may not start (`on_threads`,
//!   `spawn_or_run`).
//! * `term/` — the terminal without a TUI crate: `mod.rs` (`Screen` and its diffing
//!   painter, the key `Decoder`, `escape`, `fit`, the raw-mode `Session`), `width.rs`
//!   (columns per character).
//! * `du/` — the drop-in: `cli.rs` (`DuOptions`: GNU getopt behaviour, messages, help),
//!   `records.rs` (`Records`, du's sink: one record per directory), `mod.rs` (per-argument
//!   logic and the ordered pass that prints).
//! * `tree/` — the whole tree in memory: `arena/` (`Arena`: every entry in 8 bytes plus
//!   its name; `mod.rs` the layout and the scan's side, `flags.rs` an entry's `Flags`
//!   and a directory's `DirFlags`, `change.rs` deletes, rescans and reuse, `chunked.rs`
//!   its storage, `kept_figures.rs` the sharing-aware figures kept and computed again
//!   after deletes and rescans,
//!   `tests.rs`), `sink.rs` (`ArenaSink` fills it), `ncdu/` (ncdu's formats: `export.rs`
//!   the JSON writer, `import.rs` the JSON reader, `bin_export.rs` and `bin_import.rs` the
//!   binary format's, `zstd.rs` compressed input, `tests.rs` their unit tests),
//!   `roots.rs` (`WalkArgs`: `WalkOpts` plus `-f`; importing or stat'ing the roots; one
//!   side of a comparison, imported or scanned), `path.rs` (`dir_path`, `child_path`),
//!   `sharing/` (sharing-aware figures: total, exclusive, set shared, disk once and frees
//!   per directory; `mod.rs` the collector, `fold.rs` the bottom-up fold, `frees.rs` what
//!   deleting frees, `tests.rs`), `compare.rs` (two trees in one arena matched by path,
//!   and which changed directories a report lists), `treemap.rs` (the SVG treemap of
//!   `scan --treemap`), `top.rs` (`Top`: the largest N of a stream, for the reports'
//!   lists).
//! * `dupes/` — `dfdu dupes` and `dfdu dedupe`: `mod.rs` (options, help, output), `sink.rs`
//!   (`FilesSink`: regular files only, 56 bytes each), `find.rs` (the stages: size, one
//!   inode one file, sample, BLAKE3; protocol at its top), `open.rs` (`Handles`: every
//!   file read or deduplicated is opened through checked directory handles from the
//!   scan's roots), `cache.rs` (the `--hashfile` format), `dedupe.rs` (FIDEDUPERANGE),
//!   `blocks.rs` (`--blocks`: equal blocks of files that differ), `remainder.rs` (btrfs:
//!   the rest of a partly matched extent copied, so that the extent is freed), `act.rs`
//!   (`--delete`, `--hardlink`, `--symlink`: keep rules, the checks before each action), `plan.rs`
//!   (`--plan`'s shell script). Its OS side: `platform/linux/dupes.rs` (FIEMAP,
//!   FIDEDUPERANGE, flock, statfs) and `platform/fallback/dupes.rs` (std::fs elsewhere).
//! * `report/` — `dfdu scan`: totals, counts, largest entries, JSON, export, treemap
//!   (`mod.rs`; its unit tests in `tests.rs`).
//! * `diff.rs` — `dfdu diff OLD NEW`: load both sides, report what grew, shrank, came
//!   and went.
//! * `browse/` — `dfdu browse`: `mod.rs` (options), `view.rs` (`Browser`: state and keys, no
//!   I/O), `draw.rs` (into a `Screen`), `run.rs` (starting: the roots, the terminal, the
//!   scan's thread), `ui.rs` (the loop: signals, keys, frames; its steps at its top),
//!   `jobs.rs` (rescans, deletes and trash moves beside it, their status lines),
//!   `marks.rs` (marks across directories for one delete), `search.rs` (`/` filter, `f`
//!   find), `delete.rs` (removal that stays inside the selection; its unit tests in
//!   `delete/tests.rs`), `trash.rs` (the freedesktop.org trash: rename only, checked
//!   handles).
//! * `main.rs` — entry, dispatch (`du` under the name `du`; subcommands otherwise), and
//!   the one launch frame every command goes through (`launch`: parse, threads and
//!   handle budget, a bad `DFDU_THREADS`, the reader; each command a `Command`).
//!
//! # Layering rule
//!
//! `meta` < `text` < `platform` < `out` < `walk`, `term` < `du`, `tree`, `dupes` <
//! `report`, `diff`, `browse` < `main`. A file may use `crate::X` only for an X of a lower layer or
//! of its own folder; layers of the same rank (`walk`/`term`, `du`/`tree`/`dupes`,
//! `report`/`diff`/`browse`) do not import each other, and nothing imports upward. Unit
//! tests may use a higher layer as an oracle.
//! `tests/tidy.rs` enforces this (and fails on a folder that is in no layer).
//!
//! # Invariants (what is absent)
//!
//! * No `unsafe` outside `platform/`, and none there without a `// SAFETY:` comment.
//! * No platform backend chosen anywhere but `platform/mod.rs`, and no `#[path]` but the
//!   one above `mod platform` here (it reaches `platform/` beside `src/`), the switch in
//!   `platform/mod.rs` and the `platform/unix/` the two Unix backends take in (and
//!   `platform/unix/write.rs`, which the fallback backend takes in on any other Unix).
//!   Elsewhere `cfg` only picks std's Unix or Windows extension traits (`meta.rs`,
//!   `browse/run.rs`), a whole item at a time: never inside a function.
//! * No printing from workers: everything the user sees is written by one thread, in
//!   order.
//! * No recursion on the scan or print paths: deep trees cannot overflow a stack.
//! * No per-entry heap allocation while scanning; results are committed per directory.
//! * No sort beyond the directory the browser shows, and no delete of anything the scan
//!   did not see or through a handle that was not checked (see `browse/delete.rs`).
//! * No file read or deduplicated by resolving its path again: `dupes` opens each one by
//!   its name inside a directory handle checked against the scan (see `dupes/open.rs`).

#![deny(unsafe_code)]

mod browse;
mod diff;
mod du;
mod dupes;
mod meta;
mod out;
mod report;
mod term;
mod text;
mod tree;
mod walk;

#[allow(unsafe_code)]
#[path = "../platform/mod.rs"]
mod platform;

// The global allocator is `platform/mod.rs`'s `oom`: the system's (mimalloc in musl builds with
// the feature), wrapped so that running out of memory puts the terminal back first.

use du::cli;
use std::ffi::OsString;
use walk::floor;
use walk::reader::{self, Reader};

/// Default worker count, the platform's choice: on Linux four per CPU this process may use
/// (affinity and cgroup quotas honoured), at least 4 and at most 32; on macOS the
/// performance cores, at most 8; on Windows one per CPU. See docs/design.md
/// "Threads" and docs/platforms.md "macOS" for the measurements. The help texts say the same (`THREADS_HELP`).
fn default_threads() -> usize {
    platform::default_threads()
}

fn env_bytes(key: &str) -> Option<Vec<u8>> {
    std::env::var_os(key).map(|v| meta::os_bytes(&v))
}

fn main() {
    platform::default_sigpipe();
    let mut args: Vec<OsString> = std::env::args_os().collect();
    let argv0 = if args.is_empty() { OsString::from("dfdu") } else { args.remove(0) };
    let prog = argv0.to_string_lossy().into_owned();
    let base = std::path::Path::new(&argv0).file_name().map(|b| b.to_string_lossy().into_owned()).unwrap_or_default();
    let as_du = base == "du" || base.starts_with("du.") || base == "du.exe";
    let sub = args.first().and_then(|a| a.to_str()).filter(|_| !as_du).map(str::to_string);
    let status = match sub.as_deref() {
        Some("help") => print_overview(&prog),
        Some("floor") => run_floor(&prog, args.split_off(1)),
        Some("scan") => launch(&prog, "scan", report::parse(&prog, args.split_off(1))),
        Some("diff") => launch(&prog, "diff", diff::parse(&prog, args.split_off(1))),
        Some("browse") => launch(&prog, "browse", browse::parse(&prog, args.split_off(1))),
        Some("dupes") => launch(&prog, "dupes", dupes::parse(&prog, dupes::Mode::Dupes, args.split_off(1))),
        Some("dedupe") => launch(&prog, "dedupe", dupes::parse(&prog, dupes::Mode::Dedupe, args.split_off(1))),
        // The subcommand's name is no option of du: any other first argument is du's.
        _ => launch(&prog, "", cli::parse(&prog, args, &env_bytes)),
    };
    std::process::exit(status);
}

/// What every command that walks a tree runs with, resolved once by `launch`.
#[derive(Clone, Copy)]
struct Launch {
    threads: usize,
    /// Directory handles the scan may keep open beyond each worker's own.
    fd_budget: usize,
}

/// A command, parsed: how many threads it was asked for, and its run with a reader.
trait Command {
    /// `-j` as given (`None`: `DFDU_THREADS`, else the platform's default).
    fn threads(&self) -> Option<usize>;
    /// Runs it with reader `R` and returns the exit status.
    fn run<R: Reader>(&self, launch: Launch) -> i32;
}

impl Command for report::ScanArgs {
    fn threads(&self) -> Option<usize> {
        self.walk.threads
    }
    fn run<R: Reader>(&self, l: Launch) -> i32 {
        report::run::<R>(self, l.threads, l.fd_budget)
    }
}

impl Command for diff::DiffArgs {
    fn threads(&self) -> Option<usize> {
        self.walk.threads
    }
    fn run<R: Reader>(&self, l: Launch) -> i32 {
        diff::run::<R>(self, l.threads, l.fd_budget)
    }
}

impl Command for browse::BrowseArgs {
    fn threads(&self) -> Option<usize> {
        self.walk.threads
    }
    fn run<R: Reader>(&self, l: Launch) -> i32 {
        browse::run(self, browse::Fs::of::<R>(), l.threads, l.fd_budget)
    }
}

impl Command for dupes::Args {
    fn threads(&self) -> Option<usize> {
        self.walk.threads
    }
    fn run<R: Reader>(&self, l: Launch) -> i32 {
        dupes::run::<R>(self, l.threads, l.fd_budget)
    }
}

impl Command for Box<cli::DuOptions> {
    fn threads(&self) -> Option<usize> {
        self.threads
    }
    fn run<R: Reader>(&self, l: Launch) -> i32 {
        du::run::<R>(self, l.threads, l.fd_budget)
    }
}

/// The launch frame every command goes through: `parsed` is its parse (`Err`: exit
/// with that status now); then the threads and handle budget (`resources`), a bad
/// `DFDU_THREADS` refused as that command refuses a bad `-j`, and the run with the
/// reader asked for (`DFDU_READER=portable`: the std::fs oracle) or the native one.
/// `cmd` is the subcommand, empty for du.
fn launch<C: Command>(prog: &str, cmd: &str, parsed: Result<C, i32>) -> i32 {
    let c = match parsed {
        Ok(c) => c,
        Err(status) => return status,
    };
    let launch = match resources(c.threads()) {
        Ok((threads, fd_budget)) => Launch { threads, fd_budget },
        Err(typed) => return bad_env_threads(prog, cmd, &typed),
    };
    if reader::portable_requested() {
        c.run::<reader::Portable>(launch)
    } else {
        c.run::<reader::Native>(launch)
    }
}

/// Says that `DFDU_THREADS` holds no thread count (`typed`) in the words `-j` gets,
/// and gives the exit status `-j` gets: du's (status 1, GNU's usage errors) or a
/// subcommand's (status 2).
fn bad_env_threads(prog: &str, cmd: &str, typed: &[u8]) -> i32 {
    if cmd.is_empty() {
        eprintln!("{prog}: invalid number of threads {} in DFDU_THREADS", text::quote::quote(typed));
        eprintln!("Try '{prog} --help' for more information.");
        return 1;
    }
    eprintln!("{prog} {cmd}: invalid number of threads {} in DFDU_THREADS", text::quote::quoteaf(typed));
    2
}

/// Threads from `-j`, else `DFDU_THREADS`, else the platform default, as many as the
/// address space allows; and the budget of open directory handles after raising the
/// limit. `Err` holds a `DFDU_THREADS` value that is not a thread count: it is refused as
/// `-j` would refuse it.
fn resources(threads: Option<usize>) -> Result<(usize, usize), Vec<u8>> {
    let threads = match threads {
        Some(n) => n,
        None => env_threads()?.unwrap_or_else(default_threads),
    };
    let threads = address_plan(threads, platform::address_space_left());
    let fd_limit = platform::raise_fd_limit();
    Ok(fd_plan(threads, fd_limit, platform::open_fds()))
}

/// Address space one more thread may take: its stack and, with glibc's malloc, an arena
/// of its own (64 MiB reserved on 64-bit systems, up to eight per CPU).
const THREAD_ADDRESS_BYTES: u64 = 66 << 20;

/// Threads for `left` bytes of address space still free (`None`: no limit). Arenas are
/// reserved as threads first allocate, until one no longer fits; the memory the calling
/// thread then asks for could not be had, and the allocator's failure ends the process
/// (`prlimit --as=400M dfdu -j 64` did). So the other threads may take at most half
/// of what is left, and the calling thread always runs.
fn address_plan(threads: usize, left: Option<u64>) -> usize {
    match left {
        None => threads,
        Some(left) => threads.min(1 + (left / 2 / THREAD_ADDRESS_BYTES) as usize).max(1),
    }
}

/// Descriptors kept free for what is not a directory handle of the scan (the
/// `--files0-from` list, the terminal, a file read on the side).
const SPARE_FDS: u64 = 4;
/// Directory handles one worker may hold beyond the shared budget: the directory it
/// lists (opened before the budget is checked) and two while it re-opens a closed
/// directory from an open ancestor, one level at a time (see `scan.rs`).
const FDS_PER_WORKER: u64 = 3;

/// (threads, handle budget) for `fd_limit` descriptors with `in_use` open already. A
/// low limit lowers the thread count (down to one) and then the budget (down to none:
/// every directory is re-opened from the root), so it costs speed, never entries.
fn fd_plan(threads: usize, fd_limit: u64, in_use: u64) -> (usize, usize) {
    let free = fd_limit.saturating_sub(in_use + SPARE_FDS);
    // Each worker should find at least one budget handle besides its own three.
    let threads = (threads as u64).min(free / (FDS_PER_WORKER + 1)).max(1);
    let budget = free.saturating_sub(threads * FDS_PER_WORKER).min(4096);
    (threads as usize, budget as usize)
}

/// `DFDU_THREADS`, when set and not empty: read as `-j` reads its value.
fn env_threads() -> Result<Option<usize>, Vec<u8>> {
    match env_bytes("DFDU_THREADS") {
        None => Ok(None),
        Some(v) if v.is_empty() => Ok(None),
        Some(v) => match std::str::from_utf8(&v).ok().and_then(walk::opts::thread_count) {
            Some(n) => Ok(Some(n)),
            None => Err(v),
        },
    }
}

/// `dfdu floor [-j N] DIR`: the benchmark's minimal walker (see floor.rs).
fn run_floor(prog: &str, args: Vec<OsString>) -> i32 {
    let mut threads = None;
    let mut dir = None;
    let mut p = lexopt::Parser::from_args(args);
    while let Ok(Some(arg)) = p.next() {
        match arg {
            lexopt::Arg::Short('j') => {
                threads = p.value().ok().and_then(|v| v.to_str().and_then(walk::opts::thread_count))
            }
            lexopt::Arg::Value(v) => dir = Some(v),
            _ => {
                eprintln!("usage: {prog} floor [-j N] DIR");
                return 2;
            }
        }
    }
    let threads = match resources(threads) {
        Ok((threads, _)) => threads,
        Err(typed) => return bad_env_threads(prog, "floor", &typed),
    };
    let Some(dir) = dir.and_then(|d| std::ffi::CString::new(d.into_encoded_bytes()).ok()) else {
        eprintln!("usage: {prog} floor [-j N] DIR");
        return 2;
    };
    // Always the native reader: the floor is what its system calls cost, the benchmark's
    // lower bound for every walker.
    let (entries, bytes) = floor::walk::<reader::Native>(&dir, threads);
    out::print_stdout(&format!("{prog} floor"), &format!("{bytes}\t{entries} entries\n"))
}

fn print_overview(prog: &str) -> i32 {
    let text = format!(
        "\
dfdu {} — where did my disk space go?

Usage:
  {prog} [du options] [FILE]...   GNU du drop-in (see '{prog} --help')
  {prog} scan [options] [DIR]...  totals, counts, largest entries; ncdu export
                                  and import (see '{prog} scan --help')
  {prog} browse [options] [DIR]   browse, sort and delete, during and after the
                                  scan (see '{prog} browse --help')
  {prog} dupes [options] PATH...  files with identical content (fdupes/jdupes
                                  output, or JSON; see '{prog} dupes --help')
  {prog} dedupe [options] PATH... make duplicates share their extents (Linux,
                                  btrfs/XFS; see '{prog} dedupe --help')
  {prog} diff [options] OLD NEW   what grew and shrank between two exports or
                                  directories (see '{prog} diff --help')
  {prog} help                     this overview

Under the name 'du' (installed or symlinked), dfdu is du and nothing else.
",
        env!("DFDU_VERSION")
    );
    out::print_stdout(prog, &text)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every worker's handles plus the budget fit under the limit; a tiny limit leaves
    /// one thread and no budget rather than more handles than there are.
    #[test]
    fn fd_plan_stays_under_the_limit() {
        for (threads, limit, in_use) in
            [(32, 10, 3), (8, 32, 3), (8, 32, 20), (1, 7, 3), (32, 1 << 20, 3), (4, 1024, 5)]
        {
            let (t, budget) = fd_plan(threads, limit, in_use);
            assert!(t >= 1 && t <= threads);
            let peak = in_use + SPARE_FDS + budget as u64 + t as u64 * FDS_PER_WORKER;
            assert!(t == 1 && budget == 0 || peak <= limit, "{threads} {limit} {in_use}: {t} {budget}");
        }
        assert_eq!(fd_plan(32, 10, 3), (1, 0));
        assert_eq!(fd_plan(8, 1 << 20, 3).0, 8);
        assert_eq!(fd_plan(8, 1 << 20, 3).1, 4096);
    }

    #[test]
    fn address_plan_leaves_half_to_the_calling_thread() {
        assert_eq!(address_plan(32, None), 32);
        assert_eq!(address_plan(32, Some(30 << 20)), 1);
        assert_eq!(address_plan(0, Some(30 << 20)), 1);
        assert_eq!(address_plan(64, Some(400 << 20)), 4);
        assert_eq!(address_plan(8, Some(u64::MAX)), 8);
    }
}
