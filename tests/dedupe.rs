//! `dfdu dedupe` (and the `dupes` cases that need a file system of their own) on
//! loop-mounted images (`LoopFs`, under the temporary directory), as root; without root or the mkfs tools:
//! SKIP (helpers in `tests/common/dupes.rs`).
//!
//! * btrfs and XFS (`reflink=1`): bytes, mode, owner and mtime of every file unchanged,
//!   free space grown by the reclaimable bytes, a rerun issues no ioctl, a file changed
//!   between the two runs (size and mtime restored with `touch -r`) is neither damaged nor
//!   deduplicated; on ext4 and XFS without reflink one message and exit 1.
//! * Every count of the report on btrfs (two file systems, inline files, immutable source
//!   and destination, already shared, dry run); a file over 1 GiB in two calls.
//! * Choosing the source (issue 24): immutable and append-only first paths, sparse and
//!   dense copies (btrfs and XFS), read-only snapshots left alone, swap files whose names
//!   `/proc/swaps` escapes.
//! * `dupes`: a data block whose btrfs checksum is broken (EIO, named once, exit 1), and
//!   uncached files on a rotational device (an ext4 image) read in a lane of their own.

mod common;

use common::dupes::*;
use common::{dfdu_path, json_num, notice, run_ok, Scratch};
use std::collections::BTreeMap;
use std::fs;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

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
    // g1, g2 (its btrfs part), g4 and g5 are submitted; g3 and g6 are inline. The immutable
    // copy of g4 and g5 is each group's source (so it is no copy left out) and not changed.
    let want = |groups, files, shared| {
        vec![
            ("groups", groups),
            ("files", files),
            ("skipped_shared", shared),
            ("skipped_inline", 3 + 2),
            ("skipped_changed", 0),
            ("skipped_pinned", 0),
            ("skipped_swap", 0),
            ("skipped_other_fs", 1),
            ("errors", 0),
            ("refused_files", 0),
        ]
    };
    let bytes = 2 * 200_000 + 100_000 + 2 * 100_000 + 100_000;
    let dry = run(true);
    assert_eq!(counts(&dry), want(4, 6, 0), "{dry}");
    assert_eq!(json_num(&dry, "ioctl_calls"), Some(0), "{dry}");
    assert_eq!(json_num(&dry, "bytes_submitted"), Some(bytes), "{dry}");
    // Free space is measured before and after real calls only.
    assert_eq!(json_num(&dry, "free_after"), Some(0), "{dry}");
    let first = run(false);
    assert_eq!(counts(&first), want(4, 6, 0), "{first}");
    assert_eq!(json_num(&first, "bytes_deduplicated"), Some(bytes), "{first}");
    assert_eq!(json_num(&first, "bytes_submitted"), Some(bytes), "{first}");
    // One call per part (g1, g2, g4, g5): each is smaller than what one call covers.
    assert_eq!(json_num(&first, "ioctl_calls"), Some(4), "{first}");
    assert!(json_num(&first, "free_after").unwrap() > json_num(&first, "free_before").unwrap(), "{first}");
    // Rerun: g1, g4 and g5 share whole (2 + 2 + 1), g2's btrfs part one copy (its part is
    // the only group left); g3 and g6 as before.
    let again = run(false);
    assert_eq!(counts(&again), want(1, 0, 6), "{again}");
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
        // Quoted as `dfdu scan` and GNU du quote paths (issue 24, item 15).
        let msg = format!(" dupes: cannot read '{}': Input/output error\n", p.display());
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

// ------------------------------------------------------------------------------------------
// dedupe's report, counter by counter (issue 17: the survivors of `make mutants MOD=dupes`
// in dedupe.rs). Every figure is what the tree on disk makes true: which files are pinned,
// inline, on another file system, already sharing; what the kernel deduplicated.

/// The counters of one dedupe report.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
struct Counts {
    groups: u64,
    files: u64,
    submitted: u64,
    deduped: u64,
    refused: u64,
    shared: u64,
    inline: u64,
    changed: u64,
    pinned: u64,
    readonly: u64,
    swap: u64,
    other_fs: u64,
    errors: u64,
    calls: u64,
}

/// The counters of `--json`'s "dedupe" object.
fn dedupe_counts(js: &str) -> Counts {
    let at = js.find("\"dedupe\":").unwrap_or_else(|| panic!("no dedupe object: {js}"));
    let d = &js[at..];
    let n = |k: &str| json_num(d, k).unwrap_or_else(|| panic!("no {k}: {d}"));
    Counts {
        groups: n("groups"),
        files: n("files"),
        submitted: n("bytes_submitted"),
        deduped: n("bytes_deduplicated"),
        refused: n("refused_files"),
        shared: n("skipped_shared"),
        inline: n("skipped_inline"),
        changed: n("skipped_changed"),
        pinned: n("skipped_pinned"),
        readonly: n("skipped_readonly"),
        swap: n("skipped_swap"),
        other_fs: n("skipped_other_fs"),
        errors: n("errors"),
        calls: n("ioctl_calls"),
    }
}

/// The report lines `dedupe` prints without `--json` for `c` (after "CMD: ").
fn dedupe_text(c: &Counts, dry_run: bool) -> Vec<String> {
    // English plurals: "1 file", "2 files".
    let n = |k: u64, one: &str| if k == 1 { format!("{k} {one}") } else { format!("{k} {one}s") };
    let first = if dry_run {
        format!(
            "dry run: would submit {} in {}, {} bytes; nothing was changed",
            n(c.files, "file"),
            n(c.groups, "group"),
            c.submitted
        )
    } else {
        format!(
            "{} in {}: {} bytes submitted, {} bytes deduplicated by the kernel, {} refused (data differs); {}",
            n(c.files, "file"),
            n(c.groups, "group"),
            c.submitted,
            c.deduped,
            n(c.refused, "file"),
            n(c.calls, "ioctl call")
        )
    };
    let second = format!(
        "skipped: {} already sharing extents, {} inline (cannot share), {} changed since hashed, {} immutable or \
         append-only, {} on read-only snapshots, {} swap files, {} alone on their file \
         system; {} errors",
        c.shared, c.inline, c.changed, c.pinned, c.readonly, c.swap, c.other_fs, c.errors
    );
    vec![first, second]
}

/// Standard error's lines, each without its "CMD: " prefix.
fn report_lines(err: &[u8]) -> Vec<String> {
    String::from_utf8_lossy(err)
        .lines()
        .map(|l| match l.find("dedupe: ") {
            Some(at) => l[at + "dedupe: ".len()..].to_string(),
            None => l.to_string(),
        })
        .collect()
}

/// "free space +N bytes (before B, after A, after syncfs)" → (N, B, A).
fn free_line(line: &str) -> Option<(i128, u64, u64)> {
    let rest = line.strip_prefix("free space ")?;
    let (n, rest) = rest.split_once(" bytes (before ")?;
    let (b, rest) = rest.split_once(", after ")?;
    let a = rest.strip_suffix(", after syncfs)")?;
    Some((n.parse().ok()?, b.parse().ok()?, a.parse().ok()?))
}

fn os(args: &[&Path]) -> Vec<std::ffi::OsString> {
    args.iter().map(|p| p.as_os_str().to_owned()).collect()
}

fn dfdu_args(head: &[&str], tail: &[std::ffi::OsString]) -> Output {
    let mut all: Vec<&std::ffi::OsStr> = head.iter().map(|s| s.as_ref()).collect();
    all.extend(tail.iter().map(|s| s.as_os_str()));
    dfdu(&all)
}

