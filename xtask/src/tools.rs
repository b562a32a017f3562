//! The tools `run` compares: their timed commands, their raw-byte commands, how to find
//! them (and how to build the dfdu among them, `build_dfdu`), and how to read a byte total
//! out of what each one prints.
//!
//! A tool that is not installed is skipped and named in the report. Commands follow
//! `shared/ref/peers-bench.md`: summary-only invocations, no progress output, and for the
//! byte check each tool's own raw-bytes flag.

use std::collections::HashSet;
use std::ffi::OsString;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// How to read a disk-usage total in bytes from a tool's output.
#[derive(Clone, Copy)]
pub enum Parse {
    /// The number at the start of the first line (`du -s -B1`, `gdu --no-prefix`).
    FirstNumber,
    /// The largest number that starts a line: the root's total in a tree chart, since no
    /// child is bigger than the root (`pdu -b plain`, `dust -o b`).
    LargestLeading,
    /// The line whose path is `total` if there is one, else `LargestLeading` (dua).
    TotalLine,
    /// diskus: `6.97 GB (6,970,458,112 bytes)` on a terminal, the bare number otherwise.
    Parenthesized,
    /// ncdu's JSON export, summing `dsize` and counting each hard-linked inode once.
    NcduJson,
    /// `dfdu scan --json`: the first `"disk_bytes"` field, which is the first root's.
    DfduScanJson,
}

pub struct Tool {
    /// Short label for tables ("pdu-t2").
    pub name: String,
    pub program: PathBuf,
    /// The timed command's arguments.
    pub args: Vec<OsString>,
    /// The untimed raw-bytes command, if the tool has one.
    pub bytes_args: Option<Vec<OsString>>,
    pub parse: Parse,
    pub version: String,
}

impl Tool {
    /// The timed command as one line for the report (program by its file name).
    pub fn command_line(&self, dir: &Path) -> String {
        let program = self.program.file_name().unwrap_or_default().to_string_lossy();
        let args: Vec<String> = self
            .args
            .iter()
            .map(|arg| if arg == dir.as_os_str() { "DIR".to_string() } else { arg.to_string_lossy().into_owned() })
            .collect();
        format!("{program} {}", args.join(" "))
    }
}

struct Spec {
    name: &'static str,
    program: &'static str,
    /// `{DIR}` and `{NCPU}` are replaced.
    args: &'static [&'static str],
    bytes_args: Option<&'static [&'static str]>,
    parse: Parse,
    version_args: &'static [&'static str],
}

const PEERS: &[Spec] = &[
    Spec {
        name: "dua",
        program: "dua",
        args: &["aggregate", "{DIR}"],
        bytes_args: Some(&["-f", "bytes", "aggregate", "{DIR}"]),
        parse: Parse::TotalLine,
        version_args: &["--version"],
    },
    Spec {
        name: "gdu",
        program: "gdu",
        args: &["-n", "-p", "-s", "{DIR}"],
        bytes_args: Some(&["-n", "-p", "-s", "--no-prefix", "{DIR}"]),
        parse: Parse::FirstNumber,
        version_args: &["--version"],
    },
    Spec {
        name: "pdu",
        program: "pdu",
        args: &["--max-depth", "1", "{DIR}"],
        bytes_args: Some(&["-b", "plain", "--max-depth", "1", "{DIR}"]),
        parse: Parse::LargestLeading,
        version_args: &["--version"],
    },
    Spec {
        name: "pdu-t{NCPU}",
        program: "pdu",
        args: &["--max-depth", "1", "--threads", "{NCPU}", "{DIR}"],
        bytes_args: Some(&["-b", "plain", "--max-depth", "1", "--threads", "{NCPU}", "{DIR}"]),
        parse: Parse::LargestLeading,
        version_args: &["--version"],
    },
    Spec {
        name: "dust",
        program: "dust",
        args: &["-d", "0", "{DIR}"],
        bytes_args: Some(&["-d", "0", "-o", "b", "{DIR}"]),
        parse: Parse::LargestLeading,
        version_args: &["--version"],
    },
    Spec {
        name: "diskus",
        program: "diskus",
        args: &["{DIR}"],
        bytes_args: Some(&["{DIR}"]),
        parse: Parse::Parenthesized,
        version_args: &["--version"],
    },
    Spec {
        name: "ncdu",
        program: "ncdu",
        args: &["-0", "-o", "/dev/null", "{DIR}"],
        bytes_args: Some(&["-0", "-o", "-", "{DIR}"]),
        parse: Parse::NcduJson,
        version_args: &["-v"],
    },
    Spec {
        name: "du",
        program: "du",
        args: &["-s", "{DIR}"],
        bytes_args: Some(&["-s", "-B1", "{DIR}"]),
        parse: Parse::FirstNumber,
        version_args: &["--version"],
    },
];

