//! Asking ahead: the hints a query's prefetched rounds give before they read (the CPU's cache
//! for the directory bucket, the last keys, the block's first lines and the segment's lines;
//! the kernel for blocks not in memory), and the block search split into those rounds. No
//! hint changes a result.

use super::Table;
use crate::table::directory::NO_SLOT;
use crate::table::segment::{Entry, Shape};

impl<D: AsRef<[u8]>> Table<D> {
    /// A search of `key` in rounds, first round: its directory slot, the bucket prefetched.
    #[inline]
    pub(crate) fn locate(&self, key: u64) -> u32 {
        let (slot, p) = self.directory.locate(key);
        if let Some(p) = p {
            prefetch_read(p);
        }
        slot
    }

    /// Second round, once the bucket has arrived: the blocks `from..to` of the slot to
    /// search, `(b, b)` where the bucket decided the block `b` (most searches). A decided
    /// block's first lines and last keys are prefetched at once, so that its misses overlap
    /// the bucket's successors' instead of waiting for a third round; otherwise the first last
    /// key the search reads is. `(NO_SLOT, NO_SLOT)` for a key outside every slice (the third
    /// round then searches without the directory). A directory is built only for at most
    /// `u32::MAX` blocks, so a slice's bounds fit.
    #[inline(always)]
    pub(crate) fn slice_of(&self, slot: u32, key: u64) -> (u32, u32) {
        match self.directory.slice_at(slot, key) {
            Some((lo, hi)) => {
                if lo == hi {
                    if (lo as u64) < self.block_count() {
                        self.prefetch_block(lo as u64);
                        self.prefetch_layout(lo);
                    }
                } else {
                    self.prefetch_search(lo, hi);
                }
                (lo as u32, hi as u32)
            }
            None => (NO_SLOT, NO_SLOT),
        }
    }

    /// Whether [`slice_of`](Self::slice_of) prefetched the block its search finds.
    #[inline]
    pub(crate) fn block_prefetched(&self, slice: (u32, u32)) -> bool {
        decided(slice).is_some()
    }

    /// Third round: [`find_block`](Self::find_block) of `key`, among the blocks `from..to`
    /// of its [`slice_of`](Self::slice_of), or by `find_block` itself outside every slice.
    ///
    /// The block a bucket decided (most probes) is answered inline; only a search leaves the
    /// plan's loop for [`search_block_in`](Self::search_block_in) (the call and its empty
    /// search cost 20–40 instructions a probe at 1B-like sizes).
    #[inline(always)]
    pub(crate) fn find_block_in(&self, key: u64, slice: (u32, u32)) -> usize {
        match decided(slice) {
            Some(b) => b,
            None => self.search_block_in(key, slice),
        }
    }

    /// [`find_block_in`](Self::find_block_in) by a search of the last keys.
    #[inline(never)]
    fn search_block_in(&self, key: u64, (from, to): (u32, u32)) -> usize {
        if from == NO_SLOT {
            // (Also a slice `(n, n)` of a table of exactly `u32::MAX` blocks: the same answer.)
            return self.find_block(key);
        }
        let (from, to) = (from as usize, to as usize);
        from + self.last_keys[from..to].partition_point(|&k| k < key)
    }

    /// Prefetch what the rounds after the search read of the in-memory last keys about block
    /// `i` (in range): its own, whether a range goes on past it, and the one before it, which
    /// its head's keys are coded against.
    #[inline]
    fn prefetch_layout(&self, i: usize) {
        prefetch_read((&self.last_keys[i] as *const u64).cast());
        if let Some(before) = i.checked_sub(1) {
            prefetch_read((&self.last_keys[before] as *const u64).cast());
        }
    }

    /// Prefetch the last key a binary search of blocks `lo..hi` reads first.
    #[inline]
    fn prefetch_search(&self, lo: usize, hi: usize) {
        if lo < hi {
            prefetch_read((&self.last_keys[(lo + hi) / 2] as *const u64).cast());
        }
    }

