//! Style checked by a test: every source file opens with a module doc (`//!`);
//! `unsafe` appears only under `platform/`, each use preceded by a `// SAFETY:` comment;
//! no file imports from a layer above its own (the layering rule in the crate doc of
//! `src/main.rs`); and every relative link in README.md and `docs/*.md` reaches a file (and
//! its heading), with README.md kept to a front door of at most 400 lines; no product
//! function over 80 lines without a `// Long:` reason; every bug of `mutants/hand/` still
//! applies to the code.

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
    for d in ["src", "platform", "tests", "xtask/src", "xtask/tests"] {
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
    blank_out(text, false)
}

/// The text with comments blanked out, and string and char literals too unless
/// `keep_literals`; one character out for each character in, so positions match.
fn blank_out(text: &str, keep_literals: bool) -> String {
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
                out.push(if keep_literals { ch } else { blank(ch) });
            }
            i = end;
        } else if c == '"' {
            let lit = |ch: char| if keep_literals { ch } else { blank(ch) };
            out.push(lit('"'));
            i += 1;
            while i < b.len() && b[i] != '"' {
                if b[i] == '\\' {
                    out.push(lit('\\'));
                    i += 1;
                }
                if i < b.len() {
                    out.push(lit(b[i]));
                    i += 1;
                }
            }
            if i < b.len() {
                out.push(lit('"'));
            }
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
            for &ch in &b[i..=j.min(b.len() - 1)] {
                out.push(if keep_literals { ch } else { ' ' });
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

/// The layers of the crate doc's layering rule, lowest first: (module, rank). A file may
/// use `crate::M` only for M of a lower rank, or M of its own layer. Layers of equal rank
/// are siblings and do not import each other.
const LAYERS: &[(&str, u32)] = &[
    ("meta", 0),
    ("text", 1),
    ("platform", 2),
    ("out", 3),
    ("walk", 4),
    ("term", 4),
    ("du", 5),
    ("tree", 5),
    ("dupes", 5),
    ("report", 6),
    ("browse", 6),
    ("diff", 6),
];

/// The layer a source file belongs to, from its path relative to the package root;
/// `None` for files the rule does not cover (main.rs sits above every layer; the
/// benchmark binary and the tests are crates of their own).
fn layer_of_file(rel: &str) -> Option<&'static str> {
    if rel.starts_with("platform/") {
        return Some("platform");
    }
    let rest = rel.strip_prefix("src/")?;
    if rest == "main.rs" || rest.starts_with("bin/") {
        return None;
    }
    let first = rest.split('/').next()?.trim_end_matches(".rs");
    Some(LAYERS.iter().find(|(m, _)| *m == first).map_or("?", |(m, _)| m))
}

fn rank(module: &str) -> Option<u32> {
    LAYERS.iter().find(|(m, _)| *m == module).map(|&(_, r)| r)
}

/// The first segment of every `crate::` path in `code` (comments and strings already
/// blanked), with its line number: `crate::a::b` gives `a`, `crate::{a, b::c}` gives `a`
/// and `b`.
fn crate_roots(code: &str) -> Vec<(usize, String)> {
    let b: Vec<char> = code.chars().collect();
    let mut out = Vec::new();
    let ident = |c: char| c.is_alphanumeric() || c == '_';
    let mut line = 1;
    let mut i = 0;
    while i < b.len() {
        if b[i] == '\n' {
            line += 1;
        }
        let at_word = i == 0 || !ident(b[i - 1]);
        if at_word && b[i..].starts_with(&['c', 'r', 'a', 't', 'e', ':', ':']) {
            let mut j = i + 7;
            while j < b.len() && b[j].is_whitespace() {
                j += 1;
            }
            if b.get(j) == Some(&'{') {
                // A group: the identifiers that start each top-level item.
                let mut depth = 0;
                let mut expect = true;
                while j < b.len() {
                    match b[j] {
                        '{' => {
                            depth += 1;
                            expect = depth == 1;
                        }
                        '}' => {
                            depth -= 1;
                            if depth == 0 {
                                break;
                            }
                        }
                        ',' if depth == 1 => expect = true,
                        c if expect && ident(c) => {
                            let start = j;
                            while j < b.len() && ident(b[j]) {
                                j += 1;
                            }
                            out.push((line, b[start..j].iter().collect()));
                            expect = false;
                            continue;
                        }
                        _ => {}
                    }
                    j += 1;
                }
            } else {
                let start = j;
                while j < b.len() && ident(b[j]) {
                    j += 1;
                }
                out.push((line, b[start..j].iter().collect()));
            }
            i += 7;
            continue;
        }
        i += 1;
    }
    out
}

/// Every `crate::` path in `text` (the file at `rel`) that breaks the layering rule. A
/// file's unit tests (from `#[cfg(test)]` before `mod tests {` on, or the whole of a
/// sibling `tests.rs` that a `#[cfg(test)] mod tests;` pulls in) are exempt: they may use
/// a higher layer as an oracle (`timefmt`'s tests check against `platform`'s local time).
fn layering_problems(rel: &str, text: &str) -> Vec<String> {
    let Some(layer) = layer_of_file(rel) else {
        return Vec::new();
    };
    let tests_at = if rel.ends_with("/tests.rs") {
        0
    } else {
        text.lines()
            .collect::<Vec<_>>()
            .windows(2)
            .position(|w| w[0].trim() == "#[cfg(test)]" && w[1].trim_start().starts_with("mod tests"))
            .map_or(usize::MAX, |i| i + 1)
    };
    let Some(own) = rank(layer) else {
        return vec![format!("{rel}: in no layer; add its folder to LAYERS and the crate doc")];
    };
    let mut problems = Vec::new();
    for (line, m) in crate_roots(&code_only(text)) {
        if line >= tests_at || m == layer || m == "self" || m == "super" {
            continue;
        }
        match rank(&m) {
            Some(r) if r < own => {}
            Some(_) => problems.push(format!("{rel}:{line}: {layer} imports crate::{m}, which is not below it")),
            None => {
                problems.push(format!("{rel}:{line}: crate::{m} is in no layer; add it to LAYERS and the crate doc"))
            }
        }
    }
    problems
}

#[test]
fn no_layer_imports_upward() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut problems = Vec::new();
    let mut checked = 0;
    for f in sources() {
        let rel = f.strip_prefix(root).unwrap().to_string_lossy().replace('\\', "/");
        let text = std::fs::read_to_string(&f).unwrap();
        if layer_of_file(&rel).is_some() {
            checked += 1;
        }
        problems.extend(layering_problems(&rel, &text));
    }
    assert!(checked > 20, "found too few layered files: {checked}");
    assert!(problems.is_empty(), "upward imports (see the layering rule in src/main.rs):\n{}", problems.join("\n"));
}

