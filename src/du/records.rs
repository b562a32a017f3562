//! du's sink: one small record per directory (sizes of its plain files folded in) plus
//! the few entries that must be looked at again in traversal order — subdirectories,
//! hard-link candidates, errors, and every file only when `-a` prints files. Memory is
//! proportional to what du prints, not to the tree.

use crate::meta::{Errno, Kind, Meta, Timespec};
use crate::walk::scan::{Child, Listed, Measure, Pos, Seen, Sink, TimeKind};
use std::collections::HashSet;
use std::ffi::CString;
use std::sync::Mutex;

/// What an item stands for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum ItemKind {
    /// A subdirectory; `target` is its record.
    Dir,
    /// A directory already claimed by another path (`-L`): visit it through the claim.
    Alias,
    /// A plain file already summed into its directory, kept for printing (`-a`).
    File,
    /// A file that may have another name: counted only if first in traversal order.
    Candidate,
    /// `stat` failed; `target` is the error number.
    NoAccess,
}

/// One entry kept for the ordered pass. 48 bytes.
#[derive(Clone, Copy, Debug)]
pub struct Item {
    /// The directory record it lives in.
    pub dir: u32,
    /// Position in the directory listing (readdir order).
    pub idx: u32,
    /// Listing inode for directories and errors (the sort key), stat'ed inode for files.
    pub ino: u64,
    pub dev: u64,
    /// Measured size in bytes.
    pub size_bytes: u64,
    pub name_off: u32,
    pub name_len: u16,
    pub kind: ItemKind,
    pub target: u32,
}
const _: () = assert!(std::mem::size_of::<Item>() == 48);

/// Record flags.
pub const REC_SORT_BY_INODE: u8 = 1;
pub const REC_UNREADABLE: u8 = 2;
pub const REC_PARTIAL: u8 = 4;
/// Moved away from its parent while it was being scanned (`Sink::moved`).
pub const REC_MOVED: u8 = 8;

/// One directory. Sums cover the plain (non-candidate) files directly inside it.
#[derive(Clone, Copy, Debug, Default)]
pub struct DirRec {
    pub dev: u64,
    pub ino: u64,
    pub self_bytes: u64,
    pub files_bytes: u64,
    pub files_count: u64,
    pub n_entries: u32,
    pub errno: i32,
    pub flags: u8,
}

/// Times per record / item, only when `--time` asked for them.
#[derive(Default)]
pub struct Times {
    /// (the directory's own time, newest plain file directly inside).
    pub recs: Vec<(Timespec, Timespec)>,
    pub items: Vec<Timespec>,
}

/// Everything one scan leaves behind.
#[derive(Default)]
pub struct Tree {
    pub recs: Vec<DirRec>,
    pub items: Vec<Item>,
    pub names: Vec<u8>,
    pub times: Option<Times>,
    /// (dev, ino) of every counted entry, when `collect_inodes`, and of the multiply-
    /// linked files counted with `fold_links`.
    pub inodes: Vec<(u64, u64)>,
    /// With `-L`: the record holding each directory claimed during the scan.
    pub claims: Vec<((u64, u64), u32)>,
    /// Set when the tree outgrew 32-bit ids or name offsets.
    pub overflow: bool,
}

impl Tree {
    pub fn name(&self, item: &Item) -> &[u8] {
        let off = item.name_off as usize;
        &self.names[off..off + item.name_len as usize]
    }
}

/// What du keeps, and how.
pub struct Keep {
    pub measure: Measure,
    pub time: Option<TimeKind>,
    /// Keep plain files as items when their directory is shallower than this (`-a`).
    pub files_depth: Option<u32>,
    /// Every non-directory is a hard-link candidate (`-L`).
    pub all_candidates: bool,
    /// Collect (dev, ino) of every counted entry, for later arguments.
    pub collect_inodes: bool,
    /// Record claims of directories (`-L` with deduplication).
    pub claims: bool,
    /// Count each multiply-linked inode once as it is seen, instead of keeping its names
    /// for the ordered pass: right when only the argument's total is printed (`-s`),
    /// where which name is charged cannot show.
    pub fold_links: bool,
}

