//! The terminal layer, without a TUI crate. Four parts:
//!
//! * **`Screen`**: an in-memory grid of cells, each holding one character cluster (a
//!   base character plus any zero-width marks after it) and a `Style`. A wide character
//!   fills its cell and leaves the next one empty. The browser draws into it; tests read
//!   it back as text.
//! * **`Screen::paint`**: turns a frame into ANSI bytes, rewriting only the rows that
//!   differ from the previous frame (cursor address, SGR runs, `EL` for a blank tail).
//! * **`Decoder`**: keys from a byte stream. Several keys may arrive in one read and one
//!   key may be split across reads; an incomplete escape sequence is kept until more
//!   bytes come or the caller times out (`flush`), which makes a lone ESC a key.
//! * **`Session`**: raw mode, the alternate screen and a hidden cursor while the browser
//!   runs, and the terminal put back on every way out: `leave` on quit, a panic hook,
//!   and the browser's handling of the `platform::SIG_*` requests (quit, suspend,
//!   continue). Terminal modes and signals themselves are `platform/`'s.
//!
//! Also here: `escape` (names as text: control characters and invalid UTF-8 as `\x..`)
//! and `fit` (exactly N columns, long text cut in the middle).

pub mod width;

use crate::meta::Errno;
use crate::platform;
use crate::term::width::char_width;

/// Foreground colours the browser uses (only with colour on).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Color {
    #[default]
    Default,
    Red,
    Green,
    Yellow,
    Blue,
}

/// How a cell is drawn.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Style {
    pub bold: bool,
    pub reverse: bool,
    pub fg: Color,
}

impl Style {
    pub const PLAIN: Style = Style { bold: false, reverse: false, fg: Color::Default };
    pub const REVERSE: Style = Style { bold: false, reverse: true, fg: Color::Default };
    pub const BOLD: Style = Style { bold: true, reverse: false, fg: Color::Default };

    pub fn fg(self, fg: Color) -> Style {
        Style { fg, ..self }
    }
}

/// One cell: a character (`'\0'` for the right half of a wide one), its style, and
/// any zero-width marks after it (an index into `Screen::marks`, 0 for none). Twelve
/// bytes and no allocation, so a frame and its predecessor cost little.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Cell {
    ch: char,
    style: Style,
    marks: u32,
}

const BLANK: Cell = Cell { ch: ' ', style: Style::PLAIN, marks: 0 };
/// The right half of a wide character.
const WIDE_REST: char = '\0';

/// A frame: `width` × `height` cells.
#[derive(Clone, Debug)]
pub struct Screen {
    pub width: usize,
    pub height: usize,
    cells: Vec<Cell>,
    /// Zero-width marks that follow a cell's character (rare: combining accents).
    marks: Vec<String>,
}

impl Screen {
    pub fn new(width: usize, height: usize) -> Screen {
        Screen { width, height, cells: vec![BLANK; width * height], marks: Vec::new() }
    }

    /// Blanks every cell.
    pub fn clear(&mut self) {
        self.cells.fill(BLANK);
        self.marks.clear();
    }

    fn cell(&mut self, row: usize, col: usize) -> &mut Cell {
        &mut self.cells[row * self.width + col]
    }

    /// Sets one cell, blanking the other half of any wide character it cuts in two.
    fn set(&mut self, row: usize, col: usize, ch: char, style: Style) {
        if self.cell(row, col).ch == WIDE_REST && col > 0 {
            let left = self.cell(row, col - 1);
            *left = Cell { ch: ' ', marks: 0, ..*left };
        }
        if col + 1 < self.width && self.cell(row, col + 1).ch == WIDE_REST {
            let right = self.cell(row, col + 1);
            right.ch = ' ';
        }
        *self.cell(row, col) = Cell { ch, style, marks: 0 };
    }

    /// Adds a zero-width mark to the cluster in cell (`row`, `col`).
    fn add_mark(&mut self, row: usize, col: usize, mark: char) {
        let k = self.cell(row, col).marks;
        if k == 0 {
            self.marks.push(mark.to_string());
            self.cell(row, col).marks = self.marks.len() as u32;
        } else {
            self.marks[k as usize - 1].push(mark);
        }
    }

    fn marks_of(&self, c: &Cell) -> &str {
        if c.marks == 0 {
            ""
        } else {
            &self.marks[c.marks as usize - 1]
        }
    }

