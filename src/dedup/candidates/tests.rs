use super::*;

/// Candidate pairs and their clusters against brute force, with repeated fingerprints and
/// skipped rows.
#[test]
fn candidates_match_brute_force() {
    let dir = tempfile::tempdir().unwrap();
    let mut next = crate::dedup::xorshift(7);
    let base: Vec<u64> = (0..60).map(|_| next()).collect();
    let mut fps: Vec<u64> = Vec::new();
    for i in 0..300 {
        let b = base[(next() % 60) as usize];
        fps.push(if i % 3 == 0 {
            b
        } else {
            b ^ (1 << (next() % 64)) ^ (1 << (next() % 64))
        });
    }
    let skip: Vec<bool> = (0..fps.len()).map(|i| i % 17 == 0).collect();
    let c = Candidates::new(
        &fps,
        Some(&skip),
        3,
        dir.path(),
        1 << 20,
        &ProgressHandle::none(),
    )
    .unwrap();
    let mut want = Vec::new();
    let mut naive = Clusters::new(fps.len());
    for i in 0..fps.len() {
        for j in i + 1..fps.len() {
            let d = (fps[i] ^ fps[j]).count_ones();
            if d <= 3 && !skip[i] && !skip[j] {
                want.push((i as u32, j as u32, d));
                naive.join(i, j);
            }
        }
    }
    assert!(want.len() > 100);
    assert_eq!(c.pairs().unwrap(), want);
    assert_eq!(c.pair_count().unwrap(), want.len() as u64);
    assert_eq!(c.clusters().unwrap().roots(), naive.roots());
}

/// Large groups of equal fingerprints (each fingerprint pair then stands for thousands of
/// row pairs) still come in batches of at most the bound, together brute force's pairs,
/// with and without prefixes, at an index's k and beyond it.
#[test]
fn batches_stay_bounded_under_large_groups_of_equal_fingerprints() {
    let dir = tempfile::tempdir().unwrap();
    let none = ProgressHandle::none();
    let fps: Vec<u64> = (0..900u64)
        .map(|i| [7, 7 ^ 3, 7 ^ 0x300][(i % 3) as usize])
        .collect();
    let sets: Vec<Vec<u64>> = (0..900u64)
        .map(|i| (0..20).map(|x| x + i % 2).collect())
        .collect();
    let mut p = Prefixes::new(0.8).unwrap();
    p.push(&sets).unwrap();
    for k in [3, 9] {
        let mut want = Vec::new();
        for i in 0..fps.len() {
            for j in i + 1..fps.len() {
                let d = (fps[i] ^ fps[j]).count_ones();
                if d <= k {
                    want.push((i as u32, j as u32, d));
                }
            }
        }
        let c = Candidates::new(&fps, None, k, dir.path(), 1 << 30, &none).unwrap();
        for prefixes in [None, Some(&p)] {
            let mut got = Vec::new();
            c.batches_where(1000, prefixes, &none, |b| {
                assert!(b.len() <= 1000 && b.is_sorted(), "{} pairs", b.len());
                got.extend(b);
                Ok(())
            })
            .unwrap();
            got.sort_unstable();
            let kept: Vec<_> = want
                .iter()
                .copied()
                .filter(|&(a, b, _)| prefixes.is_none_or(|p| p.may_reach(a, b)))
                .collect();
            assert!(kept.len() > 100_000);
            assert_eq!(got, kept, "k {k}");
        }
    }
}

/// Beyond an index's k, a join whose pairs exceed the budget stays unlisted and is taken a
/// part at a time: batches of any size, pairs, counts and clusters are brute force's.
#[test]
fn an_unlisted_wide_join_gives_the_same_pairs_in_batches() {
    let dir = tempfile::tempdir().unwrap();
    let mut next = crate::dedup::xorshift(11);
    // Clumpy: 40 centres, members up to 6 bits away from theirs, some repeated.
    let base: Vec<u64> = (0..40).map(|_| next()).collect();
    let fps: Vec<u64> = (0..400)
        .map(|i| {
            let mut f = base[(next() % 40) as usize];
            if i % 5 != 0 {
                for _ in 0..next() % 7 {
                    f ^= 1 << (next() % 64);
                }
            }
            f
        })
        .collect();
    let k = 10;
    let mut want = Vec::new();
    let mut naive = Clusters::new(fps.len());
    for i in 0..fps.len() {
        for j in i + 1..fps.len() {
            let d = (fps[i] ^ fps[j]).count_ones();
            if d <= k {
                want.push((i as u32, j as u32, d));
                naive.join(i, j);
            }
        }
    }
    assert!(want.len() > 1000, "{}", want.len());
    let none = ProgressHandle::none();
    for mem in [1 << 30, 4096] {
        let c = Candidates::new(&fps, None, k, dir.path(), mem, &none).unwrap();
        assert_eq!(matches!(c.joined, Joined::Parts(..)), mem == 4096);
        assert_eq!(c.pairs().unwrap(), want, "mem {mem}");
        assert_eq!(c.pair_count().unwrap(), want.len() as u64);
        assert_eq!(c.clusters().unwrap().roots(), naive.roots());
        for max_pairs in [1, 500, u64::MAX] {
            let mut got = Vec::new();
            let mut batches = 0;
            c.batches(max_pairs, &none, |b| {
                assert!(b.is_sorted());
                batches += 1;
                got.extend(b);
                Ok(())
            })
            .unwrap();
            got.sort_unstable();
            assert_eq!(got, want, "mem {mem}, batches of {max_pairs}");
            assert!(mem == 1 << 30 || max_pairs == u64::MAX || batches > 1);
        }
    }
}