#[test]
fn the_layering_check_can_fail() {
    let up = layering_problems("src/text/units.rs", "use crate::tree::arena::Arena;");
    assert_eq!(up.len(), 1, "{up:?}");
    assert_eq!(layering_problems("src/walk/scan.rs", "fn f() { crate::term::width(); }").len(), 1, "siblings");
    assert_eq!(layering_problems("src/report.rs", "use crate::{meta::Kind, browse::run};").len(), 1);
    assert_eq!(
        layering_problems("src/du/cli.rs", "use crate::{\n    text::quote,\n    walk::scan::{self, Walk},\n};").len(),
        0
    );
    assert_eq!(
        layering_problems("platform/linux/dir.rs", "use crate::meta::Errno; // crate::browse").len(),
        0,
        "comments are not code"
    );
    assert_eq!(layering_problems("src/tree/arena.rs", "let s = \"crate::browse\";").len(), 0, "strings are not code");
    assert_eq!(layering_problems("src/newlayer/x.rs", "").len(), 1, "an unknown folder is reported");
    assert_eq!(layering_problems("src/meta.rs", "use crate::nowhere::X;").len(), 1, "an unknown module is reported");
    let test_oracle = "use crate::meta::X;\n#[cfg(test)]\nmod tests {\n    use crate::platform::portable;\n}";
    assert!(layering_problems("src/text/timefmt.rs", test_oracle).is_empty(), "unit tests may use an oracle");
    assert!(
        layering_problems("src/tree/ncdu/tests.rs", "use crate::browse::X;").is_empty(),
        "a tests.rs is unit tests"
    );
    assert_eq!(layering_problems("src/tree/ncdu/import.rs", "use crate::browse::X;").len(), 1, "its siblings are not");
    assert!(layering_problems("src/main.rs", "use crate::browse::run;").is_empty(), "main is above every layer");
}

