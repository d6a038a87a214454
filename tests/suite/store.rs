//! The store against a model: random sequences of insert / delete / compact / reopen / query
//! checked against a `BTreeSet<(fingerprint, id)>` and brute force, for several designs; plus
//! recovery (torn tails, corruption), locking, merge, rebuild and readers during compaction.

use crate::common;

use std::collections::BTreeSet;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use common::{flip_bits, random_keys, splitmix};
use simdex::index::DesignChoice;
use simdex::store::{CreateOptions, ReadOnlyStore, Store, StoreMatch, StoreOptions, SyncPolicy};

type Model = BTreeSet<(u64, u64)>;

fn oracle(model: &Model, q: u64, k: u32) -> Vec<StoreMatch> {
    let mut out: Vec<StoreMatch> = Vec::new();
    for &(fp, id) in model {
        let d = (fp ^ q).count_ones();
        if d > k {
            continue;
        }
        match out.last_mut() {
            Some(m) if m.fingerprint == fp => m.ids.push(id),
            _ => out.push(StoreMatch {
                distance: d,
                fingerprint: fp,
                ids: vec![id],
            }),
        }
    }
    out.sort();
    out
}

fn create(dir: &Path, design: &str, block_size: u32) {
    Store::create(
        dir,
        &CreateOptions::default()
            .with_k(3)
            .with_design(DesignChoice::Named(design.into()))
            .with_block_size(Some(block_size)),
    )
    .unwrap();
}

fn opts(max_delta: u64, sync: SyncPolicy) -> StoreOptions {
    StoreOptions::default()
        .with_sync(sync)
        .with_max_delta(max_delta)
}

/// Fingerprints that collide on purpose: cluster centres, neighbours at 0..=4 bits, 0 and MAX.
fn pool(seed: u64) -> Vec<u64> {
    let mut s = seed;
    let mut v = vec![0, u64::MAX, 1, u64::MAX - 1];
    for _ in 0..40 {
        let c = splitmix(&mut s);
        v.push(c);
        for d in 1..=4 {
            v.push(flip_bits(c, d, &mut s));
        }
    }
    v
}

/// `mem`: the memory budget, which decides whether a compaction merges each table once, into
/// memory, or twice (a budget of a few bytes).
fn run_model(design: &str, seed: u64, steps: usize, mem: u64) {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("store");
    create(&dir, design, 256);
    let o = opts(40, SyncPolicy::Manual).with_mem_bytes(mem);
    let mut store = Store::open(&dir, &o).unwrap();
    let mut model = Model::new();
    let fps = pool(seed);
    let mut s = seed ^ 0xabc;
    let mut compactions = 0;
    for step in 0..steps {
        let r = splitmix(&mut s) % 100;
        let fp = fps[(splitmix(&mut s) % fps.len() as u64) as usize];
        let id = splitmix(&mut s) % 60;
        match r {
            0..=34 => {
                store.insert(fp, id).unwrap();
                model.insert((fp, id));
            }
            35..=44 => {
                let batch: Vec<(u64, u64)> = (0..1 + splitmix(&mut s) % 30)
                    .map(|_| {
                        (
                            fps[(splitmix(&mut s) % fps.len() as u64) as usize],
                            splitmix(&mut s) % 60,
                        )
                    })
                    .collect();
                store.insert_many(&batch).unwrap();
                model.extend(batch);
            }
            45..=59 => {
                store.delete(id).unwrap();
                model.retain(|p| p.1 != id);
            }
            60..=64 => {
                if store.compact().unwrap().is_some() {
                    compactions += 1;
                }
                store.verify().unwrap();
            }
            65..=67 => {
                drop(store);
                store = Store::open(&dir, &o).unwrap();
                assert!(store.recovery().torn.is_empty());
            }
            _ => {
                let q = flip_bits(fp, (splitmix(&mut s) % 5) as u32, &mut s);
                for k in [0, 1, 3] {
                    assert_eq!(
                        store.near(q, k).unwrap(),
                        oracle(&model, q, k),
                        "design {design} seed {seed} step {step} q {q:016x} k {k}"
                    );
                }
                assert_eq!(
                    store.has_near(q, 3).unwrap(),
                    !oracle(&model, q, 3).is_empty()
                );
            }
        }
    }
    assert_eq!(
        store.pairs().unwrap(),
        model.iter().copied().collect::<Vec<_>>()
    );
    assert!(compactions > 2, "the run should compact ({compactions})");
    store.compact().unwrap();
    store.verify().unwrap();
    drop(store);
    let store = Store::open(&dir, &o).unwrap();
    assert_eq!(
        store.pairs().unwrap(),
        model.iter().copied().collect::<Vec<_>>()
    );
    // Only the live generation and its log remain.
    let names: BTreeSet<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    let g = store.stats().generation;
    let want: BTreeSet<String> = [
        "CURRENT".to_string(),
        "LOCK".to_string(),
        format!("gen-{g:06}"),
        format!("wal-{g:06}.log"),
    ]
    .into();
    assert_eq!(names, want);
}

