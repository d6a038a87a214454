//! The shingle sets (`SETS`) of a document store that verifies exactly: per document, its word
//! 3-shingle set, which the document map's entry points to by offset (`format-spec/store.md`,
//! "Shingle sets").
//!
//! ```text
//! header (16 B): "SIMDXSET" | version u32 | crc32 of bytes 0..12
//! record:        count u32 | fingerprint u64 | id u64 | seq u64 | time u64 | count hashes
//!                (u64, ascending, distinct) | crc32 (salted by its offset)
//! ```
//!
//! A record is read where an entry points and checked then (its crc, its order). A compaction
//! may keep the file (hard-linked into the new generation) and append the new records: then
//! records no map points to lie between the live ones (`docs`, the map header's live count).

use std::io::Write;
use std::sync::Arc;

use byteorder::{ByteOrder, LittleEndian as LE};

use crate::checksum::crc_at;
use crate::error::{Error, Result};

/// What a store that verifies exactly keeps of a document besides its sketch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DocSet {
    /// Its fingerprint (a match found by its shingles reports its distance).
    pub fingerprint: u64,
    /// Its place in the order documents were stored (1, 2, ...): of two equally similar
    /// matches, the earlier stored is the answer.
    pub seq: u64,
    /// When it was stored: milliseconds since the Unix epoch, by the writer's clock (what
    /// expiry by time compares).
    pub time: u64,
    /// Its word 3-shingle set, ascending.
    pub hashes: Box<[u64]>,
}

/// Magic bytes at the start of a sets file.
pub const SETS_MAGIC: [u8; 8] = *b"SIMDXSET";
/// Sets file format version.
pub const SETS_VERSION: u32 = 1;
/// File name of a generation's shingle sets.
pub const SETS_NAME: &str = "SETS";
/// Header length.
pub const SETS_HEADER_LEN: usize = 16;
/// The most shingles a document's set may hold (32 MiB of hashes): a larger document is
/// refused by a store that keeps sets, as every resource has a bound.
pub const MAX_SET_LEN: usize = 4 << 20;

fn header() -> [u8; SETS_HEADER_LEN] {
    let mut b = [0u8; SETS_HEADER_LEN];
    b[..8].copy_from_slice(&SETS_MAGIC);
    LE::write_u32(&mut b[8..12], SETS_VERSION);
    let crc = crc_at(0, &b[..12]);
    LE::write_u32(&mut b[12..16], crc);
    b
}

/// Milliseconds since the Unix epoch now (0 for a clock set before it): a stored set's `time`.
pub fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

/// Bytes of a record before its hashes.
const RECORD_HEAD: usize = 36;

/// Bytes of the record of a set of `n` hashes.
pub fn record_len(n: usize) -> u64 {
    (RECORD_HEAD + 4) as u64 + 8 * n as u64
}

/// A record's fields besides its hashes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SetHead {
    /// The store id of the document it was written for.
    pub id: u64,
    /// The document's fingerprint.
    pub fingerprint: u64,
    /// Its `seq`.
    pub seq: u64,
    /// Its `time`.
    pub time: u64,
}

/// Check that `set` can be stored: ascending, distinct, at most [`MAX_SET_LEN`].
pub(crate) fn check_set(set: &[u64]) -> Result<()> {
    if set.len() > MAX_SET_LEN {
        return Err(Error::InvalidArgument(format!(
            "a document of {} distinct word 3-shingles: a store that keeps shingle sets takes at \
             most {MAX_SET_LEN}",
            set.len()
        )));
    }
    if !set.is_sorted_by(|a, b| a < b) {
        return Err(Error::InvalidArgument(
            "a shingle set not ascending and distinct".into(),
        ));
    }
    Ok(())
}

/// Writes a sets file: the header, then records; [`SetsWriter::add`] returns each one's offset.
pub struct SetsWriter<W: Write> {
    w: W,
    at: u64,
    buf: Vec<u8>,
}

impl<W: Write> SetsWriter<W> {
    /// Start a sets file.
    pub fn new(mut w: W) -> Result<SetsWriter<W>> {
        w.write_all(&header())
            .map_err(|e| Error::io(None, "write shingle sets", e))?;
        Ok(SetsWriter {
            w,
            at: SETS_HEADER_LEN as u64,
            buf: Vec::new(),
        })
    }

    /// Continue a sets file of `len` bytes, `w` positioned at its end.
    pub fn append(w: W, len: u64) -> SetsWriter<W> {
        SetsWriter {
            w,
            at: len,
            buf: Vec::new(),
        }
    }

