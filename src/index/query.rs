//! Online queries: the probe loop shared by an index's tables and a store's in-memory delta, the
//! result shapes (one query: a `Vec`, a caller's buffer, or a callback that can stop early; many
//! queries: one flat array with offsets). What they cost is counted in `counters`.
//!
//! A query permutes F for each table, probes the table at F's permuted prefix (and, for designs
//! with a probe radius r, at every prefix within r flipped bits), and checks the full distance of
//! every key found (a permutation preserves Hamming distance). The design guarantees that every
//! fingerprint within k shares some probed prefix; the distance check guarantees nothing beyond k
//! is returned.

use std::ops::ControlFlow;

use rayon::prelude::*;

use super::Index;
pub use super::counters::QueryCounters;
use super::probe::{Match, ProbeChunk, ProbeSource, QueryProbes, Work, each_probe};
use crate::error::{Error, Result};
use crate::progress::ProgressHandle;
use crate::table::multiscan::{MAX_PROBES, MultiScan};

/// The answers to many queries in one flat array: the matches of query `i` are
/// `matches[offsets[i]..offsets[i + 1]]`, each ordered by distance then fingerprint.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct NearMany {
    /// `queries + 1` ascending offsets into `matches`, starting at 0.
    pub offsets: Vec<usize>,
    /// Every query's matches, query after query.
    pub matches: Vec<Match>,
}

impl NearMany {
    /// Number of queries.
    pub fn len(&self) -> usize {
        self.offsets.len().saturating_sub(1)
    }

    /// True if there were no queries.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The matches of query `i`.
    pub fn get(&self, i: usize) -> &[Match] {
        &self.matches[self.offsets[i]..self.offsets[i + 1]]
    }

    /// Each query's matches, in query order.
    pub fn iter(&self) -> impl ExactSizeIterator<Item = &[Match]> + '_ {
        self.offsets.windows(2).map(|w| &self.matches[w[0]..w[1]])
    }
}

impl<D: AsRef<[u8]> + Sync> Index<D> {
    pub(crate) fn check_k(&self, k: u32) -> Result<()> {
        if k > crate::design::MAX_K {
            return Err(Error::InvalidArgument(format!(
                "k = {k} is beyond what any design answers (k at most {}); the index answers \
                 k <= {}",
                crate::design::MAX_K,
                self.design().k()
            )));
        }
        if k > self.design().k() {
            return Err(Error::InvalidArgument(format!(
                "k = {k} exceeds the index's design ({}, exact up to k = {}); build a new \
                 index with k = {k} (or rebuild the store with k = {k})",
                self.design().name(),
                self.design().k()
            )));
        }
        Ok(())
    }

    /// Visit every fingerprint of `src` within `k` of `fp` that the probes reach, with repeats
    /// across tables; stop when `f` returns false (then returns false).
    #[inline(always)]
    pub(crate) fn probe<S: ProbeSource + ?Sized>(
        &self,
        src: &S,
        fp: u64,
        k: u32,
        work: &mut Work,
        mut f: impl FnMut(Match) -> bool,
    ) -> Result<bool> {
        let mut failed = None;
        let done = each_probe(&self.probers, fp, |probe| {
            work.probes += 1;
            let inverse = &self.probers[probe.table].inverse;
            let mut candidates = 0;
            let go_on = src.visit(probe.table, probe.lo, probe.hi, work, |key| {
                let d = (key ^ probe.query).count_ones();
                if d > k {
                    return true;
                }
                candidates += 1;
                f(Match {
                    distance: d,
                    fingerprint: inverse.apply(key),
                })
            });
            work.candidates += candidates;
            match go_on {
                Ok(go_on) => go_on,
                Err(e) => {
                    failed = Some(e);
                    false
                }
            }
        });
        match failed {
            Some(e) => Err(e),
            None => Ok(done),
        }
    }

