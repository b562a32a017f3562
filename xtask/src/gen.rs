//! `cargo xtask gen`: argument handling, the `DIR.gentree.json` marker, and the summary.
//!
//! The marker sits next to the tree (`~/dfdu-bench/tree-1m/tree.gentree.json` for
//! `~/dfdu-bench/tree-1m/tree`) and records the arguments that identify a tree: plan
//! format, shape, entry count, depth, sizes and seed. Rules:
//! - marker complete and identical arguments: reuse the tree, print its summary, done;
//! - marker with other arguments: refuse;
//! - `--force` with a marker (any arguments): delete the tree and regenerate;
//! - marker left incomplete by an interrupted run with identical arguments: regenerate;
//! - no marker but DIR exists: regenerate only if DIR is an empty directory, otherwise
//!   refuse even with `--force` (it was not made by this tool, so it is not ours to delete).

use std::ffi::OsString;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

use crate::cli::{self, Arg, Args};
use crate::image::{self, FsArgs};
use crate::plan::{self, Plan, Shape, Sizes, TreeId, PLAN_FORMAT};
use crate::{json, make};

pub const HELP: &str = "\
cargo xtask gen [--entries N] [--wide N] [--shape tree|wide|chain] [--depth N]
                [--sizes mixed|none] [--seed N] [--threads N] [--force] [--dry-run]
                [--fs btrfs|xfs|ext4 [--mount M]] DIR

Generates a deterministic test tree at DIR (which must not exist, or be a tree made by an
earlier run). The same arguments give the same names, sizes and link structure.

  --entries N   entries including the root (default 1000000)
  --shape S     tree (default): the mix of a real source/home tree: 4.633% directories,
                0.9565% extra hard-link names, 0.4685% symlinks, the rest regular files;
                wide: every entry but the root a regular file directly in DIR;
                chain: --depth nested directories, the files spread evenly over them
  --wide N      the same as --shape wide --entries N+1 (N files in one directory)
  --depth N     levels of the chain below DIR (default 1000; --shape chain only)
  --sizes S     mixed (default): empty, small, big and sparse files as in real trees;
                none: every file empty, so a tree needs only its directories' blocks
                (ext4: about 0.2 GB per million entries) and one inode per entry
  --seed N      random seed (default 1)
  --threads N   worker threads creating files (default: 2 x available cores; a chain
                is made by one thread)
  --force       delete the tree at DIR (only one with a marker) and regenerate it
  --dry-run     plan only: print the summary and a disk-use estimate, create nothing
  --fs FS       (Linux, root) make the tree on a file system of its own: DIR holds a
                sparse image file DIR/FS.img (made with mkfs.FS once, sized for the tree,
                never on tmpfs), loop-mounted at M, and the tree is M/tree; later runs
                reuse the mounted image, or mount it again. Unmount with umount M
  --mount M     where the image is mounted (default /mnt/dfdu-FS-<name of DIR>)

A marker DIR.gentree.json records the arguments; a rerun with the same arguments reuses
the tree at once; other arguments are refused without --force.";

/// Default `--entries`.
pub const DEFAULT_ENTRIES: u64 = 1_000_000;
/// Default `--depth` of a chain.
const DEFAULT_DEPTH: u64 = 1000;

struct GenArgs {
    id: TreeId,
    fs: FsArgs,
    threads: usize,
    force: bool,
    dry_run: bool,
    dir: PathBuf,
}

