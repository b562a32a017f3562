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
//!   fails the check, and in both cases that subtree is left alone.
//! * Entries are removed with `unlinkat` relative to their directory's handle: a symlink
//!   is removed itself, never its target; a non-directory that became a directory fails
//!   (`EISDIR`) instead of being emptied.
//! * The walk is iterative (a stack of open directories, one per level), so depth costs
//!   handles, never stack.
//!
//! # Keeping the tree consistent
//!
//! Each successful removal is applied to the arena at once (`Arena::remove`: the entry
//! is marked and its sizes leave every ancestor), so the browser always shows what is
//! still on disk as far as the scan knows: what was removed is gone, what failed stays.

use crate::meta::Errno;
use crate::platform::{self, Dir};
use crate::tree::arena::{self, Arena};
use std::ffi::CString;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Mutex;

/// At most this many failures are kept with their paths (the count keeps going).
const MAX_FAILURES_KEPT: usize = 100;

/// Why one entry was not removed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Why {
    Os(Errno),
    /// The directory on disk is not the one the scan saw (device or inode differ).
    Changed,
    /// Excluded or on another file system: the scan did not look inside.
    NotScanned,
}

impl Why {
    pub fn text(&self) -> String {
        match self {
            Why::Os(e) => platform::errno_text(*e),
            Why::Changed => "no longer the directory that was scanned; left alone".into(),
            Why::NotScanned => "not scanned (excluded or another file system); left alone".into(),
        }
    }
}

/// What a deletion has done so far; shared with the browser, which shows it.
#[derive(Default)]
pub struct Progress {
    pub removed: AtomicU64,
    pub failed: AtomicU64,
    /// The first failures: (path, why).
    pub failures: Mutex<Vec<(Vec<u8>, Why)>>,
    pub done: AtomicBool,
}

impl Progress {
    fn fail(&self, a: &Arena, dir: u32, id: u32, why: Why) {
        self.failed.fetch_add(1, Ordering::Relaxed);
        let mut f = self.failures.lock().unwrap();
        if f.len() < MAX_FAILURES_KEPT {
            f.push((crate::tree::path::child_path(a, dir, id), why));
        }
    }
}

fn cname(bytes: Vec<u8>) -> CString {
    // Names come from directory listings, which cannot hold NUL.
    CString::new(bytes).unwrap_or_default()
}

/// Opens `dir` relative to `parent` without following and checks it against the scan.
fn open_checked(a: &Arena, parent: &Dir, name: &CString, dir: u32) -> Result<Dir, Why> {
    let h = platform::open_at(parent, name, false).map_err(Why::Os)?;
    check(a, &h, dir)?;
    Ok(h)
}

fn check(a: &Arena, h: &Dir, dir: u32) -> Result<(), Why> {
    let id = platform::dir_id(h).map_err(Why::Os)?;
    if id != (a.dir_dev(dir), a.dir_ino(dir)) {
        return Err(Why::Changed);
    }
    Ok(())
}

/// Opens directory `dir` by walking from the scan root, checking each step.
fn open_chain(a: &Arena, dir: u32) -> Result<Dir, Why> {
    let mut chain = Vec::new();
    let mut d = dir;
    while d != arena::NO_DIR {
        chain.push(d);
        d = a.dir_parent(d);
    }
    let root = chain.pop().expect("a directory has a root");
    // The scan followed the root when it was a symlink; so does this, once.
    let h = platform::open_path(&cname(a.dir_name(root)), true).map_err(Why::Os)?;
    check(a, &h, root)?;
    let mut h = h;
    while let Some(d) = chain.pop() {
        h = open_checked(a, &h, &cname(a.dir_name(d)), d)?;
    }
    Ok(h)
}

/// One directory being emptied.
struct Frame {
    /// Its directory index, its entry and its parent's index, and its name there.
    dir: u32,
    entry: u32,
    parent: u32,
    name: CString,
    handle: Dir,
    /// The next child to remove, the end of the children, and the next child's name.
    next: u32,
    end: u32,
    name_at: u32,
    /// Something below could not be removed (so neither can this directory).
    blocked: bool,
}

fn frame(a: &Arena, dir: u32, entry: u32, parent: u32, name: CString, handle: Dir) -> Frame {
    let kids = a.children(dir).unwrap_or(0..0);
    Frame {
        dir,
        entry,
        parent,
        name,
        handle,
        next: kids.start,
        end: kids.end,
        name_at: a.names_at(dir),
        blocked: false,
    }
}

