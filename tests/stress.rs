//! Shapes that break naive walkers, checked against the system `du` on the same tree:
//! a chain 10,000 directories deep (paths far beyond PATH_MAX), a deep branching tree
//! under a tiny open-file limit (the scanner must re-open, never fail with EMFILE), a
//! directory of 120,000 files (inode-sorted batches and split stat work), and the
//! portable `std::fs` reader as an independent oracle for the native one.

mod common;

use common::{dfdu_path, have_or_skip, Scratch};
use std::path::Path;
use std::process::{Command, Output};

/// Builds trees with Python's `*at` calls, since std cannot create paths this deep.
fn python(script: &str, cwd: &Path) {
    let st = Command::new("python3").arg("-c").arg(script).current_dir(cwd).status().expect("python3 runs");
    assert!(st.success(), "tree builder failed");
}

/// Runs `prog` as `du` (argv[0], or under the `wrap` command) in `cwd`.
fn run_as_du(prog: &Path, args: &[&str], cwd: &Path, wrap: Option<&[&str]>, threads: &str) -> Output {
    use std::os::unix::process::CommandExt;
    let mut cmd = match wrap {
        Some(w) => {
            let mut c = Command::new(w[0]);
            c.args(&w[1..]).arg(prog);
            c
        }
        None => {
            let mut c = Command::new(prog);
            c.arg0("du");
            c
        }
    };
    cmd.args(args).current_dir(cwd).env("LC_ALL", "C").env("DFDU_THREADS", threads).output().unwrap()
}

fn same_as_du(args: &[&str], cwd: &Path, wrap: Option<&[&str]>) {
    same_as_du_threads(args, cwd, wrap, "2");
}

fn same_as_du_threads(args: &[&str], cwd: &Path, wrap: Option<&[&str]>, threads: &str) {
    let want = run_as_du(Path::new("du"), args, cwd, None, "1");
    let got = run_as_du(&dfdu_path(), args, cwd, wrap, threads);
    assert_eq!(
        want.status.code(),
        got.status.code(),
        "exit status for {args:?}: {}",
        String::from_utf8_lossy(&got.stderr)
    );
    assert!(
        want.stdout == got.stdout,
        "stdout differs for {args:?} ({} vs {} bytes)",
        want.stdout.len(),
        got.stdout.len()
    );
    assert!(want.stdout.len() > 1, "du printed nothing for {args:?}");
}

#[test]
fn chain_ten_thousand_deep() {
    let scratch = Scratch::new("deep");
    let dir = scratch.dir.clone();
    python(
        "import os\nfd=os.open('.',os.O_RDONLY)\nfor i in range(10000):\n os.mkdir('d',dir_fd=fd)\n n=os.open('d',os.O_RDONLY,dir_fd=fd)\n os.close(fd); fd=n\nf=os.open('leaf',os.O_CREAT|os.O_WRONLY,0o644,dir_fd=fd)\nos.write(f,b'x'*5000)\n",
        &dir,
    );
    same_as_du(&["-s", "d"], &dir, None);
    same_as_du(&["d"], &dir, None);
    same_as_du(&["-a", "-d", "3", "d"], &dir, None);
}

/// Issue 24, item 12: on a chain 20,000 directories deep, `dfdu -s` and plain `dfdu` did not
/// finish in 300 s with one or two threads (GNU du: 2 s, `dfdu scan`: under 1 s): the "moved
/// during the walk" check re-opened each finished directory's parent from the root by names,
/// one level at a time. Both outputs must be GNU du's, with 1 and 2 threads. Each run is cut
/// off by `timeout`, so a walk gone quadratic again fails instead of hanging; the bound is
/// far above the real time (times are measured with hyperfine, see docs/design.md).
#[test]
fn chain_twenty_thousand_deep_in_linear_time() {
    let mut scratch = Scratch::new("deep20k");
    let dir = scratch.subdir("t");
    // On a tmpfs where one can be mounted: removing 20,000 directories from a disk mounted
    // with `discard` takes minutes, and the walk is the same on any file system.
    if let Err(why) = scratch.mount_tmpfs(&dir) {
        common::notice(&format!("chain_twenty_thousand_deep_in_linear_time: on the scratch file system ({why})"));
    }
    python(
        "import os\nfd=os.open('.',os.O_RDONLY)\nfor i in range(20000):\n os.mkdir('d',dir_fd=fd)\n n=os.open('d',os.O_RDONLY,dir_fd=fd)\n os.close(fd); fd=n\nf=os.open('leaf',os.O_CREAT|os.O_WRONLY,0o644,dir_fd=fd)\nos.write(f,b'x'*5000)\nos.mkdir('sub',dir_fd=fd)\n",
        &dir,
    );
    for threads in ["1", "2"] {
        for args in [&["-s", "d"][..], &["d"]] {
            same_stream_as_du(args, &dir, threads);
        }
    }
}

