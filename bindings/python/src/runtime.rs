//! Where the extension's work runs: without the GIL, on thread pools that survive `fork()`, with
//! `threads=` bounded, and with Ctrl-C honoured while long calls run.
//!
//! * **fork.** rayon's global pool is started once per process; a child forked after it started
//!   inherits the pool's bookkeeping but none of its threads, so any parallel call there waits
//!   forever (a fork `multiprocessing.Pool` after `simdex.hash` in the parent hung every
//!   worker). The process that imported the module uses the global pool; any other process (a
//!   forked child) gets pools of its own, built on first use and keyed by process id.
//! * **threads=** is at least 1 and at most the machine's cores ([`max_threads`]): more threads
//!   than cores only add switching, and an absurd value (2**40) must not start a thread per
//!   unit. Pools are cached per size, so a loop of calls with `threads=4` builds one pool.
//! * **Ctrl-C.** A long call ([`detached_cancellable`]) runs as a job on the pool while the
//!   calling thread wakes every 50 ms to run Python's signal handlers. When one raises
//!   (KeyboardInterrupt), the job is asked to stop through its [`Cancel`] token, the call waits
//!   for it (the job borrows the caller's arrays) and raises the handler's exception; a build
//!   stopped this way publishes nothing.

use std::panic::AssertUnwindSafe;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::RecvTimeoutError;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use pyo3::prelude::*;
use rayon::ThreadPool;
use simdex::Error;
use simdex::{Progress, ProgressHandle};

use crate::args::Threads;
use crate::errors::{raise, to_py};

/// The process that imported the module: the one whose global rayon pool is safe to use.
static HOME_PID: OnceLock<u32> = OnceLock::new();

/// Pools built for a `threads=` value or for a forked child: (process id, threads, pool).
/// Entries of other processes (inherited through fork) are never used or dropped: their threads
/// do not exist in this process.
static POOLS: Mutex<Vec<(u32, usize, Arc<ThreadPool>)>> = Mutex::new(Vec::new());

/// Record the importing process (called once, at module initialisation).
pub fn init() {
    HOME_PID.get_or_init(std::process::id);
}

/// The most threads a call uses: the machine's cores.
pub fn max_threads() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// The pool to run on: `None` for the calling thread with the global pool (the importing
/// process, no `threads=`), else a cached pool of this process.
fn pool(threads: Option<Threads>) -> simdex::Result<Option<Arc<ThreadPool>>> {
    let pid = std::process::id();
    let home = HOME_PID.get().copied() == Some(pid);
    let n = match threads {
        None if home => return Ok(None),
        None => max_threads(),
        Some(Threads(n)) => n.clamp(1, max_threads()),
    };
    let mut pools = POOLS.lock().unwrap_or_else(|e| e.into_inner());
    if let Some((_, _, p)) = pools.iter().find(|(q, m, _)| *q == pid && *m == n) {
        return Ok(Some(Arc::clone(p)));
    }
    let p = rayon::ThreadPoolBuilder::new()
        .num_threads(n)
        .build()
        .map_err(|e| Error::InvalidArgument(format!("could not start {n} threads: {e}")))?;
    let p = Arc::new(p);
    pools.push((pid, n, Arc::clone(&p)));
    Ok(Some(p))
}

/// A panic's message, for the exception that replaces it.
fn panic_message(panic: Box<dyn std::any::Any + Send>) -> PyErr {
    let what = panic
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "unknown panic".into());
    raise("Error", format!("internal error (please report): {what}"))
}

/// Run `f` without the GIL, on `threads` threads if given (else every core), turning engine
/// errors and panics into Python exceptions. For calls that take little time: a signal is
/// handled when the call returns.
pub fn detached<T: Send>(
    py: Python<'_>,
    threads: Option<Threads>,
    f: impl FnOnce() -> simdex::Result<T> + Send,
) -> PyResult<T> {
    let out = py.detach(move || {
        std::panic::catch_unwind(AssertUnwindSafe(|| match pool(threads)? {
            None => f(),
            Some(p) => p.install(f),
        }))
    });
    match out {
        Ok(r) => r.map_err(to_py),
        Err(panic) => Err(panic_message(panic)),
    }
}

