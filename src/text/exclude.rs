//! `--exclude` / `-X` patterns with GNU du's matching rules: shell wildcards (`*` also
//! matches `/`, no special leading dot), tried against the whole path as du prints it
//! and against every suffix that starts after a `/`.

/// A set of exclude patterns.
#[derive(Clone, Debug, Default)]
pub struct Exclude {
    patterns: Vec<Vec<u8>>,
}

impl Exclude {
    pub fn is_empty(&self) -> bool {
        self.patterns.is_empty()
    }

    pub fn add(&mut self, pattern: &[u8]) {
        self.patterns.push(pattern.to_vec());
    }

    /// Adds one pattern per line of `text` (trailing blanks trimmed, blank lines
    /// skipped), as `-X FILE` does.
    pub fn add_lines(&mut self, text: &[u8]) {
        for line in text.split(|&c| c == b'\n') {
            let end = line.iter().rposition(|c| !c.is_ascii_whitespace()).map_or(0, |p| p + 1);
            if end > 0 {
                self.add(&line[..end]);
            }
        }
    }

    /// True when some pattern matches `path` or one of its suffixes after a `/`.
    pub fn matches(&self, path: &[u8]) -> bool {
        self.patterns.iter().any(|p| {
            if fnmatch(p, path) {
                return true;
            }
            (0..path.len()).any(|i| path[i] == b'/' && path.get(i + 1) != Some(&b'/') && fnmatch(p, &path[i + 1..]))
        })
    }
}

/// `fnmatch(pattern, s, 0)`: `*`, `?`, bracket expressions (`[a-z]`, `[!x]`, `[^x]`,
/// `[[:alpha:]]`) and backslash escapes. Iterative with single-star backtracking, so
/// no pattern can make it recurse or take exponential time.
pub fn fnmatch(pattern: &[u8], s: &[u8]) -> bool {
    let (mut p, mut i) = (0usize, 0usize);
    let mut star: Option<(usize, usize)> = None;
    loop {
        if p < pattern.len() {
            match pattern[p] {
                b'*' => {
                    while p < pattern.len() && pattern[p] == b'*' {
                        p += 1;
                    }
                    star = Some((p, i));
                    continue;
                }
                b'?' if i < s.len() => {
                    p += 1;
                    i += char_len(&s[i..]);
                    continue;
                }
                b'[' if i < s.len() => {
                    if let Some((matched, next_p)) = bracket(pattern, p, &s[i..]) {
                        if matched {
                            p = next_p;
                            i += char_len(&s[i..]);
                            continue;
                        }
                    } else if s[i] == b'[' {
                        p += 1;
                        i += 1;
                        continue;
                    }
                }
                b'\\' if p + 1 < pattern.len() && i < s.len() && pattern[p + 1] == s[i] => {
                    p += 2;
                    i += 1;
                    continue;
                }
                c if c != b'*' && c != b'?' && c != b'[' && c != b'\\' && i < s.len() && c == s[i] => {
                    p += 1;
                    i += 1;
                    continue;
                }
                b'\\' if p + 1 == pattern.len() && i < s.len() && s[i] == b'\\' => {
                    p += 1;
                    i += 1;
                    continue;
                }
                _ => {}
            }
        } else if i == s.len() {
            return true;
        }
        match star {
            Some((sp, si)) if si < s.len() => {
                let next = si + char_len(&s[si..]);
                star = Some((sp, next));
                p = sp;
                i = next;
            }
            _ => return false,
        }
    }
}

/// Length of the character at the start of `s`: a whole UTF-8 sequence when valid,
/// else one byte.
fn char_len(s: &[u8]) -> usize {
    crate::text::quote::utf8_len(s).max(1)
}

fn decode(s: &[u8]) -> u32 {
    let n = char_len(s);
    std::str::from_utf8(&s[..n]).ok().and_then(|t| t.chars().next()).map_or(s[0] as u32, |c| c as u32)
}

