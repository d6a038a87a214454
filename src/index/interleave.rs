//! The hot loop of queries: plan, prefetch (and read ahead), then decode round-robin.
//!
//! For each query, every probe's search is prefetched in rounds — the directory entries of all
//! probes, then their last keys, then (each block located) their blocks' first cache lines,
//! `madvise`d too while the tables are out of memory (see `crate::os`) — and then every
//! block is opened and one key of each open probe is decoded in turn. Probes are independent,
//! so their cache misses overlap and so do their serial decode chains (each key needs the one
//! before it). Prefetching the next query's directory entries during this one, and decoding
//! the probes of several queries together (for designs of few tables), were measured and
//! gained nothing: BENCHMARKS.md. Where the CPU has AVX2 and the tables suit it, the decoding
//! after the rounds runs four probes per vector register instead (`lanes`).

use std::sync::atomic::Ordering::Relaxed;

use super::Index;
use super::probe::{Match, Work};
use crate::error::Result;
use crate::table::scan::{RangeScan, Step};

/// Most probes decoded round-robin at once (every design without a probe radius fits one
/// query's).
pub(crate) const MAX_INTERLEAVED: usize = 64;

impl<D: AsRef<[u8]> + Sync> Index<D> {
    /// Every match of `fp` (a design of at most [`MAX_INTERLEAVED`] probes), with repeats
    /// across tables, through `emit`.
    #[inline(always)]
    pub(super) fn interleaved(
        &self,
        fp: u64,
        k: u32,
        work: &mut Work,
        mut emit: impl FnMut(Match),
    ) -> Result<()> {
        // Every probe `(table, permuted query, lo, hi, first block)`, its block filled in by
        // the third round, which also drops the probes past their table's last block.
        let mut plan = [(0usize, 0u64, 0u64, 0u64, 0u64); MAX_INTERLEAVED];
        let cold = self.cold.load(Relaxed);
        if cold && self.cold_ticks.fetch_add(1, Relaxed) % 256 == 255 {
            // Reading ahead costs a system call per probe: stop once the tables are in memory.
            self.judge_residency();
        }
        let mut n = 0;
        for (t, (table, p)) in self.tables.iter().zip(&self.probers).enumerate() {
            let q = p.permutation.apply(fp);
            for &flip in &p.flips {
                let (lo, hi) = p.range(q, flip);
                work.probes += 1;
                table.prefetch_directory(lo);
                plan[n] = (t, q, lo, hi, 0);
                n += 1;
            }
        }
        for &(t, _, lo, _, _) in &plan[..n] {
            self.tables[t].prefetch_slice(lo);
        }
        let mut planned = 0;
        for j in 0..n {
            let (t, q, lo, hi, _) = plan[j];
            let table = &self.tables[t];
            let b = table.find_block(lo) as u64;
            if b < table.block_count() {
                let blocks = table.range_blocks(b, hi);
                if cold {
                    table.will_need_blocks(blocks.clone());
                }
                for i in blocks {
                    table.prefetch_block(i);
                }
                plan[planned] = (t, q, lo, hi, b);
                planned += 1;
            }
        }
        #[cfg(target_arch = "x86_64")]
        if self.lanes {
            let lanes = crate::table::lanes::Lanes {
                tables: &self.tables,
            };
            let mut found = |t: usize, key: u64, d: u32| {
                emit(Match {
                    distance: d,
                    fingerprint: self.probers[t].inverse.apply(key),
                })
            };
            // SAFETY: `lanes` is set only where the CPU has AVX2 and POPCNT.
            return unsafe { lanes.run(&plan[..planned], k, work, &mut found) };
        }
        let mut live = Vec::with_capacity(planned);
        for &(t, q, lo, hi, b) in &plan[..planned] {
            let scan = RangeScan::open(&self.tables[t], b, lo, hi, &mut work.blocks)?;
            live.push((scan, q, &self.probers[t].inverse));
        }
        let mut j = 0;
        while !live.is_empty() {
            if j >= live.len() {
                j = 0;
            }
            let (scan, q, inverse) = &mut live[j];
            match scan.step(&mut work.keys) {
                Step::Key(key) => {
                    let d = (key ^ *q).count_ones();
                    if d <= k {
                        work.candidates += 1;
                        emit(Match {
                            distance: d,
                            fingerprint: inverse.apply(key),
                        });
                    }
                    j += 1;
                }
                Step::Below => j += 1,
                Step::BlockEnd => {
                    if !scan.advance(&mut work.blocks)? {
                        live.swap_remove(j);
                    }
                }
                Step::Done => {
                    live.swap_remove(j);
                }
            }
        }
        Ok(())
    }
}

