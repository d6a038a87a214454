//! Open arbitrary bytes as a document map (a generation's `DOCS`), half of them with fresh
//! crcs: never panic; if it opens and verifies, every entry the iterator yields is found by
//! `get`, and the writer reproduces the bytes where the map has the block size it writes (the
//! format allows any power of two in 4096..=1048576: a map of no documents verifies with any).
#![no_main]

use libfuzzer_sys::fuzz_target;
use simdex::store::docs::{DOCS_BLOCK_SIZE, DocMap, build_bytes};

mod reseal;

fuzz_target!(|input: &[u8]| {
    // The block count sits at bytes 24..32 of a document map's header.
    let Some(data) = reseal::map_bytes(input, 24) else {
        return;
    };
    let data = &data[..];
    let Ok(m) = DocMap::from_bytes(data) else {
        return;
    };
    let _ = m.get(0);
    let _ = m.get(u64::MAX);
    if m.verify().is_err() {
        return;
    }
    let docs: Vec<_> = m.iter().map(|d| d.unwrap()).collect();
    assert_eq!(docs.len() as u64, m.docs());
    for (id, meta) in docs.iter().take(64) {
        assert_eq!(m.get(*id).unwrap().as_ref(), Some(meta), "id {id}");
    }
    if u32::from_le_bytes(data[12..16].try_into().unwrap()) != DOCS_BLOCK_SIZE {
        return;
    }
    assert_eq!(
        build_bytes(&docs, m.sketch_bytes()).unwrap(),
        data,
        "a verified map the writer would not write"
    );
});
