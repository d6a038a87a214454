//! A query's probes decoded four at a time, one per 64-bit lane of an AVX2 register.
//!
//! The probes of a query decode independent streams, each a serial chain: load the stream word,
//! look up the code, shift to the next. The scalar loop (`index::interleave`) takes them in turns
//! and
//! leaves the overlap to the CPU, which at ~65 instructions a key keeps only three or four
//! chains in flight. A query at a billion keys decodes ~470 keys, and at the ~11 ns a key this
//! loop costs with everything in cache, that is about half of its time. Here each step
//! advances four streams: four stream words and four first-level code entries loaded (short
//! scalar chains: AVX2 gathers were slower), then one sequence of vector instructions rebuilds
//! the four keys and tests them against their ranges and the query. A lane that ends its probe
//! takes the next at once, so the four lanes stay busy while probes are left.
//!
//! Everything rare leaves the vector path for its lane alone (`lane`: starting a probe,
//! entering a block or segment, settling a key) and is handled by the scalar rules of
//! `table::block` ([`decode_delta_at`](super::block::decode_delta_at)): a code longer than
//! the first level, a delta that does not fit the 57 bits of a window, bits that decode to no
//! valid key (the error then comes from the block decoder, word for word), the end of a block,
//! the end of a range, and a match.
//! The vector path commits a lane's key only when the scalar rule would give the same key.
//!
//! The loop is compiled twice: for AVX2, and for AVX-512 (VL, VPOPCNTDQ) where the CPU has it,
//! still on 256-bit registers, where the distance test is one popcount instruction. Codes are
//! looked up in a first level of 2^10 entries ([`LANE_BITS`]), wider than the scalar rule's 2^8,
//! so that fewer deltas leave for the scalar rule.
//!
//! Only the h-delta codec (codec 1, the default), on x86-64 with AVX2; everything else takes
//! the scalar loop.

use std::arch::x86_64::*;

mod group;
pub(crate) mod isa;
mod lane;

use super::Table;
use super::cursor::Work;
use super::planned::{Planned, PlannedProbes, ProbeStream};
use crate::codec::Codec;
use crate::codec::huffman::{LANE_BITS, LANE_WINDOW_BITS, lane_entry};
use crate::error::Result;
use group::{Group, LANES, V};
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
/// at 1B (docs/log/benchmarks.md).
const MIN_SHORT_SHARE: f64 = 0.95;

const MSB: u64 = 1 << 63;

/// How far ahead of a lane's stream word its stream is prefetched, in bytes: two lines. A
/// probe's plan prefetches the first two lines of its segment; the rest of a long probe (at
/// 10M keys a design-4 probe decodes ~160 keys, seven lines) came from the hardware's
/// prefetchers, which follow a stream per load instruction. While a lane's load instruction
/// served a lane of several groups it walked as many streams in turn and the prefetchers lost
/// them (two groups were 1.3x slower per query than one at 10M, design 4). With one group the
/// hint gains 1-3%, and it keeps the stream ahead whatever the hardware does
/// (docs/log/benchmarks.md,
/// “one group of lanes, the stream prefetched”).
const STREAM_AHEAD: usize = 128;

thread_local! {
    /// Each thread's group between queries, boxed: taken out and put back by pointer, its 736
    /// bytes neither built nor copied per query (building groups, then 448 bytes each, was
    /// measured at ~3% of a query at 1M keys).
    static KEPT: std::cell::Cell<Option<Box<Group>>> = const { std::cell::Cell::new(None) };
}

/// The lanes over a set of tables (an index's): decodes planned probes of those tables. `A`:
/// whether any table is format 4 (`Segments<A>`; the plan's shapes must be of the same `A`).
pub(crate) struct Lanes<'a, D, const A: bool> {
    pub(crate) tables: &'a [Table<D>],
}

/// Whether queries over `tables` can decode with [`Lanes::run`]: AVX2 (and POPCNT) present, and
/// every table h-delta coded with at least [`MIN_SHORT_SHARE`] of its deltas on the vector path.
pub(crate) fn supported<D: AsRef<[u8]>>(tables: &[Table<D>]) -> bool {
    can_run(tables)
        && tables
            .iter()
            .all(|t| t.decode_table().short_share(WINDOW_BITS) >= MIN_SHORT_SHARE)
}

/// Whether [`Lanes::run`] can decode `tables` at all, however few of their deltas are short
/// (then slower than the scalar loop, but as exact): AVX2 and POPCNT present, every table
/// h-delta coded. Tests and fuzzers run the lanes so on small tables.
pub(crate) fn can_run<D: AsRef<[u8]>>(tables: &[Table<D>]) -> bool {
    std::is_x86_feature_detected!("avx2")
        && std::is_x86_feature_detected!("popcnt")
        && tables.iter().all(|t| t.codec() == Codec::HDelta)
}

