//! One design table's permuted keys in a delta layer, bucketed by their top bits, so that a
//! probe (every key sharing a prefix of the table's `p` bits) is one hash lookup instead of a
//! B-tree range search, and an insert one hash update instead of a B-tree insert.
//!
//! A bucket holds the keys with equal top `b = min(p, 16)` bits, unordered. A probe's range is
//! all keys sharing a p-bit prefix, so it lies in one bucket; other ranges visit the buckets they
//! span. Measured by `simdex ingest` at k = 7 (68 probes a query): the B-tree
//! ranges were 43% of the time (docs/log/benchmarks.md, "Documents in the store").

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

/// Bucket ids are prefixes: one multiply spreads them over the hash table.
#[derive(Default, Clone, Copy)]
pub(crate) struct Fibonacci(u64);

impl Hasher for Fibonacci {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0 ^ u64::from(b)).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        }
    }
    fn write_u64(&mut self, v: u64) {
        self.0 = v.wrapping_mul(0x9E37_79B9_7F4A_7C15);
    }
}

/// The keys of one table, bucketed by prefix. (Tried: one arena of chained nodes, to save the
/// `malloc` of a new bucket; chasing the chains cost more than the allocations, 7.6 s against
/// 6.1 s for `ingest` of 200k documents.)
#[derive(Debug, Clone)]
pub(crate) struct Buckets {
    /// 64 − b: a key's bucket is `key >> shift`.
    shift: u32,
    map: HashMap<u64, Vec<u64>, BuildHasherDefault<Fibonacci>>,
}

impl Buckets {
    /// Buckets for a table whose probes fix `prefix_bits` leading bits.
    pub(crate) fn new(prefix_bits: u32) -> Buckets {
        Buckets {
            shift: 64 - prefix_bits.clamp(1, 16),
            map: HashMap::default(),
        }
    }

    /// Add `key`, which must be absent (the layer adds a fingerprint once, when its first id
    /// arrives).
    pub(crate) fn insert(&mut self, key: u64) {
        let b = self.map.entry(key >> self.shift).or_default();
        debug_assert!(!b.contains(&key));
        b.push(key);
    }

    /// Empty, keeping the map's memory.
    pub(crate) fn clear(&mut self) {
        self.map.clear();
    }

    /// Remove `key` (a no-op if absent).
    pub(crate) fn remove(&mut self, key: u64) {
        let id = key >> self.shift;
        if let Some(b) = self.map.get_mut(&id)
            && let Some(at) = b.iter().position(|&k| k == key)
        {
            b.swap_remove(at);
            if b.is_empty() {
                self.map.remove(&id);
            }
        }
    }

    /// Every key in `lo..=hi`, in no particular order.
    pub(crate) fn range(&self, lo: u64, hi: u64) -> impl Iterator<Item = u64> + '_ {
        // At most 2^16 buckets: a probe's range is one of them.
        (lo >> self.shift..=hi >> self.shift)
            .filter_map(|id| self.map.get(&id))
            .flat_map(|b| b.iter().copied())
            .filter(move |k| (lo..=hi).contains(k))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeSet;

    /// Against a B-tree: inserts, removes, probe ranges and wide ranges, at several prefixes.
    #[test]
    fn ranges_equal_a_btree() {
        let mut next = crate::dedup::xorshift(5);
        for p in [1u32, 4, 16, 24] {
            let mut b = Buckets::new(p);
            let mut t = BTreeSet::new();
            for i in 0..5000 {
                let k = next() >> (i % 40);
                if i % 3 == 0 {
                    b.remove(k);
                    t.remove(&k);
                    let old = *t.iter().nth(i % t.len().max(1)).unwrap_or(&0);
                    b.remove(old);
                    t.remove(&old);
                } else if t.insert(k) {
                    b.insert(k);
                }
            }
            for _ in 0..500 {
                let q = next();
                let mask = u64::MAX >> p;
                let (lo, hi) = (q & !mask, q | mask);
                let mut got: Vec<u64> = b.range(lo, hi).collect();
                got.sort_unstable();
                let want: Vec<u64> = t.range(lo..=hi).copied().collect();
                assert_eq!(got, want, "p = {p}");
                let (a, z) = (q.min(q ^ next()), q.max(q ^ next()));
                if (z >> (64 - p.min(16))) - (a >> (64 - p.min(16))) < 1 << 12 {
                    let mut got: Vec<u64> = b.range(a, z).collect();
                    got.sort_unstable();
                    assert_eq!(got, t.range(a..=z).copied().collect::<Vec<_>>());
                }
            }
        }
    }
}
