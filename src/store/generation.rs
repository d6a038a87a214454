//! Generations: immutable snapshots of a store's compacted pairs.
//!
//! Generation N is the directory `gen-NNNNNN/`: an ordinary index (`MANIFEST` plus one table per
//! design table, `format-spec/index.md`) and the id map `IDS`. The file `CURRENT` names the live
//! generation; replacing it (write temp, fsync, rename, fsync dir) is the commit point of a
//! compaction. A generation replaced by a newer one is *retired*: its directory is removed when
//! the last reader holding it (an `Arc<Generation>`) lets go.
//!
//! [`write_generation`] makes a new generation by stream-merging sources (a generation and the
//! layer of writes on top of it; two of them for `merge`): the id maps are merged first, which
//! tells which fingerprints lost their last id (dead) and which are new; then each table is the
//! merge of the old tables (same permutation, already sorted) minus the dead plus the new, fed
//! block by block into the table builder. Nothing is decoded whole into memory; the only
//! in-memory sets are the dead and new fingerprints, bounded by the delta.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};

use memmap2::Mmap;
use rayon::prelude::*;

use super::delta::Layer;
use super::docs::{DOCS_NAME, DocMap, DocMeta, DocsWriter};
use super::ids::{IDS_BLOCK_SIZE, IdMap, IdsWriter};
use crate::design::Design;
use crate::error::{Error, Result};
use crate::index::manifest::{MANIFEST_NAME, Manifest, TableEntry};
use crate::index::{Index, OpenOptions};
use crate::progress::ProgressHandle;

/// File naming the live generation.
pub const CURRENT_NAME: &str = "CURRENT";
/// File name of a generation's id map.
pub const IDS_NAME: &str = "IDS";
/// Store format version of a store of raw fingerprints (the `CURRENT` file's first line).
pub const STORE_VERSION: u32 = 1;
/// Store format version of a document store: a `RECIPE`, and a document map `DOCS` in every
/// generation. Older readers refuse it rather than compact its documents away.
pub const DOC_STORE_VERSION: u32 = 2;

/// Directory name of generation `n`.
pub fn dir_name(n: u64) -> String {
    format!("gen-{n:06}")
}

/// The parsed `CURRENT` file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Current {
    /// Store format version: [`STORE_VERSION`], or [`DOC_STORE_VERSION`] for a document store.
    pub version: u32,
    /// The live generation.
    pub generation: u64,
    /// Block size policy for new generations: `None` = automatic per generation size.
    pub block_size: Option<u32>,
}

impl Current {
    /// Serialize (sealed text: the last line is a crc32 of the lines before it).
    pub fn encode(&self) -> String {
        crate::sealed::seal(format!(
            "simdex-store {}\ngeneration {}\nblock-size {}\n",
            self.version,
            self.generation,
            self.block_size
                .map_or_else(|| "auto".to_string(), |b| b.to_string())
        ))
    }

    /// Parse and validate.
    pub fn decode(bytes: &[u8]) -> Result<Current> {
        let bad = |expected: &str, found: &str| {
            Error::corrupt("CURRENT", 0, expected.to_string(), format!("{found:?}"))
        };
        let (body, crc_line) = crate::sealed::split_sealed(bytes, "CURRENT")?;
        crate::sealed::check_seal(body, crc_line, "CURRENT")?;
        let lines: Vec<&str> = body.lines().collect();
        let field = |i: usize, key: &str| -> Result<&str> {
            lines
                .get(i)
                .and_then(|l| l.strip_prefix(key))
                .and_then(|v| v.strip_prefix(' '))
                .ok_or_else(|| bad(key, lines.get(i).copied().unwrap_or("")))
        };
        let version = match field(0, "simdex-store")? {
            "1" => STORE_VERSION,
            "2" => DOC_STORE_VERSION,
            v => {
                return Err(Error::Unsupported {
                    path: None,
                    what: "store format version",
                    expected: format!("{STORE_VERSION} or {DOC_STORE_VERSION}"),
                    found: v.parse().unwrap_or(u64::MAX),
                });
            }
        };
        let generation = field(1, "generation")?
            .parse()
            .map_err(|_| bad("a generation number", lines[1]))?;
        let bs = field(2, "block-size")?;
        let block_size = match bs {
            "auto" => None,
            n => Some(n.parse().map_err(|_| bad("auto or a number", bs))?),
        };
        if lines.len() != 3 {
            return Err(bad("three fields", body));
        }
        Ok(Current {
            version,
            generation,
            block_size,
        })
    }

    /// Read `dir/CURRENT`.
    pub fn read(dir: &Path) -> Result<Current> {
        let p = dir.join(CURRENT_NAME);
        let b = std::fs::read(&p).map_err(|e| Error::io(p.clone(), "read", e))?;
        Current::decode(&b).map_err(|e| e.with_path(&p))
    }

    /// Replace `dir/CURRENT` atomically: the commit point.
    pub fn write(&self, dir: &Path) -> Result<()> {
        crate::atomic::write_file(&dir.join(CURRENT_NAME), |w| {
            w.write_all(self.encode().as_bytes())
                .map_err(|e| Error::io(None, "write CURRENT", e))
        })
    }
}

