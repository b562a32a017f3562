//! ncdu's JSON export format (version 1.2), both ways: `export` (the writer, `export.rs`)
//! streams the arena out depth-first as ncdu 2 writes it; `import` (the reader,
//! `import.rs`) reads files written by ncdu 1.x, ncdu 2.x, gdu (whose newer exports carry
//! cumulative directory sizes, and which marks a hard link's later names only) and dfdu into an arena. Their unit tests (round trips,
//! Debian's ncdu as the reference, a fuzz loop) are in `tests.rs`.
//!
//! The reader is a hand-written streaming parser with a limit on everything: names of at
//! most 32 KiB, nesting at most `MAX_DEPTH`, sizes at most `MAX_SIZE`, integers that
//! must fit their field. Bad input gets an error naming the byte offset, never a panic.

mod export;
mod import;
#[cfg(test)]
mod tests;

pub use export::export;
pub use import::{import, Imported};

/// Deepest directory nesting accepted on import.
pub const MAX_DEPTH: usize = 65_536;
/// Longest name accepted (ncdu's own limit).
const MAX_NAME: usize = 32 * 1024;
/// Largest size accepted for one entry: 1 EiB.
const MAX_SIZE: u64 = 1 << 60;

/// Extra keys a directory carries when sharing-aware figures exist (ncdu ignores keys it
/// does not know; dfdu's import reads them back).
const SHARED_KEYS: [&str; 4] =
    ["dfdu_total_bytes", "dfdu_exclusive_bytes", "dfdu_set_shared_bytes", "dfdu_disk_once_bytes"];
