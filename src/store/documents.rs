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
//!          (the group's in a pigeonhole index, see `Scratch`)
//!       ─► new documents are put (one log record per 256), duplicates are not
//! ```
//!
//! The answers are those of feeding the documents one at a time, so they do not depend on how
//! the input is split into calls (tested).

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use rayon::prelude::*;

use super::delta::{Layer, SPAN_BITS};
use super::docs::{DocMeta, DocSet};
use super::keys::{DocId, Slots, caller_id};
use super::open::perms_of;
use super::pigeonhole::Pigeonhole;
use super::wal::Put;
use super::*;
use crate::error::{Error, Result};
use crate::index::probe::Work;

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
    /// The same document (same fingerprint and sketch) is already stored under this id: a
    /// retry of an earlier call, not a near-duplicate of anything, and not stored again. A
    /// changed document under a stored id replaces it instead, and is never compared with its
    /// own old version.
    AlreadyStored,
}

/// A candidate: (similarity, tie-break, distance, store id) and the caller's id. The tie-break
/// is the distance where similarities are sketch estimates, and the `seq` (when it was stored)
/// where they are exact.
type Candidate = (f64, u64, u32, u64, DocId);

/// Exact verification at `t`, with the store's prefix indexing.
#[derive(Clone)]
struct Exact {
    t: f64,
    p: Arc<super::prefix::Prefixer>,
}

impl Store {
    /// A document store's recipe (`None` for a store of raw fingerprints).
    pub fn recipe(&self) -> Option<&Recipe> {
        self.recipe.as_ref()
    }

    fn need_recipe(&self) -> Result<&Recipe> {
        self.recipe.as_ref().ok_or_else(|| {
            Error::InvalidArgument(format!(
                "{} stores raw fingerprints: documents need a store created with a recipe \
                 (`simdex ingest` creates one)",
                self.dir.display()
            ))
        })
    }