    /// Ask the CPU to start loading block `i` (in range), located by a search of the rounds
    /// above: its first cache lines and its crc-checked flag, so that the probes of one query
    /// overlap their cache misses instead of paying them one after another. A hint: no effect
    /// on results.
    #[inline]
    pub(crate) fn prefetch_block(&self, i: u64) {
        let block = self.block_bytes(i);
        // A block this reader has not read yet is read whole by its crc check before its
        // decode starts: ask for more of it now, so that the check's misses overlap the other
        // probes' instead of following one another.
        let lines = if self.crc_is_checked(i) {
            PREFETCH_LINES
        } else {
            UNCHECKED_PREFETCH_LINES
        };
        // Lines of the block only (one bounds check for them all), in loops of a constant
        // count where the block holds them, which unroll (a loop of a variable count cost
        // about 30 instructions a probe).
        let p = block.as_ptr();
        if block.len() >= UNCHECKED_PREFETCH_LINES * 64 {
            if lines == PREFETCH_LINES {
                // Only the head's lines where its skip entries fit in 2 (`short_head`).
                if self.short_head {
                    prefetch_lines::<SHORT_HEAD_LINES>(p);
                } else {
                    prefetch_lines::<PREFETCH_LINES>(p);
                }
            } else {
                prefetch_lines::<UNCHECKED_PREFETCH_LINES>(p);
            }
            return;
        }
        for line in 0..(block.len() / 64).min(lines) {
            prefetch_read(p.wrapping_add(line * 64));
        }
    }

    /// Whether block `i`'s crc32 has been checked by this reader.
    #[inline]
    pub(super) fn crc_is_checked(&self, i: u64) -> bool {
        self.all_checked || self.crc_checked.is_set(i)
    }

    /// For a segmented table, once [`prefetch_block`](Self::prefetch_block) of block `i` (in
    /// range) has brought its skip entries: where a scan of `lo` starts decoding
    /// ([`Segments::find_entry`](crate::table::segment::Segments::find_entry): the segment and
    /// what was read of its skip entries), its
    /// first lines prefetched (a large block's first lines do not hold them), and the block's
    /// segment shape for the decode to [`bind`](Shape::bind) (`None` where its head is not
    /// one: the block decoder names that). Segment 0 for an unsegmented table. A hint: a wrong
    /// segment only costs decode work.
    ///
    /// Written into `entry` and `shape` in place: returned as a pair, the 80 bytes were built
    /// and then copied into the probe's plan (~30 instructions a probe).
    #[inline]
    pub(crate) fn prefetch_segment<const A: bool>(
        &self,
        i: u64,
        lo: u64,
        entry: &mut Entry,
        shape: &mut Option<Shape>,
    ) {
        *entry = Entry::default();
        *shape = None;
        if self.header.segment_keys == 0 {
            return;
        }
        let Some((segs, stream)) = self.segments::<A>(i) else {
            return;
        };
        let e = segs.find_entry(lo);
        let at = (e.offset() / 8) as usize;
        for line in [at, at + 64] {
            if let Some(p) = stream.get(line.min(stream.len().saturating_sub(1))..) {
                prefetch_read(p.as_ptr());
            }
        }
        *entry = e;
        *shape = Some(segs.shape());
    }
}

/// The block a slice from [`Table::slice_of`] names by itself (its bucket decided it), if it
/// does: the one test behind both [`Table::block_prefetched`] and the search's shortcut.
#[inline(always)]
fn decided((from, to): (u32, u32)) -> Option<usize> {
    (from == to && from != NO_SLOT).then_some(from as usize)
}

/// Whether [`Table::prefetch_block`] asks for [`SHORT_HEAD_LINES`] of a table's checked
/// blocks instead of [`PREFETCH_LINES`]: where its blocks are at least 1 KiB and the skip
/// entries of a block of its average key count end within those lines. A probe reads a
/// block's head to find its segment, whose own lines it asks for next (`prefetch_segment`);
/// the lines after the skip entries hold that segment only for probes that start near the
/// block's start, and they take fill buffers the query's other misses need. At 1B keys
/// (format 4, 1 KiB blocks, skip entries of 37-74 bytes) 2 lines took 0.95x the time of 4 on
/// a 16-core Xeon; at 100M on the 2-core VM, 0.93-0.98 (docs/log/benchmarks.md, “the A/B
/// harness's order bias, and a segment guessed before the head”).
/// Blocks of 4 KiB (1M and 10M keys) keep 4: their skip entries take 3 lines or more.
pub(super) fn short_head(h: &crate::table::format::Header) -> bool {
    use crate::table::format::COMPACT_VERSION;
    use crate::table::segment as layout;
    let b = h.block_size;
    if h.segment_keys == 0
        || h.version < COMPACT_VERSION
        || (b as usize) < UNCHECKED_PREFETCH_LINES * 64
        || h.block_count == 0
    {
        return false;
    }
    let count = (h.key_count / h.block_count).min(u16::MAX as u64) as u32;
    let align = h.aligned_prefix;
    let lead = layout::Head::Compact {
        after: None,
        align: align as u8,
    }
    .bytes();
    lead + layout::skip_entries_len(align, count / h.segment_keys, b, count)
        <= SHORT_HEAD_LINES * 64
}

