//! `cargo xtask bench --dupes S|T|L DIR`: `dfdu dupes` against the duplicate finders on
//! PATH, and with `--dedupe btrfs|xfs`, `dfdu dedupe` against duperemove on a loop-mounted
//! image.
//!
//! Finding (the tree is `DIR/dupes-<shape>-<count>-s<seed>`, made by `dupes_gen`):
//! 1. Untimed, once per tool: its groups, parsed from its output (fdupes format; rdfind's
//!    results file) and compared with the generator's truth: groups, files in groups,
//!    bytes wasted. dfdu's rerun is run twice here: the first of these writes the hash
//!    file every timed rerun then reads (and rewrites: the tree does not change).
//! 2. Warm-ups (default 2; none with `--cold`), then `--runs` rounds; each round runs every
//!    tool once in a fixed order, so drifts of machine load hit them alike; `--cold` drops
//!    the page cache before every run. `dfdu-first` starts each run without a hash file
//!    (the file is deleted before it, untimed) and writes one. `dfdu-s` is `dfdu -s` on
//!    the tree: the scan alone, the yardstick the rerun is held to.
//! 3. Medians and the Markdown report `DIR/results-dupes-<shape>-<date>.md`.
//!
//! Deduplicating (`--dedupe FS`, root): an image of the file system is made once in
//! `DIR/` with the S tree written into it (plain writes), and kept. Every timed run
//! works on a fresh copy of it, loop-mounted at `/mnt/<mount-prefix>-dedupe`: free space
//! (`df -B1` after `sync -f`) before, the timed tool, free space after; then unmounted and
//! the copy deleted. dfdu and duperemove alternate.

use std::ffi::OsString;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use crate::cli::{self, Arg, Args};
use crate::dupes_gen::{self, Shape, Truth};
use crate::measure::{self, Sample, Timer};
use crate::report::summary;
use crate::{machine, tools};

pub const HELP: &str = "\
cargo xtask bench --dupes S|T|L [--count N] [--seed N] [--runs N] [--warmup N] [--cold]
                  [--tools LIST] [--dfdu PATH] [--static PATH] [--force] DIR
cargo xtask bench --dupes S|T|L|V --dedupe btrfs|xfs [--count N] [--runs N] [--tools LIST] DIR

Duplicate finders on a generated tree with known groups (DIR/dupes-<shape>-<count>-s<seed>,
written with plain write calls from one seed): dfdu dupes (dfdu; dfdu-first: with
--hashfile, starting without one; dfdu-rerun: with the hash file an earlier run wrote;
dfdu-s: `dfdu -s`, the scan alone, which the rerun is compared with), fclones, jdupes, rmlint, fdupes, rdfind, whichever are found on PATH or in ~/.cargo/bin.
Each tool's groups are checked once against the truth, untimed; the timed runs are
interleaved round-robin; the report goes to DIR/results-dupes-<shape>-<date>T<time>Z.md.

  S: --count files (default 20000, ~640 MB), log-normal sizes, ~30 % in groups of 2-20,
     ~1 % near-duplicate pairs (one byte differs in the middle)
  T: --count identical 1 KiB files (default 200000; 1000000 as in duperemove's case)
  L: two identical 1 GiB files and two near-duplicate 1.5 GiB files (5 GiB)
  V: (--dedupe only) VM images: a base of --count MiB (default 128) and five files made
     from it (rewritten 128 KiB blocks, rewritten 4 KiB pages, moved 1 MiB runs, shifted
     by a page, repeats inside one file); dfdu dedupe --blocks, also with --hashfile
     (tools dfdu, dfdu-hashfile) vs duperemove's default and --dedupe-options=partial,same,
     also with --hashfile (duperemove, duperemove-partial, duperemove-hashfile)

  --runs N      counted runs per tool (default 5)
  --warmup N    uncounted runs per tool first (default 2; 0 with --cold)
  --cold        drop the page cache before every run (root)
  --tools LIST  only these, e.g. dfdu,dfdu-rerun,jdupes (dfdu alone selects all four)
  --dfdu PATH   the dfdu binary (default: build it in release mode)
  --static PATH also time this dfdu binary as dfdu-static (plain dupes, no hash file),
                e.g. the static musl build of `make static`: the shipped form, without the
                shared libc and with less text paged in, so its peak RSS is lower
  --force       replace a tree of that name made otherwise
  --dedupe FS   btrfs or xfs (reflink=1): dfdu dedupe (and dfdu-blocks: with --blocks) vs
                duperemove -dr on a fresh copy of a loop-mounted image per run (root);
                time, peak RSS, free space gained, hash file size";

/// A tool's groups, as it reported them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Found {
    pub groups: u64,
    pub files_in_groups: u64,
    pub wasted_bytes: u64,
}

