//! Deterministic sample fingerprints for demos, tests and benchmarks: uniformly random ones plus
//! planted near-duplicates at chosen Hamming distances. The same seed gives the same output on
//! every platform and release (the generator is splitmix64, specified by its code below).

use crate::error::{Error, Result};

/// splitmix64 (Steele, Lea, Flood 2014): advance `state` and return the next output.
#[inline]
pub fn splitmix64(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
    mix64(*state)
}

/// splitmix64's output function (defined with the digests that depend on it).
pub use crate::checksum::mix64;

/// `n` outputs of splitmix64 from `seed`.
pub fn random(n: usize, seed: u64) -> Vec<u64> {
    let mut s = seed;
    (0..n).map(|_| splitmix64(&mut s)).collect()
}

/// `x` with exactly `d` distinct bits flipped (`d <= 64`), positions drawn from `state`.
pub fn flip_bits(x: u64, d: u32, state: &mut u64) -> u64 {
    assert!(d <= 64, "cannot flip {d} of 64 bits");
    let mut m = 0u64;
    while m.count_ones() < d {
        m |= 1 << (splitmix64(state) % 64);
    }
    x ^ m
}

/// `n` random fingerprints, then for each of the first `planted` of them one copy at each of
/// `distances` (in that order): `n + planted * distances.len()` fingerprints in all.
pub fn with_planted(n: u64, planted: u64, distances: &[u32], seed: u64) -> Result<Vec<u64>> {
    if let Some(d) = distances.iter().find(|&&d| d > 64) {
        return Err(Error::InvalidArgument(format!("distance {d} exceeds 64")));
    }
    if planted > n {
        return Err(Error::InvalidArgument(format!(
            "{planted} planted fingerprints exceed the {n} generated"
        )));
    }
    let mut v = random(n as usize, seed);
    let mut t = seed ^ 0xD1B5_4A32_D192_ED03;
    for i in 0..planted as usize {
        for &d in distances {
            v.push(flip_bits(v[i], d, &mut t));
        }
    }
    Ok(v)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_outputs_and_planted_distances() {
        // splitmix64's published first output for seed 0.
        assert_eq!(random(1, 0), vec![0xE220_A839_7B1D_CDAF]);
        let v = with_planted(100, 10, &[0, 3, 64], 5).unwrap();
        assert_eq!(v.len(), 130);
        for i in 0..10 {
            for (j, d) in [0, 3, 64].into_iter().enumerate() {
                assert_eq!((v[i] ^ v[100 + 3 * i + j]).count_ones(), d);
            }
        }
        assert!(with_planted(5, 6, &[1], 0).is_err());
        assert!(with_planted(5, 1, &[65], 0).is_err());
    }
}
