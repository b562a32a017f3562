//! `dfdu browse` in a real terminal, for `tests/browse_tmux.rs` and `tests/hostile.rs`:
//! each `Term` is a private tmux server (its own socket, no config) with one window
//! running dfdu under a small shell script. Keys go in with `send-keys`, the screen comes
//! back with `capture-pane`.
//!
//! Once dfdu exits, the script prints `EXIT=<status>` (and writes the status to
//! `<script>.exit`, for a terminal left raw where the word may never show) and
//! `MODE=icanon` or `MODE=-icanon`, so a test can see that quitting, signals and job
//! control put the terminal back. The script lives beside the test's directory, not in
//! it: tests compare that directory's listing before and after.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// How long a test waits for the screen it expects.
pub const WAIT: Duration = Duration::from_secs(30);

/// Whether tmux runs here; prints `SKIP: ...` naming the test (the harness names each
/// test's thread after it) when not, and fails when `DFDU_REQUIRE_TMUX` says it must be there.
pub fn have_tmux() -> bool {
    let ok = Command::new("tmux").arg("-V").output().is_ok_and(|o| o.status.success());
    if !ok {
        let test = std::thread::current().name().unwrap_or("a terminal test").to_string();
        eprintln!("SKIP: tmux is not installed; {test} did not run");
        assert!(std::env::var_os("DFDU_REQUIRE_TMUX").is_none(), "DFDU_REQUIRE_TMUX is set but tmux is missing");
    }
    ok
}

/// Writes `bytes` bytes of `x` to `p`, making its parents.
pub fn write(p: &Path, bytes: usize) {
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(p, vec![b'x'; bytes]).unwrap();
}

/// Every path below `root`, relative, directories with a trailing `/`.
pub fn listing(root: &Path) -> BTreeSet<String> {
    walk(root, false)
}

/// As `listing`, with each file's size after its name (through mounts: their contents
/// count as what must stay).
pub fn listing_with_sizes(root: &Path) -> BTreeSet<String> {
    walk(root, true)
}

fn walk(root: &Path, sizes: bool) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let e = e.unwrap();
            let p = e.path();
            let rel = p.strip_prefix(root).unwrap().to_string_lossy().into_owned();
            if e.file_type().unwrap().is_dir() {
                out.insert(format!("{rel}/"));
                stack.push(p);
            } else if sizes {
                out.insert(format!("{rel} {}", e.metadata().unwrap().len()));
            } else {
                out.insert(rel);
            }
        }
    }
    out
}

/// One tmux server with one window running `dfdu browse`.
pub struct Term {
    socket: String,
    /// The script dfdu runs under; `<script>.exit` gets its exit status.
    pub script: PathBuf,
}

static SERVERS: AtomicUsize = AtomicUsize::new(0);

impl Term {
    /// Starts `PREFIX dfdu browse ARGS` in a `cols` × `rows` window; `prefix` is put
    /// before dfdu (environment settings, `prlimit ...`, `cat FILE |`).
    pub fn start(dir: &Path, prefix: &str, args: &str, cols: u16, rows: u16) -> Term {
        let socket = format!("dfdu-test-{}-{}", std::process::id(), SERVERS.fetch_add(1, Ordering::Relaxed));
        let script = dir.with_extension(format!("{socket}.sh"));
        let body = format!(
            "export LC_ALL=C.UTF-8 LANG=C.UTF-8\n\
             trap : INT\n\
             {prefix} '{}' browse {args}\n\
             st=$?\n\
             echo \"EXIT=$st\"\n\
             echo $st > '{}.exit'\n\
             stty -a | tr ' ;' '\\n\\n' | grep -x -e icanon -e -icanon | sed 's/^/MODE=/'\n\
             sleep 600\n",
            env!("CARGO_BIN_EXE_dfdu"),
            script.display()
        );
        std::fs::write(&script, body).unwrap();
        let t = Term { socket, script };
        let (c, r) = (cols.to_string(), rows.to_string());
        let cmd = ["-f", "/dev/null", "new-session", "-d", "-s", "t", "-x", &c, "-y", &r, "sh"];
        let mut args: Vec<&str> = cmd.to_vec();
        args.push(t.script.to_str().unwrap());
        t.tmux(&args);
        t
    }