/// Runs GNU du and dfdu side by side, each under `timeout`, and compares their outputs as
/// they stream (plain output of a 20,000-level chain is about 400 MB: never held whole).
fn same_stream_as_du(args: &[&str], cwd: &Path, threads: &str) {
    use std::io::{BufRead, BufReader, Read};
    use std::process::Stdio;
    const BOUND_SECONDS: &str = "100";
    let start = |prog: &Path| {
        Command::new("timeout")
            .arg(BOUND_SECONDS)
            .arg(prog)
            .args(args)
            .current_dir(cwd)
            .env("LC_ALL", "C")
            .env("DFDU_THREADS", threads)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("timeout runs")
    };
    let (mut want, mut got) = (start(Path::new("/usr/bin/du")), start(&dfdu_path()));
    let errors = |child: &mut std::process::Child| {
        let mut pipe = child.stderr.take().unwrap();
        std::thread::spawn(move || {
            let mut text = String::new();
            let _ = pipe.read_to_string(&mut text);
            text
        })
    };
    let (want_err, got_err) = (errors(&mut want), errors(&mut got));
    let mut a = BufReader::with_capacity(1 << 20, want.stdout.take().unwrap());
    let mut b = BufReader::with_capacity(1 << 20, got.stdout.take().unwrap());
    let mut same_bytes: u64 = 0;
    let mut differs = None;
    loop {
        let (fa, fb) = (a.fill_buf().unwrap(), b.fill_buf().unwrap());
        let n = fa.len().min(fb.len());
        if n == 0 {
            if !(fa.is_empty() && fb.is_empty()) {
                differs = Some(format!("one output ends at byte {same_bytes}, the other goes on"));
            }
            break;
        }
        if fa[..n] != fb[..n] {
            let i = (0..n).find(|&i| fa[i] != fb[i]).unwrap_or(0);
            differs = Some(format!("outputs differ at byte {}", same_bytes + i as u64));
            break;
        }
        same_bytes += n as u64;
        a.consume(n);
        b.consume(n);
    }
    // Drain both, so neither waits on a full pipe after a difference.
    let _ = std::io::copy(&mut a, &mut std::io::sink());
    let _ = std::io::copy(&mut b, &mut std::io::sink());
    let (want_status, got_status) = (want.wait().unwrap(), got.wait().unwrap());
    let (want_err, got_err) = (want_err.join().unwrap(), got_err.join().unwrap());
    let what = format!("{args:?} with {threads} thread(s)");
    assert!(want_status.success(), "GNU du failed for {what}: {want_err}");
    assert!(got_status.code() != Some(124), "dfdu {what} did not finish within {BOUND_SECONDS} s");
    assert_eq!(got_status.code(), want_status.code(), "exit status for {what}: {got_err}");
    assert_eq!(got_err, want_err, "stderr for {what}");
    assert!(differs.is_none(), "stdout for {what}: {}", differs.unwrap_or_default());
    assert!(same_bytes > 1, "du printed nothing for {what}");
}

#[test]
fn deep_branching_tree_under_a_tiny_fd_limit() {
    if Command::new("prlimit").arg("--version").output().is_err() {
        eprintln!("SKIP: prlimit (util-linux) not installed");
        return;
    }
    let scratch = Scratch::new("branch");
    let dir = scratch.dir.clone();
    // 400 levels; every level has the chain dir plus a side dir holding files, so a
    // depth-first walker keeps one pending sibling per level: 400 handles wanted.
    python(
        "import os\nfd=os.open('.',os.O_RDONLY)\nos.mkdir('t',dir_fd=fd)\nn=os.open('t',os.O_RDONLY,dir_fd=fd); os.close(fd); fd=n\nfor i in range(400):\n for s in ('side','zz'):\n  os.mkdir(s,dir_fd=fd)\n s=os.open('side',os.O_RDONLY,dir_fd=fd)\n for k in range(3):\n  f=os.open('f%d'%k,os.O_CREAT|os.O_WRONLY,0o644,dir_fd=s); os.write(f,b'y'*(k*3000)); os.close(f)\n os.close(s)\n n=os.open('zz',os.O_RDONLY,dir_fd=fd); os.close(fd); fd=n\n",
        &dir,
    );
    let wrap: &[&str] = &["prlimit", "--nofile=40:40"];
    for threads in ["1", "2", "8"] {
        same_as_du_threads(&["t"], &dir, Some(wrap), threads);
        same_as_du_threads(&["-a", "t"], &dir, Some(wrap), threads);
    }
}