#[test]
fn model_design_4() {
    for seed in 1..=3 {
        run_model("4", seed, 600, 1 << 30);
    }
}

#[test]
fn model_design_multi_probe() {
    for mem in [1 << 30, 1] {
        run_model("m4c2r1", 7, 600, mem);
    }
}

#[test]
fn model_design_16_two_level() {
    run_model("16", 9, 500, 1);
}

#[test]
fn unflushed_writes_survive_a_dropped_handle_and_queries_see_them_at_once() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("s");
    create(&dir, "4", 1024);
    for sync in [
        SyncPolicy::Manual,
        SyncPolicy::PerWrite,
        SyncPolicy::Group(std::time::Duration::from_millis(5)),
    ] {
        let s = Store::open(&dir, &opts(1 << 20, sync)).unwrap();
        let fp = splitmix(&mut 77);
        s.insert(fp, 5).unwrap();
        assert_eq!(s.ids_of(fp).unwrap(), vec![5]);
        s.delete(5).unwrap();
        assert!(s.ids_of(fp).unwrap().is_empty());
        s.insert(fp, 6).unwrap();
        drop(s);
        let s = Store::open(&dir, &opts(1 << 20, sync)).unwrap();
        assert_eq!(s.ids_of(fp).unwrap(), vec![6], "{sync:?}");
        s.delete(6).unwrap();
    }
}

#[test]
fn a_second_writer_is_refused_but_readers_are_not() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("s");
    create(&dir, "4", 1024);
    let w = Store::open(&dir, &StoreOptions::default()).unwrap();
    w.insert(42, 1).unwrap();
    let e = Store::open(&dir, &StoreOptions::default()).unwrap_err();
    assert!(matches!(e, simdex::Error::Locked { .. }), "{e}");
    assert!(e.to_string().contains("locked by another writer"), "{e}");
    let r = Store::open_read_only(&dir).unwrap();
    assert_eq!(r.ids_of(42).unwrap(), vec![1]);
    assert!(r.insert(1, 1).is_err());
    drop(w);
    Store::open(&dir, &StoreOptions::default()).unwrap();
}

fn only_log(dir: &Path) -> std::path::PathBuf {
    let logs: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "log"))
        .collect();
    assert_eq!(logs.len(), 1);
    logs[0].clone()
}

