//! The duplicate shapes of `cargo xtask bench --dupes`: trees whose true groups are known
//! because the generator decided them, written from one seed with plain `write` calls
//! (never `cp` or `cat`: coreutils 9 reflinks on btrfs and XFS, and the copies would
//! already share their extents).
//!
//! - **S**: `--count` files (default 20,000) of log-normal sizes, about 32,000 bytes each
//!   on average (scaled to ~640 MB for 20,000), spread over folders of about 100; ~30 % of the files
//!   are in groups of 2–20 identical copies (small groups more likely), ~1 % are
//!   near-duplicate pairs (same size, same first and last 4 KiB, one byte different in
//!   the middle), the rest unique.
//! - **T**: `--count` identical 1 KiB files (default 200,000), 1,000 per folder.
//! - **L**: four large files: two identical of 1 GiB, two near-duplicates of 1.5 GiB.
//!
//! Every content is a stream of SplitMix64 words from its own seed; a near-duplicate is
//! its partner's stream with one byte flipped at `size / 2`. No size is below 16 bytes, so
//! two unique contents never collide by chance. The whole tree is decided in memory first
//! (`plan`, no I/O), then written by two threads; the marker `DIR.dupes.txt` records the
//! parameters and the true answer (groups, files in groups, bytes wasted), and a later run
//! with the same parameters reuses the tree.

use std::fs;
use std::io::Write as _;
use std::path::{Path, PathBuf};

use crate::rng::Rng;

/// Mean file size of S, so that 20,000 files are ~640 MB.
const S_MEAN_BYTES: f64 = 32_000.0;
/// σ of ln(size) for S.
const S_SIGMA: f64 = 2.0;
/// No content is smaller: 128 random bits, so unique contents never match by chance.
const MIN_BYTES: u64 = 16;
/// Largest file of S.
const S_MAX_BYTES: u64 = 64 << 20;
/// The share of S's files that are in a group of identical copies.
const S_GROUPED: f64 = 0.30;
/// Every this many picks of S is a near-duplicate pair.
const S_NEAR_EVERY: u64 = 100;
/// A near-duplicate must be larger than its two 4 KiB ends plus the middle byte.
const NEAR_MIN_BYTES: u64 = 3 * 4096;
/// Files per folder.
const S_PER_DIR: u64 = 100;
const T_PER_DIR: u64 = 1000;
const GIB: u64 = 1 << 30;
/// One write call.
const WRITE_BYTES: usize = 1 << 20;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Shape {
    S,
    T,
    L,
}

impl Shape {
    pub fn parse(text: &str) -> Result<Shape, String> {
        match text {
            "S" | "s" => Ok(Shape::S),
            "T" | "t" => Ok(Shape::T),
            "L" | "l" => Ok(Shape::L),
            _ => Err(format!("--dupes {text}: use S, T or L")),
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Shape::S => "S",
            Shape::T => "T",
            Shape::L => "L",
        }
    }

    pub fn default_count(self) -> u64 {
        match self {
            Shape::S => 20_000,
            Shape::T => 200_000,
            Shape::L => 4,
        }
    }
}

/// One distinct content: its size, its stream's seed, and the byte flipped, if any.
#[derive(Clone, Copy, Debug)]
pub struct Content {
    pub size: u64,
    pub seed: u64,
    pub flip_at: Option<u64>,
}

/// One file: where it goes and which content it holds.
pub struct File {
    pub rel: String,
    pub content: usize,
}

/// The true answer, from the plan.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Truth {
    pub groups: u64,
    pub files_in_groups: u64,
    /// size × (copies − 1), summed.
    pub wasted_bytes: u64,
    pub files: u64,
    pub bytes: u64,
}

pub struct Plan {
    pub contents: Vec<Content>,
    pub files: Vec<File>,
    pub truth: Truth,
}