const DFDU: Spec = Spec {
    name: "dfdu",
    program: "dfdu",
    args: &["-s", "{DIR}"],
    bytes_args: Some(&["-s", "-B1", "{DIR}"]),
    parse: Parse::FirstNumber,
    version_args: &["--version"],
};

const DFDU_SCAN: Spec = Spec {
    name: "dfdu-scan",
    program: "dfdu",
    args: &["scan", "{DIR}"],
    bytes_args: Some(&["scan", "--json", "{DIR}"]),
    parse: Parse::DfduScanJson,
    version_args: &["--version"],
};

/// `dfdu scan` with the sharing figures off and on (`--sharing` benches: what they cost;
/// timed only when `--tools` names them).
const DFDU_SCAN_NOSHARED: Spec = Spec {
    name: "dfdu-scan-noshared",
    program: "dfdu",
    args: &["scan", "--no-shared", "{DIR}"],
    bytes_args: Some(&["scan", "--no-shared", "--json", "{DIR}"]),
    parse: Parse::DfduScanJson,
    version_args: &["--version"],
};

const DFDU_SCAN_SHARED: Spec = Spec {
    name: "dfdu-scan-shared",
    program: "dfdu",
    args: &["scan", "--shared", "{DIR}"],
    bytes_args: Some(&["scan", "--shared", "--json", "{DIR}"]),
    parse: Parse::DfduScanJson,
    version_args: &["--version"],
};

/// The minimal walker (no hard-link bookkeeping, no records) with dfdu's default thread
/// count: the yardstick for dfdu's CPU per entry. It counts every hard link.
const DFDU_FLOOR: Spec = Spec {
    name: "floor",
    program: "dfdu",
    args: &["floor", "{DIR}"],
    bytes_args: Some(&["floor", "{DIR}"]),
    parse: Parse::FirstNumber,
    version_args: &["--version"],
};

/// Every tool name `--tools` accepts.
const NAMES: [&str; 12] = [
    "dfdu",
    "dfdu-scan",
    "dfdu-scan-noshared",
    "dfdu-scan-shared",
    "floor",
    "dua",
    "gdu",
    "pdu",
    "dust",
    "diskus",
    "ncdu",
    "du",
];

/// `--tools dfdu,du`: the names, each checked against the known ones.
pub fn parse_list(text: &str) -> Result<Vec<String>, String> {
    let names: Vec<String> = text.split(',').map(str::trim).filter(|n| !n.is_empty()).map(String::from).collect();
    if names.is_empty() {
        return Err("--tools needs at least one name".to_string());
    }
    match names.iter().find(|name| !NAMES.contains(&name.as_str())) {
        Some(unknown) => Err(format!("--tools: unknown tool '{unknown}' (known: {})", NAMES.join(", "))),
        None => Ok(names),
    }
}

/// Whether `--tools` selects the tool named `name` ("pdu" selects "pdu-t2" as well).
fn selected(name: &str, only: Option<&[String]>) -> bool {
    let Some(only) = only else {
        return true;
    };
    only.iter().any(|item| {
        let name = name.replace("{NCPU}", "");
        name == *item || name.strip_prefix(item.as_str()).is_some_and(|rest| rest.starts_with('-'))
    })
}

/// The tools to time, dfdu first, and the names of those that are not installed; `only`
/// (from `--tools`) restricts both.
pub fn discover(dir: &Path, dfdu: Option<PathBuf>, n_cpus: usize, only: Option<&[String]>) -> (Vec<Tool>, Vec<String>) {
    let mut tools = Vec::new();
    let mut skipped = Vec::new();
    let wanted = |spec: &Spec| selected(spec.name, only);
    // Named only: `--tools dfdu` (or none) does not add them to every table.
    let named = |spec: &Spec| only.is_some_and(|list| list.iter().any(|n| n == spec.name));
    let dfdu_wanted = [&DFDU, &DFDU_SCAN, &DFDU_FLOOR].into_iter().any(wanted)
        || [&DFDU_SCAN_NOSHARED, &DFDU_SCAN_SHARED].into_iter().any(named);
    match dfdu.or_else(|| find_program("dfdu")).or_else(sibling_dfdu) {
        Some(program) if dfdu_wanted => {
            let scan_works = quiet_success(&program, &["scan", "--help"]);
            if wanted(&DFDU) {
                tools.push(make_tool(&DFDU, program.clone(), dir, n_cpus));
            }
            if scan_works && wanted(&DFDU_SCAN) {
                tools.push(make_tool(&DFDU_SCAN, program.clone(), dir, n_cpus));
            }
            for spec in [&DFDU_SCAN_NOSHARED, &DFDU_SCAN_SHARED] {
                if scan_works && named(spec) {
                    tools.push(make_tool(spec, program.clone(), dir, n_cpus));
                }
            }
            if wanted(&DFDU_FLOOR) && quiet_success(&program, &["floor", "-j", "1", "/dev/null"]) {
                tools.push(make_tool(&DFDU_FLOOR, program, dir, n_cpus));
            }
        }
        Some(_) => {}
        None if dfdu_wanted => skipped.push("dfdu".to_string()),
        None => {}
    }
    let mut missing_programs = HashSet::new();
    for spec in PEERS.iter().filter(|spec| wanted(spec)) {
        match find_program(spec.program) {
            Some(program) => tools.push(make_tool(spec, program, dir, n_cpus)),
            None if missing_programs.insert(spec.program) => skipped.push(spec.program.to_string()),
            None => {}
        }
    }
    (tools, skipped)
}

