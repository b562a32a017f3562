//! `dfdu dedupe --blocks` on loop-mounted XFS (`reflink=1`), as root; without root or
//! mkfs.xfs: SKIP (helpers in `tests/common/dupes.rs`).
//!
//! * A VM-image shape with known content (a base, a copy with rewritten 128 KiB blocks,
//!   one with scattered rewritten 4 KiB pages and an unaligned tail, one with its 1 MiB
//!   runs moved, one with repeats inside itself and a copy shifted by one page, zeros):
//!   the duplicate blocks dfdu counts are exactly those of the content at 4 KiB, XFS
//!   frees at least 90% of them, every file's bytes, mode, owner and mtime are unchanged,
//!   a dry run before says the same figures and changes nothing, a rerun makes no call.
//! * The rules of whole-file dedupe for ranges: an immutable file serves as a source but
//!   its extents never move; files written while the run is held before its first call
//!   (in place, appended to, through a shared mapping) are skipped as changed and keep
//!   every byte written.
//! * With `--hashfile`, a rerun reads no file and makes no call; btrfs (shape V, and two
//!   subvolumes of one file system).
//! * btrfs's remainder copy (`src/dupes/remainder.rs`): shape V frees ≥ 90 % of its
//!   duplicate bytes at 4 KiB (and ≥ 50 % of the 128 KiB count) with every check above,
//!   the dry run's copy figures are the run's and its estimate of the space given back is
//!   what `statfs` shows; bytes written into a destination between its copy and the
//!   calls are kept; a run killed while it holds a copy leaves no name and no space.

mod common;

use common::dupes::*;
use std::collections::{BTreeMap, HashSet};
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

const PAGE: usize = 4096;
const BLOCK_128K: usize = 128 << 10;
const MIB: usize = 1 << 20;

/// The files of shape V under `root`, in path order, with their contents.
fn shape_v(root: &Path, seed: u64) -> Vec<(PathBuf, Vec<u8>)> {
    let mut rng = Rng(seed | 1);
    let base = rng.bytes(4 * MIB);
    let mut blocks = base.clone();
    for i in (0..blocks.len() / BLOCK_128K).step_by(4) {
        blocks[i * BLOCK_128K..(i + 1) * BLOCK_128K].copy_from_slice(&rng.bytes(BLOCK_128K));
    }
    let mut pages = base.clone();
    for _ in 0..64 {
        let p = rng.below((pages.len() / PAGE) as u64) as usize * PAGE;
        pages[p..p + PAGE].copy_from_slice(&rng.bytes(PAGE));
    }
    pages.extend_from_slice(&rng.bytes(1000));
    let mut moved = base[MIB..].to_vec();
    moved.extend_from_slice(&base[..MIB]);
    let x = rng.bytes(MIB / 2);
    let mut repeats = [x.clone(), x.clone(), x.clone(), rng.bytes(PAGE), x].concat();
    repeats.extend_from_slice(&base[..MIB]);
    let mut zeros = vec![0u8; BLOCK_128K * 2];
    zeros.extend_from_slice(&rng.bytes(BLOCK_128K));
    let files = [("a-base", base), ("b-blocks", blocks), ("c-pages", pages), ("d-moved", moved)];
    let files = files.into_iter().chain([("e-repeats", repeats), ("f-zeros", zeros)]);
    files.map(|(name, data)| (root.join(name), data)).collect()
}

/// Aligned blocks of `unit` bytes (not all zeros) whose content an earlier one has, in
/// path order: what block dedupe can give back at that granularity.
fn dup_blocks(files: &[(PathBuf, Vec<u8>)], unit: usize) -> u64 {
    let mut seen: HashSet<&[u8]> = HashSet::new();
    let mut dups = 0;
    for (_, data) in files {
        for b in data.chunks_exact(unit).filter(|b| b.iter().any(|&x| x != 0)) {
            if !seen.insert(b) {
                dups += 1;
            }
        }
    }
    dups
}

fn xfs_or_skip(test: &str) -> Option<LoopFs> {
    loop_or_skip("xfs", test)
}

fn loop_or_skip(kind: &str, test: &str) -> Option<LoopFs> {
    if !need_root_and(&format!("mkfs.{kind}"), test) {
        return None;
    }
    match LoopFs::labelled(kind, test, "512M") {
        Ok(f) => Some(f),
        Err(e) => {
            skip(&format!("{test}: cannot make or mount a {kind} image: {e}"));
            None
        }
    }
}

/// The `"blocks"` object of a dedupe report's JSON.
fn blocks_json(out: &std::process::Output) -> String {
    let js = text(&out.stdout);
    assert!(out.status.success(), "{js}\n{}", text(&out.stderr));
    js.split("\"blocks\":").nth(1).unwrap_or_else(|| panic!("no blocks in {js}")).to_string()
}

