//! The table-driven Huffman decoder against the bit-by-bit reference on arbitrary streams, for a
//! code built from arbitrary frequencies.
#![no_main]

use libfuzzer_sys::fuzz_target;
use simdex::codec::bitio;
use simdex::codec::huffman::{Code, DecodeTable, reference_decode};

fuzz_target!(|data: &[u8]| {
    if data.len() < 64 {
        return;
    }
    let (freq_bytes, stream) = data.split_at(64);
    let mut f = [0u64; 64];
    for (x, &b) in f.iter_mut().zip(freq_bytes) {
        *x = b as u64 * b as u64;
    }
    let code = Code::from_frequencies(&f, 12);
    let table = DecodeTable::new(&code, |s| 63 - s);
    for pos in 0..stream.len() as u64 * 8 {
        assert_eq!(
            table.decode(bitio::peek(stream, pos)),
            reference_decode(&code, stream, pos)
        );
    }
});
