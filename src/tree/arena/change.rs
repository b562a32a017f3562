//! The arena after the scan: the browser's deletes (`remove`, `carry_link`), rescans
//! (`begin_rescan`) and taking back what a rescan replaced (`reclaim`).
//!
//! # Changes after the scan (the browser)
//!
//! Nothing is ever moved. A deleted entry gets `F_REMOVED` and what it
//! contributed leaves the totals that hold it: its directory's and each ancestor's up to
//! and including the first one that is not done (which has not reported upward yet). A
//! rescanned directory gets a fresh record under the same entry (`begin_rescan`); the old
//! record and its subtree become unreachable, and the ancestors are "not done" again
//! (marked `D_RESCAN`) until the new record is. The new record (also `D_RESCAN`, and
//! listed in `rescan_roots`) adds its totals to those reopened ancestors when it is done;
//! they, having reported before, do not report again.
//!
//! # Reuse after a rescan
//!
//! What a rescan replaced is taken back, so rescanning the same directory again and again
//! does not grow the arena: the replaced record goes on a `retired` list, and `reclaim`
//! later walks its subtree and puts each directory's child-id run and name-store run on a
//! free list (by length; a reservation takes the smallest free run that fits and leaves
//! the rest free). Directory records themselves (64 bytes per directory) are not reused:
//! side tables and the sharing figures are keyed by them.
//!
//! Why a reused run cannot be read through the old record (all cells are atomics, so a
//! mistake here would show wrong names or sizes, never undefined behaviour):
//!
//! 1. *No writer.* The browser rescans only a directory that is done, and a directory is
//!    done only when its whole subtree is; so nothing writes below the old record.
//! 2. *Unreachable.* `begin_rescan` points the directory's entry at the new record
//!    (`attach_dir`, a `Release` store) before it retires the old one; every walk from a
//!    root after that reaches the new record. `dir_live` says "gone" for the old one.
//! 3. *No reader left.* Ids reached through the old record before the switch can only be
//!    held by the browser's thread (its listing and name cache; scan threads never go
//!    down into a done directory they did not list). The browser calls `reclaim` on
//!    that same thread right after a frame, and `begin_rescan` happens in its key
//!    handler, so every retired record was replaced before that frame rebuilt the
//!    listing (`replace_dir` marks it stale and drops a name cache of the old record).
//! 4. *Published again as usual.* A reused run is written, entry by entry, before the new
//!    owner's `child_count` is stored with `Release`; readers reach it only through that.
//!    Entries of a reused run lose their overflow and hard-link rows when taken back, so
//!    those tables speak only for the new owners.

use super::*;

impl Arena {
    /// Whether entry `id` was deleted.
    pub fn removed(&self, id: u32) -> bool {
        self.flags(id).contains(F_REMOVED)
    }

    /// Takes entry `id`, a child of directory `dir`, out of the tree: marks it removed and
    /// subtracts what it still contributes (for a directory, its current totals and
    /// items, plus itself) from the totals that hold it (`sub_up`). False if it was gone
    /// already.
    pub fn remove(&self, dir: u32, id: u32) -> bool {
        let was = self.entries.at(id).flags_blocks.fetch_or(F_REMOVED.in_word(), AcqRel);
        let flags = Flags::of_word(was);
        if flags.contains(F_REMOVED) {
            return false;
        }
        let (disk, apparent, items) = if flags.is_dir() {
            let t = self.dir_totals(self.dir_of(id));
            (t.0, t.1, t.2 + 1)
        } else if flags.contains(F_DUP_LINK) {
            (0, 0, 1)
        } else {
            let s = self.own_sizes(id);
            (s.0, s.1, 1)
        };
        self.sub_up(dir, disk, apparent, items);
        true
    }

    /// Makes entry `to`, a further name of a multiply-linked file in directory `to_dir`,
    /// the name that carries the file's sizes: the counted name was deleted while this one
    /// still holds the data, so its sizes join `to_dir` and the ancestors that hold it again (as
    /// `du` and ncdu would count them on the next scan). False if it carried them already.
    pub fn carry_link(&self, to_dir: u32, to: u32) -> bool {
        let was = self.entries.at(to).flags_blocks.fetch_and(!F_DUP_LINK.in_word(), AcqRel);
        if !Flags::of_word(was).contains(F_DUP_LINK) {
            return false;
        }
        let (disk, apparent) = self.own_sizes(to);
        // The same directories `sub_up` takes from: those whose totals hold `to_dir`'s.
        self.each_holder(to_dir, |d| {
            saturating_add(&d.total_disk, disk);
            saturating_add(&d.total_apparent, apparent);
        });
        true
    }

    /// Whether directory `dir` is still part of the tree: neither it nor an ancestor was
    /// replaced by a rescan (a replaced record is unreachable) or deleted.
    pub fn dir_live(&self, mut dir: u32) -> bool {
        while dir != NO_DIR {
            let entry = self.dir_entry(dir);
            if self.dir_of(entry) != dir || self.removed(entry) {
                return false;
            }
            dir = self.dir_parent(dir);
        }
        true
    }

    /// Number of directory records written (live or replaced by a rescan).
    pub fn dir_count(&self) -> u32 {
        self.next_dir.load(Acquire).min(u32::MAX as u64) as u32
    }

