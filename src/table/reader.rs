//! Reading a table: zero-copy over any byte slice (a `Vec` in tests, an mmap in production).
//!
//! Opening validates the header, trailer and footer and copies the last-key array into memory
//! (8 bytes per block, plus about 4 of `directory` to search it): that array is what picks
//! the one block a lookup decodes. Blocks are checked (crc32) and decoded only when a query
//! reaches them; [`Table::verify`] is the separate full pass.

use crate::checksum::Checked;
use std::path::{Path, PathBuf};

use byteorder::{ByteOrder, LittleEndian as LE};
use memmap2::Mmap;

use crate::codec::huffman::{Code, DecodeTable};
use crate::error::{Error, Result};
use crate::permutation::Permutation;
use crate::table::block::{self, BlockDecoder};
use crate::table::directory::Directory;
use crate::table::format::{HEADER_LEN, Header, TRAILER_LEN, Trailer, check_crc};
use crate::table::segment::{Segments, Shape};

mod ahead;

/// An open table over bytes `D`.
#[derive(Debug)]
pub struct Table<D> {
    data: D,
    path: Option<PathBuf>,
    header: Header,
    /// Shared with the other open tables of the same code ([`DecodeTable::shared`]).
    decode: std::sync::Arc<DecodeTable>,
    last_keys: Vec<u64>,
    directory: Directory,
    /// The blocks whose crc32 this reader has checked (on their first read).
    crc_checked: Checked,
    /// Every block's crc has been checked (a populated or in-memory reader): the probes'
    /// plans then skip the bitmap above, whose line, at 1B keys one of 5.5 MB of bitmaps,
    /// is one more likely cache miss in the round that prefetches the blocks.
    all_checked: bool,
    /// Its checked blocks' prefetch asks for fewer lines ([`ahead::short_head`]).
    short_head: bool,
}

/// Sizes of a table.
#[derive(Debug, Clone, Copy, PartialEq)]
#[non_exhaustive]
pub struct TableStats {
    /// Keys stored.
    pub keys: u64,
    /// Blocks.
    pub blocks: u64,
    /// Block size in bytes.
    pub block_size: u32,
    /// Bytes of the whole file.
    pub file_bytes: u64,
    /// File bits per key (every overhead included); 0 for an empty table.
    pub bits_per_key: f64,
    /// Heap bytes the open reader holds (last-key array and decode table; a decode table
    /// shared with other open tables of the same code is counted in each).
    pub memory_bytes: u64,
}

/// What [`Table::verify`] checked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct VerifyReport {
    /// Keys decoded.
    pub keys: u64,
    /// Blocks checked.
    pub blocks: u64,
}

impl Table<Mmap> {
    /// The information bound for `n` distinct 64-bit keys: log2 C(2^64, n) / n bits per key, the
    /// fewest bits per key that any encoding of an arbitrary n-key set can average.
    ///
    /// Computed as 64 − log2(n!)/n − (n − 1)/(2 · 2^64 · ln 2) (the last term, from
    /// log2(2^64 − i) ≈ 64 − i/(2^64 ln 2), is below 10^-9 bits for n up to 10^10), with log2(n!)
    /// summed exactly for small n and by Stirling's series above.
    pub fn information_bound(n: u64) -> f64 {
        super::information_bound(n)
    }

    /// Map and open the table file at `path`.
    pub fn open(path: impl AsRef<Path>) -> Result<Table<Mmap>> {
        Table::open_with(path, false)
    }

