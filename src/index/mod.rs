//! The index: t permuted tables of the same fingerprints plus a manifest, answering "which
//! stored fingerprints are within Hamming distance k of F?" exactly.
//!
//! Queries are in [`query`] (module docs there); results are de-duplicated across tables and
//! ordered by (distance, fingerprint).
//!
//! Layout on disk (`format-spec/index.md`): a directory holding `MANIFEST` and one
//! `table-NN.sxt` per design table.

pub mod batch;
pub mod build;
mod counters;
mod keysort;
#[cfg(all(test, target_arch = "x86_64"))]
mod lanes_tests;
internal_mod!(manifest);
pub(crate) mod probe;
pub mod query;
mod scan;
pub(crate) mod writer;

use std::io::Read;
use std::path::{Path, PathBuf};

use memmap2::Mmap;
use rayon::prelude::*;

use crate::design::Design;
use crate::error::{Error, Result};
use crate::progress::ProgressHandle;
use crate::table::Table;
use crate::table::multiscan::Residency;
use manifest::{MANIFEST_NAME, Manifest};

pub use batch::{BatchOptions, BatchResult, Pair, Shard, self_join};
pub use build::{BuildOptions, BuildSummary, DesignChoice, build};
use counters::AtomicCounters;
pub use probe::Match;
pub(crate) use probe::Prober;
pub use query::{NearMany, QueryCounters};

/// Sizes of an index.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct IndexStats {
    /// Distinct fingerprints.
    pub keys: u64,
    /// Design name.
    pub design: String,
    /// Largest k answered exactly.
    pub k: u32,
    /// Probe radius.
    pub radius: u32,
    /// Number of tables.
    pub tables: usize,
    /// Block size.
    pub block_size: u32,
    /// Keys per segment of the first table's blocks (0: format 1, no segments; the fewest
    /// in a format-4 table, whose segments start at its prefix runs).
    pub segment_keys: u32,
    /// Tables whose segments are aligned to their prefix runs (format 4).
    pub aligned_tables: usize,
    /// Bytes of all table files.
    pub disk_bytes: u64,
    /// Disk bits per fingerprint per table (every overhead included).
    pub bits_per_key_per_table: f64,
    /// Heap bytes the open index holds (last-key arrays, decode tables).
    pub memory_bytes: u64,
    /// Probes one query makes.
    pub probes_per_query: u64,
}

/// What [`Index::verify`] checked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct IndexVerifyReport {
    /// Tables verified.
    pub tables: usize,
    /// Keys decoded over all tables.
    pub keys_decoded: u64,
}

/// An open index: the manifest, one [`Table`] per design table over bytes `D` (a memory map
/// by default; any `AsRef<[u8]>`, e.g. a `Vec<u8>` read into memory, through
/// [`Index::from_parts`]), and query counters. `Send + Sync`; queries take `&self`.
///
/// ```
/// use simdex::{BuildOptions};
/// use simdex::Index;
/// # fn main() -> simdex::Result<()> {
/// # let dir = tempfile::tempdir().unwrap(); let path = dir.path().join("idx");
/// simdex::build_index(&path, [1u64, 2, 1 << 50].into_iter().map(Ok), &BuildOptions::default())?;
/// let mapped = Index::open(&path)?;
/// let in_ram = Index::open_in_memory(&path)?; // for files that may change underneath
/// assert_eq!(mapped.near(3, 1)?, in_ram.near(3, 1)?);
/// assert_eq!(mapped.near(3, 1)?.len(), 2);
/// assert_eq!(mapped.counters().queries, 2);
/// # Ok(()) }
/// ```
#[derive(Debug)]
pub struct Index<D = Mmap> {
    dir: PathBuf,
    manifest: Manifest,
    tables: Vec<Table<D>>,
    probers: Vec<Prober>,
    /// Probes one query makes (the flips of every table), fixed at open.
    probes_per_query: u64,
    /// Whether the tables are mostly out of memory (queries then read ahead), judged at open,
    /// by every large `near_many` and every 256th query while cold.
    residency: Residency,
    /// Whether queries decode four probes per vector register (`table::lanes`: AVX2 present,
    /// every table h-delta coded and nearly all its deltas short), fixed at open.
    lanes: bool,
    /// Whether any table is format 4 (segments aligned to prefix runs), fixed at open: queries
    /// of other indexes take the decoders compiled without format 4's tests.
    aligned: bool,
    /// `near_many` by the batch scan always (`Some(true)`), never, or where it pays (`None`,
    /// [`scan_pays`](Index::scan_pays)); set only by tests.
    scan: Option<bool>,
    counters: AtomicCounters,
}

