//! Writing a generation: [`write_generation`] makes a new generation by stream-merging sources
//! (a generation and the layer of writes on top of it; two of them for `merge`): the id maps
//! are merged first, which tells which fingerprints lost their last id (dead) and which are
//! new; then each table is the merge of the old tables (same permutation, already sorted) minus
//! the dead plus the new, fed block by block into the table builder. Nothing is decoded whole
//! into memory; the only in-memory sets are the dead and new fingerprints, bounded by the
//! delta.

use std::path::Path;

use rayon::prelude::*;

use super::{Generation, IDS_NAME, dir_name};
use crate::design::Design;
use crate::error::{Error, Result};
use crate::index::manifest::{MANIFEST_NAME, Manifest, TableEntry};
use crate::progress::ProgressHandle;
use crate::store::delta::Layer;
use crate::store::docs::{DOCS_NAME, DocMeta, DocsWriter};
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

type BoxIter<'a, T> = Box<dyn Iterator<Item = Result<T>> + Send + 'a>;
/// A merge input of the id maps: (fingerprint, id, from a generation, survives).
type PairStream<'a> = std::iter::Peekable<BoxIter<'a, (u64, u64, bool, bool)>>;

/// Write generation `number` into `store_dir/gen-NNNNNN` (which must not exist) from `sources`,
/// shaped by `layout`. Built in a hidden staging directory and renamed into place; the caller
/// commits it by writing `CURRENT`.
pub fn write_generation(
    store_dir: &Path,
    number: u64,
    layout: &Layout,
    sources: &[Source<'_>],
    mem_bytes: u64,
    progress: &ProgressHandle,
) -> Result<GenerationSummary> {
    write_generation_with(
        store_dir, number, layout, sources, None, mem_bytes, progress,
    )
}

/// Write the document map of the merged sources: per id, the newest document (a later source
/// over an earlier one, a layer over its generation), without the ids a layer deleted.
fn write_docs(path: &Path, sketch_bytes: usize, sets: bool, sources: &[Source<'_>]) -> Result<()> {
    type DocStream<'a> = std::iter::Peekable<BoxIter<'a, (u64, DocMeta)>>;
    let mut streams: Vec<DocStream<'_>> = Vec::new();
    for s in sources {
        let layer = s.layer;
        if let Some(d) = s.generation.and_then(|g| g.docs.as_ref()) {
            let dir = s.generation.map(|g| g.dir.join(DOCS_NAME));
            let it = d
                .iter()
                .filter(move |r| !matches!(r, Ok((id, _)) if layer.doc(*id).is_some()))
                .map(move |r| r.map_err(|e| e.with_path(dir.as_deref().unwrap_or(path))));
            streams.push((Box::new(it) as BoxIter<'_, _>).peekable());
        }
        let mine: Vec<(u64, DocMeta)> = layer
            .docs_sorted()
            .into_iter()
            .map(|(i, d)| (i, d.clone()))
            .collect();
        streams.push((Box::new(mine.into_iter().map(Ok)) as BoxIter<'_, _>).peekable());
    }
    // The map, and beside it (written first, so that a map is never published without them)
    // the shingle sets its entries point to.
    if sets {
        let sets_path = path.with_file_name(super::super::sets::SETS_NAME);
        return crate::atomic::write_file(&sets_path, |sw| {
            crate::atomic::write_file(path, |w| {
                let mut dw = DocsWriter::with_sets(w, sketch_bytes, &mut *sw)?;
                merge_docs(&mut streams, |id, d| dw.add(id, d))?;
                dw.finish_with_sets().map(|_| ())
            })
            .map_err(|e| e.with_path(path))
        })
        .map_err(|e| e.with_path(&sets_path));
    }
    crate::atomic::write_file(path, |w| {
        let mut dw = DocsWriter::new(w, sketch_bytes)?;
        merge_docs(&mut streams, |id, d| dw.add(id, d))?;
        dw.finish().map(|_| ())
    })
    .map_err(|e| e.with_path(path))
}

/// Merge document streams (each ascending by id) into `add`, in id order: of equal ids, the
/// last stream's document.
fn merge_docs<I: Iterator<Item = Result<(u64, DocMeta)>>>(
    streams: &mut [std::iter::Peekable<I>],
    mut add: impl FnMut(u64, &DocMeta) -> Result<()>,
) -> Result<()> {
    loop {
        let mut best: Option<u64> = None;
        for s in streams.iter_mut() {
            match s.peek() {
                Some(Ok((id, _))) if best.is_none_or(|b| *id < b) => best = Some(*id),
                Some(Err(_)) => return Err(s.next().and_then(|r| r.err()).unwrap()),
                _ => {}
            }
        }
        let Some(id) = best else { return Ok(()) };
        let mut doc = None;
        for s in streams.iter_mut() {
            if matches!(s.peek(), Some(Ok((i, _))) if *i == id) {
                doc = s.next().and_then(|r| r.ok()).map(|(_, d)| d);
            }
        }
        if let Some(d) = doc {
            add(id, &d)?;
        }
    }
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
) -> Result<GenerationSummary> {
    let staging = crate::atomic::StagedDir::new(&store_dir.join(dir_name(number)), "staging")?;

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
    let ids_path = staging.path().join(IDS_NAME);
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
    if let Some(sketch_bytes) = layout.sketch_bytes {
        write_docs(
            &staging.path().join(DOCS_NAME),
            sketch_bytes,
            layout.sets,
            sources,
        )?;
    }

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
        staging.path(),
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
                let (entry, summary) = writer.write_table(i, pass)?;
                if summary.keys != n {
                    return Err(Error::corrupt(
                        format!("merged table {i}"),
                        0,
                        format!("{n} keys (the id map's fingerprints)"),
                        format!("{} keys", summary.keys),
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
        let tmp = staging.path().join("index");
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
            std::fs::rename(tmp.join(&e.file), staging.path().join(&e.file))
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
    staging.publish()?;
    Ok(GenerationSummary {
        pairs,
        fingerprints,
        dropped: dead.len() as u64,
        added: new.len() as u64,
        bytes,
    })
}