#[test]
fn a_torn_tail_is_truncated_with_a_warning_and_corruption_in_the_middle_is_an_error() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("s");
    create(&dir, "4", 1024);
    {
        let s = Store::open(&dir, &StoreOptions::default()).unwrap();
        for i in 0..10u64 {
            s.insert(i * 1000, i).unwrap();
        }
    }
    let log = only_log(&dir);
    let good = std::fs::read(&log).unwrap();
    let rec = (good.len() - 32) / 10;
    // Cut the last record short, then add garbage: both are torn tails.
    for tail in [
        &good[..good.len() - 5],
        &[&good[..], &[0xAB; 7][..]].concat()[..],
    ] {
        std::fs::write(&log, tail).unwrap();
        let s = Store::open(&dir, &StoreOptions::default()).unwrap();
        let rec_torn = &s.recovery().torn;
        assert_eq!(rec_torn.len(), 1, "{:?}", s.recovery());
        assert!(s.recovery().warnings()[0].contains("not a whole, valid log record"));
        let want = if tail.len() < good.len() { 9 } else { 10 };
        assert_eq!(s.pairs().unwrap().len(), want);
        drop(s);
        // Truncated on disk: the next open is clean.
        let s = Store::open(&dir, &StoreOptions::default()).unwrap();
        assert!(s.recovery().torn.is_empty());
        drop(s);
        std::fs::write(&log, &good).unwrap();
    }
    // A damaged record followed by valid ones: refuse to open, naming the offset.
    let mut bad = good.clone();
    let at = 32 + 3 * rec + 20;
    bad[at] ^= 1;
    std::fs::write(&log, &bad).unwrap();
    let e = Store::open(&dir, &StoreOptions::default()).unwrap_err();
    assert!(e.is_corruption(), "{e}");
    let msg = e.to_string();
    assert!(msg.contains(&format!("offset {}", 32 + 3 * rec)), "{msg}");
    assert!(msg.contains("wal-000000.log"), "{msg}");
    // Nothing was truncated by the refused open.
    assert_eq!(std::fs::read(&log).unwrap(), bad);
}

#[test]
fn leftovers_of_an_interrupted_compaction_are_removed_and_logs_replayed() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("s");
    create(&dir, "4", 1024);
    let s = Store::open(&dir, &StoreOptions::default()).unwrap();
    s.insert(1, 1).unwrap();
    s.compact().unwrap();
    s.insert(2, 2).unwrap();
    drop(s);
    // Pretend a compaction to generation 2 crashed midway: a half-written generation, a staging
    // directory and a next log with a write in it.
    std::fs::create_dir(dir.join("gen-000002")).unwrap();
    std::fs::write(dir.join("gen-000002/table-00.sxt"), b"partial").unwrap();
    std::fs::create_dir(dir.join(".gen-000002.staging-x")).unwrap();
    let s = Store::open(&dir, &StoreOptions::default()).unwrap();
    assert_eq!(s.recovery().removed.len(), 2, "{:?}", s.recovery());
    assert_eq!(s.pairs().unwrap(), vec![(1, 1), (2, 2)]);
    s.verify().unwrap();
}

#[test]
fn merge_and_rebuild_keep_every_pair() {
    let tmp = tempfile::tempdir().unwrap();
    let (a, b, c) = (
        tmp.path().join("a"),
        tmp.path().join("b"),
        tmp.path().join("c"),
    );
    create(&a, "10", 512);
    create(&b, "10", 512);
    let mut model = Model::new();
    let fps = pool(3);
    {
        let sa = Store::open(&a, &StoreOptions::default()).unwrap();
        let sb = Store::open(&b, &StoreOptions::default()).unwrap();
        for (i, &fp) in fps.iter().enumerate() {
            let (s, id) = if i % 3 == 0 {
                (&sb, i as u64)
            } else {
                (&sa, i as u64 % 7)
            };
            s.insert(fp, id).unwrap();
            model.insert((fp, id));
            if i == 100 {
                sa.compact().unwrap();
                sb.compact().unwrap();
            }
        }
        // A delete in a's delta hides a's compacted pairs only.
        sa.delete(3).unwrap();
        model.retain(|&(fp, id)| {
            !(id == 3
                && fps
                    .iter()
                    .position(|&f| f == fp)
                    .is_some_and(|i| i % 3 != 0))
        });
        // Readers of both see every write logged so far, the deltas included.
        let (ra, rb) = (
            ReadOnlyStore::open(&a).unwrap(),
            ReadOnlyStore::open(&b).unwrap(),
        );
        let sum = Store::merge(&ra, &rb, &c).unwrap();
        assert_eq!(sum.pairs, model.len() as u64);
    }
    let sc = Store::open(&c, &StoreOptions::default()).unwrap();
    sc.verify().unwrap();
    assert_eq!(
        sc.pairs().unwrap(),
        model.iter().copied().collect::<Vec<_>>()
    );
    sc.insert(12345, 9).unwrap();
    model.insert((12345, 9));
    let d = simdex::Design::by_name("4", 3).unwrap();
    sc.rebuild(d.clone(), simdex::codec::Codec::Gap, Some(1024))
        .unwrap();
    assert_eq!(sc.generation().index().design(), &d);
    sc.verify().unwrap();
    for &fp in fps.iter().step_by(5) {
        assert_eq!(sc.near(fp, 3).unwrap(), oracle(&model, fp, 3));
    }
    drop(sc);
    let sc = Store::open(&c, &StoreOptions::default()).unwrap();
    assert_eq!(
        sc.pairs().unwrap(),
        model.iter().copied().collect::<Vec<_>>()
    );
    // Different designs do not merge.
    let e = Store::merge(
        &ReadOnlyStore::open(&a).unwrap(),
        &ReadOnlyStore::open(&c).unwrap(),
        tmp.path().join("d"),
    )
    .unwrap_err();
    assert!(e.to_string().contains("different designs"), "{e}");
    assert!(!tmp.path().join("d").exists());
}

