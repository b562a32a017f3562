//! The browser's loop: one pass waits for keys, signals and resizes, follows the scan
//! and the job a key started, and draws a frame when something changed.
//!
//! # One pass
//!
//! 1. `signals`: a quit signal ends the loop; Ctrl-Z and `fg` give the terminal away and
//!    take it back; a new window size gets a new screen.
//! 2. `follow`: the scan's end, the end of a rescan or delete, a full arena, and a tick's
//!    progress line while something runs.
//! 3. `draw`: a frame, if anything above or a key asked for one.
//! 4. `wait`: keys, for at most a tick while something runs (the rest of an escape
//!    sequence: `ESC_WAIT_MS`; otherwise a second).
//! 5. `press`: each key to the browser, and the job it asks for started.
//!
//! Each step that ends the loop returns the exit status; `ui` then puts the terminal
//! back (`Session::leave`) before returning it.

use super::*;
use crate::platform;
use crate::term::{Decoder, Key, Screen, Session};
use crate::tree::arena::{self, Arena};
use crate::tree::sharing::Figures;
use crate::tree::sink::ArenaSink;
use std::sync::atomic::Ordering as AtomicOrdering;
use std::sync::Arc;
use std::time::Instant;

/// The browser's loop: keys, signals, resizes, frames, and the jobs keys start.
pub(super) fn ui<'s, 'a: 's>(
    s: &'s std::thread::Scope<'s, 'a>,
    ctx: &'a Ctx<'a>,
    session: Session,
    browser: Browser<'a>,
    (sink, scan_done): (Arc<ArenaSink<'a>>, Arc<Done>),
    first_line: String,
) -> i32 {
    let mut ui = Ui::new(s, ctx, session, browser, (sink, scan_done), first_line);
    let code = loop {
        if let Some(code) = ui.signals() {
            break code;
        }
        ui.follow();
        if let Some(code) = ui.draw().or_else(|| ui.wait()).or_else(|| ui.press()) {
            break code;
        }
    };
    let stopped = ui.job.as_ref().filter(|_| code == 0).and_then(|j| Some((j, j.delete.as_ref()?)));
    let stopped = stopped.map(|(j, (p, total))| (j.label.clone(), p.removed.load(AtomicOrdering::Relaxed), *total));
    ui.session.leave();
    if let Some((label, removed, total)) = stopped {
        // The user chose to quit while the deletion ran: say how far it went.
        let prog = &ctx.args.prog;
        eprintln!(
            "{prog} browse: quit while deleting {label}: {} of {} items removed, the rest left in place",
            grouped(removed),
            grouped(total)
        );
    }
    code
}

/// What one pass of the loop reads and changes.
struct Ui<'s, 'a: 's> {
    s: &'s std::thread::Scope<'s, 'a>,
    ctx: &'a Ctx<'a>,
    a: &'a Arena,
    session: Session,
    browser: Browser<'a>,
    sink: Arc<ArenaSink<'a>>,
    scan_done: Arc<Done>,
    /// When the loop started: the scan's progress line counts from here.
    start: Instant,
    /// The scan has not been seen to finish (its line not yet shown).
    scanning: bool,
    /// The full-arena notice was shown once.
    full_shown: bool,
    status: Status,
    /// The one rescan or delete running.
    job: Option<Job<'a>>,
    screen: Screen,
    decoder: Decoder,
    keys: Vec<Key>,
    need_draw: bool,
    last_tick: Instant,
    frames: u64,
    /// `DFDU_DEBUG_OOM_AFTER_FRAMES`.
    oom_at: Option<u64>,
    /// A quitting signal that came while a shell (`b`) ran: the exit status it asks for.
    quit_after: Option<i32>,
    /// The sharing figures last drawn (the background fill replaces them as it goes).
    figures: Option<Arc<Figures>>,
}

/// Whether two looks at the sharing figures saw the same ones.
fn same_figures(a: &Option<Arc<Figures>>, b: &Option<Arc<Figures>>) -> bool {
    match (a, b) {
        (Some(a), Some(b)) => Arc::ptr_eq(a, b),
        (None, None) => true,
        _ => false,
    }
}

