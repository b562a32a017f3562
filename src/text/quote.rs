//! Quoting of names and arguments in messages, in the styles GNU coreutils uses:
//! `quote` (locale quotes: ‘x’ in a UTF-8 locale, 'x' otherwise), `quoteaf` (shell
//! escape, always quoted) and `quotef` (shell escape, quoted only when needed).

use std::sync::OnceLock;

/// True when the locale's character set is UTF-8 (LC_ALL, then LC_CTYPE, then LANG),
/// as far as this process can tell without the C library's locale data: the name says
/// UTF-8 and the locale is `C.UTF-8` or installed under /usr/lib/locale.
pub fn utf8_locale() -> bool {
    static UTF8: OnceLock<bool> = OnceLock::new();
    *UTF8.get_or_init(|| {
        let name = ["LC_ALL", "LC_CTYPE", "LANG"]
            .iter()
            .filter_map(|k| std::env::var(k).ok())
            .find(|v| !v.is_empty())
            .unwrap_or_default();
        let lower = name.to_ascii_lowercase();
        if !(lower.contains("utf-8") || lower.contains("utf8")) {
            return false;
        }
        if lower.starts_with("c.") || lower.starts_with("posix.") {
            return true;
        }
        let base = name.split('@').next().unwrap_or(&name);
        let norm = |s: &str| s.replace("UTF-8", "utf8").replace("utf-8", "utf8");
        std::path::Path::new("/usr/lib/locale").join(base).is_dir()
            || std::path::Path::new("/usr/lib/locale").join(norm(base)).is_dir()
            || locale_archive_has(&norm(base))
    })
}

fn locale_archive_has(name: &str) -> bool {
    std::fs::read("/usr/lib/locale/locale-archive")
        .map(|data| data.windows(name.len() + 1).any(|w| &w[..name.len()] == name.as_bytes() && w[name.len()] == 0))
        .unwrap_or(false)
}

/// `quote(s)`: locale quotes with C-style backslash escapes inside.
pub fn quote(s: &[u8]) -> String {
    let (open, close) = if utf8_locale() { ("\u{2018}", "\u{2019}") } else { ("'", "'") };
    let mut out = String::from(open);
    let text = String::from_utf8_lossy(s);
    let valid = std::str::from_utf8(s).is_ok() && utf8_locale();
    if valid {
        for c in text.chars() {
            push_c_escaped(&mut out, c);
        }
    } else {
        for &b in s {
            if b.is_ascii() {
                push_c_escaped(&mut out, b as char);
            } else {
                out.push_str(&format!("\\{b:03o}"));
            }
        }
    }
    out.push_str(close);
    out
}

fn push_c_escaped(out: &mut String, c: char) {
    match c {
        '\n' => out.push_str("\\n"),
        '\t' => out.push_str("\\t"),
        '\r' => out.push_str("\\r"),
        '\x07' => out.push_str("\\a"),
        '\x08' => out.push_str("\\b"),
        '\x0c' => out.push_str("\\f"),
        '\x0b' => out.push_str("\\v"),
        '\\' => out.push_str("\\\\"),
        c if (c as u32) < 0x20 || c == '\x7f' => out.push_str(&format!("\\{:03o}", c as u32)),
        c => out.push(c),
    }
}

/// `quoteaf(s)`: shell-escape quoting, always in quotes ('a b', 'it'\''s', 'a'$'\n''b').
pub fn quoteaf(s: &[u8]) -> String {
    shell_escape(s, true)
}

/// `quotef(s)`: shell-escape quoting, only when the name needs it.
pub fn quotef(s: &[u8]) -> String {
    shell_escape(s, false)
}