/// Issue 10, item 10: under `--nofile=32` and `--nofile=10` GNU du succeeds, while dfdu
/// reported hundreds of EMFILE errors and wrong totals (its handle budget was half the
/// limit, at least 16, whatever the thread count). The budget now comes from the real
/// limit, the handles already open and the threads; too few handles mean fewer threads
/// and more re-opening, never lost entries.
#[test]
fn low_open_file_limits_lose_no_entries() {
    if Command::new("prlimit").arg("--version").output().is_err() {
        eprintln!("SKIP: prlimit (util-linux) not installed");
        assert!(std::env::var_os("DFDU_REQUIRE_ROOT").is_none(), "prlimit is required here");
        return;
    }
    let scratch = Scratch::new("nofile");
    let dir = scratch.dir.clone();
    // 100 levels, each with a side directory of files and 20 empty siblings, so that
    // many directories wait for a handle at once.
    python(
        "import os\nfd=os.open('.',os.O_RDONLY)\nos.mkdir('t',dir_fd=fd)\nn=os.open('t',os.O_RDONLY,dir_fd=fd); os.close(fd); fd=n\nfor i in range(100):\n for s in ['side','zz']+['e%02d'%k for k in range(20)]:\n  os.mkdir(s,dir_fd=fd)\n s=os.open('side',os.O_RDONLY,dir_fd=fd)\n for k in range(3):\n  f=os.open('f%d'%k,os.O_CREAT|os.O_WRONLY,0o644,dir_fd=s); os.write(f,b'y'*(k*3000)); os.close(f)\n os.close(s)\n n=os.open('zz',os.O_RDONLY,dir_fd=fd); os.close(fd); fd=n\n",
        &dir,
    );
    for limit in ["--nofile=32:32", "--nofile=10:10"] {
        let wrap: &[&str] = &["prlimit", limit];
        for threads in ["1", "32"] {
            same_as_du_threads(&["t"], &dir, Some(wrap), threads);
            same_as_du_threads(&["-a", "t"], &dir, Some(wrap), threads);
        }
        // dfdu scan: every entry counted, no error.
        let out = Command::new("prlimit")
            .arg(limit)
            .arg(dfdu_path())
            .args(["scan", "-j", "8", "t"])
            .current_dir(&dir)
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success(), "dfdu scan under {limit}: {}", String::from_utf8_lossy(&out.stderr));
        assert!(text.contains(" 2501  (2201 directories, 300 files"), "dfdu scan under {limit}:\n{text}");
    }
}

/// Issue 10, item 9: with threads that cannot be created (here a 40 MiB address space
/// for 32 threads) dfdu panicked with "failed to spawn thread" (exit 134). It now runs
/// with the threads that started, at least the calling one, and answers like du.
#[test]
fn threads_that_cannot_start_are_done_without() {
    if Command::new("prlimit").arg("--version").output().is_err() {
        eprintln!("SKIP: prlimit (util-linux) not installed");
        assert!(std::env::var_os("DFDU_REQUIRE_ROOT").is_none(), "prlimit is required here");
        return;
    }
    let scratch = Scratch::new("threads");
    let dir = scratch.dir.clone();
    python(
        "import os\nfor i in range(400):\n os.makedirs('t/d%d/e'%i)\n for k in range(5):\n  open('t/d%d/e/f%d'%(i,k),'wb').write(b'q'*(k*1500))\n",
        &dir,
    );
    let wrap: &[&str] = &["prlimit", "--as=41943040"];
    same_as_du_threads(&["-s", "t"], &dir, Some(wrap), "32");
    same_as_du_threads(&["-a", "t"], &dir, Some(wrap), "32");
    let out = Command::new("prlimit")
        .args(["--as=41943040"])
        .arg(dfdu_path())
        .args(["scan", "-j", "32", "t"])
        .current_dir(&dir)
        .output()
        .unwrap();
    assert!(out.status.success(), "dfdu scan: {:?} {}", out.status, String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stdout).contains(" 2801  (801 directories, 2000 files"));
    // Issue 24, item 8: with room for some threads' malloc arenas (64 MiB reserved each)
    // but not for 64 of them, the threads that started left the rest no memory ("memory
    // allocation failed", exit 134); the thread count now leaves half of what is free.
    let wrap: &[&str] = &["prlimit", "--as=419430400"];
    for _ in 0..3 {
        same_as_du_threads(&["-s", "t"], &dir, Some(wrap), "64");
        same_as_du_threads(&["-a", "t"], &dir, Some(wrap), "64");
        let out = Command::new("prlimit")
            .args(["--as=419430400"])
            .arg(dfdu_path())
            .args(["scan", "-j", "64", "t"])
            .current_dir(&dir)
            .output()
            .unwrap();
        assert!(out.status.success(), "dfdu scan: {:?} {}", out.status, String::from_utf8_lossy(&out.stderr));
    }
}

