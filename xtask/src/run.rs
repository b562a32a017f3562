//! `cargo xtask run`: times dfdu and the peers on one tree and writes a Markdown report.
//!
//! Sequence:
//! 1. Find the tools (`tools::discover`); missing ones are skipped and named.
//! 2. Untimed: GNU du's reference totals (`du -s -B1`, `du -sb`, `du -s -B1 -l`), a walk
//!    for directory sizes, and each tool's raw-bytes total, compared with du and explained.
//! 3. The harness overhead: the median wall time of `true` under the same timer.
//! 4. Warm-up rounds (default 2, none with `--cold`), then `--runs` counted rounds. A round
//!    runs every tool once, in a fixed order (A, B, C, … then A, B, C, …), so slow drifts
//!    of machine load hit every tool alike. With `--cold`, the page cache, dentries and
//!    inodes are dropped before every run (root only).
//! 5. Statistics and the report (`report`), written to `--out` and printed.

use std::ffi::OsString;
use std::fs;
use std::io::{self, Write};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use crate::cli::{self, Arg, Args};
use crate::measure::{self, Sample, Timer};
use crate::report::{self, ByteCheck, Reference, ToolResult};
use crate::tools::{self, Parse, Tool};
use crate::{gen, json, machine};

pub const HELP: &str = "\
cargo xtask run --dir DIR [--runs N] [--warmup N] [--cold] [--tools LIST] [--dfdu PATH]
                [--out FILE]

Times dfdu and every peer found on PATH (or in ~/.cargo/bin) on an existing directory:
dfdu -s, dfdu scan, the floor walker `dfdu floor`, dua aggregate, gdu -n -p -s,
pdu --max-depth 1 (also with --threads NCPU), dust -d 0, diskus, ncdu -0 -o /dev/null,
du -s. Missing tools are skipped. `cargo xtask bench` is this plus building dfdu and
generating the tree.

  --dir DIR     the tree to measure (for example one made by `cargo xtask gen`)
  --runs N      counted runs per tool (default 10), interleaved round-robin
  --warmup N    uncounted runs per tool first (default 2; 0 with --cold)
  --cold        drop the page cache before every run (sync; echo 3 > drop_caches; root)
  --tools LIST  time only these, comma-separated (dfdu,du); a name also selects its
                variants (dfdu: dfdu-scan; pdu: pdu-tN). Names: dfdu, dfdu-scan, floor,
                dua, gdu, pdu, dust, diskus, ncdu, du
  --dfdu PATH   the dfdu binary (default: dfdu on PATH, else next to this program)
  --out FILE    write the Markdown report here (default: append it to
                DIR/../results-YYYY-MM-DD.md, one file per day next to the tree)

Each tool's byte total is read once, untimed, with its raw-bytes flag and compared with
du -s -B1. CPU time and peak RSS come from GNU time (/usr/bin/time) when installed.";

/// At most this many counted runs (and warm-ups) per tool.
const MAX_RUNS: u64 = 1000;
/// The harness overhead is the median of this many runs of `true`.
const OVERHEAD_RUNS: usize = 7;

struct RunArgs {
    dir: PathBuf,
    runs: usize,
    warmup: Option<usize>,
    cold: bool,
    dfdu: Option<PathBuf>,
    out: Option<PathBuf>,
    tools: Option<Vec<String>>,
}