    /// Map and open the table file at `path`; with `populate`, read the whole file into the
    /// page cache and enter every page in the process's page tables now (`MAP_POPULATE`, and
    /// what is not cached yet read in 2 MiB folios first, `os::read_in_huge_folios`; Linux
    /// only, ignored elsewhere), so that no query takes a page fault later, and check every
    /// block's crc32 now.
    pub(crate) fn open_with(path: impl AsRef<Path>, populate: bool) -> Result<Table<Mmap>> {
        let path = path.as_ref();
        let file =
            std::fs::File::open(path).map_err(|e| Error::io(path.to_path_buf(), "open", e))?;
        let mut opts = memmap2::MmapOptions::new();
        if populate {
            // What is not cached yet is read in 2 MiB folios through a map of its own, so that
            // the reader's map below enters them in 2 MiB pages, and keeps no hint of its own:
            // a page evicted later faults back in alone, not with the 2 MiB around it.
            // SAFETY: as the map's below; this one is dropped when the file is read.
            if let Ok(tmp) = unsafe { memmap2::MmapOptions::new().map(&file) } {
                crate::os::read_in_huge_folios(&tmp);
            }
            opts.populate();
        }
        // SAFETY: the map is read-only, and simdex never modifies a table file in place (files are
        // replaced by rename). Another process truncating the file under us is outside the
        // contract, as with every mmap-based reader.
        let map =
            unsafe { opts.map(&file) }.map_err(|e| Error::io(path.to_path_buf(), "mmap", e))?;
        // Lookups touch one block in a random place: tell the kernel not to read ahead around
        // each fault (with read-ahead, 10k queries on a 100M-key index pulled 5 GB into RSS).
        #[cfg(unix)]
        let _ = map.advise(memmap2::Advice::Random);
        let mut t = Table::from_bytes(map).map_err(|e| e.with_path(path))?;
        t.path = Some(path.to_path_buf());
        if populate {
            // The whole file is being read anyway: check every block now, at the speed of a
            // sequential scan, so that no query reads a whole block to check it later.
            t.check_block_crcs()?;
        }
        Ok(t)
    }
}

impl Table<Vec<u8>> {
    /// Read the table file at `path` into memory (in huge pages where the kernel allows) and
    /// check every block's crc32 now, so that no query checks one later.
    ///
    /// A mapped table checks a block the first time a query reads it: at 100M keys and more,
    /// nearly every probe of a fresh reader meets an unchecked block and reads all of it. A
    /// service that holds the index in memory anyway pays that once here, at the speed of a
    /// sequential scan, and its probes then read only the lines they decode.
    pub fn open_in_memory(path: impl AsRef<Path>) -> Result<Table<Vec<u8>>> {
        let path = path.as_ref();
        let read = std::fs::File::open(path).and_then(crate::os::read_into_huge_pages);
        let bytes = read.map_err(|e| Error::io(path.to_path_buf(), "read", e))?;
        let mut t = Table::from_bytes(bytes).map_err(|e| e.with_path(path))?;
        t.path = Some(path.to_path_buf());
        t.check_block_crcs()?;
        Ok(t)
    }
}

impl<D: AsRef<[u8]>> Table<D> {
    /// Check the crc32 of every block this reader has not checked yet (the first mismatch is
    /// the error).
    pub(crate) fn check_block_crcs(&mut self) -> Result<()> {
        (0..self.block_count()).try_for_each(|i| self.check_block_crc(i))?;
        self.all_checked = true;
        Ok(())
    }

    /// Check block `i`'s crc32 (in range) unless this reader has.
    #[inline]
    pub(super) fn check_block_crc(&self, i: u64) -> Result<()> {
        if !self.crc_is_checked(i) {
            block::check_crc(self.block_bytes(i), i, self.block_offset(i))
                .map_err(|e| self.attach(e))?;
            self.crc_checked.set(i);
        }
        Ok(())
    }

