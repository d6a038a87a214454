//! Documents in, verified answers out: the document-level operations of a document store
//! (one created with a [`Recipe`]). "Is this new?" for each document, against everything
//! stored before it — including earlier documents of the same call — decided by fingerprints
//! within k and, with verification, by the stored sketches' Jaccard estimate; or, in a store
//! that keeps shingle sets, by exact Jaccard over every stored document sharing a prefix
//! shingle (`super::prefix`).
//!
//! Data path of [`Store::ingest`], a chunk of documents at a time:
//!
//! ```text
//! texts ─► recipe: fingerprint + sketch (all cores)
//!       ─► store: fingerprints within k, their documents' sketches, similarity (all cores)
//!       ─► in order: the best match, or a match among the call's earlier new documents
//!          (the group's in a pigeonhole index, see `super::scratch`)
//!       ─► new documents are put (one log record per 256), duplicates are not
//! ```
//!
//! The answers are those of feeding the documents one at a time, so they do not depend on how
//! the input is split into calls (tested).

use std::collections::HashSet;
use std::sync::Arc;

use rayon::prelude::*;

use super::candidate::{Candidate, Compared, Exact, better, same_version, similarity};
use super::docs::DocMeta;
use super::keys::{DocId, Slots, caller_id};
use super::scratch::Scratch;
use super::sets::DocSet;
use super::wal::Put;
use super::*;
use crate::error::{Error, Result};

/// Documents per chunk: the unit of parallel hashing and querying.
const CHUNK: usize = 4096;
/// One document: its id and its text (or HTML, as the store's recipe says).
#[derive(Debug, Clone, Copy)]
pub struct Document<'a> {
    /// The id.
    pub id: &'a DocId,
    /// The text.
    pub text: &'a str,
}

/// How documents are checked.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
#[non_exhaustive]
pub struct IngestOptions {
    /// Candidates are stored fingerprints within this distance (`None`: the store's k).
    pub k: Option<u32>,
    /// Verification: a duplicate must have Jaccard similarity of word 3-shingles at least this
    /// with its match (`None`: every candidate within k is one). Exact in a store that keeps
    /// shingle sets ([`Recipe::with_exact`], at or above its threshold: then every stored
    /// document is a candidate, whatever k), else the sketches' estimate.
    pub verify: Option<f64>,
    /// Compare each document with the stored ones only, not with the earlier new documents of
    /// the same call (for callers that dedup the batch themselves, such as the Spark job's
    /// partitions, whose order is arbitrary).
    pub store_only: bool,
}

impl IngestOptions {
    /// Candidates within `k` bits.
    pub fn with_k(mut self, k: Option<u32>) -> Self {
        self.k = k;
        self
    }
    /// Verify candidates: estimated Jaccard at least `t` (0..=1).
    pub fn with_verify(mut self, t: Option<f64>) -> Self {
        self.verify = t;
        self
    }
    /// Compare with the stored documents only (see [`IngestOptions::store_only`]).
    pub fn with_store_only(mut self, store_only: bool) -> Self {
        self.store_only = store_only;
        self
    }
}

/// The answer for one document.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Verdict {
    /// Nothing stored before it is a near-duplicate: it is new (and [`Store::ingest`] stored it).
    New,
    /// A near-duplicate of a document stored before it: the most similar one.
    Duplicate {
        /// The stored document's id.
        id: DocId,
        /// Jaccard similarity of word 3-shingles: exact in a store that keeps shingle sets,
        /// else the sketches' estimate.
        similarity: f64,
        /// Hamming distance of the fingerprints.
        distance: u32,
    },
    /// A document without words: nobody's near-duplicate, and not stored.
    Empty,
    /// The same document (same fingerprint, sketch and, in an exact store, shingle set) is
    /// already stored under this id: a retry of an earlier call, not a near-duplicate of
    /// anything, and not stored again. A changed document under a stored id replaces it
    /// instead, and is never compared with its own old version.
    AlreadyStored,
}

/// What a document store adds to a store: its recipe, and the order of its document writes.
#[derive(Debug)]
pub(super) struct DocState {
    /// The recipe (`None`: a store of raw fingerprints).
    pub(super) recipe: Option<Recipe>,
    /// Held by a call that puts documents from its check to its write, so that concurrent
    /// calls place ids (and decide what replaces what) one after the other.
    pub(super) writes: Mutex<()>,
    /// The `seq` the next stored document gets (a store that verifies exactly).
    pub(super) next_seq: AtomicU64,
}