/// How a tool reports its groups.
#[derive(Clone)]
enum Output {
    /// fdupes style on stdout: paths, a blank line after each group.
    Fdupes,
    /// rdfind's results file.
    Rdfind(PathBuf),
    /// None: `dfdu -s`, the yardstick a hash-file rerun is held to (the scan alone).
    Yardstick,
}

#[derive(Clone)]
struct Finder {
    name: String,
    program: PathBuf,
    args: Vec<OsString>,
    /// Deleted before every timed run (dfdu-first's hash file).
    remove_before: Option<PathBuf>,
    output: Output,
    version: String,
}

struct Opts {
    shape: Shape,
    count: u64,
    seed: u64,
    runs: usize,
    warmup: Option<usize>,
    cold: bool,
    tools: Option<Vec<String>>,
    dfdu: Option<PathBuf>,
    static_dfdu: Option<PathBuf>,
    force: bool,
    dedupe: Option<String>,
    /// `--dupes V` (block dedupe, `dedupe_shape_v.rs`): with `--dedupe` only.
    shape_v: bool,
    dir: PathBuf,
}

fn parse(args: Vec<OsString>) -> Result<Opts, String> {
    let mut args = Args::new(args);
    let mut o = Opts {
        shape: Shape::S,
        count: 0,
        seed: 1,
        runs: 5,
        warmup: None,
        cold: false,
        tools: None,
        dfdu: None,
        static_dfdu: None,
        force: false,
        dedupe: None,
        shape_v: false,
        dir: PathBuf::new(),
    };
    while let Some(arg) = args.next()? {
        let name = match arg {
            Arg::Pos(path) if o.dir.as_os_str().is_empty() => {
                o.dir = PathBuf::from(path);
                continue;
            }
            Arg::Pos(path) => return Err(format!("a second DIR '{}': give one DIR", path.to_string_lossy())),
            Arg::Opt(name) => name,
        };
        match name.as_str() {
            "--dupes" => match args.value(&name)?.to_string_lossy().as_ref() {
                "V" | "v" => o.shape_v = true,
                text => o.shape = Shape::parse(text)?,
            },
            "--count" => o.count = args.value_u64(&name)?,
            "--seed" => o.seed = args.value_u64(&name)?,
            "--runs" => o.runs = args.value_u64(&name)?.clamp(1, 1000) as usize,
            "--warmup" => o.warmup = Some(args.value_u64(&name)?.min(1000) as usize),
            "--cold" => {
                args.no_value(&name)?;
                o.cold = true;
            }
            "--force" => {
                args.no_value(&name)?;
                o.force = true;
            }
            "--tools" => {
                let list = args.value(&name)?.to_string_lossy().into_owned();
                o.tools = Some(list.split(',').map(|s| s.trim().to_string()).filter(|s| !s.is_empty()).collect());
            }
            "--dfdu" => o.dfdu = Some(PathBuf::from(args.value(&name)?)),
            "--static" => o.static_dfdu = Some(PathBuf::from(args.value(&name)?)),
            "--dedupe" => {
                let fs_name = args.value(&name)?.to_string_lossy().into_owned();
                if fs_name != "btrfs" && fs_name != "xfs" {
                    return Err(format!("--dedupe {fs_name}: use btrfs or xfs"));
                }
                o.dedupe = Some(fs_name);
            }
            _ => return Err(format!("unknown option '{name}' (see cargo xtask bench --dupes S --help)")),
        }
    }
    if o.dir.as_os_str().is_empty() {
        return Err("DIR is missing (see cargo xtask bench --help)".to_string());
    }
    if o.shape_v && o.dedupe.is_none() {
        return Err("--dupes V is a shape for --dedupe btrfs|xfs".to_string());
    }
    if o.count == 0 {
        o.count = if o.shape_v { crate::dedupe_shape_v::default_count() } else { o.shape.default_count() };
    }
    Ok(o)
}

