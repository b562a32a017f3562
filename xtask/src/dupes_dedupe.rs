//! `cargo xtask bench --dupes S --dedupe btrfs|xfs DIR`: `dfdu dedupe` against
//! `duperemove -dr` on a loop-mounted image (root only; see `dupes_bench.rs` for the
//! sequence). The pristine image, with the tree written into it once by plain `write`
//! calls, is kept as `DIR/dupes-<shape>-<count>-s<seed>.<fs>.img`; every run gets its own
//! copy, mounted at `$DFDU_BENCH_MNT` (default `/mnt/dfdu-bench-dedupe`), and the page
//! cache is dropped before the timed command, so each tool starts from the same state.

use std::ffi::OsString;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use crate::dedupe_shape_v;
use crate::dupes_gen::{self, Shape};
use crate::measure::{self, Sample, Timer};
use crate::{cli, machine, tools};

fn sh(program: &str, args: &[&std::ffi::OsStr]) -> Result<String, String> {
    let output =
        Command::new(program).args(args).stdin(Stdio::null()).output().map_err(|e| format!("{program}: {e}"))?;
    if !output.status.success() {
        let args: Vec<String> = args.iter().map(|a| a.to_string_lossy().into_owned()).collect();
        return Err(format!("{program} {} failed: {}", args.join(" "), String::from_utf8_lossy(&output.stderr).trim()));
    }
    Ok(String::from_utf8_lossy(&output.stdout).into_owned())
}

/// Bytes available on the file system at `dir`, after `sync -f` (freed extents counted).
fn avail(dir: &Path) -> Result<u64, String> {
    sh("sync", &["-f".as_ref(), dir.as_os_str()])?;
    let text = sh("df", &["-B1".as_ref(), "--output=avail".as_ref(), dir.as_os_str()])?;
    text.lines().nth(1).and_then(|l| l.trim().parse().ok()).ok_or_else(|| format!("df {}: no number", dir.display()))
}

fn mount(image: &Path, mnt: &Path) -> Result<(), String> {
    fs::create_dir_all(mnt).map_err(|e| format!("{}: {e}", mnt.display()))?;
    sh("mount", &["-o".as_ref(), "loop".as_ref(), image.as_os_str(), mnt.as_os_str()]).map(|_| ())
}

fn umount(mnt: &Path) -> Result<(), String> {
    sh("umount", &[mnt.as_os_str()]).map(|_| ())
}

/// Makes the pristine image unless it exists with the same marker: `write` fills the
/// mounted tree, `bytes` is what it writes in `files` files (the image gets twice that,
/// each file rounded up to a block and given 2 KiB of metadata, and 1 GiB: 1M files of
/// 1 KiB need 4 GB of blocks on XFS, not 1 GB).
fn ensure_image(
    image: &Path,
    mnt: &Path,
    fs_name: &str,
    want: &str,
    (bytes, files): (u64, u64),
    write: impl FnOnce(&Path) -> Result<(), String>,
) -> Result<(), String> {
    let marker = dupes_gen::marker_path(image);
    if image.is_file() && fs::read_to_string(&marker).is_ok_and(|t| t == want) {
        eprintln!("xtask dedupe: reusing {}", image.display());
        return Ok(());
    }
    let _ = fs::remove_file(image);
    let size = ((bytes + files * (4096 + 2048)) * 2 + (1 << 30)).max(2 << 30);
    fs::File::create(image).and_then(|f| f.set_len(size)).map_err(|e| format!("{}: {e}", image.display()))?;
    match fs_name {
        "btrfs" => sh("mkfs.btrfs", &["-q".as_ref(), "-f".as_ref(), image.as_os_str()])?,
        _ => sh("mkfs.xfs", &["-q".as_ref(), "-f".as_ref(), "-m".as_ref(), "reflink=1".as_ref(), image.as_os_str()])?,
    };
    mount(image, mnt)?;
    let written = write(&mnt.join("tree"));
    let unmounted = umount(mnt);
    written?;
    unmounted?;
    fs::write(&marker, want).map_err(|e| format!("{}: {e}", marker.display()))
}

struct Outcome {
    sample: Sample,
    freed: i128,
    /// Bytes of the hash file the run wrote, for a tool given one.
    hashfile: Option<u64>,
}

