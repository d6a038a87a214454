//! A radix directory over a table's last-key array: which block a key's search ends in, most
//! often decided by one cache line.
//!
//! Every probe of every query searches a last-key array too big for any cache (35 MiB per
//! table at 1B keys). Galloping from an interpolated guess (`key / 2^64 · blocks`, off by
//! about √keys / (2 · keys per block) blocks on uniform keys: 90 at 100M) reads places that
//! depend on what it read before, so a query cannot ask for them ahead. The directory cuts the
//! key range into equal slices, about one per [`BLOCKS_PER_SLICE`] blocks, and gives each a
//! 64-byte bucket: the first block whose last key is in the slice, how many are, and for each
//! the next 16 bits of its position in the slice (its *mark*). A search reads its slice's
//! bucket (its place known from the key alone) and counts the marks below the key's own: that
//! is the block, unless a mark equals the key's or the slice holds more blocks than a bucket
//! has marks; then (about 10^-4 of searches on uniform keys, more on clustered ones) a binary
//! search of the slice's last keys decides. A slice of more blocks than marks keeps the marks
//! of the last blocks of its groups of `ceil(blocks / MARKS)`, so that its search reads one
//! or two groups' last keys, not the whole slice (keys with two bits fixed, whose slices
//! hold ~64 blocks, spent 5.9% of a query in that search: docs/log/benchmarks.md, “a block's first
//! segment
//! entered without a decoder”). So a
//! query asks for every probe's bucket, then every probe's block — two rounds of misses
//! overlapped across its probes, where a directory of block numbers alone needed a third for
//! the last keys between them (`table::multiscan`).
//!
//! It costs 64 bytes per slice, 4 per block (half the last-key array), is built at open from
//! the array, and never changes an answer: a mark decides only where it differs from the
//! key's, and keys of any skew still find their block in O(log blocks).

/// [`Directory::locate`]'s slot for a key outside every slice.
pub(crate) const NO_SLOT: u32 = u32::MAX;

/// Blocks per slice the directory aims at: 4 bytes of buckets per block, and on uniform keys
/// (whose blocks' last keys are near evenly spaced) room to spare in a bucket's
/// [`MARKS`].
const BLOCKS_PER_SLICE: usize = 16;

/// The marks a bucket holds: as many as fill its cache line beside its count and start.
const MARKS: usize = 29;

/// One slice's blocks, in one cache line.
#[derive(Debug, Clone, Copy)]
#[repr(C, align(64))]
struct Bucket {
    /// The marks of the slice's blocks' last keys, ascending; `u16::MAX` past `count`. In a
    /// slice of more than [`MARKS`] blocks, the marks of the last blocks of its groups of
    /// `ceil(blocks / MARKS)` (the last group's possibly shorter), then `u16::MAX`.
    marks: [u16; MARKS],
    /// How many blocks' last keys are in the slice, saturating at `u16::MAX`.
    count: u16,
    /// The first block whose last key is in the slice or a later one.
    start: u32,
}

impl Bucket {
    /// How many marks pass `test`: a branch-free count over the whole line.
    #[inline(always)]
    fn count(&self, test: impl Fn(u16) -> bool) -> usize {
        self.marks.iter().map(|&m| test(m) as usize).sum()
    }
}

/// Where in the last-key array a key's block is.
#[derive(Debug, Default)]
pub(crate) struct Directory {
    /// The first last key; keys at or below it are in block 0.
    first: u64,
    /// The last last key; keys above it are in no block.
    last: u64,
    /// A key `x` in `first..=last` is at position `(x - first) · scale` (128 bits): its slice
    /// is the top 64 bits, its mark the next 16. Monotone in `x`, as a key order needs.
    scale: u64,
    /// One bucket per slice and one more, whose `start` is the block count.
    buckets: Vec<Bucket>,
}

