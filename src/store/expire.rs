//! Expiry: delete every document stored before a time or below a `seq`, in a store that keeps
//! shingle sets (their records carry both, `format-spec/store.md`, "Shingle sets"). The
//! documents go as by [`Store::delete_documents`]: logged deletes, no answer names them from
//! then on, and the next [`Store::compact`] reclaims their space.

use std::collections::HashSet;

use rayon::prelude::*;

use super::*;
use crate::error::{Error, Result};

/// Which documents [`Store::expire`] deletes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Expiry {
    /// Those stored before this time: milliseconds since the Unix epoch, by the clock of the
    /// writer that stored them. A document put again (a re-crawl) was stored when it was put
    /// again.
    StoredBefore(u64),
    /// Those whose `seq` is below this one: stored before the document numbered so
    /// ([`StoreStats::max_seq`] + 1 is the next one to be stored).
    SeqBelow(u64),
}

impl Expiry {
    fn covers(self, seq: u64, time: u64) -> bool {
        match self {
            Expiry::StoredBefore(t) => time < t,
            Expiry::SeqBelow(s) => seq < s,
        }
    }
}

impl Store {
    /// Delete every document `expiry` covers; how many. Only a store that keeps shingle sets
    /// knows when its documents were stored (elsewhere, delete by id).
    pub fn expire(&self, expiry: Expiry) -> Result<u64> {
        self.check_writable()?;
        if self.read_state().active.prefixer().is_none() {
            return Err(Error::InvalidArgument(format!(
                "{} keeps no shingle sets, so not when its documents were stored: expire needs a \
                 store created to verify exactly (delete documents by id instead)",
                self.dir.display()
            )));
        }
        // Under the document writers' turn, so that no document is put meanwhile.
        super::pool::locked_install(&self.docs.writes, || {
            let ids = self.expired(expiry)?;
            self.delete_many(&ids)?;
            Ok(ids.len() as u64)
        })
    }

    /// The store ids of the documents `expiry` covers, ascending.
    fn expired(&self, expiry: Expiry) -> Result<Vec<u64>> {
        let st = self.read_state();
        let layers = st.layers();
        // The layers' documents, newest layer first: an id a newer layer touched is decided
        // there (put again: by its new version; deleted: not at all).
        let mut decided: HashSet<u64> = HashSet::new();
        let mut out = Vec::new();
        for layer in layers.iter().rev() {
            for (id, doc) in layer.docs_sorted() {
                if decided.insert(id)
                    && let Some(s) = &doc.set
                    && expiry.covers(s.seq, s.time)
                {
                    out.push(id);
                }
            }
            decided.extend(layer.deleted_ids());
        }
        // The generation's: each record's head, on all cores, a few thousand at a time.
        let g = &st.generation;
        if let Some(docs) = g.docs().filter(|d| d.has_sets()) {
            for chunk in docs.set_chunks() {
                let mut chunk = chunk.map_err(|e| g.docs_error(e))?;
                chunk.retain(|(id, _)| !decided.contains(id));
                let hits: Vec<Option<u64>> = chunk
                    .par_iter()
                    .map(|&(id, at)| {
                        let h = docs.set_head(at).map_err(|e| g.docs_error(e))?;
                        Ok(expiry.covers(h.seq, h.time).then_some(id))
                    })
                    .collect::<Result<_>>()?;
                out.extend(hits.into_iter().flatten());
            }
        }
        out.sort_unstable();
        out.dedup();
        Ok(out)
    }
}
