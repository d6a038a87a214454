//! The in-memory delta: writes since the last compaction, queried together with the tables.
//!
//! A store's contents are a set of (fingerprint, document id) pairs. A [`Layer`] holds the pairs
//! inserted since its start and the ids deleted since its start; a deleted id hides that id's
//! pairs in every *older* layer and in the compacted generation (pairs inserted later, in this or
//! a newer layer, are not affected). For near-neighbour queries the layer keeps, per design
//! table, its fingerprints sorted under that table's permutation, so a delta query probes the
//! same prefixes as a table query instead of scanning the delta.
//!
//! Memory: about 270 bytes per pair with 10 tables (measured by `cargo bench --bench store`);
//! the store bounds the delta ([`super::StoreOptions::max_delta`], default 2^20 writes, so about
//! 280 MB) and compacts when it is full.

use super::hasher::{FastMap, FastSet};
use std::sync::Arc;

use super::buckets::Buckets;
use super::docs::DocMeta;
use super::multimap::MultiMap;
use super::prefix_map::PrefixMap;
use super::prefix::Prefixer;

use crate::permutation::Permutation;

/// Writes since some point, applied in order.
#[derive(Debug, Clone)]
pub struct Layer {
    /// Pairs inserted (and not deleted since): fingerprint → ids. Hash maps, not ordered
    /// sets: an insert is two lookups instead of two B-tree descents, and only compaction
    /// needs the pairs in order.
    added: MultiMap,
    /// The same pairs as id → fingerprints, for deletes.
    by_id: MultiMap,
    /// Ids deleted in this layer: they hide older layers' and the generation's pairs.
    deleted: FastSet,
    /// Per table: the permuted fingerprints present in `added`.
    permuted: Vec<Buckets>,
    /// Per table: its permutation and probe prefix bits.
    tables: Vec<(Permutation, u32)>,
    /// Operations applied (records of inserts and deletes), for the delta bound.
    ops: u64,
    /// Documents put in this layer (and not deleted since), by id.
    docs: FastMap<DocMeta>,
    /// The spans of `1 << SPAN_BITS` ids (`id >> SPAN_BITS`) in which this layer put a document
    /// or deleted an id: a string id's window lookup skips a layer that touched neither span
    /// of its window instead of looking up each of its ids (on 200k string ids, 32 lookups a
    /// document made ingest 1.2x slower).
    spans: FastSet,
    /// In a store that verifies exactly: how documents are indexed, and the index of the
    /// documents put here, prefix shingle → ids (an id put again or deleted may stay listed:
    /// a candidate is read back before it is compared).
    prefixer: Option<Arc<Prefixer>>,
    tokens: PrefixMap,
}

/// Operations a document with a shingle set counts besides its set's (about 800 bytes of
/// sketch, prefix entries and map slots, at 256 bytes an operation).
const DOC_OPS: u64 = 3;

/// Ids per span of [`Layer::touches`]: a string id's window (`super::keys::KEY_WINDOW`).
pub const SPAN_BITS: u32 = 5;

impl Layer {
    /// An empty layer for tables with these permutations and probe prefix bits.
    pub fn new(tables: Vec<(Permutation, u32)>) -> Layer {
        Layer {
            added: MultiMap::default(),
            by_id: MultiMap::default(),
            deleted: FastSet::default(),
            permuted: tables.iter().map(|&(_, p)| Buckets::new(p)).collect(),
            tables,
            ops: 0,
            docs: FastMap::default(),
            spans: FastSet::default(),
            prefixer: None,
            tokens: PrefixMap::default(),
        }
    }

    /// This layer indexing the prefixes of the documents put in it with `p`.
    pub fn with_prefixer(mut self, p: Option<Arc<Prefixer>>) -> Layer {
        self.prefixer = p;
        self
    }

    /// The largest `seq` of the documents put here (0 if none).
    pub fn max_seq(&self) -> u64 {
        self.docs
            .values()
            .filter_map(|d| d.set.as_ref().map(|s| s.seq))
            .max()
            .unwrap_or(0)
    }

    /// How this layer indexes documents (a store that verifies exactly).
    pub fn prefixer(&self) -> Option<&Arc<Prefixer>> {
        self.prefixer.as_ref()
    }

