//! Fresh crcs for a store's block files (`IDS`, `DOCS`: a 48-byte header, blocks, an array of
//! first keys), so that a fuzzer's rewrites reach the parsers behind the crc checks instead of
//! stopping at them. Where the header's sizes do not describe the bytes, only the header is
//! resealed.

use simdex::checksum::crc_at;

/// A fuzz input as a map's bytes: a flag byte, then the bytes, resealed (see [`reseal`]) where
/// the flag's low bit is set; `None` for an empty input.
pub fn map_bytes(input: &[u8], blocks_at: usize) -> Option<Vec<u8>> {
    let (&flags, data) = input.split_first()?;
    let mut data = data.to_vec();
    if flags & 1 == 1 {
        reseal(&mut data, blocks_at);
    }
    Some(data)
}

/// Reseal `b` in place: the header's crc, then, where `b` is as long as the header's block
/// size and count (read at `blocks_at`) say, every block's and the first-key array's.
pub fn reseal(b: &mut [u8], blocks_at: usize) {
    const HEADER: usize = 48;
    if b.len() < HEADER {
        return;
    }
    let crc = crc_at(0, &b[..44]);
    b[44..48].copy_from_slice(&crc.to_le_bytes());
    let bs = u32::from_le_bytes(b[12..16].try_into().unwrap()) as usize;
    let blocks = u64::from_le_bytes(b[blocks_at..blocks_at + 8].try_into().unwrap());
    let len = (blocks as usize)
        .checked_mul(bs + 8)
        .and_then(|x| x.checked_add(HEADER + 4));
    if bs < 8 || bs > 1 << 20 || len != Some(b.len()) {
        return;
    }
    for i in 0..blocks as usize {
        let off = HEADER + i * bs;
        let crc = crc_at(off as u64, &b[off..off + bs - 4]);
        b[off + bs - 4..off + bs].copy_from_slice(&crc.to_le_bytes());
    }
    let foot = HEADER + blocks as usize * bs;
    let end = b.len() - 4;
    let crc = crc_at(foot as u64, &b[foot..end]);
    b[end..].copy_from_slice(&crc.to_le_bytes());
}
