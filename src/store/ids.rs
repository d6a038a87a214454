//! The id map: every (fingerprint, document id) pair of a generation, stored once beside the
//! tables (not once per table: t copies of the ids would multiply the footprint).
//!
//! Pairs are sorted by (fingerprint, id) and packed into fixed-size blocks of varint-coded
//! deltas; an in-memory array of each block's first fingerprint selects which block(s) to decode,
//! the same idea as the tables' last-key arrays. Layout in `format-spec/store.md`:
//!
//! ```text
//! header (48 B) | block 0 | block 1 | ... | first fingerprints (8 B each) | crc32
//! ```
//!
//! A block is `count u32 | used u32 | entries ... | zero padding | crc32`; an entry is
//! `varint(fp - previous fp)` then `varint(id)` when the fingerprint changed (or it is the
//! block's first entry) or `varint(id - previous id)` when it did not. A fingerprint's pairs may
//! span blocks.

use std::io::{Seek, Write};
use std::path::Path;

use byteorder::{ByteOrder, LittleEndian as LE};
use memmap2::Mmap;

use super::blocks::{BlockWriter, read_block, read_footer};
use super::varint::{get_varint, put_varint, skip_varint};
use crate::checksum::Checked;
use crate::error::{Error, Result};
use crate::table::format::{check_crc, crc_at};

/// Magic bytes at the start of an id map.
pub const IDS_MAGIC: [u8; 8] = *b"SIMDXIDS";
/// Id map format version.
pub const IDS_VERSION: u32 = 1;
/// Header length in bytes.
pub const IDS_HEADER_LEN: usize = super::blocks::HEADER_LEN;
/// Block size the store writes: about 100 pairs of a large store, of which a lookup decodes
/// half. At 4096 bytes (~400 pairs, the size before store queries were measured:
/// docs/log/benchmarks.md, “a store's queries”), decoding them was most of a store query's
/// work: on 1M pairs, a query cost 24.5k instructions against the
/// index's 8.2k; at 1024 bytes, 15.7k (512: 14.2k). The cost is 1.9% more bytes on disk
/// and 8 bytes of memory a block (0.08 a pair) for its first fingerprint. Readers take any
/// power of two from 64 bytes on, so maps written before still open.
pub const IDS_BLOCK_SIZE: u32 = 1024;

/// The id map header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct IdsHeader {
    block_size: u32,
    pairs: u64,
    fingerprints: u64,
    blocks: u64,
}

impl IdsHeader {
    fn encode(&self) -> [u8; IDS_HEADER_LEN] {
        let mut b = [0u8; IDS_HEADER_LEN];
        b[..8].copy_from_slice(&IDS_MAGIC);
        LE::write_u32(&mut b[8..12], IDS_VERSION);
        LE::write_u32(&mut b[12..16], self.block_size);
        LE::write_u64(&mut b[16..24], self.pairs);
        LE::write_u64(&mut b[24..32], self.fingerprints);
        LE::write_u64(&mut b[32..40], self.blocks);
        // 40..44 reserved, zero.
        let crc = crc_at(0, &b[..44]);
        LE::write_u32(&mut b[44..48], crc);
        b
    }

    fn decode(b: &[u8]) -> Result<IdsHeader> {
        if b.len() < IDS_HEADER_LEN {
            return Err(Error::corrupt(
                "id map header",
                0,
                format!("at least {IDS_HEADER_LEN} bytes"),
                format!("{} bytes", b.len()),
            ));
        }
        if b[..8] != IDS_MAGIC {
            return Err(Error::corrupt(
                "id map magic",
                0,
                "SIMDXIDS",
                format!("{:02x?}", &b[..8]),
            ));
        }
        check_crc(|| "id map header crc32".into(), 0, &b[..IDS_HEADER_LEN])?;
        let version = LE::read_u32(&b[8..12]);
        if version != IDS_VERSION {
            return Err(Error::Unsupported {
                path: None,
                what: "id map format version",
                expected: IDS_VERSION.to_string(),
                found: version.into(),
            });
        }
        let h = IdsHeader {
            block_size: LE::read_u32(&b[12..16]),
            pairs: LE::read_u64(&b[16..24]),
            fingerprints: LE::read_u64(&b[24..32]),
            blocks: LE::read_u64(&b[32..40]),
        };
        if !(64..=1 << 20).contains(&h.block_size) || !h.block_size.is_power_of_two() {
            return Err(Error::corrupt(
                "id map block size",
                12,
                "a power of two in 64..=1048576",
                h.block_size.to_string(),
            ));
        }
        let reserved = LE::read_u32(&b[40..44]);
        if reserved != 0 {
            return Err(Error::corrupt(
                "id map header reserved field",
                40,
                "0",
                reserved.to_string(),
            ));
        }
        Ok(h)
    }
}

