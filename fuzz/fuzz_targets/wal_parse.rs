//! Parse arbitrary bytes as a write-ahead log: never panic; what parses is a prefix of whole
//! records that re-encode to exactly the valid prefix's bytes; a torn tail holds no valid record.
#![no_main]

use libfuzzer_sys::fuzz_target;
use simdex::store::wal;

fuzz_target!(|data: &[u8]| {
    // Half the inputs get a valid header so the record parser is reached.
    let mut bytes = Vec::new();
    if data.first().is_some_and(|b| b & 1 == 1) && data.len() > 1 {
        let tmp = tempfile::tempdir().unwrap();
        let w = wal::LogWriter::create(tmp.path(), 0, &simdex::store::storage::OsStorage).unwrap();
        bytes = std::fs::read(w.path()).unwrap();
        bytes.extend_from_slice(&data[1..]);
    } else {
        bytes.extend_from_slice(data);
    }
    if let Ok(c) = wal::parse(&bytes, 0) {
        assert_eq!(c.valid_len + c.torn_bytes, bytes.len() as u64);
        if c.valid_len >= wal::WAL_HEADER_LEN as u64 {
            let mut again = bytes[..wal::WAL_HEADER_LEN].to_vec();
            for r in &c.records {
                let e = wal::encode_record(r, again.len() as u64);
                again.extend_from_slice(&e);
            }
            assert_eq!(&again[..], &bytes[..c.valid_len as usize]);
        }
        // The valid prefix alone parses to the same records with no tail.
        let p = wal::parse(&bytes[..c.valid_len as usize], 0).unwrap();
        assert_eq!(p.records, c.records);
        assert_eq!(p.torn_bytes, 0);
    }
});
