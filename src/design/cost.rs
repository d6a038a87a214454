//! The query cost model: which design and block size serve `n` fingerprints best on one
//! machine (the join cost model, for engines that shuffle, is [`super::join`]).

use super::{Design, check_k};
use crate::error::{Error, Result};

/// The table-count budget [`Design::auto`] works under by default.
pub const DEFAULT_MAX_TABLES: usize = 20;
/// Reader memory (last-key arrays and their directories over all tables) that
/// [`auto_block_size`] stays within.
///
/// 2 GiB keeps the smallest blocks up to about 10^9 fingerprints with the 10 tables `auto`
/// picks there: larger blocks make every probe decode more keys (measured in
/// docs/log/benchmarks.md),
/// and 2 GiB is a few percent of such an index, whose blocks must be in the page cache for
/// fast queries anyway. Beyond that, larger blocks keep the reader's memory bounded.
pub const AUTO_BLOCK_RAM_BUDGET: u64 = 2 << 30;
/// Reader memory per block: its last key (8 bytes) and about 4 bytes of the directory that
/// searches the last keys (a 64-byte bucket per 16 blocks, `table::directory`).
const READER_BYTES_PER_BLOCK: f64 = 12.0;
/// Block sizes [`auto_block_size`] chooses from for indexes above
/// `AUTO_SEGMENTED_INDEX_BYTES`, smallest (fastest queries) first, all cut into segments of
/// `AUTO_SEGMENT_KEYS`. At 100M keys (design 10, 5 GB) 1024-byte blocks in segments were
/// 3-10% faster than format 1's 256-byte blocks on one VM and level on another (with their
/// first checks prefetched), at bound + 3.9 bits per key in format 2 (+ 3.3 in format 3)
/// instead of + 5.6 and a quarter of the reader memory; 4096-byte ones were 1.4x slower
/// (docs/log/benchmarks.md).
pub const AUTO_BLOCK_SIZES: [u32; 3] = [1024, 2048, 4096];
/// The block size of indexes up to [`AUTO_SEGMENTED_INDEX_BYTES`]: cut into segments of
/// [`AUTO_SEGMENT_KEYS`] keys, bound + 3.25-3.4 bits per key in format 3 (+ 3.4-3.5 in format 2)
/// instead of bound + 5.8 (256-byte blocks of format 1), and queries as fast or faster at 1M
/// and 10M keys (docs/log/benchmarks.md, “Queries toward the memory limit”).
pub const AUTO_SEGMENTED_BLOCK_SIZE: u32 = 4096;
/// The largest index (modelled bytes of all tables) [`auto_block_size`] gives segmented
/// blocks: 1 GiB.
///
/// A probe of a 4096-byte segmented block reads its skip entries (up to three cache lines),
/// then its segment, and the first read of each block checks a crc over 4 KiB. While the
/// index's blocks are in the CPU caches that is cheaper than the decode it saves; once they
/// come from DRAM it is not: at 100M keys (5 GB) queries were 1.4x slower than format 1's (at
/// 10M, 0.5 GB, as fast or 1.1x faster; measured on a VM with a 480 MB L3, docs/log/benchmarks.md).
/// Larger indexes take 1024-byte blocks: a head of two lines (blocks start 48 bytes into a
/// line) and a 1 KiB first check, which probes prefetch whole. 2048-byte blocks in segments
/// of 24 reach bound + 3.4 there in format 2 and are no slower than format 1 once every block
/// is checked at open (`populate`, `open_in_memory`), but 1.15-1.4x slower for a fresh mapped
/// reader; format 3 brings 1024-byte blocks to bound + 3.3 without that cost.
pub const AUTO_SEGMENTED_INDEX_BYTES: f64 = (1u64 << 30) as f64;

/// Modelled keys per block for `n` random keys in blocks of `block_size` bytes: the information
/// bound plus the measured ~2.5 bits of h-delta overhead per key, after the 16 bytes of block
/// framing.
pub fn keys_per_block(n: u64, block_size: u32) -> f64 {
    let bits = crate::table::information_bound(n.max(1)) + 2.5;
    (block_size as f64 - 16.0) * 8.0 / bits + 1.0
}

