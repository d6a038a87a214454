//! Crash-safe file replacement: write a temporary file beside the target, fsync it, rename it
//! over the target, fsync the directory. A crash at any point leaves the old file or the new
//! one, never a mix; a failed write leaves no temporary file behind (it is removed on drop).

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::Path;

use crate::error::{Error, Result};

/// Create or replace `path` atomically with the contents `write` produces.
///
/// `write` gets a buffered writer over a fresh temporary file in the same directory; it may seek.
/// A path that names something other than a regular file — `/dev/null`, `/dev/stdout`, a FIFO —
/// is written to in place (renaming a file over it would replace the device or pipe itself),
/// and a symbolic link to a file has its target replaced, the link kept.
pub fn write_file<T>(
    path: &Path,
    write: impl FnOnce(&mut BufWriter<File>) -> Result<T>,
) -> Result<T> {
    let buffered = |f| BufWriter::with_capacity(1 << 20, f);
    match std::fs::metadata(path) {
        Ok(m) if m.is_dir() => Err(Error::io(
            path.to_path_buf(),
            "write the output",
            std::io::Error::new(std::io::ErrorKind::IsADirectory, "it is a directory"),
        )),
        Ok(m) if !m.is_file() => {
            let io_err = |op| move |e| Error::io(path.to_path_buf(), op, e);
            let f = std::fs::OpenOptions::new()
                .write(true)
                .open(path)
                .map_err(io_err("open for writing"))?;
            let mut w = buffered(f);
            let out = write(&mut w)?;
            w.flush().map_err(io_err("write"))?;
            Ok(out)
        }
        Ok(_) if path.is_symlink() => {
            let target = std::fs::canonicalize(path)
                .map_err(|e| Error::io(path.to_path_buf(), "resolve the link", e))?;
            write_file_through(&target, buffered, write)
        }
        _ => write_file_through(path, buffered, write),
    }
}

/// [`write_file`] through a [`ChunkWriter`](crate::aligned::ChunkWriter): for the files
/// readers map (tables), so that the page cache holds them in 2 MiB folios from the start.
pub(crate) fn write_mapped_file<T>(
    path: &Path,
    write: impl FnOnce(&mut crate::aligned::ChunkWriter) -> Result<T>,
) -> Result<T> {
    write_file_through(path, crate::aligned::ChunkWriter::new, write)
}

/// [`write_file`] with the writer `wrap` makes of the temporary file.
fn write_file_through<W: Write, T>(
    path: &Path,
    wrap: impl FnOnce(File) -> W,
    write: impl FnOnce(&mut W) -> Result<T>,
) -> Result<T> {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let prefix = format!(".{name}.");
    let mut builder = tempfile::Builder::new();
    builder.prefix(&prefix).suffix(".tmp");
    // Like File::create: 0666 less the umask (tempfile's default, 0600, would make an index
    // built by one user unreadable by the service that serves it).
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        builder.permissions(std::fs::Permissions::from_mode(0o666));
    }
    let tmp = builder
        .tempfile_in(dir)
        .map_err(|e| Error::io_in_dir(dir, "create a temporary file in the directory", e))?;
    let io_err = |op| move |e| Error::io(path.to_path_buf(), op, e);
    // The NamedTempFile keeps the name (and deletes the file if we fail); we write through a
    // second handle to the same open file.
    let file = tmp.as_file().try_clone().map_err(io_err("open"))?;
    let mut w = wrap(file);
    let out = write(&mut w)?;
    w.flush().map_err(io_err("write"))?;
    drop(w);
    tmp.as_file().sync_all().map_err(io_err("fsync"))?;
    tmp.persist(path)
        .map_err(|e| Error::io(path.to_path_buf(), "rename into place", e.error))?;
    sync_dir(dir)?;
    Ok(out)
}

/// fsync a directory so a rename inside it is durable.
pub fn sync_dir(dir: &Path) -> Result<()> {
    File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(|e| Error::io(dir.to_path_buf(), "fsync directory", e))
}

/// A directory built in a hidden staging directory beside its final path and renamed into place
/// whole: a crash or an error before [`StagedDir::publish`] leaves nothing at the final path
/// (the staging directory is removed on drop; one left by a crash starts with a dot).
#[derive(Debug)]
pub(crate) struct StagedDir {
    staging: tempfile::TempDir,
    out: std::path::PathBuf,
    parent: std::path::PathBuf,
    _lock: File,
}

