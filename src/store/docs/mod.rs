//! The document map (`DOCS`) of a document store's generation: per document id, what
//! verification needs (the sketch of its shingle set) and the id the caller gave (a string key,
//! or none for a numeric id). Stored once per generation, beside the id map, in the id map's
//! block layout, framed by `super::blocks` (`format-spec/store.md`, "The document map"):
//!
//! ```text
//! header (48 B; 56 in version 2) | block 0 | block 1 | ... | first ids (8 B each) | crc32
//! block: count u32 | used u32 | entries ... | zero padding | crc32
//! entry: varint(id, or id − previous id in the block) | sketch | varint(key tag) | key bytes
//!        [| varint(offset of its shingle set in SETS): version 2 only]
//! ```
//!
//! A key tag of 0 means a numeric id (no key); `n + 1` a key of `n` bytes of UTF-8. A store
//! that verifies exactly writes version 2, whose entries point into the generation's shingle
//! sets (`super::sets`).

use std::path::Path;
use std::sync::Arc;

use byteorder::{ByteOrder, LittleEndian as LE};
use memmap2::Mmap;

use super::blocks::{HEADER_LEN, read_block, read_footer};
use super::sets::{DocSet, SETS_HEADER_LEN, SetHead, SetsFile};
use super::varint::get_varint;
use crate::checksum::Checked;
use crate::error::{Error, Result};
use crate::table::format::{check_crc, crc_at};

mod write;

pub(crate) use write::check_meta;
pub use write::DocsWriter;
/// Maps built in memory, for tests and golden vectors.
#[cfg(any(test, feature = "internals"))]
pub use write::{build_bytes, build_bytes_with_sets};

/// Header length of a map of version 2 (its count of live shingle-set bytes added).
const HEADER_LEN_SETS: usize = HEADER_LEN + 8;

/// Magic bytes at the start of a document map.
pub const DOCS_MAGIC: [u8; 8] = *b"SIMDXDOC";
/// Document map format version (of a map without shingle sets).
pub const DOCS_VERSION: u32 = 1;
/// Document map format version of a map whose entries point to shingle sets.
pub const DOCS_VERSION_SETS: u32 = 2;
/// File name of a generation's document map.
pub const DOCS_NAME: &str = "DOCS";
/// Block size the store writes: room for the largest entry (a 2 KiB key and a 1 KiB sketch).
pub const DOCS_BLOCK_SIZE: u32 = 4096;
/// The longest string id a store keeps, in bytes.
pub const MAX_KEY_BYTES: usize = 2048;

/// What a store keeps for one document besides its fingerprint.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DocMeta {
    /// The string id the document was given, if it was not numeric.
    pub key: Option<Arc<str>>,
    /// The sketch of its word 3-shingles.
    pub sketch: Arc<[u8]>,
    /// Its shingle set, in a store that verifies exactly.
    pub set: Option<Arc<DocSet>>,
}

#[derive(Debug, Clone, Copy)]
struct Header {
    block_size: u32,
    docs: u64,
    blocks: u64,
    sketch_bytes: u32,
    /// Version 2: entries point to shingle sets.
    sets: bool,
    /// Version 2: at least the largest `seq` of its documents (0 if none).
    max_seq: u64,
    /// Version 2: bytes of the `SETS` records its entries point to (the rest of the file,
    /// after its header, is dead: records of documents deleted or replaced since they were
    /// written, which compaction keeps until they are worth rewriting the file for).
    sets_live: u64,
}

impl Header {
    fn len(&self) -> usize {
        if self.sets { HEADER_LEN_SETS } else { HEADER_LEN }
    }

    fn encode(&self) -> Vec<u8> {
        let n = self.len();
        let mut b = vec![0u8; n];
        b[..8].copy_from_slice(&DOCS_MAGIC);
        let version = if self.sets { DOCS_VERSION_SETS } else { DOCS_VERSION };
        LE::write_u32(&mut b[8..12], version);
        LE::write_u32(&mut b[12..16], self.block_size);
        LE::write_u64(&mut b[16..24], self.docs);
        LE::write_u64(&mut b[24..32], self.blocks);
        LE::write_u32(&mut b[32..36], self.sketch_bytes);
        LE::write_u64(&mut b[36..44], self.max_seq);
        if self.sets {
            LE::write_u64(&mut b[44..52], self.sets_live);
        }
        let crc = crc_at(0, &b[..n - 4]);
        LE::write_u32(&mut b[n - 4..n], crc);
        b
    }

