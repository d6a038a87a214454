//! A store's `near_many` (its tables asked as a batch, ids looked up once, the delta resolved a
//! chunk at a time) against `near` query by query and against brute force over a model: ids
//! in the generation and in the delta, deletes of either, fingerprints with several ids,
//! repeated queries, every k, batches small (query by query in the tables) and large (the
//! tables' scan), and a writer compacting underneath.

use crate::common;

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicBool, Ordering};

use common::{flip_bits, random_keys, splitmix};
use simdex::store::{CreateOptions, Store, StoreOptions, SyncPolicy};

type Model = BTreeSet<(u64, u64)>;

/// `(distance, fingerprint, id)` rows of `q` within `k` over the live pairs, in the store's
/// order.
fn brute(model: &Model, q: u64, k: u32) -> Vec<(u32, u64, u64)> {
    let mut out: Vec<(u32, u64, u64)> = model
        .iter()
        .filter(|(fp, _)| (fp ^ q).count_ones() <= k)
        .map(|&(fp, id)| ((fp ^ q).count_ones(), fp, id))
        .collect();
    out.sort_unstable();
    out
}

fn rows_of_near(s: &Store, q: u64, k: u32) -> Vec<(u32, u64, u64)> {
    s.near(q, k)
        .unwrap()
        .into_iter()
        .flat_map(|m| {
            m.ids
                .into_iter()
                .map(move |id| (m.distance, m.fingerprint, id))
        })
        .collect()
}

fn check(s: &Store, model: &Model, queries: &[u64], k: u32) {
    let many = s.near_many(queries, k).unwrap();
    assert_eq!(many.offsets.len(), queries.len() + 1);
    for (i, &q) in queries.iter().enumerate() {
        let got: Vec<(u32, u64, u64)> = many.rows[many.offsets[i]..many.offsets[i + 1]]
            .iter()
            .map(|r| (r.distance, r.fingerprint, r.id))
            .collect();
        let want = brute(model, q, k);
        assert_eq!(got, want, "query {i} ({q:#x}), k {k}");
        assert_eq!(rows_of_near(s, q, k), want, "near of query {i}");
    }
}

#[test]
fn near_many_answers_as_near_and_as_brute_force() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("s");
    Store::create(&dir, &CreateOptions::default().with_k(3)).unwrap();
    let s = Store::open(&dir, &StoreOptions::default().with_sync(SyncPolicy::Manual)).unwrap();
    let mut seed = 11;
    let mut model = Model::new();
    // 20 000 fingerprints, every tenth with a second and third id, clusters of neighbours.
    let fps = random_keys(20_000, 5);
    let mut pairs = Vec::new();
    for (i, &f) in fps.iter().enumerate() {
        pairs.push((f, i as u64));
        if i % 10 == 0 {
            pairs.push((f, 1_000_000 + i as u64));
            pairs.push((f, 2_000_000 + i as u64));
        }
        if i % 50 == 0 {
            pairs.push((flip_bits(f, 2, &mut seed), 3_000_000 + i as u64));
        }
    }
    s.insert_many(&pairs).unwrap();
    model.extend(pairs.iter().copied());
    s.compact().unwrap();
    // The delta: new pairs near stored ones, a new id for a stored fingerprint, deletes of
    // ids in the generation and in the delta.
    let mut delta = Vec::new();
    for i in (0..20_000).step_by(40) {
        delta.push((flip_bits(fps[i], 1, &mut seed), 4_000_000 + i as u64));
        delta.push((fps[i + 1], 5_000_000 + i as u64));
    }
    s.insert_many(&delta).unwrap();
    model.extend(delta.iter().copied());
    let mut deleted = Vec::new();
    for i in (0..20_000u64).step_by(30) {
        deleted.push(i);
        deleted.push(1_000_000 + i);
        deleted.push(4_000_000 + i);
    }
    s.delete_many(&deleted).unwrap();
    model.retain(|(_, id)| !deleted.contains(id));

    // Queries: stored fingerprints 0..3 bits away, repeats, and random ones.
    let mut queries: Vec<u64> = (0..5_000)
        .map(|j| {
            let f = fps[(splitmix(&mut seed) % 20_000) as usize];
            flip_bits(f, (j % 4) as u32, &mut seed)
        })
        .collect();
    queries.extend(random_keys(1_000, 9));
    queries.extend_from_within(..500);
    for k in 0..=3 {
        // 6 500 queries for 20 000 keys: the tables answer by their scan.
        check(&s, &model, &queries, k);
        // 200: query by query.
        check(&s, &model, &queries[..200], k);
    }
    assert!(s.near_many(&queries, 4).is_err());
    assert!(s.near_many(&[], 3).unwrap().rows.is_empty());

    // Asked to stop, it stops.
    struct Stop;
    impl simdex::Progress for Stop {
        fn cancelled(&self) -> bool {
            true
        }
    }
    let stop = simdex::ProgressHandle::new(Stop);
    let r = s.near_many_with(&queries, 3, &stop);
    assert!(matches!(r, Err(simdex::Error::Cancelled)));

    // A writer compacting underneath (pairs far from every query): the answers stay the
    // model's, whichever generation each chunk of queries was resolved in.
    let done = AtomicBool::new(false);
    std::thread::scope(|scope| {
        scope.spawn(|| {
            let mut seed = 99;
            let mut n = 0;
            while !done.load(Ordering::Relaxed) || n < 3 {
                // Random fingerprints: none within 3 bits of a query but by a 2^-40 chance.
                s.insert(splitmix(&mut seed), 9_000_000 + n).unwrap();
                s.compact().unwrap();
                n += 1;
            }
        });
        for _ in 0..6 {
            let many = s.near_many(&queries, 3).unwrap();
            for (i, &q) in queries.iter().enumerate().step_by(7) {
                let got: Vec<(u32, u64, u64)> = many.rows[many.offsets[i]..many.offsets[i + 1]]
                    .iter()
                    .map(|r| (r.distance, r.fingerprint, r.id))
                    .collect();
                assert_eq!(got, brute(&model, q, 3), "query {i} during compactions");
            }
        }
        done.store(true, Ordering::Relaxed);
    });
}
