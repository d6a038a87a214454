//! The store a server answers from: the store it owns and writes, or (read-only mode) a
//! reader of a store another process writes, opened again whenever that store has changed.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;

use simdex::{
    Document, IngestOptions, ProgressHandle, ReadOnlyStore, Recipe, Result, Store, StoreCounters,
    StoreMatch, StoreNearMany, StoreOptions, StoreStats, Verdict,
};

/// See the module docs.
pub enum Backend {
    /// The store this process opened for writing (it holds the store's lock).
    Writer(Arc<Store>),
    /// A reader, swapped for a newer one when the store changes.
    Reader(Follower),
}

/// A read-only view that follows a store written by another process.
pub struct Follower {
    dir: PathBuf,
    current: RwLock<Arc<ReadOnlyStore>>,
    /// What the store looked like when `current` was opened.
    seen: Mutex<Signature>,
}

/// What changes when a writer logs or compacts: each log's length, and what CURRENT names.
#[derive(Debug, PartialEq, Eq, Default)]
struct Signature(Vec<(String, u64)>);

fn signature(dir: &Path) -> Signature {
    let mut v: Vec<(String, u64)> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            let log = name.starts_with("wal-") && name.ends_with(".log");
            log.then(|| Some((name, e.metadata().ok()?.len())))?
        })
        .collect();
    if let Ok(current) = std::fs::read(dir.join("CURRENT")) {
        v.push((String::from_utf8_lossy(&current).into_owned(), 0));
    }
    v.sort();
    Signature(v)
}

impl Follower {
    /// Open `dir` read-only.
    pub fn open(dir: &Path, opts: &StoreOptions) -> Result<Follower> {
        let seen = signature(dir);
        let store = ReadOnlyStore::open_with(dir, opts)?;
        Ok(Follower {
            dir: dir.to_path_buf(),
            current: RwLock::new(Arc::new(store)),
            seen: Mutex::new(seen),
        })
    }

    /// The reader answering now.
    pub fn get(&self) -> Arc<ReadOnlyStore> {
        Arc::clone(&self.current.read().unwrap_or_else(|e| e.into_inner()))
    }

    /// Open the store again if it changed since; whether it did (an error leaves the old
    /// reader answering: a compaction may have been half-way through switching).
    pub fn refresh(&self) -> Result<bool> {
        let now = signature(&self.dir);
        let mut seen = self.seen.lock().unwrap_or_else(|e| e.into_inner());
        if *seen == now {
            return Ok(false);
        }
        // The new reader is made ready (an exact store's prefix index: seconds per million
        // documents where a compaction replaced the generation) while the old one answers.
        let store = self.get().reopen()?;
        store.warm()?;
        *self.current.write().unwrap_or_else(|e| e.into_inner()) = Arc::new(store);
        *seen = now;
        Ok(true)
    }

    /// Refresh every `every` until `stop` returns true, logging failures with `log`.
    pub fn follow(&self, every: Duration, stop: &dyn Fn() -> bool, log: &dyn Fn(String)) {
        let mut failing = false;
        while !stop() {
            std::thread::sleep(every.min(Duration::from_millis(200)));
            match self.refresh() {
                Ok(_) => failing = false,
                Err(e) if !failing => {
                    failing = true;
                    log(format!("reopening the store failed (retrying): {e}"));
                }
                Err(_) => {}
            }
        }
    }
}

impl Backend {
    /// Build what the first answers would wait for (see [`Store::warm`]).
    pub fn warm(&self) -> Result<()> {
        match self {
            Backend::Writer(s) => s.warm(),
            Backend::Reader(r) => r.get().warm(),
        }
    }

    /// The store to write to, or why there is none.
    pub fn writer(&self) -> Option<&Store> {
        match self {
            Backend::Writer(s) => Some(s),
            Backend::Reader(_) => None,
        }
    }

    /// Stored fingerprints within `k` of `fp`.
    pub fn near(&self, fp: u64, k: u32) -> Result<Vec<StoreMatch>> {
        match self {
            Backend::Writer(s) => s.near(fp, k),
            Backend::Reader(r) => r.get().near(fp, k),
        }
    }

    /// Each query's stored fingerprints within `k`.
    pub fn near_many(&self, fps: &[u64], k: u32, p: &ProgressHandle) -> Result<StoreNearMany> {
        match self {
            Backend::Writer(s) => s.near_many_with(fps, k, p),
            Backend::Reader(r) => r.get().near_many_with(fps, k, p),
        }
    }

    /// The ids stored with exactly `fp`.
    pub fn ids_of(&self, fp: u64) -> Result<Vec<u64>> {
        match self {
            Backend::Writer(s) => s.ids_of(fp),
            Backend::Reader(r) => r.get().ids_of(fp),
        }
    }

    /// The answers ingest would give, storing nothing.
    pub fn check(&self, docs: &[Document<'_>], opts: &IngestOptions) -> Result<Vec<Verdict>> {
        match self {
            Backend::Writer(s) => s.check_documents(docs, opts),
            Backend::Reader(r) => r.get().check_documents(docs, opts),
        }
    }

    /// Sizes.
    pub fn stats(&self) -> StoreStats {
        match self {
            Backend::Writer(s) => s.stats(),
            Backend::Reader(r) => r.get().stats(),
        }
    }

    /// Work done since opening.
    pub fn counters(&self) -> StoreCounters {
        match self {
            Backend::Writer(s) => s.counters(),
            Backend::Reader(r) => r.get().counters(),
        }
    }

    /// The store's k.
    pub fn k(&self) -> u32 {
        match self {
            Backend::Writer(s) => s.k(),
            Backend::Reader(r) => r.get().k(),
        }
    }

    /// A document store's recipe.
    pub fn recipe(&self) -> Option<Recipe> {
        match self {
            Backend::Writer(s) => s.recipe().cloned(),
            Backend::Reader(r) => r.get().recipe().cloned(),
        }
    }
}