    fn decode(b: &[u8]) -> Result<Header> {
        let bad = |what: &str, off: u64, expected: &str, found: String| {
            Error::corrupt(format!("document map {what}"), off, expected.to_string(), found)
        };
        if b.len() < HEADER_LEN {
            return Err(bad("header", 0, "48 bytes", format!("{} bytes", b.len())));
        }
        if b[..8] != DOCS_MAGIC {
            return Err(bad("magic", 0, "SIMDXDOC", format!("{:02x?}", &b[..8])));
        }
        let version = LE::read_u32(&b[8..12]);
        let n = match version {
            DOCS_VERSION => HEADER_LEN,
            DOCS_VERSION_SETS => HEADER_LEN_SETS,
            _ => {
                return Err(Error::Unsupported {
                    path: None,
                    what: "document map format version",
                    expected: format!("{DOCS_VERSION} or {DOCS_VERSION_SETS}"),
                    found: version.into(),
                });
            }
        };
        if b.len() < n {
            return Err(bad("header", 0, &format!("{n} bytes"), format!("{} bytes", b.len())));
        }
        check_crc(|| "document map header crc32".into(), 0, &b[..n])?;
        let h = Header {
            block_size: LE::read_u32(&b[12..16]),
            docs: LE::read_u64(&b[16..24]),
            blocks: LE::read_u64(&b[24..32]),
            sketch_bytes: LE::read_u32(&b[32..36]),
            sets: version == DOCS_VERSION_SETS,
            max_seq: LE::read_u64(&b[36..44]),
            sets_live: if n == HEADER_LEN_SETS { LE::read_u64(&b[44..52]) } else { 0 },
        };
        if !(4096..=1 << 20).contains(&h.block_size) || !h.block_size.is_power_of_two() {
            let found = h.block_size.to_string();
            return Err(bad("block size", 12, "a power of two in 4096..=1048576", found));
        }
        if h.sketch_bytes > 1024 {
            return Err(bad("header", 32, "a sketch of at most 1024 bytes", "more".into()));
        }
        if !h.sets && h.max_seq != 0 {
            return Err(bad("header", 36, "8 zero bytes (version 1)", h.max_seq.to_string()));
        }
        Ok(h)
    }
}

/// A read-only document map over any bytes (an mmap in production).
#[derive(Debug)]
pub struct DocMap<D> {
    data: D,
    /// The blocks checked so far.
    checked: Checked,
    header: Header,
    first_ids: Vec<u64>,
    /// The last block's last id, once it was decoded: an id past it is in no block, and new
    /// documents under numeric ids (a crawl's sequence numbers, a dataset's rows) nearly all
    /// are, where each look-up decoded the whole last block to find it absent.
    last_id: std::sync::OnceLock<u64>,
    /// A version 2 map's shingle sets.
    sets: Option<SetsFile<D>>,
}

fn map_file(path: &Path) -> Result<Mmap> {
    let f = std::fs::File::open(path).map_err(|e| Error::io(path.to_path_buf(), "open", e))?;
    // SAFETY: as for the id map: published files are never modified in place.
    unsafe { Mmap::map(&f) }.map_err(|e| Error::io(path.to_path_buf(), "mmap", e))
}

impl DocMap<Mmap> {
    /// Map the file at `path` (and, for a version 2 map, the shingle sets beside it) and
    /// validate its header and first-id array.
    pub fn open(path: &Path) -> Result<DocMap<Mmap>> {
        let map = map_file(path)?;
        let sets_path = path.with_file_name(super::sets::SETS_NAME);
        let sets = match Header::decode(&map).map_err(|e| e.with_path(path))?.sets {
            true => Some(SetsFile::open(&sets_path)?),
            false => None,
        };
        let m = DocMap::from_bytes_with_sets(map, None).map_err(|e| e.with_path(path))?;
        let m = DocMap { sets, ..m };
        m.check_live().map_err(|e| e.with_path(path))?;
        Ok(m)
    }
}

