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

pub mod delta;
pub mod generation;
pub mod ids;
pub mod wal;

use std::collections::BTreeMap;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, RwLock};
use std::time::Duration;

use crate::codec::Codec;
use crate::error::{Error, Result};
use crate::index::DesignChoice;
use delta::Layer;
use generation::{Current, Generation, Layout, Source};
use wal::{LogWriter, Record};

pub use generation::GenerationSummary;

/// File name of the writer lock.
pub const LOCK_NAME: &str = "LOCK";
/// Pairs per log record; bigger `insert_many` calls are split into several records.
const MAX_PAIRS_PER_RECORD: usize = 1 << 20;

/// When the log is forced to stable storage (fsync).
///
/// Every write reaches the operating system (`write(2)`) before it is acknowledged, so no
/// policy loses an acknowledged write when only the *process* dies (a panic, SIGKILL, OOM kill).
/// The policies differ on power loss or a kernel crash:
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SyncPolicy {
    /// Each write returns only after its record is synced. Survives power loss. Concurrent
    /// writers share fsyncs (group commit): one fsync covers every record appended before it.
    PerWrite,
    /// Writes return at once; a background thread syncs the log every interval. Power loss
    /// loses at most the writes of the last interval.
    Group(Duration),
    /// The log is synced only by [`Store::flush`], compaction and closing the store. Power loss
    /// loses the writes since the last flush.
    Manual,
}

/// How to open a store.
#[derive(Debug, Clone)]
pub struct StoreOptions {
    /// Log sync policy.
    pub sync: SyncPolicy,
    /// Compact when the delta holds this many operations (inserted pairs and deletes).
    pub max_delta: u64,
    /// Memory budget for rebuilds that re-sort (see [`crate::index::BuildOptions::mem_bytes`]).
    pub mem_bytes: u64,
    /// Progress bars on stderr during compaction (drawn only on a terminal).
    pub progress: bool,
}

impl Default for StoreOptions {
    fn default() -> Self {
        StoreOptions {
            sync: SyncPolicy::PerWrite,
            max_delta: 1 << 20,
            mem_bytes: 1 << 30,
            progress: false,
        }
    }
}

/// The shape of a new store.
#[derive(Debug, Clone)]
pub struct CreateOptions {
    /// Largest query distance answered exactly.
    pub k: u32,
    /// The design ([`DesignChoice::Auto`] picks one for `expected_keys`).
    pub design: DesignChoice,
    /// Codec of every table.
    pub codec: Codec,
    /// Fixed block size; `None` picks one per generation size.
    pub block_size: Option<u32>,
    /// Fingerprints the store is expected to grow to (for the automatic design).
    pub expected_keys: u64,
}

impl Default for CreateOptions {
    fn default() -> Self {
        CreateOptions {
            k: 3,
            design: DesignChoice::Auto,
            codec: Codec::HDelta,
            block_size: None,
            expected_keys: 10_000_000,
        }
    }
}

/// A stored fingerprint within the query distance, with its documents.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct StoreMatch {
    /// Hamming distance to the query.
    pub distance: u32,
    /// The stored fingerprint.
    pub fingerprint: u64,
    /// Ids of the documents stored with it, ascending.
    pub ids: Vec<u64>,
}

/// What opening the store found in its logs.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Recovery {
    /// Logs replayed.
    pub logs: usize,
    /// Records replayed.
    pub records: u64,
    /// Torn tails found: (log file, offset of the valid end, bytes after it). A writable open
    /// truncates them; a read-only open ignores them.
    pub torn: Vec<(PathBuf, u64, u64)>,
    /// Leftover files of an interrupted compaction that were removed.
    pub removed: Vec<PathBuf>,
}

impl Recovery {
    /// One line per torn tail, for warnings.
    pub fn warnings(&self) -> Vec<String> {
        self.torn
            .iter()
            .map(|(p, at, n)| {
                format!(
                    "{}: torn tail of {n} bytes after offset {at} (a write cut short by a \
                     crash; it was never acknowledged) dropped",
                    p.display()
                )
            })
            .collect()
    }
}

