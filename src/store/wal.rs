//! The write-ahead log: every acknowledged write, in order, as crc32-framed records
//! (`format-spec/store.md`).
//!
//! ```text
//! file header (32 B): "SIMDXWAL" | version u32 | reserved u32 | log number u64 | reserved u32 | crc32
//! record:             length u32 | type u8 | 3 zero bytes | payload crc32 | header crc32 | payload
//! ```
//!
//! The record header has its own crc so that a record's length can be trusted before its payload
//! is read: a torn tail (a record cut short or never fully written by a crash) is then told apart
//! from corruption in the middle of the log, which is an error naming the offset. Every crc is
//! salted with the structure's file offset, so a record copied to another position is not valid.

use std::path::{Path, PathBuf};

use byteorder::{ByteOrder, LittleEndian as LE};

use std::sync::Arc;

use super::docs::DocMeta;
use super::sets::DocSet;
use super::storage::{LogFile, LogStorage};
use crate::error::{Error, Result};
use crate::checksum::crc_at;

/// Magic bytes at the start of a log file.
pub const WAL_MAGIC: [u8; 8] = *b"SIMDXWAL";
/// Log format version.
pub const WAL_VERSION: u32 = 1;
/// File header length.
pub const WAL_HEADER_LEN: usize = 32;
/// Record header length.
pub const RECORD_HEADER_LEN: usize = 16;
/// Largest payload a record may carry (64 MiB: 4 Mi pairs); bigger writes are split.
pub const MAX_PAYLOAD: usize = 64 << 20;

/// Record type: insert (fingerprint, id) pairs.
pub const REC_INSERT: u8 = 1;
/// Record type: delete every pair of some ids.
pub const REC_DELETE: u8 = 2;
/// Record type: put documents (each replaces its id's pairs and document).
pub const REC_DOCS: u8 = 3;
/// Record type: put documents with their shingle sets (a store that verifies exactly).
pub const REC_DOCS_SETS: u8 = 4;
/// Documents a documents record holds at most.
pub const MAX_DOCS_PER_RECORD: usize = 256;

/// One logged write.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Record {
    /// Pairs inserted by one call.
    Insert(Vec<(u64, u64)>),
    /// Ids deleted by one call.
    Delete(Vec<u64>),
    /// Documents put by one call.
    Docs(Vec<Put>),
}

/// One document put: its pair and its document, replacing (if `replaces`) what its id had.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Put {
    /// The fingerprint.
    pub fingerprint: u64,
    /// The store's id.
    pub id: u64,
    /// The id had a document when the writer put this one: its pairs and document go first.
    /// (A put of a new id deletes nothing, so it leaves no delete behind in the delta.)
    pub replaces: bool,
    /// The document.
    pub doc: DocMeta,
    /// Its set's indexed prefix, when the writer has it at hand (a replay computes it again):
    /// not logged.
    pub prefix: Option<super::prefix::PrefixBuf>,
}

impl Record {
    fn encode_payload(&self, out: &mut Vec<u8>) -> u8 {
        match self {
            Record::Insert(pairs) => {
                out.extend_from_slice(&(pairs.len() as u32).to_le_bytes());
                for &(fp, id) in pairs {
                    out.extend_from_slice(&fp.to_le_bytes());
                    out.extend_from_slice(&id.to_le_bytes());
                }
                REC_INSERT
            }
            Record::Delete(ids) => {
                out.extend_from_slice(&(ids.len() as u32).to_le_bytes());
                for &id in ids {
                    out.extend_from_slice(&id.to_le_bytes());
                }
                REC_DELETE
            }
            Record::Docs(docs) => {
                out.extend_from_slice(&(docs.len() as u32).to_le_bytes());
                for p in docs {
                    let d = &p.doc;
                    out.extend_from_slice(&p.fingerprint.to_le_bytes());
                    out.extend_from_slice(&p.id.to_le_bytes());
                    out.push(u8::from(p.replaces));
                    let key = d.key.as_deref().map_or(&[][..], str::as_bytes);
                    let tag = d.key.as_ref().map_or(0, |k| k.len() as u16 + 1);
                    out.extend_from_slice(&tag.to_le_bytes());
                    out.extend_from_slice(&(d.sketch.len() as u16).to_le_bytes());
                    out.extend_from_slice(key);
                    out.extend_from_slice(&d.sketch);
                    if let Some(set) = &d.set {
                        out.extend_from_slice(&set.seq.to_le_bytes());
                        out.extend_from_slice(&set.time.to_le_bytes());
                        out.extend_from_slice(&(set.hashes.len() as u32).to_le_bytes());
                        for h in set.hashes.iter() {
                            out.extend_from_slice(&h.to_le_bytes());
                        }
                    }
                }
                match docs.first().is_some_and(|p| p.doc.set.is_some()) {
                    true => REC_DOCS_SETS,
                    false => REC_DOCS,
                }
            }
        }
    }

