//! Verified dedup, assembled once for every front end (`simdex dedup --verify`,
//! `simdex.dedup(verify=)`): documents are pushed in input order with their fingerprint and
//! shingle set; identical ones fold into one candidate row ([`Folder`]), every row keeps its
//! prefix ([`Prefixes`]); then the candidate pairs that may reach the threshold are found
//! ([`Candidates::verify_all`]) and verified a batch at a time, their texts read again in
//! passes that hold at most the memory left ([`Passes`], [`TextPasses`]); verified pairs go to
//! the clusters, the sorted pair list, or both.

use std::path::Path;

use rayon::prelude::*;

use super::verify::{TRUTH_SHINGLE, Tokens, shingle_set_with};
use super::{Candidates, Clusters, Folder, PairSpill, Prefixes, Verified};
use crate::error::{Error, Result};
use crate::progress::ProgressHandle;

/// Where a corpus's texts are read again, as often as verification needs.
pub trait TextPasses {
    /// One pass over every document pushed, in input order: `f(first, texts)` for consecutive
    /// chunks, `first` the ordinal of the chunk's first document (0, 1, ... in the order they
    /// were pushed, documents without words included). `want(ordinal)` says which texts `f`
    /// reads; the others may be given as empty strings.
    fn pass(
        &mut self,
        want: &dyn Fn(u64) -> bool,
        f: &mut dyn FnMut(u64, &[&str]) -> Result<()>,
    ) -> Result<()>;
}

/// What [`VerifiedDedup::run`] found: counts, and the results asked for. Documents are
/// numbered by their order among the documents with words.
#[derive(Debug)]
#[non_exhaustive]
pub struct VerifiedOutput {
    /// Documents pushed.
    pub documents: u64,
    /// Documents without any word (no part in any pair).
    pub featureless: u64,
    /// Documents identical to an earlier one (same fingerprint and shingle set).
    pub folded: u64,
    /// Distinct fingerprints.
    pub distinct: u64,
    /// Candidate pairs of rows compared (within k, sharing a prefix shingle).
    pub candidates: u64,
    /// Verified pairs of documents (identical ones included).
    pub verified: u64,
    /// The clusters of verified pairs, if asked.
    pub clusters: Option<Clusters>,
    /// Every verified pair `(a, b, distance, jaccard)`, `a < b`, to be read back in order with
    /// [`PairSpill::finish`], if asked.
    pub pairs: Option<PairSpill>,
}

/// See the module docs.
#[derive(Debug)]
pub struct VerifiedDedup {
    t: f64,
    k: u32,
    tokens: Tokens,
    folder: Folder,
    prefixes: Prefixes,
    /// Sets waiting for the prefixes (handed over in groups, the first large enough to learn
    /// their order from).
    waiting: Vec<Vec<u64>>,
    /// Each row's fingerprint and the ordinal of its document.
    fps: Vec<u64>,
    ords: Vec<u64>,
    documents: u64,
    featureless: u64,
}

impl VerifiedDedup {
    /// The rule of verified dedup for one pair of shingle sets (ascending, distinct): their
    /// Jaccard if it is at least
    /// `t`, else `None` (and `None` if either set is empty).
    pub fn verify_pair(a: &[u64], b: &[u64], t: f64) -> Option<f64> {
        super::verify::verify_pair(a, b, t)
    }

    /// Verification at Jaccard `t` (0 < t ≤ 1) of the pairs within `k` bits
    /// (`0..=`[`Candidates::MAX_CANDIDATE_K`]), word 3-shingles under `tokens`.
    pub fn new(t: f64, k: u32, tokens: Tokens) -> Result<VerifiedDedup> {
        if !(t > 0.0 && t <= 1.0) {
            return Err(Error::InvalidArgument(format!(
                "verification threshold {t} is not in (0, 1]"
            )));
        }
        if k > Candidates::MAX_CANDIDATE_K {
            return Err(Error::InvalidArgument(format!(
                "candidate_k = {k} is not in 0..={}",
                Candidates::MAX_CANDIDATE_K
            )));
        }
        Ok(VerifiedDedup {
            t,
            k,
            tokens,
            folder: Folder::new(),
            prefixes: Prefixes::new(t)?,
            waiting: Vec::new(),
            fps: Vec::new(),
            ords: Vec::new(),
            documents: 0,
            featureless: 0,
        })
    }