/// Sizes of a store.
#[derive(Debug, Clone, PartialEq)]
pub struct StoreStats {
    /// Live generation number.
    pub generation: u64,
    /// Design name.
    pub design: String,
    /// Largest k answered exactly.
    pub k: u32,
    /// Distinct fingerprints in the generation.
    pub fingerprints: u64,
    /// Pairs in the generation.
    pub pairs: u64,
    /// Pairs inserted in the delta (not yet compacted).
    pub delta_pairs: u64,
    /// Ids deleted in the delta.
    pub delta_deletes: u64,
    /// Bytes of the generation's tables.
    pub table_bytes: u64,
    /// Bytes of the generation's id map.
    pub id_map_bytes: u64,
    /// Bytes of the logs.
    pub log_bytes: u64,
}

/// Sync state shared with the group-commit thread.
#[derive(Debug)]
struct Durability {
    /// A handle to the current log, for fsync without holding the writer (none when read-only).
    file: Mutex<Option<File>>,
    /// Bytes appended (over all logs of this process), and bytes known synced.
    appended: AtomicU64,
    synced: AtomicU64,
    poisoned: Mutex<Option<String>>,
    stop: AtomicBool,
}

impl Durability {
    fn check(&self) -> Result<()> {
        match &*lock(&self.poisoned) {
            Some(why) => Err(Error::Poisoned(why.clone())),
            None => Ok(()),
        }
    }

    fn poison(&self, e: &Error) {
        let mut p = lock(&self.poisoned);
        if p.is_none() {
            *p = Some(e.to_string());
        }
    }

