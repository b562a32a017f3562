//! The writer: the arena out as ncdu 2 writes its export, depth-first, one info object
//! per entry, names escaped so that any byte string survives (raw bytes above 0x7f are
//! written as they are, as ncdu does).

use super::{FREES_ESTIMATE, SHARED_KEYS};
use crate::meta::Kind;
use crate::tree::arena::{self, Arena};
use crate::tree::sharing::Figures;
use std::io::{self, Write};

fn write_name(out: &mut Vec<u8>, name: &[u8]) {
    out.push(b'"');
    for &b in name {
        match b {
            b'"' => out.extend_from_slice(b"\\\""),
            b'\\' => out.extend_from_slice(b"\\\\"),
            b'\n' => out.extend_from_slice(b"\\n"),
            b'\r' => out.extend_from_slice(b"\\r"),
            b'\t' => out.extend_from_slice(b"\\t"),
            0x08 => out.extend_from_slice(b"\\b"),
            0x0c => out.extend_from_slice(b"\\f"),
            0..=0x1f | 0x7f => out.extend_from_slice(format!("\\u{b:04x}").as_bytes()),
            _ => out.push(b),
        }
    }
    out.push(b'"');
}

/// One entry's info object (without the surrounding `[` for directories).
fn info(a: &Arena, id: u32, name: &[u8], dev: Option<u64>, shared: Option<&Figures>, out: &mut Vec<u8>) {
    let flags = a.flags(id);
    let kind = flags.kind();
    out.extend_from_slice(b"{\"name\":");
    write_name(out, name);
    // ncdu has no word for a loop; it is a mount of something already in the export.
    if flags.is_loop() {
        out.extend_from_slice(b",\"excluded\":\"otherfs\"}");
        return;
    }
    if flags.contains(arena::F_EXCLUDED) {
        out.extend_from_slice(b",\"excluded\":\"pattern\"}");
        return;
    }
    if flags.contains(arena::F_OTHER_FS) {
        out.extend_from_slice(b",\"excluded\":\"otherfs\"}");
        return;
    }
    if flags.contains(arena::F_ERROR) {
        out.extend_from_slice(b",\"read_error\":true}");
        return;
    }
    let (disk, apparent) = a.own_sizes(id);
    if apparent > 0 {
        out.extend_from_slice(format!(",\"asize\":{apparent}").as_bytes());
    }
    if disk > 0 {
        out.extend_from_slice(format!(",\"dsize\":{disk}").as_bytes());
    }
    if let Some(dev) = dev {
        out.extend_from_slice(format!(",\"dev\":{dev}").as_bytes());
    }
    if flags.contains(arena::F_HARDLINK) {
        if let Some((_, ino, nlink)) = a.link_of(id) {
            out.extend_from_slice(format!(",\"ino\":{ino},\"hlnkc\":true,\"nlink\":{nlink}").as_bytes());
        }
    }
    if let Some(s) = shared.filter(|_| kind == Kind::Dir).and_then(|f| f.get(a.dir_of(id))) {
        for (key, v) in SHARED_KEYS.iter().zip([s.total, s.exclusive, s.set_shared, s.disk_once, s.frees]) {
            out.extend_from_slice(format!(",\"{key}\":{v}").as_bytes());
        }
        if !s.frees_exact {
            out.extend_from_slice(format!(",\"{FREES_ESTIMATE}\":true").as_bytes());
        }
    }
    if kind == Kind::Dir && a.dir_flags(a.dir_of(id)).read_error() {
        out.extend_from_slice(b",\"read_error\":true");
    }
    if kind == Kind::Symlink || kind == Kind::Other {
        out.extend_from_slice(b",\"notreg\":true");
    }
    out.push(b'}');
}

/// Writes the tree under root directory `root` (its entry is named by its full path).
pub fn export(a: &Arena, root: u32, timestamp: u64, w: &mut dyn Write) -> io::Result<()> {
    let mut out = Vec::with_capacity(64 * 1024);
    out.extend_from_slice(
        format!(
            "[1,2,{{\"progname\":\"dfdu\",\"progver\":\"{}\",\"timestamp\":{timestamp}}},\n",
            env!("CARGO_PKG_VERSION")
        )
        .as_bytes(),
    );
    let mut name = a.dir_name(root);
    let root_entry = a.dir_entry(root);
    let figures = a.shared_figures();
    let shared = figures.as_deref();
    out.push(b'[');
    info(a, root_entry, &name, Some(a.dev_of(root).unwrap_or(0)), shared, &mut out);
    // Per open directory: (next child, end, where the next child's name is).
    let mut stack: Vec<(u32, u32, u32)> = Vec::new();
    let range = a.children(root).unwrap_or(0..0);
    stack.push((range.start, range.end, a.names_at(root)));
    while let Some(top) = stack.last_mut() {
        if top.0 == top.1 {
            stack.pop();
            out.push(b']');
            continue;
        }
        let id = top.0;
        top.0 += 1;
        top.2 = a.read_name(top.2, &mut name);
        out.extend_from_slice(b",\n");
        let flags = a.flags(id);
        if flags.is_dir() && !flags.intersects(arena::F_EXCLUDED | arena::F_ERROR) {
            let dir = a.dir_of(id);
            out.push(b'[');
            info(a, id, &name, a.dev_of(dir), shared, &mut out);
            if !flags.contains(arena::F_OTHER_FS) {
                let r = a.children(dir).unwrap_or(0..0);
                stack.push((r.start, r.end, a.names_at(dir)));
            } else {
                out.push(b']');
            }
        } else {
            info(a, id, &name, None, shared, &mut out);
        }
        if out.len() > 60 * 1024 {
            w.write_all(&out)?;
            out.clear();
        }
    }
    out.extend_from_slice(b"]\n");
    w.write_all(&out)?;
    w.flush()
}
