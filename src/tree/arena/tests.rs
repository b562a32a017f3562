//! Unit tests of the arena: layout and overflow, publishing while writing, totals in
//! linear time, deletes, rescans and the reuse of what they replaced.

use super::*;

/// Writes `names` as the children of `dir`, returning the first id.
fn children(a: &Arena, dir: u32, kids: &[NewEntry]) -> u32 {
    let first = a.reserve_entries(kids.len() as u32).unwrap();
    let bytes: u64 = kids.iter().map(|k| name_cost(k.name.len())).sum();
    let mut at = a.reserve_names(bytes).unwrap();
    a.set_layout(dir, first, at);
    for (i, k) in kids.iter().enumerate() {
        a.write_entry(first + i as u32, k, at);
        at += name_cost(k.name.len()) as u32;
    }
    first
}

fn root(a: &Arena, own: u64) -> u32 {
    let id = a.reserve_entries(1).unwrap();
    a.write_entry(
        id,
        &NewEntry { name: b"", flags: Flags::of(Kind::Dir), ..Default::default() },
        a.reserve_names(1).unwrap(),
    );
    let dir = a.new_dir(id, NO_DIR, own, own).unwrap();
    a.set_root_name(dir, b"/the/root");
    dir
}

#[test]
fn entries_round_trip_and_overflow() {
    let a = Arena::new();
    let r = root(&a, 4096);
    let long = vec![b'x'; 700];
    let huge = 10u64 << 40;
    let first = children(
        &a,
        r,
        &[
            NewEntry { name: &long, flags: Flags::of(Kind::File), disk_bytes: 8192, apparent_bytes: 5000 },
            NewEntry {
                name: b"\xffbig\n",
                flags: Flags::of(Kind::File) | F_HARDLINK,
                disk_bytes: huge,
                apparent_bytes: huge,
            },
            NewEntry { name: b"", flags: Flags::of(Kind::Symlink), disk_bytes: 0, apparent_bytes: 3 },
        ],
    );
    assert!(a.children(r).is_none(), "unlisted until published");
    a.publish_children(r, first, 3);
    assert_eq!(a.children(r), Some(first..first + 3));
    let mut name = Vec::new();
    a.child_name(r, first, &mut name);
    assert_eq!(name, long);
    a.child_name(r, first + 1, &mut name);
    assert_eq!(name, b"\xffbig\n");
    a.child_name(r, first + 2, &mut name);
    assert_eq!(name, b"");
    assert_eq!(a.dir_name(r), b"/the/root");
    assert_eq!(a.flags(first + 1), Flags::of(Kind::File) | F_HARDLINK);
    assert_eq!(a.own_sizes(first), (8192, 5000));
    assert_eq!(a.own_sizes(first + 1), (huge, huge));
    assert_eq!(a.own_sizes(first + 2), (0, 3));
    a.add_up(r, 8192 + huge, 5000 + huge + 3, 3);
    assert_eq!(a.dir_totals(r), (4096 + 8192 + huge, 4096 + 5000 + huge + 3, 3));
}

#[test]
fn completion_cascades_to_ancestors() {
    let a = Arena::new();
    let r = root(&a, 0);
    let e = children(&a, r, &[NewEntry { name: b"s", flags: Flags::of(Kind::Dir), ..Default::default() }]);
    let s = a.new_dir(e, r, 0, 0).unwrap();
    assert_eq!(a.dir_name(s), b"s");
    a.add_pending(r, 1);
    a.finish(r);
    assert!(!a.dir_flags(r).is_done());
    a.set_dir_flags(s, D_ERROR_BELOW);
    a.finish(s);
    assert!(a.dir_flags(s).is_done() && a.dir_flags(r).is_done());
    assert!(a.dir_flags(s).error_below(), "flags survive the pending count");
}

#[test]
fn id_exhaustion_is_an_error_not_a_panic() {
    let a = Arena::new();
    assert_eq!(a.reserve_entries(u32::MAX), Err(Full::Ids));
    assert_eq!(a.full(), Some(Full::Ids));
    assert_eq!(a.reserve_names(u64::from(u32::MAX) + 1), Err(Full::Names));
}

