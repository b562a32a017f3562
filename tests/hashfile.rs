//! `--hashfile` when root runs `dupes` or `dedupe` with a hash file in a place other users
//! can write (issue 24, items 1 to 3): the path and the temporary names are never
//! followed as symlinks, nothing is created through one, and a hash file another user
//! could have written is not trusted (ssh's `StrictModes` is the model: the directory must
//! be the user's or root's and, unless sticky, writable by no one else; the file must be
//! the user's and writable by no one else). Written hash files are mode 0600.
//!
//! The "other user" is `nobody` (uid 65534): the tests need root for `chown`, and say SKIP
//! without it. The victims are files in the test's own scratch directory.

mod common;

use common::dupes::*;
use common::{dfdu_path, is_root, json_num, run_ok, Scratch};
use std::fs;
use std::os::unix::fs::{lchown, symlink, MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const NOBODY: u32 = 65534;

fn need_root(test: &str) -> bool {
    is_root() || {
        skip(&format!("{test}: needs root (chown to nobody)"));
        false
    }
}

/// Everything `stat` says about a file that a write through a symlink would change, and
/// its bytes.
#[derive(Debug, PartialEq, Eq)]
struct Stat {
    data: Vec<u8>,
    ino: u64,
    nlink: u64,
    mode: u32,
    uid: u32,
    gid: u32,
    size: u64,
    mtime: (i64, i64),
    ctime: (i64, i64),
}

fn stat(p: &Path) -> Stat {
    let m = fs::symlink_metadata(p).unwrap();
    Stat {
        data: fs::read(p).unwrap(),
        ino: m.ino(),
        nlink: m.nlink(),
        mode: m.mode(),
        uid: m.uid(),
        gid: m.gid(),
        size: m.size(),
        mtime: (m.mtime(), m.mtime_nsec()),
        ctime: (m.ctime(), m.ctime_nsec()),
    }
}

fn chmod(p: &Path, mode: u32) {
    fs::set_permissions(p, fs::Permissions::from_mode(mode)).unwrap();
}

/// Root's precious file, in the scratch directory.
fn victim(scratch: &Scratch) -> PathBuf {
    let v = scratch.dir.join("victim");
    fs::write(&v, b"root's own file\n").unwrap();
    chmod(&v, 0o644);
    v
}

/// `dfdu dupes --json --hashfile CACHE ROOT`.
fn dupes_with(cache: &Path, root: &Path) -> Output {
    dfdu(&["dupes".as_ref(), "--json".as_ref(), "--hashfile".as_ref(), cache.as_os_str(), root.as_os_str()])
}

/// `dupes_with`, but with symlinks to `target` planted first, owned by nobody, under every
/// temporary name an old dfdu would use: `CACHE.tmp<PID>` for its own PID (the shell
/// plants it, then becomes dfdu with `exec`) and for the next 200 PIDs.
fn dupes_over_a_symlink_farm(cache: &Path, root: &Path, target: &Path) -> Output {
    let pid: u32 = fs::read_to_string("/proc/sys/kernel/ns_last_pid").map_or(0, |s| s.trim().parse().unwrap_or(0));
    for p in pid..pid + 200 {
        let link = PathBuf::from(format!("{}.tmp{p}", cache.display()));
        if symlink(target, &link).is_ok() {
            lchown(&link, Some(NOBODY), Some(NOBODY)).unwrap();
        }
    }
    let script =
        r#"ln -sf "$1" "$2.tmp$$" && chown -h 65534:65534 "$2.tmp$$" && exec "$3" dupes --json --hashfile "$2" "$4""#;
    Command::new("sh")
        .args(["-c", script, "sh"])
        .arg(target)
        .arg(cache)
        .arg(dfdu_path())
        .arg(root)
        .env("LC_ALL", "C")
        .output()
        .unwrap()
}

/// The symlinks of the farm are all still there, still pointing at `target`.
fn farm_intact(dir: &Path, target: &Path) -> usize {
    let mut n = 0;
    for e in fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.file_name().unwrap().to_string_lossy().contains(".tmp") {
            assert_eq!(fs::read_link(&p).unwrap(), target, "{}", p.display());
            n += 1;
        }
    }
    n
}

