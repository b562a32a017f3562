//! `dfdu diff OLD NEW`: what changed between two trees. Each side is an export (ncdu
//! JSON from dfdu, ncdu or gdu; `-` reads standard input) or a directory scanned now;
//! both land in one arena, `tree::compare` matches them by path, and this file reports the
//! totals, the directories that grew and shrank most, the entries added and removed,
//! and with `--files` the files that grew and shrank most.

use crate::meta::{os_bytes, Kind, Measure};
use crate::out;
use crate::text::quote::{json_str, quoteaf};
use crate::text::units::{parse_with_suffix, THRESHOLD_SUFFIXES};
use crate::tree::arena::{self, Arena};
use crate::tree::compare::{self, Event};
use crate::tree::roots::{load_side, ScanFn, Side};
use crate::tree::sink::{problem_lines, ArenaSink};
use crate::tree::top::Top;
use crate::walk::opts::{Cli, SizeOpts, SizeSet, WalkOpts};
use crate::walk::reader::Reader;
use crate::walk::scan;
use std::ffi::OsString;
use std::io::{self, Write};

/// Version of the `--json` diff layout; bump on any incompatible change.
pub const DIFF_VERSION: u32 = 1;

/// `dfdu diff` options.
pub struct DiffArgs {
    pub prog: String,
    /// `-b`, `-h`, `--si`, `-k`, `-m`, `-B`, `--apparent-size`, `--json`, `--top`.
    pub sizes: SizeOpts,
    pub walk: WalkOpts,
    pub min_change: u64,
    /// `--files`: also list the files that grew and shrank most.
    pub files: bool,
    pub old: OsString,
    pub new: OsString,
}

const HELP: &str = "\
Usage: dfdu diff [OPTION]... OLD NEW
Compare two trees and report what changed. OLD and NEW are each an export
(ncdu JSON from dfdu, ncdu or gdu; - reads standard input) or a directory,
which is scanned now.

Entries are matched by their path below each root. The report gives both
totals and the change; the directories that grew most, then those that shrank
most; and the entries added and removed (a whole directory once, not its
contents). A directory is listed only when no single subdirectory explains
more than half of its change: a file added three levels down lists the
directory that holds it, not each ancestor again. With --files, the files
(every entry that is not a directory) that grew and shrank most follow, by
path: a new file counts as grown from nothing, a removed one as shrunk to
nothing, also inside a directory added or removed as a whole.

  -b, --bytes           print exact byte counts instead of 1K/1M/1G units
  -h, --human-readable  units of 1024 (the default)
      --si              units of 1000
  -k, -m                sizes in units of 1024 or 1024*1024 bytes, rounded up
  -B, --block-size=SIZE sizes in units of SIZE, as du reads it ('-BM': 2M)
      --apparent-size   compare apparent sizes instead of disk usage
      --top=N           list at most N directories that grew, N that shrank,
                        N entries added and N removed (default 10)
      --min-change=SIZE leave out changes, additions and removals smaller than
                        SIZE bytes (suffixes K, M, G, ...: powers of 1024;
                        default 1)
      --files           also list the N files that grew and the N that shrank
                        most (new and removed files included)
  -x, --one-file-system do not enter other file systems (directories scanned)
      --exclude=PATTERN skip entries matching PATTERN (shell glob, as du)
  -X, --exclude-from=FILE  skip entries matching any pattern in FILE
      --exclude-caches  skip directories holding a valid CACHEDIR.TAG
      --exclude-kernfs  skip mounts of kernel file systems (proc, sysfs, ...)
  -L, --dereference     follow symbolic links
  -j, --threads=N       scan with N threads
      --json            print the report as JSON (format version 1)
      --help            show this help
      --version         show the version

Exit status: 0 when both sides could be read completely, 1 when a side could
not be imported or something in a scanned tree could not be read, 2 for bad
usage.
";

