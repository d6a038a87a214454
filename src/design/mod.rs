//! Table designs: which permuted tables an index keeps so that a Hamming-distance-k query is
//! exact.
//!
//! A design for (f = 64, k) is a list of tables, each a [`Permutation`] that moves a chosen set of
//! bit-blocks to the top plus a prefix length p, and a probe radius r. A query F probes each table
//! at every prefix within r flipped bits of F's permuted top p bits and checks the full distance
//! of every key found there. The design is exact when, **for every set of at most k differing bit
//! positions, some table's top p bits hold at most r of them** (then that table's probe with
//! exactly those flips finds the fingerprint). [`Design::covers`] checks that for one set of
//! positions; the tests check it for all sets for k ≤ 3.
//!
//! Two families, after Manku, Jain and Das Sarma (WWW 2007):
//! * **one level**: cut the 64 bits into m blocks; every choice of c blocks is a table whose
//!   prefix is those blocks. k differences spread over m blocks leave the c least-hit blocks
//!   holding at most r of them exactly when c ≤ (number of blocks a most-even spread leaves with
//!   ≤ r differences in total); for r = 0 that is c = m − k.
//! * **two level**: cut 64 bits into m1 blocks and choose c1 = m1 − k; cut the remaining bits into
//!   m2 blocks and choose c2 = m2 − k. The paper's 16-table design is (4, 4).
//!
//! With r ≥ 1 (multi-probe, as in HEngine), fewer tables each take more probes.

use crate::error::{Error, Result};
use crate::permutation::Permutation;

mod bucket;
mod cost;
mod join;

pub(crate) use cost::alignment;
#[allow(unused_imports)] // the `internals` feature's users (tests, benches) take these
pub use cost::{
    ALIGN_MIN_RUN, ALIGNED_SEGMENT_KEYS, AUTO_BLOCK_RAM_BUDGET, AUTO_BLOCK_SIZES,
    AUTO_SEGMENT_KEYS, AUTO_SEGMENT_MIN_BLOCK, AUTO_SEGMENTED_BLOCK_SIZE,
    AUTO_SEGMENTED_INDEX_BYTES, Cost, DEFAULT_MAX_TABLES, auto_alignment, auto_block_size,
    auto_segment_keys, keys_per_block,
};
#[allow(unused_imports)] // the `internals` feature's users (tests, benches) take these
pub use join::{check_join_design, join_design};

/// The largest k any constructor here accepts.
pub const MAX_K: u32 = 7;
/// The most tables any design may have: each table is a whole sorted copy of the fingerprints
/// on disk, and a query probes every one. (The paper's largest design for k = 3 has 20.)
pub const MAX_TABLES: usize = 64;
/// The most prefix probes one query may make over all tables (each probe is a last-key search
/// and at least one block decode); a radius-r design probes sum over i <= r of C(p, i) prefixes
/// per table of p-bit prefixes.
pub const MAX_PROBES: u64 = 1 << 16;
/// One table of a design.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TableDesign {
    /// The permutation the table's keys are sorted under.
    pub permutation: Permutation,
    /// How many leading (permuted) bits a probe fixes.
    pub prefix_bits: u32,
}

/// A set of tables that answers Hamming-distance queries up to `k` exactly.
///
/// ```
/// use simdex::Design;
/// # fn main() -> simdex::Result<()> {
/// let d = Design::by_name("10", 3)?;          // the paper's 10 tables for k = 3
/// assert_eq!((d.k(), d.tables().len()), (3, 10));
/// // Every difference of at most k bits leaves some table's probed prefix intact.
/// let diff = (1u64 << 63) | (1 << 20) | 1;
/// assert!((0..d.tables().len()).any(|t| d.table_covers(t, diff)));
/// let auto = Design::auto(8_000_000_000, 3)?; // picked by the cost model for 8e9 fingerprints
/// assert!(auto.k() >= 3);
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Design {
    name: String,
    k: u32,
    radius: u32,
    tables: Vec<TableDesign>,
}

