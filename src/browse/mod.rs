//! `dfdu browse`: the interactive browser, during and after the scan.
//!
//! # Shape
//!
//! * `Browser` is the view: where the user is, how the listing is sorted and drawn, and
//!   what each key does. It reads the arena and draws into a `term::Screen`; it does no
//!   terminal I/O, so tests replay keys against an in-memory screen. Keys that need work
//!   done (quit, delete, rescan) come back as an `Action`.
//! * `run` is the loop around it: the scan (or rescan, or delete) runs on other threads
//!   and writes the arena, while this thread waits for keys with `poll`, redraws at most
//!   ten times a second while something is running, and at once after a key.
//!
//! # Cost while scanning
//!
//! A redraw reads only the shown directory: its children's sizes are atomics in the
//! arena, its names are read once when it is entered (they never change once the
//! listing is published). Sorting is of the shown directory only, and only when
//! something changed: a key, or a tick while a scan, rescan or delete is running.
//!
//! # Sort by modification time
//!
//! The arena keeps mtimes for directories only (a field in its directory record; 4
//! bytes per file would break the memory budget). For files, the browser stats the
//! shown directory's files when it sorts by mtime or shows the info panel, and keeps
//! those times until it leaves the directory. An imported scan has directory times only.

pub mod delete;

use crate::meta::{os_bytes, Errno, Kind, Meta};
use crate::platform;
use crate::report::WalkArgs;
use crate::report::{child_path, dir_path};
use crate::term::{escape, fit, width, Color, Decoder, Key, Screen, Session, Style};
use crate::text::quote::quotef;
use crate::tree::arena::{self, Arena, NO_DIR};
use crate::tree::sink::ArenaSink;
use crate::walk::reader::Reader;
use crate::walk::scan::{self, Walk};
use std::cmp::Ordering;
use std::collections::{HashMap, HashSet};
use std::ffi::{CString, OsString};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering as AtomicOrdering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Below this the browser shows a one-line notice instead of the listing.
pub const MIN_WIDTH: usize = 40;
pub const MIN_HEIGHT: usize = 10;
/// Redraws while something is running: at most one per tick.
const TICK: Duration = Duration::from_millis(100);
/// How long a lone ESC waits for the rest of a sequence.
const ESC_WAIT_MS: u32 = 30;

// ---------------------------------------------------------------- options

/// `dfdu browse` options.
pub struct BrowseArgs {
    pub prog: String,
    pub apparent: bool,
    pub si: bool,
    pub walk: WalkArgs,
    pub read_only: bool,
    pub ascii: bool,
    pub no_color: bool,
    pub dir: OsString,
}

const HELP: &str = "\
Usage: dfdu browse [OPTION]... [DIR]
       dfdu browse -f FILE [OPTION]...
Browse the disk usage of DIR (default: the current directory) while it is being
scanned, and after: sort, inspect, rescan and delete. Press ? inside for the keys.

  -x, --one-file-system  do not enter other file systems
      --exclude=PATTERN  skip entries matching PATTERN (shell glob, as du)
  -X, --exclude-from=FILE  skip entries matching any pattern in FILE
  -L, --dereference      follow symbolic links (deleting never follows them)
  -j, --threads=N        scan with N threads
  -f FILE                browse an export (ncdu 1.x/2.x, gdu, dfdu) instead of
                         scanning; - reads standard input; nothing can be deleted
      --apparent-size    start by showing apparent sizes instead of disk usage
      --si               units of 1000 instead of 1024
      --read-only        no deleting
      --ascii            draw with plain ASCII only
      --no-color         no colours (also when NO_COLOR is set)
      --help             show this help

Exit status: 0 after quitting, 1 when the scan could not start or there is no
terminal, 2 for bad usage.
";

/// Parses `dfdu browse` arguments; `Err(code)` to exit right away.
pub fn parse(prog: &str, args: Vec<OsString>) -> Result<BrowseArgs, i32> {
    use lexopt::Arg::*;
    let mut a = BrowseArgs {
        prog: prog.to_string(),
        apparent: false,
        si: false,
        walk: WalkArgs::default(),
        read_only: false,
        ascii: false,
        no_color: false,
        dir: OsString::new(),
    };
    let mut dirs = Vec::new();
    let mut p = lexopt::Parser::from_args(args);
    let bad = |msg: String| -> i32 {
        eprintln!("{prog} browse: {msg}\nTry '{prog} browse --help' for more information.");
        2
    };
    loop {
        let arg = match p.next() {
            Ok(Some(arg)) => arg,
            Ok(None) => break,
            Err(e) => return Err(bad(e.to_string())),
        };
        match arg {
            Long("apparent-size") => a.apparent = true,
            Long("si") => a.si = true,
            Long("read-only") => a.read_only = true,
            Long("ascii") => a.ascii = true,
            Long("no-color") | Long("no-colour") => a.no_color = true,
            Long("help") => {
                print!("{HELP}");
                return Err(0);
            }
            Value(v) => dirs.push(v),
            other => {
                let name = crate::report::OptName::of(&other);
                a.walk.take(name, &mut p, &bad)?
            }
        }
    }
    if a.walk.input.is_some() && !dirs.is_empty() {
        return Err(bad("-f reads an export; it takes no directory".into()));
    }
    if dirs.len() > 1 {
        return Err(bad("browse takes one directory".into()));
    }
    a.dir = dirs.pop().unwrap_or_else(|| ".".into());
    Ok(a)
}

// ---------------------------------------------------------------- the view

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SortKey {
    Size,
    Name,
    Count,
    Mtime,
}

/// What the column after the size shows (`g` cycles: bar, percent, both, none).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Graph {
    Bar,
    Percent,
    Both,
    Off,
}

/// How things are drawn.
#[derive(Clone, Copy, Debug, Default)]
pub struct Look {
    pub ascii: bool,
    pub color: bool,
    pub si: bool,
}

/// What the browser may change on disk.
#[derive(Clone, Copy, Debug, Default)]
pub struct Limits {
    pub read_only: bool,
    pub imported: bool,
}

/// What the loop around the browser knows: the status line and the error count.
#[derive(Clone, Debug, Default)]
pub struct Status {
    pub line: String,
    /// A rescan or delete is running (only one at a time).
    pub busy: bool,
    /// Entries that could not be read, once counted (after the scan).
    pub errors: Option<u64>,
}

/// Work a key asks for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Action {
    None,
    Quit,
    /// Delete entry `id` of directory `dir` (confirmed).
    Delete {
        dir: u32,
        id: u32,
    },
    /// Rescan directory index `dir`.
    Rescan {
        dir: u32,
    },
}

enum Modal {
    None,
    Help(usize),
    Info,
    Confirm { dir: u32, id: u32, yes: bool },
    Message { title: String, lines: Vec<String> },
}

/// The names of one directory's children, read once.
struct Names {
    dir: u32,
    first: u32,
    blob: Vec<u8>,
    /// `n + 1` offsets into `blob`.
    at: Vec<u32>,
}

impl Names {
    fn empty() -> Names {
        Names { dir: NO_DIR, first: 0, blob: Vec::new(), at: vec![0] }
    }

    fn load(a: &Arena, dir: u32, kids: std::ops::Range<u32>) -> Names {
        let mut n = Names { dir, first: kids.start, blob: Vec::new(), at: Vec::with_capacity(kids.len() + 1) };
        let mut pos = a.names_at(dir);
        let mut name = Vec::new();
        n.at.push(0);
        for _ in kids {
            pos = a.read_name(pos, &mut name);
            n.blob.extend_from_slice(&name);
            n.at.push(n.blob.len() as u32);
        }
        n
    }

    fn get(&self, id: u32) -> &[u8] {
        let k = (id - self.first) as usize;
        &self.blob[self.at[k] as usize..self.at[k + 1] as usize]
    }
}

/// One child, with the keys it is sorted by.
#[derive(Clone, Copy)]
struct Item {
    id: u32,
    is_dir: bool,
    size: u64,
    count: u64,
    mtime: i64,
}

/// Stats a path for its modification time (seconds); the browser's only file access.
pub type MtimeOf<'a> = Box<dyn Fn(&[u8]) -> Option<i64> + 'a>;

/// The browser's state. See the module doc.
pub struct Browser<'a> {
    a: &'a Arena,
    look: Look,
    limits: Limits,
    pub root: u32,
    cwd: u32,
    /// The selected row and the entry on it (followed across re-sorts once chosen).
    sel: usize,
    sel_id: Option<u32>,
    /// The user chose `sel_id` (moved, or came back from it). Until then the cursor
    /// stays on the first row while a scan reorders the listing under it.
    chosen: bool,
    /// First listed row shown.
    top: usize,
    sort: SortKey,
    desc: bool,
    dirs_first: bool,
    apparent: bool,
    show_count: bool,
    graph: Graph,
    modal: Modal,
    names: Names,
    items: Vec<Item>,
    /// The listing is out of date (a key changed it, or the arena may have).
    stale: bool,
    /// Rows the listing had at the last frame (page keys move by this).
    rows: usize,
    mtime_of: Option<MtimeOf<'a>>,
    /// File mtimes of the shown directory, by entry id.
    mtimes: HashMap<u32, Option<i64>>,
    /// A rescan or delete is running (the loop says so before each key and frame).
    busy: bool,
}

