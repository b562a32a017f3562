//! `dfdu dedupe`: each group's files come to share the extents of one of them, through
//! `FIDEDUPERANGE` only — the kernel locks both files, compares the bytes and shares
//! nothing that differs. `FICLONE` and `copy_file_range` are never used: they do not
//! compare.
//!
//! # Per group
//!
//! 1. Members are split by device (sharing never crosses a file system; each btrfs
//!    subvolume has a device of its own).
//! 2. Every member of a part is opened and sorted out: files that changed since they were
//!    hashed (size, mtime, ctime, identity) and active swap files take no part; immutable
//!    and append-only files and files on a read-only btrfs snapshot may be the source but
//!    are never changed (the kernel lets them serve: btrfs and XFS, tested).
//! 3. The source is the member with the fewest allocated blocks (`source_of`): the kernel
//!    gives each destination the source's layout, holes included, so no member ends up
//!    allocating more than before. Destinations whose extent layout already is the
//!    source's (FIEMAP, found by `find::layouts`) are skipped. Every member but the source
//!    is a destination or counted in the report under its reason.
//! 4. Destinations go in batches of at most `MAX_DEDUPE_DESTS`. Each call covers at most
//!    1 GiB (the VFS cap); the loop advances by the least `bytes_deduped` any destination
//!    got (btrfs works in 16 MiB pieces) and stops when a call makes no progress. Before
//!    every call, the source and each destination are checked again.
//! 5. The first call on a file system that cannot share extents (EOPNOTSUPP, or a known
//!    type such as ext4 before any call) stops the whole run with one message.
//! 6. A destination the kernel finds different ("data differs") makes its and the
//!    source's hash-file entries stale (`Report::stale`): the next run reads both again.
//!
//! A signal that `platform::interrupt_catch` caught (SIGINT, SIGTERM) stops the run
//! before its next call: the call in flight is finished and the report covers what was
//! done.
//!
//! Free space is measured per file system with `statfs` after `syncfs`, before the first
//! call and after the last.

use super::cache::Cache;
use super::find::{same, Group, INLINE};
use super::open::{Handles, Refused};
use super::sink::FileRec;
use crate::meta::Errno;
use crate::platform::{self, DedupeStatus, MAX_DEDUPE_DESTS};
use std::collections::hash_map::Entry;
use std::collections::{HashMap, HashSet};
use std::fs::File;

/// Bytes one call asks for at most (the VFS caps a call at 1 GiB).
pub(super) const CALL_BYTES: u64 = 1 << 30;
pub(super) const EOPNOTSUPP: i32 = 95;

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
    pub skipped_readonly: u64,
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
    /// Files (indices into `Found::files`) the kernel found to differ from their source,
    /// and those sources: their hash-file entries are stale and dropped.
    pub stale: Vec<u32>,
    /// A signal asked the run to stop: the call in flight was finished, no other made.
    pub interrupted: bool,
    /// Groups not started because of the interruption.
    pub groups_not_started: u64,
    /// What block mode did, when it ran (`--blocks`).
    pub blocks: Option<super::blocks::Report>,
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
             {} on read-only snapshots, {} swap files, {} alone on their file system; \
             {} errors\n",
            self.skipped_shared,
            self.skipped_inline,
            self.skipped_changed,
            self.skipped_pinned,
            self.skipped_readonly,
            self.skipped_swap,
            self.skipped_other_fs,
            self.errors
        ));
        if let Some(b) = &self.blocks {
            s.push_str(&b.text(cmd, dry_run));
        }
        if self.free_known && !dry_run {
            let change = self.free_after as i128 - self.free_before as i128;
            s.push_str(&format!(
                "{cmd}: free space {change:+} bytes (before {}, after {}, after syncfs)\n",
                self.free_before, self.free_after
            ));
        }
        if self.interrupted {
            s.push_str(&format!(
                "{cmd}: interrupted: the call in flight was finished, {} not started\n",
                super::count(self.groups_not_started, "group", "groups")
            ));
        }
        s
    }

    pub fn json(&self, dry_run: bool) -> String {
        format!(
            "{{\"dry_run\":{dry_run},\"groups\":{},\"files\":{},\"bytes_submitted\":{},\"bytes_deduplicated\":{},\
             \"refused_files\":{},\"skipped_shared\":{},\"skipped_inline\":{},\"skipped_changed\":{},\"skipped_pinned\":{},\
             \"skipped_readonly\":{},\"skipped_swap\":{},\"skipped_other_fs\":{},\"errors\":{},\"ioctl_calls\":{},\
             \"free_before\":{},\"free_after\":{},\"unsupported\":{},\"interrupted\":{},\"groups_not_started\":{}{}}}",
            self.groups,
            self.files,
            self.bytes_submitted,
            self.bytes_deduped,
            self.refused_files,
            self.skipped_shared,
            self.skipped_inline,
            self.skipped_changed,
            self.skipped_pinned,
            self.skipped_readonly,
            self.skipped_swap,
            self.skipped_other_fs,
            self.errors,
            self.ioctl_calls,
            if self.free_known { self.free_before.to_string() } else { "null".into() },
            if self.free_known { self.free_after.to_string() } else { "null".into() },
            self.unsupported.is_some(),
            self.interrupted,
            self.groups_not_started,
            self.blocks.as_ref().map_or(String::new(), |b| format!(",\"blocks\":{}", b.json()))
        )
    }
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
    pub(super) fn fail(&mut self, path: &[u8], e: Errno) {
        self.errors += 1;
        if self.messages.len() < MAX_MESSAGES {
            self.messages.push(format!("{}: {}", crate::text::quote::quotef(path), platform::errno_text(e)));
        }
    }
}

