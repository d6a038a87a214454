//! Writing a command's `--out` file: what is at the path decides how.
//!
//! - nothing there, or a regular file: replaced atomically (temporary file beside it, fsync,
//!   rename, fsync the directory), so a reader sees the old file or the whole new one;
//! - a symbolic link: followed (to any depth, dangling included), and the file it points to is
//!   replaced atomically; the link stays a link;
//! - a character device, FIFO, socket or other non-regular file: written in place, streaming
//!   (`--out /dev/null` and `--out >(gzip > x)` work; nothing is renamed over them);
//! - a directory: an error.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use simdex::{Error, Result};

/// Links followed before giving up (as the kernel's ELOOP).
const MAX_LINKS: usize = 40;

/// The path a chain of symbolic links at `path` ends at (which may not exist yet).
fn resolve(path: &Path) -> Result<PathBuf> {
    let mut p = path.to_path_buf();
    for _ in 0..MAX_LINKS {
        match std::fs::symlink_metadata(&p) {
            Ok(m) if m.file_type().is_symlink() => {
                let target =
                    std::fs::read_link(&p).map_err(|e| Error::io(p.clone(), "read link", e))?;
                p = match p.parent() {
                    Some(dir) if target.is_relative() => dir.join(target),
                    _ => target,
                };
            }
            _ => return Ok(p),
        }
    }
    Err(Error::io(
        path.to_path_buf(),
        "resolve output",
        std::io::Error::other(format!("more than {MAX_LINKS} symbolic links (a loop?)")),
    ))
}

/// Whether `path` could be written by [`write_output`], checked before a long command reads
/// its input (fail fast): not a directory, and a directory to hold it that exists.
pub fn check_output(path: &Path) -> Result<()> {
    let target = resolve(path)?;
    if std::fs::metadata(&target).is_ok_and(|m| m.is_dir()) {
        return Err(Error::io(
            path.to_path_buf(),
            "write output",
            std::io::Error::other("is a directory (give a file path)"),
        ));
    }
    let dir = match target.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    };
    match std::fs::metadata(&dir) {
        Ok(m) if m.is_dir() => Ok(()),
        Ok(_) => Err(Error::io_in_dir(
            &dir,
            "write the output in the directory",
            std::io::Error::other("not a directory"),
        )),
        Err(e) => Err(Error::io_in_dir(
            &dir,
            "write the output in the directory",
            e,
        )),
    }
}

/// Write `path` with what `write` produces, by the rules above.
pub fn write_output<T>(
    path: &Path,
    write: impl FnOnce(&mut BufWriter<File>) -> Result<T>,
) -> Result<T> {
    let target = resolve(path)?;
    match std::fs::metadata(&target) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            simdex::raw::write_file(&target, write)
        }
        Err(e) => Err(Error::io(target, "inspect output", e)),
        Ok(m) if m.is_dir() => Err(Error::io(
            path.to_path_buf(),
            "write output",
            std::io::Error::other("is a directory (give a file path)"),
        )),
        Ok(m) if m.is_file() => simdex::raw::write_file(&target, write),
        Ok(_) => {
            // A device, FIFO or socket: stream into it; there is nothing to replace.
            let f = std::fs::OpenOptions::new()
                .write(true)
                .open(&target)
                .map_err(|e| Error::io(target.clone(), "open output", e))?;
            let mut w = BufWriter::with_capacity(1 << 20, f);
            let out = write(&mut w)?;
            w.flush()
                .map_err(|e| Error::io(target.clone(), "write", e))?;
            Ok(out)
        }
    }
}