impl<D: AsRef<[u8]>> DocMap<D> {
    /// Validate `data` as a document map of version 1: header, length, first-id array crc and
    /// order.
    pub fn from_bytes(data: D) -> Result<DocMap<D>> {
        let m = DocMap::from_bytes_with_sets(data, None)?;
        if m.header.sets {
            return Err(Error::InvalidArgument(
                "a document map of version 2 needs its shingle sets".into(),
            ));
        }
        Ok(m)
    }

    /// [`Self::from_bytes`] for a map of either version, with the shingle sets a version 2
    /// map points into (`None`: not read, as while its header alone is checked).
    pub fn from_bytes_with_sets(data: D, sets: Option<D>) -> Result<DocMap<D>> {
        let b = data.as_ref();
        let header = Header::decode(b)?;
        if (header.docs == 0) != (header.blocks == 0) {
            return Err(Error::corrupt(
                "document map header counts",
                16,
                "blocks exactly when there are documents",
                format!("{} documents, {} blocks", header.docs, header.blocks),
            ));
        }
        let first_ids = read_footer(b, header.len(), "document map", "id", header.block_size, header.blocks, true)?;
        let m = DocMap {
            data,
            checked: Checked::new(header.blocks),
            header,
            first_ids,
            last_id: std::sync::OnceLock::new(),
            sets: sets.map(SetsFile::from_bytes).transpose()?,
        };
        m.check_live()?;
        Ok(m)
    }

    /// The live count of set bytes fits the sets file.
    fn check_live(&self) -> Result<()> {
        match &self.sets {
            Some(s) if self.header.sets_live > s.byte_len() - SETS_HEADER_LEN as u64 => {
                Err(Error::corrupt(
                    "document map header",
                    44,
                    format!("at most the {} bytes of SETS after its header", s.byte_len()),
                    format!("{} live shingle-set bytes", self.header.sets_live),
                ))
            }
            _ => Ok(()),
        }
    }

    /// Documents in the map.
    pub fn docs(&self) -> u64 {
        self.header.docs
    }

    /// Bytes of the whole map.
    pub fn byte_len(&self) -> u64 {
        self.data.as_ref().len() as u64
    }

    /// Bytes of each sketch.
    pub fn sketch_bytes(&self) -> usize {
        self.header.sketch_bytes as usize
    }

    /// The largest `seq` of the map's documents (0 if none, or version 1).
    pub fn max_seq(&self) -> u64 {
        self.header.max_seq
    }

    /// Whether entries point to shingle sets (version 2).
    pub fn has_sets(&self) -> bool {
        self.header.sets
    }

    /// Bytes of the shingle sets file (0 without one).
    pub fn sets_byte_len(&self) -> u64 {
        self.sets.as_ref().map_or(0, SetsFile::byte_len)
    }

    /// Bytes of the shingle sets' records the entries point to (0 without sets).
    pub fn sets_live(&self) -> u64 {
        self.header.sets_live
    }

    /// The shingle sets a version 2 map points into.
    fn sets_file(&self) -> Result<&SetsFile<D>> {
        self.sets.as_ref().ok_or_else(|| {
            Error::InvalidArgument("a document map of version 2 read without its sets".into())
        })
    }

    /// The head of the set record at `at` (its crc checked, its hashes not decoded).
    pub fn set_head(&self, at: u64) -> Result<SetHead> {
        self.sets_file()?.head(at)
    }

    /// The set record at `at`: its head, its hashes into `hashes`.
    pub fn read_set(&self, at: u64, hashes: &mut Vec<u64>) -> Result<SetHead> {
        Ok(self.sets_file()?.read(at, hashes)?.0)
    }

    /// The length of the set record at `at` (see [`SetsFile::record_len`]).
    pub fn set_record_len(&self, at: u64) -> Result<u64> {
        self.sets_file()?.record_len(at)
    }

