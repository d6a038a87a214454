//! Document ids: the caller's id (a number or a string) and the store's numeric id of it.
//!
//! One rule in every front end (format-spec/simhash.md, "Document ids"): a canonical decimal
//! `u64` ("5", not "05" or "+5") is the numeric id itself; any other text is a string id of 1 to
//! [`MAX_KEY_BYTES`] bytes. A string id lives at the first free slot of its *window*: the
//! [`KEY_WINDOW`] numeric ids from `xxh3_64(key, KEY_SEED)` on (wrapping). A lookup reads every
//! slot of the window, not just up to the first free one, so a slot freed by a delete inside
//! the window never hides a key placed after it (no tombstones needed); a key whose whole
//! window is taken (only ids chosen to collide can do that) is refused.

use std::sync::Arc;

use super::Store;
use super::docs::{DocMeta, MAX_KEY_BYTES};
use crate::error::{Error, Result};

/// Seed of the hash that turns a string id into the store's numeric id (xxh3-64).
pub const KEY_SEED: u64 = 0x7369_6d64_6578_6b79;

/// Slots a string id may take, from its hash on: a lookup reads all of them (one block of the
/// document map, since stored ids are far apart).
pub const KEY_WINDOW: u64 = 32;
const _: () = assert!(KEY_WINDOW == 1 << super::delta::SPAN_BITS);

/// A document's id as the caller gives it: a number, or a string (a URL, a dataset key).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum DocId {
    /// A numeric id, stored as itself.
    Num(u64),
    /// A string id (1 to 2048 bytes), kept in the store and returned in answers.
    Key(Arc<str>),
}

impl DocId {
    /// The id of text `s` under the one id rule: a canonical decimal `u64` is numeric, anything
    /// else a string id. Every front end (CLI, JSON Lines, Python, Spark) maps text this way, so
    /// `"5"` names one document everywhere.
    pub fn parse(s: &str) -> DocId {
        match s.parse::<u64>() {
            Ok(n) if n.to_string() == s => DocId::Num(n),
            _ => DocId::Key(Arc::from(s)),
        }
    }

    /// An error unless the id can be stored: a string id of 1 to 2048 bytes.
    pub fn check(&self) -> Result<()> {
        match self {
            DocId::Key(k) if k.is_empty() || k.len() > MAX_KEY_BYTES => {
                Err(Error::InvalidArgument(format!(
                    "string id of {} bytes (1 to {MAX_KEY_BYTES}): {:?}",
                    k.len(),
                    k.chars().take(60).collect::<String>()
                )))
            }
            _ => Ok(()),
        }
    }
}

impl std::fmt::Display for DocId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            DocId::Num(n) => write!(f, "{n}"),
            DocId::Key(k) => f.write_str(k),
        }
    }
}

/// The caller's id of the document stored under numeric id `n`.
pub(super) fn caller_id(n: u64, d: &DocMeta) -> DocId {
    match &d.key {
        Some(k) => DocId::Key(Arc::clone(k)),
        None => DocId::Num(n),
    }
}

/// Ids a call has placed but not yet stored: numeric id → the caller's id.
pub(super) type Pending<'a> = dyn Fn(u64) -> Option<DocId> + 'a;

impl Store {
    /// The store's numeric id of a caller's id, if such a document is stored: a number is
    /// itself; a string's is a slot of its window (see the module docs).
    pub fn doc_id(&self, id: &DocId) -> Result<Option<u64>> {
        Ok(match self.place(id, &|_| None)? {
            (n, true) => Some(n),
            (_, false) => None,
        })
    }

    /// Delete the documents of `ids` (by the caller's ids: numbers or string keys); ids with no
    /// stored document are passed over. Returns how many documents were deleted.
    pub fn delete_documents(&self, ids: &[DocId]) -> Result<u64> {
        self.check_writable()?;
        if self.docs.recipe.is_none() {
            // A store of raw fingerprints: numbers are its ids, and it has no string ids.
            let mut nums = Vec::with_capacity(ids.len());
            for id in ids {
                match id {
                    DocId::Num(n) => nums.push(*n),
                    DocId::Key(k) => {
                        return Err(Error::InvalidArgument(format!(
                            "string id {:?}: {} stores raw fingerprints under numeric ids",
                            k.chars().take(60).collect::<String>(),
                            self.dir.display()
                        )));
                    }
                }
            }
            self.delete_many(&nums)?;
            return Ok(nums.len() as u64);
        }
        // Placement is decided one writer at a time, as ingest's (see `pool`).
        super::pool::locked_install(&self.docs.writes, || {
            let mut found = Vec::with_capacity(ids.len());
            for id in ids {
                id.check()?;
                if let Some(n) = self.doc_id(id)? {
                    found.push(n);
                }
            }
            found.sort_unstable();
            found.dedup();
            self.delete_many(&found)?;
            Ok(found.len() as u64)
        })
    }

    /// Where `id` lives or would be put: (numeric id, whether a document of that id is stored),
    /// seeing also `pending` (ids placed by this call, not yet stored).
    pub(super) fn place(&self, id: &DocId, pending: &Pending<'_>) -> Result<(u64, bool)> {
        self.slots(id)?.place(id, pending)
    }

