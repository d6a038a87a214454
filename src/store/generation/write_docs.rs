//! Writing a generation's document map (and, in a store that verifies exactly, its shingle
//! sets): per id the newest document of the merged sources, streamed in id order. A compaction
//! may keep the old sets file and append to it (see [`Relocation`]); other writes rewrite it.

use std::path::Path;

use super::write::{BoxIter, Layout, Source};
use crate::error::{Error, Result};
use crate::store::delta::Layer;
use crate::store::docs::{DOCS_NAME, DocMeta, DocsWriter};

/// Write the document map of the merged sources: per id, the newest document (a later source
/// over an earlier one, a layer over its generation), without the ids a layer deleted.
pub(super) fn write_docs(
    path: &Path,
    sketch_bytes: usize,
    layout: &Layout,
    sources: &[Source<'_>],
) -> Result<Option<Relocation>> {
    let max_seq = sources
        .iter()
        .filter_map(|s| s.generation?.docs.as_ref())
        .map(|d| d.max_seq())
        .max()
        .unwrap_or(0);
    if layout.sets
        && let Some(moved) = compact_docs(path, sketch_bytes, layout, sources, max_seq)?
    {
        return Ok(Some(moved));
    }
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
        streams.push(layer_docs(layer));
    }
    // The map, and beside it (written first, so that a map is never published without them)
    // the shingle sets its entries point to.
    if layout.sets {
        let sets_path = path.with_file_name(super::super::sets::SETS_NAME);
        return crate::atomic::write_file(&sets_path, |sw| {
            crate::atomic::write_file(path, |w| {
                let mut dw = DocsWriter::with_sets(w, sketch_bytes, &mut *sw)?;
                dw.raise_max_seq(max_seq);
                merge_docs(&mut streams, |id, d| dw.add(id, d))?;
                dw.finish_with_sets().map(|_| ())
            })
            .map_err(|e| e.with_path(path))
        })
        .map_err(|e| e.with_path(&sets_path))
        .map(|_| None);
    }
    crate::atomic::write_file(path, |w| {
        let mut dw = DocsWriter::new(w, sketch_bytes)?;
        merge_docs(&mut streams, |id, d| dw.add(id, d))?;
        dw.finish().map(|_| ())
    })
    .map_err(|e| e.with_path(path))
    .map(|_| None)
}

type DocStream<'a> = std::iter::Peekable<BoxIter<'a, (u64, DocMeta)>>;

/// A layer's documents, ascending by id.
fn layer_docs(layer: &Layer) -> DocStream<'_> {
    let mine: Vec<(u64, DocMeta)> = layer
        .docs_sorted()
        .into_iter()
        .map(|(i, d)| (i, d.clone()))
        .collect();
    (Box::new(mine.into_iter().map(Ok)) as BoxIter<'_, _>).peekable()
}

/// Where a compaction put its documents' shingle-set records, for the new generation's prefix
/// index (`Generation::seed_prefixes`).
#[derive(Debug, Default)]
pub struct Relocation {
    /// Records that moved: (old offset, new offset), ascending by the old; `None` when the
    /// carried records stayed where they were (appended to).
    pub moved: Option<Vec<(u64, u64)>>,
    /// The layer's documents' records: (id, offset), ascending by id.
    pub added: Vec<(u64, u64)>,
}

