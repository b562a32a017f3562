//! The GNU du drop-in: runs the scanner on each argument and, at the same time, walks what
//! it records in exactly the order GNU du's fts traversal would (readdir order; batches of
//! up to 100,000 entries sorted by inode number when a batch holds more than 10,000), so
//! hard links are charged to the same path, errors come out in the same order, and every
//! line is byte-for-byte what du prints. A directory's lines go out as soon as everything
//! before them in that order is known, and its items are dropped once printed.

pub mod cli;
pub mod records;

use crate::du::cli::{Deref, DuOptions};
use crate::du::records::{
    DirItems, DirRec, Entered, ItemKind, Keep, Records, PENDING_BUDGET, REC_MOVED, REC_PARTIAL, REC_SORT_BY_INODE,
    REC_UNREADABLE,
};
use crate::meta::os_bytes;
use crate::meta::{Errno, Kind, Measure, Meta, Timespec};
use crate::platform::Follow;
use crate::text::quote::{quoteaf, quotef};
use crate::text::units::format_size;
use crate::walk::reader::Reader;
use crate::walk::scan::{self, Walk};
use std::collections::{HashMap, HashSet};
use std::ffi::{CStr, CString, OsString};
use std::io::{self, Write};

/// fts reads big directories in batches of this many entries...
const FTS_BATCH_ENTRIES: u32 = 100_000;
/// ...and sorts a batch by inode number when it holds more than this many.
const FTS_SORT_THRESHOLD: u32 = 10_000;

/// Size, inode count and newest time of a set of entries (gnulib's `duinfo`).
#[derive(Clone, Copy, Default)]
struct Acc {
    bytes: u64,
    count: u64,
    time: Timespec,
}

impl Acc {
    fn add(&mut self, o: &Acc) {
        self.bytes = self.bytes.saturating_add(o.bytes);
        self.count += o.count;
        self.time = self.time.max(o.time);
    }
}

/// State across all arguments of one du run.
struct Run<'o, W: Write> {
    o: &'o DuOptions,
    out: W,
    /// (dev, ino) already counted: GNU's `di_files`.
    seen: HashSet<(u64, u64)>,
    /// Hash every entry, not only multiply-linked files (several arguments, or -L).
    hash_all: bool,
    total: Acc,
    ok: bool,
    /// Standard output failed once; nothing more is written to it (GNU du goes on too, and
    /// says "write error" when it closes standard output).
    write_failed: bool,
    threads: usize,
    fd_budget: usize,
}

/// Runs du with parsed options; returns the exit status.
pub fn run<R: Reader>(o: &DuOptions, threads: usize, fd_budget: usize) -> i32 {
    let stdout = io::stdout();
    let out = io::BufWriter::with_capacity(64 * 1024, stdout.lock());
    let mut run = Run {
        o,
        out,
        seen: HashSet::new(),
        hash_all: o.files0_from.is_some() || o.operands.len() > 1 || o.deref == Deref::All,
        total: Acc::default(),
        ok: true,
        write_failed: false,
        threads,
        fd_budget,
    };
    match &o.files0_from {
        Some(f) => {
            if let Err(code) = run.files0::<R>(f) {
                return code;
            }
        }
        None if o.operands.is_empty() => run.operand::<R>(b".", true),
        None => {
            let last = o.operands.len() - 1;
            for (i, name) in o.operands.iter().enumerate() {
                let name = os_bytes(name);
                if name.is_empty() {
                    run.error(format_args!("invalid zero-length file name"));
                    continue;
                }
                run.operand::<R>(&name, i == last);
            }
        }
    }
    if o.total {
        let total = run.total;
        run.print(&total, b"total");
    }
    if run.write_failed || run.out.flush().is_err() {
        // GNU du flushes after every line, so by the time it closes standard output the
        // error is an old one and its message carries no errno text (gnulib close_stdout).
        eprintln!("{}: write error", o.prog);
        return 1;
    }
    i32::from(!run.ok)
}

/// The names of `--files0-from`, read as they are needed (GNU du's `argv_iter`): memory
/// holds one name and one buffer however long the list, and each name is done before
/// the next is read, so output and messages come as the list does.
struct Names0<S: io::Read> {
    src: S,
    buf: Box<[u8]>,
    start: usize,
    end: usize,
    eof: bool,
}

