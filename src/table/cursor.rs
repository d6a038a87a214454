//! The one walk over a table's blocks: a cursor over a range of keys, one key per step.
//!
//! Every scalar reader of keys is this cursor: a query's probes decoded round-robin
//! (`table::multiscan`, so that their serial decode chains — load the stream word, look up the
//! code, shift — overlap in the CPU), a probe run to the end in one go ([`Table::scan_range`]),
//! the public [`Range`] iterator and batch mode's skip-scan ([`Table::skip_scan`]). Whether a
//! range goes on into the next block is decided in one place, [`Table::range_continues`],
//! which the vectorized decoder (`table::lanes`) follows too.

use std::ops::{Bound, RangeBounds};

use super::block::BlockDecoder;
use super::reader::Table;
use crate::error::Result;

/// One step of a [`Cursor`]: small enough to return in registers (errors are fetched
/// separately, off the hot path).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Step {
    /// A key inside the range.
    Key(u64),
    /// A key below the range (the part of the first block before it).
    Below,
    /// The block ended inside the range: call [`Cursor::advance`] or [`Cursor::seek`].
    BlockEnd,
    /// The range is exhausted.
    Done,
}

/// The keys of one table in `lo..=hi`, ascending, decoded a key per [`step`](Self::step).
#[derive(Debug)]
pub(crate) struct Cursor<'a, D> {
    table: &'a Table<D>,
    lo: u64,
    hi: u64,
    block: u64,
    dec: BlockDecoder<'a>,
}

impl<'a, D: AsRef<[u8]>> Cursor<'a, D> {
    /// Start at block `block` (from [`Table::find_block`] of `lo`, or a later block, in
    /// range), counting it in `blocks`. Opening checks the block's crc (once per reader) and
    /// reads its count and first key: prefetch it first.
    #[inline(always)]
    pub(crate) fn open(
        table: &'a Table<D>,
        block: u64,
        lo: u64,
        hi: u64,
        blocks: &mut u64,
    ) -> Result<Cursor<'a, D>> {
        *blocks += 1;
        Ok(Cursor {
            table,
            hi,
            lo,
            block,
            dec: table.block_at_until(block, lo, hi)?,
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
        self.open_next(self.block + 1, self.lo, blocks)
    }

    /// [`advance`](Self::advance), skipping the blocks whose keys are all below `key`: the
    /// cursor goes on at the first block that can hold a key `>= key`. Whether the range goes
    /// on (false also when `key` is past it). Keys below `key` in that block still step as
    /// usual.
    pub(crate) fn seek(&mut self, key: u64, blocks: &mut u64) -> Result<bool> {
        if let Some(e) = self.dec.fault() {
            return Err(self.table.attach(e));
        }
        if key > self.hi || !self.table.range_continues(self.block, self.hi) {
            return Ok(false);
        }
        let mut next = self.block + 1;
        if self.table.last_key(next) < key {
            next = self.table.find_block(key) as u64;
            if next >= self.table.block_count() {
                return Ok(false);
            }
        }
        self.open_next(next, key, blocks)
    }

    /// Go on at block `next` (in range) from its last segment that can hold a key `>= from`
    /// first, counting it in `blocks`.
    #[inline]
    fn open_next(&mut self, next: u64, from: u64, blocks: &mut u64) -> Result<bool> {
        self.block = next;
        *blocks += 1;
        self.dec = self.table.block_at_until(next, from, self.hi)?;
        Ok(true)
    }

    /// Skip the keys below `key` that later segments of this block let the cursor pass
    /// without decoding ([`BlockDecoder::skip_to`]); keys below `key` may still step.
    #[inline]
    pub(crate) fn skip_within(&mut self, key: u64) {
        self.dec.skip_to(key);
    }

    /// The block being decoded.
    pub(crate) fn block(&self) -> u64 {
        self.block
    }
}

impl<D: AsRef<[u8]>> Table<D> {
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
        let mut cursor = Cursor::open(self, i, lo, hi, blocks)?;
        loop {
            match cursor.step(keys) {
                Step::Key(k) => {
                    if !f(k) {
                        return Ok(false);
                    }
                }
                Step::Below => {}
                Step::BlockEnd => {
                    if !cursor.advance(blocks)? {
                        return Ok(true);
                    }
                }
                Step::Done => return Ok(true),
            }
        }
    }

