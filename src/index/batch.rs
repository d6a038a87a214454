//! Batch mode: every near-duplicate pair between a new batch B and the stored set F.
//!
//! Instead of |B| random-access queries, build the design's permuted tables for B in memory and
//! stream F's tables past them (the paper's batch mode). Table i of F and the in-memory copy of B
//! are both sorted under the same permutation, so one merge pass over F's keys finds every
//! (b, f) sharing a probed prefix; candidates are checked by popcount.
//!
//! The pass decodes only what can hold a probed prefix: once a prefix's keys are passed, the
//! smallest probe prefix not yet passed picks the next block through the in-memory last-key
//! array, and the segment inside it through the block's skip entries, so a probed prefix costs
//! about what a query's probe decodes (half a segment and the prefix's keys). A batch as large
//! as the table touches every block (a sequential scan); a batch of 1M against 1B stored touches
//! about one block in five per table, so the work follows the batch, not the stored set.
//!
//! ```text
//!  F table i (on disk, decoded block by block) ──► f'                       (ascending)
//!  B sorted under π_i, XOR each probe flip s   ──► pointer advanced to f's prefix (ascending)
//!                                              └─► same prefix? popcount(f' ^ b') <= k: a pair
//! ```
//!
//! **Each pair is produced exactly once**, by the first table (in design order) whose probes
//! cover the pair's differing bits, in the shard holding f's block of that table. So output needs
//! no de-duplication across tables, and the outputs of shards 0..N, merged, are exactly the
//! unsharded output. Work is spread over all cores by (table, block range).

use std::ops::Range;

use rayon::prelude::*;

use crate::error::{Error, Result};
use crate::index::keysort;
use crate::index::{Index, Prober};
use crate::progress::ProgressHandle;

/// A slice of every table: shard `index` of `count` covers blocks
/// `[blocks * index / count, blocks * (index + 1) / count)` of each table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shard {
    /// 0-based shard number.
    pub index: u64,
    /// Number of shards.
    pub count: u64,
}

impl Shard {
    /// The whole index.
    pub fn all() -> Shard {
        Shard { index: 0, count: 1 }
    }

    /// Parse `I/N` (0 <= I < N).
    pub fn parse(s: &str) -> Result<Shard> {
        let bad = || Error::InvalidArgument(format!("shard {s:?} is not I/N with 0 <= I < N"));
        let (i, n) = s.split_once('/').ok_or_else(bad)?;
        let (index, count): (u64, u64) = (
            i.trim().parse().map_err(|_| bad())?,
            n.trim().parse().map_err(|_| bad())?,
        );
        if count == 0 || index >= count {
            return Err(bad());
        }
        Ok(Shard { index, count })
    }

    /// This shard's blocks of a table with `blocks` blocks.
    pub fn blocks(&self, blocks: u64) -> Range<u64> {
        let at = |i: u64| (blocks as u128 * i as u128 / self.count as u128) as u64;
        at(self.index)..at(self.index + 1)
    }
}

/// Bytes of a cold table's range kept requested ahead of the batch scan.
const READ_AHEAD: u64 = 8 << 20;

/// The expected share of a table's blocks a batch must touch for the scan to read ahead: below
/// it, reading whole ranges would fetch more than 16x the blocks needed.
const DENSE: f64 = 1.0 / 16.0;

/// A near-duplicate pair.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Pair {
    /// The batch fingerprint (for pairs inside the batch: the smaller one).
    pub batch: u64,
    /// The stored fingerprint (for pairs inside the batch: the larger one).
    pub stored: u64,
    /// Hamming distance.
    pub distance: u32,
}

/// Options of [`Index::batch_near`]: `BatchOptions::default()` plus the `with_*` setters.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct BatchOptions {
    /// Largest distance reported (at most the design's k).
    pub k: u32,
    /// Which slice of the stored tables to scan.
    pub shard: Shard,
    /// Also find the pairs inside the batch (computed by shard 0 only, so shard outputs still
    /// merge without duplicates).
    pub within: bool,
    /// Progress reports (in blocks) and cancellation.
    pub progress: ProgressHandle,
}

