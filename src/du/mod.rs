//! The GNU du drop-in: runs the scanner on each argument, then walks what it recorded
//! in exactly the order GNU du's fts traversal would (readdir order; batches of up to
//! 100,000 entries sorted by inode number when a batch holds more than 10,000), so hard
//! links are charged to the same path, errors come out in the same order, and every
//! line is byte-for-byte what du prints.

pub mod cli;
pub mod records;

use crate::du::cli::{Deref, DuOptions};
use crate::du::records::{ItemKind, Keep, Records, Tree, REC_MOVED, REC_PARTIAL, REC_SORT_BY_INODE, REC_UNREADABLE};
use crate::meta::os_bytes;
use crate::meta::{Errno, Kind, Meta, Timespec};
use crate::text::quote::{quoteaf, quotef};
use crate::text::units::format_size;
use crate::walk::reader::Reader;
use crate::walk::scan::{self, Measure, Walk};
use std::collections::{HashMap, HashSet};
use std::ffi::{CString, OsString};
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
        threads,
        fd_budget,
    };
    let names: Vec<Vec<u8>> = match &o.files0_from {
        Some(f) => match read_files0(o, f) {
            Ok(n) => n,
            Err(code) => return code,
        },
        None if o.operands.is_empty() => vec![b".".to_vec()],
        None => o.operands.iter().map(|s| os_bytes(s)).collect(),
    };
    let last = names.len().saturating_sub(1);
    for (i, name) in names.iter().enumerate() {
        if o.files0_from.as_deref().is_some_and(|f| f == "-") && name == b"-" {
            run.error(format_args!("when reading file names from stdin, no file name of {} allowed", quoteaf(name)));
            continue;
        }
        if name.is_empty() {
            match &o.files0_from {
                None => run.error(format_args!("invalid zero-length file name")),
                Some(f) => run.error(format_args!("{}:{}: invalid zero-length file name", quotef(&os_bytes(f)), i + 1)),
            }
            continue;
        }
        run.operand::<R>(name, i == last && o.files0_from.is_none());
    }
    if o.total {
        let total = run.total;
        run.print(&total, b"total");
    }
    if run.out.flush().is_err() {
        return write_failed(&o.prog);
    }
    i32::from(!run.ok)
}

/// Standard output failed. GNU du flushes after every line, so the failure is already
/// behind it when gnulib's `close_stdout` reports it, and then without a reason: just
/// "du: write error" (tests/du_compat.rs `write_error_on_a_full_device`).
fn write_failed(prog: &str) -> i32 {
    eprintln!("{prog}: write error");
    1
}

