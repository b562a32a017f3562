//! `--fs btrfs|xfs|ext4`: `cargo xtask gen` makes a loop-mounted image in DIR, generates
//! the tree inside, reuses the mounted image, mounts it again after an unmount, refuses a
//! mount point that holds something else and an image on tmpfs, and says clearly what is
//! wrong with bad options. Root and mkfs are needed for the image cases: without them they
//! print `SKIP:` (and fail when `DFDU_REQUIRE_ROOT=1` says they must run).

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn xtask() -> Command {
    Command::new(env!("CARGO_BIN_EXE_xtask"))
}

/// A fresh scratch directory on disk (not tmpfs: the image must be on a disk).
fn scratch(test: &str) -> PathBuf {
    let dir = PathBuf::from("/var/tmp").join(format!("xtask-image-test-{}-{test}", std::process::id()));
    let _ = fs::remove_dir_all(&dir);
    fs::create_dir_all(&dir).unwrap();
    dir
}

fn gen(args: &[&str], dir: &Path) -> Output {
    xtask().arg("gen").args(args).arg(dir).output().unwrap()
}

fn is_root() -> bool {
    let status = fs::read_to_string("/proc/self/status").unwrap_or_default();
    status.lines().find_map(|l| l.strip_prefix("Uid:")).and_then(|ids| ids.split_whitespace().nth(1)) == Some("0")
}

fn has_program(name: &str) -> bool {
    ["/usr/sbin", "/sbin", "/usr/bin", "/bin"].iter().any(|d| Path::new(d).join(name).is_file())
}

/// Whether the image cases can run here; a visible SKIP when not, a failure when the
/// environment says they must run.
fn can_make(fs_name: &str) -> bool {
    let mkfs = format!("mkfs.{fs_name}");
    let why = match (is_root(), has_program(&mkfs), Path::new("/dev/loop-control").exists()) {
        (false, _, _) => "not root",
        (_, false, _) => "no mkfs",
        (_, _, false) => "no loop devices",
        _ => return true,
    };
    assert!(std::env::var_os("DFDU_REQUIRE_ROOT").is_none_or(|v| v != "1"), "{fs_name} image: {why}");
    eprintln!("SKIP: --fs {fs_name}: {why}");
    false
}

/// (fs type, source) of what is mounted exactly at `path`.
fn mounted(path: &Path) -> Option<(String, String)> {
    let text = fs::read_to_string("/proc/self/mountinfo").unwrap();
    text.lines().rev().find_map(|line| {
        let (left, right) = line.split_once(" - ")?;
        (Path::new(left.split(' ').nth(4)?) == path).then(|| {
            let mut right = right.split(' ');
            (right.next().unwrap().to_string(), right.next().unwrap().to_string())
        })
    })
}

fn umount(path: &Path) {
    let ok = Command::new("umount").arg(path).status().is_ok_and(|s| s.success());
    assert!(ok, "umount {}", path.display());
}

