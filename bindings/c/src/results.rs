//! Results the library owns: the rows of a batch of queries and the verdicts of a batch of
//! documents, as column arrays (a Go or Java wrapper takes each column in one copy), each freed
//! by its own function.

use std::ffi::c_char;

use crate::ffi::simdex_str;

/// The answers to a batch of queries, as columns: the rows of query `q` are
/// `offsets[q] .. offsets[q + 1]` of `fingerprints`, `distances` and `ids`, by distance, then
/// fingerprint, then id. Owned by the library: read it, then `simdex_rows_free` it.
#[repr(C)]
pub struct simdex_rows {
    /// Number of queries.
    pub queries: usize,
    /// Number of rows.
    pub len: usize,
    /// `queries + 1` ascending offsets, the first 0 and the last `len`.
    pub offsets: *const u64,
    /// Each row's stored fingerprint.
    pub fingerprints: *const u64,
    /// Each row's Hamming distance to its query.
    pub distances: *const u32,
    /// Each row's document id (a store's rows); NULL for an index, which stores no ids.
    pub ids: *const u64,
}

/// A `simdex_rows` and the arrays it points into (its first field, so that the pointer handed
/// out is the pointer to this).
#[repr(C)]
struct RowsOwned {
    head: simdex_rows,
    offsets: Vec<u64>,
    fingerprints: Vec<u64>,
    distances: Vec<u32>,
    ids: Option<Vec<u64>>,
}

/// Columns of rows being gathered.
#[derive(Default)]
pub(crate) struct Rows {
    pub(crate) offsets: Vec<u64>,
    pub(crate) fingerprints: Vec<u64>,
    pub(crate) distances: Vec<u32>,
    pub(crate) ids: Option<Vec<u64>>,
}

impl Rows {
    /// Hand the rows over to the caller.
    pub(crate) fn into_raw(self) -> *mut simdex_rows {
        let mut o = Box::new(RowsOwned {
            head: simdex_rows {
                queries: self.offsets.len().saturating_sub(1),
                len: self.fingerprints.len(),
                offsets: std::ptr::null(),
                fingerprints: std::ptr::null(),
                distances: std::ptr::null(),
                ids: std::ptr::null(),
            },
            offsets: self.offsets,
            fingerprints: self.fingerprints,
            distances: self.distances,
            ids: self.ids,
        });
        o.head.offsets = o.offsets.as_ptr();
        o.head.fingerprints = o.fingerprints.as_ptr();
        o.head.distances = o.distances.as_ptr();
        o.head.ids = o.ids.as_ref().map_or(std::ptr::null(), |v| v.as_ptr());
        Box::into_raw(o).cast()
    }
}

/// Free rows (NULL is ignored).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn simdex_rows_free(rows: *mut simdex_rows) {
    if !rows.is_null() {
        drop(unsafe { Box::from_raw(rows.cast::<RowsOwned>()) });
    }
}

/// Nothing stored before the document is a near-duplicate: it is new (and ingest stored it).
pub const SIMDEX_VERDICT_NEW: i32 = 0;
/// A near-duplicate of a stored document: `matched`, `similarity` and `distance` say which.
pub const SIMDEX_VERDICT_DUPLICATE: i32 = 1;
/// A document without words: nobody's near-duplicate, and not stored.
pub const SIMDEX_VERDICT_EMPTY: i32 = 2;
/// The same document is already stored under this id (a retried call): not stored again.
pub const SIMDEX_VERDICT_ALREADY_STORED: i32 = 3;

/// The verdicts of a batch of documents, in input order, as columns. Owned by the library:
/// read it, then `simdex_verdicts_free` it.
#[repr(C)]
pub struct simdex_verdicts {
    /// Number of documents.
    pub len: usize,
    /// Each document's `SIMDEX_VERDICT_` kind.
    pub kinds: *const i32,
    /// A duplicate's word 3-shingle Jaccard similarity with its match (exact in a store created
    /// with exact verification, else the sketches' estimate); NaN for other kinds.
    pub similarities: *const f64,
    /// A duplicate's Hamming distance to its match; -1 for other kinds.
    pub distances: *const i32,
    /// A duplicate's match: the stored document's id as it was given; empty for other kinds.
    pub matched: *const simdex_str,
}

#[repr(C)]
struct VerdictsOwned {
    head: simdex_verdicts,
    kinds: Vec<i32>,
    similarities: Vec<f64>,
    distances: Vec<i32>,
    matched: Vec<simdex_str>,
    ids: String,
}

/// Hand the engine's verdicts over to the caller.
pub(crate) fn verdicts_into_raw(verdicts: Vec<simdex::Verdict>) -> *mut simdex_verdicts {
    use simdex::Verdict;
    let n = verdicts.len();
    let mut kinds = Vec::with_capacity(n);
    let mut similarities = Vec::with_capacity(n);
    let mut distances = Vec::with_capacity(n);
    let mut spans = Vec::with_capacity(n);
    let mut ids = String::new();
    for v in verdicts {
        let start = ids.len();
        let (kind, sim, dist) = match v {
            Verdict::Duplicate {
                id,
                similarity,
                distance,
            } => {
                ids.push_str(&id.to_string());
                (SIMDEX_VERDICT_DUPLICATE, similarity, distance as i32)
            }
            Verdict::New => (SIMDEX_VERDICT_NEW, f64::NAN, -1),
            Verdict::Empty => (SIMDEX_VERDICT_EMPTY, f64::NAN, -1),
            Verdict::AlreadyStored => (SIMDEX_VERDICT_ALREADY_STORED, f64::NAN, -1),
            _ => (SIMDEX_VERDICT_NEW, f64::NAN, -1),
        };
        kinds.push(kind);
        similarities.push(sim);
        distances.push(dist);
        spans.push((start, ids.len()));
    }
    // The ids' text is final now: the strings can point into it.
    let base = ids.as_ptr();
    let matched = spans
        .into_iter()
        .map(|(a, b)| simdex_str {
            ptr: unsafe { base.add(a) }.cast::<c_char>(),
            len: b - a,
        })
        .collect();
    let mut o = Box::new(VerdictsOwned {
        head: simdex_verdicts {
            len: n,
            kinds: std::ptr::null(),
            similarities: std::ptr::null(),
            distances: std::ptr::null(),
            matched: std::ptr::null(),
        },
        kinds,
        similarities,
        distances,
        matched,
        ids,
    });
    o.head.kinds = o.kinds.as_ptr();
    o.head.similarities = o.similarities.as_ptr();
    o.head.distances = o.distances.as_ptr();
    o.head.matched = o.matched.as_ptr();
    Box::into_raw(o).cast()
}

/// Free verdicts (NULL is ignored).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn simdex_verdicts_free(verdicts: *mut simdex_verdicts) {
    if !verdicts.is_null() {
        drop(unsafe { Box::from_raw(verdicts.cast::<VerdictsOwned>()) });
    }
}
