//! The Windows console for the browser, behind the same names as `unix/term.rs`.

use super::dir::{push_utf16, push_wtf8};
use super::ffi::*;
use crate::meta::Errno;
use std::ptr::null;
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU32, Ordering};
use std::sync::OnceLock;

// ---------------------------------------------------------------------------------------
// The console, for the browser: the same contract as `unix/term.rs`. Raw input with
// virtual-terminal sequences in both directions on the console itself (`CONIN$`,
// `CONOUT$`, whatever stdin and stdout are redirected to), restored by `term_raw_leave`.
// Windows has no signals to turn into requests: Ctrl-C and Ctrl-\ arrive as keys and
// are reported as `SIG_QUIT` (with SIGINT's and SIGQUIT's numbers), a console resize as
// `SIG_RESIZE`; there is no job control, so `SIG_SUSPEND` never comes.

/// `term_signals` bits: the user asked to quit (Ctrl-C, Ctrl-\).
pub const SIG_QUIT: u32 = 1;
/// Never raised on Windows (no job control).
pub const SIG_SUSPEND: u32 = 2;
/// Never raised on Windows (no job control).
pub const SIG_CONTINUE: u32 = 4;
/// The console window changed size.
pub const SIG_RESIZE: u32 = 8;

pub(super) const GENERIC_READ: u32 = 0x8000_0000;
pub(super) const GENERIC_WRITE: u32 = 0x4000_0000;
pub(super) const OPEN_EXISTING: u32 = 3;
pub(super) const INVALID_HANDLE_VALUE: Handle = -1;
pub(super) const WAIT_OBJECT_0: u32 = 0;
pub(super) const KEY_EVENT: u16 = 1;
pub(super) const WINDOW_BUFFER_SIZE_EVENT: u16 = 4;
pub(super) const ENABLE_PROCESSED_INPUT: u32 = 0x1;
pub(super) const ENABLE_LINE_INPUT: u32 = 0x2;
pub(super) const ENABLE_ECHO_INPUT: u32 = 0x4;
pub(super) const ENABLE_WINDOW_INPUT: u32 = 0x8;
pub(super) const ENABLE_VIRTUAL_TERMINAL_INPUT: u32 = 0x200;
pub(super) const ENABLE_PROCESSED_OUTPUT: u32 = 0x1;
pub(super) const ENABLE_VIRTUAL_TERMINAL_PROCESSING: u32 = 0x4;

pub(super) struct Console {
    pub(super) input: Handle,
    pub(super) output: Handle,
    /// Modes found by the first `term_raw_enter`, put back by `term_raw_leave`.
    pub(super) saved_input_mode: u32,
    pub(super) saved_output_mode: u32,
}

/// Opened once and kept until exit, so the panic hook can restore without a lock.
pub(super) static CONSOLE: OnceLock<Console> = OnceLock::new();
pub(super) static RAW: AtomicBool = AtomicBool::new(false);
pub(super) static PENDING: AtomicU32 = AtomicU32::new(0);
pub(super) static QUIT_SIGNAL: AtomicI32 = AtomicI32::new(0);
/// A high surrogate whose low half is still to come in the next key record.
pub(super) static HIGH_SURROGATE: AtomicU32 = AtomicU32::new(0);

pub(super) fn console_mode(console: Handle) -> Result<u32, Errno> {
    let mut mode = 0u32;
    // SAFETY: GetConsoleMode writes one u32 into `mode`; an invalid or non-console
    // handle makes it fail, which we report.
    if unsafe { GetConsoleMode(console, &mut mode) } == 0 {
        return Err(last_error());
    }
    Ok(mode)
}

pub(super) fn set_console_mode(console: Handle, mode: u32) -> Result<(), Errno> {
    // SAFETY: SetConsoleMode takes plain values; failure is reported, not undefined.
    if unsafe { SetConsoleMode(console, mode) } == 0 {
        return Err(last_error());
    }
    Ok(())
}

pub(super) fn last_error() -> Errno {
    Errno(std::io::Error::last_os_error().raw_os_error().unwrap_or(ERROR_INVALID_DATA))
}