fn num(js: &str, key: &str) -> u64 {
    json_num(js, key).unwrap_or_else(|| panic!("no {key} in {js}"))
}

fn free_bytes(mnt: &Path) -> u64 {
    run_ok(Command::new("sync").arg("-f").arg(mnt));
    let o = Command::new("stat").args(["-f", "-c", "%a %S"]).arg(mnt).output().unwrap();
    let t = text(&o.stdout);
    let v: Vec<u64> = t.split_whitespace().map(|w| w.parse().unwrap()).collect();
    v[0] * v[1]
}

#[test]
fn dedupe_blocks_on_xfs_share_rewritten_moved_and_repeated_blocks() {
    let freed = check_shape_v("xfs", "dedupe_blocks_on_xfs");
    // XFS counts references per block: what was shared is given back.
    if let Some((freed, dup_4k, dup_128k)) = freed {
        assert!(freed * 10 >= dup_4k * 9, "freed {freed} of {dup_4k} duplicate bytes at 4 KiB");
        assert!(freed >= dup_128k, "freed {freed}, at 128 KiB {dup_128k}");
    }
}

/// btrfs frees an extent only when no part of it is referenced: the unmatched rest of
/// each partly matched extent is copied (`remainder.rs`), so that the old extents are
/// given back too. Without the copy only the file whose every block is a moved copy
/// (`d-moved`, one extent of 4 MiB) was freed, 30 % of the duplicate bytes at 4 KiB.
#[test]
fn dedupe_blocks_on_btrfs_share_and_free_whole_extents() {
    let freed = check_shape_v("btrfs", "dedupe_blocks_on_btrfs");
    if let Some((freed, dup_4k, dup_128k)) = freed {
        common::notice(&format!(
            "dedupe_blocks_on_btrfs: freed {freed} of {dup_4k} duplicate bytes at 4 KiB ({dup_128k} at 128 KiB)"
        ));
        assert!(freed * 10 >= dup_4k * 9, "freed {freed} of {dup_4k} duplicate bytes at 4 KiB");
        assert!(freed * 2 >= dup_128k, "freed {freed}, at 128 KiB {dup_128k}");
    }
}

/// Shape V on a loop-mounted `kind`: every check but the free space, which is returned
/// as (bytes freed, duplicate bytes at 4 KiB, at 128 KiB); `None` when skipped.
fn check_shape_v(kind: &str, test: &str) -> Option<(u64, u64, u64)> {
    let fsys = loop_or_skip(kind, test)?;
    let root = fsys.mnt.join("v");
    let files = shape_v(&root, 0xb10c);
    for (p, data) in &files {
        write(p, data);
    }
    let _ = Command::new("chmod").arg("640").arg(&files[1].0).status();
    let _ = Command::new("chown").arg("12345:54321").arg(&files[2].0).status();
    let (dup_4k, dup_128k) = (dup_blocks(&files, PAGE), dup_blocks(&files, BLOCK_128K));
    assert!(dup_4k * PAGE as u64 > dup_128k * BLOCK_128K as u64, "the shape has scattered pages");
    let before: BTreeMap<PathBuf, Kept> = walk(&root).into_iter().map(|p| (p.clone(), kept(&p))).collect();
    let args = |extra: &[&str]| {
        let mut a: Vec<std::ffi::OsString> = ["dedupe", "--json", "-q", "--blocks"].map(Into::into).to_vec();
        a.extend(extra.iter().map(Into::into));
        a.push(root.clone().into());
        a
    };
    let run = |extra: &[&str]| {
        let a = args(extra);
        dfdu(&a.iter().map(|s| s.as_os_str()).collect::<Vec<_>>())
    };
    let free0 = free_bytes(&fsys.mnt);
    let dry = blocks_json(&run(&["--dry-run"]));
    assert_eq!(num(&dry, "dup_blocks"), dup_4k, "{dry}");
    assert_eq!((num(&dry, "ioctl_calls"), num(&dry, "bytes_shared")), (0, 0), "{dry}");
    assert_eq!(free_bytes(&fsys.mnt), free0, "a dry run changes nothing");
    let real = blocks_json(&run(&[]));
    let free1 = free_bytes(&fsys.mnt);
    check_copy_figures(kind, &dry, &real, free1.saturating_sub(free0));
    assert_eq!(num(&real, "dup_blocks"), dup_4k, "{real}");
    assert_eq!(num(&real, "bytes_submitted"), num(&dry, "bytes_submitted"), "the dry run's estimate:\n{dry}\n{real}");
    assert_eq!(num(&real, "bytes_submitted"), dup_4k * PAGE as u64, "{real}");
    assert_eq!(num(&real, "bytes_deduplicated"), dup_4k * PAGE as u64, "{real}");
    assert_eq!(num(&real, "bytes_refused"), 0, "{real}");
    // One range per run: the calls are far fewer than the blocks.
    assert_eq!(num(&real, "ioctl_calls"), num(&real, "runs"), "{real}");
    assert!(num(&real, "runs") * 8 < dup_4k, "{real}");
    let freed = free1.saturating_sub(free0);
    for p in walk(&root) {
        assert_eq!(kept(&p), before[&p], "{} changed", p.display());
    }
    let again = blocks_json(&run(&[]));
    assert_eq!((num(&again, "ioctl_calls"), num(&again, "ranges")), (0, 0), "a rerun makes no call: {again}");
    assert_eq!((num(&again, "copy_ioctl_calls"), num(&again, "bytes_written")), (0, 0), "nor copies: {again}");
    assert_eq!(num(&again, "bytes_shared"), dup_4k * PAGE as u64, "{again}");
    Some((freed, dup_4k * PAGE as u64, dup_128k * BLOCK_128K as u64))
}