/// Writes an id map from (fingerprint, id) pairs in strictly ascending order.
pub struct IdsWriter<W: Write + Seek> {
    blocks: BlockWriter<W>,
    header: IdsHeader,
    prev: Option<(u64, u64)>,
    /// Previous pair within the current block.
    in_block: Option<(u64, u64)>,
    entry: Vec<u8>,
}

impl<W: Write + Seek> IdsWriter<W> {
    /// Start an id map with blocks of `block_size` bytes.
    pub fn new(w: W, block_size: u32) -> Result<IdsWriter<W>> {
        let header = IdsHeader {
            block_size,
            pairs: 0,
            fingerprints: 0,
            blocks: 0,
        };
        Ok(IdsWriter {
            blocks: BlockWriter::new(w, "write id map", block_size, &header.encode())?,
            header,
            prev: None,
            in_block: None,
            entry: Vec::with_capacity(20),
        })
    }

    /// Add the next pair; pairs must be strictly ascending by (fingerprint, id).
    pub fn add(&mut self, fp: u64, id: u64) -> Result<()> {
        if let Some(p) = self.prev {
            if (fp, id) <= p {
                return Err(Error::InvalidArgument(format!(
                    "id map pairs out of order: ({fp:016x}, {id}) after ({:016x}, {})",
                    p.0, p.1
                )));
            }
            if fp != p.0 {
                self.header.fingerprints += 1;
            }
        } else {
            self.header.fingerprints = 1;
        }
        self.prev = Some((fp, id));
        self.header.pairs += 1;
        self.entry.clear();
        match self.in_block {
            Some((pf, pi)) if pf == fp => {
                put_varint(&mut self.entry, 0);
                put_varint(&mut self.entry, id - pi);
            }
            Some((pf, _)) => {
                put_varint(&mut self.entry, fp - pf);
                put_varint(&mut self.entry, id);
            }
            None => {
                put_varint(&mut self.entry, fp);
                put_varint(&mut self.entry, id);
            }
        }
        if self.in_block.is_some() && !self.blocks.fits(self.entry.len()) {
            self.blocks.flush()?;
            // Re-encode as a block's first entry.
            self.entry.clear();
            put_varint(&mut self.entry, fp);
            put_varint(&mut self.entry, id);
        }
        self.blocks.push(fp, &self.entry);
        self.in_block = Some((fp, id));
        Ok(())
    }

    /// Write the last block, the first-fingerprint array and the header; return the writer and
    /// the (pairs, distinct fingerprints) counts.
    pub fn finish(self) -> Result<(W, u64, u64)> {
        let mut header = self.header;
        let w = self.blocks.finish(|blocks| {
            header.blocks = blocks;
            header.encode()
        })?;
        Ok((w, header.pairs, header.fingerprints))
    }
}

/// A read-only id map over any bytes (an mmap in production).
#[derive(Debug)]
pub struct IdMap<D> {
    data: D,
    /// The blocks checked so far.
    checked: Checked,
    header: IdsHeader,
    first_fps: Vec<u64>,
}

impl IdMap<Mmap> {
    /// Map the file at `path` and validate its header and first-fingerprint array.
    pub fn open(path: &Path) -> Result<IdMap<Mmap>> {
        let f = std::fs::File::open(path).map_err(|e| Error::io(path.to_path_buf(), "open", e))?;
        // SAFETY: the store never modifies a published id map (files are written once, renamed
        // into place, and removed only when no reader holds them); another process truncating
        // it underneath us is outside the store's contract, as for every mmap-based engine.
        let map = unsafe { Mmap::map(&f) }.map_err(|e| Error::io(path.to_path_buf(), "mmap", e))?;
        IdMap::from_bytes(map).map_err(|e| e.with_path(path))
    }
}

