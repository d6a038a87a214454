//! Writing a generation: [`write_generation`] makes a new generation by stream-merging sources
//! (a generation and the layer of writes on top of it; two of them for `merge`): the id maps
//! are merged first, which tells which fingerprints lost their last id (dead) and which are
//! new; then each table is the merge of the old tables (same permutation, already sorted) minus
//! the dead plus the new, fed block by block into the table builder. Nothing is decoded whole
//! into memory; the only in-memory sets are the dead and new fingerprints, bounded by the
//! delta. A document store's map and shingle sets are written beside them (`write_docs`).

use std::path::Path;

use rayon::prelude::*;

use super::write_docs::{Relocation, write_docs};
use super::{Generation, IDS_NAME, dir_name};
use crate::design::Design;
use crate::error::{Error, Result};
use crate::index::manifest::{MANIFEST_NAME, Manifest, TableEntry};
use crate::progress::ProgressHandle;
use crate::store::delta::Layer;
use crate::store::docs::DOCS_NAME;
use crate::store::ids::{IDS_BLOCK_SIZE, IdMap, IdsWriter};

/// Shape of a generation to write.
#[derive(Debug, Clone)]
pub struct Layout {
    /// The design.
    pub design: Design,
    /// The codec of every table.
    pub codec: crate::codec::Codec,
    /// Block size; `None` = [`crate::design::auto_block_size`] for the generation's size.
    pub block_size: Option<u32>,
    /// A document store's generation: the document map's sketch size.
    pub sketch_bytes: Option<usize>,
    /// A document store's generation: whether it keeps shingle sets.
    pub sets: bool,
    /// Where a compaction may keep its generation's shingle sets file and append the new sets
    /// (instead of rewriting every set): while the dead bytes in it stay at most this fraction
    /// of the live ones. `None`: rewrite (a merge, a rebuild).
    pub sets_slack: Option<f64>,
}

/// One input of [`write_generation`]: a generation (if any) and the writes on top of it.
#[derive(Clone, Copy)]
pub struct Source<'a> {
    /// The compacted pairs.
    pub generation: Option<&'a Generation>,
    /// Writes after them.
    pub layer: &'a Layer,
}

/// What writing a generation (compaction, rebuild, merge, bulk load) wrote.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct GenerationSummary {
    /// Pairs in the new generation.
    pub pairs: u64,
    /// Distinct fingerprints.
    pub fingerprints: u64,
    /// Fingerprints that lost their last id.
    pub dropped: u64,
    /// Fingerprints no source generation had.
    pub added: u64,
    /// Bytes of tables and id map.
    pub bytes: u64,
}

/// Merge of sorted streams of (key, tag) with repeats.
fn kmerge<I: Iterator<Item = Result<T>>, T: Ord + Copy>(
    mut streams: Vec<std::iter::Peekable<I>>,
) -> impl Iterator<Item = Result<T>> {
    std::iter::from_fn(move || {
        let mut best: Option<(usize, T)> = None;
        for (i, s) in streams.iter_mut().enumerate() {
            match s.peek() {
                Some(Ok(v)) if best.is_none_or(|(_, b)| *v < b) => best = Some((i, *v)),
                Some(Err(_)) => return s.next(),
                _ => {}
            }
        }
        let (i, _) = best?;
        streams[i].next()
    })
}

pub(super) type BoxIter<'a, T> = Box<dyn Iterator<Item = Result<T>> + Send + 'a>;
/// A merge input of the id maps: (fingerprint, id, from a generation, survives).
type PairStream<'a> = std::iter::Peekable<BoxIter<'a, (u64, u64, bool, bool)>>;

