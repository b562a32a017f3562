//! The du command line: what the user typed (parsed with lexopt, with GNU getopt's
//! long-option abbreviations, permutation, `--`, `POSIXLY_CORRECT` and its exact error
//! messages), then the derived settings `du` runs with. The help text lives here too.

use crate::meta::{os_bytes, TimeKind};
use crate::out::{self, io_text};
use crate::text::exclude::Exclude;
use crate::text::quote::{quote, quotef};
use crate::text::units::{self, NumError, Scale};
use crate::walk::opts::{thread_count, Opt};
use std::ffi::OsString;

/// How symlinks are followed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Deref {
    /// `-P` (default): never.
    None,
    /// `-D`/`-H`: only symlinks named on the command line.
    Args,
    /// `-L`: always.
    All,
}

/// Everything `du` needs to run.
pub struct DuOptions {
    pub prog: String,
    pub null: bool,
    pub all: bool,
    pub apparent: bool,
    pub scale: Scale,
    pub total: bool,
    pub deref: Deref,
    pub max_depth: u64,
    pub files0_from: Option<OsString>,
    pub inodes: bool,
    pub count_links: bool,
    pub separate_dirs: bool,
    pub threshold: i128,
    pub time: Option<TimeKind>,
    pub time_format: String,
    pub exclude: Exclude,
    pub one_fs: bool,
    pub threads: Option<usize>,
    pub operands: Vec<OsString>,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum HasArg {
    No,
    Required,
    Optional,
}

/// GNU du's long options, in its table order (which getopt's ambiguity messages show).
const LONG: &[(&str, HasArg, char)] = &[
    ("all", HasArg::No, 'a'),
    ("apparent-size", HasArg::No, 'A'),
    ("block-size", HasArg::Required, 'B'),
    ("bytes", HasArg::No, 'b'),
    ("count-links", HasArg::No, 'l'),
    ("dereference", HasArg::No, 'L'),
    ("dereference-args", HasArg::No, 'D'),
    ("exclude", HasArg::Required, 'E'),
    ("exclude-from", HasArg::Required, 'X'),
    ("files0-from", HasArg::Required, 'F'),
    ("human-readable", HasArg::No, 'h'),
    ("inodes", HasArg::No, 'I'),
    ("si", HasArg::No, 'i'),
    ("max-depth", HasArg::Required, 'd'),
    ("null", HasArg::No, '0'),
    ("no-dereference", HasArg::No, 'P'),
    ("one-file-system", HasArg::No, 'x'),
    ("separate-dirs", HasArg::No, 'S'),
    ("summarize", HasArg::No, 's'),
    ("total", HasArg::No, 'c'),
    ("threshold", HasArg::Required, 't'),
    ("time", HasArg::Optional, 'T'),
    ("time-style", HasArg::Required, 'y'),
    ("help", HasArg::No, '?'),
    ("version", HasArg::No, 'V'),
];

/// Short options and whether they take an argument (GNU's "0abd:chHklmst:xB:DLPSX:",
/// plus dfdu's `-j N`).
fn short_has_arg(c: char) -> Option<bool> {
    match c {
        '0' | 'a' | 'b' | 'c' | 'h' | 'H' | 'k' | 'l' | 'm' | 's' | 'x' | 'D' | 'L' | 'P' | 'S' => Some(false),
        'd' | 't' | 'B' | 'X' | 'j' => Some(true),
        _ => None,
    }
}

/// Resolves a possibly abbreviated long option the way getopt_long does.
fn resolve_long(name: &str) -> Result<(&'static str, HasArg, char), Vec<&'static str>> {
    if name == "threads" {
        return Ok(("threads", HasArg::Required, 'j'));
    }
    if let Some(&(n, h, c)) = LONG.iter().find(|(n, _, _)| *n == name) {
        return Ok((n, h, c));
    }
    let hits: Vec<_> = LONG.iter().filter(|(n, _, _)| n.starts_with(name)).collect();
    match hits.as_slice() {
        [one] => Ok((one.0, one.1, one.2)),
        [] => Err(Vec::new()),
        many => Err(many.iter().map(|h| h.0).collect()),
    }
}

/// gnulib `argmatch`: exact match, or a unique prefix (prefixes of synonyms are fine).
fn argmatch<T: Copy + PartialEq>(arg: &str, table: &[(&str, T)]) -> Result<T, bool> {
    if let Some((_, v)) = table.iter().find(|(n, _)| *n == arg) {
        return Ok(*v);
    }
    let mut found: Option<T> = None;
    let mut ambiguous = false;
    for (n, v) in table {
        if n.starts_with(arg) {
            match found {
                None => found = Some(*v),
                Some(f) if f != *v => ambiguous = true,
                _ => {}
            }
        }
    }
    match (found, ambiguous) {
        (Some(v), false) => Ok(v),
        (_, amb) => Err(amb),
    }
}

/// Writes gnulib's `argmatch_die` report for a bad WORD given to `context`.
fn argmatch_fail<T: Copy + PartialEq>(prog: &str, arg: &str, context: &str, table: &[(&str, T)], ambiguous: bool) {
    let what = if ambiguous { "ambiguous" } else { "invalid" };
    let mut msg = format!(
        "{prog}: {what} argument {} for {}\nValid arguments are:",
        quote(arg.as_bytes()),
        quote(context.as_bytes())
    );
    let mut last: Option<T> = None;
    for (n, v) in table {
        if last == Some(*v) {
            msg.push_str(&format!(", {}", quote(n.as_bytes())));
        } else {
            msg.push_str(&format!("\n  - {}", quote(n.as_bytes())));
            last = Some(*v);
        }
    }
    eprintln!("{msg}");
    try_help(prog);
}

fn try_help(prog: &str) {
    eprintln!("Try '{prog} --help' for more information.");
}

const TIME_WORDS: &[(&str, TimeKind)] = &[
    ("atime", TimeKind::Atime),
    ("access", TimeKind::Atime),
    ("use", TimeKind::Atime),
    ("ctime", TimeKind::Ctime),
    ("status", TimeKind::Ctime),
];

#[derive(Clone, Copy, PartialEq, Eq)]
enum TimeStyle {
    Full,
    Long,
    Iso,
}

const TIME_STYLES: &[(&str, TimeStyle)] =
    &[("full-iso", TimeStyle::Full), ("long-iso", TimeStyle::Long), ("iso", TimeStyle::Iso)];

/// gnulib `xstrtol_fatal` wording for a bad numeric argument.
fn num_fatal(prog: &str, err: NumError, long: Option<&str>, short: char, arg: &str) -> i32 {
    let opt = match long {
        Some(l) => format!("--{l}"),
        None => format!("-{short}"),
    };
    match err {
        NumError::Invalid => eprintln!("{prog}: invalid {opt} argument '{arg}'"),
        NumError::InvalidSuffix => eprintln!("{prog}: invalid suffix in {opt} argument '{arg}'"),
        NumError::Overflow => eprintln!("{prog}: {opt} argument '{arg}' too large"),
    }
    1
}

/// `xstrtoimax(arg, NULL, 0, &v, "kKmMGTPEZY0")`.
fn parse_threshold(arg: &[u8]) -> Result<i128, NumError> {
    let mut s = arg;
    while let [b' ' | b'\t' | b'\n' | b'\x0b' | b'\x0c' | b'\r', rest @ ..] = s {
        s = rest;
    }
    let (neg, body) = match s.first() {
        Some(b'-') => (true, &s[1..]),
        _ => (false, s),
    };
    if neg && body.first().is_some_and(|c| c.is_ascii_whitespace() || *c == b'-' || *c == b'+') {
        return Err(NumError::Invalid);
    }
    let v = units::parse_with_suffix(body, units::THRESHOLD_SUFFIXES)?;
    let limit: u128 = if neg { 1 << 63 } else { (1 << 63) - 1 };
    if v as u128 > limit {
        return Err(NumError::Overflow);
    }
    Ok(if neg { -(v as i128) } else { v as i128 })
}

/// `--max-depth`: a whole number in C's base-0 syntax, nothing after it.
fn parse_depth(arg: &[u8]) -> Option<u64> {
    units::parse_with_suffix(arg, b"").ok()
}

/// Reads a whole file, or standard input for `-`.
fn read_all(name: &std::ffi::OsStr) -> std::io::Result<Vec<u8>> {
    if name == "-" {
        let mut buf = Vec::new();
        std::io::Read::read_to_end(&mut std::io::stdin(), &mut buf)?;
        return Ok(buf);
    }
    std::fs::read(name)
}

/// One option as getopt_long hands it over: its id (the short letter, or the letter
/// `LONG` gives a long option), its long name when it was typed long, and its argument.
struct Typed {
    id: char,
    long: Option<&'static str>,
    value: Option<OsString>,
}

/// What the parser read next.
enum Item {
    Option(Typed),
    Operand(OsString),
    /// A malformed option, already reported (getopt goes on, and du fails at the end).
    Bad,
}

/// What the options leave for `finish`: the checks GNU du makes once all are read.
#[derive(Default)]
struct Pending {
    /// A deferred error was reported: exit 1 after the loop, as getopt's do.
    failed: bool,
    summarize: bool,
    depth: Option<u64>,
    time_style: Option<String>,
}

/// Parses du's arguments (without argv[0]); `Err` holds the exit status when du must
/// stop now (messages written, or help and version printed). `env` reads environment
/// variables.
pub fn parse(prog: &str, args: Vec<OsString>, env: &dyn Fn(&str) -> Option<Vec<u8>>) -> Result<Box<DuOptions>, i32> {
    let posixly_correct = env("POSIXLY_CORRECT").is_some();
    let mut o = DuOptions {
        prog: prog.to_string(),
        null: false,
        all: false,
        apparent: false,
        // du ignores an invalid DU_BLOCK_SIZE, keeping whatever gnulib parsed of it.
        scale: units::block_spec(env("DU_BLOCK_SIZE").as_deref(), env).0,
        total: false,
        deref: Deref::None,
        max_depth: u64::MAX,
        files0_from: None,
        inodes: false,
        count_links: false,
        separate_dirs: false,
        threshold: 0,
        time: None,
        time_format: String::new(),
        exclude: Exclude::default(),
        one_fs: false,
        threads: None,
        operands: Vec::new(),
    };
    let mut pending = Pending::default();
    let mut parser = lexopt::Parser::from_args(args);
    loop {
        let item = match parser.next() {
            Ok(Some(arg)) => {
                let arg = Opt::owned(arg);
                next_item(&mut parser, prog, arg)
            }
            Ok(None) => break,
            Err(e) => {
                eprintln!("{prog}: {e}");
                Item::Bad
            }
        };
        match item {
            Item::Option(t) => apply(&mut o, &mut pending, t, env)?,
            Item::Operand(v) => {
                o.operands.push(v);
                // POSIX: the first operand ends the options.
                if posixly_correct {
                    o.operands.extend(parser.raw_args().map(|r| r.collect::<Vec<_>>()).unwrap_or_default());
                    break;
                }
            }
            Item::Bad => pending.failed = true,
        }
    }
    if pending.failed {
        try_help(prog);
        return Err(1);
    }
    finish(o, pending, env).map(Box::new)
}

/// Turns lexopt's `arg` into what getopt_long would have seen: a known short option, a
/// long one resolved from its abbreviation, each with its argument read; malformed ones
/// reported in getopt's words.
fn next_item(parser: &mut lexopt::Parser, prog: &str, arg: Opt) -> Item {
    let (id, long) = match arg {
        Opt::Value(v) => return Item::Operand(v),
        Opt::Short(c) if short_has_arg(c).is_some() => (c, None),
        Opt::Short(c) => {
            eprintln!("{prog}: invalid option -- '{c}'");
            return Item::Bad;
        }
        Opt::Long(name) => match long_option(parser, prog, name) {
            Some(found) => found,
            None => return Item::Bad,
        },
    };
    let takes = match long {
        Some(n) => resolve_long(n).map(|r| r.1).unwrap_or(HasArg::No),
        None if short_has_arg(id) == Some(true) => HasArg::Required,
        None => HasArg::No,
    };
    let value = match takes {
        HasArg::No => None,
        HasArg::Optional => parser.optional_value(),
        HasArg::Required => match parser.value() {
            Ok(v) => Some(v),
            Err(_) => {
                match long {
                    Some(n) => eprintln!("{prog}: option '--{n}' requires an argument"),
                    None => eprintln!("{prog}: option requires an argument -- '{id}'"),
                }
                return Item::Bad;
            }
        },
    };
    Item::Option(Typed { id, long, value })
}

/// (id, full name) of the long option typed as `name` (perhaps abbreviated); `None`
/// once getopt_long's complaint is written (unknown, ambiguous, or an argument given to
/// an option that takes none).
fn long_option(parser: &mut lexopt::Parser, prog: &str, name: String) -> Option<(char, Option<&'static str>)> {
    let choices = match resolve_long(&name) {
        Ok((full, has, id)) => {
            if has == HasArg::No && parser.optional_value().is_some() {
                eprintln!("{prog}: option '--{full}' doesn't allow an argument");
                return None;
            }
            return Some((id, Some(full)));
        }
        Err(choices) => choices,
    };
    // getopt repeats what was typed, an argument after '=' included.
    let typed = match parser.optional_value() {
        Some(v) => format!("{name}={}", v.to_string_lossy()),
        None => name,
    };
    if choices.is_empty() {
        eprintln!("{prog}: unrecognized option '--{typed}'");
    } else {
        let list: String = choices.iter().map(|c| format!(" '--{c}'")).collect();
        eprintln!("{prog}: option '--{typed}' is ambiguous; possibilities:{list}");
    }
    None
}

/// Applies one option to `o` (and to `p`, what `finish` checks). `Err` holds the exit
/// status when du stops at this option, as GNU's du does for a bad `-t`, `-B` or
/// `--time` word and for `--help` and `--version`; other bad arguments are reported and
/// fail the run once every option was read. One flat arm per option, in GNU's order of
/// letters where it has one.
fn apply(o: &mut DuOptions, p: &mut Pending, t: Typed, env: &dyn Fn(&str) -> Option<Vec<u8>>) -> Result<(), i32> {
    let prog = o.prog.as_str();
    let vbytes = t.value.as_deref().map(os_bytes).unwrap_or_default();
    let vstr = String::from_utf8_lossy(&vbytes).into_owned();
    match t.id {
        '0' => o.null = true,
        'a' => o.all = true,
        'A' => o.apparent = true,
        'b' => {
            o.apparent = true;
            o.scale = Scale::plain(1);
        }
        'c' => o.total = true,
        'h' => o.scale = Scale::human(true),
        'i' => o.scale = Scale::human(false),
        'k' => o.scale = Scale::plain(1024),
        'm' => o.scale = Scale::plain(1024 * 1024),
        'd' => match parse_depth(&vbytes) {
            Some(d) => p.depth = Some(d),
            None => {
                eprintln!("{prog}: invalid maximum depth {}", quote(&vbytes));
                p.failed = true;
            }
        },
        'l' => o.count_links = true,
        's' => p.summarize = true,
        't' => match parse_threshold(&vbytes) {
            Ok(0) if vbytes.first() == Some(&b'-') => {
                eprintln!("{prog}: invalid --threshold argument '-0'");
                return Err(1);
            }
            Ok(v) => o.threshold = v,
            Err(e) => return Err(num_fatal(prog, e, t.long, 't', &vstr)),
        },
        'x' => o.one_fs = true,
        'B' => match units::parse_block_spec(Some(&vbytes), env) {
            Ok(s) => o.scale = s,
            Err(e) => return Err(num_fatal(prog, e, t.long, 'B', &vstr)),
        },
        'H' | 'D' => o.deref = Deref::Args,
        'L' => o.deref = Deref::All,
        'P' => o.deref = Deref::None,
        'S' => o.separate_dirs = true,
        'X' => match read_all(t.value.as_deref().unwrap_or_default()) {
            Ok(text) => o.exclude.add_lines(&text),
            Err(e) => {
                eprintln!("{prog}: {}: {}", quotef(&vbytes), io_text(&e));
                p.failed = true;
            }
        },
        'F' => o.files0_from = t.value,
        'E' => o.exclude.add(&vbytes),
        'I' => o.inodes = true,
        'T' => o.time = Some(time_kind(prog, t.value.is_some(), &vstr)?),
        'y' => p.time_style = Some(vstr),
        'j' => match thread_count(vstr.trim()) {
            Some(n) => o.threads = Some(n),
            None => {
                eprintln!("{prog}: invalid number of threads {}", quote(&vbytes));
                p.failed = true;
            }
        },
        '?' => return Err(out::print_stdout(prog, &help_text(prog))),
        'V' => {
            let version = format!("dfdu {} (du-compatible; see dfdu --help)\n", env!("DFDU_VERSION"));
            return Err(out::print_stdout(prog, &version));
        }
        _ => unreachable!("every option id is handled"),
    }
    Ok(())
}

/// `--time` (modification time) or `--time=WORD`; `Err` (exit status 1) after
/// argmatch's report of a bad WORD.
fn time_kind(prog: &str, given: bool, word: &str) -> Result<TimeKind, i32> {
    if !given {
        return Ok(TimeKind::Mtime);
    }
    argmatch(word, TIME_WORDS).map_err(|ambiguous| {
        argmatch_fail(prog, word, "--time", TIME_WORDS, ambiguous);
        1
    })
}

/// The checks GNU du makes after option parsing, and the derived settings.
fn finish(mut o: DuOptions, p: Pending, env: &dyn Fn(&str) -> Option<Vec<u8>>) -> Result<DuOptions, i32> {
    let prog = o.prog.clone();
    if o.all && p.summarize {
        eprintln!("{prog}: cannot both summarize and show all entries");
        try_help(&prog);
        return Err(1);
    }
    if p.summarize && p.depth == Some(0) {
        eprintln!("{prog}: warning: summarizing is the same as using --max-depth=0");
    }
    if let (true, Some(d)) = (p.summarize, p.depth) {
        if d != 0 {
            eprintln!("{prog}: warning: summarizing conflicts with --max-depth={d}");
            try_help(&prog);
            return Err(1);
        }
    }
    if let Some(d) = p.depth {
        o.max_depth = d;
    }
    if p.summarize {
        o.max_depth = 0;
    }
    if o.inodes {
        if o.apparent {
            eprintln!("{prog}: warning: options --apparent-size and -b are ineffective with --inodes");
        }
        o.scale.block_bytes = 1;
    }
    if o.time.is_some() {
        o.time_format = time_format(&prog, p.time_style, env)?;
    }
    if o.files0_from.is_some() && !o.operands.is_empty() {
        eprintln!("{prog}: extra operand {}", quote(&os_bytes(&o.operands[0])));
        eprintln!("file operands cannot be combined with --files0-from");
        try_help(&prog);
        return Err(1);
    }
    Ok(o)
}

/// The strftime-like format of `--time`'s column: `--time-style`, else `TIME_STYLE`
/// (as du reads it: `locale` is long-iso, `+FORMAT` up to its first newline, `posix-`
/// prefixes dropped), else long-iso. `Err` (exit status 1) after argmatch's report.
fn time_format(prog: &str, typed: Option<String>, env: &dyn Fn(&str) -> Option<Vec<u8>>) -> Result<String, i32> {
    let style = match typed {
        Some(s) => s,
        None => match env("TIME_STYLE").map(|v| String::from_utf8_lossy(&v).into_owned()) {
            None => "long-iso".to_string(),
            Some(s) if s == "locale" => "long-iso".to_string(),
            Some(s) if s.starts_with('+') => s.split('\n').next().unwrap_or("").to_string(),
            Some(mut s) => {
                while let Some(rest) = s.strip_prefix("posix-") {
                    s = rest.to_string();
                }
                s
            }
        },
    };
    if let Some(fmt) = style.strip_prefix('+') {
        return Ok(fmt.to_string());
    }
    match argmatch(&style, TIME_STYLES) {
        Ok(TimeStyle::Full) => Ok("%Y-%m-%d %H:%M:%S.%N %z".into()),
        Ok(TimeStyle::Long) => Ok("%Y-%m-%d %H:%M".into()),
        Ok(TimeStyle::Iso) => Ok("%Y-%m-%d".into()),
        Err(amb) => {
            argmatch_fail(prog, &style, "time style", TIME_STYLES, amb);
            Err(1)
        }
    }
}

fn help_text(prog: &str) -> String {
    format!(
        "\
Usage: {prog} [OPTION]... [FILE]...
  or:  {prog} [OPTION]... --files0-from=F
Report how much disk space each FILE takes, counting directories recursively.
This is dfdu's GNU du-compatible mode: same options, same output.

Arguments that long options need are needed by the short forms too.
  -0, --null            end output lines with a NUL byte instead of a newline
  -a, --all             list files as well as directories
      --apparent-size   count apparent sizes (bytes in the file) instead of
                          allocated disk space; sparse files and small files
                          can differ a lot between the two
  -B, --block-size=SIZE print sizes in units of SIZE bytes (e.g. '-BM' for
                          mebibytes); SIZE is described below
  -b, --bytes           same as '--apparent-size --block-size=1'
  -c, --total           add a grand total line at the end
  -D, --dereference-args  follow symbolic links given as arguments, only
  -d, --max-depth=N     print a total only for directories (and, with --all,
                          files) at most N levels below an argument;
                          --max-depth=0 means --summarize
      --files0-from=F   take the FILE list from F, names ending in NUL;
                          F of - reads the list from standard input
  -H                    same as --dereference-args (-D)
  -h, --human-readable  print sizes with unit letters (1K 234M 2G)
      --inodes          count inodes instead of space
  -j, --threads=N       scan with N threads, 1 to 1024 (dfdu extension; also
                          DFDU_THREADS=N); default on Linux: four per usable
                          CPU, 4 to 32; macOS: the performance cores, at most 8
  -k                    same as --block-size=1K
  -L, --dereference     follow every symbolic link
  -l, --count-links     count a hard-linked file once per name
  -m                    same as --block-size=1M
  -P, --no-dereference  never follow symbolic links (the default)
  -S, --separate-dirs   leave subdirectories out of a directory's size
      --si              like -h, with powers of 1000 instead of 1024
  -s, --summarize       print one total per argument
  -t, --threshold=SIZE  leave out entries smaller than SIZE, or, when SIZE is
                          negative, larger than -SIZE
      --time            add the newest modification time found in each
                          directory or its subdirectories
      --time=WORD       use another time: atime, access, use, ctime or status
      --time-style=STYLE  full-iso, long-iso, iso or +FORMAT (as date(1))
  -X, --exclude-from=FILE  skip entries matching any pattern in FILE
      --exclude=PATTERN    skip entries matching PATTERN
  -x, --one-file-system    stay on the file system of each argument
      --help        show this help and exit
      --version     show the version and exit

Sizes are shown in the first unit set by --block-size, DU_BLOCK_SIZE,
BLOCK_SIZE or BLOCKSIZE; otherwise 1024 bytes (512 under POSIXLY_CORRECT).

SIZE is a whole number with an optional unit: K M G T P E Z Y R Q (powers of
1024), or KB MB ... (powers of 1000); KiB, MiB ... are the same as K, M.
Without a number the unit is also printed after each size.

dfdu has more to offer as 'dfdu scan', 'dfdu browse', 'dfdu diff', 'dfdu dupes'
and 'dfdu dedupe'; see 'dfdu help'.
"
    )
}