impl<D: AsRef<[u8]>> IdMap<D> {
    /// Validate `data` as an id map: header, file length, first-fingerprint array crc and order.
    pub fn from_bytes(data: D) -> Result<IdMap<D>> {
        let b = data.as_ref();
        let header = IdsHeader::decode(b)?;
        let first_fps = read_footer(
            b,
            IDS_HEADER_LEN,
            "id map",
            "fingerprint",
            header.block_size,
            header.blocks,
            false,
        )?;
        if (header.pairs == 0) != (header.blocks == 0) || header.fingerprints > header.pairs {
            return Err(Error::corrupt(
                "id map header counts",
                16,
                "consistent pair, fingerprint and block counts",
                format!(
                    "{} pairs, {} fingerprints, {} blocks",
                    header.pairs, header.fingerprints, header.blocks
                ),
            ));
        }
        Ok(IdMap {
            data,
            checked: Checked::new(header.blocks),
            header,
            first_fps,
        })
    }

    /// Number of (fingerprint, id) pairs.
    pub fn pairs(&self) -> u64 {
        self.header.pairs
    }

    /// Number of distinct fingerprints.
    pub fn fingerprints(&self) -> u64 {
        self.header.fingerprints
    }

    /// Bytes of the whole map.
    pub fn byte_len(&self) -> u64 {
        self.data.as_ref().len() as u64
    }

    /// Heap bytes held (the first-fingerprint array).
    pub fn memory_bytes(&self) -> u64 {
        self.first_fps.len() as u64 * 8
    }

    /// Decode block `i`, calling `f(fp, id)` for each pair; stop early when `f` returns false.
    /// The ids of fingerprints for which `skip_id` holds are passed over, not decoded (`None`):
    /// a lookup decodes only the ids it returns, which halved its work.
    fn decode_block(
        &self,
        i: usize,
        skip_id: impl Fn(u64) -> bool,
        mut f: impl FnMut(u64, Option<u64>) -> bool,
    ) -> Result<bool> {
        let (count, stream, off) = read_block(
            self.data.as_ref(),
            IDS_HEADER_LEN,
            "id map",
            self.header.block_size,
            i,
            &self.checked,
        )?;
        let bad = |what: &str| {
            Error::corrupt(
                format!("id map block {i}"),
                off,
                "a valid entry stream",
                what.to_string(),
            )
        };
        let used = stream.len();
        let mut pos = 0usize;
        let (mut fp, mut id) = (0u64, 0u64);
        for n in 0..count {
            let d = get_varint(stream, &mut pos).ok_or_else(|| bad("a truncated, over-long or non-minimal varint"))?;
            // The entry's id is a delta from the one before where its fingerprint repeats.
            let repeat = n > 0 && d == 0;
            if n == 0 {
                fp = d;
                if fp != self.first_fps[i] {
                    return Err(bad("a first fingerprint unlike the array's"));
                }
            } else if !repeat {
                fp = fp
                    .checked_add(d)
                    .ok_or_else(|| bad("a fingerprint overflow"))?;
            }
            // (A fingerprint's ids are all decoded or all passed over: `skip_id` sees the
            // same fingerprint for each.)
            if skip_id(fp) {
                skip_varint(stream, &mut pos).ok_or_else(|| bad("a truncated, over-long or non-minimal varint"))?;
                if !f(fp, None) {
                    return Ok(false);
                }
                continue;
            }
            let v = get_varint(stream, &mut pos).ok_or_else(|| bad("a truncated, over-long or non-minimal varint"))?;
            if !repeat {
                id = v;
            } else if v == 0 {
                return Err(bad("a repeated pair"));
            } else {
                id = id.checked_add(v).ok_or_else(|| bad("an id overflow"))?;
            }
            if !f(fp, Some(id)) {
                return Ok(false);
            }
        }
        if pos != used {
            return Err(bad("bytes after the last entry"));
        }
        if i + 1 < self.first_fps.len() && self.first_fps[i + 1] < fp {
            return Err(bad("a last fingerprint above the next block's first"));
        }
        Ok(true)
    }

