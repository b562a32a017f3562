//! Opening the files `dupes` reads and `dedupe` shares without ever resolving a path
//! again: from the scan's roots down, each directory is opened relative to its parent's
//! handle with no-follow (`platform::open_at(.., false)`) and its (device, inode) must be
//! the one the scan recorded (`DirRec`); the file itself is opened by one name inside the
//! last handle with `platform::open_file_at`, which opens nothing but a regular file
//! (never a symlink, a device, a FIFO or a socket), and must have the scan's identity
//! too. A directory swapped for a symlink fails to open, one swapped for another
//! directory fails the check: the file is then `Refused::Changed`, never read. A root is
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
use crate::platform::{self, Dir};
use std::collections::{HashMap, VecDeque};
use std::ffi::CString;
use std::fs::File;
use std::sync::{Arc, Mutex};

const ENOTDIR: i32 = 20;
const EINVAL: i32 = 22;
const ENFILE: i32 = 23;
const EMFILE: i32 = 24;
const ELOOP: i32 = 40;

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

#[derive(Default)]
struct Cached {
    dirs: HashMap<u32, Arc<Dir>>,
    /// Tokens in the order they were cached: the front leaves first.
    order: VecDeque<u32>,
}

/// A failed directory open: a symlink (`O_NOFOLLOW`) or a non-directory (`O_DIRECTORY`)
/// where the scan saw a directory is a change, anything else an error.
fn dir_error(e: Errno) -> Refused {
    if e.0 == ELOOP || e.0 == ENOTDIR {
        Refused::Changed
    } else {
        Refused::Os(e)
    }
}

fn cname(bytes: &[u8]) -> Result<CString, Refused> {
    // Names come from listings and paths from the command line: no NUL inside.
    CString::new(bytes).map_err(|_| Refused::Os(Errno(EINVAL)))
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
            Err(Refused::Os(e)) if e.0 == EMFILE || e.0 == ENFILE => {
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
            let dir = self.dir(f.dir)?;
            platform::open_file_at(&dir, &name)
        };
        match opened.map_err(Refused::Os)? {
            // Identity only where the scan recorded one (not std's metadata on Windows).
            (Some(file), meta) if meta.kind == Kind::File && (f.ino == 0 || (meta.dev, meta.ino) == (f.dev, f.ino)) => {
                Ok(file)
            }
            _ => Err(Refused::Changed),
        }
    }

    /// A checked handle of directory `token`.
    fn dir(&self, token: u32) -> Result<Arc<Dir>, Refused> {
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
            let child = platform::open_at(&handle, &cname(self.found.dir_name(d))?, false).map_err(dir_error)?;
            self.check(&child, rec.dev, rec.ino)?;
            handle = Arc::new(child);
            self.insert(d, &handle);
        }
        Ok(handle)
    }

    /// A root, opened as the scan opened it: its path as given, the last component not
    /// followed (a root that was a symlink was never scanned).
    fn open_root(&self, root: u32) -> Result<Dir, Refused> {
        let rec = &self.found.dirs[root as usize];
        let h = platform::open_path(&cname(self.found.dir_name(root))?, false).map_err(dir_error)?;
        self.check(&h, rec.dev, rec.ino)?;
        Ok(h)
    }

    fn check(&self, h: &Dir, dev: u64, ino: u64) -> Result<(), Refused> {
        let id = platform::dir_id(h).map_err(Refused::Os)?;
        // Identity only where the scan recorded one (the portable reader on Windows).
        if ino != 0 && id != (dev, ino) {
            return Err(Refused::Changed);
        }
        Ok(())
    }

    fn insert(&self, token: u32, h: &Arc<Dir>) {
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
