//! What Linux and macOS share: directory handles, their identity and removal, and the
//! SIGPIPE default (`dir`); the browser's terminal and signals (`term`, termios raw mode
//! and signal handlers through rustix); local time (`time`, libc's `localtime_r`).

pub mod dir;
pub mod term;
pub mod time;
