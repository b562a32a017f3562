//! Creates a planned tree on disk.
//!
//! Protocol, in three phases:
//! 1. One thread creates every directory, parents first, in plan order.
//! 2. `threads` workers take whole directories from a shared cursor (biggest first) and
//!    create that directory's files and symlinks in plan order. One directory is only ever
//!    filled by one thread, so each directory receives its entries in the same order on
//!    every run, and ext4 lays it out the same way (same directory size).
//! 3. One thread creates the extra hard-link names, in plan order.
//!
//! Written files get real bytes (a fixed pattern). Files of 1 MiB and more get their blocks
//! from `fallocate -l SIZE FILE` (util-linux): the generator has no `unsafe`, and std has
//! no posix_fallocate, while writing gigabytes would be slow. If `fallocate` is missing or
//! fails, the data is written instead. Sparse files get `set_len` plus two written chunks.
//!
//! A directory with more than `SPLIT_DIR_FILES` files (the `--wide` root) is still created
//! by one thread in plan order, but its file data is written by helper threads.
//!
//! Workers never print; the first error stops every worker and is returned.
//!
//! A chain (`make_chain`) is made by one thread that changes into each new level, so every
//! path it passes to the kernel is one name long and the depth is not limited by PATH_MAX.
//! That changes the process's working directory for the duration (restored at the end):
//! only the `gen` command does it, never a caller that runs other threads meanwhile.

use std::ffi::OsStr;
use std::fs::{self, File, OpenOptions};
use std::io::{self, IsTerminal, Write};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{symlink, FileExt};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::mpsc::sync_channel;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use crate::plan::{DirPlan, FileKind, FilePlan, Plan};

/// Bytes per write call, and the size of the pattern buffer.
const CHUNK_BYTES: usize = 64 * 1024;
/// Sparse files get this much data written at offset 0 and 4 KiB more in the middle.
const SPARSE_HEAD_BYTES: usize = 64 * 1024;
const SPARSE_MIDDLE_BYTES: usize = 4 * 1024;
/// A directory with more files than this gets helper threads for its data writes.
const SPLIT_DIR_FILES: usize = 10_000;
/// Created-but-unwritten files queued for the helpers (each holds an open descriptor).
const QUEUE_FILES: usize = 256;

/// Wall-clock seconds per phase, for the summary.
pub struct PhaseTimes {
    pub dirs_s: f64,
    pub files_s: f64,
    pub links_s: f64,
}

/// Creates `plan` under `root`, which must not exist yet.
pub fn make(root: &Path, plan: &Plan, threads: usize) -> Result<PhaseTimes, String> {
    let started = Instant::now();
    let dir_paths = dir_paths(root, plan);
    for path in &dir_paths {
        fs::create_dir(path).map_err(|e| format!("mkdir {}: {e}", path.display()))?;
    }
    let dirs_s = started.elapsed().as_secs_f64();

    let started = Instant::now();
    fill_dirs(plan, &dir_paths, threads.max(1))?;
    let files_s = started.elapsed().as_secs_f64();

    let started = Instant::now();
    for link in &plan.links {
        let target_dir = &plan.dirs[link.target_dir_idx as usize];
        let target_name = &target_dir.files[link.target_file_idx as usize].name;
        let target = dir_paths[link.target_dir_idx as usize].join(OsStr::from_bytes(target_name));
        let path = dir_paths[link.dir_idx as usize].join(OsStr::from_bytes(&link.name));
        fs::hard_link(&target, &path).map_err(|e| format!("link {}: {e}", path.display()))?;
    }
    let links_s = started.elapsed().as_secs_f64();
    Ok(PhaseTimes { dirs_s, files_s, links_s })
}

/// Creates a chain plan (every directory inside the one before) under `root`, which must
/// not exist yet, working one level at a time from inside each directory.
pub fn make_chain(root: &Path, plan: &Plan) -> Result<PhaseTimes, String> {
    let home = std::env::current_dir().map_err(|e| format!("current directory: {e}"))?;
    let made = make_chain_inside(root, plan);
    let back = std::env::set_current_dir(&home).map_err(|e| format!("cd {}: {e}", home.display()));
    let times = made?;
    back?;
    Ok(times)
}

