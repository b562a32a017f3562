//! `dfdu dupes` and `dfdu dedupe`: files with identical content, and (Linux) giving their
//! space back with the comparing `FIDEDUPERANGE` ioctl.
//!
//! # Flow
//!
//! `parse` (options, help) → the scan (`scan.rs`'s pool into `sink::FilesSink`: regular
//! files only, 56 bytes each plus the name) → `find` (size, one inode one file, a 4 KiB
//! sample at each end, whole-file BLAKE3; `cache` stands in for reads) → extent layouts
//! (FIEMAP, to see copies that already share) → output (this file) → `dedupe`, or
//! `act` (`--delete`, `--hardlink`, `--symlink`; `plan` writes them as a script).
//!
//! Layering: this folder uses `scan`, `exclude`, `units`, `quote`, `meta` and the
//! platform functions named in `platform/linux/dupes.rs`; nothing outside it imports it
//! except `main.rs`'s dispatch.

mod act;
mod blocks;
mod cache;
mod dedupe;
mod dirs;
mod find;
mod open;
mod par;
mod plan;
mod remainder;
mod sink;
#[cfg(test)]
mod tests;

use crate::meta::{os_bytes, Kind};
use crate::out;
use crate::platform;
use crate::platform::Follow;
use crate::text::quote::{json_str, problem, quoteaf, quotef};
use crate::text::units::{format_size, parse_with_suffix, Scale, THRESHOLD_SUFFIXES};
use crate::walk::opts::{Cli, WalkOpts};
use crate::walk::reader::Reader;
use crate::walk::scan::{self, Walk};
use crate::walk::threads;
use find::{Group, Stats};
use sink::{FileRec, FilesSink, Found, ARGS_DIR, NO_DIR};
use std::collections::HashSet;
use std::ffi::{CString, OsString};
use std::io::{self, IsTerminal, Write};
use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};
use std::time::{Duration, Instant};

/// Version of the `--json` document; bump on any incompatible change.
pub const JSON_VERSION: u32 = 1;

/// Which command runs.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    Dupes,
    Dedupe,
}

impl Mode {
    fn name(self) -> &'static str {
        match self {
            Mode::Dupes => "dupes",
            Mode::Dedupe => "dedupe",
        }
    }
}

/// What the user typed.
pub struct Args {
    pub mode: Mode,
    pub prog: String,
    pub paths: Vec<OsString>,
    pub min_size: u64,
    pub max_size: u64,
    /// `-x`, `--exclude`, `-X`, `-j` (no `-L`: links are never followed).
    pub walk: WalkOpts,
    pub hashfile: Option<OsString>,
    pub sizes: bool,
    pub nul: bool,
    pub json: bool,
    pub quiet: bool,
    pub dry_run: bool,
    /// `--allow-readonly`: files on read-only btrfs snapshots may be changed too.
    pub allow_readonly: bool,
    /// `--verify`: members of groups the hash file vouched for are read again.
    pub verify: bool,
    /// `--blocks`, `--block-size`: block mode after whole files (`blocks.rs`).
    pub blocks: bool,
    pub block_bytes: Option<u64>,
    /// `--delete`, `--hardlink`, `--symlink`.
    pub action: Option<act::Action>,
    /// `--keep` and `--keep-path` rules, in the order given (empty: `act::DEFAULT_KEEP`).
    pub keep: Vec<act::Keep>,
    pub force_metadata: bool,
    /// `--plan FILE`: the actions as a shell script, nothing changed.
    pub plan: Option<OsString>,
    /// `--dirs`: directories with identical trees instead of files.
    pub dirs: bool,
}

const DUPES_HELP: &str = "\
Usage: dfdu dupes [OPTION]... PATH...
List files with identical content under each PATH (directories are scanned,
files taken as they are), as fdupes and jdupes print them: each group's paths
one per line, a blank line after each group.

Groups come in order of bytes wasted (size times copies beyond the first),
largest first. Within a group, paths are in byte order, so the output is the
same whatever the thread count. 'dfdu dedupe' makes the others share the
extents of the copy with the fewest allocated blocks: the first path when the
copies are alike (see 'dfdu dedupe --help').

Several names of one inode (hard links) are one file, never duplicates of each
other; its name that sorts first stands for it. Symbolic links are never
followed. Empty files are not duplicates (see --min-size).

