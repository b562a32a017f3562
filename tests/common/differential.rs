//! The differential harness behind `tests/du_compat.rs`: build a tree, run the system `du` and
//! dfdu on it with the same arguments, environment, working directory and standard input, and
//! compare standard output, standard error and exit status byte for byte.
//!
//! Protocol for one test:
//!
//! 1. `Scratch::new(label)` makes a fresh directory under `std::env::temp_dir()`; dropping it
//!    unmounts what the test mounted and removes everything (deep and `chmod 000` trees too).
//! 2. `build(root, lines)` lays the tree out from one-line entries (the grammar is on `build`).
//! 3. `Checker::run(root, cases)` runs every case, the expected tool first and then the actual
//!    one, and keeps each difference as readable text; `Checker::finish` prints the number of
//!    cases to the real standard error (visible without `--nocapture`) and panics with every
//!    difference at once, so one run shows them all.
//!
//! Nothing here knows about du options: the cases are data in `du_compat.rs`. Both tools get
//! `argv[0] == "du"`, an empty environment plus `LC_ALL=C` and `TZ=UTC`, and whatever the case
//! adds or removes on top. `DFDU_UNDER_TEST=/usr/bin/du` swaps the binary under test, which is
//! how the tables themselves are checked to be deterministic (du against du must always pass).
//!
//! `DU_COMPAT_SHOW=1` (with `--nocapture`) prints every case with what the system du did.
//!
//! Strings in cases and trees are split into words by `words`, a small shell-like splitter, so
//! that a case stays one line even when it needs spaces, newlines or invalid UTF-8 bytes.

use super::bin::{dfdu_path, notice, SYSTEM_DU};
use super::words::{escape, show_word, words};
use std::ffi::OsString;
use std::fmt::Write as _;
use std::fs;
use std::io::{Read, Write};
use std::os::unix::fs::symlink;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant};

/// A case that runs longer than this is killed and reported (a hang is a difference too).
const RUN_TIMEOUT: Duration = Duration::from_secs(60);

/// The most differences spelled out in full in the final panic message; the rest are listed
/// one line each.
const MAX_FULL_REPORTS: usize = 40;

/// The most differing lines shown for one stream of one case.
const MAX_DIFF_LINES: usize = 24;

// ---------------------------------------------------------------------------------------------
// Cases.

/// One row of a table: the arguments and whatever else the run needs.
#[derive(Clone, Debug)]
pub struct Case {
    pub args: Vec<OsString>,
    /// Settings on top of the base environment; `None` removes the variable.
    pub env: Vec<(OsString, Option<OsString>)>,
    /// Working directory relative to the tree root (the root when `None`).
    pub cwd: Option<PathBuf>,
    /// Bytes fed to standard input; standard input is `/dev/null` when `None`.
    pub stdin: Option<Vec<u8>>,
    /// Standard error goes where standard output goes (`2>&1`, one file): then `stdout`
    /// holds both, in the order they were written.
    pub merged: bool,
}

/// A case from one line of arguments (split by `words`).
pub fn case(args: &str) -> Case {
    Case { args: words(args), env: Vec::new(), cwd: None, stdin: None, merged: false }
}

/// One case per line.
pub fn cases(lines: &[&str]) -> Vec<Case> {
    lines.iter().map(|line| case(line)).collect()
}

/// One case per line, each with the same environment settings.
pub fn cases_env(settings: &[&str], lines: &[&str]) -> Vec<Case> {
    lines.iter().map(|line| settings.iter().fold(case(line), |c, s| c.env(s))).collect()
}

impl Case {
    /// Adds `NAME=VALUE` (the value is split by `words` and must be one word, so it may use
    /// quotes and escapes) or removes the variable with `-NAME`.
    pub fn env(mut self, setting: &str) -> Case {
        if let Some(name) = setting.strip_prefix('-') {
            self.env.push((name.into(), None));
            return self;
        }
        let (name, value) = setting.split_once('=').expect("env setting is NAME=VALUE or -NAME");
        let mut value_words = words(value);
        let value = match value_words.len() {
            0 => OsString::new(),
            1 => value_words.remove(0),
            _ => panic!("env value {value:?} must be one word (quote it)"),
        };
        self.env.push((name.into(), Some(value)));
        self
    }

    /// Runs the case in `dir`, relative to the tree root.
    pub fn cwd(mut self, dir: &str) -> Case {
        self.cwd = Some(PathBuf::from(dir));
        self
    }

    /// Feeds `bytes` to standard input.
    pub fn stdin(mut self, bytes: &[u8]) -> Case {
        self.stdin = Some(bytes.to_vec());
        self
    }

