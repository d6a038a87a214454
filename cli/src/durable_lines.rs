//! `ingest`'s output lines, written once their batch is durable: the store's log is synced on
//! a thread of its own while the next batch is checked, and a batch's lines wait for its sync.
//! (Synced in line, each batch's fsync left both cores idle: a few percent of an ingest.)

use std::io::Write;
use std::sync::Arc;
use std::sync::mpsc::{Receiver, SyncSender, sync_channel};

use simdex::{Error, Result, Store};

/// See the module docs.
pub struct DurableLines {
    /// The sync thread, once a batch has asked for one.
    syncer: Option<Syncer>,
    /// The lines of the batch whose sync is under way.
    pending: Option<Vec<u8>>,
}

struct Syncer {
    ask: SyncSender<()>,
    done: Receiver<Result<()>>,
    thread: std::thread::JoinHandle<()>,
}

impl DurableLines {
    /// Nothing pending.
    pub fn new() -> DurableLines {
        DurableLines {
            syncer: None,
            pending: None,
        }
    }

    /// A batch is checked: write the last batch's lines once its sync is done, and sync this
    /// one (`lines`) in the background (or, `sync` false, write its lines now).
    pub fn batch(
        &mut self,
        w: &mut dyn Write,
        store: &Arc<Store>,
        lines: Vec<u8>,
        sync: bool,
    ) -> Result<()> {
        self.finish(w)?;
        if !sync {
            return write(w, &lines);
        }
        let s = match &mut self.syncer {
            Some(s) => s,
            none => none.insert(Syncer::start(Arc::clone(store))?),
        };
        s.ask.send(()).map_err(|_| stopped())?;
        self.pending = Some(lines);
        Ok(())
    }

    /// Wait for the pending sync, if any, and write its batch's lines.
    pub fn finish(&mut self, w: &mut dyn Write) -> Result<()> {
        let Some(lines) = self.pending.take() else {
            return Ok(());
        };
        let done = self.syncer.as_ref().map(|s| s.done.recv());
        done.and_then(|r| r.ok()).ok_or_else(stopped)??;
        write(w, &lines)
    }
}

impl Drop for DurableLines {
    fn drop(&mut self) {
        if let Some(s) = self.syncer.take() {
            drop(s.ask);
            let _ = s.thread.join();
        }
    }
}

impl Syncer {
    fn start(store: Arc<Store>) -> Result<Syncer> {
        let (ask, asked) = sync_channel::<()>(1);
        let (tell, done) = sync_channel::<Result<()>>(1);
        let thread = std::thread::Builder::new()
            .name("simdex-sync".into())
            .spawn(move || {
                for () in asked {
                    if tell.send(store.flush()).is_err() {
                        return;
                    }
                }
            })
            .map_err(|e| Error::io(None, "start the log's sync thread", e))?;
        Ok(Syncer { ask, done, thread })
    }
}

fn stopped() -> Error {
    Error::InvalidArgument("the log's sync thread stopped".into())
}

fn write(w: &mut dyn Write, lines: &[u8]) -> Result<()> {
    w.write_all(lines).map_err(crate::util::out_err)?;
    w.flush().map_err(crate::util::out_err)
}

#[cfg(test)]
mod tests {
    use super::*;
    use simdex::{CreateOptions, StoreOptions};

    /// A batch's lines are written only once its sync is done: at the next batch, or at the
    /// end; and a batch that is not synced writes its lines at once, after the pending ones.
    #[test]
    fn lines_wait_for_their_batch_to_be_synced() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("st");
        Store::create(&path, &CreateOptions::default()).unwrap();
        let store = Arc::new(Store::open(&path, &StoreOptions::default()).unwrap());
        let mut out = DurableLines::new();
        let mut w: Vec<u8> = Vec::new();
        out.batch(&mut w, &store, b"a\n".to_vec(), true).unwrap();
        assert!(w.is_empty());
        out.batch(&mut w, &store, b"b\n".to_vec(), true).unwrap();
        assert_eq!(w, b"a\n");
        out.batch(&mut w, &store, b"c\n".to_vec(), false).unwrap();
        assert_eq!(w, b"a\nb\nc\n");
        out.batch(&mut w, &store, b"d\n".to_vec(), true).unwrap();
        out.finish(&mut w).unwrap();
        out.finish(&mut w).unwrap();
        assert_eq!(w, b"a\nb\nc\nd\n");
    }
}
