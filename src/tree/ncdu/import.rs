//! The reader: a streaming parser for ncdu's export (and gdu's and dfdu's), straight into
//! the arena. A directory's children are staged compactly (`Staged`) until it closes, then
//! written under contiguous ids and added up; hard links are counted once by (dev, inode).

use super::{FREES_ESTIMATE, MAX_DEPTH, MAX_NAME, MAX_SIZE, SHARED_KEYS};
use crate::meta::Kind;
use crate::out::io_text;
use crate::tree::arena::{self, Arena, Flags, NewEntry, NO_DIR};
use crate::tree::sharing::{Figures, Share};
use std::collections::HashMap;
use std::io::BufRead;

/// What went wrong, and where.
#[derive(Debug, PartialEq, Eq)]
pub struct ImportError {
    pub offset: u64,
    pub msg: String,
}

impl std::fmt::Display for ImportError {
    fn fmt(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        write!(f, "byte {}: {}", self.offset, self.msg)
    }
}

/// A byte reader with position and one byte of lookahead.
struct Input<R: BufRead> {
    r: R,
    offset: u64,
}

impl<R: BufRead> Input<R> {
    fn fail<T>(&self, msg: impl Into<String>) -> Result<T, ImportError> {
        Err(ImportError { offset: self.offset, msg: msg.into() })
    }

    fn peek(&mut self) -> Result<Option<u8>, ImportError> {
        match self.r.fill_buf() {
            Ok(buf) => Ok(buf.first().copied()),
            Err(e) => self.fail(format!("read error: {}", io_text(&e))),
        }
    }

    fn next(&mut self) -> Result<u8, ImportError> {
        match self.peek()? {
            Some(b) => {
                self.r.consume(1);
                self.offset += 1;
                Ok(b)
            }
            None => self.fail("unexpected end of input"),
        }
    }

    fn skip_ws(&mut self) -> Result<(), ImportError> {
        while let Some(b' ' | b'\t' | b'\n' | b'\r') = self.peek()? {
            self.next()?;
        }
        Ok(())
    }

    /// The next non-blank byte, consumed.
    fn token(&mut self) -> Result<u8, ImportError> {
        self.skip_ws()?;
        self.next()
    }

    fn expect(&mut self, want: u8) -> Result<(), ImportError> {
        let got = self.token()?;
        if got != want {
            self.offset -= 1;
            return self.fail(format!("expected '{}', found '{}'", want as char, got.escape_ascii()));
        }
        Ok(())
    }

    fn literal(&mut self, rest: &[u8]) -> Result<(), ImportError> {
        for &want in rest {
            if self.next()? != want {
                return self.fail("invalid literal");
            }
        }
        Ok(())
    }

    /// A string (the opening quote already consumed) into `out`, escapes decoded.
    fn string(&mut self, out: &mut Vec<u8>) -> Result<(), ImportError> {
        out.clear();
        loop {
            if out.len() > MAX_NAME {
                return self.fail("string longer than 32 KiB");
            }
            match self.next()? {
                b'"' => return Ok(()),
                b'\\' => match self.next()? {
                    b'"' => out.push(b'"'),
                    b'\\' => out.push(b'\\'),
                    b'/' => out.push(b'/'),
                    b'b' => out.push(8),
                    b'f' => out.push(12),
                    b'n' => out.push(b'\n'),
                    b'r' => out.push(b'\r'),
                    b't' => out.push(b'\t'),
                    b'u' => self.unicode_escape(out)?,
                    _ => return self.fail("invalid escape in string"),
                },
                c if c < 0x20 => return self.fail("control character in string"),
                c => out.push(c),
            }
        }
    }

    fn hex4(&mut self) -> Result<u32, ImportError> {
        let mut v = 0;
        for _ in 0..4 {
            let c = self.next()?;
            let d = (c as char).to_digit(16);
            match d {
                Some(d) => v = v * 16 + d,
                None => return self.fail("invalid \\u escape"),
            }
        }
        Ok(v)
    }

