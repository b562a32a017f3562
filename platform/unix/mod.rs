//! What Linux and macOS share: the browser's terminal and signals (`term`, termios raw
//! mode and signal handlers through rustix) and local time (`time`, libc's
//! `localtime_r`).

pub mod term;
pub mod time;
