//! `dfdu dedupe`: each group's other files come to share the extents of its first path,
//! through `FIDEDUPERANGE` only — the kernel locks both files, compares the bytes and
//! shares nothing that differs. `FICLONE` and `copy_file_range` are never used: they do
//! not compare.
//!
//! # Per group
//!
//! 1. Members are split by device (sharing never crosses a file system); in each part
//!    the first path is the source.
//! 2. Skipped before any call: destinations whose extent layout already is the source's
//!    (FIEMAP, found by `find::layouts`), files that changed since they were hashed (size,
//!    mtime, ctime, identity), immutable and append-only files, active swap files.
//! 3. Destinations go in batches of at most `MAX_DEDUPE_DESTS`. Each call covers at most
//!    1 GiB (the VFS cap); the loop advances by the least `bytes_deduped` any destination
//!    got (btrfs works in 16 MiB pieces) and stops when a call makes no progress. Before
//!    every call, the source and each destination are checked again.
//! 4. The first call on a file system that cannot share extents (EOPNOTSUPP, or a known
//!    type such as ext4 before any call) stops the whole run with one message.
//!
//! Free space is measured per file system with `statfs` after `syncfs`, before the first
//! call and after the last.

use super::find::{same, Group, INLINE};
use super::open::{Handles, Refused};
use super::sink::FileRec;
use crate::meta::Errno;
use crate::platform::{self, DedupeStatus, MAX_DEDUPE_DESTS};
use std::collections::hash_map::Entry;
use std::collections::HashMap;
use std::fs::File;

/// Bytes one call asks for at most (the VFS caps a call at 1 GiB).
const CALL_BYTES: u64 = 1 << 30;
const EOPNOTSUPP: i32 = 95;

/// What a run did.
#[derive(Default)]
pub struct Report {
    pub groups: u64,
    pub files: u64,
    pub bytes_submitted: u64,
    pub bytes_deduped: u64,
    pub refused_files: u64,
    pub skipped_shared: u64,
    pub skipped_inline: u64,
    pub skipped_changed: u64,
    pub skipped_pinned: u64,
    pub skipped_swap: u64,
    pub skipped_other_fs: u64,
    pub errors: u64,
    pub ioctl_calls: u64,
    pub free_before: u64,
    pub free_after: u64,
    pub free_known: bool,
    /// The file system that cannot share extents, when that stopped the run.
    pub unsupported: Option<String>,
    pub failed: bool,
    /// One line per failure (path: error), at most `MAX_MESSAGES`.
    pub messages: Vec<String>,
}

impl Report {
    pub fn text(&self, cmd: &str, dry_run: bool) -> String {
        if let Some(msg) = &self.unsupported {
            return format!("{cmd}: {msg}\n");
        }
        let mut s = String::new();
        for m in &self.messages {
            s.push_str(&format!("{cmd}: cannot deduplicate {m}\n"));
        }
        s.push_str(&if dry_run {
            format!(
                "{cmd}: dry run: would submit {} in {}, {} bytes; nothing was changed\n",
                super::count(self.files, "file", "files"),
                super::count(self.groups, "group", "groups"),
                self.bytes_submitted
            )
        } else {
            format!(
                "{cmd}: {} in {}: {} bytes submitted, {} bytes deduplicated by the kernel, \
                 {} refused (data differs); {}\n",
                super::count(self.files, "file", "files"),
                super::count(self.groups, "group", "groups"),
                self.bytes_submitted,
                self.bytes_deduped,
                super::count(self.refused_files, "file", "files"),
                super::count(self.ioctl_calls, "ioctl call", "ioctl calls")
            )
        });
        s.push_str(&format!(
            "{cmd}: skipped: {} already sharing extents, {} inline (cannot share), {} changed since hashed, {} immutable or append-only, \
             {} swap files, {} on another file system than their group's first file; {} errors\n",
            self.skipped_shared,
            self.skipped_inline,
            self.skipped_changed,
            self.skipped_pinned,
            self.skipped_swap,
            self.skipped_other_fs,
            self.errors
        ));
        if self.free_known && !dry_run {
            let change = self.free_after as i128 - self.free_before as i128;
            s.push_str(&format!(
                "{cmd}: free space {change:+} bytes (before {}, after {}, after syncfs)\n",
                self.free_before, self.free_after
            ));
        }
        s
    }

