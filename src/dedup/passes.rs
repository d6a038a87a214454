//! Verification within a memory budget: the candidate pairs checked in passes over the
//! documents, each pass holding at most a budget of shingle sets.
//!
//! A pass keeps the sets of a window of consecutive rows that are the smaller row of some pair
//! (as many as fit the budget, at least one), and checks each of their pairs when it reaches
//! the larger row, whose set it needs only for that moment. One pass when everything fits;
//! however many candidates there are, memory stays bounded. The caller owns the documents (a
//! file read again for each pass, texts in memory) and computes sets, on all cores if it likes;
//! this type decides which rows a pass needs and keeps the verdicts.

use std::collections::HashMap;

/// Bytes a kept set is counted for: its hashes and its vector's header.
fn cost(set: &[u64]) -> u64 {
    set.len() as u64 * 8 + 24
}

/// Passes of verification over rows `0..n` (see the module docs).
#[derive(Debug)]
pub struct Passes {
    n: usize,
    t: f64,
    budget: u64,
    /// Whether each row is the smaller of some pair.
    smaller: Vec<bool>,
    /// The pairs `(b, a, distance)` by their larger row `b`: those of row `r` are
    /// `by_b[from[r]..from[r + 1]]`.
    by_b: Vec<(u32, u32, u32)>,
    from: Vec<usize>,
    /// This pass's window starts at `lo` and, once closed, ends at `end`.
    lo: usize,
    end: usize,
    open: bool,
    bytes: u64,
    kept: HashMap<u32, Vec<u64>>,
    /// The last row offered this pass (rows come in ascending order).
    last: Option<usize>,
    verified: Vec<(u32, u32, u32, f64)>,
}

impl Passes {
    /// Verification of `pairs` `(a, b, distance)` (`a < b < n`) at Jaccard ≥ `t`, holding at
    /// most `budget` bytes of sets at once (but always one window row).
    pub fn new(pairs: &[(u32, u32, u32)], n: usize, t: f64, budget: u64) -> Passes {
        let mut smaller = vec![false; n];
        let mut by_b: Vec<(u32, u32, u32)> = pairs.iter().map(|&(a, b, d)| (b, a, d)).collect();
        by_b.sort_unstable();
        let mut from = vec![0usize; n + 1];
        for &(a, b, _) in pairs {
            smaller[a as usize] = true;
            from[b as usize + 1] += 1;
        }
        for i in 0..n {
            from[i + 1] += from[i];
        }
        let lo = smaller.iter().position(|&x| x).unwrap_or(n);
        Passes {
            n,
            t,
            budget,
            smaller,
            by_b,
            from,
            lo,
            end: lo,
            open: true,
            bytes: 0,
            kept: HashMap::new(),
            last: None,
            verified: Vec::new(),
        }
    }

    /// Bytes a `Passes` over `pairs` pairs and `n` rows holds besides its sets (the pairs
    /// indexed by their larger row, and two entries per row): what a caller subtracts from its
    /// budget before giving the rest to the sets.
    pub fn index_bytes(pairs: usize, n: usize) -> u64 {
        (pairs * std::mem::size_of::<(u32, u32, u32)>() + n * 9) as u64
    }

    /// Whether a pass remains to be made (call [`offer`](Self::offer) for the rows it
    /// [`wants`](Self::wants), in ascending order, then [`end_pass`](Self::end_pass)).
    pub fn pending(&self) -> bool {
        self.lo < self.n
    }

    /// Whether this pass needs row `r`'s set: a row that may join the window, or the larger
    /// row of a pair whose smaller row may be in it. May say yes to rows that turn out not to
    /// be needed (the window closes while a caller computes sets ahead).
    pub fn wants(&self, r: usize) -> bool {
        r < self.n
            && ((self.open && r >= self.lo && self.smaller[r])
                || self.by_b[self.from[r]..self.from[r + 1]]
                    .iter()
                    .any(|p| p.1 as usize >= self.lo && p.1 as usize <= self.limit()))
    }

    /// The last row the window may hold so far.
    fn limit(&self) -> usize {
        if self.open { usize::MAX } else { self.end }
    }

    /// Row `r`'s set (rows in ascending order within a pass; rows not wanted may be skipped).
    pub fn offer(&mut self, r: usize, set: Vec<u64>) {
        debug_assert!(self.last.is_none_or(|l| l < r), "rows out of order");
        self.last = Some(r);
        for &(_, a, d) in &self.by_b[self.from[r]..self.from[r + 1]] {
            if let Some(sa) = self.kept.get(&a)
                && let Some(jac) = super::verify::verify_pair(sa, &set, self.t)
            {
                self.verified.push((a, r as u32, d, jac));
            }
        }
        if self.open && r >= self.lo && self.smaller[r] {
            if self.bytes > 0 && self.bytes + cost(&set) > self.budget {
                self.open = false;
            } else {
                self.bytes += cost(&set);
                self.kept.insert(r as u32, set);
                self.end = r;
            }
        }
    }

    /// End the pass: the window's pairs are all checked; the next pass starts after it.
    pub fn end_pass(&mut self) {
        self.lo = (self.end + 1..self.n)
            .find(|&r| self.smaller[r])
            .unwrap_or(self.n);
        self.end = self.lo;
        self.open = true;
        self.bytes = 0;
        self.kept.clear();
        self.last = None;
    }

    /// The verified pairs `(a, b, distance, jaccard)`, sorted.
    pub fn finish(mut self) -> Vec<(u32, u32, u32, f64)> {
        self.verified.sort_unstable_by_key(|p| (p.0, p.1));
        self.verified
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dedup::verify::{shingle_set, verify};

    /// Any budget gives the one-shot answer: texts with planted near-copies, every pair a
    /// candidate, budgets from everything-fits down to one row per pass.
    #[test]
    fn passes_give_the_one_shot_answer_at_any_budget() {
        let mut s = 5;
        let base: Vec<String> = (0..30)
            .map(|_| {
                (0..40)
                    .map(|_| format!("w{}", crate::sample::splitmix64(&mut s) % 300))
                    .collect::<Vec<_>>()
                    .join(" ")
            })
            .collect();
        let texts: Vec<String> = (0..90)
            .map(|i| {
                let mut w: Vec<String> = base[i % 30].split(' ').map(String::from).collect();
                let k = i / 30;
                for j in 0..k * 3 {
                    w[(j * 7) % 40] = format!("x{i}");
                }
                w.join(" ")
            })
            .collect();
        let sets: Vec<Vec<u64>> = texts.iter().map(|t| shingle_set(t, 3)).collect();
        let n = texts.len();
        let pairs: Vec<(u32, u32, u32)> = (0..n as u32)
            .flat_map(|a| (a + 1..n as u32).map(move |b| (a, b, 0)))
            .collect();
        let want = verify(&sets, &pairs, 0.5);
        assert!(want.len() >= 30, "{}", want.len());
        for budget in [u64::MAX, 50_000, 5_000, 0] {
            let mut p = Passes::new(&pairs, n, 0.5, budget);
            let mut passes = 0;
            while p.pending() {
                passes += 1;
                for (r, set) in sets.iter().enumerate() {
                    if p.wants(r) {
                        p.offer(r, set.clone());
                    }
                }
                p.end_pass();
            }
            assert_eq!(p.finish(), want, "budget {budget}");
            assert!(budget < u64::MAX || passes == 1);
            assert!(budget > 0 || passes == n - 1, "{passes} passes");
        }
    }
}
