//! The seam between a store's write-ahead log and the file system.
//!
//! Every byte an open store appends to its log, and every fsync that makes those bytes
//! durable, goes through a [`LogFile`] that a [`LogStorage`] opened: the operating system's
//! files by default ([`OsStorage`]). Tests substitute their own, as LevelDB's `Env` or redb's
//! `StorageBackend` let them: one whose writes stop midway as a full disk would, one that
//! remembers which bytes were synced so that a power loss can be imaged. The production types
//! carry no hooks for that. The log is written a record at a time (microseconds each, under
//! the writer's lock), so one dynamic call per append and per fsync costs nothing measurable;
//! the query path never comes here.

use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::path::Path;

/// An open log file, appended to at its end.
pub trait LogFile: Send + Sync + std::fmt::Debug {
    /// Write all of `buf` at the end of the file. A failure may leave part of it written
    /// (recovery treats that as a torn tail).
    fn append(&mut self, buf: &[u8]) -> io::Result<()>;
    /// Make every byte written so far durable (`fdatasync`).
    fn sync_data(&self) -> io::Result<()>;
    /// Make the file's bytes and its metadata durable (`fsync`).
    fn sync_all(&self) -> io::Result<()>;
    /// A second handle to the same file, so that a sync need not wait for the writer.
    fn try_clone(&self) -> io::Result<Box<dyn LogFile>>;
}

/// Opens a store's log files: where the seam is chosen ([`super::StoreOptions`]).
pub trait LogStorage: Send + Sync + std::fmt::Debug {
    /// Create the log file `path`, which must not exist, for appending.
    fn create(&self, path: &Path) -> io::Result<Box<dyn LogFile>>;
    /// Open the existing log file `path` for appending after its first `len` bytes: the rest
    /// (a torn tail) is cut off and the cut made durable.
    fn reopen(&self, path: &Path, len: u64) -> io::Result<Box<dyn LogFile>>;
}

/// The operating system's files.
#[derive(Debug, Default, Clone, Copy)]
pub struct OsStorage;

impl LogStorage for OsStorage {
    fn create(&self, path: &Path) -> io::Result<Box<dyn LogFile>> {
        let file = OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(path)?;
        Ok(Box::new(file))
    }

    fn reopen(&self, path: &Path, len: u64) -> io::Result<Box<dyn LogFile>> {
        // O_APPEND: every write goes to the end, which set_len places at the valid prefix.
        let file = OpenOptions::new().append(true).open(path)?;
        file.set_len(len)?;
        file.sync_all()?;
        Ok(Box::new(file))
    }
}

impl LogFile for File {
    fn append(&mut self, buf: &[u8]) -> io::Result<()> {
        self.write_all(buf)
    }
    fn sync_data(&self) -> io::Result<()> {
        File::sync_data(self)
    }
    fn sync_all(&self) -> io::Result<()> {
        File::sync_all(self)
    }
    fn try_clone(&self) -> io::Result<Box<dyn LogFile>> {
        Ok(Box::new(File::try_clone(self)?))
    }
}
