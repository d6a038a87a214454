//! Every design is exact: for every set of at most k differing bit positions, some table's prefix
//! holds at most r of them. Exhaustive over all position sets for k <= 3, sampled above.

use crate::common;

use simdex::design::{Design, MAX_K};

fn all_masks_up_to(k: u32) -> Vec<u64> {
    let mut out = vec![0u64];
    for a in 0..64 {
        if k >= 1 {
            out.push(1 << a);
        }
        for b in a + 1..64 {
            if k >= 2 {
                out.push(1 << a | 1 << b);
            }
            for c in b + 1..64 {
                if k >= 3 {
                    out.push(1 << a | 1 << b | 1 << c);
                }
            }
        }
    }
    out
}

fn designs_for(k: u32) -> Vec<Design> {
    let mut v = Design::candidates(k, 70);
    if k == 3 {
        for name in ["20", "16", "10", "4", "m2c1r1", "m4c2r1", "m5c3r1", "m5x4"] {
            v.push(Design::by_name(name, 3).unwrap());
        }
    }
    assert!(!v.is_empty());
    v
}

#[test]
fn designs_cover_every_set_of_at_most_k_positions_exhaustively() {
    for k in 0..=3 {
        let masks = all_masks_up_to(k);
        for d in designs_for(k) {
            for &m in &masks {
                assert!(
                    d.covers(m),
                    "design {} (k={k}) misses positions {m:#066b}",
                    d.name()
                );
            }
        }
    }
}

#[test]
fn designs_cover_sampled_sets_for_larger_k() {
    let mut s = 42u64;
    for k in 4..=MAX_K {
        for d in designs_for(k) {
            for _ in 0..20_000 {
                let mut m = 0u64;
                while m.count_ones() < k {
                    m |= 1 << (common::splitmix(&mut s) % 64);
                }
                assert!(d.covers(m), "design {} (k={k}) misses {m:#x}", d.name());
                // Also sets clustered in one region, the hard case for block designs.
                let base = common::splitmix(&mut s) % (64 - k as u64);
                let clustered = ((1u64 << k) - 1) << base;
                assert!(
                    d.covers(clustered),
                    "design {} misses {clustered:#x}",
                    d.name()
                );
            }
        }
    }
}

#[test]
fn the_check_can_fail() {
    // A design that keeps only the first table of the 4-table design misses some 3-sets.
    let d = Design::by_name("4", 3).unwrap();
    let one = Design::from_tables("broken", 3, 0, d.tables()[..1].to_vec()).unwrap();
    assert!(all_masks_up_to(3).iter().any(|&m| !one.covers(m)));
}