    /// The ids put here with each of `tokens` in their indexed prefix (and perhaps some put
    /// again or deleted since), an id once per token, appended to `out` in no particular order.
    pub fn token_ids(&self, tokens: &[u64], out: &mut Vec<u64>) {
        self.tokens.get_all(tokens, out)
    }

    /// The prefix index's entries: each insert's id by ordinal, and (a shingle's top 32 bits,
    /// what the generation's index keeps, insert ordinal) in no particular order.
    pub fn token_entries(&self) -> (&[u64], impl Iterator<Item = (u32, u32)> + '_) {
        (self.tokens.ids(), self.tokens.entries())
    }

    /// An empty layer with the same tables (and prefix indexing).
    pub fn empty_like(&self) -> Layer {
        Layer::new(self.tables.clone()).with_prefixer(self.prefixer.clone())
    }

    /// This layer emptied, keeping the memory of its maps, in the place of `like` (an empty
    /// layer): its tables and prefix indexing. A compacted delta's maps and prefix table,
    /// grown to a full delta's size, serve the next delta instead of being freed while it
    /// grows new ones, each growth a rehash into fresh pages (on a VM that hands freed pages
    /// back to its host, the pages' first writes were a tenth of an exact ingest's CPU).
    pub fn recycled(mut self, like: &Layer) -> Layer {
        self.added.clear();
        self.by_id.clear();
        self.deleted.clear();
        if self.tables == like.tables {
            self.permuted.iter_mut().for_each(Buckets::clear);
        } else {
            self.permuted = like.permuted.clone();
            self.tables = like.tables.clone();
        }
        self.ops = 0;
        self.docs.clear();
        self.spans.clear();
        self.prefixer = like.prefixer.clone();
        self.tokens.clear();
        self
    }

    /// Add a pair.
    pub fn insert(&mut self, fp: u64, id: u64) {
        self.ops += 1;
        let (new, first) = self.added.insert(fp, id);
        if !new {
            return;
        }
        self.by_id.insert(id, fp);
        if first {
            for (set, (p, _)) in self.permuted.iter_mut().zip(&self.tables) {
                set.insert(p.apply(fp));
            }
        }
    }

    /// Delete every pair with `id` (in this layer and, through `deleted`, below it).
    pub fn delete(&mut self, id: u64) {
        self.ops += 1;
        for fp in self.by_id.take(id) {
            if self.added.remove(fp, id) {
                for (set, (p, _)) in self.permuted.iter_mut().zip(&self.tables) {
                    set.remove(p.apply(fp));
                }
            }
        }
        self.deleted.insert(id);
        self.docs.remove(&id);
        self.spans.insert(id >> SPAN_BITS);
    }

    /// Put a document: `(fp, id)` and `doc`; if `replaces`, the id's pairs and document (here
    /// and below) go first. `prefix`: its set's indexed prefix, if the caller has it (else it
    /// is computed here, on the writer's thread).
    pub fn put_doc(
        &mut self,
        fp: u64,
        id: u64,
        replaces: bool,
        doc: DocMeta,
        prefix: Option<&[u64]>,
    ) {
        if replaces {
            self.delete(id);
            self.ops -= 1;
        }
        self.insert(fp, id);
        // A shingle set counts an operation per 32 hashes (256 bytes, about what a pair costs
        // here), and its document DOC_OPS more for its sketch, prefix entries and map slots,
        // so that a delta full of documents holds about the memory one of pairs would
        // (measured: without them, 233k documents of 200 shingles, 500 MB, at 2^20).
        if let Some(s) = &doc.set {
            self.ops += s.hashes.len() as u64 / 32 + DOC_OPS;
        }
        if let (Some(p), Some(set)) = (&self.prefixer, &doc.set) {
            let computed;
            let prefix = match prefix {
                Some(x) => x,
                None => {
                    computed = p.indexed(&set.hashes);
                    &computed
                }
            };
            self.tokens.insert_all(prefix, id);
        }
        self.docs.insert(id, doc);
        self.spans.insert(id >> SPAN_BITS);
    }

