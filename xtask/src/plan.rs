//! The tree plan: every name, size and link of a generated tree, decided before any I/O.
//!
//! Planning runs on one thread and draws every random choice from one seeded `Rng` in a
//! fixed order, so a seed fully determines the plan; `make` then creates the plan on disk
//! with several threads, which cannot change it. The plan does no I/O.
//!
//! The mix follows the reference tree of `shared/ref/peers-bench.md`, scaled linearly from
//! its 1,000,000 entries (root included): 46,330 directories, 939,420 regular files, 9,565
//! extra hard-link names on 5,315 inodes and 4,685 symlinks.
//!
//! Shape:
//! - Directories sit 1–8 levels down, most of them 3–6 (`DEPTH_PER_MILLE`); a parent is
//!   picked with a skew, so a few directories have many subdirectories.
//! - Three chains of 20, 45 and 90 nested directories hang off depths 2, 3 and 3, so the
//!   deepest directory is 93 levels down.
//! - Four directories hold 0.8%, 0.5%, 0.3% and 0.2% of all files (7,515 … 1,878 in the
//!   1M tree); the rest are spread by log-normal weights (median about 10 files).
//! - Sizes: 15% empty, 68% 1 B–4 KiB log-uniform, 16.6% 4–16 KiB, 0.4% 16 KiB–1 MiB, about
//!   82 per 939,420 files 1–64 MiB (allocated, not written), about 9 per 939,420 sparse
//!   files of 1–8 GiB apparent size with 68 KiB allocated.
//! - Hard links point at written files under 1 MiB; a quarter of the extra names sit in the
//!   target's own directory, the rest anywhere. A few inodes get many names.
//! - Symlinks: to files and directories in the tree (relative), dangling, ancestor loops
//!   (`.`, `..`, `../..`), absolute targets outside the tree, self loops and links to links.
//!
//! Other shapes: `Wide` puts every file in the root; `Chain` is a single line of nested
//! directories named `d` (so paths grow by two bytes a level), with the files spread
//! evenly over the levels, the big and sparse ones and the newline name included, and no
//! links. `Sizes::None` plans the same tree and then empties every file (no data, no
//! sparse or allocated files), so only directories and inodes take disk space.

use std::collections::{HashMap, HashSet};

use crate::names::{self, NameKind};
use crate::rng::Rng;

/// Bump when the plan for a given (entries, wide, seed) changes, so old markers stop matching.
pub const PLAN_FORMAT: u64 = 1;
/// Entries are at most this many: the plan holds every name in memory (about 100 B each).
pub const MAX_ENTRIES: u64 = 50_000_000;
/// Fewer entries cannot hold the mix (a directory, files, links and symlinks).
pub const MIN_ENTRIES: u64 = 200;

const PER_MILLION: u64 = 1_000_000;
const DIRS_PER_MILLION: u64 = 46_330;
const LINK_NAMES_PER_MILLION: u64 = 9_565;
const LINK_INODES_PER_MILLION: u64 = 5_315;
const SYMLINKS_PER_MILLION: u64 = 4_685;
/// Big (1–64 MiB) and sparse files per this many regular files, as in the reference tree.
const REFERENCE_FILES: u64 = 939_420;
const BIG_FILES_PER_REFERENCE: u64 = 82;
const SPARSE_FILES_PER_REFERENCE: u64 = 9;

const CHAIN_LENGTHS: [u64; 3] = [20, 45, 90];
const CHAIN_ATTACH_DEPTHS: [usize; 3] = [2, 3, 3];
/// Share of all files, per million, held by each of the four biggest directories.
const BIG_DIR_SHARES_PER_MILLION: [u64; 4] = [8_000, 5_000, 3_000, 2_000];
/// How the directories outside the chains spread over depths 1..=8, per mille.
const DEPTH_PER_MILLE: [u64; 8] = [4, 36, 150, 280, 280, 160, 60, 30];

const KIB: u64 = 1024;
const MIB: u64 = 1024 * KIB;
const GIB: u64 = 1024 * MIB;

/// The layout of a tree (`--shape`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Shape {
    Tree,
    Wide,
    Chain,
}

