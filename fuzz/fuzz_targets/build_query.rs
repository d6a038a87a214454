//! Build a table from an arbitrary key set (any block size), then compare iteration, ranges and
//! prefixes against brute force over the sorted set.
#![no_main]

use libfuzzer_sys::fuzz_target;
use simdex::table::{self, Table, TableOptions};

fuzz_target!(|data: &[u8]| {
    if data.is_empty() {
        return;
    }
    let block_size = 128u32 << (data[0] % 6);
    let codec = if data[0] & 0x80 == 0 {
        simdex::codec::Codec::HDelta
    } else {
        simdex::codec::Codec::Gap
    };
    let mut keys: Vec<u64> = data[1..]
        .chunks(8)
        .map(|c| {
            let mut b = [0u8; 8];
            b[..c.len()].copy_from_slice(c);
            u64::from_le_bytes(b)
        })
        .collect();
    let probes = keys.clone();
    keys.sort_unstable();
    let opts = TableOptions::default()
        .with_block_size(block_size)
        .with_codec(codec);
    let bytes = table::build_bytes(&keys, &opts).unwrap();
    keys.dedup();
    let t = Table::from_bytes(bytes).unwrap();
    assert_eq!(t.verify().unwrap().keys, keys.len() as u64);
    let all: Vec<u64> = t.iter().map(|k| k.unwrap()).collect();
    assert_eq!(all, keys);
    for (i, &q) in probes.iter().enumerate().take(32) {
        let bits = (q % 65) as u32;
        let want: Vec<u64> = keys
            .iter()
            .copied()
            .filter(|&k| bits == 0 || (k ^ q) >> (64 - bits) == 0)
            .collect();
        let got: Vec<u64> = t.prefix(q, bits).map(|k| k.unwrap()).collect();
        assert_eq!(got, want);
        let other = probes[(i * 7 + 1) % probes.len()];
        let (lo, hi) = (q.min(other), q.max(other));
        let want: Vec<u64> = keys
            .iter()
            .copied()
            .filter(|&k| lo <= k && k <= hi)
            .collect();
        let got: Vec<u64> = t.range(lo..=hi).map(|k| k.unwrap()).collect();
        assert_eq!(got, want);
    }
});
