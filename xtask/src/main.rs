//! `cargo xtask`: dfdu's benchmark harness on the command line (the alias is in
//! `.cargo/config.toml`). The work is in the library (`lib.rs` has the code map).
//!
//! Subcommands:
//! - `bench`: build dfdu in release mode, generate the tree in DIR once, time dfdu and
//!   every peer found on PATH, write `DIR/results-*.md`.
//! - `gen`: only the deterministic test-tree generator.
//! - `run`: only the timings, on any existing directory.
//!
//! Every error is one line (or a short block) starting `xtask: ` on stderr, exit status 2.

#![forbid(unsafe_code)]

use std::process::ExitCode;

const HELP: &str = "\
xtask: dfdu's benchmark harness (run it as `cargo xtask ...`)

usage:
  cargo xtask bench [--entries N] [--wide N] [--seed N] [--runs N] [--cold] [--tools LIST] DIR
  cargo xtask bench --dupes S|T|L [--count N] [--runs N] [--cold] [--tools LIST] DIR
  cargo xtask bench --dupes S --dedupe btrfs|xfs [--count N] [--runs N] DIR
  cargo xtask gen [--entries N] [--wide N] [--shape S] [--sizes none] [--seed N] [--force] DIR
  cargo xtask run --dir DIR [--runs N] [--warmup N] [--cold] [--tools LIST] [--dfdu PATH]
  cargo xtask SUBCOMMAND --help";

#[cfg(unix)]
const FLOOR_NOTE: &str = "\
the floor walker is `dfdu floor [-j N] DIR`, inside dfdu where the raw system calls live;
`cargo xtask bench` times it beside the tools.";

#[cfg(unix)]
fn main() -> ExitCode {
    use xtask::{bench, gen, run};
    let mut args: Vec<std::ffi::OsString> = std::env::args_os().skip(1).collect();
    if args.is_empty() {
        eprintln!("{HELP}");
        return ExitCode::from(2);
    }
    let subcommand = args.remove(0).to_string_lossy().into_owned();
    let wants_help = args.iter().take_while(|a| *a != "--").any(|a| a == "-h" || a == "--help");
    let help = match subcommand.as_str() {
        "bench" if args.iter().any(|a| a == "--dupes") => xtask::dupes_bench::HELP,
        "bench" => bench::HELP,
        "gen" => gen::HELP,
        "run" => run::HELP,
        _ => HELP,
    };
    let result = match subcommand.as_str() {
        "-h" | "--help" | "help" => show(HELP),
        "bench" | "gen" | "run" if wants_help => show(help),
        "bench" => bench::main(args),
        "gen" => gen::main(args),
        "run" => run::main(args),
        "floor" => Err(FLOOR_NOTE.to_string()),
        _ => Err(format!("unknown subcommand '{subcommand}'\n\n{HELP}")),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("xtask: {message}");
            ExitCode::from(2)
        }
    }
}

/// Prints help to stdout; a closed stdout (`cargo xtask bench --help | head`) is no error.
#[cfg(unix)]
fn show(text: &str) -> Result<(), String> {
    use std::io::Write as _;
    let _ = writeln!(std::io::stdout(), "{text}");
    Ok(())
}

#[cfg(not(unix))]
fn main() -> ExitCode {
    eprintln!("xtask: the benchmark harness needs Linux or macOS\n\n{HELP}");
    ExitCode::from(2)
}
