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
//!
//! A block of a format-2 table is cut into segments of S keys: between the first key and the
//! stream, one 4-byte skip entry per segment after the first, and each segment's first key
//! raw below the block's common prefix instead of a delta (`table::segment`). Format 3, what
//! [`BlockEncoder`] writes for S > 0, keeps the segments and compacts the rest ([`Head`]): a
//! u16 count, bit-packed skip entries, the first key coded at the stream's start after the
//! previous block's last key, and the last key left to the footer.

pub use super::encoder::BlockEncoder;
pub use super::segment::Head;
pub use super::format::{BLOCK_HEADER_LEN, BLOCK_TRAILER_LEN};
use super::segment::{Segments, Start};
use crate::codec::Codec;
use crate::codec::bitio;
use crate::codec::huffman::DecodeTable;
use crate::error::{Error, Result};


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

/// A key count no block of `b` bytes with `head` can hold (`segment_keys`: one whose skip
/// entries do not fit).
#[cold]
#[inline(never)]
fn bad_count(
    head: Head,
    b: usize,
    index: u64,
    offset: u64,
    count: u32,
    segment_keys: Option<u32>,
) -> Error {
    let expected = match segment_keys {
        None => format!("1..={}", head.max_keys(b as u32)),
        Some(s) => format!("a count whose skip entries (one per {s} keys) fit the block"),
    };
    Error::corrupt(format!("block {index} key count"), offset, expected, count)
}

/// A compact block's first key that does not decode, its stream at file offset `offset`.
#[cold]
#[inline(never)]
fn bad_first(stream: &[u8], index: u64, offset: u64, after: Option<u64>) -> Error {
    Error::corrupt(
        format!("block {index} first key"),
        offset,
        match after {
            Some(a) => format!(
                "a delta after {a:#018x} (the previous block's last key) inside the first segment"
            ),
            None => "64 raw bits inside the first segment".into(),
        },
        format!("bits {:#018x}", bitio::peek(stream, 0)),
    )
}

/// A compact block's first key (format 3) and the stream bit after it: a delta after `after`,
/// the previous block's last key, or 64 raw bits in a table's first block; `None` if the bits
/// are no valid first key inside the block's first segment.
#[inline]
fn decode_first<const A: bool>(
    stream: &[u8],
    table: &DecodeTable,
    codec: Codec,
    segments: &Segments<'_, A>,
    after: Option<u64>,
) -> Option<(u64, u64)> {
    let end = segments.first_segment_end();
    match after {
        Some(a) => decode_delta_at(stream, table, codec, 0, end, a),
        None => (end >= 64).then(|| (bitio::read(stream, 0, 64), 64)),
    }
}

/// Where [`BlockDecoder::open_at`] starts: at a segment, or at the last segment that can hold
/// a key `>= lo` first ([`Segments::find`]).
#[derive(Debug, Clone, Copy)]
pub(crate) enum SeekTo {
    /// Segment `j` (clamped to the block's last).
    Segment(u32),
    /// The segment of key `lo`.
    Key(u64),
}

/// How a table lays out its blocks beyond the bytes of one: what a decoder needs from the
/// header and footer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Layout {
    /// S, keys per segment (0: unsegmented, format 1).
    pub segment_keys: u32,
    /// The block's last key (its footer entry): with the first, it gives the common prefix
    /// below which segment starts are coded.
    pub last: u64,
    /// How the block begins: formats 1 and 2 [`Head::Wide`], formats 3 and 4 [`Head::Compact`]
    /// with the previous block's last key.
    pub head: Head,
}

impl Layout {
    /// A format-1 block: one segment.
    pub const UNSEGMENTED: Layout = Layout {
        segment_keys: 0,
        last: 0,
        head: Head::Wide,
    };
}

/// Decodes the keys of one block in order.
///
/// Construction checks the crc; decoding still checks every structural rule (codes exist, the
/// stream stays inside the block, keys ascend, segments start where their skip entries say),
/// so even bytes that pass the crc by chance cannot make it panic or read out of bounds. A
/// decoded key sequence is always strictly ascending.
///
/// `A`: whether it reads format-4 blocks (`Segments<A>`); `false` only where the table is of
/// formats 1–3, whose decode then compiles none of format 4's tests.
#[derive(Debug, Clone)]
pub struct BlockDecoder<'a, const A: bool = true> {
    stream: &'a [u8],
    table: &'a DecodeTable,
    codec: Codec,
    segments: Segments<'a, A>,
    pos: u64,
    /// The stream bit by which the current segment's deltas end.
    end: u64,
    prev: u64,
    remaining: u32,
    /// The value of `remaining` at which the next key starts a segment (0: none does).
    raw_at: u32,
    segment: u32,
    started: bool,
    faulted: bool,
    /// The segment whose start was wrong, when that stopped the decode.
    bad_segment: Option<u32>,
    /// Whether the footer's last key, not coded, was not above the keys before it.
    bad_last: bool,
    index: u64,
    offset: u64,
    /// The byte of the block where the stream starts.
    stream_at: u32,
    /// Format 4: the decode ends at a segment that starts above this key
    /// ([`stop_above`](Self::stop_above)).
    stop: u64,
}

