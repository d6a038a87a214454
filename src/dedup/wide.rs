//! The self-join at candidate distances beyond an index's k (verified dedup's default is 11):
//! the pigeonhole principle over blocks of bits, in memory, on all cores.
//!
//! Cut the 64 bits into `m` blocks. Two fingerprints within `k` bits differ in at most
//! `r = floor(k / m)` bits of some block, so every such pair shares, in some block, a value
//! within `r` flips: each block is a table of the fingerprints bucketed by that block's value
//! (a counting sort: one offset per value), and a fingerprint probes, in each table, every
//! bucket within `r` flips of its own value. A pair is reported by the first table that covers
//! it (whose block differs in at most `r` bits), from its smaller fingerprint: every pair within
//! `k` exactly once, nothing beyond. The paper's tables with a probe radius, without files:
//! the work is `m` tables of `sum_{i <= r} C(b, i)` probes and `n / 2^b` keys a probe, and
//! [`plan`] picks the `m` that costs least for `n` fingerprints (blocks of at most 22 bits, so
//! that a table's offsets stay within 16 MiB).

use rayon::prelude::*;

use crate::error::{Error, Result};
use crate::index::Pair;
use crate::progress::ProgressHandle;

/// The widest block: 2^22 bucket offsets (16 MiB) per table.
const MAX_BLOCK_BITS: u32 = 22;

/// Modelled nanoseconds of one bucket probe (an offset pair, mostly from cache, and the loop
/// around it) and of one fingerprint compared in a bucket (a sequential load, XOR, POPCNT).
const PROBE_NS: f64 = 8.0;
const COMPARE_NS: f64 = 1.5;

/// The blocks of a plan: `(first bit from the top, width)` each, covering all 64 bits.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Plan {
    /// Each block's shift (its value is `(fp >> shift) & mask`) and width.
    pub blocks: Vec<(u32, u32)>,
    /// Bits a probe flips at most in one block.
    pub radius: u32,
}

fn binomial_sum(b: u32, r: u32) -> f64 {
    let mut c = 1.0;
    let mut s = 1.0;
    for i in 1..=r.min(b) {
        c = c * (b - i + 1) as f64 / i as f64;
        s += c;
    }
    s
}

/// The cheapest plan for `n` fingerprints at distance `k` (at most 64): `m` blocks (as even as
/// possible) of at most 22 bits, probed with radius `k / m`, minimizing the
/// modelled probes and comparisons per fingerprint.
pub fn plan(n: u64, k: u32) -> Plan {
    plan_and_cost(n, k).0
}

/// The modelled nanoseconds per fingerprint of the cheapest plan's join, for uniform
/// fingerprints (clumped ones cost more): what the prefix join is weighed against.
pub fn cost_ns_per_fingerprint(n: u64, k: u32) -> f64 {
    plan_and_cost(n, k).1
}

fn plan_and_cost(n: u64, k: u32) -> (Plan, f64) {
    let min_m = 64u32.div_ceil(MAX_BLOCK_BITS);
    // m = k + 1 blocks need no flips at all; more only shrink the buckets further.
    (min_m..=(k + 1).clamp(min_m, 64))
        .map(|m| {
            let blocks = even_blocks(m);
            let radius = k / m;
            let cost: f64 = blocks
                .iter()
                .map(|&(_, w)| {
                    let probes = binomial_sum(w, radius);
                    probes * (PROBE_NS + COMPARE_NS * n as f64 / 2f64.powi(w as i32))
                })
                .sum();
            (Plan { blocks, radius }, cost)
        })
        .min_by(|a, b| a.1.total_cmp(&b.1))
        .expect("at least one block count")
}

/// The 64 bits cut into `m` (1..=64) blocks as even as possible (the first `64 mod m` a bit
/// wider), from the top: `(shift, width)` each, a block's value being `(fp >> shift) & mask`.
pub(crate) fn even_blocks(m: u32) -> Vec<(u32, u32)> {
    (0..m)
        .scan(64u32, |top, i| {
            let w = 64 / m + u32::from(i < 64 % m);
            *top -= w;
            Some((*top, w))
        })
        .collect()
}