    /// Append the set of document `id`; its record's offset.
    pub fn add(&mut self, id: u64, d: &DocSet) -> Result<u64> {
        check_set(&d.hashes)?;
        let at = self.at;
        self.buf.clear();
        self.buf.extend_from_slice(&(d.hashes.len() as u32).to_le_bytes());
        self.buf.extend_from_slice(&d.fingerprint.to_le_bytes());
        self.buf.extend_from_slice(&id.to_le_bytes());
        self.buf.extend_from_slice(&d.seq.to_le_bytes());
        self.buf.extend_from_slice(&d.time.to_le_bytes());
        for h in d.hashes.iter() {
            self.buf.extend_from_slice(&h.to_le_bytes());
        }
        let crc = crc_at(at, &self.buf);
        self.buf.extend_from_slice(&crc.to_le_bytes());
        self.w
            .write_all(&self.buf)
            .map_err(|e| Error::io(None, "write shingle sets", e))?;
        self.at += self.buf.len() as u64;
        Ok(at)
    }

    /// The writer, once every set is written.
    pub fn finish(self) -> W {
        self.w
    }
}

/// A read-only sets file: a file in production, read a record at a time with `pread`, or any
/// bytes (tests). Not a map: records are read one at a time where entries point, and each read
/// of a map faulted in (and counted as the process's own) 64 KiB of neighbours, so that an
/// ingest's resident memory grew with the whole file (measured: 780 MB of 1.4 GB at 1M
/// documents).
#[derive(Debug)]
pub struct SetsFile<D> {
    data: Source<D>,
    len: u64,
}

#[derive(Debug)]
enum Source<D> {
    Bytes(D),
    File(std::fs::File),
}

thread_local! {
    /// A thread's record buffer.
    static RECORD: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
}

impl SetsFile<memmap2::Mmap> {
    /// Open the sets file at `path` and validate its header.
    pub fn open(path: &std::path::Path) -> Result<SetsFile<memmap2::Mmap>> {
        let file = std::fs::File::open(path)
            .map_err(|e| Error::io(path.to_path_buf(), "open", e))?;
        let len = file
            .metadata()
            .map_err(|e| Error::io(path.to_path_buf(), "stat", e))?
            .len();
        let f = SetsFile {
            data: Source::File(file),
            len,
        };
        let mut head = [0u8; SETS_HEADER_LEN];
        let n = f.fill(0, &mut head).map_err(|e| e.with_path(path))?;
        check_header(&head[..n]).map_err(|e| e.with_path(path))?;
        Ok(f)
    }
}

impl<D: AsRef<[u8]>> SetsFile<D> {
    /// Validate `data`'s header.
    pub fn from_bytes(data: D) -> Result<SetsFile<D>> {
        check_header(data.as_ref())?;
        let len = data.as_ref().len() as u64;
        Ok(SetsFile {
            data: Source::Bytes(data),
            len,
        })
    }

    /// Bytes of the whole file.
    pub fn byte_len(&self) -> u64 {
        self.len
    }

    /// Read the bytes from `at` into `buf`, as many as there are; how many.
    fn fill(&self, at: u64, buf: &mut [u8]) -> Result<usize> {
        let n = buf.len().min(self.len.saturating_sub(at) as usize);
        match &self.data {
            Source::Bytes(d) => buf[..n].copy_from_slice(&d.as_ref()[at as usize..at as usize + n]),
            Source::File(f) => {
                use std::os::unix::fs::FileExt;
                f.read_exact_at(&mut buf[..n], at)
                    .map_err(|e| Error::io(None, "read shingle sets", e))?
            }
        }
        Ok(n)
    }

    /// The record at `at`: its head, its hashes into `hashes` (cleared first), and where the
    /// next record starts. Checked: its crc (salted by `at`) and its order.
    pub fn read(&self, at: u64, hashes: &mut Vec<u64>) -> Result<(SetHead, u64)> {
        RECORD.with_borrow_mut(|buf| {
            let head = self.checked(at, buf)?;
            hashes.clear();
            hashes.extend(buf[RECORD_HEAD..buf.len() - 4].chunks_exact(8).map(LE::read_u64));
            if !hashes.is_sorted_by(|a, b| a < b) {
                return Err(Error::corrupt(
                    "shingle sets record",
                    at,
                    "a valid record",
                    "hashes not ascending and distinct",
                ));
            }
            Ok((head, at + buf.len() as u64))
        })
    }

    /// The head of the record at `at`, its crc checked (its hashes not decoded).
    pub fn head(&self, at: u64) -> Result<SetHead> {
        RECORD.with_borrow_mut(|buf| self.checked(at, buf))
    }

