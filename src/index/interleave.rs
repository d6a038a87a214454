//! The hot loop of queries: plan, prefetch (and read ahead), then decode round-robin.
//!
//! For each query, every probe's search is prefetched in rounds — the directory entries of all
//! probes, then their last keys, then (each block located) their blocks' first cache lines,
//! `madvise`d too while the tables are out of memory (see `crate::os`) — and then every
//! block is opened and one key of each open probe is decoded in turn. Probes are independent,
//! so their cache misses overlap and so do their serial decode chains (each key needs the one
//! before it). Prefetching the next query's directory entries during this one, and decoding
//! the probes of several queries together (for designs of few tables), were measured and
//! gained nothing: BENCHMARKS.md. Where the CPU has AVX2 and the tables suit it, the decoding
//! after the rounds runs four probes per vector register instead (`lanes`).

use std::sync::atomic::Ordering::Relaxed;

use super::Index;
use super::probe::{Match, Work};
use crate::error::Result;
use crate::table::scan::{RangeScan, Step};

/// Most probes decoded round-robin at once (every design without a probe radius fits one
/// query's).
pub(crate) const MAX_INTERLEAVED: usize = 64;

impl<D: AsRef<[u8]> + Sync> Index<D> {
    /// Every match of `fp` (a design of at most [`MAX_INTERLEAVED`] probes), with repeats
    /// across tables, through `emit`.
    #[inline(always)]
    pub(super) fn interleaved(
        &self,
        fp: u64,
        k: u32,
        work: &mut Work,
        mut emit: impl FnMut(Match),
    ) -> Result<()> {
        // Every probe `(table, permuted query, lo, hi, first block)`, its block filled in by
        // the third round, which also drops the probes past their table's last block.
        let mut plan = [(0usize, 0u64, 0u64, 0u64, 0u64); MAX_INTERLEAVED];
        let cold = self.cold.load(Relaxed);
        if cold && self.cold_ticks.fetch_add(1, Relaxed) % 256 == 255 {
            // Reading ahead costs a system call per probe: stop once the tables are in memory.
            self.judge_residency();
        }
        let mut n = 0;
        for (t, (table, p)) in self.tables.iter().zip(&self.probers).enumerate() {
            let q = p.permutation.apply(fp);
            for &flip in &p.flips {
                let (lo, hi) = p.range(q, flip);
                work.probes += 1;
                table.prefetch_directory(lo);
                plan[n] = (t, q, lo, hi, 0);
                n += 1;
            }
        }
        for &(t, _, lo, _, _) in &plan[..n] {
            self.tables[t].prefetch_slice(lo);
        }
        let mut planned = 0;
        for j in 0..n {
            let (t, q, lo, hi, _) = plan[j];
            let table = &self.tables[t];
            let b = table.find_block(lo) as u64;
            if b < table.block_count() {
                let blocks = table.range_blocks(b, hi);
                if cold {
                    table.will_need_blocks(blocks.clone());
                }
                for i in blocks {
                    table.prefetch_block(i);
                }
                plan[planned] = (t, q, lo, hi, b);
                planned += 1;
            }
        }
        #[cfg(target_arch = "x86_64")]
        if self.lanes {
            // SAFETY: `lanes` is set only where the CPU has AVX2 and POPCNT.
            return unsafe { self.lanes(&plan[..planned], k, work, &mut emit) };
        }
        let mut live = Vec::with_capacity(planned);
        for &(t, q, lo, hi, b) in &plan[..planned] {
            let scan = RangeScan::open(&self.tables[t], b, lo, hi, &mut work.blocks)?;
            live.push((scan, q, &self.probers[t].inverse));
        }
        let mut j = 0;
        while !live.is_empty() {
            if j >= live.len() {
                j = 0;
            }
            let (scan, q, inverse) = &mut live[j];
            match scan.step(&mut work.keys) {
                Step::Key(key) => {
                    let d = (key ^ *q).count_ones();
                    if d <= k {
                        work.candidates += 1;
                        emit(Match {
                            distance: d,
                            fingerprint: inverse.apply(key),
                        });
                    }
                    j += 1;
                }
                Step::Below => j += 1,
                Step::BlockEnd => {
                    if !scan.advance(&mut work.blocks)? {
                        live.swap_remove(j);
                    }
                }
                Step::Done => {
                    live.swap_remove(j);
                }
            }
        }
        Ok(())
    }
}
