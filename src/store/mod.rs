//! The store: a writable, durable index of (fingerprint, document id) pairs for services that
//! embed simdex as their storage backend.
//!
//! ```text
//! store/
//!   LOCK              held (flock) by the one writer
//!   CURRENT           names the live generation; replaced atomically (the commit point)
//!   gen-000007/       generation 7: an index (MANIFEST, table-NN.sxt) plus the id map IDS
//!   wal-000007.log    writes since generation 7, crc32-framed
//! ```
//!
//! Data path of a write: append one record to the log with one `write(2)`, apply it to the
//! in-memory delta (now visible to queries), then sync according to the [`SyncPolicy`]. A query
//! probes the generation's tables and the delta's per-table sorted sets with the same prefixes,
//! checks distances, and resolves document ids (dropping pairs whose ids were deleted later).
//! Compaction freezes the delta, starts a new log, stream-merges generation and delta into
//! generation N+1, commits by replacing `CURRENT`, and removes the old log; the old generation's
//! files go when the last reader holding it lets go. Queries continue throughout, and so do writes
//! (into the new log). A full delta is compacted by the writer that filled it, or, after
//! [`Store::start_background_compaction`], by a background thread.
//!
//! Invariant: generation G holds every write logged in logs numbered below G; recovery opens
//! generation G and replays logs G, G+1, ... in order (replaying an already compacted log is
//! harmless: the store's contents are a set and replay is idempotent).

mod blocks;
mod buckets;
mod candidate;
mod compact;
internal_mod!(delta);
internal_mod!(docs);
mod documents;
mod durability;
mod expire;
mod gate;
mod generation;
mod hasher;
mod multimap;
internal_mod!(ids);
mod keys;
mod open;
mod options;
mod pigeonhole;
mod pool;
internal_mod!(prefix);
mod prefix_index;
mod prefix_map;
internal_mod!(storage);
mod query;
mod read_only;
mod recipe;
mod scratch;
internal_mod!(sets);
mod varint;
internal_mod!(wal);
mod write;

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock};

use crate::error::{Error, Result};
use delta::Layer;
use durability::Durability;
use generation::Current;
use wal::LogWriter;

#[allow(unused_imports)] // the `internals` feature's users (tests, benches) take these
pub use docs::{DocMeta, MAX_KEY_BYTES};
pub use documents::{Document, IngestOptions, Verdict};
pub use expire::Expiry;
pub use generation::{Generation, GenerationSummary};
#[allow(unused_imports)] // the `internals` feature's users (tests, benches) take these
pub use keys::{DocId, KEY_SEED, KEY_WINDOW};
pub use options::{
    CreateOptions, Recovery, ShapeRequest, StoreCounters, StoreMatch, StoreNearMany, StoreOptions,
    StoreRow, StoreStats, SyncPolicy,
};
#[allow(unused_imports)] // the `internals` feature's users (tests, benches) take these
pub use recipe::{Hashed, LEARN_DOCS, MIN_LEARN_DOCS, RECIPE_NAME, Recipe};
pub use read_only::ReadOnlyStore;
#[allow(unused_imports)] // the `internals` feature's users (tests, benches) take it
pub use sets::DocSet;

/// File name of the writer lock.
pub const LOCK_NAME: &str = "LOCK";
/// Pairs per log record; bigger `insert_many` calls are split into several records.
/// Applying a record to the delta holds the state lock that queries need; at ~10 µs per pair
/// (a B-tree insert per table), 256 pairs keep that near 2 ms however large the call.
const MAX_PAIRS_PER_RECORD: usize = 256;

#[derive(Debug)]
struct State {
    generation: Arc<Generation>,
    /// The delta being compacted, if a compaction is under way (or failed).
    frozen: Option<Arc<Layer>>,
    active: Layer,
    current: Current,
}

impl State {
    fn layers(&self) -> Vec<&Layer> {
        self.frozen
            .iter()
            .map(|l| &**l)
            .chain([&self.active])
            .collect()
    }
}

/// A store open for reading and (unless read-only) writing. `Send + Sync`: share it between
/// threads with an `Arc`; writes serialize internally, queries run in parallel.
///
/// ```
/// use simdex::{CreateOptions, Store, StoreOptions, SyncPolicy};
/// # fn main() -> simdex::Result<()> {
/// # let dir = tempfile::tempdir().unwrap(); let path = dir.path().join("store");
/// Store::create(&path, &CreateOptions::default().with_k(3))?;
/// let store = Store::open(&path, &StoreOptions::default().with_sync(SyncPolicy::Manual))?;
/// store.insert_many(&[(0xff, 1), (0xfe, 2), (0xff, 3)])?;
/// let rows = store.near_many(&[0xff], 1)?; // flat: one row per (fingerprint, id)
/// let got: Vec<(u64, u64)> = rows.rows.iter().map(|r| (r.fingerprint, r.id)).collect();
/// assert_eq!(got, vec![(0xff, 1), (0xff, 3), (0xfe, 2)]);
/// store.close()?; // syncs; reports what dropping would swallow
/// # Ok(()) }
/// ```
#[derive(Debug)]
pub struct Store {
    dir: PathBuf,
    opts: StoreOptions,
    /// Who may write: this process, holding the lock, unless read-only (`open`).
    access: open::Access,
    state: RwLock<State>,
    /// Queries waiting for `state`, let in by writers between records.
    gate: gate::Gate,
    /// The live log and when its records reach stable storage (`write`).
    log: write::Log,
    /// One compaction at a time, the background compactor, and what they did (`compact`).
    compaction: compact::Compaction,
    /// A document store's recipe and the order of its document writes (`documents`).
    docs: documents::DocState,
    recovery: Recovery,
    /// The last log replayed at open and where its valid records ended (a reader opened again
    /// reads on from there).
    log_end: Option<(u64, u64)>,
    closed: AtomicBool,
}