fn make_chain_inside(root: &Path, plan: &Plan) -> Result<PhaseTimes, String> {
    let started = Instant::now();
    let mut dirs_s = 0.0;
    fs::create_dir(root).map_err(|e| format!("mkdir {}: {e}", root.display()))?;
    std::env::set_current_dir(root).map_err(|e| format!("cd {}: {e}", root.display()))?;
    let pattern = pattern_buffer();
    for (level, dir) in plan.dirs.iter().enumerate() {
        let at = |e: String| format!("{}, level {level}: {e}", root.display());
        if level > 0 {
            debug_assert_eq!(dir.parent_idx as usize, level - 1, "a chain plan");
            let mkdir_started = Instant::now();
            let name = Path::new(OsStr::from_bytes(&dir.name));
            fs::create_dir(name).map_err(|e| at(format!("mkdir {}: {e}", name.display())))?;
            std::env::set_current_dir(name).map_err(|e| at(format!("cd {}: {e}", name.display())))?;
            dirs_s += mkdir_started.elapsed().as_secs_f64();
        }
        for file_plan in &dir.files {
            let path = Path::new(OsStr::from_bytes(&file_plan.name));
            let file = create(path).map_err(at)?;
            fill_file(&file, path, file_plan, &pattern).map_err(at)?;
        }
        for link in &dir.symlinks {
            let path = Path::new(OsStr::from_bytes(&link.name));
            symlink(OsStr::from_bytes(&link.target), path)
                .map_err(|e| at(format!("symlink {}: {e}", path.display())))?;
        }
    }
    let files_s = started.elapsed().as_secs_f64() - dirs_s;
    Ok(PhaseTimes { dirs_s, files_s, links_s: 0.0 })
}

/// The full path of every planned directory; the plan puts parents before children.
fn dir_paths(root: &Path, plan: &Plan) -> Vec<PathBuf> {
    let mut paths: Vec<PathBuf> = Vec::with_capacity(plan.dirs.len());
    for (idx, dir) in plan.dirs.iter().enumerate() {
        let path = if idx == 0 {
            root.to_path_buf()
        } else {
            paths[dir.parent_idx as usize].join(OsStr::from_bytes(&dir.name))
        };
        paths.push(path);
    }
    paths
}

/// Phase 2: workers fill whole directories, biggest first, until none is left.
fn fill_dirs(plan: &Plan, dir_paths: &[PathBuf], threads: usize) -> Result<(), String> {
    let mut order: Vec<usize> = (0..plan.dirs.len()).collect();
    order.sort_by_key(|&idx| std::cmp::Reverse(plan.dirs[idx].files.len()));
    let cursor = AtomicUsize::new(0);
    let failed = AtomicBool::new(false);
    let first_error: Mutex<Option<String>> = Mutex::new(None);
    let entries_done = AtomicU64::new(0);
    let total = plan.counts.files + plan.counts.symlinks;
    std::thread::scope(|scope| {
        for _ in 0..threads {
            scope.spawn(|| {
                let pattern = pattern_buffer();
                while !failed.load(Ordering::Relaxed) {
                    let Some(&idx) = order.get(cursor.fetch_add(1, Ordering::Relaxed)) else {
                        break;
                    };
                    let result = fill_dir(&dir_paths[idx], &plan.dirs[idx], &pattern, threads);
                    entries_done.fetch_add(
                        (plan.dirs[idx].files.len() + plan.dirs[idx].symlinks.len()) as u64,
                        Ordering::Relaxed,
                    );
                    if let Err(error) = result {
                        failed.store(true, Ordering::Relaxed);
                        first_error.lock().unwrap().get_or_insert(error);
                    }
                }
            });
        }
        report_progress(&entries_done, total, &cursor, order.len(), &failed);
    });
    match first_error.into_inner().unwrap() {
        Some(error) => Err(error),
        None => Ok(()),
    }
}

/// Prints "done/total" to stderr every few seconds until all directories are taken (or a
/// worker failed).
fn report_progress(entries_done: &AtomicU64, total: u64, cursor: &AtomicUsize, n_dirs: usize, failed: &AtomicBool) {
    let interactive = io::stderr().is_terminal();
    let interval = if interactive { Duration::from_secs(1) } else { Duration::from_secs(15) };
    let mut last = Instant::now();
    while cursor.load(Ordering::Relaxed) < n_dirs && !failed.load(Ordering::Relaxed) {
        std::thread::sleep(Duration::from_millis(100));
        if last.elapsed() >= interval {
            last = Instant::now();
            let done = entries_done.load(Ordering::Relaxed);
            let end = if interactive { "\r" } else { "\n" };
            eprint!("  files and symlinks: {done}/{total}{end}");
            let _ = io::stderr().flush();
        }
    }
}

