//! The install kit kept in step with the program: the man page (`man/dfdu.1`) describes, in
//! the section of each mode, exactly the options that mode's `--help` lists, and renders
//! with `man --warnings` silently; the bash, zsh and fish completions (`completions/`)
//! offer exactly those options, asked the way each shell asks (bash's function called with
//! `COMP_WORDS`, fish's `complete -C`, zsh in a real terminal under tmux); `make install`
//! and `make uninstall` put them in, and take them out of, the usual places under a
//! scratch `DESTDIR`; and the man page lists the keys docs/browse.md lists for the browser.
//!
//! When a test here fails after an option was added, the message names the mode, the
//! option and the file to add it to.

mod common;

use common::tmux::{have_tmux, Term};
use common::{have_or_skip, Scratch};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The modes: the name a completion file gives each, the arguments that print its help,
/// and its section in the man page.
const MODES: &[(&str, &[&str], &str)] = &[
    ("du", &["--help"], "DU MODE"),
    ("scan", &["scan", "--help"], "DFDU SCAN"),
    ("browse", &["browse", "--help"], "DFDU BROWSE"),
    ("diff", &["diff", "--help"], "DFDU DIFF"),
    ("dupes", &["dupes", "--help"], "DFDU DUPES"),
    ("dedupe", &["dedupe", "--help"], "DFDU DEDUPE"),
];

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn help_text(args: &[&str]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_dfdu")).args(args).output().unwrap();
    assert!(out.status.success(), "dfdu {args:?} failed");
    String::from_utf8(out.stdout).unwrap()
}

/// The options an option list of `--help` names. An option line is indented and starts
/// with `-`; its options run up to the first word that is neither an option nor a value's
/// name ("  -b, --bytes   print ..." gives `-b` and `--bytes`, "  -o FILE  also ..." `-o`,
/// "      --time=WORD  use ..." `--time`).
fn help_options(help: &str) -> BTreeSet<String> {
    let mut found = BTreeSet::new();
    for line in help.lines() {
        let text = line.trim_start();
        if text.len() == line.len() || !text.starts_with('-') {
            continue;
        }
        for word in text.split([' ', ',']).filter(|w| !w.is_empty()) {
            if word.len() > 1 && word.starts_with('-') {
                found.insert(word.split(['=', '[']).next().unwrap().to_string());
            } else if !word.chars().all(|c| c.is_ascii_uppercase()) {
                break;
            }
        }
    }
    found
}

/// The options of a mode as a user may give them: dedupe takes every option of dupes but
/// its actions (the options listed after dupes' "Acting on the groups"), which its help
/// says instead of listing them.
fn mode_options(mode: &str) -> BTreeSet<String> {
    let (_, args, _) = MODES.iter().find(|m| m.0 == mode).unwrap();
    let help = help_text(args);
    let mut options = help_options(&help);
    if help.contains("every option of 'dfdu dupes' but its actions") {
        let dupes = help_text(&["dupes", "--help"]);
        let find = &dupes[..dupes.find("\nActing on the groups").expect("dupes' help lists its actions apart")];
        options.extend(help_options(find));
    }
    options
}

/// The option-like words (`-x`, `--name`) of a text, each cut at `=`, `[` or `+`.
fn option_words(text: &str) -> BTreeSet<String> {
    let keep = |c: char| c.is_ascii_alphanumeric() || c == '-';
    text.split(|c: char| !keep(c))
        .filter(|w| (w.len() == 2 && w.starts_with('-') && w != &"--") || (w.len() > 2 && w.starts_with("--")))
        .map(str::to_string)
        .collect()
}

/// The options named in the item tags (the line after each `.TP`) of each `.SH` section of
/// a man page, by section title.
fn man_sections(page: &str) -> Vec<(String, BTreeSet<String>)> {
    let mut sections: Vec<(String, BTreeSet<String>)> = Vec::new();
    let mut lines = page.lines();
    while let Some(line) = lines.next() {
        if let Some(title) = line.strip_prefix(".SH ") {
            sections.push((title.trim_matches('"').to_string(), BTreeSet::new()));
        } else if line == ".TP" || line.starts_with(".TP ") {
            let tag = lines.next().unwrap_or_default().replace("\\-", "-");
            let tag = tag.replace("\\fI", " ").replace("\\fR", " ").replace("\\fB", " ");
            if let Some(last) = sections.last_mut() {
                last.1.extend(option_words(&tag));
            }
        }
    }
    sections
}

