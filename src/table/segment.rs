//! Segments: the skip entries of a format-2, 3 or 4 block (`format-spec/table.md`,
//! "Segments", "Compact heads" and "Aligned segments"); the sizes and fields of its head are
//! `layout`'s, finding and entering a segment `seek`'s.
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
//!
//! Format 3 ([`Head::Compact`]) packs each entry into `16 + log2(B) + 3` bits, takes the
//! common prefix from `base` (the previous block's last key + 1) instead of the first key, so
//! that a probe finds its segment without decoding the first key, and leaves the block's last
//! key uncoded: the footer holds it ([`Segments::implicit_last`]). Format 4 starts each
//! segment at the first key of a run of keys sharing their top p bits and stores each
//! segment's key index in its entry, so that a probe of a run starts at the run.

use crate::codec::bitio;

mod layout;
mod seek;
pub use layout::*;

/// Where a segment starts: its first key and the stream bits of its deltas.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Start {
    /// The segment's first key.
    pub(crate) key: u64,
    /// The stream bit of its first delta.
    pub(crate) pos: u64,
    /// The stream bit its deltas must end by: the next segment's start, or the stream's end.
    pub(crate) end: u64,
    /// Format 4: the key index of the segment's first key and of the next segment's (the
    /// block's count after the last segment), read and checked once where the segment is
    /// entered, for its key counts ([`Segments::coded_after`] and the like); 0 in other
    /// formats, whose counts follow from S.
    first: u32,
    next: u32,
}

/// Where a decode enters a block: segment `j` and, for j ≥ 1, its skip entry's partial key
/// and stream bit offset; the bit its deltas end by (the next segment's offset, or the
/// stream's end); and the next segment's partial key, all as [`Segments::find_entry`] read
/// them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Entry {
    pub(crate) j: u32,
    partial: u16,
    /// The next segment's partial key (0 where `j` is the last segment).
    next: u16,
    at: u32,
    end: u32,
    /// Format 4: the key index of segment `j`'s first key and of the next segment's (the
    /// block's count after the last segment), read with their entries; 0 in other formats.
    first: u32,
    next_first: u32,
}

impl Entry {
    /// The stream bit where the segment's raw bits start (0 for segment 0).
    #[inline]
    pub(crate) fn offset(&self) -> u64 {
        self.at as u64
    }
}

/// The segment layout of one block, from its header, its footer entry and the table's S.
///
/// `A`: whether this reader handles format 4 (aligned segments). Readers of tables of formats
/// 1–3 only take `A = false`, which compiles none of format 4's tests: at 1M keys they cost a
/// format-3 query ~260 instructions (2.8%) on the lanes' path. A format-4 block is never
/// parsed as `Segments<false>` ([`of_block`](Self::of_block) refuses it), so `A = false` can
/// cost speed only, never a key.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Segments<'a, const A: bool = true> {
    /// The block from its skip entries on: `SKIP_ENTRY_LEN` bytes each (format 2), or
    /// bit-packed (format 3); `m` of them.
    entries: &'a [u8],
    shape: Shape,
}

/// Everything [`Segments`] knows of a block but its bytes. A decoder that enters the block
/// again (the vector lanes at each segment change, a probe planned before its decode) keeps
/// this and [`bind`](Self::bind)s it to the block's bytes instead of parsing the head again
/// (about a hundred instructions a parse).
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Shape {
    /// The block's first key (format 3 codes it in the stream, and
    /// [`Segments::set_first`] sets it once it is decoded).
    first: u64,
    /// The least key the block can hold: its first (formats 1, 2), or one above the previous
    /// block's last (format 3, where the first is not known before decoding). The common
    /// prefix is the one `base` and `last` share.
    base: u64,
    last: u64,
    /// S: keys per segment (0: one segment, format 1).
    keys: u32,
    count: u32,
    /// Skip entries: segments after the first.
    m: u32,
    /// The stream bit after the first key (0 but in format 3), and the stream's length.
    first_end: u32,
    stream_bits: u32,
    /// The bytes before the skip entries, and the byte at which the coded stream starts.
    head_bytes: u8,
    stream_at: u32,
    /// Format 3: the block's last key is not coded; a decode takes it from the footer after
    /// the last segment's coded keys (a block of two keys or more).
    implicit_last: bool,
    /// The bits every key of the block shares (c), and the raw bits of a segment start.
    c: u8,
    shift: u8,
    /// Format 3: bits of an entry's offset (its partial key first, MSB-first); 0: format 2.
    offset_bits: u8,
    /// Format 4: bits of an entry's key index (after its offset); 0: segments of S keys.
    index_bits: u8,
    /// Formats 3 and 4: bits of a whole skip entry.
    entry_bits: u8,
    /// Format 4: the prefix bits every segment start is the first key of; 0: none.
    align: u8,
}

