//! Candidate pairs of a corpus: documents grouped by fingerprint, distinct fingerprints joined
//! within k by the index self-join (k up to an index's 7) or the block join (`wide`, beyond).

use rayon::prelude::*;

use super::wide::WideJoin;
use super::{Clusters, Prefixes};
use crate::error::{Error, Result};
use crate::index::Pair;
use crate::progress::ProgressHandle;

/// The candidate pairs of a corpus: its documents grouped by fingerprint, and the pairs of
/// distinct fingerprints within `k` from the index self-join (in bounded memory, spilling under
/// a temporary directory) or, beyond an index's k, the block join. Clusters can be had without
/// listing the pairs ([`Self::clusters`]), which matters when a group of equal fingerprints is
/// large (its pairs are quadratic); and the pairs can be had in batches of bounded size
/// ([`Self::batches`]), which matters when the candidates of a wide k outgrow memory.
#[derive(Debug)]
pub struct Candidates {
    /// (fingerprint, row), ascending.
    rows: Vec<(u64, u32)>,
    joined: Joined,
    n: usize,
    /// Row pairs: counted when listed, estimated from a sample part when not.
    estimate: u64,
}

/// The pairs of distinct fingerprints: listed, or a block join too large to list at once,
/// taken in parts.
#[derive(Debug)]
enum Joined {
    Listed(Vec<Pair>),
    Parts(WideJoin, usize),
}

/// Bytes a candidate pair is counted for while listed: the fingerprint pair (24) while it is
/// expanded to rows, the row pair (12) and what a verification pass indexes it by (12).
pub const PAIR_BYTES: u64 = 48;

/// The least a verification pass may hold of shingle sets: below it, a pass would read the
/// whole input for a handful of rows (a run at a few megabytes over its budget read the
/// input once per row: 131 GB in 11 minutes).
pub const MIN_PASS_BYTES: u64 = 8 << 20;
/// Passes a verification may take at most, for inputs whose sets are smaller than
/// [`MIN_PASS_BYTES`] times this.
pub const MAX_PASSES: u64 = 64;

/// What a pass may hold of shingle sets within `mem_bytes` when `held` is taken, given sets of
/// `set_bytes` in all; an error naming the least budget that would do when that is below
/// [`MIN_PASS_BYTES`] (or, for small inputs, a [`MAX_PASSES`]th of their sets).
fn pass_budget(mem_bytes: u64, held: u64, set_bytes: u64) -> Result<u64> {
    let floor = MIN_PASS_BYTES.min(set_bytes.div_ceil(MAX_PASSES)).max(1);
    let need = held + floor;
    if mem_bytes < need {
        let mib = |b: u64| b.div_ceil(1 << 20);
        return Err(Error::InvalidArgument(format!(
            "the memory budget ({} MiB; --mem, mem_bytes=) is too small for this input: \
             at least {need} bytes ({} MiB: {} MiB for the documents' ids, fingerprints, \
             prefixes and candidate pairs, {} MiB for a verification pass)",
            mib(mem_bytes),
            mib(need),
            mib(held),
            mib(floor)
        )));
    }
    Ok(mem_bytes - held)
}

/// The share of the block join that estimates its size: one part in 64 (parts are of about
/// equal size, and a part costs a walk over the buckets plus its share of the comparisons).
const SAMPLE_PARTS: usize = 64;

/// That `n` documents can be rows (numbered by `u32`): a clear error beyond.
pub(crate) fn check_rows(n: usize) -> Result<()> {
    if u32::try_from(n).is_err() {
        return Err(Error::InvalidArgument(format!(
            "{n} documents: a dedup takes at most 2^32 at once"
        )));
    }
    Ok(())
}

/// The pairs among `n` rows: n (n − 1) / 2.
pub(crate) fn pairs_among(n: usize) -> u64 {
    n as u64 * (n as u64).saturating_sub(1) / 2
}

