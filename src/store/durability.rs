//! When acknowledged writes reach stable storage: the appended/synced positions that let
//! concurrent writers share one fsync (group commit), and the poison flag set by a failed
//! write or fsync.

use std::fs::File;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard};

use crate::error::{Error, Result};

/// Sync state shared with the group-commit thread.
#[derive(Debug)]
pub(crate) struct Durability {
    /// A handle to the current log, for fsync without holding the writer (none when read-only).
    pub(crate) file: Mutex<Option<File>>,
    /// Bytes appended (over all logs of this process), and bytes known synced.
    pub(crate) appended: AtomicU64,
    pub(crate) synced: AtomicU64,
    pub(crate) poisoned: Mutex<Option<String>>,
    pub(crate) stop: AtomicBool,
    /// The current log: (its number, the append position `appended` had when it became
    /// current, its length then). With `synced`, this tells how many of its bytes are durable.
    pub(crate) log_base: Mutex<(u64, u64, u64)>,
    /// fsyncs of the log made, and their total time in nanoseconds.
    pub(crate) fsyncs: AtomicU64,
    pub(crate) fsync_nanos: AtomicU64,
}

impl Durability {
    pub(crate) fn check(&self) -> Result<()> {
        match &*lock(&self.poisoned) {
            Some(why) => Err(Error::Poisoned(why.clone())),
            None => Ok(()),
        }
    }

    pub(crate) fn poison(&self, e: &Error) {
        let mut p = lock(&self.poisoned);
        if p.is_none() {
            *p = Some(e.to_string());
        }
    }

    /// Make every byte up to `lsn` durable; one fsync serves every writer waiting on it.
    pub(crate) fn sync_to(&self, lsn: u64) -> Result<()> {
        if self.synced.load(Ordering::Acquire) >= lsn {
            return Ok(());
        }
        let f = lock(&self.file);
        if self.synced.load(Ordering::Acquire) >= lsn {
            return Ok(());
        }
        let Some(f) = f.as_ref() else {
            return Ok(());
        };
        let target = self.appended.load(Ordering::Acquire);
        let t0 = std::time::Instant::now();
        let r = f.sync_data();
        self.fsyncs.fetch_add(1, Ordering::Relaxed);
        self.fsync_nanos
            .fetch_add(t0.elapsed().as_nanos() as u64, Ordering::Relaxed);
        if let Err(e) = r {
            let e = Error::io(None, "fsync log", e);
            self.poison(&e);
            return Err(e);
        }
        self.synced.fetch_max(target, Ordering::AcqRel);
        Ok(())
    }
}

impl Durability {
    /// (log number, bytes of it known to be on stable storage): what survives a power loss.
    /// Read by the power-loss tests (`Store::durable_log`, tests and `internals` only).
    #[cfg_attr(not(any(test, feature = "internals")), allow(dead_code))]
    pub(crate) fn durable(&self) -> (u64, u64) {
        let (number, lsn0, len0) = *lock(&self.log_base);
        let synced = self.synced.load(Ordering::Acquire);
        (number, len0 + synced.saturating_sub(lsn0))
    }
}

/// Lock a mutex, recovering from poisoning (every structure guarded here is left consistent
/// between statements, and store-level failure is tracked separately).
pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}
