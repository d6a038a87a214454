//! What queries cost, counted as they run: [`QueryCounters`], as an operator reads them, and
//! the sharded atomic counters threads add to.

use std::sync::atomic::Ordering::{Acquire, Relaxed, Release};
use std::sync::atomic::{AtomicU32, AtomicU64, AtomicUsize};

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

/// [`QueryCounters`] as threads add to them: one set per shard, each on cache lines of its own.
///
/// With one set, every query of every thread wrote the same line: two threads calling `near`
/// on two cores made 0.91x the queries per second they made with no counting at all, and 0.97x
/// with shards (medians of six runs, docs/log/benchmarks.md, “an A/B harness”). A thread that
/// holds one of the
/// [`OWNED_SHARDS`] alone (a `Slot`) adds with plain loads and stores, since no other thread
/// writes its lines: five locked adds a call cost a `near` at 1M keys about 4% of its time
/// (B/A 0.96 without them, the log's “where the last levers went”). Threads beyond those share the
/// last [`SHARED_SHARDS`]
/// with atomic adds. Either way every count is exact.
#[derive(Debug)]
pub(crate) struct AtomicCounters {
    shards: Box<[CounterShard]>,
}

/// Shards one thread at a time holds alone (a `Slot`): a bit each of [`Slots`]' `taken`.
const OWNED_SHARDS: usize = 32;

/// Shards the threads that hold none share, adding atomically.
const SHARED_SHARDS: usize = 8;

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

impl CounterShard {
    /// Add `queries` and `w` to each field by `add`.
    #[inline(always)]
    fn add_by(&self, queries: u64, w: &Work, add: impl Fn(&AtomicU64, u64)) {
        add(&self.queries, queries);
        add(&self.probes, w.probes);
        add(&self.blocks, w.blocks);
        add(&self.keys, w.keys);
        add(&self.candidates, w.candidates);
    }

    /// Add `queries` and `w`, as the only thread that writes this shard: no locked
    /// instruction (a reader's `Relaxed` load still sees a whole value).
    #[inline]
    fn add_owned(&self, queries: u64, w: &Work) {
        self.add_by(queries, w, |c, x| {
            c.store(c.load(Relaxed).wrapping_add(x), Relaxed)
        });
    }

    /// Add `queries` and `w` atomically, on a shard other threads write too.
    #[inline]
    fn add_shared(&self, queries: u64, w: &Work) {
        self.add_by(queries, w, |c, x| {
            c.fetch_add(x, Relaxed);
        });
    }
}

impl Default for AtomicCounters {
    fn default() -> Self {
        AtomicCounters {
            shards: (0..OWNED_SHARDS + SHARED_SHARDS)
                .map(|_| CounterShard::default())
                .collect(),
        }
    }
}

/// Which owned shards are taken, a bit each: a thread owns shard `s` of every
/// [`AtomicCounters`] while it holds bit `s` of the process's [`SLOTS`].
#[derive(Debug, Default)]
struct Slots {
    taken: AtomicU32,
    /// The shared shard the next thread without an owned one adds to.
    next: AtomicUsize,
}

/// The process's slots.
static SLOTS: Slots = Slots {
    taken: AtomicU32::new(0),
    next: AtomicUsize::new(0),
};

/// A thread's shard: one it took alone (its bit given back when the thread ends, so that a
/// server's threads come and go without running out), or one of the shared ones.
struct Slot {
    shard: usize,
    owned: bool,
    from: &'static Slots,
}

impl Slots {
    /// Take the lowest free owned shard, or else a shared one (in turn).
    fn take(&'static self) -> Slot {
        let mut taken = self.taken.load(Relaxed);
        while taken != u32::MAX {
            let s = (!taken).trailing_zeros();
            // Acquire: what the shard's last holder added happened before this thread's
            // first load of it (its `Slot::drop` released the bit).
            match self
                .taken
                .compare_exchange_weak(taken, taken | 1 << s, Acquire, Relaxed)
            {
                Ok(_) => {
                    return Slot {
                        shard: s as usize,
                        owned: true,
                        from: self,
                    };
                }
                Err(now) => taken = now,
            }
        }
        Slot {
            shard: OWNED_SHARDS + self.next.fetch_add(1, Relaxed) % SHARED_SHARDS,
            owned: false,
            from: self,
        }
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        if self.owned {
            // Release: this thread's stores to the shard happen before the next holder's loads.
            self.from.taken.fetch_and(!(1 << self.shard), Release);
        }
    }
}

thread_local! {
    static SLOT: Slot = SLOTS.take();
}

impl AtomicCounters {
    /// Add `queries` queries and the work `w` they did, to the calling thread's shard.
    pub(crate) fn add(&self, queries: u64, w: &Work) {
        // A thread whose locals are being torn down (a counter added from a destructor)
        // adds to a shared shard.
        let (shard, owned) = SLOT
            .try_with(|s| (s.shard, s.owned))
            .unwrap_or((OWNED_SHARDS, false));
        let s = &self.shards[shard];
        if owned {
            s.add_owned(queries, w);
        } else {
            s.add_shared(queries, w);
        }
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

    /// Owned shards go to one thread at a time, lowest first, and come back when their
    /// holders end; past them, threads share the shared shards in turn.
    #[test]
    fn slots_are_owned_alone_and_given_back() {
        let slots: &'static Slots = Box::leak(Box::default());
        let mut held: Vec<Slot> = (0..OWNED_SHARDS).map(|_| slots.take()).collect();
        assert!(
            held.iter()
                .enumerate()
                .all(|(i, s)| s.owned && s.shard == i)
        );
        let extra = [slots.take(), slots.take()];
        assert!(extra.iter().all(|s| !s.owned));
        assert_eq!(
            (extra[0].shard, extra[1].shard),
            (OWNED_SHARDS, OWNED_SHARDS + 1)
        );
        drop(held.remove(5));
        let again = slots.take();
        assert!(again.owned && again.shard == 5);
        drop(extra);
        assert_eq!(slots.taken.load(Relaxed), u32::MAX);
    }

    /// Counts added from more threads than there are shards sum exactly.
    #[test]
    fn counters_from_many_threads_sum_exactly() {
        let c = AtomicCounters::default();
        let threads = OWNED_SHARDS + SHARED_SHARDS + 5;
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
