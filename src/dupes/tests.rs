//! Unit tests of `dupes/mod.rs`: options, the summary and progress lines, the output
//! formats byte for byte, and `scan_all` on file arguments and a root that turns into a
//! symbolic link. Every name contains `dupes` or `dedupe`: `make mutants MOD=dupes` runs
//! the unit tests whose names hold those words.

use super::*;
use crate::platform::Follow;
use crate::walk::reader::Native;
use std::ffi::CStr;
use std::path::PathBuf;
use std::sync::atomic::AtomicU64;

fn os(v: &[&str]) -> Vec<OsString> {
    v.iter().map(OsString::from).collect()
}

fn parsed(mode: Mode, v: &[&str]) -> Result<Args, i32> {
    parse("dfdu", mode, os(v))
}

fn args(mode: Mode) -> Args {
    parsed(mode, &["p"]).expect("one path parses")
}

#[test]
fn dupes_parse_takes_each_option() {
    let a = parsed(Mode::Dupes, &["-S", "-0", "-q", "--min-size=2K", "--max-size=1M", "x", "y"]).unwrap();
    assert!(a.sizes && a.nul && a.quiet && !a.json && !a.dry_run);
    assert_eq!((a.min_size, a.max_size), (2048, 1 << 20));
    assert_eq!(a.paths, os(&["x", "y"]));
    let d = parsed(Mode::Dedupe, &["--dry-run", "--json", "--hashfile", "h", "x"]).unwrap();
    assert!(d.dry_run && d.json);
    assert_eq!(d.hashfile, Some(OsString::from("h")));
}

#[test]
fn dupes_parse_refuses_dry_run_which_only_dedupe_has() {
    assert_eq!(parsed(Mode::Dupes, &["--dry-run", "x"]).err(), Some(2));
}

#[test]
fn dupes_parse_help_exits_0() {
    assert_eq!(parsed(Mode::Dupes, &["--help"]).err(), Some(0));
    assert_eq!(parsed(Mode::Dedupe, &["--help", "x"]).err(), Some(0));
}

#[test]
fn dupes_parse_json_goes_with_neither_size_nor_null() {
    assert_eq!(parsed(Mode::Dupes, &["--json", "-S", "x"]).err(), Some(2));
    assert_eq!(parsed(Mode::Dupes, &["-0", "--json", "x"]).err(), Some(2));
    assert!(parsed(Mode::Dupes, &["--json", "x"]).is_ok());
    assert!(parsed(Mode::Dupes, &["-S", "-0", "x"]).is_ok());
}

#[test]
fn dupes_parse_min_size_may_equal_max_size() {
    let a = parsed(Mode::Dupes, &["--min-size=5", "--max-size=5", "x"]).unwrap();
    assert_eq!((a.min_size, a.max_size), (5, 5));
    assert_eq!(parsed(Mode::Dupes, &["--min-size=6", "--max-size=5", "x"]).err(), Some(2));
}

/// Two groups whose sizes are known: 3 × 1000 bytes and 2 × 5000 bytes.
fn groups() -> Vec<Group> {
    vec![
        Group {
            size: 5000,
            members: vec![3, 4],
            paths: vec![b"a/x".to_vec(), b"b/x".to_vec()],
            layout_of: vec![0, 1],
            devs: vec![1, 1],
        },
        Group {
            size: 1000,
            members: vec![0, 1, 2],
            paths: vec![b"q \"1\"".to_vec(), b"q\\2".to_vec(), b"q\x01\x1f \x7f\xff3".to_vec()],
            layout_of: vec![0, 1, 1],
            devs: vec![1; 3],
        },
    ]
}

fn stats(values: [u64; 5]) -> Stats {
    let [files_read, bytes_read, cache_hits, extra_links, changed] = values.map(AtomicU64::new);
    Stats { files_read, bytes_read, cache_hits, extra_links, changed, ..Stats::default() }
}

/// `s` up to its elapsed-time part (which starts at `marker`).
fn timeless<'a>(s: &'a str, marker: &str) -> &'a str {
    &s[..s.rfind(marker).expect("the time is there")]
}

#[test]
fn dupes_summary_line_counts_and_sizes() {
    let g = groups();
    let st = stats([7, 123_456, 0, 0, 0]);
    let line = summary_line(&g, &st, Instant::now());
    // Wasted: 5000 + 2 × 1000; reclaimable: 5000 + 1000 (two of the 1000-byte copies share).
    assert_eq!(
        timeless(&line, "; "),
        "2 groups, 3 duplicate files, 7000 bytes (6.9K) in duplicates, 6000 bytes (5.9K) reclaimable; \
         read 7 files, 123456 bytes; 0 from the hash file"
    );
    assert!(line.ends_with(" s") && line.contains("; 0."), "{line}");
    // Files sampled and then read whole: files, and the reads when there are more.
    let st = Stats { reads: AtomicU64::new(4), ..stats([2, 216_384, 0, 0, 0]) };
    assert!(summary_line(&g, &st, Instant::now()).contains("; read 2 files in 4 reads, 216384 bytes; "));
}

