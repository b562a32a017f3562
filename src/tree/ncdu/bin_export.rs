//! The binary writer: the arena out as ncdu 2.6+ writes `ncdu -O` (the format is described
//! in `mod.rs`). Each item is written once its children are, so every `sub` and `prev`
//! points backwards; the items fill data blocks of about 64 KiB, each one zstd frame of
//! stored (raw) zstd blocks, so no compressor is carried in the binary; the index block
//! comes last.

use super::{zstd, BIN_SIGNATURE, BIN_TYPE_DATA, BIN_TYPE_INDEX, KEY, TYPE};
use crate::meta::Kind;
use crate::tree::arena::{self, Arena};
use std::io::{self, Write};

/// Uncompressed bytes a data block holds before the next item starts a new one (ncdu's
/// first size).
const BLOCK_BYTES: usize = 64 * 1024;

/// Appends a CBOR head: major type `major` (0 unsigned, 1 negative, 2 bytes) and its
/// argument in the shortest form.
fn head(out: &mut Vec<u8>, major: u8, v: u64) {
    let m = major << 5;
    if v < 24 {
        out.push(m | v as u8);
    } else if v <= u8::MAX as u64 {
        out.extend_from_slice(&[m | 24, v as u8]);
    } else if v <= u16::MAX as u64 {
        out.push(m | 25);
        out.extend_from_slice(&(v as u16).to_be_bytes());
    } else if v <= u32::MAX as u64 {
        out.push(m | 26);
        out.extend_from_slice(&(v as u32).to_be_bytes());
    } else {
        out.push(m | 27);
        out.extend_from_slice(&v.to_be_bytes());
    }
}

fn uint(out: &mut Vec<u8>, key: u8, v: u64) {
    head(out, 0, key as u64);
    head(out, 0, v);
}

/// What one item says; the writer fills in `prev` and `sub` references.
struct Item<'n> {
    kind: i8,
    name: &'n [u8],
    prev: Option<u64>,
    sizes: Option<(u64, u64)>,
    dev: Option<u64>,
    /// A directory: read error flag (`Some(true)` here, `Some(false)` below), totals
    /// (disk, apparent, items) and its last child.
    rderr: Option<bool>,
    totals: Option<(u64, u64, u64)>,
    sub: Option<u64>,
    link: Option<(u64, u32)>,
}

/// Data blocks as they fill, and where each went in the file.
struct Blocks<'w> {
    w: &'w mut dyn Write,
    offset: u64,
    block: Vec<u8>,
    /// Index entries: (file offset << 24) | block length, by block number.
    index: Vec<u64>,
    frame: Vec<u8>,
}

impl Blocks<'_> {
    /// The itemref the next item gets.
    fn next_ref(&self) -> u64 {
        ((self.index.len() as u64) << 24) | self.block.len() as u64
    }

    /// A reference to `target` from the item at `from`: relative (negative) in the same
    /// block, absolute otherwise.
    fn reference(out: &mut Vec<u8>, key: u8, from: u64, target: u64) {
        head(out, 0, key as u64);
        if from >> 24 == target >> 24 {
            head(out, 1, from - target - 1);
        } else {
            head(out, 0, target);
        }
    }

    fn item(&mut self, it: &Item) -> io::Result<u64> {
        if self.block.len() >= BLOCK_BYTES {
            self.flush()?;
        }
        let at = self.next_ref();
        let out = &mut self.block;
        out.push(0xbf);
        head(out, 0, KEY.kind as u64);
        if it.kind < 0 {
            head(out, 1, (-1 - it.kind as i64) as u64);
        } else {
            head(out, 0, it.kind as u64);
        }
        head(out, 0, KEY.name as u64);
        head(out, 2, it.name.len() as u64);
        out.extend_from_slice(it.name);
        if let Some(p) = it.prev {
            Self::reference(out, KEY.prev, at, p);
        }
        if let Some((disk, apparent)) = it.sizes {
            uint(out, KEY.asize, apparent);
            uint(out, KEY.dsize, disk);
        }
        if let Some(dev) = it.dev {
            uint(out, KEY.dev, dev);
        }
        if let Some(e) = it.rderr {
            head(out, 0, KEY.rderr as u64);
            out.push(if e { 0xf5 } else { 0xf4 });
        }
        if let Some((disk, apparent, items)) = it.totals {
            uint(out, KEY.cumasize, apparent);
            uint(out, KEY.cumdsize, disk);
            uint(out, KEY.items, items);
        }
        if let Some(s) = it.sub {
            Self::reference(out, KEY.sub, at, s);
        }
        if let Some((ino, nlink)) = it.link {
            uint(out, KEY.ino, ino);
            uint(out, KEY.nlink, nlink as u64);
        }
        out.push(0xff);
        Ok(at)
    }

    /// Writes one block: its type and length, `content`, the same again.
    fn write_block(&mut self, kind: u32, content: &[u8]) -> io::Result<u64> {
        let len = content.len() as u64 + 8;
        let type_len = ((kind << 28) | len as u32).to_be_bytes();
        self.w.write_all(&type_len)?;
        self.w.write_all(content)?;
        self.w.write_all(&type_len)?;
        let at = self.offset;
        self.offset += len;
        Ok((at << 24) | len)
    }

    fn flush(&mut self) -> io::Result<()> {
        let mut frame = std::mem::take(&mut self.frame);
        frame.clear();
        frame.extend_from_slice(&(self.index.len() as u32).to_be_bytes());
        zstd::stored_frame(&self.block, &mut frame);
        let entry = self.write_block(BIN_TYPE_DATA, &frame)?;
        self.index.push(entry);
        self.block.clear();
        self.frame = frame;
        Ok(())
    }

    fn finish(mut self, root: u64) -> io::Result<()> {
        if !self.block.is_empty() {
            self.flush()?;
        }
        let mut content: Vec<u8> = self.index.iter().flat_map(|e| e.to_be_bytes()).collect();
        content.extend_from_slice(&root.to_be_bytes());
        self.write_block(BIN_TYPE_INDEX, &content)?;
        self.w.flush()
    }
}