/// The remainder copy's figures: on btrfs some extents' rests were copied, every byte
/// written was moved onto the copies, the dry run said so beforehand, and what it said
/// btrfs would give back is what `statfs` shows (within 1 MiB: metadata); on XFS none.
fn check_copy_figures(kind: &str, dry: &str, real: &str, freed: u64) {
    let keys = ["extents_copied", "bytes_written", "copy_ranges", "copy_bytes_submitted", "bytes_freeable"];
    for k in keys {
        assert_eq!(num(real, k), num(dry, k), "{k}: the dry run's estimate:\n{dry}\n{real}");
    }
    let written = num(real, "bytes_written");
    if kind != "btrfs" {
        assert_eq!((num(real, "extents_copied"), written, num(real, "copy_ioctl_calls")), (0, 0, 0), "{real}");
        return;
    }
    assert!(num(real, "extents_copied") > 0 && written > 0, "{real}");
    assert_eq!(num(real, "copy_bytes_deduplicated"), written, "{real}");
    assert_eq!(num(real, "copy_bytes_refused"), 0, "{real}");
    assert_eq!(num(real, "copy_ioctl_calls"), num(real, "copy_ranges"), "{real}");
    let freeable = num(real, "bytes_freeable");
    assert!(freeable.abs_diff(freed) < 1 << 20, "said {freeable}, freed {freed}: {real}");
    assert!(written <= freeable, "wrote {written} to free {freeable}: {real}");
}

/// Where `p`'s bytes are on disk, as `xfs_io` prints its map ("0: [0..7]: 192..199", in
/// sectors), adjacent pieces merged: FIEMAP splits an extent where part of it became
/// shared, which moves nothing.
fn disk_map(p: &Path) -> Vec<(u64, u64, u64)> {
    run_ok(Command::new("sync").arg("-f").arg(p));
    let out = text(&Command::new("xfs_io").args(["-r", "-c", "fiemap"]).arg(p).output().unwrap().stdout);
    let mut map: Vec<(u64, u64, u64)> = Vec::new();
    for line in out.lines().skip(1) {
        let nums: Vec<u64> = line.split(|c: char| !c.is_ascii_digit()).filter_map(|w| w.parse().ok()).collect();
        let [_, start, end, disk, _] = nums[..] else { panic!("{out}") };
        match map.last_mut() {
            Some(last) if last.1 + 1 == start && last.2 + (last.1 - last.0) + 1 == disk => last.1 = end,
            _ => map.push((start, end, disk)),
        }
    }
    map
}

