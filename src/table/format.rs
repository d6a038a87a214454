//! Fixed-size structures of the table file: header and trailer (`format-spec/table.md`).
//!
//! ```text
//!  0            176                176 + n*B               +8*n+4        +32
//!  +------------+------------------+----------------------+-------------+
//!  | header     | block 0 .. n-1   | footer: last keys,   | trailer     |
//!  | (176 B)    | (B bytes each)   | crc32                | (32 B)      |
//!  +------------+------------------+----------------------+-------------+
//! ```
//!
//! All integers are little-endian. Every crc32 (IEEE, as crc32fast computes it) covers the
//! structure's file offset as a u64 LE followed by the structure's bytes before the crc field.

use byteorder::{ByteOrder, LittleEndian as LE};

use crate::codec::Codec;
use crate::codec::huffman::{Code, Lengths};
use crate::error::{Error, Result};
use crate::permutation::Permutation;

/// Bytes before the coded stream: count (4) and first key (8).
pub const BLOCK_HEADER_LEN: usize = 12;
/// Bytes after the coded stream: the crc32.
pub const BLOCK_TRAILER_LEN: usize = 4;
/// Smallest block size.
pub const MIN_BLOCK_SIZE: u32 = 128;
/// Largest block size.
pub const MAX_BLOCK_SIZE: u32 = 65536;
/// The largest block size a segmented table may use: skip entries hold stream bit offsets in
/// 16 bits, and a block of 8192 bytes has 65408 stream bits.
pub const MAX_SEGMENTED_BLOCK_SIZE: u32 = 8192;
/// Fewest keys per segment a table may declare.
pub const MIN_SEGMENT_KEYS: u32 = 2;
/// Most keys per segment a table may declare.
pub const MAX_SEGMENT_KEYS: u32 = 65535;
/// Magic at the start of a table file.
pub const HEADER_MAGIC: [u8; 8] = *b"SIMDXTBL";
/// Magic at the very end of a table file.
pub const TRAILER_MAGIC: [u8; 8] = *b"SIMDXEND";
/// The format version this build writes and reads.
pub const FORMAT_VERSION: u32 = 1;
/// The first format version of a segmented table (S > 0, skip entries in every block): read,
/// no longer written.
pub const SEGMENTED_VERSION: u32 = 2;
/// The format version a segmented table is written in: format 2 with compact block heads (a
/// u16 count, bit-packed skip entries, the first key coded after the previous block's last).
pub const COMPACT_VERSION: u32 = 3;
/// The format version of a table whose segments start where its probes' prefix ranges start:
/// format 3 with a segment count in each block head and each skip entry's key index, so that
/// segments may hold any number of keys.
pub const ALIGNED_VERSION: u32 = 4;
/// Header length in bytes.
pub const HEADER_LEN: usize = 176;
/// Trailer length in bytes.
pub const TRAILER_LEN: usize = 32;

pub use crate::checksum::{check_crc, crc_at};

/// The table header.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Header {
    /// How the blocks are coded.
    pub codec: Codec,
    /// Block size B in bytes.
    pub block_size: u32,
    /// Number of keys.
    pub key_count: u64,
    /// Number of blocks.
    pub block_count: u64,
    /// The permutation the keys are sorted under.
    pub permutation: Permutation,
    /// Huffman code lengths for h = 0..=63.
    pub code_lengths: Lengths,
    /// S, keys per segment: 0 for a format-1 table, else its blocks' segment length.
    pub segment_keys: u32,
    /// The format version: 1 (S = 0), 2, 3 or 4 (S > 0).
    pub version: u32,
    /// Format 4: the prefix bits p its segments are aligned to (every segment start is the
    /// first key of its top p bits); 0 in every other format.
    pub aligned_prefix: u32,
}

/// The format version a table of segments of `segment_keys` keys, aligned to `aligned_prefix`
/// prefix bits (0: not aligned), is written in.
pub fn version_for(segment_keys: u32, aligned_prefix: u32) -> u32 {
    if segment_keys == 0 {
        FORMAT_VERSION
    } else if aligned_prefix == 0 {
        COMPACT_VERSION
    } else {
        ALIGNED_VERSION
    }
}

