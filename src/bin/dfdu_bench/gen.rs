//! `dfdu-bench gen`: argument handling, the `DIR.gentree.json` marker, and the summary.
//!
//! The marker sits next to the tree (`/work/bench/tree-1m.gentree.json` for
//! `/work/bench/tree-1m`) and records the arguments that identify a tree: plan format,
//! entry count, `--wide` and seed. Rules:
//! - marker complete and identical arguments: reuse the tree, print its summary, done;
//! - marker with other arguments: refuse;
//! - `--force` with a marker (any arguments): delete the tree and regenerate;
//! - marker left incomplete by an interrupted run with identical arguments: regenerate;
//! - no marker but DIR exists: regenerate only if DIR is an empty directory, otherwise
//!   refuse even with `--force` (it was not made by this tool, so it is not ours to delete).

use std::ffi::OsString;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use crate::cli::{self, Arg, Args};
use crate::plan::{self, Counts, Plan, PLAN_FORMAT};
use crate::{json, make};

pub const HELP: &str = "\
dfdu-bench gen [--entries N] [--wide N] [--seed N] [--threads N] [--force] [--dry-run] DIR

Generates a deterministic test tree at DIR (which must not exist, or be a tree made by an
earlier run). The same seed gives the same names, sizes and link structure.

  --entries N   entries including the root (default 1000000): 4.633% directories,
                0.9565% extra hard-link names, 0.4685% symlinks, the rest regular files
  --wide N      instead: N regular files directly in DIR and nothing else
  --seed N      random seed (default 1)
  --threads N   worker threads creating files (default: 2 x available cores)
  --force       delete the tree at DIR (only one with a marker) and regenerate it
  --dry-run     plan only: print the summary and a disk-use estimate, create nothing

A marker DIR.gentree.json records the arguments; a rerun with the same arguments reuses
the tree at once; other arguments are refused without --force.";

/// The arguments that identify a tree (what the marker compares).
#[derive(Clone, Copy, PartialEq, Debug)]
pub struct TreeId {
    pub plan_format: u64,
    /// Entries including the root, whichever way they were asked for.
    pub entries: u64,
    /// 0 for a normal tree.
    pub wide: u64,
    pub seed: u64,
}

struct GenArgs {
    id: TreeId,
    threads: usize,
    force: bool,
    dry_run: bool,
    dir: PathBuf,
}

pub fn main(args: Vec<OsString>) -> Result<(), String> {
    let args = parse(args)?;
    if args.dry_run {
        let started = Instant::now();
        let tree = plan::plan(counts_for(args.id), args.id.seed);
        print_summary(&args.dir, &tree, started.elapsed().as_secs_f64());
        say!("  (dry run: planned only, nothing created)");
        return Ok(());
    }
    let marker_path = marker_path(&args.dir);
    if reuse_or_clear(&args, &marker_path)? {
        return Ok(());
    }
    if let Some(parent) = args.dir.parent().filter(|p| !p.as_os_str().is_empty()) {
        fs::create_dir_all(parent).map_err(|e| format!("mkdir -p {}: {e}", parent.display()))?;
    }
    let started = Instant::now();
    let counts = counts_for(args.id);
    let tree = plan::plan(counts, args.id.seed);
    let plan_s = started.elapsed().as_secs_f64();
    write_marker(&marker_path, &args, &tree, None)?;
    eprintln!("dfdu-bench gen: planned {} entries in {plan_s:.1} s; creating {}", counts.entries(), args.dir.display());
    let phases = make::make(&args.dir, &tree, args.threads)?;
    let sync_started = Instant::now();
    let _ = Command::new("sync").status();
    let sync_s = sync_started.elapsed().as_secs_f64();
    let elapsed_s = started.elapsed().as_secs_f64();
    write_marker(&marker_path, &args, &tree, Some(elapsed_s))?;
    print_summary(&args.dir, &tree, elapsed_s);
    say!(
        "  phases         plan {plan_s:.1} s, directories {:.1} s, files and symlinks {:.1} s \
         ({} threads), hard links {:.1} s, sync {sync_s:.1} s",
        phases.dirs_s,
        phases.files_s,
        args.threads,
        phases.links_s
    );
    say!("  marker         {}", marker_path.display());
    Ok(())
}

