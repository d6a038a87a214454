//! Compaction (fold the delta into generation N+1 while queries and writes go on), rebuild
//! into another design, and merging two stores; when the writer compacts and when the
//! background compactor does.

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::Ordering;

use super::delta::Layer;
use super::durability::lock;
use super::generation::{self, Current, Generation, Layout, Source};
use super::open::log_numbers;
use super::storage::OsStorage;
use super::wal::{self, LogWriter};
use super::*;
use crate::codec::Codec;
use crate::error::{Error, Result};

/// The dead bytes an automatic compaction leaves in a generation's shingle sets, as a fraction
/// of the live ones, before it rewrites them: a store of re-crawled pages rewrites its sets
/// about once per quarter of them replaced, and is at most a quarter larger meanwhile.
const AUTO_SETS_SLACK: f64 = 0.25;
/// The same for an explicit [`Store::compact`] (after an expiry, say): space is reclaimed.
const SETS_SLACK: f64 = 0.02;

/// A store's compactions: one at a time, the background compactor's signal, and what they did.
#[derive(Debug, Default)]
pub(super) struct Compaction {
    /// Held by the compaction under way.
    pub(super) lock: Mutex<()>,
    /// Wakes the background compactor (set, then notified).
    pub(super) wake: Arc<(Mutex<bool>, std::sync::Condvar)>,
    /// Set while a background compactor runs: writers that fill the delta wake it instead of
    /// compacting themselves.
    pub(super) background: AtomicBool,
    /// Compactions done since open, and their time.
    pub(super) count: AtomicU64,
    pub(super) nanos: AtomicU64,
    /// The error of the last failed background compaction, reported by the next call.
    pub(super) error: Mutex<Option<Error>>,
}

