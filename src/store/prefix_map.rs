//! Prefix shingle → ids, for the documents of a delta layer or of a call (`super::prefix`):
//! an open-addressing table probed linearly, of 8-byte entries.
//!
//! A document adds some twenty entries and looks up as many shingles, nearly all of them
//! absent, each at a random place in a table of millions: the cost is the cache misses. Here
//! a probe sequence is one cache line, rarely two, and a document's shingles are inserted or
//! looked up together, every line prefetched before the first is read, so that their misses
//! overlap (a hash map of first values plus a map of further ones, looked up one shingle at a
//! time, was a tenth of an exact ingest's CPU).
//!
//! An entry is a shingle's top 32 bits and the ordinal of the insert that added it (an index
//! into the inserts' ids), as in the generation's index (`super::prefix_index`): a shingle
//! that only shares its top bits with an entry's finds a document that does not hold it, one
//! more candidate, compared exactly like the others. Shingles are placed by a hash with the
//! process's random key (`super::hasher`), so that crafted texts cannot pile them into one run.

use std::hash::BuildHasher;

use super::hasher::Seeded;
use super::prefix_index::{prefetch_read, top};

/// See the module docs.
#[derive(Clone, Default)]
pub(crate) struct PrefixMap {
    /// `top << 32 | (ordinal + 1)`, 0 where free; a power of two long, at most half full
    /// (empty: nothing allocated yet).
    slots: Vec<u64>,
    /// Each insert's id, by ordinal.
    ids: Vec<u64>,
    /// Entries held.
    len: usize,
    hasher: Seeded,
}

impl std::fmt::Debug for PrefixMap {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PrefixMap")
            .field("len", &self.len)
            .field("slots", &self.slots.len())
            .finish()
    }
}

impl PrefixMap {
    /// Where the probe sequence of shingles with top bits `top` starts.
    fn home(&self, top: u32) -> usize {
        let bits = self.slots.len().trailing_zeros();
        (self.hasher.hash_one(top) >> (64 - bits)) as usize
    }

    /// Room for `more` entries without growing past half full.
    fn reserve(&mut self, more: usize) {
        let need = self.len + more;
        if need * 2 <= self.slots.len() {
            return;
        }
        let cap = (need * 2).next_power_of_two().max(64);
        // In huge pages where it is large: each entry lands on a random page, and a layer's
        // table, allocated afresh as it grows, was four in ten of an exact ingest's page
        // faults with small ones.
        let mut slots = Vec::with_capacity(cap);
        crate::os::huge_pages(&mut slots);
        slots.resize(cap, 0);
        let old = std::mem::replace(&mut self.slots, slots);
        for e in old.into_iter().filter(|&e| e != 0) {
            let free = self.probe((e >> 32) as u32).find(|&(_, e)| e == 0);
            if let Some((i, _)) = free {
                self.slots[i] = e;
            }
        }
    }

    /// Add `id` under each of `tokens` (where it is not there already).
    pub(crate) fn insert_all(&mut self, tokens: &[u64], id: u64) {
        if tokens.is_empty() {
            return;
        }
        let ord = self.ids.len();
        self.ids.push(id);
        self.reserve(tokens.len());
        self.prefetch(tokens);
        for &t in tokens {
            self.put(top(t), ord);
        }
    }

    /// Add every entry of `newer` (its inserts' ids after this map's).
    pub(crate) fn absorb(&mut self, newer: &PrefixMap) {
        let base = self.ids.len();
        self.ids.extend_from_slice(&newer.ids);
        self.reserve(newer.len);
        for e in newer.slots.iter().filter(|&&e| e != 0) {
            self.put((e >> 32) as u32, base + (*e as u32 - 1) as usize);
        }
    }

    /// Add the entry of top bits `t` for insert `ord`, unless one of `t` for the same id is
    /// there already (room reserved).
    fn put(&mut self, t: u32, ord: usize) {
        // An ordinal is 32 bits: a table of 4 billion documents would need terabytes first.
        let slot = u32::try_from(ord + 1).expect("fewer than 2^32 documents");
        let id = self.ids[ord];
        // Its first free slot, unless (t, id) is there already.
        let free = self.probe(t).find_map(|(i, e)| match e {
            0 => Some(Some(i)),
            _ if (e >> 32) as u32 == t && self.ids[(e as u32 - 1) as usize] == id => Some(None),
            _ => None,
        });
        if let Some(Some(i)) = free {
            self.slots[i] = u64::from(t) << 32 | u64::from(slot);
            self.len += 1;
        }
    }

    /// For each of `tokens`, the ids under its top bits (each once), appended to `out` in no
    /// particular order.
    pub(crate) fn get_all(&self, tokens: &[u64], out: &mut Vec<u64>) {
        if self.len == 0 {
            return;
        }
        self.prefetch(tokens);
        for &t in tokens {
            let t = top(t);
            for (_, e) in self.probe(t).take_while(|&(_, e)| e != 0) {
                if (e >> 32) as u32 == t {
                    out.push(self.ids[(e as u32 - 1) as usize]);
                }
            }
        }
    }

    /// Ask for the first cache line of each of `tokens`' probe sequences (a table is there).
    fn prefetch(&self, tokens: &[u64]) {
        for &t in tokens {
            prefetch_read(&self.slots[self.home(top(t))]);
        }
    }

