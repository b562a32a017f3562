//! `dfdu scan` against real references: its totals against the system `du` on the same
//! generated tree, its export loaded and re-exported by Debian's ncdu, ncdu's own export
//! imported by dfdu, and export → import → export giving the same bytes.

mod common;

use common::{dfdu_path, du_bytes, json_field, run_ok, Scratch};
use std::path::{Path, PathBuf};
use std::process::Command;

/// A generated tree (the benchmark generator, small): hard links across directories,
/// symlinks of every kind, sparse files, odd names.
fn tree(dir: &Path) -> PathBuf {
    let t = dir.join("tree");
    let args = ["--entries", "20000", "--seed", "7"].map(std::ffi::OsString::from);
    xtask::gen::main([&args[..], &[t.clone().into()]].concat()).unwrap_or_else(|e| panic!("gen: {e}"));
    t
}

fn report(args: &[&str]) -> String {
    String::from_utf8(run_ok(Command::new(dfdu_path()).arg("scan").arg("--json").args(args)).stdout).unwrap()
}

/// Everything after the header line (the header carries program and timestamp), with
/// the final newline ncdu leaves out.
fn body(path: &Path) -> Vec<u8> {
    let data = std::fs::read(path).unwrap();
    let start = data.iter().position(|&b| b == b'\n').unwrap() + 1;
    let mut b = data[start..].to_vec();
    while b.last() == Some(&b'\n') {
        b.pop();
    }
    b
}

fn have_ncdu() -> bool {
    let ok = Command::new("ncdu").arg("--version").output().is_ok_and(|o| o.status.success());
    if !ok {
        eprintln!("SKIP: ncdu is not installed (apt-get install ncdu)");
    }
    ok
}

