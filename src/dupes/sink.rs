//! The scan's sink for `dupes`: keeps regular files only, each as one fixed 56-byte
//! `FileRec` (size, identity, times, where) plus its name in one shared byte buffer, and
//! each directory as (parent, name, identity) in 32 bytes. No per-file allocation; paths
//! are built only for the files that end up in a group.

use crate::meta::{Errno, Kind};
use crate::text::quote::walk_problem;
use crate::walk::scan::{Child, Listed, Pos, Seen, Sink};
use std::ffi::CString;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

/// No parent: a root directory, or the pseudo-directory of file arguments.
pub const NO_DIR: u32 = u32::MAX;

/// The token of the pseudo-directory of file arguments (the first one added): a file
/// there is named by its path as given.
pub const ARGS_DIR: u32 = 0;

/// One regular file the scan found within the size limits.
#[derive(Clone, Copy, Debug)]
pub struct FileRec {
    pub size: u64,
    pub dev: u64,
    pub ino: u64,
    pub mtime_ns: i64,
    pub ctime_ns: i64,
    /// Offset of the name in `Found::names`.
    pub name_off: u64,
    pub name_len: u32,
    pub dir: u32,
}

const _: () = assert!(std::mem::size_of::<FileRec>() == 56);

/// A directory: its parent's token, its name (for a root: the path as given) and the
/// (device, inode) the scan saw, against which every handle opened on the way to a file
/// is checked (`open.rs`). (0, 0) for the pseudo-directory of file arguments.
#[derive(Clone, Copy, Debug)]
pub struct DirRec {
    pub parent: u32,
    pub name_len: u32,
    pub name_off: u64,
    pub dev: u64,
    pub ino: u64,
}

const _: () = assert!(std::mem::size_of::<DirRec>() == 32);

/// Directory paths built once each, for `Found::file_path_with`: only the directories
/// asked about are kept, in one buffer.
#[derive(Default)]
pub struct DirPaths {
    at: std::collections::HashMap<u32, (usize, usize)>,
    bytes: Vec<u8>,
    one: Vec<u8>,
}

/// Everything the scans kept.
#[derive(Default)]
pub struct Found {
    pub files: Vec<FileRec>,
    pub dirs: Vec<DirRec>,
    pub names: Vec<u8>,
    /// (directory token, entry name or empty for the directory itself, error).
    pub errors: Vec<(u32, Vec<u8>, Errno)>,
    /// Directories holding an entry not kept here (a symlink, an empty file, a file
    /// outside the size limits, an excluded, unreadable or other-file-system entry, a
    /// directory beyond the token space): `--dirs` never calls their trees duplicates.
    /// A token may be listed more than once.
    pub incomplete: Vec<u32>,
}

impl Found {
    /// Adds a directory (a root when `parent == NO_DIR`) with the (device, inode) the
    /// scan saw; returns its token.
    pub fn add_dir(&mut self, parent: u32, name: &[u8], (dev, ino): (u64, u64)) -> Result<u32, ()> {
        let token = u32::try_from(self.dirs.len()).ok().filter(|&t| t != NO_DIR).ok_or(())?;
        self.dirs.push(DirRec { parent, name_off: self.names.len() as u64, name_len: name.len() as u32, dev, ino });
        self.names.extend_from_slice(name);
        Ok(token)
    }

    /// The name of directory `dir` (for a root: its path as given).
    pub fn dir_name(&self, dir: u32) -> &[u8] {
        let rec = &self.dirs[dir as usize];
        self.name(rec.name_off, rec.name_len)
    }

    /// The name of file `f` in its directory.
    pub fn file_name(&self, f: &FileRec) -> &[u8] {
        self.name(f.name_off, f.name_len)
    }

    fn name(&self, off: u64, len: u32) -> &[u8] {
        &self.names[off as usize..off as usize + len as usize]
    }

