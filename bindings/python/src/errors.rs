//! Engine errors to Python exceptions.
//!
//! The exception classes live in Python (`simdex/_errors.py`) so that they can inherit from
//! both `simdex.Error` and the matching builtin (`InvalidArgument` is a `ValueError`, `IoError`
//! an `OSError`), which `create_exception!` cannot express.

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
        Error::Forked { .. } => "ForkError",
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

/// `InvalidArgument` with `msg`.
pub fn invalid(msg: impl Into<String>) -> PyErr {
    raise("InvalidArgument", msg.into())
}
