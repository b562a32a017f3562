//! `dfdu dupes --delete`, `--hardlink` and `--symlink`: in each group one file is kept
//! and every other member is removed, or replaced by a hard link or a symbolic link to
//! the kept one. For file systems that cannot share extents; where they can, `dfdu
//! dedupe` keeps every file as it was and lets the kernel compare.
//!
//! # Which one is kept
//!
//! The `--keep` rules in the order given, the first that tells two members apart
//! deciding (`Keep`); members still tied go by path order. A member is one inode: its
//! other names (hard links) go with it, and the names of the kept inode are never
//! touched.
//!
//! # Per member, right before acting
//!
//! No kernel compares here, so dfdu does: the kept file and the member are opened through
//! the scan's checked directory handles (`open.rs`: every directory by one name with
//! no-follow, its identity the scan's), both must still have the size, mtime, ctime and
//! (device, inode) the scan saw, and their bytes are compared in full; both are checked
//! again after the compare, and the member's name in its directory handle must still be
//! that inode. Anything else skips the member, which is reported with its reason. Only
//! then is it removed (`remove_at`) or replaced: the link is made under a fresh,
//! unpredictable name in the member's directory (EEXIST from `link_at`/`symlink_at`
//! means another name is tried, never that a name is reused) and renamed over the member
//! (`rename_at`), so the path never goes missing. A hard link's new name must be the
//! kept inode, else it is removed again. `--hardlink` stays within one file system and
//! refuses a member whose owner or mode differs from the kept file's unless
//! `--force-metadata` (the link takes the kept file's).
//!
//! `--dry-run` runs every check and stops short of the change; `--plan` writes the same
//! actions as a shell script (`plan.rs`) instead of doing them.

use super::find::{same, Group};
use super::open::{Handles, Parent, Refused};
use super::sink::{FileRec, Found, ARGS_DIR, NO_DIR};
use crate::meta::{Errno, Kind};
use crate::platform;
use std::collections::HashMap;
use std::ffi::CString;
use std::fs::File;
use std::io::Read;

/// What happens to the members that are not kept.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Action {
    Delete,
    Hardlink,
    Symlink,
}

impl Action {
    /// The verb of an action line.
    pub fn verb(self) -> &'static str {
        match self {
            Action::Delete => "delete",
            Action::Hardlink => "hardlink",
            Action::Symlink => "symlink",
        }
    }
}

/// One keep rule: which member of a group is preferred as the one kept.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Keep {
    /// The oldest modification time.
    Oldest,
    Newest,
    /// The fewest bytes of path.
    Shortest,
    Longest,
    /// Under this path (`--keep-path`): the path itself or below it.
    Under(Vec<u8>),
    /// Under the earliest PATH argument.
    FirstArg,
}

/// The rules when none is given: the copy under the first PATH argument, the oldest of
/// those, then path order.
pub const DEFAULT_KEEP: [Keep; 2] = [Keep::FirstArg, Keep::Oldest];

/// Parses a `--keep` list ("oldest,shortest"); `Err` names the word not understood.
pub fn parse_keep(list: &str) -> Result<Vec<Keep>, String> {
    list.split(',')
        .map(|w| match w {
            "oldest" => Ok(Keep::Oldest),
            "newest" => Ok(Keep::Newest),
            "shortest" => Ok(Keep::Shortest),
            "longest" => Ok(Keep::Longest),
            "first-arg" => Ok(Keep::FirstArg),
            _ => Err(w.to_string()),
        })
        .collect()
}

/// Whether `path` is `prefix` or lies below it.
fn is_under(path: &[u8], prefix: &[u8]) -> bool {
    let prefix = match prefix {
        [rest @ .., b'/'] if !rest.is_empty() => rest,
        p => p,
    };
    path.starts_with(prefix) && (path.len() == prefix.len() || path[prefix.len()] == b'/' || prefix == b"/")
}

/// The index of the first argument `path` lies under (`usize::MAX` for none).
fn arg_of(path: &[u8], args: &[Vec<u8>]) -> usize {
    args.iter().position(|a| is_under(path, a)).unwrap_or(usize::MAX)
}

/// The member of `g` to keep under `rules` (ties: the first in path order).
pub fn choose(found: &Found, g: &Group, rules: &[Keep], args: &[Vec<u8>]) -> usize {
    let mtime_ns = |m: usize| found.files[g.members[m] as usize].mtime_ns;
    choose_among(&g.paths, &mtime_ns, rules, args)
}

