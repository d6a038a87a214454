//! A generation's prefix index: which stored sets have a shingle in their prefix
//! (`super::prefix`), for exact verification's candidates. Derived data, in memory: built from
//! `SETS` on first use, then carried from generation to generation by compactions.
//!
//! An entry is 8 bytes: the shingle's top 32 bits and the *ordinal* of the set's record, an
//! index into the records' offsets (8 bytes per document). A shingle that only shares its top
//! 32 bits with an entry's finds a set that does not hold it: one more candidate, read back and
//! compared exactly like the others, and a candidate needs two shared shingles besides. Whole
//! shingles and offsets (16 bytes) made the index and the copy a compaction merges it into half
//! an exact store's memory (measured: 620 MB of 1.5 GB at 1M documents).
//!
//! Entries are sorted, with a directory by their top bits (about four entries a bucket): a
//! look-up is one directory read and a short scan, where a binary search over millions of
//! entries missed the cache at every step.

use super::hasher::FastMap;

/// An ordinal whose record no map points to any more (rewritten away).
const DEAD: u64 = u64::MAX;

/// The index: (shingle's top 32 bits, ordinal) ascending, and each ordinal's record offset.
#[derive(Debug, Default, Clone)]
pub struct PrefixIndex {
    entries: Vec<(u32, u32)>,
    dir: Vec<usize>,
    shift: u32,
    records: Vec<u64>,
}

/// The top 32 bits of a shingle: what an entry keeps of it.
pub(super) fn top(token: u64) -> u32 {
    (token >> 32) as u32
}

impl PrefixIndex {
    /// An index of `sets`: each set's record offset and the shingles of its prefix.
    #[cfg(test)]
    pub fn build(sets: impl IntoIterator<Item = (u64, Vec<u64>)>) -> PrefixIndex {
        let mut b = Builder::default();
        b.add(sets);
        b.finish()
    }

    /// Add the records a compaction appended, `added` ((document id, record offset)), and the
    /// entries of their prefixes: `entries` ((top 32 bits, insert ordinal)) of the inserts
    /// whose ids `ids` lists by ordinal, as a delta keeps them (those of other ids are skipped:
    /// documents put and then deleted or put again). Each insert's record is looked up once,
    /// and its entries then find it by their ordinal (a look-up per entry was half the time
    /// of carrying the index over). In place: the entries grow by the new ones and are merged
    /// from the back, so that a compaction holds one index and the new entries, where a merged
    /// copy held two indexes (measured: 450 MB of 1.4 GB at 1M documents).
    pub fn append_records(
        &mut self,
        added: &[(u64, u64)],
        ids: &[u64],
        entries: impl Iterator<Item = (u32, u32)>,
    ) {
        const NONE: u32 = u32::MAX;
        let base = self.records.len() as u32;
        let mut ord_of: FastMap<u32> = FastMap::default();
        ord_of.reserve(added.len());
        for (i, &(id, at)) in added.iter().enumerate() {
            self.records.push(at);
            ord_of.insert(id, base + i as u32);
        }
        let record_of: Vec<u32> = (ids.iter())
            .map(|id| ord_of.get(id).copied().unwrap_or(NONE))
            .collect();
        drop(ord_of);
        let new: Vec<(u32, u32)> = entries
            .filter_map(|(t, o)| match record_of[o as usize] {
                NONE => None,
                r => Some((t, r)),
            })
            .collect();
        self.merge_in(new);
    }

    /// After a compaction that rewrote the records: `moved` (old offset, new offset),
    /// ascending by the old, for those it kept; the others' entries go.
    /// Entries are added next ([`Self::append_records`]), which indexes them again.
    pub fn relocate(&mut self, moved: &[(u64, u64)]) {
        for at in self.records.iter_mut() {
            *at = match moved.binary_search_by_key(at, |m| m.0) {
                Ok(i) => moved[i].1,
                Err(_) => DEAD,
            };
        }
        let records = &self.records;
        self.entries.retain(|e| records[e.1 as usize] != DEAD);
    }

    /// Give each set an ordinal, its entries into `entries`.
    fn add(
        &mut self,
        sets: impl IntoIterator<Item = (u64, Vec<u64>)>,
        entries: &mut Vec<(u32, u32)>,
    ) {
        for (at, tokens) in sets {
            let ord = self.records.len() as u32;
            self.records.push(at);
            entries.extend(tokens.into_iter().map(|t| (top(t), ord)));
        }
    }

