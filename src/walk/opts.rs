//! The command line of every subcommand that walks a tree (`scan`, `browse`, `diff`,
//! `dupes`, `dedupe`), parsed in one place:
//!
//! * `Cli`: the frame around lexopt. It hands out each option owned (`Opt`), so a
//!   command can match it and still read its value from the same `Cli`, and it words
//!   every usage error the same way (`PROG CMD: MESSAGE` and a `--help` hint, exit 2).
//! * `WalkOpts`: the options that say what to walk and how (`-x`, `--exclude`, `-X`,
//!   `-L`, `-j`) and the scanner settings they describe (`WalkOpts::walk`).
//!   `tree::roots::WalkArgs` adds `-f` (read an export instead) for the commands that
//!   can import one; `dupes` uses `WalkOpts` as it is, without `-L`.
//!
//! A command's loop: `while let Some(opt) = cli.next()? { match opt.arg() { ...its own
//! options..., _ => walk.take(&opt, &mut cli)? } }`; whatever no one takes is refused
//! with lexopt's own wording ("invalid option '--foo'").

use crate::meta::{os_bytes, Errno};
use crate::platform;
use crate::text::exclude::Exclude;
use crate::text::quote::quoteaf;
use crate::walk::scan::Walk;
use std::collections::HashSet;
use std::ffi::OsString;
use std::io;

/// One command-line item, owned: an option's name or an operand.
pub enum Opt {
    Short(char),
    Long(String),
    Value(OsString),
}

impl Opt {
    /// The item as lexopt spells it, for a `match` with lexopt's patterns (borrows only
    /// this item, so the `Cli` stays free to read a value).
    pub fn arg(&self) -> lexopt::Arg<'_> {
        match self {
            Opt::Short(c) => lexopt::Arg::Short(*c),
            Opt::Long(l) => lexopt::Arg::Long(l),
            Opt::Value(v) => lexopt::Arg::Value(v.clone()),
        }
    }

    /// Whether this is `-short` or `--long`.
    pub fn is(&self, short: char, long: &str) -> bool {
        match self {
            Opt::Short(c) => *c == short,
            Opt::Long(l) => l == long,
            Opt::Value(_) => false,
        }
    }
}

/// The parser of one subcommand's arguments; see the module doc.
pub struct Cli {
    /// `PROG CMD`, the prefix of every message.
    name: String,
    p: lexopt::Parser,
}

impl Cli {
    /// `prog` as invoked, `cmd` the subcommand (`scan`, `diff`, ...).
    pub fn new(prog: &str, cmd: &str, args: Vec<OsString>) -> Cli {
        Cli { name: format!("{prog} {cmd}"), p: lexopt::Parser::from_args(args) }
    }

    /// Says `msg` as a usage error and gives the exit status for it.
    pub fn bad(&self, msg: impl std::fmt::Display) -> i32 {
        eprintln!("{}: {msg}\nTry '{} --help' for more information.", self.name, self.name);
        2
    }

    /// The next item, `None` at the end; a malformed one is a usage error.
    pub fn next(&mut self) -> Result<Option<Opt>, i32> {
        match self.p.next() {
            Ok(None) => Ok(None),
            Ok(Some(lexopt::Arg::Short(c))) => Ok(Some(Opt::Short(c))),
            Ok(Some(lexopt::Arg::Long(l))) => Ok(Some(Opt::Long(l.to_string()))),
            Ok(Some(lexopt::Arg::Value(v))) => Ok(Some(Opt::Value(v))),
            Err(e) => Err(self.bad(e)),
        }
    }

    /// The value of the option just returned by `next`.
    pub fn value(&mut self) -> Result<OsString, i32> {
        match self.p.value() {
            Ok(v) => Ok(v),
            Err(e) => Err(self.bad(e)),
        }
    }

    /// The value of `--top` (rows in a report, 0 to 100,000), for `scan` and `diff`.
    pub fn top_value(&mut self) -> Result<usize, i32> {
        let v = self.value()?;
        match v.to_str().and_then(|s| s.parse().ok()) {
            Some(n) if n <= 100_000 => Ok(n),
            _ => Err(self.bad(format!("invalid --top value {}", quoteaf(&os_bytes(&v))))),
        }
    }

    /// Refuses `opt`, which no one takes, in lexopt's words.
    pub fn unexpected(&self, opt: &Opt) -> i32 {
        self.bad(opt.arg().unexpected())
    }
}

/// What to walk and how: the options every walking command shares.
#[derive(Default)]
pub struct WalkOpts {
    pub one_fs: bool,
    pub exclude: Exclude,
    pub follow: bool,
    pub threads: Option<usize>,
}

impl WalkOpts {
    /// Takes `opt` if it is `-x`, `--exclude`, `-X`, `-L` or `-j` (reading its value from
    /// `cli`); anything else is refused as a usage error.
    pub fn take(&mut self, opt: &Opt, cli: &mut Cli) -> Result<(), i32> {
        self.take_some(opt, cli, true)
    }

    /// As `take`, for a command that never follows symbolic links: `-L` is refused too.
    pub fn take_no_follow(&mut self, opt: &Opt, cli: &mut Cli) -> Result<(), i32> {
        self.take_some(opt, cli, false)
    }

    fn take_some(&mut self, opt: &Opt, cli: &mut Cli, follow_ok: bool) -> Result<(), i32> {
        use lexopt::Arg::*;
        match opt.arg() {
            Short('x') | Long("one-file-system") => self.one_fs = true,
            Long("exclude") => self.exclude.add(&os_bytes(&cli.value()?)),
            Short('X') | Long("exclude-from") => {
                let f = cli.value()?;
                match std::fs::read(&f) {
                    Ok(text) => self.exclude.add_lines(&text),
                    Err(e) => return Err(cli.bad(format!("{}: {}", quoteaf(&os_bytes(&f)), io_text(&e)))),
                }
            }
            Short('L') | Long("dereference") if follow_ok => self.follow = true,
            Short('j') | Long("threads") => {
                let v = cli.value()?;
                match v.to_str().and_then(|s| s.parse().ok()) {
                    Some(n) if (1..=1024).contains(&n) => self.threads = Some(n),
                    _ => return Err(cli.bad(format!("invalid number of threads {}", quoteaf(&os_bytes(&v))))),
                }
            }
            _ => return Err(cli.unexpected(opt)),
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

/// The text of an I/O error without Rust's "(os error N)" suffix.
pub fn io_text(e: &io::Error) -> String {
    match e.raw_os_error() {
        Some(n) => platform::errno_text(Errno(n)),
        None => e.to_string(),
    }
}
