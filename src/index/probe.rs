//! The vocabulary of a probe, shared by every query path (the plain loop in `query`, the
//! multi-probe scan of `table::multiscan` and a store's delta): what a match is, how one table is
//! probed, what a probe costs, and what can be probed.

use crate::error::Result;
use crate::permutation::Permutation;
use crate::table::Table;
use crate::table::multiscan::{Probe, Probes};

/// A stored fingerprint within the query distance.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Match {
    /// Hamming distance to the query (first, so the derived order is by distance).
    pub distance: u32,
    /// The stored fingerprint.
    pub fingerprint: u64,
}

/// How one table is probed.
#[derive(Debug, Clone)]
pub(crate) struct Prober {
    pub(crate) permutation: Permutation,
    pub(crate) inverse: Permutation,
    pub(crate) prefix_bits: u32,
    /// XOR masks over the permuted key: every way to flip at most `radius` prefix bits.
    pub(crate) flips: Vec<u64>,
}

impl Prober {
    pub(crate) fn new(permutation: &Permutation, prefix_bits: u32, radius: u32) -> Prober {
        // Every subset of at most `radius` prefix positions, each exactly once.
        fn subsets(pos: &[u64], start: usize, left: u32, cur: u64, out: &mut Vec<u64>) {
            if left == 0 {
                return;
            }
            for i in start..pos.len() {
                out.push(cur | pos[i]);
                subsets(pos, i + 1, left - 1, cur | pos[i], out);
            }
        }
        let positions: Vec<u64> = (0..prefix_bits).map(|i| 1u64 << (63 - i)).collect();
        let mut flips = vec![0u64];
        subsets(&positions, 0, radius, 0, &mut flips);
        Prober {
            permutation: permutation.clone(),
            inverse: permutation.inverse(),
            prefix_bits,
            flips,
        }
    }

    /// The inclusive key range of the probe `flip` for the permuted query `q`.
    #[inline]
    pub(crate) fn range(&self, q: u64, flip: u64) -> (u64, u64) {
        let low = u64::MAX.checked_shr(self.prefix_bits).unwrap_or(0);
        let lo = (q ^ flip) & !low;
        (lo, lo | low)
    }
}

pub(crate) use crate::table::cursor::Work;

/// Call `f` on every probe of `fp` (each table's permutation, then each flip's range), in
/// table order, until it returns false; whether it never did. The one loop every query path
/// (the multi-probe scan, the plain probe loop and its prefetch) enumerates probes with.
#[inline(always)]
pub(crate) fn each_probe(probers: &[Prober], fp: u64, mut f: impl FnMut(Probe) -> bool) -> bool {
    for (table, p) in probers.iter().enumerate() {
        let query = p.permutation.apply(fp);
        for &flip in &p.flips {
            let (lo, hi) = p.range(query, flip);
            if !f(Probe {
                table,
                query,
                lo,
                hi,
            }) {
                return false;
            }
        }
    }
    true
}

/// Anything laid out like an index's tables (same design, same permutations): the tables
/// themselves, or a store's in-memory delta. One probe loop serves both.
pub(crate) trait ProbeSource {
    /// Call `f` on every permuted key of table `t` in `lo..=hi` until it returns false (the
    /// tables go in ascending order, a store's delta in none); whether the scan ran to the end.
    /// Adds the blocks and keys decoded to `work`.
    fn visit(
        &self,
        t: usize,
        lo: u64,
        hi: u64,
        work: &mut Work,
        f: impl FnMut(u64) -> bool,
    ) -> Result<bool>;
}

impl<D: AsRef<[u8]>> ProbeSource for [Table<D>] {
    #[inline(always)]
    fn visit(
        &self,
        t: usize,
        lo: u64,
        hi: u64,
        work: &mut Work,
        f: impl FnMut(u64) -> bool,
    ) -> Result<bool> {
        self[t].scan_range(lo, hi, &mut work.blocks, &mut work.keys, f)
    }
}

/// Probes `from..to` of one query, in [`each_probe`]'s order. A design with a probe radius
/// makes more probes than one scan plans (`MAX_PROBES`), so its query is scanned in chunks.
pub(crate) struct ProbeChunk<'a> {
    pub(crate) probers: &'a [Prober],
    pub(crate) fp: u64,
    pub(crate) from: usize,
    pub(crate) to: usize,
}

impl Probes for ProbeChunk<'_> {
    #[inline(always)]
    fn each(&self, mut f: impl FnMut(Probe)) {
        let mut i = 0;
        each_probe(self.probers, self.fp, |p| {
            if i >= self.to {
                return false;
            }
            if i >= self.from {
                f(p);
            }
            i += 1;
            true
        });
    }
}

/// The probes of one query, for the multi-probe scan.
pub(crate) struct QueryProbes<'a> {
    pub(crate) probers: &'a [Prober],
    pub(crate) fp: u64,
}

impl Probes for QueryProbes<'_> {
    #[inline(always)]
    fn each(&self, mut f: impl FnMut(Probe)) {
        each_probe(self.probers, self.fp, |p| {
            f(p);
            true
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn probe_flips_enumerate_each_subset_once() {
        for (p, r, want) in [
            (32u32, 0u32, 1usize),
            (32, 1, 33),
            (10, 2, 1 + 10 + 45),
            (3, 3, 8),
        ] {
            let pr = Prober::new(&Permutation::identity(), p, r);
            assert_eq!(pr.flips.len(), want, "p={p} r={r}");
            assert!(
                pr.flips
                    .iter()
                    .all(|f| f.count_ones() <= r && f.trailing_zeros() >= 64 - p)
            );
        }
    }
}