/// Asked by a long job between units of work: has the caller been interrupted?
#[derive(Clone, Default)]
pub struct Cancel(Arc<AtomicBool>);

impl Cancel {
    /// True once a signal handler raised in the calling thread.
    pub fn is_set(&self) -> bool {
        self.0.load(Ordering::Relaxed)
    }

    /// `Err(Cancelled)` once set: for `?` between chunks of work.
    pub fn check(&self) -> simdex::Result<()> {
        if self.is_set() {
            Err(Error::Cancelled)
        } else {
            Ok(())
        }
    }

    /// A progress receiver that asks the library's long operations to stop when set.
    pub fn progress(&self) -> ProgressHandle {
        ProgressHandle::new(self.clone())
    }
}

impl Progress for Cancel {
    fn cancelled(&self) -> bool {
        self.is_set()
    }
}

/// [`detached`] for long calls: `f` runs as a job on the pool while this thread runs Python's
/// signal handlers every 50 ms; when one raises, `f`'s [`Cancel`] is set, the call waits for
/// `f` to return and raises the handler's exception (KeyboardInterrupt) instead of its result.
pub fn detached_cancellable<T: Send>(
    py: Python<'_>,
    threads: Option<Threads>,
    f: impl FnOnce(&Cancel) -> simdex::Result<T> + Send,
) -> PyResult<T> {
    let waited = py.detach(move || -> simdex::Result<Waited<T>> {
        Ok(match pool(threads)? {
            None => rayon::in_place_scope(|s| run_and_watch(s, f)),
            Some(p) => p.in_place_scope(|s| run_and_watch(s, f)),
        })
    });
    let (job, raised) = waited.map_err(to_py)?;
    if let Some(e) = raised {
        return Err(e);
    }
    match job {
        Some(Ok(r)) => r.map_err(to_py),
        Some(Err(panic)) => Err(panic_message(panic)),
        None => Err(raise(
            "Error",
            "internal error: a job ended without a result".into(),
        )),
    }
}

/// Texts (or rows) above which a call is long enough to watch for Ctrl-C: below, running on the
/// calling thread costs less than handing the call to the pool (measured: a one-pair
/// `Store.insert` 4.5 µs on the calling thread, 16 µs as a job).
pub const LONG_CALL: usize = 4096;

/// [`detached_cancellable`] when `long`, else [`detached`] with a token that is never set.
pub fn detached_watched<T: Send>(
    py: Python<'_>,
    threads: Option<Threads>,
    long: bool,
    f: impl FnOnce(&Cancel) -> simdex::Result<T> + Send,
) -> PyResult<T> {
    if long {
        detached_cancellable(py, threads, f)
    } else {
        detached(py, threads, move || f(&Cancel::default()))
    }
}

/// A job's result (or its panic), if it sent one, and the exception a signal handler raised.
type Waited<T> = (
    Option<std::thread::Result<simdex::Result<T>>>,
    Option<PyErr>,
);

/// Spawn `f` in scope `s` and run signal handlers every 50 ms until it sends its result.
fn run_and_watch<'s, T: Send + 's>(
    s: &rayon::Scope<'s>,
    f: impl FnOnce(&Cancel) -> simdex::Result<T> + Send + 's,
) -> Waited<T> {
    let cancel = Cancel::default();
    let job_cancel = cancel.clone();
    let (tx, rx) = std::sync::mpsc::channel();
    s.spawn(move |_| {
        let r = std::panic::catch_unwind(AssertUnwindSafe(|| f(&job_cancel)));
        let _ = tx.send(r);
    });
    let mut raised = None;
    loop {
        match rx.recv_timeout(Duration::from_millis(50)) {
            Ok(r) => return (Some(r), raised),
            Err(RecvTimeoutError::Disconnected) => return (None, raised),
            Err(RecvTimeoutError::Timeout) => {
                if raised.is_none()
                    && let Err(e) = Python::attach(|py| py.check_signals())
                {
                    cancel.0.store(true, Ordering::Relaxed);
                    raised = Some(e);
                }
            }
        }
    }
}