fn parse(args: Vec<OsString>) -> Result<GenArgs, String> {
    let mut args = Args::new(args);
    let (mut entries, mut wide, mut seed, mut force, mut dry_run) = (1_000_000u64, 0u64, 1u64, false, false);
    let mut threads = cli::available_cores() * 2;
    let mut dir: Option<PathBuf> = None;
    while let Some(arg) = args.next()? {
        match arg {
            Arg::Opt(name) => match name.as_str() {
                "--entries" => entries = args.value_u64(&name)?,
                "--wide" => wide = args.value_u64(&name)?,
                "--seed" => seed = args.value_u64(&name)?,
                "--threads" => threads = args.value_u64(&name)?.clamp(1, 256) as usize,
                "--dry-run" => {
                    args.no_value(&name)?;
                    dry_run = true;
                }
                "--force" => {
                    args.no_value(&name)?;
                    force = true;
                }
                _ => return Err(format!("gen: unknown option {name}\n\n{HELP}")),
            },
            Arg::Pos(path) if dir.is_none() => dir = Some(PathBuf::from(path)),
            Arg::Pos(_) => return Err(format!("gen: more than one DIR\n\n{HELP}")),
        }
    }
    let dir = dir.ok_or_else(|| format!("gen: DIR is missing\n\n{HELP}"))?;
    let entries = if wide > 0 { wide + 1 } else { entries };
    if !(plan::MIN_ENTRIES..=plan::MAX_ENTRIES).contains(&entries) && wide == 0 {
        return Err(format!("gen: --entries must be {}..={}", plan::MIN_ENTRIES, plan::MAX_ENTRIES));
    }
    if wide > plan::MAX_ENTRIES {
        return Err(format!("gen: --wide must be at most {}", plan::MAX_ENTRIES));
    }
    let dir = strip_trailing_slashes(dir);
    Ok(GenArgs { id: TreeId { plan_format: PLAN_FORMAT, entries, wide, seed }, threads, force, dry_run, dir })
}

fn counts_for(id: TreeId) -> Counts {
    if id.wide > 0 {
        Counts::for_wide(id.wide)
    } else {
        Counts::for_tree(id.entries)
    }
}

fn strip_trailing_slashes(dir: PathBuf) -> PathBuf {
    // Path::components drops trailing slashes; "." and "/" stay as they are.
    dir.components().collect()
}

/// `DIR.gentree.json`, next to DIR.
pub fn marker_path(dir: &Path) -> PathBuf {
    let mut name = dir.file_name().map(OsString::from).unwrap_or_else(|| OsString::from("tree"));
    name.push(".gentree.json");
    dir.with_file_name(name)
}

/// Applies the marker rules. Ok(true): the existing tree is reused and nothing is left to do.
fn reuse_or_clear(args: &GenArgs, marker_path: &Path) -> Result<bool, String> {
    let marker = fs::read_to_string(marker_path).ok();
    let dir_exists = args.dir.symlink_metadata().is_ok();
    let Some(marker) = marker else {
        if dir_exists {
            fs::remove_dir(&args.dir).map_err(|_| {
                format!(
                    "gen: {} exists and has no marker {}: it was not generated by dfdu-bench; \
                     remove it yourself or choose another DIR",
                    args.dir.display(),
                    marker_path.display()
                )
            })?;
        }
        return Ok(false);
    };
    let old_id = marker_id(&marker);
    let complete = json::string(&marker, "state").as_deref() == Some("complete");
    if old_id == Some(args.id) && complete && dir_exists && !args.force {
        say!("dfdu-bench gen: reusing {} (same arguments as its marker)", args.dir.display());
        print_marker_summary(&args.dir, &marker);
        return Ok(true);
    }
    if old_id != Some(args.id) && !args.force {
        return Err(format!(
            "gen: {} was generated with other arguments ({}); pass --force to delete and regenerate",
            args.dir.display(),
            json::string(&marker, "command").unwrap_or_else(|| "unreadable marker".to_string())
        ));
    }
    if dir_exists {
        eprintln!("dfdu-bench gen: removing {}", args.dir.display());
        fs::remove_dir_all(&args.dir).map_err(|e| format!("rm -r {}: {e}", args.dir.display()))?;
    }
    Ok(false)
}

