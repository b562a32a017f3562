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

use crate::meta::Errno;
use crate::platform::{self, Dir};
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
}

impl Why {
    pub fn text(&self) -> String {
        match self {
            Why::Os(e) => platform::errno_text(*e),
            Why::Changed => "no longer the directory that was scanned; left alone".into(),
            Why::NotScanned => "not scanned (excluded); left alone".into(),
            Why::MountPoint => "a mount point; left alone with everything in it".into(),
            Why::Loop => "a directory loop (the same directory as an ancestor); not entered".into(),
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
    fn fail(&self, a: &Arena, dir: u32, id: u32, why: Why) {
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

fn cname(bytes: Vec<u8>) -> CString {
    // Names come from directory listings, which cannot hold NUL.
    CString::new(bytes).unwrap_or_default()
}

/// An open directory that passed the checks: its handle, (device, inode) and mount key.
struct Opened {
    handle: Dir,
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
    let handle = platform::open_at(parent, name, false).map_err(Why::Os)?;
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
type Ancestors = HashSet<(u64, u64)>;

/// Opens directory `dir` by walking from the scan root, checking each step against the
/// scan and against loops (mounts may be crossed on the way: the selection may lie on
/// another mount than the scan root). Returns it with the ids of its ancestors and itself.
fn open_chain(a: &Arena, dir: u32) -> Result<(Opened, Ancestors), Why> {
    let mut chain = Vec::new();
    let mut d = dir;
    while d != arena::NO_DIR {
        chain.push(d);
        d = a.dir_parent(d);
    }
    let Some(root) = chain.pop() else { return Err(Why::Changed) };
    // The scan followed the root when it was a symlink; so does this, once.
    let handle = platform::open_path(&cname(a.dir_name(root)), true).map_err(Why::Os)?;
    let id = platform::dir_id(&handle).map_err(Why::Os)?;
    if id != (a.dir_dev(root), a.dir_ino(root)) {
        return Err(Why::Changed);
    }
    let mut path = Ancestors::new();
    path.insert(id);
    let mut h = handle;
    while let Some(d) = chain.pop() {
        h = platform::open_at(&h, &cname(a.dir_name(d)), false).map_err(Why::Os)?;
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
struct Links(Option<LinkNames>);

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
                for id in kids.filter(|&id| a.flags(id) & arena::F_HARDLINK != 0) {
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
    fn removed(&mut self, a: &Arena, id: u32) {
        let flags = a.flags(id);
        if flags & arena::F_HARDLINK == 0 || flags & arena::F_DUP_LINK != 0 {
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
        flags & 3 == arena::KIND_DIR && flags & (arena::F_EXCLUDED | arena::F_OTHER_FS) == 0
    }

    /// An unlisted directory on another file system (`-x`) is a mount point: it is left
    /// alone and reported without a system call. True if `id` was such an entry.
    fn not_entered(&self, dir: u32, id: u32) -> bool {
        let flags = self.a.flags(id);
        if flags & arena::F_OTHER_FS != 0 && flags & 3 == arena::KIND_DIR {
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
            let h = platform::open_at(parent, &self.stack[i].name, false).map_err(Why::Os)?;
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
                if a.flags(child) & arena::F_REMOVED != 0 {
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
        let unscanned_dir = flags & arena::F_EXCLUDED != 0 && matches!(flags & 3, arena::KIND_DIR | arena::KIND_OTHER);
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
mod tests {
    use super::*;
    use crate::text::exclude::Exclude;
    use crate::tree::sink::ArenaSink;
    use crate::walk::reader::{Native, Reader};
    use crate::walk::scan::{self, Walk};
    use std::collections::HashSet;
    use std::ffi::CString;
    use std::path::{Path, PathBuf};

    fn scratch(label: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("dfdu-delete-{label}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    /// Scans `root` into a fresh arena; returns it with the root's directory index.
    fn scan_tree(root: &Path) -> (Arena, u32) {
        scan_with(root, None, false)
    }

    /// `scan_tree` with exclude patterns and `-x` (stay on the root's file system).
    fn scan_with(root: &Path, exclude: Option<&Exclude>, one_fs: bool) -> (Arena, u32) {
        let a = Arena::new();
        let path = CString::new(root.to_str().unwrap()).unwrap();
        let meta = Native::stat_path(&path, true).unwrap();
        let r = {
            let sink = ArenaSink::new(&a);
            let r = sink.add_root(root.to_str().unwrap().as_bytes(), &meta).unwrap();
            let empty = HashSet::new();
            let walk = Walk { one_fs_dev: one_fs.then_some(meta.dev), exclude, ..Walk::arena(2, &empty) };
            scan::scan_as::<Native, ArenaSink>(&walk, &sink, &path, &meta, r);
            r
        };
        (a, r)
    }

    /// (directory index, entry id) of the entry at `rel` below the root.
    fn find(a: &Arena, root: u32, rel: &str) -> (u32, u32) {
        let mut dir = root;
        let parts: Vec<&str> = rel.split('/').collect();
        let mut name = Vec::new();
        for (i, part) in parts.iter().enumerate() {
            let id = a
                .children(dir)
                .unwrap()
                .find(|&id| {
                    a.child_name(dir, id, &mut name);
                    name == part.as_bytes()
                })
                .unwrap_or_else(|| panic!("{rel}: no {part}"));
            if i + 1 == parts.len() {
                return (dir, id);
            }
            dir = a.dir_of(id);
        }
        unreachable!()
    }

    fn write(p: &Path, bytes: usize) {
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, vec![b'x'; bytes]).unwrap();
    }

    #[test]
    fn deletes_exactly_the_selected_directory_and_updates_totals() {
        let t = scratch("exact");
        write(&t.join("keep/a.txt"), 5000);
        write(&t.join("victim/one/two/deep.bin"), 70000);
        write(&t.join("victim/x"), 10);
        std::os::unix::fs::symlink(t.join("keep"), t.join("victim/link-to-keep")).unwrap();
        write(&t.join("victim-sibling/z"), 10);
        let (a, r) = scan_tree(&t);
        let before = a.dir_totals(r);
        let (dir, id) = find(&a, r, "victim");
        let victim = a.dir_totals(a.dir_of(id));
        let p = Progress::default();
        delete(&a, dir, id, &p);
        assert_eq!(p.failed.load(Ordering::Relaxed), 0, "{:?}", p.failures.lock().unwrap());
        assert!(!t.join("victim").exists());
        assert!(t.join("keep/a.txt").exists() && t.join("victim-sibling/z").exists());
        assert!(a.removed(id));
        let after = a.dir_totals(r);
        assert_eq!(after.0, before.0 - victim.0);
        assert_eq!(after.2, before.2 - victim.2 - 1);
        std::fs::remove_dir_all(&t).unwrap();
    }

    #[test]
    fn a_directory_swapped_for_a_symlink_is_not_followed() {
        let t = scratch("swap");
        write(&t.join("outside/precious"), 100);
        write(&t.join("sel/inner/file"), 100);
        write(&t.join("sel/other"), 100);
        let (a, r) = scan_tree(&t);
        // Between scan and delete, sel/inner becomes a symlink to a directory outside.
        std::fs::remove_dir_all(t.join("sel/inner")).unwrap();
        std::os::unix::fs::symlink(t.join("outside"), t.join("sel/inner")).unwrap();
        let (dir, id) = find(&a, r, "sel");
        let p = Progress::default();
        delete(&a, dir, id, &p);
        assert!(t.join("outside/precious").exists(), "nothing outside the selection is removed");
        assert!(t.join("sel/inner").is_symlink(), "the symlink is not emptied or removed");
        assert!(!t.join("sel/other").exists(), "the rest of the selection is removed");
        let (_, inner) = find(&a, r, "sel/inner");
        assert!(!a.removed(inner) && !a.removed(id), "what failed is still in the tree");
        let failures = p.failures.lock().unwrap();
        assert_eq!(failures.len(), 1, "{failures:?}");
        assert!(failures[0].0.ends_with(b"sel/inner"));

        // The selection itself swapped for a symlink: nothing at all is removed.
        std::fs::remove_dir_all(t.join("outside")).unwrap();
        write(&t.join("outside/precious"), 100);
        write(&t.join("sel2/f"), 1);
        let (a, r) = scan_tree(&t);
        std::fs::remove_dir_all(t.join("sel2")).unwrap();
        std::os::unix::fs::symlink(t.join("outside"), t.join("sel2")).unwrap();
        let (dir, id) = find(&a, r, "sel2");
        let p = Progress::default();
        delete(&a, dir, id, &p);
        assert!(t.join("outside/precious").exists() && t.join("sel2").is_symlink());
        assert_eq!(p.removed.load(Ordering::Relaxed), 0);
        std::fs::remove_dir_all(&t).unwrap();
    }

    #[test]
    fn a_directory_replaced_by_another_is_left_alone() {
        let t = scratch("replaced");
        write(&t.join("sel/sub/f"), 1);
        let (a, r) = scan_tree(&t);
        // Moved away first, so the new directory cannot reuse the old inode number.
        std::fs::rename(t.join("sel/sub"), t.join("old-sub")).unwrap();
        write(&t.join("sel/sub/f"), 1);
        let (dir, id) = find(&a, r, "sel");
        let p = Progress::default();
        delete(&a, dir, id, &p);
        assert!(t.join("sel/sub/f").exists(), "a different inode under the same name is kept");
        assert_eq!(p.failures.lock().unwrap()[0].1, Why::Changed);
        std::fs::remove_dir_all(&t).unwrap();
    }

    #[test]
    fn new_files_keep_their_directory_and_are_reported() {
        let t = scratch("newfile");
        write(&t.join("sel/a"), 1);
        let (a, r) = scan_tree(&t);
        write(&t.join("sel/created-later"), 1);
        let (dir, id) = find(&a, r, "sel");
        let p = Progress::default();
        delete(&a, dir, id, &p);
        assert!(t.join("sel/created-later").exists() && !t.join("sel/a").exists());
        assert!(!a.removed(id));
        assert_eq!(p.failures.lock().unwrap()[0].1, Why::Os(Errno(39)), "Directory not empty");
        std::fs::remove_dir_all(&t).unwrap();
    }

    #[test]
    fn files_and_symlinks_are_unlinked_not_followed() {
        let t = scratch("leaf");
        write(&t.join("target"), 10);
        std::os::unix::fs::symlink(t.join("target"), t.join("link")).unwrap();
        let (a, r) = scan_tree(&t);
        let (dir, id) = find(&a, r, "link");
        let p = Progress::default();
        delete(&a, dir, id, &p);
        assert!(t.join("target").exists() && !t.join("link").is_symlink());
        std::fs::remove_dir_all(&t).unwrap();
    }

    /// Issue 17: a directory between the scan root and the selection replaced after the
    /// scan by another real directory holding the same names: nothing in it is touched.
    #[test]
    fn an_ancestor_replaced_after_the_scan_is_refused() {
        let t = scratch("ancestor");
        write(&t.join("mid/victim"), 100);
        let (a, r) = scan_tree(&t);
        std::fs::rename(t.join("mid"), t.join("old-mid")).unwrap();
        write(&t.join("mid/victim"), 100);
        let (dir, id) = find(&a, r, "mid/victim");
        let p = Progress::default();
        delete(&a, dir, id, &p);
        assert!(t.join("mid/victim").exists() && t.join("old-mid/victim").exists());
        assert_eq!(p.removed.load(Ordering::Relaxed), 0);
        assert_eq!(p.failures.lock().unwrap()[0].1, Why::Changed);
        assert!(!a.removed(id));
        std::fs::remove_dir_all(&t).unwrap();
    }

    /// Issue 10.4: names a, b, c of one file; deleting a and b keeps the file's size in
    /// the totals (c still holds the data, and du counts it); deleting c frees it.
    #[test]
    fn a_hard_linked_file_counts_until_its_last_name_goes() {
        let t = scratch("links");
        write(&t.join("one/a"), 100_000);
        std::fs::create_dir_all(t.join("two")).unwrap();
        std::fs::hard_link(t.join("one/a"), t.join("one/b")).unwrap();
        std::fs::hard_link(t.join("one/a"), t.join("two/c")).unwrap();
        write(&t.join("one/small"), 10);
        let (a, r) = scan_tree(&t);
        let before = a.dir_totals(r);
        // Which name carries the sizes depends on thread timing: delete in an order
        // that removes the carrier before the last name, whichever it is.
        let mut names = ["one/a", "one/b", "two/c"].map(|n| (n, find(&a, r, n)));
        names.sort_by_key(|(_, (_, id))| a.flags(*id) & arena::F_DUP_LINK != 0);
        for &(name, (dir, id)) in &names[..2] {
            let p = Progress::default();
            delete(&a, dir, id, &p);
            assert_eq!(p.removed.load(Ordering::Relaxed), 1, "{name}");
            assert!(!t.join(name).exists());
        }
        let after = a.dir_totals(r);
        assert_eq!((after.0, after.1, after.2), (before.0, before.1, before.2 - 2), "the data is still there");
        // du, which counts each file once, agrees on the disk use (directories included).
        let du = std::process::Command::new("du").args(["-s", "-B512"]).arg(&t).output().unwrap();
        let du_blocks: u64 = String::from_utf8_lossy(&du.stdout).split_whitespace().next().unwrap().parse().unwrap();
        assert_eq!(after.0, du_blocks * 512);
        let (name, (dir, id)) = names[2];
        let p = Progress::default();
        delete(&a, dir, id, &p);
        assert!(!t.join(name).exists());
        let last = a.dir_totals(r);
        assert_eq!(last.0, before.0 - a.own_sizes(id).0, "the last name frees it");
        std::fs::remove_dir_all(&t).unwrap();
    }

    /// Issue 10.3: a selection deeper than `OPEN_HANDLES` is removed whole, re-opening
    /// the directories whose handles were closed (and the failure count stays right).
    #[test]
    fn a_selection_deeper_than_the_handle_budget() {
        let t = scratch("deep");
        let levels = OPEN_HANDLES * 3 + 5;
        let deep: PathBuf = (0..levels).fold(t.join("sel"), |p, i| p.join(format!("d{i}")));
        write(&deep.join("f"), 10);
        write(&t.join("sel/d0/d1/side"), 10);
        write(&t.join("keep"), 10);
        let (a, r) = scan_tree(&t);
        let (dir, id) = find(&a, r, "sel");
        let p = Progress::default();
        delete(&a, dir, id, &p);
        assert_eq!(p.failed.load(Ordering::Relaxed), 0, "{:?}", p.failures.lock().unwrap());
        assert_eq!(p.removed.load(Ordering::Relaxed), levels as u64 + 3);
        assert!(!t.join("sel").exists() && t.join("keep").exists());
        std::fs::remove_dir_all(&t).unwrap();
    }

    /// A directory whose handle was closed is re-opened by names, and checked: swapped
    /// for another directory meanwhile, it is refused (and nothing below it touched).
    #[test]
    fn a_reopened_directory_is_checked_again() {
        let t = scratch("reopen");
        let levels = OPEN_HANDLES + 4;
        let deep: PathBuf = (0..levels).fold(t.join("sel"), |p, i| p.join(format!("d{i}")));
        write(&deep.join("f"), 10);
        let (a, r) = scan_tree(&t);
        let (dir, id) = find(&a, r, "sel");
        let (base, path) = open_chain(&a, dir).ok().unwrap();
        let mut w = Deletion { a: &a, p: &Progress::default(), base, stack: Vec::new(), path, links: Links::default() };
        // Enter every level as the walk would, closing the shallow handles.
        let (mut parent_dir, mut entry, mut name) = (dir, id, CString::new("sel").unwrap());
        for i in 0..=levels {
            let sub = a.dir_of(entry);
            let k = w.stack.len().checked_sub(1);
            let mount = k.map_or(w.base.mount, |k| w.stack[k].mount);
            let o = enter(&a, w.open_handle(k), mount, &name, sub, &w.path).ok().unwrap();
            w.push(frame(&a, sub, entry, parent_dir, name.clone(), o));
            if i < levels {
                parent_dir = sub;
                entry = a.children(sub).unwrap().start;
                name = CString::new(format!("d{i}")).unwrap();
            }
        }
        assert!(w.stack[0].handle.is_none() && w.stack[levels].handle.is_some());
        assert!(w.reopen(2).is_ok(), "an unchanged chain re-opens");
        // sel/d0 replaced by a copy: its inode differs.
        w.stack[0].handle = None;
        w.stack[1].handle = None;
        w.stack[2].handle = None;
        std::fs::rename(t.join("sel/d0"), t.join("old-d0")).unwrap();
        std::fs::create_dir_all(t.join("sel/d0/d1")).unwrap();
        assert_eq!(w.reopen(2).err(), Some(Why::Changed));
        std::fs::remove_dir_all(&t).unwrap();
    }

    /// Every entry that fails is counted; the first 100 are kept with their paths.
    #[test]
    fn failures_past_the_first_hundred_are_counted_not_kept() {
        let t = scratch("many");
        for i in 0..150 {
            write(&t.join(format!("sel/f{i}")), 1);
        }
        let (a, r) = scan_tree(&t);
        let scanned = std::fs::read_dir(t.join("sel")).unwrap().count() as u64;
        // Gone before the delete: every unlink fails (ENOENT), and so does the directory.
        for e in std::fs::read_dir(t.join("sel")).unwrap() {
            std::fs::remove_file(e.unwrap().path()).unwrap();
        }
        std::fs::write(t.join("sel/new"), b"x").unwrap();
        let (dir, id) = find(&a, r, "sel");
        let p = Progress::default();
        delete(&a, dir, id, &p);
        assert_eq!(p.failed.load(Ordering::Relaxed), scanned, "each file (the directory is then not tried)");
        let failures = p.failures.lock().unwrap();
        assert_eq!(failures.len(), MAX_FAILURES_KEPT);
        assert!(failures.iter().all(|(_, why)| *why == Why::Os(Errno::NOENT)));
        assert!(t.join("sel/new").exists() && !a.removed(id));
        std::fs::remove_dir_all(&t).unwrap();
    }

    /// Excluded entries were never looked into: an excluded directory is not emptied,
    /// whether it is the selection or inside it; the rest of the selection goes.
    #[test]
    fn excluded_directories_are_left_alone() {
        let t = scratch("excluded");
        write(&t.join("sel/skip-me/precious"), 10);
        write(&t.join("sel/plain"), 10);
        write(&t.join("skip-top/precious"), 10);
        let mut ex = Exclude::default();
        ex.add(b"skip-*");
        let (a, r) = scan_with(&t, Some(&ex), false);
        for (rel, refused) in [("sel", "sel/skip-me"), ("skip-top", "skip-top")] {
            let (dir, id) = find(&a, r, rel);
            let p = Progress::default();
            delete(&a, dir, id, &p);
            let failures = p.failures.lock().unwrap();
            assert_eq!(failures.len(), 1, "{rel}: {failures:?}");
            assert!(
                failures[0].0.ends_with(refused.as_bytes()) && failures[0].1 == Why::NotScanned,
                "{rel}: {failures:?}"
            );
            assert!(!a.removed(id), "{rel} stays in the tree");
        }
        assert!(t.join("sel/skip-me/precious").exists() && t.join("skip-top/precious").exists());
        assert!(!t.join("sel/plain").exists(), "the rest of the selection is removed");
        std::fs::remove_dir_all(&t).unwrap();
    }

    /// Unmounts on drop, so a failing test leaves no mount behind.
    struct Mounted(PathBuf);
    impl Drop for Mounted {
        fn drop(&mut self) {
            let _ = std::process::Command::new("umount").arg(&self.0).status();
        }
    }

    /// Another file system below the selection (scanned with `-x`): its mount point is
    /// not scanned, so nothing on it is removed, as the selection or inside it.
    #[test]
    fn other_file_systems_are_left_alone() {
        let t = scratch("otherfs");
        write(&t.join("sel/plain"), 10);
        std::fs::create_dir_all(t.join("sel/mnt")).unwrap();
        let mounted = std::process::Command::new("mount")
            .args(["-t", "tmpfs", "-o", "size=1m", "dfdu-test"])
            .arg(t.join("sel/mnt"))
            .status();
        if !mounted.is_ok_and(|s| s.success()) {
            eprintln!("SKIP: other_file_systems_are_left_alone needs root to mount a tmpfs");
            return;
        }
        let guard = Mounted(t.join("sel/mnt"));
        write(&t.join("sel/mnt/precious"), 10);
        let (a, r) = scan_with(&t, None, true);
        for rel in ["sel/mnt", "sel"] {
            let (dir, id) = find(&a, r, rel);
            let p = Progress::default();
            delete(&a, dir, id, &p);
            let failures = p.failures.lock().unwrap();
            assert_eq!(failures.len(), 1, "{rel}: {failures:?}");
            assert_eq!(failures[0].1, Why::MountPoint, "{rel}: {failures:?}");
            assert!(failures[0].0.ends_with(b"sel/mnt"), "{rel}: {failures:?}");
            assert!(!a.removed(id));
        }
        assert!(t.join("sel/mnt/precious").exists() && !t.join("sel/plain").exists());
        drop(guard);
        std::fs::remove_dir_all(&t).unwrap();
    }

    /// What the browser shows for a failure: the system's own text for an errno (std's
    /// strerror is the reference), our sentence for the two refusals.
    #[test]
    fn failure_texts() {
        let os = std::io::Error::from_raw_os_error(Errno::NOENT.0).to_string();
        assert_eq!(os.split(" (os error").next().unwrap(), Why::Os(Errno::NOENT).text());
        assert!(
            Why::Changed.text().contains("left alone")
                && Why::NotScanned.text().contains("not scanned")
                && Why::MountPoint.text().contains("mount")
        );
    }

    /// A file and a FIFO that became directories after the scan fail with the system's own
    /// error (what `unlink` says for a directory), not as "not scanned", and stay.
    #[test]
    fn entries_that_became_directories_fail_with_the_system_error() {
        let t = scratch("became-dir");
        write(&t.join("sel/file"), 10);
        let made = std::process::Command::new("mkfifo").arg(t.join("sel/fifo")).status().unwrap();
        assert!(made.success());
        let (a, r) = scan_tree(&t);
        for name in ["file", "fifo"] {
            std::fs::remove_file(t.join("sel").join(name)).unwrap();
            write(&t.join("sel").join(name).join("inside"), 1);
        }
        let eisdir = std::fs::remove_file(t.join("sel/file")).unwrap_err().raw_os_error().unwrap();
        let (dir, id) = find(&a, r, "sel");
        let p = Progress::default();
        delete(&a, dir, id, &p);
        let failures = p.failures.lock().unwrap();
        assert_eq!(failures.len(), 2, "{failures:?}");
        assert!(failures.iter().all(|(_, why)| *why == Why::Os(Errno(eisdir))), "{failures:?}");
        assert!(t.join("sel/file/inside").exists() && t.join("sel/fifo/inside").exists());
        std::fs::remove_dir_all(&t).unwrap();
    }
}
