//! Every file's extents in bulk: XFS's reverse map through `FS_IOC_GETFSMAP`.
//!
//! With `rmapbt=1` an XFS file system keeps, beside each file's block map, a btree from
//! physical blocks to their owners. `FS_IOC_GETFSMAP` lists it in physical order, many
//! records per call: owner inode, file offset, physical range, and `FMR_OF_SHARED` when
//! the range holds any block another mapping references too. That flag is coarser than
//! FIEMAP's: a 1 MiB extent of which 64 KiB were reflinked elsewhere is one record,
//! flagged shared as a whole, where FIEMAP splits it at the shared part. Because the
//! reverse map lists every mapping of every block, the exact shared part is where two or
//! more records overlap, and `bulk_extents` works it out (`split_shared`), so its
//! extents count exactly as FIEMAP's do, each shared one with how many files share it.
//!
//! * `bulk_extents_estimate(dir)` — one `fstatfs` and, on XFS, one `XFS_IOC_FSGEOMETRY`
//!   (both unprivileged) and the thread's capabilities: whether the file system has a
//!   reverse map this process may list, and its inodes in use (what a full listing is
//!   proportional to).
//! * `bulk_extents(dir, each)` — the listing itself. Without a reverse map, and without
//!   `CAP_SYS_ADMIN`, the kernel does not refuse the call: it answers with free space and
//!   "unknown" owners only. So the geometry (`ENOTSUP`) and the capability (`EPERM`) are
//!   checked first, and a listing with an unknown owner in it is `EPERM` too.
//!
//! Attribute-fork and block-map records, and those of special owners (free space, logs,
//! inode chunks, CoW staging), are not file data and are left out; so are realtime-device
//! records, whose physical addresses would collide with the data device's.

use super::unix::dir::{errno, Dir};
use crate::meta::{Errno, Extent};
use linux_raw_sys::ioctl as k;

/// `struct fsmap` (linux/fsmap.h).
#[repr(C)]
#[derive(Clone, Copy, Default)]
struct RawFsmap {
    device: u32,
    flags: u32,
    physical: u64,
    owner: u64,
    offset: u64,
    length: u64,
    reserved: [u64; 3],
}
const _: () = assert!(std::mem::size_of::<RawFsmap>() == 64);

/// Records asked for per call: 8192 × 64 bytes, a 512 KiB buffer for the one call's
/// duration (a file system of 170k mappings takes 21 calls).
const RECORDS_PER_CALL: usize = 8192;

/// `struct fsmap_head` followed by room for `RECORDS_PER_CALL` records.
#[repr(C)]
struct RawHead {
    iflags: u32,
    oflags: u32,
    count: u32,
    entries: u32,
    reserved: [u64; 6],
    keys: [RawFsmap; 2],
    recs: [RawFsmap; RECORDS_PER_CALL],
}
// The opcode encodes the header's size (192 bytes); the records follow it.
const _: () = assert!(std::mem::size_of::<RawHead>() == 192 + 64 * RECORDS_PER_CALL);
const _: () = assert!((k::FS_IOC_GETFSMAP >> 16) & 0x3fff == 192);

const FMR_OF_ATTR_FORK: u32 = 0x2;
const FMR_OF_EXTENT_MAP: u32 = 0x4;
const FMR_OF_SHARED: u32 = 0x8;
const FMR_OF_SPECIAL_OWNER: u32 = 0x10;
const FMR_OF_LAST: u32 = 0x20;
/// `FMR_OWN_UNKNOWN`: blocks the listing cannot name an owner of.
const FMR_OWN_UNKNOWN: u64 = 2;
/// `FMH_OF_DEV_T`: `fmr_device` is a dev_t (`new_encode_dev`), not a cookie.
const FMH_OF_DEV_T: u32 = 0x1;

/// `XFS_IOC_FSGEOMETRY_V4`: `_IOR('X', 124, struct xfs_fsop_geom_v4)`, 112 bytes, in
/// every kernel since 2.6 (xfs_fs.h is not in linux-raw-sys).
const XFS_IOC_FSGEOMETRY_V4: u32 = 0x8070_587c;
/// `XFS_FSOP_GEOM_FLAGS_RMAPBT`, in the geometry's `flags` (its 24th 32-bit word).
const GEOM_FLAGS_RMAPBT: u32 = 1 << 19;
const GEOM_FLAGS_WORD: usize = 23;

