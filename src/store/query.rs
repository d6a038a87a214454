//! Queries over a store: the generation's tables and the delta layers probed with the same
//! prefixes, document ids resolved from the id map, deleted ids dropped.

use std::collections::BTreeMap;

use std::ops::ControlFlow;

use std::sync::Arc;

use super::generation;
use super::*;
use crate::error::Result;
use crate::index::probe::Work;
use crate::progress::ProgressHandle;

/// Queries of a `near_many` resolved against the delta under one hold of the state lock.
const RESOLVE_CHUNK: usize = 64;

impl Store {
    /// Every stored fingerprint within `k` of `fp` with its document ids, each fingerprint once,
    /// ordered by distance then fingerprint. Sees every acknowledged write.
    pub fn near(&self, fp: u64, k: u32) -> Result<Vec<StoreMatch>> {
        // The generation's tables and id map are read with no lock held (a snapshot: the
        // generation stays readable while held); the state lock is taken only for the
        // in-memory delta. If a compaction replaced the generation meanwhile, read again.
        loop {
            let g = self.generation();
            let mut from_tables: Vec<(u64, u32, Vec<u64>)> = Vec::new();
            for m in g.index().near(fp, k)? {
                let ids = g
                    .ids()
                    .ids_of(m.fingerprint)
                    .map_err(|e| e.with_path(&g.dir().join(generation::IDS_NAME)))?;
                from_tables.push((m.fingerprint, m.distance, ids));
            }
            let st = self.read_state();
            if !Arc::ptr_eq(&st.generation, &g) {
                continue;
            }
            return self.resolve(&st, fp, k, from_tables);
        }
    }

    /// Matches from the tables (with their ids) plus the delta's, deleted ids dropped.
    fn resolve(
        &self,
        st: &State,
        fp: u64,
        k: u32,
        from_tables: Vec<(u64, u32, Vec<u64>)>,
    ) -> Result<Vec<StoreMatch>> {
        let g = &st.generation;
        let layers = st.layers();
        let mut found: BTreeMap<u64, (u32, Vec<u64>)> = BTreeMap::new();
        for (fingerprint, distance, ids) in from_tables {
            let ids: Vec<u64> = ids
                .into_iter()
                .filter(|id| !layers.iter().any(|l| l.deletes(*id)))
                .collect();
            if !ids.is_empty() {
                found.insert(fingerprint, (distance, ids));
            }
        }
        for (i, layer) in layers.iter().enumerate() {
            // A layer that holds no pairs (the usual active layer of a store that only
            // serves) has nothing to probe; its deletes were applied above.
            if layer.pair_count() == 0 {
                continue;
            }
            let newer = &layers[i + 1..];
            let mut hits = Vec::new();
            g.index().probe(*layer, fp, k, &mut Work::default(), |m| {
                hits.push(m);
                true
            })?;
            for m in hits {
                let e = found
                    .entry(m.fingerprint)
                    .or_insert_with(|| (m.distance, Vec::new()));
                e.1.extend(
                    layer
                        .ids_in_layer(m.fingerprint)
                        .filter(|id| !newer.iter().any(|l| l.deletes(*id))),
                );
            }
        }
        let mut out: Vec<StoreMatch> = found
            .into_iter()
            .filter_map(|(fp, (distance, mut ids))| {
                ids.sort_unstable();
                ids.dedup();
                (!ids.is_empty()).then_some(StoreMatch {
                    distance,
                    fingerprint: fp,
                    ids,
                })
            })
            .collect();
        out.sort_unstable();
        Ok(out)
    }

    /// [`near`](Self::near) into a caller's buffer (cleared first).
    pub fn near_into(&self, fp: u64, k: u32, out: &mut Vec<StoreMatch>) -> Result<()> {
        *out = self.near(fp, k)?;
        Ok(())
    }

    /// Call `f` on each fingerprint within `k` of `fp` with its ids, in order of distance then
    /// fingerprint, until it returns [`ControlFlow::Break`]; whether it ran to the end. (The
    /// matches are resolved against deletes in the delta before the first call.)
    pub fn near_with(
        &self,
        fp: u64,
        k: u32,
        mut f: impl FnMut(&StoreMatch) -> ControlFlow<()>,
    ) -> Result<bool> {
        Ok(self.near(fp, k)?.iter().all(|m| f(m).is_continue()))
    }

    /// [`near`](Self::near) for many queries on all cores (the current rayon pool), flat: one
    /// row per (query, fingerprint, id), rows of query `i` at `offsets[i]..offsets[i + 1]`.
    /// The same answers as `near` one query at a time, at less cost: see
    /// [`near_many_with`](Self::near_many_with).
    pub fn near_many(&self, fps: &[u64], k: u32) -> Result<StoreNearMany> {
        self.near_many_with(fps, k, &ProgressHandle::none())
    }

