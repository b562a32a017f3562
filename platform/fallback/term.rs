//! No terminal in the std::fs backend: `dfdu browse` says so and exits, and signals keep
//! their default actions.

use crate::meta::Errno;

/// "Function not implemented": what the terminal functions answer here.
const NOT_SUPPORTED: Errno = Errno::NOSYS;

// No terminal support in the portable build: `dfdu browse` says so and exits.
pub const SIG_QUIT: u32 = 1;
pub const SIG_SUSPEND: u32 = 2;
pub const SIG_CONTINUE: u32 = 4;
pub const SIG_RESIZE: u32 = 8;

pub fn term_raw_enter() -> Result<(), Errno> {
    Err(NOT_SUPPORTED)
}

pub fn term_raw_leave() {}

pub fn term_size() -> Option<(u16, u16)> {
    None
}

pub fn term_write(_bytes: &[u8]) -> Result<(), Errno> {
    Err(NOT_SUPPORTED)
}

pub fn term_wait(_buf: &mut [u8], _timeout_ms: u32) -> Result<usize, Errno> {
    Err(NOT_SUPPORTED)
}

pub fn term_signals() -> (u32, i32) {
    (0, 0)
}

pub fn term_stop_self() {}

/// No signal handling here: a signal keeps its default action.
pub fn interrupt_catch() {}

pub fn interrupt_requested() -> Option<i32> {
    None
}