/// Regression (issue 24 item 1): `save()` created `CACHE.tmp<PID>` with a plain create,
/// so a symlink planted under that name by the owner of the directory made root write
/// the hash file into any file. Here the directory belongs to nobody: its hash file is not
/// trusted, so nothing is read or written there, and the victim is untouched.
#[test]
fn hashfile_symlink_farm_in_a_directory_nobody_owns() {
    if !need_root("hashfile_symlink_farm_in_a_directory_nobody_owns") {
        return;
    }
    let scratch = Scratch::new("hashfile-farm-nobody");
    let root = small_tree(&scratch);
    let v = victim(&scratch);
    let before = stat(&v);
    let dir = scratch.subdir("nobody");
    fs::set_permissions(&dir, fs::Permissions::from_mode(0o755)).unwrap();
    std::os::unix::fs::chown(&dir, Some(NOBODY), Some(NOBODY)).unwrap();
    let cache = dir.join("hashes");
    let out = dupes_over_a_symlink_farm(&cache, &root, &v);
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert_eq!(stat(&v), before, "the victim changed: {err}");
    assert!(err.contains("is not trusted: its directory belongs to uid 65534"), "{err}");
    assert!(fs::symlink_metadata(&cache).is_err(), "a hash file was made in nobody's directory");
    assert!(farm_intact(&dir, &v) > 100);
    assert_eq!(json_num(&text(&out.stdout), "duplicate_files"), Some(3));
}

/// The same farm in a sticky directory that everyone may write (as /tmp): the directory
/// is trusted, so the hash file is written there, but through a file that can only be new
/// and ours (O_TMPFILE, or O_EXCL under a random name), mode 0600, and renamed into place
/// relative to the directory. The victim is untouched, the symlinks too, and the next run
/// uses the new file.
#[test]
fn hashfile_symlink_farm_in_a_sticky_directory() {
    if !need_root("hashfile_symlink_farm_in_a_sticky_directory") {
        return;
    }
    let scratch = Scratch::new("hashfile-farm-sticky");
    let root = small_tree(&scratch);
    let v = victim(&scratch);
    let before = stat(&v);
    let dir = scratch.subdir("sticky");
    chmod(&dir, 0o1777);
    let cache = dir.join("hashes");
    let out = dupes_over_a_symlink_farm(&cache, &root, &v);
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert_eq!(stat(&v), before, "the victim changed: {err}");
    assert!(farm_intact(&dir, &v) > 100);
    let m = fs::symlink_metadata(&cache).unwrap();
    assert!(m.file_type().is_file(), "{:?}", m.file_type());
    assert_eq!((m.mode() & 0o7777, m.uid()), (0o600, 0));
    let again = dupes_with(&cache, &root);
    assert_eq!(json_num(&text(&again.stdout), "cache_hits"), Some(7), "{}", text(&again.stderr));
}

/// Regression (issue 24 item 2): a dangling symlink as the hash file made root create
/// its target (`/etc/nologin` in the report). A symlink is refused, dangling or not, with
/// exit status 1 before anything is read; nothing is created and the link stays.
#[test]
fn hashfile_that_is_a_symlink_is_refused() {
    let scratch = Scratch::new("hashfile-symlink");
    let root = small_tree(&scratch);
    let nologin = scratch.dir.join("nologin");
    let dangling = scratch.dir.join("dangling");
    symlink(&nologin, &dangling).unwrap();
    let good = scratch.dir.join("good");
    assert!(dupes_with(&good, &root).status.success());
    let before = stat(&good);
    let to_good = scratch.dir.join("to-good");
    symlink(&good, &to_good).unwrap();
    for (link, target) in [(&dangling, &nologin), (&to_good, &good)] {
        let out = dupes_with(link, &root);
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{}: {err}", link.display());
        assert!(err.contains(&format!("hash file '{}' is a symbolic link: refused", link.display())), "{err}");
        assert!(out.stdout.is_empty(), "{}", text(&out.stdout));
        assert_eq!(&fs::read_link(link).unwrap(), target);
    }
    assert!(fs::symlink_metadata(&nologin).is_err(), "the dangling link's target was created");
    assert_eq!(stat(&good), before);
}

