//! Batch mode against brute force, for several designs and every k, and sharding: the union of
//! N shards is exactly the unsharded result, with nothing reported twice.

use crate::common;

use std::collections::BTreeSet;

use common::*;
use simdex::Index;
use simdex::index::{self, BatchOptions, BuildOptions, DesignChoice, Pair, Shard};

fn brute_pairs(batch: &BTreeSet<u64>, stored: &BTreeSet<u64>, k: u32) -> Vec<Pair> {
    let mut v = Vec::new();
    for &b in batch {
        for &f in stored {
            let d = (b ^ f).count_ones();
            if d <= k {
                v.push(Pair {
                    batch: b,
                    stored: f,
                    distance: d,
                });
            }
        }
    }
    v
}

fn brute_within(batch: &BTreeSet<u64>, k: u32) -> Vec<Pair> {
    brute_pairs(batch, batch, k)
        .into_iter()
        .filter(|p| p.batch < p.stored)
        .collect()
}

/// Stored fingerprints and a batch with neighbours of stored ones at 0..=4 bits, random ones,
/// duplicates, and near-duplicates inside the batch.
fn data(seed: u64) -> (Vec<u64>, Vec<u64>) {
    let mut s = seed;
    let mut stored = random_keys(4000, seed);
    stored.extend([0, u64::MAX]);
    let mut batch = random_keys(300, seed ^ 1);
    for i in 0..200 {
        batch.push(flip_bits(stored[i * 7], (i % 5) as u32, &mut s));
    }
    for i in 0..50 {
        batch.push(flip_bits(batch[i], (i % 4) as u32 + 1, &mut s));
        batch.push(batch[i]);
    }
    batch.extend([1, u64::MAX - 1]);
    (stored, batch)
}

fn build(dir: &std::path::Path, fps: &[u64], design: &str, b: u32) -> Index {
    let opts = BuildOptions::default()
        .with_k(3)
        .with_design(DesignChoice::Named(design.into()))
        .with_block_size(Some(b))
        .with_mem_bytes(1 << 30);
    index::build(dir, fps.iter().map(|&x| Ok(x)), &opts).unwrap();
    Index::open(dir).unwrap()
}

#[test]
fn batch_equals_brute_force_for_every_design_and_k() {
    let (stored, batch) = data(1);
    let sset: BTreeSet<u64> = stored.iter().copied().collect();
    let bset: BTreeSet<u64> = batch.iter().copied().collect();
    for design in ["4", "10", "16", "20", "m2c1r1", "m4c2r1"] {
        let dir = tempfile::tempdir().unwrap();
        let idx = build(&dir.path().join("i"), &stored, design, 128);
        for k in 0..=3 {
            let r = idx
                .batch_near(&batch, &BatchOptions::default().with_k(k))
                .unwrap();
            assert_eq!(
                r.pairs,
                brute_pairs(&bset, &sset, k),
                "design {design} k {k}"
            );
            assert_eq!(
                r.within,
                brute_within(&bset, k),
                "design {design} k {k} within"
            );
            // A batch this size against 4 002 keys touches most blocks, never more than all.
            assert!(r.keys_scanned <= sset.len() as u64 * idx.design().tables().len() as u64);
        }
        assert!(
            idx.batch_near(&batch, &BatchOptions::default().with_k(4))
                .is_err()
        );
    }
}