fn is_dir_entry(a: &Arena, id: u32) -> bool {
    a.kind(id) == arena::KIND_DIR
}

impl<'a> Browser<'a> {
    pub fn new(a: &'a Arena, root: u32, look: Look, limits: Limits) -> Browser<'a> {
        Browser {
            a,
            look,
            limits,
            root,
            cwd: root,
            sel: 0,
            sel_id: None,
            chosen: false,
            top: 0,
            sort: SortKey::Size,
            desc: true,
            dirs_first: false,
            apparent: false,
            show_count: false,
            graph: Graph::Bar,
            modal: Modal::None,
            names: Names::empty(),
            items: Vec::new(),
            stale: true,
            rows: 1,
            mtime_of: None,
            mtimes: HashMap::new(),
            busy: false,
        }
    }

    /// Whether a rescan or delete is running: no second one may start.
    pub fn set_busy(&mut self, busy: bool) {
        self.busy = busy;
    }

    /// Starts with apparent sizes shown.
    pub fn set_apparent(&mut self, on: bool) {
        self.apparent = on;
        self.stale = true;
    }

    /// Lets the browser stat files for their mtimes (a live scan, not an import).
    pub fn set_mtime_source(&mut self, f: MtimeOf<'a>) {
        self.mtime_of = Some(f);
    }

    /// The arena may have changed: sort again before the next frame.
    pub fn mark_stale(&mut self) {
        self.stale = true;
    }

    /// Directory index `old` was replaced by `new` (a rescan began).
    pub fn replace_dir(&mut self, old: u32, new: u32) {
        if self.cwd == old {
            self.cwd = new;
        }
        if self.root == old {
            self.root = new;
        }
        if self.names.dir == old {
            self.names = Names::empty();
        }
        self.stale = true;
    }

    /// Shows a message box until the next key.
    pub fn message(&mut self, title: &str, lines: Vec<String>) {
        self.modal = Modal::Message { title: title.to_string(), lines };
    }

    /// The directory shown.
    #[cfg(test)]
    pub fn cwd(&self) -> u32 {
        self.cwd
    }

    /// The selected entry, if the directory has any.
    #[cfg(test)]
    pub fn selected(&self) -> Option<u32> {
        self.sel_id
    }

    fn size_of(&self, id: u32) -> u64 {
        let (disk, apparent) = if is_dir_entry(self.a, id) {
            let t = self.a.dir_totals(self.a.dir_of(id));
            (t.0, t.1)
        } else {
            self.a.own_sizes(id)
        };
        if self.apparent {
            apparent
        } else {
            disk
        }
    }

    fn mtime_for(&mut self, id: u32) -> Option<i64> {
        if is_dir_entry(self.a, id) {
            let t = self.a.dir_mtime(self.a.dir_of(id));
            return (t > 0).then_some(t as i64);
        }
        if let Some(&t) = self.mtimes.get(&id) {
            return t;
        }
        let f = self.mtime_of.as_ref()?;
        let t = f(&child_path(self.a, self.cwd, id));
        self.mtimes.insert(id, t);
        t
    }

    /// Brings the sorted listing up to date, if anything may have changed.
    fn refresh(&mut self) {
        if !self.stale {
            return;
        }
        self.stale = false;
        // Leave directories that were deleted under us.
        while self.cwd != self.root && self.a.removed(self.a.dir_entry(self.cwd)) {
            self.sel_id = Some(self.a.dir_entry(self.cwd));
            self.chosen = true;
            self.cwd = self.a.dir_parent(self.cwd);
        }
        let Some(kids) = self.a.children(self.cwd) else {
            self.items.clear();
            return;
        };
        if self.names.dir != self.cwd {
            self.names = Names::load(self.a, self.cwd, kids.clone());
            self.mtimes.clear();
        }
        let mut items = std::mem::take(&mut self.items);
        items.clear();
        for id in kids {
            if self.a.removed(id) {
                continue;
            }
            let is_dir = is_dir_entry(self.a, id);
            let count = if is_dir { self.a.dir_totals(self.a.dir_of(id)).2 } else { 0 };
            let mtime = if self.sort == SortKey::Mtime { self.mtime_for(id).unwrap_or(0) } else { 0 };
            items.push(Item { id, is_dir, size: self.size_of(id), count, mtime });
        }
        let names = &self.names;
        let (sort, desc, dirs_first) = (self.sort, self.desc, self.dirs_first);
        items.sort_unstable_by(|x, y| {
            let dirs = if dirs_first { y.is_dir.cmp(&x.is_dir) } else { Ordering::Equal };
            let primary = match sort {
                SortKey::Size => x.size.cmp(&y.size),
                SortKey::Count => x.count.cmp(&y.count),
                SortKey::Mtime => x.mtime.cmp(&y.mtime),
                SortKey::Name => names.get(x.id).cmp(names.get(y.id)),
            };
            let primary = if desc { primary.reverse() } else { primary };
            dirs.then(primary).then_with(|| names.get(x.id).cmp(names.get(y.id))).then(x.id.cmp(&y.id))
        });
        self.items = items;
        // Follow the chosen entry to its new row; if it is gone, stay on the row.
        if !self.chosen {
            self.sel = 0;
        } else if let Some(id) = self.sel_id {
            if let Some(k) = self.items.iter().position(|it| it.id == id) {
                self.sel = k;
            }
        }
        self.sel = self.sel.min(self.items.len().saturating_sub(1));
        self.sel_id = self.items.get(self.sel).map(|it| it.id);
    }

    fn select(&mut self, k: usize) {
        if self.items.is_empty() {
            return;
        }
        self.sel = k.min(self.items.len() - 1);
        self.sel_id = Some(self.items[self.sel].id);
        self.chosen = true;
    }

    fn open(&mut self, dir: u32, select: Option<u32>) {
        self.cwd = dir;
        self.sel = 0;
        self.sel_id = select;
        self.chosen = select.is_some();
        self.top = 0;
        self.stale = true;
    }

    fn set_sort(&mut self, key: SortKey) {
        if self.sort == key {
            self.desc = !self.desc;
        } else {
            self.sort = key;
            self.desc = key != SortKey::Name;
        }
        self.stale = true;
    }

    /// Handles one key.
    pub fn key(&mut self, k: Key) -> Action {
        self.refresh();
        match &mut self.modal {
            Modal::Help(page) => {
                match k {
                    Key::Char('1') | Key::Left | Key::Char('h') => *page = 0,
                    Key::Char('2') | Key::Right | Key::Char('l') => *page = 1,
                    Key::Char('q') | Key::Char('?') | Key::Esc | Key::Enter => self.modal = Modal::None,
                    _ => {}
                }
                return Action::None;
            }
            Modal::Confirm { dir, id, yes } => {
                let (dir, id) = (*dir, *id);
                match k {
                    Key::Char('y') | Key::Char('Y') => {
                        self.modal = Modal::None;
                        return Action::Delete { dir, id };
                    }
                    Key::Enter if *yes => {
                        self.modal = Modal::None;
                        return Action::Delete { dir, id };
                    }
                    Key::Left | Key::Right | Key::Tab | Key::Char('h') | Key::Char('l') => *yes = !*yes,
                    Key::Char('n') | Key::Char('N') | Key::Esc | Key::Char('q') | Key::Enter => {
                        self.modal = Modal::None
                    }
                    _ => {}
                }
                return Action::None;
            }
            Modal::Message { .. } => {
                self.modal = Modal::None;
                return Action::None;
            }
            Modal::Info if matches!(k, Key::Char('i') | Key::Esc) => {
                self.modal = Modal::None;
                return Action::None;
            }
            Modal::Info | Modal::None => {}
        }
        let page = self.rows.max(1);
        match k {
            Key::Up | Key::Char('k') => self.select(self.sel.saturating_sub(1)),
            Key::Down | Key::Char('j') => self.select(self.sel + 1),
            Key::PageUp => self.select(self.sel.saturating_sub(page)),
            Key::PageDown => self.select(self.sel + page),
            Key::Home => self.select(0),
            Key::End => self.select(usize::MAX),
            Key::Right | Key::Char('l') | Key::Enter => {
                if let Some(id) = self.sel_id.filter(|&id| is_dir_entry(self.a, id)) {
                    self.open(self.a.dir_of(id), None);
                }
            }
            Key::Left | Key::Char('h') | Key::Backspace | Key::Char('<') if self.cwd != self.root => {
                let came_from = self.a.dir_entry(self.cwd);
                self.open(self.a.dir_parent(self.cwd), Some(came_from));
            }
            Key::Char('s') => self.set_sort(SortKey::Size),
            Key::Char('n') => self.set_sort(SortKey::Name),
            Key::Char('C') => self.set_sort(SortKey::Count),
            Key::Char('M') => self.set_sort(SortKey::Mtime),
            Key::Char('t') => {
                self.dirs_first = !self.dirs_first;
                self.stale = true;
            }
            Key::Char('a') => {
                self.apparent = !self.apparent;
                self.stale = true;
            }
            Key::Char('c') => self.show_count = !self.show_count,
            Key::Char('g') => {
                self.graph = match self.graph {
                    Graph::Bar => Graph::Percent,
                    Graph::Percent => Graph::Both,
                    Graph::Both => Graph::Off,
                    Graph::Off => Graph::Bar,
                }
            }
            Key::Char('i') if self.sel_id.is_some() => self.modal = Modal::Info,
            Key::Char('?') => self.modal = Modal::Help(0),
            Key::Char('d') => self.ask_delete(),
            Key::Char('r') => return self.ask_rescan(),
            Key::Char('q') => return Action::Quit,
            _ => {}
        }
        Action::None
    }

    fn refuse(&mut self, why: &str) {
        self.message("Not possible", vec![why.to_string()]);
    }

    fn ask_delete(&mut self) {
        let Some(id) = self.sel_id else { return };
        if self.limits.imported {
            return self.refuse("Deleting needs a scan of the file system; this is an imported export.");
        }
        if self.limits.read_only {
            return self.refuse("Deleting is off (--read-only).");
        }
        if self.busy {
            return self.refuse("Wait until the running rescan or deletion has finished.");
        }
        if is_dir_entry(self.a, id) && self.a.dir_flags(self.a.dir_of(id)) & arena::D_DONE == 0 {
            return self.refuse("This directory is still being scanned; it can be deleted once its scan is done.");
        }
        self.modal = Modal::Confirm { dir: self.cwd, id, yes: false };
    }

    fn ask_rescan(&mut self) -> Action {
        if self.limits.imported {
            self.refuse("Rescanning needs the file system; this is an imported export.");
            return Action::None;
        }
        if self.busy {
            self.refuse("Wait until the running rescan or deletion has finished.");
            return Action::None;
        }
        let flags_ok = |id: u32| self.a.flags(id) & (arena::F_EXCLUDED | arena::F_OTHER_FS) == 0;
        let dir = match self.sel_id {
            Some(id) if is_dir_entry(self.a, id) && flags_ok(id) => self.a.dir_of(id),
            _ => self.cwd,
        };
        if self.a.dir_flags(dir) & arena::D_DONE == 0 {
            self.refuse("This directory is still being scanned.");
            return Action::None;
        }
        Action::Rescan { dir }
    }
}

// ---------------------------------------------------------------- drawing

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

fn time_text(sec: i64) -> String {
    match platform::local_time(sec) {
        Some(t) => format!("{:04}-{:02}-{:02} {:02}:{:02}", t.year, t.month, t.day, t.hour, t.minute),
        None => "?".into(),
    }
}

/// Box-drawing characters: corners, horizontal, vertical.
struct Frame {
    tl: char,
    tr: char,
    bl: char,
    br: char,
    h: char,
    v: char,
}

const FRAME_UNICODE: Frame = Frame { tl: '┌', tr: '┐', bl: '└', br: '┘', h: '─', v: '│' };
const FRAME_ASCII: Frame = Frame { tl: '+', tr: '+', bl: '+', br: '+', h: '-', v: '|' };

const HELP_KEYS: &[(&str, &str)] = &[
    ("up, k / down, j", "move the cursor"),
    ("PgUp / PgDn", "move a page"),
    ("Home / End", "first / last entry"),
    ("right, l, Enter", "open the selected directory"),
    ("left, h, <, Bksp", "go to the parent directory"),
    ("s  n  C  M", "sort by size, name, items, mtime"),
    ("", "(the same key again reverses)"),
    ("t", "directories first, on / off"),
    ("a", "apparent size / disk usage"),
    ("c", "item count column"),
    ("g", "percentage, graph, both, none"),
    ("i", "information about the selected entry"),
    ("r", "rescan the selected directory"),
    ("d", "delete the selected entry (asks first)"),
    ("?", "this help;  q  quit"),
];

const HELP_MARKS: &[(&str, &str)] = &[
    ("!", "could not be read"),
    (".", "something below could not be read"),
    ("*", "still being scanned"),
    ("<", "excluded (--exclude)"),
    (">", "on another file system (-x), not entered"),
    ("@", "symbolic link or special file"),
    ("H", "file with several hard links"),
    ("e", "empty directory"),
    ("", ""),
    ("/name", "a directory"),
    ("", ""),
    ("", "Sizes of directories still being scanned grow"),
    ("", "as the scan goes; so do the totals."),
];

impl Browser<'_> {
    fn frame_chars(&self) -> &'static Frame {
        if self.look.ascii {
            &FRAME_ASCII
        } else {
            &FRAME_UNICODE
        }
    }

    fn tint(&self, style: Style, c: Color) -> Style {
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
        let info_h = 11.min(h - 5);
        if info {
            list_end = (h - 2 - info_h).max(list_top + 1);
        }
        self.rows = list_end - list_top;
        self.scroll();
        self.draw_header(scr);
        self.draw_path(scr);
        self.draw_list(scr, list_top, list_end);
        scr.put(h - 2, 0, &fit(&st.line, w), Style::PLAIN);
        self.draw_footer(scr, st);
        match &self.modal {
            Modal::None => {}
            Modal::Info => {
                if let Some(id) = self.sel_id {
                    let lines = self.info_lines(id);
                    self.draw_box(scr, h - 2 - info_h, 0, info_h, w, " Entry ", &lines, None);
                }
            }
            Modal::Help(page) => self.draw_help(scr, *page),
            Modal::Confirm { dir, id, yes } => self.draw_confirm(scr, *dir, *id, *yes),
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

    fn scroll(&mut self) {
        let rows = self.rows.max(1);
        if self.sel < self.top {
            self.top = self.sel;
        }
        if self.sel >= self.top + rows {
            self.top = self.sel + 1 - rows;
        }
        self.top = self.top.min(self.items.len().saturating_sub(rows));
    }

    fn draw_header(&self, scr: &mut Screen) {
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

    fn draw_path(&self, scr: &mut Screen) {
        let w = scr.width;
        let hc = self.frame_chars().h;
        let scanning = self.a.dir_flags(self.cwd) & arena::D_DONE == 0;
        let note = if scanning { " (scanning)" } else { "" };
        let path = escape(&dir_path(self.a, self.cwd));
        let room = w - 6 - note.len();
        let path = if width(&path) > room { fit(&path, room) } else { path };
        let mut x = scr.put(1, 0, &format!("{hc}{hc}{hc} "), Style::PLAIN);
        x = scr.put(1, x, &path, Style::BOLD);
        x = scr.put(1, x, note, self.tint(Style::PLAIN, Color::Yellow));
        x = scr.put(1, x, " ", Style::PLAIN);
        scr.fill(1, x, w - x, hc, Style::PLAIN);
    }

    fn draw_list(&mut self, scr: &mut Screen, list_top: usize, list_end: usize) {
        if self.items.is_empty() {
            let flags = self.a.dir_flags(self.cwd);
            let why = if self.a.children(self.cwd).is_none() {
                "(not listed yet: scanning)"
            } else if flags & arena::D_READ_ERROR != 0 {
                "(could not be read)"
            } else {
                "(empty directory)"
            };
            scr.put(list_top, 2, why, Style::PLAIN);
            return;
        }
        let (total_disk, total_apparent, _) = self.a.dir_totals(self.cwd);
        let total = if self.apparent { total_apparent } else { total_disk };
        let max = self.items.iter().map(|it| it.size).max().unwrap_or(0);
        let shown: Vec<usize> = (self.top..self.items.len()).take(list_end - list_top).collect();
        for (r, k) in shown.into_iter().enumerate() {
            self.draw_row(scr, list_top + r, k, total, max);
        }
    }

    fn mark(&self, id: u32) -> (char, Color) {
        let a = self.a;
        let flags = a.flags(id);
        if flags & arena::F_ERROR != 0 {
            return ('!', Color::Red);
        }
        if flags & arena::F_EXCLUDED != 0 {
            return ('<', Color::Default);
        }
        if flags & arena::F_OTHER_FS != 0 {
            return ('>', Color::Default);
        }
        match flags & 3 {
            arena::KIND_DIR => {
                let d = a.dir_of(id);
                let df = a.dir_flags(d);
                if df & arena::D_READ_ERROR != 0 {
                    ('!', Color::Red)
                } else if df & arena::D_DONE == 0 {
                    ('*', Color::Yellow)
                } else if df & arena::D_ERROR_BELOW != 0 {
                    ('.', Color::Red)
                } else if a.dir_totals(d).2 == 0 {
                    ('e', Color::Default)
                } else {
                    (' ', Color::Default)
                }
            }
            arena::KIND_SYMLINK | arena::KIND_OTHER => ('@', Color::Default),
            _ if flags & arena::F_HARDLINK != 0 => ('H', Color::Default),
            _ => (' ', Color::Default),
        }
    }

    fn graph_text(&self, size: u64, total: u64, max: u64) -> String {
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

    fn draw_row(&mut self, scr: &mut Screen, row: usize, k: usize, total: u64, max: u64) {
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
        x = scr.put(row, x, &format!("{} ", size_text(size, self.look.si)), base);
        x = scr.put(row, x, &self.graph_text(size, total, max), paint(self.tint(Style::PLAIN, Color::Green)));
        let is_dir = is_dir_entry(self.a, id);
        if self.show_count {
            let count = if is_dir { compact_count(self.a.dir_totals(self.a.dir_of(id)).2) } else { String::new() };
            x = scr.put(row, x, &format!("{count:>7} "), base);
        }
        if self.sort == SortKey::Mtime {
            let t = self.mtime_for(id).map_or_else(|| "-".to_string(), time_text);
            x = scr.put(row, x, &format!("{t:>16} "), base);
        }
        let name = format!("{}{}", if is_dir { '/' } else { ' ' }, escape(self.names.get(id)));
        let style = if is_dir { self.tint(Style::BOLD, Color::Blue) } else { Style::PLAIN };
        scr.put(row, x, &fit(&name, w.saturating_sub(x)), paint(style));
    }

    fn draw_footer(&self, scr: &mut Screen, st: &Status) {
        let w = scr.width;
        let (disk, apparent, items) = self.a.dir_totals(self.cwd);
        let disk = ("Total disk usage", disk);
        let app = ("Apparent size", apparent);
        let (first, second) = if self.apparent { (app, disk) } else { (disk, app) };
        let size = |n: u64| size_text(n, self.look.si).trim().to_string();
        let mut s =
            format!(" {}: {}  {}: {}  Items: {}", first.0, size(first.1), second.0, size(second.1), grouped(items));
        let root_flags = self.a.dir_flags(self.root);
        match st.errors {
            Some(0) => {}
            Some(n) => s.push_str(&format!("  Errors: {}", grouped(n))),
            None if root_flags & (arena::D_READ_ERROR | arena::D_ERROR_BELOW) != 0 => s.push_str("  Errors: some"),
            None => {}
        }
        scr.put(scr.height - 1, 0, &fit(&s, w), Style::REVERSE);
    }

    #[allow(clippy::too_many_arguments)]
    fn draw_box(
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

    fn draw_help(&self, scr: &mut Screen, page: usize) {
        let (w, h) = (scr.width, scr.height);
        let table = if page == 0 { HELP_KEYS } else { HELP_MARKS };
        let key_w = if page == 0 { 18 } else { 7 };
        let mut lines: Vec<String> = table.iter().map(|(k, v)| format!("{}{v}", fit(k, key_w))).collect();
        lines.push(String::new());
        lines.push("1, 2 or left, right: page    q: close help".into());
        let bw = 62.min(w - 2);
        let bh = (lines.len() + 2).min(h);
        let title = format!(" dfdu help ({} of 2: {}) ", page + 1, if page == 0 { "keys" } else { "marks" });
        self.draw_box(scr, (h - bh) / 2, (w - bw) / 2, bh, bw, &title, &lines, None);
    }

    fn draw_confirm(&self, scr: &mut Screen, dir: u32, id: u32, yes: bool) {
        let (w, h) = (scr.width, scr.height);
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
        let lines = vec![
            format!("Delete {what}?"),
            escape(&child_path(a, dir, id)),
            format!("{} on disk, {} apparent{count}", size(disk), size(apparent)),
            String::new(),
            String::new(),
            String::new(),
            "y: delete    n or Esc: cancel".into(),
        ];
        let bw = 64.min(w - 2);
        let bh = lines.len() + 2;
        let (top, left) = ((h - bh) / 2, (w - bw) / 2);
        self.draw_box(scr, top, left, bh, bw, " Confirm delete ", &lines, Some(0));
        let row = top + 5;
        let x = left + bw / 2 - 9;
        let no_style = if yes { Style::PLAIN } else { Style::REVERSE };
        let yes_style = if yes { Style::REVERSE } else { Style::PLAIN };
        scr.put(row, x, "[ No ]", no_style);
        scr.put(row, x + 11, "[ Yes ]", yes_style);
    }

    fn info_lines(&mut self, id: u32) -> Vec<String> {
        let a = self.a;
        let flags = a.flags(id);
        let kind = flags & 3;
        let is_dir = kind == arena::KIND_DIR;
        let kind_text = match kind {
            _ if flags & arena::F_EXCLUDED != 0 => "excluded (not scanned)",
            arena::KIND_DIR => "directory",
            arena::KIND_SYMLINK => "symbolic link",
            arena::KIND_OTHER => "special file",
            _ => "file",
        };
        let (disk, apparent) = if is_dir {
            let t = a.dir_totals(a.dir_of(id));
            (t.0, t.1)
        } else {
            a.own_sizes(id)
        };
        let sized = |n: u64| format!("{} ({} bytes)", size_text(n, self.look.si).trim(), grouped(n));
        let mut lines = vec![
            format!("Name:      {}", escape(self.names.get(id))),
            format!("Path:      {}", escape(&child_path(a, self.cwd, id))),
            format!("Type:      {kind_text}"),
            format!("Disk use:  {}", sized(disk)),
            format!("Apparent:  {}", sized(apparent)),
        ];
        if is_dir {
            lines.push(format!("Items:     {}", grouped(a.dir_totals(a.dir_of(id)).2)));
        }
        if let Some(t) = self.mtime_for(id) {
            lines.push(format!("Modified:  {}", time_text(t)));
        }
        if let Some((_, ino, nlink)) = a.link_of(id) {
            let counted = if flags & arena::F_DUP_LINK != 0 { "; counted under another name" } else { "" };
            lines.push(format!("Links:     {nlink} names, inode {ino}{counted}"));
        }
        let mut notes = Vec::new();
        if flags & arena::F_ERROR != 0 {
            notes.push("could not be read");
        }
        if flags & arena::F_OTHER_FS != 0 {
            notes.push("on another file system, not entered");
        }
        if is_dir {
            let df = a.dir_flags(a.dir_of(id));
            if df & arena::D_READ_ERROR != 0 {
                notes.push("could not be read (fully)");
            }
            if df & arena::D_ERROR_BELOW != 0 {
                notes.push("something below could not be read");
            }
            if df & arena::D_DONE == 0 {
                notes.push("still being scanned");
            }
        }
        if !notes.is_empty() {
            lines.push(format!("Notes:     {}", notes.join("; ")));
        }
        lines
    }
}

/// `text` broken at spaces into lines of at most `cols` columns (a longer word is cut
/// in the middle by `fit`).
fn wrap(text: &str, cols: usize) -> Vec<String> {
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

/// An item count in at most 7 columns.
fn compact_count(n: u64) -> String {
    if n < 10_000_000 {
        n.to_string()
    } else {
        format!("{:.1}M", n as f64 / 1e6)
    }
}

// ---------------------------------------------------------------- the loop

/// Entries below `root` that could not be read: one pass over the parts of the tree
/// whose directories carry an error flag.
pub fn count_errors(a: &Arena, root: u32) -> u64 {
    let err_flags = arena::D_READ_ERROR | arena::D_ERROR_BELOW;
    let mut n = u64::from(a.dir_flags(root) & arena::D_READ_ERROR != 0);
    let mut stack = vec![root];
    while let Some(d) = stack.pop() {
        if a.dir_flags(d) & err_flags == 0 {
            continue;
        }
        for id in a.children(d).unwrap_or(0..0) {
            let f = a.flags(id);
            if f & arena::F_REMOVED != 0 {
                continue;
            }
            if f & arena::F_ERROR != 0 {
                n += 1;
            } else if f & 3 == arena::KIND_DIR {
                let sub = a.dir_of(id);
                n += u64::from(a.dir_flags(sub) & arena::D_READ_ERROR != 0);
                stack.push(sub);
            }
        }
    }
    n
}

/// Whether the locale says UTF-8 (else the browser draws in ASCII).
fn utf8_locale() -> bool {
    for key in ["LC_ALL", "LC_CTYPE", "LANG"] {
        if let Some(v) = std::env::var_os(key).filter(|v| !v.is_empty()) {
            let v = v.to_string_lossy().to_ascii_lowercase();
            return v.contains("utf-8") || v.contains("utf8");
        }
    }
    false
}

/// `NO_COLOR` set to anything but the empty string turns colour off (no-color.org).
fn no_color_env() -> bool {
    std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty())
}

/// Set by a worker thread when its work is done, with how long it took.
#[derive(Default)]
struct Done {
    nanos: AtomicU64,
    flag: AtomicBool,
}

impl Done {
    fn set(&self, start: Instant) {
        self.nanos.store(start.elapsed().as_nanos() as u64, AtomicOrdering::Relaxed);
        self.flag.store(true, AtomicOrdering::Release);
    }

    fn get(&self) -> Option<Duration> {
        self.flag.load(AtomicOrdering::Acquire).then(|| Duration::from_nanos(self.nanos.load(AtomicOrdering::Relaxed)))
    }
}

/// A rescan or delete running on its own thread.
struct Job<'a> {
    delete: Option<(Arc<delete::Progress>, u64)>,
    sink: Option<Arc<ArenaSink<'a>>>,
    done: Arc<Done>,
    label: String,
    start: Instant,
    entries_at_start: u32,
}

/// The two things the browser needs from a `Reader`, as plain function pointers so
/// that the loop is compiled once, not once per reader.
#[derive(Clone, Copy)]
pub struct Fs {
    pub stat_path: fn(&std::ffi::CStr, bool) -> Result<Meta, Errno>,
    pub scan: fn(&Walk, &ArenaSink, &std::ffi::CStr, &Meta, u32),
}

impl Fs {
    pub fn of<R: Reader>() -> Fs {
        Fs {
            stat_path: R::stat_path,
            scan: |w, sink, root, meta, token| scan::scan_as::<R, ArenaSink>(w, sink, root, meta, token),
        }
    }
}

/// What the loop needs besides the browser.
struct Ctx<'a> {
    fs: Fs,
    arena: &'a Arena,
    args: &'a BrowseArgs,
    threads: usize,
    fd_budget: usize,
    no_links: &'a HashSet<(u64, u64)>,
    one_fs_dev: Option<u64>,
}

impl<'a> Ctx<'a> {
    fn walk(&self) -> Walk<'a> {
        Walk {
            threads: self.threads,
            follow_all: self.args.walk.follow,
            follow_root: true,
            one_fs_dev: self.one_fs_dev,
            exclude: (!self.args.walk.exclude.is_empty()).then_some(&self.args.walk.exclude),
            seen_before: self.no_links,
            claim_dirs: true,
            fd_budget: self.fd_budget,
        }
    }
}

fn progress_line(a: &Arena, verb: &str, sink: &ArenaSink, entries: u32, start: Instant, width_cols: usize) -> String {
    let secs = start.elapsed().as_secs_f64().max(0.001);
    let dir = sink.last_dir.load(AtomicOrdering::Relaxed);
    let rate = grouped((entries as f64 / secs) as u64);
    let head = format!("{verb}: {} entries, {rate}/s  ", grouped(entries as u64));
    let room = width_cols.saturating_sub(width(&head));
    let path = escape(&dir_path(a, dir));
    let path = if width(&path) > room { fit(&path, room) } else { path };
    format!("{head}{path}")
}

/// Runs `dfdu browse`; returns the exit status (quitting exits the process directly).
pub fn run(args: &BrowseArgs, fs: Fs, threads: usize, fd_budget: usize) -> i32 {
    let arena = Arena::new();
    let sink = Arc::new(ArenaSink::new(&arena));
    let no_links = HashSet::new();
    let prog = &args.prog;
    let (root, scan_from, first_line) = match &args.walk.input {
        Some(f) => {
            let result = if f == "-" {
                crate::tree::ncdu::import(std::io::stdin().lock(), &arena)
            } else {
                match std::fs::File::open(f) {
                    Ok(file) => crate::tree::ncdu::import(std::io::BufReader::with_capacity(256 * 1024, file), &arena),
                    Err(e) => {
                        eprintln!("{prog} browse: cannot open {}: {e}", quotef(&os_bytes(f)));
                        return 1;
                    }
                }
            };
            match result {
                Ok(imported) => {
                    let from = if f == "-" { "standard input".to_string() } else { escape(&os_bytes(f)) };
                    let line = format!(
                        "Imported {} entries from {from} (written by {})",
                        grouped(arena.entry_count() as u64),
                        escape(imported.progname.as_bytes())
                    );
                    (imported.root, None, line)
                }
                Err(e) => {
                    eprintln!("{prog} browse: {}: {e}", quotef(&os_bytes(f)));
                    return 1;
                }
            }
        }
        None => {
            let path = os_bytes(&args.dir);
            let Ok(cpath) = CString::new(path.clone()) else {
                eprintln!("{prog} browse: invalid directory name");
                return 2;
            };
            let meta = match (fs.stat_path)(&cpath, true) {
                Ok(m) if m.kind == Kind::Dir => m,
                Ok(_) => {
                    eprintln!("{prog} browse: {} is not a directory", quotef(&path));
                    return 1;
                }
                Err(e) => {
                    eprintln!("{prog} browse: cannot access {}: {}", quotef(&path), platform::errno_text(e));
                    return 1;
                }
            };
            let Ok(root) = sink.add_root(&path, &meta) else { return 1 };
            (root, Some((cpath, meta)), String::new())
        }
    };
    let look = Look { ascii: args.ascii || !utf8_locale(), color: !args.no_color && !no_color_env(), si: args.si };
    let limits = Limits { read_only: args.read_only, imported: args.walk.input.is_some() };
    let session = match Session::start(look.color) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("{prog} browse: cannot use the terminal: {}", platform::errno_text(e));
            return 1;
        }
    };
    let ctx = Ctx { fs, arena: &arena, args, threads, fd_budget, no_links: &no_links, one_fs_dev: None };
    let ctx = Ctx { one_fs_dev: scan_from.as_ref().filter(|_| args.walk.one_fs).map(|(_, m)| m.dev), ..ctx };
    let mut browser = Browser::new(&arena, root, look, limits);
    browser.set_apparent(args.apparent);
    if args.walk.input.is_none() {
        browser.set_mtime_source(Box::new(mtime_of_path));
    }
    std::thread::scope(|s| {
        let scan_done = Arc::new(Done::default());
        let start = Instant::now();
        if let Some((cpath, meta)) = &scan_from {
            let (sink, done, ctx) = (sink.clone(), scan_done.clone(), &ctx);
            s.spawn(move || {
                (ctx.fs.scan)(&ctx.walk(), &sink, cpath, meta, root);
                done.set(start);
            });
        } else {
            scan_done.set(start);
        }
        let code = ui(s, &ctx, session, browser, (sink, scan_done), first_line);
        // The scan may still be running: quitting does not wait for it.
        std::process::exit(code)
    })
}

