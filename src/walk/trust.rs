//! Whether a file that other users might have written may be trusted, judged as ssh's
//! `StrictModes` judges `authorized_keys` (DESIGN, "Running as root"): the one rule for
//! the hash file and `--plan`'s script (`dupes/cache.rs`) and for the config files
//! (`config.rs`). The path is walked one name at a time (`platform::open_write_dir`), and
//! each step is judged from the owners of the directory the name is looked up in and of
//! what it names; then the directory reached and the file in it.
//!
//! A directory is trusted when it is the user's or root's and others may not write it,
//! unless it is sticky (as `/tmp` is: there only an entry's owner may replace it). What
//! the file is for sets how strict the rest is (`Use`).

use crate::meta::Kind;
use crate::platform::{self, Owner, WalkError, WriteDir};
use std::ffi::{OsStr, OsString};
use std::fs::File;
use std::path::Path;

const GROUP_OTHER_WRITE: u32 = 0o022;
const STICKY: u32 = 0o1000;

/// What dfdu does with the file, which decides how strict the judge is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Use {
    /// A file dfdu writes (the hash file, `--plan`'s script): it must be the user's own.
    /// On the way to it a name may be another user's where only root and the user may
    /// change the directory holding it.
    Write,
    /// A file dfdu only reads (a config file): it may be root's as well, and every step
    /// on the way to it must be the user's or root's.
    Read,
}

/// The judge for one path.
#[derive(Clone, Copy, Debug)]
pub struct Judge {
    euid: u32,
    uses: Use,
}

impl Judge {
    /// The judge for this process; `None` where the OS has no Unix owners (there is
    /// nothing to judge by).
    pub fn new(uses: Use) -> Option<Judge> {
        platform::effective_uid().map(|euid| Judge { euid, uses })
    }

    fn ours(&self, uid: u32) -> bool {
        uid == self.euid || uid == 0
    }

    /// Why a directory is not trusted to hold what it holds: it is neither the user's
    /// nor root's, or others may write it and it is not sticky, so whoever may write it
    /// can put any file under any name in it.
    fn distrust_dir(&self, dir: Owner) -> Option<String> {
        if !self.ours(dir.uid) {
            return Some(format!("belongs to uid {}", dir.uid));
        }
        if dir.mode & GROUP_OTHER_WRITE != 0 && dir.mode & STICKY == 0 {
            return Some(format!("is writable by others (mode {:04o}) and not sticky", dir.mode));
        }
        None
    }

    /// Why one step on the way (the name `entry_path`, found in `dir`) is not trusted:
    /// `dir` is not (see `distrust_dir`), or the name is another user's where that
    /// matters: always for `Use::Read`, in a (sticky) directory others may write for
    /// `Use::Write` (they may replace what it is). The judge `open_write_dir` asks.
    pub fn step(&self, entry_path: &Path, dir: Owner, entry: Owner) -> Option<String> {
        let parent = entry_path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
        if let Some(why) = self.distrust_dir(dir) {
            return Some(format!("'{}' on its path {why}", parent.display()));
        }
        let matters = self.uses == Use::Read || dir.mode & GROUP_OTHER_WRITE != 0;
        if matters && !self.ours(entry.uid) {
            let place = if self.uses == Use::Read { "" } else { " in a directory others may write" };
            return Some(format!("'{}' on its path belongs to uid {}{place}", entry_path.display(), entry.uid));
        }
        None
    }

    /// Why the file (`file`, `None` before it is opened) in the directory reached (`dir`)
    /// is not trusted: the directory is not, or the file belongs to someone else (root
    /// too, for `Use::Write`) or others may write it.
    pub fn file(&self, dir: Owner, file: Option<Owner>) -> Option<String> {
        if let Some(why) = self.distrust_dir(dir) {
            return Some(format!("its directory {why}"));
        }
        let file = file?;
        match self.uses {
            Use::Write if file.uid != self.euid => {
                return Some(format!("it belongs to uid {}, not to uid {}", file.uid, self.euid))
            }
            Use::Read if !self.ours(file.uid) => return Some(format!("it belongs to uid {}", file.uid)),
            _ => {}
        }
        if file.mode & GROUP_OTHER_WRITE != 0 {
            return Some(format!("it is writable by others (mode {:04o})", file.mode));
        }
        None
    }
}

/// Opens the directory `path` name by name, each step judged by `judge` (`None`: no
/// owners, nothing refused).
pub fn open_dir(path: &Path, judge: Option<Judge>) -> Result<WriteDir, WalkError> {
    platform::open_write_dir(path, &mut |p, d, e| judge.and_then(|j| j.step(p, d, e)))
}

