//! Key journeys against an in-memory screen, on trees built in an arena (exact
//! sizes, no file system), in the manner of dua-cli's `journeys_readonly.rs`.

use super::*;
use crate::meta::Kind;
use crate::platform::Follow;
use crate::term::{width, Key, Screen};
use crate::tree::arena::{self, Arena, NO_DIR};
use crate::tree::arena::{name_cost, Flags, NewEntry};
use std::collections::BTreeMap;

/// A tree to build: files by path with their size; directories are implied.
#[derive(Default)]
struct Node {
    size: u64,
    kids: BTreeMap<Vec<u8>, Node>,
    is_dir: bool,
}

/// Builds `files` (path, bytes) under a root named `/r`; every directory is done
/// except those named in `unlisted` (listed nowhere, still "scanning").
fn tree(files: &[(&[u8], u64)], unlisted: &[&[u8]]) -> (Arena, u32) {
    let a = Arena::new();
    let root = tree_in(&a, b"/r", files, unlisted);
    (a, root)
}

/// As `tree`, into `a` under a root named `name` (two trees in one arena for `--diff`).
fn tree_in(a: &Arena, name: &[u8], files: &[(&[u8], u64)], unlisted: &[&[u8]]) -> u32 {
    let mut top = Node { is_dir: true, ..Default::default() };
    for (path, size) in files {
        let mut n = &mut top;
        let parts: Vec<&[u8]> = path.split(|&b| b == b'/').collect();
        for (i, p) in parts.iter().enumerate() {
            n = n.kids.entry(p.to_vec()).or_default();
            if i + 1 < parts.len() || p.is_empty() {
                n.is_dir = true;
            } else {
                n.size = *size;
            }
        }
    }
    let id = a.reserve_entries(1).unwrap();
    a.write_entry(
        id,
        &NewEntry { name: b"", flags: Flags::of(Kind::Dir), ..Default::default() },
        a.reserve_names(1).unwrap(),
    );
    let root = a.new_dir(id, NO_DIR, 4096, 4096).unwrap();
    a.set_root_name(root, name);
    let mut todo = vec![(root, &top, name.to_vec())];
    while let Some((dir, node, path)) = todo.pop() {
        let kids: Vec<(&Vec<u8>, &Node)> = node.kids.iter().filter(|(k, _)| !k.is_empty()).collect();
        let first = a.reserve_entries(kids.len() as u32).unwrap();
        let bytes: u64 = kids.iter().map(|(k, _)| name_cost(k.len())).sum();
        let mut at = a.reserve_names(bytes).unwrap();
        a.set_layout(dir, first, at);
        let (mut disk, mut items) = (0, 0);
        for (i, (name, kid)) in kids.iter().enumerate() {
            let id = first + i as u32;
            let flags = Flags::of(if kid.is_dir { Kind::Dir } else { Kind::File });
            let e = NewEntry { name, flags, disk_bytes: kid.size, apparent_bytes: kid.size };
            a.write_entry(id, &e, at);
            at += name_cost(name.len()) as u32;
            items += 1;
            if kid.is_dir {
                let sub = a.new_dir(id, dir, 4096, 4096).unwrap();
                disk += 4096;
                let mut p = path.clone();
                p.push(b'/');
                p.extend_from_slice(name);
                if unlisted.contains(&name.as_slice()) {
                    continue;
                }
                todo.push((sub, kid, p));
            } else {
                disk += kid.size;
            }
        }
        a.add_up(dir, disk, disk, items);
        a.publish_children(dir, first, kids.len() as u32);
        a.set_dir_flags(dir, arena::D_DONE);
    }
    root
}

fn sample() -> (Arena, u32) {
    tree(
        &[
            (b"big/a.bin", 1 << 20),
            (b"big/b.bin", 512 << 10),
            (b"big/sub/c.bin", 1 << 10),
            (b"mid/x.txt", 200 << 10),
            (b"small.txt", 4096),
            (b"zero", 0),
            (b"empty/", 0),
        ],
        &[],
    )
}

struct Journey<'a> {
    b: Browser<'a>,
    screen: Screen,
    status: Status,
}