/// Why a file is left out of the calls, or (`Pinned`, `ReadOnly`) may only be a source.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Skip {
    /// Size, times or identity differ from the scan's.
    Changed,
    /// Immutable or append-only: never changed, but its extents may be shared.
    Pinned,
    /// On a read-only btrfs snapshot: never changed (without `--allow-readonly`), but its
    /// extents may be shared.
    ReadOnly,
    /// An active swap file: the kernel refuses it either way (ETXTBSY).
    Swap,
}

/// Free bytes now on the file systems of `files` (one per file system), after `syncfs`;
/// `None` when one of them cannot tell: a sum without it would be no change at all.
pub(super) fn free_now<'f>(files: impl Iterator<Item = &'f File>) -> Option<u64> {
    files.map(platform::free_bytes).sum()
}

/// Why the open file `c` (scanned as `rec`) must be left alone, if it must.
pub(super) fn skip_reason(c: &platform::FileCheck, rec: &FileRec, swaps: &[(u64, u64)]) -> Option<Skip> {
    if !same(c, rec) {
        Some(Skip::Changed)
    } else if swaps.contains(&(c.dev, c.ino)) {
        Some(Skip::Swap)
    } else if c.pinned {
        Some(Skip::Pinned)
    } else {
        None
    }
}

impl Report {
    /// Counts `n` files left alone for `why`.
    pub(super) fn skip(&mut self, why: Skip, n: u64) {
        match why {
            Skip::Changed => self.skipped_changed += n,
            Skip::Pinned => self.skipped_pinned += n,
            Skip::ReadOnly => self.skipped_readonly += n,
            Skip::Swap => self.skipped_swap += n,
        }
    }
}

/// Failure messages kept per run; the count covers the rest.
const MAX_MESSAGES: usize = 1000;

/// What the user chose for a run.
#[derive(Clone, Copy, Default)]
pub struct Options {
    /// Count what would be submitted; call nothing.
    pub dry_run: bool,
    /// Files on read-only btrfs snapshots may be destinations too.
    pub allow_readonly: bool,
    /// `--blocks`: block mode after the whole-file groups (`blocks.rs`), with blocks of
    /// `block_bytes` (`None`: the file system's block size).
    pub blocks: bool,
    pub block_bytes: Option<u64>,
    /// Workers that read files for block mode.
    pub threads: usize,
    /// A progress line on standard error while block mode runs.
    pub progress: bool,
    /// Block mode hands what it read back for the hash file (`blocks::Report::entries`).
    pub keep_prints: bool,
    /// `dfdu dupes --blocks`: block mode finds and lists its ranges, on any file system,
    /// and calls nothing (`look`).
    pub look_only: bool,
}

/// A file system: a btrfs's UUID (shared by its subvolumes, each a device of its own), or
/// elsewhere `(0, device)`.
pub(super) type FsKey = (u64, u64);

