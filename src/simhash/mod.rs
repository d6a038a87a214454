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
#[cfg(feature = "html")]
pub mod html;
pub mod idf;
#[cfg(feature = "jsonl")]
pub mod jsonl;
internal_mod!(tokens);

use std::collections::HashMap;

use crate::error::{Error, Result};
#[allow(unused_imports)] // the `internals` feature's users (tests, benches) take these
pub use idf::{DfCounter, IDF_SAMPLE_DOCS, IdfSample, IdfTable};

/// Seed of the feature hash: xxh3-64 with this seed (the bytes of "simdex\0\x01", big-endian).
pub const FEATURE_SEED: u64 = 0x7369_6d64_6578_0001;

/// Default shingle size, chosen by the evaluation in docs/log/benchmarks.md.
pub const DEFAULT_SHINGLE: usize = 2;

/// The 64-bit simhash of weighted feature hashes: bit i (bit 0 = most significant) is 1 when the
/// sum over features of (+weight if the feature's bit i is 1, −weight if 0) is **strictly
/// positive**; a sum of exactly 0 (a tie, or no features at all) gives 0. So the empty document's
/// fingerprint is 0.
///
/// The low-level entry point: bring your own features and weights.
pub fn simhash_weighted(features: impl IntoIterator<Item = (u64, u64)>) -> u64 {
    // Branch-free i64 sums while the total weight cannot overflow them (bits are random, so a
    // branch per bit would be mispredicted half the time); i128 beyond that.
    let mut sums = [0i64; 64];
    let mut total: u64 = 0;
    let mut wide: Option<[i128; 64]> = None;
    for (h, w) in features {
        if let Some(ws) = wide.as_mut() {
            for (i, s) in ws.iter_mut().enumerate() {
                let bit = ((h >> (63 - i)) & 1) as i128;
                *s += (2 * bit - 1) * i128::from(w);
            }
            continue;
        }
        match total.checked_add(w).filter(|&t| t < 1 << 62) {
            Some(t) => {
                total = t;
                let w = w as i64;
                for (i, s) in sums.iter_mut().enumerate() {
                    let bit = ((h >> (63 - i)) & 1) as i64;
                    *s += (2 * bit - 1) * w;
                }
            }
            None => {
                let mut ws = [0i128; 64];
                for (i, s) in ws.iter_mut().enumerate() {
                    let bit = ((h >> (63 - i)) & 1) as i128;
                    *s = i128::from(sums[i]) + (2 * bit - 1) * i128::from(w);
                }
                wide = Some(ws);
            }
        }
    }
    let positive = |i: usize| match &wide {
        Some(ws) => ws[i] > 0,
        None => sums[i] > 0,
    };
    (0..64).fold(0u64, |fp, i| {
        if positive(i) {
            fp | (1 << (63 - i))
        } else {
            fp
        }
    })
}

/// [`simhash_weighted`] of a slice: the common case (total weight below 2^31) counts, per bit,
/// the weight of the features that have it set, a byte of the hash at a time through a table
/// of lane masks (eight u32 lanes: vector instructions), and sets bit i when twice that exceeds
/// the total (sum = set − unset = 2·set − total > 0). The same result, several times faster
/// than a signed sum per bit; larger weights take [`simhash_weighted`]'s path.
pub fn simhash_slice(features: &[(u64, u64)]) -> u64 {
    let total = features
        .iter()
        .try_fold(0u64, |t, &(_, w)| t.checked_add(w).filter(|&t| t < 1 << 31));
    let Some(total) = total else {
        return simhash_weighted(features.iter().copied());
    };
    let mut set = [0u32; 64];
    for &(h, w) in features {
        let w = w as u32;
        for (j, lanes) in set.chunks_exact_mut(8).enumerate() {
            // Byte j of the hash from the top: bits 8j..8j+8 (bit 0 = most significant).
            let byte = (h >> (56 - 8 * j)) as u8;
            let masks = &BYTE_MASKS[byte as usize];
            for (s, &m) in lanes.iter_mut().zip(masks) {
                *s += m & w;
            }
        }
    }
    set.iter().enumerate().fold(0u64, |fp, (i, &s)| {
        if 2 * s as u64 > total {
            fp | (1 << (63 - i))
        } else {
            fp
        }
    })
}

/// For each byte value, eight lanes: all ones where the byte's bit (most significant first) is
/// set.
static BYTE_MASKS: [[u32; 8]; 256] = {
    let mut t = [[0u32; 8]; 256];
    let mut b = 0;
    while b < 256 {
        let mut l = 0;
        while l < 8 {
            if (b >> (7 - l)) & 1 == 1 {
                t[b][l] = u32::MAX;
            }
            l += 1;
        }
        b += 1;
    }
    t
};