/// Whether this build reads format `version`.
fn known_version(version: u32) -> bool {
    (FORMAT_VERSION..=ALIGNED_VERSION).contains(&version)
}

/// The versions this build reads, for errors.
const KNOWN_VERSIONS: &str = "1, 2, 3 or 4";

/// Check an aligned prefix (0: none, always valid): 1..=63 bits.
pub fn check_aligned_prefix(aligned_prefix: u32) -> Result<()> {
    if aligned_prefix > 63 {
        return Err(Error::InvalidArgument(format!(
            "aligned prefix {aligned_prefix} bits is not 0 (none) or in 1..=63"
        )));
    }
    Ok(())
}

/// Check a segment length for blocks of `block_size` bytes (0: unsegmented, always valid).
pub fn check_segment_keys(segment_keys: u32, block_size: u32) -> Result<()> {
    if segment_keys == 0 {
        return Ok(());
    }
    if !(MIN_SEGMENT_KEYS..=MAX_SEGMENT_KEYS).contains(&segment_keys) {
        return Err(Error::InvalidArgument(format!(
            "segment length {segment_keys} keys is not 0 (none) or in \
             {MIN_SEGMENT_KEYS}..={MAX_SEGMENT_KEYS}"
        )));
    }
    if block_size > MAX_SEGMENTED_BLOCK_SIZE {
        return Err(Error::InvalidArgument(format!(
            "block size {block_size} is above {MAX_SEGMENTED_BLOCK_SIZE}, the largest a table \
             of segments can use (skip entries hold 16-bit stream offsets)"
        )));
    }
    Ok(())
}

/// Check a block size: a power of two in 128..=65536.
pub fn check_block_size(b: u32) -> Result<()> {
    if b.is_power_of_two() && (MIN_BLOCK_SIZE..=MAX_BLOCK_SIZE).contains(&b) {
        Ok(())
    } else {
        Err(Error::InvalidArgument(format!(
            "block size {b} is not a power of two in {MIN_BLOCK_SIZE}..={MAX_BLOCK_SIZE}"
        )))
    }
}

impl Header {
    /// Serialize.
    pub fn encode(&self) -> [u8; HEADER_LEN] {
        let mut b = [0u8; HEADER_LEN];
        b[0..8].copy_from_slice(&HEADER_MAGIC);
        LE::write_u32(&mut b[8..12], self.version);
        LE::write_u32(&mut b[12..16], self.codec.id());
        LE::write_u32(&mut b[16..20], self.block_size);
        LE::write_u32(&mut b[20..24], self.segment_keys);
        LE::write_u64(&mut b[24..32], self.key_count);
        LE::write_u64(&mut b[32..40], self.block_count);
        b[40..104].copy_from_slice(self.permutation.as_array());
        b[104..168].copy_from_slice(&self.code_lengths);
        LE::write_u32(&mut b[168..172], self.aligned_prefix);
        let crc = crc_at(0, &b[..172]);
        LE::write_u32(&mut b[172..176], crc);
        b
    }

