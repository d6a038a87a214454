//! `simdex calibrate`: precision and recall of "distance <= k" against exact Jaccard.

use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use std::sync::Arc;

use rayon::prelude::*;

use simdex::{DfCounter, SimhashOptions, Simhasher};
use simdex::{Error, Result};

use crate::docs::*;

/// Arguments of `simdex calibrate`.
#[derive(clap::Args)]
pub struct CalibrateArgs {
    #[command(flatten)]
    pub docs: DocArgs,
    /// Shingle sizes to compare (1 = single words).
    #[arg(long, value_delimiter = ',', default_value = "1,2,3,4")]
    pub shingles: Vec<usize>,
    /// Ground truth: near-duplicates have word 3-shingle Jaccard at least this (0..=1).
    #[arg(long, default_value_t = 0.9, value_parser = parse_fraction)]
    pub threshold: f64,
    /// Labelled pairs instead of the Jaccard ground truth: lines `id_a<TAB>id_b<TAB>1|0`.
    #[arg(long)]
    pub pairs: Option<PathBuf>,
    /// Largest k in the table (0..=64). Beyond 7 the rows serve `dedup --verify`'s candidate
    /// distance (fingerprints alone answer k <= 7).
    #[arg(long, default_value_t = 12, value_parser = clap::value_parser!(u32).range(0..=64))]
    pub max_k: u32,
    /// Use at most this many documents (all pairs are compared: the cost grows with its square).
    #[arg(long, default_value_t = 30_000)]
    pub max_docs: usize,
    /// Compare both weightings (count, and IDF learned from the corpus itself) for each
    /// shingle size.
    #[arg(long)]
    pub with_idf: bool,
    /// Weights when not comparing both: auto (= idf, learned from the corpus), count or idf.
    #[arg(long, value_enum, default_value_t = Weights::Auto)]
    pub weights: Weights,
    /// Candidate recall the `--verify` advice aims for.
    #[arg(long, default_value_t = 0.95, value_parser = parse_fraction)]
    pub target_recall: f64,
    /// The table and the advice as one JSON object.
    #[arg(long)]
    pub json: bool,
}

/// A number in 0..=1.
fn parse_fraction(s: &str) -> std::result::Result<f64, String> {
    s.parse::<f64>()
        .ok()
        .filter(|x| (0.0..=1.0).contains(x))
        .ok_or_else(|| format!("{s:?} is not a number in 0..=1"))
}

/// A labelled pair: (document, document, near-duplicate?).
type Labelled = (u32, u32, bool);

fn pct(x: Option<f64>) -> String {
    x.map_or_else(|| "-".to_string(), |v| format!("{:.3}", v))
}

