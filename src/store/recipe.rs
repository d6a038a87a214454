//! A document store's recipe: how its documents become fingerprints and sketches, fixed when
//! the store is created and kept in the store (`RECIPE`), so that every writer hashes alike.
//!
//! Fingerprints made with different shingle sizes, weights or HTML rules are incomparable: a
//! store filled by two services with different settings would answer silently wrong. So a
//! document store records its recipe, every document path hashes with it, and a request naming
//! a different one is refused ([`Recipe::check_request`]).
//!
//! **Weights are learned by the store** ([`Recipe::learn`]): IDF from the documents the store is
//! created with (the first [`LEARN_DOCS`] of them, or a sample the caller gives), then frozen.
//! Rule and measurements: format-spec/store.md ("Recipe") and docs/log/benchmarks.md.
//!
//! ```text
//! simdex-recipe 1
//! simhash 1
//! shingle 2
//! input text                       (or: input html 1)
//! sketch 512 2                     (bins, bits per bin; of word 3-shingles, Unicode words)
//! sets 3 0.9                       (version 2 only: word 3-shingle sets kept, for T >= 0.9)
//! order N h:f h:f ...              (version 2 only: N shingles (hex) and their frequencies)
//! weights idf                      (or: weights count)
//! simdex-idf 1 shingle=2 docs=N    (with idf: the table, as `simdex idf` writes it)
//! ...
//! crc32 XXXXXXXX
//! ```

use std::path::Path;
use std::sync::Arc;

use super::prefix::{MAX_ORDER, Order, Prefixer};
use crate::dedup::sketch::SketchShape;
use crate::dedup::verify::TRUTH_SHINGLE;
use crate::error::{Error, Result};
use crate::simhash::{DfCounter, IdfTable, SimhashOptions, Simhasher};

/// File name of a store's recipe.
pub const RECIPE_NAME: &str = "RECIPE";
/// Recipe format version (of a recipe without shingle sets).
pub const RECIPE_VERSION: u32 = 1;
/// Recipe format version of a recipe that keeps shingle sets (exact verification).
pub const RECIPE_VERSION_SETS: u32 = 2;
/// The simhash specification version recipes refer to (format-spec/simhash.md).
pub const SIMHASH_VERSION: u32 = 1;
/// The HTML rule version (format-spec/simhash.md, "HTML").
pub const HTML_RULES_VERSION: u32 = 1;
/// Documents the weights are learned from by default: the first this many a store is created
/// with (docs/log/benchmarks.md, "Weights learned by the store").
pub const LEARN_DOCS: usize = 10_000;
/// The fewest documents a store's IDF weights may be learned from: weights from a handful of
/// documents would be frozen into the store for good (a store refuses to be created with them;
/// use count weights for smaller starts).
pub const MIN_LEARN_DOCS: usize = 1000;

/// How a store's documents become fingerprints and sketches.
#[derive(Debug, Clone)]
pub struct Recipe {
    shingle: usize,
    html: bool,
    sketch: SketchShape,
    /// Shingle sets kept, for verification at thresholds of at least this.
    exact: Option<f64>,
    /// With sets: the global shingle order of their prefixes.
    order: Arc<Order>,
    weights: Option<Arc<IdfTable>>,
    hasher: Simhasher,
}

/// A thread's buffers for a document's shingles, its prefix and the prefix's frequent
/// shingles, reused from document to document.
#[derive(Default)]
struct Bufs {
    shingles: Vec<u64>,
    prefix: Vec<u64>,
    frequent: Vec<(u32, u64)>,
}

thread_local! {
    static BUFS: std::cell::RefCell<Bufs> = std::cell::RefCell::default();
}

/// Shingles of buffer a thread keeps between documents (8 MB).
const KEEP_SHINGLES: usize = 1 << 20;

/// What one document became.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hashed {
    /// Its fingerprint; `None` for a document without words (nobody's near-duplicate).
    pub fingerprint: Option<u64>,
    /// Its sketch of word 3-shingles.
    pub sketch: Arc<[u8]>,
    /// Its word 3-shingle set (ascending), where the recipe keeps sets.
    pub set: Option<Vec<u64>>,
    /// The set's prefix at the recipe's threshold: its first shingles in the recipe's order,
    /// in that order (`super::prefix`), computed here, with the set, on all cores.
    pub(crate) prefix: Option<super::prefix::PrefixBuf>,
}