/// Which of `paths` (in path order) to keep under `rules`; `mtime_ns` gives each one's
/// modification time.
pub fn choose_among(paths: &[Vec<u8>], mtime_ns: &dyn Fn(usize) -> i64, rules: &[Keep], args: &[Vec<u8>]) -> usize {
    let key = |m: usize| -> Vec<i128> {
        let path = &paths[m];
        rules
            .iter()
            .map(|r| match r {
                Keep::Oldest => i128::from(mtime_ns(m)),
                Keep::Newest => -i128::from(mtime_ns(m)),
                Keep::Shortest => path.len() as i128,
                Keep::Longest => -(path.len() as i128),
                Keep::Under(p) => i128::from(!is_under(path, p)),
                Keep::FirstArg => arg_of(path, args) as i128,
            })
            .collect()
    };
    (0..paths.len()).min_by_key(|&m| (key(m), m)).unwrap_or(0)
}

/// Why a member was left as it was.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Skip {
    /// It, the kept file or a directory on the way is not what the scan saw.
    Changed,
    /// Its bytes are not the kept file's.
    Differs,
    /// `--hardlink` across file systems.
    OtherFs,
    /// `--hardlink` with another owner or mode, without `--force-metadata`.
    Metadata,
    Os(Errno),
}

impl Skip {
    pub fn text(self) -> String {
        match self {
            Skip::Changed => "changed since the scan".into(),
            Skip::Differs => "content differs from the kept file".into(),
            Skip::OtherFs => "on another file system than the kept file".into(),
            Skip::Metadata => "owner or mode differs from the kept file's (see --force-metadata)".into(),
            Skip::Os(e) => platform::errno_text(e),
        }
    }
}

fn refused(r: Refused) -> Skip {
    match r {
        Refused::Changed => Skip::Changed,
        Refused::Os(e) => Skip::Os(e),
    }
}

/// One name acted on (or that would have been).
pub struct Step {
    pub group: usize,
    /// What is done: `delete`, `hardlink`, `symlink`, or for `--dirs` `rmdir` (a
    /// directory emptied by its files' steps).
    pub verb: &'static str,
    /// The member's path, and for a symlink the target written.
    pub path: Vec<u8>,
    pub target: Option<Vec<u8>>,
    pub result: Result<(), Skip>,
    /// Bytes of the member this step leaves to be freed (its size on its last name).
    pub bytes: u64,
    /// `--dirs`: the file of the kept tree a file step compared with (else the group's
    /// kept path is).
    pub kept_file: Option<Vec<u8>>,
}

/// What the run was asked to do.
pub struct Options<'a> {
    pub action: Action,
    pub keep: &'a [Keep],
    /// The PATH arguments as given, for `Keep::FirstArg`.
    pub args: &'a [Vec<u8>],
    pub dry_run: bool,
    pub force_metadata: bool,
}

/// What the run did: for each group its kept member, and every step.
#[derive(Default)]
pub struct Report {
    /// Per group: the path of the member kept, and the size of one copy.
    pub kept: Vec<Vec<u8>>,
    pub sizes: Vec<u64>,
    pub steps: Vec<Step>,
    /// Free bytes of the file systems acted on, before and after (statfs).
    pub free_before: u64,
    pub free_after: u64,
    pub free_known: bool,
    /// The groups are `--dirs`' directory groups.
    pub dirs: bool,
}

impl Report {
    /// Groups where at least one step was done (or would be, in a dry run).
    pub fn groups_acted(&self) -> usize {
        let mut g: Vec<usize> = self.steps.iter().filter(|s| s.result.is_ok()).map(|s| s.group).collect();
        g.dedup();
        g.len()
    }
    pub fn skipped(&self) -> usize {
        self.steps.iter().filter(|s| s.result.is_err()).count()
    }
}

/// For each (device, inode), its names: (path, index into `Found::files`).
type Names = HashMap<(u64, u64), Vec<(Vec<u8>, u32)>>;

/// Every name of each inode among `groups`' members, in path order.
fn names_of(found: &Found, groups: &[Group]) -> Names {
    let mut names = Names::new();
    for g in groups {
        for &m in &g.members {
            let f = &found.files[m as usize];
            names.insert((f.dev, f.ino), Vec::new());
        }
    }
    for (i, f) in found.files.iter().enumerate() {
        if let Some(list) = names.get_mut(&(f.dev, f.ino)) {
            let mut p = Vec::new();
            found.file_path(f, &mut p);
            list.push((p, i as u32));
        }
    }
    for list in names.values_mut() {
        list.sort();
    }
    names
}

