//! Stores: open (or create), write fingerprints, query, flush, compact, close.

use std::ffi::c_char;
use std::sync::Arc;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use simdex::{ProgressHandle, ReadOnlyStore, Recipe, Store, StoreStats};

use crate::ffi::*;
use crate::index::path_arg;
use crate::results::{Rows, simdex_rows};
use crate::store_options::simdex_store_options;

/// Writes per record of a long insert or delete: the unit between two checks of a cancel token.
const CHUNK: usize = 1 << 16;

/// A store open for reading and writing, or read-only.
pub struct simdex_store {
    magic: u64,
    pub(crate) inner: Opened,
    /// The cancel tokens of the calls under way, which a compaction they start also watches.
    pub(crate) calls: Arc<Calls>,
}

impl Tagged for simdex_store {
    const MAGIC: u64 = STORE_MAGIC;
    const KIND: &'static str = "simdex_store";
    fn magic(&self) -> u64 {
        self.magic
    }
}

/// What a handle holds.
pub(crate) enum Opened {
    Write(Store),
    Read(ReadOnlyStore),
}

/// The same call on whichever store is held.
macro_rules! either {
    ($h:expr, $s:ident => $e:expr) => {
        match $h {
            Opened::Write($s) => $e,
            Opened::Read($s) => $e,
        }
    };
}

impl Opened {
    pub(crate) fn recipe(&self) -> Option<&Recipe> {
        either!(self, s => s.recipe())
    }

    pub(crate) fn stats(&self) -> StoreStats {
        either!(self, s => s.stats())
    }

    pub(crate) fn warm(&self) -> Result<()> {
        either!(self, s => Ok(s.warm()?))
    }

    pub(crate) fn writer(&self) -> Result<&Store> {
        match self {
            Opened::Write(s) => Ok(s),
            Opened::Read(r) => invalid(format!("{} is open read-only", r.dir().display())),
        }
    }

    pub(crate) fn doc_key(&self, id: u64) -> simdex::Result<Option<std::sync::Arc<str>>> {
        either!(self, s => s.doc_key(id))
    }

    pub(crate) fn doc_id(&self, id: &simdex::DocId) -> simdex::Result<Option<u64>> {
        either!(self, s => s.doc_id(id))
    }

    pub(crate) fn check_documents(
        &self,
        docs: &[simdex::Document<'_>],
        opts: &simdex::IngestOptions,
    ) -> simdex::Result<Vec<simdex::Verdict>> {
        either!(self, s => s.check_documents(docs, opts))
    }

    fn k_or_default(&self, k: u32) -> u32 {
        match k {
            SIMDEX_K_DEFAULT => either!(self, s => s.k()),
            k => k,
        }
    }
}

/// The cancel tokens of a store's calls under way: the store's progress receiver, so that a
/// compaction a call runs (asked for, or because the delta filled) stops when its token is
/// set. A compaction serves every writer, so any caller's token stops it; the writes stay
/// logged and the next compaction folds them.
#[derive(Default)]
pub(crate) struct Calls {
    count: AtomicUsize,
    flags: Mutex<Vec<Arc<AtomicBool>>>,
}

impl simdex::Progress for Calls {
    fn cancelled(&self) -> bool {
        self.count.load(Ordering::Relaxed) > 0
            && self
                .flags
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .iter()
                .any(|f| f.load(Ordering::Relaxed))
    }
}

/// A call's token, registered with its store for as long as the call runs.
pub(crate) struct Registered<'a> {
    calls: &'a Calls,
    pub(crate) watch: Watch,
}

impl Calls {
    pub(crate) unsafe fn register(&self, token: *const simdex_cancel) -> Result<Registered<'_>> {
        let flag = unsafe { cancel_of(token) }?;
        if !token.is_null() {
            self.flags
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .push(Arc::clone(&flag));
            self.count.fetch_add(1, Ordering::Relaxed);
        }
        Ok(Registered {
            calls: self,
            watch: Watch(flag),
        })
    }
}

impl Drop for Registered<'_> {
    fn drop(&mut self) {
        let mut v = self.calls.flags.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(i) = v.iter().position(|f| Arc::ptr_eq(f, &self.watch.0)) {
            v.swap_remove(i);
            self.calls.count.fetch_sub(1, Ordering::Relaxed);
        }
    }
}