#[test]
fn k_beyond_the_design_and_bad_options_are_errors() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("s");
    create(&dir, "4", 1024);
    let s = Store::open(&dir, &StoreOptions::default()).unwrap();
    assert!(s.near(1, 4).is_err());
    assert!(Store::open(&dir, &opts(0, SyncPolicy::Manual)).is_err());
    assert!(Store::open(tmp.path(), &StoreOptions::default()).is_err());
    let e = Store::create(&dir, &CreateOptions::default()).unwrap_err();
    assert!(e.to_string().contains("already exists"), "{e}");
}

/// Readers running while the writer inserts and compacts see, for every query, the answer of
/// some state between the one before the query started and the one after it ended.
#[test]
fn readers_during_compaction_see_the_old_or_the_new_state() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("s");
    create(&dir, "10", 256);
    let store = Arc::new(Store::open(&dir, &opts(1 << 20, SyncPolicy::Manual)).unwrap());
    let fps = pool(21);
    let mut s = 5u64;
    // Version v = the model after batch v; batches alternate inserts and deletes.
    let mut versions: Vec<Model> = vec![Model::new()];
    let mut batches = Vec::new();
    for v in 0..16u64 {
        let mut m = versions.last().unwrap().clone();
        if v % 4 == 3 {
            batches.push((Vec::new(), vec![v - 1]));
            m.retain(|p| p.1 != v - 1);
        } else {
            let b: Vec<(u64, u64)> = (0..20)
                .map(|_| (fps[(splitmix(&mut s) % fps.len() as u64) as usize], v))
                .collect();
            m.extend(b.iter().copied());
            batches.push((b, Vec::new()));
        }
        versions.push(m);
    }
    let queries: Vec<u64> = fps.iter().step_by(3).copied().collect();
    let answers: Vec<Vec<Vec<StoreMatch>>> = versions
        .iter()
        .map(|m| queries.iter().map(|&q| oracle(m, q, 3)).collect())
        .collect();
    let published = Arc::new(AtomicUsize::new(0));
    let done = Arc::new(AtomicBool::new(false));
    let readers: Vec<_> = (0..2)
        .map(|r| {
            let (store, published, done, answers, queries) = (
                Arc::clone(&store),
                Arc::clone(&published),
                Arc::clone(&done),
                answers.clone(),
                queries.clone(),
            );
            std::thread::spawn(move || {
                let mut checked = 0u64;
                let mut i = r;
                while !done.load(Ordering::Acquire) || checked < 50 {
                    let qi = i % queries.len();
                    i += 1;
                    let before = published.load(Ordering::Acquire);
                    let got = store.near(queries[qi], 3).unwrap();
                    let after = published.load(Ordering::Acquire);
                    let hi = (after + 1).min(answers.len() - 1);
                    assert!(
                        (before..=hi).any(|v| answers[v][qi] == got),
                        "reader saw a state outside versions {before}..={hi}"
                    );
                    checked += 1;
                }
                checked
            })
        })
        .collect();
    for (v, (ins, del)) in batches.iter().enumerate() {
        if !ins.is_empty() {
            store.insert_many(ins).unwrap();
        }
        store.delete_many(del).unwrap();
        published.store(v + 1, Ordering::Release);
        store.compact().unwrap();
    }
    done.store(true, Ordering::Release);
    for r in readers {
        assert!(r.join().unwrap() >= 50);
    }
    assert_eq!(
        store.pairs().unwrap(),
        versions.last().unwrap().iter().copied().collect::<Vec<_>>()
    );
}

