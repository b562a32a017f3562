//! Standard output as every command ends it: one path for help and version texts
//! (`print_stdout`, `version_line`), one answer to a failed write (`finish`), and the
//! text of an I/O error as the system words it (`io_text`). It sits just above
//! `platform` (whose `errno_text` it uses) so that every command's layer can use it.
//!
//! The rule, GNU's `close_stdout`: a command whose standard output could not be written
//! says "PROG CMD: write error: REASON" on standard error and exits with status 1. A
//! broken pipe is not an error to report: on Unix `SIGPIPE` (set back to its default
//! in `main`) ends the process first, as it ends GNU's tools; where there is no such
//! signal (Windows) the reader has gone and nothing is said.

use crate::meta::Errno;
use crate::platform;
use std::io::{self, Write};

/// The text of an I/O error without Rust's "(os error N)" suffix.
pub fn io_text(e: &io::Error) -> String {
    match e.raw_os_error() {
        Some(n) => platform::errno_text(Errno(n)),
        None => e.to_string(),
    }
}

/// What `--version` prints for every subcommand (du mode adds a word about itself).
pub fn version_line() -> String {
    format!("dfdu {}\n", env!("DFDU_VERSION"))
}

/// The outcome of writing (and flushing) standard output for `cmd` ("PROG CMD", the
/// prefix of the message): `Err(1)` once a failure was reported; a broken pipe is `Ok`
/// (see the module doc), so the run's own status stands.
pub fn finish(cmd: &str, written: io::Result<()>) -> Result<(), i32> {
    match written {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == io::ErrorKind::BrokenPipe => Ok(()),
        Err(e) => {
            eprintln!("{cmd}: write error: {}", io_text(&e));
            Err(1)
        }
    }
}

/// Writes `text` (a help or version text) to standard output and gives the exit status:
/// 0, or 1 after `finish` reported the failure.
pub fn print_stdout(cmd: &str, text: &str) -> i32 {
    let mut out = io::stdout().lock();
    let written = out.write_all(text.as_bytes()).and_then(|()| out.flush());
    finish(cmd, written).err().unwrap_or(0)
}