impl Shape {
    /// The segments of `block` (all its bytes, the block this shape was taken from), and its
    /// coded stream. Any block of the table's size binds without a panic.
    ///
    /// `A = false` only for a shape whose block is not format 4 (one that
    /// [`Segments::<false>::of_block`](Segments::of_block) gave, or any shape of a table of
    /// formats 1–3).
    #[inline(always)]
    pub(crate) fn bind<const A: bool>(self, block: &[u8]) -> (Segments<'_, A>, &[u8]) {
        debug_assert!(
            A || self.align == 0,
            "a format-4 shape bound without format 4"
        );
        let crc_at = block.len() - super::format::BLOCK_TRAILER_LEN;
        let segs = Segments {
            entries: &block[self.head_bytes as usize..],
            shape: self,
        };
        (segs, &block[self.stream_at as usize..crc_at])
    }
}

impl<'a, const A: bool> Segments<'a, A> {
    /// The layout of block `block` (all its bytes), whose head is `head`, of a table with
    /// `keys` keys per segment, whose footer entry is `last`, with the byte at which its coded
    /// stream starts; `None` if its key count (at least 1) leaves no room for its skip entries,
    /// or, for `A = false`, if it is a format-4 block.
    #[inline(always)]
    pub(crate) fn of_block(
        block: &'a [u8],
        head: Head,
        keys: u32,
        last: u64,
    ) -> Option<(Segments<'a, A>, usize)> {
        let count = head.count(block);
        let b = block.len() as u32;
        let (m, entries_len, offset_bits, index_bits, align) = match head {
            Head::Wide => {
                let m = entries(count, keys);
                (m, m as usize * SKIP_ENTRY_LEN, 0, 0, 0)
            }
            Head::Compact { align: 0, .. } => {
                let m = compact_entries(count, keys);
                (m, compact_entries_len(m, b), offset_bits(b), 0, 0)
            }
            Head::Compact { .. } if !A => return None,
            Head::Compact { align, .. } => {
                // Every segment start is one of the coded keys 1..count - 2.
                let m = u16::from_le_bytes([block[2], block[3]]) as u32;
                if m > count.saturating_sub(2) {
                    return None;
                }
                let len = aligned_entries_len(m, b, count);
                (m, len, offset_bits(b), index_bits(count), align)
            }
        };
        let stream_at = head.bytes() + entries_len;
        let crc_at = block.len() - super::format::BLOCK_TRAILER_LEN;
        if stream_at > crc_at {
            return None;
        }
        let (first, base) = match head {
            Head::Wide => {
                let first = u64::from_le_bytes(block[4..12].try_into().unwrap());
                (first, first)
            }
            // Not known before the stream is decoded: `set_first` fills it in.
            Head::Compact { after, .. } => (base(after), base(after)),
        };
        let stream_bits = (crc_at - stream_at) as u64 * 8;
        let c = (base ^ last).leading_zeros();
        let segs = Segments {
            // To the block's end, not the stream's start: an entry is read with one 8-byte load,
            // which stays inside the block (the stream and the crc follow the entries).
            entries: &block[head.bytes()..],
            shape: Shape {
                first,
                base,
                last,
                keys,
                count,
                m,
                first_end: 0,
                stream_bits: stream_bits as u32,
                head_bytes: head.bytes() as u8,
                stream_at: stream_at as u32,
                implicit_last: matches!(head, Head::Compact { .. }) && count >= 2,
                c: c as u8,
                shift: raw_bits(c) as u8,
                offset_bits: offset_bits as u8,
                index_bits: index_bits as u8,
                entry_bits: (PARTIAL_BITS + offset_bits + index_bits) as u8,
                align,
            },
        };
        Some((segs, stream_at))
    }

