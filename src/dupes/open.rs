//! Opening the files `dupes` reads and `dedupe` shares without ever resolving a path
//! again: from the scan's roots down, each directory is opened relative to its parent's
//! handle with no-follow (`platform::open_at(.., false)`) and its (device, inode) must be
//! the one the scan recorded (`DirRec`); the file itself is opened by one name inside the
//! last handle with `platform::open_file_at`, which opens nothing but a regular file
//! (never a symlink, a device, a FIFO or a socket), and must have the scan's identity
//! too. A directory swapped for a symlink fails to open, one swapped for another
//! directory fails the check: the file is then `Refused::Changed`, never read. In a
//! directory whose entries someone besides root and this user may change, the file is
//! checked to be a regular file before it is opened to read (an `O_PATH` handle on
//! Linux); in one nobody else may change, nobody else can swap it, and it is opened
//! directly (two system calls fewer per file). A root is
//! opened the way the scan opened it (its path as given, last component not followed),
//! a file argument by its path as given (last component not followed), both checked.
//!
//! # Handles kept
//!
//! One cache of checked directory handles per run (`Handles`), shared by the workers and
//! keyed by the scan's directory token: at most `capacity` of them (the scan's handle
//! budget, idle once the scan is done), the oldest leaving first. A file whose directory
//! is cached costs one open; otherwise the walk starts at its nearest cached ancestor (or
//! at its root) and every directory opened on the way down is cached. A handle in use
//! stays open after it leaves the cache (`Arc`), so a worker holds at most two handles
//! beyond the cache while it walks, which `FDS_PER_WORKER` covers. Out of descriptors
//! anyway (EMFILE, ENFILE: a low limit, other lanes), the cache is emptied and the open
//! tried once more: fewer handles cost speed, never a file.

use super::sink::{FileRec, Found, ARGS_DIR, NO_DIR};
use crate::meta::{Errno, Kind};
use crate::platform::{self, Dir, Follow};
use std::collections::{HashMap, VecDeque};
use std::ffi::CString;
use std::fs::File;
use std::sync::{Arc, Mutex};

/// Why a file was not opened.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Refused {
    /// It, or a directory on its way, is not what the scan saw (another identity, not a
    /// regular file, a symlink where a directory was).
    Changed,
    Os(Errno),
}

/// The checked directory handles of one run.
pub struct Handles<'a> {
    found: &'a Found,
    capacity: usize,
    cache: Mutex<Cached>,
}

/// A directory handle that passed the checks, and whether anyone but root and this
/// user may change its entries (then each file is checked before it is opened to read).
struct Checked {
    dir: Dir,
    others_may_write: bool,
}

/// The checked handle of a file's directory (`Handles::parent`).
pub struct Parent(Arc<Checked>);

impl Parent {
    pub fn dir(&self) -> &Dir {
        &self.0.dir
    }
}

#[derive(Default)]
struct Cached {
    dirs: HashMap<u32, Arc<Checked>>,
    /// Tokens in the order they were cached: the front leaves first.
    order: VecDeque<u32>,
}

/// A failed directory open: a symlink (`O_NOFOLLOW`) or a non-directory (`O_DIRECTORY`)
/// where the scan saw a directory is a change, anything else an error.
fn dir_error(e: Errno) -> Refused {
    if e == Errno::LOOP || e == Errno::NOTDIR {
        Refused::Changed
    } else {
        Refused::Os(e)
    }
}

fn cname(bytes: &[u8]) -> Result<CString, Refused> {
    // Names come from listings and paths from the command line: no NUL inside.
    CString::new(bytes).map_err(|_| Refused::Os(Errno::INVAL))
}

impl<'a> Handles<'a> {
    /// Keeps at most `capacity` directory handles of `found`'s tree open.
    pub fn new(found: &'a Found, capacity: usize) -> Handles<'a> {
        Handles { found, capacity, cache: Mutex::new(Cached::default()) }
    }

    /// What the scan found: the tree these handles are checked against.
    pub fn found(&self) -> &'a Found {
        self.found
    }

