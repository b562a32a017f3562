//! The arena's sink: keeps every scanned entry in the `Arena`, so that `dfdu scan`,
//! the export and the browser see the whole tree — while the scan is still running.
//!
//! A listing gets one contiguous id range (`listed` reserves it before any chunk of the
//! directory is stat'ed; for a big folder `reserve_early` reserves a bound on it while it
//! is still being listed, `commit_early` writes the plain entries of its chunks there at
//! once, and `listed` gives back what the bound held beyond the listing, or moves the
//! entries to a range of the listing's size if the folder grew past it: `moving` keeps
//! commits out meanwhile); each commit writes its entries into that range, adds their
//! sizes to the directory (only: a subdirectory adds its totals to its parent once it is
//! done, see `arena/mod.rs`), and creates records for subdirectories. `written` publishes the
//! children and finishes the directory's own unit of work.
//! Multiply-linked files count once per (dev, ino): the first name committed is counted,
//! later names carry `F_DUP_LINK` (which name wins depends on thread timing; totals do not).

use crate::meta::{Errno, Kind, Meta};
use crate::text::quote::walk_problem;
use crate::tree::arena::{self, Arena, Flags, NewEntry, NO_DIR, NO_ENTRY};
use crate::tree::path::dir_path;
use crate::tree::sharing::{Collector, FileFigures, LinkId};
use crate::walk::extents::{FileExtents, WholeExtent};
use crate::walk::join::{BulkFile, Join};
use crate::walk::scan::{Child, Listed, Pos, Seen, Sink};
use std::collections::hash_map::Entry;
use std::collections::HashMap;
use std::ffi::CString;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Mutex, RwLock};

/// The arena sink.
pub struct ArenaSink<'a> {
    arena: &'a Arena,
    /// The first name (entry id) seen of each (dev, ino) that may have several names: more
    /// than one link, or a link count nobody knows (`Meta::may_have_links`).
    links: Mutex<HashMap<(u64, u64), u32>>,
    /// (first id, count, first name byte) reserved for a directory's children, until
    /// they are published.
    reserved: Mutex<HashMap<u32, (u32, u32, u32)>>,
    /// Listings still being read that got ids early (`reserve_early`): the entries and
    /// name bytes reserved, a bound on what they hold.
    early: Mutex<HashMap<u32, (u32, u64)>>,
    /// Read by every commit; written while an early reservation that proved too small
    /// moves (`listed`), so that no commit writes into either range meanwhile.
    moving: RwLock<()>,
    /// Device of each directory being listed, to record where it changes.
    devs: Mutex<HashMap<u32, u64>>,
    /// Extent figures of the files committed so far (`Walk::shared`).
    shared: Mutex<Collector>,
    /// Some directory lay on a file system that can share extents.
    sharing_seen: AtomicBool,
    /// The files whose extent figures come from bulk metadata after the scan.
    bulk: Join,
    /// The directory most recently committed (for progress displays).
    pub last_dir: AtomicU32,
    /// What could not be read, for `dfdu scan` to name on standard error; `None` when
    /// nobody asked (the browser marks errors in the tree instead).
    problems: Option<Mutex<Vec<Problem>>>,
}

/// Something the scan could not read: an entry of directory `dir` named `name` that
/// could not be stat'ed, or (`name == None`) directory `dir` itself that could not be
/// listed, wholly or in part.
pub struct Problem {
    pub dir: u32,
    pub name: Option<Vec<u8>>,
    pub errno: Errno,
}

/// The lines that name on standard error what a scan could not read, after the prefix
/// `cmd` ("dfdu scan", "dfdu diff"), in the shape du uses (`text::quote::walk_problem`),
/// sorted by path.
pub fn problem_lines(a: &Arena, cmd: &str, problems: Vec<Problem>) -> Vec<String> {
    let mut lines: Vec<(Vec<u8>, String)> = problems
        .into_iter()
        .map(|p| {
            let reason = if p.errno.0 == 0 { String::new() } else { crate::platform::errno_text(p.errno) };
            let (path, line) = walk_problem(&dir_path(a, p.dir), p.name.as_deref(), &reason);
            (path, format!("{cmd}: {line}"))
        })
        .collect();
    lines.sort();
    lines.into_iter().map(|(_, line)| line).collect()
}

