//! Segments: the skip entries of a format-2 block (`format-spec/table.md`, "Segments").
//!
//! A block of a format-2 table is cut into segments of S keys (S from the header). Segment 0
//! starts at the block's raw first key; segment j ≥ 1 starts at key j·S, which is not coded as
//! a delta but raw below the block's common prefix, and the block's header holds one 4-byte
//! skip entry per such segment: the 16 bits of that key just below the common prefix and the
//! stream bit where its raw bits start. A probe looks up the entry of the last segment that
//! starts below its range and decodes from there, so a block of any size costs a probe about
//! S / 2 keys to reach its range, not half the block.
//!
//! The common prefix is `c = clz(first ^ last)`, the bits every key of the block shares (the
//! last key is the footer's). A segment's key is then its block's top c bits, the entry's 16
//! bits, and `shift = max(0, 48 - c)` raw stream bits: `16 + shift` bits of the key where a
//! delta would cost about `64 - c - log2(keys in the block) + 2`. This module is the one rule
//! that reads a segment's start; every decoder (`block`, `lanes`, `verify` through `block`)
//! goes through [`Segments::enter`].

use crate::codec::bitio;

/// Bytes of one skip entry: a u16 partial key, then a u16 stream bit offset.
pub const SKIP_ENTRY_LEN: usize = 4;
/// Bits of a segment's start key held in its skip entry.
pub const PARTIAL_BITS: u32 = 16;
/// The largest block size a segmented table may use: skip entries hold stream bit offsets in
/// 16 bits, and a block of 8192 bytes has 65408 stream bits.
pub const MAX_SEGMENTED_BLOCK_SIZE: u32 = 8192;
/// Fewest keys per segment a table may declare.
pub const MIN_SEGMENT_KEYS: u32 = 2;
/// Most keys per segment a table may declare.
pub const MAX_SEGMENT_KEYS: u32 = 65535;

/// Raw stream bits of a segment's start key in a block whose keys share `c` top bits: those
/// below the common prefix and the skip entry's 16.
#[inline]
pub fn raw_bits(c: u32) -> u32 {
    (64 - PARTIAL_BITS).saturating_sub(c)
}

/// Skip entries whose segments start at keys S, 2S, ... of a block of `count` keys.
#[inline]
pub fn entries(count: u32, segment_keys: u32) -> u32 {
    if segment_keys == 0 || count == 0 {
        0
    } else {
        (count - 1) / segment_keys
    }
}

/// The 16-bit partial key of `key` in a block whose keys share `c` top bits.
#[inline]
pub fn partial(key: u64, c: u32) -> u16 {
    (key >> raw_bits(c)) as u16
}

/// Where a segment starts: its first key and the stream bits of its deltas.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Start {
    /// The segment's first key.
    pub(crate) key: u64,
    /// The stream bit of its first delta.
    pub(crate) pos: u64,
    /// The stream bit its deltas must end by: the next segment's start, or the stream's end.
    pub(crate) end: u64,
}

/// The segment layout of one block, from its header, its footer entry and the table's S.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Segments<'a> {
    /// The skip entries, `SKIP_ENTRY_LEN` bytes each (empty for an unsegmented block).
    entries: &'a [u8],
    /// S: keys per segment (0: one segment, format 1).
    keys: u32,
    count: u32,
    first: u64,
    last: u64,
    /// The bits every key of the block shares (c), its top c bits (of `first`), and the mask
    /// of the bits below them.
    c: u32,
    prefix: u64,
    low: u64,
    shift: u32,
    stream_bits: u64,
}

