//! A store open for writing, and a process forked from it (format-spec/store.md, "Processes
//! that fork"): the child cannot write, flush or compact through the inherited handle, dropping
//! it there writes nothing, and every write the parent acknowledged, before and after the fork,
//! survives a reopen with no torn tail. Before the guard, the child's writes went into the
//! parent's log at positions of its own, and a reopen dropped acknowledged records as a torn
//! tail.
#![cfg(unix)]

use simdex::Error;
use simdex::store::{CreateOptions, Store, StoreOptions, SyncPolicy};

/// Run `child` in a forked process; its exit status (0 = every check passed there).
fn in_child(child: impl FnOnce() -> bool) -> i32 {
    // SAFETY: the child runs only `child` and then `_exit`s without unwinding or running the
    // test harness's destructors.
    match unsafe { libc::fork() } {
        -1 => panic!("fork failed"),
        0 => {
            let ok = std::panic::catch_unwind(std::panic::AssertUnwindSafe(child)).unwrap_or(false);
            // SAFETY: ends the child at once.
            unsafe { libc::_exit(if ok { 0 } else { 1 }) }
        }
        pid => {
            let mut status = 0;
            // SAFETY: waits for the child just forked.
            let r = unsafe { libc::waitpid(pid, &mut status, 0) };
            assert_eq!(r, pid);
            assert!(libc::WIFEXITED(status), "child died: status {status}");
            libc::WEXITSTATUS(status)
        }
    }
}

#[test]
fn a_forked_child_cannot_write_and_the_parents_writes_survive() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("st");
    for sync in [
        SyncPolicy::PerWrite,
        SyncPolicy::Group(std::time::Duration::from_millis(5)),
    ] {
        let _ = std::fs::remove_dir_all(&path); // the previous policy's store
        Store::create(&path, &CreateOptions::default().with_k(3)).unwrap();
        let mut held = Some(Store::open(&path, &StoreOptions::default().with_sync(sync)).unwrap());
        for i in 0..10u64 {
            let store = held.as_ref().unwrap();
            store.insert(i * 0x1111, i).unwrap();
        }
        let status = in_child(|| {
            let store = held.as_ref().unwrap();
            let forked = |r: simdex::Result<()>| matches!(r, Err(Error::Forked { .. }));
            let msg = store.insert(1, 1000).unwrap_err().to_string();
            let ok = msg.contains("fork")
                && forked(store.insert_many(&[(2, 1001)]))
                && forked(store.delete(3))
                && forked(store.flush())
                && matches!(store.compact(), Err(Error::Forked { .. }))
                // Reads still work on the state inherited from the parent.
                && store.ids_of(0x1111).unwrap() == vec![1];
            // Closing the inherited copy writes nothing and does not wait for the parent's
            // group-commit thread (which does not exist here).
            ok && held.take().unwrap().close().is_ok()
        });
        let store = held.as_ref().unwrap();
        assert_eq!(
            status, 0,
            "the child's writes were not all refused ({sync:?})"
        );
        for i in 10..20u64 {
            store.insert(i * 0x1111, i).unwrap();
        }
        held.take().unwrap().close().unwrap();
        let s = Store::open(&path, &StoreOptions::default()).unwrap();
        assert!(s.recovery().torn.is_empty(), "{:?}", s.recovery().torn);
        assert_eq!(s.stats().delta_pairs, 20, "{sync:?}");
        assert!(s.ids_of(1).unwrap().is_empty(), "a child's write got in");
    }
}