    /// Every id stored with `fp`, ascending.
    pub fn ids_of(&self, fp: u64) -> Result<Vec<u64>> {
        let mut out = Vec::new();
        // The first block that may hold fp is the last one starting below it (fp's pairs may
        // begin at its end) or the first one starting at it.
        let j = self.first_fps.partition_point(|&f| f < fp);
        let mut i = j.saturating_sub(1);
        while i < self.first_fps.len() && self.first_fps[i] <= fp {
            let mut past = false;
            self.decode_block(
                i,
                |f| f != fp,
                |f, id| {
                    out.extend(id);
                    past = f > fp;
                    !past
                },
            )?;
            if past {
                break;
            }
            i += 1;
        }
        Ok(out)
    }

    /// Every pair in order, decoding one block at a time.
    pub fn iter(&self) -> IdIter<'_, D> {
        IdIter {
            map: self,
            block: 0,
            buf: Vec::new(),
            pos: 0,
            failed: false,
        }
    }

    /// Decode every block and check order and counts against the header.
    pub fn verify(&self) -> Result<()> {
        let (mut pairs, mut fps) = (0u64, 0u64);
        let mut prev: Option<(u64, u64)> = None;
        for p in self.iter() {
            let p = p?;
            if let Some(q) = prev
                && p <= q
            {
                return Err(Error::corrupt(
                    "id map order",
                    0,
                    "strictly ascending pairs",
                    format!("({:016x}, {}) after ({:016x}, {})", p.0, p.1, q.0, q.1),
                ));
            }
            if prev.is_none_or(|q| q.0 != p.0) {
                fps += 1;
            }
            prev = Some(p);
            pairs += 1;
        }
        if pairs != self.header.pairs || fps != self.header.fingerprints {
            return Err(Error::corrupt(
                "id map counts",
                16,
                format!(
                    "{} pairs, {} fingerprints (header)",
                    self.header.pairs, self.header.fingerprints
                ),
                format!("{pairs} pairs, {fps} fingerprints"),
            ));
        }
        Ok(())
    }
}

/// Iterator over an id map's pairs (see [`IdMap::iter`]).
pub struct IdIter<'m, D> {
    map: &'m IdMap<D>,
    block: usize,
    buf: Vec<(u64, u64)>,
    pos: usize,
    failed: bool,
}

impl<D: AsRef<[u8]>> Iterator for IdIter<'_, D> {
    type Item = Result<(u64, u64)>;

    fn next(&mut self) -> Option<Self::Item> {
        while self.pos == self.buf.len() {
            if self.failed || self.block >= self.map.first_fps.len() {
                return None;
            }
            self.buf.clear();
            self.pos = 0;
            let buf = &mut self.buf;
            let r = self.map.decode_block(
                self.block,
                |_| false,
                |f, id| {
                    buf.extend(id.map(|id| (f, id)));
                    true
                },
            );
            self.block += 1;
            if let Err(e) = r {
                self.failed = true;
                return Some(Err(e));
            }
        }
        self.pos += 1;
        Some(Ok(self.buf[self.pos - 1]))
    }
}

