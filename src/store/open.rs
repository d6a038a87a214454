//! Creating a store, and opening one: the writer lock, leftovers of an interrupted compaction,
//! log replay (torn tails) and the check that the live logs form an unbroken sequence.

use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64};
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;

use super::delta::Layer;
use super::durability::Durability;
use super::generation::{self, Current, Generation, Layout, Source};
use super::storage::OsStorage;
use super::wal::{self, LogWriter};
use super::write::apply;
use super::*;
use crate::error::{Error, Result};

/// Who may write a store: the process that opened it for writing, holding its lock.
#[derive(Debug)]
pub(super) struct Access {
    pub(super) read_only: bool,
    /// The writer's lock on `LOCK` (flock), held while the store is open; none when read-only.
    pub(super) _lock: Option<std::fs::File>,
    /// The process that opened the store: a process forked from it shares the log's file
    /// description but not this process's view of the log's length, so it may not write.
    pub(super) pid: u32,
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
        if let Some(w) = opts.recipe.as_ref().and_then(|r| r.weights())
            && (w.docs() as usize) < recipe::MIN_LEARN_DOCS
        {
            return Err(Error::InvalidArgument(format!(
                "IDF weights learned from {} documents: a document store needs them learned \
                 from at least {} (they are frozen with the store); create it with count \
                 weights, or learn from a larger sample",
                w.docs(),
                recipe::MIN_LEARN_DOCS
            )));
        }
        let staging = crate::atomic::StagedDir::new(dir, "creating")?;
        let layout = Layout {
            design: design.clone(),
            codec: opts.codec,
            block_size: opts.block_size,
            sketch_bytes: opts.recipe.as_ref().map(|r| r.sketch_shape().bytes()),
            sets: opts.recipe.as_ref().is_some_and(|r| r.exact().is_some()),
            sets_slack: None,
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
            &crate::progress::ProgressHandle::none(),
        )?
        .0;
        LogWriter::create(staging.path(), 0, &OsStorage)?;
        if let Some(r) = &opts.recipe {
            r.write(staging.path())?;
        }
        Current {
            version: match opts.recipe {
                Some(_) => generation::DOC_STORE_VERSION,
                None => generation::STORE_VERSION,
            },
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
    ///
    /// A generation's tables and id map are memory-mapped, with the contract of
    /// [`Index::open`](crate::Index::open): no other process may truncate or rewrite them while
    /// the store is open (simdex never does; it writes new generations beside old ones). Their
    /// sizes and digests are checked on open and by [`Store::verify`].
    pub fn open(dir: impl AsRef<Path>, opts: &StoreOptions) -> Result<Store> {
        Store::open_inner(dir.as_ref(), opts, false, None)
    }

    internal_fn! {
        /// Open the store at `dir` read-only, as a `Store` whose writes are errors (for this
        /// repository's tests; [`ReadOnlyStore`](super::ReadOnlyStore) is the public way).
        fn open_read_only(dir: impl AsRef<Path>) -> Result<Store> {
            Store::open_read_only_with(dir, &StoreOptions::default())
        }
    }

    /// Open the store at `dir` read-only: no lock, nothing written. Sees the writes logged up
    /// to the moment of opening. Safe beside a running writer.
    pub(crate) fn open_read_only_with(dir: impl AsRef<Path>, opts: &StoreOptions) -> Result<Store> {
        Store::open_read_only_from(dir.as_ref(), opts, None)
    }

    /// [`Store::open_read_only_with`], keeping what `base` (an earlier reader of the same
    /// store) read where its generation is still the live one: the generation itself (its
    /// maps; an exact store's prefix index) and the writes logged up to where its logs ended,
    /// so that only the records logged since are read.
    pub(crate) fn open_read_only_from(
        dir: &Path,
        opts: &StoreOptions,
        base: Option<&Store>,
    ) -> Result<Store> {
        // A writer may commit a compaction (and remove the old generation and logs) while we
        // open; every such case surfaces as "not found" with CURRENT moved, and is retried. A
        // file missing while CURRENT stays put is really missing: that error, with its path.
        let live = || Current::read(dir).ok().map(|c| c.generation);
        let mut last = None;
        for attempt in 0..100u64 {
            let before = live();
            match Store::open_inner(dir, opts, true, base) {
                Err(e) if e.io_error().map(|s| s.kind()) == Some(std::io::ErrorKind::NotFound) => {
                    if before.is_some() && before == live() {
                        return Err(e);
                    }
                    last = Some(e);
                    std::thread::sleep(Duration::from_millis(1 + attempt.min(20)));
                }
                other => return other,
            }
        }
        Err(last.unwrap_or_else(|| {
            Error::io(
                dir.to_path_buf(),
                "open store",
                std::io::Error::other("it kept changing"),
            )
        }))
    }

    fn open_inner(
        dir: &Path,
        opts: &StoreOptions,
        read_only: bool,
        base: Option<&Store>,
    ) -> Result<Store> {
        opts.validate()?;
        if !Store::is_store(dir) {
            return Err(Error::io(
                dir.join(generation::CURRENT_NAME),
                "open store",
                std::io::Error::new(
                    std::io::ErrorKind::NotFound,
                    "no CURRENT: not a simdex store (`simdex insert DIR` creates one where DIR does not exist yet)",
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
        // What an earlier reader of this same live generation read: the generation, the recipe
        // (written once, at creation), its delta and where its last log ended.
        let logs: Vec<u64> = log_numbers(dir)?.into_iter().filter(|&n| n >= g).collect();
        let kept = base.filter(|_| read_only).and_then(|b| {
            let st = b.read_state();
            let (m, end) = b.log_end?;
            let same = st.generation.number() == g && st.generation.is_still_there();
            (same && logs.contains(&m)).then(|| {
                let recipe = b.docs.recipe.clone();
                (Arc::clone(&st.generation), recipe, (st.active.clone(), (m, end)))
            })
        });
        let (generation, recipe, kept) = match kept {
            Some((generation, recipe, layer)) => (generation, recipe, Some(layer)),
            None => (
                Arc::new(Generation::open(dir, g, opts.populate)?),
                Recipe::read(dir)?,
                None,
            ),
        };
        let doc_store = current.version == generation::DOC_STORE_VERSION;
        let sketch = generation.docs().map(|d| d.sketch_bytes());
        let sets = recipe.as_ref().is_some_and(|r| r.exact().is_some());
        if doc_store != recipe.is_some()
            || sketch != recipe.as_ref().map(|r| r.sketch_shape().bytes())
            || generation.docs().is_some_and(|d| d.has_sets() != sets)
        {
            return Err(Error::corrupt(
                "document store",
                0,
                "a RECIPE and a DOCS file with its sketch size exactly when CURRENT says version 2, \
                 and shingle sets exactly when the RECIPE keeps them",
                format!(
                    "version {}, RECIPE {}, DOCS sketches {sketch:?}",
                    current.version,
                    if recipe.is_some() {
                        "present"
                    } else {
                        "absent"
                    },
                ),
            )
            .with_path(dir));
        }
        let (mut active, from) = match kept {
            Some((layer, from)) => (layer, Some(from)),
            None => {
                let prefixer = recipe.as_ref().and_then(Recipe::prefixer).map(Arc::new);
                let layer = Layer::new(generation.layer_tables()).with_prefixer(prefixer);
                (layer, None)
            }
        };
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
        // Log G always exists once generation G is live (created before the commit), so a
        // missing one is lost writes, never "nothing logged".
        if logs.first() != Some(&g) || logs.windows(2).any(|w| w[1] != w[0] + 1) {
            if read_only && Current::read(dir)?.generation != g {
                return Err(changed());
            }
            let found = if logs.is_empty() {
                format!(
                    "no {}: the writes logged since generation {g} are lost",
                    wal::file_name(g)
                )
            } else {
                format!("logs {logs:?}: writes logged in the missing ones are lost")
            };
            return Err(Error::corrupt(
                "store logs",
                0,
                format!(
                    "{} (the live generation's log), then {}, ... without a gap",
                    wal::file_name(g),
                    wal::file_name(g + 1)
                ),
                found,
            )
            .with_path(dir));
        }
        let mut last_valid = None;
        for &n in &logs {
            let path = dir.join(wal::file_name(n));
            let c = match from {
                Some((m, _)) if n < m => continue,
                Some((m, end)) if n == m => read_log_from(&path, n, end)?,
                _ => {
                    let bytes =
                        std::fs::read(&path).map_err(|e| Error::io(path.clone(), "read", e))?;
                    wal::parse(&bytes, n).map_err(|e| e.with_path(&path))?
                }
            };
            for (i, r) in c.records.iter().enumerate() {
                check_record(r, sketch.map(|s| (s, sets))).map_err(|why| {
                    // The record's offset, found again only on this rare path.
                    let at = c.records[..i]
                        .iter()
                        .map(|r| wal::encode_record(r, 0).len() as u64)
                        .sum::<u64>()
                        + wal::WAL_HEADER_LEN as u64;
                    Error::corrupt(
                        format!("log record {i}"),
                        at,
                        "a record this store's writer would log",
                        why,
                    )
                    .with_path(&path)
                })?;
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
                    LogWriter::reopen(dir, n, c.valid_len, &*opts.log_storage)?;
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
                Some((n, len)) => LogWriter::reopen(dir, n, len, &*opts.log_storage)?,
                None => LogWriter::create(dir, g, &*opts.log_storage)?,
            };
            let f = w.try_clone_file()?;
            (Some(w), Some(f))
        };
        // What is in the log at open was synced by recovery (or by the run that wrote it).
        let (number, len) = writer.as_ref().map_or((g, 0), |w| (w.number(), w.len()));
        let durability = Arc::new(Durability::new(file, number, len));
        let flusher = match (opts.sync, read_only) {
            (SyncPolicy::Group(every), false) => {
                let d = Arc::clone(&durability);
                Some(std::thread::spawn(move || {
                    while !d.stopped() {
                        std::thread::park_timeout(every);
                        let _ = d.sync_to(d.appended_end());
                    }
                }))
            }
            _ => None,
        };
        let next_seq = generation
            .docs()
            .map_or(0, |d| d.max_seq())
            .max(active.max_seq())
            + 1;
        Ok(Store {
            dir: dir.to_path_buf(),
            opts: opts.clone(),
            access: Access {
                read_only,
                _lock: lock_file,
                pid: std::process::id(),
            },
            state: RwLock::new(State {
                generation,
                frozen: None,
                active,
                current,
            }),
            gate: Default::default(),
            log: super::write::Log {
                writer: Mutex::new(writer),
                durability,
                flusher,
            },
            compaction: Default::default(),
            docs: super::documents::DocState {
                recipe,
                writes: Mutex::new(()),
                next_seq: AtomicU64::new(next_seq),
            },
            recovery,
            log_end: last_valid,
            closed: AtomicBool::new(false),
        })
    }
}

/// The records of log `n` at `path` from offset `end` on (where an earlier reader's replay
/// ended: a record's start), its header checked again.
fn read_log_from(path: &Path, n: u64, end: u64) -> Result<wal::LogContents> {
    use std::io::{Read, Seek, SeekFrom};
    let io = |e| Error::io(path.to_path_buf(), "read", e);
    let mut f = std::fs::File::open(path).map_err(io)?;
    let mut head = [0u8; wal::WAL_HEADER_LEN];
    f.read_exact(&mut head).map_err(io)?;
    wal::check_header(&head, n).map_err(|e| e.with_path(path))?;
    if f.metadata().map_err(io)?.len() < end {
        return Err(Error::corrupt(
            "log length",
            end,
            format!("at least {end} bytes (what an earlier reader read)"),
            "fewer",
        )
        .with_path(path));
    }
    f.seek(SeekFrom::Start(end)).map_err(io)?;
    let mut tail = Vec::new();
    f.read_to_end(&mut tail).map_err(io)?;
    wal::parse_records(&tail, end).map_err(|e| e.with_path(path))
}

/// Log numbers present in `dir`, ascending.
pub(crate) fn log_numbers(dir: &Path) -> Result<Vec<u64>> {
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

/// Whether a logged record fits the store it replays into, as its writer checked before logging
/// it: documents only in a document store, each with a sketch of the store's size and a key, if
/// any, of 1 to 2048 bytes, and a shingle set exactly when the store keeps them. A record that
/// does not (a crc-valid record of another writer) would
/// replay, but no compaction could write its documents: the store would be stuck.
fn check_record(r: &wal::Record, sketch: Option<(usize, bool)>) -> std::result::Result<(), String> {
    let wal::Record::Docs(puts) = r else {
        return Ok(());
    };
    let Some((sketch, sets)) = sketch else {
        return Err("documents in a store of raw fingerprints".into());
    };
    for p in puts {
        super::docs::check_meta(&p.doc, sketch, sets)
            .map_err(|e| format!("document {}: {e}", p.id))?;
    }
    Ok(())
}
