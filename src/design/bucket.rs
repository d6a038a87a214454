//! The self-join cut into buckets, for engines that shuffle data between machines (Spark, Ray,
//! Dask): the paper's tables without files.
//!
//! Under a design of probe radius 0, table `t` covers a pair exactly when the two fingerprints
//! share table `t`'s permuted prefix, so every near-duplicate pair lies inside one bucket
//! `(t, prefix_t(F))` of some table. A distributed job keys every fingerprint once per table by
//! [`bucket_key`], moves equal keys to one place (a shuffle), and there calls [`bucket_pairs`]
//! on each table's fingerprints: every pair within k is reported exactly once, by the first
//! table (in design order) that covers it, as [`super::Index::batch_near`] does. The union over
//! all buckets is therefore [`super::self_join`] of the same set, with no pair twice.
//!
//! The shuffle moves every fingerprint once per table, and a bucket costs its size squared in
//! popcounts: [`join_design`] (in `crate::design`) picks the radius-0 design that balances the two
//! for `n`
//! fingerprints.

use super::join::check_join_design;
#[cfg(test)]
use super::join::join_design;
use super::{Design, TableDesign};
use crate::error::{Error, Result};

/// An error unless `design` has probe radius 0 and `table` is one of its tables.
fn check(design: &Design, table: usize) -> Result<()> {
    check_join_design(design)?;
    if table >= design.tables().len() {
        return Err(Error::InvalidArgument(format!(
            "table {table} is out of range: design {} has {} tables",
            design.name(),
            design.tables().len()
        )));
    }
    Ok(())
}

/// The top `prefix_bits` bits of the permuted fingerprint, right-aligned (0 for none).
#[inline]
fn prefix(t: &TableDesign, fp: u64) -> u64 {
    t.permutation
        .apply(fp)
        .checked_shr(64 - t.prefix_bits)
        .unwrap_or(0)
}

/// The bucket of every fingerprint of `fps` in table `table`: its permuted prefix (the top
/// `prefix_bits` bits of the permuted fingerprint, right-aligned; 0 for an empty prefix).
pub fn bucket_keys(design: &Design, table: usize, fps: &[u64]) -> Result<Vec<u64>> {
    check(design, table)?;
    let t = &design.tables()[table];
    Ok(fps.iter().map(|&f| prefix(t, f)).collect())
}

/// Every pair `(i, j, distance)` of `fps` (indexes, `fps[i] < fps[j]`, distance ≤ `k`) that
/// share a bucket of table `table` and that no earlier table covers: table `table`'s share of
/// the self-join. `fps` may hold several buckets and repeats (equal fingerprints pair at
/// distance 0, in table 0). `k` may be below the design's k, never above. Sorted by (i, j).
pub fn bucket_pairs(
    design: &Design,
    table: usize,
    k: u32,
    fps: &[u64],
) -> Result<Vec<(u32, u32, u32)>> {
    check(design, table)?;
    if k > design.k() {
        return Err(Error::InvalidArgument(format!(
            "k = {k} exceeds the design's k = {} ({} is exact only up to it)",
            design.k(),
            design.name()
        )));
    }
    if fps.len() > u32::MAX as usize {
        return Err(Error::InvalidArgument(format!(
            "{} fingerprints in one call: at most {} (split the bucket list)",
            fps.len(),
            u32::MAX
        )));
    }
    let t = &design.tables()[table];
    // (permuted fingerprint, index), sorted: each bucket is one run of equal prefixes.
    let mut keyed: Vec<(u64, u32)> = fps
        .iter()
        .enumerate()
        .map(|(i, &f)| (t.permutation.apply(f), i as u32))
        .collect();
    keyed.sort_unstable();
    let top = |p: u64| p.checked_shr(64 - t.prefix_bits).unwrap_or(0);
    let mut out = Vec::new();
    let mut start = 0;
    while start < keyed.len() {
        let bucket = top(keyed[start].0);
        let end = start + keyed[start..].partition_point(|&(p, _)| top(p) == bucket);
        let run = &keyed[start..end];
        for (x, &(_, i)) in run.iter().enumerate() {
            let a = fps[i as usize];
            for &(_, j) in &run[x + 1..] {
                let b = fps[j as usize];
                let d = (a ^ b).count_ones();
                if d <= k && !(0..table).any(|e| design.table_covers(e, a ^ b)) {
                    let (i, j) = if (a, i) <= (b, j) { (i, j) } else { (j, i) };
                    out.push((i, j, d));
                }
            }
        }
        start = end;
    }
    out.sort_unstable();
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sample::splitmix64;

    /// Fingerprints in clusters of near neighbours, plus repeats: many pairs at every distance.
    fn clustered(n: usize, seed: u64) -> Vec<u64> {
        let mut s = seed;
        let mut out = Vec::new();
        while out.len() < n {
            let base = splitmix64(&mut s);
            out.push(base);
            for _ in 0..splitmix64(&mut s) % 6 {
                let mut f = base;
                for _ in 0..splitmix64(&mut s) % 5 {
                    f ^= 1 << (splitmix64(&mut s) % 64);
                }
                out.push(f);
            }
        }
        out.truncate(n);
        out
    }

    #[test]
    fn buckets_of_every_table_give_each_pair_within_k_once() {
        for (k, seed) in [(3, 1), (2, 2), (4, 3), (0, 4)] {
            let fps = clustered(3000, seed);
            let mut want = Vec::new();
            for i in 0..fps.len() {
                for j in i + 1..fps.len() {
                    let d = (fps[i] ^ fps[j]).count_ones();
                    if d <= k {
                        let (a, b) = if (fps[i], i) <= (fps[j], j) {
                            (i, j)
                        } else {
                            (j, i)
                        };
                        want.push((a as u32, b as u32, d));
                    }
                }
            }
            want.sort_unstable();
            for design in [
                join_design(fps.len() as u64, k).unwrap(),
                join_design(1 << 40, k).unwrap(),
            ] {
                let mut got = Vec::new();
                for t in 0..design.tables().len() {
                    // As a shuffle would: each bucket on its own, in any grouping.
                    let mut by_key: std::collections::BTreeMap<u64, Vec<u32>> = Default::default();
                    for (i, &f) in fps.iter().enumerate() {
                        by_key
                            .entry(bucket_keys(&design, t, &[f]).unwrap()[0])
                            .or_default()
                            .push(i as u32);
                    }
                    for members in by_key.values() {
                        let sub: Vec<u64> = members.iter().map(|&i| fps[i as usize]).collect();
                        for (i, j, d) in bucket_pairs(&design, t, k, &sub).unwrap() {
                            got.push((members[i as usize], members[j as usize], d));
                        }
                    }
                }
                got.sort_unstable();
                assert_eq!(got, want, "k = {k}, design {}", design.name());
            }
        }
    }

    #[test]
    fn radius_and_range_are_checked() {
        let d = Design::by_name("m2c1r1", 3).unwrap();
        assert!(
            bucket_pairs(&d, 0, 3, &[1, 2])
                .unwrap_err()
                .to_string()
                .contains("radius 0")
        );
        let d = join_design(1000, 3).unwrap();
        assert!(bucket_keys(&d, 99, &[1]).is_err());
        assert!(
            bucket_pairs(&d, 0, 4, &[1])
                .unwrap_err()
                .to_string()
                .contains("exceeds")
        );
        assert_eq!(bucket_pairs(&d, 0, 3, &[]).unwrap(), vec![]);
    }
}
