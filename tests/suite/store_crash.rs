//! Crash safety of the store: a child process inserting, deleting and compacting is killed with
//! SIGKILL at staggered moments; the store must reopen with every acknowledged write present,
//! nothing acknowledged-deleted back, the one write in flight all there or not at all, and
//! verify passing.
//!
//! The child is this test binary itself, re-executed with `SIMDEX_CRASH_DIR` set. Trials:
//! 12 by default; `SIMDEX_CRASH_TRIALS=100 cargo test --release --test store_crash` for more.

#![cfg(unix)]

use std::collections::BTreeSet;
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use simdex::index::DesignChoice;
use simdex::sample::mix64;
use simdex::store::{CreateOptions, Store, StoreOptions, SyncPolicy};

const BATCH: u64 = 20;

/// The pairs of insert batch `i`: ids unique to the batch; half the fingerprints shared across
/// batches so that fingerprints carry several ids.
fn batch(i: u64) -> Vec<(u64, u64)> {
    (0..BATCH)
        .map(|j| {
            let id = i * 100 + j;
            let fp = if j % 2 == 0 { mix64(id) } else { mix64(j) };
            (fp, id)
        })
        .collect()
}

fn batch_ids(i: u64) -> Vec<u64> {
    (0..BATCH).map(|j| i * 100 + j).collect()
}

/// The child's workload: run only as the child of the test below (ignored otherwise, rather
/// than passing without doing anything).
#[test]
#[ignore = "the child process of sigkill_at_any_moment_loses_no_acknowledged_write"]
fn crash_child_workload() {
    let Ok(dir) = std::env::var("SIMDEX_CRASH_DIR") else {
        return;
    };
    let sync = if std::env::var("SIMDEX_CRASH_SYNC").as_deref() == Ok("per-write") {
        SyncPolicy::PerWrite
    } else {
        SyncPolicy::Manual
    };
    let store = Store::open(
        &dir,
        &StoreOptions::default().with_sync(sync).with_max_delta(150),
    )
    .unwrap();
    // libtest has printed "test crash_child_workload ... " without a newline.
    println!();
    for i in 0..100_000u64 {
        store.insert_many(&batch(i)).unwrap();
        println!("ack-insert {i}");
        if i % 4 == 3 {
            store.delete_many(&batch_ids(i - 2)).unwrap();
            println!("ack-delete {}", i - 2);
        }
        if i % 11 == 5 {
            store.compact().unwrap();
        }
    }
}

fn trial(root: &Path, t: u64, sync: &str) -> (usize, bool) {
    let dir = root.join(format!("store-{t}"));
    Store::create(
        &dir,
        &CreateOptions::default()
            .with_k(3)
            .with_design(DesignChoice::Named("4".into()))
            .with_block_size(Some(256)),
    )
    .unwrap();
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args([
            "store_crash::crash_child_workload",
            "--exact",
            "--ignored",
            "--nocapture",
            "--test-threads=1",
        ])
        .env("SIMDEX_CRASH_DIR", &dir)
        .env("SIMDEX_CRASH_SYNC", sync)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // Staggered kill moments, 20..~900 ms after start.
    let wait = 20 + mix64(t ^ 0x5eed) % 880;
    std::thread::sleep(Duration::from_millis(wait));
    child.kill().unwrap();
    child.wait().unwrap();
    let mut inserted = BTreeSet::new();
    let mut deleted = BTreeSet::new();
    for line in BufReader::new(child.stdout.take().unwrap()).lines() {
        let line = line.unwrap();
        if let Some(i) = line.strip_prefix("ack-insert ") {
            inserted.insert(i.parse::<u64>().unwrap());
        } else if let Some(i) = line.strip_prefix("ack-delete ") {
            deleted.insert(i.parse::<u64>().unwrap());
        }
    }
    let store = Store::open(&dir, &StoreOptions::default())
        .unwrap_or_else(|e| panic!("trial {t}: reopen failed: {e}"));
    store.verify().unwrap();
    let pairs: BTreeSet<(u64, u64)> = store.pairs().unwrap().into_iter().collect();
    let next = inserted.last().map_or(0, |i| i + 1);
    assert_eq!(
        inserted.len() as u64,
        next,
        "trial {t}: acknowledgements lost in the pipe"
    );
    let mut want = BTreeSet::new();
    for &i in &inserted {
        if !deleted.contains(&i) {
            want.extend(batch(i));
        }
    }
    // The write in flight at the kill: the next insert (all or nothing) or the next delete
    // (which only removes pairs; all or nothing as well).
    let in_flight_insert: BTreeSet<(u64, u64)> = batch(next).into_iter().collect();
    let pending_delete = if next >= 1 && (next - 1) % 4 == 3 && !deleted.contains(&(next - 3)) {
        Some(next - 3)
    } else {
        None
    };
    let mut ok = pairs == want;
    if !ok && pairs.is_superset(&in_flight_insert) {
        let mut w2 = want.clone();
        w2.extend(in_flight_insert.iter().copied());
        ok = pairs == w2;
    }
    if !ok && let Some(d) = pending_delete {
        let w3: BTreeSet<_> = want
            .iter()
            .copied()
            .filter(|p| !batch_ids(d).contains(&p.1))
            .collect();
        ok = pairs == w3;
    }
    if !ok {
        let extra: Vec<_> = pairs.difference(&want).take(5).collect();
        let missing: Vec<_> = want.difference(&pairs).take(5).collect();
        eprintln!("extra {extra:?} missing {missing:?} next {next}");
    }
    assert!(
        ok,
        "trial {t} ({sync}, killed after {wait} ms, {} inserts and {} deletes acknowledged): \
         reopened store holds {} pairs, expected {}",
        inserted.len(),
        deleted.len(),
        pairs.len(),
        want.len()
    );
    let compacted = store.stats().generation > 0;
    (inserted.len(), compacted)
}

#[test]
fn sigkill_at_any_moment_loses_no_acknowledged_write() {
    if std::env::var("SIMDEX_CRASH_DIR").is_ok() {
        return;
    }
    let trials: u64 = std::env::var("SIMDEX_CRASH_TRIALS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(12);
    let root = tempfile::tempdir().unwrap();
    let mut acked = 0;
    let mut compacted = 0;
    for t in 0..trials {
        let sync = if t % 3 == 0 { "per-write" } else { "manual" };
        let (n, c) = trial(root.path(), t, sync);
        acked += n;
        compacted += c as u64;
        let _ = std::fs::remove_dir_all(root.path().join(format!("store-{t}")));
    }
    eprintln!("{trials} trials, {acked} acknowledged insert batches, {compacted} stores compacted");
    // The kill moments must reach past start-up and past compactions, or the test proves little.
    assert!(acked > 0 && compacted > 0, "{acked} {compacted}");
}
