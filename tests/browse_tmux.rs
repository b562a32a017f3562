//! `dfdu browse` in a real terminal: each test starts a private tmux server (the driver
//! is `tests/common/tmux.rs`, shared with `tests/hostile.rs`), runs dfdu in a pane on a
//! tree built for the test, types keys with `send-keys`, reads the screen with
//! `capture-pane`, and checks the file system afterwards. Every deletion happens inside
//! the test's own temporary directory.
//!
//! dfdu runs under a small shell script that, once dfdu exits, prints its exit status
//! and whether the terminal is back in canonical mode, so the tests can also see that
//! quitting, SIGTERM and Ctrl-Z put the terminal back.
//!
//! Without tmux every test prints `SKIP: ...` and passes (it fails when
//! `DFDU_REQUIRE_TMUX` is set).

mod common;

use common::tmux::{have_tmux, listing, write, Term};
use common::{du_b1, du_bytes, Scratch};
use std::collections::BTreeSet;
use std::path::Path;
use std::process::Command;

/// A tree with distinct sizes, so the size order is known.
fn sample(root: &Path) {
    write(&root.join("alpha/one.bin"), 400_000);
    write(&root.join("alpha/deep/er/two.bin"), 100_000);
    write(&root.join("beta/a"), 120_000);
    write(&root.join("beta/b/c"), 60_000);
    write(&root.join("gamma/x"), 30_000);
    write(&root.join("delta.txt"), 8_000);
    write(&root.join("日本語の名前.txt"), 12_000);
}

/// Whether `raw` (a capture with escapes) sets a foreground or background colour; tmux's
/// own resets to the defaults (39, 49) do not count.
fn has_colour(raw: &str) -> bool {
    raw.split("\x1b[").skip(1).any(|seq| {
        let params = seq.split('m').next().unwrap_or("");
        params.split(';').any(|p| matches!(p.parse::<u32>(), Ok(30..=38 | 40..=48 | 90..=97 | 100..=107)))
    })
}

/// The process id of the `dfdu browse` running on `tree` (from /proc).
fn browse_pid(tree: &Path) -> Option<u32> {
    let want = tree.to_string_lossy();
    for e in std::fs::read_dir("/proc").ok()?.flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|n| n.parse::<u32>().ok()) else { continue };
        let Ok(cmdline) = std::fs::read(e.path().join("cmdline")) else { continue };
        let args: Vec<String> = cmdline
            .split(|&b| b == 0)
            .filter(|a| !a.is_empty())
            .map(|a| String::from_utf8_lossy(a).into_owned())
            .collect();
        if args.len() >= 3
            && args[0].ends_with("dfdu")
            && args[1] == "browse"
            && args.last().is_some_and(|a| *a == want)
        {
            return Some(pid);
        }
    }
    None
}

