//! POSIX `TZ` strings (`EST5EDT,M3.2.0,M11.1.0`, `<+0330>-3:30`, `JST-9`) read and applied
//! the way glibc 2.36 does, quirks included, because GNU du prints what glibc computes:
//!
//! * A name is three or more ASCII letters, or `<...>` holding three or more letters,
//!   digits, `+` or `-`. A standard name without an offset (`Foo/Bar`) gives that name at
//!   UTC; no name at all (`No/Such_Zone`) gives an empty name at UTC.
//! * Numbers are read as C's `sscanf("%hu")` reads them: blanks skipped, a sign taken,
//!   the value cut to 16 bits; offsets are then clamped to 24:59:59.
//! * Without a daylight offset, daylight time is one hour ahead. A daylight name with no
//!   rule means the US rules (`M3.2.0,M11.1.0`) unless the caller finds `posixrules`
//!   (`Parsed::ruleless`). A daylight part whose name cannot be read still takes its
//!   rules, with an empty name and offset 0 for daylight time.
//! * A rule that does not parse keeps what was read of it, and what is left unread of the
//!   string is ignored.
//! * The switch dates of a year are computed from the UTC year of the instant, and any year
//!   up to 1970 uses 1970's first of January as its base (glibc's `compute_change`).

/// How a rule names its day: `Jn` (1-365, no leap day), `n` (0-365) or `Mm.w.d`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
enum DayForm {
    /// `n`: zero-based day of the year, leap days counted.
    #[default]
    ZeroBased,
    /// `Jn`: day 1-365, February 29 never counted.
    Julian,
    /// `Mm.w.d`: day `d` (0 = Sunday) of week `w` (5 = last) of month `m`.
    MonthWeekDay,
}

/// One half of a zone: standard time (`[0]`) or daylight time (`[1]`), and the rule for
/// the switch *into* it. All zero (day 0 of the year at 00:00, UTC) until parsed, as glibc
/// clears it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
struct Half {
    name: Vec<u8>,
    /// Seconds east of UTC.
    offset_secs: i32,
    form: DayForm,
    month: u16,
    week: u16,
    day: u16,
    /// Local time of day of the switch, in seconds (may be negative or past 24 hours).
    at_secs: i32,
}

/// A parsed `TZ` string: standard and daylight halves.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Rules {
    halves: [Half; 2],
}

/// What `Rules::parse` found.
pub struct Parsed {
    pub rules: Rules,
    /// Names and offsets but no rule (`EST5EDT`, `AAA3BBB,`): glibc first tries the rules
    /// of the `posixrules` zone file with these names and offsets, and falls back to
    /// `rules` (which then hold the US rules) when that file is missing.
    pub ruleless: bool,
}

/// What a zone says about one instant.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Offset<'a> {
    /// Seconds east of UTC.
    pub offset_secs: i32,
    pub is_dst: bool,
    pub name: &'a [u8],
}

impl Rules {
    /// Reads `spec` as glibc's `__tzset_parse_tz` does. Never fails: what cannot be read
    /// leaves the defaults (UTC, empty names), as in glibc.
    pub fn parse(spec: &[u8]) -> Parsed {
        let mut rules = Rules::default();
        let mut ruleless = false;
        let mut pos = 0;
        let std_ok = parse_name(spec, &mut pos).map(|name| rules.halves[0].name = name).is_some()
            && rules.parse_offset(spec, &mut pos, 0);
        if !std_ok {
            return Parsed { rules, ruleless };
        }
        if pos == spec.len() {
            // No daylight time: both halves are standard time.
            rules.halves[1].name = rules.halves[0].name.clone();
            rules.halves[1].offset_secs = rules.halves[0].offset_secs;
            return Parsed { rules, ruleless };
        }
        if let Some(name) = parse_name(spec, &mut pos) {
            rules.halves[1].name = name;
            rules.parse_offset(spec, &mut pos, 1);
            let rest = &spec[pos..];
            ruleless = rest.is_empty() || rest == b",";
        }
        if rules.parse_rule(spec, &mut pos, 0) {
            rules.parse_rule(spec, &mut pos, 1);
        }
        Parsed { rules, ruleless }
    }

    /// UTC under the name `UTC`: what glibc uses when `TZ` is unset or `:` and there is no
    /// `/etc/localtime`.
    pub fn utc() -> Rules {
        let utc = Half { name: b"UTC".to_vec(), ..Half::default() };
        Rules { halves: [utc.clone(), utc] }
    }

    /// The names and offsets of standard and daylight time, for a `posixrules` zone.
    pub fn names_and_offsets(&self) -> [(&[u8], i32); 2] {
        [0, 1].map(|i| (self.halves[i].name.as_slice(), self.halves[i].offset_secs))
    }

