//! `simdex hash`, `dedup`, `calibrate`, `idf`: from documents to fingerprints and near-duplicates.

use std::collections::{HashMap, HashSet};
use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use rayon::prelude::*;
use simdex::simhash::{self, IdfTable, SimhashOptions, Simhasher};
use simdex::{Error, Result};

/// Where documents come from and how they are hashed (shared by every document command).
#[derive(clap::Args)]
pub struct DocArgs {
    /// Files, directories (read recursively; `.gz` files are decompressed) or `-` for standard
    /// input (one document, or JSONL with --jsonl).
    #[arg(default_value = "-")]
    pub paths: Vec<PathBuf>,
    /// Documents are HTML: hash their visible text only.
    #[arg(long)]
    pub html: bool,
    /// Inputs are JSON Lines: one object per line with "id" (string or number) and "text".
    #[arg(long)]
    pub jsonl: bool,
    /// Features are shingles of N consecutive words (1 = single words).
    #[arg(long, default_value_t = simhash::DEFAULT_SHINGLE)]
    pub shingle: usize,
    /// Per-feature weights learned by `simdex idf` (the shingle size must match).
    #[arg(long)]
    pub idf: Option<PathBuf>,
    /// Stop at the first bad JSONL line instead of reporting and skipping it.
    #[arg(long)]
    pub strict: bool,
    /// No progress bar and no summary.
    #[arg(long)]
    pub quiet: bool,
}

impl DocArgs {
    fn hasher(&self) -> Result<Simhasher> {
        let weights = match &self.idf {
            None => None,
            Some(p) => {
                let text =
                    std::fs::read_to_string(p).map_err(|e| Error::io(p.clone(), "read", e))?;
                let t = IdfTable::decode(&text).map_err(|e| e.with_path(p))?;
                if t.shingle() != self.shingle {
                    return Err(Error::InvalidArgument(format!(
                        "{} was learned with --shingle {}, not {}",
                        p.display(),
                        t.shingle(),
                        self.shingle
                    )));
                }
                Some(Arc::new(t))
            }
        };
        Simhasher::new(SimhashOptions {
            shingle: self.shingle,
            weights,
        })
    }
}

/// One input document.
struct Doc {
    id: String,
    text: String,
}

fn read_text(path: &Path) -> Result<String> {
    let f = std::fs::File::open(path).map_err(|e| Error::io(path.to_path_buf(), "open", e))?;
    let mut bytes = Vec::new();
    let r = if path.extension().is_some_and(|x| x == "gz") {
        flate2::read::MultiGzDecoder::new(f).read_to_end(&mut bytes)
    } else {
        BufReader::new(f).read_to_end(&mut bytes)
    };
    r.map_err(|e| Error::io(path.to_path_buf(), "read", e))?;
    Ok(String::from_utf8_lossy(&bytes).into_owned())
}

/// Files under `p` (recursively, in name order), or `p` itself.
fn walk(p: &Path, out: &mut Vec<PathBuf>) -> Result<()> {
    let meta = std::fs::metadata(p).map_err(|e| Error::io(p.to_path_buf(), "open", e))?;
    if meta.is_dir() {
        let mut entries: Vec<PathBuf> = std::fs::read_dir(p)
            .map_err(|e| Error::io(p.to_path_buf(), "list", e))?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .collect();
        entries.sort();
        for e in entries {
            walk(&e, out)?;
        }
    } else {
        out.push(p.to_path_buf());
    }
    Ok(())
}

/// Read every document, hash them on all cores, and call `emit(fingerprint, doc)` in input
/// order. Returns (documents, bad lines skipped).
fn for_each_doc(a: &DocArgs, mut emit: impl FnMut(u64, &Doc) -> Result<()>) -> Result<(u64, u64)> {
    let hasher = a.hasher()?;
    read_docs(a, |docs| {
        let fps: Vec<u64> = docs.par_iter().map(|d| hasher.hash_text(&d.text)).collect();
        fps.into_iter()
            .zip(&docs)
            .try_for_each(|(fp, d)| emit(fp, d))
    })
}