/// The feature hash: xxh3-64 of the feature's UTF-8 bytes with [`FEATURE_SEED`].
pub fn feature_hash(feature: &str) -> u64 {
    xxhash_rust::xxh3::xxh3_64_with_seed(feature.as_bytes(), FEATURE_SEED)
}

/// The features of `text` with shingle size `n` (≥ 1): the hashes of its word n-shingles (one
/// feature of all its words if it has fewer than n) with their occurrence counts, in first-seen
/// order. Steps 3 and 4 of `format-spec/simhash.md`.
pub fn shingle_features(text: &str, n: usize) -> Vec<(u64, u64)> {
    with_tokens(text, |toks, counts| features_of(toks, counts, n))
}

/// [`shingle_features`] with shingle size `n`, and the distinct hashes of the text's
/// `m`-shingles (ascending), from one tokenizing: what a fingerprint and verification's set of
/// the same text need.
pub(crate) fn features_and_set(text: &str, n: usize, m: usize) -> (Vec<(u64, u64)>, Vec<u64>) {
    with_tokens(text, |toks, counts| {
        let feats = features_of(toks, counts, n);
        let mut set: Vec<u64> = if m == n.max(1) {
            feats.iter().map(|&(h, _)| h).collect()
        } else {
            // Not counted: a set needs no counts, and the count table was most of the work.
            all_shingles(toks, m)
        };
        set.sort_unstable();
        set.dedup();
        set.shrink_to_fit();
        (feats, set)
    })
}

/// [`shingle_features`] with shingle size `n`, calling `shingle` with the hash of each of the
/// text's `m`-shingles in text order, repeats included (for a sketch, which needs no counts and
/// no order), from one tokenizing.
pub(crate) fn features_and_shingles(
    text: &str,
    n: usize,
    m: usize,
    shingle: impl FnMut(u64),
) -> Vec<(u64, u64)> {
    with_tokens(text, |toks, counts| {
        let feats = features_of(toks, counts, n);
        each_shingle(toks, m, shingle);
        feats
    })
}

/// The hash of each of `text`'s word n-shingles, in text order, repeats included: the keys
/// of [`shingle_features`] without their counts.
pub(crate) fn text_shingles(text: &str, n: usize) -> Vec<u64> {
    with_tokens(text, |toks, _| all_shingles(toks, n))
}

/// The hash of each n-shingle of tokenized text, in order, repeats included.
fn all_shingles(toks: &tokens::Tokenized, n: usize) -> Vec<u64> {
    let mut all = Vec::with_capacity(toks.len());
    each_shingle(toks, n, |h| all.push(h));
    all
}

/// Call `f` with the hash of each n-shingle of tokenized text, in order (one shingle of every
/// token when there are fewer than n, none for no tokens).
fn each_shingle(toks: &tokens::Tokenized, n: usize, mut f: impl FnMut(u64)) {
    let n = n.max(1);
    let m = toks.len();
    if m < n {
        if m > 0 {
            f(feature_hash(toks.joined(0, m)));
        }
    } else {
        for i in 0..=m - n {
            f(feature_hash(toks.joined(i, i + n)));
        }
    }
}

thread_local! {
    // A thread's tokenizing buffers and count table, reused: no allocation per token or per
    // shingle (measured: allocation was a third of hashing's time).
    static BUFS: std::cell::RefCell<(tokens::Tokenized, HashMap<u64, u64, BuildIdentity>)> =
        std::cell::RefCell::default();
}

/// `f` of `text`'s tokens and the thread's count table.
fn with_tokens<R>(
    text: &str,
    f: impl FnOnce(&tokens::Tokenized, &mut HashMap<u64, u64, BuildIdentity>) -> R,
) -> R {
    BUFS.with_borrow_mut(|(toks, counts)| {
        toks.tokenize(text);
        let r = f(toks, counts);
        // A huge text's buffers are not kept for the thread's next, typical one.
        if toks.capacity_bytes() > KEEP_BYTES {
            *toks = tokens::Tokenized::default();
        }
        r
    })
}

/// Bytes of tokenizing buffers a thread keeps between texts.
const KEEP_BYTES: usize = 16 << 20;

/// Shingles beyond which features are counted by sorting rather than in the hash table: a
/// sorted vector takes 16 bytes a shingle, the table (with its growth) about five times that.
const SORT_SHINGLES: usize = 1 << 16;