/// `near_many` answered by the batch scan is `near_many` answered query by query, match for
/// match and in the same order (by distance, then fingerprint), for repeated queries too, and
/// both are brute force; both count every query.
#[test]
fn near_many_by_scan_answers_as_query_by_query() {
    let (mut stored, mut batch) = data(3);
    // A cluster whose matches' order by distance is not their order by fingerprint.
    let c = 0x1234_5678_9abc_def0u64;
    stored.extend([c, c ^ 1 << 63, c ^ 0b11, c ^ 0b111]);
    batch.extend([c, c ^ 1, c]);
    let sset: BTreeSet<u64> = stored.iter().copied().collect();
    for (design, block) in [("4", 128), ("10", 256), ("20", 128), ("m4c2r1", 128)] {
        let dir = tempfile::tempdir().unwrap();
        let mut idx = build(&dir.path().join("i"), &stored, design, block);
        for k in 0..=3 {
            idx.use_scan(Some(true));
            let c0 = idx.counters();
            let scanned = idx.near_many(&batch, k).unwrap();
            let c1 = idx.counters();
            idx.use_scan(Some(false));
            let probed = idx.near_many(&batch, k).unwrap();
            let c2 = idx.counters();
            assert_eq!(scanned, probed, "design {design} k {k}");
            // Queries, probes and candidates count the same either way (blocks and keys are
            // what each path decoded).
            assert_eq!(c1.queries - c0.queries, batch.len() as u64);
            assert_eq!(c1.queries - c0.queries, c2.queries - c1.queries);
            assert_eq!(
                c1.probes - c0.probes,
                c2.probes - c1.probes,
                "design {design}"
            );
            assert_eq!(
                c1.candidates - c0.candidates,
                c2.candidates - c1.candidates,
                "design {design} k {k}"
            );
            for (i, &q) in batch.iter().enumerate() {
                let mut want: Vec<(u32, u64)> = brute_pairs(&BTreeSet::from([q]), &sset, k)
                    .iter()
                    .map(|p| (p.distance, p.stored))
                    .collect();
                want.sort_unstable();
                let got: Vec<(u32, u64)> = scanned
                    .get(i)
                    .iter()
                    .map(|m| (m.distance, m.fingerprint))
                    .collect();
                assert_eq!(got, want, "design {design} k {k} query {i} ({q:#x})");
            }
        }
        idx.use_scan(Some(true));
        assert!(idx.near_many(&batch, 4).is_err());
        assert!(idx.near_many(&[], 3).unwrap().is_empty());
        // Either way, a caller that asks to stop gets `Cancelled`, not answers.
        struct Stop;
        impl simdex::Progress for Stop {
            fn cancelled(&self) -> bool {
                true
            }
        }
        let stop = simdex::ProgressHandle::new(Stop);
        for scan in [true, false] {
            idx.use_scan(Some(scan));
            let r = idx.near_many_with(&batch, 3, &stop);
            assert!(matches!(r, Err(simdex::Error::Cancelled)), "scan {scan}");
        }
    }
}

/// A small batch against a larger stored set decodes only the blocks a probe can reach (the
/// work follows the batch), and stays exact where one probed prefix spans many blocks, at the
/// first and last blocks, on every adversarial set, and across shards.
#[test]
fn small_batches_skip_blocks_and_stay_exact() {
    let mut s = 77;
    let mut sets = adversarial_sets();
    // 12 000 keys that differ only in their low 14 bits: under a permutation that keeps those
    // bits out of the prefix, one prefix spans hundreds of blocks.
    let base = 0x5A5A_0F0F_3C3C_0000u64;
    sets.push((
        "one_prefix_many_blocks",
        sorted_set(
            &(0..12_000)
                .map(|i| base ^ (i * 1361 % 16384))
                .collect::<Vec<_>>(),
        ),
    ));
    let mut big = random_keys(30_000, 5);
    big.extend([0, u64::MAX]);
    sets.push(("random_30000", sorted_set(&big)));
    for (name, stored) in &sets {
        let sset: BTreeSet<u64> = stored.iter().copied().collect();
        let mut batch: Vec<u64> = (0..12)
            .filter(|_| !stored.is_empty())
            .map(|i| {
                let f = stored[(splitmix(&mut s) % stored.len() as u64) as usize];
                flip_bits(f, i % 4, &mut s)
            })
            .collect();
        batch.extend(random_keys(8, s));
        batch.extend([0, 1, u64::MAX, base ^ 3]);
        if let (Some(&lo), Some(&hi)) = (stored.first(), stored.last()) {
            batch.extend([lo, hi, lo ^ 4, hi ^ (1 << 63)]);
        }
        let bset: BTreeSet<u64> = batch.iter().copied().collect();
        // Format 1, and segmented blocks (1024 bytes in segments of 20 keys: a seek past the
        // keys below the batch's next wanted key also skips segments, and stops mid-segment
        // where a wanted prefix ends), with one probe list and with a radius's 33.
        for (design, block) in [("10", 128), ("m2c1r1", 128), ("10", 1024), ("m2c1r1", 1024)] {
            let dir = tempfile::tempdir().unwrap();
            let idx = build(&dir.path().join("i"), stored, design, block);
            let r = idx.batch_near(&batch, &BatchOptions::default()).unwrap();
            assert_eq!(
                r.pairs,
                brute_pairs(&bset, &sset, 3),
                "{name}, design {design}, B = {block}"
            );
            let mut merged = Vec::new();
            for i in 0..3 {
                let opts = BatchOptions::default().with_shard(Shard { index: i, count: 3 });
                merged.extend(idx.batch_near(&batch, &opts).unwrap().pairs);
            }
            merged.sort();
            assert_eq!(merged, r.pairs, "{name}, design {design}, 3 shards");
            let all = sset.len() as u64 * idx.design().tables().len() as u64;
            if *name == "random_30000" {
                assert!(
                    r.keys_scanned * 4 < all,
                    "{name}, design {design}: {} of {all} keys decoded",
                    r.keys_scanned
                );
            }
        }
    }
}