    /// Draws `s` from (`row`, `col`), clipped at the right edge; returns the column after
    /// it. `s` must hold no control characters (see `escape`).
    pub fn put(&mut self, row: usize, col: usize, s: &str, style: Style) -> usize {
        if row >= self.height {
            return col;
        }
        let mut x = col;
        for ch in s.chars() {
            let w = char_width(ch);
            if w == 0 {
                // A mark joins the cluster to its left (skipping a wide character's
                // right half); with nothing on the left it is dropped.
                let mut at = x;
                while at > col {
                    at -= 1;
                    if self.cell(row, at).ch != WIDE_REST {
                        self.add_mark(row, at, ch);
                        break;
                    }
                }
                continue;
            }
            if x + w > self.width {
                // A wide character that does not fit leaves a blank, not half a glyph.
                if x < self.width {
                    self.set(row, x, ' ', style);
                }
                return self.width;
            }
            self.set(row, x, ch, style);
            if w == 2 {
                self.set(row, x + 1, WIDE_REST, style);
            }
            x += w;
        }
        x
    }

    /// Fills `n` cells of `row` from `col` with `ch` (a one-column character).
    pub fn fill(&mut self, row: usize, col: usize, n: usize, ch: char, style: Style) {
        for x in col..(col + n).min(self.width) {
            if row < self.height {
                self.set(row, x, ch, style);
            }
        }
    }

    fn push_cell(&self, c: &Cell, out: &mut String) {
        if c.ch != WIDE_REST {
            out.push(c.ch);
            out.push_str(self.marks_of(c));
        }
    }

    /// The text of one row (right halves of wide characters left out).
    #[cfg(test)]
    pub fn row_text(&self, row: usize) -> String {
        let mut out = String::new();
        for c in &self.cells[row * self.width..(row + 1) * self.width] {
            self.push_cell(c, &mut out);
        }
        out
    }

    /// All rows, trailing blanks trimmed, joined by newlines (what tests compare).
    #[cfg(test)]
    pub fn text(&self) -> String {
        (0..self.height).map(|r| self.row_text(r).trim_end().to_string()).collect::<Vec<_>>().join("\n")
    }

    /// The style of the cell at (`row`, `col`).
    #[cfg(test)]
    pub fn style_at(&self, row: usize, col: usize) -> Style {
        self.cells[row * self.width + col].style
    }

    /// Whether row `row` looks the same here and in `other` (same size).
    fn same_row(&self, other: &Screen, row: usize) -> bool {
        let range = row * self.width..(row + 1) * self.width;
        self.cells[range.clone()]
            .iter()
            .zip(&other.cells[range])
            .all(|(a, b)| a.ch == b.ch && a.style == b.style && self.marks_of(a) == other.marks_of(b))
    }

    /// Appends the bytes that turn `prev` (or, without it, anything) into this frame.
    pub fn paint(&self, prev: Option<&Screen>, color: bool, out: &mut Vec<u8>) {
        let prev = prev.filter(|p| p.width == self.width && p.height == self.height);
        if prev.is_none() {
            out.extend_from_slice(b"\x1b[0m\x1b[H\x1b[2J");
        }
        let mut text = String::new();
        for row in 0..self.height {
            if prev.is_some_and(|p| self.same_row(p, row)) {
                continue;
            }
            let cells = &self.cells[row * self.width..(row + 1) * self.width];
            let blank = |c: &Cell| c.ch == ' ' && c.marks == 0 && c.style == Style::PLAIN;
            let end = cells.iter().rposition(|c| !blank(c)).map_or(0, |i| i + 1);
            out.extend_from_slice(format!("\x1b[{};1H", row + 1).as_bytes());
            let mut current = None;
            for c in &cells[..end] {
                if current != Some(c.style) {
                    sgr(c.style, color, out);
                    current = Some(c.style);
                }
                text.clear();
                self.push_cell(c, &mut text);
                out.extend_from_slice(text.as_bytes());
            }
            out.extend_from_slice(b"\x1b[0m");
            if end < self.width {
                out.extend_from_slice(b"\x1b[K");
            }
        }
    }
}

fn sgr(s: Style, color: bool, out: &mut Vec<u8>) {
    out.extend_from_slice(b"\x1b[0");
    if s.bold {
        out.extend_from_slice(b";1");
    }
    if s.reverse {
        out.extend_from_slice(b";7");
    }
    if color {
        let code: &[u8] = match s.fg {
            Color::Default => b"",
            Color::Red => b";31",
            Color::Green => b";32",
            Color::Yellow => b";33",
            Color::Blue => b";34",
        };
        out.extend_from_slice(code);
    }
    out.push(b'm');
}