impl Store {
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
            sketch_bytes: self.generation().docs().map(|d| d.sketch_bytes()),
            sets: self.generation().docs().is_some_and(|d| d.has_sets()),
            sets_slack: None,
        };
        self.compact_with(Some(layout), false)?
            .ok_or_else(|| Error::InvalidArgument("rebuild wrote nothing".into()))
    }

    /// `only_if_full`: the automatic compaction of a writer that filled the delta; after waiting
    /// for a compaction another writer started, there may be nothing left to do.
    pub(crate) fn compact_with(
        &self,
        relayout: Option<Layout>,
        only_if_full: bool,
    ) -> Result<Option<GenerationSummary>> {
        self.check_writable()?;
        // One at a time; the merge runs on the store's own pool (see `pool`).
        super::pool::locked_install(&self.compaction.lock, || {
            self.compact_locked(relayout, only_if_full)
        })
    }

    fn compact_locked(
        &self,
        relayout: Option<Layout>,
        only_if_full: bool,
    ) -> Result<Option<GenerationSummary>> {
        let started = std::time::Instant::now();
        if only_if_full {
            let st = self.read_state();
            if st.frozen.is_none() && st.active.ops() < self.opts.max_delta {
                return Ok(None);
            }
        }
        // Freeze the delta and start a new log (unless a failed compaction left one frozen).
        let mut writer = lock(&self.log.writer);
        let target = {
            let mut st = self.write_state();
            let log = writer
                .as_mut()
                .ok_or_else(|| Error::Poisoned("no log open".into()))?;
            // The live log holds no record and is newer than the generation (what a compaction
            // that failed, in this process or before a reopen, leaves): everything in the delta
            // was logged in older logs, so this log can become the compaction's target and stay
            // live, rather than one more empty log piling up per failed attempt.
            let reuse = log.len() == wal::WAL_HEADER_LEN as u64
                && log.number() > st.generation.number()
                && st.frozen.is_none()
                && relayout.is_none()
                && !st.active.is_empty();
            if reuse {
                let fresh = st.active.empty_like();
                let old = std::mem::replace(&mut st.active, fresh);
                st.frozen = Some(Arc::new(old));
            }
            if st.frozen.is_none() {
                if st.active.is_empty() && relayout.is_none() {
                    return Ok(None);
                }
                let next = LogWriter::create(&self.dir, log.number() + 1, &*self.opts.log_storage)?;
                self.log.durability.switch_log(log, &next)?;
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
            None => Layout {
                sets_slack: Some(if only_if_full {
                    AUTO_SETS_SLACK
                } else {
                    SETS_SLACK
                }),
                ..generation.layout(self.read_state().current.block_size)
            },
        };
        let out = self.dir.join(generation::dir_name(target));
        if out.exists() {
            std::fs::remove_dir_all(&out).map_err(|e| Error::io(out.clone(), "remove", e))?;
        }
        let (summary, relocation) = generation::write_generation(
            &self.dir,
            target,
            &layout,
            &[Source {
                generation: Some(&generation),
                layer: &frozen,
            }],
            self.opts.mem_bytes,
            &self.opts.progress,
        )?;
        let new_gen = Arc::new(Generation::open(&self.dir, target, self.opts.populate)?);
        let current = Current {
            version: self.read_state().current.version,
            generation: target,
            block_size: layout.block_size,
        };
        current.write(&self.dir)?;
        {
            let mut st = self.write_state();
            // The new generation's prefix index is the old one's plus the compacted delta's (an
            // entry of a document deleted or replaced since stays: a candidate is read back
            // before it is compared), instead of being built again from every set on its first
            // use. Taken from the old generation, whose queries wait here meanwhile (after it,
            // one that still holds the old generation would build its index again).
            if let Some(r) = &relocation {
                new_gen.seed_prefixes(&generation, &frozen, r);
            }
            if writer.is_some() {
                let p = st.active.prefixer().cloned();
                st.active = Layer::new(new_gen.layer_tables()).with_prefixer(p);
            }
            let old = std::mem::replace(&mut st.generation, new_gen);
            st.frozen = None;
            st.current = current;
            old.retire();
        }
        // The compacted delta's memory for the next one, where no write came in meanwhile (a
        // writer that goes on during the compaction has grown its own).
        if let Ok(layer) = Arc::try_unwrap(frozen) {
            let like = self.read_state().active.empty_like();
            let layer = layer.recycled(&like);
            let mut st = self.write_state();
            if st.active.is_empty() {
                st.active = layer;
            }
        }
        drop(writer);
        for n in log_numbers(&self.dir)? {
            if n < target {
                let p = self.dir.join(wal::file_name(n));
                std::fs::remove_file(&p).map_err(|e| Error::io(p, "remove compacted log", e))?;
            }
        }
        crate::atomic::sync_dir(&self.dir)?;
        crate::os::release_free_heap();
        self.compaction.count.fetch_add(1, Ordering::Relaxed);
        self.compaction.nanos
            .fetch_add(started.elapsed().as_nanos() as u64, Ordering::Relaxed);
        Ok(Some(summary))
    }

    /// Write a new store at `out` holding the union of `a` and `b` (same design), including
    /// what they had logged when they were opened. Ids are one namespace: equal ids in `a` and
    /// `b` are taken to be the same document (its pairs from both are kept, and a later delete
    /// removes them all). To merge a store this process writes, open a reader of it: it sees
    /// every write logged so far.
    pub fn merge(
        a: &ReadOnlyStore,
        b: &ReadOnlyStore,
        out: impl AsRef<Path>,
    ) -> Result<GenerationSummary> {
        let (a, b) = (a.inner(), b.inner());
        let out = out.as_ref();
        let (ga, la) = a.snapshot_layer();
        let (gb, lb) = b.snapshot_layer();
        if a.docs.recipe != b.docs.recipe {
            return Err(Error::InvalidArgument(
                "stores have different recipes (or one has none): their fingerprints are not \
                 comparable"
                    .into(),
            ));
        }
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
            &a.opts.progress,
        )?
        .0;
        LogWriter::create(staging.path(), 0, &OsStorage)?;
        if let Some(r) = &a.docs.recipe {
            r.write(staging.path())?;
        }
        Current {
            version: a.read_state().current.version,
            generation: 0,
            block_size: layout.block_size,
        }
        .write(staging.path())?;
        staging.publish()?;
        Ok(summary)
    }

    /// The generation and one layer equal to all writes on top of it.
    pub(crate) fn snapshot_layer(&self) -> (Arc<Generation>, Layer) {
        let st = self.read_state();
        let mut layer = match &st.frozen {
            Some(f) => (**f).clone(),
            None => st.active.empty_like(),
        };
        layer.absorb(&st.active);
        (Arc::clone(&st.generation), layer)
    }
}

/// The background compactor, and the writer's own compaction when the delta is full.
impl Store {
    /// Compact (or wake the compactor) if the delta holds `ops` operations or more.
    pub(super) fn maybe_compact(&self, ops: u64) -> Result<()> {
        let max = self.opts.max_delta;
        if ops >= max {
            if self.compaction.background.load(Ordering::Acquire) && ops < 2 * max {
                let (wake, cv) = &*self.compaction.wake;
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
        self.compaction.background.store(true, Ordering::Release);
        let weak = Arc::downgrade(self);
        let signal = Arc::clone(&self.compaction.wake);
        std::thread::spawn(move || {
            loop {
                {
                    let (wake, cv) = &*signal;
                    let mut w = lock(wake);
                    while !*w {
                        let (g, t) = cv
                            .wait_timeout(w, std::time::Duration::from_millis(100))
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
                    *lock(&store.compaction.error) = Some(e);
                }
            }
        })
    }

    /// Report (once) the error of a background compaction that failed since the last call.
    pub(crate) fn take_background_error(&self) -> Result<()> {
        match lock(&self.compaction.error).take() {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }
}
