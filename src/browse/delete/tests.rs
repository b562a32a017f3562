//! Unit tests of the browser's delete: the checks before each removal, planted swaps
//! and symlinks, other mounts, and what is reported when a removal fails.

use super::*;
use crate::text::exclude::Exclude;
use crate::tree::sink::ArenaSink;
use crate::walk::reader::{Native, Reader};
use crate::walk::scan::{self, Walk};
use std::collections::HashSet;
use std::ffi::CString;
use std::path::{Path, PathBuf};

/// A test's scratch directory, removed when it goes out of scope: a test that fails (as
/// the bugs `make mutants-hand` plants make them) leaves nothing behind either.
struct Tmp(PathBuf);

impl std::ops::Deref for Tmp {
    type Target = Path;
    fn deref(&self) -> &Path {
        &self.0
    }
}

impl AsRef<Path> for Tmp {
    fn as_ref(&self) -> &Path {
        &self.0
    }
}

impl Drop for Tmp {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn scratch(label: &str) -> Tmp {
    let dir = std::env::temp_dir().join(format!("dfdu-delete-{label}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    Tmp(dir)
}

/// Scans `root` into a fresh arena; returns it with the root's directory index.
fn scan_tree(root: &Path) -> (Arena, u32) {
    scan_with(root, None, false)
}

/// `scan_tree` with exclude patterns and `-x` (stay on the root's file system).
fn scan_with(root: &Path, exclude: Option<&Exclude>, one_fs: bool) -> (Arena, u32) {
    let a = Arena::new();
    let path = CString::new(root.to_str().unwrap()).unwrap();
    let meta = Native::stat_path(&path, Follow::Yes).unwrap();
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
    names.sort_by_key(|(_, (_, id))| a.flags(*id).contains(arena::F_DUP_LINK));
    for &(name, (dir, id)) in &names[..2] {
        let p = Progress::default();
        delete(&a, dir, id, &p);
        assert_eq!(p.removed.load(Ordering::Relaxed), 1, "{name}");
        assert!(!t.join(name).exists());
    }
    let after = a.dir_totals(r);
    assert_eq!((after.0, after.1, after.2), (before.0, before.1, before.2 - 2), "the data is still there");
    // du, which counts each file once, agrees on the disk use (directories included).
    let du = std::process::Command::new("du").args(["-s", "-B512"]).arg(&*t).output().unwrap();
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
        assert!(failures[0].0.ends_with(refused.as_bytes()) && failures[0].1 == Why::NotScanned, "{rel}: {failures:?}");
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

/// Issue 25: in one run of the browser a file, then a subdirectory, then the directory
/// holding them are deleted. What went earlier counts as gone (it is skipped, not
/// removed again): the last delete must not fail with ENOENT and keep the directory.
#[test]
fn a_directory_after_its_children_in_the_same_run() {
    let t = scratch("sequence");
    write(&t.join("sel/first"), 3000);
    write(&t.join("sel/sub/inner"), 5000);
    write(&t.join("sel/last"), 10);
    write(&t.join("keep"), 10);
    let (a, r) = scan_tree(&t);
    let before = a.dir_totals(r);
    for (rel, gone) in [("sel/first", 1), ("sel/sub", 2)] {
        let (dir, id) = find(&a, r, rel);
        let p = Progress::default();
        delete(&a, dir, id, &p);
        assert_eq!(p.failed.load(Ordering::Relaxed), 0, "{rel}: {:?}", p.failures.lock().unwrap());
        assert_eq!(p.removed.load(Ordering::Relaxed), gone, "{rel}");
        assert!(!t.join(rel).exists(), "{rel}");
    }
    let (dir, id) = find(&a, r, "sel");
    let p = Progress::default();
    delete(&a, dir, id, &p);
    assert_eq!(p.failed.load(Ordering::Relaxed), 0, "{:?}", p.failures.lock().unwrap());
    assert_eq!(p.removed.load(Ordering::Relaxed), 2, "sel/last and sel itself, nothing twice");
    assert!(!t.join("sel").exists() && t.join("keep").exists());
    assert!(a.removed(id));
    let after = a.dir_totals(r);
    assert_eq!(after.2, before.2 - 5, "five entries left the item count");
    // du on what is left agrees with the totals the browser shows.
    let du = std::process::Command::new("du").args(["-s", "-B512"]).arg(&*t).output().unwrap();
    let du_blocks: u64 = String::from_utf8_lossy(&du.stdout).split_whitespace().next().unwrap().parse().unwrap();
    assert_eq!(after.0, du_blocks * 512);
    std::fs::remove_dir_all(&t).unwrap();
}

/// A file created two levels below the selection after the scan keeps its directory,
/// which keeps its parent and the selection: one failure is reported (the directory that
/// is not empty), and no rmdir is tried above it.
#[test]
fn a_failure_two_levels_down_is_reported_once() {
    let t = scratch("two-down");
    write(&t.join("sel/a/b/old"), 10);
    write(&t.join("sel/side"), 10);
    let (a, r) = scan_tree(&t);
    write(&t.join("sel/a/b/created-later"), 1);
    let (dir, id) = find(&a, r, "sel");
    let p = Progress::default();
    delete(&a, dir, id, &p);
    let failures = p.failures.lock().unwrap();
    assert_eq!(failures.len(), 1, "{failures:?}");
    assert!(failures[0].0.ends_with(b"sel/a/b") && failures[0].1 == Why::Os(Errno(39)), "{failures:?}");
    assert_eq!(p.failed.load(Ordering::Relaxed), 1);
    assert_eq!(p.removed.load(Ordering::Relaxed), 2, "sel/a/b/old and sel/side");
    assert!(t.join("sel/a/b/created-later").exists() && !t.join("sel/side").exists());
    for rel in ["sel", "sel/a", "sel/a/b"] {
        assert!(!a.removed(find(&a, r, rel).1), "{rel} stays in the tree");
    }
    std::fs::remove_dir_all(&t).unwrap();
}

/// Issue 29.1: the marks of several directories go in one run, each as a single delete
/// would go, and nothing else; one that was swapped for a symlink since the scan fails
/// alone, and a mark inside one already deleted is skipped.
#[test]
fn delete_all_removes_each_mark_and_nothing_else() {
    let t = scratch("marks");
    write(&t.join("a/one"), 1000);
    write(&t.join("a/keep"), 2000);
    write(&t.join("b/sub/two"), 3000);
    write(&t.join("b/keep"), 4000);
    write(&t.join("c/three"), 5000);
    write(&t.join("swapped/inner"), 6000);
    write(&t.join("outside/precious"), 7000);
    let (a, r) = scan_tree(&t);
    let before = a.dir_totals(r);
    let marks: Vec<(u32, u32)> =
        ["a/one", "b/sub", "b/sub/two", "c", "swapped"].iter().map(|p| find(&a, r, p)).collect();
    let gone_disk: u64 = [marks[0], marks[1], marks[3]]
        .iter()
        .map(|&(_, id)| if a.kind(id) == Kind::Dir { a.dir_totals(a.dir_of(id)).0 } else { a.own_sizes(id).0 })
        .sum();
    std::fs::remove_dir_all(t.join("swapped")).unwrap();
    std::os::unix::fs::symlink(t.join("outside"), t.join("swapped")).unwrap();
    // b/sub goes before b/sub/two: the second is inside the first and is skipped.
    let p = Progress::default();
    delete_all(&a, &marks, &p);
    assert!(p.done.load(Ordering::Relaxed));
    for gone in ["a/one", "b/sub", "c"] {
        assert!(!t.join(gone).exists(), "{gone} is deleted");
    }
    for kept in ["a/keep", "b/keep", "outside/precious"] {
        assert!(t.join(kept).exists(), "{kept} is not marked and stays");
    }
    assert!(t.join("swapped").is_symlink(), "the swapped mark is left alone");
    let failures = p.failures.lock().unwrap();
    assert_eq!(failures.len(), 1, "only the swapped mark fails: {failures:?}");
    assert!(failures[0].0.ends_with(b"swapped"), "{failures:?}");
    // one, sub, two, c, three.
    assert_eq!(p.removed.load(Ordering::Relaxed), 5);
    let after = a.dir_totals(r);
    assert_eq!(after.0, before.0 - gone_disk, "the totals lose exactly what was deleted");
    std::fs::remove_dir_all(&t).unwrap();
}

/// Issue 29.2: a hard-linked file moved to the trash leaves its sizes with its other name
/// in the tree (the data is still there), as a delete does; the trash has it whole.
#[test]
fn a_trashed_hard_link_leaves_its_sizes_with_the_other_name() {
    let t = scratch("trash-links");
    write(&t.join("tree/one/a"), 100_000);
    std::fs::create_dir_all(t.join("tree/two")).unwrap();
    std::fs::hard_link(t.join("tree/one/a"), t.join("tree/two/b")).unwrap();
    let (a, r) = scan_tree(&t.join("tree"));
    let before = a.dir_totals(r);
    let mut names = ["one/a", "two/b"].map(|n| find(&a, r, n));
    // The name that carries the sizes goes first.
    names.sort_by_key(|(_, id)| a.flags(*id).contains(arena::F_DUP_LINK));
    let uid = crate::platform::effective_uid().unwrap_or(0);
    let place = super::super::trash::Place { home: Some(t.join("xdg/Trash")), uid };
    let p = Progress::default();
    super::super::trash::trash_all(&a, &names[..1], &place, &p);
    assert_eq!(p.failed.load(Ordering::Relaxed), 0, "{:?}", p.failures.lock().unwrap());
    let after = a.dir_totals(r);
    assert_eq!((after.0, after.2), (before.0, before.2 - 1), "the other name carries the data");
    let moved = std::fs::read_dir(t.join("xdg/Trash/files")).unwrap().count();
    assert_eq!(moved, 1);
    std::fs::remove_dir_all(&*t).unwrap();
}
