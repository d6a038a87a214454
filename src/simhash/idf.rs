//! Per-feature weights (inverse document frequency) learned from a corpus, for
//! [`super::SimhashOptions::weights`]: features common to many documents (boilerplate, licence
//! headers) count less than rare ones.
//!
//! Weight of a feature seen in `df` of `N` documents: `max(1, round(100 × (ln((1 + N) / (1 + df))
//! + 1)))` (smoothed IDF, scaled to integers so that fingerprints are exactly reproducible).
//! Features seen in at most one document are not stored; they get the weight of `df = 1`.
//!
//! Text format (`simdex idf --out FILE`): a header line `simdex-idf 1 shingle=N docs=N`, then
//! `FEATURE_HASH_HEX<TAB>WEIGHT` lines in ascending hash order.

use std::collections::HashMap;
use std::fmt::Write as _;

use crate::error::{Error, Result};

/// Feature weights.
///
/// ```
/// use std::sync::Arc;
/// use simdex::simhash::{IdfTable, SimhashOptions, Simhasher};
/// # fn main() -> simdex::Result<()> {
/// let docs = ["a shared header then text one", "a shared header then text two"];
/// let h = Simhasher::new(SimhashOptions::default())?;
/// let feats: Vec<Vec<u64>> =
///     docs.iter().map(|d| h.features(d).into_iter().map(|(f, _)| f).collect()).collect();
/// let idf = IdfTable::build(2, feats.iter().map(|v| &v[..]));
/// assert_eq!(IdfTable::decode(&idf.encode())?, idf); // the `simdex idf` text format
/// let opts = SimhashOptions::default().with_shingle(2).with_weights(Some(Arc::new(idf)));
/// let weighted = Simhasher::new(opts)?;
/// let _fp = weighted.hash_text(docs[0]);
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IdfTable {
    shingle: usize,
    docs: u64,
    weights: HashMap<u64, u64>,
    default: u64,
}

fn weight(docs: u64, df: u64) -> u64 {
    let idf = ((1.0 + docs as f64) / (1.0 + df as f64)).ln() + 1.0;
    ((100.0 * idf).round() as u64).max(1)
}

/// Document frequencies gathered a document (or a chunk of documents) at a time, for an
/// [`IdfTable`] learned in one streaming pass; counters of separate chunks [`merge`](Self::merge).
#[derive(Debug, Clone, Default)]
pub struct DfCounter {
    df: HashMap<u64, u64>,
    docs: u64,
}

impl DfCounter {
    /// Count one document's features (repeats within it count once).
    pub fn add(&mut self, features: &[u64]) {
        self.docs += 1;
        let mut seen: Vec<u64> = features.to_vec();
        seen.sort_unstable();
        seen.dedup();
        for h in seen {
            *self.df.entry(h).or_insert(0) += 1;
        }
    }

    /// Add another counter's documents.
    pub fn merge(&mut self, other: DfCounter) {
        self.docs += other.docs;
        for (h, c) in other.df {
            *self.df.entry(h).or_insert(0) += c;
        }
    }

    /// Documents counted.
    pub fn docs(&self) -> u64 {
        self.docs
    }

    /// A counter from counts gathered elsewhere (a distributed count): `docs` documents, and
    /// (feature hash, documents holding it) pairs, repeats summed.
    pub fn from_counts(docs: u64, counts: impl IntoIterator<Item = (u64, u64)>) -> DfCounter {
        let mut c = DfCounter {
            df: HashMap::new(),
            docs,
        };
        for (h, n) in counts {
            let e = c.df.entry(h).or_insert(0);
            *e = e.saturating_add(n);
        }
        c
    }

    /// (feature hash, documents holding it), ascending by hash: what to ship to a merge.
    pub fn into_sorted(self) -> Vec<(u64, u64)> {
        let mut v: Vec<(u64, u64)> = self.df.into_iter().collect();
        v.sort_unstable();
        v
    }

    /// The weights, for features of `shingle` words.
    pub fn finish(self, shingle: usize) -> IdfTable {
        let n = self.docs;
        let weights = self
            .df
            .into_iter()
            .filter(|&(_, c)| c > 1)
            .map(|(h, c)| (h, weight(n, c)))
            .collect();
        IdfTable {
            shingle,
            docs: n,
            weights,
            default: weight(n, 1),
        }
    }
}

