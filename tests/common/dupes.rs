//! What `tests/dupes.rs` and `tests/dedupe.rs` share: the tree generator with its
//! manifest of true groups (`build`), the fdupes-style and JSON readers, `dfdu` runs, and
//! `LoopFs` (a file system image loop-mounted in a directory of its own under the
//! temporary directory, never `/mnt`). The SKIP helpers are in `skip.rs`.
//!
//! Test data is written with plain `write` calls (never `cp`, which may reflink).

use super::{dfdu_path, Scratch};
// Where the dupes tests look for them (`use common::dupes::*`); they live in bin.rs,
// json.rs and skip.rs.
#[allow(unused_imports)]
pub use super::{have, have_or_skip, json_num, need_root_and, required, run_ok, skip};
use std::collections::BTreeSet;
use std::fs;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{symlink, MetadataExt};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

pub struct Rng(pub u64);

impl Rng {
    pub fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.0 = x;
        x
    }
    pub fn bytes(&mut self, n: usize) -> Vec<u8> {
        let mut v = Vec::with_capacity(n + 8);
        while v.len() < n {
            v.extend_from_slice(&self.next().to_le_bytes());
        }
        v.truncate(n);
        v
    }
    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

pub type Groups = BTreeSet<BTreeSet<Vec<u8>>>;

pub fn pbytes(p: &Path) -> Vec<u8> {
    p.as_os_str().as_bytes().to_vec()
}

pub fn write(path: &Path, data: &[u8]) {
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    fs::write(path, data).unwrap();
}

