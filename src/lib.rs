//! # simdex
//!
//! A storage engine for 64-bit simhash fingerprints, after Manku, Jain and Das Sarma,
//! *Detecting Near-Duplicates for Web Crawling* (WWW 2007).
//!
//! The question it answers: given a fingerprint F and a distance k, which stored fingerprints
//! differ from F in at most k bits? Exactly, fast, at any scale. The paper's answer is kept
//! whole: t copies of the set, each sorted under a bit permutation that brings a chosen group of
//! bit-blocks to the top ([`Design`]); a query reads, in each table, the keys sharing F's
//! permuted prefix and checks their full distance ([`Index::near`]); a batch of new
//! fingerprints is joined against every table in one sequential pass ([`self_join`],
//! [`Index::batch_near`]).
//!
//! **The face** is this crate root, one name per thing:
//!
//! - an **index** of fingerprints: [`build_index`], then [`Index`] (`near`, `has_near`,
//!   `near_many`, batch mode), read from mapped files or memory;
//! - a **store**: [`Store`], the index made writable for services that embed simdex —
//!   (fingerprint, document id) pairs, a crc32-framed write-ahead log with three sync policies
//!   ([`SyncPolicy`]), an in-memory delta queried with the same prefixes as the tables, and
//!   compaction into immutable generations while queries go on;
//! - a **document store**: a [`Store`] created with a [`Recipe`], which turns texts into
//!   fingerprints and answers "is this a near-duplicate of anything stored?"
//!   ([`Store::ingest`], [`Store::check_documents`], a [`Verdict`] each) — exactly, by word
//!   3-shingle Jaccard, in a store that keeps shingle sets;
//! - **simhash**: [`Simhasher`], documents (text or HTML) to fingerprints, specified exactly in
//!   `format-spec/simhash.md`, with learned [`IdfTable`] weights;
//! - [`dedup`]: a corpus's fingerprints to candidate pairs, verified by exact Jaccard where
//!   asked, to clusters.
//!
//! [`raw`] is the engine-builder level: table files, codecs, design internals, sample data.
//!
//! **Limitations.** Fingerprints are 64 bits; an index answers k up to its design's (automatic
//! designs: k ≤ 7). One process writes a store (others read what it held when they opened it).
//! Unix only; the vector fast paths are x86-64's (elsewhere scalar, same answers). Verification
//! is exact in [`dedup`] and in a store created to keep shingle sets; a sketch store's is an
//! estimate, and so is "within k" without verification. README.md, "Limitations", has the rest.
//!
//! **Where a query goes**: [`Index::near`] permutes F once per table and probes the range of
//! keys sharing its prefix (`src/index/query.rs`); the probes of a query are planned together,
//! each block located through a radix directory over the last keys and prefetched
//! (`src/table/multiscan.rs`, `directory.rs`), then decoded — four probes to a vector register
//! on x86-64 (`src/table/lanes/`), else one key per probe in turn (`cursor.rs`, `block.rs`,
//! Huffman in `src/codec/`) — and every key's full distance is checked. A store's query adds
//! its delta and names document ids (`src/store/query.rs`).
//!
//! **Where an ingest goes**: [`Store::ingest`] hashes a chunk of documents on all cores
//! (`src/store/recipe.rs`), finds each one's candidates — stored sets sharing two prefix
//! shingles (`src/store/prefix_index.rs`), or fingerprints within k — and compares them exactly
//! (`src/store/documents.rs`), meets the call's earlier documents (`scratch.rs`), then logs and
//! applies the new ones (`write.rs`, `wal.rs`, `delta.rs`); a full delta is compacted into the
//! next generation (`compact.rs`, `generation/write.rs`). docs/architecture.md walks both file
//! by file; byte layouts are specified in `format-spec/`.
//!
//! ```
//! use simdex::raw::{self, Table, TableOptions};
//!
//! # fn main() -> simdex::Result<()> {
//! let dir = tempfile::tempdir().unwrap();
//! let path = dir.path().join("t0.sxt");
//! let keys: Vec<u64> = (0..10_000u64).map(|i| i.wrapping_mul(0x9E37_79B9_7F4A_7C15)).collect();
//! let mut sorted = keys.clone();
//! sorted.sort_unstable();
//!
//! // Build: the closure is called once per pass and must yield the same sorted keys each time.
//! let summary = raw::build_file(&path, &TableOptions::default(), || {
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
internal_mod!(atomic);
internal_mod!(checksum);
internal_mod!(codec);
pub mod dedup;
internal_mod!(design);
internal_mod!(error);
internal_mod!(fingerprint);
internal_mod!(index);
mod os;
internal_mod!(permutation);
internal_mod!(progress);
pub mod raw;
internal_mod!(sample);
internal_mod!(sealed);
internal_mod!(simhash);
internal_mod!(store);
internal_mod!(table);

pub use design::Design;
pub use error::{Error, Result};
pub use fingerprint::{parse_hex, to_hex};
pub use index::build::build as build_index;
pub use index::{
    BatchOptions, BatchResult, BuildOptions, BuildSummary, DesignChoice, Index, IndexStats,
    IndexVerifyReport, Match, NearMany, OpenOptions, Pair, QueryCounters, Shard, self_join,
};
pub use permutation::Permutation;
pub use progress::{Progress, ProgressHandle};
pub use simhash::{DfCounter, IdfSample, IdfTable, SimhashOptions, Simhasher};
pub use store::{
    CreateOptions, DocId, Document, Expiry, GenerationSummary, IngestOptions, ReadOnlyStore,
    Recipe, Recovery, ShapeRequest, Store, StoreCounters, StoreMatch, StoreNearMany, StoreOptions,
    StoreRow, StoreStats, SyncPolicy, Verdict,
};

/// The README's examples, compiled and run as doctests so they stay true.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;

/// The guide's examples, the same way.
#[cfg(doctest)]
#[doc = include_str!("../docs/guide.md")]
pub struct GuideDoctests;
