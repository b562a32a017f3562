//! ncdu's export formats, both ways. The JSON format (version 1.2): `export` (the writer,
//! `export.rs`) streams the arena out depth-first as ncdu 2 writes it; `import` (the reader,
//! `import.rs`) reads files written by ncdu 1.x, ncdu 2.x, gdu (whose newer exports carry
//! cumulative directory sizes, and which marks a hard link's later names only) and dfdu into
//! an arena, plain or zstd-compressed as ncdu 2.7's `-c` writes it (`zstd.rs`). The binary
//! format of ncdu 2.6+ (`-O`, below): `bin_export.rs` writes it, `bin_import.rs` reads it
//! into the same arena through the JSON reader's directory staging. `import_any` tells the
//! three apart by their first bytes. Their unit tests (round trips, Debian's ncdu as the
//! reference, files built by hand from the format's description, a fuzz loop) are in
//! `tests.rs`.
//!
//! The readers have a limit on everything: names of at most 32 KiB, nesting at most
//! `MAX_DEPTH`, sizes at most `MAX_SIZE`, integers that must fit their field, zstd blocks
//! of at most 16 MiB, references followed at most once per item the data can hold. Bad
//! input gets an error naming the byte offset, never a panic.
//!
//! # The binary format
//!
//! The 8-byte signature `BIN_SIGNATURE`, then blocks back to back, each `type << 28 |
//! length` (u32, big-endian, the length counting these 4 bytes and the same 4 again at the
//! block's end), its content, and that word again. Data blocks (type 0) hold a u32 block
//! number and one zstd frame (its content size recorded, below 16 MiB); the one index block
//! (type 1) comes last and holds, per block number, `file offset << 24 | block length`
//! (u64, 0 for a number not used), then the root's itemref. An itemref is `block number <<
//! 24 | byte offset` in the block's decompressed data.
//!
//! Each item is a CBOR map of indefinite length whose keys are small integers (`KEY`):
//! its type (`TYPE`), its name (a byte string; the root's is its full path), the `prev`
//! sibling, sizes, and for a directory its device (where it changes, and on the root), read
//! error (`true` here, `false` below), cumulative sizes and item count, and `sub`, its last
//! child; a hard-linked file has its inode and link count. A reference is an absolute
//! itemref (an unsigned integer) or, within one block, a negative integer `n` meaning `n`
//! bytes before the item that holds it (`-1 - v` for CBOR argument `v`). Children are
//! written before their directory, so references point backwards; readers skip unknown keys
//! and tags.

mod bin_export;
mod bin_import;
mod export;
mod import;
#[cfg(test)]
mod tests;
mod zstd;

pub use bin_export::export_binary;
pub use export::export;
pub use import::{import, ImportError, Imported};

use crate::out::io_text;
use crate::tree::arena::Arena;
use std::io::{BufReader, Read};

/// Reads an export of any kind ncdu writes: binary (by its signature), zstd-compressed
/// JSON (by the zstd magic) or plain JSON.
pub fn import_any<R: Read>(mut r: R, arena: &Arena) -> Result<Imported, ImportError> {
    let read_error = |e: std::io::Error| ImportError { offset: 0, msg: format!("read error: {}", io_text(&e)) };
    // The first bytes tell; a pipe may hand them over one at a time.
    let mut head = Vec::with_capacity(8);
    (&mut r).take(8).read_to_end(&mut head).map_err(read_error)?;
    let mut all = std::io::Cursor::new(head).chain(r);
    let head = all.get_ref().0.get_ref();
    if head.starts_with(BIN_SIGNATURE) {
        let mut data = Vec::new();
        all.read_to_end(&mut data).map_err(read_error)?;
        bin_import::import_binary(&data, arena)
    } else if head.starts_with(&zstd::MAGIC) {
        import(BufReader::with_capacity(256 * 1024, zstd::Frames::new(BufReader::new(all))), arena)
    } else {
        import(BufReader::with_capacity(256 * 1024, all), arena)
    }
}

/// The first bytes of ncdu's binary export.
const BIN_SIGNATURE: &[u8; 8] = b"\xbfncduEX1";
/// Block types of the binary export.
const BIN_TYPE_DATA: u32 = 0;
const BIN_TYPE_INDEX: u32 = 1;

/// The binary export's item keys (those dfdu reads or writes).
struct Keys {
    kind: u8,
    name: u8,
    prev: u8,
    asize: u8,
    dsize: u8,
    dev: u8,
    rderr: u8,
    cumasize: u8,
    cumdsize: u8,
    items: u8,
    sub: u8,
    ino: u8,
    nlink: u8,
}

const KEY: Keys = Keys {
    kind: 0,
    name: 1,
    prev: 2,
    asize: 3,
    dsize: 4,
    dev: 5,
    rderr: 6,
    cumasize: 7,
    cumdsize: 8,
    items: 11,
    sub: 12,
    ino: 13,
    nlink: 14,
};

/// The binary export's item types.
struct Types {
    dir: i8,
    file: i8,
    other: i8,
    hardlink: i8,
    error: i8,
    pattern: i8,
    other_fs: i8,
    kernfs: i8,
}

const TYPE: Types = Types { dir: 0, file: 1, other: 2, hardlink: 3, error: -1, pattern: -2, other_fs: -3, kernfs: -4 };

/// Deepest directory nesting accepted on import.
pub const MAX_DEPTH: usize = 65_536;
/// Longest name accepted (ncdu's own limit).
const MAX_NAME: usize = 32 * 1024;
/// Largest size accepted for one entry: 1 EiB.
const MAX_SIZE: u64 = 1 << 60;

/// Extra keys a directory carries when sharing-aware figures exist (ncdu ignores keys it
/// does not know; dfdu's import reads them back). The fifth, what deleting it frees,
/// is absent in exports of dfdu before it; `FREES_ESTIMATE` (`true`) follows it where
/// it is a lower bound.
const SHARED_KEYS: [&str; 5] =
    ["dfdu_total_bytes", "dfdu_exclusive_bytes", "dfdu_set_shared_bytes", "dfdu_disk_once_bytes", "dfdu_frees_bytes"];
const FREES_ESTIMATE: &str = "dfdu_frees_estimate";