impl<'a> BlockDecoder<'a> {
    /// Check block `index`, whose bytes `block` were read at file offset `offset`, and start
    /// decoding it with `codec` and its decode table, laid out as `layout` says.
    pub fn new(
        block: &'a [u8],
        index: u64,
        offset: u64,
        codec: Codec,
        table: &'a DecodeTable,
        layout: Layout,
    ) -> Result<BlockDecoder<'a>> {
        check_crc(block, index, offset)?;
        Self::new_unchecked_crc(block, index, offset, codec, table, layout)
    }

    /// As [`new`](Self::new), for a block laid out as `layout` says, whose crc the caller has
    /// already checked. Decoding stays memory-safe and its output ascending whatever the bytes.
    pub fn new_unchecked_crc(
        block: &'a [u8],
        index: u64,
        offset: u64,
        codec: Codec,
        table: &'a DecodeTable,
        layout: Layout,
    ) -> Result<BlockDecoder<'a>> {
        Self::open_at(block, index, offset, codec, table, layout, SeekTo::Segment(0))
    }
}

impl<'a> BlockDecoder<'a, false> {
    /// As [`BlockDecoder::new_unchecked_crc`], compiled without format 4's tests (`A =
    /// false`), as queries of an index of formats 1–3 decode: a format-4 block is refused
    /// as corrupt. Public for the fuzzers, which check that it decodes every other block,
    /// whatever its bytes, exactly as the general decoder does.
    pub fn without_format_4(
        block: &'a [u8],
        index: u64,
        offset: u64,
        codec: Codec,
        table: &'a DecodeTable,
        layout: Layout,
    ) -> Result<BlockDecoder<'a, false>> {
        Self::open_at(block, index, offset, codec, table, layout, SeekTo::Segment(0))
    }
}