/// Acts on `groups` (in the order given) as `opts` says.
pub fn run(handles: &Handles, groups: &[Group], opts: &Options) -> Report {
    let found = handles.found();
    let names = names_of(found, groups);
    let mut r = Report::default();
    let mut fs_files: HashMap<u64, File> = HashMap::new();
    for (gi, g) in groups.iter().enumerate() {
        let k = choose(found, g, opts.keep, opts.args);
        r.kept.push(g.paths[k].clone());
        r.sizes.push(g.size);
        let kept = &found.files[g.members[k] as usize];
        if let (false, Ok(f)) = (fs_files.contains_key(&kept.dev), handles.open(kept)) {
            if let Some(free) = platform::free_bytes(&f) {
                r.free_before += free;
                r.free_known = true;
                fs_files.insert(kept.dev, f);
            }
        }
        // Each action of ours moves the ctime of the inodes it touches (a link count
        // changes): what the next check expects follows, read right after the action.
        let mut kept_ctime_ns = kept.ctime_ns;
        for (m, &rec) in g.members.iter().enumerate() {
            if m == k {
                continue;
            }
            let f = &found.files[rec as usize];
            let all = &names[&(f.dev, f.ino)];
            let mut member_ctime_ns = f.ctime_ns;
            for (n, (path, idx)) in all.iter().enumerate() {
                let member = &found.files[*idx as usize];
                let target = (opts.action == Action::Symlink).then(|| symlink_target(found, member, kept));
                let now = Now {
                    kept: FileRec { ctime_ns: kept_ctime_ns, ..*kept },
                    member: FileRec { ctime_ns: member_ctime_ns, ..*member },
                };
                let result = act_on(handles, opts, &now, target.as_deref()).map(|(k, m)| {
                    kept_ctime_ns = k;
                    member_ctime_ns = m;
                });
                let bytes = if n + 1 == all.len() { f.size } else { 0 };
                let verb = opts.action.verb();
                r.steps.push(Step { group: gi, verb, path: path.clone(), target, result, bytes, kept_file: None });
            }
        }
    }
    if r.free_known && !opts.dry_run {
        match super::dedupe::free_now(fs_files.values()) {
            Some(free) => r.free_after = free,
            None => r.free_known = false,
        }
    }
    r
}

/// The file still is what the scan saw (size, times, identity).
fn check(file: &File, f: &FileRec) -> Result<(), Skip> {
    match platform::check_file(file) {
        Ok(c) if same(&c, f) => Ok(()),
        Ok(_) => Err(Skip::Changed),
        Err(e) => Err(Skip::Os(e)),
    }
}

/// Whether `a` and `b` hold the same bytes, `size_bytes` of them.
fn same_bytes(a: &mut File, b: &mut File, size_bytes: u64) -> Result<bool, Skip> {
    const CHUNK_BYTES: usize = 64 << 10;
    let (mut x, mut y) = (vec![0u8; CHUNK_BYTES], vec![0u8; CHUNK_BYTES]);
    let mut total_bytes = 0u64;
    loop {
        let n = read_up_to(a, &mut x)?;
        if read_up_to(b, &mut y)? != n || x[..n] != y[..n] {
            return Ok(false);
        }
        total_bytes += n as u64;
        if n < CHUNK_BYTES {
            return Ok(total_bytes == size_bytes);
        }
    }
}

fn read_up_to(file: &mut File, buf: &mut [u8]) -> Result<usize, Skip> {
    let mut got = 0;
    while got < buf.len() {
        match file.read(&mut buf[got..]) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(Skip::Os(Errno(e.raw_os_error().unwrap_or(5)))),
        }
    }
    Ok(got)
}

/// The kept file and one name of a member as they should be now: as the scan saw them,
/// with the ctimes this run's own actions gave them.
struct Now {
    kept: FileRec,
    member: FileRec,
}

