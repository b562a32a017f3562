//! `dfdu dupes --plan FILE`: the actions a run would take, as a POSIX shell script to
//! review and run later with `sh FILE` (rmlint's `rmlint.sh` idea). Every name is in
//! single quotes (a `'` as `'\''`), so no name can become a command; each action first
//! checks that both files are still regular files, not symlinks, with the same bytes
//! (`cmp`), and leaves a member that fails alone, naming it on standard error; the exit
//! status is 1 when any was. A replacement is a link under a new name (`ln` fails on a
//! taken one) renamed over the member by `mv -f`, as dfdu itself does it. The script
//! runs from the directory dfdu ran in (`cd` first), since the paths are as printed.
//!
//! The file is created new (O_EXCL, mode 0600, never through a symlink) in a directory
//! reached as the hash file's is (`cache::create_new`).

use super::act::Report;
use crate::text::quote::quotef;

/// `bytes` as one single-quoted shell word.
pub fn sh_quote(bytes: &[u8]) -> Vec<u8> {
    let mut out = vec![b'\''];
    for &b in bytes {
        match b {
            b'\'' => out.extend_from_slice(b"'\\''"),
            _ => out.push(b),
        }
    }
    out.push(b'\'');
    out
}

const HEAD: &str = r#"
# Each line below acts on one duplicate only if it is still a regular file (not a
# symbolic link) with the same bytes as the file kept ('cmp'); one that is not is left
# alone and named on standard error, and the exit status is 1.
set -u
status=0
same() {
    [ -f "$1" ] && [ ! -h "$1" ] && [ -f "$2" ] && [ ! -h "$2" ] && cmp -s -- "$1" "$2"
}
refuse() {
    printf 'dfdu plan: left alone (changed since the plan was made): %s\n' "$1" >&2
    status=1
}
delete() {
    if same "$1" "$2"; then rm -f -- "$2" || status=1; else refuse "$2"; fi
}
# A new name next to the member ('ln' fails on a taken one), renamed over it: the path
# is never missing.
hardlink() {
    if same "$1" "$2"; then
        t="$2.dfdu-plan.$$"
        if ln -- "$1" "$t"; then mv -f -- "$t" "$2" || { rm -f -- "$t"; status=1; }; else status=1; fi
    else
        refuse "$2"
    fi
}
# --dirs: a directory its files' lines emptied ('rmdir' removes no other), and a link to
# the kept directory in its place.
rmdir_empty() {
    rmdir -- "$1" || status=1
}
symlink_dir() {
    if [ -d "$1" ] && [ ! -h "$1" ] && [ ! -e "$2" ] && [ ! -h "$2" ]; then
        ln -s -- "$3" "$2" || status=1
    else
        refuse "$2"
    fi
}
symlink() {
    if same "$1" "$2"; then
        t="$2.dfdu-plan.$$"
        if ln -s -- "$3" "$t"; then mv -f -- "$t" "$2" || { rm -f -- "$t"; status=1; }; else status=1; fi
    else
        refuse "$2"
    fi
}
"#;

/// The script for `report`'s steps that passed their checks (the others as comments),
/// run from directory `cwd`.
pub fn script(report: &Report, cwd: &[u8], command: &str) -> Vec<u8> {
    let mut s = format!("#!/bin/sh\n# Written by {command} --plan: review, then run with sh.{HEAD}").into_bytes();
    s.extend_from_slice(b"cd -- ");
    s.extend_from_slice(&sh_quote(cwd));
    s.extend_from_slice(b" || exit 1\n");
    let mut last = usize::MAX;
    for step in &report.steps {
        let kept = &report.kept[step.group];
        if step.group != last {
            last = step.group;
            s.extend_from_slice(format!("\n# {} bytes each; kept: ", report.sizes[step.group]).as_bytes());
            s.extend_from_slice(quotef(kept).as_bytes());
            s.push(b'\n');
        }
        if let Err(why) = step.result {
            s.extend_from_slice(format!("# skipped ({}): ", why.text()).as_bytes());
            s.extend_from_slice(quotef(&step.path).as_bytes());
            s.push(b'\n');
            continue;
        }
        // A file step of `--dirs` compares with the kept tree's file; an emptied directory
        // is removed alone; the directory's own link is `symlink_dir`.
        let (verb, kept) = match (step.verb, &step.kept_file) {
            ("rmdir", _) => ("rmdir_empty", None),
            ("symlink", None) if report.dirs => ("symlink_dir", Some(kept.as_slice())),
            (v, Some(k)) => (v, Some(k.as_slice())),
            (v, None) => (v, Some(kept.as_slice())),
        };
        s.extend_from_slice(verb.as_bytes());
        for word in [kept, Some(step.path.as_slice()), step.target.as_deref()].into_iter().flatten() {
            s.push(b' ');
            s.extend_from_slice(&sh_quote(word));
        }
        s.push(b'\n');
    }
    s.extend_from_slice(b"\nexit $status\n");
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What `sh` reads back from each quoted word is the name itself.
    #[test]
    fn quoted_names_come_back_from_sh_as_they_were() {
        let names: [&[u8]; 6] = [b"plain", b"it's", b"a b", b"$(echo no)", b"new\nline", b"''"];
        for name in names {
            let mut script = b"printf '%s' ".to_vec();
            script.extend_from_slice(&sh_quote(name));
            let cmd = std::ffi::OsStr::new(std::str::from_utf8(&script).unwrap());
            let out = std::process::Command::new("sh").arg("-c").arg(cmd).output().unwrap();
            assert_eq!(out.stdout, name, "{}", String::from_utf8_lossy(name));
        }
    }
}
