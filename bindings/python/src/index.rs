//! `simdex.Index`: build, open (mapped or in memory), near, near_many, batch, stats, verify.

use std::path::PathBuf;

use numpy::PyArray1;
use pyo3::prelude::*;

use crate::args::{Distance, Threads};
use pyo3::types::PyDict;
use simdex::{BatchOptions, BuildOptions, DesignChoice, NearMany, OpenOptions, Shard};
use simdex::{Index, Match};

use crate::arrays::{out, u64_array};
use crate::errors::{invalid, to_py};
use crate::runtime::{LONG_CALL, detached, detached_cancellable, detached_watched};

/// The two ways an index is held: mapped files (the default) or bytes read into memory.
enum Held {
    Mapped(Index),
    Memory(Index<Vec<u8>>),
}

/// Run `$body` with `$i` bound to the index, whichever way it is held.
macro_rules! with {
    ($held:expr, $i:ident => $body:expr) => {
        match $held {
            Held::Mapped($i) => $body,
            Held::Memory($i) => $body,
        }
    };
}

/// A read-only index of fingerprints (see `simdex.Index` in the stubs for the full docs).
#[pyclass(module = "simdex._simdex", name = "Index", frozen)]
pub struct PyIndex {
    held: Held,
    path: PathBuf,
}

/// Three flat arrays from a `NearMany`: query index, fingerprint, distance.
type Triple<'py> = (
    Bound<'py, PyArray1<i64>>,
    Bound<'py, PyArray1<u64>>,
    Bound<'py, PyArray1<u32>>,
);

/// Fingerprints and distances.
type Pair<'py> = (Bound<'py, PyArray1<u64>>, Bound<'py, PyArray1<u32>>);

fn flatten(r: NearMany) -> (Vec<i64>, Vec<u64>, Vec<u32>) {
    let mut qi = Vec::with_capacity(r.matches.len());
    for (i, w) in r.offsets.windows(2).enumerate() {
        qi.extend(std::iter::repeat_n(i as i64, w[1] - w[0]));
    }
    let (fps, ds) = r
        .matches
        .iter()
        .map(|m| (m.fingerprint, m.distance))
        .unzip();
    (qi, fps, ds)
}

pub fn design_choice(design: &str) -> DesignChoice {
    match design {
        "auto" => DesignChoice::Auto,
        name => DesignChoice::Named(name.to_string()),
    }
}

impl PyIndex {
    fn k_or_design(&self, k: Option<u32>) -> u32 {
        k.unwrap_or_else(|| with!(&self.held, i => i.design().k()))
    }
}

#[pymethods]
impl PyIndex {
    /// Build an index at `path` (which must not exist) from a uint64 array, then open it.
    #[staticmethod]
    #[pyo3(signature = (path, fingerprints, *, k=Distance(3), design="auto", codec="h-delta", block_size=None, segment_keys=None, mem_bytes=1<<30, threads=None))]
    #[allow(clippy::too_many_arguments)]
    fn build(
        py: Python<'_>,
        path: PathBuf,
        fingerprints: &Bound<'_, PyAny>,
        k: Distance,
        design: &str,
        codec: &str,
        block_size: Option<u32>,
        segment_keys: Option<u32>,
        mem_bytes: u64,
        threads: Option<Threads>,
    ) -> PyResult<PyIndex> {
        let k = k.0;
        let arr = u64_array(fingerprints, "fingerprints")?;
        let fps = arr.as_slice()?;
        let opts = BuildOptions::default()
            .with_k(k)
            .with_design(design_choice(design))
            .with_codec(codec.parse().map_err(to_py)?)
            .with_block_size(block_size)
            .with_segment_keys(segment_keys)
            .with_mem_bytes(mem_bytes);
        let p = path.clone();
        // Ctrl-C stops the build between chunks and publishes nothing.
        let idx = detached_cancellable(py, threads, move |cancel| {
            let opts = opts.with_progress(cancel.progress());
            simdex::build_index(&p, fps.iter().map(|&f| Ok(f)), &opts)?;
            Index::open(&p)
        })?;
        Ok(PyIndex {
            held: Held::Mapped(idx),
            path,
        })
    }

