//! What a store is opened and created with, and the shapes of its answers and reports.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use super::storage::{LogStorage, OsStorage};
use crate::codec::Codec;
use crate::index::DesignChoice;
use crate::progress::ProgressHandle;

/// When the log is forced to stable storage (fsync).
///
/// Every write reaches the operating system (`write(2)`) before it is acknowledged, so no
/// policy loses an acknowledged write when only the *process* dies (a panic, SIGKILL, OOM kill).
/// The policies differ on power loss or a kernel crash:
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum SyncPolicy {
    /// Each write returns only after its record is synced. Survives power loss. Concurrent
    /// writers share fsyncs (group commit): one fsync covers every record appended before it.
    PerWrite,
    /// Writes return at once; a background thread syncs the log every interval. Power loss
    /// loses at most the writes of the last interval.
    Group(Duration),
    /// The log is synced only by [`Store::flush`](super::Store::flush), compaction and closing the
    /// store. Power loss
    /// loses the writes since the last flush.
    Manual,
}

impl std::str::FromStr for SyncPolicy {
    type Err = crate::Error;
    /// `manual`, `per-write` or `group:<milliseconds>` (1 ms to one hour).
    fn from_str(s: &str) -> crate::Result<SyncPolicy> {
        match s {
            "manual" => Ok(SyncPolicy::Manual),
            "per-write" => Ok(SyncPolicy::PerWrite),
            _ => s
                .strip_prefix("group:")
                .and_then(|ms| ms.parse::<u64>().ok())
                .filter(|&ms| (1..=3_600_000).contains(&ms))
                .map(|ms| SyncPolicy::Group(Duration::from_millis(ms)))
                .ok_or_else(|| {
                    crate::Error::InvalidArgument(format!(
                        "sync policy {s:?} is not manual, per-write or group:<milliseconds> \
                         (1 to 3600000)"
                    ))
                }),
        }
    }
}

/// How to open a store: `StoreOptions::default()` plus the `with_*` setters (fields may be
/// added in any release).
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct StoreOptions {
    /// Log sync policy.
    pub sync: SyncPolicy,
    /// Compact when the delta holds this many operations (inserted pairs and deletes).
    pub max_delta: u64,
    /// Memory budget for rebuilds that re-sort (see [`crate::index::BuildOptions::mem_bytes`]);
    /// a compaction holds its merged tables' keys in memory where those it builds at a time
    /// fit in an eighth of it, else merges each table twice.
    pub mem_bytes: u64,
    /// Progress reports of compactions, rebuilds and merges (which may cancel them).
    pub progress: ProgressHandle,
    /// Read and map every table page of each generation as it is opened (see
    /// [`crate::index::OpenOptions::populate`]): no page faults and no first-read block checks on
    /// the query path.
    pub populate: bool,
    /// Where the log's bytes go: the operating system's files unless a test substitutes its
    /// own (`with_log_storage`, with the `internals` feature).
    pub(crate) log_storage: Arc<dyn LogStorage>,
}

impl Default for StoreOptions {
    fn default() -> Self {
        StoreOptions {
            sync: SyncPolicy::PerWrite,
            max_delta: 1 << 20,
            mem_bytes: 1 << 30,
            progress: ProgressHandle::none(),
            populate: false,
            log_storage: Arc::new(OsStorage),
        }
    }
}

impl StoreOptions {
    /// An error for options no store can be opened with: checked by [`Store::open`], and by
    /// callers that create a store before opening it, so that a bad option creates nothing.
    ///
    /// [`Store::open`]: super::Store::open
    pub fn validate(&self) -> crate::Result<()> {
        if self.max_delta == 0 {
            return Err(crate::Error::InvalidArgument(
                "max_delta must be at least 1".into(),
            ));
        }
        Ok(())
    }

    /// Log sync policy.
    pub fn with_sync(mut self, sync: SyncPolicy) -> Self {
        self.sync = sync;
        self
    }
    /// Compact when the delta holds this many operations.
    pub fn with_max_delta(mut self, max_delta: u64) -> Self {
        self.max_delta = max_delta;
        self
    }
    /// Memory budget for rebuilds that re-sort.
    pub fn with_mem_bytes(mut self, mem_bytes: u64) -> Self {
        self.mem_bytes = mem_bytes;
        self
    }
    /// Progress reports and cancellation of compactions, rebuilds and merges.
    pub fn with_progress(mut self, progress: ProgressHandle) -> Self {
        self.progress = progress;
        self
    }
    /// Read and map every table page of each generation as it is opened.
    pub fn with_populate(mut self, populate: bool) -> Self {
        self.populate = populate;
        self
    }
    /// Append and sync the log through `storage` (fault injection and power-loss tests).
    #[cfg(feature = "internals")]
    #[doc(hidden)]
    pub fn with_log_storage(mut self, storage: Arc<dyn LogStorage>) -> Self {
        self.log_storage = storage;
        self
    }
}

/// The shape of a new store: `CreateOptions::default()` plus the `with_*` setters.
#[derive(Debug, Clone)]
#[non_exhaustive]
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
    /// A document store's recipe (`None`: a store of raw fingerprints).
    pub recipe: Option<super::Recipe>,
}