    /// Call `f` on the keys of blocks `blocks` (in range) that a caller wants. `next()` names
    /// the keys wanted next as `(from, to)`: none below `from`, which are passed without
    /// decoding where the table allows (whole blocks through the last-key array, whole
    /// segments through the skip entries), and all up to `to`, so `next` is asked again only
    /// at a key past `to` or a block's end (`None`: nothing more is wanted). Each block decoded
    /// is handed to `decoding` before it is read (for read-ahead). Batch mode's scan: when the
    /// batch is small against the table, most blocks and segments hold no key it probes, so
    /// the work follows the batch, not the table.
    pub(crate) fn skip_scan(
        &self,
        range: std::ops::Range<u64>,
        mut next: impl FnMut() -> Option<(u64, u64)>,
        mut decoding: impl FnMut(u64),
        mut f: impl FnMut(u64),
    ) -> Result<()> {
        if range.is_empty() {
            return Ok(());
        }
        let lo = self.block_floor(range.start);
        let hi = self.last_key(range.end - 1);
        let Some((mut want, mut until)) = next() else {
            return Ok(());
        };
        let first = range.start.max(self.find_block(want.max(lo)) as u64);
        if first >= range.end {
            return Ok(());
        }
        decoding(first);
        let mut cursor = Cursor::open(self, first, lo, hi, &mut 0)?;
        cursor.skip_within(want);
        loop {
            match cursor.step(&mut 0) {
                Step::Key(k) => {
                    f(k);
                    if k <= until {
                        continue;
                    }
                    let Some(w) = next() else { return Ok(()) };
                    (want, until) = w;
                    if want <= k {
                        continue;
                    }
                    // The next wanted key is ahead: past this block, seek to its block;
                    // else skip this block's segments below it.
                    if want > self.last_key(cursor.block()) {
                        if !cursor.seek(want, &mut 0)? {
                            return Ok(());
                        }
                        decoding(cursor.block());
                    } else {
                        cursor.skip_within(want);
                    }
                }
                Step::Below => {}
                Step::BlockEnd => {
                    let Some(w) = next() else { return Ok(()) };
                    (want, until) = w;
                    if !cursor.seek(want, &mut 0)? {
                        return Ok(());
                    }
                    decoding(cursor.block());
                }
                Step::Done => return Ok(()),
            }
        }
    }

    /// The smallest key block `i` (in range) can hold: keys are distinct and ascending, so
    /// one above the previous block's last key.
    pub(crate) fn block_floor(&self, i: u64) -> u64 {
        match i {
            0 => 0,
            i => self.last_key(i - 1) + 1,
        }
    }

    /// The keys in `range`, ascending. Decodes only the blocks that can hold them.
    pub fn range(&self, range: impl RangeBounds<u64>) -> Range<'_, D> {
        let lo = match range.start_bound() {
            Bound::Included(&x) => Some(x),
            Bound::Excluded(&x) => x.checked_add(1),
            Bound::Unbounded => Some(0),
        };
        let hi = match range.end_bound() {
            Bound::Included(&x) => Some(x),
            Bound::Excluded(&x) => x.checked_sub(1),
            Bound::Unbounded => Some(u64::MAX),
        };
        match (lo, hi) {
            (Some(lo), Some(hi)) if lo <= hi => self.range_inclusive(lo, hi),
            _ => Range {
                table: self,
                lo: 1,
                hi: 0,
                state: State::Done,
            },
        }
    }

    /// The keys whose top `bits` bits equal those of `key` (`bits` in 0..=64), ascending.
    pub fn prefix(&self, key: u64, bits: u32) -> Range<'_, D> {
        assert!(bits <= 64, "prefix length {bits} > 64");
        let low_mask = u64::MAX.checked_shr(bits).unwrap_or(0);
        self.range_inclusive(key & !low_mask, key | low_mask)
    }

    /// Every key, ascending.
    pub fn iter(&self) -> Range<'_, D> {
        self.range_inclusive(0, u64::MAX)
    }

    fn range_inclusive(&self, lo: u64, hi: u64) -> Range<'_, D> {
        Range {
            table: self,
            lo,
            hi,
            state: State::Start(self.find_block(lo) as u64),
        }
    }
}

/// Iterator over the keys of a range; see [`Table::range`].
///
/// Yields `Err` once if a block turns out to be corrupt, then ends.
#[derive(Debug)]
pub struct Range<'t, D> {
    table: &'t Table<D>,
    lo: u64,
    hi: u64,
    state: State<'t, D>,
}

/// Where a [`Range`] is: its first block not yet opened (a range that is never read checks
/// no crc), a cursor, or the end.
#[derive(Debug)]
enum State<'t, D> {
    Start(u64),
    Open(Cursor<'t, D>),
    Done,
}