#[test]
fn bulk_load_equals_inserts_and_rejects_unsorted_pairs() {
    let tmp = tempfile::tempdir().unwrap();
    let fps = pool(11);
    let model: Model = fps
        .iter()
        .enumerate()
        .flat_map(|(i, &fp)| [(fp, i as u64), (fp, 1000 + i as u64 % 5)])
        .collect();
    let opts = CreateOptions::default()
        .with_design(DesignChoice::Named("m4c2r1".into()))
        .with_block_size(Some(256));
    let dir = tmp.path().join("bulk");
    let sum = Store::create_from_sorted(&dir, &opts, model.iter().map(|&p| Ok(p))).unwrap();
    assert_eq!(sum.pairs, model.len() as u64);
    let s = Store::open(&dir, &StoreOptions::default()).unwrap();
    s.verify().unwrap();
    assert_eq!(
        s.pairs().unwrap(),
        model.iter().copied().collect::<Vec<_>>()
    );
    for &q in fps.iter().step_by(4) {
        assert_eq!(s.near(q, 3).unwrap(), oracle(&model, q, 3));
    }
    let bad = tmp.path().join("bad");
    let e =
        Store::create_from_sorted(&bad, &opts, [Ok((5, 1)), Ok((4, 1))].into_iter()).unwrap_err();
    assert!(e.to_string().contains("strictly ascending"), "{e}");
    assert!(!bad.exists());
    assert_eq!(
        std::fs::read_dir(tmp.path()).unwrap().count(),
        1,
        "staging left behind"
    );
}

#[test]
fn a_held_generation_keeps_its_files_until_released() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("s");
    create(&dir, "4", 1024);
    let s = Store::open(&dir, &StoreOptions::default()).unwrap();
    s.insert(7, 1).unwrap();
    s.compact().unwrap();
    let held = s.generation();
    s.insert(8, 2).unwrap();
    s.compact().unwrap();
    assert!(held.dir().exists(), "removed while a reader holds it");
    assert_eq!(held.index().near(7, 0).unwrap().len(), 1);
    assert!(
        held.index().near(8, 0).unwrap().is_empty(),
        "a snapshot does not change"
    );
    let old = held.dir().to_path_buf();
    drop(held);
    assert!(!old.exists(), "retired generation left behind");
}

/// A crash can cut the log anywhere after its last sync; whatever the cut, recovery yields the
/// contents after some prefix of the logged writes: never a mix, never a lost earlier write.
#[test]
fn every_cut_of_the_log_recovers_a_prefix_of_the_writes() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("s");
    create(&dir, "m4c2r1", 256);
    let fps = pool(5);
    let mut states = vec![Model::new()];
    {
        let s = Store::open(&dir, &opts(1 << 20, SyncPolicy::Manual)).unwrap();
        let mut seed = 3u64;
        for i in 0..12u64 {
            let mut m = states.last().unwrap().clone();
            if i % 4 == 3 {
                s.delete(i - 2).unwrap();
                m.retain(|p| p.1 != i - 2);
            } else {
                let b: Vec<(u64, u64)> = (0..3)
                    .map(|_| (fps[(splitmix(&mut seed) % fps.len() as u64) as usize], i))
                    .collect();
                s.insert_many(&b).unwrap();
                m.extend(b);
            }
            states.push(m);
        }
    }
    let log = only_log(&dir);
    let full = std::fs::read(&log).unwrap();
    let mut seen = BTreeSet::new();
    for cut in 0..=full.len() {
        std::fs::write(&log, &full[..cut]).unwrap();
        let s = Store::open(&dir, &StoreOptions::default()).unwrap();
        let got: Model = s.pairs().unwrap().into_iter().collect();
        let j = states
            .iter()
            .position(|m| *m == got)
            .unwrap_or_else(|| panic!("cut at {cut}: not the state after any prefix"));
        if let Some(&prev) = seen.iter().next_back() {
            assert!(
                j >= prev,
                "cut at {cut} went back from {prev} to {j} writes"
            );
        }
        seen.insert(j);
        drop(s);
    }
    assert_eq!(
        seen.len(),
        states.len(),
        "every prefix should be reachable by some cut"
    );
}

