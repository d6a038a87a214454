//! One block: a run of ascending keys in exactly `B` bytes (`format-spec/table.md`, "Block").
//!
//! ```text
//!  0        4                12                                     B-4      B
//!  +--------+----------------+--------------------------------------+--------+
//!  | count  | first key      | delta stream, MSB-first, 0-padded    | crc32  |
//!  | u32 LE | u64 LE         | (count-1) x [ huffman(s) | suffix ]  | u32 LE |
//!  +--------+----------------+--------------------------------------+--------+
//! ```
//!
//! Each key b after key a is a symbol s in 0..=63, Huffman-coded, then a raw suffix; the
//! [`Codec`] says what s and the suffix mean. Codec 1, h-delta: s = h, the number of leading
//! bits a and b share, then the 63 - h bits of b below its first differing bit (that bit is 1 in
//! b and 0 in a, so it is implied). Codec 2, gap: s = bit length of b - a minus one, then the s
//! low bits of b - a. The crc32 covers the block's file offset (u64 LE) and then
//! bytes 0..B-4, so a block read from the wrong place fails its check.

use crate::codec::Codec;
use crate::codec::bitio::{self, BitWriter};
use crate::codec::huffman::{Code, DecodeTable};
use crate::error::{Error, Result};

/// Bytes before the coded stream: count (4) and first key (8).
pub const BLOCK_HEADER_LEN: usize = 12;
/// Bytes after the coded stream: the crc32.
pub const BLOCK_TRAILER_LEN: usize = 4;
/// Smallest block size.
pub const MIN_BLOCK_SIZE: u32 = 128;
/// Largest block size.
pub const MAX_BLOCK_SIZE: u32 = 65536;

/// Bits available for the coded stream in a block of `block_size` bytes.
pub fn stream_bits(block_size: u32) -> u64 {
    (block_size as u64 - (BLOCK_HEADER_LEN + BLOCK_TRAILER_LEN) as u64) * 8
}

/// The largest key count a block of `block_size` bytes can hold (every delta at least one bit).
pub fn max_keys(block_size: u32) -> u64 {
    1 + stream_bits(block_size)
}

/// The crc32 of a block: its file offset (u64 LE), then all its bytes but the last four.
pub fn block_crc(offset: u64, block_without_crc: &[u8]) -> u32 {
    crate::checksum::crc_at(offset, block_without_crc)
}

/// Fills one block at a time. Reused across blocks to keep its buffer.
#[derive(Debug)]
pub struct BlockEncoder {
    block_size: u32,
    codec: Codec,
    capacity_bits: u64,
    bits: BitWriter,
    count: u32,
    first: u64,
    last: u64,
}

impl BlockEncoder {
    /// An empty encoder for blocks of `block_size` bytes coded with `codec`.
    pub fn new(block_size: u32, codec: Codec) -> BlockEncoder {
        BlockEncoder {
            block_size,
            codec,
            capacity_bits: stream_bits(block_size),
            bits: BitWriter::new(),
            count: 0,
            first: 0,
            last: 0,
        }
    }

    /// Keys in the current block.
    pub fn count(&self) -> u32 {
        self.count
    }

    /// The last key added to the current block.
    pub fn last(&self) -> u64 {
        self.last
    }

    /// Add `key` (greater than every key added before) to the current block. Returns `Ok(false)`
    /// and changes nothing if the block is non-empty and the key does not fit: the caller then
    /// [`finish`](Self::finish)es the block and adds the key again. Fails if `code` has no code
    /// for the key's symbol, which only happens when the keys differ from those the code was built on.
    #[inline]
    pub fn push(&mut self, key: u64, code: &Code) -> Result<bool> {
        if self.count == 0 {
            self.first = key;
            self.last = key;
            self.count = 1;
            return Ok(true);
        }
        let (sym, suffix, n) = self.codec.delta(self.last, key);
        let (c, l) = code.encode(sym);
        if l == 0 {
            return Err(Error::InputChanged {
                detail: format!(
                    "symbol {sym} between {:#018x} and {key:#018x} was not in the first pass's histogram",
                    self.last
                ),
            });
        }
        if self.bits.bit_len() + (l + n) as u64 > self.capacity_bits {
            return Ok(false);
        }
        self.bits.write(c, l);
        self.bits.write(suffix, n);
        self.last = key;
        self.count += 1;
        Ok(true)
    }

    /// Write the current block, to be stored at file offset `offset`, into `out` (exactly
    /// `block_size` bytes), and start an empty block.
    pub fn finish(&mut self, offset: u64, out: &mut [u8]) {
        debug_assert_eq!(out.len(), self.block_size as usize);
        debug_assert!(self.count > 0);
        out.fill(0);
        out[0..4].copy_from_slice(&self.count.to_le_bytes());
        out[4..12].copy_from_slice(&self.first.to_le_bytes());
        let crc_at = out.len() - BLOCK_TRAILER_LEN;
        self.bits.drain_into(&mut out[BLOCK_HEADER_LEN..crc_at]);
        let crc = block_crc(offset, &out[..crc_at]);
        out[crc_at..].copy_from_slice(&crc.to_le_bytes());
        self.count = 0;
    }
}

/// Check the crc32 of block `index`, whose bytes `block` were read at file offset `offset`.
pub fn check_crc(block: &[u8], index: u64, offset: u64) -> Result<()> {
    crate::checksum::check_crc(|| format!("block {index} crc32"), offset, block)
}

