//! A picture of the tree: one self-contained SVG with a squarified treemap (Bruls,
//! Huizing and van Wijk's layout: rows of rectangles whose aspect ratio stays near 1),
//! read from the arena only.
//!
//! # What is drawn
//!
//! * The canvas (`WIDTH` × `HEIGHT`) is the root; every rectangle's area is its size (disk
//!   usage, or apparent size) over the root's, times the canvas. Children tile their
//!   directory's rectangle exactly, without padding, so areas stay proportional; what a
//!   directory's own inode uses is left uncovered inside it.
//! * Colours follow the top-level directory: the root's `k`-th largest child gets hue
//!   `k` × 137.5° (the golden angle, so neighbours differ), deeper levels are lighter;
//!   files directly in the root are grey. Merged small items are paler.
//! * Bounds: a child whose rectangle would be smaller than `MIN_AREA` square pixels is
//!   merged with its small siblings into one "N small items" rectangle per directory, and
//!   directories are opened largest first until `MAX_RECTS` rectangles are drawn (the
//!   rest stay closed, one rectangle each). So the file holds at most about `MAX_RECTS` +
//!   `WIDTH` × `HEIGHT` / `MIN_AREA` rectangles (~6,400) whatever the tree's size.
//! * Every rectangle carries a `<title>` (full path and size, shown on hover) and a
//!   `data-bytes` attribute; labels are drawn where the text fits. Names are bytes: they
//!   are decoded lossily and escaped, control characters become their Unicode control
//!   pictures, so any name gives valid XML.
//! * Deterministic: children are ordered by size, then by name; no clock, no hash order.

use crate::text::units::{format_size, Scale};
use crate::tree::arena::{self, Arena};
use crate::tree::diff::{entry_size, Measure};
use crate::tree::path::dir_path;
use std::cmp::Ordering;
use std::collections::BinaryHeap;
use std::io::{self, Write};

pub const WIDTH: f64 = 1200.0;
pub const HEIGHT: f64 = 800.0;
/// Smallest rectangle drawn on its own, in square pixels (20 × 20).
pub const MIN_AREA: f64 = 400.0;
/// Directories are opened while fewer rectangles than this have been drawn.
pub const MAX_RECTS: usize = 4000;

#[derive(Clone, Copy)]
struct Rect {
    x: f64,
    y: f64,
    w: f64,
    h: f64,
}

/// One thing to place inside a directory.
struct Item {
    size: u64,
    /// Entry id, or `SMALL` for the merged small items, `OWN` for the directory itself.
    id: u32,
    name: Vec<u8>,
    n_small: u64,
}
// Entry ids stay below `NONE - 1` (the arena's `ID_END`), so neither is ever an entry.
const SMALL: u32 = arena::NONE;
const OWN: u32 = arena::NONE - 1;

/// A directory waiting to be opened, largest rectangle first.
struct Open {
    area: f64,
    /// Order of pushing: ties in area go first-come, whatever the directory indices
    /// (a scan numbers directories in thread order).
    seq: u64,
    dir: u32,
    rect: Rect,
    hue: Option<u32>,
    depth: u32,
}
impl PartialEq for Open {
    fn eq(&self, o: &Self) -> bool {
        self.cmp(o) == Ordering::Equal
    }
}
impl Eq for Open {}
impl PartialOrd for Open {
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for Open {
    fn cmp(&self, o: &Self) -> Ordering {
        self.area.total_cmp(&o.area).then(o.seq.cmp(&self.seq))
    }
}

/// Lays out `items` (sizes already scaled to areas that fill `r`) as squarified rows.
fn squarify(areas: &[f64], mut r: Rect) -> Vec<Rect> {
    let mut out = Vec::with_capacity(areas.len());
    let worst = |max: f64, min: f64, sum: f64, side: f64| {
        let (s2, w2) = (sum * sum, side * side);
        (w2 * max / s2).max(s2 / (w2 * min))
    };
    let mut i = 0;
    while i < areas.len() {
        let side = r.w.min(r.h).max(1e-9);
        let (mut j, mut sum) = (i + 1, areas[i]);
        let mut best = worst(areas[i], areas[i], sum, side);
        while j < areas.len() {
            let w = worst(areas[i], areas[j], sum + areas[j], side);
            if w > best {
                break;
            }
            best = w;
            sum += areas[j];
            j += 1;
        }
        let last = j == areas.len();
        if r.w >= r.h {
            // A column at the left.
            let cw = if last { r.w } else { (sum / r.h.max(1e-9)).min(r.w) };
            let mut y = r.y;
            for (k, &a) in areas[i..j].iter().enumerate() {
                let h = if k + 1 == j - i { r.y + r.h - y } else { a / cw.max(1e-9) };
                out.push(Rect { x: r.x, y, w: cw, h });
                y += h;
            }
            r = Rect { x: r.x + cw, y: r.y, w: r.w - cw, h: r.h };
        } else {
            let rh = if last { r.h } else { (sum / r.w.max(1e-9)).min(r.h) };
            let mut x = r.x;
            for (k, &a) in areas[i..j].iter().enumerate() {
                let w = if k + 1 == j - i { r.x + r.w - x } else { a / rh.max(1e-9) };
                out.push(Rect { x, y: r.y, w, h: rh });
                x += w;
            }
            r = Rect { x: r.x, y: r.y + rh, w: r.w, h: r.h - rh };
        }
        i = j;
    }
    out
}

/// Text for XML: lossy UTF-8, markup escaped, characters XML forbids made visible.
pub fn xml_text(bytes: &[u8]) -> String {
    let mut out = String::new();
    for c in String::from_utf8_lossy(bytes).chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            c if (c as u32) < 0x20 => out.push(char::from_u32(0x2400 + c as u32).unwrap_or('\u{fffd}')),
            '\u{7f}' => out.push('\u{2421}'),
            '\u{fffe}' | '\u{ffff}' => out.push('\u{fffd}'),
            c => out.push(c),
        }
    }
    out
}

