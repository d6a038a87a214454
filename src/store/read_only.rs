//! A store opened for reading only: a type without write methods (redb's `ReadOnlyDatabase`),
//! for readers beside another process's writer, offline tools and merges.

use std::ops::ControlFlow;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::*;
use crate::error::Result;
use crate::progress::ProgressHandle;

/// A store opened read-only: no lock is taken and nothing is written, so any number of readers
/// may open a store beside its one writer (in this process or another). It sees what had been
/// logged when it was opened; open it again, or [`reopen`](Self::reopen) it, to see more.
///
/// ```
/// use simdex::{CreateOptions, ReadOnlyStore, Store, StoreOptions};
/// # fn main() -> simdex::Result<()> {
/// # let dir = tempfile::tempdir().unwrap(); let path = dir.path().join("store");
/// Store::create(&path, &CreateOptions::default())?;
/// let writer = Store::open(&path, &StoreOptions::default())?;
/// writer.insert(0xff, 1)?;
/// let reader = ReadOnlyStore::open(&path)?; // beside the writer
/// assert_eq!(reader.near(0xfe, 1)?[0].ids, vec![1]);
/// # Ok(()) }
/// ```
#[derive(Debug)]
pub struct ReadOnlyStore {
    store: Store,
}

impl ReadOnlyStore {
    /// Open the store at `dir` read-only. Safe beside a running writer.
    pub fn open(dir: impl AsRef<Path>) -> Result<ReadOnlyStore> {
        ReadOnlyStore::open_with(dir, &StoreOptions::default())
    }

    /// As [`open`](Self::open), with options (of which only
    /// [`populate`](StoreOptions::populate) applies to a reader).
    pub fn open_with(dir: impl AsRef<Path>, opts: &StoreOptions) -> Result<ReadOnlyStore> {
        Ok(ReadOnlyStore {
            store: Store::open_read_only_with(dir, opts)?,
        })
    }

    /// The store as it is now, opened again with this reader's options: what was logged since
    /// is seen. Where no compaction has replaced this reader's generation, the new reader
    /// shares it (its maps; in a store that verifies exactly, its prefix index, instead of
    /// building it again from every stored set on its first document check) and reads only
    /// the log records written since this reader was opened.
    pub fn reopen(&self) -> Result<ReadOnlyStore> {
        let (dir, opts) = (self.dir(), &self.store.opts);
        // Only what was logged since this reader's open is read; should that fail (a log
        // shorter than this reader saw it), the store is opened afresh.
        let store = Store::open_read_only_from(dir, opts, Some(&self.store))
            .or_else(|_| Store::open_read_only_from(dir, opts, None))?;
        Ok(ReadOnlyStore { store })
    }

    /// The store directory.
    pub fn dir(&self) -> &Path {
        self.store.dir()
    }

    /// What opening found (torn tails are reported, not truncated: a reader writes nothing).
    pub fn recovery(&self) -> &Recovery {
        self.store.recovery()
    }

    /// The largest distance the store's design answers.
    pub fn k(&self) -> u32 {
        self.store.k()
    }

    /// The directory of the generation this reader holds.
    pub fn generation_dir(&self) -> PathBuf {
        self.store.generation_dir()
    }

    /// Sizes.
    pub fn stats(&self) -> StoreStats {
        self.store.stats()
    }

    /// The query counters of the generation this reader holds.
    pub fn counters(&self) -> StoreCounters {
        self.store.counters()
    }

    /// Check every checksum of the generation and that its id map matches its tables.
    pub fn verify(&self) -> Result<()> {
        self.store.verify()
    }

    /// A document store's recipe (`None` for a store of raw fingerprints).
    pub fn recipe(&self) -> Option<&Recipe> {
        self.store.recipe()
    }

    /// As [`Store::warm`].
    pub fn warm(&self) -> Result<()> {
        self.store.warm()
    }

    /// As [`Store::near`].
    pub fn near(&self, fp: u64, k: u32) -> Result<Vec<StoreMatch>> {
        self.store.near(fp, k)
    }

    /// As [`Store::near_into`].
    pub fn near_into(&self, fp: u64, k: u32, out: &mut Vec<StoreMatch>) -> Result<()> {
        self.store.near_into(fp, k, out)
    }

    /// As [`Store::near_with`].
    pub fn near_with(
        &self,
        fp: u64,
        k: u32,
        f: impl FnMut(&StoreMatch) -> ControlFlow<()>,
    ) -> Result<bool> {
        self.store.near_with(fp, k, f)
    }

    /// As [`Store::has_near`].
    pub fn has_near(&self, fp: u64, k: u32) -> Result<bool> {
        self.store.has_near(fp, k)
    }

    /// As [`Store::near_many`].
    pub fn near_many(&self, fps: &[u64], k: u32) -> Result<StoreNearMany> {
        self.store.near_many(fps, k)
    }

    /// As [`Store::near_many_with`].
    pub fn near_many_with(
        &self,
        fps: &[u64],
        k: u32,
        progress: &ProgressHandle,
    ) -> Result<StoreNearMany> {
        self.store.near_many_with(fps, k, progress)
    }

    /// As [`Store::ids_of`].
    pub fn ids_of(&self, fp: u64) -> Result<Vec<u64>> {
        self.store.ids_of(fp)
    }

    /// As [`Store::pairs`].
    pub fn pairs(&self) -> Result<Vec<(u64, u64)>> {
        self.store.pairs()
    }

    /// As [`Store::doc_id`].
    pub fn doc_id(&self, id: &DocId) -> Result<Option<u64>> {
        self.store.doc_id(id)
    }

    /// As [`Store::doc_key`].
    pub fn doc_key(&self, id: u64) -> Result<Option<Arc<str>>> {
        self.store.doc_key(id)
    }

