//! `dfdu dupes --delete`, `--hardlink`, `--symlink` and `--plan` on trees built at test
//! time (the generator and its manifest of true groups: `tests/common/dupes.rs`).
//!
//! * Each action with each keep rule leaves one copy per group (or links to it): the
//!   kept file is the one the rule names (worked out here from the manifest, not asked of
//!   dfdu), its bytes and inode unchanged, every other name of the group's inodes removed,
//!   or a hard link to the kept inode, or a symlink reading the kept bytes; files in no
//!   group untouched; a second run finds no group.
//! * A member changed between the scan and the action (same size, its mtime set back) is
//!   skipped and intact, and a directory swapped for a symlink to a copy outside the tree
//!   is never followed (the run waits at `DFDU_TEST_PAUSE_BEFORE_ACT`'s FIFO in debug
//!   builds, in strace's hold of its first `syncfs` in release builds).
//! * `--plan`: the script changes nothing when written; run by `sh` it does what the
//!   action does, quotes every name (one holds `'`, `$(...)`, a newline, a leading `-`)
//!   and refuses a member changed since.
//! * `--hardlink` refuses a member whose mode differs unless `--force-metadata`.
//! * `--delete --keep=first-arg` removes what `jdupes -O -d -N` removes on the same tree.

mod common;

use common::dupes::*;
use common::Scratch;
use std::collections::{BTreeMap, BTreeSet};
use std::ffi::OsStr;
use std::fs;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, SystemTime};

fn os(b: &[u8]) -> &OsStr {
    OsStr::from_bytes(b)
}

fn run(args: &[&OsStr]) -> Output {
    let mut all: Vec<&OsStr> = vec!["dupes".as_ref(), "-q".as_ref()];
    all.extend_from_slice(args);
    dfdu(&all)
}

fn err(o: &Output) -> String {
    format!("stdout:\n{}\nstderr:\n{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr))
}

/// Every regular file under `root` (symlinks not followed): path → (dev, ino, bytes).
fn files(root: &Path) -> BTreeMap<PathBuf, (u64, u64, Vec<u8>)> {
    let mut out = BTreeMap::new();
    let mut todo = vec![root.to_path_buf()];
    while let Some(d) = todo.pop() {
        for e in fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            let m = fs::symlink_metadata(&p).unwrap();
            if m.is_dir() {
                todo.push(p);
            } else if m.is_file() {
                out.insert(p.clone(), (m.dev(), m.ino(), fs::read(&p).unwrap()));
            }
        }
    }
    out
}

/// Gives every file of `groups` its own mtime (a day apart, in a random order), so that
/// oldest and newest are one member each.
fn spread_mtimes(groups: &Groups, seed: u64) {
    let mut rng = Rng(seed | 1);
    let base = SystemTime::UNIX_EPOCH + Duration::from_secs(1_500_000_000);
    let mut days: Vec<u64> = (0..groups.iter().map(|g| g.len()).sum::<usize>() as u64).collect();
    for i in (1..days.len()).rev() {
        days.swap(i, rng.below(i as u64 + 1) as usize);
    }
    for (p, day) in groups.iter().flatten().zip(days) {
        let f = fs::File::options().write(true).open(os(p)).unwrap();
        f.set_modified(base + Duration::from_secs(day * 86_400)).unwrap();
    }
}

/// The member of `g` a keep rule names, worked out here: `rule` as the test passes it.
fn expected_kept(g: &BTreeSet<Vec<u8>>, rule: &Rule, args: &[PathBuf]) -> Vec<u8> {
    let mtime = |p: &Vec<u8>| fs::metadata(os(p)).unwrap().mtime();
    let under = |p: &[u8], d: &Path| p.starts_with(&pbytes(d)) && p.get(pbytes(d).len()) == Some(&b'/');
    // `min_by_key` returns the first of equals: members iterate in byte order.
    let pick = |key: &dyn Fn(&Vec<u8>) -> i64| g.iter().min_by_key(|p| key(p)).unwrap().clone();
    match rule {
        Rule::Oldest => pick(&|p| mtime(p)),
        Rule::Newest => pick(&|p| -mtime(p)),
        Rule::Shortest => pick(&|p| p.len() as i64),
        Rule::Longest => pick(&|p| -(p.len() as i64)),
        Rule::Path(d) => pick(&|p| i64::from(!under(p, d))),
        Rule::FirstArg => pick(&|p| args.iter().position(|a| under(p, a)).unwrap() as i64),
    }
}

