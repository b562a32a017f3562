//! What the Linux and macOS backends share, taken in by each of them (`mod unix` in
//! `linux/mod.rs` and `macos/mod.rs`): directory handles, their identity and removal, the
//! trash's move and the SIGPIPE default (`dir.rs`); the files dfdu writes, through
//! checked directory handles (`write.rs`, which `fallback/` takes in on any other Unix);
//! the browser's terminal and signals (`term.rs`, termios raw mode and signal handlers
//! through rustix). Local time is each system's own (`linux/time.rs`, `macos/time.rs`).

pub mod dir;
pub mod term;
pub mod write;