/// Statements of test code that change what lies outside a test's scratch directory: a
/// permission or owner change (`chmod`, `set_permissions`, `chown`, ...) whose target is
/// the system temporary directory itself, or any path under `/mnt` (where loop images
/// were mounted once). `unreadable_entries_are_reported_and_exit_1` once
/// ran `chmod 755` on it, and /tmp was no longer sticky 1777 for the rest of the machine's
/// life (issue 24, item 14). `tests/machine-state` checks the same from outside at the end
/// of `make test`; this finds it in the source before anything runs.
fn outside_scratch_lines(text: &str) -> Vec<(usize, String)> {
    const CHANGES: &[&str] = &["chmod", "set_permissions", "chown", "lchown", "setfacl", "chattr", "chgrp"];
    let code: Vec<char> = code_only(text).chars().collect();
    let with_literals: Vec<char> = blank_out(text, true).chars().collect();
    let mut found = Vec::new();
    let (mut start, mut line_no) = (0, 1);
    // One statement at a time (rustfmt may spread one over several lines): cut where the
    // code, not a literal or a comment, has `;`, `{` or `}`.
    for end in 0..=code.len() {
        if end < code.len() && !matches!(code[end], ';' | '{' | '}') {
            continue;
        }
        let stmt: String = with_literals[start..end].iter().collect();
        let lead = stmt.len() - stmt.trim_start().len();
        let first_line = line_no + stmt[..lead].matches('\n').count();
        line_no += stmt.matches('\n').count();
        start = end + 1;
        let changes = CHANGES.iter().any(|c| stmt.contains(c));
        // The temporary directory itself, not a path inside it (`temp_dir().join(..)`).
        let names_tmp = stmt.contains("\"/tmp\"")
            || stmt.contains("\"/tmp/\"")
            || stmt.match_indices("temp_dir()").any(|(at, m)| !stmt[at + m.len()..].starts_with(".join("));
        // A path under `/mnt` is outside every scratch directory: loop images and their
        // mount points go in one (`LoopFs::unmounted`).
        let under_mnt = stmt.contains("\"/mnt/") || stmt.contains("\"/mnt\"");
        if (changes && names_tmp) || under_mnt {
            found.push((first_line, stmt.split_whitespace().collect::<Vec<_>>().join(" ")));
        }
    }
    found
}

#[test]
fn tests_change_nothing_outside_their_scratch() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut problems = Vec::new();
    let mut files = Vec::new();
    // xtask/src is the benchmark harness, which mounts its images where the user says
    // (`--mount`, `/mnt/dfdu-*` by default); its own tests are covered.
    for d in ["tests", "xtask/tests"] {
        rust_files(&root.join(d), &mut files);
    }
    assert!(files.len() > 10, "found too few test sources: {files:?}");
    // A path that only names `/mnt` in a command-line test, never mounted there.
    let spared = |f: &Path| f.ends_with("tests/tidy.rs") || f.ends_with("xtask/tests/image.rs");
    for f in files.iter().filter(|f| !spared(f)) {
        let text = std::fs::read_to_string(f).unwrap();
        for (n, line) in outside_scratch_lines(&text) {
            problems.push(format!("{}:{n}: {line}", f.strip_prefix(root).unwrap().display()));
        }
    }
    assert!(
        problems.is_empty(),
        "tests change the system temporary directory (use a Scratch directory; see tests/machine-state):\n{}",
        problems.join("\n")
    );
}

