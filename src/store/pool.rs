//! Where a store's parallel write work runs: on a thread pool of the store module's own, entered
//! from a thread that is in no pool.
//!
//! A mutex held across a rayon join deadlocks when the waiting thread, free to run other jobs
//! meanwhile, picks up one that wants the same mutex: its own frame below holds it. Ingest
//! serializes its calls with a mutex, and Python runs each long call as a job of the global
//! pool, so several threads ingesting into one store hung that way. The rule kept here:
//!
//! * the mutexes that serialize writes are taken on a thread that is in no pool (the caller,
//!   or a thread started to host the call when the caller is itself a pool's worker, which then
//!   blocks without taking other jobs), and the parallel work then runs on the private pool;
//! * the private pool's jobs never wait for those mutexes, except for the compaction lock, which
//!   they wait for by running the pool's other jobs ([`lock_helping`]), so that a compaction
//!   they wait for, running on the same pool, finishes.
//!
//! Pools are kept per process (a child forked after a pool started has none of its threads)
//! and per size: a caller's pool size (`rayon::current_num_threads`) is kept.

use std::sync::{Arc, Mutex, MutexGuard};

use rayon::ThreadPool;

use crate::error::{Error, Result};

/// Pools built so far: (process id, threads, pool).
static POOLS: Mutex<Vec<(u32, usize, Arc<ThreadPool>)>> = Mutex::new(Vec::new());

/// The private pool of `n` threads for this process.
fn pool(n: usize) -> Result<Arc<ThreadPool>> {
    let pid = std::process::id();
    let mut pools = POOLS.lock().unwrap_or_else(|e| e.into_inner());
    if let Some((_, _, p)) = pools.iter().find(|(q, m, _)| *q == pid && *m == n) {
        return Ok(Arc::clone(p));
    }
    let p = rayon::ThreadPoolBuilder::new()
        .num_threads(n)
        .thread_name(|i| format!("simdex-store-{i}"))
        .build()
        .map_err(|e| Error::InvalidArgument(format!("could not start {n} threads: {e}")))?;
    let p = Arc::new(p);
    pools.push((pid, n, Arc::clone(&p)));
    Ok(p)
}

/// True on a thread of a private pool.
fn in_private_pool() -> bool {
    let pid = std::process::id();
    let pools = POOLS.lock().unwrap_or_else(|e| e.into_inner());
    pools
        .iter()
        .any(|(q, _, p)| *q == pid && p.current_thread_index().is_some())
}

/// Run `f` on a thread that is in no pool: this one, or (on a pool's worker) a thread started
/// for it, which this one waits for without running other jobs.
pub(super) fn outside_pools<T: Send>(f: impl FnOnce() -> T + Send) -> T {
    if rayon::current_thread_index().is_none() {
        return f();
    }
    std::thread::scope(|s| match s.spawn(f).join() {
        Ok(v) => v,
        Err(panic) => std::panic::resume_unwind(panic),
    })
}

/// Run `f` on the private pool (sized as the caller's pool) holding `m`: inline when already
/// there (taking `m` by [`lock_helping`]), else from a thread in no pool, which takes `m` before
/// it hands `f` to the pool.
pub(super) fn locked_install<M, T: Send>(
    m: &Mutex<M>,
    f: impl FnOnce() -> Result<T> + Send,
) -> Result<T>
where
    M: Send,
{
    if in_private_pool() {
        let _held = lock_helping(m);
        return f();
    }
    let n = rayon::current_num_threads().max(1);
    outside_pools(move || {
        let _held = super::durability::lock(m);
        pool(n)?.install(f)
    })
}

/// [`locked_install`] without a lock: for work that only reads.
pub(super) fn install<T: Send>(f: impl FnOnce() -> Result<T> + Send) -> Result<T> {
    if in_private_pool() {
        return f();
    }
    let n = rayon::current_num_threads().max(1);
    outside_pools(move || pool(n)?.install(f))
}

/// Lock `m`; on a pool's worker, by running the pool's other jobs while it is held elsewhere
/// (the holder may be waiting for them), else by blocking.
pub(super) fn lock_helping<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    if rayon::current_thread_index().is_none() {
        return super::durability::lock(m);
    }
    loop {
        match m.try_lock() {
            Ok(g) => return g,
            Err(std::sync::TryLockError::Poisoned(e)) => return e.into_inner(),
            Err(std::sync::TryLockError::WouldBlock) => {
                if rayon::yield_now() != Some(rayon::Yield::Executed) {
                    std::thread::sleep(std::time::Duration::from_micros(50));
                }
            }
        }
    }
}