    /// Parse and validate; `b` is at least [`HEADER_LEN`] bytes.
    pub fn decode(b: &[u8]) -> Result<Header> {
        let b = &b[..HEADER_LEN];
        if b[0..8] != HEADER_MAGIC {
            return Err(Error::corrupt(
                "table header magic",
                0,
                format!("{:?}", String::from_utf8_lossy(&HEADER_MAGIC)),
                format!("{:02x?}", &b[0..8]),
            ));
        }
        let version = LE::read_u32(&b[8..12]);
        if !known_version(version) {
            return Err(Error::Unsupported {
                path: None,
                what: "table format version",
                expected: KNOWN_VERSIONS.into(),
                found: version as u64,
            });
        }
        check_crc(|| "table header crc32".into(), 0, &b[..176])?;
        let codec_id = LE::read_u32(&b[12..16]);
        let codec = Codec::from_id(codec_id).ok_or(Error::Unsupported {
            path: None,
            what: "codec",
            expected: "1 (h-delta) or 2 (gap)".into(),
            found: codec_id as u64,
        })?;
        let block_size = LE::read_u32(&b[16..20]);
        check_block_size(block_size).map_err(|_| {
            Error::corrupt(
                "table header block size",
                16,
                "a power of two in 128..=65536",
                block_size,
            )
        })?;
        let segment_keys = LE::read_u32(&b[20..24]);
        if version != FORMAT_VERSION
            && (segment_keys == 0 || check_segment_keys(segment_keys, block_size).is_err())
        {
            return Err(Error::corrupt(
                        "table header segment length",
                        20,
                        format!(
                            "keys per segment in {}..={} with a block size of at most {}",
                            MIN_SEGMENT_KEYS,
                            MAX_SEGMENT_KEYS,
                            MAX_SEGMENTED_BLOCK_SIZE
                        ),
                        format!("{segment_keys} keys in blocks of {block_size}"),
            ));
        }
        let reserved: &[(usize, usize)] = match version {
            FORMAT_VERSION => &[(20, 4), (168, 4)],
            ALIGNED_VERSION => &[],
            _ => &[(168, 4)],
        };
        let aligned_prefix = LE::read_u32(&b[168..172]);
        if version == ALIGNED_VERSION && !(1..=63).contains(&aligned_prefix) {
            return Err(Error::corrupt(
                "table header aligned prefix",
                168,
                "prefix bits in 1..=63",
                aligned_prefix,
            ));
        }
        for &(off, len) in reserved {
            if b[off..off + len].iter().any(|&x| x != 0) {
                return Err(Error::corrupt(
                    "table header reserved field",
                    off as u64,
                    "zero",
                    format!("{:02x?}", &b[off..off + len]),
                ));
            }
        }
        let permutation = Permutation::new(b[40..104].try_into().unwrap()).map_err(|e| {
            Error::corrupt("table header permutation", 40, "a permutation of 0..64", e)
        })?;
        let code_lengths: Lengths = b[104..168].try_into().unwrap();
        Code::from_lengths(&code_lengths).map_err(|e| {
            Error::corrupt(
                "table header code lengths",
                104,
                "a valid canonical code",
                e,
            )
        })?;
        Ok(Header {
            codec,
            block_size,
            key_count: LE::read_u64(&b[24..32]),
            block_count: LE::read_u64(&b[32..40]),
            permutation,
            code_lengths,
            segment_keys,
            version,
            aligned_prefix: if version == ALIGNED_VERSION {
                aligned_prefix
            } else {
                0
            },
        })
    }
}

/// The trailer: where the footer is, found from the end of the file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Trailer {
    /// File offset of the footer.
    pub footer_offset: u64,
    /// Footer length in bytes (8 per block + 4).
    pub footer_len: u64,
    /// The format version, the header's.
    pub version: u32,
}

impl Trailer {
    /// Serialize; `offset` is the trailer's own file offset.
    pub fn encode(&self, offset: u64) -> [u8; TRAILER_LEN] {
        let mut b = [0u8; TRAILER_LEN];
        LE::write_u64(&mut b[0..8], self.footer_offset);
        LE::write_u64(&mut b[8..16], self.footer_len);
        LE::write_u32(&mut b[16..20], self.version);
        let crc = crc_at(offset, &b[..20]);
        LE::write_u32(&mut b[20..24], crc);
        b[24..32].copy_from_slice(&TRAILER_MAGIC);
        b
    }

    /// Parse and validate the [`TRAILER_LEN`] bytes `b` found at file offset `offset`.
    pub fn decode(b: &[u8], offset: u64) -> Result<Trailer> {
        if b[24..32] != TRAILER_MAGIC {
            return Err(Error::corrupt(
                "table trailer magic",
                offset + 24,
                format!("{:?}", String::from_utf8_lossy(&TRAILER_MAGIC)),
                format!("{:02x?} (truncated or damaged file)", &b[24..32]),
            ));
        }
        let version = LE::read_u32(&b[16..20]);
        if !known_version(version) {
            return Err(Error::Unsupported {
                path: None,
                what: "table format version (trailer)",
                expected: KNOWN_VERSIONS.into(),
                found: version as u64,
            });
        }
        check_crc(|| "table trailer crc32".into(), offset, &b[..24])?;
        Ok(Trailer {
            footer_offset: LE::read_u64(&b[0..8]),
            footer_len: LE::read_u64(&b[8..16]),
            version,
        })
    }
}