/// Recipes are equal when they hash alike (the hasher is made from the other fields).
impl PartialEq for Recipe {
    fn eq(&self, other: &Self) -> bool {
        (
            self.shingle,
            self.html,
            self.sketch,
            self.exact,
            &self.order,
            &self.weights,
        ) == (
            other.shingle,
            other.html,
            other.sketch,
            other.exact,
            &other.order,
            &other.weights,
        )
    }
}
impl Eq for Recipe {}

impl Recipe {
    /// The fewest documents a store's IDF weights may be learned from: weights from a handful of
    /// documents would be frozen into the store for good (a store refuses to be created with them;
    /// use count weights for smaller starts).
    pub const MIN_LEARN_DOCS: usize = crate::store::MIN_LEARN_DOCS;

    /// Documents the weights are learned from by default: the first this many a store is created
    /// with (docs/log/benchmarks.md, "Weights learned by the store").
    pub const LEARN_DOCS: usize = crate::store::LEARN_DOCS;

    /// A recipe: `shingle`-word shingles, HTML or plain text, this sketch, these weights
    /// (`None`: counts). An error for a shingle size outside 1..=16, weights of another shingle
    /// size, or HTML in a build without the `html` feature.
    pub fn new(
        shingle: usize,
        html: bool,
        sketch: SketchShape,
        weights: Option<Arc<IdfTable>>,
    ) -> Result<Recipe> {
        if let Some(w) = &weights
            && w.shingle() != shingle
        {
            return Err(Error::InvalidArgument(format!(
                "IDF weights of {}-shingles for a recipe of {shingle}-shingles",
                w.shingle()
            )));
        }
        if html && !cfg!(feature = "html") {
            return Err(Error::InvalidArgument(
                "HTML documents need simdex built with the html feature".into(),
            ));
        }
        let hasher = Simhasher::new(
            SimhashOptions::default()
                .with_shingle(shingle)
                .with_weights(weights.clone()),
        )?;
        Ok(Recipe {
            shingle,
            html,
            sketch,
            exact: None,
            order: Arc::default(),
            weights,
            hasher,
        })
    }

    /// This recipe keeping every document's word 3-shingle set, so that verification at any
    /// threshold of at least `t` is exact (`None`: sketches only, whose similarity is an
    /// estimate). An error for `t` outside (0, 1].
    pub fn with_exact(mut self, t: Option<f64>) -> Result<Recipe> {
        if let Some(t) = t
            && !(t > 0.0 && t <= 1.0)
        {
            return Err(Error::InvalidArgument(format!(
                "an exact verification threshold of {t} (0 < T <= 1)"
            )));
        }
        self.exact = t;
        Ok(self)
    }

    /// The lowest threshold exact verification was kept for (`None`: sketches only).
    pub fn exact(&self) -> Option<f64> {
        self.exact
    }