fn fill_dir(dir_path: &Path, dir: &DirPlan, pattern: &[u8], threads: usize) -> Result<(), String> {
    if dir.files.len() > SPLIT_DIR_FILES && threads > 1 {
        fill_files_split(dir_path, dir, pattern, threads - 1)?;
    } else {
        for plan in &dir.files {
            let path = dir_path.join(OsStr::from_bytes(&plan.name));
            let file = create(&path)?;
            fill_file(&file, &path, plan, pattern)?;
        }
    }
    for link in &dir.symlinks {
        let path = dir_path.join(OsStr::from_bytes(&link.name));
        symlink(OsStr::from_bytes(&link.target), &path).map_err(|e| format!("symlink {}: {e}", path.display()))?;
    }
    Ok(())
}

/// For one huge directory (`--wide`): this thread creates the files in plan order, so the
/// directory is laid out the same on every run, and `helpers` threads write their data.
fn fill_files_split(dir_path: &Path, dir: &DirPlan, pattern: &[u8], helpers: usize) -> Result<(), String> {
    let (sender, receiver) = sync_channel::<(File, PathBuf, &FilePlan)>(QUEUE_FILES);
    let receiver = Mutex::new(receiver);
    let first_error: Mutex<Option<String>> = Mutex::new(None);
    std::thread::scope(|scope| {
        for _ in 0..helpers {
            scope.spawn(|| loop {
                let job = receiver.lock().unwrap().recv();
                let Ok((file, path, plan)) = job else { break };
                if let Err(error) = fill_file(&file, &path, plan, pattern) {
                    first_error.lock().unwrap().get_or_insert(error);
                }
            });
        }
        for plan in &dir.files {
            let path = dir_path.join(OsStr::from_bytes(&plan.name));
            match create(&path) {
                // A send fails only if every helper is gone, which they never are while
                // the sender lives; stop creating then all the same.
                Ok(file) => {
                    if sender.send((file, path, plan)).is_err() {
                        break;
                    }
                }
                Err(error) => {
                    first_error.lock().unwrap().get_or_insert(error);
                    break;
                }
            }
        }
        drop(sender);
    });
    match first_error.into_inner().unwrap() {
        Some(error) => Err(error),
        None => Ok(()),
    }
}

fn create(path: &Path) -> Result<File, String> {
    OpenOptions::new().write(true).create_new(true).open(path).map_err(|e| format!("create {}: {e}", path.display()))
}

fn fill_file(file: &File, path: &Path, plan: &FilePlan, pattern: &[u8]) -> Result<(), String> {
    let result = match plan.kind {
        FileKind::Written => write_bytes(file, plan.size_bytes, pattern),
        FileKind::Allocated if allocate(path, plan.size_bytes) => Ok(()),
        FileKind::Allocated => write_bytes(file, plan.size_bytes, pattern),
        FileKind::Sparse => write_sparse(file, plan.size_bytes, pattern),
    };
    result.map_err(|e| format!("write {}: {e}", path.display()))
}

fn write_sparse(file: &File, size_bytes: u64, pattern: &[u8]) -> io::Result<()> {
    file.set_len(size_bytes)?;
    file.write_all_at(&pattern[..SPARSE_HEAD_BYTES], 0)?;
    let middle = size_bytes / 2 / 4096 * 4096;
    file.write_all_at(&pattern[..SPARSE_MIDDLE_BYTES], middle)
}

fn write_bytes(mut file: &File, size_bytes: u64, pattern: &[u8]) -> io::Result<()> {
    let mut left = size_bytes;
    while left > 0 {
        let chunk = left.min(pattern.len() as u64) as usize;
        file.write_all(&pattern[..chunk])?;
        left -= chunk as u64;
    }
    Ok(())
}

/// Allocates `size_bytes` of blocks with fallocate(1); false if that did not work.
fn allocate(path: &Path, size_bytes: u64) -> bool {
    Command::new("fallocate")
        .arg("-l")
        .arg(size_bytes.to_string())
        .arg(path)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|status| status.success())
}

/// Printable filler so that written files look like text; content does not matter.
fn pattern_buffer() -> Vec<u8> {
    b"dfdu-bench generated file contents.\n".iter().copied().cycle().take(CHUNK_BYTES).collect()
}
