//! The block layout the id map (`IDS`) and the document map (`DOCS`) share
//! (`format-spec/store.md`): a header (48 bytes, 56 for a document map of version 2),
//! fixed-size blocks of entries, and a footer of each block's first key.
//!
//! ```text
//! header | block 0 | block 1 | ... | first key of each block (8 B each) | crc32
//! block: count u32 | used u32 | entry stream | zero padding | crc32 (salted by the block offset)
//! ```
//!
//! Each map encodes its own entries and header; this module frames them.

use std::io::{Seek, SeekFrom, Write};

use byteorder::{ByteOrder, LittleEndian as LE};

use crate::checksum::Checked;
use crate::error::{Error, Result};
use crate::table::format::{check_crc, crc_at};

/// Header length of the id map and of a document map of version 1.
pub const HEADER_LEN: usize = 48;
/// Per-block overhead: count, used length, crc.
pub const BLOCK_OVERHEAD: usize = 12;

/// Writes a map's blocks and footer; the header is written first as a placeholder and again,
/// complete, by [`BlockWriter::finish`].
pub struct BlockWriter<W: Write + Seek> {
    w: W,
    /// What an I/O error was doing ("write id map").
    op: &'static str,
    header_len: usize,
    block_size: usize,
    blocks: u64,
    block: Vec<u8>,
    count: u32,
    open: bool,
    firsts: Vec<u64>,
}

impl<W: Write + Seek> BlockWriter<W> {
    /// Start a map with blocks of `block_size` bytes, writing `header` as a placeholder.
    pub fn new(
        mut w: W,
        op: &'static str,
        block_size: u32,
        header: &[u8],
    ) -> Result<BlockWriter<W>> {
        w.write_all(header).map_err(|e| Error::io(None, op, e))?;
        Ok(BlockWriter {
            w,
            op,
            header_len: header.len(),
            block_size: block_size as usize,
            blocks: 0,
            block: Vec::with_capacity(block_size as usize),
            count: 0,
            open: false,
            firsts: Vec::new(),
        })
    }

    /// True if an entry of `len` bytes fits the open block.
    pub fn fits(&self, len: usize) -> bool {
        self.block.len() - 8 + len <= self.block_size - BLOCK_OVERHEAD
    }

    /// Add an entry, opening a block whose first key is `key` if none is open.
    pub fn push(&mut self, key: u64, entry: &[u8]) {
        if !self.open {
            self.block.clear();
            self.block.extend_from_slice(&[0u8; 8]);
            self.firsts.push(key);
            self.count = 0;
            self.open = true;
        }
        self.block.extend_from_slice(entry);
        self.count += 1;
    }

    /// Write the open block, if any.
    pub fn flush(&mut self) -> Result<()> {
        if !self.open {
            return Ok(());
        }
        let bs = self.block_size;
        let offset = (self.header_len + self.blocks as usize * bs) as u64;
        let used = (self.block.len() - 8) as u32;
        LE::write_u32(&mut self.block[0..4], self.count);
        LE::write_u32(&mut self.block[4..8], used);
        self.block.resize(bs - 4, 0);
        let crc = crc_at(offset, &self.block);
        self.block.extend_from_slice(&crc.to_le_bytes());
        self.w
            .write_all(&self.block)
            .map_err(|e| Error::io(None, self.op, e))?;
        self.blocks += 1;
        self.open = false;
        Ok(())
    }

    /// Write the open block, then the first-key footer, then `header(blocks)` over the
    /// placeholder (as long as it); the writer, positioned at the end.
    pub fn finish<H: AsRef<[u8]>>(mut self, header: impl FnOnce(u64) -> H) -> Result<W> {
        self.flush()?;
        let op = self.op;
        let io = |e| Error::io(None, op, e);
        let foff = self.header_len as u64 + self.blocks * self.block_size as u64;
        let mut footer = Vec::with_capacity(self.firsts.len() * 8 + 4);
        for k in &self.firsts {
            footer.extend_from_slice(&k.to_le_bytes());
        }
        let crc = crc_at(foff, &footer);
        footer.extend_from_slice(&crc.to_le_bytes());
        self.w.write_all(&footer).map_err(io)?;
        let end = foff + footer.len() as u64;
        self.w.seek(SeekFrom::Start(0)).map_err(io)?;
        let header = header(self.blocks);
        debug_assert_eq!(header.as_ref().len(), self.header_len);
        self.w.write_all(header.as_ref()).map_err(io)?;
        self.w.seek(SeekFrom::Start(end)).map_err(io)?;
        self.w.flush().map_err(io)?;
        Ok(self.w)
    }
}

/// Check a map's length for a header of `header_len` bytes and `blocks` blocks of
/// `block_size` bytes, and read its footer of first keys (crc checked, ascending; `strict`: no
/// two equal). `key` names the keys in errors.
pub fn read_footer(
    b: &[u8],
    header_len: usize,
    what: &str,
    key: &str,
    block_size: u32,
    blocks: u64,
    strict: bool,
) -> Result<Vec<u64>> {
    let bs = u64::from(block_size);
    let expected = blocks
        .checked_mul(bs + 8)
        .and_then(|x| x.checked_add(header_len as u64 + 4));
    if expected != Some(b.len() as u64) {
        return Err(Error::corrupt(
            format!("{what} length"),
            0,
            match expected {
                Some(e) => format!("{e} bytes for {blocks} blocks"),
                None => "a block count that fits".into(),
            },
            format!("{} bytes", b.len()),
        ));
    }
    let foff = header_len + (blocks * bs) as usize;
    check_crc(
        || format!("{what} first-{key} array crc32"),
        foff as u64,
        &b[foff..],
    )?;
    let firsts: Vec<u64> = b[foff..b.len() - 4]
        .chunks_exact(8)
        .map(LE::read_u64)
        .collect();
    if firsts
        .windows(2)
        .any(|w| w[0] > w[1] || (strict && w[0] == w[1]))
    {
        return Err(Error::corrupt(
            format!("{what} first-{key} array"),
            foff as u64,
            format!("ascending {key}s"),
            "a descending pair",
        ));
    }
    Ok(firsts)
}

/// Block `i` of a map whose header has `header_len` bytes: its crc checked, (entry count ≥ 1,
/// entry stream, file offset).
pub fn read_block<'a>(
    b: &'a [u8],
    header_len: usize,
    what: &str,
    block_size: u32,
    i: usize,
    checked: &Checked,
) -> Result<(u32, &'a [u8], u64)> {
    let bs = block_size as usize;
    let off = header_len + i * bs;
    let blk = &b[off..off + bs];
    let first_read = !checked.is_set(i as u64);
    if first_read {
        check_crc(|| format!("{what} block {i} crc32"), off as u64, blk)?;
    }
    let count = LE::read_u32(&blk[0..4]);
    let used = LE::read_u32(&blk[4..8]) as usize;
    if count == 0 || used > bs - BLOCK_OVERHEAD {
        return Err(Error::corrupt(
            format!("{what} block {i}"),
            off as u64,
            "a valid entry stream",
            "a bad count or used length",
        ));
    }
    if first_read {
        // The padding is zero, as the writer leaves it: a block reads one way only (no
        // cheaper than the crc just checked over the same bytes).
        if let Some(at) = blk[8 + used..bs - 4].iter().position(|&x| x != 0) {
            return Err(Error::corrupt(
                format!("{what} block {i} padding"),
                (off + 8 + used + at) as u64,
                "zero bytes after the entry stream",
                format!("{:#04x}", blk[8 + used + at]),
            ));
        }
        checked.set(i as u64);
    }
    Ok((count, &blk[8..8 + used], off as u64))
}
