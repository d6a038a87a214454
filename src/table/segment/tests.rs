//! Segments against decoding: where probes start, and what the search hands a decoder.

use crate::table::{Table, TableOptions, build_bytes};

fn random_keys(n: usize, mut s: u64) -> Vec<u64> {
    let mut v: Vec<u64> = (0..n)
        .map(|_| {
            s = s.wrapping_add(0x9E37_79B9_7F4A_7C15);
            let mut z = s;
            z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            z ^ (z >> 31)
        })
        .collect();
    v.sort_unstable();
    v.dedup();
    v
}

/// The search hands a decoder the skip entries it read: the same as reading them again,
/// and the segment the search promises (the last that starts below the key by its skip
/// entry), on uniform
/// keys (the guess right) and on clustered ones (the guess off, the binary search).
#[test]
fn find_entry_carries_what_entering_would_read() {
    let uniform = random_keys(60_000, 11);
    let mut clustered: Vec<u64> = uniform
        .iter()
        .map(|&k| {
            if k & 1 == 0 {
                k >> 20
            } else {
                k | 0xFFFF_F000_0000_0000
            }
        })
        .collect();
    clustered.sort_unstable();
    clustered.dedup();
    let mut checked = 0;
    for keys in [&uniform, &clustered] {
        for s in [4u32, 20] {
            let o = TableOptions::default()
                .with_block_size(4096)
                .with_segment_keys(s);
            let t = Table::from_bytes(build_bytes(keys, &o).unwrap()).unwrap();
            for i in 0..t.block_count() {
                let (segs, stream) = t.segments::<true>(i).unwrap();
                let m = segs.len();
                let starts: Vec<u64> = (1..=m)
                    .map(|j| segs.enter(stream, j).unwrap().key)
                    .collect();
                let mut probes: Vec<u64> = starts.iter().flat_map(|&k| [k - 1, k, k + 1]).collect();
                let mut x = i.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
                for _ in 0..8 {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    let (lo, hi) = (starts.first().copied().unwrap_or(0), segs.last());
                    probes.push(lo.saturating_sub(1) + x % (hi - lo.saturating_sub(1) + 1));
                }
                for lo in probes {
                    let e = segs.find_entry(lo);
                    assert_eq!(e, segs.entry_of(e.j), "block {i}, key {lo:#x}");
                    assert_eq!(segs.enter_entry(stream, e), segs.enter(stream, e.j));
                    if e.j > 0 {
                        assert!(starts[e.j as usize - 1] < lo, "block {i}, key {lo:#x}");
                    }
                    // The next segment starts at or above `lo` by its skip entry (its
                    // 16 bits below the block's common prefix).
                    let c = segs.shape.c as u32;
                    if e.j < m && lo > segs.shape.base {
                        let p = super::partial(starts[e.j as usize], c);
                        assert!(p >= super::partial(lo, c), "block {i}, key {lo:#x}");
                    }
                    checked += 1;
                }
            }
        }
    }
    assert!(checked > 10_000, "{checked}");
}

/// The reader compiled without format 4 (`Segments<false>`, what queries of indexes of
/// formats 1–3 take) reads every format-2 and format-3 block as the general one does, and
/// refuses every format-4 block rather than misread it; and a segment's counts taken from
/// its start agree with those read from the skip entries, in every format.
#[test]
fn the_reader_without_format_4_agrees_and_refuses_format_4() {
    let keys = random_keys(100_000, 23);
    let (mut checked, mut refused) = (0, 0);
    for (s, align) in [(4u32, 0u32), (20, 0), (8, 10)] {
        let o = TableOptions::default()
            .with_block_size(1024)
            .with_segment_keys(s)
            .with_aligned_prefix(align);
        let t = Table::from_bytes(build_bytes(&keys, &o).unwrap()).unwrap();
        for i in 0..t.block_count() {
            let (general, stream) = t.segments::<true>(i).unwrap();
            // Every reader's counts from a segment's start (in format 4, the key indices its
            // entry carries) are those its skip entries give.
            for j in 0..=general.len() {
                let s = general.enter(stream, j).unwrap();
                assert_eq!(general.coded_after(j, &s), general.coded_after_start(j));
                let after = if j < general.len() {
                    general.keys_from(j + 1)
                } else {
                    0
                };
                assert_eq!(
                    general.keys_from_start(j, &s),
                    (general.keys_from(j), after)
                );
            }
            let Some((lean, _)) = t.segments::<false>(i) else {
                assert_eq!(t.format_version(), 4, "block {i}");
                refused += 1;
                continue;
            };
            assert_ne!(t.format_version(), 4, "block {i}");
            assert_eq!(lean.len(), general.len());
            for j in 0..=general.len() {
                assert_eq!(lean.keys_from(j), general.keys_from(j));
                assert_eq!(lean.coded_after_start(j), general.coded_after_start(j));
                assert_eq!(lean.enter(stream, j), general.enter(stream, j));
                assert!(!lean.starts_above(j, general.last() - 1));
            }
            let mut x = i | 1;
            for _ in 0..64 {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                // Keys in and around the block's range.
                let (base, last) = (general.shape.base, general.last());
                let lo = base
                    .saturating_sub(1)
                    .saturating_add(x % (last - base).saturating_add(3));
                let e = general.find_entry(lo);
                assert_eq!(lean.find_entry(lo), e, "block {i}, key {lo:#x}");
                assert_eq!(lean.enter_entry(stream, e), general.enter_entry(stream, e));
                checked += 1;
            }
        }
    }
    assert!(checked > 5_000, "{checked}");
    assert!(refused > 50, "{refused}");
}

