//! Deleting what the browser shows: one entry of the scanned tree and, for a directory,
//! everything the scan found under it — and nothing else, whatever happened on disk since.
//!
//! # How it stays inside the selection
//!
//! * The scan is the list of what may go. Each directory is emptied by walking its
//!   children *in the arena*; an entry that appeared on disk after the scan is not
//!   removed (its directory then cannot be removed either, and that is reported).
//! * Every directory is opened relative to its parent's handle, never by a path, with
//!   no-follow (`platform::open_at(.., false)`: `O_NOFOLLOW | O_DIRECTORY`), starting from
//!   the scan root, which is opened the way the scan opened it. Before anything inside a
//!   directory is touched, its (device, inode) must equal what the scan recorded; a
//!   directory swapped for a symlink fails to open, one swapped for another directory
//!   fails the check, and in both cases that subtree is left alone. The ancestors between
//!   the scan root and the selection get the same check.
//! * Another mount is never entered: a directory inside the selection (or the selection
//!   itself) whose mount differs from its parent's, or which is a mount root (a bind mount
//!   on the same device included), is left alone with everything in it, and counted
//!   (`Progress::mounts_left`). The browser counts them before asking (`mounts_under`).
//! * A directory loop is never entered: a directory whose (device, inode) equals one of
//!   its ancestors' (a bind mount of an ancestor) is left alone, checked on disk at
//!   delete time whatever the scan made of it.
//! * Entries are removed with `unlinkat` relative to their directory's handle: a symlink
//!   is removed itself, never its target; a non-directory that became a directory fails
//!   (`EISDIR`) instead of being emptied.
//! * The walk is iterative (a stack of directories, one per level), so depth costs no
//!   stack; at most `OPEN_HANDLES` of them hold an open handle. A directory whose handle
//!   was closed is opened again by names from the selection's parent, with the same
//!   (device, inode) and mount checks at every step, so a deep selection works under a
//!   low open-file limit.
//!
//! # Keeping the tree consistent
//!
//! Each successful removal is applied to the arena at once (`Arena::remove`: the entry
//! is marked and its sizes leave every ancestor), so the browser always shows what is
//! still on disk as far as the scan knows: what was removed is gone, what failed stays.
//! A multiply-linked file keeps its sizes in the totals until its last name in the tree
//! goes: when the name that carried them is removed, another name carries them
//! (`Arena::carry_link`), as du and ncdu would count the file on the next scan.

use crate::meta::{Errno, Kind};
use crate::platform::{self, Dir, Follow};
use crate::tree::arena::{self, Arena};
use std::collections::{HashMap, HashSet};
use std::ffi::CString;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Mutex;

/// At most this many failures are kept with their paths (the count keeps going).
const MAX_FAILURES_KEPT: usize = 100;

/// At most this many directory handles are open at once during one deletion.
const OPEN_HANDLES: usize = 32;

/// Why one entry was not removed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Why {
    Os(Errno),
    /// The directory on disk is not the one the scan saw (device or inode differ).
    Changed,
    /// Excluded by a pattern: the scan did not look inside.
    NotScanned,
    /// A mount point (another device, or the root of a mount): never entered.
    MountPoint,
    /// The same directory as one of its ancestors (a bind mount of an ancestor).
    Loop,
    /// Not moved to the trash, for this reason (no trash on its file system, ...).
    NoTrash(String),
}

impl Why {
    pub fn text(&self) -> String {
        match self {
            Why::Os(e) => platform::errno_text(*e),
            Why::Changed => "no longer the directory that was scanned; left alone".into(),
            Why::NotScanned => "not scanned (excluded); left alone".into(),
            Why::MountPoint => "a mount point; left alone with everything in it".into(),
            Why::Loop => "a directory loop (the same directory as an ancestor); not entered".into(),
            Why::NoTrash(why) => why.clone(),
        }
    }
}

