//! Sequences of store operations against a model (a set of pairs, brute-force queries), with a
//! storage layer that fails midway through a log write and crashes that cut the log anywhere
//! after the last compaction. After a crash the store must hold the model's state after some
//! prefix of the writes since then; after a failed write, the state without it.
#![no_main]

use std::collections::BTreeSet;

use libfuzzer_sys::fuzz_target;

/// The tests' log storage (real files; a write that stops midway on request).
#[path = "../../tests/suite/common/storage.rs"]
#[allow(dead_code)]
mod storage;
use simdex::index::DesignChoice;
use simdex::store::{CreateOptions, Store, StoreOptions, SyncPolicy};

type Model = BTreeSet<(u64, u64)>;

fn near(m: &Model, q: u64, k: u32) -> Vec<(u64, Vec<u64>)> {
    let mut out: Vec<(u64, Vec<u64>)> = Vec::new();
    for &(fp, id) in m {
        if (fp ^ q).count_ones() <= k {
            match out.last_mut() {
                Some(e) if e.0 == fp => e.1.push(id),
                _ => out.push((fp, vec![id])),
            }
        }
    }
    out
}

fuzz_target!(|data: &[u8]| {
    if data.len() < 2 {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("s");
    let design = ["4", "m4c2r1", "10"][data[0] as usize % 3];
    Store::create(
        &dir,
        &CreateOptions::default()
            .with_design(DesignChoice::Named(design.into()))
            .with_block_size(Some(128)),
    )
    .unwrap();
    let storage = storage::TestStorage::new();
    let opts = StoreOptions::default()
        .with_sync(SyncPolicy::Manual)
        .with_max_delta(1 + data[1] as u64 % 64)
        .with_log_storage(std::sync::Arc::new(storage.clone()));
    let mut store = Some(Store::open(&dir, &opts).unwrap());
    // States since the last compaction: a crash may land on any of them.
    let mut states: Vec<Model> = vec![Model::new()];
    // Fingerprints from a few centres so that queries and deletes hit.
    let centres = [0u64, u64::MAX, 0x0123_4567_89ab_cdef, 0xf0f0_f0f0_0f0f_0f0f];
    let mut generation = 0;
    for op in data[2..].chunks(4) {
        let s = store.as_ref().unwrap();
        let (kind, a, b, c) = (
            op[0] % 8,
            *op.get(1).unwrap_or(&0),
            *op.get(2).unwrap_or(&0),
            *op.get(3).unwrap_or(&0),
        );
        let fp = centres[a as usize % 4] ^ (1u64 << (b % 64)) ^ ((c as u64 % 4) << 10);
        let id = b as u64 % 16;
        let mut m = states.last().unwrap().clone();
        match kind {
            0..=2 => {
                s.insert(fp, id).unwrap();
                m.insert((fp, id));
                states.push(m);
            }
            3 => {
                s.delete(id).unwrap();
                m.retain(|p| p.1 != id);
                states.push(m);
            }
            4 => {
                s.compact().unwrap();
            }
            5 => {
                // A write that fails midway: refused, invisible, and the store refuses writes
                // until reopened.
                // Its outcome is indeterminate but never partial: if all its bytes reached the
                // log before the error (a failed fsync after a whole write), it is there after
                // reopening; otherwise it is not.
                storage.fail_next_append_after(c as u64 % 48);
                assert!(s.insert(fp, id).is_err());
                assert!(s.insert(fp, id).is_err());
                drop(store.take());
                let s = Store::open(&dir, &opts).unwrap();
                let got: Model = s.pairs().unwrap().into_iter().collect();
                m.insert((fp, id));
                if got == m && got != *states.last().unwrap() {
                    states.push(m);
                } else {
                    assert_eq!(
                        &got,
                        states.last().unwrap(),
                        "a failed write applied partly"
                    );
                }
                store = Some(s);
            }
            6 => {
                // Crash: cut the live log at an arbitrary point after its header.
                drop(store.take());
                let logs: Vec<_> = std::fs::read_dir(&dir)
                    .unwrap()
                    .map(|e| e.unwrap().path())
                    .filter(|p| p.extension().is_some_and(|x| x == "log"))
                    .collect();
                let log = logs.iter().max().unwrap();
                let len = std::fs::metadata(log).unwrap().len();
                let cut = 32 + (u64::from(b) << 8 | u64::from(c)) % (len - 31);
                std::fs::OpenOptions::new()
                    .write(true)
                    .open(log)
                    .unwrap()
                    .set_len(cut)
                    .unwrap();
                let s = Store::open(&dir, &opts).unwrap();
                let got: Model = s.pairs().unwrap().into_iter().collect();
                let j = states
                    .iter()
                    .position(|st| *st == got)
                    .expect("recovered a state that is no prefix of the writes");
                states.truncate(j + 1);
                s.verify().unwrap();
                store = Some(s);
            }
            _ => {
                let q = fp ^ (u64::from(c) << 20);
                let k = u32::from(c % 4);
                let got: Vec<(u64, Vec<u64>)> = s
                    .near(q, k)
                    .unwrap()
                    .into_iter()
                    .map(|m| (m.fingerprint, m.ids))
                    .collect();
                let mut want = near(states.last().unwrap(), q, k);
                want.sort_by_key(|(f, _)| ((f ^ q).count_ones(), *f));
                assert_eq!(got, want);
            }
        }
        // A compaction (asked for, or automatic when the delta filled) folds every state so
        // far into the generation: a later crash can no longer go back before it.
        let g = store.as_ref().unwrap().stats().generation;
        if g != generation {
            generation = g;
            let last = states.pop().unwrap();
            states = vec![last];
        }
    }
    let s = store.unwrap();
    let got: Model = s.pairs().unwrap().into_iter().collect();
    assert_eq!(&got, states.last().unwrap());
});