/// Issue 24, item 8: when no thread at all can be created (`RLIMIT_NPROC` of 1 for a user
/// with no other process: nobody here), du's scan could not start beside its ordered pass
/// and dfdu panicked ("failed to spawn thread", exit 134). The scan now runs first, on the
/// calling thread, and the output is GNU du's (run as nobody too), for `-s`, plain du and
/// `-a`, with one thread asked for and with eight, and with a pending budget of one byte
/// (`DFDU_DEBUG_PENDING_BUDGET`): a scan held back for an ordered pass that has not
/// started would never end (`timeout` cuts it off).
#[test]
fn du_runs_when_no_thread_can_be_created() {
    use std::os::unix::process::CommandExt;
    if !common::is_root() || Command::new("prlimit").arg("--version").output().is_err() {
        eprintln!("SKIP: du_runs_when_no_thread_can_be_created: needs root (to run as nobody) and prlimit");
        assert!(std::env::var_os("DFDU_REQUIRE_ROOT").is_none(), "root and prlimit are required here");
        return;
    }
    let scratch = Scratch::new("nproc");
    let dir = scratch.dir.clone();
    if !common::reachable_by_others(&dir) {
        eprintln!("SKIP: du_runs_when_no_thread_can_be_created: the scratch directory is not reachable by nobody");
        return;
    }
    python(
        "import os\nfor i in range(300):\n os.makedirs('t/d%d/e'%(i%40) + '/x'*(i%3), exist_ok=True)\n \
         open('t/d%d/f%d'%(i%40,i),'wb').write(b'q'*(i*700))\n",
        &dir,
    );
    let bin = common::copy_executable(&dfdu_path(), &scratch.subdir("bin"), "du");
    let as_nobody = |program: &Path, args: &[&str], threads: &str, budget: &str| {
        let mut c = Command::new("timeout");
        c.args(["60", "prlimit", "--nproc=1:1"]).arg(program).args(args).current_dir(&dir).env("LC_ALL", "C");
        c.env("DFDU_THREADS", threads).env("DFDU_DEBUG_PENDING_BUDGET", budget);
        c.uid(65534).gid(65534).output().unwrap()
    };
    for args in [&["-s", "t"][..], &["t"], &["-a", "t"]] {
        let want = as_nobody(Path::new("du"), args, "1", "");
        assert!(want.status.success() && want.stdout.len() > 1, "GNU du {args:?}: {want:?}");
        for (threads, budget) in [("1", ""), ("8", ""), ("8", "1")] {
            let got = as_nobody(&bin, args, threads, budget);
            let err = String::from_utf8_lossy(&got.stderr);
            let what = format!("{args:?} with {threads} threads, pending budget {budget:?}");
            assert_eq!(got.status.code(), Some(0), "{what}: {err}");
            assert!(got.stdout == want.stdout, "{what}: stdout differs from GNU du's");
        }
    }
    // The benchmark's yardstick too (`dfdu floor`): the same sums as without the limit.
    let dfdu_bin = common::copy_executable(&dfdu_path(), &scratch.subdir("bin"), "dfdu");
    let floor = |wrap: &[&str], threads: &str| {
        let mut c = Command::new(wrap[0]);
        c.args(&wrap[1..]).arg(&dfdu_bin).arg("floor").args(["-j", threads, "t"]).current_dir(&dir);
        c.uid(65534).gid(65534).output().unwrap()
    };
    let want = floor(&["env"], "1");
    let got = floor(&["prlimit", "--nproc=1:1"], "8");
    assert_eq!(got.status.code(), Some(0), "floor: {}", String::from_utf8_lossy(&got.stderr));
    assert!(want.stdout.ends_with(b" entries\n") && got.stdout == want.stdout, "floor: {want:?} {got:?}");
}