/// Every XOR mask of `w` bits with at most `r` bits set, 0 first.
fn masks(w: u32, r: u32) -> Vec<u32> {
    let mut out = vec![0u32];
    let mut frontier = vec![(0u32, 0u32)]; // (mask, next bit)
    for _ in 0..r {
        let mut next = Vec::new();
        for &(m, from) in &frontier {
            for b in from..w {
                let x = m | 1 << b;
                out.push(x);
                next.push((x, b + 1));
            }
        }
        frontier = next;
    }
    out
}

/// Pairs of `fps` (distinct, any order) within `k` bits, as [`Pair`]s (`batch` < `stored`),
/// sorted, each once. Memory: per block, a copy of the fingerprints and its offsets.
pub fn wide_join(fps: &[u64], k: u32, progress: &ProgressHandle) -> Result<Vec<Pair>> {
    WideJoin::new(fps, k)?.part(0, 1, progress)
}

/// The block join prepared: its tables built once, its pairs produced whole or in parts (a
/// caller whose pairs would not fit its memory takes them a part at a time).
#[derive(Debug)]
pub struct WideJoin {
    k: u32,
    plan: Plan,
    /// Per block: the fingerprints sorted by the block's value (a counting sort), and offsets.
    tables: Vec<(Vec<u64>, Vec<u32>)>,
    /// Per block: the XOR masks a probe applies to its value.
    masks: Vec<Vec<u32>>,
}

impl WideJoin {
    /// The join of `fps` (any order, repeats allowed) within `k` bits.
    pub fn new(fps: &[u64], k: u32) -> Result<WideJoin> {
        if k > 64 {
            return Err(Error::InvalidArgument(format!("k = {k} is beyond 64 bits")));
        }
        let mut fps = fps.to_vec();
        fps.par_sort_unstable();
        fps.dedup();
        let n = fps.len();
        let plan = plan(n as u64, k);
        let tables = plan
            .blocks
            .par_iter()
            .map(|&(shift, w)| {
                let mask = (1u64 << w) - 1;
                let mut offsets = vec![0u32; (1usize << w) + 1];
                for &f in &fps {
                    offsets[((f >> shift) & mask) as usize + 1] += 1;
                }
                for i in 1..offsets.len() {
                    offsets[i] += offsets[i - 1];
                }
                let mut at = offsets.clone();
                let mut sorted = vec![0u64; n];
                for &f in &fps {
                    let v = ((f >> shift) & mask) as usize;
                    sorted[at[v] as usize] = f;
                    at[v] += 1;
                }
                (sorted, offsets)
            })
            .collect();
        let masks = plan
            .blocks
            .iter()
            .map(|&(_, w)| masks(w, plan.radius))
            .collect();
        Ok(WideJoin {
            k,
            plan,
            tables,
            masks,
        })
    }

    /// Bytes the prepared tables hold.
    pub fn memory_bytes(&self) -> u64 {
        self.tables
            .iter()
            .map(|(f, o)| (f.len() * 8 + o.len() * 4) as u64)
            .sum()
    }