fn marker_id(marker: &str) -> Option<TreeId> {
    Some(TreeId {
        plan_format: json::u64(marker, "plan_format")?,
        entries: json::u64(marker, "entries")?,
        wide: json::u64(marker, "wide")?,
        seed: json::u64(marker, "seed")?,
    })
}

/// The command line that makes this tree, as recorded in the marker.
fn command_line(args: &GenArgs) -> String {
    let size =
        if args.id.wide > 0 { format!("--wide {}", args.id.wide) } else { format!("--entries {}", args.id.entries) };
    format!("dfdu-bench gen {size} --seed {} {}", args.id.seed, args.dir.display())
}

/// Writes the marker: `elapsed_s` None means "generating", Some means complete.
fn write_marker(path: &Path, args: &GenArgs, tree: &Plan, elapsed_s: Option<f64>) -> Result<(), String> {
    let counts = tree.counts;
    let fields: Vec<(&str, String)> = vec![
        ("generator", json::quote("dfdu-bench gen")),
        ("plan_format", args.id.plan_format.to_string()),
        ("entries", args.id.entries.to_string()),
        ("wide", args.id.wide.to_string()),
        ("seed", args.id.seed.to_string()),
        ("state", json::quote(if elapsed_s.is_some() { "complete" } else { "generating" })),
        ("command", json::quote(&command_line(args))),
        ("dirs", counts.dirs.to_string()),
        ("files", counts.files.to_string()),
        ("hardlink_names", counts.link_names.to_string()),
        ("hardlink_inodes", counts.link_inodes.to_string()),
        ("symlinks", counts.symlinks.to_string()),
        ("file_bytes", tree.file_bytes().to_string()),
        ("max_depth", tree.max_depth().to_string()),
        ("max_files_in_dir", tree.max_files_in_dir().to_string()),
        ("elapsed_s", format!("{:.1}", elapsed_s.unwrap_or(0.0))),
    ];
    fs::write(path, json::object(&fields)).map_err(|e| format!("write {}: {e}", path.display()))
}

fn print_summary(dir: &Path, tree: &Plan, elapsed_s: f64) {
    let c = tree.counts;
    say!("dfdu-bench gen: {}", dir.display());
    say!("  directories    {:>12} (incl. root; max depth {})", cli::group(c.dirs), tree.max_depth());
    say!("  regular files  {:>12} (inodes; biggest directory holds {})", cli::group(c.files), tree.max_files_in_dir());
    say!("  hard links     {:>12} extra names on {} inodes", cli::group(c.link_names), cli::group(c.link_inodes));
    say!("  symlinks       {:>12}", cli::group(c.symlinks));
    say!("  entries        {:>12} (find DIR | wc -l gives one more: a name has a newline)", cli::group(c.entries()));
    say!("  file bytes     {:>12} (apparent, each inode once)", cli::group(tree.file_bytes()));
    say!("  disk estimate  {:>12} (du -s -B1 should be close)", cli::group(tree.estimated_disk_bytes()));
    say!("  elapsed        {elapsed_s:>12.1} s");
}

fn print_marker_summary(dir: &Path, marker: &str) {
    let field = |key: &str| json::u64(marker, key).map(cli::group).unwrap_or_else(|| "?".into());
    say!("  tree           {}", dir.display());
    say!("  directories    {:>12} (incl. root)", field("dirs"));
    say!("  regular files  {:>12}", field("files"));
    say!("  hard links     {:>12} extra names on {} inodes", field("hardlink_names"), field("hardlink_inodes"));
    say!("  symlinks       {:>12}", field("symlinks"));
    say!("  entries        {:>12}", field("entries"));
    say!("  file bytes     {:>12} (apparent)", field("file_bytes"));
    say!("  generated in   {:>12} s", json::raw(marker, "elapsed_s").unwrap_or_default());
}