    pub fn json(&self, dry_run: bool) -> String {
        format!(
            "{{\"dry_run\":{dry_run},\"groups\":{},\"files\":{},\"bytes_submitted\":{},\"bytes_deduplicated\":{},\
             \"refused_files\":{},\"skipped_shared\":{},\"skipped_inline\":{},\"skipped_changed\":{},\"skipped_pinned\":{},\
             \"skipped_swap\":{},\"skipped_other_fs\":{},\"errors\":{},\"ioctl_calls\":{},\
             \"free_before\":{},\"free_after\":{},\"unsupported\":{}}}",
            self.groups,
            self.files,
            self.bytes_submitted,
            self.bytes_deduped,
            self.refused_files,
            self.skipped_shared,
            self.skipped_inline,
            self.skipped_changed,
            self.skipped_pinned,
            self.skipped_swap,
            self.skipped_other_fs,
            self.errors,
            self.ioctl_calls,
            if self.free_known { self.free_before.to_string() } else { "null".into() },
            if self.free_known { self.free_after.to_string() } else { "null".into() },
            self.unsupported.is_some()
        )
    }
}

/// One open member: index in the group and its file.
struct Open {
    m: usize,
    file: File,
}

/// Opens member `m` through checked directory handles (`open.rs`) and stats it; `None`
/// when it, or a directory on its way, is not what the scan saw (never opened then).
fn open_member(handles: &Handles, g: &Group, m: usize) -> Result<Option<(File, platform::FileCheck)>, Errno> {
    match handles.open(&handles.found().files[g.members[m] as usize]) {
        Ok(file) => {
            let check = platform::check_file(&file)?;
            Ok(Some((file, check)))
        }
        Err(Refused::Changed) => Ok(None),
        Err(Refused::Os(e)) => Err(e),
    }
}

impl Report {
    /// Counts one failure and keeps its message (printed after the run).
    fn fail(&mut self, path: &[u8], e: Errno) {
        self.errors += 1;
        if self.messages.len() < MAX_MESSAGES {
            self.messages.push(format!("{}: {}", crate::text::quote::quotef(path), platform::errno_text(e)));
        }
    }
}

/// Why a file is left out of the calls.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Skip {
    /// Size, times or identity differ from the scan's.
    Changed,
    /// Immutable or append-only.
    Pinned,
    /// An active swap file.
    Swap,
}

/// Why the open file `c` (scanned as `rec`) must be left alone, if it must.
fn skip_reason(c: &platform::FileCheck, rec: &FileRec, swaps: &[(u64, u64)]) -> Option<Skip> {
    if !same(c, rec) {
        Some(Skip::Changed)
    } else if c.pinned {
        Some(Skip::Pinned)
    } else if swaps.contains(&(c.dev, c.ino)) {
        Some(Skip::Swap)
    } else {
        None
    }
}

impl Report {
    /// Counts `n` files left alone for `why`.
    fn skip(&mut self, why: Skip, n: u64) {
        match why {
            Skip::Changed => self.skipped_changed += n,
            Skip::Pinned => self.skipped_pinned += n,
            Skip::Swap => self.skipped_swap += n,
        }
    }
}

/// Failure messages kept per run; the count covers the rest.
const MAX_MESSAGES: usize = 1000;