/// One run's state between the parts of its groups (and block mode, `blocks.rs`).
pub(super) struct Run<'a> {
    pub(super) handles: &'a Handles<'a>,
    pub(super) found: &'a super::sink::Found,
    pub(super) opts: Options,
    pub(super) swaps: Vec<(u64, u64)>,
    /// The hash file's entries: block mode's fingerprints of unchanged files.
    pub(super) cache: &'a Cache,
    /// One open file per file system, for free space before and after.
    fs_files: HashMap<FsKey, File>,
    /// A file system whose free space before could not be had, or kept a handle for the
    /// after: the report then says no change (`free_known` false).
    free_unknown: bool,
    /// Member files held open at once while a part is looked at, and in one batch: a
    /// quarter of the descriptors still free when the run starts, at most `OPEN_AT_ONCE`
    /// (the rest stay for the checked directory handles and the kept file systems).
    held: usize,
    /// Devices whose first source was checked (`first_on_fs`).
    devs_checked: HashSet<u64>,
    /// Each device's file system (`fs_key`).
    fs_of: HashMap<u64, FsKey>,
    /// Whether each device is a read-only btrfs subvolume (each has a device of its own).
    read_only: HashMap<u64, bool>,
    /// The devices block mode reads files of (their file systems may share extents), each
    /// with its file system's number in this run: the subvolumes of one btrfs are one.
    pub(super) block_devs: HashMap<u64, u32>,
    pub(super) r: Report,
}

impl<'a> Run<'a> {
    fn new(handles: &'a Handles<'a>, opts: Options, cache: &'a Cache) -> Run<'a> {
        Run {
            handles,
            found: handles.found(),
            opts,
            swaps: platform::swap_files(),
            cache,
            fs_files: HashMap::new(),
            free_unknown: false,
            held: (platform::raise_fd_limit().saturating_sub(platform::open_fds()) / 4).clamp(1, OPEN_AT_ONCE as u64)
                as usize,
            devs_checked: HashSet::new(),
            fs_of: HashMap::new(),
            read_only: HashMap::new(),
            block_devs: HashMap::new(),
            r: Report::default(),
        }
    }
}

/// `dfdu dupes --blocks`: block mode's ranges of `groups`' files, found and listed,
/// nothing called; the files that could not be read are in its messages.
pub fn look(handles: &Handles, groups: &[Group], opts: Options, cache: &Cache) -> super::blocks::Report {
    let mut run = Run::new(handles, Options { look_only: true, dry_run: true, ..opts }, cache);
    // Nothing is called, so nothing can say the file system cannot share: no Err.
    let mut b = super::blocks::run(&mut run, groups, opts.block_bytes).unwrap_or_default();
    b.messages = std::mem::take(&mut run.r.messages);
    b.failed = run.r.errors > 0 || run.r.failed;
    b
}

/// Deduplicates `groups` (or, with `dry_run`, counts what would be submitted).
pub fn run(handles: &Handles, groups: &[Group], opts: Options, cache: &Cache) -> Report {
    let mut run = Run::new(handles, opts, cache);
    for (i, g) in groups.iter().enumerate() {
        // SIGINT or SIGTERM (see `mod.rs`): no new call; what was done is reported.
        if platform::interrupt_requested().is_some() {
            run.r.interrupted = true;
            run.r.groups_not_started = (groups.len() - i) as u64;
            break;
        }
        let before = (run.r.groups, run.r.files, run.r.ioctl_calls);
        if let Err(stop) = run.group(g) {
            run.r.unsupported = Some(stop);
            run.r.failed = true;
            return run.r;
        }
        // A signal that came inside this group before its first call: the group was not
        // started either, and its files were not submitted.
        if run.r.interrupted && run.r.ioctl_calls == before.2 {
            (run.r.groups, run.r.files) = (before.0, before.1);
            run.r.groups_not_started = (groups.len() - i) as u64;
            break;
        }
    }
    if opts.blocks && !run.r.interrupted {
        match super::blocks::run(&mut run, groups, opts.block_bytes) {
            Ok(b) => run.r.blocks = Some(b),
            Err(stop) => {
                run.r.unsupported = Some(stop);
                run.r.failed = true;
                return run.r;
            }
        }
    }
    let mut r = run.r;
    if r.free_known && !opts.dry_run {
        match free_now(run.fs_files.values()) {
            Some(free) if !run.free_unknown => r.free_after = free,
            _ => r.free_known = false,
        }
    }
    if r.errors > 0 {
        r.failed = true;
    }
    r
}

/// Members of a part held open at once, at most (`Run::held`: fewer where descriptors
/// are few). A larger part keeps only its first ones open while all are looked at, and
/// opens the others again when their batch comes (`Run::ready`), each batch no larger:
/// a group of 200,000 copies once held every one open and ran out of descriptors (EMFILE
/// for 180,007 of them, in `cargo xtask bench --dupes T --dedupe xfs`).
const OPEN_AT_ONCE: usize = 2 * MAX_DEDUPE_DESTS;

/// One member of a part that can serve, as looked at: its index in the group, its file
/// while it is held open, its allocated blocks, and why it may only be a source, if it may.
struct Member {
    m: usize,
    file: Option<File>,
    blocks_512: u64,
    source_only: Option<Skip>,
}

/// A member ready for a call: its index in the group and its open file.
struct Open {
    m: usize,
    file: File,
}

/// The member the others of its part come to share. The fewest allocated blocks first:
/// the kernel gives each destination the source's layout, holes included (a dense source
/// fills a sparse copy's holes, a sparse one punches them into a dense copy; btrfs and
/// XFS alike), so then no member allocates more than before. Among equals, one that may
/// not be a destination (immutable, append-only, read-only: chosen, it is no copy left
/// out), then the one whose extents most members share already (fewer calls), then the
/// first path.
fn source_of(g: &Group, members: &[Member]) -> Option<usize> {
    // Counted once per layout: counting each member's sharers by a look at every other
    // member took 100 s of CPU for one group of 200,000 copies.
    let mut sharers: HashMap<usize, usize> = HashMap::new();
    for x in members {
        *sharers.entry(g.layout_of[x.m]).or_default() += 1;
    }
    (0..members.len()).min_by_key(|&i| {
        let x = &members[i];
        (
            x.blocks_512,
            x.source_only.is_none(),
            std::cmp::Reverse(sharers.get(&g.layout_of[x.m]).copied().unwrap_or(0)),
            x.m,
        )
    })
}

impl Run<'_> {
    fn rec(&self, g: &Group, m: usize) -> FileRec {
        self.found.files[g.members[m] as usize]
    }

