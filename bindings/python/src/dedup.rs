//! A corpus to clusters: `dedup` on fingerprints and `dedup(verify=T)` on texts.

use std::path::PathBuf;

use numpy::PyArray1;
use pyo3::prelude::*;
use simdex::dedup::{Candidates, TextPasses, VerifiedDedup};

use crate::args::{Distance, Threads};
use rayon::prelude::*;

use crate::arrays::{out, u64_array};
use crate::errors::{invalid, to_py};
use crate::runtime::Cancel;
use crate::runtime::{LONG_CALL, detached, detached_watched};
use crate::texts::{Texts, visible};

/// Rows per chunk of shingle sets computed on all cores.
const CHUNK_ROWS: usize = 1 << 16;

/// Texts held in memory, read again for verification a chunk of rows at a time.
struct InMemory<'a> {
    texts: &'a Texts,
    html: bool,
    cancel: &'a Cancel,
}

impl TextPasses for InMemory<'_> {
    fn pass(
        &mut self,
        want: &dyn Fn(u64) -> bool,
        f: &mut dyn FnMut(u64, &[&str]) -> simdex::Result<()>,
    ) -> simdex::Result<()> {
        let n = self.texts.len();
        for start in (0..n).step_by(CHUNK_ROWS) {
            self.cancel.check()?;
            let texts: Vec<std::borrow::Cow<'_, str>> = (start..(start + CHUNK_ROWS).min(n))
                .map(|r| match want(r as u64) {
                    true => visible(self.texts.get(r), self.html),
                    false => std::borrow::Cow::Borrowed(""),
                })
                .collect();
            let refs: Vec<&str> = texts.iter().map(|t| t.as_ref()).collect();
            f(start as u64, &refs)?;
        }
        Ok(())
    }
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
    k: Distance,
    skip: Option<&Bound<'py, PyAny>>,
    return_pairs: bool,
    mem_bytes: u64,
    tmp: Option<PathBuf>,
    threads: Option<Threads>,
) -> PyResult<(
    Bound<'py, PyArray1<i64>>,
    Option<(
        Bound<'py, PyArray1<i64>>,
        Bound<'py, PyArray1<i64>>,
        Bound<'py, PyArray1<u32>>,
    )>,
)> {
    let k = k.0;
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
    let long = fps.len() > LONG_CALL;
    let (clusters, pairs) = detached_watched(py, threads, long, move |cancel| {
        let cand = Candidates::new(fps, skip, k, &tmp, mem_bytes, &cancel.progress())?;
        let clusters: Vec<i64> = cand
            .clusters()?
            .roots()
            .into_iter()
            .map(|r| r as i64)
            .collect();
        let pairs = return_pairs.then(|| cand.pairs()).transpose()?.map(|p| {
            p.into_iter()
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
/// The library's verified dedup (`simdex::dedup::VerifiedDedup`, as `simdex dedup --verify`):
/// the pairs of rows whose `fingerprints` lie within `k` bits and whose word 3-shingle sets
/// have Jaccard >= `t`. Returns the cluster of every row (the smallest row of its component of
/// verified pairs) and the verified pairs (row_a, row_b, distance, jaccard), sorted.
#[pyfunction]
#[pyo3(signature = (texts, fingerprints, t, k, *, html=false, mem_bytes=1<<30, tmp=None, threads=None, tokens="unicode"))]
#[allow(clippy::too_many_arguments, clippy::type_complexity)]
pub fn verify_texts<'py>(
    py: Python<'py>,
    texts: &Bound<'py, PyAny>,
    fingerprints: &Bound<'py, PyAny>,
    t: f64,
    k: Distance,
    html: bool,
    mem_bytes: u64,
    tmp: Option<PathBuf>,
    threads: Option<Threads>,
    tokens: &str,
) -> PyResult<(
    Bound<'py, PyArray1<i64>>,
    (
        Bound<'py, PyArray1<i64>>,
        Bound<'py, PyArray1<i64>>,
        Bound<'py, PyArray1<u32>>,
        Bound<'py, PyArray1<f64>>,
    ),
)> {
    let k = k.0;
    let tokens: simdex::dedup::Tokens = tokens.parse().map_err(to_py)?;
    let texts = crate::texts::Texts::from_py(texts)?;
    let arr = u64_array(fingerprints, "fingerprints")?;
    let fps = arr.as_slice()?;
    if fps.len() != texts.len() {
        return Err(invalid("texts and fingerprints differ in length"));
    }
    if !(t > 0.0 && t <= 1.0) {
        return Err(invalid(format!("verify = {t} is not in (0, 1]")));
    }
    if k > simdex::dedup::Candidates::MAX_CANDIDATE_K {
        return Err(invalid(format!(
            "candidate_k = {k} is not in 0..={}",
            simdex::dedup::Candidates::MAX_CANDIDATE_K
        )));
    }
    let tmp = tmp.unwrap_or_else(std::env::temp_dir);
    let long = fps.len() > LONG_CALL;
    let (clusters, verified) = detached_watched(py, threads, long, move |cancel| {
        // The library's verified dedup: every row with its fingerprint and shingle set (the
        // sets computed on all cores, a chunk of rows at a time), then the candidates verified
        // against the texts read again (from memory).
        let mut v = VerifiedDedup::new(t, k, tokens)?;
        let n = texts.len();
        for start in (0..n).step_by(CHUNK_ROWS) {
            let rows = start..(start + CHUNK_ROWS).min(n);
            let sets: Vec<Vec<u64>> = rows
                .clone()
                .into_par_iter()
                .map(|r| {
                    cancel.check()?;
                    Ok(tokens.shingle_set(
                        &visible(texts.get(r), html),
                        simdex::dedup::Tokens::TRUTH_SHINGLE,
                    ))
                })
                .collect::<simdex::Result<_>>()?;
            for (r, set) in rows.zip(sets) {
                v.push(Some((fps[r], set)))?;
            }
        }
        let mut source = InMemory {
            texts: &texts,
            html,
            cancel,
        };
        let out = v.run(
            &mut source,
            &tmp,
            mem_bytes,
            0,
            &cancel.progress(),
            true,
            true,
        )?;
        let clusters: Vec<i64> = out
            .clusters
            .map(|mut c| c.roots().into_iter().map(|r| r as i64).collect())
            .unwrap_or_default();
        let mut verified = Vec::new();
        if let Some(l) = out.pairs {
            l.finish(|p| {
                verified.push(p);
                Ok(())
            })?;
        }
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

/// The word 3-shingle Jaccard of each pair of texts `(a[i], b[i])` if it is at least `t`, else
/// NaN: internal, the verification stage of `simdex.spark`. Each side is a list of str or an
/// Arrow producer of strings (as for `hash_texts`); the rule is `simdex dedup --verify`'s.
#[pyfunction]
#[pyo3(signature = (a, b, *, t, html=false, threads=None, tokens="unicode"))]
pub fn jaccard_pairs<'py>(
    py: Python<'py>,
    a: &Bound<'py, PyAny>,
    b: &Bound<'py, PyAny>,
    t: f64,
    html: bool,
    threads: Option<Threads>,
    tokens: &str,
) -> PyResult<Bound<'py, PyArray1<f64>>> {
    use crate::texts::Texts;
    let tokens: simdex::dedup::Tokens = tokens.parse().map_err(to_py)?;
    if !(t > 0.0 && t <= 1.0) {
        return Err(invalid(format!("t = {t} is not in (0, 1]")));
    }
    let ta = Texts::from_py(a)?;
    let tb = Texts::from_py(b)?;
    if ta.len() != tb.len() {
        return Err(invalid(format!(
            "the two sides differ in length ({} and {})",
            ta.len(),
            tb.len()
        )));
    }
    let jac = detached(py, threads, move || {
        let jac = (0..ta.len())
            .into_par_iter()
            .with_min_len(64)
            .map(|i| {
                let set = |x: &str| tokens.shingle_set(x, simdex::dedup::Tokens::TRUTH_SHINGLE);
                let sa = set(&visible(ta.get(i), html));
                let sb = set(&visible(tb.get(i), html));
                simdex::dedup::VerifiedDedup::verify_pair(&sa, &sb, t).unwrap_or(f64::NAN)
            })
            .collect::<Vec<f64>>();
        Ok(jac)
    })?;
    Ok(out(py, jac))
}
