//! Drawing the view into a `term::Screen`: header, path, listing rows with their
//! marks and graph, footer, and the help, confirmation and info boxes.

use super::*;
use crate::meta::Kind;
use crate::platform;
use crate::term::{escape, fit, width, Color, Screen, Style};
use crate::tree::arena::{self};
use crate::tree::path::{child_path, dir_path};

/// `n` bytes in 9 columns: `  123 B  `, ` 12.5 KiB` (or `kB` with `--si`).
pub fn size_text(n: u64, si: bool) -> String {
    let (base, units): (f64, [&str; 7]) = if si {
        (1000.0, ["B", "kB", "MB", "GB", "TB", "PB", "EB"])
    } else {
        (1024.0, ["B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"])
    };
    if n < 1000 {
        return format!("{n:>5} B  ");
    }
    let mut v = n as f64;
    let mut u = 0;
    while v >= 999.95 && u < 6 {
        v /= base;
        u += 1;
    }
    format!("{v:>5.1} {:<3}", units[u])
}

/// `1234567` as `1,234,567`.
pub fn grouped(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

pub(super) fn time_text(sec: i64) -> String {
    match platform::local_time(sec) {
        Some(t) => format!("{:04}-{:02}-{:02} {:02}:{:02}", t.year, t.month, t.day, t.hour, t.minute),
        None => "?".into(),
    }
}

/// Box-drawing characters: corners, horizontal, vertical.
pub(super) struct Frame {
    pub(super) tl: char,
    pub(super) tr: char,
    pub(super) bl: char,
    pub(super) br: char,
    pub(super) h: char,
    pub(super) v: char,
}

pub(super) const FRAME_UNICODE: Frame = Frame { tl: '┌', tr: '┐', bl: '└', br: '┘', h: '─', v: '│' };
pub(super) const FRAME_ASCII: Frame = Frame { tl: '+', tr: '+', bl: '+', br: '+', h: '-', v: '|' };

pub(super) const HELP_KEYS: &[(&str, &str)] = &[
    ("up, k / down, j", "move the cursor"),
    ("PgUp / PgDn", "move a page"),
    ("Home / End", "first / last entry"),
    ("right, l, Enter", "open the selected directory"),
    ("left, h, <, Bksp", "go to the parent directory"),
    ("s  n  C  M", "sort by size, name, items, mtime"),
    ("x", "sort by exclusive bytes (--shared)"),
    ("D", "sort by change (with --diff; R rows last)"),
    ("", "(the same key again reverses)"),
    ("t", "directories first, on / off"),
    ("e", "hide / show dotfiles and excluded entries"),
    ("a", "apparent size / disk usage"),
    ("c  m", "item count column / modification time column"),
    ("g", "percentage, graph, both, none"),
    ("i", "information: sizes, mode, owner, group, mtime"),
    ("r", "rescan the selected directory"),
    ("b", "a shell there ($SHELL, DFDU_LEVEL set); rescan after"),
    ("/", "filter this directory as you type (Esc clears)"),
    ("f", "find by name in the whole tree, largest first"),
    ("", "(a substring; a glob with * ? [)"),
    ("Space", "mark / unmark the selected entry, then move down"),
    ("*  u", "mark everything here (again: unmark) / clear all marks"),
    ("d", "delete the selected entry, or every marked one (asks first)"),
    ("T", "move them to the trash instead (asks first)"),
    ("?  q", "this help / quit (asks during a deletion)"),
];

pub(super) const HELP_MARKS: &[(&str, &str)] = &[
    ("!", "could not be read"),
    (".", "something below could not be read"),
    ("*", "still being scanned"),
    ("<", "excluded (--exclude, --exclude-caches, ...)"),
    (">", "on another file system (-x), not entered"),
    ("^", "a loop (bind mount of an ancestor), not entered"),
    ("@", "symbolic link or special file"),
    ("H", "file with several hard links"),
    ("e", "empty directory"),
    ("R", "removed since the compared tree (--diff): not on"),
    ("", "disk; right/Enter shows what a removed directory"),
    ("", "held (all R); d and r do nothing there"),
    ("/name", "a directory"),
    ("", ""),
    ("", "Sizes of directories still being scanned grow"),
    ("", "as the scan goes; so do the totals."),
];

impl Browser<'_> {
    pub(super) fn frame_chars(&self) -> &'static Frame {
        if self.look.ascii {
            &FRAME_ASCII
        } else {
            &FRAME_UNICODE
        }
    }

    pub(super) fn tint(&self, style: Style, c: Color) -> Style {
        if self.look.color {
            style.fg(c)
        } else {
            style
        }
    }

    /// Draws a whole frame of `scr`'s size.
    pub fn render(&mut self, scr: &mut Screen, st: &Status) {
        scr.clear();
        let (w, h) = (scr.width, scr.height);
        if w < MIN_WIDTH || h < MIN_HEIGHT {
            let need = format!("need {MIN_WIDTH}x{MIN_HEIGHT}, have {w}x{h}");
            for (r, l) in ["dfdu: window too small", need.as_str(), "q quits"].iter().enumerate().take(h) {
                scr.put(r, 0, l, Style::PLAIN);
            }
            return;
        }
        self.refresh();
        let list_top = 2;
        let mut list_end = h - 2;
        let info = matches!(self.modal, Modal::Info) && self.sel_id.is_some();
        // Five more lines for the sharing-aware figures.
        let info_h =
            (if self.a.shared_figures().is_some() { 18 } else { 13 } + usize::from(self.compare.is_some())).min(h - 5);
        if info {
            list_end = (h - 2 - info_h).max(list_top + 1);
        }
        self.rows = list_end - list_top;
        self.scroll();
        self.draw_header(scr);
        self.draw_path(scr);
        self.draw_list(scr, list_top, list_end);
        match (&self.note, self.input_line()) {
            (_, Some(line)) => scr.put(h - 2, 0, &fit(&line, w), Style::BOLD),
            (Some(note), None) => scr.put(h - 2, 0, &fit(note, w), self.tint(Style::BOLD, Color::Yellow)),
            (None, None) => scr.put(h - 2, 0, &fit(&st.line, w), Style::PLAIN),
        };
        self.draw_footer(scr, st);
        match &self.modal {
            Modal::None => {}
            Modal::Info => {
                if let Some(id) = self.sel_id {
                    let lines = self.info_lines(id);
                    self.draw_box(scr, h - 2 - info_h, 0, info_h, w, " Entry ", &lines, None);
                }
            }
            Modal::Help { page, top } => self.draw_help(scr, *page, *top),
            Modal::Find => self.draw_found(scr),
            Modal::QuitDeleting => {
                let lines = vec![
                    "A deletion is running; the status line counts what it removed.".to_string(),
                    "Quitting stops it: what was removed stays removed, the rest stays.".to_string(),
                    String::new(),
                    "y: quit now    any other key: go on".to_string(),
                ];
                let bw = (w - 4).min(72);
                let bh = lines.len() + 2;
                self.draw_box(scr, (h - bh) / 2, (w - bw) / 2, bh, bw, " Quit during a deletion? ", &lines, Some(0));
            }
            Modal::Confirm { targets, marked: false, yes, mounts, trash } if targets.len() == 1 => {
                let (dir, id) = targets[0];
                self.draw_confirm(scr, dir, id, (*yes, *trash), *mounts)
            }
            Modal::Confirm { targets, yes, mounts, trash, .. } => {
                self.draw_confirm_marks(scr, targets, (*yes, *trash), *mounts)
            }
            Modal::Message { title, lines } => {
                let bw = (lines.iter().map(|l| width(l)).max().unwrap_or(0) + 4).clamp(30, (w - 4).min(76));
                let mut lines: Vec<String> = lines.iter().flat_map(|l| wrap(l, bw - 4)).collect();
                lines.push(String::new());
                lines.push("Press any key to continue.".into());
                let bh = (lines.len() + 2).min(h - 2);
                let title = format!(" {title} ");
                self.draw_box(scr, (h - bh) / 2, (w - bw) / 2, bh, bw, &title, &lines, None);
            }
        }
    }

    pub(super) fn scroll(&mut self) {
        let rows = self.rows.max(1);
        if self.sel < self.top {
            self.top = self.sel;
        }
        if self.sel >= self.top + rows {
            self.top = self.sel + 1 - rows;
        }
        self.top = self.top.min(self.items.len().saturating_sub(rows));
    }

    pub(super) fn draw_header(&self, scr: &mut Screen) {
        let w = scr.width;
        let tag = if self.limits.imported {
            " [imported] "
        } else if self.limits.read_only {
            " [read-only] "
        } else {
            ""
        };
        let title = format!(" dfdu {} ~ Use the arrow keys to navigate, press ? for help", env!("CARGO_PKG_VERSION"));
        scr.put(0, 0, &fit(&title, w - tag.len()), Style::REVERSE);
        scr.put(0, w - tag.len(), tag, Style { bold: true, ..Style::REVERSE });
    }

    /// The path of `dir` as the path line shows it: from the root's absolute path when
    /// it is known.
    pub(super) fn shown_path(&self, dir: u32) -> Vec<u8> {
        let path = dir_path(self.a, dir);
        let Some(abs) = &self.root_title else { return path };
        let root = dir_path(self.a, self.root);
        match path.strip_prefix(root.as_slice()) {
            Some(rest) if rest.is_empty() || rest[0] == b'/' || root.ends_with(b"/") => {
                let mut p = abs.clone();
                if !rest.is_empty() && !p.ends_with(b"/") && rest[0] != b'/' {
                    p.push(b'/');
                }
                p.extend_from_slice(rest);
                p
            }
            _ => path,
        }
    }

    pub(super) fn draw_path(&self, scr: &mut Screen) {
        let w = scr.width;
        let hc = self.frame_chars().h;
        let scanning = !self.a.dir_flags(self.cwd).is_done();
        let mut note = if scanning { " (scanning)".to_string() } else { String::new() };
        if self.trail.is_some() {
            note.push_str(" (removed since the compared tree: not on disk)");
        }
        if let Some((n, size)) = self.removed_here() {
            let minus = if self.look.ascii { '-' } else { '\u{2212}' };
            if self.compare.as_ref().is_some_and(|c| c.old_dir.is_none()) {
                note.push_str(" (new since the compared tree)");
            } else if n > 0 {
                note.push_str(&format!(" (removed here: {n}, {minus}{})", size_text(size, self.look.si)));
            }
        }
        let shown = self.items.len();
        if let Some(f) = &self.filter {
            let all = shown + self.filtered_out;
            note.push_str(&format!(" (filter {}: {shown} of {all})", escape(f.text.as_bytes())));
        } else if self.hide && self.filtered_out > 0 {
            note.push_str(&format!(" ({} hidden)", self.filtered_out));
        }
        let path = escape(&self.shown_path(self.cwd));
        let room = (w - 6).saturating_sub(width(&note));
        let path = if width(&path) > room { fit(&path, room) } else { path };
        let mut x = scr.put(1, 0, &format!("{hc}{hc}{hc} "), Style::PLAIN);
        x = scr.put(1, x, &path, Style::BOLD);
        x = scr.put(1, x, &note, self.tint(Style::PLAIN, Color::Yellow));
        x = scr.put(1, x, " ", Style::PLAIN);
        scr.fill(1, x, w - x, hc, Style::PLAIN);
    }

    pub(super) fn draw_list(&mut self, scr: &mut Screen, list_top: usize, list_end: usize) {
        if self.items.is_empty() {
            let flags = self.a.dir_flags(self.cwd);
            let why = if self.a.children(self.cwd).is_none() {
                "(not listed yet: scanning)"
            } else if flags.read_error() {
                "(could not be read)"
            } else if self.filter.is_some() {
                "(nothing here matches the filter; Esc clears it)"
            } else if self.hide && self.filtered_out > 0 {
                "(only hidden entries here; e shows them)"
            } else {
                "(empty directory)"
            };
            scr.put(list_top, 2, why, Style::PLAIN);
            return;
        }
        let (total_disk, total_apparent, _) = self.a.dir_totals(self.cwd);
        let total = if self.apparent { total_apparent } else { total_disk };
        // Bars compare what is here; removed rows have none (inside a removed directory
        // all rows are removed, and compare with each other).
        let here = |it: &&Item| !it.removed || self.trail.is_some();
        let max = self.items.iter().filter(here).map(|it| it.size).max().unwrap_or(0);
        let shown: Vec<usize> = (self.top..self.items.len()).take(list_end - list_top).collect();
        for (r, k) in shown.into_iter().enumerate() {
            self.draw_row(scr, list_top + r, k, total, max);
        }
    }

    pub(super) fn mark(&self, id: u32) -> (char, Color) {
        let a = self.a;
        let flags = a.flags(id);
        if self.is_gone(id) {
            return ('R', Color::Yellow);
        }
        if flags.contains(arena::F_ERROR) {
            return ('!', Color::Red);
        }
        if flags.is_loop() {
            return ('^', Color::Default);
        }
        if flags.contains(arena::F_EXCLUDED) {
            return ('<', Color::Default);
        }
        if flags.contains(arena::F_OTHER_FS) {
            return ('>', Color::Default);
        }
        match flags.kind() {
            Kind::Dir => {
                let d = a.dir_of(id);
                let df = a.dir_flags(d);
                if df.read_error() {
                    ('!', Color::Red)
                } else if !df.is_done() {
                    ('*', Color::Yellow)
                } else if df.error_below() {
                    ('.', Color::Red)
                } else if a.dir_totals(d).2 == 0 {
                    ('e', Color::Default)
                } else {
                    (' ', Color::Default)
                }
            }
            Kind::Symlink | Kind::Other => ('@', Color::Default),
            _ if flags.contains(arena::F_HARDLINK) => ('H', Color::Default),
            _ => (' ', Color::Default),
        }
    }

    pub(super) fn graph_text(&self, size: u64, total: u64, max: u64) -> String {
        let pct = if total == 0 { 0.0 } else { size as f64 * 100.0 / total as f64 };
        let pct = format!("{:>5.1}%", pct.min(100.0));
        let frac = if max == 0 { 0.0 } else { (size as f64 / max as f64).min(1.0) };
        let bar = if self.look.ascii {
            let n = (frac * 10.0).round() as usize;
            format!("[{}{}]", "#".repeat(n), " ".repeat(10 - n))
        } else {
            let eighths = (frac * 80.0).round() as usize;
            let mut b = "█".repeat(eighths / 8);
            if eighths % 8 > 0 {
                b.push([' ', '▏', '▎', '▍', '▌', '▋', '▊', '▉'][eighths % 8]);
            }
            let pad = 10 - width(&b);
            format!("[{b}{}]", " ".repeat(pad))
        };
        match self.graph {
            Graph::Bar => format!("{bar} "),
            Graph::Percent => format!("{pct} "),
            Graph::Both => format!("{pct} {bar} "),
            Graph::Off => String::new(),
        }
    }

    /// The graph column of a removed row: as wide as the graph, saying so.
    pub(super) fn removed_graph_text(&self) -> String {
        match self.graph {
            Graph::Bar => "[ removed  ] ".into(),
            Graph::Percent => "  gone ".into(),
            Graph::Both => "  gone [ removed  ] ".into(),
            Graph::Off => String::new(),
        }
    }

    pub(super) fn draw_row(&mut self, scr: &mut Screen, row: usize, k: usize, total: u64, max: u64) {
        let w = scr.width;
        let id = self.items[k].id;
        let selected = k == self.sel;
        let base = if selected { Style::REVERSE } else { Style::PLAIN };
        let paint = |style: Style| if selected { Style::REVERSE } else { style };
        if selected {
            scr.fill(row, 0, w, ' ', base);
        }
        let (mark, mark_color) = self.mark(id);
        let mut x = scr.put(row, 0, &mark.to_string(), paint(self.tint(Style::PLAIN, mark_color)));
        let size = self.size_of(id);
        // A space between the mark and the size: a nine-character size ("186.4 MiB") would
        // otherwise touch it.
        x = scr.put(row, x, &format!(" {} ", size_text(size, self.look.si)), base);
        let graph = if self.items[k].removed && self.trail.is_none() {
            self.removed_graph_text()
        } else {
            self.graph_text(size, total, max)
        };
        x = scr.put(row, x, &graph, paint(self.tint(Style::PLAIN, Color::Green)));
        let is_dir = is_dir_entry(self.a, id);
        if self.compare.is_some() {
            let (text, color) = match self.items[k].change {
                None => ("new".to_string(), Color::Yellow),
                Some(0) => ("=".to_string(), Color::Default),
                Some(c) if c > 0 => (format!("+{}", size_text(c as u64, self.look.si).trim()), Color::Red),
                Some(c) => {
                    (format!("\u{2212}{}", size_text(c.unsigned_abs() as u64, self.look.si).trim()), Color::Green)
                }
            };
            let text = if self.look.ascii { text.replace('\u{2212}', "-") } else { text };
            x = scr.put(row, x, &format!("{text:>10} "), paint(self.tint(Style::PLAIN, color)));
        }
        if self.show_count {
            let count = if is_dir { compact_count(self.a.dir_totals(self.a.dir_of(id)).2) } else { String::new() };
            x = scr.put(row, x, &format!("{count:>7} "), base);
        }
        if let Some(f) = self.a.shared_figures() {
            // Exclusive bytes: what deleting the directory certainly frees.
            let text = match f.get(self.a.dir_of(id)).filter(|_| is_dir) {
                Some(sh) => size_text(sh.exclusive, self.look.si),
                // A dash where the number would be (the unit column stays blank); while
                // the extent maps are being read, a directory's figure is still to come.
                None => {
                    let mark = match (is_dir && f.pending, self.look.ascii) {
                        (true, false) => "\u{2026}",
                        (true, true) => "...",
                        (false, _) => "-",
                    };
                    format!("{:>w$}  ", mark, w = size_text(0, self.look.si).len().saturating_sub(2))
                }
            };
            x = scr.put(row, x, &format!("{text} "), paint(self.tint(Style::PLAIN, Color::Yellow)));
        }
        if self.sort == SortKey::Mtime || self.show_mtime {
            let t = self.mtime_for(id).map_or_else(|| "-".to_string(), time_text);
            x = scr.put(row, x, &format!("{t:>16} "), base);
        }
        // While anything is marked, a column before the name shows which rows are.
        if !self.marks.is_empty() {
            let marked = self.is_marked(id);
            let style = if marked { self.tint(Style::BOLD, Color::Yellow) } else { base };
            x = scr.put(row, x, if marked { "+" } else { " " }, paint(style));
        }
        let name = format!("{}{}", if is_dir { '/' } else { ' ' }, escape(self.names.get(id)));
        let style = if is_dir { self.tint(Style::BOLD, Color::Blue) } else { Style::PLAIN };
        scr.put(row, x, &fit(&name, w.saturating_sub(x)), paint(style));
    }

    /// The footer: the shown directory's totals and items, the sharing-aware figure,
    /// the errors, and first the marks while any are set. Parts that do not fit the
    /// width are left out, the second size first.
    pub(super) fn draw_footer(&self, scr: &mut Screen, st: &Status) {
        let w = scr.width;
        let (disk, apparent, items) = self.a.dir_totals(self.cwd);
        let disk = ("Total disk usage", disk);
        let app = ("Apparent size", apparent);
        let (first, second) = if self.apparent { (app, disk) } else { (disk, app) };
        let size = |n: u64| size_text(n, self.look.si).trim().to_string();
        // Inside a removed directory the figures are the compared tree's: say so first.
        let was = if self.trail.is_some() { " Removed:" } else { "" };
        let marks = if self.marks.is_empty() { String::new() } else { self.marks_footer() };
        let head = format!("{marks}{was} {}: {}", first.0, size(first.1));
        let second = format!("  {}: {}", second.0, size(second.1));
        let items = format!("  Items: {}", grouped(items));
        let once = match self.a.shared_figures().and_then(|f| f.get(self.cwd)) {
            Some(sh) => format!("  Sharing counted once: {}", size(sh.disk_once)),
            None => String::new(),
        };
        let root_flags = self.a.dir_flags(self.root);
        let errors = match st.errors {
            Some(0) => String::new(),
            Some(n) => format!("  Errors: {}", grouped(n)),
            None if root_flags.any_error() => "  Errors: some".into(),
            None => String::new(),
        };
        let full = format!("{head}{second}{items}{once}{errors}");
        let s = if marks.is_empty() || width(&full) <= w {
            full
        } else if width(&format!("{head}{items}{once}{errors}")) <= w {
            format!("{head}{items}{once}{errors}")
        } else {
            format!("{head}{items}{errors}")
        };
        scr.put(scr.height - 1, 0, &fit(&s, w), Style::REVERSE);
    }

    /// The footer's start while marks are set: how many, their size as the listing
    /// counts it, and the marked directories' exclusive bytes where sharing is known.
    fn marks_footer(&self) -> String {
        let t = self.mark_totals();
        let size = |n: u64| size_text(n, self.look.si).trim().to_string();
        let shown = if self.apparent { t.apparent_bytes } else { t.disk_bytes };
        let exclusive = t.exclusive_bytes.map_or(String::new(), |x| format!(", exclusive {}", size(x)));
        format!(" Marked: {} ({}{exclusive}) |", grouped(t.n as u64), size(shown))
    }

    #[allow(clippy::too_many_arguments)]
    pub(super) fn draw_box(
        &self,
        scr: &mut Screen,
        top: usize,
        left: usize,
        height: usize,
        width_cols: usize,
        title: &str,
        lines: &[String],
        highlight: Option<usize>,
    ) {
        if width_cols < 6 || height < 3 {
            return;
        }
        let f = self.frame_chars();
        let inner = width_cols - 2;
        let bottom = top + height - 1;
        scr.put(top, left, &f.tl.to_string(), Style::PLAIN);
        scr.fill(top, left + 1, inner, f.h, Style::PLAIN);
        scr.put(top, left + width_cols - 1, &f.tr.to_string(), Style::PLAIN);
        scr.put(top, left + 2, &fit(title, width(title).min(inner.saturating_sub(2))), Style::BOLD);
        for r in top + 1..bottom {
            scr.put(r, left, &f.v.to_string(), Style::PLAIN);
            scr.fill(r, left + 1, inner, ' ', Style::PLAIN);
            scr.put(r, left + width_cols - 1, &f.v.to_string(), Style::PLAIN);
            let k = r - top - 1;
            if let Some(line) = lines.get(k) {
                let style = if highlight == Some(k) { Style::BOLD } else { Style::PLAIN };
                scr.put(r, left + 2, &fit(line, inner - 2), style);
            }
        }
        scr.put(bottom, left, &f.bl.to_string(), Style::PLAIN);
        scr.fill(bottom, left + 1, inner, f.h, Style::PLAIN);
        scr.put(bottom, left + width_cols - 1, &f.br.to_string(), Style::PLAIN);
    }

    /// The help box: as wide as its text needs (at most the window), each description
    /// wrapped beside its key, scrolled from line `top` when the window is too short.
    pub(super) fn draw_help(&self, scr: &mut Screen, page: usize, top: usize) {
        let (w, h) = (scr.width, scr.height);
        let table = if page == 0 { HELP_KEYS } else { HELP_MARKS };
        let key_w = if page == 0 { 18 } else { 7 };
        let widest = table.iter().map(|(_, v)| key_w + width(v)).max().unwrap_or(0);
        let bw = (widest + 4).min(w - 2);
        let lines = help_lines(table, key_w, bw - 4);
        let footer = "1, 2 or left, right: page    up, down: scroll    q: close";
        let room = h.saturating_sub(4).max(1);
        let top = top.min(lines.len().saturating_sub(room));
        let mut shown: Vec<String> = lines.iter().skip(top).take(room).cloned().collect();
        let more = if top + room < lines.len() { "(more below: down)" } else { "" };
        shown.push(more.to_string());
        shown.extend(wrap(footer, bw - 4));
        let bh = (shown.len() + 2).min(h);
        let title = format!(" dfdu help ({} of 2: {}) ", page + 1, if page == 0 { "keys" } else { "marks" });
        self.draw_box(scr, (h - bh) / 2, (w - bw) / 2, bh, bw, &title, &shown, None);
    }

    /// The confirmation of a single delete (`trash`: a move to the trash).
    pub(super) fn draw_confirm(
        &self,
        scr: &mut Screen,
        dir: u32,
        id: u32,
        (yes, trash): (bool, bool),
        mounts: Option<u64>,
    ) {
        let a = self.a;
        let is_dir = is_dir_entry(a, id);
        let (disk, apparent, items) = if is_dir {
            a.dir_totals(a.dir_of(id))
        } else {
            let (d, ap) = a.own_sizes(id);
            (d, ap, 0)
        };
        let what = if is_dir { "this directory and everything in it" } else { "this entry" };
        let size = |n: u64| size_text(n, self.look.si).trim().to_string();
        let count = if is_dir { format!(", {} items", grouped(items + 1)) } else { String::new() };
        let verb = if trash { "Move to the trash" } else { "Delete" };
        let lines = vec![
            format!("{verb} {what}?"),
            escape(&child_path(a, dir, id)),
            format!("{} on disk, {} apparent{count}", size(disk), size(apparent)),
            if trash { trash_line(mounts) } else { mounts_line(mounts) },
        ];
        self.confirm_box(
            scr,
            if trash { " Confirm move to the trash " } else { " Confirm delete " },
            lines,
            (yes, trash),
        );
    }

    /// The confirmation of a delete of the marks: how many, a few of their paths, their
    /// total and the mount points left alone.
    pub(super) fn draw_confirm_marks(
        &self,
        scr: &mut Screen,
        targets: &[(u32, u32)],
        (yes, trash): (bool, bool),
        mounts: Option<u64>,
    ) {
        const PATHS_SHOWN: usize = 4;
        let t = self.mark_totals();
        let size = |n: u64| size_text(n, self.look.si).trim().to_string();
        let noun = if t.n == 1 { "entry" } else { "entries" };
        let verb = if trash { "Move to the trash" } else { "Delete" };
        let mut lines = vec![format!("{verb} {} marked {noun} and everything in them?", grouped(t.n as u64))];
        for &(dir, id) in targets.iter().take(PATHS_SHOWN) {
            lines.push(escape(&child_path(self.a, dir, id)));
        }
        if targets.len() > PATHS_SHOWN {
            lines.push(format!("... and {} more", grouped((targets.len() - PATHS_SHOWN) as u64)));
        }
        lines.push(format!(
            "{} on disk, {} apparent, {} items",
            size(t.disk_bytes),
            size(t.apparent_bytes),
            grouped(t.items)
        ));
        lines.push(if trash { trash_line(mounts) } else { mounts_line(mounts) });
        let title = if trash { " Confirm move to the trash " } else { " Confirm delete of the marks " };
        self.confirm_box(scr, title, lines, (yes, trash));
    }

    /// A confirmation box: `lines` (the first in bold), then the buttons, No first and
    /// chosen unless `yes`, then the keys.
    fn confirm_box(&self, scr: &mut Screen, title: &str, mut lines: Vec<String>, (yes, trash): (bool, bool)) {
        let (w, h) = (scr.width, scr.height);
        let buttons = lines.len();
        let keys = if trash { "y: move to the trash    n or Esc: cancel" } else { "y: delete    n or Esc: cancel" };
        lines.extend([String::new(), String::new(), keys.into()]);
        let bw = 64.min(w - 2);
        let bh = (lines.len() + 2).min(h);
        let (top, left) = ((h - bh) / 2, (w - bw) / 2);
        self.draw_box(scr, top, left, bh, bw, title, &lines, Some(0));
        let row = top + 1 + buttons;
        if row + 1 >= top + bh {
            return;
        }
        let x = left + bw / 2 - 9;
        let no_style = if yes { Style::PLAIN } else { Style::REVERSE };
        let yes_style = if yes { Style::REVERSE } else { Style::PLAIN };
        scr.put(row, x, "[ No ]", no_style);
        scr.put(row, x + 11, "[ Yes ]", yes_style);
    }

    /// The info box's lines for entry `id`: what it is and its sizes, its change against
    /// the compared tree, a directory's items and extent figures, what `stat` says, and
    /// notes on errors and on what was not entered.
    pub(super) fn info_lines(&mut self, id: u32) -> Vec<String> {
        let a = self.a;
        let flags = a.flags(id);
        let is_dir = flags.is_dir();
        let (disk, apparent) = if is_dir {
            let t = a.dir_totals(a.dir_of(id));
            (t.0, t.1)
        } else {
            a.own_sizes(id)
        };
        let si = self.look.si;
        let mut lines = vec![
            format!("Name:      {}", escape(self.names.get(id))),
            format!("Path:      {}", escape(&child_path(a, self.parent_of(id), id))),
            format!("Type:      {}", kind_text(flags)),
            format!("Disk use:  {}", sized(disk, si)),
            format!("Apparent:  {}", sized(apparent, si)),
        ];
        if self.compare.is_some() {
            lines.push(format!("Change:    {}", self.change_text(id)));
        }
        if is_dir {
            lines.push(format!("Items:     {}", grouped(a.dir_totals(a.dir_of(id)).2)));
            if let Some(sh) = a.shared_figures().and_then(|f| f.get(a.dir_of(id))) {
                lines.push(format!("Extents:   {} total", sized(sh.total, si)));
                lines.push(format!("Exclusive: {} (in extents not shared)", sized(sh.exclusive, si)));
                lines.push(format!("Shared:    {} (each byte once)", sized(sh.set_shared, si)));
                lines.push(format!("Once:      {} (disk, sharing once)", sized(sh.disk_once, si)));
                lines.push(match sh.frees_exact {
                    true => format!("Frees:     {} (by deleting it)", sized(sh.frees, si)),
                    false => format!("Frees:     {} or more (estimate)", sized(sh.frees, si)),
                });
            } else if a.shared_figures().is_some_and(|f| f.pending) {
                lines.push("Extents:   still being read".to_string());
            }
        }
        let stat = self.stat_for_info(id);
        if let Some(st) = &stat {
            lines.push(format!("Mode:      {} ({:04o})", mode_text(st.mode), st.mode & 0o7777));
            let name = |n: &Option<String>, id: u32| {
                n.as_ref().map_or(id.to_string(), |n| format!("{} ({id})", escape(n.as_bytes())))
            };
            lines.push(format!("Owner:     {}   Group: {}", name(&st.owner, st.uid), name(&st.group, st.gid)));
        }
        if let Some(t) = stat.map(|st| st.mtime).or_else(|| self.mtime_for(id)) {
            lines.push(format!("Modified:  {}", time_text(t)));
        }
        if let Some((_, ino, nlink)) = a.link_of(id) {
            let counted = if flags.contains(arena::F_DUP_LINK) { "; counted under another name" } else { "" };
            lines.push(format!("Links:     {nlink} names, inode {ino}{counted}"));
        }
        let notes = self.info_notes(id);
        if !notes.is_empty() {
            lines.push(format!("Notes:     {}", notes.join("; ")));
        }
        lines
    }

    /// How entry `id` changed against the compared tree, for the info box.
    fn change_text(&self, id: u32) -> String {
        let size = |n: u64| size_text(n, self.look.si).trim().to_string();
        let minus = if self.look.ascii { '-' } else { '\u{2212}' };
        match self.items.iter().find(|it| it.id == id) {
            Some(it) if it.removed => {
                format!("removed ({minus}{}, {minus}{} bytes)", size(it.size), grouped(it.size))
            }
            Some(Item { change: Some(c), size: now, .. }) => {
                let (was, by) = ((*now as i128 - c) as u64, c.unsigned_abs() as u64);
                let sign = if *c >= 0 { "+".to_string() } else { minus.to_string() };
                format!("{sign}{} ({sign}{} bytes; was {})", size(by), grouped(by), size(was))
            }
            _ => "new (not in the compared tree)".into(),
        }
    }

    /// The info box's notes on entry `id`: errors, what was not entered, a scan going on.
    fn info_notes(&self, id: u32) -> Vec<&'static str> {
        let a = self.a;
        let flags = a.flags(id);
        let mut notes = Vec::new();
        if self.is_gone(id) {
            notes.push("not on disk: only in the compared tree");
        }
        if flags.contains(arena::F_ERROR) {
            notes.push("could not be read");
        }
        if flags.contains(arena::F_OTHER_FS) && !flags.is_loop() {
            notes.push("on another file system, not entered");
        }
        if flags.is_dir() {
            let df = a.dir_flags(a.dir_of(id));
            if df.read_error() {
                notes.push("could not be read (fully)");
            }
            if df.error_below() {
                notes.push("something below could not be read");
            }
            if !df.is_done() {
                notes.push("still being scanned");
            }
        }
        notes
    }
}