    /// Opens `f` for reading, checked as the top of this file says.
    pub fn open(&self, f: &FileRec) -> Result<File, Refused> {
        match self.try_open(f) {
            Err(Refused::Os(e)) if e == Errno::MFILE || e == Errno::NFILE => {
                self.clear();
                self.try_open(f)
            }
            r => r,
        }
    }

    fn try_open(&self, f: &FileRec) -> Result<File, Refused> {
        let name = cname(self.found.file_name(f))?;
        let opened = if f.dir == ARGS_DIR {
            platform::open_file_path(&name)
        } else {
            let at = self.dir(f.dir)?;
            platform::open_file_at(&at.dir, &name, at.others_may_write)
        };
        match opened.map_err(Refused::Os)? {
            // Identity only where the scan recorded one (not std's metadata on Windows).
            (Some(file), meta) if meta.kind == Kind::File && (f.ino == 0 || (meta.dev, meta.ino) == (f.dev, f.ino)) => {
                Ok(file)
            }
            _ => Err(Refused::Changed),
        }
    }

    /// A checked handle of the directory holding `f`, and `f`'s name in it: where
    /// `act.rs` removes or replaces it. A file argument's directory is opened by its path
    /// as given (the scan followed it too), its last name being the file's.
    pub fn parent(&self, f: &FileRec) -> Result<(Parent, Vec<u8>), Refused> {
        let name = self.found.file_name(f);
        if f.dir != ARGS_DIR {
            return Ok((Parent(self.dir(f.dir)?), name.to_vec()));
        }
        let cut = name.iter().rposition(|&b| b == b'/');
        let (dir, last) = match cut {
            Some(0) => (&b"/"[..], &name[1..]),
            Some(i) => (&name[..i], &name[i + 1..]),
            None => (&b"."[..], name),
        };
        let dir = platform::open_path(&cname(dir)?, platform::Follow::Yes).map_err(dir_error)?;
        let others_may_write = platform::dir_others_may_write(&dir).map_err(Refused::Os)?;
        Ok((Parent(Arc::new(Checked { dir, others_may_write })), last.to_vec()))
    }

    /// A checked handle of the directory holding directory `token`, and `token`'s name in
    /// it: where `--dirs` removes it. A root's parent is opened by the root's path as
    /// given, as the scan resolved it.
    pub fn dir_parent(&self, token: u32) -> Result<(Parent, Vec<u8>), Refused> {
        let rec = &self.found.dirs[token as usize];
        let name = self.found.dir_name(token);
        if rec.parent != NO_DIR {
            return Ok((Parent(self.dir(rec.parent)?), name.to_vec()));
        }
        let trimmed = match name {
            [rest @ .., b'/'] if !rest.is_empty() => rest,
            n => n,
        };
        let (dir, last) = match trimmed.iter().rposition(|&b| b == b'/') {
            Some(0) => (&b"/"[..], &trimmed[1..]),
            Some(i) => (&trimmed[..i], &trimmed[i + 1..]),
            None => (&b"."[..], trimmed),
        };
        let dir = platform::open_path(&cname(dir)?, platform::Follow::Yes).map_err(dir_error)?;
        let others_may_write = platform::dir_others_may_write(&dir).map_err(Refused::Os)?;
        Ok((Parent(Arc::new(Checked { dir, others_may_write })), last.to_vec()))
    }

    /// A checked handle of directory `token`.
    fn dir(&self, token: u32) -> Result<Arc<Checked>, Refused> {
        // The tokens from `token` up to its nearest cached ancestor (excluded) or its root.
        let mut down = Vec::new();
        let mut start = None;
        {
            let cache = self.cache.lock().unwrap_or_else(|p| p.into_inner());
            let mut d = token;
            loop {
                if let Some(h) = cache.dirs.get(&d) {
                    start = Some(Arc::clone(h));
                    break;
                }
                down.push(d);
                d = self.found.dirs[d as usize].parent;
                if d == NO_DIR {
                    break;
                }
            }
        }
        let mut handle = match start {
            Some(h) => h,
            None => {
                // Not empty: the loop above pushed at least `token`.
                let Some(root) = down.pop() else { return Err(Refused::Changed) };
                let h = Arc::new(self.open_root(root)?);
                self.insert(root, &h);
                h
            }
        };
        while let Some(d) = down.pop() {
            let rec = &self.found.dirs[d as usize];
            let child =
                platform::open_at(&handle.dir, &cname(self.found.dir_name(d))?, Follow::No).map_err(dir_error)?;
            handle = Arc::new(self.check(child, rec.dev, rec.ino)?);
            self.insert(d, &handle);
        }
        Ok(handle)
    }

