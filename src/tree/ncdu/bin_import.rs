//! The binary reader: ncdu 2.6+'s `-O` export (described in `mod.rs`) into the arena. The
//! blocks are checked against the index and decompressed; then the tree is walked from the
//! root, depth first with an explicit stack, each directory's children gathered along
//! their `prev` chain (last to first) and handed to the JSON reader's staging in their
//! written order, so both formats give the same arena.

use super::import::{ImportError, Imported, Importer, Info, Open};
use super::{zstd, BIN_SIGNATURE, BIN_TYPE_DATA, BIN_TYPE_INDEX, KEY, MAX_DEPTH, MAX_NAME, MAX_SIZE, TYPE};
use crate::tree::arena::{self, Arena};
use std::collections::HashMap;

/// A data block's decompressed size must stay below this (the format's limit).
const MAX_BLOCK_BYTES: usize = 1 << 24;
/// The fewest bytes an item takes (map, type, a name of no bytes, break): the reader
/// follows at most one reference per that many bytes of data, so a loop of references
/// ends in an error.
const MIN_ITEM_BYTES: u64 = 6;

fn fail<T>(offset: u64, msg: impl Into<String>) -> Result<T, ImportError> {
    Err(ImportError { offset, msg: msg.into() })
}

/// The decompressed data blocks by number, each with its offset in the file.
struct Blocks {
    data: HashMap<u64, (u64, Vec<u8>)>,
    root: u64,
    /// References still allowed (see `MIN_ITEM_BYTES`).
    budget: u64,
}

fn be32(b: &[u8]) -> u32 {
    u32::from_be_bytes([b[0], b[1], b[2], b[3]])
}

/// Reads the blocks after the signature and checks each data block against the index.
fn read_blocks(file: &[u8]) -> Result<Blocks, ImportError> {
    if !file.starts_with(BIN_SIGNATURE) {
        return fail(0, "not an ncdu binary export");
    }
    let mut at = BIN_SIGNATURE.len();
    let mut found: HashMap<u64, (u64, u64)> = HashMap::new();
    let mut blocks = Blocks { data: HashMap::new(), root: 0, budget: 0 };
    let mut index: Option<&[u8]> = None;
    while at < file.len() {
        let off = at as u64;
        if index.is_some() {
            return fail(off, "data after the index block");
        }
        if file.len() - at < 8 {
            return fail(off, "a block cut short");
        }
        let type_len = be32(&file[at..]);
        let len = (type_len & 0x0fff_ffff) as usize;
        if len < 8 || len > file.len() - at {
            return fail(off, format!("a block of {len} bytes where {} are left", file.len() - at));
        }
        if be32(&file[at + len - 4..]) != type_len {
            return fail(off, "a block whose closing length is not its opening one");
        }
        let content = &file[at + 4..at + len - 4];
        match type_len >> 28 {
            BIN_TYPE_DATA => {
                if content.len() < 4 {
                    return fail(off, "a data block without a block number");
                }
                let number = be32(content) as u64;
                if found.insert(number, (off, len as u64)).is_some() {
                    return fail(off, format!("a second data block number {number}"));
                }
                let data = zstd::decode_frame(&content[4..], MAX_BLOCK_BYTES)
                    .or_else(|e| fail(off, format!("data block {number}: {e}")))?;
                blocks.budget += data.len() as u64 / MIN_ITEM_BYTES + 1;
                blocks.data.insert(number, (off, data));
            }
            BIN_TYPE_INDEX => index = Some(content),
            // Readers skip block types they do not know.
            _ => {}
        }
        at += len;
    }
    let Some(index) = index else {
        return fail(file.len() as u64, "no index block at the end (a file cut short?)");
    };
    let index_at = file.len() as u64 - index.len() as u64 - 4;
    if index.len() < 8 || index.len() % 8 != 0 {
        return fail(index_at, "an index block whose length is not a multiple of 8");
    }
    let entries: Vec<u64> = index.chunks(8).map(|c| u64::from_be_bytes(c.try_into().unwrap_or([0; 8]))).collect();
    let (root, per_block) = entries.split_last().expect("at least one entry");
    for (number, &e) in per_block.iter().enumerate() {
        let want = (e != 0).then_some((e >> 24, e & 0xff_ffff));
        if found.remove(&(number as u64)) != want {
            return fail(index_at, format!("index entry {number} does not match data block {number}"));
        }
    }
    if let Some((number, (off, _))) = found.into_iter().next() {
        return fail(off, format!("data block {number} is not in the index"));
    }
    blocks.root = *root;
    Ok(blocks)
}

/// One item as read: the JSON reader's `Info` plus what the binary format adds.
struct Item {
    info: Info,
    kind: i64,
    at: u64,
    prev: Option<u64>,
    sub: Option<u64>,
}

/// A CBOR cursor over one block's data.
struct Cbor<'d> {
    d: &'d [u8],
    at: usize,
}

