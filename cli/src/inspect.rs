//! `simdex stats` and `simdex verify`.

use std::io::Write;
use std::path::PathBuf;
use std::time::Instant;

use simdex::{Index, Result};

use crate::util::human_bytes;

/// Arguments of `simdex stats`.
#[derive(clap::Args)]
pub struct StatsArgs {
    /// Index or store directory.
    pub dir: PathBuf,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
}

/// Arguments of `simdex verify`.
#[derive(clap::Args)]
pub struct VerifyArgs {
    /// Index or store directory.
    pub dir: PathBuf,
}

/// Run `stats`.
pub fn stats(a: StatsArgs) -> Result<()> {
    if simdex::Store::is_store(&a.dir) {
        return store_stats(a);
    }
    let idx = Index::open(&a.dir)?;
    let s = idx.stats();
    let raw = s.keys as f64 * 8.0;
    let mut w = crate::util::stdout();
    let r = if a.json {
        writeln!(
            w,
            "{{\"fingerprints\":{},\"design\":\"{}\",\"k\":{},\"radius\":{},\"tables\":{},\"block_size\":{},\"segment_keys\":{},\"aligned_tables\":{},\
             \"disk_bytes\":{},\"bits_per_fingerprint_per_table\":{:.4},\"information_bound_bits\":{:.4},\
             \"memory_bytes\":{},\"probes_per_query\":{}}}",
            s.keys,
            s.design,
            s.k,
            s.radius,
            s.tables,
            s.block_size,
            s.segment_keys,
            s.aligned_tables,
            s.disk_bytes,
            s.bits_per_key_per_table,
            simdex::raw::Table::information_bound(s.keys),
            s.memory_bytes,
            s.probes_per_query
        )
    } else {
        writeln!(w, "index            {}", a.dir.display())
            .and_then(|_| writeln!(w, "fingerprints     {}", s.keys))
            .and_then(|_| {
                writeln!(
                    w,
                    "design           {} ({} tables, k = {}, probe radius {}, {} probes per query)",
                    s.design, s.tables, s.k, s.radius, s.probes_per_query
                )
            })
            .and_then(|_| {
                writeln!(
                    w,
                    "block size       {} bytes{}",
                    s.block_size,
                    crate::util::segments_note(s.segment_keys, s.aligned_tables, s.tables)
                )
            })
            .and_then(|_| {
                writeln!(
                    w,
                    "disk             {} ({:.2} bits per fingerprint per table; information bound {:.2}; raw 64)",
                    human_bytes(s.disk_bytes as f64),
                    s.bits_per_key_per_table,
                    simdex::raw::Table::information_bound(s.keys)
                )
            })
            .and_then(|_| {
                writeln!(
                    w,
                    "per table        {:.1}% of raw ({} raw)",
                    s.bits_per_key_per_table / 64.0 * 100.0,
                    human_bytes(raw)
                )
            })
            .and_then(|_| writeln!(w, "reader memory    {}", human_bytes(s.memory_bytes as f64)))
    };
    r.map_err(crate::util::out_err)?;
    crate::util::flush(&mut w)
}

/// A store's sizes, then its live generation's index stats.
fn store_stats(a: StatsArgs) -> Result<()> {
    let store = crate::util::open_store_read_only(&a.dir)?;
    let s = store.stats();
    if a.json {
        crate::outln!(
            "{{\"generation\":{},\"design\":\"{}\",\"k\":{},\"fingerprints\":{},\"pairs\":{},\
             \"delta_pairs\":{},\"delta_deletes\":{},\"table_bytes\":{},\"id_map_bytes\":{},\"log_bytes\":{},\
             \"documents\":{},\"doc_map_bytes\":{},\"sets_bytes\":{},\"sets_live_bytes\":{},\"max_seq\":{}}}",
            s.generation,
            s.design,
            s.k,
            s.fingerprints,
            s.pairs,
            s.delta_pairs,
            s.delta_deletes,
            s.table_bytes,
            s.id_map_bytes,
            s.log_bytes,
            s.documents,
            s.doc_map_bytes,
            s.sets_bytes,
            s.sets_live_bytes,
            s.max_seq
        )?;
        return Ok(());
    }
    crate::outln!("store            {}", a.dir.display())?;
    crate::outln!(
        "generation       {} ({} pairs, {} fingerprints)",
        s.generation,
        s.pairs,
        s.fingerprints
    )?;
    crate::outln!(
        "delta            {} pairs inserted, {} ids deleted; log {}",
        s.delta_pairs,
        s.delta_deletes,
        human_bytes(s.log_bytes as f64)
    )?;
    crate::outln!(
        "id map           {} ({:.2} bytes per pair)",
        human_bytes(s.id_map_bytes as f64),
        s.id_map_bytes as f64 / s.pairs.max(1) as f64
    )?;
    if let Some(r) = store.recipe() {
        crate::outln!(
            "documents        {} in the map, {} ({:.2} bytes per document); recipe: {}-shingles, \
             {}, weights {}, sketches {}x{} bits",
            s.documents,
            human_bytes(s.doc_map_bytes as f64),
            s.doc_map_bytes as f64 / s.documents.max(1) as f64,
            r.shingle(),
            if r.html() { "HTML" } else { "text" },
            if r.weights().is_some() {
                "idf"
            } else {
                "count"
            },
            r.sketch_shape().bins(),
            r.sketch_shape().bits()
        )?;
        match r.exact() {
            Some(t) => {
                crate::outln!(
                    "shingle sets     {} ({:.2} bytes per document; {} dead, reclaimed by \
                     compaction): verification at {t} or above is exact",
                    human_bytes(s.sets_bytes as f64),
                    s.sets_bytes as f64 / s.documents.max(1) as f64,
                    human_bytes(s.sets_bytes.saturating_sub(16 + s.sets_live_bytes) as f64)
                )?;
                crate::outln!(
                    "seq              {} (of the latest document stored; `delete --before-seq`)",
                    s.max_seq
                )?;
            }
            None => crate::outln!(
                "shingle sets     none: verification compares sketches (an estimate)"
            )?,
        }
    }
    stats(StatsArgs {
        dir: store.generation_dir(),
        json: false,
    })
}

/// Run `verify`.
pub fn verify(a: VerifyArgs) -> Result<()> {
    let t0 = Instant::now();
    if simdex::Store::is_store(&a.dir) {
        let store = crate::util::open_store_read_only(&a.dir)?;
        store.verify()?;
        if let Some((path, at, n)) = store.recovery().torn.first() {
            return Err(simdex::Error::corrupt(
                "log tail",
                *at,
                "whole, valid records to the end of the log",
                format!("{n} bytes that are not one (see the warning above)"),
            )
            .with_path(path));
        }
        let s = store.stats();
        crate::outln!(
            "ok: generation {} ({} pairs, {} fingerprints): every checksum valid, tables and id \
             map agree; {} logged writes replayed ({:.2?})",
            s.generation,
            s.pairs,
            s.fingerprints,
            store.recovery().records,
            t0.elapsed()
        )?;
        return Ok(());
    }
    let idx = Index::open(&a.dir)?;
    let r = idx.verify()?;
    crate::outln!(
        "ok: {} tables, {} keys decoded, every checksum and structure valid ({:.2?})",
        r.tables,
        r.keys_decoded,
        t0.elapsed()
    )?;
    Ok(())
}