impl<'s, 'a: 's> Ui<'s, 'a> {
    fn new(
        s: &'s std::thread::Scope<'s, 'a>,
        ctx: &'a Ctx<'a>,
        session: Session,
        browser: Browser<'a>,
        (sink, scan_done): (Arc<ArenaSink<'a>>, Arc<Done>),
        first_line: String,
    ) -> Ui<'s, 'a> {
        let a = ctx.arena;
        // A scan (no first line) that finished before the loop started still gets its
        // "Scan finished" line on the first pass; an import is done from the start.
        let scanning = scan_done.get().is_none() || first_line.is_empty();
        let mut status = Status { line: first_line, busy: false, errors: None };
        if !scanning {
            status.errors = Some(count_errors(a, browser.root));
        }
        let (w, h) = session.size();
        Ui {
            s,
            ctx,
            a,
            session,
            browser,
            sink,
            scan_done,
            start: Instant::now(),
            scanning,
            full_shown: false,
            status,
            job: None,
            screen: Screen::new(w, h),
            decoder: Decoder::default(),
            keys: Vec::new(),
            need_draw: true,
            figures: None,
            last_tick: Instant::now(),
            frames: 0,
            oom_at: oom_after_frames(),
            quit_after: None,
        }
    }

    /// Signals and the window size; `Some` with the exit status after a quit signal.
    fn signals(&mut self) -> Option<i32> {
        if let Some(code) = self.quit_after {
            return Some(code);
        }
        let (bits, signo) = platform::term_signals();
        if bits & platform::SIG_QUIT != 0 {
            return Some(128 + signo);
        }
        if bits & platform::SIG_SUSPEND != 0 {
            self.session.suspend();
            self.need_draw = true;
        }
        if bits & platform::SIG_CONTINUE != 0 {
            self.session.resume();
            self.need_draw = true;
        }
        let (w, h) = self.session.size();
        if (w, h) != (self.screen.width, self.screen.height) {
            self.screen = Screen::new(w, h);
            self.session.invalidate();
            self.need_draw = true;
        }
        None
    }

    /// Whether a scan or a job is running (frames come on a tick then).
    fn active(&self) -> bool {
        self.scanning || self.job.is_some()
    }

    /// Follows the scan and the job: their ends, a full arena, and the progress line.
    fn follow(&mut self) {
        let a = self.a;
        if let Some(took) = self.scan_done.get().filter(|_| self.scanning) {
            self.scanning = false;
            self.status.errors = Some(count_errors(a, self.browser.root));
            // Counted as the footer counts ("Items": everything below the root), so the two
            // numbers agree while the root is shown.
            let items = a.dir_totals(self.browser.root).2;
            self.status.line = format!("Scan finished: {} items in {:.2} s", grouped(items), took.as_secs_f64());
            self.browser.mark_stale();
            self.need_draw = true;
        }
        if self.job.as_ref().is_some_and(|j| j.done.get().is_some()) {
            let j = self.job.take().expect("checked above");
            finish_job(a, &mut self.browser, &mut self.status, j, self.scanning);
            self.need_draw = true;
        }
        let figures = a.shared_figures();
        if !same_figures(&figures, &self.figures) {
            // New figures from the background fill, a delete or a rescan: the exclusive
            // column and its sort follow them.
            self.figures = figures;
            self.browser.mark_stale();
            self.need_draw = true;
        }
        self.need_draw |= !self.full_shown && notice_full(a, &mut self.browser);
        self.full_shown |= a.full().is_some();
        if self.active() && self.last_tick.elapsed() >= TICK {
            self.last_tick = Instant::now();
            self.browser.mark_stale();
            let w = self.screen.width;
            self.status.line = match &self.job {
                Some(j) => job_line(a, j, w),
                None => progress_line(a, "Scanning", &self.sink, a.entry_count(), self.start, w),
            };
            self.need_draw = true;
        }
        self.status.busy = self.job.is_some();
        self.browser.set_busy(self.status.busy);
        self.browser.set_deleting(self.job.as_ref().is_some_and(|j| j.delete.is_some()));
    }

    /// Draws a frame if one is due; `Some(1)` when the terminal cannot be written.
    fn draw(&mut self) -> Option<i32> {
        if !self.need_draw {
            return None;
        }
        self.browser.render(&mut self.screen, &self.status);
        if self.session.draw(&self.screen).is_err() {
            return Some(1);
        }
        self.need_draw = false;
        // The listing is now built from the current records (`refresh`: a window too
        // small to draw skips it): what rescans replaced is unreachable and no longer
        // held here, so its runs can be reused.
        self.browser.refresh();
        self.a.reclaim();
        self.frames += 1;
        if self.oom_at == Some(self.frames) {
            // No allocator can give this much: the out-of-memory path runs for real.
            drop(std::hint::black_box(Vec::<u8>::with_capacity(isize::MAX as usize)));
        }
        None
    }

    /// Waits for keys (see the module doc for how long); `Some(1)` when the terminal
    /// cannot be read.
    fn wait(&mut self) -> Option<i32> {
        let timeout = if self.decoder.pending() {
            ESC_WAIT_MS
        } else if self.active() {
            TICK.saturating_sub(self.last_tick.elapsed()).as_millis().max(1) as u32
        } else if self.figures.as_ref().is_some_and(|f| f.pending) {
            // The background fill hands over figures a few times a second.
            TICK.as_millis() as u32
        } else {
            1000
        };
        self.keys.clear();
        self.session.read(&mut self.decoder, timeout, &mut self.keys).is_err().then_some(1)
    }

    /// Hands the keys read to the browser and starts what they ask for; `Some(0)` on quit.
    fn press(&mut self) -> Option<i32> {
        for k in std::mem::take(&mut self.keys) {
            self.need_draw = true;
            match k {
                Key::Ctrl('l') => self.session.invalidate(),
                _ => match self.browser.key(k) {
                    Action::None => {}
                    Action::Quit => return Some(0),
                    Action::Delete { dir, id } => {
                        self.job = Some(start_delete(self.s, self.a, &mut self.status, dir, id))
                    }
                    Action::DeleteMarks(targets) => {
                        self.job = Some(start_delete_marks(self.s, self.a, &mut self.status, targets))
                    }
                    Action::Trash(targets) => self.job = Some(start_trash(self.s, self.ctx, &mut self.status, targets)),
                    Action::Shell { dir } => self.shell(dir),
                    Action::Rescan { dir } => match start_rescan(self.s, self.ctx, &mut self.browser, dir) {
                        Ok(j) => self.job = Some(j),
                        Err(msg) => self.browser.message("Cannot rescan", vec![msg]),
                    },
                },
            }
            self.browser.set_busy(self.job.is_some());
            self.browser.set_deleting(self.job.as_ref().is_some_and(|j| j.delete.is_some()));
        }
        None
    }
}

