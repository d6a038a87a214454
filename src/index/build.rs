//! Building an index from unsorted fingerprints of any count, in bounded memory.
//!
//! ```text
//! input ──► chunks of mem/16 fingerprints ──► sorted, de-duplicated runs ──► merged "base"
//!            (all in memory if the input fits)                              (distinct, sorted)
//! base ──► for each table: permute, sort (chunks, spilled runs, k-way merge) ──► table builder
//! ```
//!
//! The input is read once. If it fits in half the memory budget everything stays in memory and
//! tables are built in parallel as far as the budget allows (each needs its own permuted copy);
//! otherwise the distinct fingerprints are spilled once to a sorted base file, and each table
//! re-reads it, sorts it under its permutation in memory-sized runs, and merges the runs twice
//! (histogram pass, then encode pass) straight into the table builder. Temporary disk use is
//! about 16 bytes per distinct fingerprint, whatever the table count.
//!
//! The index is assembled in a hidden staging directory beside the target and renamed into place
//! only when complete, so a failed or interrupted build leaves nothing at the target path.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::fs::File;
use std::io::{BufReader, BufWriter, Read, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use rayon::prelude::*;

use crate::design::Design;
use crate::error::{Error, Result};
use crate::index::manifest::TableEntry;
use crate::progress::ProgressHandle;
use crate::table;

/// Which design to build.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum DesignChoice {
    /// [`Design::auto`] for the distinct fingerprint count.
    Auto,
    /// [`Design::by_name`].
    Named(String),
    /// An explicit design.
    Given(Design),
}

impl DesignChoice {
    /// The design for `n` fingerprints that answers every k' <= `k` exactly; `block_size` (or,
    /// if automatic, the smallest automatic size) feeds the cost model of [`Design::auto`]. An
    /// error if a named or given design answers less than `k`.
    pub fn resolve(&self, n: u64, k: u32, block_size: Option<u32>) -> Result<Design> {
        let design = match self {
            DesignChoice::Auto => Design::auto_with_budget(
                n,
                k,
                crate::design::DEFAULT_MAX_TABLES,
                block_size.unwrap_or(crate::design::AUTO_BLOCK_SIZES[0]),
            )?,
            DesignChoice::Named(name) => Design::by_name(name, k)?,
            DesignChoice::Given(d) => d.clone(),
        };
        if design.k() < k {
            return Err(Error::InvalidArgument(format!(
                "design {} answers k <= {}, but k = {k} was asked for",
                design.name(),
                design.k(),
            )));
        }
        Ok(design)
    }
}

/// Options of [`build`]: start from `BuildOptions::default()` and chain the `with_*` setters
/// (fields may be added in any release).
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct BuildOptions {
    /// The largest query distance the index must answer exactly.
    pub k: u32,
    /// The design.
    pub design: DesignChoice,
    /// Block size of every table; `None` picks
    /// [`Design::auto_block_size`](crate::Design::auto_block_size).
    pub block_size: Option<u32>,
    /// Keys per segment of every table (0: none, format 1; else format 3, exactly S keys a
    /// segment); `None` picks `crate::design::auto_segment_keys` for the block size, and
    /// aligns a table's segments to its prefix runs where they average enough keys
    /// (`auto_alignment`, format 4).
    pub segment_keys: Option<u32>,
    /// Codec of every table.
    pub codec: crate::codec::Codec,
    /// Memory budget in bytes for sorting (the process uses somewhat more: buffers, maps).
    pub mem_bytes: u64,
    /// Progress reports and cancellation.
    pub progress: ProgressHandle,
    /// The fewest keys a table's prefix runs must average for an automatic S to align its
    /// segments to them ([`crate::design::ALIGN_MIN_RUN`]; tests lower it).
    pub(crate) align_min_run: f64,
}

impl Default for BuildOptions {
    fn default() -> Self {
        BuildOptions {
            k: 3,
            design: DesignChoice::Auto,
            block_size: None,
            segment_keys: None,
            codec: crate::codec::Codec::HDelta,
            mem_bytes: 1 << 30,
            progress: ProgressHandle::none(),
            align_min_run: crate::design::ALIGN_MIN_RUN,
        }
    }
}

