//! The canonical, length-limited Huffman code over the 64 values of h.
//!
//! A table stores only the code *lengths* (one byte per symbol, `format-spec/table.md`,
//! "Huffman code"); the codes themselves follow from the lengths by the canonical rule of
//! DEFLATE (RFC 1951, 3.2.2): shorter codes sort first, equal lengths in symbol order.
//!
//! * Lengths are built with package-merge (Larmore and Hirschberg), which gives the optimal
//!   code under a length limit. The writer limits codes to [`WRITER_MAX_CODE_LEN`] = 12 bits so
//!   the whole decode table is 4096 four-byte entries (16 KiB), looked up through a first level
//!   of 256 (1 KiB, see [`PRIMARY_BITS`]); readers accept the format's limit of
//!   [`MAX_CODE_LEN`] = 16.
//! * Decoding is one lookup (two for a code over 8 bits): the next stream bits index a table
//!   whose entry holds the symbol and its code length ([`DecodeTable`], in `decode`, with the
//!   registry through which tables of one code share one). `huffman-compress`'s
//!   tree walk measured 23–47 ns per symbol here against ~4 ns for a table lookup, so that crate
//!   is used only in tests, as an independent check that package-merge finds optimal lengths.
//! * [`reference_decode`] is the slow, obviously correct twin: it reads one bit at a time and
//!   compares against every symbol's (length, code). Tests check the two agree.

use super::bitio;

mod decode;
pub use decode::*;

/// Number of symbols: h takes the values 0..=63.
pub const NUM_SYMBOLS: usize = 64;
/// The longest code length a reader must accept.
pub const MAX_CODE_LEN: u32 = 16;
/// The longest code this writer produces.
pub const WRITER_MAX_CODE_LEN: u32 = 12;

/// Code lengths, one per symbol; 0 means the symbol has no code.
pub type Lengths = [u8; NUM_SYMBOLS];

/// A canonical Huffman code: lengths plus the codes they imply.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Code {
    lengths: Lengths,
    codes: [u16; NUM_SYMBOLS],
}

impl Code {
    /// The code for `lengths`, or a description of why the lengths are not a valid code.
    ///
    /// Valid: every length is at most [`MAX_CODE_LEN`], and either no symbol has a code, exactly
    /// one symbol has length 1, or the lengths form a complete prefix code (Kraft sum exactly 1).
    pub fn from_lengths(lengths: &Lengths) -> Result<Code, String> {
        let mut kraft: u64 = 0; // in units of 2^-MAX_CODE_LEN
        let mut used = 0;
        for (sym, &l) in lengths.iter().enumerate() {
            if l as u32 > MAX_CODE_LEN {
                return Err(format!(
                    "code length {l} for h={sym} exceeds {MAX_CODE_LEN}"
                ));
            }
            if l > 0 {
                used += 1;
                kraft += 1u64 << (MAX_CODE_LEN - l as u32);
            }
        }
        let full = 1u64 << MAX_CODE_LEN;
        let ok = match used {
            0 => true,
            1 => kraft == full / 2,
            _ => kraft == full,
        };
        if !ok {
            return Err(format!(
                "code lengths are not a complete prefix code (Kraft sum {kraft}/{full} over {used} symbols)"
            ));
        }
        Ok(Code {
            lengths: *lengths,
            codes: canonical_codes(lengths),
        })
    }

    /// The optimal code for `freqs` with no code longer than `limit` bits.
    pub fn from_frequencies(freqs: &[u64; NUM_SYMBOLS], limit: u32) -> Code {
        let lengths = package_merge(freqs, limit);
        Code::from_lengths(&lengths).expect("package-merge yields a complete code")
    }

    /// The code lengths.
    pub fn lengths(&self) -> &Lengths {
        &self.lengths
    }

    /// The code of `sym` and its length (length 0: the symbol has no code).
    #[inline]
    pub fn encode(&self, sym: usize) -> (u64, u32) {
        (self.codes[sym] as u64, self.lengths[sym] as u32)
    }

