//! Many probes over a set of tables (an index's), decoded together: the hot loop of queries.
//!
//! A caller hands over a query's probes — each a range of one table's keys and the permuted
//! query its keys are compared with — and gets back every key within the distance, as
//! (probe's table, key, distance). Everything about blocks is decided here: every probe's
//! search is prefetched in rounds — the directory buckets of all probes, then (each block
//! located, most by its bucket alone: `table::directory`) their blocks' first cache lines,
//! `madvise`d too while the tables are out of memory ([`Residency`], `crate::os`), with the
//! last keys of the few blocks a bucket could not decide between a round before theirs —
//! and then every block is opened and one key of each open probe is decoded in turn. The last
//! round parses each block's head to find the probe's segment; that parse (`segment::Shape`)
//! goes with the probe ([`Planned`]) to the lane that decodes it, which does not parse the
//! head again. Probes are independent, so
//! their cache misses overlap and so do their serial decode chains (each key needs the one
//! before it).
//! Where the CPU has AVX2 and the tables suit it, the decoding after the rounds runs four
//! probes per vector register instead (`table::lanes`), and many queries (`near_many`) are
//! decoded as one stream of probes, a lane that ends a probe taking the next query's
//! ([`MultiScan::run_many`]): 1.15x faster at 10M keys, where a query's 10 probes left two of
//! its twelve lanes idle and the others waited for the slowest. Planning the next query's
//! probes (its prefetches) a whole query ahead, and in the scalar loop decoding several
//! queries' probes round-robin, were measured and gained nothing (docs/log/benchmarks.md).

use std::sync::atomic::Ordering::Relaxed;
use std::sync::atomic::{AtomicBool, AtomicU64};

use super::Table;
use super::cursor::Work;
use super::cursor::{Cursor, Step};
use super::planned::{Planned, ProbeStream};
use crate::error::Result;

/// Many queries' probes, each query planned when its first probe is taken.
struct ManyQueries<'s, 'a, D, P, F, const A: bool> {
    scan: &'s MultiScan<'a, D>,
    probes_of: F,
    n: usize,
    plan: [Planned; MAX_PROBES],
    len: usize,
    at: usize,
    query: usize,
    _probes: std::marker::PhantomData<P>,
}

impl<D: AsRef<[u8]> + Sync, P: Probes, F: Fn(usize) -> P, const A: bool> ProbeStream
    for ManyQueries<'_, '_, D, P, F, A>
{
    #[inline]
    fn advance(&mut self, work: &mut Work) -> Result<Option<u32>> {
        while self.at == self.len {
            if self.query == self.n {
                return Ok(None);
            }
            self.len = self
                .scan
                .plan::<A>(&(self.probes_of)(self.query), work, &mut self.plan);
            self.at = 0;
            self.query += 1;
        }
        self.at += 1;
        Ok(Some((self.query - 1) as u32))
    }

    #[inline]
    fn current(&self) -> &Planned {
        &self.plan[self.at - 1]
    }
}

/// Most probes decoded together: every design without a probe radius fits one query's; a query
/// of a design with a radius is scanned in chunks of at most this many.
pub(crate) const MAX_PROBES: usize = 64;

/// One probe: the keys of table `table` in `lo..=hi`, compared with the permuted query `query`.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Probe {
    pub(crate) table: usize,
    pub(crate) query: u64,
    pub(crate) lo: u64,
    pub(crate) hi: u64,
}

/// A query's probes, enumerated on demand: the scan plans them as they come, with no array to
/// fill (and zero) first.
pub(crate) trait Probes {
    /// Call `f` on every probe, at most [`MAX_PROBES`] of them.
    fn each(&self, f: impl FnMut(Probe));
}

/// Whether a set of tables is mostly out of memory, judged from a sample of their pages
/// (`crate::os`). While it is, scans ask the kernel for all their blocks before reading any.
#[derive(Debug, Default)]
pub(crate) struct Residency {
    cold: AtomicBool,
    /// Queries made while cold; every 256th judges residency again.
    ticks: AtomicU64,
}

