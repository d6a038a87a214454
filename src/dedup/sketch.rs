//! Sketches of shingle sets: what a store keeps per document so that a candidate pair found by
//! fingerprints can be verified without the documents' texts.
//!
//! One-permutation hashing (Li, Owen and Zhang, NIPS 2012) with b-bit values (Li and König,
//! WWW 2010): the 64-bit shingle hashes are split into `bins` bins by their top bits; a bin keeps
//! the smallest of its hashes' remaining bits, stored as a `bits`-bit value in `1..2^bits`
//! (0 marks an empty bin). Two sets' sketches agree in a bin where both are non-empty exactly
//! when the bin's smallest union element is shared (probability J, the Jaccard similarity) or,
//! otherwise, by a collision of the short values (probability `c = 1/(2^bits − 1)`). So over the
//! `N` bins non-empty in either set, with `B` non-empty in both and `M` equal there,
//!
//! ```text
//! Ĵ = max(0, (M − c·B) / (1 − c)) / N
//! ```
//!
//! For a set smaller than the number of bins, almost every element has a bin of its own, so the
//! estimate is the exact Jaccard up to value collisions; for larger sets it is a sample of `bins`
//! elements of the union, standard deviation about `√(P(1 − P)/bins)/(1 − c)` with
//! `P = J + (1 − J)c`: 0.013 at J = 0.9 with the default 512 bins of 2 bits, 128 bytes (short
//! values lose little where similarity is high, and buy twice the bins of 4-bit ones;
//! docs/log/benchmarks.md measures the decisions against exact Jaccard). Specified in
//! format-spec/store.md ("Sketches").

use crate::error::{Error, Result};

/// The sketch shape a store keeps: `bins` bins (a power of two up to 4096) of `bits` bits
/// (2, 4 or 8), at least 8 bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SketchShape {
    bins: u32,
    bits: u32,
}

impl Default for SketchShape {
    /// 512 bins of 2 bits (128 bytes): of the 128-byte shapes measured, the fewest decisions
    /// at T = 0.9 that differ from exact Jaccard's (`cargo bench --bench sketch`;
    /// docs/log/benchmarks.md,
    /// "Documents in the store").
    fn default() -> Self {
        SketchShape { bins: 512, bits: 2 }
    }
}

/// The bins of a sketch being made (see [`SketchShape::sketch_with`]).
pub(crate) struct Bins<'a> {
    /// Per bin, the least hash remainder seen (`u64::MAX`: empty).
    min: &'a mut [u64],
    /// The bins filled so far, each once.
    filled: &'a mut Vec<u32>,
    /// 64 − log2(bins): a hash's top bits pick its bin.
    shift: u32,
}

impl Bins<'_> {
    /// Add one shingle hash.
    #[inline]
    pub(crate) fn add(&mut self, h: u64) {
        let bin = (h >> self.shift) as usize;
        let rest = h << (64 - self.shift) >> (64 - self.shift);
        let m = &mut self.min[bin];
        if *m == u64::MAX {
            self.filled.push(bin as u32);
        }
        *m = (*m).min(rest);
    }
}

impl SketchShape {
    /// The shape of a store that keeps shingle sets: of the fewest bytes, 16 bins of 4 bits
    /// (8 bytes). There the sets decide every answer, exactly, and whether a document put
    /// again is the version stored; the sketch decides nothing. The default's 128 bytes were
    /// nine tenths of such a store's document map and 0.1 GB of an ingest's memory at 1M
    /// documents.
    pub const EXACT: SketchShape = SketchShape { bins: 16, bits: 4 };

    /// The shape a new store's recipe gets: [`SketchShape::EXACT`] where it keeps shingle
    /// sets, else the default.
    pub fn for_store(keeps_sets: bool) -> SketchShape {
        match keeps_sets {
            true => SketchShape::EXACT,
            false => SketchShape::default(),
        }
    }

