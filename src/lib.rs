//! # simdex
//!
//! A storage engine for 64-bit simhash fingerprints, after Manku, Jain and Das Sarma,
//! *Detecting Near-Duplicates for Web Crawling* (WWW 2007).
//!
//! The foundation is the **table file**: distinct 64-bit keys (fingerprints under a bit
//! permutation), sorted, cut into fixed-size blocks. A block's first key is stored raw; each
//! next key is the Huffman code of h, the number of leading bits it shares with its predecessor,
//! followed by its bits below the first differing one. An in-memory array of every block's last
//! key picks the single block a lookup decodes. Random 64-bit keys take about 2 bits per key
//! more than the information-theoretic minimum; the paper's "about half of raw" is beaten
//! comfortably at every size up to billions of keys.
//!
//! The data path, top to bottom: [`permutation`] (fingerprint to key) → [`table`] (sorted keys
//! to a file) → [`block`] (one block) → [`codec`] (Huffman and bits).
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

pub mod atomic;
pub mod block;
pub mod codec;
pub mod design;
pub mod error;
pub mod fingerprint;
pub mod index;
pub mod input;
pub mod permutation;
pub mod sample;
pub mod table;

pub use design::Design;
pub use error::{Error, Result};
pub use index::{Index, Match};
pub use permutation::Permutation;
pub use table::{Table, TableOptions};

/// The README's examples, compiled and run as doctests so they stay true.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;
