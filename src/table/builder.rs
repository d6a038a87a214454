//! Writing a table: two streaming passes over sorted keys, in bounded memory.
//!
//! Pass 1 ([`Histogram`]) checks the order, counts duplicates and builds the histogram of h from
//! which the table's Huffman code is made. Pass 2 ([`TableWriter`]) encodes blocks with that code
//! and streams them to any `Write + Seek`; the header, whose counts are known only at the end, is
//! written last by seeking back. Memory is one block plus a bounded buffer of last keys that
//! spills to an anonymous temporary file, whatever the key count.
//!
//! [`build_file`] runs both passes and writes the file atomically (temporary file, fsync,
//! rename); [`build_bytes`] builds a table in memory from a slice.

use std::fs::File;
use std::io::{BufReader, BufWriter, Read, Seek, SeekFrom, Write};
use std::path::Path;

use crate::codec::Codec;
use crate::codec::huffman::{Code, NUM_SYMBOLS, WRITER_MAX_CODE_LEN};
use crate::error::{Error, Result};
use crate::permutation::Permutation;
use crate::table::block::BlockEncoder;
use crate::table::format::{
    HEADER_LEN, Header, TRAILER_LEN, Trailer, check_block_size, check_segment_keys, version_for,
};

/// Default block size in bytes (the paper's choice).
pub const DEFAULT_BLOCK_SIZE: u32 = 1024;

/// How a table is laid out: `TableOptions::default()` plus the `with_*` setters.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct TableOptions {
    /// Block size in bytes: a power of two in 128..=65536.
    pub block_size: u32,
    /// The permutation the keys were sorted under (recorded in the header; the builder takes
    /// keys already permuted).
    pub permutation: Permutation,
    /// How keys are coded: h-delta (codec 1, the paper's, the default) or gap (codec 2).
    pub codec: Codec,
    /// Keys per segment: 0 (the default) writes format 1, blocks without skip entries; S > 0
    /// (2..=65535, blocks of at most 8192 bytes) writes format 3 (format 4 with an aligned
    /// prefix, [`aligned_prefix`](Self::aligned_prefix)), whose blocks hold a skip
    /// entry every S keys so that a probe decodes about S / 2 keys to reach its range.
    pub segment_keys: u32,
    /// Prefix bits p to align segments to (0, the default: segments of exactly S keys, format
    /// 3). With S > 0 and p in 1..=63 the table is written in format 4: a segment starts at
    /// the first key of a run of keys sharing their top p bits, once the segment before it
    /// holds at least S keys, so that a probe of a p-bit prefix starts decoding at its first
    /// key instead of up to a segment before it. Pays where such runs hold several keys (a
    /// million keys under 16-bit prefixes: ~15 a run).
    pub aligned_prefix: u32,
}

impl Default for TableOptions {
    fn default() -> Self {
        TableOptions {
            block_size: DEFAULT_BLOCK_SIZE,
            permutation: Permutation::identity(),
            codec: Codec::HDelta,
            segment_keys: 0,
            aligned_prefix: 0,
        }
    }
}

impl TableOptions {
    /// Check a block size: a power of two in 128..=65536.
    pub fn check_block_size(b: u32) -> Result<()> {
        super::format::check_block_size(b)
    }

    /// Check a segment length for blocks of `block_size` bytes (0: unsegmented, always valid).
    pub fn check_segment_keys(segment_keys: u32, block_size: u32) -> Result<()> {
        super::format::check_segment_keys(segment_keys, block_size)
    }

    /// The largest block size a segmented table may use: skip entries hold stream bit offsets in
    /// 16 bits, and a block of 8192 bytes has 65408 stream bits.
    pub const MAX_SEGMENTED_BLOCK_SIZE: u32 = crate::table::MAX_SEGMENTED_BLOCK_SIZE;

    /// Most keys per segment of an aligned table, S: a run shorter than this shares its
    /// segment with the runs after it, so that an entry (about 41 bits at a million keys) serves
    /// several keys.
    pub const ALIGNED_SEGMENT_KEYS: u32 = crate::design::ALIGNED_SEGMENT_KEYS;