    /// The file system of device `dev` (`file` is on it), asked once per device: the free
    /// space of two subvolumes of one btrfs is one figure, counted once.
    pub(super) fn fs_key(&mut self, dev: u64, file: &File) -> FsKey {
        *self.fs_of.entry(dev).or_insert_with(|| match platform::fs_uuid(file) {
            Some(id) => {
                let (a, b) = id.split_at(8);
                let word = |x: &[u8]| u64::from_le_bytes(x.try_into().expect("8 bytes"));
                (word(a), word(b))
            }
            None => (0, dev),
        })
    }

    /// The scan's record of file `rec` (an index into `Found::files`).
    pub(super) fn file(&self, rec: u32) -> FileRec {
        self.found.files[rec as usize]
    }

    /// Notes the free space of `dev`'s file system before its first call (`file` is on
    /// it), once per device.
    pub(super) fn note_fs(&mut self, dev: u64, file: &File) {
        let key = self.fs_key(dev, file);
        let Entry::Vacant(slot) = self.fs_files.entry(key) else { return };
        // The figure after needs a handle kept till then: without one (no descriptor
        // left) or without the figure before, the change is not known, rather than
        // counted from a sum that leaves this file system out on one side.
        match (file.try_clone(), platform::free_bytes(file)) {
            (Ok(kept), Some(free)) => {
                self.r.free_before += free;
                self.r.free_known = true;
                slot.insert(kept);
            }
            _ => self.free_unknown = true,
        }
    }

