//! Bit-level coding: MSB-first bit I/O, the canonical Huffman code, and the two delta codecs
//! that turn consecutive sorted keys into (Huffman symbol, raw suffix) pairs.
//!
//! Everything here is independent of the file format; the table module arranges these pieces
//! into blocks. See `format-spec/table.md`, sections "Bit order", "Huffman code", "Codec 1" and
//! "Codec 2".

internal_mod!(bitio);
internal_mod!(huffman);

use crate::error::{Error, Result};

/// How a key is coded after its predecessor. Both codecs emit a Huffman-coded symbol in 0..=63
/// followed by a raw suffix whose length the symbol determines.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Codec {
    /// Codec 1, the paper's: symbol h = the number of leading bits a and b share; suffix = the
    /// 63 − h bits of b below its first differing bit (that bit is 1 in b, 0 in a).
    HDelta,
    /// Codec 2: symbol s = bit length of the gap g = b − a, minus one; suffix = the s low bits
    /// of g (its top bit is implied). Sorted random keys have nearly geometric gaps, so this
    /// spends its raw bits only where the gap is uniform and comes within a fraction of a bit of
    /// the information bound, where h-delta stays ~2 bits above it.
    Gap,
}

impl Codec {
    /// Every codec, by id.
    pub const ALL: [Codec; 2] = [Codec::HDelta, Codec::Gap];

    /// The id stored in table headers and manifests.
    pub fn id(self) -> u32 {
        match self {
            Codec::HDelta => 1,
            Codec::Gap => 2,
        }
    }

    /// The codec with this id.
    pub fn from_id(id: u32) -> Option<Codec> {
        Codec::ALL.into_iter().find(|c| c.id() == id)
    }

    /// The name used on the command line: `h-delta` or `gap`.
    pub fn name(self) -> &'static str {
        match self {
            Codec::HDelta => "h-delta",
            Codec::Gap => "gap",
        }
    }

    internal_fn! {
        /// The coding of `b` after `a` (`a < b`): `(symbol, suffix, suffix_bits)`.
        #[inline]
        fn delta(self, a: u64, b: u64) -> (usize, u64, u32) {
            debug_assert!(a < b);
            match self {
                Codec::HDelta => {
                    let h = (a ^ b).leading_zeros();
                    let n = 63 - h;
                    // n <= 63, so the mask never needs a 64-bit shift.
                    (h as usize, b & ((1u64 << n) - 1), n)
                }
                Codec::Gap => {
                    let g = b - a;
                    let n = 63 - g.leading_zeros();
                    (n as usize, g & ((1u64 << n) - 1), n)
                }
            }
        }
    }

    internal_fn! {
        /// Bits of raw suffix that follow `symbol`.
        #[inline(always)]
        fn suffix_bits(self, symbol: u32) -> u32 {
            match self {
                Codec::HDelta => 63 - symbol,
                Codec::Gap => symbol,
            }
        }
    }

    internal_fn! {
        /// The key after `prev` given a decoded symbol and suffix (`suffix < 2^suffix_bits`), or
        /// `None` if the pair cannot follow `prev` (corrupt data): for h-delta, `prev` has bit h
        /// set;
        /// for gap, the sum overflows.
        #[inline(always)]
        fn apply(self, prev: u64, symbol: u32, suffix: u64) -> Option<u64> {
            match self {
                Codec::HDelta => {
                    let bit = 1u64 << (63 - symbol);
                    if prev & bit != 0 {
                        return None;
                    }
                    // Keep prev's top h bits, set the implied bit, append the suffix.
                    Some((prev & !(u64::MAX >> symbol)) | bit | suffix)
                }
                Codec::Gap => prev.checked_add((1u64 << symbol) | suffix),
            }
        }
    }
}

impl std::fmt::Display for Codec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl std::str::FromStr for Codec {
    type Err = Error;
    fn from_str(s: &str) -> Result<Codec> {
        Codec::ALL
            .into_iter()
            .find(|c| c.name() == s)
            .ok_or_else(|| {
                Error::InvalidArgument(format!("unknown codec {s:?}: use h-delta or gap"))
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn delta_and_apply_are_inverse() {
        let pairs = [
            (0u64, 1u64),
            (0, u64::MAX),
            (u64::MAX - 1, u64::MAX),
            (0x7FFF_FFFF_FFFF_FFFF, 0x8000_0000_0000_0000),
            (12345, 12346),
            (1 << 40, (1 << 40) + (1 << 39) + 7),
        ];
        for c in Codec::ALL {
            for &(a, b) in &pairs {
                let (sym, suffix, n) = c.delta(a, b);
                assert_eq!(n, c.suffix_bits(sym as u32));
                assert!(n == 0 || suffix >> n == 0);
                assert_eq!(c.apply(a, sym as u32, suffix), Some(b), "{c} {a:#x} {b:#x}");
            }
            assert_eq!(Codec::from_id(c.id()), Some(c));
            assert_eq!(c.name().parse::<Codec>().unwrap(), c);
        }
        // Corrupt pairs are refused, not wrapped.
        assert_eq!(Codec::Gap.apply(u64::MAX, 0, 0), None);
        assert_eq!(Codec::HDelta.apply(u64::MAX, 5, 0), None);
        assert!(Codec::from_id(3).is_none());
    }
}
