//! The terminal and signals on Unix, shared by the Linux and macOS backends: raw mode on the
//! terminal through rustix termios, reads that wait on the terminal and on a self-pipe
//! that the signal handlers write to, the window size, and stopping the process for job
//! control. The escape sequences themselves are `src/term/`'s business; this file only
//! moves bytes and modes.
//!
//! * **Which terminal.** Standard input when it is a terminal, else `/dev/tty` (so that
//!   `dfdu browse -f -` reads the export from stdin and keys from the terminal); output
//!   goes to standard output when it is a terminal, else to the same terminal. (macOS
//!   cannot `poll` `/dev/tty` itself, so stdin is preferred.) The handles live until the
//!   process exits, in a `OnceLock`, so the panic hook and the signal path can restore
//!   the terminal without taking a lock that a panicking thread might hold.
//! * **Raw mode** is `cfmakeraw` with `ISIG` kept: Ctrl-C, Ctrl-\ and Ctrl-Z still raise
//!   SIGINT, SIGQUIT and SIGTSTP, which the handlers turn into requests the browser
//!   acts on (restore and quit; restore, stop and redraw on SIGCONT).
//! * **Signal handlers** only set bits in an atomic and write one byte to a non-blocking
//!   pipe (both async-signal-safe), saving and restoring `errno` around the `write`.
//!   Whichever thread takes the signal, the browser's `poll` wakes at once. Without a
//!   terminal, `interrupt_catch` installs the same handler for SIGINT and SIGTERM only
//!   (`dedupe`'s clean stop, read with `interrupt_requested`); there the first one puts
//!   the default action back, so a second ends the process.

use crate::meta::Errno;
use rustix::event::{poll, PollFd, PollFlags, Timespec};
use rustix::fd::{AsFd, AsRawFd, OwnedFd};
use rustix::fs::{Mode, OFlags};
use rustix::process::Signal;
use rustix::termios::{self, LocalModes, OptionalActions, Termios};
use std::ffi::{c_int, c_void};
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU32, Ordering};
use std::sync::OnceLock;

/// `term_signals` bits: SIGINT, SIGTERM, SIGHUP or SIGQUIT arrived.
pub const SIG_QUIT: u32 = 1;
/// SIGTSTP arrived: restore the terminal and stop.
pub const SIG_SUSPEND: u32 = 2;
/// SIGCONT arrived: raw mode and the screen may need putting back.
pub const SIG_CONTINUE: u32 = 4;
/// SIGWINCH arrived.
pub const SIG_RESIZE: u32 = 8;

struct Tty {
    input: OwnedFd,
    output: OwnedFd,
    /// The modes found before raw mode, put back by `term_raw_leave`.
    saved: Termios,
    /// Self-pipe: the handlers write to `wake_w`, `term_wait` polls `wake_r`.
    wake_r: OwnedFd,
    _wake_w: OwnedFd,
}

static TTY: OnceLock<Tty> = OnceLock::new();
static RAW: AtomicBool = AtomicBool::new(false);
static PENDING: AtomicU32 = AtomicU32::new(0);
static QUIT_SIGNAL: AtomicI32 = AtomicI32::new(0);
static WAKE_FD: AtomicI32 = AtomicI32::new(-1);
/// Set by `interrupt_catch`: the first quitting signal puts the default action back, so
/// that a second one ends the process at once.
static ONE_SHOT: AtomicBool = AtomicBool::new(false);

extern "C" {
    fn signal(signum: c_int, handler: usize) -> usize;
    fn write(fd: c_int, buf: *const c_void, count: usize) -> isize;
    #[cfg_attr(target_os = "macos", link_name = "__error")]
    fn __errno_location() -> *mut c_int;
}

fn errno(e: rustix::io::Errno) -> Errno {
    Errno(e.raw_os_error())
}

