//! `dfdu dupes` on trees built at test time (helpers in `tests/common/dupes.rs`; the
//! loop-mounted file systems are in `tests/dedupe.rs`).
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
//! * What each stage reads, as the summary counts it; unreadable directories as `nobody`,
//!   path for path where GNU du complains.
//! * `--hashfile`: a rerun reads no file data (strace counts the bytes every `read`
//!   returned) and gives the same groups; damaged hash files never crash and never change
//!   the answer; the lock, a file replaced while waiting for it, merged runs.
//! * Help, usage errors, where the groups go (`dedupe -q`), write errors, the summary
//!   line, the JSON read by python3, the progress line on a terminal (`script`).

mod common;

use common::dupes::*;
use common::{dfdu_path, is_root, json_num, notice, Scratch};
use std::collections::BTreeSet;
use std::fs;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

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
    assert_eq!(json_num(summary, "files_read"), Some(2 + 2 + 2 + 3 + 2), "{js}");
    assert_eq!(json_num(summary, "reads"), Some(2 + 2 + 4 + 5 + 2), "{js}");
    let sample = 2 * 4096;
    let want = 2 * sample + 2 * sample + 2 * (sample + 100_001) + 3 * sample + 2 * 100_002 + 2 * 1000;
    assert_eq!(json_num(summary, "bytes_read"), Some(want), "{js}");
    assert_eq!(json_num(summary, "extra_links"), Some(3), "{js}");
}

/// Run as `nobody`: a directory it cannot open and one it can list but not enter are
/// reported, path for path, where GNU du (the reference, also as nobody) complains (also
/// for the latter given with a trailing slash); the run exits 1 and still lists the group
/// it could read.
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
    // The directory it can list but not enter, given with a trailing slash.
    let mut slashed = root.join("noexec").into_os_string();
    slashed.push("/");
    let out2 = as_nobody(&bin, &["dupes".as_ref(), &slashed]);
    let du2 = as_nobody(Path::new("du"), &[&slashed]);
    let scan = as_nobody(&bin, &["scan".as_ref(), "-q".as_ref(), root.as_os_str()]);
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
    let (got2, want2) = (complaints(&out2.stderr), complaints(&du2.stderr));
    assert_eq!(got2.len(), 2, "{}", text(&out2.stderr));
    assert_eq!(got2, want2, "dfdu:\n{}du:\n{}", text(&out2.stderr), text(&du2.stderr));
    // Issue 24, item 15: the lines themselves are scan's (one function words and quotes
    // them both), the subcommand aside.
    let cannot = |err: &[u8], cmd: &str| -> Vec<String> {
        let mut v: Vec<String> =
            text(err).lines().filter(|l| l.contains(" cannot ")).map(|l| l.replacen(cmd, "CMD", 1)).collect();
        v.sort();
        v
    };
    assert_eq!(cannot(&out.stderr, " dupes: "), cannot(&scan.stderr, " scan: "), "dupes, then scan");
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

/// A hash file in the layout of `src/dupes/cache.rs` with `version` in its header and a
/// valid checksum, claiming that every file in `files` (one device) has the same
/// contents: a lie that only a trusted file can make `dupes` repeat.
fn forged_hashfile(version: u32, files: &[PathBuf]) -> Vec<u8> {
    let mut meta: Vec<fs::Metadata> = files.iter().map(|p| fs::metadata(p).unwrap()).collect();
    meta.sort_by_key(|m| m.ino());
    let ns = |s: i64, n: i64| s * 1_000_000_000 + n;
    let mut out = b"DFDUHASH".to_vec();
    for v in [version, 64, 1, 0] {
        out.extend_from_slice(&v.to_le_bytes());
    }
    out.extend_from_slice(&(meta.len() as u64).to_le_bytes());
    out.extend_from_slice(&meta[0].dev().to_le_bytes());
    out.extend_from_slice(&(meta.len() as u64).to_le_bytes());
    for m in &meta {
        for v in [m.ino(), m.size(), ns(m.mtime(), m.mtime_nsec()) as u64, ns(m.ctime(), m.ctime_nsec()) as u64] {
            out.extend_from_slice(&v.to_le_bytes());
        }
        out.extend_from_slice(&0x5a5a_5a5au64.to_le_bytes());
        out.extend_from_slice(&[0x77; 24]);
    }
    let sum = blake3::hash(&out);
    out.extend_from_slice(sum.as_bytes());
    out
}

