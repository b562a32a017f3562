//! Paths of arena entries, as the user typed the root: a directory's ancestors' names
//! joined with `/` (`dir_path`), and a child's (`child_path`).

use crate::tree::arena::{self, Arena};

/// The path of directory index `dir`: its ancestors' names joined with `/` (a root's name
/// is its path).
pub fn dir_path(a: &Arena, dir: u32) -> Vec<u8> {
    let mut parts = Vec::new();
    let mut d = dir;
    while d != arena::NO_DIR {
        parts.push(a.dir_name(d));
        d = a.dir_parent(d);
    }
    let mut out = Vec::new();
    for (i, p) in parts.iter().rev().enumerate() {
        if i > 0 && !out.ends_with(b"/") {
            out.push(b'/');
        }
        out.extend_from_slice(p);
    }
    out
}

/// The path of child `id` of directory `dir`.
pub fn child_path(a: &Arena, dir: u32, id: u32) -> Vec<u8> {
    let mut out = dir_path(a, dir);
    let mut name = Vec::new();
    a.child_name(dir, id, &mut name);
    if !out.ends_with(b"/") {
        out.push(b'/');
    }
    out.extend_from_slice(&name);
    out
}
