//! `simdex idf`: per-feature weights learned from a corpus.

use std::io::Write;
use std::path::PathBuf;

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

/// Run `idf`: learn per-feature weights from a corpus (its IDF sample, as `dedup` does).
pub fn idf(mut a: IdfArgs) -> Result<()> {
    crate::output::check_output(&a.out)?;
    let t = a.docs.learn_corpus_idf()?;
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
