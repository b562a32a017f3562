//! The remainder copy of `dedupe --blocks` on btrfs (issue 27, part 2): btrfs gives an
//! extent back only when no part of it is referenced any more, so sharing the matched
//! part of a destination's extent frees nothing while the rest of the extent still points
//! into it (a "bookend"). The unmatched rest is copied into a fresh extent and the
//! destination's references are moved onto that copy with `FIDEDUPERANGE` as well — the
//! kernel compares those bytes too, so a write that came in between is never lost — and
//! the old extent, referenced by nothing, is freed. XFS counts references per block and
//! needs none of this.
//!
//! # When it pays
//!
//! Per extent of the destination's map (FIEMAP, read before anything of it is shared):
//! let M be its bytes that block mode shares with a source and R the rest (up to the end
//! of the file). The rest is copied when the extent is not shared with anything else
//! (else it stays referenced whatever this file does), not encoded (a compressed extent's
//! figures are not its disk bytes, and splitting one spoils its compression), M > 0 and
//! M ≥ R: the copy then frees at least as many bytes as it writes (bees' rule: its
//! "nuisance dedupe" filter). An extent with R = 0 frees itself. What is copied is
//! reported (`Report::copy`), and a dry run says what would be.
//!
//! # The copy
//!
//! One temporary file per destination, unnamed from the start (`O_TMPFILE|O_EXCL` in the
//! destination's own checked directory, so on its file system and subvolume): nothing of
//! it is ever left, also when the run is killed. The rests of the destination's chosen
//! extents are read from the destination and written to it one after another with plain
//! writes (the unaligned end of the file last, so that it ends the copy too, as
//! `FIDEDUPERANGE` wants), then `fsync`; then each rest of the destination is shared with
//! its copy, the destination checked again (size, mtime, ctime) right before each call,
//! as for any range. This is done before the destination's matched ranges are shared:
//! a repeat inside one file has its source in the rest, and is then shared with the copy.

use super::blocks::{share, Cand, Ended, Tally};
use super::dedupe::Run;
use crate::meta::Extent;
use crate::platform::{self, Layout};
use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom, Write};

/// Bytes read and written at a time while copying.
const COPY_BYTES: u64 = 1 << 20;

/// What a destination's remainder copy is to do: the pieces of the destination to copy
/// (offset, length; in order, the file's unaligned end last), and its figures.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Plan {
    pub pieces: Vec<(u64, u64)>,
    /// Extents whose rest is copied.
    pub extents: u64,
    /// The matched bytes of those extents and of the extents matched whole: what btrfs
    /// gives back once every range is shared.
    pub bytes_freed: u64,
}

impl Plan {
    pub fn bytes(&self) -> u64 {
        self.pieces.iter().map(|p| p.1).sum()
    }
}

/// The plan for a destination of `size` bytes with map `layout` whose ranges `matched`
/// (offset, length; sorted, disjoint) block mode shares; see the top of this file.
pub fn plan(layout: &Layout, matched: &[(u64, u64)], size: u64) -> Plan {
    let mut out = Plan::default();
    let Layout::Extents(map) = layout else { return out };
    for e in map {
        if e.flags & (Extent::SHARED | Extent::ENCODED) != 0 {
            continue;
        }
        let (start, end) = (e.logical, (e.logical + e.length).min(size));
        let mut at = start;
        let mut rest = Vec::new();
        let mut m = 0;
        for &(off, len) in matched.iter().filter(|&&(off, len)| off < end && off + len > start) {
            let (a, b) = (off.max(start), (off + len).min(end));
            if a > at {
                rest.push((at, a - at));
            }
            m += b - a;
            at = b;
        }
        if at < end {
            rest.push((at, end - at));
        }
        let r: u64 = rest.iter().map(|p| p.1).sum();
        if m == 0 || m < r {
            continue;
        }
        out.bytes_freed += m;
        if r > 0 {
            out.extents += 1;
            out.pieces.extend(rest);
        }
    }
    out
}

/// What a copy of one destination ended with.
pub enum Copied {
    /// Done (or nothing to do, or a failure counted): the destination's map is to be read
    /// again.
    Done,
    /// The destination changed since it was read: none of its ranges is submitted.
    Changed,
}

