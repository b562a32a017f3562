//! `dfdu dedupe` (and the `dupes` cases that need a file system of their own) on
//! loop-mounted images under `/mnt/dupes-*`, as root; without root or the mkfs tools:
//! SKIP (helpers in `tests/common/dupes.rs`).
//!
//! * btrfs and XFS (`reflink=1`): bytes, mode, owner and mtime of every file unchanged,
//!   free space grown by the reclaimable bytes, a rerun issues no ioctl, a file changed
//!   between the two runs (size and mtime restored with `touch -r`) is neither damaged nor
//!   deduplicated; on ext4 and XFS without reflink one message and exit 1.
//! * Every count of the report on btrfs (two file systems, inline files, immutable source
//!   and destination, already shared, dry run); a file over 1 GiB in two calls.
//! * `dupes`: a data block whose btrfs checksum is broken (EIO, named once, exit 1), and
//!   uncached files on a rotational device (an ext4 image) read in a lane of their own.

mod common;

use common::dupes::*;
use common::{dfdu_path, notice, Scratch};
use std::collections::BTreeMap;
use std::fs;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::process::Command;

// ------------------------------------------------------------------------------------------
// dedupe on loop-mounted file systems.

fn check_dedupe(kind: &str) {
    let fsys = match LoopFs::new(kind) {
        Ok(f) => f,
        Err(e) => return skip(&format!("dedupe on {kind}: cannot make or mount the image: {e}")),
    };
    let root = fsys.mnt.join("t");
    // Groups of files large enough not to be inline, some with unaligned tails.
    let mut rng = Rng(0xd0d0);
    let mut reclaimable = 0u64;
    let mut changed = None;
    for (gi, &size) in [200_000usize, 1 << 20, 3 * (1 << 20) + 7, 65_536, 4 * (1 << 20)].iter().enumerate() {
        let data = rng.bytes(size);
        let copies = 2 + gi % 3;
        for c in 0..copies {
            write(&root.join(format!("g{gi}/c{c}")), &data);
        }
        if gi == 2 {
            // This group gets a member that changes between the two runs.
            write(&root.join("g2/changing"), &data);
            changed = Some(root.join("g2/changing"));
        }
        reclaimable += (size * (copies - 1)) as u64;
        write(&root.join(format!("u{gi}")), &rng.bytes(size));
    }
    let changed = changed.unwrap();
    let _ = Command::new("chmod").arg("640").arg(root.join("g1/c1")).status();
    let _ = Command::new("chown").arg("12345:54321").arg(root.join("g3/c0")).status();
    let cache = fsys.mnt.join("hashes");
    let h = cache.as_os_str();
    let d = dfdu(&["dupes".as_ref(), "--hashfile".as_ref(), h, root.as_os_str()]);
    assert!(d.status.success());
    assert!(parse_groups(&d.stdout, false).iter().any(|g| g.contains(&pbytes(&changed))));
    // Change one byte in the middle; restore size and mtime from a sibling copy's twin.
    let stamp = fsys.mnt.join("stamp");
    fs::write(&stamp, b"").unwrap();
    assert!(Command::new("touch").arg("-r").arg(&changed).arg(&stamp).status().unwrap().success());
    let mut bytes = fs::read(&changed).unwrap();
    let mid = bytes.len() / 2;
    bytes[mid] ^= 0xff;
    fs::write(&changed, &bytes).unwrap();
    assert!(Command::new("touch").arg("-r").arg(&stamp).arg(&changed).status().unwrap().success());
    let mut before = BTreeMap::new();
    for entry in walk(&root) {
        before.insert(entry.clone(), kept(&entry));
    }
    let run = dfdu(&["dedupe".as_ref(), "--json".as_ref(), "--hashfile".as_ref(), h, root.as_os_str()]);
    let js = String::from_utf8_lossy(&run.stdout).into_owned();
    assert!(run.status.success(), "{js}\n{}", String::from_utf8_lossy(&run.stderr));
    for entry in walk(&root) {
        assert_eq!(kept(&entry), before[&entry], "{} changed", entry.display());
    }
    assert_eq!(fs::read(&changed).unwrap(), bytes, "the changed file is intact");
    assert_eq!(json_num(&js, "refused_files"), Some(0), "{js}");
    let deduped = json_num(&js, "bytes_deduplicated").unwrap();
    assert_eq!(deduped, reclaimable, "the changed file was not submitted: {js}");
    let grown = json_num(&js, "free_after").unwrap() as i64 - json_num(&js, "free_before").unwrap() as i64;
    notice(&format!("dedupe on {kind}: reclaimable {reclaimable} bytes, free space grew by {grown}"));
    if kind == "xfs" {
        let diff = (grown - reclaimable as i64).unsigned_abs();
        assert!(diff * 100 <= reclaimable, "XFS: free space grew by {grown}, reclaimable {reclaimable}");
    } else {
        assert!(
            grown as f64 >= 0.99 * reclaimable as f64,
            "btrfs: free space grew by {grown}, reclaimable {reclaimable}"
        );
    }
    // A rerun finds the same groups, all already sharing: no ioctl, nothing submitted.
    let again = dfdu(&["dedupe".as_ref(), "--json".as_ref(), "--hashfile".as_ref(), h, root.as_os_str()]);
    let js2 = String::from_utf8_lossy(&again.stdout).into_owned();
    assert!(again.status.success());
    assert_eq!(json_num(&js2, "ioctl_calls"), Some(0), "{js2}");
    assert_eq!(json_num(&js2, "bytes_submitted"), Some(0), "{js2}");
    assert_eq!(json_num(&js2, "bytes_reclaimable"), Some(0), "{js2}");
    assert_eq!(json_num(&js2, "bytes_read"), Some(0), "the rerun uses the hash file: {js2}");
}

