//! Hostile and unusual trees, one place for all of them (issue 10). Each case says in one
//! line what an attacker who owns one directory of the tree (or an unlucky admin) does,
//! and what dfdu must do instead. Sections by area; add new cases to the matching one.
//!
//! * **delete** — what `dfdu browse` may remove. Every case drives the real browser in
//!   tmux (its own server and socket), presses the keys a user would, and then checks on
//!   disk that exactly the expected entries are gone: everything outside the selection,
//!   and every mount inside it, is untouched.
//!
//! Cases that mount need root: without it they print `SKIP:` and pass, unless
//! `DFDU_REQUIRE_ROOT=1` says they must run (CI runs as root). Mounts are undone by a
//! guard on drop, also when the test fails (`umount`, then `umount -l`).

mod common;

use common::tmux::{have_tmux, listing_with_sizes, write, Term, WAIT};
use common::Scratch;
use std::collections::BTreeSet;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

// ---------------------------------------------------------------------------------------
// Harness: mounts and deep chains (scratch trees and the terminal are in tests/common).

/// Whether this test may mount; prints `SKIP:` when not (and fails if it must run).
fn can_mount(test: &str) -> bool {
    let root = common::is_root();
    if !root {
        eprintln!("SKIP: {test} needs root to mount");
        assert!(std::env::var_os("DFDU_REQUIRE_ROOT").is_none_or(|v| v != "1"), "DFDU_REQUIRE_ROOT=1 but not root");
    }
    root
}

/// Whether `path` is a mount point now (from the mount table).
fn is_mounted(path: &Path) -> bool {
    let table = std::fs::read_to_string("/proc/self/mountinfo").unwrap();
    table.lines().any(|l| l.split(' ').nth(4) == Some(path.to_str().unwrap()))
}

/// Builds `top` with a chain of `levels` directories named `d` below it and a file `f`
/// at the bottom, wrapping it one level at a time so that no path gets long.
fn chain(top: &Path, levels: usize) {
    write(&top.join("f"), 3);
    let wrap = top.with_extension("wrap");
    for _ in 0..levels {
        std::fs::create_dir(&wrap).unwrap();
        std::fs::rename(top, wrap.join("d")).unwrap();
        std::fs::rename(&wrap, top).unwrap();
    }
}

/// Runs `f` with a short path to the bottom of a chain (through /proc/self/fd).
fn at_bottom(top: &Path, levels: usize, f: impl FnOnce(&Path)) {
    use std::os::fd::AsRawFd;
    let mut dir = std::fs::File::open(top).unwrap();
    for _ in 0..levels {
        dir = std::fs::File::open(format!("/proc/self/fd/{}/d", dir.as_raw_fd())).unwrap();
    }
    f(Path::new(&format!("/proc/self/fd/{}", dir.as_raw_fd())));
}

/// `dfdu browse ARGS` after `prefix`, in a 100 × 30 window.
fn browse(dir: &Path, prefix: &str, args: &str) -> Term {
    Term::start(dir, prefix, args, 100, 30)
}

// ---------------------------------------------------------------------------------------
// delete

/// `mount --bind bl bl/sub` makes a loop; deleting `sub` in the browser removed `bl/file`,
/// outside the selection (issue 10.1). Now: `sub` is a mount point (and a loop), left
/// alone; the confirmation says so first, the result after; nothing on disk changes.
#[test]
fn delete_through_a_bind_mount_of_an_ancestor_removes_nothing() {
    if !have_tmux() || !can_mount("delete_through_a_bind_mount_of_an_ancestor_removes_nothing") {
        return;
    }
    let mut t = Scratch::new("loop");
    let bl = t.dir.join("bl");
    write(&bl.join("file"), 3000);
    std::fs::create_dir(bl.join("sub")).unwrap();
    write(&t.dir.join("beside/keep"), 10);
    t.mount_bind(&bl, &bl.join("sub")).unwrap();
    let before = listing_with_sizes(&t.dir);
    let term = browse(&t.dir, "", &format!("'{}'", bl.display()));
    term.wait_for("Scan finished");
    let ask = term.ask_delete("/sub");
    assert!(ask.contains("It holds 1 mount point"), "the confirmation says it first:\n{ask}");
    let done = term.confirm();
    assert!(done.contains("1 mount point left alone"), "{done}");
    assert_eq!(listing_with_sizes(&t.dir), before, "nothing on disk changed");
    assert!(is_mounted(&bl.join("sub")), "the bind mount is still there");

    // The scan marked `sub` as a loop (`^`) and did not enter it, so nothing inside it can
    // be selected: `sub/file` would be `bl/file` itself. Delete's own loop check, for a tree
    // that changed after the scan, is covered by the unit tests in `browse/delete.rs`.
    term.keys(&["Escape"]);
    let s = term.wait_for("/sub");
    let row = s.lines().find(|l| l.trim_end().ends_with("/sub")).unwrap_or_default();
    assert!(row.contains('^'), "sub is marked as a loop:\n{s}");
    term.select("/sub");
    term.keys(&["Enter"]);
    std::thread::sleep(Duration::from_millis(300));
    assert!(!term.names().iter().any(|n| n == "file"), "the loop was entered:\n{}", term.screen());
    assert_eq!(listing_with_sizes(&t.dir), before, "nothing on disk changed");
}