    /// Open a table held in `data`, validating header, trailer and footer.
    pub fn from_bytes(data: D) -> Result<Table<D>> {
        let bytes = data.as_ref();
        let len = bytes.len() as u64;
        let min = (HEADER_LEN + TRAILER_LEN + 4) as u64;
        if len < min {
            return Err(Error::corrupt(
                "table file",
                0,
                format!("at least {min} bytes"),
                format!("{len} bytes (truncated)"),
            ));
        }
        let header = Header::decode(bytes)?;
        let toff = len - TRAILER_LEN as u64;
        let trailer = Trailer::decode(&bytes[toff as usize..], toff)?;
        let version = header.version;
        if trailer.version != version {
            return Err(Error::corrupt(
                "table trailer version",
                toff + 16,
                format!("{version} (the header's)"),
                trailer.version,
            ));
        }
        let b = header.block_size as u64;
        let n = header.block_count;
        let want_footer = n
            .checked_mul(b)
            .and_then(|x| x.checked_add(HEADER_LEN as u64));
        let want_len = n.checked_mul(8).and_then(|x| x.checked_add(4));
        if want_footer != Some(trailer.footer_offset) || want_len != Some(trailer.footer_len) {
            return Err(Error::corrupt(
                "table trailer footer location",
                toff,
                format!("footer at {want_footer:?} of length {want_len:?} for {n} blocks"),
                format!(
                    "at {} of length {}",
                    trailer.footer_offset, trailer.footer_len
                ),
            ));
        }
        if trailer.footer_offset.checked_add(trailer.footer_len) != Some(toff) {
            return Err(Error::corrupt(
                "table file length",
                toff,
                format!(
                    "{} bytes for {n} blocks of {b}",
                    trailer.footer_offset + trailer.footer_len + TRAILER_LEN as u64
                ),
                format!("{len} bytes"),
            ));
        }
        let keys = header.key_count;
        let max = n.saturating_mul(block::max_keys(header.block_size));
        if keys < n || keys > max || (keys == 0) != (n == 0) {
            return Err(Error::corrupt(
                "table header key count",
                24,
                format!("between {n} and {max} for {n} blocks"),
                keys,
            ));
        }
        let foff = trailer.footer_offset as usize;
        let arr = &bytes[foff..foff + n as usize * 8];
        check_crc(
            || "table footer crc32".into(),
            trailer.footer_offset,
            &bytes[foff..toff as usize],
        )?;
        let mut last_keys = Vec::with_capacity(n as usize);
        crate::os::huge_pages(&mut last_keys);
        for (i, c) in arr.chunks_exact(8).enumerate() {
            let k = LE::read_u64(c);
            if let Some(&p) = last_keys.last()
                && k <= p
            {
                return Err(Error::corrupt(
                    "table footer last-key array",
                    (foff + i * 8) as u64,
                    format!("a key greater than {p:#018x}"),
                    format!("{k:#018x}"),
                ));
            }
            last_keys.push(k);
        }
        let code = Code::from_lengths(&header.code_lengths).expect("validated by Header::decode");
        let codec = header.codec;
        let decode = DecodeTable::shared(codec as u8, &code, |s| codec.suffix_bits(s));
        let crc_checked = Checked::new(n);
        let directory = Directory::new(&last_keys);
        let short_head = ahead::short_head(&header);
        Ok(Table {
            data,
            path: None,
            header,
            decode,
            last_keys,
            directory,
            crc_checked,
            all_checked: false,
            short_head,
        })
    }

    /// The file this table was opened from, if any.
    pub fn path(&self) -> Option<&Path> {
        self.path.as_deref()
    }

    /// Number of keys.
    pub fn len(&self) -> u64 {
        self.header.key_count
    }

    /// True if the table holds no keys.
    pub fn is_empty(&self) -> bool {
        self.header.key_count == 0
    }

    /// Number of blocks.
    pub fn block_count(&self) -> u64 {
        self.header.block_count
    }

    /// Block size in bytes.
    pub fn block_size(&self) -> u32 {
        self.header.block_size
    }

    /// How the blocks are coded.
    pub fn codec(&self) -> crate::codec::Codec {
        self.header.codec
    }

    /// Keys per segment of the table's blocks: 0 for a format-1 table (no skip entries).
    pub fn segment_keys(&self) -> u32 {
        self.header.segment_keys
    }

    /// The prefix bits the segments of a format-4 table are aligned to (each starts at the
    /// first key of its top bits), 0 in other formats.
    pub fn aligned_prefix(&self) -> u32 {
        self.header.aligned_prefix
    }

    /// The file's format version: 1 (no skip entries), 2, 3 or 4 (segmented; 3 with compact
    /// block heads, 4 with segments aligned to prefix runs: what this build writes).
    pub fn format_version(&self) -> u32 {
        self.header.version
    }

    /// The permutation the keys are sorted under.
    pub fn permutation(&self) -> &Permutation {
        &self.header.permutation
    }

    internal_fn! {
        /// The Huffman code lengths for symbols 0..=63.
        fn code_lengths(&self) -> &[u8; 64] {
            &self.header.code_lengths
        }
    }

