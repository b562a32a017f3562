//! Time stamps for `--time`: the styles `full-iso`, `long-iso`, `iso` and `+FORMAT`
//! (a `date`-style format with GNU's `%N` for nanoseconds), in the local time zone.

use crate::meta::{LocalTime, Timespec};

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

/// Formats `t` (already broken down as `lt`) with a strftime-like `fmt`.
pub fn format(fmt: &str, t: Timespec, lt: &LocalTime) -> String {
    let mut out = String::new();
    let mut chars = fmt.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '%' {
            out.push(c);
            continue;
        }
        // GNU flags and width: `-` (no pad), `_` (space pad), `0`, `^`, `#`, digits.
        let mut pad: Option<char> = None;
        let mut upper = false;
        while let Some(&f) = chars.peek() {
            match f {
                '-' => pad = Some('\0'),
                '_' => pad = Some(' '),
                '0' => pad = Some('0'),
                '^' => upper = true,
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
        let width: Option<usize> = width.parse().ok();
        let Some(spec) = chars.next() else {
            out.push('%');
            break;
        };
        let num = |v: i64, w: usize, fill: char| -> String {
            let fill = pad.unwrap_or(fill);
            let w = width.unwrap_or(w);
            if fill == '\0' {
                v.to_string()
            } else if fill == ' ' {
                format!("{v:>w$}")
            } else if v < 0 {
                format!("-{:0>w$}", -v, w = w.saturating_sub(1))
            } else {
                format!("{v:0>w$}")
            }
        };
        let hour12 = if lt.hour % 12 == 0 { 12 } else { lt.hour % 12 };
        let piece = match spec {
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
                match width {
                    Some(w) if w < 9 => digits[..w].to_string(),
                    _ => digits,
                }
            }
            'z' => {
                let off = lt.gmtoff;
                let sign = if off < 0 { '-' } else { '+' };
                let a = off.abs();
                format!("{sign}{:02}{:02}", a / 3600, a / 60 % 60)
            }
            'Z' => lt.zone.clone(),
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
            'n' => "\n".to_string(),
            't' => "\t".to_string(),
            '%' => "%".to_string(),
            other => format!("%{other}"),
        };
        if upper {
            out.push_str(&piece.to_uppercase());
        } else {
            out.push_str(&piece);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn utc(sec: i64) -> LocalTime {
        crate::portable::local_time(sec).unwrap()
    }

    #[test]
    fn iso_styles() {
        let t = Timespec { sec: 1_700_000_000, nsec: 123_456_789 };
        let lt = utc(t.sec);
        assert_eq!(format(&style_format("full-iso").unwrap(), t, &lt), "2023-11-14 22:13:20.123456789 +0000");
        assert_eq!(format(&style_format("long-iso").unwrap(), t, &lt), "2023-11-14 22:13");
        assert_eq!(format(&style_format("iso").unwrap(), t, &lt), "2023-11-14");
        assert_eq!(format("%s %j %a %b %3N %%", t, &lt), "1700000000 318 Tue Nov 123 %");
    }
}