/// What differs between the options a mode's help lists and those a file offers for it.
fn mismatch(mode: &str, file: &str, expected: &BTreeSet<String>, offered: &BTreeSet<String>) -> Vec<String> {
    let mut problems = Vec::new();
    for o in expected.difference(offered) {
        problems.push(format!("{mode}: {o} is in --help but not in {file}"));
    }
    for o in offered.difference(expected) {
        problems.push(format!("{mode}: {file} has {o}, which --help does not list"));
    }
    problems
}

#[test]
fn the_man_page_describes_every_option_of_every_mode() {
    let page = std::fs::read_to_string(root().join("man/dfdu.1")).unwrap();
    let sections = man_sections(&page);
    let mut problems = Vec::new();
    let version = format!("\"dfdu {}\"", env!("CARGO_PKG_VERSION"));
    if !page.lines().any(|l| l.starts_with(".TH DFDU 1 ") && l.contains(&version)) {
        problems.push(format!("man/dfdu.1's .TH line does not name {version}"));
    }
    for (mode, args, title) in MODES {
        let Some((_, described)) = sections.iter().find(|s| s.0 == *title) else {
            problems.push(format!("man/dfdu.1 has no section .SH \"{title}\""));
            continue;
        };
        // dedupe's section describes its own options and refers to dupes' for the rest.
        let listed = help_options(&help_text(args));
        problems.extend(mismatch(mode, &format!("man/dfdu.1 section {title}"), &listed, described));
    }
    assert!(problems.is_empty(), "the man page and --help disagree:\n{}", problems.join("\n"));
}

/// The keys a browse key name list names: `docs/browse.md`'s key cells ("→ `l` Enter / ←
/// `h`") and the man page's key tags (".BR right \", \" l"), arrows as words.
fn key_names(text: &str) -> BTreeSet<String> {
    if matches!(text.trim(), "/" | "`/`" | ".B /") {
        return ["/".to_string()].into();
    }
    let text = text.replace(['`', '"', ','], " ").replace(" / ", " ");
    text.split_whitespace()
        .filter(|k| !k.starts_with('.'))
        .map(|k| match k {
            "↑" => "up".to_string(),
            "↓" => "down".into(),
            "→" => "right".into(),
            "←" => "left".into(),
            k => k.to_string(),
        })
        .collect()
}

/// The keys of the man page's `.SS Keys` items and of the key table in docs/browse.md (which
/// src/browse/tests.rs holds against the browser's own help).
#[test]
fn the_man_page_lists_the_browsers_keys() {
    let page = std::fs::read_to_string(root().join("man/dfdu.1")).unwrap();
    let mut lines = page.lines().skip_while(|l| *l != ".SS Keys").take_while(|l| *l != ".PP");
    let mut in_man = BTreeSet::new();
    while let Some(line) = lines.next() {
        if line.starts_with(".TP") {
            in_man.extend(key_names(lines.next().unwrap_or_default()));
        }
    }
    let doc = std::fs::read_to_string(root().join("docs/browse.md")).unwrap();
    let table = doc.lines().skip_while(|l| !l.starts_with("| key | does |")).skip(2).take_while(|l| l.starts_with('|'));
    let in_doc: BTreeSet<String> = table.flat_map(|row| key_names(row.split('|').nth(1).unwrap_or(""))).collect();
    assert!(in_doc.contains("d") && in_man.contains("d"), "both key lists found: {in_doc:?} {in_man:?}");
    let missing: Vec<&String> = in_doc.difference(&in_man).collect();
    let extra: Vec<&String> = in_man.difference(&in_doc).collect();
    assert!(
        missing.is_empty() && extra.is_empty(),
        "man/dfdu.1's .SS Keys lacks {missing:?} and has {extra:?}, compared with docs/browse.md's key table"
    );
}