impl<'a> Segments<'a> {
    /// The layout of block `block` (all its bytes) of a table with `keys` keys per segment,
    /// whose footer entry is `last`, with the byte at which its coded stream starts; `None`
    /// if its key count (at least 1) leaves no room for its skip entries.
    #[inline]
    pub(crate) fn of_block(block: &'a [u8], keys: u32, last: u64) -> Option<(Segments<'a>, usize)> {
        let count = u32::from_le_bytes(block[0..4].try_into().unwrap());
        let header = super::block::BLOCK_HEADER_LEN;
        let stream_at = header + entries(count, keys) as usize * SKIP_ENTRY_LEN;
        let crc_at = block.len() - super::block::BLOCK_TRAILER_LEN;
        if stream_at > crc_at {
            return None;
        }
        let first = u64::from_le_bytes(block[4..12].try_into().unwrap());
        let stream_bits = (crc_at - stream_at) as u64 * 8;
        let segs = Segments::new(
            &block[header..stream_at],
            keys,
            count,
            first,
            last,
            stream_bits,
        );
        Some((segs, stream_at))
    }

    /// The layout of a block of `count` keys from `first` to `last` (its footer entry), whose
    /// skip entries are `entries` and whose stream holds `stream_bits` bits.
    pub(crate) fn new(
        entries: &'a [u8],
        keys: u32,
        count: u32,
        first: u64,
        last: u64,
        stream_bits: u64,
    ) -> Segments<'a> {
        let c = (first ^ last).leading_zeros();
        let low = u64::MAX.checked_shr(c).unwrap_or(0);
        Segments {
            entries,
            keys,
            count,
            first,
            last,
            c,
            prefix: first & !low,
            low,
            shift: raw_bits(c),
            stream_bits,
        }
    }

    /// Segments after the first (skip entries).
    #[inline]
    pub(crate) fn len(&self) -> u32 {
        (self.entries.len() / SKIP_ENTRY_LEN) as u32
    }

    /// Skip entry `j` (1..=len): the partial key and the stream bit offset.
    #[inline]
    fn entry(&self, j: u32) -> (u16, u64) {
        let at = (j as usize - 1) * SKIP_ENTRY_LEN;
        let e = &self.entries[at..at + SKIP_ENTRY_LEN];
        (
            u16::from_le_bytes([e[0], e[1]]),
            u16::from_le_bytes([e[2], e[3]]) as u64,
        )
    }

    /// The stream bit at which segment `j` (1..=len) starts: its entry's offset.
    #[inline]
    pub(crate) fn offset(&self, j: u32) -> u64 {
        self.entry(j).1
    }

    /// The stream bit by which segment `j`'s deltas end.
    #[inline]
    fn end(&self, j: u32) -> u64 {
        if j < self.len() {
            self.offset(j + 1)
        } else {
            self.stream_bits
        }
    }

    /// Keys of segment `j` (0..=len) after its first.
    #[inline]
    pub(crate) fn keys_after_start(&self, j: u32) -> u32 {
        if self.keys == 0 {
            return self.count - 1;
        }
        (self.count - j * self.keys).min(self.keys) - 1
    }

    /// The start of segment `j` (1..=len) for a decode that ended segment `j - 1` at stream
    /// bit `pos` with key `prev`: [`enter`](Self::enter), and that segment's deltas must end
    /// exactly where `j` starts, below its first key. The one rule of every sequential decode.
    #[inline]
    pub(crate) fn next(&self, stream: &[u8], j: u32, pos: u64, prev: u64) -> Option<Start> {
        let s = self.enter(stream, j)?;
        (self.offset(j) == pos && s.key > prev).then_some(s)
    }

    /// Keys of the block from the start of segment `j` (0..=len) on.
    #[inline]
    pub(crate) fn keys_from(&self, j: u32) -> u32 {
        self.count - j * self.keys
    }

    /// The last segment that can hold a key `>= lo` first: the last whose start key is below
    /// `lo` (by its skip entry), or 0. All keys `>= lo` of the block are then in it or later.
    #[inline]
    pub(crate) fn find(&self, lo: u64) -> u32 {
        let m = self.len();
        if m == 0 || lo <= self.first {
            return 0;
        }
        if lo > self.last {
            return m;
        }
        // `lo` is in (first, last], so it shares the block's top c bits: a start key whose
        // partial key is below lo's is below lo.
        let target = partial(lo, self.c);
        // The number of entries below `target` (entries ascend in a well-formed block; in any
        // other, this still returns a segment in range). Keys spread about evenly over a
        // block, so the segment `lo`'s place between first and last points to is nearly always
        // right or next to it: start there, reading one or two entries (one cache line at
        // most, not a binary search's three), and search only when that fails.
        let frac = (lo - self.first) as f64 / (self.last - self.first) as f64;
        let mut j = ((frac * (self.count - 1) as f64) as u32 / self.keys).min(m);
        for _ in 0..4 {
            if j < m && self.entry(j + 1).0 < target {
                j += 1;
            } else if j > 0 && self.entry(j).0 >= target {
                j -= 1;
            } else {
                return j;
            }
        }
        let (mut base, mut size) = (0u32, m);
        while size > 0 {
            let half = size / 2;
            if self.entry(base + half + 1).0 < target {
                base += half + 1;
                size -= half + 1;
            } else {
                size = half;
            }
        }
        base
    }

    /// Start segment `j` (0..=len): its first key and stream bits, or `None` if the entry
    /// cannot be right (bits outside the stream or past the next segment's start, a partial
    /// key that disagrees with the block's prefix).
    #[inline]
    pub(crate) fn enter(&self, stream: &[u8], j: u32) -> Option<Start> {
        let end = self.end(j);
        if end > self.stream_bits {
            return None;
        }
        if j == 0 {
            return Some(Start {
                key: self.first,
                pos: 0,
                end,
            });
        }
        let (p, at) = self.entry(j);
        let pos = at + self.shift as u64;
        if pos > end {
            return None;
        }
        // At most 48 bits: one window.
        let raw = (bitio::peek(stream, at) >> 1) >> (63 - self.shift);
        let key = self.prefix | (((p as u64) << self.shift) & self.low) | raw;
        if (key >> self.shift) as u16 != p {
            return None;
        }
        Some(Start { key, pos, end })
    }
}