/// Issue 25: a hash file of another version — older or newer — with a valid checksum is
/// refused as unusable before anything in it is believed. The same file marked version 1
/// is believed (the lie shows as a group), so the version field alone is what differs.
#[test]
fn hashfile_of_another_version_is_refused_though_its_checksum_is_valid() {
    let scratch = Scratch::new("dupes-cache-version");
    let dir = scratch.subdir("t");
    let mut rng = Rng(0x7e25);
    let files = [dir.join("x"), dir.join("y")];
    for f in &files {
        write(f, &rng.bytes(8000));
    }
    let cache = scratch.dir.join("hashes");
    let run = |version: u32| {
        fs::write(&cache, forged_hashfile(version, &files)).unwrap();
        fs::set_permissions(&cache, std::os::unix::fs::PermissionsExt::from_mode(0o600)).unwrap();
        let out = dfdu(&["dupes".as_ref(), "--hashfile".as_ref(), cache.as_os_str(), dir.as_os_str()]);
        assert_eq!(out.status.code(), Some(0), "version {version}: {}", text(&out.stderr));
        (parse_groups(&out.stdout, false), text(&out.stderr))
    };
    let (groups, err) = run(1);
    assert_eq!(groups.len(), 1, "version 1 is trusted, so its lie is repeated: {err}");
    // 2 is the current version (block entries after the records); 3 is unknown.
    for version in [0, 3, 1 << 8, 1 << 24] {
        let (groups, err) = run(version);
        assert!(groups.is_empty(), "version {version} was believed: {}", show(&groups));
        assert!(err.contains("unusable (unknown version)"), "version {version}: {err}");
        assert!(cache_is_valid(&cache), "version {version}: a new hash file is written");
    }
}

/// A file changed after the first run is read again by the second, whose entry for it
/// replaces the stale one: a third run reads nothing.
#[test]
fn hashfile_keeps_the_newer_entry_of_a_changed_file() {
    let scratch = Scratch::new("dupes-cache-changed");
    let dir = scratch.subdir("t");
    let mut rng = Rng(0xc4a6);
    let (x, y) = (rng.bytes(6000), rng.bytes(6000));
    for (name, data) in [("a", &x), ("b", &x), ("c", &y), ("d", &y)] {
        write(&dir.join(name), data);
    }
    let cache = scratch.dir.join("hashes");
    let run = || {
        let out =
            dfdu(&["dupes".as_ref(), "--json".as_ref(), "--hashfile".as_ref(), cache.as_os_str(), dir.as_os_str()]);
        assert!(out.status.success() && out.stderr.is_empty(), "{}", text(&out.stderr));
        let js = text(&out.stdout);
        js[js.find("\"summary\"").expect("a summary")..].to_string()
    };
    assert_eq!(json_num(&run(), "groups"), Some(2));
    write(&dir.join("c"), &rng.bytes(6000));
    let second = run();
    assert_eq!(json_num(&second, "groups"), Some(1), "{second}");
    assert_eq!(json_num(&second, "cache_hits"), Some(3), "c changed: {second}");
    let third = run();
    assert_eq!(json_num(&third, "bytes_read"), Some(0), "{third}");
    assert_eq!(json_num(&third, "cache_hits"), Some(4), "{third}");
}