    /// One group, one device at a time; `Err` when the run must stop.
    fn group(&mut self, g: &Group) -> Result<(), String> {
        if g.all_shared() {
            self.r.skipped_shared += g.members.len() as u64 - 1;
            return Ok(());
        }
        let dev_of = |m: usize| self.found.files[g.members[m] as usize].dev;
        let mut devs: Vec<u64> = (0..g.members.len()).map(dev_of).collect();
        devs.sort_unstable();
        devs.dedup();
        let mut part_counted = false;
        for dev in devs {
            let on_dev: Vec<usize> = (0..g.members.len()).filter(|&m| dev_of(m) == dev).collect();
            let part: Vec<usize> = on_dev.iter().copied().filter(|&m| g.layout_of[m] != INLINE).collect();
            self.r.skipped_inline += (on_dev.len() - part.len()) as u64;
            if part.len() < 2 {
                // A copy with no other on its file system: it can share with none of them,
                // wherever it sorts in the group.
                if on_dev.len() < g.members.len() {
                    self.r.skipped_other_fs += part.len() as u64;
                }
                continue;
            }
            if !part_counted {
                self.r.groups += 1;
                part_counted = true;
            }
            self.part(g, &part)?;
        }
        Ok(())
    }

    /// Whether files on device `dev` (`file` one of them) are left as they are because
    /// they are on a read-only snapshot; asked once per device.
    fn read_only(&mut self, dev: u64, file: &File) -> bool {
        !self.opts.allow_readonly && *self.read_only.entry(dev).or_insert_with(|| platform::read_only_snapshot(file))
    }

    /// Opens every member of `part`; returns those that can serve, as source or
    /// destination, and counts the others: changed since hashed, active swap files,
    /// failures to open.
    fn open_part(&mut self, g: &Group, part: &[usize]) -> Vec<Member> {
        let mut out = Vec::with_capacity(part.len());
        for &m in part {
            let Some((file, c, why)) = self.open_checked(g, m) else { continue };
            let source_only = match why {
                Some(why) => Some(why),
                None if self.read_only(c.dev, &file) => Some(Skip::ReadOnly),
                None => None,
            };
            // Beyond the first ones, closed again: `ready` opens it when its batch comes.
            let file = (out.len() < self.held).then_some(file);
            out.push(Member { m, file, blocks_512: c.blocks_512, source_only });
        }
        out
    }

    /// Opens member `m` through the checked handles and looks at it: `None` (counted)
    /// when it changed since hashed, is an active swap file or cannot be opened; else the
    /// file, what was seen, and why it may only be a source, if it may (immutable,
    /// append-only).
    fn open_checked(&mut self, g: &Group, m: usize) -> Option<(File, platform::FileCheck, Option<Skip>)> {
        let (file, c) = match open_member(self.handles, g, m) {
            Ok(Some(pair)) => pair,
            Ok(None) => {
                self.r.skip(Skip::Changed, 1);
                return None;
            }
            Err(e) => {
                self.r.fail(&g.paths[m], e);
                return None;
            }
        };
        match skip_reason(&c, &self.rec(g, m), &self.swaps) {
            Some(why @ (Skip::Changed | Skip::Swap)) => {
                self.r.skip(why, 1);
                None
            }
            why => Some((file, c, why)),
        }
    }

    /// Member `d` ready for a call: its file as `open_part` kept it, or opened and
    /// checked again (`open_checked`: changed since hashed, or no longer openable:
    /// counted, `None`).
    fn ready(&mut self, g: &Group, d: Member) -> Option<Open> {
        if let Some(file) = d.file {
            return Some(Open { m: d.m, file });
        }
        self.open_checked(g, d.m).map(|(file, ..)| Open { m: d.m, file })
    }

    /// One device's members of a group; `Err` when the file system cannot share extents.
    /// Every member but the source is a destination or counted where it belongs.
    fn part(&mut self, g: &Group, part: &[usize]) -> Result<(), String> {
        let mut members = self.open_part(g, part);
        let Some(s) = source_of(g, &members) else { return Ok(()) };
        let src = members.remove(s);
        let src_layout = g.layout_of[src.m];
        let Some(src) = self.ready(g, src) else { return Ok(()) };
        if !self.first_on_fs(g, &src, members.len() + 1)? {
            return Ok(());
        }
        let mut dests: Vec<Member> = Vec::new();
        for d in members {
            match d.source_only {
                // Sharing the source's extents already, it is no copy left out.
                _ if g.layout_of[d.m] == src_layout => self.r.skipped_shared += 1,
                Some(why) => self.r.skip(why, 1),
                None => dests.push(d),
            }
        }
        self.r.files += dests.len() as u64;
        if self.opts.dry_run {
            let size = self.rec(g, src.m).size;
            self.r.bytes_submitted = self.r.bytes_submitted.saturating_add(size.saturating_mul(dests.len() as u64));
            return Ok(());
        }
        let mut dests = dests.into_iter().peekable();
        while dests.peek().is_some() {
            let batch: Vec<Member> = dests.by_ref().take(MAX_DEDUPE_DESTS.min(self.held)).collect();
            let batch: Vec<Open> = batch.into_iter().filter_map(|d| self.ready(g, d)).collect();
            if batch.is_empty() {
                continue;
            }
            if !self.submit(g, &src, &batch.iter().collect::<Vec<_>>())? {
                break;
            }
        }
        Ok(())
    }

