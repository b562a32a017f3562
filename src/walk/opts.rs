//! The command line of every subcommand that walks a tree (`scan`, `browse`, `diff`,
//! `dupes`, `dedupe`), parsed in one place:
//!
//! * `Cli`: the frame around lexopt. It hands out each option owned (`Opt`), so a
//!   command can match it and still read its value from the same `Cli`, and it words
//!   every usage error the same way (`PROG CMD: MESSAGE` and a `--help` hint, exit 2).
//!   It answers `--help` (the command's text, given to `Cli::new`) and `--version`
//!   itself, through `out::print_stdout`, so every command answers them alike.
//! * `WalkOpts`: the options that say what to walk and how (`-x`, `--exclude`, `-X`,
//!   `--exclude-caches`, `--exclude-kernfs`, `-L`, `-j`) and the scanner settings they describe (`WalkOpts::walk`).
//!   `tree::roots::WalkArgs` adds `-f` (read an export instead) for the commands that
//!   can import one; `dupes` uses `WalkOpts` as it is, without `-L`.
//! * `SizeOpts`: how sizes are shown and what a report holds (`-b`, `-h`, `--si`, `-k`,
//!   `-m`, `-B`, `--apparent-size`, `--json`, `--top`), for `scan` and `diff`; `browse`
//!   takes its `--apparent-size` and `--si`.
//! * `thread_count`: the one reading of a thread count (`-j` everywhere, du's `-j` and
//!   `DFDU_THREADS` too), 1 to `MAX_THREADS`.
//!
//! A command's loop: `while let Some(opt) = cli.next()? { match opt.arg() { ...its own
//! options..., _ => walk.take(&opt, &mut cli)? } }`; whatever no one takes is refused
//! with lexopt's own wording ("invalid option '--foo'").

use crate::meta::os_bytes;
use crate::out::{self, io_text};
use crate::text::exclude::Exclude;
use crate::text::quote::quoteaf;
use crate::text::units::{self, Scale};
use crate::walk::scan::Walk;
use std::collections::HashSet;
use std::ffi::OsString;

/// The most threads `-j` (and `DFDU_THREADS`) may ask for.
pub const MAX_THREADS: usize = 1024;

/// A thread count as typed: a whole number from 1 to `MAX_THREADS`.
pub fn thread_count(typed: &str) -> Option<usize> {
    typed.parse().ok().filter(|n| (1..=MAX_THREADS).contains(n))
}

/// One command-line item, owned: an option's name or an operand.
pub enum Opt {
    Short(char),
    Long(String),
    Value(OsString),
}

impl Opt {
    /// lexopt's item, owned (so that the parser is free again).
    pub fn owned(arg: lexopt::Arg) -> Opt {
        match arg {
            lexopt::Arg::Short(c) => Opt::Short(c),
            lexopt::Arg::Long(l) => Opt::Long(l.to_string()),
            lexopt::Arg::Value(v) => Opt::Value(v),
        }
    }

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
    /// What `--help` prints.
    help: &'static str,
    p: lexopt::Parser,
    /// Where the first words come from, when a config file gave them (`config.rs`).
    origins: Vec<String>,
    /// How many words there are, and how many the parser had wholly taken when last
    /// asked; `mid`: it has taken one more, and is inside it (`-abc`, `--opt=value`).
    total: usize,
    taken: usize,
    mid: bool,
}

impl Cli {
    /// `prog` as invoked, `cmd` the subcommand (`scan`, `diff`, ...), `help` its text.
    pub fn new(prog: &str, cmd: &str, help: &'static str, args: Vec<OsString>) -> Cli {
        Cli::configured(prog, cmd, help, super::config::Configured { args, origins: Vec::new() })
    }

    /// As `new`, for arguments that start with a config file's words: a usage error in
    /// one of those says which file and line it is on.
    pub fn configured(prog: &str, cmd: &str, help: &'static str, words: super::config::Configured) -> Cli {
        let total = words.args.len();
        let p = lexopt::Parser::from_args(words.args);
        Cli { name: format!("{prog} {cmd}"), help, p, origins: words.origins, total, taken: 0, mid: false }
    }

    /// Notes how far the parser is, after each step, for `bad`.
    fn note_place(&mut self) {
        match self.p.try_raw_args() {
            Some(rest) => (self.taken, self.mid) = (self.total - rest.as_slice().len(), false),
            None => self.mid = true,
        }
    }

    /// Says `msg` as a usage error and gives the exit status for it; when the word last
    /// read came from a config file, the message names the file and the line.
    pub fn bad(&self, msg: impl std::fmt::Display) -> i32 {
        let word = if self.mid { Some(self.taken) } else { self.taken.checked_sub(1) };
        let from = word.and_then(|w| self.origins.get(w)).map_or(String::new(), |o| format!(" (in {o})"));
        eprintln!("{}: {msg}{from}\nTry '{} --help' for more information.", self.name, self.name);
        2
    }