    /// The next document in input order: its fingerprint and shingle set, or `None` for a
    /// document without any word (it takes part in nothing).
    pub fn push(&mut self, doc: Option<(u64, Vec<u64>)>) -> Result<()> {
        let ord = self.documents;
        self.documents += 1;
        let Some((fp, set)) = doc else {
            self.featureless += 1;
            return Ok(());
        };
        if self.folder.offer(fp, &set) {
            self.fps.push(fp);
            self.ords.push(ord);
            self.waiting.push(set);
            if self.waiting.len() >= Prefixes::ORDER_SAMPLE {
                self.prefixes.push(&self.waiting)?;
                self.waiting.clear();
            }
        }
        Ok(())
    }

    /// Bytes held for the documents pushed (fingerprints, ordinals, groups, prefixes).
    pub fn memory_bytes(&self) -> u64 {
        (self.fps.capacity() + self.ords.capacity()) as u64 * 8
            + self.folder.memory_bytes()
            + self.prefixes.memory_bytes()
    }

    /// Verify: the candidate pairs a batch at a time (their pairs may take half of `mem`, the
    /// shingle sets of a pass the rest, besides `held` bytes the caller holds), texts read
    /// again from `texts`; spilled pair lists and the joins' files go to `tmp`. With
    /// `clusters`, the clusters of the verified pairs; with `pairs`, their sorted list.
    #[allow(clippy::too_many_arguments)]
    pub fn run(
        mut self,
        texts: &mut dyn TextPasses,
        tmp: &Path,
        mem: u64,
        held: u64,
        progress: &ProgressHandle,
        clusters: bool,
        pairs: bool,
    ) -> Result<VerifiedOutput> {
        self.prefixes.push(&self.waiting)?;
        self.waiting = Vec::new();
        let (t, k, tokens) = (self.t, self.k, self.tokens);
        let groups = std::mem::take(&mut self.folder).finish();
        let mut joined = clusters.then(|| Clusters::new(groups.docs()));
        let mut listed = pairs.then(|| PairSpill::new(tmp, mem / 16));
        let held = held
            + (self.fps.capacity() + self.ords.capacity()) as u64 * 8
            + groups.memory_bytes()
            + listed.as_ref().map_or(0, PairSpill::memory_bytes);
        let mut verified = 0u64;
        let mut emit = |(x, y, d, jac): Verified| -> Result<()> {
            verified += 1;
            if let Some(c) = &mut joined {
                c.join(x as usize, y as usize);
            }
            if let Some(l) = &mut listed {
                l.push((x, y, d, jac))?;
            }
            Ok(())
        };
        for (x, y) in groups.within() {
            emit((x, y, 0, 1.0))?;
        }
        let (fps, ords, documents) = (&self.fps, &self.ords, self.documents);
        let mut candidates = 0u64;
        Candidates::verify_all(
            fps,
            k,
            tmp,
            mem,
            held,
            &self.prefixes,
            progress,
            |batch, budget| {
                candidates += batch.len() as u64;
                for (i, j, d, jac) in
                    verify_in_passes(texts, &batch, ords, documents, tokens, t, budget)?
                {
                    for (x, y) in groups.expand(i, j) {
                        emit((x, y, d, jac))?;
                    }
                }
                Ok(())
            },
        )?;
        let mut distinct = self.fps;
        distinct.par_sort_unstable();
        distinct.dedup();
        Ok(VerifiedOutput {
            documents: self.documents,
            featureless: self.featureless,
            folded: groups.folded(),
            distinct: distinct.len() as u64,
            candidates,
            verified,
            clusters: joined,
            pairs: listed,
        })
    }
}

