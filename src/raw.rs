//! The engine-builder level: what the face at the crate root is built from, for tools that
//! build tables, designs or dedup stages themselves (the CLI, the Python package, a Spark job,
//! benchmarks). Everything here is public and documented, but it moves with the engine more
//! freely than the root does.
//!
//! - **Table files**: [`Table`] (one sorted file of keys in blocks, read from any bytes),
//!   [`build_file`] and the other builders, their [`TableOptions`], [`Codec`]s and checks.
//! - **Designs**: a [`Design`](crate::Design)'s [`TableDesign`]s and [`Cost`] (the join
//!   designs of shuffling engines and their buckets are `Design` methods).
//! - **Simhash pieces**: the JSON Lines rule (`Line`, feature `jsonl`), and the calibration
//!   of a fingerprint setting against exact Jaccard ([`Row::evaluate`]).
//! - **Sample data and files**: reproducible sample fingerprints with planted near-duplicates
//!   ([`with_planted`]) and crash-safe file replacement ([`write_file`]).

pub use crate::atomic::write_file;
pub use crate::codec::Codec;
pub use crate::design::{Cost, TableDesign};
pub use crate::sample::with_planted;
pub use crate::simhash::eval::Row;
#[cfg(feature = "jsonl")]
pub use crate::simhash::jsonl::Line;
pub use crate::table::{
    Range, Table, TableOptions, TableStats, TableSummary, VerifyReport, build_file,
};
