//! Table codec benchmarks, both codecs: encode and decode ns/key, and a prefix probe on a
//! 10M-key table beside binary search over a raw sorted `u64` array (the uncompressed baseline).
//!
//! `cargo bench --bench table`; `SIMDEX_BENCH_N` overrides the 10M table size.

use std::hint::black_box;

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use simdex::codec::Codec;
use simdex::table::{self, Table, TableOptions};

use simdex::sample::splitmix64 as splitmix;

fn sorted_keys(n: usize, seed: u64) -> Vec<u64> {
    let mut s = seed;
    let mut v: Vec<u64> = (0..n).map(|_| splitmix(&mut s)).collect();
    v.sort_unstable();
    v.dedup();
    v
}

/// Print the table's size beside the information bound (sizes are not a criterion measurement).
fn report_size<D: AsRef<[u8]>>(t: &Table<D>) {
    let st = t.stats();
    let bound = table::information_bound(st.keys);
    println!(
        "size: n = {} B = {}: {:.2} bits/key on disk (bound {:.2}, excess {:.2}); reader memory {:.3} bits/key",
        st.keys,
        st.block_size,
        st.bits_per_key,
        bound,
        st.bits_per_key - bound,
        st.memory_bytes as f64 * 8.0 / st.keys as f64
    );
}

fn codec(c: &mut Criterion) {
    let keys = sorted_keys(1_000_000, 1);
    let mut g = c.benchmark_group("codec_1M");
    g.throughput(Throughput::Elements(keys.len() as u64));
    g.sample_size(10);
    for (bs, codec) in [256u32, 1024, 4096]
        .into_iter()
        .flat_map(|b| Codec::ALL.map(|c| (b, c)))
    {
        let opts = TableOptions::default()
            .with_block_size(bs)
            .with_codec(codec);
        let id = format!("{codec}/{bs}");
        g.bench_with_input(BenchmarkId::new("encode", &id), &opts, |b, opts| {
            b.iter(|| table::build_bytes(black_box(&keys), opts).unwrap())
        });
        let bytes = table::build_bytes(&keys, &opts).unwrap();
        let t = Table::from_bytes(bytes).unwrap();
        report_size(&t);
        g.bench_with_input(BenchmarkId::new("decode", &id), &t, |b, t| {
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
    // A large pool, walked 4096 at a time, so repeated iterations do not find the same paths
    // in cache (each probe lands somewhere new, as in a real index).
    let pool: Vec<u64> = (0..1 << 20).map(|_| splitmix(&mut s)).collect();
    let mut round = 0usize;
    let mut next_queries = move || {
        round = (round + 4096) % pool.len();
        pool[round..round + 4096].to_vec()
    };
    let mut g = c.benchmark_group(format!("probe_{n}"));
    g.throughput(Throughput::Elements(4096));
    let p = (n as f64).log2().round() as u32; // about one key per prefix
    g.bench_function(BenchmarkId::new("raw_binary_search", p), |b| {
        b.iter(|| {
            let queries = next_queries();
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
    for (bs, codec) in [256u32, 512, 1024, 4096]
        .into_iter()
        .flat_map(|b| Codec::ALL.map(|c| (b, c)))
    {
        let opts = TableOptions::default()
            .with_block_size(bs)
            .with_codec(codec);
        let t = Table::from_bytes(table::build_bytes(&keys, &opts).unwrap()).unwrap();
        report_size(&t);
        g.bench_function(BenchmarkId::new(format!("{codec}_b{bs}"), p), |b| {
            b.iter(|| {
                let queries = next_queries();
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
