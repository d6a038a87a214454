//! `simdex hash`: documents to fingerprints.

use std::io::Write;

use simdex::Result;

use crate::docs::*;

/// Arguments of `simdex hash`.
#[derive(clap::Args)]
pub struct HashArgs {
    #[command(flatten)]
    pub docs: DocArgs,
}

/// Run `hash`: `fingerprint_hex<TAB>id` per document.
pub fn hash(a: HashArgs) -> Result<()> {
    let mut w = crate::util::stdout();
    let (n, bad) = for_each_doc(&a.docs, |fp, d| {
        writeln!(w, "{:016x}\t{}", fp.unwrap_or(0), d.id).map_err(crate::util::out_err)
    })?;
    crate::util::flush(&mut w)?;
    if !a.docs.quiet && bad > 0 {
        eprintln!("hashed {n} documents; skipped {bad} bad lines");
    }
    Ok(())
}
