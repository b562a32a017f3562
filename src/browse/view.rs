//! The view: `Browser`, where the user is, how the listing is sorted, and what each key
//! does. It reads the arena and does no I/O; keys that need work done come back as an
//! `Action`.

use super::search::{Found, Input, Pattern};
use crate::meta::Kind;
use crate::term::Key;
use crate::tree::arena::{self, Arena, NO_DIR};
use crate::tree::path::child_path;
use std::cmp::Ordering;
use std::collections::{BTreeMap, HashMap};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SortKey {
    Size,
    Name,
    Count,
    Mtime,
    /// Exclusive bytes (with sharing-aware figures; directories only).
    Exclusive,
    /// The size change against the compared tree (`--diff`).
    Change,
}

/// What the column after the size shows (`g` cycles: bar, percent, both, none).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Graph {
    Bar,
    Percent,
    Both,
    Off,
}

/// How things are drawn.
#[derive(Clone, Copy, Debug, Default)]
pub struct Look {
    pub ascii: bool,
    pub color: bool,
    pub si: bool,
}

/// What the browser may change on disk.
#[derive(Clone, Copy, Debug, Default)]
pub struct Limits {
    pub read_only: bool,
    pub imported: bool,
    /// `d` moves to the trash (`--trash`).
    pub trash: bool,
}

/// What the loop around the browser knows: the status line and the error count.
#[derive(Clone, Debug, Default)]
pub struct Status {
    pub line: String,
    /// A rescan or delete is running (only one at a time).
    pub busy: bool,
    /// Entries that could not be read, once counted (after the scan).
    pub errors: Option<u64>,
}

/// Work a key asks for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Action {
    None,
    Quit,
    /// Delete entry `id` of directory `dir` (confirmed).
    Delete {
        dir: u32,
        id: u32,
    },
    /// Delete each (directory, entry), every one as `Delete` would (confirmed marks).
    DeleteMarks(Vec<(u32, u32)>),
    /// Move each (directory, entry) to the trash (confirmed).
    Trash(Vec<(u32, u32)>),
    /// Open `$SHELL` in directory index `dir`, then rescan it (`b`).
    Shell {
        dir: u32,
    },
    /// Rescan directory index `dir`.
    Rescan {
        dir: u32,
    },
}

pub(super) enum Modal {
    None,
    /// The help's page (0: keys, 1: marks) and its first line shown.
    Help {
        page: usize,
        top: usize,
    },
    /// `q` while a deletion runs: quit anyway?
    QuitDeleting,
    /// The results of a find (`Browser::found`).
    Find,
    Info,
    /// What to delete, as (directory, entry): the selection, or the marks (`marked`).
    /// `mounts`: mount points at or below them, where the platform can tell.
    Confirm {
        targets: Vec<(u32, u32)>,
        marked: bool,
        yes: bool,
        mounts: Option<u64>,
        /// Move them to the trash instead (`T`, or `d` with `--trash`).
        trash: bool,
    },
    Message {
        title: String,
        lines: Vec<String>,
    },
}

/// The names of one directory's children, read once, and of the rows it shows for
/// entries of the compared tree that it has not (`add`).
pub(super) struct Names {
    pub(super) dir: u32,
    pub(super) first: u32,
    /// Children of `dir`: ids `first..first + n`.
    pub(super) n: u32,
    pub(super) blob: Vec<u8>,
    /// One offset into `blob` per name, and one past the last.
    pub(super) at: Vec<u32>,
    /// Further names by entry id (removed rows): their slot in `at`.
    pub(super) more: HashMap<u32, usize>,
}

impl Names {
    pub(super) fn empty() -> Names {
        Names { dir: NO_DIR, first: 0, n: 0, blob: Vec::new(), at: vec![0], more: HashMap::new() }
    }

    pub(super) fn load(a: &Arena, dir: u32, kids: std::ops::Range<u32>) -> Names {
        let mut n = Names { dir, first: kids.start, n: kids.len() as u32, ..Names::empty() };
        let mut pos = a.names_at(dir);
        let mut name = Vec::new();
        for _ in kids {
            pos = a.read_name(pos, &mut name);
            n.blob.extend_from_slice(&name);
            n.at.push(n.blob.len() as u32);
        }
        n
    }

    /// Whether `id` is a child of `dir` (not a further name).
    pub(super) fn is_child(&self, id: u32) -> bool {
        id.wrapping_sub(self.first) < self.n
    }

    /// Adds the name of `id`, an entry shown in `dir` that is not its child.
    pub(super) fn add(&mut self, id: u32, name: &[u8]) {
        self.more.insert(id, self.at.len() - 1);
        self.blob.extend_from_slice(name);
        self.at.push(self.blob.len() as u32);
    }