#[test]
fn dupes_summary_line_notes_shared_links_and_changes_only_when_there_are_some() {
    let mut g = groups();
    let st = stats([1, 2, 3, 1, 1]);
    assert_eq!(
        timeless(&summary_line(&g, &st, Instant::now()), "; "),
        "2 groups, 3 duplicate files, 7000 bytes (6.9K) in duplicates, 6000 bytes (5.9K) reclaimable; \
         read 1 file, 2 bytes; 3 from the hash file; 1 extra hard-link name not listed; \
         1 file changed while read (skipped)"
    );
    g[0].layout_of = vec![0, 0];
    let st = stats([0, 0, 0, 2, 2]);
    assert_eq!(
        timeless(&summary_line(&g, &st, Instant::now()), "; "),
        "2 groups, 3 duplicate files, 7000 bytes (6.9K) in duplicates, 1000 bytes (1000) reclaimable \
         [shared: 1 group already shares its extents]; read 0 files, 0 bytes; 0 from the hash file; \
         2 extra hard-link names not listed; 2 files changed while read (skipped)"
    );
    g[1].layout_of = vec![0, 0, 0];
    assert!(summary_line(&g, &st, Instant::now()).contains(" [shared: 2 groups already share their extents]; "));
    assert_eq!(
        timeless(&summary_line(&[], &Stats::default(), Instant::now()), "; "),
        "0 groups, 0 duplicate files, 0 bytes (0) in duplicates, 0 bytes (0) reclaimable; \
         read 0 files, 0 bytes; 0 from the hash file"
    );
}

#[test]
fn dupes_progress_line_per_phase() {
    let st = stats([0, 3 << 20, 0, 0, 0]);
    st.jobs_done.store(4, Ordering::Relaxed);
    st.jobs_total.store(9, Ordering::Relaxed);
    assert_eq!(progress_line(PHASE_SCAN, 12, &st).as_deref(), Some("scanning: 12 files"));
    assert_eq!(progress_line(PHASE_READ, 12, &st).as_deref(), Some("reading: 4/9 files, 3.0M read"));
    assert_eq!(progress_line(PHASE_DONE, 12, &st), None);
}

fn written(a: &Args, g: &[Group], st: &Stats, report: Option<&dedupe::Report>) -> String {
    let mut out = Vec::new();
    write_groups(&mut out, a, g, st, Instant::now(), (report, None), false).unwrap();
    String::from_utf8_lossy(&out).into_owned()
}

#[test]
fn dupes_json_document_byte_for_byte() {
    let mut a = args(Mode::Dupes);
    a.json = true;
    let st = stats([7, 123_456, 3, 1, 2]);
    let js = written(&a, &groups(), &st, None);
    let (head, tail) = js.split_at(js.rfind(",\"seconds\":").unwrap());
    assert_eq!(
        head,
        "{\"format\":\"dfdu-dupes-report\",\"version\":1,\"command\":\"dupes\",\"groups\":[\n\
         {\"size\":5000,\"already_shared\":false,\"reclaimable\":5000,\"paths\":[\"a/x\",\"b/x\"]},\n\
         {\"size\":1000,\"already_shared\":false,\"reclaimable\":1000,\
         \"paths\":[\"q \\\"1\\\"\",\"q\\\\2\",\"q\\u0001\\u001f \\u007f\u{fffd}3\"]}],\n\
         \"summary\":{\"groups\":2,\"duplicate_files\":3,\"bytes_wasted\":7000,\"bytes_reclaimable\":6000,\
         \"groups_already_shared\":0,\"files_read\":7,\"reads\":0,\"bytes_read\":123456,\"cache_hits\":3,\"extra_links\":1,\
         \"changed\":2"
    );
    assert!(tail.starts_with(",\"seconds\":0.") && tail.ends_with("}}\n"), "{tail}");
    // One group, and the dedupe report after the summary.
    a.mode = Mode::Dedupe;
    let r = dedupe::Report { files: 4, ..dedupe::Report::default() };
    let js = written(&a, &groups()[..1], &Stats::default(), Some(&r));
    assert!(
        js.starts_with(
            "{\"format\":\"dfdu-dupes-report\",\"version\":1,\"command\":\"dedupe\",\"groups\":[\n{\"size\":5000,"
        ),
        "{js}"
    );
    assert!(js.contains("\"paths\":[\"a/x\",\"b/x\"]}],\n\"summary\":{\"groups\":1,\"duplicate_files\":1,"), "{js}");
    assert!(js.ends_with(&format!("}},\n\"dedupe\":{}}}\n", r.json(false))), "{js}");
    let js = written(&a, &[], &Stats::default(), None);
    assert!(js.starts_with("{\"format\":\"dfdu-dupes-report\",\"version\":1,\"command\":\"dedupe\",\"groups\":[],\n\"summary\":{\"groups\":0,"), "{js}");
}