/// Split `bits` bit positions (given in order) into `m` blocks as evenly as possible, larger
/// blocks first: 64 into 6 gives 11, 11, 11, 11, 10, 10.
fn split(bits: &[u8], m: usize) -> Vec<Vec<u8>> {
    let (q, rem) = (bits.len() / m, bits.len() % m);
    let mut out = Vec::with_capacity(m);
    let mut at = 0;
    for i in 0..m {
        let len = q + usize::from(i < rem);
        out.push(bits[at..at + len].to_vec());
        at += len;
    }
    out
}

/// All `c`-subsets of `0..m`, in lexicographic order.
fn combinations(m: usize, c: usize) -> Vec<Vec<usize>> {
    fn rec(start: usize, m: usize, c: usize, cur: &mut Vec<usize>, out: &mut Vec<Vec<usize>>) {
        if cur.len() == c {
            out.push(cur.clone());
            return;
        }
        for i in start..m {
            cur.push(i);
            rec(i + 1, m, c, cur, out);
            cur.pop();
        }
    }
    let mut out = Vec::new();
    rec(0, m, c, &mut Vec::new(), &mut out);
    out
}

/// Sum of the `c` smallest block loads when `k` differences spread as evenly as possible over
/// `m` blocks: the worst case for a one-level design (an even spread maximises it).
fn worst_c_smallest(k: u32, m: usize, c: usize) -> u32 {
    let mut loads: Vec<u32> = (0..m)
        .map(|i| k / m as u32 + u32::from((i as u32) < k % m as u32))
        .collect();
    loads.sort_unstable();
    loads[..c].iter().sum()
}

fn binom(n: u64, k: u64) -> u64 {
    (0..k).fold(1u64, |acc, i| acc * (n - i) / (i + 1))
}

impl Design {
    /// The bucket of each fingerprint of `fps` in table `table` of this (radius-0) design: its
    /// permuted prefix (the top `prefix_bits` bits of the permuted fingerprint, right-aligned;
    /// 0 for an empty prefix), what a shuffling engine keys the table's rows by.
    pub fn bucket_keys(&self, table: usize, fps: &[u64]) -> Result<Vec<u64>> {
        bucket::bucket_keys(self, table, fps)
    }

    /// Every pair `(i, j, distance)` of `fps` (indexes, `fps[i] < fps[j]`, distance ≤ `k`) that
    /// share a bucket of table `table` and that no earlier table covers: table `table`'s share
    /// of the self-join. `fps` may hold several buckets and repeats (equal fingerprints pair at
    /// distance 0, in table 0). `k` may be below the design's k, never above. Sorted by (i, j).
    pub fn bucket_pairs(&self, table: usize, k: u32, fps: &[u64]) -> Result<Vec<(u32, u32, u32)>> {
        bucket::bucket_pairs(self, table, k, fps)
    }

    /// The radius-0 design that minimizes the modelled cost of a distributed self-join of `n`
    /// fingerprints at distance `k`: per fingerprint, `tables × (shuffle + bucket size × pair)`.
    /// Small sets take few tables with short prefixes (design `4` for k = 3 at a million), large
    /// ones more tables with longer prefixes (design `10` at a billion).
    pub fn for_join(n: u64, k: u32) -> Result<Design> {
        join::join_design(n, k)
    }

    /// An error unless `design` can drive a bucket join: probe radius 0, so that a table's
    /// candidates are exactly the fingerprints sharing its prefix.
    pub fn check_join(&self) -> Result<()> {
        join::check_join_design(self)
    }

