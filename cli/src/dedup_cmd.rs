//! `simdex dedup`: every near-duplicate pair (or cluster) of a corpus.

use std::io::Write;
use std::path::{Path, PathBuf};

use simdex::{Error, Result};

use crate::docs::*;
use crate::names::Names;

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
    /// Memory budget: the documents' names and fingerprints, then the index build, and with
    /// --verify its candidate pairs (at most half: more are verified a batch at a time) and the
    /// shingle sets of a pass (more than fit take more passes over the input). The program and
    /// the input being parsed take about 60 MiB more.
    #[arg(long, default_value = "1G", value_parser = crate::util::parse_size)]
    pub mem: u64,
    /// Exact answers: keep only the candidate pairs (fingerprints within --candidate-k) whose
    /// word 3-shingle sets have Jaccard >= T, as `jaccard:T` (e.g. jaccard:0.9). Pairs then
    /// carry a fourth column, their Jaccard; clusters are built from verified pairs only.
    #[arg(long, value_parser = parse_verify)]
    pub verify: Option<f64>,
    /// Feature weights: auto (idf learned from the corpus in a first pass; count with
    /// --verify), count, or idf. Ignored with --idf FILE, whose weights are used.
    #[arg(long, value_enum, default_value_t = Weights::Auto)]
    pub weights: Weights,
    /// Candidate distance when verifying (0..=16). Default 11: on template-heavy pages,
    /// near-duplicates at Jaccard 0.9 lie up to 10-12 bits apart (measured; docs/log/benchmarks.md).
    /// Only candidates that may reach the threshold are compared: those whose prefixes (the
    /// rarest tenth of their shingles at 0.9) share a shingle, found from the prefixes or, where
    /// many documents share prefix shingles, from the fingerprints (an in-memory join over
    /// blocks of bits above 7, the index self-join at 7 or below). The same answers as
    /// comparing every pair within this distance.
    #[arg(long, value_parser = clap::value_parser!(u32).range(0..=16))]
    pub candidate_k: Option<u32>,
    /// How --verify cuts texts into words for its 3-shingles: unicode (the fingerprint's
    /// tokens: NFKC, lowercase, Unicode words) or whitespace (split at white space, as written:
    /// what most truth sets and MinHash tools use). Specified in format-spec/simhash.md.
    #[arg(long, default_value = "unicode", value_parser = parse_tokens)]
    pub verify_tokens: Tokens,
}

fn parse_tokens(s: &str) -> std::result::Result<Tokens, String> {
    s.parse().map_err(|e: Error| e.to_string())
}

use simdex::dedup::{Candidates, Clusters, PairSpill, TextPasses, Tokens, VerifiedDedup};

/// The input read again for verification, as often as it asks (bad lines skipped silently:
/// they were reported on the first reading).
struct Reread<'a>(&'a mut crate::docs::DocArgs);

impl TextPasses for Reread<'_> {
    fn pass(
        &mut self,
        _want: &dyn Fn(u64) -> bool,
        f: &mut dyn FnMut(u64, &[&str]) -> Result<()>,
    ) -> Result<()> {
        self.0.silent_skips = true;
        let mut base = 0u64;
        let read = crate::docs::read_docs(self.0, |chunk| {
            let texts: Vec<&str> = chunk.iter().map(|d| d.text.as_str()).collect();
            f(base, &texts)?;
            base += chunk.len() as u64;
            Ok(())
        });
        self.0.silent_skips = false;
        read.map(|_| ())
    }
}

fn skipped_note(featureless: u64, bad: u64) -> String {
    let mut note = String::new();
    if featureless > 0 {
        note.push_str(&format!(
            "; {featureless} documents without any word left out"
        ));
    }
    if bad > 0 {
        note.push_str(&format!("; skipped {bad} bad lines"));
    }
    note
}

