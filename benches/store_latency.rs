//! Query latency while a bulk insert runs: 2 reader threads query (k = 3) while one writer
//! inserts `SIMDEX_BENCH_NEW` pairs (default 1M) with one `insert_many` call into a store of
//! `SIMDEX_BENCH_STORED` pairs (default 1M). Prints p50 / p99 / max query latency during the
//! insert, and the insert's time. Target: max <= 10 ms.
//!
//! `cargo bench --bench store_latency` (`SIMDEX_BENCH_READERS=1` on a 2-core machine, where
//! 2 readers and a writer share 2 cores and the scheduler alone delays queries by milliseconds).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use simdex::index::DesignChoice;
use simdex::sample;
use simdex::store::{CreateOptions, Store, StoreOptions, SyncPolicy};

fn env_u64(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(default)
}

fn main() {
    if std::env::args().any(|a| a == "--test" || a == "--list") {
        return;
    }
    let stored = env_u64("SIMDEX_BENCH_STORED", 1_000_000) as usize;
    let new = env_u64("SIMDEX_BENCH_NEW", 1_000_000) as usize;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s");
    let mut base: Vec<(u64, u64)> = sample::random(stored, 1)
        .into_iter()
        .enumerate()
        .map(|(i, fp)| (fp, i as u64))
        .collect();
    base.sort_unstable();
    Store::create_from_sorted(
        &path,
        &CreateOptions::default().with_design(DesignChoice::Named("10".into())),
        base.iter().map(|&p| Ok(p)),
    )
    .unwrap();
    let store = Arc::new(
        Store::open(
            &path,
            &StoreOptions::default()
                .with_sync(SyncPolicy::Manual)
                .with_max_delta(4 * new as u64),
        )
        .unwrap(),
    );
    let fresh: Vec<(u64, u64)> = sample::random(new, 2)
        .into_iter()
        .enumerate()
        .map(|(i, fp)| (fp, (stored + i) as u64))
        .collect();
    let done = Arc::new(AtomicBool::new(false));
    let nreaders = env_u64("SIMDEX_BENCH_READERS", 2);
    let readers: Vec<_> = (0..nreaders)
        .map(|t| {
            let (store, done) = (Arc::clone(&store), Arc::clone(&done));
            let queries: Vec<u64> = base
                .iter()
                .skip(t as usize)
                .step_by(97)
                .map(|p| p.0 ^ 1)
                .collect();
            std::thread::spawn(move || {
                let mut lat = Vec::new();
                let mut i = 0;
                while !done.load(Ordering::Acquire) {
                    let t0 = Instant::now();
                    let m = store.near(queries[i % queries.len()], 3).unwrap();
                    lat.push(t0.elapsed());
                    assert!(!m.is_empty());
                    i += 1;
                }
                lat
            })
        })
        .collect();
    std::thread::sleep(Duration::from_millis(100));
    // SIMDEX_BENCH_SEPARATE=1: the writer inserts into another store, so readers share only
    // the machine with it (cores, allocator, page cache), not the store's locks.
    let other = (env_u64("SIMDEX_BENCH_SEPARATE", 0) == 1).then(|| {
        let p = dir.path().join("other");
        Store::create(
            &p,
            &CreateOptions::default().with_design(DesignChoice::Named("10".into())),
        )
        .unwrap();
        Store::open(
            &p,
            &StoreOptions::default()
                .with_sync(SyncPolicy::Manual)
                .with_max_delta(4 * new as u64),
        )
        .unwrap()
    });
    let t0 = Instant::now();
    other
        .as_ref()
        .unwrap_or(&store)
        .insert_many(&fresh)
        .unwrap();
    let insert = t0.elapsed();
    std::thread::sleep(Duration::from_millis(100));
    done.store(true, Ordering::Release);
    let mut lat: Vec<Duration> = readers
        .into_iter()
        .flat_map(|r| r.join().unwrap())
        .collect();
    lat.sort_unstable();
    let q = |f: f64| lat[((lat.len() - 1) as f64 * f) as usize];
    println!(
        "## Query latency during one insert_many of {new} pairs into {stored} ({nreaders} reader \
         threads, k = 3, {} cores)",
        std::thread::available_parallelism().map_or(1, |n| n.get())
    );
    println!("| queries | p50 | p99 | max | insert_many time |");
    println!("|---:|---:|---:|---:|---:|");
    println!(
        "| {} | {:.1} µs | {:.1} µs | {:.2} ms | {:.2} s |",
        lat.len(),
        q(0.5).as_secs_f64() * 1e6,
        q(0.99).as_secs_f64() * 1e6,
        lat.last().unwrap().as_secs_f64() * 1e3,
        insert.as_secs_f64()
    );
}