/// A directory under `parent` (in entry `slot`) with one file of `size` bytes in it,
/// listed and finished the way the sink does it: it reports to `parent` when done.
fn dir_with_file(a: &Arena, parent: u32, slot: u32, size: u64) -> u32 {
    let d = a.new_dir(slot, parent, 512, 100).unwrap();
    a.add_pending(parent, 1);
    let f = children(
        a,
        d,
        &[NewEntry { name: b"f", flags: Flags::of(Kind::File), disk_bytes: size, apparent_bytes: size }],
    );
    a.publish_children(d, f, 1);
    a.add_here(d, size, size, 1);
    a.finish(d);
    d
}

/// Issue 10, item 5: totals moved to every ancestor per listing made a deep chain
/// quadratic. Builds a chain the way the sink does (each level: one file and the next
/// directory), checks the live totals while it is unfinished, and counts the records
/// visited while moving totals: a constant number per directory.
#[test]
fn deep_chain_totals_cost_linear_work_and_stay_live() {
    const LEVELS: u32 = 20_000;
    let a = Arena::new();
    let top = root(&a, 512);
    let mut dirs = vec![top];
    for level in 0..LEVELS {
        let d = *dirs.last().unwrap();
        let kids = [
            NewEntry { name: b"f", flags: Flags::of(Kind::File), disk_bytes: 512, apparent_bytes: 1 },
            NewEntry { name: b"d", flags: Flags::of(Kind::Dir), ..Default::default() },
        ];
        let first = children(&a, d, &kids[..if level + 1 < LEVELS { 2 } else { 1 }]);
        a.add_here(d, 512, 1, if level + 1 < LEVELS { 2 } else { 1 });
        if level + 1 < LEVELS {
            let sub = a.new_dir(first + 1, d, 512, 10).unwrap();
            a.add_pending(d, 1);
            dirs.push(sub);
        }
        a.publish_children(d, first, if level + 1 < LEVELS { 2 } else { 1 });
        if level + 1 < LEVELS {
            a.finish(d);
        }
    }
    let n = LEVELS as u64;
    let want = (512 * n + 512 * n, n + 10 * (n - 1) + 512, 2 * n - 1);
    assert!(!a.dir_flags(top).is_done(), "the deepest directory is not done yet");
    assert_eq!(a.dir_totals(top), want, "live totals of an unfinished chain");
    let mid = dirs[LEVELS as usize / 2];
    assert_eq!(a.dir_totals(mid).2, 2 * (n / 2) - 1);
    // The deepest level finishes: everything reports, once per directory.
    a.finish(*dirs.last().unwrap());
    assert!(a.dir_flags(top).is_done());
    assert_eq!(a.stored_totals(top), want);
    let steps = a.steps.load(Relaxed);
    assert!(steps <= 3 * n, "{steps} steps for {n} directories: not linear");

    // A rescan deep down reopens every ancestor; the new record reports to all of
    // them once (one walk per rescan, not per listing).
    let deep = dirs[LEVELS as usize - 2];
    let before = a.dir_totals(deep);
    let new = a.begin_rescan(deep, 512, 10).unwrap();
    assert!(!a.dir_flags(top).is_done(), "reopened");
    assert_eq!(a.dir_totals(top), (want.0 - before.0 + 512, want.1 - before.1 + 10, want.2 - before.2));
    let f = children(
        &a,
        new,
        &[NewEntry { name: b"g", flags: Flags::of(Kind::File), disk_bytes: 1024, apparent_bytes: 7 }],
    );
    a.publish_children(new, f, 1);
    a.add_here(new, 1024, 7, 1);
    a.finish(new);
    assert!(a.dir_flags(top).is_done());
    let after = (want.0 - before.0 + 1536, want.1 - before.1 + 17, want.2 - before.2 + 1);
    assert_eq!(a.dir_totals(top), after);
    assert_eq!(a.dir_totals(dirs[1]).2, after.2 - 2, "a reopened ancestor did not report twice");
}

#[test]
fn own_sizes_that_do_not_fit_the_slot_are_exact() {
    let a = Arena::new();
    let r = root(&a, 0);
    for (disk, apparent) in [(4096, 4096), (1000, 7), (512 << 32, 1), (0, 5 << 32)] {
        a.set_own(r, disk, apparent);
        assert_eq!(a.dir_own(r), (disk, apparent));
        assert_eq!(a.dir_totals(r).0, disk, "totals follow the own size");
    }
}