impl BuildOptions {
    /// The largest query distance the index must answer exactly.
    pub fn with_k(mut self, k: u32) -> Self {
        self.k = k;
        self
    }
    /// The design.
    pub fn with_design(mut self, design: DesignChoice) -> Self {
        self.design = design;
        self
    }
    /// Block size of every table (`None`: automatic).
    pub fn with_block_size(mut self, block_size: Option<u32>) -> Self {
        self.block_size = block_size;
        self
    }
    /// Keys per segment of every table (`None`: automatic, 0: none).
    pub fn with_segment_keys(mut self, segment_keys: Option<u32>) -> Self {
        self.segment_keys = segment_keys;
        self
    }
    /// Codec of every table.
    pub fn with_codec(mut self, codec: crate::codec::Codec) -> Self {
        self.codec = codec;
        self
    }
    /// Memory budget in bytes for sorting.
    pub fn with_mem_bytes(mut self, mem_bytes: u64) -> Self {
        self.mem_bytes = mem_bytes;
        self
    }
    /// Progress reports and cancellation.
    pub fn with_progress(mut self, progress: ProgressHandle) -> Self {
        self.progress = progress;
        self
    }
}

/// What [`build`] did.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct BuildSummary {
    /// Fingerprints read.
    pub input: u64,
    /// Distinct fingerprints stored.
    pub keys: u64,
    /// The design built.
    pub design: Design,
    /// The block size of its tables.
    pub block_size: u32,
    /// Keys per segment of its tables (0: none).
    pub segment_keys: u32,
    /// Tables whose segments are aligned to their prefix runs (format 4, segments of at
    /// least `crate::design::ALIGNED_SEGMENT_KEYS` keys).
    pub aligned_tables: usize,
    /// Bytes of all table files.
    pub table_bytes: u64,
    /// Whether the build spilled to disk.
    pub external: bool,
    /// Wall time.
    pub elapsed: Duration,
}

/// Smallest memory budget accepted (below this, runs get silly).
pub const MIN_MEM: u64 = 1 << 20;