#[test]
fn navigate_sort_delete_and_quit() {
    if !have_tmux() {
        return;
    }
    let scratch = Scratch::new("journey");
    let t = scratch.dir.clone();
    let tree = t.join("tree");
    sample(&tree);
    let term = Term::start(&t, "", &format!("'{}'", tree.display()), 80, 24);
    let s = term.wait_for("Scan finished");
    assert!(s.lines().next().unwrap().contains("dfdu"), "header:\n{s}");
    assert!(has_colour(&term.screen_with_escapes()), "directories are coloured by default");
    assert!(s.contains(&format!("--- {} ", tree.display())) || s.contains(&format!("─── {} ", tree.display())));
    assert_eq!(term.names(), ["/alpha", "/beta", "/gamma", "日本語の名前.txt", "delta.txt"]);

    // Into alpha and back out.
    term.select("/alpha");
    term.keys(&["Enter"]);
    term.wait_for(&format!("{}/alpha ", tree.display()));
    assert_eq!(term.names(), ["one.bin", "/deep"]);
    term.keys(&["Down", "l"]);
    term.wait_for("/er");
    term.keys(&["h", "Left"]);
    term.wait(&format!("{} (the root)", tree.display()), |s| {
        s.contains(&format!("{} ", tree.display())) && s.contains("/gamma")
    });

    // Sort by name, reverse it, back to size.
    term.keys(&["n"]);
    term.wait("name order", |s| s.find("/alpha") < s.find("/beta") && s.find("delta.txt") < s.find("日本語"));
    assert_eq!(term.names(), ["/alpha", "/beta", "delta.txt", "/gamma", "日本語の名前.txt"]);
    term.keys(&["n"]);
    term.wait("reverse name order", |s| s.find("日本語") < s.find("/alpha"));
    term.keys(&["s"]);
    term.wait("size order", |s| s.find("/alpha") < s.find("/beta") && s.find("/gamma") < s.find("delta.txt"));

    // Help and info open and close.
    term.keys(&["?"]);
    term.wait_for("dfdu help");
    term.keys(&["q"]);
    term.wait("help closed", |s| !s.contains("dfdu help"));
    term.keys(&["i"]);
    term.wait_for("Apparent:");
    term.keys(&["i"]);
    term.wait("info closed", |s| !s.contains("Apparent:"));

    // Rescan gamma after a file appears in it: the new size shows.
    write(&tree.join("gamma/new.bin"), 900_000);
    term.select("/gamma");
    term.keys(&["r"]);
    term.wait_for("Rescanned");
    term.wait("gamma on top", |s| s.find("/gamma") < s.find("/alpha"));
    std::fs::remove_file(tree.join("gamma/new.bin")).unwrap();
    term.select("/gamma");
    term.keys(&["r"]);
    term.wait("gamma small again", |s| s.find("/gamma") > s.find("/beta"));

    // Delete beta: cancel once, then confirm.
    let before = listing(&tree);
    term.select("/beta");
    // The rescan may still be finishing (gamma is small from its start): then the delete
    // is refused for now, and asked again.
    for round in 0.. {
        term.keys(&["d"]);
        let s = term.wait("an answer", |s| s.contains("Confirm delete") || s.contains("Wait until"));
        if s.contains("Confirm delete") {
            break;
        }
        assert!(round < 100, "the rescan never finished:\n{s}");
        term.keys(&["Escape"]);
        term.wait("message closed", |s| !s.contains("Wait until"));
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    let s = term.screen();
    assert!(s.contains(&format!("{}/beta", tree.display())) && s.contains("4 items"), "{s}");
    term.keys(&["n"]);
    term.wait("cancelled", |s| !s.contains("Confirm delete"));
    assert_eq!(listing(&tree), before, "cancel deletes nothing");
    term.keys(&["d"]);
    term.wait_for("Confirm delete");
    term.keys(&["y"]);
    term.wait_for("Deleted");
    assert_eq!(term.names(), ["/alpha", "/gamma", "日本語の名前.txt", "delta.txt"]);
    let gone: BTreeSet<String> = ["beta/", "beta/a", "beta/b/", "beta/b/c"].iter().map(|s| s.to_string()).collect();
    let expected: BTreeSet<String> = before.difference(&gone).cloned().collect();
    assert_eq!(listing(&tree), expected, "exactly beta is gone");

    // Quit: the terminal is back in canonical mode and dfdu said 0.
    term.keys(&["q"]);
    let s = term.wait_for("MODE=");
    assert!(s.contains("EXIT=0") && s.contains("MODE=icanon"), "{s}");
    drop(term);
    std::fs::remove_dir_all(&t).unwrap();
}

#[test]
fn a_directory_swapped_for_a_symlink_after_the_scan_is_not_followed() {
    if !have_tmux() {
        return;
    }
    let scratch = Scratch::new("swap");
    let t = scratch.dir.clone();
    let tree = t.join("tree");
    write(&tree.join("sel/inner/file"), 1000);
    write(&tree.join("sel/plain"), 1000);
    write(&tree.join("outside/precious"), 5000);
    write(&t.join("far/also-precious"), 5000);
    let term = Term::start(&t, "", &format!("'{}'", tree.display()), 80, 24);
    term.wait_for("Scan finished");
    // Between the scan and the delete: sel/inner becomes a link to a directory outside
    // the selection, and sel itself keeps its inode.
    std::fs::remove_dir_all(tree.join("sel/inner")).unwrap();
    std::os::unix::fs::symlink(t.join("far"), tree.join("sel/inner")).unwrap();
    term.select("/sel");
    term.keys(&["d"]);
    term.wait_for("Confirm delete");
    term.keys(&["y"]);
    let s = term.wait_for("could not be deleted");
    assert!(s.contains("sel/inner"), "the failure names the swapped directory:\n{s}");
    assert!(t.join("far/also-precious").exists(), "nothing outside the selection is removed");
    assert!(tree.join("outside/precious").exists());
    assert!(tree.join("sel/inner").is_symlink(), "the link itself is left alone");
    assert!(!tree.join("sel/plain").exists(), "the rest of the selection is removed");
    term.keys(&["Escape"]);
    term.wait("message closed", |s| !s.contains("could not be deleted"));
    assert!(term.names().contains(&"/sel".to_string()), "what failed is still shown");
    term.keys(&["q"]);
    term.wait_for("EXIT=0");
    drop(term);
    std::fs::remove_dir_all(&t).unwrap();
}

#[test]
fn a_hundred_thousand_entry_subtree_is_deleted_and_nothing_else() {
    if !have_tmux() {
        return;
    }
    let scratch = Scratch::new("big");
    let t = scratch.dir.clone();
    let tree = t.join("tree");
    for d in 0..100 {
        let dir = tree.join(format!("huge/d{d:03}"));
        std::fs::create_dir_all(&dir).unwrap();
        for f in 0..999 {
            std::fs::write(dir.join(format!("f{f:03}")), b"").unwrap();
        }
    }
    write(&tree.join("keep/k1"), 10);
    write(&tree.join("keep/sub/k2"), 10);
    write(&tree.join("huge-sibling"), 10);
    let keep = listing(&tree.join("keep"));
    let term = Term::start(&t, "", &format!("'{}'", tree.display()), 100, 30);
    term.wait_for("Scan finished");
    term.select("/huge");
    term.keys(&["d"]);
    let s = term.wait_for("Confirm delete");
    assert!(s.contains("100,001 items"), "100 directories, 99,900 files and huge itself:\n{s}");
    term.keys(&["y"]);
    let s = term.wait_for("Deleted");
    assert!(s.contains("100,001 items removed"), "{s}");
    assert!(!tree.join("huge").exists());
    assert_eq!(listing(&tree.join("keep")), keep);
    assert!(tree.join("huge-sibling").exists());
    assert_eq!(term.names(), ["/keep", "huge-sibling"]);
    term.keys(&["q"]);
    term.wait_for("EXIT=0");
    drop(term);
    std::fs::remove_dir_all(&t).unwrap();
}

#[test]
fn resizes_and_a_tiny_window() {
    if !have_tmux() {
        return;
    }
    let scratch = Scratch::new("resize");
    let t = scratch.dir.clone();
    let tree = t.join("tree");
    sample(&tree);
    let term = Term::start(&t, "", &format!("'{}'", tree.display()), 80, 24);
    term.wait_for("Scan finished");
    term.resize(30, 8);
    term.wait_for("window too small");
    term.keys(&["j"]);
    term.resize(120, 30);
    let s = term.wait("the listing at 120 columns", |s| s.contains("/alpha") && s.lines().count() >= 29);
    let footer = s.lines().filter(|l| l.contains("Total disk usage")).count();
    assert_eq!(footer, 1, "{s}");
    assert!(s.lines().nth(1).unwrap().chars().count() >= 119, "the path line spans the width:\n{s}");
    term.resize(40, 10);
    term.wait("the listing at 40x10", |s| s.contains("/alpha") && !s.contains("too small"));
    term.keys(&["q"]);
    term.wait_for("EXIT=0");
    drop(term);
    std::fs::remove_dir_all(&t).unwrap();
}

#[test]
fn ascii_without_colour() {
    if !have_tmux() {
        return;
    }
    let scratch = Scratch::new("ascii");
    let t = scratch.dir.clone();
    let tree = t.join("tree");
    sample(&tree);
    let term = Term::start(&t, "NO_COLOR=1", &format!("--ascii '{}'", tree.display()), 80, 24);
    let s = term.wait_for("Scan finished");
    assert!(s.contains("--- ") && s.contains("[##########] /alpha"), "ASCII lines and bars:\n{s}");
    term.keys(&["?"]);
    let s = term.wait_for("dfdu help");
    assert!(s.contains("+- dfdu help") && s.contains("| up, k"), "ASCII boxes:\n{s}");
    assert!(!s.chars().any(|c| matches!(c, '─' | '│' | '┌' | '█')), "{s}");
    let raw = term.screen_with_escapes();
    assert!(!has_colour(&raw), "no colour codes with NO_COLOR: {raw:?}");
    term.keys(&["q", "q"]);
    term.wait_for("EXIT=0");
    drop(term);
    std::fs::remove_dir_all(&t).unwrap();
}

#[test]
fn signals_and_job_control_restore_the_terminal() {
    if !have_tmux() {
        return;
    }
    let scratch = Scratch::new("signals");
    let t = scratch.dir.clone();
    let tree = t.join("tree");
    sample(&tree);
    // SIGTERM: the terminal is restored and the status says which signal.
    let term = Term::start(&t, "", &format!("'{}'", tree.display()), 80, 24);
    term.wait_for("Scan finished");
    let pid = browse_pid(&tree).expect("dfdu browse is running");
    Command::new("kill").args(["-TERM", &pid.to_string()]).status().unwrap();
    let s = term.wait_for("MODE=");
    assert!(s.contains("EXIT=143") && s.contains("MODE=icanon"), "{s}");
    drop(term);

    // Ctrl-C quits cleanly too (the terminal keeps ISIG).
    let term = Term::start(&t, "", &format!("'{}'", tree.display()), 80, 24);
    term.wait_for("Scan finished");
    term.keys(&["C-c"]);
    let s = term.wait_for("MODE=");
    assert!(s.contains("EXIT=130") && s.contains("MODE=icanon"), "{s}");
    drop(term);

    // Ctrl-Z in an interactive shell: stopped with the terminal restored, then `fg`
    // brings the browser back, redrawn.
    let term = Term::command(&t, "bash --norc --noprofile -i", 80, 24);
    term.wait("a prompt", |s| s.contains('$') || s.contains('#'));
    let cmd = format!("LC_ALL=C.UTF-8 '{}' browse '{}'", env!("CARGO_BIN_EXE_dfdu"), tree.display());
    term.tmux(&["send-keys", "-t", "t", "-l", &cmd]);
    term.keys(&["Enter"]);
    term.wait_for("Scan finished");
    term.keys(&["C-z"]);
    term.wait_for("Stopped");
    // Quoted so that the echoed command line itself does not contain the marker.
    term.tmux(&["send-keys", "-t", "t", "-l", "stty -a | grep -o -- '-*icanon' | sed 's/^/MO''DE=/'"]);
    term.keys(&["Enter"]);
    let s = term.wait_for("MODE=");
    assert!(s.contains("MODE=icanon") && !s.contains("MODE=-icanon"), "cooked mode while stopped:\n{s}");
    term.tmux(&["send-keys", "-t", "t", "-l", "fg"]);
    term.keys(&["Enter"]);
    term.wait("the browser again", |s| s.contains("/alpha") && s.contains("Total disk usage"));
    term.keys(&["j"]);
    term.keys(&["q"]);
    term.wait("the shell again", |s| !s.contains("Total disk usage"));
    drop(term);
    std::fs::remove_dir_all(&t).unwrap();
}

#[test]
fn an_imported_export_from_standard_input_browses_but_never_deletes() {
    if !have_tmux() {
        return;
    }
    let scratch = Scratch::new("import");
    let t = scratch.dir.clone();
    let tree = t.join("tree");
    sample(&tree);
    let export = t.join("export.json");
    let st =
        Command::new(env!("CARGO_BIN_EXE_dfdu")).args(["scan", "-q", "-o"]).arg(&export).arg(&tree).output().unwrap();
    assert!(st.status.success(), "{}", String::from_utf8_lossy(&st.stderr));
    let before = listing(&tree);
    // The export comes on stdin, so the keys must come from /dev/tty.
    let term = Term::start(&t, &format!("cat '{}' |", export.display()), "-f -", 80, 24);
    let s = term.wait_for("Imported");
    assert!(s.contains("[imported]") && s.contains("/alpha"), "{s}");
    term.keys(&["Enter"]);
    term.wait_for("one.bin");
    term.keys(&["d"]);
    term.wait_for("an imported export");
    term.keys(&["y", "r"]);
    term.wait_for("Rescanning needs the file system");
    term.keys(&["Escape", "q"]);
    term.wait_for("EXIT=0");
    assert_eq!(listing(&tree), before, "nothing deleted");
    drop(term);
    std::fs::remove_dir_all(&t).unwrap();
}

/// Issue 17: `--read-only` from the command line reaches the browser: `d` is refused
/// with the reason, `y` afterwards does nothing, and nothing on disk changes.
#[test]
fn read_only_from_the_command_line_refuses_delete() {
    if !have_tmux() {
        return;
    }
    let scratch = Scratch::new("read-only");
    let t = scratch.dir.clone();
    let tree = t.join("tree");
    sample(&tree);
    let before = listing(&tree);
    let term = Term::start(&t, "", &format!("--read-only '{}'", tree.display()), 80, 24);
    term.wait_for("Scan finished");
    term.select("/alpha");
    term.keys(&["d"]);
    let s = term.wait_for("Deleting is off (--read-only).");
    assert!(!s.contains("Confirm delete"), "{s}");
    // `y` only closes the message; a second `d` is refused the same way.
    term.keys(&["y", "d"]);
    term.wait_for("Deleting is off");
    term.keys(&["Escape", "q"]);
    term.wait_for("EXIT=0");
    assert_eq!(listing(&tree), before, "nothing deleted");
    drop(term);
}

#[test]
fn a_change_column_and_sort_against_an_older_export() {
    if !have_tmux() {
        return;
    }
    let scratch = Scratch::new("tmux-diff");
    let tree = scratch.subdir("tree");
    sample(&tree);
    let old = scratch.dir.join("old.json");
    let out =
        Command::new(env!("CARGO_BIN_EXE_dfdu")).args(["scan", "-q", "-o"]).arg(&old).arg(&tree).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    // beta grows, alpha shrinks, gamma goes, fresh comes.
    write(&tree.join("beta/more.bin"), 500_000);
    write(&tree.join("alpha/one.bin"), 100_000);
    std::fs::remove_dir_all(tree.join("gamma")).unwrap();
    write(&tree.join("fresh/f"), 50_000);
    let args = format!("--read-only --diff '{}' '{}'", old.display(), tree.display());
    let term = Term::start(&scratch.dir, "", &args, 100, 20);
    let s = term.wait_for("removed here: 1,");
    let row = |s: &str, name: &str| s.lines().find(|l| l.trim_end().ends_with(name)).unwrap_or("").to_string();
    assert!(row(&s, "/beta").contains(" +"), "beta grew:\n{s}");
    assert!(row(&s, "/alpha").contains(" \u{2212}"), "alpha shrank:\n{s}");
    assert!(row(&s, "/fresh").contains(" new "), "fresh is new:\n{s}");
    assert!(row(&s, "delta.txt").contains(" = "), "delta.txt did not change:\n{s}");
    // Sort by change: growth first (a new entry by its whole size), shrinkage last.
    term.keys(&["D"]);
    term.wait("change order", |s| s.find("/beta") < s.find("/fresh") && s.find("delta.txt") < s.find("/alpha"));
    let names = term.names();
    assert_eq!(names.first().map(String::as_str), Some("/beta"), "{names:?}");
    assert_eq!(names.last().map(String::as_str), Some("/alpha"), "{names:?}");
    // Inside a new directory everything is new.
    term.select("/fresh");
    term.keys(&["Enter"]);
    let s = term.wait_for("(new since the compared tree)");
    assert!(row(&s, "f").contains(" new "), "{s}");
    term.keys(&["q"]);
    term.wait_for("EXIT=0");
}

/// `du`'s figures for `dir`: (disk bytes, apparent bytes, entries below).
fn du_figures(dir: &Path) -> (u64, u64, u64) {
    (du_b1(dir), du_bytes(&["-sb"], dir), listing(dir).len() as u64)
}

fn grouped(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

fn rss_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    let line = status.lines().find(|l| l.starts_with("VmRSS:")).unwrap_or("VmRSS: 0 kB");
    line.split_whitespace().nth(1).and_then(|n| n.parse().ok()).unwrap_or(0)
}

/// Issue 10, item 8: fifteen rescans of a 10,000-entry directory whose contents change
/// between them (growing and shrinking, so reused runs are sometimes too big and
/// sometimes too small): after each, the directory's figures in the info box are GNU
/// du's. (The resident size is printed for the record, not asserted.)
#[test]
fn repeated_rescans_keep_totals_equal_to_du() {
    if !have_tmux() {
        return;
    }
    let scratch = Scratch::new("rescans");
    let t = scratch.dir.clone();
    let tree = t.join("tree");
    let big = tree.join("big");
    std::fs::create_dir_all(big.join("sub")).unwrap();
    for i in 0..10_000 {
        let dir = if i % 10 == 0 { big.join("sub") } else { big.clone() };
        write(&dir.join(format!("file-{i:05}")), i % 3000);
    }
    write(&tree.join("other.bin"), 5000);
    let term = Term::start(&t, "", &format!("'{}'", tree.display()), 100, 30);
    term.wait_for("Scan finished");
    let pid = browse_pid(&tree);
    let rss_start = pid.map(rss_kib).unwrap_or(0);
    for round in 1..=15u64 {
        // Odd rounds add files (and a directory), even rounds take some away.
        if round % 2 == 1 {
            std::fs::create_dir_all(big.join(format!("new-{round}"))).unwrap();
            for i in 0..(round * 40) {
                write(&big.join(format!("new-{round}/f{i}")), (i * 37 % 5000) as usize);
                write(&big.join(format!("added-{round}-{i}")), (i * 11) as usize);
            }
        } else {
            for i in (round as usize * 7..10_000).step_by(97) {
                let _ = std::fs::remove_file(big.join(format!("file-{i:05}")));
            }
            let _ = std::fs::remove_dir_all(big.join(format!("new-{}", round - 1)));
        }
        term.select("/big");
        term.keys(&["r"]);
        let (disk, apparent, items) = du_figures(&big);
        let want = [
            format!("({} bytes)", grouped(disk)),
            format!("({} bytes)", grouped(apparent)),
            format!("Items:     {}", grouped(items)),
        ];
        // The info box is drawn from the live arena: wait until it shows du's figures
        // (a rescan that lost or kept stale entries never gets there).
        term.wait_for("Rescanned");
        term.keys(&["i"]);
        term.wait(&format!("round {round}: {want:?}"), |s| {
            s.contains("Path:      ") && s.contains("/big") && want.iter().all(|w| s.contains(w.as_str()))
        });
        term.keys(&["i"]);
        term.wait("info closed", |s| !s.contains("Apparent:"));
    }
    let rss_end = pid.map(rss_kib).unwrap_or(0);
    eprintln!("RSS after the scan: {rss_start} KiB; after 15 rescans: {rss_end} KiB");
    term.keys(&["q"]);
    term.wait_for("EXIT=0");
    drop(term);
    std::fs::remove_dir_all(&t).unwrap();
}

/// Deterministic bytes that no file system stores sparse, synced so that the block
/// count cannot change between the scans and `du`.
fn write_synced(path: &Path, n_bytes: usize) {
    use std::io::Write;
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    let mut f = std::fs::File::create(path).unwrap();
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    let chunk: Vec<u8> = (0..1 << 20)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect();
    let mut left = n_bytes;
    while left > 0 {
        let n = left.min(chunk.len());
        f.write_all(&chunk[..n]).unwrap();
        left -= n;
    }
    f.sync_all().unwrap();
}

/// `n` bytes as the browser writes a size (1024-based, one decimal), trimmed.
fn human(n: u64) -> String {
    if n < 1000 {
        return format!("{n} B");
    }
    let (mut v, mut u) = (n as f64, 0);
    while v >= 999.95 && u < 6 {
        v /= 1024.0;
        u += 1;
    }
    format!("{v:.1} {}", ["B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"][u])
}

/// Issue 15, the browser's half: OLD is a directory scanned first (and, the second time,
/// an export read from standard input); NEW has a 100 MB file three levels down, a
/// directory less and another grown. The change column, the change order and the
/// removed rows say so, in the figures GNU du gives for each side.
#[test]
fn browse_diff_of_two_directories_shows_growth_and_removed_rows_as_du_does() {
    if !have_tmux() {
        return;
    }
    let scratch = Scratch::new("tmux-diff-dirs");
    let old = scratch.subdir("old");
    for (k, d) in ["a/b/c", "gone/in", "grow", "same"].iter().enumerate() {
        for f in 0..3 {
            write(&old.join(d).join(format!("f{f}")), 3000 + k * 10_000 + f * 777);
        }
    }
    write(&old.join("gone/top.bin"), 200_000);
    // Bigger than grow and unchanged: the size and change orders differ.
    write(&old.join("same/large"), 5_000_000);
    let new = scratch.dir.join("new");
    assert!(Command::new("cp").arg("-a").arg(&old).arg(&new).status().unwrap().success());
    write_synced(&new.join("a/b/c/big"), 100_000_000);
    std::fs::remove_dir_all(new.join("gone")).unwrap();
    write_synced(&new.join("grow/more"), 3_000_000);
    let change = |rel: &str| du_b1(&new.join(rel)) - du_b1(&old.join(rel));
    let (a_up, grow_up, gone) = (change("a"), change("grow"), du_b1(&old.join("gone")));
    let minus = '\u{2212}';

    let args = format!("--read-only --diff '{}' '{}'", old.display(), new.display());
    let term = Term::start(&scratch.dir, "", &args, 110, 30);
    let s = term.wait_for("Scan finished");
    assert!(s.contains(&format!("(removed here: 1, {minus}{})", human(gone))), "{s}");
    assert!(s.contains(&format!("Total disk usage: {}", human(du_b1(&new)))), "{s}");
    assert!(term.row("/a").contains(&format!(" +{} ", human(a_up))), "{s}");
    assert!(term.row("/grow").contains(&format!(" +{} ", human(grow_up))), "{s}");
    assert!(term.row("/same").contains(" = "), "{s}");
    let gone_row = term.row("/gone");
    assert!(gone_row.starts_with("R ") && gone_row.contains("[ removed  ]"), "{s}");
    assert!(gone_row.contains(&format!("{minus}{} ", human(gone))), "{s}");
    // Size order: what is on disk first, the removed row after it.
    assert_eq!(term.names(), ["/a", "/same", "/grow", "/gone"], "{s}");
    // The change order: growth first, the removed directory (all of it) last; reversed,
    // what went comes first.
    term.keys(&["D"]);
    term.wait("change order", |s| s.find("/grow") < s.find("/same"));
    assert_eq!(term.names(), ["/a", "/grow", "/same", "/gone"]);
    term.keys(&["D"]);
    term.wait("reversed change order", |s| s.find("/gone") < s.find("/a"));
    assert_eq!(term.names(), ["/gone", "/same", "/grow", "/a"]);
    // Exact bytes in the info box, against du.
    term.select("/a");
    term.keys(&["i"]);
    term.wait_for(&format!("Change:    +{} (+{} bytes; was ", human(a_up), grouped(a_up)));
    term.keys(&["i"]);
    term.select("/gone");
    term.keys(&["i"]);
    let s = term.wait_for(&format!("Change:    removed ({minus}{}, {minus}{} bytes)", human(gone), grouped(gone)));
    assert!(s.contains(&format!("({} bytes)", grouped(gone))) && s.contains("not on disk"), "{s}");
    term.keys(&["i"]);
    term.wait("info closed", |s| !s.contains("Change:"));
    // Not on disk: nothing to delete (even without --read-only the answer is this one).
    term.keys(&["d"]);
    term.wait_for("gone is not on disk (removed since the compared tree)");
    term.keys(&["Escape"]);
    // Into the removed directory: what it held, all removed, its old total in the footer.
    term.keys(&["Enter"]);
    let s = term.wait_for("(removed since the compared tree: not on disk)");
    assert!(s.contains(&format!(" Removed: Total disk usage: {}", human(gone))), "{s}");
    assert_eq!(term.names(), ["top.bin", "/in"], "{s}");
    assert!(term.row("top.bin").starts_with("R ") && term.row("/in").starts_with("R "), "{s}");
    term.keys(&["Left"]);
    term.wait("back at the root", |s| s.contains("(removed here: 1,"));
    // Three levels down the new file is new.
    let mut at = new.clone();
    for d in ["a", "b", "c"] {
        term.select(&format!("/{d}"));
        term.keys(&["Enter"]);
        at = at.join(d);
        term.wait_for(&format!("{} ", at.display()));
    }
    assert!(term.row("big").contains(" new "), "{}", term.screen());
    assert!(term.row("f0").contains(" = "), "{}", term.screen());
    term.keys(&["q"]);
    term.wait_for("EXIT=0");
    drop(term);

    // OLD as an export on standard input.
    let export = scratch.dir.join("old.json");
    let out = Command::new(env!("CARGO_BIN_EXE_dfdu")).args(["scan", "-q", "-o"]).arg(&export).arg(&old).output();
    assert!(out.unwrap().status.success());
    let prefix = format!("cat '{}' |", export.display());
    let term = Term::start(&scratch.dir, &prefix, &format!("--diff - '{}'", new.display()), 110, 30);
    let s = term.wait_for(&format!("(removed here: 1, {minus}{})", human(gone)));
    assert!(term.row("/a").contains(&format!(" +{} ", human(a_up))), "{s}");
    term.keys(&["q"]);
    term.wait_for("EXIT=0");
}

/// Issue 29.7 in a real terminal: keys that cannot act answer on the status line, the
/// path line shows `.` as the absolute path, and the help fits 60 columns.
#[test]
fn silent_keys_are_answered_and_the_help_fits_60_columns() {
    if !have_tmux() {
        return;
    }
    let scratch = Scratch::new("silent");
    let t = scratch.dir.clone();
    let tree = t.join("tree");
    sample(&tree);
    let term = Term::start(&t, &format!("cd '{}' &&", tree.display()), ".", 60, 24);
    let s = term.wait_for("Scan finished");
    let abs = std::fs::canonicalize(&tree).unwrap();
    assert!(s.lines().nth(1).unwrap().contains(&format!(" {} ", abs.display())), "the absolute path:\n{s}");
    for (key, why) in [
        ("x", "that needs --shared"),
        ("D", "it needs --diff OLD"),
        ("Left", "This is the top"),
        ("Z", "Z does nothing here"),
    ] {
        term.keys(&[key]);
        term.wait_for(why);
    }
    term.select("delta.txt");
    term.keys(&["Enter"]);
    term.wait_for("delta.txt is not a directory");
    term.keys(&["?"]);
    let s = term.wait_for("dfdu help");
    assert!(!s.contains("..."), "nothing cut at 60 columns:\n{s}");
    assert!(s.contains("sort by change"), "{s}");
    term.keys(&["q", "q"]);
    term.wait_for("EXIT=0");
    drop(term);
    std::fs::remove_dir_all(&t).unwrap();
}

/// Issue 29.1: three marks across two directories, one confirmation, and exactly those
/// are gone; what stays has the `du -sB1` it had, and the footer is `du`'s figure.
#[test]
fn marks_across_two_directories_are_deleted_and_nothing_else() {
    if !have_tmux() {
        return;
    }
    let scratch = Scratch::new("marks");
    let t = scratch.dir.clone();
    let tree = t.join("tree");
    sample(&tree);
    let kept = ["alpha/deep", "gamma", "日本語の名前.txt"];
    let du_sb1 = |p: &Path| {
        let out = Command::new("du").arg("-sB1").arg(p).output().expect("du runs");
        String::from_utf8_lossy(&out.stdout).split_whitespace().next().unwrap_or_default().to_string()
    };
    let du_before: Vec<String> = kept.iter().map(|k| du_sb1(&tree.join(k))).collect();
    let before = listing(&tree);
    let term = Term::start(&t, "", &format!("'{}'", tree.display()), 100, 30);
    term.wait_for("Scan finished");
    term.select("/beta");
    term.keys(&["Space"]);
    term.wait_for("Marked: 1 ");
    term.select("delta.txt");
    term.keys(&["Space"]);
    term.wait_for("Marked: 2 ");
    term.select("/alpha");
    term.keys(&["Enter"]);
    term.wait_for(&format!("{}/alpha ", tree.display()));
    term.select("one.bin");
    term.keys(&["Space"]);
    let s = term.wait_for("Marked: 3 ");
    assert!(s.contains("+ one.bin"), "the marked row says so:\n{s}");
    term.keys(&["d"]);
    let s = term.wait_for("Delete 3 marked entries");
    for p in ["beta", "delta.txt", "alpha/one.bin"] {
        assert!(s.contains(&format!("{}/{p}", tree.display())), "{p} is listed:\n{s}");
    }
    term.keys(&["Enter"]);
    term.wait("No, the default", |s| !s.contains("Confirm delete"));
    assert_eq!(listing(&tree), before, "No deletes nothing");
    term.keys(&["d"]);
    term.wait_for("Delete 3 marked entries");
    term.keys(&["y"]);
    let s = term.wait_for("Deleted 3 marked entries");
    assert!(!s.contains("could not") && !s.contains("Marked:"), "{s}");
    let gone: BTreeSet<String> = ["beta/", "beta/a", "beta/b/", "beta/b/c", "delta.txt", "alpha/one.bin"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    assert_eq!(listing(&tree), before.difference(&gone).cloned().collect(), "exactly the marks are gone");
    let du_after: Vec<String> = kept.iter().map(|k| du_sb1(&tree.join(k))).collect();
    assert_eq!(du_after, du_before, "what was not marked is unchanged");
    term.keys(&["Left"]);
    let (disk, _, items) = du_figures(&tree);
    let want = format!("Total disk usage: {}  Apparent size", human(disk));
    let s = term.wait_for(&want);
    assert!(s.contains(&format!("Items: {}", grouped(items))), "the footer is du's:\n{s}");
    term.keys(&["q"]);
    term.wait_for("EXIT=0");
    drop(term);
    std::fs::remove_dir_all(&t).unwrap();
}

/// Issue 29.3 in a real terminal: `/` filters as keys are typed, Esc clears it; `f`
/// finds across the tree, largest first, and Enter goes there.
#[test]
fn filter_and_find() {
    if !have_tmux() {
        return;
    }
    let scratch = Scratch::new("find");
    let t = scratch.dir.clone();
    let tree = t.join("tree");
    sample(&tree);
    let term = Term::start(&t, "", &format!("'{}'", tree.display()), 100, 30);
    term.wait_for("Scan finished");
    term.keys(&["/", "t", "a"]);
    term.wait_for("(filter ta: 2 of 5)");
    assert_eq!(term.names(), ["/beta", "delta.txt"]);
    term.keys(&["Escape"]);
    term.wait("the filter cleared", |s| !s.contains("(filter"));
    assert_eq!(term.names().len(), 5);
    term.keys(&["f", "*", "o", "*", "Enter"]);
    let s = term.wait_for("Find *o*: 2 found, largest first");
    let one = s.find("/alpha/one.bin").unwrap_or_else(|| panic!("{s}"));
    let two = s.find("/alpha/deep/er/two.bin").unwrap_or_else(|| panic!("{s}"));
    assert!(one < two, "largest first:\n{s}");
    term.keys(&["Down", "Enter"]);
    term.wait_for(&format!("{}/alpha/deep/er ", tree.display()));
    assert_eq!(term.names(), ["two.bin"]);
    term.keys(&["q"]);
    term.wait_for("EXIT=0");
    drop(term);
    std::fs::remove_dir_all(&t).unwrap();
}

/// Issue 29.5 in a real terminal: the count and mtime columns, apparent/disk and the
/// percentage, and the `i` box's mode, owner and group as `stat` gives them.
#[test]
fn columns_and_the_info_box() {
    if !have_tmux() {
        return;
    }
    let scratch = Scratch::new("columns");
    let t = scratch.dir.clone();
    let tree = t.join("tree");
    sample(&tree);
    let stat = |p: &Path, fmt: &str| {
        let out = Command::new("stat").args(["-c", fmt]).arg(p).output().expect("stat runs");
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    };
    let term = Term::start(&t, "", &format!("'{}'", tree.display()), 100, 30);
    term.wait_for("Scan finished");
    term.keys(&["c"]);
    // alpha holds one.bin, deep, deep/er and er/two.bin.
    term.wait("the count column", |s| s.lines().any(|l| l.trim_end().ends_with("4 /alpha")));
    term.keys(&["m"]);
    let when = stat(&tree.join("delta.txt"), "%y");
    let when = &when[..16];
    term.wait(&format!("delta.txt's mtime {when}"), |s| {
        s.lines().any(|l| l.contains(when) && l.ends_with("delta.txt"))
    });
    term.keys(&["g", "g"]);
    term.wait("a percentage and the bar", |s| s.lines().any(|l| l.contains("% [") && l.trim_end().ends_with("/alpha")));
    term.keys(&["a"]);
    term.wait_for(" Apparent size:");
    term.select("delta.txt");
    term.keys(&["i"]);
    let s = term.wait_for("Mode:");
    let (mode, owner, group) = (
        stat(&tree.join("delta.txt"), "%A"),
        stat(&tree.join("delta.txt"), "%U (%u)"),
        stat(&tree.join("delta.txt"), "%G (%g)"),
    );
    assert!(s.contains(&format!("Mode:      {mode} (")), "{mode}:\n{s}");
    assert!(s.contains(&format!("Owner:     {owner}   Group: {group}")), "{owner} {group}:\n{s}");
    term.keys(&["q"]);
    term.wait_for("EXIT=0");
    drop(term);
    std::fs::remove_dir_all(&t).unwrap();
}

/// Issue 29.4 in a real terminal: `--exclude-caches` shows a tagged directory as
/// excluded, and `e` hides dotfiles and excluded entries (and shows them again).
#[test]
fn hidden_and_excluded_entries_toggle() {
    if !have_tmux() {
        return;
    }
    let scratch = Scratch::new("hidden");
    let t = scratch.dir.clone();
    let tree = t.join("tree");
    sample(&tree);
    write(&tree.join(".dotfile"), 5_000);
    write(&tree.join(".dotdir/inside"), 6_000);
    write(&tree.join("cache/blob"), 70_000);
    std::fs::write(tree.join("cache/CACHEDIR.TAG"), b"Signature: 8a477f597d28d172789f06886806bc55\n").unwrap();
    let term = Term::start(&t, "", &format!("--exclude-caches '{}'", tree.display()), 100, 30);
    term.wait_for("Scan finished");
    let row = term.row("/cache");
    assert!(row.starts_with('<'), "the tagged directory is excluded: {row:?}\n{}", term.screen());
    assert_eq!(term.names().len(), 8);
    term.keys(&["e"]);
    term.wait_for("(3 hidden)");
    assert_eq!(term.names(), ["/alpha", "/beta", "/gamma", "日本語の名前.txt", "delta.txt"]);
    term.keys(&["e"]);
    term.wait("shown again", |s| !s.contains("hidden)") && s.contains(".dotfile"));
    assert_eq!(term.names().len(), 8);
    term.keys(&["q"]);
    term.wait_for("EXIT=0");
    drop(term);
    std::fs::remove_dir_all(&t).unwrap();
}

/// A `.trashinfo` file's text: its `Path=` (percent-decoded) and whether it has the
/// specification's header and a `DeletionDate` of the form `YYYY-MM-DDThh:mm:ss`.
fn trash_info(path: &Path) -> (String, bool) {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut lines = text.lines();
    let header = lines.next() == Some("[Trash Info]");
    let (mut at, mut date_ok) = (String::new(), false);
    for l in lines {
        if let Some(p) = l.strip_prefix("Path=") {
            let mut bytes = Vec::new();
            let raw = p.as_bytes();
            let mut i = 0;
            while i < raw.len() {
                if raw[i] == b'%' && i + 2 < raw.len() + 1 {
                    bytes.push(u8::from_str_radix(&p[i + 1..i + 3], 16).unwrap());
                    i += 3;
                } else {
                    bytes.push(raw[i]);
                    i += 1;
                }
            }
            at = String::from_utf8(bytes).unwrap();
        }
        if let Some(d) = l.strip_prefix("DeletionDate=") {
            let b = d.as_bytes();
            date_ok = b.len() == 19 && b[4] == b'-' && b[7] == b'-' && b[10] == b'T' && b[13] == b':' && b[16] == b':';
        }
    }
    (at, header && date_ok)
}

/// Issue 29.2: two marked entries go to the trash by `T`: gone from the tree and the
/// listing, found in `$XDG_DATA_HOME/Trash/files` with `.trashinfo` files a desktop can
/// restore from (the original path, percent-encoded; the date); with `--trash`, `d` does
/// the same.
#[test]
fn trash_two_entries_with_valid_trashinfo() {
    if !have_tmux() {
        return;
    }
    let scratch = Scratch::new("trash");
    let t = scratch.dir.clone();
    let tree = t.join("tree");
    sample(&tree);
    let xdg = t.join("xdg");
    let term =
        Term::start(&t, &format!("XDG_DATA_HOME='{}'", xdg.display()), &format!("'{}'", tree.display()), 100, 30);
    term.wait_for("Scan finished");
    let before = listing(&tree);
    term.select("/beta");
    term.keys(&["Space"]);
    term.select("日本語の名前.txt");
    term.keys(&["Space"]);
    term.wait_for("Marked: 2 ");
    term.keys(&["T"]);
    let s = term.wait_for("Confirm move to the trash");
    assert!(s.contains("Move to the trash 2 marked entries"), "{s}");
    term.keys(&["y"]);
    let s = term.wait_for("Moved to the trash 2 marked entries");
    assert!(!s.contains("could not") && !s.contains("/beta"), "{s}");
    let gone: BTreeSet<String> =
        ["beta/", "beta/a", "beta/b/", "beta/b/c", "日本語の名前.txt"].iter().map(|s| s.to_string()).collect();
    assert_eq!(listing(&tree), before.difference(&gone).cloned().collect(), "exactly the two left the tree");
    let trash = xdg.join("Trash");
    assert_eq!(std::fs::read(trash.join("files/beta/a")).unwrap().len(), 120_000, "moved whole");
    assert!(trash.join("files/日本語の名前.txt").is_file());
    for name in ["beta", "日本語の名前.txt"] {
        let (at, ok) = trash_info(&trash.join(format!("info/{name}.trashinfo")));
        assert!(ok, "{name}: header and date");
        assert_eq!(Path::new(&at), tree.join(name), "{name}: the original path");
    }
    term.keys(&["q"]);
    term.wait_for("EXIT=0");
    drop(term);

    // --trash: d moves to the trash too; a second entry of the same name gets NAME.2.
    write(&tree.join("beta"), 500);
    let term = Term::start(
        &t,
        &format!("XDG_DATA_HOME='{}'", xdg.display()),
        &format!("--trash '{}'", tree.display()),
        100,
        30,
    );
    term.wait_for("Scan finished");
    term.select("beta");
    term.keys(&["d"]);
    term.wait_for("Confirm move to the trash");
    term.keys(&["y"]);
    term.wait_for("Moved to the trash");
    assert!(!tree.join("beta").exists() && trash.join("files/beta.2").is_file());
    let (at, ok) = trash_info(&trash.join("info/beta.2.trashinfo"));
    assert!(ok && Path::new(&at) == tree.join("beta"), "{at}");
    term.keys(&["q"]);
    term.wait_for("EXIT=0");
    drop(term);
    std::fs::remove_dir_all(&t).unwrap();
}

/// Issue 29.6: `b` opens `$SHELL` in the selected directory with `DFDU_LEVEL=1`; what the
/// shell changed is rescanned when it exits, and the browser is back.
#[test]
fn b_opens_a_shell_and_rescans_on_return() {
    if !have_tmux() {
        return;
    }
    let scratch = Scratch::new("shell");
    let t = scratch.dir.clone();
    let tree = t.join("tree");
    sample(&tree);
    let term = Term::start(&t, "SHELL=/bin/sh PS1='shell> '", &format!("'{}'", tree.display()), 100, 30);
    term.wait_for("Scan finished");
    term.select("/gamma");
    term.keys(&["b"]);
    term.wait_for("shell>");
    term.keys(&["echo \"LEVEL=$DFDU_LEVEL AT=$(pwd)\"", "Enter"]);
    term.wait_for(&format!("LEVEL=1 AT={}", tree.join("gamma").display()));
    // A Ctrl-C typed in the shell does not end the browser (the shell takes the
    // terminal's foreground; one that did not would pass it on, and dfdu ignores it).
    term.keys(&["C-c"]);
    std::thread::sleep(std::time::Duration::from_millis(200));
    term.keys(&["head -c 2000000 /dev/urandom > new.bin; exit", "Enter"]);
    let s = term.wait_for("Rescanned");
    assert!(s.contains("dfdu"), "the browser is back:\n{s}");
    term.wait("gamma is the largest now", |s| s.find("/gamma") < s.find("/alpha"));
    term.keys(&["q"]);
    term.wait_for("EXIT=0");
    drop(term);
    std::fs::remove_dir_all(&t).unwrap();
}

/// Issue 29.8: `$XDG_CONFIG_HOME/dfdu/config` gives browse and scan default options (its
/// `[browse]` lines only to browse); `--ignore-config` reads none; a config file others
/// may write is not read, and stderr says so.
#[test]
fn the_config_file_is_read_and_ignored_with_ignore_config() {
    if !have_tmux() {
        return;
    }
    let scratch = Scratch::new("config");
    let t = scratch.dir.clone();
    let tree = t.join("tree");
    sample(&tree);
    let cfg = t.join("cfg");
    let file = cfg.join("dfdu/config");
    std::fs::create_dir_all(file.parent().unwrap()).unwrap();
    std::fs::write(&file, "# defaults\n[browse]\n--read-only\n--apparent-size\n[scan]\n-b\n").unwrap();
    let env = format!("XDG_CONFIG_HOME='{}'", cfg.display());
    let term = Term::start(&t, &env, &format!("'{}'", tree.display()), 100, 30);
    let s = term.wait_for("Scan finished");
    assert!(s.contains("[read-only]") && s.contains(" Apparent size:"), "the [browse] lines apply:\n{s}");
    term.keys(&["q"]);
    term.wait_for("EXIT=0");
    drop(term);
    let term = Term::start(&t, &env, &format!("--ignore-config '{}'", tree.display()), 100, 30);
    let s = term.wait_for("Scan finished");
    assert!(!s.contains("[read-only]") && s.contains(" Total disk usage:"), "--ignore-config:\n{s}");
    term.keys(&["q"]);
    term.wait_for("EXIT=0");
    drop(term);

    // scan takes the [scan] lines: sizes in bytes.
    let scan = |extra: &[&str]| {
        let out = Command::new(env!("CARGO_BIN_EXE_dfdu"))
            .arg("scan")
            .args(extra)
            .arg(&tree)
            .env("XDG_CONFIG_HOME", &cfg)
            .output()
            .unwrap();
        (String::from_utf8_lossy(&out.stdout).into_owned(), String::from_utf8_lossy(&out.stderr).into_owned())
    };
    let bytes_line =
        |out: &str| out.lines().find(|l| l.trim_start().starts_with("disk usage")).unwrap_or("").to_string();
    let (out, _) = scan(&[]);
    assert!(bytes_line(&out).trim_end().ends_with(|c: char| c.is_ascii_digit()), "-b from the config: {out}");
    let (out, _) = scan(&["--ignore-config"]);
    assert!(bytes_line(&out).trim_end().ends_with(['K', 'M']), "human sizes without it: {out}");
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o666)).unwrap();
    let (out, err) = scan(&[]);
    assert!(err.contains(&format!("not reading {}: it is writable by others (mode 0666)", file.display())), "{err}");
    assert!(bytes_line(&out).trim_end().ends_with(['K', 'M']), "an untrusted config is not read: {out}");
    std::fs::remove_dir_all(&t).unwrap();
}
