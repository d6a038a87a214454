//! Building one table from sorted keys in memory on all cores.
//!
//! The serial builder makes two passes over the keys (histogram, then encode), one key after
//! another: at a billion keys the encode alone takes tens of seconds per table, while the other
//! cores wait. Here both passes run over chunks of the keys in parallel: the histogram is a
//! sum of the chunks' histograms (a chunk also counts the pair across its first boundary),
//! and each chunk is encoded into whole blocks of its own, which the writer then seals (each
//! block's crc at its final place) and appends in order. A chunk's last block may be less
//! than full, so the table can hold a few more blocks than the serial builder's — the format
//! allows any key count per block — and its keys, order and code are the same.

use std::path::Path;

use rayon::prelude::*;

use super::block::BlockEncoder;
use super::builder::{Histogram, TableOptions, TableSummary, TableWriter, build_file};
use crate::codec::huffman::{Code, NUM_SYMBOLS};
use crate::error::{Error, Result};
use crate::table::format::check_block_size;

/// Keys per chunk: large enough that a chunk's one partial block costs nothing measurable
/// (about one block in 20 000 at B = 256), small enough to spread a table over every core.
const CHUNK: usize = 1 << 20;

/// Build a table file at `path` atomically from `keys`, sorted ascending and distinct (checked),
/// on all cores; small inputs go through the serial builder.
pub fn build_file_sorted(path: &Path, opts: &TableOptions, keys: &[u64]) -> Result<TableSummary> {
    build_file_sorted_in(path, opts, keys, CHUNK)
}

fn build_file_sorted_in(
    path: &Path,
    opts: &TableOptions,
    keys: &[u64],
    chunk: usize,
) -> Result<TableSummary> {
    check_block_size(opts.block_size)?;
    super::format::check_segment_keys(opts.segment_keys, opts.block_size)?;
    super::format::check_aligned_prefix(opts.aligned_prefix)?;
    if keys.len() < 2 * chunk {
        return build_file(path, opts, || Ok(keys.iter().map(|&k| Ok(k))));
    }
    let hist = histogram(opts, keys, chunk)?;
    let code = hist.code();
    // Encode a wave of chunks (one per core, a few MB each) at a time, append it in order.
    let wave = rayon::current_num_threads().max(1) * chunk;
    crate::atomic::write_mapped_file(path, |w| {
        let mut tw = TableWriter::new(w, opts, &hist)?;
        for (w, part) in keys.chunks(wave).enumerate() {
            let encoded: Vec<(Vec<u8>, Vec<u64>, u64)> = part
                .par_chunks(chunk)
                .enumerate()
                .map(|(c, seg)| {
                    // The key before the chunk: its first block's first key is coded after it.
                    let after = (w * wave + c * chunk).checked_sub(1).map(|i| keys[i]);
                    encode(opts, &code, seg, after)
                })
                .collect::<Result<_>>()?;
            for (mut blocks, last_keys, n) in encoded {
                tw.append_blocks(&mut blocks, &last_keys, n)?;
            }
        }
        Ok(tw.finish()?.1)
    })
    .map_err(|e| e.with_path(path))
}

/// The histogram of the symbols between consecutive keys, chunk by chunk in parallel; an
/// error at the first pair out of order.
fn histogram(opts: &TableOptions, keys: &[u64], chunk: usize) -> Result<Histogram> {
    let codec = opts.codec;
    let parts: Vec<Result<[u64; NUM_SYMBOLS]>> = (0..keys.len().div_ceil(chunk))
        .into_par_iter()
        .map(|s| {
            let mut freqs = [0u64; NUM_SYMBOLS];
            let (start, end) = ((s * chunk).max(1), ((s + 1) * chunk).min(keys.len()));
            for i in start..end {
                let (a, b) = (keys[i - 1], keys[i]);
                if b <= a {
                    return Err(Error::Unsorted {
                        position: i as u64,
                        previous: a,
                        key: b,
                    });
                }
                freqs[codec.delta(a, b).0] += 1;
            }
            Ok(freqs)
        })
        .collect();
    let mut freqs = [0u64; NUM_SYMBOLS];
    for p in parts {
        for (f, x) in freqs.iter_mut().zip(p?) {
            *f += x;
        }
    }
    Ok(Histogram::from_parts(codec, freqs, keys.len() as u64))
}

