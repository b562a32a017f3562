//! Scratch directories and trees for the tests: `Scratch` (a fresh directory, unmounted and
//! removed on drop), `build` (a tree from one-line entries), big and deep trees, and small
//! file-system helpers.

#![allow(dead_code)]

use super::bin::notice;
use super::words::words;
use std::ffi::{OsStr, OsString};
use std::fs;
use std::io::Write;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{symlink, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};

static N_SCRATCH: AtomicUsize = AtomicUsize::new(0);

/// A fresh directory for one test, removed (after unmounting what was mounted) on drop.
pub struct Scratch {
    pub dir: PathBuf,
    mounts: Vec<PathBuf>,
}

impl Scratch {
    pub fn new(label: &str) -> Scratch {
        let n = N_SCRATCH.fetch_add(1, Ordering::SeqCst);
        let dir = std::env::temp_dir().join(format!("dfdu-compat-{}-{n}-{label}", std::process::id()));
        if dir.exists() {
            remove_tree(&dir);
        }
        fs::create_dir_all(&dir).expect("create scratch dir");
        fs::set_permissions(&dir, fs::Permissions::from_mode(0o755)).expect("chmod scratch dir");
        Scratch { dir, mounts: Vec::new() }
    }

    /// A subdirectory of the scratch dir, created with mode 755.
    pub fn subdir(&self, name: &str) -> PathBuf {
        let path = self.dir.join(name);
        fs::create_dir_all(&path).expect("create scratch subdir");
        fs::set_permissions(&path, fs::Permissions::from_mode(0o755)).expect("chmod scratch subdir");
        path
    }

    /// Mounts a fresh tmpfs on the existing directory `at`; the error text when that fails.
    pub fn mount_tmpfs(&mut self, at: &Path) -> Result<(), String> {
        self.mount(
            &[
                "-t".as_ref(),
                "tmpfs".as_ref(),
                "-o".as_ref(),
                "size=64m,mode=0755".as_ref(),
                "dfdu-compat-tmpfs".as_ref(),
            ],
            at,
        )
    }

    /// `mount -t FSTYPE none at` (proc, sysfs, ...), unmounted when the scratch dir is dropped.
    pub fn mount_fs(&mut self, fstype: &str, at: &Path) -> Result<(), String> {
        self.mount(&["-t".as_ref(), fstype.as_ref(), "none".as_ref()], at)
    }

    /// `mount --bind from at`, unmounted when the scratch dir is dropped.
    pub fn mount_bind(&mut self, from: &Path, at: &Path) -> Result<(), String> {
        self.mount(&["--bind".as_ref(), from.as_os_str()], at)
    }

    /// `mount ARGS at`, remembered so that dropping the scratch dir unmounts it.
    fn mount(&mut self, args: &[&std::ffi::OsStr], at: &Path) -> Result<(), String> {
        let out = Command::new("mount").args(args).arg(at).output().map_err(|e| format!("cannot run mount: {e}"))?;
        if !out.status.success() {
            return Err(String::from_utf8_lossy(&out.stderr).trim().to_string());
        }
        self.mounts.push(at.to_path_buf());
        Ok(())
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let mut all_unmounted = true;
        for at in self.mounts.iter().rev() {
            let ok = Command::new("umount").arg(at).status().map(|s| s.success()).unwrap_or(false);
            let ok = ok || Command::new("umount").arg("-l").arg(at).status().map(|s| s.success()).unwrap_or(false);
            all_unmounted &= ok;
        }
        if all_unmounted {
            remove_tree(&self.dir);
        } else {
            notice(&format!("du_compat: could not unmount under {}; left in place", self.dir.display()));
        }
    }
}

/// Removes a tree however deep it is and whatever its modes: `remove_contents` first (std's
/// `remove_dir_all` recurses, and a 20,000-level chain overflows a test thread's stack with
/// it), then `chmod -R u+rwx` and `rm -rf` for what that could not remove (`chmod 000`
/// directories when not root).
fn remove_tree(dir: &Path) {
    // A test may have removed it already.
    if fs::symlink_metadata(dir).is_err() {
        return;
    }
    if remove_contents(dir).is_err() || fs::remove_dir(dir).is_err() {
        let _ = Command::new("chmod").arg("-R").arg("u+rwx").arg(dir).status();
        let _ = Command::new("rm").arg("-rf").arg(dir).status();
    }
}