/// The checks of the top of this file for one name of a member, then the action itself
/// (not in a dry run). Returns the ctimes of the kept file and the member after it.
fn act_on(handles: &Handles, opts: &Options, now: &Now, target: Option<&[u8]>) -> Result<(i64, i64), Skip> {
    let (kept, member) = (&now.kept, &now.member);
    if (member.dev, member.ino) == (kept.dev, kept.ino) {
        return Err(Skip::Changed);
    }
    let mut m = handles.open(member).map_err(refused)?;
    let mut k = handles.open(kept).map_err(refused)?;
    check(&m, member)?;
    check(&k, kept)?;
    if !same_bytes(&mut m, &mut k, kept.size)? {
        return Err(Skip::Differs);
    }
    // A write while they were compared moved a ctime.
    check(&m, member)?;
    check(&k, kept)?;
    if opts.action == Action::Hardlink {
        if member.dev != kept.dev {
            return Err(Skip::OtherFs);
        }
        if !opts.force_metadata && platform::file_owner(&m) != platform::file_owner(&k) {
            return Err(Skip::Metadata);
        }
    }
    let (dir, name) = handles.parent(member).map_err(refused)?;
    let name = CString::new(name).map_err(|_| Skip::Os(Errno::INVAL))?;
    is_still(&dir, &name, member)?;
    if opts.dry_run {
        return Ok((kept.ctime_ns, member.ctime_ns));
    }
    let done = match opts.action {
        Action::Delete => platform::remove_at(dir.dir(), &name, false).map_err(Skip::Os),
        Action::Hardlink => {
            let (kdir, kname) = handles.parent(kept).map_err(refused)?;
            let kname = CString::new(kname).map_err(|_| Skip::Os(Errno::INVAL))?;
            replace(&dir, &name, member, |tmp| platform::link_at(kdir.dir(), &kname, dir.dir(), tmp), Some(kept))
        }
        Action::Symlink => {
            let target = CString::new(target.unwrap_or_default()).map_err(|_| Skip::Os(Errno::INVAL))?;
            replace(&dir, &name, member, |tmp| platform::symlink_at(&target, dir.dir(), tmp), None)
        }
    };
    done?;
    let ctime = |f: &File, was: i64| platform::check_file(f).map_or(was, |c| c.ctime_ns);
    Ok((ctime(&k, kept.ctime_ns), ctime(&m, member.ctime_ns)))
}

/// The entry `name` of `dir` is still the regular file `f` (not followed).
fn is_still(dir: &Parent, name: &CString, f: &FileRec) -> Result<(), Skip> {
    is_still_as(dir, name, Kind::File, (f.dev, f.ino))
}

/// The entry `name` of `dir` is still of `kind` with identity `(dev, ino)` (not followed;
/// an inode 0, which the scan could not learn, matches any).
fn is_still_as(dir: &Parent, name: &CString, kind: Kind, (dev, ino): (u64, u64)) -> Result<(), Skip> {
    match platform::stat_at(dir.dir(), name, platform::Follow::No) {
        Ok(now) if now.kind == kind && (ino == 0 || (now.dev, now.ino) == (dev, ino)) => Ok(()),
        Ok(_) => Err(Skip::Changed),
        Err(e) => Err(Skip::Os(e)),
    }
}

/// Temporary names tried before giving up (each EEXIST is someone else's name).
const TEMP_TRIES: u32 = 16;

/// A name nobody can guess ahead: 64 bits from std's per-process random hash keys.
fn temp_name(try_n: u32) -> CString {
    use std::hash::BuildHasher;
    let bits = std::collections::hash_map::RandomState::new().hash_one((try_n, std::time::SystemTime::now()));
    CString::new(format!(".dfdu-{bits:016x}.tmp")).expect("no NUL in hex")
}

/// Makes a new name with `make` (which fails with EEXIST on a taken name), checks that
/// it is `want` when given (a hard link of the kept inode), and renames it over `name`,
/// which must still be `member`. A failure leaves `name` as it was and no new name.
fn replace(
    dir: &Parent,
    name: &CString,
    member: &FileRec,
    make: impl Fn(&CString) -> Result<(), Errno>,
    want: Option<&FileRec>,
) -> Result<(), Skip> {
    let mut tries = 0;
    let tmp = loop {
        let tmp = temp_name(tries);
        match make(&tmp) {
            Ok(()) => break tmp,
            Err(e) if e == Errno::EXIST && tries + 1 < TEMP_TRIES => tries += 1,
            Err(e) => return Err(Skip::Os(e)),
        }
    };
    let checked = match want {
        Some(k) => is_still(dir, &tmp, k),
        None => Ok(()),
    }
    .and_then(|()| is_still(dir, name, member));
    let done = checked.and_then(|()| platform::rename_at(dir.dir(), &tmp, name).map_err(Skip::Os));
    if done.is_err() {
        let _ = platform::remove_at(dir.dir(), &tmp, false);
    }
    done
}

/// The token chain of directory `d` from its root down.
fn chain(found: &Found, mut d: u32) -> Vec<u32> {
    let mut out = Vec::new();
    while d != NO_DIR {
        out.push(d);
        d = found.dirs[d as usize].parent;
    }
    out.reverse();
    out
}