#[test]
fn a_failed_log_write_poisons_the_store_and_reopening_recovers() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("s");
    create(&dir, "4", 1024);
    for bytes in [0u64, 5, 16, 30] {
        let storage = common::storage::TestStorage::new();
        let s = Store::open(
            &dir,
            &StoreOptions::default().with_log_storage(Arc::new(storage.clone())),
        )
        .unwrap();
        s.insert(100 + bytes, bytes).unwrap();
        storage.fail_next_append_after(bytes);
        let e = s.insert(1, 1).unwrap_err();
        assert!(e.to_string().contains("injected failure"), "{e}");
        // Not visible, and no further writes until reopened.
        assert!(s.ids_of(1).unwrap().is_empty());
        let e = s.insert(2, 2).unwrap_err();
        assert!(matches!(e, simdex::Error::Poisoned(_)), "{e}");
        assert!(s.compact().is_err());
        drop(s);
        let s = Store::open(&dir, &StoreOptions::default()).unwrap();
        assert_eq!(
            s.recovery().torn.len(),
            usize::from(bytes > 0),
            "{:?}",
            s.recovery()
        );
        assert!(s.ids_of(1).unwrap().is_empty());
        assert_eq!(s.ids_of(100 + bytes).unwrap(), vec![bytes]);
        s.insert(3, 3).unwrap();
        assert_eq!(s.ids_of(3).unwrap(), vec![3]);
        s.delete(3).unwrap();
    }
}

/// Writers that fill the delta together trigger one compaction per full delta, not one each.
#[test]
fn concurrent_writers_filling_the_delta_compact_once_per_fill() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("s");
    create(&dir, "4", 1024);
    let store = Arc::new(Store::open(&dir, &opts(50, SyncPolicy::Manual)).unwrap());
    let writers: Vec<_> = (0..4u64)
        .map(|t| {
            let store = Arc::clone(&store);
            std::thread::spawn(move || {
                let mut s = t + 100;
                for i in 0..100u64 {
                    store.insert(splitmix(&mut s), t * 1000 + i).unwrap();
                }
            })
        })
        .collect();
    for w in writers {
        w.join().unwrap();
    }
    // 400 writes, a compaction per 50: at most 8 generations (plus the initial one).
    let g = store.stats().generation;
    assert!(
        (4..=9).contains(&g),
        "{g} generations for 400 writes at 50 per delta"
    );
    assert_eq!(store.pairs().unwrap().len(), 400);
    store.verify().unwrap();
}

/// With a background compactor, a writer that fills the delta does not compact itself: here the
/// delta never reaches twice its bound, so every compaction is the compactor's.
#[test]
fn background_compaction_folds_full_deltas_without_the_writer() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("s");
    create(&dir, "4", 1024);
    let store = Arc::new(Store::open(&dir, &opts(100, SyncPolicy::Manual)).unwrap());
    let handle = store.start_background_compaction();
    let mut s = 1u64;
    let mut model = Model::new();
    for i in 0..150u64 {
        let fp = splitmix(&mut s);
        store.insert(fp, i).unwrap();
        model.insert((fp, i));
    }
    let t0 = std::time::Instant::now();
    while store.stats().generation == 0 {
        assert!(t0.elapsed().as_secs() < 10, "the compactor never compacted");
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    assert_eq!(
        store.pairs().unwrap(),
        model.iter().copied().collect::<Vec<_>>()
    );
    store.verify().unwrap();
    drop(store);
    // The compactor holds only a weak reference: it ends with the store.
    handle.join().unwrap();
    let store = Store::open(&dir, &StoreOptions::default()).unwrap();
    assert_eq!(store.pairs().unwrap().len(), 150);
}