#[test]
fn dedupe_on_btrfs() {
    if need_root_and("mkfs.btrfs", "dedupe_on_btrfs") {
        check_dedupe("btrfs");
    }
}

#[test]
fn dedupe_on_xfs_with_reflink() {
    if need_root_and("mkfs.xfs", "dedupe_on_xfs_with_reflink") {
        check_dedupe("xfs");
    }
}

#[test]
fn dedupe_on_ext4_says_so_once() {
    if need_root_and("mkfs.ext4", "dedupe_on_ext4_says_so_once") {
        check_cannot_share("ext4", true);
    }
}

/// XFS without reflink is only found out by the first FIDEDUPERANGE call (a dry run
/// cannot tell it from XFS with reflink).
#[test]
fn dedupe_on_xfs_without_reflink_says_so_once() {
    if need_root_and("mkfs.xfs", "dedupe_on_xfs_without_reflink_says_so_once") {
        check_cannot_share("xfs-noreflink", false);
    }
}

/// The counts of `dedupe --json` on btrfs, each kind of skip: a group spread over two file
/// systems, two groups of inline files, an immutable destination, an immutable source,
/// and on a rerun the members that already share.
#[test]
fn dedupe_counts_each_skip_on_btrfs() {
    if !need_root_and("mkfs.btrfs", "dedupe_counts_each_skip_on_btrfs") || !need_root_and("chattr", "dedupe_counts") {
        return;
    }
    let fsys = match LoopFs::new("btrfs-counts") {
        Ok(f) => f,
        Err(e) => return skip(&format!("dedupe_counts_each_skip_on_btrfs: {e}")),
    };
    let scratch = Scratch::new("dedupe-counts");
    let root = fsys.mnt.join("t");
    let mut rng = Rng(0xc0c0);
    let mut group = |name: &str, copies: usize, size: usize| {
        let data = rng.bytes(size);
        for c in 0..copies {
            write(&root.join(format!("{name}/c{c}")), &data);
        }
        data
    };
    group("g1", 3, 200_000);
    let g2 = group("g2", 2, 100_000);
    // One more copy of g2 on the scratch file system (ext4 or whatever /tmp is).
    let elsewhere = scratch.subdir("other").join("c9");
    write(&elsewhere, &g2);
    group("g3-inline", 3, 100);
    group("g6-inline", 2, 60);
    group("g4", 3, 100_000);
    group("g5", 2, 100_000);
    let chattr = |flag: &str, p: &Path| assert!(Command::new("chattr").arg(flag).arg(p).status().unwrap().success());
    // Written back, so that the small files show as inline in their extent maps.
    assert!(Command::new("sync").arg("-f").arg(&root).status().unwrap().success());
    chattr("+i", &root.join("g4/c2"));
    chattr("+i", &root.join("g5/c0"));
    let run = |dry: bool| {
        let mut args: Vec<&std::ffi::OsStr> = vec!["dedupe".as_ref(), "--json".as_ref()];
        if dry {
            args.push("--dry-run".as_ref());
        }
        args.push(root.as_os_str());
        args.push(elsewhere.as_os_str());
        let out = dfdu(&args);
        let js = text(&out.stdout);
        assert!(out.status.success(), "{js}\n{}", text(&out.stderr));
        js[js.find("\"dedupe\":{").expect("a dedupe report")..].to_string()
    };
    let counts = |js: &str| -> Vec<(&'static str, u64)> {
        ["groups", "files", "skipped_shared", "skipped_inline", "skipped_changed", "skipped_pinned", "skipped_swap"]
            .into_iter()
            .chain(["skipped_other_fs", "errors", "refused_files"])
            .map(|k| (k, json_num(js, k).unwrap_or(u64::MAX)))
            .collect()
    };
    // g1, g2 (its btrfs part), g4 and g5 are submitted; g3 and g6 are inline; g5's source is
    // immutable, so none of its copies goes.
    let want = |groups, files, shared| {
        vec![
            ("groups", groups),
            ("files", files),
            ("skipped_shared", shared),
            ("skipped_inline", 3 + 2),
            ("skipped_changed", 0),
            ("skipped_pinned", 2),
            ("skipped_swap", 0),
            ("skipped_other_fs", 1),
            ("errors", 0),
            ("refused_files", 0),
        ]
    };
    let dry = run(true);
    assert_eq!(counts(&dry), want(4, 4, 0), "{dry}");
    assert_eq!(json_num(&dry, "ioctl_calls"), Some(0), "{dry}");
    assert_eq!(json_num(&dry, "bytes_submitted"), Some(2 * 200_000 + 2 * 100_000), "{dry}");
    // Free space is measured before and after real calls only.
    assert_eq!(json_num(&dry, "free_after"), Some(0), "{dry}");
    let first = run(false);
    assert_eq!(counts(&first), want(4, 4, 0), "{first}");
    assert_eq!(json_num(&first, "bytes_deduplicated"), Some(2 * 200_000 + 2 * 100_000), "{first}");
    assert_eq!(json_num(&first, "bytes_submitted"), Some(2 * 200_000 + 2 * 100_000), "{first}");
    // One call per part (g1, g2, g4): each is smaller than what one call covers.
    assert_eq!(json_num(&first, "ioctl_calls"), Some(3), "{first}");
    assert!(json_num(&first, "free_after").unwrap() > json_num(&first, "free_before").unwrap(), "{first}");
    // Rerun: g1 shares whole (2), g2 and g4 one copy each; g5 and g3 as before.
    let again = run(false);
    assert_eq!(counts(&again), want(3, 0, 4), "{again}");
    chattr("-i", &root.join("g4/c2"));
    chattr("-i", &root.join("g5/c0"));
}

