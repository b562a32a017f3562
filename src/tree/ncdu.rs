//! ncdu's JSON export format (version 1.2), both ways: `export` streams the arena out
//! depth-first as ncdu 2 writes it; `import` reads files written by ncdu 1.x, ncdu 2.x,
//! gdu (whose newer exports carry cumulative directory sizes) and dfdu into an arena.
//!
//! The reader is a hand-written streaming parser with a limit on everything: names of at
//! most 32 KiB, nesting at most `MAX_DEPTH`, sizes at most `MAX_SIZE`, integers that
//! must fit their field. Bad input gets an error naming the byte offset, never a panic.

use crate::tree::arena::{self, Arena, NewEntry, NO_DIR};
use crate::tree::shared::{Figures, Share};
use std::collections::HashMap;
use std::io::{self, BufRead, Write};

/// Deepest directory nesting accepted on import.
pub const MAX_DEPTH: usize = 65_536;
/// Longest name accepted (ncdu's own limit).
const MAX_NAME: usize = 32 * 1024;
/// Largest size accepted for one entry: 1 EiB.
const MAX_SIZE: u64 = 1 << 60;

// ---------------------------------------------------------------- export

fn write_name(out: &mut Vec<u8>, name: &[u8]) {
    out.push(b'"');
    for &b in name {
        match b {
            b'"' => out.extend_from_slice(b"\\\""),
            b'\\' => out.extend_from_slice(b"\\\\"),
            b'\n' => out.extend_from_slice(b"\\n"),
            b'\r' => out.extend_from_slice(b"\\r"),
            b'\t' => out.extend_from_slice(b"\\t"),
            0x08 => out.extend_from_slice(b"\\b"),
            0x0c => out.extend_from_slice(b"\\f"),
            0..=0x1f | 0x7f => out.extend_from_slice(format!("\\u{b:04x}").as_bytes()),
            _ => out.push(b),
        }
    }
    out.push(b'"');
}

/// Extra keys a directory carries when sharing-aware figures exist (ncdu ignores keys it
/// does not know; dfdu's import reads them back).
const SHARED_KEYS: [&str; 4] =
    ["dfdu_total_bytes", "dfdu_exclusive_bytes", "dfdu_set_shared_bytes", "dfdu_disk_once_bytes"];

/// One entry's info object (without the surrounding `[` for directories).
fn info(a: &Arena, id: u32, name: &[u8], dev: Option<u64>, shared: Option<&Figures>, out: &mut Vec<u8>) {
    let flags = a.flags(id);
    let kind = flags & 3;
    out.extend_from_slice(b"{\"name\":");
    write_name(out, name);
    // ncdu has no word for a loop; it is a mount of something already in the export.
    if arena::is_loop(flags) {
        out.extend_from_slice(b",\"excluded\":\"otherfs\"}");
        return;
    }
    if flags & arena::F_EXCLUDED != 0 {
        out.extend_from_slice(b",\"excluded\":\"pattern\"}");
        return;
    }
    if flags & arena::F_OTHER_FS != 0 {
        out.extend_from_slice(b",\"excluded\":\"otherfs\"}");
        return;
    }
    if flags & arena::F_ERROR != 0 {
        out.extend_from_slice(b",\"read_error\":true}");
        return;
    }
    let (disk, apparent) = a.own_sizes(id);
    if apparent > 0 {
        out.extend_from_slice(format!(",\"asize\":{apparent}").as_bytes());
    }
    if disk > 0 {
        out.extend_from_slice(format!(",\"dsize\":{disk}").as_bytes());
    }
    if let Some(dev) = dev {
        out.extend_from_slice(format!(",\"dev\":{dev}").as_bytes());
    }
    if flags & arena::F_HARDLINK != 0 {
        if let Some((_, ino, nlink)) = a.link_of(id) {
            out.extend_from_slice(format!(",\"ino\":{ino},\"hlnkc\":true,\"nlink\":{nlink}").as_bytes());
        }
    }
    if let Some(s) = shared.filter(|_| kind == arena::KIND_DIR).and_then(|f| f.get(a.dir_of(id))) {
        for (key, v) in SHARED_KEYS.iter().zip([s.total, s.exclusive, s.set_shared, s.disk_once]) {
            out.extend_from_slice(format!(",\"{key}\":{v}").as_bytes());
        }
    }
    if kind == arena::KIND_DIR && a.dir_flags(a.dir_of(id)) & arena::D_READ_ERROR != 0 {
        out.extend_from_slice(b",\"read_error\":true");
    }
    if kind == arena::KIND_SYMLINK || kind == arena::KIND_OTHER {
        out.extend_from_slice(b",\"notreg\":true");
    }
    out.push(b'}');
}