/// Build an index at `out` (which must not exist) from `input`.
pub fn build(
    out: impl AsRef<Path>,
    input: impl Iterator<Item = Result<u64>>,
    opts: &BuildOptions,
) -> Result<BuildSummary> {
    let out = out.as_ref();
    let start = Instant::now();
    if let Some(b) = opts.block_size {
        table::format::check_block_size(b)?;
    }
    if let Some(s) = opts.segment_keys {
        let b = opts
            .block_size
            .unwrap_or(crate::design::AUTO_BLOCK_SIZES[0]);
        table::format::check_segment_keys(s, b)?;
    }
    if opts.mem_bytes < MIN_MEM {
        return Err(Error::InvalidArgument(format!(
            "memory budget {} bytes is below the minimum of {MIN_MEM}",
            opts.mem_bytes
        )));
    }
    // Fail on a bad k or design before reading any input.
    opts.design.resolve(1, opts.k, opts.block_size)?;
    let staging = crate::atomic::StagedDir::new(out, "building")?;
    let parent = staging.parent().to_path_buf();
    let name = out
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let spill = tempfile::Builder::new()
        .prefix(&format!(".{name}.spill-"))
        .tempdir_in(&parent)
        .map_err(|e| Error::io_in_dir(&parent, "create a spill directory in the directory", e))?;
    // Locked while in use, like the staging directory: a later run removes it only if stale.
    let spill_lock = File::open(spill.path()).ok();
    if let Some(l) = &spill_lock {
        let _ = l.try_lock();
    }

    // Phase 1: read, sort and de-duplicate the input.
    let chunk_cap = (opts.mem_bytes / 16).max(1) as usize;
    let base = read_base(input, chunk_cap, spill.path(), &opts.progress)?;
    let (n, input_count) = (base.len(), base.input);

    let design = opts.design.resolve(n, opts.k, opts.block_size)?;

    let block_size = opts
        .block_size
        .unwrap_or_else(|| crate::design::auto_block_size(n, design.tables().len()));
    let segment_keys = opts
        .segment_keys
        .unwrap_or_else(|| crate::design::auto_segment_keys(block_size));

    // Phase 2: one table per permutation.
    let t = design.tables().len();
    let pb = &opts.progress;
    pb.stage("tables", Some(n * t as u64))?;
    let writer = super::writer::IndexWriter::new(
        staging.path(),
        &design,
        opts.codec,
        block_size,
        segment_keys,
        // An S given explicitly is kept exactly (format 3); an automatic one aligns.
        opts.segment_keys
            .is_none()
            .then_some((n, opts.align_min_run)),
    );
    let build_one = |i: usize| -> Result<TableEntry> {
        let perm = &design.tables()[i].permutation;
        let entry = match &base.data {
            Base::Memory(v) => {
                let mut keys: Vec<u64> = v.iter().map(|&x| perm.apply(x)).collect();
                keys.par_sort_unstable();
                writer.write_sorted_table(i, &keys)?
            }
            Base::File(base_path) => {
                let runs = sorted_runs(base_path, perm, chunk_cap, spill.path(), i)?;
                let (entry, _) = writer.write_table(i, || merge(&runs, false))?;
                for r in &runs {
                    let _ = std::fs::remove_file(r);
                }
                entry
            }
        };
        pb.advance(n)?;
        Ok(entry)
    };
    let entries: Vec<TableEntry> = match &base.data {
        Base::Memory(_) => {
            // Each table in flight holds a permuted copy of the base (8 bytes per key): as many
            // at once as the budget allows, each sorted and encoded on all cores.
            let copies = (opts.mem_bytes / 8 / n.max(1)).saturating_sub(1).max(1) as usize;
            let mut entries = Vec::with_capacity(t);
            for wave in (0..t).collect::<Vec<_>>().chunks(copies) {
                let built: Vec<TableEntry> = wave
                    .par_iter()
                    .map(|&i| build_one(i))
                    .collect::<Result<_>>()?;
                entries.extend(built);
            }
            entries
        }
        Base::File(_) => (0..t).map(build_one).collect::<Result<_>>()?,
    };
    pb.finish();
    let table_bytes = entries.iter().map(|e| e.bytes).sum();

    writer.finish(n, entries)?;
    let aligned_tables = writer.aligned_tables();
    drop(spill_lock);
    drop(spill);
    staging.publish()?;
    Ok(BuildSummary {
        input: input_count,
        keys: n,
        design,
        block_size,
        segment_keys,
        aligned_tables,
        table_bytes,
        external: matches!(base.data, Base::File(_)),
        elapsed: start.elapsed(),
    })
}

enum Base {
    Memory(Vec<u64>),
    File(PathBuf),
}

struct BaseSet {
    data: Base,
    input: u64,
    distinct: u64,
}

impl BaseSet {
    fn len(&self) -> u64 {
        self.distinct
    }
}

/// Read the whole input; return its distinct fingerprints, sorted, in memory or in a file.
fn read_base(
    input: impl Iterator<Item = Result<u64>>,
    chunk_cap: usize,
    spill: &Path,
    pb: &ProgressHandle,
) -> Result<BaseSet> {
    pb.stage("reading", None)?;
    let mut chunk: Vec<u64> = Vec::new();
    let mut runs: Vec<PathBuf> = Vec::new();
    let mut count = 0u64;
    for fp in input {
        chunk.push(fp?);
        count += 1;
        if count.is_multiple_of(1 << 16) {
            pb.advance(1 << 16)?;
        }
        if chunk.len() == chunk_cap {
            chunk.par_sort_unstable();
            chunk.dedup();
            runs.push(write_run(&chunk, spill, &format!("input-{}", runs.len()))?);
            chunk.clear();
        }
    }
    pb.finish();
    chunk.par_sort_unstable();
    chunk.dedup();
    if runs.is_empty() {
        let distinct = chunk.len() as u64;
        return Ok(BaseSet {
            data: Base::Memory(chunk),
            input: count,
            distinct,
        });
    }
    if !chunk.is_empty() {
        runs.push(write_run(&chunk, spill, &format!("input-{}", runs.len()))?);
    }
    drop(chunk);
    let path = spill.join("base.u64");
    let f = File::create(&path).map_err(|e| Error::io(path.clone(), "create", e))?;
    let mut w = BufWriter::with_capacity(1 << 20, f);
    let mut distinct = 0u64;
    for k in merge(&runs, true)? {
        w.write_all(&k?.to_le_bytes())
            .map_err(|e| Error::io(path.clone(), "write", e))?;
        distinct += 1;
    }
    w.flush().map_err(|e| Error::io(path.clone(), "write", e))?;
    for r in &runs {
        let _ = std::fs::remove_file(r);
    }
    Ok(BaseSet {
        data: Base::File(path),
        input: count,
        distinct,
    })
}

