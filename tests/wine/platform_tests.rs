//! The Windows platform layer's own tests (`platform/windows/tests.rs`) as a
//! crate of their own: `tests/wine/run` compiles this file with plain `rustc --test` for
//! `x86_64-pc-windows-gnu` and runs it under Wine. Built apart from cargo's targets so
//! that it needs neither the rest of dfdu's unit tests nor the other binaries, several
//! of which are Unix-only.

// The platform is compiled for its tests only: most of what it exports goes unused here.
#![allow(dead_code, unused_imports)]

#[path = "../../src/meta.rs"]
mod meta;

#[path = "../../platform/mod.rs"]
mod platform;
