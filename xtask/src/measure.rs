//! One timed run of one command, and dropping the page cache.
//!
//! Wall time is this process's monotonic clock from just before spawning to just after
//! reaping. CPU time and peak RSS come from GNU time (`/usr/bin/time -f '%U %S %M'`, Debian
//! package `time`) wrapped around the command: std has no wait4/getrusage and this binary
//! has no `unsafe`, and GNU time reads the child's rusage from wait4 itself. The cost: the
//! wall time includes GNU time's own fork and exec (about a millisecond, measured and
//! reported as "harness overhead", not subtracted), CPU times come in 10 ms steps, and the
//! peak RSS cannot be lower than GNU time's own forked copy (about 1–2 MiB).
//! Without GNU time, only wall time is measured.
//!
//! The command's stdout and stderr go to pipes that are read to the end and thrown away
//! (the last 2 KiB of stderr are kept for error messages), as in peers-bench.md.

use std::fs;
use std::io::{self, Read};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

/// Bytes of a failing command's stderr kept for the report.
const STDERR_TAIL_BYTES: usize = 2048;

pub struct Sample {
    pub wall_s: f64,
    /// From GNU time; None if it is not installed or its output could not be read.
    pub rusage: Option<Rusage>,
    /// None if the command exited 0, else a description of the failure.
    pub failure: Option<String>,
}

pub struct Rusage {
    pub user_s: f64,
    pub sys_s: f64,
    pub max_rss_kib: u64,
}

pub struct Timer {
    gnu_time: Option<PathBuf>,
    /// Where GNU time writes its one line (`-o`), one file per bench process.
    scratch: PathBuf,
}

impl Timer {
    pub fn new() -> Timer {
        let gnu_time = ["/usr/bin/time", "/bin/time"].iter().map(PathBuf::from).find(|path| is_gnu_time(path));
        let scratch = std::env::temp_dir().join(format!("dfdu-bench-{}.time", std::process::id()));
        Timer { gnu_time, scratch }
    }

    pub fn gnu_time(&self) -> Option<&Path> {
        self.gnu_time.as_deref()
    }

    pub fn run(&self, program: &Path, args: &[std::ffi::OsString]) -> io::Result<Sample> {
        let mut command = match &self.gnu_time {
            Some(time) => {
                let mut command = Command::new(time);
                command.args(["-f", "%U %S %M", "-o"]).arg(&self.scratch).arg("--").arg(program);
                command
            }
            None => Command::new(program),
        };
        command.args(args).stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped());
        // A stale line from the previous run must not be mistaken for this run's.
        let _ = fs::remove_file(&self.scratch);
        let started = Instant::now();
        let mut child = command.spawn()?;
        let mut stderr = child.stderr.take().expect("stderr was piped");
        let drain = std::thread::spawn(move || read_tail(&mut stderr));
        io::copy(&mut child.stdout.take().expect("stdout was piped"), &mut io::sink())?;
        let status = child.wait()?;
        let wall_s = started.elapsed().as_secs_f64();
        let stderr_tail = drain.join().unwrap_or_default();
        let rusage = self.gnu_time.as_ref().and_then(|_| read_rusage(&self.scratch));
        let failure = (!status.success()).then(|| {
            let last = stderr_tail.lines().rev().find(|l| !l.trim().is_empty()).unwrap_or("");
            format!("{status}: {last}")
        });
        Ok(Sample { wall_s, rusage, failure })
    }
}

impl Drop for Timer {
    fn drop(&mut self) {
        let _ = fs::remove_file(&self.scratch);
    }
}

fn is_gnu_time(path: &Path) -> bool {
    Command::new(path)
        .arg("--version")
        .stdin(Stdio::null())
        .output()
        .is_ok_and(|out| String::from_utf8_lossy(&[out.stdout, out.stderr].concat()).contains("GNU"))
}

/// Reads a stream to its end, keeping only its last `STDERR_TAIL_BYTES`.
fn read_tail(stream: &mut impl Read) -> String {
    let mut tail: Vec<u8> = Vec::new();
    let mut buffer = [0u8; 8192];
    while let Ok(n) = stream.read(&mut buffer) {
        if n == 0 {
            break;
        }
        tail.extend_from_slice(&buffer[..n]);
        if tail.len() > 2 * STDERR_TAIL_BYTES {
            tail.drain(..tail.len() - STDERR_TAIL_BYTES);
        }
    }
    String::from_utf8_lossy(&tail).into_owned()
}

/// GNU time's line `USER SYS MAXRSS_KIB`; it is the last line of the file (a failing
/// command gets a "Command exited with non-zero status" line before it).
fn read_rusage(path: &Path) -> Option<Rusage> {
    let text = fs::read_to_string(path).ok()?;
    let line = text.lines().rev().find(|line| !line.trim().is_empty())?;
    let mut fields = line.split_whitespace();
    let user_s = fields.next()?.parse().ok()?;
    let sys_s = fields.next()?.parse().ok()?;
    let max_rss_kib = fields.next()?.parse().ok()?;
    Some(Rusage { user_s, sys_s, max_rss_kib })
}

/// `sync; echo 3 > /proc/sys/vm/drop_caches`: page cache, dentries and inodes (root only).
pub fn drop_caches() -> Result<(), String> {
    let _ = Command::new("sync").status();
    fs::write("/proc/sys/vm/drop_caches", "3").map_err(|e| format!("drop_caches (needs root): {e}"))
}
