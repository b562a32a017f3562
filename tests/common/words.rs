//! The one-line notation of the test tables: `words` splits a line like a tiny shell, so a
//! du_compat case or a tree entry for `build` stays one line even when it needs spaces,
//! newlines or invalid UTF-8; `escape` and `show_word` write bytes back in it.

use std::ffi::{OsStr, OsString};
use std::fmt::Write as _;
use std::os::unix::ffi::{OsStrExt, OsStringExt};

/// Splits `line` into words like a tiny shell: spaces separate words; `'...'` quotes literally
/// (and `''` is an empty word); outside quotes a backslash escapes the next character, with
/// `\n`, `\t`, `\0` and `\xHH` standing for those bytes.
pub fn words(line: &str) -> Vec<OsString> {
    let bytes = line.as_bytes();
    let mut out = Vec::new();
    let mut word: Vec<u8> = Vec::new();
    let mut in_word = false;
    let mut in_quotes = false;
    let mut i = 0;
    while i < bytes.len() {
        let c = bytes[i];
        i += 1;
        if in_quotes {
            if c == b'\'' {
                in_quotes = false;
            } else {
                word.push(c);
            }
            continue;
        }
        match c {
            b' ' => {
                if in_word {
                    out.push(OsString::from_vec(std::mem::take(&mut word)));
                    in_word = false;
                }
            }
            b'\'' => {
                in_quotes = true;
                in_word = true;
            }
            b'\\' => {
                let (byte, n_used) = unescape(&bytes[i..], line);
                word.push(byte);
                i += n_used;
                in_word = true;
            }
            _ => {
                word.push(c);
                in_word = true;
            }
        }
    }
    assert!(!in_quotes, "unterminated quote in {line:?}");
    if in_word {
        out.push(OsString::from_vec(word));
    }
    out
}

/// Decodes the escape after a backslash; returns the byte and how many input bytes it used.
fn unescape(rest: &[u8], line: &str) -> (u8, usize) {
    match rest.first() {
        Some(b'n') => (b'\n', 1),
        Some(b't') => (b'\t', 1),
        Some(b'r') => (b'\r', 1),
        Some(b'0') => (0, 1),
        Some(b'x') => {
            let hex = rest.get(1..3).and_then(|h| std::str::from_utf8(h).ok());
            let byte = hex.and_then(|h| u8::from_str_radix(h, 16).ok());
            (byte.unwrap_or_else(|| panic!("bad \\x escape in {line:?}")), 3)
        }
        Some(&c) => (c, 1),
        None => panic!("trailing backslash in {line:?}"),
    }
}

/// Shows bytes as readable text: printable ASCII as is, everything else escaped.
pub fn escape(bytes: &[u8]) -> String {
    let mut out = String::new();
    for &b in bytes {
        match b {
            b'\\' => out.push_str("\\\\"),
            b'\n' => out.push_str("\\n"),
            b'\t' => out.push_str("\\t"),
            b'\r' => out.push_str("\\r"),
            0 => out.push_str("\\0"),
            0x20..=0x7e => out.push(b as char),
            _ => {
                let _ = write!(out, "\\x{b:02x}");
            }
        }
    }
    out
}

/// Shows one word so that it can be read back by `words`.
pub fn show_word(word: &OsStr) -> String {
    let bytes = word.as_bytes();
    let plain = !bytes.is_empty() && bytes.iter().all(|b| b.is_ascii_alphanumeric() || b"-_=./,+%:@^".contains(b));
    if plain {
        escape(bytes)
    } else if bytes.iter().all(|&b| (0x20..0x7f).contains(&b) && b != b'\'') {
        format!("'{}'", escape(bytes))
    } else {
        // Outside quotes every special byte is escaped, so the word reads back the same.
        bytes
            .iter()
            .map(|&b| match b {
                b' ' | b'\'' | b'*' | b'?' | b'[' | b']' => format!("\\{}", b as char),
                _ => escape(&[b]),
            })
            .collect()
    }
}