/// The du sink: a `Tree` behind one lock, taken once per directory or chunk.
pub struct Records {
    keep: Keep,
    tree: Mutex<Tree>,
    /// (dev, ino) counted so far, with `fold_links`.
    folded: Mutex<HashSet<(u64, u64)>>,
}

/// A worker's findings before they are committed.
#[derive(Default)]
pub struct Local {
    items: Vec<Item>,
    item_times: Vec<Timespec>,
    names: Vec<u8>,
    /// (index into `items`, record to create, its time)
    subdirs: Vec<(usize, DirRec, Timespec)>,
    files_bytes: u64,
    files_count: u64,
    files_tmax: Option<Timespec>,
    inodes: Vec<(u64, u64)>,
}

#[inline]
pub fn measure(meta: &Meta, m: Measure) -> u64 {
    match m {
        Measure::Disk => meta.disk_bytes(),
        Measure::Apparent => meta.size,
    }
}

#[inline]
pub fn time_of(meta: &Meta, t: Option<TimeKind>) -> Timespec {
    match t {
        Some(TimeKind::Atime) => meta.atime,
        Some(TimeKind::Ctime) => meta.ctime,
        _ => meta.mtime,
    }
}

impl Records {
    /// A sink whose record 0 is the argument `root`.
    pub fn new(keep: Keep, root: &Meta) -> Records {
        let mut tree = Tree::default();
        if keep.time.is_some() {
            tree.times = Some(Times { recs: vec![(time_of(root, keep.time), Timespec::MIN)], items: Vec::new() });
        }
        tree.recs.push(DirRec {
            dev: root.dev,
            ino: root.ino,
            self_bytes: measure(root, keep.measure),
            ..DirRec::default()
        });
        Records { keep, tree: Mutex::new(tree), folded: Mutex::new(HashSet::new()) }
    }

    pub fn into_tree(self) -> Tree {
        let mut tree = self.tree.into_inner().unwrap();
        tree.claims.sort_unstable();
        tree.inodes.extend(self.folded.into_inner().unwrap());
        tree
    }

    fn push(&self, l: &mut Local, pos: Pos, name: &[u8], kind: ItemKind, target: u32, meta: Option<&Meta>) -> usize {
        let name_off = l.names.len();
        l.names.extend_from_slice(name);
        let (ino, dev, size_bytes) = match meta {
            Some(m) if matches!(kind, ItemKind::File | ItemKind::Candidate | ItemKind::Alias) => {
                (m.ino, m.dev, measure(m, self.keep.measure))
            }
            Some(m) => (pos.d_ino, m.dev, measure(m, self.keep.measure)),
            None => (pos.d_ino, 0, 0),
        };
        l.items.push(Item {
            dir: pos.dir,
            idx: pos.idx,
            ino,
            dev,
            size_bytes,
            name_off: name_off as u32,
            name_len: name.len() as u16,
            kind,
            target,
        });
        if self.keep.time.is_some() {
            l.item_times.push(meta.map_or(Timespec::MIN, |m| time_of(m, self.keep.time)));
        }
        l.items.len() - 1
    }
}

impl Sink for Records {
    type Local = Local;
    const CONTIGUOUS: bool = false;