/// Decode the delta at bit `pos` of `stream` (whose bits end at `end`) that follows key `prev`:
/// the key and the bit position after it, or `None` if the bits are no valid delta (no code, a
/// key that does not ascend, a delta past `end`). The one decoding rule, shared by
/// [`BlockDecoder`] and the rare cases of the vectorized decoder (`table::lanes`).
#[inline(always)]
pub(crate) fn decode_delta_at(
    stream: &[u8],
    table: &DecodeTable,
    codec: Codec,
    pos: u64,
    end: u64,
    prev: u64,
) -> Option<(u64, u64)> {
    let window = bitio::peek(stream, pos);
    let (sym, l, total) = table.decode_delta(window)?;
    let n = total - l;
    let next = pos + total as u64;
    let suffix = if total <= 57 {
        ((window << l) >> 1) >> (63 - n)
    } else {
        bitio::read(stream, pos + l as u64, n)
    };
    match codec.apply(prev, sym, suffix) {
        Some(k) if next <= end => Some((k, next)),
        _ => None,
    }
}

/// Decodes the keys of one block in order.
///
/// Construction checks the crc; decoding still checks every structural rule (codes exist, the
/// stream stays inside the block, keys ascend), so even bytes that pass the crc by chance cannot
/// make it panic or read out of bounds. A decoded key sequence is always strictly ascending.
#[derive(Debug, Clone)]
pub struct BlockDecoder<'a> {
    stream: &'a [u8],
    table: &'a DecodeTable,
    codec: Codec,
    pos: u64,
    end: u64,
    prev: u64,
    remaining: u32,
    started: bool,
    faulted: bool,
    index: u64,
    offset: u64,
}

impl<'a> BlockDecoder<'a> {
    /// Check block `index`, whose bytes `block` were read at file offset `offset`, and start
    /// decoding it with `codec` and its decode table.
    pub fn new(
        block: &'a [u8],
        index: u64,
        offset: u64,
        codec: Codec,
        table: &'a DecodeTable,
    ) -> Result<BlockDecoder<'a>> {
        check_crc(block, index, offset)?;
        Self::new_unchecked_crc(block, index, offset, codec, table)
    }

    /// As [`new`](Self::new), for a block whose crc the caller has already checked. Decoding stays
    /// memory-safe and its output ascending whatever the bytes.
    pub fn new_unchecked_crc(
        block: &'a [u8],
        index: u64,
        offset: u64,
        codec: Codec,
        table: &'a DecodeTable,
    ) -> Result<BlockDecoder<'a>> {
        let b = block.len();
        let crc_at = b - BLOCK_TRAILER_LEN;
        let count = u32::from_le_bytes(block[0..4].try_into().unwrap());
        if count == 0 || count as u64 > max_keys(b as u32) {
            return Err(Error::corrupt(
                format!("block {index} key count"),
                offset,
                format!("1..={}", max_keys(b as u32)),
                count,
            ));
        }
        let stream = &block[BLOCK_HEADER_LEN..crc_at];
        Ok(BlockDecoder {
            stream,
            table,
            codec,
            pos: 0,
            end: stream.len() as u64 * 8,
            prev: u64::from_le_bytes(block[4..12].try_into().unwrap()),
            remaining: count,
            started: false,
            faulted: false,
            index,
            offset,
        })
    }

    /// The next key, `Ok(None)` at the end of the block.
    #[inline]
    #[allow(clippy::should_implement_trait)]
    pub fn next(&mut self) -> Result<Option<u64>> {
        match self.next_key() {
            Some(k) => Ok(Some(k)),
            None => match self.fault() {
                Some(e) => Err(e),
                None => Ok(None),
            },
        }
    }

    /// The next key, or `None` at the end of the block *or on corrupt data*: after `None`,
    /// [`fault`](Self::fault) tells which. This is the hot path: it returns 16 bytes in registers
    /// instead of a `Result` carrying a large error.
    #[inline(always)]
    pub fn next_key(&mut self) -> Option<u64> {
        if self.remaining == 0 {
            return None;
        }
        if !self.started {
            self.started = true;
            self.remaining -= 1;
            return Some(self.prev);
        }
        let Some((key, pos)) =
            decode_delta_at(self.stream, self.table, self.codec, self.pos, self.end, self.prev)
        else {
            self.faulted = true;
            self.remaining = 0;
            return None;
        };
        self.pos = pos;
        self.remaining -= 1;
        self.prev = key;
        Some(key)
    }

    /// After [`next_key`](Self::next_key) returned `None`: the corruption that stopped it, if any.
    pub fn fault(&self) -> Option<Error> {
        if !self.faulted {
            return None;
        }
        let window = bitio::peek(self.stream, self.pos);
        Some(match self.table.decode(window) {
            None => self.bad_code(),
            Some((h, _)) => self.bad_delta(h),
        })
    }

    /// Keys not yet returned.
    pub fn remaining(&self) -> u32 {
        self.remaining
    }

    /// Bits of the stream consumed so far.
    pub fn bit_position(&self) -> u64 {
        self.pos
    }

    /// The coded stream (for checking its padding).
    pub fn stream(&self) -> &'a [u8] {
        self.stream
    }

    #[cold]
    fn bad_code(&self) -> Error {
        Error::corrupt(
            format!("block {} {} stream", self.index, self.codec),
            self.stream_offset(),
            "a Huffman code of the table's code",
            format!(
                "bits {:#x} at stream bit {}",
                bitio::peek(self.stream, self.pos),
                self.pos
            ),
        )
    }

    #[cold]
    fn bad_delta(&self, sym: u32) -> Error {
        Error::corrupt(
            format!("block {} {} stream", self.index, self.codec),
            self.stream_offset(),
            format!(
                "a delta that fits the block and can follow key {:#018x}",
                self.prev
            ),
            format!("symbol {sym} at stream bit {} of {}", self.pos, self.end),
        )
    }

    fn stream_offset(&self) -> u64 {
        self.offset + BLOCK_HEADER_LEN as u64 + self.pos / 8
    }
}
