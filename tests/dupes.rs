//! `dfdu dupes` and `dfdu dedupe` on trees built at test time.
//!
//! * The generator writes a tree from a seed and returns the manifest of its true groups
//!   (what was written twice or more), which the output must match exactly: every group,
//!   nothing else, including the near-duplicates (same size, same first and last 4 KiB,
//!   one byte different in the middle) that must stay apart, sparse and dense copies,
//!   hard links (one file, shown by the name that sorts first), symlinks (not followed)
//!   and empty files (skipped).
//! * jdupes on the same tree must find the same groups, hard links aside (both sides are
//!   compared as sets of inodes). Without jdupes the test is ignored with a SKIP line,
//!   and fails when `DFDU_REQUIRE_ALL=1`.
//! * `--hashfile`: a rerun reads no file data (strace counts the bytes every `read`
//!   returned) and gives the same groups; damaged hash files never crash and never change
//!   the answer.
//! * `dedupe` as root on loop-mounted btrfs and XFS (`reflink=1`) images under
//!   `/mnt/dupes-*`: bytes, mode, owner and mtime of every file unchanged, free space
//!   grown by the reclaimable bytes, a rerun issues no ioctl, a file changed between the
//!   two runs (size and mtime restored with `touch -r`) is neither damaged nor
//!   deduplicated; on ext4 one message and exit 1. Without root or the mkfs tools: SKIP.
//!
//! Test data is written with plain `write` calls (never `cp`, which may reflink).

mod common;