/// What a deletion has done so far; shared with the browser, which shows it.
#[derive(Default)]
pub struct Progress {
    pub removed: AtomicU64,
    /// Failures (each may leave a whole subtree behind; the browser counts what is left).
    pub failed: AtomicU64,
    /// Mount points found inside the selection and left alone.
    pub mounts_left: AtomicU64,
    /// The first failures: (path, why).
    pub failures: Mutex<Vec<(Vec<u8>, Why)>>,
    pub done: AtomicBool,
}

impl Progress {
    pub(super) fn fail(&self, a: &Arena, dir: u32, id: u32, why: Why) {
        if why == Why::MountPoint {
            self.mounts_left.fetch_add(1, Ordering::Relaxed);
        }
        self.failed.fetch_add(1, Ordering::Relaxed);
        let mut f = self.failures.lock().unwrap();
        if f.len() < MAX_FAILURES_KEPT {
            f.push((crate::tree::path::child_path(a, dir, id), why));
        }
    }
}

/// How many mount points lie at or below `path` (an absolute path without a trailing
/// slash), according to the platform's mount table; `None` where it cannot be listed.
pub fn mounts_under(path: &[u8]) -> Option<u64> {
    let points = platform::mount_points()?;
    let under = |m: &Vec<u8>| m.strip_prefix(path).is_some_and(|rest| rest.is_empty() || rest[0] == b'/');
    Some(points.iter().filter(|m| under(m)).count() as u64)
}

pub(super) fn cname(bytes: Vec<u8>) -> CString {
    // Names come from directory listings, which cannot hold NUL.
    CString::new(bytes).unwrap_or_default()
}

/// An open directory that passed the checks: its handle, (device, inode) and mount key.
pub(super) struct Opened {
    pub(super) handle: Dir,
    id: (u64, u64),
    mount: u64,
}

/// Opens directory `dir` (named `name` in `parent`) without following, and checks it
/// against the scan and against leaving the mount `parent_mount` or entering a loop.
fn enter(
    a: &Arena,
    parent: &Dir,
    parent_mount: u64,
    name: &CString,
    dir: u32,
    path: &Ancestors,
) -> Result<Opened, Why> {
    let handle = platform::open_at(parent, name, Follow::No).map_err(Why::Os)?;
    let id = platform::dir_id(&handle).map_err(Why::Os)?;
    if id != (a.dir_dev(dir), a.dir_ino(dir)) {
        return Err(Why::Changed);
    }
    let (mount, mount_root) = platform::dir_mount(&handle).map_err(Why::Os)?;
    if mount_root || mount != parent_mount {
        return Err(Why::MountPoint);
    }
    if path.contains(&id) {
        return Err(Why::Loop);
    }
    Ok(Opened { handle, id, mount })
}

/// The (device, inode) of every directory on the way down from the scan root: none may
/// be entered twice.
pub(super) type Ancestors = HashSet<(u64, u64)>;

/// Opens directory `dir` by walking from the scan root, checking each step against the
/// scan and against loops (mounts may be crossed on the way: the selection may lie on
/// another mount than the scan root). Returns it with the ids of its ancestors and itself.
pub(super) fn open_chain(a: &Arena, dir: u32) -> Result<(Opened, Ancestors), Why> {
    let mut chain = Vec::new();
    let mut d = dir;
    while d != arena::NO_DIR {
        chain.push(d);
        d = a.dir_parent(d);
    }
    let Some(root) = chain.pop() else { return Err(Why::Changed) };
    // The scan followed the root when it was a symlink; so does this, once.
    let handle = platform::open_path(&cname(a.dir_name(root)), Follow::Yes).map_err(Why::Os)?;
    let id = platform::dir_id(&handle).map_err(Why::Os)?;
    if id != (a.dir_dev(root), a.dir_ino(root)) {
        return Err(Why::Changed);
    }
    let mut path = Ancestors::new();
    path.insert(id);
    let mut h = handle;
    while let Some(d) = chain.pop() {
        h = platform::open_at(&h, &cname(a.dir_name(d)), Follow::No).map_err(Why::Os)?;
        let id = platform::dir_id(&h).map_err(Why::Os)?;
        if id != (a.dir_dev(d), a.dir_ino(d)) {
            return Err(Why::Changed);
        }
        if !path.insert(id) {
            return Err(Why::Loop);
        }
    }
    let (mount, _) = platform::dir_mount(&h).map_err(Why::Os)?;
    Ok((Opened { handle: h, id, mount }, path))
}