    /// This layout without the block's bytes, to [`Shape::bind`] again.
    #[inline(always)]
    pub(crate) fn shape(&self) -> Shape {
        self.shape
    }

    /// Format 3: the block's first key, decoded, and the stream bit after it.
    #[inline]
    pub(crate) fn set_first(&mut self, first: u64, end: u64) {
        self.shape.first = first;
        self.shape.first_end = end as u32;
    }

    /// The byte of the block (from its start) where skip entry `j` (1..=len) begins, for
    /// errors.
    pub(crate) fn entry_byte(&self, j: u32) -> usize {
        let j = j.saturating_sub(1) as usize;
        self.shape.head_bytes as usize
            + match self.shape.offset_bits {
                0 => j * SKIP_ENTRY_LEN,
                _ => j * self.shape.entry_bits as usize / 8,
            }
    }

    /// The block's key count field.
    #[inline]
    pub(crate) fn count(&self) -> u32 {
        self.shape.count
    }

    /// Segments after the first (skip entries).
    #[inline]
    pub(crate) fn len(&self) -> u32 {
        self.shape.m
    }

    /// Skip entry `j` (1..=len): the partial key, the stream bit offset and, in format 4, the
    /// key index (0 in other formats), from one load: a search reads the index with the
    /// rest of the entry rather than again where the segment is entered.
    #[inline]
    fn entry(&self, j: u32) -> (u16, u64, u32) {
        self.entry_with::<true>(j)
    }

    /// [`entry`](Self::entry), the key index read only where `INDEX` asks for it (0 else): a
    /// search for the segment number alone does not extract it.
    #[inline]
    fn entry_with<const INDEX: bool>(&self, j: u32) -> (u16, u64, u32) {
        if self.shape.offset_bits == 0 {
            let at = (j as usize - 1) * SKIP_ENTRY_LEN;
            let e = &self.entries[at..at + SKIP_ENTRY_LEN];
            return (
                u16::from_le_bytes([e[0], e[1]]),
                u16::from_le_bytes([e[2], e[3]]) as u64,
                0,
            );
        }
        let w = self.shape.offset_bits as u32;
        // A reader without format 4 reads no index (its blocks have none), and a search that
        // does not ask for it leaves it below the bits it takes.
        let x = if A && INDEX {
            self.shape.index_bits as u32
        } else {
            0
        };
        let bits = PARTIAL_BITS + w + x;
        let at = (j as u64 - 1) * self.shape.entry_bits as u64;
        // At most 48 bits from any bit: one window.
        let v = bitio::peek(self.entries, at) >> (64 - bits);
        let index = (v & ((1 << x) - 1)) as u32;
        let v = v >> x;
        ((v >> w) as u16, v & ((1 << w) - 1), index)
    }

    /// Format 4: the key index of segment `j`'s first key (0..=len), read from its skip
    /// entry; for `len + 1`, the block's count.
    #[inline]
    fn index(&self, j: u32) -> u32 {
        if j == 0 || j > self.shape.m {
            return if j == 0 { 0 } else { self.shape.count };
        }
        self.entry(j).2
    }

    /// The stream bit at which segment `j` (1..=len) starts: its entry's offset.
    #[inline]
    pub(crate) fn offset(&self, j: u32) -> u64 {
        self.entry(j).1
    }

    /// The stream bit by which the first segment's deltas (and, format 3, its first key) end.
    #[inline]
    pub(crate) fn first_segment_end(&self) -> u64 {
        self.end(0)
    }

    /// The stream bit by which segment `j`'s deltas end.
    #[inline]
    fn end(&self, j: u32) -> u64 {
        if j < self.len() {
            self.offset(j + 1)
        } else {
            self.shape.stream_bits as u64
        }
    }

    /// 1 if segment `j` (0..=len) ends with the block's uncoded last key (the last segment of
    /// a format-3 or format-4 block of two keys or more), else 0.
    #[inline(always)]
    fn ends_uncoded(&self, j: u32) -> u32 {
        (j >= self.shape.m && self.shape.implicit_last) as u32
    }

    /// Format 4: whether segments hold key indices, for a reader compiled for it (`A`).
    #[inline(always)]
    fn indexed(&self) -> bool {
        A && self.shape.index_bits != 0
    }

