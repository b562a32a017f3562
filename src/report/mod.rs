//! `dfdu scan`: one scan (or an imported ncdu/gdu/dfdu export) into the arena, then a
//! report — totals, counts, the largest directories and files — as text or as a
//! versioned JSON document, and optionally an ncdu-compatible export.

use crate::meta::{os_bytes, Kind, Measure, Meta};
use crate::out::{self, io_text};
use crate::text::quote::{json_str, quoteaf};
use crate::text::units::{format_size, Scale};
use crate::tree::arena::{self, Arena};
use crate::tree::path::{child_paths, dir_path};
use crate::tree::roots::{import_file, stat_root, WalkArgs};
use crate::tree::sharing::Share;
use crate::tree::sink::{problem_lines, ArenaSink};
use crate::tree::top::Top;
use crate::walk::extents::Sharing;
use crate::walk::opts::{Cli, SizeOpts, SizeSet};
use crate::walk::reader::Reader;
use crate::walk::scan::{self, Walk};
use std::collections::HashSet;
use std::ffi::{CString, OsString};
use std::io::{self, IsTerminal, Write};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// Version of the `--json` report layout; bump on any incompatible change.
pub const REPORT_VERSION: u32 = 1;

/// `dfdu scan` options.
pub struct ScanArgs {
    pub prog: String,
    /// `-b`, `-h`, `--si`, `-k`, `-m`, `-B`, `--apparent-size`, `--json`, `--top`.
    pub sizes: SizeOpts,
    pub walk: WalkArgs,
    pub output: Option<OsString>,
    /// `-O`: the export is ncdu's binary format, not JSON.
    pub binary: bool,
    pub treemap: Option<OsString>,
    /// `--treemap-size=WxH`: the picture's coordinates (it scales to any window).
    pub treemap_size: crate::tree::treemap::Canvas,
    /// Read extent maps where the file system can share extents (`--shared`,
    /// `--no-shared`; the default is `Sharing::in_scan`'s).
    pub shared: Sharing,
    /// Rank the largest directories by exclusive bytes.
    pub by_exclusive: bool,
    pub quiet: bool,
    pub dirs: Vec<OsString>,
}

const HELP: &str = "\
Usage: dfdu scan [OPTION]... [DIR]...
       dfdu scan -f FILE [OPTION]...
