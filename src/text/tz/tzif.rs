//! Zone files (TZif versions 1 to 4, RFC 8536) read and applied as glibc 2.36's
//! `tzfile.c` does: the checks that make it refuse a file, which local time type an
//! instant gets (before the first transition: the first standard type; after the last:
//! the footer's POSIX rules, when there is a footer), and leap seconds (`right/` zones).
//!
//! A file of version 2 or later is read from its 64-bit second part; the footer is what
//! lies between the newline after the data and the file's last byte (glibc checks neither
//! the closing newline nor what the string holds).

use super::posix::{Offset, Rules};

/// One local time type.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Type {
    /// Seconds east of UTC.
    offset_secs: i32,
    is_dst: bool,
    /// Where its name starts in `Zone::names`.
    name_idx: usize,
    /// Its transitions are given in standard time / in UTC (only `posixrules` uses these).
    is_std: bool,
    is_ut: bool,
}

/// A zone file, as glibc keeps it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TzFile {
    /// Seconds since the epoch, ascending in any file zic wrote.
    transitions: Vec<i64>,
    /// The type each transition switches to.
    type_idxs: Vec<u8>,
    types: Vec<Type>,
    /// The NUL-separated type names.
    names: Vec<u8>,
    /// (time, total correction in seconds) of each leap second.
    leaps: Vec<(i64, i64)>,
    /// The footer's rules, for instants at or after the last transition.
    footer: Option<Rules>,
    /// glibc's `rule_stdoff` and `rule_dstoff` (`last_offsets`), which `with_names`
    /// shifts transitions by.
    rule_offsets: [i32; 2],
}

/// What a zone file says about one instant, before the local date is worked out.
pub struct FileOffset<'a> {
    pub offset: Offset<'a>,
    /// Seconds the leap seconds so far take off UTC.
    pub leap_correction_secs: i64,
    /// 1 (or more, for consecutive ones) at the instant of a positive leap second, which
    /// then shows as second 60.
    pub leap_hit_secs: u32,
}

/// A cursor over the file's bytes; every read fails past the end.
struct Bytes<'a> {
    data: &'a [u8],
    at: usize,
}

impl<'a> Bytes<'a> {
    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        let end = self.at.checked_add(n)?;
        let out = self.data.get(self.at..end)?;
        self.at = end;
        Some(out)
    }

    fn i32(&mut self) -> Option<i32> {
        Some(i32::from_be_bytes(self.take(4)?.try_into().ok()?))
    }

    fn time(&mut self, width: usize) -> Option<i64> {
        let b = self.take(width)?;
        Some(if width == 8 {
            i64::from_be_bytes(b.try_into().ok()?)
        } else {
            i64::from(i32::from_be_bytes(b.try_into().ok()?))
        })
    }

    fn byte(&mut self) -> Option<u8> {
        Some(self.take(1)?[0])
    }
}

/// The six counts of a header, as glibc reads them (a negative count becomes huge).
struct Counts {
    is_ut: usize,
    is_std: usize,
    leaps: usize,
    transitions: usize,
    types: usize,
    chars: usize,
}

/// Reads a header; `None` without the magic, or when a flag count exceeds the types.
fn header(b: &mut Bytes) -> Option<(u8, Counts)> {
    let head = b.take(20)?;
    if &head[..4] != b"TZif" {
        return None;
    }
    let mut count = || b.i32().map(|n| n as u32 as usize);
    let c = Counts {
        is_ut: count()?,
        is_std: count()?,
        leaps: count()?,
        transitions: count()?,
        types: count()?,
        chars: count()?,
    };
    (c.is_std <= c.types && c.is_ut <= c.types).then_some((head[4], c))
}

