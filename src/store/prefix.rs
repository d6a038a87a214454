//! Candidates for exact verification: every stored document that can reach Jaccard ≥ T with a
//! new one shares two *prefix shingles* with it (one, for tiny sets), so looking its prefix
//! shingles up finds them all (`format-spec/store.md`, "Exact verification").
//!
//! Order the shingles of every set by one global order. If J(D, S) ≥ T ≥ T0, then
//! a = |D ∩ S| ≥ ⌈T·|D|⌉ and ≥ ⌈T0·|S|⌉, and the k-th shingle (in that order) of D ∩ S, for
//! k ≤ a, lies among the first |S| − ⌈T0·|S|⌉ + k of S and among the first |D| − ⌈T·|D|⌉ + k
//! of D: before it come only the k − 1 earlier common ones and shingles outside the
//! intersection. So a store indexes each document's prefix of |S| − ⌈T0·|S|⌉ + 2 shingles,
//! and a check at T ≥ T0 looks up its own prefix at T and keeps the documents sharing
//! min(2, ⌈T·|D|⌉) of them: the filter drops only pairs that cannot reach T. Asking for two
//! shared shingles instead of one costs one more index entry per document and drops the many
//! candidates that share a single moderately common shingle (measured on the 1M-document
//! bench corpus: 14.7M candidates read back, growing with the store, became 50k).
//!
//! The order puts rare shingles first, so that prefixes (a tenth of a set at 0.9) are made of
//! them and few documents share one: shingles by their document frequency in the sample the
//! store was created from (the [`Order`], kept in its recipe), ties and unseen shingles by hash.
//! A template shared by every page of a site then stays out of the prefixes.

use std::collections::HashMap;

/// Entries an order keeps at most: the most frequent shingles of the sample.
pub const MAX_ORDER: usize = 1 << 20;

/// The global shingle order of a store: the sample's document frequency of its frequent
/// shingles (at least 2); others count 0.
#[derive(Debug, Clone, Default)]
pub struct Order {
    df: HashMap<u64, u32, crate::simhash::BuildIdentity>,
    /// A bit filter of the shingles in `df` (16 bits per entry, two bits per shingle in one
    /// word): most of a set's shingles are in no sample's table, and the filter, unlike the
    /// table, stays in cache — a shingle it rules out needs no look-up (measured: the look-ups
    /// were a third of an exact ingest's time).
    filter: Vec<u64>,
}

impl PartialEq for Order {
    fn eq(&self, other: &Order) -> bool {
        self.df == other.df
    }
}

impl Eq for Order {}

