//! Inputs that are read more than once (`insert` and `delete` check every line before applying
//! any; `dedup` learns IDF weights in a first pass), whatever they are.
//!
//! A pipe, a FIFO, `-`, `/dev/stdin` or `<(cmd)` can be read only once: a second open sees an
//! empty stream (or blocks forever on a FIFO), so a two-pass command would silently apply
//! nothing. Such an input is copied once into an anonymous temporary file (deleted when the
//! command ends, even on a crash: it has no name), and every pass reads the copy. A regular file
//! is kept open and read up to the length it had when opened, so every pass sees the same bytes;
//! a file that shrinks in between is an error, never a short pass.

use std::fs::File;
use std::io::{self, BufRead, BufReader, Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

use simdex::{Error, Result};

/// An input that can be read from its beginning any number of times.
pub struct Replayable {
    file: File,
    /// Bytes every pass reads.
    len: u64,
    /// The name in messages (`<stdin>` for `-`).
    name: PathBuf,
}

impl Replayable {
    /// Open `path` (`-` is standard input); anything but a regular file is copied into an
    /// anonymous temporary file in `spool_dir` first.
    pub fn open(path: &Path, spool_dir: &Path) -> Result<Replayable> {
        if path == Path::new("-") {
            return Replayable::spool(io::stdin().lock(), PathBuf::from("<stdin>"), spool_dir);
        }
        let name = path.to_path_buf();
        let file = File::open(path).map_err(|e| Error::io(name.clone(), "open", e))?;
        let meta = file
            .metadata()
            .map_err(|e| Error::io(name.clone(), "stat", e))?;
        if meta.is_dir() {
            return Err(Error::io(name, "read", io::Error::other("is a directory")));
        }
        if meta.is_file() {
            return Ok(Replayable {
                file,
                len: meta.len(),
                name,
            });
        }
        Replayable::spool(file, name, spool_dir)
    }

    fn spool(mut src: impl Read, name: PathBuf, spool_dir: &Path) -> Result<Replayable> {
        let mut file = tempfile::tempfile_in(spool_dir).map_err(|e| {
            Error::io_in_dir(spool_dir, "create a temporary file in the directory", e)
        })?;
        let len = io::copy(&mut src, &mut file).map_err(|e| {
            let op = if e.kind() == io::ErrorKind::StorageFull {
                "copy (the temporary copy filled the disk) from"
            } else {
                "copy"
            };
            Error::io(name.clone(), op, e)
        })?;
        Ok(Replayable { file, len, name })
    }

    /// The input's name for messages.
    pub fn name(&self) -> &Path {
        &self.name
    }

    /// A reader of the whole input from its first byte.
    pub fn reader(&self) -> Result<Box<dyn BufRead + Send>> {
        let mut f = self
            .file
            .try_clone()
            .map_err(|e| Error::io(self.name.clone(), "reopen", e))?;
        f.seek(SeekFrom::Start(0))
            .map_err(|e| Error::io(self.name.clone(), "seek", e))?;
        Ok(Box::new(BufReader::with_capacity(
            1 << 20,
            Exact {
                inner: f,
                left: self.len,
            },
        )))
    }
}

/// Reads exactly `left` bytes: fewer (the file shrank underneath) is an error.
struct Exact {
    inner: File,
    left: u64,
}

impl Read for Exact {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if self.left == 0 {
            return Ok(0);
        }
        let want = buf
            .len()
            .min(usize::try_from(self.left).unwrap_or(usize::MAX));
        let n = self.inner.read(&mut buf[..want])?;
        if n == 0 {
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                format!(
                    "the file shrank while being read ({} bytes missing): inputs must not change \
                     during a command",
                    self.left
                ),
            ));
        }
        self.left -= n as u64;
        Ok(n)
    }
}

/// The directory beside `path` (its parent, or `.`), where temporary copies go so that they
/// stay on the same file system as the output.
pub fn beside(path: &Path) -> PathBuf {
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    }
}
