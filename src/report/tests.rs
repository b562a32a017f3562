//! The `dfdu scan` report without a process: arguments, the summary of an imported tree
//! whose every size and flag is written out below, the text and JSON renderings of it, and
//! `run_to` on a scanned scratch tree (its exit status and what it writes).

use super::*;
use crate::platform::Follow;
use crate::tree::path::child_path;
use crate::walk::extents::Sharing;
use crate::walk::reader::Native;
use std::path::{Path, PathBuf};

fn parse_ok(args: &[&str]) -> ScanArgs {
    match parse("dfdu", args.iter().map(OsString::from).collect()) {
        Ok(a) => a,
        Err(code) => panic!("dfdu scan {args:?} was refused with status {code}"),
    }
}

fn refused(args: &[&str]) -> bool {
    parse("dfdu", args.iter().map(OsString::from).collect()).is_err_and(|code| code == 2)
}

/// An ncdu export: the root (4096 on disk, 100 apparent) holds
/// * `big` 303104 / 300000, `small` 4096 / 10, `link1` 8192 / 5000 (inode 77, two names),
/// * `fifo` (not a regular file, no size), `ex` (excluded), `bad` (could not be stat'ed),
/// * `sub` (4096 / 200, could not be read completely) with `link2` (the other name of 77)
///   and `mid` 12288 / 7000,
/// * `empty` 4096 / 50.
///
/// `sub` and the root carry dfdu's sharing figures; the root what deleting it frees
/// (exact), `sub` not (an export from before that figure).
const TREE: &str = r#"[1,2,{"progname":"test"},
[{"name":"/r","asize":100,"dsize":4096,"dfdu_total_bytes":900,"dfdu_exclusive_bytes":800,"dfdu_set_shared_bytes":70,"dfdu_disk_once_bytes":600,"dfdu_frees_bytes":850},
 {"name":"big","asize":300000,"dsize":303104},
 {"name":"small","asize":10,"dsize":4096},
 {"name":"link1","asize":5000,"dsize":8192,"ino":77,"nlink":2},
 {"name":"fifo","notreg":true},
 {"name":"ex","excluded":"pattern"},
 {"name":"bad","read_error":true},
 [{"name":"sub","asize":200,"dsize":4096,"read_error":true,"dfdu_total_bytes":90,"dfdu_exclusive_bytes":3,"dfdu_set_shared_bytes":7,"dfdu_disk_once_bytes":60},
  {"name":"link2","asize":5000,"dsize":8192,"ino":77,"nlink":2},
  {"name":"mid","asize":7000,"dsize":12288}],
 [{"name":"empty","asize":50,"dsize":4096}]
]]"#;

/// Disk usage: the root, big, small, link1 (once), sub, mid, empty.
const DISK: u64 = 4096 + 303104 + 4096 + 8192 + 4096 + 12288 + 4096;
const APPARENT: u64 = 100 + 300000 + 10 + 5000 + 200 + 7000 + 50;

fn imported() -> (Arena, u32) {
    let arena = Arena::new();
    let root = crate::tree::ncdu::import(TREE.as_bytes(), &arena).expect("the test export imports").root;
    (arena, root)
}

/// (size, name) of a ranking.
fn ranked(a: &Arena, list: &[(u64, u32, u32)]) -> Vec<(u64, String)> {
    list.iter().map(|&(size, id, dir)| (size, String::from_utf8_lossy(&child_path(a, dir, id)).into_owned())).collect()
}