    /// The longest code length in use (0 for an empty code).
    pub fn max_len(&self) -> u32 {
        self.lengths.iter().copied().max().unwrap_or(0) as u32
    }

    /// Total bits to code `freqs` with this code (symbols without a code count as `u64::MAX`).
    pub fn cost(&self, freqs: &[u64; NUM_SYMBOLS]) -> u64 {
        freqs
            .iter()
            .zip(&self.lengths)
            .map(|(&f, &l)| match (f, l) {
                (0, _) => 0,
                (_, 0) => u64::MAX,
                _ => f * l as u64,
            })
            .fold(0u64, |a, b| a.saturating_add(b))
    }
}

/// Canonical code assignment (RFC 1951, 3.2.2).
fn canonical_codes(lengths: &Lengths) -> [u16; NUM_SYMBOLS] {
    let mut bl_count = [0u32; MAX_CODE_LEN as usize + 1];
    for &l in lengths {
        if l > 0 {
            bl_count[l as usize] += 1;
        }
    }
    let mut next_code = [0u32; MAX_CODE_LEN as usize + 2];
    let mut code = 0u32;
    for bits in 1..=MAX_CODE_LEN as usize {
        code = (code + bl_count[bits - 1]) << 1;
        next_code[bits] = code;
    }
    let mut codes = [0u16; NUM_SYMBOLS];
    for (sym, &l) in lengths.iter().enumerate() {
        if l > 0 {
            codes[sym] = next_code[l as usize] as u16;
            next_code[l as usize] += 1;
        }
    }
    codes
}

/// Optimal length-limited code lengths by package-merge.
///
/// Ties are broken deterministically (by weight, then leaves before packages, then symbol), so the
/// same histogram always gives the same lengths: the golden vectors depend on it.
fn package_merge(freqs: &[u64; NUM_SYMBOLS], limit: u32) -> Lengths {
    let mut leaves: Vec<(u64, usize)> = freqs
        .iter()
        .enumerate()
        .filter(|&(_, &f)| f > 0)
        .map(|(s, &f)| (f, s))
        .collect();
    leaves.sort_unstable();
    let mut lengths = [0u8; NUM_SYMBOLS];
    match leaves.len() {
        0 => return lengths,
        1 => {
            lengths[leaves[0].1] = 1;
            return lengths;
        }
        _ => {}
    }
    assert!(
        (1usize << limit) >= leaves.len(),
        "limit {limit} too small for {} symbols",
        leaves.len()
    );
    // An item is a weight and how many times each symbol occurs in it.
    type Item = (u64, [u8; NUM_SYMBOLS]);
    let leaf_items: Vec<Item> = leaves
        .iter()
        .map(|&(w, s)| {
            let mut c = [0u8; NUM_SYMBOLS];
            c[s] = 1;
            (w, c)
        })
        .collect();
    let mut list = leaf_items.clone();
    for _ in 1..limit {
        let packages: Vec<Item> = list
            .chunks_exact(2)
            .map(|p| {
                let mut c = p[0].1;
                for (a, b) in c.iter_mut().zip(&p[1].1) {
                    *a += b;
                }
                (p[0].0 + p[1].0, c)
            })
            .collect();
        // Merge, leaves first on equal weight.
        let mut merged = Vec::with_capacity(leaf_items.len() + packages.len());
        let (mut i, mut j) = (0, 0);
        while i < leaf_items.len() || j < packages.len() {
            let take_leaf =
                j == packages.len() || (i < leaf_items.len() && leaf_items[i].0 <= packages[j].0);
            if take_leaf {
                merged.push(leaf_items[i]);
                i += 1;
            } else {
                merged.push(packages[j]);
                j += 1;
            }
        }
        list = merged;
    }
    for item in &list[..2 * leaves.len() - 2] {
        for (l, &c) in lengths.iter_mut().zip(&item.1) {
            *l += c;
        }
    }
    lengths
}