/// Run `calibrate`: precision and recall of "distance <= k" for each shingle size, as a
/// markdown table.
pub fn calibrate(a: CalibrateArgs) -> Result<()> {
    if !(a.threshold > 0.0 && a.threshold <= 1.0) {
        return Err(Error::InvalidArgument(format!(
            "threshold {} is not in (0, 1]",
            a.threshold
        )));
    }
    if a.shingles.iter().any(|&n| !(1..=16).contains(&n)) {
        return Err(Error::InvalidArgument(
            "shingle sizes must be in 1..=16".into(),
        ));
    }
    // Read the corpus once.
    let mut docs: Vec<Doc> = Vec::new();
    read_docs(&a.docs, |chunk| {
        let room = a.max_docs.saturating_sub(docs.len());
        docs.extend(chunk.into_iter().take(room));
        Ok(())
    })?;
    let sets: Vec<Vec<u64>> = docs.par_iter().map(|d| eval_set(&d.text)).collect();
    let skip: HashSet<u32> = (0..docs.len() as u32)
        .filter(|&i| sets[i as usize].is_empty())
        .collect();
    let (truth, universe): (HashSet<(u32, u32)>, Option<Vec<Labelled>>) = match &a.pairs {
        None => (
            simdex::raw::Row::similar_pairs(&sets, a.threshold)
                .into_iter()
                .collect(),
            None,
        ),
        Some(p) => {
            let by_id: HashMap<&str, u32> = docs
                .iter()
                .enumerate()
                .map(|(i, d)| (d.id.as_str(), i as u32))
                .collect();
            let text = std::fs::read_to_string(p).map_err(|e| Error::io(p.clone(), "read", e))?;
            let mut labelled = Vec::new();
            for (no, line) in text
                .lines()
                .enumerate()
                .filter(|(_, l)| !l.trim().is_empty())
            {
                let f: Vec<&str> = line.split('\t').collect();
                let bad = |m: String| Error::Parse {
                    path: Some(p.clone()),
                    location: format!("line {}", no + 1),
                    message: m,
                };
                let [x, y, l] = f[..] else {
                    return Err(bad(format!(
                        "expected id_a<TAB>id_b<TAB>1|0, found {line:?}"
                    )));
                };
                let look = |id: &str| {
                    by_id
                        .get(id)
                        .copied()
                        .ok_or_else(|| bad(format!("no document {id:?}")))
                };
                let (i, j) = (look(x)?, look(y)?);
                let label = match l.trim() {
                    "1" => true,
                    "0" => false,
                    o => return Err(bad(format!("label {o:?} is not 1 or 0"))),
                };
                labelled.push((i.min(j), i.max(j), label));
            }
            (
                labelled
                    .iter()
                    .filter(|p| p.2)
                    .map(|p| (p.0, p.1))
                    .collect(),
                Some(labelled),
            )
        }
    };
    let mut columns = Vec::new();
    let mut header = Vec::new();
    let variants: Vec<(usize, bool)> = a
        .shingles
        .iter()
        .flat_map(|&n| {
            let idf = if a.with_idf {
                vec![false, true]
            } else {
                vec![a.weights != Weights::Count]
            };
            idf.into_iter().map(move |w| (n, w))
        })
        .collect();
    for (n, with_idf) in variants {
        let weights = if let Some(file) = a.docs.idf_file(n)?.filter(|_| with_idf) {
            // `--idf FILE`: its weights, not the corpus's.
            Some(file)
        } else if with_idf {
            let plain =
                Simhasher::new(SimhashOptions::default().with_shingle(n).with_weights(None))?;
            // The corpus's IDF sample (format-spec/simhash.md), as `dedup` learns it.
            let digests: Vec<u64> = docs
                .par_iter()
                .map(|d| simdex::IdfSample::digest(&d.text))
                .collect();
            let bound = simdex::IdfSample::bound_of(&digests, simdex::IdfSample::DOCS);
            let counter = DfCounter::count_parallel(docs.len(), |i| {
                bound.is_none_or(|b| digests[i] <= b).then(|| {
                    let feats = plain.features(&docs[i].text);
                    feats.into_iter().map(|(f, _)| f).collect()
                })
            });
            Some(Arc::new(counter.finish_for(n, docs.len() as u64)))
        } else {
            None
        };
        let name = if n == 1 {
            "words".to_string()
        } else {
            format!("{n}-shingles")
        };
        header.push(if with_idf {
            format!("{name} + idf")
        } else {
            name
        });
        let h = Simhasher::new(
            SimhashOptions::default()
                .with_shingle(n)
                .with_weights(weights),
        )?;
        let fps: Vec<u64> = docs.par_iter().map(|d| h.hash_text(&d.text)).collect();
        let rows = match &universe {
            None => simdex::raw::Row::evaluate(&fps, &skip, &truth, a.max_k),
            Some(labelled) => (0..=a.max_k)
                .map(|k| {
                    let mut r = simdex::raw::Row {
                        k,
                        true_positives: 0,
                        false_positives: 0,
                        false_negatives: 0,
                    };
                    for &(i, j, l) in labelled {
                        let within = (fps[i as usize] ^ fps[j as usize]).count_ones() <= k;
                        match (within, l) {
                            (true, true) => r.true_positives += 1,
                            (true, false) => r.false_positives += 1,
                            (false, true) => r.false_negatives += 1,
                            _ => {}
                        }
                    }
                    r
                })
                .collect(),
        };
        columns.push(rows);
    }
    let truth_text = match &a.pairs {
        None => format!("word 3-shingle Jaccard >= {}", a.threshold),
        Some(p) => format!("labelled in {}", p.display()),
    };
    let advice = Advice::from(&header, &columns, a.target_recall);
    if a.json {
        let cols: Vec<String> = header
            .iter()
            .zip(&columns)
            .map(|(h, rows)| {
                let rs: Vec<String> = rows
                    .iter()
                    .map(|r| {
                        format!(
                            "{{\"k\":{},\"true_positives\":{},\"false_positives\":{},\"false_negatives\":{}}}",
                            r.k, r.true_positives, r.false_positives, r.false_negatives
                        )
                    })
                    .collect();
                format!("{{\"setting\":{:?},\"rows\":[{}]}}", h, rs.join(","))
            })
            .collect();
        crate::outln!(
            "{{\"documents\":{},\"empty\":{},\"near_duplicates\":{},\"truth\":{:?},\"columns\":[{}],\"advice\":{}}}",
            docs.len(),
            skip.len(),
            truth.len(),
            truth_text,
            cols.join(","),
            advice.json()
        )?;
        return Ok(());
    }
    crate::outln!(
        "{} documents ({} empty, left out), {} near-duplicate pairs ({truth_text})",
        docs.len(),
        skip.len(),
        truth.len(),
    )?;
    crate::outln!("precision / recall of \"distance <= k\"\n")?;
    crate::outln!("| k | {} |", header.join(" | "))?;
    crate::outln!("|---:|{}", ":---:|".repeat(header.len()))?;
    for k in 0..=a.max_k as usize {
        let cells: Vec<String> = columns
            .iter()
            .map(|rows| format!("{} / {}", pct(rows[k].precision()), pct(rows[k].recall())))
            .collect();
        crate::outln!("| {k} | {} |", cells.join(" | "))?;
    }
    crate::outln!("\n{}", advice.text())?;
    Ok(())
}

