//! Shape **V** of `cargo xtask bench --dupes V --dedupe btrfs|xfs`: VM images, where no
//! two files are equal as a whole and block dedupe is what gives space back (issue 27).
//!
//! `--count N` is the base image's size in MiB (default 128). Every file is a list of
//! 4 KiB pages, each page a SplitMix64 stream of its own id, so the plan (no I/O) knows
//! exactly which aligned blocks repeat:
//!
//! - `a-base.img`: N MiB of distinct pages;
//! - `b-blocks.img`: the base with every 8th 128 KiB block rewritten;
//! - `c-pages.img`: the base with one page in 64, at random, rewritten;
//! - `d-moved.img`: the base's 1 MiB runs in another order;
//! - `e-shifted.img`: one new page, then the base but its last page (shifted by a page);
//! - `f-repeats.img`: N/4 MiB of new pages, four times over (repeats inside one file).
//!
//! The duplicate bytes at a granularity are (all aligned units − distinct units) × unit:
//! what a perfect block dedupe at that block size could give back. Files are written with
//! plain `write` calls from two threads.

use std::collections::HashSet;
use std::fs;
use std::io::Write as _;
use std::path::Path;

use crate::rng::Rng;

pub const PAGE_BYTES: u64 = 4096;
const BLOCK_128K_PAGES: usize = 32;
const MIB_PAGES: usize = 256;

pub struct File {
    pub rel: String,
    pub pages: Vec<u32>,
}

/// The plan and what it holds.
pub struct Plan {
    pub files: Vec<File>,
    pub bytes: u64,
    pub dup_4k_bytes: u64,
    pub dup_128k_bytes: u64,
}

pub fn default_count() -> u64 {
    128
}

/// Decides every file's pages; no I/O.
pub fn plan(count_mib: u64, seed: u64) -> Plan {
    let mut rng = Rng::new(seed ^ 0x56_u64.wrapping_mul(0x9E37_79B9));
    let n = (count_mib.max(1) as usize) * MIB_PAGES;
    let mut next_id = 0u32;
    let mut fresh = |k: usize| -> Vec<u32> {
        let out = (next_id..next_id + k as u32).collect();
        next_id += k as u32;
        out
    };
    let base = fresh(n);
    let mut blocks = base.clone();
    for b in (0..n / BLOCK_128K_PAGES).step_by(8) {
        let new = fresh(BLOCK_128K_PAGES);
        blocks[b * BLOCK_128K_PAGES..(b + 1) * BLOCK_128K_PAGES].copy_from_slice(&new);
    }
    let mut pages = base.clone();
    for _ in 0..n / 64 {
        let at = rng.index(n);
        pages[at] = fresh(1)[0];
    }
    let mut runs: Vec<&[u32]> = base.chunks(MIB_PAGES).collect();
    for i in (1..runs.len()).rev() {
        runs.swap(i, rng.index(i + 1));
    }
    let moved = runs.concat();
    let mut shifted = fresh(1);
    shifted.extend_from_slice(&base[..n - 1]);
    let quarter = fresh((n / 4).max(1));
    let repeats = [&quarter[..], &quarter, &quarter, &quarter].concat();
    let named = [
        ("a-base.img", base),
        ("b-blocks.img", blocks),
        ("c-pages.img", pages),
        ("d-moved.img", moved),
        ("e-shifted.img", shifted),
        ("f-repeats.img", repeats),
    ];
    let files: Vec<File> = named.into_iter().map(|(rel, pages)| File { rel: rel.into(), pages }).collect();
    let bytes = files.iter().map(|f| f.pages.len() as u64 * PAGE_BYTES).sum();
    let dup_4k_bytes = dup_units(&files, 1) * PAGE_BYTES;
    let dup_128k_bytes = dup_units(&files, BLOCK_128K_PAGES) * PAGE_BYTES * BLOCK_128K_PAGES as u64;
    Plan { files, bytes, dup_4k_bytes, dup_128k_bytes }
}