/// A name (any bytes) as text that is safe to draw: valid UTF-8 is kept; tab, newline
/// and carriage return become `\t`, `\n`, `\r`; other control characters, and bytes
/// that are not UTF-8, become `\x..`; bidirectional overrides and line separators, which
/// would rearrange the row around them, become `\u{..}`.
pub fn escape(bytes: &[u8]) -> String {
    use std::fmt::Write;
    let mut out = String::with_capacity(bytes.len());
    for chunk in bytes.utf8_chunks() {
        for c in chunk.valid().chars() {
            match c {
                '\t' => out.push_str("\\t"),
                '\n' => out.push_str("\\n"),
                '\r' => out.push_str("\\r"),
                c if (c as u32) < 0x20 || c == '\x7f' => {
                    let _ = write!(out, "\\x{:02x}", c as u32);
                }
                '\u{80}'..='\u{9f}' | '\u{2028}' | '\u{2029}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}' => {
                    let _ = write!(out, "\\u{{{:x}}}", c as u32);
                }
                c => out.push(c),
            }
        }
        for b in chunk.invalid() {
            let _ = write!(out, "\\x{b:02x}");
        }
    }
    out
}

/// Columns `s` takes.
pub fn width(s: &str) -> usize {
    crate::term::width::str_width(s)
}

/// `s` in exactly `cols` columns: padded with spaces, or cut in the middle with `...`
/// (whole characters only; a wide character that would straddle the cut leaves a space).
pub fn fit(s: &str, cols: usize) -> String {
    let w = width(s);
    if w <= cols {
        let mut out = String::with_capacity(s.len() + cols - w);
        out.push_str(s);
        out.extend(std::iter::repeat_n(' ', cols - w));
        return out;
    }
    if cols < 5 {
        return take_cols(s, cols).0;
    }
    let room = cols - 3;
    let (head, head_w) = take_cols(s, room - room / 2);
    let tail = tail_cols(s, room / 2);
    let mut out = head;
    out.extend(std::iter::repeat_n(' ', room - room / 2 - head_w));
    out.push_str("...");
    let tail_w = width(&tail);
    out.extend(std::iter::repeat_n(' ', room / 2 - tail_w));
    out.push_str(&tail);
    out
}

/// The longest prefix of `s` that fits `cols`, with the marks that follow it, padded
/// to `cols`; and the width without the padding.
fn take_cols(s: &str, cols: usize) -> (String, usize) {
    let mut out = String::new();
    let mut w = 0;
    for c in s.chars() {
        let cw = char_width(c);
        if w + cw > cols {
            break;
        }
        out.push(c);
        w += cw;
    }
    let used = w;
    out.extend(std::iter::repeat_n(' ', cols - w));
    (out, used)
}

/// The longest suffix of `s` that fits `cols`, starting at a base character.
fn tail_cols(s: &str, cols: usize) -> String {
    let chars: Vec<char> = s.chars().collect();
    let mut start = chars.len();
    let mut w = 0;
    let mut i = chars.len();
    while i > 0 {
        i -= 1;
        let cw = char_width(chars[i]);
        if w + cw > cols {
            break;
        }
        w += cw;
        if cw > 0 {
            start = i;
        }
    }
    chars[start..].iter().collect()
}

/// A key press.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Key {
    Char(char),
    Up,
    Down,
    Left,
    Right,
    PageUp,
    PageDown,
    Home,
    End,
    Enter,
    Backspace,
    Tab,
    Esc,
    Delete,
    /// Ctrl and a letter, as the letter (`Ctrl('l')`).
    Ctrl(char),
    /// A sequence we do not use (function keys, Alt combinations, ...).
    Other,
}

/// Keys from a byte stream; see the module doc.
#[derive(Default)]
pub struct Decoder {
    held: Vec<u8>,
}

/// Bound on a held, incomplete sequence; past it the bytes are dropped.
const MAX_HELD: usize = 64;

enum Step {
    Key(Key, usize),
    /// More bytes are needed.
    Incomplete,
}