/// Stream a file's length and xxh3-64 digest.
pub(crate) fn file_digest(path: &Path) -> Result<(u64, u64)> {
    let mut f = std::fs::File::open(path).map_err(|e| Error::io(path.to_path_buf(), "open", e))?;
    let mut h = xxhash_rust::xxh3::Xxh3::new();
    let mut buf = vec![0u8; 1 << 20];
    let mut len = 0u64;
    loop {
        let n = f
            .read(&mut buf)
            .map_err(|e| Error::io(path.to_path_buf(), "read", e))?;
        if n == 0 {
            break;
        }
        h.update(&buf[..n]);
        len += n as u64;
    }
    Ok((len, h.digest()))
}

/// How [`Index::open_with`] maps an index: `OpenOptions::default()` plus the `with_*` setters
/// (fields may be added in any release).
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct OpenOptions {
    /// Read every table into the page cache and map all its pages at open, in 2 MiB pages
    /// where the kernel allows (`MAP_POPULATE`, after reading what is not cached through a
    /// map with `MADV_HUGEPAGE`; Linux only, ignored elsewhere), in parallel across tables.
    ///
    /// A mapped index otherwise takes a page fault the first time each page is touched: a
    /// minor fault (the page is cached, only the mapping is missing) is not free, and a query
    /// touches t random pages, so a fresh process with a warm page cache spends a good part of
    /// its first queries' time mapping pages (measured in docs/log/benchmarks.md). Populating pays
    /// that
    /// once, up front (a sequential read of what is not cached), and keeps latency flat from
    /// the first query: for services that open once and query for long. It also checks every
    /// block's crc32 at open, which a reader otherwise does the first time a query reads the
    /// block (all of it). A one-shot lookup of a few fingerprints should not populate.
    ///
    /// A table not yet in the page cache is read in 2 MiB folios, so that the map's TLB
    /// entries cover 512 times more of it (a 10M-key index: queries 0.85-0.93x the time, its
    /// cold open up to 2.9x longer while the kernel finds free 2 MiB of memory); one already
    /// cached is mapped as it is cached.
    pub populate: bool,
}

impl OpenOptions {
    /// Read and map every table page at open.
    pub fn with_populate(mut self, populate: bool) -> Self {
        self.populate = populate;
        self
    }
}

impl Index<Mmap> {
    /// Open the index in `dir`: parse the manifest, map every table and check that each matches
    /// its manifest entry (size, permutation, key count, block size). Cheap: no block is read.
    ///
    /// The tables are memory-mapped. The contract of a mapping: while the index is open, no
    /// other process may truncate or rewrite its files (simdex itself never does: builds,
    /// compactions and rebuilds write new files and rename them). A file cut short underneath
    /// a mapping makes the next read of the lost pages fault (SIGBUS). Where that cannot be
    /// promised, use [`Index::open_in_memory`].
    pub fn open(dir: impl AsRef<Path>) -> Result<Index<Mmap>> {
        Index::open_with(dir, &OpenOptions::default())
    }

    /// As [`open`](Self::open), with options (see [`OpenOptions`]).
    ///
    /// ```
    /// use simdex::{BuildOptions, OpenOptions};
    /// # fn main() -> simdex::Result<()> {
    /// # let dir = tempfile::tempdir().unwrap(); let path = dir.path().join("idx");
    /// simdex::build_index(&path, [1u64, 2, 1 << 50].into_iter().map(Ok), &BuildOptions::default())?;
    /// let idx = simdex::Index::open_with(&path, &OpenOptions::default().with_populate(true))?;
    /// assert_eq!(idx.near(3, 1)?.len(), 2);
    /// # Ok(()) }
    /// ```
    pub fn open_with(dir: impl AsRef<Path>, opts: &OpenOptions) -> Result<Index<Mmap>> {
        let dir = dir.as_ref();
        let manifest = read_manifest(dir)?;
        // One table per core: opening reads and checks each last-key array (725 MB in all at
        // 1B fingerprints), and populating reads and maps whole files. Errors are reported in
        // table order, so the same damage always names the same table.
        let opened: Vec<Result<Table<Mmap>>> = manifest
            .tables
            .par_iter()
            .map(|e| Table::open_with(dir.join(&e.file), opts.populate))
            .collect();
        let tables = opened.into_iter().collect::<Result<Vec<_>>>()?;
        Index::assemble(dir.to_path_buf(), manifest, tables)
    }
}

