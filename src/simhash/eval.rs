//! Calibration: how well "fingerprints within k bits" predicts "near-duplicate text", measured
//! against an exact ground truth, so that a user can choose k (and the shingle size) for their
//! own corpus (`simdex calibrate`).
//!
//! Ground truth: two documents are near-duplicates when the Jaccard similarity of their sets of
//! word 3-shingles is at least a threshold (0.9 by default). It is computed exactly, for all
//! pairs, with the prefix-filtering similarity join (Chaudhuri et al. 2006; Bayardo et al.
//! 2007): with every set sorted in one global order, two sets with Jaccard ≥ t share at least one
//! element among the first `|A| − ⌈t·|A|⌉ + 1` of each; only pairs sharing such a prefix element
//! (and passing the size filter) have their Jaccard computed.

use std::collections::{HashMap, HashSet};

use rayon::prelude::*;

#[allow(unused_imports)] // the `internals` feature's users (tests, benches) take these
pub use crate::dedup::verify::{TRUTH_SHINGLE, jaccard, jaccard_at_least, shingle_set};


/// Precision and recall of "distance ≤ k" at one k.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Row {
    /// The distance threshold.
    pub k: u32,
    /// Pairs within k that are near-duplicates.
    pub true_positives: u64,
    /// Pairs within k that are not.
    pub false_positives: u64,
    /// Near-duplicate pairs farther than k.
    pub false_negatives: u64,
}

impl Row {
    /// Rows for k = 0..=max_k: every pair of `fps` (excluding indexes in `skip`) against `truth`.
    pub fn evaluate(
        fps: &[u64],
        skip: &HashSet<u32>,
        truth: &HashSet<(u32, u32)>,
        max_k: u32,
    ) -> Vec<Row> {
        // Pairs by distance (≤ max_k), and how many of them are true.
        let (all, hits) = (0..fps.len())
            .into_par_iter()
            .filter(|i| !skip.contains(&(*i as u32)))
            .map(|i| {
                let mut all = vec![0u64; max_k as usize + 1];
                let mut hits = vec![0u64; max_k as usize + 1];
                for j in i + 1..fps.len() {
                    let d = (fps[i] ^ fps[j]).count_ones();
                    if d <= max_k && !skip.contains(&(j as u32)) {
                        all[d as usize] += 1;
                        if truth.contains(&(i as u32, j as u32)) {
                            hits[d as usize] += 1;
                        }
                    }
                }
                (all, hits)
            })
            .reduce(
                || (vec![0; max_k as usize + 1], vec![0; max_k as usize + 1]),
                |(mut a, mut h), (b, g)| {
                    for d in 0..a.len() {
                        a[d] += b[d];
                        h[d] += g[d];
                    }
                    (a, h)
                },
            );
        let total = truth.len() as u64;
        let (mut within, mut tp) = (0u64, 0u64);
        (0..=max_k)
            .map(|k| {
                within += all[k as usize];
                tp += hits[k as usize];
                Row {
                    k,
                    true_positives: tp,
                    false_positives: within - tp,
                    false_negatives: total - tp,
                }
            })
            .collect()
    }

    /// Every pair (i, j), i < j, of non-empty sets with Jaccard ≥ `t` (0 < t ≤ 1), exactly.
    pub fn similar_pairs(sets: &[Vec<u64>], t: f64) -> Vec<(u32, u32)> {
        let prefix = |s: &[u64]| s.len() - (t * s.len() as f64).ceil() as usize + 1;
        let mut inverted: HashMap<u64, Vec<u32>> = HashMap::new();
        for (i, s) in sets.iter().enumerate() {
            if s.is_empty() {
                continue;
            }
            for &h in &s[..prefix(s).min(s.len())] {
                inverted.entry(h).or_default().push(i as u32);
            }
        }
        let mut out: Vec<(u32, u32)> = (0..sets.len())
            .into_par_iter()
            .flat_map_iter(|i| {
                let a = &sets[i];
                let mut cands: HashSet<u32> = HashSet::new();
                if !a.is_empty() {
                    for &h in &a[..prefix(a).min(a.len())] {
                        for &j in &inverted[&h] {
                            if j as usize > i {
                                cands.insert(j);
                            }
                        }
                    }
                }
                cands
                    .into_iter()
                    .filter(move |&j| {
                        let b = &sets[j as usize];
                        let (lo, hi) = (a.len().min(b.len()), a.len().max(b.len()));
                        lo as f64 >= t * hi as f64 && jaccard(a, b) >= t
                    })
                    .map(move |j| (i as u32, j))
            })
            .collect();
        out.sort_unstable();
        out
    }