    /// [`near_many`](Self::near_many), stopping with [`Error::Cancelled`](crate::Error) when
    /// `progress` asks (checked between chunks of queries).
    ///
    /// The batch is answered as a batch: the generation's tables by
    /// [`Index::near_many`](crate::Index::near_many) (the vector lanes' one stream of probes,
    /// or for a large batch one scan of the tables), the ids of every fingerprint found
    /// looked up once, in fingerprint order, and then each chunk of queries resolved against
    /// the delta under one hold of the state lock rather than one a query. A chunk that finds
    /// its generation replaced by a compaction meanwhile is answered again query by query.
    pub fn near_many_with(
        &self,
        fps: &[u64],
        k: u32,
        progress: &ProgressHandle,
    ) -> Result<StoreNearMany> {
        let per = self.near_each(fps, k, progress)?;
        let mut out = StoreNearMany {
            offsets: Vec::with_capacity(fps.len() + 1),
            rows: Vec::new(),
        };
        out.offsets.push(0);
        for ms in per {
            for m in ms {
                for id in m.ids {
                    out.rows.push(StoreRow {
                        distance: m.distance,
                        fingerprint: m.fingerprint,
                        id,
                    });
                }
            }
            out.offsets.push(out.rows.len());
        }
        Ok(out)
    }

    /// Each query's [`near`](Self::near), as [`near_many_with`](Self::near_many_with) finds
    /// them.
    fn near_each(
        &self,
        fps: &[u64],
        k: u32,
        progress: &ProgressHandle,
    ) -> Result<Vec<Vec<StoreMatch>>> {
        use rayon::prelude::*;
        let g = self.generation();
        let found = g.index().near_many_with(fps, k, progress)?;
        let mut matched: Vec<u64> = found.matches.iter().map(|m| m.fingerprint).collect();
        matched.par_sort_unstable();
        matched.dedup();
        let ids_path = || g.dir().join(generation::IDS_NAME);
        let ids: Vec<Vec<u64>> = matched
            .par_iter()
            .map(|&f| g.ids().ids_of(f).map_err(|e| e.with_path(&ids_path())))
            .collect::<Result<_>>()?;
        let ids_of = |f: u64| match matched.binary_search(&f) {
            Ok(j) => ids[j].clone(),
            Err(_) => unreachable!("every fingerprint found was looked up"),
        };
        // Chunks in parallel, each resolved under its own hold of the lock, with no parallel
        // work inside it: a thread that held the lock while waiting for rayon could be given
        // another query's task that waits for the lock behind a writer waiting for it.
        let chunks: Vec<Vec<Vec<StoreMatch>>> = fps
            .par_chunks(RESOLVE_CHUNK)
            .enumerate()
            .map(|(c, chunk)| {
                progress.check()?;
                let st = self.read_state();
                if !Arc::ptr_eq(&st.generation, &g) {
                    drop(st);
                    return chunk.iter().map(|&fp| self.near(fp, k)).collect();
                }
                let first = c * RESOLVE_CHUNK;
                (first..first + chunk.len())
                    .map(|i| {
                        let from_tables = found
                            .get(i)
                            .iter()
                            .map(|m| (m.fingerprint, m.distance, ids_of(m.fingerprint)))
                            .collect();
                        self.resolve(&st, fps[i], k, from_tables)
                    })
                    .collect()
            })
            .collect::<Result<_>>()?;
        Ok(chunks.into_iter().flatten().collect())
    }

    /// True if some stored fingerprint is within `k` of `fp`.
    pub fn has_near(&self, fp: u64, k: u32) -> Result<bool> {
        loop {
            let g = self.generation();
            // Table I/O without the lock; whether it may answer is decided under it.
            let in_tables = g.index().has_near(fp, k)?;
            let st = self.read_state();
            if !Arc::ptr_eq(&st.generation, &g) {
                continue;
            }
            let layers = st.layers();
            if layers.iter().any(|l| l.has_deletes()) {
                // A delete may hide the match: resolve ids.
                drop(st);
                return Ok(!self.near(fp, k)?.is_empty());
            }
            if in_tables {
                return Ok(true);
            }
            for l in &layers {
                if !g
                    .index()
                    .probe(*l, fp, k, &mut Work::default(), |_| false)?
                {
                    return Ok(true);
                }
            }
            return Ok(false);
        }
    }

    /// Ids stored with exactly `fp`, ascending.
    pub fn ids_of(&self, fp: u64) -> Result<Vec<u64>> {
        Ok(self
            .near(fp, 0)?
            .into_iter()
            .next()
            .map(|m| m.ids)
            .unwrap_or_default())
    }

    /// Every live (fingerprint, id) pair, ascending. Reads the whole id map: for export, checks
    /// and tests, not for serving.
    pub fn pairs(&self) -> Result<Vec<(u64, u64)>> {
        let (g, layer) = self.snapshot_layer();
        let mut out: Vec<(u64, u64)> = Vec::with_capacity(g.ids().pairs() as usize);
        for p in g.ids().iter() {
            let (fp, id) = p?;
            if !layer.deletes(id) {
                out.push((fp, id));
            }
        }
        out.extend(layer.pairs());
        out.sort_unstable();
        out.dedup();
        Ok(out)
    }
}
