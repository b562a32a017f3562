//! Default options from a config file, for `browse` and `scan` (issue 29.8): first
//! `/etc/dfdu/config`, then `$XDG_CONFIG_HOME/dfdu/config` (else `~/.config/dfdu/config`),
//! then the command line, so that what is typed last wins. `--ignore-config` on the
//! command line reads neither.
//!
//! # Format
//!
//! As ncdu's: one option per line, as it would be typed (`--exclude '*.o'`, `-x`), `#`
//! starts a comment line; words split at blanks, `'...'` and `"..."` quote. Lines apply
//! to both commands until a `[browse]` or `[scan]` line, after which they apply to that
//! command only (`[all]` goes back to both).
//!
//! # Trust
//!
//! A config file another user could have written is not read (DESIGN, "Running as
//! root"), as `trust` judges a file dfdu only reads (`Use::Read`): it and every directory
//! on the way to it are opened one name at a time, and a step that someone else than
//! root and this user owns, or that lies in a directory others may write without the
//! sticky bit, is refused; so is a file others may write. What is refused is said on
//! stderr, with the reason, and the command goes on without it.

use super::trust::{self, Judge, Use};
use crate::meta::{os_bytes, os_string, Kind};
use crate::platform::{self, WalkError};
use std::ffi::OsString;
use std::path::{Path, PathBuf};

/// The most bytes read from one config file.
const MAX_CONFIG_BYTES: u64 = 1 << 20;

/// What the command parses: the config files' words, then the command line.
pub struct Configured {
    pub args: Vec<OsString>,
    /// Where each of the first words of `args` comes from ("FILE, line N"), for
    /// messages about them; the command line's words have none.
    pub origins: Vec<String>,
}

/// `args` with the config files' options before them, unless `--ignore-config` is among
/// them (it is taken out). `cmd` is `browse` or `scan`; warnings go to stderr as
/// `PROG CMD: ...`.
pub fn with_config(prog: &str, cmd: &str, args: Vec<OsString>) -> Configured {
    let end = args.iter().position(|a| a == "--").unwrap_or(args.len());
    if args[..end].iter().any(|a| a == "--ignore-config") {
        let mut kept = args;
        let mut k = 0;
        kept.retain(|a| {
            k += 1;
            !(k <= end && a == "--ignore-config")
        });
        return Configured { args: kept, origins: Vec::new() };
    }
    let (mut out, mut origins) = (Vec::new(), Vec::new());
    for file in config_files() {
        match read_trusted(&file) {
            Ok(Some(text)) => {
                for (word, line) in words_for(&text, cmd) {
                    out.push(word);
                    origins.push(format!("{}, line {line}", file.display()));
                }
            }
            Ok(None) => {}
            Err(why) => eprintln!("{prog} {cmd}: not reading {}: {why}", file.display()),
        }
    }
    out.extend(args);
    Configured { args: out, origins }
}

/// The config files, system first.
fn config_files() -> Vec<PathBuf> {
    let mut files = vec![PathBuf::from("/etc/dfdu/config")];
    let base = std::env::var_os("XDG_CONFIG_HOME").filter(|v| Path::new(v).is_absolute()).map(PathBuf::from);
    let base =
        base.or_else(|| std::env::var_os("HOME").filter(|h| !h.is_empty()).map(|h| Path::new(&h).join(".config")));
    if let Some(b) = base {
        files.push(b.join("dfdu/config"));
    }
    files
}