impl TzFile {
    /// Parses a zone file of `size_bytes` (its `st_size`; the footer's length comes from
    /// it). `None` where glibc refuses the file, or for one with no types, which glibc
    /// cannot use either.
    pub fn parse(data: &[u8], size_bytes: u64) -> Option<TzFile> {
        let mut b = Bytes { data, at: 0 };
        let (version, mut c) = header(&mut b)?;
        let mut width = 4;
        if version != 0 {
            // Skip the 32-bit part; the 64-bit one follows with its own header.
            let skip = [
                c.transitions.checked_mul(5)?,
                c.types.checked_mul(6)?,
                c.chars,
                c.leaps.checked_mul(8)?,
                c.is_std,
                c.is_ut,
            ]
            .iter()
            .try_fold(0usize, |sum, &n| sum.checked_add(n))?;
            b.at = b.at.checked_add(skip)?;
            c = header(&mut b)?.1;
            width = 8;
        }
        let footer_len = if width == 8 { footer_len(&c, size_bytes, b.at)? } else { 0 };
        if c.types == 0 {
            return None;
        }
        let transitions = (0..c.transitions).map(|_| b.time(width)).collect::<Option<Vec<_>>>()?;
        let type_idxs = b.take(c.transitions)?.to_vec();
        if type_idxs.iter().any(|&t| usize::from(t) >= c.types) {
            return None;
        }
        let mut types = Vec::with_capacity(c.types.min(256));
        for _ in 0..c.types {
            let offset_secs = b.i32()?;
            let is_dst = b.byte()?;
            let name_idx = usize::from(b.byte()?);
            if is_dst > 1 || name_idx > c.chars {
                return None;
            }
            types.push(Type { offset_secs, is_dst: is_dst == 1, name_idx, is_std: false, is_ut: false });
        }
        let names = b.take(c.chars)?.to_vec();
        let leaps = (0..c.leaps).map(|_| Some((b.time(width)?, i64::from(b.i32()?)))).collect::<Option<Vec<_>>>()?;
        for t in types.iter_mut().take(c.is_std) {
            t.is_std = b.byte()? != 0;
        }
        for t in types.iter_mut().take(c.is_ut) {
            t.is_ut = b.byte()? != 0;
        }
        // A footer that does not start with a newline or is cut short is dropped, not
        // the file; so is an empty one. It ends at its first NUL, as a C string.
        let footer = (footer_len > 0 && b.byte() == Some(b'\n'))
            .then(|| b.take(footer_len - 1))
            .flatten()
            .map(|s| s.split(|&c| c == 0).next().unwrap_or_default())
            .filter(|s| !s.is_empty())
            .map(|s| Rules::parse(s).rules);
        let rule_offsets = last_offsets(&transitions, &type_idxs, &types);
        Some(TzFile { transitions, type_idxs, types, names, leaps, footer, rule_offsets })
    }

    /// The type's name: from its index to the next NUL.
    fn name(&self, t: &Type) -> &[u8] {
        let from = &self.names[t.name_idx.min(self.names.len())..];
        from.split(|&c| c == 0).next().unwrap_or_default()
    }

    fn offset_of(&self, idx: usize) -> Offset<'_> {
        let t = &self.types[idx];
        Offset { offset_secs: t.offset_secs, is_dst: t.is_dst, name: self.name(t) }
    }

    /// The local time type at `sec`, and the leap-second correction there.
    pub fn offset_at(&self, sec: i64) -> FileOffset<'_> {
        let (leap_correction_secs, leap_hit_secs) = self.leap_at(sec);
        let first_std = || self.types.iter().position(|t| !t.is_dst).unwrap_or(0);
        let offset = match (self.transitions.first(), self.transitions.last()) {
            // Before the first transition, or none: the first standard type (the first
            // type when all are daylight types).
            (Some(&first), _) if sec < first => self.offset_of(first_std()),
            (None, _) => self.offset_of(first_std()),
            // From the last one on: the footer's rules, unless there is no footer or the
            // UTC year is out of range; then the last transition's type.
            (_, Some(&last)) if sec >= last => {
                let from_footer = self.footer.as_ref().and_then(|rules| rules.offset_at(sec));
                from_footer.unwrap_or_else(|| self.offset_of(usize::from(self.type_idxs[self.type_idxs.len() - 1])))
            }
            _ => self.offset_of(usize::from(self.type_idxs[transition_after(&self.transitions, sec) - 1])),
        };
        FileOffset { offset, leap_correction_secs, leap_hit_secs }
    }

    /// glibc's leap-second step: the last correction at or before `sec`, and whether
    /// `sec` is the inserted second itself.
    fn leap_at(&self, sec: i64) -> (i64, u32) {
        let Some(i) = self.leaps.iter().rposition(|&(t, _)| sec >= t) else { return (0, 0) };
        let (t, change) = self.leaps[i];
        let grew = if i == 0 { change > 0 } else { change > self.leaps[i - 1].1 };
        if sec != t || !grew {
            return (change, 0);
        }
        let mut hit = 1;
        let mut j = i;
        while j > 0 && self.leaps[j].0 == self.leaps[j - 1].0 + 1 && self.leaps[j].1 == self.leaps[j - 1].1 + 1 {
            hit += 1;
            j -= 1;
        }
        (change, hit)
    }

    /// The `posixrules` file made over for a `TZ` string without rules (glibc's
    /// `__tzfile_default`): two types with the given names and offsets, the transitions
    /// shifted from the file's offsets to these. On a load `again` in the same process the
    /// file's daylight offset reads as the string's (what the last load left in glibc's
    /// variable). `None` when the file has fewer than two types (glibc then uses the
    /// string's default rules).
    pub fn with_names(mut self, std: (&[u8], i32), dst: (&[u8], i32), again: bool) -> Option<TzFile> {
        if self.types.len() < 2 {
            return None;
        }
        if again {
            self.rule_offsets[1] = dst.1;
        }
        let mut was_dst = false;
        for i in 0..self.transitions.len() {
            let t = self.types[usize::from(self.type_idxs[i])].clone();
            self.type_idxs[i] = u8::from(t.is_dst);
            let shift_secs = if t.is_ut {
                0
            } else if was_dst && !t.is_std {
                dst.1 - self.rule_offsets[1]
            } else {
                std.1 - self.rule_offsets[0]
            };
            self.transitions[i] += i64::from(shift_secs);
            was_dst = t.is_dst;
        }
        self.rule_offsets = [std.1, dst.1];
        self.names = [std.0, b"\0", dst.0, b"\0"].concat();
        self.types.truncate(2);
        self.types[0] = Type { offset_secs: std.1, is_dst: false, name_idx: 0, ..self.types[0].clone() };
        self.types[1] = Type { offset_secs: dst.1, is_dst: true, name_idx: std.0.len() + 1, ..self.types[1].clone() };
        Some(self)
    }
}

