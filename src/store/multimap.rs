//! A set of (key, value) pairs of u64s looked up by key, for the delta's pairs: nearly every
//! key has one value (a fingerprint one document, a document one fingerprint), so the first
//! value of a key lives in a plain map entry of 16 bytes and only further ones in a second map.
//!
//! Before, the delta kept its pairs in two B-trees (by fingerprint and by id), whose descents
//! were a tenth of a document ingest's write step. Measured (`cargo bench --bench store`, 1M
//! pairs into a delta): `insert_many` 4.3 → 3.3 s, for 244 → 271 bytes per pair with 10 tables;
//! maps holding a `Vec` per key cost 75 MB more than the B-trees at 1M documents, this layout
//! 44 MB.

use super::hasher::FastMap;
use std::collections::hash_map::Entry;

/// See the module docs.
#[derive(Debug, Clone, Default)]
pub(crate) struct MultiMap {
    /// Key → its smallest value.
    first: FastMap<u64>,
    /// Key → its other values, ascending (only keys with more than one).
    rest: FastMap<Vec<u64>>,
    len: usize,
}

impl MultiMap {
    /// Add (key, v); false if it was there. True in `.1` if `key` had no value before.
    pub(crate) fn insert(&mut self, key: u64, v: u64) -> (bool, bool) {
        let mut v = v;
        match self.first.entry(key) {
            Entry::Vacant(e) => {
                e.insert(v);
                self.len += 1;
                return (true, true);
            }
            Entry::Occupied(mut e) => {
                let f = e.get_mut();
                if *f == v {
                    return (false, false);
                }
                if v < *f {
                    std::mem::swap(f, &mut v);
                }
            }
        }
        let rest = self.rest.entry(key).or_default();
        match rest.binary_search(&v) {
            Ok(_) => (false, false),
            Err(i) => {
                rest.insert(i, v);
                self.len += 1;
                (true, false)
            }
        }
    }

    /// Empty, keeping the memory.
    pub(crate) fn clear(&mut self) {
        self.first.clear();
        self.rest.clear();
        self.len = 0;
    }

    /// Remove (key, v) if there; true if `key` has no value left.
    pub(crate) fn remove(&mut self, key: u64, v: u64) -> bool {
        let Some(&f) = self.first.get(&key) else {
            return true;
        };
        let Entry::Occupied(mut rest) = self.rest.entry(key) else {
            if f == v {
                self.first.remove(&key);
                self.len -= 1;
                return true;
            }
            return false;
        };
        let vs = rest.get_mut();
        if f == v {
            self.first.insert(key, vs.remove(0));
            self.len -= 1;
        } else if let Ok(i) = vs.binary_search(&v) {
            vs.remove(i);
            self.len -= 1;
        }
        if vs.is_empty() {
            rest.remove();
        }
        false
    }

    /// Remove `key` and return its values, ascending.
    pub(crate) fn take(&mut self, key: u64) -> Vec<u64> {
        let Some(f) = self.first.remove(&key) else {
            return Vec::new();
        };
        let mut vs = self.rest.remove(&key).unwrap_or_default();
        vs.insert(0, f);
        self.len -= vs.len();
        vs
    }

    /// `key`'s values, ascending.
    pub(crate) fn get(&self, key: u64) -> impl Iterator<Item = u64> + '_ {
        let first = self.first.get(&key).copied();
        let rest = first.and_then(|_| self.rest.get(&key));
        first
            .into_iter()
            .chain(rest.into_iter().flat_map(|vs| vs.iter().copied()))
    }

    /// Every pair, in no particular order.
    pub(crate) fn iter(&self) -> impl Iterator<Item = (u64, u64)> + '_ {
        self.first.iter().map(|(&k, &v)| (k, v)).chain(
            self.rest
                .iter()
                .flat_map(|(&k, vs)| vs.iter().map(move |&v| (k, v))),
        )
    }

    /// Pairs held.
    pub(crate) fn len(&self) -> usize {
        self.len
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeSet;

    /// Random inserts, removes and takes against an ordered set of pairs.
    #[test]
    fn agrees_with_a_set_of_pairs() {
        let mut m = MultiMap::default();
        let mut want: BTreeSet<(u64, u64)> = BTreeSet::new();
        let mut x = 7u64;
        for step in 0..20_000 {
            x = crate::checksum::mix64(x);
            // Few keys and values, so keys gather several values.
            let (k, v) = (x % 50, (x >> 20) % 8);
            match x >> 60 {
                0..=8 => {
                    let had = want.range((k, 0)..=(k, u64::MAX)).next().is_none();
                    assert_eq!(m.insert(k, v), (want.insert((k, v)), had), "step {step}");
                }
                9..=14 => {
                    want.remove(&(k, v));
                    let none = want.range((k, 0)..=(k, u64::MAX)).next().is_none();
                    assert_eq!(m.remove(k, v), none, "step {step}");
                }
                _ => {
                    let vs: Vec<u64> = want.range((k, 0)..=(k, u64::MAX)).map(|p| p.1).collect();
                    vs.iter().for_each(|&v| {
                        want.remove(&(k, v));
                    });
                    assert_eq!(m.take(k), vs, "step {step}");
                }
            }
            assert_eq!(m.len(), want.len());
            let got: Vec<u64> = m.get(k).collect();
            let vs: Vec<u64> = want.range((k, 0)..=(k, u64::MAX)).map(|p| p.1).collect();
            assert_eq!(got, vs, "step {step}");
        }
        let mut all: Vec<(u64, u64)> = m.iter().collect();
        all.sort_unstable();
        assert_eq!(all, want.into_iter().collect::<Vec<_>>());
    }
}
