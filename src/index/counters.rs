//! What queries cost, counted as they run: [`QueryCounters`], as an operator reads them, and
//! the sharded atomic counters threads add to.

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

#[cfg(doc)]
use super::Index;
use super::probe::Work;

/// Counters of an open [`Index`] (or a store's generations), since it was opened: what the
/// queries cost. Read with [`Index::counters`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct QueryCounters {
    /// Queries answered (`near*`, `has_near`).
    pub queries: u64,
    /// Table probes made (prefix ranges looked up).
    pub probes: u64,
    /// Blocks decoded.
    pub blocks_decoded: u64,
    /// Keys decoded.
    pub keys_decoded: u64,
    /// Keys within the distance (before removing repeats across tables).
    pub candidates: u64,
}

/// [`QueryCounters`] as threads add to them: one set per shard, each on cache lines of its own,
/// a thread adding to the shard it was given. With one set, every query of every thread wrote
/// the same line: two threads calling `near` on two cores made 0.91x the queries per second
/// they made with no counting at all, and 0.97x with the shards (medians of six runs,
/// BENCHMARKS.md, part 8); a line passed among more cores costs more.
#[derive(Debug)]
pub(crate) struct AtomicCounters {
    shards: Box<[CounterShard]>,
}

/// Shards of [`AtomicCounters`]: threads beyond this many share them.
const COUNTER_SHARDS: usize = 32;

/// One shard: 40 bytes, aligned to 128 (two lines: the CPU's adjacent-line prefetch pairs them).
#[derive(Debug, Default)]
#[repr(align(128))]
struct CounterShard {
    queries: AtomicU64,
    probes: AtomicU64,
    blocks: AtomicU64,
    keys: AtomicU64,
    candidates: AtomicU64,
}

impl Default for AtomicCounters {
    fn default() -> Self {
        AtomicCounters {
            shards: (0..COUNTER_SHARDS)
                .map(|_| CounterShard::default())
                .collect(),
        }
    }
}

/// The shard of the calling thread: threads are numbered in the order they first count.
fn counter_shard() -> usize {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    thread_local! {
        static SHARD: usize = NEXT.fetch_add(1, Relaxed) as usize % COUNTER_SHARDS;
    }
    SHARD.with(|s| *s)
}

impl AtomicCounters {
    pub(crate) fn add(&self, queries: u64, w: &Work) {
        let s = &self.shards[counter_shard()];
        s.queries.fetch_add(queries, Relaxed);
        s.probes.fetch_add(w.probes, Relaxed);
        s.blocks.fetch_add(w.blocks, Relaxed);
        s.keys.fetch_add(w.keys, Relaxed);
        s.candidates.fetch_add(w.candidates, Relaxed);
    }

    pub(crate) fn read(&self) -> QueryCounters {
        let mut c = QueryCounters::default();
        for s in self.shards.iter() {
            c.queries += s.queries.load(Relaxed);
            c.probes += s.probes.load(Relaxed);
            c.blocks_decoded += s.blocks.load(Relaxed);
            c.keys_decoded += s.keys.load(Relaxed);
            c.candidates += s.candidates.load(Relaxed);
        }
        c
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Counts added from more threads than there are shards sum exactly.
    #[test]
    fn counters_from_many_threads_sum_exactly() {
        let c = AtomicCounters::default();
        let threads = COUNTER_SHARDS + 5;
        std::thread::scope(|s| {
            for t in 0..threads as u64 {
                let c = &c;
                s.spawn(move || {
                    for _ in 0..1000 {
                        let w = Work {
                            probes: 1,
                            blocks: 2,
                            keys: t,
                            candidates: 3,
                        };
                        c.add(1, &w);
                    }
                });
            }
        });
        let n = threads as u64;
        assert_eq!(
            c.read(),
            QueryCounters {
                queries: 1000 * n,
                probes: 1000 * n,
                blocks_decoded: 2000 * n,
                keys_decoded: 1000 * n * (n - 1) / 2,
                candidates: 3000 * n,
            }
        );
    }
}