    /// Forgets the names `add` gave.
    pub(super) fn clear_more(&mut self) {
        self.more.clear();
        let end = self.n as usize;
        self.blob.truncate(self.at[end] as usize);
        self.at.truncate(end + 1);
    }

    pub(super) fn get(&self, id: u32) -> &[u8] {
        let k = if self.is_child(id) { (id - self.first) as usize } else { self.more.get(&id).copied().unwrap_or(0) };
        match self.at.get(k + 1) {
            Some(&end) => &self.blob[self.at[k] as usize..end as usize],
            None => b"",
        }
    }
}

/// One child, with the keys it is sorted by.
#[derive(Clone, Copy)]
pub(super) struct Item {
    pub(super) id: u32,
    pub(super) is_dir: bool,
    pub(super) size: u64,
    pub(super) count: u64,
    pub(super) mtime: i64,
    pub(super) exclusive: u64,
    /// Size change against the compared tree; `None` for an entry it did not have.
    pub(super) change: Option<i128>,
    /// An entry of the compared tree that is gone (a row for what was removed).
    pub(super) removed: bool,
}

/// The tree the browser compares with (`--diff OLD`), in the same arena: its root, and
/// for the shown directory the matching old directory, its children by name, and what
/// it had that the new one has not.
pub(super) struct Compare {
    pub(super) root: u32,
    /// The new directory the rest was found for.
    pub(super) for_dir: u32,
    pub(super) old_dir: Option<u32>,
    pub(super) kids: HashMap<Vec<u8>, u32>,
    /// Children of `old_dir` that the shown directory has not, or has with the other kind
    /// (a file that became a directory): sorted ids, shown as removed rows.
    pub(super) removed: Vec<u32>,
}

/// Where the user is when they went into a removed directory: the old directory they
/// entered and the directory (of the browsed tree) they came from. Everything below it
/// is of the compared tree only, shown as removed, and nothing there is on disk.
#[derive(Clone, Copy)]
pub(super) struct Trail {
    pub(super) entered: u32,
    pub(super) from: u32,
}

/// Stats a path for its modification time (seconds); the browser's only file access.
pub type MtimeOf<'a> = Box<dyn Fn(&[u8]) -> Option<i64> + 'a>;

/// What the info box shows of an entry on disk, read when the box shows it (nothing of
/// it is kept per entry).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct EntryStat {
    /// `st_mode`: the type and permission bits.
    pub mode: u32,
    pub uid: u32,
    pub gid: u32,
    /// The names of the owner and group, where the system's files have them.
    pub owner: Option<String>,
    pub group: Option<String>,
    /// Seconds since the epoch.
    pub mtime: i64,
}

/// Stats a path (without following a symlink) for the info box.
pub type StatOf<'a> = Box<dyn Fn(&[u8]) -> Option<EntryStat> + 'a>;

/// Counts the mount points at or below a path; `None` where the platform cannot list them.
pub type MountsOf<'a> = Box<dyn Fn(&[u8]) -> Option<u64> + 'a>;

/// The browser's state. See the module doc.
pub struct Browser<'a> {
    pub(super) a: &'a Arena,
    pub(super) look: Look,
    pub(super) limits: Limits,
    pub root: u32,
    pub(super) cwd: u32,
    /// The selected row and the entry on it (followed across re-sorts once chosen).
    pub(super) sel: usize,
    pub(super) sel_id: Option<u32>,
    /// The user chose `sel_id` (moved, or came back from it). Until then the cursor
    /// stays on the first row while a scan reorders the listing under it.
    pub(super) chosen: bool,
    /// First listed row shown.
    pub(super) top: usize,
    pub(super) sort: SortKey,
    pub(super) desc: bool,
    pub(super) dirs_first: bool,
    pub(super) apparent: bool,
    pub(super) show_count: bool,
    pub(super) graph: Graph,
    pub(super) modal: Modal,
    pub(super) names: Names,
    pub(super) items: Vec<Item>,
    /// The listing is out of date (a key changed it, or the arena may have).
    pub(super) stale: bool,
    /// Rows the listing had at the last frame (page keys move by this).
    pub(super) rows: usize,
    pub(super) mtime_of: Option<MtimeOf<'a>>,
    /// Stats an entry for the info box, and what it read for the entry shown there.
    pub(super) stat_of: Option<StatOf<'a>>,
    pub(super) info_stat: Option<(u32, Option<EntryStat>)>,
    /// The mtime column, shown whatever the sort (`m`).
    pub(super) show_mtime: bool,
    /// Counts the mount points at or below a path (asked before a delete).
    pub(super) mounts_of: Option<MountsOf<'a>>,
    /// File mtimes of the shown directory, by entry id.
    pub(super) mtimes: HashMap<u32, Option<i64>>,
    /// A rescan or delete is running (the loop says so before each key and frame).
    pub(super) busy: bool,
    /// What runs is a deletion (`q` asks first).
    pub(super) deleting: bool,
    /// The answer to the last key that could not act, shown on the status line until
    /// the next key.
    pub(super) note: Option<String>,
    /// The root as an absolute path, for the path line (the scan keeps the name given).
    pub(super) root_title: Option<Vec<u8>>,
    /// Marked entries: id → its directory (see `marks.rs`).
    pub(super) marks: BTreeMap<u32, u32>,
    /// A filter or find being typed, the filter of the shown directory, and the results
    /// of a find (see `search.rs`).
    pub(super) input: Option<Input>,
    pub(super) filter: Option<Pattern>,
    pub(super) found: Option<Found>,
    /// Entries of the shown directory the filter (or `hide`) leaves out.
    pub(super) filtered_out: usize,
    /// Dotfiles and excluded entries are left out of the listing (`e`).
    pub(super) hide: bool,
    pub(super) compare: Option<Compare>,
    /// Set while the shown directory is a removed one (see `Trail`).
    pub(super) trail: Option<Trail>,
}