impl Decoder {
    /// Decodes what `bytes` completes; an incomplete sequence at the end is held.
    pub fn feed(&mut self, bytes: &[u8], out: &mut Vec<Key>) {
        self.held.extend_from_slice(bytes);
        let mut at = 0;
        while at < self.held.len() {
            match decode(&self.held[at..]) {
                Step::Key(k, n) => {
                    out.push(k);
                    at += n;
                }
                Step::Incomplete => break,
            }
        }
        self.held.drain(..at);
        if self.held.len() > MAX_HELD {
            self.held.clear();
        }
    }

    /// Whether bytes are held: wait a little for the rest, then `flush`.
    pub fn pending(&self) -> bool {
        !self.held.is_empty()
    }

    /// No more bytes came: a held ESC is the Esc key; the rest are taken as they are.
    pub fn flush(&mut self, out: &mut Vec<Key>) {
        let held = std::mem::take(&mut self.held);
        for (i, &b) in held.iter().enumerate() {
            out.push(match b {
                0x1b if i == 0 => Key::Esc,
                b' '..=b'~' => Key::Char(b as char),
                _ => Key::Other,
            });
        }
    }
}

fn decode(b: &[u8]) -> Step {
    match b[0] {
        0x1b => decode_escape(b),
        b'\r' | b'\n' => Step::Key(Key::Enter, 1),
        0x7f | 0x08 => Step::Key(Key::Backspace, 1),
        b'\t' => Step::Key(Key::Tab, 1),
        c @ 0x01..=0x1a => Step::Key(Key::Ctrl((c + b'a' - 1) as char), 1),
        c if c < 0x80 => Step::Key(if c < 0x20 { Key::Other } else { Key::Char(c as char) }, 1),
        c => {
            let n = match c {
                0xc2..=0xdf => 2,
                0xe0..=0xef => 3,
                0xf0..=0xf4 => 4,
                _ => return Step::Key(Key::Other, 1),
            };
            if b.len() < n {
                return Step::Incomplete;
            }
            match std::str::from_utf8(&b[..n]) {
                Ok(s) => Step::Key(Key::Char(s.chars().next().unwrap_or(' ')), n),
                Err(_) => Step::Key(Key::Other, 1),
            }
        }
    }
}

fn decode_escape(b: &[u8]) -> Step {
    let Some(&kind) = b.get(1) else { return Step::Incomplete };
    match kind {
        b'[' => {
            // CSI: parameters and intermediates, then one final byte.
            let mut i = 2;
            while i < b.len() && (0x20..0x40).contains(&b[i]) {
                i += 1;
            }
            let Some(&fin) = b.get(i) else { return Step::Incomplete };
            let params = &b[2..i];
            let first: u32 = params
                .split(|&c| c == b';')
                .next()
                .and_then(|p| std::str::from_utf8(p).ok()?.parse().ok())
                .unwrap_or(0);
            let key = match fin {
                b'~' => match first {
                    1 | 7 => Key::Home,
                    4 | 8 => Key::End,
                    5 => Key::PageUp,
                    6 => Key::PageDown,
                    3 => Key::Delete,
                    _ => Key::Other,
                },
                _ => final_key(fin),
            };
            Step::Key(key, i + 1)
        }
        b'O' => {
            let Some(&fin) = b.get(2) else { return Step::Incomplete };
            Step::Key(final_key(fin), 3)
        }
        // Anything else after ESC: the user pressed Esc and then a key, faster than
        // the wait for a sequence (dfdu has no Alt bindings).
        _ => Step::Key(Key::Esc, 1),
    }
}

/// Alternate screen, cursor hidden, no autowrap (the last cell of the last row must not
/// scroll the screen).
const ENTER: &[u8] = b"\x1b[?1049h\x1b[?25l\x1b[?7l\x1b[0m\x1b[H\x1b[2J";
const LEAVE: &[u8] = b"\x1b[0m\x1b[?7h\x1b[?25h\x1b[?1049l";

/// Puts the terminal back: normal screen, cursor, modes. Safe to call at any time, more
/// than once, from any thread (the panic hook does).
pub fn restore() {
    if platform::term_size().is_some() {
        let _ = platform::term_write(LEAVE);
    }
    platform::term_raw_leave();
}

/// The terminal while the browser runs.
pub struct Session {
    prev: Option<Screen>,
    color: bool,
    out: Vec<u8>,
}