/// Issue 10, item 6: `--files0-from` read the whole list before doing any name, so
/// `/dev/zero` grew without bound and a slow list showed nothing until it ended. GNU du
/// does each name as it reads it. The list comes through a pipe that stays open: the
/// first name's line and the message for a missing name must arrive before the writer
/// closes it, and the whole output must be GNU du's.
#[test]
fn files0_from_a_pipe_is_done_as_it_is_read() {
    use std::io::{BufRead, BufReader, Write};
    use std::process::Stdio;
    let scratch = Scratch::new("files0");
    let dir = scratch.dir.clone();
    python("import os\nos.makedirs('a/b')\nopen('a/f','wb').write(b'x'*9000)\nopen('g','wb').write(b'y')\n", &dir);
    let mut child = Command::new(dfdu_path())
        .arg("--files0-from=-")
        .current_dir(&dir)
        .env("LC_ALL", "C")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut names = child.stdin.take().unwrap();
    // Lines arrive through channels, so a dfdu that waits for the end of the list fails
    // the test after a timeout instead of hanging it.
    let lines = |pipe: Box<dyn std::io::Read + Send>| {
        let (tx, rx) = std::sync::mpsc::channel::<String>();
        std::thread::spawn(move || {
            for line in BufReader::new(pipe).lines() {
                let _ = tx.send(line.unwrap_or_default());
            }
        });
        rx
    };
    let out = lines(Box::new(child.stdout.take().unwrap()));
    let err = lines(Box::new(child.stderr.take().unwrap()));
    let wait = std::time::Duration::from_secs(20);
    names.write_all(b"a\0").unwrap();
    names.flush().unwrap();
    // du prints a's subdirectory first, then a; both come while the pipe is open.
    for want in ["\ta/b", "\ta"] {
        let line = out.recv_timeout(wait).expect("output for the first name while the list is still open");
        assert!(line.ends_with(want), "expected a line ending {want:?}, got {line:?}");
    }
    names.write_all(b"missing\0").unwrap();
    names.flush().unwrap();
    let line = err.recv_timeout(wait).expect("a message for a missing name while the list is open");
    assert!(line.contains("cannot access 'missing'"), "{line:?}");
    names.write_all(b"\0g").unwrap();
    drop(names);
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(1));
    let rest: Vec<String> = out.iter().collect();
    let rest_err: Vec<String> = err.iter().collect();
    assert!(rest.len() == 1 && rest[0].ends_with("\tg"), "{rest:?}");
    assert!(rest_err.len() == 1 && rest_err[0].ends_with("-:3: invalid zero-length file name"), "{rest_err:?}");
    // The same list in one piece: GNU du's bytes.
    let du = Command::new("sh")
        .arg("-c")
        .arg(format!("printf 'a\\0missing\\0\\0g' | du --files0-from=- 2>&1; printf 'a\\0missing\\0\\0g' | {} --files0-from=- 2>&1", dfdu_path().display()))
        .current_dir(&dir)
        .env("LC_ALL", "C")
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&du.stdout).replace(&dfdu_path().display().to_string(), "du");
    let half = text.len() / 2;
    assert_eq!(text[..half], text[half..], "GNU du, then dfdu:\n{text}");
}

/// A read of the `--files0-from` list that a signal interrupts (EINTR: a list on NFS or
/// FUSE, or a FIFO) is tried again: under strace every other read of the list fails with
/// EINTR, and the output and status are still GNU du's.
#[test]
fn files0_from_retries_interrupted_reads() {
    if !have_or_skip("strace", "files0_from_retries_interrupted_reads") {
        return;
    }
    let scratch = Scratch::new("files0-eintr");
    let dir = scratch.dir.clone();
    // A list of 20,001 names (about 180 KB: several 64 KiB reads).
    python(
        "import os\nos.makedirs('a/b')\nopen('a/f','wb').write(b'x'*9000)\nopen('g','wb').write(b'y')\n\
         open('list','wb').write(b'a\\0' + b'a/b\\0g\\0' * 10000)\n",
        &dir,
    );
    let list = dir.join("list");
    let list = list.to_str().unwrap();
    let strace =
        ["strace", "-f", "-qq", "-o", "/dev/null", "-e", "trace=read", "-e", "inject=read:error=EINTR:when=1+2"];
    let wrap: Vec<&str> = strace.iter().copied().chain(["-P", list]).collect();
    same_as_du(&["--files0-from=list"], &dir, Some(&wrap));
    same_as_du(&["-a", "--files0-from=list"], &dir, Some(&wrap));
}