/// Read every document in input order, a chunk at a time (with --html, `text` is already the
/// visible text, extracted on all cores). Returns (documents, bad lines skipped).
fn read_docs(a: &DocArgs, mut chunk: impl FnMut(Vec<Doc>) -> Result<()>) -> Result<(u64, u64)> {
    let pb = crate::progress::bar(!a.quiet, None, "documents");
    let (mut n, mut bad) = (0u64, 0u64);
    let mut run = |mut docs: Vec<Doc>, n: &mut u64| -> Result<()> {
        if a.html {
            docs.par_iter_mut()
                .for_each(|d| d.text = simhash::html::visible_text(&d.text));
        }
        *n += docs.len() as u64;
        chunk(docs)?;
        pb.set_position(*n);
        Ok(())
    };
    if a.jsonl {
        for p in &a.paths {
            let (reader, name): (Box<dyn BufRead>, PathBuf) = if p == Path::new("-") {
                (
                    Box::new(BufReader::new(std::io::stdin())),
                    PathBuf::from("<stdin>"),
                )
            } else {
                let f = std::fs::File::open(p).map_err(|e| Error::io(p.clone(), "open", e))?;
                (Box::new(BufReader::with_capacity(1 << 20, f)), p.clone())
            };
            let mut lines = reader.lines().enumerate();
            loop {
                let mut chunk = Vec::new();
                for (i, line) in lines.by_ref().take(4096) {
                    let line = line.map_err(|e| Error::io(name.clone(), "read", e))?;
                    chunk.push((i + 1, line));
                }
                if chunk.is_empty() {
                    break;
                }
                let mut docs = Vec::with_capacity(chunk.len());
                for (no, line) in chunk {
                    if line.trim().is_empty() {
                        continue;
                    }
                    match parse_jsonl(&line) {
                        Ok(d) => docs.push(d),
                        Err(msg) => {
                            let e = Error::Parse {
                                path: Some(name.clone()),
                                location: format!("line {no}"),
                                message: msg,
                            };
                            if a.strict {
                                return Err(e);
                            }
                            bad += 1;
                            pb.suspend(|| eprintln!("simdex: warning: skipped {e}"));
                        }
                    }
                }
                run(docs, &mut n)?;
            }
        }
    } else {
        let mut files = Vec::new();
        let mut stdin_doc = false;
        for p in &a.paths {
            if p == Path::new("-") {
                stdin_doc = true;
            } else {
                walk(p, &mut files)?;
            }
        }
        if stdin_doc {
            let mut bytes = Vec::new();
            std::io::stdin()
                .read_to_end(&mut bytes)
                .map_err(|e| Error::io(PathBuf::from("<stdin>"), "read", e))?;
            let text = String::from_utf8_lossy(&bytes).into_owned();
            run(
                vec![Doc {
                    id: "-".into(),
                    text,
                }],
                &mut n,
            )?;
        }
        for chunk in files.chunks(256) {
            let docs: Vec<Doc> = chunk
                .par_iter()
                .map(|p| {
                    Ok(Doc {
                        id: p.display().to_string(),
                        text: read_text(p)?,
                    })
                })
                .collect::<Result<_>>()?;
            run(docs, &mut n)?;
        }
    }
    pb.finish_and_clear();
    Ok((n, bad))
}

fn parse_jsonl(line: &str) -> std::result::Result<Doc, String> {
    let v: serde_json::Value = serde_json::from_str(line).map_err(|e| format!("not JSON: {e}"))?;
    let id = match v.get("id") {
        Some(serde_json::Value::String(s)) => s.clone(),
        Some(serde_json::Value::Number(n)) => n.to_string(),
        Some(_) => return Err("\"id\" is neither a string nor a number".into()),
        None => return Err("no \"id\" field".into()),
    };
    let text = match v.get("text") {
        Some(serde_json::Value::String(s)) => s.clone(),
        Some(_) => return Err("\"text\" is not a string".into()),
        None => return Err("no \"text\" field".into()),
    };
    if id.contains(['\t', '\n']) {
        return Err("\"id\" contains a tab or newline".into());
    }
    Ok(Doc { id, text })
}

/// Arguments of `simdex hash`.
#[derive(clap::Args)]
pub struct HashArgs {
    #[command(flatten)]
    pub docs: DocArgs,
}

/// Run `hash`: `fingerprint_hex<TAB>id` per document.
pub fn hash(a: HashArgs) -> Result<()> {
    let mut w = crate::util::stdout();
    let (n, bad) = for_each_doc(&a.docs, |fp, d| {
        writeln!(w, "{fp:016x}\t{}", d.id).map_err(crate::util::out_err)
    })?;
    crate::util::flush(&mut w)?;
    if !a.docs.quiet && bad > 0 {
        eprintln!("hashed {n} documents; skipped {bad} bad lines");
    }
    Ok(())
}