    /// Block size in bytes (a power of two in 128..=65536).
    pub fn with_block_size(mut self, block_size: u32) -> Self {
        self.block_size = block_size;
        self
    }
    /// The permutation the keys were sorted under.
    pub fn with_permutation(mut self, permutation: Permutation) -> Self {
        self.permutation = permutation;
        self
    }
    /// How keys are coded.
    pub fn with_codec(mut self, codec: Codec) -> Self {
        self.codec = codec;
        self
    }
    /// Keys per segment (0: none, format 1).
    pub fn with_segment_keys(mut self, segment_keys: u32) -> Self {
        self.segment_keys = segment_keys;
        self
    }
    /// Prefix bits to align segments to (0: none; with S > 0, format 4).
    pub fn with_aligned_prefix(mut self, aligned_prefix: u32) -> Self {
        self.aligned_prefix = aligned_prefix;
        self
    }
}

/// What a finished build wrote.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct TableSummary {
    /// Distinct keys stored.
    pub keys: u64,
    /// Exact duplicates dropped.
    pub duplicates: u64,
    /// Blocks written.
    pub blocks: u64,
    /// Total bytes of the table.
    pub bytes: u64,
}

/// Order checking and duplicate dropping shared by both passes.
#[derive(Debug, Clone, Default)]
struct Dedup {
    prev: Option<u64>,
    position: u64,
    duplicates: u64,
}

impl Dedup {
    /// `Ok(Some(prev))` for a new key (`prev` the previous distinct key, if any), `Ok(None)` for
    /// a duplicate, an error if `key` is smaller than its predecessor.
    #[inline]
    fn accept(&mut self, key: u64) -> Result<Option<Option<u64>>> {
        let pos = self.position;
        self.position += 1;
        match self.prev {
            Some(p) if key == p => {
                self.duplicates += 1;
                Ok(None)
            }
            Some(p) if key < p => Err(Error::Unsorted {
                position: pos,
                previous: p,
                key,
            }),
            prev => {
                self.prev = Some(key);
                Ok(Some(prev))
            }
        }
    }
}

/// Pass 1: the histogram of the codec's symbol over consecutive distinct keys.
#[derive(Debug, Clone)]
pub struct Histogram {
    codec: Codec,
    freqs: [u64; NUM_SYMBOLS],
    dedup: Dedup,
    distinct: u64,
}

impl Histogram {
    /// An empty histogram for `codec`.
    pub fn new(codec: Codec) -> Histogram {
        Histogram {
            codec,
            freqs: [0; NUM_SYMBOLS],
            dedup: Dedup::default(),
            distinct: 0,
        }
    }

    /// Add the next key of the sorted input.
    #[inline]
    pub fn add(&mut self, key: u64) -> Result<()> {
        if let Some(prev) = self.dedup.accept(key)? {
            self.distinct += 1;
            if let Some(a) = prev {
                self.freqs[self.codec.delta(a, key).0] += 1;
            }
        }
        Ok(())
    }

    /// A histogram counted elsewhere (in parallel, over strictly ascending keys: no
    /// duplicates): `freqs` of the symbols between consecutive keys, `distinct` keys.
    pub(crate) fn from_parts(codec: Codec, freqs: [u64; NUM_SYMBOLS], distinct: u64) -> Histogram {
        Histogram {
            codec,
            freqs,
            dedup: Dedup::default(),
            distinct,
        }
    }

    /// Distinct keys seen.
    pub fn distinct(&self) -> u64 {
        self.distinct
    }

    /// Exact duplicates seen.
    pub fn duplicates(&self) -> u64 {
        self.dedup.duplicates
    }

    /// Count of each symbol.
    pub fn frequencies(&self) -> &[u64; NUM_SYMBOLS] {
        &self.freqs
    }

    /// The table code: optimal lengths limited to 12 bits.
    ///
    /// The histogram counts every consecutive pair, including the pairs split by a block
    /// boundary (whose second key is stored raw): block boundaries depend on the code, so they
    /// cannot be known before it. The difference is one pair per block and costs nothing
    /// measurable.
    pub fn code(&self) -> Code {
        Code::from_frequencies(&self.freqs, WRITER_MAX_CODE_LEN)
    }
}

/// Last keys are kept in memory up to this many, then spilled to a temporary file.
const LAST_KEYS_IN_MEMORY: usize = 1 << 16;

/// Pass 2: encodes sorted keys into blocks and streams the table to `W`.
#[derive(Debug)]
pub struct TableWriter<W: Write + Seek> {
    w: W,
    start: u64,
    header: Header,
    code: Code,
    expected_keys: u64,
    enc: BlockEncoder,
    block_buf: Vec<u8>,
    dedup: Dedup,
    keys: u64,
    blocks: u64,
    last_keys: Vec<u64>,
    spill: Option<BufWriter<File>>,
}