    /// This recipe with the prefix order learned from `sample` (format-spec/store.md, "Exact
    /// verification"); without sets, itself.
    pub fn learn_order<'a>(mut self, sample: impl IntoIterator<Item = &'a str>) -> Recipe {
        if self.exact.is_none() {
            return self;
        }
        use rayon::prelude::*;
        let texts: Vec<&str> = sample.into_iter().collect();
        let sets: Vec<Vec<u64>> = texts
            .par_iter()
            .map(|t| {
                crate::dedup::verify::shingle_set_with(
                    &self.visible(t),
                    TRUTH_SHINGLE,
                    crate::dedup::verify::Tokens::Unicode,
                )
            })
            .collect();
        self.order = Arc::new(Order::learn(sets.iter().map(Vec::as_slice)));
        self
    }

    /// How documents are indexed for exact verification (`None`: sketches only).
    pub(crate) fn prefixer(&self) -> Option<Prefixer> {
        self.exact.map(|t0| Prefixer {
            order: Arc::clone(&self.order),
            t0,
        })
    }

    /// A recipe whose IDF weights are learned from `sample`, every text of it (by default a
    /// store is created with its first [`LEARN_DOCS`](crate::Recipe::LEARN_DOCS) documents); a
    /// feature counts once per
    /// text.
    pub fn learn<'a>(
        shingle: usize,
        html: bool,
        sketch: SketchShape,
        sample: impl IntoIterator<Item = &'a str>,
    ) -> Result<Recipe> {
        let plain = Recipe::new(shingle, html, sketch, None)?;
        let texts: Vec<&str> = sample.into_iter().collect();
        let df = DfCounter::count_parallel(texts.len(), |i| {
            let text = plain.visible(texts[i]);
            Some(
                plain
                    .hasher
                    .features(&text)
                    .into_iter()
                    .map(|(h, _)| h)
                    .collect(),
            )
        });
        Recipe::new(shingle, html, sketch, Some(Arc::new(df.finish(shingle))))
    }

    /// Shingle size of the fingerprints.
    pub fn shingle(&self) -> usize {
        self.shingle
    }

    /// True if documents are HTML (their visible text is hashed).
    pub fn html(&self) -> bool {
        self.html
    }

    /// The sketch shape.
    pub fn sketch_shape(&self) -> SketchShape {
        self.sketch
    }

    /// The IDF weights, if any.
    pub fn weights(&self) -> Option<&Arc<IdfTable>> {
        self.weights.as_ref()
    }

    fn visible<'t>(&self, text: &'t str) -> std::borrow::Cow<'t, str> {
        #[cfg(feature = "html")]
        if self.html {
            return crate::simhash::html::visible_text(text).into();
        }
        text.into()
    }

    internal_fn! {
        /// A document's fingerprint and sketch (of its word 3-shingle set, as
        /// [`crate::dedup::verify::shingle_set`] gives it), from one tokenizing.
        fn hash(&self, text: &str) -> Hashed {
            let text = self.visible(text);
            let mut feats = Vec::new();
            let keep = self.exact.is_some();
            // The set and its prefix are gathered in the thread's buffers and copied out in
            // one allocation each (at most): a document's blocks are often freed on the pool's
            // other thread, which then waits for this one's allocator lock, and growing them a
            // shingle at a time took that lock a dozen times a document.
            BUFS.with_borrow_mut(|b| {
                let Bufs { shingles: all, prefix: pre, frequent } = b;
                all.clear();
                let sketch = self.sketch.sketch_with(|bins| {
                    feats = crate::simhash::features_and_shingles(
                        &text,
                        self.shingle,
                        TRUTH_SHINGLE,
                        |h| {
                            bins.add(h);
                            if keep {
                                all.push(h);
                            }
                        },
                    );
                });
                let set = keep.then(|| {
                    all.sort_unstable();
                    all.dedup();
                    all.to_vec()
                });
                let prefix = set.as_deref().zip(self.exact).map(|(s, t0)| {
                    self.order.prefix_into(s, t0, pre, frequent);
                    super::prefix::PrefixBuf::new(pre)
                });
                // A huge text's buffer is not kept for the thread's next, typical one.
                if all.capacity() > KEEP_SHINGLES {
                    *all = Vec::new();
                    *frequent = Vec::new();
                }
                Hashed {
                    fingerprint: self.hasher.try_hash_features(feats),
                    sketch: sketch.into(),
                    set,
                    prefix,
                }
            })
        }
    }

    /// Refuse a request that names settings other than this recipe's (`None`: not named).
    pub fn check_request(&self, shingle: Option<usize>, html: Option<bool>) -> Result<()> {
        if let Some(s) = shingle.filter(|&s| s != self.shingle) {
            return Err(Error::InvalidArgument(format!(
                "the store's recipe hashes {}-word shingles; this request asks for {s} (a store's \
                 fingerprints are comparable only under one recipe)",
                self.shingle
            )));
        }
        if let Some(h) = html.filter(|&h| h != self.html) {
            let name = |h: bool| if h { "HTML" } else { "plain text" };
            return Err(Error::InvalidArgument(format!(
                "the store's recipe reads {}; this request asks for {}",
                name(self.html),
                name(h)
            )));
        }
        Ok(())
    }

    /// Serialize (sealed text).
    pub fn encode(&self) -> String {
        let version = match self.exact {
            Some(_) => RECIPE_VERSION_SETS,
            None => RECIPE_VERSION,
        };
        let mut s = format!(
            "simdex-recipe {version}\nsimhash {SIMHASH_VERSION}\nshingle {}\n",
            self.shingle
        );
        s += &if self.html {
            format!("input html {HTML_RULES_VERSION}\n")
        } else {
            "input text\n".to_string()
        };
        s += &format!("sketch {} {}\n", self.sketch.bins(), self.sketch.bits());
        if let Some(t) = self.exact {
            s += &format!("sets {TRUTH_SHINGLE} {t}\n");
            use std::fmt::Write;
            let entries = self.order.entries();
            // Written in place: a string formatted per entry was most of creating a store
            // (a million entries, 0.15 s).
            s.reserve(entries.len() * 26 + 16);
            let _ = write!(s, "order {}", entries.len());
            for (h, n) in entries {
                let _ = write!(s, " {h:016x}:{n}");
            }
            s += "\n";
        }
        match &self.weights {
            Some(w) => s += &format!("weights idf\n{}", w.encode()),
            None => s += "weights count\n",
        }
        crate::sealed::seal(s)
    }

    /// Parse and validate; errors say what was expected.
    pub fn decode(bytes: &[u8]) -> Result<Recipe> {
        let (body, crc_line) = crate::sealed::split_sealed(bytes, RECIPE_NAME)?;
        crate::sealed::check_seal(body, crc_line, RECIPE_NAME)?;
        let mut lines = body.split_inclusive('\n');
        let mut at = 0u64;
        let mut next = |expected: &str| -> Result<String> {
            let l = lines.next().unwrap_or("");
            at += l.len() as u64;
            l.strip_prefix(expected)
                .and_then(|v| v.strip_prefix(' '))
                .map(|v| v.trim_end_matches('\n').to_string())
                .ok_or_else(|| {
                    Error::corrupt(
                        RECIPE_NAME,
                        at,
                        format!("a {expected:?} line"),
                        l.trim_end(),
                    )
                })
        };
        let version = |what: &'static str, found: String, want: u32| -> Result<()> {
            if found == want.to_string() {
                return Ok(());
            }
            Err(Error::Unsupported {
                path: None,
                what,
                expected: want.to_string(),
                found: found.parse().unwrap_or(u64::MAX),
            })
        };
        let v = next("simdex-recipe")?;
        let with_sets = v == RECIPE_VERSION_SETS.to_string();
        if !with_sets {
            version("recipe version", v, RECIPE_VERSION)?;
        }
        version("simhash version", next("simhash")?, SIMHASH_VERSION)?;
        let number = |v: &str, what: &str| -> Result<u32> {
            v.parse()
                .map_err(|_| Error::corrupt(RECIPE_NAME, 0, format!("a number ({what})"), v))
        };
        let shingle = number(&next("shingle")?, "shingle")? as usize;
        let html = match next("input")?.as_str() {
            "text" => false,
            v => {
                let n = v.strip_prefix("html ").unwrap_or("");
                version("HTML rule version", n.to_string(), HTML_RULES_VERSION)?;
                true
            }
        };
        let sk = next("sketch")?;
        let (bins, bits) = sk
            .split_once(' ')
            .ok_or_else(|| Error::corrupt(RECIPE_NAME, 0, "sketch BINS BITS", sk.as_str()))?;
        let sketch = SketchShape::new(number(bins, "bins")?, number(bits, "bits")?)?;
        let exact = match with_sets {
            true => {
                let l = next("sets")?;
                let t = l
                    .strip_prefix(&format!("{TRUTH_SHINGLE} "))
                    .and_then(|t| t.parse::<f64>().ok())
                    .filter(|t| *t > 0.0 && *t <= 1.0)
                    .ok_or_else(|| {
                        Error::corrupt(RECIPE_NAME, 0, "sets 3 T with 0 < T <= 1", l.as_str())
                    })?;
                Some(t)
            }
            false => None,
        };
        let order = match with_sets {
            true => {
                let l = next("order")?;
                let mut words = l.split(' ');
                let n: usize = words
                    .next()
                    .and_then(|n| n.parse().ok())
                    .filter(|&n| n <= MAX_ORDER)
                    .ok_or_else(|| {
                        Error::corrupt(RECIPE_NAME, 0, format!("order N (N <= {MAX_ORDER})"), "")
                    })?;
                let entries: Vec<(u64, u32)> = words
                    .map(|w| {
                        w.split_once(':')
                            .and_then(|(h, c)| {
                                Some((u64::from_str_radix(h, 16).ok()?, c.parse::<u32>().ok()?))
                            })
                            .ok_or_else(|| {
                                Error::corrupt(RECIPE_NAME, 0, "an order entry hex:frequency", w)
                            })
                    })
                    .collect::<Result<_>>()?;
                if entries.len() != n {
                    return Err(Error::corrupt(
                        RECIPE_NAME,
                        0,
                        format!("{n} order entries"),
                        entries.len().to_string(),
                    ));
                }
                Order::from_entries(entries)
            }
            false => Order::default(),
        };
        let weights = match next("weights")?.as_str() {
            "count" => match lines.next() {
                None => None,
                Some(l) => {
                    return Err(Error::corrupt(
                        RECIPE_NAME,
                        at,
                        "nothing after \"weights count\"",
                        l.trim_end(),
                    ));
                }
            },
            "idf" => Some(Arc::new(IdfTable::decode(&lines.collect::<String>())?)),
            w => return Err(Error::corrupt(RECIPE_NAME, 0, "count or idf", w)),
        };
        // Settings no writer writes (shingle 0, weights of another shingle size) are damage.
        Recipe::new(shingle, html, sketch, weights)
            .and_then(|r| r.with_exact(exact))
            .map(|mut r| {
                r.order = Arc::new(order);
                r
            })
            .map_err(|e| match e {
                Error::InvalidArgument(m) => Error::corrupt(RECIPE_NAME, 0, "a valid recipe", m),
                e => e,
            })
    }

    /// Read `dir/RECIPE`; `None` if the store has none (a store of raw fingerprints).
    pub fn read(dir: &Path) -> Result<Option<Recipe>> {
        let p = dir.join(RECIPE_NAME);
        match std::fs::read(&p) {
            Ok(b) => Recipe::decode(&b).map(Some).map_err(|e| e.with_path(&p)),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(Error::io(p, "read", e)),
        }
    }

    /// Write `dir/RECIPE` (temp file, fsync, rename, fsync the directory).
    pub fn write(&self, dir: &Path) -> Result<()> {
        use std::io::Write;
        crate::atomic::write_file(&dir.join(RECIPE_NAME), |w| {
            w.write_all(self.encode().as_bytes())
                .map_err(|e| Error::io(None, "write RECIPE", e))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_and_refuses_damage_and_other_settings() {
        let docs = [
            "a shared header and one body",
            "a shared header and another body",
        ];
        let r = Recipe::learn(2, false, SketchShape::default(), docs).unwrap();
        assert_eq!(r.weights().unwrap().docs(), 2);
        let text = r.encode();
        assert_eq!(Recipe::decode(text.as_bytes()).unwrap(), r);
        let plain = Recipe::new(3, false, SketchShape::new(64, 8).unwrap(), None).unwrap();
        assert_eq!(Recipe::decode(plain.encode().as_bytes()).unwrap(), plain);
        // Any changed byte is caught by the seal.
        let mut bad = text.clone().into_bytes();
        bad[30] ^= 1;
        assert!(Recipe::decode(&bad).is_err());
        assert!(Recipe::decode(&text.as_bytes()[..text.len() - 1]).is_err());
        assert!(r.check_request(Some(2), Some(false)).is_ok());
        assert!(r.check_request(None, None).is_ok());
        let e = r.check_request(Some(3), None).unwrap_err().to_string();
        assert!(e.contains("2-word shingles"), "{e}");
        assert!(r.check_request(None, Some(true)).is_err());
        // The weights change the fingerprint; the sketch does not depend on them.
        let a = r.hash(docs[0]);
        let b = plain.hash(docs[0]);
        assert_eq!(a.sketch.len(), 128);
        assert!(a.fingerprint.is_some());
        assert_eq!(plain.hash("").fingerprint, None);
        assert_ne!(b.sketch.len(), a.sketch.len());
    }

    /// The sketch is that of the word 3-shingle set verification uses, for any text.
    #[test]
    fn sketches_are_of_the_verification_set() {
        let r = Recipe::new(2, false, SketchShape::default(), None).unwrap();
        for text in [
            "",
            "one",
            "two words",
            "a b c a b c a b c d",
            "東京都の天気は晴れです。明日も晴れるでしょう",
            "The Quick, brown fox -- jumps over the LAZY dog; the quick brown fox!",
        ] {
            let set = crate::dedup::verify::shingle_set(text, 3);
            assert_eq!(*r.hash(text).sketch, *r.sketch.sketch(&set), "{text:?}");
            let want = Simhasher::new(SimhashOptions::default())
                .unwrap()
                .try_hash_text(text);
            assert_eq!(r.hash(text).fingerprint, want, "{text:?}");
        }
    }
}