fn make_tool(spec: &Spec, program: PathBuf, dir: &Path, n_cpus: usize) -> Tool {
    let expand = |args: &[&str]| -> Vec<OsString> {
        args.iter()
            .map(|&arg| match arg {
                "{DIR}" => dir.as_os_str().to_owned(),
                "{NCPU}" => OsString::from(n_cpus.to_string()),
                _ => OsString::from(arg),
            })
            .collect()
    };
    Tool {
        name: spec.name.replace("{NCPU}", &n_cpus.to_string()),
        version: version_of(&program, spec.version_args),
        args: expand(spec.args),
        bytes_args: spec.bytes_args.map(expand),
        parse: spec.parse,
        program,
    }
}

/// `name` on PATH, then in ~/.cargo/bin (where `cargo install` puts the Rust peers).
pub fn find_program(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    let cargo_bin = std::env::var_os("HOME").map(|home| PathBuf::from(home).join(".cargo/bin"));
    std::env::split_paths(&path).chain(cargo_bin).map(|dir| dir.join(name)).find(|candidate| is_executable(candidate))
}

/// A `dfdu` next to this binary, as `cargo build --release --workspace` leaves it.
fn sibling_dfdu() -> Option<PathBuf> {
    let candidate = std::env::current_exe().ok()?.with_file_name("dfdu");
    is_executable(&candidate).then_some(candidate)
}

/// Builds dfdu in release mode in this harness's workspace; the path of the binary.
pub fn build_dfdu() -> Result<PathBuf, String> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap_or(Path::new("."));
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    eprintln!("xtask bench: cargo build --release --package dfdu --bin dfdu");
    let status = Command::new(&cargo)
        .args(["build", "--release", "--package", "dfdu", "--bin", "dfdu"])
        .current_dir(root)
        .stdin(Stdio::null())
        .status()
        .map_err(|e| format!("cannot run cargo ({}): {e}", cargo.to_string_lossy()))?;
    if !status.success() {
        return Err(format!("cargo build --release of dfdu failed ({status})"));
    }
    let metadata = Command::new(&cargo)
        .args(["metadata", "--format-version", "1", "--no-deps"])
        .current_dir(root)
        .stdin(Stdio::null())
        .stderr(Stdio::inherit())
        .output()
        .map_err(|e| format!("cargo metadata: {e}"))?;
    let text = String::from_utf8_lossy(&metadata.stdout);
    let target = crate::json::string(&text, "target_directory").ok_or("cargo metadata: no target_directory")?;
    let binary = Path::new(&target).join("release").join("dfdu");
    match binary.is_file() {
        true => Ok(binary),
        false => Err(format!("cargo build succeeded but {} is missing", binary.display())),
    }
}

fn is_executable(path: &Path) -> bool {
    path.metadata().is_ok_and(|meta| meta.is_file() && meta.permissions().mode() & 0o111 != 0)
}

fn quiet_success(program: &Path, args: &[&str]) -> bool {
    Command::new(program)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|status| status.success())
}

/// The first non-empty line of `program VERSION_ARGS` (stdout, else stderr), whitespace
/// collapsed.
fn version_of(program: &Path, version_args: &[&str]) -> String {
    let Ok(output) = Command::new(program).args(version_args).stdin(Stdio::null()).output() else {
        return "unknown".to_string();
    };
    let text = if output.stdout.iter().any(|b| !b.is_ascii_whitespace()) { output.stdout } else { output.stderr };
    let text = String::from_utf8_lossy(&text);
    let line = text.lines().find(|line| !line.trim().is_empty()).unwrap_or("unknown");
    line.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Runs the tool's raw-bytes command (untimed) and reads its total.
pub fn reported_bytes(tool: &Tool) -> Result<u64, String> {
    let Some(args) = &tool.bytes_args else {
        return Err("no raw-bytes command".to_string());
    };
    let output = Command::new(&tool.program)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("cannot run {}: {e}", tool.program.display()))?;
    if !output.status.success() {
        let stderr = String::from_utf8_lossy(&output.stderr);
        let first = stderr.lines().next().unwrap_or("");
        return Err(format!("{}: {first}", output.status));
    }
    parse_bytes(tool.parse, &output.stdout).ok_or_else(|| {
        let text = String::from_utf8_lossy(&output.stdout);
        format!("could not read a total from: {}", text.lines().next().unwrap_or("(no output)"))
    })
}