/// What a symlink replacing `member` points at: a path relative to the member's
/// directory when both are under one root (the tree can move and the links hold),
/// else the kept file's absolute path.
pub fn symlink_target(found: &Found, member: &FileRec, kept: &FileRec) -> Vec<u8> {
    let (mc, kc) = (chain(found, member.dir), chain(found, kept.dir));
    if member.dir != ARGS_DIR && kept.dir != ARGS_DIR && mc[0] == kc[0] {
        let common = mc.iter().zip(&kc).take_while(|(a, b)| a == b).count();
        let mut t = Vec::new();
        for _ in common..mc.len() {
            t.extend_from_slice(b"../");
        }
        for &d in &kc[common..] {
            t.extend_from_slice(found.dir_name(d));
            t.push(b'/');
        }
        t.extend_from_slice(found.file_name(kept));
        return t;
    }
    let mut p = Vec::new();
    found.file_path(kept, &mut p);
    if p.starts_with(b"/") {
        return p;
    }
    let here = std::env::current_dir().map(|d| crate::meta::os_bytes(d.as_os_str())).unwrap_or_default();
    let mut abs = here;
    if !abs.ends_with(b"/") {
        abs.push(b'/');
    }
    abs.extend_from_slice(p.strip_prefix(b"./").unwrap_or(&p));
    abs
}

fn human(n: u64) -> String {
    crate::text::units::format_size(n, crate::text::units::Scale::human(true))
}

impl Report {
    /// The action lines, a block per group: `keep: PATH`, then one line per name of the
    /// others (`delete: PATH`, `hardlink: PATH`, `symlink: PATH -> TARGET`, or `skip:
    /// PATH (why)`), a blank line after each block. With `quote`, paths as `ls` shows
    /// them on a terminal.
    pub fn write_lines(&self, out: &mut impl std::io::Write, quote: bool) -> std::io::Result<()> {
        let shown = |p: &[u8]| if quote { crate::text::quote::quotef(p).into_bytes() } else { p.to_vec() };
        let mut last = usize::MAX;
        for step in &self.steps {
            if step.group != last {
                if last != usize::MAX {
                    out.write_all(b"\n")?;
                }
                last = step.group;
                out.write_all(b"keep: ")?;
                out.write_all(&shown(&self.kept[step.group]))?;
                out.write_all(b"\n")?;
            }
            match step.result {
                Ok(()) => write!(out, "{}: ", step.verb)?,
                Err(_) => out.write_all(b"skip: ")?,
            }
            out.write_all(&shown(&step.path))?;
            match (step.result, &step.target) {
                (Err(why), _) => write!(out, " ({})", why.text())?,
                (Ok(()), Some(t)) => {
                    out.write_all(b" -> ")?;
                    out.write_all(&shown(t))?;
                }
                _ => {}
            }
            out.write_all(b"\n")?;
        }
        if last != usize::MAX {
            out.write_all(b"\n")?;
        }
        Ok(())
    }

    /// The `"actions"` array and `"act"` summary members of the JSON document.
    pub fn json(&self, dry_run: bool) -> String {
        let mut s = String::from("\"actions\":[");
        for (i, step) in self.steps.iter().enumerate() {
            if i > 0 {
                s.push(',');
            }
            s.push_str(&format!("\n{{\"action\":\"{}\",\"kept\":", step.verb));
            crate::text::quote::json_str(&mut s, step.kept_file.as_ref().unwrap_or(&self.kept[step.group]));
            s.push_str(",\"path\":");
            crate::text::quote::json_str(&mut s, &step.path);
            if let Some(t) = &step.target {
                s.push_str(",\"target\":");
                crate::text::quote::json_str(&mut s, t);
            }
            match step.result {
                Ok(()) => s.push_str(",\"done\":true"),
                Err(why) => {
                    s.push_str(",\"done\":false,\"skipped\":");
                    crate::text::quote::json_str(&mut s, why.text().as_bytes());
                }
            }
            s.push('}');
        }
        s.push_str(&format!(
            "],\n\"act\":{{\"dry_run\":{dry_run},\"groups_acted\":{},\"done\":{},\"skipped\":{},\"bytes\":{},\"free_before\":{},\"free_after\":{}}}",
            self.groups_acted(),
            self.steps.len() - self.skipped(),
            self.skipped(),
            self.bytes(),
            self.free_before,
            self.free_after
        ));
        s
    }

    /// Bytes of duplicates no longer taking space of their own (in a dry run: that would).
    pub fn bytes(&self) -> u64 {
        self.steps.iter().filter(|s| s.result.is_ok()).map(|s| s.bytes).sum()
    }