impl Shape {
    pub fn parse(text: &str) -> Result<Shape, String> {
        match text {
            "tree" => Ok(Shape::Tree),
            "wide" => Ok(Shape::Wide),
            "chain" => Ok(Shape::Chain),
            _ => Err(format!("--shape '{text}': expected tree, wide or chain")),
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Shape::Tree => "tree",
            Shape::Wide => "wide",
            Shape::Chain => "chain",
        }
    }
}

/// What the files hold (`--sizes`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Sizes {
    /// Empty, small, big and sparse files, as in real trees.
    Mixed,
    /// Every file empty.
    None,
}

impl Sizes {
    pub fn parse(text: &str) -> Result<Sizes, String> {
        match text {
            "mixed" => Ok(Sizes::Mixed),
            "none" => Ok(Sizes::None),
            _ => Err(format!("--sizes '{text}': expected mixed or none")),
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Sizes::Mixed => "mixed",
            Sizes::None => "none",
        }
    }
}

/// The arguments that identify a tree (what the marker compares).
#[derive(Clone, Copy, PartialEq, Debug)]
pub struct TreeId {
    pub plan_format: u64,
    /// Entries including the root, whichever way they were asked for.
    pub entries: u64,
    pub shape: Shape,
    /// Levels of a chain; 0 for the other shapes.
    pub depth: u64,
    pub sizes: Sizes,
    pub seed: u64,
}

impl TreeId {
    pub fn counts(&self) -> Counts {
        match self.shape {
            Shape::Tree => Counts::for_tree(self.entries),
            Shape::Wide => Counts::for_wide(self.entries - 1),
            Shape::Chain => Counts::for_chain(self.entries, self.depth),
        }
    }

    /// The options that make this tree again, as `cargo xtask gen` takes them.
    pub fn options(&self) -> String {
        let mut out = match self.shape {
            Shape::Tree => format!("--entries {}", self.entries),
            Shape::Wide => format!("--wide {}", self.entries - 1),
            Shape::Chain => format!("--shape chain --depth {} --entries {}", self.depth, self.entries),
        };
        if self.sizes == Sizes::None {
            out.push_str(" --sizes none");
        }
        out.push_str(&format!(" --seed {}", self.seed));
        out
    }
}

/// How many entries of each kind a tree has.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Counts {
    pub dirs: u64,
    pub files: u64,
    pub link_names: u64,
    pub link_inodes: u64,
    pub symlinks: u64,
}

impl Counts {
    /// The reference mix scaled to `entries` (root included); regular files take the rest.
    pub fn for_tree(entries: u64) -> Counts {
        let dirs = (entries * DIRS_PER_MILLION / PER_MILLION).max(1);
        let link_names = entries * LINK_NAMES_PER_MILLION / PER_MILLION;
        let symlinks = entries * SYMLINKS_PER_MILLION / PER_MILLION;
        let link_inodes =
            (link_names * LINK_INODES_PER_MILLION / LINK_NAMES_PER_MILLION).clamp(link_names.min(1), link_names);
        let files = entries - dirs - link_names - symlinks;
        Counts { dirs, files, link_names, link_inodes, symlinks }
    }

    /// `files` regular files in the root and nothing else.
    pub fn for_wide(files: u64) -> Counts {
        Counts { dirs: 1, files, link_names: 0, link_inodes: 0, symlinks: 0 }
    }

    /// `depth` nested directories below the root and the rest of `entries` as files.
    pub fn for_chain(entries: u64, depth: u64) -> Counts {
        Counts { dirs: depth + 1, files: entries - depth - 1, link_names: 0, link_inodes: 0, symlinks: 0 }
    }

    pub fn entries(&self) -> u64 {
        self.dirs + self.files + self.link_names + self.symlinks
    }
}

/// How a file gets its blocks.
#[derive(Clone, Copy, PartialEq)]
pub enum FileKind {
    /// Small or medium: its bytes are written.
    Written,
    /// 1 MiB or more: its blocks are allocated with fallocate(1), no data written.
    Allocated,
    /// Large apparent size, a few blocks written at the start and in the middle.
    Sparse,
}

pub struct FilePlan {
    pub name: Vec<u8>,
    pub size_bytes: u64,
    pub kind: FileKind,
}

pub struct SymlinkPlan {
    pub name: Vec<u8>,
    pub target: Vec<u8>,
}