/// Keys per segment [`auto_segment_keys`] gives blocks large enough to be cut: at 4096-byte
/// blocks, 16 keys were 3-7% faster than 20 but cost bound + 3.7 bits per key (1M, 10M
/// uniform keys); 20 cost bound + 3.4, 24 bound + 3.2 at format 1's speed (docs/log/benchmarks.md).
pub const AUTO_SEGMENT_KEYS: u32 = 20;
/// The smallest block size [`auto_segment_keys`] cuts into segments.
pub const AUTO_SEGMENT_MIN_BLOCK: u32 = 1024;

/// Keys per segment for tables of blocks of `block_size` bytes: [`AUTO_SEGMENT_KEYS`] from
/// [`AUTO_SEGMENT_MIN_BLOCK`] to the largest block a segmented table may use, else none.
pub fn auto_segment_keys(block_size: u32) -> u32 {
    if (AUTO_SEGMENT_MIN_BLOCK..=crate::table::MAX_SEGMENTED_BLOCK_SIZE).contains(&block_size) {
        AUTO_SEGMENT_KEYS
    } else {
        0
    }
}

/// Modelled nanoseconds per key of a probe's range in a table aligned to its runs (format 4),
/// against 11 for every other key decoded: the run is one segment, decoded on the vector
/// path without a segment change. Fitted to where design 4 (aligned) stops being faster than
/// design 10 (not aligned), measured in one process on the same keys (docs/log/benchmarks.md,
/// “format 3 without format 4's cost, and faiss again”): 0.67-0.77x at 3M keys, 0.90-0.96x at 5M
/// and 6M, 1.08-1.18x at 7M. At 11
/// the model put that point at 4.2M, so `auto` gave 5M-6M keys design 10, 4-10% slower at
/// 2.5x the bytes; at 7.5 it is at about 6.4M.
const ALIGNED_RUN_KEY_NS: f64 = 7.5;

/// Fewest keys a table's prefix runs must average for its segments to be aligned to them.
pub const ALIGN_MIN_RUN: f64 = 8.0;
/// Most keys per segment of an aligned table, S: a run shorter than this shares its
/// segment with the runs after it, so that an entry (about 41 bits at a million keys) serves
/// several keys.
pub const ALIGNED_SEGMENT_KEYS: u32 = 8;

/// The prefix bits a table of `n` keys probed by `prefix_bits`-bit prefixes, in segments of
/// `segment_keys` keys, aligns its segments to (format 4), and the segment length it then
/// uses; `(0, segment_keys)` where it does not: unsegmented tables, and runs that average
/// fewer than [`ALIGN_MIN_RUN`] keys, where a probe's run starts a segment too rarely to pay
/// for the entries' key indices.
pub fn auto_alignment(n: u64, prefix_bits: u32, segment_keys: u32) -> (u32, u32) {
    alignment(n, prefix_bits, segment_keys, ALIGN_MIN_RUN)
}

/// [`auto_alignment`] with runs of `min_run` keys or more aligned (tests align every run).
pub(crate) fn alignment(n: u64, prefix_bits: u32, segment_keys: u32, min_run: f64) -> (u32, u32) {
    let run = n as f64 / 2f64.powi(prefix_bits as i32);
    if segment_keys == 0 || !(1..=63).contains(&prefix_bits) || run < min_run {
        return (0, segment_keys);
    }
    (prefix_bits, segment_keys.min(ALIGNED_SEGMENT_KEYS))
}

/// The block size for an index of `n` keys in `tables` tables: the smallest whose last-key
/// arrays fit in `AUTO_BLOCK_RAM_BUDGET`, else the largest.
///
/// Up to `AUTO_SEGMENTED_INDEX_BYTES` of index: `AUTO_SEGMENTED_BLOCK_SIZE`. Above, the
/// smallest of [`AUTO_BLOCK_SIZES`](crate::Design::AUTO_BLOCK_SIZES) whose last keys fit the
/// budget: small blocks cost a probe
/// the fewest cache lines and the cheapest first crc check, but the in-memory last-key array
/// (and its directory) costs about 12 bytes per block per table, which at billions of keys is
/// gigabytes; there larger blocks keep the index's memory small. Segments make a probe's
/// decode independent of the block size in every case.
pub fn auto_block_size(n: u64, tables: usize) -> u32 {
    let bits = crate::table::information_bound(n.max(1)) + 2.5;
    if n as f64 * bits / 8.0 * tables as f64 <= AUTO_SEGMENTED_INDEX_BYTES {
        return AUTO_SEGMENTED_BLOCK_SIZE;
    }
    AUTO_BLOCK_SIZES
        .iter()
        .copied()
        .find(|&b| {
            let blocks = (n as f64 / keys_per_block(n, b)).ceil();
            blocks * READER_BYTES_PER_BLOCK * tables as f64 <= AUTO_BLOCK_RAM_BUDGET as f64
        })
        .unwrap_or(AUTO_BLOCK_SIZES[AUTO_BLOCK_SIZES.len() - 1])
}

