//! Running programs from the tests: the dfdu under test (`dfdu_path`), a command that must
//! succeed (`run_ok`), the system du's figures (`du_bytes`, `du_b1`), and the small facts
//! every test asks about the machine (`is_root`, `notice`).

use std::io::Write;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// The system du every comparison is made with.
pub const SYSTEM_DU: &str = "/usr/bin/du";

/// The binary under test: `DFDU_UNDER_TEST` if set, else the dfdu that cargo built.
/// (`DFDU_UNDER_TEST=/usr/bin/du` checks that du_compat's tables are deterministic.)
pub fn dfdu_path() -> PathBuf {
    match std::env::var_os("DFDU_UNDER_TEST") {
        Some(path) if !path.is_empty() => PathBuf::from(path),
        _ => PathBuf::from(env!("CARGO_BIN_EXE_dfdu")),
    }
}

/// Runs `cmd` and fails the test, with its standard error, when it does not succeed.
pub fn run_ok(cmd: &mut Command) -> Output {
    let out = cmd.output().unwrap_or_else(|e| panic!("{cmd:?}: {e}"));
    assert!(out.status.success(), "{cmd:?} failed: {}", String::from_utf8_lossy(&out.stderr));
    out
}

/// The first figure the system du prints for `path` with `args` (`-sB1`, `-sb`, ...).
pub fn du_bytes(args: &[&str], path: &Path) -> u64 {
    let out = run_ok(Command::new(SYSTEM_DU).args(args).arg(path));
    let text = String::from_utf8_lossy(&out.stdout);
    text.split('\t').next().unwrap().trim().parse().unwrap_or_else(|e| panic!("du {args:?}: {e}: {text}"))
}

/// `du -sB1 PATH`: the disk usage of `path` in bytes, as the system du counts it.
pub fn du_b1(path: &Path) -> u64 {
    du_bytes(&["-sB1"], path)
}

/// Whether this process runs as root (owner of its own `/proc/self`).
pub fn is_root() -> bool {
    std::fs::metadata("/proc/self").map(|m| m.uid() == 0).unwrap_or(false)
}

/// Writes a line to the real standard error, past the test harness's output capture, so that
/// case counts and skip notices show up in a plain `cargo test` run.
pub fn notice(line: &str) {
    let _ = writeln!(std::io::stderr(), "{line}");
}
