//! `simdex designs`: the candidate designs for (n, k) and what each costs.

use simdex::Design;
use simdex::Result;

use crate::util::human_bytes;

/// Arguments of `simdex designs`.
#[derive(clap::Args)]
pub struct Args {
    /// Number of fingerprints.
    #[arg(long, default_value_t = 8_000_000_000)]
    pub n: u64,
    /// Query distance.
    #[arg(long, default_value_t = 3)]
    pub k: u32,
    /// Block size in bytes, or auto (per design, as `build` picks it).
    #[arg(long, default_value = "auto")]
    pub block_size: String,
    /// Largest table count to list.
    #[arg(long, default_value_t = simdex::Design::DEFAULT_MAX_TABLES)]
    pub max_tables: usize,
}

/// Run.
pub fn run(a: Args) -> Result<()> {
    let fixed = crate::util::parse_block_size(&a.block_size)?;
    let block_for = |d: &Design| {
        fixed.unwrap_or_else(|| simdex::Design::auto_block_size(a.n, d.tables().len()))
    };
    let auto = Design::auto_with_budget(
        a.n,
        a.k,
        a.max_tables,
        fixed.unwrap_or(simdex::Design::AUTO_BLOCK_SIZES[0]),
    )?;
    crate::outln!(
        "designs for n = {}, k = {}, block size {} (model: ns per query on the reference machine)",
        a.n,
        a.k,
        a.block_size
    )?;
    crate::outln!(
        "  {:<10} {:>6} {:>8} {:>6} {:>6} {:>8} {:>14} {:>12} {:>12} {:>12}",
        "design",
        "tables",
        "prefix",
        "radius",
        "B",
        "probes",
        "cand/probe",
        "model ns",
        "disk",
        "memory"
    )?;
    let mut all = Design::candidates(a.k, a.max_tables);
    all.sort_by(|x, y| {
        x.tables()
            .len()
            .cmp(&y.tables().len())
            .then(x.name().cmp(y.name()))
    });
    for d in &all {
        let b = block_for(d);
        let c = d.cost(a.n, b);
        let (pmin, pmax) = d.tables().iter().fold((64, 0), |(lo, hi), t| {
            (lo.min(t.prefix_bits), hi.max(t.prefix_bits))
        });
        let prefix = if pmin == pmax {
            pmin.to_string()
        } else {
            format!("{pmin}-{pmax}")
        };
        crate::outln!(
            "{} {:<10} {:>6} {:>8} {:>6} {:>6} {:>8.0} {:>14.3} {:>12.0} {:>12} {:>12}",
            if d.tables() == auto.tables() && d.radius() == auto.radius() {
                "*"
            } else {
                " "
            },
            d.name(),
            d.tables().len(),
            prefix,
            d.radius(),
            b,
            c.probes,
            c.candidates / c.probes,
            c.work_ns,
            human_bytes(c.disk_bytes),
            human_bytes(c.memory_bytes)
        )?;
    }
    crate::outln!("(* marks the design `--design auto` picks)")?;
    Ok(())
}