    /// Merge `new` into the (ascending) entries and index them again.
    fn merge_in(&mut self, mut new: Vec<(u32, u32)>) {
        use rayon::slice::ParallelSliceMut;
        new.par_sort_unstable();
        let m = self.entries.len();
        // The directory is rebuilt below; it goes first.
        self.dir = Vec::new();
        self.entries.resize(m + new.len(), (0, 0));
        let v = &mut self.entries;
        let (mut i, mut j, mut k) = (m, new.len(), v.len());
        while j > 0 {
            k -= 1;
            if i > 0 && v[i - 1] > new[j - 1] {
                v[k] = v[i - 1];
                i -= 1;
            } else {
                v[k] = new[j - 1];
                j -= 1;
            }
        }
        drop(new);
        v.dedup();
        v.shrink_to_fit();
        self.records.shrink_to_fit();
        let bits = (v.len() / 4).max(1).ilog2().min(30);
        let shift = 32 - bits;
        let mut dir = vec![0usize; (1usize << bits) + 1];
        for (i, e) in v.iter().enumerate() {
            dir[(e.0 >> shift) as usize + 1] = i + 1;
        }
        // Empty buckets start where the previous one ended.
        for b in 1..dir.len() {
            dir[b] = dir[b].max(dir[b - 1]);
        }
        self.dir = dir;
        self.shift = shift;
    }

    /// Where the sets with `token` in their prefix start in `SETS` (and, rarely, sets with
    /// another shingle of the same top 32 bits): one probe of [`PrefixIndex::get_all`].
    #[cfg(test)]
    pub fn get(&self, token: u64) -> impl Iterator<Item = u64> + '_ {
        let t = top(token);
        let bucket: &[(u32, u32)] = match self.entries.is_empty() {
            true => &[],
            false => {
                let b = (t >> self.shift) as usize;
                &self.entries[self.dir[b]..self.dir[b + 1]]
            }
        };
        let a = bucket.partition_point(|e| e.0 < t);
        let n = bucket[a..].partition_point(|e| e.0 == t);
        bucket[a..a + n]
            .iter()
            .map(|e| self.records[e.1 as usize])
            .filter(|&at| at != DEAD)
    }
}

impl PrefixIndex {
    /// Where the sets with each token of `tokens` in their prefix start in `SETS` (and,
    /// rarely, sets with another shingle of the same top 32 bits), appended to `out`. The directory entries
    /// of all of them, then their buckets, then the records' offsets are prefetched before any
    /// is read, so that the probes' cache misses overlap: a probe is three dependent misses in
    /// an index of hundreds of MB, and a document's prefix is a score of probes.
    pub fn get_all(&self, tokens: &[u64], out: &mut Vec<u64>) {
        if self.entries.is_empty() {
            return;
        }
        let bucket_of = |t: u64| (top(t) >> self.shift) as usize;
        for &t in tokens {
            prefetch_read(&self.dir[bucket_of(t)]);
        }
        let mut spans: Vec<(u32, usize, usize)> = Vec::with_capacity(tokens.len());
        for &t in tokens {
            let b = bucket_of(t);
            let (lo, hi) = (self.dir[b], self.dir[b + 1]);
            if lo < hi {
                prefetch_read(&self.entries[lo]);
                spans.push((top(t), lo, hi));
            }
        }
        // Sized up front (about four entries a bucket): a vector grown a push at a time took the
        // allocator's lock at each step, which the pool's other thread wanted too.
        let mut ords: Vec<u32> = Vec::with_capacity(spans.len() * 4);
        for (t, lo, hi) in spans {
            let bucket = &self.entries[lo..hi];
            let a = bucket.partition_point(|e| e.0 < t);
            for e in bucket[a..].iter().take_while(|e| e.0 == t) {
                prefetch_read(&self.records[e.1 as usize]);
                ords.push(e.1);
            }
        }
        out.reserve(ords.len());
        out.extend(
            ords.into_iter()
                .map(|o| self.records[o as usize])
                .filter(|&at| at != DEAD),
        );
    }
}

/// A read prefetch hint for the cache line holding `p` (a hint: never faults, changes nothing).
#[inline(always)]
pub(super) fn prefetch_read<T>(p: &T) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: a prefetch never faults, whatever the address; SSE is part of every x86-64 CPU.
    unsafe {
        use std::arch::x86_64::{_MM_HINT_T0, _mm_prefetch};
        _mm_prefetch::<_MM_HINT_T0>((p as *const T).cast());
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = p;
}