    /// The path of directory `dir` into `out` (replacing its contents).
    pub fn dir_path(&self, dir: u32, out: &mut Vec<u8>) {
        out.clear();
        // Walked twice from `dir` up, with no list of the chain: once for the names'
        // lengths, once to write each name into its place from the end (this runs for
        // every member of every group, and a rerun is little else).
        let names = |mut d: u32| {
            std::iter::from_fn(move || {
                let rec = *self.dirs.get(d as usize).filter(|_| d != NO_DIR)?;
                d = rec.parent;
                Some(self.name(rec.name_off, rec.name_len))
            })
        };
        // A separator goes between two names unless the outer one ends in '/' (a root
        // given as "/" or "dir/"); the outermost name is the root as given.
        let mut len = 0;
        let mut inner: Option<&[u8]> = None;
        for name in names(dir) {
            len += name.len() + usize::from(inner.is_some() && !name.ends_with(b"/") && !name.is_empty());
            inner = Some(name);
        }
        out.resize(len, 0);
        let mut end = len;
        let mut inner = false;
        for name in names(dir) {
            if inner && !name.ends_with(b"/") && !name.is_empty() {
                end -= 1;
                out[end] = b'/';
            }
            out[end - name.len()..end].copy_from_slice(name);
            end -= name.len();
            inner = true;
        }
    }

    /// The path of file `f` into `out`.
    pub fn file_path(&self, f: &FileRec, out: &mut Vec<u8>) {
        self.dir_path(f.dir, out);
        self.push_file_name(f, out);
    }

    /// Appends `f`'s name to its directory's path in `out`, with a '/' between unless the
    /// path is empty or ends in one.
    fn push_file_name(&self, f: &FileRec, out: &mut Vec<u8>) {
        if !out.is_empty() && !out.ends_with(b"/") {
            out.push(b'/');
        }
        out.extend_from_slice(self.name(f.name_off, f.name_len));
    }

    /// The path of file `f` into `out`, its directory's path taken from `dirs` (built
    /// there once per directory): `file_path`, for many files in few directories.
    pub fn file_path_with(&self, dirs: &mut DirPaths, f: &FileRec, out: &mut Vec<u8>) {
        let (start, end) = *dirs.at.entry(f.dir).or_insert_with(|| {
            self.dir_path(f.dir, &mut dirs.one);
            let start = dirs.bytes.len();
            dirs.bytes.extend_from_slice(&dirs.one);
            (start, dirs.bytes.len())
        });
        out.clear();
        out.extend_from_slice(&dirs.bytes[start..end]);
        self.push_file_name(f, out);
    }

    /// The message for one of `errors` (an entry of `dir` that could not be stat'ed, or
    /// with an empty `name` the directory itself that could not be listed), worded and
    /// quoted as `dfdu scan` words its problems (`text::quote::walk_problem`).
    pub fn problem_line(&self, dir: u32, name: &[u8], reason: &str) -> String {
        let mut path = Vec::new();
        self.dir_path(dir, &mut path);
        walk_problem(&path, (!name.is_empty()).then_some(name), reason).1
    }
}

/// What one worker collected since its last commit.
#[derive(Default)]
pub struct Local {
    files: Vec<FileRec>,
    names: Vec<u8>,
    /// (name offset in `names`, length, dev, ino).
    subdirs: Vec<(usize, usize, u64, u64)>,
    errors: Vec<(Vec<u8>, Errno)>,
    /// An entry of this listing was not kept (`Found::incomplete`).
    unkept: bool,
}

/// The sink: files between `min_size` and `max_size` (inclusive), directories to enter.
pub struct FilesSink {
    pub found: Mutex<Found>,
    pub min_size: u64,
    pub max_size: u64,
    /// Regular files seen (for progress).
    pub files_seen: AtomicU64,
    /// Set when the token space ran out (more than 4 billion directories).
    pub overflow: std::sync::atomic::AtomicBool,
}

impl FilesSink {
    pub fn new(found: Found, min_size: u64, max_size: u64) -> FilesSink {
        FilesSink {
            found: Mutex::new(found),
            min_size,
            max_size,
            files_seen: AtomicU64::new(0),
            overflow: std::sync::atomic::AtomicBool::new(false),
        }
    }
}

impl Sink for FilesSink {
    type Local = Local;
    const CONTIGUOUS: bool = false;

