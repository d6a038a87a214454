//! `simdex idf`: per-feature weights learned from a corpus.

use std::io::Write;
use std::path::PathBuf;

use rayon::prelude::*;
use simdex::simhash::{IdfTable, SimhashOptions, Simhasher};
use simdex::{Error, Result};

use crate::docs::*;

/// Arguments of `simdex idf`.
#[derive(clap::Args)]
pub struct IdfArgs {
    #[command(flatten)]
    pub docs: DocArgs,
    /// Output file (written atomically).
    #[arg(long)]
    pub out: PathBuf,
}

/// Run `idf`: learn per-feature weights from a corpus.
pub fn idf(a: IdfArgs) -> Result<()> {
    let h = Simhasher::new(
        SimhashOptions::default()
            .with_shingle(a.docs.shingle)
            .with_weights(None),
    )?;
    let mut feats: Vec<Vec<u64>> = Vec::new();
    read_docs(&a.docs, |chunk| {
        feats.par_extend(chunk.par_iter().map(|d| {
            h.features(&d.text)
                .into_iter()
                .map(|(f, _)| f)
                .collect::<Vec<u64>>()
        }));
        Ok(())
    })?;
    let t = IdfTable::build(a.docs.shingle, feats.iter().map(|v| &v[..]));
    crate::output::write_output(&a.out, |w| {
        w.write_all(t.encode().as_bytes())
            .map_err(|e| Error::io(a.out.clone(), "write", e))
    })?;
    if !a.docs.quiet {
        eprintln!(
            "learned weights of {} features from {} documents into {}",
            t.len(),
            t.docs(),
            a.out.display()
        );
    }
    Ok(())
}
