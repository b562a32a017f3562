//! The command-line frame every subcommand shares (issue 26): `--help` and `--version`
//! answered on standard output by each of them, a write error on either reported as
//! `dfdu scan` reports it (GNU's `close_stdout`: "PROG CMD: write error: REASON", exit
//! status 1), and the size options of `scan` and `diff` (`-k`, `-m`, `-B`) printing what
//! GNU du prints for the same tree. (The reports' own write errors: tests/diff.rs,
//! tests/dupes.rs, tests/scan_output.rs.)

mod common;

use common::{build, dfdu_path, Scratch};
use std::fs;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Command, Output, Stdio};

/// A command as the user types it: the subcommand's words (none for du mode, which is
/// dfdu run under the name `du`).
#[derive(Clone, Copy)]
struct Sub {
    words: &'static [&'static str],
    /// The message prefix after PROG: " scan", or "" for du mode.
    prefix: &'static str,
}

const SUBS: &[Sub] = &[
    Sub { words: &["scan"], prefix: " scan" },
    Sub { words: &["browse"], prefix: " browse" },
    Sub { words: &["diff"], prefix: " diff" },
    Sub { words: &["dupes"], prefix: " dupes" },
    Sub { words: &["dedupe"], prefix: " dedupe" },
    Sub { words: &[], prefix: "" },
];

/// Runs `sub` with `args`, standard output into `stdout` (a pipe when `None`); du mode
/// runs with argv[0] "du", so its messages start "du:".
fn run(sub: Sub, args: &[&str], stdout: Option<Stdio>, env: &[(&str, &str)]) -> Output {
    let mut cmd = Command::new(dfdu_path());
    if sub.words.is_empty() {
        cmd.arg0("du");
    }
    cmd.args(sub.words).args(args).envs(env.iter().copied()).env("LC_ALL", "C");
    cmd.stdin(Stdio::null()).stderr(Stdio::piped()).stdout(stdout.unwrap_or_else(Stdio::piped));
    cmd.output().unwrap_or_else(|e| panic!("dfdu {:?} {args:?}: {e}", sub.words))
}