impl Cbor<'_> {
    fn byte(&mut self) -> Result<u8, String> {
        let b = *self.d.get(self.at).ok_or("an item runs past its block's end")?;
        self.at += 1;
        Ok(b)
    }

    /// A head: (major type, argument); `None` for an indefinite length.
    fn head(&mut self) -> Result<(u8, Option<u64>), String> {
        let b = self.byte()?;
        let (major, info) = (b >> 5, b & 31);
        let n = match info {
            0..=23 => return Ok((major, Some(info as u64))),
            24 => 1,
            25 => 2,
            26 => 4,
            27 => 8,
            31 => return Ok((major, None)),
            _ => return Err(format!("a reserved CBOR head 0x{b:02x}")),
        };
        let mut v = 0u64;
        for _ in 0..n {
            v = v << 8 | self.byte()? as u64;
        }
        Ok((major, Some(v)))
    }

    /// A head after any tags (which readers skip).
    fn value_head(&mut self) -> Result<(u8, Option<u64>), String> {
        for _ in 0..16 {
            match self.head()? {
                (6, Some(_)) => continue,
                h => return Ok(h),
            }
        }
        Err("too many CBOR tags in a row".into())
    }

    fn uint(&mut self, what: &str) -> Result<u64, String> {
        match self.value_head()? {
            (0, Some(v)) => Ok(v),
            _ => Err(format!("{what} is not an unsigned integer")),
        }
    }

    /// An integer of either sign (an item type).
    fn int(&mut self) -> Result<i64, String> {
        match self.value_head()? {
            (0, Some(v)) => Ok(v.min(i64::MAX as u64) as i64),
            (1, Some(v)) => Ok(-1 - v.min(i64::MAX as u64 - 1) as i64),
            _ => Err("the type is not an integer".into()),
        }
    }

    /// A reference from the item at itemref `from`: absolute, or bytes back in its block.
    fn reference(&mut self, from: u64) -> Result<u64, String> {
        match self.value_head()? {
            (0, Some(v)) => Ok(v),
            (1, Some(back)) if back < from & 0xff_ffff => Ok(from - back - 1),
            (1, Some(_)) => Err("a reference to before its block's start".into()),
            _ => Err("a reference that is not an integer".into()),
        }
    }

    fn bytes(&mut self, out: &mut Vec<u8>) -> Result<(), String> {
        match self.value_head()? {
            (2 | 3, Some(n)) if n as usize > MAX_NAME => Err("a name longer than 32 KiB".into()),
            (2 | 3, Some(n)) => {
                let end = self.at + n as usize;
                let name = self.d.get(self.at..end).ok_or("a name runs past its block's end")?;
                out.clear();
                out.extend_from_slice(name);
                self.at = end;
                Ok(())
            }
            _ => Err("the name is not a byte string of known length".into()),
        }
    }

    /// Skips one value of any type, to a bounded depth.
    fn skip(&mut self, depth: u32) -> Result<(), String> {
        if depth > 16 {
            return Err("an unknown value nested too deeply".into());
        }
        let (major, arg) = self.value_head()?;
        match (major, arg) {
            (0 | 1, Some(_)) => Ok(()),
            (2 | 3, Some(n)) => {
                self.at =
                    self.at.checked_add(n as usize).filter(|&e| e <= self.d.len()).ok_or("a string past the end")?;
                Ok(())
            }
            (7, Some(_)) => Ok(()),
            (4 | 5, Some(n)) => {
                let n = if major == 5 { n.saturating_mul(2) } else { n };
                for _ in 0..n {
                    self.skip(depth + 1)?;
                }
                Ok(())
            }
            (2..=5, None) => {
                while self.d.get(self.at) != Some(&0xff) {
                    self.skip(depth + 1)?;
                }
                self.at += 1;
                Ok(())
            }
            _ => Err(format!("an unexpected CBOR value (major type {major})")),
        }
    }
}

impl Blocks {
    fn item(&mut self, r: u64) -> Result<Item, ImportError> {
        let (number, offset) = (r >> 24, (r & 0xff_ffff) as usize);
        let Some((file_at, data)) = self.data.get(&number) else {
            return fail(0, format!("a reference to data block {number}, which the file does not have"));
        };
        let Some(budget) = self.budget.checked_sub(1) else {
            return fail(*file_at, "more references than the data has items (a loop?)");
        };
        self.budget = budget;
        let mut c = Cbor { d: data, at: offset };
        let at = |msg: String| ImportError { offset: *file_at, msg: format!("item {offset} of block {number}: {msg}") };
        parse_item(&mut c, r).map_err(at)
    }
}

