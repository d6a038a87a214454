//! A query's probes decoded four at a time, one per 64-bit lane of an AVX2 register.
//!
//! The probes of a query decode independent streams, each a serial chain: load the stream word,
//! look up the code, shift to the next. The scalar loop (`index::interleave`) takes them in turns and
//! leaves the overlap to the CPU, which at ~65 instructions a key keeps only three or four
//! chains in flight. A query at a billion keys decodes ~470 keys, and at the ~11 ns a key this
//! loop costs with everything in cache, that is about half of its time. Here each step
//! advances four streams: four stream words and four first-level code entries loaded (short
//! scalar chains: AVX2 gathers were slower), then one sequence of vector instructions rebuilds
//! the four keys and tests them against their ranges and the query. Groups of four take
//! turns, so the chains of different groups overlap as well.
//!
//! Everything rare leaves the vector path for its lane alone and is handled by the scalar rules
//! of `table::block` ([`decode_delta_at`]): a code longer than the first level, a delta that
//! does not fit the 57 bits of a window, bits that decode to no valid key (the error then comes
//! from the block decoder, word for word), the end of a block, the end of a range, and a match.
//! The vector path commits a lane's key only when the scalar rule would give the same key.
//!
//! The loop is compiled twice: for AVX2, and for AVX-512 (VL, VPOPCNTDQ) where the CPU has it,
//! still on 256-bit registers, where the distance test is one popcount instruction. Codes are
//! looked up in a first level of 2^10 entries ([`LANE_BITS`]), wider than the scalar rule's 2^8,
//! so that fewer deltas leave for the scalar rule.
//!
//! Only the h-delta codec (codec 1, the default), on x86-64 with AVX2; everything else takes
//! the scalar loop, as do designs with a probe radius.

use std::arch::x86_64::*;

mod group;
pub(crate) mod isa;

use super::Table;
use super::block::decode_delta_at;
use super::cursor::Work;
use super::multiscan::{Planned, PlannedProbes, ProbeStream};
use super::segment::{Entry, Shape};
use crate::codec::Codec;
use crate::codec::huffman::{LANE_BITS, LANE_WINDOW_BITS, entry};
use crate::error::{Error, Result};
use group::{Group, LANES, LaneStart, V};
use isa::{Avx2, Avx512, Isa, avx512};

/// Load four lanes (a macro, not a closure: a closure would not inherit the function's AVX2),
/// inside the loop's unsafe block: a `V` is 32 bytes, 32-byte aligned.
macro_rules! ld {
    ($v:expr) => {
        _mm256_load_si256($v.0.as_ptr().cast())
    };
}

/// Store four lanes, as [`ld`] loads them.
macro_rules! st {
    ($v:expr, $x:expr) => {
        _mm256_store_si256($v.0.as_mut_ptr().cast(), $x)
    };
}

/// Stream bits a window holds whatever the bit offset: a delta of up to this many bits
/// (code and suffix) decodes from one 8-byte load.
const WINDOW_BITS: u32 = LANE_WINDOW_BITS;

/// The share of deltas that must take the vector path (a first-level code, at most
/// [`WINDOW_BITS`] bits in all) for the lanes to pay. Each other delta costs a trip through
/// the scalar rule. On 20k keys per table (93% short: small indexes have large gaps, so long
/// suffixes) the lanes were 1.2x slower; from 1M keys per table (98%) on they were as fast or
/// faster on a 2-core AMD EPYC (10M, design 4: 1.35x) and 1.14-1.26x faster on a 16-core Xeon
/// at 1B (BENCHMARKS.md).
const MIN_SHORT_SHARE: f64 = 0.95;

const MSB: u64 = 1 << 63;

thread_local! {
    /// Each thread's groups between queries: a query's allocation saved (design 10's three
    /// groups are 1.2 KB, past the allocator's per-thread cache).
    static GROUPS: std::cell::RefCell<Vec<Group>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// The lanes over a set of tables (an index's): decodes planned probes of those tables.
pub(crate) struct Lanes<'a, D> {
    pub(crate) tables: &'a [Table<D>],
}

/// Whether queries over `tables` can decode with [`Lanes::run`]: AVX2 (and POPCNT) present, and
/// every table h-delta coded with at least [`MIN_SHORT_SHARE`] of its deltas on the vector path.
pub(crate) fn supported<D: AsRef<[u8]>>(tables: &[Table<D>]) -> bool {
    std::is_x86_feature_detected!("avx2")
        && std::is_x86_feature_detected!("popcnt")
        && tables.iter().all(|t| {
            t.codec() == Codec::HDelta
                && t.decode_table().short_share(WINDOW_BITS) >= MIN_SHORT_SHARE
        })
}