    /// Starts `command` (run by tmux's shell) instead of dfdu, in a `cols` × `rows`
    /// window: an interactive shell for job control, say.
    pub fn command(dir: &Path, command: &str, cols: u16, rows: u16) -> Term {
        let socket = format!("dfdu-test-{}-{}", std::process::id(), SERVERS.fetch_add(1, Ordering::Relaxed));
        let t = Term { script: dir.with_extension(format!("{socket}.none")), socket };
        let (c, r) = (cols.to_string(), rows.to_string());
        t.tmux(&["-f", "/dev/null", "new-session", "-d", "-s", "t", "-x", &c, "-y", &r, command]);
        t
    }

    pub fn tmux(&self, args: &[&str]) -> Output {
        let out = Command::new("tmux").arg("-u").arg("-L").arg(&self.socket).args(args).output().expect("tmux runs");
        assert!(out.status.success(), "tmux {args:?}: {}", String::from_utf8_lossy(&out.stderr));
        out
    }

    pub fn keys(&self, keys: &[&str]) {
        for k in keys {
            self.tmux(&["send-keys", "-t", "t", k]);
        }
    }

    pub fn screen(&self) -> String {
        String::from_utf8_lossy(&self.tmux(&["capture-pane", "-p", "-t", "t"]).stdout).into_owned()
    }

    pub fn screen_with_escapes(&self) -> String {
        String::from_utf8_lossy(&self.tmux(&["capture-pane", "-p", "-e", "-t", "t"]).stdout).into_owned()
    }

    /// A tmux format evaluated for the pane (e.g. `#{alternate_on}`).
    pub fn pane(&self, format: &str) -> String {
        let out = self.tmux(&["display-message", "-p", "-t", "t", format]);
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    }

    /// Waits until the screen satisfies `ok`; panics with the screen after `WAIT`.
    pub fn wait(&self, what: &str, ok: impl Fn(&str) -> bool) -> String {
        let start = Instant::now();
        loop {
            let s = self.screen();
            if ok(&s) {
                return s;
            }
            assert!(start.elapsed() < WAIT, "timed out waiting for {what}; the screen was:\n{s}");
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    pub fn wait_for(&self, text: &str) -> String {
        self.wait(&format!("{text:?}"), |s| s.contains(text))
    }

    /// The listing's names, top to bottom (last word of each row).
    pub fn names(&self) -> Vec<String> {
        let s = self.screen();
        s.lines()
            .skip(2)
            .take_while(|l| l.contains(" [") && !l.trim().is_empty())
            .map(|l| l.split_whitespace().last().unwrap_or_default().to_string())
            .collect()
    }

    /// The row whose name is `name` (its last word), or an empty string.
    pub fn row(&self, name: &str) -> String {
        let s = self.screen();
        s.lines().skip(2).find(|l| l.split_whitespace().last() == Some(name)).unwrap_or_default().to_string()
    }

    /// Moves the cursor onto the row named `name` (from the top).
    pub fn select(&self, name: &str) {
        self.keys(&["Home"]);
        let names = self.names();
        let k = names.iter().position(|n| n == name).unwrap_or_else(|| panic!("{name} not in {names:?}"));
        for _ in 0..k {
            self.keys(&["j"]);
        }
    }

    /// Selects `name`, presses `d`, waits for the confirmation and returns it.
    pub fn ask_delete(&self, name: &str) -> String {
        self.select(name);
        self.keys(&["d"]);
        self.wait_for("Confirm delete")
    }

    /// Confirms and waits until the deletion is reported; returns the screen.
    pub fn confirm(&self) -> String {
        self.keys(&["y"]);
        self.wait_for("Deleted ")
    }

    pub fn resize(&self, cols: u16, rows: u16) {
        self.tmux(&["resize-window", "-t", "t", "-x", &cols.to_string(), "-y", &rows.to_string()]);
    }
}

impl Drop for Term {
    fn drop(&mut self) {
        let _ = Command::new("tmux").args(["-L", &self.socket, "kill-server"]).output();
        let _ = std::fs::remove_file(&self.script);
        let _ = std::fs::remove_file(format!("{}.exit", self.script.display()));
    }
}
