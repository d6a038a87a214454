//! What a `simdex.Store` holds: a store open for writing, or one open read-only (the engine's
//! `ReadOnlyStore`, which has no write methods). Reads go to either; a write to a read-only
//! store is the engine's "open read-only" error, as before.

use simdex::{
    DocId, Document, IngestOptions, ProgressHandle, ReadOnlyStore, Recipe, Recovery, Result, Store,
    StoreMatch, StoreNearMany, StoreStats, Verdict,
};

/// See the module docs.
pub enum Handle {
    /// Open for reading and writing.
    Write(Store),
    /// Open read-only.
    Read(ReadOnlyStore),
}

/// The same call on whichever store is held.
macro_rules! either {
    ($h:expr, $s:ident => $e:expr) => {
        match $h {
            Handle::Write($s) => $e,
            Handle::Read($s) => $e,
        }
    };
}

impl Handle {
    /// The store, for a write: an error naming the store when it is open read-only.
    pub fn writer(&self) -> Result<&Store> {
        match self {
            Handle::Write(s) => Ok(s),
            Handle::Read(r) => Err(simdex::Error::InvalidArgument(format!(
                "{} is open read-only",
                r.dir().display()
            ))),
        }
    }

    pub fn recovery(&self) -> &Recovery {
        either!(self, s => s.recovery())
    }

    pub fn k(&self) -> u32 {
        either!(self, s => s.k())
    }

    pub fn stats(&self) -> StoreStats {
        either!(self, s => s.stats())
    }

    pub fn verify(&self) -> Result<()> {
        either!(self, s => s.verify())
    }

    pub fn warm(&self) -> Result<()> {
        either!(self, s => s.warm())
    }

    pub fn recipe(&self) -> Option<&Recipe> {
        either!(self, s => s.recipe())
    }

    pub fn near(&self, fp: u64, k: u32) -> Result<Vec<StoreMatch>> {
        either!(self, s => s.near(fp, k))
    }

    pub fn near_many_with(
        &self,
        fps: &[u64],
        k: u32,
        progress: &ProgressHandle,
    ) -> Result<StoreNearMany> {
        either!(self, s => s.near_many_with(fps, k, progress))
    }

    pub fn ids_of(&self, fp: u64) -> Result<Vec<u64>> {
        either!(self, s => s.ids_of(fp))
    }

    pub fn doc_id(&self, id: &DocId) -> Result<Option<u64>> {
        either!(self, s => s.doc_id(id))
    }

    pub fn check_documents(
        &self,
        docs: &[Document<'_>],
        opts: &IngestOptions,
    ) -> Result<Vec<Verdict>> {
        either!(self, s => s.check_documents(docs, opts))
    }

    /// A reader of the store: the one held, or a new one that sees every write logged so far.
    pub fn reader(&self) -> Result<ReaderRef<'_>> {
        match self {
            Handle::Read(r) => Ok(ReaderRef::Held(r)),
            Handle::Write(s) => Ok(ReaderRef::Opened(Box::new(ReadOnlyStore::open(s.dir())?))),
        }
    }

    pub fn close(self) -> Result<()> {
        either!(self, s => s.close())
    }
}

/// A reader borrowed from a handle, or opened for the call.
pub enum ReaderRef<'a> {
    Held(&'a ReadOnlyStore),
    Opened(Box<ReadOnlyStore>),
}

impl std::ops::Deref for ReaderRef<'_> {
    type Target = ReadOnlyStore;
    fn deref(&self) -> &ReadOnlyStore {
        match self {
            ReaderRef::Held(r) => r,
            ReaderRef::Opened(r) => r,
        }
    }
}
