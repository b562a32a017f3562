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
//! root"): it and every directory on the way to it are opened one name at a time, and a
//! step that someone else than root and this user owns, or that lies in a directory others
//! may write without the sticky bit, is refused; so is a file others may write. What is
//! refused is said on stderr and the command goes on without it.

use crate::meta::{os_bytes, os_string};
use crate::platform::{self, Owner};
use std::ffi::OsString;
use std::path::{Path, PathBuf};

/// The most bytes read from one config file.
const MAX_CONFIG_BYTES: u64 = 1 << 20;

/// `args` with the config files' options before them, unless `--ignore-config` is among
/// them (it is taken out). `cmd` is `browse` or `scan`; warnings go to stderr as
/// `PROG CMD: ...`.
pub fn with_config(prog: &str, cmd: &str, args: Vec<OsString>) -> Vec<OsString> {
    let end = args.iter().position(|a| a == "--").unwrap_or(args.len());
    if args[..end].iter().any(|a| a == "--ignore-config") {
        let mut kept = args;
        let mut k = 0;
        kept.retain(|a| {
            k += 1;
            !(k <= end && a == "--ignore-config")
        });
        return kept;
    }
    let mut out = Vec::new();
    for file in config_files() {
        match read_trusted(&file) {
            Ok(Some(text)) => out.extend(words_for(&text, cmd)),
            Ok(None) => {}
            Err(why) => eprintln!("{prog} {cmd}: not reading {}: {why}", file.display()),
        }
    }
    out.extend(args);
    out
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

/// The text of `file` if it may be trusted; `Ok(None)` when there is no such file.
fn read_trusted(file: &Path) -> Result<Option<String>, String> {
    let (Some(dir), Some(name)) = (file.parent(), file.file_name()) else { return Ok(None) };
    let uid = platform::effective_uid();
    let judge = &mut |path: &Path, dir: Owner, what: Owner| untrusted(uid, path, dir, what);
    let wd = match platform::open_write_dir(dir, judge) {
        Ok(d) => d,
        Err(platform::WalkError::Refused(why)) => return Err(why),
        Err(platform::WalkError::Os(_)) => return Ok(None),
    };
    // The same directory as a reader's handle, to open the file in it: regular files
    // only, never through a symlink.
    let Ok(cdir) = std::ffi::CString::new(os_bytes(dir.as_os_str())) else { return Ok(None) };
    let Ok(handle) = platform::open_path(&cdir, platform::Follow::Yes) else { return Ok(None) };
    if let (Ok(seen), Ok(walked)) = (platform::dir_id(&handle), platform::write_dir_id(&wd)) {
        if seen != walked {
            return Err("its directory changed while it was looked at".into());
        }
    }
    let Ok(cname) = std::ffi::CString::new(os_bytes(name)) else { return Ok(None) };
    let file = match platform::open_file_at(&handle, &cname, true) {
        Ok((Some(f), _)) => f,
        Ok((None, _)) => return Err("not a regular file".into()),
        Err(_) => return Ok(None),
    };
    if let (Some(d), Some(f)) = (platform::write_dir_owner(&wd), platform::file_owner(&file)) {
        if let Some(why) = untrusted(uid, &dir.join(name), d, f) {
            return Err(why);
        }
        if f.mode & 0o022 != 0 {
            return Err("others may write it".into());
        }
    }
    let mut text = String::new();
    use std::io::Read;
    file.take(MAX_CONFIG_BYTES).read_to_string(&mut text).map_err(|e| e.to_string())?;
    Ok(Some(text))
}

/// Why a step to `path` cannot be trusted: owned by someone else than root and `uid`, or
/// in a directory others may write without the sticky bit. `None` where it can.
fn untrusted(uid: Option<u32>, path: &Path, dir: Owner, what: Owner) -> Option<String> {
    let uid = uid?;
    if what.uid != uid && what.uid != 0 {
        return Some(format!("{} belongs to another user", path.display()));
    }
    if dir.mode & 0o022 != 0 && dir.mode & 0o1000 == 0 {
        return Some(format!("{} is in a directory others may write", path.display()));
    }
    None
}

/// The words of the lines of `text` that apply to `cmd`.
pub fn words_for(text: &str, cmd: &str) -> Vec<OsString> {
    let mut section_ok = true;
    let mut out = Vec::new();
    for line in text.lines().map(str::trim) {
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        if let Some(name) = line.strip_prefix('[').and_then(|l| l.strip_suffix(']')) {
            section_ok = name == "all" || name == cmd;
            continue;
        }
        if section_ok {
            out.extend(split_words(line).into_iter().map(|w| os_string(&os_bytes(w.as_ref()))));
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
        let words = |cmd| words_for(text, cmd).into_iter().map(|w| w.into_string().unwrap()).collect::<Vec<_>>();
        assert_eq!(words("browse"), ["-x", "--exclude", "*.o", "--read-only", "--ascii", "--exclude", "a b"]);
        assert_eq!(words("scan"), ["-x", "--exclude", "*.o", "--top", "5", "--exclude", "a b"]);
        assert_eq!(split_words("  --exclude ''  "), ["--exclude", ""]);
    }

    #[test]
    fn ignore_config_is_taken_out_and_reads_nothing() {
        let args: Vec<OsString> =
            ["--ignore-config", "-x", "--", "--ignore-config"].iter().map(OsString::from).collect();
        let out = with_config("dfdu", "scan", args);
        assert_eq!(out, ["-x", "--", "--ignore-config"].map(OsString::from), "an operand after -- stays");
    }
}