    /// tp / (tp + fp); `None` when nothing is within k.
    pub fn precision(&self) -> Option<f64> {
        let p = self.true_positives + self.false_positives;
        (p > 0).then(|| self.true_positives as f64 / p as f64)
    }

    /// tp / (tp + fn); `None` when there are no near-duplicates.
    pub fn recall(&self) -> Option<f64> {
        let p = self.true_positives + self.false_negatives;
        (p > 0).then(|| self.true_positives as f64 / p as f64)
    }
}


#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefix_filter_join_equals_brute_force() {
        let mut s = 3u64;
        let mut sets: Vec<Vec<u64>> = Vec::new();
        for _ in 0..60 {
            let base: Vec<u64> = (0..40)
                .map(|_| crate::sample::splitmix64(&mut s) % 500)
                .collect();
            for drop in [0usize, 1, 3, 8] {
                let mut v: Vec<u64> = base[drop..].to_vec();
                v.sort_unstable();
                v.dedup();
                sets.push(v);
            }
        }
        sets.push(Vec::new());
        for t in [0.5, 0.8, 0.9, 1.0] {
            let want: Vec<(u32, u32)> = (0..sets.len())
                .flat_map(|i| (i + 1..sets.len()).map(move |j| (i, j)))
                .filter(|&(i, j)| {
                    !sets[i].is_empty() && !sets[j].is_empty() && jaccard(&sets[i], &sets[j]) >= t
                })
                .map(|(i, j)| (i as u32, j as u32))
                .collect();
            assert_eq!(Row::similar_pairs(&sets, t), want, "t = {t}");
        }
    }

    #[test]
    fn early_stopping_jaccard_agrees_with_the_full_merge() {
        let mut s = 9u64;
        for _ in 0..2000 {
            let n = (crate::sample::splitmix64(&mut s) % 60) as usize;
            let mut a: Vec<u64> = (0..n)
                .map(|_| crate::sample::splitmix64(&mut s) % 80)
                .collect();
            let mut b: Vec<u64> = a
                .iter()
                .map(|&x| {
                    if crate::sample::splitmix64(&mut s).is_multiple_of(5) {
                        x + 100
                    } else {
                        x
                    }
                })
                .collect();
            a.sort_unstable();
            a.dedup();
            b.sort_unstable();
            b.dedup();
            for t in [0.3, 0.5, 0.8, 0.9, 1.0] {
                let full = jaccard(&a, &b);
                let want = (full >= t).then_some(full);
                assert_eq!(jaccard_at_least(&a, &b, t), want, "t = {t}, {a:?} {b:?}");
            }
        }
    }

    #[test]
    fn rows_count_pairs_by_distance() {
        let fps = [0u64, 1, 3, 0xFF];
        let truth: HashSet<(u32, u32)> = [(0, 1), (0, 3)].into();
        let rows = Row::evaluate(&fps, &HashSet::new(), &truth, 2);
        // Distances: (0,1)=1 (0,2)=2 (1,2)=1 (0,3)=8 (1,3)=7 (2,3)=6.
        assert_eq!(rows[0].true_positives + rows[0].false_positives, 0);
        assert_eq!((rows[1].true_positives, rows[1].false_positives), (1, 1));
        assert_eq!((rows[2].true_positives, rows[2].false_positives), (1, 2));
        assert_eq!(rows[2].false_negatives, 1);
        assert_eq!(rows[2].precision(), Some(1.0 / 3.0));
        assert_eq!(rows[2].recall(), Some(0.5));
    }
}
