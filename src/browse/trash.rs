//! Moving what the browser shows to the freedesktop.org Trash (the Trash specification
//! 1.0) instead of deleting it.
//!
//! # Where an entry goes
//!
//! * On the file system of the home trash (`$XDG_DATA_HOME/Trash`, else
//!   `$HOME/.local/share/Trash`; made if missing): there.
//! * Elsewhere: `$topdir/.Trash-$uid`, `$topdir` the mount point of the entry's file
//!   system (from the mount table), made mode 0700 if missing. It must be a directory of
//!   ours that nobody else may write, or nothing goes there.
//! * Nowhere else: an entry whose file system has neither is refused with the reason.
//!
//! # How it stays safe
//!
//! * Nothing is copied: the entry moves by one `rename` that never replaces anything
//!   (`platform::move_into`) and fails across file systems.
//! * The entry is reached as a delete reaches it: its directory through handles from the
//!   scan root, each checked against the scan (`delete::open_chain`); a directory is
//!   checked itself too, and one that is a mount root is left alone.
//! * The trash's directories are opened one name at a time without following what
//!   another user could have swapped (`platform::open_write_dir`), and its files are made
//!   with `O_EXCL|O_NOFOLLOW`: first `info/NAME.trashinfo` (reserving the name), then the
//!   move to `files/NAME`; if the move fails, the info file goes again.
//! * What moved leaves the tree and the totals (`Arena::remove`), as a delete's removals
//!   do; a hard-linked file's other name in the tree carries its sizes from then on.

use super::delete::{cname, open_chain, Links, Progress, Why};
use crate::meta::Errno;
use crate::platform::{self, Follow, Owner, WriteDir};
use crate::tree::arena::Arena;
use crate::tree::path::child_path;
use std::collections::HashMap;
use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;

/// How many names (`NAME`, `NAME.2`, ...) are tried in one trash before giving up.
const MAX_NAME_TRIES: u32 = 1000;

/// Where the trashes are, as the environment says when the browser starts.
#[derive(Clone, Debug, Default)]
pub struct Place {
    /// The home trash's path.
    pub home: Option<PathBuf>,
    pub uid: u32,
}

impl Place {
    /// From `XDG_DATA_HOME` or `HOME` and the effective user.
    pub fn from_env() -> Place {
        let data = std::env::var_os("XDG_DATA_HOME").filter(|v| Path::new(v).is_absolute()).map(PathBuf::from);
        let data = data.or_else(|| std::env::var_os("HOME").map(|h| Path::new(&h).join(".local/share")));
        Place { home: data.map(|d| d.join("Trash")), uid: platform::effective_uid().unwrap_or(0) }
    }
}

/// One trash directory: its `files` and `info`, and the device they are on.
struct Can {
    files: WriteDir,
    info: WriteDir,
    dev: u64,
}

/// Moves each (directory, entry) of `targets` to the trash of its file system,
/// reporting into `p` (`removed` counts the items that left the tree).
pub fn trash_all(a: &Arena, targets: &[(u32, u32)], place: &Place, p: &Progress) {
    let mut cans: HashMap<u64, Result<Can, String>> = HashMap::new();
    let mut links = Links::default();
    for &(dir, id) in targets {
        if a.removed(id) || !a.dir_live(dir) {
            continue;
        }
        if let Err(why) = trash_one(a, (dir, id), place, (&mut cans, &mut links), p) {
            p.fail(a, dir, id, why);
        }
    }
    p.done.store(true, Ordering::Release);
}

