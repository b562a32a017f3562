//! No import cycles among the harness's modules: a module that uses another never finds
//! itself used back, directly or through others. A helper that two modules both need
//! lives in the lower one (or in one of the small shared modules such as `tools.rs` or
//! `report.rs`), so `ls xtask/src` can be read bottom-up, as the product's layering rule
//! asks of `src/`.
//!
//! A module is a file of `xtask/src/` (`lib.rs` and `main.rs`, the roots, are left out);
//! it uses another when its code names `crate::OTHER`, alone or in a `use crate::{…}`
//! group. Comments, string literals and the unit tests at the end of a file (from
//! `#[cfg(test)]` on) do not count.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// Each module's text, by name, from `xtask/src`.
fn modules() -> BTreeMap<String, String> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut out = BTreeMap::new();
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        let Some(name) = path.file_stem().and_then(|s| s.to_str()) else { continue };
        if path.extension().is_some_and(|e| e == "rs") && name != "lib" && name != "main" {
            out.insert(name.to_string(), std::fs::read_to_string(&path).unwrap());
        }
    }
    out
}

/// The code of a file: no comments, no string or character literals, nothing from the
/// first `#[cfg(test)]` on.
fn code_of(text: &str) -> String {
    let text = text.split("#[cfg(test)]").next().unwrap_or("");
    let b = text.as_bytes();
    let (mut out, mut i) = (String::new(), 0);
    while i < b.len() {
        match b[i] {
            b'/' if b.get(i + 1) == Some(&b'/') => {
                while i < b.len() && b[i] != b'\n' {
                    i += 1;
                }
            }
            b'/' if b.get(i + 1) == Some(&b'*') => {
                i += 2;
                while i + 1 < b.len() && !(b[i] == b'*' && b[i + 1] == b'/') {
                    i += 1;
                }
                i += 2;
            }
            b'"' => {
                i += 1;
                while i < b.len() && b[i] != b'"' {
                    i += if b[i] == b'\\' { 2 } else { 1 };
                }
                i += 1;
                out.push_str("\"\"");
            }
            // A character literal ('x', '\n', '"'); a lifetime ('a) is left alone.
            b'\'' if b.get(i + 2) == Some(&b'\'') || b.get(i + 1) == Some(&b'\\') => {
                i += 1;
                while i < b.len() && b[i] != b'\'' {
                    i += if b[i] == b'\\' { 2 } else { 1 };
                }
                i += 1;
                out.push_str("' '");
            }
            c => {
                out.push(c as char);
                i += 1;
            }
        }
    }
    out
}

/// The modules a file's code names: `crate::NAME`, and the first name of each path in
/// a `use crate::{…}` group.
fn uses(text: &str) -> BTreeSet<String> {
    let code = code_of(text);
    let ident = |s: &str| s.chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect::<String>();
    let mut out = BTreeSet::new();
    for (at, _) in code.match_indices("crate::") {
        let rest = code[at + "crate::".len()..].trim_start();
        if let Some(group) = rest.strip_prefix('{') {
            // Only the top level of the group: `{a, b::{c, d}}` uses `a` and `b`.
            let (mut depth, mut start) = (0, true);
            for (k, c) in group.char_indices() {
                match c {
                    '{' => depth += 1,
                    '}' if depth == 0 => break,
                    '}' => depth -= 1,
                    ',' if depth == 0 => start = true,
                    c if start && (c.is_alphanumeric() || c == '_') => {
                        out.insert(ident(&group[k..]));
                        start = false;
                    }
                    c if !c.is_whitespace() => start = false,
                    _ => {}
                }
            }
        } else {
            out.insert(ident(rest));
        }
    }
    out.retain(|m| !m.is_empty() && m != "self");
    out
}

/// Every cycle of the "uses" graph among `modules`, each once, as `a -> b -> a`, found
/// by a depth-first walk from each module (the graph has some twenty nodes).
fn cycles(graph: &BTreeMap<String, BTreeSet<String>>) -> Vec<String> {
    let mut found = BTreeSet::new();
    for start in graph.keys() {
        let mut stack: Vec<(String, Vec<String>)> = vec![(start.clone(), vec![start.clone()])];
        while let Some((node, path)) = stack.pop() {
            for next in graph.get(&node).into_iter().flatten() {
                if next == start {
                    // The same cycle from each of its members: name it from its smallest.
                    let least = path.iter().enumerate().min_by_key(|(_, m)| *m).map_or(0, |(k, _)| k);
                    let mut ring: Vec<&String> = path[least..].iter().chain(&path[..least]).collect();
                    ring.push(ring[0]);
                    found.insert(ring.iter().map(|m| m.as_str()).collect::<Vec<_>>().join(" -> "));
                } else if !path.contains(next) && graph.contains_key(next) && next > start {
                    let mut longer = path.clone();
                    longer.push(next.clone());
                    stack.push((next.clone(), longer));
                }
            }
        }
    }
    found.into_iter().collect()
}

fn graph_of(modules: &BTreeMap<String, String>) -> BTreeMap<String, BTreeSet<String>> {
    modules
        .iter()
        .map(|(name, text)| {
            let used = uses(text).into_iter().filter(|m| m != name && modules.contains_key(m)).collect();
            (name.clone(), used)
        })
        .collect()
}

#[test]
fn no_module_imports_one_that_imports_it_back() {
    let modules = modules();
    assert!(modules.len() > 10, "found too few modules in xtask/src: {}", modules.len());
    let found = cycles(&graph_of(&modules));
    assert!(
        found.is_empty(),
        "import cycles among xtask's modules (move the shared helper down):\n{}",
        found.join("\n")
    );
}

#[test]
fn the_cycle_check_can_fail() {
    let m = |pairs: &[(&str, &str)]| -> BTreeMap<String, String> {
        pairs.iter().map(|(n, t)| (n.to_string(), t.to_string())).collect()
    };
    // Direct, through a third module, and through a `use` group.
    let two = m(&[("a", "use crate::b::X;"), ("b", "fn f() { crate::a::g(); }")]);
    assert_eq!(cycles(&graph_of(&two)), ["a -> b -> a"]);
    let three =
        m(&[("a", "use crate::{cli, b::{self, Y}};"), ("b", "use crate::c;"), ("c", "use crate::a;"), ("cli", "")]);
    assert_eq!(cycles(&graph_of(&three)), ["a -> b -> c -> a"]);
    // Comments, strings, unit tests and a chain without a way back are not cycles.
    let none = m(&[
        ("a", "use crate::b; // crate::c\nlet s = \"crate::c\";\n#[cfg(test)]\nmod tests { use crate::c; }"),
        ("b", "use crate::c;"),
        ("c", "/* crate::a */ let q = '\"'; fn f<'a>(x: &'a str) {}"),
    ]);
    assert!(cycles(&graph_of(&none)).is_empty(), "{:?}", cycles(&graph_of(&none)));
}