fn write_run(keys: &[u64], dir: &Path, name: &str) -> Result<PathBuf> {
    let path = dir.join(format!("{name}.run"));
    let f = File::create(&path).map_err(|e| Error::io(path.clone(), "create", e))?;
    let mut w = BufWriter::with_capacity(1 << 20, f);
    for k in keys {
        w.write_all(&k.to_le_bytes())
            .map_err(|e| Error::io(path.clone(), "write", e))?;
    }
    w.flush().map_err(|e| Error::io(path.clone(), "write", e))?;
    Ok(path)
}

/// Sort the base file under `perm` into runs of `chunk_cap` keys.
fn sorted_runs(
    base: &Path,
    perm: &crate::Permutation,
    chunk_cap: usize,
    spill: &Path,
    table: usize,
) -> Result<Vec<PathBuf>> {
    let mut runs = Vec::new();
    let mut reader = U64Reader::open(base)?;
    let mut chunk = Vec::with_capacity(chunk_cap.min(1 << 24));
    loop {
        chunk.clear();
        while chunk.len() < chunk_cap {
            match reader.next() {
                Some(k) => chunk.push(perm.apply(k?)),
                None => break,
            }
        }
        if chunk.is_empty() {
            break;
        }
        chunk.par_sort_unstable();
        runs.push(write_run(
            &chunk,
            spill,
            &format!("t{table}-{}", runs.len()),
        )?);
    }
    Ok(runs)
}

/// Reads little-endian u64s from a file the build wrote itself.
struct U64Reader {
    r: BufReader<File>,
    path: PathBuf,
}

impl U64Reader {
    fn open(path: &Path) -> Result<U64Reader> {
        let f = File::open(path).map_err(|e| Error::io(path.to_path_buf(), "open", e))?;
        Ok(U64Reader {
            r: BufReader::with_capacity(1 << 20, f),
            path: path.to_path_buf(),
        })
    }
}

impl Iterator for U64Reader {
    type Item = Result<u64>;
    fn next(&mut self) -> Option<Result<u64>> {
        let mut b = [0u8; 8];
        match self.r.read_exact(&mut b) {
            Ok(()) => Some(Ok(u64::from_le_bytes(b))),
            Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => None,
            Err(e) => Some(Err(Error::io(self.path.clone(), "read", e))),
        }
    }
}

/// k-way merge of sorted run files, optionally dropping duplicates.
fn merge(runs: &[PathBuf], dedup: bool) -> Result<impl Iterator<Item = Result<u64>> + use<>> {
    let mut readers = Vec::with_capacity(runs.len());
    let mut heap = BinaryHeap::with_capacity(runs.len());
    for (i, r) in runs.iter().enumerate() {
        let mut rd = U64Reader::open(r)?;
        if let Some(k) = rd.next() {
            heap.push(Reverse((k?, i)));
        }
        readers.push(rd);
    }
    let mut last: Option<u64> = None;
    let mut failed = false;
    Ok(std::iter::from_fn(move || {
        loop {
            if failed {
                return None;
            }
            let Reverse((k, i)) = heap.pop()?;
            match readers[i].next() {
                Some(Ok(next)) => heap.push(Reverse((next, i))),
                Some(Err(e)) => {
                    failed = true;
                    return Some(Err(e));
                }
                None => {}
            }
            if dedup && last == Some(k) {
                continue;
            }
            last = Some(k);
            return Some(Ok(k));
        }
    }))
}