/// Deduplicates `groups` (or, with `dry_run`, counts what would be submitted).
pub fn run(handles: &Handles, groups: &[Group], dry_run: bool) -> Report {
    let found = handles.found();
    let mut r = Report::default();
    let swaps = platform::swap_files();
    // One open file per device, for free space before and after.
    let mut fs_files: HashMap<u64, File> = HashMap::new();
    for g in groups {
        if g.all_shared() {
            r.skipped_shared += g.members.len() as u64 - 1;
            continue;
        }
        let mut devs: Vec<u64> = g.members.iter().map(|&i| found.files[i as usize].dev).collect();
        devs.sort_unstable();
        devs.dedup();
        let mut part_counted = false;
        for dev in devs {
            let on_dev: Vec<usize> =
                (0..g.members.len()).filter(|&m| found.files[g.members[m] as usize].dev == dev).collect();
            let part: Vec<usize> = on_dev.iter().copied().filter(|&m| g.layout_of[m] != INLINE).collect();
            r.skipped_inline += (on_dev.len() - part.len()) as u64;
            if part.len() < 2 {
                if g.members.len() > 1 && dev != found.files[g.members[0] as usize].dev {
                    r.skipped_other_fs += 1;
                }
                continue;
            }
            if !part_counted {
                r.groups += 1;
                part_counted = true;
            }
            if let Err(stop) = dedupe_part(handles, g, &part, dry_run, &swaps, &mut fs_files, &mut r) {
                r.unsupported = Some(stop);
                r.failed = true;
                return r;
            }
        }
    }
    if r.free_known && !dry_run {
        r.free_after = fs_files.values().filter_map(platform::free_bytes).sum();
    }
    if r.errors > 0 {
        r.failed = true;
    }
    r
}