/// A hash file as a first run leaves it, then made another user's (`chown`) or writable
/// by its group (`chmod 664`) — what a hash file another user could have forged looks
/// like: not trusted (no entry is used, the files are read again), said on standard
/// error, and replaced by a new one of the user's, mode 0600, which the next run uses.
fn check_rebuilt(label: &str, spoil: &dyn Fn(&Path), why: &str) {
    let scratch = Scratch::new(label);
    let root = small_tree(&scratch);
    let cache = scratch.dir.join("hashes");
    let first = dupes_with(&cache, &root);
    assert!(first.status.success(), "{}", text(&first.stderr));
    spoil(&cache);
    let out = dupes_with(&cache, &root);
    let (js, err) = (text(&out.stdout), text(&out.stderr));
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert_eq!(json_num(&js, "cache_hits"), Some(0), "{label}: the untrusted entries were used: {err}");
    assert_eq!(json_num(&js, "files_read"), Some(7), "{js}");
    let want = format!("hash file '{}' is not trusted: {why}; ignoring it and writing a new one", cache.display());
    assert!(err.contains(&want), "{err}");
    let m = fs::metadata(&cache).unwrap();
    assert_eq!((m.mode() & 0o7777, m.uid()), (0o600, 0), "{label}");
    let again = dupes_with(&cache, &root);
    assert_eq!(json_num(&text(&again.stdout), "cache_hits"), Some(7), "{}", text(&again.stderr));
    assert!(again.stderr.is_empty(), "{}", text(&again.stderr));
}

#[test]
fn hashfile_owned_by_another_user_is_rebuilt() {
    if !need_root("hashfile_owned_by_another_user_is_rebuilt") {
        return;
    }
    let chown = |p: &Path| std::os::unix::fs::chown(p, Some(NOBODY), Some(NOBODY)).unwrap();
    check_rebuilt("hashfile-foreign", &chown, "it belongs to uid 65534, not to uid 0");
}

#[test]
fn hashfile_writable_by_its_group_is_rebuilt() {
    if !need_root("hashfile_writable_by_its_group_is_rebuilt") {
        return;
    }
    check_rebuilt("hashfile-group-writable", &|p| chmod(p, 0o664), "it is writable by others (mode 0664)");
}

/// A directory others may write and that is not sticky (0777 here): anyone could have put
/// the hash file there, so it is neither read nor replaced, and the run goes on without
/// one (exit status 0); the file stays byte for byte and inode for inode.
#[test]
fn hashfile_in_a_directory_others_may_write_is_left_alone() {
    if !need_root("hashfile_in_a_directory_others_may_write_is_left_alone") {
        return;
    }
    let scratch = Scratch::new("hashfile-open-dir");
    let root = small_tree(&scratch);
    let dir = scratch.subdir("open");
    let cache = dir.join("hashes");
    assert!(dupes_with(&cache, &root).status.success());
    chmod(&dir, 0o777);
    let before = stat(&cache);
    let out = dupes_with(&cache, &root);
    let (js, err) = (text(&out.stdout), text(&out.stderr));
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert_eq!(json_num(&js, "cache_hits"), Some(0), "{err}");
    let want = "is not trusted: its directory is writable by others (mode 0777) and not sticky; running without one";
    assert!(err.contains(want), "{err}");
    assert_eq!(stat(&cache), before);
}