/// Read-only opens beside a writer that keeps compacting see a whole state every time: the
/// contents after some write between the one before the open started and the one after it
/// ended (never a generation combined with the wrong logs).
#[test]
fn read_only_opens_beside_a_compacting_writer_see_whole_states() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("s");
    create(&dir, "4", 256);
    let store = Store::open(&dir, &opts(1 << 20, SyncPolicy::Manual)).unwrap();
    let mut versions: Vec<Model> = vec![Model::new()];
    let published = Arc::new(AtomicUsize::new(0));
    let done = Arc::new(AtomicBool::new(false));
    // Version v = ids 0..v, each with fingerprint mix64(id): known to the reader in advance.
    for v in 1..=60u64 {
        let mut m = versions.last().unwrap().clone();
        m.insert((simdex::sample::mix64(v), v));
        versions.push(m);
    }
    let reader = {
        let (dir, published, done, versions) = (
            dir.clone(),
            Arc::clone(&published),
            Arc::clone(&done),
            versions.clone(),
        );
        std::thread::spawn(move || {
            let mut opened = 0;
            while !done.load(Ordering::Acquire) {
                let before = published.load(Ordering::Acquire);
                let r = Store::open_read_only(&dir).unwrap();
                let got: Model = r.pairs().unwrap().into_iter().collect();
                let after = published.load(Ordering::Acquire);
                let hi = (after + 1).min(versions.len() - 1);
                assert!(
                    (before..=hi).any(|v| versions[v] == got),
                    "read-only open saw {} pairs, not a state between versions {before} and {hi}",
                    got.len()
                );
                opened += 1;
            }
            opened
        })
    };
    for v in 1..=60u64 {
        store.insert(simdex::sample::mix64(v), v).unwrap();
        published.store(v as usize, Ordering::Release);
        if v % 2 == 0 {
            store.compact().unwrap();
        }
    }
    done.store(true, Ordering::Release);
    assert!(reader.join().unwrap() > 0);
}

#[test]
fn a_missing_log_is_refused_not_skipped() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("s");
    create(&dir, "4", 1024);
    {
        let s = Store::open(&dir, &StoreOptions::default()).unwrap();
        s.insert(1, 1).unwrap();
    }
    // Generation 0's writes live in wal-000000.log; a later log without it is a gap.
    std::fs::rename(dir.join("wal-000000.log"), dir.join("wal-000001.log")).unwrap();
    let e = Store::open(&dir, &StoreOptions::default()).unwrap_err();
    assert!(
        e.is_corruption() && e.to_string().contains("without a gap"),
        "{e}"
    );
}

#[test]
fn a_populated_store_answers_alike_across_compactions() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("store");
    Store::create(&path, &CreateOptions::default().with_expected_keys(10_000)).unwrap();
    let store = Store::open(&path, &StoreOptions::default().with_populate(true)).unwrap();
    let fps = random_keys(5_000, 4);
    let pairs: Vec<(u64, u64)> = fps
        .iter()
        .enumerate()
        .map(|(i, &f)| (f, i as u64))
        .collect();
    store.insert_many(&pairs[..2_500]).unwrap();
    store.compact().unwrap();
    store.insert_many(&pairs[2_500..]).unwrap();
    let reader =
        ReadOnlyStore::open_with(&path, &StoreOptions::default().with_populate(true)).unwrap();
    for (i, &f) in fps.iter().enumerate().step_by(37) {
        let m = store.near(f, 3).unwrap();
        assert!(m.iter().any(|m| m.fingerprint == f && m.ids == [i as u64]));
        assert_eq!(reader.near(f, 3).unwrap(), m);
    }
}