/// One entry waiting for its commit.
#[derive(Clone, Copy)]
struct Pending {
    idx: u32,
    name_pos: u32,
    name_off: u32,
    name_len: u16,
    flags: Flags,
    descend: bool,
    nlink: u32,
    disk: u64,
    apparent: u64,
    dev: u64,
    ino: u64,
    mtime_sec: i64,
}

/// A file's extent figures waiting for its commit.
#[derive(Clone, Copy)]
struct PendingExtents {
    idx: u32,
    link: Option<LinkId>,
    total: u64,
    shared: u64,
    disk: u64,
    refs_unknown: bool,
    /// Its shared ranges in `Local::ranges`, its whole extents in `Local::known`.
    ranges: (u32, u32),
    known: (u32, u32),
}

/// A worker's findings before they are committed.
#[derive(Default)]
pub struct Local {
    entries: Vec<Pending>,
    names: Vec<u8>,
    /// Names of this directory that could not be stat'ed, kept only when collecting.
    problems: Vec<(Vec<u8>, Errno)>,
    extents: Vec<PendingExtents>,
    ranges: Vec<(u64, u64)>,
    known: Vec<WholeExtent>,
    /// Files for the bulk join, `entry` still the index in the listing.
    bulk: Vec<BulkFile>,
}

impl<'a> ArenaSink<'a> {
    pub fn new(arena: &'a Arena) -> Self {
        ArenaSink {
            arena,
            links: Mutex::new(HashMap::new()),
            reserved: Mutex::new(HashMap::new()),
            early: Mutex::new(HashMap::new()),
            moving: RwLock::new(()),
            devs: Mutex::new(HashMap::new()),
            shared: Mutex::new(Collector::default()),
            sharing_seen: AtomicBool::new(false),
            bulk: Join::default(),
            last_dir: AtomicU32::new(0),
            problems: None,
        }
    }

    /// Keeps what could not be read, for `take_problems`.
    pub fn collecting_problems(mut self) -> Self {
        self.problems = Some(Mutex::new(Vec::new()));
        self
    }

    /// What could not be read since the last call (empty unless collecting).
    pub fn take_problems(&self) -> Vec<Problem> {
        self.problems.as_ref().map(|p| std::mem::take(&mut *p.lock().unwrap())).unwrap_or_default()
    }

    fn problem(&self, dir: u32, name: Option<Vec<u8>>, errno: Errno) {
        if let Some(p) = &self.problems {
            p.lock().unwrap().push(Problem { dir, name, errno });
        }
    }

    /// Writes the root entry (named by its path) and its directory record; returns the
    /// directory index, which is the scan's token for it.
    pub fn add_root(&self, path: &[u8], meta: &Meta) -> Result<u32, arena::Full> {
        let id = self.arena.reserve_entries(1)?;
        let e = NewEntry {
            name: b"",
            flags: Flags::of(Kind::Dir),
            disk_bytes: meta.disk_bytes(),
            apparent_bytes: meta.size,
        };
        self.arena.write_entry(id, &e, self.arena.reserve_names(1)?);
        let dir = self.arena.new_dir(id, NO_DIR, meta.disk_bytes(), meta.size)?;
        self.arena.set_root_name(dir, path);
        self.adopt(dir, meta);
        Ok(dir)
    }

    /// Makes directory record `dir` (a root, or a record made by `Arena::begin_rescan`)
    /// the root of the next scan: records its device, inode and mtime.
    pub fn adopt(&self, dir: u32, meta: &Meta) {
        self.arena.set_dev(dir, meta.dev);
        self.arena.set_dir_stat(dir, meta.ino, meta.mtime.sec);
        self.devs.lock().unwrap().insert(dir, meta.dev);
    }

    /// For the browser: keeps every file's extent figures (in the arena, after the scan),
    /// so that deletes and rescans can update the figures (`Arena::refresh_shared`).
    pub fn keeping_extent_files(self) -> Self {
        self.keep_extent_files();
        self
    }

    /// As `keeping_extent_files`, for a sink already shared (the browser decides once
    /// it knows the root, before the scan).
    pub fn keep_extent_files(&self) {
        *self.shared.lock().unwrap() = Collector::keeping_files();
    }