impl Default for CreateOptions {
    fn default() -> Self {
        CreateOptions {
            k: 3,
            design: DesignChoice::Auto,
            codec: Codec::HDelta,
            block_size: None,
            expected_keys: 10_000_000,
            recipe: None,
        }
    }
}

impl CreateOptions {
    /// Largest query distance answered exactly.
    pub fn with_k(mut self, k: u32) -> Self {
        self.k = k;
        self
    }
    /// The design.
    pub fn with_design(mut self, design: DesignChoice) -> Self {
        self.design = design;
        self
    }
    /// Codec of every table.
    pub fn with_codec(mut self, codec: Codec) -> Self {
        self.codec = codec;
        self
    }
    /// Fixed block size (`None`: one per generation size).
    pub fn with_block_size(mut self, block_size: Option<u32>) -> Self {
        self.block_size = block_size;
        self
    }
    /// Fingerprints the store is expected to grow to.
    pub fn with_expected_keys(mut self, expected_keys: u64) -> Self {
        self.expected_keys = expected_keys;
        self
    }
    /// Create a document store with this recipe: it keeps a sketch and the caller's id per
    /// document, and hashes every document it is given with the recipe.
    pub fn with_recipe(mut self, recipe: Option<super::Recipe>) -> Self {
        self.recipe = recipe;
        self
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

/// One (fingerprint, document id) pair within the query distance.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct StoreRow {
    /// Hamming distance to the query.
    pub distance: u32,
    /// The stored fingerprint.
    pub fingerprint: u64,
    /// A document stored with it.
    pub id: u64,
}

/// The answers to many store queries, flat: the rows of query `i` are
/// `rows[offsets[i]..offsets[i + 1]]`, by distance, fingerprint, then id.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct StoreNearMany {
    /// `queries + 1` ascending offsets into `rows`, starting at 0.
    pub offsets: Vec<usize>,
    /// Every query's rows, query after query.
    pub rows: Vec<StoreRow>,
}

/// What a store has done since it was opened ([`Store::counters`](super::Store::counters)).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct StoreCounters {
    /// Query counters of the live generation's tables (reset when a compaction replaces it).
    pub queries: crate::index::QueryCounters,
    /// fsyncs of the log.
    pub fsyncs: u64,
    /// Their total time.
    pub fsync_time: Duration,
    /// Compactions, rebuilds included.
    pub compactions: u64,
    /// Their total time.
    pub compaction_time: Duration,
}

/// What opening the store found in its logs.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
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
                    "{}: {n} bytes after offset {at} are not a whole, valid log record (a \
                     write cut short by a crash, or damage to the last record); whatever they \
                     held is not applied",
                    p.display()
                )
            })
            .collect()
    }
}

/// Sizes of a store.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct StoreStats {
    /// Codec of the generation's tables.
    pub codec: Codec,
    /// Block size policy: a fixed size, or `None` for one picked per generation size.
    pub block_size: Option<u32>,
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
    /// Documents in the generation's document map (0 in a store of raw fingerprints).
    pub documents: u64,
    /// Bytes of the generation's document map (0 in a store of raw fingerprints).
    pub doc_map_bytes: u64,
    /// Bytes of the generation's shingle sets (0 unless the store verifies exactly).
    pub sets_bytes: u64,
    /// Of those, the bytes of live documents' sets (the rest is reclaimed by compaction).
    pub sets_live_bytes: u64,
    /// The `seq` of the latest document stored (0 if none, or the store keeps no sets):
    /// documents are numbered 1, 2, ... as they are stored ([`super::Expiry::SeqBelow`]).
    pub max_seq: u64,
}

/// The shape a caller asks of a store it opens or creates (what is `None` is not asked): checked
/// against an existing store with [`StoreStats::shape_difference`], so that options meant for a
/// new store are never silently ignored when the store already exists.
#[derive(Debug, Clone, Default, PartialEq)]
#[non_exhaustive]
pub struct ShapeRequest {
    /// k.
    pub k: Option<u32>,
    /// A design name (`auto` asks nothing).
    pub design: Option<String>,
    /// The codec.
    pub codec: Option<Codec>,
    /// The block size policy (`Some(None)`: automatic).
    pub block_size: Option<Option<u32>>,
}

impl StoreStats {
    /// The first part of `req` this store differs in: (option name, value asked, value held).
    pub fn shape_difference(&self, req: &ShapeRequest) -> Option<(&'static str, String, String)> {
        let show = |b: Option<u32>| b.map_or("auto".to_string(), |b| b.to_string());
        match req {
            ShapeRequest { k: Some(k), .. } if *k != self.k => {
                Some(("k", k.to_string(), self.k.to_string()))
            }
            ShapeRequest {
                design: Some(d), ..
            } if d != "auto" && *d != self.design => {
                Some(("design", d.clone(), self.design.clone()))
            }
            ShapeRequest { codec: Some(c), .. } if *c != self.codec => {
                Some(("codec", c.name().into(), self.codec.name().into()))
            }
            ShapeRequest {
                block_size: Some(b),
                ..
            } if *b != self.block_size => Some(("block-size", show(*b), show(self.block_size))),
            _ => None,
        }
    }
}
