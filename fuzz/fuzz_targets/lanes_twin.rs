//! Queries through the vector lanes against the scalar loop on blocks the input rewrites: the
//! lanes read their streams with unchecked 8-byte loads, so every byte a block can hold must
//! leave them where the scalar rule leaves them. The input picks an index (format 4, segments
//! aligned to prefix runs; format 3; format 1), a table and a block of it, and bytes to xor
//! into that block, then seals the block with a fresh crc (or, one input in eight, leaves the
//! old one). The block's own keys and their neighbours, each with a flipped bit or not, are
//! the queries: `near` through the lanes equals `near` through the scalar loop (the same
//! matches, or the same error), `near_many` through the lanes fails exactly where one of its
//! queries alone does and otherwise equals them; with nothing xored in, every answer equals
//! brute force over the keys. The batch scan (`near_many` forced onto it) answers the same
//! queries as brute force on untouched bytes and, on rewritten ones, answers or names the
//! corruption, never panics.
#![no_main]

use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;
use simdex::index::{BuildOptions, DesignChoice, Index};
use simdex::table::Table;
use simdex::table::block::{BLOCK_TRAILER_LEN, block_crc};
use simdex::table::format::HEADER_LEN;

/// Keys of every index: 100k, so that design m5c1r0's 12- and 13-bit prefixes have runs of
/// 12 and 24 keys, which an automatic build aligns its segments to (format 4).
const KEYS: usize = 100_000;
/// The most queries an input asks (a block's keys from a place the input picks).
const QUERIES: usize = 24;

/// One index's files, read into memory.
struct Built {
    manifest: Vec<u8>,
    tables: Vec<Vec<u8>>,
}

struct Fixture {
    keys: Vec<u64>,
    /// Format 4 (automatic segments), format 3 (segments of 20 keys), format 1 (none).
    indexes: Vec<Built>,
}

fn fixture() -> &'static Fixture {
    static F: OnceLock<Fixture> = OnceLock::new();
    F.get_or_init(|| {
        let keys = simdex::sample::random(KEYS, 29);
        let tmp = tempfile::tempdir().unwrap();
        let indexes = [(4096, None), (1024, Some(20)), (256, Some(0))]
            .into_iter()
            .enumerate()
            .map(|(i, (block, segment_keys))| {
                let dir = tmp.path().join(format!("idx-{i}"));
                let opts = BuildOptions::default()
                    .with_design(DesignChoice::Named("m5c1r0".into()))
                    .with_block_size(Some(block))
                    .with_segment_keys(segment_keys);
                simdex::index::build(&dir, keys.iter().map(|&x| Ok(x)), &opts).unwrap();
                let manifest = std::fs::read(dir.join("MANIFEST")).unwrap();
                let tables: Vec<Vec<u8>> = (0..5)
                    .map(|t| std::fs::read(dir.join(format!("table-{t:02}.sxt"))).unwrap())
                    .collect();
                let version = Table::from_bytes(&tables[0][..]).unwrap().format_version();
                assert_eq!(version, [4, 3, 1][i], "index {i}");
                Built { manifest, tables }
            })
            .collect();
        Fixture { keys, indexes }
    })
}

fn brute(keys: &[u64], q: u64, k: u32) -> Vec<(u64, u32)> {
    let mut v: Vec<(u64, u32)> = keys
        .iter()
        .map(|&x| (x, (x ^ q).count_ones()))
        .filter(|&(_, d)| d <= k)
        .collect();
    v.sort_unstable_by_key(|&(x, d)| (d, x));
    v
}

fn pairs(ms: &[simdex::index::Match]) -> Vec<(u64, u32)> {
    let mut v: Vec<(u64, u32)> = ms.iter().map(|m| (m.fingerprint, m.distance)).collect();
    v.sort_unstable_by_key(|&(x, d)| (d, x));
    v
}