/// One directory being emptied.
struct Frame {
    /// Its directory index, its entry and its parent's index, and its name there.
    dir: u32,
    entry: u32,
    parent: u32,
    name: CString,
    /// Open only for the deepest `OPEN_HANDLES` frames.
    handle: Option<Dir>,
    /// What `enter` found: (device, inode) and mount key, checked again on re-opening.
    id: (u64, u64),
    mount: u64,
    /// The next child to remove, the end of the children, and the next child's name.
    next: u32,
    end: u32,
    name_at: u32,
    /// Something below could not be removed (so neither can this directory).
    blocked: bool,
}

fn frame(a: &Arena, dir: u32, entry: u32, parent: u32, name: CString, o: Opened) -> Frame {
    let kids = a.children(dir).unwrap_or(0..0);
    Frame {
        dir,
        entry,
        parent,
        name,
        handle: Some(o.handle),
        id: o.id,
        mount: o.mount,
        next: kids.start,
        end: kids.end,
        name_at: a.names_at(dir),
        blocked: false,
    }
}

/// Where each name of a multiply-linked file lives: (dev, ino) → [(directory, entry)].
/// Built on first need (a deleted name that carried a file's sizes), by one pass over
/// the arena's live directories.
#[derive(Default)]
pub(super) struct Links(Option<LinkNames>);

/// (dev, ino) of a file → (directory, entry) of each of its names.
type LinkNames = HashMap<(u64, u64), Vec<(u32, u32)>>;

impl Links {
    fn names(&mut self, a: &Arena) -> &LinkNames {
        self.0.get_or_insert_with(|| {
            let files: HashMap<u32, (u64, u64)> =
                a.link_table().into_iter().map(|(id, dev, ino)| (id, (dev, ino))).collect();
            let mut names = LinkNames::new();
            for dir in 0..a.dir_count() {
                let Some(kids) = a.children(dir) else { continue };
                if kids.is_empty() || !a.dir_live(dir) {
                    continue;
                }
                for id in kids.filter(|&id| a.flags(id).contains(arena::F_HARDLINK)) {
                    if let Some(&key) = files.get(&id) {
                        names.entry(key).or_default().push((dir, id));
                    }
                }
            }
            names
        })
    }

    /// Entry `id` of `dir` was just removed; if it carried its file's sizes and another
    /// name of the file is still in the tree, that name carries them from now on.
    pub(super) fn removed(&mut self, a: &Arena, id: u32) {
        let flags = a.flags(id);
        if !flags.contains(arena::F_HARDLINK) || flags.contains(arena::F_DUP_LINK) {
            return;
        }
        let Some((dev, ino, _)) = a.link_of(id) else { return };
        let Some(names) = self.names(a).get(&(dev, ino)) else { return };
        if let Some(&(dir, other)) = names.iter().find(|&&(d, o)| o != id && !a.removed(o) && a.dir_live(d)) {
            a.carry_link(dir, other);
        }
    }
}

/// Removes entry `id` of directory `dir` — for a directory, with everything the scan
/// found below it — reporting into `p`. The caller has checked that the subtree's scan
/// is finished.
pub fn delete(a: &Arena, dir: u32, id: u32, p: &Progress) {
    run(a, dir, id, p);
    p.done.store(true, Ordering::Release);
}