impl<D: AsRef<[u8]> + Sync> Lanes<'_, D> {
    /// Decode the planned probes `(table, permuted query, lo, hi, first block)` four to a
    /// register, emitting `(table, key, distance)` for every key within `k` of its probe's query
    /// (keys in range; repeats across tables are the caller's to remove).
    ///
    /// Where the CPU has AVX-512 with its 64-bit popcount (`VPOPCNTQ`, Ice Lake and Zen 4 on),
    /// the same loop is compiled for it: the distance test is one instruction instead of a
    /// dozen, and the compiler folds the compares into mask registers.
    ///
    /// # Safety
    /// The CPU must support AVX2 and POPCNT ([`supported`]).
    pub(crate) unsafe fn run(
        &self,
        plan: &[Planned],
        k: u32,
        work: &mut Work,
        emit: &mut impl FnMut(usize, u64, u32),
    ) -> Result<()> {
        let mut next = PlannedProbes { plan, at: 0 };
        // SAFETY: the caller's.
        unsafe {
            self.run_stream(
                plan.len().div_ceil(LANES),
                k,
                work,
                &mut next,
                &mut |_, t, key, d| emit(t, key, d),
            )
        }
    }

    /// [`run`](Self::run) over a stream of planned probes, each tagged (with its query): a
    /// lane that finishes a probe takes `next`'s next at once, so no lane idles while probes
    /// are left. `emit(tag, table, key, distance)`. `groups` groups of four lanes decode
    /// together.
    ///
    /// # Safety
    /// The CPU must support AVX2 and POPCNT ([`supported`]).
    pub(crate) unsafe fn run_stream(
        &self,
        groups: usize,
        k: u32,
        work: &mut Work,
        next: &mut impl ProbeStream,
        emit: &mut impl FnMut(u32, usize, u64, u32),
    ) -> Result<()> {
        if avx512() {
            // SAFETY: checked just above, and AVX2 and POPCNT by the caller.
            return unsafe { self.run_avx512(groups, k, work, next, emit) };
        }
        // SAFETY: the caller checked AVX2 and POPCNT.
        unsafe { self.run_avx2(groups, k, work, next, emit) }
    }

    #[target_feature(enable = "avx2,popcnt")]
    unsafe fn run_avx2(
        &self,
        groups: usize,
        k: u32,
        work: &mut Work,
        next: &mut impl ProbeStream,
        emit: &mut impl FnMut(u32, usize, u64, u32),
    ) -> Result<()> {
        // SAFETY: this function's features are the loop's.
        unsafe { self.run_with::<Avx2>(groups, k, work, next, emit) }
    }

    #[target_feature(enable = "avx2,popcnt,bmi2,movbe,avx512f,avx512vl,avx512vpopcntdq")]
    unsafe fn run_avx512(
        &self,
        groups: usize,
        k: u32,
        work: &mut Work,
        next: &mut impl ProbeStream,
        emit: &mut impl FnMut(u32, usize, u64, u32),
    ) -> Result<()> {
        // SAFETY: this function's features are the loop's.
        unsafe { self.run_with::<Avx512>(groups, k, work, next, emit) }
    }

    /// The loop of [`run_stream`](Self::run_stream), inlined into a function compiled for the
    /// features `I` needs.
    ///
    /// # Safety
    /// The CPU must support AVX2 and POPCNT, and what `I` needs.
    #[inline(always)]
    unsafe fn run_with<I: Isa>(
        &self,
        n: usize,
        k: u32,
        work: &mut Work,
        next_probe: &mut impl ProbeStream,
        emit: &mut impl FnMut(u32, usize, u64, u32),
    ) -> Result<()> {
        // The groups are kept per thread between queries (taken out, so that no closure
        // without this function's AVX2 runs the loop); after an error the next query starts a
        // new buffer.
        let mut groups = GROUPS.with_borrow_mut(std::mem::take);
        // Every lane of a kept group is idle: a query that returns Ok ends with every lane
        // idle. Only groups a larger plan needs are built (copying 448 bytes a group was 3% of
        // a query at 1M keys).
        groups.truncate(n);
        groups.resize(n, Group::new());
        for g in groups.iter_mut() {
            for l in 0..LANES {
                self.start(g, l, k, work, next_probe, emit)?;
            }
        }
        // SAFETY: the intrinsics need AVX2 (and `I`'s features), enabled on the function this
        // one is inlined into, whose caller checked the CPU; the loads are safe where each
        // says so below.
        unsafe {
            let len_mask = _mm256_set1_epi64x(entry::LEN_MASK as i64);
            let sym_mask = _mm256_set1_epi64x(entry::SYM_MASK as i64);
            let ones = _mm256_set1_epi64x(-1);
            let msb = _mm256_set1_epi64x(MSB as i64);
            // The largest entry the vector path decodes (`DecodeTable::lane_primary`).
            let short =
                _mm256_set1_epi64x(
                    entry::pack(entry::LEN_MASK, entry::SYM_MASK, WINDOW_BITS) as i64
                );
            let kv = _mm256_set1_epi64x(k as i64);
            let zero = _mm256_setzero_si256();
            loop {
                let mut any = false;
                for g in groups.iter_mut() {
                    if !g.live() {
                        continue;
                    }
                    any = true;
                    let act = ld!(&g.active);
                    // Each lane's stream word (big-endian, shifted to its bit) and first-level
                    // code entry (`huffman::entry`: length, symbol, total bits; or LONG), by
                    // scalar loads: four short chains (two AVX2 gathers instead made a query
                    // 1.3x slower on an EPYC). The position moves on here, in scalar code, so
                    // that the next step's loads wait for a scalar store, not for a vector one;
                    // a rare lane gets its old position back below.
                    let mut wl = [0u64; LANES];
                    let mut el = [0u64; LANES];
                    let mut old = [0u64; LANES];
                    let mut nl = [0u64; LANES];
                    for i in 0..LANES {
                        let p = g.pos.0[i];
                        let at = (g.base.0[i] + (p >> 3)) as *const u64;
                        // (Safe:) a live lane's position is at most its stream's end, and a
                        // block's stream is followed by at least 12 bytes of the table (crc,
                        // then the next block or the footer): 8 bytes at any byte up to the end
                        // are mapped. An idle lane reads `IDLE`.
                        let w = u64::from_be(at.read_unaligned()) << (p & 7);
                        // (Safe:) every lane's first level has 2^LANE_BITS entries; the index is
                        // the word's top LANE_BITS bits.
                        let e =
                            *(g.primary.0[i] as *const u32).add((w >> (64 - LANE_BITS)) as usize);
                        wl[i] = w;
                        el[i] = e as u64;
                        old[i] = p;
                        nl[i] = p + (e >> entry::TOTAL_SHIFT) as u64;
                        g.pos.0[i] = nl[i];
                    }
                    let w = ld!(&V(wl));
                    let e = ld!(&V(el));
                    let next = ld!(&V(nl));
                    let l = _mm256_and_si256(e, len_mask);
                    let h =
                        _mm256_and_si256(_mm256_srli_epi64::<{ entry::SYM_SHIFT }>(e), sym_mask);
                    let prev = ld!(&g.prev);
                    let bit = _mm256_srlv_epi64(msb, h);
                    // Rare: no code, a long one or a delta wider than the window (all LONG in
                    // the lanes' first level), a key that would not ascend (its first differing
                    // bit already set), a delta past the segment.
                    let rare = _mm256_or_si256(
                        _mm256_cmpgt_epi64(e, short),
                        _mm256_or_si256(
                            _mm256_cmpeq_epi64(_mm256_and_si256(prev, bit), bit),
                            _mm256_cmpgt_epi64(next, ld!(&g.end)),
                        ),
                    );
                    let rare = _mm256_and_si256(rare, act);
                    let commit = _mm256_andnot_si256(rare, act);
                    // Keep prev's top h bits, set the implied bit, append the 63 - h suffix bits.
                    let tail = _mm256_srlv_epi64(
                        _mm256_or_si256(_mm256_srli_epi64::<1>(_mm256_sllv_epi64(w, l)), msb),
                        h,
                    );
                    let key = _mm256_or_si256(
                        _mm256_andnot_si256(_mm256_srlv_epi64(ones, h), prev),
                        tail,
                    );
                    let rem = _mm256_sub_epi64(ld!(&g.remaining), _mm256_srli_epi64::<63>(commit));
                    st!(g.prev, _mm256_blendv_epi8(prev, key, commit));
                    st!(g.remaining, rem);
                    // A committed key needs the scalar side if it ends its range, ends its block,
                    // or is in range and within k.
                    let kx = _mm256_xor_si256(key, msb);
                    let past = _mm256_cmpgt_epi64(kx, ld!(&g.hi_x));
                    let below = _mm256_cmpgt_epi64(ld!(&g.lo_x), kx);
                    // (Safe:) `I`'s features are enabled where this loop is compiled.
                    let far = I::far(_mm256_xor_si256(key, ld!(&g.q)), kv);
                    let quiet = _mm256_or_si256(below, far);
                    let ends = _mm256_or_si256(past, _mm256_cmpeq_epi64(rem, zero));
                    let needs = _mm256_or_si256(
                        rare,
                        _mm256_andnot_si256(_mm256_andnot_si256(ends, quiet), commit),
                    );
                    if _mm256_testz_si256(needs, needs) == 0 {
                        let mut needs = _mm256_movemask_pd(_mm256_castsi256_pd(needs)) as u32;
                        let rare = _mm256_movemask_pd(_mm256_castsi256_pd(rare)) as u32;
                        // The lanes that need it, in order: a loop over set bits, usually
                        // one, not a test of each lane (a branch mispredicted every few steps).
                        while needs != 0 {
                            let i = needs.trailing_zeros() as usize;
                            needs &= needs - 1;
                            if rare & (1 << i) != 0 {
                                g.pos.0[i] = old[i];
                                self.scalar_step(g, i)?;
                            }
                            let key = g.prev.0[i];
                            self.settle(g, i, key, k, work, emit)?;
                            if g.active.0[i] == 0 {
                                self.start(g, i, k, work, next_probe, emit)?;
                            }
                        }
                    }
                }
                if !any {
                    GROUPS.with_borrow_mut(|g| *g = groups);
                    return Ok(());
                }
            }
        }
    }

    /// Start idle lane `l` on the next planned probe, and on the one after while a probe ends
    /// at its first key; the lane stays idle once the probes run out.
    fn start(
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
    fn scalar_step(&self, g: &mut Group, i: usize) -> Result<()> {
        let table = &self.tables[g.table[i]];
        let b = g.block[i];
        let (pos, end, prev) = (g.pos.0[i], g.end.0[i], g.prev.0[i]);
        let (_, stream) = table.segments_of(b, g.shape[i]);
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
        if j > 0
            && let Some(shape) = shape
            && let Some(key) = self.enter_segment(g, i, b, entry, shape)?
        {
            return Ok(key);
        }
        self.load_block_decoder(g, i, b, j)
    }

    /// [`load_block`](Self::load_block) through a block decoder: at segment 0 (which, in
    /// format 3, starts with the coded first key), for unsegmented tables, and where the
    /// skip entry cannot be right (the decoder names the fault). Out of line: its 176-byte
    /// decoder made every call's frame large.
    #[inline(never)]
    fn load_block_decoder(&self, g: &mut Group, i: usize, b: u64, j: u32) -> Result<u64> {
        let table = &self.tables[g.table[i]];
        let mut dec = table.block_at_segment(b, j)?;
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
        let (segs, stream) = table.segments_of(b, *shape);
        let j = entry.j;
        if j > segs.len() || segs.count() as u64 > table.max_block_keys() {
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
            left: segs.coded_after_start(j),
            implicit: segs.implicit_last(),
            shape: *shape,
        };
        Ok(self.take_over(g, i, b, start).then_some(s.key))
    }

    /// Lane `i` ended a segment of its block before the block's last: go on with the next
    /// segment's first key, as the sequential decoder would. Inlined into its one caller,
    /// [`settle_end`](Self::settle_end), with the segment rule (`Segments::next`): at 1M keys
    /// a query changes segments about three times, and the calls cost ~50 instructions each.
    #[inline(always)]
    fn next_segment(&self, g: &mut Group, i: usize, work: &mut Work) -> Result<u64> {
        let table = &self.tables[g.table[i]];
        let b = g.block[i];
        let j = g.segment[i] + 1;
        let (segs, stream) = table.segments_of(b, g.shape[i]);
        let next = segs
            .next(stream, j, g.pos.0[i], g.prev.0[i])
            .map(|start| (start, segs.coded_after_start(j)));
        let Some((start, left)) = next else {
            return Err(table.block_fault(b, g.start_segment[i]));
        };
        work.keys += g.take_decoded(i) + 1;
        g.segment[i] = j;
        g.pos.0[i] = start.pos;
        g.end.0[i] = start.end;
        g.prev.0[i] = start.key;
        g.set_remaining(i, left as u64);
        Ok(start.key)
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
    fn settle(
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
    /// block's uncoded last key, or the next block while the range goes on, [`take_key`]
    /// (Self::take_key) by key until a segment with keys left or the range's end.
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
                self.next_segment(g, i, work)?
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
    /// The most keys a block of this table can hold (every block's head is of one kind).
    #[inline]
    fn max_block_keys(&self) -> u64 {
        self.layout(0).head.max_keys(self.block_size())
    }

    /// The corruption that stops the decode of block `i` from segment `segment` on, named as
    /// [`BlockDecoder`] names it, for a faster decoder that met it first.
    ///
    /// [`BlockDecoder`]: super::block::BlockDecoder
    #[cold]
    pub(crate) fn block_fault(&self, i: u64, segment: u32) -> Error {
        let mut dec = match self.block_at_segment(i, segment) {
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
