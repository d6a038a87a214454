//! The AVX2 lanes against the scalar loop and brute force, through whole indexes (they live
//! here: they switch an index's `lanes` flag).

use crate::index::{self, BuildOptions, DesignChoice};
use crate::sample::{flip_bits, random, splitmix64};
use crate::table::block::{BLOCK_HEADER_LEN, BLOCK_TRAILER_LEN, Head};
use crate::table::format::HEADER_LEN;
use crate::table::lanes::isa::AVX2_ONLY;
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

/// Whether the long variants of tests were asked for (`SIMDEX_LONG_TESTS=1`): more queries,
/// keys or cases where the default keeps CI short.
fn long_tests() -> bool {
    std::env::var_os("SIMDEX_LONG_TESTS").is_some()
}

/// Whether this CPU can run the lanes (a test of them passes vacuously where not, and says so).
fn lanes_can_run() -> bool {
    let yes = std::is_x86_feature_detected!("avx2") && std::is_x86_feature_detected!("popcnt");
    if !yes {
        eprintln!("no AVX2 here: the lanes cannot run");
    }
    yes
}

/// The variants of the lanes' loop this CPU runs, as values of `AVX2_ONLY`: the AVX2 one,
/// and the AVX-512 one where present.
fn isas() -> Vec<bool> {
    if crate::table::lanes::isa::avx512() {
        vec![false, true]
    } else {
        eprintln!("no AVX-512 VPOPCNTDQ here: only the AVX2 loop is tested");
        vec![true]
    }
}

/// Blocks and keys decoded between two readings of an index's counters.
fn decoded(before: crate::index::QueryCounters, after: crate::index::QueryCounters) -> (u64, u64) {
    (
        after.blocks_decoded - before.blocks_decoded,
        after.keys_decoded - before.keys_decoded,
    )
}

/// `f` on a pool of one thread, whose loop is the AVX2 one if `avx2_only`.
fn one_thread<T: Send>(avx2_only: bool, f: impl FnOnce() -> T + Send) -> T {
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(1)
        .build()
        .unwrap();
    pool.install(|| {
        AVX2_ONLY.set(avx2_only);
        let out = f();
        AVX2_ONLY.set(false);
        out
    })
}

fn build(dir: &std::path::Path, keys: &[u64], design: &str, block: u32) -> Index {
    build_segmented(dir, keys, design, block, 0)
}

/// [`build`] with `segment_keys` keys per segment (0: format 1; `ALIGNED`: every table's
/// segments aligned to its prefix runs, format 4, whatever the runs' length; `MIXED`: design
/// 10's tables of 25-bit prefixes aligned, those of 26 bits not).
fn build_segmented(
    dir: &std::path::Path,
    keys: &[u64],
    design: &str,
    block: u32,
    segment_keys: u32,
) -> Index {
    let mut opts = BuildOptions::default()
        .with_design(DesignChoice::Named(design.to_string()))
        .with_block_size(Some(block))
        .with_segment_keys((segment_keys < MIXED).then_some(segment_keys));
    // Runs of 25-bit prefixes are twice as long as those of 26 bits: a bound between them.
    opts.align_min_run = match segment_keys {
        MIXED => keys.len() as f64 / 2f64.powf(25.5),
        _ => 0.0,
    };
    index::build(dir, keys.iter().map(|&x| Ok(x)), &opts).unwrap();
    let idx = Index::open(dir).unwrap();
    let formats: Vec<u32> = idx.tables.iter().map(|t| t.format_version()).collect();
    match segment_keys {
        ALIGNED => assert!(formats.iter().all(|&v| v == 4), "{formats:?}"),
        MIXED => assert!(formats.contains(&3) && formats.contains(&4), "{formats:?}"),
        _ => assert!(!formats.contains(&4), "{formats:?}"),
    }
    // Queries take the decoders compiled for format 4 exactly where a table has it.
    assert_eq!(idx.aligned, formats.contains(&4));
    idx
}