    /// Keys of segment `j` (0..=len) after its first.
    #[inline(always)]
    pub(crate) fn keys_after_start(&self, j: u32) -> u32 {
        if self.indexed() {
            // (`enter_entry` checked that the indices ascend.)
            return self.index(j + 1) - self.index(j) - 1;
        }
        if j >= self.shape.m {
            // The last segment runs to the block's end: in format 3 that can be S + 1 keys,
            // when the uncoded last key would have started a segment.
            return self
                .shape
                .count
                .saturating_sub(j * self.shape.keys)
                .saturating_sub(1);
        }
        self.shape.keys - 1
    }

    /// Keys of segment `j` (0..=len) after its first that its stream codes: all of them but
    /// an uncoded last key ([`implicit_last`](Self::implicit_last)).
    #[inline]
    pub(crate) fn coded_after_start(&self, j: u32) -> u32 {
        self.keys_after_start(j) - self.ends_uncoded(j)
    }

    /// Keys of the block from the start of segment `j` (0..=len) on.
    #[inline(always)]
    pub(crate) fn keys_from(&self, j: u32) -> u32 {
        if self.indexed() {
            return self.shape.count - self.index(j);
        }
        self.shape.count - j * self.shape.keys
    }

    /// [`coded_after_start`](Self::coded_after_start) of segment `j`, entered at `s`: in
    /// format 4 from the key indices its entry already read, not from its skip entries again
    /// (at 1M keys, reading each index once saved ~150 instructions a probe).
    #[inline(always)]
    pub(crate) fn coded_after(&self, j: u32, s: &Start) -> u32 {
        if self.indexed() {
            return s.next - s.first - 1 - self.ends_uncoded(j);
        }
        self.coded_after_start(j)
    }

    /// [`keys_from`](Self::keys_from) `j` and `j + 1` for segment `j` entered at `s`: the
    /// block's keys from the segment's first key on, and from the next segment's.
    #[inline(always)]
    pub(crate) fn keys_from_start(&self, j: u32, s: &Start) -> (u32, u32) {
        if self.indexed() {
            return (self.shape.count - s.first, self.shape.count - s.next);
        }
        let next = if j < self.shape.m {
            self.keys_from(j + 1)
        } else {
            0
        };
        (self.keys_from(j), next)
    }

    /// Format 4: whether segment `j` (1..=len) starts above `hi` by its skip entry alone, so
    /// that a decode of a range ending at `hi` may stop at the segment before it without
    /// entering it. In an aligned table a run's last key ends a segment where the next run
    /// starts one, so nearly every probe of a run would otherwise enter the next segment to
    /// read one key past its range. False in other formats.
    #[inline(always)]
    pub(crate) fn starts_above(&self, j: u32, hi: u64) -> bool {
        // `hi` between base and last shares their top c bits, so a start whose partial key
        // is above hi's is above hi.
        A && self.shape.align > 0
            && hi >= self.shape.base
            && hi < self.shape.last
            && self.entry(j).0 > partial(hi, self.shape.c as u32)
    }

    /// [`starts_above`](Self::starts_above) of the segment after `e`'s, from what
    /// [`find_entry`](Self::find_entry) read of its skip entry: whether a decode of a range
    /// ending at `hi` that enters the block at `e` ends with `e`'s segment. Decided where a
    /// probe starts, so that its lane retires at the segment's end without entering the next
    /// segment's rule (at 1M keys nearly every probe of a format-4 table ends so).
    #[inline(always)]
    pub(crate) fn ends_with(&self, e: &Entry, hi: u64) -> bool {
        // Without a branch (`&`, not `&&`): decided for every probe, the answer is different
        // from probe to probe.
        A & (self.shape.align > 0)
            & (e.j < self.shape.m)
            & (hi >= self.shape.base)
            & (hi < self.shape.last)
            & (e.next > partial(hi, self.shape.c as u32))
    }

    /// Whether the block's last key is not coded (format 3, two keys or more): a decode takes
    /// it from the footer once the last segment's coded keys are read.
    #[inline]
    pub(crate) fn implicit_last(&self) -> bool {
        self.shape.implicit_last
    }

    /// The block's last key, its footer entry.
    #[inline]
    pub(crate) fn last(&self) -> u64 {
        self.shape.last
    }
}

#[cfg(test)]
mod tests;