/// Decides the whole tree; no I/O.
pub fn plan(shape: Shape, count: u64, seed: u64) -> Plan {
    let mut rng = Rng::new(seed ^ 0xD0_u64.wrapping_mul(0x9E37_79B9));
    let mut contents = Vec::new();
    let mut copies: Vec<u64> = Vec::new();
    match shape {
        Shape::S => {
            plan_s(&mut rng, count, &mut contents, &mut copies);
            // The tail of a log-normal makes the total vary a lot from seed to seed: scale
            // every size so that the tree has its nominal size (~640 MB for 20,000 files).
            let total: f64 = contents.iter().zip(&copies).map(|(c, n)| (c.size * n) as f64).sum();
            let factor = count as f64 * S_MEAN_BYTES / total.max(1.0);
            for c in &mut contents {
                let floor = if c.flip_at.is_some() { NEAR_MIN_BYTES } else { MIN_BYTES };
                c.size = ((c.size as f64 * factor) as u64).max(floor);
                c.flip_at = c.flip_at.map(|_| c.size / 2);
            }
        }
        Shape::T => {
            contents.push(Content { size: 1024, seed: rng.next_u64(), flip_at: None });
            copies.push(count);
        }
        Shape::L => {
            let (a, b) = (rng.next_u64(), rng.next_u64());
            contents.push(Content { size: GIB, seed: a, flip_at: None });
            copies.push(2);
            let big = GIB + GIB / 2;
            contents.push(Content { size: big, seed: b, flip_at: None });
            copies.push(1);
            contents.push(Content { size: big, seed: b, flip_at: Some(big / 2) });
            copies.push(1);
        }
    }
    let mut slots: Vec<usize> = Vec::new();
    for (idx, n) in copies.iter().enumerate() {
        slots.extend(std::iter::repeat_n(idx, *n as usize));
    }
    // Shuffle (Fisher–Yates) so that copies land in different folders.
    for i in (1..slots.len()).rev() {
        let j = rng.index(i + 1);
        slots.swap(i, j);
    }
    let per_dir = if shape == Shape::T { T_PER_DIR } else { S_PER_DIR };
    let files: Vec<File> = slots
        .into_iter()
        .enumerate()
        .map(|(i, content)| File { rel: format!("d{:04}/f{i:07}.dat", i as u64 / per_dir), content })
        .collect();
    let mut truth = Truth::default();
    for (content, n) in contents.iter().zip(&copies) {
        truth.files += n;
        truth.bytes += content.size * n;
        if *n >= 2 {
            truth.groups += 1;
            truth.files_in_groups += n;
            truth.wasted_bytes += content.size * (n - 1);
        }
    }
    Plan { contents, files, truth }
}

fn plan_s(rng: &mut Rng, count: u64, contents: &mut Vec<Content>, copies: &mut Vec<u64>) {
    let mu = S_MEAN_BYTES.ln() - S_SIGMA * S_SIGMA / 2.0;
    let draw = |rng: &mut Rng| ((mu + S_SIGMA * rng.normal()).exp() as u64).clamp(MIN_BYTES, S_MAX_BYTES);
    let (mut placed, mut grouped, mut picks) = (0u64, 0u64, 0u64);
    while placed < count {
        picks += 1;
        let left = count - placed;
        if picks % S_NEAR_EVERY == 0 && left >= 2 {
            let (size, seed) = (draw(rng).max(NEAR_MIN_BYTES), rng.next_u64());
            contents.push(Content { size, seed, flip_at: None });
            contents.push(Content { size, seed, flip_at: Some(size / 2) });
            copies.extend([1, 1]);
            placed += 2;
        } else if (grouped as f64) < S_GROUPED * (placed as f64 + 1.0) && left >= 2 {
            let n = (2 + rng.skewed_index(19, 2.5) as u64).min(left);
            // A big file copied 20 times would be most of the tree: copies stay small.
            let size = draw(rng).min(S_MAX_BYTES / 16);
            contents.push(Content { size, seed: rng.next_u64(), flip_at: None });
            copies.push(n);
            placed += n;
            grouped += n;
        } else {
            contents.push(Content { size: draw(rng), seed: rng.next_u64(), flip_at: None });
            copies.push(1);
            placed += 1;
        }
    }
}

/// `len` bytes of `content` starting at `offset` (a multiple of 8) into `out`.
fn fill(content: &Content, offset: u64, out: &mut [u8]) {
    debug_assert!(offset % 8 == 0);
    for (k, chunk) in out.chunks_mut(8).enumerate() {
        let word_idx = offset / 8 + k as u64;
        let mut z = content.seed.wrapping_add(word_idx.wrapping_mul(0x9E37_79B9_7F4A_7C15));
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^= z >> 31;
        chunk.copy_from_slice(&z.to_le_bytes()[..chunk.len()]);
    }
    if let Some(at) = content.flip_at {
        if at >= offset && at < offset + out.len() as u64 {
            out[(at - offset) as usize] ^= 0xFF;
        }
    }
}

