//! Sorting batch mode's probe lists by probe key in parts, so that a cancellation is heard
//! while a large list sorts.
//!
//! A table's probe list holds the batch once per probe flip (33 times for m2c1r1), so one
//! list can hold tens of millions of entries, seconds of sorting on one core. One in-place
//! pass first moves every entry to the bucket of its key's top byte (an American flag sort:
//! count, then swap each entry into its bucket's next free slot), then each of the 256
//! buckets is sorted alone. The caller's check is asked between those sorts and every 2^18
//! entries of the pass (whose swaps cluster in the first buckets: checked only between
//! buckets, one list of 13M entries ran half a second unheard). No memory beyond the list;
//! probe keys are permuted fingerprints, so the buckets come out about even (a skewed list
//! only makes one bucket large: still sorted, heard less often).

use crate::error::Result;

/// Lists shorter than this are sorted whole (one check): the bucket pass would cost more than
/// it saves.
const BUCKET_MIN: usize = 1 << 14;

/// Slots the bucket pass settles between two checks: a few milliseconds of swaps.
const CHECK_EVERY: usize = 1 << 18;

/// Sort `v` by its entries' first element (the probe key), calling `check` before each part
/// (every [`CHECK_EVERY`] entries of the bucket pass, each bucket's sort) and returning its
/// error, if any, with `v` partly sorted.
pub(crate) fn sort_by_key(v: &mut [(u64, u64)], check: impl Fn() -> Result<()>) -> Result<()> {
    if v.len() < BUCKET_MIN {
        check()?;
        v.sort_unstable_by_key(|e| e.0);
        return Ok(());
    }
    let bucket = |e: &(u64, u64)| (e.0 >> 56) as usize;
    let mut end = [0usize; 256];
    for e in v.iter() {
        end[bucket(e)] += 1;
    }
    let mut start = [0usize; 256];
    let mut at = 0;
    for b in 0..256 {
        start[b] = at;
        at += end[b];
        end[b] = at;
    }
    // Every slot before `next[b]` in bucket b holds one of b's entries. Take the entry at a
    // bucket's first unsettled slot and swap it along into the buckets it belongs to until one
    // of this bucket's own comes back to fill the slot: each swap settles one slot.
    // The pass can take as long as the sorts after it, and most of it is spent in the first
    // buckets' chains, so it is heard every CHECK_EVERY settled slots, between chains (where
    // `v` still holds every entry once).
    let mut next = start;
    let mut settled = 0usize;
    check()?;
    for b in 0..256 {
        while next[b] < end[b] {
            let mut e = v[next[b]];
            let mut d = bucket(&e);
            while d != b {
                std::mem::swap(&mut e, &mut v[next[d]]);
                next[d] += 1;
                settled += 1;
                d = bucket(&e);
            }
            v[next[b]] = e;
            next[b] += 1;
            settled += 1;
            if settled >= CHECK_EVERY {
                settled -= CHECK_EVERY;
                check()?;
            }
        }
    }
    for b in 0..256 {
        check()?;
        v[start[b]..end[b]].sort_unstable_by_key(|e| e.0);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::Error;

    /// The same order by key as a plain sort (entries equal in key may come in any order),
    /// the same entries, for lists short and long, even and skewed.
    #[test]
    fn sorts_as_a_plain_sort_by_key() {
        let mut s = 7u64;
        let mut rand = move || {
            s = s.wrapping_add(0x9e37_79b9_7f4a_7c15);
            let mut z = s;
            z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
            z ^ (z >> 31)
        };
        let lists: Vec<Vec<(u64, u64)>> = vec![
            vec![],
            (0..100).map(|i| (rand(), i)).collect(),
            (0..100_000).map(|i| (rand(), i)).collect(),
            // One top byte for most keys, a few others, repeated keys.
            (0..50_000)
                .map(|i| match i % 10 {
                    0 => (rand(), i),
                    1 => (42, i),
                    _ => (0x5a00_0000_0000_0000 | (rand() >> 8), i),
                })
                .collect(),
        ];
        for list in lists {
            let mut got = list.clone();
            sort_by_key(&mut got, || Ok(())).unwrap();
            assert!(
                got.windows(2).all(|w| w[0].0 <= w[1].0),
                "{} entries",
                list.len()
            );
            let (mut a, mut b) = (got.clone(), list.clone());
            a.sort_unstable();
            b.sort_unstable();
            assert_eq!(a, b, "{} entries: not the same entries", list.len());
        }
    }

    /// A check that fails stops the sort with its error, before the first part and between
    /// later ones, however the work falls between buckets.
    #[test]
    fn a_failed_check_stops_it() {
        let mut v: Vec<(u64, u64)> = (0..100_000u64)
            .map(|i| (i.wrapping_mul(0x9e37_79b9_7f4a_7c15), i))
            .collect();
        let r = sort_by_key(&mut v, || Err(Error::Cancelled));
        assert!(matches!(r, Err(Error::Cancelled)));
        let calls = std::cell::Cell::new(0);
        let r = sort_by_key(&mut v, || {
            calls.set(calls.get() + 1);
            if calls.get() > 3 {
                Err(Error::Cancelled)
            } else {
                Ok(())
            }
        });
        assert!(matches!(r, Err(Error::Cancelled)));
        assert_eq!(calls.get(), 4);
        // Heard before the pass, every CHECK_EVERY entries it settles, and before each
        // bucket's sort.
        let mut long: Vec<(u64, u64)> = (0..3 * CHECK_EVERY as u64 + 5)
            .map(|i| (i.wrapping_mul(0x9e37_79b9_7f4a_7c15), i))
            .collect();
        let calls = std::cell::Cell::new(0);
        sort_by_key(&mut long, || {
            calls.set(calls.get() + 1);
            Ok(())
        })
        .unwrap();
        assert_eq!(calls.get(), 1 + 3 + 256);
        let mut short = vec![(3u64, 0u64), (1, 1)];
        assert!(sort_by_key(&mut short, || Err(Error::Cancelled)).is_err());
    }
}