/// A tmpfs and a same-device bind mount of a directory outside the tree sit inside the
/// selection; deleting the selection emptied both (issue 10.2), also with `-x` for the
/// bind mount. Now: both are left alone with their contents, the rest of the selection
/// goes, and the result box counts what is left.
#[test]
fn mount_points_inside_a_selection_are_left_alone() {
    if !have_tmux() || !can_mount("mount_points_inside_a_selection_are_left_alone") {
        return;
    }
    for (args, title) in [("", "9 of 13 entries could not be deleted"), ("-x", "7 of 11 entries could not be deleted")]
    {
        let mut t = Scratch::new(&format!("mounts{args}"));
        let tree = t.dir.join("tree");
        write(&tree.join("sel/a"), 5000);
        write(&tree.join("sel/x/y/z"), 7000);
        std::fs::create_dir_all(tree.join("sel/tmp")).unwrap();
        std::fs::create_dir_all(tree.join("sel/deep/bind")).unwrap();
        write(&tree.join("keep/k"), 100);
        write(&t.dir.join("outside/precious"), 2000);
        write(&t.dir.join("outside/sub/f2"), 3000);
        t.mount_tmpfs(&tree.join("sel/tmp")).unwrap();
        write(&tree.join("sel/tmp/inside/f"), 4000);
        t.mount_bind(&t.dir.join("outside"), &tree.join("sel/deep/bind")).unwrap();
        let before = listing_with_sizes(&t.dir);

        let term = browse(&t.dir, "", &format!("{args} '{}'", tree.display()));
        term.wait_for("Scan finished");
        let ask = term.ask_delete("/sel");
        assert!(ask.contains("It holds 2 mount points"), "dfdu browse {args}: the confirmation says it first:\n{ask}");
        let done = term.confirm();
        assert!(done.contains("2 mount points left alone"), "dfdu browse {args}:\n{done}");
        assert!(done.contains(title), "dfdu browse {args}: the box counts what is left:\n{done}");

        let gone = ["tree/sel/a 5000", "tree/sel/x/", "tree/sel/x/y/", "tree/sel/x/y/z 7000"];
        let expected: BTreeSet<String> = before.iter().filter(|p| !gone.contains(&p.as_str())).cloned().collect();
        assert_eq!(
            listing_with_sizes(&t.dir),
            expected,
            "dfdu browse {args}: only the selection outside the mounts went"
        );
        assert!(is_mounted(&tree.join("sel/tmp")) && is_mounted(&tree.join("sel/deep/bind")));
    }
}

/// A selection 3,000 levels deep under `prlimit --nofile=1024` removed nothing ("Too many
/// open files", issue 10.3). Now it is removed whole; and when something at the bottom
/// stays, the box counts every directory above it as left.
#[test]
fn a_deep_selection_under_a_low_open_file_limit() {
    if !have_tmux() {
        return;
    }
    let t = Scratch::new("deep");
    let tree = t.dir.join("tree");
    write(&tree.join("keep/k"), 100);
    // "chain" and 2,999 directories below it, with one file at the bottom.
    chain(&tree.join("chain"), 2999);
    let prlimit = "prlimit --nofile=1024:1024";
    let term = browse(&t.dir, prlimit, &format!("'{}'", tree.display()));
    term.wait_for("Scan finished");
    term.ask_delete("/chain");
    let done = term.confirm();
    eprintln!("{}", done.lines().rev().nth(1).unwrap_or_default());
    assert!(done.contains("3,001 items removed") && !done.contains("could not"), "{done}");
    assert!(!tree.join("chain").exists() && tree.join("keep/k").exists());
    drop(term);

    // A file created at the bottom after the scan keeps all 3,000 directories.
    chain(&tree.join("chain"), 2999);
    let term = browse(&t.dir, prlimit, &format!("'{}'", tree.display()));
    term.wait_for("Scan finished");
    at_bottom(&tree.join("chain"), 2999, |bottom| write(&bottom.join("late"), 4));
    term.ask_delete("/chain");
    let done = term.confirm();
    assert!(done.contains("3,000 of 3,001 entries could not be deleted"), "{done}");
    assert!(tree.join("chain").exists() && tree.join("keep/k").exists());
}

