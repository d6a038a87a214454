//! Seeking in a block's segments: the segment a probe of `lo` starts at (by the skip
//! entries), entering a segment at its skip entry, and the rule by which a sequential decode
//! passes from one segment to the next. Every rule here checks the entry it reads: an entry
//! that cannot be right yields `None`, and the block decoder names the fault.

use super::{Entry, PARTIAL_BITS, Segments, Start, partial};
use crate::codec::bitio;

impl<const A: bool> Segments<'_, A> {
    /// The start of segment `j` (1..=len) for a decode that ended segment `j - 1` at stream
    /// bit `pos` with key `prev`: [`enter`](Self::enter), and that segment's deltas must end
    /// exactly where `j` starts, below its first key. The one rule of every sequential decode.
    #[inline(always)]
    pub(crate) fn next(&self, stream: &[u8], j: u32, pos: u64, prev: u64) -> Option<Start> {
        let s = self.enter(stream, j)?;
        // `enter` read segment j's offset: its raw bits start `shift` bits before `s.pos`.
        // Format 4: a segment starts at the first key of its top `align` bits, and where the
        // key before it was decoded it is checked (the rule a seek relies on).
        let aligned = match self.shape.align {
            _ if !A => true,
            0 => true,
            a => (s.key ^ prev) >> (64 - a as u32) != 0,
        };
        (s.pos - self.shape.shift as u64 == pos && s.key > prev && aligned).then_some(s)
    }

    /// The last segment that can hold a key `>= lo` first: the last whose start key is below
    /// `lo` (by its skip entry), or 0. All keys `>= lo` of the block are then in it or later.
    #[inline]
    pub(crate) fn find(&self, lo: u64) -> u32 {
        self.find_entry_with::<false>(lo).j
    }

    /// [`find`](Self::find), with what the search read of the segment's skip entries: a
    /// decoder that [`enter_entry`](Self::enter_entry)s it does not read them again (two
    /// entries a probe, about 60 instructions, at every probe of the vector lanes).
    #[inline]
    pub(crate) fn find_entry(&self, lo: u64) -> Entry {
        self.find_entry_with::<true>(lo)
    }

    /// [`find_entry`](Self::find_entry), with the entries' key indices where `INDEX` asks for
    /// them (else 0: for [`find`](Self::find), whose decoder enters the segment by its number).
    #[inline]
    fn find_entry_with<const INDEX: bool>(&self, lo: u64) -> Entry {
        let m = self.len();
        if m == 0 || lo <= self.shape.base {
            return self.entry_of_with::<INDEX>(0);
        }
        if lo > self.shape.last {
            return self.entry_of_with::<INDEX>(m);
        }
        // `lo` is in (base, last], so it shares the block's top c bits: a start key whose
        // partial key is below lo's is below lo.
        let c = self.shape.c as u32;
        // Format 4: every segment start is the first key of its run (the keys sharing its top
        // `align` bits), so where a start lies in lo's run every key before it is below lo,
        // and a decode may start there however far above lo it is. The partial keys hold the
        // run's bits where `align` is below the partial key's last bit: count the entries up
        // to the end of lo's run, not those below lo. A probe of a whole run then decodes no
        // key before it.
        let a = self.shape.align as u32;
        let here = partial(lo, c) as u32;
        let mut target = here;
        if A && a != 0 {
            let from_bit = 64 - PARTIAL_BITS - self.shape.shift as u32;
            if a > c && a <= from_bit + PARTIAL_BITS {
                target = (target | (0xffff >> (a - from_bit))) + 1;
            }
        }
        // The number of entries below `target` (entries ascend in a well-formed block; in any
        // other, this still returns a segment in range). Keys spread about evenly over a
        // block, so the segment `lo`'s place between base and last points to is nearly always
        // right or next to it: start there, reading one or two entries (one cache line at
        // most, not a binary search's three), and search only when that fails. The place is
        // taken in partial keys, 16 bits, so that one integer division finds it (two u64 to
        // float conversions and two divisions cost a dozen instructions more, and two long
        // divisions on the way to the segment's prefetch).
        let (from, to) = (
            partial(self.shape.base, c) as u32,
            partial(self.shape.last, c) as u32,
        );
        // The place of `lo` itself, not of `target`: in format 4, `target` is where the next
        // run starts, most often the next segment's own entry, so a guess from it lands one
        // segment too far and costs two more entries read (at 1M keys, on most probes).
        let span = to.wrapping_sub(from) & 0xffff;
        let at = here.wrapping_sub(from) & 0xffff;
        let mut j = if !self.indexed() {
            // (No overflow: at most 16 bits times 16 bits, over 17 bits times S's 16, the
            // count clamped since it is not checked yet.)
            let keys = self.shape.count.min(1 << 16) - 1;
            (at * keys / ((span + 1) * self.shape.keys)).min(m)
        } else {
            // Segments of any length: by their count.
            ((at as u64 * (m as u64 + 1)) / (span as u64 + 1)).min(m as u64) as u32
        };
        for _ in 0..4 {
            let next = (j < m).then(|| self.entry_with::<INDEX>(j + 1));
            if let Some((p, _, _)) = next
                && (p as u32) < target
            {
                j += 1;
                continue;
            }
            let this = (j > 0).then(|| self.entry_with::<INDEX>(j));
            if let Some((p, _, _)) = this
                && p as u32 >= target
            {
                j -= 1;
                continue;
            }
            let (partial, at, first) = this.unwrap_or((0, 0, 0));
            let (next, end, next_first) =
                next.unwrap_or((0, self.shape.stream_bits as u64, self.last_index::<INDEX>()));
            return Entry {
                j,
                partial,
                next,
                at: at as u32,
                end: end as u32,
                first,
                next_first,
            };
        }
        let (mut base, mut size) = (0u32, m);
        while size > 0 {
            let half = size / 2;
            if (self.entry_with::<INDEX>(base + half + 1).0 as u32) < target {
                base += half + 1;
                size -= half + 1;
            } else {
                size = half;
            }
        }
        self.entry_of_with::<INDEX>(base)
    }

    /// The key index after the last segment's, in an [`Entry`]: the block's count where
    /// segments hold indices (format 4, read by a reader compiled for it), else 0, as the
    /// entries of other formats read: readers with and without format 4 agree on them.
    #[inline(always)]
    fn last_index<const INDEX: bool>(&self) -> u32 {
        if INDEX && self.indexed() {
            self.shape.count
        } else {
            0
        }
    }

    /// Segment `j` (0..=len) with its skip entry (none for segment 0) and its end.
    #[inline(always)]
    pub(crate) fn entry_of(&self, j: u32) -> Entry {
        self.entry_of_with::<true>(j)
    }

    /// [`entry_of`](Self::entry_of), its key indices read where `INDEX` asks for them.
    #[inline(always)]
    fn entry_of_with<const INDEX: bool>(&self, j: u32) -> Entry {
        let (partial, at, first) = if j > 0 {
            self.entry_with::<INDEX>(j)
        } else {
            (0, 0, 0)
        };
        let (next, end, next_first) = if j < self.len() {
            self.entry_with::<INDEX>(j + 1)
        } else {
            (0, self.shape.stream_bits as u64, self.last_index::<INDEX>())
        };
        Entry {
            j,
            partial,
            next,
            at: at as u32,
            end: end as u32,
            first,
            next_first,
        }
    }

    /// Start segment `j` (0..=len): its first key and stream bits, or `None` if the entry
    /// cannot be right (bits outside the stream or past the next segment's start, a partial
    /// key that disagrees with the block's prefix).
    #[inline(always)]
    pub(crate) fn enter(&self, stream: &[u8], j: u32) -> Option<Start> {
        self.enter_entry(stream, self.entry_of(j))
    }

    /// [`enter`](Self::enter) the segment of `e`, read from this block's skip entries
    /// ([`find_entry`](Self::find_entry)).
    #[inline(always)]
    pub(crate) fn enter_entry(&self, stream: &[u8], e: Entry) -> Option<Start> {
        let end = e.end as u64;
        if end > self.shape.stream_bits as u64 {
            return None;
        }
        // Format 4: the key indices of a segment after the first lie after key 0 and ascend
        // to the next segment's (the last segment's first key before an uncoded last key),
        // so that counting its keys cannot wrap (in other formats this holds by
        // construction).
        let (first, next) = if self.indexed() {
            let (first, next) = (e.first, e.next_first);
            if !self.indices_fit(e.j, first, next) {
                return None;
            }
            (first, next)
        } else {
            (0, 0)
        };
        if e.j == 0 {
            return Some(Start {
                key: self.shape.first,
                pos: self.shape.first_end as u64,
                end,
                first,
                next,
            });
        }
        let at = e.at as u64;
        let pos = at + self.shape.shift as u64;
        if pos > end {
            return None;
        }
        // At most 48 bits: one window.
        let raw = (bitio::peek(stream, at) >> 1) >> (63 - self.shape.shift);
        // The block's top c bits (of `base`), then the partial key's bits below them.
        let low = u64::MAX.checked_shr(self.shape.c as u32).unwrap_or(0);
        let key = (self.shape.base & !low) | (((e.partial as u64) << self.shape.shift) & low) | raw;
        if (key >> self.shape.shift) as u16 != e.partial {
            return None;
        }
        Some(Start {
            key,
            pos,
            end,
            first,
            next,
        })
    }

    /// Format 4: whether `first` and `next`, segment `j`'s key index and the next one's, are
    /// those of a well-formed block.
    #[inline(always)]
    fn indices_fit(&self, j: u32, first: u32, next: u32) -> bool {
        first + self.ends_uncoded(j) < next && next <= self.shape.count && (j == 0 || first > 0)
    }
}
