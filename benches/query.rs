//! Query throughput per design, compressed index (mapped, and read into memory with
//! `Index::open_in_memory`) against the same design over raw sorted `u64` tables (binary
//! search) and against a linear popcount scan — one run, interleaved, single thread. Prints a
//! table (markdown) for BENCHMARKS.md.
//!
//! `cargo bench --bench query` (n = 1M and 10M; ~2 min);
//! `SIMDEX_BENCH_SIZES=1000000 SIMDEX_BENCH_BLOCKS=256,1024 cargo bench --bench query` to choose;
//! `SIMDEX_BENCH_DESIGNS=10,16,auto` picks designs and `SIMDEX_BENCH_RAW=0` drops the raw
//! baseline (8 bytes per fingerprint per table in RAM), e.g. for the opt-in 100M rows.

use std::time::{Duration, Instant};

use simdex::codec::Codec;
use simdex::index::{self, BuildOptions, DesignChoice};
use simdex::{Design, Index};

use simdex::sample::splitmix64 as splitmix;

/// The same design over raw sorted u64 arrays: the uncompressed baseline.
struct RawIndex {
    tables: Vec<(simdex::Permutation, simdex::Permutation, u32, Vec<u64>)>,
}

impl RawIndex {
    fn new(design: &Design, fps: &[u64]) -> RawIndex {
        let tables = design
            .tables()
            .iter()
            .map(|t| {
                let mut v: Vec<u64> = fps.iter().map(|&f| t.permutation.apply(f)).collect();
                v.sort_unstable();
                v.dedup();
                (
                    t.permutation.clone(),
                    t.permutation.inverse(),
                    t.prefix_bits,
                    v,
                )
            })
            .collect();
        RawIndex { tables }
    }

    fn near(&self, fp: u64, k: u32, radius: u32) -> Vec<(u32, u64)> {
        assert_eq!(
            radius, 0,
            "raw baseline implements exact-prefix designs only"
        );
        let mut out = Vec::new();
        for (p, inv, bits, keys) in &self.tables {
            let q = p.apply(fp);
            let low = u64::MAX.checked_shr(*bits).unwrap_or(0);
            let (lo, hi) = (q & !low, q | low);
            let i = keys.partition_point(|&x| x < lo);
            for &key in keys[i..].iter().take_while(|&&x| x <= hi) {
                let d = (key ^ q).count_ones();
                if d <= k {
                    out.push((d, inv.apply(key)));
                }
            }
        }
        out.sort_unstable();
        out.dedup();
        out
    }
}

fn time_per_query(queries: &[u64], mut f: impl FnMut(u64) -> usize) -> (Duration, usize) {
    let t0 = Instant::now();
    let mut found = 0;
    for &q in queries {
        found += f(q);
    }
    (
        t0.elapsed() / queries.len() as u32,
        std::hint::black_box(found),
    )
}

fn env_list(name: &str, default: &[u64]) -> Vec<u64> {
    std::env::var(name)
        .ok()
        .map(|s| s.split(',').filter_map(|x| x.trim().parse().ok()).collect())
        .unwrap_or_else(|| default.to_vec())
}