impl Directory {
    /// The directory of `last_keys` (ascending, distinct). Empty (and unused) for an array of
    /// fewer than two blocks or more than `u32::MAX`.
    pub(crate) fn new(last_keys: &[u64]) -> Directory {
        let n = last_keys.len();
        if n < 2 || n > u32::MAX as usize {
            return Directory::default();
        }
        let (first, last) = (last_keys[0], last_keys[n - 1]);
        let span = last - first;
        // At most `span` slices, so that the scale fits in 64 bits and the last key's slice is
        // below the slice count.
        let slices = (n / BLOCKS_PER_SLICE).clamp(1, span.min(u32::MAX as u64) as usize);
        let scale = ((slices as u128) << 64) / (span as u128 + 1);
        let mut d = Directory {
            first,
            last,
            scale: scale as u64,
            buckets: Vec::with_capacity(slices + 1),
        };
        crate::os::huge_pages(&mut d.buckets);
        let empty = Bucket {
            marks: [u16::MAX; MARKS],
            count: 0,
            start: 0,
        };
        d.buckets.resize(slices + 1, empty);
        // Buckets are filled in block order; one with no blocks starts where the next does.
        let mut next = 0;
        for (i, &k) in last_keys.iter().enumerate() {
            let (s, mark) = d.position(k);
            while next <= s {
                d.buckets[next].start = i as u32;
                next += 1;
            }
            let b = &mut d.buckets[s];
            if let Some(m) = b.marks.get_mut(b.count as usize) {
                *m = mark;
            }
            b.count = b.count.saturating_add(1);
        }
        for b in &mut d.buckets[next..] {
            b.start = n as u32;
        }
        // A slice of more blocks than marks: each mark is that of the last block of a group of
        // `stride` consecutive blocks, so that a search reads a group or two of last keys, not
        // the whole slice.
        for s in 0..slices {
            let (start, end) = (d.buckets[s].start as usize, d.buckets[s + 1].start as usize);
            if end - start <= MARKS {
                continue;
            }
            let stride = (end - start).div_ceil(MARKS);
            let mut marks = [u16::MAX; MARKS];
            for (g, m) in marks.iter_mut().enumerate() {
                let last = (start + (g + 1) * stride).min(end) - 1;
                if start + g * stride < end {
                    *m = d.position(last_keys[last]).1;
                }
            }
            d.buckets[s].marks = marks;
        }
        d
    }

    /// Heap bytes held.
    pub(crate) fn heap_bytes(&self) -> usize {
        self.buckets.capacity() * std::mem::size_of::<Bucket>()
    }

    /// The blocks `lo..hi` of `last_keys` (the array the directory was built from) to search
    /// for the first block whose last key is `>= key`: that block is
    /// `lo + last_keys[lo..hi].partition_point(|&k| k < key)`, and `lo` itself when `lo ==
    /// hi`. `None` when the directory is empty.
    #[inline(always)]
    pub(crate) fn slice(&self, key: u64) -> Option<(usize, usize)> {
        let n = self.buckets.last()?.start as usize;
        Some(match self.slot(key) {
            Some(s) => self.resolve(s, key),
            None if key <= self.first => (0, 0),
            None => (n, n),
        })
    }

    /// [`slice`](Self::slice) in two steps, for a search planned in rounds: the slot of `key`
    /// ([`NO_SLOT`] for a key outside every slice, and for every key of an empty directory)
    /// and the bucket to prefetch (`None` if the search reads none), then
    /// [`slice_at`](Self::slice_at) once the bucket has arrived; the slot computed once.
    #[inline(always)]
    pub(crate) fn locate(&self, key: u64) -> (u32, Option<*const u8>) {
        match self.slot(key) {
            Some(s) => (s as u32, Some((&self.buckets[s] as *const Bucket).cast())),
            None => (NO_SLOT, None),
        }
    }

    /// The blocks to search for `key` from its [`locate`](Self::locate)d slot, as
    /// [`slice`](Self::slice) gives them; `None` for [`NO_SLOT`].
    #[inline(always)]
    pub(crate) fn slice_at(&self, slot: u32, key: u64) -> Option<(usize, usize)> {
        (slot != NO_SLOT).then(|| self.resolve(slot as usize, key))
    }