/// Files up to 64 KiB are read whole at the sample stage, which gives their full hash: a
/// pair of exactly 64 KiB is read once each, and no second stage reads it again.
#[test]
fn dupes_reads_files_of_exactly_64_kib_whole_once() {
    let scratch = Scratch::new("dupes-64k");
    let root = scratch.subdir("t");
    let data = Rng(0x64).bytes(65536);
    write(&root.join("a"), &data);
    write(&root.join("b"), &data);
    let out = dfdu(&["dupes".as_ref(), "--json".as_ref(), root.as_os_str()]);
    let js = text(&out.stdout);
    let summary = &js[js.find("\"summary\"").expect("a summary")..];
    assert_eq!(json_num(summary, "groups"), Some(1), "{js}");
    assert_eq!(json_num(summary, "files_read"), Some(2), "{js}");
    assert_eq!(json_num(summary, "bytes_read"), Some(2 * 65536), "{js}");
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
// Help, messages, where the groups go, the summary and the progress line.

#[test]
fn dupes_and_dedupe_help_and_usage_errors() {
    let out = dfdu(&["dupes".as_ref(), "--help".as_ref()]);
    assert_eq!(out.status.code(), Some(0));
    assert!(text(&out.stdout).starts_with("Usage: dfdu dupes [OPTION]... PATH...\n"), "{}", text(&out.stdout));
    // dupes' --dry-run is one of its actions' options (issue 30).
    let help = text(&out.stdout);
    assert!(!help[..help.find("\nActing on the groups").unwrap()].contains("--dry-run"));
    let out = dfdu(&["dedupe".as_ref(), "--help".as_ref()]);
    assert_eq!(out.status.code(), Some(0));
    assert!(text(&out.stdout).starts_with("Usage: dfdu dedupe [OPTION]... PATH...\n"), "{}", text(&out.stdout));
    assert!(text(&out.stdout).contains("--dry-run"));
    // dupes' --dry-run needs an action; --json goes with neither -S nor -0.
    for args in [&["dupes", "--dry-run", "x"][..], &["dupes", "--json", "-S", "x"], &["dedupe", "-0", "--json", "x"]] {
        let full: Vec<&std::ffi::OsStr> = args.iter().map(|s| s.as_ref()).collect();
        let out = dfdu(&full);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        assert!(text(&out.stderr).contains(&format!(" {}: ", args[0])), "{args:?}: {}", text(&out.stderr));
        assert!(out.stdout.is_empty());
    }
    // Messages name the command, and quote the path as GNU du and `dfdu scan` do.
    for cmd in ["dupes", "dedupe"] {
        let out = dfdu(&[cmd.as_ref(), "/nonexistent-dfdu-dir".as_ref()]);
        assert_eq!(out.status.code(), Some(1), "{cmd}");
        let err = text(&out.stderr);
        assert!(
            err.contains(&format!(" {cmd}: cannot access '/nonexistent-dfdu-dir': No such file or directory\n")),
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
    // Issue 24, item 15: the "format" key the other reports have (scan, diff).
    assert!(js.starts_with("{\"format\":\"dfdu-dupes-report\",\"version\":1,\"command\":\"dedupe\""), "{js}");
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
        // Issue 24, item 15: without Rust's "(os error 28)".
        assert!(err.ends_with(" dupes: write error: No space left on device\n"), "json {json}: {err}");
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
    // Issue 24, item 15: two files too large to be read whole at the sample stage are read
    // twice each (the sample, then all of it): "read 4 files" counted reads. Files, then
    // reads where they differ; JSON has both.
    let big = scratch.subdir("big");
    let data = Rng(0xb16).bytes(100_000);
    write(&big.join("a"), &data);
    write(&big.join("b"), &data);
    let err = text(&dfdu(&["dupes".as_ref(), big.as_os_str()]).stderr);
    assert!(err.contains("; read 2 files in 4 reads, 216384 bytes; "), "{err}");
    let js = text(&dfdu(&["dupes".as_ref(), "--json".as_ref(), big.as_os_str()]).stdout);
    assert_eq!((json_num(&js, "files_read"), json_num(&js, "reads")), (Some(2), Some(4)), "{js}");
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

/// Paths are printed as the root was given, joined with one slash: a relative root, one
/// with a trailing slash, and a file argument.
#[test]
fn dupes_paths_joined_from_the_root_as_given() {
    let scratch = Scratch::new("dupes-paths");
    let root = small_tree(&scratch);
    // A pair right under the root.
    write(&root.join("r1"), &[9; 300]);
    write(&root.join("r2"), &[9; 300]);
    let run = |args: &[&str]| {
        let out = Command::new(dfdu_path()).arg("dupes").args(args).current_dir(&scratch.dir).output().unwrap();
        assert!(out.status.success(), "{args:?}: {}", text(&out.stderr));
        text(&out.stdout)
    };
    // By bytes wasted: the 5000-byte pair, the 1000-byte triple, the 300-byte pair.
    let want = "t/d0/f4\nt/d1/f3\n\nt/d0/f0\nt/d0/f2\nt/d1/f1\n\nt/r1\nt/r2\n\n";
    assert_eq!(run(&["t"]), want);
    assert_eq!(run(&["t/"]), want);
    assert_eq!(run(&["t//"]), want.replace("t/", "t//"));
    assert_eq!(run(&["t/d0/f4", "t/d1"]), "t/d0/f4\nt/d1/f3\n\n");
    assert_eq!(run(&["t/r2", "t/r1"]), "t/r1\nt/r2\n\n");
}

/// Runs `dfdu ARGS` under `script` (a pseudo-terminal for all three streams); returns
/// what the terminal showed.
fn on_terminal(args: &str) -> String {
    let cmd = format!("LC_ALL=C '{}' {args}", dfdu_path().display());
    let out = Command::new("script").args(["-qfec", &cmd, "/dev/null"]).output().expect("run script");
    assert!(out.status.success(), "{cmd}: {:?} {}", out.status, text(&out.stderr));
    text(&out.stdout)
}

/// Issue 24, item 9: on a terminal, dupes wrote names raw: one holding ESC ] 0 ; title
/// BEL set the terminal's title, ESC [ 2 J cleared the screen, and a newline made two
/// paths. On a pseudo-terminal (`script`) each path must be shown as `ls -1d` shows it
/// there (GNU ls, shell-escape quoting), with no ESC byte on the screen; through a pipe
/// the names stay as they are (fdupes format).
#[test]
fn dupes_quotes_names_on_a_terminal_as_ls_does() {
    if !have("script") || !have("ls") {
        return skip("script (util-linux) or ls is not installed: dupes_quotes_names_on_a_terminal_as_ls_does");
    }
    let scratch = Scratch::new("dupes-tty-names");
    let root = scratch.subdir("t");
    let names: [&[u8]; 5] = [b"plain", b"a b", b"x\ny", b"t\x1b]0;title\x07\x1b[2Jz", b"it's"];
    for n in names {
        fs::write(root.join(std::ffi::OsStr::from_bytes(n)), b"the same bytes").unwrap();
    }
    let quoted_root = format!("'{}'", root.display());
    let shown = on_terminal(&format!("dupes -q {quoted_root}"));
    assert!(!shown.contains('\x1b') && !shown.contains('\x07'), "a raw escape reached the terminal: {shown:?}");
    let mut got: Vec<&str> = shown.split("\r\n").filter(|l| !l.is_empty()).collect();
    // ls on the same terminal, every path as dfdu joins it (ROOT/NAME).
    let mut ls = String::from("env -u QUOTING_STYLE ls -1d");
    for n in names {
        let p = root.join(std::ffi::OsStr::from_bytes(n));
        ls.push_str(&format!(" \"$(printf '{}')\"", escape_for_printf(p.as_os_str().as_bytes())));
    }
    let cmd = format!("LC_ALL=C {ls}");
    let out = Command::new("script").args(["-qfec", &cmd, "/dev/null"]).output().expect("run script");
    let reference = text(&out.stdout);
    let mut want: Vec<&str> = reference.split("\r\n").filter(|l| !l.is_empty()).collect();
    got.sort();
    want.sort();
    assert_eq!(want.len(), names.len(), "ls showed: {reference:?}");
    assert_eq!(got, want, "dfdu dupes, then ls -1d, on a terminal");
    // Piped: the bytes of the names, one per line.
    let piped = dfdu(&["dupes".as_ref(), root.as_os_str()]);
    let raw = pbytes(&root.join(std::ffi::OsStr::from_bytes(names[3])));
    assert!(piped.stdout.windows(raw.len()).any(|w| w == raw), "{}", text(&piped.stdout));
}

/// `bytes` as a printf(1) format that prints them: every byte as an octal escape.
fn escape_for_printf(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("\\{b:03o}")).collect()
}

/// The run time from the summary line's last field ("; 0.52 s").
fn summary_seconds(err: &str) -> f64 {
    let line = err.lines().rev().find(|l| l.contains(" duplicate file")).expect("a summary line");
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

// ---- threads that cannot start ------------------------------------------------------------

/// Issue 24, item 8: `prlimit --as=400M dfdu dupes DIR` panicked ("failed to spawn
/// thread", exit 134), and with `-j 64` under tighter limits the threads' stacks and
/// malloc arenas left no room for the rest ("memory allocation failed"). Under each limit
/// (one at which a thread's stack cannot be mapped, up to the issue's) the run must give
/// the unlimited run's groups, exit 0 and print no panic, for `dupes` and `dedupe
/// --dry-run` alike; three runs each, since how many threads start varies.
#[test]
fn dupes_and_dedupe_run_where_threads_cannot_start() {
    if !have_or_skip("prlimit", "dupes_and_dedupe_run_where_threads_cannot_start") {
        return;
    }
    let scratch = Scratch::new("dupes-address-space");
    let root = scratch.subdir("t");
    let want = build(&root, 0x5eed_0024);
    let plain = dfdu(&["dupes".as_ref(), "-q".as_ref(), root.as_os_str()]);
    assert_eq!(parse_groups(&plain.stdout, false), want);
    for limit_mib in [24, 400] {
        for cmd in [&["dupes", "-q"][..], &["dedupe", "--dry-run", "-S"][..]] {
            for _ in 0..3 {
                let out = Command::new("prlimit")
                    .arg(format!("--as={}", limit_mib << 20))
                    .arg(dfdu_path())
                    .args(cmd)
                    .args(["-j", "64"])
                    .arg(&root)
                    .env("LC_ALL", "C")
                    .output()
                    .unwrap();
                let err = text(&out.stderr);
                let what = format!("{cmd:?} -j 64 under --as={limit_mib}M");
                let aborted = ["panicked", "memory allocation", "fatal runtime error"].iter().any(|w| err.contains(w));
                assert!(!aborted, "{what}: {err}");
                if cmd[0] == "dupes" {
                    assert_eq!(out.status.code(), Some(0), "{what}: {err}");
                    assert_eq!(out.stdout, plain.stdout, "{what}");
                } else {
                    // tmpfs or ext4 cannot share extents: status 1, the groups all the same.
                    assert!(matches!(out.status.code(), Some(0 | 1)), "{what}: {:?} {err}", out.status);
                    assert_eq!(parse_groups(&out.stdout, true), want, "{what}");
                }
            }
        }
    }
}

/// Issue 24, item 8, the other way a thread cannot start: no thread at all may be created
/// (`RLIMIT_NPROC` of 1 for a user, here nobody, with no other process), so `dupes` runs
/// every stage on the calling thread. Before, the first pool of readers panicked.
#[test]
fn dupes_runs_on_one_thread_when_none_can_be_created() {
    use std::os::unix::process::CommandExt;
    if !is_root() {
        return skip("dupes_runs_on_one_thread_when_none_can_be_created: needs root to run as nobody");
    }
    if !have_or_skip("prlimit", "dupes_runs_on_one_thread_when_none_can_be_created") {
        return;
    }
    let scratch = Scratch::new("dupes-nproc");
    if !common::reachable_by_others(&scratch.dir) {
        return skip(
            "dupes_runs_on_one_thread_when_none_can_be_created: the scratch directory is not reachable by nobody",
        );
    }
    let root = scratch.subdir("t");
    let want = build(&root, 0x5eed_0025);
    let bin = common::copy_executable(&dfdu_path(), &scratch.subdir("bin"), "dfdu");
    for threads in ["1", "8"] {
        let out = Command::new("prlimit")
            .args(["--nproc=1:1"])
            .arg(&bin)
            .args(["dupes", "-j", threads])
            .arg(&root)
            .env("LC_ALL", "C")
            .uid(65534)
            .gid(65534)
            .output()
            .unwrap();
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "-j {threads}: {err}");
        assert!(!err.contains("panicked"), "-j {threads}: {err}");
        assert_eq!(parse_groups(&out.stdout, false), want, "-j {threads}: {err}");
    }
}

// ---- reads that fail or are interrupted (strace injects the fault) ----------------------

/// `dfdu dupes ROOT` under strace with `inject` (a fault injected into the matching reads
/// of ROOT's files), cut off after 60 s: a retry loop shows as a timeout (status 124).
fn dupes_with_read_faults(root: &Path, inject: &str) -> Output {
    // Only reads of the tree's files (-P: strace follows each descriptor to its path),
    // not the dynamic loader's or /sys.
    let mut cmd = Command::new("timeout");
    cmd.args(["60", "strace", "-f", "-qq", "-o", "/dev/null", "-e", "trace=read", "-e"]);
    cmd.arg(format!("inject=read:{inject}"));
    for p in walk(root) {
        if fs::symlink_metadata(&p).is_ok_and(|m| m.is_file()) {
            cmd.arg("-P").arg(p);
        }
    }
    cmd.arg(dfdu_path()).arg("dupes").arg(root).env("LC_ALL", "C").output().expect("run strace")
}

/// A read interrupted by a signal (EINTR: NFS, FUSE) is retried, so the groups are the
/// same; a read that fails (EIO) is one message per file, the run ends with status 1 and
/// no group is made of a file that could not be read.
#[test]
fn dupes_retries_interrupted_reads_and_reports_failed_ones() {
    if !have("strace") {
        return skip("dupes read faults: strace is not installed");
    }
    let scratch = Scratch::new("dupes-read-faults");
    let root = scratch.subdir("t");
    let want = build(&root, 0x5eed_0007);
    let out = dupes_with_read_faults(&root, "error=EINTR:when=1+2");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert_eq!(parse_groups(&out.stdout, false), want, "{err}");
    let out = dupes_with_read_faults(&root, "error=EIO");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(out.stdout.is_empty(), "no file could be read, so no group: {}", String::from_utf8_lossy(&out.stdout));
    let failed = err.lines().filter(|l| l.contains("cannot read") && l.ends_with("Input/output error")).count();
    let candidates: usize = want.iter().map(BTreeSet::len).sum();
    assert!(failed >= candidates, "{failed} read errors for {candidates} group members:\n{err}");
}

// ---- directories swapped for symlinks between the scan and the reads (issue 24, 4) -------

/// The owner of two directories of the tree swaps them for symlinks while dfdu is held
/// between the scan and the reads (strace delays its first `preadv2`, the page-cache
/// probe that comes after the first file's open): one to a directory outside the tree
/// holding root-only files of the same names and sizes, one to `/dev`, where its files'
/// names are device nodes. As root, the directories belong to `nobody`, and in a third one
/// the files themselves are replaced by a FIFO and a device node (`/dev/zero`'s numbers).
/// dfdu must open none of them to read (no descriptor of the `strace -y` log reaches the
/// outside, and those that reach the FIFO or the node are `O_PATH` handles, never read),
/// count them as changed, and report only the untouched group. Before the fix the files
/// were reopened by path: both symlinks were followed.
#[test]
fn dupes_never_follows_a_directory_swapped_for_a_symlink_after_the_scan() {
    if !have_or_skip("strace", "dupes_never_follows_a_directory_swapped_for_a_symlink_after_the_scan") {
        return;
    }
    let scratch = Scratch::new("dupes-swap");
    let root = scratch.subdir("t");
    let secret = scratch.subdir("secret");
    // Sizes in this order: the group that stays (a) is probed first, before the hold.
    let (a, s1, s2, s3) = (vec![b'a'; 5000], vec![b's'; 6000], vec![b'z'; 7000], vec![b'n'; 8000]);
    let dirs =
        [("a", ["x1", "x2"], &a), ("v1", ["y1", "y2"], &s1), ("v2", ["zero", "full"], &s2), ("v3", ["f1", "f2"], &s3)];
    for (dir, names, data) in dirs {
        for n in names {
            write(&root.join(dir).join(n), data);
        }
    }
    let root_run = is_root();
    if root_run {
        for d in ["v1", "v2", "v3"] {
            assert!(Command::new("chown").args(["-R", "65534:65534"]).arg(root.join(d)).status().unwrap().success());
        }
    } else {
        notice("SKIP (part): dupes swap test: not root, so no directory of another owner and no device node");
    }
    for n in ["y1", "y2"] {
        write(
            &secret.join(n),
            b"root's secret, the same size as the file it stands in for".repeat(200)[..6000].as_ref(),
        );
        let _ = fs::set_permissions(secret.join(n), std::os::unix::fs::PermissionsExt::from_mode(0o600));
    }
    let log = scratch.dir.join("strace.log");
    // One reader (-j 1): no strace line is split between threads.
    let args = ["dupes".as_ref(), "-j".as_ref(), "1".as_ref(), root.as_os_str()];
    let (out, log) = run_held(&args, "openat,open,read,pread64", "preadv2", &log, || {
        swap_for_symlink(&root.join("v1"), &scratch.dir.join("v1-moved"), &secret);
        swap_for_symlink(&root.join("v2"), &scratch.dir.join("v2-moved"), Path::new("/dev"));
        if root_run {
            let v3 = root.join("v3");
            fs::rename(v3.join("f1"), scratch.dir.join("f1-kept")).unwrap();
            fs::rename(v3.join("f2"), scratch.dir.join("f2-kept")).unwrap();
            assert!(Command::new("mkfifo").arg(v3.join("f1")).status().unwrap().success());
            assert!(Command::new("mknod").arg(v3.join("f2")).args(["c", "1", "5"]).status().unwrap().success());
        }
    });
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "{err}");
    let want: Groups = [[root.join("a/x1"), root.join("a/x2")].iter().map(|p| pbytes(p)).collect()].into();
    assert_eq!(parse_groups(&out.stdout, false), want, "{err}");
    let changed = if root_run { 6 } else { 4 };
    assert!(err.contains(&format!("; {changed} files changed while read (skipped)")), "{err}");
    let outside = [secret.clone(), PathBuf::from("/dev/zero"), PathBuf::from("/dev/full")];
    let mut hits: Vec<&str> = outside.iter().flat_map(|p| lines_reaching(&log, p)).collect();
    let swapped_in = [root.join("v3/f1"), root.join("v3/f2")];
    hits.extend(swapped_in.iter().flat_map(|p| lines_reaching(&log, p)).filter(|l| !l.contains("O_PATH")));
    assert!(hits.is_empty(), "dfdu reached files outside the tree or swapped in:\n{}", hits.join("\n"));
}