    fn unicode_escape(&mut self, out: &mut Vec<u8>) -> Result<(), ImportError> {
        let mut cp = self.hex4()?;
        if (0xD800..0xDC00).contains(&cp) && self.peek()? == Some(b'\\') {
            // A high surrogate: take a following low surrogate if there is one.
            self.next()?;
            if self.next()? != b'u' {
                return self.fail("invalid escape in string");
            }
            let lo = self.hex4()?;
            if (0xDC00..0xE000).contains(&lo) {
                cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
            } else {
                push_wtf8(out, cp);
                cp = lo;
            }
        }
        push_wtf8(out, cp);
        Ok(())
    }

    /// An unsigned integer; `allow_fraction` accepts and drops a fractional part (mtime).
    fn number(&mut self, first: u8, allow_fraction: bool) -> Result<u64, ImportError> {
        // Errors point at the number's first byte (already consumed).
        let start = self.offset.saturating_sub(1);
        let at = |msg: &str| Err(ImportError { offset: start, msg: msg.to_string() });
        if first == b'-' {
            return at("expected an unsigned number");
        }
        if !first.is_ascii_digit() {
            return at("expected a number");
        }
        let mut v: u64 = (first - b'0') as u64;
        while let Some(c @ b'0'..=b'9') = self.peek()? {
            self.next()?;
            v = match v.checked_mul(10).and_then(|v| v.checked_add((c - b'0') as u64)) {
                Some(v) => v,
                None => return at("integer out of range"),
            };
        }
        if let Some(b'.' | b'e' | b'E') = self.peek()? {
            if !allow_fraction {
                return at("expected an integer");
            }
            while let Some(b'0'..=b'9' | b'.' | b'e' | b'E' | b'+' | b'-') = self.peek()? {
                self.next()?;
            }
        }
        Ok(v)
    }

    /// Skips any JSON value whose first byte was `first`, to a bounded depth.
    fn skip_value(&mut self, first: u8, depth: usize) -> Result<(), ImportError> {
        if depth > 64 {
            return self.fail("unknown value nested too deeply");
        }
        let mut scratch = Vec::new();
        match first {
            b'"' => self.string(&mut scratch),
            b't' => self.literal(b"rue"),
            b'f' => self.literal(b"alse"),
            b'n' => self.literal(b"ull"),
            b'-' | b'0'..=b'9' => {
                while let Some(b'0'..=b'9' | b'.' | b'e' | b'E' | b'+' | b'-') = self.peek()? {
                    self.next()?;
                }
                Ok(())
            }
            b'[' | b'{' => {
                let close = if first == b'[' { b']' } else { b'}' };
                self.skip_ws()?;
                if self.peek()? == Some(close) {
                    self.next()?;
                    return Ok(());
                }
                loop {
                    if first == b'{' {
                        self.expect(b'"')?;
                        self.string(&mut scratch)?;
                        self.expect(b':')?;
                    }
                    let t = self.token()?;
                    self.skip_value(t, depth + 1)?;
                    match self.token()? {
                        b',' => continue,
                        c if c == close => return Ok(()),
                        _ => return self.fail("expected ',' or a closing bracket"),
                    }
                }
            }
            _ => self.fail("invalid JSON value"),
        }
    }

    fn bool_value(&mut self) -> Result<bool, ImportError> {
        match self.token()? {
            b't' => self.literal(b"rue").map(|_| true),
            b'f' => self.literal(b"alse").map(|_| false),
            _ => self.fail("expected true or false"),
        }
    }
}

/// Encodes a code point as UTF-8, or a lone surrogate as WTF-8 (lossless).
fn push_wtf8(out: &mut Vec<u8>, cp: u32) {
    if cp < 0x80 {
        out.push(cp as u8);
    } else if cp < 0x800 {
        out.extend_from_slice(&[0xC0 | (cp >> 6) as u8, 0x80 | (cp & 0x3F) as u8]);
    } else if cp < 0x10000 {
        out.extend_from_slice(&[0xE0 | (cp >> 12) as u8, 0x80 | ((cp >> 6) & 0x3F) as u8, 0x80 | (cp & 0x3F) as u8]);
    } else {
        out.extend_from_slice(&[
            0xF0 | (cp >> 18) as u8,
            0x80 | ((cp >> 12) & 0x3F) as u8,
            0x80 | ((cp >> 6) & 0x3F) as u8,
            0x80 | (cp & 0x3F) as u8,
        ]);
    }
}