    fn entry(&self, local: &mut Local, _pos: Pos, name: &[u8], seen: Seen) {
        match seen {
            Seen::Ok(meta) => match meta.kind {
                Kind::Dir => {
                    local.subdirs.push((local.names.len(), name.len(), meta.dev, meta.ino));
                    local.names.extend_from_slice(name);
                }
                Kind::File => {
                    self.files_seen.fetch_add(1, Ordering::Relaxed);
                    if meta.size < self.min_size || meta.size > self.max_size {
                        local.unkept = true;
                        return;
                    }
                    local.files.push(FileRec {
                        size: meta.size,
                        dev: meta.dev,
                        ino: meta.ino,
                        mtime_ns: meta.mtime.as_ns(),
                        ctime_ns: meta.ctime.as_ns(),
                        name_off: local.names.len() as u64,
                        name_len: name.len() as u32,
                        dir: 0,
                    });
                    local.names.extend_from_slice(name);
                }
                // Symlinks are never followed; devices, FIFOs and sockets hold no data.
                Kind::Symlink | Kind::Other => local.unkept = true,
            },
            Seen::Error(e) => {
                local.unkept = true;
                local.errors.push((name.to_vec(), e));
            }
            // A loop (a bind mount of an ancestor) is never entered: its files are already seen.
            Seen::Excluded
            | Seen::ExcludedDir(_)
            | Seen::OtherFs(_)
            | Seen::Repeat(_)
            | Seen::Loop(_)
            | Seen::Before => local.unkept = true,
        }
    }

    fn commit(&self, local: &mut Local, dir: u32, listed: Option<Listed>, children: &mut Vec<Child>) {
        let mut found = self.found.lock().unwrap();
        let base = found.names.len() as u64;
        found.names.extend_from_slice(&local.names);
        for mut f in local.files.drain(..) {
            f.name_off += base;
            f.dir = dir;
            found.files.push(f);
        }
        for (off, len, dev, ino) in local.subdirs.drain(..) {
            let name = &local.names[off..off + len];
            let Ok(token) =
                u32::try_from(found.dirs.len()).map_err(|_| ()).and_then(|t| if t == NO_DIR { Err(()) } else { Ok(t) })
            else {
                self.overflow.store(true, Ordering::Relaxed);
                local.unkept = true;
                continue;
            };
            found.dirs.push(DirRec { parent: dir, name_off: base + off as u64, name_len: len as u32, dev, ino });
            if let Ok(name) = CString::new(name) {
                children.push(Child { name, dir: token, dev, ino });
            }
        }
        for (name, e) in local.errors.drain(..) {
            found.errors.push((dir, name, e));
        }
        if let Some(Listed { error: Some((e, _)), .. }) = listed {
            found.errors.push((dir, Vec::new(), e));
            local.unkept = true;
        }
        if std::mem::take(&mut local.unkept) {
            found.incomplete.push(dir);
        }
        local.names.clear();
    }

    fn unreadable(&self, dir: u32, err: Errno) {
        let mut found = self.found.lock().unwrap();
        found.errors.push((dir, Vec::new(), err));
        found.incomplete.push(dir);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The path as the walk from the root down would join it: a '/' between two names
    /// unless the outer one ends in '/' or is empty (the file arguments' pseudo-directory).
    fn joined(names: &[&[u8]]) -> Vec<u8> {
        let mut out: Vec<u8> = Vec::new();
        for name in names {
            if !out.is_empty() && !out.ends_with(b"/") {
                out.push(b'/');
            }
            out.extend_from_slice(name);
        }
        out
    }

    #[test]
    fn dir_path_joins_the_names_from_the_root_down() {
        let roots: [&[u8]; 6] = [b"", b"/", b"dir/", b"a/b", b"./", b"x"];
        for root in roots {
            let mut found = Found::default();
            let mut names: Vec<&[u8]> = vec![root];
            let mut d = found.add_dir(NO_DIR, root, (1, 1)).unwrap();
            let mut out = b"left over".to_vec();
            found.dir_path(d, &mut out);
            assert_eq!(out, joined(&names));
            for (n, name) in [&b"sub"[..], b"with space", b"\xff\n", b"z"].into_iter().enumerate() {
                d = found.add_dir(d, name, (1, 2 + n as u64)).unwrap();
                names.push(name);
                found.dir_path(d, &mut out);
                assert_eq!(out, joined(&names), "{:?}", String::from_utf8_lossy(&out));
            }
            let name_off = found.names.len() as u64;
            found.names.extend_from_slice(b"f.txt");
            let f = FileRec { size: 0, dev: 1, ino: 99, mtime_ns: 0, ctime_ns: 0, name_off, name_len: 5, dir: d };
            found.file_path(&f, &mut out);
            names.push(b"f.txt");
            assert_eq!(out, joined(&names));
        }
    }
}
