//! `near_many` by the batch scan: when a call's queries are many enough that the paper's batch
//! mode (`index::batch`: the queries sorted under each table's permutation, every table
//! streamed past them once) costs less than answering them one by one, and the scan's pairs
//! regrouped into `near_many`'s answer.

use rayon::prelude::*;

use crate::error::Result;
use crate::index::batch::BatchOptions;
use crate::index::probe::Work;
use crate::index::{Index, Match, NearMany};
use crate::progress::ProgressHandle;

/// [`Index::near_many`] answers by the batch scan from this many queries ...
pub(crate) const SCAN_MIN: usize = 1 << 12;

/// ... and from one probe entry a table per this many stored keys ([`Index::scan_pays`]) ...
const SCAN_SHARE: u64 = 8;

/// ... while the scan's probe lists (16 bytes per query per probe) fit in this many bytes.
const SCAN_MEMORY: u64 = 1 << 30;

/// [`Index::scan_pays`] for `queries` queries of `probes` probes each over `tables` tables of
/// `keys` keys.
fn scan_pays(queries: usize, probes: u64, tables: usize, keys: u64) -> bool {
    let entries = (queries as u64).saturating_mul(probes);
    let lists = entries.saturating_mul(size_of::<(u64, u64)>() as u64);
    queries >= SCAN_MIN
        && entries / tables.max(1) as u64 >= keys / SCAN_SHARE
        && lists <= SCAN_MEMORY
}

impl<D: AsRef<[u8]> + Sync> Index<D> {
    /// Whether [`near_many`](Index::near_many) answers `queries` queries by the batch scan
    /// ([`near_many_by_scan`](Self::near_many_by_scan)) rather than query by query.
    ///
    /// The scan reads every table once in key order, and the queries' probes that share a
    /// block (or a prefix run) share its decoding; query by query, each probe pays its own
    /// block search, head and misses. So the scan pays once a batch's probe entries crowd
    /// each table: from one entry (a query's probe of the table) per [`SCAN_SHARE`] stored
    /// keys. Measured on one thread (docs/log/benchmarks.md, “a large `near_many` answered by one
    /// scan”), one probe a table: at
    /// 1M keys (design 4) it broke even at a sixteenth as many queries as keys and took 0.85x
    /// the time at an eighth, 0.7-0.75x from a quarter on; at 10M (design 10), 0.5-0.6x from
    /// an eighth on (and 0.7-0.85x already at a fortieth), but at 100M (B = 1024) 1.1-1.25x
    /// at a hundredth and a four-hundredth, where the scan's sparse skips cost more than
    /// random probes. A design with a probe radius makes 22-33 probes a table (m3c1r1, which
    /// `auto` takes for k = 5 at 10M; m2c1r1): the scan broke even at a six-hundredth as many
    /// queries as keys at 10M, took 0.55x at a hundredth and 0.35-0.63x from 4096 queries at
    /// 1M (the log's “one probe list per table”); counting entries, not queries, takes it there
    /// from a two-hundredth (10M,
    /// m3c1r1: 56k queries) or from `SCAN_MIN` (1M, m2c1r1).
    /// Only for batches of [`SCAN_MIN`] queries or more (a smaller call keeps the latency of a
    /// few queries), while its in-memory probe lists fit in [`SCAN_MEMORY`].
    pub(crate) fn scan_pays(&self, queries: usize) -> bool {
        if let Some(forced) = self.scan {
            return forced;
        }
        scan_pays(
            queries,
            self.probes_per_query,
            self.tables.len(),
            self.len(),
        )
    }

