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
//!
//! **What a corpus's table is learned from** ([`IdfSample`]): at most [`IDF_SAMPLE_DOCS`]
//! documents, those whose texts have the smallest [`IdfSample::digest`]s (every copy of a text is in
//! or out together). What IDF is for — discounting what many documents share (navigation,
//! boilerplate) — shows in any sample of a few thousand documents, while counting every
//! shingle of a large corpus costs a pass of tokenizing and a table that grows with it
//! (docs/log/benchmarks.md). The rule depends on the texts alone, not on their order or on how
//! they are
//! split, so `simdex dedup`, `simdex.dedup` and the Spark job learn the same table; a corpus
//! of at most that many distinct texts is learned whole. Specified in `format-spec/simhash.md`.

use std::collections::{BTreeMap, HashMap};
use std::fmt::Write as _;
use std::hash::{BuildHasher, Hasher};

use crate::error::{Error, Result};

/// Feature weights.
///
/// ```
/// use std::sync::Arc;
/// use simdex::{IdfTable, SimhashOptions, Simhasher};
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
    weights: HashMap<u64, u32, Mixed>,
    default: u64,
}

/// Hashes feature hashes for the weight table and the document-frequency counter: one multiply
/// of the key with a per-process random seed. Feature hashes are already uniform (xxh3), so
/// SipHash was most of a lookup's cost; the seed keeps a table read from a crafted file (or
/// crafted documents) from piling keys into one bucket chain.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Mixed(u64);

impl Default for Mixed {
    fn default() -> Self {
        use std::sync::OnceLock;
        static SEED: OnceLock<u64> = OnceLock::new();
        Mixed(
            *SEED.get_or_init(|| std::collections::hash_map::RandomState::new().hash_one(0u64) | 1),
        )
    }
}

impl BuildHasher for Mixed {
    type Hasher = MixedHasher;
    fn build_hasher(&self) -> MixedHasher {
        MixedHasher(self.0, 0)
    }
}

/// See [`Mixed`].
#[derive(Debug)]
struct MixedHasher(u64, u64);

impl Hasher for MixedHasher {
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.1 = (self.1 ^ b as u64).wrapping_mul(0x100_0000_01b3);
        }
    }
    fn write_u64(&mut self, x: u64) {
        self.1 = x;
    }
    fn finish(&self) -> u64 {
        let x = (self.1 ^ self.0).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        x ^ (x >> 29)
    }
}

/// The most documents an IDF table is learned from by default (see the module docs).
pub const IDF_SAMPLE_DOCS: usize = 20_000;

/// The sample an IDF table is learned from: the documents whose
/// [`digest`](IdfSample::digest)s are the `size` smallest distinct ones, every copy counted. Fed a document at a time in any order,
/// and [`merge`](Self::merge)d across threads or partitions, it holds at most `size` feature
/// lists and gives the same table whatever the order; a caller tokenizes only the documents
/// it [`wants`](Self::wants).
#[derive(Debug, Clone)]
pub struct IdfSample {
    size: usize,
    /// Documents offered, in the sample or not.
    seen: u64,
    /// digest → (copies, the document's distinct features, ascending).
    docs: BTreeMap<u64, (u64, Vec<u64>)>,
}

impl IdfSample {
    /// The digest that decides whether a document is in a corpus's IDF sample: xxh3-64 (seed 0) of
    /// its text's UTF-8 bytes as given (for HTML, the page, not its visible text).
    pub fn digest(text: &str) -> u64 {
        xxhash_rust::xxh3::xxh3_64(text.as_bytes())
    }

    /// The bound of the IDF sample of a corpus whose texts have these digests: the largest of the
    /// `size` smallest distinct digests (`None` when there are at most `size`: every document is
    /// in). For learners that can see all digests before tokenizing (texts in memory, a
    /// distributed corpus): they then count exactly the documents at or below it.
    pub fn bound_of(digests: &[u64], size: usize) -> Option<u64> {
        let size = size.max(1);
        let mut digests = digests.to_vec();
        digests.sort_unstable();
        digests.dedup();
        digests
            .get(size - 1)
            .copied()
            .filter(|_| digests.len() > size)
    }

    /// The most documents an IDF table is learned from by default (see the module docs).
    pub const DOCS: usize = crate::simhash::IDF_SAMPLE_DOCS;

    /// An empty sample of at most `size` distinct texts (at least 1).
    pub fn new(size: usize) -> IdfSample {
        IdfSample {
            size: size.max(1),
            seen: 0,
            docs: BTreeMap::new(),
        }
    }