fn main() {
    // `cargo bench -- --test` (and `cargo test --benches`) just checks the binary runs.
    if std::env::args().any(|a| a == "--test" || a == "--list") {
        return;
    }
    let sizes = env_list("SIMDEX_BENCH_SIZES", &[1_000_000, 10_000_000]);
    let blocks = env_list("SIMDEX_BENCH_BLOCKS", &[1024, 256]);
    let designs: Vec<String> = std::env::var("SIMDEX_BENCH_DESIGNS")
        .unwrap_or_else(|_| "4,10,16,20,m2c1r1,auto".into())
        .split(',')
        .map(|d| d.trim().to_string())
        .collect();
    let with_raw = std::env::var("SIMDEX_BENCH_RAW").map_or(true, |v| v != "0");
    let k = 3;
    println!(
        "| n | design | tables | B | compressed µs/query | queries/s | in memory µs/query | raw µs/query | compressed/raw | bits/fp/table | reader RAM | raw RAM | build s (M fp/s) |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|---|---|---|");
    for &n in &sizes {
        let mut s = n;
        let mut fps: Vec<u64> = (0..n).map(|_| splitmix(&mut s)).collect();
        // Plant a neighbour at distance 1..=3 for 1% of fingerprints so queries find something.
        for i in 0..(n as usize / 100) {
            let mut m = 0u64;
            while m.count_ones() < (i % 3 + 1) as u32 {
                m |= 1 << (splitmix(&mut s) % 64);
            }
            fps.push(fps[i] ^ m);
        }
        // Queries: half stored fingerprints with planted neighbours, half random; fresh every
        // design, enough to defeat the caches (each query touches every table).
        let mut queries: Vec<u64> = fps[..(n as usize / 100).min(20_000)].to_vec();
        queries.extend((0..queries.len().max(1000)).map(|_| splitmix(&mut s)));
        let scan_q = &queries[..200];
        let (scan, _) = time_per_query(scan_q, |q| {
            let q = std::hint::black_box(q);
            fps.iter().filter(|&&f| (f ^ q).count_ones() <= k).count()
        });
        println!(
            "| {n} | linear popcount scan | - | - | {:.1} | {:.0} | - | - | - | 64 | - | {:.0} MiB | - |",
            scan.as_secs_f64() * 1e6,
            1.0 / scan.as_secs_f64(),
            n as f64 * 8.0 / 1048576.0
        );
        let runs = designs.iter().map(String::as_str).flat_map(|name| {
            // Both codecs for the design `auto` picks; h-delta for the rest.
            let codecs: &[Codec] = if name == "auto" {
                &Codec::ALL
            } else {
                &[Codec::HDelta]
            };
            codecs.iter().map(move |&c| (name, c))
        });
        for (name, codec) in runs {
            for &b in &blocks {
                let design = if name == "auto" {
                    Design::auto_with_budget(n, k, simdex::design::DEFAULT_MAX_TABLES, b as u32)
                        .unwrap()
                } else {
                    Design::by_name(name, k).unwrap()
                };
                let dir = tempfile::tempdir().unwrap();
                let path = dir.path().join("idx");
                let opts = BuildOptions::default()
                    .with_k(k)
                    .with_design(DesignChoice::Given(design.clone()))
                    .with_block_size(Some(b as u32))
                    .with_codec(codec)
                    .with_mem_bytes(4 << 30);
                let built = index::build(&path, fps.iter().map(|&f| Ok(f)), &opts).unwrap();
                let build_s = built.elapsed.as_secs_f64();
                let idx = Index::open(&path).unwrap();
                let st = idx.stats();
                // Warm the page cache and the crc bitmaps once, then measure.
                for t in idx.tables() {
                    t.verify().unwrap();
                }
                let raw = (with_raw && design.radius() == 0).then(|| RawIndex::new(&design, &fps));
                let (c, found_c) = time_per_query(&queries, |q| idx.near(q, k).unwrap().len());
                // The same index read into memory (huge pages, every block checked at open).
                let mem = Index::open_in_memory(&path).unwrap();
                let (m, found_m) = time_per_query(&queries, |q| mem.near(q, k).unwrap().len());
                assert_eq!(found_m, found_c, "in memory and mapped disagree");
                drop(mem);
                let raw_t = raw.as_ref().map(|r| {
                    let (t, found_r) = time_per_query(&queries, |q| r.near(q, k, 0).len());
                    assert_eq!(found_r, found_c, "raw and compressed disagree");
                    t
                });
                let raw_cols = match raw_t {
                    Some(t) => format!(
                        "{:.2} | {:.2}",
                        t.as_secs_f64() * 1e6,
                        c.as_secs_f64() / t.as_secs_f64()
                    ),
                    None => "- | -".into(),
                };
                println!(
                    "| {n} | {} | {} | {b} | {:.2} | {:.0} | {:.2} | {raw_cols} | {:.2} | {:.1} MiB | {:.0} MiB | {build_s:.2} ({:.1}) |",
                    if name == "auto" {
                        format!("auto ({}), {codec}", design.name())
                    } else {
                        name.to_string()
                    },
                    st.tables,
                    c.as_secs_f64() * 1e6,
                    1.0 / c.as_secs_f64(),
                    m.as_secs_f64() * 1e6,
                    st.bits_per_key_per_table,
                    st.memory_bytes as f64 / 1048576.0,
                    (st.keys * 8 * st.tables as u64) as f64 / 1048576.0,
                    built.input as f64 / build_s / 1e6,
                );
            }
        }
    }
}