/// Parses `dfdu diff` arguments; `Err(code)` to exit right away.
pub fn parse(prog: &str, args: Vec<OsString>) -> Result<DiffArgs, i32> {
    use lexopt::Arg::*;
    let mut a = DiffArgs {
        prog: prog.to_string(),
        sizes: SizeOpts::default(),
        walk: WalkOpts::default(),
        min_change: 1,
        files: false,
        old: OsString::new(),
        new: OsString::new(),
    };
    let mut sides = Vec::new();
    let mut cli = Cli::new(prog, "diff", HELP, args);
    while let Some(opt) = cli.next()? {
        match opt.arg() {
            Long("files") => a.files = true,
            Long("min-change") => {
                let v = cli.value()?;
                match parse_with_suffix(&os_bytes(&v), THRESHOLD_SUFFIXES) {
                    Ok(n) => a.min_change = n,
                    Err(_) => return Err(cli.bad(format!("invalid --min-change value {}", quoteaf(&os_bytes(&v))))),
                }
            }
            Value(v) => sides.push(v),
            _ if a.sizes.take(&opt, &mut cli, SizeSet::Report)? => {}
            _ if opt.is('f', "file") => return Err(cli.bad("-f: give the exports as OLD and NEW")),
            _ => a.walk.take(&opt, &mut cli)?,
        }
    }
    if sides.len() != 2 {
        return Err(cli.bad(format!("expected OLD and NEW, got {} operand(s)", sides.len())));
    }
    if sides[0] == "-" && sides[1] == "-" {
        return Err(cli.bad("only one side can be standard input"));
    }
    a.new = sides.pop().unwrap_or_default();
    a.old = sides.pop().unwrap_or_default();
    Ok(a)
}

/// Unreadable entries below `root` (listing or stat failures).
fn errors_below(a: &Arena, root: u32) -> u64 {
    let mut n = u64::from(a.dir_flags(root).read_error());
    if !a.dir_flags(root).error_below() {
        return n;
    }
    let mut stack = vec![root];
    while let Some(d) = stack.pop() {
        for id in a.children(d).unwrap_or(0..0) {
            let f = a.flags(id);
            if f.contains(arena::F_ERROR) {
                n += 1;
            } else if f.is_dir() {
                let sub = a.dir_of(id);
                n += u64::from(a.dir_flags(sub).read_error());
                if a.dir_flags(sub).error_below() {
                    stack.push(sub);
                }
            }
        }
    }
    n
}

/// A listed directory: (|change|, new dir, old dir, old size, new size).
type DirRow = (u64, u32, u32, u64, u64);
/// An added or removed entry: (size, its directory, entry).
type EntryRow = (u64, u32, u32);
/// A file that changed: (|change|, (directory, entry) on the new side, the same on the
/// old side, old size, new size); a side is `None` when the file is not on it.
type FileRow = (u64, Option<(u32, u32)>, Option<(u32, u32)>, u64, u64);

/// What the report shows.
struct Report {
    grown: Vec<DirRow>,
    shrunk: Vec<DirRow>,
    added: Vec<EntryRow>,
    removed: Vec<EntryRow>,
    n_grown: u64,
    n_shrunk: u64,
    n_added: u64,
    n_removed: u64,
    /// With `--files`: the files that grew (or came), those that shrank (or went).
    files_grown: Vec<FileRow>,
    files_shrunk: Vec<FileRow>,
    n_files_grown: u64,
    n_files_shrunk: u64,
}

