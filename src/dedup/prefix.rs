//! The prefix filter: a few bytes per document that rule out, exactly, the candidate pairs that
//! cannot reach a Jaccard threshold, before any shingle set is computed again.
//!
//! Put every shingle in one global order. If J(A, B) ≥ t, the two sets share o ≥ t·|A ∪ B| ≥
//! ⌈t·max(|A|, |B|)⌉ shingles; the first shared shingle in the order comes after at most
//! |A| − o shingles of A that B lacks, so it is among the first |A| − o + 1 of A, and likewise
//! among the first |B| − o + 1 of B. A set's *prefix* here is its first |A| − ⌊t·|A|⌋ + 1
//! shingles (at least that many, since ⌊t·|A|⌋ ≤ ⌈t·|A|⌉ ≤ o): two sets at Jaccard ≥ t always
//! share a prefix shingle, and a pair whose prefixes share none is dropped without its sets.
//! The size rule of exact verification ([`verify_pair`](super::verify::verify_pair): the
//! smaller set at least t times the larger) is applied too, as written there. This is the
//! prefix filtering of set-similarity joins (Chaudhuri, Ganti and Kaushik, ICDE 2006; Bayardo,
//! Ma and Srikant, WWW 2007), used here after the fingerprints' candidates, not instead of them.
//!
//! The filter never drops a pair that verification would keep, whatever the order; the order
//! decides only how many pairs pass. Rare shingles first: document frequencies are counted on
//! the first rows given (up to [`ORDER_SAMPLE`]), and a shingle is ordered by (frequency there,
//! hash), so that the phrases many texts share (a site's template, "one of the") are not what
//! prefixes meet on. At t = 0.9 a prefix is a tenth of the set, kept as 32 bits of each
//! shingle's hash: about a fortieth of the set's bytes. Equal shingles have equal bits, so a
//! pair sharing a prefix shingle always passes; distinct shingles agreeing on 32 bits only let
//! a pair through to exact verification.

use std::collections::HashMap;

use rayon::prelude::*;

use super::candidates::pairs_among;
use crate::error::{Error, Result};
use crate::progress::ProgressHandle;
use crate::simhash::BuildIdentity;

/// Rows whose shingles' document frequencies order every prefix: the first rows given.
pub const ORDER_SAMPLE: usize = 16_384;

/// The prefixes of rows `0..len()` for threshold `t` (see the module docs).
#[derive(Debug)]
pub struct Prefixes {
    t: f64,
    /// Document frequency among the sample of each shingle seen there more than once; `None`
    /// until the first rows arrive.
    order: Option<HashMap<u64, u32, BuildIdentity>>,
    /// Each row's set size.
    sizes: Vec<u32>,
    /// Row `r`'s prefix is `values[starts[r]..starts[r + 1]]`: 32 bits of each of its shingles'
    /// hashes, ascending.
    starts: Vec<u64>,
    values: Vec<u32>,
}

impl Prefixes {
    /// Rows whose shingles' document frequencies order every prefix: the first rows given.
    pub const ORDER_SAMPLE: usize = crate::dedup::prefix::ORDER_SAMPLE;

    /// No rows yet, for Jaccard threshold `t` in (0, 1].
    pub fn new(t: f64) -> Result<Prefixes> {
        if !(t > 0.0 && t <= 1.0) {
            return Err(Error::InvalidArgument(format!(
                "a Jaccard threshold of {t} is not in (0, 1]"
            )));
        }
        Ok(Prefixes {
            t,
            order: None,
            sizes: Vec::new(),
            starts: vec![0],
            values: Vec::new(),
        })
    }

    /// Bytes of every row's shingle set as a verification pass holds them (8 a shingle).
    pub fn set_bytes(&self) -> u64 {
        self.sizes.iter().map(|&s| s as u64 * 8).sum()
    }

    /// Rows held.
    pub fn len(&self) -> usize {
        self.sizes.len()
    }

    /// Whether no row is held.
    pub fn is_empty(&self) -> bool {
        self.sizes.is_empty()
    }

    /// Append the rows of `sets` (each ascending and distinct, as
    /// [`shingle_set_with`](super::verify::shingle_set_with) gives them), on all cores. The
    /// first call's first [`ORDER_SAMPLE`](Prefixes::ORDER_SAMPLE) rows fix the order: give it
    /// that many where there
    /// are (any order is exact; a poor one lets more pairs through).
    pub fn push(&mut self, sets: &[Vec<u64>]) -> Result<()> {
        if let Some(s) = sets.iter().find(|s| u32::try_from(s.len()).is_err()) {
            return Err(Error::InvalidArgument(format!(
                "a document of {} shingles: verification takes at most 2^32 - 1",
                s.len()
            )));
        }
        let order = self
            .order
            .get_or_insert_with(|| learn_order(&sets[..sets.len().min(ORDER_SAMPLE)]));
        let t = self.t;
        let prefixes: Vec<Vec<u32>> = sets
            .par_iter()
            .with_min_len(64)
            .map(|s| prefix(s, t, order))
            .collect();
        for (s, p) in sets.iter().zip(prefixes) {
            self.sizes.push(s.len() as u32);
            self.values.extend_from_slice(&p);
            self.starts.push(self.values.len() as u64);
        }
        Ok(())
    }