#[test]
fn parse_checks_what_goes_together() {
    let a = parse_ok(&[]);
    assert_eq!(a.dirs, [OsString::from(".")], "the current directory by default");
    assert_eq!(a.sizes, SizeOpts::default());
    assert_eq!(
        (a.sizes.top, a.sizes.scale, a.shared, a.by_exclusive, a.quiet),
        (10, Scale::human(true), Sharing::Auto, false, false)
    );
    assert!(!a.shared.in_scan() && parse_ok(&["--shared"]).shared.in_scan(), "off unless --shared");
    assert_eq!(
        (parse_ok(&["--shared"]).shared, parse_ok(&["--shared", "--no-shared"]).shared),
        (Sharing::On, Sharing::Off)
    );
    let a = parse_ok(&["--si", "--json", "--top=3", "-q", "--by-exclusive", "--apparent-size", "d1", "d2"]);
    assert_eq!(
        (a.sizes.top, a.sizes.si(), a.sizes.json, a.sizes.apparent, a.shared, a.by_exclusive, a.quiet),
        (3, true, true, true, Sharing::On, true, true)
    );
    assert_eq!(a.dirs.len(), 2);
    // The last unit given counts, as in du.
    assert!(!parse_ok(&["--si", "-h"]).sizes.si());
    assert_eq!(parse_ok(&["--si", "-b"]).sizes.scale, Scale::plain(1));
    assert_eq!(parse_ok(&["-b", "-k"]).sizes.scale, Scale::plain(1024));
    assert_eq!(parse_ok(&["-m"]).sizes.scale, Scale::plain(1 << 20));
    assert_eq!(parse_ok(&["-B", "4K"]).sizes.scale, Scale::plain(4096));
    assert_eq!(parse_ok(&["--block-size=M"]).sizes.size_text(3 << 20 | 1), "4M");
    assert!(refused(&["-B", "0"]));
    assert!(refused(&["--block-size", "x"]));
    assert_eq!(parse_ok(&["--top", "100000"]).sizes.top, 100_000);
    assert!(refused(&["--top", "100001"]));
    assert!(refused(&["--top", "x"]));
    // -f reads an export instead of scanning: no directories with it, and none added.
    assert!(parse_ok(&["-f", "export.json"]).dirs.is_empty());
    assert!(refused(&["-f", "export.json", "d"]));
    // Standard output holds one document.
    assert!(parse_ok(&["--json"]).sizes.json);
    assert!(parse_ok(&["-o", "-"]).output.is_some());
    assert!(parse_ok(&["--json", "-o", "out.json"]).sizes.json);
    assert!(refused(&["--json", "-o", "-"]));
    // A treemap and an export hold one directory.
    for opt in ["--treemap", "-o"] {
        assert!(parse_ok(&[opt, "file", "d"]).dirs.len() == 1, "{opt} with one directory");
        assert!(parse_ok(&[opt, "file"]).dirs.len() == 1, "{opt} with the default directory");
        assert!(parse_ok(&[opt, "file", "-f", "export.json"]).dirs.is_empty(), "{opt} of an import");
        assert!(refused(&[opt, "file", "d1", "d2"]), "{opt} with two directories");
        assert!(refused(&[opt, "file", "d1", "d2", "d3"]), "{opt} with three directories");
    }
}

#[test]
fn summary_counts_every_kind_of_entry_and_ranks_the_largest() {
    let (a, root) = imported();
    let s = summarize(&a, root, 10, false, false);
    assert_eq!((s.disk, s.apparent), (DISK, APPARENT));
    // The root and its 8 entries, and the 2 in `sub`.
    assert_eq!(s.entries, 11);
    assert_eq!((s.dirs, s.files, s.symlinks, s.other), (3, 5, 0, 1));
    assert_eq!((s.excluded, s.unstatable, s.loops), (1, 1, 0));
    assert_eq!(s.errors, 2, "`bad` could not be stat'ed and `sub` could not be read");
    assert_eq!((s.hardlinked, s.dup_links), (2, 1), "two names of inode 77, the second counted once");
    assert_eq!(s.shared.map(|f| (f.total, f.exclusive, f.set_shared, f.disk_once)), Some((900, 800, 70, 600)));
    // The second name of inode 77 is not ranked among files; a directory's size counts
    // each inode below it once (ncdu's rule), so `sub` has `link2` although the root
    // counts inode 77 only once.
    assert_eq!(ranked(&a, &s.top_dirs), [(4096 + 8192 + 12288, "/r/sub".to_string()), (4096, "/r/empty".to_string())]);
    // Inode 77 once, under whichever name the arena counts (the import closes `sub` first).
    let mut files = ranked(&a, &s.top_files);
    assert!(["/r/link1", "/r/sub/link2"].contains(&files[2].1.as_str()), "{files:?}");
    files[2].1 = "inode 77".into();
    assert_eq!(
        files,
        [(303104, "/r/big".into()), (12288, "/r/sub/mid".into()), (8192, "inode 77".into()), (4096, "/r/small".into())]
    );
}