/// Builds the test tree under `root`; returns the true groups (paths as dfdu prints them,
/// one name per inode: the one that sorts first).
pub fn build(root: &Path, seed: u64) -> Groups {
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

pub fn dfdu(args: &[&std::ffi::OsStr]) -> Output {
    Command::new(dfdu_path()).args(args).env("LC_ALL", "C").output().expect("run dfdu")
}

/// Groups from fdupes-style output (paths one per line, a blank line after each group).
pub fn parse_groups(out: &[u8], sizes: bool) -> Groups {
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

pub fn show(g: &Groups) -> String {
    g.iter()
        .map(|s| s.iter().map(|p| String::from_utf8_lossy(p).into_owned()).collect::<Vec<_>>().join("\n"))
        .collect::<Vec<_>>()
        .join("\n\n")
}

/// A file system image mounted on `dfdu-0-loop-<name>-<pid>/mnt` under the temporary
/// directory (the image beside it); unmounted and removed on drop.
pub struct LoopFs {
    pub image: PathBuf,
    pub mnt: PathBuf,
    pub mounted: bool,
}

impl LoopFs {
    /// A 512 MiB image of `kind` (btrfs…, xfs with reflink, xfs-noreflink, else ext4),
    /// named `dupes-<kind>`.
    pub fn new(kind: &str) -> Result<LoopFs, String> {
        Self::make(kind, &format!("dupes-{kind}"), "512M")
    }

    /// An image of `size` named `mutdedupe-<label>`.
    pub fn labelled(kind: &str, label: &str, size: &str) -> Result<LoopFs, String> {
        Self::make(kind, &format!("mutdedupe-{label}"), size)
    }

    /// The image `test` runs on: `labelled(kind, label, size)` when this runs as root with
    /// `mkfs.<kind>` and every one of `tools` installed, else `None` after a SKIP line
    /// naming `test` and what was missing (or why the image could not be had).
    pub fn for_test(test: &str, kind: &str, label: &str, size: &str, tools: &[&str]) -> Option<LoopFs> {
        let mkfs = format!("mkfs.{}", kind.split('-').next().unwrap_or(kind));
        if !(need_root_and(&mkfs, test) && tools.iter().all(|t| have_or_skip(t, test))) {
            return None;
        }
        match Self::labelled(kind, label, size) {
            Ok(fs) => Some(fs),
            Err(e) => {
                skip(&format!("{test}: cannot make or mount the {kind} image: {e}"));
                None
            }
        }
    }

    /// Where the image `name` and its mount point go, nothing made in them yet: a directory
    /// of their own under the temporary directory, like a test's scratch directory (they
    /// were under `/mnt` once, outside anything a test owns). Its name sorts before the
    /// scratch directories (`dfdu-compat-*`), as `/mnt` sorted before `/tmp`: dedupe's
    /// `skipped_other_fs` depends on which member of a group sorts first (a lone member on
    /// another file system sorting first is not counted), and `dedupe_counts_each_skip_on_btrfs`
    /// expects the order it was written with.
    pub fn unmounted(name: &str) -> Result<LoopFs, String> {
        let home = std::env::temp_dir().join(format!("dfdu-0-loop-{name}-{}", std::process::id()));
        fs::create_dir_all(&home).map_err(|e| e.to_string())?;
        Ok(LoopFs { image: home.join("fs.img"), mnt: home.join("mnt"), mounted: false })
    }

    fn make(kind: &str, name: &str, size: &str) -> Result<LoopFs, String> {
        let mut fsys = Self::unmounted(name)?;
        let run = |c: &mut Command| -> Result<(), String> {
            let o = c.output().map_err(|e| e.to_string())?;
            if o.status.success() {
                Ok(())
            } else {
                Err(String::from_utf8_lossy(&o.stderr).trim().to_string())
            }
        };
        run(Command::new("truncate").arg("-s").arg(size).arg(&fsys.image))?;
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
        // `remove_dir` never goes into a mount that stayed.
        let _ = fs::remove_dir(&self.mnt);
        let _ = fs::remove_file(&self.image);
        // The directory `unmounted` made for both, now empty.
        if let (Some(home), Some(at)) = (self.image.parent(), self.mnt.parent()) {
            if home == at {
                let _ = fs::remove_dir(home);
            }
        }
    }
}

/// What must not change about a file: its bytes, mode, owner and mtime.
#[derive(Debug, PartialEq, Eq)]
pub struct Kept {
    pub data: Vec<u8>,
    pub mode: u32,
    pub uid: u32,
    pub gid: u32,
    pub mtime: (i64, i64),
}

pub fn kept(p: &Path) -> Kept {
    let m = fs::symlink_metadata(p).unwrap();
    Kept { data: fs::read(p).unwrap(), mode: m.mode(), uid: m.uid(), gid: m.gid(), mtime: (m.mtime(), m.mtime_nsec()) }
}

pub fn walk(root: &Path) -> Vec<PathBuf> {
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

/// A small tree of two true groups: 3 copies of 1000 bytes and 2 of 5000, plus one file
/// of each size with other bytes; returns its root.
pub fn small_tree(scratch: &Scratch) -> PathBuf {
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

pub fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// Runs dfdu with `args` under `strace -f -y` (every descriptor shown with the path it
/// reaches), logging `trace` (a strace syscall list) to `log` and holding the process
/// for 3 s in the first call of `hold`; `during` runs while it is held. Returns dfdu's
/// output and the log.
pub fn run_held(
    args: &[&std::ffi::OsStr],
    trace: &str,
    hold: &str,
    log: &Path,
    during: impl FnOnce(),
) -> (Output, String) {
    let child = Command::new("strace")
        .args(["-f", "-y", "-o"])
        .arg(log)
        .args([
            "-e",
            &format!("trace={trace},{hold}"),
            "-e",
            &format!("inject={hold}:delay_enter=3000000:when=1"),
            "--",
        ])
        .arg(dfdu_path())
        .args(args)
        .env("LC_ALL", "C")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("run strace");
    let start = std::time::Instant::now();
    while !fs::read_to_string(log).unwrap_or_default().contains(&format!("{hold}(")) {
        assert!(start.elapsed().as_secs() < 60, "dfdu never reached {hold}");
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    during();
    let out = child.wait_with_output().expect("wait for strace");
    let text = fs::read_to_string(log).unwrap_or_default();
    assert!(text.contains("(DELAYED)"), "the run was not held in {hold}:\n{text}");
    (out, text)
}

/// Replaces the directory `dir` by a symlink to `target`, keeping the directory (moved to
/// `keep`): what the owner of `dir`'s parent can do at any time.
pub fn swap_for_symlink(dir: &Path, keep: &Path, target: &Path) {
    fs::rename(dir, keep).expect("move the directory away");
    symlink(target, dir).expect("put a symlink in its place");
}

/// Lines of an `strace -y` log in which a descriptor reaches `path` or below it (an open
/// that returned such a descriptor, a read from one).
pub fn lines_reaching<'a>(log: &'a str, path: &Path) -> Vec<&'a str> {
    let p = path.to_string_lossy();
    let (inside, exact) = (format!("<{p}/"), format!("<{p}>"));
    log.lines().filter(|l| l.contains(&inside) || l.contains(&exact)).collect()
}

/// Flips the byte at `offset` of `file`'s first extent on XFS by writing the `image`
/// under the mounted file system (the byte must be `expect` before), then drops the
/// file's cached pages: the kernel reads the new byte while size, mtime and ctime stay.
pub fn flip_byte_under_xfs(image: &Path, file: &Path, offset: u64, expect: u8) {
    use std::os::unix::fs::FileExt;
    run_ok(Command::new("sync").arg("-f").arg(file));
    // xfs_io's fiemap: "0: [0..391]: 96..487" in 512-byte sectors.
    let map = Command::new("xfs_io").args(["-r", "-c", "fiemap"]).arg(file).output().unwrap();
    let map = String::from_utf8_lossy(&map.stdout).into_owned();
    let first = map.lines().find_map(|l| l.trim().strip_prefix("0: [0..")).unwrap_or_else(|| panic!("{map}"));
    let sector: u64 = first.split("]: ").nth(1).and_then(|r| r.split("..").next()).unwrap().parse().unwrap();
    let at = sector * 512 + offset;
    let img = fs::OpenOptions::new().read(true).write(true).open(image).unwrap();
    let mut byte = [0u8; 1];
    img.read_exact_at(&mut byte, at).unwrap();
    assert_eq!(byte[0], expect, "{}'s first extent is at {at} in the image", file.display());
    img.write_all_at(&[!byte[0]], at).unwrap();
    img.sync_all().unwrap();
    run_ok(Command::new("dd").arg(format!("if={}", file.display())).args(["iflag=nocache", "count=0", "status=none"]));
}