impl<W: Write + Seek> TableWriter<W> {
    /// Start a table at the writer's current position, coding with the histogram's code.
    /// The keys added must be exactly those the histogram saw.
    pub fn new(mut w: W, opts: &TableOptions, hist: &Histogram) -> Result<TableWriter<W>> {
        check_block_size(opts.block_size)?;
        check_segment_keys(opts.segment_keys, opts.block_size)?;
        crate::table::format::check_aligned_prefix(opts.aligned_prefix)?;
        if hist.codec != opts.codec {
            return Err(Error::InvalidArgument(format!(
                "histogram was built for codec {}, the table is {}",
                hist.codec, opts.codec
            )));
        }
        let start = w
            .stream_position()
            .map_err(|e| Error::io(None, "seek", e))?;
        let code = hist.code();
        let header = Header {
            codec: opts.codec,
            block_size: opts.block_size,
            key_count: 0,
            block_count: 0,
            permutation: opts.permutation.clone(),
            code_lengths: *code.lengths(),
            segment_keys: opts.segment_keys,
            version: version_for(opts.segment_keys, opts.aligned_prefix),
            aligned_prefix: if opts.segment_keys > 0 {
                opts.aligned_prefix
            } else {
                0
            },
        };
        // Placeholder; the real header is written by `finish` once the counts are known.
        w.write_all(&[0u8; HEADER_LEN])
            .map_err(|e| Error::io(None, "write", e))?;
        Ok(TableWriter {
            w,
            start,
            header,
            code,
            expected_keys: hist.distinct(),
            enc: BlockEncoder::new(opts),
            block_buf: vec![0u8; opts.block_size as usize],
            dedup: Dedup::default(),
            keys: 0,
            blocks: 0,
            last_keys: Vec::new(),
            spill: None,
        })
    }

    /// Add the next key of the sorted input (duplicates are dropped and counted).
    #[inline]
    pub fn add(&mut self, key: u64) -> Result<()> {
        if self.dedup.accept(key)?.is_none() {
            return Ok(());
        }
        self.keys += 1;
        if !self.enc.push(key, &self.code)? {
            self.flush_block()?;
            let pushed = self.enc.push(key, &self.code)?;
            debug_assert!(pushed, "an empty block always takes a key");
        }
        Ok(())
    }

    /// Append whole blocks encoded elsewhere with this writer's code (`table::parallel`): each
    /// `block_size` bytes of `blocks` is sealed with its crc at its place in this table, and
    /// `last_keys` holds each block's last key. `keys` is the number of keys they hold, all
    /// greater than every key before. Only between whole blocks (not after `add`).
    pub(crate) fn append_blocks(
        &mut self,
        blocks: &mut [u8],
        last_keys: &[u64],
        keys: u64,
    ) -> Result<()> {
        let b = self.header.block_size as usize;
        debug_assert_eq!(self.enc.count(), 0, "append_blocks after add");
        debug_assert_eq!(blocks.len(), last_keys.len() * b);
        for (block, &last) in blocks.chunks_exact_mut(b).zip(last_keys) {
            let offset = HEADER_LEN as u64 + self.blocks * b as u64;
            let crc_at = b - crate::table::block::BLOCK_TRAILER_LEN;
            let crc = crate::table::block::block_crc(offset, &block[..crc_at]);
            block[crc_at..].copy_from_slice(&crc.to_le_bytes());
            self.w
                .write_all(block)
                .map_err(|e| Error::io(None, "write", e))?;
            self.blocks += 1;
            self.last_keys.push(last);
            if self.last_keys.len() >= LAST_KEYS_IN_MEMORY {
                self.spill_last_keys()?;
            }
        }
        self.keys += keys;
        Ok(())
    }

    fn flush_block(&mut self) -> Result<()> {
        let offset = HEADER_LEN as u64 + self.blocks * self.header.block_size as u64;
        let last = self.enc.last();
        self.enc.finish(offset, &mut self.block_buf);
        self.w
            .write_all(&self.block_buf)
            .map_err(|e| Error::io(None, "write", e))?;
        self.blocks += 1;
        self.last_keys.push(last);
        if self.last_keys.len() >= LAST_KEYS_IN_MEMORY {
            self.spill_last_keys()?;
        }
        Ok(())
    }