    /// Make every byte up to `lsn` durable; one fsync serves every writer waiting on it.
    fn sync_to(&self, lsn: u64) -> Result<()> {
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
        if let Err(e) = f.sync_data() {
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
fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

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
#[derive(Debug)]
pub struct Store {
    dir: PathBuf,
    opts: StoreOptions,
    read_only: bool,
    _lock: Option<File>,
    state: RwLock<State>,
    writer: Mutex<Option<LogWriter>>,
    durability: Arc<Durability>,
    compaction: Mutex<()>,
    /// Set while a background compactor runs: writers that fill the delta wake it instead of
    /// compacting themselves.
    compactor: Arc<(Mutex<bool>, std::sync::Condvar)>,
    background: AtomicBool,
    flusher: Option<std::thread::JoinHandle<()>>,
    recovery: Recovery,
}

fn perms_of(g: &Generation) -> Vec<crate::Permutation> {
    g.index()
        .design()
        .tables()
        .iter()
        .map(|t| t.permutation.clone())
        .collect()
}

/// Log numbers present in `dir`, ascending.
fn log_numbers(dir: &Path) -> Result<Vec<u64>> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).map_err(|e| Error::io(dir.to_path_buf(), "list", e))? {
        let e = e.map_err(|e| Error::io(dir.to_path_buf(), "list", e))?;
        let name = e.file_name().to_string_lossy().into_owned();
        if let Some(n) = name
            .strip_prefix("wal-")
            .and_then(|s| s.strip_suffix(".log"))
            .and_then(|s| s.parse::<u64>().ok())
        {
            out.push(n);
        }
    }
    out.sort_unstable();
    Ok(out)
}

fn apply(layer: &mut Layer, rec: &Record) {
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

impl Store {
    /// Create an empty store at `dir` (which must not exist). Atomic: a crash leaves no
    /// directory or a whole store.
    pub fn create(dir: impl AsRef<Path>, opts: &CreateOptions) -> Result<()> {
        Store::create_inner(dir.as_ref(), opts, None).map(|_| ())
    }

    fn create_inner(
        dir: &Path,
        opts: &CreateOptions,
        bulk: Option<generation::SortedPairs<'_>>,
    ) -> Result<GenerationSummary> {
        let design = opts
            .design
            .resolve(opts.expected_keys.max(1), opts.k, opts.block_size)?;
        if let Some(b) = opts.block_size {
            crate::table::format::check_block_size(b)?;
        }
        let staging = crate::atomic::StagedDir::new(dir, "creating")?;
        let layout = Layout {
            design: design.clone(),
            codec: opts.codec,
            block_size: opts.block_size,
        };
        let empty = Layer::new(Vec::new());
        let summary = generation::write_generation_with(
            staging.path(),
            0,
            &layout,
            &[Source {
                generation: None,
                layer: &empty,
            }],
            bulk,
            1 << 20,
            false,
        )?;
        Current {
            generation: 0,
            block_size: opts.block_size,
        }
        .write(staging.path())?;
        staging.publish()?;
        Ok(summary)
    }

    /// Create a store at `dir` (which must not exist) holding `pairs`, which must be strictly
    /// ascending by (fingerprint, id): a bulk load that bypasses the log and the delta. Atomic
    /// like [`Store::create`]. Holds the distinct fingerprints in memory (8 bytes each).
    pub fn create_from_sorted(
        dir: impl AsRef<Path>,
        opts: &CreateOptions,
        pairs: impl Iterator<Item = Result<(u64, u64)>> + Send,
    ) -> Result<GenerationSummary> {
        Store::create_inner(dir.as_ref(), opts, Some(Box::new(pairs)))
    }

    /// True if `dir` looks like a store (has a `CURRENT` file).
    pub fn is_store(dir: impl AsRef<Path>) -> bool {
        dir.as_ref().join(generation::CURRENT_NAME).is_file()
    }

    /// Open the store at `dir` for reading and writing: take the writer lock, remove what an
    /// interrupted compaction left, replay the logs (truncating a torn tail; see
    /// [`Store::recovery`]).
    pub fn open(dir: impl AsRef<Path>, opts: &StoreOptions) -> Result<Store> {
        Store::open_inner(dir.as_ref(), opts, false)
    }

    /// Open the store at `dir` read-only: no lock, nothing written. Sees the writes logged up
    /// to the moment of opening. Safe beside a running writer.
    pub fn open_read_only(dir: impl AsRef<Path>) -> Result<Store> {
        // A writer may commit a compaction (and remove the old generation and logs) while we
        // open; every such case surfaces as "not found" and is retried.
        let mut last = None;
        for attempt in 0..100u64 {
            match Store::open_inner(dir.as_ref(), &StoreOptions::default(), true) {
                Err(Error::Io { source, .. }) if source.kind() == std::io::ErrorKind::NotFound => {
                    last = Some(source);
                    std::thread::sleep(Duration::from_millis(1 + attempt.min(20)));
                }
                other => return other,
            }
        }
        Err(Error::io(
            dir.as_ref().to_path_buf(),
            "open store",
            last.unwrap_or_else(|| std::io::Error::other("kept changing")),
        ))
    }

    fn open_inner(dir: &Path, opts: &StoreOptions, read_only: bool) -> Result<Store> {
        if opts.max_delta == 0 {
            return Err(Error::InvalidArgument(
                "max_delta must be at least 1".into(),
            ));
        }
        if !Store::is_store(dir) {
            return Err(Error::io(
                dir.join(generation::CURRENT_NAME),
                "open store",
                std::io::Error::new(
                    std::io::ErrorKind::NotFound,
                    "no CURRENT: not a simdex store (create one with `simdex insert --create`)",
                ),
            ));
        }
        let lock_file = if read_only {
            None
        } else {
            let p = dir.join(LOCK_NAME);
            let f = std::fs::OpenOptions::new()
                .create(true)
                .truncate(false)
                .write(true)
                .open(&p)
                .map_err(|e| Error::io(p.clone(), "open lock file", e))?;
            match f.try_lock() {
                Ok(()) => {}
                Err(std::fs::TryLockError::WouldBlock) => return Err(Error::Locked { path: p }),
                Err(std::fs::TryLockError::Error(e)) => {
                    return Err(Error::io(p, "lock", e));
                }
            }
            Some(f)
        };
        let current = Current::read(dir)?;
        let g = current.generation;
        let mut recovery = Recovery::default();
        if !read_only {
            // Leftovers: generations other than the live one (retired, or written by a
            // compaction that crashed before its commit), staging directories, compacted logs.
            for e in std::fs::read_dir(dir).map_err(|e| Error::io(dir.to_path_buf(), "list", e))? {
                let e = e.map_err(|e| Error::io(dir.to_path_buf(), "list", e))?;
                let name = e.file_name().to_string_lossy().into_owned();
                let stale_gen = name
                    .strip_prefix("gen-")
                    .and_then(|s| s.parse::<u64>().ok())
                    .is_some_and(|n| n != g);
                let stale_log = name
                    .strip_prefix("wal-")
                    .and_then(|s| s.strip_suffix(".log"))
                    .and_then(|s| s.parse::<u64>().ok())
                    .is_some_and(|n| n < g);
                let staging = name.starts_with(".gen-") || name.starts_with(".CURRENT.");
                if stale_gen || stale_log || staging {
                    let p = e.path();
                    let r = if p.is_dir() {
                        std::fs::remove_dir_all(&p)
                    } else {
                        std::fs::remove_file(&p)
                    };
                    r.map_err(|err| Error::io(p.clone(), "remove leftover", err))?;
                    recovery.removed.push(p);
                }
            }
        }
        let generation = Generation::open(dir, g)?;
        let mut active = Layer::new(perms_of(&generation));
        let logs: Vec<u64> = log_numbers(dir)?.into_iter().filter(|&n| n >= g).collect();
        // The writes since generation G are logs G, G+1, ... without a gap (log G is created
        // before G is committed). A gap means a writer removed logs after committing a newer
        // generation while we were opening (read-only: retry), or damage (writer: refuse).
        let changed = || {
            Error::io(
                dir.to_path_buf(),
                "open store",
                std::io::Error::new(
                    std::io::ErrorKind::NotFound,
                    "a compaction committed while opening; retry",
                ),
            )
        };
        if let Some(&first) = logs.first()
            && (first != g || logs.windows(2).any(|w| w[1] != w[0] + 1))
        {
            if read_only {
                return Err(changed());
            }
            return Err(Error::corrupt(
                "store logs",
                0,
                format!("logs numbered {g}, {}, ... without a gap", g + 1),
                format!("logs {logs:?}: writes logged in the missing ones are lost"),
            )
            .with_path(dir));
        }
        let mut last_valid = None;
        for &n in &logs {
            let path = dir.join(wal::file_name(n));
            let bytes = std::fs::read(&path).map_err(|e| Error::io(path.clone(), "read", e))?;
            let c = wal::parse(&bytes, n).map_err(|e| e.with_path(&path))?;
            for r in &c.records {
                apply(&mut active, r);
            }
            recovery.logs += 1;
            recovery.records += c.records.len() as u64;
            if c.torn_bytes > 0 {
                recovery
                    .torn
                    .push((path.clone(), c.valid_len, c.torn_bytes));
                if !read_only && n != *logs.last().unwrap_or(&n) {
                    // An older log is never appended to again; make it clean now.
                    LogWriter::reopen(dir, n, c.valid_len)?;
                }
            }
            last_valid = Some((n, c.valid_len));
        }
        if read_only && Current::read(dir)?.generation != g {
            // A compaction committed while we replayed: what we read may mix two generations.
            return Err(changed());
        }
        let (writer, file) = if read_only {
            (None, None)
        } else {
            let w = match last_valid {
                Some((n, len)) => LogWriter::reopen(dir, n, len)?,
                None => LogWriter::create(dir, g)?,
            };
            let f = w.try_clone_file()?;
            (Some(w), Some(f))
        };
        let durability = Arc::new(Durability {
            file: Mutex::new(file),
            appended: AtomicU64::new(0),
            synced: AtomicU64::new(0),
            poisoned: Mutex::new(None),
            stop: AtomicBool::new(false),
        });
        let flusher = match (opts.sync, read_only) {
            (SyncPolicy::Group(every), false) => {
                let d = Arc::clone(&durability);
                Some(std::thread::spawn(move || {
                    while !d.stop.load(Ordering::Acquire) {
                        std::thread::park_timeout(every);
                        let _ = d.sync_to(d.appended.load(Ordering::Acquire));
                    }
                }))
            }
            _ => None,
        };
        Ok(Store {
            dir: dir.to_path_buf(),
            opts: opts.clone(),
            read_only,
            _lock: lock_file,
            state: RwLock::new(State {
                generation: Arc::new(generation),
                frozen: None,
                active,
                current,
            }),
            writer: Mutex::new(writer),
            durability,
            compaction: Mutex::new(()),
            compactor: Arc::new((Mutex::new(false), std::sync::Condvar::new())),
            background: AtomicBool::new(false),
            flusher,
            recovery,
        })
    }

    /// The store directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// What opening found and did (torn tails, leftovers removed).
    pub fn recovery(&self) -> &Recovery {
        &self.recovery
    }

    /// The live generation (a snapshot: it stays readable, files included, while held).
    pub fn generation(&self) -> Arc<Generation> {
        Arc::clone(&self.read_state().generation)
    }

    fn read_state(&self) -> std::sync::RwLockReadGuard<'_, State> {
        self.state.read().unwrap_or_else(|e| e.into_inner())
    }

    fn write_state(&self) -> std::sync::RwLockWriteGuard<'_, State> {
        self.state.write().unwrap_or_else(|e| e.into_inner())
    }