    /// The record at `at` into `buf` (exactly its bytes), its crc checked; its head.
    fn checked(&self, at: u64, buf: &mut Vec<u8>) -> Result<SetHead> {
        let bad = |what: String| Error::corrupt("shingle sets record", at, "a valid record", what);
        if at < SETS_HEADER_LEN as u64 || at.saturating_add(4) > self.len {
            return Err(bad(format!("an offset outside the file of {} bytes", self.len)));
        }
        // One read for most records: a page's worth, then the rest of a longer one.
        buf.resize(4096, 0);
        let got = self.fill(at, buf)?;
        let n = LE::read_u32(&buf[..4]) as usize;
        if n > MAX_SET_LEN {
            return Err(bad(format!("a count of {n}")));
        }
        let len = record_len(n) as usize;
        if at + len as u64 > self.len {
            return Err(bad(format!("{n} hashes past the end of the file")));
        }
        buf.resize(len.max(got), 0);
        if len > got {
            self.fill(at + got as u64, &mut buf[got..len])?;
        }
        buf.truncate(len);
        crate::table::format::check_crc(|| "shingle sets record crc32".into(), at, buf)?;
        Ok(SetHead {
            fingerprint: LE::read_u64(&buf[4..12]),
            id: LE::read_u64(&buf[12..20]),
            seq: LE::read_u64(&buf[20..28]),
            time: LE::read_u64(&buf[28..36]),
        })
    }

    /// The set whose record starts at `at`, and the id it was written for.
    pub fn get(&self, at: u64) -> Result<(u64, Arc<DocSet>)> {
        let mut hashes = Vec::new();
        let (h, _) = self.read(at, &mut hashes)?;
        let d = DocSet {
            fingerprint: h.fingerprint,
            seq: h.seq,
            time: h.time,
            hashes: hashes.into(),
        };
        Ok((h.id, Arc::new(d)))
    }

    /// The length of the record at `at`, from its count alone (its crc is checked where it
    /// is read).
    pub fn record_len(&self, at: u64) -> Result<u64> {
        let mut c = [0u8; 4];
        let ok = at >= SETS_HEADER_LEN as u64 && self.fill(at, &mut c)? == 4;
        let n = LE::read_u32(&c) as usize;
        match ok && n <= MAX_SET_LEN && at + record_len(n) <= self.len {
            true => Ok(record_len(n)),
            false => Err(Error::corrupt(
                "shingle sets record",
                at,
                "a valid record",
                format!("no record that fits the file of {} bytes", self.len),
            )),
        }
    }

    /// Check every record of a file written whole (no dead bytes), to its end; their count.
    pub fn verify(&self) -> Result<u64> {
        let (mut at, mut n) = (SETS_HEADER_LEN as u64, 0u64);
        let mut buf = Vec::new();
        while at < self.byte_len() {
            at = self.read(at, &mut buf)?.1;
            n += 1;
        }
        Ok(n)
    }
}

/// Check a sets file's header (`b`: its first bytes).
fn check_header(b: &[u8]) -> Result<()> {
    if b.len() < SETS_HEADER_LEN || b[..8] != SETS_MAGIC {
        return Err(Error::corrupt(
            "shingle sets header",
            0,
            "SIMDXSET and 16 bytes",
            format!("{:02x?}", &b[..b.len().min(8)]),
        ));
    }
    crate::table::format::check_crc(
        || "shingle sets header crc32".into(),
        0,
        &b[..SETS_HEADER_LEN],
    )?;
    let version = LE::read_u32(&b[8..12]);
    if version != SETS_VERSION {
        return Err(Error::Unsupported {
            path: None,
            what: "shingle sets format version",
            expected: SETS_VERSION.to_string(),
            found: version.into(),
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_and_catches_every_flip() {
        let mut w = SetsWriter::new(Vec::new()).unwrap();
        let sets: Vec<DocSet> = [vec![1, 5, 9], vec![], vec![u64::MAX - 1, u64::MAX]]
            .into_iter()
            .enumerate()
            .map(|(i, h)| DocSet {
                fingerprint: 0xabc ^ i as u64,
                seq: i as u64 + 1,
                time: 1_700_000_000_000 + i as u64,
                hashes: h.into(),
            })
            .collect();
        let at: Vec<u64> = sets
            .iter()
            .enumerate()
            .map(|(i, s)| w.add(100 + i as u64, s).unwrap())
            .collect();
        let bytes = w.finish();
        let f = SetsFile::from_bytes(&bytes[..]).unwrap();
        assert_eq!(f.verify().unwrap(), 3);
        for (i, (s, a)) in sets.iter().zip(&at).enumerate() {
            assert_eq!(f.get(*a).unwrap(), (100 + i as u64, Arc::new(s.clone())));
            assert_eq!(f.record_len(*a).unwrap(), record_len(s.hashes.len()));
        }
        assert!(f.get(at[0] + 1).is_err());
        assert!(f.get(bytes.len() as u64).is_err());
        for i in 0..bytes.len() {
            let mut b = bytes.clone();
            b[i] ^= 0x04;
            let caught = SetsFile::from_bytes(&b[..]).and_then(|f| f.verify()).is_err();
            assert!(caught, "flip at byte {i}");
        }
        let mut w = SetsWriter::new(Vec::new()).unwrap();
        let bad = |h: Vec<u64>| DocSet {
            fingerprint: 1,
            seq: 1,
            time: 1,
            hashes: h.into(),
        };
        assert!(w.add(1, &bad(vec![3, 3])).is_err());
        assert!(w.add(1, &bad(vec![4, 2])).is_err());
    }
}
