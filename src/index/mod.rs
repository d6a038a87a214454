//! The index: t permuted tables of the same fingerprints plus a manifest, answering "which
//! stored fingerprints are within Hamming distance k of F?" exactly.
//!
//! A query permutes F for each table, probes the table at F's permuted prefix (and, for designs
//! with a probe radius r, at every prefix within r flipped bits), and checks the full distance of
//! every key found (a permutation preserves Hamming distance). The design guarantees that every
//! fingerprint within k shares some probed prefix; the distance check guarantees nothing beyond k
//! is returned. Results are de-duplicated across tables and ordered by (distance, fingerprint).
//!
//! Layout on disk (`format-spec/index.md`): a directory holding `MANIFEST` and one
//! `table-NN.sxt` per design table.

pub mod batch;
pub mod build;
pub mod manifest;

use std::io::Read;
use std::path::{Path, PathBuf};

use memmap2::Mmap;
use rayon::prelude::*;

use crate::design::Design;
use crate::error::{Error, Result};
use crate::permutation::Permutation;
use crate::table::Table;
use manifest::{MANIFEST_NAME, Manifest};

pub use batch::{BatchOptions, BatchResult, Pair, Shard};
pub use build::{BuildOptions, BuildSummary, DesignChoice, build};

/// A stored fingerprint within the query distance.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Match {
    /// Hamming distance to the query (first, so the derived order is by distance).
    pub distance: u32,
    /// The stored fingerprint.
    pub fingerprint: u64,
}

/// How one table is probed.
#[derive(Debug, Clone)]
struct Prober {
    permutation: Permutation,
    inverse: Permutation,
    prefix_bits: u32,
    /// XOR masks over the permuted key: every way to flip at most `radius` prefix bits.
    flips: Vec<u64>,
}

impl Prober {
    fn new(permutation: &Permutation, prefix_bits: u32, radius: u32) -> Prober {
        // Every subset of at most `radius` prefix positions, each exactly once.
        fn subsets(pos: &[u64], start: usize, left: u32, cur: u64, out: &mut Vec<u64>) {
            if left == 0 {
                return;
            }
            for i in start..pos.len() {
                out.push(cur | pos[i]);
                subsets(pos, i + 1, left - 1, cur | pos[i], out);
            }
        }
        let positions: Vec<u64> = (0..prefix_bits).map(|i| 1u64 << (63 - i)).collect();
        let mut flips = vec![0u64];
        subsets(&positions, 0, radius, 0, &mut flips);
        Prober {
            permutation: permutation.clone(),
            inverse: permutation.inverse(),
            prefix_bits,
            flips,
        }
    }

    /// The inclusive key range of the probe `flip` for the permuted query `q`.
    #[inline]
    fn range(&self, q: u64, flip: u64) -> (u64, u64) {
        let low = u64::MAX.checked_shr(self.prefix_bits).unwrap_or(0);
        let lo = (q ^ flip) & !low;
        (lo, lo | low)
    }
}

/// Sizes of an index.
#[derive(Debug, Clone, PartialEq)]
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
pub struct IndexVerifyReport {
    /// Tables verified.
    pub tables: usize,
    /// Keys decoded over all tables.
    pub keys_decoded: u64,
}

/// An open index.
#[derive(Debug)]
pub struct Index {
    dir: PathBuf,
    manifest: Manifest,
    tables: Vec<Table<Mmap>>,
    probers: Vec<Prober>,
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

impl Index {
    /// Open the index in `dir`: parse the manifest, map every table and check that each matches
    /// its manifest entry (size, permutation, key count, block size). Cheap: no block is read.
    pub fn open(dir: impl AsRef<Path>) -> Result<Index> {
        let dir = dir.as_ref().to_path_buf();
        let mpath = dir.join(MANIFEST_NAME);
        let bytes = std::fs::read(&mpath).map_err(|e| {
            let hint = if e.kind() == std::io::ErrorKind::NotFound {
                std::io::Error::new(e.kind(), "no MANIFEST: not a simdex index directory")
            } else {
                e
            };
            Error::io(mpath.clone(), "open", hint)
        })?;
        let manifest = Manifest::decode(&bytes).map_err(|e| e.with_path(&mpath))?;
        let mut tables = Vec::with_capacity(manifest.tables.len());
        for (i, (entry, td)) in manifest
            .tables
            .iter()
            .zip(manifest.design.tables())
            .enumerate()
        {
            let path = dir.join(&entry.file);
            let t = Table::open(&path)?;
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
            tables.push(t);
        }
        let radius = manifest.design.radius();
        let probers = manifest
            .design
            .tables()
            .iter()
            .map(|td| Prober::new(&td.permutation, td.prefix_bits, radius))
            .collect();
        Ok(Index {
            dir,
            manifest,
            tables,
            probers,
        })
    }

    /// The index directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The design.
    pub fn design(&self) -> &Design {
        &self.manifest.design
    }

    /// The manifest.
    pub fn manifest(&self) -> &Manifest {
        &self.manifest
    }