/// More groups than fit in one 64 KiB piece: the document is the same, whole.
#[test]
fn dupes_json_of_many_groups_is_whole() {
    let mut a = args(Mode::Dupes);
    a.json = true;
    let many: Vec<Group> = (0..3000u32)
        .map(|i| Group {
            size: 10,
            members: vec![2 * i, 2 * i + 1],
            paths: vec![format!("d/{i:05}a").into_bytes(), format!("d/{i:05}b").into_bytes()],
            layout_of: vec![0, 1],
            devs: vec![1, 1],
        })
        .collect();
    let js = written(&a, &many, &Stats::default(), None);
    let each = |i: u32| {
        format!("{{\"size\":10,\"already_shared\":false,\"reclaimable\":10,\"paths\":[\"d/{i:05}a\",\"d/{i:05}b\"]}}")
    };
    let list: Vec<String> = (0..3000).map(each).collect();
    let want = format!(
        "{{\"format\":\"dfdu-dupes-report\",\"version\":1,\"command\":\"dupes\",\"groups\":[\n{}],\n\"summary\":",
        list.join(",\n")
    );
    assert!(js.starts_with(&want), "{}", &js[..200]);
}

#[test]
fn dupes_text_output_byte_for_byte() {
    let mut a = args(Mode::Dupes);
    let g = &groups()[..1];
    assert_eq!(written(&a, g, &Stats::default(), None), "a/x\nb/x\n\n");
    a.sizes = true;
    assert_eq!(written(&a, g, &Stats::default(), None), "5000 bytes each:\na/x\nb/x\n\n");
    a.sizes = false;
    a.nul = true;
    assert_eq!(written(&a, &groups(), &Stats::default(), None).matches('\0').count(), 2 + 1 + 3 + 1);
    assert_eq!(written(&a, g, &Stats::default(), None), "a/x\0b/x\0\0");
}

/// On a terminal the paths are quoted as `ls` quotes them (tests/dupes.rs compares with
/// `ls` itself on a pseudo-terminal); JSON is not touched.
#[test]
fn dupes_text_output_quoted_for_a_terminal() {
    let mut a = args(Mode::Dupes);
    let g = groups();
    let quoted = |a: &Args| {
        let mut out = Vec::new();
        write_groups(&mut out, a, &g, &Stats::default(), Instant::now(), (None, None), true).unwrap();
        String::from_utf8_lossy(&out).into_owned()
    };
    assert!(quoted(&a).starts_with("a/x\nb/x\n\n'q \"1\"'\n'q\\2'\n'q'$'\\001\\037'' '$'\\177"), "{}", quoted(&a));
    a.json = true;
    assert_eq!(
        quoted(&a).split(",\"seconds\"").next(),
        written(&a, &g, &Stats::default(), None).split(",\"seconds\"").next()
    );
}

/// A scratch directory for one test, removed on drop.
struct Dir(PathBuf);