fn compare(a: &Arena, old: u32, new: u32, args: &DiffArgs) -> Report {
    let m = if args.sizes.apparent { Measure::Apparent } else { Measure::Disk };
    let top = args.sizes.top;
    let (mut grown, mut shrunk) = (Top::new(top), Top::new(top));
    let (mut added, mut removed) = (Top::new(top), Top::new(top));
    let n_files = if args.files { top } else { 0 };
    let (mut files_grown, mut files_shrunk) = (Top::new(n_files), Top::new(n_files));
    let min = args.min_change;
    let mut file = |old: Option<(u32, u32)>, new: Option<(u32, u32)>, old_size: u64, new_size: u64| {
        if new_size >= old_size.saturating_add(min) {
            files_grown.push((new_size - old_size, new, old, old_size, new_size));
        } else if old_size >= new_size.saturating_add(min) {
            files_shrunk.push((old_size - new_size, new, old, old_size, new_size));
        }
    };
    compare::walk(a, old, new, m, &mut |e| match e {
        Event::Dirs { old_dir, new_dir, old_size, new_size, listed: true } => {
            if new_size >= old_size.saturating_add(min) {
                grown.push((new_size - old_size, new_dir, old_dir, old_size, new_size));
            } else if old_size >= new_size.saturating_add(min) {
                shrunk.push((old_size - new_size, new_dir, old_dir, old_size, new_size));
            }
        }
        Event::Dirs { .. } => {}
        Event::Added { dir, id, size } => {
            if size >= min {
                added.push((size, dir, id));
            }
            if args.files {
                compare::files_of(a, dir, id, m, &mut |d, f, size| file(None, Some((d, f)), 0, size));
            }
        }
        Event::Removed { dir, id, size } => {
            if size >= min {
                removed.push((size, dir, id));
            }
            if args.files {
                compare::files_of(a, dir, id, m, &mut |d, f, size| file(Some((d, f)), None, size, 0));
            }
        }
        Event::Files { old, new, old_size, new_size } => file(Some(old), Some(new), old_size, new_size),
    });
    Report {
        n_files_grown: if args.files { files_grown.count } else { 0 },
        n_files_shrunk: if args.files { files_shrunk.count } else { 0 },
        files_grown: files_grown.sorted(),
        files_shrunk: files_shrunk.sorted(),
        n_grown: grown.count,
        n_shrunk: shrunk.count,
        n_added: added.count,
        n_removed: removed.count,
        grown: grown.sorted(),
        shrunk: shrunk.sorted(),
        added: added.sorted(),
        removed: removed.sorted(),
    }
}

fn size_text(n: u64, args: &DiffArgs) -> String {
    args.sizes.size_text(n)
}

fn signed_text(old: u64, new: u64, args: &DiffArgs) -> String {
    if new >= old {
        format!("+{}", size_text(new - old, args))
    } else {
        format!("-{}", size_text(old - new, args))
    }
}

fn kind_word(a: &Arena, id: u32) -> &'static str {
    match a.kind(id) {
        Kind::Dir => "dir",
        Kind::Symlink => "symlink",
        Kind::Other => "other",
        _ => "file",
    }
}

fn shown(b: &[u8]) -> String {
    String::from_utf8_lossy(b).escape_debug().to_string()
}

fn print_text(out: &mut dyn Write, a: &Arena, sides: [&Side; 2], r: &Report, args: &DiffArgs) -> io::Result<()> {
    let m = if args.sizes.apparent { Measure::Apparent } else { Measure::Disk };
    let what = if args.sizes.apparent { "apparent size" } else { "disk usage" };
    let (o, n) = (compare::dir_size(a, sides[0].root, m), compare::dir_size(a, sides[1].root, m));
    writeln!(out, "old  {:>12}  {} ({})", size_text(o, args), shown(&a.dir_name(sides[0].root)), sides[0].source)?;
    writeln!(out, "new  {:>12}  {} ({})", size_text(n, args), shown(&a.dir_name(sides[1].root)), sides[1].source)?;
    writeln!(out, "change {:>10}  ({what})", signed_text(o, n, args))?;
    for (title, rows, count) in [("grew", &r.grown, r.n_grown), ("shrank", &r.shrunk, r.n_shrunk)] {
        if rows.is_empty() {
            continue;
        }
        writeln!(out, "directories that {title} ({count} listed by the rule in --help):")?;
        for &(_, nd, _, os, ns) in rows.iter() {
            let from_to = format!("{} -> {}", size_text(os, args), size_text(ns, args));
            writeln!(
                out,
                "  {:>12}  {}  ({from_to})",
                signed_text(os, ns, args),
                shown(&compare::rel_dir_path(a, nd))
            )?;
        }
    }
    for (title, sign, rows, count) in [("added", '+', &r.added, r.n_added), ("removed", '-', &r.removed, r.n_removed)] {
        if rows.is_empty() {
            continue;
        }
        writeln!(out, "{title} ({count} {}):", if count == 1 { "entry" } else { "entries" })?;
        for &(size, dir, id) in rows.iter() {
            let path = compare::rel_child_path(a, dir, id);
            let slash = if a.kind(id) == Kind::Dir { "/" } else { "" };
            let signed = format!("{sign}{}", size_text(size, args));
            writeln!(out, "  {signed:>12}  {}{slash}", shown(&path))?;
        }
    }
    if args.files {
        print_files(out, a, r, args)?;
    }
    Ok(())
}