/// Lines of a short head ([`short_head`]).
const SHORT_HEAD_LINES: usize = 2;

/// Cache lines of a block prefetched ahead of its decode: all of a 256-byte block (1 or 2
/// lines measured no faster at 100M keys, the log's “an A/B harness”; a short head asks for 2,
/// above).
const PREFETCH_LINES: usize = 4;

/// Cache lines prefetched of a block whose crc this reader has not checked yet: all of a
/// 1024-byte block. At 100M keys nearly every probe of a fresh reader meets such a block; its
/// check then read the block's other 12 lines on demand, 1.15-1.25x slower per query than with
/// them prefetched (B = 1024; at 10M, B = 4096, prefetching 8, 16 or all 64 lines measured the
/// same as 4).
const UNCHECKED_PREFETCH_LINES: usize = 16;

/// Read prefetch hints for the `N` cache lines from `p` on.
#[inline(always)]
fn prefetch_lines<const N: usize>(p: *const u8) {
    for line in 0..N {
        prefetch_read(p.wrapping_add(line * 64));
    }
}

/// A read prefetch hint for the cache line holding `p`.
#[inline(always)]
fn prefetch_read(p: *const u8) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: a prefetch is a hint that never faults, whatever the address; SSE, which
    // `_mm_prefetch` needs, is part of every x86-64 CPU.
    unsafe {
        use std::arch::x86_64::{_MM_HINT_T0, _mm_prefetch};
        _mm_prefetch::<_MM_HINT_T0>(p.cast());
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = p;
}

/// Read-ahead hints (the kernel calls are in `crate::os`).
impl<D: AsRef<[u8]>> Table<D> {
    /// Ask the kernel to start reading blocks `blocks` (in range) that are not in memory: one
    /// request for the whole run, read sequentially. A hint: no effect on results; a no-op off
    /// Unix.
    pub(crate) fn will_need_blocks(&self, blocks: std::ops::Range<u64>) {
        if blocks.is_empty() {
            return;
        }
        let start = self.block_offset(blocks.start) as usize;
        let end = self.block_offset(blocks.end) as usize;
        crate::os::will_need(&self.bytes()[start..end]);
    }

    /// The fraction of a sample of the table's pages that is in memory (1.0 off Unix, and for
    /// tables read into the heap).
    pub(crate) fn resident_fraction(&self) -> f64 {
        crate::os::resident_fraction(self.bytes())
    }
}

#[cfg(test)]
mod tests {
    use super::short_head;
    use crate::codec::Codec;
    use crate::permutation::Permutation;
    use crate::table::format::{Header, version_for};

    /// A header of `keys` keys in blocks of `block_size` bytes, segments of `s` keys aligned
    /// to `align` prefix bits (format 4; 0: format 3), the block count from `bits` per key.
    fn header(keys: u64, bits: u64, block_size: u32, s: u32, align: u32) -> Header {
        Header {
            codec: Codec::HDelta,
            block_size,
            key_count: keys,
            block_count: (keys * bits).div_ceil(block_size as u64 * 8),
            permutation: Permutation::identity(),
            code_lengths: [0; crate::codec::huffman::NUM_SYMBOLS],
            segment_keys: s,
            version: version_for(s, align),
            aligned_prefix: align,
        }
    }

    /// Two head lines where they measured faster (1 KiB blocks at 1B and 100M keys,
    /// skip entries of ~50 bytes), four where the skip entries run past them (4 KiB blocks at
    /// 1M and 10M keys), in blocks of at most four lines, or without skip entries.
    #[test]
    fn short_heads_where_the_skip_entries_fit_two_lines() {
        assert!(short_head(&header(1_000_000_000, 39, 1024, 20, 29)));
        assert!(short_head(&header(100_000_000, 42, 1024, 20, 0)));
        assert!(!short_head(&header(10_000_000, 45, 4096, 20, 26)));
        assert!(!short_head(&header(1_000_000, 48, 4096, 8, 22)));
        assert!(!short_head(&header(1_000_000, 48, 256, 8, 22)));
        assert!(!short_head(&header(1_000_000, 48, 1024, 0, 0)));
        assert!(!short_head(&header(0, 48, 1024, 20, 0)));
    }
}