    /// What the store holds in the numeric ids `id` may take: its own number, or a string's
    /// window. Read once; [`Slots::place`] then decides against a call's pending ids without
    /// reading the store again.
    pub(super) fn slots(&self, id: &DocId) -> Result<Slots> {
        Ok(match id {
            DocId::Num(n) => Slots {
                start: *n,
                held: (self.docs_of(&[*n])?.pop().flatten())
                    .map(|d| (*n, caller_id(*n, &d)))
                    .into_iter()
                    .collect(),
            },
            DocId::Key(k) => {
                let start = xxhash_rust::xxh3::xxh3_64_with_seed(k.as_bytes(), KEY_SEED);
                Slots {
                    start,
                    held: self.holders(start)?,
                }
            }
        })
    }

    /// The caller's ids stored under the [`KEY_WINDOW`] numeric ids from `start` (wrapping),
    /// under one look at the store's state.
    fn holders(&self, start: u64) -> Result<Vec<(u64, DocId)>> {
        // Sparse (numeric id, holder): a window is nearly always empty, and then nothing is
        // allocated.
        let mut out: Vec<(u64, DocId)> = Vec::new();
        let set = |out: &mut Vec<(u64, DocId)>, n: u64, holder: Option<DocId>| {
            out.retain(|e| e.0 != n);
            out.extend(holder.map(|h| (n, h)));
        };
        let st = self.read_state();
        if let Some(m) = st.generation.docs() {
            let end = start.wrapping_add(KEY_WINDOW - 1);
            let ranges = match end >= start {
                true => [(start, end), (1, 0)],
                false => [(start, u64::MAX), (0, end)],
            };
            for (lo, hi) in ranges.into_iter().filter(|(lo, hi)| lo <= hi) {
                let found = m.keys_in(lo, hi).map_err(|e| st.generation.docs_error(e))?;
                for (n, key) in found {
                    out.push((
                        n,
                        match key {
                            Some(k) => DocId::Key(k),
                            None => DocId::Num(n),
                        },
                    ));
                }
            }
        }
        for layer in st.layers().into_iter().filter(|l| l.touches(start)) {
            for j in 0..KEY_WINDOW {
                let n = start.wrapping_add(j);
                match layer.doc(n) {
                    Some(Some(d)) => set(&mut out, n, Some(caller_id(n, d))),
                    Some(None) => set(&mut out, n, None),
                    None => {}
                }
            }
        }
        Ok(out)
    }
}

/// The caller's ids the store holds in the numeric ids from `start` on (one for a numeric id,
/// [`KEY_WINDOW`] for a string id): see [`Store::slots`].
pub(super) struct Slots {
    start: u64,
    /// (numeric id, the caller's id of the document there), for the held ids only.
    held: Vec<(u64, DocId)>,
}

impl Slots {
    /// The caller's id of the document the store holds under `n`, if any.
    fn holder(&self, n: u64) -> Option<&DocId> {
        self.held.iter().find(|e| e.0 == n).map(|e| &e.1)
    }

    /// The first numeric id the slots cover.
    pub(super) fn start(&self) -> u64 {
        self.start
    }

    /// Where `id` (the id these slots were read for) lives or would be put: (numeric id,
    /// whether a document of that id is stored), seeing also `pending`.
    pub(super) fn place(&self, id: &DocId, pending: &Pending<'_>) -> Result<(u64, bool)> {
        let key = match id {
            DocId::Num(n) => {
                return match pending(*n).or_else(|| self.holder(*n).cloned()) {
                    Some(DocId::Key(k)) => Err(Error::InvalidArgument(format!(
                        "numeric id {n} is taken by the document with string id {k:?}"
                    ))),
                    other => Ok((*n, other.is_some())),
                };
            }
            DocId::Key(k) => k,
        };
        let mut free = None;
        for j in 0..KEY_WINDOW {
            let n = self.start.wrapping_add(j);
            let pending = pending(n);
            match pending.as_ref().or_else(|| self.holder(n)) {
                Some(h) if h == id => return Ok((n, true)),
                Some(_) => {}
                None => {
                    free.get_or_insert(n);
                }
            }
        }
        free.map(|n| (n, false)).ok_or_else(|| {
            Error::InvalidArgument(format!(
                "string id {:?}: all {KEY_WINDOW} numeric ids of its window are taken (by ids \
                 chosen to collide with its hash)",
                key.chars().take(60).collect::<String>()
            ))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_id_rule() {
        assert_eq!(DocId::parse("5"), DocId::Num(5));
        assert_eq!(DocId::parse("0"), DocId::Num(0));
        assert_eq!(DocId::parse("18446744073709551615"), DocId::Num(u64::MAX));
        for s in [
            "05",
            "+5",
            "-5",
            " 5",
            "5 ",
            "18446744073709551616",
            "",
            "x5",
            "5.0",
        ] {
            assert_eq!(DocId::parse(s), DocId::Key(Arc::from(s)), "{s:?}");
        }
        assert!(DocId::parse("").check().is_err());
        assert!(DocId::parse(&"x".repeat(MAX_KEY_BYTES)).check().is_ok());
        assert!(
            DocId::parse(&"x".repeat(MAX_KEY_BYTES + 1))
                .check()
                .is_err()
        );
    }
}