impl<S: io::Read> Names0<S> {
    fn new(src: S) -> Self {
        Names0 { src, buf: vec![0; 64 * 1024].into_boxed_slice(), start: 0, end: 0, eof: false }
    }

    /// The next name into `name`: `Ok(false)` at the end of the list. A last name
    /// without its NUL still counts. `before_read` runs before each read that may block.
    fn next(&mut self, name: &mut Vec<u8>, before_read: &mut dyn FnMut()) -> io::Result<bool> {
        name.clear();
        loop {
            if let Some(nul) = self.buf[self.start..self.end].iter().position(|&b| b == 0) {
                name.extend_from_slice(&self.buf[self.start..self.start + nul]);
                self.start += nul + 1;
                return Ok(true);
            }
            name.extend_from_slice(&self.buf[self.start..self.end]);
            self.start = 0;
            self.end = 0;
            if self.eof {
                return Ok(false);
            }
            before_read();
            let n = loop {
                match self.src.read(&mut self.buf) {
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                    r => break r?,
                }
            };
            if n == 0 {
                self.eof = true;
                return Ok(!name.is_empty());
            }
            self.end = n;
        }
    }
}

impl<W: Write> Run<'_, W> {
    /// Does each name of `--files0-from` as it is read, with GNU du's messages: an empty
    /// name or `-` from stdin is an error for that name only; a read error ends the
    /// list (after the names before it were done).
    fn files0<R: Reader>(&mut self, f: &OsString) -> Result<(), i32> {
        let errno_of = |e: &io::Error| crate::platform::errno_text(Errno(e.raw_os_error().unwrap_or(5)));
        let from_stdin = f == "-";
        let src: Box<dyn io::Read> = if from_stdin {
            Box::new(io::stdin().lock())
        } else {
            match std::fs::File::open(f) {
                Ok(file) => Box::new(file),
                Err(e) => {
                    eprintln!("{}: cannot open {} for reading: {}", self.o.prog, quoteaf(&os_bytes(f)), errno_of(&e));
                    return Err(1);
                }
            }
        };
        let mut names = Names0::new(src);
        let mut name = Vec::new();
        let mut number: u64 = 0;
        loop {
            let out = &mut self.out;
            // Before waiting for more names, what is done so far goes out.
            match names.next(&mut name, &mut || drop(out.flush())) {
                Ok(true) => {}
                Ok(false) => return Ok(()),
                Err(e) => {
                    self.error(format_args!("{}: read error: {}", quotef(&os_bytes(f)), errno_of(&e)));
                    return Ok(());
                }
            }
            number += 1;
            if from_stdin && name == b"-" {
                self.error(format_args!(
                    "when reading file names from stdin, no file name of {} allowed",
                    quoteaf(&name)
                ));
                continue;
            }
            if name.is_empty() {
                self.error(format_args!("{}:{number}: invalid zero-length file name", quotef(&os_bytes(f))));
                continue;
            }
            self.operand::<R>(&name, false);
        }
    }
}

/// The debugging knob `DFDU_DEBUG_PENDING_BUDGET=BYTES` (docs/design.md) replaces
/// `PENDING_BUDGET`, so that tests can make the scan wait for the ordered pass on small
/// trees.
fn pending_budget() -> usize {
    std::env::var("DFDU_DEBUG_PENDING_BUDGET").ok().and_then(|v| v.parse().ok()).unwrap_or(PENDING_BUDGET)
}

/// fts_open trims two or more trailing slashes down to one.
fn fts_root(name: &[u8]) -> &[u8] {
    let mut len = name.len();
    if len > 2 && name[len - 1] == b'/' {
        while len > 1 && name[len - 2] == b'/' {
            len -= 1;
        }
    }
    &name[..len]
}