/// The lanes against the scalar loop and brute force, through whole indexes (they live here:
/// they switch an index's `lanes` flag).
#[cfg(all(test, target_arch = "x86_64"))]
mod lanes_tests {
    use crate::index::{self, BuildOptions, DesignChoice};
    use crate::sample::{flip_bits, random, splitmix64};
    use crate::table::block::{BLOCK_HEADER_LEN, BLOCK_TRAILER_LEN};
    use crate::table::format::HEADER_LEN;
    use crate::{Index, Match};

    fn brute(keys: &[u64], q: u64, k: u32) -> Vec<Match> {
        let mut v: Vec<Match> = keys
            .iter()
            .filter_map(|&x| {
                let d = (x ^ q).count_ones();
                (d <= k).then_some(Match {
                    distance: d,
                    fingerprint: x,
                })
            })
            .collect();
        v.sort_unstable();
        v.dedup();
        v
    }

    /// Key sets that push every rare case through the lanes: long deltas between clusters
    /// (the scalar rule), ranges over many blocks, one-key steps, the ends of the key space.
    fn sets() -> Vec<(&'static str, Vec<u64>)> {
        let mut s = 3;
        let clustered: Vec<u64> = (0..60)
            .flat_map(|_| {
                let base = splitmix64(&mut s) & !0xFFFF_FFFF;
                let mut t = base;
                (0..300).map(move |j| {
                    t = t.wrapping_add(j * 7919 + 1);
                    t
                })
            })
            .collect();
        // 20k keys differing only in their low 20 bits: every permutation's prefix ranges
        // hold many keys, so scans cross many blocks.
        let narrow: Vec<u64> = random(20_000, 5)
            .into_iter()
            .map(|x| 0x5555_0000_0000_0000 ^ (x & 0xF_FFFF))
            .collect();
        let mut ends: Vec<u64> = (0..64).map(|i| 1u64 << i).collect();
        ends.extend((0..2000).map(|i| u64::MAX - i * 3));
        ends.extend(0..2000);
        vec![
            ("random", random(40_000, 1)),
            ("clustered", clustered),
            ("narrow", narrow),
            ("ends", ends),
        ]
    }

    /// Whether this CPU can run the lanes (a test of them passes vacuously where not, and says so).
    fn lanes_can_run() -> bool {
        let yes = std::is_x86_feature_detected!("avx2") && std::is_x86_feature_detected!("popcnt");
        if !yes {
            eprintln!("no AVX2 here: the lanes cannot run");
        }
        yes
    }

    fn build(dir: &std::path::Path, keys: &[u64], design: &str, block: u32) -> Index {
        let opts = BuildOptions::default()
            .with_design(DesignChoice::Named(design.to_string()))
            .with_block_size(Some(block));
        index::build(dir, keys.iter().map(|&x| Ok(x)), &opts).unwrap();
        Index::open(dir).unwrap()
    }