    /// Whether rows `a` and `b` may have Jaccard ≥ t: false only if they cannot (an empty set,
    /// sizes too far apart, or prefixes sharing nothing).
    pub fn may_reach(&self, a: u32, b: u32) -> bool {
        self.sizes_may_reach(a, b) && self.first_shared(a, b).is_some()
    }

    /// Whether the set sizes of rows `a` and `b` allow Jaccard ≥ t: both sets non-empty, the
    /// smaller at least t times the larger (as verify_pair writes it, so that both drop the
    /// same pairs).
    fn sizes_may_reach(&self, a: u32, b: u32) -> bool {
        let (sa, sb) = (self.sizes[a as usize], self.sizes[b as usize]);
        let (lo, hi) = (sa.min(sb), sa.max(sb));
        lo > 0 && (lo as f64) >= self.t * hi as f64
    }

    /// Bytes held: prefixes, sizes, offsets and the order's table.
    pub fn memory_bytes(&self) -> u64 {
        let order = self.order.as_ref().map_or(0, |m| m.capacity() * 13);
        (self.values.capacity() * 4
            + self.starts.capacity() * 8
            + self.sizes.capacity() * 4
            + order) as u64
    }
}

impl Prefixes {
    /// The prefix join: every pair of rows `(a, b, distance)`, `a < b`, whose `fps` lie within
    /// `k` bits and which may reach the threshold ([`Self::may_reach`]), found from the rows
    /// that share a prefix shingle (the inverted lists of the prefixes) instead of from the
    /// fingerprints. The same pairs as joining the fingerprints within `k` and filtering, at a
    /// cost that depends on how many rows share prefix shingles rather than on how clumped
    /// the fingerprints are (template pages, where nearly every pair lies within k, and a
    /// Zipfian corpus's 440 million clumped candidates at 10M both shrink to about the pairs
    /// that are near-duplicates). Sorted.
    ///
    /// The lists take 8 to 16 bytes per prefix shingle, built a share of the shingle values at
    /// a time to stay within `mem_bytes / 4`. `None` (nothing decided) when the lists hold more
    /// than `max_shared` pairs of rows (many rows sharing prefix shingles: sets almost all
    /// alike, or a tiny threshold), where joining the fingerprints costs less, or when the
    /// pairs found would take more than half of `mem_bytes`.
    pub fn join(
        &self,
        fps: &[u64],
        k: u32,
        mem_bytes: u64,
        max_shared: u64,
        progress: &ProgressHandle,
    ) -> Result<Option<Vec<(u32, u32, u32)>>> {
        if fps.len() != self.len() {
            return Err(Error::InvalidArgument(format!(
                "{} fingerprints for prefixes of {} rows",
                fps.len(),
                self.len()
            )));
        }
        super::candidates::check_rows(fps.len())?;
        let entries = self.values.len() as u64;
        // A part holds its entries (8 bytes) and, at worst, a list per two of them (16).
        let parts = (entries * 16)
            .div_ceil((mem_bytes / 4).max(1))
            .clamp(1, 1 << 16);
        progress.stage("prefix join", Some(parts))?;
        let (mut shared, mut out) = (0u64, Vec::new());
        for part in 0..parts {
            // (value, row) of this part's values, sorted: the inverted lists.
            let mut lists: Vec<(u32, u32)> = (0..self.len())
                .into_par_iter()
                .with_min_len(4096)
                .flat_map_iter(|r| {
                    self.prefix(r)
                        .iter()
                        .filter(move |&&v| u64::from(v) % parts == part)
                        .map(move |&v| (v, r as u32))
                })
                .collect();
            lists.par_sort_unstable();
            // The lists of two rows or more (most values are one row's: not collected).
            let runs: Vec<&[(u32, u32)]> = lists
                .chunk_by(|a, b| a.0 == b.0)
                .filter(|l| l.len() > 1)
                .collect();
            shared += runs.iter().map(|l| pairs_among(l.len())).sum::<u64>();
            if shared > max_shared {
                progress.finish();
                return Ok(None);
            }
            // A pair is taken in the list of the first prefix value its rows share, so once.
            let found: Vec<(u32, u32, u32)> = runs
                .par_iter()
                .flat_map(|l| {
                    (0..l.len()).into_par_iter().flat_map_iter(move |i| {
                        l[i + 1..].iter().filter_map(move |&(v, b)| {
                            let a = l[i].1;
                            debug_assert!(a < b);
                            let d = (fps[a as usize] ^ fps[b as usize]).count_ones();
                            (d <= k
                                && self.sizes_may_reach(a, b)
                                && self.first_shared(a, b) == Some(v))
                            .then_some((a, b, d))
                        })
                    })
                })
                .collect();
            out.extend(found);
            // The pairs found are held until verified: beyond half of the budget, the
            // fingerprint join (which lists them a part at a time) takes over.
            if out.len() as u64 * 12 > mem_bytes / 2 {
                progress.finish();
                return Ok(None);
            }
            progress.advance(1)?;
        }
        progress.finish();
        out.par_sort_unstable();
        Ok(Some(out))
    }