impl Order {
    /// The order learned from `sets` (each a document's shingle set): the shingles in two
    /// documents or more, at most [`MAX_ORDER`] of the most frequent (ties: smaller hash).
    pub fn learn<'a>(sets: impl IntoIterator<Item = &'a [u64]>) -> Order {
        use rayon::prelude::*;
        // Every set's shingles sorted together (on all cores): a shingle's run is its
        // frequency. (A hash table of millions of shingles missed the cache at every count.)
        let mut all: Vec<u64> = sets.into_iter().flatten().copied().collect();
        all.par_sort_unstable();
        let mut v: Vec<(u32, u64)> = all
            .chunk_by(|a, b| a == b)
            .filter(|run| run.len() >= 2)
            .map(|run| (run.len().min(u32::MAX as usize) as u32, run[0]))
            .collect();
        drop(all);
        v.par_sort_unstable_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
        v.truncate(MAX_ORDER);
        Order::from_entries(v.into_iter().map(|(n, h)| (h, n)))
    }

    /// An order of these (shingle, frequency) entries.
    pub fn from_entries(entries: impl IntoIterator<Item = (u64, u32)>) -> Order {
        let df: HashMap<u64, u32, crate::simhash::BuildIdentity> = entries.into_iter().collect();
        let words = (df.len() * 16 / 64).next_power_of_two().max(16);
        let mut filter = vec![0u64; words];
        for &h in df.keys() {
            let (w, bits) = filter_bits(h, words);
            filter[w] |= bits;
        }
        Order { df, filter }
    }

    /// The entries, ascending by shingle (for the recipe).
    pub fn entries(&self) -> Vec<(u64, u32)> {
        let mut v: Vec<(u64, u32)> = self.df.iter().map(|(&h, &n)| (h, n)).collect();
        v.sort_unstable();
        v
    }

    /// Entries.
    pub fn len(&self) -> usize {
        self.df.len()
    }

    /// True when the order is hash order alone.
    pub fn is_empty(&self) -> bool {
        self.df.is_empty()
    }

    fn key(&self, h: u64) -> (u32, u64) {
        if self.df.is_empty() {
            return (0, h);
        }
        let (w, bits) = filter_bits(h, self.filter.len());
        if self.filter[w] & bits != bits {
            return (0, h);
        }
        (self.df.get(&h).copied().unwrap_or(0), h)
    }

    /// The prefix of `set` (ascending) at threshold `t`: its first [`prefix_len`] shingles in
    /// this order, in this order.
    ///
    /// Shingles outside the table come first, by hash — the set's own order. So the set is
    /// walked from its start, and those are taken until the prefix is full: at 0.9 a prefix is
    /// a tenth of the set, and most of it is read only when most of its shingles are frequent.
    /// Only then do the frequent ones seen fill the rest, by (frequency, hash).
    pub fn prefix(&self, set: &[u64], t: f64) -> Vec<u64> {
        let mut out = Vec::with_capacity(prefix_len(set.len(), t));
        self.prefix_into(set, t, &mut out, &mut Vec::new());
        out
    }

    /// [`Order::prefix`] into `out`, with `frequent` for the frequent shingles seen (both
    /// emptied first: buffers a thread reuses).
    pub fn prefix_into(
        &self,
        set: &[u64],
        t: f64,
        out: &mut Vec<u64>,
        frequent: &mut Vec<(u32, u64)>,
    ) {
        debug_assert!(set.is_sorted());
        out.clear();
        frequent.clear();
        let p = prefix_len(set.len(), t);
        for &h in set {
            if out.len() == p {
                return;
            }
            match self.key(h) {
                (0, h) => out.push(h),
                k => frequent.push(k),
            }
        }
        let rest = p - out.len();
        if rest < frequent.len() {
            frequent.select_nth_unstable(rest);
            frequent.truncate(rest);
        }
        frequent.sort_unstable();
        out.extend(frequent.iter().map(|&(_, h)| h));
    }
}

/// Shingles a [`PrefixBuf`] holds without an allocation of its own: the prefix at 0.9 of a
/// set of up to about 280.
const INLINE: usize = 30;

/// A document's prefix, held inline up to [`INLINE`] shingles. It is made where the document
/// is hashed and dropped after its write, often on the pool's other thread, and a block freed
/// on another thread than the one that allocated it waits for that thread's allocator lock
/// (measured: a fifth of the waits of an exact ingest's threads).
#[derive(Clone, Debug)]
#[allow(clippy::large_enum_variant)] // the inline variant is the point
pub enum PrefixBuf {
    /// Up to [`INLINE`] shingles: how many, and them.
    Inline(u8, [u64; INLINE]),
    /// More.
    Heap(Box<[u64]>),
}

impl PrefixBuf {
    /// A copy of `shingles`.
    pub fn new(shingles: &[u64]) -> PrefixBuf {
        match shingles.len() {
            n @ 0..=INLINE => {
                let mut v = [0; INLINE];
                v[..n].copy_from_slice(shingles);
                PrefixBuf::Inline(n as u8, v)
            }
            _ => PrefixBuf::Heap(shingles.into()),
        }
    }
}

impl std::ops::Deref for PrefixBuf {
    type Target = [u64];
    fn deref(&self) -> &[u64] {
        match self {
            PrefixBuf::Inline(n, v) => &v[..*n as usize],
            PrefixBuf::Heap(v) => v,
        }
    }
}

impl PartialEq for PrefixBuf {
    fn eq(&self, other: &PrefixBuf) -> bool {
        **self == **other
    }
}

impl Eq for PrefixBuf {}

/// The filter word of shingle `h` and its two bits in it (`words` a power of two).
fn filter_bits(h: u64, words: usize) -> (usize, u64) {
    let w = (h >> 12) as usize & (words - 1);
    (w, 1 << (h & 63) | 1 << ((h >> 6) & 63))
}

/// The least overlap a set of `n` shingles has with any set at Jaccard ≥ `t` from it, ⌈t·n⌉,
/// computed so that rounding can only make it smaller (a longer prefix: never a missed pair).
pub fn min_overlap(n: usize, t: f64) -> usize {
    let x = t * n as f64 - 1e-9 * (n as f64).max(1.0);
    (x.ceil().max(1.0) as usize).min(n.max(1))
}

