//! Writers let waiting queries in between records, so that no query waits on the state lock
//! for longer than one record's apply.
//!
//! A writer applies a bulk call record by record, taking the state lock for writing for each.
//! Released and retaken at once, the lock starves queries: unlocking wakes a waiting query,
//! but the writer, already running, retakes the lock before the query's thread is scheduled
//! (measured: one query waited 130 ms during a 1M-pair `insert_many`). A pause between
//! records fixed that at a fixed cost per record whether or not anyone waited, and a fair
//! hand-off (parking_lot's `unlock_fair`) made queries wait longer (docs/log/benchmarks.md). Here
//! queries count themselves in and out, and a writer between records waits — without holding
//! any lock — until every query that was already waiting holds its read lock. The lock
//! prefers writers, so queries that come later wait for at most the next record.

use std::sync::atomic::AtomicU64;
use std::sync::atomic::Ordering::SeqCst;
use std::sync::{RwLock, RwLockReadGuard};

/// Counts of queries that asked for the state lock, and of those that got it.
#[derive(Debug, Default)]
pub(crate) struct Gate {
    arrived: AtomicU64,
    admitted: AtomicU64,
}

impl Gate {
    /// Take `lock` for reading, counted.
    pub(crate) fn read<'a, T>(&self, lock: &'a RwLock<T>) -> RwLockReadGuard<'a, T> {
        self.arrived.fetch_add(1, SeqCst);
        let guard = lock.read().unwrap_or_else(|e| e.into_inner());
        self.admitted.fetch_add(1, SeqCst);
        guard
    }

    /// Return once every query that asked for the lock before this call holds it (or has
    /// held it). The caller must hold no lock those queries wait for: then each is blocked
    /// only until a writer in its critical section leaves it, and the wait ends.
    pub(crate) fn let_waiting_in(&self) {
        let target = self.arrived.load(SeqCst);
        let mut spins = 0u32;
        while self.admitted.load(SeqCst) < target {
            if spins < 100 {
                std::hint::spin_loop();
                spins += 1;
            } else {
                std::thread::yield_now();
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::time::{Duration, Instant};

    /// A writer that retakes the lock at once, section after section, lets a waiting reader
    /// in at its next gap: the reader waits for at most the section under way and the one
    /// that may start as it arrives. Without the gate the same reader waits through dozens to
    /// thousands of sections (it wakes to find the lock taken again).
    #[test]
    fn a_waiting_reader_gets_in_at_the_next_gap() {
        let lock = Arc::new(RwLock::new(()));
        let gate = Arc::new(Gate::default());
        let sections = Arc::new(AtomicU64::new(0));
        let stop = Arc::new(AtomicBool::new(false));
        let writer = {
            let (lock, gate, sections, stop) =
                (lock.clone(), gate.clone(), sections.clone(), stop.clone());
            std::thread::spawn(move || {
                let start = Instant::now();
                while !stop.load(Ordering::Relaxed) && start.elapsed() < Duration::from_secs(10) {
                    gate.let_waiting_in();
                    let _g = lock.write().unwrap();
                    let t = Instant::now();
                    while t.elapsed() < Duration::from_micros(100) {
                        std::hint::spin_loop();
                    }
                    sections.fetch_add(1, SeqCst);
                }
            })
        };
        while sections.load(SeqCst) < 10 {
            std::thread::yield_now();
        }
        let mut worst = 0;
        for _ in 0..200 {
            let before = sections.load(SeqCst);
            let g = gate.read(&lock);
            worst = worst.max(sections.load(SeqCst) - before);
            drop(g);
        }
        stop.store(true, Ordering::Relaxed);
        writer.join().unwrap();
        assert!(worst <= 2, "a reader waited through {worst} write sections");
    }
}
