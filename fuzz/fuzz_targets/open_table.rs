//! Open arbitrary bytes as a table: open, verify, iterate and probe must return errors or
//! consistent answers, never panic. Whatever verify accepts, iteration must agree with.
//!
//! The first input byte is a flag. Where its second bit is set, the bytes are not the input's
//! but a valid table's (built from the input's next 8 bytes, in one of formats 1, 3 and 4 and
//! either codec as the flag says), with the rest of the input applied as edits (a 2-byte
//! position, then a byte XORed in there). Where its low bit is set, the bytes are resealed
//! before they are opened: fresh crcs for the header, the trailer, and (where the header's
//! block size and count and the trailer's footer offset describe the bytes) every block and
//! the footer. Without these, random bytes never pass the header's magic and crc (the target
//! reached 136 edges in 40M runs): the checks a reader makes on open (block size, S, counts,
//! the footer's offset and length, ascending last keys) and the decoders behind the block
//! crcs are now fuzzed too.
#![no_main]

use libfuzzer_sys::fuzz_target;
use simdex::checksum::crc_at;
use simdex::codec::Codec;
use simdex::table::block::block_crc;
use simdex::table::format::{HEADER_LEN as HEADER, TRAILER_LEN as TRAILER};
use simdex::table::{Table, TableOptions, build_bytes};

fuzz_target!(|input: &[u8]| {
    let Some((&flags, data)) = input.split_first() else {
        return;
    };
    let mut data = if flags & 2 == 2 {
        match built(flags, data) {
            Some(b) => b,
            None => return,
        }
    } else {
        data.to_vec()
    };
    if flags & 1 == 1 {
        reseal(&mut data);
    }
    let Ok(t) = Table::from_bytes(&data[..]) else {
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

/// Fresh crcs for `b` as a table file (`format-spec/table.md`): the header's and the
/// trailer's always (where the file holds both), each block's and the footer's where the
/// header's block size and count place them before the footer the trailer names.
fn reseal(b: &mut [u8]) {
    if b.len() < HEADER + TRAILER {
        return;
    }
    let crc = crc_at(0, &b[..HEADER - 4]);
    b[HEADER - 4..HEADER].copy_from_slice(&crc.to_le_bytes());
    let t = b.len() - TRAILER;
    let crc = crc_at(t as u64, &b[t..t + 20]);
    b[t + 20..t + 24].copy_from_slice(&crc.to_le_bytes());
    let u64_at = |b: &[u8], at: usize| u64::from_le_bytes(b[at..at + 8].try_into().unwrap());
    let size = u32::from_le_bytes(b[16..20].try_into().unwrap()) as usize;
    let blocks = u64_at(b, 32);
    let (foot, foot_len) = (u64_at(b, t), u64_at(b, t + 8));
    let end = (blocks as usize)
        .checked_mul(size)
        .and_then(|x| x.checked_add(HEADER));
    if !(8..=1 << 16).contains(&size) || end != Some(foot as usize) || foot_len < 4 {
        return;
    }
    let Some(foot_end) = (foot as usize).checked_add(foot_len as usize) else {
        return;
    };
    if foot_end > t {
        return;
    }
    for i in 0..blocks as usize {
        let off = HEADER + i * size;
        let crc = block_crc(off as u64, &b[off..off + size - 4]);
        b[off + size - 4..off + size].copy_from_slice(&crc.to_le_bytes());
    }
    let f = foot as usize;
    let crc = crc_at(foot, &b[f..foot_end - 4]);
    b[foot_end - 4..foot_end].copy_from_slice(&crc.to_le_bytes());
}

/// A valid table of keys drawn from `input`'s first 8 bytes (a seed), laid out as `flags`
/// says, with the rest of `input` applied as edits: `None` where the input is too short.
fn built(flags: u8, input: &[u8]) -> Option<Vec<u8>> {
    let (seed, edits) = input.split_at_checked(8)?;
    let mut x = u64::from_le_bytes(seed.try_into().unwrap());
    // Keys below 2^16 (short deltas, ~12 a run of the aligned prefix) or spread over all 64
    // bits (long deltas, ~10 a run of 6-bit prefixes).
    let n = 50 + (x % 700) as usize;
    let spread = if flags & 4 == 4 { 64 } else { 16 };
    let mut keys: Vec<u64> = (0..n)
        .map(|_| {
            // splitmix64
            x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
            let mut z = x;
            z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            (z ^ (z >> 31)) >> (64 - spread)
        })
        .collect();
    keys.sort_unstable();
    keys.dedup();
    let codec = if flags & 8 == 8 {
        Codec::Gap
    } else {
        Codec::HDelta
    };
    let mut opts = TableOptions::default()
        .with_block_size(128 << (flags >> 6))
        .with_codec(codec);
    match (flags >> 4) & 3 {
        0 => {}
        1 => opts = opts.with_segment_keys(4),
        _ => {
            opts = opts
                .with_segment_keys(4)
                .with_aligned_prefix(64 - spread + 6)
        }
    }
    let mut b = build_bytes(&keys, &opts).ok()?;
    for e in edits.chunks_exact(3) {
        let at = u16::from_le_bytes([e[0], e[1]]) as usize;
        let len = b.len();
        b[at % len] ^= e[2];
    }
    Some(b)
}