#[test]
fn the_man_page_renders_without_warnings() {
    if !have_or_skip("man", "the man page's rendering test") {
        return;
    }
    let out = Command::new("man")
        .args(["--warnings", "-l"])
        .arg(root().join("man/dfdu.1"))
        .env("MANWIDTH", "80")
        .env("MAN_KEEP_FORMATTING", "")
        .env_remove("MANPAGER")
        .env("PAGER", "cat")
        .output()
        .unwrap();
    let (text, errors) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success() && errors.is_empty(), "man --warnings -l man/dfdu.1 said:\n{errors}");
    for title in ["NAME", "SYNOPSIS", "DU MODE", "DFDU SCAN", "DFDU DEDUPE", "EXIT STATUS"] {
        assert!(text.lines().any(|l| l == title), "no {title} heading in the rendered page:\n{text}");
    }
    let widest = text.lines().map(|l| l.chars().count()).max().unwrap_or(0);
    assert!(widest <= 80, "a rendered line of {widest} columns at MANWIDTH=80");
}

/// The words bash hands a completion function for `line`: words split at spaces, and `=`
/// a word of its own (it is in COMP_WORDBREAKS), so "--top=" is "--top", "=", "".
fn bash_words(line: &str) -> Vec<String> {
    let mut words = Vec::new();
    for word in line.split(' ') {
        let mut parts = word.split('=').peekable();
        while let Some(p) = parts.next() {
            words.push(p.to_string());
            if parts.peek().is_some() {
                words.push("=".to_string());
            }
        }
    }
    words.retain(|w| !w.is_empty());
    if line.ends_with(' ') || line.ends_with('=') {
        words.push(String::new());
    }
    words
}