pub fn main(args: Vec<OsString>) -> Result<(), String> {
    let mut args = parse(args)?;
    if args.dry_run {
        let started = Instant::now();
        let tree = plan::plan(args.id.shape, args.id.counts(), args.id.sizes, args.id.seed);
        print_summary(&args.dir, &tree, started.elapsed().as_secs_f64());
        say!("  (dry run: planned only, nothing created)");
        return Ok(());
    }
    if let Some(fs) = args.fs.fs {
        args.dir = image::prepare(fs, &args.dir, args.fs.mount.take(), &args.id, false)?;
    }
    let marker_path = marker_path(&args.dir);
    if reuse_or_clear(&args, &marker_path)? {
        return Ok(());
    }
    if let Some(parent) = args.dir.parent().filter(|p| !p.as_os_str().is_empty()) {
        fs::create_dir_all(parent).map_err(|e| format!("mkdir -p {}: {e}", parent.display()))?;
    }
    let started = Instant::now();
    let counts = args.id.counts();
    let tree = plan::plan(args.id.shape, counts, args.id.sizes, args.id.seed);
    let plan_s = started.elapsed().as_secs_f64();
    write_marker(&marker_path, &args, &tree, None)?;
    eprintln!("xtask gen: planned {} entries in {plan_s:.1} s; creating {}", counts.entries(), args.dir.display());
    let phases = match args.id.shape {
        Shape::Chain => make::make_chain(&args.dir, &tree)?,
        _ => make::make(&args.dir, &tree, args.threads)?,
    };
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
        if args.id.shape == Shape::Chain { 1 } else { args.threads },
        phases.links_s
    );
    say!("  marker         {}", marker_path.display());
    Ok(())
}

fn parse(args: Vec<OsString>) -> Result<GenArgs, String> {
    let mut args = Args::new(args);
    let (mut entries, mut wide, mut depth, mut seed) = (None, None, None, 1u64);
    let (mut shape, mut sizes, mut force, mut dry_run) = (None, Sizes::Mixed, false, false);
    let mut threads = cli::available_cores() * 2;
    let mut dir: Option<PathBuf> = None;
    let mut fs = FsArgs::new();
    while let Some(arg) = args.next()? {
        match arg {
            Arg::Opt(name) if fs.take(&name, &mut args)? => {}
            Arg::Opt(name) => match name.as_str() {
                "--entries" => entries = Some(args.value_u64(&name)?),
                "--wide" => wide = Some(args.value_u64(&name)?),
                "--depth" => depth = Some(args.value_u64(&name)?),
                "--seed" => seed = args.value_u64(&name)?,
                "--threads" => threads = args.value_u64(&name)?.clamp(1, 256) as usize,
                "--shape" => shape = Some(Shape::parse(&args.value(&name)?.to_string_lossy())?),
                "--sizes" => sizes = Sizes::parse(&args.value(&name)?.to_string_lossy())?,
                "--dry-run" => {
                    args.no_value(&name)?;
                    dry_run = true;
                }
                "--force" => {
                    args.no_value(&name)?;
                    force = true;
                }
                _ => return Err(format!("unknown option '{name}' (see cargo xtask gen --help)")),
            },
            Arg::Pos(path) if dir.is_none() => dir = Some(PathBuf::from(path)),
            Arg::Pos(path) => return Err(format!("a second DIR '{}': give one DIR", path.to_string_lossy())),
        }
    }
    let dir = dir.ok_or_else(|| "DIR is missing (see cargo xtask gen --help)".to_string())?;
    let id = tree_id(entries, wide, shape, depth, sizes, seed)?;
    let dir = strip_trailing_slashes(dir);
    fs.check()?;
    Ok(GenArgs { id, fs, threads, force, dry_run, dir })
}