impl Session {
    /// Raw mode and the alternate screen; installs the panic hook that puts them back.
    pub fn start(color: bool) -> Result<Session, Errno> {
        platform::term_raw_enter()?;
        platform::oom::set_hook(restore);
        static HOOK: std::sync::Once = std::sync::Once::new();
        // Our own message instead of chaining to std's default hook: taking that hook
        // links std's backtrace printer (gimli, addr2line, the unwinder: about 150 KB of
        // the static binary, docs/platforms.md "Static binary").
        HOOK.call_once(|| {
            std::panic::set_hook(Box::new(|info| {
                restore();
                eprintln!("dfdu: {info}");
            }));
        });
        let s = Session { prev: None, color, out: Vec::with_capacity(16 * 1024) };
        if let Err(e) = platform::term_write(ENTER) {
            restore();
            return Err(e);
        }
        Ok(s)
    }

    /// The window as (columns, rows); 80×24 if the terminal does not say.
    pub fn size(&self) -> (usize, usize) {
        match platform::term_size() {
            Some((c, r)) if c > 0 && r > 0 => (c as usize, r as usize),
            _ => (80, 24),
        }
    }

    /// Shows `screen`, sending only what changed since the last frame.
    pub fn draw(&mut self, screen: &Screen) -> Result<(), Errno> {
        self.out.clear();
        screen.paint(self.prev.as_ref(), self.color, &mut self.out);
        if self.out.is_empty() {
            return Ok(());
        }
        platform::term_write(&self.out)?;
        match &mut self.prev {
            Some(p) if p.width == screen.width && p.height == screen.height => p.clone_from(screen),
            _ => self.prev = Some(screen.clone()),
        }
        Ok(())
    }

    /// Waits up to `timeout_ms` for input and decodes it into `keys`. An error means the
    /// terminal is gone.
    pub fn read(&mut self, decoder: &mut Decoder, timeout_ms: u32, keys: &mut Vec<Key>) -> Result<(), Errno> {
        let mut buf = [0u8; 256];
        let n = platform::term_wait(&mut buf, timeout_ms)?;
        if n > 0 {
            decoder.feed(&buf[..n], keys);
        } else if decoder.pending() {
            decoder.flush(keys);
        }
        Ok(())
    }

    /// Puts the terminal back for a stop (SIGTSTP), stops, and takes it again when
    /// continued; the next frame is drawn whole.
    pub fn suspend(&mut self) {
        restore();
        platform::term_stop_self();
        self.resume();
    }

    /// Takes the terminal again (after SIGCONT: the shell may have reset it).
    pub fn resume(&mut self) {
        let _ = platform::term_raw_enter();
        let _ = platform::term_write(ENTER);
        self.prev = None;
    }

    /// Forgets what is on the terminal: the next frame is drawn whole.
    pub fn invalidate(&mut self) {
        self.prev = None;
    }

    /// Puts the terminal back.
    pub fn leave(self) {
        restore();
    }
}

