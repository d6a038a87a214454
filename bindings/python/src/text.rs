//! Documents to fingerprints (`hash`, `Idf`) and a corpus to clusters (`dedup`).

use std::path::PathBuf;
use std::sync::Arc;

use numpy::PyArray1;
use pyo3::prelude::*;
use rayon::prelude::*;
use simdex::ProgressHandle;
use simdex::simhash::{IdfTable, SimhashOptions, Simhasher, simhash_weighted};

use crate::arrays::{out, u64_array};
use crate::errors::{detached, invalid, to_py};

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
    Simhasher::new(SimhashOptions {
        shingle,
        weights: idf.map(|t| Arc::clone(&t.table)),
    })
    .map_err(to_py)
}

/// The text to hash: an HTML page's visible text, or the text itself.
fn visible(text: &str, html: bool) -> std::borrow::Cow<'_, str> {
    if html {
        std::borrow::Cow::Owned(simdex::simhash::html::visible_text(text))
    } else {
        std::borrow::Cow::Borrowed(text)
    }
}

/// One document's fingerprint, and whether it had no features at all (empty or punctuation
/// only: its fingerprint 0 says nothing about similarity).
fn hash_one(h: &Simhasher, text: &str, html: bool) -> (u64, bool) {
    let feats = h.features(&visible(text, html));
    let empty = feats.is_empty();
    let fp = match &h.options().weights {
        None => simhash_weighted(feats),
        Some(t) => simhash_weighted(feats.into_iter().map(|(f, c)| (f, c * t.weight(f)))),
    };
    (fp, empty)
}

/// Where a batch of texts lives: Python strings copied out, or an Arrow string array read in
/// place.
enum Texts<'a> {
    Owned(Vec<String>),
    Arrow {
        offsets: ArrowOffsets<'a>,
        data: &'a [u8],
        valid: Option<&'a [u8]>,
        offset: usize,
        len: usize,
    },
}

enum ArrowOffsets<'a> {
    I32(&'a [i32]),
    I64(&'a [i64]),
}

impl Texts<'_> {
    fn len(&self) -> usize {
        match self {
            Texts::Owned(v) => v.len(),
            Texts::Arrow { len, .. } => *len,
        }
    }

    /// Text `i` (a null is empty text); an error for bytes that are not UTF-8 or offsets out
    /// of range.
    fn get(&self, i: usize) -> simdex::Result<&str> {
        match self {
            Texts::Owned(v) => Ok(&v[i]),
            Texts::Arrow {
                offsets,
                data,
                valid,
                offset,
                ..
            } => {
                let j = offset + i;
                if let Some(bits) = valid
                    && bits[j / 8] & (1 << (j % 8)) == 0
                {
                    return Ok("");
                }
                let (a, b) = match offsets {
                    ArrowOffsets::I32(o) => (o[j] as i64, o[j + 1] as i64),
                    ArrowOffsets::I64(o) => (o[j], o[j + 1]),
                };
                let bytes = usize::try_from(a)
                    .ok()
                    .zip(usize::try_from(b).ok())
                    .and_then(|(a, b)| data.get(a..b))
                    .ok_or_else(|| {
                        simdex::Error::InvalidArgument(format!(
                            "row {i}: Arrow offsets {a}..{b} outside the data buffer"
                        ))
                    })?;
                std::str::from_utf8(bytes).map_err(|e| {
                    simdex::Error::InvalidArgument(format!("row {i}: not UTF-8 ({e})"))
                })
            }
        }
    }
}

fn hash_all(texts: &Texts<'_>, h: &Simhasher, html: bool) -> simdex::Result<(Vec<u64>, Vec<bool>)> {
    let r: Vec<(u64, bool)> = (0..texts.len())
        .into_par_iter()
        .with_min_len(64)
        .map(|i| Ok(hash_one(h, texts.get(i)?, html)))
        .collect::<simdex::Result<_>>()?;
    Ok(r.into_iter().unzip())
}

/// Fingerprints and "no features" flags.
type Hashed<'py> = (Bound<'py, PyArray1<u64>>, Bound<'py, PyArray1<bool>>);