/// [`features_of`] for a large text, in 16 bytes per shingle: the (hash, position) of every
/// shingle sorted, each hash's run counted, the runs put back in order of their first position.
/// The same features in the same order.
fn features_sorted(toks: &tokens::Tokenized, n: usize) -> Vec<(u64, u64)> {
    let mut all: Vec<(u64, u32)> = Vec::with_capacity(toks.len());
    let mut at = 0u32;
    each_shingle(toks, n, |h| {
        all.push((h, at));
        at += 1;
    });
    all.sort_unstable();
    // (first position, count, hash) of each distinct hash: the first of a run is its first.
    let mut runs: Vec<(u32, u32, u64)> = Vec::new();
    for run in all.chunk_by(|a, b| a.0 == b.0) {
        runs.push((run[0].1, run.len() as u32, run[0].0));
    }
    drop(all);
    runs.sort_unstable();
    runs.into_iter()
        .map(|(_, c, h)| (h, u64::from(c)))
        .collect()
}

/// The n-shingle features (hash, count) of tokenized text, in first-seen order.
fn features_of(
    toks: &tokens::Tokenized,
    counts: &mut HashMap<u64, u64, BuildIdentity>,
    n: usize,
) -> Vec<(u64, u64)> {
    if toks.len() > SORT_SHINGLES && u32::try_from(toks.len()).is_ok() {
        return features_sorted(toks, n);
    }
    features_counted(toks, counts, n)
}

/// [`features_of`] by counting in a hash table (fast while the table stays in cache).
fn features_counted(
    toks: &tokens::Tokenized,
    counts: &mut HashMap<u64, u64, BuildIdentity>,
    n: usize,
) -> Vec<(u64, u64)> {
    // Keys are already xxh3 hashes: no need to hash them again.
    counts.clear();
    let mut order = Vec::with_capacity(toks.len());
    each_shingle(toks, n, |h| {
        let c = counts.entry(h).or_insert(0);
        if *c == 0 {
            order.push(h);
        }
        *c += 1;
    });
    let out = order.into_iter().map(|h| (h, counts[&h])).collect();
    if counts.capacity() > SORT_SHINGLES {
        *counts = HashMap::default();
    }
    out
}

/// A `Hasher` that passes a `u64` key through: for maps keyed by feature hashes.
#[derive(Default, Clone, Copy)]
pub(crate) struct Identity(u64);

impl std::hash::Hasher for Identity {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0 << 8) | u64::from(b);
        }
    }
    fn write_u64(&mut self, v: u64) {
        self.0 = v;
    }
}

pub(crate) type BuildIdentity = std::hash::BuildHasherDefault<Identity>;

/// How a [`Simhasher`] turns text into fingerprints.
#[derive(Debug, Clone)]
#[non_exhaustive]
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

impl SimhashOptions {
    /// Default shingle size, chosen by the evaluation in docs/log/benchmarks.md.
    pub const DEFAULT_SHINGLE: usize = crate::simhash::DEFAULT_SHINGLE;

    /// Features are shingles of `shingle` consecutive tokens.
    pub fn with_shingle(mut self, shingle: usize) -> Self {
        self.shingle = shingle;
        self
    }

    /// Per-feature weights (e.g. IDF learned with the same shingle size); `None` = counts only.
    pub fn with_weights(mut self, weights: Option<std::sync::Arc<IdfTable>>) -> Self {
        self.weights = weights;
        self
    }
}

/// Text (or HTML) to fingerprint, with fixed options. Cheap to clone, `Send + Sync`.
///
/// ```
/// use simdex::{SimhashOptions, Simhasher};
/// # fn main() -> simdex::Result<()> {
/// let h = Simhasher::new(SimhashOptions::default())?; // word 2-shingles, count weights
/// let a = h.hash_text("The quick brown fox jumps over the lazy dog.");
/// let b = h.hash_text("the QUICK brown fox -- jumps over the lazy dog");
/// assert_eq!(a, b); // case and punctuation do not matter
/// assert_eq!(h.hash_text(""), 0);
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, Default)]
pub struct Simhasher {
    opts: SimhashOptions,
}