impl Default for BatchOptions {
    fn default() -> Self {
        BatchOptions {
            k: 3,
            shard: Shard::all(),
            within: true,
            progress: ProgressHandle::none(),
        }
    }
}

impl BatchOptions {
    /// Largest distance reported.
    pub fn with_k(mut self, k: u32) -> Self {
        self.k = k;
        self
    }
    /// Which slice of the stored tables to scan.
    pub fn with_shard(mut self, shard: Shard) -> Self {
        self.shard = shard;
        self
    }
    /// Also find the pairs inside the batch.
    pub fn with_within(mut self, within: bool) -> Self {
        self.within = within;
        self
    }
    /// Progress reports and cancellation.
    pub fn with_progress(mut self, progress: ProgressHandle) -> Self {
        self.progress = progress;
        self
    }
}

/// What [`Index::batch_near`] found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct BatchResult {
    /// (batch, stored, distance) with distance <= k, sorted by (batch, stored), each once.
    pub pairs: Vec<Pair>,
    /// Pairs inside the batch (batch < stored), sorted, each once; empty unless requested
    /// and this is shard 0.
    pub within: Vec<Pair>,
    /// Stored keys decoded over all tables (the work done; blocks that no probe of the batch
    /// can reach are skipped, so a small batch decodes a small part of each table).
    pub keys_scanned: u64,
}

/// The batch under one table's permutation, XOR each of its probe flips, in one list:
/// entries (π(b) XOR flip, π(b)), ascending by probe key (the first element: the join reads
/// no other order, and flip 0's entries, the batch's own keys, come ascending by it). One list
/// for all flips, not one per flip, so that the join follows one pointer per table whatever
/// the design's probe radius: with a list per flip, every stored key stepped the pointers of
/// all of them (33 a table for m2c1r1) and every wanted prefix took the least of their heads,
/// 1.17x the time of the batch before the lists were merged, at 1M keys (docs/log/benchmarks.md,
/// “one probe list per table”).
type ProbeList = Vec<(u64, u64)>;

/// Merge-join state over one table's probe list: a pointer that only moves forward.
struct Joiner<'a> {
    list: &'a [(u64, u64)],
    at: usize,
    low: u64,
}

impl<'a> Joiner<'a> {
    /// A joiner for stored keys `>= from`, ascending.
    fn new(list: &'a [(u64, u64)], prefix_bits: u32, from: u64) -> Joiner<'a> {
        let low = u64::MAX.checked_shr(prefix_bits).unwrap_or(0);
        let start = from & !low;
        let at = list.partition_point(|e| e.0 & !low < start);
        Joiner { list, at, low }
    }

    /// The stored keys wanted next, `(from, to)`: the smallest probe prefix no stored key seen
    /// so far has passed, as a key range (`None`: the list is exhausted). No stored key below
    /// it can join, so the scan may skip ahead to it; every key in it may.
    #[inline]
    fn next_want(&self) -> Option<(u64, u64)> {
        self.list
            .get(self.at)
            .map(|e| (e.0 & !self.low, e.0 | self.low))
    }

    /// Call `hit(π(b))` for every batch entry whose probe key shares `key`'s prefix. Keys must
    /// come in ascending order.
    #[inline]
    fn visit(&mut self, key: u64, mut hit: impl FnMut(u64)) {
        let prefix = key & !self.low;
        let (list, low) = (self.list, self.low);
        while self.at < list.len() && list[self.at].0 & !low < prefix {
            self.at += 1;
        }
        for e in &list[self.at..] {
            if e.0 & !low != prefix {
                break;
            }
            hit(e.1);
        }
    }
}

impl<D: AsRef<[u8]> + Sync> Index<D> {
    /// Every pair (b, f) with b in `batch`, f stored, distance <= `opts.k`, found by streaming
    /// this shard of every stored table past in-memory tables of the batch. See the module docs.
    ///
    /// ```
    /// use simdex::{BatchOptions, BuildOptions};
    /// # fn main() -> simdex::Result<()> {
    /// # let dir = tempfile::tempdir().unwrap(); let path = dir.path().join("idx");
    /// simdex::build_index(&path, [0u64, 1 << 40, u64::MAX].into_iter().map(Ok), &BuildOptions::default())?;
    /// let idx = simdex::Index::open(&path)?;
    /// let r = idx.batch_near(&[3, 7 << 20], &BatchOptions::default().with_k(2))?;
    /// assert_eq!(r.pairs.len(), 1); // 3 is 2 bits from the stored 0
    /// assert_eq!((r.pairs[0].batch, r.pairs[0].stored, r.pairs[0].distance), (3, 0, 2));
    /// # Ok(()) }
    /// ```
    pub fn batch_near(&self, batch: &[u64], opts: &BatchOptions) -> Result<BatchResult> {
        self.scan_batch(batch, opts).map(|(r, _)| r)
    }

