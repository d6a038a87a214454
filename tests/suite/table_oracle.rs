//! The table reader against a brute-force oracle (a sorted, de-duplicated Vec / BTreeSet), on
//! random and adversarial key sets, at every block size.

use crate::common;

use std::collections::BTreeSet;
use std::ops::Bound;

use common::*;
use proptest::prelude::*;
use simdex::codec::Codec;
use simdex::table::{self, Table, TableOptions};
use simdex::{Error, Permutation};

fn opts(block_size: u32) -> TableOptions {
    TableOptions::default().with_block_size(block_size)
}

fn collect<D: AsRef<[u8]>>(r: simdex::table::Range<'_, D>) -> Vec<u64> {
    r.collect::<simdex::Result<Vec<u64>>>()
        .expect("no corruption in a fresh table")
}

fn oracle_range(set: &BTreeSet<u64>, lo: Bound<u64>, hi: Bound<u64>) -> Vec<u64> {
    if let (Bound::Included(a) | Bound::Excluded(a), Bound::Included(b) | Bound::Excluded(b)) =
        (lo, hi)
        && a > b
    {
        return vec![];
    }
    if let (Bound::Excluded(a), Bound::Excluded(b)) = (lo, hi)
        && a == b
    {
        return vec![];
    }
    set.range((lo, hi)).copied().collect()
}

fn oracle_prefix(set: &BTreeSet<u64>, key: u64, bits: u32) -> Vec<u64> {
    set.iter()
        .copied()
        .filter(|&k| bits == 0 || (k ^ key) >> (64 - bits) == 0)
        .collect()
}

/// Query points that stress block boundaries: every block's last key, its neighbours, the
/// next block's first key, plus extremes and some random points.
fn probe_points<D: AsRef<[u8]>>(t: &Table<D>, keys: &[u64], seed: u64) -> Vec<u64> {
    let mut pts = vec![0, 1, u64::MAX, u64::MAX - 1, 1 << 63, (1 << 63) - 1];
    for &l in t.last_keys() {
        pts.extend([l, l.wrapping_add(1), l.wrapping_sub(1)]);
    }
    pts.extend(keys.iter().step_by((keys.len() / 50).max(1)));
    pts.extend(random_keys(50, seed));
    pts
}

/// Check `keys` at `block_size` with every codec.
/// Every codec, unsegmented (format 1), in segments of 2 and 16 keys (format 3) and in
/// segments aligned to prefix runs (format 4).
fn check_table(name: &str, keys: &[u64], block_size: u32) {
    for codec in Codec::ALL {
        // Format 1, format 3, and format 4 aligned to runs of several lengths (the top 4,
        // 12 bits: runs of many blocks, runs of a few keys).
        for (segment_keys, align) in [(0, 0), (2, 0), (16, 0), (2, 4), (3, 12)] {
            if segment_keys > 0 && block_size > 8192 {
                continue;
            }
            check_table_with(name, keys, block_size, codec, segment_keys, align);
        }
    }
}