    /// After a scan with `Walk::shared`: folds the extent figures into per-directory
    /// figures and stores them in the arena. Does nothing when no scanned directory lay
    /// on a file system that can share extents. A collector that keeps its files (the
    /// browser's; a rescan's) is merged into the one the arena keeps, and the figures of
    /// the whole tree are computed again from it.
    pub fn finish_shared(&self, threads: usize) {
        if !self.sharing_seen.load(Ordering::Relaxed) {
            return;
        }
        let mut collector = std::mem::take(&mut *self.shared.lock().unwrap());
        self.bulk.resolve(threads, &mut |f, link, file| {
            let charged = if f.flags & BulkFile::DUP != 0 { 0 } else { f.disk };
            let figures = FileFigures {
                total: file.total,
                shared: file.shared,
                disk: f.disk,
                charged,
                refs_unknown: file.refs_unknown,
            };
            let link = link.map(|(dev, ino)| LinkId { dev, ino, nlink: f.nlink });
            collector.add(f.dir, f.entry, link, figures, &file.ranges, &file.known);
        });
        self.arena.add_shared_input(collector);
    }

    fn pending(&self, l: &mut Local, pos: Pos, name: &[u8], flags: Flags, meta: Option<&Meta>, descend: bool) {
        let name_off = l.names.len() as u32;
        l.names.extend_from_slice(name);
        let (disk, apparent, dev, ino, nlink, mtime_sec) =
            meta.map_or((0, 0, 0, 0, 0, 0), |m| (m.disk_bytes(), m.size, m.dev, m.ino, m.nlink, m.mtime.sec));
        l.entries.push(Pending {
            idx: pos.idx,
            name_pos: pos.name_pos as u32,
            name_off,
            name_len: name.len().min(u16::MAX as usize) as u16,
            flags,
            descend,
            disk,
            apparent,
            dev,
            ino,
            nlink: nlink.min(u32::MAX as u64) as u32,
            mtime_sec,
        });
    }

    /// The listing's entries written at their reserved ids from `first` (names from
    /// `names_at`), hard links noted, new directories made and the ones to descend into
    /// handed to `children`: (disk, apparent, items, errors) of what `dir` holds itself.
    fn write_entries(
        &self,
        l: &Local,
        dir: u32,
        first: u32,
        names_at: u32,
        children: &mut Vec<Child>,
    ) -> (u64, u64, u64, bool) {
        let a = self.arena;
        let dir_dev = self.devs.lock().unwrap().get(&dir).copied().unwrap_or(0);
        let (mut disk, mut apparent, mut items, mut errors) = (0u64, 0u64, 0u64, false);
        let mut new_devs = Vec::new();
        for p in &l.entries {
            let id = first + p.idx;
            let name = &l.names[p.name_off as usize..p.name_off as usize + p.name_len as usize];
            let mut flags = p.flags;
            let unknown_links = p.nlink == 0
                && !flags.is_dir()
                && !flags.intersects(arena::F_ERROR | arena::F_EXCLUDED | arena::F_OTHER_FS);
            let e = |flags| NewEntry { name, flags, disk_bytes: p.disk, apparent_bytes: p.apparent };
            if flags.contains(arena::F_HARDLINK) || unknown_links {
                // Under the lock, so a later name can mark the first one afterwards.
                let mut links = self.links.lock().unwrap();
                match links.entry((p.dev, p.ino)) {
                    Entry::Vacant(v) => {
                        v.insert(id);
                    }
                    Entry::Occupied(o) => {
                        flags |= arena::F_HARDLINK | arena::F_DUP_LINK;
                        if unknown_links {
                            a.add_flags(*o.get(), arena::F_HARDLINK);
                            a.note_link(*o.get(), p.dev, p.ino, 2);
                        }
                    }
                }
                a.write_entry(id, &e(flags), names_at + p.name_pos);
                if flags.contains(arena::F_HARDLINK) {
                    a.note_link(id, p.dev, p.ino, p.nlink.max(2));
                }
            } else {
                a.write_entry(id, &e(flags), names_at + p.name_pos);
            }
            items += 1;
            errors |= flags.contains(arena::F_ERROR);
            if flags.is_dir() {
                let Ok(sub) = a.new_dir(id, dir, p.disk, p.apparent) else { break };
                a.set_dir_stat(sub, p.ino, p.mtime_sec);
                if p.dev != dir_dev {
                    a.set_dev(sub, p.dev);
                }
                if p.descend {
                    // Its own size reaches `dir` with its totals, when it is done.
                    new_devs.push((sub, p.dev));
                    a.add_pending(dir, 1);
                    let name = CString::new(name).expect("names hold no NUL");
                    children.push(Child { name, dir: sub, dev: p.dev, ino: p.ino });
                } else {
                    disk = disk.saturating_add(p.disk);
                    apparent = apparent.saturating_add(p.apparent);
                    a.publish_children(sub, id, 0);
                    a.set_dir_flags(sub, arena::D_DONE);
                }
            } else if !flags.contains(arena::F_DUP_LINK) {
                disk = disk.saturating_add(p.disk);
                apparent = apparent.saturating_add(p.apparent);
            }
        }
        if !new_devs.is_empty() {
            self.devs.lock().unwrap().extend(new_devs);
        }
        (disk, apparent, items, errors)
    }