impl Residency {
    /// Sample the tables' pages: cold when less than 90% of the sample is in memory.
    pub(crate) fn judge<D: AsRef<[u8]>>(&self, tables: &[Table<D>]) {
        let n = tables.len().max(1) as f64;
        let resident: f64 = tables.iter().map(|t| t.resident_fraction()).sum::<f64>() / n;
        self.cold.store(resident < 0.9, Relaxed);
    }

    /// Judge again before a call of `queries` lookups if it is large enough (1024 or more) for
    /// the page cache to have dropped the tables since the last judgement to matter.
    pub(crate) fn judge_for<D: AsRef<[u8]>>(&self, tables: &[Table<D>], queries: usize) {
        if queries >= 1024 {
            self.judge(tables);
        }
    }

    /// Whether the tables were out of memory at the last judgement.
    #[inline]
    pub(crate) fn is_cold(&self) -> bool {
        self.cold.load(Relaxed)
    }

    /// Mark the tables cold (tests of the read-ahead paths).
    #[cfg(test)]
    pub(crate) fn set_cold(&self, cold: bool) {
        self.cold.store(cold, Relaxed);
    }

    /// Whether a query should read ahead; every 256th query while cold judges again, since
    /// reading ahead costs a system call per probe and should stop once the tables are in.
    #[inline]
    fn query_reads_ahead<D: AsRef<[u8]>>(&self, tables: &[Table<D>]) -> bool {
        let cold = self.is_cold();
        if cold && self.ticks.fetch_add(1, Relaxed) % 256 == 255 {
            self.judge(tables);
        }
        cold
    }
}

thread_local! {
    /// Each thread's plan buffer for [`MultiScan::run`], between calls.
    static PLAN: std::cell::Cell<Option<Box<[Planned; MAX_PROBES]>>> =
        const { std::cell::Cell::new(None) };
}

/// A set of tables scanned many probes at a time.
pub(crate) struct MultiScan<'a, D> {
    pub(crate) tables: &'a [Table<D>],
    pub(crate) residency: &'a Residency,
    /// Decode with `table::lanes` (set only where [`lanes_supported`] said so).
    pub(crate) lanes: bool,
    /// Whether any table is format 4 ([`any_aligned`]): the lanes and the plan are then the
    /// ones compiled for it (`Segments<true>`), else those without its tests.
    pub(crate) aligned: bool,
}

/// Whether any of `tables` has segments aligned to prefix runs (format 4).
pub(crate) fn any_aligned<D: AsRef<[u8]>>(tables: &[Table<D>]) -> bool {
    tables.iter().any(|t| t.aligned_prefix() > 0)
}

/// Whether scans of `tables` may decode with the AVX2 lanes: the CPU has them and the tables'
/// codes suit them.
pub(crate) fn lanes_supported<D: AsRef<[u8]>>(tables: &[Table<D>]) -> bool {
    #[cfg(target_arch = "x86_64")]
    return super::lanes::supported(tables);
    #[cfg(not(target_arch = "x86_64"))]
    {
        let _ = tables;
        false
    }
}

