//! Size units the way GNU du reads and writes them: `-B`/`BLOCK_SIZE` specs (`K`, `1M`,
//! `KiB`, `MB`, `'1k`, `human-readable`, `si`), integers with suffixes for `-t`, and the
//! rounding-up, auto-scaling printer behind `-h`, `--si`, `-k`, `-m` and `-B`.

/// Output format flags, named after gnulib's `human_*` options.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Style {
    /// Pick the unit per number (`-h`, `--si`).
    pub autoscale: bool,
    /// Print a unit suffix.
    pub si: bool,
    /// Units are powers of 1024 (else 1000).
    pub base_1024: bool,
    /// Append `B` (as in `KiB`, `kB`).
    pub b_suffix: bool,
    /// Group digits (leading `'` in the spec); the C locale has no separator.
    pub group_digits: bool,
}

/// An output scale: style plus the size of one printed unit in bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Scale {
    pub style: Style,
    pub block_bytes: u64,
}

impl Scale {
    pub const fn plain(block_bytes: u64) -> Scale {
        Scale {
            style: Style { autoscale: false, si: false, base_1024: false, b_suffix: false, group_digits: false },
            block_bytes,
        }
    }
    pub fn human(base_1024: bool) -> Scale {
        Scale { style: Style { autoscale: true, si: true, base_1024, ..Style::default() }, block_bytes: 1 }
    }
}

/// Why a number did not parse, as gnulib's `xstrtol` tells it apart.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NumError {
    Invalid,
    InvalidSuffix,
    Overflow,
}

/// Parses an unsigned integer in C's base-0 syntax (`0x1F`, `017`, `42`), leading blanks
/// and `+` allowed. Returns the value and the unparsed rest. `Err(Overflow)` on overflow
/// (the rest is then past all digits).
fn parse_c_uint(s: &[u8]) -> Result<(u64, usize), (NumError, usize)> {
    let mut i = 0;
    while i < s.len() && matches!(s[i], b' ' | b'\t' | b'\n' | b'\x0b' | b'\x0c' | b'\r') {
        i += 1;
    }
    if i < s.len() && s[i] == b'+' {
        i += 1;
    }
    let (radix, mut j) = if s.len() > i + 2 && s[i] == b'0' && (s[i + 1] | 0x20) == b'x' && s[i + 2].is_ascii_hexdigit()
    {
        (16, i + 2)
    } else if s.len() > i && s[i] == b'0' {
        (8, i)
    } else {
        (10, i)
    };
    let start = j;
    let mut value: u64 = 0;
    let mut overflow = false;
    while j < s.len() {
        let d = match s[j] {
            c @ b'0'..=b'9' => (c - b'0') as u64,
            c @ b'a'..=b'f' => (c - b'a' + 10) as u64,
            c @ b'A'..=b'F' => (c - b'A' + 10) as u64,
            _ => break,
        };
        if d >= radix {
            break;
        }
        match value.checked_mul(radix).and_then(|v| v.checked_add(d)) {
            Some(v) => value = v,
            None => overflow = true,
        }
        j += 1;
    }
    if j == start {
        return Err((NumError::Invalid, 0));
    }
    if overflow {
        return Err((NumError::Overflow, j));
    }
    Ok((value, j))
}

/// The outcome of `xstrtoumax`: like gnulib, a value is left behind even on some errors
/// (the number before a bad suffix, the scaled number before trailing junk, `u64::MAX`
/// on overflow), and callers that ignore the error (the block-size variables) use it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Parsed {
    pub value: Option<u64>,
    pub error: Option<NumError>,
    /// Where the number's digits ended (the suffix starts here).
    pub number_end: usize,
}