impl<'a> Journey<'a> {
    fn new(a: &'a Arena, root: u32) -> Journey<'a> {
        Self::with(a, root, Limits::default())
    }

    fn with(a: &'a Arena, root: u32, limits: Limits) -> Journey<'a> {
        let look = Look { ascii: true, color: false, si: false };
        let mut j =
            Journey { b: Browser::new(a, root, look, limits), screen: Screen::new(80, 24), status: Status::default() };
        j.draw();
        j
    }

    fn draw(&mut self) {
        self.b.render(&mut self.screen, &self.status);
    }

    /// Presses the keys (one string of key names and characters) and redraws.
    fn keys(&mut self, keys: &[Key]) -> Vec<Action> {
        let actions = keys.iter().map(|&k| self.b.key(k)).filter(|a| *a != Action::None).collect();
        self.draw();
        actions
    }

    fn type_str(&mut self, s: &str) -> Vec<Action> {
        let keys: Vec<Key> = s.chars().map(Key::Char).collect();
        self.keys(&keys)
    }

    fn text(&self) -> String {
        self.screen.text()
    }

    /// The names on the listing's rows, in order.
    fn names(&self) -> Vec<String> {
        (2..self.screen.height - 2)
            .map(|r| self.screen.row_text(r))
            .take_while(|l| !l.trim().is_empty() && !l.contains("(empty"))
            .map(|l| l.split_whitespace().last().unwrap_or_default().to_string())
            .collect()
    }

    /// The name on the highlighted row.
    fn selected_row(&self) -> String {
        let r = (2..self.screen.height - 2).find(|&r| self.screen.style_at(r, 0).reverse).expect("a selected row");
        self.screen.row_text(r).split_whitespace().last().unwrap_or_default().to_string()
    }
}

#[test]
fn opens_on_the_root_sorted_by_size() {
    let (a, r) = sample();
    let j = Journey::new(&a, r);
    assert!(j.screen.row_text(0).starts_with(" dfdu "), "header: {}", j.screen.row_text(0));
    assert!(j.screen.row_text(1).starts_with("--- /r ---"));
    assert_eq!(j.names(), ["/big", "/mid", "/empty", "small.txt", "zero"]);
    assert_eq!(j.selected_row(), "/big");
    assert!(j.text().contains("    1.5 MiB [##########] /big"), "{}", j.text());
    assert!(j.text().contains("e   4.0 KiB [          ] /empty"), "an empty directory is marked: {}", j.text());
    let footer = j.screen.row_text(23);
    assert!(footer.contains("Total disk usage: 1.7 MiB") && footer.contains("Items: 10"), "{footer}");
}

#[test]
fn sharing_figures_give_a_column_a_sort_key_an_info_box_and_a_footer() {
    let (a, root) = sample();
    let mut j = Journey::new(&a, root);
    j.type_str("x");
    assert_eq!(j.names(), ["/big", "/mid", "/empty", "small.txt", "zero"], "no figures: x does nothing");
    // Directories in creation order: root, big, empty, mid, big/sub.
    let mut f = crate::tree::sharing::Figures::default();
    for (dir, exclusive) in [(0, 7 << 20), (1, 10 << 10), (2, 500 << 10), (3, 300 << 10), (4, 0)] {
        let s = crate::tree::sharing::Share {
            total: 1 << 30,
            exclusive,
            set_shared: 5 << 20,
            disk_once: 3 << 20,
            frees: exclusive,
            frees_exact: false,
        };
        f.set(dir, s);
    }
    a.set_shared_figures(f);
    j.type_str("x");
    assert_eq!(j.names(), ["/empty", "/mid", "/big", "small.txt", "zero"], "x sorts by exclusive bytes");
    let text = j.text();
    assert!(text.contains("500.0 KiB"), "the exclusive column:\n{text}");
    let footer = j.screen.row_text(23);
    assert!(footer.contains("Sharing counted once: 3.0 MiB"), "{footer}");
    j.type_str("i");
    let text = j.text();
    assert!(text.contains("Exclusive: 500.0 KiB (512,000 bytes)"), "{text}");
    assert!(text.contains("Once:      3.0 MiB (3,145,728 bytes)"), "{text}");
}

#[test]
fn navigation_keys() {
    use Key::*;
    let (a, r) = sample();
    let mut j = Journey::new(&a, r);
    j.keys(&[Down, Char('j')]);
    assert_eq!(j.selected_row(), "/empty");
    j.keys(&[Up]);
    assert_eq!(j.selected_row(), "/mid");
    j.keys(&[End]);
    assert_eq!(j.selected_row(), "zero");
    j.keys(&[Char('k'), Home]);
    assert_eq!(j.selected_row(), "/big");
    j.keys(&[Enter]);
    assert!(j.screen.row_text(1).starts_with("--- /r/big ---"));
    assert_eq!(j.names(), ["a.bin", "b.bin", "/sub"]);
    j.keys(&[Char('G'), End, Right]);
    assert_eq!(j.names(), ["c.bin"]);
    j.keys(&[Left, Char('h')]);
    assert!(j.screen.row_text(1).starts_with("--- /r ---"));
    assert_eq!(j.selected_row(), "/big", "going up selects where we came from");
    j.keys(&[Backspace, Char('<')]);
    assert!(j.screen.row_text(1).starts_with("--- /r ---"), "the root has no parent to go to");
    j.keys(&[Down, Down, Char('l')]);
    assert!(j.text().contains("(empty directory)"));
    j.keys(&[Char('<'), End, Enter]);
    assert!(j.screen.row_text(1).starts_with("--- /r ---"), "files do not open");
}

#[test]
fn the_cursor_stays_on_top_while_the_scan_reorders_until_the_user_moves() {
    let (a, r) = sample();
    let mut j = Journey::new(&a, r);
    let find = |name: &[u8]| {
        let mut n = Vec::new();
        a.children(r).unwrap().find(|&id| {
            a.child_name(r, id, &mut n);
            n == name
        })
    };
    let mid = a.dir_of(find(b"mid").unwrap());
    // A scan adds to mid: it becomes the largest.
    a.add_up(mid, 4 << 20, 4 << 20, 1);
    j.b.mark_stale();
    j.draw();
    assert_eq!(j.selected_row(), "/mid", "still the first row");
    j.keys(&[Key::Down, Key::Up]);
    a.add_up(a.dir_of(find(b"empty").unwrap()), 8 << 20, 8 << 20, 1);
    j.b.mark_stale();
    j.draw();
    assert_eq!(j.names()[0], "/empty");
    assert_eq!(j.selected_row(), "/mid", "a chosen entry is followed");
}

#[test]
fn pages_scroll_and_keep_the_cursor_visible() {
    use Key::*;
    let files: Vec<(Vec<u8>, u64)> = (0..100).map(|i| (format!("f{i:03}").into_bytes(), 512 * (i + 1))).collect();
    let spec: Vec<(&[u8], u64)> = files.iter().map(|(n, s)| (n.as_slice(), *s)).collect();
    let (a, r) = tree(&spec, &[]);
    let mut j = Journey::new(&a, r);
    assert_eq!(j.names().len(), 20, "80x24 shows 20 rows");
    j.keys(&[PageDown]);
    assert_eq!(j.selected_row(), "f079");
    j.keys(&[PageDown, PageDown, PageDown, PageDown, PageDown]);
    assert_eq!(j.selected_row(), "f000");
    assert_eq!(j.names().last().unwrap(), "f000");
    j.keys(&[PageUp]);
    assert_eq!(j.selected_row(), "f020");
    assert_eq!(j.names()[0], "f020", "scrolled just enough");
}

#[test]
fn sorts_and_their_reversal() {
    let (a, r) = sample();
    let mut j = Journey::new(&a, r);
    j.type_str("n");
    assert_eq!(j.names(), ["/big", "/empty", "/mid", "small.txt", "zero"]);
    j.type_str("n");
    assert_eq!(j.names(), ["zero", "small.txt", "/mid", "/empty", "/big"]);
    j.type_str("s");
    assert_eq!(j.names(), ["/big", "/mid", "/empty", "small.txt", "zero"]);
    j.type_str("s");
    assert_eq!(j.names(), ["zero", "/empty", "small.txt", "/mid", "/big"], "ties by name");
    j.type_str("C");
    assert_eq!(j.names()[..2], ["/big", "/mid"], "most items first");
    j.type_str("ts");
    assert_eq!(j.names(), ["/big", "/mid", "/empty", "small.txt", "zero"], "directories first");
    j.type_str("s");
    assert_eq!(j.names(), ["/empty", "/mid", "/big", "zero", "small.txt"], "still first when reversed");
}

#[test]
fn sort_by_mtime_uses_directory_times_and_stats_files() {
    let (a, r) = sample();
    let kids = a.children(r).unwrap();
    let mut name = Vec::new();
    for id in kids {
        a.child_name(r, id, &mut name);
        if a.kind(id) == Kind::Dir {
            let t = match name.as_slice() {
                b"big" => 1_600_000_000,
                b"mid" => 1_700_000_000,
                _ => 1_500_000_000,
            };
            a.set_dir_stat(a.dir_of(id), 1, t);
        }
    }
    let mut j = Journey::new(&a, r);
    j.b.set_mtime_source(Box::new(|p: &[u8]| Some(if p.ends_with(b"zero") { 1_800_000_000 } else { 1_000_000_000 })));
    j.type_str("M");
    assert_eq!(j.names()[..3], ["zero", "/mid", "/big"].map(String::from), "newest first: {}", j.text());
    assert!(j.text().contains("2027-01-15") || j.text().contains("2027-01-14"), "{}", j.text());
    j.type_str("M");
    assert_eq!(j.names()[0], "small.txt");
}

#[test]
fn toggles_change_columns() {
    let (a, r) = sample();
    let mut j = Journey::new(&a, r);
    j.type_str("g");
    assert!(j.text().contains(" 87.7% /big"), "percentage: {}", j.text());
    j.type_str("g");
    assert!(j.text().contains(" 87.7% [##########] /big"));
    j.type_str("g");
    assert!(j.text().contains("   1.5 MiB /big"));
    j.type_str("gc");
    assert!(j.text().contains("[##########]       4 /big"), "count column: {}", j.text());
    j.type_str("a");
    let footer = j.screen.row_text(23);
    assert!(footer.starts_with(" Apparent size:"), "{footer}");
    j.type_str("i");
    assert!(j.text().contains("Path:      /r/big") && j.text().contains("Items:     4"), "{}", j.text());
    j.keys(&[Key::Down]);
    assert!(j.text().contains("Path:      /r/mid"), "the panel follows the cursor");
    j.type_str("i?");
    assert!(j.text().contains("dfdu help (1 of 2: keys)"));
    j.type_str("2");
    assert!(j.text().contains("still being scanned"));
    j.type_str("q");
    assert!(!j.text().contains("dfdu help"));
    assert_eq!(j.type_str("q"), [Action::Quit]);
}

#[test]
fn delete_asks_and_defaults_to_no() {
    use Key::*;
    let (a, r) = sample();
    let mut j = Journey::new(&a, r);
    j.type_str("d");
    let t = j.text();
    assert!(
        t.contains("Confirm delete") && t.contains("/r/big") && t.contains("1.5 MiB on disk") && t.contains("5 items")
    );
    assert!(j.keys(&[Enter]).is_empty(), "Enter takes the default: no");
    assert!(!j.text().contains("Confirm delete"));
    assert!(j.type_str("dn").is_empty());
    assert!(j.keys(&[Char('d'), Esc]).is_empty());
    assert!(j.keys(&[Char('d'), Char('x'), Char('q')]).is_empty(), "other keys do nothing, q cancels");
    let big = j.b.selected().unwrap();
    assert_eq!(j.keys(&[Char('d'), Tab, Enter]), [Action::Delete { dir: r, id: big }]);
    assert_eq!(j.type_str("dy"), [Action::Delete { dir: r, id: big }]);
    // The arena side of a completed delete: the entry leaves the listing and totals.
    a.remove(r, big);
    j.b.mark_stale();
    j.draw();
    assert_eq!(j.names(), ["/mid", "/empty", "small.txt", "zero"]);
    assert_eq!(j.selected_row(), "/mid");
}

#[test]
fn a_mark_never_touches_a_nine_character_size() {
    // Issue 11: the `*` of a directory still being scanned touched "186.4 MiB".
    let (a, r) = tree(&[(b"scanning/x", 1), (b"done/y", 1)], &[b"scanning"]);
    let scanning = a.children(r).unwrap().map(|id| a.dir_of(id)).find(|&d| !a.dir_flags(d).is_done());
    a.add_up(scanning.unwrap(), 195_454_566 - 4096, 195_454_566 - 4096, 1);
    let j = Journey::new(&a, r);
    assert!(j.text().contains("* 186.4 MiB [##########] /scanning"), "{}", j.text());
}

#[test]
fn an_imported_excluded_entry_stays_excluded_in_the_browser() {
    // Issue 17: an import that ignored `excluded` was caught only by a malformed-input test.
    let json = br#"[1,2,{"progname":"t"},[{"name":"/r"},{"name":"skipped.o","excluded":"pattern"},[{"name":"skipdir","excluded":"pattern"}],{"name":"kept","asize":5000,"dsize":8192}]]"#;
    let a = Arena::new();
    let imported = crate::tree::ncdu::import(&json[..], &a).expect("valid export");
    let mut j = Journey::new(&a, imported.root);
    let row = |j: &Journey, name: &str| {
        (2..j.screen.height - 2)
            .map(|r| j.screen.row_text(r))
            .find(|l| l.trim_end().ends_with(name))
            .unwrap_or_default()
    };
    assert!(row(&j, " skipped.o").starts_with('<'), "{}", j.text());
    assert!(row(&j, "/skipdir").starts_with('<'), "{}", j.text());
    assert!(row(&j, " kept").starts_with(' '), "{}", j.text());
    j.type_str("G");
    let at = j.names().iter().position(|n| n == "skipped.o").unwrap();
    j.keys(&vec![Key::Down; at]);
    j.type_str("i");
    assert!(j.text().contains("excluded (not scanned)"), "{}", j.text());
}

#[test]
fn delete_is_refused_where_it_must_be() {
    let (a, r) = sample();
    for (limits, why) in [
        (Limits { read_only: true, imported: false, trash: false }, "--read-only"),
        (Limits { read_only: false, imported: true, trash: false }, "an imported export"),
    ] {
        let mut j = Journey::with(&a, r, limits);
        assert!(j.type_str("d").is_empty());
        assert!(j.text().contains(why) && !j.text().contains("Confirm"), "{}", j.text());
        j.type_str(" ");
        assert!(!j.text().contains(why), "any key closes the message");
    }
    let (a, r) = tree(&[(b"scanning/x", 1), (b"done/y", 1)], &[b"scanning"]);
    let mut j = Journey::new(&a, r);
    j.type_str("n");
    let scanning = a.children(r).unwrap().find(|&id| j.b.names.get(id) == b"done").map(|d| d + 1).unwrap();
    assert_eq!(j.names(), ["/done", "/scanning"]);
    let d = a.dir_of(scanning);
    assert!(!a.dir_flags(d).is_done());
    assert!(j.text().contains("*   4.0 KiB [##########] /scanning"), "{}", j.text());
    j.type_str("jd");
    assert!(j.text().contains("still being scanned"), "{}", j.text());
    j.type_str(" l");
    assert!(j.text().contains("(not listed yet: scanning)") && j.screen.row_text(1).contains("(scanning)"));
    let mut j = Journey::new(&a, r);
    j.b.set_busy(true);
    j.type_str("jd");
    assert!(j.text().contains("Wait until"));
}

#[test]
fn rescan_asks_for_the_selected_directory() {
    let (a, r) = sample();
    let mut j = Journey::new(&a, r);
    let big = a.dir_of(j.b.selected().unwrap());
    assert_eq!(j.type_str("r"), [Action::Rescan { dir: big }]);
    j.keys(&[Key::End]);
    assert_eq!(j.type_str("r"), [Action::Rescan { dir: r }], "a file selected: the directory shown");
    let new = a.begin_rescan(r, 4096, 4096).unwrap();
    j.b.replace_dir(r, new);
    j.draw();
    assert_eq!(j.b.cwd(), new);
    assert!(j.text().contains("(not listed yet: scanning)"));
    assert!(j.screen.row_text(1).contains("(scanning)"));
    let mut j = Journey::with(&a, new, Limits { read_only: false, imported: true, trash: false });
    assert!(j.type_str("r").is_empty() && j.text().contains("imported"));
}

#[test]
fn resizes_and_tiny_terminals() {
    use Key::*;
    let (a, r) = sample();
    let mut j = Journey::new(&a, r);
    j.keys(&[End]);
    for (w, h) in [(120, 40), (40, 10), (80, 24), (41, 11)] {
        j.screen = Screen::new(w, h);
        j.draw();
        assert_eq!(j.selected_row(), "zero", "{w}x{h}: the selection survives");
        assert!(j.screen.row_text(h - 1).starts_with(" Total disk usage"), "{w}x{h}");
    }
    for (w, h) in [(39, 10), (40, 9), (20, 5), (1, 1)] {
        j.screen = Screen::new(w, h);
        j.draw();
        assert!(j.screen.row_text(0).starts_with(&"dfdu: window too small"[..w.min(22)]), "{w}x{h}");
    }
    j.screen = Screen::new(10, 3);
    j.draw();
    assert_eq!(j.screen.text(), "dfdu: wind\nneed 40x10\nq quits");
    // Every box at every small size draws without panicking.
    for (w, h) in [(40, 10), (41, 10), (40, 11), (45, 12), (60, 15)] {
        for keys in [&[Char('?')][..], &[Char('?'), Char('2')], &[Char('i')], &[Char('d')], &[Char('d'), Tab]] {
            let mut j = Journey::new(&a, r);
            j.screen = Screen::new(w, h);
            j.keys(keys);
            let t = j.text();
            assert!(t.lines().count() == h && t.lines().all(|l| width(l) <= w), "{w}x{h} {keys:?}");
            j.keys(&[Esc, Esc]);
        }
    }
}

#[test]
fn odd_names_are_escaped_and_aligned() {
    let (a, r) = tree(
        &[
            (b"bad\xffname", 1024),
            (b"new\nline", 2048),
            ("日本語のとても長いファイル名前がここにあります_and_some_more_ascii_text.dat".as_bytes(), 4096),
            ("emoji-😀-file".as_bytes(), 512),
            ("cafe\u{301}".as_bytes(), 3072),
        ],
        &[],
    );
    let mut j = Journey::new(&a, r);
    j.type_str("n");
    let t = j.text();
    assert!(t.contains(" bad\\xffname") && t.contains(" new\\nline") && t.contains(" emoji-😀-file"), "{t}");
    assert!(t.contains("...") && t.contains("日本語"), "{t}");
    for row in 2..7 {
        assert_eq!(width(&j.screen.row_text(row)), 80, "row {row} keeps its width");
    }
    j.screen = Screen::new(50, 12);
    j.draw();
    for row in 0..12 {
        assert_eq!(width(&j.screen.row_text(row)), 50, "row {row} at 50 columns");
    }
}

#[test]
fn sizes_and_counts_read_well() {
    for (n, si, want) in [
        (0, false, "    0 B  "),
        (999, false, "  999 B  "),
        (1000, false, "  1.0 KiB"),
        (1536, false, "  1.5 KiB"),
        (1023 * 1024, false, "1023.0 KiB"),
        (5 << 30, false, "  5.0 GiB"),
        (1500, true, "  1.5 kB "),
    ] {
        let got = size_text(n, si);
        if n == 1023 * 1024 {
            assert_eq!(got, "  1.0 MiB", "switches unit before 4 digits");
        } else {
            assert_eq!(got, want);
        }
    }
    assert_eq!(grouped(1234567), "1,234,567");
    assert_eq!(grouped(12), "12");
    assert_eq!(compact_count(12_345_678), "12.3M");
}

/// Issue 10.11: an arena that runs out of ids during the browser's own scan (not only
/// a rescan) is reported: a message while browsing (and a line on exit).
#[test]
fn a_full_arena_is_reported_after_the_scan() {
    use crate::tree::sink::ArenaSink;
    use crate::walk::reader::{Native, Reader};
    let dir = std::env::temp_dir().join(format!("dfdu-browse-full-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    for i in 0..20 {
        std::fs::create_dir_all(dir.join(format!("d{i}"))).unwrap();
        std::fs::write(dir.join(format!("d{i}/f")), b"x").unwrap();
    }
    let scan = |left: u32| {
        let a = Arena::new();
        a.leave_ids(left);
        let path = std::ffi::CString::new(dir.to_str().unwrap()).unwrap();
        let meta = Native::stat_path(&path, Follow::Yes).unwrap();
        let root = {
            let sink = ArenaSink::new(&a);
            let root = sink.add_root(dir.to_str().unwrap().as_bytes(), &meta).unwrap();
            let empty = std::collections::HashSet::new();
            let walk = crate::walk::scan::Walk::arena(2, &empty);
            crate::walk::scan::scan_as::<Native, ArenaSink>(&walk, &sink, &path, &meta, root);
            root
        };
        (a, root)
    };
    let (a, root) = scan(1000);
    let mut j = Journey::new(&a, root);
    assert!(!ui::notice_full(&a, &mut j.b), "room for everything: nothing to say");
    let (a, root) = scan(25);
    let mut j = Journey::new(&a, root);
    assert!(ui::notice_full(&a, &mut j.b));
    j.draw();
    assert!(j.text().contains("The tree is too large") && j.text().contains("incomplete"), "{}", j.text());
    std::fs::remove_dir_all(&dir).unwrap();
}

/// `--diff`: what the compared tree had and the browsed one has not is listed as rows
/// marked R with a negative change, after what is on disk (first by the change key
/// reversed); they cannot be deleted or rescanned, and entering a removed directory shows
/// what it held, all removed, until left again.
#[test]
fn removed_entries_are_rows_that_can_be_entered_but_not_deleted() {
    let a = Arena::new();
    let old_files: &[(&[u8], u64)] =
        &[(b"keep/f", 1000), (b"gone/g1", 300_000), (b"gone/sub/g2", 5000), (b"grow/x", 10), (b"kind", 7)];
    let old = tree_in(&a, b"/old", old_files, &[]);
    let new_files: &[(&[u8], u64)] =
        &[(b"keep/f", 1000), (b"grow/x", 10), (b"grow/y", 900_000), (b"kind/", 0), (b"fresh", 50)];
    let new = tree_in(&a, b"/r", new_files, &[]);
    let mut j = Journey::new(&a, new);
    j.b.set_compare(old);
    j.draw();
    // By size: what is here, then the removed rows (a file that became a directory is
    // new as a directory and removed as a file).
    assert_eq!(j.names(), ["/grow", "/keep", "/kind", "fresh", "/gone", "kind"], "{}", j.text());
    let row = |j: &Journey, name: &str| {
        let text = j.text();
        text.lines().find(|l| l.ends_with(name)).unwrap_or_default().to_string()
    };
    // 4096 (its own) + 300,000 + 4096 + 5000 bytes.
    assert!(row(&j, "/gone").starts_with("R 305.9 KiB [ removed  ] -305.9 KiB /gone"), "{}", j.text());
    // 7 bytes take one 512-byte block.
    assert!(row(&j, " kind").starts_with("R   512 B   [ removed  ]     -512 B  kind"), "{}", j.text());
    assert!(row(&j, "/kind").contains("        new /kind"), "{}", j.text());
    assert!(j.screen.row_text(1).contains("(removed here: 2, -306.4 KiB)"), "{}", j.text());
    // The footer counts what is on disk.
    assert!(j.screen.row_text(23).contains("Items: 7"), "{}", j.screen.row_text(23));
    j.type_str("D");
    assert_eq!(j.names(), ["/grow", "/kind", "fresh", "/keep", "kind", "/gone"]);
    j.type_str("D");
    assert_eq!(j.names(), ["/gone", "kind", "/keep", "fresh", "/kind", "/grow"], "reversed: what went first");
    // Not on disk: no delete, and r rescans the directory shown.
    assert!(j.type_str("d").is_empty());
    assert!(j.text().contains("gone is not on disk (removed since the compared tree)"), "{}", j.text());
    j.type_str(" ");
    assert_eq!(j.type_str("r"), [Action::Rescan { dir: new }]);
    j.type_str("i");
    assert!(
        j.text().contains("Path:      /old/gone")
            && j.text().contains("Change:    removed (-305.9 KiB, -313,192 bytes)")
    );
    assert!(j.text().contains("not on disk"), "{}", j.text());
    j.type_str("i");
    // Into the removed directory: what it held, all removed, with bars among themselves.
    j.keys(&[Key::Enter]);
    assert_eq!(j.names(), ["g1", "/sub"], "{}", j.text());
    assert!(j.screen.row_text(1).contains("/old/gone (removed since the compared tree: not on disk)"));
    assert!(row(&j, "g1").starts_with("R 293.0 KiB [##########] -293.0 KiB  g1"), "{}", j.text());
    assert!(j.screen.row_text(23).starts_with(" Removed: Total disk usage: 305.9 KiB"), "{}", j.text());
    assert!(j.type_str("d").is_empty() && j.text().contains("not on disk"));
    j.type_str(" ");
    assert!(j.type_str("r").is_empty() && j.text().contains("nothing to rescan"), "{}", j.text());
    j.type_str(" j");
    j.keys(&[Key::Enter]);
    assert_eq!(j.names(), ["g2"]);
    j.keys(&[Key::Left, Key::Left]);
    assert_eq!(j.b.cwd(), new, "back where the user came from");
    assert_eq!(j.selected_row(), "/gone");
    assert!(!j.screen.row_text(1).contains("not on disk"));
    // Deleting what the compared tree had makes it a removed row.
    let keep = a.children(new).unwrap().find(|&id| j.b.names.get(id) == b"keep").unwrap();
    assert!(a.remove(new, keep));
    j.b.recompare();
    j.draw();
    assert!(row(&j, "/keep").starts_with("R "), "{}", j.text());
}

/// Issue 29.7: a key that cannot act says why on the status line (it said nothing), and
/// the answer goes with the next key.
#[test]
fn every_key_that_cannot_act_says_why() {
    use Key::*;
    let (a, r) = sample();
    let status_row = |j: &Journey| j.screen.row_text(j.screen.height - 2);
    let cases: &[(Limits, &[Key], &str)] = &[
        (Limits::default(), &[Char('x')], "needs --shared"),
        (Limits::default(), &[Char('D')], "needs --diff OLD"),
        (Limits::default(), &[Left], "This is the top"),
        (Limits::default(), &[Char('h')], "This is the top"),
        (Limits::default(), &[End, Enter], "zero is not a directory"),
        (Limits::default(), &[Char('Z')], "Z does nothing here; ? lists the keys"),
        (Limits::default(), &[Ctrl('x')], "Ctrl-X does nothing here"),
        (Limits::default(), &[Esc], "Nothing to close"),
        (Limits { read_only: true, imported: false, trash: false }, &[Char('d')], "Deleting is off (--read-only)"),
        (Limits { read_only: false, imported: true, trash: false }, &[Char('d')], "this is an imported export"),
        (Limits { read_only: false, imported: true, trash: false }, &[Char('r')], "this is an imported export"),
    ];
    for (limits, keys, why) in cases {
        let mut j = Journey::with(&a, r, *limits);
        assert!(j.keys(keys).is_empty());
        assert!(status_row(&j).contains(why), "{keys:?}: {why:?} on the status line:\n{}", j.text());
        j.keys(&[Esc]);
        assert!(!j.text().contains(why), "{keys:?}: Esc dismisses the answer");
    }
    // In an empty directory: nothing to open, show or delete.
    let mut j = Journey::new(&a, r);
    j.keys(&[Down, Down, Enter]);
    assert!(j.text().contains("(empty directory)"));
    for (key, why) in [('i', "Nothing to show"), ('d', "Nothing to delete"), ('l', "Nothing to open")] {
        j.keys(&[Char(key)]);
        assert!(status_row(&j).contains(why), "{key}: {}", j.text());
    }
}

/// Issue 29.7: at 60 columns the help cut "sort by ch…"; now every description is there
/// whole, wrapped beside its key, and a short window scrolls it.
#[test]
fn the_help_box_fits_its_text_to_the_window() {
    use Key::*;
    let (a, r) = sample();
    for (w, h) in [(60, 24), (40, 10), (80, 24)] {
        let mut j = Journey::new(&a, r);
        j.screen = Screen::new(w, h);
        j.keys(&[Char('?')]);
        let mut seen = String::new();
        for _ in 0..3 * HELP_KEYS.len() {
            let t = j.text();
            assert!(!t.contains("..."), "{w}x{h}: nothing cut:\n{t}");
            seen.push_str(&t);
            j.keys(&[Down]);
        }
        let words: Vec<&str> = seen.split_whitespace().collect();
        for (_, v) in HELP_KEYS {
            for word in v.split_whitespace() {
                assert!(words.contains(&word), "{w}x{h}: {word:?} of {v:?} shown:\n{seen}");
            }
        }
    }
}

/// Issue 29.7: `q` while a deletion runs asks first; quitting then is the user's choice.
#[test]
fn quit_during_a_deletion_asks() {
    let (a, r) = sample();
    let mut j = Journey::new(&a, r);
    j.b.set_busy(true);
    j.b.set_deleting(true);
    assert!(j.type_str("q").is_empty());
    assert!(j.text().contains("Quit during a deletion?"), "{}", j.text());
    assert!(j.type_str("n").is_empty());
    assert!(!j.text().contains("Quit during") && j.text().contains("Not quitting"), "{}", j.text());
    assert_eq!(j.type_str("qy"), [Action::Quit]);
    // A rescan is safe to stop: q quits at once.
    j.b.set_deleting(false);
    assert_eq!(j.type_str("q"), [Action::Quit]);
}

/// Issue 29.7: the path line shows the root's absolute path, not the name it was given.
#[test]
fn the_path_line_shows_the_absolute_path() {
    let (a, r) = tree(&[(b"sub/f", 10)], &[]);
    a.set_root_name(r, b".");
    let mut j = Journey::new(&a, r);
    j.b.set_root_title(b"/home/u/work".to_vec());
    j.draw();
    assert!(j.screen.row_text(1).starts_with("--- /home/u/work ---"), "{}", j.text());
    j.keys(&[Key::Enter]);
    assert!(j.screen.row_text(1).starts_with("--- /home/u/work/sub ---"), "{}", j.text());
}

/// The row of the listing whose name ends with `name`.
fn row_of(j: &Journey, name: &str) -> String {
    let rows = (2..j.screen.height - 2).map(|r| j.screen.row_text(r).trim_end().to_string());
    rows.into_iter().find(|l| l.ends_with(name)).unwrap_or_default()
}

/// Issue 29.1: Space marks and moves down, marked rows are drawn so, the footer counts
/// them; `*` marks everything here (again: unmarks), `u` clears.
#[test]
fn space_marks_and_the_footer_counts_the_marks() {
    let (a, r) = sample();
    let mut j = Journey::new(&a, r);
    j.type_str(" ");
    assert_eq!(j.selected_row(), "/mid", "Space moves down");
    assert!(row_of(&j, "/big").ends_with("+/big"), "{}", j.text());
    assert!(row_of(&j, "/mid").ends_with(" /mid"), "{}", j.text());
    let footer = j.screen.row_text(23);
    assert!(footer.starts_with(" Marked: 1 (1.5 MiB) | Total disk usage"), "{footer}");
    j.type_str("  ");
    assert!(j.screen.row_text(23).starts_with(" Marked: 3 (1.7 MiB)"), "{}", j.screen.row_text(23));
    j.keys(&[Key::Up]);
    j.type_str(" ");
    assert!(j.screen.row_text(23).starts_with(" Marked: 2 (1.7 MiB)"), "Space again unmarks");
    j.type_str("*");
    assert!(j.screen.row_text(23).starts_with(" Marked: 5 "), "{}", j.text());
    assert!(j.text().contains("Marked the 5 entries here"));
    j.type_str("*");
    assert!(!j.screen.row_text(23).contains("Marked"), "* again unmarks them: {}", j.text());
    j.type_str("  u");
    assert!(!j.screen.row_text(23).contains("Marked") && j.text().contains("2 marks cleared"), "{}", j.text());
    assert!(row_of(&j, "/big").ends_with("    /big") || row_of(&j, "/big").ends_with("] /big"), "no mark column");
    j.type_str("u");
    assert!(j.text().contains("No marks to clear"));
}

/// Issue 29.1: marks in two directories, one confirmation with their count, total and
/// paths, defaulting to No; Yes deletes exactly them. A mark inside a marked directory
/// is counted and deleted once, with it.
#[test]
fn marks_across_directories_are_deleted_after_one_confirmation() {
    use Key::*;
    let (a, r) = sample();
    let mut j = Journey::new(&a, r);
    let (big, mid) = (j.b.selected().unwrap(), {
        j.keys(&[Down]);
        j.b.selected().unwrap()
    });
    j.type_str(" ");
    j.keys(&[Up, Up, Enter]);
    let a_bin = j.b.selected().unwrap();
    j.type_str("  ");
    assert!(j.screen.row_text(23).starts_with(" Marked: 3 (1.7 MiB)"), "{}", j.screen.row_text(23));
    j.type_str("d");
    let t = j.text();
    assert!(t.contains("Delete 3 marked entries and everything in them?"), "{t}");
    assert!(t.contains("/r/mid") && t.contains("/r/big/a.bin") && t.contains("/r/big/b.bin"), "{t}");
    assert!(t.contains("1.7 MiB on disk") && t.contains(", 4 items"), "{t}");
    assert!(j.keys(&[Enter]).is_empty(), "Enter takes the default: No");
    assert!(j.type_str("dn").is_empty() && !j.text().contains("Confirm"));
    let bin = a_bin + 1;
    let want = vec![(r, mid), (a.dir_of(big), a_bin), (a.dir_of(big), bin)];
    assert_eq!(j.type_str("dy"), [Action::DeleteMarks(want.clone())]);
    assert_eq!(j.keys(&[Char('d'), Tab, Enter]), [Action::DeleteMarks(want)]);
    // The whole of big marked too: its marks are part of it.
    j.keys(&[Left]);
    j.type_str("k ");
    assert!(j.screen.row_text(23).starts_with(" Marked: 2 (1.7 MiB)"), "{}", j.text());
    assert_eq!(j.type_str("dy"), [Action::DeleteMarks(vec![(r, big), (r, mid)])]);
    // Deleted entries lose their marks.
    assert!(a.remove(r, mid));
    j.b.mark_stale();
    j.draw();
    assert!(j.screen.row_text(23).starts_with(" Marked: 1 (1.5 MiB)"), "{}", j.text());
}

/// Issue 29.1: a delete of marks is refused where a single one is, for each mark; a
/// removed row cannot be marked; a rescan drops the marks inside what it replaces.
#[test]
fn marks_keep_the_rules_of_a_single_delete() {
    let (a, r) = sample();
    for (limits, why) in [
        (Limits { read_only: true, imported: false, trash: false }, "--read-only"),
        (Limits { read_only: false, imported: true, trash: false }, "an imported export"),
    ] {
        let mut j = Journey::with(&a, r, limits);
        assert!(j.type_str(" d").is_empty());
        assert!(j.text().contains(why) && !j.text().contains("Confirm"), "{}", j.text());
    }
    let mut j = Journey::new(&a, r);
    j.b.set_busy(true);
    assert!(j.type_str(" d").is_empty() && j.text().contains("Wait until"));
    let (a, r) = tree(&[(b"scanning/x", 1), (b"done/y", 1)], &[b"scanning"]);
    let mut j = Journey::new(&a, r);
    j.type_str("n  d");
    assert!(j.text().contains("/r/scanning is still being scanned"), "{}", j.text());
    // A rescan of the root replaces everything: no marks are left.
    let (a, r) = sample();
    let mut j = Journey::new(&a, r);
    j.type_str("  ");
    let new = a.begin_rescan(r, 4096, 4096).unwrap();
    j.b.replace_dir(r, new);
    j.draw();
    assert!(j.b.marks.is_empty());
}

/// Issue 29.3: `/` filters the listing as the user types (a substring, any case; a glob
/// with `*?[`), arrows move in it, Enter keeps it, Esc clears it; another directory
/// drops it.
#[test]
fn slash_filters_the_listing_as_you_type() {
    use Key::*;
    let (a, r) = sample();
    let mut j = Journey::new(&a, r);
    j.type_str("/");
    assert!(j.screen.row_text(22).starts_with("Filter: _"), "{}", j.text());
    j.type_str("m");
    assert_eq!(j.names(), ["/mid", "/empty", "small.txt"], "m: in mid, empty and small.txt");
    j.type_str("i");
    assert_eq!(j.names(), ["/mid"]);
    assert!(j.screen.row_text(1).contains("(filter mi: 1 of 5)"), "{}", j.screen.row_text(1));
    j.keys(&[Backspace, Backspace]);
    j.type_str("*.TXT");
    assert!(j.text().contains("(nothing here matches the filter"), "a capital letter: exact case\n{}", j.text());
    for _ in 0..3 {
        j.keys(&[Backspace]);
    }
    j.type_str("txt");
    assert_eq!(j.names(), ["small.txt"], "a glob, any case");
    j.keys(&[Enter]);
    assert!(!j.screen.row_text(22).starts_with("Filter:"), "Enter keeps it and ends typing");
    assert_eq!(j.names(), ["small.txt"]);
    assert!(j.type_str("q") == [Action::Quit], "keys act again");
    j.keys(&[Esc]);
    assert_eq!(j.names(), ["/big", "/mid", "/empty", "small.txt", "zero"], "Esc clears it");
    j.type_str("/b");
    j.keys(&[Down, Enter, Enter]);
    assert_eq!(j.names(), ["a.bin", "b.bin", "/sub"], "another directory, no filter");
    j.type_str("/zz");
    j.keys(&[Esc]);
    assert_eq!(j.names(), ["a.bin", "b.bin", "/sub"], "Esc while typing clears it too");
}

/// Issue 29.3: `f` finds by name across the whole tree, largest first, and Enter jumps
/// there; Space marks in the results.
#[test]
fn find_lists_matches_of_the_whole_tree_largest_first_and_jumps() {
    use Key::*;
    let (a, r) = sample();
    let mut j = Journey::new(&a, r);
    j.type_str("f");
    assert!(j.screen.row_text(22).starts_with("Find in the tree: _"), "{}", j.text());
    j.type_str("*.bin");
    j.keys(&[Enter]);
    let t = j.text();
    assert!(t.contains("Find *.bin: 3 found, largest first"), "{t}");
    let at = |s: &str| t.find(s).unwrap_or_else(|| panic!("{s} in\n{t}"));
    assert!(at("/r/big/a.bin") < at("/r/big/b.bin") && at("/r/big/b.bin") < at("/r/big/sub/c.bin"), "{t}");
    j.keys(&[Down, Char(' ')]);
    assert!(j.text().contains("+512.0 KiB /r/big/b.bin"), "{}", j.text());
    j.keys(&[Enter]);
    assert!(j.screen.row_text(1).starts_with("--- /r/big/sub ---"), "{}", j.text());
    assert_eq!(j.selected_row(), "c.bin", "the jump selects the entry");
    assert!(j.screen.row_text(23).starts_with(" Marked: 1 (512.0 KiB)"), "{}", j.screen.row_text(23));
    j.type_str("fnothing-like-it");
    j.keys(&[Enter]);
    assert!(j.text().contains("Nothing in the tree matches nothing-like-it"), "{}", j.text());
    j.type_str("fsub");
    j.keys(&[Enter, Esc]);
    assert!(!j.text().contains("Find sub"), "Esc closes the results");
}

/// Issue 29.5: `m` shows the mtime column whatever the sort; the `i` box shows mode,
/// owner, group and mtime, read when it shows an entry (each opening reads again).
#[test]
fn the_mtime_column_and_the_info_box_stat() {
    use std::cell::Cell;
    let (a, r) = sample();
    let reads = Cell::new(0);
    let mut j = Journey::new(&a, r);
    j.b.set_mtime_source(Box::new(|_: &[u8]| Some(1_800_000_000)));
    j.b.set_stat_source(Box::new(|p: &[u8]| {
        reads.set(reads.get() + 1);
        let dir = p.ends_with(b"big");
        Some(EntryStat {
            mode: if dir { 0o041755 } else { 0o100640 },
            uid: 1000,
            gid: 50,
            owner: dir.then(|| "alice".to_string()),
            group: None,
            mtime: 1_700_000_000,
        })
    }));
    j.type_str("m");
    assert_eq!(j.names(), ["/big", "/mid", "/empty", "small.txt", "zero"], "the sort stays");
    assert!(row_of(&j, "small.txt").contains("2027-01-1"), "a file's mtime: {}", j.text());
    j.type_str("m");
    assert!(!row_of(&j, "small.txt").contains("2027-01-1"), "m again hides it");
    j.type_str("i");
    let t = j.text();
    assert!(t.contains("Mode:      drwxr-xr-t (1755)"), "{t}");
    assert!(t.contains("Owner:     alice (1000)   Group: 50"), "{t}");
    assert!(t.contains("Modified:  2023-11-1"), "the stat's mtime: {t}");
    assert_eq!(reads.get(), 1);
    j.draw();
    assert_eq!(reads.get(), 1, "not read again for the same entry");
    j.keys(&[Key::End]);
    assert!(j.text().contains("Mode:      -rw-r----- (0640)"), "{}", j.text());
    assert_eq!(reads.get(), 2, "read for the entry the box came to show");
    j.type_str("ii");
    assert_eq!(reads.get(), 3, "read again when it opens again");
}

#[test]
fn modes_read_as_ls_writes_them() {
    for (mode, want) in [
        (0o100644, "-rw-r--r--"),
        (0o040755, "drwxr-xr-x"),
        (0o041777, "drwxrwxrwt"),
        (0o104755, "-rwsr-xr-x"),
        (0o102644, "-rw-r-Sr--"),
        (0o120777, "lrwxrwxrwx"),
        (0o020600, "crw-------"),
        (0o010000, "p---------"),
    ] {
        assert_eq!(mode_text(mode), want, "{mode:o}");
    }
}

/// The info box's stat against the file system: `stat`'s mode, owner and mtime.
#[test]
fn the_info_stat_reads_the_file_system() {
    let dir = std::env::temp_dir().join(format!("dfdu-browse-stat-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let f = dir.join("f");
    std::fs::write(&f, b"x").unwrap();
    let out = std::process::Command::new("stat").args(["-c", "%f %u %U %Y"]).arg(&f).output();
    let st = run::stat_of_path(f.to_str().unwrap().as_bytes()).expect("a file that exists");
    std::fs::remove_dir_all(&dir).unwrap();
    let Some(out) = out.ok().filter(|o| o.status.success()) else {
        eprintln!("SKIP: the_info_stat_reads_the_file_system needs stat(1)");
        return;
    };
    let want = String::from_utf8_lossy(&out.stdout).trim().to_string();
    let got = format!("{:x} {} {} {}", st.mode, st.uid, st.owner.unwrap_or_default(), st.mtime);
    assert_eq!(got, want);
}

/// Issue 29.4: `e` hides dotfiles and excluded entries from the listing (the totals keep
/// them) and shows them again.
#[test]
fn e_hides_dotfiles_and_excluded_entries() {
    let json = br#"[1,2,{"progname":"t"},[{"name":"/r"},{"name":".hidden","asize":100,"dsize":4096},{"name":"skipped.o","excluded":"pattern"},[{"name":".git"},{"name":"x","asize":10,"dsize":4096}],{"name":"kept","asize":5000,"dsize":8192}]]"#;
    let a = Arena::new();
    let imported = crate::tree::ncdu::import(&json[..], &a).expect("valid export");
    let mut j = Journey::new(&a, imported.root);
    j.type_str("n");
    assert_eq!(j.names(), ["/.git", ".hidden", "kept", "skipped.o"]);
    let footer = j.screen.row_text(23);
    j.type_str("e");
    assert_eq!(j.names(), ["kept"]);
    assert!(j.screen.row_text(1).contains("(3 hidden)"), "{}", j.text());
    assert!(j.text().contains("Dotfiles and excluded entries hidden"), "{}", j.text());
    assert_eq!(j.screen.row_text(23), footer, "the totals still count them");
    j.type_str("e");
    assert_eq!(j.names(), ["/.git", ".hidden", "kept", "skipped.o"]);
}

/// The keys of a `docs/browse.md` key-table cell or of a help row, by name (arrows as
/// words, backticks dropped).
fn key_names(cell: &str) -> std::collections::BTreeSet<String> {
    // A cell of one slash is the key `/`; elsewhere a slash separates keys.
    if matches!(cell.trim(), "/" | "`/`") {
        return ["/".to_string()].into();
    }
    let cell = cell.replace('`', " ").replace(['/', ','], " ");
    cell.split_whitespace()
        .map(|k| match k {
            "Bksp" => "Backspace".to_string(),
            "↑" => "up".into(),
            "↓" => "down".into(),
            "→" => "right".into(),
            "←" => "left".into(),
            k => k.to_string(),
        })
        .collect()
}

/// Issue 29: the browse doc lists every key, and `?` shows the same ones.
#[test]
fn the_doc_and_the_help_list_the_same_keys() {
    let doc = include_str!("../../docs/browse.md");
    let table = doc.lines().skip_while(|l| !l.starts_with("| key | does |")).skip(2).take_while(|l| l.starts_with('|'));
    let documented: std::collections::BTreeSet<String> =
        table.flat_map(|row| key_names(row.split('|').nth(1).unwrap_or(""))).collect();
    let helped: std::collections::BTreeSet<String> = HELP_KEYS.iter().flat_map(|(k, _)| key_names(k)).collect();
    assert!(!documented.is_empty() && documented.contains("d"), "the table was found: {documented:?}");
    assert_eq!(documented, helped, "docs/browse.md's key table and the help (HELP_KEYS) differ");
}

/// Issue 29.2: `T` asks to move the selection (or the marks) to the trash, No first;
/// `--trash` makes `d` ask the same; the read-only and import rules hold.
#[test]
fn t_asks_to_move_to_the_trash() {
    use Key::*;
    let (a, r) = sample();
    let mut j = Journey::new(&a, r);
    let big = j.b.selected().unwrap();
    j.type_str("T");
    assert!(j.text().contains("Confirm move to the trash") && j.text().contains("Move to the trash this directory"));
    assert!(j.keys(&[Enter]).is_empty(), "No by default");
    assert_eq!(j.type_str("Ty"), [Action::Trash(vec![(r, big)])]);
    j.type_str(" ");
    assert_eq!(j.type_str("Ty"), [Action::Trash(vec![(r, big)])], "the marks");
    assert_eq!(j.type_str("dy"), [Action::DeleteMarks(vec![(r, big)])], "d still deletes");
    let mut j = Journey::with(&a, r, Limits { trash: true, ..Limits::default() });
    assert_eq!(j.type_str("dy"), [Action::Trash(vec![(r, big)])], "--trash: d moves to the trash");
    let mut j = Journey::with(&a, r, Limits { read_only: true, ..Limits::default() });
    assert!(j.type_str("T").is_empty() && j.text().contains("--read-only"));
}

#[test]
fn a_trashinfo_names_the_path_percent_encoded() {
    let info = trash::trash_info("/srv/a b/日本/x%y".as_bytes(), 1_700_000_000);
    let mut lines = info.lines();
    assert_eq!(lines.next(), Some("[Trash Info]"));
    assert_eq!(lines.next(), Some("Path=/srv/a%20b/%E6%97%A5%E6%9C%AC/x%25y"));
    let date = lines.next().unwrap().strip_prefix("DeletionDate=").unwrap();
    assert!(date.starts_with("2023-11-1") && date.len() == 19 && &date[10..11] == "T", "{date}");
}

/// Issue 29.6: `b` asks for a shell in the selected directory, or the one shown when a
/// file is selected; not in an import.
#[test]
fn b_asks_for_a_shell_where_the_user_is() {
    let (a, r) = sample();
    let mut j = Journey::new(&a, r);
    let big = a.dir_of(j.b.selected().unwrap());
    assert_eq!(j.type_str("b"), [Action::Shell { dir: big }]);
    j.keys(&[Key::End]);
    assert_eq!(j.type_str("b"), [Action::Shell { dir: r }], "a file selected: the directory shown");
    let mut j = Journey::with(&a, r, Limits { imported: true, ..Limits::default() });
    assert!(j.type_str("b").is_empty() && j.text().contains("imported"), "{}", j.text());
}
