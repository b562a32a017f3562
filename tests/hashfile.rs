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
use common::{dfdu_path, is_root, Scratch};
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
