//! A lane off the vector path: starting a probe, entering a block or a segment, settling a
//! key (emitting it, retiring the lane past its range, going on at a segment's or block's
//! end), and the scalar rule's rare steps. The vector loop (the parent module) calls these
//! for the lanes whose step needs them; they read and write the lane's slot of its
//! [`Group`].

use super::group::{Group, LaneStart};
use super::{Lanes, MSB};
use crate::codec::Codec;
use crate::error::{Error, Result};
use crate::table::Table;
use crate::table::block::decode_delta_at;
use crate::table::cursor::Work;
use crate::table::format::COMPACT_VERSION;
use crate::table::planned::ProbeStream;
use crate::table::segment::{Entry, Head, Shape};

impl<D: AsRef<[u8]> + Sync, const A: bool> Lanes<'_, D, A> {
    /// Start idle lane `l` on the next planned probe, and on the one after while a probe ends
    /// at its first key; the lane stays idle once the probes run out.
    pub(super) fn start(
        &self,
        g: &mut Group,
        l: usize,
        k: u32,
        work: &mut Work,
        next: &mut impl ProbeStream,
        emit: &mut impl FnMut(u32, usize, u64, u32),
    ) -> Result<()> {
        while let Some(tag) = next.advance(work)? {
            let p = next.current();
            g.tag[l] = tag;
            g.table[l] = p.table;
            g.q.0[l] = p.query;
            g.lo_x.0[l] = p.lo ^ MSB;
            g.hi_x.0[l] = p.hi ^ MSB;
            g.primary.0[l] = self.tables[p.table].decode_table().lane_primary().as_ptr() as u64;
            let first = self.load_block(g, l, p.block, p.entry, p.shape.as_ref(), work)?;
            self.settle(g, l, first, k, work, emit)?;
            if g.active.0[l] != 0 {
                break;
            }
        }
        Ok(())
    }

    /// Decode lane `i`'s next key by the scalar rule (committing it), or name the corruption.
    #[cold]
    #[inline(never)]
    pub(super) fn scalar_step(&self, g: &mut Group, i: usize) -> Result<()> {
        let table = &self.tables[g.table[i]];
        let b = g.block[i];
        let (pos, end, prev) = (g.pos.0[i], g.end.0[i], g.prev.0[i]);
        let (_, stream) = table.segments_of::<A>(b, g.shape[i]);
        match decode_delta_at(stream, table.decode_table(), Codec::HDelta, pos, end, prev) {
            Some((key, next)) => {
                g.prev.0[i] = key;
                g.pos.0[i] = next;
                // Counted with the lane's other keys (`Group::take_decoded`).
                g.remaining.0[i] -= 1;
                Ok(())
            }
            None => Err(table.block_fault(b, g.start_segment[i])),
        }
    }

    /// Open block `b` in lane `i` at the segment of `entry` (with the block's segment shape,
    /// where its plan parsed it and read the entry): that segment's first key becomes the
    /// lane's last key.
    fn load_block(
        &self,
        g: &mut Group,
        i: usize,
        b: u64,
        entry: Entry,
        shape: Option<&Shape>,
        work: &mut Work,
    ) -> Result<u64> {
        work.keys += g.take_decoded(i) + 1;
        work.blocks += 1;
        let j = entry.j;
        if j > 0 {
            if let Some(shape) = shape
                && let Some(key) = self.enter_segment(g, i, b, entry, shape)?
            {
                return Ok(key);
            }
        } else if let Some(key) = self.enter_first(g, i, b, shape)? {
            return Ok(key);
        }
        self.load_block_decoder(g, i, b, j)
    }

    /// Open block `b` in lane `i` at segment 0 without a block decoder, where its first key is
    /// a delta after the previous block's last (formats 3 and 4, every block but the first):
    /// that key, decoded by the one rule ([`decode_delta_at`]), becomes the lane's last key.
    /// With the block's shape where its plan parsed it, else parsed here. `None` where the
    /// block decoder must name what is wrong, or for a block this path does not take.
    ///
    /// A probe whose range starts in a block's first segment, and a range that goes on into
    /// the next block, start here. Through a block decoder (176 bytes built, the head parsed
    /// again, its state copied into the lane) that cost about 900 instructions; at 1B keys
    /// (runs of ~20 keys, 10.7 blocks entered for 10 probes) it is 1.2 times a query.
    #[inline]
    fn enter_first(
        &self,
        g: &mut Group,
        i: usize,
        b: u64,
        shape: Option<&Shape>,
    ) -> Result<Option<u64>> {
        let table = &self.tables[g.table[i]];
        if b == 0 || table.format_version() < COMPACT_VERSION {
            return Ok(None);
        }
        table.check_block_crc(b)?;
        let (mut segs, stream) = match shape {
            Some(shape) => table.segments_of::<A>(b, *shape),
            None => match table.segments::<A>(b) {
                Some(parsed) => parsed,
                None => return Ok(None),
            },
        };
        if segs.count() == 0 || segs.count() as u64 > table.max_block_keys::<A>() {
            return Ok(None);
        }
        let (dec, after) = (table.decode_table(), table.last_key(b - 1));
        let end = segs.first_segment_end();
        let Some((first, pos)) = decode_delta_at(stream, dec, Codec::HDelta, 0, end, after) else {
            return Ok(None);
        };
        segs.set_first(first, pos);
        let entry = segs.entry_of(0);
        let Some(s) = segs.enter_entry(stream, entry) else {
            return Ok(None);
        };
        let start = LaneStart {
            stream,
            segment: 0,
            last_segment: segs.len(),
            pos: s.pos,
            end: s.end,
            key: s.key,
            left: segs.coded_after(0, &s),
            implicit: segs.implicit_last(),
            stop: segs.ends_with(&entry, g.hi_x.0[i] ^ MSB),
            shape: segs.shape(),
        };
        Ok(self.take_over(g, i, b, start).then_some(s.key))
    }

    /// [`load_block`](Self::load_block) through a block decoder: at segment 0 (which, in
    /// format 3, starts with the coded first key), for unsegmented tables, and where the
    /// skip entry cannot be right (the decoder names the fault). Out of line: its 176-byte
    /// decoder made every call's frame large.
    #[inline(never)]
    fn load_block_decoder(&self, g: &mut Group, i: usize, b: u64, j: u32) -> Result<u64> {
        let table = &self.tables[g.table[i]];
        let mut dec = table.block_at_segment::<A>(b, j)?;
        let (segment, _) = dec.segment_state();
        let Some(key) = dec.next_key() else {
            return Err(table.block_fault(b, segment));
        };
        let (_, left) = dec.segment_state();
        let start = LaneStart {
            stream: dec.stream(),
            segment,
            last_segment: dec.last_segment(),
            pos: dec.bit_position(),
            end: dec.segment_end(),
            key,
            left,
            implicit: dec.implicit_last(),
            stop: false,
            shape: dec.shape(),
        };
        if !self.take_over(g, i, b, start) {
            let data = table.bytes();
            return Err(Error::corrupt(
                format!("table {} length", g.table[i]),
                data.len() as u64,
                "a footer after the last block",
                "the file ending at a block",
            ));
        }
        Ok(key)
    }

    /// Open block `b` in lane `i` at the segment of `entry` (1..) straight from its skip
    /// entry, without building a block decoder (at 1M keys that made queries 1.1x faster),
    /// parsing its head again (`shape`, from the plan) or reading the entry again (`entry`,
    /// from the plan's search): the segment's first key, or `None` where the block decoder
    /// must name what is wrong (a count or entry that cannot be right). The block's crc is
    /// checked first, as the decoder would.
    #[inline]
    fn enter_segment(
        &self,
        g: &mut Group,
        i: usize,
        b: u64,
        entry: Entry,
        shape: &Shape,
    ) -> Result<Option<u64>> {
        let table = &self.tables[g.table[i]];
        table.check_block_crc(b)?;
        let (segs, stream) = table.segments_of::<A>(b, *shape);
        let j = entry.j;
        if j > segs.len() || segs.count() as u64 > table.max_block_keys::<A>() {
            return Ok(None);
        }
        let Some(s) = segs.enter_entry(stream, entry) else {
            return Ok(None);
        };
        let start = LaneStart {
            stream,
            segment: j,
            last_segment: segs.len(),
            pos: s.pos,
            end: s.end,
            key: s.key,
            left: segs.coded_after(j, &s),
            implicit: segs.implicit_last(),
            stop: segs.ends_with(&entry, g.hi_x.0[i] ^ MSB),
            shape: *shape,
        };
        Ok(self.take_over(g, i, b, start).then_some(s.key))
    }

    /// Lane `i` ended a segment of its block before the block's last: go on with the next
    /// segment's first key, as the sequential decoder would; or, where that segment starts
    /// past the lane's range by its skip entry (format 4: where a run ends), retire the lane
    /// (`None`) without reading it. Inlined into its one caller,
    /// [`settle_end`](Self::settle_end), with the segment rule (`Segments::next`): at 1M keys
    /// a query changes segments about three times, and the calls cost ~50 instructions each.
    #[inline(always)]
    fn next_segment(&self, g: &mut Group, i: usize, work: &mut Work) -> Result<Option<u64>> {
        let table = &self.tables[g.table[i]];
        let b = g.block[i];
        let j = g.segment[i] + 1;
        let (segs, stream) = table.segments_of::<A>(b, g.shape[i]);
        if segs.starts_above(j, g.hi_x.0[i] ^ MSB) {
            work.keys += g.retire(i);
            return Ok(None);
        }
        let next = segs
            .next(stream, j, g.pos.0[i], g.prev.0[i])
            .map(|start| (start, segs.coded_after(j, &start)));
        let Some((start, left)) = next else {
            return Err(table.block_fault(b, g.start_segment[i]));
        };
        work.keys += g.take_decoded(i) + 1;
        g.segment[i] = j;
        g.pos.0[i] = start.pos;
        g.end.0[i] = start.end;
        g.prev.0[i] = start.key;
        g.set_remaining(i, left as u64);
        Ok(Some(start.key))
    }

    /// Lane `i` read the last segment's coded keys of a block whose last key is not coded
    /// (format 3): that key, the footer's, as the sequential decoder gives it.
    #[cold]
    #[inline(never)]
    fn implicit_last(&self, g: &mut Group, i: usize, work: &mut Work) -> Result<u64> {
        let table = &self.tables[g.table[i]];
        let b = g.block[i];
        let last = table.last_key(b);
        g.implicit[i] = false;
        if last <= g.prev.0[i] {
            return Err(table.block_fault(b, g.start_segment[i]));
        }
        work.keys += 1;
        g.prev.0[i] = last;
        Ok(last)
    }

    /// Lane `i` takes over the decode of block `b` at `start`; false (the lane untouched) if
    /// the table's bytes end too soon after the block for the lanes' 8-byte loads.
    #[inline(always)]
    fn take_over(&self, g: &mut Group, i: usize, b: u64, start: LaneStart<'_>) -> bool {
        // The loads read up to 8 bytes from any byte of the stream up to its end, so up to 4
        // bytes past the block. `Table::from_bytes` checked that a footer of at least 12 bytes
        // follows the last block; check again against the bytes at hand, since the loads go
        // around the slices' bounds.
        let data = self.tables[g.table[i]].bytes();
        let stream_end = start.stream.as_ptr() as usize + start.stream.len();
        if stream_end + 8 > data.as_ptr() as usize + data.len() {
            return false;
        }
        g.block[i] = b;
        g.start_segment[i] = start.segment;
        g.segment[i] = start.segment;
        g.last_segment[i] = start.last_segment;
        g.base.0[i] = start.stream.as_ptr() as u64;
        g.pos.0[i] = start.pos;
        g.end.0[i] = start.end;
        g.prev.0[i] = start.key;
        g.set_remaining(i, start.left as u64);
        g.implicit[i] = start.implicit;
        g.stop[i] = start.stop;
        g.shape[i] = start.shape;
        g.active.0[i] = u64::MAX;
        true
    }

    /// After lane `i` decoded `key`: emit it if in range and within `k`; retire the lane past
    /// its range; at the segment's or block's end, go on ([`settle_end`](Self::settle_end)).
    /// Inlined: most calls end at the first test (a key below or in range, the lane not at an
    /// end, or a key past the range), and an out-of-line call's register saves were about a
    /// third of its cost.
    #[inline(always)]
    pub(super) fn settle(
        &self,
        g: &mut Group,
        i: usize,
        key: u64,
        k: u32,
        work: &mut Work,
        emit: &mut impl FnMut(u32, usize, u64, u32),
    ) -> Result<()> {
        if !self.take_key(g, i, key, k, work, emit) || g.remaining.0[i] > 0 {
            return Ok(());
        }
        if g.stop[i] {
            // What `settle_end` would find, decided where the lane entered its segment.
            work.keys += g.retire(i);
            return Ok(());
        }
        self.settle_end(g, i, k, work, emit)
    }

    /// Lane `i` decoded `key`: emit it if in range and within `k`; false (the lane retired) if
    /// it is past the range.
    #[inline(always)]
    fn take_key(
        &self,
        g: &mut Group,
        i: usize,
        key: u64,
        k: u32,
        work: &mut Work,
        emit: &mut impl FnMut(u32, usize, u64, u32),
    ) -> bool {
        if key > g.hi_x.0[i] ^ MSB {
            work.keys += g.retire(i);
            return false;
        }
        if key >= g.lo_x.0[i] ^ MSB {
            let d = (key ^ g.q.0[i]).count_ones();
            if d <= k {
                Self::matched(g, i, key, d, work, emit);
            }
        }
        true
    }

    /// Emit lane `i`'s `key`, within `d <= k` of its query (out of line: rare).
    #[cold]
    #[inline(never)]
    fn matched(
        g: &Group,
        i: usize,
        key: u64,
        d: u32,
        work: &mut Work,
        emit: &mut impl FnMut(u32, usize, u64, u32),
    ) {
        work.candidates += 1;
        emit(g.tag[i], g.table[i], key, d);
    }

    /// Lane `i` took the last coded key of its segment: go on with the next segment, the
    /// block's uncoded last key, or the next block while the range goes on,
    /// [`take_key`](Self::take_key) by key until a segment with keys left or the range's end.
    #[inline(never)]
    fn settle_end(
        &self,
        g: &mut Group,
        i: usize,
        k: u32,
        work: &mut Work,
        emit: &mut impl FnMut(u32, usize, u64, u32),
    ) -> Result<()> {
        loop {
            let key = if g.segment[i] < g.last_segment[i] {
                match self.next_segment(g, i, work)? {
                    Some(key) => key,
                    None => return Ok(()),
                }
            } else if g.implicit[i] {
                self.implicit_last(g, i, work)?
            } else {
                let table = &self.tables[g.table[i]];
                let b = g.block[i];
                if !table.range_continues(b, g.hi_x.0[i] ^ MSB) {
                    work.keys += g.retire(i);
                    return Ok(());
                }
                self.load_block(g, i, b + 1, Entry::default(), None, work)?
            };
            if !self.take_key(g, i, key, k, work, emit) || g.remaining.0[i] > 0 {
                return Ok(());
            }
        }
    }
}