    /// Whether a document with this digest would be kept now (else it need not be tokenized).
    #[inline]
    pub fn wants(&self, digest: u64) -> bool {
        self.docs.len() < self.size
            || self
                .docs
                .last_key_value()
                .is_some_and(|(&max, _)| digest <= max)
    }

    /// Count a document with this digest; `features` (its feature hashes, repeats allowed) is
    /// called only if the sample keeps a text it does not hold yet.
    pub fn add(&mut self, digest: u64, features: impl FnOnce() -> Vec<u64>) {
        self.seen += 1;
        if let Some(e) = self.docs.get_mut(&digest) {
            e.0 += 1;
            return;
        }
        if !self.wants(digest) {
            return;
        }
        let mut f = features();
        f.sort_unstable();
        f.dedup();
        self.docs.insert(digest, (1, f));
        if self.docs.len() > self.size {
            self.docs.pop_last();
        }
    }

    /// Count a document the caller knows cannot enter (its digest is above another sample's
    /// [`bound`](Self::bound) that this one will be merged with).
    pub fn skip(&mut self) {
        self.seen += 1;
    }

    /// Add another sample's documents (the same size).
    pub fn merge(&mut self, other: IdfSample) {
        self.seen += other.seen;
        for (d, (copies, f)) in other.docs {
            match self.docs.get_mut(&d) {
                Some(e) => e.0 += copies,
                None => {
                    self.docs.insert(d, (copies, f));
                }
            }
        }
        while self.docs.len() > self.size {
            self.docs.pop_last();
        }
    }

    /// Documents offered, in the sample or not: the corpus's size.
    pub fn seen(&self) -> u64 {
        self.seen
    }

    /// Documents in the sample (copies counted).
    pub fn docs(&self) -> u64 {
        self.docs.values().map(|e| e.0).sum()
    }

    /// The largest digest in the sample once it is full (`None` while fewer than `size`
    /// distinct texts were seen: then every document is in). A distributed learner finds this
    /// bound first and then counts, on every partition, only the documents at or below it.
    pub fn bound(&self) -> Option<u64> {
        (self.docs.len() >= self.size)
            .then(|| self.docs.last_key_value().map(|(&d, _)| d))
            .flatten()
    }

    /// The weights learned from the sample for the whole corpus, for features of `shingle`
    /// words (see [`DfCounter::finish_for`]).
    pub fn finish(self, shingle: usize) -> IdfTable {
        let seen = self.seen;
        let mut c = DfCounter::default();
        for (_, (copies, f)) in self.docs {
            c.add_copies(&f, copies);
        }
        c.finish_for(shingle, seen)
    }
}

fn weight(docs: u64, df: u64) -> u64 {
    let idf = ((1.0 + docs as f64) / (1.0 + df as f64)).ln() + 1.0;
    ((100.0 * idf).round() as u64).max(1)
}

/// Document frequencies gathered a document (or a chunk of documents) at a time, for an
/// [`IdfTable`] learned in one streaming pass; counters of separate chunks [`merge`](Self::merge).
#[derive(Debug, Clone, Default)]
pub struct DfCounter {
    df: HashMap<u64, u64, Mixed>,
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

    /// Count, on all cores, the documents `0..n` for which `features` gives their features
    /// (`None`: the document is not counted). One counter per thread: rayon's default splits
    /// made dozens, and merging their maps (hundreds of thousands of features each) took most
    /// of the time (store creation from 12 288 documents: 0.42 → 0.26 s).
    pub fn count_parallel(
        n: usize,
        features: impl Fn(usize) -> Option<Vec<u64>> + Sync,
    ) -> DfCounter {
        use rayon::prelude::*;
        let per_thread = n.div_ceil(rayon::current_num_threads()).max(1);
        (0..n)
            .into_par_iter()
            .with_min_len(per_thread)
            .fold(DfCounter::default, |mut df, i| {
                if let Some(f) = features(i) {
                    df.add(&f);
                }
                df
            })
            .reduce(DfCounter::default, |mut a, b| {
                a.merge(b);
                a
            })
    }

