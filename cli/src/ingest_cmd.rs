//! `simdex ingest`: documents into a document store, each checked against everything stored
//! before it; one line per near-duplicate, the new ones stored.

use std::io::Write;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use simdex::{
    CreateOptions, DocId, Document, IngestOptions, Recipe, Store, StoreOptions, SyncPolicy, Verdict,
};
use simdex::{Error, Result};

use crate::docs::{Doc, DocArgs, Weights, read_docs};

/// Arguments of `simdex ingest`.
#[derive(clap::Args)]
pub struct IngestArgs {
    /// Document store directory (created, with its recipe, if it does not exist).
    pub dir: PathBuf,
    /// Files, directories (recursive; `.gz` decompressed) or `-` for standard input (JSONL
    /// with --jsonl).
    #[arg(default_value = "-")]
    pub paths: Vec<PathBuf>,
    /// Inputs are JSON Lines: one object per line with "id" (string or number) and "text".
    #[arg(long)]
    pub jsonl: bool,
    /// Documents are HTML (their visible text is hashed). Fixed by the recipe at creation; an
    /// existing store reads its documents as its recipe says (HTML or not) and refuses --html
    /// if it reads plain text.
    #[arg(long)]
    pub html: bool,
    /// Fingerprint features are shingles of N words. Fixed at creation (default 2); an
    /// existing store refuses a different size.
    #[arg(long)]
    pub shingle: Option<usize>,
    /// A duplicate must also have word 3-shingle Jaccard >= T with its match (`jaccard:T`):
    /// exact in a store created with --verify (it keeps each document's shingle set), else
    /// estimated from the 128-byte sketches a store created with --estimate keeps.
    #[arg(long, value_parser = crate::dedup_cmd::parse_verify)]
    pub verify: Option<f64>,
    /// Create the store with sketches only: --verify then compares estimates (sd about 0.013
    /// at Jaccard 0.9, docs/guide.md) instead of exact shingle sets (about 8 bytes per
    /// distinct word 3-shingle of each document). For stores too large for exact data.
    #[arg(long)]
    pub estimate: bool,
    /// Store nothing: the answers ingest would give (each document against the store and the
    /// earlier new documents of the input), e.g. to find a test set's near-duplicates in a
    /// training corpus. The store must exist; the input's texts are held in memory.
    #[arg(long)]
    pub check_only: bool,
    /// Candidates are stored fingerprints within K bits (0..=7). Default: the store's k, which
    /// for a new store is 7 with --verify (near-duplicates at Jaccard 0.95 lie up to 7 bits
    /// apart on template-heavy pages) and 3 without (docs/log/benchmarks.md, "Documents in the store").
    #[arg(long)]
    pub k: Option<u32>,
    /// When creating: the documents the store is expected to grow to, for its table design
    /// (`simdex rebuild` changes the design later).
    #[arg(long, default_value_t = 1_000_000)]
    pub expected: u64,
    /// When creating: feature weights of the recipe. auto = count with --verify (the widest
    /// net for verification), else idf when the creating run (or --learn-from) holds at least
    /// --learn documents, else count; idf is learned from the first --learn documents, at
    /// least 1000. An existing store refuses a setting other than its own.
    #[arg(long, value_enum, default_value_t = Weights::Auto)]
    pub weights: Weights,
    /// When creating with idf weights, or with --verify (exact: the store's shingle order):
    /// learn them from the first N documents (default 10000; for the order 100000; 1000 to
    /// 1000000, and at most 256 MiB of text: they are held in memory until then, and checked
    /// and stored once learned, like every later one).
    #[arg(long, value_parser = clap::value_parser!(u64).range(simdex::Recipe::MIN_LEARN_DOCS as u64..=1_000_000))]
    pub learn: Option<u64>,
    /// When creating: learn the recipe's idf weights from these documents (read like the
    /// input: files, directories, JSONL with --jsonl) instead of the input's first ones, so
    /// that the store's answers do not depend on what its first run holds (its first --learn
    /// documents, default 1000000). Not stored.
    #[arg(long, num_args = 1..)]
    pub learn_from: Vec<PathBuf>,
    /// Documents checked and stored per step, 1 to 1000000: a step's lines are written once it
    /// is durable. Larger steps keep both cores busier and hold more text in memory (two steps'
    /// worth: the one checked and the one read ahead).
    #[arg(long, default_value_t = BATCH as u64, value_parser = clap::value_parser!(u64).range(1..=1_000_000))]
    pub batch: u64,
    /// Duplicate lines go to this file (written atomically at the end, or at an interrupt
    /// with the lines of the steps done); standard output, a step at a time as it is stored,
    /// if absent.
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Log sync policy: per-write (the default: every step of --batch documents is durable
    /// before its lines are written), group:<ms> or manual.
    #[arg(long, default_value = "per-write", value_parser = crate::store_cmd::parse_sync)]
    pub sync: SyncPolicy,
    /// Stop at the first bad JSONL line instead of reporting and skipping it.
    #[arg(long)]
    pub strict: bool,
    /// No progress bar and no summary.
    #[arg(long)]
    pub quiet: bool,
}

impl IngestArgs {
    /// The threshold a store this run creates keeps shingle sets for: --verify's, unless
    /// --estimate.
    fn exact(&self) -> Option<f64> {
        self.verify.filter(|_| !self.estimate)
    }
}

/// Documents per call of `Store::ingest` by default (four of its groups of 4096). Two batches
/// of texts are held (the one checked and the one read ahead): 65536 documents a call held
/// 200 MB of the 1M bench corpus, and were no faster (interleaved runs, plain and exact
/// ingest: within 5%, the 16384 ones faster in three of four).
const BATCH: usize = 1 << 14;

/// The k of a new document store created to verify (and to not verify).
pub const DEFAULT_K: (u32, u32) = (7, 3);

/// Run `ingest`.
pub fn ingest(a: IngestArgs) -> Result<()> {
    let start = Instant::now();
    let docs = DocArgs {
        paths: a.paths.clone(),
        html: false, // the recipe extracts the text of HTML itself
        jsonl: a.jsonl,
        shingle: a.shingle.unwrap_or(simdex::SimhashOptions::DEFAULT_SHINGLE),
        idf: None,
        strict: a.strict,
        quiet: a.quiet,
        corpus_idf: None,
        silent_skips: false,
        spooled: Vec::new(),
    };
    if a.check_only && !Store::is_store(&a.dir) {
        return Err(Error::InvalidArgument(format!(
            "--check-only checks against an existing store; {} is none",
            a.dir.display()
        )));
    }
    if a.dir.exists() && !Store::is_store(&a.dir) {
        return Err(Error::InvalidArgument(format!(
            "{} exists and is not a store (no CURRENT file); ingest into a new directory",
            a.dir.display()
        )));
    }
    // Per-write durability is promised per batch (a batch's lines are written once it is
    // durable), so the log is synced once a batch instead of once a write (a batch is
    // sixteen writes of 4096 documents).
    let per_batch = matches!(a.sync, SyncPolicy::PerWrite);
    let opts = StoreOptions::default()
        .with_sync(if per_batch {
            SyncPolicy::Manual
        } else {
            a.sync
        })
        .with_progress(crate::progress::handle(!a.quiet));
    let check = IngestOptions::default().with_k(a.k).with_verify(a.verify);
    let mut store: Option<Arc<Store>> = None;
    let mut learning: Vec<Doc> = Vec::new();
    if Store::is_store(&a.dir) {
        store = Some(Arc::new(open_existing(&a, &opts)?));
    }
    // A sample to learn the weights from, when creating.
    let sample: Option<Vec<Doc>> = match (&store, a.learn_from.is_empty()) {
        (_, true) => None,
        (Some(_), false) => {
            return Err(Error::InvalidArgument(format!(
                "--learn-from applies when creating a store; {} exists (its recipe is fixed)",
                a.dir.display()
            )));
        }
        (None, false) => {
            let from = DocArgs {
                paths: a.learn_from.clone(),
                quiet: true,
                ..docs.clone_settings()
            };
            // The first `sample_cap` documents are held, the rest of the sample is only read.
            let cap = sample_cap(&a);
            let mut v = Vec::new();
            read_docs(&from, |chunk| {
                if v.len() < cap {
                    v.extend(chunk);
                    v.truncate(cap);
                }
                Ok(())
            })?;
            Some(v)
        }
    };
    // A check-only run is one call over the whole input, so that its answers are ingest's.
    let batch = match a.check_only {
        true => usize::MAX,
        false => a.batch as usize,
    };
    let (mut new, mut dups, mut empty, mut again) = (0u64, 0u64, 0u64, 0u64);
    let stopped = std::cell::Cell::new(false);
    let out = std::cell::RefCell::new(crate::durable_lines::DurableLines::new());
    let mut run = |w: &mut dyn Write, store: &Arc<Store>, docs: &[Doc]| -> Result<()> {
        for chunk in docs.chunks(batch) {
            if crate::interrupt::signalled().is_some() {
                stopped.set(true);
                return out.borrow_mut().finish(w);
            }
            let ids: Vec<DocId> = chunk.iter().map(|d| DocId::parse(&d.id)).collect();
            let input: Vec<Document<'_>> = chunk
                .iter()
                .zip(&ids)
                .map(|(d, id)| Document { id, text: &d.text })
                .collect();
            let verdicts = match a.check_only {
                true => store.check_documents(&input, &check),
                false => store.ingest(&input, &check),
            };
            let verdicts = match verdicts {
                Ok(v) => v,
                Err(e) => {
                    // The batch before is stored: its lines are still written (a failed sync
                    // reports itself at the next write).
                    let _ = out.borrow_mut().finish(w);
                    return Err(e);
                }
            };
            let mut lines = Vec::new();
            for (d, v) in chunk.iter().zip(verdicts) {
                match v {
                    Verdict::Duplicate { id, similarity, .. } => {
                        dups += 1;
                        let _ = writeln!(lines, "{}\t{id}\t{similarity:.4}", d.id);
                    }
                    Verdict::Empty => empty += 1,
                    Verdict::AlreadyStored => again += 1,
                    _ => new += 1,
                }
            }
            out.borrow_mut().batch(w, store, lines, per_batch)?;
        }
        Ok(())
    };
    // Documents read before the store is created: the weights' sample (none for count).
    // (An exact store learns its shingle order from the same sample.)
    let exact = a.exact().is_some();
    let learn = match (learns_idf(&a, usize::MAX) || exact, &sample) {
        (true, None) => learn_docs(&a),
        _ => 1,
    };
    // Documents are checked a batch at a time: the library hashes one group of 4096 while it
    // checks and writes the one before, so a batch of several groups keeps both cores busy.
    let body = |w: &mut dyn Write| -> Result<(u64, u64)> {
        // The input is read and parsed on a thread of its own, a few chunks ahead.
        std::thread::scope(|sc| {
            let (tx, rx) =
                std::sync::mpsc::sync_channel::<Vec<Doc>>((a.batch as usize).div_ceil(4096) + 2);
            // Checked batches go back to the reader, which allocated their texts, to be freed
            // there between its reads: freed here, between two calls, they kept the store's
            // threads idle (a few ms a batch) and took the reader's allocator lock.
            let (spent, spent_rx) = std::sync::mpsc::channel::<Vec<Doc>>();
            let reader = sc.spawn(move || {
                read_docs(&docs, |chunk| {
                    let sent = tx.send(chunk);
                    // A batch comes back when its successor is taken: this send's return.
                    spent_rx.try_iter().for_each(drop);
                    sent.map_err(|_| Error::InvalidArgument("ingest stopped".into()))
                })
            });
            let mut held = 0usize;
            let checked = || -> Result<()> {
                for chunk in rx {
                    if store.is_none() {
                        held += chunk.iter().map(|d| d.text.len()).sum::<usize>();
                    }
                    learning.extend(chunk);
                    // The sample is the first --learn documents, or fewer once their texts take
                    // SAMPLE_BYTES (it is held in memory until the store exists).
                    if store.is_none() && (learning.len() >= learn || held >= SAMPLE_BYTES) {
                        store = Some(Arc::new(create(
                            &a,
                            &opts,
                            sample.as_deref().unwrap_or(&learning),
                        )?));
                    }
                    if let Some(s) = &store
                        && learning.len() >= batch
                    {
                        let whole = learning.len() / batch * batch;
                        let rest = learning.split_off(whole);
                        let done = std::mem::replace(&mut learning, rest);
                        run(w, s, &done)?;
                        // Once the reader has ended, dropped here.
                        let _ = spent.send(done);
                        if stopped.get() {
                            return Ok(());
                        }
                    }
                }
                Ok(())
            };
            let checked = checked();
            // The last batch's lines, once its sync is done, however the reading ended.
            let finished = out.borrow_mut().finish(w);
            let counts = reader
                .join()
                .unwrap_or_else(|_| Err(Error::InvalidArgument("the input reader failed".into())));
            checked?;
            finished?;
            if stopped.get() {
                // The reader stopped because nothing reads its chunks any more.
                return Ok((0, 0));
            }
            let counts = counts?;
            if store.is_none() {
                // The whole input fit in the learning sample.
                store = Some(Arc::new(create(
                    &a,
                    &opts,
                    sample.as_deref().unwrap_or(&learning),
                )?));
            }
            if let Some(s) = &store {
                run(w, s, &learning)?;
                out.borrow_mut().finish(w)?;
            }
            Ok(counts)
        })
    };
    let (_, bad) = match &a.out {
        Some(p) => simdex::raw::write_file(p, |w| body(w))?,
        None => {
            let mut w = std::io::stdout().lock();
            body(&mut w)?
        }
    };
    let store = store.expect("created above");
    store.flush()?;
    let summary = format!(
        "{} documents: {dups} near-duplicates of stored ones, {new} new ({}), {again} \
         already stored under their ids, {empty} without words (not stored){} {} {} in {:.2?}",
        new + dups + empty + again,
        if a.check_only {
            "not stored: --check-only"
        } else {
            "stored"
        },
        if bad > 0 {
            format!("; {bad} bad lines skipped")
        } else {
            String::new()
        },
        if a.check_only { "against" } else { "into" },
        a.dir.display(),
        start.elapsed()
    );
    if stopped.get() {
        let code = crate::interrupt::exit_code().unwrap_or(130);
        eprintln!(
            "simdex: interrupted: {summary} (synced; the lines of every document checked are \
             written{}); the rest of the input was not read: run the same input again, and the \
             documents already stored are reported as such, not as duplicates",
            match &a.out {
                Some(p) => format!(" to {}", p.display()),
                None => String::new(),
            }
        );
        std::process::exit(code.into());
    }
    if !a.quiet {
        eprintln!("{summary}");
    }
    // The process ends next: the store is synced and checked (`flush` above reports a failed
    // background compaction as `close` would) and its lock goes with the process, so its
    // memory is left to the OS instead of being freed piece by piece (a delta of a million
    // documents took 0.4 s to free).
    std::mem::forget(store);
    Ok(())
}

/// Open the existing store `a.dir`: a document store whose recipe matches what the request
/// names (a setting left out means the store's).
fn open_existing(a: &IngestArgs, opts: &StoreOptions) -> Result<Store> {
    let s = open(&a.dir, opts)?;
    let recipe = s.recipe().ok_or_else(|| {
        Error::InvalidArgument(format!(
            "{} is a store of raw fingerprints (made by `simdex insert`): ingest needs a \
             document store; ingest into a new directory",
            a.dir.display()
        ))
    })?;
    recipe.check_request(a.shingle, a.html.then_some(true))?;
    if a.estimate && recipe.exact().is_some() {
        return Err(Error::InvalidArgument(format!(
            "{} keeps shingle sets (exact verification); --estimate applies to a new store",
            a.dir.display()
        )));
    }
    if a.verify.is_some() && recipe.exact().is_none() && !a.quiet {
        eprintln!(
            "simdex: note: {} keeps sketches only: --verify compares estimated similarities \
             (a store created with --verify keeps shingle sets and verifies exactly)",
            a.dir.display()
        );
    }
    let has_idf = recipe.weights().is_some();
    let asked = match a.weights {
        Weights::Auto => None,
        Weights::Count => Some(false),
        Weights::Idf => Some(true),
    };
    if asked.is_some_and(|w| w != has_idf) || (a.learn.is_some() && !has_idf) {
        let name = |idf: bool| if idf { "idf" } else { "count" };
        return Err(Error::InvalidArgument(format!(
            "{}'s recipe has {} weights; this request asks for {} (a store's weights are fixed \
             when it is created)",
            a.dir.display(),
            name(has_idf),
            match asked {
                Some(w) => name(w).to_string(),
                None => "idf weights learned anew (--learn)".into(),
            }
        )));
    }
    Ok(s)
}

fn open(dir: &std::path::Path, opts: &StoreOptions) -> Result<Store> {
    let s = Store::open(dir, opts)?;
    for w in s.recovery().warnings() {
        eprintln!("simdex: warning: {w}");
    }
    Ok(s)
}

/// The number of documents idf weights (or an exact store's shingle order) are learned from.
/// An exact store's default is larger: a sample of 100 000 documents orders its prefixes well
/// enough that a million-document store checks a tenth of the candidates that 10 000 leave
/// (docs/log/benchmarks.md, "Exact online verification"), for the same answers.
fn learn_docs(a: &IngestArgs) -> usize {
    a.learn.unwrap_or(match a.exact().is_some() {
        true => LEARN_ORDER_DOCS,
        false => simdex::Recipe::LEARN_DOCS as u64,
    }) as usize
}

/// An exact store's default sample (see [`learn_docs`]).
const LEARN_ORDER_DOCS: u64 = 100_000;
/// The most bytes of text a creating run holds as its sample.
const SAMPLE_BYTES: usize = 256 << 20;

/// The most documents of --learn-from that weights are learned from (--learn, else 1000000).
fn sample_cap(a: &IngestArgs) -> usize {
    a.learn.unwrap_or(1_000_000) as usize
}

/// Whether a new store's recipe has IDF weights, given `available` documents to learn from:
/// auto weights are idf without --verify when there are --learn of them (fewer would freeze
/// weights of a small start into the store: count weights then).
fn learns_idf(a: &IngestArgs, available: usize) -> bool {
    let enough = match a.learn_from.is_empty() {
        true => learn_docs(a),
        false => simdex::Recipe::MIN_LEARN_DOCS,
    };
    match a.weights {
        Weights::Auto => a.verify.is_none() && available >= enough,
        Weights::Count => false,
        Weights::Idf => true,
    }
}

/// Create the store with a recipe learned from `sample` (the first documents, or
/// --learn-from's), and open it. A store another process created meanwhile is opened instead.
fn create(a: &IngestArgs, opts: &StoreOptions, sample: &[Doc]) -> Result<Store> {
    let shingle = a.shingle.unwrap_or(simdex::SimhashOptions::DEFAULT_SHINGLE);
    let exact = a.exact();
    let shape = simdex::dedup::SketchShape::for_store(exact.is_some());
    let idf = learns_idf(a, sample.len());
    let recipe = match idf {
        false => Recipe::new(shingle, a.html, shape, None)?,
        true => Recipe::learn(
            shingle,
            a.html,
            shape,
            sample
                .iter()
                .take(match a.learn_from.is_empty() {
                    true => learn_docs(a),
                    false => sample_cap(a),
                })
                .map(|d| d.text.as_str()),
        )?,
    };
    let k = a.k.unwrap_or(match a.verify {
        Some(_) => DEFAULT_K.0,
        None => DEFAULT_K.1,
    });
    // An exact store orders shingles by their frequency in the sample (format-spec/store.md,
    // "Exact verification").
    let recipe = recipe
        .with_exact(exact)?
        .learn_order(sample.iter().take(learn_docs(a)).map(|d| d.text.as_str()));
    let made = Store::create(
        &a.dir,
        &CreateOptions::default()
            .with_k(k)
            .with_expected_keys(a.expected)
            .with_recipe(Some(recipe.clone())),
    );
    if let Err(e) = made {
        if Store::is_store(&a.dir) {
            // Another ingest created it first: use it, if its recipe is the one asked for.
            return open_existing(a, opts);
        }
        return Err(e);
    }
    if !a.quiet {
        let weights = match recipe.weights() {
            Some(w) => format!("idf learned from {} documents", w.docs()),
            None if a.weights == Weights::Auto && a.verify.is_none() => format!(
                "count: idf needs {} documents to learn from, this run has {}; see --learn-from",
                learn_docs(a),
                sample.len()
            ),
            None => "count".into(),
        };
        let exact = match recipe.exact() {
            Some(t) => format!(
                "; exact at jaccard {t} and above: shingle sets kept, their order learned from \
                 {} documents",
                sample.len().min(learn_docs(a))
            ),
            None => String::new(),
        };
        eprintln!(
            "created document store {} (k = {k}, {shingle}-shingles, weights {weights}{exact})",
            a.dir.display(),
        );
    }
    open(&a.dir, opts)
}
