//! Generations: immutable snapshots of a store's compacted pairs.
//!
//! Generation N is the directory `gen-NNNNNN/`: an ordinary index (`MANIFEST` plus one table per
//! design table, `format-spec/index.md`) and the id map `IDS`. The file `CURRENT` names the live
//! generation; replacing it (write temp, fsync, rename, fsync dir) is the commit point of a
//! compaction. A generation replaced by a newer one is *retired*: its directory is removed when
//! the last reader holding it (an `Arc<Generation>`) lets go.
//!
//! Writing one is [`write`](mod@write)'s ([`write_generation`]).

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use memmap2::Mmap;

use super::docs::{DOCS_NAME, DocMap};
use super::durability::lock;
use super::ids::IdMap;
use super::prefix::Prefixer;
use super::prefix_index::PrefixIndex;
use crate::error::{Error, Result};
use crate::index::{Index, OpenOptions};

mod write;
mod write_docs;

pub use write::{
    GenerationSummary, Layout, SortedPairs, Source, write_generation, write_generation_with,
};
pub use write_docs::Relocation;

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
    /// In a store that verifies exactly, the index of its documents' prefix shingles:
    /// (shingle, offset of the set in `SETS`) ascending, built from the shingle sets when
    /// first needed.
    prefixes: std::sync::Mutex<Option<Arc<PrefixIndex>>>,
    /// The generation's directory as opened (device, inode, change time): a reader that opens
    /// the store again knows the same generation by it, not by its number alone (a store
    /// removed and made again at the same path numbers its generations anew).
    dir_id: Option<(u64, u64, i64, i64)>,
    retired: AtomicBool,
}

/// A directory's device, inode and change time.
fn dir_identity(dir: &Path) -> Option<(u64, u64, i64, i64)> {
    use std::os::unix::fs::MetadataExt;
    let m = std::fs::metadata(dir).ok()?;
    Some((m.dev(), m.ino(), m.ctime(), m.ctime_nsec()))
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
        let dir_id = dir_identity(&dir);
        Ok(Generation {
            number,
            dir,
            index,
            ids,
            docs,
            prefixes: std::sync::Mutex::new(None),
            dir_id,
            retired: AtomicBool::new(false),
        })
    }

    /// The prefix index, if built.
    #[cfg(test)]
    pub(crate) fn built_prefixes(&self) -> Option<Arc<PrefixIndex>> {
        lock(&self.prefixes).clone()
    }

    /// Whether the store's directory for this generation is still the one it was opened from
    /// (the generation's files never change while it is live).
    pub(crate) fn is_still_there(&self) -> bool {
        self.dir_id.is_some() && dir_identity(&self.dir) == self.dir_id
    }

    /// The generation's prefix index by `p` (the store's): built on first use from every
    /// document's set (all cores; a second caller waits for the first). A set it finds may
    /// not be its document's any more, or (rarely) not hold the shingle looked up: a candidate
    /// is read back and checked before it is an answer.
    pub(crate) fn prefix_index(&self, p: &Prefixer) -> Result<Arc<PrefixIndex>> {
        let mut slot = lock(&self.prefixes);
        if let Some(ix) = &*slot {
            return Ok(Arc::clone(ix));
        }
        let built = Arc::new(self.build_prefixes(p).map_err(|e| self.docs_error(e))?);
        *slot = Some(Arc::clone(&built));
        Ok(built)
    }

    /// Give this generation, written by compacting `layer` onto `older`, the prefix index of
    /// `older` (if it was built) with its records moved as `moved` says and the layer's
    /// documents added, instead of building it again from every set on first use. The index
    /// is taken from `older` and updated in place where no query holds it (`older` builds
    /// it again if asked); else it is copied.
    pub(crate) fn seed_prefixes(
        &self,
        older: &Generation,
        layer: &super::delta::Layer,
        moved: &Relocation,
    ) {
        let Some(old) = lock(&older.prefixes).take() else {
            return;
        };
        let mut index = Arc::try_unwrap(old).unwrap_or_else(|shared| (*shared).clone());
        if let Some(m) = &moved.moved {
            index.relocate(m);
        }
        // The layer's documents' prefixes, straight from its entries.
        let (ids, entries) = layer.token_entries();
        index.append_records(&moved.added, ids, entries);
        *lock(&self.prefixes) = Some(Arc::new(index));
    }

    fn build_prefixes(&self, p: &Prefixer) -> Result<PrefixIndex> {
        use rayon::prelude::*;
        let Some(docs) = &self.docs else {
            return Ok(PrefixIndex::default());
        };
        // A few thousand documents' sets at a time, their prefixes on all cores.
        let mut index = super::prefix_index::Builder::default();
        for chunk in docs.set_chunks() {
            let part: Vec<(u64, Vec<u64>)> = chunk?
                .par_iter()
                .map_init(Vec::new, |buf, &(_, at)| {
                    docs.read_set(at, buf)?;
                    Ok((at, p.indexed(buf)))
                })
                .collect::<Result<_>>()?;
            index.add(part);
        }
        Ok(index.finish())
    }

    /// Each design table's permutation and probe prefix bits: what a delta layer over this
    /// generation is laid out by.
    pub(crate) fn layer_tables(&self) -> Vec<(crate::Permutation, u32)> {
        self.index
            .design()
            .tables()
            .iter()
            .map(|t| (t.permutation.clone(), t.prefix_bits))
            .collect()
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

    /// `e`, an error of reading the document map, naming its file.
    pub(crate) fn docs_error(&self, e: Error) -> Error {
        e.with_path(&self.dir.join(DOCS_NAME))
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
                sets: self.docs.as_ref().is_some_and(|d| d.has_sets()),
                sets_slack: None,
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