    /// Count `copies` documents with these distinct features (ascending, no repeats).
    pub fn add_copies(&mut self, distinct: &[u64], copies: u64) {
        self.docs += copies;
        for &h in distinct {
            *self.df.entry(h).or_insert(0) += copies;
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
            df: HashMap::default(),
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
        self.finish_for(shingle, n)
    }

    /// The weights for a corpus of `corpus` documents of which the counted ones are a uniform
    /// sample: a feature in `df` of the `n` counted documents is taken to be in
    /// `round(df × corpus / n)` of the corpus's (features in at most one counted document, and
    /// unseen ones, weigh as a feature in one). So a sample keeps the full corpus's contrast
    /// between rare and common features; with `corpus = n` this is [`finish`](Self::finish).
    pub fn finish_for(self, shingle: usize, corpus: u64) -> IdfTable {
        let n = self.docs;
        let corpus = corpus.max(n);
        let scale = corpus as f64 / n.max(1) as f64;
        let weights = self
            .df
            .into_iter()
            .filter(|&(_, c)| c > 1)
            .map(|(h, c)| {
                let df = if corpus == n {
                    c
                } else {
                    (c as f64 * scale).round() as u64
                };
                (h, weight(corpus, df) as u32)
            })
            .collect();
        IdfTable {
            shingle,
            docs: corpus,
            weights,
            default: weight(corpus, 1),
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
        self.weights.get(&h).map_or(self.default, |&w| w as u64)
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
        let mut w: Vec<(u64, u32)> = self.weights.iter().map(|(&h, &w)| (h, w)).collect();
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
        let mut weights = HashMap::default();
        for (i, l) in lines.enumerate() {
            if l.trim().is_empty() {
                continue;
            }
            let (h, w) = l
                .split_once('\t')
                .ok_or_else(|| bad(i + 2, format!("expected HASH<TAB>WEIGHT, found {l:?}")))?;
            let h = crate::fingerprint::parse_hex(h).map_err(|m| bad(i + 2, m))?;
            let w: u32 = w
                .trim()
                .parse()
                .map_err(|_| bad(i + 2, format!("{w:?} is not a weight (0 to 2^32 - 1)")))?;
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

    /// Documents as feature lists: `n` documents, each 30 unique features, the first `share`
    /// of them also carrying 10 template features.
    fn corpus(n: u64) -> Vec<(u64, Vec<u64>)> {
        (0..n)
            .map(|i| {
                let mut f: Vec<u64> = (0..30).map(|j| (i << 8 | j) + 1_000_000).collect();
                if i % 10 < 3 {
                    f.extend(1..=10);
                }
                (crate::checksum::mix64(i), f)
            })
            .collect()
    }

    #[test]
    fn a_sample_of_a_small_corpus_is_the_corpus() {
        let docs = corpus(300);
        let mut s = IdfSample::new(1000);
        for (d, f) in &docs {
            s.add(*d, || f.clone());
        }
        let whole = IdfTable::build(2, docs.iter().map(|(_, f)| &f[..]));
        assert_eq!(s.finish(2), whole);
    }

    #[test]
    fn samples_ignore_order_and_splits_and_keep_the_corpus_contrast() {
        let docs = corpus(5000);
        let learn = |order: &[usize], parts: usize| {
            let mut total = IdfSample::new(400);
            for chunk in order.chunks(order.len().div_ceil(parts)) {
                let mut s = IdfSample::new(400);
                for &i in chunk {
                    let (d, f) = &docs[i];
                    s.add(*d, || f.clone());
                }
                total.merge(s);
            }
            total
        };
        let forward: Vec<usize> = (0..docs.len()).collect();
        let mut backward = forward.clone();
        backward.reverse();
        let a = learn(&forward, 1);
        assert_eq!((a.seen(), a.docs(), a.bound().is_some()), (5000, 400, true));
        let a = a.finish(2);
        assert_eq!(a, learn(&backward, 7).finish(2));
        // Copies of a text count together: in or out, never half.
        let mut dup = IdfSample::new(400);
        for (d, f) in docs.iter().chain(&docs) {
            dup.add(*d, || f.clone());
        }
        assert_eq!(dup.docs(), 800);
        // The template (30% of documents) weighs what the whole corpus gives it, within a
        // sample's error; unique features weigh the corpus's default.
        let whole = IdfTable::build(2, docs.iter().map(|(_, f)| &f[..]));
        let (ws, wf) = (a.weight(1) as f64, whole.weight(1) as f64);
        assert!(
            (ws - wf).abs() / wf < 0.1,
            "template: sample {ws}, whole {wf}"
        );
        assert_eq!(a.weight(u64::MAX), whole.weight(u64::MAX));
        assert_eq!(a.docs(), 5000);
    }
}