    fn decode_payload(kind: u8, p: &[u8], offset: u64) -> Result<Record> {
        let bad = |what: String| {
            Error::corrupt(
                "log record payload",
                offset,
                "a count matching the payload length",
                what,
            )
        };
        if p.len() < 4 {
            return Err(bad(format!("{} bytes", p.len())));
        }
        let n = LE::read_u32(&p[..4]) as usize;
        let body = &p[4..];
        match kind {
            REC_INSERT if body.len() == n * 16 => Ok(Record::Insert(
                body.chunks_exact(16)
                    .map(|c| (LE::read_u64(&c[..8]), LE::read_u64(&c[8..])))
                    .collect(),
            )),
            REC_DELETE if body.len() == n * 8 => Ok(Record::Delete(
                body.chunks_exact(8).map(LE::read_u64).collect(),
            )),
            REC_DOCS | REC_DOCS_SETS => decode_docs(n, body, kind == REC_DOCS_SETS)
                .map(Record::Docs)
                .ok_or_else(|| bad(format!("count {n} in {} bytes", p.len()))),
            REC_INSERT | REC_DELETE => Err(bad(format!("count {n} in {} bytes", p.len()))),
            other => Err(Error::Unsupported {
                path: None,
                what: "log record type",
                expected: "1 (insert), 2 (delete), 3 or 4 (documents)".into(),
                found: other.into(),
            }),
        }
    }
}

/// The documents of a documents record's body (with `sets`, each followed by its shingle set),
/// `None` unless exactly `n` fit it exactly (and every flag byte is 0 or 1).
fn decode_docs(n: usize, mut body: &[u8], sets: bool) -> Option<Vec<Put>> {
    const HEAD: usize = 21;
    let mut out = Vec::with_capacity(n.min(body.len() / HEAD));
    for _ in 0..n {
        let h = body.get(..HEAD)?;
        let (fingerprint, id) = (LE::read_u64(&h[..8]), LE::read_u64(&h[8..16]));
        let replaces = match h[16] {
            0 => false,
            1 => true,
            _ => return None,
        };
        let (tag, sk) = (LE::read_u16(&h[17..19]) as usize, LE::read_u16(&h[19..21]) as usize);
        let klen = tag.saturating_sub(1);
        let rest = body.get(HEAD..HEAD + klen + sk)?;
        let key = match tag {
            0 => None,
            _ => Some(std::str::from_utf8(&rest[..klen]).ok()?.into()),
        };
        body = &body[HEAD + klen + sk..];
        let set = match sets {
            true => {
                let seq = LE::read_u64(body.get(..8)?);
                let time = LE::read_u64(body.get(8..16)?);
                let m = LE::read_u32(body.get(16..20)?) as usize;
                let values = body.get(20..20 + m.checked_mul(8)?)?;
                let hashes = values.chunks_exact(8).map(LE::read_u64).collect();
                body = &body[20 + m * 8..];
                Some(Arc::new(DocSet {
                    fingerprint,
                    seq,
                    time,
                    hashes,
                }))
            }
            false => None,
        };
        let doc = DocMeta {
            key,
            sketch: rest[klen..].into(),
            set,
        };
        out.push(Put {
            fingerprint,
            id,
            replaces,
            doc,
            prefix: None,
        });
    }
    body.is_empty().then_some(out)
}