/// The directory to open and the name in it; `None` for a path that names no file.
pub fn split(path: &Path) -> Option<(&Path, &OsStr)> {
    let name = path.file_name()?;
    let dir = path.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
    Some((dir, name))
}

/// A file written in the place of another as it goes (`scan -o`, `--treemap`): a new file
/// of ours beside it, which `commit` renames over the old one (another user's file there,
/// or a hard link to one elsewhere, is replaced, never written through); a device or a
/// FIFO at the name is written into. Dropped uncommitted, the new file is removed.
pub struct Replacement {
    dir: WriteDir,
    name: OsString,
    temp: Option<OsString>,
    pub file: File,
}

/// Mode of a replacement before the umask, as a plain `creat` would give it.
const REPLACEMENT_MODE: u32 = 0o666;

/// Starts the `Replacement` of `path`, its directory reached and judged as for any file
/// dfdu writes (`Use::Write`); `Err` says why not, in words for "cannot write PATH: ...".
pub fn replace(path: &Path) -> Result<Replacement, String> {
    let (dir_path, name) = split(path).ok_or_else(|| "it names no file".to_string())?;
    let dir = match open_dir(dir_path, Judge::new(Use::Write)) {
        Ok(d) => d,
        Err(WalkError::Refused(why)) => return Err(format!("not safe to create: {why}")),
        Err(WalkError::Os(e)) => return Err(platform::errno_text(e)),
    };
    // What has the name now is replaced only if it is a regular file: a symlink is not
    // followed (nor replaced), and a device or FIFO (`/dev/null`, a pipe to a reader) is
    // written into where it is, never renamed over.
    let name_os = name.to_os_string();
    match platform::entry_at(&dir, name).map_err(platform::errno_text)?.map(|c| c.kind) {
        Some(Kind::Symlink) => Err("it is a symbolic link (not followed)".into()),
        Some(Kind::Dir) => Err("it is a directory".into()),
        Some(Kind::File) | None => {
            let (file, temp) = platform::create_temp_in(&dir, name, REPLACEMENT_MODE).map_err(platform::errno_text)?;
            Ok(Replacement { dir, name: name_os, temp: Some(temp), file })
        }
        Some(_) => {
            let file = platform::open_write_in(&dir, name).map_err(platform::errno_text)?;
            Ok(Replacement { dir, name: name_os, temp: None, file })
        }
    }
}

impl Replacement {
    /// Puts the new file in place (a device or FIFO was written where it is).
    pub fn commit(mut self) -> Result<(), String> {
        match self.temp.take() {
            Some(temp) => platform::rename_in(&self.dir, &temp, &self.name).map_err(platform::errno_text),
            None => Ok(()),
        }
    }
}