#[test]
fn dedupe_blocks_immutable_serves_and_changed_is_skipped() {
    let test = "dedupe_blocks_immutable_serves_and_changed_is_skipped";
    if !have_or_skip("chattr", test) || !have_or_skip("strace", test) || !have_or_skip("xfs_io", test) {
        return;
    }
    let Some(fsys) = xfs_or_skip(test) else { return };
    let root = fsys.mnt.join("r");
    let mut rng = Rng(0x1330);
    let base = rng.bytes(MIB);
    let mut other = base.clone();
    other[..PAGE].copy_from_slice(&rng.bytes(PAGE));
    let mut third = base.clone();
    third[PAGE..2 * PAGE].copy_from_slice(&rng.bytes(PAGE));
    let (pinned, plain, written) = (root.join("c-pinned"), root.join("b-plain"), root.join("a-written"));
    write(&pinned, &base);
    write(&plain, &other);
    write(&written, &third);
    run_ok(Command::new("chattr").arg("+i").arg(&pinned));
    let map = disk_map(&pinned);
    // The immutable file sorts last and still serves. Held before its first call (the
    // free space measured with syncfs, a-written open and checked already), the run finds
    // a-written changed right before the call: 4 KiB of new bytes in the middle of a range
    // it would share.
    let log = fsys.mnt.join("strace.log");
    let new_bytes = rng.bytes(PAGE);
    let at = 64 * PAGE;
    let args = ["dedupe", "--json", "-q", "--blocks"].map(std::ffi::OsStr::new);
    let mut args = args.to_vec();
    args.push(root.as_os_str());
    let (out, _) = run_held(&args, "ioctl", "syncfs", &log, || {
        use std::os::unix::fs::FileExt;
        let f = fs::OpenOptions::new().write(true).open(&written).unwrap();
        f.write_all_at(&new_bytes, at as u64).unwrap();
    });
    run_ok(Command::new("chattr").arg("-i").arg(&pinned));
    let js = text(&out.stdout);
    let b = blocks_json(&out);
    assert_eq!(disk_map(&pinned), map, "the immutable file's extents stay: {js}");
    assert_eq!(fs::read(&pinned).unwrap(), base);
    assert_eq!(fs::read(&plain).unwrap(), other);
    let mut want = third.clone();
    want[at..at + PAGE].copy_from_slice(&new_bytes);
    assert_eq!(fs::read(&written).unwrap(), want, "every byte written during the run is kept");
    // b-plain shares all but its first page with the immutable file; a-written is left.
    assert_eq!(num(&b, "bytes_deduplicated"), (MIB - PAGE) as u64, "{js}");
    assert_eq!(num(&js, "skipped_changed"), 1, "{js}");
}

/// Files written while the run is held before its first call, one appended to and one
/// through a shared memory mapping (python3's `mmap`): both are found changed and left
/// alone, and keep every byte written.
#[test]
fn dedupe_blocks_appended_and_mapped_files_keep_their_bytes() {
    let test = "dedupe_blocks_appended_and_mapped_files_keep_their_bytes";
    if !have_or_skip("strace", test) || !have_or_skip("python3", test) {
        return;
    }
    let Some(fsys) = xfs_or_skip(test) else { return };
    let root = fsys.mnt.join("w");
    let mut rng = Rng(0xa99e);
    let base = rng.bytes(MIB);
    let (appended, mapped) = (root.join("b-appended"), root.join("c-mapped"));
    write(&root.join("a-base"), &base);
    write(&appended, &base);
    write(&mapped, &base);
    let (tail, page) = (rng.bytes(10_000), rng.bytes(PAGE));
    let at = 5 * PAGE;
    let log = fsys.mnt.join("strace.log");
    let args = ["dedupe", "--json", "-q", "--blocks"].map(std::ffi::OsStr::new);
    let mut args = args.to_vec();
    args.push(root.as_os_str());
    let page_file = fsys.mnt.join("page");
    fs::write(&page_file, &page).unwrap();
    let (out, _) = run_held(&args, "ioctl", "syncfs", &log, || {
        use std::io::Write;
        fs::OpenOptions::new().append(true).open(&appended).unwrap().write_all(&tail).unwrap();
        let script = "import mmap, sys\nf = open(sys.argv[1], 'r+b')\nm = mmap.mmap(f.fileno(), 0)\n\
                      m[int(sys.argv[2]):int(sys.argv[2]) + 4096] = open(sys.argv[3], 'rb').read()\nm.flush()\n";
        run_ok(Command::new("python3").args(["-c", script]).arg(&mapped).arg(at.to_string()).arg(&page_file));
    });
    let js = text(&out.stdout);
    let b = blocks_json(&out);
    assert_eq!(fs::read(&appended).unwrap(), [&base[..], &tail].concat(), "the appended bytes are kept");
    let mut want = base.clone();
    want[at..at + PAGE].copy_from_slice(&page);
    assert_eq!(fs::read(&mapped).unwrap(), want, "the bytes written through the mapping are kept");
    assert_eq!(fs::read(root.join("a-base")).unwrap(), base);
    assert_eq!((num(&js, "skipped_changed"), num(&b, "bytes_deduplicated")), (2, 0), "{js}");
}

/// Bytes that `read`-family calls returned in an `strace -f` log, but those of the hash
/// file `hashes` (its descriptor shown by `-y`).
fn bytes_read_but(log: &str, hashes: &Path) -> u64 {
    let h = format!("<{}>", hashes.display());
    let reads = log.lines().filter(|l| l.contains("read") && !l.contains(&h));
    reads.filter_map(|l| l.rsplit("= ").next()?.trim().parse::<u64>().ok()).sum()
}