/// Writes the tree under root directory `root` (its entry is named by its full path).
pub fn export(a: &Arena, root: u32, timestamp: u64, w: &mut dyn Write) -> io::Result<()> {
    let mut out = Vec::with_capacity(64 * 1024);
    out.extend_from_slice(
        format!(
            "[1,2,{{\"progname\":\"dfdu\",\"progver\":\"{}\",\"timestamp\":{timestamp}}},\n",
            env!("CARGO_PKG_VERSION")
        )
        .as_bytes(),
    );
    let mut name = a.dir_name(root);
    let root_entry = a.dir_entry(root);
    let figures = a.shared_figures();
    let shared = figures.as_deref();
    out.push(b'[');
    info(a, root_entry, &name, Some(a.dev_of(root).unwrap_or(0)), shared, &mut out);
    // Per open directory: (next child, end, where the next child's name is).
    let mut stack: Vec<(u32, u32, u32)> = Vec::new();
    let range = a.children(root).unwrap_or(0..0);
    stack.push((range.start, range.end, a.names_at(root)));
    while let Some(top) = stack.last_mut() {
        if top.0 == top.1 {
            stack.pop();
            out.push(b']');
            continue;
        }
        let id = top.0;
        top.0 += 1;
        top.2 = a.read_name(top.2, &mut name);
        out.extend_from_slice(b",\n");
        let flags = a.flags(id);
        if flags & 3 == arena::KIND_DIR && flags & (arena::F_EXCLUDED | arena::F_ERROR) == 0 {
            let dir = a.dir_of(id);
            out.push(b'[');
            info(a, id, &name, a.dev_of(dir), shared, &mut out);
            if flags & arena::F_OTHER_FS == 0 {
                let r = a.children(dir).unwrap_or(0..0);
                stack.push((r.start, r.end, a.names_at(dir)));
            } else {
                out.push(b']');
            }
        } else {
            info(a, id, &name, None, shared, &mut out);
        }
        if out.len() > 60 * 1024 {
            w.write_all(&out)?;
            out.clear();
        }
    }
    out.extend_from_slice(b"]\n");
    w.write_all(&out)?;
    w.flush()
}

// ---------------------------------------------------------------- import

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
            Err(e) => self.fail(format!("read error: {e}")),
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

/// One info object as read.
#[derive(Default, Clone)]
struct Info {
    name: Vec<u8>,
    has_name: bool,
    asize: u64,
    dsize: u64,
    dev: Option<u64>,
    ino: u64,
    nlink: u64,
    hlnkc: bool,
    read_error: bool,
    excluded: Option<u8>,
    notreg: bool,
    /// dfdu's sharing-aware figures (`SHARED_KEYS`), when present.
    shared: [Option<u64>; 4],
}

