//! Build script: records the version string (package version plus the git commit when
//! the source is a git checkout) so `--version` can name exactly what was built.
use std::path::PathBuf;
use std::process::Command;

/// `git rev-parse ARGS`, trimmed; empty when this is not a git checkout.
fn rev_parse(args: &[&str]) -> String {
    Command::new("git")
        .arg("rev-parse")
        .args(args)
        .output()
        .ok()
        .filter(|out| out.status.success())
        .and_then(|out| String::from_utf8(out.stdout).ok())
        .map(|s| s.trim().to_string())
        .unwrap_or_default()
}

fn main() {
    let version = env!("CARGO_PKG_VERSION");
    let commit = rev_parse(&["--short=10", "HEAD"]);
    let full = if commit.is_empty() { version.to_string() } else { format!("{version} ({commit})") };
    println!("cargo:rustc-env=DFDU_VERSION={full}");
    println!("cargo:rerun-if-changed=build.rs");
    // Watch HEAD, the branch it names and packed-refs, where git really keeps them (a
    // worktree's `.git` is a file). Only files that exist: cargo reruns the script on
    // every build while a watched path is missing (a source copy without .git).
    let git_dir = PathBuf::from(rev_parse(&["--git-dir"]));
    let common_dir = PathBuf::from(rev_parse(&["--git-common-dir"]));
    if commit.is_empty() {
        return;
    }
    let mut watch = vec![git_dir.join("HEAD"), common_dir.join("packed-refs")];
    if let Ok(head) = std::fs::read_to_string(git_dir.join("HEAD")) {
        if let Some(branch) = head.trim().strip_prefix("ref: ") {
            watch.push(common_dir.join(branch));
        }
    }
    for path in watch.iter().filter(|p| p.exists()) {
        println!("cargo:rerun-if-changed={}", path.display());
    }
}