    fn entry(&self, l: &mut Local, pos: Pos, name: &[u8], seen: Seen) {
        let keep = &self.keep;
        let meta = match seen {
            Seen::Ok(m) => m,
            Seen::Error(e) => {
                self.push(l, pos, name, ItemKind::NoAccess, e.0 as u32, None);
                return;
            }
            Seen::Repeat(m) => {
                self.push(l, pos, name, ItemKind::Alias, 0, Some(m));
                return;
            }
            // A loop is left out entirely, as GNU du leaves out fts's FTS_DC when the
            // cycle goes through a mount point.
            Seen::Excluded | Seen::OtherFs(_) | Seen::Before | Seen::Loop(_) => return,
        };
        if keep.collect_inodes {
            l.inodes.push((meta.dev, meta.ino));
        }
        if meta.kind == Kind::Dir {
            let at = self.push(l, pos, name, ItemKind::Dir, 0, Some(meta));
            let rec =
                DirRec { dev: meta.dev, ino: meta.ino, self_bytes: measure(meta, keep.measure), ..DirRec::default() };
            l.subdirs.push((at, rec, time_of(meta, keep.time)));
            return;
        }
        if keep.all_candidates || meta.may_have_links() {
            if !keep.fold_links {
                self.push(l, pos, name, ItemKind::Candidate, 0, Some(meta));
                return;
            }
            if !self.folded.lock().unwrap().insert((meta.dev, meta.ino)) {
                return;
            }
        }
        l.files_bytes = l.files_bytes.saturating_add(measure(meta, keep.measure));
        l.files_count += 1;
        if keep.time.is_some() {
            let t = time_of(meta, keep.time);
            l.files_tmax = Some(l.files_tmax.map_or(t, |m| m.max(t)));
        }
        if keep.files_depth.is_some_and(|d| pos.depth < d) {
            self.push(l, pos, name, ItemKind::File, 0, Some(meta));
        }
    }

    fn commit(&self, l: &mut Local, dir: u32, listed: Option<Listed>, children: &mut Vec<Child>) {
        let mut tree = self.tree.lock().unwrap();
        let tree = &mut *tree;
        let name_base = tree.names.len();
        if name_base + l.names.len() > u32::MAX as usize || tree.recs.len() + l.subdirs.len() > u32::MAX as usize {
            tree.overflow = true;
            *l = Local::default();
            return;
        }
        tree.names.extend_from_slice(&l.names);
        for (at, rec, time) in l.subdirs.drain(..) {
            let id = tree.recs.len() as u32;
            tree.recs.push(rec);
            if let Some(t) = tree.times.as_mut() {
                t.recs.push((time, Timespec::MIN));
            }
            l.items[at].target = id;
            let it = &l.items[at];
            let off = it.name_off as usize;
            let name = CString::new(&l.names[off..off + it.name_len as usize]).expect("names hold no NUL");
            children.push(Child { name, dir: id, dev: rec.dev, ino: rec.ino });
            if self.keep.claims {
                tree.claims.push(((rec.dev, rec.ino), id));
            }
        }
        tree.items.extend(l.items.iter().map(|it| Item { name_off: it.name_off + name_base as u32, ..*it }));
        if let Some(t) = tree.times.as_mut() {
            t.items.extend_from_slice(&l.item_times);
            if let Some(m) = l.files_tmax {
                let slot = &mut t.recs[dir as usize].1;
                *slot = (*slot).max(m);
            }
        }
        tree.inodes.extend_from_slice(&l.inodes);
        let rec = &mut tree.recs[dir as usize];
        rec.files_bytes = rec.files_bytes.saturating_add(l.files_bytes);
        rec.files_count += l.files_count;
        if let Some(done) = listed {
            rec.n_entries = done.entries;
            if done.sort_by_inode {
                rec.flags |= REC_SORT_BY_INODE;
            }
            if let Some((e, partial)) = done.error {
                rec.flags |= if partial { REC_PARTIAL } else { REC_UNREADABLE };
                rec.errno = e.0;
            }
        }
        l.items.clear();
        l.item_times.clear();
        l.names.clear();
        l.files_bytes = 0;
        l.files_count = 0;
        l.files_tmax = None;
        l.inodes.clear();
    }

    fn moved(&self, dir: u32) {
        self.tree.lock().unwrap().recs[dir as usize].flags |= REC_MOVED;
    }

    fn unreadable(&self, dir: u32, err: Errno) {
        let mut tree = self.tree.lock().unwrap();
        let r = &mut tree.recs[dir as usize];
        r.flags |= REC_UNREADABLE;
        r.errno = err.0;
    }
}
