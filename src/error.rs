//! The one error type of the crate.
//!
//! Every variant carries the evidence a user (or an on-call engineer) needs to act: which file,
//! which on-disk structure, at which byte offset, what was expected and what was found. Messages
//! end with what to do about it where there is something to do.

use std::fmt;
use std::io;
use std::path::{Path, PathBuf};

/// A `Result` whose error is [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Everything that can go wrong in simdex.
#[derive(Debug)]
#[non_exhaustive]
pub enum Error {
    /// An operating-system I/O call failed.
    Io {
        /// The file involved, when known.
        path: Option<PathBuf>,
        /// What was being done ("open", "read", "write", "fsync", "rename", ...).
        op: &'static str,
        /// The underlying error.
        source: io::Error,
    },
    /// Bytes on disk (or handed in as a slice) are not a valid simdex structure: truncated,
    /// corrupted, or not a simdex file at all.
    Corrupt {
        /// The file, when known.
        path: Option<PathBuf>,
        /// The structure that failed to validate ("table header", "block 17", ...).
        structure: String,
        /// Byte offset of the structure (or the offending field) in the file.
        offset: u64,
        /// What a valid file holds there.
        expected: String,
        /// What was found instead.
        found: String,
    },
    /// The file is a simdex file of a version (or codec) this build cannot read.
    Unsupported {
        /// The file, when known.
        path: Option<PathBuf>,
        /// What is unsupported ("format version", "codec").
        what: &'static str,
        /// The values this build understands.
        expected: String,
        /// The value in the file.
        found: u64,
    },
    /// Input to a builder was not in strictly ascending order (after dropping exact duplicates).
    Unsorted {
        /// Zero-based position of the offending key in the input.
        position: u64,
        /// The key before it.
        previous: u64,
        /// The offending key, smaller than `previous`.
        key: u64,
    },
    /// A two-pass build saw different input on its second pass than on its first.
    InputChanged {
        /// What differed.
        detail: String,
    },
    /// An argument is out of range (a block size that is not a power of two, k too large, ...).
    InvalidArgument(String),
    /// Text input could not be parsed (bad hex, a truncated binary record, ...).
    Parse {
        /// The input, when it is a file.
        path: Option<PathBuf>,
        /// 1-based line number, or byte offset for binary input.
        location: String,
        /// What is wrong.
        message: String,
    },
    /// Another process (or another open `Store` in this one) holds a store's writer lock.
    Locked {
        /// The lock file.
        path: PathBuf,
    },
    /// An earlier write or fsync failed; the store refuses further writes until reopened
    /// (after a failed fsync the kernel may have dropped the dirty pages: retrying would lie).
    Poisoned(String),
    /// A store opened for writing by one process was asked to write (or flush, or compact) by a
    /// process forked from it, through the handle the fork inherited. The two processes would
    /// append to one log at independent positions and lose each other's acknowledged writes.
    Forked {
        /// The store directory.
        dir: PathBuf,
        /// The process that opened the store.
        opened_by: u32,
        /// The process that asked.
        caller: u32,
    },
    /// The caller's progress receiver (`Progress::cancelled`) asked the operation to stop; nothing
    /// was published.
    Cancelled,
}

impl Error {
    /// An I/O error on `path` during `op`.
    pub fn io(path: impl Into<Option<PathBuf>>, op: &'static str, source: io::Error) -> Error {
        Error::Io {
            path: path.into(),
            op,
            source,
        }
    }

    /// An I/O error while creating something inside directory `dir` (named absolutely: a
    /// relative `.` says nothing in a log).
    pub fn io_in_dir(dir: &Path, op: &'static str, source: io::Error) -> Error {
        let dir = std::path::absolute(dir).unwrap_or_else(|_| dir.to_path_buf());
        Error::io(dir, op, source)
    }

    /// A corruption error without a file name; [`Error::with_path`] adds one.
    pub fn corrupt(
        structure: impl Into<String>,
        offset: u64,
        expected: impl fmt::Display,
        found: impl fmt::Display,
    ) -> Error {
        Error::Corrupt {
            path: None,
            structure: structure.into(),
            offset,
            expected: expected.to_string(),
            found: found.to_string(),
        }
    }

    /// Attach a file name to an error that does not have one yet.
    pub fn with_path(mut self, p: &Path) -> Error {
        if let Error::Io { path, .. }
        | Error::Corrupt { path, .. }
        | Error::Unsupported { path, .. }
        | Error::Parse { path, .. } = &mut self
            && path.is_none()
        {
            *path = Some(p.to_path_buf());
        }
        self
    }

    /// The operating-system error behind an [`Error::Io`] (its kind tells "not found" from
    /// "permission denied"). Its message is already part of this error's `Display`, so
    /// [`source`](std::error::Error::source) does not repeat it.
    pub fn io_error(&self) -> Option<&io::Error> {
        match self {
            Error::Io { source, .. } => Some(source),
            _ => None,
        }
    }

    /// True when the error says the data is damaged (as opposed to I/O or usage errors).
    pub fn is_corruption(&self) -> bool {
        matches!(self, Error::Corrupt { .. })
    }
}

fn show_path(path: &Option<PathBuf>) -> String {
    match path {
        Some(p) => format!("{}: ", p.display()),
        None => String::new(),
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Io { path, op, source } => {
                write!(f, "{}{op} failed: {source}", show_path(path))
            }
            Error::Corrupt {
                path,
                structure,
                offset,
                expected,
                found,
            } => write!(
                f,
                "{}corrupt {structure} at byte offset {offset}: expected {expected}, found {found} \
                 (the file is damaged or not a simdex file; rebuild it from its source)",
                show_path(path)
            ),
            Error::Unsupported {
                path,
                what,
                expected,
                found,
            } => write!(
                f,
                "{}unsupported {what}: this build reads {expected}, the file has {found} \
                 (use a simdex release that supports it, or rebuild the file)",
                show_path(path)
            ),
            Error::Unsorted {
                position,
                previous,
                key,
            } => write!(
                f,
                "input is not sorted: key {key:#018x} at position {position} comes after \
                 {previous:#018x} (sort the input ascending first)"
            ),
            Error::InputChanged { detail } => write!(
                f,
                "input changed between the two build passes: {detail} \
                 (the source must yield the same keys on every pass)"
            ),
            Error::InvalidArgument(msg) => write!(f, "invalid argument: {msg}"),
            Error::Parse {
                path,
                location,
                message,
            } => write!(f, "{}{location}: {message}", show_path(path)),
            Error::Locked { path } => write!(
                f,
                "{}: the store is locked by another writer (one writing process at a time; \
                 readers can use read-only access)",
                path.display()
            ),
            Error::Poisoned(why) => write!(
                f,
                "the store refuses writes after an earlier failure ({why}); reopen it to \
                 recover from its log"
            ),
            Error::Forked {
                dir,
                opened_by,
                caller,
            } => write!(
                f,
                "{}: process {caller} is a fork of process {opened_by}, which opened the store \
                 for writing: a forked child cannot write through the inherited handle (open \
                 the store in the child after the parent has closed it, or send the writes to \
                 the parent)",
                dir.display()
            ),
            Error::Cancelled => write!(f, "cancelled; nothing was published"),
        }
    }
}

/// No `source()`: every message already includes its cause (an I/O error's text), and an error
/// chain printer would otherwise print it twice. [`Error::io_error`] gives the cause itself.
impl std::error::Error for Error {}