/// Matches a bracket expression starting at `pattern[start] == '['` against the first
/// character of `s`. `None` when the bracket is not closed (then `[` is literal).
fn bracket(pattern: &[u8], start: usize, s: &[u8]) -> Option<(bool, usize)> {
    let c = decode(s);
    let mut p = start + 1;
    let negate = matches!(pattern.get(p), Some(b'!' | b'^'));
    if negate {
        p += 1;
    }
    let mut matched = false;
    let mut first = true;
    loop {
        let &pc = pattern.get(p)?;
        if pc == b']' && !first {
            return Some((matched != negate, p + 1));
        }
        first = false;
        if pc == b'[' && pattern.get(p + 1) == Some(&b':') {
            let rest = &pattern[p + 2..];
            let end = rest.windows(2).position(|w| w == b":]")?;
            matched |= class_matches(&rest[..end], c);
            p += 2 + end + 2;
            continue;
        }
        let (lo, used) = if pc == b'\\' && p + 1 < pattern.len() {
            (decode(&pattern[p + 1..]), 1 + char_len(&pattern[p + 1..]))
        } else {
            (decode(&pattern[p..]), char_len(&pattern[p..]))
        };
        p += used;
        if pattern.get(p) == Some(&b'-') && pattern.get(p + 1).is_some_and(|&b| b != b']') {
            let hi_at = if pattern[p + 1] == b'\\' { p + 2 } else { p + 1 };
            let hi = decode(pattern.get(hi_at..)?);
            p = hi_at + char_len(&pattern[hi_at..]);
            matched |= lo <= c && c <= hi;
        } else {
            matched |= lo == c;
        }
    }
}

fn class_matches(name: &[u8], c: u32) -> bool {
    let Some(ch) = char::from_u32(c) else {
        return false;
    };
    match name {
        b"alpha" => ch.is_alphabetic(),
        b"digit" => ch.is_ascii_digit(),
        b"alnum" => ch.is_alphanumeric(),
        b"upper" => ch.is_uppercase(),
        b"lower" => ch.is_lowercase(),
        b"space" => ch.is_whitespace(),
        b"blank" => ch == ' ' || ch == '\t',
        b"punct" => ch.is_ascii_punctuation(),
        b"print" => !ch.is_control(),
        b"graph" => !ch.is_control() && !ch.is_whitespace(),
        b"cntrl" => ch.is_control(),
        b"xdigit" => ch.is_ascii_hexdigit(),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wildcards() {
        assert!(fnmatch(b"*.o", b"a.o"));
        assert!(fnmatch(b"*", b"a/b"), "star crosses slashes without FNM_PATHNAME");
        assert!(fnmatch(b"a?c", b"abc"));
        assert!(fnmatch(b"a?c", "aéc".as_bytes()), "? takes one UTF-8 character");
        assert!(!fnmatch(b"a?c", b"ac"));
        assert!(fnmatch(b"[a-c]x", b"bx"));
        assert!(fnmatch(b"[!a-c]x", b"dx"));
        assert!(!fnmatch(b"[!a-c]x", b"ax"));
        assert!(fnmatch(b"[[:digit:]]*", b"7up"));
        assert!(fnmatch(b"\\*", b"*"));
        assert!(!fnmatch(b"\\*", b"x"));
        assert!(fnmatch(b"[", b"["));
        assert!(fnmatch(b"*a*a*a*a*a*b", b"aaaaaaaaaaaaaaaaaaaaaaaaaaaaab"));
        assert!(!fnmatch(b"*a*a*a*a*a*b", b"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"));
        assert!(fnmatch(b".*", b".hidden"));
    }

    #[test]
    fn suffix_matching_like_du() {
        let mut ex = Exclude::default();
        ex.add(b"sub");
        assert!(ex.matches(b"dir/sub"));
        assert!(ex.matches(b"sub"));
        assert!(!ex.matches(b"dir/sub2"));
        let mut ex = Exclude::default();
        ex.add(b"d*/x");
        assert!(ex.matches(b"top/dir/x"));
    }

    #[test]
    fn pattern_files_trim_and_skip_blank_lines() {
        let mut ex = Exclude::default();
        ex.add_lines(b"a  \n\n  \nb\n");
        assert!(ex.matches(b"x/a") && ex.matches(b"b") && !ex.matches(b"c"));
    }
}