pub fn main(args: Vec<OsString>) -> Result<(), String> {
    let args = parse(args)?;
    let dir = fs::canonicalize(&args.dir).map_err(|e| format!("{}: {e}", args.dir.display()))?;
    if !dir.is_dir() {
        return Err(format!("{} is not a directory", dir.display()));
    }
    if args.cold {
        measure::drop_caches()?;
    }
    let n_cpus = cli::available_cores();
    let timer = Timer::new();
    let (tools, skipped) = tools::discover(&dir, args.dfdu.clone(), n_cpus, args.tools.as_deref());
    if tools.is_empty() {
        return Err("no tool found to time".to_string());
    }
    let names: Vec<&str> = tools.iter().map(|tool| tool.name.as_str()).collect();
    eprintln!("xtask run: {} on {}", names.join(", "), dir.display());
    if !skipped.is_empty() {
        eprintln!("  skipped (not installed): {}", skipped.join(", "));
    }
    let reference = reference_totals(&dir)?;
    let checks: Vec<ByteCheck> = tools.iter().map(byte_check).collect();
    let load_before = machine::load_average();
    let overhead_s = harness_overhead(&timer)?;
    let warmup = args.warmup.unwrap_or(if args.cold { 0 } else { 2 });
    let results = time_rounds(&timer, &tools, warmup, args.runs, args.cold)?;
    let (date, time) = machine::utc_now();
    let input = report::Input {
        dir: &dir,
        tree: tree_description(&dir),
        machine: machine::machine(),
        filesystem: machine::filesystem_of(&dir),
        date: format!("{date} {time} UTC"),
        tools: &tools,
        results: &results,
        checks: &checks,
        reference: &reference,
        skipped: &skipped,
        runs: args.runs,
        warmup,
        cold: args.cold,
        overhead_s,
        load_before,
        load_after: machine::load_average(),
        gnu_time: timer.gnu_time().map(Path::to_path_buf),
    };
    let text = report::render(&input);
    let written = match args.out {
        Some(out) => fs::write(&out, &text).map(|()| (out, "written to")),
        None => {
            // The default is one file per day next to the tree; a second report that day
            // (another tree, or cold after warm) is appended rather than overwriting it.
            let out = dir.parent().unwrap_or(&dir).join(format!("results-{date}.md"));
            append(&out, &text).map(|()| (out, "appended to"))
        }
    };
    let (out, how) = written.map_err(|e| format!("write report: {e}"))?;
    say!("{text}");
    eprintln!("xtask run: report {how} {}", out.display());
    Ok(())
}

/// Appends `text` to `path`, after a Markdown rule if the file already has something in it.
fn append(path: &Path, text: &str) -> io::Result<()> {
    let separator = if path.metadata().is_ok_and(|meta| meta.len() > 0) { "\n---\n\n" } else { "" };
    let mut file = fs::OpenOptions::new().create(true).append(true).open(path)?;
    file.write_all(separator.as_bytes())?;
    file.write_all(text.as_bytes())
}

fn parse(args: Vec<OsString>) -> Result<RunArgs, String> {
    let mut args = Args::new(args);
    let mut run =
        RunArgs { dir: PathBuf::new(), runs: 10, warmup: None, cold: false, dfdu: None, out: None, tools: None };
    while let Some(arg) = args.next()? {
        let Arg::Opt(name) = arg else {
            return Err("unexpected argument (use --dir DIR; see cargo xtask run --help)".to_string());
        };
        match name.as_str() {
            "--dir" => run.dir = PathBuf::from(args.value(&name)?),
            "--runs" => run.runs = args.value_u64(&name)?.clamp(1, MAX_RUNS) as usize,
            "--warmup" => run.warmup = Some(args.value_u64(&name)?.min(MAX_RUNS) as usize),
            "--cold" => {
                args.no_value(&name)?;
                run.cold = true;
            }
            "--dfdu" => run.dfdu = Some(PathBuf::from(args.value(&name)?)),
            "--out" => run.out = Some(PathBuf::from(args.value(&name)?)),
            "--tools" => run.tools = Some(tools::parse_list(&args.value(&name)?.to_string_lossy())?),
            _ => return Err(format!("unknown option '{name}' (see cargo xtask run --help)")),
        }
    }
    if run.dir.as_os_str().is_empty() {
        return Err("--dir DIR is required (see cargo xtask run --help)".to_string());
    }
    if let Some(dfdu) = &run.dfdu {
        if !dfdu.is_file() {
            return Err(format!("--dfdu {}: no such file", dfdu.display()));
        }
    }
    Ok(run)
}

