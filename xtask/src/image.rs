//! `--fs btrfs|xfs|ext4`: a file system of its own for the test tree, made in a file on
//! disk and loop-mounted, so dfdu and the peers can be timed on btrfs or XFS on a machine
//! whose disk is ext4 (Linux, root only).
//!
//! Layout: the image is `DIR/<fs>.img` (a sparse file: it takes on the host disk only what
//! the file system writes into it), mounted at `--mount M` (default
//! `/mnt/dfdu-<fs>-<name of DIR>`), and the tree is generated at `M/tree` with its marker
//! `M/tree.gentree.json` inside the image, so the usual reuse rules apply to it.
//!
//! Rules:
//! - M already mounted from this image: reused as it is.
//! - M mounted from anything else: refused (never unmounted, never written to).
//! - the image exists but is not mounted: it is mounted again (after a reboot).
//! - no image: DIR must be on a disk file system (not tmpfs or ramfs: the point is to
//!   read from a disk); the image is sized for the tree, made, mounted.
//! - the loop device reads the image with direct I/O where the kernel allows it, so a
//!   cold run reads the disk once (not the image's page cache on the host as well, which
//!   `drop_caches` would empty anyway, but with the host's readahead in between).
//! - Unmount with `umount M` (the loop device goes with it); delete the image with `rm`.
//!
//! Sizing: inodes are what a tree of empty files needs; ext4 fixes its inode count at
//! mkfs time, so it gets `-N` for the tree plus a margin; XFS allocates inodes as it goes
//! but caps their share of the space (`-i maxpct=50`); btrfs keeps inodes in its metadata
//! trees. The image's apparent size allows 2 KiB of metadata per entry plus 8 KiB of data
//! per entry for the mixed tree (its big files are allocated, never written, so the host
//! disk sees only the written part).

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use crate::cli;
use crate::plan::{Sizes, TreeId};

/// The file systems `--fs` can make.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Fs {
    Btrfs,
    Xfs,
    Ext4,
}

impl Fs {
    pub fn parse(text: &str) -> Result<Fs, String> {
        match text {
            "btrfs" => Ok(Fs::Btrfs),
            "xfs" => Ok(Fs::Xfs),
            "ext4" => Ok(Fs::Ext4),
            _ => Err(format!("--fs '{text}': expected btrfs, xfs or ext4")),
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Fs::Btrfs => "btrfs",
            Fs::Xfs => "xfs",
            Fs::Ext4 => "ext4",
        }
    }

    /// The Debian package that has this file system's mkfs.
    fn package(self) -> &'static str {
        match self {
            Fs::Btrfs => "btrfs-progs",
            Fs::Xfs => "xfsprogs",
            Fs::Ext4 => "e2fsprogs",
        }
    }
}

const GIB: u64 = 1 << 30;
/// Metadata allowance per entry (inode, directory entry, btrfs's duplicated tree blocks).
const META_BYTES_PER_ENTRY: u64 = 2048;
/// Data allowance per entry of the mixed tree (about 7 KB per entry is used).
const DATA_BYTES_PER_ENTRY: u64 = 8192;

/// The default mount point for `DIR`'s image of `fs`.
pub fn default_mount(fs: Fs, dir: &Path) -> PathBuf {
    let name = dir.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_else(|| "bench".into());
    let name: String = name.chars().map(|c| if c.is_ascii_alphanumeric() || c == '-' { c } else { '_' }).collect();
    PathBuf::from(format!("/mnt/dfdu-{}-{name}", fs.name()))
}