#[test]
fn directory_of_120k_files_lists_in_du_order() {
    let scratch = Scratch::new("wide");
    let dir = scratch.dir.clone();
    python(
        "import os\nos.mkdir('w')\nfd=os.open('w',os.O_RDONLY)\nfor i in range(120000):\n os.close(os.open('f%06d'%i,os.O_CREAT|os.O_WRONLY,0o644,dir_fd=fd))\nfor i in range(0,120000,10007):\n os.mkdir('sub%06d'%i,dir_fd=fd)\n",
        &dir,
    );
    same_as_du(&["-a", "w"], &dir, None);
    same_as_du(&["-s", "w"], &dir, None);
    same_as_du(&["w"], &dir, None);
}

#[test]
fn portable_reader_agrees_with_native() {
    let scratch = Scratch::new("oracle");
    let dir = scratch.dir.clone();
    python(
        "import os\nfor d in ['a/b/c','a/x','e']:\n os.makedirs(d)\nfor i,p in enumerate(['a/f','a/b/g','a/b/c/h','a/x/i','e/j']):\n open(p,'wb').write(b'z'*(i*5000))\nos.link('a/f','e/hl')\nos.symlink('../a','e/ln')\nos.symlink('nowhere','e/dangling')\nopen('a/sparse','wb').truncate(1<<20)\n",
        &dir,
    );
    for args in
        [&["-a", "."][..], &["-ab", "."], &["--inodes", "-a", "."], &["-aL", "."], &["-s", "a", "e"], &["-S", "."]]
    {
        let native = run_as_du(&dfdu_path(), args, &dir, None, "2");
        let mut cmd = Command::new(dfdu_path());
        let portable =
            cmd.args(args).current_dir(&dir).env("LC_ALL", "C").env("DFDU_READER", "portable").output().unwrap();
        assert_eq!(native.stdout, portable.stdout, "readers disagree for {args:?}");
        assert_eq!(native.status.code(), portable.status.code());
        assert!(!native.stdout.is_empty());
    }
}

/// A directory moved away while the walk is inside it (coreutils'
/// move-dir-while-traversing.sh, made deterministic): when `t/3/a/b/c/d` is opened, an
/// inotify watch sees it and `t/3/a/b` is renamed to `t/b` while strace holds the first
/// read of `d` for a second. GNU du (fts) notices on the way back up ("fts_read failed:
/// t/3/a/b: No such file or directory", status 1); dfdu must print the same lines, the
/// same message and status. Both run under the same strace.
#[test]
fn directory_moved_during_the_walk() {
    if !have_or_skip("strace", "directory_moved_during_the_walk") {
        return;
    }
    let scratch = Scratch::new("moved-dir");
    for (i, args) in [&["-a", "t"][..], &["t"]].into_iter().enumerate() {
        let want = run_moving(Path::new("du"), args, &scratch.dir.join(format!("du{i}")));
        let got = run_moving(&dfdu_path(), args, &scratch.dir.join(format!("dfdu{i}")));
        assert!(!want.stdout.is_empty(), "du printed nothing for {args:?}");
        assert_eq!(String::from_utf8_lossy(&want.stdout), String::from_utf8_lossy(&got.stdout), "stdout for {args:?}");
        // The program name differs (du by PATH, dfdu by its path); what follows must not.
        let message = |o: &Output| {
            let text = String::from_utf8_lossy(&o.stderr).into_owned();
            text.lines().map(|l| l.split_once(": ").map_or(l, |(_, rest)| rest).to_owned()).collect::<Vec<_>>()
        };
        assert_eq!(message(&want), vec!["fts_read failed: t/3/a/b: No such file or directory"], "GNU du's message");
        assert_eq!(message(&got), message(&want), "stderr for {args:?}");
        assert_eq!(got.status.code(), want.status.code(), "exit status for {args:?}");
    }
}