/// An index directory's manifest and its `tables` tables' bytes, for `Index::from_parts`
/// with some of them rewritten.
fn parts(dir: &std::path::Path, tables: usize) -> (Vec<u8>, Vec<Vec<u8>>) {
    let manifest = std::fs::read(dir.join("MANIFEST")).unwrap();
    let tables = (0..tables)
        .map(|t| std::fs::read(dir.join(crate::index::manifest::table_file_name(t))).unwrap())
        .collect();
    (manifest, tables)
}

/// Block `b` of a table's bytes (blocks of `bs` bytes), to rewrite; [`seal`] it after.
fn block_mut(table: &mut [u8], b: u64, bs: usize) -> &mut [u8] {
    let off = HEADER_LEN + b as usize * bs;
    &mut table[off..off + bs]
}

/// Give block `b` of a table's bytes (blocks of `bs` bytes) the crc of its bytes as they are
/// now, so that only the decoders' own checks stand between a rewrite and a query.
fn seal(table: &mut [u8], b: u64, bs: usize) {
    let off = HEADER_LEN + b as usize * bs;
    let crc_at = bs - BLOCK_TRAILER_LEN;
    let block = block_mut(table, b, bs);
    let crc = crate::table::block::block_crc(off as u64, &block[..crc_at]);
    block[crc_at..].copy_from_slice(&crc.to_le_bytes());
}