extern "C" fn on_signal(sig: c_int) {
    // SAFETY: `__errno_location` returns the calling thread's errno slot, valid for the
    // thread's lifetime; reading it here and restoring it below keeps the interrupted
    // code's errno intact.
    let saved_errno = unsafe { *__errno_location() };
    let bit = if sig == Signal::TSTP.as_raw() {
        SIG_SUSPEND
    } else if sig == Signal::CONT.as_raw() {
        SIG_CONTINUE
    } else if sig == Signal::WINCH.as_raw() {
        SIG_RESIZE
    } else {
        QUIT_SIGNAL.store(sig, Ordering::SeqCst);
        if ONE_SHOT.load(Ordering::SeqCst) {
            // SAFETY: signal(2) is async-signal-safe; SIG_DFL installs no handler code.
            unsafe {
                signal(sig, SIG_DFL);
            }
        }
        SIG_QUIT
    };
    PENDING.fetch_or(bit, Ordering::SeqCst);
    let fd = WAKE_FD.load(Ordering::SeqCst);
    if fd >= 0 {
        let byte = 1u8;
        // SAFETY: write(2) is async-signal-safe; `fd` is the write end of the self-pipe,
        // which stays open for the life of the process, and `byte` outlives the call. A
        // full pipe (EAGAIN) is fine: a wake-up is pending anyway.
        unsafe {
            write(fd, (&byte as *const u8).cast(), 1);
        }
    }
    // SAFETY: as above; puts back the errno this handler may have changed.
    unsafe {
        *__errno_location() = saved_errno;
    }
}

/// `signal`'s default action.
const SIG_DFL: usize = 0;

/// Asks that SIGINT and SIGTERM only be noted (`interrupt_requested`) so that a long run
/// can finish what it is doing, report and exit; a second such signal ends the process
/// at once (the default action is put back by the first). `dedupe` calls this once its
/// calls start.
pub fn interrupt_catch() {
    ONE_SHOT.store(true, Ordering::SeqCst);
    let handler = on_signal as extern "C" fn(c_int) as usize;
    for sig in [Signal::INT, Signal::TERM] {
        // SAFETY: as in `install_handlers`: `on_signal` only touches atomics and calls
        // write(2) and signal(2), all async-signal-safe.
        unsafe {
            signal(sig.as_raw(), handler);
        }
    }
}

/// The number of the quitting signal that arrived since `interrupt_catch`, if one did
/// (the pending bit is left for `term_signals`).
pub fn interrupt_requested() -> Option<i32> {
    (PENDING.load(Ordering::SeqCst) & SIG_QUIT != 0).then(|| QUIT_SIGNAL.load(Ordering::SeqCst))
}

fn install_handlers() {
    let handler = on_signal as extern "C" fn(c_int) as usize;
    for sig in [Signal::INT, Signal::TERM, Signal::HUP, Signal::QUIT, Signal::TSTP, Signal::CONT, Signal::WINCH] {
        // SAFETY: `on_signal` is an `extern "C" fn(c_int)` that only touches atomics and
        // calls write(2), all async-signal-safe; signal() with a valid signal number and
        // handler address has no other preconditions.
        unsafe {
            signal(sig.as_raw(), handler);
        }
    }
}

fn open_tty() -> Result<Tty, Errno> {
    let tty_file =
        || rustix::fs::open("/dev/tty", OFlags::RDWR | OFlags::CLOEXEC | OFlags::NOCTTY, Mode::empty()).map_err(errno);
    let stdin = std::io::stdin();
    let stdout = std::io::stdout();
    let input = if termios::isatty(stdin.as_fd()) {
        rustix::io::fcntl_dupfd_cloexec(stdin.as_fd(), 3).map_err(errno)?
    } else {
        tty_file()?
    };
    let output = if termios::isatty(stdout.as_fd()) {
        rustix::io::fcntl_dupfd_cloexec(stdout.as_fd(), 3).map_err(errno)?
    } else {
        rustix::io::fcntl_dupfd_cloexec(&input, 3).map_err(errno)?
    };
    let saved = termios::tcgetattr(&input).map_err(errno)?;
    let (wake_r, wake_w) = rustix::pipe::pipe().map_err(errno)?;
    for fd in [&wake_r, &wake_w] {
        rustix::io::fcntl_setfd(fd, rustix::io::FdFlags::CLOEXEC).map_err(errno)?;
        rustix::fs::fcntl_setfl(fd, OFlags::NONBLOCK).map_err(errno)?;
    }
    WAKE_FD.store(wake_w.as_raw_fd(), Ordering::SeqCst);
    Ok(Tty { input, output, saved, wake_r, _wake_w: wake_w })
}