fn trash_one(
    a: &Arena,
    (dir, id): (u32, u32),
    place: &Place,
    (cans, links): (&mut HashMap<u64, Result<Can, String>>, &mut Links),
    p: &Progress,
) -> Result<(), Why> {
    let (base, _) = open_chain(a, dir)?;
    let mut name = Vec::new();
    a.child_name(dir, id, &mut name);
    let cn = cname(name.clone());
    let is_dir = a.kind(id) == crate::meta::Kind::Dir;
    if is_dir {
        let sub = a.dir_of(id);
        let h = platform::open_at(&base.handle, &cn, Follow::No).map_err(Why::Os)?;
        if platform::dir_id(&h).map_err(Why::Os)? != (a.dir_dev(sub), a.dir_ino(sub)) {
            return Err(Why::Changed);
        }
        if platform::dir_mount(&h).map_err(Why::Os)?.1 {
            return Err(Why::MountPoint);
        }
    } else if platform::stat_at(&base.handle, &cn, Follow::No).map_err(Why::Os)?.kind == crate::meta::Kind::Dir {
        // A file that became a directory since the scan is not the entry the user chose.
        return Err(Why::Changed);
    }
    let dev = a.dir_dev(dir);
    let abs = absolute(&child_path(a, dir, id));
    // A rename would take the mounts inside along: a delete leaves them alone instead.
    if is_dir && super::delete::mounts_under(&abs).is_some_and(|n| n > 0) {
        return Err(Why::NoTrash("it holds a mount point, which a move would take along; left in place".into()));
    }
    let can = cans.entry(dev).or_insert_with(|| open_can(place, dev, &abs));
    let can = can.as_ref().map_err(|why| Why::NoTrash(why.clone()))?;
    let items = if is_dir { a.dir_totals(a.dir_of(id)).2 + 1 } else { 1 };
    let info = trash_info(&abs, unix_now());
    for k in 1..=MAX_NAME_TRIES {
        let mut as_name = crate::meta::os_string(&name);
        if k > 1 {
            as_name.push(format!(".{k}"));
        }
        let mut info_name = as_name.clone();
        info_name.push(".trashinfo");
        let mut f = match platform::open_at_nofollow(&can.info, &info_name, true) {
            Ok(f) => f,
            Err(Errno::EXIST) => continue,
            Err(e) => {
                return Err(Why::NoTrash(format!("cannot write the trash's info file: {}", platform::errno_text(e))))
            }
        };
        use std::io::Write;
        if let Err(e) = f.write_all(info.as_bytes()).and_then(|_| f.sync_all()) {
            let _ = platform::remove_in(&can.info, &info_name);
            return Err(Why::NoTrash(format!("cannot write the trash's info file: {e}")));
        }
        match platform::move_into(&base.handle, &cn, &can.files, &as_name) {
            Ok(()) => {
                // A further name of a moved file, still in the tree, now carries its sizes
                // (as for a delete): the data is still there.
                if !is_dir {
                    links.removed(a, id);
                }
                a.remove(dir, id);
                p.removed.fetch_add(items, Ordering::Relaxed);
                return Ok(());
            }
            Err(e) => {
                let _ = platform::remove_in(&can.info, &info_name);
                if e == Errno::EXIST {
                    continue;
                }
                return Err(Why::NoTrash(format!("not moved to the trash: {}", platform::errno_text(e))));
            }
        }
    }
    Err(Why::NoTrash("no free name in the trash".into()))
}

/// The trash for entries on device `dev`, `abs` being one of them: the home trash if
/// it is on that device, else `$topdir/.Trash-$uid`.
fn open_can(place: &Place, dev: u64, abs: &[u8]) -> Result<Can, String> {
    if let Some(home) = &place.home {
        // The home trash is the user's own: made as a plain directory if missing.
        let _ = std::fs::create_dir_all(home.join("files")).and_then(|_| std::fs::create_dir_all(home.join("info")));
        if let Ok(can) = open_trash(home, place.uid) {
            if can.dev == dev {
                return Ok(can);
            }
        }
    }
    let top = mount_point_of(abs).ok_or("no mount point is known for it, so it has no trash")?;
    let top_path = PathBuf::from(crate::meta::os_string(&top));
    let top_dir = platform::open_write_dir(&top_path, &mut |_, _, _| None)
        .map_err(|_| format!("its file system's top directory {} cannot be opened", crate::term::escape(&top)))?;
    let own = format!(".Trash-{}", place.uid);
    match platform::make_dir_in(&top_dir, OsStr::new(&own), 0o700) {
        Ok(()) | Err(Errno::EXIST) => {}
        Err(e) => {
            let top = crate::term::escape(&top);
            return Err(format!("no trash can be made on its file system ({top}/{own}: {})", platform::errno_text(e)));
        }
    }
    let trash = top_path.join(&own);
    for sub in ["files", "info"] {
        if let Ok(d) = platform::open_write_dir(&trash, &mut refuse_others(place.uid)) {
            let _ = platform::make_dir_in(&d, OsStr::new(sub), 0o700);
        }
    }
    let can = open_trash(&trash, place.uid)?;
    if can.dev != dev {
        return Err(format!("{} is on another file system: nothing is moved across", trash.display()));
    }
    Ok(can)
}