fn check_table_with(
    name: &str,
    keys: &[u64],
    block_size: u32,
    codec: Codec,
    segment_keys: u32,
    align: u32,
) {
    let o = TableOptions::default()
        .with_block_size(block_size)
        .with_codec(codec)
        .with_segment_keys(segment_keys)
        .with_aligned_prefix(align);
    let bytes = table::build_bytes(keys, &o).unwrap();
    let t = Table::from_bytes(&bytes).unwrap();
    assert_eq!(t.codec(), codec);
    assert_eq!(t.block_size(), block_size);
    assert_eq!(t.segment_keys(), segment_keys);
    let set: BTreeSet<u64> = keys.iter().copied().collect();
    assert_eq!(t.aligned_prefix(), align);
    let ctx = format!("{name} B={block_size} codec {codec} S={segment_keys} aligned {align}");
    assert_eq!(t.len(), set.len() as u64, "{ctx}");
    assert_eq!(collect(t.iter()), keys, "{ctx}: full iteration");
    assert_eq!(t.verify().unwrap().keys, keys.len() as u64, "{ctx}");
    let pts = probe_points(&t, keys, block_size as u64);
    for &p in &pts {
        assert_eq!(
            t.find_block(p),
            t.last_keys().partition_point(|&k| k < p),
            "{ctx}: find_block({p:#x})"
        );
    }
    for (i, &a) in pts.iter().enumerate() {
        // A long range (to a point far off in the list, and from or to an end of the key
        // space) for every 8th point: each is a scan of up to every key, and checked at every
        // point they made this test most of CI's time. The others range to the next point,
        // which for the points around a block's last key crosses that block's end.
        let long = i % 8 == 0;
        let far = (i * 7 + 3) % pts.len();
        let b = pts[if long { far } else { (i + 1) % pts.len() }];
        let (lo, hi) = (a.min(b), a.max(b));
        assert_eq!(
            collect(t.range(lo..=hi)),
            oracle_range(&set, Bound::Included(lo), Bound::Included(hi)),
            "{ctx}: {lo:#x}..={hi:#x}"
        );
        assert_eq!(
            collect(t.range(a..=a)),
            oracle_range(&set, Bound::Included(a), Bound::Included(a)),
            "{ctx}: point {a:#x}"
        );
        assert_eq!(
            collect(t.range(lo..hi)),
            oracle_range(&set, Bound::Included(lo), Bound::Excluded(hi)),
            "{ctx}: {lo:#x}..{hi:#x}"
        );
        assert_eq!(
            collect(t.range((Bound::Excluded(lo), Bound::Included(hi)))),
            oracle_range(&set, Bound::Excluded(lo), Bound::Included(hi)),
            "{ctx}"
        );
        if long {
            assert_eq!(
                collect(t.range(..a)),
                oracle_range(&set, Bound::Unbounded, Bound::Excluded(a)),
                "{ctx}: ..{a:#x}"
            );
            assert_eq!(
                collect(t.range(a..)),
                oracle_range(&set, Bound::Included(a), Bound::Unbounded),
                "{ctx}: {a:#x}.."
            );
        }
        let mut seen = Vec::new();
        assert!(
            t.for_each_in(lo, hi, |k| {
                seen.push(k);
                true
            })
            .unwrap()
        );
        assert_eq!(
            seen,
            oracle_range(&set, Bound::Included(lo), Bound::Included(hi)),
            "{ctx}: for_each_in"
        );
        // Stopping early stops at once.
        let mut first = None;
        let ran_out = t
            .for_each_in(lo, hi, |k| {
                first = Some(k);
                false
            })
            .unwrap();
        assert_eq!(first, seen.first().copied(), "{ctx}");
        assert_eq!(ran_out, seen.is_empty(), "{ctx}");
        // (Prefixes of 0 and 1 bits are long ranges too.)
        let from = if long { 0 } else { 2 };
        for bits in [0, 1, 7, 16, 24, 33, 48, 63, 64][from..].iter().copied() {
            assert_eq!(
                collect(t.prefix(a, bits)),
                oracle_prefix(&set, a, bits),
                "{ctx}: prefix {a:#x}/{bits}"
            );
        }
    }
    assert_eq!(collect(t.range(..)), keys, "{ctx}: ..");
}

#[test]
fn adversarial_sets_at_every_block_size() {
    for (name, keys) in adversarial_sets() {
        for bs in BLOCK_SIZES {
            check_table(name, &keys, bs);
        }
    }
}

#[test]
fn random_sets_many_blocks() {
    // Long ranges are checked key by key against the oracle: the cost grows with n².
    let big = if long_tests() { 20_000 } else { 5_000 };
    for (n, seed) in [(10, 1), (1000, 2), (big, 3)] {
        let keys = sorted_set(&random_keys(n, seed));
        for bs in [128, 1024, 4096] {
            check_table("random", &keys, bs);
        }
    }
}