#[test]
fn dedupe_blocks_rerun_with_hash_file_reads_and_calls_nothing() {
    let test = "dedupe_blocks_rerun_with_hash_file_reads_and_calls_nothing";
    if !have_or_skip("strace", test) {
        return;
    }
    let Some(fsys) = xfs_or_skip(test) else { return };
    let root = fsys.mnt.join("v");
    let files = shape_v(&root, 0x4a5e);
    for (p, data) in &files {
        write(p, data);
    }
    let dup_4k = dup_blocks(&files, PAGE);
    let hashes = fsys.mnt.join("hashes");
    let args: Vec<&std::ffi::OsStr> = ["dedupe", "--json", "-q", "--blocks", "--hashfile"]
        .map(std::ffi::OsStr::new)
        .into_iter()
        .chain([hashes.as_os_str(), root.as_os_str()])
        .collect();
    let first = blocks_json(&dfdu(&args));
    assert_eq!(num(&first, "bytes_deduplicated"), dup_4k * PAGE as u64, "{first}");
    assert_eq!((num(&first, "files_read"), num(&first, "files_cached")), (6, 0), "{first}");
    // The whole-file part's 64-byte entries, and 48 bytes plus 8 per block of each file.
    let blocks: u64 = files.iter().map(|(_, d)| d.len() as u64 / PAGE as u64).sum();
    let size = fs::metadata(&hashes).unwrap().len();
    assert!(size >= 6 * 48 + 8 * blocks && size < 6 * (64 + 48) + 8 * blocks + 200, "hash file of {size} bytes");
    let log = fsys.mnt.join("strace.log");
    let traced = |what: &str| {
        let out = Command::new("strace")
            .args(["-f", "-y", "-e", "trace=read,pread64,preadv,preadv2,ioctl", "-o"])
            .arg(&log)
            .arg(common::dfdu_path())
            .args(&args)
            .output()
            .unwrap();
        let b = blocks_json(&out);
        let t = fs::read_to_string(&log).unwrap();
        assert!(!t.contains("FIDEDUPERANGE") && !t.contains("0xc0189436"), "{what}: no dedupe call:\n{t}");
        (b, bytes_read_but(&t, &hashes))
    };
    let (again, read) = traced("a rerun");
    assert_eq!((num(&again, "files_read"), num(&again, "files_cached")), (0, 6), "{again}");
    assert_eq!((num(&again, "ioctl_calls"), num(&again, "bytes_shared")), (0, dup_4k * PAGE as u64), "{again}");
    assert!(read < 64 << 10, "a rerun read {read} bytes of files");
    // A file written since: it alone is read again (and its new page shared with nothing).
    use std::os::unix::fs::FileExt;
    let f = fs::OpenOptions::new().write(true).open(&files[3].0).unwrap();
    f.write_all_at(&Rng(9).bytes(PAGE), 0).unwrap();
    drop(f);
    let third = blocks_json(&dfdu(&args));
    assert_eq!((num(&third, "files_read"), num(&third, "files_cached")), (1, 5), "{third}");
    assert_eq!(num(&third, "ioctl_calls"), 0, "{third}");
    // The entries of the other five, which that run did not read, were kept.
    let fourth = blocks_json(&dfdu(&args));
    assert_eq!((num(&fourth, "files_read"), num(&fourth, "files_cached")), (0, 6), "{fourth}");
}

