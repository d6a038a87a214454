//! Reading documents for `hash`, `dedup`, `calibrate` and `idf`: files, directories (recursive,
//! in name order), `.gz`, JSON Lines; HTML text extracted once, on all cores.

use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use rayon::prelude::*;
use simdex::{Error, Result};
use simdex::{IdfTable, SimhashOptions, Simhasher};

use crate::spool::Replayable;

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
    #[arg(long, default_value_t = simdex::SimhashOptions::DEFAULT_SHINGLE)]
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
    /// Weights learned from this corpus itself (set by `dedup` and `calibrate`, not a flag).
    #[arg(skip)]
    pub corpus_idf: Option<Arc<IdfTable>>,
    /// Skip bad lines without a warning (the IDF pass: the next pass reports them once).
    #[arg(skip)]
    pub silent_skips: bool,
    /// Inputs that can be read only once (`-`, pipes, FIFOs), copied for a second pass.
    #[arg(skip)]
    pub spooled: Vec<(PathBuf, Arc<Replayable>)>,
}

/// How features are weighted, for commands that see the whole corpus (`dedup`, `calibrate`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Weights {
    /// `idf`, except `count` for `dedup --verify` (whose candidates want the widest net).
    Auto,
    /// Occurrence counts only (the fingerprints of `simdex hash`).
    Count,
    /// Counts times IDF learned from the corpus in a first pass: shingles shared by many
    /// documents (navigation, boilerplate, repeated headings) weigh less.
    Idf,
}

impl DocArgs {
    /// The same reading settings, for other paths (set `paths`), with nothing spooled or
    /// learned.
    pub fn clone_settings(&self) -> DocArgs {
        DocArgs {
            paths: self.paths.clone(),
            html: self.html,
            jsonl: self.jsonl,
            shingle: self.shingle,
            idf: self.idf.clone(),
            strict: self.strict,
            quiet: self.quiet,
            corpus_idf: None,
            silent_skips: false,
            spooled: Vec::new(),
        }
    }

    /// Copy every input that can be read only once (`-`, `/dev/stdin`, `<(cmd)`, a FIFO) into an
    /// anonymous temporary file, so that the passes after this one read the same documents.
    pub fn spool_once_only_inputs(&mut self) -> Result<()> {
        let tmp = std::env::temp_dir();
        for p in &self.paths {
            let once = p == Path::new("-")
                || std::fs::metadata(p).is_ok_and(|m| !m.is_file() && !m.is_dir());
            if once && !self.spooled.iter().any(|(q, _)| q == p) {
                self.spooled
                    .push((p.clone(), Arc::new(Replayable::open(p, &tmp)?)));
            }
        }
        Ok(())
    }

    /// A reader of input `p` from its beginning (its copy, if it was spooled) and its name.
    fn open_input(&self, p: &Path) -> Result<(Box<dyn BufRead + Send>, PathBuf)> {
        if let Some((_, r)) = self.spooled.iter().find(|(q, _)| q == p) {
            return Ok((r.reader()?, r.name().to_path_buf()));
        }
        if p == Path::new("-") {
            return Ok((
                Box::new(BufReader::new(std::io::stdin())),
                PathBuf::from("<stdin>"),
            ));
        }
        let f = std::fs::File::open(p).map_err(|e| Error::io(p.to_path_buf(), "open", e))?;
        Ok((
            Box::new(BufReader::with_capacity(1 << 20, f)),
            p.to_path_buf(),
        ))
    }

    /// Learn IDF weights from the corpus's sample (`simdex::IdfSample`) in a first pass on all
    /// cores: every document is read and digested, only the sample's are tokenized. Inputs
    /// that can be read only once are copied first.
    pub fn learn_corpus_idf(&mut self) -> Result<Arc<IdfTable>> {
        self.spool_once_only_inputs()?;
        let h = Simhasher::new(
            SimhashOptions::default()
                .with_shingle(self.shingle)
                .with_weights(None),
        )?;
        let mut total = simdex::IdfSample::new(simdex::IdfSample::DOCS);
        self.silent_skips = true;
        let read = read_docs(self, |docs| {
            // Documents past what the sample already holds cannot enter it.
            let bound = total.bound().unwrap_or(u64::MAX);
            let part = docs
                .par_iter()
                .fold(
                    || simdex::IdfSample::new(simdex::IdfSample::DOCS),
                    |mut s, d| {
                        let digest = simdex::IdfSample::digest(&d.text);
                        if digest <= bound {
                            s.add(digest, || {
                                h.features(&d.text).into_iter().map(|(f, _)| f).collect()
                            });
                        } else {
                            s.skip();
                        }
                        s
                    },
                )
                .reduce(
                    || simdex::IdfSample::new(simdex::IdfSample::DOCS),
                    |mut a, b| {
                        a.merge(b);
                        a
                    },
                );
            total.merge(part);
            Ok(())
        });
        self.silent_skips = false;
        read?;
        let t = Arc::new(total.finish(self.shingle));
        self.corpus_idf = Some(Arc::clone(&t));
        Ok(t)
    }