/// Issue 17: after the scan, a directory between the scan root and the selection is
/// replaced by another real directory holding the same names. The delete must refuse:
/// nothing in the new directory (or the moved-away old one) is touched.
#[test]
fn an_ancestor_replaced_after_the_scan_is_not_deleted_through() {
    if !have_tmux() {
        return;
    }
    let t = Scratch::new("ancestor");
    let tree = t.dir.join("tree");
    write(&tree.join("mid/victim.txt"), 3000);
    write(&tree.join("mid/other"), 10);
    let term = browse(&t.dir, "", &format!("'{}'", tree.display()));
    term.wait_for("Scan finished");
    term.select("/mid");
    term.keys(&["Enter"]);
    term.wait_for("victim.txt");
    std::fs::rename(tree.join("mid"), tree.join("old-mid")).unwrap();
    write(&tree.join("mid/victim.txt"), 3000);
    write(&tree.join("mid/new"), 10);
    let before = listing_with_sizes(&t.dir);
    term.ask_delete("victim.txt");
    let done = term.confirm();
    assert!(done.contains("no longer the") && done.contains("1 failed"), "{done}");
    assert_eq!(listing_with_sizes(&t.dir), before, "nothing changed on disk");
}

/// Out of memory while browsing ended the process with the alternate screen still on
/// and the cursor hidden (issue 10.11). Now the terminal is put back before the abort
/// message. The debugging knob `DFDU_DEBUG_OOM_AFTER_FRAMES` makes the browser, once its
/// first frame is up, ask for more memory than any allocator has: the allocation fails
/// in the real allocator and goes through the real failure path (the wrapped global
/// allocator's hook, then std's "memory allocation failed" abort). Without the hook the
/// pane stays on the alternate screen with the cursor hidden, and this test fails.
#[test]
fn out_of_memory_in_the_browser_restores_the_terminal() {
    if !have_tmux() {
        return;
    }
    let t = Scratch::new("oom");
    let tree = t.dir.join("tree");
    write(&tree.join("a/file"), 5000);
    let term = browse(&t.dir, "RUST_BACKTRACE=0 DFDU_DEBUG_OOM_AFTER_FRAMES=2", &format!("'{}'", tree.display()));
    // Without a backtrace (RUST_BACKTRACE=1 in the environment pushed the message off the
    // pane). The exit status also goes to a file: on a terminal left raw, "EXIT=" may never
    // show as one word.
    let exit = PathBuf::from(format!("{}.exit", term.script.display()));
    let start = Instant::now();
    while !exit.exists() {
        assert!(start.elapsed() < WAIT, "dfdu did not end:\n{}", term.screen());
        std::thread::sleep(Duration::from_millis(50));
    }
    std::thread::sleep(Duration::from_millis(300));
    let s = term.screen();
    assert_eq!(term.pane("#{alternate_on}"), "0", "the alternate screen is left:\n{s}");
    assert_eq!(term.pane("#{cursor_flag}"), "1", "the cursor is visible again:\n{s}");
    assert!(s.contains("memory allocation of") && s.contains("EXIT=134"), "the process ran out of memory:\n{s}");
    let s = term.wait_for("MODE=");
    assert!(s.contains("MODE=icanon"), "the terminal is back in canonical mode:\n{s}");
}

/// Issue 29.1: the rules of a single delete hold for each mark of a marked delete. Four
/// marks: a directory swapped for a symlink to a directory outside after the scan, a
/// directory holding a tmpfs mount, a bind mount of its own parent (a loop), and a plain
/// file. Only the file and what is beside the tmpfs go; the link, the mounts and
/// everything outside stay, and the confirmation and the result count the mounts.
#[test]
fn marked_deletes_keep_the_rules_of_a_single_delete() {
    if !have_tmux() || !can_mount("marked_deletes_keep_the_rules_of_a_single_delete") {
        return;
    }
    let mut t = Scratch::new("marks");
    let tree = t.dir.join("tree");
    write(&tree.join("m1/inner/f"), 1000);
    write(&tree.join("m2/a"), 2000);
    std::fs::create_dir_all(tree.join("m2/tmp")).unwrap();
    write(&tree.join("bl/file"), 3000);
    std::fs::create_dir_all(tree.join("bl/sub")).unwrap();
    write(&tree.join("plain.txt"), 4000);
    write(&tree.join("keep/k"), 100);
    write(&t.dir.join("outside/precious"), 5000);
    t.mount_tmpfs(&tree.join("m2/tmp")).unwrap();
    write(&tree.join("m2/tmp/f"), 6000);
    t.mount_bind(&tree.join("bl"), &tree.join("bl/sub")).unwrap();
    let term = browse(&t.dir, "", &format!("'{}'", tree.display()));
    term.wait_for("Scan finished");
    for name in ["/m1", "/m2", "plain.txt"] {
        term.select(name);
        term.keys(&["Space"]);
    }
    term.select("/bl");
    term.keys(&["Enter"]);
    term.wait_for("/sub");
    term.select("/sub");
    term.keys(&["Space"]);
    term.wait_for("Marked: 4 ");
    // After the scan: m1 becomes a link to a directory outside the tree.
    std::fs::remove_dir_all(tree.join("m1")).unwrap();
    std::os::unix::fs::symlink(t.dir.join("outside"), tree.join("m1")).unwrap();
    let before = listing_with_sizes(&t.dir);
    term.keys(&["d"]);
    let ask = term.wait_for("Delete 4 marked entries");
    assert!(ask.contains("It holds 2 mount points"), "the confirmation counts the mounts first:\n{ask}");
    let done = term.confirm();
    assert!(done.contains("Deleted 4 marked entries") && done.contains("2 mount points left alone"), "{done}");
    let gone = ["tree/m2/a 2000", "tree/plain.txt 4000"];
    let expected: BTreeSet<String> = before.iter().filter(|p| !gone.contains(&p.as_str())).cloned().collect();
    assert_eq!(listing_with_sizes(&t.dir), expected, "only the file and what is beside the tmpfs went");
    assert!(tree.join("m1").is_symlink() && t.dir.join("outside/precious").exists(), "the link was not followed");
    assert!(is_mounted(&tree.join("m2/tmp")) && is_mounted(&tree.join("bl/sub")), "the mounts are still there");
}

