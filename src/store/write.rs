//! The write path: append a record to the log, apply it to the delta, sync as the policy says,
//! and compact when the delta is full (or wake the background compactor).

use std::sync::Arc;

use super::delta::Layer;
use super::durability::lock;
use super::wal::Record;
use super::*;
use crate::error::{Error, Result};

/// The live log and when its records reach stable storage.
#[derive(Debug)]
pub(super) struct Log {
    /// The live log (`None` read-only, or after a failed switch).
    pub(super) writer: Mutex<Option<LogWriter>>,
    pub(super) durability: Arc<Durability>,
    /// The group-commit thread, under `SyncPolicy::Group`.
    pub(super) flusher: Option<std::thread::JoinHandle<()>>,
}

impl Store {
    /// Store `fp` for document `id`. Inserting a pair that is already stored changes nothing.
    ///
    /// Queries in this process see the pair from the moment its log record is appended, which
    /// under [`SyncPolicy::PerWrite`] is before the fsync this call waits for (see
    /// format-spec/store.md, "What other readers see").
    ///
    /// A document store refuses raw pairs: its fingerprints come from its recipe, and a pair
    /// without a document could be neither verified nor told apart from one.
    pub fn insert(&self, fp: u64, id: u64) -> Result<()> {
        self.check_raw_insert()?;
        self.write(std::iter::once(Record::Insert(vec![(fp, id)])))
    }

    /// Store many pairs. They are logged and applied in records of up to 256 pairs, each
    /// atomic, so that no query waits behind a large call (a concurrent query may see some of
    /// the records and not yet others); under per-write sync the call syncs once, at the end.
    /// A document store refuses them, as [`insert`](Self::insert).
    pub fn insert_many(&self, pairs: &[(u64, u64)]) -> Result<()> {
        self.check_raw_insert()?;
        self.write(
            pairs
                .chunks(MAX_PAIRS_PER_RECORD)
                .map(|c| Record::Insert(c.to_vec())),
        )
    }

    fn check_raw_insert(&self) -> Result<()> {
        match self.docs.recipe {
            Some(_) => Err(Error::InvalidArgument(format!(
                "{} is a document store: its fingerprints are made from documents by its \
                 recipe; put documents with ingest (raw fingerprint pairs are refused)",
                self.dir.display()
            ))),
            None => Ok(()),
        }
    }

    /// Delete every pair of document `id` (a no-op if there is none).
    pub fn delete(&self, id: u64) -> Result<()> {
        self.write(std::iter::once(Record::Delete(vec![id])))
    }

    /// Delete every pair of each id (in records of up to 256 ids, as [`Store::insert_many`]).
    pub fn delete_many(&self, ids: &[u64]) -> Result<()> {
        self.write(
            ids.chunks(MAX_PAIRS_PER_RECORD)
                .map(|c| Record::Delete(c.to_vec())),
        )
    }

    /// Log and apply `recs` in order, each under short locks; sync once at the end under
    /// per-write; compact whenever the delta fills.
    pub(super) fn write(&self, recs: impl Iterator<Item = Record>) -> Result<()> {
        self.check_writable()?;
        self.take_background_error()?;
        let mut lsn = 0;
        for (i, rec) in recs.enumerate() {
            if i > 0 {
                // Queries that waited for this record go first (`gate`): a writer that
                // relocked at once would starve them.
                self.gate.let_waiting_in();
            }
            let (l, ops) = self.append_apply(&rec)?;
            lsn = l;
            self.maybe_compact(ops)?;
        }
        if self.opts.sync == SyncPolicy::PerWrite {
            self.log.durability.sync_to(lsn)?;
        }
        Ok(())
    }

    /// Append one record and apply it to the delta; (its end position, the delta's size).
    fn append_apply(&self, rec: &Record) -> Result<(u64, u64)> {
        Ok({
            let mut w = lock(&self.log.writer);
            self.log.durability.check()?;
            let log = w
                .as_mut()
                .ok_or_else(|| Error::Poisoned("no log open".into()))?;
            let before = log.len();
            let end = match log.append(rec) {
                Ok(end) => end,
                Err(e) => {
                    self.log.durability.poison(&e);
                    return Err(e);
                }
            };
            let lsn = self.log.durability.appended(end - before);
            let mut st = self.write_state();
            apply(&mut st.active, rec);
            (lsn, st.active.ops())
        })
    }

    /// Sync every acknowledged write to stable storage; then report a failed background
    /// compaction not reported yet (as the next write would: the writes are in the log
    /// either way), so that a caller done writing learns of it without closing the store.
    pub fn flush(&self) -> Result<()> {
        if self.access.read_only {
            return Ok(());
        }
        self.check_not_forked()?;
        self.log.durability.sync_to(self.log.durability.appended_end())?;
        self.take_background_error()
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
        Record::Docs(docs) => {
            for p in docs {
                layer.put_doc(p.fingerprint, p.id, p.replaces, p.doc.clone(), p.prefix.as_deref());
            }
        }
    }
}
