//! `simdex.Store`: a writable store of (fingerprint, document id) pairs, shared safely between
//! Python threads (queries run in parallel, writes serialize inside the engine).

use std::path::PathBuf;
use std::sync::RwLock;

use numpy::PyArray1;
use pyo3::prelude::*;

use crate::args::{Distance, Threads, doc_ids};
use pyo3::types::PyDict;

use simdex::{DocId, Document, IngestOptions, Store, Verdict};

use crate::handle::Handle;
use crate::texts::Texts;

use crate::arrays::{id_array, out, u64_array};
use crate::errors::{invalid, raise};
use crate::runtime::{Cancel, LONG_CALL, detached, detached_watched};

/// A store open for reading and (unless read-only) writing.
#[pyclass(module = "simdex._simdex", name = "Store", frozen)]
pub struct PyStore {
    /// `None` once closed.
    inner: RwLock<Option<Handle>>,
    path: PathBuf,
}

/// Run `f` on the open store without the GIL.
fn with_store<T: Send>(
    py: Python<'_>,
    s: &PyStore,
    threads: Option<Threads>,
    f: impl FnOnce(&Handle) -> simdex::Result<T> + Send,
) -> PyResult<T> {
    with_store_watched(py, s, threads, false, move |st, _| f(st))
}

/// A torn log tail is a warning the spec says a reader MUST give (format-spec/store.md): raised
/// as `simdex.RecoveryWarning` through Python's `warnings`, so it is shown once by default,
/// logged by `logging.captureWarnings`, and an error under `-W error`.
fn warn_torn(py: Python<'_>, warnings: &[String]) -> PyResult<()> {
    if warnings.is_empty() {
        return Ok(());
    }
    let class = py.import("simdex._errors")?.getattr("RecoveryWarning")?;
    for w in warnings {
        PyErr::warn(py, &class, &std::ffi::CString::new(w.as_str())?, 1)?;
    }
    Ok(())
}

/// Pairs (or ids) per step of a long insert or delete: Ctrl-C is honoured between steps, and the
/// steps already taken stay applied (each is acknowledged like a call of its own).
const CHUNK: usize = 1 << 16;

/// [`with_store`] for calls that may be long: when `long`, runs as a job while the calling
/// thread handles signals (see [`detached_watched`]).
fn with_store_watched<T: Send>(
    py: Python<'_>,
    s: &PyStore,
    threads: Option<Threads>,
    long: bool,
    f: impl FnOnce(&Handle, &Cancel) -> simdex::Result<T> + Send,
) -> PyResult<T> {
    let lock = &s.inner;
    let path = &s.path;
    let r = detached_watched(py, threads, long, move |cancel| {
        let g = lock.read().unwrap_or_else(|e| e.into_inner());
        match g.as_ref() {
            Some(store) => f(store, cancel).map(Some),
            None => Ok(None),
        }
    })?;
    r.ok_or_else(|| closed(path))
}

/// The k a query without one is answered at: the live generation's design's.
fn default_k(s: &Handle) -> u32 {
    s.k()
}

fn closed(path: &std::path::Path) -> PyErr {
    raise("Error", format!("{}: the store is closed", path.display()))
}

type Rows<'py> = (
    Bound<'py, PyArray1<u64>>,
    Bound<'py, PyArray1<u32>>,
    Bound<'py, PyArray1<u64>>,
);