impl Dir {
    fn new(label: &str) -> Dir {
        let d = std::env::temp_dir().join(format!("dfdu-unit-{label}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        Dir(d)
    }
    fn file(&self, name: &str, bytes: &[u8]) -> OsString {
        let p = self.0.join(name);
        std::fs::write(&p, bytes).unwrap();
        p.into_os_string()
    }
}

impl Drop for Dir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// The files `scan_all` keeps, as (path, size).
fn scanned<R: Reader>(a: &Args) -> (Vec<(Vec<u8>, u64)>, usize, bool) {
    let sink = FilesSink::new(Found::default(), a.min_size, a.max_size);
    let mut notes = Vec::new();
    let ok = scan_all::<R>(a, &sink, 2, 64, &mut notes);
    let found = sink.found.into_inner().unwrap();
    let mut out: Vec<(Vec<u8>, u64)> = found
        .files
        .iter()
        .map(|f| {
            let mut p = Vec::new();
            found.file_path(f, &mut p);
            (p, f.size)
        })
        .collect();
    out.sort();
    (out, found.errors.len(), ok)
}

#[test]
fn dupes_file_arguments_within_the_size_limits_inclusive() {
    let d = Dir::new("dupes-file-args");
    let small = d.file("small", &[7; 100]);
    let big = d.file("big", &[7; 200]);
    let mut a = args(Mode::Dupes);
    a.paths = vec![small.clone(), big.clone()];
    let both = vec![(os_bytes(&big), 200), (os_bytes(&small), 100)];
    assert_eq!(scanned::<Native>(&a).0, both);
    (a.min_size, a.max_size) = (100, 200);
    assert_eq!(scanned::<Native>(&a).0, both, "the limits are inclusive");
    (a.min_size, a.max_size) = (101, 200);
    assert_eq!(scanned::<Native>(&a).0, vec![(os_bytes(&big), 200)]);
    (a.min_size, a.max_size) = (100, 199);
    assert_eq!(scanned::<Native>(&a).0, vec![(os_bytes(&small), 100)]);
    (a.min_size, a.max_size) = (150, 160);
    assert_eq!(scanned::<Native>(&a).0, vec![]);
}

/// The native reader, except that `stat_path` follows symbolic links: what a root that
/// was a directory when stat'ed and a symbolic link when opened looks like.
struct Swapped;

impl Reader for Swapped {
    type Dir = <Native as Reader>::Dir;
    type Lister = <Native as Reader>::Lister;
    type ExtentBuf = <Native as Reader>::ExtentBuf;
    fn open_path(path: &CStr, follow: Follow) -> Result<Self::Dir, crate::meta::Errno> {
        Native::open_path(path, follow)
    }
    fn open_at(parent: &Self::Dir, name: &CStr, follow: Follow) -> Result<Self::Dir, crate::meta::Errno> {
        Native::open_at(parent, name, follow)
    }
    fn stat_path(path: &CStr, _follow: Follow) -> Result<crate::meta::Meta, crate::meta::Errno> {
        Native::stat_path(path, Follow::Yes)
    }
    fn stat_at(dir: &Self::Dir, name: &CStr, follow: Follow) -> Result<crate::meta::Meta, crate::meta::Errno> {
        Native::stat_at(dir, name, follow)
    }
    fn list(
        lister: &mut Self::Lister,
        dir: &Self::Dir,
        each: &mut dyn FnMut(&CStr, u64, Option<&crate::meta::Meta>),
    ) -> Result<(), crate::meta::Errno> {
        Native::list(lister, dir, each)
    }
    fn sorts_by_inode(dir: &Self::Dir) -> bool {
        Native::sorts_by_inode(dir)
    }
    fn entries_bound(dir: &Self::Dir) -> Option<(u64, u64)> {
        Native::entries_bound(dir)
    }
    fn kernel_fs(dir: &Self::Dir) -> bool {
        Native::kernel_fs(dir)
    }
    fn cachedir_tagged(dir: &Self::Dir) -> bool {
        Native::cachedir_tagged(dir)
    }
    fn lookups_serialize(dir: &Self::Dir) -> bool {
        Native::lookups_serialize(dir)
    }
    fn thread_cpu_ns() -> u64 {
        Native::thread_cpu_ns()
    }
    fn fs_shares_extents(dir: &Self::Dir) -> bool {
        Native::fs_shares_extents(dir)
    }
    fn file_extents_at(
        dir: &Self::Dir,
        name: &CStr,
        buf: &mut Self::ExtentBuf,
        each: &mut dyn FnMut(&crate::meta::Extent),
    ) -> Result<(), crate::meta::Errno> {
        Native::file_extents_at(dir, name, buf, each)
    }
    fn bulk_extents_estimate(dir: &Self::Dir) -> Option<u64> {
        Native::bulk_extents_estimate(dir)
    }
    fn bulk_extents(
        dir: &Self::Dir,
        each: &mut dyn FnMut(u64, &crate::meta::Extent, u32),
    ) -> Result<(), crate::meta::Errno> {
        Native::bulk_extents(dir, each)
    }
    fn bulk_tree(dir: &Self::Dir) -> Option<crate::platform::BtrfsTree> {
        Native::bulk_tree(dir)
    }
}

/// A root directory replaced by a symbolic link between its stat and its open is not
/// followed (symbolic links never are): the scan reports it unreadable and finds nothing.
#[cfg(unix)]
#[test]
fn dupes_root_swapped_for_a_symlink_is_not_followed() {
    let d = Dir::new("dupes-swapped-root");
    std::fs::create_dir(d.0.join("real")).unwrap();
    d.file("real/f", b"data");
    std::os::unix::fs::symlink("real", d.0.join("link")).unwrap();
    let mut a = args(Mode::Dupes);
    a.paths = vec![d.0.join("real").into_os_string()];
    let (files, errors, ok) = scanned::<Swapped>(&a);
    assert_eq!((files.len(), errors, ok), (1, 0, true), "the directory itself is scanned");
    a.paths = vec![d.0.join("link").into_os_string()];
    let (files, errors, _) = scanned::<Swapped>(&a);
    assert_eq!((files, errors), (vec![], 1), "the link is not followed");
}