    /// [`batch_near`](Self::batch_near), and the blocks it decoded.
    pub(super) fn scan_batch(
        &self,
        batch: &[u64],
        opts: &BatchOptions,
    ) -> Result<(BatchResult, u64)> {
        self.check_k(opts.k)?;
        let k = opts.k;
        let mut b = batch.to_vec();
        b.par_sort_unstable();
        b.dedup();
        // The batch under every table's permutation, XOR each probe flip, sorted as one list.
        // (A cancellation is heard between flips and between the sort's parts: sorting is
        // much of a large batch's time.)
        let lists: Vec<ProbeList> = self
            .probers
            .par_iter()
            .map(|p| {
                // Reserved whole (no doubling on the way), or refused with a clear error.
                let mut v: ProbeList = Vec::new();
                b.len()
                    .checked_mul(p.flips.len())
                    .and_then(|n| v.try_reserve_exact(n).ok())
                    .ok_or_else(|| {
                        Error::InvalidArgument(format!(
                            "a batch of {} fingerprints needs {} probe entries a table, more \
                             than this machine can hold: split it (simdex batch --mem)",
                            b.len(),
                            p.flips.len() as u128 * b.len() as u128
                        ))
                    })?;
                // Flip 0 (no flip) first: the permuted keys, each computed once; the other
                // flips' entries take theirs from its run.
                debug_assert_eq!(p.flips.first(), Some(&0));
                opts.progress.check()?;
                v.extend(b.iter().map(|&x| {
                    let y = p.permutation.apply(x);
                    (y, y)
                }));
                for &s in &p.flips[1..] {
                    opts.progress.check()?;
                    for i in 0..b.len() {
                        let y = v[i].1;
                        v.push((y ^ s, y));
                    }
                }
                keysort::sort_by_key(&mut v, || opts.progress.check())?;
                Ok(v)
            })
            .collect::<Result<_>>()?;

        // Work items: (table, block range) over this shard, ~8 per core per table.
        let chunks_per_table = (rayon::current_num_threads() * 8) as u64;
        let mut items: Vec<(usize, Range<u64>)> = Vec::new();
        for (i, t) in self.tables.iter().enumerate() {
            let r = opts.shard.blocks(t.block_count());
            let len = r.end - r.start;
            let step = len.div_ceil(chunks_per_table).max(1);
            let mut at = r.start;
            while at < r.end {
                items.push((i, at..(at + step).min(r.end)));
                at += step;
            }
        }
        self.residency.judge_for(&self.tables, b.len());
        let cold = self.residency.is_cold();
        let total_blocks: u64 = items.iter().map(|(_, r)| r.end - r.start).sum();
        let pb = &opts.progress;
        pb.stage("batch", Some(total_blocks))?;
        let found: Vec<(Vec<Pair>, u64, u64)> = items
            .par_iter()
            .map(|(i, range)| {
                let (t, p) = (&self.tables[*i], &self.probers[*i]);
                let from = t.block_floor(range.start);
                let mut joiner = Joiner::new(&lists[*i], p.prefix_bits, from);
                let mut out = Vec::new();
                let (mut scanned, mut blocks) = (0u64, 0u64);
                // F on disk is the paper's setting. The mapping is advised random-access (right
                // for queries), so each page of a cold table would be one synchronous 4 KiB
                // read; a scan that will touch a good share of the blocks instead keeps the
                // next READ_AHEAD bytes of its range requested ahead of the decoder.
                let entries = lists[*i].len();
                let touched = 1.0 - (-(entries as f64) / t.block_count().max(1) as f64).exp();
                let read_ahead = touched >= DENSE && cold;
                let window = (READ_AHEAD / t.block_size() as u64).max(1);
                let mut requested = range.start;
                // Decode only blocks that can hold a probed prefix: when the batch is small
                // against the table (1M against 1B), most blocks hold none and are skipped
                // through the last-key array, so the work follows the batch, not the table.
                // The joiner is read between blocks and written at keys, never both at once.
                let joiner = std::cell::RefCell::new(&mut joiner);
                t.skip_scan(
                    range.clone(),
                    || joiner.borrow().next_want(),
                    |block| {
                        blocks += 1;
                        if read_ahead && block + window / 2 >= requested {
                            let from = requested.max(block);
                            requested = (from + window).min(range.end);
                            t.will_need_blocks(from..requested);
                        }
                    },
                    |f| {
                        scanned += 1;
                        joiner.borrow_mut().visit(f, |bp| {
                            self.emit(*i, p, bp, f, k, &mut out);
                        });
                    },
                )?;
                pb.advance(range.end - range.start)?;
                Ok((out, scanned, blocks))
            })
            .collect::<Result<_>>()?;
        pb.finish();
        let keys_scanned = found.iter().map(|f| f.1).sum();
        let blocks = found.iter().map(|f| f.2).sum();
        let mut pairs: Vec<Pair> = found.into_iter().flat_map(|f| f.0).collect();
        pairs.par_sort_unstable();
        debug_assert!(
            pairs.windows(2).all(|w| w[0] != w[1]),
            "a pair was emitted twice"
        );

        let mut within = Vec::new();
        if opts.within && opts.shard.index == 0 {
            let per_table: Vec<Vec<Pair>> = (0..self.tables.len())
                .into_par_iter()
                .map(|i| {
                    let p = &self.probers[i];
                    let mut joiner = Joiner::new(&lists[i], p.prefix_bits, 0);
                    let mut out = Vec::new();
                    // The batch's own keys under π_i, ascending, play the stored table:
                    // the entries of flip 0 (every table probes it), the only ones whose
                    // probe key is the key itself.
                    for &(_, f) in lists[i].iter().filter(|e| e.0 == e.1) {
                        joiner.visit(f, |bp| {
                            if bp != f {
                                self.emit(i, p, bp, f, k, &mut out);
                            }
                        });
                    }
                    out.retain(|q| q.batch < q.stored);
                    out
                })
                .collect();
            within = per_table.into_iter().flatten().collect();
            within.par_sort_unstable();
        }
        let result = BatchResult {
            pairs,
            within,
            keys_scanned,
        };
        Ok((result, blocks))
    }

