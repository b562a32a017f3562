//! Just enough JSON for the tree marker: write a flat object, read one field back.
//!
//! The reader is not a parser: it finds the first `"key":` and reads the value after it.
//! That is exact for the flat marker this tool writes itself (keys are unique, values are
//! numbers or strings), and for the first root's total in `dfdu scan --json`. A string
//! value can never fake a match: a quote inside a string is escaped as `\"`.

/// A JSON string literal for `text`, with quotes, backslashes and control characters escaped.
pub fn quote(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 2);
    out.push('"');
    for ch in text.chars() {
        match ch {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            ch if u32::from(ch) < 0x20 => out.push_str(&format!("\\u{:04x}", u32::from(ch))),
            ch => out.push(ch),
        }
    }
    out.push('"');
    out
}

/// A flat object, one field per line; values must already be JSON (numbers or `quote`d).
pub fn object(fields: &[(&str, String)]) -> String {
    let body: Vec<String> = fields.iter().map(|(key, value)| format!("  {}: {value}", quote(key))).collect();
    format!("{{\n{}\n}}\n", body.join(",\n"))
}

/// The raw text of the value of `key` (up to the next comma, newline or brace).
pub fn raw(text: &str, key: &str) -> Option<String> {
    let needle = format!("{}:", quote(key));
    let start = text.find(&needle)? + needle.len();
    let rest = text[start..].trim_start();
    if rest.starts_with('"') {
        return Some(rest[..string_end(rest)?].to_string());
    }
    let end = rest.find([',', '\n', '}']).unwrap_or(rest.len());
    Some(rest[..end].trim().to_string())
}

pub fn u64(text: &str, key: &str) -> Option<u64> {
    raw(text, key)?.parse().ok()
}

/// A string value, unescaped (only the escapes that `quote` produces).
pub fn string(text: &str, key: &str) -> Option<String> {
    let raw = raw(text, key)?;
    let inner = raw.strip_prefix('"')?.strip_suffix('"')?;
    let mut out = String::with_capacity(inner.len());
    let mut chars = inner.chars();
    while let Some(ch) = chars.next() {
        if ch != '\\' {
            out.push(ch);
            continue;
        }
        match chars.next()? {
            'n' => out.push('\n'),
            'u' => {
                let code: String = chars.by_ref().take(4).collect();
                out.push(char::from_u32(u32::from_str_radix(&code, 16).ok()?)?);
            }
            other => out.push(other),
        }
    }
    Some(out)
}

/// The byte index just past the closing quote of the string literal at the start of `text`.
fn string_end(text: &str) -> Option<usize> {
    let mut escaped = false;
    for (idx, ch) in text.char_indices().skip(1) {
        match (escaped, ch) {
            (true, _) => escaped = false,
            (false, '\\') => escaped = true,
            (false, '"') => return Some(idx + 1),
            _ => {}
        }
    }
    None
}