#[test]
fn shards_merge_to_exactly_the_unsharded_result() {
    let (stored, batch) = data(2);
    for design in ["10", "m2c1r1"] {
        let dir = tempfile::tempdir().unwrap();
        let idx = build(&dir.path().join("i"), &stored, design, 128);
        let whole = idx.batch_near(&batch, &BatchOptions::default()).unwrap();
        assert!(!whole.pairs.is_empty() && !whole.within.is_empty());
        for n in [2u64, 3, 7, 1000] {
            let mut pairs = Vec::new();
            let mut within = Vec::new();
            let mut scanned = 0;
            for i in 0..n {
                let opts = BatchOptions::default().with_shard(Shard { index: i, count: n });
                let r = idx.batch_near(&batch, &opts).unwrap();
                assert!(
                    i == 0 || r.within.is_empty(),
                    "only shard 0 reports pairs inside the batch"
                );
                pairs.extend(r.pairs);
                within.extend(r.within);
                scanned += r.keys_scanned;
            }
            let before = pairs.len();
            pairs.sort();
            pairs.dedup();
            assert_eq!(
                pairs.len(),
                before,
                "design {design}, {n} shards: a pair was reported twice"
            );
            assert_eq!(pairs, whole.pairs, "design {design}, {n} shards");
            assert_eq!(within, whole.within);
            assert_eq!(scanned, whole.keys_scanned);
        }
    }
}

#[test]
fn empty_batch_empty_index_and_bad_shards() {
    let dir = tempfile::tempdir().unwrap();
    let idx = build(&dir.path().join("i"), &[], "10", 256);
    let r = idx
        .batch_near(&[1, 2, 3], &BatchOptions::default())
        .unwrap();
    assert!(r.pairs.is_empty());
    // 1, 2 and 3 are within 2 bits of each other: the batch's own pairs are still found.
    assert_eq!(r.within, brute_within(&[1, 2, 3].into_iter().collect(), 3));
    assert_eq!(r.within.len(), 3);
    let idx = build(&dir.path().join("j"), &[5, 6], "4", 256);
    let r = idx.batch_near(&[], &BatchOptions::default()).unwrap();
    assert!(r.pairs.is_empty());
    for bad in ["", "1", "2/2", "3/1", "0/0", "a/b", "-1/3"] {
        assert!(Shard::parse(bad).is_err(), "{bad}");
    }
    assert_eq!(Shard::parse("2/5").unwrap(), Shard { index: 2, count: 5 });
    // Shard block ranges tile 0..blocks exactly.
    for blocks in [0u64, 1, 5, 1000] {
        for n in [1u64, 2, 3, 7, 2000] {
            let mut at = 0;
            for i in 0..n {
                let r = Shard { index: i, count: n }.blocks(blocks);
                assert_eq!(r.start, at);
                at = r.end;
            }
            assert_eq!(at, blocks);
        }
    }
}