fn image_round_trip(fs_name: &str) {
    if !can_make(fs_name) {
        return;
    }
    let base = scratch(fs_name);
    let mount = base.join("mnt");
    let args = ["--entries", "2000", "--fs", fs_name, "--mount", mount.to_str().unwrap()];
    let first = gen(&args, &base);
    let stderr = String::from_utf8_lossy(&first.stderr).into_owned();
    let result = std::panic::catch_unwind(|| {
        assert!(first.status.success(), "first gen: {stderr}");
        assert!(base.join(format!("{fs_name}.img")).is_file(), "the image sits in DIR");
        let (fs_type, source) = mounted(&mount).expect("the image is mounted");
        assert_eq!(fs_type, fs_name);
        assert!(source.starts_with("/dev/loop"), "{source}");
        let tree = mount.join("tree");
        assert!(mount.join("tree.gentree.json").is_file(), "the marker is inside the image");
        let files = walk_count(&tree);
        assert_eq!(files, 2000 - 1, "every entry below the root is in the image");

        // Mounted already: reused as it is.
        let second = gen(&args, &base);
        let stderr = String::from_utf8_lossy(&second.stderr);
        assert!(second.status.success(), "second gen: {stderr}");
        assert!(stderr.contains("reusing"), "{stderr}");
        assert!(String::from_utf8_lossy(&second.stdout).contains("reusing"));

        // Unmounted: mounted again, the tree reused.
        umount(&mount);
        let third = gen(&args, &base);
        let stderr = String::from_utf8_lossy(&third.stderr);
        assert!(third.status.success(), "third gen: {stderr}");
        assert!(stderr.contains("mounted"), "{stderr}");
        assert!(String::from_utf8_lossy(&third.stdout).contains("reusing"));
        assert_eq!(walk_count(&tree), 2000 - 1);

        // Another image's mount point is refused, and nothing is unmounted.
        let other = gen(&["--entries", "2000", "--fs", fs_name, "--mount", mount.to_str().unwrap()], &base.join("b"));
        assert_eq!(other.status.code(), Some(2));
        let stderr = String::from_utf8_lossy(&other.stderr);
        assert!(stderr.contains("is already a mount point"), "{stderr}");
        assert!(mounted(&mount).is_some());
    });
    if mounted(&mount).is_some() {
        umount(&mount);
    }
    fs::remove_dir_all(&base).unwrap();
    if let Err(panic) = result {
        std::panic::resume_unwind(panic);
    }
}

/// Entries below `root` (not itself), without following symlinks.
fn walk_count(root: &Path) -> usize {
    let mut stack = vec![root.to_path_buf()];
    let mut n = 0;
    while let Some(dir) = stack.pop() {
        for entry in fs::read_dir(&dir).unwrap() {
            let entry = entry.unwrap();
            n += 1;
            if entry.file_type().unwrap().is_dir() {
                stack.push(entry.path());
            }
        }
    }
    n
}

#[test]
fn xfs_image_is_made_mounted_reused_and_mounted_again() {
    image_round_trip("xfs");
}

#[test]
fn btrfs_image_is_made_mounted_reused_and_mounted_again() {
    image_round_trip("btrfs");
}

#[test]
fn ext4_image_is_made_mounted_reused_and_mounted_again() {
    image_round_trip("ext4");
}

#[test]
fn an_image_on_tmpfs_is_refused() {
    if !can_make("xfs") {
        return;
    }
    let on_tmpfs = Command::new("stat").args(["-f", "-c", "%T", "/dev/shm"]).output().unwrap();
    if String::from_utf8_lossy(&on_tmpfs.stdout).trim() != "tmpfs" {
        eprintln!("SKIP: /dev/shm is not a tmpfs here");
        return;
    }
    let dir = PathBuf::from(format!("/dev/shm/xtask-image-test-{}", std::process::id()));
    let mount = scratch("tmpfs").join("mnt");
    let out = gen(&["--entries", "2000", "--fs", "xfs", "--mount", mount.to_str().unwrap()], &dir);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("is on tmpfs: the image must be on a disk"), "{stderr}");
    assert!(!dir.join("xfs.img").exists());
    assert!(mounted(&mount).is_none());
    let _ = fs::remove_dir_all(&dir);
    let _ = fs::remove_dir_all(mount.parent().unwrap());
}

#[test]
fn bad_fs_options_get_one_clear_message() {
    let base = scratch("options");
    let cases: [(&[&str], &str); 2] = [
        (&["--fs", "zfs"], "xtask: --fs 'zfs': expected btrfs, xfs or ext4"),
        (&["--mount", "/mnt/x"], "xtask: --mount goes with --fs"),
    ];
    for (args, expected) in cases {
        for sub in ["gen", "bench"] {
            let out = xtask().arg(sub).args(args).arg(base.join("t")).output().unwrap();
            let stderr = String::from_utf8_lossy(&out.stderr);
            assert_eq!(out.status.code(), Some(2), "{sub} {args:?}: {stderr}");
            assert!(stderr.starts_with(expected), "{sub} {args:?}: {stderr}");
        }
    }
    assert!(!base.join("t").exists());
    fs::remove_dir_all(&base).unwrap();
}
