//! Tests that cannot run here say so: a `SKIP: ...` line on the real standard error
//! (`notice`), and a failure instead where every test must run (`DFDU_REQUIRE_ALL=1`, as
//! `.ci/run` sets it). The terminal tests have their own switch (`tmux::have_tmux`).

use super::bin::{is_root, notice};
use std::process::Command;

/// Whether `tool` is on the `PATH`.
pub fn have(tool: &str) -> bool {
    Command::new("sh").arg("-c").arg(format!("command -v {tool}")).output().is_ok_and(|o| o.status.success())
}

/// Whether `tool` is installed; if not, says that `test` is skipped (a SKIP line).
pub fn have_or_skip(tool: &str, test: &str) -> bool {
    have(tool) || {
        skip(&format!("{test}: {tool} is not installed"));
        false
    }
}

/// Whether every test must run (`DFDU_REQUIRE_ALL=1`): a skip is then a failure.
pub fn required() -> bool {
    std::env::var_os("DFDU_REQUIRE_ALL").is_some_and(|v| v == "1")
}

/// Says that `what` did not run (a SKIP line), or fails where every test must run.
pub fn skip(what: &str) {
    assert!(!required(), "SKIP not allowed (DFDU_REQUIRE_ALL=1): {what}");
    notice(&format!("SKIP: {what}"));
}

/// Whether this runs as root with `tool` installed (the loop-mount tests); a SKIP line
/// naming `what` when not.
pub fn need_root_and(tool: &str, what: &str) -> bool {
    if !is_root() {
        skip(&format!("{what}: needs root (loop mounts)"));
        return false;
    }
    if !have(tool) {
        skip(&format!("{what}: {tool} is not installed"));
        return false;
    }
    true
}
