//! dfdu: where did my disk space go? One small binary that answers fast.
//!
//! # Bird's-eye view
//!
//! `argv` → `cli` (what the user typed) → `du` (the GNU du drop-in) → `scan` (a fixed
//! pool of workers that lists and stats the tree through a `Reader`) → records → `du`
//! walks the records in GNU order and prints. `dfdu scan` and `dfdu browse` run the same
//! pool into the arena instead; the browser reads the arena while the scan writes it.
//!
//! # Code map
//!
//! * `main.rs` — entry, dispatch (`du` under the name `du`; subcommands otherwise).
//! * `cli.rs` — du's options: GNU getopt behaviour, messages and help text.
//! * `du.rs` — the drop-in: per-argument logic and the ordered pass that prints.
//! * `scan.rs` — the pool and its protocol (documented at the top of the file); it
//!   hands entries to a `Sink`.
//! * `records.rs` — du's sink: one record per directory, entries only where needed.
//! * `reader.rs` — the `Reader` seam: `Native` (platform/) and `Portable` (std::fs).
//! * `arena.rs` — every entry in 8 bytes plus its name; `arena_sink.rs` fills it.
//! * `report.rs` — `dfdu scan`; `ncdu.rs` — ncdu JSON export and import.
//! * `browse.rs` — `dfdu browse`: `Browser` (state, keys, drawing into a `Screen`; no
//!   I/O) and the loop that runs scans, rescans and deletes beside it.
//! * `term.rs` — the terminal layer: `Screen` and its diffing painter, the key
//!   `Decoder`, name escaping and truncation, the raw-mode `Session`; `width.rs` — how
//!   many columns a character takes.
//! * `delete.rs` — removal that stays inside the selection (no-follow, checked inodes).
//! * `meta.rs` — plain data: `Meta` (one stat), `Errno`, `LocalTime`.
//! * `units.rs`, `exclude.rs`, `quote.rs`, `timefmt.rs` — GNU-compatible formats.
//! * `platform/linux.rs` — getdents64 + statx; `platform/portable.rs` — std::fs;
//!   `platform/unix_term.rs` — termios raw mode and signals (Linux and macOS).
//! * `platform/macos.rs` — getattrlistbulk, one call per batch of entries;
//!   `platform/macos_attrs.rs` — its buffer parser: pure, safe, tested on every platform.
//!
//! # Invariants
//!
//! * `unsafe` appears only under `platform/`, each block with a `// SAFETY:` comment.
//! * Workers never print; everything the user sees is written by one thread, in order.
//! * No recursion on the scan or print paths: deep trees cannot overflow a stack.
//! * No per-entry heap allocation while scanning; results are committed per directory.
//! * The browser never sorts more than the directory it shows, and deletes only what
//!   the scan saw, through handles it has checked (see `delete.rs`).

#![deny(unsafe_code)]

mod browse;
mod du;
mod meta;
mod report;
mod term;
mod text;
mod tree;
mod walk;

#[allow(unsafe_code)]
#[path = "../platform/mod.rs"]
mod platform;

#[cfg(all(feature = "mimalloc", target_os = "linux", target_env = "musl"))]
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

use du::cli;
use std::ffi::OsString;
use walk::{floor, reader};

/// Default worker count, the platform's choice: on Linux every CPU this process may use
/// (affinity and cgroup quotas honoured), on macOS the performance cores, at most 8. See
/// README "Threads" and "macOS" for the measurements.
fn default_threads() -> usize {
    platform::default_threads()
}

fn env_bytes(key: &str) -> Option<Vec<u8>> {
    std::env::var_os(key).map(|v| {
        #[cfg(unix)]
        {
            use std::os::unix::ffi::OsStringExt;
            v.into_vec()
        }
        #[cfg(not(unix))]
        {
            v.to_string_lossy().into_owned().into_bytes()
        }
    })
}