#[derive(Debug)]
enum Rule {
    Oldest,
    Newest,
    Shortest,
    Longest,
    Path(PathBuf),
    FirstArg,
}

impl Rule {
    fn args(&self) -> Vec<std::ffi::OsString> {
        match self {
            Rule::Oldest => vec!["--keep=oldest".into()],
            Rule::Newest => vec!["--keep=newest".into()],
            Rule::Shortest => vec!["--keep=shortest".into()],
            Rule::Longest => vec!["--keep=longest".into()],
            Rule::Path(p) => vec!["--keep-path".into(), p.clone().into_os_string()],
            Rule::FirstArg => vec!["--keep=first-arg".into()],
        }
    }
}

/// Each group of the manifest with the member that should be kept.
type Kept = Vec<(BTreeSet<Vec<u8>>, Vec<u8>)>;

/// After `action` on the groups of `want`: every kept file as it was, every other name of
/// a member's inode gone or a link to the kept one, every file outside the groups as it
/// was.
fn check_after(action: &str, before: &BTreeMap<PathBuf, (u64, u64, Vec<u8>)>, want: &Kept) {
    let inode_of = |p: &[u8]| {
        let (dev, ino, _) = before[Path::new(os(p))];
        (dev, ino)
    };
    let kept_inodes: BTreeMap<(u64, u64), &Vec<u8>> = want.iter().map(|(_, k)| (inode_of(k), k)).collect();
    // The inode of each acted-on member, and the kept path of its group.
    let mut acted: BTreeMap<(u64, u64), &Vec<u8>> = BTreeMap::new();
    for (g, k) in want {
        for p in g.iter().filter(|p| *p != k) {
            acted.insert(inode_of(p), k);
        }
    }
    for (path, (dev, ino, bytes)) in before {
        let now = fs::symlink_metadata(path);
        let shown = path.display();
        if kept_inodes.contains_key(&(*dev, *ino)) || !acted.contains_key(&(*dev, *ino)) {
            let m = now.unwrap_or_else(|e| panic!("{shown} kept or in no group, now {e}"));
            assert!(m.is_file() && (m.dev(), m.ino()) == (*dev, *ino), "{shown} was replaced");
            assert_eq!(&fs::read(path).unwrap(), bytes, "{shown}'s bytes changed");
            continue;
        }
        let k = Path::new(os(acted[&(*dev, *ino)]));
        match action {
            "--delete" => assert!(now.is_err(), "{shown} still there"),
            "--hardlink" => {
                let (m, km) = (now.unwrap(), fs::metadata(k).unwrap());
                assert!(m.is_file() && (m.dev(), m.ino()) == (km.dev(), km.ino()), "{shown} is no link to {k:?}");
            }
            _ => {
                assert!(now.unwrap().file_type().is_symlink(), "{shown} is no symlink");
                assert_eq!(fs::canonicalize(path).unwrap(), fs::canonicalize(k).unwrap(), "{shown}");
                assert_eq!(&fs::read(path).unwrap(), bytes, "{shown} reads other bytes");
            }
        }
    }
}

/// The tree of `build`, its groups' mtimes spread, and the kept member of each group
/// for `rule`.
fn tree_for(root: &Path, seed: u64, rule: &Rule, args: &[PathBuf]) -> Kept {
    let want = build(root, seed);
    spread_mtimes(&want, seed);
    want.into_iter().map(|g| (g.clone(), expected_kept(&g, rule, args))).collect()
}

