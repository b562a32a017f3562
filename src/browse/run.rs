//! Starting the browser: the compared tree, the import or the scan root, the terminal,
//! and the scan on its own thread beside the loop (`ui.rs`); and what the view may ask
//! of the file system (mtimes, mount points).

use super::*;
use crate::meta::{os_bytes, Errno, Meta};
use crate::platform;
use crate::platform::Follow;
use crate::term::{escape, Session};
use crate::tree::arena::{self, Arena};
use crate::tree::roots::{import_file, load_side, stat_root};
use crate::tree::sink::ArenaSink;
use crate::walk::reader::Reader;
use crate::walk::scan::{self, Walk};
use crate::walk::threads::spawn_or_run;
use std::collections::HashSet;
use std::ffi::CString;
use std::sync::Arc;
use std::time::Instant;

/// Entries below `root` that could not be read: one pass over the parts of the tree
/// whose directories carry an error flag.
pub fn count_errors(a: &Arena, root: u32) -> u64 {
    let mut n = u64::from(a.dir_flags(root).read_error());
    let mut stack = vec![root];
    while let Some(d) = stack.pop() {
        if !a.dir_flags(d).any_error() {
            continue;
        }
        for id in a.children(d).unwrap_or(0..0) {
            let f = a.flags(id);
            if f.contains(arena::F_REMOVED) {
                continue;
            }
            if f.contains(arena::F_ERROR) {
                n += 1;
            } else if f.is_dir() {
                let sub = a.dir_of(id);
                n += u64::from(a.dir_flags(sub).read_error());
                stack.push(sub);
            }
        }
    }
    n
}

/// Whether the locale says UTF-8 (else the browser draws in ASCII).
pub(super) fn utf8_locale() -> bool {
    for key in ["LC_ALL", "LC_CTYPE", "LANG"] {
        if let Some(v) = std::env::var_os(key).filter(|v| !v.is_empty()) {
            let v = v.to_string_lossy().to_ascii_lowercase();
            return v.contains("utf-8") || v.contains("utf8");
        }
    }
    false
}

/// `NO_COLOR` set to anything but the empty string turns colour off (no-color.org).
pub(super) fn no_color_env() -> bool {
    std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty())
}

/// The two things the browser needs from a `Reader`, as plain function pointers so
/// that the loop is compiled once, not once per reader.
#[derive(Clone, Copy)]
pub struct Fs {
    pub stat_path: fn(&std::ffi::CStr, Follow) -> Result<Meta, Errno>,
    pub scan: fn(&Walk, &ArenaSink, &std::ffi::CStr, &Meta, u32),
    /// Reads the extent maps after the scan (`fill::fill_as`).
    pub fill: fn(&Arena, &std::ffi::CStr, u32, usize, Sharing),
    /// Whether a bulk source of extent metadata serves a scan of the path
    /// (`extents::bulk_source`): then, with `--shared`, the scan itself reads them.
    pub bulk: fn(&std::ffi::CStr) -> bool,
}

impl Fs {
    pub fn of<R: Reader>() -> Fs {
        Fs {
            stat_path: R::stat_path,
            scan: |w, sink, root, meta, token| scan::scan_as::<R, ArenaSink>(w, sink, root, meta, token),
            fill: super::fill::fill_as::<R>,
            bulk: crate::walk::extents::bulk_source::<R>,
        }
    }
}

/// What the loop needs besides the browser.
pub(super) struct Ctx<'a> {
    pub(super) fs: Fs,
    pub(super) arena: &'a Arena,
    pub(super) args: &'a BrowseArgs,
    pub(super) threads: usize,
    pub(super) fd_budget: usize,
    pub(super) no_links: &'a HashSet<(u64, u64)>,
    pub(super) one_fs_dev: Option<u64>,
    /// Where the trashes are (`T`, `--trash`).
    pub(super) place: trash::Place,
}

impl<'a> Ctx<'a> {
    pub(super) fn walk(&self) -> Walk<'a> {
        let walk = self.args.walk.walk(self.threads, self.fd_budget, self.one_fs_dev, self.no_links);
        // The first scan reads no extent map (`fill` does, after it); a rescan reads
        // them itself wherever the tree has the figures.
        let shared = self.args.shared != Sharing::Off && self.arena.shared_figures().is_some();
        Walk { shared, ..walk }
    }
}