    /// The probe sequence of shingles with top bits `top`: (slot, entry) from its home to the
    /// first free slot, that one included (a table is there, never full).
    fn probe(&self, top: u32) -> impl Iterator<Item = (usize, u64)> + '_ {
        let mask = self.slots.len() - 1;
        let mut i = self.home(top);
        let mut ended = false;
        std::iter::from_fn(move || {
            if ended {
                return None;
            }
            let (at, e) = (i, self.slots[i]);
            ended = e == 0;
            i = (i + 1) & mask;
            Some((at, e))
        })
    }

    /// Each insert's id, by ordinal.
    pub(crate) fn ids(&self) -> &[u64] {
        &self.ids
    }

    /// Every entry as (top 32 bits, the ordinal of the insert that added it), in no particular
    /// order.
    pub(crate) fn entries(&self) -> impl Iterator<Item = (u32, u32)> + '_ {
        (self.slots.iter())
            .filter(|&&e| e != 0)
            .map(|&e| ((e >> 32) as u32, e as u32 - 1))
    }

    /// Every entry as (a shingle with its top bits, id), in no particular order.
    #[cfg(test)]
    pub(crate) fn iter(&self) -> impl Iterator<Item = (u64, u64)> + '_ {
        (self.entries()).map(|(t, o)| (u64::from(t) << 32, self.ids[o as usize]))
    }

    /// Empty, keeping the memory.
    pub(crate) fn clear(&mut self) {
        if self.len > 0 {
            self.slots.fill(0);
            self.len = 0;
        }
        self.ids.clear();
    }

    /// Entries held.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.len
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeSet;

    /// Random documents' inserts, look-ups and clears against an ordered set of (top bits,
    /// id): few distinct top bits under many shingles (so that runs collide and wrap, and a
    /// shingle finds another's entries), the zero top bits among them, and ids put again.
    #[test]
    fn agrees_with_a_set_of_pairs() {
        let mut m = PrefixMap::default();
        let mut want: BTreeSet<(u32, u64)> = BTreeSet::new();
        let mut x = 11u64;
        let token = |x: u64| (x % 300) << 32 | (x >> 40);
        for step in 0..40_000 {
            x = crate::checksum::mix64(x);
            let id = (x >> 20) % 40;
            if step % 5000 == 4999 {
                m.clear();
                want.clear();
            }
            let ts: Vec<u64> = (0..(x >> 58) % 24).map(|j| token(x.rotate_left(j as u32 * 7))).collect();
            m.insert_all(&ts, id);
            want.extend(ts.iter().map(|&t| (top(t), id)));
            assert_eq!(m.len(), want.len(), "step {step}");
            let probe = [token(x >> 3), token(x), token(x >> 3)];
            let mut got = Vec::new();
            m.get_all(&probe, &mut got);
            got.sort_unstable();
            let mut all: Vec<u64> = probe
                .iter()
                .flat_map(|&t| want.range((top(t), 0)..=(top(t), u64::MAX)).map(|p| p.1))
                .collect();
            all.sort_unstable();
            assert_eq!(got, all, "step {step}");
        }
        let mut all: Vec<(u32, u64)> = m.iter().map(|(t, id)| (top(t), id)).collect();
        all.sort_unstable();
        assert_eq!(all, want.into_iter().collect::<Vec<_>>());
        assert!(m.iter().all(|(t, _)| t << 32 == 0));
    }

    /// A map absorbing another holds the union of their entries, each once, and finds each
    /// id under its top bits (as replaying several logs into one layer needs).
    #[test]
    fn absorbing_a_map_holds_the_union() {
        let mut x = 5u64;
        let mut fill = |m: &mut PrefixMap, want: &mut BTreeSet<(u32, u64)>| {
            for _ in 0..2_000 {
                x = crate::checksum::mix64(x);
                let ts: Vec<u64> = (0..x % 12).map(|j| (x.rotate_left(j as u32 * 5) % 200) << 32).collect();
                let id = (x >> 30) % 60;
                m.insert_all(&ts, id);
                want.extend(ts.iter().map(|&t| (top(t), id)));
            }
        };
        let (mut a, mut b) = (PrefixMap::default(), PrefixMap::default());
        let mut want = BTreeSet::new();
        fill(&mut a, &mut want);
        fill(&mut b, &mut want);
        a.absorb(&b);
        assert_eq!(a.len(), want.len());
        let mut all: Vec<(u32, u64)> = a.iter().map(|(t, id)| (top(t), id)).collect();
        all.sort_unstable();
        assert_eq!(all, want.iter().copied().collect::<Vec<_>>());
        for t in 0..200u64 {
            let mut got = Vec::new();
            a.get_all(&[t << 32], &mut got);
            got.sort_unstable();
            let ids: Vec<u64> = want.range((t as u32, 0)..=(t as u32, u64::MAX)).map(|p| p.1).collect();
            assert_eq!(got, ids, "top {t}");
        }
    }

    #[test]
    fn an_empty_map_finds_nothing() {
        let mut m = PrefixMap::default();
        let mut out = Vec::new();
        m.get_all(&[1, 2, 0], &mut out);
        m.insert_all(&[], 7);
        m.get_all(&[1, 2, 0], &mut out);
        assert!(out.is_empty());
        assert_eq!(m.iter().count(), 0);
    }
}