Scan each DIR (default: the current directory) and report its disk usage and
apparent size, counts of entries, and its largest directories and files.

  -b, --bytes           print exact byte counts instead of 1K/1M/1G units
  -h, --human-readable  units of 1024 (the default)
      --si              units of 1000
  -k, -m                sizes in units of 1024 or 1024*1024 bytes, rounded up
  -B, --block-size=SIZE sizes in units of SIZE, as du reads it ('-BM': 2M)
      --apparent-size   rank and total by apparent size instead of disk usage
  -x, --one-file-system do not enter other file systems
      --exclude=PATTERN skip entries matching PATTERN (shell glob, as du)
  -X, --exclude-from=FILE  skip entries matching any pattern in FILE
      --exclude-caches  skip directories holding a valid CACHEDIR.TAG
      --exclude-kernfs  skip mounts of kernel file systems (proc, sysfs, ...)
  -L, --dereference     follow symbolic links
  -j, --threads=N       scan with N threads, 1 to 1024 (also DFDU_THREADS=N);
                        default on Linux: four per usable CPU, 4 to 32
      --top=N           list the N largest directories and files (default 10)
      --by-exclusive    rank the largest directories by exclusive bytes (in
                        extents not shared; implies --shared)
      --json            print the report as JSON (format version 1)
      --shared          on btrfs, XFS, bcachefs, OCFS2, APFS: read each file's
                        extent map (APFS: clone attributes) and report total,
                        exclusive and set-shared bytes, the disk usage with
                        shared extents counted once and what deleting frees (3
                        more system calls per file on Linux: 2.6-4.2x the scan's
                        time; as root on XFS with a reverse map (rmapbt) one
                        listing, on btrfs tree searches: 1.7-3x; see
                        docs/shared-extents.md)
      --no-shared       do not read extent maps (the default)
  -o FILE               also write an ncdu-compatible JSON export (- for stdout,
                        instead of the report; not with --json)
  -O FILE               the same in ncdu 2.6's binary format (stored zstd
                        frames: no compression; ncdu -O writes compressed ones)
      --treemap=FILE    also draw the tree as an SVG treemap in FILE (sized by
                        disk usage, or by apparent size with --apparent-size;
                        a title with the root and its total, directory headers,
                        coloured by top-level directory with a legend; hover
                        shows path and size; scales to the window)
      --treemap-size=WxH  the treemap's proportions in pixels (default
                        1200x800; 300 to 20000 each)
  -f FILE               report on an export (ncdu 1.x/2.x, gdu, dfdu; JSON, JSON
                        compressed with zstd, ncdu 2's binary format) instead of
                        scanning; - reads standard input
  -q, --quiet           no progress line on a terminal
      --ignore-config   do not read the config files (~/.config/dfdu/config,
                        /etc/dfdu/config: default options, one per line)
      --help            show this help
      --version         show the version

'entries' counts everything the scan met, the roots included, and is the sum
of the parts after it: directories, files, symlinks, other, excluded entries
(matched --exclude; not entered), entries that could not be stat'ed and
directory loops (bind mounts of an ancestor; not entered). What
could not be read is named on standard error, as du does, and counted as
'unreadable'.

Exit status: 0 when everything could be read, 1 when something could not
(the report says how many), 2 for bad usage.
";

/// Parses `dfdu scan` arguments; `Err(code)` to exit right away.
pub fn parse(prog: &str, args: Vec<OsString>) -> Result<ScanArgs, i32> {
    let args = crate::walk::config::with_config(prog, "scan", args);
    use lexopt::Arg::*;
    let mut a = ScanArgs {
        prog: prog.to_string(),
        sizes: SizeOpts::default(),
        walk: WalkArgs::default(),
        output: None,
        binary: false,
        treemap: None,
        treemap_size: Default::default(),
        shared: Sharing::Auto,
        by_exclusive: false,
        quiet: false,
        dirs: Vec::new(),
    };
    let mut cli = Cli::configured(prog, "scan", HELP, args);
    while let Some(opt) = cli.next()? {
        match opt.arg() {
            Long("shared") => a.shared = Sharing::On,
            Long("no-shared") => a.shared = Sharing::Off,
            Long("by-exclusive") => {
                a.by_exclusive = true;
                a.shared = Sharing::On;
            }
            Short('o') | Short('O') | Long("output") => {
                let binary = opt.is('O', "");
                if a.output.is_some() && a.binary != binary {
                    return Err(cli.bad("give one export: -o (JSON) or -O (binary)"));
                }
                (a.output, a.binary) = (Some(cli.value()?), binary);
            }
            Long("treemap") => a.treemap = Some(cli.value()?),
            Long("treemap-size") => {
                let v = cli.value()?;
                match crate::tree::treemap::parse_size(&v.to_string_lossy()) {
                    Some(c) => a.treemap_size = c,
                    None => {
                        return Err(cli.bad(format!(
                            "invalid --treemap-size {} (WIDTHxHEIGHT, 300 to 20000 each)",
                            quoteaf(&os_bytes(&v))
                        )))
                    }
                }
            }
            Short('q') | Long("quiet") => a.quiet = true,
            Value(v) => a.dirs.push(v),
            _ if a.sizes.take(&opt, &mut cli, SizeSet::Report)? => {}
            _ => a.walk.take(&opt, &mut cli)?,
        }
    }
    if a.walk.input.is_some() && !a.dirs.is_empty() {
        return Err(cli.bad("-f reads an export; it takes no directories"));
    }
    if a.sizes.json && a.output.as_deref().is_some_and(|o| o == "-") {
        return Err(cli.bad("--json and -o - both write to standard output; give -o a file name"));
    }
    if a.treemap.is_some() && a.dirs.len() > 1 {
        return Err(cli.bad("a treemap shows one directory; give one DIR with --treemap"));
    }
    if a.output.is_some() && a.dirs.len() > 1 {
        return Err(cli.bad("an export holds one directory; give one DIR with -o"));
    }
    if a.dirs.is_empty() && a.walk.input.is_none() {
        a.dirs.push(".".into());
    }
    Ok(a)
}

/// What the report says about one root.
struct Summary {
    root: u32,
    /// Sharing-aware figures of the root, when the scan or import has them.
    shared: Option<Share>,
    disk: u64,
    apparent: u64,
    entries: u64,
    dirs: u64,
    files: u64,
    symlinks: u64,
    other: u64,
    hardlinked: u64,
    dup_links: u64,
    errors: u64,
    excluded: u64,
    /// Directories that are their own ancestors (bind mount loops), not entered.
    loops: u64,
    /// Entries that could not be stat'ed (part of `entries` and of `errors`).
    unstatable: u64,
    /// (size, entry, its directory), largest first.
    top_dirs: Vec<(u64, u32, u32)>,
    top_files: Vec<(u64, u32, u32)>,
}

/// Counts and ranks everything under root directory `root`.
fn summarize(a: &Arena, root: u32, top: usize, apparent: bool, by_exclusive: bool) -> Summary {
    let (disk, app, _) = a.dir_totals(root);
    let figures = a.shared_figures();
    let exclusive = |dir: u32| figures.as_ref().filter(|_| by_exclusive).and_then(|f| f.get(dir)).map(|s| s.exclusive);
    let mut s = Summary {
        root,
        shared: figures.as_ref().and_then(|f| f.get(root)),
        disk,
        apparent: app,
        entries: 1,
        dirs: 1,
        files: 0,
        symlinks: 0,
        other: 0,
        hardlinked: 0,
        dup_links: 0,
        errors: u64::from(a.dir_flags(root).read_error()),
        excluded: 0,
        loops: 0,
        unstatable: 0,
        top_dirs: Vec::new(),
        top_files: Vec::new(),
    };
    let pick = |t: (u64, u64)| if apparent { t.1 } else { t.0 };
    let (mut top_dirs, mut top_files) = (Top::new(top), Top::new(top));
    let mut stack = vec![root];
    while let Some(dir) = stack.pop() {
        let kids = a.children(dir).unwrap_or(0..0);
        let (first, dir_ino) = (kids.start, a.dir_ino(dir));
        let tie = |id: u32| std::cmp::Reverse((dir_ino, id - first));
        for id in kids {
            s.entries += 1;
            let flags = a.flags(id);
            if flags.is_loop() {
                s.loops += 1;
                continue;
            }
            if flags.contains(arena::F_EXCLUDED) {
                s.excluded += 1;
                continue;
            }
            if flags.contains(arena::F_ERROR) {
                s.errors += 1;
                s.unstatable += 1;
                continue;
            }
            match flags.kind() {
                Kind::Dir => {
                    s.dirs += 1;
                    let sub = a.dir_of(id);
                    if a.dir_flags(sub).read_error() {
                        s.errors += 1;
                    }
                    let (d, ap, _) = a.dir_totals(sub);
                    top_dirs.push((exclusive(sub).unwrap_or_else(|| pick((d, ap))), tie(id), id, dir));
                    stack.push(sub);
                }
                Kind::Symlink => s.symlinks += 1,
                Kind::Other => s.other += 1,
                _ => {
                    s.files += 1;
                    if flags.contains(arena::F_HARDLINK) {
                        s.hardlinked += 1;
                    }
                    if flags.contains(arena::F_DUP_LINK) {
                        s.dup_links += 1;
                    } else {
                        top_files.push((pick(a.own_sizes(id)), tie(id), id, dir));
                    }
                }
            }
        }
    }
    let rows = |t: Top<Ranked>| t.sorted().into_iter().map(|(size, _, id, dir)| (size, id, dir)).collect();
    s.top_dirs = rows(top_dirs);
    s.top_files = rows(top_files);
    s
}

/// A row of a largest list while it is ranked: the size, the tie-breaker (the containing
/// directory's inode number and the entry's place in its listing, smaller first: entry
/// ids depend on which worker reserved first, so ties ranked by them moved between
/// runs), the entry and its directory.
type Ranked = (u64, std::cmp::Reverse<(u64, u32)>, u32, u32);

/// A size as the report shows it; a saturated total reads "Infinity", as in du.
fn size_text(n: u64, args: &ScanArgs) -> String {
    if n == u64::MAX {
        "Infinity".to_string()
    } else {
        args.sizes.size_text(n)
    }
}

fn print_text(out: &mut dyn Write, a: &Arena, s: &Summary, args: &ScanArgs) -> io::Result<()> {
    // Names are shown as the browser shows them (`term::escape`): control characters,
    // bytes that are not UTF-8 and line separators escaped, everything else as it is.
    let shown = crate::term::escape;
    writeln!(out, "{}", shown(&a.dir_name(s.root)))?;
    writeln!(out, "  disk usage     {:>12}", size_text(s.disk, args))?;
    writeln!(out, "  apparent size  {:>12}", size_text(s.apparent, args))?;
    // The parts add up to `entries`. An ncdu export does not say which non-regular
    // entries are symlinks.
    let mut parts = vec![counted(s.dirs, "directory", "directories"), counted(s.files, "file", "files")];
    if s.symlinks == 0 && s.other > 0 {
        parts.push(format!("{} non-regular", s.other));
    } else {
        parts.push(counted(s.symlinks, "symlink", "symlinks"));
        parts.push(format!("{} other", s.other));
    }
    if s.excluded > 0 {
        parts.push(format!("{} excluded", s.excluded));
    }
    if s.unstatable > 0 {
        parts.push(format!("{} not stat'ed", s.unstatable));
    }
    if s.loops > 0 {
        parts.push(counted(s.loops, "loop", "loops"));
    }
    writeln!(out, "  entries        {:>12}  ({})", s.entries, parts.join(", "))?;
    writeln!(
        out,
        "  hard links     {:>12}  files with several names ({} further names counted once)",
        s.hardlinked, s.dup_links
    )?;
    writeln!(out, "  unreadable     {:>12}", s.errors)?;
    if let Some(sh) = s.shared {
        writeln!(out, "  extents total  {:>12}  data extents referenced by its files", size_text(sh.total, args))?;
        writeln!(out, "  exclusive      {:>12}  in extents not shared", size_text(sh.exclusive, args))?;
        writeln!(out, "  set shared     {:>12}  shared extents, each byte once", size_text(sh.set_shared, args))?;
        writeln!(out, "  disk once      {:>12}  disk usage with sharing counted once", size_text(sh.disk_once, args))?;
        if sh.frees_exact {
            writeln!(out, "  frees          {:>12}  freed by deleting it", size_text(sh.frees, args))?;
        } else {
            let most = size_text(sh.frees_most(), args);
            writeln!(
                out,
                "  frees          {:>12}  at least (at most {most}): reference counts not known",
                size_text(sh.frees, args)
            )?;
        }
    }
    if s.excluded > 0 {
        writeln!(out, "  excluded       {:>12}", s.excluded)?;
    }
    if s.loops > 0 {
        writeln!(
            out,
            "  loops          {:>12}  directories that are their own ancestors (bind mounts), not entered",
            s.loops
        )?;
    }
    let what = if args.sizes.apparent { "apparent size" } else { "disk usage" };
    for (title, list) in [("directories", &s.top_dirs), ("files", &s.top_files)] {
        if list.is_empty() {
            continue;
        }
        let what = if title == "directories" && args.by_exclusive && s.shared.is_some() { "exclusive" } else { what };
        writeln!(out, "  largest {title} ({what}):")?;
        let paths = child_paths(a, &list.iter().map(|&(_, id, dir)| (dir, id)).collect::<Vec<_>>());
        for (&(size, _, _), path) in list.iter().zip(&paths) {
            writeln!(out, "    {:>12}  {}", size_text(size, args), shown(path))?;
        }
    }
    Ok(())
}

fn json_report(a: &Arena, sums: &[Summary], elapsed: Duration, source: &str, args: &ScanArgs) -> String {
    let mut o = format!("{{\"format\":\"dfdu-scan-report\",\"version\":{REPORT_VERSION},\"source\":");
    json_str(&mut o, source.as_bytes());
    o.push_str(&format!(
        ",\"elapsed_seconds\":{:.3},\"measure\":\"{}\",\"roots\":[",
        elapsed.as_secs_f64(),
        if args.sizes.apparent { "apparent" } else { "disk" }
    ));
    for (i, s) in sums.iter().enumerate() {
        if i > 0 {
            o.push(',');
        }
        o.push_str("{\"path\":");
        json_str(&mut o, &a.dir_name(s.root));
        o.push_str(&format!(
            ",\"disk_bytes\":{},\"apparent_bytes\":{},\"entries\":{},\"dirs\":{},\"files\":{},\"symlinks\":{},\"other\":{},\"nonregular\":{},\"hardlinked_files\":{},\"duplicate_link_names\":{},\"errors\":{},\"excluded\":{},\"loops\":{},\"unstatable\":{}",
            s.disk,
            s.apparent,
            s.entries,
            s.dirs,
            s.files,
            s.symlinks,
            s.other,
            s.symlinks + s.other,
            s.hardlinked, s.dup_links, s.errors, s.excluded, s.loops, s.unstatable
        ));
        if let Some(sh) = s.shared {
            o.push_str(&format!(
                ",\"shared\":{{\"total_bytes\":{},\"exclusive_bytes\":{},\"set_shared_bytes\":{},\"disk_bytes_once\":{},\"frees_bytes\":{},\"frees_most_bytes\":{},\"frees_exact\":{}}}",
                sh.total, sh.exclusive, sh.set_shared, sh.disk_once, sh.frees, sh.frees_most(), sh.frees_exact
            ));
        }
        for (key, list) in [("largest_dirs", &s.top_dirs), ("largest_files", &s.top_files)] {
            o.push_str(&format!(",\"{key}\":["));
            let paths = child_paths(a, &list.iter().map(|&(_, id, dir)| (dir, id)).collect::<Vec<_>>());
            for (k, &(_, id, _)) in list.iter().enumerate() {
                if k > 0 {
                    o.push(',');
                }
                let (d, ap) = if key == "largest_dirs" {
                    let t = a.dir_totals(a.dir_of(id));
                    (t.0, t.1)
                } else {
                    a.own_sizes(id)
                };
                o.push_str("{\"path\":");
                json_str(&mut o, &paths[k]);
                o.push_str(&format!(",\"disk_bytes\":{d},\"apparent_bytes\":{ap}"));
                if key == "largest_dirs" {
                    if let Some(sh) = a.shared_figures().and_then(|f| f.get(a.dir_of(id))) {
                        o.push_str(&format!(",\"exclusive_bytes\":{}", sh.exclusive));
                    }
                }
                o.push('}');
            }
            o.push(']');
        }
        o.push('}');
    }
    o.push_str("]}\n");
    o
}

/// Draws "entries, bytes, rate, current directory" on stderr about ten times a second.
fn progress(a: &Arena, sink: &ArenaSink, root: u32, start: Instant, stop: &AtomicBool) {
    let width: usize = std::env::var("COLUMNS").ok().and_then(|c| c.parse().ok()).unwrap_or(80).max(20);
    let mut err = io::stderr();
    while !stop.load(Ordering::Relaxed) {
        std::thread::sleep(Duration::from_millis(100));
        let n = a.entry_count();
        let (disk, _, _) = a.dir_totals(root);
        let secs = start.elapsed().as_secs_f64().max(0.001);
        let dir = sink.last_dir.load(Ordering::Relaxed);
        let line = progress_line(n, disk, secs, crate::term::escape(&dir_path(a, dir)), width);
        let _ = write!(err, "\r\x1b[K{line}");
        let _ = err.flush();
    }
    let _ = write!(err, "\r\x1b[K");
}

/// "N entries, SIZE, RATE/s PATH" for a terminal `width` columns wide: a path too long for
/// the rest of the line loses its start (shown as "...").
fn progress_line(n: u32, disk: u64, secs: f64, path: String, width: usize) -> String {
    let head = format!("{n} entries, {}, {:.0}/s ", format_size(disk, Scale::human(true)), f64::from(n) / secs);
    let room = width.saturating_sub(head.chars().count() + 1);
    let tail: String = if path.chars().count() > room {
        let skip = path.chars().count() - room.saturating_sub(3);
        format!("...{}", path.chars().skip(skip).collect::<String>())
    } else {
        path
    };
    head + &tail
}

/// Runs `dfdu scan`; returns the exit status.
pub fn run<R: Reader>(args: &ScanArgs, threads: usize, fd_budget: usize) -> i32 {
    run_to::<R>(args, threads, fd_budget, &mut io::stdout().lock())
}

/// What was loaded into the arena: the roots to report on, what they came from
/// ("scan", "import of a gdu export"), and how many roots could not be loaded.
struct Loaded {
    roots: Vec<u32>,
    source: String,
    failed: u64,
}

/// `run` with standard output given: the report, or the export with `-o -`, goes to
/// `stdout`. Its steps: load (import or scan each root), summarize, write the files
/// asked for (`-o`, `--treemap`), write the report, and count what could not be read.
fn run_to<R: Reader>(args: &ScanArgs, threads: usize, fd_budget: usize, stdout: &mut dyn Write) -> i32 {
    let cmd = format!("{} scan", args.prog);
    let arena = Arena::new();
    let start = Instant::now();
    let Ok(mut loaded) = load::<R>(args, &arena, (threads, fd_budget), start) else {
        return 1;
    };
    let elapsed = start.elapsed();
    if let Some(full) = arena.full() {
        eprintln!("{cmd}: the tree is too large for one scan ({full:?}); the report is incomplete");
        loaded.failed += 1;
    }
    let (top, apparent) = (args.sizes.top, args.sizes.apparent);
    let sums: Vec<Summary> =
        loaded.roots.iter().map(|&r| summarize(&arena, r, top, apparent, args.by_exclusive)).collect();
    if let Err(status) = write_files(args, &arena, &loaded.roots, stdout) {
        return status;
    }
    // Nothing was scanned (every root was missing): the messages said it all.
    let to_stdout = args.output.as_deref().is_some_and(|o| o == "-");
    if !to_stdout && !loaded.roots.is_empty() {
        let written = write_report(stdout, &arena, &sums, elapsed, &loaded.source, args);
        if let Err(status) = out::finish(&cmd, written.and_then(|()| stdout.flush())) {
            return status;
        }
    }
    let errors: u64 = sums.iter().map(|s| s.errors).sum::<u64>() + loaded.failed;
    if errors > 0 {
        eprintln!("{cmd}: {} could not be read", counted(errors, "entry", "entries"));
        return 1;
    }
    0
}

/// Imports `-f`'s export, or scans each DIR into `arena` with (threads, handle budget)
/// `pool`, naming on standard error what could not be read. `Err` when the export could
/// not be imported (said already): there is nothing to report.
fn load<R: Reader>(args: &ScanArgs, arena: &Arena, pool: (usize, usize), start: Instant) -> Result<Loaded, ()> {
    let mut loaded = Loaded { roots: Vec::new(), source: "scan".to_string(), failed: 0 };
    if let Some(f) = &args.walk.input {
        match import_file(f, arena) {
            Ok(imported) => {
                loaded.roots.push(imported.root);
                loaded.source = format!("import of a {} export", imported.progname);
            }
            Err(e) => {
                eprintln!("{} scan: {e}", args.prog);
                return Err(());
            }
        }
    }
    let sink = ArenaSink::new(arena).collecting_problems();
    for dir in &args.dirs {
        let path = os_bytes(dir);
        let Ok(cpath) = CString::new(path.clone()) else { continue };
        let meta = match stat_root(&cpath, R::stat_path) {
            Ok(m) => m,
            Err(e) => {
                eprintln!("{} scan: {e}", args.prog);
                loaded.failed += 1;
                continue;
            }
        };
        let Ok(root) = sink.add_root(&path, &meta) else { break };
        scan_root::<R>(args, arena, &sink, pool, (&cpath, &meta, root), start);
        let mut err = io::stderr().lock();
        for line in problem_lines(arena, &format!("{} scan", args.prog), sink.take_problems()) {
            let _ = writeln!(err, "{line}");
        }
        loaded.roots.push(root);
    }
    if args.shared != Sharing::Off {
        sink.finish_shared(pool.0);
    }
    Ok(loaded)
}

/// Scans one root (its path, stat and arena id) into `sink`, with the progress line on
/// a terminal unless `-q`.
fn scan_root<R: Reader>(
    args: &ScanArgs,
    arena: &Arena,
    sink: &ArenaSink,
    (threads, fd_budget): (usize, usize),
    (cpath, meta, root): (&CString, &Meta, u32),
    start: Instant,
) {
    let empty = HashSet::new();
    let walk = Walk {
        shared: args.shared.in_scan(),
        ..args.walk.walk(threads, fd_budget, args.walk.one_fs.then_some(meta.dev), &empty)
    };
    let stop = AtomicBool::new(false);
    let show = !args.quiet && io::stderr().is_terminal();
    std::thread::scope(|s| {
        if show {
            // Without a thread for it (a low RLIMIT_AS), the scan runs without progress.
            let _ = std::thread::Builder::new().spawn_scoped(s, || progress(arena, sink, root, start, &stop));
        }
        scan::scan_as::<R, ArenaSink>(&walk, sink, cpath, meta, root);
        stop.store(true, Ordering::Relaxed);
    });
}

/// Writes the export (`-o`, or `-O` binary; to `stdout` for FILE `-`) and the treemap
/// (`--treemap`) of the first root; `Err` holds the exit status once a failure was said.
fn write_files(args: &ScanArgs, arena: &Arena, roots: &[u32], stdout: &mut dyn Write) -> Result<(), i32> {
    let Some(&root) = roots.first() else { return Ok(()) };
    let cmd = format!("{} scan", args.prog);
    let cannot_write = |file: &OsString, why: String| {
        eprintln!("{cmd}: cannot write {}: {why}", quoteaf(&os_bytes(file)));
        1
    };
    if let Some(file) = &args.output {
        let ts = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs());
        let export = |w: &mut dyn Write| {
            if args.binary {
                crate::tree::ncdu::export_binary(arena, root, w)
            } else {
                crate::tree::ncdu::export(arena, root, ts, w)
            }
        };
        if file == "-" {
            out::finish(&cmd, export(stdout).and_then(|()| stdout.flush()))?;
        } else {
            write_replacing(file, export).map_err(|why| cannot_write(file, why))?;
        }
    }
    if let Some(file) = &args.treemap {
        let m = if args.sizes.apparent { Measure::Apparent } else { Measure::Disk };
        let svg = |w: &mut dyn Write| crate::tree::treemap::write_svg(arena, root, m, args.treemap_size, w);
        write_replacing(file, svg).map_err(|why| cannot_write(file, why))?;
    }
    Ok(())
}