impl Simhasher {
    /// The visible text of an HTML document (or fragment), words separated as a browser would.
    /// Pages nested deeper than `MAX_DEPTH` elements are reduced by `strip_tags` instead (in
    /// linear time).
    #[cfg(feature = "html")]
    pub fn visible_text(html: &str) -> String {
        html::visible_text(html)
    }

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
        shingle_features(text, self.opts.shingle)
    }

    /// The fingerprint of plain text.
    pub fn hash_text(&self, text: &str) -> u64 {
        self.try_hash_text(text).unwrap_or(0)
    }

    /// The fingerprint of plain text, or `None` for a text without any feature (empty, or
    /// punctuation only): its fingerprint 0 says nothing about similarity, and such texts
    /// must not pair with each other as near-duplicates.
    pub fn try_hash_text(&self, text: &str) -> Option<u64> {
        self.try_hash_features(self.features(text))
    }

    /// The fingerprint of a text's [`Self::features`] (weighted as the options say), or `None`
    /// when there are none: what [`Self::try_hash_text`] computes once it has them.
    pub fn try_hash_features(&self, mut feats: Vec<(u64, u64)>) -> Option<u64> {
        if feats.is_empty() {
            return None;
        }
        if let Some(t) = &self.opts.weights {
            for f in &mut feats {
                f.1 = f.1.saturating_mul(t.weight(f.0));
            }
        }
        Some(simhash_slice(&feats))
    }

    /// The fingerprint of an HTML page's visible text ([`Simhasher::visible_text`]). Needs the
    /// `html` feature.
    #[cfg(feature = "html")]
    pub fn hash_html(&self, html: &str) -> u64 {
        self.hash_text(&html::visible_text(html))
    }
}

#[cfg(test)]
mod tests {
    /// Large texts' features (counted by sorting) are the table's, in the same order: repeats,
    /// shingle sizes 1 to 3, a text beyond the sorting threshold and its fingerprint.
    #[test]
    fn sorted_features_are_the_tables() {
        let mut st = 9;
        let text: String = (0..3000)
            .map(|_| format!("w{} ", crate::sample::splitmix64(&mut st) % 300))
            .collect();
        let mut toks = super::tokens::Tokenized::default();
        toks.tokenize(&text);
        for n in 1..=3 {
            let mut counts = Default::default();
            let table = super::features_counted(&toks, &mut counts, n);
            assert!(table.iter().any(|f| f.1 > 1), "repeats");
            assert_eq!(super::features_sorted(&toks, n), table, "n = {n}");
        }
        let big = text.repeat(40);
        let h = super::Simhasher::new(super::SimhashOptions {
            shingle: 2,
            ..Default::default()
        })
        .unwrap();
        let mut toks = super::tokens::Tokenized::default();
        toks.tokenize(&big);
        assert!(toks.len() > super::SORT_SHINGLES);
        let mut counts = Default::default();
        let table = super::features_counted(&toks, &mut counts, 2);
        assert_eq!(super::shingle_features(&big, 2), table);
        assert_eq!(h.hash_text(&big), super::simhash_slice(&table));
    }

    /// The table path and the general one agree: random hashes, weights small and huge, ties.
    #[test]
    fn simhash_slice_is_simhash_weighted() {
        let mut st = 3;
        for n in [0usize, 1, 2, 3, 7, 64, 200, 1000] {
            for scale in [1u64, 1000, 1 << 20, 1 << 40, u64::MAX / 4] {
                let f: Vec<(u64, u64)> = (0..n)
                    .map(|_| {
                        let h = crate::sample::splitmix64(&mut st);
                        (h, 1 + crate::sample::splitmix64(&mut st) % scale)
                    })
                    .collect();
                assert_eq!(
                    super::simhash_slice(&f),
                    super::simhash_weighted(f.iter().copied()),
                    "n = {n}, scale = {scale}"
                );
            }
        }
        // Ties: a feature and its complement at equal weight give 0 everywhere.
        let f = [(0x0123_4567_89ab_cdef, 5), (!0x0123_4567_89ab_cdef, 5)];
        assert_eq!(super::simhash_slice(&f), 0);
        assert_eq!(super::simhash_slice(&[(0xdead_beef, 1)]), 0xdead_beef);
    }

    use super::*;

    #[test]
    fn tie_and_empty_give_zero_bits() {
        assert_eq!(simhash_weighted([]), 0);
        // Two features with opposite bits and equal weight tie everywhere.
        assert_eq!(simhash_weighted([(0xF0F0, 3), (!0xF0F0, 3)]), 0);
        assert_eq!(simhash_weighted([(0xF0F0, 3), (!0xF0F0, 2)]), 0xF0F0);
        assert_eq!(simhash_weighted([(u64::MAX, 1)]), u64::MAX);
        // Weights too large for i64 sums take the wide path and still add up exactly.
        let big = u64::MAX / 2;
        assert_eq!(
            simhash_weighted([(0xF0F0, big), (!0xF0F0, big), (0xFF, 1)]),
            0xFF
        );
        assert_eq!(
            simhash_weighted([(0xF0F0, u64::MAX), (!0xF0F0, u64::MAX - 1)]),
            0xF0F0
        );
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