    /// glibc's `parse_offset`: `[+-]hh[:mm[:ss]]`, west positive. Standard time needs one;
    /// daylight time without one is an hour ahead of standard time.
    fn parse_offset(&mut self, s: &[u8], pos: &mut usize, half: usize) -> bool {
        let first = s.get(*pos).copied();
        if half == 0 && !matches!(first, Some(b'+' | b'-' | b'0'..=b'9')) {
            return false;
        }
        // The sign is inverted: POSIX counts hours west of UTC.
        let mut sign = -1;
        if let Some(c @ (b'+' | b'-')) = first {
            sign = if c == b'-' { 1 } else { -1 };
            *pos += 1;
        }
        match scan_clock(s, *pos) {
            Some(([hh, mm, ss], end)) => {
                let secs = u32::from(ss.min(59)) + u32::from(mm.min(59)) * 60 + u32::from(hh.min(24)) * 3600;
                self.halves[half].offset_secs = sign * secs as i32;
                *pos = end;
                true
            }
            None if half == 0 => false,
            None => {
                self.halves[1].offset_secs = self.halves[0].offset_secs + 3600;
                true
            }
        }
    }

    /// glibc's `parse_rule`: `[,]date[/time]` for the switch into `half`. On failure the
    /// fields read so far stay set (glibc keeps them too).
    fn parse_rule(&mut self, s: &[u8], pos: &mut usize, half: usize) -> bool {
        let at = |i: usize| s.get(i).copied().unwrap_or(0);
        let mut p = *pos + usize::from(at(*pos) == b',');
        let h = &mut self.halves[half];
        match at(p) {
            b'J' | b'0'..=b'9' => {
                h.form = if at(p) == b'J' { DayForm::Julian } else { DayForm::ZeroBased };
                if h.form == DayForm::Julian {
                    p += 1;
                    if !at(p).is_ascii_digit() {
                        return false;
                    }
                }
                let digits = s[p..].iter().take_while(|c| c.is_ascii_digit()).count();
                let day =
                    s[p..p + digits].iter().try_fold(0u32, |n, &c| n.checked_mul(10)?.checked_add(u32::from(c - b'0')));
                match day {
                    Some(d) if d <= 365 && !(h.form == DayForm::Julian && d == 0) => h.day = d as u16,
                    _ => return false,
                }
                p += digits;
            }
            b'M' => {
                h.form = DayForm::MonthWeekDay;
                let (n_read, end) = scan_month_week_day(s, p + 1, h);
                if n_read != 3 || !(1..=12).contains(&h.month) || !(1..=5).contains(&h.week) || h.day > 6 {
                    return false;
                }
                p = end;
            }
            0 if p >= s.len() => {
                // The US rules since 2007, as glibc's default.
                h.form = DayForm::MonthWeekDay;
                (h.month, h.week, h.day) = if half == 0 { (3, 2, 0) } else { (11, 1, 0) };
            }
            _ => return false,
        }
        match at(p) {
            b'/' => {
                p += 1;
                if p >= s.len() {
                    return false;
                }
                let negative = at(p) == b'-';
                p += usize::from(negative);
                // A time that does not scan is 02:00 and consumes nothing.
                let ([hh, mm, ss], end) = scan_clock(s, p).unwrap_or(([2, 0, 0], p));
                let secs = i32::from(hh) * 3600 + i32::from(mm) * 60 + i32::from(ss);
                h.at_secs = if negative { -secs } else { secs };
                p = end;
            }
            b',' => h.at_secs = 7200,
            _ if p >= s.len() => h.at_secs = 7200,
            _ => return false,
        }
        *pos = p;
        true
    }

    /// Standard or daylight time at `sec` (seconds since the epoch); `None` when the
    /// instant's UTC year does not fit C's `tm_year`.
    pub fn offset_at(&self, sec: i64) -> Option<Offset<'_>> {
        let year = super::civil(sec, 0)?.year;
        // glibc computes the year as an `int` (1900 + tm_year).
        let year = year as i32;
        let start = self.switch_at(0, year);
        let end = self.switch_at(1, year);
        // Southern zones switch into daylight time late in the year and out of it early.
        let is_dst = if start > end { sec < end || sec >= start } else { sec >= start && sec < end };
        let half = &self.halves[usize::from(is_dst)];
        Some(Offset { offset_secs: half.offset_secs, is_dst, name: &half.name })
    }

    /// When, in `year`, the switch into `half` happens (glibc's `compute_change`, with its
    /// `int` arithmetic).
    fn switch_at(&self, half: usize, year: i32) -> i64 {
        const DAY: i64 = 86_400;
        let h = &self.halves[half];
        let leap = year % 4 == 0 && (year % 100 != 0 || year % 400 == 0);
        let jan1_days = if year > 1970 {
            let leap_days =
                (year - 1) / 4 - 1970 / 4 - ((year - 1) / 100 - 1970 / 100) + ((year - 1) / 400 - 1970 / 400);
            (year - 1970).wrapping_mul(365).wrapping_add(leap_days)
        } else {
            0
        };
        let mut t = i64::from(jan1_days) * DAY;
        match h.form {
            DayForm::Julian => {
                t += (i64::from(h.day) - 1) * DAY;
                if h.day >= 60 && leap {
                    t += DAY;
                }
            }
            DayForm::ZeroBased => t += i64::from(h.day) * DAY,
            DayForm::MonthWeekDay => {
                let m = i32::from(h.month);
                let in_month = mon_yday(leap, m) - mon_yday(leap, m - 1);
                t += i64::from(mon_yday(leap, m - 1)) * DAY;
                // Zeller's congruence: the weekday of the month's first day (0 = Sunday).
                let m1 = (i32::from(h.month) + 9) % 12 + 1;
                let yy0 = if h.month <= 2 { year - 1 } else { year };
                let (yy1, yy2) = (yy0 / 100, yy0 % 100);
                let mut dow = ((26 * m1 - 2) / 10 + 1 + yy2 + yy2 / 4 + yy1 / 4 - 2 * yy1) % 7;
                if dow < 0 {
                    dow += 7;
                }
                let mut d = i32::from(h.day) - dow;
                if d < 0 {
                    d += 7;
                }
                for _ in 1..h.week {
                    if d + 7 >= in_month {
                        break;
                    }
                    d += 7;
                }
                t += i64::from(d) * DAY;
            }
        }
        t - i64::from(h.offset_secs) + i64::from(h.at_secs)
    }
}