/// A file larger than one call covers (1 GiB): dedupe goes on where the first call
/// stopped. Two sparse copies (a few KiB of data, the rest a hole), so the image stays
/// small; reading and hashing 2 GiB of holes takes seconds, so the name keeps it out of
/// `make mutants MOD=dupes`'s quick set (`SLOW=1` runs it).
#[test]
fn big_file_takes_two_calls_on_btrfs() {
    if !need_root_and("mkfs.btrfs", "big_file_takes_two_calls_on_btrfs") {
        return;
    }
    let fsys = match LoopFs::new("btrfs-big") {
        Ok(f) => f,
        Err(e) => return skip(&format!("big_file_takes_two_calls_on_btrfs: {e}")),
    };
    let root = fsys.mnt.join("t");
    fs::create_dir_all(&root).unwrap();
    let size: u64 = (1 << 30) + 3 * 4096 + 4096;
    let (head, tail) = (Rng(0xb16).bytes(4096), Rng(0x7a11).bytes(4096));
    for name in ["a", "b"] {
        use std::io::{Seek, SeekFrom, Write};
        let mut f = fs::File::create(root.join(name)).unwrap();
        f.write_all(&head).unwrap();
        f.seek(SeekFrom::Start(size - 4096)).unwrap();
        f.write_all(&tail).unwrap();
    }
    let out = dfdu(&["dedupe".as_ref(), "--json".as_ref(), root.as_os_str()]);
    let js = text(&out.stdout);
    assert!(out.status.success(), "{js}\n{}", text(&out.stderr));
    let report = &js[js.find("\"dedupe\":{").expect("a dedupe report")..];
    assert_eq!(json_num(report, "files"), Some(1), "{report}");
    assert_eq!(json_num(report, "ioctl_calls"), Some(2), "{report}");
    assert_eq!(json_num(report, "bytes_submitted"), Some(size), "{report}");
    assert_eq!(json_num(report, "bytes_deduplicated"), Some(size), "{report}");
    for name in ["a", "b"] {
        use std::io::{Read, Seek, SeekFrom};
        let mut f = fs::File::open(root.join(name)).unwrap();
        let (mut h, mut t) = (vec![0; 4096], vec![0; 4096]);
        f.read_exact(&mut h).unwrap();
        f.seek(SeekFrom::Start(size - 4096)).unwrap();
        f.read_exact(&mut t).unwrap();
        assert!(f.metadata().unwrap().len() == size && h == head && t == tail, "{name} changed");
    }
}