/// A probe of a segmented table decodes at most a segment before its range, whatever the
/// block size; an unsegmented one decodes up to the whole block before it.
#[test]
fn a_probe_decodes_at_most_a_segment_before_its_range() {
    let keys = random_keys(200_000, 7);
    let mut totals = Vec::new();
    for (segment_keys, bound) in [(16u64, 17u64), (0, 700)] {
        let o = TableOptions::default()
            .with_block_size(4096)
            .with_segment_keys(segment_keys as u32);
        let t = Table::from_bytes(build_bytes(&keys, &o).unwrap()).unwrap();
        let (mut worst, mut total) = (0, 0);
        for (i, &k) in keys.iter().enumerate().step_by(997) {
            let hi = keys[(i + 3).min(keys.len() - 1)];
            let (mut blocks, mut decoded, mut found) = (0, 0, 0);
            t.scan_range(k, hi, &mut blocks, &mut decoded, |_| {
                found += 1;
                true
            })
            .unwrap();
            assert_eq!(found, (i + 3).min(keys.len() - 1) - i + 1);
            // Keys decoded before the range, and the one after it that ends the scan.
            let before = decoded - found as u64 - 1;
            worst = worst.max(before);
            total += before;
        }
        assert!(
            worst < bound,
            "S = {segment_keys}: {worst} keys before a range"
        );
        totals.push(total);
    }
    // On average half a segment (8) against half a block (~330).
    assert!(totals[1] > 20 * totals[0], "{totals:?}");
}

/// Format 4: a probe of a whole run of the aligned prefix starts decoding at the run's first
/// key wherever that key starts a segment, which, with runs longer than S, is nearly always;
/// and every probe (aligned or not, in and between runs) still finds all its keys.
#[test]
fn an_aligned_probe_starts_at_its_run() {
    let keys = random_keys(200_000, 5);
    // 2^12 runs of ~49 keys; segments of at least 8.
    let p = 12u32;
    let o = TableOptions::default()
        .with_block_size(4096)
        .with_segment_keys(8)
        .with_aligned_prefix(p);
    let t = Table::from_bytes(build_bytes(&keys, &o).unwrap()).unwrap();
    assert_eq!(t.format_version(), 4);
    assert_eq!(t.verify().unwrap().keys, keys.len() as u64);
    let low = u64::MAX >> p;
    let (mut exact, mut runs) = (0, 0);
    for r in (0..1u64 << p).step_by(3) {
        let (lo, hi) = (r << (64 - p), (r << (64 - p)) | low);
        let want = keys.iter().filter(|&&k| (lo..=hi).contains(&k)).count();
        let (mut blocks, mut decoded, mut found) = (0, 0, 0);
        t.scan_range(lo, hi, &mut blocks, &mut decoded, |_| {
            found += 1;
            true
        })
        .unwrap();
        assert_eq!(found, want, "run {r}");
        runs += 1;
        // The run's keys and at most the one after it.
        exact += (decoded <= want as u64 + 1) as u32;
    }
    // Runs whose first key opens a block or a segment: all but those that begin within S
    // keys of a block's start (a block holds ~680 keys, ~14 runs; S = 8 of ~49).
    assert!(exact * 100 > runs * 90, "{exact} of {runs}");
    // Ranges that are not runs still find every key.
    for (i, &k) in keys.iter().enumerate().step_by(1013) {
        let hi = keys[(i + 5).min(keys.len() - 1)];
        let (mut blocks, mut decoded, mut found) = (0, 0, 0);
        t.scan_range(k - 1, hi, &mut blocks, &mut decoded, |_| {
            found += 1;
            true
        })
        .unwrap();
        assert_eq!(found, (i + 5).min(keys.len() - 1) - i + 1);
    }
}

/// What a probe decides where it enters a block, that its range ends with its segment, is
/// what the segment rule finds at that segment's end (the next segment starts above the
/// range by its skip entry): for runs (where it holds for most probes) and for ranges of any
/// length; and it never holds outside format 4.
#[test]
fn a_range_ends_with_its_segment_as_the_next_start_says() {
    let keys = random_keys(200_000, 7);
    let p = 12u32;
    let low = u64::MAX >> p;
    let (mut ends, mut checked) = (0, 0);
    for aligned in [p, 0] {
        let o = TableOptions::default()
            .with_block_size(4096)
            .with_segment_keys(8)
            .with_aligned_prefix(aligned);
        let t = Table::from_bytes(build_bytes(&keys, &o).unwrap()).unwrap();
        let mut state = 0x2545_F491_4F6C_DD1Du64;
        for (n, &k) in keys.iter().enumerate().step_by(97) {
            let x = crate::sample::splitmix64(&mut state);
            let run = k & !low;
            let ranges = [
                (run, run | low),
                (k, keys[(n + (x % 40) as usize).min(keys.len() - 1)]),
                (k + 1, k.saturating_add(x >> 20)),
            ];
            for (lo, hi) in ranges {
                let i = t.find_block(lo) as u64;
                if i >= t.block_count() {
                    continue;
                }
                let (segs, _) = t.segments::<true>(i).unwrap();
                let e = segs.find_entry(lo);
                let want = e.j < segs.len() && segs.starts_above(e.j + 1, hi);
                assert_eq!(segs.ends_with(&e, hi), want, "{lo:#x}..={hi:#x}");
                ends += want as u32;
                checked += 1;
                if aligned == 0 {
                    assert!(!want);
                }
            }
        }
    }
    // Most probes of the aligned table end with their segment (about 80% of them here;
    // the unaligned half of `checked` none).
    assert!(ends * 3 > checked, "{ends} of {checked}");
}