/// Removes each (directory, entry) of `targets` (the marks) as `delete` removes one:
/// each from its own chain of checked handles from the scan root, none entered through
/// another. An entry already removed (inside one deleted before it) is skipped.
pub fn delete_all(a: &Arena, targets: &[(u32, u32)], p: &Progress) {
    for &(dir, id) in targets {
        if !a.removed(id) && a.dir_live(dir) {
            run(a, dir, id, p);
        }
    }
    p.done.store(true, Ordering::Release);
}

/// The deletion in progress: the selection's parent and the stack below it.
struct Deletion<'a> {
    a: &'a Arena,
    p: &'a Progress,
    base: Opened,
    stack: Vec<Frame>,
    path: Ancestors,
    links: Links,
}

fn run(a: &Arena, dir: u32, id: u32, p: &Progress) {
    let (base, path) = match open_chain(a, dir) {
        Ok(opened) => opened,
        Err(why) => return p.fail(a, dir, id, why),
    };
    let mut w = Deletion { a, p, base, stack: Vec::new(), path, links: Links::default() };
    let mut name = Vec::new();
    a.child_name(dir, id, &mut name);
    let name = cname(name);
    if w.descends(id) {
        let sub = a.dir_of(id);
        match enter(a, &w.base.handle, w.base.mount, &name, sub, &w.path) {
            Ok(o) => w.push(frame(a, sub, id, dir, name, o)),
            Err(why) => p.fail(a, dir, id, why),
        }
    } else if !w.not_entered(dir, id) {
        w.remove_leaf(None, dir, id, &name);
    }
    w.empty();
}