impl Store {
    /// A document store's recipe (`None` for a store of raw fingerprints).
    pub fn recipe(&self) -> Option<&Recipe> {
        self.docs.recipe.as_ref()
    }

    fn need_recipe(&self) -> Result<&Recipe> {
        self.docs.recipe.as_ref().ok_or_else(|| {
            Error::InvalidArgument(format!(
                "{} stores raw fingerprints: documents need a store created with a recipe \
                 (`simdex ingest` creates one)",
                self.dir.display()
            ))
        })
    }

    internal_fn! {
        /// The document stored under the store's numeric id `id`, if any.
        fn doc(&self, id: u64) -> Result<Option<DocMeta>> {
            Ok(self.docs_of(&[id])?.pop().flatten())
        }
    }

    /// The string id the document under the store's numeric id `id` was stored with (`None`
    /// where there is no document, or its caller gave a number): how answers name it.
    pub fn doc_key(&self, id: u64) -> Result<Option<Arc<str>>> {
        Ok(self.doc(id)?.and_then(|d| d.key))
    }

    /// The documents of `ids`, in order, under one look at the store's state.
    pub(super) fn docs_of(&self, ids: &[u64]) -> Result<Vec<Option<DocMeta>>> {
        let st = self.read_state();
        let layers = st.layers();
        ids.iter()
            .map(|&id| {
                for layer in layers.iter().rev() {
                    if let Some(d) = layer.doc(id) {
                        return Ok(d.cloned());
                    }
                }
                match st.generation.docs() {
                    Some(m) => m.get(id).map_err(|e| st.generation.docs_error(e)),
                    None => Ok(None),
                }
            })
            .collect()
    }

    /// Build now what the first document check would otherwise build on its way: in a store
    /// that verifies exactly, its generation's prefix index, read from every stored set (seconds
    /// per million documents). A service calls it before it takes requests, so that its first
    /// answer does not wait; answers are the same either way. Nothing to do in other stores.
    pub fn warm(&self) -> Result<()> {
        let (generation, prefixer) = {
            let st = self.read_state();
            (Arc::clone(&st.generation), st.active.prefixer().cloned())
        };
        match prefixer {
            Some(p) => super::pool::install(|| generation.prefix_index(&p).map(drop)),
            None => Ok(()),
        }
    }