pub(super) fn is_dir_entry(a: &Arena, id: u32) -> bool {
    a.kind(id) == Kind::Dir
}

impl<'a> Browser<'a> {
    pub fn new(a: &'a Arena, root: u32, look: Look, limits: Limits) -> Browser<'a> {
        Browser {
            a,
            look,
            limits,
            root,
            cwd: root,
            sel: 0,
            sel_id: None,
            chosen: false,
            top: 0,
            sort: SortKey::Size,
            desc: true,
            dirs_first: false,
            apparent: false,
            show_count: false,
            graph: Graph::Bar,
            modal: Modal::None,
            names: Names::empty(),
            items: Vec::new(),
            stale: true,
            rows: 1,
            mtime_of: None,
            stat_of: None,
            info_stat: None,
            show_mtime: false,
            mounts_of: None,
            mtimes: HashMap::new(),
            busy: false,
            deleting: false,
            note: None,
            root_title: None,
            marks: BTreeMap::new(),
            input: None,
            filter: None,
            found: None,
            filtered_out: 0,
            hide: false,
            compare: None,
            trail: None,
        }
    }

    /// Compares with the tree at root directory `old_root` (same arena): a change column
    /// and the `D` sort key.
    pub fn set_compare(&mut self, old_root: u32) {
        let kids = HashMap::new();
        self.compare = Some(Compare { root: old_root, for_dir: NO_DIR, old_dir: None, kids, removed: Vec::new() });
        self.stale = true;
    }

    /// The directory of the old tree at the path of `dir` (below the roots), if any.
    fn old_match(&self, old_root: u32, dir: u32) -> Option<u32> {
        let mut names = Vec::new();
        let mut d = dir;
        while d != self.root && d != NO_DIR {
            names.push(self.a.dir_name(d));
            d = self.a.dir_parent(d);
        }
        let mut old = old_root;
        let mut buf = Vec::new();
        for name in names.iter().rev() {
            let kids = self.a.children(old)?;
            let mut at = self.a.names_at(old);
            let mut found = None;
            for id in kids {
                at = self.a.read_name(at, &mut buf);
                if buf == *name && is_dir_entry(self.a, id) && !self.a.removed(id) {
                    found = Some(self.a.dir_of(id));
                    break;
                }
            }
            old = found?;
        }
        Some(old)
    }

    /// Brings `compare` to the shown directory (once per directory entered, and again
    /// after a delete), and gives the names of its removed rows to `names`.
    fn compare_cwd(&mut self) {
        let Some(c) = &self.compare else { return };
        if c.for_dir == self.cwd {
            return;
        }
        let root = c.root;
        let old_dir = self.old_match(root, self.cwd);
        let mut kids = HashMap::new();
        if let Some((d, range)) = old_dir.and_then(|d| Some((d, self.a.children(d)?))) {
            let mut at = self.a.names_at(d);
            let mut name = Vec::new();
            for id in range {
                at = self.a.read_name(at, &mut name);
                kids.insert(name.clone(), id);
            }
        }
        // What is here now (deleted entries are not), by name, with its kind.
        let mut here: HashMap<&[u8], bool> = HashMap::new();
        for id in self.a.children(self.cwd).unwrap_or(0..0) {
            if !self.a.removed(id) {
                here.insert(self.names.get(id), is_dir_entry(self.a, id));
            }
        }
        let mut removed: Vec<(u32, &Vec<u8>)> = kids
            .iter()
            .filter(|(name, &id)| here.get(name.as_slice()) != Some(&is_dir_entry(self.a, id)))
            .map(|(name, &id)| (id, name))
            .collect();
        removed.sort_unstable();
        let mut names = std::mem::replace(&mut self.names, Names::empty());
        names.clear_more();
        for (id, name) in &removed {
            names.add(*id, name);
        }
        let removed = removed.into_iter().map(|(id, _)| id).collect();
        self.names = names;
        self.compare = Some(Compare { root, for_dir: self.cwd, old_dir, kids, removed });
    }

    /// Asks for the comparison of the shown directory again (entries were deleted).
    pub fn recompare(&mut self) {
        if let Some(c) = &mut self.compare {
            c.for_dir = NO_DIR;
        }
        self.stale = true;
    }

    /// Whether row `id` is an entry of the compared tree that is gone: a removed row, or
    /// anything inside a removed directory.
    pub(super) fn is_gone(&self, id: u32) -> bool {
        self.trail.is_some() || self.compare.as_ref().is_some_and(|c| c.removed.binary_search(&id).is_ok())
    }

    /// The directory holding row `id`: the shown one, or for a removed row the compared
    /// directory.
    pub(super) fn parent_of(&self, id: u32) -> u32 {
        match &self.compare {
            Some(c) if !self.names.is_child(id) => c.old_dir.unwrap_or(self.cwd),
            _ => self.cwd,
        }
    }

    /// Size change of child `id` of the shown directory against the compared tree;
    /// `None` when that tree has no entry of the same name and kind.
    pub(super) fn change_of(&self, id: u32) -> Option<i128> {
        let c = self.compare.as_ref()?;
        let old = *c.kids.get(self.names.get(id))?;
        if is_dir_entry(self.a, old) != is_dir_entry(self.a, id) {
            return None;
        }
        Some(self.size_of(id) as i128 - self.size_of(old) as i128)
    }

    /// (entries, size) the compared directory had that the shown one has not.
    pub(super) fn removed_here(&self) -> Option<(usize, u64)> {
        let c = self.compare.as_ref().filter(|_| self.trail.is_none())?;
        let size = c.removed.iter().map(|&id| self.size_of(id)).sum();
        Some((c.removed.len(), size))
    }

    /// Whether a rescan or delete is running: no second one may start.
    pub fn set_busy(&mut self, busy: bool) {
        self.busy = busy;
    }

    /// Whether what runs is a deletion (then `q` asks before quitting).
    pub fn set_deleting(&mut self, deleting: bool) {
        self.deleting = deleting;
    }

    /// The root's absolute path, shown in the path line instead of the name it was given.
    pub fn set_root_title(&mut self, abs: Vec<u8>) {
        self.root_title = Some(abs);
    }

    /// Answers a key that could not act, on the status line until the next key.
    pub(super) fn say(&mut self, why: impl Into<String>) {
        self.note = Some(why.into());
    }

    /// Starts with apparent sizes shown.
    pub fn set_apparent(&mut self, on: bool) {
        self.apparent = on;
        self.stale = true;
    }

    /// Lets the browser stat files for their mtimes (a live scan, not an import).
    pub fn set_mtime_source(&mut self, f: MtimeOf<'a>) {
        self.mtime_of = Some(f);
    }

    /// Lets the info box stat the entry it shows (mode, owner, group, mtime).
    pub fn set_stat_source(&mut self, f: StatOf<'a>) {
        self.stat_of = Some(f);
    }

    /// Lets the browser count the mount points inside a selection before a delete.
    pub fn set_mounts_source(&mut self, f: MountsOf<'a>) {
        self.mounts_of = Some(f);
    }

    /// The arena may have changed: sort again before the next frame.
    pub fn mark_stale(&mut self) {
        self.stale = true;
    }

    /// Directory index `old` was replaced by `new` (a rescan began).
    pub fn replace_dir(&mut self, old: u32, new: u32) {
        if self.cwd == old {
            self.cwd = new;
        }
        if let Some(t) = self.trail.as_mut().filter(|t| t.from == old) {
            t.from = new;
        }
        if self.root == old {
            self.root = new;
        }
        if self.names.dir == old {
            self.names = Names::empty();
        }
        self.drop_marks_below(old);
        self.stale = true;
    }

    /// Shows a message box until the next key.
    pub fn message(&mut self, title: &str, lines: Vec<String>) {
        self.modal = Modal::Message { title: title.to_string(), lines };
    }

    /// The directory shown.
    #[cfg(test)]
    pub fn cwd(&self) -> u32 {
        self.cwd
    }

    /// The selected entry, if the directory has any.
    #[cfg(test)]
    pub fn selected(&self) -> Option<u32> {
        self.sel_id
    }

    pub(super) fn size_of(&self, id: u32) -> u64 {
        let (disk, apparent) = if is_dir_entry(self.a, id) {
            let t = self.a.dir_totals(self.a.dir_of(id));
            (t.0, t.1)
        } else {
            self.a.own_sizes(id)
        };
        if self.apparent {
            apparent
        } else {
            disk
        }
    }

    /// The entry's mode, owner, group and mtime for the info box: read once when the box
    /// comes to show it, nothing for what is not on disk (an import, a removed row).
    pub(super) fn stat_for_info(&mut self, id: u32) -> Option<EntryStat> {
        if let Some((seen, st)) = &self.info_stat {
            if *seen == id {
                return st.clone();
            }
        }
        let st = match &self.stat_of {
            Some(f) if !self.is_gone(id) => f(&child_path(self.a, self.cwd, id)),
            _ => None,
        };
        self.info_stat = Some((id, st.clone()));
        st
    }

    pub(super) fn mtime_for(&mut self, id: u32) -> Option<i64> {
        if is_dir_entry(self.a, id) {
            let t = self.a.dir_mtime(self.a.dir_of(id));
            return (t > 0).then_some(t as i64);
        }
        if let Some(&t) = self.mtimes.get(&id) {
            return t;
        }
        // Not on disk: a stat would find something else or nothing.
        if self.is_gone(id) {
            return None;
        }
        let f = self.mtime_of.as_ref()?;
        let t = f(&child_path(self.a, self.cwd, id));
        self.mtimes.insert(id, t);
        t
    }

    /// Brings the sorted listing up to date, if anything may have changed.
    pub(super) fn refresh(&mut self) {
        if !self.stale {
            return;
        }
        self.stale = false;
        self.prune_marks();
        // Leave directories that were deleted under us.
        while self.cwd != self.root && self.a.removed(self.a.dir_entry(self.cwd)) {
            self.sel_id = Some(self.a.dir_entry(self.cwd));
            self.chosen = true;
            self.cwd = self.a.dir_parent(self.cwd);
        }
        let Some(kids) = self.a.children(self.cwd) else {
            self.items.clear();
            return;
        };
        if self.names.dir != self.cwd {
            self.names = Names::load(self.a, self.cwd, kids.clone());
            self.mtimes.clear();
            if let Some(c) = &mut self.compare {
                c.for_dir = NO_DIR;
            }
        }
        if self.trail.is_none() && self.compare.as_ref().is_some_and(|c| c.for_dir != self.cwd) {
            self.compare_cwd();
        }
        let mut items = std::mem::take(&mut self.items);
        items.clear();
        let figures = self.a.shared_figures();
        for id in kids {
            if self.a.removed(id) {
                continue;
            }
            // Inside a removed directory every row is one.
            if self.trail.is_some() {
                items.push(self.removed_item(id));
                continue;
            }
            let is_dir = is_dir_entry(self.a, id);
            let count = if is_dir { self.a.dir_totals(self.a.dir_of(id)).2 } else { 0 };
            let mtime = if self.sort == SortKey::Mtime { self.mtime_for(id).unwrap_or(0) } else { 0 };
            let exclusive = figures.as_ref().filter(|_| is_dir).and_then(|f| f.get(self.a.dir_of(id)));
            let exclusive = exclusive.map_or(0, |s| s.exclusive);
            let change = self.change_of(id);
            items.push(Item { id, is_dir, size: self.size_of(id), count, mtime, exclusive, change, removed: false });
        }
        let gone = self.compare.as_ref().filter(|_| self.trail.is_none()).map_or(Vec::new(), |c| c.removed.clone());
        for id in gone {
            items.push(self.removed_item(id));
        }
        let before = items.len();
        if let Some(f) = &self.filter {
            let names = &self.names;
            items.retain(|it| f.matches(names.get(it.id)));
        }
        if self.hide {
            let (a, names) = (self.a, &self.names);
            items.retain(|it| !names.get(it.id).starts_with(b".") && !a.flags(it.id).contains(arena::F_EXCLUDED));
        }
        self.filtered_out = before - items.len();
        self.sort_items(&mut items);
        self.items = items;
        // Follow the chosen entry to its new row; if it is gone, stay on the row.
        if !self.chosen {
            self.sel = 0;
        } else if let Some(id) = self.sel_id {
            if let Some(k) = self.items.iter().position(|it| it.id == id) {
                self.sel = k;
            }
        }
        self.sel = self.sel.min(self.items.len().saturating_sub(1));
        self.sel_id = self.items.get(self.sel).map(|it| it.id);
    }

    /// The row of `id`, an entry of the compared tree that is gone: it went with all of
    /// its size.
    fn removed_item(&mut self, id: u32) -> Item {
        let is_dir = is_dir_entry(self.a, id);
        let count = if is_dir { self.a.dir_totals(self.a.dir_of(id)).2 } else { 0 };
        let mtime = if self.sort == SortKey::Mtime { self.mtime_for(id).unwrap_or(0) } else { 0 };
        let size = self.size_of(id);
        Item { id, is_dir, size, count, mtime, exclusive: 0, change: Some(-(size as i128)), removed: true }
    }

    /// Sorts the listing by the chosen key, then by name and id (a total order, so equal
    /// keys never swap between frames).
    fn sort_items(&self, items: &mut [Item]) {
        let names = &self.names;
        let (sort, desc, dirs_first) = (self.sort, self.desc, self.dirs_first);
        items.sort_unstable_by(|x, y| {
            // Removed rows come after what is on disk, except in the change order, where
            // they are the largest shrinkage.
            let gone = if sort == SortKey::Change { Ordering::Equal } else { x.removed.cmp(&y.removed) };
            let dirs = if dirs_first { y.is_dir.cmp(&x.is_dir) } else { Ordering::Equal };
            let primary = match sort {
                SortKey::Size => x.size.cmp(&y.size),
                SortKey::Count => x.count.cmp(&y.count),
                SortKey::Mtime => x.mtime.cmp(&y.mtime),
                SortKey::Exclusive => x.exclusive.cmp(&y.exclusive),
                SortKey::Name => names.get(x.id).cmp(names.get(y.id)),
                // A new entry changed by all of its size.
                SortKey::Change => {
                    let ch = |it: &Item| it.change.unwrap_or(it.size as i128);
                    ch(x).cmp(&ch(y))
                }
            };
            let primary = if desc { primary.reverse() } else { primary };
            gone.then(dirs).then(primary).then_with(|| names.get(x.id).cmp(names.get(y.id))).then(x.id.cmp(&y.id))
        });
    }

    pub(super) fn select(&mut self, k: usize) {
        if self.items.is_empty() {
            return;
        }
        self.sel = k.min(self.items.len() - 1);
        self.sel_id = Some(self.items[self.sel].id);
        self.chosen = true;
    }

    pub(super) fn open(&mut self, dir: u32, select: Option<u32>) {
        // A filter is the shown directory's.
        self.filter = None;
        self.input = None;
        self.cwd = dir;
        self.sel = 0;
        self.sel_id = select;
        self.chosen = select.is_some();
        self.top = 0;
        self.stale = true;
    }

    pub(super) fn set_sort(&mut self, key: SortKey) {
        if self.sort == key {
            self.desc = !self.desc;
        } else {
            self.sort = key;
            self.desc = key != SortKey::Name;
        }
        self.stale = true;
    }

    /// Handles one key.
    pub fn key(&mut self, k: Key) -> Action {
        self.refresh();
        let had_note = self.note.take().is_some();
        if self.input.is_some() {
            return self.input_key(k);
        }
        match &mut self.modal {
            Modal::Help { page, top } => {
                match k {
                    Key::Char('1') | Key::Left | Key::Char('h') => (*page, *top) = (0, 0),
                    Key::Char('2') | Key::Right | Key::Char('l') => (*page, *top) = (1, 0),
                    Key::Down | Key::Char('j') => *top += 1,
                    Key::Up | Key::Char('k') => *top = top.saturating_sub(1),
                    Key::PageDown | Key::Char(' ') => *top += 10,
                    Key::PageUp => *top = top.saturating_sub(10),
                    Key::Char('q') | Key::Char('?') | Key::Esc | Key::Enter => self.modal = Modal::None,
                    _ => {}
                }
                return Action::None;
            }
            Modal::QuitDeleting => {
                self.modal = Modal::None;
                if matches!(k, Key::Char('y') | Key::Char('Y')) {
                    return Action::Quit;
                }
                self.say("Not quitting: the deletion goes on.");
                return Action::None;
            }
            Modal::Confirm { yes, .. } => {
                let go = matches!(k, Key::Char('y') | Key::Char('Y')) || (k == Key::Enter && *yes);
                match k {
                    _ if go => {
                        if let Modal::Confirm { targets, marked, trash, .. } =
                            std::mem::replace(&mut self.modal, Modal::None)
                        {
                            return match (trash, marked, targets.as_slice()) {
                                (true, _, _) => Action::Trash(targets),
                                (false, false, &[(dir, id)]) => Action::Delete { dir, id },
                                _ => Action::DeleteMarks(targets),
                            };
                        }
                    }
                    Key::Left | Key::Right | Key::Tab | Key::Char('h') | Key::Char('l') => *yes = !*yes,
                    Key::Char('n') | Key::Char('N') | Key::Esc | Key::Char('q') | Key::Enter => {
                        self.modal = Modal::None
                    }
                    _ => {}
                }
                return Action::None;
            }
            Modal::Message { .. } => {
                self.modal = Modal::None;
                return Action::None;
            }
            Modal::Find => return self.found_key(k),
            Modal::Info if matches!(k, Key::Char('i') | Key::Esc) => {
                self.modal = Modal::None;
                return Action::None;
            }
            Modal::Info | Modal::None => {}
        }
        self.main_key(k, had_note)
    }

    /// A key of the listing (no box open but the info panel).
    pub(super) fn main_key(&mut self, k: Key, had_note: bool) -> Action {
        let page = self.rows.max(1);
        match k {
            Key::Up | Key::Char('k') => self.select(self.sel.saturating_sub(1)),
            Key::Down | Key::Char('j') => self.select(self.sel + 1),
            Key::PageUp => self.select(self.sel.saturating_sub(page)),
            Key::PageDown => self.select(self.sel + page),
            Key::Home => self.select(0),
            Key::End => self.select(usize::MAX),
            Key::Right | Key::Char('l') | Key::Enter => self.enter_selected(),
            Key::Left | Key::Char('h') | Key::Backspace | Key::Char('<') => self.go_up(),
            Key::Char('s') => self.set_sort(SortKey::Size),
            Key::Char('n') => self.set_sort(SortKey::Name),
            Key::Char('C') => self.set_sort(SortKey::Count),
            Key::Char('M') => self.set_sort(SortKey::Mtime),
            Key::Char('x') if self.a.shared_figures().is_some() => self.set_sort(SortKey::Exclusive),
            Key::Char('x') => self.say("x sorts by exclusive bytes: that needs --shared."),
            Key::Char('D') if self.compare.is_some() => self.set_sort(SortKey::Change),
            Key::Char('D') => self.say("D sorts by change: it needs --diff OLD."),
            Key::Char('t') => {
                self.dirs_first = !self.dirs_first;
                self.stale = true;
            }
            Key::Char('a') => {
                self.apparent = !self.apparent;
                self.stale = true;
            }
            Key::Char('c') => self.show_count = !self.show_count,
            Key::Char('m') => self.show_mtime = !self.show_mtime,
            Key::Char('e') => {
                self.hide = !self.hide;
                self.stale = true;
                self.say(if self.hide {
                    "Dotfiles and excluded entries hidden (e shows them; the totals still count them)."
                } else {
                    "Dotfiles and excluded entries shown."
                });
            }
            Key::Char('g') => {
                self.graph = match self.graph {
                    Graph::Bar => Graph::Percent,
                    Graph::Percent => Graph::Both,
                    Graph::Both => Graph::Off,
                    Graph::Off => Graph::Bar,
                }
            }
            Key::Char('i') if self.sel_id.is_some() => {
                // Read afresh each time the box opens.
                self.info_stat = None;
                self.modal = Modal::Info;
            }
            Key::Char('i') => self.say("Nothing to show: this directory is empty."),
            Key::Char('?') => self.modal = Modal::Help { page: 0, top: 0 },
            Key::Char(' ') => self.toggle_mark(),
            Key::Char('*') => self.mark_all_here(),
            Key::Char('u') => self.clear_marks(),
            Key::Char('d') if self.limits.trash => self.ask_trash(),
            Key::Char('d') if !self.marks.is_empty() => self.ask_delete_marks(),
            Key::Char('d') => self.ask_delete(),
            Key::Char('T') => self.ask_trash(),
            Key::Char('r') => return self.ask_rescan(),
            Key::Char('b') => return self.ask_shell(),
            Key::Char('q') if self.deleting => self.modal = Modal::QuitDeleting,
            Key::Char('q') => return Action::Quit,
            Key::Char('/') => self.start_filter(),
            Key::Char('f') => self.start_find(),
            // Esc dismissed the answer that was shown, or clears the filter.
            Key::Esc if had_note => {}
            Key::Esc if self.filter.is_some() => self.set_filter(None),
            Key::Esc => self.say("Nothing to close."),
            k => self.say(format!("{} does nothing here; ? lists the keys.", key_name(k))),
        }
        Action::None
    }

    /// Opens the selected directory (a removed one shows what it held).
    fn enter_selected(&mut self) {
        let Some(id) = self.sel_id else { return self.say("Nothing to open: this directory is empty.") };
        if !is_dir_entry(self.a, id) {
            let name = crate::term::escape(self.names.get(id));
            return self.say(format!("{name} is not a directory."));
        }
        if self.trail.is_none() && self.is_gone(id) {
            self.trail = Some(Trail { entered: self.a.dir_of(id), from: self.cwd });
        }
        self.open(self.a.dir_of(id), None);
    }

    /// Goes to the parent directory, selecting the one it came from.
    fn go_up(&mut self) {
        if self.cwd == self.root {
            return self.say("This is the top: the directory that was scanned.");
        }
        let came_from = self.a.dir_entry(self.cwd);
        match self.trail {
            Some(t) if t.entered == self.cwd => {
                self.trail = None;
                self.open(t.from, Some(came_from));
            }
            _ => self.open(self.a.dir_parent(self.cwd), Some(came_from)),
        }
    }

    pub(super) fn refuse(&mut self, why: &str) {
        self.say(why);
    }

    /// Why no delete (or trash move) can start now, whatever is selected: an imported
    /// tree, `--read-only`, or a rescan or deletion still running.
    pub(super) fn delete_refusal(&self) -> Option<&'static str> {
        if self.limits.imported {
            Some("Deleting needs a scan of the file system; this is an imported export.")
        } else if self.limits.read_only {
            Some("Deleting is off (--read-only).")
        } else if self.busy {
            Some("Wait until the running rescan or deletion has finished.")
        } else {
            None
        }
    }

