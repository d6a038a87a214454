//! # simdex
//!
//! A storage engine for 64-bit simhash fingerprints, after Manku, Jain and Das Sarma,
//! *Detecting Near-Duplicates for Web Crawling* (WWW 2007).
//!
//! The question it answers: given a fingerprint F and a distance k, which stored fingerprints
//! differ from F in at most k bits? Exactly, fast, at any scale. The paper's answer is kept
//! whole: t copies of the set, each sorted under a bit permutation that brings a chosen group of
//! bit-blocks to the top ([`design`]); a query reads, in each table, the keys sharing F's
//! permuted prefix and checks their full distance ([`index`]); a batch of new fingerprints is
//! joined against every table in one sequential pass ([`index::batch`]).
//!
//! Underneath is the **table file** ([`table`]): distinct 64-bit keys, sorted, cut into
//! fixed-size blocks. A block's first key is stored raw; each next key is a Huffman-coded symbol
//! plus raw suffix bits — codec 1 (h-delta, the paper's: the number of leading bits shared with
//! the predecessor, then the bits below the first difference) or codec 2 (gap: the bit length of
//! the difference, then its low bits). An in-memory array of every block's last key picks the
//! single block a lookup decodes. Random keys take about 2.2 bits per key above the
//! information-theoretic minimum with codec 1 and 0.3 with codec 2.
//!
//! On top sits the **store** ([`store`]): the index made writable for services that embed
//! simdex. (fingerprint, document id) pairs with the ids stored once beside the tables, a
//! crc32-framed write-ahead log with three sync policies, an in-memory delta queried with the
//! same prefixes as the tables, and compaction into immutable generations while queries go on.
//!
//! In front sits [`simhash`]: documents (text or HTML) to fingerprints, specified exactly in
//! `format-spec/simhash.md`; and [`dedup`]: a corpus's fingerprints to candidate pairs (equal
//! fingerprints and the index self-join), verified by exact Jaccard where asked, to clusters.
//!
//! **Limitations.** Fingerprints are 64 bits; an index answers k up to its design's (automatic
//! designs: k ≤ 7). One process writes a store (others read what it held when they opened it).
//! Unix only; the vector fast paths are x86-64's (elsewhere scalar, same answers). Verification
//! is exact in [`dedup`] and in a store created to keep shingle sets; a sketch store's is an
//! estimate, and so is "within k" without verification. README.md, "Limitations", has the rest.
//!
//! The data path, top to bottom: [`simhash`] (documents to fingerprints) → [`store`] (log,
//! delta, generations) → [`design`] and [`permutation`] (fingerprint to key) → [`index`] (t
//! tables and a manifest; a query's probes, as key ranges of tables) → [`table`] (sorted keys
//! in a file, and every walk over its blocks: one cursor, the multi-probe scan, the AVX2
//! lanes) → `table::block` (one block) → [`codec`] (Huffman and bits). Byte layouts are
//! specified in `format-spec/`.
//!
//! ```
//! use simdex::table::{self, Table, TableOptions};
//!
//! # fn main() -> simdex::Result<()> {
//! let dir = tempfile::tempdir().unwrap();
//! let path = dir.path().join("t0.sxt");
//! let keys: Vec<u64> = (0..10_000u64).map(|i| i.wrapping_mul(0x9E37_79B9_7F4A_7C15)).collect();
//! let mut sorted = keys.clone();
//! sorted.sort_unstable();
//!
//! // Build: the closure is called once per pass and must yield the same sorted keys each time.
//! let summary = table::build_file(&path, &TableOptions::default(), || {
//!     Ok(sorted.iter().map(|&k| Ok(k)))
//! })?;
//! assert_eq!(summary.keys, 10_000);
//!
//! // Open (mmap) and query: every key whose top 16 bits match.
//! let t = Table::open(&path)?;
//! let probe = keys[42];
//! let hits: Vec<u64> = t.prefix(probe, 16).collect::<simdex::Result<_>>()?;
//! assert!(hits.contains(&probe));
//! assert_eq!(t.verify()?.keys, 10_000);
//! # Ok(())
//! # }
//! ```
#![deny(missing_docs)]

/// Declares a module that is `pub(crate)`, or, with the `internals` feature, public but hidden
/// and outside semver: for this repository's own CLI, tests, benches and fuzzers, which reach
/// into the codec, block, log and id-map layers that embedders never need.
/// A method public only with the `internals` feature (for this repository's tests, benches and
/// fuzzers), crate-private otherwise: methods that hand out internal types or raw representation,
/// so that the stable API never returns a type its users cannot name.
macro_rules! internal_fn {
    ($(#[$m:meta])* fn $name:ident $($rest:tt)*) => {
        $(#[$m])*
        #[cfg(feature = "internals")]
        #[doc(hidden)]
        pub fn $name $($rest)*
        $(#[$m])*
        #[cfg(not(feature = "internals"))]
        #[allow(dead_code)]
        pub(crate) fn $name $($rest)*
    };
}

macro_rules! internal_mod {
    ($(#[$m:meta])* $name:ident) => {
        $(#[$m])*
        #[cfg(feature = "internals")]
        #[doc(hidden)]
        pub mod $name;
        $(#[$m])*
        #[cfg(not(feature = "internals"))]
        #[allow(dead_code)]
        pub(crate) mod $name;
    };
}

mod aligned;
pub mod atomic;
internal_mod!(checksum);
pub mod codec;
pub mod dedup;
pub mod design;
pub mod error;
pub mod fingerprint;
pub mod index;
mod os;
pub mod permutation;
pub mod progress;
pub mod sample;
internal_mod!(sealed);
pub mod simhash;
pub mod store;
pub mod table;

pub use design::Design;
pub use error::{Error, Result};
pub use index::{Index, Match};
pub use permutation::Permutation;
pub use progress::{Progress, ProgressHandle};
pub use store::{Store, StoreMatch, StoreOptions, SyncPolicy};
pub use table::{Table, TableOptions};

/// The README's examples, compiled and run as doctests so they stay true.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;