    /// For the first source on its device: whether the file system can share extents
    /// (ext4, tmpfs and the like are known before any call) and the free space before.
    /// `Err` stops the run (nothing was changed yet); `Ok(false)` fails only this part of
    /// `n_members` (groups on another file system were deduplicated already).
    fn first_on_fs(&mut self, g: &Group, src: &Open, n_members: usize) -> Result<bool, String> {
        let dev = self.found.files[g.members[src.m] as usize].dev;
        if !self.devs_checked.insert(dev) {
            return Ok(true);
        }
        if platform::extents_never_shared(&src.file) {
            // "Nothing was changed" would be false now. As when a call says EOPNOTSUPP
            // then, this part fails (one message, its files counted) and the run goes on.
            if self.r.bytes_deduped > 0 {
                self.r.fail(&g.paths[src.m], Errno(EOPNOTSUPP));
                self.r.errors += n_members as u64 - 1;
                return Ok(false);
            }
            return Err(format!(
                "the file system of {} cannot share extents (ext4, tmpfs and the like; XFS needs reflink=1): \
                 nothing was changed",
                crate::text::quote::quotef(&g.paths[src.m])
            ));
        }
        self.note_fs(dev, &src.file);
        Ok(true)
    }

    /// One batch of destinations, a call at a time until the whole size is shared.
    /// Source and destinations are checked again right before every call: anything that
    /// changed since it was hashed is left alone (the kernel would compare anyway; this
    /// keeps the report true). `Ok(false)` when the source changed or a signal asked the
    /// run to stop: its part stops.
    fn submit(&mut self, g: &Group, src: &Open, batch: &[&Open]) -> Result<bool, String> {
        let src_rec = self.rec(g, src.m);
        let mut active: Vec<&Open> = batch.to_vec();
        let mut off = 0u64;
        while off < src_rec.size && !active.is_empty() {
            if platform::interrupt_requested().is_some() {
                self.r.interrupted = true;
                return Ok(false);
            }
            if !platform::check_file(&src.file).is_ok_and(|c| same(&c, &src_rec)) {
                self.r.skipped_changed += active.len() as u64;
                return Ok(false);
            }
            active.retain(|d| {
                let ok = platform::check_file(&d.file).is_ok_and(|c| same(&c, &self.rec(g, d.m)));
                if !ok {
                    self.r.skipped_changed += 1;
                }
                ok
            });
            if active.is_empty() {
                break;
            }
            let len = (src_rec.size - off).min(CALL_BYTES);
            match self.call(g, src, off, len, &mut active)? {
                Some(least) => off += least,
                None => break,
            }
        }
        Ok(true)
    }