/// The path of a changed file, from the side that has it (the new one if both do).
fn file_path(a: &Arena, row: &FileRow) -> (Vec<u8>, u32) {
    let (dir, id) = row.1.or(row.2).unwrap_or((0, 0));
    (compare::rel_child_path(a, dir, id), id)
}

/// `--files`: the files that grew, then those that shrank, each with its sizes.
fn print_files(out: &mut dyn Write, a: &Arena, r: &Report, args: &DiffArgs) -> io::Result<()> {
    for (title, rows, count) in
        [("grew", &r.files_grown, r.n_files_grown), ("shrank", &r.files_shrunk, r.n_files_shrunk)]
    {
        if rows.is_empty() {
            continue;
        }
        writeln!(out, "files that {title} ({count}):")?;
        for row in rows.iter() {
            let &(_, new, old, os, ns) = row;
            let sizes = match (old, new) {
                (None, _) => "new".to_string(),
                (_, None) => "removed".to_string(),
                _ => format!("{} -> {}", size_text(os, args), size_text(ns, args)),
            };
            let (path, _) = file_path(a, row);
            writeln!(out, "  {:>12}  {}  ({sizes})", signed_text(os, ns, args), shown(&path))?;
        }
    }
    Ok(())
}

fn json_report(a: &Arena, sides: [&Side; 2], r: &Report, args: &DiffArgs) -> String {
    let m = if args.sizes.apparent { Measure::Apparent } else { Measure::Disk };
    let mut o = format!(
        "{{\"format\":\"dfdu-diff-report\",\"version\":{DIFF_VERSION},\"measure\":\"{}\",\"min_change_bytes\":{}",
        if args.sizes.apparent { "apparent" } else { "disk" },
        args.min_change
    );
    let mut sizes = [0u64; 2];
    for (k, side) in sides.iter().enumerate() {
        let (disk, app, items) = a.dir_totals(side.root);
        sizes[k] = compare::dir_size(a, side.root, m);
        o.push_str(if k == 0 { ",\"old\":{\"path\":" } else { ",\"new\":{\"path\":" });
        json_str(&mut o, &a.dir_name(side.root));
        o.push_str(",\"source\":");
        json_str(&mut o, side.source.as_bytes());
        o.push_str(&format!(",\"disk_bytes\":{disk},\"apparent_bytes\":{app},\"entries\":{}}}", items + 1));
    }
    o.push_str(&format!(",\"change_bytes\":{}", sizes[1] as i128 - sizes[0] as i128));
    for (key, rows, count) in [("grew", &r.grown, r.n_grown), ("shrank", &r.shrunk, r.n_shrunk)] {
        o.push_str(&format!(",\"{key}_count\":{count},\"{key}\":["));
        for (k, &(_, nd, _, os, ns)) in rows.iter().enumerate() {
            o.push_str(if k > 0 { ",{\"path\":" } else { "{\"path\":" });
            json_str(&mut o, &compare::rel_dir_path(a, nd));
            o.push_str(&format!(
                ",\"old_bytes\":{os},\"new_bytes\":{ns},\"change_bytes\":{}}}",
                ns as i128 - os as i128
            ));
        }
        o.push(']');
    }
    for (key, rows, count) in [("added", &r.added, r.n_added), ("removed", &r.removed, r.n_removed)] {
        o.push_str(&format!(",\"{key}_count\":{count},\"{key}\":["));
        for (k, &(size, dir, id)) in rows.iter().enumerate() {
            o.push_str(if k > 0 { ",{\"path\":" } else { "{\"path\":" });
            json_str(&mut o, &compare::rel_child_path(a, dir, id));
            o.push_str(&format!(",\"kind\":\"{}\",\"bytes\":{size}}}", kind_word(a, id)));
        }
        o.push(']');
    }
    if args.files {
        json_files(&mut o, a, r);
    }
    o.push_str("}\n");
    o
}

