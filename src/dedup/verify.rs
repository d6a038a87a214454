//! Verification: whether a candidate pair of documents is truly a near-duplicate, decided
//! exactly by the Jaccard similarity of their word 3-shingle sets (the rule of `simdex dedup
//! --verify`, `simdex.dedup(verify=)` and the Spark job's verify stage); and the shingle sets and
//! Jaccard merges that calibration's ground truth uses too.

use rayon::prelude::*;

/// The distinct hashes of a text's word n-shingles, ascending (the ground truth's sets), with
/// the fingerprint's tokens ([`Tokens::Unicode`]).
pub fn shingle_set(text: &str, n: usize) -> Vec<u64> {
    shingle_set_with(text, n, Tokens::Unicode)
}

/// How verification cuts a text into words (format-spec/simhash.md, "Verification").
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum Tokens {
    /// The fingerprint's tokens: NFKC, lowercase, Unicode words (character bigrams in scripts
    /// without spaces). The default.
    #[default]
    Unicode,
    /// The text split at Unicode white space, each token as written: what most truth sets and
    /// MinHash tools use.
    Whitespace,
}

impl Tokens {
    /// The word-shingle size of the ground truth and of verification.
    pub const TRUTH_SHINGLE: usize = crate::dedup::verify::TRUTH_SHINGLE;

    /// The distinct hashes (the fingerprint's feature hash) of a text's word `n`-shingles cut
    /// by these tokens, joined by single spaces (one shingle of all tokens when there are fewer
    /// than `n`), ascending: the sets verification compares at `n` = [`Self::TRUTH_SHINGLE`].
    pub fn shingle_set(self, text: &str, n: usize) -> Vec<u64> {
        shingle_set_with(text, n, self)
    }

    /// A text's fingerprint by `hasher` and its verification set
    /// ([`shingle_set`](Self::shingle_set) at [`TRUTH_SHINGLE`](Self::TRUTH_SHINGLE)), from
    /// one tokenizing where they share their tokens (unicode tokens).
    pub fn hash_and_set(
        self,
        hasher: &crate::simhash::Simhasher,
        text: &str,
    ) -> (Option<u64>, Vec<u64>) {
        hash_and_set(hasher, text, self)
    }
}

impl std::str::FromStr for Tokens {
    type Err = crate::Error;
    /// `unicode` or `whitespace`.
    fn from_str(s: &str) -> crate::Result<Tokens> {
        match s {
            "unicode" => Ok(Tokens::Unicode),
            "whitespace" => Ok(Tokens::Whitespace),
            _ => Err(crate::Error::InvalidArgument(format!(
                "verification tokens {s:?} are not unicode or whitespace"
            ))),
        }
    }
}

/// [`shingle_set`] with the tokens `tokens`: the hashes (the fingerprint's feature hash) of the
/// n-shingles of the tokens joined by single spaces (one shingle of all tokens when there are
/// fewer than n), distinct, ascending.
pub fn shingle_set_with(text: &str, n: usize, tokens: Tokens) -> Vec<u64> {
    let mut v: Vec<u64> = match tokens {
        // Every shingle, sorted and deduplicated below: counting them first, as a fingerprint's
        // features are, took most of the time.
        Tokens::Unicode => crate::simhash::text_shingles(text, n),
        Tokens::Whitespace => {
            let words: Vec<&str> = text.split_whitespace().collect();
            let n = n.max(1);
            if words.is_empty() {
                Vec::new()
            } else if words.len() < n {
                vec![crate::simhash::feature_hash(&words.join(" "))]
            } else {
                words
                    .windows(n)
                    .map(|w| crate::simhash::feature_hash(&w.join(" ")))
                    .collect()
            }
        }
    };
    v.sort_unstable();
    v.dedup();
    // Exactly its size: a set may be held for a while (verification's budget counts 8 bytes a
    // hash), and the vector above held every shingle, repeats included.
    v.shrink_to_fit();
    v
}