/// Write the output to --out (atomically) or standard output, a line at a time.
fn write_lines(a: &DedupArgs, f: impl FnOnce(&mut dyn Write) -> Result<()>) -> Result<()> {
    match &a.out {
        Some(p) => crate::output::write_output(p, |w| {
            f(w).map_err(|e| match e {
                Error::Io {
                    path: None,
                    op: "write",
                    source,
                } => Error::io(p.clone(), "write", source),
                e => e,
            })
        }),
        None => {
            let mut w = crate::util::stdout();
            f(&mut w).map_err(|e| match e {
                Error::Io {
                    path: None,
                    op: "write",
                    source,
                } => crate::util::out_err(source),
                e => e,
            })?;
            crate::util::flush(&mut w)
        }
    }
}

/// A line of output (an I/O error without a path: [`write_lines`] names the output).
fn line(w: &mut dyn Write, args: std::fmt::Arguments) -> Result<()> {
    w.write_fmt(args).map_err(|e| Error::io(None, "write", e))
}

/// `jaccard:T` with T in (0, 1].
pub fn parse_verify(s: &str) -> std::result::Result<f64, String> {
    s.strip_prefix("jaccard:")
        .and_then(|t| t.parse::<f64>().ok())
        .filter(|t| *t > 0.0 && *t <= 1.0)
        .ok_or_else(|| format!("{s:?} is not jaccard:T with T in (0, 1]"))
}

/// One line of tab-separated ids per cluster of two or more documents, in order of their first
/// member.
fn write_clusters(a: &DedupArgs, c: &mut Clusters, ids: &Names) -> Result<()> {
    let groups = c.groups();
    write_lines(a, |w| {
        for members in groups {
            let names: Vec<&str> = members.iter().map(|&i| &ids[i]).collect();
            line(w, format_args!("{}\n", names.join("\t")))?;
        }
        Ok(())
    })
}