/// Documents put by one call as records: at most [`MAX_DOCS_PER_RECORD`] documents, and
/// [`MAX_PAYLOAD`] bytes, each (a document's set is at most 32 MiB: one always fits).
pub fn doc_records(puts: Vec<Put>) -> Vec<Record> {
    let size = |p: &Put| 21 + p.doc.key.as_ref().map_or(0, |k| k.len()) + p.doc.sketch.len() + p.doc.set.as_ref().map_or(0, |s| 12 + s.hashes.len() * 8);
    let mut out = Vec::new();
    let (mut cur, mut bytes) = (Vec::new(), 4usize);
    for p in puts {
        let b = size(&p);
        if !cur.is_empty() && (cur.len() == MAX_DOCS_PER_RECORD || bytes + b > MAX_PAYLOAD) {
            out.push(Record::Docs(std::mem::take(&mut cur)));
            bytes = 4;
        }
        bytes += b;
        cur.push(p);
    }
    if !cur.is_empty() {
        out.push(Record::Docs(cur));
    }
    out
}

/// Frame one record written at file offset `offset`.
pub fn encode_record(rec: &Record, offset: u64) -> Vec<u8> {
    let mut out = vec![0u8; RECORD_HEADER_LEN];
    let kind = rec.encode_payload(&mut out);
    let len = (out.len() - RECORD_HEADER_LEN) as u32;
    let pcrc = crc_at(offset + RECORD_HEADER_LEN as u64, &out[RECORD_HEADER_LEN..]);
    LE::write_u32(&mut out[0..4], len);
    out[4] = kind;
    LE::write_u32(&mut out[8..12], pcrc);
    let hcrc = crc_at(offset, &out[..12]);
    LE::write_u32(&mut out[12..16], hcrc);
    out
}

fn encode_header(number: u64) -> [u8; WAL_HEADER_LEN] {
    let mut b = [0u8; WAL_HEADER_LEN];
    b[..8].copy_from_slice(&WAL_MAGIC);
    LE::write_u32(&mut b[8..12], WAL_VERSION);
    LE::write_u64(&mut b[16..24], number);
    let crc = crc_at(0, &b[..28]);
    LE::write_u32(&mut b[28..32], crc);
    b
}

/// A record header whose own crc holds: (payload length, type, payload crc).
fn valid_header(bytes: &[u8], offset: u64) -> Option<(usize, u8, u32)> {
    let h = bytes.get(..RECORD_HEADER_LEN)?;
    if crc_at(offset, &h[..12]) != LE::read_u32(&h[12..16]) || h[5..8] != [0, 0, 0] {
        return None;
    }
    let len = LE::read_u32(&h[..4]) as usize;
    (len <= MAX_PAYLOAD + 4).then_some((len, h[4], LE::read_u32(&h[8..12])))
}

/// What reading a log found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogContents {
    /// The records, in order.
    pub records: Vec<Record>,
    /// Length of the valid prefix (header plus whole records).
    pub valid_len: u64,
    /// Bytes after the valid prefix that form a torn tail (0 if none).
    pub torn_bytes: u64,
}

/// Parse a whole log file's bytes.
pub fn parse(bytes: &[u8], number: u64) -> Result<LogContents> {
    if bytes.len() < WAL_HEADER_LEN {
        // A crash between creating the file and writing its header: nothing was logged yet.
        return Ok(LogContents {
            records: Vec::new(),
            valid_len: 0,
            torn_bytes: bytes.len() as u64,
        });
    }
    check_header(&bytes[..WAL_HEADER_LEN], number)?;
    parse_records(&bytes[WAL_HEADER_LEN..], WAL_HEADER_LEN as u64)
}

/// Check a log's header (its first [`WAL_HEADER_LEN`] bytes) for log `number`.
pub fn check_header(h: &[u8], number: u64) -> Result<()> {
    if h[..8] != WAL_MAGIC {
        return Err(Error::corrupt(
            "log magic",
            0,
            "SIMDXWAL",
            format!("{:02x?}", &h[..8]),
        ));
    }
    crate::checksum::check_crc(|| "log header crc32".into(), 0, h)?;
    let version = LE::read_u32(&h[8..12]);
    if version != WAL_VERSION {
        return Err(Error::Unsupported {
            path: None,
            what: "log format version",
            expected: WAL_VERSION.to_string(),
            found: version.into(),
        });
    }
    for at in [12, 24] {
        let reserved = LE::read_u32(&h[at..at + 4]);
        if reserved != 0 {
            return Err(Error::corrupt(
                "log header reserved field",
                at as u64,
                "0",
                reserved.to_string(),
            ));
        }
    }
    let found = LE::read_u64(&h[16..24]);
    if found != number {
        return Err(Error::corrupt(
            "log number",
            16,
            number.to_string(),
            found.to_string(),
        ));
    }
    Ok(())
}