/// Writes `file` with `write` as a new file renamed over what the name was (see
/// `walk::trust::replace`: a symlink or another user's file there is replaced, never
/// written through); `Err` says why not.
fn write_replacing(file: &OsString, write: impl FnOnce(&mut dyn Write) -> io::Result<()>) -> Result<(), String> {
    let mut new = crate::walk::trust::replace(std::path::Path::new(file))?;
    let mut w = io::BufWriter::new(&mut new.file);
    write(&mut w).and_then(|()| w.flush()).map_err(|e| io_text(&e))?;
    drop(w);
    new.commit()
}

/// The report on `sums` into `out`: one JSON document, or each root's text and a last
/// line with the time taken.
fn write_report(
    out: &mut dyn Write,
    arena: &Arena,
    sums: &[Summary],
    elapsed: Duration,
    source: &str,
    args: &ScanArgs,
) -> io::Result<()> {
    if args.sizes.json {
        return out.write_all(json_report(arena, sums, elapsed, source, args).as_bytes());
    }
    for s in sums {
        print_text(out, arena, s, args)?;
    }
    let n: u64 = sums.iter().map(|s| s.entries).sum();
    writeln!(
        out,
        "{} in {:.2} s ({:.0} entries/s)",
        crate::term::escape(source.as_bytes()),
        elapsed.as_secs_f64(),
        n as f64 / elapsed.as_secs_f64().max(1e-6)
    )
}

/// "1 entry", "2 entries": a count and its noun.
pub fn counted(n: u64, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

#[cfg(test)]
mod tests;