/// One tool of a dedupe benchmark: its row name, program and arguments, and the hash file
/// its arguments name (outside the image; removed before each run, its size noted after).
struct Tool {
    name: String,
    program: PathBuf,
    args: Vec<OsString>,
    hashfile: Option<PathBuf>,
}

impl Tool {
    fn new(name: &str, program: &Path, args: &[&std::ffi::OsStr]) -> Tool {
        let args = args.iter().map(|a| a.to_os_string()).collect();
        Tool { name: name.into(), program: program.to_path_buf(), args, hashfile: None }
    }

    /// The same with `--hashfile=PATH` (dfdu and duperemove spell it alike) before the tree.
    fn with_hashfile(mut self, path: PathBuf) -> Tool {
        let mut flag = OsString::from("--hashfile=");
        flag.push(&path);
        let at = self.args.len() - 1;
        self.args.insert(at, flag);
        self.hashfile = Some(path);
        self
    }
}

/// One run: fresh copy, mount, free space, drop caches, the timed tool, free space, unmount.
fn one_run(timer: &Timer, image: &Path, mnt: &Path, tool: &Tool) -> Result<Outcome, String> {
    let (program, args) = (&tool.program, &tool.args);
    if let Some(h) = &tool.hashfile {
        let _ = fs::remove_file(h);
    }
    let copy = image.with_extension("run.img");
    sh("cp", &["--sparse=always".as_ref(), image.as_os_str(), copy.as_os_str()])?;
    mount(&copy, mnt)?;
    let result = (|| -> Result<Outcome, String> {
        let before = avail(mnt)?;
        measure::drop_caches()?;
        let sample = timer.run(program, args).map_err(|e| format!("{}: {e}", program.display()))?;
        let after = avail(mnt)?;
        let hashfile = tool.hashfile.as_ref().and_then(|h| fs::metadata(h).ok()).map(|m| m.len());
        Ok(Outcome { sample, freed: i128::from(after) - i128::from(before), hashfile })
    })();
    let unmounted = umount(mnt);
    let _ = fs::remove_file(&copy);
    let outcome = result?;
    unmounted?;
    Ok(outcome)
}

#[allow(clippy::too_many_arguments)] // the bench's parsed options, passed on as they are
pub fn main(
    dir: &Path,
    dfdu: &Path,
    fs_name: &str,
    shape: Shape,
    count: u64,
    seed: u64,
    runs: usize,
    only: Option<&[String]>,
) -> Result<(), String> {
    let mnt = bench_mnt();
    let image = dir.join(format!("dupes-{}-{count}-s{seed}.{fs_name}.img", shape.name()));
    let plan = dupes_gen::plan(shape, count, seed);
    let want = format!("{fs_name} {} {count} {seed} {}\n", shape.name(), plan.truth.bytes);
    ensure_image(&image, &mnt, fs_name, &want, (plan.truth.bytes, plan.truth.files), |tree| {
        dupes_gen::write_plan(tree, &plan)
    })?;
    let truth = plan.truth;
    let tree: OsString = mnt.join("tree").into();
    let mut tools_: Vec<Tool> = Vec::new();
    let wanted = |name: &str| only.is_none_or(|l| l.iter().any(|w| w == name));
    let t = tree.as_os_str();
    if wanted("dfdu") {
        tools_.push(Tool::new("dfdu", dfdu, &["dedupe".as_ref(), "-q".as_ref(), t]));
    }
    // Block mode on a tree of whole-file duplicates: what `--blocks` costs where it finds
    // nothing more (issue 27: S and T no slower than whole-file dedupe).
    if wanted("dfdu-blocks") {
        tools_.push(Tool::new("dfdu-blocks", dfdu, &["dedupe".as_ref(), "-q".as_ref(), "--blocks".as_ref(), t]));
    }
    match tools::find_program("duperemove") {
        Some(p) => {
            if wanted("duperemove") {
                tools_.push(Tool::new("duperemove", &p, &["-dr".as_ref(), "-q".as_ref(), t]));
            }
            // Its block mode, the peer of `dfdu-blocks` (issue 27: no slower on each shape).
            if wanted("duperemove-partial") {
                let partial = ["-dr".as_ref(), "-q".as_ref(), "--dedupe-options=partial,same".as_ref(), t];
                tools_.push(Tool::new("duperemove-partial", &p, &partial));
            }
        }
        None => eprintln!("  skipped (not installed): duperemove"),
    }
    let about = format!(
        "- image: `{}` ({fs_name}{}); tree: {} files, {} bytes, {} bytes wasted in {} groups",
        image.display(),
        if fs_name == "xfs" { ", reflink=1" } else { "" },
        cli::group(truth.files),
        cli::group(truth.bytes),
        cli::group(truth.wasted_bytes),
        cli::group(truth.groups)
    );
    bench(dir, fs_name, &image, &mnt, &tools_, runs, &about)
}

