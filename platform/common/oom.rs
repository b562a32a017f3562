//! The global allocator, wrapped so that running out of memory puts the terminal back
//! before the process ends: when the allocator underneath returns null, the hook set by
//! `set_hook` runs (the browser sets `term::restore`, which allocates nothing), and then
//! the null goes back to the caller as usual — std's handler prints "memory allocation
//! of N bytes failed" on the restored screen and aborts. Underneath is mimalloc in the
//! musl builds that enable it and the system allocator everywhere else.
//!
//! dfdu makes no fallible allocations (`try_reserve`), so a null here always ends the
//! process; the hook cannot leave a running browser on a restored terminal.

use std::alloc::{GlobalAlloc, Layout};
use std::sync::OnceLock;

#[cfg(all(feature = "mimalloc", target_os = "linux", target_env = "musl"))]
type Inner = mimalloc::MiMalloc;
#[cfg(all(feature = "mimalloc", target_os = "linux", target_env = "musl"))]
const INNER: Inner = mimalloc::MiMalloc;
#[cfg(not(all(feature = "mimalloc", target_os = "linux", target_env = "musl")))]
type Inner = std::alloc::System;
#[cfg(not(all(feature = "mimalloc", target_os = "linux", target_env = "musl")))]
const INNER: Inner = std::alloc::System;

/// The allocator dfdu runs on.
pub struct Guarded(Inner);

#[global_allocator]
static GLOBAL: Guarded = Guarded(INNER);

/// The function to run when an allocation fails.
static HOOK: OnceLock<fn()> = OnceLock::new();

/// Runs `f` when an allocation fails, before the process aborts (the first `f` set
/// stays). `f` must not allocate.
pub fn set_hook(f: fn()) {
    let _ = HOOK.set(f);
}

#[cold]
fn failed() {
    if let Some(f) = HOOK.get() {
        f();
    }
}

fn checked(p: *mut u8) -> *mut u8 {
    if p.is_null() {
        failed();
    }
    p
}

// SAFETY: every method forwards to the inner allocator with the caller's arguments
// unchanged, so the inner allocator's guarantees are the wrapper's; the failure path
// only runs a hook and returns the inner null.
unsafe impl GlobalAlloc for Guarded {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: forwarded as received (see the impl).
        checked(unsafe { self.0.alloc(layout) })
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: forwarded as received (see the impl).
        checked(unsafe { self.0.alloc_zeroed(layout) })
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: forwarded as received (see the impl).
        unsafe { self.0.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: forwarded as received (see the impl).
        checked(unsafe { self.0.realloc(ptr, layout, new_size) })
    }
}