/// [`build_segmented`]'s S for aligned segments (an automatic S).
const ALIGNED: u32 = u32::MAX;
/// [`build_segmented`]'s S for an index of format-3 and format-4 tables (an automatic S), as
/// automatic builds of design 10 give between about 270M and 540M keys, where the general
/// decoders read both.
const MIXED: u32 = u32::MAX - 1;

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
        let mut s = 11;
        let mut queries: Vec<u64> = keys.iter().step_by(97).copied().collect();
        for &f in keys.iter().step_by(211) {
            for d in 1..=4 {
                queries.push(flip_bits(f, d, &mut s));
            }
        }
        queries.extend(random(200, 9));
        queries.extend([0, u64::MAX]);
        if !long_tests() {
            // Every third (most of a scan of the narrow set's ranges is decoding many blocks).
            queries = queries.into_iter().step_by(3).collect();
        }
        // The oracle's answers, once per k: every design must give them.
        let truth: Vec<Vec<Vec<Match>>> = [0, 1, 3]
            .iter()
            .map(|&k| queries.iter().map(|&q| brute(&keys, q, k)).collect())
            .collect();
        // Format 1, and format 3 with segments of every length from 2 keys (a segment start
        // at every other key) up.
        for (design, block, seg) in [
            ("10", 128, 0),
            ("4", 256, 0),
            ("16", 1024, 0),
            ("4", 4096, 2),
            ("10", 2048, 5),
            ("4", 4096, 20),
            // Probe-radius designs (66 and 198 probes), scanned in chunks of probes.
            ("m2c1r1", 4096, 20),
            ("m4c2r1", 1024, 5),
            // Format 4: segments aligned to each table's prefix runs.
            ("4", 4096, ALIGNED),
            ("10", 1024, ALIGNED),
            ("m4c2r1", 2048, ALIGNED),
            ("10", 1024, MIXED),
        ] {
            let dir = tmp.path().join(format!("{name}-{design}-{block}-{seg}"));
            let mut idx = build_segmented(&dir, &keys, design, block, seg);
            for (k, truth) in [0, 1, 3].into_iter().zip(&truth) {
                let before = idx.counters();
                idx.lanes = false;
                let scalar: Vec<_> = queries.iter().map(|&q| idx.near(q, k).unwrap()).collect();
                let scalar_work = decoded(before, idx.counters());
                for ((q, want), truth) in queries.iter().zip(&scalar).zip(truth) {
                    assert_eq!(want, truth, "{name} {design} {q:#x}");
                }
                idx.lanes = true;
                for avx2_only in isas() {
                    AVX2_ONLY.set(avx2_only);
                    let mid = idx.counters();
                    for (q, want) in queries.iter().zip(&scalar) {
                        assert_eq!(&idx.near(*q, k).unwrap(), want, "{name} {design} {q:#x}");
                    }
                    let after = idx.counters();
                    // The same decode work: every block and key the scalar loop decodes.
                    assert_eq!(decoded(mid, after), scalar_work, "{name} {design}");
                    // `near_many`: one stream of every query's probes through the lanes
                    // (queries across several chunks), on one thread so that the choice of
                    // loop holds there.
                    let many = one_thread(avx2_only, || idx.near_many(&queries, k).unwrap());
                    let end = idx.counters();
                    assert_eq!(many.len(), queries.len());
                    for (i, want) in scalar.iter().enumerate() {
                        assert_eq!(many.get(i), &want[..], "{name} {design} query {i}");
                    }
                    assert_eq!(decoded(after, end), scalar_work, "{name} {design}");
                }
                AVX2_ONLY.set(false);
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
    // Format 1, and formats 3 and 4, whose zeroed skip entries point every segment at bit 0
    // (format 4: and at key 0) and whose zeroed first key is a delta that may not fit its
    // segment.
    for (bs, seg) in [(256usize, 0u32), (1024, 4), (4096, ALIGNED)] {
        let dir = tmp.path().join(format!("idx-{seg}"));
        let blocks = build_segmented(&dir, &keys, "4", bs as u32, seg).tables[0].block_count();
        let (manifest, mut tables) = parts(&dir, 4);
        // Zero the streams (and skip entries) of every 7th block of table 0 and seal them with a
        // fresh crc: bytes that pass the crc, so only the decoders' own checks stand between
        // them and a query.
        let crc_at = bs - BLOCK_TRAILER_LEN;
        for b in (0..blocks).step_by(7) {
            let block = block_mut(&mut tables[0], b, bs);
            let head = match seg {
                0 => BLOCK_HEADER_LEN,
                ALIGNED => Head::Compact {
                    after: None,
                    align: 16,
                }
                .bytes(),
                _ => Head::Compact {
                    after: None,
                    align: 0,
                }
                .bytes(),
            };
            block[head..crc_at].fill(0);
            seal(&mut tables[0], b, bs);
        }
        let mut idx = Index::from_parts(&manifest, tables).unwrap();
        // `near_many` through the lanes' stream of probes: an error exactly where a query
        // alone meets one (a batch with a corrupt block, and one without).
        idx.lanes = true;
        let queries: Vec<u64> = keys.iter().step_by(3).copied().collect();
        let (mut failed, mut answered) = (0, 0);
        for batch in queries.chunks(3) {
            let alone = batch.iter().any(|&q| idx.near(q, 3).is_err());
            for avx2_only in isas() {
                match one_thread(avx2_only, || idx.near_many(batch, 3)) {
                    Err(crate::Error::Corrupt { .. }) => {
                        assert!(alone);
                        failed += 1;
                    }
                    Err(e) => panic!("{e}"),
                    Ok(many) => {
                        assert!(!alone);
                        for (i, &q) in batch.iter().enumerate() {
                            assert_eq!(many.get(i), &idx.near(q, 3).unwrap()[..]);
                        }
                        answered += 1;
                    }
                }
            }
        }
        assert!(
            failed > 50 && answered > 50,
            "{failed} batches failed, {answered} answered"
        );
        let (mut faults, mut same) = (0, 0);
        for &q in keys.iter().step_by(3) {
            idx.lanes = false;
            let scalar = format!("{:?}", idx.near(q, 3));
            idx.lanes = true;
            for avx2_only in isas() {
                AVX2_ONLY.set(avx2_only);
                let lanes = format!("{:?}", idx.near(q, 3));
                assert_eq!(lanes, scalar, "query {q:#x}, AVX2 only: {avx2_only}");
            }
            AVX2_ONLY.set(false);
            if scalar.starts_with("Err(Corrupt") {
                faults += 1;
            } else {
                same += 1;
            }
        }
        assert!(
            faults > 100 && same > 100,
            "B = {bs}, S = {seg}: {faults} faults, {same} answers"
        );
    }
}

/// Blocks rewritten at random places and sealed with a fresh crc (what `fuzz/lanes_twin` does
/// for as long as it runs, here a fixed few hundred times per format): the lanes, whose stream
/// loads are unchecked, answer every query of the block's keys as the scalar loop does (the
/// same matches or the same error), and `near_many` fails exactly where one of its queries
/// alone does.
#[test]
fn lanes_answer_as_the_scalar_loop_on_rewritten_blocks() {
    if !lanes_can_run() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let keys = random(30_000, 11);
    let mut s = 0x11ad;
    for (bs, seg) in [(4096usize, ALIGNED), (1024, 4), (256, 0)] {
        let dir = tmp.path().join(format!("idx-{seg}"));
        let original = build_segmented(&dir, &keys, "4", bs as u32, seg);
        let (manifest, tables) = parts(&dir, 4);
        let crc_at = bs - BLOCK_TRAILER_LEN;
        let (mut faults, mut same) = (0, 0);
        for _ in 0..150 {
            let t = (splitmix64(&mut s) % 4) as usize;
            let table = &original.tables[t];
            let b = splitmix64(&mut s) % table.block_count();
            // About 32 of the block's keys, spread over it, as fingerprints, some a bit away.
            let inverse = table.permutation().inverse();
            let mut dec = table.block(b).unwrap();
            let mut block_keys = Vec::new();
            while let Some(key) = dec.next().unwrap() {
                block_keys.push(inverse.apply(key));
            }
            let step = (block_keys.len() / 32).max(1);
            let queries: Vec<u64> = block_keys
                .iter()
                .step_by(step)
                .map(|&q| flip_bits(q, (splitmix64(&mut s) % 2) as u32, &mut s))
                .collect();
            let mut bytes = tables.clone();
            let block = block_mut(&mut bytes[t], b, bs);
            for _ in 0..1 + splitmix64(&mut s) % 4 {
                let at = (splitmix64(&mut s) % crc_at as u64) as usize;
                block[at] ^= 1 + (splitmix64(&mut s) % 255) as u8;
            }
            seal(&mut bytes[t], b, bs);
            let mut idx = Index::from_parts(&manifest, bytes).unwrap();
            let mut alone = Vec::new();
            for &q in &queries {
                assert!(!idx.use_lanes(false));
                let scalar = format!("{:?}", idx.near(q, 3));
                assert!(idx.use_lanes(true));
                for avx2_only in isas() {
                    let lanes = one_thread(avx2_only, || idx.near(q, 3));
                    assert_eq!(
                        format!("{lanes:?}"),
                        scalar,
                        "B = {bs}, S = {seg}, block {b} of table {t}, query {q:#x}"
                    );
                }
                alone.push(idx.near(q, 3));
            }
            let failing = alone.iter().any(|r| r.is_err());
            if failing {
                faults += 1;
            } else {
                same += 1;
            }
            for avx2_only in isas() {
                match one_thread(avx2_only, || idx.near_many(&queries, 3)) {
                    Ok(many) => {
                        assert!(!failing, "B = {bs}, S = {seg}: near_many answered");
                        for (i, r) in alone.iter().enumerate() {
                            assert_eq!(many.get(i), &r.as_ref().unwrap()[..]);
                        }
                    }
                    Err(crate::Error::Corrupt { .. }) => assert!(failing),
                    Err(e) => panic!("{e}"),
                }
            }
        }
        // Both kinds of block were met: bytes that broke a decode of some query, and bytes
        // that left every query's whole (in segments no query reaches, or still decodable).
        assert!(
            faults > 10 && same > 10,
            "B = {bs}, S = {seg}: {faults} blocks failed, {same} answered"
        );
    }
}
