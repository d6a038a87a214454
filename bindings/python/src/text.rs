//! Documents to fingerprints (`hash`) and weights (`Idf`, `doc_freqs`).

use std::path::PathBuf;
use std::sync::Arc;

use numpy::PyArray1;
use pyo3::prelude::*;

use crate::args::Threads;
use simdex::{DfCounter, IdfTable, SimhashOptions, Simhasher};

use crate::arrays::{out, u64_array};
use crate::errors::{invalid, to_py};
use crate::runtime::{LONG_CALL, detached_watched};
use crate::texts::{Texts, hash_all};

/// IDF weights learned from a corpus (see the stubs).
#[pyclass(module = "simdex._simdex", name = "Idf", frozen)]
pub struct PyIdf {
    table: Arc<IdfTable>,
}

fn hasher(shingle: usize, idf: Option<&PyIdf>) -> PyResult<Simhasher> {
    if let Some(t) = idf
        && t.table.shingle() != shingle
    {
        return Err(invalid(format!(
            "the IDF table was learned with shingle={}, not {shingle}",
            t.table.shingle()
        )));
    }
    Simhasher::new(
        SimhashOptions::default()
            .with_shingle(shingle)
            .with_weights(idf.map(|t| Arc::clone(&t.table))),
    )
    .map_err(to_py)
}

/// Fingerprints and "no features" flags.
type Hashed<'py> = (Bound<'py, PyArray1<u64>>, Bound<'py, PyArray1<bool>>);

/// Fingerprints of texts (a sequence of str, or any Arrow producer of strings, read in place):
/// internal, called by `simdex.hash`.
#[pyfunction]
#[pyo3(signature = (texts, *, shingle=2, idf=None, html=false, threads=None))]
pub fn hash_texts<'py>(
    py: Python<'py>,
    texts: &Bound<'py, PyAny>,
    shingle: usize,
    idf: Option<&PyIdf>,
    html: bool,
    threads: Option<Threads>,
) -> PyResult<Hashed<'py>> {
    let h = hasher(shingle, idf)?;
    let t = Texts::from_py(texts)?;
    let long = t.len() > LONG_CALL;
    let (f, e) = detached_watched(py, threads, long, move |c| hash_all(&t, &h, html, c))?;
    Ok((out(py, f), out(py, e)))
}

/// Document frequencies of texts (as for `hash_texts`): internal, called by
/// `simdex.distributed.doc_freqs`. Returns (feature hashes ascending, documents holding each,
/// documents counted): one partition's share of a distributed IDF count. With `bound`, only
/// the texts whose IDF sample digest is at most `bound` are counted.
#[pyfunction]
#[pyo3(signature = (texts, *, shingle=2, html=false, threads=None, bound=None))]
pub fn doc_freqs<'py>(
    py: Python<'py>,
    texts: &Bound<'py, PyAny>,
    shingle: usize,
    html: bool,
    threads: Option<Threads>,
    bound: Option<u64>,
) -> PyResult<DocFreqs<'py>> {
    let h = hasher(shingle, None)?;
    let t = Texts::from_py(texts)?;
    let long = t.len() > LONG_CALL;
    let (f, c, n) = detached_watched(py, threads, long, move |cancel| {
        let keep =
            |_: usize, text: &str| bound.is_none_or(|b| simdex::IdfSample::digest(text) <= b);
        let counter = crate::texts::doc_freqs(&t, &h, html, keep, cancel)?;
        let n = counter.docs();
        let (f, c) = counter
            .into_sorted()
            .into_iter()
            .unzip::<_, _, Vec<u64>, Vec<u64>>();
        Ok((f, c, n))
    })?;
    Ok((out(py, f), out(py, c), n))
}

/// The IDF sample digest of each text (`simdex::raw::text_digest` of what is tokenized):
/// internal, called by `simdex.distributed.text_digests`.
#[pyfunction]
#[pyo3(signature = (texts, *, html=false, threads=None))]
pub fn text_digests<'py>(
    py: Python<'py>,
    texts: &Bound<'py, PyAny>,
    html: bool,
    threads: Option<Threads>,
) -> PyResult<Bound<'py, PyArray1<u64>>> {
    let t = Texts::from_py(texts)?;
    let long = t.len() > LONG_CALL;
    let d = detached_watched(py, threads, long, move |cancel| {
        crate::texts::digests(&t, html, cancel)
    })?;
    Ok(out(py, d))
}