    pub(super) fn ask_delete(&mut self) {
        let Some(id) = self.sel_id else { return self.say("Nothing to delete: this directory is empty.") };
        if self.is_gone(id) {
            let name = crate::term::escape(self.names.get(id));
            return self
                .refuse(&format!("{name} is not on disk (removed since the compared tree): nothing to delete."));
        }
        if let Some(why) = self.delete_refusal() {
            return self.refuse(why);
        }
        if is_dir_entry(self.a, id) && !self.a.dir_flags(self.a.dir_of(id)).is_done() {
            return self.refuse("This directory is still being scanned; it can be deleted once its scan is done.");
        }
        let mounts = match &self.mounts_of {
            Some(f) if is_dir_entry(self.a, id) => f(&child_path(self.a, self.cwd, id)),
            _ => None,
        };
        self.modal = Modal::Confirm { targets: vec![(self.cwd, id)], marked: false, yes: false, mounts, trash: false };
    }

    /// `T` (and `d` with `--trash`): the marks, or else the selection, to the trash,
    /// after the checks and the confirmation of a delete.
    pub(super) fn ask_trash(&mut self) {
        if self.marks.is_empty() {
            self.ask_delete();
        } else {
            self.ask_delete_marks();
        }
        if let Modal::Confirm { trash, mounts, .. } = &mut self.modal {
            if let Some(n) = mounts.filter(|&n| n > 0) {
                self.modal = Modal::None;
                return self.refuse(&format!(
                    "It holds {n} mount point(s): a move to the trash would take them along. d deletes around them."
                ));
            }
            *trash = true;
        }
    }

