//! One sorted permuted table on disk: header, blocks, footer (last keys), trailer.
//!
//! [`builder`] writes tables, [`reader`] opens them; `format` holds the fixed-size structures
//! both share. Every walk over a table's blocks lives here too: `cursor` (one range, a key per
//! step: the [`Range`] iterator, a probe, batch mode's skip-scan), `multiscan` (a query's
//! probes over a set of tables, decoded together) and `lanes` (the same, four probes per AVX2
//! register). Callers hand over key ranges and get keys back; none reads a block. The byte layout
//! is specified in `format-spec/table.md`.

pub mod builder;
internal_mod!(format);
internal_mod!(block);
pub(crate) mod cursor;
mod directory;
mod encoder;
#[cfg(target_arch = "x86_64")]
pub(crate) mod lanes;
pub(crate) mod multiscan;
pub(crate) mod parallel;
mod planned;
pub mod reader;
mod segment;
mod verify;

#[allow(unused_imports)] // the `internals` feature's users (tests, benches) take these
pub use builder::{
    DEFAULT_BLOCK_SIZE, Histogram, TableOptions, TableSummary, TableWriter, build_bytes,
    build_file, build_to,
};
pub use cursor::Range;
#[allow(unused_imports)] // the `internals` feature's users (tests, benches) take these
pub use format::{MAX_SEGMENTED_BLOCK_SIZE, check_block_size, check_segment_keys};
pub use reader::{Table, TableStats, VerifyReport};

/// The information bound for `n` distinct 64-bit keys: log2 C(2^64, n) / n bits per key, the
/// fewest bits per key that any encoding of an arbitrary n-key set can average.
///
/// Computed as 64 − log2(n!)/n − (n − 1)/(2 · 2^64 · ln 2) (the last term, from
/// log2(2^64 − i) ≈ 64 − i/(2^64 ln 2), is below 10^-9 bits for n up to 10^10), with log2(n!)
/// summed exactly for small n and by Stirling's series above.
pub fn information_bound(n: u64) -> f64 {
    if n == 0 {
        return 0.0;
    }
    let nf = n as f64;
    let ln_fact = if n < 64 {
        (2..=n).map(|i| (i as f64).ln()).sum::<f64>()
    } else {
        let x = nf + 1.0;
        (x - 0.5) * x.ln() - x + 0.5 * (2.0 * std::f64::consts::PI).ln() + 1.0 / (12.0 * x)
            - 1.0 / (360.0 * x * x * x)
    };
    let ln2 = std::f64::consts::LN_2;
    64.0 - ln_fact / ln2 / nf - (nf - 1.0) / (2.0 * 18_446_744_073_709_551_616.0 * ln2)
}

#[cfg(test)]
mod tests {
    #[test]
    fn information_bound_matches_known_values() {
        // ≈ 64 − log2 n + log2 e for large n: 45.51 at 1M, 42.19 at 10M, 32.55 at 8e9.
        for (n, want) in [
            (1_000_000u64, 45.511),
            (10_000_000, 42.189),
            (8_000_000_000, 32.545),
        ] {
            let got = super::information_bound(n);
            assert!((got - want).abs() < 0.001, "n = {n}: {got}");
        }
        // One key: 64 bits. Two keys: log2(C(2^64,2))/2 = (128 - 1)/2 - tiny.
        assert!((super::information_bound(1) - 64.0).abs() < 1e-9);
        assert!((super::information_bound(2) - 63.5).abs() < 1e-9);
    }
}