    /// One `FIDEDUPERANGE` call of `len` bytes at `off`; keeps in `active` the
    /// destinations the kernel deduplicated and returns the least progress any made
    /// (`None`: no progress, stop). `Err` when the file system cannot share extents and
    /// nothing was deduplicated yet.
    fn call(
        &mut self,
        g: &Group,
        src: &Open,
        off: u64,
        len: u64,
        active: &mut Vec<&Open>,
    ) -> Result<Option<u64>, String> {
        let cannot = |why: String| {
            let shown = crate::text::quote::quotef(&g.paths[src.m]);
            format!("the file system of {shown} cannot share extents ({why}XFS needs reflink=1): nothing was changed")
        };
        let pairs: Vec<(&File, u64)> = active.iter().map(|d| (&d.file, off)).collect();
        self.r.ioctl_calls += 1;
        self.r.bytes_submitted = self.r.bytes_submitted.saturating_add(len * pairs.len() as u64);
        let statuses = match platform::dedupe(&src.file, off, len, &pairs) {
            Ok(s) => s,
            Err(e) if (e.0 == EOPNOTSUPP || e.0 == 22) && self.r.bytes_deduped == 0 => {
                return Err(cannot(format!("{}; ", platform::errno_text(e))));
            }
            Err(e) => {
                for d in active.iter() {
                    self.r.fail(&g.paths[d.m], e);
                }
                return Ok(None);
            }
        };
        let mut least = u64::MAX;
        let mut keep = Vec::new();
        for (d, st) in active.iter().zip(statuses) {
            match st {
                DedupeStatus::Same(n) => {
                    self.r.bytes_deduped += n;
                    least = least.min(n);
                    keep.push(*d);
                }
                DedupeStatus::Differs => {
                    // The hashes said equal, the kernel says not: stale entries (a write
                    // the size and times do not show), read again next time.
                    self.r.refused_files += 1;
                    self.r.stale.extend([g.members[d.m], g.members[src.m]]);
                }
                DedupeStatus::Error(e) if e.0 == EOPNOTSUPP && self.r.bytes_deduped == 0 => {
                    return Err(cannot(String::new()));
                }
                DedupeStatus::Error(e) => self.r.fail(&g.paths[d.m], e),
            }
        }
        *active = keep;
        Ok((least != 0 && least != u64::MAX).then_some(least))
    }
}

