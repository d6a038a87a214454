//! Shared test helpers: a deterministic generator and adversarial key sets.
#![allow(dead_code, unused_imports)]

use std::collections::BTreeSet;

pub mod storage;

pub use simdex::sample::{flip_bits, random as random_keys, splitmix64 as splitmix};

/// Whether the long variants of tests were asked for (`SIMDEX_LONG_TESTS=1`): more keys or
/// cases where the default keeps CI short.
pub fn long_tests() -> bool {
    std::env::var_os("SIMDEX_LONG_TESTS").is_some()
}

/// Sorted, distinct.
pub fn sorted_set(keys: &[u64]) -> Vec<u64> {
    keys.iter()
        .copied()
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect()
}

/// Named adversarial key sets (sorted, distinct).
pub fn adversarial_sets() -> Vec<(&'static str, Vec<u64>)> {
    let mut sets: Vec<(&'static str, Vec<u64>)> = vec![
        ("empty", vec![]),
        ("zero", vec![0]),
        ("max", vec![u64::MAX]),
        ("zero_and_max", vec![0, u64::MAX]),
        (
            "two_sharing_63_bits",
            vec![0x1234_5678_9ABC_DEF0, 0x1234_5678_9ABC_DEF1],
        ),
        ("h_zero", vec![0x7FFF_FFFF_FFFF_FFFF, 0x8000_0000_0000_0000]),
        (
            "top_and_bottom",
            vec![0, 1, 2, u64::MAX - 2, u64::MAX - 1, u64::MAX],
        ),
        ("consecutive", (1_000_000..1_005_000).collect()),
        ("consecutive_at_max", (u64::MAX - 3000..=u64::MAX).collect()),
        ("pairs_sharing_63_bits", {
            let mut s = 5;
            sorted_set(
                &(0..2000)
                    .flat_map(|_| {
                        let k = splitmix(&mut s) & !1;
                        [k, k | 1]
                    })
                    .collect::<Vec<_>>(),
            )
        }),
        ("powers_of_two", (0..64).map(|i| 1u64 << i).collect()),
        (
            "all_ones_prefixes",
            (0..=64)
                .map(|i| u64::MAX.checked_shr(i).unwrap_or(0))
                .rev()
                .collect(),
        ),
        ("clustered", {
            // Dense clusters far apart: h alternates between tiny and large.
            let mut s = 9;
            let mut v = Vec::new();
            for _ in 0..50 {
                let base = splitmix(&mut s) & !0xFFFF;
                for j in 0..40 {
                    v.push(base + (splitmix(&mut s) & 0xFFFF) + j);
                }
            }
            sorted_set(&v)
        }),
    ];
    sets.push(("random_3000", sorted_set(&random_keys(3000, 11))));
    sets
}

/// Every block size the format allows.
pub const BLOCK_SIZES: [u32; 10] = [128, 256, 512, 1024, 2048, 4096, 8192, 16384, 32768, 65536];
