//! The sizes and fields of a segmented block's head, as writer and reader both compute them
//! (`format-spec/table.md`, "Segments", "Compact heads", "Aligned segments"): how a block
//! begins ([`Head`]), how many skip entries it holds and how wide they are, and the partial
//! key and raw bits of a segment start. Reading a block's segments is the parent module's.

/// Bytes of one skip entry: a u16 partial key, then a u16 stream bit offset.
pub const SKIP_ENTRY_LEN: usize = 4;
/// Bits of a segment's start key held in its skip entry.
pub const PARTIAL_BITS: u32 = 16;

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

/// Skip entries of a compact block (format 3) of `count` keys: those of its coded keys, all
/// but the last (the footer's), so that the uncoded key never starts a segment.
#[inline]
pub fn compact_entries(count: u32, segment_keys: u32) -> u32 {
    entries(count.saturating_sub(1), segment_keys)
}

/// The least key a compact block (format 3) after the key `after` can hold (0 for a table's
/// first block): the value its common prefix is taken from, by writer and reader alike.
#[inline]
pub fn base(after: Option<u64>) -> u64 {
    after.map_or(0, |a| a.wrapping_add(1))
}

/// The 16-bit partial key of `key` in a block whose keys share `c` top bits.
#[inline]
pub fn partial(key: u64, c: u32) -> u16 {
    (key >> raw_bits(c)) as u16
}

/// Bytes of a compact block head (format 3): the u16 key count.
pub const COMPACT_HEAD_LEN: usize = 2;
/// Bytes of an aligned block head (format 4): the u16 key count, then the u16 segment count.
pub const ALIGNED_HEAD_LEN: usize = 4;

/// Bits of an aligned skip entry's key index (format 4) in a block of `count` keys: enough
/// for the count itself (10 bits for 512..=1023 keys).
#[inline]
pub fn index_bits(count: u32) -> u32 {
    32 - count.leading_zeros()
}

/// Bytes of the bit-packed skip entries of an aligned block (format 4) of `count` keys:
/// `entries` entries of `16 + offset_bits + index_bits` bits, padded to a byte.
#[inline]
pub fn aligned_entries_len(entries: u32, block_size: u32, count: u32) -> usize {
    packed_len(
        entries,
        PARTIAL_BITS + offset_bits(block_size) + index_bits(count),
    )
}

/// Bits of a compact skip entry's stream offset in a block of `block_size` bytes: enough for
/// any bit of the block (`8 * block_size` bits), 13 at 1024 bytes.
#[inline]
pub fn offset_bits(block_size: u32) -> u32 {
    block_size.trailing_zeros() + 3
}

/// Bytes of the bit-packed skip entries of a compact block: `entries` entries of
/// `16 + offset_bits` bits, padded to a byte.
#[inline]
pub fn compact_entries_len(entries: u32, block_size: u32) -> usize {
    packed_len(entries, PARTIAL_BITS + offset_bits(block_size))
}

/// Bytes of `entries` skip entries of a compact block of `block_size` bytes and `count` keys:
/// format 3's ([`compact_entries_len`]) where `align` is 0, else format 4's
/// ([`aligned_entries_len`]). The block writer's rule, and the reader's estimate of a head.
#[inline]
pub fn skip_entries_len(align: u32, entries: u32, block_size: u32, count: u32) -> usize {
    if align > 0 {
        aligned_entries_len(entries, block_size, count)
    } else {
        compact_entries_len(entries, block_size)
    }
}

/// Bytes of `entries` bit-packed entries of `bits` bits each, padded to a byte.
#[inline]
fn packed_len(entries: u32, bits: u32) -> usize {
    (entries as usize * bits as usize).div_ceil(8)
}

/// How one block begins, from the table's format and the block's place.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Head {
    /// Formats 1 and 2: a u32 count and the raw first key, then (format 2) 4-byte skip entries.
    Wide,
    /// Format 3: a u16 count and bit-packed skip entries; the first key is the stream's first
    /// item, a delta after `after` (the previous block's last key), or 64 raw bits in the first
    /// block (`after` = `None`). Format 4 (`align` > 0) adds a u16 segment count after the key
    /// count and a key index to each skip entry: its segments start at the first key of a
    /// run sharing their top `align` bits.
    Compact {
        /// The key before the block: the previous block's footer entry.
        after: Option<u64>,
        /// Format 4: the prefix bits segments are aligned to; 0: format 3.
        align: u8,
    },
}

impl Head {
    /// Bytes before the skip entries.
    #[inline]
    pub fn bytes(self) -> usize {
        match self {
            Head::Wide => crate::table::format::BLOCK_HEADER_LEN,
            Head::Compact { align: 0, .. } => COMPACT_HEAD_LEN,
            Head::Compact { .. } => ALIGNED_HEAD_LEN,
        }
    }

    /// The key count field of `block`.
    #[inline]
    pub fn count(self, block: &[u8]) -> u32 {
        match self {
            Head::Wide => u32::from_le_bytes(block[0..4].try_into().unwrap()),
            Head::Compact { .. } => u16::from_le_bytes([block[0], block[1]]) as u32,
        }
    }

    /// The largest key count a block of `block_size` bytes with this head can hold (every
    /// coded key at least one bit; in format 3 the first is coded and the last is not).
    #[inline]
    pub fn max_keys(self, block_size: u32) -> u64 {
        let fixed = (self.bytes() + crate::table::format::BLOCK_TRAILER_LEN) as u64;
        1 + (block_size as u64 - fixed) * 8
    }
}