/// Two btrfs subvolumes are two devices of one file system: block mode shares across
/// them (here two pairs of whole copies, which whole-file dedupe leaves alone on their
/// devices; the immutable one of the second pair serves, so each subvolume holds a
/// destination), btrfs frees each copy's extent, and the free space of the one file
/// system is counted once (the report's change is the change `statfs` shows, not twice
/// it).
#[test]
fn dedupe_blocks_across_btrfs_subvolumes() {
    let test = "dedupe_blocks_across_btrfs_subvolumes";
    if !have_or_skip("btrfs", test) || !have_or_skip("chattr", test) {
        return;
    }
    let Some(fsys) = loop_or_skip("btrfs", test) else { return };
    let mut rng = Rng(0x5b5b);
    let (data, other) = (rng.bytes(4 * MIB), rng.bytes(2 * MIB));
    for sub in ["a", "b"] {
        run_ok(Command::new("btrfs").args(["-q", "subvolume", "create"]).arg(fsys.mnt.join(sub)));
        write(&fsys.mnt.join(sub).join("image"), &data);
        write(&fsys.mnt.join(sub).join("other"), &other);
    }
    run_ok(Command::new("chattr").arg("+i").arg(fsys.mnt.join("b/other")));
    let free0 = free_bytes(&fsys.mnt);
    let out = dfdu(
        &["dedupe", "--json", "-q", "--blocks"]
            .map(std::ffi::OsStr::new)
            .into_iter()
            .chain([fsys.mnt.as_os_str()])
            .collect::<Vec<_>>(),
    );
    let js = text(&out.stdout);
    let b = blocks_json(&out);
    let measured = free_bytes(&fsys.mnt) as i64 - free0 as i64;
    run_ok(Command::new("chattr").arg("-i").arg(fsys.mnt.join("b/other")));
    assert_eq!(num(&b, "bytes_deduplicated"), (6 * MIB) as u64, "{js}");
    assert_eq!(num(&js, "skipped_other_fs"), 4, "whole-file dedupe left the pairs: {js}");
    let reported = num(&js, "free_after") as i64 - num(&js, "free_before") as i64;
    assert!(measured >= 5 << 20, "freed {measured}: {js}");
    assert!((reported - measured).abs() < 1 << 20, "reported {reported}, measured {measured}: {js}");
    for sub in ["a", "b"] {
        assert_eq!(fs::read(fsys.mnt.join(sub).join("image")).unwrap(), data);
        assert_eq!(fs::read(fsys.mnt.join(sub).join("other")).unwrap(), other);
    }
}

/// On ext4 (no shared extents) block mode reads nothing and says so once, as whole-file
/// dedupe does: exit status 1, every file as it was.
#[test]
fn dedupe_blocks_on_ext4_says_it_cannot_share() {
    let test = "dedupe_blocks_on_ext4_says_it_cannot_share";
    if !have_or_skip("strace", test) {
        return;
    }
    let Some(fsys) = loop_or_skip("ext4", test) else { return };
    let root = fsys.mnt.join("e");
    let files = shape_v(&root, 0xe474);
    for (p, data) in &files[..3] {
        write(p, data);
    }
    let log = fsys.mnt.join("strace.log");
    let out = Command::new("strace")
        .args(["-f", "-y", "-e", "trace=read,pread64,ioctl", "-o"])
        .arg(&log)
        .arg(common::dfdu_path())
        .args(["dedupe", "-q", "--blocks"])
        .arg(&root)
        .output()
        .unwrap();
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert_eq!(err.matches("cannot share extents").count(), 1, "{err}");
    assert!(err.contains("nothing was changed"), "{err}");
    let t = fs::read_to_string(&log).unwrap();
    // The whole-file stage reads its 4 KiB samples of the three files of one size; block
    // mode reads none of their 12 MiB.
    assert!(bytes_read_but(&t, &log) < 1 << 20, "read {} bytes", bytes_read_but(&t, &log));
    for (p, data) in &files[..3] {
        assert_eq!(&fs::read(p).unwrap(), data);
    }
}

/// Everything under `dir` by name (the strace log left out): what a run may not add to.
fn names_under(dir: &Path, log: &Path) -> Vec<PathBuf> {
    walk(dir).into_iter().filter(|p| p != log).collect()
}

/// A btrfs with a base of 8 MiB and two copies whose single extents are partly matched
/// (the first 3 MiB of `b-copy` and the last MiB of `c-copy` are other bytes), so that
/// block mode copies the rest of each; returns the mount and the three files' bytes.
fn btrfs_with_rests(test: &str) -> Option<(LoopFs, PathBuf, [Vec<u8>; 3])> {
    if !have_or_skip("strace", test) {
        return None;
    }
    let fsys = loop_or_skip("btrfs", test)?;
    let root = fsys.mnt.join("r");
    let mut rng = Rng(0xc0b1);
    let base = rng.bytes(8 * MIB);
    let mut b = base.clone();
    b[..3 * MIB].copy_from_slice(&rng.bytes(3 * MIB));
    let mut c = base.clone();
    c[7 * MIB..].copy_from_slice(&rng.bytes(MIB));
    for (name, data) in [("a-base", &base), ("b-copy", &b), ("c-copy", &c)] {
        write(&root.join(name), data);
    }
    Some((fsys, root, [base, b, c]))
}