/// What an entry is, as the info box's Type line says it.
fn kind_text(flags: arena::Flags) -> &'static str {
    match flags.kind() {
        _ if flags.is_loop() => "directory loop (one of its own ancestors, not entered)",
        _ if flags.contains(arena::F_EXCLUDED) => "excluded (not scanned)",
        Kind::Dir => "directory",
        Kind::Symlink => "symbolic link",
        Kind::Other => "special file",
        _ => "file",
    }
}

/// A size for the info box: as the list shows it, then in bytes.
fn sized(n: u64, si: bool) -> String {
    format!("{} ({} bytes)", size_text(n, si).trim(), grouped(n))
}

/// The help's lines for `table`: each key in `key_w` columns, its description wrapped in
/// the `cols - key_w` after it.
pub(super) fn help_lines(table: &[(&str, &str)], key_w: usize, cols: usize) -> Vec<String> {
    let mut lines = Vec::new();
    for (k, v) in table {
        for (i, part) in wrap(v, cols.saturating_sub(key_w).max(8)).into_iter().enumerate() {
            let key = if i == 0 { fit(k, key_w) } else { String::new() };
            lines.push(format!("{key:<key_w$}{part}"));
        }
    }
    lines
}

/// `text` broken at spaces into lines of at most `cols` columns (a longer word is cut
/// in the middle by `fit`).
pub(super) fn wrap(text: &str, cols: usize) -> Vec<String> {
    let mut lines = Vec::new();
    let mut line = String::new();
    for word in text.split(' ') {
        if !line.is_empty() && width(&line) + 1 + width(word) > cols {
            lines.push(std::mem::take(&mut line));
        }
        if !line.is_empty() {
            line.push(' ');
        }
        line.push_str(word);
    }
    lines.push(line);
    lines
}