    /// Decode block `i`, calling `f(id, sketch, key, set offset)` per entry until it returns
    /// false (nothing is allocated for the entries passed over).
    fn decode_block(
        &self,
        i: usize,
        mut f: impl FnMut(u64, &[u8], Option<&str>, Option<u64>) -> bool,
    ) -> Result<bool> {
        let (count, s, off) =
            read_block(self.data.as_ref(), self.header.len(), "document map", self.header.block_size, i, &self.checked)?;
        let bad = |what: &str| {
            Error::corrupt(
                format!("document map block {i}"),
                off,
                "a valid entry stream",
                what.to_string(),
            )
        };
        let used = s.len();
        let sk = self.header.sketch_bytes as usize;
        let (mut pos, mut id) = (0usize, 0u64);
        for n in 0..count {
            let d = get_varint(s, &mut pos).ok_or_else(|| bad("a truncated, over-long or non-minimal varint"))?;
            id = match n {
                0 if d != self.first_ids[i] => return Err(bad("a first id unlike the array's")),
                0 => d,
                _ if d == 0 => return Err(bad("a repeated id")),
                _ => id.checked_add(d).ok_or_else(|| bad("an id overflow"))?,
            };
            let sketch = s.get(pos..pos + sk).ok_or_else(|| bad("a truncated sketch"))?;
            pos += sk;
            let tag = get_varint(s, &mut pos).ok_or_else(|| bad("a truncated, over-long or non-minimal varint"))?;
            let key = match tag {
                0 => None,
                // A key of 1 to 2048 bytes, as the writer checks (`check_meta`).
                1 => return Err(bad("an empty key")),
                t if t - 1 > MAX_KEY_BYTES as u64 => return Err(bad("an over-long key")),
                t => {
                    let k = s
                        .get(pos..pos + (t - 1) as usize)
                        .ok_or_else(|| bad("a truncated key"))?;
                    pos += k.len();
                    Some(std::str::from_utf8(k).map_err(|_| bad("a key not UTF-8"))?)
                }
            };
            let set_at = match self.header.sets {
                true => Some(get_varint(s, &mut pos).ok_or_else(|| bad("a truncated, over-long or non-minimal varint"))?),
                false => None,
            };
            if !f(id, sketch, key, set_at) {
                return Ok(false);
            }
        }
        if pos != used {
            return Err(bad("bytes after the last entry"));
        }
        if self.first_ids.get(i + 1).is_some_and(|&next| next <= id) {
            return Err(bad("a last id at or above the next block's first"));
        }
        Ok(true)
    }

    /// The document stored under `id`.
    pub fn get(&self, id: u64) -> Result<Option<DocMeta>> {
        self.entry(id)?
            .map(|(m, at)| self.with_set(id, m, at))
            .transpose()
    }

    /// The document stored under `id` without its set, and where its set's record starts.
    pub fn entry(&self, id: u64) -> Result<Option<(DocMeta, Option<u64>)>> {
        let j = self.first_ids.partition_point(|&f| f <= id);
        if j == 0 || (j == self.first_ids.len() && id > self.last_id()?) {
            return Ok(None);
        }
        let mut out = None;
        self.decode_block(j - 1, |i, sketch, key, set_at| {
            if i == id {
                out = Some((meta(sketch, key), set_at));
            }
            i < id
        })?;
        Ok(out)
    }

    /// The last block's last id (the map has a block).
    fn last_id(&self) -> Result<u64> {
        if let Some(&id) = self.last_id.get() {
            return Ok(id);
        }
        let mut last = 0;
        self.decode_block(self.first_ids.len() - 1, |i, _, _, _| {
            last = i;
            true
        })?;
        Ok(*self.last_id.get_or_init(|| last))
    }