/// Empties the directory `dir` without recursion and with two handles at most: down into
/// the first subdirectory a listing shows, back up through `..` once a directory is empty
/// (then removed by the name it was entered by). Never follows a symbolic link.
fn remove_contents(dir: &Path) -> rustix::io::Result<()> {
    use rustix::fs::{openat, statat, unlinkat, AtFlags, Dir, FileType, Mode, OFlags, CWD};
    let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    let mut cur = openat(CWD, dir, flags, Mode::empty())?;
    // Names from `dir` down to `cur`.
    let mut names: Vec<std::ffi::CString> = Vec::new();
    loop {
        let mut sub = None;
        let mut removed_any = false;
        for entry in Dir::read_from(&cur)? {
            let entry = entry?;
            let name = entry.file_name();
            if name == c"." || name == c".." {
                continue;
            }
            let kind = match entry.file_type() {
                FileType::Unknown => FileType::from_raw_mode(statat(&cur, name, AtFlags::SYMLINK_NOFOLLOW)?.st_mode),
                kind => kind,
            };
            if kind == FileType::Directory {
                sub = Some(name.to_owned());
                break;
            }
            unlinkat(&cur, name, AtFlags::empty())?;
            removed_any = true;
        }
        if let Some(name) = sub {
            cur = openat(&cur, &name, flags, Mode::empty())?;
            names.push(name);
        } else if !removed_any {
            // A listing that found nothing at all: `cur` is empty.
            let Some(name) = names.pop() else { return Ok(()) };
            let up = openat(&cur, c"..", flags, Mode::empty())?;
            unlinkat(&up, &name, AtFlags::REMOVEDIR)?;
            cur = up;
        }
    }
}

/// Parses a size word: digits with an optional `K` or `M` (1024-based) suffix.
fn parse_size(word: &OsStr) -> u64 {
    let text = word.to_str().expect("size is ASCII");
    let (digits, unit) = match text.as_bytes().last() {
        Some(b'K') => (&text[..text.len() - 1], 1024),
        Some(b'M') => (&text[..text.len() - 1], 1024 * 1024),
        _ => (text, 1),
    };
    digits.parse::<u64>().unwrap_or_else(|_| panic!("bad size {text:?}")) * unit
}

/// Lays out a tree under `root`, applying one entry per line in order (words as in `words`):
///
/// ```text
/// d PATH              directory (parents made as needed, like every entry below)
/// f PATH SIZE         regular file with SIZE bytes of data; SIZE may end in K or M (1024-based)
/// z PATH SIZE         sparse file of SIZE bytes, all hole
/// z PATH SIZE tail    sparse file whose last byte is data (one allocated block)
/// x PATH TEXT         file holding exactly TEXT
/// s PATH TARGET       symbolic link
/// h PATH EXISTING     hard link to EXISTING (relative to the root)
/// t PATH DATE         access and modification time, as `touch -h -d DATE` (UTC)
/// a PATH DATE         access time only
/// T DATE              access and modification time of every entry, the root included
/// A DATE              access time of every entry
/// m PATH MODE         chmod, octal
/// ```
///
/// Dates for directories go last: making an entry changes its directory's mtime. Access times
/// that must survive a read go in the future: with `relatime`, reading a directory whose atime
/// is not after its mtime and ctime updates the atime, which would make the first tool to run
/// change what the second one sees.
pub fn build(root: &Path, lines: &[&str]) {
    fs::create_dir_all(root).expect("create tree root");
    for line in lines {
        let w = words(line);
        let kind = w.first().and_then(|k| k.to_str()).unwrap_or_else(|| panic!("empty tree line"));
        let arg = |i: usize| -> &OsStr { w.get(i).unwrap_or_else(|| panic!("tree line {line:?} is short")) };
        match kind {
            "T" | "A" => touch_all(root, arg(1), kind == "A"),
            _ => build_entry(root, kind, arg(1), &w[2..], line),
        }
    }
}

fn build_entry(root: &Path, kind: &str, path: &OsStr, rest: &[OsString], line: &str) {
    let path = root.join(path);
    if let Some(parent) = path.parent() {
        fs::create_dir_all(parent).expect("create parent dirs");
    }
    let arg = |i: usize| -> &OsStr { rest.get(i).unwrap_or_else(|| panic!("tree line {line:?} is short")) };
    let fail = |e: std::io::Error| panic!("tree line {line:?}: {e}");
    match kind {
        "d" => fs::create_dir_all(&path).unwrap_or_else(fail),
        "f" => write_data(&path, parse_size(arg(0))).unwrap_or_else(fail),
        "z" => write_sparse(&path, parse_size(arg(0)), rest.len() > 1).unwrap_or_else(fail),
        "x" => fs::write(&path, arg(0).as_bytes()).unwrap_or_else(fail),
        "s" => symlink(arg(0), &path).unwrap_or_else(fail),
        "h" => fs::hard_link(root.join(arg(0)), &path).unwrap_or_else(fail),
        "t" | "a" => touch(&path, arg(0), kind == "a"),
        "m" => {
            let mode = u32::from_str_radix(arg(0).to_str().unwrap_or("?"), 8).expect("octal mode");
            fs::set_permissions(&path, fs::Permissions::from_mode(mode)).unwrap_or_else(fail);
        }
        _ => panic!("unknown tree entry kind in {line:?}"),
    }
}