    /// Check documents without storing them: each against the store and the earlier new
    /// documents of the call — the verdicts [`Store::ingest`] would give.
    pub fn check_documents(
        &self,
        docs: &[Document<'_>],
        opts: &IngestOptions,
    ) -> Result<Vec<Verdict>> {
        self.documents(docs, opts, false)
    }

    /// Check each document against everything stored before it, including the earlier
    /// documents of this call, and store the new ones (put: a stored document with the same id
    /// is replaced). Duplicates and documents without words are not stored.
    pub fn ingest(&self, docs: &[Document<'_>], opts: &IngestOptions) -> Result<Vec<Verdict>> {
        self.check_writable()?;
        self.documents(docs, opts, true)
    }

    fn documents(
        &self,
        docs: &[Document<'_>],
        opts: &IngestOptions,
        store: bool,
    ) -> Result<Vec<Verdict>> {
        let recipe = self.need_recipe()?;
        let design_k = self.generation().index().design().k();
        let k = opts.k.unwrap_or(design_k);
        if k > design_k {
            return Err(Error::InvalidArgument(format!(
                "k = {k} is above the store's k = {design_k}"
            )));
        }
        if let Some(t) = opts.verify
            && !(0.0..=1.0).contains(&t)
        {
            return Err(Error::InvalidArgument(format!(
                "verification threshold {t} is not in 0..=1"
            )));
        }
        for (i, d) in docs.iter().enumerate() {
            d.id.check().map_err(|e| match e {
                Error::InvalidArgument(m) => {
                    Error::InvalidArgument(format!("document {i} of the call: {m}"))
                }
                e => e,
            })?;
        }
        // Exact verification where the store keeps shingle sets (at its threshold or above).
        let exact = match (opts.verify, self.read_state().active.prefixer().cloned()) {
            (Some(t), Some(p)) if t < p.t0 => {
                return Err(Error::InvalidArgument(format!(
                    "verification at {t} is below the {} this store keeps shingle sets for: \
                     verify at {} or above (exact), or use a store created for {t}",
                    p.t0, p.t0
                )));
            }
            (Some(t), Some(p)) => Some(Exact { t, p }),
            _ => None,
        };
        // Chunk j + 1 is hashed (which needs nothing from the store) while chunk j is checked
        // and written: the writes are sequential, and the second core would idle meanwhile.
        let hash = |c: &[Document<'_>]| -> Vec<Hashed> {
            c.par_iter().map(|d| recipe.hash(d.text)).collect()
        };
        let chunks: Vec<&[Document<'_>]> = docs.chunks(CHUNK).collect();
        // The loop runs on one of the pool's threads: its joins and parallel loops then split
        // work there, instead of each waking a pool thread while this one sleeps (measured:
        // a few percent of an ingest's CPU went to those wake-ups).
        let work = || {
            let seq = || self.docs.next_seq.load(std::sync::atomic::Ordering::Acquire);
            let mut scratch = Scratch::new(self.generation().layer_tables(), k, exact.clone(), seq());
            let mut out = Vec::with_capacity(docs.len());
            let mut hashed = chunks.first().map(|c| hash(c));
            for (j, chunk) in chunks.iter().enumerate() {
                if store {
                    scratch.restart(self.generation().layer_tables(), seq());
                }
                let this = hashed.take().unwrap_or_default();
                let (next, verdicts) = rayon::join(
                    || chunks.get(j + 1).map(|c| hash(c)),
                    || self.check_chunk(chunk, this, &mut scratch, k, opts, store),
                );
                out.extend(verdicts?);
                hashed = next;
            }
            Ok(out)
        };
        // Calls that store take turns, each holding `doc_writes` from its first check to its
        // last write, so that ids are placed (and replacements decided) one call after the
        // other; the lock is taken outside any pool (see `pool`).
        match store {
            true => super::pool::locked_install(&self.docs.writes, work),
            false => super::pool::install(work),
        }
    }

    /// The verdicts of one chunk (hashed), given the earlier new documents of the call in
    /// `scratch`; the new ones are added to it and, if `store`, put.
    fn check_chunk(
        &self,
        chunk: &[Document<'_>],
        hashed: Vec<Hashed>,
        scratch: &mut Scratch,
        k: u32,
        opts: &IngestOptions,
        store: bool,
    ) -> Result<Vec<Verdict>> {
        let verify = opts.verify;
        let shape = self.need_recipe()?.sketch_shape();
        let scratch_exact = scratch.exact.clone();
        // Per document, on all cores: where its id is stored now (if it is), and the stored
        // documents within k that pass verification, its own stored version set apart.
        let found: Vec<(Vec<Candidate>, Own, Option<Slots>)> = chunk
            .par_iter()
            .zip(&hashed)
            .map(|(d, h)| match h.fingerprint {
                Some(fp) => {
                    let slots = self.slots(d.id)?;
                    let own = match slots.place(d.id, &|_| None)? {
                        (n, true) => Some(n),
                        (_, false) => None,
                    };
                    let (cands, own) = match &scratch_exact {
                        Some(e) => {
                            let set = h.set.as_deref().unwrap_or(&[]);
                            let prefix = h.prefix.as_deref().unwrap_or(&[]);
                            self.candidates_exact(fp, (set, prefix), &h.sketch, e, own)?
                        }
                        None => {
                            let me = (&h.sketch[..], h.set.as_deref());
                            self.candidates(fp, me, k, verify, shape, own)?
                        }
                    };
                    Ok((cands, own, Some(slots)))
                }
                None => Ok((Vec::new(), Own::default(), None)),
            })
            .collect::<Result<_>>()?;
        let mut out = Vec::with_capacity(chunk.len());
        let mut puts: Vec<Put> = Vec::new();
        let now = super::sets::now_ms();
        let mut replaced: HashSet<u64> = HashSet::new();
        for ((d, h), (cands, own_stored, slots)) in chunk.iter().zip(hashed).zip(found) {
            let (Some(fp), Some(slots)) = (h.fingerprint, slots) else {
                out.push(Verdict::Empty);
                continue;
            };
            // Its slots as read beside its candidates: a storing call writes at the chunk's end
            // and holds `doc_writes` meanwhile, so the store has not changed since.
            let (n, exists) = match scratch.touches(slots.start()) {
                true => slots.place(d.id, &|n| scratch.holder(n))?,
                false => slots.place(d.id, &|_| None)?,
            };
            // Its latest stored version: one put earlier in this call, or the store's.
            let me = (fp, (&h.sketch[..], h.set.as_deref()));
            let same = exists
                && scratch
                    .same_as_latest(n, me)
                    .unwrap_or(own_stored.same);
            if same {
                out.push(Verdict::AlreadyStored);
                continue;
            }
            let own = exists.then_some(n);
            let from_store = cands
                .into_iter()
                .find(|c| !replaced.contains(&c.3) && Some(c.3) != own);
            let from_call = match (opts.store_only, &scratch_exact) {
                (true, _) => None,
                (false, Some(_)) => scratch.best_exact(
                    h.set.as_deref().unwrap_or(&[]),
                    h.prefix.as_deref().unwrap_or(&[]),
                    own,
                ),
                (false, None) => {
                    let me = (&h.sketch[..], h.set.as_deref());
                    scratch.best(self, fp, me, (k, verify, shape), own)?
                }
            };
            let best = [from_store, from_call].into_iter().flatten().min_by(better);
            if let Some((similarity, _, distance, _, id)) = best {
                out.push(Verdict::Duplicate {
                    id,
                    similarity,
                    distance,
                });
                continue;
            }
            out.push(Verdict::New);
            if opts.store_only && !store {
                continue; // nothing later in the call looks at it
            }
            if exists {
                replaced.insert(n);
            }
            let meta = DocMeta {
                key: match d.id {
                    DocId::Key(k) => Some(Arc::clone(k)),
                    DocId::Num(_) => None,
                },
                sketch: h.sketch,
                set: h.set.map(|hashes| {
                    Arc::new(DocSet {
                        fingerprint: fp,
                        seq: scratch.take_seq(),
                        time: now,
                        hashes: hashes.into(),
                    })
                }),
            };
            // What no compaction could write (a set beyond the store's bound) is refused before
            // it is logged: a log holding it would not open again.
            if let Some(set) = &meta.set {
                super::sets::check_set(&set.hashes)
                    .map_err(|e| Error::InvalidArgument(format!("document {}: {e}", d.id)))?;
            }
            scratch.put(fp, n, d.id.clone(), &meta, h.prefix.as_deref());
            puts.push(Put {
                fingerprint: fp,
                id: n,
                replaces: exists,
                doc: meta,
                prefix: h.prefix,
            });
        }
        if store && !puts.is_empty() {
            self.write(super::wal::doc_records(puts).into_iter())?;
            self.docs.next_seq
                .fetch_max(scratch.next_seq, std::sync::atomic::Ordering::AcqRel);
        }
        if !store {
            scratch.seal_group();
        }
        Ok(out)
    }

    /// The stored documents within `k` of `fp` that pass verification, best first, without
    /// `own` (the document's own stored version, if any), and whether `own` is the same
    /// document ([`Own::same`]).
    fn candidates(
        &self,
        fp: u64,
        (sketch, set): Compared<'_>,
        k: u32,
        verify: Option<f64>,
        shape: crate::dedup::sketch::SketchShape,
        own: Option<u64>,
    ) -> Result<(Vec<Candidate>, Own)> {
        let mut out = Vec::new();
        let mut mine = Own::default();
        let found: Vec<(u32, u64)> = self
            .near(fp, k)?
            .into_iter()
            .flat_map(|m| m.ids.into_iter().map(move |id| (m.distance, id)))
            .collect();
        let ids: Vec<u64> = found.iter().map(|&(_, id)| id).collect();
        for ((distance, id), doc) in found.into_iter().zip(self.docs_of(&ids)?) {
            let Some(doc) = doc else { continue };
            let theirs = (&doc.sketch[..], doc.set.as_ref().map(|s| &s.hashes[..]));
            if Some(id) == own {
                // At distance 0 the fingerprints are equal.
                mine.same = distance == 0 && same_version((fp, (sketch, set)), (fp, theirs));
                continue;
            }
            let sim = similarity(shape, (sketch, set), theirs)?;
            if verify.is_none_or(|t| sim >= t) {
                out.push((sim, distance.into(), distance, id, caller_id(id, &doc)));
            }
        }
        out.sort_by(better);
        Ok((out, mine))
    }
}

impl Store {
    /// Exact verification's candidates: every stored document sharing a prefix shingle with
    /// the document (`prefix`, its prefix at the store's threshold, whose first shingles are
    /// its prefix at `e.t`: a superset of those at Jaccard ≥ t, `super::prefix`), compared
    /// exactly; those at ≥ t, best first, without `own`, and whether `own` is the same
    /// document (found among them when it is: an identical set shares its prefix).
    ///
    /// The generation's candidates are read where its prefix index points, in `SETS` (the
    /// record names its document): the map is looked up only for the few that reach t, to
    /// check that the record is still the document's and to name it (measured: looking every
    /// candidate up in the map first was a third of an exact ingest's time).
    fn candidates_exact(
        &self,
        fp: u64,
        (set, prefix): (&[u64], &[u64]),
        sketch: &[u8],
        e: &Exact,
        own: Option<u64>,
    ) -> Result<(Vec<Candidate>, Own)> {
        let (query, need) = e.probe(set.len(), prefix);
        let st = self.read_state();
        let g = &st.generation;
        let layers = st.layers();
        let mut out = Vec::new();
        let mut mine = Own::default();
        let mut ats: Vec<u64> = Vec::new();
        g.prefix_index(&e.p)?.get_all(query, &mut ats);
        let ats = super::prefix::sharing(ats, need);
        if let Some(docs) = g.docs().filter(|_| !ats.is_empty()) {
            let err = |e| g.docs_error(e);
            let mut buf = Vec::new();
            // The map's entry of `id` if it still points to the record at `at`.
            let current = |id: u64, at: u64| -> Result<Option<DocMeta>> {
                Ok(match docs.entry(id).map_err(err)? {
                    Some((meta, Some(a))) if a == at => Some(meta),
                    _ => None,
                })
            };
            for at in ats {
                let h = docs.read_set(at, &mut buf).map_err(err)?;
                // Put again or deleted since: a layer's version (if any) is its own candidate.
                if layers.iter().any(|l| l.doc(h.id).is_some()) {
                    continue;
                }
                if Some(h.id) == own {
                    if let Some(meta) = current(h.id, at)? {
                        mine.same = same_version(
                            (fp, (sketch, Some(set))),
                            (h.fingerprint, (&meta.sketch, Some(&buf))),
                        );
                    }
                    continue;
                }
                // The rule of batch verification: a size filter, then a merge that stops once
                // the threshold is out of reach (most candidates share a prefix shingle and
                // little else).
                let Some(sim) = crate::dedup::verify::verify_pair(set, &buf, e.t) else {
                    continue;
                };
                if let Some(meta) = current(h.id, at)? {
                    let d = (fp ^ h.fingerprint).count_ones();
                    out.push((sim, h.seq, d, h.id, caller_id(h.id, &meta)));
                }
            }
        }
        // Put in a layer: their newest version (a token's ids may include one put again or
        // deleted since).
        let mut ids: Vec<u64> = Vec::new();
        for l in &layers {
            l.token_ids(query, &mut ids);
        }
        for id in super::prefix::sharing(ids, need) {
            let Some(doc) = layers.iter().rev().find_map(|l| l.doc(id)).flatten() else {
                continue;
            };
            let Some(s) = &doc.set else { continue };
            if Some(id) == own {
                mine.same = same_version(
                    (fp, (sketch, Some(set))),
                    (s.fingerprint, (&doc.sketch, Some(&s.hashes))),
                );
                continue;
            }
            if let Some(sim) = crate::dedup::verify::verify_pair(set, &s.hashes, e.t) {
                let d = (fp ^ s.fingerprint).count_ones();
                out.push((sim, s.seq, d, id, caller_id(id, doc)));
            }
        }
        out.sort_by(better);
        Ok((out, mine))
    }
}

/// What a document's check found of its own stored version.
#[derive(Debug, Default, Clone, Copy)]
struct Own {
    /// The stored version is the same version ([`same_version`]).
    same: bool,
}
