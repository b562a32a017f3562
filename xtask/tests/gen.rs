//! `cargo xtask gen`, run as a program: same seed gives the same tree, the counts follow the
//! reference mix, the `DIR.gentree.json` marker rules hold (reuse, refuse, `--force`), the
//! chain and `--sizes none` shapes are what they say, and bad sizes get one clear message.
//! Trees are built at test time in a fresh directory per test.

use std::fs;
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn bench() -> Command {
    Command::new(env!("CARGO_BIN_EXE_xtask"))
}

/// A fresh, empty scratch directory for one test.
fn scratch(test: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("xtask-gen-test-{}-{test}", std::process::id()));
    let _ = fs::remove_dir_all(&dir);
    fs::create_dir_all(&dir).unwrap();
    dir
}

fn gen(args: &[&str], dir: &Path) -> Output {
    bench().arg("gen").args(args).arg(dir).output().unwrap()
}

fn gen_ok(args: &[&str], dir: &Path) -> String {
    let out = gen(args, dir);
    assert!(out.status.success(), "gen {args:?} failed: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// One line of `find DIR -printf '%y %s %n %l %P\n'`.
#[derive(PartialEq, Eq, PartialOrd, Ord, Debug)]
struct Entry {
    path: Vec<u8>,
    kind: char,
    size_bytes: u64,
    n_links: u64,
    target: Vec<u8>,
}

/// Every entry under `root` (root itself left out), sorted by path.
fn listing(root: &Path) -> Vec<Entry> {
    let mut entries = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for item in fs::read_dir(&dir).unwrap() {
            let path = item.unwrap().path();
            let meta = fs::symlink_metadata(&path).unwrap();
            let (kind, target) = if meta.file_type().is_symlink() {
                ('l', fs::read_link(&path).unwrap().into_os_string().into_vec())
            } else if meta.is_dir() {
                stack.push(path.clone());
                ('d', Vec::new())
            } else {
                ('f', Vec::new())
            };
            let relative = path.strip_prefix(root).unwrap().as_os_str().as_bytes().to_vec();
            entries.push(Entry { path: relative, kind, size_bytes: meta.size(), n_links: meta.nlink(), target });
        }
    }
    entries.sort();
    entries
}

fn count(entries: &[Entry], predicate: impl Fn(&Entry) -> bool) -> usize {
    entries.iter().filter(|entry| predicate(entry)).count()
}

#[test]
fn same_seed_gives_the_same_tree_and_the_reference_mix() {
    let base = scratch("determinism");
    let (a, b) = (base.join("a"), base.join("b"));
    gen_ok(&["--entries", "3000", "--threads", "3"], &a);
    gen_ok(&["--entries", "3000", "--threads", "1"], &b);
    let listing_a = listing(&a);
    assert!(listing_a == listing(&b), "two trees from seed 1 differ");
    // 3000 entries: 138 dirs (root included, not listed), 2820 files, 28 extra hard-link
    // names and 14 symlinks.
    assert_eq!(listing_a.len(), 3000 - 1);
    assert_eq!(count(&listing_a, |e| e.kind == 'd'), 138 - 1);
    assert_eq!(count(&listing_a, |e| e.kind == 'l'), 14);
    assert_eq!(count(&listing_a, |e| e.kind == 'f'), 2820 + 28);
    assert_eq!(count(&listing_a, |e| e.path.contains(&b'\n')), 1);
    let linked_names = count(&listing_a, |e| e.kind == 'f' && e.n_links > 1);
    assert!(linked_names > 28, "28 extra names need more than 28 linked names, got {linked_names}");
    assert!(count(&listing_a, |e| e.kind == 'f' && e.size_bytes == 0) > 2820 / 10);
    assert!(count(&listing_a, |e| std::str::from_utf8(&e.path).is_err()) <= 3);
    fs::remove_dir_all(&base).unwrap();
}

#[test]
fn another_seed_gives_another_tree() {
    let base = scratch("seeds");
    gen_ok(&["--entries", "500", "--seed", "1"], &base.join("one"));
    gen_ok(&["--entries", "500", "--seed", "2"], &base.join("two"));
    assert!(listing(&base.join("one")) != listing(&base.join("two")));
    fs::remove_dir_all(&base).unwrap();
}

#[test]
fn marker_reuses_refuses_and_forces() {
    let base = scratch("marker");
    let tree = base.join("tree");
    gen_ok(&["--entries", "400"], &tree);
    let marker = fs::read_to_string(base.join("tree.gentree.json")).unwrap();
    assert!(marker.contains("\"state\": \"complete\""), "{marker}");
    fs::write(tree.join("sentinel"), b"").unwrap();
    assert!(gen_ok(&["--entries", "400"], &tree).contains("reusing"));
    assert!(tree.join("sentinel").exists(), "a reuse must not touch the tree");
    let refused = gen(&["--entries", "500"], &tree);
    assert!(!refused.status.success());
    assert!(String::from_utf8_lossy(&refused.stderr).contains("--force"));
    gen_ok(&["--entries", "500", "--force"], &tree);
    assert!(!tree.join("sentinel").exists(), "--force must regenerate");
    assert_eq!(listing(&tree).len(), 500 - 1);
    fs::remove_dir_all(&base).unwrap();
}

#[test]
fn a_directory_without_marker_is_never_deleted() {
    let base = scratch("foreign");
    let foreign = base.join("foreign");
    fs::create_dir(&foreign).unwrap();
    fs::write(foreign.join("precious"), b"keep me").unwrap();
    assert!(!gen(&["--entries", "400", "--force"], &foreign).status.success());
    assert_eq!(fs::read(foreign.join("precious")).unwrap(), b"keep me");
    fs::remove_dir_all(&base).unwrap();
}

#[test]
fn wide_puts_every_file_in_the_root() {
    let base = scratch("wide");
    let wide = base.join("wide");
    gen_ok(&["--wide", "700"], &wide);
    let entries = listing(&wide);
    assert_eq!(entries.len(), 700);
    assert_eq!(count(&entries, |e| e.kind == 'f' && e.n_links == 1), 700);
    assert_eq!(count(&entries, |e| e.path.contains(&b'\n')), 1);
    fs::remove_dir_all(&base).unwrap();
}

#[test]
fn a_chain_is_one_line_of_directories_deeper_than_path_max() {
    let base = scratch("chain");
    let chain = base.join("chain");
    // 2,500 levels of "d/" make paths of over 5,000 bytes: more than PATH_MAX (4,096).
    gen_ok(&["--shape", "chain", "--depth", "2500", "--entries", "7501"], &chain);
    let marker = fs::read_to_string(base.join("chain.gentree.json")).unwrap();
    assert!(marker.contains("\"shape\": \"chain\""), "{marker}");
    // Walk down with relative steps (the full path is too long for one system call).
    let home = std::env::current_dir().unwrap();
    let mut dir = chain.clone();
    let (mut levels, mut files) = (0, 0);
    loop {
        let mut subdirs = Vec::new();
        for item in fs::read_dir(&dir).unwrap() {
            let item = item.unwrap();
            match item.file_type().unwrap().is_dir() {
                true => subdirs.push(item.file_name()),
                false => files += 1,
            }
        }
        assert!(subdirs.len() <= 1, "a chain level has {} subdirectories", subdirs.len());
        let Some(next) = subdirs.pop() else { break };
        std::env::set_current_dir(&dir).unwrap();
        dir = PathBuf::from(next);
        levels += 1;
    }
    std::env::set_current_dir(home).unwrap();
    assert_eq!(levels, 2500);
    assert_eq!(files, 7501 - 2501);
    // GNU du (fts, relative opens) agrees on the entry count.
    let du = Command::new("du").args(["-s", "--inodes"]).arg(&chain).output().unwrap();
    let inodes: u64 = String::from_utf8_lossy(&du.stdout).split_whitespace().next().unwrap().parse().unwrap();
    assert_eq!(inodes, 7501);
    // The generator removes a chain this deep on --force (std's remove_dir_all may not).
    gen_ok(&["--shape", "chain", "--depth", "10", "--entries", "100", "--force"], &chain);
    assert_eq!(listing(&chain).len(), 99);
    fs::remove_dir_all(&base).unwrap();
}

#[test]
fn sizes_none_keeps_the_structure_and_empties_every_file() {
    let base = scratch("sizes");
    gen_ok(&["--entries", "3000"], &base.join("mixed"));
    gen_ok(&["--entries", "3000", "--sizes", "none"], &base.join("none"));
    let (mixed, none) = (listing(&base.join("mixed")), listing(&base.join("none")));
    assert!(count(&mixed, |e| e.kind == 'f' && e.size_bytes > 0) > 1000);
    assert_eq!(count(&none, |e| e.kind == 'f' && e.size_bytes > 0), 0);
    let shape = |entries: &[Entry]| -> Vec<(Vec<u8>, char, u64, Vec<u8>)> {
        entries.iter().map(|e| (e.path.clone(), e.kind, e.n_links, e.target.clone())).collect()
    };
    assert!(shape(&mixed) == shape(&none), "--sizes none changed names, kinds or links");
    fs::remove_dir_all(&base).unwrap();
}

#[test]
fn bad_sizes_get_one_clear_message_and_status_2() {
    let base = scratch("limits");
    let cases: [(&[&str], &str); 6] = [
        (&["--entries", "100"], "xtask: --entries 100 is too few: a tree needs at least 200 entries"),
        (&["--entries", "99999999999"], "xtask: 99,999,999,999 entries is too many"),
        (&["--wide", "0"], "xtask: --entries 1 is too few: a wide tree needs at least one file"),
        (
            &["--shape", "chain", "--depth", "50", "--entries", "40"],
            "xtask: --entries 40 is too few: a chain of depth 50",
        ),
        (&["--depth", "5"], "xtask: --depth is for --shape chain only"),
        (&["--sizes", "some"], "xtask: --sizes 'some': expected mixed or none"),
    ];
    for (args, expected) in cases {
        let out = gen(args, &base.join("t"));
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.starts_with(expected), "{args:?}: {stderr}");
        assert_eq!(stderr.lines().count(), 1, "{args:?}: one line: {stderr}");
    }
    assert!(!base.join("t").exists());
    fs::remove_dir_all(&base).unwrap();
}
