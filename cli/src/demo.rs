//! `simdex demo`: the main job end to end on generated data — generate fingerprints with
//! planted near-duplicates, build an index, query it, print sizes and speed.

use std::time::Instant;

use simdex::{Error, Index, Result};

use crate::util::human_bytes;

/// Arguments of `simdex demo`.
#[derive(clap::Args)]
pub struct Args {
    /// Number of random fingerprints.
    #[arg(long, default_value_t = 1_000_000)]
    n: u64,
    #[command(flatten)]
    layout: crate::build::LayoutArgs,
    /// Seed.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Keep the index at this path instead of a temporary directory.
    #[arg(long)]
    keep: Option<std::path::PathBuf>,
}

/// Run.
pub fn run(a: Args) -> Result<()> {
    let planted = (a.n / 100).min(10_000);
    let distances: Vec<u32> = (1..=a.layout.k + 1).collect();
    let fps = simdex::raw::with_planted(a.n, planted, &distances, a.seed)?;
    crate::outln!(
        "generated {} fingerprints: {} random, {} planted near-duplicates at distances {:?}",
        fps.len(),
        a.n,
        fps.len() as u64 - a.n,
        distances
    )?;
    let tmp = tempfile::tempdir().map_err(|e| Error::io(None, "create temporary directory", e))?;
    let dir = a.keep.clone().unwrap_or_else(|| tmp.path().join("index"));
    let opts = a.layout.options(1 << 30, true)?;
    let s = simdex::build_index(&dir, fps.iter().map(|&x| Ok(x)), &opts)?;
    crate::outln!(
        "built {} in {:.2?}: design {} ({} tables, k = {}, block size {}{})",
        dir.display(),
        s.elapsed,
        s.design.name(),
        s.design.tables().len(),
        s.design.k(),
        s.block_size,
        crate::util::segments_note(s.segment_keys, s.aligned_tables, s.design.tables().len())
    )?;
    let idx = Index::open(&dir)?;
    let st = idx.stats();
    crate::outln!(
        "size: {} on disk = {:.2} bits per fingerprint per table ({:.1}% of raw 64; information bound {:.2}); reader memory {}",
        human_bytes(st.disk_bytes as f64),
        st.bits_per_key_per_table,
        st.bits_per_key_per_table / 64.0 * 100.0,
        simdex::raw::Table::information_bound(st.keys),
        human_bytes(st.memory_bytes as f64)
    )?;
    // Queries: the planted originals (each has neighbours at 1..=k) and fresh random ones.
    let mut queries: Vec<u64> = fps[..planted as usize].to_vec();
    queries.extend(simdex::raw::with_planted(10_000, 0, &[], a.seed ^ 0xABCD)?);
    let t0 = Instant::now();
    let mut matches = 0usize;
    let mut with_dups = 0usize;
    for &q in &queries {
        let m = idx.near(q, a.layout.k)?;
        matches += m.len();
        with_dups += usize::from(m.iter().any(|m| m.distance > 0));
    }
    let el = t0.elapsed();
    crate::outln!(
        "queried {} fingerprints at k = {} on one thread: {:.1} µs per query ({:.0} queries/s); \
         {} matches, {} queries with a near-duplicate",
        queries.len(),
        a.layout.k,
        el.as_secs_f64() * 1e6 / queries.len().max(1) as f64,
        queries.len() as f64 / el.as_secs_f64(),
        matches,
        with_dups
    )?;
    if let Some(&q) = queries.first() {
        crate::outln!("example: near({q:016x}, {}):", a.layout.k)?;
        for m in idx.near(q, a.layout.k)? {
            crate::outln!("  {:016x}  distance {}", m.fingerprint, m.distance)?;
        }
    }
    let t0 = Instant::now();
    let r = idx.verify()?;
    crate::outln!(
        "verify: {} tables, {} keys decoded, all checksums valid ({:.2?})",
        r.tables,
        r.keys_decoded,
        t0.elapsed()
    )?;
    Ok(())
}