fn bench_mnt() -> PathBuf {
    std::env::var_os("DFDU_BENCH_MNT").map_or_else(|| PathBuf::from("/mnt/dfdu-bench-dedupe"), PathBuf::from)
}

/// Shape V (`dedupe_shape_v.rs`): block dedupe. dfdu `--blocks` against duperemove's
/// default (whole extents) and `--dedupe-options=partial,same` (128 KiB blocks, also
/// inside one file), each on its own fresh copy.
pub fn main_v(
    dir: &Path,
    dfdu: &Path,
    fs_name: &str,
    count: u64,
    seed: u64,
    runs: usize,
    only: Option<&[String]>,
) -> Result<(), String> {
    let mnt = bench_mnt();
    let image = dir.join(format!("dupes-V-{count}-s{seed}.{fs_name}.img"));
    let plan = dedupe_shape_v::plan(count, seed);
    let want = dedupe_shape_v::marker_text(fs_name, count, seed, &plan);
    ensure_image(&image, &mnt, fs_name, &want, (plan.bytes, 6), |tree| dedupe_shape_v::write(tree, &plan, seed))?;
    let tree: OsString = mnt.join("tree").into();
    let wanted = |name: &str| only.is_none_or(|l| l.iter().any(|w| w == name));
    let mut tools_: Vec<Tool> = Vec::new();
    let t = tree.as_os_str();
    let blocks = Tool::new("dfdu --blocks", dfdu, &["dedupe".as_ref(), "-q".as_ref(), "--blocks".as_ref(), t]);
    if wanted("dfdu") {
        tools_.push(blocks);
    }
    if wanted("dfdu-hashfile") {
        let blocks =
            Tool::new("dfdu --blocks --hashfile", dfdu, &["dedupe".as_ref(), "-q".as_ref(), "--blocks".as_ref(), t]);
        tools_.push(blocks.with_hashfile(dir.join("bench-dfdu.hash")));
    }
    match tools::find_program("duperemove") {
        Some(p) => {
            let partial: [&std::ffi::OsStr; 4] =
                ["-dr".as_ref(), "-q".as_ref(), "--dedupe-options=partial,same".as_ref(), t];
            if wanted("duperemove") {
                tools_.push(Tool::new("duperemove -dr", &p, &["-dr".as_ref(), "-q".as_ref(), t]));
            }
            if wanted("duperemove-partial") {
                tools_.push(Tool::new("duperemove partial,same", &p, &partial));
            }
            if wanted("duperemove-hashfile") {
                let tool = Tool::new("duperemove partial,same --hashfile", &p, &partial);
                tools_.push(tool.with_hashfile(dir.join("bench-duperemove.hash")));
            }
        }
        None => eprintln!("  skipped (not installed): duperemove"),
    }
    let about = format!(
        "- image: `{}` ({fs_name}{}); shape V: 6 files, {} bytes; duplicate bytes in aligned blocks: {} at 4 KiB, \
         {} at 128 KiB",
        image.display(),
        if fs_name == "xfs" { ", reflink=1" } else { "" },
        cli::group(plan.bytes),
        cli::group(plan.dup_4k_bytes),
        cli::group(plan.dup_128k_bytes)
    );
    bench(dir, fs_name, &image, &mnt, &tools_, runs, &about)
}