    fn spill_last_keys(&mut self) -> Result<()> {
        if self.spill.is_none() {
            let f =
                tempfile::tempfile().map_err(|e| Error::io(None, "create temporary file", e))?;
            self.spill = Some(BufWriter::with_capacity(1 << 16, f));
        }
        let s = self.spill.as_mut().expect("just created");
        for k in self.last_keys.drain(..) {
            s.write_all(&k.to_le_bytes())
                .map_err(|e| Error::io(None, "write temporary file", e))?;
        }
        Ok(())
    }

    /// Write the last block, the footer, the trailer and the header; return the writer
    /// (positioned at the end of the table) and a summary.
    pub fn finish(mut self) -> Result<(W, TableSummary)> {
        if self.keys != self.expected_keys {
            return Err(Error::InputChanged {
                detail: format!(
                    "the first pass saw {} distinct keys, the second {}",
                    self.expected_keys, self.keys
                ),
            });
        }
        if self.enc.count() > 0 {
            self.flush_block()?;
        }
        let io = |e| Error::io(None, "write", e);
        let footer_offset = HEADER_LEN as u64 + self.blocks * self.header.block_size as u64;
        let mut crc = crc32fast::Hasher::new();
        crc.update(&footer_offset.to_le_bytes());
        if let Some(spill) = self.spill.take() {
            let mut f = spill
                .into_inner()
                .map_err(|e| Error::io(None, "write temporary file", e.into_error()))?;
            f.seek(SeekFrom::Start(0)).map_err(io)?;
            let mut r = BufReader::with_capacity(1 << 16, f);
            let mut buf = vec![0u8; 1 << 16];
            loop {
                let n = r.read(&mut buf).map_err(io)?;
                if n == 0 {
                    break;
                }
                crc.update(&buf[..n]);
                self.w.write_all(&buf[..n]).map_err(io)?;
            }
        }
        for k in &self.last_keys {
            crc.update(&k.to_le_bytes());
            self.w.write_all(&k.to_le_bytes()).map_err(io)?;
        }
        self.w
            .write_all(&crc.finalize().to_le_bytes())
            .map_err(io)?;
        let footer_len = self.blocks * 8 + 4;
        let trailer_offset = footer_offset + footer_len;
        let trailer = Trailer {
            footer_offset,
            footer_len,
            version: self.header.version,
        };
        self.w
            .write_all(&trailer.encode(trailer_offset))
            .map_err(io)?;
        self.header.key_count = self.keys;
        self.header.block_count = self.blocks;
        let end = trailer_offset + TRAILER_LEN as u64;
        self.w.seek(SeekFrom::Start(self.start)).map_err(io)?;
        self.w.write_all(&self.header.encode()).map_err(io)?;
        self.w.seek(SeekFrom::Start(self.start + end)).map_err(io)?;
        self.w.flush().map_err(io)?;
        let summary = TableSummary {
            keys: self.keys,
            duplicates: self.dedup.duplicates,
            blocks: self.blocks,
            bytes: end,
        };
        Ok((self.w, summary))
    }
}

/// Run both passes over `pass()` (called twice; it must yield the same sorted keys both times)
/// into `w`.
pub fn build_to<W, F, I>(w: W, opts: &TableOptions, mut pass: F) -> Result<(W, TableSummary)>
where
    W: Write + Seek,
    F: FnMut() -> Result<I>,
    I: IntoIterator<Item = Result<u64>>,
{
    check_block_size(opts.block_size)?;
    check_segment_keys(opts.segment_keys, opts.block_size)?;
    let mut hist = Histogram::new(opts.codec);
    for k in pass()? {
        hist.add(k?)?;
    }
    let mut tw = TableWriter::new(w, opts, &hist)?;
    for k in pass()? {
        tw.add(k?)?;
    }
    tw.finish()
}

/// Build a table file at `path` atomically (see `build_to` for `pass`).
pub fn build_file<F, I>(path: &Path, opts: &TableOptions, pass: F) -> Result<TableSummary>
where
    F: FnMut() -> Result<I>,
    I: IntoIterator<Item = Result<u64>>,
{
    crate::atomic::write_mapped_file(path, |w| Ok(build_to(w, opts, pass)?.1))
        .map_err(|e| e.with_path(path))
}

/// Build a table in memory from sorted keys.
pub fn build_bytes(keys: &[u64], opts: &TableOptions) -> Result<Vec<u8>> {
    let cur = std::io::Cursor::new(Vec::new());
    let (cur, _) = build_to(cur, opts, || Ok(keys.iter().map(|&k| Ok(k))))?;
    Ok(cur.into_inner())
}