#[test]
fn dupes_act_each_action_and_keep_rule_leaves_one_copy_per_group() {
    let scratch = Scratch::new("dupes-act");
    let root = scratch.subdir("t");
    let args: Vec<PathBuf> = ["e", "a", "d"].iter().map(|d| root.join(d)).collect();
    let rules =
        || [Rule::Oldest, Rule::Newest, Rule::Shortest, Rule::Longest, Rule::Path(root.join("d")), Rule::FirstArg];
    for action in ["--delete", "--hardlink", "--symlink"] {
        for rule in rules() {
            let _ = fs::remove_dir_all(&root);
            let want = tree_for(&root, 0x5eed_a000 + action.len() as u64, &rule, &args);
            let before = files(&root);
            let mut argv: Vec<std::ffi::OsString> = vec![action.into()];
            argv.extend(rule.args());
            argv.extend(args.iter().map(|a| a.clone().into_os_string()));
            let out = run(&argv.iter().map(|a| a.as_os_str()).collect::<Vec<_>>());
            assert!(out.status.success(), "{action} {rule:?}\n{}", err(&out));
            // The action lines name the kept file of each group.
            let text = String::from_utf8_lossy(&out.stdout);
            for (_, k) in &want {
                assert!(text.contains(&format!("keep: {}\n", String::from_utf8_lossy(k))), "{action} {rule:?}: {text}");
            }
            check_after(action, &before, &want);
            let again = run(&argv.iter().map(|a| a.as_os_str()).collect::<Vec<_>>());
            assert!(again.status.success() && again.stdout.is_empty(), "{action} {rule:?}: {}", err(&again));
        }
    }
}

/// `--dry-run` and `--plan` change nothing; the dry run's lines are the real run's.
#[test]
fn dupes_act_dry_run_changes_nothing_and_says_what_the_run_does() {
    let scratch = Scratch::new("dupes-act-dry");
    let root = scratch.subdir("t");
    build(&root, 0x5eed_a100);
    let before = files(&root);
    let dry = run(&["--hardlink".as_ref(), "--dry-run".as_ref(), root.as_os_str()]);
    assert!(dry.status.success(), "{}", err(&dry));
    assert_eq!(files(&root), before);
    let json = run(&["--hardlink".as_ref(), "--dry-run".as_ref(), "--json".as_ref(), root.as_os_str()]);
    let js = String::from_utf8(json.stdout).unwrap();
    assert!(js.contains("\"actions\":[") && js.contains("\"dry_run\":true"), "{js}");
    assert_eq!(files(&root), before);
    let real = run(&["--hardlink".as_ref(), root.as_os_str()]);
    assert!(real.status.success(), "{}", err(&real));
    assert_eq!(String::from_utf8_lossy(&real.stdout), String::from_utf8_lossy(&dry.stdout));
    assert_eq!(
        json_num(&js[js.find("\"act\":").unwrap()..], "done"),
        Some(String::from_utf8_lossy(&dry.stdout).matches("\nhardlink: ").count() as u64)
    );
}

fn mkfifo(p: &Path) {
    let ok = Command::new("mkfifo").arg(p).status().is_ok_and(|s| s.success());
    assert!(ok, "mkfifo");
}

/// Whether the pause is strace's hold rather than the FIFO: in release builds, which
/// have no FIFO hook, and when `DFDU_TEST_PAUSE_BY_STRACE=1` (to check this path).
fn pause_by_strace() -> bool {
    !cfg!(debug_assertions) || std::env::var_os("DFDU_TEST_PAUSE_BY_STRACE").is_some_and(|v| v == "1")
}

/// Runs `dfdu dupes ARGS` paused before it acts; `meanwhile` runs while it waits. Debug
/// builds wait at `DFDU_TEST_PAUSE_BEFORE_ACT`'s FIFO; otherwise strace holds the run 3 s
/// in its first `syncfs`, which the free-space figure of the first group calls right
/// before its first member is checked (as `tests/dedupe.rs` holds dedupe).
fn run_paused(scratch: &Path, args: &[&OsStr], meanwhile: impl FnOnce()) -> Output {
    let mut all: Vec<&OsStr> = vec!["dupes".as_ref()];
    all.extend_from_slice(args);
    if pause_by_strace() {
        let log = scratch.join("strace.log");
        return run_held(&all, "unlinkat,linkat,symlinkat,renameat,renameat2", "syncfs", &log, meanwhile).0;
    }
    let fifo = scratch.join("pause");
    mkfifo(&fifo);
    let child = Command::new(common::dfdu_path())
        .args(&all)
        .env("DFDU_TEST_PAUSE_BEFORE_ACT", &fifo)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Opening for writing waits until dfdu opens it to read: it has scanned and hashed.
    let w = fs::File::options().write(true).open(&fifo).unwrap();
    meanwhile();
    drop(w);
    child.wait_with_output().unwrap()
}