    /// The document stored under the store's numeric id `id`, if any.
    pub fn doc(&self, id: u64) -> Result<Option<DocMeta>> {
        Ok(self.docs_of(&[id])?.pop().flatten())
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
            let seq = || self.next_seq.load(std::sync::atomic::Ordering::Acquire);
            let mut scratch = Scratch::new(perms_of(&self.generation()), k, exact.clone(), seq());
            let mut out = Vec::with_capacity(docs.len());
            let mut hashed = chunks.first().map(|c| hash(c));
            for (j, chunk) in chunks.iter().enumerate() {
                if store {
                    scratch.restart(perms_of(&self.generation()), seq());
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
            true => super::pool::locked_install(&self.doc_writes, work),
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
                            self.candidates_exact(fp, set, &h.sketch, e, own)?
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
            let same = match scratch.latest(n) {
                Some((f, s)) => exists && f == fp && **s == *h.sketch,
                None => exists && own_stored.same,
            };
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
                (false, Some(_)) => scratch.best_exact(h.set.as_deref().unwrap_or(&[]), own),
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
                sketch: h.sketch.into(),
                set: h.set.map(|hashes| {
                    Arc::new(DocSet {
                        fingerprint: fp,
                        seq: scratch.take_seq(),
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
            scratch.put(fp, n, d.id.clone(), &meta);
            puts.push(Put {
                fingerprint: fp,
                id: n,
                replaces: exists,
                doc: meta,
            });
        }
        if store && !puts.is_empty() {
            self.write(super::wal::doc_records(puts).into_iter())?;
            self.next_seq
                .fetch_max(scratch.next_seq, std::sync::atomic::Ordering::AcqRel);
        }
        if !store {
            scratch.seal_group();
        }
        Ok(out)
    }

    /// The stored documents within `k` of `fp` that pass verification, best first, without
    /// `own` (the document's own stored version, if any), and whether `own` is the same
    /// document (same fingerprint and sketch).
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
            if Some(id) == own {
                mine.same = distance == 0 && *doc.sketch == *sketch;
                continue;
            }
            let theirs = (&doc.sketch[..], doc.set.as_ref().map(|s| &s.hashes[..]));
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
    /// `set` at `e.t` (a superset of those at Jaccard ≥ t, `super::prefix`), read back and
    /// compared exactly; those at ≥ t, best first, without `own`, and whether `own` is the
    /// same document (found among them when it is: an identical set shares its prefix).
    fn candidates_exact(
        &self,
        fp: u64,
        set: &[u64],
        sketch: &[u8],
        e: &Exact,
        own: Option<u64>,
    ) -> Result<(Vec<Candidate>, Own)> {
        let mut ids: Vec<u64> = Vec::new();
        {
            let st = self.read_state();
            let g = &st.generation;
            let layers = st.layers();
            for t in e.p.order.prefix(set, e.t) {
                ids.extend(g.prefix_ids(&e.p, t)?.iter().map(|x| x.1));
                for l in &layers {
                    ids.extend(l.token_ids(t));
                }
            }
        }
        ids.sort_unstable();
        ids.dedup();
        let mut out = Vec::new();
        let mut mine = Own::default();
        for (id, doc) in ids.iter().zip(self.docs_of(&ids)?) {
            let Some(doc) = doc else { continue };
            let Some(s) = &doc.set else { continue };
            if Some(*id) == own {
                mine.same = s.fingerprint == fp && *doc.sketch == *sketch;
                continue;
            }
            // The rule of batch verification: a size filter, then a merge that stops once the
            // threshold is out of reach (most candidates share a prefix shingle and little else).
            if let Some(sim) = crate::dedup::verify::verify_pair(set, &s.hashes, e.t) {
                let d = (fp ^ s.fingerprint).count_ones();
                out.push((sim, s.seq, d, *id, caller_id(*id, &doc)));
            }
        }
        out.sort_by(better);
        Ok((out, mine))
    }
}

/// What a document's check found of its own stored version.
#[derive(Debug, Default, Clone, Copy)]
struct Own {
    /// The stored version has the same fingerprint and sketch.
    same: bool,
}

/// What a document is compared by: its sketch, and its shingle set where the store keeps sets.
type Compared<'a> = (&'a [u8], Option<&'a [u64]>);

/// The similarity of two documents: the exact Jaccard of their shingle sets where both have
/// one, else their sketches' estimate.
fn similarity(
    shape: crate::dedup::sketch::SketchShape,
    a: Compared<'_>,
    b: Compared<'_>,
) -> Result<f64> {
    match (a.1, b.1) {
        (Some(x), Some(y)) => Ok(crate::dedup::verify::jaccard(x, y)),
        _ => shape.similarity(a.0, b.0),
    }
}

/// Best first: more similar, then the smaller tie-break (nearer; or stored earlier), then the
/// smaller id.
fn better(a: &Candidate, b: &Candidate) -> std::cmp::Ordering {
    b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)).then(a.3.cmp(&b.3))
}

/// The new documents of a call not yet in the store. Those of the current group of documents
/// are compared through a pigeonhole index of their fingerprints (or, for k > 8, a scan of
/// them; a group is at most 4096: cheaper than building a layer's tables for them, measured);
/// a check-only call longer than a group keeps the earlier groups' documents in a layer probed
/// like the store's delta.
struct Scratch {
    tables: Vec<(crate::Permutation, u32)>,
    /// Every new document of the call: (fingerprint, store id, caller's id, sketch, set).
    docs: Vec<CallDoc>,
    /// Exact verification: the call's documents by prefix shingle (indices into `docs`).
    exact: Option<Exact>,
    tokens: HashMap<u64, Vec<usize>>,
    /// The `seq` the call's next new document gets.
    next_seq: u64,
    /// The current group's fingerprints (`docs[older_len..]`), indexed, or for a k too large
    /// for that, scanned: contiguous, they fit in L1 (read out of `docs`, the scan strode over
    /// 48-byte entries).
    recent: Recent,
    /// Whether each is still the latest put of its store id.
    live: Vec<bool>,
    /// Store id → index in `docs` of its latest put.
    by_id: HashMap<u64, usize>,
    /// The spans of store ids (`n >> SPAN_BITS`) of `by_id`: a string id's window that touches
    /// none of them is placed without a lookup per id.
    spans: HashSet<u64>,
    /// `docs[..older_len]` are in `older` and not scanned.
    older: Option<Layer>,
    older_len: usize,
}

/// A new document of a call: (fingerprint, store id, caller's id, sketch, set).
type CallDoc = (u64, u64, DocId, Arc<[u8]>, Option<Arc<DocSet>>);

/// See [`Scratch::recent`].
enum Recent {
    Indexed(Pigeonhole),
    Scanned(Vec<u64>),
}

impl Scratch {
    fn new(
        tables: Vec<(crate::Permutation, u32)>,
        k: u32,
        exact: Option<Exact>,
        seq: u64,
    ) -> Scratch {
        Scratch {
            tables,
            docs: Vec::new(),
            exact,
            tokens: HashMap::new(),
            next_seq: seq,
            recent: match Pigeonhole::new(k) {
                Some(p) => Recent::Indexed(p),
                None => Recent::Scanned(Vec::new()),
            },
            live: Vec::new(),
            by_id: HashMap::new(),
            spans: HashSet::new(),
            older: None,
            older_len: 0,
        }
    }

    /// Empty again, for tables `tables`; the index keeps its memory (a group's heads are a
    /// megabyte at k = 3: allocating them afresh per group cost page faults).
    fn restart(&mut self, tables: Vec<(crate::Permutation, u32)>, seq: u64) {
        self.tables = tables;
        self.docs.clear();
        self.tokens.clear();
        self.next_seq = self.next_seq.max(seq);
        self.live.clear();
        self.by_id.clear();
        self.spans.clear();
        self.older = None;
        self.older_len = 0;
        self.clear_recent();
    }

    fn clear_recent(&mut self) {
        match &mut self.recent {
            Recent::Indexed(p) => p.clear(),
            Recent::Scanned(fps) => fps.clear(),
        }
    }

    fn put(&mut self, fp: u64, n: u64, id: DocId, doc: &DocMeta) {
        let i = self.docs.len();
        self.spans.insert(n >> SPAN_BITS);
        if let Some(old) = self.by_id.insert(n, i) {
            self.live[old] = false;
            if let Some(l) = self.older.as_mut().filter(|_| old < self.older_len) {
                l.delete(old as u64);
            }
        }
        if let (Some(e), Some(set)) = (&self.exact, &doc.set) {
            for t in e.p.indexed(&set.hashes) {
                self.tokens.entry(t).or_default().push(i);
            }
        }
        self.docs
            .push((fp, n, id, Arc::clone(&doc.sketch), doc.set.clone()));
        match &mut self.recent {
            Recent::Indexed(p) => p.push(fp),
            Recent::Scanned(fps) => fps.push(fp),
        }
        self.live.push(true);
    }

    /// False if the call put nothing among the `1 << SPAN_BITS` store ids from `start`.
    fn touches(&self, start: u64) -> bool {
        let end = start.wrapping_add((1 << SPAN_BITS) - 1);
        self.spans.contains(&(start >> SPAN_BITS)) || self.spans.contains(&(end >> SPAN_BITS))
    }

    /// The caller's id of the call's latest put of store id `n`, if any.
    fn holder(&self, n: u64) -> Option<DocId> {
        self.by_id.get(&n).map(|&i| self.docs[i].2.clone())
    }

    /// The fingerprint and sketch of the call's latest put of store id `n`, if any.
    fn latest(&self, n: u64) -> Option<(u64, &Arc<[u8]>)> {
        self.by_id
            .get(&n)
            .map(|&i| (self.docs[i].0, &self.docs[i].3))
    }

    /// The `seq` of the call's next new document.
    fn take_seq(&mut self) -> u64 {
        self.next_seq += 1;
        self.next_seq - 1
    }

    /// Exact verification's best match among the call's documents: those sharing a prefix
    /// shingle with `set`, compared exactly.
    fn best_exact(&self, set: &[u64], own: Option<u64>) -> Option<Candidate> {
        let e = self.exact.as_ref()?;
        let mut seen: Vec<usize> =
            e.p.order
                .prefix(set, e.t)
                .into_iter()
                .filter_map(|t| self.tokens.get(&t))
                .flatten()
                .copied()
                .collect();
        seen.sort_unstable();
        seen.dedup();
        let mut best: Option<Candidate> = None;
        for i in seen {
            let (fp, n, id, _, s) = &self.docs[i];
            let Some(s) = s.as_ref().filter(|_| self.live[i] && Some(*n) != own) else {
                continue;
            };
            let Some(sim) = crate::dedup::verify::verify_pair(set, &s.hashes, e.t) else {
                continue;
            };
            let c = (
                sim,
                s.seq,
                (fp ^ s.fingerprint).count_ones(),
                *n,
                id.clone(),
            );
            if best.as_ref().is_none_or(|b| better(&c, b).is_lt()) {
                best = Some(c);
            }
        }
        best
    }

    /// Move the documents scanned so far into the layer (a check-only call's next group).
    fn seal_group(&mut self) {
        let tables = &self.tables;
        let layer = self.older.get_or_insert_with(|| Layer::new(tables.clone()));
        for i in self.older_len..self.docs.len() {
            if self.live[i] {
                layer.insert(self.docs[i].0, i as u64);
            }
        }
        self.older_len = self.docs.len();
        self.clear_recent();
    }

    fn best(
        &mut self,
        store: &Store,
        fp: u64,
        me: Compared<'_>,
        (k, verify, shape): (u32, Option<f64>, crate::dedup::sketch::SketchShape),
        own: Option<u64>,
    ) -> Result<Option<Candidate>> {
        let mut near: Vec<(usize, u32)> = Vec::new();
        let (live, from) = (&self.live, self.older_len);
        let keep = |i: usize, d: u32| {
            if live[from + i] {
                near.push((from + i, d));
            }
        };
        match &mut self.recent {
            Recent::Indexed(p) => p.within(fp, keep),
            Recent::Scanned(fps) => within(fps.iter().copied(), fp, k, keep),
        }
        if let Some(layer) = &self.older {
            let g = store.generation();
            g.index().probe(layer, fp, k, &mut Work::default(), |m| {
                near.extend(
                    layer
                        .ids_in_layer(m.fingerprint)
                        .map(|i| (i as usize, m.distance)),
                );
                true
            })?;
            near.sort_unstable();
            near.dedup();
        }
        let mut best: Option<Candidate> = None;
        for (i, distance) in near {
            let (_, n, id, s, set) = &self.docs[i];
            if Some(*n) == own {
                continue;
            }
            let sim = similarity(shape, me, (s, set.as_ref().map(|s| &s.hashes[..])))?;
            let c = (sim, distance.into(), distance, *n, id.clone());
            if verify.is_none_or(|t| sim >= t)
                && best.as_ref().is_none_or(|b| better(&c, b).is_lt())
            {
                best = Some(c);
            }
        }
        Ok(best)
    }
}

/// Call `f(i, distance)` for each of `fps` within `k` of `fp`: one POPCNT per fingerprint where
/// the CPU has it (checked at run time, as the index's probe loop does).
fn within(fps: impl Iterator<Item = u64>, fp: u64, k: u32, f: impl FnMut(usize, u32)) {
    #[cfg(target_arch = "x86_64")]
    if std::is_x86_feature_detected!("popcnt") {
        // SAFETY: the CPU supports POPCNT, checked just above.
        return unsafe { within_popcnt(fps, fp, k, f) };
    }
    within_portable(fps, fp, k, f)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "popcnt")]
fn within_popcnt(fps: impl Iterator<Item = u64>, fp: u64, k: u32, f: impl FnMut(usize, u32)) {
    within_portable(fps, fp, k, f)
}

#[inline(always)]
fn within_portable(fps: impl Iterator<Item = u64>, fp: u64, k: u32, mut f: impl FnMut(usize, u32)) {
    for (i, x) in fps.enumerate() {
        let d = (x ^ fp).count_ones();
        if d <= k {
            f(i, d);
        }
    }
}