/// Whether `dir`'s file system is XFS with a reverse map.
fn has_rmapbt(dir: &Dir) -> bool {
    geometry(dir).is_some_and(|g| g[GEOM_FLAGS_WORD] & GEOM_FLAGS_RMAPBT != 0)
}

/// The geometry of `dir`'s file system when it is XFS, as 32-bit words.
fn geometry(dir: &Dir) -> Option<[u32; 28]> {
    let fs = rustix::fs::fstatfs(&dir.fd).ok()?;
    if fs.f_type as u32 != linux_raw_sys::general::XFS_SUPER_MAGIC {
        return None;
    }
    // SAFETY: XFS_IOC_FSGEOMETRY_V4 writes one 112-byte `struct xfs_fsop_geom_v4`, which
    // `[u32; 28]` holds with the alignment of its widest (u64) fields' halves; any bit
    // pattern is a valid array of integers.
    unsafe {
        let ctl = rustix::ioctl::Getter::<{ XFS_IOC_FSGEOMETRY_V4 as rustix::ioctl::Opcode }, [u32; 28]>::new();
        rustix::ioctl::ioctl(&dir.fd, ctl).ok()
    }
}

/// The byte ranges of the data device's allocation groups (the geometry's first words:
/// block size, realtime extent size, blocks per group, groups); a mapping never crosses
/// from one group into the next, so each range can be listed on its own.
fn group_ranges(dir: &Dir) -> Vec<(u64, u64)> {
    let Some(g) = geometry(dir) else { return Vec::new() };
    let (block_bytes, ag_blocks, ag_count) = (u64::from(g[0]), u64::from(g[2]), u64::from(g[3]));
    let ag_bytes = block_bytes.saturating_mul(ag_blocks);
    if ag_bytes == 0 || ag_count > 1 << 20 {
        return Vec::new();
    }
    (0..ag_count).map(|k| (k * ag_bytes, (k + 1).saturating_mul(ag_bytes))).collect()
}

/// Whether this thread has `CAP_SYS_ADMIN`: without it the kernel does not refuse a
/// listing, it lists free space and "unknown" owners only, as without a reverse map.
fn may_list() -> bool {
    rustix::thread::capabilities(None).is_ok_and(|c| c.effective.contains(rustix::thread::CapabilitySet::SYS_ADMIN))
}

/// The inodes in use on `dir`'s file system when it can list all files' extents in bulk
/// (XFS with `rmapbt`, and the capability to list them); `None` otherwise.
pub fn bulk_extents_estimate(dir: &Dir) -> Option<u64> {
    if !has_rmapbt(dir) || !may_list() {
        return None;
    }
    let fs = rustix::fs::fstatfs(&dir.fd).ok()?;
    Some((fs.f_files as u64).saturating_sub(fs.f_ffree as u64))
}

/// Calls `each(ino, extent, files)` for every data extent of every file on `dir`'s file
/// system, shared flags as exact as FIEMAP's (see the module doc); a shared extent is a
/// stretch the same mappings cover throughout, and `files` counts their owners (0 for
/// one not shared). `ENOTSUP` without a reverse
/// map, `EPERM` without `CAP_SYS_ADMIN`; a failing call part way stops with its error.
pub fn bulk_extents(dir: &Dir, each: &mut dyn FnMut(u64, &Extent, u32)) -> Result<(), Errno> {
    if !has_rmapbt(dir) {
        return Err(Errno::NOTSUP);
    }
    if !may_list() {
        return Err(Errno::PERM);
    }
    let data_dev = rustix::fs::fstat(&dir.fd).map_err(errno)?.st_dev;
    let mut shared = Vec::new();
    let mut unknown = false;
    read_all(dir, data_dev, &mut |r, dev_t| {
        // The reduced listing after all (the capability went between the two questions).
        unknown |= r.flags & FMR_OF_SPECIAL_OWNER != 0 && r.owner == FMR_OWN_UNKNOWN;
        let skip = FMR_OF_ATTR_FORK | FMR_OF_EXTENT_MAP | FMR_OF_SPECIAL_OWNER;
        // Only the data device's records: with a dev_t, the scan's own device.
        if r.flags & skip != 0 || r.length == 0 || (dev_t && !same_dev(r.device, data_dev)) {
            return;
        }
        let rec = Mapping { ino: r.owner, logical: r.offset, physical: r.physical, length: r.length };
        if r.flags & FMR_OF_SHARED != 0 {
            shared.push(rec);
        } else {
            each(rec.ino, &rec.extent(0), 0);
        }
    })?;
    if unknown {
        return Err(Errno::PERM);
    }
    split_shared(&shared, each);
    Ok(())
}

