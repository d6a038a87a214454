//! Writing an index directory's files: one table per table of a design (each with its size and
//! xxh3 digest for the manifest), then the manifest. `index::build` and the store's generations
//! (compaction, rebuild, merge, bulk load) both write through it, so an index directory's shape
//! is written in one place.

use std::path::{Path, PathBuf};

use super::manifest::{Manifest, TableEntry, table_file_name};
use crate::codec::Codec;
use crate::design::Design;
use crate::error::Result;
use crate::table::{self, TableOptions, TableSummary};

/// The tables and manifest of one index directory being written.
pub(crate) struct IndexWriter<'a> {
    dir: &'a Path,
    design: &'a Design,
    codec: Codec,
    block_size: u32,
    segment_keys: u32,
    /// Keys per table, and the fewest keys a run must average, where segments may align to
    /// the tables' runs (their prefix bits decide, [`crate::design::auto_alignment`]);
    /// `None`: segments of exactly S keys.
    align: Option<(u64, f64)>,
}

impl<'a> IndexWriter<'a> {
    /// Write into `dir` (a staging directory: the caller publishes it).
    pub(crate) fn new(
        dir: &'a Path,
        design: &'a Design,
        codec: Codec,
        block_size: u32,
        segment_keys: u32,
        align: Option<(u64, f64)>,
    ) -> Self {
        IndexWriter {
            dir,
            design,
            codec,
            block_size,
            segment_keys,
            align,
        }
    }

    /// The options of table `i`: the design's permutation, the codec and block size.
    fn options(&self, i: usize) -> TableOptions {
        let (align, segment_keys) = self.alignment(i);
        TableOptions::default()
            .with_block_size(self.block_size)
            .with_segment_keys(segment_keys)
            .with_aligned_prefix(align)
            .with_codec(self.codec)
            .with_permutation(self.design.tables()[i].permutation.clone())
    }

    /// Table `i`'s aligned prefix (0: none) and segment length.
    fn alignment(&self, i: usize) -> (u32, u32) {
        let t = &self.design.tables()[i];
        match self.align {
            Some((n, run)) => crate::design::alignment(n, t.prefix_bits, self.segment_keys, run),
            None => (0, self.segment_keys),
        }
    }

    /// The tables written with segments aligned to their prefix runs (format 4).
    pub(crate) fn aligned_tables(&self) -> usize {
        (0..self.design.tables().len())
            .filter(|&i| self.alignment(i).0 > 0)
            .count()
    }

    fn path(&self, i: usize) -> PathBuf {
        self.dir.join(table_file_name(i))
    }

    /// The manifest entry of the table just written as `i`.
    fn entry(&self, i: usize) -> Result<TableEntry> {
        let (bytes, xxh3) = super::file_digest(&self.path(i))?;
        Ok(TableEntry {
            file: table_file_name(i),
            bytes,
            xxh3,
        })
    }

    /// Write table `i` from `pass`, which yields its permuted keys ascending (called twice: the
    /// builder's two passes).
    pub(crate) fn write_table<F, I>(&self, i: usize, pass: F) -> Result<(TableEntry, TableSummary)>
    where
        F: FnMut() -> Result<I>,
        I: IntoIterator<Item = Result<u64>>,
    {
        let summary = table::build_file(&self.path(i), &self.options(i), pass)?;
        Ok((self.entry(i)?, summary))
    }

    /// Write table `i` from its permuted keys in memory, sorted, on all cores.
    pub(crate) fn write_sorted_table(&self, i: usize, keys: &[u64]) -> Result<TableEntry> {
        table::parallel::build_file_sorted(&self.path(i), &self.options(i), keys)?;
        self.entry(i)
    }

    /// Write the manifest of `keys` distinct fingerprints in `tables` (in design order).
    pub(crate) fn finish(&self, keys: u64, tables: Vec<TableEntry>) -> Result<()> {
        Manifest {
            design: self.design.clone(),
            keys,
            codec: self.codec.id(),
            block_size: self.block_size,
            tables,
        }
        .write_to(self.dir)
    }
}