    /// The tables, in design order.
    pub fn tables(&self) -> &[Table<Mmap>] {
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

    fn check_k(&self, k: u32) -> Result<()> {
        if k > self.design().k() {
            return Err(Error::InvalidArgument(format!(
                "k = {k} exceeds the index's design ({}, exact up to k = {}); rebuild with --k {k}",
                self.design().name(),
                self.design().k()
            )));
        }
        Ok(())
    }

    /// Visit every (fingerprint, distance) within `k` found by the probes, with repeats across
    /// tables; stop when `f` returns false.
    pub(crate) fn scan(&self, fp: u64, k: u32, mut f: impl FnMut(Match) -> bool) -> Result<bool> {
        for (t, p) in self.tables.iter().zip(&self.probers) {
            let q = p.permutation.apply(fp);
            for &flip in &p.flips {
                let (lo, hi) = p.range(q, flip);
                let go_on = t.for_each_in(lo, hi, |key| {
                    let d = (key ^ q).count_ones();
                    d > k
                        || f(Match {
                            distance: d,
                            fingerprint: p.inverse.apply(key),
                        })
                })?;
                if !go_on {
                    return Ok(false);
                }
            }
        }
        Ok(true)
    }

    /// Probe an in-memory delta layer laid out like this index's tables (same design), calling
    /// `f` for each fingerprint within `k` (with repeats across tables).
    pub(crate) fn probe_layer(
        &self,
        layer: &crate::store::delta::Layer,
        fp: u64,
        k: u32,
        mut f: impl FnMut(Match),
    ) {
        for (i, p) in self.probers.iter().enumerate() {
            let q = p.permutation.apply(fp);
            for &flip in &p.flips {
                let (lo, hi) = p.range(q, flip);
                for key in layer.permuted_range(i, lo, hi) {
                    let d = (key ^ q).count_ones();
                    if d <= k {
                        f(Match {
                            distance: d,
                            fingerprint: p.inverse.apply(key),
                        });
                    }
                }
            }
        }
    }

    /// Every stored fingerprint within Hamming distance `k` of `fp`, each once, ordered by
    /// distance then value. An error if `k` exceeds the design's k, or on corrupt data.
    pub fn near(&self, fp: u64, k: u32) -> Result<Vec<Match>> {
        self.check_k(k)?;
        let mut out = Vec::new();
        self.scan(fp, k, |m| {
            out.push(m);
            true
        })?;
        out.sort_unstable();
        out.dedup();
        Ok(out)
    }

    /// True if some stored fingerprint is within `k` of `fp`; stops at the first one found.
    pub fn has_near(&self, fp: u64, k: u32) -> Result<bool> {
        self.check_k(k)?;
        Ok(!self.scan(fp, k, |_| false)?)
    }

    /// [`near`](Self::near) for many queries, spread over all cores; results in input order.
    pub fn near_many(&self, fps: &[u64], k: u32) -> Result<Vec<Vec<Match>>> {
        self.check_k(k)?;
        fps.par_iter().map(|&fp| self.near(fp, k)).collect()
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
            disk_bytes: disk,
            bits_per_key_per_table: if self.is_empty() {
                0.0
            } else {
                disk as f64 * 8.0 / self.len() as f64 / self.tables.len() as f64
            },
            memory_bytes: mem,
            probes_per_query: self.probers.iter().map(|p| p.flips.len() as u64).sum(),
        }
    }

    /// Full check: every table file's xxh3-64 digest against the manifest, then every table's
    /// [`verify`](Table::verify), then that all tables hold the same fingerprints.
    pub fn verify(&self) -> Result<IndexVerifyReport> {
        let mut decoded = 0u64;
        let mut reference: Option<u64> = None;
        for (i, (t, e)) in self.tables.iter().zip(&self.manifest.tables).enumerate() {
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
            decoded += t.verify()?.keys;
            // Same set in every table: compare an order-independent digest of the fingerprints.
            let p = &self.probers[i];
            let mut digest = 0u64;
            t.for_each_in(0, u64::MAX, |key| {
                digest = digest.wrapping_add(crate::sample::mix64(p.inverse.apply(key)));
                true
            })?;
            match reference {
                None => reference = Some(digest),
                Some(r) if r != digest => {
                    return Err(Error::corrupt(
                        format!("table {i} contents"),
                        0,
                        "the same fingerprints as table 0",
                        "a different set",
                    )
                    .with_path(&path));
                }
                _ => {}
            }
        }
        Ok(IndexVerifyReport {
            tables: self.tables.len(),
            keys_decoded: decoded,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn probe_flips_enumerate_each_subset_once() {
        for (p, r, want) in [
            (32u32, 0u32, 1usize),
            (32, 1, 33),
            (10, 2, 1 + 10 + 45),
            (3, 3, 8),
        ] {
            let pr = Prober::new(&Permutation::identity(), p, r);
            assert_eq!(pr.flips.len(), want, "p={p} r={r}");
            assert!(
                pr.flips
                    .iter()
                    .all(|f| f.count_ones() <= r && f.trailing_zeros() >= 64 - p)
            );
        }
    }
}
