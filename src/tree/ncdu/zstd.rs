//! zstd as ncdu 2 uses it (RFC 8878): reading goes through the pure-Rust `ruzstd` decoder
//! (Huffman and FSE entropy coding are most of a decoder; the crate is fuzzed upstream and
//! its size cost is measured in docs/scan.md), for the blocks of a binary export and for
//! compressed JSON of any number of frames; a frame's checksum, where it has one, is
//! checked as libzstd checks it. Writing needs no compressor: a stored frame
//! carries the bytes as raw zstd blocks, which every decoder reads.

use ruzstd::decoding::errors::{FrameDecoderError, ReadFrameHeaderError};
use ruzstd::decoding::{BlockDecodingStrategy, FrameDecoder};
use std::io::{self, BufRead, Read};

/// The first bytes of a zstd frame.
pub const MAGIC: [u8; 4] = [0x28, 0xb5, 0x2f, 0xfd];
/// The largest block a frame may hold (the format's limit, whatever the window).
const MAX_BLOCK_BYTES: usize = 128 * 1024;

/// Appends one zstd frame holding `content` (not empty) in raw blocks: the header records
/// the content size in 4 bytes and marks a single segment (so no window size), with no
/// checksum and no dictionary.
pub fn stored_frame(content: &[u8], out: &mut Vec<u8>) {
    out.extend_from_slice(&MAGIC);
    out.push(0b1010_0000);
    out.extend_from_slice(&(content.len() as u32).to_le_bytes());
    let n_blocks = content.len().div_ceil(MAX_BLOCK_BYTES).max(1);
    for (k, chunk) in content.chunks(MAX_BLOCK_BYTES).enumerate() {
        // Block header: last-block bit, type 0 (raw), then the size.
        let header = u32::from(k + 1 == n_blocks) | (chunk.len() as u32) << 3;
        out.extend_from_slice(&header.to_le_bytes()[..3]);
        out.extend_from_slice(chunk);
    }
}

/// Decodes `frame`, one zstd frame whose recorded content size is below `max_bytes`.
pub fn decode_frame(frame: &[u8], max_bytes: usize) -> Result<Vec<u8>, String> {
    let mut src = frame;
    let mut d = FrameDecoder::new();
    d.reset(&mut src).map_err(error_text)?;
    let size = d.content_size();
    if size >= max_bytes as u64 {
        return Err(format!("a block of {size} bytes (at most {max_bytes})"));
    }
    let mut out = Vec::with_capacity(size as usize);
    let mut buf = [0u8; 16 * 1024];
    while !d.is_finished() || d.can_collect() > 0 {
        if !d.is_finished() {
            d.decode_blocks(&mut src, BlockDecodingStrategy::UptoBytes(buf.len())).map_err(error_text)?;
        }
        let n = d.read(&mut buf).map_err(error_text)?;
        out.extend_from_slice(&buf[..n]);
        if out.len() > size as usize {
            return Err("more data than the frame's content size".to_string());
        }
        if n == 0 && d.is_finished() && d.can_collect() == 0 {
            break;
        }
    }
    if out.len() as u64 != size {
        return Err(format!("{} bytes where the frame records {size}", out.len()));
    }
    check_sum(&d)?;
    Ok(out)
}

/// At a frame's end: its checksum, when it has one, against the data decoded.
fn check_sum(d: &FrameDecoder) -> Result<(), String> {
    match d.get_checksum_from_data() {
        Some(want) if Some(want) != d.get_calculated_checksum() => {
            Err("zstd: a frame whose checksum does not match its data (a damaged file?)".to_string())
        }
        _ => Ok(()),
    }
}

/// A decoder error as a sentence: ruzstd's own texts name its internal types, and a
/// frame cut short is the common case.
fn error_text(e: impl std::fmt::Display) -> String {
    let text = e.to_string();
    if text.contains("UnexpectedEof") || text.contains("failed to fill whole buffer") {
        "zstd: the compressed data ends inside a frame (a file cut short?)".to_string()
    } else {
        format!("zstd: {text}")
    }
}

/// The decompressed bytes of every frame in `src`, one after another (skippable frames
/// skipped), as `zstd -d` gives them.
pub struct Frames<R: BufRead> {
    src: R,
    d: FrameDecoder,
    /// Whether `d` holds a frame not yet read to its end.
    in_frame: bool,
}

impl<R: BufRead> Frames<R> {
    pub fn new(src: R) -> Self {
        Frames { src, d: FrameDecoder::new(), in_frame: false }
    }

    /// Starts the next frame; false at the end of the input.
    fn next_frame(&mut self) -> io::Result<bool> {
        loop {
            if self.src.fill_buf()?.is_empty() {
                return Ok(false);
            }
            match self.d.reset(&mut self.src) {
                Ok(()) => return Ok(true),
                Err(FrameDecoderError::ReadFrameHeaderError(ReadFrameHeaderError::SkipFrame { length, .. })) => {
                    io::copy(&mut (&mut self.src).take(length as u64), &mut io::sink())?;
                }
                Err(e) => return Err(io::Error::other(error_text(e))),
            }
        }
    }
}

impl<R: BufRead> Read for Frames<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if buf.is_empty() {
            return Ok(0);
        }
        loop {
            if !self.in_frame {
                if !self.next_frame()? {
                    return Ok(0);
                }
                self.in_frame = true;
            }
            if !self.d.is_finished() && self.d.can_collect() < buf.len() {
                let want = BlockDecodingStrategy::UptoBytes(buf.len());
                self.d.decode_blocks(&mut self.src, want).map_err(|e| io::Error::other(error_text(e)))?;
            }
            let n = self.d.read(buf)?;
            if n > 0 {
                return Ok(n);
            }
            if self.d.is_finished() && self.d.can_collect() == 0 {
                check_sum(&self.d).map_err(io::Error::other)?;
                self.in_frame = false;
            }
        }
    }
}