    /// The block size for an index of `n` keys in `tables` tables: the smallest whose last-key
    /// arrays fit in `AUTO_BLOCK_RAM_BUDGET`, else the largest.
    ///
    /// Up to `AUTO_SEGMENTED_INDEX_BYTES` of index: `AUTO_SEGMENTED_BLOCK_SIZE`. Above, the
    /// smallest of [`AUTO_BLOCK_SIZES`](crate::Design::AUTO_BLOCK_SIZES) whose last keys fit the
    /// budget: small blocks cost a probe
    /// the fewest cache lines and the cheapest first crc check, but the in-memory last-key array
    /// (and its directory) costs about 12 bytes per block per table, which at billions of keys is
    /// gigabytes; there larger blocks keep the index's memory small. Segments make a probe's
    /// decode independent of the block size in every case.
    pub fn auto_block_size(n: u64, tables: usize) -> u32 {
        cost::auto_block_size(n, tables)
    }

    /// Block sizes [`Design::auto_block_size`] chooses from for indexes above
    /// `AUTO_SEGMENTED_INDEX_BYTES`, smallest (fastest queries) first, all cut into segments of
    /// `AUTO_SEGMENT_KEYS`. At 100M keys (design 10, 5 GB) 1024-byte blocks in segments were
    /// 3-10% faster than format 1's 256-byte blocks on one VM and level on another (with their
    /// first checks prefetched), at bound + 3.9 bits per key in format 2 (+ 3.3 in format 3)
    /// instead of + 5.6 and a quarter of the reader memory; 4096-byte ones were 1.4x slower
    /// (docs/log/benchmarks.md).
    pub const AUTO_BLOCK_SIZES: [u32; 3] = crate::design::AUTO_BLOCK_SIZES;

    /// The table-count budget [`Design::auto`] works under by default.
    pub const DEFAULT_MAX_TABLES: usize = crate::design::DEFAULT_MAX_TABLES;

    /// The largest k any constructor here accepts.
    pub const MAX_K: u32 = crate::design::MAX_K;

    /// A design from explicit tables (as read from a manifest). Checks only shape, not coverage.
    pub fn from_tables(
        name: impl Into<String>,
        k: u32,
        radius: u32,
        tables: Vec<TableDesign>,
    ) -> Result<Design> {
        if tables.is_empty() {
            return Err(Error::InvalidArgument(
                "a design needs at least one table".into(),
            ));
        }
        if k > 64 || radius > k {
            return Err(Error::InvalidArgument(format!(
                "k = {k}, radius = {radius}: need radius <= k <= 64"
            )));
        }
        if let Some(t) = tables.iter().find(|t| t.prefix_bits > 64) {
            return Err(Error::InvalidArgument(format!(
                "prefix of {} bits exceeds 64",
                t.prefix_bits
            )));
        }
        let d = Design {
            name: name.into(),
            k,
            radius,
            tables,
        };
        d.check_budget()?;
        Ok(d)
    }

    /// Probes one query makes over all tables (saturating).
    pub fn probes_per_query(&self) -> u64 {
        let per: u128 = self
            .tables
            .iter()
            .map(|t| {
                (0..=self.radius.min(t.prefix_bits))
                    .map(|i| binomial(t.prefix_bits as u64, i as u64))
                    .fold(0u128, u128::saturating_add)
            })
            .fold(0u128, u128::saturating_add);
        u64::try_from(per).unwrap_or(u64::MAX)
    }

    /// An error if the design exceeds [`MAX_TABLES`] or [`MAX_PROBES`].
    fn check_budget(&self) -> Result<()> {
        if self.tables.len() > MAX_TABLES {
            return Err(Error::InvalidArgument(format!(
                "design {} has {} tables, over the budget of {MAX_TABLES}",
                self.name,
                self.tables.len()
            )));
        }
        let probes = self.probes_per_query();
        if probes > MAX_PROBES {
            return Err(Error::InvalidArgument(format!(
                "design {} makes {probes} probes per query, over the budget of {MAX_PROBES} \
                 (a smaller probe radius or shorter prefixes)",
                self.name
            )));
        }
        Ok(())
    }

