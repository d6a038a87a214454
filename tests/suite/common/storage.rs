//! A log storage for tests, through the store's seam (`simdex::store::storage`): real files,
//! plus a write that can be made to stop midway (a full disk) and a record of which bytes of
//! each log were synced (what a power loss leaves).

use std::collections::HashMap;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use simdex::store::storage::{LogFile, LogStorage, OsStorage};

#[derive(Debug, Default)]
struct Shared {
    /// Per log file: (bytes written, bytes synced).
    files: HashMap<PathBuf, (u64, u64)>,
    /// The next append writes this many bytes of its record, then fails.
    fail_after: Option<u64>,
}

/// Real files, watched. Clone it into `StoreOptions::with_log_storage` and keep a handle.
#[derive(Debug, Default, Clone)]
pub struct TestStorage(Arc<Mutex<Shared>>);

impl TestStorage {
    pub fn new() -> TestStorage {
        TestStorage::default()
    }

    /// The next log append writes only `bytes` bytes of its record and fails.
    pub fn fail_next_append_after(&self, bytes: u64) {
        self.0.lock().unwrap().fail_after = Some(bytes);
    }

    /// Bytes of log `path` known to be on stable storage.
    pub fn synced(&self, path: &Path) -> Option<u64> {
        self.0.lock().unwrap().files.get(path).map(|f| f.1)
    }

    /// Copy store directory `from` to `to` as a power failure would leave it: every log this
    /// storage wrote cut to the bytes synced (the lock file left out).
    pub fn power_loss_image(&self, from: &Path, to: &Path) {
        std::fs::create_dir_all(to).unwrap();
        for e in std::fs::read_dir(from).unwrap() {
            let e = e.unwrap();
            let name = e.file_name();
            if name == "LOCK" {
                continue;
            }
            let t = e.file_type().unwrap();
            if t.is_dir() {
                self.power_loss_image(&e.path(), &to.join(&name));
            } else if t.is_file() {
                let dest = to.join(&name);
                std::fs::copy(e.path(), &dest).unwrap();
                if let Some(synced) = self.synced(&e.path()) {
                    let f = std::fs::OpenOptions::new().write(true).open(&dest).unwrap();
                    let len = f.metadata().unwrap().len();
                    assert!(
                        synced <= len,
                        "synced {synced} beyond the file's {len} bytes"
                    );
                    f.set_len(synced).unwrap();
                }
            }
        }
    }

    fn wrap(&self, path: &Path, file: Box<dyn LogFile>, len: u64) -> Box<dyn LogFile> {
        self.0
            .lock()
            .unwrap()
            .files
            .insert(path.to_path_buf(), (len, len));
        Box::new(Watched {
            file,
            path: path.to_path_buf(),
            shared: Arc::clone(&self.0),
        })
    }
}

impl LogStorage for TestStorage {
    fn create(&self, path: &Path) -> io::Result<Box<dyn LogFile>> {
        let f = OsStorage.create(path)?;
        Ok(self.wrap(path, f, 0))
    }

    fn reopen(&self, path: &Path, len: u64) -> io::Result<Box<dyn LogFile>> {
        // The cut is synced before this returns.
        let f = OsStorage.reopen(path, len)?;
        Ok(self.wrap(path, f, len))
    }
}

#[derive(Debug)]
struct Watched {
    file: Box<dyn LogFile>,
    path: PathBuf,
    shared: Arc<Mutex<Shared>>,
}

impl Watched {
    fn synced_now(&self) {
        let mut s = self.shared.lock().unwrap();
        if let Some(f) = s.files.get_mut(&self.path) {
            f.1 = f.0;
        }
    }
}

impl LogFile for Watched {
    fn append(&mut self, buf: &[u8]) -> io::Result<()> {
        let fail = self.shared.lock().unwrap().fail_after.take();
        let n = fail.map_or(buf.len(), |n| (n as usize).min(buf.len()));
        let r = self.file.append(&buf[..n]);
        if let Some(f) = self.shared.lock().unwrap().files.get_mut(&self.path) {
            f.0 += n as u64;
        }
        r?;
        match fail {
            Some(_) => Err(io::Error::other(format!(
                "injected failure after {n} bytes"
            ))),
            None => Ok(()),
        }
    }
    fn sync_data(&self) -> io::Result<()> {
        self.file.sync_data()?;
        self.synced_now();
        Ok(())
    }
    fn sync_all(&self) -> io::Result<()> {
        self.file.sync_all()?;
        self.synced_now();
        Ok(())
    }
    fn try_clone(&self) -> io::Result<Box<dyn LogFile>> {
        Ok(Box::new(Watched {
            file: self.file.try_clone()?,
            path: self.path.clone(),
            shared: Arc::clone(&self.shared),
        }))
    }
}
