//! Build script: records the version string (package version plus the git commit when
//! the source is a git checkout) so `--version` can name exactly what was built.
use std::process::Command;

fn main() {
    let version = env!("CARGO_PKG_VERSION");
    let commit = Command::new("git")
        .args(["rev-parse", "--short=10", "HEAD"])
        .output()
        .ok()
        .filter(|out| out.status.success())
        .and_then(|out| String::from_utf8(out.stdout).ok())
        .map(|s| s.trim().to_string())
        .unwrap_or_default();
    let full = if commit.is_empty() { version.to_string() } else { format!("{version} ({commit})") };
    println!("cargo:rustc-env=DFDU_VERSION={full}");
    println!("cargo:rerun-if-changed=.git/HEAD");
    // HEAD names a branch; the branch's file (or packed-refs) moves with each commit.
    if let Ok(head) = std::fs::read_to_string(".git/HEAD") {
        if let Some(branch) = head.trim().strip_prefix("ref: ") {
            println!("cargo:rerun-if-changed=.git/{branch}");
        }
    }
    println!("cargo:rerun-if-changed=.git/packed-refs");
    println!("cargo:rerun-if-changed=build.rs");
}