impl Index<Vec<u8>> {
    /// Open the index in `dir` by reading every table into memory: immune to files changed
    /// underneath, at the cost of the index's size in RAM and the read time.
    ///
    /// Every block's crc32 is checked here, once, and the tables are held in huge pages where
    /// the kernel allows ([`Table::open_in_memory`]): a mapped index instead checks each block
    /// the first time a query reads it, and where the kernel maps its files in 4 KiB pages its
    /// probes also miss the TLB (queries 1.2x faster at 10M keys and 1.5-1.8x at 100M than
    /// such a reader's). A populated map in 2 MiB pages (a fresh build on ext4) is as fast or
    /// faster: 1.1x at 1B (docs/log/benchmarks.md, “the 1B, 100M, 10M and 1M rows on 16 cores”).
    pub fn open_in_memory(dir: impl AsRef<Path>) -> Result<Index<Vec<u8>>> {
        let dir = dir.as_ref();
        let manifest = read_manifest(dir)?;
        // One table per core, errors in table order (as `open_with`).
        let read: Vec<Result<Table<Vec<u8>>>> = manifest
            .tables
            .par_iter()
            .map(|e| Table::open_in_memory(dir.join(&e.file)))
            .collect();
        let tables = read.into_iter().collect::<Result<Vec<_>>>()?;
        Index::assemble(dir.to_path_buf(), manifest, tables)
    }
}

/// Read and parse `dir/MANIFEST`.
fn read_manifest(dir: &Path) -> Result<Manifest> {
    let mpath = dir.join(MANIFEST_NAME);
    let bytes = std::fs::read(&mpath).map_err(|e| {
        let hint = if e.kind() == std::io::ErrorKind::NotFound {
            std::io::Error::new(e.kind(), "no MANIFEST: not a simdex index directory")
        } else {
            e
        };
        Error::io(mpath.clone(), "open", hint)
    })?;
    Manifest::decode(&bytes).map_err(|e| e.with_path(&mpath))
}

impl<D: AsRef<[u8]> + Sync> Index<D> {
    /// An index from a manifest's bytes and its tables' bytes, in design order: for serving an
    /// index from memory or another storage layer. Checked as [`Index::open`] checks files.
    pub fn from_parts(manifest: &[u8], tables: Vec<D>) -> Result<Index<D>> {
        let manifest = Manifest::decode(manifest)?;
        if tables.len() != manifest.tables.len() {
            return Err(Error::InvalidArgument(format!(
                "the manifest lists {} tables, {} were given",
                manifest.tables.len(),
                tables.len()
            )));
        }
        let tables = tables
            .into_iter()
            .map(Table::from_bytes)
            .collect::<Result<Vec<_>>>()?;
        Index::assemble(PathBuf::new(), manifest, tables)
    }

    fn assemble(dir: PathBuf, manifest: Manifest, tables: Vec<Table<D>>) -> Result<Index<D>> {
        for (i, (entry, (td, t))) in manifest
            .tables
            .iter()
            .zip(manifest.design.tables().iter().zip(&tables))
            .enumerate()
        {
            let path = dir.join(&entry.file);
            let mismatch = |what: &str, expected: String, found: String| {
                Error::corrupt(format!("table {i} ({what})"), 0, expected, found).with_path(&path)
            };
            if t.bytes().len() as u64 != entry.bytes {
                return Err(mismatch(
                    "file size",
                    format!("{} bytes (manifest)", entry.bytes),
                    format!("{} bytes", t.bytes().len()),
                ));
            }
            if t.permutation() != &td.permutation {
                return Err(mismatch(
                    "permutation",
                    "the manifest's permutation".into(),
                    "a different one".into(),
                ));
            }
            if t.len() != manifest.keys {
                return Err(mismatch(
                    "key count",
                    format!("{} (manifest)", manifest.keys),
                    t.len().to_string(),
                ));
            }
            if t.codec().id() != manifest.codec {
                return Err(mismatch(
                    "codec",
                    format!("{} (manifest)", manifest.codec),
                    t.codec().id().to_string(),
                ));
            }
            if t.block_size() != manifest.block_size {
                return Err(mismatch(
                    "block size",
                    format!("{} (manifest)", manifest.block_size),
                    t.block_size().to_string(),
                ));
            }
        }
        let radius = manifest.design.radius();
        let probers = manifest
            .design
            .tables()
            .iter()
            .map(|td| Prober::new(&td.permutation, td.prefix_bits, radius))
            .collect::<Vec<Prober>>();
        Ok(Index {
            dir,
            manifest,
            probes_per_query: probers.iter().map(|p| p.flips.len() as u64).sum(),
            probers,
            residency: Residency::default(),
            lanes: crate::table::multiscan::lanes_supported(&tables),
            aligned: crate::table::multiscan::any_aligned(&tables),
            tables,
            scan: None,
            counters: AtomicCounters::default(),
        })
        .inspect(|idx: &Index<D>| idx.residency.judge(&idx.tables))
    }