#[cfg(test)]
mod tests {
    use super::super::sink::Found;
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
            skipped_readonly: 13,
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
                           hashed, 8 immutable or append-only, 13 on read-only snapshots, 9 swap files, 10 alone on \
                           their file system; 11 errors\n";

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
             \"skipped_readonly\":13,\"skipped_swap\":9,\"skipped_other_fs\":10,\"errors\":11,\"ioctl_calls\":12,\
             \"free_before\":1000000,\"free_after\":1003000,\"unsupported\":false,\"interrupted\":false,\
             \"groups_not_started\":0}"
        );
        let r = Report { free_known: false, unsupported: Some(String::new()), ..report() };
        assert!(r.json(true).starts_with("{\"dry_run\":true,"));
        assert!(r.json(true).ends_with(
            ",\"free_before\":null,\"free_after\":null,\"unsupported\":true,\"interrupted\":false,\"groups_not_started\":0}"
        ));
        let r = Report { interrupted: true, groups_not_started: 3, ..report() };
        assert!(r.json(false).ends_with(",\"interrupted\":true,\"groups_not_started\":3}"));
        assert!(r
            .text("x", false)
            .ends_with("x: interrupted: the call in flight was finished, 3 groups not started\n"));
    }

    fn rec(size: u64) -> super::super::sink::FileRec {
        super::super::sink::FileRec { size, dev: 1, ino: 2, mtime_ns: 3, ctime_ns: 4, name_off: 0, name_len: 0, dir: 0 }
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
        Group {
            size: 4,
            members: vec![0, 1],
            paths: paths.map(|p| p.to_vec()).to_vec(),
            layout_of: vec![0, 1],
            devs: vec![1, 1],
        }
    }

    const DRY: Options = Options { dry_run: true, ..OPTS };
    const OPTS: Options = Options {
        dry_run: false,
        allow_readonly: false,
        blocks: false,
        block_bytes: None,
        threads: 1,
        progress: false,
        keep_prints: false,
        look_only: false,
    };

    /// A group's files gone since the scan: one error each, the run fails.
    #[test]
    fn dedupe_files_gone_since_the_scan_are_errors() {
        let paths: [&[u8]; 2] = [b"/nonexistent-dfdu/a", b"/nonexistent-dfdu/b"];
        let found = found_of(paths);
        let r = run(&Handles::new(&found, 4), &[pair(paths)], DRY, &Cache::default());
        assert_eq!((r.groups, r.files, r.errors, r.failed), (1, 0, 2, true));
        let gone = |p: &str| format!("/nonexistent-dfdu/{p}: No such file or directory");
        assert_eq!(r.messages, vec![gone("a"), gone("b")]);
    }

    /// Files whose size, times or identity differ from the scan's are skipped as changed,
    /// which is no failure.
    #[test]
    fn dedupe_changed_files_are_skipped() {
        let dir = std::env::temp_dir().join(format!("dfdu-unit-dedupe-changed-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let (a, b) = (dir.join("a"), dir.join("b"));
        std::fs::write(&a, b"same").unwrap();
        std::fs::write(&b, b"same").unwrap();
        let (pa, pb) = (a.to_str().unwrap().as_bytes(), b.to_str().unwrap().as_bytes());
        let found = found_of([pa, pb]);
        let r = run(&Handles::new(&found, 4), &[pair([pa, pb])], DRY, &Cache::default());
        let _ = std::fs::remove_dir_all(&dir);
        assert_eq!((r.groups, r.files, r.skipped_changed, r.errors, r.failed), (1, 0, 2, 0, false));
    }

    /// Changed wins over swap, swap over pinned (a pinned swap file may not be a source
    /// either); each is counted where it belongs.
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
            blocks_512: 8,
        };
        let swaps = [(7, 7), (1, 2)];
        assert_eq!(skip_reason(&c, &f, &[]), None);
        assert_eq!(skip_reason(&c, &f, &swaps[..1]), None);
        assert_eq!(skip_reason(&c, &f, &swaps), Some(Skip::Swap));
        let pinned = platform::FileCheck { pinned: true, ..c };
        assert_eq!(skip_reason(&pinned, &f, &[]), Some(Skip::Pinned));
        assert_eq!(skip_reason(&pinned, &f, &swaps), Some(Skip::Swap));
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
        r.skip(Skip::ReadOnly, 2);
        let counts = (r.skipped_changed, r.skipped_pinned, r.skipped_readonly, r.skipped_swap);
        assert_eq!((counts, r.errors, r.failed), ((4, 2, 2, 5), 0, false));
    }

    /// The source: fewest blocks; then one that may not be a destination; then the one
    /// most members share already; then path order.
    #[test]
    fn dedupe_source_choice() {
        let member =
            |m: usize, blocks_512: u64, source_only: Option<Skip>| Member { m, file: None, blocks_512, source_only };
        let g = |layout_of: Vec<usize>| Group {
            size: 4,
            members: (0..layout_of.len() as u32).collect(),
            paths: vec![Vec::new(); layout_of.len()],
            devs: vec![1; layout_of.len()],
            layout_of,
        };
        let plain = g(vec![0, 1, 2, 3]);
        assert_eq!(source_of(&plain, &[]), None);
        let sparse_second = [member(0, 8, None), member(1, 2, None), member(2, 8, None)];
        assert_eq!(source_of(&plain, &sparse_second), Some(1));
        let alike = [member(0, 8, None), member(1, 8, None), member(2, 8, None)];
        assert_eq!(source_of(&plain, &alike), Some(0), "the first path");
        let pinned_third = [member(0, 8, None), member(1, 8, None), member(2, 8, Some(Skip::Pinned))];
        assert_eq!(source_of(&plain, &pinned_third), Some(2));
        let read_only = [member(0, 8, Some(Skip::ReadOnly)), member(1, 8, Some(Skip::ReadOnly))];
        assert_eq!(source_of(&plain, &read_only), Some(0));
        // A pinned member with more blocks would make the sparse one grow: not chosen.
        let dense_pinned = [member(0, 8, Some(Skip::Pinned)), member(1, 2, None), member(2, 8, None)];
        assert_eq!(source_of(&plain, &dense_pinned), Some(1));
        // Members 2 and 3 share one layout; member 1 is gone (the part has 0, 2, 3).
        let shared = g(vec![0, 1, 2, 2]);
        let part = [member(0, 8, None), member(2, 8, None), member(3, 8, None)];
        assert_eq!(source_of(&shared, &part), Some(1));
        let part = [member(0, 8, Some(Skip::Pinned)), member(2, 8, None), member(3, 8, None)];
        assert_eq!(source_of(&shared, &part), Some(0), "a pinned copy first: it is no copy left out");
        // Only members of the part count as sharers: member 1, which shares member 2's
        // layout, is not in it (another device, or gone).
        let outside = g(vec![0, 1, 1, 3]);
        let part = [member(0, 8, None), member(2, 8, None), member(3, 8, None)];
        assert_eq!(source_of(&outside, &part), Some(0));
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
