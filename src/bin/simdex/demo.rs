//! `simdex demo`: the table file end to end on generated data.

use std::time::Instant;

use simdex::table::{self, Table, TableOptions};

/// Arguments of `simdex demo`.
#[derive(clap::Args)]
pub struct Args {
    /// Number of random fingerprints.
    #[arg(long, default_value_t = 1_000_000)]
    n: u64,
    /// Block size in bytes (power of two, 128..=65536).
    #[arg(long, default_value_t = 1024)]
    block_size: u32,
    /// Seed of the generator.
    #[arg(long, default_value_t = 1)]
    seed: u64,
}

/// splitmix64: a tiny, well-mixed deterministic generator.
fn splitmix(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// Run the demo.
pub fn run(a: Args) -> simdex::Result<()> {
    let mut s = a.seed;
    let mut keys: Vec<u64> = (0..a.n).map(|_| splitmix(&mut s)).collect();
    let queries: Vec<u64> = keys
        .iter()
        .step_by((a.n as usize / 1000).max(1))
        .copied()
        .collect();
    keys.sort_unstable();
    let dir = tempfile::tempdir().map_err(|e| simdex::Error::io(None, "create temp dir", e))?;
    let path = dir.path().join("demo.sxt");
    let opts = TableOptions {
        block_size: a.block_size,
        ..TableOptions::default()
    };
    let t0 = Instant::now();
    let summary = table::build_file(&path, &opts, || Ok(keys.iter().map(|&k| Ok(k))))?;
    let build = t0.elapsed();
    let t = Table::open(&path)?;
    let st = t.stats();
    println!(
        "built {} keys ({} duplicates dropped) into {} blocks of {} bytes in {:.2?}",
        summary.keys, summary.duplicates, st.blocks, st.block_size, build
    );
    println!(
        "file: {} bytes = {:.2} bits/key ({:.1}% of raw 64-bit); bound log2 C(2^64,n)/n = {:.2} bits/key",
        st.file_bytes,
        st.bits_per_key,
        st.bits_per_key / 64.0 * 100.0,
        table::information_bound(st.keys)
    );
    println!(
        "reader memory: {} bytes ({:.3} bits/key)",
        st.memory_bytes,
        st.memory_bytes as f64 * 8.0 / st.keys.max(1) as f64
    );
    let t0 = Instant::now();
    let mut found = 0u64;
    let mut neighbours = 0u64;
    for &q in &queries {
        for k in t.prefix(q, 24) {
            let k = k?;
            neighbours += 1;
            if k == q {
                found += 1;
            }
        }
    }
    let el = t0.elapsed();
    println!(
        "{} prefix probes (24 bits): {found} found themselves, {neighbours} keys returned, {:.2} µs/probe",
        queries.len(),
        el.as_secs_f64() * 1e6 / queries.len().max(1) as f64
    );
    let t0 = Instant::now();
    let rep = t.verify()?;
    println!(
        "verify: {} keys in {} blocks OK in {:.2?}",
        rep.keys,
        rep.blocks,
        t0.elapsed()
    );
    Ok(())
}