/// (feature hashes, document counts, documents).
type DocFreqs<'py> = (Bound<'py, PyArray1<u64>>, Bound<'py, PyArray1<u64>>, u64);

#[pymethods]
impl PyIdf {
    /// Learn IDF weights from texts (as for `hash_texts`).
    #[staticmethod]
    #[pyo3(signature = (texts, *, shingle=2, html=false, threads=None))]
    fn learn(
        py: Python<'_>,
        texts: &Bound<'_, PyAny>,
        shingle: usize,
        html: bool,
        threads: Option<Threads>,
    ) -> PyResult<PyIdf> {
        let h = hasher(shingle, None)?;
        let texts = Texts::from_py(texts)?;
        let long = texts.len() > LONG_CALL;
        let table = detached_watched(py, threads, long, move |cancel| {
            crate::texts::learn_idf(&texts, &h, shingle, html, cancel)
        })?;
        Ok(PyIdf {
            table: Arc::new(table),
        })
    }

    /// The weights from document frequencies counted elsewhere (e.g. by `doc_freqs` on each
    /// partition of a distributed corpus, summed per feature) over `docs` documents, a sample
    /// of a corpus of `corpus` (default: `docs`): equal to `learn` on the whole.
    #[staticmethod]
    #[pyo3(signature = (features, counts, docs, *, shingle=2, corpus=None))]
    fn from_counts(
        features: &Bound<'_, PyAny>,
        counts: &Bound<'_, PyAny>,
        docs: u64,
        shingle: usize,
        corpus: Option<u64>,
    ) -> PyResult<PyIdf> {
        let f = u64_array(features, "features")?;
        let c = u64_array(counts, "counts")?;
        let (f, c) = (f.as_slice()?, c.as_slice()?);
        if f.len() != c.len() {
            return Err(invalid(format!(
                "features ({}) and counts ({}) differ in length",
                f.len(),
                c.len()
            )));
        }
        hasher(shingle, None)?;
        let counter = DfCounter::from_counts(docs, f.iter().copied().zip(c.iter().copied()));
        Ok(PyIdf {
            table: Arc::new(counter.finish_for(shingle, corpus.unwrap_or(docs))),
        })
    }

    /// The table from its text form (`to_text`).
    #[staticmethod]
    fn from_text(text: &str) -> PyResult<PyIdf> {
        Ok(PyIdf {
            table: Arc::new(IdfTable::decode(text).map_err(to_py)?),
        })
    }

    /// The text form `save` writes, as a string.
    fn to_text(&self) -> String {
        self.table.encode()
    }

    /// Pickling (to ship the table to Spark executors): rebuilt from its text form.
    fn __reduce__<'py>(&self, py: Python<'py>) -> PyResult<(Bound<'py, PyAny>, (String,))> {
        let cls = py.get_type::<PyIdf>();
        Ok((cls.getattr("from_text")?, (self.table.encode(),)))
    }

    fn __eq__(&self, other: &PyIdf) -> bool {
        self.table == other.table
    }

    /// Read a table written by `save` or `simdex idf --out`.
    #[staticmethod]
    fn load(path: PathBuf) -> PyResult<PyIdf> {
        let text = std::fs::read_to_string(&path)
            .map_err(|e| to_py(simdex::Error::io(path.clone(), "read", e)))?;
        let table = IdfTable::decode(&text).map_err(|e| to_py(e.with_path(&path)))?;
        Ok(PyIdf {
            table: Arc::new(table),
        })
    }

    /// Write the table (the text format `simdex hash --idf` reads).
    fn save(&self, path: PathBuf) -> PyResult<()> {
        std::fs::write(&path, self.table.encode())
            .map_err(|e| to_py(simdex::Error::io(path.clone(), "write", e)))
    }

    /// The shingle size the weights were learned with.
    #[getter]
    fn shingle(&self) -> usize {
        self.table.shingle()
    }

    /// Documents learned from.
    #[getter]
    fn docs(&self) -> u64 {
        self.table.docs()
    }

    /// Features with a weight of their own.
    fn __len__(&self) -> usize {
        self.table.len()
    }
}
