//! Identical documents folded before verification: documents with the same fingerprint and the
//! same shingle set are one candidate row, so a group of n copies costs n, not n²/2 pairs.
//!
//! Two such documents are a verified pair by definition (distance 0, Jaccard 1), so a verifier
//! joins or lists them without a set merge, and a pair verified between two groups' first
//! members holds for every member of one against every member of the other. Sets are compared
//! by a 128-bit hash (xxh3-128 of the fingerprint and the set's hashes): two distinct sets
//! sharing it is as likely as two fingerprints colliding in a corpus of 2^32 documents, squared.
//! Empty sets are never folded (a document without shingles is nobody's near-duplicate).

use std::collections::HashMap;

/// No next member.
const END: u32 = u32::MAX;

/// Builds [`Groups`] from documents offered in order.
#[derive(Debug, Default)]
pub struct Folder {
    first: HashMap<u128, u32>,
    groups: Groups,
}

impl Folder {
    /// No documents yet.
    pub fn new() -> Folder {
        Folder::default()
    }

    /// Offer the next document (numbered `0, 1, ...` in the order offered) with its fingerprint
    /// and ascending shingle set. Returns whether it starts a group: the caller keeps such a
    /// document as a candidate row (rows numbered in the order of these), and may drop the set
    /// of one that does not.
    pub fn offer(&mut self, fp: u64, set: &[u64]) -> bool {
        let doc = self.groups.next.len() as u32;
        self.groups.next.push(END);
        if !set.is_empty() {
            let mut h = xxhash_rust::xxh3::Xxh3::new();
            h.update(&fp.to_le_bytes());
            for x in set {
                h.update(&x.to_le_bytes());
            }
            match self.first.entry(h.digest128()) {
                std::collections::hash_map::Entry::Occupied(e) => {
                    let row = *e.get() as usize;
                    // Prepended after the first member: members stay in no particular order
                    // but the first, which is the group's smallest document.
                    let first = self.groups.first[row] as usize;
                    self.groups.next[doc as usize] = self.groups.next[first];
                    self.groups.next[first] = doc;
                    self.groups.folded += 1;
                    return false;
                }
                std::collections::hash_map::Entry::Vacant(e) => {
                    e.insert(self.groups.first.len() as u32);
                }
            }
        }
        self.groups.first.push(doc);
        true
    }

    /// Bytes held: the hash table and the groups.
    pub fn memory_bytes(&self) -> u64 {
        self.first.capacity() as u64 * 21 + self.groups.memory_bytes()
    }

    /// The groups (the hash table dropped).
    pub fn finish(self) -> Groups {
        self.groups
    }
}

/// Groups of identical documents: each candidate row stands for one or more documents.
#[derive(Debug, Default, Clone)]
pub struct Groups {
    /// Each row's first (smallest) document.
    first: Vec<u32>,
    /// Each document's next member in its group, or `END`.
    next: Vec<u32>,
    folded: u64,
}

impl Groups {
    /// Candidate rows.
    pub fn rows(&self) -> usize {
        self.first.len()
    }

    /// Documents.
    pub fn docs(&self) -> usize {
        self.next.len()
    }

    /// Documents folded into another one's row.
    pub fn folded(&self) -> u64 {
        self.folded
    }

    /// Bytes held.
    pub fn memory_bytes(&self) -> u64 {
        (self.first.capacity() + self.next.capacity()) as u64 * 4
    }

    /// The documents of `row`, its first (smallest) one first.
    pub fn members(&self, row: u32) -> impl Iterator<Item = u32> + '_ {
        let mut at = self.first[row as usize];
        std::iter::from_fn(move || {
            (at != END).then(|| {
                let doc = at;
                at = self.next[doc as usize];
                doc
            })
        })
    }

    /// Every pair of documents `(a, b)`, `a < b`, within one group.
    pub fn within(&self) -> impl Iterator<Item = (u32, u32)> + '_ {
        (0..self.rows() as u32)
            .filter(|&r| self.next[self.first[r as usize] as usize] != END)
            .flat_map(move |r| {
                self.members(r).enumerate().flat_map(move |(i, a)| {
                    self.members(r)
                        .skip(i + 1)
                        .map(move |b| (a.min(b), a.max(b)))
                })
            })
    }

    /// The document pairs `(a, b)`, `a < b`, that a pair of rows stands for.
    pub fn expand(&self, x: u32, y: u32) -> impl Iterator<Item = (u32, u32)> + '_ {
        self.members(x)
            .flat_map(move |a| self.members(y).map(move |b| (a.min(b), a.max(b))))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn folds_equal_fingerprint_and_set_only() {
        let mut f = Folder::new();
        let docs: [(u64, &[u64]); 7] = [
            (1, &[1, 2, 3]),
            (1, &[1, 2, 3]), // same as 0
            (2, &[1, 2, 3]), // other fingerprint
            (1, &[1, 2]),    // other set
            (1, &[]),        // empty: never folded
            (1, &[]),
            (1, &[1, 2, 3]), // same as 0
        ];
        let starts: Vec<bool> = docs.iter().map(|(fp, s)| f.offer(*fp, s)).collect();
        assert_eq!(starts, [true, false, true, true, true, true, false]);
        let g = f.finish();
        assert_eq!((g.rows(), g.docs(), g.folded()), (5, 7, 2));
        let mut m: Vec<u32> = g.members(0).collect();
        assert_eq!(m[0], 0);
        m.sort();
        assert_eq!(m, [0, 1, 6]);
        assert_eq!(g.members(1).collect::<Vec<_>>(), [2]);
        let mut w: Vec<_> = g.within().collect();
        w.sort();
        assert_eq!(w, [(0, 1), (0, 6), (1, 6)]);
        let mut e: Vec<_> = g.expand(1, 0).collect();
        e.sort();
        assert_eq!(e, [(0, 2), (1, 2), (2, 6)]);
    }
}