    /// An error unless every difference of at most k bits is covered by some table: checked
    /// for every such difference when k <= 3 (at most 43 745 of them), and on 2^16 seeded
    /// random differences of exactly k bits above. For designs read from disk, whose
    /// constructor's proof does not travel with them.
    pub fn check_exact(&self) -> Result<()> {
        // Source bits that land in each table's prefix: the table covers `diff` iff at most
        // `radius` of its bits are there.
        let masks: Vec<u64> = self
            .tables
            .iter()
            .map(|t| {
                let inv = t.permutation.inverse();
                let top = u64::MAX.checked_shl(64 - t.prefix_bits).unwrap_or(0);
                inv.apply(top)
            })
            .collect();
        let covered = |diff: u64| masks.iter().any(|m| (diff & m).count_ones() <= self.radius);
        let fail = |diff: u64| {
            Error::InvalidArgument(format!(
                "design {} is not exact for k = {}: no table covers the difference {diff:#018x}",
                self.name, self.k
            ))
        };
        if self.k <= 3 {
            let mut stack = vec![(0u64, 0u32, 0u32)];
            while let Some((diff, bits, from)) = stack.pop() {
                if !covered(diff) {
                    return Err(fail(diff));
                }
                if bits < self.k {
                    for b in from..64 {
                        stack.push((diff | 1 << b, bits + 1, b + 1));
                    }
                }
            }
        } else {
            let mut s = 0x5eed_u64;
            for _ in 0..1 << 16 {
                let mut diff = 0u64;
                while diff.count_ones() < self.k {
                    diff |= 1 << (crate::sample::splitmix64(&mut s) % 64);
                }
                if !covered(diff) {
                    return Err(fail(diff));
                }
            }
        }
        Ok(())
    }

    /// One level: 64 bits in `m` blocks, every choice of `c` blocks on top, probe radius `r`.
    /// Fails unless the design is exact for `k`.
    pub fn one_level(k: u32, m: usize, c: usize, r: u32) -> Result<Design> {
        check_k(k)?;
        if m == 0 || m > 64 || c == 0 || c > m {
            return Err(Error::InvalidArgument(format!(
                "one-level design needs 1 <= c <= m <= 64, got m = {m}, c = {c}"
            )));
        }
        let tables = binomial(m as u64, c as u64);
        if tables > MAX_TABLES as u128 {
            return Err(Error::InvalidArgument(format!(
                "design m{m}c{c}r{r} has C({m}, {c}) = {tables} tables, over the budget of \
                 {MAX_TABLES} (each is a full copy of the fingerprints)"
            )));
        }
        if worst_c_smallest(k, m, c) > r {
            return Err(Error::InvalidArgument(format!(
                "{m} blocks choose {c} with radius {r} is not exact for k = {k}"
            )));
        }
        let all: Vec<u8> = (0..64).collect();
        let blocks = split(&all, m);
        let tables = combinations(m, c)
            .into_iter()
            .map(|chosen| {
                let top: Vec<u8> = chosen.iter().flat_map(|&b| blocks[b].clone()).collect();
                TableDesign {
                    prefix_bits: top.len() as u32,
                    permutation: Permutation::with_top(&top).expect("distinct bits"),
                }
            })
            .collect();
        let name = format!("m{m}c{c}r{r}");
        Design::from_tables(name, k, r, tables)
    }

    /// Two levels (radius 0): `m1` blocks choose `m1 - k`, then the remaining bits in `m2`
    /// blocks choose `m2 - k`.
    pub fn two_level(k: u32, m1: usize, m2: usize) -> Result<Design> {
        check_k(k)?;
        let ku = k as usize;
        if m1 <= ku || m2 <= ku || m1 > 64 {
            return Err(Error::InvalidArgument(format!(
                "two-level design needs m1, m2 > k = {k}, got {m1}, {m2}"
            )));
        }
        let all: Vec<u8> = (0..64).collect();
        let blocks = split(&all, m1);
        let mut tables = Vec::new();
        for first in combinations(m1, m1 - ku) {
            let top1: Vec<u8> = first.iter().flat_map(|&b| blocks[b].clone()).collect();
            let rest: Vec<u8> = all.iter().copied().filter(|b| !top1.contains(b)).collect();
            if rest.len() < m2 {
                return Err(Error::InvalidArgument(format!(
                    "two-level design ({m1}, {m2}): {} bits left for {m2} blocks",
                    rest.len()
                )));
            }
            let blocks2 = split(&rest, m2);
            for second in combinations(m2, m2 - ku) {
                let mut top = top1.clone();
                top.extend(second.iter().flat_map(|&b| blocks2[b].clone()));
                tables.push(TableDesign {
                    prefix_bits: top.len() as u32,
                    permutation: Permutation::with_top(&top).expect("distinct bits"),
                });
            }
        }
        Design::from_tables(format!("m{m1}x{m2}"), k, 0, tables)
    }