/// Checks the size options against each other and the limits, in words a user can act on.
pub fn tree_id(
    entries: Option<u64>,
    wide: Option<u64>,
    shape: Option<Shape>,
    depth: Option<u64>,
    sizes: Sizes,
    seed: u64,
) -> Result<TreeId, String> {
    let max = cli::group(plan::MAX_ENTRIES);
    let shape = match (shape, wide) {
        (None | Some(Shape::Wide), Some(_)) => Shape::Wide,
        (Some(other), Some(_)) => {
            return Err(format!("--wide makes a wide tree; it cannot go with --shape {}", other.name()))
        }
        (shape, None) => shape.unwrap_or(Shape::Tree),
    };
    if depth.is_some() && shape != Shape::Chain {
        return Err("--depth is for --shape chain only".to_string());
    }
    let entries = match (wide, entries) {
        (Some(_), Some(_)) => return Err("give --wide N or --entries N, not both".to_string()),
        (Some(files), None) => files.saturating_add(1),
        (None, entries) => entries.unwrap_or(DEFAULT_ENTRIES),
    };
    if entries > plan::MAX_ENTRIES {
        return Err(format!("{} entries is too many: the plan is held in memory; at most {max}", cli::group(entries)));
    }
    let depth = match shape {
        Shape::Chain => depth.unwrap_or(DEFAULT_DEPTH),
        _ => 0,
    };
    let least = match shape {
        Shape::Tree => plan::MIN_ENTRIES,
        Shape::Wide => 2,
        Shape::Chain => depth.max(1) + 1,
    };
    if entries < least {
        let why = match shape {
            Shape::Tree => format!(
                "a tree needs at least {least} entries to hold its mix of directories, files, hard links \
                 and symlinks (for fewer, use --shape wide or --shape chain)"
            ),
            Shape::Wide => "a wide tree needs at least one file (--wide 1)".to_string(),
            Shape::Chain => format!("a chain of depth {depth} needs at least {least} entries (its directories)"),
        };
        return Err(format!("--entries {entries} is too few: {why}"));
    }
    Ok(TreeId { plan_format: PLAN_FORMAT, entries, shape, depth, sizes, seed })
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
                    "{} exists and has no marker {}: it was not made by this generator; \
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
        say!("xtask gen: reusing {} (same arguments as its marker)", args.dir.display());
        print_marker_summary(&args.dir, &marker);
        return Ok(true);
    }
    if old_id != Some(args.id) && !args.force {
        return Err(format!(
            "{} was generated with other arguments ({}); pass --force to delete and regenerate",
            args.dir.display(),
            json::string(&marker, "command").unwrap_or_else(|| "unreadable marker".to_string())
        ));
    }
    if dir_exists {
        eprintln!("xtask gen: removing {}", args.dir.display());
        remove_tree(&args.dir)?;
    }
    Ok(false)
}

/// The tree's identity from a marker. Markers from before shapes and sizes existed have
/// only `wide` (0 for a tree); they read as the shapes they made.
fn marker_id(marker: &str) -> Option<TreeId> {
    let wide = json::u64(marker, "wide")?;
    let shape = match json::string(marker, "shape") {
        Some(name) => Shape::parse(&name).ok()?,
        None if wide > 0 => Shape::Wide,
        None => Shape::Tree,
    };
    let sizes = match json::string(marker, "sizes") {
        Some(name) => Sizes::parse(&name).ok()?,
        None => Sizes::Mixed,
    };
    Some(TreeId {
        plan_format: json::u64(marker, "plan_format")?,
        entries: json::u64(marker, "entries")?,
        shape,
        depth: json::u64(marker, "depth").unwrap_or(0),
        sizes,
        seed: json::u64(marker, "seed")?,
    })
}

/// Deletes a generated tree. std's `remove_dir_all` holds a descriptor per level, so a
/// chain deeper than the descriptor limit falls back to `rm -rf` (GNU rm has no such limit).
fn remove_tree(dir: &Path) -> Result<(), String> {
    let Err(error) = fs::remove_dir_all(dir) else {
        return Ok(());
    };
    let removed = Command::new("rm")
        .args(["-rf", "--one-file-system", "--"])
        .arg(dir)
        .stdin(Stdio::null())
        .status()
        .is_ok_and(|status| status.success());
    match removed && dir.symlink_metadata().is_err() {
        true => Ok(()),
        false => Err(format!("rm -r {}: {error}", dir.display())),
    }
}

/// The command line that makes this tree, as recorded in the marker.
fn command_line(args: &GenArgs) -> String {
    format!("cargo xtask gen {} {}", args.id.options(), args.dir.display())
}

/// Writes the marker: `elapsed_s` None means "generating", Some means complete.
fn write_marker(path: &Path, args: &GenArgs, tree: &Plan, elapsed_s: Option<f64>) -> Result<(), String> {
    let counts = tree.counts;
    let fields: Vec<(&str, String)> = vec![
        ("generator", json::quote("cargo xtask gen")),
        ("plan_format", args.id.plan_format.to_string()),
        ("entries", args.id.entries.to_string()),
        ("wide", if args.id.shape == Shape::Wide { args.id.entries - 1 } else { 0 }.to_string()),
        ("shape", json::quote(args.id.shape.name())),
        ("depth", args.id.depth.to_string()),
        ("sizes", json::quote(args.id.sizes.name())),
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
    say!("xtask gen: {}", dir.display());
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