/// GNU du's totals and the directory sizes that explain the usual differences.
fn reference_totals(dir: &Path) -> Result<Reference, String> {
    let du = |flags: &[&str]| -> Result<u64, String> {
        let output =
            Command::new("du").args(flags).arg(dir).stdin(Stdio::null()).output().map_err(|e| format!("du: {e}"))?;
        tools::parse_bytes(Parse::FirstNumber, &output.stdout)
            .ok_or_else(|| format!("du {}: no total in its output", flags.join(" ")))
    };
    let (disk_bytes, apparent_bytes, no_dedup_bytes) = (du(&["-s", "-B1"])?, du(&["-sb"])?, du(&["-s", "-B1", "-l"])?);
    let root_dir_bytes = fs::symlink_metadata(dir).map_err(|e| format!("{}: {e}", dir.display()))?.blocks() * 512;
    let (n_dirs, dir_bytes) = directory_bytes(dir)?;
    Ok(Reference { disk_bytes, apparent_bytes, no_dedup_bytes, root_dir_bytes, n_dirs, dir_bytes })
}

/// (number of directories, their summed disk use) under `dir`, itself included. Iterative:
/// the stack holds paths still to read, at most one per directory.
fn directory_bytes(dir: &Path) -> Result<(u64, u64), String> {
    let mut stack = vec![dir.to_path_buf()];
    let (mut n_dirs, mut bytes) = (0u64, 0u64);
    while let Some(path) = stack.pop() {
        let meta = fs::symlink_metadata(&path).map_err(|e| format!("{}: {e}", path.display()))?;
        n_dirs += 1;
        bytes += meta.blocks() * 512;
        let entries = fs::read_dir(&path).map_err(|e| format!("{}: {e}", path.display()))?;
        for entry in entries.flatten() {
            if entry.file_type().is_ok_and(|kind| kind.is_dir()) {
                stack.push(entry.path());
            }
        }
    }
    Ok((n_dirs, bytes))
}

fn byte_check(tool: &Tool) -> ByteCheck {
    if tool.bytes_args.is_none() {
        return ByteCheck { reported: Err("—".to_string()) };
    }
    eprintln!("  byte total (untimed): {}", tool.name);
    ByteCheck { reported: tools::reported_bytes(tool) }
}

fn harness_overhead(timer: &Timer) -> Result<f64, String> {
    let Some(true_program) = tools::find_program("true") else {
        return Ok(0.0);
    };
    let mut walls = Vec::with_capacity(OVERHEAD_RUNS);
    for _ in 0..OVERHEAD_RUNS {
        let sample = timer.run(&true_program, &[]).map_err(|e| format!("true: {e}"))?;
        walls.push(sample.wall_s);
    }
    Ok(report::stats(&walls).median)
}

/// Warm-up and counted rounds; each round runs every tool once, in the same order.
fn time_rounds(
    timer: &Timer,
    tools: &[Tool],
    warmup: usize,
    runs: usize,
    cold: bool,
) -> Result<Vec<ToolResult>, String> {
    let mut results: Vec<ToolResult> = tools.iter().map(|_| ToolResult::default()).collect();
    for round in 0..warmup + runs {
        let counted = round >= warmup;
        let mut line = match counted {
            true => format!("  run {}/{runs}:", round - warmup + 1),
            false => format!("  warm-up {}/{warmup}:", round + 1),
        };
        for (tool, result) in tools.iter().zip(&mut results) {
            if cold {
                measure::drop_caches()?;
            }
            let sample: Sample =
                timer.run(&tool.program, &tool.args).map_err(|e| format!("{}: {e}", tool.program.display()))?;
            line.push_str(&format!(" {} {:.3}", tool.name, sample.wall_s));
            if let Some(failure) = &sample.failure {
                line.push_str(" (failed)");
                result.failures.push(failure.clone());
            }
            if counted {
                result.samples.push(sample);
            }
        }
        eprintln!("{line}");
    }
    Ok(results)
}

/// How the tree was made, from its `gen` marker, or a note that it has none.
fn tree_description(dir: &Path) -> String {
    let Ok(marker) = fs::read_to_string(gen::marker_path(dir)) else {
        return format!("`{}` (no generator marker: not a generated tree)", dir.display());
    };
    let field = |key: &str| json::u64(&marker, key).map_or_else(|| "?".to_string(), cli::group);
    format!(
        "`{}`: {} dirs, {} files, {} extra hard-link names on {} inodes, {} symlinks",
        json::string(&marker, "command").unwrap_or_else(|| dir.display().to_string()),
        field("dirs"),
        field("files"),
        field("hardlink_names"),
        field("hardlink_inodes"),
        field("symlinks"),
    )
}