/// On btrfs, bytes written into a destination while the run is held between copying the
/// rest of its extent and moving its references onto the copy (in the copy's `fsync`)
/// are kept: the file is found changed and left alone, the next one is still done, and
/// the copy, which never had a name, leaves nothing behind.
#[test]
fn dedupe_blocks_btrfs_copy_keeps_bytes_written_meanwhile() {
    let test = "dedupe_blocks_btrfs_copy_keeps_bytes_written_meanwhile";
    let Some((fsys, root, [base, b, c])) = btrfs_with_rests(test) else { return };
    let log = fsys.mnt.join("strace.log");
    let names = names_under(&fsys.mnt, &log);
    let new_bytes = Rng(0x11).bytes(PAGE);
    let args = ["dedupe", "--json", "-q", "--blocks"].map(std::ffi::OsStr::new);
    let mut args = args.to_vec();
    args.push(root.as_os_str());
    let (out, _) = run_held(&args, "ioctl", "fsync", &log, || {
        use std::os::unix::fs::FileExt;
        // b-copy's rest (its first 3 MiB) was copied already: a page of it is rewritten.
        let f = fs::OpenOptions::new().write(true).open(root.join("b-copy")).unwrap();
        f.write_all_at(&new_bytes, MIB as u64).unwrap();
    });
    let js = text(&out.stdout);
    let blocks = blocks_json(&out);
    let mut want = b.clone();
    want[MIB..MIB + PAGE].copy_from_slice(&new_bytes);
    assert_eq!(fs::read(root.join("b-copy")).unwrap(), want, "every byte written during the run is kept");
    assert_eq!(fs::read(root.join("a-base")).unwrap(), base);
    assert_eq!(fs::read(root.join("c-copy")).unwrap(), c);
    assert_eq!(num(&js, "skipped_changed"), 1, "{js}");
    // c-copy: its 7 MiB shared, its last MiB moved onto a copy of its own.
    assert_eq!(num(&blocks, "bytes_deduplicated"), (7 * MIB) as u64, "{js}");
    assert_eq!(num(&blocks, "copy_bytes_deduplicated"), MIB as u64, "{js}");
    assert_eq!(names_under(&fsys.mnt, &log), names, "the copies left nothing: {js}");
}

/// A run killed while it holds a copy (in its `fsync`, the rest of `b-copy` written to
/// it): no name is left anywhere, every file is as it was, and the copy's 3 MiB are free
/// again once the file system has synced (the kernel dropped the unnamed file).
#[test]
fn dedupe_blocks_btrfs_copy_killed_leaves_nothing() {
    let test = "dedupe_blocks_btrfs_copy_killed_leaves_nothing";
    let Some((fsys, root, files)) = btrfs_with_rests(test) else { return };
    let log = fsys.mnt.join("strace.log");
    let names = names_under(&fsys.mnt, &log);
    let free0 = free_bytes(&fsys.mnt);
    let mut child = Command::new("strace")
        .args(["-f", "-o"])
        .arg(&log)
        .args(["-e", "trace=fsync", "-e", "inject=fsync:delay_enter=20000000:when=1", "--"])
        .arg(common::dfdu_path())
        .args(["dedupe", "-q", "--blocks"])
        .arg(&root)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("run strace");
    let start = std::time::Instant::now();
    let pid = loop {
        let t = fs::read_to_string(&log).unwrap_or_default();
        if let Some(line) = t.lines().find(|l| l.contains("fsync(")) {
            break line.split_whitespace().next().unwrap().to_string();
        }
        assert!(start.elapsed().as_secs() < 60, "dfdu never reached fsync:\n{t}");
        std::thread::sleep(std::time::Duration::from_millis(5));
    };
    // The copy is written: the free space shows it (not synced yet, so only after sync).
    run_ok(Command::new("kill").args(["-KILL", &pid]));
    let _ = child.wait();
    assert_eq!(names_under(&fsys.mnt, &log), names, "a killed run left a name");
    for (name, data) in ["a-base", "b-copy", "c-copy"].iter().zip(&files) {
        assert_eq!(&fs::read(root.join(name)).unwrap(), data, "{name}");
    }
    let free1 = free_bytes(&fsys.mnt);
    assert!(free1 + (MIB as u64) >= free0, "free before {free0}, after the kill {free1}: the copy stayed");
}

/// The runs the test's own plan says `dupes --blocks` must list for `files`: every aligned
/// page (not all zeros) whose content an earlier page in path order has, linked to the
/// first one, consecutive pages of one pair grown into one run, as (path, offset, length,
/// source, source offset). Written from the content alone, not from dfdu's code.
fn expected_runs(files: &[(PathBuf, Vec<u8>)]) -> Vec<(PathBuf, u64, u64, PathBuf, u64)> {
    let mut first: std::collections::HashMap<&[u8], (usize, usize)> = std::collections::HashMap::new();
    let mut out: Vec<(PathBuf, u64, u64, PathBuf, u64)> = Vec::new();
    for (f, (path, data)) in files.iter().enumerate() {
        for (b, page) in data.chunks_exact(PAGE).enumerate().filter(|(_, p)| p.iter().any(|&x| x != 0)) {
            let &mut (sf, sb) = first.entry(page).or_insert((f, b));
            if (sf, sb) == (f, b) {
                continue;
            }
            let (off, soff) = ((b * PAGE) as u64, (sb * PAGE) as u64);
            match out.last_mut() {
                Some(r) if r.0 == *path && r.1 + r.2 == off && r.3 == files[sf].0 && r.4 + r.2 == soff => {
                    r.2 += PAGE as u64
                }
                _ => out.push((path.clone(), off, PAGE as u64, files[sf].0.clone(), soff)),
            }
        }
    }
    out
}

