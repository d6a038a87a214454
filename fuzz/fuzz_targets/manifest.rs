//! Arbitrary bytes as an index manifest, two ways:
//!
//! 1. as the whole file: never panic; whatever parses re-encodes to a manifest that parses to
//!    the same value;
//! 2. as a manifest *body* sealed with a correct crc (what a hostile user who recomputes the crc
//!    hands over), opened over the four real tables of `format-spec/vectors/v1-index`: open
//!    must fail with an error or give an index whose every query at k <= its k equals brute
//!    force over the 39 stored fingerprints (a design that does not cover its k, an absurd
//!    radius or a k that does not fit its type must not open, abort or answer short).
#![no_main]

use libfuzzer_sys::fuzz_target;
use simdex::Index;
use simdex::index::manifest::Manifest;

const TABLES: [&[u8]; 4] = [
    include_bytes!("../../format-spec/vectors/v1-index/table-00.sxt"),
    include_bytes!("../../format-spec/vectors/v1-index/table-01.sxt"),
    include_bytes!("../../format-spec/vectors/v1-index/table-02.sxt"),
    include_bytes!("../../format-spec/vectors/v1-index/table-03.sxt"),
];
const FPS: &str = include_str!("../../format-spec/vectors/v1-index.fps");

fuzz_target!(|data: &[u8]| {
    if let Ok(m) = Manifest::decode(data) {
        let again = Manifest::decode(m.encode().as_bytes()).expect("re-encoded manifest parses");
        assert_eq!(again, m);
    }
    let body = String::from_utf8_lossy(data).into_owned();
    let sealed = simdex::sealed::seal(if body.ends_with('\n') {
        body
    } else {
        body + "\n"
    });
    let Ok(idx) = Index::from_parts(sealed.as_bytes(), TABLES.to_vec()) else {
        return;
    };
    let stored: Vec<u64> = FPS
        .lines()
        .filter_map(|l| u64::from_str_radix(l.trim(), 16).ok())
        .collect();
    let k = idx.design().k().min(3);
    for &q in stored.iter().take(8).chain([0u64, u64::MAX].iter()) {
        let mut want: Vec<(u32, u64)> = stored
            .iter()
            .map(|&f| ((f ^ q).count_ones(), f))
            .filter(|&(d, _)| d <= k)
            .collect();
        want.sort_unstable();
        want.dedup();
        let got: Vec<(u32, u64)> = idx
            .near(q, k)
            .expect("an opened index answers")
            .into_iter()
            .map(|m| (m.distance, m.fingerprint))
            .collect();
        assert_eq!(got, want, "query {q:#018x} at k = {k}");
    }
});
