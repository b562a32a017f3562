//! `cargo xtask bench`: the whole benchmark in one command, as dfdu's benchmark page
//! describes it.
//!
//! 1. Build dfdu in release mode (`cargo build --release --package dfdu --bin dfdu` in the
//!    workspace this harness belongs to), unless `--dfdu PATH` names a binary to time.
//! 2. Generate the tree once at `DIR/tree` (`gen`); its marker `DIR/tree.gentree.json` is
//!    the stamp that records the parameters, so a later run with the same ones reuses it.
//! 3. Time dfdu and every peer found on PATH (`run`) and write the Markdown table to
//!    `DIR/results-<UTC date and time>.md`.
//!
//! DIR is the benchmark's own directory: the results sit next to the tree, not inside it,
//! so they never change what is measured.

use std::ffi::OsString;
use std::path::PathBuf;

use crate::cli::{Arg, Args};
use crate::image::{self, FsArgs};
use crate::plan::{Shape, Sizes};
use crate::{gen, machine, run, tools};

pub const HELP: &str = "\
cargo xtask bench [--entries N] [--wide N] [--seed N] [--runs N] [--cold] [--tools LIST]
                  [--fs btrfs|xfs|ext4 [--mount M] [--sharing]] DIR

Builds dfdu in release mode, generates a seeded test tree in DIR/tree once (the same
arguments reuse it; DIR/tree.gentree.json records them), times dfdu and every peer found
on PATH (gdu, dua, pdu, dust, diskus, ncdu, GNU du, and the floor walker `dfdu floor` as a
yardstick), and writes a Markdown table to DIR/results-<date>T<time>Z.md.

  --entries N   entries in the tree, root included (default 1000000)
  --wide N      instead: N files in one directory
  --shape S     tree (default), wide or chain; --depth N levels for a chain (default 1000)
  --sizes S     mixed (default) or none (every file empty: only directories use blocks)
  --seed N      generator seed (default 1); the same seed gives the same tree
  --runs N      counted runs per tool (default 10), interleaved round-robin
  --warmup N    uncounted runs per tool first (default 2; 0 with --cold)
  --cold        drop the page cache before every run (Linux, root)
  --tools LIST  time only these, comma-separated, for example dfdu,du (see
                cargo xtask run --help for the names)
  --dfdu PATH   time this dfdu binary instead of building one
  --force       regenerate DIR/tree even if it was made with other arguments
  --fs FS       (Linux, root) the tree on its own btrfs, XFS or ext4: a sparse image
                DIR/FS.img, made once and loop-mounted at M (the tree is M/tree);
                later runs reuse it (see cargo xtask gen --help); umount M when done
  --mount M     the image's mount point (default /mnt/dfdu-FS-<name of DIR>)
  --sharing     (with --fs btrfs|xfs) what the sharing figures cost: an image of its own
                (DIR/FS-sharing.img; XFS with -m rmapbt=1), a tenth of the tree's
                top-level directories copied with cp --reflink=always into M/copies, on
                btrfs two read-only snapshots M/snap1 and M/snap2; M itself is timed, by
                default with dfdu, dfdu-scan, dfdu-scan-noshared and dfdu-scan-shared
  --dupes S|T|L the duplicate finders instead (see cargo xtask bench --dupes S --help)

Disk: the default 1M tree takes about 7 GB (du -s), 1M files in one folder about 7.3 GB;
with --sizes none about 0.2 GB per million entries (a wide folder 0.04 GB), but still one
inode per entry (see df -i).";

