//! Writing a document map (and, for version 2, its shingle sets): entries in strictly
//! ascending id order, framed by `super::super::blocks`, the header written last.

use std::io::{Seek, Write};

use super::super::blocks::BlockWriter;
use super::super::sets::SetsWriter;
use super::super::varint::put_varint;
use super::*;

/// Writes a document map from entries in strictly ascending id order (and, for a map of version
/// 2, their shingle sets to `S`).
pub struct DocsWriter<W: Write + Seek, S: Write = std::io::Sink> {
    blocks: BlockWriter<W>,
    sets: Option<SetsWriter<S>>,
    header: Header,
    prev: Option<u64>,
    /// Previous id within the current block.
    in_block: Option<u64>,
    entry: Vec<u8>,
}

impl<W: Write + Seek> DocsWriter<W> {
    /// Start a map (version 1) whose sketches have `sketch_bytes` bytes.
    pub fn new(w: W, sketch_bytes: usize) -> Result<DocsWriter<W>> {
        DocsWriter::start(w, sketch_bytes, None)
    }
}

impl<W: Write + Seek, S: Write> DocsWriter<W, S> {
    /// Start a map (version 2) whose sketches have `sketch_bytes` bytes and whose documents'
    /// shingle sets go to `sets` (a sets file).
    pub fn with_sets(w: W, sketch_bytes: usize, sets: S) -> Result<DocsWriter<W, S>> {
        DocsWriter::start(w, sketch_bytes, Some(SetsWriter::new(sets)?))
    }

    /// Start a map (version 2) over an existing sets file of `len` bytes, `live` of them
    /// pointed to by the documents to be carried over ([`Self::add_carried`]; those dropped
    /// are [`Self::forget`]-ten): new sets are appended to `sets`, positioned at its end.
    pub fn appending(
        w: W,
        sketch_bytes: usize,
        sets: S,
        len: u64,
        live: u64,
    ) -> Result<DocsWriter<W, S>> {
        let mut dw = DocsWriter::start(w, sketch_bytes, Some(SetsWriter::append(sets, len)))?;
        dw.header.sets_live = live;
        Ok(dw)
    }

    /// A sets record of `len` bytes counted live at the start is no longer pointed to.
    pub fn forget(&mut self, len: u64) -> Result<()> {
        self.header.sets_live = self.header.sets_live.checked_sub(len).ok_or_else(|| {
            Error::InvalidArgument("more shingle-set bytes dropped than were live".into())
        })?;
        Ok(())
    }

    /// Make the map's `max_seq` at least `seq` (a compaction keeps it from going down when
    /// the latest documents are deleted, so that a `seq` is never given twice).
    pub fn raise_max_seq(&mut self, seq: u64) {
        self.header.max_seq = self.header.max_seq.max(seq);
    }

    fn start(w: W, sketch_bytes: usize, sets: Option<SetsWriter<S>>) -> Result<DocsWriter<W, S>> {
        let header = Header {
            block_size: DOCS_BLOCK_SIZE,
            docs: 0,
            blocks: 0,
            sketch_bytes: sketch_bytes as u32,
            sets: sets.is_some(),
            max_seq: 0,
            sets_live: 0,
        };
        if sketch_bytes > 1024 {
            return Err(Error::InvalidArgument(format!(
                "sketches of {sketch_bytes} bytes (at most 1024)"
            )));
        }
        Ok(DocsWriter {
            blocks: BlockWriter::new(w, "write document map", DOCS_BLOCK_SIZE, &header.encode())?,
            sets,
            header,
            prev: None,
            in_block: None,
            entry: Vec::new(),
        })
    }

    /// Add the next document; ids must be strictly ascending.
    pub fn add(&mut self, id: u64, doc: &DocMeta) -> Result<()> {
        self.put(id, doc).map(|_| ())
    }

    /// [`Self::add`], and where its set's record starts (a map with sets).
    pub fn put(&mut self, id: u64, doc: &DocMeta) -> Result<Option<u64>> {
        self.check_next(id)?;
        check_meta(doc, self.header.sketch_bytes as usize, self.header.sets)?;
        let set_at = match (&mut self.sets, &doc.set) {
            (Some(w), Some(set)) => {
                self.header.max_seq = self.header.max_seq.max(set.seq);
                self.header.sets_live += super::super::sets::record_len(set.hashes.len());
                Some(w.add(id, set)?)
            }
            _ => None,
        };
        self.push(id, doc, set_at)?;
        Ok(set_at)
    }