/// `xstrtoumax(s, &end, 0, &val, suffixes)`: a number, an optional unit suffix from
/// `suffixes` (with `0` in `suffixes` allowing `KB`/`KiB` forms), and nothing after.
pub fn xstrtoumax(s: &[u8], suffixes: &[u8]) -> Parsed {
    let fail = |error, value, number_end| Parsed { value, error: Some(error), number_end };
    let mut t = s;
    while let [b' ' | b'\t' | b'\n' | b'\x0b' | b'\x0c' | b'\r', rest @ ..] = t {
        t = rest;
    }
    if t.first() == Some(&b'-') {
        return fail(NumError::Invalid, None, 0);
    }
    let (mut value, end, mut err) = match parse_c_uint(s) {
        Ok((v, end)) => (v, end, None),
        Err((NumError::Overflow, end)) => (u64::MAX, end, Some(NumError::Overflow)),
        Err(_) => {
            if s.first().is_some_and(|c| suffixes.contains(c)) {
                (1, 0, None)
            } else {
                return fail(NumError::Invalid, None, 0);
            }
        }
    };
    let rest = &s[end..];
    if rest.is_empty() {
        return Parsed { value: Some(value), error: err, number_end: end };
    }
    if !suffixes.contains(&rest[0]) {
        return fail(err.unwrap_or(NumError::InvalidSuffix), Some(value), end);
    }
    let mut base: u64 = 1024;
    let mut used = 1;
    if suffixes.contains(&b'0') {
        if rest.len() >= 3 && rest[1] == b'i' && rest[2] == b'B' {
            used = 3;
        } else if rest.len() >= 2 && (rest[1] == b'B' || rest[1] == b'D') {
            base = 1000;
            used = 2;
        }
    }
    // gnulib's switch knows these letters; lowercase e, p, z, y are "valid" in the
    // suffix lists but have no case, so they are invalid suffixes.
    let power = match rest[0] {
        b'b' => return scaled(value.checked_mul(512), rest, 1, err, end),
        b'B' => return scaled(value.checked_mul(1024), rest, 1, err, end),
        b'w' => return scaled(value.checked_mul(2), rest, 1, err, end),
        b'c' => 0,
        b'k' | b'K' => 1,
        b'm' | b'M' => 2,
        b'g' | b'G' => 3,
        b't' | b'T' => 4,
        b'P' => 5,
        b'E' => 6,
        b'Z' => 7,
        b'Y' => 8,
        b'R' => 9,
        b'Q' => 10,
        _ => return fail(err.unwrap_or(NumError::InvalidSuffix), Some(value), end),
    };
    for _ in 0..power {
        match value.checked_mul(base) {
            Some(v) => value = v,
            None => {
                value = u64::MAX;
                err = Some(NumError::Overflow);
            }
        }
    }
    if rest.len() > used && err.is_none() {
        err = Some(NumError::InvalidSuffix);
    }
    Parsed { value: Some(value), error: err, number_end: end }
}

fn scaled(v: Option<u64>, rest: &[u8], used: usize, err: Option<NumError>, end: usize) -> Parsed {
    let (value, mut err) = match v {
        Some(v) => (v, err),
        None => (u64::MAX, Some(NumError::Overflow)),
    };
    if rest.len() > used && err.is_none() {
        err = Some(NumError::InvalidSuffix);
    }
    Parsed { value: Some(value), error: err, number_end: end }
}

/// `xstrtoumax` as a plain result.
pub fn parse_with_suffix(s: &[u8], suffixes: &[u8]) -> Result<u64, NumError> {
    let p = xstrtoumax(s, suffixes);
    match (p.error, p.value) {
        (None, Some(v)) => Ok(v),
        (Some(e), _) => Err(e),
        (None, None) => Err(NumError::Invalid),
    }
}

/// Suffixes `-B` and the block-size variables accept.
pub const BLOCK_SUFFIXES: &[u8] = b"eEgGkKmMpPtTyYzZ0";
/// Suffixes `-t` accepts.
pub const THRESHOLD_SUFFIXES: &[u8] = b"kKmMGTPEZY0";