#[test]
fn the_scratch_check_can_fail() {
    let once = "        let _ = Command::new(\"chmod\").arg(\"755\").arg(std::env::temp_dir()).status();";
    assert_eq!(outside_scratch_lines(once).len(), 1, "the line this test was made for");
    let spread = "fn f() {\n    let _ = Command::new(\"chmod\")\n        .arg(\"755\")\n        .arg(std::env::temp_dir())\n        .status();\n}";
    assert_eq!(outside_scratch_lines(spread).iter().map(|f| f.0).collect::<Vec<_>>(), [2], "over several lines");
    assert_eq!(outside_scratch_lines("fs::set_permissions(\"/tmp\", p).unwrap();").len(), 1);
    assert_eq!(outside_scratch_lines("Command::new(\"chown\").arg(\"nobody\").arg(\"/tmp/\");").len(), 1);
    assert!(outside_scratch_lines("fs::set_permissions(&dir, p); let d = temp_dir().join(\"x\");").is_empty());
    assert!(outside_scratch_lines("// chmod 755 of temp_dir() is forbidden").is_empty(), "comments are not code");
    assert!(outside_scratch_lines("let d = std::env::temp_dir().join(\"x\"); chmod(&d, 0o700);").is_empty());
    let mnt = "let mnt = PathBuf::from(format!(\"/mnt/{name}-{pid}\"));";
    assert_eq!(outside_scratch_lines(mnt).len(), 1, "a mount point under /mnt");
}

/// The longest README.md may be: it is the front door, and details go to `docs/*.md`.
const README_MAX_LINES: usize = 400;

/// GitHub's anchor for a heading: lower case, every character but letters, digits, `-`
/// and `_` dropped, spaces turned into hyphens (so "`dfdu diff` and the treemap" is
/// `dfdu-diff-and-the-treemap`).
fn heading_anchor(heading: &str) -> String {
    let mut anchor = String::new();
    for c in heading.trim().chars() {
        if c == ' ' {
            anchor.push('-');
        } else if c.is_alphanumeric() || c == '-' || c == '_' {
            anchor.extend(c.to_lowercase());
        }
    }
    anchor
}

/// The lines of a Markdown text outside fenced code blocks, numbered from 1, so that a
/// shell comment in a code block is neither a heading nor a place for links.
fn prose_lines(text: &str) -> Vec<(usize, &str)> {
    let mut in_fence = false;
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim_start().starts_with("```") {
            in_fence = !in_fence;
        } else if !in_fence {
            out.push((i + 1, line));
        }
    }
    out
}

/// Every anchor a Markdown text's headings give, with GitHub's `-1`, `-2` for repeats.
fn anchors(text: &str) -> Vec<String> {
    let mut found: Vec<String> = Vec::new();
    for (_, line) in prose_lines(text) {
        let hashes = line.len() - line.trim_start_matches('#').len();
        if !(1..=6).contains(&hashes) || !line[hashes..].starts_with(' ') {
            continue;
        }
        let base = heading_anchor(&line[hashes..]);
        let repeats = found.iter().filter(|a| **a == base || a.starts_with(&format!("{base}-"))).count();
        found.push(if repeats == 0 { base } else { format!("{base}-{repeats}") });
    }
    found
}

/// The targets of the inline links and images (`[text](target)`) in a Markdown text, with
/// their line numbers.
fn link_targets(text: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    for (n, line) in prose_lines(text) {
        for (at, _) in line.match_indices("](") {
            let rest = &line[at + 2..];
            if let Some(end) = rest.find(')') {
                out.push((n, rest[..end].to_string()));
            }
        }
    }
    out
}

/// What is wrong with the relative links of `text`, a Markdown file at `rel` below `root`:
/// a target that names no file or directory, or an `#anchor` that no heading of its file
/// gives. Addresses with a scheme (`https:`) are left to the reader.
fn link_problems(root: &Path, rel: &str, text: &str) -> Vec<String> {
    let dir = Path::new(rel).parent().unwrap_or(Path::new(""));
    let mut problems = Vec::new();
    for (n, target) in link_targets(text) {
        if target.contains("://") || target.starts_with("mailto:") {
            continue;
        }
        let (file, anchor) = match target.split_once('#') {
            Some((f, a)) => (f, Some(a)),
            None => (target.as_str(), None),
        };
        let path = root.join(dir).join(file);
        if !file.is_empty() && !path.exists() {
            problems.push(format!("{rel}:{n}: {target}: no such file"));
            continue;
        }
        let Some(anchor) = anchor else { continue };
        let heads =
            if file.is_empty() { anchors(text) } else { anchors(&std::fs::read_to_string(&path).unwrap_or_default()) };
        if !heads.iter().any(|h| h == anchor) {
            problems.push(format!("{rel}:{n}: {target}: no heading makes #{anchor}"));
        }
    }
    problems
}