impl<D: AsRef<[u8]> + Sync> MultiScan<'_, D> {
    /// Plan `probes` (at most [`MAX_PROBES`]) into `plan`, in the prefetched rounds above: the
    /// number planned (probes past their table's last block are dropped). `A`: as
    /// [`aligned`](Self::aligned) (a plan for the scalar loop may take `true`).
    #[inline(always)]
    fn plan<const A: bool>(
        &self,
        probes: &impl Probes,
        work: &mut Work,
        plan: &mut [Planned; MAX_PROBES],
    ) -> usize {
        let tables = self.tables;
        let cold = self.residency.query_reads_ahead(tables);
        // Every probe `(table, permuted query, lo, hi, first block, first segment)`: its
        // directory bucket asked for by the first round; its block decided by the second
        // (and prefetched there) or searched for by the third, which also drops the probes
        // past their table's last block; its segment found by the fourth.
        let mut n = 0;
        probes.each(|p| {
            work.probes += 1;
            // Field by field: the block, entry and shape left from an earlier query are
            // set by the rounds below before anything reads them (a whole entry written
            // here, its 64-byte shape zeroed, cost about 20 instructions a probe).
            let e = &mut plan[n];
            e.table = p.table;
            e.query = p.query;
            e.lo = p.lo;
            e.hi = p.hi;
            e.slice = (tables[p.table].locate(p.lo), 0);
            n += 1;
        });
        for p in &mut plan[..n] {
            p.slice = tables[p.table].slice_of(p.slice.0, p.lo);
        }
        let mut planned = 0;
        for j in 0..n {
            let (t, lo, hi) = (plan[j].table, plan[j].lo, plan[j].hi);
            let table = &tables[t];
            let b = table.find_block_in(lo, plan[j].slice) as u64;
            // A block the bucket decided was prefetched by the second round.
            let asked = table.block_prefetched(plan[j].slice);
            if b < table.block_count() {
                let blocks = table.range_blocks(b, hi);
                if cold {
                    table.will_need_blocks(blocks.clone());
                }
                for i in blocks.start + asked as u64..blocks.end {
                    table.prefetch_block(i);
                }
                // In place (a probe is 104 bytes): moved down only past a dropped one.
                plan[j].block = b;
                if planned < j {
                    plan[planned] = plan[j];
                }
                planned += 1;
            }
        }
        // Large blocks: where each probe starts decoding, once the blocks' skip entries
        // (their first lines, prefetched above, all probes' misses overlapping) have arrived.
        for p in &mut plan[..planned] {
            tables[p.table].prefetch_segment::<A>(p.block, p.lo, &mut p.entry, &mut p.shape);
        }
        planned
    }

    /// Every key within `k` of its probe's query, over `probes` (at most [`MAX_PROBES`]), as
    /// `emit(table, key, distance)`; repeats across tables are the caller's to remove.
    #[inline(always)]
    pub(crate) fn run(
        &self,
        probes: &impl Probes,
        k: u32,
        work: &mut Work,
        emit: impl FnMut(usize, u64, u32),
    ) -> Result<()> {
        // The plan's buffer is kept per thread between calls (a call that finds none, a
        // nested one, makes its own) rather than zeroed afresh on the stack, 64 probes of 104
        // bytes: that made a single query 0.87-0.95x of its time at 1M-100M keys
        // (docs/log/benchmarks.md, “an A/B harness”). What an earlier query left in it is overwritten before it
        // is read (`plan`).
        let mut plan = PLAN
            .take()
            .unwrap_or_else(|| Box::new([Planned::default(); MAX_PROBES]));
        let done = self.run_in(probes, k, work, emit, &mut plan);
        PLAN.set(Some(plan));
        done
    }

    /// [`run`](Self::run) with the plan's buffer `plan`.
    #[inline(always)]
    fn run_in(
        &self,
        probes: &impl Probes,
        k: u32,
        work: &mut Work,
        mut emit: impl FnMut(usize, u64, u32),
        plan: &mut [Planned; MAX_PROBES],
    ) -> Result<()> {
        let tables = self.tables;
        #[cfg(target_arch = "x86_64")]
        if self.lanes {
            // SAFETY: `lanes` is set only where `lanes::supported` found AVX2 and POPCNT.
            return unsafe {
                if self.aligned {
                    self.run_lanes_as::<true>(probes, k, work, &mut emit, plan)
                } else {
                    self.run_lanes_as::<false>(probes, k, work, &mut emit, plan)
                }
            };
        }
        let planned = self.plan::<true>(probes, work, plan);
        let mut live = Vec::with_capacity(planned);
        for p in &plan[..planned] {
            let cursor = Cursor::open(&tables[p.table], p.block, p.lo, p.hi, &mut work.blocks)?;
            live.push((cursor, p.query, p.table));
        }
        let mut j = 0;
        while !live.is_empty() {
            if j >= live.len() {
                j = 0;
            }
            let (cursor, q, t) = &mut live[j];
            match cursor.step(&mut work.keys) {
                Step::Key(key) => {
                    let d = (key ^ *q).count_ones();
                    if d <= k {
                        work.candidates += 1;
                        emit(*t, key, d);
                    }
                    j += 1;
                }
                Step::Below => j += 1,
                Step::BlockEnd => {
                    if !cursor.advance(&mut work.blocks)? {
                        live.swap_remove(j);
                    }
                }
                Step::Done => {
                    live.swap_remove(j);
                }
            }
        }
        Ok(())
    }

    /// [`run_in`](Self::run_in) through the vector lanes, with the plan and lanes of `A`
    /// ([`aligned`](Self::aligned)).
    ///
    /// # Safety
    /// `self.lanes` must be set.
    #[cfg(target_arch = "x86_64")]
    #[inline(always)]
    unsafe fn run_lanes_as<const A: bool>(
        &self,
        probes: &impl Probes,
        k: u32,
        work: &mut Work,
        emit: &mut impl FnMut(usize, u64, u32),
        plan: &mut [Planned; MAX_PROBES],
    ) -> Result<()> {
        let planned = self.plan::<A>(probes, work, plan);
        let lanes = super::lanes::Lanes::<D, A> {
            tables: self.tables,
        };
        // SAFETY: `lanes` is set only where `lanes::supported` found AVX2 and POPCNT.
        unsafe { lanes.run(&plan[..planned], k, work, emit) }
    }

    /// [`run`](Self::run) for `n` queries, the probes of query `i` from `probes_of(i)`, as
    /// `emit(query, table, key, distance)`, with the vector lanes (the caller checked
    /// `self.lanes`). The lanes decode one stream of all the queries' probes: a lane that ends
    /// a probe takes the next, the next query's if this one's have all started, so that no lane
    /// idles while the slowest probe of a query ends (at 1M keys a query's four probes decode
    /// 27 keys each on average, each from its segment's start, so up to 20 more or fewer, and
    /// the group waited for the longest). Each query is planned
    /// (its rounds of prefetches) when its first probe is needed.
    #[cfg(target_arch = "x86_64")]
    pub(crate) fn run_many<P: Probes>(
        &self,
        n: usize,
        probes_of: impl Fn(usize) -> P,
        k: u32,
        work: &mut Work,
        mut emit: impl FnMut(u32, usize, u64, u32),
    ) -> Result<()> {
        debug_assert!(self.lanes);
        if self.aligned {
            // SAFETY: the caller's.
            unsafe { self.run_many_as::<P, true>(n, probes_of, k, work, &mut emit) }
        } else {
            // SAFETY: the caller's.
            unsafe { self.run_many_as::<P, false>(n, probes_of, k, work, &mut emit) }
        }
    }

    /// [`run_many`](Self::run_many) with the lanes and plan of `A` ([`aligned`](Self::aligned)).
    ///
    /// # Safety
    /// `self.lanes` must be set.
    #[cfg(target_arch = "x86_64")]
    #[inline(always)]
    unsafe fn run_many_as<P: Probes, const A: bool>(
        &self,
        n: usize,
        probes_of: impl Fn(usize) -> P,
        k: u32,
        work: &mut Work,
        emit: &mut impl FnMut(u32, usize, u64, u32),
    ) -> Result<()> {
        let mut stream = ManyQueries::<_, _, _, A> {
            scan: self,
            probes_of,
            n,
            plan: [Planned::default(); MAX_PROBES],
            len: 0,
            at: 0,
            query: 0,
            _probes: std::marker::PhantomData,
        };
        let lanes = super::lanes::Lanes::<D, A> {
            tables: self.tables,
        };
        // SAFETY: `lanes` is set only where `lanes::supported` found AVX2 and POPCNT.
        unsafe { lanes.run_stream(k, work, &mut stream, emit) }
    }
}