    internal_fn! {
        /// The last key of every block.
        fn last_keys(&self) -> &[u64] {
            &self.last_keys
        }
    }

    internal_fn! {
        /// The raw bytes.
        fn bytes(&self) -> &[u8] {
            self.data.as_ref()
        }
    }

    /// Sizes.
    pub fn stats(&self) -> TableStats {
        let file_bytes = self.data.as_ref().len() as u64;
        TableStats {
            keys: self.len(),
            blocks: self.block_count(),
            block_size: self.block_size(),
            file_bytes,
            bits_per_key: if self.is_empty() {
                0.0
            } else {
                file_bytes as f64 * 8.0 / self.len() as f64
            },
            memory_bytes: (self.last_keys.capacity() * 8
                + self.directory.heap_bytes()
                + self.decode.heap_bytes()
                + self.crc_checked.heap_bytes()) as u64,
        }
    }

    pub(super) fn attach(&self, e: Error) -> Error {
        match &self.path {
            Some(p) => e.with_path(p),
            None => e,
        }
    }

    /// The segment layout of block `i` (in range) and its coded stream, `None` if its count
    /// leaves no room for its skip entries (the block decoder names that corruption).
    #[inline(always)]
    pub(crate) fn segments<const A: bool>(&self, i: u64) -> Option<(Segments<'_, A>, &[u8])> {
        let bytes = self.block_bytes(i);
        let l = self.layout(i);
        let (segs, at) = Segments::of_block(bytes, l.head, l.segment_keys, l.last)?;
        Some((segs, &bytes[at..bytes.len() - block::BLOCK_TRAILER_LEN]))
    }

    /// [`segments`](Self::segments) of block `i` (in range) from the shape a parse of it
    /// gave before, without parsing its head again.
    #[inline(always)]
    pub(crate) fn segments_of<const A: bool>(
        &self,
        i: u64,
        shape: Shape,
    ) -> (Segments<'_, A>, &[u8]) {
        shape.bind(self.block_bytes(i))
    }

    /// The blocks a range `lo..=hi` whose first block is `i` (from [`find_block`](Self::find_block)
    /// of `lo`, in range) will decode, as far as the in-memory last keys tell without reading a
    /// block: `i..i + 1`, or `i..i + 2` when the range goes on past block `i`'s last key. At a
    /// billion keys a probe's range holds ~15 keys and crosses into the next block on about 4
    /// probes in 10; prefetching that block with the first overlaps its miss with the others
    /// instead of paying it after the first block is decoded.
    #[inline]
    pub(crate) fn range_blocks(&self, i: u64, hi: u64) -> std::ops::Range<u64> {
        i..i + 1 + self.range_continues(i, hi) as u64
    }

    /// Whether a range ending at `hi` that reaches block `i` (in range) goes on into block
    /// `i + 1`: block `i`'s last key is below `hi` and a next block exists. The one rule of
    /// every scan's step to the next block and of the prefetch that anticipates it.
    #[inline]
    pub(crate) fn range_continues(&self, i: u64, hi: u64) -> bool {
        self.last_keys[i as usize] < hi && i + 1 < self.block_count()
    }

    /// The last key of block `i` (in range), from the in-memory array.
    #[inline]
    pub(crate) fn last_key(&self, i: u64) -> u64 {
        self.last_keys[i as usize]
    }

    /// How block `i` (in range) is laid out beyond its bytes: the table's S, the block's last
    /// key and, in format 3, the key before it (the previous block's last).
    #[inline(always)]
    pub(crate) fn layout(&self, i: u64) -> block::Layout {
        let head = if self.header.version >= super::format::COMPACT_VERSION {
            block::Head::Compact {
                after: i.checked_sub(1).map(|p| self.last_keys[p as usize]),
                align: self.header.aligned_prefix as u8,
            }
        } else {
            block::Head::Wide
        };
        block::Layout {
            segment_keys: self.header.segment_keys,
            last: self.last_keys[i as usize],
            head,
        }
    }

    /// The decode table of the table's Huffman code.
    pub(crate) fn decode_table(&self) -> &DecodeTable {
        &self.decode
    }

