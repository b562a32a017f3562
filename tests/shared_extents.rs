//! Sharing-aware figures (`dfdu scan --shared`) against real references, on loop-mounted
//! file system images (root only):
//!
//! * btrfs: for the root and every directory, total, exclusive and set shared equal what
//!   `btrfs filesystem du --raw -s` prints for it (reflink copies, a partly overwritten
//!   copy, a snapshot inside the tree, a FIDEDUPERANGE'd pair, inline, sparse and
//!   hard-linked files); Debian's ncdu loads the export carrying the extra keys, and
//!   dfdu's import reads them back.
//! * XFS (reflink=1): disk usage with sharing counted once equals the used space the
//!   tree took (statfs), and each directory's exclusive bytes are what deleting it frees.
//! * XFS with a reverse map (rmapbt=1): the one-listing path (`FS_IOC_GETFSMAP`) gives
//!   every directory the FIEMAP path's figures, reads no FIEMAP, and is not taken without
//!   CAP_SYS_ADMIN (run as nobody).
//! * ext4: no FIEMAP ioctl at all (strace), and no sharing figures.
//! * The browser under tmux on btrfs: the exclusive column, its sort key, the `i` box, and
//!   deleting a directory frees (btrfs data used) exactly what its exclusive figure said;
//!   the footer's figure follows each delete, and a rescan reads the extent maps again.
//!
//! Without root or the tools, each test prints `SKIP:` and passes, unless
//! `DFDU_REQUIRE_ROOT=1`, where it fails instead.

mod common;

use common::{dfdu_path, have, is_root, json_num};
use std::path::{Path, PathBuf};
use std::process::Command;

/// True when the test can run; otherwise prints why (or fails under DFDU_REQUIRE_ROOT=1).
fn can_run(test: &str, tools: &[&str]) -> bool {
    let why = if !is_root() {
        Some("needs root to mount a loop image".to_string())
    } else {
        tools.iter().find(|t| !have(t)).map(|t| format!("{t} is not installed"))
    };
    match why {
        None => true,
        Some(why) if std::env::var_os("DFDU_REQUIRE_ROOT").is_some_and(|v| v == "1") => {
            panic!("{test}: {why} (DFDU_REQUIRE_ROOT=1 says it must run)")
        }
        Some(why) => {
            eprintln!("SKIP: shared_extents {test}: {why}");
            false
        }
    }
}