#[cfg(unix)]
fn mtime_of_path(path: &[u8]) -> Option<i64> {
    use std::os::unix::ffi::OsStrExt;
    use std::os::unix::fs::MetadataExt;
    std::fs::symlink_metadata(std::ffi::OsStr::from_bytes(path)).ok().map(|m| m.mtime())
}

#[cfg(not(unix))]
fn mtime_of_path(path: &[u8]) -> Option<i64> {
    let m = std::fs::symlink_metadata(String::from_utf8_lossy(path).as_ref()).ok()?;
    let t = m.modified().ok()?.duration_since(std::time::UNIX_EPOCH).ok()?;
    Some(t.as_secs() as i64)
}

/// The browser's loop: keys, signals, resizes, frames, and the jobs keys start.
fn ui<'s, 'a: 's>(
    s: &'s std::thread::Scope<'s, 'a>,
    ctx: &'a Ctx<'a>,
    mut session: Session,
    mut browser: Browser<'a>,
    (sink, scan_done): (Arc<ArenaSink<'a>>, Arc<Done>),
    first_line: String,
) -> i32 {
    let a = ctx.arena;
    let start = Instant::now();
    let mut scanning = scan_done.get().is_none();
    let mut status = Status { line: first_line, busy: false, errors: None };
    if !scanning {
        status.errors = Some(count_errors(a, browser.root));
    }
    let mut job: Option<Job<'a>> = None;
    let (w, h) = session.size();
    let mut screen = Screen::new(w, h);
    let mut decoder = Decoder::default();
    let mut keys = Vec::new();
    let mut need_draw = true;
    let mut last_tick = Instant::now();
    loop {
        let (bits, signo) = platform::term_signals();
        if bits & platform::SIG_QUIT != 0 {
            session.leave();
            return 128 + signo;
        }
        if bits & platform::SIG_SUSPEND != 0 {
            session.suspend();
            need_draw = true;
        }
        if bits & platform::SIG_CONTINUE != 0 {
            session.resume();
            need_draw = true;
        }
        let (w, h) = session.size();
        if (w, h) != (screen.width, screen.height) {
            screen = Screen::new(w, h);
            session.invalidate();
            need_draw = true;
        }
        if let Some(took) = scan_done.get().filter(|_| scanning) {
            scanning = false;
            status.errors = Some(count_errors(a, browser.root));
            status.line =
                format!("Scan finished: {} entries in {:.2} s", grouped(a.entry_count() as u64), took.as_secs_f64());
            browser.mark_stale();
            need_draw = true;
        }
        if job.as_ref().is_some_and(|j| j.done.get().is_some()) {
            let j = job.take().expect("checked above");
            finish_job(a, &mut browser, &mut status, j, scanning);
            need_draw = true;
        }
        let active = scanning || job.is_some();
        if active && last_tick.elapsed() >= TICK {
            last_tick = Instant::now();
            browser.mark_stale();
            status.line = match &job {
                Some(j) => job_line(a, j, w),
                None => progress_line(a, "Scanning", &sink, a.entry_count(), start, w),
            };
            need_draw = true;
        }
        status.busy = job.is_some();
        browser.set_busy(status.busy);
        if need_draw {
            browser.render(&mut screen, &status);
            if session.draw(&screen).is_err() {
                session.leave();
                return 1;
            }
            need_draw = false;
        }
        let timeout = if decoder.pending() {
            ESC_WAIT_MS
        } else if active {
            TICK.saturating_sub(last_tick.elapsed()).as_millis().max(1) as u32
        } else {
            1000
        };
        keys.clear();
        if session.read(&mut decoder, timeout, &mut keys).is_err() {
            session.leave();
            return 1;
        }
        for &k in &keys {
            need_draw = true;
            match k {
                Key::Ctrl('l') => session.invalidate(),
                _ => match browser.key(k) {
                    Action::None => {}
                    Action::Quit => {
                        session.leave();
                        return 0;
                    }
                    Action::Delete { dir, id } => job = Some(start_delete(s, a, &mut status, dir, id)),
                    Action::Rescan { dir } => match start_rescan(s, ctx, &mut browser, dir) {
                        Ok(j) => job = Some(j),
                        Err(msg) => browser.message("Cannot rescan", vec![msg]),
                    },
                },
            }
            browser.set_busy(job.is_some());
        }
    }
}