/// A directory on the hash file's path that another user could swap: root was told to
/// use `ALICE/cache/nologin`, and the owner of ALICE made `cache` a symlink to a directory
/// of root's (`/etc` in real life). Only the last directory used to be judged, so root
/// created `nologin` there. Now every name on the way is looked up relative to the
/// directory before it and judged: a name in a directory another user owns, or one
/// another user owns in a sticky directory others may write, is not trusted, and nothing
/// is read or created. A symlink in a directory only root may write is followed.
#[test]
fn hashfile_path_through_a_directory_another_user_controls() {
    if !need_root("hashfile_path_through_a_directory_another_user_controls") {
        return;
    }
    let scratch = Scratch::new("hashfile-path");
    let root = small_tree(&scratch);
    let etc = scratch.subdir("etc");
    let alice = scratch.subdir("alice");
    std::os::unix::fs::chown(&alice, Some(NOBODY), Some(NOBODY)).unwrap();
    symlink(&etc, alice.join("cache")).unwrap();
    lchown(alice.join("cache"), Some(NOBODY), Some(NOBODY)).unwrap();
    let sticky = scratch.subdir("sticky");
    chmod(&sticky, 0o1777);
    symlink(&etc, sticky.join("evil")).unwrap();
    lchown(sticky.join("evil"), Some(NOBODY), Some(NOBODY)).unwrap();
    let cases = [
        (alice.join("cache/nologin"), format!("'{}' on its path belongs to uid 65534", alice.display())),
        (
            sticky.join("evil/nologin"),
            format!(
                "'{}' on its path belongs to uid 65534 in a directory others may write",
                sticky.join("evil").display()
            ),
        ),
    ];
    for (cache, why) in &cases {
        let out = dupes_with(cache, &root);
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "{err}");
        assert!(
            err.contains(&format!("hash file '{}' is not trusted: {why}; running without one", cache.display())),
            "{err}"
        );
        assert!(fs::symlink_metadata(etc.join("nologin")).is_err(), "created through {}: {err}", cache.display());
    }
    // Root's own symlink, in a directory only root may write: followed.
    symlink(&etc, scratch.dir.join("etc-link")).unwrap();
    let out = dupes_with(&scratch.dir.join("etc-link/hashes"), &root);
    assert!(out.status.success() && out.stderr.is_empty(), "{}", text(&out.stderr));
    assert!(fs::metadata(etc.join("hashes")).unwrap().is_file());
}

// ------------------------------------------------------------------------------------------
// What the hash file cannot see (issue 24 item 5): contents that change while size, mtime
// and ctime stay. A write through a shared mapping made before the file was hashed does
// that; here the same is had reliably by changing a byte of the file's extent in the XFS
// image underneath (XFS keeps no data checksums) and dropping the page cache.

/// The summary object of a `--json` document (the groups before it hold other keys).
fn summary(js: &str) -> &str {
    &js[js.find("\"summary\"").unwrap_or_else(|| panic!("no summary: {js}"))..]
}

/// An XFS image with `t/a` and `t/b`, equal when hashed into `hashes` (returned), then
/// `b` changed under the file system: the kernel reads the new byte, `stat` shows the old
/// size, mtime and ctime. `None` (after a SKIP line) without root, XFS or xfs_io.
fn pair_changed_unseen(test: &str, label: &str) -> Option<(LoopFs, PathBuf, PathBuf)> {
    if !(need_root_and("mkfs.xfs", test) && have_or_skip("xfs_io", test)) {
        return None;
    }
    let a = match LoopFs::labelled("xfs", label, "300M") {
        Ok(a) => a,
        Err(e) => {
            skip(&format!("{test}: XFS image: {e}"));
            return None;
        }
    };
    let root = a.mnt.join("t");
    let data = Rng(0xd1ff).bytes(200_000);
    write(&root.join("a"), &data);
    write(&root.join("b"), &data);
    let cache = a.mnt.join("hashes");
    let d = dfdu(&["dupes".as_ref(), "-q".as_ref(), "--hashfile".as_ref(), cache.as_os_str(), root.as_os_str()]);
    assert!(d.status.success(), "{}", text(&d.stderr));
    let b = root.join("b");
    let before = fs::metadata(&b).unwrap();
    flip_byte_under_xfs(&a.image, &b, 1000, data[1000]);
    assert_ne!(fs::read(&b).unwrap(), data, "the kernel reads the changed byte");
    let after = fs::metadata(&b).unwrap();
    assert_eq!((after.mtime_nsec(), after.ctime_nsec()), (before.mtime_nsec(), before.ctime_nsec()));
    Some((a, root, cache))
}

