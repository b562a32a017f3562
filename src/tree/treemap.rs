//! A picture of the tree: one self-contained SVG with a squarified treemap (Bruls,
//! Huizing and van Wijk's layout: rows of rectangles whose aspect ratio stays near 1),
//! read from the arena only.
//!
//! # What is drawn
//!
//! * The canvas (`Canvas`, 1200 × 800 unless `--treemap-size`) has a `viewBox` and no
//!   fixed size, so it scales to the window. A title bar (`TITLE_PX`) names the root and
//!   its total; a legend (`LEGEND_PX`) at the bottom gives each top-level directory's
//!   colour, name and size; the map fills the rest.
//! * The map is the root: each top-level rectangle's area is its size (disk usage, or
//!   apparent size) over the root's, times the map's. A directory whose box is tall
//!   enough and whose name fits gets a header strip (`HEADER_PX`) with its name, and its
//!   size where that fits too; its children tile the rest of its box exactly, without
//!   padding, so each area is its share of its parent's box. What a directory's own
//!   inode uses is left uncovered inside it.
//! * Labels are whole or absent: `text_px` estimates a text's width on the wide side, and
//!   a name that does not fit its box is not drawn (its hover title still says it). Each
//!   `<text>` records the box it must stay in (`data-box`), which the tests check against
//!   Chromium's layout.
//! * Colours follow the top-level directory: the root's `k`-th largest child gets hue
//!   `k` × 137.5° (the golden angle, so neighbours differ), deeper levels are lighter;
//!   files directly in the root are grey. Merged small items are paler.
//! * Bounds: a child whose rectangle would be smaller than `MIN_AREA` square pixels is
//!   merged with its small siblings into one "N small items" rectangle per directory, and
//!   directories are opened largest first until `MAX_RECTS` rectangles are drawn (the
//!   rest stay closed, one rectangle each). So the file holds at most about `MAX_RECTS` +
//!   `WIDTH` × `HEIGHT` / `MIN_AREA` rectangles (~6,400) whatever the tree's size.
//! * Every rectangle carries a `<title>` (full path and size, shown on hover) and a
//!   `data-bytes` attribute (`data-header` too when it has a header). Names are bytes: they
//!   are decoded lossily and escaped, control characters become their Unicode control
//!   pictures, so any name gives valid XML.
//! * Deterministic: children are ordered by size, then by name; no clock, no hash order.

use crate::meta::{Kind, Measure};
use crate::text::units::{format_size, Scale};
use crate::tree::arena::{self, Arena};
use crate::tree::compare::entry_size;
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

/// Height of the title bar (root path and total) above the map, in pixels.
pub const TITLE_PX: f64 = 24.0;
/// Height of the legend (top-level directories and their colours) below the map.
pub const LEGEND_PX: f64 = 20.0;
/// Height of a directory's header strip (its name, and size where that fits too).
pub const HEADER_PX: f64 = 15.0;
/// Font size of labels and headers; the title's is `TITLE_FONT_PX`.
const FONT_PX: f64 = 11.0;
const TITLE_FONT_PX: f64 = 13.0;

/// Width XML text `shown` takes at `font_px` (an entity such as `&amp;` is one
/// character), estimated on the wide side (sans-serif: narrow letters about a third of
/// the font size, capitals and digits about 0.7, `m` and `w` nearly the whole, wide
/// characters the whole), so a label that is drawn fits its box.
pub fn text_px(shown: &str, font_px: f64) -> f64 {
    let mut in_entity = false;
    let em: f64 = shown
        .chars()
        .map(|c| match c {
            '&' => {
                in_entity = true;
                0.72
            }
            ';' if in_entity => {
                in_entity = false;
                0.0
            }
            _ if in_entity => 0.0,
            'i' | 'j' | 'l' | 't' | 'f' | 'r' | 'I' | '.' | ',' | ':' | ';' | '|' | '!' | '\'' | ' ' => 0.36,
            'm' | 'w' | 'M' | 'W' | '@' | '%' => 0.95,
            'A'..='Z' | '0'..='9' | '#' | '_' => 0.72,
            c if c.is_ascii() => 0.62,
            c => 0.62 * crate::term::width::char_width(c).max(1) as f64 + 0.2,
        })
        .sum();
    em * font_px
}