/// One directory. Directories are ordered so that a parent comes before its children.
pub struct DirPlan {
    pub parent_idx: u32,
    pub depth: u32,
    /// Empty for the root.
    pub name: Vec<u8>,
    pub files: Vec<FilePlan>,
    pub symlinks: Vec<SymlinkPlan>,
    next_seq: u32,
    in_chain: bool,
}

/// An extra name for an existing file, created after all files exist.
pub struct LinkPlan {
    pub dir_idx: u32,
    pub name: Vec<u8>,
    pub target_dir_idx: u32,
    pub target_file_idx: u32,
}

pub struct Plan {
    pub dirs: Vec<DirPlan>,
    pub links: Vec<LinkPlan>,
    pub counts: Counts,
}

impl Plan {
    /// Sum of the regular files' apparent sizes (each inode once).
    pub fn file_bytes(&self) -> u64 {
        self.dirs.iter().flat_map(|dir| &dir.files).map(|file| file.size_bytes).sum()
    }

    /// A rough disk-use estimate: 4 KiB blocks for files, ext4 directory entries of
    /// 8 bytes plus the name rounded up to 4, sparse files at what `make` writes.
    pub fn estimated_disk_bytes(&self) -> u64 {
        let block = |bytes: u64| bytes.div_ceil(4096) * 4096;
        let mut total = 0;
        for dir in &self.dirs {
            let names = dir.files.iter().map(|f| &f.name).chain(dir.symlinks.iter().map(|s| &s.name));
            let entry_bytes: u64 = names.map(|name| 8 + (name.len() as u64).next_multiple_of(4)).sum();
            total += block(entry_bytes * 5 / 4).max(4096);
            for file in &dir.files {
                total += match file.kind {
                    FileKind::Sparse => 68 * KIB,
                    _ => block(file.size_bytes),
                };
            }
        }
        total
    }

    pub fn max_depth(&self) -> u32 {
        self.dirs.iter().map(|dir| dir.depth).max().unwrap_or(0)
    }

    pub fn max_files_in_dir(&self) -> usize {
        self.dirs.iter().map(|dir| dir.files.len()).max().unwrap_or(0)
    }
}

/// Plans the tree for `counts`. With one directory (`Counts::for_wide`) every file lands
/// in the root.
pub fn plan(shape: Shape, counts: Counts, sizes: Sizes, seed: u64) -> Plan {
    let mut planner =
        Planner { rng: Rng::new(seed), dirs: vec![new_dir(0, 0, Vec::new(), false)], taken: HashSet::new() };
    let files_per_dir = match shape {
        Shape::Chain => planner.plan_chain(counts.dirs - 1, counts.files),
        Shape::Tree | Shape::Wide => {
            planner.plan_dirs(counts.dirs);
            planner.spread_files(counts.files)
        }
    };
    planner.plan_files(&files_per_dir, counts.files);
    planner.plan_symlinks(counts.symlinks);
    let links = planner.plan_links(counts.link_names, counts.link_inodes);
    let mut dirs = planner.dirs;
    if sizes == Sizes::None {
        for file in dirs.iter_mut().flat_map(|dir| &mut dir.files) {
            file.size_bytes = 0;
            file.kind = FileKind::Written;
        }
    }
    Plan { dirs, links, counts }
}

fn new_dir(parent_idx: u32, depth: u32, name: Vec<u8>, in_chain: bool) -> DirPlan {
    DirPlan { parent_idx, depth, name, files: Vec::new(), symlinks: Vec::new(), next_seq: 0, in_chain }
}

struct Planner {
    rng: Rng,
    dirs: Vec<DirPlan>,
    /// Every (directory, name) handed out, to keep names unique within a directory.
    taken: HashSet<(u32, Vec<u8>)>,
}

impl Planner {
    /// A name not yet used in `dir_idx`.
    fn fresh_name(&mut self, dir_idx: u32, kind: NameKind) -> Vec<u8> {
        loop {
            let dir = &mut self.dirs[dir_idx as usize];
            let seq = dir.next_seq;
            dir.next_seq += 1;
            let name = names::entry_name(&mut self.rng, kind, seq);
            if self.taken.insert((dir_idx, name.clone())) {
                return name;
            }
        }
    }