fn pause_hook_or_skip(test: &str) -> bool {
    !pause_by_strace() || have_or_skip("strace", test)
}

/// Same size, one byte other, the mtime set back: only the ctime and the bytes tell.
fn change_quietly(p: &Path) {
    let m = fs::metadata(p).unwrap();
    let mut bytes = fs::read(p).unwrap();
    let at = bytes.len() / 2;
    bytes[at] ^= 0x20;
    fs::write(p, &bytes).unwrap();
    fs::File::options().write(true).open(p).unwrap().set_modified(m.modified().unwrap()).unwrap();
}

#[test]
fn dupes_act_skips_a_member_changed_after_the_scan() {
    if !pause_hook_or_skip("dupes_act_skips_a_member_changed_after_the_scan") {
        return;
    }
    let scratch = Scratch::new("dupes-act-changed");
    for action in ["--delete", "--hardlink", "--symlink"] {
        let root = scratch.subdir(&format!("t{action}"));
        let data = Rng(9).bytes(200_000);
        for d in ["a", "b", "c"] {
            write(&root.join(d).join("x"), &data);
        }
        let b = root.join("b/x");
        let keep = root.join("a");
        let out =
            run_paused(&root, &[action.as_ref(), "--keep-path".as_ref(), keep.as_os_str(), root.as_os_str()], || {
                change_quietly(&b)
            });
        assert_eq!(out.status.code(), Some(1), "{action}: {}", err(&out));
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(text.contains(&format!("skip: {} (changed since the scan)", b.display())), "{action}: {text}");
        let m = fs::symlink_metadata(&b).unwrap();
        assert!(m.is_file() && m.nlink() == 1, "{action}: the changed member was acted on");
        let mut changed = data.clone();
        changed[100_000] ^= 0x20;
        assert_eq!(fs::read(&b).unwrap(), changed, "{action}");
        assert_eq!(fs::read(root.join("a/x")).unwrap(), data);
        // The other member was acted on.
        let c = fs::symlink_metadata(root.join("c/x"));
        let done = match action {
            "--delete" => c.is_err(),
            "--hardlink" => c.unwrap().nlink() == 2,
            _ => c.unwrap().file_type().is_symlink(),
        };
        assert!(done, "{action}: c/x not acted on");
        // The summary: what was done in how many groups, the free space, each skip's reason.
        let summary = String::from_utf8_lossy(&out.stderr);
        assert!(summary.contains(" in 1 group acted on, 200000 bytes"), "{summary}");
        assert!(
            summary.contains("more (statfs)") && summary.contains("1 skipped: changed since the scan"),
            "{summary}"
        );
    }
}

#[test]
fn dupes_act_never_follows_a_directory_swapped_for_a_symlink() {
    if !pause_hook_or_skip("dupes_act_never_follows_a_directory_swapped_for_a_symlink") {
        return;
    }
    let scratch = Scratch::new("dupes-act-swap");
    for action in ["--delete", "--hardlink", "--symlink"] {
        let base = scratch.subdir(&format!("s{action}"));
        let (root, outside) = (base.join("t"), base.join("outside"));
        let data = Rng(11).bytes(70_000);
        for p in ["a/x", "b/sub/x"] {
            write(&root.join(p), &data);
        }
        write(&outside.join("sub/x"), &data);
        let out = run_paused(
            &base,
            &[action.as_ref(), "--keep-path".as_ref(), root.join("a").as_os_str(), root.as_os_str()],
            || swap_for_symlink(&root.join("b/sub"), &root.join("b/sub.orig"), &outside.join("sub")),
        );
        assert_eq!(out.status.code(), Some(1), "{action}: {}", err(&out));
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(text.contains("skip: ") && text.contains("(changed since the scan)"), "{action}: {text}");
        let m = fs::symlink_metadata(outside.join("sub/x")).unwrap();
        assert!(m.is_file() && m.nlink() == 1, "{action}: the file outside was acted on");
        assert_eq!(fs::read(outside.join("sub/x")).unwrap(), data);
        assert_eq!(fs::read(root.join("b/sub.orig/x")).unwrap(), data);
        assert!(fs::symlink_metadata(root.join("b/sub")).unwrap().file_type().is_symlink());
    }
}

