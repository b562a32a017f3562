//! Where a tree comes from, for `dfdu scan`, `dfdu browse` and `dfdu diff` alike: the
//! options they take (`WalkArgs`: `walk::opts::WalkOpts` and `-f`), an ncdu export
//! imported into the arena (`import_file`), a directory checked before it becomes a
//! root (`stat_root`), and one side of a comparison, imported or scanned (`load_side`). Errors come back as the text after the command's prefix; the
//! caller prints them and picks the exit status.

use crate::meta::{os_bytes, Errno, Kind, Meta};
use crate::out::io_text;
use crate::platform;
use crate::platform::Follow;
use crate::text::quote::{quoteaf, quotef};
use crate::tree::arena::Arena;
use crate::tree::ncdu::{self, Imported};
use crate::tree::sink::{ArenaSink, Problem};
use crate::walk::opts::{Cli, Opt, WalkOpts};
use crate::walk::scan::Walk;
use std::collections::HashSet;
use std::ffi::{CStr, CString, OsStr, OsString};
use std::io;

/// The options `dfdu scan`, `dfdu browse` and `dfdu diff` share: what to walk and how
/// (`WalkOpts`, reached through `Deref`), and an export to read instead (`-f`).
#[derive(Default)]
pub struct WalkArgs {
    pub opts: WalkOpts,
    /// An export to read instead of scanning (`-f`).
    pub input: Option<OsString>,
}

impl std::ops::Deref for WalkArgs {
    type Target = WalkOpts;
    fn deref(&self) -> &WalkOpts {
        &self.opts
    }
}

impl WalkArgs {
    /// Takes `opt`, `-f FILE` or one of the walk options (reading its value from `cli`);
    /// anything else is a usage error.
    pub fn take(&mut self, opt: &Opt, cli: &mut Cli) -> Result<(), i32> {
        if opt.is('f', "file") {
            self.input = Some(cli.value()?);
            return Ok(());
        }
        self.opts.take(opt, cli)
    }
}

/// One side of a comparison (`dfdu diff`, `dfdu browse --diff`) in the arena: its root
/// and where it came from ("scan", or "import of a gdu export").
pub struct Side {
    pub root: u32,
    pub source: String,
    /// What the scan of a directory side could not read (none for an import, whose
    /// errors are only flags in the export).
    pub problems: Vec<Problem>,
}

/// How a directory side is scanned: a `Reader`'s stat of the root and its scan into an
/// `ArenaSink`, as plain function pointers (the caller picks the reader).
pub type StatFn = fn(&CStr, Follow) -> Result<Meta, Errno>;
pub type ScanFn = fn(&Walk, &ArenaSink, &CStr, &Meta, u32);

/// Loads `what` into `arena`: a directory is scanned now with `opts` and
/// (threads, fd budget) `pool`; anything else (`-` is standard input) is imported as
/// an export. `Err` holds the message, without the command's prefix.
pub fn load_side(
    what: &OsStr,
    arena: &Arena,
    opts: &WalkOpts,
    (threads, fd_budget): (usize, usize),
    stat: StatFn,
    scan: ScanFn,
) -> Result<Side, String> {
    let path = os_bytes(what);
    let is_dir = what != "-" && std::fs::metadata(what).is_ok_and(|m| m.is_dir());
    if !is_dir {
        let imported = import_file(what, arena)?;
        let source = format!("import of a {} export", imported.progname.escape_debug());
        return Ok(Side { root: imported.root, source, problems: Vec::new() });
    }
    let cpath = CString::new(path.clone()).map_err(|_| format!("{}: a NUL byte in the name", quotef(&path)))?;
    let meta = stat_root(&cpath, stat)?;
    let sink = ArenaSink::new(arena).collecting_problems();
    let root = sink.add_root(&path, &meta).map_err(|_| "the tree is too large".to_string())?;
    let no_links = HashSet::new();
    scan(&opts.walk(threads, fd_budget, opts.one_fs.then_some(meta.dev), &no_links), &sink, &cpath, &meta, root);
    Ok(Side { root, source: "scan".into(), problems: sink.take_problems() })
}

/// Imports the export `f` (`-` for standard input) into `arena`.
pub fn import_file(f: &OsStr, arena: &Arena) -> Result<Imported, String> {
    let result = if f == "-" {
        ncdu::import_any(io::stdin().lock(), arena)
    } else {
        match std::fs::File::open(f) {
            Ok(file) => ncdu::import_any(file, arena),
            Err(e) => return Err(format!("cannot open {}: {}", quoteaf(&os_bytes(f)), io_text(&e))),
        }
    };
    result.map_err(|e| format!("{}: {e}", quoteaf(&os_bytes(f))))
}

/// Stats `path` (following a symlink, as a root is followed) with `stat` and checks that
/// it is a directory.
pub fn stat_root(path: &CStr, stat: impl Fn(&CStr, Follow) -> Result<Meta, Errno>) -> Result<Meta, String> {
    match stat(path, Follow::Yes) {
        Ok(m) if m.kind == Kind::Dir => Ok(m),
        Ok(_) => Err(format!("{} is not a directory", quoteaf(path.to_bytes()))),
        Err(e) => Err(format!("cannot access {}: {}", quoteaf(path.to_bytes()), platform::errno_text(e))),
    }
}
