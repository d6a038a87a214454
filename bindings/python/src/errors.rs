//! Engine errors to Python exceptions, and running work without the GIL.
//!
//! The exception classes live in Python (`simdex/_errors.py`) so that they can inherit from
//! both `simdex.Error` and the matching builtin (`InvalidArgument` is a `ValueError`, `IoError`
//! an `OSError`), which `create_exception!` cannot express.

use std::panic::AssertUnwindSafe;

use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;
use simdex::Error;

/// The Python exception for an engine error, with the engine's message.
pub fn to_py(e: Error) -> PyErr {
    let class = match &e {
        Error::Corrupt { .. } | Error::InputChanged { .. } => "CorruptError",
        Error::Unsupported { .. } => "UnsupportedError",
        Error::InvalidArgument(_) | Error::Unsorted { .. } | Error::Parse { .. } => {
            "InvalidArgument"
        }
        Error::Locked { .. } => "LockedError",
        Error::Io { .. } => "IoError",
        Error::Poisoned(_) => "PoisonedError",
        Error::Cancelled => "CancelledError",
        _ => "Error",
    };
    raise(class, e.to_string())
}

/// An instance of `simdex._errors.<class>` with `msg` (a RuntimeError if the module is missing).
pub fn raise(class: &str, msg: String) -> PyErr {
    Python::attach(|py| {
        let made = py
            .import("simdex._errors")
            .and_then(|m| m.getattr(class))
            .and_then(|c| c.call1((msg.clone(),)));
        match made {
            Ok(obj) => PyErr::from_value(obj),
            Err(_) => PyRuntimeError::new_err(msg),
        }
    })
}

/// Run `f` without the GIL, on `threads` threads if given (else the global rayon pool),
/// turning engine errors and panics into Python exceptions.
pub fn detached<T: Send>(
    py: Python<'_>,
    threads: Option<usize>,
    f: impl FnOnce() -> simdex::Result<T> + Send,
) -> PyResult<T> {
    let out = py.detach(move || {
        std::panic::catch_unwind(AssertUnwindSafe(|| match threads {
            Some(n) => rayon::ThreadPoolBuilder::new()
                .num_threads(n.max(1))
                .build()
                .map_err(|e| Error::InvalidArgument(format!("threads = {n}: {e}")))
                .and_then(|pool| pool.install(f)),
            None => f(),
        }))
    });
    match out {
        Ok(Ok(v)) => Ok(v),
        Ok(Err(e)) => Err(to_py(e)),
        Err(panic) => {
            let what = panic
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "unknown panic".into());
            Err(raise(
                "Error",
                format!("internal error (please report): {what}"),
            ))
        }
    }
}

/// `InvalidArgument` with `msg`.
pub fn invalid(msg: impl Into<String>) -> PyErr {
    raise("InvalidArgument", msg.into())
}