pub fn main(args: Vec<OsString>) -> Result<(), String> {
    if args.iter().take_while(|a| *a != "--").any(|a| a == "--dupes" || a.to_string_lossy().starts_with("--dupes=")) {
        return crate::dupes_bench::main(args);
    }
    let mut args = Args::new(args);
    let (mut entries, mut wide, mut depth, mut shape, mut sizes, mut seed) = (None, None, None, None, Sizes::Mixed, 1);
    let mut gen_extra: Vec<OsString> = Vec::new();
    let mut run_extra: Vec<OsString> = Vec::new();
    let mut dfdu: Option<PathBuf> = None;
    let mut dir: Option<PathBuf> = None;
    let mut fs = FsArgs::new();
    let mut sharing = false;
    while let Some(arg) = args.next()? {
        let name = match arg {
            Arg::Opt(name) if fs.take(&name, &mut args)? => continue,
            Arg::Pos(path) if dir.is_none() => {
                dir = Some(PathBuf::from(path));
                continue;
            }
            Arg::Pos(path) => return Err(format!("a second DIR '{}': give one DIR", path.to_string_lossy())),
            Arg::Opt(name) => name,
        };
        match name.as_str() {
            "--entries" => entries = Some(args.value_u64(&name)?),
            "--wide" => wide = Some(args.value_u64(&name)?),
            "--depth" => depth = Some(args.value_u64(&name)?),
            "--seed" => seed = args.value_u64(&name)?,
            "--shape" => shape = Some(Shape::parse(&args.value(&name)?.to_string_lossy())?),
            "--sizes" => sizes = Sizes::parse(&args.value(&name)?.to_string_lossy())?,
            "--force" => {
                args.no_value(&name)?;
                gen_extra.push(name.into());
            }
            "--sharing" => {
                args.no_value(&name)?;
                sharing = true;
            }
            "--cold" => {
                args.no_value(&name)?;
                run_extra.push(name.into());
            }
            "--runs" | "--warmup" => {
                let value = args.value_u64(&name)?;
                run_extra.extend([name.into(), value.to_string().into()]);
            }
            "--tools" => {
                let value = args.value(&name)?;
                tools::parse_list(&value.to_string_lossy())?;
                run_extra.extend([name.into(), value]);
            }
            "--dfdu" => dfdu = Some(PathBuf::from(args.value(&name)?)),
            _ => return Err(format!("unknown option '{name}' (see cargo xtask bench --help)")),
        }
    }
    let dir = dir.ok_or_else(|| "DIR is missing (see cargo xtask bench --help)".to_string())?;
    let id = gen::tree_id(entries, wide, shape, depth, sizes, seed)?;
    fs.check()?;
    let dfdu = match dfdu {
        Some(path) if path.is_file() => path,
        Some(path) => return Err(format!("--dfdu {}: no such file", path.display())),
        None => tools::build_dfdu()?,
    };

    let sharing_fs = match (sharing, fs.fs) {
        (false, _) => None,
        (true, Some(kind @ (image::Fs::Btrfs | image::Fs::Xfs))) => Some(kind),
        (true, _) => return Err("--sharing needs --fs btrfs or --fs xfs".to_string()),
    };
    let tree = match fs.fs {
        Some(kind) => image::prepare(kind, &dir, fs.mount, &id, sharing)?,
        None => dir.join("tree"),
    };
    let mut gen_args: Vec<OsString> = id.options().split(' ').map(OsString::from).collect();
    gen_args.extend(gen_extra);
    gen_args.push(tree.clone().into());
    gen::main(gen_args)?;
    let tree = match sharing_fs {
        Some(kind) => {
            if !run_extra.iter().any(|a| a == "--tools") {
                run_extra.extend(["--tools".into(), "dfdu,dfdu-scan,dfdu-scan-noshared,dfdu-scan-shared".into()]);
            }
            image::add_sharing(kind, &tree)?
        }
        None => tree,
    };

    let (date, time) = machine::utc_now();
    let results = dir.join(format!("results-{date}T{}Z.md", time.replace(':', "")));
    let mut run_args: Vec<OsString> = vec!["--dir".into(), tree.into(), "--dfdu".into(), dfdu.into()];
    run_args.extend(run_extra);
    run_args.extend(["--out".into(), results.into()]);
    run::main(run_args)
}
