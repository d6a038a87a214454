//! A document's candidate matches and their order: what a check compares (a sketch, and a
//! shingle set where the store keeps sets), how similar two documents are, and which of two
//! candidates is the better answer. Shared by the store's candidates and a call's own.

use std::sync::Arc;

use super::keys::DocId;
use crate::error::Result;

/// A candidate: (similarity, tie-break, distance, store id) and the caller's id. The tie-break
/// is the distance where similarities are sketch estimates, and the `seq` (when it was stored)
/// where they are exact.
pub(super) type Candidate = (f64, u64, u32, u64, DocId);

/// Exact verification at `t`, with the store's prefix indexing.
#[derive(Clone)]
pub(super) struct Exact {
    pub(super) t: f64,
    pub(super) p: Arc<super::prefix::Prefixer>,
}

impl Exact {
    /// What a set of `n` shingles is looked up by at `t`: the first shingles of its `prefix`
    /// (its prefix at the store's threshold, which starts with its prefix at `t`), and how
    /// many of them a stored set must share to be a candidate.
    pub(super) fn probe<'a>(&self, n: usize, prefix: &'a [u64]) -> (&'a [u64], usize) {
        use super::prefix::{prefix_len, shared_needed};
        let query = &prefix[..prefix_len(n, self.t).min(prefix.len())];
        (query, shared_needed(n, self.t))
    }
}

/// What a document is compared by: its sketch, and its shingle set where the store keeps sets.
pub(super) type Compared<'a> = (&'a [u8], Option<&'a [u64]>);

/// Whether a document and a stored version under its id, each its fingerprint and what it is
/// compared by, are the same version: the same text, as far as answers can tell, so that it
/// is not put again. Equal fingerprints and sketches alone are not enough where the store keeps
/// sets: a word added to a long page often moves neither, and the old set would stay.
pub(super) fn same_version(a: (u64, Compared<'_>), b: (u64, Compared<'_>)) -> bool {
    a == b
}

/// The similarity of two documents: the exact Jaccard of their shingle sets where both have
/// one, else their sketches' estimate.
pub(super) fn similarity(
    shape: crate::dedup::sketch::SketchShape,
    a: Compared<'_>,
    b: Compared<'_>,
) -> Result<f64> {
    match (a.1, b.1) {
        (Some(x), Some(y)) => Ok(crate::dedup::verify::jaccard(x, y)),
        _ => shape.similarity(a.0, b.0),
    }
}

/// Best first: more similar, then the smaller tie-break (nearer; or stored earlier), then the
/// smaller id.
pub(super) fn better(a: &Candidate, b: &Candidate) -> std::cmp::Ordering {
    b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)).then(a.3.cmp(&b.3))
}
