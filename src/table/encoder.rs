//! Writes blocks (`format-spec/table.md`, "Block", "Segments", "Compact heads"): fills one
//! block at a time greedily, then codes it. Format 1 codes each key as it comes; a segmented
//! block (format 3) waits for its end, since its last key fixes the common prefix below which
//! every segment start is raw, and its first key is coded after the previous block's last.
//! Format 4 ("Aligned segments") cuts its segments where a run of keys sharing their top p
//! bits starts, once the segment before holds S keys, instead of every S keys.

use super::block::{BLOCK_HEADER_LEN, BLOCK_TRAILER_LEN, block_crc, stream_bits};
use super::segment;
use crate::codec::Codec;
use crate::codec::bitio::BitWriter;
use crate::codec::huffman::Code;
use crate::error::{Error, Result};

/// One key of a segmented block waiting for the block's end, when its common prefix (and so
/// the width of every segment's raw key) is known: the key and its coded delta.
#[derive(Debug, Clone, Copy)]
struct Pending {
    key: u64,
    /// Whether the key starts a segment (coded raw, with a skip entry) once it is coded.
    start: bool,
    code: u64,
    code_len: u32,
    suffix: u64,
    suffix_len: u32,
}

/// Bytes of a segmented block's head: format 3's, or format 4's (`align` > 0).
fn head_len(align: u32) -> usize {
    segment::Head::Compact {
        after: None,
        align: align as u8,
    }
    .bytes()
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
    /// S, keys per segment (0: unsegmented, format 1); in format 4 the fewest.
    segment_keys: u32,
    /// Format 4: the prefix bits segments are aligned to; 0: segments of exactly S keys.
    align: u32,
    /// Segmented blocks: the pending keys that start segments, and the index of the last
    /// key that started one (0, the first key, at a block's start).
    starts: u32,
    last_start: u32,
    /// Segmented blocks: every key after the first, coded at [`finish`](Self::finish).
    pending: Vec<Pending>,
    /// Segmented blocks: the bits of the deltas in `pending` (segment starts excluded).
    delta_bits: u64,
    /// Segmented blocks (format 3): the key before the current block, the previous block's
    /// last (`None` before the first block), and the current block's first key coded after it.
    after: Option<u64>,
    first_code: Pending,
}

impl BlockEncoder {
    /// An empty encoder for blocks laid out as `opts` says: cut into segments of
    /// `segment_keys` keys (0: none, the format-1 block), aligned to `aligned_prefix` bits
    /// (format 4) where that is not 0. The caller has checked the options
    /// (`format::check_segment_keys`, `format::check_aligned_prefix`).
    pub fn new(opts: &super::TableOptions) -> BlockEncoder {
        let (block_size, segment_keys) = (opts.block_size, opts.segment_keys);
        let align = if segment_keys == 0 {
            0
        } else {
            opts.aligned_prefix
        };
        BlockEncoder {
            block_size,
            codec: opts.codec,
            capacity_bits: if segment_keys == 0 {
                stream_bits(block_size)
            } else {
                (block_size as u64 - (head_len(align) + BLOCK_TRAILER_LEN) as u64) * 8
            },
            bits: BitWriter::new(),
            count: 0,
            first: 0,
            last: 0,
            segment_keys,
            align,
            starts: 0,
            last_start: 0,
            pending: Vec::new(),
            delta_bits: 0,
            after: None,
            first_code: Pending {
                key: 0,
                start: false,
                code: 0,
                code_len: 0,
                suffix: 0,
                suffix_len: 0,
            },
        }
    }