/// gnulib `humblock`: a block-size spec to a scale. `None` spec means "look at
/// BLOCK_SIZE, then BLOCKSIZE, then the default" (512 under POSIXLY_CORRECT, else 1024).
/// On error the scale GNU would go on with (for the variables, whose errors du ignores)
/// comes back too.
pub fn block_spec(spec: Option<&[u8]>, env: &dyn Fn(&str) -> Option<Vec<u8>>) -> (Scale, Option<NumError>) {
    let default = Scale::plain(if env("POSIXLY_CORRECT").is_some() { 512 } else { 1024 });
    let spec = match spec {
        Some(s) => s.to_vec(),
        None => match env("BLOCK_SIZE").or_else(|| env("BLOCKSIZE")) {
            Some(s) => s,
            None => return (default, None),
        },
    };
    let mut style = Style::default();
    let mut s = spec.as_slice();
    if s.first() == Some(&b'\'') {
        style.group_digits = true;
        s = &s[1..];
    }
    let word = std::str::from_utf8(s).unwrap_or("");
    if !word.is_empty() && "human-readable".starts_with(word) && !"si".starts_with(word) {
        return (Scale { style: Style { autoscale: true, si: true, base_1024: true, ..style }, block_bytes: 1 }, None);
    }
    if !word.is_empty() && "si".starts_with(word) && !"human-readable".starts_with(word) {
        return (Scale { style: Style { autoscale: true, si: true, ..style }, block_bytes: 1 }, None);
    }
    let p = xstrtoumax(s, BLOCK_SUFFIXES);
    if let Some(e) = p.error {
        // humblock leaves the value xstrtoumax stored, with no unit style.
        let bytes = p.value.filter(|&v| v > 0).unwrap_or(default.block_bytes);
        return (Scale::plain(bytes), Some(e));
    }
    let bytes = p.value.unwrap_or(0);
    if bytes == 0 {
        return (default, Some(NumError::Invalid));
    }
    // Print the unit after each number when no digit comes before the suffix ("K",
    // "MiB", "kB"; but not " 1K" or "+1K").
    if !s[..p.number_end].iter().any(u8::is_ascii_digit) {
        style.si = true;
        let last = *s.last().unwrap_or(&0);
        if last == b'B' {
            style.b_suffix = true;
        }
        if last != b'B' || (s.len() >= 2 && s[s.len() - 2] == b'i') {
            style.base_1024 = true;
        }
    }
    (Scale { style, block_bytes: bytes }, None)
}

/// `block_spec` for the command line, where any error is fatal.
pub fn parse_block_spec(spec: Option<&[u8]>, env: &dyn Fn(&str) -> Option<Vec<u8>>) -> Result<Scale, NumError> {
    match block_spec(spec, env) {
        (scale, None) => Ok(scale),
        (_, Some(e)) => Err(e),
    }
}

const POWER_LETTERS: &[u8] = b"\0KMGTPEZYRQ";