impl IdfTable {
    /// Learn from documents' feature hashes (each document's distinct features).
    pub fn build<'a>(shingle: usize, docs: impl IntoIterator<Item = &'a [u64]>) -> IdfTable {
        let mut c = DfCounter::default();
        for d in docs {
            c.add(d);
        }
        c.finish(shingle)
    }

    /// The weight of feature hash `h`.
    pub fn weight(&self, h: u64) -> u64 {
        self.weights.get(&h).copied().unwrap_or(self.default)
    }

    /// The shingle size the table was learned with.
    pub fn shingle(&self) -> usize {
        self.shingle
    }

    /// Documents it was learned from.
    pub fn docs(&self) -> u64 {
        self.docs
    }

    /// Features stored (seen in more than one document).
    pub fn len(&self) -> usize {
        self.weights.len()
    }

    /// True if no feature is stored.
    pub fn is_empty(&self) -> bool {
        self.weights.is_empty()
    }

    /// Serialize as text.
    pub fn encode(&self) -> String {
        let mut s = format!("simdex-idf 1 shingle={} docs={}\n", self.shingle, self.docs);
        let mut w: Vec<(u64, u64)> = self.weights.iter().map(|(&h, &w)| (h, w)).collect();
        w.sort_unstable();
        for (h, w) in w {
            let _ = writeln!(s, "{h:016x}\t{w}");
        }
        s
    }

    /// Parse the text form; errors name the line.
    pub fn decode(text: &str) -> Result<IdfTable> {
        let bad = |line: usize, msg: String| Error::Parse {
            path: None,
            location: format!("line {line}"),
            message: msg,
        };
        let mut lines = text.lines();
        let head = lines.next().unwrap_or("");
        let f: Vec<&str> = head.split_whitespace().collect();
        let field = |i: usize, key: &str| {
            f.get(i)
                .and_then(|x| x.strip_prefix(key))
                .and_then(|v| v.parse::<u64>().ok())
        };
        let (Some("simdex-idf"), Some("1"), Some(shingle), Some(docs)) = (
            f.first().copied(),
            f.get(1).copied(),
            field(2, "shingle="),
            field(3, "docs="),
        ) else {
            return Err(bad(
                1,
                format!("expected \"simdex-idf 1 shingle=N docs=N\", found {head:?}"),
            ));
        };
        let mut weights = HashMap::new();
        for (i, l) in lines.enumerate() {
            if l.trim().is_empty() {
                continue;
            }
            let (h, w) = l
                .split_once('\t')
                .ok_or_else(|| bad(i + 2, format!("expected HASH<TAB>WEIGHT, found {l:?}")))?;
            let h = crate::fingerprint::parse_hex(h).map_err(|m| bad(i + 2, m))?;
            let w: u64 = w
                .trim()
                .parse()
                .map_err(|_| bad(i + 2, format!("{w:?} is not a weight")))?;
            weights.insert(h, w);
        }
        Ok(IdfTable {
            shingle: shingle as usize,
            docs,
            weights,
            default: weight(docs, 1),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn common_features_weigh_less_and_the_text_form_round_trips() {
        let docs: Vec<Vec<u64>> = vec![vec![1, 2, 3], vec![1, 2, 4], vec![1, 5, 5]];
        let t = IdfTable::build(2, docs.iter().map(|d| &d[..]));
        assert!(t.weight(1) < t.weight(2) && t.weight(2) < t.weight(3));
        assert_eq!(t.weight(3), t.weight(999), "df 1 and unseen weigh the same");
        assert_eq!(t.len(), 2);
        let again = IdfTable::decode(&t.encode()).unwrap();
        assert_eq!(again, t);
        assert!(IdfTable::decode("nope").is_err());
        let e =
            IdfTable::decode("simdex-idf 1 shingle=2 docs=3\n00000000000000zz\t5\n").unwrap_err();
        assert!(e.to_string().contains("line 2"), "{e}");
    }
}