impl<'a, const A: bool> BlockDecoder<'a, A> {
    /// As [`new_unchecked_crc`](Self::new_unchecked_crc), started where `at` says (a key: as
    /// [`seek`](Self::seek) would). A format-3 block's
    /// first key is decoded only when the decode starts at segment 0: a probe that starts at a
    /// later segment never reads it.
    pub(crate) fn open_at(
        block: &'a [u8],
        index: u64,
        offset: u64,
        codec: Codec,
        table: &'a DecodeTable,
        layout: Layout,
        at: SeekTo,
    ) -> Result<BlockDecoder<'a, A>> {
        let b = block.len();
        let crc_at = b - BLOCK_TRAILER_LEN;
        let head = layout.head;
        let count = head.count(block);
        if count == 0 || count as u64 > head.max_keys(b as u32) {
            return Err(bad_count(head, b, index, offset, count, None));
        }
        let Some((mut segments, stream_at)) =
            Segments::of_block(block, head, layout.segment_keys, layout.last)
        else {
            return Err(bad_count(head, b, index, offset, count, Some(layout.segment_keys)));
        };
        let stream = &block[stream_at..crc_at];
        let j = match at {
            SeekTo::Segment(j) => j.min(segments.len()),
            SeekTo::Key(lo) => segments.find(lo),
        };
        let first = match head {
            Head::Wide => u64::from_le_bytes(block[4..12].try_into().unwrap()),
            Head::Compact { .. } if j > 0 => 0,
            Head::Compact { after, .. } => {
                let Some((first, end)) = decode_first(stream, table, codec, &segments, after) else {
                    return Err(bad_first(stream, index, offset + stream_at as u64, after));
                };
                segments.set_first(first, end);
                first
            }
        };
        let mut d = BlockDecoder {
            stream,
            table,
            codec,
            segments,
            pos: 0,
            end: stream.len() as u64 * 8,
            prev: first,
            remaining: count,
            raw_at: 0,
            segment: 0,
            started: false,
            faulted: false,
            bad_segment: None,
            bad_last: false,
            index,
            offset,
            stream_at: stream_at as u32,
            stop: u64::MAX,
        };
        d.start_segment(j);
        Ok(d)
    }

    /// Go to the last segment that can hold a key `>= lo` first ([`Segments::find`]), before
    /// any key is taken: the keys before it are skipped without decoding. A no-op on an
    /// unsegmented block.
    #[inline]
    pub fn seek(&mut self, lo: u64) {
        debug_assert!(!self.started);
        let j = self.segments.find(lo);
        if j > 0 {
            self.start_segment(j);
        }
    }

    /// End the block's keys, for a scan of a range ending at `hi`, where a segment starts
    /// above `hi` by its skip entry (format 4, `Segments::starts_above`): the scan stops
    /// there as it would at that segment's first key, without reading it, as the vector
    /// lanes do.
    #[inline]
    pub(crate) fn stop_above(&mut self, hi: u64) {
        self.stop = hi;
    }

    /// Go on at the last segment that can hold a key `>= key` first, if that segment comes
    /// after the one being decoded: the rest of this segment and the segments between are not
    /// decoded. At any point between keys; a no-op on an unsegmented or faulted block. A
    /// batch scan calls it when the next key it wants is past the keys it has decoded.
    pub(crate) fn skip_to(&mut self, key: u64) {
        if self.faulted {
            return;
        }
        let j = self.segments.find(key);
        if j > self.segment {
            self.start_segment(j);
            self.started = false;
        }
    }

    /// Position at the start of segment `j`, its first key next (faulting on a bad entry).
    fn start_segment(&mut self, j: u32) {
        match self.segments.enter(self.stream, j) {
            Some(s) => self.go_to(j, s),
            None => self.fail_segment(j),
        }
    }

    /// Decode on from segment `j`'s start `s`, its first key already `prev` (taken or not,
    /// as `started` says): `remaining` counts that key.
    fn go_to(&mut self, j: u32, s: Start) {
        self.segment = j;
        self.prev = s.key;
        self.pos = s.pos;
        self.end = s.end;
        let (from, after) = self.segments.keys_from_start(j, &s);
        self.remaining = from;
        // `remaining` when segment `j`'s successor starts; in the last segment, 1 if the
        // block's last key is not coded (format 3), else 0 (never).
        self.raw_at = if j < self.segments.len() {
            after
        } else {
            self.segments.implicit_last() as u32
        };
    }

    #[cold]
    fn fail_segment(&mut self, j: u32) {
        self.segment = j;
        self.faulted = true;
        self.bad_segment = Some(j);
        self.remaining = 0;
    }

    /// The next key when it starts a segment: its raw start, where the last segment's deltas
    /// ended (exactly), above the key before it.
    #[cold]
    #[inline(never)]
    fn enter_next_segment(&mut self) -> Option<u64> {
        if self.segment >= self.segments.len() {
            return self.take_implicit_last();
        }
        let j = self.segment + 1;
        if self.segments.starts_above(j, self.stop) {
            self.remaining = 0;
            return None;
        }
        let Some(s) = self.segments.next(self.stream, j, self.pos, self.prev) else {
            self.fail_segment(j);
            return None;
        };
        self.go_to(j, s);
        self.remaining -= 1;
        Some(s.key)
    }

    /// The block's uncoded last key (format 3), once the last segment's coded keys are read:
    /// the footer's, which must be above the key before it.
    #[cold]
    #[inline(never)]
    fn take_implicit_last(&mut self) -> Option<u64> {
        let last = self.segments.last();
        if last <= self.prev {
            self.faulted = true;
            self.bad_last = true;
            self.remaining = 0;
            return None;
        }
        self.prev = last;
        self.remaining = 0;
        Some(last)
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
        if self.remaining == self.raw_at {
            return self.enter_next_segment();
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
        if let Some(j) = self.bad_segment {
            return Some(self.bad_segment_start(j));
        }
        if self.bad_last {
            return Some(self.bad_last_key());
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

    #[cold]
    fn bad_last_key(&self) -> Error {
        Error::corrupt(
            format!("block {} last key", self.index),
            self.offset,
            format!("a footer entry above the block's coded keys, {:#018x}", self.prev),
            format!("{:#018x}", self.segments.last()),
        )
    }

    #[cold]
    fn bad_segment_start(&self, j: u32) -> Error {
        Error::corrupt(
            format!("block {} skip entry {j}", self.index),
            self.offset + self.segments.entry_byte(j) as u64,
            "a segment start inside the stream, where the segment before it ends, above its keys",
            format!("stream bit {} after key {:#018x}", self.pos, self.prev),
        )
    }

    /// The segment being decoded (0 for an unsegmented block), and the keys of the block left
    /// in it after the last one taken: what a decoder that takes over (`table::lanes`) needs.
    ///
    /// In format 3 the count leaves out the block's last key, which the stream does not code
    /// ([`implicit_last`](Self::implicit_last)).
    pub(crate) fn segment_state(&self) -> (u32, u32) {
        (self.segment, self.remaining.saturating_sub(self.raw_at))
    }

    /// Whether the block's last key is not coded (format 3): a decoder that takes over gives
    /// it, the footer's, after the last segment's coded keys.
    pub(crate) fn implicit_last(&self) -> bool {
        self.segments.implicit_last()
    }

    /// The block's segment shape, for a decoder that takes over and enters later segments.
    pub(crate) fn shape(&self) -> super::segment::Shape {
        self.segments.shape()
    }

    /// The block's last segment (0 for an unsegmented block).
    pub(crate) fn last_segment(&self) -> u32 {
        self.segments.len()
    }

    /// The stream bit by which the current segment's deltas end.
    pub(crate) fn segment_end(&self) -> u64 {
        self.end
    }

    fn stream_offset(&self) -> u64 {
        self.offset + self.stream_at as u64 + self.pos / 8
    }
}