fn main() {
    platform::default_sigpipe();
    let mut args: Vec<OsString> = std::env::args_os().collect();
    let argv0 = if args.is_empty() { OsString::from("dfdu") } else { args.remove(0) };
    let prog = argv0.to_string_lossy().into_owned();
    let base = std::path::Path::new(&argv0).file_name().map(|b| b.to_string_lossy().into_owned()).unwrap_or_default();
    let as_du = base == "du" || base.starts_with("du.") || base == "du.exe";
    if !as_du {
        if let Some(first) = args.first().and_then(|a| a.to_str()) {
            match first {
                "help" => {
                    print_overview(&prog);
                    return;
                }
                "scan" => {
                    args.remove(0);
                    std::process::exit(run_scan(&prog, args));
                }
                "floor" => {
                    args.remove(0);
                    std::process::exit(run_floor(&prog, args));
                }
                "browse" => {
                    args.remove(0);
                    std::process::exit(run_browse(&prog, args));
                }
                "dupes" => {
                    eprintln!("{prog}: '{first}' is not available in this build yet; 'dfdu -- {first}' names a file");
                    std::process::exit(2);
                }
                _ => {}
            }
        }
    }
    std::process::exit(run_du(&prog, args));
}

/// Threads from `-j`, else `DFDU_THREADS`, else the platform default; and the budget of
/// open directory handles after raising the limit.
fn resources(threads: Option<usize>) -> (usize, usize) {
    let threads = threads
        .or_else(|| std::env::var("DFDU_THREADS").ok().and_then(|v| v.parse().ok()))
        .unwrap_or_else(default_threads);
    let fd_limit = platform::raise_fd_limit();
    (threads, (fd_limit / 2).clamp(16, 4096) as usize)
}

fn run_scan(prog: &str, args: Vec<OsString>) -> i32 {
    let a = match report::parse(prog, args) {
        Ok(a) => a,
        Err(code) => return code,
    };
    let (threads, fd_budget) = resources(a.walk.threads);
    if reader::portable_requested() {
        report::run::<reader::Portable>(&a, threads, fd_budget)
    } else {
        report::run::<reader::Native>(&a, threads, fd_budget)
    }
}

/// `dfdu floor [-j N] DIR`: the benchmark's minimal walker (see floor.rs).
fn run_floor(prog: &str, args: Vec<OsString>) -> i32 {
    let mut threads = None;
    let mut dir = None;
    let mut p = lexopt::Parser::from_args(args);
    while let Ok(Some(arg)) = p.next() {
        match arg {
            lexopt::Arg::Short('j') => threads = p.value().ok().and_then(|v| v.to_str().and_then(|s| s.parse().ok())),
            lexopt::Arg::Value(v) => dir = Some(v),
            _ => {
                eprintln!("usage: {prog} floor [-j N] DIR");
                return 2;
            }
        }
    }
    let (threads, _) = resources(threads);
    let Some(dir) = dir.and_then(|d| std::ffi::CString::new(d.into_encoded_bytes()).ok()) else {
        eprintln!("usage: {prog} floor [-j N] DIR");
        return 2;
    };
    let (entries, bytes) = floor::walk::<reader::Native>(&dir, threads);
    println!("{bytes}\t{entries} entries");
    0
}

fn run_browse(prog: &str, args: Vec<OsString>) -> i32 {
    let a = match browse::parse(prog, args) {
        Ok(a) => a,
        Err(code) => return code,
    };
    let (threads, fd_budget) = resources(a.walk.threads);
    let fs = if reader::portable_requested() {
        browse::Fs::of::<reader::Portable>()
    } else {
        browse::Fs::of::<reader::Native>()
    };
    browse::run(&a, fs, threads, fd_budget)
}

fn run_du(prog: &str, args: Vec<OsString>) -> i32 {
    let opts = match cli::parse(prog, args, &env_bytes) {
        cli::Parsed::Run(o) => o,
        cli::Parsed::Exit(code) => return code,
    };
    let (threads, fd_budget) = resources(opts.threads);
    if reader::portable_requested() {
        du::run::<reader::Portable>(&opts, threads, fd_budget)
    } else {
        du::run::<reader::Native>(&opts, threads, fd_budget)
    }
}

fn print_overview(prog: &str) {
    println!(
        "\
dfdu {} — where did my disk space go?

Usage:
  {prog} [du options] [FILE]...   GNU du drop-in (see '{prog} --help')
  {prog} scan [options] [DIR]...  totals, counts, largest entries; ncdu export
                                  and import (see '{prog} scan --help')
  {prog} browse [options] [DIR]   browse, sort and delete, during and after the
                                  scan (see '{prog} browse --help')
  {prog} help                     this overview

Under the name 'du' (installed or symlinked), dfdu is du and nothing else.",
        env!("DFDU_VERSION")
    );
}