/// An index built a few sets at a time.
#[derive(Debug, Default)]
pub struct Builder {
    index: PrefixIndex,
    entries: Vec<(u32, u32)>,
}

impl Builder {
    /// Add `sets`: each set's record offset and the shingles of its prefix.
    pub fn add(&mut self, sets: impl IntoIterator<Item = (u64, Vec<u64>)>) {
        self.index.add(sets, &mut self.entries);
    }

    /// The index.
    pub fn finish(mut self) -> PrefixIndex {
        self.index.merge_in(self.entries);
        self.index
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each token finds the sets with it in their prefix, whatever the bucket, after appends
    /// and after records moved.
    #[test]
    fn finds_every_set_with_the_token_through_appends_and_moves() {
        let mut s = 99u64;
        let mut next = move || {
            s = crate::sample::splitmix64(&mut s);
            s
        };
        let tokens: Vec<u64> = (0..400).map(|_| next()).collect();
        let sets: Vec<(u64, Vec<u64>)> = (0..600u64)
            .map(|i| {
                let k = 1 + (next() % 5) as usize;
                (
                    16 + 64 * i,
                    (0..k).map(|_| tokens[(next() % 400) as usize]).collect(),
                )
            })
            .collect();
        let want = |sets: &[(u64, Vec<u64>)], t: u64| {
            let mut v: Vec<u64> = sets
                .iter()
                .filter(|s| s.1.contains(&t))
                .map(|s| s.0)
                .collect();
            v.sort_unstable();
            v.dedup();
            v
        };
        let got = |ix: &PrefixIndex, t: u64| {
            let mut v: Vec<u64> = ix.get(t).collect();
            v.sort_unstable();
            v.dedup();
            v
        };
        let whole = PrefixIndex::build(sets.clone());
        // Appended as a compaction does: records by document id, entries by id.
        let append = |ix: &mut PrefixIndex, sets: &[(u64, Vec<u64>)], first_id: u64| {
            let added: Vec<(u64, u64)> = (first_id..).zip(sets.iter().map(|s| s.0)).collect();
            // One insert per set, and a last one of an id never added (skipped).
            let mut ids: Vec<u64> = (first_id..).take(sets.len()).collect();
            ids.push(u64::MAX);
            let entries: Vec<(u32, u32)> = (0u32..)
                .zip(sets)
                .flat_map(|(o, s)| s.1.iter().map(move |&t| (top(t), o)))
                .chain([(top(tokens[0]), ids.len() as u32 - 1)])
                .collect();
            ix.append_records(&added, &ids, entries.into_iter().rev());
        };
        let (a, b) = sets.split_at(250);
        let mut grown = PrefixIndex::build(a.to_vec());
        append(&mut grown, b, 1000);
        for &t in &tokens {
            assert_eq!(got(&whole, t), want(&sets, t));
            assert_eq!(got(&grown, t), want(&sets, t));
        }
        assert_eq!(whole.entries, grown.entries);
        // Records of every other set moved elsewhere, the rest dropped.
        let moved: Vec<(u64, u64)> = sets
            .iter()
            .step_by(2)
            .map(|s| (s.0, s.0 + 1_000_000))
            .collect();
        let kept: Vec<(u64, Vec<u64>)> = sets
            .iter()
            .step_by(2)
            .map(|s| (s.0 + 1_000_000, s.1.clone()))
            .collect();
        let extra = vec![(5u64, vec![tokens[0]])];
        let mut after = whole.clone();
        after.relocate(&moved);
        append(&mut after, &extra, 5000);
        let mut all = kept.clone();
        all.extend(extra);
        for &t in &tokens {
            assert_eq!(got(&after, t), want(&all, t));
        }
        assert!(PrefixIndex::default().get(5).next().is_none());
        // All tokens at once: what one probe at a time finds, in the same order.
        for ix in [&whole, &grown, &after] {
            let mut all = Vec::new();
            ix.get_all(&tokens, &mut all);
            let one: Vec<u64> = tokens.iter().flat_map(|&t| ix.get(t)).collect();
            assert_eq!(all, one);
        }
        let mut none = Vec::new();
        PrefixIndex::default().get_all(&tokens, &mut none);
        assert!(none.is_empty());
    }
}
