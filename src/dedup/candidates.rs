//! Candidate pairs of a corpus: documents grouped by fingerprint, distinct fingerprints joined
//! within k by the index self-join (k up to an index's 7) or the block join (`wide`, beyond).

use rayon::prelude::*;

use super::Clusters;
use crate::error::{Error, Result};
use crate::index::Pair;
use crate::progress::ProgressHandle;

/// The candidate pairs of a corpus: its documents grouped by fingerprint, and the pairs of
/// distinct fingerprints within `k` from the index self-join (in bounded memory, spilling under
/// a temporary directory). Clusters can be had without listing the pairs ([`Self::clusters`]),
/// which matters when a group of equal fingerprints is large (its pairs are quadratic).
#[derive(Debug)]
pub struct Candidates {
    /// (fingerprint, row), ascending.
    rows: Vec<(u64, u32)>,
    joined: Vec<Pair>,
    n: usize,
}

impl Candidates {
    /// Candidates of documents `0..fps.len()` (at most 2^32) with fingerprints `fps`; rows whose
    /// `skip` entry is true (documents without any feature) take part in nothing.
    pub fn new(
        fps: &[u64],
        skip: Option<&[bool]>,
        k: u32,
        tmp: &std::path::Path,
        mem_bytes: u64,
        progress: &ProgressHandle,
    ) -> Result<Candidates> {
        if u32::try_from(fps.len()).is_err() {
            return Err(Error::InvalidArgument(format!(
                "{} documents: a dedup takes at most 2^32 at once",
                fps.len()
            )));
        }
        if skip.is_some_and(|s| s.len() != fps.len()) {
            return Err(Error::InvalidArgument(
                "skip and fingerprints differ in length".into(),
            ));
        }
        let mut rows: Vec<(u64, u32)> = (0..fps.len())
            .filter(|&r| !skip.is_some_and(|s| s[r]))
            .map(|r| (fps[r], r as u32))
            .collect();
        rows.par_sort_unstable();
        let mut distinct: Vec<u64> = rows.iter().map(|x| x.0).collect();
        distinct.dedup();
        // Within an index's k, the index self-join (bounded memory); beyond it (verification's
        // candidates), the in-memory block join.
        let joined = if k <= crate::design::MAX_K {
            crate::index::self_join(&distinct, k, tmp, mem_bytes, progress)?
        } else {
            super::wide::wide_join(&distinct, k, progress)?
        };
        Ok(Candidates {
            rows,
            joined,
            n: fps.len(),
        })
    }

    /// The rows holding `fp`, ascending.
    fn group(&self, fp: u64) -> &[(u64, u32)] {
        let a = self.rows.partition_point(|x| x.0 < fp);
        let b = self.rows.partition_point(|x| x.0 <= fp);
        &self.rows[a..b]
    }

    /// Distinct fingerprints taking part.
    pub fn distinct(&self) -> usize {
        self.rows.chunk_by(|a, b| a.0 == b.0).count()
    }

    /// How many pairs [`Self::pairs`] would list, without listing them.
    pub fn pair_count(&self) -> u64 {
        let within: u64 = self
            .rows
            .chunk_by(|a, b| a.0 == b.0)
            .map(|g| (g.len() as u64) * (g.len() as u64 - 1) / 2)
            .sum();
        let across: u64 = self
            .joined
            .iter()
            .map(|p| (self.group(p.batch).len() * self.group(p.stored).len()) as u64)
            .sum();
        within + across
    }

    /// The clusters of the candidate pairs, found without listing them: each group of equal
    /// fingerprints is one, and each joined pair of fingerprints links two groups.
    pub fn clusters(&self) -> Clusters {
        let mut c = Clusters::new(self.n);
        for w in self.rows.windows(2) {
            if w[0].0 == w[1].0 {
                c.join(w[0].1 as usize, w[1].1 as usize);
            }
        }
        for p in &self.joined {
            c.join(
                self.group(p.batch)[0].1 as usize,
                self.group(p.stored)[0].1 as usize,
            );
        }
        c
    }

    /// Every pair of rows `(a, b, distance)`, `a < b`, sorted. Quadratic in the size of a group
    /// of equal fingerprints.
    pub fn pairs(&self) -> Vec<(u32, u32, u32)> {
        let mut out = Vec::new();
        for g in self.rows.chunk_by(|a, b| a.0 == b.0) {
            for (x, a) in g.iter().enumerate() {
                for b in &g[x + 1..] {
                    out.push((a.1.min(b.1), a.1.max(b.1), 0));
                }
            }
        }
        for p in &self.joined {
            for a in self.group(p.batch) {
                for b in self.group(p.stored) {
                    out.push((a.1.min(b.1), a.1.max(b.1), p.distance));
                }
            }
        }
        out.par_sort_unstable();
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Candidate pairs and their clusters against brute force, with repeated fingerprints and
    /// skipped rows.
    #[test]
    fn candidates_match_brute_force() {
        let dir = tempfile::tempdir().unwrap();
        let mut x = 7u64;
        let mut next = || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        let base: Vec<u64> = (0..60).map(|_| next()).collect();
        let mut fps: Vec<u64> = Vec::new();
        for i in 0..300 {
            let b = base[(next() % 60) as usize];
            fps.push(if i % 3 == 0 {
                b
            } else {
                b ^ (1 << (next() % 64)) ^ (1 << (next() % 64))
            });
        }
        let skip: Vec<bool> = (0..fps.len()).map(|i| i % 17 == 0).collect();
        let c = Candidates::new(
            &fps,
            Some(&skip),
            3,
            dir.path(),
            1 << 20,
            &ProgressHandle::none(),
        )
        .unwrap();
        let mut want = Vec::new();
        let mut naive = Clusters::new(fps.len());
        for i in 0..fps.len() {
            for j in i + 1..fps.len() {
                let d = (fps[i] ^ fps[j]).count_ones();
                if d <= 3 && !skip[i] && !skip[j] {
                    want.push((i as u32, j as u32, d));
                    naive.join(i, j);
                }
            }
        }
        assert!(want.len() > 100);
        assert_eq!(c.pairs(), want);
        assert_eq!(c.pair_count(), want.len() as u64);
        assert_eq!(c.clusters().roots(), naive.roots());
    }
}