/// The index of the first transition after `sec`, found as glibc finds it (a guess from
/// two switches a year, a short linear walk, else a binary search), so that a file whose
/// transitions are out of order gets glibc's answer too; for ordered ones it is the only
/// answer. Needs `transitions[0] <= sec < transitions[last]`.
pub(super) fn transition_after(transitions: &[i64], sec: i64) -> usize {
    const HALF_YEAR_SECS: i64 = 15_778_476;
    let n = transitions.len();
    let (mut lo, mut hi) = (0, n - 1);
    let back = (transitions[n - 1].wrapping_sub(sec) / HALF_YEAR_SECS) as u64;
    if let Some(back) = usize::try_from(back).ok().filter(|&b| b < n) {
        let mut i = n - 1 - back;
        if sec < transitions[i] {
            if i < 10 || sec >= transitions[i - 10] {
                while i > 1 && sec < transitions[i - 1] {
                    i -= 1;
                }
                return i;
            }
            hi = i - 10;
        } else {
            if i + 10 >= n || sec < transitions[i + 10] {
                while i < n - 1 && sec >= transitions[i] {
                    i += 1;
                }
                return i;
            }
            lo = i + 10;
        }
    }
    while lo + 1 < hi {
        let mid = (lo + hi) / 2;
        if sec < transitions[mid] {
            hi = mid;
        } else {
            lo = mid;
        }
    }
    hi.max(1)
}

/// The footer's length as glibc computes it (from the file size, after the 64-bit
/// header); `None` where glibc refuses the file for it.
fn footer_len(c: &Counts, size_bytes: u64, at: usize) -> Option<usize> {
    let rem = usize::try_from(size_bytes.checked_sub(at as u64)?).ok()?;
    let data = c.transitions.checked_mul(9)?.checked_add(c.types.checked_mul(6)?)?.checked_add(c.chars)?;
    let len = rem.checked_sub(data)?.checked_sub(c.leaps.checked_mul(12)?)?.checked_sub(c.is_std)?;
    if len == 0 || len - 1 < c.is_ut {
        return None;
    }
    let len = len - (c.is_ut + 1);
    (len > 0).then_some(len)
}

/// glibc's `rule_stdoff` and `rule_dstoff` after reading a file: the offset of the last
/// transition into standard time (0 when there is none), and 0 for daylight time, which
/// glibc 2.36 no longer sets from the file (its static starts at 0 and a fresh process
/// reads the file once); the only type's offset for both when there are no transitions.
fn last_offsets(transitions: &[i64], type_idxs: &[u8], types: &[Type]) -> [i32; 2] {
    if transitions.is_empty() {
        return [types[0].offset_secs; 2];
    }
    let last_std = type_idxs.iter().rev().map(|&i| &types[usize::from(i)]).find(|t| !t.is_dst);
    [last_std.map_or(0, |t| t.offset_secs), 0]
}