#[test]
fn summary_ranks_by_the_measure_asked_and_keeps_only_the_top() {
    let (a, root) = imported();
    let s = summarize(&a, root, 2, true, false);
    assert_eq!(ranked(&a, &s.top_dirs), [(200 + 5000 + 7000, "/r/sub".to_string()), (50, "/r/empty".to_string())]);
    assert_eq!(ranked(&a, &s.top_files), [(300000, "/r/big".to_string()), (7000, "/r/sub/mid".to_string())]);
    let s = summarize(&a, root, 1, false, false);
    assert_eq!(ranked(&a, &s.top_files), [(303104, "/r/big".to_string())]);
    assert_eq!(ranked(&a, &s.top_dirs), [(4096 + 8192 + 12288, "/r/sub".to_string())]);
    let s = summarize(&a, root, 0, false, false);
    assert!(s.top_dirs.is_empty() && s.top_files.is_empty());
    // By exclusive bytes: `sub` has 3, and `empty` no figures, so its disk usage.
    let s = summarize(&a, root, 10, false, true);
    assert_eq!(ranked(&a, &s.top_dirs), [(4096, "/r/empty".to_string()), (3, "/r/sub".to_string())]);
}

#[test]
fn sizes_read_as_asked() {
    let args = |extra: &[&str]| parse_ok(extra);
    assert_eq!(size_text(303104, &args(&[])), "296K");
    assert_eq!(size_text(1_500_000, &args(&[])), "1.5M");
    assert_eq!(size_text(1_500_000, &args(&["--si"])), "1.5M");
    assert_eq!(size_text(2_000_000, &args(&[])), "2.0M");
    assert_eq!(size_text(2_000_000, &args(&["--si"])), "2.0M");
    assert_eq!(size_text(1_000_000, &args(&[])), "977K");
    assert_eq!(size_text(1_000_000, &args(&["--si"])), "1.0M");
    assert_eq!(size_text(303104, &args(&["-b"])), "303104");
    assert_eq!(size_text(u64::MAX, &args(&[])), "Infinity");
    assert_eq!(size_text(u64::MAX, &args(&["-b"])), "Infinity");
    assert_eq!(size_text(u64::MAX - 1, &args(&["-b"])), (u64::MAX - 1).to_string());
    assert_eq!(
        (counted(1, "entry", "entries"), counted(0, "entry", "entries")),
        ("1 entry".into(), "0 entries".into())
    );
    assert_eq!(counted(2, "loop", "loops"), "2 loops");
}

fn text_of(a: &Arena, s: &Summary, args: &ScanArgs) -> String {
    let mut out = Vec::new();
    print_text(&mut out, a, s, args).unwrap();
    String::from_utf8(out).unwrap()
}