/// Issue 29.2: the trash never copies and never crosses a mount. An entry on a tmpfs goes
/// to that file system's `$topdir/.Trash-$uid` (made mode 0700); an entry under a bind
/// mount of the home trash's own file system cannot be renamed across that mount and is
/// refused with the reason, left in place; a directory holding a mount point is refused
/// before anything happens.
#[test]
fn trash_stays_on_its_mount() {
    if !have_tmux() || !can_mount("trash_stays_on_its_mount") {
        return;
    }
    let mut t = Scratch::new("trash-mounts");
    let tree = t.dir.join("tree");
    let xdg = t.dir.join("xdg");
    std::fs::create_dir_all(tree.join("tmp")).unwrap();
    std::fs::create_dir_all(tree.join("bound")).unwrap();
    write(&t.dir.join("src/far.bin"), 3000);
    std::fs::create_dir_all(tree.join("holder/inner")).unwrap();
    t.mount_tmpfs(&tree.join("tmp")).unwrap();
    write(&tree.join("tmp/on-tmpfs.bin"), 4000);
    t.mount_bind(&t.dir.join("src"), &tree.join("bound")).unwrap();
    t.mount_tmpfs(&tree.join("holder/inner")).unwrap();
    write(&tree.join("holder/inner/x"), 10);
    let prefix = format!("XDG_DATA_HOME='{}'", xdg.display());
    let term = browse(&t.dir, &prefix, &format!("'{}'", tree.display()));
    term.wait_for("Scan finished");

    // On the tmpfs: its own trash.
    term.select("/tmp");
    term.keys(&["Enter"]);
    term.wait_for("on-tmpfs.bin");
    term.select("on-tmpfs.bin");
    term.keys(&["T"]);
    term.wait_for("Confirm move to the trash");
    term.keys(&["y"]);
    term.wait_for("Moved to the trash");
    let top_trash = tree.join("tmp/.Trash-0");
    assert!(top_trash.join("files/on-tmpfs.bin").is_file() && !tree.join("tmp/on-tmpfs.bin").exists());
    let info = std::fs::read_to_string(top_trash.join("info/on-tmpfs.bin.trashinfo")).unwrap();
    assert!(info.starts_with("[Trash Info]\nPath=") && info.contains("on-tmpfs.bin"), "{info}");
    assert_eq!(std::fs::metadata(&top_trash).unwrap().mode() & 0o777, 0o700);
    term.keys(&["Left"]);

    // Under the bind mount: the home trash is on the same device, but rename cannot
    // cross the mount, and nothing is copied.
    term.select("/bound");
    term.keys(&["Enter"]);
    term.wait_for("far.bin");
    term.select("far.bin");
    term.keys(&["T"]);
    term.wait_for("Confirm move to the trash");
    term.keys(&["y"]);
    let s = term.wait_for("could not be moved to the trash");
    assert!(s.contains("Invalid cross-device link") && s.contains("far.bin"), "{s}");
    assert!(t.dir.join("src/far.bin").is_file(), "left in place");
    assert!(!xdg.join("Trash/files/far.bin").exists(), "not copied");
    assert!(std::fs::read_dir(xdg.join("Trash/info")).map_or(true, |mut d| d.next().is_none()), "no info left behind");
    term.keys(&["Escape", "Left"]);

    // A directory holding a mount point: refused at once.
    term.select("/holder");
    term.keys(&["T"]);
    term.wait_for("a move to the trash would take them along");
    assert!(tree.join("holder/inner/x").exists());
}