/// Appends a `<text>` of `shown` (XML text) at the top left of `r` when all of it fits,
/// else nothing: labels are whole or absent. `data-box` records the box it must stay in.
fn label_into(out: &mut String, shown: &str, r: Rect, font_px: f64) -> bool {
    if r.h < font_px + 3.0 || text_px(shown, font_px) + 4.0 > r.w {
        return false;
    }
    out.push_str(&format!(
        "<text x=\"{:.2}\" y=\"{:.2}\" data-box=\"{:.2} {:.2} {:.2} {:.2}\">{shown}</text>\n",
        r.x + 2.0,
        r.y + font_px + 0.5,
        r.x,
        r.y,
        r.w,
        r.h
    ));
    true
}

/// The header of an opened directory: its name and size, or its name alone, when the
/// box is tall enough to keep room for its contents; false when none fits.
fn header_into(out: &mut String, name: &[u8], size: &str, r: Rect) -> bool {
    if r.h < 3.0 * HEADER_PX {
        return false;
    }
    let strip = Rect { h: HEADER_PX, ..r };
    let shown = xml_text(name);
    label_into(out, &format!("{shown}  {size}"), strip, FONT_PX) || label_into(out, &shown, strip, FONT_PX)
}

/// The picture's frame: the canvas size and where the map goes inside it.
#[derive(Clone, Copy)]
pub struct Canvas {
    pub width_px: f64,
    pub height_px: f64,
}

impl Default for Canvas {
    fn default() -> Self {
        Canvas { width_px: WIDTH, height_px: HEIGHT }
    }
}

/// `WIDTHxHEIGHT` (`--treemap-size`), each 300 to 20000 pixels.
pub fn parse_size(text: &str) -> Option<Canvas> {
    let (w, h) = text.split_once(['x', 'X'])?;
    let px = |v: &str| v.parse::<u32>().ok().filter(|n| (300..=20_000).contains(n)).map(f64::from);
    Some(Canvas { width_px: px(w)?, height_px: px(h)? })
}

impl Canvas {
    /// The map's rectangle: the canvas less the title bar and the legend.
    fn map(&self) -> Rect {
        Rect { x: 0.0, y: TITLE_PX, w: self.width_px, h: (self.height_px - TITLE_PX - LEGEND_PX).max(1.0) }
    }
}

/// What the layout pass produced: the rectangles, the labels, and the top-level
/// directories (name, hue, size) for the legend.
#[derive(Default)]
struct Drawn {
    rects: String,
    labels: String,
    legend: Vec<(Vec<u8>, u32, u64)>,
}