/// One tree over two images of `kind` (a: most groups, b: one copy of a group of a), run
/// through a dry run, a real run (text report) and a rerun (JSON) after one more copy.
fn check_dedupe_report(kind: &str) {
    let (a, b) = match (
        LoopFs::labelled(kind, &format!("{kind}-a"), "300M"),
        LoopFs::labelled(kind, &format!("{kind}-b"), "300M"),
    ) {
        (Ok(a), Ok(b)) => (a, b),
        (Err(e), _) | (_, Err(e)) => {
            return skip(&format!("dedupe report on {kind}: cannot make or mount the images: {e}"))
        }
    };
    let btrfs = kind == "btrfs";
    let (ra, rb) = (a.mnt.join("t"), b.mnt.join("t"));
    let mut rng = Rng(0x5eed_d0d0);
    let (s1, s4, s5, s6, s7, s8) = (300_000u64, 200_000u64, 180_000u64, 1000u64, 160_000u64, 140_000u64);
    let d1 = rng.bytes(s1 as usize);
    // g1: three copies, one batch of two destinations.
    for n in ["a", "b", "c"] {
        write(&ra.join("g1").join(n), &d1);
    }
    // g4: the first path is immutable: it is the source (it may not be a destination), so
    // the other copy is still deduplicated.
    let d4 = rng.bytes(s4 as usize);
    for n in ["a", "b"] {
        write(&ra.join("g4").join(n), &d4);
    }
    // g5: an immutable and an append-only copy beside two free ones: the immutable one is
    // the source, the append-only one is left as it is.
    let d5 = rng.bytes(s5 as usize);
    for n in ["a", "b", "c", "d"] {
        write(&ra.join("g5").join(n), &d5);
    }
    // g6: small files, kept inline by btrfs (cannot share); plain extents on XFS.
    let d6 = rng.bytes(s6 as usize);
    for n in ["a", "b", "c"] {
        write(&ra.join("g6").join(n), &d6);
    }
    // g7: two copies on a, one on b (another file system than the group's first path).
    let d7 = rng.bytes(s7 as usize);
    for p in [ra.join("g7/a"), ra.join("g7/b"), rb.join("g7")] {
        write(&p, &d7);
    }
    // g8: three copies, all sharing after the first run.
    let d8 = rng.bytes(s8 as usize);
    for n in ["a", "b", "c"] {
        write(&ra.join("g8").join(n), &d8);
    }
    run_ok(Command::new("chattr").arg("+i").arg(ra.join("g4/a")));
    run_ok(Command::new("chattr").arg("+i").arg(ra.join("g5/b")));
    run_ok(Command::new("chattr").arg("+a").arg(ra.join("g5/c")));
    let roots = os(&[&ra, &rb]);
    let snapshot = || -> BTreeMap<PathBuf, Kept> {
        walk(&ra).into_iter().chain(walk(&rb)).map(|p| (p.clone(), kept(&p))).collect()
    };
    let before = snapshot();

    // What the first run must do.
    let inline_g6 = if btrfs { 3 } else { 0 };
    let g6_files = if btrfs { 0 } else { 2 };
    let first = Counts {
        groups: if btrfs { 5 } else { 6 },
        files: 2 + 1 + 2 + 1 + 2 + g6_files,
        submitted: 2 * s1 + s4 + 2 * s5 + s7 + 2 * s8 + g6_files * s6,
        deduped: 2 * s1 + s4 + 2 * s5 + s7 + 2 * s8 + g6_files * s6,
        pinned: 1,
        inline: inline_g6,
        other_fs: 1,
        calls: if btrfs { 5 } else { 6 },
        ..Counts::default()
    };

    // A dry run: the same choices, nothing submitted to the kernel, nothing changed.
    let dry = dfdu_args(&["dedupe", "--dry-run", "--json"], &roots);
    let js = String::from_utf8_lossy(&dry.stdout).into_owned();
    assert!(dry.status.success(), "{js}\n{}", String::from_utf8_lossy(&dry.stderr));
    assert!(js.contains("\"dedupe\":{\"dry_run\":true,"), "{js}");
    assert_eq!(dedupe_counts(&js), Counts { deduped: 0, calls: 0, ..first.clone() }, "{kind} dry run: {js}");
    assert!(json_num(&js, "free_before").unwrap() > 0, "{js}");
    assert_eq!(json_num(&js, "free_after"), Some(0), "a dry run does not measure after: {js}");
    let dry = dfdu_args(&["dedupe", "--dry-run", "-q"], &roots);
    assert!(dry.status.success());
    assert_eq!(
        report_lines(&dry.stderr),
        dedupe_text(&Counts { deduped: 0, calls: 0, ..first.clone() }, true),
        "{kind} dry-run text"
    );
    assert_eq!(snapshot(), before, "{kind}: a dry run changes nothing");

    // The real run, text report: counters, then the free-space line.
    let real = dfdu_args(&["dedupe", "-q"], &roots);
    let lines = report_lines(&real.stderr);
    assert!(real.status.success(), "{lines:?}");
    assert_eq!(lines.len(), 3, "{kind}: {lines:?}");
    assert_eq!(lines[..2], dedupe_text(&first, false)[..], "{kind} real run");
    let (change, fb, fa) = free_line(&lines[2]).unwrap_or_else(|| panic!("free-space line: {lines:?}"));
    assert_eq!(change, fa as i128 - fb as i128, "{}", lines[2]);
    assert!(fb > 0 && fa > 0, "{}", lines[2]);
    notice(&format!("dedupe report on {kind}: deduplicated {}, free space {change:+}", first.deduped));
    assert_eq!(snapshot(), before, "{kind}: dedupe changed no byte, mode, owner or mtime");

    // One more copy in g1; rerun. Members that share their source's extents are skipped
    // one by one (g1, g5, g7), a group that all shares as a whole (g4, g8; g6 on XFS).
    write(&ra.join("g1/d"), &d1);
    let again = dfdu_args(&["dedupe", "--json"], &roots);
    let js = String::from_utf8_lossy(&again.stdout).into_owned();
    assert!(again.status.success(), "{js}");
    let second = Counts {
        groups: 3,
        files: 1,
        submitted: s1,
        deduped: s1,
        shared: 2 + 1 + 2 + 1 + 2 + if btrfs { 0 } else { 2 },
        pinned: 1,
        inline: inline_g6,
        other_fs: 1,
        calls: 1,
        ..Counts::default()
    };
    assert_eq!(dedupe_counts(&js), second, "{kind} rerun: {js}");
    for p in [ra.join("g4/a"), ra.join("g5/b"), ra.join("g5/c")] {
        let _ = Command::new("chattr").args(["-i", "-a"]).arg(p).status();
    }
}

#[test]
fn dedupe_report_on_btrfs() {
    if need_root_and("mkfs.btrfs", "dedupe_report_on_btrfs") && have_or_skip("chattr", "dedupe_report_on_btrfs") {
        check_dedupe_report("btrfs");
    }
}

#[test]
fn dedupe_report_on_xfs() {
    if need_root_and("mkfs.xfs", "dedupe_report_on_xfs") && have_or_skip("chattr", "dedupe_report_on_xfs") {
        check_dedupe_report("xfs");
    }
}