    /// As [`Store::check_documents`]: the verdicts an ingest would give, nothing stored.
    pub fn check_documents(
        &self,
        docs: &[Document<'_>],
        opts: &IngestOptions,
    ) -> Result<Vec<Verdict>> {
        self.store.check_documents(docs, opts)
    }

    /// Close the reader.
    pub fn close(self) -> Result<()> {
        self.store.close()
    }

    /// The store underneath (its write methods would be errors).
    pub(super) fn inner(&self) -> &Store {
        &self.store
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dedup::sketch::SketchShape;

    /// Pages of a few templates, some a word apart.
    fn pages(n: usize) -> Vec<(DocId, String)> {
        (0..n)
            .map(|i| {
                let words: Vec<String> = (0..40)
                    .map(|j| format!("w{}", (i % 7) * 40 + j + usize::from(j == i % 40) * 1000))
                    .collect();
                (DocId::parse(&format!("p{i}")), words.join(" "))
            })
            .collect()
    }

    fn docs(p: &[(DocId, String)]) -> Vec<Document<'_>> {
        p.iter().map(|(id, text)| Document { id, text }).collect()
    }

    /// A reader opened again reads on from where its logs ended and sees what a reader opened
    /// afresh sees: across inserts, deletes, a compaction (a new generation: opened afresh) and
    /// a torn tail that a later read finds whole.
    #[test]
    fn a_reopened_reader_sees_what_a_fresh_one_sees() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("st");
        Store::create(&dir, &CreateOptions::default().with_k(3)).unwrap();
        let writer = Store::open(&dir, &StoreOptions::default()).unwrap();
        let mut seed = 7u64;
        let mut batch = |n: usize| -> Vec<(u64, u64)> {
            (0..n)
                .map(|_| {
                    let fp = crate::sample::splitmix64(&mut seed);
                    (fp, fp % 1000)
                })
                .collect()
        };
        writer.insert_many(&batch(500)).unwrap();
        let view = |r: &ReadOnlyStore| {
            let mut p = r.pairs().unwrap();
            p.sort_unstable();
            let s = r.stats();
            (p, s.generation, s.pairs, s.delta_pairs, s.delta_deletes)
        };
        let mut r = ReadOnlyStore::open(&dir).unwrap();
        for round in 0..6 {
            match round {
                2 => drop(writer.compact().unwrap()),
                4 => writer.delete_many(&(0..300).collect::<Vec<u64>>()).unwrap(),
                _ => {}
            }
            writer.insert_many(&batch(300)).unwrap();
            if round == 3 {
                // The live log's last record cut short, as a reader may find it mid-write.
                let logs = super::super::open::log_numbers(&dir).unwrap();
                let log = dir.join(super::super::wal::file_name(*logs.last().unwrap()));
                let whole = std::fs::read(&log).unwrap();
                std::fs::write(&log, &whole[..whole.len() - 100]).unwrap();
                r = r.reopen().unwrap();
                assert_eq!(r.recovery().torn.len(), 1, "{:?}", r.recovery());
                std::fs::write(&log, &whole).unwrap();
            }
            let before = view(&r);
            r = r.reopen().unwrap();
            let fresh = ReadOnlyStore::open(&dir).unwrap();
            assert_eq!(view(&r), view(&fresh), "round {round}");
            assert_ne!(view(&r), before, "round {round}: the new writes are seen");
            if round != 2 {
                // Only the records logged since were read (a compaction's new log is all new).
                let (since, all) = (r.recovery().records, fresh.recovery().records);
                assert!(since < all, "round {round}: read {since} of {all} records");
            }
        }
    }

    /// A reader opened again shares its generation's prefix index while no compaction has
    /// replaced the generation, builds it anew after one, and answers as the writer does.
    #[test]
    fn a_reopened_reader_shares_its_generations_prefix_index() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("st");
        let recipe = Recipe::new(2, false, SketchShape::for_store(true), None)
            .unwrap()
            .with_exact(Some(0.8))
            .unwrap();
        Store::create(
            &dir,
            &CreateOptions::default().with_k(3).with_recipe(Some(recipe)),
        )
        .unwrap();
        let writer = Store::open(&dir, &StoreOptions::default()).unwrap();
        let all = pages(120);
        let opts = IngestOptions::default().with_verify(Some(0.8));
        writer.ingest(&docs(&all[..60]), &opts).unwrap();
        writer.compact().unwrap();
        writer.ingest(&docs(&all[60..80]), &opts).unwrap();
        let built = |r: &ReadOnlyStore| r.store.generation().built_prefixes();

        let first = ReadOnlyStore::open(&dir).unwrap();
        assert!(built(&first).is_none(), "built on first use, not at open");
        first.warm().unwrap();
        let index = built(&first).expect("warm builds it");

        writer.ingest(&docs(&all[80..100]), &opts).unwrap();
        let second = first.reopen().unwrap();
        assert!(Arc::ptr_eq(&built(&second).unwrap(), &index), "shared");
        let probe = docs(&all[100..]);
        assert_eq!(
            second.check_documents(&probe, &opts).unwrap(),
            writer.check_documents(&probe, &opts).unwrap()
        );

        writer.compact().unwrap();
        let third = second.reopen().unwrap();
        assert!(built(&third).is_none(), "a new generation: not shared");
        third.warm().unwrap();
        assert!(!Arc::ptr_eq(&built(&third).unwrap(), &index));
        assert_eq!(
            third.check_documents(&probe, &opts).unwrap(),
            writer.check_documents(&probe, &opts).unwrap()
        );
        let dups = third.check_documents(&probe, &opts).unwrap();
        assert!(dups.iter().any(|v| matches!(v, Verdict::Duplicate { .. })));
    }
}