    /// False if this layer put no document and deleted no id among the `1 << SPAN_BITS` ids
    /// from `start` (wrapping): what it says of them is nothing.
    pub fn touches(&self, start: u64) -> bool {
        let end = start.wrapping_add((1 << SPAN_BITS) - 1);
        self.spans.contains(&(start >> SPAN_BITS)) || self.spans.contains(&(end >> SPAN_BITS))
    }

    /// What this layer says of `id`'s document: `Some(Some(doc))` put here, `Some(None)`
    /// deleted here (so nothing below counts), `None` untouched here.
    pub fn doc(&self, id: u64) -> Option<Option<&DocMeta>> {
        match self.docs.get(&id) {
            Some(d) => Some(Some(d)),
            None if self.deleted.contains(&id) => Some(None),
            None => None,
        }
    }

    /// Documents put in this layer, by ascending id.
    pub fn docs_sorted(&self) -> Vec<(u64, &DocMeta)> {
        let mut v: Vec<(u64, &DocMeta)> = self.docs.iter().map(|(&i, d)| (i, d)).collect();
        v.sort_unstable_by_key(|&(i, _)| i);
        v
    }

    /// True if documents were put in this layer.
    pub fn has_docs(&self) -> bool {
        !self.docs.is_empty()
    }

    /// Ids this layer holds for `fp`, ascending.
    pub fn ids_in_layer(&self, fp: u64) -> impl Iterator<Item = u64> + '_ {
        self.added.get(fp)
    }

    /// True if this layer deleted `id`.
    pub fn deletes(&self, id: u64) -> bool {
        self.deleted.contains(&id)
    }

    /// True if this layer deleted any id.
    pub fn has_deletes(&self) -> bool {
        !self.deleted.is_empty()
    }

    /// Permuted fingerprints of table `t` in `lo..=hi`, in no particular order.
    pub fn permuted_range(&self, t: usize, lo: u64, hi: u64) -> impl Iterator<Item = u64> + '_ {
        self.permuted[t].range(lo, hi)
    }

    /// Pairs inserted, ascending (sorted on each call: for compaction and whole-store reads).
    pub fn pairs(&self) -> impl Iterator<Item = (u64, u64)> + use<> {
        let mut v: Vec<(u64, u64)> = self.added.iter().collect();
        v.sort_unstable();
        v.into_iter()
    }

    /// Ids deleted.
    pub fn deleted_ids(&self) -> impl ExactSizeIterator<Item = u64> + '_ {
        self.deleted.iter().copied()
    }

    /// Pairs held.
    pub fn pair_count(&self) -> usize {
        self.added.len()
    }

    /// Operations applied since the layer started.
    pub fn ops(&self) -> u64 {
        self.ops
    }

    /// True if nothing was written to this layer.
    pub fn is_empty(&self) -> bool {
        self.ops == 0
    }

    /// Apply `newer` on top of this layer (used when replaying several logs into one layer).
    pub fn absorb(&mut self, newer: &Layer) {
        for &id in &newer.deleted {
            self.delete(id);
        }
        for (fp, id) in newer.pairs() {
            self.insert(fp, id);
        }
        for (&id, d) in &newer.docs {
            self.docs.insert(id, d.clone());
            self.spans.insert(id >> SPAN_BITS);
        }
        self.tokens.absorb(&newer.tokens);
    }
}