    /// Add the next document (without its set) of a map started by [`Self::appending`],
    /// pointing to the set record at `at` that the sets file already holds.
    pub fn add_carried(&mut self, id: u64, doc: &DocMeta, at: u64) -> Result<()> {
        self.check_next(id)?;
        if !self.header.sets {
            return Err(Error::InvalidArgument(
                "a carried shingle set in a map without sets".into(),
            ));
        }
        check_meta(doc, self.header.sketch_bytes as usize, false)?;
        self.push(id, doc, Some(at))
    }

    fn check_next(&self, id: u64) -> Result<()> {
        if self.prev.is_some_and(|p| id <= p) {
            return Err(Error::InvalidArgument(format!(
                "document map ids out of order: {id} after {:?}",
                self.prev
            )));
        }
        Ok(())
    }

    fn push(&mut self, id: u64, doc: &DocMeta, set_at: Option<u64>) -> Result<()> {
        self.prev = Some(id);
        self.header.docs += 1;
        let encode = |entry: &mut Vec<u8>, delta: u64| {
            entry.clear();
            put_varint(entry, delta);
            entry.extend_from_slice(&doc.sketch);
            match &doc.key {
                Some(k) => {
                    put_varint(entry, k.len() as u64 + 1);
                    entry.extend_from_slice(k.as_bytes());
                }
                None => put_varint(entry, 0),
            }
            if let Some(at) = set_at {
                put_varint(entry, at);
            }
        };
        let mut entry = std::mem::take(&mut self.entry);
        encode(&mut entry, self.in_block.map_or(id, |p| id - p));
        if self.in_block.is_some() && !self.blocks.fits(entry.len()) {
            self.blocks.flush()?;
            encode(&mut entry, id);
        }
        self.blocks.push(id, &entry);
        self.entry = entry;
        self.in_block = Some(id);
        Ok(())
    }

    /// Write the last block, the first-id array and the header; the writer and the count.
    pub fn finish(self) -> Result<(W, u64)> {
        let (done, _) = Self::finish_with_sets(self)?;
        Ok(done)
    }

    /// [`Self::finish`], and the sets' writer (of a version 2 map).
    pub fn finish_with_sets(self) -> Result<((W, u64), Option<S>)> {
        let mut header = self.header;
        let w = self.blocks.finish(|blocks| {
            header.blocks = blocks;
            header.encode()
        })?;
        Ok(((w, header.docs), self.sets.map(SetsWriter::finish)))
    }
}

/// Check a document's key, sketch and shingle set against the store's limits (`sets`: the
/// store keeps sets, and every document has one).
pub(crate) fn check_meta(doc: &DocMeta, sketch_bytes: usize, sets: bool) -> Result<()> {
    match &doc.set {
        Some(set) if sets => super::super::sets::check_set(&set.hashes)?,
        None if !sets => {}
        _ => {
            return Err(Error::InvalidArgument(format!(
                "a document {} a shingle set in a store that {} them",
                if sets { "without" } else { "with" },
                if sets { "keeps" } else { "does not keep" },
            )));
        }
    }
    if doc.sketch.len() != sketch_bytes {
        return Err(Error::InvalidArgument(format!(
            "a sketch of {} bytes where the store keeps {sketch_bytes}",
            doc.sketch.len()
        )));
    }
    if let Some(k) = &doc.key
        && (k.is_empty() || k.len() > MAX_KEY_BYTES)
    {
        return Err(Error::InvalidArgument(format!(
            "a string id of {} bytes (1 to {MAX_KEY_BYTES})",
            k.len()
        )));
    }
    Ok(())
}

/// Build a document map in memory from ascending entries (tests, golden vectors).
pub fn build_bytes(docs: &[(u64, DocMeta)], sketch_bytes: usize) -> Result<Vec<u8>> {
    let mut w = DocsWriter::new(std::io::Cursor::new(Vec::new()), sketch_bytes)?;
    for (id, d) in docs {
        w.add(*id, d)?;
    }
    Ok(w.finish()?.0.into_inner())
}

/// Build a document map of version 2 and its shingle sets in memory from ascending entries,
/// each with a set (tests, golden vectors): (map bytes, sets bytes).
pub fn build_bytes_with_sets(
    docs: &[(u64, DocMeta)],
    sketch_bytes: usize,
) -> Result<(Vec<u8>, Vec<u8>)> {
    let mut w = DocsWriter::with_sets(std::io::Cursor::new(Vec::new()), sketch_bytes, Vec::new())?;
    for (id, d) in docs {
        w.add(*id, d)?;
    }
    let ((map, _), sets) = w.finish_with_sets()?;
    Ok((map.into_inner(), sets.unwrap_or_default()))
}
