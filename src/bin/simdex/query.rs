//! `simdex query`: near-duplicate lookups, one output line per match.

use std::io::Write;
use std::path::PathBuf;

use simdex::input::{FingerprintReader, Format};
use simdex::{Index, Result, Store};

/// Arguments of `simdex query`.
#[derive(clap::Args)]
pub struct Args {
    /// Index or store directory.
    pub dir: PathBuf,
    /// Largest distance to report (default: the index's k).
    #[arg(long)]
    pub k: Option<u32>,
    /// Query fingerprints (`-` for standard input).
    #[arg(long, default_value = "-")]
    pub input: PathBuf,
    /// Input format: hex or u64.
    #[arg(long, default_value = "hex")]
    pub format: Format,
    /// One JSON object per query instead of one tab-separated line per match.
    #[arg(long)]
    pub json: bool,
}

/// Queries answered per parallel batch.
const BATCH: usize = 1 << 14;

/// Run.
pub fn run(a: Args) -> Result<()> {
    if Store::is_store(&a.dir) {
        return run_store(a);
    }
    let idx = Index::open(&a.dir)?;
    let k = a.k.unwrap_or(idx.design().k());
    let mut input = FingerprintReader::open(&a.input, a.format)?;
    let mut w = crate::util::stdout();
    let mut batch = Vec::with_capacity(BATCH);
    loop {
        batch.clear();
        for q in input.by_ref().take(BATCH) {
            batch.push(q?);
        }
        if batch.is_empty() {
            break;
        }
        let results = idx.near_many(&batch, k)?;
        for (q, ms) in batch.iter().zip(results) {
            if a.json {
                let items: Vec<String> = ms
                    .iter()
                    .map(|m| {
                        format!(
                            "{{\"fingerprint\":\"{:016x}\",\"distance\":{}}}",
                            m.fingerprint, m.distance
                        )
                    })
                    .collect();
                writeln!(
                    w,
                    "{{\"query\":\"{q:016x}\",\"matches\":[{}]}}",
                    items.join(",")
                )
            } else {
                ms.iter().try_for_each(|m| {
                    writeln!(w, "{q:016x}\t{:016x}\t{}", m.fingerprint, m.distance)
                })
            }
            .map_err(crate::util::out_err)?;
        }
    }
    crate::util::flush(&mut w)
}

/// Queries against a store: matches carry their document ids (`query fp distance id,id,...`).
fn run_store(a: Args) -> Result<()> {
    let store = Store::open_read_only(&a.dir)?;
    let k =
        a.k.unwrap_or_else(|| store.generation().index().design().k());
    let mut input = FingerprintReader::open(&a.input, a.format)?;
    let mut w = crate::util::stdout();
    for q in input.by_ref() {
        let q = q?;
        let ms = store.near(q, k)?;
        let ids = |m: &simdex::StoreMatch| {
            m.ids
                .iter()
                .map(|i| i.to_string())
                .collect::<Vec<_>>()
                .join(",")
        };
        if a.json {
            let items: Vec<String> = ms
                .iter()
                .map(|m| {
                    format!(
                        "{{\"fingerprint\":\"{:016x}\",\"distance\":{},\"ids\":[{}]}}",
                        m.fingerprint,
                        m.distance,
                        ids(m)
                    )
                })
                .collect();
            writeln!(
                w,
                "{{\"query\":\"{q:016x}\",\"matches\":[{}]}}",
                items.join(",")
            )
        } else {
            ms.iter().try_for_each(|m| {
                writeln!(
                    w,
                    "{q:016x}\t{:016x}\t{}\t{}",
                    m.fingerprint,
                    m.distance,
                    ids(m)
                )
            })
        }
        .map_err(crate::util::out_err)?;
    }
    crate::util::flush(&mut w)
}
