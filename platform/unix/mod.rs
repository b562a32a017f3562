//! What Linux and macOS share: directory handles, their identity and removal, and the
//! SIGPIPE default (`dir`); the browser's terminal and signals (`term`, termios raw mode
//! and signal handlers through rustix); local time (on macOS `time`, libc's `localtime_r`;
//! on Linux `zone`, glibc's rules in `text::tz`, the same for glibc and musl builds).

pub mod dir;
pub mod term;
#[cfg(target_os = "macos")]
pub mod time;
#[cfg(target_os = "linux")]
pub mod zone;