/// The item of entry `id` that is not entered: a file, a link, an error, an exclusion.
fn leaf<'n>(a: &Arena, id: u32, name: &'n [u8], prev: Option<u64>) -> Item<'n> {
    let flags = a.flags(id);
    let mut it = Item { kind: 0, name, prev, sizes: None, dev: None, rderr: None, totals: None, sub: None, link: None };
    it.kind = if flags.is_loop() || flags.contains(arena::F_OTHER_FS) {
        TYPE.other_fs
    } else if flags.contains(arena::F_EXCLUDED) {
        TYPE.pattern
    } else if flags.contains(arena::F_ERROR) {
        TYPE.error
    } else {
        it.sizes = Some(a.own_sizes(id));
        match (flags.kind(), a.link_of(id).filter(|_| flags.contains(arena::F_HARDLINK))) {
            (_, Some((_, ino, nlink))) => {
                it.link = Some((ino, nlink));
                TYPE.hardlink
            }
            (Kind::File, None) => TYPE.file,
            _ => TYPE.other,
        }
    };
    it
}

/// The item of directory `dir`, its children written.
fn dir_item<'n>(a: &Arena, dir: u32, name: &'n [u8], prev: Option<u64>, sub: Option<u64>) -> Item<'n> {
    let flags = a.dir_flags(dir);
    let rderr = if flags.read_error() { Some(true) } else { flags.error_below().then_some(false) };
    Item {
        kind: TYPE.dir,
        name,
        prev,
        sizes: Some(a.dir_own(dir)),
        dev: a.dev_of(dir).or(a.dir_parent(dir).eq(&arena::NO_DIR).then_some(0)),
        rderr,
        totals: Some(a.dir_totals(dir)),
        sub,
        link: None,
    }
}

/// One directory being written: what is left of its children and its last item so far.
struct Frame {
    dir: u32,
    next: u32,
    end: u32,
    name_at: u32,
    name: Vec<u8>,
    last: Option<u64>,
}

fn frame(a: &Arena, dir: u32, name: Vec<u8>) -> Frame {
    let r = a.children(dir).unwrap_or(0..0);
    Frame { dir, next: r.start, end: r.end, name_at: a.names_at(dir), name, last: None }
}

/// Writes the tree under root directory `root` as ncdu's binary export.
pub fn export_binary(a: &Arena, root: u32, w: &mut dyn Write) -> io::Result<()> {
    w.write_all(BIN_SIGNATURE)?;
    let mut blocks =
        Blocks { w, offset: 8, block: Vec::with_capacity(BLOCK_BYTES + 1024), index: Vec::new(), frame: Vec::new() };
    let mut stack = vec![frame(a, root, a.dir_name(root))];
    let mut name = Vec::new();
    while let Some(top) = stack.last_mut() {
        if top.next == top.end {
            let done = stack.pop().expect("the frame just looked at");
            let prev = stack.last().and_then(|p| p.last);
            let at = blocks.item(&dir_item(a, done.dir, &done.name, prev, done.last))?;
            match stack.last_mut() {
                Some(parent) => parent.last = Some(at),
                None => return blocks.finish(at),
            }
            continue;
        }
        let id = top.next;
        top.next += 1;
        top.name_at = a.read_name(top.name_at, &mut name);
        let flags = a.flags(id);
        if flags.contains(arena::F_REMOVED) {
            continue;
        }
        let special = arena::F_EXCLUDED | arena::F_ERROR | arena::F_OTHER_FS;
        if flags.is_dir() && !flags.intersects(special) {
            let sub = frame(a, a.dir_of(id), name.clone());
            stack.push(sub);
        } else {
            let prev = top.last;
            top.last = Some(blocks.item(&leaf(a, id, &name, prev))?);
        }
    }
    Ok(())
}
