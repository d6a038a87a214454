//! When acknowledged writes reach stable storage: the appended/synced positions that let
//! concurrent writers share one fsync (group commit), and the poison flag set by a failed
//! write or fsync.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard};

use super::storage::LogFile;
use super::wal::LogWriter;
use crate::error::{Error, Result};

/// Sync state shared with the group-commit thread. It owns every position it keeps: writers
/// report appends ([`Durability::appended`]), compaction switches logs
/// ([`Durability::switch_log`]), and nothing else sets a field.
#[derive(Debug)]
pub(crate) struct Durability {
    /// A handle to the current log, for fsync without holding the writer (none when read-only).
    file: Mutex<Option<Box<dyn LogFile>>>,
    /// Bytes appended (over all logs of this process), and bytes known synced.
    appended: AtomicU64,
    synced: AtomicU64,
    poisoned: Mutex<Option<String>>,
    stop: AtomicBool,
    /// The current log: (its number, the append position `appended` had when it became
    /// current, its length then). With `synced`, this tells how many of its bytes are durable.
    log_base: Mutex<(u64, u64, u64)>,
    /// fsyncs of the log made, and their total time in nanoseconds.
    fsyncs: AtomicU64,
    fsync_nanos: AtomicU64,
}

impl Durability {
    /// The state of a store just opened: log `number`, whose `len` bytes are all durable
    /// (recovery synced them, or the run that wrote them did), fsynced through `file` (none
    /// when read-only).
    pub(crate) fn new(file: Option<Box<dyn LogFile>>, number: u64, len: u64) -> Durability {
        Durability {
            file: Mutex::new(file),
            appended: AtomicU64::new(0),
            synced: AtomicU64::new(0),
            poisoned: Mutex::new(None),
            stop: AtomicBool::new(false),
            log_base: Mutex::new((number, 0, len)),
            fsyncs: AtomicU64::new(0),
            fsync_nanos: AtomicU64::new(0),
        }
    }

    /// Count `bytes` more appended to the current log; the new end position (the write's lsn,
    /// to pass to [`Durability::sync_to`]).
    pub(crate) fn appended(&self, bytes: u64) -> u64 {
        self.appended.fetch_add(bytes, Ordering::AcqRel) + bytes
    }

    /// The end position of everything appended so far.
    pub(crate) fn appended_end(&self) -> u64 {
        self.appended.load(Ordering::Acquire)
    }

    /// Make `next` the current log: fsync `old` (every write appended so far becomes durable)
    /// and fsync through `next` from now on. A failed fsync poisons the store.
    pub(crate) fn switch_log(&self, old: &LogWriter, next: &LogWriter) -> Result<()> {
        let mut f = lock(&self.file);
        if let Err(e) = old.sync() {
            self.poison(&e);
            return Err(e);
        }
        let at = self.appended.load(Ordering::Acquire);
        self.synced.fetch_max(at, Ordering::AcqRel);
        *lock(&self.log_base) = (next.number(), at, next.len());
        *f = Some(next.try_clone_file()?);
        Ok(())
    }

    /// Ask the group-commit thread to end.
    pub(crate) fn stop(&self) {
        self.stop.store(true, Ordering::Release);
    }

    /// Whether [`Durability::stop`] was called.
    pub(crate) fn stopped(&self) -> bool {
        self.stop.load(Ordering::Acquire)
    }

    /// (fsyncs made, their total time).
    pub(crate) fn fsync_counts(&self) -> (u64, std::time::Duration) {
        (
            self.fsyncs.load(Ordering::Relaxed),
            std::time::Duration::from_nanos(self.fsync_nanos.load(Ordering::Relaxed)),
        )
    }
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

/// Lock a mutex, recovering from poisoning (every structure guarded here is left consistent
/// between statements, and store-level failure is tracked separately).
pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}
