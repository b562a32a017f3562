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
    println!("cargo:rerun-if-changed=build.rs");
}