/// Open the store at `path` as `opts` says (NULL: defaults, an existing store for reading and
/// writing). On success `*out` is the handle, for `simdex_store_close`. One process may have
/// a store open for writing at a time (`SIMDEX_ERR_LOCKED` otherwise); readers may open it
/// beside. Thread-safe: any number of threads may read and write through one handle at once.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn simdex_store_open(
    path: *const c_char,
    opts: *const simdex_store_options,
    out: *mut *mut simdex_store,
    err: *mut *mut c_char,
) -> simdex_status {
    unsafe {
        guard(err, || {
            let slot = crate::ffi::out(out, "out")?;
            let dir = path_arg(path)?;
            let defaults = simdex_store_options::default();
            let o = match opts.is_null() {
                true => &defaults,
                false => handle(opts, "the options")?,
            };
            let calls = Arc::new(Calls::default());
            let progress =
                ProgressHandle::from_arc(Arc::clone(&calls) as Arc<dyn simdex::Progress>);
            let inner = o.open(&dir, progress)?;
            *slot = Box::into_raw(Box::new(simdex_store {
                magic: STORE_MAGIC,
                inner,
                calls,
            }));
            Ok(())
        })
    }
}

/// Close the store and free its handle (NULL is ignored): every write is synced and background
/// work stops. The handle is freed even when the final sync fails (the error says so). The
/// last call on the handle.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn simdex_store_close(
    store: *mut simdex_store,
    err: *mut *mut c_char,
) -> simdex_status {
    unsafe {
        guard(err, || {
            if store.is_null() {
                return Ok(());
            }
            handle(store.cast_const(), "the store")?;
            let mut b = Box::from_raw(store);
            b.magic = 0;
            either!(b.inner, s => s.close())?;
            Ok(())
        })
    }
}

/// The store handle at `store`.
pub(crate) unsafe fn store_arg<'a>(store: *const simdex_store) -> Result<&'a simdex_store> {
    unsafe { handle(store, "the store") }
}

/// Store `fingerprints[i]` for document `ids[i]`, `n` pairs. Durable as the sync policy says
/// when it returns. Cancellable between records of 65,536 pairs (those written stay written).
/// Thread-safe.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn simdex_store_insert(
    store: *const simdex_store,
    fingerprints: *const u64,
    ids: *const u64,
    n: usize,
    cancel: *const simdex_cancel,
    err: *mut *mut c_char,
) -> simdex_status {
    unsafe {
        guard(err, || {
            let s = store_arg(store)?;
            let fps = slice(fingerprints, n, "fingerprints")?;
            let ids = slice(ids, n, "ids")?;
            let w = s.inner.writer()?;
            let call = s.calls.register(cancel)?;
            let mut pairs = Vec::with_capacity(n.min(CHUNK));
            for (f, i) in fps.chunks(CHUNK).zip(ids.chunks(CHUNK)) {
                call.watch.check()?;
                pairs.clear();
                pairs.extend(f.iter().copied().zip(i.iter().copied()));
                w.insert_many(&pairs)?;
            }
            Ok(())
        })
    }
}

/// Delete every pair of each of `n` document ids. Cancellable as `simdex_store_insert`.
/// Thread-safe.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn simdex_store_delete(
    store: *const simdex_store,
    ids: *const u64,
    n: usize,
    cancel: *const simdex_cancel,
    err: *mut *mut c_char,
) -> simdex_status {
    unsafe {
        guard(err, || {
            let s = store_arg(store)?;
            let ids = slice(ids, n, "ids")?;
            let w = s.inner.writer()?;
            let call = s.calls.register(cancel)?;
            for c in ids.chunks(CHUNK) {
                call.watch.check()?;
                w.delete_many(c)?;
            }
            Ok(())
        })
    }
}

/// The (fingerprint, distance, id) rows within `k` bits of `fingerprint` (`SIMDEX_K_DEFAULT`:
/// the store's k), by distance, fingerprint, then id. `*len` is set to their number; the first
/// `min(*len, cap)` are written to the three buffers (each of `cap` elements; NULL when `cap` is
/// 0). When `*len > cap`, call again with larger buffers. Thread-safe.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn simdex_store_near(
    store: *const simdex_store,
    fingerprint: u64,
    k: u32,
    fingerprints: *mut u64,
    distances: *mut u32,
    ids: *mut u64,
    cap: usize,
    len: *mut usize,
    err: *mut *mut c_char,
) -> simdex_status {
    unsafe {
        guard(err, || {
            let s = store_arg(store)?;
            let fps = slice_mut(fingerprints, cap, "fingerprints")?;
            let ds = slice_mut(distances, cap, "distances")?;
            let is = slice_mut(ids, cap, "ids")?;
            let n = crate::ffi::out(len, "len")?;
            let k = s.inner.k_or_default(k);
            let matches = either!(&s.inner, x => x.near(fingerprint, k))?;
            let mut j = 0;
            for m in &matches {
                for &id in &m.ids {
                    if j < cap {
                        (fps[j], ds[j], is[j]) = (m.fingerprint, m.distance, id);
                    }
                    j += 1;
                }
            }
            *n = j;
            Ok(())
        })
    }
}