/// A text's fingerprint by `hasher`
/// ([`Simhasher::try_hash_text`](crate::simhash::Simhasher::try_hash_text))
/// and its verification set ([`shingle_set_with`] at [`TRUTH_SHINGLE`](Tokens::TRUTH_SHINGLE)),
/// from one tokenizing
/// when they share their tokens (unicode tokens).
pub fn hash_and_set(
    hasher: &crate::simhash::Simhasher,
    text: &str,
    tokens: Tokens,
) -> (Option<u64>, Vec<u64>) {
    if tokens != Tokens::Unicode {
        return (
            hasher.try_hash_text(text),
            shingle_set_with(text, TRUTH_SHINGLE, tokens),
        );
    }
    let (feats, set) =
        crate::simhash::features_and_set(text, hasher.options().shingle, TRUTH_SHINGLE);
    (hasher.try_hash_features(feats), set)
}

/// Jaccard similarity of two ascending distinct sets.
pub fn jaccard(a: &[u64], b: &[u64]) -> f64 {
    let (mut i, mut j, mut inter) = (0, 0, 0usize);
    while i < a.len() && j < b.len() {
        match a[i].cmp(&b[j]) {
            std::cmp::Ordering::Less => i += 1,
            std::cmp::Ordering::Greater => j += 1,
            std::cmp::Ordering::Equal => {
                inter += 1;
                i += 1;
                j += 1;
            }
        }
    }
    let union = a.len() + b.len() - inter;
    if union == 0 {
        1.0
    } else {
        inter as f64 / union as f64
    }
}

/// The word-shingle size of the ground truth and of verification.
pub const TRUTH_SHINGLE: usize = 3;

/// Verification: of the candidate pairs `(i, j, distance)`, those whose sets have Jaccard ≥ `t`,
/// as `(i, j, distance, jaccard)`, in candidate order; on all cores. Pairs with an empty set are
/// dropped (a document without shingles is nobody's near-duplicate). The cost is one merge of
/// two sorted sets per candidate: linear in the candidates, nothing quadratic.
///
/// ```
/// use simdex::dedup::verify::{shingle_set, verify};
/// let sets: Vec<Vec<u64>> = ["a b c d e f g", "a b c d e f g h", "x y z w v"]
///     .iter()
///     .map(|t| shingle_set(t, 3))
///     .collect();
/// let kept = verify(&sets, &[(0, 1, 4), (0, 2, 6)], 0.8);
/// assert_eq!(kept.len(), 1);
/// assert_eq!((kept[0].0, kept[0].1), (0, 1)); // 5 of 6 shingles shared: 0.83
/// ```
pub fn verify(
    sets: &[Vec<u64>],
    candidates: &[(u32, u32, u32)],
    t: f64,
) -> Vec<(u32, u32, u32, f64)> {
    candidates
        .par_iter()
        .with_min_len(256)
        .filter_map(|&(i, j, d)| {
            verify_pair(&sets[i as usize], &sets[j as usize], t).map(|jac| (i, j, d, jac))
        })
        .collect()
}

/// The rule of verified dedup for one pair of shingle sets: their Jaccard if it is at least
/// `t`, else `None` (and `None` if either set is empty).
pub fn verify_pair(a: &[u64], b: &[u64], t: f64) -> Option<f64> {
    if a.is_empty() || b.is_empty() {
        return None;
    }
    // Size filter: |A ∩ B| <= min, |A ∪ B| >= max, so J <= min / max.
    let (lo, hi) = (a.len().min(b.len()), a.len().max(b.len()));
    if (lo as f64) < t * hi as f64 {
        return None;
    }
    jaccard_at_least(a, b, t)
}