/// Names a shell must not read as code or as several words.
const HOSTILE: [&str; 5] = ["it's", "a b", "$(touch pwned)", "new\nline", "-dash"];

#[test]
fn dupes_plan_script_does_the_same_and_refuses_a_changed_member() {
    let scratch = Scratch::new("dupes-act-plan");
    for action in ["--delete", "--hardlink", "--symlink"] {
        let base = scratch.subdir(&format!("p{action}"));
        let root = base.join("t");
        let rule = Rule::Shortest;
        let mut want = tree_for(&root, 0x5eed_a200, &rule, &[]);
        let data = Rng(5).bytes(3000);
        let hostile: BTreeSet<Vec<u8>> = HOSTILE.iter().map(|n| pbytes(&root.join("h").join(n))).collect();
        for p in &hostile {
            write(Path::new(os(p)), &data);
        }
        want.push((hostile.clone(), expected_kept(&hostile, &rule, &[])));
        let plan = base.join("plan.sh");
        let before = files(&root);
        let mut argv: Vec<std::ffi::OsString> = vec![action.into(), "--plan".into(), plan.clone().into()];
        argv.extend(rule.args());
        argv.push(root.clone().into());
        let out = run(&argv.iter().map(|a| a.as_os_str()).collect::<Vec<_>>());
        assert!(out.status.success(), "{action}: {}", err(&out));
        assert_eq!(files(&root), before, "{action}: --plan changed the tree");
        assert_eq!(fs::metadata(&plan).unwrap().permissions().mode() & 0o777, 0o600);
        // Written once: a second run does not overwrite it.
        let again = run(&argv.iter().map(|a| a.as_os_str()).collect::<Vec<_>>());
        assert_eq!(again.status.code(), Some(1), "{}", err(&again));
        // One member (of one name) changes after the plan was made: same size, other bytes.
        let one_name = |p: &&Vec<u8>| fs::metadata(os(p)).unwrap().nlink() == 1;
        let (gi, victim) = want
            .iter()
            .enumerate()
            .find_map(|(i, (g, k))| g.iter().filter(one_name).find(|p| *p != k).map(|p| (i, p.clone())))
            .unwrap();
        let mut bytes = fs::read(os(&victim)).unwrap();
        bytes[0] ^= 1;
        fs::write(os(&victim), &bytes).unwrap();
        let sh = Command::new("sh").arg(&plan).current_dir("/").output().unwrap();
        assert_eq!(sh.status.code(), Some(1), "{action}: {}", err(&sh));
        let why = String::from_utf8_lossy(&sh.stderr);
        assert!(why.contains(&*String::from_utf8_lossy(&victim)), "{action}: {why}");
        assert_eq!(fs::read(os(&victim)).unwrap(), bytes, "{action}: the changed member was acted on");
        // Everything else as the action does it: the victim is in no group now.
        let mut before = before;
        before.get_mut(Path::new(os(&victim))).unwrap().2 = bytes;
        want[gi].0.remove(&victim);
        check_after(action, &before, &want);
        let pwned = [base.join("pwned"), PathBuf::from("/pwned"), PathBuf::from("pwned")];
        assert!(pwned.iter().all(|p| !p.exists()), "a name ran as a command");
    }
}