fn parse_item(c: &mut Cbor, r: u64) -> Result<Item, String> {
    if c.byte()? != 0xbf {
        return Err("not an item (a CBOR map of indefinite length)".into());
    }
    let mut it = Item { info: Info::default(), kind: i64::MIN, at: r, prev: None, sub: None };
    let mut rderr = None;
    loop {
        if c.d.get(c.at) == Some(&0xff) {
            c.at += 1;
            break;
        }
        let key = match c.value_head()? {
            (0, Some(k)) => k,
            _ => {
                // Not a key dfdu knows (nor ncdu): its value goes too.
                c.skip(0)?;
                u64::MAX
            }
        };
        let size = |c: &mut Cbor, what| {
            c.uint(what).and_then(|v| if v > MAX_SIZE { Err(format!("{what} out of range")) } else { Ok(v) })
        };
        match key {
            k if k == KEY.kind as u64 => it.kind = c.int()?,
            k if k == KEY.name as u64 => {
                c.bytes(&mut it.info.name)?;
                it.info.has_name = true;
            }
            k if k == KEY.prev as u64 => it.prev = Some(c.reference(r)?),
            k if k == KEY.sub as u64 => it.sub = Some(c.reference(r)?),
            k if k == KEY.asize as u64 => it.info.asize = size(c, "asize")?,
            k if k == KEY.dsize as u64 => it.info.dsize = size(c, "dsize")?,
            k if k == KEY.dev as u64 => it.info.dev = Some(c.uint("dev")?),
            k if k == KEY.ino as u64 => it.info.ino = c.uint("ino")?,
            k if k == KEY.nlink as u64 => {
                it.info.nlink = c.uint("nlink")?;
                if it.info.nlink > u32::MAX as u64 {
                    return Err("nlink out of range".into());
                }
            }
            k if k == KEY.rderr as u64 => {
                rderr = match c.value_head()? {
                    (7, Some(20)) => Some(false),
                    (7, Some(21)) => Some(true),
                    _ => return Err("rderr is not true or false".into()),
                }
            }
            u64::MAX => {}
            _ => c.skip(0)?,
        }
    }
    if it.kind == i64::MIN {
        return Err("an item without a type".into());
    }
    if !it.info.has_name {
        return Err("an item without a name".into());
    }
    let info = &mut it.info;
    match it.kind {
        k if k == TYPE.dir as i64 => info.read_error = rderr == Some(true),
        k if k == TYPE.file as i64 => {}
        k if k == TYPE.hardlink as i64 => info.hlnkc = true,
        k if k == TYPE.error as i64 => info.read_error = true,
        k if k == TYPE.other_fs as i64 => info.excluded = Some(arena::F_OTHER_FS),
        // Unknown negative types are exclusions, as in ncdu's reader.
        k if k < 0 => info.excluded = Some(arena::F_EXCLUDED),
        // And unknown positive ones entries that are not regular files.
        _ => info.notreg = true,
    }
    if info.excluded.is_some() || info.read_error && it.kind != TYPE.dir as i64 {
        (info.asize, info.dsize) = (0, 0);
    }
    Ok(it)
}

/// One directory being read: its record and its children not yet staged, last first.
struct Frame {
    open: Open,
    kids: Vec<Item>,
}

/// The children of directory item `dir`, last first (the order of the `prev` chain).
fn children(b: &mut Blocks, dir: &Item) -> Result<Vec<Item>, ImportError> {
    let mut kids = Vec::new();
    let mut next = dir.sub;
    while let Some(r) = next {
        let kid = b.item(r)?;
        next = kid.prev;
        kids.push(kid);
    }
    Ok(kids)
}

/// Whether item type `kind` is a mount point ncdu did not enter (staged as a directory
/// with no children, as the JSON reader stages an excluded directory).
fn unentered_dir(kind: i64) -> bool {
    kind == TYPE.other_fs as i64 || kind == TYPE.kernfs as i64
}

/// Reads ncdu's binary export `file` into `arena`; the root directory is returned.
pub fn import_binary(file: &[u8], arena: &Arena) -> Result<Imported, ImportError> {
    let mut b = read_blocks(file)?;
    let mut im = Importer::without_input(arena);
    let root = b.item(b.root)?;
    if root.kind != TYPE.dir as i64 {
        return fail(0, "the root item is not a directory");
    }
    let open = im.open_dir(&root.info, None)?;
    let root_dir = open.dir;
    let kids = children(&mut b, &root)?;
    let mut stack = vec![Frame { open, kids }];
    let mut root_info = Some(root.info);
    while !stack.is_empty() {
        let depth = stack.len();
        let top = stack.last_mut().expect("the frame just looked at");
        let Some(kid) = top.kids.pop() else {
            let done = stack.pop().expect("the frame just looked at");
            im.close_dir(done.open, if stack.is_empty() { root_info.take() } else { None })?;
            continue;
        };
        im.set_offset(b.data.get(&(kid.at >> 24)).map_or(0, |d| d.0));
        if kid.kind == TYPE.dir as i64 {
            if depth >= MAX_DEPTH {
                return fail(0, "directories nested too deeply");
            }
            let open = im.stage_dir(&mut top.open, &kid.info)?;
            let kids = children(&mut b, &kid)?;
            stack.push(Frame { open, kids });
        } else {
            im.stage_leaf(&mut top.open, &kid.info, unentered_dir(kid.kind));
        }
    }
    Ok(Imported { root: root_dir, progname: "ncdu binary".into() })
}