/// Fingerprints of texts (a list of str): internal, called by `simdex.hash`.
#[pyfunction]
#[pyo3(signature = (texts, *, shingle=2, idf=None, html=false, threads=None))]
pub fn hash_texts<'py>(
    py: Python<'py>,
    texts: Vec<String>,
    shingle: usize,
    idf: Option<&PyIdf>,
    html: bool,
    threads: Option<usize>,
) -> PyResult<Hashed<'py>> {
    let h = hasher(shingle, idf)?;
    let t = Texts::Owned(texts);
    let (f, e) = detached(py, threads, move || hash_all(&t, &h, html))?;
    Ok((out(py, f), out(py, e)))
}

/// Fingerprints of an Arrow string array read in place: internal, called by `simdex.hash`
/// with the addresses of the array's buffers (kept alive by the caller for the call).
#[pyfunction]
#[pyo3(signature = (offsets_addr, data_addr, data_len, validity_addr, offset, length, large, *, shingle=2, idf=None, html=false, threads=None))]
#[allow(clippy::too_many_arguments)]
pub fn hash_arrow<'py>(
    py: Python<'py>,
    offsets_addr: usize,
    data_addr: usize,
    data_len: usize,
    validity_addr: usize,
    offset: usize,
    length: usize,
    large: bool,
    shingle: usize,
    idf: Option<&PyIdf>,
    html: bool,
    threads: Option<usize>,
) -> PyResult<Hashed<'py>> {
    let h = hasher(shingle, idf)?;
    let n = offset
        .checked_add(length)
        .and_then(|n| n.checked_add(1))
        .ok_or_else(|| invalid("Arrow array length overflows"))?;
    if offsets_addr == 0 || (data_addr == 0 && data_len > 0) {
        return Err(invalid("Arrow array without offsets or data buffer"));
    }
    // SAFETY: the Python caller passes the addresses and sizes of a live pyarrow array's
    // buffers (offsets: offset + length + 1 entries; validity: a bit per entry) and holds the
    // array until this call returns.
    let offsets = unsafe {
        if large {
            ArrowOffsets::I64(std::slice::from_raw_parts(offsets_addr as *const i64, n))
        } else {
            ArrowOffsets::I32(std::slice::from_raw_parts(offsets_addr as *const i32, n))
        }
    };
    let data: &[u8] = if data_len == 0 {
        &[]
    } else {
        unsafe { std::slice::from_raw_parts(data_addr as *const u8, data_len) }
    };
    let valid = (validity_addr != 0)
        .then(|| unsafe { std::slice::from_raw_parts(validity_addr as *const u8, n.div_ceil(8)) });
    let t = Texts::Arrow {
        offsets,
        data,
        valid,
        offset,
        len: length,
    };
    let (f, e) = detached(py, threads, move || hash_all(&t, &h, html))?;
    Ok((out(py, f), out(py, e)))
}