/// README.md and `docs/*.md` by their paths below the repository's root.
fn doc_files(root: &Path) -> Vec<String> {
    let mut files = vec!["README.md".to_string()];
    for e in std::fs::read_dir(root.join("docs")).unwrap().flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        if name.ends_with(".md") {
            files.push(format!("docs/{name}"));
        }
    }
    files.sort();
    files
}

#[test]
fn docs_links_resolve_and_the_readme_stays_short() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let files = doc_files(root);
    assert!(files.len() > 5, "found too few docs: {files:?}");
    let mut problems = Vec::new();
    for rel in &files {
        let text = std::fs::read_to_string(root.join(rel)).unwrap();
        problems.extend(link_problems(root, rel, &text));
    }
    assert!(problems.is_empty(), "broken links in the docs:\n{}", problems.join("\n"));
    let readme = std::fs::read_to_string(root.join("README.md")).unwrap();
    let lines = readme.lines().count();
    assert!(
        lines <= README_MAX_LINES,
        "README.md has {lines} lines, more than {README_MAX_LINES}: move details to docs/*.md"
    );
    // Every docs file is reachable from the front door.
    let linked: Vec<String> = link_targets(&readme).into_iter().map(|(_, t)| t).collect();
    let unlinked: Vec<&String> =
        files.iter().filter(|f| *f != "README.md" && !linked.iter().any(|t| t.split('#').next() == Some(f))).collect();
    assert!(unlinked.is_empty(), "docs not linked from README.md: {unlinked:?}");
}

#[test]
fn the_docs_link_check_can_fail() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let readme = std::fs::read_to_string(root.join("README.md")).unwrap();
    assert!(link_problems(root, "README.md", &readme).is_empty(), "the README as it is");
    let broken = readme.replacen("(docs/status.md)", "(docs/no-such-file.md)", 1);
    assert_ne!(broken, readme, "the README links docs/status.md");
    assert_eq!(link_problems(root, "README.md", &broken).len(), 1, "a missing file");
    let bad_anchor = readme.replacen("docs/platforms.md#static-binary", "docs/platforms.md#static-binaries", 1);
    assert_ne!(bad_anchor, readme, "the README links the static binary's section");
    assert_eq!(link_problems(root, "README.md", &bad_anchor).len(), 1, "a missing heading");
    let in_dir = "[up](../README.md) [self](#two) [code](https://example.org/x)\n## Two\n```\n[no](gone.md)\n```\n";
    assert!(link_problems(root, "docs/x.md", in_dir).is_empty(), "relative to docs/, code blocks skipped");
    assert_eq!(link_problems(root, "docs/x.md", "[a](README.md)").len(), 1, "docs/README.md does not exist");
    assert_eq!(heading_anchor(" `dfdu diff` and the treemap"), "dfdu-diff-and-the-treemap");
    assert_eq!(anchors("# A\n## A\n"), ["a", "a-1"]);
}

/// Whether `token` (from inside backticks) names a `.rs` file or a folder (`dir/`):
/// no spaces, not a path of the running system (`/proc/...`).
fn is_file_name(token: &str) -> bool {
    let plain = !token.is_empty() && token.chars().all(|c| c.is_alphanumeric() || "_./-".contains(c));
    let named = token.ends_with(".rs") || (token.ends_with('/') && token.len() > 1);
    plain && named && !token.starts_with('/') && !token.starts_with('.')
}

/// Where `name` is: from the package root when it starts with a top folder (`src/`,
/// `platform/`, ...), else inside `base`.
fn resolve(base: &str, name: &str) -> String {
    if ["src/", "platform/", "tests/", "docs/", "xtask/"].iter().any(|top| name.starts_with(top)) {
        name.to_string()
    } else {
        format!("{base}/{name}")
    }
}