/// gnulib `human_readable(n, buf, opts, 1, scale.block_bytes)` with ceiling rounding.
pub fn format_size(n: u64, scale: Scale) -> String {
    let st = scale.style;
    let base: u64 = if st.base_1024 { 1024 } else { 1000 };
    let to = scale.block_bytes.max(1);
    let exponent_max = POWER_LETTERS.len() as i32 - 1;
    let mut amt = n / to;
    let r10 = (n % to) as u128 * 10;
    let r2 = (r10 % to as u128) * 2;
    let mut tenths = (r10 / to as u128) as u64;
    let mut rounding: u64 = if r2 < to as u128 { u64::from(r2 > 0) } else { 2 + u64::from((to as u128) < r2) };
    let mut exponent: i32 = -1;
    let mut fraction = String::new();
    if st.autoscale {
        exponent = 0;
        if base <= amt {
            loop {
                let r10 = (amt % base) * 10 + tenths;
                let r2 = (r10 % base) * 2 + (rounding >> 1);
                amt /= base;
                tenths = r10 / base;
                rounding = if r2 < base { u64::from(r2 + rounding != 0) } else { 2 + u64::from(base < r2 + rounding) };
                exponent += 1;
                if !(base <= amt && exponent < exponent_max) {
                    break;
                }
            }
            if amt < 10 {
                if rounding > 0 {
                    tenths += 1;
                    rounding = 0;
                    if tenths == 10 {
                        amt += 1;
                        tenths = 0;
                    }
                }
                if amt < 10 {
                    fraction = format!(".{tenths}");
                    tenths = 0;
                    rounding = 0;
                }
            }
        }
    }
    if tenths + rounding > 0 {
        amt += 1;
        if st.autoscale && amt == base && exponent < exponent_max {
            exponent += 1;
            fraction = ".0".to_string();
            amt = 1;
        }
    }
    let mut out = amt.to_string();
    out.push_str(&fraction);
    if st.si {
        if exponent < 0 {
            exponent = 0;
            let mut power: u128 = 1;
            while power < to as u128 {
                power *= base as u128;
                exponent += 1;
                if exponent == exponent_max {
                    break;
                }
            }
        }
        if exponent > 0 {
            out.push(if !st.base_1024 && exponent == 1 { 'k' } else { POWER_LETTERS[exponent as usize] as char });
        }
        if st.b_suffix {
            if st.base_1024 && exponent > 0 {
                out.push('i');
            }
            out.push('B');
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(s: &str) -> Result<Scale, NumError> {
        parse_block_spec(Some(s.as_bytes()), &|_| None)
    }

    #[test]
    fn block_specs_parse_like_gnu() {
        assert_eq!(spec("1K").unwrap(), Scale::plain(1024));
        assert_eq!(spec("1kB").unwrap().block_bytes, 1000);
        assert_eq!(spec("010").unwrap().block_bytes, 8, "base 0: leading zero is octal");
        assert_eq!(spec("0x10").unwrap().block_bytes, 16);
        let k = spec("K").unwrap();
        assert!(k.style.si && k.style.base_1024 && !k.style.b_suffix);
        let kb = spec("KB").unwrap();
        assert!(kb.style.si && !kb.style.base_1024 && kb.style.b_suffix);
        assert_eq!(kb.block_bytes, 1000);
        let kib = spec("KiB").unwrap();
        assert!(kib.style.base_1024 && kib.style.b_suffix);
        assert_eq!(spec("0"), Err(NumError::Invalid));
        assert_eq!(spec("x"), Err(NumError::Invalid));
        assert_eq!(spec("1x"), Err(NumError::InvalidSuffix));
        assert_eq!(spec("99999999999999999999"), Err(NumError::Overflow));
        assert_eq!(spec("1Y"), Err(NumError::Overflow));
        assert!(spec("human").unwrap().style.autoscale);
    }

    #[test]
    fn leading_blank_or_sign_means_no_unit_suffix() {
        assert!(!spec(" 1K").unwrap().style.si);
        assert!(!spec("+1K").unwrap().style.si);
    }

    #[test]
    fn variables_keep_the_value_before_a_bad_suffix() {
        assert_eq!(block_spec(Some(b"1Kx"), &|_| None).0.block_bytes, 1024);
        assert_eq!(block_spec(Some(b"1e"), &|_| None).0.block_bytes, 1);
        assert_eq!(block_spec(Some(b"x"), &|_| None).0.block_bytes, 1024);
    }

    #[test]
    fn default_block_size_follows_env() {
        let posix = parse_block_spec(None, &|k| (k == "POSIXLY_CORRECT").then(Vec::new)).unwrap();
        assert_eq!(posix.block_bytes, 512);
        let env = parse_block_spec(None, &|k| (k == "BLOCKSIZE").then(|| b"4k".to_vec())).unwrap();
        assert_eq!(env.block_bytes, 4096);
    }

    #[test]
    fn human_sizes_round_up() {
        let h = Scale::human(true);
        let cases = [
            (0, "0"),
            (1, "1"),
            (1023, "1023"),
            (1024, "1.0K"),
            (1025, "1.1K"),
            (10 * 1024, "10K"),
            (10 * 1024 + 1, "11K"),
            (1024 * 1024 - 1, "1.0M"),
            (4096, "4.0K"),
            (1_073_741_824, "1.0G"),
        ];
        for (n, want) in cases {
            assert_eq!(format_size(n, h), want, "{n}");
        }
        assert_eq!(format_size(1000, Scale::human(false)), "1.0k");
        assert_eq!(format_size(999_999, Scale::human(false)), "1.0M");
    }

    #[test]
    fn block_sizes_round_up_with_units() {
        assert_eq!(format_size(1, Scale::plain(1024)), "1");
        assert_eq!(format_size(4096, Scale::plain(1024)), "4");
        assert_eq!(format_size(4097, Scale::plain(1024)), "5");
        assert_eq!(format_size(0, Scale::plain(1024)), "0");
        assert_eq!(format_size(4096, spec("M").unwrap()), "1M");
        assert_eq!(format_size(4096, spec("KB").unwrap()), "5kB");
        assert_eq!(format_size(4096, spec("KiB").unwrap()), "4KiB");
    }

    #[test]
    fn thresholds_take_suffixes() {
        assert_eq!(parse_with_suffix(b"10k", THRESHOLD_SUFFIXES), Ok(10240));
        assert_eq!(parse_with_suffix(b"1MB", THRESHOLD_SUFFIXES), Ok(1_000_000));
        assert_eq!(parse_with_suffix(b"1g", THRESHOLD_SUFFIXES), Err(NumError::InvalidSuffix));
        assert_eq!(parse_with_suffix(b"1e", BLOCK_SUFFIXES), Err(NumError::InvalidSuffix), "no case for 'e'");
        assert_eq!(parse_with_suffix(b"1E", BLOCK_SUFFIXES), Ok(1 << 60));
    }
}
