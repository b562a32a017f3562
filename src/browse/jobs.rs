//! The jobs keys start beside the scan: a rescan or a delete, each on its own thread,
//! and the status lines that follow them.

use super::*;
use crate::meta::Kind;
use crate::platform;
use crate::platform::Follow;
use crate::term::{escape, fit, width};
use crate::tree::arena::{Arena, NO_DIR};
use crate::tree::path::{child_path, dir_path};
use crate::tree::sink::ArenaSink;
use crate::walk::threads::spawn_or_run;
use std::ffi::CString;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering as AtomicOrdering};
use std::sync::Arc;
use std::time::{Duration, Instant};

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
    /// The "deletion" moves to the trash.
    pub(super) trash: bool,
    pub(super) sink: Option<Arc<ArenaSink<'a>>>,
    pub(super) done: Arc<Done>,
    pub(super) label: String,
    pub(super) start: Instant,
    pub(super) entries_at_start: u32,
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

pub(super) fn job_line(a: &Arena, j: &Job, width_cols: usize) -> String {
    match (&j.delete, &j.sink) {
        (Some((p, total)), _) => {
            let removed = p.removed.load(AtomicOrdering::Relaxed);
            let verb = if j.trash { "Moving to the trash" } else { "Deleting" };
            fit(&format!("{verb} {}: {} of {} items removed", j.label, grouped(removed), grouped(*total)), width_cols)
        }
        (None, Some(sink)) => {
            let n = a.entry_count().saturating_sub(j.entries_at_start);
            progress_line(a, "Rescanning", sink, n, j.start, width_cols)
        }
        (None, None) => String::new(),
    }
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
    status.line = if j.trash {
        format!("Moved to the trash {}: {} {noun} in {secs:.2} s", j.label, grouped(removed))
    } else {
        format!("Deleted {}: {} {noun} removed in {secs:.2} s", j.label, grouped(removed))
    };
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
        let what = if j.trash { "moved to the trash" } else { "deleted" };
        let title = format!("{} of {} entries could not be {what}", grouped(total - removed), grouped(total));
        browser.message(&title, lines);
    }
}

/// Starts deleting entry `id` of `dir` (confirmed).
pub(super) fn start_delete<'s, 'a: 's>(
    s: &'s std::thread::Scope<'s, 'a>,
    a: &'a Arena,
    status: &mut Status,
    dir: u32,
    id: u32,
) -> Job<'a> {
    let label = escape(&child_path(a, dir, id));
    start_deleting(s, a, status, vec![(dir, id)], label)
}

/// Starts deleting the confirmed marks, each as a single delete.
pub(super) fn start_delete_marks<'s, 'a: 's>(
    s: &'s std::thread::Scope<'s, 'a>,
    a: &'a Arena,
    status: &mut Status,
    targets: Vec<(u32, u32)>,
) -> Job<'a> {
    let noun = if targets.len() == 1 { "entry" } else { "entries" };
    let label = format!("{} marked {noun}", grouped(targets.len() as u64));
    start_deleting(s, a, status, targets, label)
}

/// Starts moving the confirmed entries to the trash.
pub(super) fn start_trash<'s, 'a: 's>(
    s: &'s std::thread::Scope<'s, 'a>,
    ctx: &'a Ctx<'a>,
    status: &mut Status,
    targets: Vec<(u32, u32)>,
) -> Job<'a> {
    let a = ctx.arena;
    let label = match targets.as_slice() {
        &[(dir, id)] => escape(&child_path(a, dir, id)),
        _ => format!("{} marked entries", grouped(targets.len() as u64)),
    };
    let items = |id: u32| if a.kind(id) == Kind::Dir { a.dir_totals(a.dir_of(id)).2 + 1 } else { 1 };
    let total = targets.iter().map(|&(_, id)| items(id)).sum();
    let progress = Arc::new(delete::Progress::default());
    let done = Arc::new(Done::default());
    status.line = format!("Moving {label} to the trash...");
    let (p, d, start) = (progress.clone(), done.clone(), Instant::now());
    spawn_or_run(s, move || {
        trash::trash_all(a, &targets, &ctx.place, &p);
        a.refresh_shared();
        d.set(start);
    });
    let delete = Some((progress, total));
    Job { delete, trash: true, sink: None, done, label, start: Instant::now(), entries_at_start: 0 }
}

fn start_deleting<'s, 'a: 's>(
    s: &'s std::thread::Scope<'s, 'a>,
    a: &'a Arena,
    status: &mut Status,
    targets: Vec<(u32, u32)>,
    label: String,
) -> Job<'a> {
    let items = |id: u32| if a.kind(id) == Kind::Dir { a.dir_totals(a.dir_of(id)).2 + 1 } else { 1 };
    let total = targets.iter().map(|&(_, id)| items(id)).sum();
    let progress = Arc::new(delete::Progress::default());
    let done = Arc::new(Done::default());
    status.line = format!("Deleting {label}...");
    let (p, d, start) = (progress.clone(), done.clone(), Instant::now());
    spawn_or_run(s, move || {
        match targets.as_slice() {
            &[(dir, id)] => delete::delete(a, dir, id, &p),
            _ => delete::delete_all(a, &targets, &p),
        }
        // The sharing-aware figures without what was deleted (see `Arena::refresh_shared`).
        a.refresh_shared();
        d.set(start);
    });
    Job {
        delete: Some((progress, total)),
        trash: false,
        sink: None,
        done,
        label,
        start: Instant::now(),
        entries_at_start: 0,
    }
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
    let meta = match (ctx.fs.stat_path)(&cpath, Follow::when(is_root)) {
        Ok(m) if m.kind == Kind::Dir => m,
        Ok(_) => return Err(format!("{label} is no longer a directory.")),
        Err(e) => return Err(format!("{label}: {}", platform::errno_text(e))),
    };
    let entries_at_start = a.entry_count();
    let new = a.begin_rescan(old, meta.disk_bytes(), meta.size).map_err(|_| "the arena is full".to_string())?;
    browser.replace_dir(old, new);
    let sink = ArenaSink::new(a);
    let walk = ctx.walk();
    let sink = Arc::new(if walk.shared { sink.keeping_extent_files() } else { sink });
    sink.adopt(new, &meta);
    let done = Arc::new(Done::default());
    let (sk, d, start) = (sink.clone(), done.clone(), Instant::now());
    spawn_or_run(s, move || {
        // With the sharing figures the rescan reads the extent maps again: its figures
        // replace those of the subtree it replaced, and the whole tree's are computed again.
        (ctx.fs.scan)(&walk, &sk, &cpath, &meta, new);
        if walk.shared {
            sk.finish_shared(walk.threads);
        }
        d.set(start);
    });
    Ok(Job { delete: None, trash: false, sink: Some(sink), done, label, start: Instant::now(), entries_at_start })
}