#[test]
fn removal_subtracts_from_every_ancestor_once() {
    let a = Arena::new();
    let r = root(&a, 512);
    let kids = children(
        &a,
        r,
        &[
            NewEntry { name: b"d", flags: Flags::of(Kind::Dir), ..Default::default() },
            NewEntry { name: b"x", flags: Flags::of(Kind::File), disk_bytes: 1024, apparent_bytes: 1000 },
            NewEntry {
                name: b"y",
                flags: Flags::of(Kind::File) | F_HARDLINK | F_DUP_LINK,
                disk_bytes: 1024,
                apparent_bytes: 9,
            },
        ],
    );
    a.publish_children(r, kids, 3);
    a.add_here(r, 1024, 1000, 3);
    let d = dir_with_file(&a, r, kids, 4096);
    assert_eq!(a.dir_totals(r), (512 + 512 + 4096 + 1024, 512 + 100 + 4096 + 1000, 4));
    let file_in_d = a.children(d).unwrap().start;
    assert!(a.remove(d, file_in_d));
    assert!(!a.remove(d, file_in_d), "a second removal changes nothing");
    assert_eq!(a.dir_totals(d), (512, 100, 0));
    assert_eq!(a.dir_totals(r), (512 + 512 + 1024, 512 + 100 + 1000, 3));
    assert!(a.remove(r, kids + 2), "a duplicate link counted nothing");
    assert_eq!(a.dir_totals(r), (512 + 512 + 1024, 512 + 100 + 1000, 2));
    assert!(a.remove(r, kids));
    assert!(a.removed(kids) && a.kind(kids) == Kind::Dir, "the kind survives the mark");
    assert_eq!(a.dir_totals(r), (512 + 1024, 512 + 1000, 1));
}

#[test]
fn rescan_replaces_the_record_and_reopens_done_ancestors() {
    let a = Arena::new();
    let r = root(&a, 0);
    let e = children(&a, r, &[NewEntry { name: b"s", flags: Flags::of(Kind::Dir), ..Default::default() }]);
    a.publish_children(r, e, 1);
    a.add_here(r, 0, 0, 1);
    let s = dir_with_file(&a, r, e, 8192);
    a.finish(r);
    assert!(a.dir_flags(r).is_done());
    let n = a.begin_rescan(s, 1024, 10).unwrap();
    assert_eq!(a.dir_of(e), n);
    assert_eq!(a.dir_name(n), b"s");
    assert!(a.children(n).is_none(), "the new record is unlisted");
    assert!(!a.dir_flags(r).is_done(), "the root is scanning again");
    assert_eq!(a.dir_totals(r), (1024, 10, 1));
    a.add_here(n, 512, 5, 1);
    a.finish(n);
    assert!(a.dir_flags(n).is_done() && a.dir_flags(r).is_done());
    assert_eq!(a.dir_totals(r), (1536, 15, 2));

    // A rescan below a directory that is still being scanned takes one unit from it
    // and gives it back: the running scan still decides when it is done.
    let b = Arena::new();
    let r = root(&b, 0);
    let e = children(&b, r, &[NewEntry { name: b"s", flags: Flags::of(Kind::Dir), ..Default::default() }]);
    b.publish_children(r, e, 1);
    let s = b.new_dir(e, r, 0, 0).unwrap();
    b.add_pending(r, 1);
    b.finish(s);
    let n = b.begin_rescan(s, 0, 0).unwrap();
    b.finish(n);
    assert!(!b.dir_flags(r).is_done());
    b.finish(r);
    assert!(b.dir_flags(r).is_done(), "the root's own unit was the last");

    // The root itself can be rescanned.
    let root_new = b.begin_rescan(r, 0, 0).unwrap();
    assert_eq!(b.dir_name(root_new), b"/the/root");
    assert_eq!(b.dir_parent(root_new), NO_DIR);
}