/// The timed rounds over `tools_`, each run on a fresh copy of `image`; writes the report.
fn bench(
    dir: &Path,
    fs_name: &str,
    image: &Path,
    mnt: &Path,
    tools_: &[Tool],
    runs: usize,
    about: &str,
) -> Result<(), String> {
    let timer = Timer::new();
    let load_before = machine::load_average();
    let mut results: Vec<Vec<Outcome>> = tools_.iter().map(|_| Vec::new()).collect();
    for round in 0..runs {
        let mut line = format!("  run {}/{runs}:", round + 1);
        for (tool, mine) in tools_.iter().zip(&mut results) {
            let outcome = one_run(&timer, image, mnt, tool)?;
            line.push_str(&format!(" {} {:.3} s, freed {}", tool.name, outcome.sample.wall_s, outcome.freed));
            if let Some(failure) = &outcome.sample.failure {
                line.push_str(&format!(" (failed: {failure})"));
            }
            mine.push(outcome);
        }
        eprintln!("{line}");
    }
    let (date, time) = machine::utc_now();
    let text = render(fs_name, about, tools_, &results, &load_before, &format!("{date} {time} UTC"));
    let out = dir.join(format!("results-dedupe-{fs_name}-{date}T{}Z.md", time.replace(':', "")));
    fs::write(&out, &text).map_err(|e| format!("{}: {e}", out.display()))?;
    say!("{text}");
    eprintln!("xtask dedupe: report written to {}", out.display());
    Ok(())
}

fn render(
    fs_name: &str,
    about: &str,
    tools_: &[Tool],
    results: &[Vec<Outcome>],
    load_before: &str,
    date: &str,
) -> String {
    use std::fmt::Write as _;
    let m = machine::machine();
    let mut out = String::new();
    let _ = writeln!(out, "# dfdu dedupe benchmark: {fs_name} loop image\n");
    let _ = writeln!(out, "- date: {date}");
    let _ = writeln!(out, "- machine: {}, {} CPUs online, Linux {}", m.cpu_model, m.n_cpus_online, m.kernel);
    let _ = writeln!(out, "{about}");
    let _ = writeln!(
        out,
        "- method: every run on a fresh copy of the image, loop-mounted, page cache dropped \
         before the timed command; tools alternate; freed = `df -B1` avail after − before \
         (each after `sync -f`)"
    );
    let _ = writeln!(out, "- load average before: {load_before}, after: {}\n", machine::load_average());
    let _ = writeln!(
        out,
        "| tool | median s | runs s | peak RSS MiB | user+sys s | freed bytes (median) | hash file bytes | failed |"
    );
    let _ = writeln!(out, "|---|---:|---|---:|---:|---:|---:|---:|");
    for (tool, mine) in tools_.iter().zip(results) {
        let name = &tool.name;
        let samples: Vec<Sample> = mine
            .iter()
            .map(|o| Sample {
                wall_s: o.sample.wall_s,
                rusage: o.sample.rusage.as_ref().map(|u| measure::Rusage { ..*u }),
                failure: o.sample.failure.clone(),
            })
            .collect();
        let (median, cpu, rss) = crate::report::summary(&samples);
        let walls: Vec<String> = mine.iter().map(|o| format!("{:.2}", o.sample.wall_s)).collect();
        let mut freed: Vec<i128> = mine.iter().map(|o| o.freed).collect();
        freed.sort_unstable();
        let freed_median = freed.get(freed.len() / 2).copied().unwrap_or(0);
        let failed = mine.iter().filter(|o| o.sample.failure.is_some()).count();
        let hashfile = mine.iter().filter_map(|o| o.hashfile).max().map_or_else(|| "—".to_string(), cli::group);
        let _ = writeln!(
            out,
            "| {name} | {median:.3} | {} | {rss} | {cpu:.2} | {} | {hashfile} | {failed} |",
            walls.join(", "),
            cli::group_signed(freed_median)
        );
    }
    let _ = writeln!(out, "\n| tool | command |\n|---|---|");
    for tool in tools_ {
        let args: Vec<String> = tool.args.iter().map(|a| a.to_string_lossy().into_owned()).collect();
        let _ = writeln!(out, "| {} | `{} {}` |", tool.name, tool.program.display(), args.join(" "));
    }
    out
}