pub fn main(args: Vec<OsString>) -> Result<(), String> {
    let o = parse(args)?;
    fs::create_dir_all(&o.dir).map_err(|e| format!("{}: {e}", o.dir.display()))?;
    let dir = fs::canonicalize(&o.dir).map_err(|e| format!("{}: {e}", o.dir.display()))?;
    let dfdu = match &o.dfdu {
        Some(path) if path.is_file() => fs::canonicalize(path).map_err(|e| format!("{}: {e}", path.display()))?,
        Some(path) => return Err(format!("--dfdu {}: no such file", path.display())),
        None => tools::build_dfdu()?,
    };
    if let (Some(fs_name), true) = (&o.dedupe, o.shape_v) {
        return crate::dupes_dedupe::main_v(&dir, &dfdu, fs_name, o.count, o.seed, o.runs, o.tools.as_deref());
    }
    if let Some(fs_name) = o.dedupe.clone() {
        return crate::dupes_dedupe::main(&dir, &dfdu, &fs_name, o.shape, o.count, o.seed, o.runs, o.tools.as_deref());
    }
    let tree = dir.join(format!("dupes-{}-{}-s{}", o.shape.name(), o.count, o.seed));
    let truth = dupes_gen::ensure(&tree, o.shape, o.count, o.seed, o.force)?;
    let hashfile = dir.join(format!("dupes-{}-{}-s{}.dfdu-hashes", o.shape.name(), o.count, o.seed));
    let static_dfdu = match &o.static_dfdu {
        Some(path) if path.is_file() => Some(fs::canonicalize(path).map_err(|e| format!("{}: {e}", path.display()))?),
        Some(path) => return Err(format!("--static {}: no such file", path.display())),
        None => None,
    };
    let finders = discover(&tree, &dfdu, static_dfdu.as_deref(), &hashfile, &dir, o.tools.as_deref());
    if finders.is_empty() {
        return Err("no tool found to time".to_string());
    }
    if o.cold {
        measure::drop_caches()?;
    }
    let names: Vec<&str> = finders.iter().map(|f| f.name.as_str()).collect();
    eprintln!("xtask dupes: {} on {}", names.join(", "), tree.display());
    // The rerun's hash file comes from an earlier run: the first check run writes it.
    let _ = fs::remove_file(&hashfile);
    let found: Vec<Result<Found, String>> = finders.iter().map(groups_of).collect();
    let timer = Timer::new();
    let load_before = machine::load_average();
    let warmup = o.warmup.unwrap_or(if o.cold { 0 } else { 2 });
    let samples = time_rounds(&timer, &finders, warmup, o.runs, o.cold)?;
    let load_after = machine::load_average();
    let hashfile_bytes = fs::metadata(&hashfile).map(|m| m.len()).ok();
    let (date, time) = machine::utc_now();
    let ctx = Context {
        shape: o.shape,
        tree: &tree,
        truth,
        date: format!("{date} {time} UTC"),
        runs: o.runs,
        warmup,
        cold: o.cold,
        load_before,
        load_after,
        hashfile_bytes,
        filesystem: machine::filesystem_of(&tree),
    };
    let text = render(&ctx, &finders, &samples, &found);
    let out = dir.join(format!("results-dupes-{}-{date}T{}Z.md", o.shape.name(), time.replace(':', "")));
    fs::write(&out, &text).map_err(|e| format!("{}: {e}", out.display()))?;
    say!("{text}");
    eprintln!("xtask dupes: report written to {}", out.display());
    Ok(())
}

fn version_of(program: &Path, flag: &str) -> String {
    Command::new(program)
        .arg(flag)
        .stdin(Stdio::null())
        .output()
        .ok()
        .map(|o| {
            let text = if o.stdout.is_empty() { o.stderr } else { o.stdout };
            String::from_utf8_lossy(&text).lines().find(|l| !l.trim().is_empty()).unwrap_or("").trim().to_string()
        })
        .unwrap_or_default()
}

