//! The engine-builder level: what the face at the crate root is built from, for tools that
//! build tables, designs or dedup stages themselves (the CLI, the Python package, a Spark job,
//! benchmarks). Everything here is public and documented, but it moves with the engine more
//! freely than the root does.
//!
//! - **Table files**: [`Table`] (one sorted file of keys in blocks, read from any bytes),
//!   [`build_file`] and the other builders, their [`TableOptions`], [`Codec`]s and checks.
//! - **Designs**: a [`Design`](crate::Design)'s [`TableDesign`]s and [`Cost`], the automatic
//!   block size, and the join designs of shuffling engines with their [`bucket_keys`] and
//!   [`bucket_pairs`].
//! - **Simhash pieces**: the default shingle, IDF sampling (`IdfSample::digest`),
//!   the JSON Lines rule (feature `jsonl`), visible text of HTML (feature `html`), and the
//!   calibration of a fingerprint setting against exact Jaccard ([`evaluate`]).
//! - **Sample data and files**: reproducible sample fingerprints ([`random`],
//!   [`with_planted`]) and crash-safe file replacement ([`write_file`]).

pub use crate::atomic::write_file;
pub use crate::codec::Codec;
pub use crate::design::{Cost, TableDesign};
pub use crate::index::bucket::{bucket_keys, bucket_pairs};
pub use crate::sample::{random, with_planted};
pub use crate::simhash::eval::{Row, evaluate, similar_pairs};
#[cfg(feature = "html")]
pub use crate::simhash::html::visible_text;
#[cfg(feature = "jsonl")]
pub use crate::simhash::jsonl::Line;
pub use crate::table::{
    Range, Table, TableOptions, TableStats, TableSummary, VerifyReport, build_bytes, build_file,
    information_bound,
};