/// Bit-by-bit reference decoder: the symbol whose code starts at bit `pos` of `data`, with its
/// length, or `None` if no code matches within [`MAX_CODE_LEN`] bits.
pub fn reference_decode(code: &Code, data: &[u8], pos: u64) -> Option<(u32, u32)> {
    let mut acc = 0u64;
    for len in 1..=MAX_CODE_LEN {
        acc = (acc << 1) | bitio::read(data, pos + len as u64 - 1, 1);
        for sym in 0..NUM_SYMBOLS {
            if code.encode(sym) == (acc, len) {
                return Some((sym as u32, len));
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc1951_example() {
        // RFC 1951, 3.2.2: lengths (3,3,3,3,3,2,4,4) give codes 010,011,100,101,110,00,1110,1111.
        let mut l = [0u8; 64];
        l[..8].copy_from_slice(&[3, 3, 3, 3, 3, 2, 4, 4]);
        // Not complete over 64 symbols? It is: 5/8 + 1/4 + 2/16 = 1.
        let c = Code::from_lengths(&l).unwrap();
        let want = [0b010, 0b011, 0b100, 0b101, 0b110, 0b00, 0b1110, 0b1111];
        for (s, &w) in want.iter().enumerate() {
            assert_eq!(c.encode(s).0, w);
        }
    }

    #[test]
    fn rejects_bad_lengths() {
        let mut l = [0u8; 64];
        l[0] = 1;
        l[1] = 1;
        l[2] = 1;
        assert!(Code::from_lengths(&l).is_err()); // oversubscribed
        let mut l = [0u8; 64];
        l[0] = 2;
        l[1] = 2;
        assert!(Code::from_lengths(&l).is_err()); // incomplete
        let mut l = [0u8; 64];
        l[5] = 2;
        assert!(Code::from_lengths(&l).is_err()); // lone symbol must have length 1
        let mut l = [0u8; 64];
        l[0] = 17;
        assert!(Code::from_lengths(&l).is_err());
        assert!(Code::from_lengths(&[0u8; 64]).is_ok());
    }

    #[test]
    fn limit_is_respected_and_code_complete() {
        // Fibonacci weights force a deep unconstrained tree.
        let mut f = [0u64; 64];
        let (mut a, mut b) = (1u64, 1u64);
        for x in f.iter_mut().take(40) {
            *x = a;
            (a, b) = (b, a + b);
        }
        for limit in [6, 8, 12, 16] {
            let c = Code::from_frequencies(&f, limit);
            assert!(c.max_len() <= limit);
            assert!(f.iter().zip(c.lengths()).all(|(&f, &l)| (f > 0) == (l > 0)));
        }
    }

    #[test]
    fn fast_and_reference_decoders_agree() {
        let mut f = [0u64; 64];
        for (i, x) in f.iter_mut().enumerate() {
            *x = (i as u64 * 2654435761) % 1000;
        }
        // A flat code (every length 6) decodes in the first level alone; skewed ones (Fibonacci
        // weights under limits of 12 and 16) send their long codes to the second.
        let (mut a, mut b) = (1u64, 1u64);
        let mut fib = [0u64; 64];
        for x in fib.iter_mut().take(30) {
            *x = a;
            (a, b) = (b, a + b);
        }
        let codes = [
            Code::from_frequencies(&f, 12),
            Code::from_frequencies(&[1; 64], 12),
            Code::from_frequencies(&fib, 12),
            Code::from_frequencies(&fib, 16),
        ];
        assert_eq!(codes[1].max_len(), 6);
        assert_eq!(codes[3].max_len(), 16);
        for code in &codes {
            agree(code);
        }
    }

    fn agree(code: &Code) {
        let table = DecodeTable::new(code, |s| 63 - s);
        let mut state = 7u64;
        let bytes: Vec<u8> = (0..4096)
            .map(|_| {
                state = state
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                (state >> 56) as u8
            })
            .collect();
        for pos in 0..(bytes.len() as u64 * 8 - 64) {
            assert_eq!(
                table.decode(bitio::peek(&bytes, pos)),
                reference_decode(code, &bytes, pos),
                "bit {pos}"
            );
        }
    }
}
