//! `simdex gen`: deterministic sample fingerprints.

use std::io::Write;
use std::path::PathBuf;

use crate::input::Format;
use simdex::{Error, Result};

/// Arguments of `simdex gen`.
#[derive(clap::Args)]
pub struct Args {
    /// Random fingerprints to generate.
    #[arg(long, default_value_t = 1_000_000)]
    pub n: u64,
    /// How many of them get planted near-duplicates.
    #[arg(long, default_value_t = 1000)]
    pub planted: u64,
    /// Distances of the planted near-duplicates (one of each per planted fingerprint; 1..=64).
    #[arg(long, value_delimiter = ',', default_value = "1,2,3,4", value_parser = clap::value_parser!(u32).range(1..=64))]
    pub distances: Vec<u32>,
    /// Seed; the same seed gives the same output.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Output format: hex (one per line) or u64 (little-endian words).
    #[arg(long, default_value = "hex")]
    pub format: Format,
    /// Output file (written atomically); standard output if absent or `-`.
    #[arg(long)]
    pub out: Option<PathBuf>,
}

fn write_all(w: &mut impl Write, fps: &[u64], format: Format) -> std::io::Result<()> {
    for &x in fps {
        match format {
            Format::Hex => writeln!(w, "{x:016x}")?,
            Format::U64 => w.write_all(&x.to_le_bytes())?,
        }
    }
    Ok(())
}

/// Most fingerprints one `gen` makes: it holds them in memory (8 bytes each, 8 GiB here).
const MAX_GEN: u64 = 1 << 30;

/// Run.
pub fn run(a: Args) -> Result<()> {
    let planted = a.planted.min(a.n).saturating_mul(a.distances.len() as u64);
    if a.n.saturating_add(planted) > MAX_GEN {
        return Err(Error::InvalidArgument(format!(
            "--n {} (plus {planted} planted) is over the budget of {MAX_GEN} fingerprints per \
             run (they are held in memory, 8 bytes each): write several files with different \
             --seed values and concatenate them",
            a.n
        )));
    }
    let fps = simdex::raw::with_planted(a.n, a.planted, &a.distances, a.seed)?;
    match a.out.as_deref() {
        None => {}
        Some(p) if p.as_os_str() == "-" => {}
        Some(p) => {
            return crate::output::write_output(p, |w| {
                write_all(w, &fps, a.format).map_err(|e| Error::io(p.to_path_buf(), "write", e))
            });
        }
    }
    let mut w = crate::util::stdout();
    write_all(&mut w, &fps, a.format).map_err(crate::util::out_err)?;
    crate::util::flush(&mut w)
}