/// `dedupe` run as `nobody` on root's files (hashed beforehand by root into a hash file
/// nobody may rewrite): destinations it cannot open are errors, each with its message up to
/// the cap of 1000; a destination it can open but does not own is refused by the kernel
/// (per destination, not "cannot share extents"); exit status 1.
#[test]
fn dedupe_report_errors_as_nobody() {
    let Some(a) = LoopFs::for_test("dedupe_report_errors_as_nobody", "btrfs", "nobody", "300M", &["setpriv"]) else {
        return;
    };
    let root = a.mnt.join("n");
    let mut rng = Rng(0xb0d1);
    // n1: the first path readable by all, 1001 copies readable by root only.
    let d1 = rng.bytes(8192);
    let unreadable: Vec<PathBuf> = (1..=1001).map(|i| root.join(format!("n1/f{i:04}"))).collect();
    write(&root.join("n1/f0000"), &d1);
    for p in &unreadable {
        write(p, &d1);
        fs::set_permissions(p, std::os::unix::fs::PermissionsExt::from_mode(0o600)).unwrap();
    }
    // n2: both readable; nobody owns neither, so the kernel refuses the destination.
    let d2 = rng.bytes(100_000);
    write(&root.join("n2/a"), &d2);
    write(&root.join("n2/b"), &d2);
    let hdir = a.mnt.join("h");
    fs::create_dir(&hdir).unwrap();
    let cache = hdir.join("cache");
    let d = dfdu(&["dupes".as_ref(), "-q".as_ref(), "--hashfile".as_ref(), cache.as_os_str(), root.as_os_str()]);
    assert!(d.status.success(), "{}", String::from_utf8_lossy(&d.stderr));
    run_ok(Command::new("chown").arg("-R").arg("65534:65534").arg(&hdir));
    let bin = a.mnt.join("dfdu");
    fs::copy(dfdu_path(), &bin).unwrap();
    let before: BTreeMap<PathBuf, Kept> = walk(&root).into_iter().map(|p| (p.clone(), kept(&p))).collect();
    let out = Command::new("setpriv")
        .args(["--reuid=65534", "--regid=65534", "--clear-groups", "--"])
        .arg(&bin)
        .args(["dedupe", "-q", "--hashfile"])
        .arg(&cache)
        .arg(&root)
        .env("LC_ALL", "C")
        .output()
        .unwrap();
    let lines = report_lines(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{lines:?}");
    let want_msgs: Vec<String> =
        unreadable[..1000].iter().map(|p| format!("cannot deduplicate {}: Permission denied", p.display())).collect();
    assert!(lines.len() > 1000, "{lines:?}");
    if let Some(i) = (0..1000).find(|&i| lines[i] != want_msgs[i]) {
        panic!("failure message {i}: {:?}, expected {:?}", lines[i], want_msgs[i]);
    }
    let want = Counts { groups: 2, files: 1, submitted: 100_000, errors: 1002, calls: 1, ..Counts::default() };
    assert_eq!(lines[1000..1002], dedupe_text(&want, false)[..], "{:?}", &lines[1000..]);
    assert_eq!(lines.len(), 1003, "{:?}", &lines[1000..]);
    assert!(free_line(&lines[1002]).is_some(), "{}", lines[1002]);
    for (p, k) in &before {
        assert_eq!(&kept(p), k, "{} changed", p.display());
    }
}

/// Turns a swap file off when dropped (before its image is unmounted: declare it after).
struct SwapOn(PathBuf);

impl Drop for SwapOn {
    fn drop(&mut self) {
        let _ = Command::new("swapoff").arg(&self.0).status();
    }
}

/// Two active swap files on a btrfs image, `w/W` (sorting first in its group) and `s/S`,
/// each with a plain copy (`w/b`, `s/a`); `check` sees the swaps, then dedupe's report
/// must count both swap files and deduplicate neither group. SKIP where swap cannot be had.
fn check_swap_files_skipped(test: &str, label: &str, w_name: &str, s_name: &str, check: impl Fn(&str)) {
    let Some(a) = LoopFs::for_test(test, "btrfs", label, "300M", &["swapon"]) else { return };
    let root = a.mnt.join("t");
    fs::create_dir_all(root.join("w")).unwrap();
    fs::create_dir_all(root.join("s")).unwrap();
    let (w, s) = (root.join("w").join(w_name), root.join("s").join(s_name));
    let mut guards = Vec::new();
    for p in [&w, &s] {
        let made = Command::new("btrfs").args(["filesystem", "mkswapfile", "--size", "16m"]).arg(p).output();
        if !made.is_ok_and(|o| o.status.success()) {
            return skip(&format!("{test}: btrfs filesystem mkswapfile failed"));
        }
        let on = Command::new("swapon").arg(p).output();
        if !on.is_ok_and(|o| o.status.success()) {
            return skip(&format!("{test}: swapon failed"));
        }
        guards.push(SwapOn(p.clone()));
    }
    check(&fs::read_to_string("/proc/swaps").unwrap());
    write(&root.join("w/b"), &fs::read(&w).unwrap());
    write(&root.join("s/a"), &fs::read(&s).unwrap());
    let out = dfdu(&["dedupe".as_ref(), "--json".as_ref(), root.as_os_str()]);
    let js = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(out.status.success(), "{js}\n{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(dedupe_counts(&js), Counts { groups: 2, swap: 2, ..Counts::default() }, "{js}");
    drop(guards);
}

/// Active swap files are never submitted, as the first path of a group (the group is left
/// alone) or as another member; their plain copies are ordinary files.
#[test]
fn dedupe_report_skips_active_swap_files() {
    check_swap_files_skipped("dedupe_report_skips_active_swap_files", "swap", "a", "b", |_| {});
}

/// `/proc/swaps` writes a space, tab or backslash in a swap file's name as `\040`, `\011`,
/// `\134`: such a swap file is skipped like any other, as a group's first path (whose
/// copy is then left alone) and as another member. Before the names were decoded, the
/// first was submitted as a source and the kernel refused it (ETXTBSY, exit 1).
#[test]
fn dedupe_report_skips_swap_files_named_with_blanks() {
    let test = "dedupe_report_skips_swap_files_named_with_blanks";
    check_swap_files_skipped(test, "swapname", "a swap", "b\\swap\tfile", |swaps| {
        assert!(swaps.contains("w/a\\040swap") && swaps.contains("s/b\\134swap\\011file"), "{swaps}");
    });
}

/// Files that change after they were hashed are skipped, whether the change is seen when
/// the file is opened or right before the call; a first path that changed before it was
/// opened no longer takes its group with it. The run is held in its first `syncfs`
/// (strace delays it; c1's members are open by then) while the files change.
#[test]
fn dedupe_report_skips_files_changed_after_hashing() {
    let test = "dedupe_report_skips_files_changed_after_hashing";
    let Some(a) = LoopFs::for_test(test, "btrfs", "changed", "300M", &["strace"]) else { return };
    let root = a.mnt.join("t");
    let mut rng = Rng(0xc4a6);
    // c1 comes first (more bytes wasted): its members are open when the run is held.
    let d1 = rng.bytes(400_000);
    for n in ["a", "b", "c", "d"] {
        write(&root.join("c1").join(n), &d1);
    }
    let d2 = rng.bytes(300_000);
    for n in ["a", "b", "c"] {
        write(&root.join("c2").join(n), &d2);
    }
    let log = a.mnt.join("strace.log");
    let child = Command::new("strace")
        .arg("-f")
        .arg("-o")
        .arg(&log)
        .args(["-e", "trace=syncfs", "-e", "inject=syncfs:delay_enter=3000000:when=1", "--"])
        .arg(dfdu_path())
        .args(["dedupe", "--json"])
        .arg(&root)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let start = std::time::Instant::now();
    while !fs::read_to_string(&log).unwrap_or_default().contains("syncfs(") {
        assert!(start.elapsed().as_secs() < 60, "dfdu never reached syncfs");
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    // Same size, new mtime and ctime: a destination and the source of c1 (open already:
    // seen right before the call), c2's first path before it is opened.
    for p in [root.join("c1/b"), root.join("c1/a"), root.join("c2/a")] {
        let mut f = fs::OpenOptions::new().write(true).open(&p).unwrap();
        std::io::Write::write_all(&mut f, b"x").unwrap();
    }
    let out = child.wait_with_output().unwrap();
    let js = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(out.status.success(), "{js}\n{}", String::from_utf8_lossy(&out.stderr));
    assert!(fs::read_to_string(&log).unwrap().contains("(DELAYED)"), "the run was not held");
    // c1: b, c and d when the source is checked again (3); c2: a at open (1), and b is the
    // source of c.
    let want = Counts {
        groups: 2,
        files: 3 + 1,
        submitted: 300_000,
        deduped: 300_000,
        changed: 3 + 1,
        calls: 1,
        ..Counts::default()
    };
    assert_eq!(dedupe_counts(&js), want, "{js}");
}

/// A group larger than one call (the VFS caps a call at 1 GiB): two calls, the second for
/// the tail from where the first stopped. Sparse files: 64 KiB of data, a hole, 8 KiB.
#[test]
fn dedupe_report_files_larger_than_one_call() {
    let test = "dedupe_report_files_larger_than_one_call";
    let Some(a) = LoopFs::for_test(test, "btrfs", "large", "300M", &[]) else { return };
    let root = a.mnt.join("t");
    fs::create_dir_all(&root).unwrap();
    let size = (1u64 << 30) + 8192;
    let mut rng = Rng(0x1a46e);
    let (head, tail) = (rng.bytes(65_536), rng.bytes(8192));
    for n in ["a", "b"] {
        use std::os::unix::fs::FileExt;
        let f = fs::File::create(root.join(n)).unwrap();
        f.write_all_at(&head, 0).unwrap();
        f.write_all_at(&tail, size - 8192).unwrap();
        assert_eq!(f.metadata().unwrap().len(), size);
    }
    let out = dfdu(&["dedupe".as_ref(), "--json".as_ref(), root.as_os_str()]);
    let js = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(out.status.success(), "{js}\n{}", String::from_utf8_lossy(&out.stderr));
    let want = Counts { groups: 1, files: 1, submitted: size, deduped: size, calls: 2, ..Counts::default() };
    assert_eq!(dedupe_counts(&js), want, "{js}");
    // Now one set of extents: a rerun finds the group all shared.
    let again = dfdu(&["dedupe".as_ref(), "--json".as_ref(), root.as_os_str()]);
    let js = String::from_utf8_lossy(&again.stdout).into_owned();
    assert_eq!(dedupe_counts(&js), Counts { shared: 1, ..Counts::default() }, "{js}");
}

/// A file system without any extent-sharing call (squashfs: the ioctl itself fails with
/// EOPNOTSUPP): before anything was deduplicated, the run stops with one message; after a
/// group on btrfs was, it is one failure per destination and the run goes on.
#[test]
fn dedupe_report_cannot_share_before_and_after() {
    let Some(a) =
        LoopFs::for_test("dedupe_report_cannot_share_before_and_after", "btrfs", "sqb", "300M", &["mksquashfs"])
    else {
        return;
    };
    let mut sq = LoopFs::unmounted("mutdedupe-sq").expect("a directory for the squashfs image");
    let mut rng = Rng(0x5a5a);
    let (d1, d2) = (rng.bytes(300_000), rng.bytes(100_000));
    let src = a.mnt.join("sqsrc");
    write(&src.join("a"), &d2);
    write(&src.join("b"), &d2);
    run_ok(Command::new("mksquashfs").arg(&src).arg(&sq.image).args(["-quiet", "-noappend"]));
    fs::create_dir_all(&sq.mnt).unwrap();
    run_ok(Command::new("mount").args(["-o", "loop,ro"]).arg(&sq.image).arg(&sq.mnt));
    sq.mounted = true;
    let cannot = format!(
        "the file system of {} cannot share extents (Operation not supported; XFS needs reflink=1): nothing was changed",
        sq.mnt.join("a").display()
    );
    let before = dfdu(&["dedupe".as_ref(), "-q".as_ref(), sq.mnt.as_os_str()]);
    assert_eq!(before.status.code(), Some(1));
    assert_eq!(report_lines(&before.stderr), [cannot]);
    // A btrfs group first (more bytes wasted), then the squashfs one.
    let t = a.mnt.join("t");
    write(&t.join("a"), &d1);
    write(&t.join("b"), &d1);
    let after = dfdu(&["dedupe".as_ref(), "-q".as_ref(), t.as_os_str(), sq.mnt.as_os_str()]);
    let lines = report_lines(&after.stderr);
    assert_eq!(after.status.code(), Some(1), "{lines:?}");
    assert_eq!(lines.len(), 4, "{lines:?}");
    assert_eq!(lines[0], format!("cannot deduplicate {}: Operation not supported", sq.mnt.join("b").display()));
    let want =
        Counts { groups: 2, files: 2, submitted: 400_000, deduped: 300_000, errors: 1, calls: 2, ..Counts::default() };
    assert_eq!(lines[1..3], dedupe_text(&want, false)[..], "{lines:?}");
    assert!(free_line(&lines[3]).is_some(), "{lines:?}");
}

/// What the kernel refuses because the bytes differ, although size, mtime and ctime say
/// nothing changed since hashing: one byte of a file is changed under XFS, in the image
/// (XFS keeps no data checksums), and the file's cached pages are dropped.
#[test]
fn dedupe_report_refused_when_data_differs_on_xfs() {
    check_refused_when_data_differs("dedupe_report_refused_when_data_differs_on_xfs", "b");
}

/// Issue 25: the same with the source changed under XFS (`a`: the first path of two
/// copies alike). Both files' hash-file entries are dropped, so the next `dupes` reads
/// both again and finds no group; kept, the source's stale entry would pair it with `b`.
#[test]
fn dedupe_refused_source_is_read_again_on_xfs() {
    check_refused_when_data_differs("dedupe_refused_source_is_read_again_on_xfs", "a");
}

/// `a` and `b` alike, hashed into a hash file; then one byte of `corrupt` changed in the
/// image, and dedupe with the hash file: refused, nothing changed; then dupes.
fn check_refused_when_data_differs(test: &str, corrupt: &str) {
    let Some(a) = LoopFs::for_test(test, "xfs", &format!("refused-{corrupt}"), "300M", &["xfs_io"]) else { return };
    let root = a.mnt.join("t");
    let data = Rng(0xd1ff).bytes(200_000);
    write(&root.join("a"), &data);
    write(&root.join("b"), &data);
    let cache = a.mnt.join("hashes");
    let d = dfdu(&["dupes".as_ref(), "-q".as_ref(), "--hashfile".as_ref(), cache.as_os_str(), root.as_os_str()]);
    assert!(d.status.success());
    let b = root.join(corrupt);
    let b_before = fs::metadata(&b).unwrap();
    flip_byte_under_xfs(&a.image, &b, 1000, data[1000]);
    let mut changed = data.clone();
    changed[1000] = !changed[1000];
    assert_eq!(fs::read(&b).unwrap(), changed, "the kernel reads the changed byte");
    assert_eq!(fs::metadata(&b).unwrap().ctime_nsec(), b_before.ctime_nsec());
    let out = dfdu(&["dedupe".as_ref(), "--json".as_ref(), "--hashfile".as_ref(), cache.as_os_str(), root.as_os_str()]);
    let js = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(out.status.success(), "{js}\n{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(json_num(&js, "bytes_read"), Some(0), "hashed from the hash file: {js}");
    let want = Counts { groups: 1, files: 1, submitted: 200_000, refused: 1, calls: 1, ..Counts::default() };
    assert_eq!(dedupe_counts(&js), want, "{js}");
    assert_eq!(fs::read(&b).unwrap(), changed);
    // The refused pair's entries are gone: both files are read again, and differ.
    let again =
        dfdu(&["dupes".as_ref(), "--json".as_ref(), "--hashfile".as_ref(), cache.as_os_str(), root.as_os_str()]);
    let js = String::from_utf8_lossy(&again.stdout).into_owned();
    assert!(again.status.success(), "{js}\n{}", String::from_utf8_lossy(&again.stderr));
    let summary = &js[js.find("\"summary\"").expect("a summary")..];
    assert_eq!(json_num(summary, "groups"), Some(0), "{js}");
    assert_eq!(json_num(summary, "cache_hits"), Some(0), "{js}");
}

/// A destination that changes after it was opened, before its batch's call, is left out
/// of the call: 121 destinations make two batches (120 and 1); the run is held in the
/// first batch's call (strace delays the ioctls on the source) while the last one changes.
#[test]
fn dedupe_report_skips_a_destination_changed_before_its_batch() {
    let Some(a) = LoopFs::for_test(
        "dedupe_report_skips_a_destination_changed_before_its_batch",
        "btrfs",
        "batch",
        "300M",
        &["strace"],
    ) else {
        return;
    };
    let root = a.mnt.join("t");
    let data = Rng(0xba7c).bytes(16_384);
    let paths: Vec<PathBuf> = (0..122).map(|i| root.join(format!("f{i:03}"))).collect();
    for p in &paths {
        write(p, &data);
    }
    let log = a.mnt.join("strace.log");
    let child = Command::new("strace")
        .arg("-f")
        .arg("-o")
        .arg(&log)
        .arg("-P")
        .arg(&paths[0])
        .args(["-e", "trace=ioctl", "-e", "inject=ioctl:delay_enter=1500000", "--"])
        .arg(dfdu_path())
        .args(["dedupe", "--json"])
        .arg(&root)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let start = std::time::Instant::now();
    let is_dedupe = |l: &str| l.contains("DEDUPE") || l.contains("EXTENT_SAME") || l.contains("0x9436");
    while !fs::read_to_string(&log).unwrap_or_default().lines().any(is_dedupe) {
        assert!(
            start.elapsed().as_secs() < 60,
            "no FIDEDUPERANGE call: {}",
            fs::read_to_string(&log).unwrap_or_default()
        );
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    let mut f = fs::OpenOptions::new().write(true).open(&paths[121]).unwrap();
    std::io::Write::write_all(&mut f, b"x").unwrap();
    drop(f);
    let out = child.wait_with_output().unwrap();
    let js = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(out.status.success(), "{js}\n{}", String::from_utf8_lossy(&out.stderr));
    let calls = fs::read_to_string(&log).unwrap().lines().filter(|l| is_dedupe(l)).count();
    assert_eq!(calls, 1, "{}", fs::read_to_string(&log).unwrap());
    let want = Counts {
        groups: 1,
        files: 121,
        submitted: 120 * 16_384,
        deduped: 120 * 16_384,
        changed: 1,
        calls: 1,
        ..Counts::default()
    };
    assert_eq!(dedupe_counts(&js), want, "{js}");
}

/// Unmounts a tmpfs mounted inside a loop image before the image itself goes.
struct TmpfsIn(PathBuf);

impl Drop for TmpfsIn {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.0).status();
    }
}

/// A tmpfs mounted inside the selection, after groups on btrfs were deduplicated: its
/// group fails with one message and the run's figures stay true (it does not claim that
/// nothing was changed); the bytes of every file are what they were.
#[test]
fn dedupe_tmpfs_inside_the_selection_after_btrfs_groups() {
    let Some(a) =
        LoopFs::for_test("dedupe_tmpfs_inside_the_selection_after_btrfs_groups", "btrfs", "mixed", "300M", &[])
    else {
        return;
    };
    let root = a.mnt.join("t");
    // The btrfs group wastes more, so it comes first.
    let big = Rng(0x3173).bytes(300_000);
    write(&root.join("a/x1"), &big);
    write(&root.join("a/x2"), &big);
    let tm = root.join("tm");
    fs::create_dir_all(&tm).unwrap();
    run_ok(Command::new("mount").args(["-t", "tmpfs", "tmpfs"]).arg(&tm));
    let _tm = TmpfsIn(tm.clone());
    let small = Rng(0x3174).bytes(100_000);
    write(&tm.join("z1"), &small);
    write(&tm.join("z2"), &small);
    let out = dfdu(&["dedupe".as_ref(), "--json".as_ref(), root.as_os_str()]);
    let js = String::from_utf8_lossy(&out.stdout).into_owned();
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(1), "{js}\n{err}");
    assert!(!err.contains("nothing was changed"), "{err}");
    let c = dedupe_counts(&js);
    assert_eq!((c.deduped, c.errors, c.calls), (300_000, 2, 1), "{js}");
    for (p, data) in [("a/x1", &big), ("a/x2", &big), ("tm/z1", &small), ("tm/z2", &small)] {
        assert_eq!(&fs::read(root.join(p)).unwrap(), data, "{p}");
    }
}

/// The dedupe phase's side of issue 24 (4): while dfdu is held in its first `syncfs`
/// (after the first group's source was opened), the owner (`nobody`) of two directories swaps them
/// for symlinks: one to a directory outside the tree holding files of the same names
/// and sizes, one to `/dev`, where its files' names are device nodes. No descriptor of
/// the `strace -y` log may reach either; their groups are skipped as changed, the first
/// group is deduplicated. Before the fix each member was reopened by path, and both
/// symlinks were followed (the `/dev` group's source was `/dev/full`).
#[test]
fn dedupe_never_follows_a_directory_swapped_for_a_symlink_after_the_reads() {
    let name = "dedupe_never_follows_a_directory_swapped_for_a_symlink_after_the_reads";
    let Some(a) = LoopFs::for_test(name, "btrfs", "swap-dirs", "300M", &["strace"]) else { return };
    let root = a.mnt.join("t");
    let secret = a.mnt.join("secret");
    let mut rng = Rng(0x5a1d);
    // The group that stays wastes the most: it comes first, before the hold.
    let (g, s1, s2) = (rng.bytes(300_000), rng.bytes(200_000), rng.bytes(100_000));
    for (dir, names, data) in [("a", ["x1", "x2"], &g), ("v1", ["y1", "y2"], &s1), ("v2", ["zero", "full"], &s2)] {
        for n in names {
            write(&root.join(dir).join(n), data);
        }
    }
    for d in ["v1", "v2"] {
        assert!(Command::new("chown").args(["-R", "65534:65534"]).arg(root.join(d)).status().unwrap().success());
    }
    let other = rng.bytes(200_000);
    for n in ["y1", "y2"] {
        write(&secret.join(n), &other);
    }
    let before = [kept(&secret.join("y1")), kept(&secret.join("y2"))];
    let log = a.mnt.join("strace.log");
    let args = ["dedupe".as_ref(), "--json".as_ref(), root.as_os_str()];
    let (out, log) = run_held(&args, "openat,open,read,pread64,ioctl", "syncfs", &log, || {
        swap_for_symlink(&root.join("v1"), &a.mnt.join("v1-moved"), &secret);
        swap_for_symlink(&root.join("v2"), &a.mnt.join("v2-moved"), Path::new("/dev"));
    });
    let js = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(out.status.success(), "{js}\n{}", String::from_utf8_lossy(&out.stderr));
    let want =
        Counts { groups: 3, files: 1, submitted: 300_000, deduped: 300_000, calls: 1, changed: 4, ..Counts::default() };
    assert_eq!(dedupe_counts(&js), want, "{js}");
    let outside = [secret.clone(), PathBuf::from("/dev/zero"), PathBuf::from("/dev/full")];
    let hits: Vec<&str> = outside.iter().flat_map(|p| lines_reaching(&log, p)).collect();
    assert!(hits.is_empty(), "dfdu reached files outside the tree:\n{}", hits.join("\n"));
    assert_eq!([kept(&secret.join("y1")), kept(&secret.join("y2"))], before);
}

// ------------------------------------------------------------------------------------------
// Choosing the source (issue 24, items 6 and 11): immutable and append-only copies, sparse
// and dense copies, read-only btrfs snapshots.

/// Takes `chattr` flags off again when dropped (before the image goes: declare it after).
struct Unpin(Vec<PathBuf>);

impl Drop for Unpin {
    fn drop(&mut self) {
        for p in &self.0 {
            let _ = Command::new("chattr").args(["-i", "-a"]).arg(p).status();
        }
    }
}

/// The extent map `xfs_io -r -c fiemap` prints (512-byte sectors, holes named), without
/// its first line (the file's name).
fn fiemap(p: &Path) -> String {
    let out = Command::new("xfs_io").args(["-r", "-c", "fiemap"]).arg(p).output().unwrap();
    assert!(out.status.success(), "xfs_io fiemap {}: {}", p.display(), text(&out.stderr));
    text(&out.stdout).lines().skip(1).collect::<Vec<_>>().join("\n")
}

fn blocks_512(p: &Path) -> u64 {
    fs::metadata(p).unwrap().blocks()
}

/// Writes `data` to `p` leaving every 64 KiB piece that is all zeros in `holes` a hole.
fn write_with_holes(p: &Path, data: &[u8], holes: &[std::ops::Range<usize>]) {
    use std::os::unix::fs::FileExt;
    fs::create_dir_all(p.parent().unwrap()).unwrap();
    let f = fs::File::create(p).unwrap();
    f.set_len(data.len() as u64).unwrap();
    for (i, piece) in data.chunks(65_536).enumerate() {
        let at = i * 65_536;
        let in_hole = holes.iter().any(|h| h.start <= at && at + piece.len() <= h.end);
        if !(in_hole && piece.iter().all(|&b| b == 0)) {
            f.write_all_at(piece, at as u64).unwrap();
        }
    }
    f.sync_all().unwrap();
}

/// An immutable or append-only first path no longer keeps its group from being
/// deduplicated (before: the whole group was skipped, "1 immutable or append-only").
/// p1: the first path is immutable, the others come to share its extents, it stays as it
/// was; p3: the same with an append-only first path; p2: an append-only first path that is
/// dense while its copies are sparse is no source (its extents would fill their holes) and
/// no destination: it is the one reported, the sparse copies share one another's extents.
fn check_pinned_first(kind: &str) {
    let what = format!("dedupe_pinned_first_path_on_{kind}");
    let fsys = match LoopFs::labelled(if kind == "btrfs" { "btrfs" } else { "xfs" }, &format!("pin-{kind}"), "300M") {
        Ok(f) => f,
        Err(e) => return skip(&format!("{what}: cannot make or mount the image: {e}")),
    };
    let root = fsys.mnt.join("t");
    let mut rng = Rng(0x9147);
    let (d1, d3) = (rng.bytes(300_000), rng.bytes(200_000));
    let mut d2 = vec![0u8; 1 << 20];
    d2[..4096].copy_from_slice(&rng.bytes(4096));
    let n2 = d2.len();
    d2[n2 - 4096..].copy_from_slice(&rng.bytes(4096));
    for n in ["a", "b", "c"] {
        write(&root.join("p1").join(n), &d1);
        write(&root.join("p3").join(n), &d3);
    }
    write_with_holes(&root.join("p2/a"), &d2, &[]);
    let whole = 0..n2;
    write_with_holes(&root.join("p2/b"), &d2, std::slice::from_ref(&whole));
    write_with_holes(&root.join("p2/c"), &d2, std::slice::from_ref(&whole));
    run_ok(Command::new("sync").arg("-f").arg(&root));
    let _unpin = Unpin(vec![root.join("p1/a"), root.join("p2/a"), root.join("p3/a")]);
    run_ok(Command::new("chattr").arg("+i").arg(root.join("p1/a")));
    run_ok(Command::new("chattr").arg("+a").arg(root.join("p2/a")));
    run_ok(Command::new("chattr").arg("+a").arg(root.join("p3/a")));
    let files = walk(&root);
    let before: BTreeMap<PathBuf, (Kept, u64, String)> =
        files.iter().map(|p| (p.clone(), (kept(p), blocks_512(p), fiemap(p)))).collect();
    let out = dfdu(&["dedupe".as_ref(), "--json".as_ref(), root.as_os_str()]);
    let js = text(&out.stdout);
    assert!(out.status.success(), "{js}\n{}", text(&out.stderr));
    let sparse_bytes = n2 as u64;
    let want = Counts {
        groups: 3,
        files: 2 + 1 + 2,
        submitted: 2 * 300_000 + sparse_bytes + 2 * 200_000,
        deduped: 2 * 300_000 + sparse_bytes + 2 * 200_000,
        pinned: 1,
        calls: 3,
        ..Counts::default()
    };
    assert_eq!(dedupe_counts(&js), want, "{kind}: {js}");
    for p in &files {
        let (k, blocks, _) = &before[p];
        assert!(&kept(p) == k, "{} changed", p.display());
        assert!(blocks_512(p) <= *blocks, "{} grew from {blocks} blocks to {}", p.display(), blocks_512(p));
    }
    let map = |g: &str, n: &str| fiemap(&root.join(g).join(n));
    for g in ["p1", "p2", "p3"] {
        assert_eq!(map(g, "a"), before[&root.join(g).join("a")].2, "{kind}: {g}/a's extents moved");
    }
    for g in ["p1", "p3"] {
        assert_eq!((map(g, "b"), map(g, "c")), (map(g, "a"), map(g, "a")), "{kind}: {g} shares a's extents");
    }
    assert_eq!(map("p2", "c"), map("p2", "b"), "{kind}: p2/c shares p2/b's extents");
    assert_eq!(map("p2", "b"), before[&root.join("p2/b")].2, "{kind}: p2/b is the source");
}

#[test]
fn dedupe_pinned_first_path_on_btrfs() {
    if need_root_and("mkfs.btrfs", "dedupe_pinned_first_path_on_btrfs")
        && have_or_skip("chattr", "dedupe_pinned_first_path_on_btrfs")
        && have_or_skip("xfs_io", "dedupe_pinned_first_path_on_btrfs")
    {
        check_pinned_first("btrfs");
    }
}

#[test]
fn dedupe_pinned_first_path_on_xfs() {
    if need_root_and("mkfs.xfs", "dedupe_pinned_first_path_on_xfs")
        && have_or_skip("chattr", "dedupe_pinned_first_path_on_xfs")
        && have_or_skip("xfs_io", "dedupe_pinned_first_path_on_xfs")
    {
        check_pinned_first("xfs");
    }
}

/// Sparse and dense copies of one content: the kernel gives a destination the source's
/// layout, holes included (a dense source fills a sparse copy's holes; a sparse source
/// punches holes into a dense copy, on btrfs and XFS alike). The source is the copy with
/// the fewest blocks, so no member allocates more than before and the dense copies'
/// zeros are given back. Before, the first path (dense here) was the source and the
/// sparse copies lost their holes. The content: 4 KiB of data, 2 MiB of zeros, 4 KiB of
/// data, 2 MiB of zeros, 4 KiB of data; "b" and "e" keep both zero runs as holes, "d"
/// only the first, "a" and "c" none.
fn check_sparse_and_dense(kind: &str) {
    let what = format!("dedupe_sparse_and_dense_copies_on_{kind}");
    let fsys = match LoopFs::labelled(kind, &format!("sparse-{kind}"), "300M") {
        Ok(f) => f,
        Err(e) => return skip(&format!("{what}: cannot make or mount the image: {e}")),
    };
    let root = fsys.mnt.join("t");
    let mut rng = Rng(0x5ba5);
    let zeros = 2usize << 20;
    let mut data = rng.bytes(4096);
    data.extend(vec![0u8; zeros]);
    data.extend(rng.bytes(4096));
    data.extend(vec![0u8; zeros]);
    data.extend(rng.bytes(4096));
    let (first, second) = (4096..4096 + zeros, 2 * 4096 + zeros..2 * 4096 + 2 * zeros);
    let holes: [(&str, Vec<std::ops::Range<usize>>); 5] = [
        ("a-dense", vec![]),
        ("b-sparse", vec![first.clone(), second.clone()]),
        ("c-dense", vec![]),
        ("d-half", vec![first.clone()]),
        ("e-sparse", vec![first, second]),
    ];
    for (name, h) in &holes {
        write_with_holes(&root.join(name), &data, h);
    }
    run_ok(Command::new("sync").arg("-f").arg(&root));
    let before: Vec<(PathBuf, Kept, u64)> =
        holes.iter().map(|(n, _)| root.join(n)).map(|p| (p.clone(), kept(&p), blocks_512(&p))).collect();
    let sparse_blocks = before[1].2;
    let blocks: Vec<u64> = before.iter().map(|b| b.2).collect();
    assert!(sparse_blocks * 512 < 1 << 20 && blocks[0] * 512 > 4 << 20, "{kind}: blocks {blocks:?}");
    let out = dfdu(&["dedupe".as_ref(), "--json".as_ref(), root.as_os_str()]);
    let js = text(&out.stdout);
    assert!(out.status.success(), "{js}\n{}", text(&out.stderr));
    let size = data.len() as u64;
    let want = Counts { groups: 1, files: 4, submitted: 4 * size, deduped: 4 * size, calls: 1, ..Counts::default() };
    assert_eq!(dedupe_counts(&js), want, "{kind}: {js}");
    for (p, k, blocks) in &before {
        assert!(&kept(p) == k, "{} changed", p.display());
        let now = blocks_512(p);
        assert!(now <= *blocks, "{kind}: {} grew from {blocks} blocks to {now}", p.display());
    }
    let mut given_back = 0;
    for (p, _, blocks) in &before {
        assert_eq!(blocks_512(p), sparse_blocks, "{kind}: {} has the sparse copy's blocks", p.display());
        given_back += (blocks - sparse_blocks) * 512;
    }
    let grown = json_num(&js, "free_after").unwrap() as i64 - json_num(&js, "free_before").unwrap() as i64;
    notice(&format!("{what}: {given_back} bytes of zeros given back, free space grew by {grown}"));
    assert!(grown as f64 >= 0.99 * given_back as f64, "{kind}: free space grew by {grown}, {given_back} expected");
}

#[test]
fn dedupe_sparse_and_dense_copies_on_btrfs() {
    if need_root_and("mkfs.btrfs", "dedupe_sparse_and_dense_copies_on_btrfs") {
        check_sparse_and_dense("btrfs");
    }
}

#[test]
fn dedupe_sparse_and_dense_copies_on_xfs() {
    if need_root_and("mkfs.xfs", "dedupe_sparse_and_dense_copies_on_xfs") {
        check_sparse_and_dense("xfs");
    }
}

/// A subvolume's generation, as `btrfs subvolume show` prints it.
fn generation(subvolume: &Path) -> u64 {
    let out = Command::new("btrfs").args(["subvolume", "show"]).arg(subvolume).output().unwrap();
    let show = text(&out.stdout);
    let line = show.lines().find(|l| l.trim_start().starts_with("Generation:")).unwrap_or_else(|| panic!("{show}"));
    line.split(':').nth(1).unwrap().trim().parse().unwrap()
}

/// Files on a read-only btrfs snapshot are left as they are and counted (before, dedupe
/// remapped the snapshot's extents: its generation moved): the snapshot's generation and
/// extent maps stay the same; the writable subvolume's copies are deduplicated. The same
/// where the kernel predates `BTRFS_IOC_GET_SUBVOL_INFO` (strace makes that call fail with
/// ENOTTY on the snapshot's files). `--allow-readonly` deduplicates the snapshot too.
#[test]
fn dedupe_leaves_read_only_snapshots_alone_on_btrfs() {
    let what = "dedupe_leaves_read_only_snapshots_alone_on_btrfs";
    let Some(fsys) = LoopFs::for_test(what, "btrfs", "rosnap", "300M", &["btrfs", "xfs_io"]) else { return };
    let (sv, snap) = (fsys.mnt.join("sv"), fsys.mnt.join("snap"));
    run_ok(Command::new("btrfs").args(["subvolume", "create"]).arg(&sv));
    let data = Rng(0x5ab).bytes(300_000);
    write(&sv.join("a"), &data);
    write(&sv.join("b"), &data);
    run_ok(Command::new("sync").arg("-f").arg(&sv));
    run_ok(Command::new("btrfs").args(["subvolume", "snapshot", "-r"]).arg(&sv).arg(&snap));
    run_ok(Command::new("sync").arg("-f").arg(&snap));
    let maps = || (fiemap(&snap.join("a")), fiemap(&snap.join("b")));
    let (gen, before) = (generation(&snap), maps());
    assert_ne!(before.0, before.1, "the snapshot's copies have extents of their own");
    let dedupe = |extra: &[&str]| {
        let mut args: Vec<&std::ffi::OsStr> = vec!["dedupe".as_ref(), "--json".as_ref()];
        args.extend(extra.iter().map(std::ffi::OsStr::new));
        args.push(fsys.mnt.as_os_str());
        let out = dfdu(&args);
        let js = text(&out.stdout);
        assert!(out.status.success(), "{js}\n{}", text(&out.stderr));
        dedupe_counts(&js)
    };
    // One group, two parts (each subvolume has a device of its own): sv's is deduplicated,
    // snap's left alone.
    let size = data.len() as u64;
    let sv_part = Counts { groups: 1, files: 1, submitted: size, deduped: size, calls: 1, ..Counts::default() };
    assert_eq!(dedupe(&[]), Counts { readonly: 1, ..sv_part.clone() });
    assert_eq!((generation(&snap), maps()), (gen, before.clone()), "the read-only snapshot changed");
    // A kernel without GET_SUBVOL_INFO: the write-access check answers.
    if have_or_skip("strace", &format!("{what} (without GET_SUBVOL_INFO)")) {
        let log = fsys.mnt.join("strace.log");
        let out = Command::new("strace")
            .arg("-f")
            .arg("-o")
            .arg(&log)
            .arg("-P")
            .arg(snap.join("a"))
            .arg("-P")
            .arg(snap.join("b"))
            .args(["-e", "trace=ioctl", "-e", "inject=ioctl:error=ENOTTY", "--"])
            .arg(dfdu_path())
            .args(["dedupe", "--json"])
            .arg(&fsys.mnt)
            .env("LC_ALL", "C")
            .output()
            .unwrap();
        let js = text(&out.stdout);
        assert!(out.status.success(), "{js}\n{}", text(&out.stderr));
        let traced = fs::read_to_string(&log).unwrap();
        assert!(traced.lines().any(|l| l.contains("GET_SUBVOL_INFO") && l.contains("(INJECTED)")), "{traced}");
        assert_eq!(dedupe_counts(&js), Counts { groups: 1, shared: 1, readonly: 1, ..Counts::default() }, "{js}");
        assert_eq!((generation(&snap), maps()), (gen, before.clone()), "the read-only snapshot changed");
    }
    let allowed = dedupe(&["--allow-readonly"]);
    assert_eq!(allowed, Counts { shared: 1, ..sv_part }, "--allow-readonly");
    assert_ne!(generation(&snap), gen, "deduplicating inside the snapshot moves its generation");
    let after = maps();
    assert_eq!(after.0, after.1, "the snapshot's copies share their extents now");
}

// ------------------------------------------------------------------------------------------
// Which copies already share: FIEMAP's addresses are per file system.

/// Two fresh XFS images that each got the same file first hold it at the same block
/// address. Before, `dupes` took the equal extent maps for one set of blocks and called
/// the pair already shared (`[shared]`, nothing reclaimable) though the copies are on two
/// file systems and share nothing. Now they are not shared, and still nothing is
/// reclaimable: copies on different file systems can never come to share. A snapshot's
/// copy on btrfs (another device number, the same blocks, every extent flagged shared)
/// stays shared.
#[test]
fn dupes_equal_addresses_on_two_file_systems_are_not_shared() {
    if !need_root_and("mkfs.xfs", "dupes_equal_addresses_on_two_file_systems")
        || !need_root_and("mkfs.btrfs", "dupes_equal_addresses_on_two_file_systems")
    {
        return;
    }
    let mk = |kind: &str, label: &str| LoopFs::labelled(kind, label, "512M");
    let (a, b, c) = match (mk("xfs", "addr-a"), mk("xfs", "addr-b"), mk("btrfs", "addr-snap")) {
        (Ok(a), Ok(b), Ok(c)) => (a, b, c),
        (a, b, c) => {
            let e = [a.err(), b.err(), c.err()].into_iter().flatten().next().unwrap_or_default();
            return skip(&format!("dupes_equal_addresses_on_two_file_systems: {e}"));
        }
    };
    let data = Rng(0xadd7).bytes(200_000);
    write(&a.mnt.join("f"), &data);
    write(&b.mnt.join("f"), &data);
    let extents = |p: &Path| {
        let o = Command::new("xfs_io").args(["-r", "-c", "fiemap"]).arg(p).output().unwrap();
        String::from_utf8_lossy(&o.stdout).lines().skip(1).map(str::to_string).collect::<Vec<_>>()
    };
    assert!(Command::new("sync").status().unwrap().success());
    let (ea, eb) = (extents(&a.mnt.join("f")), extents(&b.mnt.join("f")));
    if ea != eb {
        notice(&format!("SKIP: dupes_equal_addresses: the two images placed the file differently ({ea:?} {eb:?})"));
        return;
    }
    let out = dfdu(&["dupes".as_ref(), "--json".as_ref(), a.mnt.as_os_str(), b.mnt.as_os_str()]);
    let js = text(&out.stdout);
    assert!(js.contains("\"already_shared\":false"), "two file systems share nothing: {js}");
    assert_eq!(json_num(&js, "bytes_reclaimable"), Some(0), "{js}");
    assert_eq!(json_num(&js, "groups_already_shared"), Some(0), "{js}");

    let sv = c.mnt.join("sv");
    let ok = |cmd: &mut Command| assert!(cmd.output().unwrap().status.success(), "{cmd:?}");
    ok(Command::new("btrfs").args(["subvolume", "create"]).arg(&sv));
    write(&sv.join("f"), &data);
    ok(&mut Command::new("sync"));
    ok(Command::new("btrfs").args(["subvolume", "snapshot"]).arg(&sv).arg(c.mnt.join("snap")));
    let out = dfdu(&["dupes".as_ref(), "--json".as_ref(), c.mnt.as_os_str()]);
    let js = text(&out.stdout);
    assert!(js.contains("\"already_shared\":true"), "a snapshot's copy shares its blocks: {js}");
    assert_eq!(json_num(&js, "bytes_reclaimable"), Some(0), "{js}");
    let _ = Command::new("btrfs").args(["subvolume", "delete"]).arg(c.mnt.join("snap")).output();
}

/// A copy alone on its file system is counted as such wherever it sorts in its group.
/// Before, only one that sorted after the group's first path was: the lone copy on the
/// image whose path sorts first was counted as nothing (0 where 1 was due).
#[test]
fn dedupe_counts_a_lone_copy_that_sorts_first() {
    if !need_root_and("mkfs.xfs", "dedupe_counts_a_lone_copy_that_sorts_first") {
        return;
    }
    let (a, b) = match (LoopFs::labelled("xfs", "lone-a", "300M"), LoopFs::labelled("xfs", "lone-b", "300M")) {
        (Ok(a), Ok(b)) => (a, b),
        (Err(e), _) | (_, Err(e)) => return skip(&format!("dedupe_counts_a_lone_copy_that_sorts_first: {e}")),
    };
    assert!(a.mnt < b.mnt, "the lone copy's image sorts first");
    let data = Rng(0x10e).bytes(150_000);
    write(&a.mnt.join("t/lone"), &data);
    write(&b.mnt.join("t/x"), &data);
    write(&b.mnt.join("t/y"), &data);
    let out = dfdu_args(&["dedupe", "--json"], &os(&[&a.mnt.join("t"), &b.mnt.join("t")]));
    let js = text(&out.stdout);
    assert_eq!(json_num(&js, "skipped_other_fs"), Some(1), "{js}");
    assert_eq!(json_num(&js, "files"), Some(1), "{js}");
    assert_eq!(json_num(&js, "bytes_deduplicated"), Some(150_000), "{js}");
}

/// Regression (issue 27's shape T: 200,000 identical 1 KiB files): a group larger than
/// the descriptors dfdu may hold. Every member of a part was held open at once, so with
/// 200,000 copies 180,007 of them failed with EMFILE, and the free space after was read
/// through no handle at all (reported as −1.1 GB). Here 700 copies of one 8 KiB file under
/// a limit of 200 descriptors (`prlimit`, hard limit too, so dfdu cannot raise it): every
/// copy is shared, nothing fails, and the free space gained is a real figure.
#[test]
fn dedupe_group_larger_than_the_descriptor_limit() {
    let test = "dedupe_group_larger_than_the_descriptor_limit";
    let Some(fsys) = LoopFs::for_test(test, "xfs", "many-members", "300M", &["prlimit"]) else { return };
    let root = fsys.mnt.join("t");
    let data = Rng(0x7e1).bytes(8192);
    for d in 0..7 {
        let dir = root.join(format!("d{d}"));
        fs::create_dir_all(&dir).unwrap();
        for i in 0..100 {
            fs::write(dir.join(format!("f{i:03}")), &data).unwrap();
        }
    }
    run_ok(Command::new("sync").arg("-f").arg(&root));
    let out = Command::new("prlimit")
        .arg("--nofile=200:200")
        .arg(dfdu_path())
        .args(["dedupe", "--json", "-q"])
        .arg(&root)
        .output()
        .expect("run prlimit dfdu");
    let js = String::from_utf8_lossy(&out.stdout);
    let report = js.find("\"dedupe\":").map_or(&js[..], |at| &js[at..]);
    assert!(out.status.success(), "exit {:?}: {}\n{report}", out.status, String::from_utf8_lossy(&out.stderr));
    assert_eq!(json_num(&js, "errors"), Some(0), "{report}");
    assert_eq!(json_num(&js, "files"), Some(699), "{report}");
    assert_eq!(json_num(&js, "bytes_deduplicated"), Some(699 * 8192), "{report}");
    let (before, after) =
        (json_num(&js, "free_before").expect("free_before"), json_num(&js, "free_after").expect("after"));
    assert!(after >= before + 600 * 8192, "699 copies of 8 KiB given back: {before} → {after}\n{report}");
    for d in 0..7 {
        for i in 0..100 {
            assert_eq!(fs::read(root.join(format!("d{d}/f{i:03}"))).unwrap(), data);
        }
    }
}