/// What `_dfdu` from completions/dfdu.bash puts in COMPREPLY for the command line `line`
/// (the cursor at its end), run in `dir`.
fn bash_complete(dir: &Path, line: &str) -> Vec<String> {
    let script = r#"source "$1"; shift; COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1))
        COMP_LINE="$*"; COMP_POINT=${#COMP_LINE}
        _dfdu dfdu "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD - 1]}" || exit 9
        printf '%s\n' "${COMPREPLY[@]}""#;
    let out = Command::new("bash")
        .args(["--norc", "--noprofile", "-c", script, "bash"])
        .arg(root().join("completions/dfdu.bash"))
        .args(bash_words(line))
        .current_dir(dir)
        .output()
        .unwrap();
    assert!(out.status.success(), "bash completion of {line:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap().lines().filter(|l| !l.is_empty()).map(str::to_string).collect()
}

/// A directory with one file and one directory whose names start with "sc", as "scan" does.
fn tree_for_completion(scratch: &Scratch) -> PathBuf {
    let dir = scratch.subdir("cwd");
    std::fs::write(dir.join("scfile"), b"x").unwrap();
    std::fs::create_dir(dir.join("scdir")).unwrap();
    dir
}

#[test]
fn bash_completes_subcommands_options_and_files() {
    let scratch = Scratch::new("bash-completion");
    let dir = tree_for_completion(&scratch);
    let cases: &[(&str, &[&str])] = &[
        ("dfdu sc", &["scan", "scdir", "scfile"]),
        ("dfdu scan --to", &["--top"]),
        ("dfdu scan sc", &["scdir"]),
        ("dfdu scan -X sc", &["scdir", "scfile"]),
        ("dfdu scan --treemap=sc", &["scdir", "scfile"]),
        ("dfdu scan --top ", &[]),
        ("dfdu dedupe --dr", &["--dry-run"]),
        ("dfdu dupes --hash", &["--hashfile"]),
        ("dfdu --time=c", &["ctime"]),
        ("dfdu --time sc", &["scdir", "scfile"]),
        ("dfdu --time-style l", &["long-iso"]),
        ("dfdu dupes --keep=n", &["newest"]),
        ("dfdu dupes --keep oldest,s", &["oldest,shortest"]),
        ("dfdu help ", &[]),
        ("dfdu diff sc", &["scdir", "scfile"]),
    ];
    for (line, want) in cases {
        assert_eq!(bash_complete(&dir, line), *want, "bash completion of {line:?}");
    }
    let mut problems = Vec::new();
    for (mode, _, _) in MODES {
        let prefix = if *mode == "du" { "dfdu -".to_string() } else { format!("dfdu {mode} -") };
        let offered: BTreeSet<String> = bash_complete(&dir, &prefix).into_iter().collect();
        problems.extend(mismatch(mode, "completions/dfdu.bash", &mode_options(mode), &offered));
    }
    assert!(problems.is_empty(), "bash completion and --help disagree:\n{}", problems.join("\n"));
}

/// The completions fish gives for `line` with completions/dfdu.fish loaded, first words
/// only (fish appends a tab and a description), run in `dir` with a home of its own.
fn fish_complete(dir: &Path, home: &Path, line: &str) -> Vec<String> {
    let out = Command::new("fish")
        .args(["--no-config", "-c", "source $argv[1]; complete -C $argv[2]"])
        .arg(root().join("completions/dfdu.fish"))
        .arg(line)
        .current_dir(dir)
        .env("HOME", home)
        .env("XDG_CONFIG_HOME", home)
        .env("XDG_DATA_HOME", home)
        .env("XDG_CACHE_HOME", home)
        .output()
        .unwrap();
    assert!(out.status.success(), "fish completion of {line:?}: {}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8(out.stdout).unwrap();
    text.lines().map(|l| l.split('\t').next().unwrap().to_string()).collect()
}

#[test]
fn fish_completes_subcommands_options_and_files() {
    if !have_or_skip("fish", "the fish completion test") {
        return;
    }
    let scratch = Scratch::new("fish-completion");
    let dir = tree_for_completion(&scratch);
    let home = scratch.subdir("home");
    let check = fish_command_status(&home);
    assert!(check.is_empty(), "fish --no-execute completions/dfdu.fish: {check}");
    let cases: &[(&str, &[&str])] = &[
        ("dfdu sc", &["scan", "scdir/", "scfile"]),
        ("dfdu scan --to", &["--top"]),
        ("dfdu scan sc", &["scdir/"]),
        ("dfdu scan -X sc", &["scdir/", "scfile"]),
        ("dfdu dedupe --dr", &["--dry-run"]),
        ("dfdu --time=c", &["--time=ctime"]),
        ("dfdu dupes --keep=f", &["--keep=first-arg"]),
        ("dfdu help ", &[]),
    ];
    for (line, want) in cases {
        assert_eq!(fish_complete(&dir, &home, line), *want, "fish completion of {line:?}");
    }
    let mut problems = Vec::new();
    for (mode, _, _) in MODES {
        let prefix = if *mode == "du" { "dfdu -".to_string() } else { format!("dfdu {mode} -") };
        let offered: BTreeSet<String> =
            fish_complete(&dir, &home, &prefix).into_iter().map(|w| w.split('=').next().unwrap().to_string()).collect();
        problems.extend(mismatch(mode, "completions/dfdu.fish", &mode_options(mode), &offered));
    }
    assert!(problems.is_empty(), "fish completion and --help disagree:\n{}", problems.join("\n"));
}

/// What fish's syntax check says about completions/dfdu.fish (empty: nothing).
fn fish_command_status(home: &Path) -> String {
    let out = Command::new("fish")
        .arg("--no-config")
        .arg("--no-execute")
        .arg(root().join("completions/dfdu.fish"))
        .env("HOME", home)
        .env("XDG_CONFIG_HOME", home)
        .env("XDG_DATA_HOME", home)
        .output()
        .unwrap();
    if out.status.success() {
        String::new()
    } else {
        String::from_utf8_lossy(&out.stderr).into_owned()
    }
}

/// The options of each `NAME_opts=( ... )` array of completions/_dfdu, by mode; an array
/// that takes in another (`$dupes_opts`) gets its options too.
fn zsh_arrays(text: &str) -> Vec<(String, BTreeSet<String>)> {
    let mut arrays: Vec<(String, BTreeSet<String>)> = Vec::new();
    let mut current: Option<(String, BTreeSet<String>)> = None;
    for line in text.lines() {
        let line = line.trim();
        if let Some(name) = line.strip_suffix("_opts=(") {
            current = Some((name.to_string(), BTreeSet::new()));
        } else if line == ")" {
            arrays.extend(current.take());
        } else if let Some((_, options)) = current.as_mut() {
            if let Some(other) = line.strip_prefix('$').and_then(|l| l.strip_suffix("_opts")) {
                let taken = arrays.iter().find(|a| a.0 == other).map(|a| a.1.clone()).unwrap_or_default();
                options.extend(taken);
            } else {
                // The option names come before the description in brackets.
                options.extend(option_words(line.split('[').next().unwrap()));
            }
        }
    }
    arrays
}

#[test]
fn zsh_completion_parses_and_lists_every_option() {
    if !have_or_skip("zsh", "the zsh completion test") {
        return;
    }
    let file = root().join("completions/_dfdu");
    let out = Command::new("zsh").arg("-n").arg(&file).output().unwrap();
    assert!(out.status.success(), "zsh -n completions/_dfdu: {}", String::from_utf8_lossy(&out.stderr));
    let arrays = zsh_arrays(&std::fs::read_to_string(&file).unwrap());
    let mut problems = Vec::new();
    for (mode, _, _) in MODES {
        let Some((_, offered)) = arrays.iter().find(|a| a.0 == *mode) else {
            problems.push(format!("completions/_dfdu has no {mode}_opts=( ... ) array"));
            continue;
        };
        problems.extend(mismatch(mode, "completions/_dfdu", &mode_options(mode), offered));
    }
    assert!(problems.is_empty(), "zsh completion and --help disagree:\n{}", problems.join("\n"));
}

#[test]
fn zsh_completes_in_a_terminal() {
    if !have_or_skip("zsh", "the zsh terminal completion test") || !have_tmux() {
        return;
    }
    let scratch = Scratch::new("zsh-completion");
    // An empty directory: "dfdu sc" completes to nothing but "scan" there.
    let dir = scratch.subdir("cwd");
    let home = scratch.subdir("home");
    let shell = format!("env HOME='{0}' ZDOTDIR='{0}' zsh -f", home.display());
    let term = Term::command(&dir, &shell, 100, 20);
    let setup = format!(
        "fpath=('{}' $fpath); autoload -Uz compinit; compinit -D -u; cd '{}'; PS1='> '; clear",
        root().join("completions").display(),
        dir.display()
    );
    term.tmux(&["send-keys", "-t", "t", "-l", &setup]);
    term.keys(&["Enter"]);
    // The prompt is "> "; tmux leaves out the space a completed word ends with.
    let cases = [
        ("dfdu sc", "> dfdu scan"),
        ("dfdu scan --to", "> dfdu scan --top="),
        ("dfdu dupes --hash", "> dfdu dupes --hashfile="),
    ];
    for (typed, want) in cases {
        term.tmux(&["send-keys", "-t", "t", "-l", typed]);
        term.keys(&["Tab"]);
        term.wait(&format!("{typed:?} completed to {want:?}"), |s| s.lines().any(|l| l.trim_end() == want));
        term.keys(&["C-u"]);
    }
}

/// The files `make install` puts under DESTDIR with PREFIX=/usr, with their sources.
const INSTALLED: &[(&str, &str)] = &[
    ("usr/share/man/man1/dfdu.1", "man/dfdu.1"),
    ("usr/share/bash-completion/completions/dfdu", "completions/dfdu.bash"),
    ("usr/share/zsh/vendor-completions/_dfdu", "completions/_dfdu"),
    ("usr/share/fish/vendor_completions.d/dfdu.fish", "completions/dfdu.fish"),
];

fn make(target: &str, destdir: &Path) {
    let out = Command::new("make")
        .args(["-s", "-C"])
        .arg(root())
        .arg(target)
        .arg(format!("DESTDIR={}", destdir.display()))
        .args(["PREFIX=/usr", concat!("DFDU_BIN=", env!("CARGO_BIN_EXE_dfdu"))])
        .output()
        .unwrap();
    assert!(out.status.success(), "make {target}: {}", String::from_utf8_lossy(&out.stderr));
}

/// Every file below `dir`, relative to it.
fn files_below(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let p = e.path();
        if p.is_dir() && !p.is_symlink() {
            files_below(&p, out);
        } else {
            out.push(p);
        }
    }
}

#[test]
fn make_install_and_uninstall_in_a_destdir() {
    if !have_or_skip("make", "the make install test") {
        return;
    }
    use std::os::unix::fs::PermissionsExt;
    let scratch = Scratch::new("make-install");
    let dest = scratch.subdir("dest");
    make("install-du-link", &dest);
    let bin = dest.join("usr/bin/dfdu");
    assert_eq!(std::fs::read(&bin).unwrap(), std::fs::read(env!("CARGO_BIN_EXE_dfdu")).unwrap(), "the binary");
    assert_eq!(std::fs::metadata(&bin).unwrap().permissions().mode() & 0o777, 0o755);
    assert_eq!(std::fs::read_link(dest.join("usr/bin/du")).unwrap(), Path::new("dfdu"), "the du link");
    for (at, source) in INSTALLED {
        let path = dest.join(at);
        let installed = std::fs::read(&path).unwrap_or_else(|e| panic!("{at}: {e}"));
        assert_eq!(installed, std::fs::read(root().join(source)).unwrap(), "{at} is {source}");
        assert_eq!(std::fs::metadata(&path).unwrap().permissions().mode() & 0o777, 0o644, "{at}");
    }
    let mut all = Vec::new();
    files_below(&dest, &mut all);
    assert_eq!(all.len(), INSTALLED.len() + 2, "what was installed: {all:?}");
    let out = Command::new(&bin).args(["-s", "--apparent-size", "-B1"]).arg(&dest).output().unwrap();
    assert!(out.status.success(), "the installed dfdu runs");
    make("uninstall", &dest);
    let mut left = Vec::new();
    files_below(&dest, &mut left);
    assert!(left.is_empty(), "make uninstall left {left:?}");
}

#[test]
fn the_checks_can_fail() {
    let help = "Usage: x\n  -b, --bytes   print\n  -o FILE       write\n      --time=WORD  use\n-0 and --json\n";
    assert_eq!(help_options(help), ["--bytes", "--time", "-b", "-o"].map(String::from).into());
    let page =
        ".SH \"DFDU SCAN\"\n.TP\n.BR \\-b \", \" \\-\\-bytes\nx\n.TP\n.BI \\-o \" FILE\"\ny\n.TP\n.BI \\-\\-top= N\n";
    let sections = man_sections(page);
    assert_eq!(sections[0].1, ["--bytes", "--top", "-b", "-o"].map(String::from).into());
    let expected: BTreeSet<String> = ["--bytes", "--json"].map(String::from).into();
    assert_eq!(mismatch("scan", "f", &expected, &sections[0].1).len(), 4, "one missing, three extra");
    let zsh = "scan_opts=(\n  '(-b --bytes)'{-b,--bytes}'[exact -x]'\n  '-o+[write]:file:_files'\n)\n\
               dedupe_opts=(\n  '--dry-run[say]'\n  $scan_opts\n)\n";
    let arrays = zsh_arrays(zsh);
    assert_eq!(arrays[0].1, ["--bytes", "-b", "-o"].map(String::from).into());
    assert_eq!(arrays[1].1, ["--bytes", "--dry-run", "-b", "-o"].map(String::from).into());
    assert_eq!(bash_words("dfdu scan --top="), ["dfdu", "scan", "--top", "=", ""]);
    assert_eq!(bash_words("dfdu sc"), ["dfdu", "sc"]);
}