    /// A design by name: the paper's `20`, `16`, `10` and `4` (k = 3 only), or the generic
    /// `m<M>c<C>r<R>` (one level) and `m<M1>x<M2>` (two levels), for the given k.
    pub fn by_name(name: &str, k: u32) -> Result<Design> {
        let paper = |d: Result<Design>, label: &str| {
            if k != 3 {
                return Err(Error::InvalidArgument(format!(
                    "design {label} is the paper's design for k = 3; for k = {k} use auto or m<M>c<C>r<R>"
                )));
            }
            d.map(|mut d| {
                d.name = label.to_string();
                d
            })
        };
        match name {
            "20" => paper(Design::one_level(3, 6, 3, 0), "20"),
            "16" => paper(Design::two_level(3, 4, 4), "16"),
            "10" => paper(Design::one_level(3, 5, 2, 0), "10"),
            "4" => paper(Design::one_level(3, 4, 1, 0), "4"),
            _ => {
                let bad = || {
                    Error::InvalidArgument(format!(
                        "unknown design {name:?}: use auto, 20, 16, 10, 4, m<M>c<C>r<R> or m<M1>x<M2>"
                    ))
                };
                let rest = name.strip_prefix('m').ok_or_else(bad)?;
                if let Some((m1, m2)) = rest.split_once('x') {
                    let m1 = m1.parse().map_err(|_| bad())?;
                    let m2 = m2.parse().map_err(|_| bad())?;
                    return Design::two_level(k, m1, m2);
                }
                let (m, rest) = rest.split_once('c').ok_or_else(bad)?;
                let (c, r) = rest.split_once('r').ok_or_else(bad)?;
                Design::one_level(
                    k,
                    m.parse().map_err(|_| bad())?,
                    c.parse().map_err(|_| bad())?,
                    r.parse().map_err(|_| bad())?,
                )
            }
        }
    }

    /// Every design the constructors offer for `k` with at most `max_tables` tables: one level
    /// with r = 0 and r = 1 (the largest exact c for each m), and two levels with r = 0.
    pub fn candidates(k: u32, max_tables: usize) -> Vec<Design> {
        let mut out: Vec<Design> = Vec::new();
        let ku = k as usize;
        for r in 0..=k.min(1) {
            for m in 1..=(ku + 8).min(64) {
                // The largest c that stays exact gives the longest prefixes.
                let Some(c) = (1..=m).rev().find(|&c| worst_c_smallest(k, m, c) <= r) else {
                    continue;
                };
                if binom(m as u64, c as u64) as usize > max_tables {
                    continue;
                }
                if let Ok(d) = Design::one_level(k, m, c, r) {
                    out.push(d);
                }
            }
        }
        for m1 in ku + 1..=ku + 3 {
            for m2 in ku + 1..=ku + 3 {
                let t = binom(m1 as u64, (m1 - ku) as u64) * binom(m2 as u64, (m2 - ku) as u64);
                if t as usize <= max_tables
                    && let Ok(d) = Design::two_level(k, m1, m2)
                {
                    out.push(d);
                }
            }
        }
        out.retain(|d| d.tables.iter().all(|t| t.prefix_bits < 64 || d.radius == 0));
        out.dedup_by(|a, b| a.tables == b.tables && a.radius == b.radius);
        for d in &mut out {
            if k == 3 {
                for label in ["20", "16", "10", "4"] {
                    if let Ok(p) = Design::by_name(label, 3)
                        && p.tables == d.tables
                        && p.radius == d.radius
                    {
                        d.name = label.to_string();
                    }
                }
            }
        }
        out
    }