/// Files that cannot be read (btrfs finds a data block's checksum wrong: EIO) are named
/// in one message each, the run exits 1, and the other copies still form their groups:
/// one copy is damaged in its first block (the sample read fails), one of another group
/// in a block in the middle (the whole-file read fails).
#[test]
fn dupes_read_error_is_reported_on_btrfs() {
    if !need_root_and("mkfs.btrfs", "dupes_read_error_is_reported_on_btrfs") {
        return;
    }
    let fsys = match LoopFs::new("btrfs-eio") {
        Ok(f) => f,
        Err(e) => return skip(&format!("dupes_read_error_is_reported_on_btrfs: {e}")),
    };
    let root = fsys.mnt.join("t");
    let (head, middle) = (Rng(0xe10).bytes(100_000), Rng(0xe11).bytes(300_000));
    for name in ["a", "b", "c"] {
        write(&root.join(format!("head/{name}")), &head);
        write(&root.join(format!("middle/{name}")), &middle);
    }
    // Unmounted, one data block of one copy of each gets a byte flipped in the image.
    assert!(Command::new("umount").arg(&fsys.mnt).status().unwrap().success());
    for block in [&head[..4096], &middle[50 * 4096..51 * 4096]] {
        use std::io::{Read, Seek, SeekFrom, Write};
        let mut img = fs::OpenOptions::new().read(true).write(true).open(&fsys.image).unwrap();
        let mut chunk = vec![0u8; 1 << 20];
        let mut at = 0u64;
        let hit = loop {
            let n = img.read(&mut chunk).unwrap();
            assert!(n > 0, "the file's data is not in the image");
            let n = n - n % 4096;
            if let Some(b) = (0..n).step_by(4096).find(|&b| chunk[b..b + 64] == block[..64]) {
                break at + b as u64;
            }
            at += n as u64;
            img.seek(SeekFrom::Start(at)).unwrap();
        };
        img.seek(SeekFrom::Start(hit + 100)).unwrap();
        img.write_all(&[block[100] ^ 0xff]).unwrap();
    }
    let mounted = Command::new("mount").args(["-o", "loop"]).arg(&fsys.image).arg(&fsys.mnt).status().unwrap();
    assert!(mounted.success());
    let mut bad = Vec::new();
    let mut good = Groups::new();
    for dir in ["head", "middle"] {
        let (b, g): (Vec<PathBuf>, Vec<PathBuf>) =
            ["a", "b", "c"].iter().map(|n| root.join(dir).join(n)).partition(|p| fs::read(p).is_err());
        assert_eq!(b.len(), 1, "one copy in {dir} cannot be read");
        bad.extend(b);
        good.insert(g.iter().map(|p| pbytes(p)).collect());
    }
    let out = Command::new("timeout")
        .arg("20")
        .arg(dfdu_path())
        .args(["dupes".as_ref(), "--json".as_ref(), root.as_os_str()])
        .env("LC_ALL", "C")
        .output()
        .unwrap();
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    for p in &bad {
        let msg = format!(" dupes: cannot read {}: Input/output error\n", p.display());
        assert!(err.contains(&msg), "{err}");
    }
    assert_eq!(err.matches("cannot read").count(), 2, "{err}");
    let js = text(&out.stdout);
    assert_eq!(json_num(&js[js.find("\"summary\"").unwrap()..], "groups"), Some(2), "{js}");
    for g in &good {
        let paths: Vec<String> = g.iter().map(|p| format!("\"{}\"", String::from_utf8_lossy(p))).collect();
        assert!(js.contains(&format!("\"paths\":[{}]", paths.join(","))), "{js}");
    }
}