/// One info object as read (or one binary item, `bin_import.rs`).
#[derive(Default, Clone)]
pub(super) struct Info {
    pub name: Vec<u8>,
    pub has_name: bool,
    pub asize: u64,
    pub dsize: u64,
    pub dev: Option<u64>,
    pub ino: u64,
    pub nlink: u64,
    pub hlnkc: bool,
    pub read_error: bool,
    pub excluded: Option<Flags>,
    pub notreg: bool,
    /// dfdu's sharing-aware figures (`SHARED_KEYS`), when present.
    pub shared: [Option<u64>; 5],
    /// `FREES_ESTIMATE`: the frees figure is a lower bound.
    pub frees_estimate: bool,
}

/// A directory being read: its record and its direct children so far.
pub(super) struct Open {
    pub dir: u32,
    dev: u64,
    /// gdu: the directory's cumulative sizes as written.
    cumulative: Option<(u64, u64)>,
    /// The children so far, packed (`Staged`): a few bytes plus the name each, so a
    /// folder of a million entries costs about what its names do until it closes.
    staged: Staged,
}

/// Children of an open directory, each packed as the flags byte, then variable-length
/// integers (7 bits a byte) for disk and apparent size, directory record + 1 (0: none),
/// for a multiply-linked file its dev, inode and link count, the name's length, then the
/// name. Kept in chunks that never grow in place (a new chunk, twice the last one up to
/// 64 KiB, when a record does not fit), so what is held is what is used plus at most one
/// partly filled chunk, and nothing is copied while a folder grows.
#[derive(Default)]
struct Staged {
    chunks: Vec<Vec<u8>>,
    count: u32,
    name_bytes: u64,
}

#[cfg(test)]
thread_local! {
    /// Bytes the staging chunks hold now and at most (tests bound it per entry).
    pub(super) static STAGED_BYTES: std::cell::Cell<(usize, usize)> = const { std::cell::Cell::new((0, 0)) };
}

#[cfg(test)]
fn count_staged(grow: isize) {
    STAGED_BYTES.with(|c| {
        let (now, peak) = c.get();
        let now = (now as isize + grow) as usize;
        c.set((now, peak.max(now)));
    });
}

fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push(v as u8 | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

fn get_varint(b: &[u8], at: &mut usize) -> u64 {
    let (mut v, mut shift) = (0u64, 0);
    loop {
        let byte = b[*at];
        *at += 1;
        v |= ((byte & 0x7f) as u64) << shift;
        if byte < 0x80 {
            return v;
        }
        shift += 7;
    }
}

impl Staged {
    fn push(&mut self, c: &Child, name: &[u8], scratch: &mut Vec<u8>) {
        scratch.clear();
        scratch.push(c.flags.bits());
        put_varint(scratch, c.disk);
        put_varint(scratch, c.apparent);
        put_varint(scratch, c.dir.map_or(0, |d| d as u64 + 1));
        if c.flags.contains(arena::F_HARDLINK) {
            put_varint(scratch, c.dev);
            put_varint(scratch, c.ino);
            put_varint(scratch, c.nlink as u64);
        }
        put_varint(scratch, name.len() as u64);
        scratch.extend_from_slice(name);
        let fits = self.chunks.last().is_some_and(|l| l.capacity() - l.len() >= scratch.len());
        if !fits {
            let last = self.chunks.last().map_or(0, |l| l.capacity());
            let cap = (last * 2).clamp(256, 1 << 16).max(scratch.len());
            #[cfg(test)]
            count_staged(cap as isize);
            self.chunks.push(Vec::with_capacity(cap));
        }
        self.chunks.last_mut().expect("a chunk with room").extend_from_slice(scratch);
        self.count += 1;
        self.name_bytes += arena::name_cost(name.len());
    }

    /// Calls `f` with each child and its name, in order, giving each chunk back as soon
    /// as it is read: the arena's copy grows while the staging shrinks, so the peak is
    /// about the larger of the two, not their sum.
    fn drain(&mut self, mut f: impl FnMut(&Child, &[u8]) -> Result<(), ImportError>) -> Result<(), ImportError> {
        for owned in std::mem::take(&mut self.chunks) {
            let chunk = &owned[..];
            let mut at = 0;
            while at < chunk.len() {
                let flags = Flags::from_bits(chunk[at]);
                at += 1;
                let disk = get_varint(chunk, &mut at);
                let apparent = get_varint(chunk, &mut at);
                let dir = get_varint(chunk, &mut at).checked_sub(1).map(|d| d as u32);
                let (mut dev, mut ino, mut nlink) = (0, 0, 0);
                if flags.contains(arena::F_HARDLINK) {
                    dev = get_varint(chunk, &mut at);
                    ino = get_varint(chunk, &mut at);
                    nlink = get_varint(chunk, &mut at) as u32;
                }
                let len = get_varint(chunk, &mut at) as usize;
                let name = &chunk[at..at + len];
                at += len;
                f(&Child { flags, disk, apparent, dir, dev, ino, nlink }, name)?;
            }
            #[cfg(test)]
            count_staged(-(owned.capacity() as isize));
        }
        Ok(())
    }
}

#[cfg(test)]
impl Drop for Staged {
    fn drop(&mut self) {
        count_staged(-(self.chunks.iter().map(|c| c.capacity()).sum::<usize>() as isize));
    }
}

struct Child {
    flags: Flags,
    disk: u64,
    apparent: u64,
    dir: Option<u32>,
    dev: u64,
    ino: u64,
    nlink: u32,
}

/// What an import produced.
pub struct Imported {
    pub root: u32,
    pub progname: String,
}

pub(super) struct Importer<'a, R: BufRead> {
    input: Input<R>,
    arena: &'a Arena,
    links: HashMap<(u64, u64), u32>,
    cumulative_dirs: bool,
    /// gdu marks (`ino`, `hlnkc`) every name of a hard-linked file but the first it met,
    /// which it writes as a plain file: each marked name is one already counted.
    marks_later_links: bool,
    shared: Option<Figures>,
    /// One child's packed record while it is built (`Staged::push`).
    scratch: Vec<u8>,
}

impl<'a, R: BufRead> Importer<'a, R> {
    /// An importer reading `r` into `arena`, nothing known of its writer yet.
    fn new(r: R, arena: &'a Arena) -> Self {
        Importer {
            input: Input { r, offset: 0 },
            arena,
            links: HashMap::new(),
            cumulative_dirs: false,
            marks_later_links: false,
            shared: None,
            scratch: Vec::new(),
        }
    }
}

impl<'a> Importer<'a, &'static [u8]> {
    /// An importer with no JSON input, for the binary reader to drive.
    pub(super) fn without_input(arena: &'a Arena) -> Self {
        Importer::new(&[], arena)
    }

    /// The byte offset errors name from now on.
    pub(super) fn set_offset(&mut self, offset: u64) {
        self.input.offset = offset;
    }
}

/// Reads an ncdu JSON export into `arena`; the root directory is returned.
pub fn import<R: BufRead>(r: R, arena: &Arena) -> Result<Imported, ImportError> {
    let mut im = Importer::new(r, arena);
    let i = &mut im.input;
    i.expect(b'[')?;
    let t = i.token()?;
    let major = i.number(t, false)?;
    if major != 1 {
        return i.fail(format!("unsupported format version {major} (only 1 is known)"));
    }
    i.expect(b',')?;
    let t = i.token()?;
    let minor = i.number(t, false)?;
    if minor > 10_000 {
        return i.fail("invalid minor version");
    }
    i.expect(b',')?;
    let progname = im.metadata()?;
    // gdu (since its #603) writes cumulative directory sizes and an `items` count.
    im.cumulative_dirs = progname == "gdu";
    im.marks_later_links = progname == "gdu";
    im.input.expect(b',')?;
    im.input.expect(b'[')?;
    let root = im.tree()?;
    loop {
        match im.input.token()? {
            b',' => {
                let t = im.input.token()?;
                im.input.skip_value(t, 0)?;
            }
            b']' => break,
            _ => return im.input.fail("expected ',' or ']'"),
        }
    }
    im.input.skip_ws()?;
    if im.input.peek()?.is_some() {
        return im.input.fail("trailing data after the export");
    }
    if let Some(f) = im.shared.take() {
        arena.set_shared_figures(f);
    }
    Ok(Imported { root, progname })
}

