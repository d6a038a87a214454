//! `simdex.Store`: a writable store of (fingerprint, document id) pairs, shared safely between
//! Python threads (queries run in parallel, writes serialize inside the engine).

use std::path::PathBuf;
use std::sync::RwLock;

use numpy::PyArray1;
use pyo3::prelude::*;
use pyo3::types::PyDict;
use simdex::store::{CreateOptions, Store, StoreOptions};

use crate::arrays::{out, u64_array};
use crate::errors::{detached, invalid, raise, to_py};
use crate::index::design_choice;

/// A store open for reading and (unless read-only) writing.
#[pyclass(module = "simdex._simdex", name = "Store", frozen)]
pub struct PyStore {
    /// `None` once closed.
    inner: RwLock<Option<Store>>,
    path: PathBuf,
}

/// Run `f` on the open store without the GIL.
fn with_store<T: Send>(
    py: Python<'_>,
    s: &PyStore,
    threads: Option<usize>,
    f: impl FnOnce(&Store) -> simdex::Result<T> + Send,
) -> PyResult<T> {
    let lock = &s.inner;
    let path = &s.path;
    let r = detached(py, threads, move || {
        let g = lock.read().unwrap_or_else(|e| e.into_inner());
        match g.as_ref() {
            Some(store) => f(store).map(Some),
            None => Ok(None),
        }
    })?;
    r.ok_or_else(|| raise("Error", format!("{}: the store is closed", path.display())))
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
    #[pyo3(signature = (path, *, create=false, k=3, design="auto", codec="h-delta", block_size=None, expected=10_000_000, sync="per-write", max_delta=1<<20, mem_bytes=1<<30, read_only=false, populate=false))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        py: Python<'_>,
        path: PathBuf,
        create: bool,
        k: u32,
        design: &str,
        codec: &str,
        block_size: Option<u32>,
        expected: u64,
        sync: &str,
        max_delta: u64,
        mem_bytes: u64,
        read_only: bool,
        populate: bool,
    ) -> PyResult<PyStore> {
        if create && read_only {
            return Err(invalid("create=True and read_only=True exclude each other"));
        }
        let opts = StoreOptions::default()
            .with_sync(sync.parse().map_err(to_py)?)
            .with_max_delta(max_delta)
            .with_mem_bytes(mem_bytes)
            .with_populate(populate);
        let copts = CreateOptions::default()
            .with_k(k)
            .with_design(design_choice(design))
            .with_codec(codec.parse().map_err(to_py)?)
            .with_block_size(block_size)
            .with_expected_keys(expected);
        let p = path.clone();
        let store = detached(py, None, move || {
            if create && !Store::is_store(&p) {
                Store::create(&p, &copts)?;
            }
            if read_only {
                Store::open_read_only_with(&p, &opts)
            } else {
                Store::open(&p, &opts)
            }
        })?;
        Ok(PyStore {
            inner: RwLock::new(Some(store)),
            path,
        })
    }

    /// Store `fingerprints[i]` for document `ids[i]` (two uint64 arrays of one length).
    fn insert(
        &self,
        py: Python<'_>,
        fingerprints: &Bound<'_, PyAny>,
        ids: &Bound<'_, PyAny>,
    ) -> PyResult<()> {
        let fa = u64_array(fingerprints, "fingerprints")?;
        let ia = u64_array(ids, "ids")?;
        let (f, i) = (fa.as_slice()?, ia.as_slice()?);
        if f.len() != i.len() {
            return Err(invalid(format!(
                "fingerprints and ids differ in length ({} and {})",
                f.len(),
                i.len()
            )));
        }
        with_store(py, self, None, move |s| {
            let pairs: Vec<(u64, u64)> = f.iter().copied().zip(i.iter().copied()).collect();
            s.insert_many(&pairs)
        })
    }

    /// Delete every pair of each document id (a uint64 array).
    fn delete(&self, py: Python<'_>, ids: &Bound<'_, PyAny>) -> PyResult<()> {
        let ia = u64_array(ids, "ids")?;
        let i = ia.as_slice()?;
        with_store(py, self, None, move |s| s.delete_many(i))
    }

    /// (fingerprint, distance, id) rows within k of `fingerprint`, by distance, fingerprint, id.
    #[pyo3(signature = (fingerprint, k=None))]
    fn near<'py>(&self, py: Python<'py>, fingerprint: u64, k: Option<u32>) -> PyResult<Rows<'py>> {
        let r = with_store(py, self, None, move |s| {
            let k = k.unwrap_or_else(|| s.stats().k);
            s.near_many(&[fingerprint], k)
        })?;
        let (mut f, mut d, mut i) = (Vec::new(), Vec::new(), Vec::new());
        for row in r.rows {
            f.push(row.fingerprint);
            d.push(row.distance);
            i.push(row.id);
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
        k: Option<u32>,
        threads: Option<usize>,
    ) -> PyResult<(
        Bound<'py, PyArray1<i64>>,
        Bound<'py, PyArray1<u64>>,
        Bound<'py, PyArray1<u32>>,
        Bound<'py, PyArray1<u64>>,
    )> {
        let arr = u64_array(fingerprints, "fingerprints")?;
        let qs = arr.as_slice()?;
        let r = with_store(py, self, threads, move |s| {
            let k = k.unwrap_or_else(|| s.stats().k);
            s.near_many(qs, k)
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
        with_store(py, self, None, |s| s.compact().map(|g| g.is_some()))
    }

    /// Sync every acknowledged write to stable storage.
    fn flush(&self, py: Python<'_>) -> PyResult<()> {
        with_store(py, self, None, |s| s.flush())
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
                (Some(x), Some(y)) => Store::merge(x, y, &out).map(|_| true),
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