    /// The summary on standard error: what was done, the free space gained, what was
    /// skipped and why.
    pub fn text(&self, cmd: &str, dry_run: bool) -> String {
        let mut by_verb: Vec<(&str, usize)> = Vec::new();
        for step in self.steps.iter().filter(|s| s.result.is_ok()) {
            match by_verb.iter_mut().find(|(v, _)| *v == step.verb) {
                Some((_, n)) => *n += 1,
                None => by_verb.push((step.verb, 1)),
            }
        }
        let past = |verb: &str| match verb {
            "delete" => "deleted",
            "hardlink" => "replaced by hard links",
            "symlink" => "replaced by symbolic links",
            _ => "emptied directories removed",
        };
        let done: Vec<String> = by_verb.iter().map(|&(v, n)| format!("{n} {}", past(v))).collect();
        let done = if done.is_empty() { "nothing done".to_string() } else { done.join(", ") };
        let groups = self.groups_acted();
        let mut s = format!(
            "{cmd}: {}{done} in {} acted on, {} bytes ({}) of duplicates",
            if dry_run { "would be: " } else { "" },
            if groups == 1 { "1 group".to_string() } else { format!("{groups} groups") },
            self.bytes(),
            human(self.bytes())
        );
        if dry_run {
            s.push_str("; dry run: nothing was changed");
        } else if self.free_known {
            let gained = self.free_after.saturating_sub(self.free_before);
            s.push_str(&format!("; free space {gained} bytes ({}) more (statfs)", human(gained)));
        }
        s.push('\n');
        let mut why: Vec<(String, usize)> = Vec::new();
        for step in self.steps.iter().filter_map(|s| s.result.err()) {
            match why.iter_mut().find(|(t, _)| *t == step.text()) {
                Some((_, n)) => *n += 1,
                None => why.push((step.text(), 1)),
            }
        }
        for (text, n) in why {
            s.push_str(&format!("{cmd}: {n} skipped: {text}\n"));
        }
        s
    }
}

/// Each directory's files and subdirectories (indices into `Found::files`, tokens).
struct Kids {
    files: Vec<Vec<u32>>,
    dirs: Vec<Vec<u32>>,
}

impl Kids {
    fn of(found: &Found) -> Kids {
        let n = found.dirs.len();
        let mut k = Kids { files: vec![Vec::new(); n], dirs: vec![Vec::new(); n] };
        for (i, f) in found.files.iter().enumerate() {
            k.files[f.dir as usize].push(i as u32);
        }
        for (d, rec) in found.dirs.iter().enumerate() {
            if rec.parent != NO_DIR {
                k.dirs[rec.parent as usize].push(d as u32);
            }
        }
        k
    }

    /// The files below `top` with their paths relative to it, and its directories,
    /// parents before children (`top` first).
    fn below(&self, found: &Found, top: u32) -> (Vec<(Vec<u8>, u32)>, Vec<u32>) {
        let (mut files, mut dirs) = (Vec::new(), Vec::new());
        let mut todo = vec![(top, Vec::new())];
        while let Some((d, rel)) = todo.pop() {
            dirs.push(d);
            for &f in &self.files[d as usize] {
                let mut p = rel.clone();
                p.extend_from_slice(found.file_name(&found.files[f as usize]));
                files.push((p, f));
            }
            for &c in &self.dirs[d as usize] {
                let mut p = rel.clone();
                p.extend_from_slice(found.dir_name(c));
                p.push(b'/');
                todo.push((c, p));
            }
        }
        (files, dirs)
    }
}

/// `--dirs`: acts on whole directories. The kept tree's files are the kept files: a
/// member tree's files are deleted (`--delete`, `--symlink`) or hard-linked (`--hardlink`)
/// one by one with every check of a file action, after a first pass that checks them all
/// and leaves the tree alone when one fails. Then, for `--delete` and `--symlink`, its
/// directories, empty now, are removed from the bottom up (`rmdir` cannot remove one a
/// file came into meanwhile), and `--symlink` puts a link to the kept directory in its
/// place. Keep rules compare a tree's oldest file for `oldest` and `newest`.
pub fn run_dirs(handles: &Handles, groups: &[super::dirs::DirGroup], opts: &Options) -> Report {
    let found = handles.found();
    let kids = Kids::of(found);
    let mut r = Report { dirs: true, ..Report::default() };
    let mut ctimes: HashMap<(u64, u64), i64> = HashMap::new();
    let mut fs_files: HashMap<u64, File> = HashMap::new();
    for (gi, g) in groups.iter().enumerate() {
        let trees: Vec<_> = g.dirs.iter().map(|&d| kids.below(found, d)).collect();
        let oldest = |m: usize| trees[m].0.iter().map(|&(_, f)| found.files[f as usize].mtime_ns).min().unwrap_or(0);
        let k = choose_among(&g.paths, &oldest, opts.keep, opts.args);
        r.kept.push(g.paths[k].clone());
        r.sizes.push(g.size);
        let kept: HashMap<&[u8], u32> = trees[k].0.iter().map(|(p, f)| (p.as_slice(), *f)).collect();
        if let Some(&(_, f)) = trees[k].0.first() {
            let rec = &found.files[f as usize];
            if let (false, Ok(file)) = (fs_files.contains_key(&rec.dev), handles.open(rec)) {
                if let Some(free) = platform::free_bytes(&file) {
                    (r.free_before, r.free_known) = (r.free_before + free, true);
                    fs_files.insert(rec.dev, file);
                }
            }
        }
        for (m, &d) in g.dirs.iter().enumerate() {
            if m != k {
                let (path, kept_dir, kept_path, files) = (&g.paths[m], g.dirs[k], &g.paths[k], &trees[m].0);
                let tree = DirMember { group: gi, dir: d, path, kept_dir, kept_path, files };
                act_on_dir(handles, opts, &tree, &trees[m].1, &kept, &mut ctimes, &mut r);
            }
        }
    }
    if r.free_known && !opts.dry_run {
        match super::dedupe::free_now(fs_files.values()) {
            Some(free) => r.free_after = free,
            None => r.free_known = false,
        }
    }
    r
}