#[test]
fn text_report_of_the_import() {
    let (a, root) = imported();
    let args = parse_ok(&["-b"]);
    let s = summarize(&a, root, 2, false, false);
    let want = format!(
        "/r
  disk usage     {DISK:>12}
  apparent size  {APPARENT:>12}
  entries                  11  (3 directories, 5 files, 1 non-regular, 1 excluded, 1 not stat'ed)
  hard links                2  files with several names (1 further names counted once)
  unreadable                2
  extents total           900  data extents referenced by its files
  exclusive               800  in extents not shared
  set shared               70  shared extents, each byte once
  disk once               600  disk usage with sharing counted once
  frees                   850  freed by deleting it
  excluded                  1
  largest directories (disk usage):
           24576  /r/sub
            4096  /r/empty
  largest files (disk usage):
          303104  /r/big
           12288  /r/sub/mid
"
    );
    assert_eq!(text_of(&a, &s, &args), want);
    // Ranked by exclusive bytes, by apparent size, and with no rankings.
    let s = summarize(&a, root, 1, false, true);
    let text = text_of(&a, &s, &parse_ok(&["-b", "--by-exclusive"]));
    assert!(text.contains("  largest directories (exclusive):\n            4096  /r/empty\n"), "{text}");
    assert!(text.contains("  largest files (disk usage):\n"), "{text}");
    let s = summarize(&a, root, 1, true, false);
    let text = text_of(&a, &s, &parse_ok(&["-b", "--apparent-size"]));
    assert!(text.contains("  largest directories (apparent size):\n           12200  /r/sub\n"), "{text}");
    assert!(text.contains("  largest files (apparent size):\n          300000  /r/big\n"), "{text}");
    let s = summarize(&a, root, 0, false, false);
    assert!(!text_of(&a, &s, &args).contains("largest"));
}

/// The counts line and the optional lines, each shown only when it has something to say.
#[test]
fn text_report_shows_the_optional_parts_only_when_they_count() {
    let (a, root) = imported();
    let args = parse_ok(&["-b"]);
    let base = summarize(&a, root, 0, false, false);
    let entries_line = |s: &Summary| {
        let text = text_of(&a, s, &args);
        text.lines().find(|l| l.starts_with("  entries")).unwrap().split_once("  (").unwrap().1.to_string()
    };
    let with = |f: &dyn Fn(&mut Summary)| {
        let mut s = summarize(&a, root, 0, false, false);
        f(&mut s);
        s
    };
    let plain = with(&|s| {
        s.other = 0;
        s.excluded = 0;
        s.unstatable = 0;
    });
    assert_eq!(entries_line(&plain), "3 directories, 5 files, 0 symlinks, 0 other)");
    let one_link = with(&|s| {
        s.symlinks = 1;
        s.excluded = 0;
        s.unstatable = 0;
    });
    assert_eq!(entries_line(&one_link), "3 directories, 5 files, 1 symlink, 1 other)");
    let one_of_each = with(&|s| {
        s.dirs = 1;
        s.files = 1;
        s.symlinks = 2;
        s.other = 0;
        s.loops = 1;
    });
    assert_eq!(
        entries_line(&one_of_each),
        "1 directory, 1 file, 2 symlinks, 0 other, 1 excluded, 1 not stat'ed, 1 loop)"
    );
    let loops = with(&|s| {
        s.loops = 2;
        s.excluded = 0;
    });
    let text = text_of(&a, &loops, &args);
    assert!(text.contains(", 2 loops)\n"), "{text}");
    assert!(text.contains("\n  loops                     2  directories that are their own ancestors"), "{text}");
    assert!(!text.contains("\n  excluded "), "{text}");
    let text = text_of(&a, &base, &args);
    assert!(!text.contains("\n  loops "), "{text}");
    let no_sharing = with(&|s| s.shared = None);
    let text = text_of(&a, &no_sharing, &args);
    assert!(!text.contains("extents total") && !text.contains("disk once"), "{text}");
    let huge = with(&|s| s.disk = u64::MAX);
    assert!(text_of(&a, &huge, &args).contains("  disk usage         Infinity\n"));
}

#[test]
fn json_report_of_the_import() {
    let (a, root) = imported();
    let s = summarize(&a, root, 2, false, false);
    let args = parse_ok(&["--json"]);
    let json = json_report(&a, &[s], Duration::from_millis(1234), "import of a test export", &args);
    let want = format!(
        concat!(
            r#"{{"format":"dfdu-scan-report","version":1,"source":"import of a test export","elapsed_seconds":1.234,"measure":"disk","roots":["#,
            r#"{{"path":"/r","disk_bytes":{},"apparent_bytes":{},"entries":11,"dirs":3,"files":5,"symlinks":0,"other":1,"nonregular":1,"#,
            r#""hardlinked_files":2,"duplicate_link_names":1,"errors":2,"excluded":1,"loops":0,"unstatable":1,"#,
            r#""shared":{{"total_bytes":900,"exclusive_bytes":800,"set_shared_bytes":70,"disk_bytes_once":600,"frees_bytes":850,"frees_most_bytes":850,"frees_exact":true}},"#,
            r#""largest_dirs":[{{"path":"/r/sub","disk_bytes":24576,"apparent_bytes":12200,"exclusive_bytes":3}},{{"path":"/r/empty","disk_bytes":4096,"apparent_bytes":50}}],"#,
            r#""largest_files":[{{"path":"/r/big","disk_bytes":303104,"apparent_bytes":300000}},{{"path":"/r/sub/mid","disk_bytes":12288,"apparent_bytes":7000}}]}}]}}"#,
            "\n"
        ),
        DISK, APPARENT
    );
    assert_eq!(json, want);
    // Two roots are two objects; the apparent measure is named.
    let (s1, s2) = (summarize(&a, root, 0, true, false), summarize(&a, root, 0, true, false));
    let json = json_report(&a, &[s1, s2], Duration::ZERO, "scan", &parse_ok(&["--apparent-size"]));
    assert!(json.contains(r#""measure":"apparent","roots":[{"path":"/r","#), "{json}");
    assert!(json.contains(r#""largest_files":[]},{"path":"/r","#), "{json}");
    assert!(json.ends_with("\"largest_files\":[]}]}\n"), "{json}");
}

/// A scratch directory, removed at the end.
struct Scratch(PathBuf);

impl Scratch {
    fn new(name: &str) -> Scratch {
        let dir = std::env::temp_dir().join(format!("dfdu-report-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        Scratch(dir)
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn run_scan(args: &[&str]) -> (i32, String) {
    let a = parse_ok(args);
    let mut out = Vec::new();
    let code = run_to::<Native>(&a, 2, 64, &mut out);
    (code, String::from_utf8_lossy(&out).into_owned())
}

/// `run_to` on a scanned tree: the report, the export and the treemap it writes, and its
/// exit status with a root that is missing or not a directory. The sizes come from `stat`
/// of the same files (the reference here), the tree's shape from what was made.
#[test]
fn run_reports_exports_and_exits_as_documented() {
    let scratch = Scratch::new("run");
    let t = scratch.0.join("t");
    std::fs::create_dir_all(t.join("d")).unwrap();
    std::fs::write(t.join("d/f"), vec![7u8; 10_000]).unwrap();
    std::fs::write(t.join("g"), b"x").unwrap();
    std::os::unix::fs::symlink("g", t.join("s")).unwrap();
    let path = |p: &Path| p.to_str().unwrap().to_string();
    let (tp, missing, file) = (path(&t), path(&scratch.0.join("missing")), path(&t.join("g")));
    let (export, treemap) = (path(&scratch.0.join("e.json")), path(&scratch.0.join("t.svg")));

    let (code, text) = run_scan(&["-b", "-q", &tp, "-o", &export, "--treemap", &treemap]);
    assert_eq!(code, 0, "{text}");
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines[0], tp);
    assert!(
        lines[3].starts_with("  entries                   5  (2 directories, 2 files, 1 symlink, 0 other)"),
        "{text}"
    );
    assert!(lines.last().unwrap().starts_with("scan in "), "{text}");
    // The export says the same sizes as stat; the treemap was drawn.
    let arena = Arena::new();
    let back = crate::tree::ncdu::import(std::fs::read(&export).unwrap().as_slice(), &arena).unwrap();
    let (disk, apparent, _) = arena.dir_totals(back.root);
    let stat_sum = |f: &dyn Fn(&std::fs::Metadata) -> u64| -> u64 {
        ["", "d", "d/f", "g", "s"].iter().map(|p| f(&std::fs::symlink_metadata(t.join(p)).unwrap())).sum()
    };
    use std::os::unix::fs::MetadataExt;
    assert_eq!((disk, apparent), (stat_sum(&|m| m.blocks() * 512), stat_sum(&|m| m.size())));
    let svg = std::fs::read_to_string(&treemap).unwrap();
    assert!(svg.contains("<svg") && svg.trim_end().ends_with("</svg>"), "{svg}");

    // `-o -`: the export instead of the report.
    let (code, text) = run_scan(&["-q", &tp, "-o", "-"]);
    assert_eq!(code, 0);
    assert!(text.starts_with("[1,2,{") && !text.contains("entries"), "{text}");
    // JSON: one document for two roots.
    let (code, text) = run_scan(&["-q", "--json", &tp, &path(&t.join("d"))]);
    assert_eq!(code, 0);
    assert_eq!(
        text.matches(r#"{"path":"#).count(),
        2 + 1 + 1 + 2,
        "2 roots; d, d/f and g under the first, d/f under the second: {text}"
    );
    // A root that is missing or not a directory is an error; the others are reported.
    let (code, text) = run_scan(&["-q", "-b", &missing, &tp]);
    assert_eq!((code, text.lines().next()), (1, Some(tp.as_str())));
    assert_eq!(run_scan(&["-q", &missing]), (1, String::new()));
    // `run` is `run_to` on the real standard output (which it leaves alone here).
    assert_eq!(run::<Native>(&parse_ok(&["-q", &missing]), 2, 64), 1);
    assert_eq!(run_scan(&["-q", &file, &missing]), (1, String::new()));
    // An export that cannot be written is an error.
    assert_eq!(run_scan(&["-q", &tp, "-o", &path(&scratch.0.join("no/such/dir"))]).0, 1);
    assert_eq!(run_scan(&["-q", &tp, "--treemap", &path(&scratch.0.join("no/such/dir"))]).0, 1);
    // An import: its source named.
    let (code, text) = run_scan(&["-f", &export, "--json"]);
    assert_eq!(code, 0);
    assert!(text.contains(r#""source":"import of a dfdu export""#), "{text}");
}

/// What could not be read is named as du names it, sorted by path, with the reason when
/// there is one (a dangling symlink followed under -L has none).
#[test]
fn problems_are_named_like_du() {
    let scratch = Scratch::new("problems");
    let t = scratch.0.join("t");
    std::fs::create_dir_all(t.join("z")).unwrap();
    std::os::unix::fs::symlink("nowhere", t.join("z/dangling")).unwrap();
    std::os::unix::fs::symlink("nowhere", t.join("b-dangling")).unwrap();
    let root = format!("{}/", t.display());
    let a = parse_ok(&["-L", &root]);
    let arena = Arena::new();
    let sink = ArenaSink::new(&arena).collecting_problems();
    let cpath = CString::new(root.clone()).unwrap();
    let meta = Native::stat_path(&cpath, Follow::Yes).unwrap();
    let r = sink.add_root(root.as_bytes(), &meta).unwrap();
    let empty = HashSet::new();
    let walk = a.walk.walk(2, 64, None, &empty);
    scan::scan_as::<Native, ArenaSink>(&walk, &sink, &cpath, &meta, r);
    let lines = problem_lines(&arena, "dfdu scan", sink.take_problems());
    // GNU du -L says the same of a dangling link.
    let du = std::process::Command::new("du").arg("-L").arg(&root).output().unwrap();
    let du_err: Vec<String> =
        String::from_utf8_lossy(&du.stderr).lines().map(|l| l.replacen("du: ", "dfdu scan: ", 1)).collect();
    assert_eq!(lines.len(), 2, "{lines:?}");
    let mut sorted_du = du_err.clone();
    sorted_du.sort();
    assert_eq!(lines, sorted_du, "GNU du -L said: {du_err:?}");
    assert_eq!(lines[0], format!("dfdu scan: cannot access '{root}b-dangling'"));
}

#[test]
fn progress_line_fits_the_terminal() {
    let line = |path: &str, width| progress_line(1500, 2 << 20, 0.5, path.to_string(), width);
    assert_eq!(line("/short/path", 80), "1500 entries, 2.0M, 3000/s /short/path");
    // 27 columns of head and one left free: 12 for the path at width 40.
    assert_eq!(line("/abc/def/ghi", 40), "1500 entries, 2.0M, 3000/s /abc/def/ghi");
    assert_eq!(line("/a/very/long/path/name", 40), "1500 entries, 2.0M, 3000/s ...path/name");
    assert_eq!(line("/a/very/long/path/name", 40).chars().count(), 39);
    assert_eq!(line("/abc/def/ghij", 40), "1500 entries, 2.0M, 3000/s .../def/ghij");
}

/// A bind mount of a directory inside itself is a loop: counted as an entry and as a loop,
/// not entered (it needs root to mount).
#[test]
fn loops_are_counted_and_shown() {
    use std::os::unix::fs::MetadataExt;
    if std::fs::metadata("/proc/self").map_or(true, |m| m.uid() != 0) {
        assert!(std::env::var_os("DFDU_REQUIRE_ROOT").is_none(), "DFDU_REQUIRE_ROOT is set but this is not root");
        eprintln!("SKIP: report loops_are_counted_and_shown needs root to bind-mount");
        return;
    }
    let scratch = Scratch::new("loops");
    let t = scratch.0.join("t");
    std::fs::create_dir_all(t.join("sub")).unwrap();
    std::fs::write(t.join("f"), b"data").unwrap();
    let mount = |args: &[&std::ffi::OsStr]| std::process::Command::new(args[0]).args(&args[1..]).status().unwrap();
    if !mount(&["mount".as_ref(), "--bind".as_ref(), t.as_os_str(), t.join("sub").as_os_str()]).success() {
        panic!("mount --bind failed as root");
    }
    let root = t.to_str().unwrap().to_string();
    let a = parse_ok(&["-b", &root]);
    let arena = Arena::new();
    let sink = ArenaSink::new(&arena);
    let cpath = CString::new(root.clone()).unwrap();
    let meta = Native::stat_path(&cpath, Follow::Yes).unwrap();
    let r = sink.add_root(root.as_bytes(), &meta).unwrap();
    let empty = HashSet::new();
    scan::scan_as::<Native, ArenaSink>(&a.walk.walk(2, 64, None, &empty), &sink, &cpath, &meta, r);
    mount(&["umount".as_ref(), t.join("sub").as_os_str()]);
    let s = summarize(&arena, r, 10, false, false);
    assert_eq!((s.entries, s.dirs, s.files, s.loops, s.errors), (3, 1, 1, 1, 0));
    let text = text_of(&arena, &s, &a);
    assert!(text.contains("(1 directory, 1 file, 0 symlinks, 0 other, 1 loop)"), "{text}");
    assert!(text.contains("\n  loops                     1  directories that are their own ancestors"), "{text}");
}