/// Files on a rotational device whose data is not in the page cache are read one device
/// at a time in disk order (a lane of their own), beside the cached rest: the same groups,
/// each file read once, as when everything is cached. The loop device of an ext4 image
/// says it is rotational; remounting the image empties the cache.
#[test]
fn dupes_uncached_files_on_a_rotational_disk() {
    if !need_root_and("mkfs.ext4", "dupes_uncached_files_on_a_rotational_disk") {
        return;
    }
    let fsys = match LoopFs::new("ext4-spin") {
        Ok(f) => f,
        Err(e) => return skip(&format!("dupes_uncached_files_on_a_rotational_disk: {e}")),
    };
    let root = fsys.mnt.join("t");
    let mut want = build(&root, 0x5eed_0008);
    let dev = fs::metadata(&root).unwrap().dev();
    let rotational = format!("/sys/dev/block/{}:{}/queue/rotational", dev >> 8 & 0xfff, dev & 0xff);
    if fs::read_to_string(&rotational).map(|s| s.trim() != "1").unwrap_or(true) {
        return skip(&format!("dupes_uncached_files_on_a_rotational_disk: {rotational} is not 1"));
    }
    // One more group with a member in the (cached) scratch directory.
    let scratch = Scratch::new("dupes-spin");
    let here = scratch.subdir("c").join("copy");
    let there = root.join("a/copy");
    let data = Rng(0x5b1).bytes(70_000);
    write(&here, &data);
    write(&there, &data);
    want.insert([pbytes(&there), pbytes(&here)].into());
    assert!(Command::new("umount").arg(&fsys.mnt).status().unwrap().success());
    let mounted = Command::new("mount").args(["-o", "loop"]).arg(&fsys.image).arg(&fsys.mnt).status().unwrap();
    assert!(mounted.success());
    let run = || {
        let out = dfdu(&["dupes".as_ref(), "-S".as_ref(), root.as_os_str(), here.as_os_str()]);
        assert!(out.status.success(), "{}", text(&out.stderr));
        (parse_groups(&out.stdout, true), text(&out.stderr))
    };
    let (cold, cold_err) = run();
    assert_eq!(cold, want, "\n--- got ---\n{}\n--- want ---\n{}", show(&cold), show(&want));
    let (warm, warm_err) = run();
    assert_eq!(warm, want);
    let reads = |err: &str| err[err.find("; read ").expect("a summary")..].split(';').nth(1).unwrap().to_string();
    assert_eq!(reads(&cold_err), reads(&warm_err), "{cold_err}{warm_err}");
}

fn check_cannot_share(kind: &str, dry_run_knows: bool) {
    let fsys = match LoopFs::new(kind) {
        Ok(f) => f,
        Err(e) => return skip(&format!("{kind} image: {e}")),
    };
    let mut rng = Rng(5);
    let data = rng.bytes(100_000);
    for i in 0..5 {
        write(&fsys.mnt.join(format!("t/{i}")), &data);
    }
    let root = fsys.mnt.join("t");
    let before: Vec<Kept> = walk(&root).iter().map(|p| kept(p)).collect();
    let runs: &[&[&str]] =
        if dry_run_knows { &[&["dedupe", "-q"], &["dedupe", "-q", "--dry-run"]] } else { &[&["dedupe", "-q"]] };
    for args in runs {
        let mut full: Vec<&std::ffi::OsStr> = args.iter().map(|s| s.as_ref()).collect();
        full.push(root.as_os_str());
        let out = dfdu(&full);
        assert_eq!(out.status.code(), Some(1), "{kind} {args:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(err.lines().count(), 1, "one message: {err}");
        assert!(err.contains("cannot share extents"), "{err}");
    }
    let after: Vec<Kept> = walk(&root).iter().map(|p| kept(p)).collect();
    assert_eq!(before, after);
}