/// Write generation `number` into `store_dir/gen-NNNNNN` (which must not exist) from `sources`,
/// shaped by `layout`. Built in a hidden staging directory and renamed into place; the caller
/// commits it by writing `CURRENT`. Also where a compaction put the shingle sets.
pub fn write_generation(
    store_dir: &Path,
    number: u64,
    layout: &Layout,
    sources: &[Source<'_>],
    mem_bytes: u64,
    progress: &ProgressHandle,
) -> Result<(GenerationSummary, Option<Relocation>)> {
    write_generation_with(
        store_dir, number, layout, sources, None, mem_bytes, progress,
    )
}

/// Pairs ascending by (fingerprint, id), for a bulk load.
pub type SortedPairs<'a> = Box<dyn Iterator<Item = Result<(u64, u64)>> + Send + 'a>;

/// [`write_generation`] with, besides the sources, `bulk`: pairs strictly ascending by
/// (fingerprint, id), merged in as new writes (an out-of-order pair is an error). Holds the
/// bulk's distinct fingerprints in memory (8 bytes each) while writing the tables.
pub fn write_generation_with(
    store_dir: &Path,
    number: u64,
    layout: &Layout,
    sources: &[Source<'_>],
    bulk: Option<SortedPairs<'_>>,
    mem_bytes: u64,
    progress: &ProgressHandle,
) -> Result<(GenerationSummary, Option<Relocation>)> {
    let staging = crate::atomic::StagedDir::new(&store_dir.join(dir_name(number)), "staging")?;

    // The document map (and the shingle sets) beside the id map and the tables: they read the
    // same sources and write other files, and the map is most of a compaction's writing.
    let docs_path = staging.path().join(DOCS_NAME);
    let (summary, relocation) = rayon::join(
        || write_index(staging.path(), layout, sources, bulk, mem_bytes, progress),
        || match layout.sketch_bytes {
            Some(sketch_bytes) => write_docs(&docs_path, sketch_bytes, layout, sources),
            None => Ok(None),
        },
    );
    let (summary, relocation) = (summary?, relocation?);
    staging.publish()?;
    Ok((summary, relocation))
}

/// The id map, the tables and the manifest of a generation written into `dir`, from `sources`
/// and `bulk` (see [`write_generation_with`]).
fn write_index(
    dir: &Path,
    layout: &Layout,
    sources: &[Source<'_>],
    bulk: Option<SortedPairs<'_>>,
    mem_bytes: u64,
    progress: &ProgressHandle,
) -> Result<GenerationSummary> {
    let ids_path = dir.join(IDS_NAME);
    // 1. The id map: merge every source's surviving pairs.
    let total: u64 = sources
        .iter()
        .map(|s| s.generation.map_or(0, |g| g.ids.pairs()) + s.layer.pair_count() as u64)
        .sum();
    let pb = progress;
    pb.stage("ids", Some(total))?;
    let mut streams: Vec<PairStream<'_>> = Vec::new();
    for s in sources {
        let layer = s.layer;
        if let Some(g) = s.generation {
            let it = g.ids.iter().map(move |p| {
                p.map(|(fp, id)| (fp, id, true, !layer.deletes(id)))
                    .map_err(|e| e.with_path(&g.dir.join(IDS_NAME)))
            });
            streams.push((Box::new(it) as BoxIter<'_, _>).peekable());
        }
        let it = layer.pairs().map(|(fp, id)| Ok((fp, id, false, true)));
        streams.push((Box::new(it) as BoxIter<'_, _>).peekable());
    }
    if let Some(bulk) = bulk {
        let mut prev: Option<(u64, u64)> = None;
        let it = bulk.map(move |p| {
            let (fp, id) = p?;
            if prev.is_some_and(|q| q >= (fp, id)) {
                return Err(Error::InvalidArgument(format!(
                    "bulk pairs must be strictly ascending: ({fp:016x}, {id}) after {:?}",
                    prev.map(|(f, i)| format!("({f:016x}, {i})"))
                )));
            }
            prev = Some((fp, id));
            Ok((fp, id, false, true))
        });
        streams.push((Box::new(it) as BoxIter<'_, _>).peekable());
    }
    let mut dead: Vec<u64> = Vec::new();
    let mut new: Vec<u64> = Vec::new();
    let (pairs, fingerprints) = crate::atomic::write_file(&ids_path, |w| {
        let mut iw = IdsWriter::new(w, IDS_BLOCK_SIZE)?;
        // Per fingerprint group: was it in some generation, does it keep an id?
        let mut group: Option<(u64, bool, bool)> = None;
        let mut last: Option<(u64, u64)> = None;
        let mut close = |g: Option<(u64, bool, bool)>| {
            if let Some((fp, in_gen, live)) = g {
                if in_gen && !live {
                    dead.push(fp);
                } else if live && !in_gen {
                    new.push(fp);
                }
            }
        };
        for (n, item) in kmerge(streams).enumerate() {
            let (fp, id, from_gen, survives) = item?;
            if n % (1 << 16) == 0 && n > 0 {
                pb.advance(1 << 16)?;
            }
            match &mut group {
                Some((gfp, in_gen, live)) if *gfp == fp => {
                    *in_gen |= from_gen;
                    *live |= survives;
                }
                g => {
                    let prev = g.take();
                    close(prev);
                    *g = Some((fp, from_gen, survives));
                }
            }
            if survives && last != Some((fp, id)) {
                iw.add(fp, id)?;
                last = Some((fp, id));
            }
        }
        close(group);
        let (_, pairs, fps) = iw.finish()?;
        Ok((pairs, fps))
    })
    .map_err(|e| e.with_path(&ids_path))?;
    pb.finish();
    // 2. The tables.
    let n = fingerprints;
    let design = &layout.design;
    let t = design.tables().len();
    let block_size = layout
        .block_size
        .unwrap_or_else(|| crate::design::auto_block_size(n, t));
    let same_design = sources
        .iter()
        .filter_map(|s| s.generation)
        .all(|g| g.index.design() == design);
    let writer = crate::index::writer::IndexWriter::new(
        dir,
        design,
        layout.codec,
        block_size,
        crate::design::auto_segment_keys(block_size),
        Some((n, crate::design::ALIGN_MIN_RUN)),
    );
    let entries: Vec<TableEntry> = if same_design {
        let pb = progress;
        pb.stage("tables", Some(n * t as u64))?;
        let gens: Vec<&Generation> = sources.iter().filter_map(|s| s.generation).collect();
        // A table's builder reads its keys twice (the code's histogram, then the blocks): the
        // merge of the old tables (each key decoded) and the delta, made once and held where
        // the tables merged at a time fit in an eighth of the memory budget, else made twice
        // (measured at 1M documents: the merges went from 3% of an exact ingest's CPU to 1.5%).
        let at_once = rayon::current_num_threads().min(t).max(1) as u64;
        let buffered = n.saturating_mul(8).saturating_mul(at_once) <= mem_bytes / 8;
        let entries = (0..t)
            .into_par_iter()
            .map(|i| -> Result<TableEntry> {
                let perm = &design.tables()[i].permutation;
                let mut dead_p: Vec<u64> = dead.iter().map(|&f| perm.apply(f)).collect();
                dead_p.sort_unstable();
                let mut new_p: Vec<u64> = new.iter().map(|&f| perm.apply(f)).collect();
                new_p.sort_unstable();
                let pass = || -> Result<BoxIter<'_, u64>> {
                    let mut streams: Vec<std::iter::Peekable<BoxIter<'_, u64>>> = gens
                        .iter()
                        .map(|g| {
                            (Box::new(g.index.tables()[i].iter()) as BoxIter<'_, u64>).peekable()
                        })
                        .collect();
                    streams.push(
                        (Box::new(new_p.iter().map(|&k| Ok(k))) as BoxIter<'_, u64>).peekable(),
                    );
                    let mut d = 0usize;
                    let mut last = None;
                    let dead_p = &dead_p;
                    Ok(Box::new(kmerge(streams).filter(move |k| {
                        let Ok(k) = k else { return true };
                        if last == Some(*k) {
                            return false;
                        }
                        last = Some(*k);
                        while d < dead_p.len() && dead_p[d] < *k {
                            d += 1;
                        }
                        !(d < dead_p.len() && dead_p[d] == *k)
                    })))
                };
                let (entry, keys) = match buffered {
                    true => {
                        let keys: Vec<u64> = pass()?.collect::<Result<_>>()?;
                        (writer.write_sorted_table(i, &keys)?, keys.len() as u64)
                    }
                    false => {
                        let (entry, summary) = writer.write_table(i, pass)?;
                        (entry, summary.keys)
                    }
                };
                if keys != n {
                    return Err(Error::corrupt(
                        format!("merged table {i}"),
                        0,
                        format!("{n} keys (the id map's fingerprints)"),
                        format!("{keys} keys"),
                    ));
                }
                pb.advance(n)?;
                Ok(entry)
            })
            .collect::<Result<Vec<_>>>()?;
        pb.finish();
        entries
    } else {
        // A new design: the old tables' orders are of no use; build from the id map's
        // fingerprints with the external-sort builder, then move its files here.
        let map = IdMap::open(&ids_path)?;
        let mut prev = None;
        let fps = map.iter().filter_map(move |p| match p {
            Ok((fp, _)) if prev == Some(fp) => None,
            Ok((fp, _)) => {
                prev = Some(fp);
                Some(Ok(fp))
            }
            Err(e) => Some(Err(e)),
        });
        let tmp = dir.join("index");
        let opts = crate::index::BuildOptions::default()
            .with_k(design.k())
            .with_design(crate::index::DesignChoice::Given(design.clone()))
            .with_block_size(Some(block_size))
            .with_codec(layout.codec)
            .with_mem_bytes(mem_bytes.max(crate::index::build::MIN_MEM))
            .with_progress(progress.clone());
        crate::index::build(&tmp, fps, &opts)?;
        let built = Manifest::decode(
            &std::fs::read(tmp.join(MANIFEST_NAME))
                .map_err(|e| Error::io(tmp.join(MANIFEST_NAME), "read", e))?,
        )?;
        for e in &built.tables {
            std::fs::rename(tmp.join(&e.file), dir.join(&e.file))
                .map_err(|err| Error::io(tmp.join(&e.file), "move table", err))?;
        }
        std::fs::remove_dir_all(&tmp).map_err(|e| Error::io(tmp.clone(), "remove", e))?;
        built.tables
    };
    let bytes = entries.iter().map(|e| e.bytes).sum::<u64>()
        + std::fs::metadata(&ids_path)
            .map_err(|e| Error::io(ids_path.clone(), "stat", e))?
            .len();
    writer.finish(n, entries)?;
    Ok(GenerationSummary {
        pairs,
        fingerprints,
        dropped: dead.len() as u64,
        added: new.len() as u64,
        bytes,
    })
}