/// Every file or folder name in the `//!` doc of `text` (the file at `rel`), with its
/// line and the path it stands for. Names are read as the code maps write them: outside
/// a bullet inside `outer` (`src` for the crate doc, `platform` for `platform/mod.rs`);
/// a bullet that opens with a folder (`` * `walk/` — ... ``) names files inside that
/// folder; and a folder followed by a parenthesis (`` `linux/` (`dir.rs`, ...) ``) names
/// files inside it until the parenthesis closes.
fn named_paths(rel: &str, text: &str) -> Vec<(usize, String, String)> {
    let outer = if rel.starts_with("platform/") { "platform" } else { "src" };
    let mut out = Vec::new();
    // (the folder names are inside, the parenthesis depth at which it ends)
    let mut stack: Vec<(String, i32)> = Vec::new();
    let mut depth = 0;
    // A folder at the end of a line, whose parenthesis may open the next one.
    let mut pending: Option<String> = None;
    for (i, line) in text.lines().enumerate() {
        let Some(doc) = line.trim_start().strip_prefix("//!") else { continue };
        let bullet = doc.starts_with(" * ");
        if bullet || doc.trim().is_empty() || doc.starts_with(" #") {
            stack.clear();
            depth = 0;
            pending = None;
        }
        if let Some(folder) = pending.take().filter(|_| doc.trim_start().starts_with('(')) {
            stack.push((folder, depth + 1));
        }
        let mut first = bullet;
        let mut rest = doc;
        while let Some(at) = rest.find(['`', '(', ')']) {
            let c = rest.as_bytes()[at];
            first &= rest[..at].trim().trim_start_matches('*').trim().is_empty();
            rest = &rest[at + 1..];
            match c {
                b'(' => depth += 1,
                b')' => {
                    if stack.last().is_some_and(|&(_, d)| d == depth) {
                        stack.pop();
                    }
                    depth -= 1;
                }
                _ => {
                    let Some(close) = rest.find('`') else { break };
                    let token = &rest[..close];
                    rest = &rest[close + 1..];
                    if is_file_name(token) {
                        let path = resolve(stack.last().map_or(outer, |(b, _)| b.as_str()), token);
                        let folder = path.trim_end_matches('/').to_string();
                        out.push((i + 1, token.to_string(), path));
                        if first && token.ends_with('/') {
                            // The bullet's own folder, for the rest of the bullet.
                            stack.push((folder, 0));
                        } else if token.ends_with('/') && rest.trim_start().starts_with('(') {
                            stack.push((folder, depth + 1));
                        } else if token.ends_with('/') && rest.trim().is_empty() {
                            pending = Some(folder);
                        }
                    }
                    first = false;
                }
            }
        }
    }
    out
}

/// The names of `named_paths` that are no file or folder.
fn code_map_problems(root: &Path, rel: &str, text: &str) -> Vec<String> {
    named_paths(rel, text)
        .into_iter()
        .filter(|(_, _, path)| !root.join(path).exists())
        .map(|(line, token, path)| format!("{rel}:{line}: `{token}` is no file or folder ({path})"))
        .collect()
}

#[test]
fn the_code_maps_name_files_that_exist() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut problems = Vec::new();
    for rel in ["src/main.rs", "platform/mod.rs"] {
        let text = std::fs::read_to_string(root.join(rel)).unwrap();
        assert!(named_paths(rel, &text).len() > 20, "{rel}: the code map names too few files to be read right");
        problems.extend(code_map_problems(root, rel, &text));
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn the_code_map_check_can_fail() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let map = "//! * `walk/` — `scan.rs`, `scan/worker.rs` and `gone.rs`; `src/meta.rs`.\n//! * `du/` — `cli.rs`.";
    let found = code_map_problems(root, "src/main.rs", map);
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(found[0].contains("`gone.rs`"), "{found:?}");
    // A name of another bullet's folder is not found in this one's.
    assert_eq!(code_map_problems(root, "src/main.rs", "//! * `du/` — `worker.rs`").len(), 1);
    // A folder and its parenthesis: `time.rs` is Linux's, not macOS's, once macOS's is gone.
    let nested = "//! * `platform/` — `linux/` (`dir.rs`, `time.rs`), `macos/` (`dir.rs`; `nope.rs`), `mod.rs`.";
    let paths: Vec<String> = named_paths("src/main.rs", nested).into_iter().map(|(_, _, p)| p).collect();
    let want = ["platform/", "platform/linux/", "platform/linux/dir.rs", "platform/linux/time.rs", "platform/macos/"];
    assert_eq!(paths[..5], want);
    assert_eq!(paths[5..], ["platform/macos/dir.rs", "platform/macos/nope.rs", "platform/mod.rs"]);
    assert_eq!(code_map_problems(root, "src/main.rs", nested).len(), 1);
    let texts = named_paths("platform/mod.rs", "//! `linux/dir.rs`, `/proc/self/fd`, `a b.rs`, `x.rs`, `Dir`.");
    assert!(texts.iter().map(|(_, n, _)| n.as_str()).eq(["linux/dir.rs", "x.rs"]), "{texts:?}");
}