    /// The design's name (`20`, `m5c2r0`, `m4x4`, ...).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The largest query distance the design answers exactly.
    pub fn k(&self) -> u32 {
        self.k
    }

    /// Probe radius: how many prefix bits each probe may flip.
    pub fn radius(&self) -> u32 {
        self.radius
    }

    /// The tables.
    pub fn tables(&self) -> &[TableDesign] {
        &self.tables
    }

    /// Probes one query makes in table `i`: every way to flip at most `radius` of its prefix bits.
    pub fn probes_per_table(&self, i: usize) -> u64 {
        let p = self.tables[i].prefix_bits as u64;
        (0..=self.radius as u64).map(|j| binom(p, j.min(p))).sum()
    }

    /// True if, for the differing bit positions `diff` (a mask over fingerprint bits, bit 0 =
    /// most significant), some table's prefix holds at most `radius` of them.
    pub fn covers(&self, diff: u64) -> bool {
        (0..self.tables.len()).any(|i| self.table_covers(i, diff))
    }

    /// True if table `i`'s prefix holds at most `radius` of the differing positions `diff`, i.e.
    /// table `i`'s probes find a fingerprint that differs from the query by `diff`.
    #[inline]
    pub fn table_covers(&self, i: usize, diff: u64) -> bool {
        let t = &self.tables[i];
        let top = t
            .permutation
            .apply(diff)
            .checked_shr(64 - t.prefix_bits)
            .unwrap_or(0);
        top.count_ones() <= self.radius
    }
}

/// C(n, r), saturating at u128::MAX.
fn binomial(n: u64, r: u64) -> u128 {
    if r > n {
        return 0;
    }
    let r = r.min(n - r);
    let mut acc: u128 = 1;
    for i in 0..r {
        acc = match acc.checked_mul((n - i) as u128) {
            Some(v) => v / (i as u128 + 1),
            None => return u128::MAX,
        };
    }
    acc
}

fn check_k(k: u32) -> Result<()> {
    if k > MAX_K {
        return Err(Error::InvalidArgument(format!(
            "k = {k} is out of range: designs support k in 0..={MAX_K}"
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paper_designs_have_the_paper_shapes() {
        let d = Design::by_name("20", 3).unwrap();
        assert_eq!(d.tables().len(), 20);
        let mut p: Vec<u32> = d.tables().iter().map(|t| t.prefix_bits).collect();
        p.sort();
        assert_eq!((p[0], p[19]), (31, 33));
        let d = Design::by_name("16", 3).unwrap();
        assert_eq!(d.tables().len(), 16);
        assert!(d.tables().iter().all(|t| t.prefix_bits == 28));
        let d = Design::by_name("10", 3).unwrap();
        assert_eq!(d.tables().len(), 10);
        assert!(
            d.tables()
                .iter()
                .all(|t| (25..=26).contains(&t.prefix_bits))
        );
        let d = Design::by_name("4", 3).unwrap();
        assert_eq!(d.tables().len(), 4);
        assert!(d.tables().iter().all(|t| t.prefix_bits == 16));
        let d = Design::by_name("m2c1r1", 3).unwrap();
        assert_eq!((d.tables().len(), d.radius()), (2, 1));
        assert_eq!(d.probes_per_table(0), 33);
    }

    #[test]
    fn inexact_designs_and_bad_names_are_refused() {
        assert!(Design::one_level(3, 5, 3, 0).is_err());
        assert!(Design::one_level(3, 2, 1, 0).is_err());
        assert!(Design::by_name("20", 2).is_err());
        assert!(Design::by_name("banana", 3).is_err());
        assert!(Design::by_name("m5c2", 3).is_err());
        assert!(Design::one_level(8, 9, 1, 0).is_err());
        assert!(Design::auto(1000, 8).is_err());
    }
}
