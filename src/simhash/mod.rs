//! Documents to fingerprints: Charikar's simhash as the paper uses it, specified exactly in
//! `format-spec/simhash.md` so that any implementation reproduces the same 64 bits.
//!
//! ```text
//! text ─► NFKC, lowercase ─► UAX #29 words (bigrams for Han, kana, Thai, ...) ─► tokens
//!      ─► features: shingles of n consecutive tokens, joined by one space
//!      ─► weight: occurrences (× an optional per-feature weight, e.g. IDF)
//!      ─► xxh3-64(feature, seed) ─► per bit: +w if the bit is 1, −w if 0 ─► bit = (sum > 0)
//! ```
//!
//! Similar documents share most features, so most per-bit sums keep their sign and the
//! fingerprints differ in few bits; unrelated documents differ in about 32.

pub mod eval;
pub mod html;
pub mod idf;
pub mod tokens;

use std::collections::HashMap;

use crate::error::{Error, Result};
pub use idf::IdfTable;

/// Seed of the feature hash: xxh3-64 with this seed (the bytes of "simdex\0\x01", big-endian).
pub const FEATURE_SEED: u64 = 0x7369_6d64_6578_0001;

/// Default shingle size, chosen by the evaluation in BENCHMARKS.md.
pub const DEFAULT_SHINGLE: usize = 2;

/// The 64-bit simhash of weighted feature hashes: bit i (bit 0 = most significant) is 1 when the
/// sum over features of (+weight if the feature's bit i is 1, −weight if 0) is **strictly
/// positive**; a sum of exactly 0 (a tie, or no features at all) gives 0. So the empty document's
/// fingerprint is 0.
///
/// The low-level entry point: bring your own features and weights.
pub fn simhash_weighted(features: impl IntoIterator<Item = (u64, u64)>) -> u64 {
    let mut sums = [0i128; 64];
    for (h, w) in features {
        let w = i128::from(w);
        for (i, s) in sums.iter_mut().enumerate() {
            if (h >> (63 - i)) & 1 == 1 {
                *s += w;
            } else {
                *s -= w;
            }
        }
    }
    sums.iter().enumerate().fold(
        0u64,
        |fp, (i, &s)| if s > 0 { fp | (1 << (63 - i)) } else { fp },
    )
}

/// The feature hash: xxh3-64 of the feature's UTF-8 bytes with [`FEATURE_SEED`].
pub fn feature_hash(feature: &str) -> u64 {
    xxhash_rust::xxh3::xxh3_64_with_seed(feature.as_bytes(), FEATURE_SEED)
}

/// How a [`Simhasher`] turns text into fingerprints.
#[derive(Debug, Clone)]
pub struct SimhashOptions {
    /// Features are shingles of this many consecutive tokens (1 = single words).
    pub shingle: usize,
    /// Per-feature weights multiplied into the occurrence counts (e.g. IDF); `None` = counts only.
    pub weights: Option<std::sync::Arc<IdfTable>>,
}

impl Default for SimhashOptions {
    fn default() -> Self {
        SimhashOptions {
            shingle: DEFAULT_SHINGLE,
            weights: None,
        }
    }
}

/// Text (or HTML) to fingerprint, with fixed options. Cheap to clone, `Send + Sync`.
#[derive(Debug, Clone, Default)]
pub struct Simhasher {
    opts: SimhashOptions,
}

impl Simhasher {
    /// A hasher with these options; an error if the shingle size is 0 or above 16.
    pub fn new(opts: SimhashOptions) -> Result<Simhasher> {
        if !(1..=16).contains(&opts.shingle) {
            return Err(Error::InvalidArgument(format!(
                "shingle size {} is not in 1..=16",
                opts.shingle
            )));
        }
        Ok(Simhasher { opts })
    }

    /// The options.
    pub fn options(&self) -> &SimhashOptions {
        &self.opts
    }

    /// The document's features (hashes) with their occurrence counts, in first-seen order.
    pub fn features(&self, text: &str) -> Vec<(u64, u64)> {
        let toks = tokens::tokens(text);
        let n = self.opts.shingle;
        let mut counts: HashMap<u64, u64> = HashMap::new();
        let mut order = Vec::new();
        let mut add = |f: &str| {
            let h = feature_hash(f);
            let c = counts.entry(h).or_insert(0);
            if *c == 0 {
                order.push(h);
            }
            *c += 1;
        };
        if toks.len() < n {
            if !toks.is_empty() {
                add(&toks.join(" "));
            }
        } else {
            for w in toks.windows(n) {
                add(&w.join(" "));
            }
        }
        order.into_iter().map(|h| (h, counts[&h])).collect()
    }

    /// The fingerprint of plain text.
    pub fn hash_text(&self, text: &str) -> u64 {
        let feats = self.features(text);
        match &self.opts.weights {
            None => simhash_weighted(feats),
            Some(t) => simhash_weighted(feats.into_iter().map(|(h, c)| (h, c * t.weight(h)))),
        }
    }

    /// The fingerprint of an HTML page's visible text ([`html::visible_text`]).
    pub fn hash_html(&self, html: &str) -> u64 {
        self.hash_text(&html::visible_text(html))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tie_and_empty_give_zero_bits() {
        assert_eq!(simhash_weighted([]), 0);
        // Two features with opposite bits and equal weight tie everywhere.
        assert_eq!(simhash_weighted([(0xF0F0, 3), (!0xF0F0, 3)]), 0);
        assert_eq!(simhash_weighted([(0xF0F0, 3), (!0xF0F0, 2)]), 0xF0F0);
        assert_eq!(simhash_weighted([(u64::MAX, 1)]), u64::MAX);
        assert_eq!(Simhasher::default().hash_text(""), 0);
        assert_eq!(Simhasher::default().hash_text(" ... "), 0);
    }

    #[test]
    fn shingles_and_short_documents() {
        let h = Simhasher::new(SimhashOptions {
            shingle: 3,
            weights: None,
        })
        .unwrap();
        assert_eq!(
            h.features("a b").len(),
            1,
            "fewer tokens than n: one feature"
        );
        assert_eq!(h.features("a b c d"), {
            let f = |s: &str| (feature_hash(s), 1);
            vec![f("a b c"), f("b c d")]
        });
        assert_eq!(h.features("x x x x x"), vec![(feature_hash("x x x"), 3)]);
        assert!(
            Simhasher::new(SimhashOptions {
                shingle: 0,
                weights: None
            })
            .is_err()
        );
    }
}