#[test]
fn dupes_hardlink_refuses_another_mode_unless_forced() {
    let scratch = Scratch::new("dupes-act-mode");
    let root = scratch.subdir("t");
    let data = Rng(3).bytes(5000);
    for d in ["a", "b"] {
        write(&root.join(d).join("x"), &data);
    }
    fs::set_permissions(root.join("b/x"), fs::Permissions::from_mode(0o600)).unwrap();
    let keep = root.join("a");
    let args = ["--hardlink".as_ref(), "--keep-path".as_ref(), keep.as_os_str(), root.as_os_str()];
    let out = run(&args);
    assert_eq!(out.status.code(), Some(1), "{}", err(&out));
    assert!(String::from_utf8_lossy(&out.stdout).contains("(owner or mode differs"), "{}", err(&out));
    assert_eq!(fs::metadata(root.join("b/x")).unwrap().nlink(), 1);
    let mut forced = args.to_vec();
    forced.insert(1, "--force-metadata".as_ref());
    let out = run(&forced);
    assert!(out.status.success(), "{}", err(&out));
    let (a, b) = (fs::metadata(root.join("a/x")).unwrap(), fs::metadata(root.join("b/x")).unwrap());
    assert_eq!((a.ino(), b.ino(), b.mode() & 0o777), (b.ino(), a.ino(), 0o644));
}

/// jdupes -O keeps, in each set, the first file in command-line order (then by name) and
/// `-d -N` deletes the rest: what `--delete --keep=first-arg` deletes.
#[test]
fn dupes_delete_agrees_with_jdupes_d_n() {
    if !have_or_skip("jdupes", "dupes_delete_agrees_with_jdupes_d_n") {
        return;
    }
    let scratch = Scratch::new("dupes-act-jdupes");
    let make = |root: &Path| {
        let mut rng = Rng(0x1d0e5);
        let pool: Vec<Vec<u8>> = (0..8).map(|i| rng.bytes([300, 5000, 70_000, 4096][i % 4])).collect();
        for i in 0..150 {
            let data = &pool[rng.below(pool.len() as u64) as usize];
            write(&root.join(format!("r{}/x{i:03}", i % 5)), data);
        }
        ["r3", "r1", "r4", "r0", "r2"].map(|d| root.join(d))
    };
    let (j, d) = (scratch.subdir("j"), scratch.subdir("d"));
    let (jargs, dargs) = (make(&j), make(&d));
    let jd = Command::new("jdupes").args(["-r", "-q", "-O", "-d", "-N"]).args(&jargs).output().unwrap();
    assert!(jd.status.success(), "jdupes: {}", err(&jd));
    let mut argv: Vec<&OsStr> = vec!["--delete".as_ref(), "--keep=first-arg".as_ref()];
    argv.extend(dargs.iter().map(|a| a.as_os_str()));
    let out = run(&argv);
    assert!(out.status.success(), "{}", err(&out));
    let left = |root: &Path| -> BTreeSet<PathBuf> {
        files(root).into_keys().map(|p| p.strip_prefix(root).unwrap().to_path_buf()).collect()
    };
    let (jl, dl) = (left(&j), left(&d));
    assert_eq!(dl, jl, "dfdu and jdupes left other files");
    assert!(dl.len() == 8, "one file per content should be left: {}", dl.len());
}

/// Writes the tree `files` (path, seed of its bytes, length) under `root`.
fn write_tree(root: &Path, files: &[(&str, u64, usize)]) {
    for &(p, seed, len) in files {
        write(&root.join(p), &Rng(seed).bytes(len));
    }
}

/// The directories of the `--dirs` test: two identical pairs, and near misses of each
/// kind (a file's bytes, an extra file, a name, a symlink, an empty file, empty trees).
fn dirs_tree(root: &Path) {
    let t1: &[(&str, u64, usize)] = &[("a", 1, 3000), ("sub/b", 2, 5000), ("sub/c", 3, 70_000)];
    let t2: &[(&str, u64, usize)] = &[("big", 4, 300_000), ("deep/er/big2", 5, 200_000)];
    let under = |top: &str, tree: &[(&str, u64, usize)]| {
        let files: Vec<(String, u64, usize)> = tree.iter().map(|&(p, s, l)| (format!("{top}/{p}"), s, l)).collect();
        write_tree(root, &files.iter().map(|(p, s, l)| (p.as_str(), *s, *l)).collect::<Vec<_>>());
    };
    under("p/one", t1);
    under("q/one-copy", t1);
    under("x/big1", t2);
    under("y/big2", t2);
    under("r/bytes", &[("a", 1, 3000), ("sub/b", 2, 5000), ("sub/c", 33, 70_000)]);
    under("s/extra", &[t1, &[("sub/z", 9, 10)]].concat());
    under("u/name", &[("a", 1, 3000), ("sub/b", 2, 5000), ("sub/C", 3, 70_000)]);
    under("v/symlink", t1);
    std::os::unix::fs::symlink("b", root.join("v/symlink/sub/link")).unwrap();
    under("w/empty-file", t1);
    write(&root.join("w/empty-file/sub/e"), b"");
    for d in ["e/empty1/x", "e/empty2/x"] {
        fs::create_dir_all(root.join(d)).unwrap();
    }
}