/// Days in the first `k` months of a year (glibc's `__mon_yday[leap][k]`, 0 to 12). A
/// month outside 1-12, left by a rule that failed to parse, makes glibc read past its row:
/// into the other row where there is one (`k` = -1 in a leap year gives 365), else memory
/// that is not the table, counted here as 0.
fn mon_yday(leap: bool, k: i32) -> i32 {
    const ROWS: [i32; 26] = [
        0, 31, 59, 90, 120, 151, 181, 212, 243, 273, 304, 334, 365, //
        0, 31, 60, 91, 121, 152, 182, 213, 244, 274, 305, 335, 366,
    ];
    let flat = k + if leap { 13 } else { 0 };
    usize::try_from(flat).ok().and_then(|i| ROWS.get(i)).copied().unwrap_or(0)
}

/// glibc's `parse_tzname`: the name at `*pos`, advancing past it (and its `<>`).
fn parse_name(s: &[u8], pos: &mut usize) -> Option<Vec<u8>> {
    let rest = &s[*pos..];
    let letters = rest.iter().take_while(|c| c.is_ascii_alphabetic()).count();
    if letters >= 3 {
        *pos += letters;
        return Some(rest[..letters].to_vec());
    }
    let quoted = rest.strip_prefix(b"<")?;
    let len = quoted.iter().take_while(|&&c| c.is_ascii_alphanumeric() || c == b'+' || c == b'-').count();
    if quoted.get(len) != Some(&b'>') || len < 3 {
        return None;
    }
    *pos += len + 2;
    Some(quoted[..len].to_vec())
}

/// C's `sscanf(s, "%hu%n:%hu%n:%hu%n")`: up to three numbers joined by `:`, missing ones
/// 0; `None` when not even the first scans. The end is after the last number read.
fn scan_clock(s: &[u8], pos: usize) -> Option<([u16; 3], usize)> {
    let mut out = [0u16; 3];
    let (first, mut end) = scan_hu(s, pos)?;
    out[0] = first;
    for slot in &mut out[1..] {
        let Some((n, e)) = s.get(end).filter(|&&c| c == b':').and_then(|_| scan_hu(s, end + 1)) else { break };
        *slot = n;
        end = e;
    }
    Some((out, end))
}

/// C's `sscanf(s, "M%hu.%hu.%hu%n")` after the `M`: stores each number as it scans (as
/// sscanf does) and returns how many scanned and where the third ended.
fn scan_month_week_day(s: &[u8], pos: usize, h: &mut Half) -> (usize, usize) {
    let mut at = pos;
    for (i, field) in [&mut h.month, &mut h.week, &mut h.day].into_iter().enumerate() {
        if i > 0 {
            if s.get(at) != Some(&b'.') {
                return (i, at);
            }
            at += 1;
        }
        let Some((n, end)) = scan_hu(s, at) else { return (i, at) };
        *field = n;
        at = end;
    }
    (3, at)
}

/// One C `%hu` conversion: blanks skipped, an optional sign, one or more digits, the value
/// as `strtoul` gives it (saturated, a minus negated modulo 2^64) cut to 16 bits.
fn scan_hu(s: &[u8], pos: usize) -> Option<(u16, usize)> {
    let mut at = pos;
    while s.get(at).is_some_and(|&c| matches!(c, b' ' | b'\t' | b'\n' | 0x0b | 0x0c | b'\r')) {
        at += 1;
    }
    let negative = s.get(at) == Some(&b'-');
    if matches!(s.get(at), Some(b'+' | b'-')) {
        at += 1;
    }
    let digits = s[at.min(s.len())..].iter().take_while(|c| c.is_ascii_digit()).count();
    if digits == 0 {
        return None;
    }
    let value = s[at..at + digits]
        .iter()
        .try_fold(0u64, |n, &c| n.checked_mul(10)?.checked_add(u64::from(c - b'0')))
        .map_or(u64::MAX, |n| if negative { n.wrapping_neg() } else { n });
    Some((value as u16, at + digits))
}