/// Runs `prog args` in a fresh `dir/t/3/a/b/c/d/e/f` under strace and moves `t/3/a/b` to
/// `t/b` as soon as `d` is opened.
fn run_moving(prog: &Path, args: &[&str], dir: &Path) -> Output {
    use rustix::fs::inotify;
    use std::mem::MaybeUninit;
    use std::time::{Duration, Instant};
    let deep = dir.join("t/3/a/b/c/d");
    std::fs::create_dir_all(deep.join("e/f")).unwrap();
    std::fs::write(deep.join("e/f/file"), b"x").unwrap();
    std::fs::write(deep.join("data"), vec![7u8; 9000]).unwrap();
    let watch = inotify::init(inotify::CreateFlags::NONBLOCK | inotify::CreateFlags::CLOEXEC).unwrap();
    inotify::add_watch(&watch, &deep, inotify::WatchFlags::OPEN).unwrap();
    let child = Command::new("strace")
        .args(["-f", "-qq", "-o", "/dev/null", "-e", "inject=all:delay_exit=1000000", "-P"])
        .arg(&deep)
        .arg(prog)
        .args(args)
        .current_dir(dir)
        .env("LC_ALL", "C")
        .env("DFDU_THREADS", "2")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("strace runs");
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut buf = [MaybeUninit::uninit(); 1024];
    let mut events = inotify::Reader::new(&watch, &mut buf);
    loop {
        match events.next() {
            Ok(_) => break,
            Err(rustix::io::Errno::AGAIN) => {
                assert!(Instant::now() < deadline, "{} never opened t/3/a/b/c/d", prog.display());
                std::thread::sleep(Duration::from_millis(2));
            }
            Err(e) => panic!("inotify: {e}"),
        }
    }
    std::fs::rename(dir.join("t/3/a/b"), dir.join("t/b")).unwrap();
    child.wait_with_output().unwrap()
}

/// `-s` over one argument sums each finished subtree that the ordered pass has not reached
/// into one record (du/records.rs, `fold_subtrees`). Here the first subdirectory in GNU
/// order is held under strace for half a second (its first call in each thread), so the workers finish the rest
/// first and it is folded; the totals of every `-s` variant must still be GNU du's: sizes,
/// entry counts, times, `-S`, `-c`, hard links across subtrees and a threshold.
#[test]
fn summary_with_subtrees_folded_while_the_first_is_held() {
    if !have_or_skip("strace", "summary_with_subtrees_folded_while_the_first_is_held") {
        return;
    }
    let scratch = Scratch::new("folded");
    let dir = scratch.dir.clone();
    python(
        "import os\n\
         for i in range(12):\n\
         \x20for j in range(6):\n\
         \x20 d='t/s%02d/m%d/leaf' % (i, j)\n\
         \x20 os.makedirs(d)\n\
         \x20 open(d+'/f','wb').write(b'x'*(1000*i+37*j+1))\n\
         \x20 open('t/s%02d/m%d/g' % (i, j),'wb').write(b'y'*(5000*j))\n\
         \x20 os.utime('t/s%02d/m%d/g' % (i, j), (1_500_000, 1_500_000))\n\
         \x20 os.utime(d+'/f', (1_000_000+i*1000+j, 1_000_000+i*1000+j))\n\
         os.link('t/s03/m1/leaf/f', 't/s07/m2/link')\n\
         os.link('t/s00/m0/leaf/f', 't/s11/m5/link')\n\
         os.utime('t/s05/m4', (2_000_000, 2_000_000))\n\
         for top, dirs, files in os.walk('t', topdown=False):\n\
         \x20if top != 't/s05/m4': os.utime(top, (1000, 1000))\n",
        &dir,
    );
    let first = run_as_du(Path::new("du"), &["-d1", "t"], &dir, None, "1");
    let first = String::from_utf8(first.stdout).unwrap();
    let held = first.lines().next().and_then(|l| l.split('\t').nth(1)).expect("du -d1 lists a subdirectory");
    let held = dir.join(held);
    let held = held.to_str().unwrap();
    // The newest time of all on a directory deep in a subtree that is not held (folded).
    let newest = if held.ends_with("s05") { "t/s06/m3/leaf" } else { "t/s05/m3/leaf" };
    python(&format!("import os\nos.utime('{newest}', (3_000_000, 3_000_000))\n"), &dir);
    let wrap = ["strace", "-f", "-qq", "-o", "/dev/null", "-e", "inject=all:delay_exit=500000:when=1", "-P", held];
    for args in [
        &["-s", "t"][..],
        &["-s", "--inodes", "t"],
        &["-s", "--time", "t"],
        &["-s", "--time=ctime", "--inodes", "t"],
        &["-sS", "t"],
        &["-sc", "t"],
        &["-s", "-b", "t"],
        &["-s", "-t", "200K", "t"],
        &["-d0", "-l", "t"],
    ] {
        same_as_du_threads(args, &dir, Some(&wrap), "4");
    }
}