    /// A shape; an error unless `bins` is a power of two up to 4096, `bits` is 2, 4 or 8, and
    /// the sketch has at least 8 bytes.
    pub fn new(bins: u32, bits: u32) -> Result<SketchShape> {
        let ok = bins.is_power_of_two() && bins <= 4096 && [2, 4, 8].contains(&bits);
        if !ok || bins * bits < 64 {
            return Err(Error::InvalidArgument(format!(
                "sketch of {bins} bins of {bits} bits: bins must be a power of two up to 4096, \
                 bits 2, 4 or 8, and the sketch at least 8 bytes"
            )));
        }
        Ok(SketchShape { bins, bits })
    }

    /// Bins.
    pub fn bins(&self) -> u32 {
        self.bins
    }

    /// Bits per bin.
    pub fn bits(&self) -> u32 {
        self.bits
    }

    /// Bytes of one sketch.
    pub fn bytes(&self) -> usize {
        (self.bins * self.bits / 8) as usize
    }

    /// The sketch of a set of 64-bit shingle hashes (any order, repeats allowed).
    pub fn sketch(&self, set: &[u64]) -> Vec<u8> {
        self.sketch_with(|bins| set.iter().for_each(|&h| bins.add(h)))
    }

    /// The sketch of the hashes `fill` adds to the bins: for a caller that makes them one at a
    /// time (a document's shingles as its tokens are read), without collecting them first.
    pub(crate) fn sketch_with(&self, fill: impl FnOnce(&mut Bins<'_>)) -> Vec<u8> {
        thread_local! {
            // The bins' minima (all empty between calls) and the bins a call filled, reused:
            // a sketch per document would allocate 4 KiB otherwise.
            static BINS: std::cell::RefCell<(Vec<u64>, Vec<u32>)> =
                const { std::cell::RefCell::new((Vec::new(), Vec::new())) };
        }
        let values = u128::from((1u32 << self.bits) - 1);
        let bits = self.bits as usize;
        let mut out = vec![0u8; self.bytes()];
        BINS.with_borrow_mut(|(min, filled)| {
            min.resize(self.bins as usize, u64::MAX);
            filled.clear();
            filled.reserve(self.bins as usize);
            fill(&mut Bins {
                min,
                filled,
                shift: 64 - self.bins.trailing_zeros(),
            });
            // Only the filled bins: a short document leaves most of them empty, and visiting
            // every bin (with a mispredicted branch per bin) was most of a sketch's time.
            for &bin in filled.iter() {
                let bin = bin as usize;
                // 1 + ⌊mix64(m) · (2^bits − 1) / 2^64⌋: uniform in 1..2^bits, no division.
                let v = 1 + ((u128::from(crate::checksum::mix64(min[bin])) * values) >> 64);
                // Bin i's value sits at bit offset i × bits (shifts, not divisions).
                let at = bin * bits;
                out[at >> 3] |= (v as u8) << (at & 7);
                min[bin] = u64::MAX;
            }
        });
        out
    }

    /// (bins non-empty in either, in both, equal and non-empty) over 8 bytes of each sketch,
    /// all bins of a word at once: a bin's lowest bit in `lanes` marks it.
    fn counts(&self, x: u64, y: u64) -> (u32, u32, u32) {
        let lanes = match self.bits {
            2 => 0x5555_5555_5555_5555u64,
            4 => 0x1111_1111_1111_1111,
            _ => 0x0101_0101_0101_0101,
        };
        let nonzero = |v: u64| (0..self.bits).fold(0, |acc, i| acc | v >> i) & lanes;
        let (nx, ny) = (nonzero(x), nonzero(y));
        let equal = !nonzero(x ^ y) & lanes & nx;
        (
            (nx | ny).count_ones(),
            (nx & ny).count_ones(),
            equal.count_ones(),
        )
    }

    /// The estimated Jaccard similarity of the sets of two sketches of this shape (0 when both
    /// are empty: a document without shingles is nobody's near-duplicate); an error if either
    /// has the wrong length.
    pub fn similarity(&self, a: &[u8], b: &[u8]) -> Result<f64> {
        if a.len() != self.bytes() || b.len() != self.bytes() {
            return Err(Error::InvalidArgument(format!(
                "sketches of {} and {} bytes for a shape of {} bytes",
                a.len(),
                b.len(),
                self.bytes()
            )));
        }
        let (mut union, mut both, mut equal) = (0u32, 0u32, 0u32);
        // Every shape is a whole number of 8-byte words (at least 16 bins of 4 bits).
        for (x, y) in a.chunks_exact(8).zip(b.chunks_exact(8)) {
            let word = |c: &[u8]| u64::from_le_bytes(c.try_into().unwrap_or_default());
            let (u, bo, e) = self.counts(word(x), word(y));
            union += u;
            both += bo;
            equal += e;
        }
        if union == 0 {
            return Ok(0.0);
        }
        let c = 1.0 / ((1u32 << self.bits) - 1) as f64;
        let shared = ((f64::from(equal) - c * f64::from(both)) / (1.0 - c)).max(0.0);
        Ok((shared / f64::from(union)).min(1.0))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dedup::verify::jaccard;

    fn sets(next: &mut impl FnMut() -> u64, n: usize, shared: usize) -> (Vec<u64>, Vec<u64>) {
        let common: Vec<u64> = (0..shared).map(|_| next()).collect();
        let mut a = common.clone();
        let mut b = common;
        a.extend((shared..n).map(|_| next()));
        b.extend((shared..n).map(|_| next()));
        a.sort_unstable();
        b.sort_unstable();
        (a, b)
    }

    /// Estimates follow exact Jaccard: small sets almost exactly, large ones within the
    /// sampling error (4 standard deviations of 256 samples), at every shape.
    #[test]
    fn estimates_track_exact_jaccard() {
        let mut next = crate::dedup::xorshift(11);
        for (bins, bits) in [(256, 4), (128, 8), (512, 2), (16, 4)] {
            let shape = SketchShape::new(bins, bits).unwrap();
            for n in [10usize, 60, 300, 3000] {
                for frac in [0.5, 0.8, 0.9, 0.95, 1.0] {
                    let (a, b) = sets(&mut next, n, (n as f64 * frac) as usize);
                    let exact = jaccard(&a, &b);
                    let est = shape
                        .similarity(&shape.sketch(&a), &shape.sketch(&b))
                        .unwrap();
                    let samples = (2 * n).min(bins as usize) as f64;
                    let c = 1.0 / ((1u32 << bits) - 1) as f64;
                    let sd = (exact * (1.0 - exact) / samples).sqrt() / (1.0 - c) + 0.02;
                    assert!(
                        (est - exact).abs() <= 4.0 * sd,
                        "{bins}x{bits} n = {n}: estimate {est:.3}, exact {exact:.3}"
                    );
                }
            }
        }
    }

    #[test]
    fn identical_empty_and_disjoint() {
        let s = SketchShape::default();
        let a: Vec<u64> = (1..500u64).map(crate::checksum::mix64).collect();
        assert_eq!(s.similarity(&s.sketch(&a), &s.sketch(&a)).unwrap(), 1.0);
        assert_eq!(s.similarity(&s.sketch(&[]), &s.sketch(&[])).unwrap(), 0.0);
        let b: Vec<u64> = (1000..1500u64).map(crate::checksum::mix64).collect();
        assert!(s.similarity(&s.sketch(&a), &s.sketch(&b)).unwrap() < 0.1);
        assert_eq!(s.sketch(&a).len(), 128);
        assert!(s.similarity(&[0; 3], &s.sketch(&a)).is_err());
        assert!(SketchShape::new(100, 4).is_err());
        assert!(SketchShape::new(4, 8).is_err());
        assert!(SketchShape::new(256, 3).is_err());
        // The exact stores' shape is a valid one, of the fewest bytes a sketch may have.
        assert_eq!(SketchShape::new(16, 4).unwrap(), SketchShape::EXACT);
        assert_eq!(SketchShape::EXACT.bytes(), 8);
        assert!(SketchShape::new(8, 4).is_err() && SketchShape::new(16, 2).is_err());
    }
}
