//! A range of keys read as a resumable cursor, one key per step: what lets a query decode the
//! blocks of all its probes round-robin, so that their serial decode chains (load the stream
//! word, look up the code, shift) overlap in the CPU instead of running one after another.
//! [`Table::scan_range`] is the same scan run to the end in one go.

use super::block::{BLOCK_HEADER_LEN, BLOCK_TRAILER_LEN, BlockDecoder};
use super::reader::Table;
use crate::error::{Error, Result};

/// One step of a [`RangeScan`]: small enough to return in registers (errors are fetched
/// separately, off the hot path).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Step {
    /// A key inside the range.
    Key(u64),
    /// A key below the range (the part of the first block before it).
    Below,
    /// The block ended inside the range: call [`RangeScan::advance`].
    BlockEnd,
    /// The range is exhausted.
    Done,
}

/// The keys of one table in `lo..=hi`, ascending, decoded a key per [`step`](Self::step).
pub(crate) struct RangeScan<'a, D: AsRef<[u8]>> {
    table: &'a Table<D>,
    hi: u64,
    lo: u64,
    block: u64,
    dec: BlockDecoder<'a>,
}

impl<'a, D: AsRef<[u8]>> RangeScan<'a, D> {
    /// Start at block `block` (from [`Table::find_block`] of `lo`, in range), counting it in
    /// `blocks`. Opening reads the block's count and first key: prefetch it first.
    #[inline(always)]
    pub(crate) fn open(
        table: &'a Table<D>,
        block: u64,
        lo: u64,
        hi: u64,
        blocks: &mut u64,
    ) -> Result<RangeScan<'a, D>> {
        *blocks += 1;
        Ok(RangeScan {
            table,
            hi,
            lo,
            block,
            dec: table.block(block)?,
        })
    }

    /// Decode one key (counted in `keys`).
    #[inline(always)]
    pub(crate) fn step(&mut self, keys: &mut u64) -> Step {
        match self.dec.next_key() {
            Some(k) => {
                *keys += 1;
                if k > self.hi {
                    Step::Done
                } else if k >= self.lo {
                    Step::Key(k)
                } else {
                    Step::Below
                }
            }
            None => Step::BlockEnd,
        }
    }

    /// After [`Step::BlockEnd`]: the block's corruption if it stopped early, else open the
    /// next block (counted in `blocks`) if the range goes on there. Whether it does.
    #[inline(never)]
    pub(crate) fn advance(&mut self, blocks: &mut u64) -> Result<bool> {
        if let Some(e) = self.dec.fault() {
            return Err(self.table.attach(e));
        }
        if !self.table.range_continues(self.block, self.hi) {
            return Ok(false);
        }
        self.block += 1;
        *blocks += 1;
        self.dec = self.table.block(self.block)?;
        Ok(true)
    }
}

impl<D: AsRef<[u8]>> Table<D> {
    /// The coded stream of block `i` (in range): its bytes after the header, before the crc.
    /// The table's bytes go on at least 12 bytes past every block (the footer), so the stream
    /// can be read 8 bytes at a time at any byte up to its end (see `table::lanes`).
    #[inline]
    #[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))] // used by `table::lanes`
    pub(crate) fn block_stream(&self, i: u64) -> &[u8] {
        let b = self.block_bytes(i);
        &b[BLOCK_HEADER_LEN..b.len() - BLOCK_TRAILER_LEN]
    }

    /// The corruption that stops the decode of block `i`, named as [`BlockDecoder`] names it,
    /// for a faster decoder that met it first.
    ///
    /// [`BlockDecoder`]: super::block::BlockDecoder
    #[cold]
    #[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))] // used by `table::lanes`
    pub(crate) fn block_fault(&self, i: u64) -> Error {
        let mut dec = match self.block(i) {
            Ok(d) => d,
            Err(e) => return e,
        };
        loop {
            match dec.next() {
                Ok(Some(_)) => {}
                Ok(None) => {
                    return self.attach(Error::corrupt(
                        format!("block {i}"),
                        self.block_offset(i),
                        "the same keys from every decoder",
                        "a delta only the vectorized decoder rejected",
                    ));
                }
                Err(e) => return self.attach(e),
            }
        }
    }

    /// Call `f` on every key in `lo..=hi`, ascending, until it returns false; whether the scan
    /// ran to the end. Adds the blocks and keys decoded to the counters. Always inlined, so that
    /// the caller's `f` is compiled with the caller's target features (see `Index::near_work`).
    #[inline(always)]
    pub(crate) fn scan_range(
        &self,
        lo: u64,
        hi: u64,
        blocks: &mut u64,
        keys: &mut u64,
        mut f: impl FnMut(u64) -> bool,
    ) -> Result<bool> {
        if lo > hi {
            return Ok(true);
        }
        let i = self.find_block(lo) as u64;
        if i >= self.block_count() {
            return Ok(true);
        }
        let mut scan = RangeScan::open(self, i, lo, hi, blocks)?;
        loop {
            match scan.step(keys) {
                Step::Key(k) => {
                    if !f(k) {
                        return Ok(false);
                    }
                }
                Step::Below => {}
                Step::BlockEnd => {
                    if !scan.advance(blocks)? {
                        return Ok(true);
                    }
                }
                Step::Done => return Ok(true),
            }
        }
    }
}

/// Work done by one or more queries: probes made, blocks and keys decoded, keys within the
/// distance.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Work {
    pub(crate) probes: u64,
    pub(crate) blocks: u64,
    pub(crate) keys: u64,
    pub(crate) candidates: u64,
}

impl Work {
    pub(crate) fn add(&mut self, w: &Work) {
        self.probes += w.probes;
        self.blocks += w.blocks;
        self.keys += w.keys;
        self.candidates += w.candidates;
    }
}