impl Drop for Replacement {
    fn drop(&mut self) {
        if let Some(temp) = self.temp.take() {
            let _ = platform::remove_in(&self.dir, &temp);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn o(uid: u32, mode: u32) -> Owner {
        Owner { uid, mode }
    }

    /// Trust as ssh's StrictModes: the directory the user's or root's and not writable by
    /// others unless sticky; the file the user's and not writable by others.
    #[test]
    fn hashfile_trust_follows_ownership() {
        let (me, other) = (1000, 1001);
        let judge = |uid| Judge { euid: uid, uses: Use::Write };
        let file = |d, f, uid| judge(uid).file(d, f);
        assert_eq!(file(o(me, 0o755), Some(o(me, 0o600)), me), None);
        assert_eq!(file(o(0, 0o755), Some(o(me, 0o644)), me), None);
        assert_eq!(file(o(0, 0o1777), Some(o(me, 0o600)), me), None);
        assert_eq!(file(o(me, 0o1770), None, me), None);
        assert_eq!(file(o(0, 0o755), None, 0), None);
        let why = |d, f, uid| file(d, f, uid).unwrap_or_default();
        assert_eq!(why(o(other, 0o755), Some(o(me, 0o600)), me), "its directory belongs to uid 1001");
        assert_eq!(why(o(other, 0o1777), None, me), "its directory belongs to uid 1001");
        assert_eq!(why(o(me, 0o775), None, me), "its directory is writable by others (mode 0775) and not sticky");
        assert_eq!(why(o(0, 0o757), None, me), "its directory is writable by others (mode 0757) and not sticky");
        assert_eq!(why(o(me, 0o700), Some(o(other, 0o600)), me), "it belongs to uid 1001, not to uid 1000");
        assert_eq!(why(o(me, 0o700), Some(o(0, 0o600)), me), "it belongs to uid 0, not to uid 1000");
        assert_eq!(why(o(me, 0o700), Some(o(me, 0o620)), me), "it is writable by others (mode 0620)");
        assert_eq!(why(o(me, 0o700), Some(o(me, 0o602)), me), "it is writable by others (mode 0602)");
    }

    /// A step on the way: the directory judged as `distrust_dir`, and in a sticky
    /// directory others may write, the name must be the user's or root's.
    #[test]
    fn hashfile_steps_on_its_path() {
        let step = |p: &str, d, e| Judge { euid: 1000, uses: Use::Write }.step(Path::new(p), d, e);
        assert_eq!(step("/home", o(0, 0o755), o(0, 0o755)), None);
        assert_eq!(step("/home/al/c", o(1000, 0o700), o(1001, 0o755)), None);
        assert_eq!(step("/tmp/mine", o(0, 0o1777), o(1000, 0o700)), None);
        assert_eq!(step("/tmp/root", o(0, 0o1777), o(0, 0o755)), None);
        assert_eq!(step("/srv/x", o(1001, 0o755), o(0, 0o755)).unwrap(), "'/srv' on its path belongs to uid 1001");
        assert_eq!(
            step("x/y", o(0, 0o777), o(0, 0o755)).unwrap(),
            "'x' on its path is writable by others (mode 0777) and not sticky"
        );
        assert_eq!(
            step("y", o(1000, 0o775), o(1000, 0o755)).unwrap(),
            "'.' on its path is writable by others (mode 0775) and not sticky"
        );
        assert_eq!(
            step("/tmp/evil", o(0, 0o1777), o(1001, 0o777)).unwrap(),
            "'/tmp/evil' on its path belongs to uid 1001 in a directory others may write"
        );
        // Sticky but writable by no one else: its names are as safe as in any directory.
        assert_eq!(step("/d/x", o(1000, 0o1755), o(1001, 0o755)), None);
    }

    /// A file dfdu only reads: every step the user's or root's wherever it is, and the
    /// file may be root's (`/etc/dfdu/config`) but no one else's.
    #[test]
    fn config_steps_and_file_are_the_users_or_roots() {
        let read = Judge { euid: 1000, uses: Use::Read };
        let step = |p: &str, d, e| read.step(Path::new(p), d, e);
        assert_eq!(step("/etc/dfdu", o(0, 0o755), o(0, 0o755)), None);
        assert_eq!(step("/home/me", o(0, 0o755), o(1000, 0o700)), None);
        assert_eq!(step("/tmp/mine", o(0, 0o1777), o(1000, 0o700)), None);
        // Where the hash file's rule lets a name be anyone's (no one else may write the
        // directory), a config's is refused all the same.
        assert_eq!(
            step("/home/al", o(0, 0o755), o(1001, 0o755)).unwrap(),
            "'/home/al' on its path belongs to uid 1001"
        );
        assert_eq!(step("/srv/x", o(1001, 0o755), o(0, 0o755)).unwrap(), "'/srv' on its path belongs to uid 1001");
        assert_eq!(
            step("/w/x", o(0, 0o777), o(0, 0o755)).unwrap(),
            "'/w' on its path is writable by others (mode 0777) and not sticky"
        );
        let file = |d, f| read.file(d, Some(f));
        assert_eq!(file(o(0, 0o755), o(0, 0o644)), None);
        assert_eq!(file(o(1000, 0o700), o(1000, 0o600)), None);
        assert_eq!(file(o(1000, 0o700), o(1001, 0o644)).unwrap(), "it belongs to uid 1001");
        assert_eq!(file(o(1000, 0o700), o(1000, 0o666)).unwrap(), "it is writable by others (mode 0666)");
        assert_eq!(
            file(o(1000, 0o777), o(1000, 0o600)).unwrap(),
            "its directory is writable by others (mode 0777) and not sticky"
        );
    }

    #[test]
    fn hashfile_path_split_into_directory_and_name() {
        fn parts(p: &str) -> Option<(&str, &str)> {
            split(Path::new(p)).map(|(d, n)| (d.to_str().unwrap(), n.to_str().unwrap()))
        }
        assert_eq!(parts("h"), Some((".", "h")));
        assert_eq!(parts("a/b/h"), Some(("a/b", "h")));
        assert_eq!(parts("/h"), Some(("/", "h")));
        assert_eq!(parts("a/h/"), Some(("a", "h")));
        assert_eq!(parts("/"), None);
        assert_eq!(parts("a/.."), None);
    }
}