/// The `dedup` flags of a column header ("3-shingles + idf" -> "--shingle 3 --weights idf").
fn flags(header: &str) -> String {
    let (name, idf) = match header.strip_suffix(" + idf") {
        Some(n) => (n, true),
        None => (header, false),
    };
    let n = name.strip_suffix("-shingles").unwrap_or("1");
    format!(
        "--shingle {n} --weights {}",
        if idf { "idf" } else { "count" }
    )
}

/// What `calibrate` recommends from its table.
struct Advice {
    /// (setting, k, precision, recall, F1) of the best F1 of fingerprints alone.
    best: Option<(String, u32, f64, f64, f64)>,
    /// For `dedup --verify`: (setting, smallest k reaching the target recall, candidates, recall).
    verify: Option<(String, u32, u64, f64)>,
    target: f64,
}

impl Advice {
    fn from(header: &[String], columns: &[Vec<simdex::raw::Row>], target: f64) -> Advice {
        let mut best: Option<(String, u32, f64, f64, f64)> = None;
        let mut verify: Option<(String, u32, u64, f64)> = None;
        for (h, rows) in header.iter().zip(columns) {
            for r in rows.iter().filter(|r| r.k <= simdex::Design::MAX_K) {
                if let (Some(p), Some(rc)) = (r.precision(), r.recall())
                    && p + rc > 0.0
                {
                    let f1 = 2.0 * p * rc / (p + rc);
                    if best.as_ref().is_none_or(|b| f1 > b.4) {
                        best = Some((h.clone(), r.k, p, rc, f1));
                    }
                }
            }
            // Fewest candidates among the settings that reach the recall target.
            if let Some(r) = rows
                .iter()
                .find(|r| r.recall().is_some_and(|x| x >= target))
            {
                let c = r.true_positives + r.false_positives;
                if verify.as_ref().is_none_or(|v| c < v.2) {
                    verify = Some((h.clone(), r.k, c, r.recall().unwrap_or(0.0)));
                }
            }
        }
        Advice {
            best,
            verify,
            target,
        }
    }

    fn text(&self) -> String {
        let mut s = match &self.best {
            Some((h, k, p, r, f1)) => format!(
                "best F1 of fingerprints alone: {h}, k = {k} (precision {p:.3}, recall {r:.3}, \
                 F1 {f1:.3})"
            ),
            None => "no near-duplicate pairs to score".to_string(),
        };
        s.push('\n');
        s.push_str(&match &self.verify {
            Some((h, k, c, r)) => format!(
                "for exact answers: simdex dedup --verify jaccard:T {} --candidate-k {k} \
                 ({h}: candidate recall {r:.3} >= {}, {c} candidate pairs to verify)",
                flags(h),
                self.target
            ),
            None => format!(
                "no setting reaches candidate recall {} within the table's k: raise --max-k \
                 (dedup --verify takes --candidate-k up to 16)",
                self.target
            ),
        });
        s
    }

    fn json(&self) -> String {
        let best = self.best.as_ref().map_or("null".to_string(), |(h, k, p, r, f1)| {
            format!("{{\"setting\":{h:?},\"k\":{k},\"precision\":{p:.4},\"recall\":{r:.4},\"f1\":{f1:.4}}}")
        });
        let verify = self
            .verify
            .as_ref()
            .map_or("null".to_string(), |(h, k, c, r)| {
                format!(
                    "{{\"setting\":{h:?},\"candidate_k\":{k},\"candidates\":{c},\"recall\":{r:.4}}}"
                )
            });
        format!(
            "{{\"best_f1\":{best},\"verify\":{verify},\"target_recall\":{}}}",
            self.target
        )
    }
}

/// The ground truth's set: word 3-shingles.
fn eval_set(text: &str) -> Vec<u64> {
    simdex::dedup::Tokens::Unicode.shingle_set(text, 3)
}
