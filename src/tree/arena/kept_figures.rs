//! The arena's sharing-aware figures (`tree/sharing/`): stored for the outputs, and for
//! the browser computed again from the kept extent figures after deletes and rescans.

use super::Arena;

impl Arena {
    /// Sharing-aware figures (see `tree/sharing/`), when the scan or import has them.
    pub fn shared_figures(&self) -> Option<std::sync::Arc<crate::tree::sharing::Figures>> {
        self.shared.lock().unwrap().clone()
    }

    pub fn set_shared_figures(&self, f: crate::tree::sharing::Figures) {
        *self.shared.lock().unwrap() = Some(std::sync::Arc::new(f));
    }

    /// Computes the sharing-aware figures from a scan's extent figures. A collector
    /// that keeps its files (the browser's) is kept, merged with those of later rescans,
    /// for `refresh_shared`; any other is used once.
    pub fn add_shared_input(&self, mut c: crate::tree::sharing::Collector) {
        if !c.keeps_files() {
            let figures = c.compute(self.dir_count(), |d| self.dir_parent(d), |d| self.dir_totals(d).0, &self.live());
            self.set_shared_figures(figures);
            return;
        }
        {
            let mut kept = self.shared_input.lock().unwrap();
            match kept.as_mut() {
                Some(k) => k.merge(c),
                None => *kept = Some(c),
            }
        }
        self.refresh_shared();
    }

    /// Computes the sharing-aware figures again from the kept extent figures, leaving
    /// out what was deleted or replaced by a rescan since. Does nothing without them.
    pub fn refresh_shared(&self) {
        let mut kept = self.shared_input.lock().unwrap();
        let Some(c) = kept.as_mut() else { return };
        let figures = c.compute(self.dir_count(), |d| self.dir_parent(d), |d| self.dir_totals(d).0, &self.live());
        drop(kept);
        self.set_shared_figures(figures);
    }

    /// While the browser reads extent maps in the background: which directories'
    /// figures are final (`None`: all, the read is over). The figures shown until the
    /// next `add_shared_input` say they are pending.
    pub fn set_shared_progress(&self, p: Option<crate::tree::sharing::Progress>) {
        let filling = p.is_some();
        let mut kept = self.shared_input.lock().unwrap();
        kept.get_or_insert_with(crate::tree::sharing::Collector::keeping_files).set_progress(p);
        drop(kept);
        if filling && self.shared_figures().is_none() {
            self.set_shared_figures(crate::tree::sharing::Figures::pending());
        }
    }

    fn live(&self) -> ArenaLive<'_> {
        ArenaLive(self)
    }
}

/// The arena's answer to "is this still in the tree?" for `Collector::compute`.
struct ArenaLive<'a>(&'a Arena);

impl crate::tree::sharing::Liveness for ArenaLive<'_> {
    fn dir_live(&self, dir: u32) -> bool {
        // Only the record itself: `compute` carries an ancestor's death down.
        let entry = self.0.dir_entry(dir);
        self.0.dir_of(entry) == dir && !self.0.removed(entry)
    }
    fn entry_live(&self, entry: u32) -> bool {
        !self.0.removed(entry)
    }
}
