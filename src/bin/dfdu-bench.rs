//! `dfdu-bench`: the benchmark companion of dfdu. Std only, no `unsafe`.
//!
//! Subcommands:
//! - `gen`: a deterministic test-tree generator with the file mix of a real source/home
//!   tree (see `plan`), or a single wide directory.
//! - `run`: times dfdu and every peer disk-usage tool found on PATH, interleaved
//!   round-robin, checks each one's byte total against GNU du, and writes a Markdown report.
//! - The floor (the least a walker can do: openat + getdents64 + one statx per entry) is
//!   `dfdu floor`, inside dfdu where the raw system calls live; `run` times it as a row.
//!
//! Code map (`src/bin/dfdu_bench/`):
//! - `cli.rs`: argument cursor, number formatting.
//! - `rng.rs`: SplitMix64, the one source of randomness for `gen`.
//! - `names.rs`: entry names (ASCII, spaces, UTF-8, invalid UTF-8, one newline).
//! - `plan.rs`: the whole tree decided in memory before any I/O: shape, sizes, links.
//! - `make.rs`: creates a plan on disk with worker threads.
//! - `gen.rs`: the `gen` subcommand, the `DIR.gentree.json` marker, the summary.
//! - `json.rs`: writes the marker, reads one field back.
//! - `tools.rs`: the peer tools: commands, discovery, versions, byte-total parsing.
//! - `measure.rs`: one timed run of one command (GNU time for CPU and peak RSS).
//! - `machine.rs`: the report header: CPU, memory, kernel, filesystem, date.
//! - `run.rs`: the `run` subcommand: reference totals, rounds, statistics, the report.
//!
//! Invariants: no `unsafe` (forbidden below); `plan` and `report` do no I/O; `make`
//! workers never print; `run` times one command at a time, never two at once.

#![forbid(unsafe_code)]

/// `println!` that ignores a closed stdout: `dfdu-bench run … | head` is not an error.
macro_rules! say {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stdout(), $($arg)*);
    }};
}

#[path = "dfdu_bench/cli.rs"]
mod cli;
#[path = "dfdu_bench/gen.rs"]
mod gen;
#[path = "dfdu_bench/json.rs"]
mod json;
#[path = "dfdu_bench/machine.rs"]
mod machine;
#[path = "dfdu_bench/make.rs"]
mod make;
#[path = "dfdu_bench/measure.rs"]
mod measure;
#[path = "dfdu_bench/names.rs"]
mod names;
#[path = "dfdu_bench/plan.rs"]
mod plan;
#[path = "dfdu_bench/report.rs"]
mod report;
#[path = "dfdu_bench/rng.rs"]
mod rng;
#[path = "dfdu_bench/run.rs"]
mod run;
#[path = "dfdu_bench/tools.rs"]
mod tools;

use std::ffi::OsString;
use std::process::ExitCode;

const HELP: &str = "\
dfdu-bench: test trees and timings for dfdu and its peers

usage:
  dfdu-bench gen [--entries N] [--wide N] [--seed N] [--threads N] [--force] [--dry-run] DIR
  dfdu-bench run --dir DIR [--runs N] [--warmup N] [--cold] [--dfdu PATH] [--out FILE]
  dfdu-bench SUBCOMMAND --help";

const FLOOR_NOTE: &str = "\
The floor walker is `dfdu floor [-j N] DIR`, inside dfdu where the raw system calls live;
`dfdu-bench run` times it beside the tools.";

fn main() -> ExitCode {
    let mut args: Vec<OsString> = std::env::args_os().skip(1).collect();
    if args.is_empty() {
        eprintln!("{HELP}");
        return ExitCode::from(2);
    }
    let subcommand = args.remove(0).to_string_lossy().into_owned();
    let wants_help = args.iter().take_while(|a| *a != "--").any(|a| a == "-h" || a == "--help");
    let help = match subcommand.as_str() {
        "gen" => gen::HELP,
        "run" => run::HELP,
        _ => HELP,
    };
    let result = match subcommand.as_str() {
        "gen" | "run" | "-h" | "--help" | "help"
            if wants_help || subcommand.starts_with('-') || subcommand == "help" =>
        {
            say!("{help}");
            Ok(())
        }
        "gen" => gen::main(args),
        "run" => run::main(args),
        "floor" => Err(FLOOR_NOTE.to_string()),
        _ => Err(format!("unknown subcommand {subcommand}\n\n{HELP}")),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("{message}");
            ExitCode::from(2)
        }
    }
}