/// Whether the kernel's 32-bit `new_encode_dev` of a device is `st_dev`.
fn same_dev(encoded: u32, st_dev: u64) -> bool {
    encoded == encode_dev(st_dev)
}

/// The kernel's 32-bit `new_encode_dev` of `st_dev`, as the listing's keys name devices.
fn encode_dev(st_dev: u64) -> u32 {
    let (major, minor) = (rustix::fs::major(st_dev), rustix::fs::minor(st_dev));
    (minor & 0xff) | (major << 8) | ((minor & !0xff) << 12)
}

/// A batch of records from one call, and whether their devices are dev_t numbers.
type Batch = Result<(Vec<RawFsmap>, bool), Errno>;

/// Lists the whole reverse map into `each` (with whether the devices are dev_t
/// numbers). Most of a listing is the kernel's work, and for every mapping a look-up in
/// the reference-count tree (for the shared flag: a third of a `--shared` scan's CPU on
/// a 1M-entry tree): so the data device's allocation groups are listed side by side, on
/// as many threads as there are cores (`group_ranges`), their records handed to `each`
/// here as they come (the log and realtime devices' records, which `bulk_extents`
/// leaves out, are not asked for). One group, one core, or no thread that starts: the
/// whole map in one range, as one thread.
fn read_all(dir: &Dir, data_dev: u64, each: &mut dyn FnMut(&RawFsmap, bool)) -> Result<(), Errno> {
    let groups = group_ranges(dir);
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let threads = cores.min(groups.len());
    let dev = encode_dev(data_dev);
    // The lowest key at `physical` on `device`, or with `high` the highest.
    let key = |device, physical, high: bool| {
        let all = if high { u64::MAX } else { 0 };
        RawFsmap { device, flags: all as u32, physical, owner: all, offset: all, length: 0, reserved: [0; 3] }
    };
    if threads >= 2 {
        let next = std::sync::atomic::AtomicUsize::new(0);
        let (tx, rx) = std::sync::mpsc::sync_channel::<Batch>(threads * 2);
        let listed = std::thread::scope(|s| {
            let mut started = 0;
            for _ in 0..threads {
                let (tx, next, groups) = (tx.clone(), &next, &groups);
                let lister = move || {
                    while let Some(&(lo, hi)) = groups.get(next.fetch_add(1, std::sync::atomic::Ordering::Relaxed)) {
                        let sent = read_range(dir, key(dev, lo, false), key(dev, hi - 1, true), &mut |recs, dev_t| {
                            // Only records starting in the group: none should start
                            // before it, but one listed twice would count twice.
                            let mine = recs.iter().filter(|r| r.physical >= lo && r.physical < hi).copied().collect();
                            tx.send(Ok((mine, dev_t))).is_ok()
                        });
                        if let Err(e) = sent {
                            let _ = tx.send(Err(e));
                            return;
                        }
                    }
                };
                if std::thread::Builder::new().stack_size(256 << 10).spawn_scoped(s, lister).is_ok() {
                    started += 1;
                }
            }
            drop(tx);
            if started == 0 {
                return None;
            }
            let mut failed = None;
            for batch in rx {
                match batch {
                    Ok((recs, dev_t)) => recs.iter().for_each(|r| each(r, dev_t)),
                    Err(e) => failed = failed.or(Some(e)),
                }
            }
            Some(failed)
        });
        match listed {
            Some(Some(e)) => return Err(e),
            Some(None) => return Ok(()),
            None => {}
        }
    }
    // The whole map: from the lowest key of all to the highest.
    read_range(dir, key(0, 0, false), key(u32::MAX, u64::MAX, true), &mut |recs, dev_t| {
        recs.iter().for_each(|r| each(r, dev_t));
        true
    })
}