/// Runs `dfdu browse`; returns the exit status (quitting exits the process directly).
pub fn run(args: &BrowseArgs, fs: Fs, threads: usize, fd_budget: usize) -> i32 {
    let arena = Arena::new();
    let sink = ArenaSink::new(&arena);
    let sink = Arc::new(sink);
    let no_links = HashSet::new();
    let prog = &args.prog;
    // The compared tree goes in first (imported, or scanned with the same options): its
    // errors come before any terminal use.
    let old_root = match &args.diff {
        Some(f) => match load_side(f, &arena, &args.walk, (threads, fd_budget), fs.stat_path, fs.scan) {
            Ok(side) => Some(side.root),
            Err(e) => {
                eprintln!("{prog} browse: {e}");
                return 1;
            }
        },
        None => None,
    };
    let start = match open_root(args, fs, &arena, &sink) {
        Ok(start) => start,
        Err(code) => return code,
    };
    let look =
        Look { ascii: args.ascii || !utf8_locale(), color: !args.no_color && !no_color_env(), si: args.sizes.si() };
    let session = match Session::start(look.color) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("{prog} browse: cannot use the terminal: {}", platform::errno_text(e));
            return 1;
        }
    };
    let place = trash::Place::from_env();
    let one_fs_dev = start.scan_from.as_ref().filter(|_| args.walk.one_fs).map(|(_, m)| m.dev);
    let ctx = Ctx { fs, arena: &arena, args, threads, fd_budget, no_links: &no_links, one_fs_dev, place };
    let browser = new_browser(args, &arena, &start, look, old_root);
    let Start { root, scan_from, first_line } = start;
    std::thread::scope(|s| {
        let scan_done = Arc::new(Done::default());
        let start = Instant::now();
        if let Some((cpath, meta)) = &scan_from {
            let (sink, done, ctx) = (sink.clone(), scan_done.clone(), &ctx);
            spawn_or_run(s, move || {
                // With `--shared`, where a bulk source serves the scan, it reads the
                // extents as it goes; by default they are read after it, in the background:
                // the workers wait for a bulk listing (XFS's reverse map: 1.35 s against
                // 0.13 s to the first screen on a 1.1M-entry image), and the first screen
                // must come as fast as without the figures.
                let inline = ctx.args.shared == Sharing::On && (ctx.fs.bulk)(cpath);
                if inline {
                    sink.keep_extent_files();
                }
                (ctx.fs.scan)(&Walk { shared: inline, ..ctx.walk() }, &sink, cpath, meta, root);
                if inline {
                    sink.finish_shared(ctx.threads);
                }
                done.set(start);
                if !inline && ctx.args.shared != Sharing::Off {
                    (ctx.fs.fill)(ctx.arena, cpath, root, ctx.threads, ctx.args.shared);
                }
            });
        } else {
            scan_done.set(start);
        }
        let mut code = ui(s, &ctx, session, browser, (sink, scan_done), first_line);
        if let Some(full) = arena.full() {
            eprintln!("{} browse: the tree is too large; {}", args.prog, full_lines(full)[1].to_lowercase());
            code = code.max(1);
        }
        // The scan may still be running: quitting does not wait for it.
        std::process::exit(code)
    })
}

/// The tree the browser opens: an imported one, or the root of the scan to come.
struct Start {
    root: u32,
    /// The directory to scan and its `stat` (`None` for an import).
    scan_from: Option<(CString, Meta)>,
    /// The status line's first message (what was imported).
    first_line: String,
}

/// Imports `--input`'s tree or adds the scan's root to the arena; `Err` holds the exit
/// status after the message, which goes out before the terminal is taken.
fn open_root(args: &BrowseArgs, fs: Fs, arena: &Arena, sink: &ArenaSink) -> Result<Start, i32> {
    let prog = &args.prog;
    let before = arena.entry_count() as u64;
    let Some(f) = &args.walk.input else {
        let path = os_bytes(&args.dir);
        let Ok(cpath) = CString::new(path.clone()) else {
            eprintln!("{prog} browse: invalid directory name");
            return Err(2);
        };
        let meta = stat_root(&cpath, fs.stat_path).map_err(|e| {
            eprintln!("{prog} browse: {e}");
            1
        })?;
        let root = sink.add_root(&path, &meta).map_err(|_| 1)?;
        return Ok(Start { root, scan_from: Some((cpath, meta)), first_line: String::new() });
    };
    let imported = import_file(f, arena).map_err(|e| {
        eprintln!("{prog} browse: {e}");
        1
    })?;
    let from = if f == "-" { "standard input".to_string() } else { escape(&os_bytes(f)) };
    let first_line = format!(
        "Imported {} entries from {from} (written by {})",
        grouped(arena.entry_count() as u64 - before),
        escape(imported.progname.as_bytes())
    );
    Ok(Start { root: imported.root, scan_from: None, first_line })
}