    /// The string keys (`None` for a numeric id) of the documents with ids in `lo..=hi`,
    /// ascending: one block decoded for a short range, where a lookup per id would decode one
    /// each.
    pub fn keys_in(&self, lo: u64, hi: u64) -> Result<Vec<(u64, Option<Arc<str>>)>> {
        let mut out = Vec::new();
        if self.first_ids.is_empty() || lo > self.last_id()? {
            return Ok(out);
        }
        let mut j = self.first_ids.partition_point(|&f| f <= lo).saturating_sub(1);
        while j < self.first_ids.len() && self.first_ids[j] <= hi {
            let mut past = false;
            self.decode_block(j, |i, _, key, _| {
                if (lo..=hi).contains(&i) {
                    out.push((i, key.map(Arc::from)));
                }
                past = i > hi;
                !past
            })?;
            if past {
                break;
            }
            j += 1;
        }
        Ok(out)
    }

    /// Every (id, document) in id order, decoding one block at a time.
    pub fn iter(&self) -> impl Iterator<Item = Result<(u64, DocMeta)>> + Send + '_
    where
        D: Sync,
    {
        self.entries()
            .map(|r| r.and_then(|(id, m, at)| Ok((id, self.with_set(id, m, at)?))))
    }

    /// Every (id, document without its set, where its set's record starts) in id order.
    pub fn entries(&self) -> impl Iterator<Item = Result<(u64, DocMeta, Option<u64>)>> + Send + '_
    where
        D: Sync,
    {
        let mut block = 0usize;
        let mut buf: std::vec::IntoIter<(u64, DocMeta, Option<u64>)> = Vec::new().into_iter();
        let mut failed = false;
        std::iter::from_fn(move || {
            loop {
                if let Some(x) = buf.next() {
                    return Some(Ok(x));
                }
                if failed || block >= self.first_ids.len() {
                    return None;
                }
                let mut v = Vec::new();
                let r = self
                    .decode_block(block, |i, sketch, key, at| {
                        v.push((i, meta(sketch, key), at));
                        true
                    })
                    .map(|_| v);
                block += 1;
                match r {
                    Ok(v) => buf = v.into_iter(),
                    Err(e) => {
                        failed = true;
                        return Some(Err(e));
                    }
                }
            }
        })
    }

    /// Every (id, where its set's record starts) of a map with sets, in id order, a few
    /// thousand at a time: the unit callers read the sets of on all cores.
    pub fn set_chunks(&self) -> impl Iterator<Item = Result<Vec<(u64, u64)>>> + '_
    where
        D: Sync,
    {
        let mut it = self.entries().peekable();
        std::iter::from_fn(move || {
            it.peek()?;
            let mut chunk = Vec::with_capacity(4096);
            for r in it.by_ref().take(4096) {
                match r {
                    Ok((id, _, Some(at))) => chunk.push((id, at)),
                    Ok(_) => {}
                    Err(e) => return Some(Err(e)),
                }
            }
            Some(Ok(chunk))
        })
    }

    /// Decode every block and check the count against the header.
    pub fn verify(&self) -> Result<()>
    where
        D: Sync,
    {
        let mut n = 0u64;
        for d in self.iter() {
            d?;
            n += 1;
        }
        if n != self.header.docs {
            return Err(Error::corrupt(
                "document map count",
                16,
                format!("{} documents (header)", self.header.docs),
                format!("{n}"),
            ));
        }
        Ok(())
    }
}

fn meta(sketch: &[u8], key: Option<&str>) -> DocMeta {
    DocMeta {
        key: key.map(Arc::from),
        sketch: sketch.into(),
        set: None,
    }
}

impl<D: AsRef<[u8]>> DocMap<D> {
    /// `m`, document `id`'s, with the shingle set its entry points to (`at`), read from the
    /// sets file: a record written for another id is corruption.
    pub fn with_set(&self, id: u64, mut m: DocMeta, at: Option<u64>) -> Result<DocMeta> {
        if let Some(at) = at {
            let (of, set) = self.sets_file()?.get(at)?;
            if of != id {
                return Err(Error::corrupt(
                    "shingle sets record",
                    at,
                    format!("the set of document {id}"),
                    format!("the set of document {of}"),
                ));
            }
            m.set = Some(set);
        }
        Ok(m)
    }
}

#[cfg(test)]
mod tests;