    /// The file offset of block `i`.
    pub(super) fn block_offset(&self, i: u64) -> u64 {
        HEADER_LEN as u64 + i * self.header.block_size as u64
    }

    /// The bytes of block `i` (in range).
    pub(crate) fn block_bytes(&self, i: u64) -> &[u8] {
        let b = self.header.block_size as usize;
        let off = HEADER_LEN + i as usize * b;
        &self.data.as_ref()[off..off + b]
    }

    internal_fn! {
        /// Check block `i`'s crc (once per reader) and start decoding it.
        fn block(&self, i: u64) -> Result<BlockDecoder<'_>> {
            self.open_block(i, block::SeekTo::Segment(0))
        }
    }

    /// Check block `i`'s crc (once per reader) and start decoding it where `at` says.
    #[inline]
    fn open_block<const A: bool>(&self, i: u64, at: block::SeekTo) -> Result<BlockDecoder<'_, A>> {
        assert!(i < self.block_count(), "block {i} out of range");
        let (bytes, off) = (self.block_bytes(i), self.block_offset(i));
        self.check_block_crc(i)?;
        let (codec, decode) = (self.header.codec, &self.decode);
        BlockDecoder::open_at(bytes, i, off, codec, decode, self.layout(i), at)
            .map_err(|e| self.attach(e))
    }

    /// [`block`](Self::block) `i`, started at the last segment that can hold a key `>= lo`
    /// first: the keys before it are skipped without decoding.
    #[inline]
    pub(crate) fn block_at(&self, i: u64, lo: u64) -> Result<BlockDecoder<'_>> {
        self.open_block(i, block::SeekTo::Key(lo))
    }

    /// [`block_at`](Self::block_at) for a scan of a range ending at `hi`: in format 4 the
    /// decode ends at a segment that starts above `hi` (`BlockDecoder::stop_above`).
    #[inline]
    pub(crate) fn block_at_until(&self, i: u64, lo: u64, hi: u64) -> Result<BlockDecoder<'_>> {
        let mut d = self.block_at(i, lo)?;
        d.stop_above(hi);
        Ok(d)
    }

    /// [`block`](Self::block) `i`, started at segment `j` (from
    /// [`prefetch_segment`](Self::prefetch_segment)); `A` as [`BlockDecoder`]'s (`false` only
    /// for a table of formats 1–3).
    #[inline]
    pub(crate) fn block_at_segment<const A: bool>(
        &self,
        i: u64,
        j: u32,
    ) -> Result<BlockDecoder<'_, A>> {
        self.open_block(i, block::SeekTo::Segment(j))
    }

    /// The first block whose last key is `>= key` (`block_count()` if none): the only block
    /// that can hold the smallest stored key `>= key`.
    ///
    /// The directory's bucket for the key's slice names the block, or narrows the search to
    /// the slice's blocks (see `table::directory`), whose last keys a binary search reads.
    #[inline]
    pub fn find_block(&self, key: u64) -> usize {
        let lk = self.last_keys.as_slice();
        match self.directory.slice(key) {
            Some((lo, hi)) => lo + lk[lo..hi].partition_point(|&k| k < key),
            None => lk.partition_point(|&k| k < key),
        }
    }

    /// Call `f` on every key in `lo..=hi`, ascending, until it returns `false`. Returns whether
    /// the scan ran to the end of the range. The fast path behind queries: no iterator state,
    /// no `Result` per key.
    #[inline]
    pub fn for_each_in(&self, lo: u64, hi: u64, f: impl FnMut(u64) -> bool) -> Result<bool> {
        let (mut blocks, mut keys) = (0, 0);
        self.scan_range(lo, hi, &mut blocks, &mut keys, f)
    }

    /// Call `f` on every key of blocks `blocks` (a sub-range of `0..block_count()`), in order:
    /// a sequential scan, as batch mode streams a stored table past an in-memory one.
    pub fn for_each_in_blocks(
        &self,
        blocks: std::ops::Range<u64>,
        f: impl FnMut(u64),
    ) -> Result<()> {
        assert!(
            blocks.end <= self.block_count(),
            "block range out of bounds"
        );
        self.skip_scan(blocks, || Some((0, u64::MAX)), |_| {}, f)
    }
}
