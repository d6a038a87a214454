//! Progress reports and cancellation for long operations (build, batch, compaction, rebuild,
//! merge, verify).
//!
//! The library never draws on a terminal: it calls the caller's [`Progress`] implementation,
//! which may draw a bar (the CLI does), log, export a metric, or ask the operation to stop. A
//! cancelled operation returns [`Error::Cancelled`] and leaves nothing behind (builds stage
//! their output beside the target and publish it only when complete).
//!
//! ```
//! use std::sync::atomic::{AtomicU64, Ordering};
//! use std::sync::Arc;
//! use simdex::{BuildOptions};
//! use simdex::{Progress, ProgressHandle};
//!
//! #[derive(Default)]
//! struct Count(AtomicU64);
//! impl Progress for Count {
//!     fn advance(&self, done: u64) {
//!         self.0.fetch_add(done, Ordering::Relaxed);
//!     }
//! }
//!
//! # fn main() -> simdex::Result<()> {
//! # let dir = tempfile::tempdir().unwrap();
//! let count = Arc::new(Count::default());
//! let opts = BuildOptions::default().with_progress(ProgressHandle::from_arc(count.clone()));
//! simdex::build_index(dir.path().join("idx"), (0..1000u64).map(Ok), &opts)?;
//! assert!(count.0.load(Ordering::Relaxed) >= 1000);
//! # Ok(()) }
//! ```

use std::fmt;
use std::sync::Arc;

use crate::error::{Error, Result};

/// Receives progress reports; every method has a do-nothing default.
///
/// Implementations must be cheap: `advance` and `cancelled` are called from worker threads,
/// every few thousand keys or every block.
pub trait Progress: Send + Sync {
    /// A stage begins: `name` is a short word ("reading", "tables", "ids", "batch",
    /// "near_many", "verify"), `total` the number of units it will report, when known.
    fn stage(&self, name: &str, total: Option<u64>) {
        let _ = (name, total);
    }
    /// `done` more units of the current stage are finished.
    fn advance(&self, done: u64) {
        let _ = done;
    }
    /// The current stage is finished.
    fn finish(&self) {}
    /// Asked between units of work: returning true stops the operation with
    /// [`Error::Cancelled`].
    fn cancelled(&self) -> bool {
        false
    }
}

/// A cloneable, optional [`Progress`] receiver, as held by option structs. The default reports
/// nowhere and never cancels.
#[derive(Clone, Default)]
pub struct ProgressHandle(Option<Arc<dyn Progress>>);

impl fmt::Debug for ProgressHandle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(if self.0.is_some() {
            "ProgressHandle(set)"
        } else {
            "ProgressHandle(none)"
        })
    }
}

impl ProgressHandle {
    /// Report to `p`.
    pub fn new(p: impl Progress + 'static) -> ProgressHandle {
        ProgressHandle(Some(Arc::new(p)))
    }

    /// Report to a shared receiver (keep a clone to read what it gathered).
    pub fn from_arc(p: Arc<dyn Progress>) -> ProgressHandle {
        ProgressHandle(Some(p))
    }

    /// Report nowhere.
    pub fn none() -> ProgressHandle {
        ProgressHandle(None)
    }

    /// Begin a stage; an error if the receiver asks to cancel.
    pub(crate) fn stage(&self, name: &str, total: Option<u64>) -> Result<()> {
        if let Some(p) = &self.0 {
            p.stage(name, total);
        }
        self.check()
    }

    /// Report `done` units; an error if the receiver asks to cancel.
    pub(crate) fn advance(&self, done: u64) -> Result<()> {
        if let Some(p) = &self.0 {
            p.advance(done);
        }
        self.check()
    }

    /// End the current stage.
    pub(crate) fn finish(&self) {
        if let Some(p) = &self.0 {
            p.finish();
        }
    }

    /// [`Error::Cancelled`] if the receiver asks to stop.
    pub(crate) fn check(&self) -> Result<()> {
        match &self.0 {
            Some(p) if p.cancelled() => Err(Error::Cancelled),
            _ => Ok(()),
        }
    }
}
