//! Parse arbitrary bytes as a store's `RECIPE` (with the IDF table it may carry), half of them
//! sealed afresh so that they reach the parser behind the crc line: never panic; a recipe that
//! parses encodes to bytes that parse to the same recipe, and hashes a document as that recipe
//! does.
#![no_main]

use libfuzzer_sys::fuzz_target;
use simdex::store::Recipe;

fuzz_target!(|input: &[u8]| {
    let Some((&flags, data)) = input.split_first() else {
        return;
    };
    let resealed;
    let data = if flags & 1 == 1 {
        // The body as text, less a crc line it may already end with.
        let text = String::from_utf8_lossy(data);
        let body = match text.rfind("crc32 ") {
            Some(at) => &text[..at],
            None => &text[..],
        };
        resealed = simdex::sealed::seal(body.to_string());
        resealed.as_bytes()
    } else {
        data
    };
    let Ok(r) = Recipe::decode(data) else {
        return;
    };
    let encoded = r.encode();
    let again = Recipe::decode(encoded.as_bytes()).expect("a recipe's own encoding parses");
    assert_eq!(again, r);
    assert_eq!(again.encode(), encoded);
    let doc = "<p>the quick brown fox jumps over the lazy dog</p> and then some";
    assert_eq!(r.hash(doc), again.hash(doc));
});