How: files are grouped by size, then a 4 KiB block at each end (small files
whole) is hashed, then whole files, with BLAKE3 (24 bytes of it: two different
files cannot be made to look alike), on a fixed pool of threads.

  -S, --size            print 'N bytes each:' before each group
  -0, --null            end each path with NUL and each group with one more NUL
      --json            print a JSON document (format version 1): groups with
                        size, paths and whether they already share extents,
                        and the summary
      --min-size=N      ignore files smaller than N bytes (default 1; K, M, G
                        are powers of 1024, KB, MB, GB of 1000)
      --max-size=N      ignore files larger than N bytes
  -x, --one-file-system do not enter other file systems
      --exclude=PATTERN skip entries matching PATTERN (shell glob, as du)
  -X, --exclude-from=FILE  skip entries matching any pattern in FILE
      --exclude-caches  skip directories holding a valid CACHEDIR.TAG
      --exclude-kernfs  skip mounts of kernel file systems (proc, sysfs, ...)
  -j, --threads=N       scan and read with N threads
      --hashfile=FILE   remember what was read in FILE (dfdu's own format,
                        64 bytes per file, keyed by device and inode, trusted
                        while size, mtime and ctime are unchanged): a rerun on
                        an unchanged tree reads no file data; a symlink is
                        refused; a file another user could have written (not
                        yours, group/other-writable, or in such a directory)
                        is not trusted: rebuilt (mode 0600), or in a directory
                        others may write, not used at all
      --verify          read again the files of each group that the hash file
                        vouched for before reporting it (what the hash file
                        cannot see: a write through a shared memory mapping made
                        before the file was hashed moves neither mtime nor ctime)
  -q, --quiet           no progress line and no summary on standard error
      --blocks          then list the ranges of equal content between files
                        that differ as a whole and inside one file, as 'dfdu
                        dedupe --blocks' finds them (aligned blocks, grown into
                        runs), changing nothing, on any file system: one line
                        'LENGTH bytes: PATH at OFFSET = PATH at OFFSET' each,
                        after the groups (--json: \"blocks\" with \"ranges\")
      --block-size=N    blocks of N bytes (a power of two, 4K to 16M; default
                        the file system's block; implies --blocks)
      --help            show this help
      --version         show the version

Acting on the groups, and directories (where extents can be shared, 'dfdu
dedupe' is better: it keeps every file, and the kernel compares the bytes):
      --delete          remove every member of each group but the one kept
      --hardlink        replace them by hard links to the kept file (one file
                        system only; a member whose owner or mode differs from
                        the kept file's is skipped, see --force-metadata)
      --symlink         replace them by symbolic links to the kept file
                        (relative within one PATH, else absolute)
      --keep=RULE[,RULE]...  which file is kept: oldest, newest (mtime),
                        shortest, longest (path), first-arg (under the earliest
                        PATH); the first rule that tells two apart decides, ties
                        go by path order; default first-arg,oldest
      --keep-path=DIR   a rule too, in its place among them: prefer files in DIR
      --force-metadata  --hardlink a member whose owner or mode differs (the
                        link has the kept file's)
      --dry-run         check and print everything, change nothing
      --plan=FILE       write the actions as a shell script to FILE (created new,
                        mode 0600), change nothing; 'sh FILE' runs it later, each
                        action guarded by 'cmp' against the kept file
      --dirs            list, or act on, directories whose whole trees are
                        identical (same names, structure and contents; not
                        empty; holding nothing the scan does not keep: a
                        symlink, an empty file, an excluded or unreadable
                        entry) instead of files, the largest first; one inside
                        a listed directory is listed with it; an action on a
                        tree acts on each of its files, then removes its
                        emptied directories (--delete, --symlink: which then
                        links the directory itself)
  Each hard-link name of a member goes with it; the kept file's names are never
  touched. Right before acting on a member, dfdu compares it byte for byte with
  the kept file and checks that neither changed since the scan (size, mtime,
  ctime, device and inode, every directory on the way opened without following
  a symlink); a member that fails is skipped and reported. A replacement is made
  under a new name and renamed over the member: the path is never missing.
  Printed: 'keep: PATH', then for each other name 'delete: PATH', 'hardlink:
  PATH', 'symlink: PATH -> TARGET' or 'skip: PATH (why)', a blank line after
  each group (--json: an \"actions\" list); the summary gives groups acted on,
  bytes of duplicates, the free space gained (statfs) and what was skipped, and
  why.

Files whose extents are all shared already (reflinks, an earlier dedupe) are
reported with the others but not counted as reclaimable ('[shared]' in the
summary, \"already_shared\" in JSON).

Names are printed as they are, so a name holding a newline reads as two paths:
-0 and --json are the formats that hold any name. On a terminal, names are
quoted as ls quotes them ('a b', 'x'$'\\n''y'), so that no name can drive it.

Exit status: 0 when everything could be read (and every action was done), 1
when something could not be read or a member was skipped, 2 for bad usage.
";

const DEDUPE_HELP: &str = "\
Usage: dfdu dedupe [OPTION]... PATH...
Find duplicate files as 'dfdu dupes' does (same options, same hash file), then
make each group share the extents of one of its files with the FIDEDUPERANGE
ioctl (Linux; btrfs, XFS with reflink=1, and other file systems that can share
extents). The kernel compares the bytes itself and shares nothing that
differs; nothing is removed or renamed, timestamps stay as they were (and
nothing is copied but by --blocks on btrfs, below).

The file kept is the one with the fewest allocated blocks (the kernel gives
the others its holes too, so no copy grows); among equals an immutable,
append-only or read-only one, then the first path.

Never changed: files that changed since they were hashed (size, mtime, ctime
checked right before each call), immutable and append-only files and files on
read-only btrfs snapshots (these may be the file kept), active swap files,
copies alone on their file system (no other copy there to share with), and files whose
extents already are the kept one's.

      --dry-run         say what would be submitted, change nothing
      --allow-readonly  change files on read-only btrfs snapshots too (their
                        generation moves, which incremental 'btrfs send -p'
                        relies on not happening)
      --blocks          then share equal blocks of files that differ as a whole
                        (VM images, backups) and repeats inside one file: every
                        file is read once, each aligned block fingerprinted,
                        equal blocks grown into runs, each run one range for the
                        kernel to compare; ranges already shared are skipped;
                        about 24 bytes of memory per block read; a hash file
                        holds 8 bytes per block, and a rerun with it reads no
                        file that is unchanged; on btrfs, which frees an extent
                        only when no part of it is used, the rest of a partly
                        matched extent is copied to a new one and moved there
                        too (the kernel compares it as well) when that frees at
                        least as much as it writes
      --block-size=N    blocks of N bytes (a power of two, 4K to 16M; default
                        the file system's block, 4K on most; implies --blocks):
                        larger blocks take less memory and find less
      --help            show this help
      --version         show the version
  plus every option of 'dfdu dupes' but its actions (see 'dfdu dupes --help');
  the groups are printed only with --json, -S or -0, or without -q

Report (standard error): bytes submitted, bytes the kernel deduplicated, what
it refused ('data differs': those files' hash-file entries are dropped, so the
next run reads them again), and the change in free space (after syncfs).

SIGINT or SIGTERM: the call in flight is finished, no other is made, the report
and the hash file cover what was done, exit status 130 (143); a second signal
ends the run at once.

Exit status: 0 on success, 1 when something could not be read or
deduplicated or the file system cannot share extents, 2 for bad usage.
";

fn number(v: &OsString) -> Option<u64> {
    parse_with_suffix(&os_bytes(v), THRESHOLD_SUFFIXES).ok()
}

impl Args {
    /// The arguments before any option is read: every default.
    fn new(prog: &str, mode: Mode) -> Args {
        Args {
            mode,
            prog: prog.to_string(),
            paths: Vec::new(),
            min_size: 1,
            max_size: u64::MAX,
            walk: WalkOpts::default(),
            hashfile: None,
            sizes: false,
            nul: false,
            json: false,
            quiet: false,
            dry_run: false,
            allow_readonly: false,
            verify: false,
            blocks: false,
            block_bytes: None,
            action: None,
            keep: Vec::new(),
            force_metadata: false,
            plan: None,
            dirs: false,
        }
    }
}

/// Parses `dfdu dupes` / `dfdu dedupe` arguments; `Err(code)` to exit right away.
pub fn parse(prog: &str, mode: Mode, args: Vec<OsString>) -> Result<Args, i32> {
    use lexopt::Arg::*;
    let cmd = mode.name();
    let mut a = Args::new(prog, mode);
    let help = if mode == Mode::Dupes { DUPES_HELP } else { DEDUPE_HELP };
    let mut cli = Cli::new(prog, cmd, help, args);
    while let Some(opt) = cli.next()? {
        match opt.arg() {
            Short('S') | Long("size") => a.sizes = true,
            Short('0') | Long("null") => a.nul = true,
            Long("json") => a.json = true,
            Short('q') | Long("quiet") => a.quiet = true,
            Long("dry-run") => a.dry_run = true,
            Long(l @ ("delete" | "hardlink" | "symlink")) if mode == Mode::Dupes => {
                let action = match l {
                    "delete" => act::Action::Delete,
                    "hardlink" => act::Action::Hardlink,
                    _ => act::Action::Symlink,
                };
                if a.action.is_some_and(|x| x != action) {
                    return Err(cli.bad("--delete, --hardlink and --symlink exclude each other"));
                }
                a.action = Some(action);
            }
            Long("keep") if mode == Mode::Dupes => {
                let v = cli.value()?;
                match act::parse_keep(&String::from_utf8_lossy(&os_bytes(&v))) {
                    Ok(rules) => a.keep.extend(rules),
                    Err(w) => return Err(cli.bad(format!("invalid keep rule {}", quoteaf(w.as_bytes())))),
                }
            }
            Long("keep-path") if mode == Mode::Dupes => a.keep.push(act::Keep::Under(os_bytes(&cli.value()?))),
            Long("force-metadata") if mode == Mode::Dupes => a.force_metadata = true,
            Long("plan") if mode == Mode::Dupes => a.plan = Some(cli.value()?),
            Long("dirs") if mode == Mode::Dupes => a.dirs = true,
            Long("allow-readonly") if mode == Mode::Dedupe => a.allow_readonly = true,
            Long("verify") => a.verify = true,
            Long("blocks") => a.blocks = true,
            Long("block-size") => {
                (a.blocks, a.block_bytes) = (true, Some(block_size(&mut cli)?));
            }
            Long(l @ ("min-size" | "max-size")) => {
                let max = l == "max-size";
                let v = cli.value()?;
                let Some(n) = number(&v) else {
                    return Err(cli.bad(format!("invalid size {}", quoteaf(&os_bytes(&v)))));
                };
                if max {
                    a.max_size = n;
                } else {
                    a.min_size = n.max(1);
                }
            }
            Long("hashfile") => a.hashfile = Some(cli.value()?),
            Value(v) => a.paths.push(v),
            // Duplicates are files: symbolic links are never followed, so no -L.
            _ => a.walk.take_no_follow(&opt, &mut cli)?,
        }
    }
    check(&a, &cli)?;
    Ok(a)
}

/// The value of `--block-size`: a power of two the block reader takes.
fn block_size(cli: &mut Cli) -> Result<u64, i32> {
    let v = cli.value()?;
    let n =
        number(&v).filter(|n| n.is_power_of_two() && (blocks::MIN_BLOCK_BYTES..=blocks::MAX_BLOCK_BYTES).contains(n));
    n.ok_or_else(|| cli.bad(format!("invalid block size {} (a power of two from 4K to 16M)", quoteaf(&os_bytes(&v)))))
}

/// The checks of options taken together, once all are read.
fn check(a: &Args, cli: &Cli) -> Result<(), i32> {
    if a.paths.is_empty() {
        return Err(cli.bad("missing PATH"));
    }
    if [a.sizes, a.nul, a.json].iter().filter(|&&x| x).count() > 1 && a.json {
        return Err(cli.bad("--json cannot be combined with -S or -0"));
    }
    if a.mode == Mode::Dupes
        && a.action.is_none()
        && (a.dry_run || a.plan.is_some() || a.force_metadata || !a.keep.is_empty())
    {
        return Err(cli.bad(
            "--dry-run, --plan, --keep, --keep-path and --force-metadata need --delete, --hardlink or --symlink",
        ));
    }
    if a.mode == Mode::Dupes && a.blocks && (a.action.is_some() || a.dirs) {
        return Err(cli.bad("--blocks reports ranges only: not with --dirs, --delete, --hardlink or --symlink"));
    }
    if a.action.is_some() && (a.sizes || a.nul) {
        return Err(cli.bad("-S and -0 list groups: not with --delete, --hardlink or --symlink"));
    }
    if a.min_size > a.max_size {
        return Err(cli.bad("--min-size is larger than --max-size"));
    }
    Ok(())
}

/// The progress line's phases.
const PHASE_SCAN: u8 = 0;
const PHASE_READ: u8 = 1;
const PHASE_DONE: u8 = 2;

/// The progress line's text for `phase` (`None` once the phase is done).
fn progress_line(phase: u8, files_seen: u64, stats: &Stats) -> Option<String> {
    match phase {
        PHASE_SCAN => Some(format!("scanning: {files_seen} files")),
        PHASE_READ => Some(format!(
            "reading: {}/{} files, {} read",
            stats.jobs_done.load(Ordering::Relaxed),
            stats.jobs_total.load(Ordering::Relaxed),
            format_size(stats.bytes_read.load(Ordering::Relaxed), Scale::human(true))
        )),
        _ => None,
    }
}

/// Redraws one progress line on standard error every 200 ms until the phase is done.
fn progress(phase: &AtomicU8, sink: &FilesSink, stats: &Stats, start: Instant) {
    let mut err = io::stderr();
    loop {
        std::thread::sleep(Duration::from_millis(200));
        let seen = sink.files_seen.load(Ordering::Relaxed);
        let Some(line) = progress_line(phase.load(Ordering::Relaxed), seen, stats) else { break };
        let _ = write!(err, "\r\x1b[K{line} ({:.1} s)", start.elapsed().as_secs_f64());
    }
    let _ = write!(err, "\r\x1b[K");
}

/// Scans every PATH into `sink`; problems with the arguments themselves go to `notes`.
fn scan_all<R: Reader>(a: &Args, sink: &FilesSink, threads: usize, fd_budget: usize, notes: &mut Vec<String>) -> bool {
    let mut ok = true;
    let seen_before = HashSet::new();
    // Token 0: the pseudo-directory of file arguments (their name is their path).
    let _ = sink.found.lock().unwrap().add_dir(NO_DIR, b"", (0, 0));
    for p in &a.paths {
        let bytes = os_bytes(p);
        let Ok(c) = CString::new(bytes.clone()) else {
            notes.push(problem("cannot access", &bytes, "invalid argument"));
            ok = false;
            continue;
        };
        let meta = match R::stat_path(&c, Follow::No) {
            Ok(m) => m,
            Err(e) => {
                notes.push(problem("cannot access", &bytes, &platform::errno_text(e)));
                ok = false;
                continue;
            }
        };
        match meta.kind {
            Kind::Dir => {
                let Ok(token) = sink.found.lock().unwrap().add_dir(NO_DIR, &bytes, (meta.dev, meta.ino)) else {
                    notes.push("too many directories".into());
                    return false;
                };
                let walk = Walk {
                    follow_root: false,
                    claim_dirs: false,
                    ..a.walk.walk(threads, fd_budget, a.walk.one_fs.then_some(meta.dev), &seen_before)
                };
                scan::scan_as::<R, _>(&walk, sink, &c, &meta, token);
            }
            Kind::File => {
                if meta.size >= a.min_size && meta.size <= a.max_size {
                    let mut found = sink.found.lock().unwrap();
                    let name_off = found.names.len() as u64;
                    found.names.extend_from_slice(&bytes);
                    found.files.push(FileRec {
                        size: meta.size,
                        dev: meta.dev,
                        ino: meta.ino,
                        mtime_ns: meta.mtime.as_ns(),
                        ctime_ns: meta.ctime.as_ns(),
                        name_off,
                        name_len: bytes.len() as u32,
                        dir: ARGS_DIR,
                    });
                }
            }
            Kind::Symlink => notes.push(format!("{} is a symbolic link: not followed", quotef(&bytes))),
            Kind::Other => {}
        }
    }
    ok
}

/// Runs `dfdu dupes` or `dfdu dedupe`; returns the exit status. Its stages, in order:
/// open the hash file and the plan (`open_files`), scan and find the groups
/// (`scan_and_find`), dedupe (`dedupe_stage`), act (`act_stage`), save the hash file
/// (`save_hashfile`: after dedupe, whose refusals make entries stale), report
/// (`report_groups`).
pub fn run<R: Reader>(a: &Args, threads: usize, fd_budget: usize) -> i32 {
    let cmd = format!("{} {}", a.prog, a.mode.name());
    let start = Instant::now();
    if a.mode == Mode::Dedupe && !platform::dedupe_supported() {
        eprintln!(
            "{cmd}: not supported on this system (its clone calls do not compare bytes); \
             'dfdu dupes' lists the duplicates"
        );
        return 1;
    }
    let (mut hash_handle, unparsed, plan_file) = match open_files(a, &cmd) {
        Ok(files) => files,
        Err(msg) => {
            eprintln!("{cmd}: {msg}");
            return 1;
        }
    };
    let stats = Stats::default();
    let show_progress = !a.quiet && io::stderr().is_terminal();
    let (found, mut o, mut status, cache) = scan_and_find::<R>(a, threads, fd_budget, &unparsed, &stats, start, &cmd);
    drop(unparsed);
    let cache = cache.unwrap_or_else(|why| {
        if let Some(h) = hash_handle.as_mut() {
            eprintln!("{cmd}: {}", h.rebuild_after(why));
        }
        cache::Cache::default()
    });
    o.groups.sort_by(|x, y| y.wasted().cmp(&x.wasted()).then_with(|| x.paths[0].cmp(&y.paths[0])));
    let mut report = (a.mode == Mode::Dedupe).then(|| {
        platform::interrupt_catch();
        let opts = dedupe::Options {
            dry_run: a.dry_run,
            allow_readonly: a.allow_readonly,
            blocks: a.blocks,
            block_bytes: a.block_bytes,
            threads,
            progress: show_progress,
            keep_prints: hash_handle.is_some(),
            look_only: false,
        };
        dedupe::run(&open::Handles::new(&found, fd_budget), &o.groups, opts, &cache)
    });
    let mut look = (a.mode == Mode::Dupes && a.blocks).then(|| {
        let opts = dedupe::Options {
            blocks: true,
            block_bytes: a.block_bytes,
            threads,
            progress: show_progress,
            keep_prints: hash_handle.is_some(),
            ..dedupe::Options::default()
        };
        dedupe::look(&open::Handles::new(&found, fd_budget), &o.groups, opts, &cache)
    });
    let acted = act_stage(a, &found, &mut o.groups, fd_budget, plan_file, &cmd, &mut status);
    if let Some(h) = hash_handle {
        let from_blocks = report.as_mut().and_then(|r| r.blocks.as_mut()).or(look.as_mut());
        let prints = from_blocks.map(|b| std::mem::take(&mut b.entries)).unwrap_or_default();
        if let Err(msg) = save_hashfile(h, cache, &found, &o, report.as_ref(), prints) {
            eprintln!("{cmd}: {msg}");
            status = 1;
        }
    }
    if let Some(r) = &acted {
        return report_actions(a, &o.groups, r, &stats, start, &cmd).unwrap_or(status);
    }
    report_groups(a, &o.groups, &stats, start, (report, look.as_ref()), &cmd).unwrap_or(status)
}

/// The hash file (`--hashfile`, opened and locked) and the plan (`--plan`, created new):
/// both before the scan, so that one that cannot be used is known before any work.
fn open_files(
    a: &Args,
    cmd: &str,
) -> Result<(Option<cache::HashFile>, cache::Unparsed, Option<std::fs::File>), String> {
    let (hash_handle, unparsed) = match &a.hashfile {
        Some(path) => cache::open(std::path::Path::new(path), &mut |line| eprintln!("{cmd}: {line}"))?,
        None => Default::default(),
    };
    let plan_file = a.plan.as_ref().map(|path| cache::create_new(std::path::Path::new(path))).transpose()?;
    Ok((hash_handle, unparsed, plan_file))
}

/// The scan, then the finding stages on the same workers, with the progress line beside
/// them on a terminal; what could not be scanned or read is reported here. The hash
/// file is parsed beside the scan (on a thread of its own, or after the scan where none
/// can start). Returns the files, the groups, the exit status so far and the hash file's
/// entries (or why it was unusable).
fn scan_and_find<R: Reader>(
    a: &Args,
    threads: usize,
    fd_budget: usize,
    unparsed: &cache::Unparsed,
    stats: &Stats,
    start: Instant,
    cmd: &str,
) -> (Found, find::Outcome, i32, Result<cache::Cache, &'static str>) {
    let parsed = std::sync::OnceLock::new();
    let empty = cache::Cache::default();
    let mut status = 0;
    let sink = FilesSink::new(Found::default(), a.min_size, a.max_size);
    let phase = AtomicU8::new(PHASE_SCAN);
    let stop = AtomicBool::new(false);
    let mut notes = Vec::new();
    let mut outcome = None;
    let mut found = Found::default();
    std::thread::scope(|s| {
        if !a.quiet && io::stderr().is_terminal() {
            let (phase, sink) = (&phase, &sink);
            // Without a thread for it (a low RLIMIT_AS), the run goes on without the line.
            threads::try_spawn(s, move || progress(phase, sink, stats, start));
        }
        let parse = || unparsed.parse();
        let early = &parsed;
        threads::try_spawn(s, move || {
            early.get_or_init(parse);
        });
        if !scan_all::<R>(a, &sink, threads, fd_budget, &mut notes) {
            status = 1;
        }
        found = std::mem::take(&mut *sink.found.lock().unwrap());
        phase.store(PHASE_READ, Ordering::Relaxed);
        let handles = open::Handles::new(&found, fd_budget);
        // (Waits for the parse if it is still running.)
        let cache = parsed.get_or_init(parse).as_ref().unwrap_or(&empty);
        let mut o = find::find(&found, &handles, cache, threads, stats, &stop, a.verify);
        find::layouts(&found, &handles, &mut o.groups, threads, stats);
        phase.store(PHASE_DONE, Ordering::Relaxed);
        outcome = Some(o);
    });
    for n in &notes {
        eprintln!("{cmd}: {n}");
    }
    if sink.overflow.load(Ordering::Relaxed) {
        eprintln!("{cmd}: more than 4 billion directories: the rest were not scanned");
        status = 1;
    }
    for (dir, name, e) in &found.errors {
        eprintln!("{cmd}: {}", found.problem_line(*dir, name, &platform::errno_text(*e)));
        status = 1;
    }
    let o = outcome.expect("find ran");
    for (path, e) in &o.errors {
        eprintln!("{cmd}: {}", problem("cannot read", path, &platform::errno_text(*e)));
        status = 1;
    }
    (found, o, status, parsed.into_inner().unwrap_or(Ok(empty)))
}

/// Saves the hash file: what this run learned, less the entries a range the kernel
/// refused made stale, with the block fingerprints of `--blocks`.
fn save_hashfile(
    h: cache::HashFile,
    old: cache::Cache,
    found: &Found,
    o: &find::Outcome,
    report: Option<&dedupe::Report>,
    blocks: Vec<cache::Blocks>,
) -> Result<(), String> {
    let key = |i: &u32| (found.files[*i as usize].dev, found.files[*i as usize].ino);
    let stale: HashSet<(u64, u64)> = report.iter().flat_map(|r| &r.stale).map(key).collect();
    // Nothing read, nothing learned: every candidate's entry is in `old` as it is, and
    // building and sorting them all again was most of a rerun's saving time.
    let learned = o.cands.iter().any(|c| c.fresh && !c.dead);
    let mut entries = if learned { find::cache_entries(found, &o.cands) } else { Vec::new() };
    entries.retain(|e| !stale.contains(&(e.dev, e.ino)));
    h.save(old, entries, blocks, &stale)
}

/// The groups on stdout (always for `dupes`; for `dedupe` unless `-q` alone), the summary
/// line and dedupe's report on stderr. `Some(code)`: the exit status that replaces the
/// one so far (a write error, an interrupted or failed dedupe); `None` keeps it.
fn report_groups(
    a: &Args,
    groups: &[Group],
    stats: &Stats,
    start: Instant,
    (report, look): (Option<dedupe::Report>, Option<&blocks::Report>),
    cmd: &str,
) -> Option<i32> {
    if a.mode == Mode::Dupes || a.json || a.sizes || a.nul || !a.quiet {
        if let Err(code) = out::finish(cmd, print_groups(a, groups, stats, start, (report.as_ref(), look))) {
            return Some(code);
        }
    }
    if !a.quiet && !a.json {
        eprintln!("{cmd}: {}", summary_line(groups, stats, start));
    }
    if let Some(b) = look {
        for m in &b.messages {
            eprintln!("{cmd}: cannot read {m}");
        }
        if !a.quiet && !a.json {
            eprint!("{}", b.text_look(cmd));
        }
        return b.failed.then_some(1);
    }
    let r = report?;
    if !a.json {
        eprint!("{}", r.text(cmd, a.dry_run));
    }
    if r.interrupted {
        return Some(128 + platform::interrupt_requested().unwrap_or(2));
    }
    r.failed.then_some(1)
}

/// `--dirs` and the actions, after the groups are final: with `--dirs` the groups become
/// the directory groups (printed as file groups are, each directory's path standing for
/// its tree); with an action, it is done (or checked only, for `--dry-run` and `--plan`,
/// whose script is written to `plan_file`).
fn act_stage(
    a: &Args,
    found: &Found,
    groups: &mut Vec<Group>,
    fd_budget: usize,
    plan_file: Option<std::fs::File>,
    cmd: &str,
    status: &mut i32,
) -> Option<act::Report> {
    let dir_groups = a.dirs.then(|| dirs::dir_groups(found, groups));
    let acted = a.action.map(|action| {
        pause_before_act();
        let args: Vec<Vec<u8>> = a.paths.iter().map(|p| os_bytes(p)).collect();
        let keep = if a.keep.is_empty() { &act::DEFAULT_KEEP[..] } else { &a.keep[..] };
        let dry_run = a.dry_run || a.plan.is_some();
        let opts = act::Options { action, keep, args: &args, dry_run, force_metadata: a.force_metadata };
        let handles = open::Handles::new(found, fd_budget);
        match &dir_groups {
            Some(dg) => act::run_dirs(&handles, dg, &opts),
            None => act::run(&handles, groups, &opts),
        }
    });
    if let Some(dg) = &dir_groups {
        *groups = dg.iter().map(dirs::DirGroup::as_group).collect();
    }
    if let (Some(mut file), Some(r)) = (plan_file, &acted) {
        let cwd = std::env::current_dir().map(|d| os_bytes(d.as_os_str())).unwrap_or_else(|_| b".".to_vec());
        let text = plan::script(r, &cwd, cmd);
        if let Err(e) = file.write_all(&text).and_then(|()| file.sync_all()) {
            eprintln!("{cmd}: cannot write the plan: {}", out::io_text(&e));
            *status = 1;
        }
    }
    acted
}

/// The action lines (or JSON) on standard output and the summary on standard error; the
/// exit status when it is not the run's own: 1 after a write error or a member skipped.
fn report_actions(
    a: &Args,
    groups: &[Group],
    r: &act::Report,
    stats: &Stats,
    start: Instant,
    cmd: &str,
) -> Option<i32> {
    let dry_run = a.dry_run || a.plan.is_some();
    if let Err(code) = out::finish(cmd, print_actions(a, groups, r, stats, start, dry_run)) {
        return Some(code);
    }
    if !a.quiet && !a.json {
        eprint!("{}", r.text(cmd, dry_run));
    }
    (r.skipped() > 0).then_some(1)
}

/// A test's hook, in debug builds only: with `DFDU_TEST_PAUSE_BEFORE_ACT` naming a FIFO,
/// the run waits between finding the groups and acting on them until the test, having
/// opened the FIFO for writing (which waits for this open), changes what it wants and
/// closes it.
fn pause_before_act() {
    if !cfg!(debug_assertions) {
        return;
    }
    if let Some(fifo) = std::env::var_os("DFDU_TEST_PAUSE_BEFORE_ACT") {
        if let Ok(mut f) = std::fs::File::open(fifo) {
            let _ = io::Read::read_to_end(&mut f, &mut Vec::new());
        }
    }
}

/// The action lines (`act::Report::write_lines`), or the JSON document with the groups
/// and the actions.
fn print_actions(
    a: &Args,
    groups: &[Group],
    r: &act::Report,
    stats: &Stats,
    start: Instant,
    dry_run: bool,
) -> io::Result<()> {
    let stdout = io::stdout();
    let quote = stdout.is_terminal();
    let mut out = io::BufWriter::with_capacity(64 * 1024, stdout.lock());
    if a.json {
        let mut doc = Vec::new();
        write_groups(&mut doc, a, groups, stats, start, (None, None), false)?;
        // The groups' document with the actions added before its closing brace.
        let cut = doc.len().saturating_sub(2);
        out.write_all(&doc[..cut])?;
        out.write_all(b",\n")?;
        out.write_all(r.json(dry_run).as_bytes())?;
        out.write_all(b"}\n")?;
    } else {
        r.write_lines(&mut out, quote)?;
    }
    out.flush()
}

/// (cache hits, extra hard-link names).
fn plain(stats: &Stats) -> (u64, u64) {
    (stats.cache_hits.load(Ordering::Relaxed), stats.extra_links.load(Ordering::Relaxed))
}

fn human(n: u64) -> String {
    format_size(n, Scale::human(true))
}

/// `n` and its noun, singular for one: "1 group", "2 groups".
fn count(n: u64, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

fn summary_line(groups: &[Group], stats: &Stats, start: Instant) -> String {
    let dup_files: u64 = groups.iter().map(|g| g.members.len() as u64 - 1).sum();
    let wasted: u64 = groups.iter().map(Group::wasted).sum();
    let reclaimable: u64 = groups.iter().map(Group::reclaimable).sum();
    let shared = groups.iter().filter(|g| g.all_shared()).count() as u64;
    let (hits, links) = plain(stats);
    let mut s = format!(
        "{}, {}, {wasted} bytes ({}) in duplicates, {reclaimable} bytes ({}) reclaimable",
        count(groups.len() as u64, "group", "groups"),
        count(dup_files, "duplicate file", "duplicate files"),
        human(wasted),
        human(reclaimable)
    );
    if shared > 0 {
        let verb = if shared == 1 { "shares its" } else { "share their" };
        s.push_str(&format!(" [shared: {} already {verb} extents]", count(shared, "group", "groups")));
    }
    // A file sampled and then hashed whole is read twice: files first, reads when more.
    let (files, reads) = (stats.files_read.load(Ordering::Relaxed), stats.reads.load(Ordering::Relaxed));
    let read = match reads > files {
        true => format!("{} in {reads} reads", count(files, "file", "files")),
        false => count(files, "file", "files"),
    };
    s.push_str(&format!(
        "; read {read}, {} bytes; {hits} from the hash file",
        stats.bytes_read.load(Ordering::Relaxed)
    ));
    if links > 0 {
        s.push_str(&format!("; {} not listed", count(links, "extra hard-link name", "extra hard-link names")));
    }
    let changed = stats.changed.load(Ordering::Relaxed);
    if changed > 0 {
        s.push_str(&format!("; {} while read (skipped)", count(changed, "file changed", "files changed")));
    }
    let stale = stats.stale.load(Ordering::Relaxed);
    if stale > 0 {
        s.push_str(&format!(
            "; {} replaced (--verify)",
            count(stale, "stale hash-file entry", "stale hash-file entries")
        ));
    }
    s.push_str(&format!("; {:.2} s", start.elapsed().as_secs_f64()));
    s
}

fn print_groups(
    a: &Args,
    groups: &[Group],
    stats: &Stats,
    start: Instant,
    reports: (Option<&dedupe::Report>, Option<&blocks::Report>),
) -> io::Result<()> {
    let stdout = io::stdout();
    // A name is the user's bytes: on a terminal an escape sequence in one would drive the
    // terminal (a new title, a cleared screen) and a newline would make two paths. There
    // names are quoted as ls quotes them; a pipe gets them as they are.
    let quote = stdout.is_terminal();
    let mut out = io::BufWriter::with_capacity(64 * 1024, stdout.lock());
    write_groups(&mut out, a, groups, stats, start, reports, quote)?;
    out.flush()
}

/// The groups as `print_groups` prints them (JSON, or paths with -S / -0), into `out`;
/// with `quote` each path of the text formats as `ls` shows it on a terminal (`quotef`:
/// shell-escape quoting where a name needs it). JSON escapes names by itself.
fn write_groups(
    out: &mut impl Write,
    a: &Args,
    groups: &[Group],
    stats: &Stats,
    start: Instant,
    (report, look): (Option<&dedupe::Report>, Option<&blocks::Report>),
    quote: bool,
) -> io::Result<()> {
    if a.json {
        return write_json(out, a, groups, stats, start, (report, look));
    }
    let (end, sep): (&[u8], &[u8]) = if a.nul { (b"\0", b"\0") } else { (b"\n", b"\n") };
    for g in groups {
        if a.sizes {
            writeln!(out, "{} bytes each:", g.size)?;
        }
        for p in &g.paths {
            match quote {
                true => out.write_all(quotef(p).as_bytes())?,
                false => out.write_all(p)?,
            }
            out.write_all(end)?;
        }
        out.write_all(sep)?;
    }
    match look {
        Some(b) => b.write_ranges(out, end, quote),
        None => Ok(()),
    }
}

/// `write_groups` with `--json`: every group with its paths, the summary, and the dedupe
/// and block reports when there are.
fn write_json(
    out: &mut impl Write,
    a: &Args,
    groups: &[Group],
    stats: &Stats,
    start: Instant,
    (report, look): (Option<&dedupe::Report>, Option<&blocks::Report>),
) -> io::Result<()> {
    let mut s = format!(
        "{{\"format\":\"dfdu-dupes-report\",\"version\":{JSON_VERSION},\"command\":\"{}\",\"groups\":[",
        a.mode.name()
    );
    for (i, g) in groups.iter().enumerate() {
        if i > 0 {
            s.push(',');
        }
        s.push_str(&format!(
            "\n{{\"size\":{},\"already_shared\":{},\"reclaimable\":{},\"paths\":[",
            g.size,
            g.all_shared(),
            g.reclaimable()
        ));
        for (k, p) in g.paths.iter().enumerate() {
            if k > 0 {
                s.push(',');
            }
            json_str(&mut s, p);
        }
        s.push_str("]}");
        if s.len() > 1 << 16 {
            out.write_all(s.as_bytes())?;
            s.clear();
        }
    }
    let dup_files: u64 = groups.iter().map(|g| g.members.len() as u64 - 1).sum();
    let (hits, links) = plain(stats);
    s.push_str(&format!(
        "],\n\"summary\":{{\"groups\":{},\"duplicate_files\":{dup_files},\"bytes_wasted\":{},\
         \"bytes_reclaimable\":{},\"groups_already_shared\":{},\"files_read\":{},\"reads\":{},\"bytes_read\":{},\
         \"cache_hits\":{hits},\"extra_links\":{links},\"changed\":{},\"seconds\":{:.3}}}",
        groups.len(),
        groups.iter().map(Group::wasted).sum::<u64>(),
        groups.iter().map(Group::reclaimable).sum::<u64>(),
        groups.iter().filter(|g| g.all_shared()).count(),
        stats.files_read.load(Ordering::Relaxed),
        stats.reads.load(Ordering::Relaxed),
        stats.bytes_read.load(Ordering::Relaxed),
        stats.changed.load(Ordering::Relaxed),
        start.elapsed().as_secs_f64()
    ));
    if let Some(r) = report {
        s.push_str(",\n\"dedupe\":");
        s.push_str(&r.json(a.dry_run));
    }
    if let Some(b) = look {
        s.push_str(",\n\"blocks\":");
        s.push_str(&b.json_look());
    }
    s.push_str("}\n");
    out.write_all(s.as_bytes())
}
