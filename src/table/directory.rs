//! A radix directory over a table's last-key array: which few blocks a key's search is among.
//!
//! Every probe of every query searches a last-key array too big for any cache (16 MiB per
//! table at 100M keys). Galloping from an interpolated guess (`key / 2^64 · blocks`, off by
//! about √keys / (2 · keys per block) blocks on uniform keys: 90 at 100M) reads places that
//! depend on what it read before, so a query cannot ask for them ahead. The directory cuts the
//! key range into equal slices, about one per four blocks, and records the first block of
//! each: a search reads one directory entry, then binary-searches the 4–8 last keys of its
//! slice (one or two cache lines). Both loads are known from the key alone and from the entry,
//! so a query asks for every probe's entry, then every probe's last keys, then every probe's
//! block — three rounds of misses overlapped across its probes (`index::interleave`).
//!
//! It costs 4 bytes per slice, at most 1 byte per block (one eighth of the last-key array), is
//! built at open from the array, and never changes an answer: the slice only bounds where the
//! search looks, and keys of any skew still find their block in O(log blocks).

/// [`Directory::locate`]'s slot for a key outside every slice.
pub(crate) const NO_SLOT: u32 = u32::MAX;

/// Blocks per slice the directory aims at (between this and twice this on average).
const BLOCKS_PER_SLICE: u64 = 4;

/// Where in the last-key array a key's block is.
#[derive(Debug, Default)]
pub(crate) struct Directory {
    /// The first last key; keys at or below it are in block 0.
    first: u64,
    /// The last last key; keys above it are in no block.
    last: u64,
    /// A key `x` in `first + 1..=last` is in slice `(x - first) >> shift`.
    shift: u32,
    /// `starts[s]`: the first block whose last key is in slice `s` or later; one entry more
    /// than there are slices, the last being the block count.
    starts: Vec<u32>,
}

impl Directory {
    /// The directory of `last_keys` (ascending). Empty (and unused) for an empty array or one
    /// of more than `u32::MAX` blocks.
    pub(crate) fn new(last_keys: &[u64]) -> Directory {
        let n = last_keys.len();
        if n == 0 || n > u32::MAX as usize {
            return Directory::default();
        }
        let (first, last) = (last_keys[0], last_keys[n - 1]);
        let span = last - first;
        // Slices of 2^shift keys, so that there are at most `target` of them (at most two when
        // the target is one: a shift stays below 64).
        let target = (n as u64 / BLOCKS_PER_SLICE).max(1);
        let span_bits = 64 - span.leading_zeros();
        let shift = span_bits.saturating_sub(target.ilog2()).min(63);
        let slices = (span >> shift) as usize + 1;
        let mut starts = Vec::with_capacity(slices + 1);
        crate::os::huge_pages(&mut starts);
        let mut block = 0usize;
        for s in 0..slices as u64 {
            while (last_keys[block] - first) >> shift < s {
                block += 1;
            }
            starts.push(block as u32);
        }
        starts.push(n as u32);
        Directory {
            first,
            last,
            shift,
            starts,
        }
    }

    /// Heap bytes held.
    pub(crate) fn heap_bytes(&self) -> usize {
        self.starts.capacity() * 4
    }

    /// The blocks `lo..hi` of `last_keys` (the array the directory was built from) to search
    /// for the first block whose last key is `>= key`: that block is
    /// `lo + last_keys[lo..hi].partition_point(|&k| k < key)`. `None` when the directory is
    /// empty.
    #[inline(always)]
    pub(crate) fn slice(&self, key: u64) -> Option<(usize, usize)> {
        let n = *self.starts.last()? as usize;
        Some(match self.slot(key) {
            Some(s) => (self.starts[s] as usize, self.starts[s + 1] as usize),
            None if key <= self.first => (0, 0),
            None => (n, n),
        })
    }

    /// [`slice`](Self::slice) in two steps, for a search planned in rounds: the slot of `key`
    /// ([`NO_SLOT`] for a key outside every slice, and for every key of an empty directory)
    /// and the entry to prefetch (`None` if the search reads none), then
    /// [`slice_at`](Self::slice_at) once the entry has arrived; the slot computed once.
    #[inline(always)]
    pub(crate) fn locate(&self, key: u64) -> (u32, Option<*const u8>) {
        match self.slot(key) {
            Some(s) => (s as u32, Some((&self.starts[s] as *const u32).cast())),
            None => (NO_SLOT, None),
        }
    }

    /// The blocks `lo..hi` to search from a [`locate`](Self::locate)d slot, as
    /// [`slice`](Self::slice) gives them; `None` for [`NO_SLOT`].
    #[inline(always)]
    pub(crate) fn slice_at(&self, slot: u32) -> Option<(usize, usize)> {
        if slot == NO_SLOT {
            return None;
        }
        let s = slot as usize;
        Some((self.starts[s] as usize, self.starts[s + 1] as usize))
    }

    /// The slice of a key in `first + 1..=last`; `None` for keys outside (and for every key
    /// when the directory is empty: then `first == last`).
    #[inline(always)]
    fn slot(&self, key: u64) -> Option<usize> {
        (key > self.first && key <= self.last).then(|| ((key - self.first) >> self.shift) as usize)
    }
}

#[cfg(test)]
mod tests {
    use super::Directory;

    /// The first block whose last key is `>= key`, by the directory.
    fn find(d: &Directory, lk: &[u64], key: u64) -> usize {
        let (lo, hi) = d.slice(key).unwrap();
        lo + lk[lo..hi].partition_point(|&k| k < key)
    }

    fn check(lk: &[u64], keys: impl IntoIterator<Item = u64>) {
        let d = Directory::new(lk);
        assert!(d.heap_bytes() <= lk.len() + 16, "{} blocks", lk.len());
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
    fn uniform_slices_hold_a_few_blocks() {
        let lk: Vec<u64> = (0..1u64 << 16).map(|i| (i << 48) | 0xffff).collect();
        let d = Directory::new(&lk);
        let widest = d.starts.windows(2).map(|w| w[1] - w[0]).max().unwrap();
        assert!(widest <= 2 * super::BLOCKS_PER_SLICE as u32, "{widest}");
    }
}
