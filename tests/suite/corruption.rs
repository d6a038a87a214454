//! Corrupt a table on purpose: flip every byte, truncate at every length. Opening, verifying and
//! querying must each give a typed error or the right answer — never a panic, never a wrong key.
//! Since every byte of a table is covered by some crc32, every single-byte change must be caught
//! by `open` or `verify`.

use crate::common;

use common::*;
use simdex::table::{self, Table, TableOptions};

fn small_table() -> (Vec<u64>, Vec<u8>) {
    small_table_with(simdex::codec::Codec::HDelta)
}

fn small_table_with(codec: simdex::codec::Codec) -> (Vec<u64>, Vec<u8>) {
    small_table_segmented(codec, 0)
}

/// 120 keys in 128-byte blocks, in segments of `segment_keys` (0: format 1).
fn small_table_segmented(codec: simdex::codec::Codec, segment_keys: u32) -> (Vec<u64>, Vec<u8>) {
    let keys = sorted_set(&random_keys(120, 4));
    let o = TableOptions::default()
        .with_block_size(128)
        .with_codec(codec)
        .with_segment_keys(segment_keys);
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
    for codec in simdex::codec::Codec::ALL {
        for segment_keys in [0, 3] {
            every_byte_flip_is_detected_with(codec, segment_keys);
        }
    }
}

