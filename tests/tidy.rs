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

/// The text with comments and string/char literals blanked out (newlines kept), so that
/// only code is searched. Handles escapes, raw strings (`r#"..."#`) and block comments.
fn code_only(text: &str) -> String {
    let b: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    let blank = |c: char| if c == '\n' { '\n' } else { ' ' };
    while i < b.len() {
        let c = b[i];
        let next = b.get(i + 1).copied().unwrap_or('\0');
        if c == '/' && next == '/' {
            while i < b.len() && b[i] != '\n' {
                out.push(' ');
                i += 1;
            }
        } else if c == '/' && next == '*' {
            let mut depth = 0;
            while i < b.len() {
                if b[i] == '/' && b.get(i + 1) == Some(&'*') {
                    depth += 1;
                    out.push_str("  ");
                    i += 2;
                } else if b[i] == '*' && b.get(i + 1) == Some(&'/') {
                    depth -= 1;
                    out.push_str("  ");
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    out.push(blank(b[i]));
                    i += 1;
                }
            }
        } else if c == 'r'
            && (next == '"' || next == '#')
            && !b.get(i.wrapping_sub(1)).is_some_and(|p| p.is_alphanumeric() || *p == '_')
        {
            let mut j = i + 1;
            let mut hashes = 0;
            while b.get(j) == Some(&'#') {
                hashes += 1;
                j += 1;
            }
            if b.get(j) != Some(&'"') {
                out.push(c);
                i += 1;
                continue;
            }
            j += 1;
            while j < b.len() && !(b[j] == '"' && (0..hashes).all(|k| b.get(j + 1 + k) == Some(&'#'))) {
                j += 1;
            }
            let end = (j + 1 + hashes).min(b.len());
            for &ch in &b[i..end] {
                out.push(blank(ch));
            }
            i = end;
        } else if c == '"' {
            out.push(' ');
            i += 1;
            while i < b.len() && b[i] != '"' {
                if b[i] == '\\' {
                    out.push(' ');
                    i += 1;
                }
                if i < b.len() {
                    out.push(blank(b[i]));
                    i += 1;
                }
            }
            out.push(' ');
            i += 1;
        } else if c == '\'' && (b.get(i + 2) == Some(&'\'') || next == '\\') {
            // A char literal ('x' or an escape); lifetimes ('a) fall through as code.
            let mut j = i + 1;
            if b.get(j) == Some(&'\\') {
                j += 2;
            }
            while j < b.len() && b[j] != '\'' {
                j += 1;
            }
            for _ in i..=j.min(b.len() - 1) {
                out.push(' ');
            }
            i = j + 1;
        } else {
            out.push(c);
            i += 1;
        }
    }
    out
}

/// Lines that use `unsafe` as code (not in comments or strings about it).
fn unsafe_lines(text: &str) -> Vec<(usize, String)> {
    let code = code_only(text);
    code.lines()
        .zip(text.lines())
        .enumerate()
        .filter(|(_, (c, _))| c.contains("unsafe ") || c.contains("unsafe{"))
        .map(|(i, (_, l))| (i, l.to_string()))
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
    assert!(unsafe_lines("let s = \"a\\\n unsafe { } \";").is_empty(), "multi-line strings are not code");
    assert!(unsafe_lines("let s = r#\"unsafe { \"x\" }\"#;").is_empty());
    assert!(unsafe_lines("/* unsafe { } */ fn f<'a>(x: &'a u8) {}").is_empty());
    assert_eq!(unsafe_lines("let c = '\"'; let y = unsafe { g() };").len(), 1);
}
