//! Deduplicating a corpus: documents' fingerprints → candidate pairs ([`Candidates`]: equal
//! fingerprints, and distinct ones within k from the index self-join, or the block join of
//! [`wide`] beyond an index's k) → optionally verification ([`verify`]: the exact Jaccard of
//! shingle sets, compared only for the pairs whose [`Prefixes`] show they may reach the
//! threshold, found by the prefix join when it is cheaper; in bounded memory by [`Passes`]) →
//! clusters ([`Clusters`]: the connected components of the pairs, or of the pairs that
//! verification kept).
//!
//! Every dedup front end — `simdex dedup`, `simdex.dedup` and the components of the Spark job —
//! builds on this module, so that the rules are written once: a pair is two documents (row
//! numbers, `a < b`) within k bits, listed once; a cluster's representative is its smallest
//! member (in input order: the first document), which is the one a dedup keeps.

mod candidates;
mod clusters;
mod identical;
mod passes;
pub mod prefix;
pub mod sketch;
mod spill;
pub mod verify;
pub mod wide;

pub use candidates::{Candidates, PAIR_BYTES};
pub use clusters::Clusters;
pub use identical::{Folder, Groups};
pub use passes::Passes;
pub use prefix::Prefixes;
pub use spill::{PairSpill, Verified};

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