/// `*found` = 1 if some stored fingerprint is within `k` bits of `fingerprint`, else 0.
/// Thread-safe.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn simdex_store_has_near(
    store: *const simdex_store,
    fingerprint: u64,
    k: u32,
    found: *mut i32,
    err: *mut *mut c_char,
) -> simdex_status {
    unsafe {
        guard(err, || {
            let s = store_arg(store)?;
            let f = crate::ffi::out(found, "found")?;
            let k = s.inner.k_or_default(k);
            *f = either!(&s.inner, x => x.has_near(fingerprint, k))? as i32;
            Ok(())
        })
    }
}

/// The rows of `n` queries, on all cores: `*out` gets them, for `simdex_rows_free`.
/// Cancellable; thread-safe.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn simdex_store_near_many(
    store: *const simdex_store,
    fingerprints: *const u64,
    n: usize,
    k: u32,
    cancel: *const simdex_cancel,
    out: *mut *mut simdex_rows,
    err: *mut *mut c_char,
) -> simdex_status {
    unsafe {
        guard(err, || {
            let s = store_arg(store)?;
            let qs = slice(fingerprints, n, "fingerprints")?;
            let slot = crate::ffi::out(out, "out")?;
            let watch = Watch(cancel_of(cancel)?);
            let k = s.inner.k_or_default(k);
            let r = either!(&s.inner, x => x.near_many_with(qs, k, &watch.progress()))?;
            let rows = Rows {
                offsets: r.offsets.iter().map(|&o| o as u64).collect(),
                fingerprints: r.rows.iter().map(|m| m.fingerprint).collect(),
                distances: r.rows.iter().map(|m| m.distance).collect(),
                ids: Some(r.rows.iter().map(|m| m.id).collect()),
            };
            *slot = rows.into_raw();
            Ok(())
        })
    }
}

/// Sync every write acknowledged so far to stable storage (a no-op on a read-only store).
/// Thread-safe.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn simdex_store_flush(
    store: *const simdex_store,
    err: *mut *mut c_char,
) -> simdex_status {
    unsafe {
        guard(err, || {
            let s = store_arg(store)?;
            if let Opened::Write(w) = &s.inner {
                w.flush()?;
            }
            Ok(())
        })
    }
}

/// Build now what the first document check would build: a store that verifies exactly reads
/// every stored set into its prefix index (seconds per million documents). A service calls it
/// once after opening, before it takes requests; answers are the same either way. A no-op in
/// other stores. Thread-safe.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn simdex_store_warm(
    store: *const simdex_store,
    err: *mut *mut c_char,
) -> simdex_status {
    unsafe { guard(err, || store_arg(store)?.inner.warm()) }
}

/// Fold the in-memory delta into a new generation on disk; `*compacted` (may be NULL) is 1 when
/// there was something to fold. Queries and writes go on meanwhile. Cancellable (the delta
/// stays, logged). Thread-safe.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn simdex_store_compact(
    store: *const simdex_store,
    cancel: *const simdex_cancel,
    compacted: *mut i32,
    err: *mut *mut c_char,
) -> simdex_status {
    unsafe {
        guard(err, || {
            let s = store_arg(store)?;
            let w = s.inner.writer()?;
            let call = s.calls.register(cancel)?;
            call.watch.check()?;
            let done = w.compact()?.is_some();
            if !compacted.is_null() {
                *compacted = done as i32;
            }
            Ok(())
        })
    }
}

/// What `simdex_store_get_stats` reports.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct simdex_store_stats {
    /// The live generation's number.
    pub generation: u64,
    /// The largest distance the design answers.
    pub k: u32,
    /// 1 for a document store.
    pub documents_store: i32,
    /// Distinct fingerprints in the live generation.
    pub fingerprints: u64,
    /// (fingerprint, id) pairs in the live generation.
    pub pairs: u64,
    /// Pairs written since (in the delta).
    pub delta_pairs: u64,
    /// Ids deleted since.
    pub delta_deletes: u64,
    /// Documents stored (a document store).
    pub documents: u64,
    /// Bytes on disk: tables, id map, document map, shingle sets and logs.
    pub disk_bytes: u64,
}

/// Sizes and state of the store. Thread-safe.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn simdex_store_get_stats(
    store: *const simdex_store,
    out: *mut simdex_store_stats,
    err: *mut *mut c_char,
) -> simdex_status {
    unsafe {
        guard(err, || {
            let s = store_arg(store)?;
            let slot = crate::ffi::out(out, "out")?;
            let st = s.inner.stats();
            *slot = simdex_store_stats {
                generation: st.generation,
                k: st.k,
                documents_store: s.inner.recipe().is_some() as i32,
                fingerprints: st.fingerprints,
                pairs: st.pairs,
                delta_pairs: st.delta_pairs,
                delta_deletes: st.delta_deletes,
                documents: st.documents,
                disk_bytes: st.table_bytes
                    + st.id_map_bytes
                    + st.doc_map_bytes
                    + st.sets_bytes
                    + st.log_bytes,
            };
            Ok(())
        })
    }
}