fn shell_escape(s: &[u8], always: bool) -> String {
    let utf8 = utf8_locale();
    let printable_at = |i: usize| -> usize {
        let b = s[i];
        if b >= 0x80 {
            return if utf8 { utf8_len(&s[i..]) } else { 0 };
        }
        usize::from(b >= 0x20 && b != 0x7f)
    };
    let needs = s.is_empty()
        || (0..s.len()).any(|i| match s[i] {
            b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9' => false,
            b'%' | b'+' | b',' | b'-' | b'.' | b'/' | b':' | b'@' | b'_' | b']' | b'^' | b'{' | b'}' => false,
            b'#' | b'~' => i == 0,
            0x80..=0xff => true,
            _ => true,
        });
    let plain_utf8 = utf8
        && std::str::from_utf8(s).is_ok()
        && s.iter().all(|&b| b >= 0x80 || b.is_ascii_alphanumeric() || b"%+,-./:@_]^{}".contains(&b));
    if !always && (!needs || (plain_utf8 && !s.is_empty() && s[0] != b'#' && s[0] != b'~')) {
        return String::from_utf8_lossy(s).into_owned();
    }
    let has_unprintable = (0..s.len()).any(|i| printable_at(i) == 0);
    let shell_unsafe_in_dq = s.iter().any(|b| matches!(b, b'"' | b'$' | b'`' | b'\\' | b'!'));
    if s.contains(&b'\'') && !has_unprintable && !shell_unsafe_in_dq {
        return format!("\"{}\"", String::from_utf8_lossy(s));
    }
    let mut out = String::from("'");
    let mut open = true;
    let mut i = 0;
    while i < s.len() {
        if s[i] == b'\'' {
            if open {
                out.push('\'');
            }
            out.push_str("\\'");
            open = false;
            i += 1;
            continue;
        }
        let n = printable_at(i);
        if n > 0 {
            if !open {
                out.push('\'');
                open = true;
            }
            out.push_str(&String::from_utf8_lossy(&s[i..i + n]));
            i += n;
            continue;
        }
        if open {
            out.push('\'');
        }
        out.push_str("$'");
        while i < s.len() && s[i] != b'\'' && printable_at(i) == 0 {
            match s[i] {
                b'\n' => out.push_str("\\n"),
                b'\t' => out.push_str("\\t"),
                b'\r' => out.push_str("\\r"),
                0x07 => out.push_str("\\a"),
                0x08 => out.push_str("\\b"),
                0x0c => out.push_str("\\f"),
                0x0b => out.push_str("\\v"),
                c => out.push_str(&format!("\\{c:03o}")),
            }
            i += 1;
        }
        out.push('\'');
        open = false;
    }
    if open {
        out.push('\'');
    }
    out
}

/// `WHAT 'PATH': REASON` (no `: REASON` when `reason` is empty), the path always quoted
/// and shell-escaped (`quoteaf`) as GNU du quotes it.
pub fn problem(what: &str, path: &[u8], reason: &str) -> String {
    let mut line = format!("{what} {}", quoteaf(path));
    if !reason.is_empty() {
        line.push_str(": ");
        line.push_str(reason);
    }
    line
}

/// What a walk could not read, worded as GNU du words it: `cannot read directory 'DIR'`
/// for directory `dir` that could not be listed (`name` is `None`), `cannot access
/// 'DIR/NAME'` for an entry of it that could not be stat'ed. Returns the path too, for
/// sorting. `dfdu scan`, `diff` and `dupes` name what they could not read through it.
pub fn walk_problem(dir: &[u8], name: Option<&[u8]>, reason: &str) -> (Vec<u8>, String) {
    let mut path = dir.to_vec();
    let what = match name {
        Some(name) => {
            if !path.is_empty() && !path.ends_with(b"/") {
                path.push(b'/');
            }
            path.extend_from_slice(name);
            "cannot access"
        }
        None => "cannot read directory",
    };
    let line = problem(what, &path, reason);
    (path, line)
}

/// Length of a valid multi-byte UTF-8 sequence at the start of `s`, 0 if there is none
/// (ASCII included: callers treat single bytes themselves).
pub fn utf8_len(s: &[u8]) -> usize {
    let n = match s[0] {
        0xC2..=0xDF => 2,
        0xE0..=0xEF => 3,
        0xF0..=0xF4 => 4,
        _ => return 0,
    };
    if s.len() >= n && std::str::from_utf8(&s[..n]).is_ok() {
        n
    } else {
        0
    }
}

/// Appends `bytes` as a JSON string: invalid UTF-8 becomes U+FFFD, control characters
/// `\u00XX` escapes.
pub fn json_str(out: &mut String, bytes: &[u8]) {
    out.push('"');
    for c in String::from_utf8_lossy(bytes).chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            // Control characters must be escaped; U+2028 and U+2029 are escaped too, so the
            // report can be pasted into JavaScript source as well.
            c if (c as u32) < 0x20 || c == '\x7f' || c == '\u{2028}' || c == '\u{2029}' => {
                out.push_str(&format!("\\u{:04x}", c as u32))
            }
            c => out.push(c),
        }
    }
    out.push('"');
}