    /// Row `r`'s prefix values.
    fn prefix(&self, r: usize) -> &[u32] {
        &self.values[self.starts[r] as usize..self.starts[r + 1] as usize]
    }

    /// The smallest value the prefixes of rows `a` and `b` share.
    fn first_shared(&self, a: u32, b: u32) -> Option<u32> {
        let (pa, pb) = (self.prefix(a as usize), self.prefix(b as usize));
        let (mut i, mut j) = (0, 0);
        while i < pa.len() && j < pb.len() {
            match pa[i].cmp(&pb[j]) {
                std::cmp::Ordering::Less => i += 1,
                std::cmp::Ordering::Greater => j += 1,
                std::cmp::Ordering::Equal => return Some(pa[i]),
            }
        }
        None
    }
}

/// The document frequencies, among `sample`, of the shingles found in more than one of its
/// sets (a shingle seen once is as rare as one never seen).
fn learn_order(sample: &[Vec<u64>]) -> HashMap<u64, u32, BuildIdentity> {
    let mut df: HashMap<u64, u32, BuildIdentity> = HashMap::default();
    for s in sample {
        for &h in s {
            *df.entry(h).or_insert(0) += 1;
        }
    }
    df.retain(|_, c| *c > 1);
    df.shrink_to_fit();
    df
}