fn sh(script: &str) -> String {
    let out = Command::new("sh").args(["-euc", script]).output().expect("run sh");
    assert!(
        out.status.success(),
        "sh -c {script:?} failed:\n{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// A file-backed image mounted on `dfdu-shared-<label>-<pid>/mnt` under the temporary
/// directory (the image beside it, never under `/mnt`); unmounted and removed on drop.
struct Mounted {
    at: PathBuf,
    image: PathBuf,
}

impl Mounted {
    fn new(label: &str, size: &str, mkfs: &str) -> Mounted {
        let home = std::env::temp_dir().join(format!("dfdu-shared-{label}-{}", std::process::id()));
        let (image, at) = (home.join("fs.img"), home.join("mnt"));
        std::fs::create_dir_all(&at).expect("create mount point");
        let _ = std::fs::remove_file(&image);
        sh(&format!("truncate -s {size} '{0}' && {mkfs} '{0}' >/dev/null 2>&1", image.display()));
        // Guard first, so a failed mount still removes the image and the mount point.
        let m = Mounted { at, image };
        sh(&format!("mount -o loop '{}' '{}'", m.image.display(), m.at.display()));
        m
    }

    /// An XFS image (reverse map, reflinks) holding `xfs_rmap_tree` in `top`: the mount
    /// and `top`.
    fn xfs_rmap_top(label: &str) -> (Mounted, PathBuf) {
        let m = Mounted::new(label, "600M", "mkfs.xfs -q -f -m rmapbt=1,reflink=1");
        let top = m.at.join("top");
        xfs_rmap_tree(&top);
        (m, top)
    }

    /// A btrfs image of `size` with a subvolume `top` at its root: the mount and `top`.
    fn btrfs_top(label: &str, size: &str) -> (Mounted, PathBuf) {
        let m = Mounted::new(label, size, "mkfs.btrfs -q -f");
        let top = m.at.join("top");
        sh(&format!("btrfs subvolume create '{}' >/dev/null", top.display()));
        (m, top)
    }
}

impl Drop for Mounted {
    fn drop(&mut self) {
        let at = self.at.display();
        let _ = Command::new("sh").args(["-c", &format!("umount '{at}' 2>/dev/null || umount -l '{at}'")]).status();
        // `remove_dir` never goes into a mount that stayed.
        let _ = std::fs::remove_dir(&self.at);
        let _ = std::fs::remove_file(&self.image);
        if let Some(home) = self.at.parent() {
            let _ = std::fs::remove_dir(home);
        }
    }
}

/// (path, [total, exclusive, set shared, disk once, frees, 1 if frees is an estimate])
/// of every directory in a dfdu ncdu export, paths joined from the root's name. The
/// export writes one entry per line and the test's names need no escapes.
fn export_dirs(export: &str) -> Vec<(String, [u64; 6])> {
    let keys = [
        "dfdu_total_bytes",
        "dfdu_exclusive_bytes",
        "dfdu_set_shared_bytes",
        "dfdu_disk_once_bytes",
        "dfdu_frees_bytes",
    ];
    let mut out = Vec::new();
    let mut stack: Vec<String> = Vec::new();
    for line in export.lines().skip(1) {
        let line = line.trim_start_matches(',');
        if let Some(rest) = line.strip_prefix("[{\"name\":\"") {
            let name = &rest[..rest.find('"').expect("name ends")];
            let path = match stack.last() {
                Some(p) => format!("{p}/{name}"),
                None => name.to_string(),
            };
            let mut v = [u64::MAX; 6];
            for (k, key) in keys.iter().enumerate() {
                let pat = format!("\"{key}\":");
                if let Some(i) = line.find(&pat) {
                    let digits: String = line[i + pat.len()..].chars().take_while(|c| c.is_ascii_digit()).collect();
                    v[k] = digits.parse().expect("a number");
                }
            }
            v[5] = u64::from(line.contains("\"dfdu_frees_estimate\":true"));
            out.push((path.clone(), v));
            stack.push(path);
        }
        let line = line.trim_end_matches(',');
        let closes = line.len() - line.trim_end_matches(']').len();
        for _ in 0..closes {
            stack.pop();
        }
    }
    out
}

/// `btrfs filesystem du --raw -s` for each path: [total, exclusive, set shared].
fn btrfs_du(paths: &[String]) -> Vec<[u64; 3]> {
    let mut cmd = Command::new("btrfs");
    cmd.args(["filesystem", "du", "--raw", "-s"]).args(paths);
    let out = cmd.output().expect("run btrfs");
    assert!(out.status.success(), "btrfs filesystem du: {}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    text.lines()
        .skip(1)
        .map(|l| {
            let w: Vec<u64> = l.split_whitespace().take(3).map(|n| n.parse().expect("a number")).collect();
            [w[0], w[1], w[2]]
        })
        .collect()
}

/// Checks each directory's figures of an export against `btrfs filesystem du --raw -s`;
/// returns what btrfs-progs said.
fn equal_to_btrfs_du(dirs: &[(String, [u64; 6])]) -> Vec<[u64; 3]> {
    let paths: Vec<String> = dirs.iter().map(|(p, _)| p.clone()).collect();
    let want = btrfs_du(&paths);
    assert_eq!(want.len(), dirs.len());
    let mut bad = Vec::new();
    for ((path, got), want) in dirs.iter().zip(&want) {
        if got[..3] != want[..] {
            bad.push(format!("{path}: dfdu {:?}, btrfs filesystem du {want:?}", &got[..3]));
        }
    }
    assert!(bad.is_empty(), "differences:\n{}", bad.join("\n"));
    want
}

/// `setpriv` running `dfdu ARGS` as nobody, without any capability (the tree must be
/// readable by all).
fn as_nobody(args: &[&str], root: &Path) -> std::process::Output {
    Command::new("setpriv")
        .args(["--reuid=65534", "--regid=65534", "--clear-groups", "--inh-caps=-all", "--bounding-set=-all"])
        .arg(dfdu_path())
        .args(args)
        .arg(root)
        .output()
        .expect("run setpriv")
}

/// The export of a `--shared` scan run as nobody.
fn nobody_export(root: &Path) -> String {
    let out = as_nobody(&["scan", "--shared", "-q", "-b", "-o", "-"], root);
    assert!(out.status.success(), "dfdu scan as nobody: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn scan_export(root: &Path) -> String {
    let out = Command::new(dfdu_path())
        .args(["scan", "--shared", "-q", "-b", "-o", "-"])
        .arg(root)
        .output()
        .expect("run dfdu");
    assert!(out.status.success(), "dfdu scan: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Writes `path` as `n` 4 KiB blocks with a hole after each: `n` extents, so its extent
/// map takes several FIEMAP calls (72 extents fit one).
fn fragmented(path: &Path, n: usize) {
    let mut cmd = Command::new("xfs_io");
    cmd.arg("-f");
    for i in 0..n {
        cmd.arg("-c").arg(format!("pwrite -q -S 0x{:02x} {} 4096", i % 251 + 1, i * 8192));
    }
    let out = cmd.arg(path).output().expect("run xfs_io");
    assert!(out.status.success(), "xfs_io: {}", String::from_utf8_lossy(&out.stderr));
}

/// The btrfs tree: every kind of sharing the acceptance names, compressed extents (whole,
/// partly overwritten, partly reflinked; and in a subvolume of its own, which the
/// snapshot does not take in, one referenced only by two pieces at different offsets,
/// which FIEMAP places both at the extent's start), inline, preallocated and sparse files, and
/// 600 files in many metadata leaves (so that, scanned without the snapshot, most of their
/// extents are shared only through tree blocks the snapshot shares).
fn btrfs_tree(top: &Path) {
    let t = top.display();
    sh(&format!(
        "cd '{t}'
         mkdir -p a b c/d e inline
         dd if=/dev/urandom of=a/f1 bs=64k count=48 status=none
         dd if=/dev/urandom of=e/one bs=64k count=16 status=none
         dd if=e/one of=e/two bs=64k status=none
         sync
         cp --reflink=always a/f1 b/f1copy
         cp --reflink=always a/f1 c/d/f1copy2
         dd if=/dev/urandom of=c/d/f1copy2 bs=4096 seek=10 count=20 conv=notrunc status=none
         xfs_io -c 'dedupe e/one 0 0 1048576' e/two >/dev/null
         for i in 1 2 3 4 5 6 7 8; do echo small $i > inline/s$i; done
         truncate -s 10M b/sparse
         dd if=/dev/urandom of=b/sparse bs=4096 seek=100 count=3 conv=notrunc status=none
         ln a/f1 c/hl
         ln e/one e/one-again
         dd if=/dev/urandom of=c/x bs=1000 count=100 status=none
         mkdir comp many
         btrfs property set comp compression zstd
         yes compressible | head -c 2000000 > comp/z
         sync
         cp --reflink=always comp/z comp/zcopy
         dd if=/dev/urandom of=comp/zcopy bs=4096 seek=100 count=4 conv=notrunc status=none
         xfs_io -f -c 'reflink comp/z 131072 0 131072' comp/zpart >/dev/null
         btrfs subvolume create solo >/dev/null
         btrfs property set solo compression zstd
         yes other | head -c 262144 > solo/w
         sync
         xfs_io -f -c 'reflink solo/w 20480 0 16384' solo/p1 >/dev/null
         xfs_io -f -c 'reflink solo/w 81920 0 16384' solo/p2 >/dev/null
         yes again | head -c 262144 | dd of=solo/w conv=notrunc status=none
         echo tiny > comp/inline
         xfs_io -f -c 'falloc 0 1M' -c 'pwrite -q 0 64k' comp/prealloc
         head -c 3000000 /dev/urandom | split -b 5000 - many/f
         sync
         btrfs subvolume snapshot . snap >/dev/null
         echo more >> inline/s1
         dd if=/dev/urandom of=b/f1copy bs=4096 seek=3 count=5 conv=notrunc status=none
         dd if=/dev/urandom of=a/after bs=64k count=4 status=none
         sync"
    ));
}

#[test]
fn btrfs_every_directory_matches_btrfs_filesystem_du() {
    if !can_run("btrfs", &["mkfs.btrfs", "btrfs", "xfs_io", "setpriv"]) {
        return;
    }
    let (m, top) = Mounted::btrfs_top("btrfs", "1G");
    btrfs_tree(&top);
    // A file of 200 extents (three FIEMAP calls), half of them then shared by a reflink.
    fragmented(&top.join("e/frag"), 200);
    sh(&format!(
        "sync; cp --reflink=always '{0}/e/frag' '{0}/a/frag'; dd if=/dev/urandom of='{0}/a/frag' bs=4096 count=200 conv=notrunc status=none; sync",
        top.display()
    ));
    let export = scan_export(&top);
    let dirs = export_dirs(&export);
    assert!(dirs.len() >= 16, "the export lists every directory: {dirs:?}");
    let want = equal_to_btrfs_du(&dirs);
    // Each directory scanned as a root of its own: then the snapshot lies outside the
    // scan, and what it shares is known only from the extent tree and the kernel.
    for sub in ["a", "b", "c", "e", "comp", "many", "solo", "snap", "snap/comp", "snap/many"] {
        equal_to_btrfs_du(&export_dirs(&scan_export(&top.join(sub))));
    }
    // Without CAP_SYS_ADMIN the figures come from FIEMAP, file by file: the same (the
    // tree made readable by all first).
    sh(&format!("chmod -R a+rX '{}'", top.display()));
    let fiemap = nobody_export(&top);
    assert_eq!(export_dirs(&fiemap), dirs, "a run without root's bulk reads gives the same figures");
    // The tree has each kind of figure, so the comparison above means something.
    let root = &want[0];
    assert!(root[1] > 0 && root[2] > 0 && root[0] > root[1] + root[2], "root figures {root:?}");
    // The JSON report carries the root's figures.
    let out = Command::new(dfdu_path()).args(["scan", "--shared", "-q", "--json"]).arg(&top).output().unwrap();
    let json = String::from_utf8_lossy(&out.stdout);
    let shared = &json[json.find("\"shared\":").expect("a shared object")..];
    assert_eq!(json_num(shared, "total_bytes"), Some(root[0]));
    assert_eq!(json_num(shared, "exclusive_bytes"), Some(root[1]));
    assert_eq!(json_num(shared, "set_shared_bytes"), Some(root[2]));
    // FIEMAP knows no reference counts: "frees" is the lower bound, every name of the
    // hard-linked files lying inside, and frees + set shared the upper one.
    assert_eq!(json_num(shared, "frees_bytes"), Some(root[1]));
    assert_eq!(json_num(shared, "frees_most_bytes"), Some(root[1] + root[2]));
    assert!(shared.contains("\"frees_exact\":false"), "{shared}");
    // Sharing counted once: less than the plain disk usage, more than the shared set.
    let once = json_num(shared, "disk_bytes_once").unwrap();
    let disk = json_num(&json, "disk_bytes").unwrap();
    assert!(once < disk && once >= root[1] + root[2], "disk once {once}, disk {disk}, {root:?}");
    // --no-shared asks nothing and reports nothing.
    let out = Command::new(dfdu_path()).args(["scan", "--no-shared", "-q", "--json"]).arg(&top).output().unwrap();
    assert!(!String::from_utf8_lossy(&out.stdout).contains("\"shared\""));
    // An import reads the figures back: the same export again.
    let file = m.at.join("export.json");
    std::fs::write(&file, &export).unwrap();
    let again = Command::new(dfdu_path()).args(["scan", "-q", "-f"]).arg(&file).args(["-o", "-"]).output().unwrap();
    let again = String::from_utf8_lossy(&again.stdout);
    assert_eq!(export_dirs(&again), dirs, "import → export keeps every directory's figures");
    // Debian's ncdu loads the export with the extra keys and writes it out again.
    if have("ncdu") {
        let out = Command::new("ncdu").arg("-f").arg(&file).args(["-o", "-"]).output().unwrap();
        assert!(out.status.success(), "ncdu -f: {}", String::from_utf8_lossy(&out.stderr));
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(text.contains("\"f1copy2\""), "ncdu re-export holds the tree");
    } else {
        eprintln!("SKIP: shared_extents btrfs: ncdu not installed; the ncdu load check did not run");
    }
}

/// Issue 25: a partial reflink (`xfs_io -c "reflink SRC OFF 0 LEN" DST`) makes a shared
/// range that lies inside an earlier, longer one (the source's whole extent, shared since
/// part of it is referenced twice). It must not shrink set shared or disk once: every
/// directory as `btrfs filesystem du --raw` says, disk once as the data the tree took.
#[test]
fn btrfs_partial_reflink_inside_a_longer_shared_extent() {
    if !can_run("btrfs_partial_reflink", &["mkfs.btrfs", "btrfs", "xfs_io"]) {
        return;
    }
    let (m, top) = Mounted::btrfs_top("btrfs-nested", "512M");
    // a/big: 4 MiB; b/part takes 1 MiB from its middle, one/part2 256 KiB from inside
    // one/big2 (same directory), and one/part3 a piece at a 4 KiB offset. The case needs
    // each source in one extent: under load (the other tests' images) btrfs wrote a/big
    // as several at times, even in one direct write, and FIEMAP, which merges extents
    // that lie one after the other on disk, may still show one. So the setup is made again
    // until `btrfs filesystem du` itself shows the nested case (each source shared whole).
    let mib = 1u64 << 20;
    let nested = [6 * mib + mib + 256 * 1024 + 8192, 0, 6 * mib];
    let mut tries = 0;
    let before = loop {
        tries += 1;
        sh(&format!("cd '{}' && rm -rf a b one && sync && mkdir a b one", top.display()));
        // What the earlier try took is given back by the sync's commit.
        let before = btrfs_data_used(&m.at);
        for (name, mib) in [("a/big", 4), ("one/big2", 2)] {
            sh(&format!(
                "dd if=/dev/urandom of='{}' bs={mib}M count=1 iflag=fullblock oflag=direct status=none && sync",
                top.join(name).display()
            ));
        }
        sh(&format!(
            "cd '{}'
             xfs_io -f -c 'reflink a/big 1048576 0 1048576' b/part >/dev/null
             xfs_io -f -c 'reflink one/big2 262144 0 262144' one/part2 >/dev/null
             xfs_io -f -c 'reflink one/big2 1052672 0 8192' one/part3 >/dev/null
             sync",
            top.display()
        ));
        let whole = btrfs_du(&[top.display().to_string()]);
        if whole[0] == nested {
            break before;
        }
        assert!(tries < 10, "btrfs never made the nested case in ten tries (last: {whole:?})");
    };
    let taken = btrfs_data_used(&m.at) - before;
    let dirs = export_dirs(&scan_export(&top));
    let paths: Vec<String> = dirs.iter().map(|(p, _)| p.clone()).collect();
    let want = btrfs_du(&paths);
    assert_eq!(want.len(), 4, "top, a, b, one: {dirs:?}");
    let mut bad = Vec::new();
    for ((path, got), want) in dirs.iter().zip(&want) {
        if got[..3] != want[..] {
            bad.push(format!("{path}: dfdu {:?}, btrfs filesystem du {want:?}", &got[..3]));
        }
    }
    assert!(bad.is_empty(), "differences:\n{}", bad.join("\n"));
    // The case is the nested one: each source is shared whole, the copies add nothing.
    assert_eq!(want[0], nested, "top");
    // No directory takes space, so with each shared byte counted once the tree holds
    // exactly the data btrfs allocated for it.
    assert_eq!(dirs[0].1[3], taken, "disk once of top: the data the tree took");
    let one = dirs.iter().find(|(p, _)| p.ends_with("/one")).expect("one in the export");
    assert_eq!(one.1[2..4], [2 * mib, 2 * mib], "one: set shared and disk once");
}

/// The same nested case on XFS, where FIEMAP reports an extent as shared only where its
/// blocks are: a whole reflink copy makes the source's extent shared throughout, and a
/// partial one then lies inside it. Disk once is the space the tree took (statfs).
#[test]
fn xfs_partial_reflink_inside_a_longer_shared_extent() {
    if !can_run("xfs_partial_reflink", &["mkfs.xfs", "xfs_io"]) {
        return;
    }
    let m = Mounted::new("xfs-nested", "300M", "mkfs.xfs -q -f -m reflink=1");
    let top = m.at.join("top");
    std::fs::create_dir(&top).unwrap();
    let before = used_bytes(&m.at);
    sh(&format!(
        "cd '{}'
         mkdir a b c
         dd if=/dev/urandom of=a/big bs=1M count=8 status=none
         sync
         cp --reflink=always a/big c/whole
         xfs_io -f -c 'reflink a/big 1048576 0 1048576' b/part >/dev/null
         xfs_io -f -c 'reflink a/big 4194304 0 65536' a/piece >/dev/null
         sync",
        top.display()
    ));
    let taken = used_bytes(&m.at) - before;
    let mib = 1u64 << 20;
    let dirs = export_dirs(&scan_export(&top));
    let fig = |name: &str| dirs.iter().find(|(p, _)| p.ends_with(name)).expect("in the export").1;
    // Every byte of a/big is referenced more than once, so set shared is its 8 MiB
    // wherever a/big is counted; b holds only its 1 MiB piece.
    assert_eq!(fig("/top")[..3], [17 * mib + 65536, 0, 8 * mib], "top");
    assert_eq!(fig("/a")[..3], [8 * mib + 65536, 0, 8 * mib], "a");
    assert_eq!(fig("/b")[..3], [mib, 0, mib], "b");
    let once = fig("/top")[3];
    // Inodes and directory blocks come on top of the data: allow 256 KiB of metadata.
    assert!(once <= taken && taken - once <= 256 * 1024, "disk once {once}, statfs used {taken}");
}

/// Used bytes of the file system holding `dir`, after the kernel has settled.
fn used_bytes(dir: &Path) -> u64 {
    let mut last = u64::MAX;
    for _ in 0..20 {
        let out = sh(&format!("sync -f '{0}'; stat -f -c '%S %b %f' '{0}'", dir.display()));
        let v: Vec<u64> = out.split_whitespace().map(|n| n.parse().unwrap()).collect();
        let used = v[0] * (v[1] - v[2]);
        if used == last {
            return used;
        }
        last = used;
        std::thread::sleep(std::time::Duration::from_millis(150));
    }
    last
}

fn shared_json(root: &Path) -> String {
    let out = Command::new(dfdu_path()).args(["scan", "--shared", "-q", "--json"]).arg(root).output().unwrap();
    let json = String::from_utf8_lossy(&out.stdout).into_owned();
    json[json.find("\"shared\":").expect("a shared object")..].to_string()
}

#[test]
fn xfs_disk_once_is_the_space_taken_and_exclusive_is_what_delete_frees() {
    if !can_run("xfs", &["mkfs.xfs"]) {
        return;
    }
    let m = Mounted::new("xfs", "600M", "mkfs.xfs -q -f -m reflink=1");
    let top = m.at.join("top");
    std::fs::create_dir(&top).unwrap();
    let before = used_bytes(&m.at);
    let t = top.display();
    sh(&format!(
        "cd '{t}'
         mkdir -p a b c d e
         dd if=/dev/urandom of=a/f bs=1M count=8 status=none
         sync
         cp --reflink=always a/f b/f
         cp --reflink=always a/f c/f
         dd if=/dev/urandom of=c/f bs=1M seek=2 count=3 conv=notrunc status=none
         dd if=/dev/urandom of=d/own bs=1M count=2 status=none
         dd if=/dev/urandom of=e/own bs=1M count=2 status=none
         cp --reflink=always e/own e/own2
         sync"
    ));
    let taken = used_bytes(&m.at) - before;
    let once = json_num(&shared_json(&top), "disk_bytes_once").unwrap();
    // Inodes and directory blocks come on top of the data: allow 256 KiB of metadata.
    let slack = 256 * 1024;
    assert!(once <= taken && taken - once <= slack, "disk once {once}, statfs used {taken}");
    // Directories whose shared extents are all shared with the rest of the tree: deleting
    // one frees its exclusive bytes. Directory `e` shares only within itself: deleting it
    // frees more than its exclusive bytes, at most exclusive + set shared. FIEMAP knows no
    // reference counts, so "frees" is an estimate wherever something is shared, and what
    // the delete freed lies between its bounds (frees, frees + set shared).
    let slack = 64 * 1024;
    for dir in ["e", "c", "b", "d", "a"] {
        let export = scan_export(&top);
        let figures = export_dirs(&export);
        let (_, v) = figures.iter().find(|(p, _)| p.ends_with(&format!("/{dir}"))).expect("directory in the export");
        let (exclusive, set_shared, frees, estimate) = (v[1], v[2], v[4], v[5] == 1);
        assert_eq!((frees, estimate), (exclusive, set_shared > 0), "{dir}: frees {frees} (estimate: {estimate})");
        let before = used_bytes(&m.at);
        sh(&format!("rm -r '{t}/{dir}'"));
        let freed = before - used_bytes(&m.at);
        let most = if dir == "e" { exclusive + set_shared } else { exclusive };
        assert!(
            freed >= exclusive && freed <= most + slack,
            "{dir}: exclusive {exclusive}, set shared {set_shared}, deleting it freed {freed}"
        );
        assert!(freed >= frees && freed <= frees + set_shared + slack, "{dir}: frees {frees}, freed {freed}");
    }
}

#[test]
fn ext4_asks_no_fiemap() {
    if !can_run("ext4", &["mkfs.ext4", "strace"]) {
        return;
    }
    let m = Mounted::new("ext4", "64M", "mkfs.ext4 -q -F");
    let top = m.at.join("top");
    sh(&format!(
        "mkdir -p '{0}/a' && dd if=/dev/urandom of='{0}/a/f' bs=64k count=4 status=none && cp '{0}/a/f' '{0}/g' && sync",
        top.display()
    ));
    // The trace goes beside the image: a file growing in the tree while it is scanned
    // would make the figures of the runs compared differ.
    let logs = Scratch::new(&format!("strace-{}", line!()));
    let log = logs.0.join("strace.log");
    let out = Command::new("strace")
        .args(["-f", "-e", "trace=ioctl,fstatfs", "-o"])
        .arg(&log)
        .arg(dfdu_path())
        .args(["scan", "--shared", "-q", "--json"])
        .arg(&top)
        .output()
        .unwrap();
    assert!(out.status.success());
    let trace = std::fs::read_to_string(&log).unwrap();
    assert!(trace.contains("fstatfs"), "the trace works: the file system type was asked");
    assert!(!trace.contains("FS_IOC_FIEMAP"), "no FIEMAP on ext4:\n{trace}");
    let with = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(!with.contains("\"shared\""), "no sharing figures on ext4");
    // And the report is the one a scan without sharing gives (but for the time it took).
    let without = Command::new(dfdu_path()).args(["scan", "--no-shared", "-q", "--json"]).arg(&top).output().unwrap();
    assert!(without.status.success());
    let untimed = |json: &str| {
        let at = json.find("\"elapsed_seconds\":").expect("elapsed_seconds");
        let end = at + json[at..].find(',').expect("a comma after it");
        format!("{}{}", &json[..at], &json[end..])
    };
    assert_eq!(untimed(&with), untimed(&String::from_utf8_lossy(&without.stdout)), "--shared changes nothing on ext4");
}

/// Runs `dfdu scan --shared --json ROOT` under `strace -f -e trace=ioctl,openat`, as root
/// or as nobody; returns the trace and the report.
fn traced_scan(root: &Path, log: &Path, nobody: bool) -> (String, String) {
    let mut cmd = Command::new("strace");
    cmd.args(["-f", "-e", "trace=ioctl,openat", "-o"]).arg(log);
    if nobody {
        cmd.args([
            "setpriv",
            "--reuid=65534",
            "--regid=65534",
            "--clear-groups",
            "--inh-caps=-all",
            "--bounding-set=-all",
        ]);
    }
    let out = cmd.arg(dfdu_path()).args(["scan", "--shared", "-q", "-b", "--json"]).arg(root).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    (std::fs::read_to_string(log).unwrap(), String::from_utf8_lossy(&out.stdout).into_owned())
}

/// As root on btrfs the figures come from tree searches: no FIEMAP and no file opened,
/// a handful of searches for the whole tree. Without CAP_SYS_ADMIN (nobody) the searches
/// are refused and each file with blocks gets its FIEMAP calls as before, with the same
/// figures.
#[test]
fn btrfs_reads_in_bulk_as_root_and_by_fiemap_otherwise() {
    if !can_run("btrfs_bulk_or_fiemap", &["mkfs.btrfs", "strace", "xfs_io", "setpriv"]) {
        return;
    }
    let m = Mounted::new("btrfs-calls", "512M", "mkfs.btrfs -q -f");
    let top = m.at.join("top");
    sh(&format!(
        "mkdir -p '{0}/a' && dd if=/dev/urandom of='{0}/a/f' bs=64k count=4 status=none && sync && cp --reflink=always '{0}/a/f' '{0}/g' && : > '{0}/empty' && sync",
        top.display()
    ));
    fragmented(&top.join("frag"), 200);
    // Readable by nobody, whose scan reads the extent maps itself.
    sh(&format!("chmod -R a+rX '{}' && sync", top.display()));
    // The trace goes beside the image: a file growing in the tree while it is scanned
    // would make the figures of the runs compared differ.
    let logs = Scratch::new(&format!("strace-{}", line!()));
    let log = logs.0.join("strace.log");
    let (trace, bulk) = traced_scan(&top, &log, false);
    assert_eq!(trace.matches("FS_IOC_FIEMAP").count(), 0, "no FIEMAP as root:\n{trace}");
    let searches = trace.matches("BTRFS_IOC_TREE_SEARCH_V2").count();
    assert!((2..=8).contains(&searches), "{searches} tree searches for four files:\n{trace}");
    for name in ["/a/f\"", "/g\"", "/frag\"", "\"f\"", "\"g\"", "\"frag\""] {
        assert!(!trace.contains(name), "no file opened ({name}):\n{trace}");
    }
    let (trace, fiemap) = traced_scan(&top, &log, true);
    assert!(trace.contains("BTRFS_IOC_TREE_SEARCH_V2") && trace.contains("EPERM"), "the search was refused:\n{trace}");
    // Two files with blocks, one call each (a few extents fit one buffer), three calls for
    // the 200-extent file (72 + 72 + 56), none for the empty file.
    assert_eq!(trace.matches("FS_IOC_FIEMAP").count(), 2 + 3, "{trace}");
    assert!(!trace.contains("FIEMAP_FLAG_SYNC"), "never FIEMAP_FLAG_SYNC:\n{trace}");
    let figures =
        |json: &str| json[json.find("\"shared\":").expect("a shared object")..].split('}').next().unwrap().to_string();
    assert_eq!(figures(&bulk), figures(&fiemap), "the same figures both ways");
}

/// A scratch directory of the test's own under the temporary directory, removed on drop.
struct Scratch(PathBuf);

impl Scratch {
    fn new(label: &str) -> Scratch {
        let dir = std::env::temp_dir().join(format!("dfdu-shared-{label}-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("create scratch directory");
        Scratch(dir)
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Bytes btrfs's data block groups hold (`btrfs filesystem df -b`), after a sync.
fn btrfs_data_used(mnt: &Path) -> u64 {
    let out = sh(&format!("btrfs filesystem sync '{0}' && btrfs filesystem df -b '{0}'", mnt.display()));
    let line = out.lines().find(|l| l.starts_with("Data,")).expect("a Data line");
    let used = &line[line.find("used=").expect("used=") + 5..];
    used.trim().parse().expect("a number")
}

/// `dfdu browse --shared` in a private tmux server (window 100 × 30).
struct Tmux {
    socket: String,
}

impl Tmux {
    fn start(dir: &Path) -> Tmux {
        Tmux::start_with(dir, "--shared", "")
    }

    /// `dfdu browse OPTIONS DIR` with the environment assignments `env` before it.
    fn start_with(dir: &Path, options: &str, env: &str) -> Tmux {
        // One server per test: tests run in parallel.
        static NEXT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let socket = format!("dfdu-shared-{}-{n}", std::process::id());
        let cmd =
            format!("{env} LC_ALL=C.UTF-8 '{}' browse {options} '{}'; sleep 600", dfdu_path().display(), dir.display());
        let t = Tmux { socket };
        t.run(&["-f", "/dev/null", "new-session", "-d", "-s", "t", "-x", "100", "-y", "30", "sh", "-c", &cmd]);
        t
    }

    fn run(&self, args: &[&str]) -> String {
        let out = Command::new("tmux").arg("-u").arg("-L").arg(&self.socket).args(args).output().expect("tmux");
        assert!(out.status.success(), "tmux {args:?}: {}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    fn keys(&self, k: &str) {
        self.run(&["send-keys", "-t", "t", k]);
    }

    fn wait(&self, what: &str, ok: impl Fn(&str) -> bool) -> String {
        let start = std::time::Instant::now();
        loop {
            let s = self.run(&["capture-pane", "-p", "-t", "t"]);
            if ok(&s) {
                return s;
            }
            assert!(start.elapsed().as_secs() < 20, "timed out waiting for {what}; the screen was:\n{s}");
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
    }

    /// Directory rows top to bottom (the name is the last word).
    fn names(screen: &str) -> Vec<String> {
        screen
            .lines()
            .skip(2)
            .take_while(|l| l.contains(" ["))
            .map(|l| l.split_whitespace().last().unwrap_or_default().to_string())
            .collect()
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = Command::new("tmux").args(["-L", &self.socket, "kill-server"]).output();
    }
}

#[test]
fn browser_sorts_by_exclusive_and_delete_frees_it_on_btrfs() {
    if !can_run("browser", &["mkfs.btrfs", "btrfs", "tmux"]) {
        return;
    }
    let m = Mounted::new("browse", "512M", "mkfs.btrfs -q -f");
    let top = m.at.join("top");
    // By size: b (9 MiB), a (8 MiB), c (3 MiB); by exclusive: c (3 MiB), b (1 MiB), a (0).
    sh(&format!(
        "mkdir '{0}' && cd '{0}'
         mkdir a b c
         dd if=/dev/urandom of=a/f bs=1M count=8 status=none
         sync
         cp --reflink=always a/f b/f
         dd if=/dev/urandom of=b/own bs=1M count=1 status=none
         dd if=/dev/urandom of=c/own bs=1M count=3 status=none
         sync",
        top.display()
    ));
    let t = Tmux::start(&top);
    let s = t.wait("the scan and its figures", |s| s.contains("Scan finished") && s.contains("Sharing counted once"));
    assert_eq!(Tmux::names(&s), ["/b", "/a", "/c"], "size order:\n{s}");
    t.keys("x");
    let s = t.wait("exclusive order", |s| Tmux::names(s) == ["/c", "/b", "/a"]);
    assert!(s.contains("3.0 MiB") && s.contains("1.0 MiB"), "the exclusive column shows:\n{s}");
    // The i box of the first row (c) gives its exclusive bytes exactly.
    t.keys("i");
    let s = t.wait("the info box", |s| s.contains("Exclusive:"));
    let line = s.lines().find(|l| l.contains("Exclusive:")).unwrap();
    let exclusive: u64 =
        line[line.find('(').unwrap() + 1..line.find(" bytes").unwrap()].replace(',', "").parse().unwrap();
    assert_eq!(exclusive, 3 << 20);
    t.keys("i");
    // Delete c and see the data it freed.
    let before = btrfs_data_used(&m.at);
    t.keys("d");
    t.wait("the confirmation", |s| s.contains("Confirm delete"));
    t.keys("y");
    t.wait("the delete", |s| s.contains("Deleted"));
    let freed = before - btrfs_data_used(&m.at);
    assert_eq!(freed, exclusive, "deleting c freed what its exclusive figure said");
    // The footer's figure follows the delete (12 MiB before: a's 8 shared with b, b's own
    // 1, c's 3; btrfs directories take no data blocks).
    t.wait("the footer without c", |s| footer_once(s).as_deref() == Some("9.0 MiB"));
    // b next: its exclusive MiB is freed; the reflinked 8 MiB stays (a holds it).
    t.keys("Home");
    t.wait("b on top", |s| Tmux::names(s).first().is_some_and(|n| n == "/b"));
    let before = btrfs_data_used(&m.at);
    t.keys("d");
    t.wait("the confirmation", |s| s.contains("Confirm delete"));
    t.keys("y");
    t.wait("the delete", |s| s.matches("Deleted").count() >= 1 && Tmux::names(s) == ["/a"]);
    assert_eq!(before - btrfs_data_used(&m.at), 1 << 20, "deleting b freed its exclusive 1 MiB only");
    let s = t.wait("the footer without b", |s| footer_once(s).as_deref() == Some("8.0 MiB"));
    // a's extent was flagged shared when it was read: its exclusive figure is still 0
    // until a rescan reads its map again, now that b's copy is gone (and synced above).
    assert_eq!(info_exclusive(&t), 0, "before the rescan:\n{s}");
    t.keys("r");
    t.wait("the rescan", |s| s.contains("Rescanned"));
    assert_eq!(info_exclusive(&t), 8 << 20, "after the rescan a's 8 MiB are its own");
    t.wait("the footer after the rescan", |s| footer_once(s).as_deref() == Some("8.0 MiB"));
}

/// The footer's "Sharing counted once" figure.
fn footer_once(screen: &str) -> Option<String> {
    let line = screen.lines().rev().find(|l| l.contains("Sharing counted once: "))?;
    let rest = &line[line.find("Sharing counted once: ")? + 22..];
    Some(rest.split("  ").next()?.trim().to_string())
}

/// The exclusive bytes the `i` box gives for the selected row (opens and closes it).
fn info_exclusive(t: &Tmux) -> u64 {
    t.keys("i");
    let s = t.wait("the info box", |s| s.contains("Exclusive:"));
    t.keys("i");
    let line = s.lines().find(|l| l.contains("Exclusive:")).unwrap();
    line[line.find('(').unwrap() + 1..line.find(" bytes").unwrap()].replace(',', "").parse().unwrap()
}

/// An XFS tree with a reverse map (`rmapbt=1`): whole and partial reflink copies, a copy
/// partly overwritten, hard links, preallocated, sparse and fragmented files, small ones.
fn xfs_rmap_tree(top: &Path) {
    sh(&format!(
        "mkdir -p '{0}' && cd '{0}'
         mkdir -p a b/c d e
         dd if=/dev/urandom of=a/big bs=1M count=8 status=none
         sync
         cp --reflink=always a/big b/whole
         xfs_io -f -c 'reflink a/big 1048576 0 1048576' b/c/part >/dev/null
         dd if=/dev/urandom of=b/whole bs=64k seek=5 count=3 conv=notrunc status=none
         ln a/big d/hard
         fallocate -l 3M d/prealloc
         truncate -s 10M d/sparse
         dd if=/dev/urandom of=d/sparse bs=4k seek=100 count=3 conv=notrunc status=none
         for i in $(seq 1 40); do echo $i > a/small$i; done",
        top.display()
    ));
    fragmented(&top.join("e/frag"), 200);
    sh(&format!(
        "cd '{0}' && sync && cp --reflink=always e/frag e/frag2 && dd if=/dev/urandom of=e/frag2 bs=4k seek=40 count=30 conv=notrunc status=none && sync",
        top.display()
    ));
}

/// `dfdu scan --shared` of `root` into an export, the extent path chosen by the test aid
/// `DFDU_DEBUG_EXTENTS` (`fiemap`, `bulk`, or unset), traced with strace into `log`.
fn traced_export(root: &Path, path: Option<&str>, log: &Path) -> String {
    let mut cmd = Command::new("strace");
    cmd.args(["-f", "-e", "trace=ioctl", "-o"]).arg(log).arg(dfdu_path());
    cmd.args(["scan", "--shared", "-q", "-b", "-o", "-"]).arg(root);
    match path {
        Some(p) => cmd.env("DFDU_DEBUG_EXTENTS", p),
        None => cmd.env_remove("DFDU_DEBUG_EXTENTS"),
    };
    let out = cmd.output().expect("run strace dfdu");
    assert!(out.status.success(), "dfdu scan: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Issue 28: on XFS with a reverse map, as root, the scan reads every file's extents from
/// one `FS_IOC_GETFSMAP` listing instead of a FIEMAP per file, and every directory's four
/// figures equal the FIEMAP path's: forced either way on a subdirectory, and chosen by
/// itself on the whole file system (the scan starts at the mount's root).
#[test]
fn xfs_reverse_map_listing_equals_fiemap_on_every_directory() {
    if !can_run("xfs_rmap", &["mkfs.xfs", "xfs_io", "strace"]) {
        return;
    }
    let (m, top) = Mounted::xfs_rmap_top("xfs-rmap");
    // The trace goes beside the image: a file growing in the tree while it is scanned
    // would make the figures of the runs compared differ.
    let logs = Scratch::new(&format!("strace-{}", line!()));
    let log = logs.0.join("strace.log");
    let calls = |name: &str| std::fs::read_to_string(&log).unwrap().matches(name).count();
    let four =
        |v: Vec<(String, [u64; 6])>| v.into_iter().map(|(p, f)| (p, [f[0], f[1], f[2], f[3]])).collect::<Vec<_>>();
    for root in [&top, &m.at] {
        let fiemap = traced_export(root, Some("fiemap"), &log);
        let want = four(export_dirs(&fiemap));
        assert!(calls("FS_IOC_FIEMAP") >= 40 && calls("FS_IOC_GETFSMAP") == 0, "the FIEMAP path asks each file");
        assert!(want.len() >= 6 && want.iter().any(|(_, v)| v[2] > 0 && v[1] > 0), "{want:?}");
        let auto = if root == &m.at { None } else { Some("bulk") };
        let listed = export_dirs(&traced_export(root, auto, &log));
        // The listing names each shared extent and how many files share it: exact.
        assert!(listed.iter().all(|(_, f)| f[5] == 0), "frees is exact on every directory: {listed:?}");
        let got = four(listed);
        assert!(calls("FS_IOC_GETFSMAP") >= 1, "{}: the listing was read", root.display());
        assert_eq!(calls("FS_IOC_FIEMAP"), 0, "{}: no file asked on its own", root.display());
        assert_eq!(got, want, "{}: listing and FIEMAP agree on every directory", root.display());
    }
}

/// Without root (no CAP_SYS_ADMIN) the kernel would list free space and unknown owners
/// only: the listing is not read at all, each file is asked as before, with the same
/// figures.
#[test]
fn xfs_without_root_asks_each_file_and_gets_the_same_figures() {
    if !can_run("xfs_rmap_nobody", &["mkfs.xfs", "xfs_io", "strace", "setpriv"]) {
        return;
    }
    let (m, top) = Mounted::xfs_rmap_top("xfs-rmap-nobody");
    // Every file readable (xfs_io makes its files 0600): what nobody may not read counts
    // nothing on either path, which would compare nothing.
    sh(&format!("chmod -R a+rX '{}'", top.display()));
    // The trace goes beside the image: a file growing in the tree while it is scanned
    // would make the figures of the runs compared differ.
    let logs = Scratch::new(&format!("strace-{}", line!()));
    let log = logs.0.join("strace.log");
    let want = export_dirs(&traced_export(&m.at, Some("fiemap"), &log));
    // Nobody may not read the worktree's binary: a copy on the image, and its home open.
    let bin = m.at.join("dfdu");
    std::fs::copy(dfdu_path(), &bin).unwrap();
    sh(&format!("chmod 755 '{}' && chmod 666 '{}' 2>/dev/null || :", m.at.parent().unwrap().display(), log.display()));
    let out = Command::new("strace")
        .args(["-f", "-e", "trace=ioctl", "-o"])
        .arg(&log)
        .args(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "--"])
        .arg(&bin)
        .args(["scan", "--shared", "-q", "-b", "-o", "-"])
        .arg(&m.at)
        .env_remove("DFDU_DEBUG_EXTENTS")
        .output()
        .unwrap();
    assert!(out.status.success(), "dfdu scan as nobody: {}", String::from_utf8_lossy(&out.stderr));
    let trace = std::fs::read_to_string(&log).unwrap();
    assert!(!trace.contains("FS_IOC_GETFSMAP"), "no listing read without the capability:\n{trace}");
    assert!(trace.matches("FS_IOC_FIEMAP").count() >= 40, "each file asked instead");
    let got = export_dirs(&String::from_utf8_lossy(&out.stdout));
    // The binary copied in is one more file at the top, counted in the root only.
    let strip = |v: &[(String, [u64; 6])]| v.iter().skip(1).cloned().collect::<Vec<_>>();
    assert_eq!(strip(&got), strip(&want), "as nobody, the FIEMAP path's figures");
}

/// Issue 28: with the reverse map's listing, "frees" is exact (every shared extent comes
/// with how many files share it), and deleting each of several directories frees what it
/// said (statfs, after a sync; within 64 KiB of metadata). Directory `e` shares only
/// within itself (a reflink copy beside its source): deleting it frees its shared bytes
/// too, which "frees" counts and exclusive does not.
#[test]
fn xfs_reverse_map_frees_is_what_deleting_frees() {
    if !can_run("xfs_rmap_frees", &["mkfs.xfs", "xfs_io", "strace"]) {
        return;
    }
    let (m, top) = Mounted::xfs_rmap_top("xfs-rmap-frees");
    // Copy-on-write leaves staging blocks beside a rewritten reflink copy (no file owns
    // them; deleting the copy frees them): a fresh mount has none.
    sh(&format!("umount '{0}' && mount -o loop '{1}' '{0}'", m.at.display(), m.image.display()));
    // The trace goes beside the image: a file growing in the tree while it is scanned
    // would make the figures of the runs compared differ.
    let logs = Scratch::new(&format!("strace-{}", line!()));
    let log = logs.0.join("strace.log");
    let slack = 64 * 1024;
    for dir in ["e", "b/c", "d", "b", "a"] {
        let figures = export_dirs(&traced_export(&top, Some("bulk"), &log));
        let (_, v) = figures.iter().find(|(p, _)| p.ends_with(&format!("/{dir}"))).expect("directory in the export");
        let (exclusive, frees, estimate) = (v[1], v[4], v[5] == 1);
        assert!(!estimate, "{dir}: frees is exact");
        let before = used_bytes(&m.at);
        sh(&format!("rm -r '{}/{dir}'", top.display()));
        let freed = before - used_bytes(&m.at);
        assert!(
            freed >= frees && freed <= frees + slack,
            "{dir}: frees {frees} (exclusive {exclusive}), deleting it freed {freed}"
        );
        if dir == "e" {
            assert!(frees > exclusive, "e: what it shares within itself is freed too ({frees} > {exclusive})");
        }
    }
}

/// `dfdu browse root` in tmux with its background fill held (the FIFO hook
/// `DFDU_TEST_PAUSE_BEFORE_FILL`): the first screen must be the scanned tree with markers
/// in the exclusive column and no figure; then the fill is let go and the screen with every
/// figure is returned, with the session.
fn browse_with_the_fill_held(m: &Mounted, root: &Path) -> (Tmux, String) {
    // On the image, outside the scanned directory: it goes with the unmount.
    let fifo = m.at.join("fill.fifo");
    sh(&format!("mkfifo '{}'", fifo.display()));
    let t = Tmux::start_with(root, "", &format!("DFDU_TEST_PAUSE_BEFORE_FILL='{}'", fifo.display()));
    let first = t.wait("the scanned tree with markers", |s| s.contains("Scan finished") && s.contains('\u{2026}'));
    assert!(!first.contains("Sharing counted once"), "no figure before the fill:\n{first}");
    // Let the fill go: open the FIFO for writing (dfdu waits in its open for reading).
    drop(std::fs::OpenOptions::new().write(true).open(&fifo).expect("open the FIFO"));
    let s = t.wait("every figure", |s| s.contains("Sharing counted once") && !s.contains('\u{2026}'));
    (t, s)
}

/// Issue 28.3: by default on btrfs the browser shows the tree as soon as it is scanned,
/// with a marker in the exclusive column, and reads the extent maps afterwards, in the
/// background; the figures it fills in are `btrfs filesystem du --raw`'s. The fill is
/// held (the FIFO hook `DFDU_TEST_PAUSE_BEFORE_FILL`) until the test has seen the first screen.
#[test]
fn browser_fills_the_sharing_column_in_the_background_on_btrfs() {
    if !can_run("browser_fills", &["mkfs.btrfs", "btrfs", "tmux", "mkfifo"]) {
        return;
    }
    let (m, top) = Mounted::btrfs_top("fill", "1G");
    btrfs_tree(&top);
    let (t, s) = browse_with_the_fill_held(&m, &top);
    // Each directory row's exclusive figure, from the i box, against btrfs filesystem du.
    let names = Tmux::names(&s);
    assert!(names.len() >= 6, "the top directories:\n{s}");
    let paths: Vec<String> = names.iter().map(|n| format!("{}{n}", top.display())).collect();
    let want = btrfs_du(&paths);
    t.keys("Home");
    for (k, (name, want)) in names.iter().zip(&want).enumerate() {
        assert_eq!(info_exclusive(&t), want[1], "{name}: exclusive against btrfs filesystem du");
        if k + 1 < names.len() {
            t.keys("Down");
        }
    }
}

/// Issue 28.3 on XFS with a reverse map, as root: the browser's first screen must come as
/// fast as without the figures, so by default it does not wait for the bulk listing (its
/// workers did: 1.35 s against 0.13 s to the first screen on a 1.1M-entry image); the tree
/// shows with markers, and the figures come from the background fill, held here by the FIFO
/// hook until the test has seen the first screen.
#[test]
fn browser_on_xfs_with_a_reverse_map_fills_in_the_background_by_default() {
    if !can_run("browser_xfs_fills", &["mkfs.xfs", "xfs_io", "tmux", "mkfifo"]) {
        return;
    }
    let (m, top) = Mounted::xfs_rmap_top("fill-rmap");
    let (_t, s) = browse_with_the_fill_held(&m, &top);
    assert!(Tmux::names(&s).len() >= 4, "the top directories:\n{s}");
}

/// Issue 28.5, as measured: `dfdu scan` shows the sharing figures only with `--shared`,
/// since no source keeps their cost within 1.3× the plain scan (XFS's reverse-map listing
/// cost 2.9× on a 1.1M-entry tree with reflinks: `cargo xtask bench --fs xfs --sharing`).
/// By default it asks nothing, not even where a bulk source would serve (as root, XFS with
/// a reverse map); with `--shared` there it reads one listing and no FIEMAP, and its
/// "frees" is exact; `--no-shared` asks nothing; without a reverse map `--shared` asks
/// each file.
#[test]
fn scan_shows_the_figures_only_with_shared() {
    if !can_run("scan_default", &["mkfs.xfs", "xfs_io", "strace"]) {
        return;
    }
    let scan = |root: &Path, options: &[&str], log: &Path| {
        let mut cmd = Command::new("strace");
        cmd.args(["-f", "-e", "trace=ioctl", "-o"]).arg(log).arg(dfdu_path());
        let out = cmd.args(["scan", "-q", "--json"]).args(options).arg(root).env_remove("DFDU_DEBUG_EXTENTS").output();
        let out = out.expect("run strace dfdu");
        assert!(out.status.success(), "dfdu scan: {}", String::from_utf8_lossy(&out.stderr));
        let trace = std::fs::read_to_string(log).unwrap();
        (String::from_utf8_lossy(&out.stdout).into_owned(), trace)
    };
    let asked = |trace: &str| trace.contains("FS_IOC_GETFSMAP") || trace.contains("FS_IOC_FIEMAP");
    let (m, top) = Mounted::xfs_rmap_top("default-rmap");
    // The trace goes beside the images: a file written into the tree while it is scanned
    // would be one the listing does not know (asked on its own).
    let logs = Scratch::new("default-logs");
    let log = logs.0.join("strace.log");
    for root in [&m.at, &top] {
        let (json, trace) = scan(root, &[], &log);
        assert!(!json.contains("\"shared\"") && !asked(&trace), "off by default, nothing asked:\n{json}\n{trace}");
        let (json, trace) = scan(root, &["--no-shared"], &log);
        assert!(!json.contains("\"shared\"") && !asked(&trace), "--no-shared:\n{json}");
    }
    // From the mount's root the listing is read at once (walk/bulk.rs).
    let (json, trace) = scan(&m.at, &["--shared"], &log);
    assert!(json.contains("\"shared\":{") && json.contains("\"frees_exact\":true"), "--shared:\n{json}");
    assert!(trace.contains("FS_IOC_GETFSMAP") && !trace.contains("FS_IOC_FIEMAP"), "one listing:\n{trace}");
    // Below the mount's root the scan may cover a small part of what the listing holds:
    // it asks its files one by one first.
    let (json, trace) = scan(&top, &["--shared"], &log);
    assert!(
        json.contains("\"shared\":{") && trace.contains("FS_IOC_FIEMAP"),
        "below the root, each file first:\n{trace}"
    );
    drop(m);
    let m = Mounted::new("default-reflink", "600M", "mkfs.xfs -q -f -m rmapbt=0,reflink=1");
    let top = m.at.join("top");
    xfs_rmap_tree(&top);
    let (json, trace) = scan(&top, &[], &log);
    assert!(!json.contains("\"shared\"") && !asked(&trace), "no bulk source, off:\n{json}");
    let (json, trace) = scan(&top, &["--shared"], &log);
    assert!(json.contains("\"shared\":{") && trace.contains("FS_IOC_FIEMAP"), "--shared asks each file:\n{json}");
}

/// Issue 28: on btrfs, as root (the tree searches), deleting each of several directories
/// frees what "frees" said: the data block groups' used bytes (`btrfs filesystem df`,
/// after a sync) drop by exactly that where the figure is exact, and by no less than it
/// and no more than it plus set shared where it is an estimate. (With a snapshot in the
/// tree every figure here is an estimate today: an extent reached through a leaf the
/// snapshot shares has no reference count of its own in the extent tree, and only
/// extents asked of LOGICAL_INO get one. The bounds held in every run; `snap/e` is the
/// widest: at least 0, at most 1 MiB, and 1 MiB freed.) The tree has reflink
/// copies, a partly overwritten copy, a dedupe pair and a hard link inside `e`, compressed
/// files, and a snapshot of all of it beside them, which keeps every extent of the first
/// directories deleted alive (their frees: their exclusive data only); the snapshot's
/// own directories go last, when nothing else holds their extents.
#[test]
fn btrfs_frees_is_what_deleting_frees() {
    if !can_run("btrfs_frees", &["mkfs.btrfs", "btrfs", "xfs_io"]) {
        return;
    }
    let (m, top) = Mounted::btrfs_top("btrfs-frees", "1G");
    btrfs_tree(&top);
    for dir in ["e", "c/d", "comp", "b", "a", "snap/e", "snap/a", "snap/b", "snap/comp"] {
        let figures = export_dirs(&scan_export(&top));
        let (_, v) = figures.iter().find(|(p, _)| p.ends_with(&format!("/{dir}"))).expect("directory in the export");
        let (set_shared, frees, estimate) = (v[2], v[4], v[5] == 1);
        let before = btrfs_data_used(&m.at);
        sh(&format!("rm -r '{}/{dir}'", top.display()));
        let freed = before - btrfs_data_used(&m.at);
        if estimate {
            assert!(
                freed >= frees && freed <= frees + set_shared,
                "{dir}: frees at least {frees}, at most {}; deleting it freed {freed}",
                frees + set_shared
            );
        } else {
            assert_eq!(freed, frees, "{dir}: frees (exact) against what deleting it freed");
        }
    }
}