fn discover(
    tree: &Path,
    dfdu: &Path,
    static_dfdu: Option<&Path>,
    hashfile: &Path,
    dir: &Path,
    only: Option<&[String]>,
) -> Vec<Finder> {
    let wanted = |name: &str| {
        only.is_none_or(|list| list.iter().any(|w| w == name || (w == "dfdu" && name.starts_with("dfdu"))))
    };
    let t: OsString = tree.into();
    let mut out = Vec::new();
    let dfdu_version = version_of(dfdu, "--version");
    let mut add_dfdu = |name: &str, program: &Path, extra: Vec<OsString>, remove: Option<PathBuf>| {
        if wanted(name) {
            let mut args: Vec<OsString> = vec!["dupes".into(), "-q".into()];
            args.extend(extra);
            args.push(t.clone());
            out.push(Finder {
                name: name.to_string(),
                program: program.to_path_buf(),
                args,
                remove_before: remove,
                output: Output::Fdupes,
                version: if program == dfdu { dfdu_version.clone() } else { version_of(program, "--version") },
            });
        }
    };
    add_dfdu("dfdu", dfdu, Vec::new(), None);
    if let Some(program) = static_dfdu {
        add_dfdu("dfdu-static", program, Vec::new(), None);
    }
    let first_cache = dir.join("dupes-first.dfdu-hashes");
    add_dfdu("dfdu-first", dfdu, vec!["--hashfile".into(), first_cache.clone().into()], Some(first_cache));
    add_dfdu("dfdu-rerun", dfdu, vec!["--hashfile".into(), hashfile.into()], None);
    if wanted("dfdu-s") {
        out.push(Finder {
            name: "dfdu-s".to_string(),
            program: dfdu.to_path_buf(),
            args: vec!["-s".into(), t.clone()],
            remove_before: None,
            output: Output::Yardstick,
            version: dfdu_version.clone(),
        });
    }
    let rdfind_out = dir.join("rdfind-results.txt");
    let peers: [(&str, &str, Vec<OsString>, Output); 5] = [
        ("fclones", "--version", vec!["group".into(), "--format".into(), "fdupes".into(), t.clone()], Output::Fdupes),
        ("jdupes", "-v", vec!["-r".into(), "-q".into(), t.clone()], Output::Fdupes),
        (
            "rmlint",
            "--version",
            vec!["-T".into(), "df".into(), "-o".into(), "fdupes:stdout".into(), t.clone()],
            Output::Fdupes,
        ),
        ("fdupes", "-v", vec!["-r".into(), "-q".into(), t.clone()], Output::Fdupes),
        (
            "rdfind",
            "-v",
            vec!["-outputname".into(), rdfind_out.clone().into(), t.clone()],
            Output::Rdfind(rdfind_out.clone()),
        ),
    ];
    for (name, version_flag, args, output) in peers {
        if !wanted(name) {
            continue;
        }
        let Some(program) = tools::find_program(name) else {
            eprintln!("  skipped (not installed): {name}");
            continue;
        };
        let version = version_of(&program, version_flag);
        out.push(Finder { name: name.to_string(), program, args, remove_before: None, output, version });
    }
    out
}

/// One untimed run: the tool's groups (dfdu-rerun runs twice: the first writes its cache).
fn groups_of(finder: &Finder) -> Result<Found, String> {
    if matches!(finder.output, Output::Yardstick) {
        return Err("(a scan: no groups)".to_string());
    }
    eprintln!("  groups (untimed): {}", finder.name);
    if let Some(path) = &finder.remove_before {
        let _ = fs::remove_file(path);
    }
    let run = || {
        Command::new(&finder.program)
            .args(&finder.args)
            .stdin(Stdio::null())
            .stderr(Stdio::null())
            .output()
            .map_err(|e| format!("{}: {e}", finder.program.display()))
    };
    let mut output = run()?;
    if finder.name == "dfdu-rerun" {
        output = run()?;
    }
    match &finder.output {
        Output::Fdupes => Ok(parse_fdupes(&output.stdout)),
        Output::Yardstick => Err("(a scan: no groups)".to_string()),
        Output::Rdfind(path) => {
            let text = fs::read(path).map_err(|e| format!("{}: {e}", path.display()))?;
            Ok(parse_rdfind(&text))
        }
    }
}

/// Groups from fdupes-style output; each group's size from its first path.
pub fn parse_fdupes(out: &[u8]) -> Found {
    let mut found = Found::default();
    let mut group: Vec<&[u8]> = Vec::new();
    let mut close = |group: &mut Vec<&[u8]>| {
        if group.len() >= 2 {
            let size = fs::metadata(bytes_path(group[0])).map_or(0, |m| m.len());
            found.groups += 1;
            found.files_in_groups += group.len() as u64;
            found.wasted_bytes += size * (group.len() as u64 - 1);
        }
        group.clear();
    };
    for line in out.split(|&b| b == b'\n') {
        if line.is_empty() {
            close(&mut group);
        } else {
            group.push(line);
        }
    }
    close(&mut group);
    found
}

fn bytes_path(bytes: &[u8]) -> PathBuf {
    use std::os::unix::ffi::OsStrExt;
    PathBuf::from(std::ffi::OsStr::from_bytes(bytes))
}