impl Design {
    /// The design with the least expected work per query for `n` keys (see [`Cost`]), among
    /// [`candidates`](Self::candidates) with at most
    /// [`DEFAULT_MAX_TABLES`](crate::Design::DEFAULT_MAX_TABLES) tables, costed at
    /// the smallest automatic block size: the design a build with `--design auto` and
    /// `--block-size auto` picks.
    pub fn auto(n: u64, k: u32) -> Result<Design> {
        Design::auto_with_budget(n, k, DEFAULT_MAX_TABLES, AUTO_BLOCK_SIZES[0])
    }

    /// As [`auto`](Self::auto) with an explicit table budget and block size.
    pub fn auto_with_budget(n: u64, k: u32, max_tables: usize, block_size: u32) -> Result<Design> {
        check_k(k)?;
        Design::candidates(k, max_tables)
            .into_iter()
            .min_by(|a, b| {
                let (ca, cb) = (a.cost(n, block_size), b.cost(n, block_size));
                ca.work_ns
                    .total_cmp(&cb.work_ns)
                    .then(a.tables.len().cmp(&b.tables.len()))
            })
            .ok_or_else(|| {
                Error::InvalidArgument(format!("no design for k = {k} fits in {max_tables} tables"))
            })
    }

    /// Expected cost of one query against `n` keys in blocks of `block_size` bytes.
    pub fn cost(&self, n: u64, block_size: u32) -> Cost {
        let nf = n.max(1) as f64;
        let bits = crate::table::information_bound(n.max(1)) + 2.5;
        let keys_per_block = keys_per_block(n, block_size);
        let blocks = (nf / keys_per_block).max(1.0);
        let table_bytes = nf * bits / 8.0;
        // Once the index outgrows the CPU caches, each probe's block is a cache miss and a TLB
        // miss whose page walk itself misses more often the larger the mapping: ~90 ns per
        // doubling of the index beyond 64 MiB. Fitted to the query bench (one thread, pages
        // mapped) at 1M, 10M and 100M; see docs/log/benchmarks.md, “Batch skips blocks, populate, huge pages, a re-fitted cost model, and 100M”.
        let index_bytes = table_bytes * self.tables.len() as f64;
        let miss = 90.0 * (index_bytes / (64u64 << 20) as f64).log2().max(0.0);
        let mut probes = 0.0;
        let mut candidates = 0.0;
        let mut work = 0.0;
        for i in 0..self.tables.len() {
            let pr = self.probes_per_table(i) as f64;
            let per_probe = nf / 2f64.powi(self.tables[i].prefix_bits as i32);
            probes += pr;
            candidates += pr * per_probe;
            // Constants measured on the development machine (2 GHz Xeon): ~11 ns per key
            // decoded, ~2 ns per candidate checked, a block search of a cache miss or two.
            let search = 80.0 + 4.0 * blocks.log2();
            // Keys decoded before the probe's range: half a block, half a segment, or none
            // where the table's segments are aligned to its runs (format 4), whose run is
            // then decoded as one segment, without a segment start on the way.
            let (reach, run_key) = match auto_segment_keys(block_size) {
                0 => (keys_per_block / 2.0, 11.0),
                s if auto_alignment(n, self.tables[i].prefix_bits, s).0 > 0 => {
                    (0.0, ALIGNED_RUN_KEY_NS)
                }
                s => (s as f64 / 2.0, 11.0),
            };
            work += pr * (search + miss + 11.0 * reach + (run_key + 2.0) * per_probe);
        }
        Cost {
            probes,
            candidates,
            work_ns: work,
            disk_bytes: table_bytes * self.tables.len() as f64,
            memory_bytes: blocks * READER_BYTES_PER_BLOCK * self.tables.len() as f64,
        }
    }
}