impl<D: AsRef<[u8]> + Sync, const A: bool> Lanes<'_, D, A> {
    /// Decode the planned probes `(table, permuted query, lo, hi, first block)` four at a
    /// time, emitting `(table, key, distance)` for every key within `k` of its probe's query
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
        unsafe { self.run_stream(k, work, &mut next, &mut |_, t, key, d| emit(t, key, d)) }
    }

    /// [`run`](Self::run) over a stream of planned probes, each tagged (with its query): a
    /// lane that finishes a probe takes `next`'s next at once, so no lane idles while probes
    /// are left. `emit(tag, table, key, distance)`.
    ///
    /// One group of four lanes decodes them all, also where a query has more probes: the
    /// plan's rounds have already overlapped every probe's misses, and a group steps as long
    /// as any of its lanes is live, so more groups only meant more steps with idle lanes. A
    /// single `near` of design 10 (ten probes) was 1.15x faster in one group than in three at
    /// 10M keys and 1.08x at 100M, m4c2r1 (198 probes) 1.2x; a stream of many queries was
    /// level in one or two (docs/log/benchmarks.md, “one group of lanes”).
    ///
    /// # Safety
    /// The CPU must support AVX2 and POPCNT ([`supported`]).
    pub(crate) unsafe fn run_stream(
        &self,
        k: u32,
        work: &mut Work,
        next: &mut impl ProbeStream,
        emit: &mut impl FnMut(u32, usize, u64, u32),
    ) -> Result<()> {
        if avx512() {
            // SAFETY: checked just above, and AVX2 and POPCNT by the caller.
            return unsafe { self.run_avx512(k, work, next, emit) };
        }
        // SAFETY: the caller checked AVX2 and POPCNT.
        unsafe { self.run_avx2(k, work, next, emit) }
    }

    #[target_feature(enable = "avx2,popcnt")]
    unsafe fn run_avx2(
        &self,
        k: u32,
        work: &mut Work,
        next: &mut impl ProbeStream,
        emit: &mut impl FnMut(u32, usize, u64, u32),
    ) -> Result<()> {
        // SAFETY: this function's features are the loop's.
        unsafe { self.run_with::<Avx2>(k, work, next, emit) }
    }

    #[target_feature(enable = "avx2,popcnt,bmi2,movbe,avx512f,avx512vl,avx512vpopcntdq")]
    unsafe fn run_avx512(
        &self,
        k: u32,
        work: &mut Work,
        next: &mut impl ProbeStream,
        emit: &mut impl FnMut(u32, usize, u64, u32),
    ) -> Result<()> {
        // SAFETY: this function's features are the loop's.
        unsafe { self.run_with::<Avx512>(k, work, next, emit) }
    }

    /// The loop of [`run_stream`](Self::run_stream), inlined into a function compiled for the
    /// features `I` needs.
    ///
    /// # Safety
    /// The CPU must support AVX2 and POPCNT, and what `I` needs.
    #[inline(always)]
    unsafe fn run_with<I: Isa>(
        &self,
        k: u32,
        work: &mut Work,
        next_probe: &mut impl ProbeStream,
        emit: &mut impl FnMut(u32, usize, u64, u32),
    ) -> Result<()> {
        // The group is kept per thread between queries (taken out, so that no closure
        // without this function's AVX2 runs the loop); after an error the next query starts a
        // new one. Every lane of a kept group is idle: a query that returns Ok ends with every
        // lane idle.
        let mut kept = KEPT.take().unwrap_or_else(|| Box::new(Group::new()));
        let g = &mut *kept;
        for l in 0..LANES {
            self.start(g, l, k, work, next_probe, emit)?;
        }
        // SAFETY: the intrinsics need AVX2 (and `I`'s features), enabled on the function this
        // one is inlined into, whose caller checked the CPU; the loads are safe where each
        // says so below.
        unsafe {
            let len_mask = _mm256_set1_epi64x(lane_entry::LEN_MASK as i64);
            let sym_mask = _mm256_set1_epi64x(lane_entry::SYM_MASK as i64);
            let ones = _mm256_set1_epi64x(-1);
            let msb = _mm256_set1_epi64x(MSB as i64);
            // The largest entry the vector path decodes (`DecodeTable::lane_primary`).
            let short = _mm256_set1_epi64x(lane_entry::pack(
                lane_entry::LEN_MASK,
                lane_entry::SYM_MASK,
                WINDOW_BITS,
            ) as i64);
            let kv = _mm256_set1_epi64x(k as i64);
            let zero = _mm256_setzero_si256();
            while g.live() {
                let act = ld!(&g.active);
                // Each lane's stream word (big-endian, shifted to its bit) and first-level
                // code entry (`huffman::lane_entry`: length, symbol, total bits; or LONG), by
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
                    let e = *(g.primary.0[i] as *const u16).add((w >> (64 - LANE_BITS)) as usize);
                    wl[i] = w;
                    el[i] = e as u64;
                    old[i] = p;
                    nl[i] = p + (e >> lane_entry::TOTAL_SHIFT) as u64;
                    g.pos.0[i] = nl[i];
                    // The stream two lines on, asked for now (`STREAM_AHEAD`).
                    _mm_prefetch::<_MM_HINT_T0>(at.cast::<i8>().wrapping_add(STREAM_AHEAD));
                }
                let w = ld!(&V(wl));
                let e = ld!(&V(el));
                let next = ld!(&V(nl));
                let l = _mm256_and_si256(e, len_mask);
                let h =
                    _mm256_and_si256(_mm256_srli_epi64::<{ lane_entry::SYM_SHIFT }>(e), sym_mask);
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
                let key =
                    _mm256_or_si256(_mm256_andnot_si256(_mm256_srlv_epi64(ones, h), prev), tail);
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
        }
        KEPT.set(Some(kept));
        Ok(())
    }
}