fn job_line(a: &Arena, j: &Job, width_cols: usize) -> String {
    match (&j.delete, &j.sink) {
        (Some((p, total)), _) => {
            let removed = p.removed.load(AtomicOrdering::Relaxed);
            fit(&format!("Deleting {}: {} of {} items removed", j.label, grouped(removed), grouped(*total)), width_cols)
        }
        (None, Some(sink)) => {
            let n = a.entry_count().saturating_sub(j.entries_at_start);
            progress_line(a, "Rescanning", sink, n, j.start, width_cols)
        }
        (None, None) => String::new(),
    }
}

fn finish_job(a: &Arena, browser: &mut Browser, status: &mut Status, j: Job, scanning: bool) {
    browser.mark_stale();
    if !scanning {
        status.errors = Some(count_errors(a, browser.root));
    }
    let secs = j.done.get().unwrap_or_default().as_secs_f64();
    let Some((p, _)) = &j.delete else {
        let n = a.entry_count().saturating_sub(j.entries_at_start);
        status.line = format!("Rescanned {}: {} entries in {secs:.2} s", j.label, grouped(n as u64));
        return;
    };
    let removed = p.removed.load(AtomicOrdering::Relaxed);
    let failed = p.failed.load(AtomicOrdering::Relaxed);
    let noun = if removed == 1 { "item" } else { "items" };
    status.line = format!("Deleted {}: {} {noun} removed in {secs:.2} s", j.label, grouped(removed));
    if failed > 0 {
        status.line.push_str(&format!(", {} failed", grouped(failed)));
        let failures = p.failures.lock().unwrap();
        let mut lines: Vec<String> =
            failures.iter().take(8).map(|(path, why)| format!("{}: {}", escape(path), why.text())).collect();
        if failed > lines.len() as u64 {
            lines.push(format!("... and {} more", grouped(failed - lines.len() as u64)));
        }
        lines.push("What could not be removed is still shown.".into());
        let title = format!("{} of {} entries could not be deleted", grouped(failed), grouped(failed + removed));
        browser.message(&title, lines);
    }
}