/// One chunk's keys, which follow the key `after` (`None` for the table's first chunk), as
/// whole blocks (crc fields left for the writer), each block's last key, and the number of keys.
fn encode(
    opts: &TableOptions,
    code: &Code,
    keys: &[u64],
    after: Option<u64>,
) -> Result<(Vec<u8>, Vec<u64>, u64)> {
    let b = opts.block_size as usize;
    let mut enc = BlockEncoder::new(opts);
    enc.set_after(after);
    let mut blocks = Vec::with_capacity(keys.len() * 8);
    let mut last_keys = Vec::new();
    let mut seal = |enc: &mut BlockEncoder, blocks: &mut Vec<u8>| {
        last_keys.push(enc.last());
        let at = blocks.len();
        blocks.resize(at + b, 0);
        enc.finish(0, &mut blocks[at..]);
    };
    for &k in keys {
        if !enc.push(k, code)? {
            seal(&mut enc, &mut blocks);
            let pushed = enc.push(k, code)?;
            debug_assert!(pushed, "an empty block always takes a key");
        }
    }
    if enc.count() > 0 {
        seal(&mut enc, &mut blocks);
    }
    Ok((blocks, last_keys, keys.len() as u64))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codec::Codec;
    use crate::table::Table;

    #[test]
    fn chunks_build_a_valid_table_with_the_same_keys() {
        let mut s = 11;
        let mut keys: Vec<u64> = (0..50_000)
            .map(|_| crate::sample::splitmix64(&mut s))
            .collect();
        keys.sort_unstable();
        keys.dedup();
        let dir = tempfile::tempdir().unwrap();
        // Format 1, and format 3, whose chunks' first blocks code their first key after the
        // key before the chunk.
        for (codec, segment_keys) in Codec::ALL.into_iter().flat_map(|c| [(c, 0), (c, 5)]) {
            let opts = TableOptions::default()
                .with_codec(codec)
                .with_block_size(256)
                .with_segment_keys(segment_keys);
            let (p, q) = (dir.path().join("par"), dir.path().join("ser"));
            // Chunks of 1 000 keys: 50 of them, built in waves, each ending in a partial block.
            let sum = build_file_sorted_in(&p, &opts, &keys, 1000).unwrap();
            build_file(&q, &opts, || Ok(keys.iter().map(|&k| Ok(k)))).unwrap();
            let (par, ser) = (Table::open(&p).unwrap(), Table::open(&q).unwrap());
            assert_eq!(par.verify().unwrap().keys, keys.len() as u64);
            assert_eq!(sum.keys, keys.len() as u64);
            assert!(par.iter().map(|k| k.unwrap()).eq(keys.iter().copied()));
            assert_eq!(par.code_lengths(), ser.code_lengths(), "the same code");
            assert!(par.block_count() >= ser.block_count());
            assert!(par.block_count() <= ser.block_count() + 50);
            for &k in keys.iter().step_by(97) {
                let got: Vec<u64> = par.prefix(k, 20).map(|x| x.unwrap()).collect();
                let want: Vec<u64> = ser.prefix(k, 20).map(|x| x.unwrap()).collect();
                assert_eq!(got, want);
            }
        }
        // Out of order or repeated keys are an error, not a wrong table.
        let mut bad = keys.clone();
        bad.swap(30_000, 30_001);
        let opts = TableOptions::default();
        let e = build_file_sorted_in(&dir.path().join("bad"), &opts, &bad, 1000).unwrap_err();
        assert!(
            matches!(
                e,
                Error::Unsorted {
                    position: 30_001,
                    ..
                }
            ),
            "{e}"
        );
        assert!(!dir.path().join("bad").exists());
    }
}