    /// `b`: a shell in the selected directory (or the one shown), which is rescanned
    /// when the shell ends.
    pub(super) fn ask_shell(&mut self) -> Action {
        if self.limits.imported {
            self.refuse("A shell needs the directory on disk; this is an imported export.");
            return Action::None;
        }
        if self.trail.is_some() {
            self.refuse("This directory is not on disk (removed since the compared tree): no shell here.");
            return Action::None;
        }
        let flags_ok = |id: u32| !self.a.flags(id).intersects(arena::F_EXCLUDED | arena::F_OTHER_FS);
        let dir = match self.sel_id {
            Some(id) if is_dir_entry(self.a, id) && flags_ok(id) && !self.is_gone(id) => self.a.dir_of(id),
            _ => self.cwd,
        };
        Action::Shell { dir }
    }

    pub(super) fn ask_rescan(&mut self) -> Action {
        if self.trail.is_some() {
            self.refuse("This directory is not on disk (removed since the compared tree): nothing to rescan.");
            return Action::None;
        }
        if self.limits.imported {
            self.refuse("Rescanning needs the file system; this is an imported export.");
            return Action::None;
        }
        if self.busy {
            self.refuse("Wait until the running rescan or deletion has finished.");
            return Action::None;
        }
        let flags_ok = |id: u32| !self.a.flags(id).intersects(arena::F_EXCLUDED | arena::F_OTHER_FS);
        let dir = match self.sel_id {
            Some(id) if is_dir_entry(self.a, id) && flags_ok(id) && !self.is_gone(id) => self.a.dir_of(id),
            _ => self.cwd,
        };
        if !self.a.dir_flags(dir).is_done() {
            self.refuse("This directory is still being scanned.");
            return Action::None;
        }
        Action::Rescan { dir }
    }
}

/// How the status line names a key.
fn key_name(k: Key) -> String {
    match k {
        Key::Char(' ') => "Space".into(),
        Key::Char(c) => c.to_string(),
        Key::Ctrl(c) => format!("Ctrl-{}", c.to_ascii_uppercase()),
        Key::Up => "Up".into(),
        Key::Down => "Down".into(),
        Key::Left => "Left".into(),
        Key::Right => "Right".into(),
        Key::PageUp => "PgUp".into(),
        Key::PageDown => "PgDn".into(),
        Key::Home => "Home".into(),
        Key::End => "End".into(),
        Key::Enter => "Enter".into(),
        Key::Backspace => "Backspace".into(),
        Key::Tab => "Tab".into(),
        Key::Esc => "Esc".into(),
        Key::Delete => "Delete".into(),
        Key::Other => "That key".into(),
    }
}
