use super::*;

fn doc(i: u64, key: bool) -> DocMeta {
    DocMeta {
        key: key.then(|| format!("https://example.org/{i}").into()),
        sketch: (0..128).map(|b| (b as u64 ^ i) as u8).collect(),
        set: None,
    }
}

#[test]
fn round_trips_across_blocks_and_finds_every_id() {
    let docs: Vec<(u64, DocMeta)> = (0..300u64).map(|i| (i * 7 + 3, doc(i, i % 3 != 0))).collect();
    let bytes = build_bytes(&docs, 128).unwrap();
    let m = DocMap::from_bytes(&bytes[..]).unwrap();
    assert!(m.first_ids.len() > 5, "several blocks");
    m.verify().unwrap();
    let back: Vec<(u64, DocMeta)> = m.iter().collect::<Result<_>>().unwrap();
    assert_eq!(back, docs);
    for (id, d) in &docs {
        assert_eq!(m.get(*id).unwrap().as_ref(), Some(d));
        assert_eq!(m.get(id + 1).unwrap(), None);
    }
    assert_eq!(m.get(0).unwrap(), None);
    // Past the last id (answered without decoding the last block, once it was), and up to it.
    let last = docs.last().unwrap().0;
    for _ in 0..2 {
        assert_eq!(m.get(u64::MAX).unwrap(), None);
        assert!(m.keys_in(last + 1, u64::MAX).unwrap().is_empty());
        assert_eq!(m.keys_in(last - 7, last + 9).unwrap().len(), 2);
    }
    let empty = build_bytes(&[], 128).unwrap();
    let empty = DocMap::from_bytes(&empty[..]).unwrap();
    assert_eq!(empty.docs(), 0);
    assert!(empty.get(5).unwrap().is_none() && empty.keys_in(0, u64::MAX).unwrap().is_empty());
    // A look-up past the end reads the last block, so its damage is reported, not "absent".
    let mut bad = bytes.clone();
    let last_block = m.first_ids.len() - 1;
    let at = m.header.len() as usize + last_block * m.header.block_size as usize + 9;
    bad[at] ^= 1;
    let m = DocMap::from_bytes(&bad[..]).unwrap();
    assert!(m.get(u64::MAX).is_err() && m.keys_in(last + 1, u64::MAX).is_err());
}

#[test]
fn every_byte_flip_and_truncation_is_caught() {
    let docs: Vec<(u64, DocMeta)> = (0..40u64).map(|i| (i, doc(i, true))).collect();
    let bytes = build_bytes(&docs, 128).unwrap();
    for i in 0..bytes.len() {
        let mut b = bytes.clone();
        b[i] ^= 0x10;
        let caught = DocMap::from_bytes(&b[..]).and_then(|m| m.verify()).is_err();
        // Zero padding inside a block is covered by the block crc too.
        assert!(caught, "flip at byte {i} not caught");
    }
    for n in [0, 47, 48, bytes.len() - 1] {
        assert!(DocMap::from_bytes(&bytes[..n]).is_err());
    }
}

#[test]
fn refuses_bad_entries() {
    let mut w = DocsWriter::new(std::io::Cursor::new(Vec::new()), 128).unwrap();
    w.add(5, &doc(5, false)).unwrap();
    assert!(w.add(5, &doc(5, false)).is_err());
    let long = DocMeta {
        key: Some("x".repeat(MAX_KEY_BYTES + 1).into()),
        sketch: doc(1, false).sketch,
        set: None,
    };
    assert!(w.add(9, &long).is_err());
    let short = DocMeta {
        key: None,
        sketch: vec![0; 3].into(),
        set: None,
    };
    assert!(w.add(9, &short).is_err());
}

/// A key of 0 bytes (tag 1) is refused even under a good crc (found by the `doc_map`
/// fuzz target: it verified, yet the writer refuses such a key).
#[test]
fn an_empty_key_is_refused_even_under_a_good_crc() {
    let docs = [(7u64, meta(&[0xab; 4], Some("k")))];
    let good = build_bytes(&docs, 4).unwrap();
    let (block, bs) = (HEADER_LEN, DOCS_BLOCK_SIZE as usize);
    // The entry: varint(7), 4 sketch bytes, the tag (2), the key's one byte.
    let tag = block + 8 + 1 + 4;
    assert_eq!((good[tag], good[tag + 1]), (2, b'k'));
    let mut b = good.clone();
    b[tag] = 1;
    b[tag + 1] = 0;
    b[block + 4] -= 1;
    let crc = crate::checksum::crc_at(block as u64, &b[block..block + bs - 4]);
    b[block + bs - 4..block + bs].copy_from_slice(&crc.to_le_bytes());
    let m = DocMap::from_bytes(&b[..]).unwrap();
    let err = m.verify().unwrap_err().to_string();
    assert!(err.contains("an empty key"), "{err}");
    assert!(m.get(7).is_err());
    let m = DocMap::from_bytes(&good[..]).unwrap();
    assert_eq!(m.get(7).unwrap().unwrap().key.as_deref(), Some("k"));
}

/// A varint written longer than it needs is refused even under a good crc (found by the
/// `doc_map` fuzz target: an id delta of 45 as `ad 00` verified, though the writer writes
/// `2d`).
#[test]
fn a_non_minimal_varint_is_refused_even_under_a_good_crc() {
    let docs = [(7u64, meta(&[1; 4], None)), (52, meta(&[2; 4], None))];
    let good = build_bytes(&docs, 4).unwrap();
    let (block, bs) = (HEADER_LEN, DOCS_BLOCK_SIZE as usize);
    // The second entry: varint(52 - 7) after the first's 1 + 4 + 1 bytes.
    let at = block + 8 + 6;
    assert_eq!(good[at], 45);
    let mut b = good.clone();
    b[at] = 0xad;
    b.insert(at + 1, 0);
    b.remove(block + bs - 4);
    b[block + 4] += 1;
    let crc = crate::checksum::crc_at(block as u64, &b[block..block + bs - 4]);
    b[block + bs - 4..block + bs].copy_from_slice(&crc.to_le_bytes());
    let m = DocMap::from_bytes(&b[..]).unwrap();
    let err = m.verify().unwrap_err().to_string();
    assert!(err.contains("non-minimal varint"), "{err}");
    assert!(m.get(52).is_err());
    assert_eq!(DocMap::from_bytes(&good[..]).unwrap().get(52).unwrap(), Some(docs[1].1.clone()));
}