/// Regression (issue 24 item 5): the kernel refused the pair ("data differs") and the
/// stale entries stayed, so every later run reported the pair as duplicates again without
/// reading it. Now the refusal drops both entries: the next run reads both files and
/// finds no group.
#[test]
fn hashfile_entries_of_a_refused_range_are_dropped_on_xfs() {
    let Some((_fs, root, cache)) =
        pair_changed_unseen("hashfile_entries_of_a_refused_range_are_dropped_on_xfs", "refused-stale")
    else {
        return;
    };
    let out = dfdu(&["dedupe".as_ref(), "--json".as_ref(), "--hashfile".as_ref(), cache.as_os_str(), root.as_os_str()]);
    let js = text(&out.stdout);
    assert!(out.status.success(), "{js}\n{}", text(&out.stderr));
    assert_eq!(json_num(summary(&js), "cache_hits"), Some(2), "{js}");
    assert_eq!(json_num(&js, "refused_files"), Some(1), "{js}");
    let again = dupes_with(&cache, &root);
    let js = text(&again.stdout);
    assert_eq!(json_num(summary(&js), "cache_hits"), Some(0), "the refused pair's entries were kept: {js}");
    assert!(json_num(summary(&js), "bytes_read").unwrap() >= 2 * 4096, "{js}");
    assert_eq!(json_num(summary(&js), "duplicate_files"), Some(0), "{js}");
}

/// `--verify` reads again the members of groups the hash file vouched for: the pair is not
/// reported (by `dupes`, nor submitted by `dedupe`), and b's entry is replaced, so a plain
/// run afterwards reads nothing and reports nothing.
#[test]
fn hashfile_verify_reads_cached_groups_again_on_xfs() {
    let Some((_fs, root, cache)) = pair_changed_unseen("hashfile_verify_reads_cached_groups_again_on_xfs", "verify")
    else {
        return;
    };
    let (h, r) = (cache.as_os_str(), root.as_os_str());
    let dry = dfdu(&[
        "dedupe".as_ref(),
        "--verify".as_ref(),
        "--dry-run".as_ref(),
        "--json".as_ref(),
        "--hashfile".as_ref(),
        h,
        r,
    ]);
    let js = text(&dry.stdout);
    assert!(dry.status.success(), "{js}\n{}", text(&dry.stderr));
    assert_eq!(json_num(summary(&js), "duplicate_files"), Some(0), "{js}");
    assert_eq!(json_num(&js, "bytes_submitted"), Some(0), "{js}");
    let read = json_num(summary(&js), "bytes_read").unwrap();
    assert!(read >= 2 * 200_000, "both members read whole again: {js}");
    // The entries were replaced: a plain run trusts them and finds nothing.
    let plain = dupes_with(&cache, &root);
    let js = text(&plain.stdout);
    assert_eq!(json_num(summary(&js), "cache_hits"), Some(2), "{js}");
    assert_eq!(json_num(summary(&js), "bytes_read"), Some(0), "{js}");
    assert_eq!(json_num(summary(&js), "duplicate_files"), Some(0), "{js}");
    // A group whose members still match is reported after the reads, with the summary
    // saying nothing is stale.
    let verify = dfdu(&["dupes".as_ref(), "--verify".as_ref(), "--hashfile".as_ref(), h, r]);
    assert!(verify.status.success() && verify.stdout.is_empty(), "{}", text(&verify.stdout));
    assert!(!text(&verify.stderr).contains("stale"), "{}", text(&verify.stderr));
}

// ------------------------------------------------------------------------------------------
// An interrupted dedupe (issue 24 item 10).