#[test]
fn dupes_dirs_finds_exactly_the_identical_trees() {
    let scratch = Scratch::new("dupes-dirs");
    let root = scratch.subdir("t");
    dirs_tree(&root);
    let out = dfdu(&["dupes".as_ref(), "--dirs".as_ref(), root.as_os_str()]);
    assert!(out.status.success(), "{}", err(&out));
    let p = |s: &str| format!("{}/{s}", root.display());
    let want = format!("{}\n{}\n\n{}\n{}\n\n", p("x/big1"), p("y/big2"), p("p/one"), p("q/one-copy"));
    assert_eq!(String::from_utf8_lossy(&out.stdout), want, "{}", err(&out));
}

#[test]
fn dupes_dirs_actions_apply_to_whole_directories() {
    let scratch = Scratch::new("dupes-dirs-act");
    for action in ["--delete", "--hardlink", "--symlink"] {
        let root = scratch.subdir(&format!("t{action}"));
        dirs_tree(&root);
        let before = files(&root);
        let (p, q, x, y) = (root.join("p/one"), root.join("q/one-copy"), root.join("x/big1"), root.join("y/big2"));
        let keep = |d: &Path| ["--keep-path".into(), d.as_os_str().to_owned()];
        let mut argv: Vec<std::ffi::OsString> = vec![action.into(), "--dirs".into()];
        argv.extend(keep(&p).into_iter().chain(keep(&x)));
        argv.push(root.clone().into());
        let args: Vec<&OsStr> = argv.iter().map(|a| a.as_os_str()).collect();
        let dry = run(&[&args[..1], &["--dry-run".as_ref()], &args[1..]].concat());
        assert!(dry.status.success(), "{action}: {}", err(&dry));
        assert_eq!(files(&root), before, "{action}: the dry run changed something");
        let out = run(&args);
        assert!(out.status.success(), "{action}: {}", err(&out));
        assert_eq!(String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&dry.stdout), "{action}");
        for (kept, gone) in [(&p, &q), (&x, &y)] {
            let kept_files = files(kept);
            let gone_files = if action == "--hardlink" { files(gone) } else { BTreeMap::new() };
            for (path, (dev, ino, bytes)) in &before {
                if let Ok(rel) = path.strip_prefix(kept) {
                    assert_eq!(kept_files[path], (*dev, *ino, bytes.clone()), "{action}: kept {rel:?} changed");
                }
                let Ok(rel) = path.strip_prefix(gone) else { continue };
                let twin = &before[&kept.join(rel)];
                match action {
                    "--delete" => assert!(fs::symlink_metadata(gone).is_err(), "{action}: {gone:?} left"),
                    "--hardlink" => assert_eq!(gone_files[path], *twin, "{action}: {rel:?} not linked"),
                    _ => {
                        assert!(fs::symlink_metadata(gone).unwrap().file_type().is_symlink(), "{action}: {gone:?}");
                        assert_eq!(fs::canonicalize(gone).unwrap(), fs::canonicalize(kept).unwrap());
                        assert_eq!(&fs::read(path).unwrap(), bytes);
                    }
                }
            }
        }
        // Nothing outside the two member trees changed.
        let after = files(&root);
        for (path, v) in &before {
            if !path.starts_with(&q) && !path.starts_with(&y) {
                assert_eq!(after.get(path), Some(v), "{action}: {path:?}");
            }
        }
    }
}