    /// Record the pair (π⁻¹(bp), π⁻¹(f)) found in table `i` if it is within `k` and table `i` is
    /// the first that covers it.
    #[inline]
    fn emit(&self, i: usize, p: &Prober, bp: u64, f: u64, k: u32, out: &mut Vec<Pair>) {
        let d = (bp ^ f).count_ones();
        if d > k {
            return;
        }
        let (batch, stored) = (p.inverse.apply(bp), p.inverse.apply(f));
        // A table before `i` that covers the difference reports the pair; `i` must not.
        if (0..i).any(|j| self.design().table_covers(j, batch ^ stored)) {
            return;
        }
        out.push(Pair {
            batch,
            stored,
            distance: d,
        });
    }
}

/// Every pair of distinct fingerprints of `fps` within distance `k` (each once, smaller first,
/// sorted): a self-join through the index machinery. The fingerprints are built into a temporary
/// index under `tmp` (in memory or by external sort, within `mem_bytes`), then joined against it
/// in batches of 2^20, so memory stays bounded for any input size.
///
/// ```
/// use simdex::ProgressHandle;
/// # fn main() -> simdex::Result<()> {
/// # let dir = tempfile::tempdir().unwrap();
/// let fps = [0u64, 0b111, 1 << 40, 0b1];
/// let pairs = simdex::self_join(&fps, 2, dir.path(), 1 << 20, &ProgressHandle::none())?;
/// let got: Vec<(u64, u64, u32)> = pairs.iter().map(|p| (p.batch, p.stored, p.distance)).collect();
/// assert_eq!(got, vec![(0, 1, 1), (0, 1 << 40, 1), (1, 0b111, 2), (1, 1 << 40, 2)]);
/// # Ok(()) }
/// ```
pub fn self_join(
    fps: &[u64],
    k: u32,
    tmp: impl AsRef<std::path::Path>,
    mem_bytes: u64,
    progress: &ProgressHandle,
) -> Result<Vec<Pair>> {
    let tmp = tmp.as_ref();
    let dir = tempfile::Builder::new()
        .prefix(".simdex-join-")
        .tempdir_in(tmp)
        .map_err(|e| Error::io_in_dir(tmp, "create a temporary directory in the directory", e))?;
    let path = dir.path().join("index");
    let opts = crate::index::BuildOptions::default()
        .with_k(k)
        .with_mem_bytes(mem_bytes)
        .with_progress(progress.clone());
    crate::index::build(&path, fps.iter().map(|&f| Ok(f)), &opts)?;
    let idx = Index::open(&path)?;
    let mut distinct = fps.to_vec();
    distinct.par_sort_unstable();
    distinct.dedup();
    let mut out = Vec::new();
    for chunk in distinct.chunks(1 << 20) {
        let r = idx.batch_near(
            chunk,
            &BatchOptions::default()
                .with_k(k)
                .with_progress(progress.clone()),
        )?;
        out.extend(r.pairs.into_iter().filter(|p| p.batch < p.stored));
    }
    out.sort_unstable_by_key(|p| (p.batch, p.stored));
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Reading ahead (a cold index, a dense scan) changes nothing but timing.
    #[test]
    fn read_ahead_gives_the_same_pairs() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("idx");
        let fps = crate::sample::random(100_000, 4);
        let opts = crate::index::BuildOptions::default().with_block_size(Some(128));
        crate::index::build(&path, fps.iter().map(|&f| Ok(f)), &opts).unwrap();
        let idx = Index::open(&path).unwrap();
        let mut s = 5;
        // 1 000 near-duplicates against ~4 500 blocks per table: a dense scan (about a fifth
        // of the blocks), and under the 1 024 queries that make a batch re-judge residency.
        let batch: Vec<u64> = (0..1000)
            .map(|i| crate::sample::flip_bits(fps[i * 97], (i % 4) as u32, &mut s))
            .collect();
        let warm = idx.batch_near(&batch, &BatchOptions::default()).unwrap();
        idx.residency.set_cold(true);
        let cold = idx.batch_near(&batch, &BatchOptions::default()).unwrap();
        assert_eq!(warm, cold);
        assert_eq!(warm.pairs.len(), 1000);
    }
}
