//! Entry names for generated trees: mostly source-tree ASCII, plus the awkward ones.
//!
//! Mix per name (files, directories and symlinks alike): about 2% contain spaces, about
//! 0.5% are non-ASCII UTF-8 (accents in NFC and NFD, combining marks, right-to-left
//! scripts, CJK, an emoji), about 0.01% contain bytes that are not valid UTF-8, about 3%
//! are dot-files and about 0.5% are long (120–250 bytes). The plan adds exactly one name
//! with a newline itself (`newline_name`).
//!
//! Every name ends in the entry's per-directory sequence number, so names in one directory
//! are distinct by construction; the plan still checks, because a word followed by digits
//! could in principle spell another word's name.

use crate::rng::Rng;

const WORDS: &[&str] = &[
    "src",
    "lib",
    "core",
    "util",
    "test",
    "tests",
    "docs",
    "build",
    "include",
    "vendor",
    "config",
    "cache",
    "assets",
    "images",
    "scripts",
    "tools",
    "internal",
    "common",
    "api",
    "cmd",
    "pkg",
    "net",
    "io",
    "fs",
    "data",
    "model",
    "view",
    "parser",
    "lexer",
    "driver",
    "arch",
    "kernel",
    "mm",
    "crypto",
    "sound",
    "firmware",
    "node_modules",
    "target",
    "debug",
    "release",
    "examples",
    "bench",
    "fixtures",
    "locale",
    "share",
    "bin",
    "etc",
    "log",
    "tmp",
    "backup",
    "photos",
    "music",
    "projects",
    "work",
    "notes",
    "old",
    "new",
    "legacy",
    "plugins",
    "themes",
    "static",
    "public",
    "private",
    "server",
    "client",
    "ui",
    "widgets",
    "events",
    "handlers",
    "storage",
    "index",
    "schema",
    "proto",
    "gen",
    "third_party",
];

const CAPITALISED: &[&str] = &[
    "Copy of",
    "New Folder",
    "My Documents",
    "Screenshot",
    "Meeting notes",
    "Final report",
    "Old backup",
    "Project plan",
    "Untitled",
    "IMG",
];

const EXTENSIONS: &[&str] = &[
    "c", "h", "rs", "py", "js", "ts", "json", "md", "txt", "o", "go", "java", "html", "css", "yml", "toml", "png",
    "jpg", "svg", "sh", "mk", "cpp", "hpp", "rb", "pl", "lock", "xml", "log", "gz", "pdf",
];

/// Non-ASCII stems: NFC and NFD forms of the same word, stacked combining marks, RTL text
/// with and without a right-to-left mark, CJK, Cyrillic, Greek, Hangul and an emoji.
const UTF8_STEMS: &[&str] = &[
    "caf\u{e9}",
    "cafe\u{301}",
    "na\u{ef}ve",
    "\u{dc}n\u{ef}c\u{f6}d\u{e9}",
    "\u{65e5}\u{672c}\u{8a9e}",
    "\u{41f}\u{440}\u{438}\u{432}\u{435}\u{442}",
    "\u{5e9}\u{5dc}\u{5d5}\u{5dd}",
    "\u{645}\u{631}\u{62d}\u{628}\u{627}",
    "\u{200f}rtl\u{5d0}\u{5d1}",
    "e\u{301}\u{302}\u{323}x",
    "\u{395}\u{3bb}\u{3bb}\u{3ac}\u{3b4}\u{3b1}",
    "\u{d55c}\u{ad6d}\u{c5b4}",
    "emoji_\u{1f4c1}",
    "A\u{30a}ngstr\u{f6}m",
    "\u{c5}ngstr\u{f6}m",
];

/// Byte strings that are not UTF-8: Latin-1, stray continuation bytes, a truncated
/// sequence and an overlong encoding of '/'.
const INVALID_STEMS: &[&[u8]] = &[b"latin1_caf\xe9", b"bad\xff\xfe", b"trunc\xe2\x82", b"overlong\xc0\xaf"];

/// What kind of entry a name is for; only files carry an extension.
#[derive(Clone, Copy, PartialEq)]
pub enum NameKind {
    File,
    Dir,
    Symlink,
}

/// A name for the entry with sequence number `seq` in its directory.
pub fn entry_name(rng: &mut Rng, kind: NameKind, seq: u32) -> Vec<u8> {
    let (mut name, separator) = stem(rng, kind);
    name.extend_from_slice(format!("{separator}{seq}").as_bytes());
    if kind == NameKind::File && rng.chance(0.9) {
        name.push(b'.');
        name.extend_from_slice(EXTENSIONS[rng.index(EXTENSIONS.len())].as_bytes());
    }
    if kind == NameKind::Symlink && rng.chance(0.3) {
        name.extend_from_slice(b".link");
    }
    name
}

/// The part before the sequence number, and the separator to put before the number
/// (a space for the names that have spaces anyway).
fn stem(rng: &mut Rng, kind: NameKind) -> (Vec<u8>, &'static str) {
    let roll = rng.unit();
    if roll < 0.0001 {
        (INVALID_STEMS[rng.index(INVALID_STEMS.len())].to_vec(), "_")
    } else if roll < 0.0051 {
        (UTF8_STEMS[rng.index(UTF8_STEMS.len())].as_bytes().to_vec(), "_")
    } else if roll < 0.0251 {
        let phrase = format!("{} {}", CAPITALISED[rng.index(CAPITALISED.len())], word(rng));
        (phrase.into_bytes(), " ")
    } else if roll < 0.0551 {
        (format!(".{}", word(rng)).into_bytes(), "_")
    } else if roll < 0.0601 {
        (long_stem(rng), "_")
    } else if kind == NameKind::Dir || rng.chance(0.5) {
        (word(rng).as_bytes().to_vec(), "_")
    } else {
        (format!("{}_{}", word(rng), word(rng)).into_bytes(), "_")
    }
}

/// The one name in the tree with a newline in it.
pub fn newline_name(seq: u32) -> Vec<u8> {
    format!("line\nbreak_{seq}.txt").into_bytes()
}

fn word(rng: &mut Rng) -> &'static str {
    WORDS[rng.index(WORDS.len())]
}

/// A long ASCII stem of 120–240 bytes (plus the suffix, still under the 255-byte limit).
fn long_stem(rng: &mut Rng) -> Vec<u8> {
    let target_len = 120 + rng.index(121);
    let mut stem = Vec::with_capacity(target_len + 16);
    while stem.len() < target_len {
        if !stem.is_empty() {
            stem.push(b'-');
        }
        stem.extend_from_slice(word(rng).as_bytes());
    }
    stem.truncate(target_len);
    stem
}