fn every_byte_flip_is_detected_with(codec: simdex::codec::Codec, segment_keys: u32) {
    let (keys, bytes) = small_table_segmented(codec, segment_keys);
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

/// Bytes that pass the crc (a block changed, then sealed again) in a segmented table: no
/// panic, and whenever `verify` passes, every range read through a skip entry agrees with the
/// decode in order, because that decode checked every entry it passed.
#[test]
fn resealed_segmented_blocks_never_panic_and_seeks_agree_with_the_order() {
    let (keys, bytes) = small_table_segmented(simdex::codec::Codec::HDelta, 3);
    let blocks = Table::from_bytes(bytes.clone()).unwrap().block_count() as usize;
    let (mut clean, mut faults) = (0, 0);
    for b in 0..blocks {
        let off = 176 + b * 128;
        for pos in 0..124 {
            for mask in [0x01u8, 0x10, 0x80] {
                let mut bad = bytes.clone();
                bad[off + pos] ^= mask;
                let crc = simdex::table::block::block_crc(off as u64, &bad[off..off + 124]);
                bad[off + 124..off + 128].copy_from_slice(&crc.to_le_bytes());
                let t = Table::from_bytes(bad).unwrap();
                if t.verify().is_err() {
                    faults += 1;
                    let _ = t.iter().collect::<Result<Vec<u64>, _>>();
                    for &q in keys.iter().step_by(5) {
                        let _ = t.range(q..).collect::<Result<Vec<u64>, _>>();
                    }
                    continue;
                }
                // A change that keeps every rule (a key moved between its neighbours): only
                // the crc could have caught it; the keys read through skip entries must be
                // those of the decode in order.
                clean += 1;
                let all = t.iter().collect::<Result<Vec<u64>, _>>().unwrap();
                for (i, &lo) in keys.iter().enumerate().step_by(3) {
                    let hi = keys[(i + 4).min(keys.len() - 1)];
                    let want: Vec<u64> = all
                        .iter()
                        .copied()
                        .filter(|k| (lo..=hi).contains(k))
                        .collect();
                    let got = t.range(lo..=hi).collect::<Result<Vec<u64>, _>>();
                    assert_eq!(
                        got.unwrap(),
                        want,
                        "byte {pos} of block {b}, {lo:#x}..={hi:#x}"
                    );
                }
            }
        }
    }
    assert!(
        clean > 100 && faults > 100,
        "{clean} changes kept every rule, {faults} broke one"
    );
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

/// A table read into memory checks every block's crc at open: a damaged block that a mapped
/// reader would meet only when a query reads it fails the open, naming the file and the block.
#[test]
fn a_table_read_into_memory_checks_every_block_at_open() {
    let (keys, bytes) = small_table();
    let blocks = Table::from_bytes(bytes.clone()).unwrap().block_count();
    assert!(blocks > 3, "{blocks} blocks");
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("t.sxt");
    std::fs::write(&p, &bytes).unwrap();
    let t = Table::open_in_memory(&p).unwrap();
    assert_eq!(t.iter().collect::<Result<Vec<u64>, _>>().unwrap(), keys);
    // The last block's stream, which no lookup of the first keys reads.
    let mut damaged = bytes.clone();
    let at = 176 + (blocks as usize - 1) * 128 + 20;
    damaged[at] ^= 0x10;
    std::fs::write(&p, &damaged).unwrap();
    let mapped = Table::open(&p).unwrap();
    let first: Result<Vec<u64>, _> = mapped.prefix(keys[0], 64).collect();
    assert_eq!(first.unwrap(), vec![keys[0]]);
    let msg = Table::open_in_memory(&p).unwrap_err().to_string();
    assert!(
        msg.contains("t.sxt") && msg.contains(&format!("block {} crc32", blocks - 1)),
        "{msg}"
    );
    let msg = Table::open_in_memory(dir.path().join("gone.sxt"))
        .unwrap_err()
        .to_string();
    assert!(msg.contains("gone.sxt") && msg.contains("read"), "{msg}");
    // A device is not read (for ever): /dev/zero behind a table's name is an error.
    #[cfg(unix)]
    {
        let link = dir.path().join("zero.sxt");
        std::os::unix::fs::symlink("/dev/zero", &link).unwrap();
        let msg = Table::open_in_memory(&link).unwrap_err().to_string();
        assert!(
            msg.contains("zero.sxt") && msg.contains("not a regular file"),
            "{msg}"
        );
    }
}

/// An index opened with `populate` or into memory checks every block at open; a plain open
/// meets a damaged block only when a query reads it.
#[test]
fn populated_and_in_memory_indexes_check_every_block_at_open() {
    use simdex::Index;
    use simdex::index::{self, BuildOptions, OpenOptions};
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("idx");
    let fps = random_keys(20_000, 4);
    let opts = BuildOptions::default().with_block_size(Some(256));
    index::build(&path, fps.iter().map(|&f| Ok(f)), &opts).unwrap();
    let file = path.join("table-01.sxt");
    let mut bytes = std::fs::read(&file).unwrap();
    let blocks = Table::from_bytes(bytes.clone()).unwrap().block_count() as usize;
    bytes[176 + (blocks / 2) * 256 + 40] ^= 0x01;
    std::fs::write(&file, &bytes).unwrap();
    let plain = Index::open(&path).unwrap();
    assert!(plain.verify().is_err());
    let populate = OpenOptions::default().with_populate(true);
    for err in [
        Index::open_with(&path, &populate).err().unwrap(),
        Index::open_in_memory(&path).err().unwrap(),
    ] {
        let msg = err.to_string();
        assert!(
            msg.contains("table-01.sxt") && msg.contains(&format!("block {} crc32", blocks / 2)),
            "{msg}"
        );
    }
}

/// Format 3 leaves a block's last key to the footer and codes its first after the previous
/// block's last: a footer entry that disagrees with the block (resealed, so only the
/// decoders' own rules stand) is named as the block's last or first key, by every read path.
#[test]
fn format_3_checks_the_footer_keys_it_does_not_code() {
    let keys = sorted_set(&random_keys(120, 4));
    // Segments longer than a block: every block is one segment, its keys all deltas.
    let o = TableOptions::default()
        .with_block_size(128)
        .with_segment_keys(1000);
    let bytes = table::build_bytes(&keys, &o).unwrap();
    let t = Table::from_bytes(bytes.clone()).unwrap();
    assert_eq!(t.format_version(), 3);
    let n = t.block_count() as usize;
    let footer = 176 + n * 128;
    let blocks: Vec<Vec<u64>> = (0..n)
        .map(|b| {
            let lo = if b == 0 { 0 } else { t.last_keys()[b - 1] + 1 };
            t.range(lo..=t.last_keys()[b]).map(|k| k.unwrap()).collect()
        })
        .collect();
    let with_last = |block: usize, last: u64| {
        let mut bad = bytes.clone();
        let at = footer + block * 8;
        bad[at..at + 8].copy_from_slice(&last.to_le_bytes());
        let crc = simdex::checksum::crc_at(footer as u64, &bad[footer..footer + 8 * n]);
        bad[footer + 8 * n..footer + 8 * n + 4].copy_from_slice(&crc.to_le_bytes());
        Table::from_bytes(bad).unwrap()
    };
    // Block 1's last key set to the key before it: not above the keys its stream codes.
    let b1 = &blocks[1];
    let bad = with_last(1, b1[b1.len() - 2]);
    let msg = bad.verify().unwrap_err().to_string();
    assert!(msg.contains("block 1 last key"), "{msg}");
    let msg = bad
        .range(b1[0]..=b1[b1.len() - 1])
        .collect::<Result<Vec<u64>, _>>()
        .unwrap_err()
        .to_string();
    assert!(msg.contains("block 1 last key"), "{msg}");
    // Block 0's last key raised to block 1's first: that key differs from the real one at
    // its first differing bit h, which is set in it, so the delta coded after the real one
    // cannot ascend from it.
    let bad = with_last(0, b1[0]);
    let msg = bad.verify().unwrap_err().to_string();
    assert!(msg.contains("block 1 first key"), "{msg}");
    let msg = bad
        .range(b1[0]..)
        .collect::<Result<Vec<u64>, _>>()
        .unwrap_err()
        .to_string();
    assert!(msg.contains("block 1 first key"), "{msg}");
    answers_are_right_or_errors(&bad, &keys);
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

mod index_sweep {
    //! The same sweep over a whole index directory: every byte of every file flipped, every file
    //! truncated at every length. Open, verify and queries each give a typed error or the
    //! correct answer; verify catches every change.

    use std::collections::BTreeSet;
    use std::path::Path;

    use super::common::*;
    use simdex::Index;
    use simdex::index::{self, BuildOptions, DesignChoice};

    fn brute(set: &BTreeSet<u64>, q: u64) -> Vec<(u32, u64)> {
        let mut v: Vec<(u32, u64)> = set
            .iter()
            .map(|&f| ((f ^ q).count_ones(), f))
            .filter(|&(d, _)| d <= 3)
            .collect();
        v.sort();
        v
    }

    fn check_damaged(dir: &Path, set: &BTreeSet<u64>, queries: &[u64], what: &str) {
        let idx = match Index::open(dir) {
            Ok(i) => i,
            Err(e) => {
                assert!(!e.to_string().is_empty(), "{what}");
                return;
            }
        };
        assert!(idx.verify().is_err(), "{what}: verify did not notice");
        for &q in queries {
            if let Ok(got) = idx.near(q, 3) {
                let got: Vec<(u32, u64)> =
                    got.iter().map(|m| (m.distance, m.fingerprint)).collect();
                assert_eq!(
                    got,
                    brute(set, q),
                    "{what}: wrong answer for {q:#x} without an error"
                );
            }
            if let Ok(r) = idx.batch_near(&[q], &Default::default()) {
                let got: Vec<(u32, u64)> = r.pairs.iter().map(|p| (p.distance, p.stored)).collect();
                let mut want = brute(set, q);
                want.sort_by_key(|&(_, f)| f);
                assert_eq!(
                    got, want,
                    "{what}: batch gave a wrong answer without an error"
                );
            }
        }
    }

    #[test]
    fn every_flip_and_truncation_of_every_index_file() {
        let mut s = 3;
        let mut fps = random_keys(60, 3);
        for i in 0..10 {
            fps.push(flip_bits(fps[i], (i % 4) as u32, &mut s));
        }
        let set: BTreeSet<u64> = fps.iter().copied().collect();
        let queries: Vec<u64> = fps
            .iter()
            .step_by(6)
            .copied()
            .chain([0, u64::MAX])
            .collect();
        let tmp = tempfile::tempdir().unwrap();
        let good = tmp.path().join("good");
        let opts = BuildOptions::default()
            .with_design(DesignChoice::Named("4".into()))
            .with_block_size(Some(128));
        index::build(&good, fps.iter().map(|&x| Ok(x)), &opts).unwrap();
        let files: Vec<String> = {
            let mut v: Vec<String> = std::fs::read_dir(&good)
                .unwrap()
                .map(|e| e.unwrap().file_name().into_string().unwrap())
                .collect();
            v.sort();
            v
        };
        assert_eq!(files.len(), 5);
        let bad = tmp.path().join("bad");
        let copy = || {
            let _ = std::fs::remove_dir_all(&bad);
            std::fs::create_dir(&bad).unwrap();
            for f in &files {
                std::fs::copy(good.join(f), bad.join(f)).unwrap();
            }
        };
        for f in &files {
            let orig = std::fs::read(good.join(f)).unwrap();
            copy();
            for pos in 0..orig.len() {
                let mut b = orig.clone();
                b[pos] ^= 0xFF;
                std::fs::write(bad.join(f), &b).unwrap();
                check_damaged(&bad, &set, &queries, &format!("{f} byte {pos} flipped"));
            }
            for len in 0..orig.len() {
                std::fs::write(bad.join(f), &orig[..len]).unwrap();
                check_damaged(&bad, &set, &queries, &format!("{f} truncated to {len}"));
            }
            std::fs::write(bad.join(f), &orig).unwrap();
        }
        // And the untouched copy is fine.
        copy();
        Index::open(&bad).unwrap().verify().unwrap();
    }
}

/// A writer that fails (like a full disk) once `limit` bytes have been written.
#[derive(Debug)]
struct FailingWriter {
    inner: std::io::Cursor<Vec<u8>>,
    limit: u64,
}

impl std::io::Write for FailingWriter {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let pos = self.inner.position();
        if pos + buf.len() as u64 > self.limit {
            return Err(std::io::Error::new(
                std::io::ErrorKind::StorageFull,
                "disk full",
            ));
        }
        self.inner.write(buf)
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl std::io::Seek for FailingWriter {
    fn seek(&mut self, p: std::io::SeekFrom) -> std::io::Result<u64> {
        self.inner.seek(p)
    }
}

#[test]
fn a_full_disk_at_any_byte_is_an_error_not_a_panic() {
    let keys = sorted_set(&random_keys(300, 5));
    let o = TableOptions::default().with_block_size(128);
    let full = table::build_bytes(&keys, &o).unwrap().len() as u64;
    for limit in 0..full {
        let w = FailingWriter {
            inner: std::io::Cursor::new(Vec::new()),
            limit,
        };
        let err = table::build_to(w, &o, || Ok(keys.iter().map(|&k| Ok(k)))).unwrap_err();
        assert!(
            err.to_string().contains("disk full"),
            "limit {limit}: {err}"
        );
    }
}

#[test]
fn a_failed_atomic_write_leaves_the_old_file_and_no_temporary() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("f");
    std::fs::write(&path, b"old").unwrap();
    let err = simdex::atomic::write_file(&path, |w| {
        use std::io::Write;
        w.write_all(b"half of the new con").unwrap();
        Err::<(), _>(simdex::Error::io(
            None,
            "write",
            std::io::ErrorKind::StorageFull.into(),
        ))
    })
    .unwrap_err();
    assert!(err.to_string().contains("write"));
    assert_eq!(std::fs::read(&path).unwrap(), b"old");
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
}

/// A small store (generation with an id map, CURRENT, a log with writes): every byte of the id
/// map and of CURRENT flipped, every truncation of each: open or verify must fail, queries must
/// be right or errors. The log: damage must be an error, except in its last record, where bit
/// rot cannot be told from a torn write; then the store opens without that record and reports a
/// torn tail (never silently).
#[test]
fn store_files_every_byte_flip_and_truncation() {
    use simdex::index::DesignChoice;
    use simdex::store::{CreateOptions, Store, StoreOptions};
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("s");
    Store::create(
        &dir,
        &CreateOptions::default()
            .with_design(DesignChoice::Named("4".into()))
            .with_block_size(Some(128)),
    )
    .unwrap();
    let mut s = 9u64;
    let fps: Vec<u64> = (0..60).map(|_| splitmix(&mut s)).collect();
    let compacted: Vec<(u64, u64)> = fps
        .iter()
        .enumerate()
        .map(|(i, &f)| (f, i as u64 % 25))
        .collect();
    {
        let st = Store::open(&dir, &StoreOptions::default()).unwrap();
        st.insert_many(&compacted).unwrap();
        st.compact().unwrap();
        st.insert(fps[0] ^ 1, 100).unwrap();
        st.delete(3).unwrap();
        st.insert(fps[1] ^ 2, 101).unwrap();
    }
    let want = Store::open_read_only(&dir).unwrap().pairs().unwrap();
    let queries: Vec<u64> = fps.iter().step_by(6).copied().collect();
    let want_near: Vec<_> = {
        let st = Store::open_read_only(&dir).unwrap();
        queries.iter().map(|&q| st.near(q, 3).unwrap()).collect()
    };
    let check = |what: &str, must_fail_verify: bool| {
        let Ok(st) = Store::open_read_only(&dir) else {
            return;
        };
        if must_fail_verify {
            assert!(st.verify().is_err(), "{what}: verify passed over damage");
        }
        for (q, w) in queries.iter().zip(&want_near) {
            if let Ok(got) = st.near(*q, 3) {
                assert_eq!(&got, w, "{what}: wrong answer");
            }
        }
    };
    let ids = dir.join("gen-000001/IDS");
    let current = dir.join("CURRENT");
    for path in [&ids, &current] {
        let good = std::fs::read(path).unwrap();
        for i in 0..good.len() {
            let mut b = good.clone();
            b[i] ^= 0x20;
            std::fs::write(path, &b).unwrap();
            check(&format!("{} flip at {i}", path.display()), true);
        }
        for n in 0..good.len() {
            std::fs::write(path, &good[..n]).unwrap();
            assert!(
                Store::open_read_only(&dir).is_err(),
                "{} truncated to {n} opened",
                path.display()
            );
        }
        std::fs::write(path, &good).unwrap();
    }
    let log = dir.join("wal-000001.log");
    let good = std::fs::read(&log).unwrap();
    let last_start = good.len() - (16 + 4 + 16);
    for i in 0..good.len() {
        let mut b = good.clone();
        b[i] ^= 0x20;
        std::fs::write(&log, &b).unwrap();
        match Store::open_read_only(&dir) {
            Err(e) => assert!(i < last_start, "log flip at {i} in the last record: {e}"),
            Ok(st) => {
                assert!(i >= last_start, "log flip at {i} went unnoticed");
                assert_eq!(st.recovery().torn.len(), 1, "log flip at {i} not reported");
                let got = st.pairs().unwrap();
                assert!(!got.contains(&(fps[1] ^ 2, 101)) && got.len() + 1 == want.len());
            }
        }
    }
    // The states after 0..=3 logged writes, and where each write's record ends.
    let mut states = vec![
        compacted
            .iter()
            .copied()
            .collect::<std::collections::BTreeSet<_>>(),
    ];
    let mut next = states[0].clone();
    next.insert((fps[0] ^ 1, 100));
    states.push(next.clone());
    next.retain(|p| p.1 != 3);
    states.push(next.clone());
    next.insert((fps[1] ^ 2, 101));
    states.push(next);
    let ends = [32usize, 32 + 36, 32 + 36 + 28, 32 + 36 + 28 + 36];
    assert_eq!(ends[3], good.len());
    for n in 0..good.len() {
        std::fs::write(&log, &good[..n]).unwrap();
        let st = Store::open_read_only(&dir).unwrap();
        let got: std::collections::BTreeSet<_> = st.pairs().unwrap().into_iter().collect();
        let whole = ends.iter().filter(|&&e| e <= n).count().saturating_sub(1);
        assert_eq!(got, states[whole], "log cut at {n}");
        let clean = n == 0 || ends.contains(&n);
        assert_eq!(st.recovery().torn.is_empty(), clean, "log cut at {n}");
    }
    std::fs::write(&log, &good).unwrap();
    assert_eq!(Store::open_read_only(&dir).unwrap().pairs().unwrap(), want);
}

/// What `fuzz/fuzz_targets/decode_block.rs` checks, on seeded random bytes so that it runs in
/// every test run: any bytes with a valid crc, under any code, head (formats 1, 2, 3, with or
/// without a key before the block), S and footer key, decode without a panic to strictly
/// ascending keys, from the start or from the segment any key selects.
#[test]
fn arbitrary_blocks_decode_ascending_or_fail_never_panic() {
    use simdex::codec::Codec;
    use simdex::codec::huffman::{Code, DecodeTable};
    use simdex::table::block::{BlockDecoder, Head, Layout, block_crc};
    let mut s = 99u64;
    let mut next = || simdex::sample::splitmix64(&mut s);
    let (mut decoded, mut failed) = (0u64, 0u64);
    for case in 0..20_000u32 {
        let mut f = [0u64; 64];
        for x in f.iter_mut() {
            *x = next() % 4;
        }
        let codec = if case % 2 == 0 {
            Codec::HDelta
        } else {
            Codec::Gap
        };
        let table = DecodeTable::new(&Code::from_frequencies(&f, 12), |s| codec.suffix_bits(s));
        let size = 128usize << (next() % 3);
        let mut block: Vec<u8> = (0..size).map(|_| next() as u8).collect();
        // Small counts too, so that skip entries fit and segments are entered.
        match case % 3 {
            0 => block[0..2].copy_from_slice(&((next() % 40) as u16 + 1).to_le_bytes()),
            1 => block[0..4].copy_from_slice(&((next() % 40) as u32 + 1).to_le_bytes()),
            _ => {}
        }
        let crc = block_crc(176, &block[..size - 4]);
        block[size - 4..].copy_from_slice(&crc.to_le_bytes());
        let layout = Layout {
            segment_keys: [0, 2, 3, 5, 20][case as usize % 5],
            last: next(),
            head: match case % 3 {
                0 => Head::Compact {
                    after: (next() % 2 == 0).then(|| next() >> (next() % 64)),
                    // Format 3, or format 4 aligned to a few prefix widths.
                    align: [0u8, 0, 4, 12, 30][next() as usize % 5],
                },
                _ => Head::Wide,
            },
        };
        let layout = if layout.segment_keys == 0 {
            Layout::UNSEGMENTED
        } else {
            layout
        };
        let Ok(d) = BlockDecoder::new(&block, 0, 176, codec, &table, layout) else {
            failed += 1;
            continue;
        };
        let mut seeking = d.clone();
        seeking.seek(next());
        for mut dec in [d, seeking] {
            let mut prev: Option<u64> = None;
            loop {
                match dec.next() {
                    Ok(Some(k)) => {
                        assert!(prev.is_none_or(|p| k > p), "case {case}: keys must ascend");
                        prev = Some(k);
                        decoded += 1;
                    }
                    Ok(None) => break,
                    Err(_) => {
                        failed += 1;
                        break;
                    }
                }
            }
        }
    }
    assert!(
        decoded > 10_000 && failed > 1_000,
        "{decoded} keys, {failed} errors"
    );
}