/// One batch of candidate pairs of rows verified in passes over the texts, each holding at
/// most `budget` bytes of shingle sets ([`Passes`]); `ords` is each row's document ordinal.
fn verify_in_passes(
    texts: &mut dyn TextPasses,
    pairs: &[(u32, u32, u32)],
    ords: &[u64],
    documents: u64,
    tokens: Tokens,
    t: f64,
    budget: u64,
) -> Result<Vec<Verified>> {
    let n = ords.len();
    let passes = std::cell::RefCell::new(super::Passes::new(pairs, n, t, budget));
    while passes.borrow().pending() {
        let (mut row, mut seen) = (0usize, 0u64);
        let want = |ord: u64| match ords.binary_search(&ord) {
            Ok(r) => passes.borrow().wants(r),
            Err(_) => false,
        };
        texts.pass(&want, &mut |first, chunk| {
            let stop = first + chunk.len() as u64;
            let from = row;
            while row < n && ords[row] < stop {
                row += 1;
            }
            seen = seen.max(stop);
            // The sets this chunk's rows may need, on all cores, then offered in order.
            let sets: Vec<(usize, Vec<u64>)> = {
                let guard = passes.borrow();
                let p: &super::Passes = &guard;
                (from..row)
                    .into_par_iter()
                    .filter(|&r| p.wants(r))
                    .map(|r| {
                        let text = chunk[(ords[r] - first) as usize];
                        (r, shingle_set_with(text, TRUTH_SHINGLE, tokens))
                    })
                    .collect()
            };
            let mut p = passes.borrow_mut();
            for (r, set) in sets {
                p.offer(r, set);
            }
            Ok(())
        })?;
        if row < n || seen < documents {
            return Err(Error::InvalidArgument(
                "the input changed between its readings (fewer documents the next time)".into(),
            ));
        }
        passes.borrow_mut().end_pass();
    }
    Ok(passes.into_inner().finish())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Texts held in memory.
    struct Held(Vec<String>);

    impl TextPasses for Held {
        fn pass(
            &mut self,
            _want: &dyn Fn(u64) -> bool,
            f: &mut dyn FnMut(u64, &[&str]) -> Result<()>,
        ) -> Result<()> {
            for (i, chunk) in self.0.chunks(7).enumerate() {
                let texts: Vec<&str> = chunk.iter().map(String::as_str).collect();
                f(i as u64 * 7, &texts)?;
            }
            Ok(())
        }
    }

    /// Every pair within k at Jaccard ≥ t, and nothing else, whatever the budget: near-copies,
    /// exact copies, documents without words and short ones, against brute force.
    #[test]
    fn verified_pairs_are_the_brute_force_pairs() {
        let mut next = super::super::xorshift(99);
        let base: Vec<Vec<String>> = (0..20)
            .map(|_| (0..60).map(|_| format!("w{}", next() % 500)).collect())
            .collect();
        let mut texts: Vec<String> = Vec::new();
        for _ in 0..240 {
            let mut words = base[(next() % 20) as usize].clone();
            for _ in 0..(next() % 6) {
                let at = (next() % words.len() as u64) as usize;
                words[at] = format!("x{}", next() % 50);
            }
            texts.push(words.join(" "));
        }
        texts.extend(["".into(), "!!".into(), "one two".into(), "one two".into()]);
        texts.push(texts[3].clone());
        let hasher = crate::simhash::Simhasher::new(Default::default()).unwrap();
        let docs: Vec<Option<(u64, Vec<u64>)>> = texts
            .iter()
            .map(|t| {
                let (fp, set) = super::super::hash_and_set(&hasher, t, Tokens::Unicode);
                fp.map(|fp| (fp, set))
            })
            .collect();
        // Documents with words, numbered as the output numbers them.
        let numbered: Vec<(u64, Vec<u64>)> = docs.iter().flatten().cloned().collect();
        let (t, k) = (0.8, 12);
        let mut want: Vec<(u32, u32)> = Vec::new();
        for a in 0..numbered.len() {
            for b in a + 1..numbered.len() {
                let (fa, sa) = &numbered[a];
                let (fb, sb) = &numbered[b];
                let close = (fa ^ fb).count_ones() <= k;
                let same = fa == fb && sa == sb && !sa.is_empty();
                if close && (same || super::super::verify_pair(sa, sb, t).is_some()) {
                    want.push((a as u32, b as u32));
                }
            }
        }
        assert!(want.len() > 100, "{} pairs", want.len());
        let tmp = tempfile::tempdir().unwrap();
        for mem in [1 << 30, 300_000] {
            let mut v = VerifiedDedup::new(t, k, Tokens::Unicode).unwrap();
            for d in &docs {
                v.push(d.clone()).unwrap();
            }
            let out = v
                .run(
                    &mut Held(texts.clone()),
                    tmp.path(),
                    mem,
                    0,
                    &ProgressHandle::none(),
                    true,
                    true,
                )
                .unwrap();
            let mut got = Vec::new();
            out.pairs
                .unwrap()
                .finish(|(a, b, _, _)| {
                    got.push((a, b));
                    Ok(())
                })
                .unwrap();
            assert_eq!(got, want, "mem {mem}");
            assert_eq!(out.verified, want.len() as u64);
            assert_eq!(out.featureless, 2);
            assert!(out.folded >= 1);
            let mut c = out.clusters.unwrap();
            for &(a, b) in &want {
                assert_eq!(c.find(a as usize), c.find(b as usize));
            }
        }
    }
}
