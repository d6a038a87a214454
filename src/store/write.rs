//! The write path: append a record to the log, apply it to the delta, sync as the policy says,
//! and compact when the delta is full (or wake the background compactor).

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use super::delta::Layer;
use super::durability::lock;
use super::wal::Record;
use super::*;
use crate::error::{Error, Result};

impl Store {
    /// Store `fp` for document `id`. Inserting a pair that is already stored changes nothing.
    pub fn insert(&self, fp: u64, id: u64) -> Result<()> {
        self.write(Record::Insert(vec![(fp, id)]))
    }

    /// Store many pairs; each group of up to 2^20 pairs is one atomic log record.
    pub fn insert_many(&self, pairs: &[(u64, u64)]) -> Result<()> {
        for chunk in pairs.chunks(MAX_PAIRS_PER_RECORD) {
            self.write(Record::Insert(chunk.to_vec()))?;
        }
        Ok(())
    }

    /// Delete every pair of document `id` (a no-op if there is none).
    pub fn delete(&self, id: u64) -> Result<()> {
        self.write(Record::Delete(vec![id]))
    }

    /// Delete every pair of each id.
    pub fn delete_many(&self, ids: &[u64]) -> Result<()> {
        for chunk in ids.chunks(MAX_PAIRS_PER_RECORD) {
            self.write(Record::Delete(chunk.to_vec()))?;
        }
        Ok(())
    }

    fn write(&self, rec: Record) -> Result<()> {
        self.check_writable()?;
        self.take_background_error()?;
        let (lsn, ops) = {
            let mut w = lock(&self.writer);
            self.durability.check()?;
            let log = w
                .as_mut()
                .ok_or_else(|| Error::Poisoned("no log open".into()))?;
            let before = log.len();
            let end = match log.append(&rec) {
                Ok(end) => end,
                Err(e) => {
                    self.durability.poison(&e);
                    return Err(e);
                }
            };
            let lsn = self
                .durability
                .appended
                .fetch_add(end - before, Ordering::AcqRel)
                + (end - before);
            let mut st = self.write_state();
            apply(&mut st.active, &rec);
            (lsn, st.active.ops())
        };
        if self.opts.sync == SyncPolicy::PerWrite {
            self.durability.sync_to(lsn)?;
        }
        let max = self.opts.max_delta;
        if ops >= max {
            if self.background.load(Ordering::Acquire) && ops < 2 * max {
                let (wake, cv) = &*self.compactor;
                *lock(wake) = true;
                cv.notify_one();
            } else {
                // No compactor, or it is not keeping up: compact here (backpressure).
                self.compact_with(None, true)?;
            }
        }
        Ok(())
    }

    /// Start a thread that compacts whenever the delta is full, so that writers do not wait for
    /// compactions (unless the delta reaches twice its bound while one runs: then the writer
    /// compacts too, which bounds memory). The thread holds only a weak reference and ends when
    /// the store is dropped. Errors of background compactions poison nothing; the next full
    /// delta retries, and the writer's own compaction reports them.
    pub fn start_background_compaction(self: &Arc<Self>) -> std::thread::JoinHandle<()> {
        self.background.store(true, Ordering::Release);
        let weak = Arc::downgrade(self);
        let signal = Arc::clone(&self.compactor);
        std::thread::spawn(move || {
            loop {
                {
                    let (wake, cv) = &*signal;
                    let mut w = lock(wake);
                    while !*w {
                        let (g, t) = cv
                            .wait_timeout(w, Duration::from_millis(100))
                            .unwrap_or_else(|e| e.into_inner());
                        w = g;
                        if t.timed_out() {
                            break;
                        }
                    }
                    *w = false;
                }
                let Some(store) = weak.upgrade() else { return };
                if let Err(e) = store.compact_with(None, true) {
                    *lock(&store.background_error) = Some(e);
                }
            }
        })
    }

    /// Power-loss simulation for tests: (the live log's path, how many of its bytes are known
    /// to be on stable storage). Bytes beyond are what a power failure may take.
    #[cfg(any(test, feature = "internals"))]
    #[doc(hidden)]
    pub fn durable_log(&self) -> (std::path::PathBuf, u64) {
        let (n, len) = self.durability.durable();
        (self.dir.join(super::wal::file_name(n)), len)
    }

    /// Fault injection for tests and fuzzing: the next log append writes only `bytes` bytes of
    /// its record and fails, as a full disk would.
    #[cfg(any(test, feature = "internals"))]
    #[doc(hidden)]
    pub fn inject_log_failure(&self, bytes: u64) {
        if let Some(w) = lock(&self.writer).as_mut() {
            w.fail_next_append_after(bytes);
        }
    }

    /// Sync every acknowledged write to stable storage.
    pub fn flush(&self) -> Result<()> {
        if self.read_only {
            return Ok(());
        }
        self.durability
            .sync_to(self.durability.appended.load(Ordering::Acquire))
    }
}

pub(crate) fn apply(layer: &mut Layer, rec: &Record) {
    match rec {
        Record::Insert(pairs) => {
            for &(fp, id) in pairs {
                layer.insert(fp, id);
            }
        }
        Record::Delete(ids) => {
            for &id in ids {
                layer.delete(id);
            }
        }
    }
}