pub(super) fn open_console_handle(name: &str) -> Result<Handle, Errno> {
    let wide: Vec<u16> = name.encode_utf16().chain([0]).collect();
    // SAFETY: `wide` is NUL-terminated and outlives the call; the other arguments are
    // plain values or null (no security attributes, no template).
    let h = unsafe { CreateFileW(wide.as_ptr(), GENERIC_READ | GENERIC_WRITE, 0x1 | 0x2, null(), OPEN_EXISTING, 0, 0) };
    if h == INVALID_HANDLE_VALUE {
        return Err(last_error());
    }
    Ok(h)
}

pub(super) fn open_console() -> Result<Console, Errno> {
    let input = open_console_handle("CONIN$")?;
    let output = open_console_handle("CONOUT$")?;
    Ok(Console { input, output, saved_input_mode: console_mode(input)?, saved_output_mode: console_mode(output)? })
}

/// Puts the console into raw mode: keys arrive unprocessed, unechoed and as VT
/// sequences, resizes are reported; output interprets VT sequences. Fails without a
/// console.
pub fn term_raw_enter() -> Result<(), Errno> {
    let console = match CONSOLE.get() {
        Some(c) => c,
        None => {
            let c = open_console()?;
            CONSOLE.get_or_init(|| c)
        }
    };
    let raw_in = (console.saved_input_mode & !(ENABLE_PROCESSED_INPUT | ENABLE_LINE_INPUT | ENABLE_ECHO_INPUT))
        | ENABLE_VIRTUAL_TERMINAL_INPUT
        | ENABLE_WINDOW_INPUT;
    let raw_out = console.saved_output_mode | ENABLE_PROCESSED_OUTPUT | ENABLE_VIRTUAL_TERMINAL_PROCESSING;
    set_console_mode(console.output, raw_out)?;
    if let Err(e) = set_console_mode(console.input, raw_in) {
        let _ = set_console_mode(console.output, console.saved_output_mode);
        return Err(e);
    }
    RAW.store(true, Ordering::SeqCst);
    Ok(())
}

/// Puts back the modes found by the first `term_raw_enter`; a no-op when not raw.
pub fn term_raw_leave() {
    if let Some(console) = CONSOLE.get() {
        if RAW.swap(false, Ordering::SeqCst) {
            let _ = set_console_mode(console.input, console.saved_input_mode);
            let _ = set_console_mode(console.output, console.saved_output_mode);
        }
    }
}

/// The visible console window as (columns, rows), or `None` without a console.
pub fn term_size() -> Option<(u16, u16)> {
    let console = CONSOLE.get()?;
    let mut info = ConsoleScreenBufferInfo::default();
    // SAFETY: writes one CONSOLE_SCREEN_BUFFER_INFO into `info`, declared to match.
    if unsafe { GetConsoleScreenBufferInfo(console.output, &mut info) } == 0 {
        return None;
    }
    let [left, top, right, bottom] = info.window;
    let cols = u16::try_from(i32::from(right) - i32::from(left) + 1).ok()?;
    let rows = u16::try_from(i32::from(bottom) - i32::from(top) + 1).ok()?;
    Some((cols, rows))
}

/// Writes all of `bytes` (UTF-8 text and VT sequences) to the console.
pub fn term_write(bytes: &[u8]) -> Result<(), Errno> {
    let console = CONSOLE.get().ok_or(Errno(ERROR_INVALID_HANDLE))?;
    let mut wide = Vec::with_capacity(bytes.len());
    push_utf16(&mut wide, bytes);
    let mut rest = wide.as_slice();
    while !rest.is_empty() {
        let chunk = rest.len().min(16 * 1024) as u32;
        let mut written = 0u32;
        // SAFETY: `rest` holds at least `chunk` UTF-16 units and outlives the call;
        // WriteConsoleW writes only `written`.
        let ok = unsafe { WriteConsoleW(console.output, rest.as_ptr(), chunk, &mut written, null()) };
        if ok == 0 {
            return Err(last_error());
        }
        if written == 0 {
            return Err(Errno(ERROR_WRITE_FAULT));
        }
        rest = &rest[(written as usize).min(rest.len())..];
    }
    Ok(())
}

