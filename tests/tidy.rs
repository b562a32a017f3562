//! Style checked by a test: every source file opens with a module doc (`//!`), and
//! `unsafe` appears only under `platform/`, each use preceded by a `// SAFETY:` comment.

use std::path::{Path, PathBuf};

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let p = e.path();
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

fn sources() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    for d in ["src", "platform", "tests"] {
        rust_files(&root.join(d), &mut files);
    }
    files.push(root.join("build.rs"));
    assert!(files.len() > 10, "found too few sources: {files:?}");
    files
}

#[test]
fn every_file_has_a_module_doc() {
    let mut missing = Vec::new();
    for f in sources() {
        let text = std::fs::read_to_string(&f).unwrap();
        let first = text.lines().find(|l| !l.trim().is_empty()).unwrap_or("");
        if !first.starts_with("//!") {
            missing.push(f);
        }
    }
    assert!(missing.is_empty(), "files without a leading //! module doc: {missing:?}");
}

/// Lines that use `unsafe` as code (not in comments or strings about it).
fn unsafe_lines(text: &str) -> Vec<(usize, String)> {
    text.lines()
        .enumerate()
        .filter(|(_, l)| {
            let code = l.split("//").next().unwrap_or("");
            let code: String = code.split('"').step_by(2).collect();
            code.contains("unsafe ") || code.contains("unsafe{")
        })
        .map(|(i, l)| (i, l.to_string()))
        .collect()
}

#[test]
fn unsafe_only_in_platform_and_always_justified() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut problems = Vec::new();
    for f in sources() {
        let text = std::fs::read_to_string(&f).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        let in_platform = f.starts_with(root.join("platform"));
        for (i, l) in unsafe_lines(&text) {
            if f.ends_with("tests/tidy.rs") {
                continue;
            }
            if !in_platform {
                problems.push(format!("{}:{}: unsafe outside platform/: {l}", f.display(), i + 1));
                continue;
            }
            if l.trim_start().starts_with("unsafe extern") || l.contains("unsafe fn") {
                continue;
            }
            // Look back over the comment block right above the statement.
            let justified = lines[..i]
                .iter()
                .rev()
                .take(12)
                .take_while(|p| {
                    p.trim_start().starts_with("//")
                        || p.trim_start().starts_with("let ")
                        || p.trim().is_empty()
                        || p.trim_end().ends_with('=')
                })
                .any(|p| p.contains("// SAFETY:"));
            if !justified {
                problems.push(format!("{}:{}: unsafe without a // SAFETY: comment: {l}", f.display(), i + 1));
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn the_unsafe_check_can_fail() {
    assert_eq!(unsafe_lines("let x = unsafe { f() };").len(), 1);
    assert!(unsafe_lines("// unsafe { f() }").is_empty());
    assert!(unsafe_lines("let s = \"unsafe { }\";").is_empty());
}