#[cfg(test)]
mod tests {
    use crate::table::{Table, TableOptions, build_bytes};

    fn random_keys(n: usize, mut s: u64) -> Vec<u64> {
        let mut v: Vec<u64> = (0..n)
            .map(|_| {
                s = s.wrapping_add(0x9E37_79B9_7F4A_7C15);
                let mut z = s;
                z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
                z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
                z ^ (z >> 31)
            })
            .collect();
        v.sort_unstable();
        v.dedup();
        v
    }

    /// A probe of a segmented table decodes at most a segment before its range, whatever the
    /// block size; an unsegmented one decodes up to the whole block before it.
    #[test]
    fn a_probe_decodes_at_most_a_segment_before_its_range() {
        let keys = random_keys(200_000, 7);
        let mut totals = Vec::new();
        for (segment_keys, bound) in [(16u64, 17u64), (0, 700)] {
            let o = TableOptions::default()
                .with_block_size(4096)
                .with_segment_keys(segment_keys as u32);
            let t = Table::from_bytes(build_bytes(&keys, &o).unwrap()).unwrap();
            let (mut worst, mut total) = (0, 0);
            for (i, &k) in keys.iter().enumerate().step_by(997) {
                let hi = keys[(i + 3).min(keys.len() - 1)];
                let (mut blocks, mut decoded, mut found) = (0, 0, 0);
                t.scan_range(k, hi, &mut blocks, &mut decoded, |_| {
                    found += 1;
                    true
                })
                .unwrap();
                assert_eq!(found, (i + 3).min(keys.len() - 1) - i + 1);
                // Keys decoded before the range, and the one after it that ends the scan.
                let before = decoded - found as u64 - 1;
                worst = worst.max(before);
                total += before;
            }
            assert!(
                worst < bound,
                "S = {segment_keys}: {worst} keys before a range"
            );
            totals.push(total);
        }
        // On average half a segment (8) against half a block (~330).
        assert!(totals[1] > 20 * totals[0], "{totals:?}");
    }
}