    /// Matches into `out` (cleared first), sorted and de-duplicated; the work done.
    ///
    /// The distance check runs on every decoded key, so it must be one POPCNT instruction. A
    /// crate that depends on simdex builds for baseline x86-64 (no POPCNT) unless it sets
    /// `target-cpu` itself, which makes `count_ones` a dozen instructions; so the probe loop
    /// is compiled twice and the CPU picks at run time (the check is one cached load).
    #[inline]
    fn near_work(&self, fp: u64, k: u32, out: &mut Vec<Match>) -> Result<Work> {
        #[cfg(target_arch = "x86_64")]
        if std::is_x86_feature_detected!("popcnt") {
            // SAFETY: the CPU supports POPCNT, checked just above.
            return unsafe { self.near_work_popcnt(fp, k, out) };
        }
        self.near_work_portable(fp, k, out)
    }

    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "popcnt")]
    fn near_work_popcnt(&self, fp: u64, k: u32, out: &mut Vec<Match>) -> Result<Work> {
        self.near_work_portable(fp, k, out)
    }

    #[inline(always)]
    fn near_work_portable(&self, fp: u64, k: u32, out: &mut Vec<Match>) -> Result<Work> {
        out.clear();
        let mut work = Work::default();
        let scan = MultiScan {
            tables: &self.tables,
            residency: &self.residency,
            lanes: self.lanes,
            aligned: self.aligned,
        };
        let mut emit = |t: usize, key: u64, d: u32| {
            out.push(Match {
                distance: d,
                fingerprint: self.probers[t].inverse.apply(key),
            })
        };
        let n = self.probes_per_query as usize;
        if n <= MAX_PROBES {
            let probes = QueryProbes {
                probers: &self.probers,
                fp,
            };
            scan.run(&probes, k, &mut work, &mut emit)?;
        } else {
            // A design with a probe radius makes more probes than one scan plans: scan them
            // in equal chunks of at most MAX_PROBES, each planned and decoded as a query's
            // probes are (their misses overlapped in rounds, their keys decoded in the lanes).
            let per = n.div_ceil(n.div_ceil(MAX_PROBES));
            for from in (0..n).step_by(per) {
                let probes = ProbeChunk {
                    probers: &self.probers,
                    fp,
                    from,
                    to: (from + per).min(n),
                };
                scan.run(&probes, k, &mut work, &mut emit)?;
            }
        }
        out.sort_unstable();
        out.dedup();
        Ok(work)
    }

    /// Every stored fingerprint within Hamming distance `k` of `fp`, each once, ordered by
    /// distance then value. An error if `k` exceeds the design's k, or on corrupt data.
    pub fn near(&self, fp: u64, k: u32) -> Result<Vec<Match>> {
        let mut out = Vec::new();
        self.near_into(fp, k, &mut out)?;
        Ok(out)
    }

    /// [`near`](Self::near) into a caller's buffer (cleared first), so a hot loop allocates
    /// nothing once the buffer has grown.
    pub fn near_into(&self, fp: u64, k: u32, out: &mut Vec<Match>) -> Result<()> {
        self.check_k(k)?;
        let work = self.near_work(fp, k, out)?;
        self.counters.add(1, &work);
        Ok(())
    }

    /// Stream the fingerprints within `k` of `fp` to `f` as the probes find them, each once,
    /// in no particular order; `f` returns [`ControlFlow::Break`] to stop early. Returns
    /// whether the query ran to the end. Holds one small set of the fingerprints seen so far
    /// (tables overlap), nothing else.
    ///
    /// ```
    /// # use std::ops::ControlFlow;
    /// # use simdex::{BuildOptions};
    /// # fn main() -> simdex::Result<()> {
    /// # let dir = tempfile::tempdir().unwrap(); let path = dir.path().join("idx");
    /// simdex::build_index(&path, [1u64, 3, 7, 1 << 40].into_iter().map(Ok), &BuildOptions::default())?;
    /// let idx = simdex::Index::open(&path)?;
    /// let mut first_two = Vec::new();
    /// idx.near_with(0, 3, |m| {
    ///     first_two.push(m.fingerprint);
    ///     if first_two.len() == 2 { ControlFlow::Break(()) } else { ControlFlow::Continue(()) }
    /// })?;
    /// assert_eq!(first_two.len(), 2);
    /// # Ok(()) }
    /// ```
    pub fn near_with(
        &self,
        fp: u64,
        k: u32,
        mut f: impl FnMut(Match) -> ControlFlow<()>,
    ) -> Result<bool> {
        self.check_k(k)?;
        let mut seen = std::collections::HashSet::new();
        let mut work = Work::default();
        let done = self.probe(&self.tables[..], fp, k, &mut work, |m| {
            if !seen.insert(m.fingerprint) {
                return true;
            }
            f(m).is_continue()
        });
        self.counters.add(1, &work);
        done
    }

    /// True if some stored fingerprint is within `k` of `fp`.
    pub fn has_near(&self, fp: u64, k: u32) -> Result<bool> {
        self.check_k(k)?;
        // The planned scan of `near`, not a probe loop that stops at the first match: most
        // queries of a dedup match nothing and make every probe anyway, and the scan overlaps
        // the probes' misses and decodes them in the vector lanes (at 10M, design 10, half the
        // queries matching: 3.5-3.8 µs against 5.4; docs/log/benchmarks.md, “batch skip-scans that stop
        // mid-segment”).
        let mut out = Vec::new();
        let work = self.near_work(fp, k, &mut out)?;
        self.counters.add(1, &work);
        Ok(!out.is_empty())
    }

    /// [`near`](Self::near) for many queries, spread over all cores (the current rayon pool),
    /// returned as one flat array in input order.
    ///
    /// A batch of at least 4096 queries whose probes of each table number an eighth of the
    /// stored fingerprints (an eighth as many queries as the index stores, where a design
    /// probes each table once; far fewer with a probe radius, `auto`'s designs for k >= 5)
    /// is answered by one scan of the tables instead, [`batch_near`](Self::batch_near)'s,
    /// where the queries' probes share what they decode: the same answers, at 1.15-1.4x the
    /// queries per second at 1M keys and 1.7-2x at 10M (one thread; 1.8x at 10M for k = 5
    /// from a hundredth as many queries as keys; docs/log/benchmarks.md). The scan holds
    /// the batch sorted under every table's permutation, 16 bytes per query per probe, and is
    /// taken only where that fits in 1 GiB.
    pub fn near_many(&self, fps: &[u64], k: u32) -> Result<NearMany> {
        self.near_many_with(fps, k, &ProgressHandle::none())
    }

    /// [`near_many`](Self::near_many), reporting to `progress` (queries taken up, or the
    /// scan's blocks) and stopping with [`Error::Cancelled`] soon after it asks to: before the
    /// next chunk of 256 queries, or the scan's next block range (a Python caller's Ctrl-C).
    pub fn near_many_with(
        &self,
        fps: &[u64],
        k: u32,
        progress: &ProgressHandle,
    ) -> Result<NearMany> {
        self.check_k(k)?;
        if self.scan_pays(fps.len()) {
            return self.near_many_by_scan(fps, k, progress);
        }
        progress.stage("near_many", Some(fps.len() as u64))?;
        self.residency.judge_for(&self.tables, fps.len());
        // Chunks of queries per task: each task fills one flat buffer, so there is one
        // allocation per chunk rather than per query, and one counter update per chunk.
        const CHUNK: usize = 256;
        let parts: Vec<(Vec<usize>, Vec<Match>, Work)> = fps
            .par_chunks(CHUNK)
            .map(|qs| {
                progress.advance(qs.len() as u64)?;
                #[cfg(target_arch = "x86_64")]
                if self.lanes && self.probes_per_query <= MAX_PROBES as u64 {
                    return self.near_chunk_lanes(qs, k);
                }
                let mut lens = Vec::with_capacity(qs.len());
                let mut all = Vec::new();
                let mut buf = Vec::new();
                let mut work = Work::default();
                for &fp in qs {
                    work.add(&self.near_work(fp, k, &mut buf)?);
                    lens.push(buf.len());
                    all.extend_from_slice(&buf);
                }
                self.counters.add(qs.len() as u64, &work);
                Ok((lens, all, work))
            })
            .collect::<Result<_>>()?;
        progress.finish();
        let total: usize = parts.iter().map(|p| p.1.len()).sum();
        let mut out = NearMany {
            offsets: Vec::with_capacity(fps.len() + 1),
            matches: Vec::with_capacity(total),
        };
        out.offsets.push(0);
        for (lens, all, _) in parts {
            for l in lens {
                out.offsets
                    .push(out.offsets.last().copied().unwrap_or(0) + l);
            }
            out.matches.extend(all);
        }
        Ok(out)
    }

    /// [`near_many`](Self::near_many)'s chunk of queries `qs` through the vector lanes, as
    /// one stream of all their probes (`MultiScan::run_many`): each query's match count, the
    /// matches query after query (each query's sorted and de-duplicated), and the work done.
    #[cfg(target_arch = "x86_64")]
    fn near_chunk_lanes(&self, qs: &[u64], k: u32) -> Result<(Vec<usize>, Vec<Match>, Work)> {
        let mut work = Work::default();
        let mut hits: Vec<(u32, Match)> = Vec::new();
        let scan = MultiScan {
            tables: &self.tables,
            residency: &self.residency,
            lanes: self.lanes,
            aligned: self.aligned,
        };
        scan.run_many(
            qs.len(),
            |i| QueryProbes {
                probers: &self.probers,
                fp: qs[i],
            },
            k,
            &mut work,
            |q, t, key, d| {
                hits.push((
                    q,
                    Match {
                        distance: d,
                        fingerprint: self.probers[t].inverse.apply(key),
                    },
                ))
            },
        )?;
        let (lens, matches) = group_by_query(qs.len(), &hits);
        self.counters.add(qs.len() as u64, &work);
        Ok((lens, matches, work))
    }

    /// What the queries answered so far cost (since the index was opened).
    pub fn counters(&self) -> QueryCounters {
        self.counters.read()
    }
}