/// Reads the NUL-separated names of `--files0-from`.
fn read_files0(o: &DuOptions, f: &OsString) -> Result<Vec<Vec<u8>>, i32> {
    let errno_of = |e: &io::Error| crate::platform::errno_text(Errno(e.raw_os_error().unwrap_or(5)));
    let mut data = Vec::new();
    let read = if f == "-" {
        io::Read::read_to_end(&mut io::stdin(), &mut data)
    } else {
        match std::fs::File::open(f) {
            Ok(mut file) => io::Read::read_to_end(&mut file, &mut data),
            Err(e) => {
                eprintln!("{}: cannot open {} for reading: {}", o.prog, quoteaf(&os_bytes(f)), errno_of(&e));
                return Err(1);
            }
        }
    };
    if let Err(e) = read {
        eprintln!("{}: {}: read error: {}", o.prog, quotef(&os_bytes(f)), errno_of(&e));
        return Err(1);
    }
    let mut names: Vec<Vec<u8>> = data.split(|&b| b == 0).map(<[u8]>::to_vec).collect();
    if data.last().is_none_or(|&b| b == 0) {
        names.pop();
    }
    Ok(names)
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
        let _ = self.out.flush();
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
        let bytes = match self.measure() {
            Measure::Apparent => meta.size,
            Measure::Disk => meta.disk_bytes(),
        };
        let time = match self.o.time {
            Some(scan::TimeKind::Atime) => meta.atime,
            Some(scan::TimeKind::Ctime) => meta.ctime,
            _ => meta.mtime,
        };
        Acc { bytes, count: 1, time }
    }

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
        let meta = match R::stat_path(&cpath, follow_root) {
            Ok(m) => m,
            Err(e) => {
                let dangling = follow_root && e == Errno::NOENT && R::stat_path(&cpath, false).is_ok();
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
        let empty = HashSet::new();
        let dedup_seen = self.hash_all && self.dedup();
        let walk = Walk {
            threads: self.threads,
            follow_all: o.deref == Deref::All,
            follow_root,
            one_fs_dev: o.one_fs.then_some(meta.dev),
            exclude: (!o.exclude.is_empty()).then_some(&o.exclude),
            seen_before: if dedup_seen { &self.seen } else { &empty },
            claim_dirs: self.dedup(),
            fd_budget: self.fd_budget,
            check_moved: o.deref != Deref::All,
        };
        let keep = Keep {
            measure: self.measure(),
            time: o.time,
            files_depth: o.all.then(|| o.max_depth.min(u32::MAX as u64) as u32),
            all_candidates: o.deref == Deref::All && self.dedup(),
            collect_inodes: dedup_seen && o.deref != Deref::All && !is_last,
            claims: o.deref == Deref::All && self.dedup(),
            fold_links: self.dedup() && o.max_depth == 0 && !o.all && o.deref != Deref::All,
        };
        let sink = Records::new(keep, &meta);
        scan::scan::<R, Records>(&walk, &sink, &cpath, &meta);
        let mut tree = sink.into_tree();
        if tree.overflow {
            self.error(format_args!("{}: too many entries for one scan", quotef(&path)));
        }
        sort_items(&mut tree);
        self.walk(&tree, path);
        if self.hash_all && self.dedup() {
            self.seen.extend(tree.inodes.iter().copied());
        }
    }

    /// The ordered pass over one argument's tree: GNU's `process_file` for every entry,
    /// with an explicit stack instead of recursion.
    fn walk(&mut self, tree: &Tree, mut path: Vec<u8>) {
        struct Frame {
            rec: u32,
            next: usize,
            end: usize,
            depth: u64,
            path_len: usize,
            ent: Acc,
            sub: Acc,
        }
        let claims: HashMap<(u64, u64), u32> = tree.claims.iter().copied().collect();
        let mut stack: Vec<Frame> = Vec::new();
        let enter = |run: &mut Self, stack: &mut Vec<Frame>, rec: u32, depth: u64, path: &[u8], path_len: usize| {
            let r = &tree.recs[rec as usize];
            if r.flags & REC_UNREADABLE != 0 {
                run.error(format_args!(
                    "cannot read directory {}: {}",
                    quoteaf(path),
                    Self::errno_text(Errno(r.errno))
                ));
            }
            let (lo, hi) = item_range(tree, rec);
            let ent = Acc {
                bytes: r.files_bytes,
                count: r.files_count,
                time: tree.times.as_ref().map_or(Timespec::MIN, |t| t.recs[rec as usize].1),
            };
            run.total.add(&ent);
            stack.push(Frame { rec, next: lo, end: hi, depth, path_len, ent, sub: Acc::default() });
        };
        enter(self, &mut stack, 0, 0, &path, 0);
        while let Some(top) = stack.last_mut() {
            if top.next < top.end {
                let i = top.next;
                top.next += 1;
                let it = &tree.items[i];
                let depth = top.depth + 1;
                let parent_len = path.len();
                match it.kind {
                    ItemKind::Dir | ItemKind::Alias => {
                        let rec = if it.kind == ItemKind::Dir {
                            it.target
                        } else {
                            match claims.get(&(it.dev, it.ino)) {
                                Some(&r) => r,
                                None => continue,
                            }
                        };
                        let r = &tree.recs[rec as usize];
                        if self.hash_all && self.dedup() && !self.seen.insert((r.dev, r.ino)) {
                            continue;
                        }
                        push_name(&mut path, tree.name(it));
                        enter(self, &mut stack, rec, depth, &path, parent_len);
                    }
                    ItemKind::Candidate => {
                        if self.dedup() && !self.seen.insert((it.dev, it.ino)) {
                            continue;
                        }
                        let acc = Acc { bytes: it.size_bytes, count: 1, time: item_time(tree, i) };
                        top.ent.add(&acc);
                        self.total.add(&acc);
                        if self.o.all && depth <= self.o.max_depth {
                            self.print_child(&acc, &mut path, tree.name(it), depth);
                        }
                    }
                    ItemKind::File => {
                        if depth <= self.o.max_depth {
                            let acc = Acc { bytes: it.size_bytes, count: 1, time: item_time(tree, i) };
                            self.print_child(&acc, &mut path, tree.name(it), depth);
                        }
                    }
                    ItemKind::NoAccess => {
                        push_name(&mut path, tree.name(it));
                        let msg = cannot_access(&path, Errno(it.target as i32));
                        path.truncate(parent_len);
                        self.error(format_args!("{msg}"));
                    }
                }
                continue;
            }
            let f = stack.pop().expect("loop runs while the stack is not empty");
            let r = &tree.recs[f.rec as usize];
            if r.flags & REC_MOVED != 0 {
                // GNU fts finds the parent gone when it climbs back out ("disinformation":
                // ENOENT) and stops this argument: no line for it or its ancestors.
                self.error(format_args!("fts_read failed: {}: {}", quotef(&path), Self::errno_text(Errno::NOENT)));
                return;
            }
            let self_time = tree.times.as_ref().map_or(Timespec::MIN, |t| t.recs[f.rec as usize].0);
            let me = Acc { bytes: r.self_bytes, count: 1, time: self_time };
            self.total.add(&me);
            if r.flags & REC_PARTIAL != 0 {
                self.error(format_args!("{}: {}", quotef(&path), Self::errno_text(Errno(r.errno))));
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
            self.print_if(&shown, &path, f.depth);
            path.truncate(f.path_len);
        }
    }

    fn print_child(&mut self, acc: &Acc, path: &mut Vec<u8>, name: &[u8], depth: u64) {
        let len = path.len();
        push_name(path, name);
        self.print_if(acc, path, depth);
        path.truncate(len);
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
        let mut line = format_size(n, o.scale).into_bytes();
        if o.time.is_some() {
            line.push(b'\t');
            match crate::platform::local_time(acc.time.sec) {
                Some(lt) => {
                    line.extend_from_slice(crate::text::timefmt::format(&o.time_format, acc.time, &lt).as_bytes())
                }
                None => {
                    // As GNU du: the number, and a warning that does not change the exit
                    // status. It flushes what stdout holds first, as error() does.
                    let n = acc.time.sec.to_string();
                    if self.out.write_all(&line).and_then(|()| self.out.flush()).is_err() {
                        std::process::exit(write_failed(&o.prog));
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
        if self.out.write_all(&line).is_err() {
            std::process::exit(write_failed(&o.prog));
        }
    }
}

fn item_time(tree: &Tree, i: usize) -> Timespec {
    tree.times.as_ref().map_or(Timespec::MIN, |t| t.items[i])
}

/// The items of directory `rec` (they are sorted by directory).
fn item_range(tree: &Tree, rec: u32) -> (usize, usize) {
    let lo = tree.items.partition_point(|it| it.dir < rec);
    let hi = lo + tree.items[lo..].partition_point(|it| it.dir == rec);
    (lo, hi)
}

/// Puts items in fts order: by directory, then by listing position, except that a batch
/// of more than 10,000 entries is sorted by inode number where the file system calls for it.
fn sort_items(tree: &mut Tree) {
    let recs = &tree.recs;
    let key = |it: &records::Item| -> (u32, u32, u64, u32) {
        let r = &recs[it.dir as usize];
        let batch = it.idx / FTS_BATCH_ENTRIES;
        let batch_len = r.n_entries.saturating_sub(batch * FTS_BATCH_ENTRIES).min(FTS_BATCH_ENTRIES);
        if r.flags & REC_SORT_BY_INODE != 0 && batch_len > FTS_SORT_THRESHOLD {
            (it.dir, batch, it.ino, it.idx)
        } else {
            (it.dir, batch, it.idx as u64, 0)
        }
    };
    match tree.times.as_mut() {
        None => tree.items.sort_unstable_by_key(key),
        Some(times) => {
            let mut order: Vec<usize> = (0..tree.items.len()).collect();
            order.sort_unstable_by_key(|&i| key(&tree.items[i]));
            tree.items = order.iter().map(|&i| tree.items[i]).collect();
            times.items = order.iter().map(|&i| times.items[i]).collect();
        }
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