/// The prefix shingles a candidate must share with a document: two, unless its sets can be
/// near-duplicates sharing one shingle only.
pub const SHARED: usize = 2;

/// Prefix length of a set of `n` shingles at threshold `t`: n − ⌈t·n⌉ + [`SHARED`], at most n.
pub fn prefix_len(n: usize, t: f64) -> usize {
    match n {
        0 => 0,
        n => (n - min_overlap(n, t) + SHARED).min(n),
    }
}

/// The prefix shingles a stored set must share with the prefix at `t` of a set of `n` to be a
/// candidate: min([`SHARED`], ⌈t·n⌉).
pub fn shared_needed(n: usize, t: f64) -> usize {
    SHARED.min(min_overlap(n, t))
}

/// How a store that verifies exactly indexes its documents: its order and threshold.
#[derive(Debug, Clone, PartialEq)]
pub struct Prefixer {
    /// The global order.
    pub order: std::sync::Arc<Order>,
    /// The threshold prefixes are indexed at (the store's lowest).
    pub t0: f64,
}

impl Prefixer {
    /// The indexed prefix of a stored set.
    pub fn indexed(&self, set: &[u64]) -> Vec<u64> {
        self.order.prefix(set, self.t0)
    }
}

/// The distinct values of `hits` (one per prefix shingle a stored set shares) that occur at
/// least `need` times, ascending.
pub fn sharing<T: Ord + Copy>(mut hits: Vec<T>, need: usize) -> Vec<T> {
    hits.sort_unstable();
    let mut out = Vec::new();
    for run in hits.chunk_by(|a, b| a == b) {
        if run.len() >= need {
            out.push(run[0]);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Any two sets at Jaccard ≥ t (t ≥ t0) share a shingle of the indexed prefix of one and
    /// the probing prefix of the other: random sets, orders and thresholds, against the rule.
    #[test]
    fn prefixes_of_similar_sets_always_meet() {
        let mut s = 12345u64;
        let mut next = move || {
            s = crate::sample::splitmix64(&mut s);
            s
        };
        let orders = [
            Order::default(),
            Order::from_entries((0..40u64).map(|h| (h, (h % 7) as u32 + 2))),
        ];
        let mut pairs = 0;
        for round in 0..3000 {
            let n = 1 + (next() % 60) as usize;
            let a: Vec<u64> = {
                let mut v: Vec<u64> = (0..n).map(|_| next() % 80).collect();
                v.sort_unstable();
                v.dedup();
                v
            };
            let mut b = a.clone();
            for _ in 0..next() % 6 {
                let i = (next() % b.len() as u64) as usize;
                b[i] = next() % 80;
            }
            b.sort_unstable();
            b.dedup();
            let inter = a.iter().filter(|x| b.binary_search(x).is_ok()).count();
            let j = inter as f64 / (a.len() + b.len() - inter) as f64;
            let order = &orders[round % 2];
            for t0 in [0.5, 0.7, 0.9, 1.0] {
                for t in [t0, (t0 + 1.0) / 2.0] {
                    if j < t {
                        continue;
                    }
                    pairs += 1;
                    let ia = order.prefix(&a, t0);
                    // The definition: the set's first shingles by (frequency, hash).
                    let mut keys: Vec<(u32, u64)> = a.iter().map(|&h| order.key(h)).collect();
                    keys.sort_unstable();
                    keys.truncate(prefix_len(a.len(), t0));
                    let want: Vec<u64> = keys.into_iter().map(|k| k.1).collect();
                    assert_eq!(ia, want, "{a:?} at {t0}");
                    let pb = order.prefix(&b, t);
                    let shared = ia.iter().filter(|x| pb.contains(x)).count();
                    assert!(
                        shared >= shared_needed(b.len(), t),
                        "J {j} >= {t} (t0 {t0}): {a:?} / {b:?}"
                    );
                }
            }
        }
        assert!(pairs > 1000, "{pairs}");
        assert_eq!(prefix_len(10, 0.9), 3);
        assert_eq!(prefix_len(1, 0.9), 1);
        assert_eq!(prefix_len(100, 1.0), 2);
        assert_eq!((shared_needed(1, 0.9), shared_needed(2, 0.5), shared_needed(3, 0.9)), (1, 1, 2));
    }
}