    /// A root, opened as the scan opened it: its path as given, the last component not
    /// followed (a root that was a symlink was never scanned).
    fn open_root(&self, root: u32) -> Result<Checked, Refused> {
        let rec = &self.found.dirs[root as usize];
        let h = platform::open_path(&cname(self.found.dir_name(root))?, Follow::No).map_err(dir_error)?;
        self.check(h, rec.dev, rec.ino)
    }

    fn check(&self, dir: Dir, dev: u64, ino: u64) -> Result<Checked, Refused> {
        let id = platform::dir_id(&dir).map_err(Refused::Os)?;
        // Identity only where the scan recorded one (the portable reader on Windows).
        if ino != 0 && id != (dev, ino) {
            return Err(Refused::Changed);
        }
        let others_may_write = platform::dir_others_may_write(&dir).map_err(Refused::Os)?;
        Ok(Checked { dir, others_may_write })
    }

    fn insert(&self, token: u32, h: &Arc<Checked>) {
        let mut cache = self.cache.lock().unwrap_or_else(|p| p.into_inner());
        if cache.dirs.insert(token, Arc::clone(h)).is_none() {
            cache.order.push_back(token);
        }
        while cache.dirs.len() > self.capacity {
            let Some(old) = cache.order.pop_front() else { break };
            cache.dirs.remove(&old);
        }
    }