    /// The next item, `None` at the end; a malformed one is a usage error. `--help` and
    /// `--version` are answered here: `Err` holds the exit status once they are printed.
    pub fn next(&mut self) -> Result<Option<Opt>, i32> {
        let next = self.p.next().map(|arg| arg.map(Opt::owned));
        self.note_place();
        match next {
            Ok(None) => Ok(None),
            Ok(Some(opt)) => match opt.arg() {
                lexopt::Arg::Long("help") => Err(out::print_stdout(&self.name, self.help)),
                lexopt::Arg::Long("version") => Err(out::print_stdout(&self.name, &out::version_line())),
                _ => Ok(Some(opt)),
            },
            Err(e) => Err(self.bad(e)),
        }
    }

    /// The value of the option just returned by `next`.
    pub fn value(&mut self) -> Result<OsString, i32> {
        let value = self.p.value();
        self.note_place();
        match value {
            Ok(v) => Ok(v),
            Err(e) => Err(self.bad(e)),
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
    /// `--exclude-caches`, `--exclude-kernfs` (see `Walk`).
    pub exclude_caches: bool,
    pub exclude_kernfs: bool,
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
            Long("exclude-caches") => self.exclude_caches = true,
            Long("exclude-kernfs") => self.exclude_kernfs = true,
            Short('j') | Long("threads") => {
                let v = cli.value()?;
                match v.to_str().and_then(thread_count) {
                    Some(n) => self.threads = Some(n),
                    None => return Err(cli.bad(format!("invalid number of threads {}", quoteaf(&os_bytes(&v))))),
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
            exclude_caches: self.exclude_caches,
            exclude_kernfs: self.exclude_kernfs,
        }
    }
}

/// Which of the size options a command takes.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum SizeSet {
    /// `scan` and `diff`: every one.
    Report,
    /// `browse`: `--apparent-size` and `--si` (it picks its units per row).
    Browse,
}

/// How sizes are shown and what a report holds; see the module doc.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SizeOpts {
    /// How a size is printed: exact bytes (`-b`), units of 1024 (`-h`, the default) or
    /// 1000 (`--si`) picked per number, or fixed units (`-k`, `-m`, `-B SIZE`, as du).
    pub scale: Scale,
    /// Totals and ranks by apparent size instead of disk usage.
    pub apparent: bool,
    pub json: bool,
    /// Rows per list of a report (0 to `MAX_TOP`).
    pub top: usize,
}

/// The most rows `--top` may ask for.
pub const MAX_TOP: usize = 100_000;

impl Default for SizeOpts {
    fn default() -> SizeOpts {
        SizeOpts { scale: Scale::human(true), apparent: false, json: false, top: 10 }
    }
}

impl SizeOpts {
    /// Takes `opt` if it is a size option of `set` (reading its value from `cli`):
    /// `Ok(false)` leaves it to the caller.
    pub fn take(&mut self, opt: &Opt, cli: &mut Cli, set: SizeSet) -> Result<bool, i32> {
        use lexopt::Arg::*;
        match (opt.arg(), set) {
            (Long("apparent-size"), _) => self.apparent = true,
            (Long("si"), _) => self.scale = Scale::human(false),
            (Short('h') | Long("human-readable"), SizeSet::Report) => self.scale = Scale::human(true),
            (Short('b') | Long("bytes"), SizeSet::Report) => self.scale = Scale::plain(1),
            (Short('k'), SizeSet::Report) => self.scale = Scale::plain(1024),
            (Short('m'), SizeSet::Report) => self.scale = Scale::plain(1024 * 1024),
            (Short('B') | Long("block-size"), SizeSet::Report) => {
                let v = cli.value()?;
                // Only the spec typed counts: du's BLOCK_SIZE variables are du's.
                match units::parse_block_spec(Some(&os_bytes(&v)), &|_| None) {
                    Ok(scale) => self.scale = scale,
                    Err(_) => return Err(cli.bad(format!("invalid --block-size value {}", quoteaf(&os_bytes(&v))))),
                }
            }
            (Long("json"), SizeSet::Report) => self.json = true,
            (Long("top"), SizeSet::Report) => {
                let v = cli.value()?;
                match v.to_str().and_then(|s| s.parse().ok()) {
                    Some(n) if n <= MAX_TOP => self.top = n,
                    _ => return Err(cli.bad(format!("invalid --top value {}", quoteaf(&os_bytes(&v))))),
                }
            }
            _ => return Ok(false),
        }
        Ok(true)
    }

    /// Whether sizes are in units of 1000 picked per number (`--si`).
    pub fn si(&self) -> bool {
        self.scale.style.autoscale && !self.scale.style.base_1024
    }

    /// `n` bytes as these options show it.
    pub fn size_text(&self, n: u64) -> String {
        units::format_size(n, self.scale)
    }
}
