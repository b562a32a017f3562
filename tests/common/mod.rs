//! Helpers shared by the integration tests, one module per concern (each test binary
//! includes this module and uses a part of it):
//!
//! * `bin.rs` — running programs: the dfdu under test, a command that must succeed, the
//!   system du's figures, `is_root`, `notice`.
//! * `scratch.rs` — `Scratch` directories and trees built at test time (`build`).
//! * `words.rs` — the one-line notation of tables and tree entries.
//! * `json.rs` — numbers out of dfdu's JSON reports.
//! * `skip.rs` — a test that cannot run here says `SKIP: ...` (or fails where all must run).
//! * `differential.rs` — the GNU du differential harness behind `tests/du_compat.rs`.
//! * `tmux.rs` — the real-terminal driver of the browser tests.
//! * `dupes.rs` — what the dupes, dedupe and hash-file tests share.

#![allow(dead_code)] // Each test binary that includes this module uses a different part of it.

pub mod bin;
pub mod differential;
pub mod dupes;
pub mod json;
mod scratch;
pub mod skip;
pub mod tmux;
mod words;

// Not every test binary uses every part.
#[allow(unused_imports)]
pub use {bin::*, json::*, scratch::*, skip::*, words::*};