fn write_file(path: &Path, content: &Content, buf: &mut [u8]) -> Result<(), String> {
    let mut file = fs::File::create(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut offset = 0u64;
    while offset < content.size {
        let n = (content.size - offset).min(buf.len() as u64) as usize;
        fill(content, offset, &mut buf[..n]);
        file.write_all(&buf[..n]).map_err(|e| format!("{}: {e}", path.display()))?;
        offset += n as u64;
    }
    Ok(())
}

pub fn marker_path(tree: &Path) -> PathBuf {
    let mut name = tree.as_os_str().to_owned();
    name.push(".dupes.txt");
    PathBuf::from(name)
}

/// The marker's text: parameters, then the truth.
fn marker_text(shape: Shape, count: u64, seed: u64, truth: &Truth) -> String {
    format!(
        "dupes shape {} count {count} seed {seed} format 1\ngroups {} files_in_groups {} wasted_bytes {} files {} bytes {}\n",
        shape.name(),
        truth.groups,
        truth.files_in_groups,
        truth.wasted_bytes,
        truth.files,
        truth.bytes
    )
}

/// Makes the tree at `tree` unless its marker says it was made with these parameters.
/// A different marker, or a tree without one, needs `force` (it is deleted first).
pub fn ensure(tree: &Path, shape: Shape, count: u64, seed: u64, force: bool) -> Result<Truth, String> {
    let plan = plan(shape, count, seed);
    let marker = marker_path(tree);
    let want = marker_text(shape, count, seed, &plan.truth);
    match fs::read_to_string(&marker) {
        Ok(text) if text == want && tree.is_dir() => {
            eprintln!("xtask dupes: reusing {} ({})", tree.display(), want.lines().next().unwrap_or(""));
            return Ok(plan.truth);
        }
        Ok(_) | Err(_) if tree.exists() && !force => {
            return Err(format!("{} exists and was made otherwise: give --force to replace it", tree.display()));
        }
        _ => {}
    }
    if tree.exists() {
        fs::remove_dir_all(tree).map_err(|e| format!("remove {}: {e}", tree.display()))?;
    }
    let _ = fs::remove_file(&marker);
    write_plan(tree, &plan)?;
    fs::write(&marker, want).map_err(|e| format!("{}: {e}", marker.display()))?;
    Ok(plan.truth)
}

/// Writes the plan with two threads (files alternate between them).
pub fn write_plan(tree: &Path, plan: &Plan) -> Result<(), String> {
    let started = std::time::Instant::now();
    eprintln!("xtask dupes: writing {} files, {} bytes to {}", plan.truth.files, plan.truth.bytes, tree.display());
    for file in &plan.files {
        if let Some(parent) = Path::new(&file.rel).parent() {
            fs::create_dir_all(tree.join(parent)).map_err(|e| format!("{}: {e}", tree.display()))?;
        }
    }
    let n_threads = 2;
    let results: Vec<Result<(), String>> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..n_threads)
            .map(|t| {
                s.spawn(move || {
                    let mut buf = vec![0u8; WRITE_BYTES];
                    for file in plan.files.iter().skip(t).step_by(n_threads) {
                        write_file(&tree.join(&file.rel), &plan.contents[file.content], &mut buf)?;
                    }
                    Ok(())
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap_or_else(|_| Err("a writer panicked".to_string()))).collect()
    });
    results.into_iter().collect::<Result<Vec<()>, String>>()?;
    eprintln!("xtask dupes: written in {:.1} s", started.elapsed().as_secs_f64());
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn s_has_the_asked_shape() {
        let plan = plan(Shape::S, 20_000, 1);
        let t = plan.truth;
        assert_eq!(t.files, 20_000);
        let share = t.files_in_groups as f64 / t.files as f64;
        assert!((0.28..0.32).contains(&share), "{share}");
        assert!((630e6..650e6).contains(&(t.bytes as f64)), "{}", t.bytes);
        let near = plan.contents.iter().filter(|c| c.flip_at.is_some()).count();
        assert!(near >= 100, "{near}");
        assert!(plan.contents.iter().all(|c| c.size >= MIN_BYTES));
    }

    #[test]
    fn a_near_duplicate_differs_in_one_middle_byte_only() {
        let a = Content { size: 20_000, seed: 7, flip_at: None };
        let b = Content { flip_at: Some(10_000), ..a };
        let (mut x, mut y) = (vec![0u8; 20_000], vec![0u8; 20_000]);
        fill(&a, 0, &mut x);
        fill(&b, 0, &mut y);
        let diffs: Vec<usize> = (0..x.len()).filter(|&i| x[i] != y[i]).collect();
        assert_eq!(diffs, vec![10_000]);
    }

    #[test]
    fn filling_in_pieces_gives_the_same_bytes() {
        let c = Content { size: 4096, seed: 3, flip_at: Some(1000) };
        let mut whole = vec![0u8; 4096];
        fill(&c, 0, &mut whole);
        let mut pieces = vec![0u8; 4096];
        for (k, chunk) in pieces.chunks_mut(1024).enumerate() {
            fill(&c, k as u64 * 1024, chunk);
        }
        assert_eq!(whole, pieces);
    }
}
