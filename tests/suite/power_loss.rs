//! Power loss, simulated: the store writes its log through a storage that records what each
//! fsync made durable (`common::storage`), the directory is imaged with every unsynced byte
//! dropped (every log cut to its synced length, as a kernel losing its page cache would leave
//! it), then the image is opened. Checks the durability table of
//! format-spec/store.md row by row:
//!
//! - every policy: recovery opens, and the image holds exactly the state after some prefix of
//!   the acknowledged writes (never part of a write, never a later write without an earlier);
//! - `per-write`: that prefix is all of them;
//! - `manual` and `group`: at least every write before the last `flush` or compaction.
//!
//! `SIMDEX_POWER_TRIALS=N` runs N trials per policy (default 15).

use crate::common;

use std::collections::BTreeSet;
use std::time::Duration;

use common::storage::TestStorage;
use simdex::index::DesignChoice;
use simdex::sample::splitmix64;
use simdex::store::{CreateOptions, Store, StoreOptions, SyncPolicy};

type State = BTreeSet<(u64, u64)>;

fn trial(policy: SyncPolicy, seed: u64) -> (usize, usize) {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("s");
    Store::create(
        &dir,
        &CreateOptions::default().with_design(DesignChoice::Named("4".into())),
    )
    .unwrap();
    let storage = TestStorage::new();
    let store = Store::open(
        &dir,
        &StoreOptions::default()
            .with_sync(policy)
            .with_max_delta(40)
            .with_log_storage(std::sync::Arc::new(storage.clone())),
    )
    .unwrap();
    let mut s = seed;
    let mut state = State::new();
    // states[i] = the state after the first i writes; `floor`: writes a flush made durable.
    let mut states = vec![state.clone()];
    let mut floor = 0usize;
    let steps = 20 + (splitmix64(&mut s) % 120) as usize;
    for _ in 0..steps {
        match splitmix64(&mut s) % 10 {
            0..=4 => {
                let (fp, id) = (splitmix64(&mut s) >> (splitmix64(&mut s) % 4 * 16), s % 50);
                store.insert(fp, id).unwrap();
                state.insert((fp, id));
                states.push(state.clone());
            }
            5 | 6 => {
                let batch: Vec<(u64, u64)> = (0..1 + s % 8)
                    .map(|i| (splitmix64(&mut s), 100 + i))
                    .collect();
                store.insert_many(&batch).unwrap();
                state.extend(batch);
                states.push(state.clone());
            }
            7 => {
                let id = splitmix64(&mut s) % 50;
                store.delete(id).unwrap();
                state.retain(|p| p.1 != id);
                states.push(state.clone());
            }
            8 => {
                store.flush().unwrap();
                floor = states.len() - 1;
            }
            _ => {
                store.compact().unwrap();
                floor = states.len() - 1;
            }
        }
        if matches!(policy, SyncPolicy::Group(_)) && splitmix64(&mut s).is_multiple_of(8) {
            std::thread::sleep(Duration::from_millis(3));
        }
    }
    let image = tmp.path().join("image");
    storage.power_loss_image(&dir, &image);
    let acked = states.len() - 1;
    let back = Store::open(&image, &StoreOptions::default())
        .unwrap_or_else(|e| panic!("recovery must open ({policy:?}, seed {seed}): {e}"));
    let got: State = back.pairs().unwrap().into_iter().collect();
    back.verify().unwrap();
    let j = states
        .iter()
        .rposition(|st| *st == got)
        .unwrap_or_else(|| panic!("not the state after any prefix ({policy:?}, seed {seed})"));
    match policy {
        SyncPolicy::PerWrite => assert_eq!(j, acked, "per-write lost a write (seed {seed})"),
        _ => assert!(
            j >= floor,
            "{policy:?} lost flushed writes: {j} < {floor} (seed {seed})"
        ),
    }
    drop(store);
    (acked, acked - j)
}

#[test]
fn power_loss_keeps_what_each_sync_policy_promises() {
    let trials: u64 = std::env::var("SIMDEX_POWER_TRIALS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(15);
    for policy in [
        SyncPolicy::PerWrite,
        SyncPolicy::Manual,
        SyncPolicy::Group(Duration::from_millis(2)),
    ] {
        let (mut acked, mut lost, mut trials_losing) = (0, 0, 0);
        for t in 0..trials {
            let (a, l) = trial(policy, 0xD00D + t * 7919);
            acked += a;
            lost += l;
            trials_losing += usize::from(l > 0);
        }
        eprintln!(
            "{policy:?}: {trials} trials, {acked} acknowledged writes, {lost} lost to the \
             simulated power failure (in {trials_losing} trials)"
        );
        if policy == SyncPolicy::Manual && trials >= 10 {
            assert!(
                lost > 0,
                "the simulation must drop unsynced writes, or it tests nothing"
            );
        }
    }
}
