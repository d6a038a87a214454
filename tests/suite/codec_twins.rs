//! Slow, obviously correct twins of the fast paths, checked against them on seeded input:
//! a bit-by-bit block decoder built on `bitvec`, and `huffman-compress` as an independent
//! check that package-merge finds optimal code lengths.

use crate::common;

use std::collections::HashMap;

use bitvec::prelude::*;
use common::*;
use simdex::codec::Codec;
use simdex::codec::huffman::{Code, NUM_SYMBOLS};
use simdex::table::{self, Table, TableOptions};

/// Decode block `i` of `t` one bit at a time, straight from the spec.
fn reference_block(t: &Table<Vec<u8>>, i: u64) -> Vec<u64> {
    let b = t.block_size() as usize;
    let off = 176 + i as usize * b;
    let block = &t.bytes()[off..off + b];
    let count = u32::from_le_bytes(block[0..4].try_into().unwrap());
    let mut key = u64::from_le_bytes(block[4..12].try_into().unwrap());
    let code = Code::from_lengths(t.code_lengths()).unwrap();
    let bits = block[12..b - 4].view_bits::<Msb0>();
    let mut pos = 0;
    let mut out = vec![key];
    for _ in 1..count {
        // Read bits until they spell some symbol's code.
        let (mut acc, mut len) = (0u64, 0u32);
        let h = loop {
            acc = acc << 1 | bits[pos] as u64;
            pos += 1;
            len += 1;
            if let Some(s) = (0..NUM_SYMBOLS).find(|&s| code.encode(s) == (acc, len)) {
                break s;
            }
        };
        let next = match t.codec() {
            Codec::HDelta => {
                // Keep the top h bits, set bit h, then the 63 - h suffix bits.
                let mut next = key & !(u64::MAX >> h) | 1u64 << (63 - h);
                for j in (0..63 - h).rev() {
                    next |= (bits[pos] as u64) << j;
                    pos += 1;
                }
                next
            }
            Codec::Gap => {
                // The gap is a 1 followed by s = h suffix bits.
                let mut gap = 1u64;
                for _ in 0..h {
                    gap = gap << 1 | bits[pos] as u64;
                    pos += 1;
                }
                key + gap
            }
            other => panic!("no twin decoder for codec {other:?}"),
        };
        assert!(next > key);
        key = next;
        out.push(key);
    }
    out
}

#[test]
fn fast_and_reference_block_decoders_agree() {
    let mut sets = adversarial_sets();
    sets.push(("random_50k", sorted_set(&random_keys(50_000, 3))));
    for (name, keys) in sets {
        for (bs, codec) in [128u32, 1024, 4096]
            .into_iter()
            .flat_map(|b| Codec::ALL.map(|c| (b, c)))
        {
            let o = TableOptions::default()
                .with_block_size(bs)
                .with_codec(codec);
            let t = Table::from_bytes(table::build_bytes(&keys, &o).unwrap()).unwrap();
            for i in 0..t.block_count() {
                let mut d = t.block(i).unwrap();
                let mut fast = Vec::new();
                while let Some(k) = d.next().unwrap() {
                    fast.push(k);
                }
                assert_eq!(
                    fast,
                    reference_block(&t, i),
                    "{name} B={bs} {codec} block {i}"
                );
            }
        }
    }
}

#[test]
fn package_merge_is_optimal_when_the_limit_does_not_bind() {
    let mut s = 5u64;
    for round in 0..300 {
        let used = 2 + (splitmix(&mut s) % 63) as usize;
        let mut f = [0u64; NUM_SYMBOLS];
        for x in f.iter_mut().take(used) {
            *x = 1 + splitmix(&mut s) % if round % 2 == 0 { 1000 } else { 1_000_000_000 };
        }
        let weights: HashMap<usize, u64> = (0..NUM_SYMBOLS)
            .filter(|&i| f[i] > 0)
            .map(|i| (i, f[i]))
            .collect();
        let (book, _) = huffman_compress::codebook(&weights);
        let huff_cost: u64 = weights
            .iter()
            .map(|(s, w)| w * book.get(s).unwrap().len() as u64)
            .sum();
        let max_len = weights
            .keys()
            .map(|s| book.get(s).unwrap().len())
            .max()
            .unwrap() as u32;
        if max_len <= 16 {
            let pm = Code::from_frequencies(&f, 16);
            assert_eq!(pm.cost(&f), huff_cost, "round {round}");
        }
        // With the writer's limit of 12 the cost can only grow, and the code stays complete.
        let limited = Code::from_frequencies(&f, 12);
        assert!(limited.max_len() <= 12);
        assert!(limited.cost(&f) >= huff_cost);
    }
}