/// Regression: SIGINT after 90 of 100 groups printed nothing (exit 130 by the signal's
/// default action) and the work done was neither reported nor (had the hash file been
/// saved after dedupe) saved. Now the call in flight is finished, no other is made, the
/// report says what was done and that the rest was not started, the hash file is saved,
/// and the exit status is 130. strace delays every ioctl by 10 ms so that the signal
/// comes while the calls are being made (after the third).
#[test]
fn dedupe_interrupted_reports_what_was_done_and_saves_the_hash_file() {
    let test = "dedupe_interrupted_reports_what_was_done_and_saves_the_hash_file";
    let Some(a) = LoopFs::for_test(test, "btrfs", "sigint", "300M", &["strace"]) else { return };
    let root = a.mnt.join("t");
    let mut rng = Rng(0x5161);
    for g in 0..100 {
        let data = rng.bytes(16_384);
        write(&root.join(format!("g{g:03}/a")), &data);
        write(&root.join(format!("g{g:03}/b")), &data);
    }
    let cache = a.mnt.join("hashes");
    let log = a.mnt.join("strace.log");
    let child = Command::new("strace")
        .args(["-f", "-qq", "-o"])
        .arg(&log)
        .args(["-e", "trace=ioctl", "-e", "inject=ioctl:delay_enter=10000", "--"])
        .arg(dfdu_path())
        .args(["dedupe", "--json", "--hashfile"])
        .arg(&cache)
        .arg(&root)
        .env("LC_ALL", "C")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let is_dedupe = |l: &&str| l.contains("DEDUPE") || l.contains("EXTENT_SAME") || l.contains("0x9436");
    let start = std::time::Instant::now();
    let pid = loop {
        let seen = fs::read_to_string(&log).unwrap_or_default();
        let calls: Vec<&str> = seen.lines().filter(is_dedupe).collect();
        if calls.len() >= 3 {
            break calls[0].split_whitespace().next().unwrap().to_string();
        }
        assert!(start.elapsed().as_secs() < 120, "no dedupe calls seen:\n{seen}");
        std::thread::sleep(std::time::Duration::from_millis(5));
    };
    run_ok(Command::new("kill").args(["-INT", &pid]));
    let out = child.wait_with_output().unwrap();
    let (js, err) = (text(&out.stdout), text(&out.stderr));
    assert_eq!(out.status.code(), Some(130), "{:?}\n{err}\n{js}", out.status);
    let d = &js[js.find("\"dedupe\":").unwrap_or_else(|| panic!("no report: {js}\n{err}"))..];
    assert!(d.contains("\"interrupted\":true"), "{d}");
    let n = |k: &str| json_num(d, k).unwrap_or_else(|| panic!("no {k}: {d}"));
    let (done, left) = (n("groups"), n("groups_not_started"));
    assert!(done >= 3 && left > 0 && done + left == 100, "{d}");
    assert_eq!((n("files"), n("ioctl_calls"), n("errors")), (done, done, 0), "{d}");
    assert_eq!(n("bytes_deduplicated"), done * 16_384, "{d}");
    // The hash file holds what this run read: a rerun reads nothing.
    let again = dupes_with(&cache, &root);
    let js = text(&again.stdout);
    assert_eq!(json_num(summary(&js), "cache_hits"), Some(200), "{js}\n{}", text(&again.stderr));
    assert_eq!(json_num(summary(&js), "bytes_read"), Some(0), "{js}");
}

/// Issue 24, item 15: a hash file that cannot be read (EIO injected by strace into the
/// reads of that file only) is one message without Rust's "(os error 5)", and exit 1.
#[test]
fn hashfile_read_error_is_said_in_plain_words() {
    if !have_or_skip("strace", "hashfile_read_error_is_said_in_plain_words") {
        return;
    }
    let scratch = Scratch::new("hashfile-eio");
    let root = small_tree(&scratch);
    let cache = scratch.dir.join("hashes");
    assert!(dupes_with(&cache, &root).status.success());
    let out = Command::new("strace")
        .args(["-f", "-qq", "-o", "/dev/null", "-e", "trace=read", "-e", "inject=read:error=EIO", "-P"])
        .arg(&cache)
        .arg(dfdu_path())
        .args(["dupes", "--json", "--hashfile"])
        .arg(&cache)
        .arg(&root)
        .env("LC_ALL", "C")
        .output()
        .unwrap();
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    let want = format!(" dupes: cannot read hash file '{}': Input/output error\n", cache.display());
    assert!(err.ends_with(&want) && !err.contains("os error"), "{err}");
}