/// Carries out `plan` for destination `dst` (open as `file`): copies, then shares each
/// piece with its copy. `Err` only as `blocks::share` has it (a file system that cannot
/// share extents at the first call).
pub fn copy(run: &mut Run, dst: &Cand, file: &File, plan: &Plan, tally: &mut Tally) -> Result<Copied, String> {
    let rec = run.file(dst.rec);
    if !platform::check_file(file).is_ok_and(|c| super::find::same(&c, &rec)) {
        return Ok(Copied::Changed);
    }
    let temp = match run.handles.parent(&rec) {
        Ok((parent, _)) => platform::temp_file_in(parent.dir()),
        Err(super::open::Refused::Changed) => return Ok(Copied::Changed),
        Err(super::open::Refused::Os(e)) => Err(e),
    };
    let temp = match temp.and_then(|t| write_copy(file, &t, &plan.pieces, tally).map(|()| t)) {
        Ok(t) => t,
        Err(e) => {
            run.r.fail(&dst.path, e);
            return Ok(Copied::Done);
        }
    };
    let mut at = 0;
    for &(off, len) in &plan.pieces {
        tally.ranges += 1;
        match share(run, tally, (None, dst), (&temp, file), (at, off), len)? {
            Ended::Done => at += len,
            Ended::Changed(_) => return Ok(Copied::Changed),
            Ended::Stopped => break,
        }
    }
    Ok(Copied::Done)
}

/// Copies `pieces` of `src` to the start of `temp`, one after another, and flushes it;
/// counts the bytes written.
fn write_copy(src: &File, mut temp: &File, pieces: &[(u64, u64)], tally: &mut Tally) -> Result<(), crate::meta::Errno> {
    let io_err = |e: io::Error| crate::meta::Errno(e.raw_os_error().unwrap_or(crate::meta::Errno::IO.0));
    let mut buf = vec![0u8; COPY_BYTES as usize];
    let mut src = src;
    for &(off, len) in pieces {
        src.seek(SeekFrom::Start(off)).map_err(io_err)?;
        let mut left = len;
        while left > 0 {
            let chunk = &mut buf[..left.min(COPY_BYTES) as usize];
            src.read_exact(chunk).map_err(io_err)?;
            temp.write_all(chunk).map_err(io_err)?;
            tally.bytes_written += chunk.len() as u64;
            left -= chunk.len() as u64;
        }
    }
    temp.sync_all().map_err(io_err)
}

#[cfg(test)]
mod tests {
    use super::*;

    const K: u64 = 4096;

    fn ext(logical: u64, length: u64, flags: u32) -> Extent {
        Extent { logical, physical: 1 << 30 | logical, length, flags }
    }

    /// Per extent: the rest is copied when the matched part is at least as large; an
    /// extent matched whole frees itself; shared and encoded extents are left; the end
    /// of the file bounds the last extent.
    #[test]
    fn remainder_plan_per_extent() {
        // Extent 0..16K: 12K matched, 4K rest; 16K..32K: 4K matched (less than the
        // rest); 32K..40K matched whole; 40K..48K shared; 48K..(end 58K): encoded.
        let map = Layout::Extents(vec![
            ext(0, 4 * K, 0),
            ext(4 * K, 12 * K, 0),
            ext(16 * K, 16 * K, 0),
            ext(32 * K, 8 * K, 0),
            ext(40 * K, 8 * K, Extent::SHARED),
            ext(48 * K, 12 * K, Extent::ENCODED),
        ]);
        let matched = [(0, 4 * K), (8 * K, 8 * K), (20 * K, 4 * K), (32 * K, 8 * K), (40 * K, 8 * K), (48 * K, 8 * K)];
        let p = plan(&map, &matched, 58 * K);
        // Extent 0..4K alone is matched whole; 4K..16K has 8K matched, 4K rest.
        assert_eq!(p.pieces, vec![(4 * K, 4 * K)]);
        assert_eq!((p.extents, p.bytes_freed, p.bytes()), (1, 4 * K + 8 * K + 8 * K, 4 * K));
        // Equal halves pay; the end of the file bounds the extent, and an unaligned end
        // is copied too (last).
        let one = Layout::Extents(vec![ext(0, 16 * K, 0)]);
        let p = plan(&one, &[(0, 4 * K)], 8 * K);
        assert_eq!((p.pieces, p.extents, p.bytes_freed), (vec![(4 * K, 4 * K)], 1, 4 * K));
        assert_eq!(plan(&one, &[(0, 4 * K)], 8 * K + 100), Plan::default(), "4K matched, 4K+100 rest");
        let p = plan(&one, &[(0, 8 * K)], 12 * K + 100);
        assert_eq!(p.pieces, vec![(8 * K, 4 * K + 100)]);
        let p = plan(&one, &[(4 * K, 8 * K)], 12 * K);
        assert_eq!(p.pieces, vec![(0, 4 * K)]);
        assert_eq!(plan(&one, &[(4 * K, 4 * K)], 12 * K), Plan::default());
        // No map, no plan.
        assert_eq!(plan(&Layout::Unknown, &matched, 58 * K), Plan::default());
    }
}