    /// The weights of `--idf FILE`, if given; an error unless they are of `shingle`-shingles.
    pub fn idf_file(&self, shingle: usize) -> Result<Option<Arc<IdfTable>>> {
        let Some(p) = &self.idf else { return Ok(None) };
        let text = std::fs::read_to_string(p).map_err(|e| Error::io(p.clone(), "read", e))?;
        let t = IdfTable::decode(&text).map_err(|e| e.with_path(p))?;
        if t.shingle() != shingle {
            return Err(Error::InvalidArgument(format!(
                "{} was learned with --shingle {}, not {shingle}",
                p.display(),
                t.shingle(),
            )));
        }
        Ok(Some(Arc::new(t)))
    }

    fn hasher(&self) -> Result<Simhasher> {
        let weights = match self.idf_file(self.shingle)? {
            None => self.corpus_idf.clone(),
            file => file,
        };
        Simhasher::new(
            SimhashOptions::default()
                .with_shingle(self.shingle)
                .with_weights(weights),
        )
    }
}

/// One input document.
pub struct Doc {
    /// The path, or the JSONL line's id.
    pub id: String,
    /// Plain text (HTML already reduced to its visible text).
    pub text: String,
}

/// The text of document `path` (`.gz` decompressed; bytes that are not UTF-8 replaced).
pub fn read_text(a: &DocArgs, path: &Path) -> Result<String> {
    let (f, _) = a.open_input(path)?;
    let mut bytes = Vec::new();
    let r = if path.extension().is_some_and(|x| x == "gz") {
        flate2::read::MultiGzDecoder::new(f).read_to_end(&mut bytes)
    } else {
        BufReader::new(f).read_to_end(&mut bytes)
    };
    r.map_err(|e| Error::io(path.to_path_buf(), "read", e))?;
    Ok(String::from_utf8_lossy(&bytes).into_owned())
}

/// Files under `p` (recursively, in name order), or `p` itself. `p` itself must exist; inside
/// a directory, what cannot be a document is skipped and reported in `skipped`: special files
/// (FIFOs, sockets, devices: reading one could block forever), dangling symbolic links,
/// directories that cannot be listed, and symbolic links back into a directory being walked.
fn walk(p: &Path, out: &mut Vec<PathBuf>, skipped: &mut Vec<Error>) -> Result<()> {
    let meta = std::fs::metadata(p).map_err(|e| Error::io(p.to_path_buf(), "open", e))?;
    let mut stack = Vec::new();
    walk_in(p, meta, out, skipped, &mut stack, true)
}

fn walk_in(
    p: &Path,
    meta: std::fs::Metadata,
    out: &mut Vec<PathBuf>,
    skipped: &mut Vec<Error>,
    stack: &mut Vec<(u64, u64)>,
    top: bool,
) -> Result<()> {
    use std::os::unix::fs::MetadataExt;
    let skip = |why: &str| {
        Error::io(
            p.to_path_buf(),
            "read",
            std::io::Error::other(why.to_string()),
        )
    };
    if meta.is_dir() {
        let id = (meta.dev(), meta.ino());
        if stack.contains(&id) {
            skipped.push(skip(
                "a symbolic link loop back into a directory being read",
            ));
            return Ok(());
        }
        let listed = std::fs::read_dir(p).and_then(|rd| {
            rd.map(|e| e.map(|e| e.path()))
                .collect::<std::io::Result<Vec<PathBuf>>>()
        });
        let mut entries = match listed {
            Ok(v) => v,
            Err(e) if !top => {
                skipped.push(Error::io(p.to_path_buf(), "list", e));
                return Ok(());
            }
            Err(e) => return Err(Error::io(p.to_path_buf(), "list", e)),
        };
        entries.sort();
        stack.push(id);
        for e in entries {
            match std::fs::metadata(&e) {
                Ok(m) => walk_in(&e, m, out, skipped, stack, false)?,
                Err(err) => skipped.push(Error::io(e.clone(), "open", err)),
            }
        }
        stack.pop();
    } else if meta.is_file() || top {
        // A special file named on the command line is read: the user asked for it.
        out.push(p.to_path_buf());
    } else {
        skipped.push(skip("not a regular file (FIFO, socket or device)"));
    }
    Ok(())
}