fn start_delete<'s, 'a: 's>(
    s: &'s std::thread::Scope<'s, 'a>,
    a: &'a Arena,
    status: &mut Status,
    dir: u32,
    id: u32,
) -> Job<'a> {
    let total = if a.kind(id) == arena::KIND_DIR { a.dir_totals(a.dir_of(id)).2 + 1 } else { 1 };
    let progress = Arc::new(delete::Progress::default());
    let done = Arc::new(Done::default());
    let label = escape(&child_path(a, dir, id));
    status.line = format!("Deleting {label}...");
    let (p, d, start) = (progress.clone(), done.clone(), Instant::now());
    s.spawn(move || {
        delete::delete(a, dir, id, &p);
        d.set(start);
    });
    Job { delete: Some((progress, total)), sink: None, done, label, start: Instant::now(), entries_at_start: 0 }
}

fn start_rescan<'s, 'a: 's>(
    s: &'s std::thread::Scope<'s, 'a>,
    ctx: &'a Ctx<'a>,
    browser: &mut Browser<'a>,
    old: u32,
) -> Result<Job<'a>, String> {
    let a = ctx.arena;
    let path = dir_path(a, old);
    let label = escape(&path);
    let cpath = CString::new(path).map_err(|_| "invalid path".to_string())?;
    let is_root = a.dir_parent(old) == NO_DIR;
    let meta = match (ctx.fs.stat_path)(&cpath, is_root) {
        Ok(m) if m.kind == Kind::Dir => m,
        Ok(_) => return Err(format!("{label} is no longer a directory.")),
        Err(e) => return Err(format!("{label}: {}", platform::errno_text(e))),
    };
    let entries_at_start = a.entry_count();
    let new = a.begin_rescan(old, meta.disk_bytes(), meta.size).map_err(|_| "the arena is full".to_string())?;
    browser.replace_dir(old, new);
    let sink = Arc::new(ArenaSink::new(a));
    sink.adopt(new, &meta);
    let done = Arc::new(Done::default());
    let (sk, d, start) = (sink.clone(), done.clone(), Instant::now());
    s.spawn(move || {
        (ctx.fs.scan)(&ctx.walk(), &sk, &cpath, &meta, new);
        d.set(start);
    });
    Ok(Job { delete: None, sink: Some(sink), done, label, start: Instant::now(), entries_at_start })
}