/// A directory being read: its record and its direct children so far.
struct Open {
    dir: u32,
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
    static STAGED_BYTES: std::cell::Cell<(usize, usize)> = const { std::cell::Cell::new((0, 0)) };
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
        scratch.push(c.flags);
        put_varint(scratch, c.disk);
        put_varint(scratch, c.apparent);
        put_varint(scratch, c.dir.map_or(0, |d| d as u64 + 1));
        if c.flags & arena::F_HARDLINK != 0 {
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
                let flags = chunk[at];
                at += 1;
                let disk = get_varint(chunk, &mut at);
                let apparent = get_varint(chunk, &mut at);
                let dir = get_varint(chunk, &mut at).checked_sub(1).map(|d| d as u32);
                let (mut dev, mut ino, mut nlink) = (0, 0, 0);
                if flags & arena::F_HARDLINK != 0 {
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
    flags: u8,
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

struct Importer<'a, R: BufRead> {
    input: Input<R>,
    arena: &'a Arena,
    links: HashMap<(u64, u64), u32>,
    cumulative_dirs: bool,
    shared: Option<Figures>,
    /// One child's packed record while it is built (`Staged::push`).
    scratch: Vec<u8>,
}

/// Reads an ncdu JSON export into `arena`; the root directory is returned.
pub fn import<R: BufRead>(r: R, arena: &Arena) -> Result<Imported, ImportError> {
    let mut im = Importer {
        input: Input { r, offset: 0 },
        arena,
        links: HashMap::new(),
        cumulative_dirs: false,
        shared: None,
        scratch: Vec::new(),
    };
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

    fn open_dir(&mut self, info: &Info, parent: Option<&Open>) -> Result<Open, ImportError> {
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
        if let [Some(total), Some(exclusive), Some(set_shared), Some(disk_once)] = info.shared {
            self.shared
                .get_or_insert_with(Figures::default)
                .set(dir, Share { total, exclusive, set_shared, disk_once });
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
                    let child = self.child_of(&info, top, None);
                    top.staged.push(&child, &info.name, &mut self.scratch);
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
                        let mut child = self.child_of(&info, top, None);
                        child.flags = (child.flags & !3) | arena::KIND_DIR;
                        top.staged.push(&child, &info.name, &mut self.scratch);
                        if self.input.token()? != b']' {
                            return self.input.fail("unexpected contents in an excluded directory");
                        }
                        continue;
                    }
                    let open = self.open_dir(&info, stack.last())?;
                    let top = stack.last_mut().expect("stack holds the open directory");
                    let child = self.child_of(&info, top, Some(open.dir));
                    top.staged.push(&child, &info.name, &mut self.scratch);
                    stack.push(open);
                }
                _ => return self.input.fail("expected an entry ('{' or '[')"),
            }
        }
    }

    fn child_of(&self, info: &Info, top: &Open, dir: Option<u32>) -> Child {
        let mut flags = match (dir, info.notreg) {
            (Some(_), _) => arena::KIND_DIR,
            (None, true) => arena::KIND_OTHER,
            (None, false) => arena::KIND_FILE,
        };
        if let Some(x) = info.excluded {
            flags = arena::KIND_OTHER | x;
        } else if info.read_error && dir.is_none() {
            flags = arena::KIND_FILE | arena::F_ERROR;
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
    fn close_dir(&mut self, mut d: Open, root_info: Option<Info>) -> Result<(), ImportError> {
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
        d.staged.drain(|c, name| {
            let mut flags = c.flags;
            if flags & arena::F_HARDLINK != 0 {
                if let std::collections::hash_map::Entry::Vacant(v) = links.entry((c.dev, c.ino)) {
                    v.insert(id);
                } else {
                    flags |= arena::F_DUP_LINK;
                }
            }
            let e = NewEntry { name, flags, disk_bytes: c.disk, apparent_bytes: c.apparent };
            a.write_entry(id, &e, name_at);
            name_at += arena::name_cost(name.len()) as u32;
            if flags & arena::F_HARDLINK != 0 {
                a.note_link(id, c.dev, c.ino, c.nlink);
            }
            errors |= flags & arena::F_ERROR != 0;
            match c.dir {
                // Its sizes reached `d.dir` when it was closed.
                Some(sub) => a.attach_dir(sub, id),
                None if flags & 3 == arena::KIND_DIR => {
                    // An excluded directory: a record with no children.
                    let sub = a
                        .new_dir(id, d.dir, 0, 0)
                        .map_err(|_| ImportError { offset, msg: "too many entries for the arena".into() })?;
                    a.publish_children(sub, id, 0);
                    a.set_dir_flags(sub, arena::D_DONE);
                }
                None if flags & arena::F_DUP_LINK == 0 => {
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
            let e = NewEntry { name: b"", flags: arena::KIND_DIR, disk_bytes: own.0, apparent_bytes: own.1 };
            a.write_entry(id, &e, a.reserve_names(1).map_err(|_| self.too_big())?);
            a.attach_dir(d.dir, id);
            a.set_root_name(d.dir, &info.name);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A small but complete export: nesting, a hard link, an error, exclusions,
    /// escapes, raw non-UTF-8 bytes and unknown keys.
    fn sample() -> Vec<u8> {
        let mut v = b"[1,2,{\"progname\":\"ncdu\",\"progver\":\"1.18\",\"timestamp\":1700000000},\n[{\"name\":\"/srv\",\"asize\":4096,\"dsize\":4096,\"dev\":2049},\n{\"name\":\"a.txt\",\"asize\":12,\"dsize\":4096},\n[{\"name\":\"sub\",\"asize\":4096,\"dsize\":4096,\"mtime\":1.5,\"extra\":[1,{\"x\":null}]},\n{\"name\":\"link1\",\"asize\":5,\"dsize\":4096,\"ino\":1234,\"hlnkc\":true,\"nlink\":2},\n{\"name\":\"sym\",\"asize\":7,\"notreg\":true}],\n{\"name\":\"link2\",\"asize\":5,\"dsize\":4096,\"ino\":1234,\"hlnkc\":true,\"nlink\":2},\n[{\"name\":\"proc\",\"excluded\":\"otherfs\"}],\n{\"name\":\"q\\\"\\\\\\n\\u00e9\\ud83d\\ude00\",\"asize\":1},\n{\"name\":\"raw".to_vec();
        v.extend_from_slice(b"\xff\xfe");
        v.extend_from_slice(b"\",\"asize\":2},\n{\"name\":\"secret\",\"read_error\":true},\n{\"name\":\"skip\",\"excluded\":\"pattern\"}]]\n");
        v
    }

    fn load(bytes: &[u8]) -> Result<(Arena, Imported), ImportError> {
        let a = Arena::new();
        let r = import(bytes, &a)?;
        Ok((a, r))
    }

    fn export_bytes(a: &Arena, root: u32) -> Vec<u8> {
        let mut out = Vec::new();
        export(a, root, 42, &mut out).unwrap();
        out
    }

    #[test]
    fn sample_imports_with_links_counted_once() {
        let (a, r) = load(&sample()).unwrap();
        assert_eq!(r.progname, "ncdu");
        assert_eq!(a.dir_name(r.root), b"/srv");
        let (disk, apparent, items) = a.dir_totals(r.root);
        // root 4096 + a.txt 4096 + sub 4096 + link (once) 4096.
        assert_eq!(disk, 4 * 4096);
        assert_eq!(apparent, 4096 + 12 + 4096 + 5 + 7 + 1 + 2);
        assert_eq!(items, 10);
    }

    /// Issue 10, item 5: importing a valid 65,534-level export took 106 s (each closed
    /// directory added its sizes to every ancestor). A 20,000-level one is imported here;
    /// the arena records visited while moving totals must grow linearly, and the totals
    /// must be exact.
    #[test]
    fn deep_import_moves_totals_in_linear_work() {
        const LEVELS: usize = 20_000;
        let mut v = b"[1,2,{},\n[{\"name\":\"/r\",\"asize\":10,\"dsize\":512}".to_vec();
        for _ in 1..LEVELS {
            v.extend_from_slice(b",\n[{\"name\":\"d\",\"asize\":10,\"dsize\":512},{\"name\":\"f\",\"asize\":3}");
        }
        v.extend(std::iter::repeat_n(b']', LEVELS));
        v.extend_from_slice(b"]\n");
        let (a, r) = load(&v).unwrap();
        let n = LEVELS as u64;
        assert_eq!(a.dir_totals(r.root), (512 * n, 10 * n + 3 * (n - 1), 2 * (n - 1)));
        let steps = a.steps.load(std::sync::atomic::Ordering::Relaxed);
        assert!(steps <= 3 * n, "{steps} steps for {n} directories: not linear");
    }

    #[test]
    fn export_import_export_is_identical() {
        let (a, r) = load(&sample()).unwrap();
        let once = export_bytes(&a, r.root);
        let (b, r2) = load(&once).unwrap();
        let twice = export_bytes(&b, r2.root);
        assert_eq!(String::from_utf8_lossy(&once), String::from_utf8_lossy(&twice));
        assert!(once.windows(2).any(|w| w == b"\xff\xfe"), "raw bytes survive");
    }

    #[test]
    fn gdu_cumulative_directory_sizes_are_not_counted_twice() {
        let gdu = b"[1,2,{\"progname\":\"gdu\",\"progver\":\"5.30\",\"timestamp\":1},\n[{\"name\":\"/t\",\"asize\":4096+0,\"dsize\":12288,\"items\":3}]]";
        assert!(load(gdu).is_err(), "not JSON");
        let gdu = b"[1,2,{\"progname\":\"gdu\"},[{\"name\":\"/t\",\"asize\":4106,\"dsize\":12288,\"items\":3},[{\"name\":\"d\",\"asize\":4106,\"dsize\":8192,\"items\":1},{\"name\":\"f\",\"asize\":10,\"dsize\":4096}]]]";
        let (a, r) = load(gdu).unwrap();
        assert_eq!(a.dir_totals(r.root).0, 12288);
        assert_eq!(a.dir_totals(r.root).1, 4106);
    }

    #[test]
    fn bad_input_gets_an_error_with_its_offset() {
        let cases: &[(&[u8], &str)] = &[
            (b"", "unexpected end"),
            (b"{}", "expected '['"),
            (b"[2,0,{},[{\"name\":\"/\"}]]", "unsupported format version 2"),
            (b"[1,0,{},[{\"name\":\"/\",\"asize\":-1}]]", "unsigned"),
            (b"[1,0,{},[{\"name\":\"/\",\"asize\":1.5}]]", "integer"),
            (b"[1,0,{},[{\"name\":\"/\",\"asize\":99999999999999999999999}]]", "out of range"),
            (b"[1,0,{},[{\"name\":\"/\",\"dsize\":2000000000000000000}]]", "size out of range"),
            (b"[1,0,{},[{\"asize\":1}]]", "without a name"),
            (b"[1,0,{},[{\"name\":\"/\",\"name\":\"x\"}]]", "duplicate name"),
            (b"[1,0,{},[{\"name\":\"/\"},[{\"name\":\"x\",\"excluded\":\"otherfs\"},{}]]]", "excluded directory"),
            (b"[1,0,{},[{\"name\":\"/\"}]] x", "trailing data"),
            (b"[1,0,{},[{\"name\":\"/\"},{\"name\":\"a\\q\"}]]", "invalid escape"),
            (b"[1,0,{},[{\"name\":\"/\"}", "unexpected end"),
            (b"[1,10001,{},[{\"name\":\"/\"}]]", "invalid minor version"),
            (b"[1,0,{},[{\"name\":\"/\"},{\"name\":\"l\",\"nlink\":4294967296}]]", "integer out of range"),
            (b"[1,0,{},[{\"name\":\"/\",\"x\":tru}]]", "invalid literal"),
        ];
        for (input, want) in cases {
            let err = load(input).err().unwrap_or_else(|| panic!("accepted {:?}", String::from_utf8_lossy(input)));
            assert!(err.msg.contains(want), "{:?}: got {err}", String::from_utf8_lossy(input));
            assert!(err.offset <= input.len() as u64);
        }
        // "expected" errors point at the byte that was not the one expected.
        for (input, bad) in [(&b"{}"[..], b'{'), (b"[1 0", b'0'), (b"[1,0,{} [", b'[')] {
            let err = load(input).err().unwrap();
            let at = input.iter().rposition(|&b| b == bad).unwrap();
            assert_eq!(err.offset, at as u64, "{:?}: {err}", String::from_utf8_lossy(input));
        }
    }

    #[test]
    fn nesting_deeper_than_any_real_tree_is_refused_without_recursion() {
        let mut v = b"[1,0,{},[{\"name\":\"/\"}".to_vec();
        for _ in 0..MAX_DEPTH + 10 {
            v.extend_from_slice(b",[{\"name\":\"d\"}");
        }
        let err = load(&v).err().expect("too deep");
        assert!(err.msg.contains("nested too deeply"), "{err}");
        let mut v = b"[1,0,{\"x\":".to_vec();
        v.extend(std::iter::repeat_n(b'[', 100_000));
        assert!(load(&v).err().expect("deep unknown value").msg.contains("nested too deeply"));
    }

    /// Debian's ncdu reading `input` (`-f -`) and writing it back (`-o -`); everything after
    /// the header line, without trailing newlines. None (with a SKIP line) without ncdu,
    /// unless DFDU_REQUIRE_NCDU=1 says it must be there.
    fn through_ncdu(input: &[u8]) -> Option<Vec<u8>> {
        use std::io::Write as _;
        use std::process::{Command, Stdio};
        let child =
            Command::new("ncdu").args(["-f", "-", "-o", "-"]).stdin(Stdio::piped()).stdout(Stdio::piped()).spawn();
        let Ok(mut child) = child else {
            assert!(std::env::var_os("DFDU_REQUIRE_NCDU").is_none(), "ncdu is required but not installed");
            eprintln!("SKIP: ncdu is not installed (apt-get install ncdu)");
            return None;
        };
        child.stdin.take().unwrap().write_all(input).unwrap();
        let out = child.wait_with_output().unwrap();
        assert!(out.status.success(), "ncdu refused {:?}", String::from_utf8_lossy(input));
        Some(body(&out.stdout))
    }

    fn body(export: &[u8]) -> Vec<u8> {
        let start = export.iter().position(|&b| b == b'\n').unwrap() + 1;
        let mut b = export[start..].to_vec();
        while b.last() == Some(&b'\n') {
            b.pop();
        }
        b
    }

    /// Our export of the sample, read and rewritten by ncdu, comes back byte for byte:
    /// field names, which fields are left out, escapes, links, errors and exclusions are
    /// written the way ncdu writes them.
    #[test]
    fn ncdu_rewrites_our_export_unchanged() {
        let (a, r) = load(&sample()).unwrap();
        let ours = export_bytes(&a, r.root);
        if let Some(back) = through_ncdu(&ours) {
            // ncdu 1.x names another file system "othfs"; ncdu 2 and we write "otherfs".
            let back = String::from_utf8_lossy(&back).replace("\"othfs\"", "\"otherfs\"");
            assert_eq!(back, String::from_utf8_lossy(&body(&ours)));
        }
    }

    /// Names that need every kind of escape, and escapes of every kind in the input: what
    /// we read and write again is what ncdu reads and writes again.
    #[test]
    fn names_and_escapes_read_and_written_as_ncdu_does() {
        let mut names: Vec<String> =
            (1u8..0x20).chain([0x7f, b'"', b'\\', b'/']).map(|b| format!("\\u{b:04x}")).collect();
        // Not surrogate pairs: ncdu 1.x encodes each half on its own (see the next test).
        names.extend(
            ["\\n\\r\\t\\b\\f\\/\\\"\\\\x", "\\u00e9\\u07ff\\u0800\\uffff\\u0080", "\\u0041\\u00C9\\u00Ff"]
                .map(String::from),
        );
        names.push("plain \u{e9}".into());
        let mut doc =
            String::from("[1,2,{\"progname\":\"test\"},\n[{\"name\":\"/r\",\"asize\":10,\"dsize\":4096,\"dev\":7}");
        for (i, n) in names.iter().enumerate() {
            doc.push_str(&format!(",\n{{\"name\":\"{n}\",\"asize\":{i},\"dsize\":{}}}", i * 512));
        }
        // A directory that could not be read, a file that could not be stat'ed, nested
        // directories with hard links between them, an excluded entry, another file system.
        doc.push_str(",\n[{\"name\":\"locked\",\"asize\":4096,\"dsize\":4096,\"read_error\":true}],\n{\"name\":\"gone\",\"read_error\":true}");
        doc.push_str(",\n{\"name\":\"one-link\",\"asize\":2,\"ino\":99,\"nlink\":1}");
        doc.push_str(",\n{\"name\":\"unknown-keys\",\"asize\":1,\"x1\":true,\"x2\":false,\"x3\":null,\"x4\":-1.5e3,\"x5\":\"s\",\"x6\":{\"a\":[1,{}]}}");
        doc.push_str(",\n[{\"name\":\"d1\",\"asize\":4096,\"dsize\":4096},\n{\"name\":\"l1\",\"asize\":9,\"dsize\":4096,\"ino\":77,\"hlnkc\":true,\"nlink\":3},\n[{\"name\":\"d2\",\"asize\":4096,\"dsize\":4096,\"dev\":9},\n{\"name\":\"l2\",\"asize\":9,\"dsize\":4096,\"ino\":77,\"hlnkc\":true,\"nlink\":3}],\n{\"name\":\"after\",\"asize\":3,\"dsize\":512}]");
        // Not `[{"name":..,"excluded":"pattern"}]`: we write that directory back as a plain
        // entry (as ncdu 2 writes its own exclusions); ncdu 1.18 keeps the brackets.
        doc.push_str(",\n{\"name\":\"skipped-file\",\"excluded\":\"pattern\"},\n[{\"name\":\"mnt\",\"excluded\":\"otherfs\"}]]]\n");
        let (a, r) = load(doc.as_bytes()).unwrap();
        let ours = body(&export_bytes(&a, r.root));
        if let Some(theirs) = through_ncdu(doc.as_bytes()) {
            let theirs = String::from_utf8_lossy(&theirs).replace("\"othfs\"", "\"otherfs\"").into_bytes();
            assert_eq!(String::from_utf8_lossy(&ours), String::from_utf8_lossy(&theirs));
            assert_eq!(ours, theirs, "raw bytes");
        }
    }

    /// `\\u` escapes decode as the JSON and UTF-16 rules say (std's decoder is the
    /// reference): surrogate pairs make one code point, a lone surrogate is kept as WTF-8.
    #[test]
    fn unicode_escapes_decode_like_utf16() {
        let units: [&[u16]; 6] = [
            &[0x7f, 0x80, 0x7ff, 0x800],
            &[0xffff, 0xe000],
            &[0xd83d, 0xde00],
            &[0xd800, 0xdc00],
            &[0xdbff, 0xdfff, 0x41],
            &[0x10, 0xfeff],
        ];
        for u in units {
            let escaped: String = u.iter().map(|c| format!("\\u{c:04X}")).collect();
            let doc = format!("[1,0,{{}},[{{\"name\":\"/\"}},{{\"name\":\"{escaped}\"}}]]");
            let (a, r) = load(doc.as_bytes()).unwrap();
            let mut name = Vec::new();
            a.child_name(r.root, a.children(r.root).unwrap().start, &mut name);
            assert_eq!(name, String::from_utf16(u).unwrap().into_bytes(), "{escaped}");
        }
        // A high surrogate followed by something else: each is kept on its own.
        let (a, r) = load(b"[1,0,{},[{\"name\":\"/\"},{\"name\":\"\\ud800\\u0041\\udc00\"}]]").unwrap();
        let mut name = Vec::new();
        a.child_name(r.root, a.children(r.root).unwrap().start, &mut name);
        assert_eq!(name, b"\xed\xa0\x80A\xed\xb0\x80", "WTF-8 of U+D800, A, U+DC00");
    }

    /// Names up to the 32 KiB limit are read whole; one byte more is refused.
    #[test]
    fn names_up_to_32_kib_are_read_and_longer_ones_refused() {
        let doc = |len: usize| format!("[1,0,{{}},[{{\"name\":\"/\"}},{{\"name\":\"{}\"}}]]", "n".repeat(len));
        let (a, r) = load(doc(32 * 1024).as_bytes()).unwrap();
        let mut name = Vec::new();
        a.child_name(r.root, a.children(r.root).unwrap().start, &mut name);
        assert_eq!(name.len(), 32 * 1024);
        let err = load(doc(32 * 1024 + 1).as_bytes()).err().expect("a name over 32 KiB");
        assert!(err.msg.contains("longer than 32 KiB"), "{err}");
    }

    /// ncdu 1.x marks hard links with `hlnkc` alone (no `nlink`): names of one inode are
    /// still counted once.
    #[test]
    fn hlnkc_without_nlink_counts_a_link_once() {
        let doc = b"[1,0,{},[{\"name\":\"/\",\"dsize\":4096},{\"name\":\"a\",\"dsize\":8192,\"ino\":5,\"hlnkc\":true},{\"name\":\"b\",\"dsize\":8192,\"ino\":5,\"hlnkc\":true}]]";
        let (a, r) = load(doc).unwrap();
        assert_eq!(a.dir_totals(r.root).0, 4096 + 8192);
        // `hlnkc` means "more than one link": what we write back says at least 2.
        let out = String::from_utf8(export_bytes(&a, r.root)).unwrap();
        let nlinks: Vec<u64> =
            out.split("\"nlink\":").skip(1).map(|t| t.split(['}', ',']).next().unwrap().parse().unwrap()).collect();
        assert!(nlinks.len() == 2 && nlinks.iter().all(|&n| n >= 2), "{out}");
    }

    /// An entry that could not be read marks every directory above it (the browser's
    /// "error below" mark, as ncdu shows it), and no directory beside it.
    #[test]
    fn errors_mark_every_directory_above() {
        let doc = b"[1,0,{},[{\"name\":\"/\"},[{\"name\":\"a\"},[{\"name\":\"b\"},{\"name\":\"bad\",\"read_error\":true}]],[{\"name\":\"clean\"}]]]";
        let (a, r) = load(doc).unwrap();
        let sub = |dir: u32, k: u32| a.dir_of(a.children(dir).unwrap().start + k);
        let (d_a, d_clean) = (sub(r.root, 0), sub(r.root, 1));
        let d_b = sub(d_a, 0);
        for d in [r.root, d_a, d_b] {
            assert!(a.dir_flags(d) & arena::D_ERROR_BELOW != 0, "dir {d}");
        }
        assert_eq!(a.dir_flags(d_clean) & arena::D_ERROR_BELOW, 0);
    }

    /// A deterministic generator (xorshift) so failures reproduce.
    struct Rng(u64);
    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0
        }
        fn below(&mut self, n: usize) -> usize {
            (self.next() % n.max(1) as u64) as usize
        }
    }

    fn mutate(rng: &mut Rng, base: &[u8]) -> Vec<u8> {
        let mut v = base.to_vec();
        for _ in 0..1 + rng.below(4) {
            let at = rng.below(v.len() + 1);
            const TOKENS: &[&[u8]] = &[
                b"[",
                b"]",
                b"{",
                b"}",
                b",",
                b":",
                b"\"",
                b"\\",
                b"\\u",
                b"-",
                b"1e9",
                b"99999999999999999999",
                b"\xff",
                b"\0",
                b"null",
                b"{\"name\":\"x\"}",
                b"[{\"name\":\"d\"}",
            ];
            match rng.below(6) {
                0 => v.truncate(at),
                1 => {
                    if at < v.len() {
                        v[at] = rng.next() as u8;
                    }
                }
                2 => {
                    let t = TOKENS[rng.below(TOKENS.len())];
                    v.splice(at..at, t.iter().copied());
                }
                3 => {
                    let end = (at + rng.below(40)).min(v.len());
                    v.drain(at..end);
                }
                4 => {
                    let end = (at + rng.below(200)).min(v.len());
                    let piece = v[at..end].to_vec();
                    v.splice(at..at, piece);
                }
                _ => {
                    if at < v.len() {
                        v[at] = b"[]{},:\"0"[rng.below(8)];
                    }
                }
            }
        }
        v
    }

    /// Ten thousand damaged inputs: every one is either read or refused with an
    /// error, never a panic, and what is read stays proportional to the input.
    #[test]
    fn survives_ten_thousand_corrupted_inputs() {
        let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
        let base = sample();
        let (big_arena, big) = load(&base).unwrap();
        let bigger = export_bytes(&big_arena, big.root);
        let mut accepted = 0;
        // DFDU_FUZZ_ITERS=1000000 for a longer hunt; crashers go to tests/corpus/ncdu.
        let iters: usize = std::env::var("DFDU_FUZZ_ITERS").ok().and_then(|v| v.parse().ok()).unwrap_or(10_000);
        for i in 0..iters {
            let input = mutate(&mut rng, if i % 2 == 0 { &base } else { &bigger });
            let a = Arena::new();
            match import(&input[..], &a) {
                Ok(_) => {
                    accepted += 1;
                    assert!(a.entry_count() as usize <= input.len(), "entries beyond what the input can hold");
                }
                Err(e) => assert!(e.offset <= input.len() as u64 + 1, "offset {} past the end", e.offset),
            }
        }
        assert!(accepted > 0 && accepted < iters, "the mutations must produce both kinds: {accepted}");
    }

    /// Inputs that once broke the reader (tests/corpus/ncdu), kept as regressions.
    #[test]
    fn corpus_of_past_failures() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/corpus/ncdu");
        let mut n = 0;
        for entry in std::fs::read_dir(&dir).unwrap() {
            let input = std::fs::read(entry.unwrap().path()).unwrap();
            let _ = load(&input);
            n += 1;
        }
        assert!(n > 0, "the corpus is empty");
    }

    /// Issue 10.11: an import into an arena that runs out of ids is an error that says so.
    #[test]
    fn an_import_that_fills_the_arena_fails_with_a_message() {
        let json = br#"[1,2,{"progname":"t"},[{"name":"/r"},{"name":"a"},{"name":"b"},[{"name":"c"},{"name":"d"}]]]"#;
        let a = Arena::new();
        a.leave_ids(2);
        let e = import(&json[..], &a).err().expect("the arena is full");
        assert!(e.msg.contains("too many entries"), "{}", e.msg);
        assert!(import(&json[..], &Arena::new()).is_ok());
    }

    /// Issue 10, item 7: the importer held about 64 bytes per child (plus its name) until
    /// the folder closed. Counts the bytes its staging holds at most while importing one
    /// folder of 100,000 entries, and bounds them per entry.
    #[test]
    fn one_huge_folder_stages_few_bytes_per_entry() {
        let n = 100_000u64;
        let mut json = String::from("[1,2,{\"progname\":\"x\",\"progver\":\"1\",\"timestamp\":1},[{\"name\":\"/r\"}");
        for i in 0..n {
            json.push_str(&format!(",{{\"name\":\"file-{i:06}\",\"asize\":{},\"dsize\":{}}}", i * 7, i * 4096));
        }
        json.push_str(",{\"name\":\"linked\",\"asize\":1,\"dsize\":512,\"ino\":9,\"nlink\":2,\"hlnkc\":true}");
        json.push_str("]]\n");
        STAGED_BYTES.with(|c| c.set((0, 0)));
        let a = Arena::new();
        let root = import(json.as_bytes(), &a).expect("imports").root;
        let (now, peak) = STAGED_BYTES.with(|c| c.get());
        assert_eq!(now, 0, "staging is given back when the folder closes");
        let per_entry = peak.saturating_sub(1 << 16) as f64 / n as f64;
        assert!(per_entry <= 32.0, "staging held {peak} bytes at most: {per_entry:.1} per entry");
        // And it all arrived.
        assert_eq!(a.dir_totals(root).2, n + 1);
        let kids = a.children(root).unwrap();
        let mut name = Vec::new();
        a.child_name(root, kids.start + 12_345, &mut name);
        assert_eq!(name, b"file-012345");
        assert_eq!(a.own_sizes(kids.start + 12_345), (12_345 * 4096, 12_345 * 7));
        assert!(a.link_of(kids.end - 1).is_some());
    }
}