impl<W: Write> Run<'_, W> {
    fn error(&mut self, msg: std::fmt::Arguments) {
        if !self.write_failed && self.out.flush().is_err() {
            self.write_failed = true;
        }
        eprintln!("{}: {}", self.o.prog, msg);
        self.ok = false;
    }

    fn errno_text(e: Errno) -> String {
        crate::platform::errno_text(e)
    }

    fn dedup(&self) -> bool {
        !self.o.count_links
    }

    fn measure(&self) -> Measure {
        if self.o.apparent {
            Measure::Apparent
        } else {
            Measure::Disk
        }
    }

    fn acc_of(&self, meta: &Meta) -> Acc {
        Acc { bytes: records::measure(meta, self.measure()), count: 1, time: records::time_of(meta, self.o.time) }
    }

    /// One argument: stat'ed (and checked against the excludes and what was counted
    /// before) here; a directory is scanned and walked by `tree`.
    fn operand<R: Reader>(&mut self, name: &[u8], is_last: bool) {
        let o = self.o;
        let path = fts_root(name).to_vec();
        if !o.exclude.is_empty() && o.exclude.matches(&path) {
            return;
        }
        let Ok(cpath) = CString::new(path.clone()) else {
            return;
        };
        let follow_root = o.deref != Deref::None;
        let meta = match R::stat_path(&cpath, Follow::when(follow_root)) {
            Ok(m) => m,
            Err(e) => {
                let dangling = follow_root && e == Errno::NOENT && R::stat_path(&cpath, Follow::No).is_ok();
                let msg = cannot_access(&path, if dangling { Errno(0) } else { e });
                self.error(format_args!("{msg}"));
                return;
            }
        };
        let hashed = self.dedup() && (self.hash_all || (meta.kind != Kind::Dir && meta.nlink > 1));
        if hashed && !self.seen.insert((meta.dev, meta.ino)) {
            return;
        }
        if meta.kind != Kind::Dir {
            let acc = self.acc_of(&meta);
            self.total.add(&acc);
            self.print_if(&acc, &path, 0);
            return;
        }
        self.tree::<R>(path, &cpath, &meta, is_last);
    }

    /// A directory argument: the scan and the ordered pass over it, at the same time;
    /// then what it counted joins `self.seen` for the arguments after it.
    fn tree<R: Reader>(&mut self, path: Vec<u8>, cpath: &CStr, meta: &Meta, is_last: bool) {
        let empty = HashSet::new();
        let dedup_seen = self.hash_all && self.dedup();
        // The scan reads the entries counted under earlier arguments while the ordered
        // pass adds this argument's to `self.seen`; they are merged when both are done.
        let prior = std::mem::take(&mut self.seen);
        let walk = self.walk_opts(self.o, meta, if dedup_seen { &prior } else { &empty });
        let keep = self.keep(dedup_seen && !is_last);
        let rest = self.scan_and_walk::<R>(&walk, keep, cpath, meta, &prior, path.clone());
        if rest.overflow {
            self.error(format_args!("{}: too many entries for one scan", quotef(&path)));
        }
        let mut seen = prior;
        if seen.len() < self.seen.len() {
            std::mem::swap(&mut seen, &mut self.seen);
        }
        seen.extend(self.seen.drain());
        self.seen = seen;
        if self.hash_all && self.dedup() {
            self.seen.extend(rest.inodes);
        }
    }

    /// How the scanner walks a directory argument (`meta` its root's): du's options,
    /// with `seen_before` the entries earlier arguments counted.
    fn walk_opts<'a>(&self, o: &'a DuOptions, meta: &Meta, seen_before: &'a HashSet<(u64, u64)>) -> Walk<'a> {
        Walk {
            threads: self.threads,
            follow_all: o.deref == Deref::All,
            follow_root: o.deref != Deref::None,
            one_fs_dev: o.one_fs.then_some(meta.dev),
            exclude: (!o.exclude.is_empty()).then_some(&o.exclude),
            seen_before,
            claim_dirs: self.dedup(),
            fd_budget: self.fd_budget,
            check_moved: o.deref != Deref::All,
            shared: false,
            exclude_caches: false,
            exclude_kernfs: false,
        }
    }

    /// What the records keep of a directory argument; `collect_inodes` when a later
    /// argument needs to know what this one counted.
    fn keep(&self, collect_inodes: bool) -> Keep {
        let o = self.o;
        let fold_links = self.dedup() && o.max_depth == 0 && !o.all && o.deref != Deref::All;
        Keep {
            measure: self.measure(),
            time: o.time,
            files_depth: o.all.then(|| o.max_depth.min(u32::MAX as u64) as u32),
            all_candidates: o.deref == Deref::All && self.dedup(),
            collect_inodes: collect_inodes && o.deref != Deref::All,
            claims: o.deref == Deref::All && self.dedup(),
            fold_links,
            fold_subtrees: fold_links && !self.hash_all,
            pending_budget: pending_budget(),
        }
    }

    /// Runs the scan into the records on a thread of its own while the ordered pass walks
    /// them here; returns what is left of the records once both are over.
    fn scan_and_walk<R: Reader>(
        &mut self,
        walk: &Walk,
        keep: Keep,
        cpath: &CStr,
        meta: &Meta,
        prior: &HashSet<(u64, u64)>,
        path: Vec<u8>,
    ) -> records::Rest {
        let sink = Records::new(keep, meta);
        let scan_into = |sink: &Records| {
            /// Closes the sink even if the scan unwinds, so the ordered pass ends.
            struct Close<'a>(&'a Records);
            impl Drop for Close<'_> {
                fn drop(&mut self) {
                    self.0.close();
                }
            }
            let _close = Close(sink);
            scan::scan::<R, Records>(walk, sink, cpath, meta);
        };
        let mut alone = None;
        std::thread::scope(|s| {
            if std::thread::Builder::new().spawn_scoped(s, || scan_into(&sink)).is_ok() {
                self.walk(&sink, prior, path);
                return;
            }
            // No thread for the scan (a low RLIMIT_NPROC, a pids limit): it runs here
            // first, never held back (no ordered pass would take what it holds), and
            // the ordered pass after it.
            let unthrottled = Records::new(Keep { pending_budget: usize::MAX, ..keep }, meta);
            scan_into(&unthrottled);
            self.walk(&unthrottled, prior, path);
            alone = Some(unthrottled);
        });
        alone.unwrap_or(sink).into_rest()
    }

    /// Whether (dev, ino) is met for the first time (this argument's pass or an earlier one).
    fn first(&mut self, prior: &HashSet<(u64, u64)>, key: (u64, u64)) -> bool {
        !prior.contains(&key) && self.seen.insert(key)
    }

    /// Starts directory `rec` of the ordered pass (waiting for the scan to have it all).
    /// Returns false for a folded subtree (`Keep::fold_subtrees`), which is summed into
    /// its parent's frame at once: nothing below it can print.
    fn enter(
        &mut self,
        sink: &Records,
        stack: &mut Vec<Frame>,
        rec: u32,
        depth: u64,
        path: &[u8],
        path_len: usize,
    ) -> bool {
        let (view, mut items) = match sink.enter(rec) {
            Entered::Dir(view, items) => (view, items),
            Entered::Folded(view) => {
                let me = Acc { bytes: view.rec.self_bytes, count: 1, time: view.self_time };
                let below = Acc { bytes: view.rec.files_bytes, count: view.rec.files_count, time: view.files_time };
                self.total.add(&me);
                self.total.add(&below);
                if let Some(parent) = stack.last_mut() {
                    if !self.o.separate_dirs {
                        parent.ent.add(&me);
                    }
                    parent.sub.add(&below);
                }
                return false;
            }
        };
        let r = view.rec;
        if r.flags.contains(REC_UNREADABLE) {
            self.error(format_args!("cannot read directory {}: {}", quoteaf(path), Self::errno_text(Errno(r.errno))));
        }
        sort_items(&r, &mut items);
        let ent = Acc { bytes: r.files_bytes, count: r.files_count, time: view.files_time };
        self.total.add(&ent);
        stack.push(Frame { rec, items, next: 0, depth, path_len, ent, sub: Acc::default() });
        true
    }

    /// The ordered pass over one argument's tree: GNU's `process_file` for every entry,
    /// with an explicit stack instead of recursion. It runs while the scan goes on.
    fn walk(&mut self, sink: &Records, prior: &HashSet<(u64, u64)>, mut path: Vec<u8>) {
        // With -L a directory is listed under whichever name the scan met first: wait for
        // the whole scan, then follow the claims.
        let claims: HashMap<(u64, u64), u32> = if self.o.deref == Deref::All { sink.claims() } else { HashMap::new() };
        let mut stack: Vec<Frame> = Vec::new();
        self.enter(sink, &mut stack, 0, 0, &path, 0);
        while let Some(top) = stack.last_mut() {
            if top.next < top.items.items.len() {
                let i = top.next;
                top.next += 1;
                self.item(sink, &mut stack, i, prior, &claims, &mut path);
                continue;
            }
            let f = stack.pop().expect("loop runs while the stack is not empty");
            if !self.leave(sink, f, &mut stack, &mut path) {
                return;
            }
        }
    }

    /// Item `i` of the directory on top of `stack` (`path` is that directory's): a
    /// subdirectory is entered, a file counted and printed as -a and --max-depth say, an
    /// entry that could not be stat'ed reported.
    fn item(
        &mut self,
        sink: &Records,
        stack: &mut Vec<Frame>,
        i: usize,
        prior: &HashSet<(u64, u64)>,
        claims: &HashMap<(u64, u64), u32>,
        path: &mut Vec<u8>,
    ) {
        let top = stack.last_mut().expect("an item belongs to the directory on top");
        let it = top.items.items[i];
        let depth = top.depth + 1;
        let parent_len = path.len();
        match it.kind {
            ItemKind::Dir | ItemKind::Alias => {
                let rec = if it.kind == ItemKind::Dir {
                    it.target
                } else {
                    match claims.get(&(it.dev, it.ino)) {
                        Some(&r) => r,
                        None => return,
                    }
                };
                push_name(path, top.items.name(&it));
                if self.hash_all && self.dedup() && !self.first(prior, sink.key(rec)) {
                    path.truncate(parent_len);
                    return;
                }
                if !self.enter(sink, stack, rec, depth, path, parent_len) {
                    path.truncate(parent_len);
                }
            }
            ItemKind::Candidate => {
                if self.dedup() && !self.first(prior, (it.dev, it.ino)) {
                    return;
                }
                let acc = Acc { bytes: it.size_bytes, count: 1, time: top.items.time(i) };
                top.ent.add(&acc);
                self.total.add(&acc);
                if self.o.all && depth <= self.o.max_depth {
                    push_name(path, top.items.name(&it));
                    self.print_if(&acc, path, depth);
                    path.truncate(parent_len);
                }
            }
            ItemKind::File => {
                if depth <= self.o.max_depth {
                    let acc = Acc { bytes: it.size_bytes, count: 1, time: top.items.time(i) };
                    push_name(path, top.items.name(&it));
                    self.print_if(&acc, path, depth);
                    path.truncate(parent_len);
                }
            }
            ItemKind::NoAccess => {
                push_name(path, top.items.name(&it));
                let msg = cannot_access(path, Errno(it.target as i32));
                path.truncate(parent_len);
                self.error(format_args!("{msg}"));
            }
        }
    }

    /// Ends directory `f` of the ordered pass (its items all done): its own size joins
    /// the totals, its line is printed and its figures go to the parent on the stack.
    /// Returns false when the argument stops here (the directory moved away meanwhile).
    fn leave(&mut self, sink: &Records, f: Frame, stack: &mut [Frame], path: &mut Vec<u8>) -> bool {
        drop(f.items);
        let view = sink.leave(f.rec);
        let r = view.rec;
        if r.flags.contains(REC_MOVED) {
            // GNU fts finds the parent gone when it climbs back out ("disinformation":
            // ENOENT) and stops this argument: no line for it or its ancestors.
            self.error(format_args!("fts_read failed: {}: {}", quotef(path), Self::errno_text(Errno::NOENT)));
            return false;
        }
        let me = Acc { bytes: r.self_bytes, count: 1, time: view.self_time };
        self.total.add(&me);
        if r.flags.contains(REC_PARTIAL) {
            self.error(format_args!("{}: {}", quotef(path), Self::errno_text(Errno(r.errno))));
        }
        let mut shown = me;
        shown.add(&f.ent);
        if !self.o.separate_dirs {
            shown.add(&f.sub);
        }
        if let Some(parent) = stack.last_mut() {
            if !self.o.separate_dirs {
                parent.ent.add(&me);
            }
            parent.sub.add(&f.ent);
            parent.sub.add(&f.sub);
        }
        self.print_if(&shown, path, f.depth);
        path.truncate(f.path_len);
        true
    }

    /// Prints a line when `depth` is within --max-depth and the threshold lets it through.
    fn print_if(&mut self, acc: &Acc, path: &[u8], depth: u64) {
        if depth > self.o.max_depth && depth != 0 {
            return;
        }
        let v = if self.o.inodes { acc.count } else { acc.bytes } as i128;
        let t = self.o.threshold;
        if if t < 0 { v <= -t } else { v >= t } {
            self.print(acc, path);
        }
    }

    fn print(&mut self, acc: &Acc, path: &[u8]) {
        let o = self.o;
        let n = if o.inodes { acc.count } else { acc.bytes };
        // A saturated sum is printed as GNU du prints it (`print_only_size`).
        let mut line = if n == u64::MAX { b"Infinity".to_vec() } else { format_size(n, o.scale).into_bytes() };
        if o.time.is_some() {
            line.push(b'\t');
            match crate::platform::local_time(acc.time.sec) {
                Some(lt) => {
                    line.extend_from_slice(&crate::text::timefmt::format(&o.time_format, acc.time, &lt));
                    // GNU du's `%s` runs mktime, which loads the zone again (see text::tz).
                    if crate::text::timefmt::runs_mktime(&o.time_format) {
                        crate::platform::reload_zone();
                    }
                }
                None => {
                    // As GNU du: the number, and a warning that does not change the exit
                    // status. It flushes what stdout holds first, as error() does.
                    let n = acc.time.sec.to_string();
                    if !self.write_failed && self.out.write_all(&line).and_then(|()| self.out.flush()).is_err() {
                        self.write_failed = true;
                    }
                    line.clear();
                    eprintln!("{}: time {} is out of range", o.prog, crate::text::quote::quote(n.as_bytes()));
                    line.extend_from_slice(n.as_bytes());
                }
            }
        }
        line.push(b'\t');
        line.extend_from_slice(path);
        line.push(if o.null { 0 } else { b'\n' });
        if !self.write_failed && self.out.write_all(&line).is_err() {
            self.write_failed = true;
        }
    }
}