    /// The listing's extent figures handed to the collector, each file at its entry id
    /// (`NO_ENTRY` when the listing found no room) and charged what the arena charged.
    fn hand_extents(&self, l: &mut Local, dir: u32, first: u32) {
        let a = self.arena;
        if !l.extents.is_empty() {
            let mut c = self.shared.lock().unwrap();
            for x in &l.extents {
                // What the arena charged: nothing for a further name of a counted file.
                let dup = first != NO_ENTRY && a.flags(first + x.idx).contains(arena::F_DUP_LINK);
                let charged = if dup || first == NO_ENTRY { 0 } else { x.disk };
                let f = FileFigures {
                    total: x.total,
                    shared: x.shared,
                    disk: x.disk,
                    charged,
                    refs_unknown: x.refs_unknown,
                };
                let entry = if first == NO_ENTRY { NO_ENTRY } else { first + x.idx };
                let ranges = &l.ranges[x.ranges.0 as usize..x.ranges.1 as usize];
                c.add(dir, entry, x.link, f, ranges, &l.known[x.known.0 as usize..x.known.1 as usize]);
            }
            l.extents.clear();
            l.ranges.clear();
            l.known.clear();
        }
    }

    /// The listing's files for the bulk join, at their entry ids in `dir`.
    fn hand_bulk(&self, l: &mut Local, dir: u32, first: u32) {
        let a = self.arena;
        if !l.bulk.is_empty() {
            for f in &mut l.bulk {
                let dup = first != NO_ENTRY && a.flags(first + f.entry).contains(arena::F_DUP_LINK);
                if dup || first == NO_ENTRY {
                    f.flags |= BulkFile::DUP;
                }
                f.entry = if first == NO_ENTRY { NO_ENTRY } else { first + f.entry };
                f.dir = dir;
            }
            self.bulk.add(&mut l.bulk);
        }
    }
}