    /// Open the index at `path`; `in_memory=True` reads its files into memory instead of
    /// mapping them (immune to files changed underneath; every block's checksum checked at
    /// open, huge pages where the kernel allows; as fast as `populate=True` where the kernel
    /// maps the files in 2 MiB pages, faster where it cannot);
    /// `populate=True` maps every page and checks every block at open (no page faults or
    /// first-read checks on the query path).
    #[staticmethod]
    #[pyo3(signature = (path, *, in_memory=false, populate=false))]
    fn open(py: Python<'_>, path: PathBuf, in_memory: bool, populate: bool) -> PyResult<PyIndex> {
        if in_memory && populate {
            return Err(invalid(
                "in_memory=True and populate=True exclude each other (populate maps the files)",
            ));
        }
        let p = path.clone();
        let held = detached(py, None, move || {
            Ok(if in_memory {
                Held::Memory(Index::open_in_memory(&p)?)
            } else {
                let opts = OpenOptions::default().with_populate(populate);
                Held::Mapped(Index::open_with(&p, &opts)?)
            })
        })?;
        Ok(PyIndex { held, path })
    }

    /// (fingerprints, distances) within k of `fingerprint`, by distance then value.
    #[pyo3(signature = (fingerprint, k=None))]
    fn near<'py>(
        &self,
        py: Python<'py>,
        fingerprint: u64,
        k: Option<Distance>,
    ) -> PyResult<Pair<'py>> {
        let k = k.map(|k| k.0);
        let k = self.k_or_design(k);
        let ms: Vec<Match> = with!(&self.held, i => i.near(fingerprint, k)).map_err(to_py)?;
        let (f, d): (Vec<u64>, Vec<u32>) = ms.iter().map(|m| (m.fingerprint, m.distance)).unzip();
        Ok((out(py, f), out(py, d)))
    }

    /// True if some stored fingerprint is within k of `fingerprint`.
    #[pyo3(signature = (fingerprint, k=None))]
    fn has_near(&self, fingerprint: u64, k: Option<Distance>) -> PyResult<bool> {
        let k = k.map(|k| k.0);
        let k = self.k_or_design(k);
        with!(&self.held, i => i.has_near(fingerprint, k)).map_err(to_py)
    }

    /// (query_index, fingerprint, distance) for every match of every query, sorted by query
    /// (a large batch answered by one scan of the tables, `Index::near_many`).
    #[pyo3(signature = (fingerprints, k=None, *, threads=None))]
    fn near_many<'py>(
        &self,
        py: Python<'py>,
        fingerprints: &Bound<'py, PyAny>,
        k: Option<Distance>,
        threads: Option<Threads>,
    ) -> PyResult<Triple<'py>> {
        let k = k.map(|k| k.0);
        let arr = u64_array(fingerprints, "fingerprints")?;
        let qs = arr.as_slice()?;
        let k = self.k_or_design(k);
        let held = &self.held;
        // A long batch watches for Ctrl-C: the library stops between chunks of queries.
        let long = qs.len() >= LONG_CALL;
        let (qi, f, d) = detached_watched(py, threads, long, move |cancel| {
            let progress = cancel.progress();
            Ok(flatten(
                with!(held, i => i.near_many_with(qs, k, &progress))?,
            ))
        })?;
        Ok((out(py, qi), out(py, f), out(py, d)))
    }

    /// Batch mode: every (batch fingerprint, stored fingerprint, distance) within k, sorted,
    /// each pair once; with `within=True` also the pairs inside the batch, as a second triple.
    #[pyo3(signature = (fingerprints, k=None, *, within=false, shard=None, threads=None))]
    fn batch<'py>(
        &self,
        py: Python<'py>,
        fingerprints: &Bound<'py, PyAny>,
        k: Option<Distance>,
        within: bool,
        shard: Option<(u64, u64)>,
        threads: Option<Threads>,
    ) -> PyResult<Py<PyAny>> {
        let k = k.map(|k| k.0);
        let arr = u64_array(fingerprints, "fingerprints")?;
        let qs = arr.as_slice()?;
        let k = self.k_or_design(k);
        let held = &self.held;
        let shard = match shard {
            None => Shard::all(),
            Some((i, n)) => Shard::parse(&format!("{i}/{n}")).map_err(to_py)?,
        };
        let opts = BatchOptions::default()
            .with_k(k)
            .with_within(within)
            .with_shard(shard);
        let r = detached(
            py,
            threads,
            move || with!(held, i => i.batch_near(qs, &opts)),
        )?;
        let triple = |pairs: &[simdex::Pair]| {
            let mut b = Vec::with_capacity(pairs.len());
            let mut s = Vec::with_capacity(pairs.len());
            let mut d = Vec::with_capacity(pairs.len());
            for p in pairs {
                b.push(p.batch);
                s.push(p.stored);
                d.push(p.distance);
            }
            (out(py, b), out(py, s), out(py, d))
        };
        let main = triple(&r.pairs);
        Ok(if within {
            (main, triple(&r.within))
                .into_pyobject(py)?
                .into_any()
                .unbind()
        } else {
            main.into_pyobject(py)?.into_any().unbind()
        })
    }

    /// Distinct fingerprints stored.
    fn __len__(&self) -> usize {
        with!(&self.held, i => i.len()) as usize
    }

    /// The largest k answered exactly.
    #[getter]
    fn k(&self) -> u32 {
        with!(&self.held, i => i.design().k())
    }

    /// The design's name.
    #[getter]
    fn design(&self) -> String {
        with!(&self.held, i => i.design().name().to_string())
    }

    /// The index directory.
    #[getter]
    fn path(&self) -> PathBuf {
        self.path.clone()
    }

    /// Sizes: keys, design, k, tables, block_size, segment_keys, aligned_tables, disk_bytes,
    /// bits_per_key_per_table, memory_bytes, probes_per_query.
    fn stats<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let s = with!(&self.held, i => i.stats());
        let d = PyDict::new(py);
        d.set_item("keys", s.keys)?;
        d.set_item("design", s.design)?;
        d.set_item("k", s.k)?;
        d.set_item("tables", s.tables)?;
        d.set_item("block_size", s.block_size)?;
        d.set_item("segment_keys", s.segment_keys)?;
        d.set_item("aligned_tables", s.aligned_tables)?;
        d.set_item("disk_bytes", s.disk_bytes)?;
        d.set_item("bits_per_key_per_table", s.bits_per_key_per_table)?;
        d.set_item("memory_bytes", s.memory_bytes)?;
        d.set_item("probes_per_query", s.probes_per_query)?;
        Ok(d)
    }

    /// What the queries so far cost: queries, probes, blocks_decoded, keys_decoded, candidates.
    fn counters<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let c = with!(&self.held, i => i.counters());
        let d = PyDict::new(py);
        d.set_item("queries", c.queries)?;
        d.set_item("probes", c.probes)?;
        d.set_item("blocks_decoded", c.blocks_decoded)?;
        d.set_item("keys_decoded", c.keys_decoded)?;
        d.set_item("candidates", c.candidates)?;
        Ok(d)
    }

    /// Check every checksum and structure (all cores); a dict of what was checked, or
    /// `simdex.CorruptError`.
    #[pyo3(signature = (*, threads=None))]
    fn verify<'py>(
        &self,
        py: Python<'py>,
        threads: Option<Threads>,
    ) -> PyResult<Bound<'py, PyDict>> {
        let held = &self.held;
        let r = detached(py, threads, move || with!(held, i => i.verify()))?;
        let d = PyDict::new(py);
        d.set_item("tables", r.tables)?;
        d.set_item("keys_decoded", r.keys_decoded)?;
        Ok(d)
    }

    fn __repr__(&self) -> String {
        format!(
            "simdex.Index({:?}, keys={}, design={:?}, k={})",
            self.path.display().to_string(),
            self.__len__(),
            self.design(),
            self.k()
        )
    }
}