/// Removes entry `id` of directory `dir` — for a directory, with everything the scan
/// found below it — reporting into `p`. The caller has checked that the subtree's scan
/// is finished.
pub fn delete(a: &Arena, dir: u32, id: u32, p: &Progress) {
    run(a, dir, id, p);
    p.done.store(true, Ordering::Release);
}

fn run(a: &Arena, dir: u32, id: u32, p: &Progress) {
    let base = match open_chain(a, dir) {
        Ok(h) => h,
        Err(why) => return p.fail(a, dir, id, why),
    };
    let mut name = Vec::new();
    a.child_name(dir, id, &mut name);
    let name = cname(name);
    let flags = a.flags(id);
    if flags & 3 != arena::KIND_DIR || flags & (arena::F_EXCLUDED | arena::F_OTHER_FS) != 0 {
        remove_leaf(a, &base, dir, id, &name, p);
        return;
    }
    let sub = a.dir_of(id);
    let handle = match open_checked(a, &base, &name, sub) {
        Ok(h) => h,
        Err(why) => return p.fail(a, dir, id, why),
    };
    let mut stack = vec![frame(a, sub, id, dir, name, handle)];
    let mut child_name = Vec::new();
    while let Some(top) = stack.last_mut() {
        if top.next < top.end {
            let child = top.next;
            top.next += 1;
            top.name_at = a.read_name(top.name_at, &mut child_name);
            let flags = a.flags(child);
            if flags & arena::F_REMOVED != 0 {
                continue;
            }
            let cn = cname(child_name.clone());
            if flags & 3 == arena::KIND_DIR && flags & (arena::F_EXCLUDED | arena::F_OTHER_FS) == 0 {
                let csub = a.dir_of(child);
                match open_checked(a, &top.handle, &cn, csub) {
                    Ok(h) => {
                        let f = frame(a, csub, child, top.dir, cn, h);
                        stack.push(f);
                    }
                    Err(why) => {
                        top.blocked = true;
                        p.fail(a, top.dir, child, why);
                    }
                }
            } else if !remove_leaf(a, &top.handle, top.dir, child, &cn, p) {
                top.blocked = true;
            }
            continue;
        }
        let done = stack.pop().expect("the loop checked the top");
        let parent_handle = stack.last().map_or(&base, |f| &f.handle);
        if done.blocked {
            // Its contents failed and are reported; it is not empty, so it stays.
            if let Some(f) = stack.last_mut() {
                f.blocked = true;
            }
            continue;
        }
        drop(done.handle);
        match platform::remove_at(parent_handle, &done.name, true) {
            Ok(()) => {
                a.remove(done.parent, done.entry);
                p.removed.fetch_add(1, Ordering::Relaxed);
            }
            Err(e) => {
                p.fail(a, done.parent, done.entry, Why::Os(e));
                if let Some(f) = stack.last_mut() {
                    f.blocked = true;
                }
            }
        }
    }
}

/// Unlinks a non-directory entry (or an unscanned directory, which fails and stays).
fn remove_leaf(a: &Arena, h: &Dir, dir: u32, id: u32, name: &CString, p: &Progress) -> bool {
    let flags = a.flags(id);
    let unscanned_dir = flags & (arena::F_EXCLUDED | arena::F_OTHER_FS) != 0
        && (flags & 3 == arena::KIND_DIR || flags & 3 == arena::KIND_OTHER);
    match platform::remove_at(h, name, false) {
        Ok(()) => {
            a.remove(dir, id);
            p.removed.fetch_add(1, Ordering::Relaxed);
            true
        }
        Err(e) => {
            let why = if unscanned_dir && e != Errno::NOENT { Why::NotScanned } else { Why::Os(e) };
            p.fail(a, dir, id, why);
            false
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
            let walk = Walk {
                threads: 2,
                follow_all: false,
                follow_root: true,
                one_fs_dev: one_fs.then_some(meta.dev),
                exclude,
                seen_before: &empty,
                claim_dirs: true,
                fd_budget: 64,
                check_moved: false,
            };
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
            assert_eq!(failures[0].1, Why::NotScanned, "{rel}: {failures:?}");
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
        assert!(Why::Changed.text().contains("left alone") && Why::NotScanned.text().contains("not scanned"));
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