/// Lists the reverse map from key `low` to key `high` into `each`, a call's records at a
/// time; `each` also learns whether the devices are dev_t numbers, and answering false
/// stops the listing.
fn read_range(
    dir: &Dir,
    low: RawFsmap,
    high: RawFsmap,
    each: &mut dyn FnMut(&[RawFsmap], bool) -> bool,
) -> Result<(), Errno> {
    // Made on the heap, zeroed in place: 512 KiB would not fit a worker's stack.
    let layout = std::alloc::Layout::new::<RawHead>();
    // SAFETY: the layout is `RawHead`'s (not zero-sized); `RawHead` is integers only, so
    // all zeroes is a valid value; the pointer comes from the global allocator with that
    // layout, which is what `Box` frees it with.
    let mut head: Box<RawHead> = unsafe {
        let p = std::alloc::alloc_zeroed(layout).cast::<RawHead>();
        if p.is_null() {
            std::alloc::handle_alloc_error(layout);
        }
        Box::from_raw(p)
    };
    head.keys = [low, high];
    loop {
        head.count = RECORDS_PER_CALL as u32;
        head.entries = 0;
        // SAFETY: FS_IOC_GETFSMAP reads a `struct fsmap_head` and writes up to `fmh_count`
        // records after it; `RawHead` has that C layout with exactly `RECORDS_PER_CALL`
        // records, and the Updater borrows it mutably for the call only.
        unsafe {
            let ctl =
                rustix::ioctl::Updater::<{ k::FS_IOC_GETFSMAP as rustix::ioctl::Opcode }, RawHead>::new(&mut head);
            rustix::ioctl::ioctl(&dir.fd, ctl).map_err(errno)?;
        }
        let n = (head.entries as usize).min(RECORDS_PER_CALL);
        let dev_t = head.oflags & FMH_OF_DEV_T != 0;
        if !each(&head.recs[..n], dev_t) {
            return Ok(());
        }
        if n == 0 || head.recs[n - 1].flags & FMR_OF_LAST != 0 {
            return Ok(());
        }
        // The kernel continues after the record given as the low key.
        head.keys[0] = head.recs[n - 1];
    }
}

/// One file mapping of the reverse map.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Mapping {
    ino: u64,
    logical: u64,
    physical: u64,
    length: u64,
}

impl Mapping {
    fn extent(&self, flags: u32) -> Extent {
        Extent { logical: self.logical, physical: self.physical, length: self.length, flags }
    }
}

/// Hands on the mappings flagged shared, each split into the stretches where the same
/// two or more mappings cover it (flagged `SHARED`, with the number of files they belong
/// to) and the parts no other mapping covers.
fn split_shared(maps: &[Mapping], each: &mut dyn FnMut(u64, &Extent, u32)) {
    let segments = shared_segments(maps);
    for m in maps {
        let end = m.physical.saturating_add(m.length);
        let mut at = m.physical;
        let first = segments.partition_point(|&(_, e, _)| e <= at);
        for &(s, e, files) in &segments[first..] {
            if s >= end {
                break;
            }
            if s > at {
                each(m.ino, &piece(m, at, s, 0), 0);
            }
            // Segments split at every mapping's ends, so this one lies inside `m`.
            each(m.ino, &piece(m, s, e.min(end), Extent::SHARED), files);
            at = e.min(end);
        }
        if at < end {
            each(m.ino, &piece(m, at, end, 0), 0);
        }
    }
}

/// The part `[start, end)` of `m`'s physical range, as an extent.
fn piece(m: &Mapping, start: u64, end: u64, flags: u32) -> Extent {
    Extent { logical: m.logical + (start - m.physical), physical: start, length: end - start, flags }
}