/// Waits up to `timeout_ms` for keys; returns the bytes (UTF-8, VT sequences for special
/// keys) put into `buf`, 0 after a timeout or when only a request arrived (see
/// `term_signals`). An error means the console is gone.
pub fn term_wait(buf: &mut [u8], timeout_ms: u32) -> Result<usize, Errno> {
    let console = CONSOLE.get().ok_or(Errno(ERROR_INVALID_HANDLE))?;
    // SAFETY: waits on a console input handle we own; no memory is passed.
    let woken = unsafe { WaitForSingleObject(console.input, timeout_ms) };
    if woken != WAIT_OBJECT_0 {
        return Ok(0);
    }
    let mut available = 0u32;
    // SAFETY: writes one u32.
    if unsafe { GetNumberOfConsoleInputEvents(console.input, &mut available) } == 0 {
        return Err(last_error());
    }
    // Each record yields at most 4 bytes; read no more than `buf` can take.
    let mut records = [InputRecord::default(); 64];
    let want = (available as usize).min(records.len()).min(buf.len() / 4).max(1) as u32;
    let mut read = 0u32;
    // SAFETY: `records` has room for `want` INPUT_RECORDs, declared to match; the call
    // writes at most that many and their count into `read`.
    if unsafe { ReadConsoleInputW(console.input, records.as_mut_ptr(), want, &mut read) } == 0 {
        return Err(last_error());
    }
    let mut n = 0;
    for r in &records[..read as usize] {
        match r.event_type {
            KEY_EVENT if r.event[0] != 0 || r.event[1] != 0 => {
                let (repeat, unit) = (r.event[2].max(1), r.event[5]);
                for _ in 0..repeat {
                    if n + 4 > buf.len() {
                        break;
                    }
                    n += key_unit(unit, &mut buf[n..]);
                }
            }
            WINDOW_BUFFER_SIZE_EVENT => {
                PENDING.fetch_or(SIG_RESIZE, Ordering::SeqCst);
            }
            _ => {}
        }
    }
    Ok(n)
}

/// Turns one UTF-16 unit of a key press into bytes in `out` (which has room for 4);
/// Ctrl-C and Ctrl-\ become quit requests instead.
pub(super) fn key_unit(unit: u16, out: &mut [u8]) -> usize {
    pub(super) const CTRL_C: u16 = 0x03;
    pub(super) const CTRL_BACKSLASH: u16 = 0x1C;
    match unit {
        0 => 0,
        CTRL_C | CTRL_BACKSLASH => {
            QUIT_SIGNAL.store(if unit == CTRL_C { 2 } else { 3 }, Ordering::SeqCst);
            PENDING.fetch_or(SIG_QUIT, Ordering::SeqCst);
            0
        }
        0xD800..=0xDBFF => {
            HIGH_SURROGATE.store(u32::from(unit), Ordering::SeqCst);
            0
        }
        _ => {
            let high = HIGH_SURROGATE.swap(0, Ordering::SeqCst) as u16;
            let mut bytes = Vec::with_capacity(4);
            if high != 0 && (0xDC00..=0xDFFF).contains(&unit) {
                push_wtf8(&mut bytes, [high, unit]);
            } else {
                push_wtf8(&mut bytes, [unit]);
            }
            out[..bytes.len()].copy_from_slice(&bytes);
            bytes.len()
        }
    }
}

/// Takes the pending `SIG_*` bits, with the number of the last quitting "signal".
pub fn term_signals() -> (u32, i32) {
    (PENDING.swap(0, Ordering::SeqCst), QUIT_SIGNAL.load(Ordering::SeqCst))
}

/// Windows has no job control: nothing to stop.
pub fn term_stop_self() {}

/// No console control handler is installed (nothing that uses it runs on Windows:
/// `dedupe` is unsupported there), so Ctrl-C keeps ending the process at once.
pub fn interrupt_catch() {}

/// Never: see `interrupt_catch`.
pub fn interrupt_requested() -> Option<i32> {
    None
}
