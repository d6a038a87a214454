//! The salted crc32 that seals every on-disk structure (table header, trailer and blocks; id map
//! header, footer and blocks; log header; sealed text): crc32 (IEEE, as `crc32fast`) of the
//! structure's file offset as 8 little-endian bytes followed by its bytes before the crc field.
//! Mixing in the offset catches a structure read from the wrong place.
//!
//! Also the mixer of the order-independent set digests that `verify` compares (a table's keys
//! against its generation's id map): a sum of [`mix64`] of every member.

use std::sync::atomic::{AtomicU64, Ordering};

use byteorder::{ByteOrder, LittleEndian as LE};

use crate::error::{Error, Result};

/// crc32 of a structure at `offset` whose bytes before the crc field are `bytes`.
pub fn crc_at(offset: u64, bytes: &[u8]) -> u32 {
    let mut h = crc32fast::Hasher::new();
    h.update(&offset.to_le_bytes());
    h.update(bytes);
    h.finalize()
}

/// Check a structure that ends in its crc32: `bytes` is the whole structure, read at file
/// offset `offset`, its last 4 bytes the stored crc (little-endian) of the rest. The error names
/// `structure()` (built only on failure) and the crc field's offset.
pub fn check_crc(structure: impl FnOnce() -> String, offset: u64, bytes: &[u8]) -> Result<()> {
    if bytes.len() < 4 {
        return Err(Error::corrupt(structure(), offset, "at least 4 bytes", bytes.len()));
    }
    let at = bytes.len() - 4;
    let stored = LE::read_u32(&bytes[at..]);
    let actual = crc_at(offset, &bytes[..at]);
    if stored != actual {
        return Err(Error::corrupt(
            structure(),
            offset + at as u64,
            format!("{actual:#010x}"),
            format!("{stored:#010x}"),
        ));
    }
    Ok(())
}

/// A bijective 64-bit mixer (splitmix64's output function). Summed over a set's members it makes
/// an order-independent digest: `verify` checks that a table and the id map hold the same
/// fingerprints without sorting either. Digests are computed and compared in memory, never
/// stored.
#[inline]
pub fn mix64(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// The blocks of a file whose crc (and whatever else is checked with it) this reader has
/// checked, one bit a block: a block is checked the first time it is read and not again, the
/// bytes being immutable while the file is open. A table's blocks and an id or document map's
/// share it; checking a map's 4 KiB block on every lookup was most of a store query's cost
/// (docs/log/benchmarks.md, “a store's queries”).
#[derive(Debug)]
pub struct Checked(Box<[AtomicU64]>);

impl Checked {
    /// None of `blocks` blocks checked yet.
    pub fn new(blocks: u64) -> Checked {
        Checked(
            (0..blocks.div_ceil(64))
                .map(|_| AtomicU64::new(0))
                .collect(),
        )
    }

    /// Whether block `i` (in range) has been checked.
    #[inline]
    pub fn is_set(&self, i: u64) -> bool {
        self.0[(i / 64) as usize].load(Ordering::Relaxed) & (1 << (i % 64)) != 0
    }

    /// Mark block `i` (in range) checked.
    #[inline]
    pub fn set(&self, i: u64) {
        self.0[(i / 64) as usize].fetch_or(1 << (i % 64), Ordering::Relaxed);
    }

    /// Bytes of the bitmap.
    pub fn heap_bytes(&self) -> usize {
        self.0.len() * 8
    }
}
