//! Table codec benchmarks: encode and decode ns/key, and a prefix probe on a 10M-key table beside
//! binary search over a raw sorted `u64` array (the uncompressed baseline).
//!
//! `cargo bench --bench table`; `SIMDEX_BENCH_N` overrides the 10M table size.

use std::hint::black_box;

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use simdex::table::{self, Table, TableOptions};

fn splitmix(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

fn sorted_keys(n: usize, seed: u64) -> Vec<u64> {
    let mut s = seed;
    let mut v: Vec<u64> = (0..n).map(|_| splitmix(&mut s)).collect();
    v.sort_unstable();
    v.dedup();
    v
}

fn codec(c: &mut Criterion) {
    let keys = sorted_keys(1_000_000, 1);
    let mut g = c.benchmark_group("codec_1M");
    g.throughput(Throughput::Elements(keys.len() as u64));
    g.sample_size(10);
    for bs in [1024u32, 4096] {
        let opts = TableOptions {
            block_size: bs,
            ..Default::default()
        };
        g.bench_with_input(BenchmarkId::new("encode", bs), &opts, |b, opts| {
            b.iter(|| table::build_bytes(black_box(&keys), opts).unwrap())
        });
        let bytes = table::build_bytes(&keys, &opts).unwrap();
        let t = Table::from_bytes(bytes).unwrap();
        g.bench_with_input(BenchmarkId::new("decode", bs), &t, |b, t| {
            b.iter(|| {
                let mut a = 0u64;
                t.for_each_in(0, u64::MAX, |k| {
                    a ^= k;
                    true
                })
                .unwrap();
                a
            })
        });
    }
    g.finish();
}

fn probe(c: &mut Criterion) {
    let n: usize = std::env::var("SIMDEX_BENCH_N")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(10_000_000);
    let keys = sorted_keys(n, 2);
    let mut s = 99u64;
    let queries: Vec<u64> = (0..4096).map(|_| splitmix(&mut s)).collect();
    let mut g = c.benchmark_group(format!("probe_{n}"));
    g.throughput(Throughput::Elements(queries.len() as u64));
    let p = (n as f64).log2().round() as u32; // about one key per prefix
    g.bench_function(BenchmarkId::new("raw_binary_search", p), |b| {
        b.iter(|| {
            let mut hits = 0u64;
            for &q in &queries {
                let mask = u64::MAX >> p;
                let lo = q & !mask;
                let hi = q | mask;
                let i = keys.partition_point(|&k| k < lo);
                for &k in keys[i..].iter().take_while(|&&k| k <= hi) {
                    hits += k & 1;
                }
            }
            hits
        })
    });
    for bs in [256u32, 512, 1024, 4096] {
        let opts = TableOptions {
            block_size: bs,
            ..Default::default()
        };
        let t = Table::from_bytes(table::build_bytes(&keys, &opts).unwrap()).unwrap();
        g.bench_function(BenchmarkId::new(format!("table_b{bs}"), p), |b| {
            b.iter(|| {
                let mut hits = 0u64;
                for &q in &queries {
                    let mask = u64::MAX >> p;
                    t.for_each_in(q & !mask, q | mask, |k| {
                        hits += k & 1;
                        true
                    })
                    .unwrap();
                }
                hits
            })
        });
    }
    g.finish();
}

criterion_group!(benches, codec, probe);
criterion_main!(benches);