use common::{dfdu_path, is_root, notice, Scratch};
use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{symlink, MetadataExt};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.0 = x;
        x
    }
    fn bytes(&mut self, n: usize) -> Vec<u8> {
        let mut v = Vec::with_capacity(n + 8);
        while v.len() < n {
            v.extend_from_slice(&self.next().to_le_bytes());
        }
        v.truncate(n);
        v
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

type Groups = BTreeSet<BTreeSet<Vec<u8>>>;

fn pbytes(p: &Path) -> Vec<u8> {
    p.as_os_str().as_bytes().to_vec()
}

fn write(path: &Path, data: &[u8]) {
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    fs::write(path, data).unwrap();
}

/// Builds the test tree under `root`; returns the true groups (paths as dfdu prints them,
/// one name per inode: the one that sorts first).
fn build(root: &Path, seed: u64) -> Groups {
    let mut rng = Rng(seed | 1);
    let mut groups: Vec<Vec<PathBuf>> = Vec::new();
    let dirs = ["a", "a/b", "a/b/c", "d", "e/f"];
    let mut n = 0;
    let mut name = |rng: &mut Rng| {
        n += 1;
        root.join(dirs[rng.below(dirs.len() as u64) as usize]).join(format!("f{n}"))
    };
    let sizes: [usize; 10] = [1, 2, 4095, 4096, 4097, 8193, 65536, 65537, 100_000, (1 << 20) + 1];
    for &size in &sizes {
        let base = rng.bytes(size);
        let copies = 2 + rng.below(3) as usize;
        let mut g = Vec::new();
        for _ in 0..copies {
            let p = name(&mut rng);
            write(&p, &base);
            g.push(p);
        }
        groups.push(g);
        // A near-duplicate pair: same size, same ends, one byte different in the middle.
        let mut near = base.clone();
        near[size / 2] ^= 0x40;
        let p = name(&mut rng);
        write(&p, &near);
        if size >= 2 {
            let mut near2 = base.clone();
            near2[size / 2] ^= 0x01;
            write(&name(&mut rng), &near2);
        }
        // A unique file of a size near it.
        write(&name(&mut rng), &rng.bytes(size + 3));
    }
    // Sparse and dense files with equal content (a hole, then a few bytes).
    let size = (1 << 20) + 1;
    let mut dense = vec![0u8; size];
    dense[size - 5..].copy_from_slice(b"tail!");
    let sparse_path = root.join("d/sparse");
    {
        use std::io::{Seek, SeekFrom, Write};
        let mut f = fs::File::create(&sparse_path).unwrap();
        f.seek(SeekFrom::Start((size - 5) as u64)).unwrap();
        f.write_all(b"tail!").unwrap();
    }
    let dense_path = root.join("e/dense");
    write(&dense_path, &dense);
    groups.push(vec![sparse_path, dense_path]);
    // Hard links: a second name for a member of the 4096-byte group (one file: the group
    // does not grow), and a pair of names of a unique file (no group).
    let g4096 = groups.iter_mut().find(|g| fs::metadata(&g[0]).unwrap().len() == 4096).unwrap();
    let link = root.join("a/0-link-to-4096");
    fs::hard_link(&g4096[1], &link).unwrap();
    let (a, b) = (pbytes(&g4096[1]), pbytes(&link));
    g4096[1] = if a < b { g4096[1].clone() } else { link.clone() };
    let lone = root.join("d/lone");
    write(&lone, &rng.bytes(5000));
    fs::hard_link(&lone, root.join("e/lone-link")).unwrap();
    // Symlinks to group members and to a directory: never followed.
    symlink(&groups[0][0], root.join("a/sym-to-file")).unwrap();
    symlink(root.join("a"), root.join("d/sym-to-dir")).unwrap();
    // Empty files are not duplicates.
    for e in ["a/empty1", "d/empty2", "e/empty3"] {
        write(&root.join(e), b"");
    }
    groups.into_iter().map(|g| g.iter().map(|p| pbytes(p)).collect()).collect()
}

fn dfdu(args: &[&std::ffi::OsStr]) -> Output {
    Command::new(dfdu_path()).args(args).env("LC_ALL", "C").output().expect("run dfdu")
}

/// Groups from fdupes-style output (paths one per line, a blank line after each group).
fn parse_groups(out: &[u8], sizes: bool) -> Groups {
    let mut all = Groups::new();
    let mut cur = BTreeSet::new();
    for line in out.split(|&b| b == b'\n') {
        if line.is_empty() {
            if !cur.is_empty() {
                all.insert(std::mem::take(&mut cur));
            }
        } else if sizes && line.ends_with(b" bytes each:") {
            continue;
        } else {
            cur.insert(line.to_vec());
        }
    }
    assert!(cur.is_empty(), "output ends inside a group");
    all
}

fn show(g: &Groups) -> String {
    g.iter()
        .map(|s| s.iter().map(|p| String::from_utf8_lossy(p).into_owned()).collect::<Vec<_>>().join("\n"))
        .collect::<Vec<_>>()
        .join("\n\n")
}

fn json_num(s: &str, key: &str) -> Option<u64> {
    let at = s.find(&format!("\"{key}\":"))? + key.len() + 3;
    let digits: String = s[at..].chars().take_while(|c| c.is_ascii_digit()).collect();
    digits.parse().ok()
}

#[test]
fn dupes_reports_exactly_the_true_groups() {
    let scratch = Scratch::new("dupes-groups");
    let root = scratch.subdir("t");
    let want = build(&root, 0x5eed_0001);
    let out = dfdu(&["dupes".as_ref(), root.as_os_str()]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let got = parse_groups(&out.stdout, false);
    assert_eq!(got, want, "\n--- got ---\n{}\n--- want ---\n{}", show(&got), show(&want));
    // Same groups with -S (and the size line is right), with -0, and with 1 thread.
    let s = dfdu(&["dupes".as_ref(), "-S".as_ref(), root.as_os_str()]);
    assert_eq!(parse_groups(&s.stdout, true), want);
    let text = String::from_utf8_lossy(&s.stdout).into_owned();
    for block in text.split("\n\n").filter(|b| !b.is_empty()) {
        let mut lines = block.lines();
        let head = lines.next().unwrap();
        let n: u64 = head.strip_suffix(" bytes each:").expect("size line first").parse().unwrap();
        for p in lines {
            assert_eq!(fs::metadata(p).unwrap().len(), n, "{p}");
        }
    }
    let z = dfdu(&["dupes".as_ref(), "-0".as_ref(), "-j1".as_ref(), root.as_os_str()]);
    let mut zg = Groups::new();
    for g in z.stdout.split(|&b| b == 0).collect::<Vec<_>>().split(|p| p.is_empty()) {
        if !g.is_empty() {
            zg.insert(g.iter().map(|p| p.to_vec()).collect());
        }
    }
    assert_eq!(zg, want);
    // Order: bytes wasted, largest first; paths in byte order inside a group.
    let mut last = u64::MAX;
    for block in text.split("\n\n").filter(|b| !b.is_empty()) {
        let lines: Vec<&str> = block.lines().collect();
        let size: u64 = lines[0].strip_suffix(" bytes each:").unwrap().parse().unwrap();
        let wasted = size * (lines.len() as u64 - 2);
        assert!(wasted <= last, "groups not in order of bytes wasted");
        last = wasted;
        assert!(lines[1..].windows(2).all(|w| w[0].as_bytes() < w[1].as_bytes()), "paths not sorted");
    }
    // JSON: versioned, with the summary.
    let j = dfdu(&["dupes".as_ref(), "--json".as_ref(), root.as_os_str()]);
    let js = String::from_utf8(j.stdout).unwrap();
    assert_eq!(json_num(&js, "version"), Some(1));
    let summary = &js[js.find("\"summary\"").expect("a summary")..];
    assert_eq!(json_num(summary, "groups"), Some(want.len() as u64));
    let dup_files: usize = want.iter().map(|g| g.len() - 1).sum();
    assert_eq!(json_num(summary, "duplicate_files"), Some(dup_files as u64));
}

/// `--min-size` and `--max-size` bound the sizes considered.
#[test]
fn dupes_size_limits() {
    let scratch = Scratch::new("dupes-limits");
    let root = scratch.subdir("t");
    let want = build(&root, 0x5eed_0002);
    let out = dfdu(&["dupes".as_ref(), "--min-size=4096".as_ref(), "--max-size=100000".as_ref(), root.as_os_str()]);
    let got = parse_groups(&out.stdout, false);
    let want: Groups = want
        .into_iter()
        .filter(|g| {
            let n = fs::metadata(std::ffi::OsStr::from_bytes(g.first().unwrap())).unwrap().len();
            (4096..=100_000).contains(&n)
        })
        .collect();
    assert_eq!(got, want);
}

/// `--exclude` drops what it matches; `-x` does not enter another file system (a tmpfs
/// mounted inside the tree holding one more copy of a group's file).
#[test]
fn dupes_exclude_and_one_file_system() {
    let mut scratch = Scratch::new("dupes-exclude");
    let root = scratch.subdir("t");
    let all = build(&root, 0x5eed_0006);
    let under_d = |p: &Vec<u8>| p.starts_with(&pbytes(&root.join("d/")));
    let want: Groups = all
        .iter()
        .map(|g| g.iter().filter(|p| !under_d(p)).cloned().collect::<BTreeSet<_>>())
        .filter(|g| g.len() >= 2)
        .collect();
    let pattern = format!("{}/d", root.display());
    let out = dfdu(&["dupes".as_ref(), "--exclude".as_ref(), pattern.as_ref(), root.as_os_str()]);
    assert_eq!(parse_groups(&out.stdout, false), want);
    if !is_root() {
        return skip("dupes_exclude_and_one_file_system: -x needs root for a tmpfs mount");
    }
    let mnt = scratch.subdir("t/mnt");
    if let Err(e) = scratch.mount_tmpfs(&mnt) {
        return skip(&format!("dupes_exclude_and_one_file_system: tmpfs mount failed: {e}"));
    }
    let first = all.iter().next().unwrap().iter().next().unwrap().clone();
    let extra = mnt.join("copy");
    fs::write(&extra, fs::read(std::ffi::OsStr::from_bytes(&first)).unwrap()).unwrap();
    let with = parse_groups(&dfdu(&["dupes".as_ref(), root.as_os_str()]).stdout, false);
    assert!(with.iter().any(|g| g.contains(&pbytes(&extra))), "without -x the tmpfs copy is found");
    let x = parse_groups(&dfdu(&["dupes".as_ref(), "-x".as_ref(), root.as_os_str()]).stdout, false);
    assert_eq!(x, all, "-x leaves the tmpfs alone");
}

/// The groups as sets of inodes, from paths (hard links aside).
fn by_inode(g: &Groups) -> BTreeSet<BTreeSet<(u64, u64)>> {
    g.iter()
        .map(|s| {
            s.iter()
                .map(|p| {
                    let m = fs::symlink_metadata(std::ffi::OsStr::from_bytes(p)).unwrap();
                    (m.dev(), m.ino())
                })
                .collect::<BTreeSet<_>>()
        })
        .filter(|s| s.len() >= 2)
        .collect()
}

fn have(tool: &str) -> bool {
    Command::new("sh").arg("-c").arg(format!("command -v {tool}")).output().is_ok_and(|o| o.status.success())
}

fn required() -> bool {
    std::env::var_os("DFDU_REQUIRE_ALL").is_some_and(|v| v == "1")
}

fn skip(what: &str) {
    assert!(!required(), "SKIP not allowed (DFDU_REQUIRE_ALL=1): {what}");
    notice(&format!("SKIP: {what}"));
}

#[test]
fn dupes_agrees_with_jdupes() {
    if !have("jdupes") {
        return skip("jdupes is not installed: dupes_agrees_with_jdupes");
    }
    let scratch = Scratch::new("dupes-jdupes");
    let root = scratch.subdir("t");
    build(&root, 0x5eed_0003);
    // More random files: a few sizes, a few contents, so that chance makes groups.
    let mut rng = Rng(77);
    let pool: Vec<Vec<u8>> = (0..6).map(|i| rng.bytes([300, 5000, 70_000][i % 3])).collect();
    for i in 0..120 {
        let data = &pool[rng.below(pool.len() as u64) as usize];
        write(&root.join(format!("r{}/x{i}", i % 7)), data);
    }
    let j = Command::new("jdupes").arg("-r").arg("-q").arg(&root).output().expect("run jdupes");
    assert!(j.status.success() || j.status.code() == Some(1), "jdupes failed");
    let d = dfdu(&["dupes".as_ref(), root.as_os_str()]);
    let (jg, dg) = (by_inode(&parse_groups(&j.stdout, false)), by_inode(&parse_groups(&d.stdout, false)));
    assert_eq!(dg, jg, "dfdu and jdupes disagree");
    assert!(dg.len() >= 10, "the tree should hold many groups");
}

/// What each stage reads, as the summary counts it: a size no other file has is never
/// read; files that differ in their first or last 4 KiB stop after the sample (4 KiB at
/// each end); files whose ends agree are read whole; small files are read whole once.
#[test]
fn dupes_reads_only_what_each_stage_needs() {
    let scratch = Scratch::new("dupes-stages");
    let root = scratch.subdir("t");
    let mut rng = Rng(0x57a6e);
    let base = rng.bytes(100_010);
    let mut u2 = base[..100_000].to_vec();
    u2[10] ^= 1;
    write(&root.join("u1"), &base[..100_000]);
    write(&root.join("u2"), &u2);
    let mut n2 = base[..100_001].to_vec();
    n2[50_000] ^= 1;
    write(&root.join("n1"), &base[..100_001]);
    write(&root.join("n2"), &n2);
    let mut t2 = base[..100_003].to_vec();
    t2[100_002] ^= 1;
    write(&root.join("t1"), &base[..100_003]);
    write(&root.join("t2"), &t2);
    write(&root.join("d1"), &base[..100_002]);
    write(&root.join("d2"), &base[..100_002]);
    // A third file of d's size that differs in its first block: its sample alone.
    let mut d3 = base[..100_002].to_vec();
    d3[5] ^= 1;
    write(&root.join("d3"), &d3);
    write(&root.join("s1"), &base[..1000]);
    write(&root.join("s2"), &base[..1000]);
    write(&root.join("x"), &base[..777]);
    write(&root.join("y"), &Rng(0x7).bytes(200_000));
    // More names for two of the files: read once each, counted as extra names.
    fs::hard_link(root.join("s1"), root.join("s1-link")).unwrap();
    fs::hard_link(root.join("u1"), root.join("u1-link")).unwrap();
    fs::hard_link(root.join("u1"), root.join("u1-link2")).unwrap();
    let out = dfdu(&["dupes".as_ref(), "--json".as_ref(), root.as_os_str()]);
    let js = text(&out.stdout);
    let summary = &js[js.find("\"summary\"").expect("a summary")..];
    assert_eq!(json_num(summary, "groups"), Some(2), "{js}");
    let d = |n: &str| format!("\"{}\"", root.join(n).display());
    assert!(js.contains(&format!("\"paths\":[{},{}]", d("d1"), d("d2"))), "{js}");
    assert_eq!(json_num(summary, "files_read"), Some(2 + 2 + 4 + 5 + 2), "{js}");
    let sample = 2 * 4096;
    let want = 2 * sample + 2 * sample + 2 * (sample + 100_001) + 3 * sample + 2 * 100_002 + 2 * 1000;
    assert_eq!(json_num(summary, "bytes_read"), Some(want), "{js}");
    assert_eq!(json_num(summary, "extra_links"), Some(3), "{js}");
}

/// Run as `nobody`: a directory it cannot open and one it can list but not enter are
/// reported, path for path, where GNU du (the reference, also as nobody) complains; the
/// run exits 1 and still lists the group it could read.
#[test]
fn dupes_unreadable_as_nobody() {
    use std::os::unix::process::CommandExt;
    if !is_root() {
        return skip("dupes_unreadable_as_nobody: needs root to run as nobody");
    }
    let scratch = Scratch::new("dupes-nobody");
    if !common::reachable_by_others(&scratch.dir) {
        return skip("dupes_unreadable_as_nobody: the scratch directory is not reachable by nobody");
    }
    let root = scratch.subdir("t");
    for name in ["ok/a", "ok/b", "locked/x", "locked/y", "noexec/p", "noexec/q"] {
        write(&root.join(name), b"the same twelve");
    }
    use std::os::unix::fs::PermissionsExt;
    fs::set_permissions(root.join("locked"), fs::Permissions::from_mode(0o000)).unwrap();
    fs::set_permissions(root.join("noexec"), fs::Permissions::from_mode(0o644)).unwrap();
    let bin = common::copy_executable(&dfdu_path(), &scratch.subdir("bin"), "dfdu");
    let as_nobody = |program: &Path, args: &[&std::ffi::OsStr]| {
        Command::new(program).args(args).env("LC_ALL", "C").uid(65534).gid(65534).output().unwrap()
    };
    let out = as_nobody(&bin, &["dupes".as_ref(), root.as_os_str()]);
    let du = as_nobody(Path::new("du"), &[root.as_os_str()]);
    fs::set_permissions(root.join("locked"), fs::Permissions::from_mode(0o755)).unwrap();
    fs::set_permissions(root.join("noexec"), fs::Permissions::from_mode(0o755)).unwrap();
    let complaints = |err: &[u8]| -> BTreeSet<String> {
        text(err)
            .lines()
            .filter_map(|l| l.rsplit_once(": Permission denied"))
            .map(|(head, _)| {
                let path = head.rsplit_once(" cannot read directory ").or(head.rsplit_once(" cannot access "));
                let path = path.or(head.rsplit_once(" cannot read ")).expect("a path").1;
                path.trim_matches('\'').to_string()
            })
            .collect()
    };
    let (got, want) = (complaints(&out.stderr), complaints(&du.stderr));
    assert_eq!(got.len(), 3, "{}", text(&out.stderr));
    assert_eq!(got, want, "dfdu:\n{}du:\n{}", text(&out.stderr), text(&du.stderr));
    assert_eq!(out.status.code(), Some(1));
    let ok: Groups = [[pbytes(&root.join("ok/a")), pbytes(&root.join("ok/b"))].into()].into();
    assert_eq!(parse_groups(&out.stdout, false), ok);
}

/// Bytes returned by every `read`-family call in an strace log (with `-f`, a call another
/// thread interrupted ends on a `<... read resumed>` line).
fn bytes_read(log: &str) -> u64 {
    log.lines()
        .filter(|l| {
            ["read(", "read64(", "readv(", "read resumed>", "read64 resumed>", "readv resumed>"]
                .iter()
                .any(|k| l.contains(k))
        })
        .filter_map(|l| l.rsplit_once("= ").and_then(|(_, n)| n.split_whitespace().next()?.parse::<i64>().ok()))
        .filter(|&n| n > 0)
        .map(|n| n as u64)
        .sum()
}

#[test]
fn hashfile_rerun_reads_no_file_data() {
    let scratch = Scratch::new("dupes-cache");
    let root = scratch.subdir("t");
    let want = build(&root, 0x5eed_0004);
    let cache = scratch.dir.join("hashes");
    let h = cache.as_os_str();
    let first = dfdu(&["dupes".as_ref(), "--json".as_ref(), "--hashfile".as_ref(), h, root.as_os_str()]);
    assert!(first.status.success());
    let js = String::from_utf8(first.stdout).unwrap();
    assert!(json_num(&js, "bytes_read").unwrap() > 4 << 20, "the first run reads the candidates");
    let cache_len = fs::metadata(&cache).unwrap().len();
    let candidates = json_num(&js, "files_read").unwrap();
    assert!(cache_len <= 32 + 64 + 16 * 4 + 64 * candidates, "about 64 bytes per file: {cache_len}");
    let written = fs::metadata(&cache).unwrap();
    let again = dfdu(&["dupes".as_ref(), "--hashfile".as_ref(), h, root.as_os_str()]);
    assert_eq!(parse_groups(&again.stdout, false), want);
    // Nothing new was learned: the hash file is not rewritten (same inode, same mtime).
    let kept = fs::metadata(&cache).unwrap();
    assert_eq!((kept.ino(), kept.modified().unwrap()), (written.ino(), written.modified().unwrap()));
    let j2 = dfdu(&["dupes".as_ref(), "--json".as_ref(), "--hashfile".as_ref(), h, root.as_os_str()]);
    let js2 = String::from_utf8(j2.stdout).unwrap();
    assert_eq!(json_num(&js2, "bytes_read"), Some(0), "{js2}");
    assert_eq!(json_num(&js2, "files_read"), Some(0));
    if !have("strace") {
        return skip("strace is not installed: the rerun's reads are only self-reported");
    }
    let log = scratch.dir.join("strace.log");
    let st = Command::new("strace")
        .args(["-f", "-qq", "-e", "trace=read,pread64,readv,preadv,preadv2", "-o"])
        .arg(&log)
        .arg(dfdu_path())
        .args(["dupes".as_ref(), "--hashfile".as_ref(), h, root.as_os_str()])
        .output()
        .unwrap();
    assert_eq!(parse_groups(&st.stdout, false), want);
    let read = bytes_read(&fs::read_to_string(&log).unwrap());
    // The hash file itself plus a few small system files (CPU count, limits).
    assert!(read < cache_len + 64 * 1024, "the rerun read {read} bytes (hash file {cache_len})");
}

#[test]
fn damaged_hashfiles_never_change_the_answer() {
    let scratch = Scratch::new("dupes-fuzz");
    let root = scratch.subdir("t");
    let want = build(&root, 0x5eed_0005);
    let cache = scratch.dir.join("hashes");
    let h = cache.as_os_str();
    let base = dfdu(&["dupes".as_ref(), "--hashfile".as_ref(), h, root.as_os_str()]);
    assert_eq!(parse_groups(&base.stdout, false), want);
    let good = fs::read(&cache).unwrap();
    let mut rng = Rng(0xfa22);
    let mut variants: Vec<Vec<u8>> = vec![Vec::new(), b"DFDUHA".to_vec(), good[..good.len() / 2].to_vec()];
    variants.push(good[..good.len() - 1].to_vec());
    let mut longer = good.clone();
    longer.extend_from_slice(b"tail");
    variants.push(longer);
    for _ in 0..24 {
        let mut v = good.clone();
        let flips = 1 + rng.below(4);
        for _ in 0..flips {
            let at = rng.below(v.len() as u64) as usize;
            v[at] ^= 1 << rng.below(8);
        }
        variants.push(v);
    }
    let mut junk = b"DFDUHASH".to_vec();
    junk.extend(rng.bytes(500));
    variants.push(junk);
    for (i, v) in variants.iter().enumerate() {
        fs::write(&cache, v).unwrap();
        let out = dfdu(&["dupes".as_ref(), "--hashfile".as_ref(), h, root.as_os_str()]);
        assert!(out.status.code() == Some(0), "variant {i}: {:?} {}", out.status, String::from_utf8_lossy(&out.stderr));
        assert_eq!(parse_groups(&out.stdout, false), want, "variant {i}");
        // A damaged file is rebuilt: the next run trusts the new one.
        if !v.is_empty() && v != &good {
            assert!(String::from_utf8_lossy(&out.stderr).contains("hash file"), "variant {i}: no message");
        }
        let magic_bytes = v.iter().zip(b"DFDUHASH").filter(|(a, b)| a == b).count();
        if v.len() >= 8 && magic_bytes >= 6 {
            assert!(cache_is_valid(&cache), "variant {i}: not rebuilt");
        }
    }
    // A file that is not a dfdu hash file is left alone.
    fs::write(&cache, b"precious notes\n").unwrap();
    let out = dfdu(&["dupes".as_ref(), "--hashfile".as_ref(), h, root.as_os_str()]);
    assert_eq!(parse_groups(&out.stdout, false), want);
    assert_eq!(fs::read(&cache).unwrap(), b"precious notes\n");
}

/// Regression: `--hashfile` naming a device node was read as an empty cache and then
/// renamed over, turning the node into a regular file (seen on /dev/null while the
/// suite ran). Only a regular file may be a hash file; anything else is refused before
/// it is opened, and stays what it was. A FIFO needs no root; a character device does.
#[test]
fn hashfile_that_is_not_a_regular_file_is_refused_and_left_alone() {
    use std::os::unix::fs::FileTypeExt;
    let scratch = Scratch::new("dupes-nonregular");
    let root = scratch.subdir("t");
    build(&root, 0x5eed_0007);
    let fifo = scratch.dir.join("fifo");
    assert!(Command::new("mkfifo").arg(&fifo).status().unwrap().success());
    let mut nodes = vec![(fifo, "fifo")];
    let null_twin = scratch.dir.join("null");
    if Command::new("mknod")
        .args(["-m", "666"])
        .arg(&null_twin)
        .args(["c", "1", "3"])
        .status()
        .is_ok_and(|s| s.success())
    {
        nodes.push((null_twin, "char device"));
    } else {
        skip("mknod of a character device needs root: only the FIFO case ran");
    }
    for (node, what) in &nodes {
        // `timeout`: the old code blocked forever reading a FIFO it held open for writing.
        let out = Command::new("timeout")
            .arg("20")
            .arg(dfdu_path())
            .args(["dupes".as_ref(), "--hashfile".as_ref(), node.as_os_str(), root.as_os_str()])
            .env("LC_ALL", "C")
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_ne!(out.status.code(), Some(0), "{what}: accepted as a hash file: {err}");
        assert_ne!(out.status.code(), Some(124), "{what}: hung");
        assert!(err.contains("not a regular file"), "{what}: {err}");
        let ft = fs::symlink_metadata(node).unwrap().file_type();
        assert!(ft.is_fifo() || ft.is_char_device(), "{what}: replaced by {ft:?}");
    }
}

/// A run waits for another that holds the hash file's lock (here util-linux `flock`).
#[test]
fn hashfile_is_locked_against_a_concurrent_run() {
    if !have("flock") {
        return skip("hashfile_is_locked_against_a_concurrent_run: flock is not installed");
    }
    let scratch = Scratch::new("dupes-lock");
    let root = scratch.subdir("t");
    let want = build(&root, 0x5eed_0007);
    let cache = scratch.dir.join("hashes");
    fs::write(&cache, b"").unwrap();
    // The holder keeps the lock until its standard input closes.
    let mut holder = Command::new("flock")
        .arg(&cache)
        .args(["sh", "-c", "read x"])
        .stdin(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    while Command::new("flock").arg("-n").arg(&cache).arg("true").status().unwrap().success() {
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let mut run = Command::new(dfdu_path())
        .args(["dupes".as_ref(), "--hashfile".as_ref(), cache.as_os_str(), root.as_os_str()])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // dfdu says it waits (and keeps waiting: the holder is still there) ...
    let mut err = std::io::BufReader::new(run.stderr.take().unwrap());
    let mut line = String::new();
    std::io::BufRead::read_line(&mut err, &mut line).unwrap();
    assert!(line.contains("waiting for another run"), "{line}");
    assert!(run.try_wait().unwrap().is_none(), "dfdu did not wait for the lock");
    // ... and goes on once the other run is done.
    drop(holder.stdin.take());
    let _ = holder.wait();
    let out = run.wait_with_output().unwrap();
    assert!(out.status.success());
    assert_eq!(parse_groups(&out.stdout, false), want);
    assert!(cache_is_valid(&cache));
}

/// A run that waited for the lock while another run replaced the hash file (renamed a
/// new one over it) reads the new file, not the one it waited on.
#[test]
fn hashfile_replaced_while_waiting_is_read_anew() {
    if !have("flock") {
        return skip("hashfile_replaced_while_waiting_is_read_anew: flock is not installed");
    }
    let scratch = Scratch::new("dupes-lock-replaced");
    let root = small_tree(&scratch);
    let good = scratch.dir.join("good");
    let first = dfdu(&["dupes".as_ref(), "--hashfile".as_ref(), good.as_os_str(), root.as_os_str()]);
    assert!(first.status.success() && cache_is_valid(&good));
    let cache = scratch.dir.join("hashes");
    fs::write(&cache, b"").unwrap();
    let mut holder = Command::new("flock")
        .arg(&cache)
        .args(["sh", "-c", "read x"])
        .stdin(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    while Command::new("flock").arg("-n").arg(&cache).arg("true").status().unwrap().success() {
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let mut run = Command::new(dfdu_path())
        .args(["dupes".as_ref(), "--json".as_ref(), "--hashfile".as_ref(), cache.as_os_str(), root.as_os_str()])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut err = std::io::BufReader::new(run.stderr.take().unwrap());
    let mut line = String::new();
    std::io::BufRead::read_line(&mut err, &mut line).unwrap();
    assert!(line.contains("waiting for another run"), "{line}");
    // The other run puts its new file in place, then lets go of the old one's lock.
    fs::rename(&good, &cache).unwrap();
    drop(holder.stdin.take());
    let _ = holder.wait();
    let out = run.wait_with_output().unwrap();
    let js = text(&out.stdout);
    assert!(out.status.success(), "{js}");
    assert_eq!(json_num(&js, "bytes_read"), Some(0), "the new hash file was used: {js}");
    assert_eq!(json_num(&js, "cache_hits"), Some(7), "{js}");
}

/// Runs over two sets of files, one hash file: the second run merges its entries into
/// the first's (inode numbers interleaved, so the merge must keep them in order), and a
/// run over both sets then reads nothing.
#[test]
fn hashfile_merges_the_entries_of_runs_over_parts_of_a_tree() {
    let scratch = Scratch::new("dupes-cache-merge");
    let dir = scratch.subdir("t");
    let mut rng = Rng(0x3e2e);
    // Created alternately in one directory: the two sets' inode numbers interleave. The
    // sizes differ between the sets, so each set's candidates are the same alone and
    // together.
    let (dx, dy) = (rng.bytes(3000), rng.bytes(4000));
    let (mut xs, mut ys) = (Vec::new(), Vec::new());
    for i in 0..6 {
        xs.push(dir.join(format!("x{i}")));
        write(&xs[i], &dx[..1000 + 500 * (i / 2)]);
        ys.push(dir.join(format!("y{i}")));
        write(&ys[i], &dy[..2000 + 500 * (i / 2)]);
    }
    let ino = |p: &PathBuf| fs::metadata(p).unwrap().ino();
    let (lo, hi) = (xs.iter().map(ino).min().unwrap(), xs.iter().map(ino).max().unwrap());
    assert!(ys.iter().map(ino).any(|i| lo < i && i < hi), "the inode numbers should interleave");
    let cache = scratch.dir.join("hashes");
    let run = |paths: &[&PathBuf]| {
        let mut args: Vec<&std::ffi::OsStr> = vec!["dupes".as_ref(), "--json".as_ref(), "--hashfile".as_ref()];
        args.push(cache.as_os_str());
        args.extend(paths.iter().map(|p| p.as_os_str()));
        let out = dfdu(&args);
        assert!(out.status.success() && out.stderr.is_empty(), "{}", text(&out.stderr));
        let js = text(&out.stdout);
        js[js.find("\"summary\"").expect("a summary")..].to_string()
    };
    assert_eq!(json_num(&run(&xs.iter().collect::<Vec<_>>()), "groups"), Some(3));
    assert_eq!(json_num(&run(&ys.iter().collect::<Vec<_>>()), "files_read"), Some(6));
    let both = run(&xs.iter().chain(&ys).collect::<Vec<_>>());
    assert_eq!(json_num(&both, "groups"), Some(6), "{both}");
    assert_eq!(json_num(&both, "bytes_read"), Some(0), "{both}");
    assert_eq!(json_num(&both, "cache_hits"), Some(12), "{both}");
}

fn cache_is_valid(path: &Path) -> bool {
    let out = dfdu(&[
        "dupes".as_ref(),
        "--json".as_ref(),
        "--hashfile".as_ref(),
        path.as_os_str(),
        "/nonexistent-dir".as_ref(),
    ]);
    !String::from_utf8_lossy(&out.stderr).contains("hash file")
}

// ------------------------------------------------------------------------------------------
// dedupe on loop-mounted file systems.

/// A file system image mounted on `/mnt/dupes-<label>-<pid>`; unmounted and removed on drop.
struct LoopFs {
    image: PathBuf,
    pub mnt: PathBuf,
    mounted: bool,
}

impl LoopFs {
    fn new(kind: &str) -> Result<LoopFs, String> {
        let pid = std::process::id();
        let image = std::env::temp_dir().join(format!("dupes-{kind}-{pid}.img"));
        let mnt = PathBuf::from(format!("/mnt/dupes-{kind}-{pid}"));
        let mut fsys = LoopFs { image, mnt, mounted: false };
        let run = |c: &mut Command| -> Result<(), String> {
            let o = c.output().map_err(|e| e.to_string())?;
            if o.status.success() {
                Ok(())
            } else {
                Err(String::from_utf8_lossy(&o.stderr).trim().to_string())
            }
        };
        run(Command::new("truncate").arg("-s").arg("512M").arg(&fsys.image))?;
        match kind {
            k if k.starts_with("btrfs") => run(Command::new("mkfs.btrfs").arg("-q").arg(&fsys.image))?,
            "xfs" => run(Command::new("mkfs.xfs").args(["-q", "-m", "reflink=1"]).arg(&fsys.image))?,
            "xfs-noreflink" => run(Command::new("mkfs.xfs").args(["-q", "-m", "reflink=0"]).arg(&fsys.image))?,
            _ => run(Command::new("mkfs.ext4").args(["-q", "-F"]).arg(&fsys.image))?,
        }
        fs::create_dir_all(&fsys.mnt).map_err(|e| e.to_string())?;
        run(Command::new("mount").args(["-o", "loop"]).arg(&fsys.image).arg(&fsys.mnt))?;
        fsys.mounted = true;
        Ok(fsys)
    }
}

impl Drop for LoopFs {
    fn drop(&mut self) {
        if self.mounted {
            let ok = Command::new("umount").arg(&self.mnt).status().is_ok_and(|s| s.success());
            if !ok {
                let _ = Command::new("umount").arg("-l").arg(&self.mnt).status();
            }
        }
        let _ = fs::remove_dir(&self.mnt);
        let _ = fs::remove_file(&self.image);
    }
}

fn need_root_and(tool: &str, what: &str) -> bool {
    if !is_root() {
        skip(&format!("{what}: needs root (loop mounts)"));
        return false;
    }
    if !have(tool) {
        skip(&format!("{what}: {tool} is not installed"));
        return false;
    }
    true
}

/// What must not change about a file: its bytes, mode, owner and mtime.
#[derive(Debug, PartialEq, Eq)]
struct Kept {
    data: Vec<u8>,
    mode: u32,
    uid: u32,
    gid: u32,
    mtime: (i64, i64),
}

fn kept(p: &Path) -> Kept {
    let m = fs::symlink_metadata(p).unwrap();
    Kept { data: fs::read(p).unwrap(), mode: m.mode(), uid: m.uid(), gid: m.gid(), mtime: (m.mtime(), m.mtime_nsec()) }
}

fn check_dedupe(kind: &str) {
    let fsys = match LoopFs::new(kind) {
        Ok(f) => f,
        Err(e) => return skip(&format!("dedupe on {kind}: cannot make or mount the image: {e}")),
    };
    let root = fsys.mnt.join("t");
    // Groups of files large enough not to be inline, some with unaligned tails.
    let mut rng = Rng(0xd0d0);
    let mut reclaimable = 0u64;
    let mut changed = None;
    for (gi, &size) in [200_000usize, 1 << 20, 3 * (1 << 20) + 7, 65_536, 4 * (1 << 20)].iter().enumerate() {
        let data = rng.bytes(size);
        let copies = 2 + gi % 3;
        for c in 0..copies {
            write(&root.join(format!("g{gi}/c{c}")), &data);
        }
        if gi == 2 {
            // This group gets a member that changes between the two runs.
            write(&root.join("g2/changing"), &data);
            changed = Some(root.join("g2/changing"));
        }
        reclaimable += (size * (copies - 1)) as u64;
        write(&root.join(format!("u{gi}")), &rng.bytes(size));
    }
    let changed = changed.unwrap();
    let _ = Command::new("chmod").arg("640").arg(root.join("g1/c1")).status();
    let _ = Command::new("chown").arg("12345:54321").arg(root.join("g3/c0")).status();
    let cache = fsys.mnt.join("hashes");
    let h = cache.as_os_str();
    let d = dfdu(&["dupes".as_ref(), "--hashfile".as_ref(), h, root.as_os_str()]);
    assert!(d.status.success());
    assert!(parse_groups(&d.stdout, false).iter().any(|g| g.contains(&pbytes(&changed))));
    // Change one byte in the middle; restore size and mtime from a sibling copy's twin.
    let stamp = fsys.mnt.join("stamp");
    fs::write(&stamp, b"").unwrap();
    assert!(Command::new("touch").arg("-r").arg(&changed).arg(&stamp).status().unwrap().success());
    let mut bytes = fs::read(&changed).unwrap();
    let mid = bytes.len() / 2;
    bytes[mid] ^= 0xff;
    fs::write(&changed, &bytes).unwrap();
    assert!(Command::new("touch").arg("-r").arg(&stamp).arg(&changed).status().unwrap().success());
    let mut before = BTreeMap::new();
    for entry in walk(&root) {
        before.insert(entry.clone(), kept(&entry));
    }
    let run = dfdu(&["dedupe".as_ref(), "--json".as_ref(), "--hashfile".as_ref(), h, root.as_os_str()]);
    let js = String::from_utf8_lossy(&run.stdout).into_owned();
    assert!(run.status.success(), "{js}\n{}", String::from_utf8_lossy(&run.stderr));
    for entry in walk(&root) {
        assert_eq!(kept(&entry), before[&entry], "{} changed", entry.display());
    }
    assert_eq!(fs::read(&changed).unwrap(), bytes, "the changed file is intact");
    assert_eq!(json_num(&js, "refused_files"), Some(0), "{js}");
    let deduped = json_num(&js, "bytes_deduplicated").unwrap();
    assert_eq!(deduped, reclaimable, "the changed file was not submitted: {js}");
    let grown = json_num(&js, "free_after").unwrap() as i64 - json_num(&js, "free_before").unwrap() as i64;
    notice(&format!("dedupe on {kind}: reclaimable {reclaimable} bytes, free space grew by {grown}"));
    if kind == "xfs" {
        let diff = (grown - reclaimable as i64).unsigned_abs();
        assert!(diff * 100 <= reclaimable, "XFS: free space grew by {grown}, reclaimable {reclaimable}");
    } else {
        assert!(
            grown as f64 >= 0.99 * reclaimable as f64,
            "btrfs: free space grew by {grown}, reclaimable {reclaimable}"
        );
    }
    // A rerun finds the same groups, all already sharing: no ioctl, nothing submitted.
    let again = dfdu(&["dedupe".as_ref(), "--json".as_ref(), "--hashfile".as_ref(), h, root.as_os_str()]);
    let js2 = String::from_utf8_lossy(&again.stdout).into_owned();
    assert!(again.status.success());
    assert_eq!(json_num(&js2, "ioctl_calls"), Some(0), "{js2}");
    assert_eq!(json_num(&js2, "bytes_submitted"), Some(0), "{js2}");
    assert_eq!(json_num(&js2, "bytes_reclaimable"), Some(0), "{js2}");
    assert_eq!(json_num(&js2, "bytes_read"), Some(0), "the rerun uses the hash file: {js2}");
}

fn walk(root: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else {
                out.push(p);
            }
        }
    }
    out.sort();
    out
}

#[test]
fn dedupe_on_btrfs() {
    if need_root_and("mkfs.btrfs", "dedupe_on_btrfs") {
        check_dedupe("btrfs");
    }
}

#[test]
fn dedupe_on_xfs_with_reflink() {
    if need_root_and("mkfs.xfs", "dedupe_on_xfs_with_reflink") {
        check_dedupe("xfs");
    }
}

#[test]
fn dedupe_on_ext4_says_so_once() {
    if need_root_and("mkfs.ext4", "dedupe_on_ext4_says_so_once") {
        check_cannot_share("ext4", true);
    }
}

/// XFS without reflink is only found out by the first FIDEDUPERANGE call (a dry run
/// cannot tell it from XFS with reflink).
#[test]
fn dedupe_on_xfs_without_reflink_says_so_once() {
    if need_root_and("mkfs.xfs", "dedupe_on_xfs_without_reflink_says_so_once") {
        check_cannot_share("xfs-noreflink", false);
    }
}

/// The counts of `dedupe --json` on btrfs, each kind of skip: a group spread over two file
/// systems, two groups of inline files, an immutable destination, an immutable source,
/// and on a rerun the members that already share.
#[test]
fn dedupe_counts_each_skip_on_btrfs() {
    if !need_root_and("mkfs.btrfs", "dedupe_counts_each_skip_on_btrfs") || !need_root_and("chattr", "dedupe_counts") {
        return;
    }
    let fsys = match LoopFs::new("btrfs-counts") {
        Ok(f) => f,
        Err(e) => return skip(&format!("dedupe_counts_each_skip_on_btrfs: {e}")),
    };
    let scratch = Scratch::new("dedupe-counts");
    let root = fsys.mnt.join("t");
    let mut rng = Rng(0xc0c0);
    let mut group = |name: &str, copies: usize, size: usize| {
        let data = rng.bytes(size);
        for c in 0..copies {
            write(&root.join(format!("{name}/c{c}")), &data);
        }
        data
    };
    group("g1", 3, 200_000);
    let g2 = group("g2", 2, 100_000);
    // One more copy of g2 on the scratch file system (ext4 or whatever /tmp is).
    let elsewhere = scratch.subdir("other").join("c9");
    write(&elsewhere, &g2);
    group("g3-inline", 3, 100);
    group("g6-inline", 2, 60);
    group("g4", 3, 100_000);
    group("g5", 2, 100_000);
    let chattr = |flag: &str, p: &Path| assert!(Command::new("chattr").arg(flag).arg(p).status().unwrap().success());
    // Written back, so that the small files show as inline in their extent maps.
    assert!(Command::new("sync").arg("-f").arg(&root).status().unwrap().success());
    chattr("+i", &root.join("g4/c2"));
    chattr("+i", &root.join("g5/c0"));
    let run = |dry: bool| {
        let mut args: Vec<&std::ffi::OsStr> = vec!["dedupe".as_ref(), "--json".as_ref()];
        if dry {
            args.push("--dry-run".as_ref());
        }
        args.push(root.as_os_str());
        args.push(elsewhere.as_os_str());
        let out = dfdu(&args);
        let js = text(&out.stdout);
        assert!(out.status.success(), "{js}\n{}", text(&out.stderr));
        js[js.find("\"dedupe\":{").expect("a dedupe report")..].to_string()
    };
    let counts = |js: &str| -> Vec<(&'static str, u64)> {
        ["groups", "files", "skipped_shared", "skipped_inline", "skipped_changed", "skipped_pinned", "skipped_swap"]
            .into_iter()
            .chain(["skipped_other_fs", "errors", "refused_files"])
            .map(|k| (k, json_num(js, k).unwrap_or(u64::MAX)))
            .collect()
    };
    // g1, g2 (its btrfs part), g4 and g5 are submitted; g3 and g6 are inline; g5's source is
    // immutable, so none of its copies goes.
    let want = |groups, files, shared| {
        vec![
            ("groups", groups),
            ("files", files),
            ("skipped_shared", shared),
            ("skipped_inline", 3 + 2),
            ("skipped_changed", 0),
            ("skipped_pinned", 2),
            ("skipped_swap", 0),
            ("skipped_other_fs", 1),
            ("errors", 0),
            ("refused_files", 0),
        ]
    };
    let dry = run(true);
    assert_eq!(counts(&dry), want(4, 4, 0), "{dry}");
    assert_eq!(json_num(&dry, "ioctl_calls"), Some(0), "{dry}");
    assert_eq!(json_num(&dry, "bytes_submitted"), Some(2 * 200_000 + 2 * 100_000), "{dry}");
    // Free space is measured before and after real calls only.
    assert_eq!(json_num(&dry, "free_after"), Some(0), "{dry}");
    let first = run(false);
    assert_eq!(counts(&first), want(4, 4, 0), "{first}");
    assert_eq!(json_num(&first, "bytes_deduplicated"), Some(2 * 200_000 + 2 * 100_000), "{first}");
    assert_eq!(json_num(&first, "bytes_submitted"), Some(2 * 200_000 + 2 * 100_000), "{first}");
    // One call per part (g1, g2, g4): each is smaller than what one call covers.
    assert_eq!(json_num(&first, "ioctl_calls"), Some(3), "{first}");
    assert!(json_num(&first, "free_after").unwrap() > json_num(&first, "free_before").unwrap(), "{first}");
    // Rerun: g1 shares whole (2), g2 and g4 one copy each; g5 and g3 as before.
    let again = run(false);
    assert_eq!(counts(&again), want(3, 0, 4), "{again}");
    chattr("-i", &root.join("g4/c2"));
    chattr("-i", &root.join("g5/c0"));
}

/// A file larger than one call covers (1 GiB): dedupe goes on where the first call
/// stopped. Two sparse copies (a few KiB of data, the rest a hole), so the image stays
/// small; reading and hashing 2 GiB of holes takes seconds, so the name keeps it out of
/// `make mutants MOD=dupes`'s quick set (`SLOW=1` runs it).
#[test]
fn big_file_takes_two_calls_on_btrfs() {
    if !need_root_and("mkfs.btrfs", "big_file_takes_two_calls_on_btrfs") {
        return;
    }
    let fsys = match LoopFs::new("btrfs-big") {
        Ok(f) => f,
        Err(e) => return skip(&format!("big_file_takes_two_calls_on_btrfs: {e}")),
    };
    let root = fsys.mnt.join("t");
    fs::create_dir_all(&root).unwrap();
    let size: u64 = (1 << 30) + 3 * 4096 + 4096;
    let (head, tail) = (Rng(0xb16).bytes(4096), Rng(0x7a11).bytes(4096));
    for name in ["a", "b"] {
        use std::io::{Seek, SeekFrom, Write};
        let mut f = fs::File::create(root.join(name)).unwrap();
        f.write_all(&head).unwrap();
        f.seek(SeekFrom::Start(size - 4096)).unwrap();
        f.write_all(&tail).unwrap();
    }
    let out = dfdu(&["dedupe".as_ref(), "--json".as_ref(), root.as_os_str()]);
    let js = text(&out.stdout);
    assert!(out.status.success(), "{js}\n{}", text(&out.stderr));
    let report = &js[js.find("\"dedupe\":{").expect("a dedupe report")..];
    assert_eq!(json_num(report, "files"), Some(1), "{report}");
    assert_eq!(json_num(report, "ioctl_calls"), Some(2), "{report}");
    assert_eq!(json_num(report, "bytes_submitted"), Some(size), "{report}");
    assert_eq!(json_num(report, "bytes_deduplicated"), Some(size), "{report}");
    for name in ["a", "b"] {
        use std::io::{Read, Seek, SeekFrom};
        let mut f = fs::File::open(root.join(name)).unwrap();
        let (mut h, mut t) = (vec![0; 4096], vec![0; 4096]);
        f.read_exact(&mut h).unwrap();
        f.seek(SeekFrom::Start(size - 4096)).unwrap();
        f.read_exact(&mut t).unwrap();
        assert!(f.metadata().unwrap().len() == size && h == head && t == tail, "{name} changed");
    }
}

/// Files that cannot be read (btrfs finds a data block's checksum wrong: EIO) are named
/// in one message each, the run exits 1, and the other copies still form their groups:
/// one copy is damaged in its first block (the sample read fails), one of another group
/// in a block in the middle (the whole-file read fails).
#[test]
fn dupes_read_error_is_reported_on_btrfs() {
    if !need_root_and("mkfs.btrfs", "dupes_read_error_is_reported_on_btrfs") {
        return;
    }
    let fsys = match LoopFs::new("btrfs-eio") {
        Ok(f) => f,
        Err(e) => return skip(&format!("dupes_read_error_is_reported_on_btrfs: {e}")),
    };
    let root = fsys.mnt.join("t");
    let (head, middle) = (Rng(0xe10).bytes(100_000), Rng(0xe11).bytes(300_000));
    for name in ["a", "b", "c"] {
        write(&root.join(format!("head/{name}")), &head);
        write(&root.join(format!("middle/{name}")), &middle);
    }
    // Unmounted, one data block of one copy of each gets a byte flipped in the image.
    assert!(Command::new("umount").arg(&fsys.mnt).status().unwrap().success());
    for block in [&head[..4096], &middle[50 * 4096..51 * 4096]] {
        use std::io::{Read, Seek, SeekFrom, Write};
        let mut img = fs::OpenOptions::new().read(true).write(true).open(&fsys.image).unwrap();
        let mut chunk = vec![0u8; 1 << 20];
        let mut at = 0u64;
        let hit = loop {
            let n = img.read(&mut chunk).unwrap();
            assert!(n > 0, "the file's data is not in the image");
            let n = n - n % 4096;
            if let Some(b) = (0..n).step_by(4096).find(|&b| chunk[b..b + 64] == block[..64]) {
                break at + b as u64;
            }
            at += n as u64;
            img.seek(SeekFrom::Start(at)).unwrap();
        };
        img.seek(SeekFrom::Start(hit + 100)).unwrap();
        img.write_all(&[block[100] ^ 0xff]).unwrap();
    }
    let mounted = Command::new("mount").args(["-o", "loop"]).arg(&fsys.image).arg(&fsys.mnt).status().unwrap();
    assert!(mounted.success());
    let mut bad = Vec::new();
    let mut good = Groups::new();
    for dir in ["head", "middle"] {
        let (b, g): (Vec<PathBuf>, Vec<PathBuf>) =
            ["a", "b", "c"].iter().map(|n| root.join(dir).join(n)).partition(|p| fs::read(p).is_err());
        assert_eq!(b.len(), 1, "one copy in {dir} cannot be read");
        bad.extend(b);
        good.insert(g.iter().map(|p| pbytes(p)).collect());
    }
    let out = Command::new("timeout")
        .arg("20")
        .arg(dfdu_path())
        .args(["dupes".as_ref(), "--json".as_ref(), root.as_os_str()])
        .env("LC_ALL", "C")
        .output()
        .unwrap();
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    for p in &bad {
        let msg = format!(" dupes: cannot read {}: Input/output error\n", p.display());
        assert!(err.contains(&msg), "{err}");
    }
    assert_eq!(err.matches("cannot read").count(), 2, "{err}");
    let js = text(&out.stdout);
    assert_eq!(json_num(&js[js.find("\"summary\"").unwrap()..], "groups"), Some(2), "{js}");
    for g in &good {
        let paths: Vec<String> = g.iter().map(|p| format!("\"{}\"", String::from_utf8_lossy(p))).collect();
        assert!(js.contains(&format!("\"paths\":[{}]", paths.join(","))), "{js}");
    }
}

/// Files on a rotational device whose data is not in the page cache are read one device
/// at a time in disk order (a lane of their own), beside the cached rest: the same groups,
/// each file read once, as when everything is cached. The loop device of an ext4 image
/// says it is rotational; remounting the image empties the cache.
#[test]
fn dupes_uncached_files_on_a_rotational_disk() {
    if !need_root_and("mkfs.ext4", "dupes_uncached_files_on_a_rotational_disk") {
        return;
    }
    let fsys = match LoopFs::new("ext4-spin") {
        Ok(f) => f,
        Err(e) => return skip(&format!("dupes_uncached_files_on_a_rotational_disk: {e}")),
    };
    let root = fsys.mnt.join("t");
    let mut want = build(&root, 0x5eed_0008);
    let dev = fs::metadata(&root).unwrap().dev();
    let rotational = format!("/sys/dev/block/{}:{}/queue/rotational", dev >> 8 & 0xfff, dev & 0xff);
    if fs::read_to_string(&rotational).map(|s| s.trim() != "1").unwrap_or(true) {
        return skip(&format!("dupes_uncached_files_on_a_rotational_disk: {rotational} is not 1"));
    }
    // One more group with a member in the (cached) scratch directory.
    let scratch = Scratch::new("dupes-spin");
    let here = scratch.subdir("c").join("copy");
    let there = root.join("a/copy");
    let data = Rng(0x5b1).bytes(70_000);
    write(&here, &data);
    write(&there, &data);
    want.insert([pbytes(&there), pbytes(&here)].into());
    assert!(Command::new("umount").arg(&fsys.mnt).status().unwrap().success());
    let mounted = Command::new("mount").args(["-o", "loop"]).arg(&fsys.image).arg(&fsys.mnt).status().unwrap();
    assert!(mounted.success());
    let run = || {
        let out = dfdu(&["dupes".as_ref(), "-S".as_ref(), root.as_os_str(), here.as_os_str()]);
        assert!(out.status.success(), "{}", text(&out.stderr));
        (parse_groups(&out.stdout, true), text(&out.stderr))
    };
    let (cold, cold_err) = run();
    assert_eq!(cold, want, "\n--- got ---\n{}\n--- want ---\n{}", show(&cold), show(&want));
    let (warm, warm_err) = run();
    assert_eq!(warm, want);
    let reads = |err: &str| err[err.find("; read ").expect("a summary")..].split(';').nth(1).unwrap().to_string();
    assert_eq!(reads(&cold_err), reads(&warm_err), "{cold_err}{warm_err}");
}

fn check_cannot_share(kind: &str, dry_run_knows: bool) {
    let fsys = match LoopFs::new(kind) {
        Ok(f) => f,
        Err(e) => return skip(&format!("{kind} image: {e}")),
    };
    let mut rng = Rng(5);
    let data = rng.bytes(100_000);
    for i in 0..5 {
        write(&fsys.mnt.join(format!("t/{i}")), &data);
    }
    let root = fsys.mnt.join("t");
    let before: Vec<Kept> = walk(&root).iter().map(|p| kept(p)).collect();
    let runs: &[&[&str]] =
        if dry_run_knows { &[&["dedupe", "-q"], &["dedupe", "-q", "--dry-run"]] } else { &[&["dedupe", "-q"]] };
    for args in runs {
        let mut full: Vec<&std::ffi::OsStr> = args.iter().map(|s| s.as_ref()).collect();
        full.push(root.as_os_str());
        let out = dfdu(&full);
        assert_eq!(out.status.code(), Some(1), "{kind} {args:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(err.lines().count(), 1, "one message: {err}");
        assert!(err.contains("cannot share extents"), "{err}");
    }
    let after: Vec<Kept> = walk(&root).iter().map(|p| kept(p)).collect();
    assert_eq!(before, after);
}

// ------------------------------------------------------------------------------------------
// Help, messages, where the groups go, the summary and the progress line.

/// A small tree of two true groups: 3 copies of 1000 bytes and 2 of 5000, plus one file
/// of each size with other bytes; returns its root.
fn small_tree(scratch: &Scratch) -> PathBuf {
    let root = scratch.subdir("t");
    let mut rng = Rng(0x5a11);
    let (a, b) = (rng.bytes(1000), rng.bytes(5000));
    for (i, data) in [&a, &a, &a, &b, &b].iter().enumerate() {
        write(&root.join(format!("d{}/f{i}", i % 2)), data);
    }
    write(&root.join("u1000"), &rng.bytes(1000));
    write(&root.join("u5000"), &rng.bytes(5000));
    root
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

#[test]
fn dupes_and_dedupe_help_and_usage_errors() {
    let out = dfdu(&["dupes".as_ref(), "--help".as_ref()]);
    assert_eq!(out.status.code(), Some(0));
    assert!(text(&out.stdout).starts_with("Usage: dfdu dupes [OPTION]... PATH...\n"), "{}", text(&out.stdout));
    assert!(!text(&out.stdout).contains("--dry-run"));
    let out = dfdu(&["dedupe".as_ref(), "--help".as_ref()]);
    assert_eq!(out.status.code(), Some(0));
    assert!(text(&out.stdout).starts_with("Usage: dfdu dedupe [OPTION]... PATH...\n"), "{}", text(&out.stdout));
    assert!(text(&out.stdout).contains("--dry-run"));
    // --dry-run belongs to dedupe only; --json goes with neither -S nor -0.
    for args in [&["dupes", "--dry-run", "x"][..], &["dupes", "--json", "-S", "x"], &["dedupe", "-0", "--json", "x"]] {
        let full: Vec<&std::ffi::OsStr> = args.iter().map(|s| s.as_ref()).collect();
        let out = dfdu(&full);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        assert!(text(&out.stderr).contains(&format!(" {}: ", args[0])), "{args:?}: {}", text(&out.stderr));
        assert!(out.stdout.is_empty());
    }
    // Messages name the command.
    for cmd in ["dupes", "dedupe"] {
        let out = dfdu(&[cmd.as_ref(), "/nonexistent-dfdu-dir".as_ref()]);
        assert_eq!(out.status.code(), Some(1), "{cmd}");
        let err = text(&out.stderr);
        assert!(
            err.contains(&format!(" {cmd}: cannot access /nonexistent-dfdu-dir: No such file or directory\n")),
            "{err}"
        );
    }
}

/// `dedupe` prints the groups with --json, -S or -0, or without -q (`dupes` always): here
/// as a dry run on the scratch file system (on one that cannot share extents the run
/// ends with that message, after the groups).
#[test]
fn dedupe_prints_groups_only_when_asked() {
    let scratch = Scratch::new("dedupe-quiet");
    let root = small_tree(&scratch);
    let r = root.as_os_str();
    let dry = "--dry-run".as_ref();
    let plain = dfdu(&["dupes".as_ref(), r]);
    let groups = parse_groups(&plain.stdout, false);
    assert_eq!(groups.len(), 2);
    assert_eq!(plain.stdout, dfdu(&["dupes".as_ref(), "-q".as_ref(), r]).stdout, "dupes -q still lists");
    assert_eq!(plain.stdout, dfdu(&["dedupe".as_ref(), dry, r]).stdout, "dedupe without -q lists");
    assert_eq!(dfdu(&["dedupe".as_ref(), dry, "-q".as_ref(), r]).stdout, b"", "dedupe -q lists nothing");
    let s = dfdu(&["dedupe".as_ref(), dry, "-q".as_ref(), "-S".as_ref(), r]);
    assert_eq!(parse_groups(&s.stdout, true), groups);
    assert!(text(&s.stdout).starts_with("5000 bytes each:\n"), "{}", text(&s.stdout));
    let z = dfdu(&["dedupe".as_ref(), dry, "-q".as_ref(), "-0".as_ref(), r]);
    assert_eq!(z.stdout, plain.stdout.iter().map(|&b| if b == b'\n' { 0 } else { b }).collect::<Vec<u8>>());
    let j = dfdu(&["dedupe".as_ref(), dry, "-q".as_ref(), "--json".as_ref(), r]);
    let js = text(&j.stdout);
    assert!(js.starts_with("{\"version\":1,\"command\":\"dedupe\""), "{js}");
    assert_eq!(json_num(&js, "duplicate_files"), Some(3));
}

/// Output that cannot be written is an error (exit 1, one message); a closed pipe is not
/// (the reader has seen what it wanted).
#[test]
fn dupes_write_error_is_reported() {
    let scratch = Scratch::new("dupes-write-error");
    let root = small_tree(&scratch);
    for json in [false, true] {
        let mut c = Command::new(dfdu_path());
        c.arg("dupes").args(json.then_some("--json")).arg(&root).env("LC_ALL", "C");
        let out = c.stdout(fs::File::create("/dev/full").unwrap()).output().unwrap();
        assert_eq!(out.status.code(), Some(1), "json {json}");
        let err = text(&out.stderr);
        assert!(err.contains(" dupes: write error: No space left on device"), "json {json}: {err}");
        // A pipe closed before anything was written.
        let mut c = Command::new(dfdu_path());
        c.arg("dupes").args(json.then_some("--json")).arg(&root).env("LC_ALL", "C");
        let (reader, writer) = std::io::pipe().unwrap();
        drop(reader);
        let out = c.stdout(writer).output().unwrap();
        // dfdu restores SIGPIPE's default action (as GNU tools run): killed by it, or
        // where it is ignored, a quiet exit.
        use std::os::unix::process::ExitStatusExt;
        assert!(out.status.code() == Some(0) || out.status.signal() == Some(13), "json {json}: {:?}", out.status);
        assert!(!text(&out.stderr).contains("write error"), "json {json}: {}", text(&out.stderr));
    }
}

/// The summary on standard error: groups, duplicate files and bytes of the true groups
/// (`-q` and `--json` leave it out).
#[test]
fn dupes_summary_line_on_stderr() {
    let scratch = Scratch::new("dupes-summary");
    let root = small_tree(&scratch);
    let out = dfdu(&["dupes".as_ref(), root.as_os_str()]);
    let err = text(&out.stderr);
    let want = "dupes: 2 groups, 3 duplicate files, 7000 bytes (6.9K) in duplicates, ";
    assert!(err.contains(want) && err.lines().count() == 1, "{err}");
    assert!(err.contains("; read 7 files, "), "{err}");
    for flag in ["-q", "--json"] {
        let out = dfdu(&["dupes".as_ref(), flag.as_ref(), root.as_os_str()]);
        assert_eq!(out.stderr, b"", "{flag}");
    }
}

/// The JSON document read by python3's json module: names with quotes, backslashes,
/// control characters and bytes that are not UTF-8 (shown as U+FFFD).
#[test]
fn dupes_json_read_by_python() {
    if !have("python3") {
        return skip("python3 is not installed: dupes_json_read_by_python");
    }
    let scratch = Scratch::new("dupes-json-names");
    let root = scratch.subdir("t");
    let names: [&[u8]; 6] = [b"q\"uote", b"back\\slash", b"tab\there", b"ctl\x01\x1f", b"del\x7f", b"bad\xff"];
    for n in names {
        fs::write(root.join(std::ffi::OsStr::from_bytes(n)), b"the same bytes").unwrap();
    }
    let out = dfdu(&["dupes".as_ref(), "--json".as_ref(), root.as_os_str()]);
    assert!(out.status.success());
    let script = "import json,sys\nd=json.load(sys.stdin)\nfor g in d['groups']:\n    \
                  for p in g['paths']: print(repr(p))\nprint(d['summary']['groups'], d['summary']['duplicate_files'])";
    let mut child = Command::new("python3")
        .args(["-c", script])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    std::io::Write::write_all(&mut child.stdin.take().unwrap(), &out.stdout).unwrap();
    let py = child.wait_with_output().unwrap();
    assert!(py.status.success(), "python3 rejected the JSON: {}\n{}", text(&py.stderr), text(&out.stdout));
    let mut want: Vec<String> = names
        .iter()
        .map(|n| {
            let mut p = pbytes(&root);
            p.push(b'/');
            p.extend_from_slice(n);
            let s = String::from_utf8_lossy(&p).into_owned();
            // Python's repr of the same string.
            let esc: String = s
                .chars()
                .map(|c| match c {
                    '\\' => "\\\\".to_string(),
                    '\'' => "\\'".to_string(),
                    '\t' => "\\t".to_string(),
                    c if (c as u32) < 0x20 || c == '\x7f' => format!("\\x{:02x}", c as u32),
                    c => c.to_string(),
                })
                .collect();
            format!("'{esc}'")
        })
        .collect();
    want.sort_by(|a, b| a.as_bytes().cmp(b.as_bytes()));
    let got = text(&py.stdout);
    let mut lines: Vec<&str> = got.lines().collect();
    assert_eq!(lines.pop(), Some("1 5"), "{got}");
    let mut lines: Vec<String> = lines.iter().map(|s| s.to_string()).collect();
    lines.sort_by(|a, b| a.as_bytes().cmp(b.as_bytes()));
    assert_eq!(lines, want);
}

/// Runs `dfdu ARGS` under `script` (a pseudo-terminal for all three streams); returns
/// what the terminal showed.
fn on_terminal(args: &str) -> String {
    let cmd = format!("LC_ALL=C '{}' {args}", dfdu_path().display());
    let out = Command::new("script").args(["-qfec", &cmd, "/dev/null"]).output().expect("run script");
    assert!(out.status.success(), "{cmd}: {:?} {}", out.status, text(&out.stderr));
    text(&out.stdout)
}

/// The run time from the summary line's last field ("; 0.52 s").
fn summary_seconds(err: &str) -> f64 {
    let line = err.lines().rev().find(|l| l.contains(" groups, ")).expect("a summary line");
    let (_, t) = line.rsplit_once("; ").unwrap();
    t.trim_end().strip_suffix(" s").unwrap().parse().unwrap()
}

/// The progress line ("reading: 2/4 files, 185M read", redrawn every 200 ms) shows on a
/// terminal, and neither with -q nor when standard error is not a terminal. The tree is
/// two identical sparse files (nothing on disk, all of it read and hashed), made larger
/// until each run takes long enough for a line to be drawn (over 0.45 s with the line,
/// over 0.3 s for the two without).
#[test]
fn dupes_progress_line_only_on_a_terminal() {
    if !have("script") {
        return skip("script (util-linux) is not installed: dupes_progress_line_only_on_a_terminal");
    }
    let scratch = Scratch::new("dupes-progress");
    let root = scratch.subdir("t");
    let quoted = format!("'{}'", root.display());
    let mut size: u64 = 256 << 20;
    loop {
        assert!(size <= 4 << 30, "runs on two sparse files of 4 GiB are still too short to tell");
        for name in ["a", "b"] {
            fs::File::create(root.join(name)).unwrap().set_len(size).unwrap();
        }
        let shown = on_terminal(&format!("dupes {quoted}"));
        let seconds = summary_seconds(&shown);
        if shown.contains("\r\x1b[Kreading: ") {
            assert!(shown.contains(" files, ") && shown.contains(" read ("), "{shown:?}");
            // The line is cleared before the groups are printed.
            assert!(shown.contains(&format!("\r\x1b[K{}/a\r\n", root.display())), "{shown:?}");
        } else {
            assert!(seconds < 0.45, "no progress line in a run of {seconds} s: {shown:?}");
        }
        // Nothing with -q, nor with standard error on a pipe.
        let t = std::time::Instant::now();
        let quiet = on_terminal(&format!("dupes -q {quoted}"));
        let quiet_seconds = t.elapsed().as_secs_f64();
        assert!(!quiet.contains("reading:") && !quiet.contains('\x1b'), "{quiet:?}");
        let piped = dfdu(&["dupes".as_ref(), root.as_os_str()]);
        let err = text(&piped.stderr);
        assert!(!err.contains("reading:") && !err.contains('\x1b'), "{err:?}");
        if seconds >= 0.45 && quiet_seconds >= 0.3 && summary_seconds(&err) >= 0.3 {
            notice(&format!("dupes_progress_line_only_on_a_terminal: two files of {} MiB", size >> 20));
            break;
        }
        size *= 2;
    }
}