fuzz_target!(|data: &[u8]| {
    if data.len() < 5 {
        return;
    }
    let f = fixture();
    let built = &f.indexes[data[0] as usize % f.indexes.len()];
    let t = data[1] as usize % built.tables.len();
    let reseal = data[0] / 8 % 8 != 0;
    let table = Table::from_bytes(&built.tables[t][..]).unwrap();
    let blocks = table.block_count();
    let b = u16::from_le_bytes([data[2], data[3]]) as u64 % blocks;
    let bs = table.block_size() as usize;

    // The queries: the block's keys and the next block's first, in the table's order, back in
    // the fingerprints' own, each with one bit flipped where the input says.
    let inverse = table.permutation().inverse();
    let mut keys = Vec::new();
    for i in b..(b + 2).min(blocks) {
        let mut dec = table.block(i).unwrap();
        while let Some(key) = dec.next().unwrap() {
            keys.push(inverse.apply(key));
            if i > b {
                break;
            }
        }
    }
    // At most QUERIES of them, from where the input says (a block holds hundreds).
    let from = data[4] as usize * keys.len() / 256;
    let keys = &keys[from..(from + QUERIES).min(keys.len())];
    let edits = &data[5..];
    let queries: Vec<u64> = keys
        .iter()
        .enumerate()
        .map(|(i, &q)| match edits.get(i % edits.len().max(1)) {
            Some(&e) if e & 0x80 != 0 => q ^ (1 << (e % 64)),
            _ => q,
        })
        .collect();

    // The block rewritten: (offset, byte) pairs xored into its bytes before the crc.
    let mut bytes = built.tables[t].clone();
    let off = HEADER_LEN + b as usize * bs;
    let crc_at = bs - BLOCK_TRAILER_LEN;
    let block = &mut bytes[off..off + bs];
    for e in edits.chunks_exact(3) {
        let at = u16::from_le_bytes([e[0], e[1]]) as usize % crc_at;
        block[at] ^= e[2];
    }
    if reseal {
        let crc = block_crc(off as u64, &block[..crc_at]);
        block[crc_at..].copy_from_slice(&crc.to_le_bytes());
    }
    let tables: Vec<&[u8]> = built
        .tables
        .iter()
        .enumerate()
        .map(|(i, v)| if i == t { &bytes[..] } else { &v[..] })
        .collect();
    let Ok(mut idx) = Index::from_parts(&built.manifest, tables) else {
        return;
    };
    if !idx.use_lanes(true) {
        return;
    }
    let k = idx.design().k();
    let untouched = edits.len() < 3 && reseal;

    let mut alone = Vec::new();
    for &q in &queries {
        idx.use_lanes(false);
        let scalar = idx.near(q, k);
        idx.use_lanes(true);
        let lanes = idx.near(q, k);
        assert_eq!(format!("{lanes:?}"), format!("{scalar:?}"), "query {q:#x}");
        if untouched {
            assert_eq!(pairs(&lanes.as_ref().unwrap()[..]), brute(&f.keys, q, k));
        }
        alone.push(lanes);
    }
    let failing = alone.iter().any(|r| r.is_err());
    match idx.near_many(&queries, k) {
        Ok(many) => {
            assert!(!failing, "near_many answered where a query alone failed");
            for (i, r) in alone.iter().enumerate() {
                assert_eq!(many.get(i), &r.as_ref().unwrap()[..]);
            }
        }
        Err(simdex::Error::Corrupt { .. }) => assert!(failing, "near_many failed alone"),
        Err(e) => panic!("{e}"),
    }

    // The same batch by the batch scan: brute force's answers on untouched bytes; on rewritten
    // ones an answer or a corruption error, never a panic (it enters a block at its start, not
    // at a probe's segment, so on bytes that lie it may read other lies than the probes did).
    idx.use_scan(Some(true));
    match idx.near_many(&queries, k) {
        Ok(many) => {
            for (i, &q) in queries.iter().enumerate().filter(|_| untouched) {
                assert_eq!(pairs(many.get(i)), brute(&f.keys, q, k), "scanned {q:#x}");
            }
        }
        Err(simdex::Error::Corrupt { .. }) if !untouched => {}
        Err(e) => panic!("{e}"),
    }
});
