//! `simdex build`: fingerprints in, index directory out.

use std::path::PathBuf;

use crate::input::{FingerprintReader, Format};
use simdex::Result;
use simdex::{BuildOptions, DesignChoice};

use crate::util::{human_bytes, parse_size};

/// Arguments of `simdex build`.
#[derive(clap::Args)]
pub struct Args {
    /// Input fingerprints (`-` for standard input).
    #[arg(long)]
    pub input: PathBuf,
    /// Input format: hex (16 hex digits per line) or u64 (little-endian 8-byte words).
    #[arg(long, default_value = "hex")]
    pub format: Format,
    /// Index directory to create (must not exist).
    #[arg(long)]
    pub out: PathBuf,
    #[command(flatten)]
    pub layout: LayoutArgs,
    /// Memory budget for sorting, e.g. 512M, 1G.
    #[arg(long, default_value = "1G", value_parser = parse_size)]
    pub mem: u64,
    /// No progress bar and no summary.
    #[arg(long)]
    pub quiet: bool,
}

/// How an index is laid out: shared by `build` and `demo`.
#[derive(clap::Args)]
pub struct LayoutArgs {
    /// Largest query distance the index must answer exactly (0..=7).
    #[arg(long, default_value_t = 3)]
    pub k: u32,
    /// Table design: auto, the paper's 20, 16, 10 or 4 (k = 3), m<M>c<C>r<R> or m<M1>x<M2>.
    #[arg(long, default_value = "auto")]
    pub design: String,
    /// Block size in bytes (power of two, 128..=65536), or auto: 4096 for an index of up to
    /// 1 GiB, else the smallest of 1024..4096 whose in-memory last-key arrays (and their
    /// directories) fit in 2 GiB (small blocks, fast queries; large at billions).
    #[arg(long, default_value = "auto")]
    pub block_size: String,
    /// Keys per segment of a block (format 3: a skip entry every N keys, so that a probe
    /// decodes about N / 2 keys to reach its range, however large the block), 0 for none
    /// (format 1), or auto: 20 for blocks of 1024..=8192 bytes, else none; and where a
    /// table's prefix runs average 8 keys or more, segments that start at each run's first
    /// key (format 4), so that a probe decodes its run alone.
    #[arg(long, default_value = "auto")]
    pub segment_keys: String,
    /// Codec of the tables: h-delta (the paper's, default) or gap (smaller, see docs/log/benchmarks.md).
    #[arg(long, default_value = "h-delta")]
    pub codec: simdex::raw::Codec,
}

impl LayoutArgs {
    /// The build options these arguments ask for.
    pub fn options(&self, mem_bytes: u64, progress: bool) -> Result<BuildOptions> {
        Ok(BuildOptions::default()
            .with_k(self.k)
            .with_design(match self.design.as_str() {
                "auto" => DesignChoice::Auto,
                name => DesignChoice::Named(name.to_string()),
            })
            .with_block_size(crate::util::parse_block_size(&self.block_size)?)
            .with_segment_keys(crate::util::parse_segment_keys(&self.segment_keys)?)
            .with_codec(self.codec)
            .with_mem_bytes(mem_bytes)
            .with_progress(crate::progress::handle(progress)))
    }
}

/// Run.
pub fn run(a: Args) -> Result<()> {
    let opts = a.layout.options(a.mem, !a.quiet)?;
    let input = FingerprintReader::open(&a.input, a.format)?;
    let s = simdex::build_index(&a.out, input, &opts)?;
    if !a.quiet {
        eprintln!(
            "built {}: {} fingerprints read, {} distinct; design {} ({} tables, k = {}, block size {}{}); \
             {} on disk ({:.2} bits per fingerprint per table){}; {:.2?}",
            a.out.display(),
            s.input,
            s.keys,
            s.design.name(),
            s.design.tables().len(),
            s.design.k(),
            s.block_size,
            crate::util::segments_note(s.segment_keys, s.aligned_tables, s.design.tables().len()),
            human_bytes(s.table_bytes as f64),
            s.table_bytes as f64 * 8.0 / s.keys.max(1) as f64 / s.design.tables().len() as f64,
            if s.external { "; external sort" } else { "" },
            s.elapsed
        );
    }
    Ok(())
}