    internal_fn! {
        /// Decode queries through the vector lanes (`on`, where the CPU and the tables' codec
        /// allow them, however few of the tables' deltas are short) or through the scalar loop:
        /// whether the lanes are now on. For tests and fuzzers that hold the two to the same
        /// answers on any bytes.
        fn use_lanes(&mut self, on: bool) -> bool {
            #[cfg(target_arch = "x86_64")]
            {
                self.lanes = on && crate::table::lanes::can_run(&self.tables);
            }
            #[cfg(not(target_arch = "x86_64"))]
            {
                let _ = on;
            }
            self.lanes
        }
    }

    internal_fn! {
        /// Answer `near_many` by the batch scan always (`Some(true)`), never (`Some(false)`),
        /// or where it pays (`None`, the default). For tests that hold the two to the same
        /// answers.
        fn use_scan(&mut self, scan: Option<bool>) {
            self.scan = scan;
        }
    }

    /// The index directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The design.
    pub fn design(&self) -> &Design {
        &self.manifest.design
    }

    /// The codec of every table.
    pub fn codec(&self) -> crate::codec::Codec {
        self.tables
            .first()
            .map_or(crate::codec::Codec::HDelta, |t| t.codec())
    }

    /// The block size of every table.
    pub fn block_size(&self) -> u32 {
        self.manifest.block_size
    }

    /// The tables, in design order.
    pub fn tables(&self) -> &[Table<D>] {
        &self.tables
    }

    /// Distinct fingerprints stored.
    pub fn len(&self) -> u64 {
        self.manifest.keys
    }

    /// True if nothing is stored.
    pub fn is_empty(&self) -> bool {
        self.manifest.keys == 0
    }

    /// Sizes.
    pub fn stats(&self) -> IndexStats {
        let disk: u64 = self.tables.iter().map(|t| t.bytes().len() as u64).sum();
        let mem: u64 = self.tables.iter().map(|t| t.stats().memory_bytes).sum();
        let d = self.design();
        IndexStats {
            keys: self.len(),
            design: d.name().to_string(),
            k: d.k(),
            radius: d.radius(),
            tables: self.tables.len(),
            block_size: self.manifest.block_size,
            segment_keys: self.tables.first().map_or(0, |t| t.segment_keys()),
            aligned_tables: self
                .tables
                .iter()
                .filter(|t| t.aligned_prefix() > 0)
                .count(),
            disk_bytes: disk,
            bits_per_key_per_table: if self.is_empty() {
                0.0
            } else {
                disk as f64 * 8.0 / self.len() as f64 / self.tables.len() as f64
            },
            memory_bytes: mem,
            probes_per_query: self.probes_per_query,
        }
    }

    /// Full check: every table file's xxh3-64 digest against the manifest, then every table's
    /// [`verify`](Table::verify), then that all tables hold the same fingerprints. Tables are
    /// checked in parallel on all cores (the current rayon pool).
    pub fn verify(&self) -> Result<IndexVerifyReport> {
        self.verify_with(&ProgressHandle::none())
    }

    /// [`verify`](Self::verify) reporting one unit per table to `progress` (which may cancel).
    pub fn verify_with(&self, progress: &ProgressHandle) -> Result<IndexVerifyReport> {
        progress.stage("verify", Some(self.tables.len() as u64))?;
        let per_table: Vec<(u64, u64)> = (0..self.tables.len())
            .into_par_iter()
            .map(|i| {
                let (t, e) = (&self.tables[i], &self.manifest.tables[i]);
                let path = self.dir.join(&e.file);
                let digest = xxhash_rust::xxh3::xxh3_64(t.bytes());
                if digest != e.xxh3 {
                    return Err(Error::corrupt(
                        format!("table {i} file digest (xxh3-64)"),
                        0,
                        format!("{:016x} (manifest)", e.xxh3),
                        format!("{digest:016x}"),
                    )
                    .with_path(&path));
                }
                // Same set in every table: an order-independent digest of the fingerprints,
                // summed by the verifying decode itself (one pass, on all cores).
                let p = &self.probers[i];
                let (report, sum) =
                    t.verify_summing(|key| crate::checksum::mix64(p.inverse.apply(key)))?;
                let decoded = report.keys;
                progress.advance(1)?;
                Ok((decoded, sum))
            })
            .collect::<Result<_>>()?;
        progress.finish();
        if let Some(i) = per_table.iter().position(|x| x.1 != per_table[0].1) {
            return Err(Error::corrupt(
                format!("table {i} contents"),
                0,
                "the same fingerprints as table 0",
                "a different set",
            )
            .with_path(&self.dir.join(&self.manifest.tables[i].file)));
        }
        Ok(IndexVerifyReport {
            tables: self.tables.len(),
            keys_decoded: per_table.iter().map(|x| x.0).sum(),
        })
    }
}
