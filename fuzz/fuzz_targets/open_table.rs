//! Open arbitrary bytes as a table: open, verify, iterate and probe must return errors or
//! consistent answers, never panic. Whatever verify accepts, iteration must agree with.
#![no_main]

use libfuzzer_sys::fuzz_target;
use simdex::table::Table;

fuzz_target!(|data: &[u8]| {
    let Ok(t) = Table::from_bytes(data) else {
        return;
    };
    let verified = t.verify();
    let all: simdex::Result<Vec<u64>> = t.iter().collect();
    if let (Ok(rep), Ok(all)) = (&verified, &all) {
        assert_eq!(rep.keys, all.len() as u64);
        assert!(all.windows(2).all(|w| w[0] < w[1]));
        for &k in all.iter().take(16) {
            let hits: Vec<u64> = t.prefix(k, 64).map(|r| r.unwrap()).collect();
            assert_eq!(hits, vec![k]);
        }
    }
    for bits in [0, 8, 32, 64] {
        for r in t.prefix(0x0123_4567_89AB_CDEF, bits) {
            if r.is_err() {
                break;
            }
        }
    }
});