fn prog(sub: Sub) -> String {
    if sub.words.is_empty() {
        "du".to_string()
    } else {
        dfdu_path().display().to_string()
    }
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn dev_full() -> Stdio {
    Stdio::from(fs::OpenOptions::new().write(true).open("/dev/full").expect("open /dev/full"))
}

/// Every subcommand answers `--help` (its usage first) and `--version` (dfdu's) on
/// standard output with status 0 and nothing on standard error, also after other options.
/// Before the one frame, `diff`, `dupes` and `dedupe` had no `--version` (refused with
/// status 2).
#[test]
fn every_subcommand_answers_help_and_version_on_stdout() {
    for &sub in SUBS {
        for args in [&["--help"][..], &["-x", "--help"], &["--version"], &["-x", "--version"]] {
            let out = run(sub, args, None, &[]);
            let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
            let what = format!("dfdu {:?} {args:?}", sub.words);
            assert_eq!((out.status.code(), stderr.as_str()), (Some(0), ""), "{what}");
            if args.contains(&"--help") {
                let usage = format!(
                    "Usage: {} ",
                    if sub.words.is_empty() { "du".into() } else { format!("dfdu {}", sub.words[0]) }
                );
                assert!(stdout.starts_with(&usage), "{what}:\n{stdout}");
                assert!(stdout.contains("--version"), "{what}: the help names --version:\n{stdout}");
            } else {
                assert!(stdout.starts_with("dfdu ") && stdout.ends_with('\n'), "{what}: {stdout}");
                assert_eq!(stdout.lines().count(), 1, "{what}: {stdout}");
            }
        }
    }
}

/// `--help` and `--version` into a full device: "PROG CMD: write error: No space left on
/// device" and status 1, for every subcommand (du mode says it as GNU du does). `diff`,
/// `dupes` and `dedupe` printed their help with `print!`, which panicked (status 101).
#[test]
fn every_subcommand_reports_a_help_or_version_write_error() {
    for &sub in SUBS {
        for flag in ["--help", "--version"] {
            let out = run(sub, &[flag], Some(dev_full()), &[]);
            let want = format!("{}{}: write error: No space left on device\n", prog(sub), sub.prefix);
            assert_eq!(
                (out.status.code(), text(&out.stderr)),
                (Some(1), want),
                "dfdu {:?} {flag} >/dev/full",
                sub.words
            );
        }
    }
}

/// The figure after `label` in `dfdu scan`'s report ("  disk usage     12K").
fn scan_figure(report: &str, label: &str) -> String {
    let line =
        report.lines().find(|l| l.trim_start().starts_with(label)).unwrap_or_else(|| panic!("{label}:\n{report}"));
    line.trim_start()[label.len()..].split_whitespace().next().unwrap_or("").to_string()
}

/// GNU du's total for `root` with `unit_args`.
fn du_total(root: &Path, unit_args: &[&str]) -> String {
    let out = Command::new("du").args(["-s"]).args(unit_args).arg(root).env("LC_ALL", "C").output().expect("run du");
    assert!(out.status.success(), "du {unit_args:?}: {}", text(&out.stderr));
    text(&out.stdout).split('\t').next().unwrap_or("").to_string()
}

/// `-k`, `-m` and `-B SIZE` in `scan` and `diff` print the tree's disk usage as GNU du
/// prints it with the same option (units rounded up, the letter shown when SIZE has
/// none of digits), and the last unit option given wins, as in du.
#[test]
fn scan_and_diff_size_units_print_what_du_prints() {
    let scratch = Scratch::new("cli-units");
    let root = scratch.subdir("tree");
    build(&root, &["f a 100", "f b 70000", "f c/d 3000000", "f c/e 5"]);
    let cases: &[&[&str]] =
        &[&["-k"], &["-m"], &["-B", "4K"], &["-BM"], &["--block-size=KB"], &["--si", "-k"], &["-m", "-B", "1"]];
    for unit in cases {
        let want = du_total(&root, unit);
        let scan = run(SUBS[0], &[&["-q"][..], unit, &[root.to_str().unwrap()]].concat(), None, &[]);
        assert!(scan.status.success(), "scan {unit:?}: {}", text(&scan.stderr));
        assert_eq!(scan_figure(&text(&scan.stdout), "disk usage"), want, "scan {unit:?} against du");
        let empty = scratch.subdir(&format!("empty{}", unit.join("")));
        let sides = [empty.to_str().unwrap(), root.to_str().unwrap()];
        let diff = run(SUBS[2], &[unit, &sides[..]].concat(), None, &[]);
        assert!(diff.status.success(), "diff {unit:?}: {}", text(&diff.stderr));
        let report = text(&diff.stdout);
        assert_eq!(scan_figure(&report, "new"), want, "diff {unit:?} against du:\n{report}");
    }
    let bad = run(SUBS[0], &["-B", "0", root.to_str().unwrap()], None, &[]);
    let want = format!("{} scan: invalid --block-size value '0'\n", prog(SUBS[0]));
    assert_eq!(bad.status.code(), Some(2));
    assert!(text(&bad.stderr).starts_with(&want), "{}", text(&bad.stderr));
}

/// Thread counts run from 1 to 1024, in `-j` and `DFDU_THREADS` alike, for du mode and
/// the subcommands (the help texts say so; 1025 and 0 are refused with status 2, du's
/// with status 1 as GNU's usage errors).
#[test]
fn thread_counts_run_from_1_to_1024() {
    let scratch = Scratch::new("cli-threads");
    let root = scratch.subdir("tree");
    build(&root, &["f a 100"]);
    let root = root.to_str().unwrap();
    for (sub, args) in [(SUBS[0], vec!["-q", root]), (SUBS[3], vec!["-q", root]), (SUBS[5], vec!["-s", root])] {
        let refused = if sub.words.is_empty() { 1 } else { 2 };
        for (n, want) in [("1", 0), ("1024", 0), ("0", refused), ("1025", refused)] {
            let what = format!("dfdu {:?} -j {n}", sub.words);
            let out = run(sub, &[&["-j", n][..], &args].concat(), None, &[]);
            assert_eq!(out.status.code(), Some(want), "{what}: {}", text(&out.stderr));
            let out = run(sub, &args, None, &[("DFDU_THREADS", n)]);
            assert_eq!(out.status.code(), Some(want), "DFDU_THREADS={n} {what}: {}", text(&out.stderr));
        }
    }
}

/// `dfdu floor` (the benchmark's walker) into a full device says so and exits 1; its
/// `println!` panicked (status 101).
#[test]
fn floor_reports_a_write_error() {
    let scratch = Scratch::new("cli-floor-full");
    let root = scratch.subdir("tree");
    let sub = Sub { words: &["floor"], prefix: " floor" };
    let out = run(sub, &[root.to_str().unwrap()], Some(dev_full()), &[]);
    let want = format!("{} floor: write error: No space left on device\n", prog(sub));
    assert_eq!((out.status.code(), text(&out.stderr)), (Some(1), want));
    // An empty directory: the root is one entry, its own blocks left out (see the benchmark).
    let out = run(sub, &[root.to_str().unwrap()], None, &[]);
    assert_eq!(
        (out.status.code(), text(&out.stdout)),
        (Some(0), "0\t1 entries\n".to_string()),
        "{}",
        text(&out.stderr)
    );
}

/// An option from a config file that the command does not take is refused with the
/// file and the line it is on (before, the message did not say it came from a config
/// file at all); one typed on the command line is refused as before, without either.
#[test]
fn a_config_option_the_command_does_not_take_names_its_file_and_line() {
    let scratch = Scratch::new("cli-config-line");
    let tree = scratch.subdir("tree");
    build(&tree, &["f a 100"]);
    let cfg = scratch.subdir("cfg");
    let file = cfg.join("dfdu/config");
    fs::create_dir_all(file.parent().unwrap()).unwrap();
    // `--read-only` is browse's: in [all], scan is given it too.
    fs::write(&file, "# defaults\n-b\n\n--read-only\n").unwrap();
    let env = [("XDG_CONFIG_HOME", cfg.to_str().unwrap())];
    let out = run(SUBS[0], &["-q", tree.to_str().unwrap()], None, &env);
    let want = format!("invalid option '--read-only' (in {}, line 4)\n", file.display());
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    assert!(text(&out.stderr).contains(&want), "{}", text(&out.stderr));
    // A value the command refuses names its line as well.
    fs::write(&file, "[scan]\n--top\nmany\n").unwrap();
    let out = run(SUBS[0], &["-q", tree.to_str().unwrap()], None, &env);
    assert!(text(&out.stderr).contains(&format!(" (in {}, line 3)\n", file.display())), "{}", text(&out.stderr));
    // The command line's own mistakes are not blamed on the config file.
    fs::write(&file, "-b\n").unwrap();
    let out = run(SUBS[0], &["--bogus", tree.to_str().unwrap()], None, &env);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    assert!(text(&out.stderr).contains("invalid option '--bogus'\n"), "{}", text(&out.stderr));
    // `--ignore-config` leaves the line unread.
    fs::write(&file, "--read-only\n").unwrap();
    let out = run(SUBS[0], &["--ignore-config", "-q", tree.to_str().unwrap()], None, &env);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
}

/// A config file that is a symbolic link is not followed, and standard error says so
/// (it was skipped without a word, as if there were none).
#[test]
fn a_config_file_that_is_a_symlink_is_not_read_and_said_so() {
    let scratch = Scratch::new("cli-config-symlink");
    let tree = scratch.subdir("tree");
    build(&tree, &["f a 100"]);
    let cfg = scratch.subdir("cfg");
    fs::create_dir_all(cfg.join("dfdu")).unwrap();
    fs::write(cfg.join("real"), "--bogus\n").unwrap();
    std::os::unix::fs::symlink(cfg.join("real"), cfg.join("dfdu/config")).unwrap();
    let out = run(SUBS[0], &["-q", tree.to_str().unwrap()], None, &[("XDG_CONFIG_HOME", cfg.to_str().unwrap())]);
    let want = format!("not reading {}: it is a symbolic link (not followed)\n", cfg.join("dfdu/config").display());
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(text(&out.stderr).contains(&want), "{}", text(&out.stderr));
}