/// Find key counts that fill the first block exactly: n keys make one block, n + 1 make two.
#[test]
fn sets_that_fill_a_block_exactly() {
    for (name, base) in [
        ("consecutive", (0..2000u64).collect::<Vec<_>>()),
        ("random", sorted_set(&random_keys(2000, 77))),
    ] {
        let mut found = false;
        let mut prev_blocks = 0;
        for n in 1..base.len() {
            let bytes = table::build_bytes(&base[..n], &opts(128)).unwrap();
            let t = Table::from_bytes(&bytes).unwrap();
            if prev_blocks == 1 && t.block_count() == 2 {
                found = true;
                check_table(name, &base[..n - 1], 128);
                check_table(name, &base[..n], 128);
                check_table(name, &base[..n + 1], 128);
                break;
            }
            prev_blocks = t.block_count();
        }
        assert!(found, "{name}: never went from one block to two");
    }
}

#[test]
fn duplicates_are_dropped_and_counted() {
    let input = [0u64, 0, 5, 5, 5, 9, u64::MAX, u64::MAX];
    let cur = std::io::Cursor::new(Vec::new());
    let (cur, summary) =
        table::build_to(cur, &opts(128), || Ok(input.iter().map(|&k| Ok(k)))).unwrap();
    assert_eq!((summary.keys, summary.duplicates), (4, 4));
    let t = Table::from_bytes(cur.into_inner()).unwrap();
    assert_eq!(collect(t.iter()), vec![0, 5, 9, u64::MAX]);
}

#[test]
fn unsorted_input_names_both_keys() {
    let err = table::build_bytes(&[1, 7, 7, 3, 9], &opts(128)).unwrap_err();
    match err {
        Error::Unsorted {
            position,
            previous,
            key,
        } => assert_eq!((position, previous, key), (3, 7, 3)),
        e => panic!("wrong error {e}"),
    }
    let msg = table::build_bytes(&[2, 1], &opts(128))
        .unwrap_err()
        .to_string();
    assert!(
        msg.contains("0x0000000000000001") && msg.contains("0x0000000000000002"),
        "{msg}"
    );
}

/// Build with `first` on the first pass and `second` on the second.
fn two_pass_build(first: &[u64], second: &[u64]) -> Error {
    let mut pass = 0;
    table::build_to(std::io::Cursor::new(Vec::new()), &opts(128), || {
        pass += 1;
        let v = if pass == 1 { first } else { second };
        Ok(v.iter().copied().map(Ok))
    })
    .unwrap_err()
}

#[test]
fn input_that_changes_between_passes_is_an_error() {
    let err = two_pass_build(&[1, 2, 3], &[1, 2, 3, 4]);
    assert!(matches!(err, Error::InputChanged { .. }), "{err}");
    // A key whose h never occurred in pass 1 fails during encoding.
    let err = two_pass_build(&[1, 2, 3], &[1, 1 << 40, 1 << 41]);
    assert!(matches!(err, Error::InputChanged { .. }), "{err}");
}

#[test]
fn bad_block_sizes_are_rejected() {
    for bs in [0, 64, 100, 127, 129, 1000, 131072] {
        let err = table::build_bytes(&[1, 2], &opts(bs)).unwrap_err();
        assert!(matches!(err, Error::InvalidArgument(_)), "{bs}: {err}");
    }
}

#[test]
fn header_records_the_permutation() {
    let p = Permutation::with_top(&(16..32).collect::<Vec<u8>>()).unwrap();
    let o = TableOptions::default()
        .with_block_size(256)
        .with_permutation(p.clone());
    let keys = sorted_set(
        &random_keys(100, 5)
            .iter()
            .map(|&k| p.apply(k))
            .collect::<Vec<_>>(),
    );
    let t = Table::from_bytes(table::build_bytes(&keys, &o).unwrap()).unwrap();
    assert_eq!(t.permutation(), &p);
}