#[pymethods]
impl PyIdf {
    /// Learn IDF weights from texts (a list of str).
    #[staticmethod]
    #[pyo3(signature = (texts, *, shingle=2, html=false, threads=None))]
    fn learn(
        py: Python<'_>,
        texts: Vec<String>,
        shingle: usize,
        html: bool,
        threads: Option<usize>,
    ) -> PyResult<PyIdf> {
        let h = hasher(shingle, None)?;
        let table = detached(py, threads, move || {
            let feats: Vec<Vec<u64>> = texts
                .par_iter()
                .map(|t| {
                    h.features(&visible(t, html))
                        .into_iter()
                        .map(|(f, _)| f)
                        .collect()
                })
                .collect();
            Ok(IdfTable::build(shingle, feats.iter().map(|v| &v[..])))
        })?;
        Ok(PyIdf {
            table: Arc::new(table),
        })
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

/// Rows grouped by fingerprint (skipped rows left out) and the index self-join of the distinct
/// fingerprints within k: what both `dedup_fingerprints` and `verify_texts` build on.
struct RowJoin {
    /// (fingerprint, row), ascending.
    rows: Vec<(u64, u32)>,
    joined: Vec<simdex::index::Pair>,
}

impl RowJoin {
    fn new(
        fps: &[u64],
        skip: Option<&[bool]>,
        k: u32,
        tmp: &std::path::Path,
        mem_bytes: u64,
    ) -> simdex::Result<RowJoin> {
        let mut rows: Vec<(u64, u32)> = (0..fps.len())
            .filter(|&r| !skip.is_some_and(|s| s[r]))
            .map(|r| (fps[r], r as u32))
            .collect();
        rows.par_sort_unstable();
        let mut distinct: Vec<u64> = rows.iter().map(|x| x.0).collect();
        distinct.dedup();
        let joined =
            simdex::index::self_join(&distinct, k, tmp, mem_bytes, &ProgressHandle::none())?;
        Ok(RowJoin { rows, joined })
    }

    /// The rows holding `fp`.
    fn group(&self, fp: u64) -> &[(u64, u32)] {
        let a = self.rows.partition_point(|x| x.0 < fp);
        let b = self.rows.partition_point(|x| x.0 <= fp);
        &self.rows[a..b]
    }

    /// Every pair of rows within k, (row_a < row_b, distance), sorted. Quadratic in the size
    /// of a group of equal fingerprints.
    fn pairs(&self) -> Vec<(u32, u32, u32)> {
        let mut out = Vec::new();
        for g in self.rows.chunk_by(|a, b| a.0 == b.0) {
            for (x, a) in g.iter().enumerate() {
                for b in &g[x + 1..] {
                    out.push((a.1.min(b.1), a.1.max(b.1), 0));
                }
            }
        }
        for p in &self.joined {
            for a in self.group(p.batch) {
                for b in self.group(p.stored) {
                    out.push((a.1.min(b.1), a.1.max(b.1), p.distance));
                }
            }
        }
        out.par_sort_unstable();
        out
    }
}

/// Join the components of `a` and `b` (the root is the smaller row).
fn union(parent: &mut [usize], a: usize, b: usize) {
    let (ra, rb) = (find(parent, a), find(parent, b));
    if ra != rb {
        parent[ra.max(rb)] = ra.min(rb);
    }
}

fn find(parent: &mut [usize], mut x: usize) -> usize {
    while parent[x] != x {
        parent[x] = parent[parent[x]];
        x = parent[x];
    }
    x
}

/// Row pairs and cluster ids for fingerprints: internal, called by `simdex.dedup`.
///
/// Rows whose `skip` entry is true (documents without features) take part in nothing: each is
/// its own cluster. Returns the cluster id of every row (the smallest row of its cluster) and,
/// if `return_pairs`, every (row_a, row_b, distance) with row_a < row_b within k.
#[pyfunction]
#[pyo3(signature = (fingerprints, k, skip=None, *, return_pairs=false, mem_bytes=1<<30, tmp=None, threads=None))]
#[allow(clippy::too_many_arguments, clippy::type_complexity)]
pub fn dedup_fingerprints<'py>(
    py: Python<'py>,
    fingerprints: &Bound<'py, PyAny>,
    k: u32,
    skip: Option<&Bound<'py, PyAny>>,
    return_pairs: bool,
    mem_bytes: u64,
    tmp: Option<PathBuf>,
    threads: Option<usize>,
) -> PyResult<(
    Bound<'py, PyArray1<i64>>,
    Option<(
        Bound<'py, PyArray1<i64>>,
        Bound<'py, PyArray1<i64>>,
        Bound<'py, PyArray1<u32>>,
    )>,
)> {
    let arr = u64_array(fingerprints, "fingerprints")?;
    let fps = arr.as_slice()?;
    let skip_arr = match skip {
        Some(s) => Some(
            s.extract::<numpy::PyReadonlyArray1<'py, bool>>()
                .map_err(|_| invalid("skip must be a numpy bool array"))?,
        ),
        None => None,
    };
    let skip: Option<&[bool]> = match &skip_arr {
        Some(a) => Some(a.as_slice()?),
        None => None,
    };
    if skip.is_some_and(|s| s.len() != fps.len()) {
        return Err(invalid("skip and fingerprints differ in length"));
    }
    let tmp = tmp.unwrap_or_else(std::env::temp_dir);
    let (clusters, pairs) = detached(py, threads, move || {
        let n = fps.len();
        let rj = RowJoin::new(fps, skip, k, &tmp, mem_bytes)?;
        // Clusters without listing pairs: each group of equal fingerprints is one, and each
        // joined pair links two groups.
        let mut parent: Vec<usize> = (0..n).collect();
        for w in rj.rows.windows(2) {
            if w[0].0 == w[1].0 {
                union(&mut parent, w[0].1 as usize, w[1].1 as usize);
            }
        }
        for p in &rj.joined {
            let (a, b) = (rj.group(p.batch)[0].1, rj.group(p.stored)[0].1);
            union(&mut parent, a as usize, b as usize);
        }
        let clusters: Vec<i64> = (0..n).map(|r| find(&mut parent, r) as i64).collect();
        let pairs = return_pairs.then(|| {
            rj.pairs()
                .into_iter()
                .map(|(a, b, d)| (a as i64, b as i64, d))
                .collect::<Vec<_>>()
        });
        Ok((clusters, pairs))
    })?;
    let pairs = pairs.map(|v| {
        let (mut a, mut b, mut d) = (Vec::new(), Vec::new(), Vec::new());
        for (x, y, z) in v {
            a.push(x);
            b.push(y);
            d.push(z);
        }
        (out(py, a), out(py, b), out(py, d))
    });
    Ok((out(py, clusters), pairs))
}

/// Verified near-duplicates of texts: internal, called by `simdex.dedup(..., verify=T)`.
///
/// Candidates are the rows whose `fingerprints` lie within `k` bits (the index self-join for
/// k <= 7, the all-pairs scan above, for at most 500 000 rows); each is kept if the word
/// 3-shingle sets of the two texts have Jaccard >= `t`. Returns the cluster of every row (the
/// smallest row of its component of verified pairs) and the verified pairs (row_a, row_b,
/// distance, jaccard).
#[pyfunction]
#[pyo3(signature = (texts, fingerprints, t, k, *, html=false, mem_bytes=1<<30, tmp=None, threads=None))]
#[allow(clippy::too_many_arguments, clippy::type_complexity)]
pub fn verify_texts<'py>(
    py: Python<'py>,
    texts: Vec<String>,
    fingerprints: &Bound<'py, PyAny>,
    t: f64,
    k: u32,
    html: bool,
    mem_bytes: u64,
    tmp: Option<PathBuf>,
    threads: Option<usize>,
) -> PyResult<(
    Bound<'py, PyArray1<i64>>,
    (
        Bound<'py, PyArray1<i64>>,
        Bound<'py, PyArray1<i64>>,
        Bound<'py, PyArray1<u32>>,
        Bound<'py, PyArray1<f64>>,
    ),
)> {
    use simdex::simhash::eval;
    let arr = u64_array(fingerprints, "fingerprints")?;
    let fps = arr.as_slice()?;
    if fps.len() != texts.len() {
        return Err(invalid("texts and fingerprints differ in length"));
    }
    if !(t > 0.0 && t <= 1.0) {
        return Err(invalid(format!("verify = {t} is not in (0, 1]")));
    }
    if k > 16 {
        return Err(invalid(format!("candidate_k = {k} is not in 0..=16")));
    }
    const MAX_SCAN: usize = 500_000;
    if k > simdex::design::MAX_K && fps.len() > MAX_SCAN {
        return Err(invalid(format!(
            "candidate_k = {k} scans all pairs of {} rows, over the budget of {MAX_SCAN}: use \
             candidate_k <= 7",
            fps.len()
        )));
    }
    let tmp = tmp.unwrap_or_else(std::env::temp_dir);
    let (clusters, verified) = detached(py, threads, move || {
        let sets: Vec<Vec<u64>> = texts
            .par_iter()
            .map(|x| eval::shingle_set(&visible(x, html), eval::TRUTH_SHINGLE))
            .collect();
        let verified = if k > simdex::design::MAX_K {
            eval::verify_scan(fps, &sets, k, t).0
        } else {
            // Candidates from the index: rows of equal fingerprints, and rows of joined ones.
            let cand = RowJoin::new(fps, None, k, &tmp, mem_bytes)?.pairs();
            eval::verify(&sets, &cand, t)
        };
        let n = fps.len();
        let mut parent: Vec<usize> = (0..n).collect();
        for &(a, b, _, _) in &verified {
            union(&mut parent, a as usize, b as usize);
        }
        let clusters: Vec<i64> = (0..n).map(|r| find(&mut parent, r) as i64).collect();
        Ok((clusters, verified))
    })?;
    let (mut a, mut b, mut d, mut j) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for (x, y, z, w) in verified {
        a.push(x as i64);
        b.push(y as i64);
        d.push(z);
        j.push(w);
    }
    Ok((
        out(py, clusters),
        (out(py, a), out(py, b), out(py, d), out(py, j)),
    ))
}
