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

use rayon::prelude::*;
use simdex::dedup::Tokens;
use simdex::dedup::{Candidates, Clusters, Folder, PairSpill, Passes};

/// Verification of the candidate pairs in passes over the input, each holding at most `budget`
/// bytes of shingle sets ([`Passes`]); `ords` is each row's position among the documents read.
/// One pass when the sets fit.
fn verify_in_passes(
    docs: &mut crate::docs::DocArgs,
    pairs: &[(u32, u32, u32)],
    ords: &[u64],
    tokens: Tokens,
    t: f64,
    budget: u64,
) -> Result<Vec<(u32, u32, u32, f64)>> {
    let n = ords.len();
    let mut passes = Passes::new(pairs, n, t, budget);
    docs.silent_skips = true;
    let result = (|| {
        while passes.pending() {
            let (mut row, mut base) = (0usize, 0u64);
            crate::docs::read_docs(docs, |chunk| {
                let stop = base + chunk.len() as u64;
                let first = row;
                while row < n && ords[row] < stop {
                    row += 1;
                }
                // The sets this chunk's rows may need, on all cores, then offered in order.
                let sets: Vec<(usize, Vec<u64>)> = (first..row)
                    .into_par_iter()
                    .filter(|&r| passes.wants(r))
                    .map(|r| {
                        let text = &chunk[(ords[r] - base) as usize].text;
                        (
                            r,
                            simdex::dedup::shingle_set_with(
                                text,
                                simdex::dedup::Tokens::TRUTH_SHINGLE,
                                tokens,
                            ),
                        )
                    })
                    .collect();
                for (r, set) in sets {
                    passes.offer(r, set);
                }
                base = stop;
                Ok(())
            })?;
            if row < n {
                return Err(Error::InvalidArgument(
                    "the input changed between its readings (fewer documents the next time)".into(),
                ));
            }
            passes.end_pass();
        }
        Ok(())
    })();
    docs.silent_skips = false;
    result?;
    Ok(passes.finish())
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
    // Each fingerprinted document's position in the input (for a second pass).
    let mut ords: Vec<u64> = Vec::new();
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
    // Verification's prefix filter: each document's prefix (a tenth of its shingle set at
    // Jaccard 0.9), from its set computed beside its fingerprint; sets are handed over in
    // groups, the first large enough to order them all (dedup::prefix).
    let mut prefixes = verify.map(simdex::dedup::Prefixes::new).transpose()?;
    let mut folder = verify.map(|_| Folder::new());
    let mut sets: Vec<Vec<u64>> = Vec::new();
    let tokens = a.verify_tokens;
    let want_sets = verify.is_some();
    // Documents without any feature (empty, punctuation only) all hash to 0 and would all pair
    // with each other: they take no part (counted in the summary).
    let mut ord = 0u64;
    let (_, bad) = for_each_doc_with(
        &a.docs,
        |h, d| {
            if want_sets {
                let (fp, set) = simdex::dedup::hash_and_set(h, &d.text, tokens);
                (fp, Some(set))
            } else {
                (h.try_hash_text(&d.text), None)
            }
        },
        |fp, set, d| {
            match fp {
                Some(fp) => {
                    ids.push(&d.id);
                    // Verification folds identical documents into one candidate row.
                    let row = match (&mut folder, &set) {
                        (Some(f), Some(set)) => f.offer(fp, set),
                        _ => true,
                    };
                    if row {
                        fps.push(fp);
                        if want_sets {
                            ords.push(ord);
                        }
                    }
                    if let (Some(p), Some(set), true) = (&mut prefixes, set, row) {
                        sets.push(set);
                        if sets.len() >= simdex::dedup::Prefixes::ORDER_SAMPLE {
                            p.push(&sets)?;
                            sets.clear();
                        }
                    }
                }
                None => featureless += 1,
            }
            ord += 1;
            Ok(())
        },
    )?;
    if let Some(p) = &mut prefixes {
        p.push(&sets)?;
        drop(std::mem::take(&mut sets));
    }
    // Documents by fingerprint, and pairs of distinct fingerprints from the index self-join.
    let tmp = match &a.out {
        Some(p) => p
            .parent()
            .filter(|p| !p.as_os_str().is_empty())
            .map_or_else(|| PathBuf::from("."), Path::to_path_buf),
        None => std::env::temp_dir(),
    };
    let progress = crate::progress::handle(!a.docs.quiet);
    if let (Some(t), Some(prefixes), Some(folder)) = (verify, &prefixes, folder) {
        // Verification: the exact Jaccard of every candidate pair that the prefixes let
        // through, a batch at a time (the pairs may take half of --mem, the shingle sets of a
        // pass the rest). Rows are groups of identical documents (verified among themselves
        // without a merge); a verified pair of rows stands for all pairs of their members.
        // Clusters are joined as pairs are verified; pairs are spilled in order (a group of
        // near-copies has quadratically many: holding them took 726 MiB for 5 000 copies).
        let groups = folder.finish();
        let mut components = a.clusters.then(|| Clusters::new(groups.docs()));
        let mut listed = (!a.clusters).then(|| PairSpill::new(&tmp, a.mem / 16));
        let mut kept = 0u64;
        let mut passed = 0u64;
        // What is held throughout besides the candidates: the ids, fingerprints and groups, and
        // the pairs waiting for their turn in the output.
        let held = ids.memory_bytes()
            + (fps.capacity() + ords.capacity()) as u64 * 8
            + groups.memory_bytes()
            + listed.as_ref().map_or(0, PairSpill::memory_bytes);
        let mut emit = |x: u32, y: u32, d: u32, jac: f64| -> Result<()> {
            kept += 1;
            match (&mut components, &mut listed) {
                (Some(c), _) => c.join(x as usize, y as usize),
                (_, Some(l)) => l.push((x, y, d, jac))?,
                _ => {}
            }
            Ok(())
        };
        for (x, y) in groups.within() {
            emit(x, y, 0, 1.0)?;
        }
        Candidates::verify_all(
            &fps,
            k,
            &tmp,
            a.mem,
            held,
            prefixes,
            &progress,
            |batch, sets| {
                passed += batch.len() as u64;
                let v = verify_in_passes(&mut a.docs, &batch, &ords, a.verify_tokens, t, sets)?;
                for (i, j, d, jac) in v {
                    for (x, y) in groups.expand(i, j) {
                        emit(x, y, d, jac)?;
                    }
                }
                Ok(())
            },
        )?;
        match (&mut components, listed) {
            (Some(c), _) => write_clusters(&a, c, &ids)?,
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
            let mut distinct = fps.clone();
            distinct.par_sort_unstable();
            distinct.dedup();
            let folded = match groups.folded() {
                0 => String::new(),
                n => format!(", {n} identical to an earlier one"),
            };
            eprintln!(
                "{} documents{folded}, {} distinct fingerprints{}; verified: {passed} candidate \
                 pairs (within k = {k}, sharing a prefix shingle), {} pairs of documents with \
                 word 3-shingle Jaccard >= {t} ({:.2?} in all)",
                groups.docs() as u64 + featureless,
                distinct.len(),
                skipped_note(featureless, bad),
                kept,
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
