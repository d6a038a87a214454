//! `simdex batch`: check a new batch of fingerprints against the whole index, sharded.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Instant;

use crate::input::{FingerprintReader, Format};
use simdex::{BatchOptions, Pair, Shard};
use simdex::{Error, Index, Result};

/// Arguments of `simdex batch`.
#[derive(clap::Args)]
pub struct Args {
    /// Index directory (the stored set F).
    pub dir: PathBuf,
    /// The batch B (`-` for standard input).
    #[arg(long)]
    pub input: PathBuf,
    /// Input format: hex or u64.
    #[arg(long, default_value = "hex")]
    pub format: Format,
    /// Largest distance reported (default: the index's k).
    #[arg(long)]
    pub k: Option<u32>,
    /// Scan only shard I of N of every table (0-based); shard outputs merged with `sort -m`
    /// equal the unsharded output.
    #[arg(long, default_value = "0/1")]
    pub shard: String,
    /// Write the pairs here (atomically) instead of standard output.
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Also write the pairs inside the batch to this file (computed by shard 0; other shards
    /// write it empty).
    #[arg(long)]
    pub within: Option<PathBuf>,
    /// Memory budget for the batch's in-memory tables (16 bytes per batch fingerprint per
    /// probe): a larger batch runs in rounds, each a full pass over the stored tables.
    #[arg(long, default_value = "1G", value_parser = crate::util::parse_size)]
    pub mem: u64,
    /// No progress bar and no summary.
    #[arg(long)]
    pub quiet: bool,
}

fn write_pairs(w: &mut impl Write, pairs: &[Pair]) -> std::io::Result<()> {
    for p in pairs {
        crate::query::write_line(w, p.batch, p.stored, p.distance)?;
    }
    Ok(())
}

fn write_file(path: &Path, pairs: &[Pair]) -> Result<()> {
    crate::output::write_output(path, |w| {
        write_pairs(w, pairs).map_err(|e| Error::io(path.to_path_buf(), "write", e))
    })
}

/// Run.
pub fn run(a: Args) -> Result<()> {
    let shard = Shard::parse(&a.shard)?;
    let idx = Index::open(&a.dir)?;
    let k = a.k.unwrap_or(idx.design().k());
    let mut batch: Vec<u64> =
        FingerprintReader::open(&a.input, a.format)?.collect::<Result<_>>()?;
    let t0 = Instant::now();
    // Rounds of distinct, ascending fingerprints: each round's pairs are sorted by (batch,
    // stored) and come after the previous round's, so their concatenation is the whole answer.
    batch.sort_unstable();
    batch.dedup();
    let per_fp = 16 * idx.stats().probes_per_query.max(1);
    let round = usize::try_from((a.mem / per_fp).max(1)).unwrap_or(usize::MAX);
    let rounds = batch.len().div_ceil(round).max(1);
    let opts = BatchOptions::default()
        .with_k(k)
        .with_shard(shard)
        .with_within(a.within.is_some() && rounds == 1)
        .with_progress(crate::progress::handle(!a.quiet));
    let mut r = simdex::BatchResult::default();
    for part in batch.chunks(round) {
        let x = idx.batch_near(part, &opts)?;
        r.pairs.extend(x.pairs);
        r.within.extend(x.within);
        r.keys_scanned += x.keys_scanned;
    }
    if a.within.is_some() && rounds > 1 && shard.index == 0 {
        // Pairs inside a batch split in rounds: the self-join, also in bounded memory.
        let tmp = std::env::temp_dir();
        r.within = simdex::self_join(&batch, k, &tmp, a.mem, &simdex::ProgressHandle::none())?;
    }
    let el = t0.elapsed();
    match &a.out {
        Some(p) => write_file(p, &r.pairs)?,
        None => {
            let mut w = crate::util::stdout();
            write_pairs(&mut w, &r.pairs).map_err(crate::util::out_err)?;
            crate::util::flush(&mut w)?;
        }
    }
    if let Some(p) = &a.within {
        write_file(p, &r.within)?;
    }
    if !a.quiet {
        eprintln!(
            "batch of {} against {} stored (shard {}/{}): {} pairs, {} inside the batch; \
             {} stored keys decoded in {:.2?} ({:.1} M keys/s)",
            batch.len(),
            idx.len(),
            shard.index,
            shard.count,
            r.pairs.len(),
            r.within.len(),
            r.keys_scanned,
            el,
            r.keys_scanned as f64 / el.as_secs_f64() / 1e6
        );
    }
    Ok(())
}