pub fn parse_bytes(parse: Parse, output: &[u8]) -> Option<u64> {
    let text = strip_ansi(&String::from_utf8_lossy(output));
    match parse {
        Parse::FirstNumber => text.lines().next().and_then(leading_number),
        Parse::LargestLeading => text.lines().filter_map(leading_number).max(),
        Parse::TotalLine => text
            .lines()
            .find(|line| line.trim_end().ends_with(" total"))
            .and_then(leading_number)
            .or_else(|| text.lines().filter_map(leading_number).max()),
        Parse::Parenthesized => match text.split_once('(') {
            Some((_, rest)) => {
                let inside = rest.split_once(')')?.0;
                let digits: String = inside.chars().filter(|c| c.is_ascii_digit()).collect();
                digits.parse().ok()
            }
            None => text.lines().next().and_then(leading_number),
        },
        Parse::NcduJson => ncdu_disk_bytes(output),
        Parse::DfduScanJson => crate::json::u64(&text, "disk_bytes"),
    }
}

/// `text` without ANSI escape sequences (`ESC [ … final-byte`): some tools colour their
/// output even into a pipe.
fn strip_ansi(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(ch) = chars.next() {
        if ch == '\u{1b}' && chars.peek() == Some(&'[') {
            chars.next();
            for code in chars.by_ref() {
                if ('@'..='~').contains(&code) {
                    break;
                }
            }
        } else {
            out.push(ch);
        }
    }
    out
}

/// The integer at the start of `line` (after blanks), ignoring thousands separators.
fn leading_number(line: &str) -> Option<u64> {
    let digits: String = line
        .trim_start()
        .chars()
        .take_while(|c| c.is_ascii_digit() || *c == ',')
        .filter(char::is_ascii_digit)
        .collect();
    digits.parse().ok()
}

/// Sums `dsize` over every object of an ncdu JSON export, counting an inode marked as a
/// hard link (`"hlnkc":true` in ncdu 1, `"nlink">1` in ncdu 2) once. Objects in the export
/// are flat, so a tokenizer that tracks the current key is enough.
fn ncdu_disk_bytes(json: &[u8]) -> Option<u64> {
    let mut total = 0u64;
    let mut seen_inodes = HashSet::new();
    let mut entry = NcduEntry::default();
    let mut key: Vec<u8> = Vec::new();
    let mut expecting_key = false;
    let mut pos = 0;
    let mut saw_object = false;
    while pos < json.len() {
        match json[pos] {
            b'{' => {
                entry = NcduEntry::default();
                expecting_key = true;
                saw_object = true;
            }
            b'}' => {
                if !entry.hard_link() || seen_inodes.insert(entry.inode) {
                    total += entry.disk_bytes;
                }
                expecting_key = false;
            }
            b':' => expecting_key = false,
            b',' => expecting_key = true,
            b'"' => {
                let (text, end) = json_string(json, pos)?;
                if expecting_key {
                    key = text;
                }
                pos = end;
                continue;
            }
            b't' if json[pos..].starts_with(b"true") => {
                if key == b"hlnkc" {
                    entry.marked_link = true;
                }
                pos += 4;
                continue;
            }
            b'0'..=b'9' => {
                let end = pos + json[pos..].iter().take_while(|b| b.is_ascii_digit()).count();
                let value: u64 = std::str::from_utf8(&json[pos..end]).ok()?.parse().ok()?;
                entry.set(&key, value);
                pos = end;
                continue;
            }
            _ => {}
        }
        pos += 1;
    }
    saw_object.then_some(total)
}

#[derive(Default)]
struct NcduEntry {
    disk_bytes: u64,
    inode: u64,
    nlink: u64,
    marked_link: bool,
}

impl NcduEntry {
    fn set(&mut self, key: &[u8], value: u64) {
        match key {
            b"dsize" => self.disk_bytes = value,
            b"ino" => self.inode = value,
            b"nlink" => self.nlink = value,
            _ => {}
        }
    }

    fn hard_link(&self) -> bool {
        self.marked_link || self.nlink > 1
    }
}

/// The raw bytes of the JSON string starting at `start` (escapes left as they are; only
/// keys are compared) and the index just past its closing quote.
fn json_string(json: &[u8], start: usize) -> Option<(Vec<u8>, usize)> {
    let mut pos = start + 1;
    while pos < json.len() {
        match json[pos] {
            b'\\' => pos += 2,
            b'"' => return Some((json[start + 1..pos].to_vec(), pos + 1)),
            _ => pos += 1,
        }
    }
    None
}
