//! `dfdu diff` against real references: a tree and its changed copy (a 100 MB file three
//! levels down, a directory removed, another grown), the changes checked against the
//! system `du -sB1` of each side, the `--json` document read by python3's json module,
//! and the sides given as exports written by dfdu, Debian's ncdu 1.x and gdu.

mod common;

use common::{dfdu_path, run_ok, Scratch};
use std::fs;
use std::path::Path;
use std::process::{Command, Output, Stdio};

/// `du -sB1 PATH` (`common::du_b1`) as a signed number, for differences.
fn du_signed(path: &Path) -> i128 {
    common::du_b1(path).into()
}

/// Deterministic file contents (not zeros, so no file system can make them sparse).
fn write_data(path: &Path, n_bytes: usize, seed: u64) {
    let mut x = seed | 1;
    let mut data = vec![0u8; n_bytes];
    for chunk in data.chunks_mut(8) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        for (b, v) in chunk.iter_mut().zip(x.to_le_bytes()) {
            *b = v;
        }
    }
    fs::write(path, data).unwrap();
}

/// OLD: 6 top directories with 4 subdirectories of 3 levels each, small files of varied
/// sizes everywhere; NEW: its copy with `d1/s2/t/u/big` (`big_bytes`) added, `d3` removed
/// and `d5/s0` grown by 3 MB. No hard links: which name of a hard link is charged may
/// differ between two scans.
fn trees(root: &Path, big_bytes: usize) -> (std::path::PathBuf, std::path::PathBuf) {
    let old = root.join("old");
    for d in 0..6 {
        for s in 0..4 {
            let leaf = old.join(format!("d{d}/s{s}/t/u"));
            fs::create_dir_all(&leaf).unwrap();
            for (k, dir) in [old.join(format!("d{d}")), old.join(format!("d{d}/s{s}")), leaf].iter().enumerate() {
                let seed = (d * 100 + s * 10 + k) as u64;
                write_data(&dir.join(format!("f{s}{k}")), 1000 + (seed as usize * 7919) % 70_000, seed);
            }
        }
    }
    let new = root.join("new");
    run_ok(Command::new("cp").arg("-a").arg(&old).arg(&new));
    write_data(&new.join("d1/s2/t/u/big"), big_bytes, 99);
    fs::remove_dir_all(new.join("d3")).unwrap();
    write_data(&new.join("d5/s0/grown"), 3_000_000, 98);
    (old, new)
}

/// The report's lists as lines `list<TAB>path<TAB>bytes`, read by python3's json module.
fn lists(json: &[u8]) -> Vec<String> {
    let script =
        "import json,sys\nd=json.load(sys.stdin)\nassert d['format']=='dfdu-diff-report' and d['version']==1\n\
        for k in ('grew','shrank'):\n  for e in d[k]: print(k, e['path'], e['change_bytes'], sep='\\t')\n\
        for k in ('added','removed'):\n  for e in d[k]: print(k, e['path'], e['bytes'], sep='\\t')\n\
        print('total', '.', d['change_bytes'], sep='\\t')";
    let mut child = Command::new("python3")
        .args(["-c", script])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("python3");
    use std::io::Write;
    child.stdin.take().unwrap().write_all(json).unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "python3 rejected the JSON: {}", String::from_utf8_lossy(json));
    let mut v: Vec<String> = String::from_utf8(out.stdout).unwrap().lines().map(String::from).collect();
    v.sort();
    v
}

fn diff_json(old: &Path, new: &Path, extra: &[&str]) -> Vec<u8> {
    run_ok(Command::new(dfdu_path()).args(["diff", "--json"]).args(extra).arg(old).arg(new)).stdout
}