/// A walk's judge that refuses any step another user could have changed: a name owned
/// by someone else than root or `uid`, or looked up in a directory others may write
/// without the sticky bit.
fn refuse_others(uid: u32) -> impl FnMut(&Path, Owner, Owner) -> Option<String> {
    move |path: &Path, dir: Owner, what: Owner| {
        if what.uid != uid && what.uid != 0 {
            return Some(format!("{} belongs to another user", path.display()));
        }
        if dir.mode & 0o022 != 0 && dir.mode & 0o1000 == 0 && dir.uid != uid {
            return Some(format!("{} is in a directory others may write", path.display()));
        }
        None
    }
}

/// Opens `trash/files` and `trash/info`; the trash must be ours and closed to others.
fn open_trash(trash: &Path, uid: u32) -> Result<Can, String> {
    let open = |sub: &str| {
        let d = platform::open_write_dir(&trash.join(sub), &mut refuse_others(uid)).map_err(|e| match e {
            platform::WalkError::Refused(why) => why,
            platform::WalkError::Os(e) => format!("{}: {}", trash.join(sub).display(), platform::errno_text(e)),
        })?;
        match platform::write_dir_owner(&d) {
            Some(o) if o.uid != uid || o.mode & 0o022 != 0 => {
                Err(format!("{} is not a trash of ours (owner or mode)", trash.join(sub).display()))
            }
            _ => Ok(d),
        }
    };
    let (files, info) = (open("files")?, open("info")?);
    let dev = platform::write_dir_id(&files).map_err(platform::errno_text)?.0;
    Ok(Can { files, info, dev })
}

/// `path` (a path as the scan names it) made absolute from the current directory,
/// without resolving its last name.
fn absolute(path: &[u8]) -> Vec<u8> {
    let cut = path.iter().rposition(|&b| b == b'/');
    let (parent, name) = match cut {
        Some(0) => (b"/".to_vec(), &path[1..]),
        Some(c) => (path[..c].to_vec(), &path[c + 1..]),
        None => (b".".to_vec(), path),
    };
    let parent = std::fs::canonicalize(crate::meta::os_string(&parent))
        .map(|p| crate::meta::os_bytes(p.as_os_str()))
        .unwrap_or(parent);
    let mut abs = parent;
    if !abs.ends_with(b"/") {
        abs.push(b'/');
    }
    abs.extend_from_slice(name);
    abs
}

/// The mount point that holds `abs`: the longest one that is a whole-component prefix.
fn mount_point_of(abs: &[u8]) -> Option<Vec<u8>> {
    let points = platform::mount_points()?;
    let holds = |m: &Vec<u8>| {
        m.as_slice() == b"/" || abs.strip_prefix(m.as_slice()).is_some_and(|rest| rest.is_empty() || rest[0] == b'/')
    };
    points.into_iter().filter(|m| holds(m) && m.as_slice() != abs).max_by_key(|m| m.len())
}

fn unix_now() -> i64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs() as i64)
}

/// The `.trashinfo` text for `abs` trashed at `now` (local time, as the specification
/// asks), its path percent-encoded as a URI path.
pub(super) fn trash_info(abs: &[u8], now: i64) -> String {
    let mut path = String::new();
    for &b in abs {
        if b.is_ascii_alphanumeric() || b"/-_.~".contains(&b) {
            path.push(b as char);
        } else {
            path.push_str(&format!("%{b:02X}"));
        }
    }
    let date = match platform::local_time(now) {
        Some(t) => format!("{:04}-{:02}-{:02}T{:02}:{:02}:{:02}", t.year, t.month, t.day, t.hour, t.minute, t.second),
        None => "1970-01-01T00:00:00".into(),
    };
    format!("[Trash Info]\nPath={path}\nDeletionDate={date}\n")
}