impl Candidates {
    /// The share of `wide_join` that part `part` of `parts` reports (see `WideJoin::part`).
    pub fn wide_join_part(
        fps: &[u64],
        k: u32,
        part: usize,
        parts: usize,
        progress: &ProgressHandle,
    ) -> Result<Vec<crate::index::Pair>> {
        WideJoin::new(fps, k)?.part(part, parts, progress)
    }

    /// Bytes a candidate pair is counted for while listed: the fingerprint pair (24) while it is
    /// expanded to rows, the row pair (12) and what a verification pass indexes it by (12).
    pub const PAIR_BYTES: u64 = PAIR_BYTES;

    /// The largest candidate distance of verified dedup.
    pub const MAX_CANDIDATE_K: u32 = crate::dedup::verify::MAX_CANDIDATE_K;

    /// The default candidate distance of verified dedup (`simdex dedup --verify`,
    /// `simdex.dedup(verify=)`,
    /// `simdex.spark.dedup(verify=)`): near-duplicates at Jaccard 0.9 of template-heavy pages lie
    /// up
    /// to 10-12 bits apart (measured; docs/log/benchmarks.md).
    pub const DEFAULT_CANDIDATE_K: u32 = crate::dedup::verify::DEFAULT_CANDIDATE_K;

    /// Candidates of documents `0..fps.len()` (at most 2^32) with fingerprints `fps`; rows whose
    /// `skip` entry is true (documents without any feature) take part in nothing. Of
    /// `mem_bytes`, the listed pairs may take half (at [`PAIR_BYTES`](Candidates::PAIR_BYTES)
    /// each); a block join
    /// with more pairs than that is kept unlisted, its pairs produced part by part when asked.
    pub fn new(
        fps: &[u64],
        skip: Option<&[bool]>,
        k: u32,
        tmp: &std::path::Path,
        mem_bytes: u64,
        progress: &ProgressHandle,
    ) -> Result<Candidates> {
        check_rows(fps.len())?;
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
        let mut sampled = None;
        // Within an index's k, the index self-join (bounded memory); beyond it (verification's
        // candidates), the in-memory block join, listed when a sample part says its pairs fit.
        let joined = if k <= crate::design::MAX_K {
            Joined::Listed(crate::index::self_join(
                &distinct, k, tmp, mem_bytes, progress,
            )?)
        } else {
            let join = WideJoin::new(&distinct, k)?;
            let sample = join.part(0, SAMPLE_PARTS, &ProgressHandle::none())?;
            sampled = Some(sample.len() as u64 * SAMPLE_PARTS as u64);
            let sample = sample.len() as u64;
            let bytes = sample * SAMPLE_PARTS as u64 * PAIR_BYTES;
            if bytes <= mem_bytes / 2 {
                Joined::Listed(join.part(0, 1, progress)?)
            } else {
                // Parts of a quarter of the budget each as estimated: two of them, or one and
                // an estimate off by two, fit the half the pairs may take.
                let parts = bytes.div_ceil((mem_bytes / 4).max(1)).clamp(2, 1 << 16) as usize;
                Joined::Parts(join, parts)
            }
        };
        let mut c = Candidates {
            rows,
            joined,
            n: fps.len(),
            estimate: 0,
        };
        c.estimate = c.within_pairs()
            + match (&c.joined, sampled) {
                (Joined::Listed(p), _) => c.row_pairs(p),
                (_, Some(s)) => s,
                (_, None) => 0,
            };
        Ok(c)
    }

    /// How many row pairs there are: exact when the join is listed, else estimated from one
    /// part in 64 (as fingerprint pairs). What decides whether a verifier's prefix filter
    /// (`Prefixes`) pays: with fewer candidates than rows it is cheaper to compute the sets
    /// of the candidates alone.
    pub fn estimated_pairs(&self) -> u64 {
        self.estimate
    }