#[test]
fn diff_of_directories_names_exactly_the_changed_ones_with_du_sizes() {
    let scratch = Scratch::new("diff-dirs");
    let (old, new) = trees(&scratch.dir, 100_000_000);
    let got = lists(&diff_json(&old, &new, &["--min-change", "4K"]));
    let dir_change = |rel: &str| du_signed(&new.join(rel)) - du_signed(&old.join(rel));
    let mut want = vec![
        format!("grew\td1/s2/t/u\t{}", dir_change("d1/s2/t/u")),
        format!("grew\td5/s0\t{}", dir_change("d5/s0")),
        format!("added\td1/s2/t/u/big\t{}", du_signed(&new.join("d1/s2/t/u/big"))),
        format!("added\td5/s0/grown\t{}", du_signed(&new.join("d5/s0/grown"))),
        format!("removed\td3\t{}", du_signed(&old.join("d3"))),
        format!("total\t.\t{}", du_signed(&new) - du_signed(&old)),
    ];
    want.sort();
    assert_eq!(got, want);
    // The text report names the same directories.
    let text =
        String::from_utf8(run_ok(Command::new(dfdu_path()).args(["diff", "-b"]).arg(&old).arg(&new)).stdout).unwrap();
    for needle in ["d1/s2/t/u  (", "d5/s0  (", "d3/"] {
        assert!(text.contains(needle), "{needle} missing from:\n{text}");
    }
    assert!(!text.contains("\n  +100") || text.contains("d1/s2/t/u"), "{text}");
    // Apparent sizes against du --apparent-size -sB1.
    let got = lists(&diff_json(&old, &new, &["--apparent-size", "--min-change", "1M"]));
    let app = |p: &Path| -> i128 {
        let out = run_ok(Command::new("du").args(["-sB1", "--apparent-size"]).arg(p));
        String::from_utf8_lossy(&out.stdout).split('\t').next().unwrap().trim().parse().unwrap()
    };
    let total = app(&new) - app(&old);
    assert!(got.contains(&format!("total\t.\t{total}")), "{got:?}");
    assert!(got.contains(&format!("added\td1/s2/t/u/big\t{}", 100_000_000)), "{got:?}");
}

#[test]
fn exports_from_dfdu_ncdu_and_gdu_give_the_same_changes() {
    let scratch = Scratch::new("diff-exports");
    let (old, new) = trees(&scratch.dir, 10_000_000);
    let from_dirs = lists(&diff_json(&old, &new, &["--min-change", "4K"]));
    let names = |v: &[String]| -> Vec<String> {
        v.iter().filter(|l| !l.starts_with("total")).map(|l| l.rsplit_once('\t').unwrap().0.to_string()).collect()
    };
    let mut sides = Vec::new();
    for (i, tree) in [&old, &new].into_iter().enumerate() {
        let dfdu_export = scratch.dir.join(format!("dfdu{i}.json"));
        run_ok(Command::new(dfdu_path()).args(["scan", "-q", "-o"]).arg(&dfdu_export).arg(tree));
        sides.push(("dfdu", i, dfdu_export));
        if common::have_or_skip("ncdu", "the ncdu side of this test") {
            let e = scratch.dir.join(format!("ncdu{i}.json"));
            run_ok(Command::new("ncdu").arg("-0").arg("-o").arg(&e).arg(tree));
            sides.push(("ncdu", i, e));
        }
        if common::have_or_skip("gdu", "the gdu side of this test") {
            let e = scratch.dir.join(format!("gdu{i}.json"));
            run_ok(Command::new("gdu").args(["-n", "-p", "-o"]).arg(&e).arg(tree).stdout(Stdio::null()));
            sides.push(("gdu", i, e));
        }
    }
    let olds: Vec<_> = sides.iter().filter(|s| s.1 == 0).collect();
    let news: Vec<_> = sides.iter().filter(|s| s.1 == 1).collect();
    for o in &olds {
        // gdu leaves directories' own blocks out: against a side that has them every
        // directory seems to shrink by its own size, so gdu is compared with gdu.
        for n in news.iter().filter(|n| (n.0 == "gdu") == (o.0 == "gdu")) {
            let got = lists(&diff_json(&o.2, &n.2, &["--min-change", "4K"]));
            // dfdu and ncdu record what stat says, so every byte matches the scan; for
            // gdu the same names must come out and the added file's size must match.
            if o.0 != "gdu" && n.0 != "gdu" {
                assert_eq!(got, from_dirs, "{} old, {} new", o.0, n.0);
            } else {
                assert_eq!(names(&got), names(&from_dirs), "{} old, {} new", o.0, n.0);
                let big = format!("added\td1/s2/t/u/big\t{}", du_signed(&new.join("d1/s2/t/u/big")));
                assert!(got.contains(&big), "{got:?}");
            }
        }
    }
    // Standard input for one side.
    let stdin_file = fs::File::open(&olds[0].2).unwrap();
    let out = run_ok(
        Command::new(dfdu_path()).args(["diff", "--json", "--min-change", "4K", "-"]).arg(&new).stdin(stdin_file),
    );
    assert_eq!(lists(&out.stdout), from_dirs);
}