    /// The blocks to search for `key`, in slice `s`: one (`(b, b)`) where the marks decide,
    /// else the slice's blocks.
    #[inline(always)]
    fn resolve(&self, s: usize, key: u64) -> (usize, usize) {
        let b = &self.buckets[s];
        let start = b.start as usize;
        if b.count as usize <= MARKS {
            let mark = self.position(key).1;
            // A branch-free count over the whole line (padding is `u16::MAX`, never below a
            // mark); the marks ascend, so the first not below is the only one that can equal
            // the key's (padding equal to `u16::MAX` then searches: harmless).
            let below = b.count(|m| m < mark);
            if b.marks.get(below) != Some(&mark) {
                let at = start + below;
                return (at, at);
            }
            return (start, start + b.count as usize);
        }
        // Groups of `stride` blocks, each mark its group's last (see `new`): the groups whose
        // marks are below the key's end below the key; the first whose mark is above it ends
        // at or above it.
        let end = self.buckets[s + 1].start as usize;
        let stride = (end - start).div_ceil(MARKS);
        let mark = self.position(key).1;
        let (below, not_above) = (b.count(|m| m < mark), b.count(|m| m <= mark));
        let lo = (start + below * stride).min(end);
        (lo, (start + (not_above + 1) * stride).min(end))
    }

    /// A key's slice and mark (for keys in `first..=last`).
    #[inline(always)]
    fn position(&self, key: u64) -> (usize, u16) {
        let p = (key - self.first) as u128 * self.scale as u128;
        ((p >> 64) as usize, (p >> 48) as u16)
    }

    /// The slice of a key in `first + 1..=last`; `None` for keys outside (and for every key
    /// when the directory is empty: then `first == last`).
    #[inline(always)]
    fn slot(&self, key: u64) -> Option<usize> {
        (key > self.first && key <= self.last).then(|| self.position(key).0)
    }
}

#[cfg(test)]
mod tests {
    use super::{Directory, MARKS};

    /// The first block whose last key is `>= key`, by the directory.
    fn find(d: &Directory, lk: &[u64], key: u64) -> usize {
        match d.slice(key) {
            Some((lo, hi)) => lo + lk[lo..hi].partition_point(|&k| k < key),
            None => lk.partition_point(|&k| k < key),
        }
    }

    fn check(lk: &[u64], keys: impl IntoIterator<Item = u64>) {
        let d = Directory::new(lk);
        assert!(d.heap_bytes() <= 4 * lk.len() + 128, "{} blocks", lk.len());
        for key in keys {
            let want = lk.partition_point(|&k| k < key);
            assert_eq!(
                find(&d, lk, key),
                want,
                "key {key:#x} over {} blocks",
                lk.len()
            );
        }
    }

    fn around(lk: &[u64]) -> Vec<u64> {
        let mut keys = vec![0, 1, u64::MAX, u64::MAX - 1];
        for &k in lk {
            keys.extend([k.wrapping_sub(1), k, k.wrapping_add(1)]);
        }
        keys
    }

    #[test]
    fn finds_the_block_binary_search_finds() {
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        let mut rand = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        for n in [1usize, 2, 3, 4, 5, 7, 8, 9, 63, 64, 65, 1000, 4099] {
            // Uniform, clustered in a narrow range, and both ends of the key space.
            let mut uniform: Vec<u64> = (0..n).map(|_| rand()).collect();
            let mut narrow: Vec<u64> = (0..n).map(|_| (1 << 40) + rand() % 5000).collect();
            let mut ends: Vec<u64> = (0..n as u64)
                .map(|i| if i % 2 == 0 { i } else { u64::MAX - i })
                .collect();
            // Half the blocks in one slice's width, the rest spread out.
            let mut skewed: Vec<u64> = (0..n)
                .map(|i| if i % 2 == 0 { 77 + i as u64 } else { rand() })
                .collect();
            for lk in [&mut uniform, &mut narrow, &mut ends, &mut skewed] {
                lk.sort_unstable();
                lk.dedup();
                let probe: Vec<u64> = around(lk)
                    .into_iter()
                    .chain((0..500).map(|_| rand()))
                    .collect();
                check(lk, probe);
            }
        }
    }

    #[test]
    fn empty_is_unused() {
        assert!(Directory::new(&[]).slice(5).is_none());
        assert_eq!(Directory::new(&[]).locate(5), (super::NO_SLOT, None));
    }