/// Files at least this big are synced when written (see `write_data`).
const SYNC_FROM_BYTES: u64 = 64 * 1024;

fn write_data(path: &Path, size_bytes: u64) -> std::io::Result<()> {
    let chunk = [b'.'; 64 * 1024];
    let mut file = fs::File::create(path)?;
    let mut left = size_bytes;
    while left > 0 {
        let n = left.min(chunk.len() as u64) as usize;
        file.write_all(&chunk[..n])?;
        left -= n as u64;
    }
    // Settle the block count now: ext4 allocates delayed blocks at writeback, which could
    // otherwise happen between the two tools' runs (files this big may need extent blocks).
    if size_bytes >= SYNC_FROM_BYTES {
        file.sync_all()?;
    }
    Ok(())
}

fn write_sparse(path: &Path, size_bytes: u64, data_at_end: bool) -> std::io::Result<()> {
    use std::os::unix::fs::FileExt;
    let file = fs::File::create(path)?;
    file.set_len(size_bytes)?;
    if data_at_end && size_bytes > 0 {
        file.write_at(b"!", size_bytes - 1)?;
    }
    Ok(())
}

fn touch(path: &Path, date: &OsStr, atime_only: bool) {
    let mut cmd = Command::new("touch");
    cmd.env("TZ", "UTC0").arg("-h");
    if atime_only {
        cmd.arg("-a");
    }
    let status = cmd.arg("-d").arg(date).arg(path).status().expect("run touch");
    assert!(status.success(), "touch -d {date:?} {} failed", path.display());
}

fn touch_all(root: &Path, date: &OsStr, atime_only: bool) {
    let mut cmd = Command::new("find");
    cmd.env("TZ", "UTC0").arg(root).args(["-depth", "-exec", "touch", "-h"]);
    if atime_only {
        cmd.arg("-a");
    }
    let status = cmd.arg("-d").arg(date).args(["{}", "+"]).status().expect("run find");
    assert!(status.success(), "touching every entry under {} failed", root.display());
}

/// Makes `n_entries` entries in `dir`: empty files `f00000`..., except that every
/// `subdir_every`-th entry is a directory holding one small file (0 for none).
pub fn build_many(dir: &Path, n_entries: usize, subdir_every: usize) {
    fs::create_dir_all(dir).expect("create big dir");
    for i in 0..n_entries {
        if subdir_every > 0 && i % subdir_every == subdir_every - 1 {
            let sub = dir.join(format!("d{i:06}"));
            fs::create_dir(&sub).expect("create subdir");
            write_data(&sub.join("inner"), 100).expect("write inner file");
        } else {
            fs::File::create(dir.join(format!("f{i:06}"))).expect("create file");
        }
    }
}

/// Makes `DIR/deep/NAME/NAME/...` with `n_levels` levels of `name` (mkdir and cd one level
/// at a time in a shell, since the full path outgrows PATH_MAX), and at the bottom a 5000-byte
/// file and a directory holding an empty file. `cd -P`, because dash's logical `cd` chdirs to
/// the whole remembered path and fails once that passes PATH_MAX.
pub fn build_deep(dir: &Path, n_levels: usize, name: &str) {
    let script = r#"cd "$1" && mkdir deep && cd deep || exit 1
i=0
while [ "$i" -lt "$2" ]; do mkdir "$3" && cd -P "$3" || exit 1; i=$((i + 1)); done
head -c 5000 /dev/zero > file && mkdir leaf && : > leaf/empty"#;
    let status = Command::new("sh")
        .args(["-c", script, "sh"])
        .arg(dir)
        .arg(n_levels.to_string())
        .arg(name)
        .status()
        .expect("run sh");
    assert!(status.success(), "building the deep tree failed");
}

/// Copies `binary` to `dir/name` with mode 755, so that another user can run it even when
/// the original lies under a directory that user cannot enter.
pub fn copy_executable(binary: &Path, dir: &Path, name: &str) -> PathBuf {
    let to = dir.join(name);
    fs::copy(binary, &to).unwrap_or_else(|e| panic!("copy {} to {}: {e}", binary.display(), to.display()));
    fs::set_permissions(&to, fs::Permissions::from_mode(0o755)).expect("chmod copied binary");
    to
}

/// Whether every ancestor of `path` can be entered by other users (mode o+x).
pub fn reachable_by_others(path: &Path) -> bool {
    path.ancestors()
        .filter(|p| !p.as_os_str().is_empty())
        .all(|p| fs::metadata(p).map(|m| m.permissions().mode() & 0o001 != 0).unwrap_or(false))
}