    fn add_dir(&mut self, parent_idx: u32, name: Option<Vec<u8>>) -> u32 {
        let name = match name {
            Some(name) if self.taken.insert((parent_idx, name.clone())) => name,
            _ => self.fresh_name(parent_idx, NameKind::Dir),
        };
        let depth = self.dirs[parent_idx as usize].depth + 1;
        self.dirs.push(new_dir(parent_idx, depth, name, false));
        (self.dirs.len() - 1) as u32
    }

    /// `depth` directories each inside the one before, all named `d`; returns the files per
    /// directory: `n_files` spread evenly, the first levels taking the remainder.
    fn plan_chain(&mut self, depth: u64, n_files: u64) -> Vec<u64> {
        let mut parent_idx = 0;
        for _ in 0..depth {
            parent_idx = self.add_dir(parent_idx, Some(b"d".to_vec()));
            self.dirs[parent_idx as usize].in_chain = true;
        }
        let levels = depth + 1;
        (0..levels).map(|level| n_files / levels + u64::from(level < n_files % levels)).collect()
    }

    fn plan_dirs(&mut self, n_dirs: u64) {
        let chains = chain_lengths(n_dirs);
        let n_shallow = n_dirs - 1 - chains.iter().sum::<u64>();
        let mut by_depth: Vec<Vec<u32>> = vec![vec![0]];
        for count in shallow_depth_counts(n_shallow) {
            let parents = by_depth.last().expect("depth 0 holds the root").clone();
            let level: Vec<u32> = (0..count)
                .map(|_| {
                    let parent_idx = parents[self.rng.skewed_index(parents.len(), 1.7)];
                    self.add_dir(parent_idx, None)
                })
                .collect();
            by_depth.push(level);
        }
        for (chain_no, &length) in chains.iter().enumerate() {
            let attach_depth = CHAIN_ATTACH_DEPTHS[chain_no].min(by_depth.len() - 1);
            let candidates = &by_depth[attach_depth];
            let mut parent_idx = candidates[self.rng.index(candidates.len())];
            for level in 0..length {
                let name = chain_dir_name(chain_no, level);
                parent_idx = self.add_dir(parent_idx, Some(name));
                self.dirs[parent_idx as usize].in_chain = true;
            }
        }
    }

    /// How many regular files each directory gets.
    fn spread_files(&mut self, n_files: u64) -> Vec<u64> {
        let n_dirs = self.dirs.len();
        let mut per_dir = vec![0u64; n_dirs];
        let candidates: Vec<usize> =
            (0..n_dirs).filter(|&idx| (3..=5).contains(&self.dirs[idx].depth) && !self.dirs[idx].in_chain).collect();
        let mut assigned = 0;
        for share in BIG_DIR_SHARES_PER_MILLION {
            let count = n_files * share / PER_MILLION;
            if candidates.is_empty() || count == 0 {
                break;
            }
            let idx = candidates[self.rng.index(candidates.len())];
            if per_dir[idx] == 0 {
                per_dir[idx] = count;
                assigned += count;
            }
        }
        let weights: Vec<f64> = (0..n_dirs)
            .map(|idx| match (per_dir[idx] > 0, self.dirs[idx].in_chain) {
                (true, _) => 0.0,
                (false, true) => 0.05,
                (false, false) => (1.2 * self.rng.normal()).exp(),
            })
            .collect();
        let rest = n_files - assigned;
        let total_weight: f64 = weights.iter().sum();
        let mut spread = 0;
        for (count, weight) in per_dir.iter_mut().zip(&weights) {
            let share = (rest as f64 * weight / total_weight) as u64;
            *count += share;
            spread += share;
        }
        // Rounding down left fewer than n_dirs files over: hand them out by weight.
        let cumulative: Vec<f64> = weights
            .iter()
            .scan(0.0, |sum, weight| {
                *sum += weight;
                Some(*sum)
            })
            .collect();
        for _ in spread..rest {
            let point = self.rng.unit() * total_weight;
            let idx = cumulative.partition_point(|&sum| sum <= point).min(n_dirs - 1);
            per_dir[idx] += 1;
        }
        per_dir
    }