/// `st_mode` as `ls -l` writes it: the type, then three `rwx` triples with the set-id
/// and sticky bits in the execute places.
pub(super) fn mode_text(mode: u32) -> String {
    let kind = match mode & 0o170000 {
        0o040000 => 'd',
        0o120000 => 'l',
        0o020000 => 'c',
        0o060000 => 'b',
        0o010000 => 'p',
        0o140000 => 's',
        _ => '-',
    };
    let mut out = String::from(kind);
    for (shift, special, on_exec, off_exec) in [(6, 0o4000, 's', 'S'), (3, 0o2000, 's', 'S'), (0, 0o1000, 't', 'T')] {
        let bits = (mode >> shift) & 7;
        out.push(if bits & 4 != 0 { 'r' } else { '-' });
        out.push(if bits & 2 != 0 { 'w' } else { '-' });
        out.push(match (bits & 1 != 0, mode & special != 0) {
            (true, true) => on_exec,
            (false, true) => off_exec,
            (true, false) => 'x',
            (false, false) => '-',
        });
    }
    out
}

/// What a trash confirmation says: where things go, and the mount points that cannot.
fn trash_line(mounts: Option<u64>) -> String {
    match mounts {
        Some(0) | None => "To its file system's trash, by rename (nothing is copied).".into(),
        Some(n) => format!("To its file system's trash by rename; {} mount points inside move along.", grouped(n)),
    }
}

/// What a confirmation says about the mount points inside what it deletes.
fn mounts_line(mounts: Option<u64>) -> String {
    match mounts {
        Some(0) | None => String::new(),
        Some(1) => "It holds 1 mount point: left alone, with what is in it.".into(),
        Some(n) => format!("It holds {} mount points: left alone, with what is in them.", grouped(n)),
    }
}

/// An item count in at most 7 columns.
pub(super) fn compact_count(n: u64) -> String {
    if n < 10_000_000 {
        n.to_string()
    } else {
        format!("{:.1}M", n as f64 / 1e6)
    }
}