/// The records of `tail`, a log's bytes from offset `base` (a record's start) to its end:
/// `valid_len` and the offsets in errors count from the file's start.
pub fn parse_records(tail: &[u8], base: u64) -> Result<LogContents> {
    let mut records = Vec::new();
    let mut off = 0;
    while off < tail.len() {
        match record_at(tail, off, base) {
            Some((rec_len, kind)) => {
                let start = off + RECORD_HEADER_LEN;
                let rec = Record::decode_payload(
                    kind,
                    &tail[start..start + rec_len],
                    base + start as u64,
                )?;
                records.push(rec);
                off = start + rec_len;
            }
            None => {
                // Torn tail or corruption? Look for any valid record after this point.
                if let Some(next) =
                    (off + 1..tail.len()).find(|&p| record_at(tail, p, base).is_some())
                {
                    return Err(Error::corrupt(
                        "log record",
                        base + off as u64,
                        "a valid record (header crc, payload crc and length)",
                        format!(
                            "damaged bytes followed by a valid record at offset {}; \
                             the log is corrupt in the middle, not torn at the end",
                            base + next as u64
                        ),
                    ));
                }
                return Ok(LogContents {
                    records,
                    valid_len: base + off as u64,
                    torn_bytes: (tail.len() - off) as u64,
                });
            }
        }
    }
    Ok(LogContents {
        records,
        valid_len: base + off as u64,
        torn_bytes: 0,
    })
}

/// A whole valid record at `off` of `tail` (which starts at file offset `base`): (payload
/// length, type).
fn record_at(tail: &[u8], off: usize, base: u64) -> Option<(usize, u8)> {
    let (len, kind, pcrc) = valid_header(&tail[off..], base + off as u64)?;
    let start = off + RECORD_HEADER_LEN;
    let payload = tail.get(start..start.checked_add(len)?)?;
    (crc_at(base + start as u64, payload) == pcrc).then_some((len, kind))
}

/// File name of log `number`.
pub fn file_name(number: u64) -> String {
    format!("wal-{number:06}.log")
}

/// An open log being appended to.
#[derive(Debug)]
pub struct LogWriter {
    path: PathBuf,
    file: Box<dyn LogFile>,
    number: u64,
    len: u64,
    buf: Vec<u8>,
}

impl LogWriter {
    /// Create log `number` in `dir` (which must not hold it yet) through `storage`, header
    /// written and synced.
    pub fn create(dir: &Path, number: u64, storage: &dyn LogStorage) -> Result<LogWriter> {
        let path = dir.join(file_name(number));
        let io = |op| {
            let p = path.clone();
            move |e| Error::io(p, op, e)
        };
        let mut file = storage.create(&path).map_err(io("create log"))?;
        file.append(&encode_header(number))
            .map_err(io("write log header"))?;
        file.sync_all().map_err(io("fsync"))?;
        crate::atomic::sync_dir(dir)?;
        Ok(LogWriter {
            path,
            file,
            number,
            len: WAL_HEADER_LEN as u64,
            buf: Vec::new(),
        })
    }

    /// Reopen an existing log for appending after its valid prefix of `valid_len` bytes
    /// (a torn tail beyond it is truncated and the truncation synced).
    pub fn reopen(
        dir: &Path,
        number: u64,
        valid_len: u64,
        storage: &dyn LogStorage,
    ) -> Result<LogWriter> {
        let path = dir.join(file_name(number));
        if valid_len < WAL_HEADER_LEN as u64 {
            // Not even a whole header: start the file over.
            std::fs::remove_file(&path).map_err(|e| Error::io(path.clone(), "remove", e))?;
            return LogWriter::create(dir, number, storage);
        }
        let file = storage
            .reopen(&path, valid_len)
            .map_err(|e| Error::io(path.clone(), "reopen log after its valid prefix", e))?;
        Ok(LogWriter {
            path,
            file,
            number,
            len: valid_len,
            buf: Vec::new(),
        })
    }

