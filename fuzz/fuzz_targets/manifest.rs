//! Parse arbitrary bytes as an index manifest: never panic; whatever parses re-encodes to a
//! manifest that parses to the same value.
#![no_main]

use libfuzzer_sys::fuzz_target;
use simdex::index::manifest::Manifest;

fuzz_target!(|data: &[u8]| {
    if let Ok(m) = Manifest::decode(data) {
        let again = Manifest::decode(m.encode().as_bytes()).expect("re-encoded manifest parses");
        assert_eq!(again, m);
    }
});
