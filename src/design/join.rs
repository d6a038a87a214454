//! The join cost model: which radius-0 design a distributed self-join (`index::bucket`, the
//! Spark job) should cut its buckets by. A query wants few probes of short ranges; a shuffle
//! pays per table moved and per pair inside a bucket, so the trade-off differs from
//! [`super::Design::auto`]'s.

use super::{Design, MAX_TABLES};
use crate::error::{Error, Result};

/// Modelled cost, in nanoseconds, of moving one fingerprint of one table through a shuffle
/// (serialize, write, fetch, read back): Spark's own overheads dominate.
const SHUFFLE_NS: f64 = 250.0;
/// Modelled cost of checking one candidate pair inside a bucket (one xor, one popcount, the
/// covering test on the rare hit).
const PAIR_NS: f64 = 2.0;

/// The radius-0 design that minimizes the modelled cost of a distributed self-join of `n`
/// fingerprints at distance `k`: per fingerprint, `tables × (shuffle + bucket size × pair)`.
/// Small sets take few tables with short prefixes (design `4` for k = 3 at a million), large
/// ones more tables with longer prefixes (design `10` at a billion).
///
/// ```
/// let small = simdex::Design::for_join(1_000_000, 3)?;
/// let large = simdex::Design::for_join(1_000_000_000, 3)?;
/// assert_eq!((small.name(), large.name()), ("4", "10"));
/// # Ok::<(), simdex::Error>(())
/// ```
pub fn join_design(n: u64, k: u32) -> Result<Design> {
    let nf = n.max(1) as f64;
    Design::candidates(k, MAX_TABLES)
        .into_iter()
        .filter(|d| d.radius() == 0)
        .map(|d| {
            let cost: f64 = d
                .tables()
                .iter()
                .map(|t| SHUFFLE_NS + PAIR_NS * nf / 2f64.powi(t.prefix_bits as i32))
                .sum();
            (d, cost)
        })
        .min_by(|(a, ca), (b, cb)| {
            ca.total_cmp(cb)
                .then(a.tables().len().cmp(&b.tables().len()))
        })
        .map(|(d, _)| d)
        .ok_or_else(|| Error::InvalidArgument(format!("no radius-0 design for k = {k}")))
}

/// An error unless `design` can drive a bucket join: probe radius 0, so that a table's
/// candidates are exactly the fingerprints sharing its prefix.
pub fn check_join_design(design: &Design) -> Result<()> {
    if design.radius() != 0 {
        return Err(Error::InvalidArgument(format!(
            "design {} probes with radius {}: a bucket join needs radius 0 (exact prefix \
             buckets), e.g. the design join_design picks",
            design.name(),
            design.radius()
        )));
    }
    Ok(())
}