/// The document map of a compaction (one generation with sets and the layer on it), `None`
/// for other writes. The sets file is kept when the layout's slack allows: hard-linked into the
/// new generation, the layer's sets appended, the carried entries pointing where they pointed
/// — a growing store then writes each set once, where rewriting them made a compaction's cost
/// grow with the store (measured: 1M documents ingested in 85 s, most of it rewriting sets).
/// Otherwise (more dead bytes than the slack, counting the layer's deletes at the average
/// record size, or no hard link on this file system) every live set is rewritten.
fn compact_docs(
    path: &Path,
    sketch_bytes: usize,
    layout: &Layout,
    sources: &[Source<'_>],
    max_seq: u64,
) -> Result<Option<Relocation>> {
    use super::super::sets::{SETS_HEADER_LEN, SETS_NAME};
    let (
        Some(slack),
        [
            Source {
                generation: Some(g),
                layer,
            },
        ],
    ) = (layout.sets_slack, sources)
    else {
        return Ok(None);
    };
    let Some(d) = g.docs.as_ref().filter(|d| d.has_sets()) else {
        return Ok(None);
    };
    let (len, live) = (d.sets_byte_len(), d.sets_live());
    let dead = len - SETS_HEADER_LEN as u64 - live;
    let dropping = layer.deleted_ids().len() as u64 * (live / d.docs().max(1));
    let sets_path = path.with_file_name(SETS_NAME);
    let append = (dead + dropping) as f64 <= slack * live as f64
        && std::fs::hard_link(g.dir.join(SETS_NAME), &sets_path).is_ok();
    let dir = g.dir.join(DOCS_NAME);
    if !append {
        let mut out = None;
        crate::atomic::write_file(&sets_path, |sw| {
            crate::atomic::write_file(path, |w| {
                let mut dw = DocsWriter::with_sets(w, sketch_bytes, &mut *sw)?;
                dw.raise_max_seq(max_seq);
                out = Some(merge_compaction(&mut dw, d, layer, false, &dir)?);
                dw.finish_with_sets().map(|_| ())
            })
            .map_err(|e| e.with_path(path))
        })
        .map_err(|e| e.with_path(&sets_path))?;
        return Ok(out);
    }
    let file = std::fs::OpenOptions::new()
        .append(true)
        .open(&sets_path)
        .map_err(|e| Error::io(sets_path.clone(), "open to append", e))?;
    // New records go after whatever the file holds (a failed compaction's records are dead).
    let end = file
        .metadata()
        .map_err(|e| Error::io(sets_path.clone(), "stat", e))?
        .len();
    let mut out = None;
    crate::atomic::write_file(path, |w| {
        let mut sw = std::io::BufWriter::with_capacity(1 << 20, crate::os::Writeback::new(&file, end));
        let mut dw = DocsWriter::appending(w, sketch_bytes, &mut sw, end, live)?;
        dw.raise_max_seq(max_seq);
        out = Some(merge_compaction(&mut dw, d, layer, true, &dir)?);
        let (_, sw) = dw.finish_with_sets()?;
        let sw = sw.expect("a map with sets");
        std::io::Write::flush(sw)
            .map_err(|e| Error::io(sets_path.clone(), "append shingle sets", e))?;
        // The sets are durable before the map that points to them is published.
        file.sync_all()
            .map_err(|e| Error::io(sets_path.clone(), "fsync", e))
    })
    .map_err(|e| e.with_path(path))?;
    Ok(out)
}

/// Merge `d`'s entries (less those `layer` put again or deleted) with `layer`'s documents into
/// `dw`, by id. `append`: `dw` continues `d`'s sets file, so carried entries keep their
/// records and dropped ones' bytes are counted dead; else each carried set is read and
/// written again.
fn merge_compaction<W: std::io::Write + std::io::Seek, S: std::io::Write>(
    dw: &mut DocsWriter<W, S>,
    d: &crate::store::docs::DocMap<memmap2::Mmap>,
    layer: &Layer,
    append: bool,
    dir: &Path,
) -> Result<Relocation> {
    let mut old = d
        .entries()
        .map(|r| r.map_err(|e| e.with_path(dir)))
        .peekable();
    let mut mine = layer_docs(layer);
    let mut out = Relocation::default();
    let mut moved = Vec::new();
    let set_at = |at: Option<u64>| {
        at.ok_or_else(|| Error::corrupt("document map entry", 0, "a set offset", "none"))
    };
    loop {
        let a = match old.peek() {
            Some(Ok((id, _, _))) => Some(*id),
            Some(Err(_)) => return Err(old.next().and_then(|r| r.err()).unwrap()),
            None => None,
        };
        let b = match mine.peek() {
            Some(Ok((id, _))) => Some(*id),
            Some(Err(_)) => return Err(mine.next().and_then(|r| r.err()).unwrap()),
            None => None,
        };
        let take_old = match (a, b) {
            (None, None) => break,
            (Some(x), y) => y.is_none_or(|y| x < y) || layer.doc(x).is_some(),
            (None, Some(_)) => false,
        };
        if take_old {
            let Some(Ok((id, meta, at))) = old.next() else {
                unreachable!()
            };
            let at = set_at(at)?;
            match (layer.doc(id).is_some(), append) {
                // Put again or deleted in the layer: its record is dead.
                (true, true) => dw.forget(d.set_record_len(at)?)?,
                (true, false) => {}
                (false, true) => dw.add_carried(id, &meta, at)?,
                (false, false) => {
                    let meta = d.with_set(id, meta, Some(at))?;
                    let to = dw.put(id, &meta)?;
                    moved.extend(to.map(|to| (at, to)));
                }
            }
        } else {
            let Some(Ok((id, doc))) = mine.next() else {
                unreachable!()
            };
            if let Some(at) = dw.put(id, &doc)? {
                out.added.push((id, at));
            }
        }
    }
    if !append {
        moved.sort_unstable();
        out.moved = Some(moved);
    }
    Ok(out)
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
