//! `dfdu scan`: one scan (or an imported ncdu/gdu/dfdu export) into the arena, then a
//! report — totals, counts, the largest directories and files — as text or as a
//! versioned JSON document, and optionally an ncdu-compatible export.

use crate::meta::os_bytes;
use crate::text::quote::{json_str, quotef};
use crate::text::units::{format_size, Scale};
use crate::tree::arena::{self, Arena};
use crate::tree::diff::Measure;
use crate::tree::path::{child_path, dir_path};
use crate::tree::roots::{import_file, stat_root, OptName, WalkArgs};
use crate::tree::sink::ArenaSink;
use crate::walk::reader::Reader;
use crate::walk::scan::{self};
use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashSet};
use std::ffi::{CString, OsString};
use std::io::{self, IsTerminal, Write};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// Version of the `--json` report layout; bump on any incompatible change.
pub const REPORT_VERSION: u32 = 1;

/// `dfdu scan` options.
pub struct ScanArgs {
    pub prog: String,
    pub bytes: bool,
    pub si: bool,
    pub apparent: bool,
    pub walk: WalkArgs,
    pub json: bool,
    pub output: Option<OsString>,
    pub treemap: Option<OsString>,
    pub top: usize,
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
      --apparent-size   rank and total by apparent size instead of disk usage
  -x, --one-file-system do not enter other file systems
      --exclude=PATTERN skip entries matching PATTERN (shell glob, as du)
  -X, --exclude-from=FILE  skip entries matching any pattern in FILE
  -L, --dereference     follow symbolic links
  -j, --threads=N       scan with N threads
      --top=N           list the N largest directories and files (default 10)
      --json            print the report as JSON (format version 1)
  -o FILE               also write an ncdu-compatible JSON export (- for stdout)
      --treemap=FILE    also draw the tree as an SVG treemap in FILE (sized by
                        disk usage, or by apparent size with --apparent-size;
                        coloured by top-level directory; hover shows path and size)
  -f FILE               report on an export (ncdu 1.x/2.x, gdu, dfdu) instead of
                        scanning; - reads standard input
  -q, --quiet           no progress line on a terminal
      --help            show this help

Exit status: 0 when everything could be read, 1 when something could not
(the report says how many), 2 for bad usage.
";

/// Parses `dfdu scan` arguments; `Err(code)` to exit right away.
pub fn parse(prog: &str, args: Vec<OsString>) -> Result<ScanArgs, i32> {
    use lexopt::Arg::*;
    let mut a = ScanArgs {
        prog: prog.to_string(),
        bytes: false,
        si: false,
        apparent: false,
        walk: WalkArgs::default(),
        json: false,
        output: None,
        treemap: None,
        top: 10,
        quiet: false,
        dirs: Vec::new(),
    };
    let mut p = lexopt::Parser::from_args(args);
    let bad = |msg: String| -> i32 {
        eprintln!("{prog} scan: {msg}\nTry '{prog} scan --help' for more information.");
        2
    };
    loop {
        let arg = match p.next() {
            Ok(Some(arg)) => arg,
            Ok(None) => break,
            Err(e) => return Err(bad(e.to_string())),
        };
        let value = |p: &mut lexopt::Parser| p.value().map_err(|e| bad(e.to_string()));
        match arg {
            Short('b') | Long("bytes") => a.bytes = true,
            Short('h') | Long("human-readable") => a.si = false,
            Long("si") => a.si = true,
            Long("apparent-size") => a.apparent = true,
            Long("top") => {
                let v = value(&mut p)?;
                match v.to_str().and_then(|s| s.parse().ok()) {
                    Some(n) if n <= 100_000 => a.top = n,
                    _ => return Err(bad(format!("invalid --top value '{}'", v.to_string_lossy()))),
                }
            }
            Long("json") => a.json = true,
            Short('o') | Long("output") => a.output = Some(value(&mut p)?),
            Long("treemap") => a.treemap = Some(value(&mut p)?),
            Short('q') | Long("quiet") => a.quiet = true,
            Long("help") => {
                print!("{HELP}");
                return Err(0);
            }
            Value(v) => a.dirs.push(v),
            other => {
                let name = OptName::of(&other);
                a.walk.take(name, &mut p, &bad)?
            }
        }
    }
    if a.walk.input.is_some() && !a.dirs.is_empty() {
        return Err(bad("-f reads an export; it takes no directories".into()));
    }
    if a.treemap.is_some() && a.dirs.len() > 1 {
        return Err(bad("a treemap shows one directory; give one DIR with --treemap".into()));
    }
    if a.output.is_some() && a.dirs.len() > 1 {
        return Err(bad("an export holds one directory; give one DIR with -o".into()));
    }
    if a.dirs.is_empty() && a.walk.input.is_none() {
        a.dirs.push(".".into());
    }
    Ok(a)
}

/// What the report says about one root.
struct Summary {
    root: u32,
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
    /// (size, entry, its directory), largest first.
    top_dirs: Vec<(u64, u32, u32)>,
    top_files: Vec<(u64, u32, u32)>,
}

/// Counts and ranks everything under root directory `root`.
fn summarize(a: &Arena, root: u32, top: usize, apparent: bool) -> Summary {
    let (disk, app, _) = a.dir_totals(root);
    let mut s = Summary {
        root,
        disk,
        apparent: app,
        entries: 1,
        dirs: 1,
        files: 0,
        symlinks: 0,
        other: 0,
        hardlinked: 0,
        dup_links: 0,
        errors: u64::from(a.dir_flags(root) & arena::D_READ_ERROR != 0),
        excluded: 0,
        loops: 0,
        top_dirs: Vec::new(),
        top_files: Vec::new(),
    };
    let pick = |t: (u64, u64)| if apparent { t.1 } else { t.0 };
    let mut dirs_heap: BinaryHeap<Reverse<(u64, u32, u32)>> = BinaryHeap::new();
    let mut files_heap: BinaryHeap<Reverse<(u64, u32, u32)>> = BinaryHeap::new();
    let push = |h: &mut BinaryHeap<Reverse<(u64, u32, u32)>>, v: (u64, u32, u32)| {
        if top == 0 || (h.len() == top && h.peek().is_some_and(|Reverse(min)| v <= *min)) {
            return;
        }
        h.push(Reverse(v));
        if h.len() > top {
            h.pop();
        }
    };
    let mut stack = vec![root];
    while let Some(dir) = stack.pop() {
        for id in a.children(dir).unwrap_or(0..0) {
            s.entries += 1;
            let flags = a.flags(id);
            if arena::is_loop(flags) {
                s.loops += 1;
                continue;
            }
            if flags & arena::F_EXCLUDED != 0 {
                s.excluded += 1;
                continue;
            }
            if flags & arena::F_ERROR != 0 {
                s.errors += 1;
                continue;
            }
            match flags & 3 {
                arena::KIND_DIR => {
                    s.dirs += 1;
                    let sub = a.dir_of(id);
                    if a.dir_flags(sub) & arena::D_READ_ERROR != 0 {
                        s.errors += 1;
                    }
                    let (d, ap, _) = a.dir_totals(sub);
                    push(&mut dirs_heap, (pick((d, ap)), id, dir));
                    stack.push(sub);
                }
                arena::KIND_SYMLINK => s.symlinks += 1,
                arena::KIND_OTHER => s.other += 1,
                _ => {
                    s.files += 1;
                    if flags & arena::F_HARDLINK != 0 {
                        s.hardlinked += 1;
                    }
                    if flags & arena::F_DUP_LINK != 0 {
                        s.dup_links += 1;
                    } else {
                        push(&mut files_heap, (pick(a.own_sizes(id)), id, dir));
                    }
                }
            }
        }
    }
    s.top_dirs = dirs_heap.into_sorted_vec().into_iter().map(|Reverse(v)| v).collect();
    s.top_files = files_heap.into_sorted_vec().into_iter().map(|Reverse(v)| v).collect();
    s
}

fn size_text(n: u64, args: &ScanArgs) -> String {
    if args.bytes {
        n.to_string()
    } else {
        format_size(n, Scale::human(!args.si))
    }
}

fn print_text(out: &mut dyn Write, a: &Arena, s: &Summary, args: &ScanArgs) -> io::Result<()> {
    let shown = |b: &[u8]| String::from_utf8_lossy(b).escape_debug().to_string();
    writeln!(out, "{}", shown(&a.dir_name(s.root)))?;
    writeln!(out, "  disk usage     {:>12}", size_text(s.disk, args))?;
    writeln!(out, "  apparent size  {:>12}", size_text(s.apparent, args))?;
    // An ncdu export does not say which non-regular entries are symlinks.
    let special = if s.symlinks == 0 && s.other > 0 {
        format!("{} non-regular", s.other)
    } else {
        format!("{} symlinks, {} other", s.symlinks, s.other)
    };
    writeln!(out, "  entries        {:>12}  ({} directories, {} files, {special})", s.entries, s.dirs, s.files)?;
    writeln!(
        out,
        "  hard links     {:>12}  files with several names ({} further names counted once)",
        s.hardlinked, s.dup_links
    )?;
    writeln!(out, "  unreadable     {:>12}", s.errors)?;
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
    let what = if args.apparent { "apparent size" } else { "disk usage" };
    for (title, list) in [("directories", &s.top_dirs), ("files", &s.top_files)] {
        if list.is_empty() {
            continue;
        }
        writeln!(out, "  largest {title} ({what}):")?;
        for &(size, id, dir) in list.iter() {
            writeln!(out, "    {:>12}  {}", size_text(size, args), shown(&child_path(a, dir, id)))?;
        }
    }
    Ok(())
}

fn json_report(a: &Arena, sums: &[Summary], elapsed: Duration, source: &str, args: &ScanArgs) -> String {
    let mut o = format!(
        "{{\"format\":\"dfdu-scan-report\",\"version\":{REPORT_VERSION},\"source\":\"{source}\",\"elapsed_seconds\":{:.3},\"measure\":\"{}\",\"roots\":[",
        elapsed.as_secs_f64(),
        if args.apparent { "apparent" } else { "disk" }
    );
    for (i, s) in sums.iter().enumerate() {
        if i > 0 {
            o.push(',');
        }
        o.push_str("{\"path\":");
        json_str(&mut o, &a.dir_name(s.root));
        o.push_str(&format!(
            ",\"disk_bytes\":{},\"apparent_bytes\":{},\"entries\":{},\"dirs\":{},\"files\":{},\"symlinks\":{},\"other\":{},\"nonregular\":{},\"hardlinked_files\":{},\"duplicate_link_names\":{},\"errors\":{},\"excluded\":{},\"loops\":{}",
            s.disk,
            s.apparent,
            s.entries,
            s.dirs,
            s.files,
            s.symlinks,
            s.other,
            s.symlinks + s.other,
            s.hardlinked, s.dup_links, s.errors, s.excluded, s.loops
        ));
        for (key, list) in [("largest_dirs", &s.top_dirs), ("largest_files", &s.top_files)] {
            o.push_str(&format!(",\"{key}\":["));
            for (k, &(_, id, dir)) in list.iter().enumerate() {
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
                json_str(&mut o, &child_path(a, dir, id));
                o.push_str(&format!(",\"disk_bytes\":{d},\"apparent_bytes\":{ap}}}"));
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
        let path = String::from_utf8_lossy(&dir_path(a, dir)).escape_debug().to_string();
        let head = format!("{n} entries, {}, {:.0}/s ", format_size(disk, Scale::human(true)), n as f64 / secs);
        let room = width.saturating_sub(head.chars().count() + 1);
        let tail: String = if path.chars().count() > room {
            let skip = path.chars().count() - room.saturating_sub(3);
            format!("...{}", path.chars().skip(skip).collect::<String>())
        } else {
            path
        };
        let _ = write!(err, "\r\x1b[K{head}{tail}");
        let _ = err.flush();
    }
    let _ = write!(err, "\r\x1b[K");
}

/// Runs `dfdu scan`; returns the exit status.
pub fn run<R: Reader>(args: &ScanArgs, threads: usize, fd_budget: usize) -> i32 {
    let arena = Arena::new();
    let start = Instant::now();
    let mut roots = Vec::new();
    let mut failed = 0u64;
    let mut source = if args.walk.input.is_some() { "import".to_string() } else { "scan".to_string() };
    if let Some(f) = &args.walk.input {
        match import_file(f, &arena) {
            Ok(imported) => {
                roots.push(imported.root);
                source = format!("import of a {} export", imported.progname.escape_debug());
            }
            Err(e) => {
                eprintln!("{} scan: {e}", args.prog);
                return 1;
            }
        }
    }
    let sink = ArenaSink::new(&arena);
    for dir in &args.dirs {
        let path = os_bytes(dir);
        let Ok(cpath) = CString::new(path.clone()) else { continue };
        let meta = match stat_root(&cpath, R::stat_path) {
            Ok(m) => m,
            Err(e) => {
                eprintln!("{} scan: {e}", args.prog);
                failed += 1;
                continue;
            }
        };
        let root = match sink.add_root(&path, &meta) {
            Ok(r) => r,
            Err(_) => break,
        };
        let empty = HashSet::new();
        let walk = args.walk.walk(threads, fd_budget, args.walk.one_fs.then_some(meta.dev), &empty);
        let stop = AtomicBool::new(false);
        let show = !args.quiet && io::stderr().is_terminal();
        std::thread::scope(|s| {
            if show {
                s.spawn(|| progress(&arena, &sink, root, start, &stop));
            }
            scan::scan_as::<R, ArenaSink>(&walk, &sink, &cpath, &meta, root);
            stop.store(true, Ordering::Relaxed);
        });
        roots.push(root);
    }
    let elapsed = start.elapsed();
    if let Some(full) = arena.full() {
        eprintln!("{} scan: the tree is too large for one scan ({full:?}); the report is incomplete", args.prog);
        failed += 1;
    }
    let sums: Vec<Summary> = roots.iter().map(|&r| summarize(&arena, r, args.top, args.apparent)).collect();
    let to_stdout = args.output.as_deref().is_some_and(|o| o == "-");
    if let Some(out) = &args.output {
        if let Some(&root) = roots.first() {
            let ts = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs());
            let written = if to_stdout {
                crate::tree::ncdu::export(&arena, root, ts, &mut io::stdout().lock())
            } else {
                std::fs::File::create(out)
                    .and_then(|f| crate::tree::ncdu::export(&arena, root, ts, &mut io::BufWriter::new(f)))
            };
            if let Err(e) = written {
                eprintln!("{} scan: cannot write {}: {e}", args.prog, quotef(&os_bytes(out)));
                return 1;
            }
        }
    }
    if let (Some(file), Some(&root)) = (&args.treemap, roots.first()) {
        let m = if args.apparent { Measure::Apparent } else { Measure::Disk };
        let written = std::fs::File::create(file)
            .and_then(|f| crate::tree::treemap::write_svg(&arena, root, m, &mut io::BufWriter::new(f)));
        if let Err(e) = written {
            eprintln!("{} scan: cannot write {}: {e}", args.prog, quotef(&os_bytes(file)));
            return 1;
        }
    }
    if !to_stdout {
        let stdout = io::stdout();
        let mut out = stdout.lock();
        let written = if args.json {
            out.write_all(json_report(&arena, &sums, elapsed, &source, args).as_bytes())
        } else {
            let mut r = Ok(());
            for s in &sums {
                r = r.and_then(|_| print_text(&mut out, &arena, s, args));
            }
            let n: u64 = sums.iter().map(|s| s.entries).sum();
            r.and_then(|_| {
                writeln!(
                    out,
                    "{} in {:.2} s ({:.0} entries/s)",
                    source,
                    elapsed.as_secs_f64(),
                    n as f64 / elapsed.as_secs_f64().max(1e-6)
                )
            })
        };
        if written.is_err() {
            return 1;
        }
    }
    let errors: u64 = sums.iter().map(|s| s.errors).sum::<u64>() + failed;
    if errors > 0 {
        eprintln!("{}: {errors} entries could not be read", args.prog);
        return 1;
    }
    0
}
