//! Open arbitrary bytes as an id map, half of them with fresh crcs: never panic; if it opens
//! and verifies, every pair the iterator yields is found by `ids_of`, and the writer
//! reproduces the bytes.
#![no_main]

use libfuzzer_sys::fuzz_target;
use simdex::store::ids::{IdMap, build_bytes};

mod reseal;

fuzz_target!(|input: &[u8]| {
    // The block count sits at bytes 32..40 of an id map's header.
    let Some(data) = reseal::map_bytes(input, 32) else {
        return;
    };
    let data = &data[..];
    let Ok(m) = IdMap::from_bytes(data) else {
        return;
    };
    let _ = m.ids_of(0);
    let _ = m.ids_of(u64::MAX);
    if m.verify().is_err() {
        return;
    }
    let pairs: Vec<(u64, u64)> = m.iter().map(|p| p.unwrap()).collect();
    for &(fp, id) in pairs.iter().take(64) {
        assert!(m.ids_of(fp).unwrap().contains(&id));
    }
    let bs = u32::from_le_bytes(data[12..16].try_into().unwrap());
    assert_eq!(
        build_bytes(&pairs, bs).unwrap(),
        data,
        "a verified map the writer would not write"
    );
});
