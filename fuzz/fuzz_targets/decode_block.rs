//! Decode arbitrary bytes as one block under a code built from the input: the decoder must never
//! panic or read out of bounds, and whatever it yields is strictly ascending. The decoder
//! compiled without format 4 (`BlockDecoder::without_format_4`, what queries of indexes of
//! formats 1–3 run) must refuse every format-4 block and decode every other exactly as the
//! general one: the same keys, the same error where one stops.
#![no_main]

use libfuzzer_sys::fuzz_target;
use simdex::codec::Codec;
use simdex::codec::huffman::{Code, DecodeTable};
use simdex::table::block::{BlockDecoder, Head, Layout, block_crc};

fuzz_target!(|data: &[u8]| {
    if data.len() < 64 + 16 {
        return;
    }
    let (freq_bytes, rest) = data.split_at(64);
    let mut f = [0u64; 64];
    for (x, &b) in f.iter_mut().zip(freq_bytes) {
        *x = b as u64;
    }
    let codec = if freq_bytes[0] & 1 == 0 {
        Codec::HDelta
    } else {
        Codec::Gap
    };
    let table = DecodeTable::new(&Code::from_frequencies(&f, 12), |s| codec.suffix_bits(s));
    // A block of the next power of two >= 128 bytes, with a valid crc so the stream is decoded.
    let size = rest.len().next_power_of_two().clamp(128, 4096);
    let mut block = vec![0u8; size];
    let n = rest.len().min(size - 4);
    block[..n].copy_from_slice(&rest[..n]);
    let crc = block_crc(176, &block[..size - 4]);
    block[size - 4..].copy_from_slice(&crc.to_le_bytes());
    // Format 1, or format 2, 3 or 4 with S, the footer's last key, (formats 3 and 4) the key
    // before the block and (format 4) the aligned prefix taken from the input.
    let after = u64::from_le_bytes(freq_bytes[24..32].try_into().unwrap());
    let layout = match freq_bytes[1] {
        0..=127 => Layout::UNSEGMENTED,
        s => Layout {
            segment_keys: (s as u32 - 126).min(64),
            last: u64::from_le_bytes(freq_bytes[8..16].try_into().unwrap()),
            head: match freq_bytes[2] % 3 {
                0 => Head::Wide,
                1 => Head::Compact {
                    after: None,
                    align: freq_bytes[3] % 64,
                },
                _ => Head::Compact {
                    after: Some(after),
                    align: freq_bytes[3] % 64,
                },
            },
        },
    };
    let lean = BlockDecoder::without_format_4(&block, 0, 176, codec, &table, layout);
    let general = BlockDecoder::new(&block, 0, 176, codec, &table, layout);
    let format_4 = matches!(layout.head, Head::Compact { align: 1.., .. });
    match (&general, lean) {
        (_, Ok(_)) if format_4 => panic!("the lean decoder opened a format-4 block"),
        (Ok(g), Ok(mut l)) => {
            let mut g = g.clone();
            let key = u64::from_le_bytes(freq_bytes[16..24].try_into().unwrap());
            let (mut gs, mut ls) = (g.clone(), l.clone());
            gs.seek(key);
            ls.seek(key);
            assert_eq!(
                drain(&mut gs),
                drain(&mut ls),
                "seek {key:#x}: decoders disagree"
            );
            assert_eq!(drain(&mut g), drain(&mut l), "decoders disagree");
        }
        (Err(_), Err(_)) => {}
        (Ok(_), Err(_)) if format_4 => {}
        (g, l) => panic!(
            "one decoder opened the block, the other not: {:?} / {:?}",
            g.is_ok(),
            l.is_ok()
        ),
    }
    let Ok(mut d) = general else { return };
    // A probe's start: the segment an arbitrary key selects.
    let mut seeking = d.clone();
    seeking.seek(u64::from_le_bytes(freq_bytes[16..24].try_into().unwrap()));
    let mut prev: Option<u64> = None;
    while let Ok(Some(k)) = seeking.next() {
        assert!(prev.is_none_or(|p| k > p), "keys must ascend");
        prev = Some(k);
    }
    let mut prev: Option<u64> = None;
    while let Ok(Some(k)) = d.next() {
        assert!(prev.is_none_or(|p| k > p), "keys must ascend");
        prev = Some(k);
    }
});

/// Every key a decoder yields, and whether it stopped at an error (and which).
fn drain<const A: bool>(d: &mut BlockDecoder<'_, A>) -> (Vec<u64>, Option<String>) {
    let mut keys = Vec::new();
    loop {
        match d.next() {
            Ok(Some(k)) => keys.push(k),
            Ok(None) => return (keys, None),
            Err(e) => return (keys, Some(e.to_string())),
        }
    }
}