    fn plan_files(&mut self, per_dir: &[u64], n_files: u64) {
        let n_big = (n_files * BIG_FILES_PER_REFERENCE / REFERENCE_FILES).max(1).min(n_files);
        let n_sparse = (n_files * SPARSE_FILES_PER_REFERENCE / REFERENCE_FILES).max(1);
        let mut special: HashMap<u64, FileKind> = HashMap::new();
        for (kind, count) in [(FileKind::Allocated, n_big), (FileKind::Sparse, n_sparse)] {
            let mut placed = 0;
            while placed < count && special.len() < n_files as usize {
                if special.insert(self.rng.below(n_files), kind).is_none() {
                    placed += 1;
                }
            }
        }
        let newline_ordinal = self.rng.below(n_files);
        let mut ordinal = 0;
        for (dir_idx, &count) in per_dir.iter().enumerate() {
            for _ in 0..count {
                let kind = special.get(&ordinal).copied().unwrap_or(FileKind::Written);
                let size_bytes = match kind {
                    FileKind::Written => regular_size(&mut self.rng),
                    FileKind::Allocated => self.rng.log_uniform(MIB, 64 * MIB + 1),
                    FileKind::Sparse => self.rng.log_uniform(GIB, 8 * GIB),
                };
                let name = if ordinal == newline_ordinal {
                    self.newline_name(dir_idx as u32)
                } else {
                    self.fresh_name(dir_idx as u32, NameKind::File)
                };
                self.dirs[dir_idx].files.push(FilePlan { name, size_bytes, kind });
                ordinal += 1;
            }
        }
    }

    fn newline_name(&mut self, dir_idx: u32) -> Vec<u8> {
        let dir = &mut self.dirs[dir_idx as usize];
        let name = names::newline_name(dir.next_seq);
        dir.next_seq += 1;
        self.taken.insert((dir_idx, name.clone()));
        name
    }

    fn plan_symlinks(&mut self, n_symlinks: u64) {
        for _ in 0..n_symlinks {
            let dir_idx = self.rng.index(self.dirs.len()) as u32;
            let name = self.fresh_name(dir_idx, NameKind::Symlink);
            let target = self.symlink_target(dir_idx, &name);
            self.dirs[dir_idx as usize].symlinks.push(SymlinkPlan { name, target });
        }
    }

    fn symlink_target(&mut self, from_idx: u32, own_name: &[u8]) -> Vec<u8> {
        let roll = self.rng.unit();
        let depth = self.dirs[from_idx as usize].depth;
        if roll < 0.30 {
            match self.random_file() {
                Some((dir_idx, file_idx)) => {
                    let name = self.dirs[dir_idx as usize].files[file_idx as usize].name.clone();
                    self.relative_path(from_idx, dir_idx, Some(&name))
                }
                None => b"no_such_file".to_vec(),
            }
        } else if roll < 0.45 {
            let to_idx = self.rng.index(self.dirs.len()) as u32;
            self.relative_path(from_idx, to_idx, None)
        } else if roll < 0.65 {
            format!("missing_{}/{}", self.rng.below(1000), "gone.txt").into_bytes()
        } else if roll < 0.75 {
            let loops: &[&[u8]] = if depth >= 2 { &[b".", b"..", b"../.."] } else { &[b".", b".."] };
            loops[self.rng.index(loops.len())].to_vec()
        } else if roll < 0.87 {
            const OUTSIDE: [&str; 5] = ["/usr/share", "/etc/hostname", "/dev/null", "/nonexistent/dfdu-bench", "/tmp"];
            OUTSIDE[self.rng.index(OUTSIDE.len())].as_bytes().to_vec()
        } else if roll < 0.94 {
            own_name.to_vec()
        } else {
            // A link to a link: another symlink in this directory, or a dangling one if none.
            let links = &self.dirs[from_idx as usize].symlinks;
            match links.len() {
                0 => b"missing_link".to_vec(),
                n => links[self.rng.index(n)].name.clone(),
            }
        }
    }

    /// A random (directory, file) pair, or None if a few tries find only empty directories.
    fn random_file(&mut self) -> Option<(u32, u32)> {
        for _ in 0..64 {
            let dir_idx = self.rng.index(self.dirs.len());
            let n_files = self.dirs[dir_idx].files.len();
            if n_files > 0 {
                return Some((dir_idx as u32, self.rng.index(n_files) as u32));
            }
        }
        None
    }