/// One device's members of a group; `Err` when the file system cannot share extents.
fn dedupe_part(
    handles: &Handles,
    g: &Group,
    part: &[usize],
    dry_run: bool,
    swaps: &[(u64, u64)],
    fs_files: &mut HashMap<u64, File>,
    r: &mut Report,
) -> Result<(), String> {
    let found = handles.found();
    let src_m = part[0];
    let src_rec = found.files[g.members[src_m] as usize];
    let shown = |m: usize| crate::text::quote::quotef(&g.paths[m]);
    let (src, check) = match open_member(handles, g, src_m) {
        Ok(Some(pair)) => pair,
        // Changed: its group's hashes say nothing about it now (as below).
        Ok(None) => {
            r.skip(Skip::Changed, part.len() as u64);
            return Ok(());
        }
        Err(e) => {
            r.fail(&g.paths[src_m], e);
            return Ok(());
        }
    };
    match skip_reason(&check, &src_rec, swaps) {
        // Changed: its group's hashes say nothing about its contents now.
        Some(Skip::Changed) => {
            r.skip(Skip::Changed, part.len() as u64);
            return Ok(());
        }
        // Pinned or swap: counted once, for the source; the others stay as they are.
        Some(why) => {
            r.skip(why, 1);
            return Ok(());
        }
        None => {}
    }
    if let Entry::Vacant(slot) = fs_files.entry(src_rec.dev) {
        if platform::can_share_extents(&src) == Some(false) {
            // Groups on another file system were deduplicated already: "nothing was
            // changed" would be false. As when a call says EOPNOTSUPP then, this part
            // fails (one message, its files counted) and the run goes on.
            if r.bytes_deduped > 0 {
                r.fail(&g.paths[src_m], Errno(EOPNOTSUPP));
                r.errors += part.len() as u64 - 1;
                return Ok(());
            }
            return Err(format!(
                "the file system of {} cannot share extents (ext4, tmpfs and the like; XFS needs reflink=1): \
                 nothing was changed",
                shown(src_m)
            ));
        }
        if let Some(free) = platform::free_bytes(&src) {
            r.free_before += free;
            r.free_known = true;
        }
        if let Ok(f) = src.try_clone() {
            slot.insert(f);
        }
    }
    let mut dests: Vec<Open> = Vec::new();
    for &m in &part[1..] {
        let rec = found.files[g.members[m] as usize];
        if g.layout_of[m] == g.layout_of[src_m] {
            r.skipped_shared += 1;
            continue;
        }
        match open_member(handles, g, m) {
            Ok(Some((file, c))) => match skip_reason(&c, &rec, swaps) {
                Some(why) => r.skip(why, 1),
                None => dests.push(Open { m, file }),
            },
            Ok(None) => r.skip(Skip::Changed, 1),
            Err(e) => r.fail(&g.paths[m], e),
        }
    }
    r.files += dests.len() as u64;
    if dry_run {
        r.bytes_submitted = r.bytes_submitted.saturating_add(src_rec.size.saturating_mul(dests.len() as u64));
        return Ok(());
    }
    for batch in dests.chunks(MAX_DEDUPE_DESTS) {
        let mut active: Vec<&Open> = batch.iter().collect();
        let mut off = 0u64;
        while off < src_rec.size && !active.is_empty() {
            // Re-check right before the call: anything that changed since it was hashed
            // is left alone (the kernel would compare anyway; this keeps the report true).
            if !platform::check_file(&src).is_ok_and(|c| same(&c, &src_rec)) {
                r.skipped_changed += active.len() as u64;
                return Ok(());
            }
            active.retain(|d| {
                let ok = platform::check_file(&d.file).is_ok_and(|c| same(&c, &found.files[g.members[d.m] as usize]));
                if !ok {
                    r.skipped_changed += 1;
                }
                ok
            });
            if active.is_empty() {
                break;
            }
            let len = (src_rec.size - off).min(CALL_BYTES);
            let pairs: Vec<(&File, u64)> = active.iter().map(|d| (&d.file, off)).collect();
            r.ioctl_calls += 1;
            r.bytes_submitted = r.bytes_submitted.saturating_add(len * pairs.len() as u64);
            let statuses = match platform::dedupe(&src, off, len, &pairs) {
                Ok(s) => s,
                Err(e) if (e.0 == EOPNOTSUPP || e.0 == 22) && r.bytes_deduped == 0 => {
                    return Err(format!(
                        "the file system of {} cannot share extents ({}; XFS needs reflink=1): nothing was changed",
                        shown(src_m),
                        platform::errno_text(e)
                    ));
                }
                Err(e) => {
                    for d in &active {
                        r.fail(&g.paths[d.m], e);
                    }
                    break;
                }
            };
            let mut least = u64::MAX;
            let mut keep = Vec::new();
            for (d, st) in active.iter().zip(statuses) {
                match st {
                    DedupeStatus::Same(n) => {
                        r.bytes_deduped += n;
                        least = least.min(n);
                        keep.push(*d);
                    }
                    DedupeStatus::Differs => r.refused_files += 1,
                    DedupeStatus::Error(e) if e.0 == EOPNOTSUPP && r.bytes_deduped == 0 => {
                        return Err(format!(
                            "the file system of {} cannot share extents (XFS needs reflink=1): nothing was changed",
                            shown(src_m)
                        ));
                    }
                    DedupeStatus::Error(e) => r.fail(&g.paths[d.m], e),
                }
            }
            active = keep;
            if least == 0 || least == u64::MAX {
                break;
            }
            off += least;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn report() -> Report {
        Report {
            groups: 2,
            files: 3,
            bytes_submitted: 4000,
            bytes_deduped: 3000,
            refused_files: 1,
            skipped_shared: 5,
            skipped_inline: 6,
            skipped_changed: 7,
            skipped_pinned: 8,
            skipped_swap: 9,
            skipped_other_fs: 10,
            errors: 11,
            ioctl_calls: 12,
            free_before: 1_000_000,
            free_after: 1_003_000,
            free_known: true,
            ..Report::default()
        }
    }

    const SKIPPED: &str = "dfdu dedupe: skipped: 5 already sharing extents, 6 inline (cannot share), 7 changed since \
                           hashed, 8 immutable or append-only, 9 swap files, 10 on another file system than their \
                           group's first file; 11 errors\n";

    #[test]
    fn dedupe_report_text_of_a_run() {
        let mut r = report();
        r.messages.push("'a': Permission denied".into());
        assert_eq!(
            r.text("dfdu dedupe", false),
            format!(
                "dfdu dedupe: cannot deduplicate 'a': Permission denied\n\
                 dfdu dedupe: 3 files in 2 groups: 4000 bytes submitted, 3000 bytes deduplicated by the kernel, \
                 1 file refused (data differs); 12 ioctl calls\n{SKIPPED}\
                 dfdu dedupe: free space +3000 bytes (before 1000000, after 1003000, after syncfs)\n"
            )
        );
        // Less free space after (another program wrote meanwhile): a negative change.
        r.free_after = 999_000;
        assert!(r
            .text("x", false)
            .ends_with("x: free space -1000 bytes (before 1000000, after 999000, after syncfs)\n"));
        // Free space not known: no line for it.
        r.free_known = false;
        assert!(r.text("dfdu dedupe", false).ends_with(SKIPPED));
    }

    #[test]
    fn dedupe_report_text_of_a_dry_run_and_of_a_stop() {
        let r = report();
        assert_eq!(
            r.text("dfdu dedupe", true),
            format!(
                "dfdu dedupe: dry run: would submit 3 files in 2 groups, 4000 bytes; nothing was changed\n{SKIPPED}"
            )
        );
        let stop = Report { unsupported: Some("cannot share".into()), ..report() };
        assert_eq!(stop.text("dfdu dedupe", false), "dfdu dedupe: cannot share\n");
    }

    #[test]
    fn dedupe_report_json() {
        let r = report();
        assert_eq!(
            r.json(false),
            "{\"dry_run\":false,\"groups\":2,\"files\":3,\"bytes_submitted\":4000,\"bytes_deduplicated\":3000,\
             \"refused_files\":1,\"skipped_shared\":5,\"skipped_inline\":6,\"skipped_changed\":7,\"skipped_pinned\":8,\
             \"skipped_swap\":9,\"skipped_other_fs\":10,\"errors\":11,\"ioctl_calls\":12,\
             \"free_before\":1000000,\"free_after\":1003000,\"unsupported\":false}"
        );
        let r = Report { free_known: false, unsupported: Some(String::new()), ..report() };
        assert!(r.json(true).starts_with("{\"dry_run\":true,"));
        assert!(r.json(true).ends_with(",\"free_before\":null,\"free_after\":null,\"unsupported\":true}"));
    }

    use super::super::sink::Found;

    fn rec(size: u64) -> FileRec {
        FileRec { size, dev: 1, ino: 2, mtime_ns: 3, ctime_ns: 4, name_off: 0, name_len: 0, dir: 0 }
    }

    /// What a scan of the file arguments `paths` (all of size 4) would have kept, but
    /// with the identity and times of `rec`.
    fn found_of(paths: [&[u8]; 2]) -> Found {
        let mut found = Found::default();
        let _ = found.add_dir(super::super::sink::NO_DIR, b"", (0, 0));
        for p in paths {
            let name_off = found.names.len() as u64;
            found.names.extend_from_slice(p);
            found.files.push(FileRec { name_off, name_len: p.len() as u32, ..rec(4) });
        }
        found
    }

    fn pair(paths: [&[u8]; 2]) -> Group {
        Group { size: 4, members: vec![0, 1], paths: paths.map(|p| p.to_vec()).to_vec(), layout_of: vec![0, 1] }
    }

    /// A group's first file gone since the scan: one error, the run fails, nothing else
    /// of the group is touched.
    #[test]
    fn dedupe_a_source_gone_since_the_scan_is_an_error() {
        let paths: [&[u8]; 2] = [b"/nonexistent-dfdu/a", b"/nonexistent-dfdu/b"];
        let found = found_of(paths);
        let r = run(&Handles::new(&found, 4), &[pair(paths)], true);
        assert_eq!((r.groups, r.files, r.errors, r.failed), (1, 0, 1, true));
        assert_eq!(r.messages, vec!["/nonexistent-dfdu/a: No such file or directory".to_string()]);
    }

    /// A source whose size, times or identity differ from the scan's: the whole part is
    /// skipped as changed, which is no failure.
    #[test]
    fn dedupe_a_changed_source_skips_its_part() {
        let dir = std::env::temp_dir().join(format!("dfdu-unit-dedupe-changed-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let (a, b) = (dir.join("a"), dir.join("b"));
        std::fs::write(&a, b"same").unwrap();
        std::fs::write(&b, b"same").unwrap();
        let (pa, pb) = (a.to_str().unwrap().as_bytes(), b.to_str().unwrap().as_bytes());
        let found = found_of([pa, pb]);
        let r = run(&Handles::new(&found, 4), &[pair([pa, pb])], true);
        let _ = std::fs::remove_dir_all(&dir);
        assert_eq!((r.groups, r.files, r.skipped_changed, r.errors, r.failed), (1, 0, 2, 0, false));
    }

    /// Changed wins over pinned, pinned over swap; each is counted where it belongs.
    #[test]
    fn dedupe_skip_reasons_and_their_counts() {
        let f = rec(10);
        let c = platform::FileCheck {
            kind: crate::meta::Kind::File,
            dev: 1,
            ino: 2,
            size: 10,
            mtime_ns: 3,
            ctime_ns: 4,
            pinned: false,
        };
        let swaps = [(7, 7), (1, 2)];
        assert_eq!(skip_reason(&c, &f, &[]), None);
        assert_eq!(skip_reason(&c, &f, &swaps[..1]), None);
        assert_eq!(skip_reason(&c, &f, &swaps), Some(Skip::Swap));
        let pinned = platform::FileCheck { pinned: true, ..c };
        assert_eq!(skip_reason(&pinned, &f, &[]), Some(Skip::Pinned));
        assert_eq!(skip_reason(&pinned, &f, &swaps), Some(Skip::Pinned));
        let grown = platform::FileCheck { size: 11, pinned: true, ..c };
        assert_eq!(skip_reason(&grown, &f, &swaps), Some(Skip::Changed));
        assert_eq!(skip_reason(&platform::FileCheck { mtime_ns: 5, ..c }, &f, &[]), Some(Skip::Changed));
        let mut r = Report::default();
        r.skip(Skip::Changed, 3);
        r.skip(Skip::Pinned, 1);
        r.skip(Skip::Pinned, 1);
        r.skip(Skip::Swap, 1);
        r.skip(Skip::Swap, 4);
        r.skip(Skip::Changed, 1);
        assert_eq!((r.skipped_changed, r.skipped_pinned, r.skipped_swap, r.errors, r.failed), (4, 2, 5, 0, false));
    }

    /// Every failure is counted; the first `MAX_MESSAGES` are kept to be shown.
    #[test]
    fn dedupe_failures_counted_and_the_first_1000_kept() {
        let mut r = Report::default();
        r.fail(b"dir/f 1", Errno(2));
        assert_eq!((r.errors, r.messages.clone()), (1, vec!["'dir/f 1': No such file or directory".to_string()]));
        for i in 1..MAX_MESSAGES + 5 {
            r.fail(format!("f{i}").as_bytes(), Errno(13));
        }
        assert_eq!((r.errors, r.messages.len()), (MAX_MESSAGES as u64 + 5, MAX_MESSAGES));
        assert_eq!(r.messages[MAX_MESSAGES - 1], format!("f{}: Permission denied", MAX_MESSAGES - 1));
    }
}