#[test]
fn directories_keep_inode_and_mtime() {
    let a = Arena::new();
    let r = root(&a, 0);
    a.set_dir_stat(r, 1 << 40, -5);
    assert_eq!((a.dir_ino(r), a.dir_mtime(r)), (1 << 40, 0));
    a.set_dir_stat(r, 7, 1_700_000_000);
    assert_eq!(a.dir_mtime(r), 1_700_000_000);
    a.set_dev(r, 9);
    let e = children(&a, r, &[NewEntry { name: b"s", flags: Flags::of(Kind::Dir), ..Default::default() }]);
    let s = a.new_dir(e, r, 0, 0).unwrap();
    assert_eq!(a.dir_dev(s), 9, "inherited from the parent");
}

/// Fills directory record `d` with `n` files (one of them too big for an entry, one
/// multiply linked) and a subdirectory of `n / 10` files, finished.
fn fill(a: &Arena, d: u32, n: u32, round: u64) {
    let names: Vec<Vec<u8>> = (0..n).map(|i| format!("file-{i:05}").into_bytes()).collect();
    let mut kids: Vec<NewEntry> = names
        .iter()
        .map(|n| NewEntry { name: n, flags: Flags::of(Kind::File), disk_bytes: 512, apparent_bytes: round })
        .collect();
    kids[0].apparent_bytes = 1 << 40;
    kids[1].flags |= F_HARDLINK;
    kids.push(NewEntry { name: b"sub", flags: Flags::of(Kind::Dir), ..Default::default() });
    let first = children(a, d, &kids);
    a.note_link(first + 1, 7, round, 2);
    let sub = a.new_dir(first + n, d, 0, 0).unwrap();
    a.add_pending(d, 1);
    let inner: Vec<NewEntry> = names[..n as usize / 10]
        .iter()
        .map(|n| NewEntry { name: n, flags: Flags::of(Kind::File), disk_bytes: 1024, apparent_bytes: 1 })
        .collect();
    let f = children(a, sub, &inner);
    a.publish_children(sub, f, inner.len() as u32);
    a.add_here(sub, 1024 * inner.len() as u64, inner.len() as u64, inner.len() as u64);
    a.finish(sub);
    a.publish_children(d, first, n + 1);
    a.add_here(d, 512 * n as u64, (1 << 40) + round * (n as u64 - 1), n as u64 + 1);
    a.finish(d);
}

/// Issue 10, item 8: rescanning the same directory again and again reuses what each
/// rescan replaced (after `reclaim`, never before), so the entry array and the name
/// store stop growing; what the reused runs hold is the new listing's and nothing else.
#[test]
fn rescans_reuse_what_they_replaced() {
    let a = Arena::new();
    let r = root(&a, 0);
    let e = children(&a, r, &[NewEntry { name: b"s", flags: Flags::of(Kind::Dir), ..Default::default() }]);
    a.publish_children(r, e, 1);
    a.add_here(r, 0, 0, 1);
    let mut s = a.new_dir(e, r, 0, 0).unwrap();
    a.add_pending(r, 1);
    fill(&a, s, 1000, 1);
    a.finish(r);
    let (entries_once, names_once) = (a.entry_high_water(), a.name_high_water());
    let mut name = Vec::new();
    for round in 2..40u64 {
        let old = a.children(s).unwrap();
        let new = a.begin_rescan(s, 0, 0).unwrap();
        // Before `reclaim` the browser may still hold ids of the old listing: a
        // reservation now must not hand them out again.
        let probe = a.reserve_entries(1).unwrap();
        assert!(!old.contains(&probe), "round {round}: an id of the replaced listing was reused before reclaim");
        fill(&a, new, 1000, round);
        let kids = a.children(new).unwrap();
        assert!(kids.start >= old.end || kids.end <= old.start, "round {round}: overlaps the listing being replaced");
        s = new;
        a.reclaim();
        let kids = a.children(s).unwrap();
        assert_eq!(a.dir_totals(r), (512 * 1000 + 1024 * 100, (1 << 40) + round * 999 + 100, 1 + 1001 + 100));
        a.child_name(s, kids.start + 999, &mut name);
        assert_eq!(name, b"file-00999");
        a.child_name(s, kids.start + 1000, &mut name);
        assert_eq!(name, b"sub");
        assert_eq!(a.own_sizes(kids.start), (512, 1 << 40));
        assert_eq!(a.own_sizes(kids.start + 2), (512, round));
        assert_eq!(a.link_of(kids.start + 1), Some((7, round, 2)));
        // Every name of the tree reads back (a reused run that reached into a live
        // one would have overwritten a name there).
        let mut want = vec![b"s".to_vec()];
        want.extend((0..1000).map(|i| format!("file-{i:05}").into_bytes()));
        want.push(b"sub".to_vec());
        want.extend((0..100).map(|i| format!("file-{i:05}").into_bytes()));
        let mut got = vec![a.dir_name(s)];
        let sub = a.dir_of(kids.end - 1);
        for d in [s, sub] {
            let mut at = a.names_at(d);
            for _ in a.children(d).unwrap() {
                at = a.read_name(at, &mut name);
                got.push(name.clone());
            }
        }
        assert!(got == want, "round {round}: names changed");
        assert_eq!(a.side_rows(), (1, 1), "round {round}: overflow and link rows outlive their entries");
        // Exact accounting: what is free plus what is live (and the probes, which stay
        // reserved) is everything ever reserved: no run freed twice or too long, none lost.
        let live_names = 1 + 2 + (1000 * 11 + 4) + 100 * 11;
        let (free_entries, free_names) = a.free_totals();
        assert_eq!(free_entries + (1 + 1 + 1001 + 100) + (round - 1), a.entry_high_water(), "round {round}: entries");
        assert_eq!(free_names + live_names, a.name_high_water(), "round {round}: name bytes");
    }
    // One copy in use, one being replaced, and room for the probes splitting runs
    // (without reuse: 39 copies).
    assert!(a.entry_high_water() <= 3 * entries_once, "entries grew to {}", a.entry_high_water());
    assert!(a.name_high_water() <= 3 * names_once, "names grew to {}", a.name_high_water());
    assert!(a.entry_count() as u64 > 30 * 1000, "progress counts reused ids again");
}

