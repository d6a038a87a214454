//! The embedding API's promises: streaming and flat query shapes agree with `near`, an index
//! served from memory answers like the mapped one, progress is reported and cancellation leaves
//! nothing behind, counters count, `close` reports, errors print their cause once.

use std::ops::ControlFlow;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use simdex::index::{self, BuildOptions, DesignChoice};
use simdex::sample::splitmix64;
use simdex::store::{CreateOptions, Store, StoreOptions, SyncPolicy};
use simdex::{Error, Index, Progress, ProgressHandle};

fn fingerprints(n: usize, seed: u64) -> Vec<u64> {
    let mut s = seed;
    let mut v: Vec<u64> = (0..n).map(|_| splitmix64(&mut s)).collect();
    // Near-duplicates of the first 200 at 1..=3 bits.
    for i in 0..200 {
        let f = v[i];
        v.push(f ^ (1 << (i % 64)) ^ (1 << ((i * 7 + 3) % 64)));
    }
    v
}

fn build(dir: &std::path::Path, fps: &[u64]) -> Index {
    let path = dir.join("idx");
    let opts = BuildOptions::default()
        .with_design(DesignChoice::Named("10".into()))
        .with_block_size(Some(256));
    index::build(&path, fps.iter().map(|&f| Ok(f)), &opts).unwrap();
    Index::open(&path).unwrap()
}

#[test]
fn query_shapes_agree_with_near() {
    let dir = tempfile::tempdir().unwrap();
    let fps = fingerprints(5_000, 1);
    let idx = build(dir.path(), &fps);
    let queries: Vec<u64> = fps
        .iter()
        .step_by(17)
        .copied()
        .chain([0, u64::MAX])
        .collect();
    let many = idx.near_many(&queries, 3).unwrap();
    assert_eq!(many.len(), queries.len());
    assert_eq!(many.offsets.len(), queries.len() + 1);
    let mut buf = Vec::new();
    for (i, &q) in queries.iter().enumerate() {
        let want = idx.near(q, 3).unwrap();
        assert_eq!(many.get(i), &want[..]);
        idx.near_into(q, 3, &mut buf).unwrap();
        assert_eq!(buf, want);
        let mut streamed = Vec::new();
        assert!(
            idx.near_with(q, 3, |m| {
                streamed.push(m);
                ControlFlow::Continue(())
            })
            .unwrap()
        );
        streamed.sort_unstable();
        assert_eq!(streamed, want, "streamed matches are each reported once");
        // Stopping after the first match stops the query.
        let mut seen = 0;
        let ran_to_end = idx
            .near_with(q, 3, |_| {
                seen += 1;
                ControlFlow::Break(())
            })
            .unwrap();
        assert_eq!(seen, want.len().min(1));
        assert_eq!(ran_to_end, want.is_empty());
    }
    let c = idx.counters();
    assert!(c.queries >= 4 * queries.len() as u64);
    assert!(c.probes >= c.queries, "every query probes");
    assert!(c.keys_decoded >= c.candidates && c.candidates > 0 && c.blocks_decoded > 0);
}

#[test]
fn an_index_from_memory_answers_like_the_mapped_one() {
    let dir = tempfile::tempdir().unwrap();
    let fps = fingerprints(3_000, 2);
    let mapped = build(dir.path(), &fps);
    let path = dir.path().join("idx");
    let in_memory = Index::open_in_memory(&path).unwrap();
    let manifest = std::fs::read(path.join("MANIFEST")).unwrap();
    let tables: Vec<Vec<u8>> = (0..mapped.tables().len())
        .map(|i| std::fs::read(path.join(format!("table-{i:02}.sxt"))).unwrap())
        .collect();
    let from_parts = Index::from_parts(&manifest, tables.clone()).unwrap();
    for &q in fps.iter().step_by(29) {
        let want = mapped.near(q, 3).unwrap();
        assert_eq!(in_memory.near(q, 3).unwrap(), want);
        assert_eq!(from_parts.near(q, 3).unwrap(), want);
    }
    from_parts.verify().unwrap();
    // A missing table is an error, not a smaller index.
    assert!(Index::from_parts(&manifest, tables[..1].to_vec()).is_err());
    fn send_sync<T: Send + Sync>() {}
    send_sync::<Index<Vec<u8>>>();
    send_sync::<Index>();
    send_sync::<Store>();
}

