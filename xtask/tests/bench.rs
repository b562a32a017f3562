//! `cargo xtask bench` end to end on a small tree: it builds (or is given) dfdu, makes the
//! tree once, times the chosen tools, and writes `DIR/results-*.md` with the promised
//! columns, each tool's total equal to GNU du's; a second run reuses the tree.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The dfdu that `cargo test --workspace` built next to this test (target/<profile>/dfdu),
/// if there is one; otherwise `bench` builds its own.
fn built_dfdu() -> Option<PathBuf> {
    let exe = std::env::current_exe().ok()?;
    let candidate = exe.parent()?.parent()?.join("dfdu");
    candidate.is_file().then_some(candidate)
}

fn bench(dir: &Path, extra: &[&str]) -> String {
    let mut command = Command::new(env!("CARGO_BIN_EXE_xtask"));
    command.args(["bench", "--entries", "2000", "--runs", "1", "--tools", "dfdu,du"]).args(extra);
    if let Some(dfdu) = built_dfdu() {
        command.arg("--dfdu").arg(dfdu);
    }
    let out = command.arg(dir).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "bench failed: {stderr}");
    stderr
}

fn results(dir: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = fs::read_dir(dir)
        .unwrap()
        .map(|item| item.unwrap().path())
        .filter(|path| path.file_name().unwrap().to_string_lossy().starts_with("results-"))
        .collect();
    files.sort();
    files
}

#[test]
fn bench_makes_the_tree_once_and_writes_the_table() {
    let dir = std::env::temp_dir().join(format!("xtask-bench-test-{}", std::process::id()));
    let _ = fs::remove_dir_all(&dir);
    bench(&dir, &[]);
    let marker = fs::read_to_string(dir.join("tree.gentree.json")).unwrap();
    assert!(marker.contains("\"entries\": 2000") && marker.contains("\"state\": \"complete\""), "{marker}");
    let files = results(&dir);
    assert_eq!(files.len(), 1, "{files:?}");
    let report = fs::read_to_string(&files[0]).unwrap();
    let header =
        "| tool | mean ± sd s | median s | vs dfdu | peak RSS MiB (min–max) | user+sys s | total vs `du -sB1` |";
    assert!(report.contains(header), "{report}");
    let row = |name: &str| -> Vec<String> {
        let line = report.lines().find(|line| line.starts_with(&format!("| {name} |"))).unwrap_or_else(|| {
            panic!("no row for {name} in {report}");
        });
        line.split('|').map(|cell| cell.trim().to_string()).collect()
    };
    let (dfdu, du, scan) = (row("**dfdu**"), row("du"), row("dfdu-scan"));
    assert_eq!(dfdu[4], "1.00×");
    for cells in [&dfdu, &du, &scan] {
        assert_eq!(cells[7], "equal", "{cells:?}");
        assert!(cells[2].contains(" ± "), "{cells:?}");
    }
    for peer in ["gdu", "ncdu", "floor", "dust"] {
        assert!(!report.lines().any(|line| line.starts_with(&format!("| {peer}"))), "--tools let {peer} in");
    }
    assert!(report.contains("- machine: "), "{report}");
    // Same arguments again: the tree is reused (a file put into it survives), a second
    // results file is written.
    fs::write(dir.join("tree/sentinel"), b"").unwrap();
    std::thread::sleep(std::time::Duration::from_millis(1100));
    bench(&dir, &[]);
    assert!(dir.join("tree/sentinel").exists(), "the tree was regenerated");
    assert_eq!(results(&dir).len(), 2);
    // Other arguments are refused without --force.
    let out = Command::new(env!("CARGO_BIN_EXE_xtask"))
        .args(["bench", "--entries", "3000", "--dfdu", "/bin/true"])
        .arg(&dir)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--force"));
    fs::remove_dir_all(&dir).unwrap();
}