/// The matches of `hits` (tagged with their query, `0..n`) grouped by query, each query's
/// sorted and de-duplicated (a key found by two tables is one match), with each query's count.
/// A counting sort by query, then a sort of each query's few: sorting a chunk's hundreds of
/// tagged matches whole cost about 1k instructions a query at 10M keys (5% of a query).
fn group_by_query(n: usize, hits: &[(u32, Match)]) -> (Vec<usize>, Vec<Match>) {
    let mut lens = vec![0usize; n];
    for &(q, _) in hits {
        lens[q as usize] += 1;
    }
    let mut at = Vec::with_capacity(n);
    let mut sum = 0;
    for &len in &lens {
        at.push(sum);
        sum += len;
    }
    let mut out = vec![
        Match {
            distance: 0,
            fingerprint: 0,
        };
        hits.len()
    ];
    for &(q, m) in hits {
        out[at[q as usize]] = m;
        at[q as usize] += 1;
    }
    let (mut from, mut to) = (0, 0);
    for len in lens.iter_mut() {
        let one = &mut out[from..from + *len];
        one.sort_unstable();
        let mut kept = 0;
        for i in 0..one.len() {
            if i == 0 || one[i] != one[i - 1] {
                one[kept] = one[i];
                kept += 1;
            }
        }
        out.copy_within(from..from + kept, to);
        from += *len;
        to += kept;
        *len = kept;
    }
    out.truncate(to);
    (lens, out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Grouping tagged matches by query gives what sorting them whole and removing repeats
    /// gave: each query's matches in order, once each, with the right counts.
    #[test]
    fn matches_grouped_by_query_as_sorted_whole() {
        let mut s = 11;
        for (n, hits) in [(1usize, 0usize), (3, 1), (50, 400), (256, 3000)] {
            let mut tagged: Vec<(u32, Match)> = (0..hits)
                .map(|_| {
                    let r = crate::sample::splitmix64(&mut s);
                    let m = Match {
                        distance: (r % 4) as u32,
                        // Few fingerprints, so that repeats occur.
                        fingerprint: (r >> 8) % 7,
                    };
                    ((r >> 32) as u32 % n as u32, m)
                })
                .collect();
            let (lens, got) = group_by_query(n, &tagged);
            tagged.sort_unstable();
            tagged.dedup();
            let mut want_lens = vec![0; n];
            for &(q, _) in &tagged {
                want_lens[q as usize] += 1;
            }
            let want: Vec<Match> = tagged.into_iter().map(|(_, m)| m).collect();
            assert_eq!(lens, want_lens, "{n} queries, {hits} matches");
            assert_eq!(got, want, "{n} queries, {hits} matches");
            assert!(hits < 400 || got.len() < hits, "no repeats were removed");
        }
    }

    /// `near_many` equals `near`, for designs of few and many tables and with a probe radius.
    #[test]
    fn near_many_in_groups_equals_one_query_at_a_time() {
        let mut s = 5;
        let fps: Vec<u64> = (0..50_000)
            .map(|_| crate::sample::splitmix64(&mut s))
            .collect();
        let queries: Vec<u64> = (0..2000)
            .map(|i| match i % 3 {
                0 => fps[i] ^ (1 << (i % 64)) ^ (1 << ((i * 7) % 64)),
                1 => fps[i],
                _ => crate::sample::splitmix64(&mut s),
            })
            .collect();
        for design in ["4", "10", "m2c1r1"] {
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().join("idx");
            let d = crate::Design::by_name(design, 3).unwrap();
            let opts = crate::index::BuildOptions::default()
                .with_k(3)
                .with_design(crate::index::DesignChoice::Given(d));
            crate::index::build(&path, fps.iter().map(|&f| Ok(f)), &opts).unwrap();
            let idx = Index::open(&path).unwrap();
            let many = idx.near_many(&queries, 3).unwrap();
            for (i, &q) in queries.iter().enumerate() {
                assert_eq!(
                    many.get(i),
                    &idx.near(q, 3).unwrap()[..],
                    "design {design}, query {i}"
                );
            }
            assert!(many.matches.len() >= 1300, "{}", many.matches.len());
        }
    }

    /// Reading ahead changes nothing but timing; once the tables are in memory it stops.
    #[test]
    fn read_ahead_gives_the_same_answers_and_turns_itself_off() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("idx");
        let mut s = 9;
        let fps: Vec<u64> = (0..200_000)
            .map(|_| crate::sample::splitmix64(&mut s))
            .collect();
        let opts = crate::index::BuildOptions::default().with_k(3);
        crate::index::build(&path, fps.iter().map(|&f| Ok(f)), &opts).unwrap();
        let idx = Index::open(&path).unwrap();
        let queries: Vec<u64> = fps[..300].iter().map(|f| f ^ 0b1011).collect();
        let warm: Vec<Vec<Match>> = queries.iter().map(|&q| idx.near(q, 3).unwrap()).collect();
        idx.residency.set_cold(true);
        let cold: Vec<Vec<Match>> = queries.iter().map(|&q| idx.near(q, 3).unwrap()).collect();
        assert_eq!(warm, cold);
        assert!(warm.iter().all(|m| m.len() == 1 && m[0].distance == 3));
        // The files were just written and read: resident, so the 256th cold query re-judges.
        assert!(!idx.residency.is_cold());
    }
}
