//! `--exclude-caches` and `--exclude-kernfs` (issue 29.4) for `scan`, `diff` and `dupes`
//! (`browse` is in `tests/browse_tmux.rs`). The references: GNU du with `--exclude` of
//! exactly the directories that must go, and Debian's ncdu with `--exclude-caches`.
//!
//! * A valid `CACHEDIR.TAG` (the specification's signature at its start) excludes its
//!   directory; a tag with a wrong signature does not, nor a tag that is a symlink (dfdu
//!   never follows a link under the scanned root; ncdu 1.18 does).
//! * Mounts of proc and sysfs are left out as excluded, a tmpfs is not (root only: it
//!   mounts them under the test's scratch directory, and SKIPs otherwise).

mod common;

use common::{is_root, Scratch};
use std::path::Path;
use std::process::Command;

const SIGNATURE: &[u8] = b"Signature: 8a477f597d28d172789f06886806bc55";

fn write(p: &Path, bytes: &[u8]) {
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(p, bytes).unwrap();
}

/// Bytes that no file system stores sparse or compressed, different per `seed`.
fn noise(n: usize, seed: u64) -> Vec<u8> {
    let mut x = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect()
}

fn run(cmd: &mut Command) -> String {
    String::from_utf8_lossy(&common::run_ok(cmd).stdout).into_owned()
}

fn dfdu(args: &[&str], path: &Path) -> String {
    run(Command::new(common::dfdu_path()).args(args).arg(path))
}

/// GNU du's `-sB1` of `path` with `--exclude` of each of `left_out`.
fn du_without(path: &Path, left_out: &[&str]) -> u64 {
    let excludes: Vec<String> = left_out.iter().map(|d| format!("--exclude={d}")).collect();
    let out = run(Command::new("du").arg("-sB1").args(&excludes).arg(path));
    out.split_whitespace().next().unwrap().parse().unwrap()
}

/// The `disk usage` figure of `dfdu scan -b`.
fn scan_disk(out: &str) -> u64 {
    let line = out.lines().find(|l| l.trim_start().starts_with("disk usage")).unwrap_or_else(|| panic!("{out}"));
    line.split_whitespace().last().unwrap().parse().unwrap()
}

/// c1 holds a valid tag, c2 a wrong one, c3 a symlink to c1's; keep holds a copy of c1's
/// blob (a duplicate only while c1 is scanned).
fn cache_tree(root: &Path) {
    let mut tag = SIGNATURE.to_vec();
    tag.extend_from_slice(b"\n# This file is a cache directory tag.\n");
    write(&root.join("c1/CACHEDIR.TAG"), &tag);
    write(&root.join("c1/blob"), &noise(50_000, 1));
    write(&root.join("c1/sub/deeper"), &noise(7_000, 2));
    write(&root.join("c2/CACHEDIR.TAG"), b"Signature: 8a477f597d28d172789f06886806bc5X");
    write(&root.join("c2/blob"), &noise(30_000, 3));
    std::fs::create_dir_all(root.join("c3")).unwrap();
    std::os::unix::fs::symlink("../c1/CACHEDIR.TAG", root.join("c3/CACHEDIR.TAG")).unwrap();
    write(&root.join("c3/blob"), &noise(10_000, 4));
    write(&root.join("keep/blob2"), &noise(50_000, 1));
}

#[test]
fn a_valid_cachedir_tag_leaves_its_directory_out_of_scan_diff_and_dupes() {
    let t = Scratch::new("caches");
    let tree = t.dir.join("tree");
    cache_tree(&tree);
    let out = dfdu(&["scan", "-b", "--exclude-caches"], &tree);
    assert_eq!(scan_disk(&out), du_without(&tree, &["c1"]), "only c1 is left out:\n{out}");
    assert!(out.contains("excluded                  1"), "{out}");
    let all = dfdu(&["scan", "-b"], &tree);
    assert_eq!(scan_disk(&all), du_without(&tree, &[]), "without the option nothing is left out");

    // ncdu agrees on the tags that are files: c1 out, c2 in.
    match Command::new("ncdu").args(["--exclude-caches", "-o-"]).arg(&tree).output() {
        Ok(o) if o.status.success() => {
            let json = String::from_utf8_lossy(&o.stdout);
            assert!(json.contains(r#"{"name":"c1","excluded":"#), "{json}");
            assert!(json.contains(r#"{"name":"c2","asize""#), "{json}");
        }
        _ => eprintln!("SKIP: ncdu's half of the cache test (no ncdu)"),
    }

    // dupes: the blob in c1 and its copy in keep are a pair only while c1 is read.
    let pairs = dfdu(&["dupes"], &tree);
    assert!(pairs.contains("c1/blob") && pairs.contains("keep/blob2"), "{pairs}");
    assert_eq!(dfdu(&["dupes", "--exclude-caches"], &tree), "", "nothing in c1 is read");

    // diff: what grew inside c1 is no change when c1 is left out on both sides.
    let newer = t.dir.join("newer");
    cache_tree(&newer);
    write(&newer.join("c1/more"), &noise(90_000, 5));
    let grown = run(Command::new(common::dfdu_path()).args(["diff", "-b"]).arg(&tree).arg(&newer));
    assert!(grown.contains("c1/more"), "{grown}");
    let same = run(Command::new(common::dfdu_path()).args(["diff", "-b", "--exclude-caches"]).arg(&tree).arg(&newer));
    assert!(same.contains("change         +0") && !same.contains("c1/more"), "{same}");
}

#[test]
fn kernel_file_systems_are_left_out_and_a_tmpfs_is_not() {
    if !is_root() {
        eprintln!("SKIP: kernel_file_systems_are_left_out_and_a_tmpfs_is_not needs root to mount proc and sysfs");
        return;
    }
    let mut t = Scratch::new("kernfs");
    let tree = t.dir.join("tree");
    for d in ["proc", "sys", "tmp", "plain"] {
        std::fs::create_dir_all(tree.join(d)).unwrap();
    }
    write(&tree.join("plain/f"), &noise(20_000, 6));
    for (fstype, at) in [("proc", "proc"), ("sysfs", "sys")] {
        if let Err(e) = t.mount_fs(fstype, &tree.join(at)) {
            eprintln!("SKIP: kernel_file_systems_are_left_out_and_a_tmpfs_is_not: mount -t {fstype}: {e}");
            return;
        }
    }
    t.mount_tmpfs(&tree.join("tmp")).unwrap();
    write(&tree.join("tmp/f"), &noise(40_000, 7));
    let out = dfdu(&["scan", "-b", "--exclude-kernfs"], &tree);
    assert!(out.contains("excluded                  2"), "proc and sys are excluded:\n{out}");
    assert_eq!(scan_disk(&out), du_without(&tree, &["proc", "sys"]), "the tmpfs is counted:\n{out}");
    let dupes = dfdu(&["dupes", "--exclude-kernfs"], &tree);
    assert_eq!(dupes, "", "{dupes}");
}