    /// Segmented blocks: the next block follows `after`, the last key of a block another
    /// encoder wrote (a parallel build's chunks), or `None` at the table's start.
    pub fn set_after(&mut self, after: Option<u64>) {
        self.after = after;
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
    /// for the key's symbol, which only happens when the keys differ from those the code was built
    /// on.
    #[inline]
    pub fn push(&mut self, key: u64, code: &Code) -> Result<bool> {
        if self.count == 0 {
            if self.segment_keys > 0 {
                self.first_code = self.code_first(key, code)?;
            }
            self.first = key;
            self.last = key;
            self.count = 1;
            return Ok(true);
        }
        if self.segment_keys > 0 {
            return self.push_segmented(key, code);
        }
        let (sym, suffix, n) = self.codec.delta(self.last, key);
        let (c, l) = code.encode(sym);
        if l == 0 {
            return Err(self.not_in_code(sym, key));
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

    /// A compact block's first key, coded after the key before the block (64 raw bits in the
    /// table's first block).
    fn code_first(&self, key: u64, code: &Code) -> Result<Pending> {
        let Some(a) = self.after else {
            return Ok(Pending {
                key,
                start: false,
                code: key,
                code_len: 64,
                suffix: 0,
                suffix_len: 0,
            });
        };
        let (sym, suffix, n) = self.codec.delta(a, key);
        let (c, l) = code.encode(sym);
        if l == 0 {
            return Err(self.not_in_code(sym, key));
        }
        Ok(Pending {
            key,
            start: false,
            code: c,
            code_len: l,
            suffix,
            suffix_len: n,
        })
    }

    /// [`push`](Self::push) into a segmented block. Whether the key fits depends on the block's
    /// common prefix, which the key itself may shorten: every segment start then costs more raw
    /// bits, so the size is recomputed from the totals rather than added to.
    fn push_segmented(&mut self, key: u64, code: &Code) -> Result<bool> {
        let index = self.count;
        let starts_segment = if self.align == 0 {
            index.is_multiple_of(self.segment_keys)
        } else {
            // The first key of its top `align` bits, S keys or more after the last start.
            index - self.last_start >= self.segment_keys
                && (key ^ self.last) >> (64 - self.align) != 0
        };
        let mut p = Pending {
            key,
            start: starts_segment,
            code: 0,
            code_len: 0,
            suffix: 0,
            suffix_len: 0,
        };
        if !starts_segment {
            let (sym, suffix, n) = self.codec.delta(self.last, key);
            let (c, l) = code.encode(sym);
            if l == 0 {
                return Err(self.not_in_code(sym, key));
            }
            (p.code, p.code_len, p.suffix, p.suffix_len) = (c, l, suffix, n);
        }
        // The key becomes the block's last, which is not coded; the one before it, already
        // pending, now is: the block holds the first key and keys 1..index - 1.
        // The pending keys that start segments: the new key, the uncoded last, never does.
        let starts = self.starts;
        let base = segment::base(self.after);
        let raw = segment::raw_bits((base ^ key).leading_zeros()) as u64;
        let first = (self.first_code.code_len + self.first_code.suffix_len) as u64;
        let head = self.entries_len(starts, index + 1) as u64 * 8;
        if head + first + self.delta_bits + starts as u64 * raw > self.capacity_bits {
            return Ok(false);
        }
        let deltas = self.delta_bits + (p.code_len + p.suffix_len) as u64;
        self.delta_bits = deltas;
        if starts_segment {
            self.starts += 1;
            self.last_start = index;
        }
        self.pending.push(p);
        self.last = key;
        self.count += 1;
        Ok(true)
    }

    #[cold]
    fn not_in_code(&self, sym: usize, key: u64) -> Error {
        Error::InputChanged {
            detail: format!(
                "symbol {sym} between {:#018x} and {key:#018x} was not in the first pass's histogram",
                self.last
            ),
        }
    }

    /// Write the current block, to be stored at file offset `offset`, into `out` (exactly
    /// `block_size` bytes), and start an empty block.
    pub fn finish(&mut self, offset: u64, out: &mut [u8]) {
        debug_assert_eq!(out.len(), self.block_size as usize);
        debug_assert!(self.count > 0);
        out.fill(0);
        let crc_at = out.len() - BLOCK_TRAILER_LEN;
        if self.segment_keys > 0 {
            let stream_at = self.code_segments(out);
            self.bits.drain_into(&mut out[stream_at..crc_at]);
            self.after = Some(self.last);
        } else {
            out[0..4].copy_from_slice(&self.count.to_le_bytes());
            out[4..12].copy_from_slice(&self.first.to_le_bytes());
            self.bits.drain_into(&mut out[BLOCK_HEADER_LEN..crc_at]);
        }
        let crc = block_crc(offset, &out[..crc_at]);
        out[crc_at..].copy_from_slice(&crc.to_le_bytes());
        self.count = 0;
    }

    /// Code a segmented block (format 3 or 4) into `out`: its u16 count (format 4: and its u16
    /// segment count), then the bit-packed skip
    /// entries, then in the stream the first key (after the previous block's last) and the
    /// pending keys but the last (the footer's), each segment start raw below the common
    /// prefix, every other key its delta. Returns the byte where the stream starts.
    fn code_segments(&mut self, out: &mut [u8]) -> usize {
        let count = u16::try_from(self.count).expect("a block of at most 8192 bytes");
        out[0..2].copy_from_slice(&count.to_le_bytes());
        // Every key but the last, which the footer holds.
        let coded = self.pending.len().saturating_sub(1);
        let m = self.starts - self.pending.last().is_some_and(|p| p.start) as u32;
        if self.align > 0 {
            out[2..4].copy_from_slice(&(m as u16).to_le_bytes());
        }
        let base = segment::base(self.after);
        let c = (base ^ self.last).leading_zeros();
        let raw = segment::raw_bits(c);
        let w = segment::offset_bits(self.block_size);
        let x = if self.align > 0 {
            segment::index_bits(self.count)
        } else {
            0
        };
        let mut entries = BitWriter::new();
        let f = self.first_code;
        self.bits.write(f.code, f.code_len);
        self.bits.write(f.suffix, f.suffix_len);
        for (i, p) in self.pending[..coded].iter().enumerate() {
            if p.start {
                entries.write(segment::partial(p.key, c) as u64, segment::PARTIAL_BITS);
                entries.write(self.bits.bit_len(), w);
                if x > 0 {
                    entries.write(i as u64 + 1, x);
                }
                let low = u64::MAX.checked_shr(64 - raw).unwrap_or(0);
                self.bits.write(p.key & low, raw);
            } else {
                self.bits.write(p.code, p.code_len);
                self.bits.write(p.suffix, p.suffix_len);
            }
        }
        self.pending.clear();
        self.delta_bits = 0;
        self.starts = 0;
        self.last_start = 0;
        let at = head_len(self.align);
        let len = self.entries_len(m, self.count);
        entries.drain_into(&mut out[at..at + len]);
        at + len
    }

    /// Bytes of `m` skip entries in a block of `count` keys.
    fn entries_len(&self, m: u32, count: u32) -> usize {
        segment::skip_entries_len(self.align, m, self.block_size, count)
    }
}