/// A layer is probed like the tables it shadows: table `t`'s permuted keys in a range.
impl crate::index::probe::ProbeSource for Layer {
    fn visit(
        &self,
        t: usize,
        lo: u64,
        hi: u64,
        work: &mut crate::index::probe::Work,
        mut f: impl FnMut(u64) -> bool,
    ) -> crate::error::Result<bool> {
        for key in self.permuted_range(t, lo, hi) {
            work.keys += 1;
            if !f(key) {
                return Ok(false);
            }
        }
        Ok(true)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::sets::DocSet;

    /// A window is touched exactly when a document was put, or an id deleted, in one of its
    /// ids (wrapping at 2^64).
    #[test]
    fn touches_is_exact_at_the_span_level_and_wraps() {
        let doc = DocMeta {
            key: None,
            sketch: vec![0u8; 4].into(),
            set: None,
        };
        let mut l = Layer::new(Vec::new());
        l.put_doc(7, 100, false, doc.clone(), None);
        for start in 69..=100 {
            assert!(l.touches(start), "{start}");
        }
        assert!(!l.touches(101 + 64) && !l.touches(0));
        l.delete(u64::MAX);
        assert!(l.touches(u64::MAX - 3) && l.touches(u64::MAX));
        // A window that wraps reaches span 0 too.
        let mut w = Layer::new(Vec::new());
        w.put_doc(7, 2, false, doc, None);
        assert!(w.touches(u64::MAX - 5));
        let mut a = Layer::new(Vec::new());
        a.absorb(&w);
        assert!(a.touches(2));
    }

    /// A layer recycled after use answers like a new one under the same writes: nothing of
    /// its past (pairs, deletes, documents, spans, prefix entries, operations) shows through.
    #[test]
    fn a_recycled_layer_is_a_new_one() {
        let tables = vec![(Permutation::identity(), 8), (Permutation::identity().inverse(), 4)];
        let prefixer = Arc::new(Prefixer {
            order: Arc::new(super::super::prefix::Order::default()),
            t0: 0.5,
        });
        let fresh = || Layer::new(tables.clone()).with_prefixer(Some(Arc::clone(&prefixer)));
        // One write per (a, b): a delete, an insert or a document put, of an id below 64.
        let write = |l: &mut Layer, ops: &[(u64, u64)]| {
            for &(a, b) in ops {
                let id = b % 64;
                match a % 3 {
                    0 => l.delete(id),
                    1 => l.insert(a, id),
                    _ => {
                        let mut hashes: Vec<u64> =
                            (0..1 + a % 9).map(|k| (a >> (5 * k)) % 40).collect();
                        hashes.sort_unstable();
                        hashes.dedup();
                        let set = DocSet {
                            fingerprint: a,
                            seq: b,
                            time: 0,
                            hashes: hashes.into(),
                        };
                        let doc = DocMeta {
                            key: None,
                            sketch: vec![0u8; 8].into(),
                            set: Some(Arc::new(set)),
                        };
                        l.put_doc(a, id, l.doc(id).is_some(), doc, None);
                    }
                }
            }
        };
        let ops = |seed: u64, n: usize| {
            let mut next = crate::dedup::xorshift(seed);
            (0..n).map(|_| (next(), next())).collect::<Vec<(u64, u64)>>()
        };
        let mut used = fresh();
        write(&mut used, &ops(3, 3000));
        assert!(!used.is_empty() && used.has_deletes() && used.has_docs());
        let mut recycled = used.recycled(&fresh());
        let mut new = fresh();
        assert!(recycled.is_empty() && !recycled.has_deletes() && !recycled.has_docs());
        assert!(recycled.token_entries().1.next().is_none());
        assert!((0..64).all(|s| !recycled.touches(s)));
        let state = |l: &Layer| {
            let mut pairs: Vec<_> = l.pairs().collect();
            let (ids, entries) = l.token_entries();
            let mut tokens: Vec<_> = entries.map(|(t, o)| (t, ids[o as usize])).collect();
            let mut deleted: Vec<_> = l.deleted_ids().collect();
            let ranges: Vec<Vec<u64>> = (0..2)
                .map(|t| {
                    let mut r: Vec<u64> = l.permuted_range(t, 0, u64::MAX >> 1).collect();
                    r.sort_unstable();
                    r
                })
                .collect();
            pairs.sort_unstable();
            tokens.sort_unstable();
            deleted.sort_unstable();
            let docs: Vec<_> = (l.docs_sorted().into_iter())
                .map(|(id, d)| (id, d.set.as_ref().map(|s| s.seq)))
                .collect();
            let spans: Vec<bool> = (0..64).map(|s| l.touches(s * 32)).collect();
            (pairs, tokens, deleted, ranges, docs, spans, l.ops(), l.max_seq())
        };
        for round in 0..3 {
            let ops = ops(round + 10, 500);
            write(&mut recycled, &ops);
            write(&mut new, &ops);
            assert_eq!(state(&recycled), state(&new), "round {round}");
        }
    }
}