/// Expected work of one query under a design (a model, not a measurement).
#[derive(Debug, Clone, Copy, PartialEq)]
#[non_exhaustive]
pub struct Cost {
    /// Probes (block searches) per query.
    pub probes: f64,
    /// Expected keys sharing a probed prefix, summed over probes.
    pub candidates: f64,
    /// Modelled nanoseconds per query.
    pub work_ns: f64,
    /// Estimated bytes on disk for all tables.
    pub disk_bytes: f64,
    /// Estimated bytes of reader memory (last-key arrays and their directories).
    pub memory_bytes: f64,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::design::MAX_K;

    #[test]
    fn auto_block_size_is_small_until_memory_forbids() {
        // Segmented blocks while the index is small (1M keys in 4 tables: 24 MB; 10M in 10:
        // 0.56 GB), format 1's smallest above.
        assert_eq!(auto_block_size(1_000_000, 4), 4096);
        assert_eq!(
            auto_segment_keys(auto_block_size(10_000_000, 10)),
            AUTO_SEGMENT_KEYS
        );
        assert_eq!(auto_block_size(30_000_000, 10), 1024);
        assert_eq!(auto_block_size(100_000_000, 10), 1024);
        assert_eq!(auto_segment_keys(256), 0);
        // The 10 tables `auto` picks at 1B still fit 1024-byte blocks in the budget.
        assert_eq!(Design::auto(1_000_000_000, 3).unwrap().tables().len(), 10);
        assert_eq!(auto_block_size(1_000_000_000, 10), 1024);
        // The paper's 8e9 keys: 2048-byte blocks in 10 tables, 4096 in 20.
        assert_eq!(auto_block_size(8_000_000_000, 10), 2048);
        assert_eq!(auto_block_size(8_000_000_000, 20), 4096);
        for b in AUTO_BLOCK_SIZES {
            assert_eq!(auto_segment_keys(b), AUTO_SEGMENT_KEYS, "{b}");
        }
        let mut last = 0;
        // Above the segmented range, larger as the last keys grow.
        for n in [1e8, 1e9, 1e10] {
            let b = auto_block_size(n as u64, 20);
            assert!(b >= last);
            last = b;
        }
    }

    #[test]
    fn auto_picks_the_designs_measured_fastest() {
        // One thread, pages mapped, uniform random fingerprints (docs/log/benchmarks.md, “Batch
        // skips blocks, populate, huge pages, a re-fitted cost model, and 100M”): at
        // 1M design 4 (2.1 µs) beat 10 (3.6); at 10M 10 (7.5) beat 4 (8.6) and 16 (14.5); at
        // 100M 10 (10.4-11.5) beat 16 (15.2-17.7), and for k = 2 m3c1r0 (4.1-4.7) beat m4c2r0
        // (5.2-5.9), which the model without its cache-miss term picked.
        // Design 4 in format 4 (aligned) against design 10, same keys (the log's “format 3 without format 4's cost”):
        // 0.90-0.96x at 5M and 6M, 1.08-1.18x at 7M. The same re-fit moved two picks at large
        // k to designs whose runs are aligned, measured faster (`simdex query --timing
        // --populate`, one thread): k = 5 at 300k keys m6c1r0 (5.6-7.1 µs) over m3c1r1
        // (11.2-14.5), k = 6 at 100k m7c1r0 (10.7-18.7) over m4c1r1 (22.2-25.0).
        for (n, k, want) in [
            (300_000, 5, "m6c1r0"),
            (100_000, 6, "m7c1r0"),
            (1_000_000, 3, "4"),
            (5_000_000, 3, "4"),
            (6_000_000, 3, "4"),
            (7_000_000, 3, "10"),
            (10_000_000, 3, "10"),
            (100_000_000, 3, "10"),
            (100_000_000, 2, "m3c1r0"),
        ] {
            assert_eq!(Design::auto(n, k).unwrap().name(), want, "n = {n}, k = {k}");
        }
    }

    #[test]
    fn auto_prefers_more_tables_as_n_grows() {
        let small = Design::auto(1_000_000, 3).unwrap();
        let huge = Design::auto(8_000_000_000, 3).unwrap();
        assert!(
            huge.tables().len() > small.tables().len(),
            "{} vs {}",
            small.name(),
            huge.name()
        );
        for k in 0..=MAX_K {
            let d = Design::auto(10_000_000, k).unwrap();
            assert_eq!(d.k(), k);
            assert!(d.tables().len() <= DEFAULT_MAX_TABLES);
        }
    }
}
