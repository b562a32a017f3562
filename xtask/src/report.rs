//! Statistics over the runs, and the Markdown report.
//!
//! The report has a header (machine, filesystem, tree, method, load), a wall-time table
//! sorted by median (fastest first) with a "vs dfdu" column (tool median / dfdu median),
//! a byte-total table against `du -s -B1` with each difference explained when it matches a
//! known cause, and a table of commands and versions. Rendering does no I/O.

use std::fmt::Write;
use std::path::{Path, PathBuf};

use crate::cli;
use crate::machine::Machine;
use crate::measure::Sample;
use crate::tools::Tool;

/// Bytes one directory is assumed to take by tools that ignore real directory sizes.
const ASSUMED_DIR_BYTES: u64 = 4096;

/// GNU du's totals for the tree, plus what explains the usual differences.
pub struct Reference {
    /// `du -s -B1`.
    pub disk_bytes: u64,
    /// `du -sb`.
    pub apparent_bytes: u64,
    /// `du -s -B1 -l`: hard links counted every time they are seen.
    pub no_dedup_bytes: u64,
    /// The root directory's own disk use.
    pub root_dir_bytes: u64,
    pub n_dirs: u64,
    /// Disk use of all directories, root included.
    pub dir_bytes: u64,
}

/// A tool's raw-bytes total, or why there is none.
pub struct ByteCheck {
    pub reported: Result<u64, String>,
}

#[derive(Default)]
pub struct ToolResult {
    /// Counted runs only.
    pub samples: Vec<Sample>,
    /// Every failed run, warm-ups included.
    pub failures: Vec<String>,
}

pub struct Input<'a> {
    pub dir: &'a Path,
    pub tree: String,
    pub machine: Machine,
    pub filesystem: String,
    pub date: String,
    pub tools: &'a [Tool],
    pub results: &'a [ToolResult],
    pub checks: &'a [ByteCheck],
    pub reference: &'a Reference,
    pub skipped: &'a [String],
    pub runs: usize,
    pub warmup: usize,
    pub cold: bool,
    pub overhead_s: f64,
    pub load_before: String,
    pub load_after: String,
    pub gnu_time: Option<PathBuf>,
}

pub struct Stats {
    pub median: f64,
    pub mean: f64,
    /// Sample standard deviation (n − 1); 0 for a single value.
    pub sd: f64,
}

pub fn stats(values: &[f64]) -> Stats {
    if values.is_empty() {
        return Stats { median: f64::NAN, mean: f64::NAN, sd: f64::NAN };
    }
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    let n = sorted.len();
    let median = if n % 2 == 1 { sorted[n / 2] } else { (sorted[n / 2 - 1] + sorted[n / 2]) / 2.0 };
    let mean = sorted.iter().sum::<f64>() / n as f64;
    let variance = match n {
        1 => 0.0,
        _ => sorted.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (n - 1) as f64,
    };
    Stats { median, mean, sd: variance.sqrt() }
}

/// Median wall, median user+sys, and the peak RSS range of some samples.
pub fn summary(samples: &[Sample]) -> (f64, f64, String) {
    let walls: Vec<f64> = samples.iter().map(|s| s.wall_s).collect();
    let cpu: Vec<f64> = samples.iter().filter_map(|s| s.rusage.as_ref()).map(|u| u.user_s + u.sys_s).collect();
    let rss: Vec<u64> = samples.iter().filter_map(|s| s.rusage.as_ref()).map(|u| u.max_rss_kib).collect();
    let rss_text = match (rss.iter().min(), rss.iter().max()) {
        (Some(lo), Some(hi)) if lo == hi => format!("{:.1}", *lo as f64 / 1024.0),
        (Some(lo), Some(hi)) => format!("{:.1}–{:.1}", *lo as f64 / 1024.0, *hi as f64 / 1024.0),
        _ => "—".to_string(),
    };
    (stats(&walls).median, if cpu.is_empty() { f64::NAN } else { stats(&cpu).median }, rss_text)
}

pub fn render(input: &Input) -> String {
    let mut out = String::new();
    header(&mut out, input);
    time_table(&mut out, input);
    byte_table(&mut out, input);
    command_table(&mut out, input);
    out
}