    /// Runs with standard error sent to standard output (`2>&1`).
    pub fn merged(mut self) -> Case {
        self.merged = true;
        self
    }

    /// The case as one line: `[cwd: DIR] NAME=VALUE du ARGS [stdin: BYTES]`.
    pub fn show(&self) -> String {
        let mut out = String::new();
        if let Some(dir) = &self.cwd {
            let _ = write!(out, "(cd {} &&) ", show_word(dir.as_os_str()));
        }
        for (name, value) in &self.env {
            match value {
                Some(v) => {
                    let _ = write!(out, "{}={} ", name.to_string_lossy(), show_word(v));
                }
                None => {
                    let _ = write!(out, "(unset {}) ", name.to_string_lossy());
                }
            }
        }
        out.push_str("du");
        for arg in &self.args {
            out.push(' ');
            out.push_str(&show_word(arg));
        }
        if self.merged {
            out.push_str(" 2>&1");
        }
        if let Some(bytes) = &self.stdin {
            let _ = write!(out, "  <<< \"{}\"", escape(bytes));
        }
        out
    }
}

// ---------------------------------------------------------------------------------------------
// Tools: how one side of the comparison is started.

/// How to start one of the two programs being compared.
#[derive(Clone, Debug)]
pub struct Tool {
    pub program: PathBuf,
    /// `argv[0]`; the program path when `None`.
    pub arg0: Option<OsString>,
    /// Settings applied after the base environment and before the case's own.
    pub env: Vec<(OsString, OsString)>,
    /// `(link, target)`: make `link` a symlink to `target` before every run, so that two tools
    /// can be started through the very same path.
    pub relink: Option<(PathBuf, PathBuf)>,
    /// Run as this user and group id (supplementary groups dropped).
    pub uid: Option<u32>,
}

impl Tool {
    /// `program` started with `argv[0] == "du"`.
    pub fn as_du(program: impl Into<PathBuf>) -> Tool {
        Tool { program: program.into(), arg0: Some("du".into()), env: Vec::new(), relink: None, uid: None }
    }

    pub fn system_du() -> Tool {
        Tool::as_du(SYSTEM_DU)
    }

    pub fn dfdu() -> Tool {
        Tool::as_du(dfdu_path())
    }

    pub fn with_uid(mut self, uid: u32) -> Tool {
        self.uid = Some(uid);
        self
    }
}

/// What one run produced.
struct Outcome {
    status: String,
    stdout: Vec<u8>,
    stderr: Vec<u8>,
}

fn describe(status: ExitStatus) -> String {
    match (status.code(), status.signal()) {
        (Some(code), _) => format!("exit {code}"),
        (None, Some(signal)) => format!("killed by signal {signal}"),
        (None, None) => format!("{status:?}"),
    }
}

