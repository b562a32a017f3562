//! The loop around the view: scans, rescans and deletes run on other threads and write
//! the arena while this thread waits for keys, redraws on a tick while something runs
//! and at once after a key.

use super::*;
use crate::meta::{os_bytes, Errno, Kind, Meta};
use crate::platform;
use crate::term::{escape, fit, width, Decoder, Key, Screen, Session};
use crate::tree::arena::{self, Arena, NO_DIR};
use crate::tree::path::{child_path, dir_path};
use crate::tree::roots::{import_file, load_side, stat_root};
use crate::tree::sink::ArenaSink;
use crate::walk::reader::Reader;
use crate::walk::scan::{self, Walk};
use crate::walk::threads::spawn_or_run;
use std::collections::HashSet;
use std::ffi::CString;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering as AtomicOrdering};
use std::sync::Arc;
use std::time::{Duration, Instant};

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
pub(super) fn utf8_locale() -> bool {
    for key in ["LC_ALL", "LC_CTYPE", "LANG"] {
        if let Some(v) = std::env::var_os(key).filter(|v| !v.is_empty()) {
            let v = v.to_string_lossy().to_ascii_lowercase();
            return v.contains("utf-8") || v.contains("utf8");
        }
    }
    false
}

/// `NO_COLOR` set to anything but the empty string turns colour off (no-color.org).
pub(super) fn no_color_env() -> bool {
    std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty())
}

/// Set by a worker thread when its work is done, with how long it took.
#[derive(Default)]
pub(super) struct Done {
    pub(super) nanos: AtomicU64,
    pub(super) flag: AtomicBool,
}

impl Done {
    pub(super) fn set(&self, start: Instant) {
        self.nanos.store(start.elapsed().as_nanos() as u64, AtomicOrdering::Relaxed);
        self.flag.store(true, AtomicOrdering::Release);
    }

    pub(super) fn get(&self) -> Option<Duration> {
        self.flag.load(AtomicOrdering::Acquire).then(|| Duration::from_nanos(self.nanos.load(AtomicOrdering::Relaxed)))
    }
}

/// A rescan or delete running on its own thread.
pub(super) struct Job<'a> {
    pub(super) delete: Option<(Arc<delete::Progress>, u64)>,
    pub(super) sink: Option<Arc<ArenaSink<'a>>>,
    pub(super) done: Arc<Done>,
    pub(super) label: String,
    pub(super) start: Instant,
    pub(super) entries_at_start: u32,
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
pub(super) struct Ctx<'a> {
    pub(super) fs: Fs,
    pub(super) arena: &'a Arena,
    pub(super) args: &'a BrowseArgs,
    pub(super) threads: usize,
    pub(super) fd_budget: usize,
    pub(super) no_links: &'a HashSet<(u64, u64)>,
    pub(super) one_fs_dev: Option<u64>,
}

impl<'a> Ctx<'a> {
    pub(super) fn walk(&self) -> Walk<'a> {
        let walk = self.args.walk.walk(self.threads, self.fd_budget, self.one_fs_dev, self.no_links);
        Walk { shared: self.args.shared, ..walk }
    }
}