    /// [`near_many`](Index::near_many) by the batch scan ([`batch_near`](Self::batch_near)'s
    /// pairs, regrouped): the same answers, each query's matches by distance, then
    /// fingerprint, and the same counters (queries, probes and candidates as query by query
    /// counts them; the blocks and keys the scan decoded).
    pub(crate) fn near_many_by_scan(
        &self,
        fps: &[u64],
        k: u32,
        progress: &ProgressHandle,
    ) -> Result<NearMany> {
        let opts = BatchOptions::default()
            .with_k(k)
            .with_within(false)
            .with_progress(progress.clone());
        let (r, blocks) = self.scan_batch(fps, &opts)?;
        // The queries in fingerprint order walk the pairs (sorted by batch fingerprint) once:
        // each query's pairs are the run of its fingerprint (a repeated query's, the same run).
        // (A scanned batch has at most 2^26 queries, `SCAN_MEMORY`: its indices fit in u32.)
        let mut order: Vec<(u64, u32)> = fps.iter().zip(0u32..).map(|(&f, i)| (f, i)).collect();
        order.par_sort_unstable();
        let mut runs = vec![(0usize, 0usize); fps.len()];
        let mut at = 0;
        for &(fp, i) in &order {
            while at < r.pairs.len() && r.pairs[at].batch < fp {
                at += 1;
            }
            let len = r.pairs[at..].partition_point(|p| p.batch == fp);
            runs[i as usize] = (at, len);
        }
        let mut out = NearMany {
            offsets: Vec::with_capacity(fps.len() + 1),
            matches: Vec::with_capacity(runs.iter().map(|r| r.1).sum()),
        };
        out.offsets.push(0);
        let design = self.design();
        let mut candidates = 0u64;
        for &(from, len) in &runs {
            let start = out.matches.len();
            for p in &r.pairs[from..from + len] {
                // Counted as query by query counts them: once in every table whose probes
                // reach the pair (the scan reported it from the first of them only).
                candidates += (0..self.tables.len())
                    .filter(|&j| design.table_covers(j, p.batch ^ p.stored))
                    .count() as u64;
                out.matches.push(Match {
                    distance: p.distance,
                    fingerprint: p.stored,
                });
            }
            out.matches[start..].sort_unstable();
            out.offsets.push(out.matches.len());
        }
        let work = Work {
            probes: fps.len() as u64 * self.probes_per_query,
            blocks,
            keys: r.keys_scanned,
            candidates,
        };
        self.counters.add(fps.len() as u64, &work);
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The scan's threshold counts a table's probe entries: with one probe a table, an
    /// eighth as many queries as keys; with a radius's 33 (m2c1r1: 66 probes over 2 tables),
    /// 33 times fewer; never under `SCAN_MIN` queries or over `SCAN_MEMORY` of lists.
    #[test]
    fn the_scan_counts_probe_entries_a_table() {
        let m = 10_000_000u64;
        assert!(!scan_pays(1_249_999, 10, 10, m));
        assert!(scan_pays(1_250_000, 10, 10, m));
        assert!(!scan_pays(37_878, 66, 2, m));
        assert!(scan_pays(37_879, 66, 2, m));
        assert!(!scan_pays(SCAN_MIN - 1, 66, 2, 1_000));
        assert!(scan_pays(SCAN_MIN, 66, 2, 1_000));
        let most = (SCAN_MEMORY / 16 / 66) as usize;
        assert!(scan_pays(most, 66, 2, 1_000));
        assert!(!scan_pays(most + 1, 66, 2, 1_000));
        assert!(!scan_pays(usize::MAX, 66, 2, 1_000));
    }

    /// `near_many` scans from `SCAN_MIN` queries and an eighth as many as stored keys on, and
    /// never where the probe lists would pass `SCAN_MEMORY`.
    #[test]
    fn near_many_scans_batches_that_crowd_the_tables() {
        let dir = tempfile::tempdir().unwrap();
        for (n, name) in [(10_000usize, "small"), (100_000, "large")] {
            let path = dir.path().join(name);
            let fps = crate::sample::random(n, 9);
            crate::index::build(&path, fps.iter().map(|&f| Ok(f)), &Default::default()).unwrap();
            let idx = Index::open(&path).unwrap();
            let at = SCAN_MIN.max(n / SCAN_SHARE as usize);
            assert!(!idx.scan_pays(at - 1), "{n} keys, {} queries", at - 1);
            assert!(idx.scan_pays(at), "{n} keys, {at} queries");
            let too_many = (SCAN_MEMORY / 16 / idx.probes_per_query) as usize + 1;
            assert!(!idx.scan_pays(too_many), "{n} keys, {too_many} queries");
            assert!(!idx.scan_pays(usize::MAX));
        }
    }
}