fn header(out: &mut String, input: &Input) {
    let m = &input.machine;
    let dir_name = input.dir.display();
    let cache = if input.cold { "cold cache" } else { "warm cache" };
    let _ = writeln!(out, "# dfdu benchmark: {dir_name}, {cache}\n");
    let _ = writeln!(out, "- date: {}", input.date);
    let _ = writeln!(
        out,
        "- machine: {}, {} CPUs online ({} available to this process), {:.1} GiB RAM, Linux {}",
        m.cpu_model, m.n_cpus_online, m.n_cpus_available, m.memory_gib, m.kernel
    );
    let _ = writeln!(out, "- filesystem: {}", input.filesystem);
    let _ = writeln!(out, "- tree: {}", input.tree);
    let method = match input.cold {
        true => format!("{} runs per tool, page cache dropped before every run", input.runs),
        false => format!("{} warm-up + {} counted runs per tool", input.warmup, input.runs),
    };
    let _ = writeln!(out, "- method: {method}, interleaved round-robin (one run of every tool per round)");
    let rusage = match &input.gnu_time {
        Some(path) => {
            format!("CPU time and peak RSS from GNU time ({}; 10 ms and 1 MiB-ish resolution)", path.display())
        }
        None => "GNU time not installed: no CPU time or peak RSS".to_string(),
    };
    let _ = writeln!(
        out,
        "- timing: wall = monotonic clock from spawn to reap, including {:.1} ms harness overhead \
         (median wall of `true` under the same timer; not subtracted); {rusage}; stdout and stderr \
         piped and discarded",
        input.overhead_s * 1000.0
    );
    let _ = writeln!(out, "- load average (1/5/15 min): {} before, {} after", input.load_before, input.load_after);
    if !input.skipped.is_empty() {
        let _ = writeln!(out, "- skipped (not installed): {}", input.skipped.join(", "));
    }
    out.push('\n');
}

fn time_table(out: &mut String, input: &Input) {
    let walls: Vec<Vec<f64>> =
        input.results.iter().map(|result| result.samples.iter().map(|s| s.wall_s).collect()).collect();
    let medians: Vec<f64> = walls.iter().map(|w| stats(w).median).collect();
    let dfdu_median = input.tools.iter().position(|tool| tool.name == "dfdu").map(|idx| medians[idx]);
    let mut order: Vec<usize> = (0..input.tools.len()).collect();
    order.sort_by(|&a, &b| medians[a].total_cmp(&medians[b]));
    let _ = writeln!(out, "## Wall time (fastest median first)\n");
    let _ = writeln!(
        out,
        "| tool | mean ± sd s | median s | vs dfdu | peak RSS MiB (min–max) | user+sys s | total vs `du -sB1` |"
    );
    let _ = writeln!(out, "|---|---:|---:|---:|---:|---:|---|");
    for idx in order {
        let wall = stats(&walls[idx]);
        let ratio = dfdu_median.map_or_else(|| "n/a".to_string(), |base| format!("{:.2}×", wall.median / base));
        let result = &input.results[idx];
        let name = match input.tools[idx].name.as_str() {
            "dfdu" => "**dfdu**".to_string(),
            "floor" => "floor (yardstick)".to_string(),
            other => other.to_string(),
        };
        let _ = writeln!(
            out,
            "| {name} | {:.3} ± {:.3} | {:.3} | {ratio} | {} | {} | {} |",
            wall.mean,
            wall.sd,
            wall.median,
            rss_cell(&result.samples),
            cpu_cell(&result.samples),
            total_cell(&input.checks[idx], input.reference),
        );
    }
    out.push('\n');
    let method = match input.cold {
        true => format!("{} counted runs per tool, each after dropping the page cache", input.runs),
        false => format!("{} warm-up and {} counted runs per tool", input.warmup, input.runs),
    };
    let _ = writeln!(
        out,
        "{method}, interleaved round-robin. \"vs dfdu\" is the tool's median over dfdu's; user+sys \
         is the median CPU time; peak RSS is GNU time's maximum resident set, lowest and highest \
         run. The floor is `dfdu floor`: the least a walker can do, with no hard-link bookkeeping. \
         Load average {} before, {} after.",
        input.load_before, input.load_after
    );
    let median_of = |name: &str| input.tools.iter().position(|t| t.name == name).map(|i| medians[i]);
    if let (Some(on), Some(off)) = (median_of("dfdu-scan-shared"), median_of("dfdu-scan-noshared")) {
        let _ = writeln!(out, "\n`dfdu scan` with the sharing figures over without them: {:.2}×", on / off);
    }
    for (tool, result) in input.tools.iter().zip(input.results) {
        if let Some(first) = result.failures.first() {
            let _ = writeln!(out, "\n**{} failed {} run(s)**: {first}", tool.name, result.failures.len());
        }
    }
    out.push('\n');
}