/// The children of `dir` worth drawing, largest first (ties by name), the small ones
/// merged, the directory's own size as the last item.
fn items(a: &Arena, dir: u32, m: Measure, px_per_byte: f64) -> Vec<Item> {
    let mut out = Vec::new();
    let mut small = Item { size: 0, id: SMALL, name: Vec::new(), n_small: 0 };
    if let Some(range) = a.children(dir) {
        let mut at = a.names_at(dir);
        for id in range {
            let mut name = Vec::new();
            at = a.read_name(at, &mut name);
            let size = entry_size(a, id, m);
            if size == 0 {
                continue;
            }
            if size as f64 * px_per_byte < MIN_AREA {
                small.size += size;
                small.n_small += 1;
            } else {
                out.push(Item { size, id, name, n_small: 0 });
            }
        }
    }
    out.sort_by(|x, y| y.size.cmp(&x.size).then_with(|| x.name.cmp(&y.name)));
    if small.n_small > 0 {
        out.push(small);
    }
    let t = a.dir_totals(dir);
    let total = if m == Measure::Disk { t.0 } else { t.1 };
    let sum: u64 = out.iter().map(|i| i.size).sum();
    // What the children do not account for (the directory's own inode) stays uncovered.
    let rest = total.saturating_sub(sum);
    if rest > 0 {
        out.push(Item { size: rest, id: OWN, name: Vec::new(), n_small: 0 });
    }
    out
}

fn colour(hue: Option<u32>, depth: u32, pale: bool) -> String {
    let light = (40 + depth * 7).min(80) + if pale { 10 } else { 0 };
    match hue {
        Some(h) => format!("hsl({},{}%,{}%)", h, if pale { 25 } else { 55 }, light.min(90)),
        None => format!("hsl(0,0%,{}%)", light.min(90)),
    }
}

