//! Arbitrary bytes as a document, every way one reaches a fingerprint: a JSON Lines line, plain
//! text and HTML, at any shingle size, with and without a store's recipe. Never panic; the
//! same input always gives the same fingerprint; plain text hashes as its features do; a text
//! without features has no fingerprint (`None`), never a 0 that would pair with others.
#![no_main]

use libfuzzer_sys::fuzz_target;
use simdex::simhash::jsonl::{Line, parse_bytes};
use simdex::simhash::{SimhashOptions, Simhasher, simhash_slice};
use simdex::store::Recipe;

fuzz_target!(|data: &[u8]| {
    let Some((&first, rest)) = data.split_first() else {
        return;
    };
    let shingle = 1 + (first as usize % 16);
    let text = match parse_bytes(rest) {
        Line::Doc { text, .. } => text,
        _ => String::from_utf8_lossy(rest).into_owned(),
    };
    let h = Simhasher::new(SimhashOptions::default().with_shingle(shingle)).unwrap();
    let feats = h.features(&text);
    let got = h.try_hash_text(&text);
    assert_eq!(got, h.try_hash_text(&text));
    match got {
        Some(fp) => assert_eq!(fp, simhash_slice(&feats)),
        None => assert!(feats.is_empty()),
    }
    let html = h.hash_html(&text);
    assert_eq!(html, h.hash_html(&text));
    let sketch = simdex::dedup::sketch::SketchShape::default();
    for as_html in [false, true] {
        let r = Recipe::new(shingle, as_html, sketch, None).unwrap();
        let a = r.hash(&text);
        assert_eq!(a, r.hash(&text));
        if !as_html {
            assert_eq!(a.fingerprint, got);
        }
    }
});
