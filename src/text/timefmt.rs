//! Time stamps for `--time`: the styles `full-iso`, `long-iso`, `iso` and `+FORMAT`
//! (a `date`-style format with GNU's `%N` for nanoseconds), in the local time zone.

use crate::meta::{LocalTime, Timespec};
use std::iter::Peekable;
use std::str::Chars;

/// The format string for a style.
#[cfg(test)]
fn style_format(style: &str) -> Option<String> {
    if let Some(fmt) = style.strip_prefix('+') {
        return Some(fmt.to_string());
    }
    match style {
        "full-iso" => Some("%Y-%m-%d %H:%M:%S.%N %z".to_string()),
        "long-iso" => Some("%Y-%m-%d %H:%M".to_string()),
        "iso" => Some("%Y-%m-%d".to_string()),
        _ => None,
    }
}

const DAYS: [&str; 7] = ["Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday"];
const MONTHS: [&str; 12] = [
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
];

/// Formats `t` (already broken down as `lt`) with a strftime-like `fmt`. Bytes, because a
/// zone's name (`%Z`) is whatever bytes its zone file holds, printed as they are.
pub fn format(fmt: &str, t: Timespec, lt: &LocalTime) -> Vec<u8> {
    let mut out = Vec::new();
    let mut chars = fmt.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '%' {
            out.extend_from_slice(c.encode_utf8(&mut [0; 4]).as_bytes());
            continue;
        }
        let conv = Conv::read(&mut chars);
        let Some(spec) = chars.next() else {
            out.push(b'%');
            break;
        };
        let piece = piece(spec, &conv, t, lt);
        let bytes = if spec == 'Z' { &lt.zone[..] } else { piece.as_bytes() };
        // `^` upper-cases as C's toupper does in the C locale: ASCII letters only.
        if conv.upper {
            out.extend(bytes.iter().map(u8::to_ascii_uppercase));
        } else {
            out.extend_from_slice(bytes);
        }
    }
    out
}

/// What comes between a `%` and its conversion: GNU's flags `-` (no pad), `_` (space
/// pad), `0` and `^` (upper case; `#` is read and ignored), and a width.
struct Conv {
    pad: Option<char>,
    upper: bool,
    width: Option<usize>,
}

impl Conv {
    /// Reads the flags, the width and an `E` or `O` modifier after a `%`.
    fn read(chars: &mut Peekable<Chars>) -> Conv {
        let mut conv = Conv { pad: None, upper: false, width: None };
        while let Some(&f) = chars.peek() {
            match f {
                '-' => conv.pad = Some('\0'),
                '_' => conv.pad = Some(' '),
                '0' => conv.pad = Some('0'),
                '^' => conv.upper = true,
                '#' => {}
                _ => break,
            }
            chars.next();
        }
        let mut width = String::new();
        while let Some(&d) = chars.peek() {
            if d.is_ascii_digit() {
                width.push(d);
                chars.next();
            } else {
                break;
            }
        }
        conv.width = width.parse().ok();
        // E and O modifiers select alternative forms; the C locale has none.
        if let Some('E' | 'O') = chars.peek() {
            chars.next();
        }
        conv
    }

    /// The number `v`, `w` wide and padded with `fill` unless the flags and width say
    /// otherwise (`\0` for no padding).
    fn num(&self, v: i64, w: usize, fill: char) -> String {
        let fill = self.pad.unwrap_or(fill);
        let w = self.width.unwrap_or(w);
        if fill == '\0' {
            v.to_string()
        } else if fill == ' ' {
            format!("{v:>w$}")
        } else if v < 0 {
            format!("-{:0>w$}", -v, w = w.saturating_sub(1))
        } else {
            format!("{v:0>w$}")
        }
    }
}

