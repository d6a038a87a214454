//! Deduplicating a corpus: documents' fingerprints → candidate pairs ([`Candidates`]: equal
//! fingerprints, and distinct ones within k from the index self-join, or the block join of
//! [`Candidates::wide_join_part`] beyond an index's k) → optionally verification
//! ([`VerifiedDedup`]: the exact Jaccard of shingle sets ([`VerifiedDedup::verify_pair`]),
//! compared only for the pairs whose prefixes show they may reach the threshold, found by the
//! prefix join when it is cheaper, in bounded memory by passes over the texts) → clusters
//! ([`Clusters`]: the connected components of the pairs, or of the pairs that verification
//! kept).
//!
//! Every dedup front end — `simdex dedup`, `simdex.dedup` and the components of the Spark job —
//! builds on this module, so that the rules are written once: a pair is two documents (row
//! numbers, `a < b`) within k bits, listed once; a cluster's representative is its smallest
//! member (in input order: the first document), which is the one a dedup keeps.

mod candidates;
mod clusters;
mod identical;
mod passes;
internal_mod!(prefix);
internal_mod!(sketch);
mod spill;
internal_mod!(verify);
mod verified;
internal_mod!(wide);

pub use candidates::Candidates;
pub use clusters::Clusters;
pub(crate) use identical::Folder;
pub(crate) use passes::Passes;
pub(crate) use prefix::Prefixes;
pub use sketch::SketchShape;
pub use spill::PairSpill;
pub(crate) use spill::Verified;
pub use verified::{TextPasses, VerifiedDedup, VerifiedOutput};
pub use verify::Tokens;
#[allow(unused_imports)] // the `internals` feature's users (tests, benches) take it
pub(crate) use verify::verify_pair;
#[allow(unused_imports)] // the `internals` feature's users (tests, benches) take these
pub(crate) use verify::{hash_and_set, shingle_set, shingle_set_with};

/// A xorshift64 generator from a non-zero `seed`: the dedup tests' reproducible data.
#[cfg(test)]
pub(crate) fn xorshift(mut x: u64) -> impl FnMut() -> u64 {
    move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    }
}
