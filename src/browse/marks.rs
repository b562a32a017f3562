//! Marks: entries chosen, in any directories, for one delete. `Space` marks or unmarks
//! the selected entry and moves down, `*` marks everything shown (or unmarks it when all
//! of it is marked), `u` clears every mark.
//!
//! A mark is an entry id with its directory, as a delete needs them. Marks never hold
//! what is not on disk (removed rows), drop out when their entry is deleted, and drop
//! out when a rescan replaces the directory that holds them (the ids go with it). A
//! mark below another marked directory goes with that directory: it is counted and
//! deleted once, as part of it (`top_marks`).

use super::*;
use crate::term::escape;
use crate::tree::arena::NO_DIR;
use crate::tree::path::child_path;

/// The marked entries the footer and the confirmation count.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(super) struct MarkTotals {
    pub(super) n: usize,
    pub(super) disk_bytes: u64,
    pub(super) apparent_bytes: u64,
    /// Everything the delete would remove: the marks and what the scan found below them.
    pub(super) items: u64,
    /// Exclusive bytes of the marked directories (`None` without sharing-aware figures).
    pub(super) exclusive_bytes: Option<u64>,
}

impl Browser<'_> {
    pub(super) fn is_marked(&self, id: u32) -> bool {
        self.marks.contains_key(&id)
    }

    /// `Space`: marks or unmarks the selected entry, then moves down.
    pub(super) fn toggle_mark(&mut self) {
        let Some(id) = self.sel_id else { return self.say("Nothing to mark: this directory is empty.") };
        if self.is_gone(id) {
            let name = escape(self.names.get(id));
            return self.say(format!("{name} is not on disk (removed since the compared tree): it cannot be marked."));
        }
        if self.marks.remove(&id).is_none() {
            self.marks.insert(id, self.cwd);
        }
        self.select(self.sel + 1);
    }

    /// `*`: marks every entry shown, or unmarks them all when they all are marked.
    pub(super) fn mark_all_here(&mut self) {
        let here: Vec<u32> =
            self.items.iter().filter(|it| !it.removed && self.trail.is_none()).map(|it| it.id).collect();
        if here.is_empty() {
            return self.say("Nothing to mark here.");
        }
        if here.iter().all(|id| self.marks.contains_key(id)) {
            for id in &here {
                self.marks.remove(id);
            }
            return self.say(format!("Unmarked the {} entries here.", here.len()));
        }
        for &id in &here {
            self.marks.insert(id, self.cwd);
        }
        self.say(format!("Marked the {} entries here; d deletes every marked entry.", here.len()));
    }

    /// `u`: clears every mark.
    pub(super) fn clear_marks(&mut self) {
        if self.marks.is_empty() {
            return self.say("No marks to clear.");
        }
        let n = self.marks.len();
        self.marks.clear();
        self.say(format!("{n} marks cleared."));
    }

    /// Forgets marks whose entry is gone (deleted, here or by a delete of a directory
    /// above it).
    pub(super) fn prune_marks(&mut self) {
        let a = self.a;
        self.marks.retain(|&id, &mut dir| !a.removed(id) && a.dir_live(dir));
    }

    /// Forgets marks at or below directory `old`, which a rescan replaces.
    pub(super) fn drop_marks_below(&mut self, old: u32) {
        let a = self.a;
        self.marks.retain(|_, &mut dir| {
            let mut d = dir;
            while d != NO_DIR {
                if d == old {
                    return false;
                }
                d = a.dir_parent(d);
            }
            true
        });
    }

    /// The marks not inside another marked directory, as (directory, entry), in id order.
    pub(super) fn top_marks(&self) -> Vec<(u32, u32)> {
        let a = self.a;
        let inside_marked = |dir: u32| {
            let mut d = dir;
            while d != NO_DIR && d != self.root {
                if self.marks.contains_key(&a.dir_entry(d)) {
                    return true;
                }
                d = a.dir_parent(d);
            }
            false
        };
        self.marks.iter().filter(|&(_, &dir)| !inside_marked(dir)).map(|(&id, &dir)| (dir, id)).collect()
    }

    /// What the marks add up to, each byte once (marks inside marked directories are
    /// part of them).
    pub(super) fn mark_totals(&self) -> MarkTotals {
        let a = self.a;
        let figures = a.shared_figures();
        let mut t = MarkTotals { exclusive_bytes: figures.as_ref().map(|_| 0), ..MarkTotals::default() };
        for (_, id) in self.top_marks() {
            t.n += 1;
            let (disk, apparent, below) = if is_dir_entry(a, id) {
                a.dir_totals(a.dir_of(id))
            } else {
                let (d, ap) = a.own_sizes(id);
                (d, ap, 0)
            };
            t.disk_bytes += disk;
            t.apparent_bytes += apparent;
            t.items += below + 1;
            if let (Some(f), Some(x)) = (&figures, t.exclusive_bytes.as_mut()) {
                *x += f.get(a.dir_of(id)).filter(|_| is_dir_entry(a, id)).map_or(0, |s| s.exclusive);
            }
        }
        t
    }

    /// `d` with marks set: checks every mark as a single delete is checked, then asks.
    pub(super) fn ask_delete_marks(&mut self) {
        if let Some(why) = self.delete_refusal() {
            return self.refuse(why);
        }
        let targets = self.top_marks();
        let a = self.a;
        if let Some(&(dir, id)) =
            targets.iter().find(|&&(_, id)| is_dir_entry(a, id) && !a.dir_flags(a.dir_of(id)).is_done())
        {
            let path = escape(&child_path(a, dir, id));
            return self.refuse(&format!("{path} is still being scanned; it can be deleted once its scan is done."));
        }
        let mut mounts = Some(0);
        for &(dir, id) in targets.iter().filter(|&&(_, id)| is_dir_entry(a, id)) {
            let here = self.mounts_of.as_ref().and_then(|f| f(&child_path(a, dir, id)));
            mounts = mounts.zip(here).map(|(m, n)| m + n);
        }
        self.modal = Modal::Confirm { targets, marked: true, yes: false, mounts, trash: false };
    }
}