impl Sink for ArenaSink<'_> {
    type Local = Local;
    const CONTIGUOUS: bool = true;

    fn entry(&self, l: &mut Local, pos: Pos, name: &[u8], seen: Seen) {
        match seen {
            Seen::Ok(m) => {
                let mut flags = Flags::of(m.kind);
                // A file whose link count is unknown (nlink 0: NT directory queries) is
                // only marked once a second name shows up, in `commit`.
                if m.kind != Kind::Dir && m.nlink > 1 {
                    flags |= arena::F_HARDLINK;
                }
                self.pending(l, pos, name, flags, Some(m), m.kind == Kind::Dir);
            }
            Seen::Error(e) => {
                if self.problems.is_some() {
                    l.problems.push((name.to_vec(), e));
                }
                self.pending(l, pos, name, Flags::of(Kind::File) | arena::F_ERROR, None, false)
            }
            Seen::Excluded => self.pending(l, pos, name, Flags::of(Kind::Other) | arena::F_EXCLUDED, None, false),
            // A directory as an imported excluded one is: no size, its identity kept.
            Seen::ExcludedDir(m) => {
                let shown = Meta { blocks: 0, size: 0, ..*m };
                self.pending(l, pos, name, Flags::of(Kind::Dir) | arena::F_EXCLUDED, Some(&shown), false)
            }
            Seen::OtherFs(m) => self.pending(l, pos, name, Flags::of(m.kind) | arena::F_OTHER_FS, Some(m), false),
            Seen::Repeat(m) => self.pending(l, pos, name, Flags::of(Kind::Symlink), Some(m), false),
            // Listed with its inode for the browser's checks, but no size: it is counted
            // where it really is, as an ancestor.
            Seen::Loop(m) => {
                let shown = Meta { blocks: 0, size: 0, ..*m };
                self.pending(l, pos, name, Flags::of(Kind::Dir) | arena::F_LOOP, Some(&shown), false)
            }
            Seen::Before => {}
        }
    }

    fn sharing_dir(&self, _dir: u32) {
        self.sharing_seen.store(true, Ordering::Relaxed);
    }

    fn extents(&self, l: &mut Local, pos: Pos, meta: &Meta, file: &FileExtents) {
        let (at, known_at) = (l.ranges.len() as u32, l.known.len() as u32);
        l.ranges.extend_from_slice(&file.ranges);
        l.known.extend_from_slice(&file.known);
        let nlink = meta.nlink.min(u64::from(u32::MAX)) as u32;
        l.extents.push(PendingExtents {
            idx: pos.idx,
            disk: meta.disk_bytes(),
            link: meta.may_have_links().then_some(LinkId { dev: meta.dev, ino: meta.ino, nlink }),
            total: file.total,
            shared: file.shared,
            refs_unknown: file.refs_unknown,
            ranges: (at, l.ranges.len() as u32),
            known: (known_at, l.known.len() as u32),
        });
    }

    fn bulk_source(&self, dev: u64, open: &mut dyn FnMut() -> Option<crate::walk::join::Source>) -> Option<u32> {
        self.bulk.source(dev, open)
    }

    fn bulk_file(&self, l: &mut Local, pos: Pos, meta: &Meta, tree: u32) {
        let flags = if meta.may_have_links() { BulkFile::LINK } else { 0 };
        let nlink = meta.nlink.min(u64::from(u32::MAX)) as u32;
        let tree = tree.min(u32::from(u16::MAX)) as u16;
        l.bulk.push(BulkFile { dir: 0, entry: pos.idx, tree, flags, nlink, ino: meta.ino, disk: meta.disk_bytes() });
    }

    fn name_cost(len: usize) -> u64 {
        arena::name_cost(len)
    }

    fn reserve_early(&self, dir: u32, entries: u64, name_bytes: u64) -> bool {
        let entries = entries.min(u32::MAX as u64 / 4) as u32;
        let Some((first, names)) = self.arena.reserve_early(entries, name_bytes) else { return false };
        self.arena.set_layout(dir, first, names);
        self.reserved.lock().unwrap().insert(dir, (first, entries, names));
        self.early.lock().unwrap().insert(dir, (entries, name_bytes));
        true
    }

    fn commit_early(&self, l: &mut Local, dir: u32) -> bool {
        let _commits = self.moving.read().unwrap_or_else(|p| p.into_inner());
        let Some(&(cap, names_cap)) = self.early.lock().unwrap().get(&dir) else { return false };
        // The figures of files with extents wait for their ids to be final.
        if !l.extents.is_empty() || !l.bulk.is_empty() {
            return false;
        }
        let (first, _, names_at) = self.reserved.lock().unwrap().get(&dir).copied().unwrap_or((NO_ENTRY, 0, 0));
        if first == NO_ENTRY {
            return false;
        }
        let a = self.arena;
        let plain = |p: &Pending| {
            let kind = p.flags.kind();
            p.flags == Flags::of(kind)
                && kind != Kind::Dir
                && p.nlink > 0
                && arena::fits_in_entry(p.disk, p.apparent)
                && p.idx < cap
                && u64::from(p.name_pos) + arena::name_cost(p.name_len as usize) <= names_cap
        };
        // One pass: each plain entry is written and dropped, the rest kept.
        let (mut disk, mut apparent, mut items) = (0u64, 0u64, 0u64);
        let names = &l.names;
        l.entries.retain(|p| {
            if !plain(p) {
                return true;
            }
            let name = &names[p.name_off as usize..p.name_off as usize + p.name_len as usize];
            let e = NewEntry { name, flags: p.flags, disk_bytes: p.disk, apparent_bytes: p.apparent };
            a.write_entry(first + p.idx, &e, names_at + p.name_pos);
            disk = disk.saturating_add(p.disk);
            apparent = apparent.saturating_add(p.apparent);
            items += 1;
            false
        });
        a.add_here(dir, disk, apparent, items);
        if l.entries.is_empty() && l.problems.is_empty() {
            l.names.clear();
            self.last_dir.store(dir, Ordering::Relaxed);
            return true;
        }
        false
    }

    fn listed(&self, dir: u32, entries: u32, name_bytes: u64) {
        let early = self.early.lock().unwrap().remove(&dir);
        if let Some((cap, names_cap)) = early {
            let mut reserved = self.reserved.lock().unwrap();
            let Some(r) = reserved.get_mut(&dir) else { return };
            let (first, names_at) = (r.0, r.2);
            if entries <= cap && name_bytes <= names_cap {
                // What the bound reserved beyond the listing goes back.
                r.1 = entries;
                drop(reserved);
                self.arena.count_entries(entries);
                self.arena.give_back(
                    first + entries,
                    cap - entries,
                    names_at + name_bytes as u32,
                    names_cap - name_bytes,
                );
                return;
            }
            drop(reserved);
            // The directory grew past its bound while it was listed: its entries move to
            // a range of the listing's size, with no commit running meanwhile.
            let _moving = self.moving.write().unwrap_or_else(|p| p.into_inner());
            let new_first = self.arena.reserve_entries(entries).ok();
            let new_names = self.arena.reserve_names(name_bytes).ok();
            let (new_first, new_names) = match (new_first, new_names) {
                (Some(f), Some(n)) => {
                    self.arena.move_entries((first, f, cap.min(entries)), (names_at, n, names_cap.min(name_bytes)));
                    (f, n)
                }
                _ => (NO_ENTRY, arena::NONE),
            };
            self.arena.give_back(first, cap, names_at, names_cap);
            self.arena.set_layout(dir, new_first, new_names);
            self.reserved.lock().unwrap().insert(dir, (new_first, entries, new_names));
            return;
        }
        let first = self.arena.reserve_entries(entries).ok();
        let names = self.arena.reserve_names(name_bytes).ok();
        // A listing gets its ids only when its names found room too.
        let first = first.filter(|_| names.is_some()).unwrap_or(NO_ENTRY);
        let names = names.unwrap_or(arena::NONE);
        self.arena.set_layout(dir, first, names);
        self.reserved.lock().unwrap().insert(dir, (first, entries, names));
    }

    fn commit(&self, l: &mut Local, dir: u32, listed: Option<Listed>, children: &mut Vec<Child>) {
        let _commits = self.moving.read().unwrap_or_else(|p| p.into_inner());
        let a = self.arena;
        let (first, _, names_at) = self.reserved.lock().unwrap().get(&dir).copied().unwrap_or((NO_ENTRY, 0, 0));
        let (disk, apparent, items, errors) =
            if first == NO_ENTRY { (0, 0, 0, false) } else { self.write_entries(l, dir, first, names_at, children) };
        a.add_here(dir, disk, apparent, items);
        if errors {
            a.mark_error_below(dir);
        }
        if let Some(Listed { error: Some((errno, _)), .. }) = listed {
            a.set_dir_flags(dir, arena::D_READ_ERROR);
            a.mark_error_below(a.dir_parent(dir));
            self.problem(dir, None, errno);
        }
        for (name, errno) in l.problems.drain(..) {
            self.problem(dir, Some(name), errno);
        }
        self.hand_extents(l, dir, first);
        self.hand_bulk(l, dir, first);
        self.last_dir.store(dir, Ordering::Relaxed);
        l.entries.clear();
        l.names.clear();
    }

    fn written(&self, dir: u32) {
        let (first, n, _) = self.reserved.lock().unwrap().remove(&dir).unwrap_or((0, 0, 0));
        self.devs.lock().unwrap().remove(&dir);
        self.arena.publish_children(dir, first, if first == NO_ENTRY { 0 } else { n });
        self.arena.finish(dir);
    }

    fn unreadable(&self, dir: u32, err: Errno) {
        self.problem(dir, None, err);
        let a = self.arena;
        a.set_dir_flags(dir, arena::D_READ_ERROR);
        a.mark_error_below(a.dir_parent(dir));
        a.publish_children(dir, a.dir_entry(dir), 0);
        self.devs.lock().unwrap().remove(&dir);
        a.finish(dir);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::platform::Follow;
    use crate::walk::reader::{Native, Reader};
    use crate::walk::scan::{self, Walk};
    use std::collections::HashSet;
    use std::path::{Path, PathBuf};

    /// Makes `levels` nested directories named `d` under `base`, each path under 4 KiB
    /// (`mkdir -p`: std's create_dir_all and remove_dir_all take seconds on a deep chain).
    fn chain(base: &Path, levels: usize) -> PathBuf {
        let mut p = base.to_path_buf();
        for _ in 0..levels {
            p.push("d");
        }
        assert!(std::process::Command::new("mkdir").arg("-p").arg(&p).status().unwrap().success());
        p
    }

    /// Issue 10, item 5: `dfdu scan` of a 20,000-level chain took 9-13 s because every
    /// listing added its sizes to every ancestor. A 3,000-level chain (three 1,000-level
    /// chains moved into each other, so no path reaches PATH_MAX) is scanned; the arena
    /// records visited while moving totals must stay a small multiple of the directories.
    #[test]
    fn deep_chain_scan_moves_totals_in_linear_work() {
        // A tmpfs where there is one: thousands of nested mkdirs are slow on a busy disk.
        let shm = Path::new("/dev/shm");
        let base = if shm.is_dir() { shm.to_path_buf() } else { std::env::temp_dir() };
        let top = base.join(format!("dfdu-deep-scan-{}", std::process::id()));
        let _ = std::process::Command::new("rm").arg("-rf").arg(&top).status();
        let (a_root, b_root, c_root) = (top.join("a"), top.join("b"), top.join("c"));
        let a_end = chain(&a_root, 999);
        let b_end = chain(&b_root, 999);
        let c_end = chain(&c_root, 999);
        std::fs::write(c_end.join("f"), vec![1u8; 5000]).unwrap();
        std::fs::rename(&c_root, b_end.join("c")).unwrap();
        std::fs::rename(&b_root, a_end.join("b")).unwrap();

        let arena = Arena::new();
        let path = CString::new(a_root.to_str().unwrap()).unwrap();
        let meta = Native::stat_path(&path, Follow::Yes).unwrap();
        let sink = ArenaSink::new(&arena);
        let r = sink.add_root(a_root.to_str().unwrap().as_bytes(), &meta).unwrap();
        let empty = HashSet::new();
        let walk = Walk::arena(3, &empty);
        scan::scan_as::<Native, ArenaSink>(&walk, &sink, &path, &meta, r);
        let _ = std::process::Command::new("rm").arg("-rf").arg(&top).status();

        assert!(arena.dir_flags(r).is_done());
        let (_, apparent, items) = arena.dir_totals(r);
        assert_eq!(items, 3000, "2,999 directories below the root and one file");
        assert_eq!(apparent, 5000 + 3000 * meta.size, "directories of one size, plus the file");
        let steps = arena.steps.load(Ordering::Relaxed);
        assert!(steps <= 4 * 3000, "{steps} steps for 3,000 directories: not linear");
    }

    /// Issue 10, item 7: 1,000,000 files in one folder peaked at 88-92 MiB in `dfdu
    /// scan`, because every chunk stat'ed while the folder was still being listed kept
    /// its results (about 70 bytes an entry) until the listing ended. Only
    /// `PARKED_CHUNKS` may now wait; the rest wait as bare names. 100,000 files with
    /// idle workers beside the lister: the count of waiting results stays bounded, and
    /// every entry arrives.
    #[test]
    fn wide_folder_parks_a_bounded_number_of_chunks() {
        let shm = Path::new("/dev/shm");
        let base = if shm.is_dir() { shm.to_path_buf() } else { std::env::temp_dir() };
        let top = base.join(format!("dfdu-wide-park-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&top);
        std::fs::create_dir_all(&top).unwrap();
        for i in 0..100_000 {
            std::fs::File::create(top.join(format!("f{i:06}"))).unwrap();
        }
        let arena = Arena::new();
        let path = CString::new(top.to_str().unwrap()).unwrap();
        let meta = Native::stat_path(&path, Follow::Yes).unwrap();
        let sink = ArenaSink::new(&arena);
        let r = sink.add_root(top.to_str().unwrap().as_bytes(), &meta).unwrap();
        let empty = HashSet::new();
        let walk = Walk::arena(8, &empty);
        scan::scan_as::<Native, ArenaSink>(&walk, &sink, &path, &meta, r);
        let _ = std::fs::remove_dir_all(&top);
        assert_eq!(arena.dir_totals(r).2, 100_000);
        let most = scan::MOST_PARKED.load(Ordering::Relaxed);
        assert!(most <= 16, "{most} chunk results waited for one listing");
    }
}