/// One directory of the ordered pass.
struct Frame {
    rec: u32,
    items: DirItems,
    next: usize,
    depth: u64,
    path_len: usize,
    ent: Acc,
    sub: Acc,
}

/// Puts a directory's items in fts order: by listing position, except that a batch of
/// more than 10,000 entries is sorted by inode number where the file system calls for it.
fn sort_items(r: &DirRec, d: &mut DirItems) {
    let key = |it: &records::Item| -> (u32, u64, u32) {
        let batch = it.idx / FTS_BATCH_ENTRIES;
        let batch_len = r.n_entries.saturating_sub(batch * FTS_BATCH_ENTRIES).min(FTS_BATCH_ENTRIES);
        if r.flags.contains(REC_SORT_BY_INODE) && batch_len > FTS_SORT_THRESHOLD {
            (batch, it.ino, it.idx)
        } else {
            (batch, it.idx as u64, 0)
        }
    };
    if d.items.windows(2).all(|w| key(&w[0]) <= key(&w[1])) {
        return;
    }
    if d.times.is_empty() {
        d.items.sort_unstable_by_key(key);
    } else {
        let mut order: Vec<usize> = (0..d.items.len()).collect();
        order.sort_unstable_by_key(|&i| key(&d.items[i]));
        d.items = order.iter().map(|&i| d.items[i]).collect();
        d.times = order.iter().map(|&i| d.times[i]).collect();
    }
}

/// "cannot access 'x': reason"; errno 0 (a dangling symlink being followed) has no reason,
/// as with GNU du.
fn cannot_access(path: &[u8], e: Errno) -> String {
    if e.0 == 0 {
        format!("cannot access {}", quoteaf(path))
    } else {
        format!("cannot access {}: {}", quoteaf(path), crate::platform::errno_text(e))
    }
}

/// Appends `/name` to a path as fts does (no second slash after a root ending in `/`).
fn push_name(path: &mut Vec<u8>, name: &[u8]) {
    if !path.ends_with(b"/") {
        path.push(b'/');
    }
    path.extend_from_slice(name);
}