    fn check_writable(&self) -> Result<()> {
        if self.read_only {
            return Err(Error::InvalidArgument(format!(
                "{} is open read-only",
                self.dir.display()
            )));
        }
        self.durability.check()
    }

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
                let _ = store.compact_with(None, true);
            }
        })
    }

    /// Fault injection for tests and fuzzing: the next log append writes only `bytes` bytes of
    /// its record and fails, as a full disk would.
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

    /// Every stored fingerprint within `k` of `fp` with its document ids, each fingerprint once,
    /// ordered by distance then fingerprint. Sees every acknowledged write.
    pub fn near(&self, fp: u64, k: u32) -> Result<Vec<StoreMatch>> {
        let st = self.read_state();
        let g = &st.generation;
        let layers = st.layers();
        let mut found: BTreeMap<u64, (u32, Vec<u64>)> = BTreeMap::new();
        for m in g.index().near(fp, k)? {
            let ids: Vec<u64> = g
                .ids()
                .ids_of(m.fingerprint)
                .map_err(|e| e.with_path(&g.dir().join(generation::IDS_NAME)))?
                .into_iter()
                .filter(|id| !layers.iter().any(|l| l.deletes(*id)))
                .collect();
            if !ids.is_empty() {
                found.insert(m.fingerprint, (m.distance, ids));
            }
        }
        for (i, layer) in layers.iter().enumerate() {
            let newer = &layers[i + 1..];
            let mut hits = Vec::new();
            g.index().probe_layer(layer, fp, k, |m| hits.push(m));
            for m in hits {
                let e = found
                    .entry(m.fingerprint)
                    .or_insert_with(|| (m.distance, Vec::new()));
                e.1.extend(
                    layer
                        .ids_in_layer(m.fingerprint)
                        .filter(|id| !newer.iter().any(|l| l.deletes(*id))),
                );
            }
        }
        let mut out: Vec<StoreMatch> = found
            .into_iter()
            .filter_map(|(fp, (distance, mut ids))| {
                ids.sort_unstable();
                ids.dedup();
                (!ids.is_empty()).then_some(StoreMatch {
                    distance,
                    fingerprint: fp,
                    ids,
                })
            })
            .collect();
        out.sort_unstable();
        Ok(out)
    }

    /// True if some stored fingerprint is within `k` of `fp`.
    pub fn has_near(&self, fp: u64, k: u32) -> Result<bool> {
        {
            let st = self.read_state();
            let layers = st.layers();
            if !layers.iter().any(|l| l.has_deletes()) {
                // Nothing hides a compacted pair: the tables alone can answer yes.
                if st.generation.index().has_near(fp, k)? {
                    return Ok(true);
                }
                let mut hit = false;
                for l in &layers {
                    st.generation.index().probe_layer(l, fp, k, |_| hit = true);
                }
                return Ok(hit);
            }
        }
        Ok(!self.near(fp, k)?.is_empty())
    }

    /// Ids stored with exactly `fp`, ascending.
    pub fn ids_of(&self, fp: u64) -> Result<Vec<u64>> {
        Ok(self
            .near(fp, 0)?
            .into_iter()
            .next()
            .map(|m| m.ids)
            .unwrap_or_default())
    }

    /// Every live (fingerprint, id) pair, ascending. Reads the whole id map: for export, checks
    /// and tests, not for serving.
    pub fn pairs(&self) -> Result<Vec<(u64, u64)>> {
        let (g, layer) = self.snapshot_layer();
        let mut out: Vec<(u64, u64)> = Vec::with_capacity(g.ids().pairs() as usize);
        for p in g.ids().iter() {
            let (fp, id) = p?;
            if !layer.deletes(id) {
                out.push((fp, id));
            }
        }
        out.extend(layer.pairs());
        out.sort_unstable();
        out.dedup();
        Ok(out)
    }

    /// Fold the delta into a new generation. Queries (and, except during a rebuild, writes)
    /// continue meanwhile; returns `None` when there was nothing to compact.
    pub fn compact(&self) -> Result<Option<GenerationSummary>> {
        self.compact_with(None, false)
    }

    /// Compact into a new design or codec (block size policy unchanged unless given): the
    /// offline `rebuild`. Writes wait until it is done.
    pub fn rebuild(
        &self,
        design: crate::Design,
        codec: Codec,
        block_size: Option<u32>,
    ) -> Result<GenerationSummary> {
        if let Some(b) = block_size {
            crate::table::format::check_block_size(b)?;
        }
        let layout = Layout {
            design,
            codec,
            block_size: block_size.or(self.read_state().current.block_size),
        };
        self.compact_with(Some(layout), false)?
            .ok_or_else(|| Error::InvalidArgument("rebuild wrote nothing".into()))
    }

    /// `only_if_full`: the automatic compaction of a writer that filled the delta; after waiting
    /// for a compaction another writer started, there may be nothing left to do.
    fn compact_with(
        &self,
        relayout: Option<Layout>,
        only_if_full: bool,
    ) -> Result<Option<GenerationSummary>> {
        self.check_writable()?;
        let _one_at_a_time = lock(&self.compaction);
        if only_if_full {
            let st = self.read_state();
            if st.frozen.is_none() && st.active.ops() < self.opts.max_delta {
                return Ok(None);
            }
        }
        // Freeze the delta and start a new log (unless a failed compaction left one frozen).
        let mut writer = lock(&self.writer);
        let target = {
            let mut st = self.write_state();
            if st.frozen.is_none() {
                if st.active.is_empty() && relayout.is_none() {
                    return Ok(None);
                }
                let log = writer
                    .as_mut()
                    .ok_or_else(|| Error::Poisoned("no log open".into()))?;
                let next = LogWriter::create(&self.dir, log.number() + 1)?;
                {
                    let mut f = lock(&self.durability.file);
                    if let Err(e) = log.sync() {
                        self.durability.poison(&e);
                        return Err(e);
                    }
                    self.durability.synced.fetch_max(
                        self.durability.appended.load(Ordering::Acquire),
                        Ordering::AcqRel,
                    );
                    *f = Some(next.try_clone_file()?);
                }
                *writer = Some(next);
                let fresh = st.active.empty_like();
                let old = std::mem::replace(&mut st.active, fresh);
                st.frozen = Some(Arc::new(old));
            }
            writer.as_ref().map_or(0, |l| l.number())
        };
        // A plain compaction lets writers go on into the new log; a rebuild changes the
        // tables' permutations, so the delta's layout, and keeps writers out until it is done.
        let writer = if relayout.is_some() {
            Some(writer)
        } else {
            drop(writer);
            None
        };
        let (generation, frozen) = if writer.is_some() {
            // A rebuild holds the writer: the frozen delta plus any writes made since a failed
            // compaction (empty otherwise; they stay in the live log too, and replaying them
            // later is harmless).
            let (g, layer) = self.snapshot_layer();
            (g, Arc::new(layer))
        } else {
            let st = self.read_state();
            let frozen = st
                .frozen
                .clone()
                .unwrap_or_else(|| Arc::new(st.active.empty_like()));
            (Arc::clone(&st.generation), frozen)
        };
        let layout = match relayout {
            Some(l) => l,
            None => generation.layout(self.read_state().current.block_size),
        };
        let out = self.dir.join(generation::dir_name(target));
        if out.exists() {
            std::fs::remove_dir_all(&out).map_err(|e| Error::io(out.clone(), "remove", e))?;
        }
        let summary = generation::write_generation(
            &self.dir,
            target,
            &layout,
            &[Source {
                generation: Some(&generation),
                layer: &frozen,
            }],
            self.opts.mem_bytes,
            self.opts.progress,
        )?;
        let new_gen = Arc::new(Generation::open(&self.dir, target)?);
        let current = Current {
            generation: target,
            block_size: layout.block_size,
        };
        current.write(&self.dir)?;
        {
            let mut st = self.write_state();
            if writer.is_some() {
                st.active = Layer::new(perms_of(&new_gen));
            }
            let old = std::mem::replace(&mut st.generation, new_gen);
            st.frozen = None;
            st.current = current;
            old.retire();
        }
        drop(writer);
        for n in log_numbers(&self.dir)? {
            if n < target {
                let p = self.dir.join(wal::file_name(n));
                std::fs::remove_file(&p).map_err(|e| Error::io(p, "remove compacted log", e))?;
            }
        }
        crate::atomic::sync_dir(&self.dir)?;
        Ok(Some(summary))
    }

    /// Write a new store at `out` holding the union of `a` and `b` (same design), including
    /// their uncompacted writes.
    pub fn merge(a: &Store, b: &Store, out: &Path) -> Result<GenerationSummary> {
        let (ga, la) = a.snapshot_layer();
        let (gb, lb) = b.snapshot_layer();
        if ga.index().design() != gb.index().design() {
            return Err(Error::InvalidArgument(format!(
                "stores have different designs ({} and {}); rebuild one first",
                ga.index().design().name(),
                gb.index().design().name()
            )));
        }
        let staging = crate::atomic::StagedDir::new(out, "merging")?;
        let layout = ga.layout(a.read_state().current.block_size);
        let summary = generation::write_generation(
            staging.path(),
            0,
            &layout,
            &[
                Source {
                    generation: Some(&ga),
                    layer: &la,
                },
                Source {
                    generation: Some(&gb),
                    layer: &lb,
                },
            ],
            a.opts.mem_bytes,
            a.opts.progress,
        )?;
        Current {
            generation: 0,
            block_size: layout.block_size,
        }
        .write(staging.path())?;
        staging.publish()?;
        Ok(summary)
    }

    /// The generation and one layer equal to all writes on top of it.
    fn snapshot_layer(&self) -> (Arc<Generation>, Layer) {
        let st = self.read_state();
        let mut layer = match &st.frozen {
            Some(f) => (**f).clone(),
            None => st.active.empty_like(),
        };
        layer.absorb(&st.active);
        (Arc::clone(&st.generation), layer)
    }

    /// Sizes.
    pub fn stats(&self) -> StoreStats {
        let st = self.read_state();
        let g = &st.generation;
        let layers = st.layers();
        let log_bytes = log_numbers(&self.dir)
            .unwrap_or_default()
            .into_iter()
            .filter_map(|n| std::fs::metadata(self.dir.join(wal::file_name(n))).ok())
            .map(|m| m.len())
            .sum();
        StoreStats {
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
        }
    }

    /// Check every checksum of the live generation and that its id map matches its tables.
    pub fn verify(&self) -> Result<()> {
        self.generation().verify()
    }
}

impl Drop for Store {
    fn drop(&mut self) {
        self.durability.stop.store(true, Ordering::Release);
        if let Some(t) = self.flusher.take() {
            t.thread().unpark();
            let _ = t.join();
        }
        if !self.read_only {
            let _ = self.flush();
        }
    }
}