/// Makes (or finds) `DIR/<fs>.img` mounted at `mount`; returns where the tree goes.
pub fn prepare(fs: Fs, dir: &Path, mount: Option<PathBuf>, id: &TreeId, sharing: bool) -> Result<PathBuf, String> {
    if !cfg!(target_os = "linux") {
        return Err(format!("--fs {} needs Linux (loop devices)", fs.name()));
    }
    if !is_root() {
        return Err(format!(
            "--fs {} needs root: it runs mkfs.{}, losetup and mount (run as root, or with sudo)",
            fs.name(),
            fs.name()
        ));
    }
    let mkfs = format!("mkfs.{}", fs.name());
    let mut missing: Vec<String> = Vec::new();
    for (program, package) in [(mkfs.as_str(), fs.package()), ("mount", "mount"), ("losetup", "mount")] {
        if find_system_program(program).is_none() {
            missing.push(format!("{program} (apt-get install {package})"));
        }
    }
    if !missing.is_empty() {
        return Err(format!("--fs {} needs {}", fs.name(), missing.join(", ")));
    }
    if !Path::new("/proc/filesystems").exists()
        || !fs::read_to_string("/proc/filesystems").unwrap_or_default().contains(fs.name())
    {
        // Not listed may still mean "a module not yet loaded": mount will say.
        eprintln!("xtask: note: {} is not in /proc/filesystems yet (a module may load on mount)", fs.name());
    }
    fs::create_dir_all(dir).map_err(|e| format!("mkdir -p {}: {e}", dir.display()))?;
    let dir = fs::canonicalize(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let mount = mount.unwrap_or_else(|| default_mount(fs, &dir));
    // `--sharing` gets an image of its own: XFS made with a reverse map, and the tree's
    // copies and snapshots beside it.
    let image = dir.join(format!("{}{}.img", fs.name(), if sharing { "-sharing" } else { "" }));

    if let Some(mounted) = mounted_at(&mount) {
        let backing = mounted.source.strip_prefix("/dev/").and_then(loop_backing_file);
        if backing.as_deref() != Some(image.as_path()) || mounted.fs_type != fs.name() {
            return Err(format!(
                "{} is already a mount point ({} from {}), not of {}: choose another --mount",
                mount.display(),
                mounted.fs_type,
                mounted.source,
                image.display()
            ));
        }
        eprintln!("xtask: reusing {} ({} image {})", mount.display(), fs.name(), image.display());
        return Ok(mount.join("tree"));
    }
    if !image.exists() {
        let host_fs = host_fs_type(&dir);
        if matches!(host_fs.as_str(), "tmpfs" | "ramfs") {
            return Err(format!(
                "{} is on {host_fs}: the image must be on a disk (a cold run reads the disk); choose a DIR on one",
                dir.display()
            ));
        }
        make_image(fs, &image, id, sharing)?;
    }
    fs::create_dir_all(&mount).map_err(|e| format!("mkdir -p {}: {e}", mount.display()))?;
    run(Command::new("mount").arg("-o").arg("loop").arg(&image).arg(&mount))?;
    match mounted_at(&mount) {
        Some(m) if m.source.starts_with("/dev/loop") => {
            let dio = Command::new("losetup")
                .args(["--direct-io=on", &m.source])
                .stdin(Stdio::null())
                .stderr(Stdio::null())
                .status()
                .is_ok_and(|s| s.success());
            if !dio {
                eprintln!("xtask: note: {} reads the image through the host's page cache (no direct I/O)", m.source);
            }
            eprintln!("xtask: mounted {} ({}, {}) at {}", image.display(), fs.name(), m.source, mount.display());
        }
        _ => return Err(format!("mount {} at {}: not mounted afterwards", image.display(), mount.display())),
    }
    Ok(mount.join("tree"))
}

/// A sparse image file sized for the tree, with the file system made in it (`sharing`:
/// room for a tenth of the tree copied again, and XFS with its reverse map).
fn make_image(fs: Fs, image: &Path, id: &TreeId, sharing: bool) -> Result<(), String> {
    let data = if id.sizes == Sizes::Mixed { DATA_BYTES_PER_ENTRY } else { 0 };
    let entries = if sharing { id.entries * 2 } else { id.entries };
    let bytes = (entries * (META_BYTES_PER_ENTRY + data) + GIB).next_multiple_of(GIB);
    eprintln!("xtask: making {} ({} GiB apparent, sparse) with mkfs.{}", image.display(), bytes / GIB, fs.name());
    let file = fs::File::create(image).map_err(|e| format!("create {}: {e}", image.display()))?;
    file.set_len(bytes).map_err(|e| format!("size {}: {e}", image.display()))?;
    drop(file);
    let mut mkfs = Command::new(format!("mkfs.{}", fs.name()));
    match fs {
        Fs::Ext4 => {
            let inodes = id.entries + id.entries / 10 + 65_536;
            mkfs.args(["-q", "-F", "-N", &inodes.to_string()]);
        }
        Fs::Xfs => {
            mkfs.args(["-q", "-f", "-i", "maxpct=50"]);
            if sharing {
                // reflink=1 is mkfs.xfs's default; the reverse map is what dfdu reads the
                // sharing from in bulk (FS_IOC_GETFSMAP), and not a default in 6.1.
                mkfs.args(["-m", "reflink=1,rmapbt=1"]);
            }
        }
        Fs::Btrfs => {
            mkfs.args(["-q", "-f"]);
        }
    }
    mkfs.arg(image);
    if let Err(e) = run(&mut mkfs) {
        let _ = fs::remove_file(image);
        return Err(e);
    }
    Ok(())
}

/// Runs a command, its output shown; an error names the command.
fn run(command: &mut Command) -> Result<(), String> {
    let shown = format!(
        "{} {}",
        command.get_program().to_string_lossy(),
        command.get_args().map(|a| a.to_string_lossy()).collect::<Vec<_>>().join(" ")
    );
    let status = command.stdin(Stdio::null()).status().map_err(|e| format!("{shown}: {e}"))?;
    match status.success() {
        true => Ok(()),
        false => Err(format!("{shown}: {status}")),
    }
}

/// Effective uid 0, from /proc/self/status (no `unsafe` for geteuid).
fn is_root() -> bool {
    let status = fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|line| line.strip_prefix("Uid:"))
        .and_then(|ids| ids.split_whitespace().nth(1))
        .is_some_and(|euid| euid == "0")
}