/// Puts the terminal into raw mode (again, after a stop), installing the signal handlers
/// the first time. Fails when there is no terminal.
pub fn term_raw_enter() -> Result<(), Errno> {
    let tty = match TTY.get() {
        Some(t) => t,
        None => {
            let t = open_tty()?;
            let t = TTY.get_or_init(|| t);
            install_handlers();
            t
        }
    };
    let mut raw = tty.saved.clone();
    raw.make_raw();
    raw.local_modes |= LocalModes::ISIG;
    termios::tcsetattr(&tty.input, OptionalActions::Flush, &raw).map_err(errno)?;
    RAW.store(true, Ordering::SeqCst);
    Ok(())
}

/// Puts back the modes found by the first `term_raw_enter`; a no-op when not raw.
pub fn term_raw_leave() {
    if let Some(tty) = TTY.get() {
        if RAW.swap(false, Ordering::SeqCst) {
            let _ = termios::tcsetattr(&tty.input, OptionalActions::Now, &tty.saved);
        }
    }
}

/// The window as (columns, rows), or `None` without a terminal.
pub fn term_size() -> Option<(u16, u16)> {
    let tty = TTY.get()?;
    let ws = termios::tcgetwinsize(&tty.output).or_else(|_| termios::tcgetwinsize(&tty.input)).ok()?;
    Some((ws.ws_col, ws.ws_row))
}

/// Writes all of `bytes` to the terminal.
pub fn term_write(mut bytes: &[u8]) -> Result<(), Errno> {
    let tty = TTY.get().ok_or(Errno::BADF)?;
    while !bytes.is_empty() {
        match rustix::io::write(&tty.output, bytes) {
            Ok(0) => return Err(Errno::IO),
            Ok(n) => bytes = &bytes[n..],
            Err(rustix::io::Errno::INTR) | Err(rustix::io::Errno::AGAIN) => {}
            Err(e) => return Err(errno(e)),
        }
    }
    Ok(())
}

/// Waits up to `timeout_ms` for input or a signal; returns the bytes read into `buf` (0
/// after a timeout or a signal: see `term_signals`). An error means the terminal is gone.
pub fn term_wait(buf: &mut [u8], timeout_ms: u32) -> Result<usize, Errno> {
    let tty = TTY.get().ok_or(Errno::BADF)?;
    let timeout = Timespec { tv_sec: (timeout_ms / 1000) as _, tv_nsec: ((timeout_ms % 1000) as i64 * 1_000_000) as _ };
    let mut fds = [PollFd::new(&tty.input, PollFlags::IN), PollFd::new(&tty.wake_r, PollFlags::IN)];
    match poll(&mut fds, Some(&timeout)) {
        Ok(_) => {}
        Err(rustix::io::Errno::INTR) => return Ok(0),
        Err(e) => return Err(errno(e)),
    }
    let (tty_ready, woken) = (fds[0].revents(), fds[1].revents());
    if woken.contains(PollFlags::IN) {
        let mut sink = [0u8; 64];
        while matches!(rustix::io::read(&tty.wake_r, &mut sink), Ok(n) if n > 0) {}
    }
    if tty_ready.intersects(PollFlags::IN | PollFlags::HUP | PollFlags::ERR) {
        return match rustix::io::read(&tty.input, buf) {
            Ok(0) => Err(Errno::IO),
            Ok(n) => Ok(n),
            Err(rustix::io::Errno::INTR) | Err(rustix::io::Errno::AGAIN) => Ok(0),
            Err(e) => Err(errno(e)),
        };
    }
    if tty_ready.contains(PollFlags::NVAL) {
        return Err(Errno::BADF);
    }
    Ok(0)
}

/// Takes the pending `SIG_*` bits, with the number of the last quitting signal.
pub fn term_signals() -> (u32, i32) {
    (PENDING.swap(0, Ordering::SeqCst), QUIT_SIGNAL.load(Ordering::SeqCst))
}

/// Stops the process (job control); returns once it is continued.
pub fn term_stop_self() {
    let _ = rustix::process::kill_process(rustix::process::getpid(), Signal::STOP);
}
