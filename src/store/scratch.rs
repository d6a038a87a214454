//! The new documents of one call, not yet in the store: what each later document of the
//! call is compared with (see [`Scratch`]).

use super::hasher::{FastMap, FastSet};
use std::sync::Arc;

use super::Store;
use super::candidate::{Candidate, Compared, Exact, better, same_version, similarity};
use super::delta::{Layer, SPAN_BITS};
use super::docs::DocMeta;
use super::keys::DocId;
use super::prefix_map::PrefixMap;
use super::pigeonhole::Pigeonhole;
use super::sets::DocSet;
use crate::error::Result;
use crate::index::probe::Work;

/// The new documents of a call not yet in the store. Those of the current group of documents
/// are compared through a pigeonhole index of their fingerprints (or, for k > 8, a scan of
/// them; a group is at most 4096: cheaper than building a layer's tables for them, measured);
/// a check-only call longer than a group keeps the earlier groups' documents in a layer probed
/// like the store's delta.
pub(super) struct Scratch {
    tables: Vec<(crate::Permutation, u32)>,
    /// Every new document of the call: (fingerprint, store id, caller's id, sketch, set).
    docs: Vec<CallDoc>,
    /// Exact verification: the call's documents by prefix shingle (indices into `docs`).
    pub(super) exact: Option<Exact>,
    tokens: PrefixMap,
    /// The `seq` the call's next new document gets.
    pub(super) next_seq: u64,
    /// The current group's fingerprints (`docs[older_len..]`), indexed, or for a k too large
    /// for that, scanned: contiguous, they fit in L1 (read out of `docs`, the scan strode over
    /// 48-byte entries).
    recent: Recent,
    /// Whether each is still the latest put of its store id.
    live: Vec<bool>,
    /// Store id → index in `docs` of its latest put.
    by_id: FastMap<usize>,
    /// The spans of store ids (`n >> SPAN_BITS`) of `by_id`: a string id's window that touches
    /// none of them is placed without a lookup per id.
    spans: FastSet,
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
    pub(super) fn new(
        tables: Vec<(crate::Permutation, u32)>,
        k: u32,
        exact: Option<Exact>,
        seq: u64,
    ) -> Scratch {
        Scratch {
            tables,
            docs: Vec::new(),
            exact,
            tokens: PrefixMap::default(),
            next_seq: seq,
            recent: match Pigeonhole::new(k) {
                Some(p) => Recent::Indexed(p),
                None => Recent::Scanned(Vec::new()),
            },
            live: Vec::new(),
            by_id: FastMap::default(),
            spans: FastSet::default(),
            older: None,
            older_len: 0,
        }
    }

    /// Empty again, for tables `tables`; the index keeps its memory (a group's heads are a
    /// megabyte at k = 3: allocating them afresh per group cost page faults).
    pub(super) fn restart(&mut self, tables: Vec<(crate::Permutation, u32)>, seq: u64) {
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

    /// Put a new document of the call (`prefix`: its prefix at the store's threshold, in a
    /// store that verifies exactly).
    pub(super) fn put(
        &mut self,
        fp: u64,
        n: u64,
        id: DocId,
        doc: &DocMeta,
        prefix: Option<&[u64]>,
    ) {
        let i = self.docs.len();
        self.spans.insert(n >> SPAN_BITS);
        if let Some(old) = self.by_id.insert(n, i) {
            self.live[old] = false;
            if let Some(l) = self.older.as_mut().filter(|_| old < self.older_len) {
                l.delete(old as u64);
            }
        }
        if let (Some(_), Some(prefix)) = (&self.exact, prefix) {
            self.tokens.insert_all(prefix, i as u64);
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
    pub(super) fn touches(&self, start: u64) -> bool {
        let end = start.wrapping_add((1 << SPAN_BITS) - 1);
        self.spans.contains(&(start >> SPAN_BITS)) || self.spans.contains(&(end >> SPAN_BITS))
    }

    /// The caller's id of the call's latest put of store id `n`, if any.
    pub(super) fn holder(&self, n: u64) -> Option<DocId> {
        self.by_id.get(&n).map(|&i| self.docs[i].2.clone())
    }

    /// Whether the call's latest put of store id `n` is the same version as `me`
    /// ([`same_version`]); `None` if the call put nothing under `n`.
    pub(super) fn same_as_latest(&self, n: u64, me: (u64, Compared<'_>)) -> Option<bool> {
        self.by_id.get(&n).map(|&i| {
            let (fp, _, _, sketch, set) = &self.docs[i];
            let set = set.as_deref().map(|s| &s.hashes[..]);
            same_version(me, (*fp, (&sketch[..], set)))
        })
    }

    /// The `seq` of the call's next new document.
    pub(super) fn take_seq(&mut self) -> u64 {
        self.next_seq += 1;
        self.next_seq - 1
    }

    /// Exact verification's best match among the call's documents: those sharing a prefix
    /// shingle with `set`, compared exactly.
    pub(super) fn best_exact(
        &self,
        set: &[u64],
        prefix: &[u64],
        own: Option<u64>,
    ) -> Option<Candidate> {
        let e = self.exact.as_ref()?;
        let (query, need) = e.probe(set.len(), prefix);
        let mut hits: Vec<u64> = Vec::new();
        self.tokens.get_all(query, &mut hits);
        let seen = super::prefix::sharing(hits, need);
        let mut best: Option<Candidate> = None;
        for i in seen {
            let i = i as usize;
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
    pub(super) fn seal_group(&mut self) {
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

    pub(super) fn best(
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