/// `--files` in the JSON report: `files_grew` and `files_shrank`, a missing side's size
/// `null`.
fn json_files(o: &mut String, a: &Arena, r: &Report) {
    let side = |v: Option<(u32, u32)>, size: u64| if v.is_some() { size.to_string() } else { "null".to_string() };
    for (key, rows, count) in
        [("files_grew", &r.files_grown, r.n_files_grown), ("files_shrank", &r.files_shrunk, r.n_files_shrunk)]
    {
        o.push_str(&format!(",\"{key}_count\":{count},\"{key}\":["));
        for (k, row) in rows.iter().enumerate() {
            let &(_, new, old, os, ns) = row;
            let (path, id) = file_path(a, row);
            o.push_str(if k > 0 { ",{\"path\":" } else { "{\"path\":" });
            json_str(o, &path);
            o.push_str(&format!(
                ",\"kind\":\"{}\",\"old_bytes\":{},\"new_bytes\":{},\"change_bytes\":{}}}",
                kind_word(a, id),
                side(old, os),
                side(new, ns),
                ns as i128 - os as i128
            ));
        }
        o.push(']');
    }
}

/// Runs `dfdu diff`; returns the exit status.
pub fn run<R: Reader>(args: &DiffArgs, threads: usize, fd_budget: usize) -> i32 {
    let cmd = format!("{} diff", args.prog);
    let arena = Arena::new();
    let mut sides = Vec::new();
    for what in [&args.old, &args.new] {
        let scan: ScanFn = |w, sink, root, meta, token| scan::scan_as::<R, ArenaSink>(w, sink, root, meta, token);
        match load_side(what, &arena, &args.walk, (threads, fd_budget), R::stat_path, scan) {
            Ok(mut s) => {
                // Named as `dfdu scan` names them, each side's once it is loaded.
                for line in problem_lines(&arena, &cmd, std::mem::take(&mut s.problems)) {
                    eprintln!("{line}");
                }
                sides.push(s);
            }
            Err(e) => {
                eprintln!("{cmd}: {e}");
                return 1;
            }
        }
    }
    if let Some(full) = arena.full() {
        eprintln!("{cmd}: the trees are too large for one arena ({full:?})");
        return 1;
    }
    let (old, new) = (&sides[0], &sides[1]);
    let r = compare(&arena, old.root, new.root, args);
    let stdout = io::stdout();
    let mut out = stdout.lock();
    let written = if args.sizes.json {
        out.write_all(json_report(&arena, [old, new], &r, args).as_bytes())
    } else {
        print_text(&mut out, &arena, [old, new], &r, args)
    };
    if let Err(code) = out::finish(&cmd, written.and_then(|_| out.flush())) {
        return code;
    }
    let errors = errors_below(&arena, old.root) + errors_below(&arena, new.root);
    if errors > 0 {
        let entries = if errors == 1 { "entry" } else { "entries" };
        eprintln!("{cmd}: {errors} {entries} could not be read");
        return 1;
    }
    0
}