#[test]
fn totals_and_counts_match_du_and_find() {
    let scratch = Scratch::new("totals");
    let dir = scratch.dir.clone();
    let t = tree(&dir);
    let json = report(&["-q", &t.to_string_lossy()]);
    assert_eq!(json_field(&json, "disk_bytes"), du_bytes(&["-sB1"], &t), "disk usage vs du -sB1");
    assert_eq!(json_field(&json, "apparent_bytes"), du_bytes(&["-sb"], &t), "apparent size vs du -sb");
    let find = run_ok(Command::new("find").arg(&t).args(["-printf", "%y\\n"]));
    let kinds = String::from_utf8(find.stdout).unwrap();
    let count = |k: &str| kinds.lines().filter(|l| *l == k).count() as u64;
    assert_eq!(json_field(&json, "entries"), kinds.lines().count() as u64);
    assert_eq!(json_field(&json, "dirs"), count("d"));
    assert_eq!(json_field(&json, "files"), count("f"));
    assert_eq!(json_field(&json, "symlinks"), count("l"));
    assert!(json_field(&json, "hardlinked_files") > 0 && json_field(&json, "duplicate_link_names") > 0);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn ncdu_reads_our_export_and_writes_it_back_the_same() {
    if !have_ncdu() {
        return;
    }
    let scratch = Scratch::new("ncdu-reads");
    let dir = scratch.dir.clone();
    let t = tree(&dir);
    let ours = dir.join("ours.json");
    let theirs = dir.join("theirs.json");
    run_ok(Command::new(dfdu_path()).args(["scan", "-q", "--exclude", "*.log", "-o"]).arg(&ours).arg(&t));
    run_ok(Command::new("ncdu").arg("-f").arg(&ours).arg("-o").arg(&theirs).env("TERM", "dumb"));
    let (a, b) = (body(&ours), body(&theirs));
    assert!(a.len() > 100_000, "the export is too small to mean anything");
    let has = |needle: &[u8]| a.windows(needle.len()).any(|w| w == needle);
    assert!(has(b"\"excluded\":\"pattern\""), "the exclusion is in the export");
    assert!(has(b"\"hlnkc\":true"), "hard links are in the export");
    assert!(has(b"\"notreg\":true"), "symlinks are in the export");
    assert!(a == b, "ncdu's re-export differs from ours");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn we_read_ncdus_export_with_the_same_totals_as_our_scan() {
    if !have_ncdu() {
        return;
    }
    let scratch = Scratch::new("we-read");
    let dir = scratch.dir.clone();
    let t = tree(&dir);
    let theirs = dir.join("ncdu.json");
    run_ok(Command::new("ncdu").args(["-0", "-o"]).arg(&theirs).arg(&t));
    let imported = report(&["-f", &theirs.to_string_lossy()]);
    let scanned = report(&["-q", &t.to_string_lossy()]);
    for key in ["disk_bytes", "apparent_bytes", "entries", "dirs", "files", "nonregular", "hardlinked_files", "errors"]
    {
        assert_eq!(json_field(&imported, key), json_field(&scanned, key), "{key}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn export_import_export_gives_the_same_bytes() {
    let scratch = Scratch::new("roundtrip");
    let dir = scratch.dir.clone();
    let t = tree(&dir);
    let (one, two) = (dir.join("one.json"), dir.join("two.json"));
    run_ok(Command::new(dfdu_path()).args(["scan", "-q", "-o"]).arg(&one).arg(&t));
    run_ok(Command::new(dfdu_path()).args(["scan", "-q", "-f"]).arg(&one).arg("-o").arg(&two));
    assert!(body(&one) == body(&two), "round trip changed the export");
    // And through standard input and output.
    let piped = Command::new("sh")
        .arg("-c")
        .arg(format!("'{}' scan -o - -f - < '{}'", dfdu_path().display(), one.display()))
        .output()
        .unwrap();
    assert!(piped.status.success());
    let start = piped.stdout.iter().position(|&b| b == b'\n').unwrap() + 1;
    assert!(piped.stdout[start..].trim_ascii_end() == body(&one).as_slice());
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn bad_exports_are_refused_with_an_offset_and_status_1() {
    let scratch = Scratch::new("bad");
    let dir = scratch.dir.clone();
    let f = dir.join("bad.json");
    std::fs::write(&f, b"[1,2,{},[{\"name\":\"/x\",\"asize\":-5}]]").unwrap();
    let out = Command::new(dfdu_path()).args(["scan", "-f"]).arg(&f).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("byte 30:") && err.contains("unsigned"), "{err}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn unreadable_entries_are_reported_and_exit_1() {
    let scratch = Scratch::new("unreadable");
    let dir = scratch.dir.clone();
    std::fs::create_dir_all(dir.join("t/locked/inner")).unwrap();
    std::fs::write(dir.join("t/file"), b"x").unwrap();
    let uid = run_ok(Command::new("id").arg("-u")).stdout;
    if uid.trim_ascii() == b"0" {
        // Root reads everything: run as nobody, on a tree nobody may traverse. The way to
        // the scratch directory is left as it is (this test once made /tmp 0755, no longer
        // sticky): when nobody cannot get there, the test says so and does not run.
        if !common::reachable_by_others(&dir) {
            return common::dupes::skip(&format!(
                "unreadable_entries_are_reported_and_exit_1: {} is not reachable by nobody",
                dir.display()
            ));
        }
        let st = Command::new("chmod").args(["-R", "a+rX"]).arg(&dir).status().unwrap();
        assert!(st.success());
    }
    std::fs::set_permissions(dir.join("t/locked"), std::os::unix::fs::PermissionsExt::from_mode(0o000)).unwrap();
    let mut cmd = if uid.trim_ascii() == b"0" {
        let copy = dir.join("dfdu");
        std::fs::copy(dfdu_path(), &copy).unwrap();
        let mut c = Command::new("setpriv");
        c.args(["--reuid=65534", "--regid=65534", "--clear-groups"]).arg(copy);
        c
    } else {
        Command::new(dfdu_path())
    };
    let out = cmd.args(["scan", "--json", "-q"]).arg(dir.join("t")).output().unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stderr).contains("could not be read"));
    assert_eq!(json_field(&String::from_utf8_lossy(&out.stdout), "errors"), 1);
    std::fs::set_permissions(dir.join("t/locked"), std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let _ = std::fs::remove_dir_all(&dir);
}

/// A bind mount of an ancestor (`bl/sub` is `bl` again): `dfdu scan` marks it a loop and
/// neither enters nor counts it, so its totals are GNU du's; the export lists it as not
/// entered, and ncdu reads that export back.
#[test]
fn bind_mount_loop_is_marked_and_not_entered() {
    let uid = run_ok(Command::new("id").arg("-u")).stdout;
    if uid.trim_ascii() != b"0" {
        eprintln!("SKIP: bind_mount_loop_is_marked_and_not_entered needs root to bind-mount");
        return;
    }
    let mut scratch = Scratch::new("bind-loop");
    let dir = scratch.dir.clone();
    let bl = dir.join("bl");
    std::fs::create_dir_all(bl.join("sub")).unwrap();
    std::fs::create_dir_all(bl.join("deeper")).unwrap();
    std::fs::write(bl.join("file"), b"hi\n").unwrap();
    std::fs::write(bl.join("deeper/x"), vec![b'x'; 5000]).unwrap();
    // Unmounted when `scratch` is dropped, also when an assertion fails.
    if let Err(why) = scratch.mount_bind(&bl, &bl.join("sub")) {
        eprintln!("SKIP: bind_mount_loop_is_marked_and_not_entered: mount --bind failed: {why}");
        return;
    }
    let export = dir.join("export.json");
    let scanned =
        Command::new(dfdu_path()).args(["scan", "--json", "-q", "-o"]).arg(&export).arg(&bl).output().unwrap();
    let reexport = have_ncdu().then(|| {
        let theirs = dir.join("theirs.json");
        let st = Command::new("ncdu").arg("-f").arg(&export).arg("-o").arg(&theirs).env("TERM", "dumb").status();
        (st.map(|s| s.success()).unwrap_or(false), theirs)
    });
    let du = du_bytes(&["-sB1"], &bl);
    assert!(scanned.status.success(), "{}", String::from_utf8_lossy(&scanned.stderr));
    let json = String::from_utf8_lossy(&scanned.stdout);
    assert_eq!(json_field(&json, "disk_bytes"), du, "disk usage vs du -sB1 (which leaves the loop out)");
    assert_eq!(json_field(&json, "loops"), 1, "{json}");
    assert_eq!(json_field(&json, "entries"), 5, "bl, file, sub, deeper, deeper/x: {json}");
    let data = std::fs::read(&export).unwrap();
    let has = |needle: &[u8]| data.windows(needle.len()).any(|w| w == needle);
    assert!(has(b"{\"name\":\"sub\",\"excluded\":\"otherfs\"}"), "{}", String::from_utf8_lossy(&data));
    if let Some((ok, theirs)) = reexport {
        assert!(ok, "ncdu could not read the export");
        // ncdu 1.x writes the other-file-system exclusion as "othfs" (and reads both).
        let theirs = String::from_utf8(body(&theirs)).unwrap().replace("\"othfs\"", "\"otherfs\"");
        assert_eq!(String::from_utf8(body(&export)).unwrap(), theirs, "ncdu's re-export differs from ours");
    }
}

/// gdu writes every name of a hard-linked file but the first it met with `ino` and
/// `hlnkc`, the first as a plain file, and leaves directories' own blocks out (its older
/// exports give directories no sizes). Its export of a tree with hard links across
/// directories must read as `du -sB1` less those directory blocks: before, the first
/// marked name was counted again on top of the plain one.
#[test]
fn gdu_export_with_hard_links_equals_du_less_directory_blocks() {
    if !common::dupes::have_or_skip("gdu", "gdu_export_with_hard_links_equals_du_less_directory_blocks") {
        return;
    }
    let scratch = Scratch::new("gdu-links");
    let dir = scratch.dir.clone();
    let t = tree(&dir);
    let export = dir.join("gdu.json");
    run_ok(Command::new("gdu").args(["-n", "-o"]).arg(&export).arg(&t));
    let data = std::fs::read(&export).unwrap();
    let needle = b"\"hlnkc\":true";
    assert!(data.windows(needle.len()).any(|w| w == needle), "the tree has hard links gdu marks");
    let find = run_ok(Command::new("find").arg(&t).args(["-type", "d", "-printf", "%b\\n"]));
    let dir_blocks: u64 = String::from_utf8(find.stdout).unwrap().lines().map(|l| l.parse::<u64>().unwrap()).sum();
    let imported = report(&["-f", &export.to_string_lossy()]);
    assert_eq!(
        json_field(&imported, "disk_bytes"),
        du_bytes(&["-sB1"], &t) - dir_blocks * 512,
        "gdu import vs du -sB1"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// The fields a report of the same tree must agree on, whichever way it was read.
const SAME: [&str; 9] = [
    "disk_bytes",
    "apparent_bytes",
    "entries",
    "dirs",
    "files",
    "nonregular",
    "hardlinked_files",
    "errors",
    "excluded",
];

fn same_report(a: &str, b: &str, what: &str) {
    for key in SAME {
        assert_eq!(json_field(a, key), json_field(b, key), "{key}: {what}");
    }
}

/// `dfdu scan -O X` read back by `dfdu scan -f X` is the scan: the same report, and the
/// same JSON export entry for entry (so names, kinds, sizes, devices, hard links and
/// exclusions all came through), also through standard input and output.
#[test]
fn binary_export_read_back_equals_the_scan() {
    let scratch = Scratch::new("binary-back");
    let dir = scratch.dir.clone();
    let t = tree(&dir);
    let (bin, from_scan, from_bin) = (dir.join("t.ncdu"), dir.join("scan.json"), dir.join("bin.json"));
    let scanned = report(&["-q", "--exclude", "*.log", "-O", &bin.to_string_lossy(), &t.to_string_lossy()]);
    run_ok(Command::new(dfdu_path()).args(["scan", "-q", "--exclude", "*.log", "-o"]).arg(&from_scan).arg(&t));
    let data = std::fs::read(&bin).unwrap();
    assert!(data.starts_with(b"\xbfncduEX1") && data.len() > 100_000, "a binary export of some size");
    let back = report(&["-f", &bin.to_string_lossy()]);
    assert!(json_field(&scanned, "excluded") > 0 && json_field(&scanned, "hardlinked_files") > 0, "{scanned}");
    same_report(&scanned, &back, "scan vs its binary export read back");
    run_ok(Command::new(dfdu_path()).args(["scan", "-f"]).arg(&bin).arg("-o").arg(&from_bin));
    assert!(body(&from_scan) == body(&from_bin), "the binary export read back exports other JSON than the scan");
    let piped = Command::new("sh")
        .arg("-c")
        .arg(format!(
            "'{0}' scan -q --exclude '*.log' -O - '{1}' | '{0}' scan --json -f -",
            dfdu_path().display(),
            t.display()
        ))
        .output()
        .unwrap();
    assert!(piped.status.success(), "{}", String::from_utf8_lossy(&piped.stderr));
    same_report(&scanned, &String::from_utf8_lossy(&piped.stdout), "through a pipe");
    let _ = std::fs::remove_dir_all(&dir);
}

/// The venv's python with PyPI's ncdu-reader (`tests/ncdu-reader/setup` makes it, once,
/// under cargo's target/tmp), or `None` after a visible SKIP.
fn ncdu_reader(test: &str) -> Option<PathBuf> {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("ncdu-reader");
    let setup = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/ncdu-reader/setup");
    let out = Command::new("bash").arg(setup).arg(&dir).output();
    match out {
        Ok(o) if o.status.success() => Some(PathBuf::from(String::from_utf8_lossy(&o.stdout).trim())),
        Ok(o) => {
            common::dupes::skip(&format!(
                "{test}: PyPI's ncdu-reader could not be set up: {}",
                String::from_utf8_lossy(&o.stderr).trim()
            ));
            None
        }
        Err(e) => {
            common::dupes::skip(&format!("{test}: bash: {e}"));
            None
        }
    }
}

/// An independent reader (PyPI's ncdu-reader, written from ncdu's format description)
/// parses `dfdu scan -O` and finds every entry of the JSON export of the same scan, with
/// its kind, sizes, inode and link count; the root's cumulative sizes and item count are
/// the report's totals.
#[test]
fn the_independent_reader_parses_our_binary_export() {
    let Some(python) = ncdu_reader("the_independent_reader_parses_our_binary_export") else { return };
    let scratch = Scratch::new("binary-reader");
    let dir = scratch.dir.clone();
    let t = tree(&dir);
    let (bin, json) = (dir.join("t.ncdu"), dir.join("t.json"));
    let scanned = report(&["-q", "--exclude", "*.log", "-O", &bin.to_string_lossy(), &t.to_string_lossy()]);
    run_ok(Command::new(dfdu_path()).args(["scan", "-q", "-f"]).arg(&bin).arg("-o").arg(&json));
    let compare = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/ncdu-reader/compare.py");
    let venv = python.parent().and_then(Path::parent).unwrap().to_path_buf();
    let out =
        Command::new(&python).arg(compare).arg(&bin).arg(&json).env("PYTHONPATH", venv.join("shim")).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "ncdu-reader and the JSON export differ:\n{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let root: Vec<u64> = text.lines().next().unwrap().split(' ').skip(1).map(|v| v.parse().unwrap()).collect();
    assert_eq!(root[0], json_field(&scanned, "disk_bytes"), "the root's cumulative disk usage");
    assert_eq!(root[1], json_field(&scanned, "apparent_bytes"), "the root's cumulative apparent size");
    assert_eq!(root[2] + 1, json_field(&scanned, "entries"), "the root's item count");
    assert_eq!(root[3] + 1, json_field(&scanned, "entries"), "the entries ncdu-reader found");
    let _ = std::fs::remove_dir_all(&dir);
}

/// ncdu 2.7 writes zstd-compressed JSON with `-c`: Debian's `zstd` compresses our export
/// (at a level that uses Huffman and FSE coding, in one frame and in two), and the import
/// of each gives the report of the plain export, from a file and from standard input.
#[test]
fn zstd_compressed_json_reads_as_the_plain_export() {
    if !common::dupes::have_or_skip("zstd", "zstd_compressed_json_reads_as_the_plain_export") {
        return;
    }
    let scratch = Scratch::new("zstd-json");
    let dir = scratch.dir.clone();
    let t = tree(&dir);
    let json = dir.join("t.json");
    run_ok(Command::new(dfdu_path()).args(["scan", "-q", "-o"]).arg(&json).arg(&t));
    let plain = report(&["-f", &json.to_string_lossy()]);
    let zst = dir.join("t.json.zst");
    run_ok(Command::new("zstd").args(["-q", "-19", "-f", "-o"]).arg(&zst).arg(&json));
    // Two frames: the export cut in two, each half compressed on its own.
    let data = std::fs::read(&json).unwrap();
    let (a, b) = data.split_at(data.len() / 2);
    let two = dir.join("two.json.zst");
    let mut frames = Vec::new();
    for (k, half) in [a, b].iter().enumerate() {
        let part = dir.join(format!("half{k}"));
        std::fs::write(&part, half).unwrap();
        run_ok(Command::new("zstd").args(["-q", "-3", "-f"]).arg(&part));
        frames.extend(std::fs::read(dir.join(format!("half{k}.zst"))).unwrap());
    }
    std::fs::write(&two, frames).unwrap();
    assert!(std::fs::metadata(&zst).unwrap().len() * 4 < data.len() as u64, "compressed for real");
    for f in [&zst, &two] {
        same_report(&plain, &report(&["-f", &f.to_string_lossy()]), &f.display().to_string());
    }
    let piped = Command::new("sh")
        .arg("-c")
        .arg(format!("'{}' scan --json -f - < '{}'", dfdu_path().display(), zst.display()))
        .output()
        .unwrap();
    assert!(piped.status.success(), "{}", String::from_utf8_lossy(&piped.stderr));
    same_report(&plain, &String::from_utf8_lossy(&piped.stdout), "standard input");
    // A damaged frame is refused with status 1 and a message, not read as JSON.
    let mut bad = std::fs::read(&zst).unwrap();
    let mid = bad.len() / 2;
    bad.truncate(mid);
    std::fs::write(&zst, &bad).unwrap();
    let out = Command::new(dfdu_path()).args(["scan", "-f"]).arg(&zst).output().unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", String::from_utf8_lossy(&out.stderr));
    let _ = std::fs::remove_dir_all(&dir);
}