/// The key named by the final byte of `ESC [ …` and `ESC O …` (arrows, Home, End).
fn final_key(fin: u8) -> Key {
    match fin {
        b'A' => Key::Up,
        b'B' => Key::Down,
        b'C' => Key::Right,
        b'D' => Key::Left,
        b'H' => Key::Home,
        b'F' => Key::End,
        _ => Key::Other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn keys(chunks: &[&[u8]]) -> Vec<Key> {
        let mut d = Decoder::default();
        let mut out = Vec::new();
        for c in chunks {
            d.feed(c, &mut out);
        }
        if d.pending() {
            d.flush(&mut out);
        }
        out
    }

    #[test]
    fn several_keys_in_one_read() {
        use Key::*;
        assert_eq!(keys(&[b"jj\x1b[B\x1b[A\rq"]), [Char('j'), Char('j'), Down, Up, Enter, Char('q')]);
        assert_eq!(
            keys(&[b"\x1bOA\x1bOB\x1b[5~\x1b[6~\x1b[H\x1b[F\x1b[1~\x1b[4~"]),
            [Up, Down, PageUp, PageDown, Home, End, Home, End]
        );
        assert_eq!(keys(&[b"\x7f\x08\t\x1b[3~\x1b[1;5C"]), [Backspace, Backspace, Tab, Delete, Right]);
    }

    #[test]
    fn sequences_split_across_reads() {
        use Key::*;
        assert_eq!(keys(&[b"\x1b", b"[", b"B"]), [Down]);
        assert_eq!(keys(&[b"j\x1b[", b"6~k"]), [Char('j'), PageDown, Char('k')]);
        assert_eq!(keys(&[b"\xe6\x97", b"\xa5"]), [Char('日')]);
    }

    #[test]
    fn a_lone_escape_is_a_key_after_the_timeout() {
        use Key::*;
        let mut d = Decoder::default();
        let mut out = Vec::new();
        d.feed(b"\x1b", &mut out);
        assert!(out.is_empty() && d.pending(), "held: it may start a sequence");
        d.flush(&mut out);
        assert_eq!(out, [Esc]);
        assert_eq!(keys(&[b"\x1b\x1b"]), [Esc, Esc]);
        assert_eq!(keys(&[b"\x1bq"]), [Esc, Char('q')], "Esc and a key typed fast are both kept");
        assert_eq!(keys(&[b"\x03\x1a"]), [Ctrl('c'), Ctrl('z')]);
    }

    #[test]
    fn names_are_escaped() {
        for (raw, shown) in [
            (&b"plain"[..], "plain"),
            (b"new\nline\ttab", "new\\nline\\ttab"),
            (b"bell\x07esc\x1b", "bell\\x07esc\\x1b"),
            (b"bad\xff\xfeutf8", "bad\\xff\\xfeutf8"),
            ("caf\u{e9} \u{65e5}".as_bytes(), "caf\u{e9} \u{65e5}"),
            ("rtl\u{202e}txt".as_bytes(), "rtl\\u{202e}txt"),
            ("c1\u{85}".as_bytes(), "c1\\u{85}"),
        ] {
            assert_eq!(escape(raw), shown);
        }
    }

    #[test]
    fn fit_pads_and_cuts_in_the_middle() {
        let cases: &[(&str, usize, &str)] = &[
            ("abc", 5, "abc  "),
            ("abcdefghij", 9, "abc...hij"),
            ("abcdefghij", 8, "abc...ij"),
            ("日本語のファイル名", 10, "日本... 名"),
            ("日本語のファイル名", 11, "日本...ル名"),
            ("abcdef", 4, "abcd"),
            ("日本", 3, "日 "),
            ("e\u{301}e\u{301}e\u{301}e\u{301}e\u{301}e\u{301}", 5, "e\u{301}...e\u{301}"),
        ];
        for &(s, cols, want) in cases {
            let got = fit(s, cols);
            assert_eq!(got, want, "fit({s:?}, {cols})");
            assert_eq!(width(&got), cols, "fit({s:?}, {cols}) is {cols} columns");
        }
    }

    #[test]
    fn wide_characters_take_two_cells_and_never_split() {
        let mut s = Screen::new(6, 2);
        assert_eq!(s.put(0, 0, "a日b", Style::PLAIN), 4);
        assert_eq!(s.row_text(0), "a日b  ");
        s.put(0, 2, "x", Style::PLAIN);
        assert_eq!(s.row_text(0), "a xb  ", "overwriting half of a wide character blanks the rest");
        assert_eq!(s.put(1, 5, "日", Style::PLAIN), 6);
        assert_eq!(s.row_text(1), "      ", "no half glyph at the edge");
        s.put(1, 0, "e\u{301}", Style::PLAIN);
        assert_eq!(s.row_text(1), "e\u{301}     ");
    }

    #[test]
    fn paint_sends_only_changed_rows() {
        let mut a = Screen::new(10, 3);
        a.put(0, 0, "top", Style::REVERSE);
        a.put(2, 0, "bottom", Style::BOLD.fg(Color::Blue));
        let mut out = Vec::new();
        a.paint(None, true, &mut out);
        let full = String::from_utf8(out.clone()).unwrap();
        assert!(full.starts_with("\x1b[0m\x1b[H\x1b[2J"));
        assert!(full.contains("\x1b[1;1H\x1b[0;7mtop"));
        assert!(full.contains("\x1b[3;1H\x1b[0;1;34mbottom\x1b[0m\x1b[K"));
        let mut b = a.clone();
        b.put(1, 0, "mid", Style::PLAIN);
        out.clear();
        b.paint(Some(&a), false, &mut out);
        assert_eq!(String::from_utf8(out).unwrap(), "\x1b[2;1H\x1b[0mmid\x1b[0m\x1b[K");
        let mut out = Vec::new();
        a.paint(None, false, &mut out);
        assert!(!String::from_utf8(out).unwrap().contains(";34"), "no colour codes without colour");
    }
}