    #[test]
    fn lanes_answer_as_the_scalar_loop_and_brute_force() {
        if !lanes_can_run() {
            return;
        }
        let tmp = tempfile::tempdir().unwrap();
        for (name, keys) in sets() {
            let mut keys = keys;
            keys.sort_unstable();
            keys.dedup();
            for (design, block) in [("10", 128), ("4", 256), ("16", 1024)] {
                let dir = tmp.path().join(format!("{name}-{design}-{block}"));
                let mut idx = build(&dir, &keys, design, block);
                let mut s = 11;
                let mut queries: Vec<u64> = keys.iter().step_by(97).copied().collect();
                for &f in keys.iter().step_by(211) {
                    for d in 1..=4 {
                        queries.push(flip_bits(f, d, &mut s));
                    }
                }
                queries.extend(random(200, 9));
                queries.extend([0, u64::MAX]);
                for k in [0, 1, 3] {
                    let before = idx.counters();
                    idx.lanes = false;
                    let scalar: Vec<_> = queries.iter().map(|&q| idx.near(q, k).unwrap()).collect();
                    let mid = idx.counters();
                    idx.lanes = true;
                    for (q, want) in queries.iter().zip(&scalar) {
                        assert_eq!(&idx.near(*q, k).unwrap(), want, "{name} {design} {q:#x}");
                        assert_eq!(want, &brute(&keys, *q, k), "{name} {design} {q:#x}");
                    }
                    let after = idx.counters();
                    // The same decode work: every block and key the scalar loop decodes.
                    assert_eq!(
                        after.blocks_decoded - mid.blocks_decoded,
                        mid.blocks_decoded - before.blocks_decoded
                    );
                    assert_eq!(
                        after.keys_decoded - mid.keys_decoded,
                        mid.keys_decoded - before.keys_decoded
                    );
                }
            }
        }
    }

    #[test]
    fn the_lanes_serve_large_indexes_and_leave_small_ones_to_the_scalar_loop() {
        if !lanes_can_run() {
            return;
        }
        let tmp = tempfile::tempdir().unwrap();
        // 1M keys per table: 98% of deltas short. 20k: gaps of ~2^50, long suffixes, 93%.
        for (n, lanes) in [(1_000_000, true), (20_000, false)] {
            let dir = tmp.path().join(n.to_string());
            let idx = build(&dir, &random(n, 4), "4", 256);
            assert_eq!(idx.lanes, lanes, "{n} keys");
        }
    }

    #[test]
    fn lanes_name_corrupt_streams_as_the_block_decoder_does() {
        if !lanes_can_run() {
            return;
        }
        let tmp = tempfile::tempdir().unwrap();
        let keys = random(30_000, 2);
        let dir = tmp.path().join("idx");
        let blocks = build(&dir, &keys, "4", 256).tables[0].block_count();
        let manifest = std::fs::read(dir.join("MANIFEST")).unwrap();
        let mut tables: Vec<Vec<u8>> = (0..4)
            .map(|t| std::fs::read(dir.join(format!("table-{t:02}.sxt"))).unwrap())
            .collect();
        // Zero the streams of every 7th block of table 0 and seal them with a fresh crc: bytes
        // that pass the crc, so only the decoders' own checks stand between them and a query.
        let crc_at = 256 - BLOCK_TRAILER_LEN;
        for b in (0..blocks).step_by(7) {
            let off = HEADER_LEN + b as usize * 256;
            let block = &mut tables[0][off..off + 256];
            block[BLOCK_HEADER_LEN..crc_at].fill(0);
            let crc = crate::table::block::block_crc(off as u64, &block[..crc_at]);
            block[crc_at..].copy_from_slice(&crc.to_le_bytes());
        }
        let mut idx = Index::from_parts(&manifest, tables).unwrap();
        let (mut faults, mut same) = (0, 0);
        for &q in keys.iter().step_by(3) {
            idx.lanes = false;
            let scalar = format!("{:?}", idx.near(q, 3));
            idx.lanes = true;
            let lanes = format!("{:?}", idx.near(q, 3));
            assert_eq!(lanes, scalar, "query {q:#x}");
            if scalar.starts_with("Err(Corrupt") {
                faults += 1;
            } else {
                same += 1;
            }
        }
        assert!(
            faults > 100 && same > 100,
            "{faults} faults, {same} answers"
        );
    }
}