/// The browser over `start`'s tree, set up as the options say: sizes, the compared tree
/// (`old_root`), the title, and where a scanned tree's details come from.
fn new_browser<'a>(
    args: &BrowseArgs,
    arena: &'a Arena,
    start: &Start,
    look: Look,
    old_root: Option<u32>,
) -> Browser<'a> {
    let limits = Limits { read_only: args.read_only, imported: args.walk.input.is_some(), trash: args.trash };
    let mut browser = Browser::new(arena, start.root, look, limits);
    browser.set_apparent(args.sizes.apparent);
    if let Some(old) = old_root {
        browser.set_compare(old);
    }
    if let Some(abs) = start.scan_from.as_ref().and_then(|_| absolute_title(&args.dir)) {
        browser.set_root_title(abs);
    }
    if args.walk.input.is_none() {
        browser.set_mtime_source(Box::new(mtime_of_path));
        browser.set_stat_source(Box::new(stat_of_path));
        browser.set_mounts_source(Box::new(mounts_at_path));
    }
    browser
}

/// The scan root as the path line shows it: as given when absolute, else resolved from
/// the current directory (`.` shows where it is). `None` when it cannot be resolved.
fn absolute_title(path: &std::ffi::OsStr) -> Option<Vec<u8>> {
    if std::path::Path::new(path).is_absolute() {
        return None;
    }
    let resolved = std::fs::canonicalize(path).ok()?;
    Some(os_bytes(resolved.as_os_str()))
}

/// Mount points at or below `path` (a selection as the scan named it): its parent is
/// resolved to an absolute path the way the scan resolved it, its last name is kept.
#[cfg(unix)]
fn mounts_at_path(path: &[u8]) -> Option<u64> {
    use std::os::unix::ffi::OsStrExt;
    let cut = path.iter().rposition(|&b| b == b'/')?;
    let (parent, name) = (&path[..cut.max(1)], &path[cut + 1..]);
    let parent = if cut == 0 { b"/".to_vec() } else { parent.to_vec() };
    let mut abs = std::fs::canonicalize(std::ffi::OsStr::from_bytes(&parent)).ok()?.as_os_str().as_bytes().to_vec();
    if !abs.ends_with(b"/") {
        abs.push(b'/');
    }
    abs.extend_from_slice(name);
    delete::mounts_under(&abs)
}

#[cfg(not(unix))]
fn mounts_at_path(path: &[u8]) -> Option<u64> {
    // No mount table here (`platform::mount_points` says `None`); open_at never enters
    // a volume mounted in a folder, so the delete stays on its volume anyway.
    delete::mounts_under(path)
}

#[cfg(unix)]
pub(super) fn mtime_of_path(path: &[u8]) -> Option<i64> {
    use std::os::unix::ffi::OsStrExt;
    use std::os::unix::fs::MetadataExt;
    std::fs::symlink_metadata(std::ffi::OsStr::from_bytes(path)).ok().map(|m| m.mtime())
}

/// Mode, owner, group and mtime of `path` (not followed), with the owner's and group's
/// names from `/etc/passwd` and `/etc/group`.
#[cfg(unix)]
pub(super) fn stat_of_path(path: &[u8]) -> Option<EntryStat> {
    use std::io::Read;
    use std::os::unix::ffi::OsStrExt;
    use std::os::unix::fs::MetadataExt;
    // The first field of the first `name:x:id:...` line of `file` for `id`, from at most
    // 16 MiB of it (a huge file is no reason to stall the browser).
    let id_name = |file: &str, id: u32| -> Option<String> {
        let mut text = String::new();
        std::fs::File::open(file).ok()?.take(16 << 20).read_to_string(&mut text).ok()?;
        text.lines().find_map(|l| {
            let mut f = l.split(':');
            let name = f.next()?;
            (f.nth(1)?.parse::<u32>().ok()? == id && !name.is_empty()).then(|| name.to_string())
        })
    };
    let m = std::fs::symlink_metadata(std::ffi::OsStr::from_bytes(path)).ok()?;
    Some(EntryStat {
        mode: m.mode(),
        uid: m.uid(),
        gid: m.gid(),
        owner: id_name("/etc/passwd", m.uid()),
        group: id_name("/etc/group", m.gid()),
        mtime: m.mtime(),
    })
}

#[cfg(not(unix))]
pub(super) fn stat_of_path(_path: &[u8]) -> Option<EntryStat> {
    // No owners and modes of this kind here; the box shows what the scan knows.
    None
}

#[cfg(not(unix))]
pub(super) fn mtime_of_path(path: &[u8]) -> Option<i64> {
    let m = std::fs::symlink_metadata(String::from_utf8_lossy(path).as_ref()).ok()?;
    let t = m.modified().ok()?.duration_since(std::time::UNIX_EPOCH).ok()?;
    Some(t.as_secs() as i64)
}