/// The names a backend's `mod.rs` offers (`pub use path::{a, b, C};` and `pub use
/// path::a;`), its own and those it takes from a sibling.
fn offered_names(text: &str) -> Vec<String> {
    let code = code_only(text);
    let mut out = Vec::new();
    for stmt in code.split(';') {
        let Some(rest) = stmt.trim().strip_prefix("pub use ") else { continue };
        let list = match (rest.find('{'), rest.rfind('}')) {
            (Some(a), Some(b)) => &rest[a + 1..b],
            _ => rest.rsplit("::").next().unwrap_or(""),
        };
        out.extend(list.split(',').map(|n| n.trim().to_string()).filter(|n| !n.is_empty()));
    }
    out
}

/// Names a backend offers that the contract in `platform/mod.rs` (its `b::NAME` lines)
/// does not state. The compiler checks the other way round: every contract name is
/// offered, with its type.
fn uncontracted(contract: &str, backend: &str) -> Vec<String> {
    let code = code_only(contract);
    offered_names(backend)
        .into_iter()
        .filter(|n| {
            let at =
                |i: usize| code[i + 3 + n.len()..].chars().next().is_none_or(|c| !(c.is_alphanumeric() || c == '_'));
            !code.match_indices(&format!("b::{n}")).any(|(i, _)| at(i))
        })
        .collect()
}

#[test]
fn every_backend_offers_only_what_the_contract_states() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let contract = std::fs::read_to_string(root.join("platform/mod.rs")).unwrap();
    let mut problems = Vec::new();
    for backend in ["linux", "macos", "windows", "fallback"] {
        let text = std::fs::read_to_string(root.join(format!("platform/{backend}/mod.rs"))).unwrap();
        assert!(offered_names(&text).len() > 40, "{backend}: too few names found to be read right");
        for n in uncontracted(&contract, &text) {
            problems.push(format!("platform/{backend}/mod.rs offers `{n}`, which the contract does not state"));
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn the_contract_check_can_fail() {
    let contract = "let _: fn() -> u64 = b::open_fds;\nlet _: fn() = b::term_raw_leave;";
    let backend = "pub use dir::{open_fds, open_fds_now};\npub use term::term_raw_leave;\nuse ffi::helper;";
    assert_eq!(uncontracted(contract, backend), ["open_fds_now"]);
}

/// Longest a product function may be (STYLE.md: around 70 lines; issue 26: none over ~80
/// without a reason). A longer one carries `// Long:` and its reason in the comment lines
/// right above it (a flat dispatch table, say).
const FN_MAX_LINES: usize = 80;

/// The functions of `text` longer than `FN_MAX_LINES` with no `// Long:` reason above:
/// (first line, name, lines). Comments and literals are blanked first, so braces in them
/// do not count; a declaration without a body (a trait's) is passed over.
fn long_functions(text: &str) -> Vec<(usize, String, usize)> {
    let code = code_only(text);
    let lines: Vec<&str> = code.lines().collect();
    let raw: Vec<&str> = text.lines().collect();
    let mut found = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        let t = line.trim_start();
        let t = t.strip_prefix("pub ").or_else(|| t.strip_prefix("pub(crate) ")).unwrap_or(t);
        let t = t.strip_prefix("pub(super) ").unwrap_or(t);
        let t = t.strip_prefix("const ").unwrap_or(t);
        let t = t.strip_prefix("unsafe ").unwrap_or(t);
        let Some(rest) = t.strip_prefix("fn ") else { continue };
        let name: String = rest.chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect();
        let (mut depth, mut opened, mut end) = (0i64, false, None);
        'scan: for (j, l) in lines.iter().enumerate().skip(i) {
            for c in l.chars() {
                match c {
                    '{' => (depth, opened) = (depth + 1, true),
                    '}' => depth -= 1,
                    ';' if !opened => break 'scan,
                    _ => {}
                }
                if opened && depth == 0 {
                    end = Some(j);
                    break 'scan;
                }
            }
        }
        let Some(end) = end else { continue };
        let n = end - i + 1;
        let reason =
            raw[..i].iter().rev().take_while(|l| l.trim_start().starts_with("//")).any(|l| l.contains("Long:"));
        if n > FN_MAX_LINES && !reason {
            found.push((i + 1, name, n));
        }
    }
    found
}

