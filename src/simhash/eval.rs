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

/// The distinct hashes of a text's word n-shingles, ascending (the ground truth's sets).
pub fn shingle_set(text: &str, n: usize) -> Vec<u64> {
    let mut v: Vec<u64> = super::shingle_features(text, n)
        .into_iter()
        .map(|(h, _)| h)
        .collect();
    v.sort_unstable();
    v
}

/// Jaccard similarity of two ascending distinct sets.
pub fn jaccard(a: &[u64], b: &[u64]) -> f64 {
    let (mut i, mut j, mut inter) = (0, 0, 0usize);
    while i < a.len() && j < b.len() {
        match a[i].cmp(&b[j]) {
            std::cmp::Ordering::Less => i += 1,
            std::cmp::Ordering::Greater => j += 1,
            std::cmp::Ordering::Equal => {
                inter += 1;
                i += 1;
                j += 1;
            }
        }
    }
    let union = a.len() + b.len() - inter;
    if union == 0 {
        1.0
    } else {
        inter as f64 / union as f64
    }
}

/// The word-shingle size of the ground truth and of verification.
pub const TRUTH_SHINGLE: usize = 3;

/// Verification: of the candidate pairs `(i, j, distance)`, those whose sets have Jaccard ≥ `t`,
/// as `(i, j, distance, jaccard)`, in candidate order; on all cores. Pairs with an empty set are
/// dropped (a document without shingles is nobody's near-duplicate). The cost is one merge of
/// two sorted sets per candidate: linear in the candidates, nothing quadratic.
///
/// ```
/// use simdex::simhash::eval::{shingle_set, verify};
/// let sets: Vec<Vec<u64>> = ["a b c d e f g", "a b c d e f g h", "x y z w v"]
///     .iter()
///     .map(|t| shingle_set(t, 3))
///     .collect();
/// let kept = verify(&sets, &[(0, 1, 4), (0, 2, 6)], 0.8);
/// assert_eq!(kept.len(), 1);
/// assert_eq!((kept[0].0, kept[0].1), (0, 1)); // 5 of 6 shingles shared: 0.83
/// ```
pub fn verify(
    sets: &[Vec<u64>],
    candidates: &[(u32, u32, u32)],
    t: f64,
) -> Vec<(u32, u32, u32, f64)> {
    candidates
        .par_iter()
        .with_min_len(256)
        .filter_map(|&(i, j, d)| {
            verify_pair(&sets[i as usize], &sets[j as usize], t).map(|jac| (i, j, d, jac))
        })
        .collect()
}

/// The rule [`verify`] applies to one pair of shingle sets: their Jaccard if it is at least
/// `t`, else `None` (and `None` if either set is empty).
pub fn verify_pair(a: &[u64], b: &[u64], t: f64) -> Option<f64> {
    if a.is_empty() || b.is_empty() {
        return None;
    }
    // Size filter: |A ∩ B| <= min, |A ∪ B| >= max, so J <= min / max.
    let (lo, hi) = (a.len().min(b.len()), a.len().max(b.len()));
    if (lo as f64) < t * hi as f64 {
        return None;
    }
    jaccard_at_least(a, b, t)
}

/// The default candidate distance of verified dedup (`simdex dedup --verify`, `simdex.dedup(verify=)`,
/// `simdex.spark.dedup(verify=)`): near-duplicates at Jaccard 0.9 of template-heavy pages lie up
/// to 10-12 bits apart (measured; BENCHMARKS.md).
pub const DEFAULT_CANDIDATE_K: u32 = 11;
/// The largest candidate distance of verified dedup.
pub const MAX_CANDIDATE_K: u32 = 16;
/// Most documents whose candidates come from the all-pairs scan (beyond the index's k): n²/2
/// popcounts, 500 000 documents about two minutes on one core. The same budget everywhere.
pub const MAX_SCAN_DOCS: usize = 500_000;

/// Verification without materialized candidates: every pair (i, j), i < j, with
/// `fps[i]` and `fps[j]` within `k` bits (any k, beyond the index's 7) and sets of Jaccard ≥ `t`,
/// as `(i, j, distance, jaccard)` sorted; and the number of candidates. The candidate scan is
/// n²/2 XOR-and-popcounts on all cores (about 1 ns each: 0.1 s at 17 000 documents, 5 s at
/// 100 000), so callers bound n (`dedup --verify` does above 7 bits).
pub fn verify_scan(
    fps: &[u64],
    sets: &[Vec<u64>],
    k: u32,
    t: f64,
) -> (Vec<(u32, u32, u32, f64)>, u64) {
    let n = fps.len();
    let (mut out, candidates) = (0..n)
        .into_par_iter()
        .with_min_len(64)
        .fold(
            || (Vec::new(), 0u64),
            |(mut out, mut c), i| {
                let (fi, a) = (fps[i], &sets[i]);
                for j in i + 1..n {
                    let d = (fi ^ fps[j]).count_ones();
                    if d > k {
                        continue;
                    }
                    c += 1;
                    if let Some(jac) = verify_pair(a, &sets[j], t) {
                        out.push((i as u32, j as u32, d, jac));
                    }
                }
                (out, c)
            },
        )
        .reduce(
            || (Vec::new(), 0),
            |(mut a, ca), (b, cb)| {
                a.extend(b);
                (a, ca + cb)
            },
        );
    out.sort_unstable_by_key(|p| (p.0, p.1));
    (out, candidates)
}

/// The Jaccard similarity of two ascending distinct sets if it is at least `t`, else `None`,
/// stopping the merge as soon as too many elements were found on one side only: J ≥ t needs
/// |A ∩ B| ≥ t (|A| + |B|) / (1 + t), so at most |A| + |B| − 2 ⌈that⌉ elements may be
/// unmatched. Pairs far below `t` (template siblings among candidates) cost a few percent of a
/// full merge.
pub fn jaccard_at_least(a: &[u64], b: &[u64], t: f64) -> Option<f64> {
    let total = a.len() + b.len();
    let need = ((t * total as f64) / (1.0 + t) - 1e-9).ceil().max(0.0) as usize;
    let budget = total.checked_sub(2 * need)?;
    let (mut i, mut j, mut inter, mut miss) = (0, 0, 0usize, 0usize);
    while i < a.len() && j < b.len() {
        match a[i].cmp(&b[j]) {
            std::cmp::Ordering::Less => {
                i += 1;
                miss += 1;
            }
            std::cmp::Ordering::Greater => {
                j += 1;
                miss += 1;
            }
            std::cmp::Ordering::Equal => {
                inter += 1;
                i += 1;
                j += 1;
                continue;
            }
        }
        if miss > budget {
            return None;
        }
    }
    let union = total - inter;
    let jac = if union == 0 {
        1.0
    } else {
        inter as f64 / union as f64
    };
    (jac >= t).then_some(jac)
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
            assert_eq!(similar_pairs(&sets, t), want, "t = {t}");
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
        let rows = evaluate(&fps, &HashSet::new(), &truth, 2);
        // Distances: (0,1)=1 (0,2)=2 (1,2)=1 (0,3)=8 (1,3)=7 (2,3)=6.
        assert_eq!(rows[0].true_positives + rows[0].false_positives, 0);
        assert_eq!((rows[1].true_positives, rows[1].false_positives), (1, 1));
        assert_eq!((rows[2].true_positives, rows[2].false_positives), (1, 2));
        assert_eq!(rows[2].false_negatives, 1);
        assert_eq!(rows[2].precision(), Some(1.0 / 3.0));
        assert_eq!(rows[2].recall(), Some(0.5));
    }
}