/// Read every document, hash them on all cores, and call `emit(fingerprint, doc)` in input
/// order; the fingerprint is `None` for a document without any feature. Returns (documents,
/// bad lines skipped).
pub fn for_each_doc(
    a: &DocArgs,
    mut emit: impl FnMut(Option<u64>, &Doc) -> Result<()>,
) -> Result<(u64, u64)> {
    for_each_doc_with(
        a,
        |h, d| (h.try_hash_text(&d.text), ()),
        |fp, (), d| emit(fp, d),
    )
}

/// [`for_each_doc`] where `hash(hasher, doc)` computes, on all cores, the fingerprint and
/// whatever else the caller wants of the document (from the same tokens, if it likes).
pub fn for_each_doc_with<X: Send>(
    a: &DocArgs,
    hash: impl Fn(&Simhasher, &Doc) -> (Option<u64>, X) + Sync,
    mut emit: impl FnMut(Option<u64>, X, &Doc) -> Result<()>,
) -> Result<(u64, u64)> {
    let hasher = a.hasher()?;
    read_docs(a, |docs| {
        let fps: Vec<(Option<u64>, X)> = docs.par_iter().map(|d| hash(&hasher, d)).collect();
        fps.into_iter()
            .zip(&docs)
            .try_for_each(|((fp, x), d)| emit(fp, x, d))
    })
}

/// Read every document in input order, a chunk at a time (with --html, `text` is already the
/// visible text, extracted on all cores). Returns (documents, bad lines skipped).
pub fn read_docs(a: &DocArgs, mut chunk: impl FnMut(Vec<Doc>) -> Result<()>) -> Result<(u64, u64)> {
    let pb = crate::progress::bar(!a.quiet, None, "documents");
    let (mut n, mut bad) = (0u64, 0u64);
    // A bad line or file is reported and skipped, or fatal with --strict.
    let report = |e: Error, bad: &mut u64| -> Result<()> {
        if a.strict {
            return Err(e);
        }
        *bad += 1;
        if !a.silent_skips {
            pb.suspend(|| eprintln!("simdex: warning: skipped {e}"));
        }
        Ok(())
    };
    let mut run = |mut docs: Vec<Doc>, n: &mut u64| -> Result<()> {
        if a.html {
            docs.par_iter_mut()
                .for_each(|d| d.text = simdex::Simhasher::visible_text(&d.text));
        }
        *n += docs.len() as u64;
        chunk(docs)?;
        pb.set_position(*n);
        Ok(())
    };
    if a.jsonl {
        for p in &a.paths {
            let (reader, name) = a.open_input(p)?;
            let reader: Box<dyn BufRead + Send> = match name.extension().is_some_and(|x| x == "gz")
            {
                true => Box::new(BufReader::with_capacity(
                    1 << 20,
                    flate2::read::MultiGzDecoder::new(reader),
                )),
                false => reader,
            };
            // Lines as bytes: one that is not UTF-8 is a bad line like any other, not the end of
            // the file.
            let mut lines = reader.split(b'\n').enumerate();
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
                    match simdex::raw::Line::parse_bytes(&line) {
                        simdex::raw::Line::Doc { id, text } => docs.push(Doc { id, text }),
                        simdex::raw::Line::Bad(msg) => {
                            let e = Error::Parse {
                                path: Some(name.clone()),
                                location: format!("line {no}"),
                                message: msg,
                            };
                            report(e, &mut bad)?;
                        }
                        _ => {} // blank
                    }
                }
                run(docs, &mut n)?;
            }
        }
    } else {
        let mut files = Vec::new();
        let mut stdin_doc = false;
        let mut skipped = Vec::new();
        for p in &a.paths {
            if p == Path::new("-") {
                stdin_doc = true;
            } else {
                walk(p, &mut files, &mut skipped)?;
            }
        }
        for e in skipped {
            report(e, &mut bad)?;
        }
        if stdin_doc {
            let text = read_text(a, Path::new("-"))?;
            run(
                vec![Doc {
                    id: "-".into(),
                    text,
                }],
                &mut n,
            )?;
        }
        for chunk in files.chunks(256) {
            let read: Vec<Result<Doc>> = chunk
                .par_iter()
                .map(|p| {
                    let id = p.display().to_string();
                    if id.contains(['\t', '\n']) {
                        // Ids are written as tab-separated columns.
                        return Err(Error::Parse {
                            path: None,
                            location: format!("file {id:?}"),
                            message: "its path contains a tab or newline (ids are written \
                                      as tab-separated columns): rename it"
                                .into(),
                        });
                    }
                    Ok(Doc {
                        id,
                        text: read_text(a, p)?,
                    })
                })
                .collect();
            let mut docs = Vec::with_capacity(read.len());
            for d in read {
                match d {
                    Ok(d) => docs.push(d),
                    Err(e) => report(e, &mut bad)?,
                }
            }
            run(docs, &mut n)?;
        }
    }
    pb.finish_and_clear();
    Ok((n, bad))
}