impl<D: AsRef<[u8]>> Iterator for Range<'_, D> {
    type Item = Result<u64>;

    #[inline]
    fn next(&mut self) -> Option<Result<u64>> {
        loop {
            let cursor = match &mut self.state {
                State::Done => return None,
                State::Open(c) => c,
                State::Start(b) => {
                    let b = *b;
                    if b >= self.table.block_count() {
                        self.state = State::Done;
                        return None;
                    }
                    match Cursor::open(self.table, b, self.lo, self.hi, &mut 0) {
                        Ok(c) => self.state = State::Open(c),
                        Err(e) => {
                            self.state = State::Done;
                            return Some(Err(e));
                        }
                    }
                    continue;
                }
            };
            match cursor.step(&mut 0) {
                Step::Key(k) => return Some(Ok(k)),
                Step::Below => {}
                Step::BlockEnd => match cursor.advance(&mut 0) {
                    Ok(true) => {}
                    Ok(false) => self.state = State::Done,
                    Err(e) => {
                        self.state = State::Done;
                        return Some(Err(e));
                    }
                },
                Step::Done => self.state = State::Done,
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::table::{TableOptions, build_bytes};

    fn table(n: usize) -> (Vec<u64>, Table<Vec<u8>>) {
        let mut keys = crate::sample::random(n, 9);
        keys.sort_unstable();
        keys.dedup();
        let bytes = build_bytes(&keys, &TableOptions::default().with_block_size(256)).unwrap();
        (keys, Table::from_bytes(bytes).unwrap())
    }

    /// Chunks of blocks scanned with nothing skipped give every key once, in order; with a
    /// wanted key, a scan gives every key at or above it (and only keys of its chunk).
    #[test]
    fn skip_scans_cover_their_blocks_and_every_wanted_key() {
        let (keys, t) = table(20_000);
        let blocks = t.block_count();
        assert!(blocks > 50);
        let cuts = [0, 1, 7, blocks / 2, blocks - 1, blocks];
        let mut all = Vec::new();
        for w in cuts.windows(2) {
            t.skip_scan(w[0]..w[1], || Some((0, u64::MAX)), |_| {}, |k| all.push(k))
                .unwrap();
        }
        assert_eq!(all, keys);
        for (i, &want) in [0, 1, keys[5000], keys[5000] + 1, keys[19_000], u64::MAX]
            .iter()
            .enumerate()
        {
            let (mut got, mut opened) = (Vec::new(), Vec::new());
            t.skip_scan(
                3..blocks,
                || Some((want, u64::MAX)),
                |b| opened.push(b),
                |k| got.push(k),
            )
            .unwrap();
            let floor = t.block_floor(3);
            let expect: Vec<u64> = keys
                .iter()
                .copied()
                .filter(|&k| k >= want.max(floor))
                .collect();
            assert!(got.windows(2).all(|w| w[0] < w[1]), "case {i}");
            assert!(
                got.iter().all(|&k| k >= floor),
                "case {i}: a key below the chunk"
            );
            // Every wanted key, plus at most the head of the block the first one is in.
            assert!(got.ends_with(&expect), "case {i}");
            assert!(
                got.len() - expect.len() < 40,
                "case {i}: {} extra",
                got.len() - expect.len()
            );
            assert!(opened.windows(2).all(|w| w[0] < w[1]));
        }
        // A scan that wants less and less as it goes skips blocks in between.
        let mut wants = [keys[15_000], keys[8000], keys[2000]].to_vec();
        let mut got = Vec::new();
        t.skip_scan(
            0..blocks,
            || wants.pop().map(|w| (w, w)),
            |_| {},
            |k| got.push(k),
        )
        .unwrap();
        assert!(got.contains(&keys[2000]) && got.contains(&keys[8000]));
        assert!(
            !got.contains(&keys[5000]),
            "blocks between wanted keys were decoded"
        );
    }

    /// In segmented blocks a skip-scan stops decoding where a wanted range ends and goes on at
    /// the segment of the next one: about half a segment and one key a want, not the rest of
    /// each segment. Every wanted key still comes.
    #[test]
    fn skip_scans_stop_mid_segment_and_skip_to_the_next_want() {
        let mut keys = crate::sample::random(50_000, 3);
        keys.sort_unstable();
        keys.dedup();
        let s = 20;
        let opts = TableOptions::default()
            .with_block_size(4096)
            .with_segment_keys(s);
        let t = Table::from_bytes(build_bytes(&keys, &opts).unwrap()).unwrap();
        // Wants 57 keys apart: most in the same block as the last, a few segments on.
        let picked: Vec<u64> = keys.iter().copied().step_by(57).collect();
        let mut wants: Vec<(u64, u64)> = picked.iter().rev().map(|&k| (k, k)).collect();
        let mut got = Vec::new();
        t.skip_scan(0..t.block_count(), || wants.pop(), |_| {}, |k| got.push(k))
            .unwrap();
        assert!(got.windows(2).all(|w| w[0] < w[1]));
        assert!(picked.iter().all(|k| got.binary_search(k).is_ok()));
        // Half a segment before each want on average, the want and one key past it: decoding
        // on to each segment's end would average s keys a want.
        let per_want = got.len() as f64 / picked.len() as f64;
        assert!(
            per_want < 0.75 * s as f64,
            "{per_want:.1} keys decoded a want"
        );
    }

    /// The iterator and the seeking cursor agree with the key list on random ranges.
    #[test]
    fn ranges_and_seeks_agree_with_the_keys() {
        let (keys, t) = table(5000);
        let mut s = 4;
        for _ in 0..200 {
            let a = crate::sample::splitmix64(&mut s);
            let b = a.saturating_add(crate::sample::splitmix64(&mut s) >> 4);
            let want: Vec<u64> = keys
                .iter()
                .copied()
                .filter(|k| (a..=b).contains(k))
                .collect();
            let got: Vec<u64> = t.range(a..=b).map(|r| r.unwrap()).collect();
            assert_eq!(got, want);
        }
        assert_eq!(t.iter().count(), keys.len());
        assert_eq!(t.range(5..5).count(), 0);
    }
}