/// Runs one case with one tool on the tree at `root`.
fn run_case(tool: &Tool, root: &Path, case: &Case) -> Outcome {
    if let Some((link, target)) = &tool.relink {
        let _ = fs::remove_file(link);
        symlink(target, link).expect("relink the tool symlink");
    }
    let mut cmd = Command::new(&tool.program);
    if let Some(arg0) = &tool.arg0 {
        cmd.arg0(arg0);
    }
    cmd.args(&case.args).env_clear().env("LC_ALL", "C").env("TZ", "UTC");
    for (name, value) in &tool.env {
        cmd.env(name, value);
    }
    for (name, value) in &case.env {
        match value {
            Some(v) => cmd.env(name, v),
            None => cmd.env_remove(name),
        };
    }
    cmd.current_dir(case.cwd.as_ref().map_or_else(|| root.to_path_buf(), |d| root.join(d)));
    if let Some(uid) = tool.uid {
        cmd.uid(uid).gid(uid);
    }
    let stdin = if case.stdin.is_some() { Stdio::piped() } else { Stdio::null() };
    cmd.stdin(stdin);
    // `2>&1` into a file rather than a pipe: both streams share one file offset, so the file
    // holds the writes in the order they were made.
    let merged_file = case.merged.then(|| {
        static N: AtomicUsize = AtomicUsize::new(0);
        let path = std::env::temp_dir().join(format!(
            "dfdu-merged-{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        ));
        let file = fs::File::create(&path).expect("create the 2>&1 file");
        cmd.stdout(Stdio::from(file.try_clone().expect("dup the 2>&1 file"))).stderr(Stdio::from(file));
        path
    });
    if merged_file.is_none() {
        cmd.stdout(Stdio::piped()).stderr(Stdio::piped());
    }
    let outcome = match cmd.spawn() {
        Ok(child) => collect(child, case.stdin.clone()),
        Err(e) => Outcome {
            status: format!("could not start {}: {e}", tool.program.display()),
            stdout: Vec::new(),
            stderr: Vec::new(),
        },
    };
    match merged_file {
        Some(path) => {
            let both = fs::read(&path).expect("read the 2>&1 file");
            let _ = fs::remove_file(&path);
            Outcome { stdout: both, ..outcome }
        }
        None => outcome,
    }
}

/// Feeds standard input and drains both output pipes on helper threads (so no pipe can fill
/// up and block the child), and kills the child if it outlives `RUN_TIMEOUT`.
fn collect(mut child: Child, stdin: Option<Vec<u8>>) -> Outcome {
    if let (Some(bytes), Some(mut pipe)) = (stdin, child.stdin.take()) {
        thread::spawn(move || {
            let _ = pipe.write_all(&bytes);
        });
    }
    let stdout = child.stdout.take().map(drain);
    let stderr = child.stderr.take().map(drain);
    let pid = child.id();
    let (tx, rx) = mpsc::channel();
    thread::spawn(move || {
        let _ = tx.send(child.wait());
    });
    let status = match rx.recv_timeout(RUN_TIMEOUT) {
        Ok(Ok(status)) => describe(status),
        Ok(Err(e)) => format!("wait failed: {e}"),
        Err(_) => {
            let _ = Command::new("kill").arg("-9").arg(pid.to_string()).status();
            let _ = rx.recv();
            format!("timed out after {} s and was killed", RUN_TIMEOUT.as_secs())
        }
    };
    let joined = |h: Option<thread::JoinHandle<Vec<u8>>>| h.map(|h| h.join().unwrap_or_default()).unwrap_or_default();
    Outcome { status, stdout: joined(stdout), stderr: joined(stderr) }
}

fn drain(mut pipe: impl Read + Send + 'static) -> thread::JoinHandle<Vec<u8>> {
    thread::spawn(move || {
        let mut bytes = Vec::new();
        let _ = pipe.read_to_end(&mut bytes);
        bytes
    })
}

// ---------------------------------------------------------------------------------------------
// The checker.

/// Runs cases with two tools and collects every difference.
pub struct Checker {
    label: String,
    expected: Tool,
    actual: Tool,
    n_cases: usize,
    failures: Vec<(String, String)>,
    started: Instant,
}

impl Checker {
    /// System du against dfdu, both as `du`.
    pub fn new(label: &str) -> Checker {
        Checker::with_tools(label, Tool::system_du(), Tool::dfdu())
    }

    pub fn with_tools(label: &str, expected: Tool, actual: Tool) -> Checker {
        Checker {
            label: label.to_string(),
            expected,
            actual,
            n_cases: 0,
            failures: Vec::new(),
            started: Instant::now(),
        }
    }

    /// Runs every case on the tree at `root`.
    pub fn run(&mut self, root: &Path, cases: &[Case]) {
        for case in cases {
            self.run_one(root, case);
        }
    }

    fn run_one(&mut self, root: &Path, case: &Case) {
        self.n_cases += 1;
        let want = run_case(&self.expected, root, case);
        let got = run_case(&self.actual, root, case);
        if std::env::var_os("DU_COMPAT_SHOW").is_some() {
            show_outcome(&self.label, case, &want);
        }
        if want.status == got.status && want.stdout == got.stdout && want.stderr == got.stderr {
            return;
        }
        let mut text = String::new();
        let _ = writeln!(text, "case:   {}", case.show());
        let _ = writeln!(text, "tree:   {} (in {})", self.label, root.display());
        if want.status == got.status {
            let _ = writeln!(text, "status: same ({})", want.status);
        } else {
            let _ = writeln!(text, "status: expected {}, got {}", want.status, got.status);
        }
        text.push_str(&diff("stdout", &want.stdout, &got.stdout));
        text.push_str(&diff("stderr", &want.stderr, &got.stderr));
        self.failures.push((case.show(), text));
    }

    /// Prints the count and panics with every difference, if there were any.
    pub fn finish(self) {
        let seconds = self.started.elapsed().as_secs_f64();
        notice(&format!(
            "du_compat {}: {} cases, {} differences ({seconds:.1} s)",
            self.label,
            self.n_cases,
            self.failures.len()
        ));
        if self.failures.is_empty() {
            return;
        }
        let mut message = String::new();
        for (i, (_, text)) in self.failures.iter().enumerate().take(MAX_FULL_REPORTS) {
            let _ = writeln!(message, "\n--- difference {} of {} in `{}` ---", i + 1, self.failures.len(), self.label);
            message.push_str(text);
        }
        if self.failures.len() > MAX_FULL_REPORTS {
            let _ = writeln!(message, "\n--- further differing cases in `{}` ---", self.label);
            for (line, _) in &self.failures[MAX_FULL_REPORTS..] {
                let _ = writeln!(message, "  {line}");
            }
        }
        panic!(
            "{message}\n{}: {} of {} cases differ from {} (binary under test: {})",
            self.label,
            self.failures.len(),
            self.n_cases,
            self.expected.program.display(),
            self.actual.program.display()
        );
    }
}

/// Prints what the expected tool did (first lines of each stream), for reading the tables.
fn show_outcome(label: &str, case: &Case, outcome: &Outcome) {
    let mut text = format!("[{label}] {}  => {}\n", case.show(), outcome.status);
    for (stream, bytes) in [("out", &outcome.stdout), ("err", &outcome.stderr)] {
        let lines: Vec<&[u8]> = bytes.split_inclusive(|&c| c == b'\n').collect();
        for line in lines.iter().take(8) {
            let _ = writeln!(text, "    {stream} | {}", escape(line));
        }
        if lines.len() > 8 {
            let _ = writeln!(text, "    {stream} | ... {} more lines", lines.len() - 8);
        }
    }
    eprint!("{text}");
}

/// A readable difference between two outputs: the differing records with their record
/// numbers, as `-`/`+` pairs when both sides have as many, else as two blocks. Records end in
/// `\n`, or in `\0` when the output holds more NULs than newlines (du -0).
fn diff(stream: &str, want: &[u8], got: &[u8]) -> String {
    if want == got {
        return format!("{stream}: same ({} bytes)\n", want.len());
    }
    let count = |b: u8| want.iter().chain(got).filter(|&&c| c == b).count();
    let sep = if count(0) > count(b'\n') { 0 } else { b'\n' };
    let want_lines: Vec<&[u8]> = want.split_inclusive(|&c| c == sep).collect();
    let got_lines: Vec<&[u8]> = got.split_inclusive(|&c| c == sep).collect();
    let n_prefix = want_lines.iter().zip(&got_lines).take_while(|(a, b)| a == b).count();
    let n_suffix =
        want_lines[n_prefix..].iter().rev().zip(got_lines[n_prefix..].iter().rev()).take_while(|(a, b)| a == b).count();
    let mut out = format!(
        "{stream}: differs from record {} on ({} equal before, {} equal after; expected {} records / {} bytes, got {} / {})\n",
        n_prefix + 1,
        n_prefix,
        n_suffix,
        want_lines.len(),
        want.len(),
        got_lines.len(),
        got.len()
    );
    let want_middle = &want_lines[n_prefix..want_lines.len() - n_suffix];
    let got_middle = &got_lines[n_prefix..got_lines.len() - n_suffix];
    if want_middle.len() == got_middle.len() {
        // Same number of records: show each differing pair together.
        let pairs = want_middle.iter().zip(got_middle).enumerate().filter(|(_, (a, b))| a != b);
        let n_pairs = pairs.clone().count();
        for (i, (a, b)) in pairs.take(MAX_DIFF_LINES) {
            let _ = writeln!(out, "    -{:>6} | {}", n_prefix + i + 1, escape(a));
            let _ = writeln!(out, "    +{:>6} | {}", n_prefix + i + 1, escape(b));
        }
        if n_pairs > MAX_DIFF_LINES {
            let _ = writeln!(out, "    ... {} more differing records", n_pairs - MAX_DIFF_LINES);
        }
        return out;
    }
    for (side, lines) in [("expected", &want_lines), ("actual", &got_lines)] {
        let middle = &lines[n_prefix..lines.len() - n_suffix];
        let _ = writeln!(out, "  {side} ({} records):", middle.len());
        if n_prefix > 0 {
            let _ = writeln!(out, "      {:>6} | {}", n_prefix, escape(lines[n_prefix - 1]));
        }
        for (i, line) in middle.iter().enumerate().take(MAX_DIFF_LINES) {
            let _ = writeln!(out, "    > {:>6} | {}", n_prefix + i + 1, escape(line));
        }
        if middle.len() > MAX_DIFF_LINES {
            let _ = writeln!(out, "    > ... {} more", middle.len() - MAX_DIFF_LINES);
        }
    }
    out
}