/// The prefix of `set` at threshold `t` under `order`: its first |set| − ⌊t·|set|⌋ + 1 shingles
/// by (frequency, hash), as their hashes' low 32 bits, ascending.
fn prefix(set: &[u64], t: f64, order: &HashMap<u64, u32, BuildIdentity>) -> Vec<u32> {
    let s = set.len();
    // ⌊t·s⌋ computed in floating point is at most ⌈t·s⌉ however it rounds: never too long a
    // cut, so never too short a prefix.
    let len = (s - ((t * s as f64).floor() as usize).min(s) + 1).min(s);
    if len == 0 {
        return Vec::new();
    }
    let mut keyed: Vec<(u32, u64)> = set
        .iter()
        .map(|&h| (order.get(&h).copied().unwrap_or(0), h))
        .collect();
    if len < s {
        keyed.select_nth_unstable(len - 1);
    }
    let mut p: Vec<u32> = keyed[..len].iter().map(|&(_, h)| h as u32).collect();
    p.sort_unstable();
    // Two shingles agreeing on 32 bits are one value: a row is in a value's list once.
    p.dedup();
    p
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dedup::verify::verify_pair;

    /// The filter drops no pair that verification keeps (every pair of a clumpy family of
    /// sets, at several thresholds, with a sample that orders the common shingles last and with
    /// one that saw nothing), and drops most of those it rejects.
    #[test]
    fn the_filter_keeps_every_pair_verification_keeps() {
        let mut next = crate::dedup::xorshift(5);
        // Sets sharing a common "template" of shingles 0..40, plus variants of 20 bases with a
        // few shingles swapped, plus sizes from 1 to 200.
        let bases: Vec<Vec<u64>> = (0..20)
            .map(|b| {
                let n = 1 + (next() % 200) as usize;
                (0..n as u64).map(|i| (b * 1000 + i) * 0x9E37).collect()
            })
            .collect();
        let mut sets: Vec<Vec<u64>> = Vec::new();
        for _ in 0..300 {
            let mut s = bases[(next() % 20) as usize].clone();
            for _ in 0..next() % 4 {
                let i = (next() % s.len() as u64) as usize;
                s[i] = next();
            }
            if next().is_multiple_of(2) {
                s.extend((0..40u64).map(|i| i * 7 + 1));
            }
            s.sort_unstable();
            s.dedup();
            sets.push(s);
        }
        sets.push(Vec::new());
        for t in [0.5, 0.8, 0.9, 0.97, 1.0] {
            // Dropped pairs with an order learned from all sets, and with none.
            let mut dropped = [0usize; 2];
            for (o, sample) in [sets.len(), 0].into_iter().enumerate() {
                let mut p = Prefixes::new(t).unwrap();
                p.push(&sets[..sample]).unwrap();
                p.push(&sets[sample..]).unwrap();
                assert_eq!(p.len(), sets.len());
                let (mut kept, mut rejected) = (0, 0);
                for a in 0..sets.len() {
                    for b in a + 1..sets.len() {
                        let exact = verify_pair(&sets[a], &sets[b], t).is_some();
                        let pass = p.may_reach(a as u32, b as u32);
                        assert!(pass || !exact, "t {t}: pair {a} {b} dropped");
                        kept += usize::from(exact);
                        rejected += usize::from(!exact);
                        dropped[o] += usize::from(!pass);
                    }
                }
                assert!(kept > 50, "t {t}: {kept}");
                assert!(
                    dropped[o] * 4 > rejected * 3,
                    "t {t}: {dropped:?} of {rejected}"
                );
                // Ordered by the sample, the common shingles (the "template") come last.
                assert!(
                    o == 1 || dropped[0] * 100 > rejected * 98,
                    "t {t}: {dropped:?} of {rejected}"
                );
            }
            assert!(dropped[0] >= dropped[1], "t {t}: {dropped:?}");
        }
        assert!(Prefixes::new(0.0).is_err() && Prefixes::new(1.5).is_err());
    }

    /// The prefix join gives exactly the pairs within k that the filter lets through, in any
    /// number of parts, and declines when its lists share more pairs than allowed.
    #[test]
    fn the_prefix_join_is_the_filtered_join() {
        let mut next = crate::dedup::xorshift(9);
        // Families of near-equal sets (some families share a common block of shingles), with
        // fingerprints near their family's; a few rows empty or repeated exactly.
        let fams: Vec<(u64, Vec<u64>)> = (0..25)
            .map(|f| {
                let n = 5 + (next() % 60) as usize;
                let mut s: Vec<u64> = (0..n).map(|_| next() % 4000).collect();
                if f % 3 == 0 {
                    s.extend(10_000..10_030);
                }
                (next(), s)
            })
            .collect();
        let (mut fps, mut sets) = (Vec::new(), Vec::new());
        for r in 0..500 {
            let (fp, set) = &fams[(next() % 25) as usize];
            let mut f = *fp;
            for _ in 0..next() % 9 {
                f ^= 1 << (next() % 64);
            }
            let mut s = set.clone();
            for _ in 0..next() % 4 {
                let i = (next() % s.len() as u64) as usize;
                s[i] = next() % 4000;
            }
            if r % 97 == 0 {
                s.clear();
            }
            s.sort_unstable();
            s.dedup();
            fps.push(f);
            sets.push(s);
        }
        let none = ProgressHandle::none();
        for (t, k) in [(0.8, 11), (0.9, 5), (0.5, 16)] {
            let mut p = Prefixes::new(t).unwrap();
            p.push(&sets).unwrap();
            let mut want = Vec::new();
            for a in 0..sets.len() {
                for b in a + 1..sets.len() {
                    let d = (fps[a] ^ fps[b]).count_ones();
                    if d <= k && p.may_reach(a as u32, b as u32) {
                        want.push((a as u32, b as u32, d));
                    }
                }
            }
            assert!(want.len() > 500, "t {t}: {}", want.len());
            // Several parts of the lists below a megabyte; beyond half of the budget, the pairs
            // found are declined.
            for mem in [1 << 30, 1 << 20, 1 << 16, 1 << 12] {
                let got = p.join(&fps, k, mem, u64::MAX, &none).unwrap();
                let fits = want.len() as u64 * 12 <= mem / 2;
                assert_eq!(
                    got.as_ref(),
                    fits.then_some(&want),
                    "t {t}, k {k}, mem {mem}"
                );
            }
            assert_eq!(p.join(&fps, k, 1 << 30, 10, &none).unwrap(), None);
            assert!(p.join(&fps[1..], k, 1 << 30, u64::MAX, &none).is_err());
        }
    }

    /// A prefix is |A| − ⌊t·|A|⌋ + 1 shingles long (the whole set when that is more), and the
    /// shingles the sample saw most come last.
    #[test]
    fn prefixes_have_the_documented_length_and_order() {
        let set: Vec<u64> = (1..=200).collect();
        let none = HashMap::default();
        assert_eq!(prefix(&set, 0.9, &none).len(), 21);
        assert_eq!(prefix(&set, 1.0, &none).len(), 1);
        assert_eq!(prefix(&set[..3], 0.1, &none).len(), 3);
        assert!(prefix(&[], 0.9, &none).is_empty());
        // Shingles 1..=21 were common in the sample: the prefix takes the rarest instead.
        let mut order: HashMap<u64, u32, BuildIdentity> = HashMap::default();
        for h in 1..=21 {
            order.insert(h, 5);
        }
        let want: Vec<u32> = (22..=42).collect();
        assert_eq!(prefix(&set, 0.9, &order), want);
    }
}