impl Store {
    /// The store directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// What opening found and did (torn tails, leftovers removed).
    pub fn recovery(&self) -> &Recovery {
        &self.recovery
    }

    internal_fn! {
        /// The live generation (a snapshot: it stays readable, files included, while held).
        fn generation(&self) -> Arc<Generation> {
            Arc::clone(&self.read_state().generation)
        }
    }

    /// The largest distance the store's design answers: a query's k is at most this.
    pub fn k(&self) -> u32 {
        self.read_state().generation.index().design().k()
    }

    /// The live generation's directory: an index (`simdex stats` and `Index::open` read it)
    /// beside the store's id map, until a compaction replaces it.
    pub fn generation_dir(&self) -> PathBuf {
        self.read_state().generation.dir().to_path_buf()
    }

    fn read_state(&self) -> std::sync::RwLockReadGuard<'_, State> {
        self.gate.read(&self.state)
    }

    fn write_state(&self) -> std::sync::RwLockWriteGuard<'_, State> {
        self.state.write().unwrap_or_else(|e| e.into_inner())
    }

    fn check_writable(&self) -> Result<()> {
        if self.access.read_only {
            return Err(Error::InvalidArgument(format!(
                "{} is open read-only",
                self.dir.display()
            )));
        }
        self.check_not_forked()?;
        self.log.durability.check()
    }

    /// An error in a process forked after the store was opened (see format-spec/store.md,
    /// "Processes that fork"): the child's copy of the log writer, its positions and its
    /// group-commit state describe the parent's log, and writing through them would interleave
    /// two crc chains in one file.
    fn check_not_forked(&self) -> Result<()> {
        let caller = std::process::id();
        if caller == self.access.pid {
            return Ok(());
        }
        Err(Error::Forked {
            dir: self.dir.clone(),
            opened_by: self.access.pid,
            caller,
        })
    }

    /// Sizes.
    pub fn stats(&self) -> StoreStats {
        let st = self.read_state();
        let g = &st.generation;
        let layers = st.layers();
        let log_bytes = open::log_numbers(&self.dir)
            .unwrap_or_default()
            .into_iter()
            .filter_map(|n| std::fs::metadata(self.dir.join(wal::file_name(n))).ok())
            .map(|m| m.len())
            .sum();
        StoreStats {
            codec: g.index().codec(),
            block_size: st.current.block_size,
            generation: g.number(),
            design: g.index().design().name().to_string(),
            k: g.index().design().k(),
            fingerprints: g.ids().fingerprints(),
            pairs: g.ids().pairs(),
            delta_pairs: layers.iter().map(|l| l.pair_count() as u64).sum(),
            delta_deletes: layers.iter().map(|l| l.deleted_ids().len() as u64).sum(),
            table_bytes: g.index().stats().disk_bytes,
            id_map_bytes: g.ids().byte_len(),
            log_bytes,
            documents: g.docs_count(),
            doc_map_bytes: g.docs().map_or(0, |d| d.byte_len()),
            sets_bytes: g.docs().map_or(0, |d| d.sets_byte_len()),
            sets_live_bytes: g.docs().map_or(0, |d| d.sets_live()),
            max_seq: self.docs.next_seq.load(Ordering::Acquire).saturating_sub(1),
        }
    }

    /// What the store has done since it was opened: the live generation's query counters,
    /// log fsyncs and their time, compactions and their time.
    pub fn counters(&self) -> StoreCounters {
        use std::sync::atomic::Ordering::Relaxed;
        StoreCounters {
            queries: self.generation().index().counters(),
            fsyncs: self.log.durability.fsync_counts().0,
            fsync_time: self.log.durability.fsync_counts().1,
            compactions: self.compaction.count.load(Relaxed),
            compaction_time: std::time::Duration::from_nanos(self.compaction.nanos.load(Relaxed)),
        }
    }

    /// Close the store: stop the group-commit thread and sync every acknowledged write,
    /// returning what dropping the store would have to swallow (a failed final fsync, or a
    /// background compaction's error not reported yet).
    pub fn close(mut self) -> Result<()> {
        self.shutdown()
    }

    fn shutdown(&mut self) -> Result<()> {
        if self.closed.swap(true, Ordering::AcqRel) {
            return Ok(());
        }
        if !self.access.read_only && self.check_not_forked().is_err() {
            // A forked child's copy: the group-commit thread does not exist here (joining it
            // would wait forever), and the log belongs to the parent. Nothing to write.
            std::mem::forget(self.log.flusher.take());
            return Ok(());
        }
        self.log.durability.stop();
        if let Some(t) = self.log.flusher.take() {
            t.thread().unpark();
            let _ = t.join();
        }
        let flushed = if self.access.read_only { Ok(()) } else { self.flush() };
        self.take_background_error()?;
        flushed
    }

    /// Check every checksum of the live generation and that its id map matches its tables.
    pub fn verify(&self) -> Result<()> {
        self.generation().verify()
    }
}

impl Drop for Store {
    /// Closes the store; an error is lost here; call [`Store::close`] to see it.
    fn drop(&mut self) {
        let _ = self.shutdown();
    }
}