/// One member directory of a `--dirs` group.
struct DirMember<'a> {
    group: usize,
    dir: u32,
    path: &'a [u8],
    kept_dir: u32,
    kept_path: &'a [u8],
    /// Its files, by path relative to it.
    files: &'a [(Vec<u8>, u32)],
}

/// One member directory: its files in two passes, then its directories.
fn act_on_dir(
    handles: &Handles,
    opts: &Options,
    m: &DirMember,
    dirs: &[u32],
    kept: &HashMap<&[u8], u32>,
    ctimes: &mut HashMap<(u64, u64), i64>,
    r: &mut Report,
) {
    let found = handles.found();
    let action = if opts.action == Action::Hardlink { Action::Hardlink } else { Action::Delete };
    let now_of = |ctimes: &HashMap<(u64, u64), i64>, f: u32| {
        let rec = found.files[f as usize];
        FileRec { ctime_ns: *ctimes.get(&(rec.dev, rec.ino)).unwrap_or(&rec.ctime_ns), ..rec }
    };
    let mut steps = Vec::new();
    for dry_run in [true, opts.dry_run] {
        let pass = Options { action, dry_run, ..*opts };
        for (rel, f) in m.files {
            let Some(&kf) = kept.get(rel.as_slice()) else {
                return r.steps.push(dir_step(m, opts.action.verb(), Err(Skip::Differs)));
            };
            let now = Now { kept: now_of(ctimes, kf), member: now_of(ctimes, *f) };
            let result = act_on(handles, &pass, &now, None);
            if let (false, Ok((kc, mc))) = (dry_run, result) {
                ctimes.insert((now.kept.dev, now.kept.ino), kc);
                ctimes.insert((now.member.dev, now.member.ino), mc);
            }
            if let Err(why) = result {
                r.steps.append(&mut steps);
                return r.steps.push(dir_step(m, opts.action.verb(), Err(why)));
            }
            if !dry_run || opts.dry_run {
                let below = |top: &[u8]| [top, b"/", rel].concat();
                let (path, kept_file) = (below(m.path), Some(below(m.kept_path)));
                let bytes = found.files[*f as usize].size;
                let verb = action.verb();
                steps.push(Step { group: m.group, verb, path, target: None, result: Ok(()), bytes, kept_file });
            }
        }
        if dry_run && opts.dry_run {
            break;
        }
    }
    r.steps.append(&mut steps);
    if opts.action != Action::Hardlink {
        remove_dirs(handles, opts, m, dirs, r);
    }
}

fn dir_step(m: &DirMember, verb: &'static str, result: Result<(), Skip>) -> Step {
    Step { group: m.group, verb, path: m.path.to_vec(), target: None, result, bytes: 0, kept_file: None }
}

/// The emptied directories of a member tree, deepest first, then (`--symlink`) the link
/// to the kept directory in the member's place.
fn remove_dirs(handles: &Handles, opts: &Options, m: &DirMember, dirs: &[u32], r: &mut Report) {
    let found = handles.found();
    for &d in dirs.iter().rev() {
        let mut path = Vec::new();
        found.dir_path(d, &mut path);
        let result = if opts.dry_run { Ok(()) } else { rmdir(handles, d) };
        r.steps.push(Step { path, ..dir_step(m, "rmdir", result) });
        if result.is_err() {
            return;
        }
    }
    if opts.action == Action::Symlink {
        let target = dir_link_target(found, m.dir, m.kept_dir);
        let result = if opts.dry_run { Ok(()) } else { link_dir(handles, m.dir, &target) };
        r.steps.push(Step { group: m.group, verb: "symlink", target: Some(target), ..dir_step(m, "symlink", result) });
    }
}