#[test]
fn files_round_trip_through_mmap_and_replace_atomically() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.sxt");
    let a = sorted_set(&random_keys(5000, 1));
    let b = sorted_set(&random_keys(7000, 2));
    table::build_file(&path, &opts(1024), || Ok(a.iter().map(|&k| Ok(k)))).unwrap();
    let ta = Table::open(&path).unwrap();
    table::build_file(&path, &opts(1024), || Ok(b.iter().map(|&k| Ok(k)))).unwrap();
    // The old map still reads the old file (it was replaced by rename, not overwritten).
    assert_eq!(collect(ta.iter()), a);
    assert_eq!(collect(Table::open(&path).unwrap().iter()), b);
    // A failed build leaves the previous file and no temporary files.
    let err =
        table::build_file(&path, &opts(1024), || Ok([3u64, 2].into_iter().map(Ok))).unwrap_err();
    assert!(matches!(err, Error::Unsorted { .. }));
    assert_eq!(collect(Table::open(&path).unwrap().iter()), b);
    let names: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names, vec![std::ffi::OsString::from("t.sxt")]);
}

#[test]
fn many_blocks_spill_last_keys_to_disk() {
    // More than 65536 blocks forces the builder to spill its last-key buffer.
    let keys = sorted_set(&random_keys(1_300_000, 8));
    let bytes = table::build_bytes(&keys, &opts(128)).unwrap();
    let t = Table::from_bytes(&bytes).unwrap();
    assert!(t.block_count() > 1 << 16, "{} blocks", t.block_count());
    assert_eq!(t.verify().unwrap().keys, keys.len() as u64);
    assert_eq!(collect(t.iter()), keys);
}

#[test]
fn readers_are_send_and_sync() {
    fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<Table<Vec<u8>>>();
    assert_send_sync::<Table<memmap2::Mmap>>();
    assert_send_sync::<Error>();
}

fn key_sets() -> impl Strategy<Value = Vec<u64>> {
    prop_oneof![
        prop::collection::vec(any::<u64>(), 0..400),
        // Clustered: a few bases with small offsets, so h covers the whole range.
        (
            prop::collection::vec(any::<u64>(), 1..6),
            prop::collection::vec((0usize..6, 0u64..4096), 0..400)
        )
            .prop_map(|(bases, offs)| offs
                .into_iter()
                .map(|(b, o)| bases[b % bases.len()].wrapping_add(o))
                .collect()),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]
    #[test]
    fn prop_round_trip_and_ranges(keys in key_sets(), bs_i in 0usize..4, gap in any::<bool>(), s_i in 0usize..4, a in any::<u64>(), b in any::<u64>(), bits in 0u32..=64) {
        let bs = [128u32, 256, 1024, 4096][bs_i];
        let segment_keys = [0u32, 2, 5, 16][s_i];
        let codec = if gap { Codec::Gap } else { Codec::HDelta };
        let mut sorted = keys.clone();
        sorted.sort_unstable();
        let dups = sorted.len();
        sorted.dedup();
        let cur = std::io::Cursor::new(Vec::new());
        let (cur, summary) = table::build_to(cur, &opts(bs).with_codec(codec).with_segment_keys(segment_keys), || Ok({
            let mut v = keys.clone();
            v.sort_unstable();
            v
        }.into_iter().map(Ok))).unwrap();
        prop_assert_eq!(summary.duplicates as usize, dups - sorted.len());
        let t = Table::from_bytes(cur.into_inner()).unwrap();
        let set: BTreeSet<u64> = sorted.iter().copied().collect();
        prop_assert_eq!(collect(t.iter()), sorted.clone());
        let (lo, hi) = (a.min(b), a.max(b));
        prop_assert_eq!(collect(t.range(lo..=hi)), oracle_range(&set, Bound::Included(lo), Bound::Included(hi)));
        prop_assert_eq!(collect(t.prefix(a, bits)), oracle_prefix(&set, a, bits));
        if let Some(&k) = sorted.get(a as usize % sorted.len().max(1)) {
            prop_assert_eq!(collect(t.prefix(k, bits)), oracle_prefix(&set, k, bits));
        }
        t.verify().unwrap();
    }
}