/// Lays the tree of `root` (of `total` bytes by `m`) out in `map`.
fn layout(a: &Arena, root: u32, m: Measure, total: u64, map: Rect) -> Drawn {
    let scale = Scale::human(true);
    let size_line = |size: u64| format!("{} ({size} bytes)", format_size(size, scale));
    let mut d = Drawn::default();
    if total == 0 {
        return d;
    }
    let mut n_rects = 0usize;
    let mut queue = BinaryHeap::new();
    let mut seq = 0u64;
    queue.push(Open { area: map.w * map.h, seq: 0, dir: root, rect: map, hue: None, depth: 0 });
    while let Some(open) = queue.pop() {
        let dir_total = dir_size(a, open.dir, m);
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
            let is_dir = item.id != SMALL && a.kind(item.id) == Kind::Dir;
            let hue = if open.depth == 0 && !is_dir { None } else { hue };
            if open.depth == 0 && is_dir {
                d.legend.push((item.name.clone(), hue.unwrap_or(0), item.size));
            }
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
            n_rects += 1;
            let open_it = is_dir && n_rects < MAX_RECTS && r.w * r.h >= 2.0 * MIN_AREA;
            let header = open_it && header_into(&mut d.labels, &item.name, &format_size(item.size, scale), r);
            let fill = colour(hue, open.depth + u32::from(!is_dir), item.id == SMALL);
            let header_attr = if header { format!(" data-header=\"{HEADER_PX}\"") } else { String::new() };
            d.rects.push_str(&format!(
                "<rect x=\"{:.2}\" y=\"{:.2}\" width=\"{:.2}\" height=\"{:.2}\" fill=\"{fill}\" data-bytes=\"{}\"{header_attr}><title>{title}\n{}</title></rect>\n",
                r.x, r.y, r.w, r.h, item.size, size_line(item.size)
            ));
            if open_it {
                // Below its header, if it has one, the directory's contents fill the rest.
                let inner = if header { Rect { y: r.y + HEADER_PX, h: r.h - HEADER_PX, ..r } } else { r };
                seq += 1;
                let dir = a.dir_of(item.id);
                queue.push(Open { area: inner.w * inner.h, seq, dir, rect: inner, hue, depth: open.depth + 1 });
            } else {
                label_into(&mut d.labels, &label, r, FONT_PX);
            }
        }
    }
    d
}

fn dir_size(a: &Arena, dir: u32, m: Measure) -> u64 {
    let t = a.dir_totals(dir);
    if m == Measure::Disk {
        t.0
    } else {
        t.1
    }
}

/// The legend below the map: a swatch and "name size" per top-level directory, largest
/// first, as many as fit whole in one line, then how many more there are.
fn legend(c: &Canvas, entries: &[(Vec<u8>, u32, u64)]) -> String {
    let scale = Scale::human(true);
    let y = c.height_px - LEGEND_PX;
    let mut out = format!("<g font-size=\"{FONT_PX}\" fill=\"#111\">\n");
    let mut x = 6.0;
    for (k, (name, hue, size)) in entries.iter().enumerate() {
        let shown = format!("{}  {}", xml_text(name), format_size(*size, scale));
        let need = 14.0 + text_px(&shown, FONT_PX) + 12.0;
        let more = entries.len() - k;
        let room_for_more = if more > 1 { text_px(&format!("+{more} more"), FONT_PX) + 8.0 } else { 0.0 };
        if x + need + room_for_more > c.width_px {
            let text = format!("+{more} more");
            let r = Rect { x, y: y + 2.0, w: c.width_px - x, h: LEGEND_PX - 2.0 };
            label_into(&mut out, &text, r, FONT_PX);
            break;
        }
        out.push_str(&format!(
            "<rect x=\"{x:.2}\" y=\"{:.2}\" width=\"10\" height=\"10\" fill=\"{}\"/>\n",
            y + 5.0,
            colour(Some(*hue), 1, false)
        ));
        let r = Rect { x: x + 12.0, y: y + 2.0, w: need - 12.0, h: LEGEND_PX - 2.0 };
        label_into(&mut out, &shown, r, FONT_PX);
        x += need;
    }
    out.push_str("</g>\n");
    out
}

/// The title bar: the root's path and its total, the path shortened at its start (whole
/// components dropped, `…/` in front) if the line would not fit.
fn title(c: &Canvas, root_path: &[u8], total: u64, m: Measure) -> String {
    let what = if m == Measure::Disk { "disk usage" } else { "apparent size" };
    let size = format!("{} ({total} bytes, {what})", format_size(total, Scale::human(true)));
    let mut path = String::from_utf8_lossy(root_path).into_owned();
    while text_px(&format!("{}  {size}", xml_text(path.as_bytes())), TITLE_FONT_PX) + 12.0 > c.width_px {
        match path.trim_start_matches("…/").find('/') {
            Some(cut) => path = format!("…/{}", &path.trim_start_matches("…/")[cut + 1..]),
            None => break,
        }
    }
    let shown = format!("{}  {size}", xml_text(path.as_bytes()));
    format!(
        "<text x=\"6\" y=\"{:.2}\" font-size=\"{TITLE_FONT_PX}\" font-weight=\"bold\" fill=\"#111\" data-box=\"0 0 {:.2} {TITLE_PX}\">{shown}</text>\n",
        TITLE_PX - 7.0,
        c.width_px
    )
}