/// The text of one conversion `spec` (`%Z`'s is empty: its bytes are the zone's, which
/// `format` adds as they are). One flat match, as strftime's table of conversions reads.
fn piece(spec: char, c: &Conv, t: Timespec, lt: &LocalTime) -> String {
    let num = |v: i64, w: usize, fill: char| c.num(v, w, fill);
    let hour12 = if lt.hour % 12 == 0 { 12 } else { lt.hour % 12 };
    match spec {
        'Y' => num(lt.year, 1, '0'),
        'C' => num(lt.year.div_euclid(100), 2, '0'),
        'y' => num(lt.year.rem_euclid(100), 2, '0'),
        'm' => num(lt.month as i64, 2, '0'),
        'd' => num(lt.day as i64, 2, '0'),
        'e' => num(lt.day as i64, 2, ' '),
        'H' => num(lt.hour as i64, 2, '0'),
        'k' => num(lt.hour as i64, 2, ' '),
        'I' => num(hour12 as i64, 2, '0'),
        'l' => num(hour12 as i64, 2, ' '),
        'M' => num(lt.minute as i64, 2, '0'),
        'S' => num(lt.second as i64, 2, '0'),
        'j' => num(lt.yearday as i64 + 1, 3, '0'),
        'u' => num(if lt.weekday == 0 { 7 } else { lt.weekday as i64 }, 1, '0'),
        'w' => num(lt.weekday as i64, 1, '0'),
        's' => t.sec.to_string(),
        'N' => {
            let digits = format!("{:09}", t.nsec);
            match c.width {
                Some(w) if w < 9 => digits[..w].to_string(),
                _ => digits,
            }
        }
        'z' => {
            let off = lt.gmtoff;
            // As gnulib: a zero offset under a name starting with `-` (tzdata's `-00`,
            // "local time unknown") is `-0000`.
            let sign = if off < 0 || (off == 0 && lt.zone.starts_with(b"-")) { '-' } else { '+' };
            let a = off.abs();
            format!("{sign}{:02}{:02}", a / 3600, a / 60 % 60)
        }
        // The name's bytes are added below.
        'Z' => String::new(),
        'a' => DAYS[lt.weekday as usize % 7][..3].to_string(),
        'A' => DAYS[lt.weekday as usize % 7].to_string(),
        'b' | 'h' => MONTHS[(lt.month as usize + 11) % 12][..3].to_string(),
        'B' => MONTHS[(lt.month as usize + 11) % 12].to_string(),
        'p' => (if lt.hour < 12 { "AM" } else { "PM" }).to_string(),
        'P' => (if lt.hour < 12 { "am" } else { "pm" }).to_string(),
        'F' => format!("{}-{:02}-{:02}", num(lt.year, 4, '0'), lt.month, lt.day),
        'T' => format!("{:02}:{:02}:{:02}", lt.hour, lt.minute, lt.second),
        'R' => format!("{:02}:{:02}", lt.hour, lt.minute),
        'D' => format!("{:02}/{:02}/{:02}", lt.month, lt.day, lt.year.rem_euclid(100)),
        'U' => num((lt.yearday as i64 + 7 - lt.weekday as i64) / 7, 2, '0'),
        'W' => num((lt.yearday as i64 + 7 - (lt.weekday as i64 + 6) % 7) / 7, 2, '0'),
        'V' => num(iso_week(lt).1, 2, '0'),
        'G' => num(iso_week(lt).0, 1, '0'),
        'g' => num(iso_week(lt).0.rem_euclid(100), 2, '0'),
        'q' => num((lt.month as i64 - 1) / 3 + 1, 1, '0'),
        'c' => String::from_utf8_lossy(&format("%a %b %e %H:%M:%S %Y", t, lt)).into_owned(),
        'x' => String::from_utf8_lossy(&format("%m/%d/%y", t, lt)).into_owned(),
        'X' => String::from_utf8_lossy(&format("%H:%M:%S", t, lt)).into_owned(),
        'r' => String::from_utf8_lossy(&format("%I:%M:%S %p", t, lt)).into_owned(),
        'n' => "\n".to_string(),
        't' => "\t".to_string(),
        '%' => "%".to_string(),
        other => format!("%{other}"),
    }
}

/// Whether `fmt` has a `%s`: gnulib's `%s` calls `mktime`, which runs `tzset` again
/// (after which glibc may answer differently for some zones: `text::tz`).
pub fn runs_mktime(fmt: &str) -> bool {
    let mut chars = fmt.chars();
    while let Some(c) = chars.next() {
        if c != '%' {
            continue;
        }
        let spec = chars.by_ref().find(|c| !matches!(c, '-' | '_' | '0'..='9' | '^' | '#' | 'E' | 'O'));
        if spec == Some('s') {
            return true;
        }
    }
    false
}

/// (ISO 8601 week-based year, week number) of a date.
fn iso_week(lt: &LocalTime) -> (i64, i64) {
    // A year has 53 ISO weeks when it ends on a Thursday, or a Friday after a leap day
    // (the usual p(y) formula: p(y) is the weekday of December 31, 0 = Sunday).
    let p = |y: i64| (y + y.div_euclid(4) - y.div_euclid(100) + y.div_euclid(400)).rem_euclid(7);
    let weeks_in = |y: i64| if p(y) == 4 || p(y - 1) == 3 { 53 } else { 52 };
    let iso_wday = (lt.weekday as i64 + 6) % 7 + 1;
    let week = (lt.yearday as i64 + 1 - iso_wday + 10) / 7;
    if week < 1 {
        (lt.year - 1, weeks_in(lt.year - 1))
    } else if week > weeks_in(lt.year) {
        (lt.year + 1, 1)
    } else {
        (lt.year, week)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn utc(sec: i64) -> LocalTime {
        crate::platform::fallback::local_time(sec).unwrap()
    }

    fn format(fmt: &str, t: Timespec, lt: &LocalTime) -> String {
        String::from_utf8(super::format(fmt, t, lt)).unwrap()
    }

    #[test]
    fn iso_styles() {
        let t = Timespec { sec: 1_700_000_000, nsec: 123_456_789 };
        let lt = utc(t.sec);
        assert_eq!(format(&style_format("full-iso").unwrap(), t, &lt), "2023-11-14 22:13:20.123456789 +0000");
        assert_eq!(format(&style_format("long-iso").unwrap(), t, &lt), "2023-11-14 22:13");
        assert_eq!(format(&style_format("iso").unwrap(), t, &lt), "2023-11-14");
        assert_eq!(format("%s %j %a %b %3N %%", t, &lt), "1700000000 318 Tue Nov 123 %");
        assert_eq!(format("%c|%U|%W|%V|%G|%q", t, &lt), "Tue Nov 14 22:13:20 2023|46|46|46|2023|4");
        // 2021-01-01 was a Friday in ISO week 53 of 2020.
        let t = Timespec { sec: 1_609_459_200, nsec: 0 };
        assert_eq!(format("%G-W%V %g", t, &utc(t.sec)), "2020-W53 20");
        // 2024-12-30 (Monday) is in ISO week 1 of 2025.
        let t = Timespec { sec: 1_735_516_800, nsec: 0 };
        assert_eq!(format("%G-W%V", t, &utc(t.sec)), "2025-W01");
    }

    #[test]
    fn which_styles_run_mktime() {
        for fmt in ["%s", "%F %s", "%-10s", "%_Es", "%Os|"] {
            assert!(runs_mktime(fmt), "{fmt}");
        }
        for fmt in ["", "%%s", "%F %T %z %Z", "s", "%", "%Y-%m-%d %H:%M:%S.%N %z"] {
            assert!(!runs_mktime(fmt), "{fmt}");
        }
    }
}