    #[test]
    fn marks_decide_nearly_every_uniform_search() {
        // The last keys of blocks of 32 uniform keys, as a table of uniform fingerprints has
        // (with hundreds of keys a block, their spacing is more even still): all but a few
        // searches end at the bucket, and the one block they name is binary search's.
        let mut keys = crate::sample::random(640_000, 0x2545_f491_4f6c_dd1d);
        keys.sort_unstable();
        let lk: Vec<u64> = keys.iter().skip(31).step_by(32).copied().collect();
        let d = Directory::new(&lk);
        let overflowing = d
            .buckets
            .iter()
            .filter(|b| b.count as usize > MARKS)
            .count();
        assert_eq!(overflowing, 0);
        let mut decided = 0;
        for key in crate::sample::random(100_000, 7) {
            let (lo, hi) = d.slice(key).unwrap();
            decided += (lo == hi) as usize;
            assert_eq!(find(&d, &lk, key), lk.partition_point(|&k| k < key));
        }
        assert!(
            decided >= 99_900,
            "{decided} of 100000 decided by the marks"
        );
    }

    #[test]
    fn a_slice_of_more_blocks_than_a_count_holds_searches() {
        // 70 000 blocks in one slice's width, and a few spread over the rest of the key
        // space: the bucket's count saturates, and the search still spans the whole slice.
        let mut lk: Vec<u64> = (0..70_000u64).map(|i| (7 << 60) + i).collect();
        lk.extend((1..16u64).map(|i| i << 60 | 0xabc));
        lk.sort_unstable();
        let d = Directory::new(&lk);
        assert!(d.buckets.iter().any(|b| b.count == u16::MAX));
        let mut keys = around(&lk[..100]);
        keys.extend(around(&lk[lk.len() - 100..]));
        keys.extend([(7 << 60) + 35_000, (7 << 60) + 69_999, (7 << 60) + 70_000]);
        check(&lk, keys);
    }

    #[test]
    fn a_dense_slice_searches_a_group_or_two_of_its_blocks() {
        // Keys with two bits cleared: bands of a quarter of the key space, each four times as
        // dense as uniform keys, so that the slices inside a band hold about 64 blocks, more
        // than a bucket's marks. A search reads the one or two groups of blocks its key can
        // fall in (`ceil(blocks / MARKS)` each), not the whole slice, and finds binary
        // search's block.
        let mut keys: Vec<u64> = crate::sample::random(2_000_000, 11)
            .into_iter()
            .map(|k| k & !(3 << 60))
            .collect();
        keys.sort_unstable();
        let lk: Vec<u64> = keys.iter().skip(99).step_by(100).copied().collect();
        let d = Directory::new(&lk);
        let mut dense = 0;
        for key in crate::sample::random(20_000, 12) {
            let key = key & !(3 << 60);
            let want = lk.partition_point(|&k| k < key);
            assert_eq!(find(&d, &lk, key), want, "key {key:#x}");
            let Some(s) = d.slot(key) else { continue };
            let blocks = (d.buckets[s + 1].start - d.buckets[s].start) as usize;
            if blocks > MARKS {
                dense += 1;
                let (lo, hi) = d.slice(key).unwrap();
                assert!(
                    hi - lo <= 2 * blocks.div_ceil(MARKS),
                    "{} of the slice's {blocks} blocks searched",
                    hi - lo
                );
            }
        }
        assert!(dense > 1000, "{dense} searches in dense slices");
    }

    #[test]
    fn equal_marks_and_full_buckets_search() {
        // Last keys a few apart share their marks, and a dense run overflows its bucket: the
        // searches fall back to the last keys, and still find binary search's block.
        let mut lk: Vec<u64> = (0..2000u64).map(|i| (1 << 50) + 3 * i).collect();
        lk.extend((1..200u64).map(|i| i << 54));
        lk.push(u64::MAX);
        lk.sort_unstable();
        lk.dedup();
        let d = Directory::new(&lk);
        assert!(d.buckets.iter().any(|b| b.count as usize > MARKS));
        let keys = around(&lk);
        let searched = keys
            .iter()
            .filter(|&&k| matches!(d.slice(k), Some((lo, hi)) if lo < hi));
        assert!(searched.count() > 1000);
        check(&lk, keys);
    }
}