/// Writes the treemap of root directory `root` to `w`: a title bar with the root and its
/// total, the map, and a legend of the top-level directories. The SVG has a `viewBox` of
/// the canvas and no fixed size, so it scales to the window that shows it.
pub fn write_svg(a: &Arena, root: u32, m: Measure, c: Canvas, w: &mut dyn Write) -> io::Result<()> {
    let total = dir_size(a, root, m);
    let root_path = dir_path(a, root);
    let drawn = layout(a, root, m, total, c.map());
    let (cw, ch) = (c.width_px, c.height_px);
    write!(
        w,
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<svg xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 {cw} {ch}\" font-family=\"sans-serif\" font-size=\"{FONT_PX}\">\n<title>{}: {} ({total} bytes)</title>\n<rect x=\"0\" y=\"0\" width=\"{cw}\" height=\"{ch}\" fill=\"#f4f4f4\"/>\n",
        xml_text(&root_path),
        format_size(total, Scale::human(true))
    )?;
    w.write_all(title(&c, &root_path, total, m).as_bytes())?;
    w.write_all(b"<g stroke=\"#fff\" stroke-width=\"0.5\">\n")?;
    w.write_all(drawn.rects.as_bytes())?;
    w.write_all(b"</g>\n<g fill=\"#111\" pointer-events=\"none\">\n")?;
    w.write_all(drawn.labels.as_bytes())?;
    w.write_all(b"</g>\n")?;
    w.write_all(legend(&c, &drawn.legend).as_bytes())?;
    w.write_all(b"</svg>\n")?;
    w.flush()
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

    /// Issue 31: labels were cut to 2-4 letters and an ellipsis. A label is drawn whole
    /// when its box holds it, else not at all; the estimate errs wide.
    #[test]
    fn labels_are_whole_or_absent() {
        let mut out = String::new();
        let fits = Rect { x: 10.0, y: 10.0, w: text_px("share", FONT_PX) + 4.0, h: 20.0 };
        assert!(label_into(&mut out, "share", fits, FONT_PX));
        assert!(out.contains(">share</text>") && out.contains("data-box=\"10.00 10.00"), "{out}");
        out.clear();
        assert!(!label_into(&mut out, "share", Rect { w: fits.w - 1.0, ..fits }, FONT_PX));
        assert!(!label_into(&mut out, "share", Rect { h: 12.0, ..fits }, FONT_PX));
        assert!(out.is_empty());
        // Wider letters, wide characters and entities measure as such.
        assert!(text_px("mmmm", 11.0) > text_px("iiii", 11.0) * 2.0);
        assert!(text_px("日本", 11.0) >= 2.0 * 11.0);
        assert_eq!(text_px("&amp;", 11.0), text_px("A", 11.0));
    }

    #[test]
    fn treemap_sizes_parse_within_bounds() {
        assert!(parse_size("1920x1080").is_some_and(|c| c.width_px == 1920.0 && c.height_px == 1080.0));
        for bad in ["1920", "x", "299x800", "800x20001", "-5x800", "12.5x800"] {
            assert!(parse_size(bad).is_none(), "{bad}");
        }
    }

    #[test]
    fn xml_text_is_always_valid() {
        assert_eq!(xml_text(b"a<b>&\"'"), "a&lt;b&gt;&amp;&quot;&apos;");
        assert_eq!(xml_text(b"\x01\n\x7f\xff"), "\u{2401}\u{240a}\u{2421}\u{fffd}");
        assert_eq!(xml_text("\u{ffff}".as_bytes()), "\u{fffd}");
    }
}