/// Run `dedup`: every near-duplicate pair `id_a<TAB>id_b<TAB>distance` (input order), or the
/// clusters.
pub fn dedup(mut a: DedupArgs) -> Result<()> {
    if a.k > 7 {
        return Err(Error::InvalidArgument(format!(
            "k = {} is not in 0..=7",
            a.k
        )));
    }
    if let Some(out) = &a.out {
        crate::output::check_output(out)?;
    }
    let started = std::time::Instant::now();
    let want_idf = a.docs.idf.is_none()
        && match a.weights {
            Weights::Count => false,
            Weights::Idf => true,
            Weights::Auto => a.verify.is_none(),
        };
    if want_idf {
        a.docs.learn_corpus_idf()?;
    }
    let mut fps = Vec::new();
    let mut ids = Names::default();
    let mut featureless = 0u64;
    let verify = a.verify;
    let k = match verify {
        Some(_) => a
            .candidate_k
            .unwrap_or(simdex::dedup::Candidates::DEFAULT_CANDIDATE_K),
        None => a.k,
    };
    if verify.is_some() {
        // Verification reads the candidates' texts again.
        a.docs.spool_once_only_inputs()?;
    }
    // Verification is the library's: each document's fingerprint and shingle set, from one
    // tokenizing, handed over in input order.
    let tokens = a.verify_tokens;
    let mut verified = verify
        .map(|t| VerifiedDedup::new(t, k, tokens))
        .transpose()?;
    let want_sets = verify.is_some();
    // Documents without any feature (empty, punctuation only) all hash to 0 and would all pair
    // with each other: they take no part (counted in the summary).
    let (_, bad) = for_each_doc_with(
        &a.docs,
        |h, d| {
            if want_sets {
                let (fp, set) = tokens.hash_and_set(h, &d.text);
                (fp, Some(set))
            } else {
                (h.try_hash_text(&d.text), None)
            }
        },
        |fp, set, d| {
            match (fp, &mut verified) {
                (Some(fp), Some(v)) => {
                    ids.push(&d.id);
                    v.push(Some((fp, set.unwrap_or_default())))?;
                }
                (Some(fp), None) => {
                    ids.push(&d.id);
                    fps.push(fp);
                }
                (None, Some(v)) => v.push(None)?, // counted by the verifier
                (None, None) => featureless += 1,
            }
            Ok(())
        },
    )?;
    let tmp = match &a.out {
        Some(p) => p
            .parent()
            .filter(|p| !p.as_os_str().is_empty())
            .map_or_else(|| PathBuf::from("."), Path::to_path_buf),
        None => std::env::temp_dir(),
    };
    let progress = crate::progress::handle(!a.docs.quiet);
    if let (Some(t), Some(v)) = (verify, verified) {
        // Clusters, or the pairs in order through a spill (a group of near-copies has
        // quadratically many: holding them took 726 MiB for 5 000 copies).
        let held = ids.memory_bytes();
        let mem = a.mem;
        let mut out = v.run(
            &mut Reread(&mut a.docs),
            &tmp,
            mem,
            held,
            &progress,
            a.clusters,
            !a.clusters,
        )?;
        match (out.clusters.take(), out.pairs.take()) {
            (Some(mut c), _) => write_clusters(&a, &mut c, &ids)?,
            (_, Some(l)) => write_lines(&a, |w| {
                l.finish(|(i, j, d, jac)| {
                    line(
                        w,
                        format_args!(
                            "{}\t{}\t{d}\t{jac:.4}\n",
                            &ids[i as usize], &ids[j as usize]
                        ),
                    )
                })
            })?,
            _ => {}
        }
        if !a.docs.quiet {
            let s = &out;
            let folded = match s.folded {
                0 => String::new(),
                n => format!(", {n} identical to an earlier one"),
            };
            eprintln!(
                "{} documents{folded}, {} distinct fingerprints{}; verified: {} candidate \
                 pairs (within k = {k}, sharing a prefix shingle), {} pairs of documents with \
                 word 3-shingle Jaccard >= {t} ({:.2?} in all)",
                s.documents,
                s.distinct,
                skipped_note(s.featureless, bad),
                s.candidates,
                s.verified,
                started.elapsed()
            );
        }
        return Ok(());
    }
    // The budget left once the names and fingerprints are held.
    let held = ids.memory_bytes() + fps.capacity() as u64 * 8;
    if held >= a.mem {
        return Err(Error::InvalidArgument(format!(
            "--mem {} MiB is too small for {} documents: their names and fingerprints alone take \
             {} MiB",
            a.mem >> 20,
            fps.len(),
            held.div_ceil(1 << 20)
        )));
    }
    let cand = Candidates::new(&fps, None, k, &tmp, a.mem - held, &progress)?;
    // Pairs mode lists every pair (quadratic in the size of a group of equal fingerprints), in
    // batches put in order through a spill; clusters mode only unions groups, so large
    // duplicate groups cost nothing extra.
    let mut listed = 0u64;
    if a.clusters {
        write_clusters(&a, &mut cand.clusters()?, &ids)?;
    } else {
        let mut spill = PairSpill::new(&tmp, a.mem / 4);
        let max_pairs = (a.mem / 4 / simdex::dedup::Candidates::PAIR_BYTES).max(1);
        cand.batches(max_pairs, &progress, |batch| {
            batch
                .into_iter()
                .try_for_each(|(i, j, d)| spill.push((i, j, d, 0.0)))
        })?;
        listed = spill.len();
        write_lines(&a, |w| {
            spill.finish(|(i, j, d, _)| {
                line(
                    w,
                    format_args!("{}\t{}\t{d}\n", &ids[i as usize], &ids[j as usize]),
                )
            })
        })?;
    }
    if !a.docs.quiet {
        let count = match a.clusters {
            false => listed,
            true => cand.pair_count()?,
        };
        eprintln!(
            "{} documents, {} distinct fingerprints, {} pairs within k = {}{}",
            fps.len() as u64 + featureless,
            cand.distinct(),
            count,
            k,
            skipped_note(featureless, bad)
        );
    }
    Ok(())
}