/// Aligned units of `pages` pages that repeat one seen before (in any file).
fn dup_units(files: &[File], pages: usize) -> u64 {
    let mut seen: HashSet<&[u32]> = HashSet::new();
    let mut dups = 0;
    for f in files {
        for unit in f.pages.chunks_exact(pages) {
            if !seen.insert(unit) {
                dups += 1;
            }
        }
    }
    dups
}

/// Page `id`'s bytes for `seed`.
fn fill_page(seed: u64, id: u32, out: &mut [u8]) {
    let start = seed ^ u64::from(id).wrapping_mul(0xD6E8_FEB8_6659_FD93);
    for (k, chunk) in out.chunks_mut(8).enumerate() {
        let mut z = start.wrapping_add((k as u64 + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15));
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^= z >> 31;
        chunk.copy_from_slice(&z.to_le_bytes()[..chunk.len()]);
    }
}

/// The marker's text: parameters and the plan's figures.
pub fn marker_text(fs_name: &str, count: u64, seed: u64, plan: &Plan) -> String {
    format!("{fs_name} V {count} {seed} {} {} {}\n", plan.bytes, plan.dup_4k_bytes, plan.dup_128k_bytes)
}

/// Writes every file of `plan` under `tree`, 1 MiB a `write`, two threads.
pub fn write(tree: &Path, plan: &Plan, seed: u64) -> Result<(), String> {
    fs::create_dir_all(tree).map_err(|e| format!("{}: {e}", tree.display()))?;
    eprintln!("xtask dedupe: writing shape V, {} bytes, to {}", plan.bytes, tree.display());
    let results: Vec<Result<(), String>> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..2)
            .map(|t| {
                s.spawn(move || {
                    for f in plan.files.iter().skip(t).step_by(2) {
                        write_file(&tree.join(&f.rel), &f.pages, seed)?;
                    }
                    Ok(())
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap_or_else(|_| Err("a writer panicked".to_string()))).collect()
    });
    results.into_iter().collect()
}

fn write_file(path: &Path, pages: &[u32], seed: u64) -> Result<(), String> {
    let mut file = fs::File::create(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut buf = vec![0u8; MIB_PAGES * PAGE_BYTES as usize];
    for chunk in pages.chunks(MIB_PAGES) {
        for (i, &id) in chunk.iter().enumerate() {
            fill_page(seed, id, &mut buf[i * PAGE_BYTES as usize..(i + 1) * PAGE_BYTES as usize]);
        }
        file.write_all(&buf[..chunk.len() * PAGE_BYTES as usize]).map_err(|e| format!("{}: {e}", path.display()))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The figures of a small plan, counted by hand: base 1 MiB (256 pages).
    #[test]
    fn shape_v_duplicates_of_a_one_mib_base() {
        let p = plan(1, 7);
        assert_eq!(p.files.len(), 6);
        assert_eq!(p.bytes, 6 * (1 << 20));
        // 4 KiB: blocks 256 − 32 rewritten (8 blocks of 128 KiB, every 8th: blocks 0),
        // pages ≥ 252 (4 draws), moved 256, shifted 255, repeats 3 × 64.
        let dup_pages = p.dup_4k_bytes / PAGE_BYTES;
        assert!((224 + 252 + 256 + 255 + 192..=224 + 256 + 256 + 255 + 192).contains(&dup_pages), "{dup_pages}");
        // 128 KiB: blocks 7, pages 4..8 (4 draws hit at most 4 blocks), moved 8 (one
        // run of 1 MiB), shifted 0, repeats: 64 pages are two blocks, three more times.
        let dup_blocks = p.dup_128k_bytes / (PAGE_BYTES * 32);
        assert!((7 + 4 + 8 + 6..=7 + 8 + 8 + 6).contains(&dup_blocks), "{dup_blocks}");
        // The same seed, the same plan.
        assert_eq!(plan(1, 7).files[2].pages, p.files[2].pages);
    }
}
