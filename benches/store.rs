//! The store: inserts per second per sync policy, compaction throughput (1M new pairs into a
//! 10M-pair store), and query speed with a non-empty delta. Prints tables.
//!
//! `cargo bench --bench store` (F = 10M stored, 1M new); smaller with
//! `SIMDEX_BENCH_STORED=1000000 SIMDEX_BENCH_NEW=100000 cargo bench --bench store`.
//! The store lives in `SIMDEX_BENCH_DIR` (default: the system temp dir), which decides what an
//! fsync costs.

use std::sync::Arc;
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

/// Resident set size in bytes (Linux), 0 elsewhere.
fn rss() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmRSS:"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|kb| kb.parse::<u64>().ok())
        })
        .map_or(0, |kb| kb * 1024)
}

fn create_opts() -> CreateOptions {
    CreateOptions::default().with_design(DesignChoice::Named("10".into()))
}

fn opts(sync: SyncPolicy, max_delta: u64) -> StoreOptions {
    StoreOptions::default()
        .with_sync(sync)
        .with_max_delta(max_delta)
}

/// Single inserts for about `budget`, from `threads` threads; returns inserts per second.
fn insert_rate(root: &std::path::Path, sync: SyncPolicy, threads: u64, budget: Duration) -> f64 {
    let dir = tempfile::tempdir_in(root).unwrap();
    let path = dir.path().join("s");
    Store::create(&path, &create_opts()).unwrap();
    let store = Arc::new(Store::open(&path, &opts(sync, 1 << 30)).unwrap());
    let t0 = Instant::now();
    let handles: Vec<_> = (0..threads)
        .map(|t| {
            let store = Arc::clone(&store);
            std::thread::spawn(move || {
                let mut n = 0u64;
                let mut s = t + 1;
                while t0.elapsed() < budget {
                    for _ in 0..16 {
                        store.insert(sample::splitmix64(&mut s), n).unwrap();
                        n += 1;
                    }
                }
                n
            })
        })
        .collect();
    let n: u64 = handles.into_iter().map(|h| h.join().unwrap()).sum();
    let rate = n as f64 / t0.elapsed().as_secs_f64();
    drop(store);
    rate
}

fn main() {
    if std::env::args().any(|a| a == "--test" || a == "--list") {
        return;
    }
    let stored = env_u64("SIMDEX_BENCH_STORED", 10_000_000);
    let new = env_u64("SIMDEX_BENCH_NEW", 1_000_000);
    let root = std::env::var("SIMDEX_BENCH_DIR")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|_| std::env::temp_dir());

    println!(
        "## Inserts per second (single-pair inserts, design 10, {})",
        root.display()
    );
    println!("| sync policy | threads | inserts/s |");
    println!("|---|---:|---:|");
    let budget = Duration::from_secs(3);
    for (name, sync, threads) in [
        ("per-write", SyncPolicy::PerWrite, 1),
        ("per-write (group commit)", SyncPolicy::PerWrite, 2),
        ("per-write (group commit)", SyncPolicy::PerWrite, 8),
        (
            "group:10ms",
            SyncPolicy::Group(Duration::from_millis(10)),
            1,
        ),
        ("manual", SyncPolicy::Manual, 1),
        ("manual", SyncPolicy::Manual, 2),
    ] {
        let r = insert_rate(&root, sync, threads, budget);
        println!("| {name} | {threads} | {r:.0} |");
    }

    // A store of `stored` pairs (bulk-loaded), then `new` pairs through the log.
    let dir = tempfile::tempdir_in(&root).unwrap();
    let path = dir.path().join("s");
    let mut base: Vec<(u64, u64)> = sample::random(stored as usize, 1)
        .into_iter()
        .enumerate()
        .map(|(i, fp)| (fp, i as u64))
        .collect();
    base.sort_unstable();
    let t0 = Instant::now();
    Store::create_from_sorted(&path, &create_opts(), base.iter().map(|&p| Ok(p))).unwrap();
    println!(
        "\nbulk load: {stored} pairs in {:.1?} ({:.2} M pairs/s)",
        t0.elapsed(),
        stored as f64 / t0.elapsed().as_secs_f64() / 1e6
    );
    let store = Store::open(&path, &opts(SyncPolicy::Manual, u64::MAX)).unwrap();
    // Queries: 10k, a quarter of them near-duplicates of stored fingerprints.
    let mut s = 99u64;
    let queries: Vec<u64> = (0..10_000usize)
        .map(|i| {
            if i % 4 == 0 {
                sample::flip_bits(base[i * 31 % base.len()].0, (i % 4) as u32, &mut s)
            } else {
                sample::splitmix64(&mut s)
            }
        })
        .collect();
    let time_queries = |store: &Store| {
        let t0 = Instant::now();
        let mut hits = 0usize;
        for &q in &queries {
            hits += store.near(q, 3).unwrap().len();
        }
        (
            t0.elapsed().as_secs_f64() * 1e6 / queries.len() as f64,
            hits,
        )
    };
    println!("\n## Query speed with a delta (k = 3, 1 thread, {stored} compacted pairs)");
    println!("| delta pairs | µs/query | matches | RSS growth |");
    println!("|---:|---:|---:|---:|");
    let (us, hits) = time_queries(&store);
    println!("| 0 | {us:.2} | {hits} | |");
    let fresh: Vec<(u64, u64)> = sample::random(new as usize, 2)
        .into_iter()
        .enumerate()
        .map(|(i, fp)| (fp, stored + i as u64))
        .collect();
    let rss0 = rss();
    let t0 = Instant::now();
    let mut done = 0usize;
    for step in [new as usize / 10, new as usize] {
        store.insert_many(&fresh[done..step]).unwrap();
        done = step;
        let (us, hits) = time_queries(&store);
        let grown = rss().saturating_sub(rss0) as f64;
        println!(
            "| {step} | {us:.2} | {hits} | {:.0} MiB ({:.0} B/pair) |",
            grown / (1u64 << 20) as f64,
            grown / step as f64
        );
    }
    let insert_time = t0.elapsed();
    store.flush().unwrap();
    println!(
        "\ninsert_many of {new} pairs (manual sync, includes the query runs above): {insert_time:.1?}"
    );
    let t0 = Instant::now();
    let sum = store.compact().unwrap().unwrap();
    let el = t0.elapsed();
    println!("\n## Compaction: {new} new pairs into {stored}");
    println!(
        "{el:.1?}: {} pairs, {} fingerprints in {} bytes; {:.2} M output fingerprints/s \
         (10 tables rewritten)",
        sum.pairs,
        sum.fingerprints,
        sum.bytes,
        sum.fingerprints as f64 / el.as_secs_f64() / 1e6
    );
    let (us, hits) = time_queries(&store);
    println!("after compaction: {us:.2} µs/query, {hits} matches");
}