    /// The path from directory `from_idx` to directory `to_idx` (and `name` in it), going up
    /// to the root and down again: `../../a/b/name`.
    fn relative_path(&self, from_idx: u32, to_idx: u32, name: Option<&[u8]>) -> Vec<u8> {
        let mut path = b"../".repeat(self.dirs[from_idx as usize].depth as usize);
        let mut down: Vec<&[u8]> = Vec::new();
        let mut idx = to_idx;
        while idx != 0 {
            down.push(&self.dirs[idx as usize].name);
            idx = self.dirs[idx as usize].parent_idx;
        }
        down.reverse();
        down.extend(name);
        path.extend_from_slice(&down.join(&b'/'));
        if path.is_empty() {
            path.push(b'.');
        }
        if path.ends_with(b"/") {
            path.pop();
        }
        path
    }

    fn plan_links(&mut self, n_names: u64, n_inodes: u64) -> Vec<LinkPlan> {
        let mut targets: Vec<(u32, u32)> = Vec::new();
        let mut chosen = HashSet::new();
        for _ in 0..n_inodes * 64 {
            if targets.len() as u64 == n_inodes {
                break;
            }
            let Some((dir_idx, file_idx)) = self.random_file() else {
                break;
            };
            let file = &self.dirs[dir_idx as usize].files[file_idx as usize];
            let linkable = file.kind == FileKind::Written && file.size_bytes < MIB;
            if linkable && chosen.insert((dir_idx, file_idx)) {
                targets.push((dir_idx, file_idx));
            }
        }
        if targets.is_empty() {
            return Vec::new();
        }
        let mut names_per_target = vec![1u64; targets.len()];
        for _ in targets.len() as u64..n_names {
            names_per_target[self.rng.skewed_index(targets.len(), 3.0)] += 1;
        }
        let mut links = Vec::with_capacity(n_names as usize);
        for (&(target_dir_idx, target_file_idx), &count) in targets.iter().zip(&names_per_target) {
            for _ in 0..count {
                let dir_idx =
                    if self.rng.chance(0.25) { target_dir_idx } else { self.rng.index(self.dirs.len()) as u32 };
                let name = self.fresh_name(dir_idx, NameKind::File);
                links.push(LinkPlan { dir_idx, name, target_dir_idx, target_file_idx });
            }
        }
        links
    }
}

/// 15% empty, 68% 1 B–4 KiB, the rest mostly 4–16 KiB with a thin tail to 1 MiB; all
/// log-uniform, which makes the median small (about 70 B) as in real source trees.
fn regular_size(rng: &mut Rng) -> u64 {
    let roll = rng.unit();
    if roll < 0.15 {
        0
    } else if roll < 0.83 {
        rng.log_uniform(1, 4 * KIB + 1)
    } else if rng.chance(0.975) {
        rng.log_uniform(4 * KIB + 1, 16 * KIB + 1)
    } else {
        rng.log_uniform(16 * KIB + 1, MIB)
    }
}

/// The deep chains, shortened proportionally when the tree has too few directories.
fn chain_lengths(n_dirs: u64) -> Vec<u64> {
    let full: u64 = CHAIN_LENGTHS.iter().sum();
    let budget = (n_dirs - 1) / 3;
    CHAIN_LENGTHS
        .iter()
        .map(|&length| if budget >= full { length } else { length * budget / full })
        .filter(|&length| length > 0)
        .collect()
}

/// Directories outside the chains per depth 1, 2, …; no depth is empty below a full one.
fn shallow_depth_counts(n_shallow: u64) -> Vec<u64> {
    let mut counts: Vec<u64> = DEPTH_PER_MILLE.iter().map(|&pm| n_shallow * pm / 1000).collect();
    let spread: u64 = counts.iter().sum();
    counts[3] += n_shallow - spread;
    for depth in 1..counts.len() {
        if counts[depth - 1] == 0 {
            counts[depth - 1] = counts[depth];
            counts[depth] = 0;
        }
    }
    counts.retain(|&count| count > 0);
    counts
}

fn chain_dir_name(chain_no: usize, level: u64) -> Vec<u8> {
    match chain_no {
        0 => format!("nested_{level}").into_bytes(),
        1 if level % 2 == 0 => b"node_modules".to_vec(),
        1 => format!("pkg-{level}").into_bytes(),
        _ => format!("l{level}").into_bytes(),
    }
}