/// Groups from rdfind's results file: `DUPTYPE_* id depth size device inode priority name`;
/// a group is the first occurrence (id N) and the files with id −N.
pub fn parse_rdfind(text: &[u8]) -> Found {
    let mut by_id: std::collections::BTreeMap<u64, (u64, u64)> = std::collections::BTreeMap::new();
    for line in String::from_utf8_lossy(text).lines() {
        if line.starts_with('#') {
            continue;
        }
        let mut fields = line.split(' ');
        let (Some(_), Some(id), Some(_), Some(size)) = (fields.next(), fields.next(), fields.next(), fields.next())
        else {
            continue;
        };
        let (Ok(id), Ok(size)) = (id.parse::<i64>(), size.parse::<u64>()) else { continue };
        let entry = by_id.entry(id.unsigned_abs()).or_insert((0, size));
        entry.0 += 1;
    }
    let mut found = Found::default();
    for (n, size) in by_id.values() {
        if *n >= 2 {
            found.groups += 1;
            found.files_in_groups += n;
            found.wasted_bytes += size * (n - 1);
        }
    }
    found
}

fn time_rounds(
    timer: &Timer,
    finders: &[Finder],
    warmup: usize,
    runs: usize,
    cold: bool,
) -> Result<Vec<Vec<Sample>>, String> {
    let mut samples: Vec<Vec<Sample>> = finders.iter().map(|_| Vec::new()).collect();
    for round in 0..warmup + runs {
        let counted = round >= warmup;
        let mut line = match counted {
            true => format!("  run {}/{runs}:", round - warmup + 1),
            false => format!("  warm-up {}/{warmup}:", round + 1),
        };
        for (finder, mine) in finders.iter().zip(&mut samples) {
            if let Some(path) = &finder.remove_before {
                let _ = fs::remove_file(path);
            }
            if cold {
                measure::drop_caches()?;
            }
            let sample = timer.run(&finder.program, &finder.args).map_err(|e| format!("{}: {e}", finder.name))?;
            line.push_str(&format!(" {} {:.3}", finder.name, sample.wall_s));
            if sample.failure.is_some() {
                line.push_str(" (failed)");
            }
            if counted {
                mine.push(sample);
            }
        }
        eprintln!("{line}");
    }
    Ok(samples)
}

struct Context<'a> {
    shape: Shape,
    tree: &'a Path,
    truth: Truth,
    date: String,
    runs: usize,
    warmup: usize,
    cold: bool,
    load_before: String,
    load_after: String,
    hashfile_bytes: Option<u64>,
    filesystem: String,
}

