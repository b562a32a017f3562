//! Where a tree comes from, for `dfdu scan` and `dfdu browse` alike: the options both
//! take (`WalkArgs`, parsed one `OptName` at a time), the scanner settings they describe
//! (`WalkArgs::walk`), an ncdu export imported into the arena (`import_file`), and a
//! directory checked before it becomes a root (`stat_root`). Errors come back as the
//! text after the command's prefix; the caller prints them and picks the exit status.

use crate::meta::{os_bytes, Errno, Kind, Meta};
use crate::platform;
use crate::text::exclude::Exclude;
use crate::text::quote::quoteaf;
use crate::tree::arena::Arena;
use crate::tree::ncdu::{self, Imported};
use crate::walk::scan::Walk;
use std::collections::HashSet;
use std::ffi::{CStr, OsStr, OsString};
use std::io;

/// An option as lexopt returned it, owned, so the parser is free to read its value.
pub struct OptName {
    short: Option<char>,
    long: String,
    unexpected: String,
}

impl OptName {
    pub fn of(arg: &lexopt::Arg) -> OptName {
        let (short, long) = match arg {
            lexopt::Arg::Short(c) => (Some(*c), String::new()),
            lexopt::Arg::Long(l) => (None, l.to_string()),
            lexopt::Arg::Value(_) => (None, String::new()),
        };
        OptName { short, long, unexpected: arg.clone().unexpected().to_string() }
    }
}

/// The options `dfdu scan` and `dfdu browse` share: what to walk and how.
#[derive(Default)]
pub struct WalkArgs {
    pub one_fs: bool,
    pub exclude: Exclude,
    pub follow: bool,
    pub threads: Option<usize>,
    /// An export to read instead of scanning (`-f`).
    pub input: Option<OsString>,
}

impl WalkArgs {
    /// Takes `arg`, one of the shared options (reading its value from `p`); anything else
    /// is a usage error. `bad` reports a usage error and gives the exit status.
    pub fn take(&mut self, arg: OptName, p: &mut lexopt::Parser, bad: &dyn Fn(String) -> i32) -> Result<(), i32> {
        let OptName { short, long, unexpected } = arg;
        let mut value = || p.value().map_err(|e| bad(e.to_string()));
        match (short, long.as_str()) {
            (Some('x'), _) | (_, "one-file-system") => self.one_fs = true,
            (_, "exclude") => self.exclude.add(&os_bytes(&value()?)),
            (Some('X'), _) | (_, "exclude-from") => {
                let f = value()?;
                match std::fs::read(&f) {
                    Ok(text) => self.exclude.add_lines(&text),
                    Err(e) => return Err(bad(format!("{}: {}", quoteaf(&os_bytes(&f)), io_text(&e)))),
                }
            }
            (Some('L'), _) | (_, "dereference") => self.follow = true,
            (Some('j'), _) | (_, "threads") => {
                let v = value()?;
                match v.to_str().and_then(|s| s.parse().ok()) {
                    Some(n) if (1..=1024).contains(&n) => self.threads = Some(n),
                    _ => return Err(bad(format!("invalid number of threads {}", quoteaf(&os_bytes(&v))))),
                }
            }
            (Some('f'), _) | (_, "file") => self.input = Some(value()?),
            _ => return Err(bad(unexpected)),
        }
        Ok(())
    }

    /// The scanner's settings for one root: `one_fs_dev` is the root's device when `-x`
    /// applies, `seen_before` the hard links already counted elsewhere.
    pub fn walk<'a>(
        &'a self,
        threads: usize,
        fd_budget: usize,
        one_fs_dev: Option<u64>,
        seen_before: &'a HashSet<(u64, u64)>,
    ) -> Walk<'a> {
        Walk {
            threads,
            follow_all: self.follow,
            follow_root: true,
            one_fs_dev,
            exclude: (!self.exclude.is_empty()).then_some(&self.exclude),
            seen_before,
            claim_dirs: true,
            fd_budget,
            check_moved: false,
            shared: false,
        }
    }
}

/// Imports the export `f` (`-` for standard input) into `arena`.
pub fn import_file(f: &OsStr, arena: &Arena) -> Result<Imported, String> {
    let result = if f == "-" {
        ncdu::import(io::stdin().lock(), arena)
    } else {
        match std::fs::File::open(f) {
            Ok(file) => ncdu::import(io::BufReader::with_capacity(256 * 1024, file), arena),
            Err(e) => return Err(format!("cannot open {}: {}", quoteaf(&os_bytes(f)), io_text(&e))),
        }
    };
    result.map_err(|e| format!("{}: {e}", quoteaf(&os_bytes(f))))
}

/// Stats `path` (following a symlink, as a root is followed) with `stat` and checks that
/// it is a directory.
pub fn stat_root(path: &CStr, stat: impl Fn(&CStr, bool) -> Result<Meta, Errno>) -> Result<Meta, String> {
    match stat(path, true) {
        Ok(m) if m.kind == Kind::Dir => Ok(m),
        Ok(_) => Err(format!("{} is not a directory", quoteaf(path.to_bytes()))),
        Err(e) => Err(format!("cannot access {}: {}", quoteaf(path.to_bytes()), platform::errno_text(e))),
    }
}

/// The text of an I/O error without Rust's "(os error N)" suffix.
pub fn io_text(e: &io::Error) -> String {
    match e.raw_os_error() {
        Some(n) => platform::errno_text(Errno(n)),
        None => e.to_string(),
    }
}