/// Remove what interrupted runs left beside `parent/name`: hidden staging directories
/// `.{name}.{what}-XXXXXX` that no live process holds locked (a killed build's lock went with
/// it). Best effort: what cannot be removed is left.
fn remove_stale(parent: &Path, name: &str) {
    let prefix = format!(".{name}.");
    let Ok(entries) = std::fs::read_dir(parent) else {
        return;
    };
    for e in entries.flatten() {
        let file_name = e.file_name().to_string_lossy().into_owned();
        let Some(rest) = file_name.strip_prefix(&prefix) else {
            continue;
        };
        let staged = ["building-", "creating-", "merging-", "staging-", "spill-"]
            .iter()
            .any(|w| rest.starts_with(w));
        if !staged || !e.file_type().is_ok_and(|t| t.is_dir()) {
            continue;
        }
        let path = e.path();
        if let Ok(d) = File::open(&path)
            && d.try_lock().is_ok()
        {
            let _ = std::fs::remove_dir_all(&path);
        }
    }
}

impl StagedDir {
    /// Stage `out`, which must not exist yet; the staging directory is named
    /// `.{file name of out}.{what}-XXXXXX`.
    pub fn new(out: &Path, what: &str) -> Result<StagedDir> {
        if out.exists() {
            return Err(Error::io(
                out.to_path_buf(),
                "create directory",
                std::io::Error::new(
                    std::io::ErrorKind::AlreadyExists,
                    "already exists (choose a new path or remove it first)",
                ),
            ));
        }
        let parent = match out.parent() {
            Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
            _ => std::path::PathBuf::from("."),
        };
        let name = out
            .file_name()
            .ok_or_else(|| Error::InvalidArgument(format!("{} has no file name", out.display())))?
            .to_string_lossy()
            .into_owned();
        remove_stale(&parent, &name);
        let staging = tempfile::Builder::new()
            .prefix(&format!(".{name}.{what}-"))
            .tempdir_in(&parent)
            .map_err(|e| {
                Error::io_in_dir(&parent, "create a staging directory in the directory", e)
            })?;
        // Held (flock) until published or dropped: a later run removes only unlocked ones.
        let lock = File::open(staging.path())
            .map_err(|e| Error::io(staging.path().to_path_buf(), "open", e))?;
        let _ = lock.try_lock();
        Ok(StagedDir {
            staging,
            out: out.to_path_buf(),
            parent,
            _lock: lock,
        })
    }

    /// Where to write the contents.
    pub fn path(&self) -> &Path {
        self.staging.path()
    }

    /// The directory holding the final path.
    pub fn parent(&self) -> &Path {
        &self.parent
    }

    /// fsync the staging directory, rename it to the final path, fsync the parent.
    pub fn publish(self) -> Result<()> {
        sync_dir(self.staging.path())?;
        let staged = self.staging.keep();
        if let Err(e) = std::fs::rename(&staged, &self.out) {
            let _ = std::fs::remove_dir_all(&staged);
            if matches!(
                e.kind(),
                std::io::ErrorKind::DirectoryNotEmpty | std::io::ErrorKind::AlreadyExists
            ) {
                return Err(Error::InvalidArgument(format!(
                    "{} was created by another process meanwhile; nothing was replaced",
                    self.out.display()
                )));
            }
            return Err(Error::io(self.out, "rename into place", e));
        }
        sync_dir(&self.parent)
    }
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;
    use std::io::Read;

    /// A FIFO (as /dev/null or /dev/stdout would be) is written in place and stays a FIFO; a
    /// link to a file keeps being a link, to the new contents; a directory is an error.
    #[test]
    fn special_files_are_written_in_place_and_links_followed() {
        use std::os::unix::fs::FileTypeExt;
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("pipe");
        let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
        // SAFETY: a valid NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        let f2 = fifo.clone();
        let reader = std::thread::spawn(move || {
            let mut s = String::new();
            File::open(&f2).unwrap().read_to_string(&mut s).unwrap();
            s
        });
        write_file(&fifo, |w| w.write_all(b"through the pipe").map_err(|e| Error::io(None, "write", e))).unwrap();
        assert_eq!(reader.join().unwrap(), "through the pipe");
        assert!(std::fs::symlink_metadata(&fifo).unwrap().file_type().is_fifo());

        let target = dir.path().join("target.txt");
        std::fs::write(&target, "old").unwrap();
        let link = dir.path().join("link");
        std::os::unix::fs::symlink(&target, &link).unwrap();
        write_file(&link, |w| w.write_all(b"new").map_err(|e| Error::io(None, "write", e))).unwrap();
        assert!(std::fs::symlink_metadata(&link).unwrap().file_type().is_symlink());
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "new");

        let e = write_file(dir.path(), |_| Ok(())).unwrap_err();
        assert!(e.to_string().contains("directory"), "{e}");
    }
}