/// Arguments of `simdex dedup`.
#[derive(clap::Args)]
pub struct DedupArgs {
    #[command(flatten)]
    pub docs: DocArgs,
    /// Largest distance of a near-duplicate pair (0..=7).
    #[arg(long, default_value_t = 3)]
    pub k: u32,
    /// One line per cluster (connected component of near-duplicate pairs, 2+ documents) instead
    /// of one line per pair.
    #[arg(long)]
    pub clusters: bool,
    /// Output file (written atomically); standard output if absent.
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Memory budget of the index build.
    #[arg(long, default_value = "1G", value_parser = crate::util::parse_size)]
    pub mem: u64,
}

fn find(parent: &mut [u32], mut x: u32) -> u32 {
    while parent[x as usize] != x {
        parent[x as usize] = parent[parent[x as usize] as usize];
        x = parent[x as usize];
    }
    x
}

/// Run `dedup`: every near-duplicate pair `id_a<TAB>id_b<TAB>distance` (input order), or the
/// clusters.
pub fn dedup(a: DedupArgs) -> Result<()> {
    if a.k > 7 {
        return Err(Error::InvalidArgument(format!(
            "k = {} is not in 0..=7",
            a.k
        )));
    }
    let mut fps = Vec::new();
    let mut ids = Vec::new();
    let (_, bad) = for_each_doc(&a.docs, |fp, d| {
        fps.push(fp);
        ids.push(d.id.clone());
        Ok(())
    })?;
    // Documents by fingerprint; pairs of distinct fingerprints from the index self-join.
    let mut groups: HashMap<u64, Vec<u32>> = HashMap::new();
    for (i, &fp) in fps.iter().enumerate() {
        groups.entry(fp).or_default().push(i as u32);
    }
    let tmp = match &a.out {
        Some(p) => p
            .parent()
            .filter(|p| !p.as_os_str().is_empty())
            .map_or_else(|| PathBuf::from("."), Path::to_path_buf),
        None => std::env::temp_dir(),
    };
    let joined = simdex::index::self_join(
        &fps,
        a.k,
        &tmp,
        a.mem,
        &crate::progress::handle(!a.docs.quiet),
    )?;
    let mut pairs: Vec<(u32, u32, u32)> = Vec::new();
    for g in groups.values() {
        for (x, &i) in g.iter().enumerate() {
            for &j in &g[x + 1..] {
                pairs.push((i, j, 0));
            }
        }
    }
    for p in &joined {
        for &i in &groups[&p.batch] {
            for &j in &groups[&p.stored] {
                pairs.push((i.min(j), i.max(j), p.distance));
            }
        }
    }
    pairs.sort_unstable();
    let mut text = String::new();
    use std::fmt::Write as _;
    if a.clusters {
        let mut parent: Vec<u32> = (0..fps.len() as u32).collect();
        for &(i, j, _) in &pairs {
            let (ri, rj) = (find(&mut parent, i), find(&mut parent, j));
            if ri != rj {
                parent[ri.max(rj) as usize] = ri.min(rj);
            }
        }
        let mut clusters: std::collections::BTreeMap<u32, Vec<u32>> = Default::default();
        for i in 0..fps.len() as u32 {
            let r = find(&mut parent, i);
            clusters.entry(r).or_default().push(i);
        }
        for members in clusters.values().filter(|m| m.len() > 1) {
            let line: Vec<&str> = members.iter().map(|&i| ids[i as usize].as_str()).collect();
            let _ = writeln!(text, "{}", line.join("\t"));
        }
    } else {
        for &(i, j, d) in &pairs {
            let _ = writeln!(text, "{}\t{}\t{d}", ids[i as usize], ids[j as usize]);
        }
    }
    match &a.out {
        Some(p) => simdex::atomic::write_file(p, |w| {
            w.write_all(text.as_bytes())
                .map_err(|e| Error::io(p.clone(), "write", e))
        })?,
        None => {
            let mut w = crate::util::stdout();
            w.write_all(text.as_bytes()).map_err(crate::util::out_err)?;
            crate::util::flush(&mut w)?;
        }
    }
    if !a.docs.quiet {
        eprintln!(
            "{} documents, {} distinct fingerprints, {} near-duplicate pairs within k = {}{}",
            fps.len(),
            groups.len(),
            pairs.len(),
            a.k,
            if bad > 0 {
                format!("; skipped {bad} bad lines")
            } else {
                String::new()
            }
        );
    }
    Ok(())
}