/// What the lanes read of a table beyond its public face.
impl<D: AsRef<[u8]>> Table<D> {
    /// The most keys a block of this table can hold (every block's head is of one kind,
    /// whose size alone matters: no block's layout is built for it, at every probe). `A` as
    /// the lanes': without format 4, its head's size is not asked for.
    #[inline]
    fn max_block_keys<const A: bool>(&self) -> u64 {
        let head = if self.format_version() >= COMPACT_VERSION {
            Head::Compact {
                after: None,
                align: if A { self.aligned_prefix() as u8 } else { 0 },
            }
        } else {
            Head::Wide
        };
        head.max_keys(self.block_size())
    }

    /// The corruption that stops the decode of block `i` from segment `segment` on, named as
    /// [`BlockDecoder`] names it, for a faster decoder that met it first.
    ///
    /// [`BlockDecoder`]: crate::table::block::BlockDecoder
    #[cold]
    pub(crate) fn block_fault(&self, i: u64, segment: u32) -> Error {
        let mut dec = match self.block_at_segment::<true>(i, segment) {
            Ok(d) => d,
            Err(e) => return e,
        };
        loop {
            match dec.next() {
                Ok(Some(_)) => {}
                Ok(None) => {
                    return self.attach(Error::corrupt(
                        format!("block {i}"),
                        self.block_offset(i),
                        "the same keys from every decoder",
                        "a delta only the vectorized decoder rejected",
                    ));
                }
                Err(e) => return self.attach(e),
            }
        }
    }
}