impl<'s, 'a: 's> Ui<'s, 'a> {
    /// `b`: runs `$SHELL` (else `/bin/sh`) in directory `dir` with `DFDU_LEVEL` one more
    /// than dfdu was given, the terminal given back meanwhile; then rescans `dir`. A
    /// Ctrl-C typed in the shell reaches dfdu too and is not taken as a quit; another
    /// quitting signal that came meanwhile ends the browser once the shell is done.
    fn shell(&mut self, dir: u32) {
        let path = crate::tree::path::dir_path(self.a, dir);
        let shell = std::env::var_os("SHELL").filter(|s| !s.is_empty()).unwrap_or_else(|| "/bin/sh".into());
        let level = std::env::var("DFDU_LEVEL").ok().and_then(|l| l.parse::<u32>().ok()).unwrap_or(0) + 1;
        crate::term::restore();
        let status = std::process::Command::new(&shell)
            .current_dir(crate::meta::os_string(&path))
            .env("DFDU_LEVEL", level.to_string())
            .status();
        let (bits, signo) = platform::term_signals();
        if bits & platform::SIG_QUIT != 0 && signo != SIGINT {
            self.quit_after = Some(128 + signo);
        }
        self.session.resume();
        self.need_draw = true;
        if let Err(e) = status {
            let shell = crate::term::escape(&crate::meta::os_bytes(&shell));
            return self.browser.message("Cannot start a shell", vec![format!("{shell}: {e}")]);
        }
        if self.job.is_some() {
            return self.browser.say("Back from the shell; a rescan or deletion is running, so r rescans later.");
        }
        match start_rescan(self.s, self.ctx, &mut self.browser, dir) {
            Ok(j) => self.job = Some(j),
            Err(msg) => self.browser.message("Cannot rescan", vec![msg]),
        }
    }
}

/// SIGINT's number (the same on Linux, macOS and Windows' C runtime).
const SIGINT: i32 = 2;

/// Tells the user once that the arena is full (a scan or rescan stopped adding entries):
/// what is shown is incomplete. True if it said so now.
pub(super) fn notice_full(a: &Arena, browser: &mut Browser) -> bool {
    let Some(full) = a.full() else { return false };
    browser.message("The tree is too large", full_lines(full));
    true
}

pub(super) fn full_lines(full: arena::Full) -> Vec<String> {
    let what = match full {
        arena::Full::Ids => "more than 4,294,967,294 entries or directories",
        arena::Full::Names => "more than 4 GiB of names",
    };
    vec![
        format!("The scan found {what}, more than dfdu can hold."),
        "What is shown is incomplete: sizes and counts are too small.".into(),
    ]
}

/// The debugging knob `DFDU_DEBUG_OOM_AFTER_FRAMES=N` (docs/design.md, "Limits and
/// hostile trees"): after its N-th frame the browser asks for an allocation no allocator
/// can satisfy, so what running out of memory does to the terminal can be seen and tested.
fn oom_after_frames() -> Option<u64> {
    std::env::var("DFDU_DEBUG_OOM_AFTER_FRAMES").ok()?.parse().ok().filter(|&n| n > 0)
}