fn render(ctx: &Context, finders: &[Finder], samples: &[Vec<Sample>], found: &[Result<Found, String>]) -> String {
    use std::fmt::Write as _;
    let m = machine::machine();
    let mut out = String::new();
    let cache = if ctx.cold { "cold cache" } else { "warm cache" };
    let t = ctx.truth;
    let _ = writeln!(out, "# dfdu dupes benchmark: shape {}, {cache}\n", ctx.shape.name());
    let _ = writeln!(out, "- date: {}", ctx.date);
    let _ = writeln!(
        out,
        "- machine: {}, {} CPUs online, {:.1} GiB RAM, Linux {}",
        m.cpu_model, m.n_cpus_online, m.memory_gib, m.kernel
    );
    let _ = writeln!(out, "- filesystem: {}", ctx.filesystem);
    let _ = writeln!(
        out,
        "- tree: `{}`: {} files, {} bytes; truth: {} groups, {} files in groups, {} bytes wasted",
        ctx.tree.display(),
        cli::group(t.files),
        cli::group(t.bytes),
        cli::group(t.groups),
        cli::group(t.files_in_groups),
        cli::group(t.wasted_bytes)
    );
    let method = match ctx.cold {
        true => format!("{} runs per tool, page cache dropped before every run", ctx.runs),
        false => format!("{} warm-up + {} counted runs per tool", ctx.warmup, ctx.runs),
    };
    let _ = writeln!(out, "- method: {method}, interleaved round-robin; wall = spawn to reap under GNU time");
    let _ = writeln!(out, "- load average (1/5/15 min): {} before, {} after", ctx.load_before, ctx.load_after);
    if let Some(bytes) = ctx.hashfile_bytes {
        let _ = writeln!(out, "- dfdu-rerun's hash file: {} bytes", cli::group(bytes));
    }
    out.push('\n');
    let medians: Vec<(f64, f64, String)> = samples.iter().map(|s| summary(s)).collect();
    let dfdu_median = finders.iter().position(|f| f.name == "dfdu").map(|i| medians[i].0);
    let fastest_peer = finders
        .iter()
        .zip(&medians)
        .filter(|(f, _)| ["fclones", "jdupes", "rmlint"].contains(&f.name.as_str()))
        .map(|(_, m)| m.0)
        .fold(f64::INFINITY, f64::min);
    let mut order: Vec<usize> = (0..finders.len()).collect();
    order.sort_by(|&a, &b| medians[a].0.total_cmp(&medians[b].0));
    let _ = writeln!(out, "| tool | median s | vs dfdu | dfdu vs it | peak RSS MiB | user+sys s | groups | files in groups | bytes wasted | failed runs |");
    let _ = writeln!(out, "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    for i in order {
        let (median, cpu, rss) = &medians[i];
        let vs = dfdu_median.map_or("n/a".to_string(), |d| format!("{:.2}×", median / d));
        let inverse = dfdu_median.map_or("n/a".to_string(), |d| format!("{:.2}×", d / median));
        let cells = match &found[i] {
            Ok(f) => {
                let mark = |got: u64, want: u64| match got == want {
                    true => cli::group(got),
                    false => format!("{} (truth {})", cli::group(got), cli::group(want)),
                };
                format!(
                    "{} | {} | {}",
                    mark(f.groups, t.groups),
                    mark(f.files_in_groups, t.files_in_groups),
                    mark(f.wasted_bytes, t.wasted_bytes)
                )
            }
            Err(why) => format!("— | — | {why}"),
        };
        let failed = samples[i].iter().filter(|s| s.failure.is_some()).count();
        let _ = writeln!(
            out,
            "| {} | {median:.3} | {vs} | {inverse} | {rss} | {cpu:.2} | {cells} | {failed} |",
            finders[i].name
        );
    }
    for name in ["dfdu", "dfdu-static"] {
        let Some(i) = finders.iter().position(|f| f.name == name) else { continue };
        if fastest_peer.is_finite() {
            let _ = writeln!(
                out,
                "\n{name}'s median over the fastest of fclones, jdupes and rmlint: {:.2}×",
                medians[i].0 / fastest_peer
            );
        }
    }
    let first = finders.iter().position(|f| f.name == "dfdu-first").map(|i| medians[i].0);
    let rerun = finders.iter().position(|f| f.name == "dfdu-rerun").map(|i| medians[i].0);
    if let (Some(first), Some(rerun)) = (first, rerun) {
        let _ = writeln!(out, "\ndfdu's rerun with the hash file over its first run: {:.1} %", 100.0 * rerun / first);
    }
    let scan = finders.iter().position(|f| f.name == "dfdu-s").map(|i| medians[i].0);
    if let (Some(scan), Some(rerun)) = (scan, rerun) {
        let _ =
            writeln!(out, "\ndfdu's rerun with the hash file over `dfdu -s` on the same tree: {:.2}×", rerun / scan);
    }
    let _ = writeln!(out, "\n| tool | command | version |\n|---|---|---|");
    for f in finders {
        let args: Vec<String> = f.args.iter().map(|a| a.to_string_lossy().into_owned()).collect();
        let _ = writeln!(out, "| {} | `{} {}` | {} |", f.name, f.program.display(), args.join(" "), f.version);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fdupes_output_with_and_without_a_leading_blank_line() {
        let a = parse_fdupes(b"/nonexistent/a\n/nonexistent/b\n\n/nonexistent/c\n/nonexistent/d\n/nonexistent/e\n\n");
        let b = parse_fdupes(b"\n/nonexistent/a\n/nonexistent/b\n\n/nonexistent/c\n/nonexistent/d\n/nonexistent/e\n");
        assert_eq!(a, b);
        assert_eq!((a.groups, a.files_in_groups), (2, 5));
    }

    #[test]
    fn rdfind_results_group_by_id() {
        let text = b"# x\nDUPTYPE_FIRST_OCCURRENCE 1 0 6 1 2 3 a/p\nDUPTYPE_WITHIN_SAME_TREE -1 0 6 1 3 3 a/q\n\
DUPTYPE_FIRST_OCCURRENCE 4 0 12 1 5 3 a/x\nDUPTYPE_WITHIN_SAME_TREE -4 0 12 1 6 3 a/y\n\
DUPTYPE_WITHIN_SAME_TREE -4 0 12 1 7 3 a/z\n# end of file\n";
        let f = parse_rdfind(text);
        assert_eq!(f, Found { groups: 2, files_in_groups: 5, wasted_bytes: 6 + 24 });
    }
}
