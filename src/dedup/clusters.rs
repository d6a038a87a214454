//! Clusters of near-duplicates: union-find whose roots are the smallest members.

/// Union-find over members `0..n`, each component's root its smallest member.
///
/// ```
/// use simdex::dedup::Clusters;
/// let mut c = Clusters::new(5);
/// c.join(3, 1);
/// c.join(4, 3);
/// assert_eq!(c.roots(), vec![0, 1, 2, 1, 1]);
/// ```
#[derive(Debug, Clone)]
pub struct Clusters {
    parent: Vec<usize>,
}

impl Clusters {
    /// `n` members, each alone.
    pub fn new(n: usize) -> Clusters {
        Clusters {
            parent: (0..n).collect(),
        }
    }

    /// Members.
    pub fn len(&self) -> usize {
        self.parent.len()
    }

    /// True when there are no members.
    pub fn is_empty(&self) -> bool {
        self.parent.is_empty()
    }

    /// Put `a` and `b` in one cluster (the smaller root becomes the root).
    pub fn join(&mut self, a: usize, b: usize) {
        let (ra, rb) = (self.find(a), self.find(b));
        if ra != rb {
            self.parent[ra.max(rb)] = ra.min(rb);
        }
    }

    /// The smallest member of `x`'s cluster (halving the path on the way, so that repeated
    /// look-ups stay near constant time).
    pub fn find(&mut self, mut x: usize) -> usize {
        let p = &mut self.parent;
        while p[x] != x {
            p[x] = p[p[x]];
            x = p[x];
        }
        x
    }

    /// The smallest member of every member's cluster.
    pub fn roots(&mut self) -> Vec<usize> {
        (0..self.len()).map(|i| self.find(i)).collect()
    }

    /// The clusters of two or more members, each ascending, in order of their smallest member.
    pub fn groups(&mut self) -> Vec<Vec<usize>> {
        let roots = self.roots();
        let mut at: Vec<usize> = vec![usize::MAX; roots.len()];
        let mut out: Vec<Vec<usize>> = Vec::new();
        for (i, &r) in roots.iter().enumerate() {
            if at[r] == usize::MAX {
                at[r] = out.len();
                out.push(Vec::new());
            }
            out[at[r]].push(i);
        }
        out.retain(|g| g.len() > 1);
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Against a naive closure on random graphs: the same partition, roots the smallest.
    #[test]
    fn components_match_a_naive_closure() {
        let mut rng = crate::dedup::xorshift(0x9E37_79B9_7F4A_7C15);
        let mut next = |m: usize| (rng() % m as u64) as usize;
        for n in [1usize, 2, 10, 200] {
            let edges: Vec<(usize, usize)> = (0..n).map(|_| (next(n), next(n))).collect();
            let mut c = Clusters::new(n);
            for &(a, b) in &edges {
                c.join(a, b);
            }
            // Naive: relabel to the minimum until nothing changes.
            let mut label: Vec<usize> = (0..n).collect();
            loop {
                let mut changed = false;
                for &(a, b) in &edges {
                    let m = label[a].min(label[b]);
                    for v in [a, b] {
                        if label[v] != m {
                            label[v] = m;
                            changed = true;
                        }
                    }
                }
                if !changed {
                    break;
                }
            }
            for i in 0..n {
                label[i] = label[label[i]];
            }
            assert_eq!(c.roots(), label, "n = {n}");
            let groups = c.groups();
            assert!(
                groups
                    .iter()
                    .all(|g| g.len() > 1 && g.windows(2).all(|w| w[0] < w[1]))
            );
            assert!(groups.windows(2).all(|w| w[0][0] < w[1][0]));
        }
    }
}
