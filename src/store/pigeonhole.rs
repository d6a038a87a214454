//! The fingerprints of one group of new documents (a few thousand), indexed for "which are
//! within k of F" by the pigeonhole principle: cut the 64 bits into k + 1 blocks; a fingerprint
//! within k bits of F differs from it on at most k blocks, so it equals F on at least one. Per
//! block, the fingerprints that share a bucket (the block's value, or its top 16 bits for a
//! wider block) are chained; a query walks its k + 1 chains and checks each fingerprint met
//! with one POPCNT, instead of scanning the whole group.
//!
//! At k = 3 (4 blocks of 16 bits, 65 536 buckets each) a query of a group of 4096 meets about
//! one fingerprint instead of 2048 on average; at k = 7 (8 blocks of 8 bits) about 128. Past
//! k = 8 the chains grow too long to beat a scan, and [`Pigeonhole::new`] declines.

/// No entry.
const NONE: u32 = u32::MAX;

/// See the module docs.
#[derive(Debug)]
pub(crate) struct Pigeonhole {
    k: u32,
    /// Per block: the shift and width (≤ 16 bits) of its bucket number.
    blocks: Vec<(u32, u32)>,
    /// Per block, where its buckets' chain heads start in `heads`.
    starts: Vec<usize>,
    /// Per bucket, the latest entry in it (`NONE` if none).
    heads: Vec<u32>,
    /// Per entry and block (`entry × blocks + block`), the previous entry of its bucket.
    next: Vec<u32>,
    fps: Vec<u64>,
    /// Per entry, the last query that met it: an entry in several of a query's chains is
    /// reported once.
    seen: Vec<u32>,
    query: u32,
}

impl Pigeonhole {
    /// An empty index for queries within `k`; `None` when k > 8 (a scan is cheaper).
    pub(crate) fn new(k: u32) -> Option<Pigeonhole> {
        if k > 8 {
            return None;
        }
        let mut blocks = Vec::new();
        let mut starts = Vec::new();
        let mut buckets = 0;
        for (shift, width) in crate::dedup::wide::even_blocks(k + 1) {
            // A bucket is the block's value, or its top 16 bits for a wider block.
            let bits = width.min(16);
            blocks.push((shift + width - bits, bits));
            starts.push(buckets);
            buckets += 1 << bits;
        }
        Some(Pigeonhole {
            k,
            blocks,
            starts,
            heads: vec![NONE; buckets],
            next: Vec::new(),
            fps: Vec::new(),
            seen: Vec::new(),
            query: 0,
        })
    }

    /// Forget every entry (keeping the memory).
    pub(crate) fn clear(&mut self) {
        if !self.fps.is_empty() {
            self.heads.fill(NONE);
        }
        self.next.clear();
        self.fps.clear();
        self.seen.clear();
    }

    #[inline]
    fn bucket(&self, b: usize, fp: u64) -> usize {
        let (shift, bits) = self.blocks[b];
        self.starts[b] + ((fp >> shift) & ((1 << bits) - 1)) as usize
    }

    /// Add `fp` as the next entry (entries are numbered from 0 in the order added).
    pub(crate) fn push(&mut self, fp: u64) {
        let e = self.fps.len() as u32;
        for b in 0..self.blocks.len() {
            let at = self.bucket(b, fp);
            self.next.push(self.heads[at]);
            self.heads[at] = e;
        }
        self.fps.push(fp);
        self.seen.push(0);
    }

    /// Call `f(entry, distance)` once for each entry within `k` of `fp`, in no particular
    /// order.
    pub(crate) fn within(&mut self, fp: u64, mut f: impl FnMut(usize, u32)) {
        self.query = self.query.wrapping_add(1);
        if self.query == 0 {
            // Stamps wrapped: clear them so that no old stamp equals a new query's.
            self.seen.fill(0);
            self.query = 1;
        }
        let nb = self.blocks.len();
        for b in 0..nb {
            let mut e = self.heads[self.bucket(b, fp)];
            while e != NONE {
                let i = e as usize;
                if self.seen[i] != self.query {
                    self.seen[i] = self.query;
                    let d = (self.fps[i] ^ fp).count_ones();
                    if d <= self.k {
                        f(i, d);
                    }
                }
                e = self.next[i * nb + b];
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Against a scan, for every k it accepts: fingerprints near each other (a few bits
    /// flipped, so that every distance up to k and past it occurs) and random ones, a clear
    /// and a second round.
    #[test]
    fn finds_exactly_what_a_scan_finds() {
        let mut next = crate::dedup::xorshift(11);
        assert!(Pigeonhole::new(9).is_none());
        for k in 0..=8 {
            let mut p = Pigeonhole::new(k).unwrap();
            for round in 0..2 {
                p.clear();
                let base = next();
                let mut fps = Vec::new();
                for i in 0..600 {
                    let fp = match i % 3 {
                        0 => next(),
                        _ => (0..i % 12).fold(base, |f, _| f ^ 1 << (next() % 64)),
                    };
                    fps.push(fp);
                    p.push(fp);
                }
                for q in 0..300 {
                    let fp = match q % 2 {
                        0 => (0..q % 11).fold(base, |f, _| f ^ 1 << (next() % 64)),
                        _ => fps[q] ^ 1 << (next() % 64),
                    };
                    let mut got = Vec::new();
                    p.within(fp, |i, d| got.push((i, d)));
                    got.sort_unstable();
                    let want: Vec<(usize, u32)> = fps
                        .iter()
                        .enumerate()
                        .map(|(i, &x)| (i, (x ^ fp).count_ones()))
                        .filter(|&(_, d)| d <= k)
                        .collect();
                    assert_eq!(got, want, "k = {k}, round {round}, query {q}");
                }
                // The next query's stamp wraps around.
                p.query = u32::MAX;
            }
        }
    }
}