/// Issue 32: an early reservation (a bound on a listing still being read) is not counted
/// as entries until its listing's count is known, gives back exactly what it does not
/// use, and a move keeps every entry and name it holds; a reservation that cannot fit
/// takes nothing and does not mark the arena full.
#[test]
fn early_reservations_count_late_give_back_their_rest_and_move_whole() {
    let a = Arena::new();
    let r = root(&a, 0);
    let before = (a.entry_count(), a.entry_high_water(), a.name_high_water());
    let (first, names) = a.reserve_early(10_000, 100_000).expect("room");
    assert_eq!(a.entry_count(), before.0, "not counted while the listing is read");
    a.set_layout(r, first, names);
    let mut at = names;
    for i in 0..300u32 {
        let name = format!("e{i}");
        a.write_entry(
            first + i,
            &NewEntry {
                name: name.as_bytes(),
                flags: Flags::of(Kind::File),
                disk_bytes: 512,
                apparent_bytes: u64::from(i),
            },
            at,
        );
        at += name_cost(name.len()) as u32;
    }
    let used = u64::from(at - names);
    a.count_entries(300);
    a.give_back(first + 300, 10_000 - 300, at, 100_000 - used);
    assert_eq!(a.entry_count(), before.0 + 300);
    assert_eq!(a.free_totals(), (10_000 - 300, 100_000 - used), "exactly the rest is free");
    assert_eq!(a.entry_high_water(), before.1 + 10_000);
    // Moved whole: every entry and name reads back at the new place.
    let (to, names_to) = (a.reserve_entries(300).unwrap(), a.reserve_names(used).unwrap());
    a.move_entries((first, to, 300), (names, names_to, used));
    a.set_layout(r, to, names_to);
    a.publish_children(r, to, 300);
    let mut name = Vec::new();
    let mut at = names_to;
    for i in 0..300u32 {
        at = a.read_name(at, &mut name);
        assert_eq!(name, format!("e{i}").as_bytes());
        assert_eq!(a.own_sizes(to + i), (512, u64::from(i)));
    }
    // Too big for what is left of the ids: nothing taken, the arena not full.
    a.leave_ids(5);
    let high = a.entry_high_water();
    assert!(a.reserve_early(6, 10).is_none());
    assert_eq!((a.entry_high_water(), a.full()), (high, None));
    assert!(a.reserve_early(5, 10).is_some());
}