/// With more than one argument every directory counts once across all of them (GNU's
/// hash of every inode), so a directory reached twice inside one argument — here `x` and
/// a bind mount of it — is charged once; nothing may be folded out of that check. On a
/// tmpfs (readdir lists the newest name first, so `held`, made last, comes first in GNU
/// order) `held` is held under strace while the rest is scanned. Root only (mounts).
#[test]
fn summary_of_several_arguments_counts_a_bind_mounted_directory_once() {
    if !common::is_root() {
        eprintln!("SKIP: summary_of_several_arguments_counts_a_bind_mounted_directory_once: needs root (mounts)");
        return;
    }
    if !have_or_skip("strace", "summary_of_several_arguments_counts_a_bind_mounted_directory_once") {
        return;
    }
    let mut scratch = Scratch::new("folded-bind");
    let dir = scratch.dir.clone();
    let u = dir.join("u");
    std::fs::create_dir(&u).unwrap();
    scratch.mount_tmpfs(&u).expect("mount a tmpfs");
    python(
        "import os\n\
         os.makedirs('u/sA/x/deep')\n\
         open('u/sA/x/deep/data','wb').write(b'z'*300000)\n\
         open('u/sA/own','wb').write(b'o'*7000)\n\
         os.makedirs('u/sB')\n\
         os.makedirs('u/held/inner')\n\
         open('u/held/inner/f','wb').write(b'h'*5000)\n\
         os.makedirs('other')\n\
         open('other/f','wb').write(b'q'*3000)\n",
        &dir,
    );
    scratch.mount_bind(&u.join("sA/x"), &u.join("sB")).expect("bind mount");
    let first = run_as_du(Path::new("du"), &["-d1", "u"], &dir, None, "1");
    let first = String::from_utf8(first.stdout).unwrap();
    assert_eq!(first.lines().next().and_then(|l| l.split('\t').nth(1)), Some("u/held"), "tmpfs lists the newest first");
    let held = dir.join("u/held");
    let wrap = [
        "strace",
        "-f",
        "-qq",
        "-o",
        "/dev/null",
        "-e",
        "inject=all:delay_exit=500000:when=1",
        "-P",
        held.to_str().unwrap(),
    ];
    for args in [&["-s", "u", "other"][..], &["-sc", "other", "u"], &["-s", "--inodes", "u", "other"]] {
        same_as_du_threads(args, &dir, Some(&wrap), "4");
    }
}

/// On XFS a cold directory's lookups serialize, so the scanner keeps a big directory's
/// stats on its lister when they cost like cold ones (`stays_serial`); the knob
/// `DFDU_DEBUG_COLD_STAT_NS=0` takes that path whatever the cache holds. A folder of
/// 7,000 entries (four chunks' worth) with subdirectories and hard links among them, on a
/// loop-mounted XFS image, must come out as GNU du has it, in du's modes and in `dfdu
/// scan` (whose chunks then never run early). Root only (loop mount).
#[test]
fn big_folder_on_xfs_stat_ed_by_its_lister_alone() {
    use common::dupes::{need_root_and, LoopFs};
    let test = "big_folder_on_xfs_stat_ed_by_its_lister_alone";
    if !need_root_and("mkfs.xfs", test) {
        return;
    }
    let fsys = LoopFs::labelled("xfs", "stress-xfs", "512M").expect("make and mount an XFS image");
    let dir = fsys.mnt.clone();
    python(
        "import os\n\
         os.makedirs('big')\n\
         for i in range(7000):\n\
         \x20if i % 700 == 5:\n\
         \x20\x20os.makedirs('big/d%05d/inner' % i)\n\
         \x20\x20open('big/d%05d/inner/f' % i, 'wb').write(b'i' * (i * 3))\n\
         \x20elif i % 1000 == 999:\n\
         \x20\x20os.link('big/f%05d' % (i - 500), 'big/l%05d' % i)\n\
         \x20else:\n\
         \x20\x20open('big/f%05d' % i, 'wb').write(b'x' * ((i * 37) % 20000))\n",
        &dir,
    );
    let wrap: &[&str] = &["env", "DFDU_DEBUG_COLD_STAT_NS=0"];
    for args in [&["-s", "big"][..], &["big"], &["-a", "big"], &["-s", "--inodes", "big"], &["-a", "-b", "big"]] {
        same_as_du_threads(args, &dir, Some(wrap), "4");
    }
    let want = run_as_du(Path::new("du"), &["-sB1", "big"], &dir, None, "1");
    let want: u64 = String::from_utf8_lossy(&want.stdout).split('\t').next().unwrap().parse().unwrap();
    let got = run_as_du(&dfdu_path(), &["scan", "--json", "big"], &dir, Some(wrap), "4");
    let got = String::from_utf8_lossy(&got.stdout).into_owned();
    assert_eq!(common::json_num(&got, "disk_bytes"), Some(want), "dfdu scan's total against du -sB1: {got}");
}
