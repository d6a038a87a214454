//! Batch mode: |B| new fingerprints against |F| stored, k = 3, all cores — wall time, stored keys
//! decoded per second per core, and the same batch run as |B| online queries (`near_many`); then
//! the same for a batch of |F| / 1000.
//!
//! `cargo bench --bench batch` (F = 10M, B = 1M);
//! `SIMDEX_BENCH_STORED=100000000 cargo bench --bench batch` for the opt-in 100M run.

use std::time::Instant;

use simdex::Index;
use simdex::index::{self, BatchOptions, BuildOptions};
use simdex::sample;

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
    let n = env_u64("SIMDEX_BENCH_STORED", 10_000_000);
    let nb = env_u64("SIMDEX_BENCH_BATCH", 1_000_000);
    let cores = rayon::current_num_threads();
    let stored = sample::with_planted(n, 0, &[], 1).unwrap();
    // The batch: 1% near-duplicates of stored fingerprints, the rest new.
    let mut s = 7u64;
    let mut batch = sample::random(nb as usize, 2);
    for (i, b) in batch.iter_mut().enumerate().take(nb as usize / 100) {
        *b = sample::flip_bits(stored[i * 13 % stored.len()], (i % 4) as u32, &mut s);
    }
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("idx");
    let t0 = Instant::now();
    let built = index::build(
        &path,
        stored.iter().map(|&x| Ok(x)),
        &BuildOptions::default(),
    )
    .unwrap();
    drop(stored);
    println!(
        "F: {n} fingerprints, design {} ({} tables), block size {}, built in {:.1?}",
        built.design.name(),
        built.design.tables().len(),
        built.block_size,
        t0.elapsed()
    );
    let idx = Index::open(&path).unwrap();
    for t in idx.tables() {
        t.verify().unwrap(); // warm the page cache: both modes then read from memory
    }
    println!("| mode | batch | stored | wall s | pairs | stored keys decoded | M keys/s/core |");
    println!("|---|---|---|---|---|---|---|");
    // The full batch, and one of |F| / 1000 (the ratio of 1M against 1B), whose pass skips the
    // blocks no probe reaches.
    let step = (batch.len() / (n as usize / 1000).max(1)).max(1);
    let small: Vec<u64> = batch.iter().step_by(step).copied().collect();
    for batch in [&batch[..], &small[..]] {
        let nb = batch.len();
        let t0 = Instant::now();
        let r = idx
            .batch_near(batch, &BatchOptions::default().with_within(false))
            .unwrap();
        let el = t0.elapsed().as_secs_f64();
        println!(
            "| batch_near ({cores} cores) | {nb} | {n} | {el:.3} | {} | {} | {:.1} |",
            r.pairs.len(),
            r.keys_scanned,
            r.keys_scanned as f64 / el / cores as f64 / 1e6
        );
        let t0 = Instant::now();
        let online = idx.near_many(batch, 3).unwrap();
        let el2 = t0.elapsed().as_secs_f64();
        let found: usize = online.iter().map(|m| m.len()).sum();
        assert_eq!(found, r.pairs.len(), "batch and online queries disagree");
        println!("| near_many ({cores} cores) | {nb} | {n} | {el2:.3} | {found} | - | - |");
    }
}