/// Writes the treemap of root directory `root` to `w`.
pub fn write_svg(a: &Arena, root: u32, m: Measure, w: &mut dyn Write) -> io::Result<()> {
    let scale = Scale::human(true);
    let mut body = String::new();
    let mut labels = String::new();
    let total = {
        let t = a.dir_totals(root);
        if m == Measure::Disk {
            t.0
        } else {
            t.1
        }
    };
    let mut n_rects = 0usize;
    let canvas = Rect { x: 0.0, y: 0.0, w: WIDTH, h: HEIGHT };
    let root_path = dir_path(a, root);
    let size_line = |size: u64| format!("{} ({size} bytes)", format_size(size, scale));
    if total > 0 {
        let mut queue = BinaryHeap::new();
        let mut seq = 0u64;
        queue.push(Open { area: WIDTH * HEIGHT, seq: 0, dir: root, rect: canvas, hue: None, depth: 0 });
        while let Some(open) = queue.pop() {
            let dir_total = {
                let t = a.dir_totals(open.dir);
                if m == Measure::Disk {
                    t.0
                } else {
                    t.1
                }
            };
            if dir_total == 0 {
                continue;
            }
            let px_per_byte = open.area / dir_total as f64;
            let list = items(a, open.dir, m, px_per_byte);
            let sizes: u64 = list.iter().map(|i| i.size).sum::<u64>().max(1);
            let areas: Vec<f64> = list.iter().map(|i| i.size as f64 / sizes as f64 * open.area).collect();
            let rects = squarify(&areas, open.rect);
            let path = dir_path(a, open.dir);
            for (k, (item, r)) in list.iter().zip(rects).enumerate() {
                if item.id == OWN {
                    continue;
                }
                let hue = open.hue.or((open.depth == 0).then_some((k as u32 * 1375 / 10) % 360));
                let is_dir = item.id != SMALL && a.kind(item.id) == arena::KIND_DIR;
                let hue = if open.depth == 0 && !is_dir { None } else { hue };
                let (title, label) = if item.id == SMALL {
                    let n = item.n_small;
                    (format!("{}/ ({n} small items)", xml_text(&path)), format!("{n} small items"))
                } else {
                    let mut p = path.clone();
                    if !p.ends_with(b"/") {
                        p.push(b'/');
                    }
                    p.extend_from_slice(&item.name);
                    (xml_text(&p), xml_text(&item.name))
                };
                let fill = colour(hue, open.depth + u32::from(!is_dir), item.id == SMALL);
                body.push_str(&format!(
                    "<rect x=\"{:.2}\" y=\"{:.2}\" width=\"{:.2}\" height=\"{:.2}\" fill=\"{fill}\" data-bytes=\"{}\"><title>{title}\n{}</title></rect>\n",
                    r.x, r.y, r.w, r.h, item.size, size_line(item.size)
                ));
                n_rects += 1;
                let open_it = is_dir && n_rects < MAX_RECTS && r.w * r.h >= 2.0 * MIN_AREA;
                if open_it {
                    let dir = a.dir_of(item.id);
                    seq += 1;
                    queue.push(Open { area: r.w * r.h, seq, dir, rect: r, hue, depth: open.depth + 1 });
                } else {
                    label_into(&mut labels, &label, r);
                }
            }
        }
    }
    write!(
        w,
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{WIDTH}\" height=\"{HEIGHT}\" viewBox=\"0 0 {WIDTH} {HEIGHT}\" font-family=\"sans-serif\" font-size=\"11\">\n<title>{}: {}</title>\n<rect x=\"0\" y=\"0\" width=\"{WIDTH}\" height=\"{HEIGHT}\" fill=\"#f4f4f4\"/>\n<g stroke=\"#fff\" stroke-width=\"0.5\">\n",
        xml_text(&root_path),
        size_line(total)
    )?;
    w.write_all(body.as_bytes())?;
    w.write_all(b"</g>\n<g fill=\"#111\" pointer-events=\"none\">\n")?;
    w.write_all(labels.as_bytes())?;
    w.write_all(b"</g>\n</svg>\n")?;
    w.flush()
}

/// A label inside `r` if at least a few characters fit (about 6.2 px each at 11 px).
fn label_into(out: &mut String, text: &str, r: Rect) {
    if r.h < 13.0 || r.w < 30.0 {
        return;
    }
    let fit = ((r.w - 4.0) / 6.2) as usize;
    let n = text.chars().count();
    let shown: String = if n <= fit {
        text.to_string()
    } else if fit >= 4 {
        // Cut on a character, never inside an entity.
        let mut s = String::new();
        let mut chars = text.chars().peekable();
        let mut used = 0;
        while let Some(c) = chars.next() {
            if used + 1 >= fit {
                break;
            }
            if c == '&' {
                let mut ent = String::from('&');
                for d in chars.by_ref() {
                    ent.push(d);
                    if d == ';' {
                        break;
                    }
                }
                s.push_str(&ent);
            } else {
                s.push(c);
            }
            used += 1;
        }
        s.push('…');
        s
    } else {
        return;
    };
    out.push_str(&format!("<text x=\"{:.2}\" y=\"{:.2}\">{shown}</text>\n", r.x + 2.0, r.y + 11.5));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn squarify_areas_are_kept() {
        let areas = [500.0, 300.0, 120.0, 50.0, 20.0, 10.0];
        let total: f64 = areas.iter().sum();
        let r = Rect { x: 0.0, y: 0.0, w: 40.0, h: total / 40.0 };
        let rects = squarify(&areas, r);
        for (a, q) in areas.iter().zip(&rects) {
            assert!((q.w * q.h - a).abs() < 1e-6, "{a} vs {}", q.w * q.h);
            assert!(q.x >= 0.0 && q.y >= 0.0 && q.x + q.w <= 40.0 + 1e-9);
        }
    }

    #[test]
    fn xml_text_is_always_valid() {
        assert_eq!(xml_text(b"a<b>&\"'"), "a&lt;b&gt;&amp;&quot;&apos;");
        assert_eq!(xml_text(b"\x01\n\x7f\xff"), "\u{2401}\u{240a}\u{2421}\u{fffd}");
        assert_eq!(xml_text("\u{ffff}".as_bytes()), "\u{fffd}");
    }
}