#[cfg(test)]
mod tests {
    //! Key journeys against an in-memory screen, on trees built in an arena (exact
    //! sizes, no file system), in the manner of dua-cli's `journeys_readonly.rs`.

    use super::*;
    use crate::tree::arena::{name_cost, NewEntry};
    use std::collections::BTreeMap;

    /// A tree to build: files by path with their size; directories are implied.
    #[derive(Default)]
    struct Node {
        size: u64,
        kids: BTreeMap<Vec<u8>, Node>,
        is_dir: bool,
    }

    /// Builds `files` (path, bytes) under a root named `/r`; every directory is done
    /// except those named in `unlisted` (listed nowhere, still "scanning").
    fn tree(files: &[(&[u8], u64)], unlisted: &[&[u8]]) -> (Arena, u32) {
        let mut top = Node { is_dir: true, ..Default::default() };
        for (path, size) in files {
            let mut n = &mut top;
            let parts: Vec<&[u8]> = path.split(|&b| b == b'/').collect();
            for (i, p) in parts.iter().enumerate() {
                n = n.kids.entry(p.to_vec()).or_default();
                if i + 1 < parts.len() || p.is_empty() {
                    n.is_dir = true;
                } else {
                    n.size = *size;
                }
            }
        }
        let a = Arena::new();
        let id = a.reserve_entries(1).unwrap();
        a.write_entry(
            id,
            &NewEntry { name: b"", flags: arena::KIND_DIR, ..Default::default() },
            a.reserve_names(1).unwrap(),
        );
        let root = a.new_dir(id, NO_DIR, 4096, 4096).unwrap();
        a.set_root_name(root, b"/r");
        let mut todo = vec![(root, &top, b"/r".to_vec())];
        while let Some((dir, node, path)) = todo.pop() {
            let kids: Vec<(&Vec<u8>, &Node)> = node.kids.iter().filter(|(k, _)| !k.is_empty()).collect();
            let first = a.reserve_entries(kids.len() as u32).unwrap();
            let bytes: u64 = kids.iter().map(|(k, _)| name_cost(k.len())).sum();
            let mut at = a.reserve_names(bytes).unwrap();
            a.set_layout(dir, first, at);
            let (mut disk, mut items) = (0, 0);
            for (i, (name, kid)) in kids.iter().enumerate() {
                let id = first + i as u32;
                let flags = if kid.is_dir { arena::KIND_DIR } else { arena::KIND_FILE };
                let e = NewEntry { name, flags, disk_bytes: kid.size, apparent_bytes: kid.size };
                a.write_entry(id, &e, at);
                at += name_cost(name.len()) as u32;
                items += 1;
                if kid.is_dir {
                    let sub = a.new_dir(id, dir, 4096, 4096).unwrap();
                    disk += 4096;
                    let mut p = path.clone();
                    p.push(b'/');
                    p.extend_from_slice(name);
                    if unlisted.contains(&name.as_slice()) {
                        continue;
                    }
                    todo.push((sub, kid, p));
                } else {
                    disk += kid.size;
                }
            }
            a.add_up(dir, disk, disk, items);
            a.publish_children(dir, first, kids.len() as u32);
            a.set_dir_flags(dir, arena::D_DONE);
        }
        (a, root)
    }