impl<R: BufRead> Importer<'_, R> {
    fn metadata(&mut self) -> Result<String, ImportError> {
        let i = &mut self.input;
        i.expect(b'{')?;
        let mut progname = String::new();
        let mut key = Vec::new();
        i.skip_ws()?;
        if i.peek()? == Some(b'}') {
            i.next()?;
            return Ok(progname);
        }
        loop {
            i.expect(b'"')?;
            i.string(&mut key)?;
            i.expect(b':')?;
            let t = i.token()?;
            if key == b"progname" && t == b'"' {
                let mut v = Vec::new();
                i.string(&mut v)?;
                progname = String::from_utf8_lossy(&v).into_owned();
            } else {
                i.skip_value(t, 1)?;
            }
            match i.token()? {
                b',' => continue,
                b'}' => return Ok(progname),
                _ => return i.fail("expected ',' or '}'"),
            }
        }
    }

    /// An info object (the `{` consumed).
    fn info(&mut self) -> Result<Info, ImportError> {
        let mut info = Info::default();
        let mut key = Vec::new();
        let i = &mut self.input;
        i.skip_ws()?;
        if i.peek()? == Some(b'}') {
            return i.fail("entry without a name");
        }
        loop {
            i.expect(b'"')?;
            i.string(&mut key)?;
            i.expect(b':')?;
            match key.as_slice() {
                b"name" => {
                    if info.has_name {
                        return i.fail("duplicate name key");
                    }
                    i.expect(b'"')?;
                    i.string(&mut info.name)?;
                    info.has_name = true;
                }
                b"asize" | b"dsize" | b"dev" | b"ino" | b"nlink" => {
                    let t = i.token()?;
                    let v = i.number(t, false)?;
                    match key.as_slice() {
                        b"asize" | b"dsize" if v > MAX_SIZE => return i.fail("size out of range"),
                        b"asize" => info.asize = v,
                        b"dsize" => info.dsize = v,
                        b"dev" => info.dev = Some(v),
                        b"ino" => info.ino = v,
                        _ if v > u32::MAX as u64 => return i.fail("integer out of range"),
                        _ => info.nlink = v,
                    }
                }
                k if SHARED_KEYS.iter().any(|s| s.as_bytes() == k) => {
                    let t = i.token()?;
                    let v = i.number(t, false)?;
                    let at = SHARED_KEYS.iter().position(|s| s.as_bytes() == k).unwrap_or(0);
                    info.shared[at] = Some(v);
                }
                k if k == FREES_ESTIMATE.as_bytes() => info.frees_estimate = i.bool_value()?,
                b"hlnkc" => info.hlnkc = i.bool_value()?,
                b"read_error" => info.read_error = i.bool_value()?,
                b"notreg" => info.notreg = i.bool_value()?,
                b"excluded" => {
                    i.expect(b'"')?;
                    let mut v = Vec::new();
                    i.string(&mut v)?;
                    info.excluded =
                        Some(if v == b"otherfs" || v == b"othfs" { arena::F_OTHER_FS } else { arena::F_EXCLUDED });
                }
                _ => {
                    let t = i.token()?;
                    i.skip_value(t, 1)?;
                }
            }
            match i.token()? {
                b',' => continue,
                b'}' => break,
                _ => return i.fail("expected ',' or '}'"),
            }
        }
        if !info.has_name {
            return i.fail("entry without a name");
        }
        Ok(info)
    }

    pub(super) fn open_dir(&mut self, info: &Info, parent: Option<&Open>) -> Result<Open, ImportError> {
        let (parent_dir, parent_dev) = parent.map_or((NO_DIR, 0), |p| (p.dir, p.dev));
        let own = if self.cumulative_dirs { (0, 0) } else { (info.dsize, info.asize) };
        let dir = self.arena.new_dir_detached(parent_dir, own.0, own.1).map_err(|_| self.too_big())?;
        if parent_dir != NO_DIR {
            // The parent is done only after this directory (which reports to it) is.
            self.arena.add_pending(parent_dir, 1);
        }
        let dev = info.dev.unwrap_or(parent_dev);
        if parent.is_none() || dev != parent_dev {
            self.arena.set_dev(dir, dev);
        }
        if let [Some(total), Some(exclusive), Some(set_shared), Some(disk_once), frees] = info.shared {
            // An export from before "frees": its exclusive bytes are the lower bound.
            let frees_exact = frees.is_some() && !info.frees_estimate;
            let frees = frees.unwrap_or(exclusive);
            let s = Share { total, exclusive, set_shared, disk_once, frees, frees_exact };
            self.shared.get_or_insert_with(Figures::default).set(dir, s);
        }
        let cumulative = self.cumulative_dirs.then_some((info.dsize, info.asize));
        if info.read_error {
            self.arena.set_dir_flags(dir, arena::D_READ_ERROR);
            self.arena.mark_error_below(parent_dir);
        }
        Ok(Open { dir, dev, cumulative, staged: Staged::default() })
    }

    fn too_big(&self) -> ImportError {
        ImportError { offset: self.input.offset, msg: "too many entries for the arena".into() }
    }

    /// Reads a directory array (its `[` consumed) and everything below it, with an
    /// explicit stack rather than recursion.
    fn tree(&mut self) -> Result<u32, ImportError> {
        self.input.expect(b'{')?;
        let root_info = self.info()?;
        if root_info.excluded.is_some() {
            return self.input.fail("the root must be a readable directory");
        }
        let mut stack = vec![self.open_dir(&root_info, None)?];
        let root_dir = stack[0].dir;
        let mut root_pending = Some(root_info);
        loop {
            match self.input.token()? {
                b']' => {
                    let done = stack.pop().expect("stack holds the open directory");
                    let is_root = stack.is_empty();
                    let entry_info = if is_root { root_pending.take() } else { None };
                    self.close_dir(done, entry_info)?;
                    if is_root {
                        return Ok(root_dir);
                    }
                    continue;
                }
                b',' => {}
                _ => return self.input.fail("expected ',' or ']'"),
            }
            match self.input.token()? {
                b'{' => {
                    let info = self.info()?;
                    let top = stack.last_mut().expect("stack holds the open directory");
                    self.stage_leaf(top, &info, false);
                }
                b'[' => {
                    if stack.len() >= MAX_DEPTH {
                        return self.input.fail("directories nested too deeply");
                    }
                    self.input.expect(b'{')?;
                    let info = self.info()?;
                    if info.excluded.is_some() {
                        // An excluded directory is a one-element array.
                        let top = stack.last_mut().expect("stack holds the open directory");
                        self.stage_leaf(top, &info, true);
                        if self.input.token()? != b']' {
                            return self.input.fail("unexpected contents in an excluded directory");
                        }
                        continue;
                    }
                    let top = stack.last_mut().expect("stack holds the open directory");
                    let open = self.stage_dir(top, &info)?;
                    stack.push(open);
                }
                _ => return self.input.fail("expected an entry ('{' or '[')"),
            }
        }
    }

    /// Stages `info`, an entry not entered, as a child of `top`; `as_dir`: an excluded
    /// directory (a record with no children).
    pub(super) fn stage_leaf(&mut self, top: &mut Open, info: &Info, as_dir: bool) {
        let mut child = self.child_of(info, top, None);
        if as_dir {
            child.flags = child.flags.with_kind(Kind::Dir);
        }
        top.staged.push(&child, &info.name, &mut self.scratch);
    }

    /// Opens directory `info` below `top` and stages it there; it is read next.
    pub(super) fn stage_dir(&mut self, top: &mut Open, info: &Info) -> Result<Open, ImportError> {
        let open = self.open_dir(info, Some(&*top))?;
        let child = self.child_of(info, top, Some(open.dir));
        top.staged.push(&child, &info.name, &mut self.scratch);
        Ok(open)
    }

    fn child_of(&self, info: &Info, top: &Open, dir: Option<u32>) -> Child {
        let mut flags = Flags::of(match (dir, info.notreg) {
            (Some(_), _) => Kind::Dir,
            (None, true) => Kind::Other,
            (None, false) => Kind::File,
        });
        if let Some(x) = info.excluded {
            flags = Flags::of(Kind::Other) | x;
        } else if info.read_error && dir.is_none() {
            flags = Flags::of(Kind::File) | arena::F_ERROR;
        } else if dir.is_none() && (info.hlnkc || info.nlink > 1) {
            flags |= arena::F_HARDLINK;
        }
        let bad = info.excluded.is_some() || (info.read_error && dir.is_none());
        Child {
            flags,
            disk: if bad || self.cumulative_dirs && dir.is_some() { 0 } else { info.dsize },
            apparent: if bad || self.cumulative_dirs && dir.is_some() { 0 } else { info.asize },
            dir,
            dev: info.dev.unwrap_or(top.dev),
            ino: info.ino,
            nlink: info.nlink.max(u64::from(info.hlnkc) * 2) as u32,
        }
    }

    /// Writes a finished directory's children under contiguous ids and adds them up.
    pub(super) fn close_dir(&mut self, mut d: Open, root_info: Option<Info>) -> Result<(), ImportError> {
        let a = self.arena;
        let n = d.staged.count;
        let first = a.reserve_entries(n).map_err(|_| self.too_big())?;
        let mut name_at = a.reserve_names(d.staged.name_bytes).map_err(|_| self.too_big())?;
        a.set_layout(d.dir, first, name_at);
        let (mut disk, mut apparent) = (0u64, 0u64);
        let mut errors = false;
        let mut id = first;
        let offset = self.input.offset;
        let links = &mut self.links;
        let marks_later_links = self.marks_later_links;
        d.staged.drain(|c, name| {
            let mut flags = c.flags;
            if flags.contains(arena::F_HARDLINK) {
                if marks_later_links {
                    flags |= arena::F_DUP_LINK;
                } else if let std::collections::hash_map::Entry::Vacant(v) = links.entry((c.dev, c.ino)) {
                    v.insert(id);
                } else {
                    flags |= arena::F_DUP_LINK;
                }
            }
            let e = NewEntry { name, flags, disk_bytes: c.disk, apparent_bytes: c.apparent };
            a.write_entry(id, &e, name_at);
            name_at += arena::name_cost(name.len()) as u32;
            if flags.contains(arena::F_HARDLINK) {
                a.note_link(id, c.dev, c.ino, c.nlink);
            }
            errors |= flags.contains(arena::F_ERROR);
            match c.dir {
                // Its sizes reached `d.dir` when it was closed.
                Some(sub) => a.attach_dir(sub, id),
                None if flags.is_dir() => {
                    // An excluded directory: a record with no children.
                    let sub = a
                        .new_dir(id, d.dir, 0, 0)
                        .map_err(|_| ImportError { offset, msg: "too many entries for the arena".into() })?;
                    a.publish_children(sub, id, 0);
                    a.set_dir_flags(sub, arena::D_DONE);
                }
                None if !flags.contains(arena::F_DUP_LINK) => {
                    disk = disk.saturating_add(c.disk);
                    apparent = apparent.saturating_add(c.apparent);
                }
                None => {}
            }
            id += 1;
            Ok(())
        })?;
        a.add_here(d.dir, disk, apparent, n as u64);
        if let Some((cum_disk, cum_apparent)) = d.cumulative {
            let (td, ta, _) = a.stored_totals(d.dir);
            let own = (cum_disk.saturating_sub(td), cum_apparent.saturating_sub(ta));
            a.set_own(d.dir, own.0, own.1);
        }
        if errors {
            a.mark_error_below(d.dir);
        }
        a.publish_children(d.dir, first, n);
        // Done: its totals go to the parent, once.
        a.finish(d.dir);
        if let Some(info) = root_info {
            let id = a.reserve_entries(1).map_err(|_| self.too_big())?;
            let own = a.dir_own(d.dir);
            let e = NewEntry { name: b"", flags: Flags::of(Kind::Dir), disk_bytes: own.0, apparent_bytes: own.1 };
            a.write_entry(id, &e, a.reserve_names(1).map_err(|_| self.too_big())?);
            a.attach_dir(d.dir, id);
            a.set_root_name(d.dir, &info.name);
        }
        Ok(())
    }
}