    /// The pairs found by the probing fingerprints at positions `part` modulo `parts` of each
    /// table, sorted. The parts' pairs are disjoint and together the whole join, and of about
    /// equal size however clumpy the fingerprints: a clump's fingerprints are spread over all
    /// parts (cutting by bucket value instead put a clump, and most pairs, in one part). Each
    /// part does its share of the comparisons but walks every bucket. A cluster engine spreads
    /// the parts over tasks, a machine short of memory takes them one after another, and one
    /// part estimates the whole.
    pub fn part(&self, part: usize, parts: usize, progress: &ProgressHandle) -> Result<Vec<Pair>> {
        if parts == 0 || part >= parts {
            return Err(Error::InvalidArgument(format!(
                "part {part} of {parts}: give 0 <= part < parts"
            )));
        }
        let (p, k) = (&self.plan, self.k);
        let covers = |t: usize, x: u64| {
            let (shift, w) = p.blocks[t];
            ((x >> shift) & ((1u64 << w) - 1)).count_ones() <= p.radius
        };
        // Bucket against bucket, in order of bucket value: the buckets a run of values probes
        // are runs too, so memory is read in streams (one fingerprint probing its buckets one
        // at a time missed the cache on nearly every probe). A pair of buckets is visited from
        // the smaller value.
        progress.stage("wide join", Some(self.tables.len() as u64))?;
        let mut pairs: Vec<Pair> = Vec::new();
        for (t, (sorted, offsets)) in self.tables.iter().enumerate() {
            let bucket = |v: usize| &sorted[offsets[v] as usize..offsets[v + 1] as usize];
            let values = offsets.len() - 1;
            let found: Vec<Pair> = (0..values)
                .into_par_iter()
                .with_min_len(64)
                .fold(Vec::new, |mut out, v| {
                    let here = bucket(v);
                    if here.is_empty() {
                        return out;
                    }
                    // This part's probing fingerprints: those at positions `part` modulo
                    // `parts` of the table (every one when `parts` is 1).
                    let first = (part + parts - offsets[v] as usize % parts) % parts;
                    let mut push = |f: u64, g: u64, d: u32| {
                        // Reported by the first table covering the pair.
                        if !(0..t).any(|s| covers(s, f ^ g)) {
                            out.push(Pair {
                                batch: f.min(g),
                                stored: f.max(g),
                                distance: d,
                            });
                        }
                    };
                    for &m in &self.masks[t] {
                        let u = v ^ m as usize;
                        if u < v {
                            continue;
                        }
                        let there = if u == v { here } else { bucket(u) };
                        if there.is_empty() {
                            continue;
                        }
                        for (i, &f) in here.iter().enumerate().skip(first).step_by(parts) {
                            // Within its own bucket, a fingerprint meets those after it.
                            let from = if u == v { i + 1 } else { 0 };
                            within(f, &there[from..], k, |g, d| push(f, g, d));
                        }
                    }
                    out
                })
                .reduce(Vec::new, |mut a, b| {
                    a.extend(b);
                    a
                });
            pairs.extend(found);
            progress.advance(1)?;
        }
        progress.finish();
        pairs.par_sort_unstable();
        Ok(pairs)
    }
}

/// Call `hit(g, distance)` for every `g` of `gs` within `k` bits of `f`: the inner loop of the
/// join (tens of thousands of fingerprints per probe on clumpy data), four at a time in an AVX2
/// register where the CPU has it.
#[inline]
fn within(f: u64, gs: &[u64], k: u32, mut hit: impl FnMut(u64, u32)) {
    #[cfg(target_arch = "x86_64")]
    if avx2() {
        // SAFETY: the CPU has AVX2 and POPCNT, checked just above.
        unsafe { within_avx2(f, gs, k, &mut hit) };
        return;
    }
    for &g in gs {
        let d = (f ^ g).count_ones();
        if d <= k {
            hit(g, d);
        }
    }
}

#[cfg(target_arch = "x86_64")]
fn avx2() -> bool {
    std::is_x86_feature_detected!("avx2") && std::is_x86_feature_detected!("popcnt")
}