    fn sample() -> (Arena, u32) {
        tree(
            &[
                (b"big/a.bin", 1 << 20),
                (b"big/b.bin", 512 << 10),
                (b"big/sub/c.bin", 1 << 10),
                (b"mid/x.txt", 200 << 10),
                (b"small.txt", 4096),
                (b"zero", 0),
                (b"empty/", 0),
            ],
            &[],
        )
    }

    struct Journey<'a> {
        b: Browser<'a>,
        screen: Screen,
        status: Status,
    }

    impl<'a> Journey<'a> {
        fn new(a: &'a Arena, root: u32) -> Journey<'a> {
            Self::with(a, root, Limits::default())
        }

        fn with(a: &'a Arena, root: u32, limits: Limits) -> Journey<'a> {
            let look = Look { ascii: true, color: false, si: false };
            let mut j = Journey {
                b: Browser::new(a, root, look, limits),
                screen: Screen::new(80, 24),
                status: Status::default(),
            };
            j.draw();
            j
        }

        fn draw(&mut self) {
            self.b.render(&mut self.screen, &self.status);
        }

        /// Presses the keys (one string of key names and characters) and redraws.
        fn keys(&mut self, keys: &[Key]) -> Vec<Action> {
            let actions = keys.iter().map(|&k| self.b.key(k)).filter(|a| *a != Action::None).collect();
            self.draw();
            actions
        }

        fn type_str(&mut self, s: &str) -> Vec<Action> {
            let keys: Vec<Key> = s.chars().map(Key::Char).collect();
            self.keys(&keys)
        }

        fn text(&self) -> String {
            self.screen.text()
        }

        /// The names on the listing's rows, in order.
        fn names(&self) -> Vec<String> {
            (2..self.screen.height - 2)
                .map(|r| self.screen.row_text(r))
                .take_while(|l| !l.trim().is_empty() && !l.contains("(empty"))
                .map(|l| l.split_whitespace().last().unwrap_or_default().to_string())
                .collect()
        }

        /// The name on the highlighted row.
        fn selected_row(&self) -> String {
            let r = (2..self.screen.height - 2).find(|&r| self.screen.style_at(r, 0).reverse).expect("a selected row");
            self.screen.row_text(r).split_whitespace().last().unwrap_or_default().to_string()
        }
    }

    #[test]
    fn opens_on_the_root_sorted_by_size() {
        let (a, r) = sample();
        let j = Journey::new(&a, r);
        assert!(j.screen.row_text(0).starts_with(" dfdu "), "header: {}", j.screen.row_text(0));
        assert!(j.screen.row_text(1).starts_with("--- /r ---"));
        assert_eq!(j.names(), ["/big", "/mid", "/empty", "small.txt", "zero"]);
        assert_eq!(j.selected_row(), "/big");
        assert!(j.text().contains("   1.5 MiB [##########] /big"), "{}", j.text());
        assert!(j.text().contains("e  4.0 KiB [          ] /empty"), "an empty directory is marked: {}", j.text());
        let footer = j.screen.row_text(23);
        assert!(footer.contains("Total disk usage: 1.7 MiB") && footer.contains("Items: 10"), "{footer}");
    }

    #[test]
    fn navigation_keys() {
        use Key::*;
        let (a, r) = sample();
        let mut j = Journey::new(&a, r);
        j.keys(&[Down, Char('j')]);
        assert_eq!(j.selected_row(), "/empty");
        j.keys(&[Up]);
        assert_eq!(j.selected_row(), "/mid");
        j.keys(&[End]);
        assert_eq!(j.selected_row(), "zero");
        j.keys(&[Char('k'), Home]);
        assert_eq!(j.selected_row(), "/big");
        j.keys(&[Enter]);
        assert!(j.screen.row_text(1).starts_with("--- /r/big ---"));
        assert_eq!(j.names(), ["a.bin", "b.bin", "/sub"]);
        j.keys(&[Char('G'), End, Right]);
        assert_eq!(j.names(), ["c.bin"]);
        j.keys(&[Left, Char('h')]);
        assert!(j.screen.row_text(1).starts_with("--- /r ---"));
        assert_eq!(j.selected_row(), "/big", "going up selects where we came from");
        j.keys(&[Backspace, Char('<')]);
        assert!(j.screen.row_text(1).starts_with("--- /r ---"), "the root has no parent to go to");
        j.keys(&[Down, Down, Char('l')]);
        assert!(j.text().contains("(empty directory)"));
        j.keys(&[Char('<'), End, Enter]);
        assert!(j.screen.row_text(1).starts_with("--- /r ---"), "files do not open");
    }

    #[test]
    fn the_cursor_stays_on_top_while_the_scan_reorders_until_the_user_moves() {
        let (a, r) = sample();
        let mut j = Journey::new(&a, r);
        let find = |name: &[u8]| {
            let mut n = Vec::new();
            a.children(r).unwrap().find(|&id| {
                a.child_name(r, id, &mut n);
                n == name
            })
        };
        let mid = a.dir_of(find(b"mid").unwrap());
        // A scan adds to mid: it becomes the largest.
        a.add_up(mid, 4 << 20, 4 << 20, 1);
        j.b.mark_stale();
        j.draw();
        assert_eq!(j.selected_row(), "/mid", "still the first row");
        j.keys(&[Key::Down, Key::Up]);
        a.add_up(a.dir_of(find(b"empty").unwrap()), 8 << 20, 8 << 20, 1);
        j.b.mark_stale();
        j.draw();
        assert_eq!(j.names()[0], "/empty");
        assert_eq!(j.selected_row(), "/mid", "a chosen entry is followed");
    }

    #[test]
    fn pages_scroll_and_keep_the_cursor_visible() {
        use Key::*;
        let files: Vec<(Vec<u8>, u64)> = (0..100).map(|i| (format!("f{i:03}").into_bytes(), 512 * (i + 1))).collect();
        let spec: Vec<(&[u8], u64)> = files.iter().map(|(n, s)| (n.as_slice(), *s)).collect();
        let (a, r) = tree(&spec, &[]);
        let mut j = Journey::new(&a, r);
        assert_eq!(j.names().len(), 20, "80x24 shows 20 rows");
        j.keys(&[PageDown]);
        assert_eq!(j.selected_row(), "f079");
        j.keys(&[PageDown, PageDown, PageDown, PageDown, PageDown]);
        assert_eq!(j.selected_row(), "f000");
        assert_eq!(j.names().last().unwrap(), "f000");
        j.keys(&[PageUp]);
        assert_eq!(j.selected_row(), "f020");
        assert_eq!(j.names()[0], "f020", "scrolled just enough");
    }

    #[test]
    fn sorts_and_their_reversal() {
        let (a, r) = sample();
        let mut j = Journey::new(&a, r);
        j.type_str("n");
        assert_eq!(j.names(), ["/big", "/empty", "/mid", "small.txt", "zero"]);
        j.type_str("n");
        assert_eq!(j.names(), ["zero", "small.txt", "/mid", "/empty", "/big"]);
        j.type_str("s");
        assert_eq!(j.names(), ["/big", "/mid", "/empty", "small.txt", "zero"]);
        j.type_str("s");
        assert_eq!(j.names(), ["zero", "/empty", "small.txt", "/mid", "/big"], "ties by name");
        j.type_str("C");
        assert_eq!(j.names()[..2], ["/big", "/mid"], "most items first");
        j.type_str("ts");
        assert_eq!(j.names(), ["/big", "/mid", "/empty", "small.txt", "zero"], "directories first");
        j.type_str("s");
        assert_eq!(j.names(), ["/empty", "/mid", "/big", "zero", "small.txt"], "still first when reversed");
    }

    #[test]
    fn sort_by_mtime_uses_directory_times_and_stats_files() {
        let (a, r) = sample();
        let kids = a.children(r).unwrap();
        let mut name = Vec::new();
        for id in kids {
            a.child_name(r, id, &mut name);
            if a.kind(id) == arena::KIND_DIR {
                let t = match name.as_slice() {
                    b"big" => 1_600_000_000,
                    b"mid" => 1_700_000_000,
                    _ => 1_500_000_000,
                };
                a.set_dir_stat(a.dir_of(id), 1, t);
            }
        }
        let mut j = Journey::new(&a, r);
        j.b.set_mtime_source(Box::new(|p: &[u8]| {
            Some(if p.ends_with(b"zero") { 1_800_000_000 } else { 1_000_000_000 })
        }));
        j.type_str("M");
        assert_eq!(j.names()[..3], ["zero", "/mid", "/big"].map(String::from), "newest first: {}", j.text());
        assert!(j.text().contains("2027-01-15") || j.text().contains("2027-01-14"), "{}", j.text());
        j.type_str("M");
        assert_eq!(j.names()[0], "small.txt");
    }

    #[test]
    fn toggles_change_columns() {
        let (a, r) = sample();
        let mut j = Journey::new(&a, r);
        j.type_str("g");
        assert!(j.text().contains(" 87.7% /big"), "percentage: {}", j.text());
        j.type_str("g");
        assert!(j.text().contains(" 87.7% [##########] /big"));
        j.type_str("g");
        assert!(j.text().contains("   1.5 MiB /big"));
        j.type_str("gc");
        assert!(j.text().contains("[##########]       4 /big"), "count column: {}", j.text());
        j.type_str("a");
        let footer = j.screen.row_text(23);
        assert!(footer.starts_with(" Apparent size:"), "{footer}");
        j.type_str("i");
        assert!(j.text().contains("Path:      /r/big") && j.text().contains("Items:     4"), "{}", j.text());
        j.keys(&[Key::Down]);
        assert!(j.text().contains("Path:      /r/mid"), "the panel follows the cursor");
        j.type_str("i?");
        assert!(j.text().contains("dfdu help (1 of 2: keys)"));
        j.type_str("2");
        assert!(j.text().contains("still being scanned"));
        j.type_str("q");
        assert!(!j.text().contains("dfdu help"));
        assert_eq!(j.type_str("q"), [Action::Quit]);
    }

    #[test]
    fn delete_asks_and_defaults_to_no() {
        use Key::*;
        let (a, r) = sample();
        let mut j = Journey::new(&a, r);
        j.type_str("d");
        let t = j.text();
        assert!(
            t.contains("Confirm delete")
                && t.contains("/r/big")
                && t.contains("1.5 MiB on disk")
                && t.contains("5 items")
        );
        assert!(j.keys(&[Enter]).is_empty(), "Enter takes the default: no");
        assert!(!j.text().contains("Confirm delete"));
        assert!(j.type_str("dn").is_empty());
        assert!(j.keys(&[Char('d'), Esc]).is_empty());
        assert!(j.keys(&[Char('d'), Char('x'), Char('q')]).is_empty(), "other keys do nothing, q cancels");
        let big = j.b.selected().unwrap();
        assert_eq!(j.keys(&[Char('d'), Tab, Enter]), [Action::Delete { dir: r, id: big }]);
        assert_eq!(j.type_str("dy"), [Action::Delete { dir: r, id: big }]);
        // The arena side of a completed delete: the entry leaves the listing and totals.
        a.remove(r, big);
        j.b.mark_stale();
        j.draw();
        assert_eq!(j.names(), ["/mid", "/empty", "small.txt", "zero"]);
        assert_eq!(j.selected_row(), "/mid");
    }

    #[test]
    fn delete_is_refused_where_it_must_be() {
        let (a, r) = sample();
        for (limits, why) in [
            (Limits { read_only: true, imported: false }, "--read-only"),
            (Limits { read_only: false, imported: true }, "an imported export"),
        ] {
            let mut j = Journey::with(&a, r, limits);
            assert!(j.type_str("d").is_empty());
            assert!(j.text().contains(why) && !j.text().contains("Confirm"), "{}", j.text());
            j.type_str(" ");
            assert!(!j.text().contains(why), "any key closes the message");
        }
        let (a, r) = tree(&[(b"scanning/x", 1), (b"done/y", 1)], &[b"scanning"]);
        let mut j = Journey::new(&a, r);
        j.type_str("n");
        let scanning = a.children(r).unwrap().find(|&id| j.b.names.get(id) == b"done").map(|d| d + 1).unwrap();
        assert_eq!(j.names(), ["/done", "/scanning"]);
        let d = a.dir_of(scanning);
        assert!(a.dir_flags(d) & arena::D_DONE == 0);
        assert!(j.text().contains("*  4.0 KiB [##########] /scanning"), "{}", j.text());
        j.type_str("jd");
        assert!(j.text().contains("still being scanned"), "{}", j.text());
        j.type_str(" l");
        assert!(j.text().contains("(not listed yet: scanning)") && j.screen.row_text(1).contains("(scanning)"));
        let mut j = Journey::new(&a, r);
        j.b.set_busy(true);
        j.type_str("jd");
        assert!(j.text().contains("Wait until"));
    }

    #[test]
    fn rescan_asks_for_the_selected_directory() {
        let (a, r) = sample();
        let mut j = Journey::new(&a, r);
        let big = a.dir_of(j.b.selected().unwrap());
        assert_eq!(j.type_str("r"), [Action::Rescan { dir: big }]);
        j.keys(&[Key::End]);
        assert_eq!(j.type_str("r"), [Action::Rescan { dir: r }], "a file selected: the directory shown");
        let new = a.begin_rescan(r, 4096, 4096).unwrap();
        j.b.replace_dir(r, new);
        j.draw();
        assert_eq!(j.b.cwd(), new);
        assert!(j.text().contains("(not listed yet: scanning)"));
        assert!(j.screen.row_text(1).contains("(scanning)"));
        let mut j = Journey::with(&a, new, Limits { read_only: false, imported: true });
        assert!(j.type_str("r").is_empty() && j.text().contains("imported"));
    }

    #[test]
    fn resizes_and_tiny_terminals() {
        use Key::*;
        let (a, r) = sample();
        let mut j = Journey::new(&a, r);
        j.keys(&[End]);
        for (w, h) in [(120, 40), (40, 10), (80, 24), (41, 11)] {
            j.screen = Screen::new(w, h);
            j.draw();
            assert_eq!(j.selected_row(), "zero", "{w}x{h}: the selection survives");
            assert!(j.screen.row_text(h - 1).starts_with(" Total disk usage"), "{w}x{h}");
        }
        for (w, h) in [(39, 10), (40, 9), (20, 5), (1, 1)] {
            j.screen = Screen::new(w, h);
            j.draw();
            assert!(j.screen.row_text(0).starts_with(&"dfdu: window too small"[..w.min(22)]), "{w}x{h}");
        }
        j.screen = Screen::new(10, 3);
        j.draw();
        assert_eq!(j.screen.text(), "dfdu: wind\nneed 40x10\nq quits");
        // Every box at every small size draws without panicking.
        for (w, h) in [(40, 10), (41, 10), (40, 11), (45, 12), (60, 15)] {
            for keys in [&[Char('?')][..], &[Char('?'), Char('2')], &[Char('i')], &[Char('d')], &[Char('d'), Tab]] {
                let mut j = Journey::new(&a, r);
                j.screen = Screen::new(w, h);
                j.keys(keys);
                let t = j.text();
                assert!(t.lines().count() == h && t.lines().all(|l| width(l) <= w), "{w}x{h} {keys:?}");
                j.keys(&[Esc, Esc]);
            }
        }
    }

    #[test]
    fn odd_names_are_escaped_and_aligned() {
        let (a, r) = tree(
            &[
                (b"bad\xffname", 1024),
                (b"new\nline", 2048),
                ("日本語のとても長いファイル名前がここにあります_and_some_more_ascii_text.dat".as_bytes(), 4096),
                ("emoji-😀-file".as_bytes(), 512),
                ("cafe\u{301}".as_bytes(), 3072),
            ],
            &[],
        );
        let mut j = Journey::new(&a, r);
        j.type_str("n");
        let t = j.text();
        assert!(t.contains(" bad\\xffname") && t.contains(" new\\nline") && t.contains(" emoji-😀-file"), "{t}");
        assert!(t.contains("...") && t.contains("日本語"), "{t}");
        for row in 2..7 {
            assert_eq!(width(&j.screen.row_text(row)), 80, "row {row} keeps its width");
        }
        j.screen = Screen::new(50, 12);
        j.draw();
        for row in 0..12 {
            assert_eq!(width(&j.screen.row_text(row)), 50, "row {row} at 50 columns");
        }
    }

    #[test]
    fn sizes_and_counts_read_well() {
        for (n, si, want) in [
            (0, false, "    0 B  "),
            (999, false, "  999 B  "),
            (1000, false, "  1.0 KiB"),
            (1536, false, "  1.5 KiB"),
            (1023 * 1024, false, "1023.0 KiB"),
            (5 << 30, false, "  5.0 GiB"),
            (1500, true, "  1.5 kB "),
        ] {
            let got = size_text(n, si);
            if n == 1023 * 1024 {
                assert_eq!(got, "  1.0 MiB", "switches unit before 4 digits");
            } else {
                assert_eq!(got, want);
            }
        }
        assert_eq!(grouped(1234567), "1,234,567");
        assert_eq!(grouped(12), "12");
        assert_eq!(compact_count(12_345_678), "12.3M");
    }
}