/// The text of `file` if it may be trusted; `Ok(None)` when there is no such file. The
/// file is opened inside the directory handle the judged walk ended on, so what was
/// judged is what is read.
fn read_trusted(file: &Path) -> Result<Option<String>, String> {
    let (Some(dir), Some(name)) = (file.parent(), file.file_name()) else { return Ok(None) };
    let judge = Judge::new(Use::Read);
    let wd = match trust::open_dir(dir, judge) {
        Ok(d) => d,
        Err(WalkError::Refused(why)) => return Err(why),
        Err(WalkError::Os(_)) => return Ok(None),
    };
    // Looked at before it is opened, so that only a regular file is ever opened (no
    // device's open runs); the judged directory lets no one else swap it meanwhile.
    match platform::entry_at(&wd, name) {
        Ok(Some(c)) if c.kind == Kind::File => {}
        Ok(Some(c)) if c.kind == Kind::Symlink => return Err("it is a symbolic link (not followed)".into()),
        Ok(Some(_)) => return Err("not a regular file".into()),
        Ok(None) | Err(_) => return Ok(None),
    }
    let Ok(file) = platform::open_read_in(&wd, name) else { return Ok(None) };
    if platform::check_file(&file).map_or(true, |c| c.kind != Kind::File) {
        return Err("not a regular file".into());
    }
    let owners = platform::write_dir_owner(&wd).zip(platform::file_owner(&file));
    if let Some(why) = judge.zip(owners).and_then(|(j, (d, f))| j.file(d, Some(f))) {
        return Err(why);
    }
    let mut text = String::new();
    use std::io::Read;
    file.take(MAX_CONFIG_BYTES).read_to_string(&mut text).map_err(|e| e.to_string())?;
    Ok(Some(text))
}

/// The words of the lines of `text` that apply to `cmd`, each with its line number
/// (from 1).
pub fn words_for(text: &str, cmd: &str) -> Vec<(OsString, usize)> {
    let mut section_ok = true;
    let mut out = Vec::new();
    for (i, line) in text.lines().map(str::trim).enumerate() {
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        if let Some(name) = line.strip_prefix('[').and_then(|l| l.strip_suffix(']')) {
            section_ok = name == "all" || name == cmd;
            continue;
        }
        if section_ok {
            out.extend(split_words(line).into_iter().map(|w| (os_string(&os_bytes(w.as_ref())), i + 1)));
        }
    }
    out
}

/// `line` split at blanks outside quotes; quotes are taken off.
fn split_words(line: &str) -> Vec<String> {
    let mut words = Vec::new();
    let (mut word, mut quote, mut any) = (String::new(), None, false);
    for c in line.chars() {
        match (quote, c) {
            (None, '\'' | '"') => (quote, any) = (Some(c), true),
            (Some(q), c) if c == q => quote = None,
            (None, c) if c.is_whitespace() => {
                if any {
                    words.push(std::mem::take(&mut word));
                    any = false;
                }
            }
            (_, c) => {
                word.push(c);
                any = true;
            }
        }
    }
    if any {
        words.push(word);
    }
    words
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_sections_and_quotes() {
        let text = "# defaults\n-x\n--exclude '*.o'\n\n[browse]\n--read-only --ascii\n[scan]\n--top 5\n[all]\n--exclude \"a b\"\n";
        let words = |cmd| words_for(text, cmd).into_iter().map(|(w, _)| w.into_string().unwrap()).collect::<Vec<_>>();
        assert_eq!(words("browse"), ["-x", "--exclude", "*.o", "--read-only", "--ascii", "--exclude", "a b"]);
        assert_eq!(words("scan"), ["-x", "--exclude", "*.o", "--top", "5", "--exclude", "a b"]);
        let lines: Vec<usize> = words_for(text, "scan").into_iter().map(|(_, line)| line).collect();
        assert_eq!(lines, [2, 3, 3, 8, 8, 10, 10]);
        assert_eq!(split_words("  --exclude ''  "), ["--exclude", ""]);
    }

    #[test]
    fn ignore_config_is_taken_out_and_reads_nothing() {
        let args: Vec<OsString> =
            ["--ignore-config", "-x", "--", "--ignore-config"].iter().map(OsString::from).collect();
        let out = with_config("dfdu", "scan", args);
        assert_eq!(out.args, ["-x", "--", "--ignore-config"].map(OsString::from), "an operand after -- stays");
        assert!(out.origins.is_empty());
    }
}