    /// Append one record with a single write; returns the log length after it.
    ///
    /// On error the file may hold part of the record; the caller must stop using this log
    /// (the store poisons itself), and recovery will treat the part as a torn tail.
    pub fn append(&mut self, rec: &Record) -> Result<u64> {
        self.buf = encode_record(rec, self.len);
        self.file
            .append(&self.buf)
            .map_err(|e| Error::io(self.path.clone(), "append to log", e))?;
        self.len += self.buf.len() as u64;
        Ok(self.len)
    }

    /// fdatasync the log.
    pub fn sync(&self) -> Result<()> {
        self.file
            .sync_data()
            .map_err(|e| Error::io(self.path.clone(), "fsync log", e))
    }

    /// A second handle to the file, for syncing without holding the writer.
    pub fn try_clone_file(&self) -> Result<Box<dyn LogFile>> {
        self.file
            .try_clone()
            .map_err(|e| Error::io(self.path.clone(), "dup log handle", e))
    }

    /// The log's number.
    pub fn number(&self) -> u64 {
        self.number
    }

    /// Bytes written so far.
    pub fn len(&self) -> u64 {
        self.len
    }

    /// True when only the header is written.
    pub fn is_empty(&self) -> bool {
        self.len == WAL_HEADER_LEN as u64
    }

    /// The file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn log_bytes(recs: &[Record]) -> Vec<u8> {
        let mut b = encode_header(3).to_vec();
        for r in recs {
            let e = encode_record(r, b.len() as u64);
            b.extend_from_slice(&e);
        }
        b
    }

    fn sample() -> Vec<Record> {
        vec![
            Record::Insert(vec![(1, 2), (u64::MAX, 0)]),
            Record::Delete(vec![7]),
            Record::Insert(vec![(5, 5)]),
            Record::Delete(vec![]),
        ]
    }

    #[test]
    fn round_trip() {
        let b = log_bytes(&sample());
        let c = parse(&b, 3).unwrap();
        assert_eq!(c.records, sample());
        assert_eq!(c.valid_len, b.len() as u64);
        assert_eq!(c.torn_bytes, 0);
        assert!(parse(&b, 4).is_err(), "wrong log number accepted");
        // A reserved field set, under a good header crc, is refused too.
        for at in [12, 24] {
            let mut b = b.clone();
            b[at] = 1;
            let crc = crate::checksum::crc_at(0, &b[..28]);
            b[28..32].copy_from_slice(&crc.to_le_bytes());
            let err = parse(&b, 3).unwrap_err().to_string();
            assert!(err.contains("reserved"), "{err}");
        }
    }

    #[test]
    fn every_truncation_is_a_torn_tail_keeping_whole_records() {
        let recs = sample();
        let b = log_bytes(&recs);
        let mut ends = vec![WAL_HEADER_LEN];
        for r in &recs {
            let last = *ends.last().unwrap();
            ends.push(last + encode_record(r, last as u64).len());
        }
        for n in 0..=b.len() {
            let c = parse(&b[..n], 3).unwrap();
            let whole = ends.iter().filter(|&&e| e <= n).count().saturating_sub(1);
            assert_eq!(c.records, recs[..whole], "cut at {n}");
            assert_eq!(c.valid_len + c.torn_bytes, n as u64);
        }
    }

    #[test]
    fn damage_in_the_last_record_is_torn_but_in_the_middle_is_an_error() {
        let recs = sample();
        let b = log_bytes(&recs);
        let last_start = b.len() - encode_record(&recs[3], 0).len();
        for i in WAL_HEADER_LEN..b.len() {
            let mut d = b.clone();
            d[i] ^= 0x10;
            let r = parse(&d, 3);
            if i >= last_start {
                let c = r.unwrap();
                assert_eq!(c.records, recs[..3], "flip at {i}");
                assert_eq!(c.valid_len, last_start as u64);
            } else {
                let e = r.unwrap_err();
                assert!(e.is_corruption(), "flip at {i}: {e}");
            }
        }
        // Zeros after the last record (a file extended but never written) are a torn tail.
        let mut z = b.clone();
        z.extend_from_slice(&[0u8; 100]);
        assert_eq!(parse(&z, 3).unwrap().torn_bytes, 100);
    }
}
