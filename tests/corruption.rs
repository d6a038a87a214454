//! Corrupt a table on purpose: flip every byte, truncate at every length. Opening, verifying and
//! querying must each give a typed error or the right answer — never a panic, never a wrong key.
//! Since every byte of a table is covered by some crc32, every single-byte change must be caught
//! by `open` or `verify`.

mod common;

use common::*;
use simdex::table::{self, Table, TableOptions};

fn small_table() -> (Vec<u64>, Vec<u8>) {
    let keys = sorted_set(&random_keys(120, 4));
    let o = TableOptions {
        block_size: 128,
        ..Default::default()
    };
    let bytes = table::build_bytes(&keys, &o).unwrap();
    (keys, bytes)
}

/// Every answer the table gives is either an error or exactly the truth.
fn answers_are_right_or_errors(t: &Table<Vec<u8>>, keys: &[u64]) {
    let all: Result<Vec<u64>, _> = t.iter().collect();
    if let Ok(all) = all {
        assert_eq!(all, keys, "iteration returned wrong keys without an error");
    }
    for &q in keys.iter().step_by(7).chain(&[0, u64::MAX]) {
        for bits in [8, 16, 64] {
            let got: Result<Vec<u64>, _> = t.prefix(q, bits).collect();
            if let Ok(got) = got {
                let want: Vec<u64> = keys
                    .iter()
                    .copied()
                    .filter(|&k| (k ^ q).checked_shr(64 - bits).unwrap_or(0) == 0)
                    .collect();
                assert_eq!(got, want, "prefix {q:#x}/{bits} wrong without an error");
            }
        }
    }
}

#[test]
fn every_byte_flip_is_detected() {
    let (keys, bytes) = small_table();
    assert!(Table::from_bytes(bytes.clone()).unwrap().block_count() >= 3);
    for pos in 0..bytes.len() {
        for mask in [0x01u8, 0x80, 0xFF] {
            let mut bad = bytes.clone();
            bad[pos] ^= mask;
            match Table::from_bytes(bad) {
                Err(e) => assert!(
                    e.is_corruption() || matches!(e, simdex::Error::Unsupported { .. }),
                    "byte {pos}: {e}"
                ),
                Ok(t) => {
                    let v = t.verify();
                    assert!(
                        v.is_err(),
                        "flip {mask:#x} at byte {pos} went unnoticed by verify"
                    );
                    assert!(v.unwrap_err().is_corruption());
                    answers_are_right_or_errors(&t, &keys);
                }
            }
        }
    }
}

#[test]
fn every_truncation_is_detected() {
    let (_, bytes) = small_table();
    for len in 0..bytes.len() {
        let err = Table::from_bytes(bytes[..len].to_vec()).unwrap_err();
        assert!(err.is_corruption(), "length {len}: {err}");
    }
    // Extra bytes at the end are not silently accepted either.
    let mut longer = bytes.clone();
    longer.extend_from_slice(&[0; 8]);
    assert!(Table::from_bytes(longer).is_err());
}

#[test]
fn a_block_moved_to_another_place_fails_its_crc() {
    let (_, bytes) = small_table();
    let mut swapped = bytes.clone();
    let (b0, b1) = (176..176 + 128, 176 + 128..176 + 256);
    swapped[b0.clone()].copy_from_slice(&bytes[b1.clone()]);
    swapped[b1].copy_from_slice(&bytes[b0]);
    let t = Table::from_bytes(swapped).unwrap();
    let err = t.verify().unwrap_err();
    assert!(err.to_string().contains("block 0 crc32"), "{err}");
}

#[test]
fn errors_name_structure_offset_expected_and_found() {
    let (_, mut bytes) = small_table();
    bytes[0] = b'X';
    let msg = Table::from_bytes(bytes.clone()).unwrap_err().to_string();
    assert!(
        msg.contains("table header magic") && msg.contains("offset 0") && msg.contains("SIMDXTBL"),
        "{msg}"
    );
    bytes[0] = b'S';
    bytes[8] = 9; // version
    let err = Table::from_bytes(bytes).unwrap_err();
    assert!(
        matches!(err, simdex::Error::Unsupported { found: 9, .. }),
        "{err}"
    );
    // File errors carry the path.
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("bad.sxt");
    std::fs::write(&p, b"not a table at all, not a table at all, not a table at all, not a table at all, not a table at all, not a table at all, not a table at all, not a table at all, not a table at all").unwrap();
    let msg = Table::open(&p).unwrap_err().to_string();
    assert!(msg.contains("bad.sxt"), "{msg}");
    let msg = Table::open(dir.path().join("missing.sxt"))
        .unwrap_err()
        .to_string();
    assert!(msg.contains("missing.sxt") && msg.contains("open"), "{msg}");
}