pub(super) fn progress_line(
    a: &Arena,
    verb: &str,
    sink: &ArenaSink,
    entries: u32,
    start: Instant,
    width_cols: usize,
) -> String {
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
    let sink = ArenaSink::new(&arena);
    // With --shared the files' extent figures are kept, so deletes and rescans update them.
    let sink = Arc::new(if args.shared { sink.keeping_extent_files() } else { sink });
    let no_links = HashSet::new();
    let prog = &args.prog;
    // The compared tree goes in first (imported, or scanned with the same options): its
    // errors come before any terminal use.
    let old_root = match &args.diff {
        Some(f) => match load_side(f, &arena, &args.walk, (threads, fd_budget), fs.stat_path, fs.scan) {
            Ok(side) => Some(side.root),
            Err(e) => {
                eprintln!("{prog} browse: {e}");
                return 1;
            }
        },
        None => None,
    };
    let before = arena.entry_count() as u64;
    let (root, scan_from, first_line) = match &args.walk.input {
        Some(f) => match import_file(f, &arena) {
            Ok(imported) => {
                let from = if f == "-" { "standard input".to_string() } else { escape(&os_bytes(f)) };
                let line = format!(
                    "Imported {} entries from {from} (written by {})",
                    grouped(arena.entry_count() as u64 - before),
                    escape(imported.progname.as_bytes())
                );
                (imported.root, None, line)
            }
            Err(e) => {
                eprintln!("{prog} browse: {e}");
                return 1;
            }
        },
        None => {
            let path = os_bytes(&args.dir);
            let Ok(cpath) = CString::new(path.clone()) else {
                eprintln!("{prog} browse: invalid directory name");
                return 2;
            };
            let meta = match stat_root(&cpath, fs.stat_path) {
                Ok(m) => m,
                Err(e) => {
                    eprintln!("{prog} browse: {e}");
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
    if let Some(old) = old_root {
        browser.set_compare(old);
    }
    if args.walk.input.is_none() {
        browser.set_mtime_source(Box::new(mtime_of_path));
        browser.set_mounts_source(Box::new(mounts_at_path));
    }
    std::thread::scope(|s| {
        let scan_done = Arc::new(Done::default());
        let start = Instant::now();
        if let Some((cpath, meta)) = &scan_from {
            let (sink, done, ctx) = (sink.clone(), scan_done.clone(), &ctx);
            spawn_or_run(s, move || {
                (ctx.fs.scan)(&ctx.walk(), &sink, cpath, meta, root);
                if ctx.args.shared {
                    sink.finish_shared();
                }
                done.set(start);
            });
        } else {
            scan_done.set(start);
        }
        let mut code = ui(s, &ctx, session, browser, (sink, scan_done), first_line);
        if let Some(full) = arena.full() {
            eprintln!("{} browse: the tree is too large; {}", args.prog, full_lines(full)[1].to_lowercase());
            code = code.max(1);
        }
        // The scan may still be running: quitting does not wait for it.
        std::process::exit(code)
    })
}

/// Mount points at or below `path` (a selection as the scan named it): its parent is
/// resolved to an absolute path the way the scan resolved it, its last name is kept.
#[cfg(unix)]
fn mounts_at_path(path: &[u8]) -> Option<u64> {
    use std::os::unix::ffi::OsStrExt;
    let cut = path.iter().rposition(|&b| b == b'/')?;
    let (parent, name) = (&path[..cut.max(1)], &path[cut + 1..]);
    let parent = if cut == 0 { b"/".to_vec() } else { parent.to_vec() };
    let mut abs = std::fs::canonicalize(std::ffi::OsStr::from_bytes(&parent)).ok()?.as_os_str().as_bytes().to_vec();
    if !abs.ends_with(b"/") {
        abs.push(b'/');
    }
    abs.extend_from_slice(name);
    delete::mounts_under(&abs)
}

#[cfg(not(unix))]
fn mounts_at_path(path: &[u8]) -> Option<u64> {
    // No mount table here (`platform::mount_points` says `None`); open_at never enters
    // a volume mounted in a folder, so the delete stays on its volume anyway.
    delete::mounts_under(path)
}

#[cfg(unix)]
pub(super) fn mtime_of_path(path: &[u8]) -> Option<i64> {
    use std::os::unix::ffi::OsStrExt;
    use std::os::unix::fs::MetadataExt;
    std::fs::symlink_metadata(std::ffi::OsStr::from_bytes(path)).ok().map(|m| m.mtime())
}

#[cfg(not(unix))]
pub(super) fn mtime_of_path(path: &[u8]) -> Option<i64> {
    let m = std::fs::symlink_metadata(String::from_utf8_lossy(path).as_ref()).ok()?;
    let t = m.modified().ok()?.duration_since(std::time::UNIX_EPOCH).ok()?;
    Some(t.as_secs() as i64)
}

/// The browser's loop: keys, signals, resizes, frames, and the jobs keys start.
pub(super) fn ui<'s, 'a: 's>(
    s: &'s std::thread::Scope<'s, 'a>,
    ctx: &'a Ctx<'a>,
    mut session: Session,
    mut browser: Browser<'a>,
    (sink, scan_done): (Arc<ArenaSink<'a>>, Arc<Done>),
    first_line: String,
) -> i32 {
    let a = ctx.arena;
    let start = Instant::now();
    // A scan (no first line) that finished before the loop started still gets its
    // "Scan finished" line on the first pass; an import is done from the start.
    let mut scanning = scan_done.get().is_none() || first_line.is_empty();
    let mut full_shown = false;
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
    let (mut frames, oom_at) = (0u64, oom_after_frames());
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
            // Counted as the footer counts ("Items": everything below the root), so the two
            // numbers agree while the root is shown.
            let items = a.dir_totals(browser.root).2;
            status.line = format!("Scan finished: {} items in {:.2} s", grouped(items), took.as_secs_f64());
            browser.mark_stale();
            need_draw = true;
        }
        if job.as_ref().is_some_and(|j| j.done.get().is_some()) {
            let j = job.take().expect("checked above");
            finish_job(a, &mut browser, &mut status, j, scanning);
            need_draw = true;
        }
        need_draw |= !full_shown && notice_full(a, &mut browser);
        full_shown |= a.full().is_some();
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
            // The listing is now built from the current records (`refresh`: a window too
            // small to draw skips it): what rescans replaced is unreachable and no longer
            // held here, so its runs can be reused.
            browser.refresh();
            a.reclaim();
            frames += 1;
            if oom_at == Some(frames) {
                // No allocator can give this much: the out-of-memory path runs for real.
                drop(std::hint::black_box(Vec::<u8>::with_capacity(isize::MAX as usize)));
            }
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

pub(super) fn job_line(a: &Arena, j: &Job, width_cols: usize) -> String {
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

/// Tells the user once that the arena is full (a scan or rescan stopped adding entries):
/// what is shown is incomplete. True if it said so now.
pub(super) fn notice_full(a: &Arena, browser: &mut Browser) -> bool {
    let Some(full) = a.full() else { return false };
    browser.message("The tree is too large", full_lines(full));
    true
}

fn full_lines(full: arena::Full) -> Vec<String> {
    let what = match full {
        arena::Full::Ids => "more than 4,294,967,294 entries or directories",
        arena::Full::Names => "more than 4 GiB of names",
    };
    vec![
        format!("The scan found {what}, more than dfdu can hold."),
        "What is shown is incomplete: sizes and counts are too small.".into(),
    ]
}

pub(super) fn finish_job(a: &Arena, browser: &mut Browser, status: &mut Status, j: Job, scanning: bool) {
    browser.mark_stale();
    if j.delete.is_some() {
        // What was deleted and the compared tree had is now a removed row.
        browser.recompare();
    }
    if !scanning {
        status.errors = Some(count_errors(a, browser.root));
    }
    let secs = j.done.get().unwrap_or_default().as_secs_f64();
    let Some((p, total)) = &j.delete else {
        let n = a.entry_count().saturating_sub(j.entries_at_start);
        status.line = format!("Rescanned {}: {} entries in {secs:.2} s", j.label, grouped(n as u64));
        return;
    };
    let removed = p.removed.load(AtomicOrdering::Relaxed);
    let failed = p.failed.load(AtomicOrdering::Relaxed);
    let mounts = p.mounts_left.load(AtomicOrdering::Relaxed);
    let noun = if removed == 1 { "item" } else { "items" };
    status.line = format!("Deleted {}: {} {noun} removed in {secs:.2} s", j.label, grouped(removed));
    if mounts > 0 {
        let noun = if mounts == 1 { "mount point" } else { "mount points" };
        status.line.push_str(&format!(", {} {noun} left alone", grouped(mounts)));
    }
    if failed > 0 {
        status.line.push_str(&format!(", {} failed", grouped(failed - mounts)));
        let failures = p.failures.lock().unwrap();
        let mut lines: Vec<String> =
            failures.iter().take(8).map(|(path, why)| format!("{}: {}", escape(path), why.text())).collect();
        if failed > lines.len() as u64 {
            lines.push(format!("... and {} more", grouped(failed - lines.len() as u64)));
        }
        lines.push("What could not be removed is still shown.".into());
        // What is left is counted from the selection, not from the failures: one
        // directory that could not be entered keeps everything below it.
        let total = (*total).max(removed);
        let title = format!("{} of {} entries could not be deleted", grouped(total - removed), grouped(total));
        browser.message(&title, lines);
    }
}

pub(super) fn start_delete<'s, 'a: 's>(
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
    spawn_or_run(s, move || {
        delete::delete(a, dir, id, &p);
        // The sharing-aware figures without what was deleted (see `Arena::refresh_shared`).
        a.refresh_shared();
        d.set(start);
    });
    Job { delete: Some((progress, total)), sink: None, done, label, start: Instant::now(), entries_at_start: 0 }
}

/// The debugging knob `DFDU_DEBUG_OOM_AFTER_FRAMES=N` (docs/design.md, "Limits
/// and hostile trees"): after its N-th frame the browser asks for an allocation no allocator can
/// satisfy, so what running out of memory does to the terminal can be seen and tested.
fn oom_after_frames() -> Option<u64> {
    std::env::var("DFDU_DEBUG_OOM_AFTER_FRAMES").ok()?.parse().ok().filter(|&n| n > 0)
}

pub(super) fn start_rescan<'s, 'a: 's>(
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
    let sink = ArenaSink::new(a);
    let sink = Arc::new(if ctx.args.shared { sink.keeping_extent_files() } else { sink });
    sink.adopt(new, &meta);
    let done = Arc::new(Done::default());
    let (sk, d, start) = (sink.clone(), done.clone(), Instant::now());
    spawn_or_run(s, move || {
        // With --shared the rescan reads the extent maps again: its figures replace those
        // of the subtree it replaced, and the whole tree's are computed again.
        (ctx.fs.scan)(&ctx.walk(), &sk, &cpath, &meta, new);
        if ctx.args.shared {
            sk.finish_shared();
        }
        d.set(start);
    });
    Ok(Job { delete: None, sink: Some(sink), done, label, start: Instant::now(), entries_at_start })
}