#[derive(Default)]
struct Recorder {
    stages: std::sync::Mutex<Vec<String>>,
    units: AtomicU64,
    cancel_after: Option<u64>,
}

impl Progress for Recorder {
    fn stage(&self, name: &str, _total: Option<u64>) {
        self.stages.lock().unwrap().push(name.to_string());
    }
    fn advance(&self, done: u64) {
        self.units.fetch_add(done, Ordering::Relaxed);
    }
    fn cancelled(&self) -> bool {
        self.cancel_after
            .is_some_and(|n| self.units.load(Ordering::Relaxed) >= n)
    }
}

#[test]
fn progress_is_reported_and_cancellation_publishes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let fps = fingerprints(20_000, 3);
    let rec = Arc::new(Recorder::default());
    let opts = BuildOptions::default()
        .with_design(DesignChoice::Named("4".into()))
        .with_progress(ProgressHandle::from_arc(rec.clone()));
    index::build(dir.path().join("a"), fps.iter().map(|&f| Ok(f)), &opts).unwrap();
    assert_eq!(*rec.stages.lock().unwrap(), vec!["reading", "tables"]);
    assert!(rec.units.load(Ordering::Relaxed) >= 4 * 20_000);
    let idx = Index::open(dir.path().join("a")).unwrap();
    let rec2 = Arc::new(Recorder::default());
    idx.verify_with(&ProgressHandle::from_arc(rec2.clone()))
        .unwrap();
    assert_eq!(rec2.units.load(Ordering::Relaxed), 4);

    // Cancelled after the first table: an error, and nothing at the target or beside it.
    let cancel = Arc::new(Recorder {
        cancel_after: Some(20_000),
        ..Recorder::default()
    });
    let opts = opts.with_progress(ProgressHandle::from_arc(cancel));
    let err = index::build(dir.path().join("b"), fps.iter().map(|&f| Ok(f)), &opts).unwrap_err();
    assert!(matches!(err, Error::Cancelled), "{err}");
    let left: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(
        left,
        vec!["a".to_string()],
        "a cancelled build leaves nothing"
    );
}

#[test]
fn store_shapes_counters_and_close() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s");
    Store::create(
        &path,
        &CreateOptions::default().with_design(DesignChoice::Named("4".into())),
    )
    .unwrap();
    let store = Store::open(
        &path,
        &StoreOptions::default().with_sync(SyncPolicy::PerWrite),
    )
    .unwrap();
    let fps = fingerprints(300, 4);
    let pairs: Vec<(u64, u64)> = fps
        .iter()
        .enumerate()
        .map(|(i, &f)| (f, i as u64))
        .collect();
    store.insert_many(&pairs[..250]).unwrap();
    store.compact().unwrap();
    store.insert_many(&pairs[250..]).unwrap();
    store.delete(3).unwrap();
    let many = store.near_many(&fps[..50], 3).unwrap();
    for (i, &q) in fps[..50].iter().enumerate() {
        let want: Vec<(u32, u64, u64)> = store
            .near(q, 3)
            .unwrap()
            .into_iter()
            .flat_map(|m| {
                m.ids
                    .into_iter()
                    .map(move |id| (m.distance, m.fingerprint, id))
            })
            .collect();
        let got: Vec<(u32, u64, u64)> = many.rows[many.offsets[i]..many.offsets[i + 1]]
            .iter()
            .map(|r| (r.distance, r.fingerprint, r.id))
            .collect();
        assert_eq!(got, want);
    }
    let c = store.counters();
    assert!(c.fsyncs >= 3, "per-write syncs every write: {c:?}");
    assert_eq!(c.compactions, 1);
    store.close().unwrap();
    let again = Store::open_read_only(&path).unwrap();
    assert!(again.ids_of(fps[3]).unwrap().is_empty());
    assert_eq!(again.ids_of(fps[4]).unwrap(), vec![4]);
}

#[test]
fn errors_print_their_cause_once() {
    let dir = tempfile::tempdir().unwrap();
    let err = Index::open(dir.path().join("missing")).unwrap_err();
    let msg = err.to_string();
    assert!(msg.contains("no MANIFEST"), "{msg}");
    assert!(std::error::Error::source(&err).is_none());
    assert_eq!(
        err.io_error().map(|e| e.kind()),
        Some(std::io::ErrorKind::NotFound)
    );
}