/// Build an id map in memory from ascending pairs (tests, small maps).
pub fn build_bytes(pairs: &[(u64, u64)], block_size: u32) -> Result<Vec<u8>> {
    let mut w = IdsWriter::new(std::io::Cursor::new(Vec::new()), block_size)?;
    for &(f, i) in pairs {
        w.add(f, i)?;
    }
    Ok(w.finish()?.0.into_inner())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pairs_round_trip_across_blocks_and_lookups_find_spanning_fingerprints() {
        let mut pairs = Vec::new();
        let mut s = 7u64;
        for i in 0..3000u64 {
            let fp = crate::sample::splitmix64(&mut s) >> (i % 3 * 20);
            for j in 0..(i % 4) {
                pairs.push((fp, j * 1000 + i));
            }
        }
        // One fingerprint with enough ids to span several 64-byte blocks, plus 0 and MAX.
        for id in 0..100 {
            pairs.push((42, id));
        }
        pairs.push((0, 0));
        pairs.push((u64::MAX, u64::MAX));
        pairs.sort_unstable();
        pairs.dedup();
        for bs in [64u32, 4096] {
            let bytes = build_bytes(&pairs, bs).unwrap();
            let m = IdMap::from_bytes(bytes).unwrap();
            m.verify().unwrap();
            assert_eq!(m.pairs(), pairs.len() as u64);
            let got: Vec<_> = m.iter().map(|p| p.unwrap()).collect();
            assert_eq!(got, pairs);
            for &(fp, _) in pairs.iter().step_by(7).chain(&[(42, 0), (0, 0)]) {
                let want: Vec<u64> = pairs.iter().filter(|p| p.0 == fp).map(|p| p.1).collect();
                assert_eq!(m.ids_of(fp).unwrap(), want, "fp {fp:x} bs {bs}");
            }
            assert!(m.ids_of(43).unwrap().is_empty());
        }
    }

    #[test]
    fn empty_map_and_out_of_order_input() {
        let m = IdMap::from_bytes(build_bytes(&[], 4096).unwrap()).unwrap();
        assert_eq!(m.pairs(), 0);
        assert!(m.ids_of(5).unwrap().is_empty());
        assert!(build_bytes(&[(2, 1), (1, 1)], 4096).is_err());
        assert!(build_bytes(&[(2, 1), (2, 1)], 4096).is_err());
    }

    #[test]
    fn every_byte_flip_and_truncation_is_caught() {
        let pairs: Vec<(u64, u64)> = (0..200u64).map(|i| (i * 977 + (i % 3), i)).collect();
        let good = build_bytes(&pairs, 256).unwrap();
        for n in 0..good.len() {
            assert!(IdMap::from_bytes(&good[..n]).is_err(), "truncated to {n}");
        }
        for i in 0..good.len() {
            let mut b = good.clone();
            b[i] ^= 0x41;
            let outcome = IdMap::from_bytes(&b[..]).and_then(|m| m.verify());
            assert!(outcome.is_err(), "flip at {i} went unnoticed");
        }
    }

    /// A block whose padding is not zero is refused even with its crc sealed again (found by
    /// the `id_map` fuzz target: it verified, yet its writer would not write it), and so is a
    /// header whose reserved field is not.
    #[test]
    fn padding_and_reserved_must_be_zero_even_under_a_good_crc() {
        let pairs = [(0x10u64, 7u64), (0x10, 9), (0x25, 3)];
        let good = build_bytes(&pairs, 64).unwrap();
        let block = crate::store::blocks::HEADER_LEN;
        let used = u32::from_le_bytes(good[block + 4..block + 8].try_into().unwrap()) as usize;
        for at in [block + 8 + used, block + 64 - 5] {
            let mut b = good.clone();
            b[at] = 0xff;
            let crc = crate::checksum::crc_at(block as u64, &b[block..block + 60]);
            b[block + 60..block + 64].copy_from_slice(&crc.to_le_bytes());
            let m = IdMap::from_bytes(&b[..]).unwrap();
            let err = m.verify().unwrap_err().to_string();
            assert!(err.contains("padding"), "{err}");
            assert!(m.ids_of(0x10).is_err());
        }
        let m = IdMap::from_bytes(&good[..]).unwrap();
        assert_eq!(m.ids_of(0x10).unwrap(), [7, 9]);
        // So must the header's reserved field (the fuzz target's second find).
        let mut b = good.clone();
        b[43] = 0xe7;
        let crc = crate::checksum::crc_at(0, &b[..44]);
        b[44..48].copy_from_slice(&crc.to_le_bytes());
        let err = IdMap::from_bytes(&b[..]).unwrap_err().to_string();
        assert!(err.contains("reserved"), "{err}");
    }

    /// A block is checked on its first read only, and only a block that passed is marked: a
    /// damaged block fails every lookup, not just the first, and its good neighbour answers.
    #[test]
    fn a_damaged_block_fails_every_read_and_a_good_one_is_checked_once() {
        let pairs: Vec<(u64, u64)> = (0..40u64).map(|i| (i * 1000, i)).collect();
        let good = build_bytes(&pairs, 64).unwrap();
        let mut b = good.clone();
        // A byte of block 1's entry stream (block 0 holds the first pairs).
        b[crate::store::blocks::HEADER_LEN + 64 + 9] ^= 0x10;
        let m = IdMap::from_bytes(&b[..]).unwrap();
        let in_block_1 = m.first_fps[1];
        for _ in 0..3 {
            let err = m.ids_of(in_block_1).unwrap_err().to_string();
            assert!(err.contains("crc"), "{err}");
        }
        for _ in 0..3 {
            assert_eq!(m.ids_of(0).unwrap(), [0]);
        }
        assert!(m.verify().is_err());
    }
}
