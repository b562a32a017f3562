//! Search: `/` filters the shown directory's listing as the user types, `f` finds
//! entries by name in the whole tree, largest first, and jumps to one.
//!
//! A pattern is a substring, or a shell glob (`fnmatch`, against the whole name) when
//! it holds `*`, `?` or `[`. Lower case matches either case (smart case); a capital
//! letter makes it exact. A filter belongs to its directory: opening another one drops
//! it, and Esc clears it. A find walks every live directory of the browsed tree once
//! (iteratively) and keeps at most `MAX_FIND_HITS` hits, the largest.

use super::*;
use crate::term::{escape, fit, Key, Screen, Style};
use crate::text::exclude::fnmatch;
use crate::tree::path::child_path;

/// The most hits a find keeps (the largest).
const MAX_FIND_HITS: usize = 10_000;

/// A name pattern typed by the user.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Pattern {
    pub(super) text: String,
    glob: bool,
    /// No capital letter in it: matched without regard to ASCII case.
    any_case: bool,
}

impl Pattern {
    pub(super) fn new(text: &str) -> Pattern {
        Pattern {
            text: text.to_string(),
            glob: text.contains(['*', '?', '[']),
            any_case: !text.chars().any(|c| c.is_uppercase()),
        }
    }

    pub(super) fn matches(&self, name: &[u8]) -> bool {
        let (pat, name) = if self.any_case {
            (self.text.to_lowercase().into_bytes(), name.to_ascii_lowercase())
        } else {
            (self.text.as_bytes().to_vec(), name.to_vec())
        };
        if self.glob {
            fnmatch(&pat, &name)
        } else {
            pat.is_empty() || name.windows(pat.len()).any(|w| w == pat.as_slice())
        }
    }
}

/// The line being typed: a filter (applied as it changes) or a find (run on Enter).
pub(super) struct Input {
    pub(super) find: bool,
    pub(super) text: String,
}

/// One entry a find found: its directory, its id and its size when found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Hit {
    pub(super) dir: u32,
    pub(super) id: u32,
    pub(super) size: u64,
}

/// A find's results, shown in a box until a jump or Esc.
pub(super) struct Found {
    pub(super) pattern: String,
    pub(super) hits: Vec<Hit>,
    /// How many matched (more than `hits` holds when past `MAX_FIND_HITS`).
    pub(super) matched: u64,
    pub(super) sel: usize,
    pub(super) top: usize,
}