    fn clear(&self) {
        let mut cache = self.cache.lock().unwrap_or_else(|p| p.into_inner());
        cache.dirs.clear();
        cache.order.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;
    use std::os::unix::ffi::OsStrExt;
    use std::os::unix::fs::MetadataExt;
    use std::path::{Path, PathBuf};

    fn scratch(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("dfdu-dupes-open-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    fn id(p: &Path) -> (u64, u64) {
        let m = std::fs::symlink_metadata(p).unwrap();
        (m.dev(), m.ino())
    }

    /// What the scan would keep of `root` whose directories `dirs` hold `files` each
    /// (tokens: 0 file arguments, 1 the root, then the directories in order).
    fn found_of(root: &Path, dirs: &[&str], files: &[&str]) -> Found {
        let mut found = Found::default();
        found.add_dir(NO_DIR, b"", (0, 0)).unwrap();
        let r = found.add_dir(NO_DIR, root.as_os_str().as_bytes(), id(root)).unwrap();
        for d in dirs {
            let token = found.add_dir(r, d.as_bytes(), id(&root.join(d))).unwrap();
            for n in files {
                let (dev, ino) = id(&root.join(d).join(n));
                let name_off = found.names.len() as u64;
                found.names.extend_from_slice(n.as_bytes());
                let (mtime_ns, ctime_ns) = (0, 0);
                let name_len = n.len() as u32;
                found.files.push(FileRec { size: 4, dev, ino, mtime_ns, ctime_ns, name_off, name_len, dir: token });
            }
        }
        found
    }

    fn read(h: &Handles, f: &FileRec) -> Result<Vec<u8>, Refused> {
        let mut out = Vec::new();
        h.open(f)?.read_to_end(&mut out).unwrap();
        Ok(out)
    }

    fn tree(name: &str, dirs: &[&str]) -> PathBuf {
        let root = scratch(name);
        for d in dirs {
            std::fs::create_dir(root.join(d)).unwrap();
            for n in ["a", "b"] {
                std::fs::write(root.join(d).join(n), format!("{d}/{n}")).unwrap();
            }
        }
        root
    }

    /// Every file opens and reads, with no handle kept and with a cache smaller than the
    /// number of directories (it never holds more than its capacity).
    #[test]
    fn dupes_open_reads_every_file_whatever_the_cache_holds() {
        let dirs = ["d1", "d2", "d3", "d4", "d5"];
        let root = tree("cache", &dirs);
        let found = found_of(&root, &dirs, &["a", "b"]);
        for capacity in [0, 2, 64] {
            let h = Handles::new(&found, capacity);
            for (k, f) in found.files.iter().enumerate() {
                let want = format!("{}/{}", dirs[k / 2], ["a", "b"][k % 2]);
                assert_eq!(read(&h, f), Ok(want.into_bytes()), "capacity {capacity}");
                assert!(h.cache.lock().unwrap().dirs.len() <= capacity);
            }
        }
        let _ = std::fs::remove_dir_all(&root);
    }

    /// A FIFO, a symlink or another file under a scanned file's name, a directory
    /// swapped for another one or for a symlink, a root swapped for a symlink: refused as
    /// changed, nothing opened (the FIFO does not block: it is never opened to read).
    #[test]
    fn dupes_open_refuses_what_the_scan_did_not_see() {
        let root = tree("refuse", &["d"]);
        let found = found_of(&root, &["d"], &["a", "b"]);
        let (a, b) = (&found.files[0], &found.files[1]);
        let d = root.join("d");
        // The scanned files are kept (moved aside), so that no new file can reuse their inodes.
        std::fs::rename(d.join("a"), root.join("a-kept")).unwrap();
        assert!(std::process::Command::new("mkfifo").arg(d.join("a")).status().unwrap().success());
        std::fs::rename(d.join("b"), root.join("b-kept")).unwrap();
        std::os::unix::fs::symlink("/etc/hostname", d.join("b")).unwrap();
        // Both ways of opening: checked first (others may write d), and directly.
        for mode in [0o777, 0o755] {
            std::fs::set_permissions(&d, std::os::unix::fs::PermissionsExt::from_mode(mode)).unwrap();
            let h = Handles::new(&found, 8);
            assert_eq!(read(&h, a), Err(Refused::Changed), "{mode:o}");
            assert_eq!(read(&h, b), Err(Refused::Changed), "{mode:o}");
            let at = h.dir(a.dir).unwrap();
            assert_eq!(at.others_may_write, mode == 0o777);
        }
        std::fs::remove_file(d.join("b")).unwrap();
        std::fs::write(d.join("b"), "d/b").unwrap();
        assert_eq!(read(&Handles::new(&found, 8), b), Err(Refused::Changed), "another inode under the name");
        // The directory: another one holding the scanned file (a hard link), then a
        // symlink to the one scanned (fresh handles each time).
        std::fs::rename(root.join("b-kept"), d.join("b")).unwrap();
        assert_eq!(read(&Handles::new(&found, 8), b), Ok(b"d/b".to_vec()), "the scanned file is back");
        std::fs::rename(&d, root.join("moved")).unwrap();
        std::fs::create_dir(&d).unwrap();
        std::fs::hard_link(root.join("moved/b"), d.join("b")).unwrap();
        assert_eq!(read(&Handles::new(&found, 8), b), Err(Refused::Changed), "another directory");
        std::fs::remove_file(d.join("b")).unwrap();
        std::fs::remove_dir(&d).unwrap();
        std::os::unix::fs::symlink(root.join("moved"), &d).unwrap();
        assert_eq!(read(&Handles::new(&found, 8), b), Err(Refused::Changed));
        std::fs::remove_file(&d).unwrap();
        assert_eq!(read(&Handles::new(&found, 8), b), Err(Refused::Os(Errno(2))), "gone: an error");
        let moved_root = root.with_extension("moved");
        std::fs::rename(&root, &moved_root).unwrap();
        std::os::unix::fs::symlink(&moved_root, &root).unwrap();
        assert_eq!(read(&Handles::new(&found, 8), b), Err(Refused::Changed), "a root swapped for a symlink");
        let _ = std::fs::remove_file(&root);
        let _ = std::fs::remove_dir_all(&moved_root);
    }

    /// A handle checked once stays good: a file of the scanned directory is read through
    /// it after the directory was renamed and a symlink put in its place.
    #[test]
    fn dupes_open_reads_through_a_handle_checked_before_a_swap() {
        let root = tree("kept", &["d"]);
        let found = found_of(&root, &["d"], &["a", "b"]);
        let h = Handles::new(&found, 8);
        assert_eq!(read(&h, &found.files[0]), Ok(b"d/a".to_vec()));
        std::fs::rename(root.join("d"), root.join("moved")).unwrap();
        std::os::unix::fs::symlink("/etc", root.join("d")).unwrap();
        assert_eq!(read(&h, &found.files[1]), Ok(b"d/b".to_vec()));
        let _ = std::fs::remove_dir_all(&root);
    }

    /// A directory that fails its check is not kept for the next file: swapped for another
    /// directory holding hard links of both scanned files, neither is read through it.
    #[test]
    fn dupes_open_keeps_no_handle_that_failed_its_check() {
        let root = tree("failed", &["d"]);
        let found = found_of(&root, &["d"], &["a", "b"]);
        std::fs::rename(root.join("d"), root.join("moved")).unwrap();
        std::fs::create_dir(root.join("d")).unwrap();
        for n in ["a", "b"] {
            std::fs::hard_link(root.join("moved").join(n), root.join("d").join(n)).unwrap();
        }
        let h = Handles::new(&found, 8);
        assert_eq!(read(&h, &found.files[0]), Err(Refused::Changed));
        assert_eq!(read(&h, &found.files[1]), Err(Refused::Changed), "the second file of that directory");
        let _ = std::fs::remove_dir_all(&root);
    }

    /// A root replaced by another directory (not a symlink), into which the scanned
    /// directory below it was moved: refused at the root, as any directory on the way is,
    /// though everything below it is what the scan saw.
    #[test]
    fn dupes_open_refuses_a_root_replaced_by_another_directory() {
        let root = tree("root-replaced", &["d"]);
        let found = found_of(&root, &["d"], &["a", "b"]);
        let moved = root.with_extension("moved");
        std::fs::rename(&root, &moved).unwrap();
        std::fs::create_dir(&root).unwrap();
        std::fs::rename(moved.join("d"), root.join("d")).unwrap();
        assert_eq!(read(&Handles::new(&found, 8), &found.files[0]), Err(Refused::Changed));
        let _ = std::fs::remove_dir_all(&root);
        let _ = std::fs::remove_dir_all(&moved);
    }

    /// Files three levels below the root, reached with no handle cached, with the root's
    /// and the middle level's cached, and with none kept: each directory on the way is
    /// checked against its own record, so every file opens.
    #[test]
    fn dupes_open_reads_files_deep_below_the_root() {
        let root = scratch("deep");
        let chain = ["a", "a/b", "a/b/c"];
        let mut found = Found::default();
        found.add_dir(NO_DIR, b"", (0, 0)).unwrap();
        let mut parent = found.add_dir(NO_DIR, root.as_os_str().as_bytes(), id(&root)).unwrap();
        for (depth, rel) in chain.iter().enumerate() {
            let dir = root.join(rel);
            std::fs::create_dir(&dir).unwrap();
            std::fs::write(dir.join("f"), format!("level {depth}")).unwrap();
            let name = rel.rsplit('/').next().unwrap();
            parent = found.add_dir(parent, name.as_bytes(), id(&dir)).unwrap();
            let (dev, ino) = id(&dir.join("f"));
            let name_off = found.names.len() as u64;
            found.names.extend_from_slice(b"f");
            found.files.push(FileRec {
                size: 7,
                dev,
                ino,
                mtime_ns: 0,
                ctime_ns: 0,
                name_off,
                name_len: 1,
                dir: parent,
            });
        }
        for capacity in [0, 1, 8] {
            for order in [[2, 1, 0], [0, 1, 2]] {
                let h = Handles::new(&found, capacity);
                for k in order {
                    let want = format!("level {k}").into_bytes();
                    assert_eq!(read(&h, &found.files[k]), Ok(want), "capacity {capacity}, order {order:?}");
                }
            }
        }
        let _ = std::fs::remove_dir_all(&root);
    }
}
