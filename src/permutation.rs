//! Bit permutations: how a table reorders fingerprint bits before sorting.
//!
//! Bits are numbered once for the whole project: **bit 0 is the most significant bit** of the
//! 64-bit fingerprint, bit 63 the least. A permutation `p` maps a fingerprint `x` to the key
//! `y` whose bit `i` is bit `p[i]` of `x`. Table designs move a chosen group of bit-blocks to the
//! top, so a permutation is a handful of contiguous runs; [`Permutation::apply`] works run by run
//! rather than bit by bit, and runs that move by the same distance at once: one rotation and
//! one mask each, so that a whole permutation costs a few instructions (it is applied to every
//! query once per table).

use crate::error::{Error, Result};

/// A contiguous run: output bits `out..out+len` are input bits `inp..inp+len`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Run {
    out: u8,
    inp: u8,
    len: u8,
}

/// A permutation of the 64 bit positions.
///
/// ```
/// use simdex::Permutation;
/// # fn main() -> simdex::Result<()> {
/// // Bring source bits 8..16 to the top; the rest follow in order.
/// let p = Permutation::with_top(&[8, 9, 10, 11, 12, 13, 14, 15])?;
/// let x = 0x00ff_0000_0000_0000u64;
/// assert_eq!(p.apply(x), 0xff00_0000_0000_0000);
/// assert_eq!(p.inverse().apply(p.apply(x)), x);
/// // A permutation keeps Hamming distances.
/// assert_eq!((p.apply(x) ^ p.apply(x ^ 5)).count_ones(), 2);
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Permutation {
    src: [u8; 64],
    runs: Vec<Run>,
    /// The runs grouped by how far they move: `(rotate left by, output bits)` per distance.
    moves: Vec<(u32, u64)>,
}

impl Permutation {
    /// The identity.
    pub fn identity() -> Permutation {
        let mut src = [0u8; 64];
        for (i, s) in src.iter_mut().enumerate() {
            *s = i as u8;
        }
        Permutation::new(src).expect("identity is a permutation")
    }

    /// The permutation whose output bit `i` is input bit `src[i]`; an error unless every
    /// position 0..64 appears exactly once.
    pub fn new(src: [u8; 64]) -> Result<Permutation> {
        let mut seen = 0u64;
        for (i, &s) in src.iter().enumerate() {
            if s >= 64 || seen & (1 << s) != 0 {
                return Err(Error::InvalidArgument(format!(
                    "not a permutation of 0..64: entry {i} is {s} (out of range or repeated)"
                )));
            }
            seen |= 1 << s;
        }
        let mut runs: Vec<Run> = Vec::new();
        for (i, &s) in src.iter().enumerate() {
            match runs.last_mut() {
                Some(r) if r.inp + r.len == s => r.len += 1,
                _ => runs.push(Run {
                    out: i as u8,
                    inp: s,
                    len: 1,
                }),
            }
        }
        let mut moves: Vec<(u32, u64)> = Vec::new();
        for r in &runs {
            // Input bit `inp` (from the top) is output bit `out`: a rotation by inp - out.
            let rot = (r.inp as u32 + 64 - r.out as u32) % 64;
            let below = |n: u32| u64::MAX.checked_shr(n).unwrap_or(0);
            let mask = below(r.out as u32) & !below((r.out + r.len) as u32);
            match moves.iter_mut().find(|m| m.0 == rot) {
                Some(m) => m.1 |= mask,
                None => moves.push((rot, mask)),
            }
        }
        Ok(Permutation { src, runs, moves })
    }

    /// The permutation that puts the listed input bits on top, in the order given, followed by the
    /// remaining bits in ascending order.
    pub fn with_top(top: &[u8]) -> Result<Permutation> {
        let mut src = [0u8; 64];
        let mut used = 0u64;
        for (i, &t) in top.iter().enumerate() {
            if i >= 64 || t >= 64 || used & (1 << t) != 0 {
                return Err(Error::InvalidArgument(format!(
                    "bad top bit list: entry {i} is {t} (out of range or repeated)"
                )));
            }
            used |= 1 << t;
            src[i] = t;
        }
        let mut i = top.len();
        for b in 0..64u8 {
            if used & (1 << b) == 0 {
                src[i] = b;
                i += 1;
            }
        }
        Permutation::new(src)
    }

    /// `src[i]`: the input bit that becomes output bit `i`.
    pub fn as_array(&self) -> &[u8; 64] {
        &self.src
    }

    /// True for the identity.
    pub fn is_identity(&self) -> bool {
        self.runs.len() == 1
    }

    /// Permute `x`.
    #[inline]
    pub fn apply(&self, x: u64) -> u64 {
        self.moves
            .iter()
            .fold(0, |y, &(rot, bits)| y | (x.rotate_left(rot) & bits))
    }

    /// The inverse permutation.
    pub fn inverse(&self) -> Permutation {
        let mut inv = [0u8; 64];
        for (i, &s) in self.src.iter().enumerate() {
            inv[s as usize] = i as u8;
        }
        Permutation::new(inv).expect("inverse of a permutation is a permutation")
    }
}

impl Default for Permutation {
    fn default() -> Self {
        Permutation::identity()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn slow_apply(p: &Permutation, x: u64) -> u64 {
        let mut y = 0;
        for (i, &s) in p.as_array().iter().enumerate() {
            if x & (1 << (63 - s)) != 0 {
                y |= 1 << (63 - i);
            }
        }
        y
    }

    #[test]
    fn apply_matches_bit_by_bit_and_inverts() {
        let perms = [
            Permutation::identity(),
            Permutation::with_top(&[63]).unwrap(),
            Permutation::with_top(&(16..32).chain(48..64).collect::<Vec<u8>>()).unwrap(),
            Permutation::new(core::array::from_fn(|i| 63 - i as u8)).unwrap(),
            Permutation::new(core::array::from_fn(|i| ((i * 37) % 64) as u8)).unwrap(),
        ];
        let mut x = 0x0123_4567_89AB_CDEFu64;
        for p in &perms {
            for _ in 0..200 {
                x = x.wrapping_mul(6364136223846793005).wrapping_add(1);
                assert_eq!(p.apply(x), slow_apply(p, x));
                assert_eq!(p.inverse().apply(p.apply(x)), x);
            }
        }
    }

    /// Every table permutation of every candidate design applies as bit by bit does.
    #[test]
    fn design_permutations_apply_bit_by_bit() {
        let mut x = 7u64;
        for k in [1, 3, 5, 7] {
            for d in crate::Design::candidates(k, 64) {
                for t in d.tables() {
                    let p = &t.permutation;
                    for _ in 0..50 {
                        x = x
                            .wrapping_mul(6364136223846793005)
                            .wrapping_add(1442695040888963407);
                        assert_eq!(p.apply(x), slow_apply(p, x), "{} k = {k}", d.name());
                    }
                }
            }
        }
    }

    #[test]
    fn rejects_non_permutations() {
        let mut a = *Permutation::identity().as_array();
        a[5] = 4;
        assert!(Permutation::new(a).is_err());
        a[5] = 64;
        assert!(Permutation::new(a).is_err());
        assert!(Permutation::with_top(&[1, 1]).is_err());
    }
}