impl Deletion<'_> {
    /// Whether entry `id` is a directory the scan listed (and this walk may empty).
    fn descends(&self, id: u32) -> bool {
        let flags = self.a.flags(id);
        flags.is_dir() && !flags.intersects(arena::F_EXCLUDED | arena::F_OTHER_FS)
    }

    /// An unlisted directory on another file system (`-x`) is a mount point: it is left
    /// alone and reported without a system call. True if `id` was such an entry.
    fn not_entered(&self, dir: u32, id: u32) -> bool {
        let flags = self.a.flags(id);
        if flags.contains(arena::F_OTHER_FS) && flags.is_dir() {
            self.p.fail(self.a, dir, id, Why::MountPoint);
            return true;
        }
        false
    }

    fn push(&mut self, f: Frame) {
        self.path.insert(f.id);
        self.stack.push(f);
        let n = self.stack.len();
        if n > OPEN_HANDLES {
            self.stack[n - 1 - OPEN_HANDLES].handle = None;
        }
    }

    /// The handle of stack frame `k` (`None`: the selection's parent), re-opened by
    /// names from the selection's parent if it was closed. On failure the frame is
    /// reported and marked blocked, and `None` returned.
    fn handle(&mut self, k: Option<usize>) -> Option<&Dir> {
        self.ready(k).then(|| self.open_handle(k))
    }

    /// Makes sure frame `k` has an open handle (see `handle`).
    fn ready(&mut self, k: Option<usize>) -> bool {
        let Some(k) = k else { return true };
        if self.stack[k].handle.is_none() {
            if let Err(why) = self.reopen(k) {
                let f = &mut self.stack[k];
                f.blocked = true;
                f.next = f.end;
                self.p.fail(self.a, f.parent, f.entry, why);
                return false;
            }
        }
        true
    }

    /// The handle of frame `k`, which `ready` has opened.
    fn open_handle(&self, k: Option<usize>) -> &Dir {
        match k {
            Some(k) => self.stack[k].handle.as_ref().expect("ready opened it"),
            None => &self.base.handle,
        }
    }

    /// Opens frames 0..=k again, checking each against what was found when it was
    /// entered; keeps the handles of the deepest `OPEN_HANDLES` of them.
    fn reopen(&mut self, k: usize) -> Result<(), Why> {
        let keep_from = (k + 1).saturating_sub(OPEN_HANDLES);
        let mut held: Option<Dir> = None;
        for i in 0..=k {
            let parent = held.as_ref().or(self.stack[..i].last().and_then(|f| f.handle.as_ref()));
            let parent = parent.unwrap_or(&self.base.handle);
            let h = platform::open_at(parent, &self.stack[i].name, Follow::No).map_err(Why::Os)?;
            if platform::dir_id(&h).map_err(Why::Os)? != self.stack[i].id
                || platform::dir_mount(&h).map_err(Why::Os)?.0 != self.stack[i].mount
            {
                return Err(Why::Changed);
            }
            if i >= keep_from {
                self.stack[i].handle = Some(h);
                held = None;
            } else {
                held = Some(h);
            }
        }
        Ok(())
    }

    /// Empties the stack: removes every child of the top frame, descends into listed
    /// directories, and removes each directory once it is empty.
    fn empty(&mut self) {
        let a = self.a;
        let mut child_name = Vec::new();
        while let Some(top) = self.stack.last_mut() {
            if top.next < top.end {
                let child = top.next;
                top.next += 1;
                top.name_at = a.read_name(top.name_at, &mut child_name);
                if a.flags(child).contains(arena::F_REMOVED) {
                    continue;
                }
                let dir = top.dir;
                let k = self.stack.len() - 1;
                let cn = cname(child_name.clone());
                if self.descends(child) {
                    let (mount, csub) = (self.stack[k].mount, a.dir_of(child));
                    if !self.ready(Some(k)) {
                        continue;
                    }
                    match enter(a, self.open_handle(Some(k)), mount, &cn, csub, &self.path) {
                        Ok(o) => self.push(frame(a, csub, child, dir, cn, o)),
                        Err(why) => {
                            self.stack[k].blocked = true;
                            self.p.fail(a, dir, child, why);
                        }
                    }
                } else if self.not_entered(dir, child) || !self.remove_leaf(Some(k), dir, child, &cn) {
                    self.stack[k].blocked = true;
                }
                continue;
            }
            let done = self.stack.pop().expect("the loop checked the top");
            self.path.remove(&done.id);
            let parent = self.stack.len().checked_sub(1);
            if done.blocked {
                // Its contents failed and are reported; it is not empty, so it stays.
                if let Some(f) = self.stack.last_mut() {
                    f.blocked = true;
                }
                continue;
            }
            drop(done.handle);
            let Some(h) = self.handle(parent) else { continue };
            match platform::remove_at(h, &done.name, true) {
                Ok(()) => {
                    a.remove(done.parent, done.entry);
                    self.p.removed.fetch_add(1, Ordering::Relaxed);
                }
                Err(e) => {
                    self.p.fail(a, done.parent, done.entry, Why::Os(e));
                    if let Some(f) = self.stack.last_mut() {
                        f.blocked = true;
                    }
                }
            }
        }
    }

    /// Unlinks a non-directory entry (or an excluded directory, which fails and stays)
    /// in the directory of frame `k` (`None`: the selection's parent).
    fn remove_leaf(&mut self, k: Option<usize>, dir: u32, id: u32, name: &CString) -> bool {
        let a = self.a;
        let flags = a.flags(id);
        let unscanned_dir = flags.contains(arena::F_EXCLUDED) && matches!(flags.kind(), Kind::Dir | Kind::Other);
        let Some(h) = self.handle(k) else { return false };
        match platform::remove_at(h, name, false) {
            Ok(()) => {
                self.links.removed(a, id);
                a.remove(dir, id);
                self.p.removed.fetch_add(1, Ordering::Relaxed);
                true
            }
            Err(e) => {
                let why = if unscanned_dir && e != Errno::NOENT { Why::NotScanned } else { Why::Os(e) };
                self.p.fail(a, dir, id, why);
                false
            }
        }
    }
}

#[cfg(test)]
mod tests;