/// With a prefix filter, batches hold fewer pairs and verify to exactly the pairs that
/// verifying every candidate keeps, whether the join is listed or taken in parts.
#[test]
fn prefixes_drop_pairs_but_no_verified_pair() {
    use crate::dedup::verify::verify;
    let dir = tempfile::tempdir().unwrap();
    let mut next = crate::dedup::xorshift(3);
    // Rows in 30 families: fingerprints near their family's (families near each other: many
    // candidates are of different families), sets a few shingles from the family's.
    let centre = next();
    let fams: Vec<(u64, Vec<u64>)> = (0..30)
        .map(|_| {
            let fp = centre ^ (1 << (next() % 64)) ^ (1 << (next() % 64));
            (fp, (0..50).map(|_| next() % 5000).collect())
        })
        .collect();
    let (mut fps, mut sets) = (Vec::new(), Vec::new());
    for _ in 0..600 {
        let (fp, set) = &fams[(next() % 30) as usize];
        let mut f = *fp;
        for _ in 0..next() % 6 {
            f ^= 1 << (next() % 64);
        }
        let mut s = set.clone();
        for _ in 0..next() % 8 {
            let i = (next() % 50) as usize;
            s[i] = next() % 5000;
        }
        s.sort_unstable();
        s.dedup();
        fps.push(f);
        sets.push(s);
    }
    let mut p = Prefixes::new(0.8).unwrap();
    p.push(&sets).unwrap();
    let none = ProgressHandle::none();
    // A budget below what verification needs is refused with the least that would do:
    // that least takes small batches.
    let least = |e: Error| -> u64 {
        let e = e.to_string();
        let at = e.split("at least ").nth(1).unwrap();
        at.split(' ').next().unwrap().parse().unwrap()
    };
    // (What a run holds grows with its budget: the least is found by asking again.)
    let mut small = 4096;
    for _ in 0..32 {
        let c = Candidates::new(&fps, None, 9, dir.path(), small, &none).unwrap();
        let tried = c
            .verify_batches(small, 0, fps.len(), Some(&p), &none, |_, _| Ok(()))
            .and_then(|_| {
                Candidates::verify_all(&fps, 9, dir.path(), small, 0, &p, &none, |_, _| Ok(()))
            });
        match tried {
            Ok(_) => break,
            Err(e) => small = least(e).max(small + 1),
        }
    }
    assert!(small > 4096, "4096 bytes were enough");
    for mem in [1 << 30, small] {
        let c = Candidates::new(&fps, None, 9, dir.path(), mem, &none).unwrap();
        let all = c.pairs().unwrap();
        let want = verify(&sets, &all, 0.8);
        assert!(want.len() > 1000 && all.len() > 2 * want.len());
        let (mut got, mut passed) = (Vec::new(), 0);
        let total = c
            .verify_batches(mem, 0, fps.len(), Some(&p), &none, |b, _| {
                assert!(b.is_sorted());
                passed += b.len();
                got.extend(verify(&sets, &b, 0.8));
                Ok(())
            })
            .unwrap();
        assert_eq!(total, all.len() as u64);
        // The same pairs from verify_all (the prefix join, here).
        let mut again = Vec::new();
        Candidates::verify_all(&fps, 9, dir.path(), mem, 0, &p, &none, |b, _| {
            again.extend(verify(&sets, &b, 0.8));
            Ok(())
        })
        .unwrap();
        again.sort_unstable_by_key(|v| (v.0, v.1));
        assert_eq!(again, want, "mem {mem}");
        got.sort_unstable_by_key(|v| (v.0, v.1));
        assert_eq!(got, want, "mem {mem}");
        assert!(passed * 2 < all.len(), "{passed} of {}", all.len());
    }
}