fn cpu_cell(samples: &[Sample]) -> String {
    let usages: Vec<_> = samples.iter().filter_map(|s| s.rusage.as_ref()).collect();
    if usages.is_empty() {
        return "—".to_string();
    }
    let user = stats(&usages.iter().map(|u| u.user_s).collect::<Vec<_>>()).median;
    let sys = stats(&usages.iter().map(|u| u.sys_s).collect::<Vec<_>>()).median;
    format!("{:.2} ({user:.2} + {sys:.2})", user + sys)
}

fn rss_cell(samples: &[Sample]) -> String {
    let kib: Vec<u64> = samples.iter().filter_map(|s| s.rusage.as_ref()).map(|u| u.max_rss_kib).collect();
    let (Some(low), Some(high)) = (kib.iter().min(), kib.iter().max()) else {
        return "—".to_string();
    };
    let mib = |kib: u64| kib as f64 / 1024.0;
    match low == high {
        true => format!("{:.1}", mib(*low)),
        false => format!("{:.1}–{:.1}", mib(*low), mib(*high)),
    }
}

/// The tool's raw-bytes total against `du -s -B1`: "equal", or the difference and its cause.
fn total_cell(check: &ByteCheck, reference: &Reference) -> String {
    match &check.reported {
        Ok(bytes) if *bytes == reference.disk_bytes => "equal".to_string(),
        Ok(bytes) => {
            let diff = i128::from(*bytes) - i128::from(reference.disk_bytes);
            format!("{} ({})", cli::group_signed(diff), explain(*bytes, reference))
        }
        Err(why) => format!("— ({})", why.replace('|', "\\|")),
    }
}

fn byte_table(out: &mut String, input: &Input) {
    let r = input.reference;
    let _ = writeln!(out, "## Byte totals (untimed run with each tool's raw-bytes output)\n");
    let _ = writeln!(
        out,
        "Reference: `du -s -B1` = {} (disk use, hard links once); `du -sb` = {} (apparent); \
         `du -s -B1 -l` = {} (hard links every time). Directories: {}, using {} bytes together; \
         the root directory alone uses {}.\n",
        cli::group(r.disk_bytes),
        cli::group(r.apparent_bytes),
        cli::group(r.no_dedup_bytes),
        cli::group(r.n_dirs),
        cli::group(r.dir_bytes),
        cli::group(r.root_dir_bytes),
    );
    let _ = writeln!(out, "| tool | bytes reported | vs du -s -B1 | why |");
    let _ = writeln!(out, "|---|---|---|---|");
    for (tool, check) in input.tools.iter().zip(input.checks) {
        let row = match &check.reported {
            Ok(bytes) => {
                let diff = i128::from(*bytes) - i128::from(r.disk_bytes);
                format!("{} | {} | {}", cli::group(*bytes), cli::group_signed(diff), explain(*bytes, r))
            }
            Err(why) => format!("— | — | {}", why.replace('|', "\\|")),
        };
        let _ = writeln!(out, "| {} | {row} |", tool.name);
    }
    out.push('\n');
}

/// Names the known cause of a difference from `du -s -B1`, when the total matches one.
pub fn explain(reported: u64, r: &Reference) -> String {
    let disk = i128::from(r.disk_bytes);
    let no_dedup = i128::from(r.no_dedup_bytes);
    let dirs_as_4k = i128::from(r.dir_bytes) - i128::from(r.n_dirs * ASSUMED_DIR_BYTES);
    let root = i128::from(r.root_dir_bytes);
    let known: [(i128, &str); 7] = [
        (disk, "equal"),
        (no_dedup, "hard links not deduplicated (= du -l)"),
        (i128::from(r.apparent_bytes), "apparent size (= du -sb), not disk use"),
        (disk - dirs_as_4k, "every directory counted as 4 KiB, whatever its real size"),
        (disk - root, "the root directory's own blocks left out"),
        (no_dedup - root, "root directory left out, hard links not deduplicated"),
        (no_dedup - dirs_as_4k, "directories as 4 KiB, hard links not deduplicated"),
    ];
    let reported = i128::from(reported);
    known
        .iter()
        .find(|(value, _)| *value == reported)
        .map_or_else(|| "unexplained difference".to_string(), |(_, why)| why.to_string())
}

fn command_table(out: &mut String, input: &Input) {
    let _ = writeln!(out, "## Commands and versions (DIR = {})\n", input.dir.display());
    let _ = writeln!(out, "| tool | timed command | version | binary |");
    let _ = writeln!(out, "|---|---|---|---|");
    for tool in input.tools {
        let _ = writeln!(
            out,
            "| {} | `{}` | {} | {} |",
            tool.name,
            tool.command_line(input.dir),
            tool.version.replace('|', "\\|"),
            tool.program.display()
        );
    }
}