fn rmdir(handles: &Handles, d: u32) -> Result<(), Skip> {
    let (parent, name) = handles.dir_parent(d).map_err(refused)?;
    let name = CString::new(name).map_err(|_| Skip::Os(Errno::INVAL))?;
    let rec = &handles.found().dirs[d as usize];
    is_still_as(&parent, &name, Kind::Dir, (rec.dev, rec.ino))?;
    platform::remove_at(parent.dir(), &name, true).map_err(Skip::Os)
}

fn link_dir(handles: &Handles, d: u32, target: &[u8]) -> Result<(), Skip> {
    let (parent, name) = handles.dir_parent(d).map_err(refused)?;
    let name = CString::new(name).map_err(|_| Skip::Os(Errno::INVAL))?;
    let target = CString::new(target).map_err(|_| Skip::Os(Errno::INVAL))?;
    platform::symlink_at(&target, parent.dir(), &name).map_err(Skip::Os)
}

/// What a symlink in place of directory `d` points at: `kept` relative to `d`'s parent
/// when both are under one root, else `kept`'s absolute path.
fn dir_link_target(found: &Found, d: u32, kept: u32) -> Vec<u8> {
    let (dc, kc) = (chain(found, d), chain(found, kept));
    let mut t = Vec::new();
    if dc[0] == kc[0] && dc.len() > 1 {
        let common = dc.iter().zip(&kc).take_while(|(a, b)| a == b).count();
        for _ in common..dc.len() - 1 {
            t.extend_from_slice(b"../");
        }
        for &x in &kc[common..] {
            t.extend_from_slice(found.dir_name(x));
            t.push(b'/');
        }
        t.pop();
        if !t.is_empty() {
            return t;
        }
    }
    found.dir_path(kept, &mut t);
    if t.starts_with(b"/") {
        return t;
    }
    let mut abs = std::env::current_dir().map(|d| crate::meta::os_bytes(d.as_os_str())).unwrap_or_default();
    abs.push(b'/');
    abs.extend_from_slice(&t);
    abs
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(name: &str) -> std::path::PathBuf {
        let dir = std::env::temp_dir().join(format!("dfdu-dupes-act-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    /// The compare reads both files to their ends: a difference in the last byte of a
    /// file of several reads counts, and so does a file longer than the size expected.
    #[test]
    fn same_bytes_compares_every_byte_to_the_end() {
        let dir = scratch("compare");
        let data: Vec<u8> = (0..200_000u32).map(|i| (i * 7 % 251) as u8).collect();
        let mut last = data.clone();
        *last.last_mut().unwrap() ^= 1;
        let (a, b, c) = (dir.join("a"), dir.join("b"), dir.join("c"));
        std::fs::write(&a, &data).unwrap();
        std::fs::write(&b, &data).unwrap();
        std::fs::write(&c, &last).unwrap();
        let open = |p: &std::path::Path| File::open(p).unwrap();
        let size = data.len() as u64;
        assert_eq!(same_bytes(&mut open(&a), &mut open(&b), size), Ok(true));
        assert_eq!(same_bytes(&mut open(&a), &mut open(&c), size), Ok(false));
        assert_eq!(same_bytes(&mut open(&a), &mut open(&b), size - 1), Ok(false));
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// `--keep-path` and `first-arg` take whole names: `/srv/d` is not under `/srv/d2`.
    #[test]
    fn under_a_path_means_the_path_or_below_it() {
        assert!(is_under(b"/srv/d/x", b"/srv/d"));
        assert!(is_under(b"/srv/d/x", b"/srv/d/"));
        assert!(is_under(b"/srv/d", b"/srv/d"));
        assert!(!is_under(b"/srv/d2/x", b"/srv/d"));
        assert!(!is_under(b"/srv/x", b"/srv/d"));
        assert!(is_under(b"/srv/x", b"/"));
        assert_eq!(arg_of(b"b/x", &[b"a".to_vec(), b"b".to_vec()]), 1);
        assert_eq!(arg_of(b"c/x", &[b"a".to_vec()]), usize::MAX);
    }

    #[test]
    fn keep_rules_parse_and_refuse_unknown_words() {
        assert_eq!(parse_keep("oldest,shortest,first-arg"), Ok(vec![Keep::Oldest, Keep::Shortest, Keep::FirstArg]));
        assert_eq!(parse_keep("newest,largest"), Err("largest".to_string()));
        assert_eq!(parse_keep(""), Err(String::new()));
    }
}