/// The physical stretches two or more of `maps` cover, split wherever one of them starts
/// or ends (so the same mappings cover each throughout), sorted, with the number of
/// distinct files (owner inodes) covering each.
fn shared_segments(maps: &[Mapping]) -> Vec<(u64, u64, u32)> {
    // Each mapping starts (+1) and ends (-1); at one point an end sorts first, so ranges
    // that only touch do not overlap.
    let mut events: Vec<(u64, i32, u64)> = Vec::with_capacity(maps.len() * 2);
    for m in maps {
        events.push((m.physical, 1, m.ino));
        events.push((m.physical.saturating_add(m.length), -1, m.ino));
    }
    events.sort_unstable();
    let mut out = Vec::new();
    let mut covering: std::collections::HashMap<u64, u32> = std::collections::HashMap::new();
    let (mut depth, mut prev) = (0i32, 0u64);
    for (at, step, ino) in events {
        if depth >= 2 && at > prev {
            out.push((prev, at, covering.len() as u32));
        }
        prev = at;
        depth += step;
        if step > 0 {
            *covering.entry(ino).or_insert(0) += 1;
        } else if let Some(n) = covering.get_mut(&ino) {
            *n -= 1;
            if *n == 0 {
                covering.remove(&ino);
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn map(ino: u64, logical: u64, physical: u64, length: u64) -> Mapping {
        Mapping { ino, logical, physical, length }
    }

    fn split(maps: Vec<Mapping>) -> Vec<(u64, u64, u64, u64, u32)> {
        let mut out = Vec::new();
        split_shared(&maps, &mut |ino, e, files| {
            assert_eq!(e.is_shared(), files > 0);
            out.push((ino, e.logical, e.physical, e.length, files))
        });
        out.sort_unstable();
        out
    }

    #[test]
    fn a_partly_reflinked_extent_is_shared_only_where_another_mapping_covers_it() {
        // File 131: one 1 MiB extent; file 132 maps its first 192 KiB and its last 768 KiB.
        let got = split(vec![map(131, 0, 1000, 1024), map(132, 0, 1000, 192), map(132, 256, 1256, 768)]);
        let want = vec![
            (131, 0, 1000, 192, 2),
            (131, 192, 1192, 64, 0),
            (131, 256, 1256, 768, 2),
            (132, 0, 1000, 192, 2),
            (132, 256, 1256, 768, 2),
        ];
        assert_eq!(got, want);
    }

    #[test]
    fn stretches_covered_twice_split_where_a_mapping_starts_or_ends() {
        let maps = vec![map(1, 0, 0, 100), map(2, 0, 50, 100), map(3, 0, 100, 10), map(4, 0, 150, 50)];
        // 50..100 by 1 and 2; 100..110 by 2 and 3; 110..150 by 2 only; 150..200 by 4 only.
        assert_eq!(shared_segments(&maps), vec![(50, 100, 2), (100, 110, 2)]);
        let nested = vec![map(1, 0, 0, 1000), map(2, 0, 100, 10), map(3, 0, 500, 10), map(3, 0, 505, 10)];
        assert_eq!(shared_segments(&nested), vec![(100, 110, 2), (500, 505, 2), (505, 510, 2), (510, 515, 2)]);
        // One file mapping the same blocks twice: shared, by one file.
        assert_eq!(shared_segments(&[map(7, 0, 0, 10), map(7, 10, 0, 10)]), vec![(0, 10, 1)]);
        assert_eq!(shared_segments(&[map(1, 0, 0, 10)]), vec![]);
    }

    #[test]
    fn a_dev_t_is_compared_as_the_kernel_encodes_it() {
        assert!(same_dev(0x0700, rustix::fs::makedev(7, 0)));
        assert!(same_dev(0x0701, rustix::fs::makedev(7, 1)));
        assert!(same_dev(0x0100_0731, rustix::fs::makedev(7, 0x1031)));
        assert!(!same_dev(0x0700, rustix::fs::makedev(7, 1)));
    }
}