impl Browser<'_> {
    /// `/`: starts typing a filter for the directory shown.
    pub(super) fn start_filter(&mut self) {
        let text = self.filter.as_ref().map_or(String::new(), |f| f.text.clone());
        self.input = Some(Input { find: false, text });
    }

    /// `f`: starts typing a name to find in the whole tree.
    pub(super) fn start_find(&mut self) {
        if self.trail.is_some() {
            return self.say("Find searches the tree on disk; go back out of the removed directory first.");
        }
        self.input = Some(Input { find: true, text: String::new() });
    }

    /// A key while a filter or find is typed.
    pub(super) fn input_key(&mut self, k: Key) -> Action {
        let Some(input) = self.input.as_mut() else { return Action::None };
        let find = input.find;
        match k {
            Key::Char(c) => input.text.push(c),
            Key::Backspace => {
                input.text.pop();
            }
            Key::Esc => {
                self.input = None;
                if !find {
                    self.set_filter(None);
                }
                return Action::None;
            }
            Key::Enter => {
                let text = self.input.take().map(|i| i.text).unwrap_or_default();
                if find {
                    self.find(&text);
                } else if text.is_empty() {
                    self.set_filter(None);
                }
                return Action::None;
            }
            Key::Up | Key::Down | Key::PageUp | Key::PageDown | Key::Home | Key::End if !find => {
                let input = self.input.take();
                let action = self.main_key(k, false);
                self.input = input;
                return action;
            }
            _ => return Action::None,
        }
        if !find {
            let text = self.input.as_ref().map(|i| i.text.clone()).unwrap_or_default();
            self.set_filter((!text.is_empty()).then(|| Pattern::new(&text)));
        }
        Action::None
    }

    pub(super) fn set_filter(&mut self, p: Option<Pattern>) {
        if self.filter != p {
            self.filter = p;
            self.chosen = false;
            self.top = 0;
            self.stale = true;
        }
    }

    /// Finds the entries of the browsed tree whose name matches `text`, largest first.
    pub(super) fn find(&mut self, text: &str) {
        if text.is_empty() {
            return;
        }
        let a = self.a;
        let pattern = Pattern::new(text);
        let mut hits = Vec::new();
        let mut matched = 0u64;
        let mut stack = vec![self.root];
        let mut name = Vec::new();
        while let Some(dir) = stack.pop() {
            let Some(kids) = a.children(dir) else { continue };
            let mut at = a.names_at(dir);
            for id in kids {
                at = a.read_name(at, &mut name);
                if a.removed(id) {
                    continue;
                }
                if pattern.matches(&name) {
                    matched += 1;
                    hits.push(Hit { dir, id, size: self.size_of(id) });
                    if hits.len() >= 2 * MAX_FIND_HITS {
                        keep_largest(&mut hits);
                    }
                }
                if is_dir_entry(a, id) && a.children(a.dir_of(id)).is_some() {
                    stack.push(a.dir_of(id));
                }
            }
        }
        keep_largest(&mut hits);
        if hits.is_empty() {
            return self.say(format!("Nothing in the tree matches {}.", escape(text.as_bytes())));
        }
        self.found = Some(Found { pattern: text.to_string(), hits, matched, sel: 0, top: 0 });
        self.modal = Modal::Find;
    }

    /// A key in the find box: move, mark, jump (Enter) or close (Esc, q).
    pub(super) fn found_key(&mut self, k: Key) -> Action {
        let Some(f) = self.found.as_mut() else {
            self.modal = Modal::None;
            return Action::None;
        };
        let last = f.hits.len().saturating_sub(1);
        match k {
            Key::Up | Key::Char('k') => f.sel = f.sel.saturating_sub(1),
            Key::Down | Key::Char('j') => f.sel = (f.sel + 1).min(last),
            Key::PageUp => f.sel = f.sel.saturating_sub(10),
            Key::PageDown => f.sel = (f.sel + 10).min(last),
            Key::Home => f.sel = 0,
            Key::End => f.sel = last,
            Key::Char(' ') => {
                let h = f.hits[f.sel];
                if self.marks.remove(&h.id).is_none() {
                    self.marks.insert(h.id, h.dir);
                }
                if let Some(f) = self.found.as_mut() {
                    f.sel = (f.sel + 1).min(last);
                }
            }
            Key::Enter | Key::Right | Key::Char('l') => {
                let h = f.hits[f.sel];
                self.modal = Modal::None;
                self.found = None;
                if self.a.removed(h.id) || !self.a.dir_live(h.dir) {
                    self.say("That entry is gone since the find.");
                } else {
                    self.open(h.dir, Some(h.id));
                }
            }
            Key::Esc | Key::Char('q') | Key::Char('f') => {
                self.modal = Modal::None;
                self.found = None;
            }
            _ => {}
        }
        Action::None
    }

    /// The status line while a filter or find is typed.
    pub(super) fn input_line(&self) -> Option<String> {
        let i = self.input.as_ref()?;
        Some(if i.find {
            format!("Find in the tree: {}_   Enter: find   Esc: cancel", i.text)
        } else {
            format!("Filter: {}_   Enter: keep   Esc: clear   (* ? [ make it a glob)", i.text)
        })
    }

    /// Draws the find box over the listing.
    pub(super) fn draw_found(&mut self, scr: &mut Screen) {
        let (w, h) = (scr.width, scr.height);
        let (bw, bh) = (w - 2, h - 4);
        let room = bh.saturating_sub(3).max(1);
        let look = self.look;
        let Some(f) = self.found.as_mut() else { return };
        if f.sel < f.top {
            f.top = f.sel;
        }
        if f.sel >= f.top + room {
            f.top = f.sel + 1 - room;
        }
        let mut lines = Vec::new();
        let hits: Vec<Hit> = f.hits.iter().skip(f.top).take(room).copied().collect();
        let (sel, top) = (f.sel, f.top);
        let more = if f.matched > f.hits.len() as u64 {
            format!(" (the largest {} of {})", grouped(f.hits.len() as u64), grouped(f.matched))
        } else {
            String::new()
        };
        let title =
            format!(" Find {}: {} found{more}, largest first ", escape(f.pattern.as_bytes()), grouped(f.matched));
        for hit in &hits {
            let mark = if self.is_marked(hit.id) { '+' } else { ' ' };
            let slash = if is_dir_entry(self.a, hit.id) { "/" } else { "" };
            let path = escape(&child_path(self.a, hit.dir, hit.id));
            lines.push(format!("{mark}{} {path}{slash}", size_text(hit.size, look.si)));
        }
        lines.push(String::new());
        lines.push("Enter: go there   Space: mark   Esc: close".into());
        self.draw_box(scr, 2, 1, bh, bw, &fit(&title, bw - 4), &lines, None);
        if let Some(r) = sel.checked_sub(top).filter(|&r| r < hits.len()) {
            scr.put(3 + r, 3, &fit(&lines[r], bw - 4), Style::REVERSE);
        }
    }
}

/// Keeps the `MAX_FIND_HITS` largest hits, largest first (then by id, for a stable order).
fn keep_largest(hits: &mut Vec<Hit>) {
    hits.sort_unstable_by(|x, y| y.size.cmp(&x.size).then(x.id.cmp(&y.id)));
    hits.truncate(MAX_FIND_HITS);
}