/// A failed background compaction is reported by the next call instead of vanishing: the next
/// write, or a flush (what a caller done writing calls).
#[test]
fn background_compaction_errors_reach_the_next_call() {
    for by_flush in [false, true] {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s");
        Store::create(&path, &CreateOptions::default()).unwrap();
        let store = Arc::new(
            Store::open(
                &path,
                &StoreOptions::default()
                    .with_sync(SyncPolicy::Manual)
                    .with_max_delta(10),
            )
            .unwrap(),
        );
        let _compactor = store.start_background_compaction();
        // A file where the next generation's directory goes makes that compaction fail.
        std::fs::write(path.join("gen-000001"), "in the way").unwrap();
        for i in 0..10u64 {
            store.insert(i << 20, i).unwrap();
        }
        let mut reported = None;
        for _ in 0..100 {
            std::thread::sleep(std::time::Duration::from_millis(20));
            let r = match by_flush {
                true => store.flush(),
                false => store.insert(1, 99),
            };
            if let Err(e) = r {
                reported = Some(e);
                break;
            }
        }
        let e = reported.expect("the background failure is reported");
        assert!(e.to_string().contains("gen-000001"), "{e}");
        // Once the obstacle is gone, compaction works again and nothing was lost.
        std::fs::remove_file(path.join("gen-000001")).unwrap();
        store.compact().unwrap();
        assert_eq!(store.ids_of(5 << 20).unwrap(), vec![5]);
    }
}

/// An index read into memory is immune to its files being cut underneath (a mapped one would
/// fault on the lost pages).
#[test]
fn an_in_memory_index_survives_its_files_being_truncated() {
    let dir = tempfile::tempdir().unwrap();
    let fps = fingerprints(2_000, 5);
    let idx = build(dir.path(), &fps);
    let want = idx.near(fps[7], 3).unwrap();
    drop(idx);
    let mem = Index::open_in_memory(dir.path().join("idx")).unwrap();
    for e in std::fs::read_dir(dir.path().join("idx")).unwrap() {
        let p = e.unwrap().path();
        std::fs::OpenOptions::new()
            .write(true)
            .open(&p)
            .unwrap()
            .set_len(0)
            .unwrap();
    }
    assert_eq!(mem.near(fps[7], 3).unwrap(), want);
    // And opening the truncated files is an error, not a fault.
    assert!(Index::open(dir.path().join("idx")).is_err());
}

/// Compactions that fail, again and again across reopens, leave no pile of empty logs: the
/// empty live log a failed attempt started becomes the next attempt's target (before, each
/// attempt added one: 5 logs after 4 attempts), and nothing is lost.
#[test]
fn failed_compactions_do_not_pile_up_empty_logs() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s");
    Store::create(&path, &CreateOptions::default()).unwrap();
    let logs = || {
        std::fs::read_dir(&path)
            .unwrap()
            .filter(|e| {
                e.as_ref()
                    .unwrap()
                    .file_name()
                    .to_string_lossy()
                    .starts_with("wal-")
            })
            .count()
    };
    let obstacles = |put: bool| {
        for n in 1..=6 {
            // Files where the next generations' directories go make those compactions fail
            // (opening removes them as leftovers: they are put back after each open).
            let p = path.join(format!("gen-{n:06}"));
            if put {
                std::fs::write(&p, "in the way").unwrap();
            } else {
                let _ = std::fs::remove_file(&p);
            }
        }
    };
    let store = Store::open(&path, &StoreOptions::default()).unwrap();
    for i in 0..4u64 {
        store.insert(i << 20, i).unwrap();
    }
    store.close().unwrap();
    for _ in 0..4 {
        let store = Store::open(&path, &StoreOptions::default()).unwrap();
        obstacles(true);
        assert!(store.compact().is_err());
        assert!(store.compact().is_err(), "a retry in the same process");
        store.close().unwrap();
    }
    assert!(logs() <= 2, "{} logs after 4 failed attempts", logs());
    obstacles(false);
    let store = Store::open(&path, &StoreOptions::default()).unwrap();
    store.compact().unwrap().unwrap();
    for attempt in 0..4u64 {
        assert_eq!(store.ids_of(attempt << 20).unwrap(), vec![attempt]);
    }
    assert_eq!(logs(), 1);
    store.insert(9 << 20, 9).unwrap();
    store.close().unwrap();
    let store = Store::open(&path, &StoreOptions::default()).unwrap();
    assert_eq!(store.stats().pairs + store.stats().delta_pairs, 5);
}
