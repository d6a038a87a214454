//! `simdex._simdex`: the compiled half of the `simdex` Python package.
//!
//! Fingerprints cross the boundary as `numpy.ndarray[uint64]` without copies (read through
//! `PyReadonlyArray1::as_slice`, returned with `IntoPyArray`); every call that does real work
//! releases the GIL (`Python::detach`) and runs on the rayon pool, or on a pool of `threads`
//! threads when given. Engine errors become the `simdex` exception hierarchy (defined in
//! `simdex/_errors.py`), and a panic becomes `simdex.Error`, never a crash.

use pyo3::prelude::*;

mod args;
mod arrays;
mod dedup;
mod errors;
mod handle;
mod index;
mod join;
mod jsonl;
mod runtime;
mod store;
mod store_open;
mod text;
mod texts;

/// The compiled module.
#[pymodule]
fn _simdex(m: &Bound<'_, PyModule>) -> PyResult<()> {
    runtime::init();
    m.add_class::<index::PyIndex>()?;
    m.add_class::<store::PyStore>()?;
    m.add_class::<text::PyIdf>()?;
    m.add_function(wrap_pyfunction!(text::hash_texts, m)?)?;
    m.add_function(wrap_pyfunction!(text::doc_freqs, m)?)?;
    m.add_function(wrap_pyfunction!(text::text_digests, m)?)?;
    m.add("IDF_SAMPLE_DOCS", simdex::IdfSample::DOCS)?;
    m.add_function(wrap_pyfunction!(dedup::dedup_fingerprints, m)?)?;
    m.add_function(wrap_pyfunction!(dedup::verify_texts, m)?)?;
    m.add_function(wrap_pyfunction!(dedup::jaccard_pairs, m)?)?;
    m.add_function(wrap_pyfunction!(join::join_design, m)?)?;
    m.add_function(wrap_pyfunction!(join::bucket_keys, m)?)?;
    m.add_function(wrap_pyfunction!(join::bucket_pairs, m)?)?;
    m.add_function(wrap_pyfunction!(join::components, m)?)?;
    m.add_function(wrap_pyfunction!(join::wide_pairs, m)?)?;
    m.add_function(wrap_pyfunction!(jsonl::parse_jsonl, m)?)?;
    m.add(
        "DEFAULT_CANDIDATE_K",
        simdex::dedup::Candidates::DEFAULT_CANDIDATE_K,
    )?;
    m.add(
        "MAX_CANDIDATE_K",
        simdex::dedup::Candidates::MAX_CANDIDATE_K,
    )?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