/// The default candidate distance of verified dedup (`simdex dedup --verify`,
/// `simdex.dedup(verify=)`,
/// `simdex.spark.dedup(verify=)`): near-duplicates at Jaccard 0.9 of template-heavy pages lie up
/// to 10-12 bits apart (measured; docs/log/benchmarks.md).
pub const DEFAULT_CANDIDATE_K: u32 = 11;
/// The largest candidate distance of verified dedup.
pub const MAX_CANDIDATE_K: u32 = 16;
/// The Jaccard similarity of two ascending distinct sets if it is at least `t`, else `None`,
/// stopping the merge as soon as too many elements were found on one side only: J ≥ t needs
/// |A ∩ B| ≥ t (|A| + |B|) / (1 + t), so at most |A| + |B| − 2 ⌈that⌉ elements may be
/// unmatched. Pairs far below `t` (template siblings among candidates) cost a few percent of a
/// full merge.
pub fn jaccard_at_least(a: &[u64], b: &[u64], t: f64) -> Option<f64> {
    let total = a.len() + b.len();
    let need = ((t * total as f64) / (1.0 + t) - 1e-9).ceil().max(0.0) as usize;
    let budget = total.checked_sub(2 * need)?;
    let (mut i, mut j, mut inter, mut miss) = (0, 0, 0usize, 0usize);
    while i < a.len() && j < b.len() {
        match a[i].cmp(&b[j]) {
            std::cmp::Ordering::Less => {
                i += 1;
                miss += 1;
            }
            std::cmp::Ordering::Greater => {
                j += 1;
                miss += 1;
            }
            std::cmp::Ordering::Equal => {
                inter += 1;
                i += 1;
                j += 1;
                continue;
            }
        }
        if miss > budget {
            return None;
        }
    }
    let union = total - inter;
    let jac = if union == 0 {
        1.0
    } else {
        inter as f64 / union as f64
    };
    (jac >= t).then_some(jac)
}

#[cfg(test)]
mod token_tests {
    use super::*;

    /// A fingerprint and a set from one tokenizing are the fingerprint and the set computed
    /// apart, for every shingle size, both token rules and texts shorter than a shingle.
    #[test]
    fn hash_and_set_equals_both_apart() {
        use crate::simhash::{SimhashOptions, Simhasher};
        let texts = [
            "",
            "...",
            "one",
            "one two",
            "The cat, the hat. The cat again and the hat again; the cat.",
            "Grüße aus Köln: 東京の天気は晴れ, and ﬁne words ﬁne words",
        ];
        for shingle in 1..=4 {
            let h = Simhasher::new(SimhashOptions::default().with_shingle(shingle)).unwrap();
            for text in texts {
                for tokens in [Tokens::Unicode, Tokens::Whitespace] {
                    assert_eq!(
                        hash_and_set(&h, text, tokens),
                        (
                            h.try_hash_text(text),
                            shingle_set_with(text, TRUTH_SHINGLE, tokens)
                        ),
                        "{text:?}, shingle {shingle}, {tokens:?}"
                    );
                }
            }
        }
    }

    /// The vectors of format-spec/simhash.md, "Verification".
    #[test]
    fn whitespace_and_unicode_tokens_follow_the_spec() {
        let (a, b) = ("The cat, the hat.", "the cat the hat");
        let j = |t| jaccard(&shingle_set_with(a, 3, t), &shingle_set_with(b, 3, t));
        assert_eq!(j(Tokens::Unicode), 1.0);
        // Whitespace tokens keep case and punctuation: `The cat, the` and `cat, the hat.` share
        // nothing with `the cat the` and `cat the hat`.
        assert_eq!(j(Tokens::Whitespace), 0.0);
        assert_eq!(
            shingle_set_with("a  b\tc\nd", 3, Tokens::Whitespace).len(),
            2
        );
        assert_eq!(
            shingle_set_with("only two", 3, Tokens::Whitespace),
            vec![crate::simhash::feature_hash("only two")]
        );
        assert!(shingle_set_with(" \n", 3, Tokens::Whitespace).is_empty());
        // A set takes the 8 bytes a hash that verification's budget counts, no more.
        for t in [Tokens::Unicode, Tokens::Whitespace] {
            let s = shingle_set_with("a b c d e f g h i j k l m n o p", 3, t);
            assert_eq!((s.len(), s.capacity()), (14, 14));
        }
        assert_eq!(
            shingle_set("x y z", 3),
            shingle_set_with("x y z", 3, Tokens::Unicode)
        );
        assert!("bogus".parse::<Tokens>().is_err());
        assert_eq!("whitespace".parse::<Tokens>().unwrap(), Tokens::Whitespace);
    }
}