/// A program on PATH or in the usual system directories (PATH may lack sbin).
fn find_system_program(name: &str) -> Option<PathBuf> {
    crate::tools::find_program(name).or_else(|| {
        ["/usr/sbin", "/sbin", "/usr/bin", "/bin"].iter().map(|d| Path::new(d).join(name)).find(|p| p.is_file())
    })
}

struct Mounted {
    source: String,
    fs_type: String,
}

/// What is mounted exactly at `path`, from /proc/self/mountinfo (the last mount wins).
fn mounted_at(path: &Path) -> Option<Mounted> {
    let path = fs::canonicalize(path).ok()?;
    let text = fs::read_to_string("/proc/self/mountinfo").ok()?;
    let mut found = None;
    for line in text.lines() {
        let Some((left, right)) = line.split_once(" - ") else { continue };
        let left: Vec<&str> = left.split(' ').collect();
        let right: Vec<&str> = right.split(' ').collect();
        if left.len() < 5 || right.len() < 2 {
            continue;
        }
        if Path::new(&crate::machine::unescape_octal(left[4])) == path {
            found = Some(Mounted { source: right[1].to_string(), fs_type: right[0].to_string() });
        }
    }
    found
}

/// The file a loop device (`loop3`) reads, from sysfs.
fn loop_backing_file(device: &str) -> Option<PathBuf> {
    let text = fs::read_to_string(format!("/sys/block/{device}/loop/backing_file")).ok()?;
    Some(PathBuf::from(text.trim_end()))
}

/// The type of the file system holding `dir` (`stat -f`).
fn host_fs_type(dir: &Path) -> String {
    let output = Command::new("stat").args(["-f", "-c", "%T"]).arg(dir).stdin(Stdio::null()).output();
    output.map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string()).unwrap_or_default()
}

/// The `--fs`/`--mount` pair as `gen` and `bench` take it.
pub struct FsArgs {
    pub fs: Option<Fs>,
    pub mount: Option<PathBuf>,
}

impl FsArgs {
    pub fn new() -> FsArgs {
        FsArgs { fs: None, mount: None }
    }

    /// Takes `--fs` or `--mount` from `args`; false when `name` is neither.
    pub fn take(&mut self, name: &str, args: &mut cli::Args) -> Result<bool, String> {
        match name {
            "--fs" => self.fs = Some(Fs::parse(&args.value(name)?.to_string_lossy())?),
            "--mount" => self.mount = Some(PathBuf::from(args.value(name)?)),
            _ => return Ok(false),
        }
        Ok(true)
    }

    pub fn check(&self) -> Result<(), String> {
        match (self.fs, &self.mount) {
            (None, Some(_)) => Err("--mount goes with --fs".to_string()),
            _ => Ok(()),
        }
    }
}

/// `--sharing`: beside `M/tree`, a copy of every tenth of its top-level directories in
/// `M/copies` made with `cp -a --reflink=always`, and on btrfs two read-only snapshots of
/// the mount's subvolume, `M/snap1` and `M/snap2` (XFS has none). Done once per image
/// (the marker `M/sharing.done`); returns what to time, `M` itself.
pub fn add_sharing(fs: Fs, tree: &Path) -> Result<PathBuf, String> {
    let mount = tree.parent().ok_or("the tree has no parent")?.to_path_buf();
    let marker = mount.join("sharing.done");
    if marker.exists() {
        eprintln!("xtask: reusing the copies and snapshots in {}", mount.display());
        return Ok(mount);
    }
    let copies = mount.join("copies");
    fs::create_dir_all(&copies).map_err(|e| format!("mkdir {}: {e}", copies.display()))?;
    let mut tops: Vec<PathBuf> = fs::read_dir(tree)
        .map_err(|e| format!("{}: {e}", tree.display()))?
        .filter_map(|e| e.ok())
        .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
        .map(|e| e.path())
        .collect();
    tops.sort();
    let chosen: Vec<&PathBuf> = tops.iter().step_by(10).collect();
    eprintln!("xtask: copying {} of {} top-level directories with cp --reflink=always", chosen.len(), tops.len());
    for top in chosen {
        run(Command::new("cp").args(["-a", "--reflink=always"]).arg(top).arg(&copies))?;
    }
    if fs == Fs::Btrfs {
        for snap in ["snap1", "snap2"] {
            run(Command::new("btrfs").args(["-q", "subvolume", "snapshot", "-r"]).arg(&mount).arg(mount.join(snap)))?;
        }
    }
    run(Command::new("sync").arg("-f").arg(&mount))?;
    fs::write(&marker, b"copies and snapshots made\n").map_err(|e| format!("{}: {e}", marker.display()))?;
    Ok(mount)
}