/// [`within`] four at a time: XOR, popcount by nibble look-up and byte sums, compare.
///
/// # Safety
/// The CPU must support AVX2 and POPCNT.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,popcnt")]
unsafe fn within_avx2(f: u64, gs: &[u64], k: u32, hit: &mut impl FnMut(u64, u32)) {
    use std::arch::x86_64::*;
    let fv = _mm256_set1_epi64x(f as i64);
    let kv = _mm256_set1_epi64x(k as i64);
    let nibbles = _mm256_setr_epi8(
        0, 1, 1, 2, 1, 2, 2, 3, 1, 2, 2, 3, 2, 3, 3, 4, 0, 1, 1, 2, 1, 2, 2, 3, 1, 2, 2, 3, 2, 3,
        3, 4,
    );
    let low4 = _mm256_set1_epi8(0x0f);
    let zero = _mm256_setzero_si256();
    let mut quads = gs.chunks_exact(4);
    for q in &mut quads {
        // SAFETY: `q` is 4 u64s, 32 readable bytes; the load is unaligned.
        let g = unsafe { _mm256_loadu_si256(q.as_ptr().cast()) };
        let x = _mm256_xor_si256(fv, g);
        let counts = _mm256_add_epi8(
            _mm256_shuffle_epi8(nibbles, _mm256_and_si256(x, low4)),
            _mm256_shuffle_epi8(nibbles, _mm256_and_si256(_mm256_srli_epi16::<4>(x), low4)),
        );
        let far = _mm256_cmpgt_epi64(_mm256_sad_epu8(counts, zero), kv);
        let near = !_mm256_movemask_pd(_mm256_castsi256_pd(far)) & 0xf;
        if near != 0 {
            for (i, &g) in q.iter().enumerate() {
                if near & (1 << i) != 0 {
                    hit(g, (f ^ g).count_ones());
                }
            }
        }
    }
    for &g in quads.remainder() {
        let d = (f ^ g).count_ones();
        if d <= k {
            hit(g, d);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sample::{flip_bits, random, splitmix64};

    fn brute(fps: &[u64], k: u32) -> Vec<Pair> {
        let mut v = Vec::new();
        for (i, &a) in fps.iter().enumerate() {
            for &b in &fps[i + 1..] {
                let d = (a ^ b).count_ones();
                if d <= k {
                    let (x, y) = (a.min(b), a.max(b));
                    v.push(Pair {
                        batch: x,
                        stored: y,
                        distance: d,
                    });
                }
            }
        }
        v.sort_unstable();
        v
    }

    #[test]
    fn masks_enumerate_each_subset_once() {
        let m = masks(10, 2);
        assert_eq!(m.len(), 1 + 10 + 45);
        let mut s = m.clone();
        s.sort_unstable();
        s.dedup();
        assert_eq!(s.len(), m.len());
    }

    #[test]
    fn plans_cover_all_bits_and_grow_with_n() {
        for k in [0, 3, 8, 11, 16, 40] {
            for n in [10u64, 1_000_000, 100_000_000] {
                let p = plan(n, k);
                assert_eq!(p.blocks.iter().map(|b| b.1).sum::<u32>(), 64);
                assert!(p.blocks.iter().all(|b| b.1 <= MAX_BLOCK_BITS));
                assert_eq!(p.radius, k / p.blocks.len() as u32);
            }
        }
        assert_eq!(plan(1_000_000, 11).blocks.len(), 4);
    }

    /// Exact against brute force: random fingerprints with planted neighbours at every distance
    /// up to past k, clusters of near-equal ones, the ends of the space.
    /// Parts are of about equal size on clumpy fingerprints too (a clump's members spread over
    /// all parts), so that one part estimates the whole and a batch of parts stays bounded.
    #[test]
    fn parts_are_balanced_on_clumps() {
        let mut next = crate::dedup::xorshift(3);
        // Three clumps: members within 8 bits of their centre.
        let centres = [next(), next(), next()];
        let fps: Vec<u64> = (0..6000)
            .map(|i| {
                let mut f = centres[i % 3];
                for _ in 0..8 {
                    f ^= 1 << (next() % 64);
                }
                f
            })
            .collect();
        let join = WideJoin::new(&fps, 11).unwrap();
        let sizes: Vec<usize> = (0..8)
            .map(|p| join.part(p, 8, &ProgressHandle::none()).unwrap().len())
            .collect();
        let total: usize = sizes.iter().sum();
        assert!(total > 100_000, "{total}");
        for s in &sizes {
            assert!(
                *s * 8 > total * 8 / 10 && *s * 8 < total * 12 / 10,
                "{sizes:?}"
            );
        }
    }

    #[test]
    fn wide_join_is_the_brute_force_join() {
        let mut s = 11;
        for k in [0u32, 5, 8, 11, 13, 16] {
            let mut fps = random(1500, k as u64 + 1);
            for i in 0..600 {
                let base = fps[i % 1500];
                let d = (splitmix64(&mut s) % (k as u64 + 4)) as u32;
                fps.push(flip_bits(base, d, &mut s));
            }
            fps.extend([0, u64::MAX, 1, 1 << 63, u64::MAX - 1]);
            fps.sort_unstable();
            fps.dedup();
            let got = wide_join(&fps, k, &ProgressHandle::none()).unwrap();
            assert_eq!(got, brute(&fps, k), "k = {k}");
            let mut parts: Vec<Pair> = (0..3)
                .flat_map(|p| WideJoin::new(&fps, k).unwrap().part(p, 3, &ProgressHandle::none()).unwrap())
                .collect();
            parts.sort_unstable();
            assert_eq!(parts, got, "k = {k}, in 3 parts");
        }
    }
}