/// Arguments of `simdex calibrate`.
#[derive(clap::Args)]
pub struct CalibrateArgs {
    #[command(flatten)]
    pub docs: DocArgs,
    /// Shingle sizes to compare (1 = single words).
    #[arg(long, value_delimiter = ',', default_value = "1,2,3,4")]
    pub shingles: Vec<usize>,
    /// Ground truth: near-duplicates have word 3-shingle Jaccard at least this.
    #[arg(long, default_value_t = 0.9)]
    pub threshold: f64,
    /// Labelled pairs instead of the Jaccard ground truth: lines `id_a<TAB>id_b<TAB>1|0`.
    #[arg(long)]
    pub pairs: Option<PathBuf>,
    /// Largest k in the table.
    #[arg(long, default_value_t = 7)]
    pub max_k: u32,
    /// Use at most this many documents (all pairs are compared: the cost grows with its square).
    #[arg(long, default_value_t = 30_000)]
    pub max_docs: usize,
    /// Also compare, for each shingle size, IDF weights learned from the corpus itself.
    #[arg(long)]
    pub with_idf: bool,
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
            simhash::eval::similar_pairs(&sets, a.threshold)
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
                vec![false]
            };
            idf.into_iter().map(move |w| (n, w))
        })
        .collect();
    for (n, with_idf) in variants {
        let weights = if with_idf {
            let plain = Simhasher::new(SimhashOptions {
                shingle: n,
                weights: None,
            })?;
            let feats: Vec<Vec<u64>> = docs
                .par_iter()
                .map(|d| {
                    plain
                        .features(&d.text)
                        .into_iter()
                        .map(|(f, _)| f)
                        .collect()
                })
                .collect();
            Some(Arc::new(IdfTable::build(n, feats.iter().map(|v| &v[..]))))
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
        let h = Simhasher::new(SimhashOptions {
            shingle: n,
            weights,
        })?;
        let fps: Vec<u64> = docs.par_iter().map(|d| h.hash_text(&d.text)).collect();
        let rows = match &universe {
            None => simhash::eval::evaluate(&fps, &skip, &truth, a.max_k),
            Some(labelled) => (0..=a.max_k)
                .map(|k| {
                    let mut r = simhash::eval::Row {
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
    crate::outln!(
        "{} documents ({} empty, left out), {} near-duplicate pairs ({})",
        docs.len(),
        skip.len(),
        truth.len(),
        match &a.pairs {
            None => format!("word 3-shingle Jaccard >= {}", a.threshold),
            Some(p) => format!("labelled in {}", p.display()),
        }
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
    Ok(())
}

/// The ground truth's set: word 3-shingles.
fn eval_set(text: &str) -> Vec<u64> {
    simhash::eval::shingle_set(text, 3)
}

/// Arguments of `simdex idf`.
#[derive(clap::Args)]
pub struct IdfArgs {
    #[command(flatten)]
    pub docs: DocArgs,
    /// Output file (written atomically).
    #[arg(long)]
    pub out: PathBuf,
}

/// Run `idf`: learn per-feature weights from a corpus.
pub fn idf(a: IdfArgs) -> Result<()> {
    let h = Simhasher::new(SimhashOptions {
        shingle: a.docs.shingle,
        weights: None,
    })?;
    let mut feats: Vec<Vec<u64>> = Vec::new();
    read_docs(&a.docs, |chunk| {
        feats.par_extend(chunk.par_iter().map(|d| {
            h.features(&d.text)
                .into_iter()
                .map(|(f, _)| f)
                .collect::<Vec<u64>>()
        }));
        Ok(())
    })?;
    let t = IdfTable::build(a.docs.shingle, feats.iter().map(|v| &v[..]));
    simdex::atomic::write_file(&a.out, |w| {
        w.write_all(t.encode().as_bytes())
            .map_err(|e| Error::io(a.out.clone(), "write", e))
    })?;
    if !a.docs.quiet {
        eprintln!(
            "learned weights of {} features from {} documents into {}",
            t.len(),
            t.docs(),
            a.out.display()
        );
    }
    Ok(())
}