/// `dfdu dupes --blocks` on ext4 (the scratch directory's file system here, which cannot
/// share extents) and, as root, on tmpfs: shape V plus a copy shifted by 100 bytes. The
/// ranges listed are exactly those the content has (the test's own count above), each
/// one's bytes are equal on both sides, a repeat inside one file and a copy shifted by one
/// page are found, the copy shifted by less than a block is not; text and JSON agree,
/// and nothing is changed.
#[test]
fn dupes_blocks_lists_the_duplicate_ranges_on_any_file_system() {
    let mut scratch = common::Scratch::new("dupes-blocks");
    let mut roots = vec![scratch.subdir("ext")];
    if common::is_root() {
        let t = scratch.subdir("tmpfs");
        match scratch.mount_tmpfs(&t) {
            Ok(()) => roots.push(t),
            Err(e) => skip(&format!("dupes_blocks_lists_the_duplicate_ranges_on_any_file_system: no tmpfs: {e}")),
        }
    } else {
        skip("dupes_blocks_lists_the_duplicate_ranges_on_any_file_system: tmpfs needs root");
    }
    for root in roots {
        let mut files = shape_v(&root.join("v"), 0xd0b5);
        let shifted = [&Rng(7).bytes(100)[..], &files[0].1[..MIB]].concat();
        files.push((root.join("v/g-shifted"), shifted));
        for (p, data) in &files {
            write(p, data);
        }
        let before: BTreeMap<PathBuf, Kept> = walk(&root).into_iter().map(|p| (p.clone(), kept(&p))).collect();
        let want = expected_runs(&files);
        let out = dfdu(&["dupes".as_ref(), "--blocks".as_ref(), root.as_os_str()]);
        let (txt, err) = (text(&out.stdout), text(&out.stderr));
        assert!(out.status.success(), "{txt}\n{err}");
        let lines: Vec<String> = want
            .iter()
            .map(|(p, off, len, s, soff)| format!("{len} bytes: {} at {off} = {} at {soff}", p.display(), s.display()))
            .collect();
        assert_eq!(txt.lines().collect::<Vec<_>>(), lines, "{}", root.display());
        let total: u64 = want.iter().map(|r| r.2).sum();
        assert_eq!(total, dup_blocks(&files, PAGE) * PAGE as u64);
        for (p, off, len, s, soff) in &want {
            let (a, b) = (fs::read(p).unwrap(), fs::read(s).unwrap());
            assert_eq!(a[*off as usize..(off + len) as usize], b[*soff as usize..(soff + len) as usize]);
        }
        // The claims: a repeat inside e-repeats, the copy of the base shifted by a page in
        // it (at 2 MiB + 4 KiB), nothing of g-shifted (shifted by 100 bytes).
        let e = root.join("v/e-repeats");
        assert!(want.iter().any(|r| r.0 == e && r.3 == e), "a repeat inside one file");
        let one_page = want.iter().find(|r| r.0 == e && r.3 == files[0].0).expect("the shifted copy");
        assert_eq!((one_page.1, one_page.2, one_page.4), ((2 * MIB + PAGE) as u64, MIB as u64, 0));
        assert!(!want.iter().any(|r| r.0.ends_with("g-shifted")), "nothing shifted by 100 bytes");
        let inside: u64 = want.iter().filter(|r| r.0 == r.3).map(|r| r.2).sum();
        assert!(err.contains(&format!("{total} bytes in {} runs are copies", want.len())), "{err}");
        assert!(err.contains(&format!("({inside} bytes of them inside one file); nothing was changed")), "{err}");
        let js = text(&dfdu(&["dupes".as_ref(), "--json".as_ref(), "--blocks".as_ref(), root.as_os_str()]).stdout);
        let b = js.split("\"blocks\":").nth(1).unwrap_or_else(|| panic!("no blocks in {js}"));
        assert_eq!((num(b, "bytes_duplicate"), num(b, "bytes_inside")), (total, inside), "{b}");
        assert_eq!(b.matches("\"source_offset\":").count(), want.len(), "{b}");
        for p in walk(&root) {
            assert_eq!(kept(&p), before[&p], "{} changed", p.display());
        }
    }
}