#[test]
fn no_product_function_is_long_without_a_reason() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    rust_files(&root.join("src"), &mut files);
    rust_files(&root.join("platform"), &mut files);
    let mut problems = Vec::new();
    // Unit tests (`tests.rs`, `tests/` folders) are tables of cases, not product code.
    files.retain(|f| !f.components().any(|c| c.as_os_str() == "tests" || c.as_os_str() == "tests.rs"));
    for f in files {
        let text = std::fs::read_to_string(&f).unwrap();
        for (line, name, n) in long_functions(&text) {
            problems.push(format!("{}:{line}: fn {name} has {n} lines", f.display()));
        }
    }
    assert!(
        problems.is_empty(),
        "split these along their seams, or say why above them with `// Long:`:\n{}",
        problems.join("\n")
    );
}

#[test]
fn the_length_check_can_fail() {
    let body = |n: usize| (0..n).map(|i| format!("    let x{i} = \"}}\"; // {{\n")).collect::<String>();
    let long = format!("/// Doc.\npub fn long() {{\n{}}}\n", body(FN_MAX_LINES - 1));
    assert_eq!(long_functions(&long), [(2, "long".to_string(), FN_MAX_LINES + 1)]);
    let fits = format!("fn fits() {{\n{}}}\n", body(FN_MAX_LINES - 2));
    assert!(long_functions(&fits).is_empty());
    let reasoned = format!("// Long: a flat table.\nfn table() {{\n{}}}\n", body(FN_MAX_LINES));
    assert!(long_functions(&reasoned).is_empty());
    assert!(long_functions("trait T {\n    fn f(&self);\n}\n").is_empty(), "no body");
}

/// Every bug of `mutants/hand/` still applies to the code it was written against: a diff
/// that no longer applies (the code moved) plants nothing, and `make mutants-hand` would
/// then count a bug as caught that was never there.
#[test]
fn every_hand_bug_still_applies() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let hand = root.join("mutants/hand");
    let mut diffs = Vec::new();
    for module in std::fs::read_dir(&hand).unwrap().flatten().filter(|e| e.path().is_dir()) {
        for e in std::fs::read_dir(module.path()).unwrap().flatten() {
            if e.path().extension().is_some_and(|x| x == "diff") {
                diffs.push(e.path());
            }
        }
    }
    assert!(diffs.len() > 50, "found too few hand bugs: {}", diffs.len());
    let mut stale = Vec::new();
    for d in &diffs {
        // `git apply --check` reads the tree as files (no index needed) and changes nothing.
        let out = std::process::Command::new("git").arg("apply").arg("--check").arg(d).current_dir(root).output();
        match out {
            Ok(o) if o.status.success() => {}
            Ok(o) => stale.push(format!("{}: {}", d.display(), String::from_utf8_lossy(&o.stderr).trim())),
            Err(e) => panic!("git apply could not run ({e}); git is needed to check the hand bugs"),
        }
    }
    assert!(
        stale.is_empty(),
        "hand bugs that no longer apply (remake them against the code as it is):\n{}",
        stale.join("\n")
    );
}