#[pymethods]
impl PyStore {
    /// Open the store at `path` (see the stubs for every option).
    #[new]
    #[pyo3(signature = (path, *, create=false, k=None, design=None, codec=None, block_size=None, expected=10_000_000, sync="per-write", max_delta=1<<20, mem_bytes=1<<30, read_only=false, populate=false, documents=false, html=None, shingle=None, learn_from=None, exact=None))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        py: Python<'_>,
        path: PathBuf,
        create: bool,
        k: Option<Distance>,
        design: Option<&str>,
        codec: Option<&str>,
        block_size: Option<u32>,
        expected: u64,
        sync: &str,
        max_delta: u64,
        mem_bytes: u64,
        read_only: bool,
        populate: bool,
        documents: bool,
        html: Option<bool>,
        shingle: Option<usize>,
        learn_from: Option<&Bound<'_, PyAny>>,
        exact: Option<f64>,
    ) -> PyResult<PyStore> {
        let request = crate::store_open::Request {
            create,
            k: k.map(|k| k.0),
            design,
            codec,
            block_size,
            expected,
            sync,
            max_delta,
            mem_bytes,
            read_only,
            populate,
            documents,
            html,
            shingle,
            sample: learn_from.map(Texts::from_py).transpose()?,
            exact,
        };
        let store = crate::store_open::open(py, &path, request)?;
        let torn = store.recovery().warnings();
        let py_store = PyStore {
            inner: RwLock::new(Some(store)),
            path,
        };
        warn_torn(py, &torn)?;
        Ok(py_store)
    }

    /// What opening the store found and did: `{"logs", "records", "torn", "removed"}`; `torn`
    /// lists `(log path, offset of the valid end, bytes dropped after it)`.
    #[getter]
    fn recovery<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let r = with_store(py, self, None, |s| Ok(s.recovery().clone()))?;
        let d = PyDict::new(py);
        d.set_item("logs", r.logs)?;
        d.set_item("records", r.records)?;
        d.set_item("torn", r.torn)?;
        d.set_item("removed", r.removed)?;
        Ok(d)
    }

    /// Store `fingerprints[i]` for document `ids[i]` (two uint64 arrays of one length).
    fn insert(
        &self,
        py: Python<'_>,
        fingerprints: &Bound<'_, PyAny>,
        ids: &Bound<'_, PyAny>,
    ) -> PyResult<()> {
        let fa = u64_array(fingerprints, "fingerprints")?;
        let ia = id_array(ids, "ids")?;
        let (f, i) = (fa.as_slice()?, ia.as_slice()?);
        if f.len() != i.len() {
            return Err(invalid(format!(
                "fingerprints and ids differ in length ({} and {})",
                f.len(),
                i.len()
            )));
        }
        with_store_watched(py, self, None, f.len() > CHUNK, move |s, cancel| {
            for (f, i) in f.chunks(CHUNK).zip(i.chunks(CHUNK)) {
                cancel.check()?;
                let pairs: Vec<(u64, u64)> = f.iter().copied().zip(i.iter().copied()).collect();
                s.writer()?.insert_many(&pairs)?;
            }
            Ok(())
        })
    }

    /// Check documents against everything stored before each (including earlier documents of
    /// the call) and store the new ones (see the stubs).
    #[pyo3(signature = (ids, texts, *, verify=None, k=None, check_only=false, store_only=false, threads=None))]
    #[allow(clippy::too_many_arguments)]
    fn ingest<'py>(
        &self,
        py: Python<'py>,
        ids: &Bound<'py, PyAny>,
        texts: &Bound<'py, PyAny>,
        verify: Option<f64>,
        k: Option<Distance>,
        check_only: bool,
        store_only: bool,
        threads: Option<Threads>,
    ) -> PyResult<Bound<'py, PyDict>> {
        let ids = doc_ids(ids)?;
        let texts = Texts::from_py(texts)?;
        if ids.len() != texts.len() {
            return Err(invalid(format!(
                "ids and texts differ in length ({} and {})",
                ids.len(),
                texts.len()
            )));
        }
        let opts = IngestOptions::default()
            .with_k(k.map(|k| k.0))
            .with_verify(verify)
            .with_store_only(store_only);
        let n = ids.len();
        let verdicts = with_store_watched(py, self, threads, n > 4096, move |s, cancel| {
            let mut all = Vec::with_capacity(n);
            for (i, c) in ids.chunks(4096).enumerate() {
                cancel.check()?;
                let docs: Vec<Document<'_>> = c
                    .iter()
                    .enumerate()
                    .map(|(j, id)| Document {
                        id,
                        text: texts.get(i * 4096 + j),
                    })
                    .collect();
                all.extend(match check_only {
                    true => s.check_documents(&docs, &opts)?,
                    false => s.writer()?.ingest(&docs, &opts)?,
                });
            }
            Ok(all)
        })?;
        let (mut dup, mut stored) = (Vec::with_capacity(n), Vec::with_capacity(n));
        let mut already = Vec::with_capacity(n);
        let (mut sim, mut dist) = (Vec::with_capacity(n), Vec::with_capacity(n));
        let matched = pyo3::types::PyList::empty(py);
        for v in verdicts {
            match v {
                Verdict::Duplicate {
                    id,
                    similarity,
                    distance,
                } => {
                    dup.push(true);
                    stored.push(false);
                    already.push(false);
                    sim.push(similarity);
                    dist.push(distance as i32);
                    match id {
                        DocId::Num(n) => matched.append(n)?,
                        DocId::Key(k) => matched.append(&*k)?,
                    }
                }
                other => {
                    dup.push(false);
                    stored.push(!check_only && other == Verdict::New);
                    already.push(other == Verdict::AlreadyStored);
                    sim.push(f64::NAN);
                    dist.push(-1);
                    matched.append(py.None())?;
                }
            }
        }
        let d = PyDict::new(py);
        d.set_item("duplicate", out(py, dup))?;
        d.set_item("matched", matched)?;
        d.set_item("similarity", out(py, sim))?;
        d.set_item("distance", out(py, dist))?;
        d.set_item("stored", out(py, stored))?;
        d.set_item("already_stored", out(py, already))?;
        Ok(d)
    }

    /// The document store's recipe as a dict (None for a store of raw fingerprints).
    #[getter]
    fn recipe<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyDict>>> {
        let r = with_store(py, self, None, |s| Ok(s.recipe().cloned()))?;
        r.map(|r| {
            let d = PyDict::new(py);
            d.set_item("shingle", r.shingle())?;
            d.set_item("html", r.html())?;
            d.set_item(
                "weights",
                if r.weights().is_some() {
                    "idf"
                } else {
                    "count"
                },
            )?;
            d.set_item("sketch_bins", r.sketch_shape().bins())?;
            d.set_item("sketch_bits", r.sketch_shape().bits())?;
            d.set_item("exact", r.exact())?;
            Ok(d)
        })
        .transpose()
    }

    /// The store's numeric id of a document id (a number, or a string under the id rule), if
    /// such a document is stored.
    fn doc_id(&self, py: Python<'_>, id: &Bound<'_, PyAny>) -> PyResult<Option<u64>> {
        let list = pyo3::types::PyList::new(py, [id])?;
        let id = doc_ids(list.as_any())?.pop().expect("one id");
        with_store(py, self, None, move |s| s.doc_id(&id))
    }

    /// Delete every pair of each document id: numbers (a uint64 array or ints), or a document
    /// store's ids as given at ingest (str, numbers; a list or an Arrow string array).
    fn delete(&self, py: Python<'_>, ids: &Bound<'_, PyAny>) -> PyResult<()> {
        let numeric = match id_array(ids, "ids") {
            Ok(a) => Some(a),
            Err(e) if ids.hasattr("dtype")? => return Err(e),
            Err(_) => None,
        };
        let Some(ia) = numeric else {
            let keys = doc_ids(ids)?;
            let n = keys.len();
            return with_store_watched(py, self, None, n > CHUNK, move |s, cancel| {
                for c in keys.chunks(CHUNK) {
                    cancel.check()?;
                    s.writer()?.delete_documents(c)?;
                }
                Ok(())
            });
        };
        let i = ia.as_slice()?;
        with_store_watched(py, self, None, i.len() > CHUNK, move |s, cancel| {
            for c in i.chunks(CHUNK) {
                cancel.check()?;
                s.writer()?.delete_many(c)?;
            }
            Ok(())
        })
    }

    /// Delete every document stored before `before` (Unix seconds, or a datetime) or numbered
    /// below `before_seq`, in a store created with `exact=`; how many.
    #[pyo3(signature = (*, before=None, before_seq=None))]
    fn expire(
        &self,
        py: Python<'_>,
        before: Option<&Bound<'_, PyAny>>,
        before_seq: Option<u64>,
    ) -> PyResult<u64> {
        use simdex::Expiry;
        let expiry = match (before, before_seq) {
            (Some(t), None) => {
                let secs: f64 = match t.hasattr("timestamp")? {
                    true => t.call_method0("timestamp")?.extract()?,
                    false => t.extract().map_err(|_| {
                        pyo3::exceptions::PyTypeError::new_err(
                            "before: Unix seconds (a number) or a datetime",
                        )
                    })?,
                };
                if !secs.is_finite() {
                    return Err(pyo3::exceptions::PyValueError::new_err(format!(
                        "before = {secs}: not a time"
                    )));
                }
                Expiry::StoredBefore((secs.max(0.0) * 1000.0).min(u64::MAX as f64) as u64)
            }
            (None, Some(s)) => Expiry::SeqBelow(s),
            _ => {
                return Err(pyo3::exceptions::PyValueError::new_err(
                    "expire takes one of before= and before_seq=",
                ));
            }
        };
        with_store(py, self, None, move |s| s.writer()?.expire(expiry))
    }

    /// (fingerprint, distance, id) rows within k of `fingerprint`, by distance, fingerprint, id.
    #[pyo3(signature = (fingerprint, k=None))]
    fn near<'py>(
        &self,
        py: Python<'py>,
        fingerprint: u64,
        k: Option<Distance>,
    ) -> PyResult<Rows<'py>> {
        let k = k.map(|k| k.0);
        // One query: `Store::near` on this thread, without the batch's parallel steps; the
        // default k from the design, not from `stats` (which lists the store's logs).
        let r = with_store(py, self, None, move |s| {
            s.near(fingerprint, k.unwrap_or_else(|| default_k(s)))
        })?;
        let (mut f, mut d, mut i) = (Vec::new(), Vec::new(), Vec::new());
        for m in r {
            for id in m.ids {
                f.push(m.fingerprint);
                d.push(m.distance);
                i.push(id);
            }
        }
        Ok((out(py, f), out(py, d), out(py, i)))
    }

    /// (query_index, fingerprint, distance, id) rows for many queries, sorted by query.
    #[pyo3(signature = (fingerprints, k=None, *, threads=None))]
    #[allow(clippy::type_complexity)]
    fn near_many<'py>(
        &self,
        py: Python<'py>,
        fingerprints: &Bound<'py, PyAny>,
        k: Option<Distance>,
        threads: Option<Threads>,
    ) -> PyResult<(
        Bound<'py, PyArray1<i64>>,
        Bound<'py, PyArray1<u64>>,
        Bound<'py, PyArray1<u32>>,
        Bound<'py, PyArray1<u64>>,
    )> {
        let k = k.map(|k| k.0);
        let arr = u64_array(fingerprints, "fingerprints")?;
        let qs = arr.as_slice()?;
        // A long batch watches for Ctrl-C: the library stops between chunks of queries.
        let long = qs.len() >= LONG_CALL;
        let r = with_store_watched(py, self, threads, long, move |s, cancel| {
            s.near_many_with(qs, k.unwrap_or_else(|| default_k(s)), &cancel.progress())
        })?;
        let n = r.rows.len();
        let (mut q, mut f, mut d, mut i) = (
            Vec::with_capacity(n),
            Vec::with_capacity(n),
            Vec::with_capacity(n),
            Vec::with_capacity(n),
        );
        for (qi, w) in r.offsets.windows(2).enumerate() {
            for row in &r.rows[w[0]..w[1]] {
                q.push(qi as i64);
                f.push(row.fingerprint);
                d.push(row.distance);
                i.push(row.id);
            }
        }
        Ok((out(py, q), out(py, f), out(py, d), out(py, i)))
    }

    /// Ids stored with exactly `fingerprint`, ascending.
    fn ids_of<'py>(
        &self,
        py: Python<'py>,
        fingerprint: u64,
    ) -> PyResult<Bound<'py, PyArray1<u64>>> {
        let ids = with_store(py, self, None, move |s| s.ids_of(fingerprint))?;
        Ok(out(py, ids))
    }

    /// Fold the delta into a new generation; False when there was nothing to compact.
    fn compact(&self, py: Python<'_>) -> PyResult<bool> {
        with_store(py, self, None, |s| {
            s.writer()?.compact().map(|g| g.is_some())
        })
    }

    /// Sync every acknowledged write to stable storage; raises for a failed background
    /// compaction not reported yet (the writes are in the log either way).
    fn flush(&self, py: Python<'_>) -> PyResult<()> {
        with_store(py, self, None, |s| match s {
            Handle::Write(s) => s.flush(),
            Handle::Read(_) => Ok(()), // nothing written, nothing to sync
        })
    }

    /// Build now what the first document check would build (an exact store's prefix index,
    /// from every stored set: seconds per million documents), so that it does not wait.
    fn warm(&self, py: Python<'_>) -> PyResult<()> {
        with_store(py, self, None, |s| s.warm())
    }

    /// A store open read-only: open it again, to see what its writer logged since (only those
    /// records are read; the generation, and an exact store's prefix index, are kept while no
    /// compaction has replaced them). A store open for writing sees its own writes: an error.
    fn reopen(&self, py: Python<'_>) -> PyResult<()> {
        let (lock, path) = (&self.inner, &self.path);
        let torn = detached(py, None, move || {
            // Opened beside the calls that use the store meanwhile; swapped in after, unless the
            // store was closed in between.
            let next = match lock.read().unwrap_or_else(|e| e.into_inner()).as_ref() {
                Some(Handle::Read(r)) => r.reopen()?,
                Some(Handle::Write(_)) => {
                    return Err(simdex::Error::InvalidArgument(format!(
                        "{} is open for writing, and sees its own writes: reopen is for a \
                         store open read-only",
                        path.display()
                    )));
                }
                None => return Ok(None),
            };
            let mut g = lock.write().unwrap_or_else(|e| e.into_inner());
            if g.is_none() {
                return Ok(None);
            }
            let torn = next.recovery().warnings();
            *g = Some(Handle::Read(next));
            Ok(Some(torn))
        })?;
        warn_torn(py, &torn.ok_or_else(|| closed(path))?)
    }

    /// Close the store (sync, stop background work); later calls raise. Idempotent.
    fn close(&self, py: Python<'_>) -> PyResult<()> {
        let lock = &self.inner;
        detached(py, None, move || {
            let taken = lock.write().unwrap_or_else(|e| e.into_inner()).take();
            match taken {
                Some(s) => s.close(),
                None => Ok(()),
            }
        })
    }

    /// Sizes and state: generation, design, k, fingerprints, pairs, delta_pairs, delta_deletes,
    /// table_bytes, id_map_bytes, log_bytes.
    fn stats<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let s = with_store(py, self, None, |s| Ok(s.stats()))?;
        let d = PyDict::new(py);
        d.set_item("generation", s.generation)?;
        d.set_item("design", s.design)?;
        d.set_item("k", s.k)?;
        d.set_item("fingerprints", s.fingerprints)?;
        d.set_item("pairs", s.pairs)?;
        d.set_item("delta_pairs", s.delta_pairs)?;
        d.set_item("delta_deletes", s.delta_deletes)?;
        d.set_item("table_bytes", s.table_bytes)?;
        d.set_item("id_map_bytes", s.id_map_bytes)?;
        d.set_item("log_bytes", s.log_bytes)?;
        d.set_item("documents", s.documents)?;
        d.set_item("doc_map_bytes", s.doc_map_bytes)?;
        d.set_item("sets_bytes", s.sets_bytes)?;
        d.set_item("sets_live_bytes", s.sets_live_bytes)?;
        d.set_item("max_seq", s.max_seq)?;
        Ok(d)
    }

    /// Check every checksum of the live generation; raises `simdex.CorruptError`.
    fn verify(&self, py: Python<'_>) -> PyResult<()> {
        with_store(py, self, None, |s| s.verify())
    }

    /// The store directory.
    #[getter]
    fn path(&self) -> PathBuf {
        self.path.clone()
    }

    /// Write a new store at `out` holding the union of stores `a` and `b` (same design).
    #[staticmethod]
    fn merge(py: Python<'_>, a: &PyStore, b: &PyStore, out: PathBuf) -> PyResult<()> {
        let (la, lb) = (&a.inner, &b.inner);
        let done = detached(py, None, move || {
            let ga = la.read().unwrap_or_else(|e| e.into_inner());
            let gb = lb.read().unwrap_or_else(|e| e.into_inner());
            match (ga.as_ref(), gb.as_ref()) {
                (Some(x), Some(y)) => {
                    Store::merge(&*x.reader()?, &*y.reader()?, &out).map(|_| true)
                }
                _ => Ok(false),
            }
        })?;
        if done {
            Ok(())
        } else {
            Err(raise("Error", "merge of a closed store".into()))
        }
    }

    fn __enter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    #[pyo3(signature = (*_args))]
    fn __exit__(&self, py: Python<'_>, _args: &Bound<'_, pyo3::types::PyTuple>) -> PyResult<bool> {
        self.close(py)?;
        Ok(false)
    }

    fn __repr__(&self) -> String {
        format!("simdex.Store({:?})", self.path.display().to_string())
    }
}