/// One open generation: its index and its id map.
#[derive(Debug)]
pub struct Generation {
    number: u64,
    dir: PathBuf,
    index: Index,
    ids: IdMap<Mmap>,
    /// The document map, in a document store's generations.
    docs: Option<DocMap<Mmap>>,
    retired: AtomicBool,
}

impl Generation {
    /// Open generation `number` of the store in `store_dir` (`populate`: see
    /// [`crate::index::OpenOptions::populate`]).
    pub fn open(store_dir: &Path, number: u64, populate: bool) -> Result<Generation> {
        let dir = store_dir.join(dir_name(number));
        let index = Index::open_with(&dir, &OpenOptions::default().with_populate(populate))?;
        let ids = IdMap::open(&dir.join(IDS_NAME))?;
        if ids.fingerprints() != index.len() {
            return Err(Error::corrupt(
                "id map fingerprint count",
                24,
                format!("{} (the tables' key count)", index.len()),
                ids.fingerprints().to_string(),
            )
            .with_path(&dir.join(IDS_NAME)));
        }
        let docs_path = dir.join(DOCS_NAME);
        let docs = match docs_path.exists() {
            true => Some(DocMap::open(&docs_path)?),
            false => None,
        };
        Ok(Generation {
            number,
            dir,
            index,
            ids,
            docs,
            retired: AtomicBool::new(false),
        })
    }

    /// The generation number.
    pub fn number(&self) -> u64 {
        self.number
    }

    /// The generation's directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The tables (an ordinary read-only [`Index`]).
    pub fn index(&self) -> &Index {
        &self.index
    }

    internal_fn! {
        /// The id map.
        fn ids(&self) -> &IdMap<Mmap> {
            &self.ids
        }
    }

    /// Documents in the generation's document map (0 in a store of raw fingerprints).
    pub fn docs_count(&self) -> u64 {
        self.docs.as_ref().map_or(0, |d| d.docs())
    }

    internal_fn! {
        /// The document map (document stores only).
        fn docs(&self) -> Option<&DocMap<Mmap>> {
            self.docs.as_ref()
        }
    }

    internal_fn! {
        /// This generation's shape (design, codec), with `block_size` as the block size policy:
        /// what a compaction of it writes.
        fn layout(&self, block_size: Option<u32>) -> Layout {
            Layout {
                design: self.index.design().clone(),
                codec: self.index.tables()[0].codec(),
                block_size,
                sketch_bytes: self.docs.as_ref().map(|d| d.sketch_bytes()),
            }
        }
    }

    /// Mark the generation replaced: its directory is removed when the last holder drops it.
    pub(crate) fn retire(&self) {
        self.retired.store(true, Ordering::SeqCst);
    }

    /// Everything [`Index::verify`] and the id map's own check check, and that the id map and the
    /// tables hold the same fingerprints.
    pub fn verify(&self) -> Result<()> {
        self.index.verify()?;
        let ids_path = self.dir.join(IDS_NAME);
        self.ids.verify().map_err(|e| e.with_path(&ids_path))?;
        if let Some(d) = &self.docs {
            d.verify()
                .map_err(|e| e.with_path(&self.dir.join(DOCS_NAME)))?;
        }
        let t0 = &self.index.tables()[0];
        let inv = t0.permutation().inverse();
        let mut a = 0u64;
        t0.for_each_in(0, u64::MAX, |k| {
            a = a.wrapping_add(crate::checksum::mix64(inv.apply(k)));
            true
        })?;
        let mut b = 0u64;
        let mut prev = None;
        for p in self.ids.iter() {
            let (fp, _) = p.map_err(|e| e.with_path(&ids_path))?;
            if prev != Some(fp) {
                b = b.wrapping_add(crate::checksum::mix64(fp));
            }
            prev = Some(fp);
        }
        if a != b {
            return Err(Error::corrupt(
                "id map contents",
                0,
                "the tables' fingerprints",
                "a different set",
            )
            .with_path(&ids_path));
        }
        Ok(())
    }
}

impl Drop for Generation {
    fn drop(&mut self) {
        if self.retired.load(Ordering::SeqCst) {
            let _ = std::fs::remove_dir_all(&self.dir);
        }
    }
}

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
fn write_docs(path: &Path, sketch_bytes: usize, sources: &[Source<'_>]) -> Result<()> {
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
    crate::atomic::write_file(path, |w| {
        let mut dw = DocsWriter::new(w, sketch_bytes)?;
        loop {
            // The smallest id at the streams' heads; of equal ids, the last stream's wins.
            let mut best: Option<u64> = None;
            for s in &mut streams {
                match s.peek() {
                    Some(Ok((id, _))) if best.is_none_or(|b| *id < b) => best = Some(*id),
                    Some(Err(_)) => return Err(s.next().and_then(|r| r.err()).unwrap()),
                    _ => {}
                }
            }
            let Some(id) = best else { break };
            let mut doc = None;
            for s in &mut streams {
                if matches!(s.peek(), Some(Ok((i, _))) if *i == id) {
                    doc = s.next().and_then(|r| r.ok()).map(|(_, d)| d);
                }
            }
            if let Some(d) = doc {
                dw.add(id, &d)?;
            }
        }
        dw.finish().map(|_| ())
    })
    .map_err(|e| e.with_path(path))
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
        write_docs(&staging.path().join(DOCS_NAME), sketch_bytes, sources)?;
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