#[test]
fn a_damaged_export_gets_the_import_error_with_its_offset() {
    let scratch = Scratch::new("diff-damaged");
    let t = scratch.subdir("t");
    fs::write(t.join("f"), b"x").unwrap();
    let good = scratch.dir.join("good.json");
    run_ok(Command::new(dfdu_path()).args(["scan", "-q", "-o"]).arg(&good).arg(&t));
    let mut data = fs::read(&good).unwrap();
    let cut = data.len() / 2;
    data.truncate(cut);
    let bad = scratch.dir.join("bad.json");
    fs::write(&bad, &data).unwrap();
    for (o, n) in [(&bad, &t), (&t, &bad)] {
        let out = Command::new(dfdu_path()).arg("diff").arg(o).arg(n).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{err}");
        assert!(err.contains("bad.json") && err.contains(&format!("byte {cut}:")), "{err}");
    }
    let out = Command::new(dfdu_path()).args(["diff", "only-one"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
}

/// Issue 25: the listing rule at its boundary. `top/d` changes by 2·k, its
/// subdirectories `s1` and `s2` by k each: neither explains *more* than half, so `d` is
/// listed with both. Make `s1`'s share one block larger and it explains `d`, which is then
/// not listed. Checked growing (OLD → NEW) and shrinking (NEW → OLD), every change from
/// the system `du -sB1` of both sides, and the tie checked to be one on disk.
#[test]
fn a_directory_whose_two_subdirectories_each_explain_half_is_listed() {
    let scratch = Scratch::new("diff-tie");
    for (case, s1_bytes, tie) in [("tie", 40960, true), ("over", 45056, false)] {
        let old = scratch.dir.join(format!("{case}-old"));
        for sub in ["top/d/s1", "top/d/s2", "top/e"] {
            fs::create_dir_all(old.join(sub)).unwrap();
            write_data(&old.join(sub).join("f"), 5000, 7);
        }
        let new = scratch.dir.join(format!("{case}-new"));
        run_ok(Command::new("cp").arg("-a").arg(&old).arg(&new));
        write_data(&new.join("top/d/s1/more"), s1_bytes, 1);
        write_data(&new.join("top/d/s2/more"), 40960, 2);
        let change = |rel: &str| du_signed(&new.join(rel)) - du_signed(&old.join(rel));
        let (d, s1, s2) = (change("top/d"), change("top/d/s1"), change("top/d/s2"));
        assert_eq!(d, s1 + s2, "{case}: d's own blocks did not change");
        assert_eq!(s1 == s2, tie, "{case}: du -sB1 gives s1 {s1}, s2 {s2}");
        for (from, to, word, sign) in [(&old, &new, "grew", 1), (&new, &old, "shrank", -1)] {
            let got = lists(&diff_json(from, to, &[]));
            let mut want = vec![
                format!("{word}\ttop/d/s1\t{}", sign * s1),
                format!("{word}\ttop/d/s2\t{}", sign * s2),
                format!(
                    "{}\ttop/d/s1/more\t{}",
                    if sign > 0 { "added" } else { "removed" },
                    du_signed(&new.join("top/d/s1/more"))
                ),
                format!(
                    "{}\ttop/d/s2/more\t{}",
                    if sign > 0 { "added" } else { "removed" },
                    du_signed(&new.join("top/d/s2/more"))
                ),
                format!("total\t.\t{}", sign * (du_signed(&new) - du_signed(&old))),
            ];
            if tie {
                want.push(format!("{word}\ttop/d\t{}", sign * d));
            }
            want.sort();
            assert_eq!(got, want, "{case}, {word}");
        }
    }
}

/// Issue 24, item 15: `dfdu diff OLD NEW >/dev/full` exited 1 with nothing on standard
/// error; it must say what `dfdu scan` says ("PROG diff: write error: No space left on
/// device"), for the text and the JSON report alike.
#[test]
fn a_write_error_is_reported_like_scan_reports_it() {
    let scratch = Scratch::new("diff-full");
    let t = scratch.subdir("t");
    fs::write(t.join("f"), b"x").unwrap();
    for json in [false, true] {
        let full = fs::OpenOptions::new().write(true).open("/dev/full").unwrap();
        let out =
            Command::new(dfdu_path()).arg("diff").args(json.then_some("--json")).arg(&t).arg(&t).stdout(full).output();
        let out = out.unwrap();
        let want = format!("{} diff: write error: No space left on device\n", dfdu_path().display());
        assert_eq!(
            (out.status.code(), String::from_utf8_lossy(&out.stderr).into_owned()),
            (Some(1), want),
            "json {json}"
        );
    }
}

/// Issue 24, item 15: diff said only "PROG: 4 entries could not be read" (without its
/// subcommand). Run as nobody over two trees with a directory it cannot open and one it
/// can list but not enter, it must name each entry as `dfdu scan` names them (the same
/// lines, "diff" for "scan"), OLD's then NEW's, then the count, and exit 1.
#[test]
fn unreadable_entries_are_named_as_scan_names_them() {
    use std::os::unix::fs::PermissionsExt;
    use std::os::unix::process::CommandExt;
    if !common::is_root() {
        eprintln!("SKIP: unreadable_entries_are_named_as_scan_names_them needs root to run as nobody");
        return;
    }
    let scratch = Scratch::new("diff-unreadable");
    if !common::reachable_by_others(&scratch.dir) {
        eprintln!(
            "SKIP: unreadable_entries_are_named_as_scan_names_them: the scratch directory is not reachable by nobody"
        );
        return;
    }
    for side in ["old", "new"] {
        for name in ["ok/a", "locked/x", "nosearch/y", "nosearch/z"] {
            let p = scratch.dir.join(side).join(name);
            fs::create_dir_all(p.parent().unwrap()).unwrap();
            fs::write(&p, side).unwrap();
        }
    }
    let modes = [("locked", 0o000), ("nosearch", 0o644)];
    let set_modes = |restore: bool| {
        for side in ["old", "new"] {
            for (dir, mode) in modes {
                let mode = if restore { 0o755 } else { mode };
                fs::set_permissions(scratch.dir.join(side).join(dir), fs::Permissions::from_mode(mode)).unwrap();
            }
        }
    };
    let bin = common::copy_executable(&dfdu_path(), &scratch.subdir("bin"), "dfdu");
    let as_nobody = |args: &[&str]| {
        let mut c = Command::new(&bin);
        c.args(args).current_dir(&scratch.dir).env("LC_ALL", "C").uid(65534).gid(65534);
        c.output().unwrap()
    };
    set_modes(false);
    let diff = as_nobody(&["diff", "old", "new"]);
    let scans = [as_nobody(&["scan", "-q", "old"]), as_nobody(&["scan", "-q", "new"])];
    set_modes(true);
    let lines = |o: &Output| String::from_utf8_lossy(&o.stderr).lines().map(str::to_string).collect::<Vec<_>>();
    let mut want = Vec::new();
    for scan in &scans {
        let mut l = lines(scan);
        l.pop(); // "N entries could not be read"
        want.extend(l.into_iter().map(|l| l.replacen(" scan: ", " diff: ", 1)));
    }
    assert_eq!(want.len(), 6, "scan names three problems on each side: {want:?}");
    want.push(format!("{} diff: 6 entries could not be read", bin.display()));
    assert_eq!(lines(&diff), want, "dfdu diff's messages, then dfdu scan's (subcommand replaced)");
    assert_eq!(diff.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&diff.stdout).starts_with("old "), "the report is still written");
}

/// `--min-change=SIZE` leaves out what is smaller than SIZE: an added file of exactly
/// SIZE (its `du -sB1`) is kept, and one byte more leaves it out.
#[test]
fn min_change_keeps_an_entry_of_exactly_that_size() {
    let scratch = Scratch::new("diff-min-change");
    let old = scratch.subdir("old");
    write_data(&old.join("f"), 3000, 3);
    let new = scratch.dir.join("new");
    run_ok(Command::new("cp").arg("-a").arg(&old).arg(&new));
    write_data(&new.join("added"), 20000, 4);
    let size = du_signed(&new.join("added"));
    let added = |min: i128| {
        let got = lists(&diff_json(&old, &new, &["--min-change", &min.to_string()]));
        got.iter().any(|l| l == &format!("added\tadded\t{size}"))
    };
    assert!(added(size), "an addition of exactly --min-change is listed");
    assert!(!added(size + 1), "a smaller one is not");
}

/// Every file that is not a directory below `root` with its disk usage from `find`'s
/// `%b` (512-byte blocks, as `du -B1` counts a file without other links).
fn file_blocks(root: &Path) -> std::collections::BTreeMap<String, i128> {
    let out = run_ok(Command::new("find").arg(root).args(["!", "-type", "d", "-printf", "%P\\t%b\\n"]));
    let text = String::from_utf8(out.stdout).unwrap();
    text.lines()
        .map(|l| l.split_once('\t').unwrap())
        .map(|(p, b)| (p.to_string(), b.parse::<i128>().unwrap() * 512))
        .collect()
}

/// Issue 31: a file that grew was only ever named through its directory (a 2 MB growth of
/// `ChangeLog` showed as its directory's). `--files` lists each file that grew or shrank,
/// new and removed ones (also those inside the removed `d3`) included, each with the
/// sizes `find` gives on both sides.
#[test]
fn diff_files_lists_every_changed_file_with_its_sizes() {
    let scratch = Scratch::new("diff-files");
    let (old, new) = trees(&scratch.dir, 2_000_000);
    let mut grown = fs::OpenOptions::new().append(true).open(new.join("d0/f00")).unwrap();
    std::io::Write::write_all(&mut grown, &vec![7u8; 2_000_000]).unwrap();
    fs::OpenOptions::new().write(true).open(new.join("d2/s1/t/u/f12")).unwrap().set_len(10).unwrap();
    let (before, after) = (file_blocks(&old), file_blocks(&new));
    let mut want = Vec::new();
    for path in before.keys().chain(after.keys().filter(|p| !before.contains_key(*p))) {
        let (o, n) = (before.get(path), after.get(path));
        let change = n.unwrap_or(&0) - o.unwrap_or(&0);
        if change != 0 {
            let key = if change > 0 { "files_grew" } else { "files_shrank" };
            let side = |v: Option<&i128>| v.map_or("None".to_string(), |v| v.to_string());
            want.push(format!("{key}\t{path}\t{}\t{}\t{change}", side(o), side(n)));
        }
    }
    want.sort();
    assert!(want.len() > 12, "d3's files, the two new ones and the two changed: {want:?}");
    let json = diff_json(&old, &new, &["--files", "--top", "1000"]);
    let script = "import json,sys\nd=json.load(sys.stdin)\n\
        for k in ('files_grew','files_shrank'):\n  assert d[k+'_count']==len(d[k])\n  \
        for e in d[k]: print(k, e['path'], e['old_bytes'], e['new_bytes'], e['change_bytes'], sep='\\t')";
    let mut child =
        Command::new("python3").args(["-c", script]).stdin(Stdio::piped()).stdout(Stdio::piped()).spawn().unwrap();
    std::io::Write::write_all(&mut child.stdin.take().unwrap(), &json).unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "python3 rejected the JSON: {}", String::from_utf8_lossy(&json));
    let mut got: Vec<String> = String::from_utf8(out.stdout).unwrap().lines().map(String::from).collect();
    got.sort();
    assert_eq!(got, want);
    // The text report, the largest first: the new 3 MB and 2 MB files, then the grown one.
    let text =
        run_ok(Command::new(dfdu_path()).args(["diff", "-b", "--files", "--top", "3"]).arg(&old).arg(&new)).stdout;
    let text = String::from_utf8(text).unwrap();
    let files = &text[text.find("files that grew (").unwrap_or_else(|| panic!("no file list in:\n{text}"))..];
    let (o, n) = (before["d0/f00"], after["d0/f00"]);
    let rows = [
        format!("+{}  d5/s0/grown  (new)\n", after["d5/s0/grown"]),
        format!("+{}  d1/s2/t/u/big  (new)\n", after["d1/s2/t/u/big"]),
        format!("+{}  d0/f00  ({o} -> {n})\n", n - o),
    ];
    let at: Vec<Option<usize>> = rows.iter().map(|r| files.find(r.as_str())).collect();
    assert!(at.iter().all(Option::is_some) && at.is_sorted(), "{rows:?} in this order in:\n{text}");
    // Without --files the report stays as it was.
    let plain = String::from_utf8(diff_json(&old, &new, &[])).unwrap();
    assert!(!plain.contains("files_grew"), "{plain}");
}