    /// Verification's candidates, a batch at a time, for documents `0..fps.len()` with
    /// fingerprints `fps`: the pairs within `k` that `prefixes` (of every row) let through,
    /// found by the prefix join ([`Prefixes::join`]) when its lists share few enough pairs of
    /// rows, else by joining the fingerprints ([`Self::new`]) and filtering
    /// ([`Self::verify_batches`], whose budget rule and callback this follows). The same pairs
    /// either way. Returns how many candidate pairs were considered.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn verify_all(
        fps: &[u64],
        k: u32,
        tmp: &std::path::Path,
        mem_bytes: u64,
        held: u64,
        prefixes: &Prefixes,
        progress: &ProgressHandle,
        mut f: impl FnMut(Vec<(u32, u32, u32)>, u64) -> Result<()>,
    ) -> Result<u64> {
        let n = fps.len();
        // A shared pair costs a popcount and mostly a merge of two short prefixes (about
        // SHARED_NS); joining the fingerprints costs each row its probes and comparisons (the
        // block join's model beyond an index's k, an index's handful of probes within): the
        // lists are taken while they share fewer pairs than that would cost.
        const SHARED_NS: f64 = 30.0;
        let per_row = if k > crate::design::MAX_K {
            super::wide::cost_ns_per_fingerprint(n as u64, k) / SHARED_NS
        } else {
            32.0
        };
        let max_shared = ((n as f64 * per_row) as u64).max(1 << 20);
        let Some(pairs) = prefixes.join(fps, k, mem_bytes, max_shared, progress)? else {
            let cand = Candidates::new(fps, None, k, tmp, mem_bytes, progress)?;
            return cand.verify_batches(mem_bytes, held, n, Some(prefixes), progress, f);
        };
        let considered = pairs.len() as u64;
        let held = held + prefixes.memory_bytes() + (pairs.capacity() * 12) as u64;
        let max_pairs = (mem_bytes / 2 / PAIR_BYTES).max(1) as usize;
        for batch in pairs.chunks(max_pairs) {
            let listed = (batch.len() * 12) as u64 + super::Passes::index_bytes(batch.len(), n);
            f(
                batch.to_vec(),
                pass_budget(mem_bytes, held + listed, prefixes.set_bytes())?,
            )?;
        }
        Ok(considered)
    }

    /// The rows holding `fp`, ascending.
    fn group(&self, fp: u64) -> &[(u64, u32)] {
        let a = self.rows.partition_point(|x| x.0 < fp);
        let b = self.rows.partition_point(|x| x.0 <= fp);
        &self.rows[a..b]
    }

    /// Bytes held: the rows by fingerprint, and the listed pairs or the prepared join.
    pub fn memory_bytes(&self) -> u64 {
        let joined = match &self.joined {
            Joined::Listed(p) => p.capacity() * std::mem::size_of::<Pair>(),
            Joined::Parts(j, _) => j.memory_bytes() as usize,
        };
        (self.rows.capacity() * 16 + joined) as u64
    }

    /// Distinct fingerprints taking part.
    pub fn distinct(&self) -> usize {
        self.rows.chunk_by(|a, b| a.0 == b.0).count()
    }

    /// Row pairs within groups of equal fingerprints.
    fn within_pairs(&self) -> u64 {
        self.rows
            .chunk_by(|a, b| a.0 == b.0)
            .map(|g| pairs_among(g.len()))
            .sum()
    }

    /// Row pairs that joined pairs of fingerprints stand for.
    fn row_pairs(&self, joined: &[Pair]) -> u64 {
        joined
            .iter()
            .map(|p| (self.group(p.batch).len() * self.group(p.stored).len()) as u64)
            .sum()
    }

    /// The row pairs `(a, b, distance)`, `a < b`, that a joined pair of fingerprints stands for.
    fn expand<'a>(&'a self, p: &Pair) -> impl Iterator<Item = (u32, u32, u32)> + 'a {
        let (gb, d) = (self.group(p.stored), p.distance);
        self.group(p.batch)
            .iter()
            .flat_map(move |a| gb.iter().map(move |b| (a.1.min(b.1), a.1.max(b.1), d)))
    }

    /// Call `f` with the fingerprint pairs of each part, in order (one part when listed).
    fn for_each_part(
        &self,
        progress: &ProgressHandle,
        mut f: impl FnMut(&[Pair]) -> Result<()>,
    ) -> Result<()> {
        match &self.joined {
            Joined::Listed(pairs) => f(pairs),
            Joined::Parts(join, parts) => {
                for part in 0..*parts {
                    f(&join.part(part, *parts, progress)?)?;
                }
                Ok(())
            }
        }
    }

    /// How many pairs [`Self::pairs`] would list, without listing them.
    pub fn pair_count(&self) -> Result<u64> {
        let mut n = self.within_pairs();
        self.for_each_part(&ProgressHandle::none(), |joined| {
            n += self.row_pairs(joined);
            Ok(())
        })?;
        Ok(n)
    }

    /// The clusters of the candidate pairs, found without listing them: each group of equal
    /// fingerprints is one, and each joined pair of fingerprints links two groups.
    pub fn clusters(&self) -> Result<Clusters> {
        let mut c = Clusters::new(self.n);
        for w in self.rows.windows(2) {
            if w[0].0 == w[1].0 {
                c.join(w[0].1 as usize, w[1].1 as usize);
            }
        }
        self.for_each_part(&ProgressHandle::none(), |joined| {
            for p in joined {
                c.join(
                    self.group(p.batch)[0].1 as usize,
                    self.group(p.stored)[0].1 as usize,
                );
            }
            Ok(())
        })?;
        Ok(c)
    }

    /// Every pair of rows `(a, b, distance)`, `a < b`, sorted. Quadratic in the size of a group
    /// of equal fingerprints.
    pub fn pairs(&self) -> Result<Vec<(u32, u32, u32)>> {
        // Without a bound, one batch (sorted) or none.
        let mut out = Vec::new();
        self.batches(u64::MAX, &ProgressHandle::none(), |batch| {
            out = batch;
            Ok(())
        })?;
        Ok(out)
    }

    /// The pairs for verification within `mem_bytes`: [`Self::batches`] of at most half of it
    /// (at [`PAIR_BYTES`](Candidates::PAIR_BYTES) a pair), each given to `f` with the bytes its
    /// shingle sets may take
    /// (what `held` — the caller's own holdings —, these candidates, the batch and the
    /// [`Passes`](super::Passes) index over `n` rows leave). With `prefixes` (of every row),
    /// only the pairs they let through ([`Prefixes::may_reach`]): the pairs that cannot reach
    /// the threshold never take memory or a pass. Returns how many candidate pairs there were
    /// (filtered or not). The one budget rule of every verifying front end.
    pub(crate) fn verify_batches(
        &self,
        mem_bytes: u64,
        held: u64,
        n: usize,
        prefixes: Option<&Prefixes>,
        progress: &ProgressHandle,
        mut f: impl FnMut(Vec<(u32, u32, u32)>, u64) -> Result<()>,
    ) -> Result<u64> {
        if prefixes.is_some_and(|p| p.len() != self.n) {
            return Err(Error::InvalidArgument(format!(
                "prefixes of {} rows for candidates of {}",
                prefixes.map_or(0, Prefixes::len),
                self.n
            )));
        }
        let held = held + self.memory_bytes() + prefixes.map_or(0, Prefixes::memory_bytes);
        let max_pairs = (mem_bytes / 2 / PAIR_BYTES).max(1);
        self.batches_where(max_pairs, prefixes, progress, |batch| {
            let listed = (batch.capacity() * std::mem::size_of::<(u32, u32, u32)>()) as u64
                + super::Passes::index_bytes(batch.len(), n);
            let sets = prefixes.map_or(u64::MAX, Prefixes::set_bytes);
            f(batch, pass_budget(mem_bytes, held + listed, sets)?)
        })
    }

    /// The pairs of [`Self::pairs`] in batches, each sorted, together each pair once: a batch
    /// holds the pairs of whole parts of the join up to `max_pairs` (one part may exceed it
    /// alone), the equal-fingerprint pairs in the first. One batch when the
    /// join is listed. What a caller does with a batch (verification) is done before the
    /// next part is joined, so memory holds one batch at a time.
    pub fn batches(
        &self,
        max_pairs: u64,
        progress: &ProgressHandle,
        f: impl FnMut(Vec<(u32, u32, u32)>) -> Result<()>,
    ) -> Result<()> {
        self.batches_where(max_pairs, None, progress, f).map(|_| ())
    }

    /// [`Self::batches`] of the pairs `prefixes` let through (all pairs without them). A
    /// joined part's pairs are filtered on all cores as they are expanded to rows, so a batch
    /// fills with kept pairs only. Returns how many pairs there were before the filter.
    fn batches_where(
        &self,
        max_pairs: u64,
        prefixes: Option<&Prefixes>,
        progress: &ProgressHandle,
        mut f: impl FnMut(Vec<(u32, u32, u32)>) -> Result<()>,
    ) -> Result<u64> {
        let mut total = self.within_pairs();
        let keep = |a: u32, b: u32| prefixes.is_none_or(|p| p.may_reach(a, b));
        // A part is taken a slice of fingerprint pairs at a time, a slice expanding to at most
        // `max_pairs` row pairs (or one fingerprint pair that alone expands to more: groups of
        // equal fingerprints make a pair stand for quadratically many, which are then listed
        // as they come), so that a batch never holds more than `max_pairs`.
        let mut flush = |out: &mut Vec<(u32, u32, u32)>| -> Result<()> {
            if out.is_empty() {
                return Ok(());
            }
            out.par_sort_unstable();
            f(std::mem::take(out))
        };
        let mut out = Vec::new();
        if prefixes.is_none() {
            out.reserve_exact(self.within_pairs().min(max_pairs) as usize);
        }
        // A group of equal fingerprints has quadratically many pairs: they go in batches too.
        for g in self.rows.chunk_by(|a, b| a.0 == b.0) {
            for (x, a) in g.iter().enumerate() {
                for b in &g[x + 1..] {
                    let (a, b) = (a.1.min(b.1), a.1.max(b.1));
                    if keep(a, b) {
                        if out.len() as u64 >= max_pairs {
                            flush(&mut out)?;
                        }
                        out.push((a, b, 0));
                    }
                }
            }
        }
        self.for_each_part(progress, |joined| {
            total += self.row_pairs(joined);
            let mut rest = joined;
            while !rest.is_empty() {
                let (mut end, mut adding) = (0, 0u64);
                while end < rest.len() {
                    let more = self.row_pairs(&rest[end..end + 1]);
                    if end > 0 && adding + more > max_pairs {
                        break;
                    }
                    adding += more;
                    end += 1;
                }
                let (slice, after) = rest.split_at(end);
                rest = after;
                if adding > max_pairs {
                    // One fingerprint pair standing for more than a batch.
                    for (a, b, d) in self.expand(&slice[0]).filter(|&(a, b, _)| keep(a, b)) {
                        if out.len() as u64 >= max_pairs {
                            flush(&mut out)?;
                        }
                        out.push((a, b, d));
                    }
                    continue;
                }
                if prefixes.is_some() {
                    let kept: Vec<(u32, u32, u32)> = slice
                        .par_iter()
                        .with_min_len(1024)
                        .flat_map_iter(|p| self.expand(p).filter(|&(a, b, _)| keep(a, b)))
                        .collect();
                    if (out.len() + kept.len()) as u64 > max_pairs {
                        flush(&mut out)?;
                    }
                    out.extend(kept);
                    continue;
                }
                // The slice's row pairs, counted first: a full batch goes before the slice is
                // added, and the batch is allocated to its size (no doubling slack).
                if out.len() as u64 + adding > max_pairs {
                    flush(&mut out)?;
                }
                out.reserve_exact(adding as usize);
                for p in slice {
                    out.extend(self.expand(p));
                }
            }
            Ok(())
        })?;
        flush(&mut out)?;
        Ok(total)
    }
}

#[cfg(test)]
mod tests;