    /// Starts a rescan of directory `old`: a fresh, empty record with the given own sizes
    /// takes its place under the same entry, the ancestors' totals lose what `old` held
    /// below itself, and every ancestor that was done is "not done" again until the new
    /// record finishes (its completion cascades up through `finish` as a scan's would).
    /// Returns the new record's index, which is the rescan's root token.
    pub fn begin_rescan(&self, old: u32, own_disk: u64, own_apparent: u64) -> Result<u32, Full> {
        let parent = self.dir_parent(old);
        let entry = self.dir_entry(old);
        let new = self.new_dir_detached(parent, own_disk, own_apparent)?;
        // `old` is done (the browser rescans only those): its totals reached every
        // ancestor up to the first one still scanning.
        let (disk, apparent, items) = self.stored_totals(old);
        self.sub_up(parent, disk, apparent, items);
        // Each ancestor that was done gets a unit of work back and is marked reopened,
        // and the first one that was not gets a unit too (its unit for this subtree was
        // consumed when it finished).
        let mut p = parent;
        while p != NO_DIR {
            let d = self.dirs.at(p);
            let was = d.pending_flags.fetch_add(1, AcqRel);
            if !DirFlags::of_word(was).is_done() {
                break;
            }
            d.pending_flags.fetch_and(!D_DONE.in_word(), AcqRel);
            d.pending_flags.fetch_or(D_RESCAN.in_word(), AcqRel);
            p = d.parent.load(Relaxed);
        }
        self.rescan_roots.lock().unwrap().insert(new);
        self.dirs.at(new).pending_flags.fetch_or(D_RESCAN.in_word(), AcqRel);
        if parent == NO_DIR {
            let name = self.root_names.lock().unwrap().get(&old).cloned().unwrap_or_default();
            self.set_root_name(new, &name);
        }
        if let Some(dev) = self.dev_of(old) {
            self.set_dev(new, dev);
        }
        self.attach_dir(new, entry);
        self.retired.lock().unwrap().push(old);
        Ok(new)
    }

    /// Takes back the entry-id runs and name-store runs of the records that rescans
    /// replaced, for later reservations to reuse. The caller promises that no reader
    /// still holds an id reached through a replaced record: the browser calls this on its
    /// own thread (the only reader besides the scan's writers) after a frame built from
    /// the current records (see "Reuse after a rescan" in this file's module doc).
    pub fn reclaim(&self) {
        let retired = std::mem::take(&mut *self.retired.lock().unwrap());
        if retired.is_empty() {
            return;
        }
        let (mut entry_runs, mut name_runs) = (Vec::new(), Vec::new());
        let mut stack = retired;
        while let Some(dir) = stack.pop() {
            let Some(kids) = self.children(dir) else { continue };
            if kids.is_empty() || kids.start == NO_ENTRY {
                continue;
            }
            let start = self.names_at(dir);
            let mut at = start;
            for id in kids.clone() {
                at = self.skip_name(at);
                // Only a record that belongs here (a directory entry whose record could not
                // be made when the arena was full holds no index of its own).
                let sub = self.dir_of(id);
                if self.kind(id) == Kind::Dir && self.dir_entry(sub) == id && self.dir_parent(sub) == dir {
                    stack.push(sub);
                }
            }
            entry_runs.push((kids.start, kids.end - kids.start));
            name_runs.push((start, u64::from(at - start)));
        }
        if entry_runs.is_empty() {
            return;
        }
        // Side tables keyed by entry id must not speak for an id's next owner.
        entry_runs.sort_unstable();
        let freed = |id: &u32| {
            let i = entry_runs.partition_point(|&(s, _)| s <= *id);
            i > 0 && *id < entry_runs[i - 1].0 + entry_runs[i - 1].1
        };
        self.overflow.lock().unwrap().retain(|id, _| !freed(id));
        self.links.lock().unwrap().retain(|id, _| !freed(id));
        self.put_free(&entry_runs, &name_runs);
    }

    /// Puts runs of entry ids (start, length) and of name bytes on the free lists, for
    /// later listings to take (`take_free`); empty runs are left out.
    pub(super) fn put_free(&self, entry_runs: &[(u32, u32)], name_runs: &[(u32, u64)]) {
        let mut free = self.free.lock().unwrap();
        for &(s, n) in entry_runs.iter().filter(|r| r.1 > 0) {
            free.entries.insert((u64::from(n), s));
        }
        for &(s, n) in name_runs.iter().filter(|r| r.1 > 0) {
            free.names.insert((n, s));
        }
        self.has_free.store(true, Release);
    }

    /// The start of the smallest free run of at least `n` slots (the rest stays free).
    pub(super) fn take_free(&self, n: u64, set: impl Fn(&mut FreeRuns) -> &mut BTreeSet<(u64, u32)>) -> Option<u32> {
        if n == 0 || !self.has_free.load(Acquire) {
            return None;
        }
        let mut free = self.free.lock().unwrap();
        let runs = set(&mut free);
        let &(len, start) = runs.range((n, 0)..).next()?;
        runs.remove(&(len, start));
        if len > n {
            runs.insert((len - n, start + n as u32));
        }
        Some(start)
    }
}
