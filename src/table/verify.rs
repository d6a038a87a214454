//! Checking a whole table: every block's crc, decoding and padding, key order within and across
//! blocks, the last-key array and the key count — on all cores, a run of blocks per task.
//!
//! A block's keys are checked against the previous block's entry in the last-key array, which
//! that block's own check proves equal to its real last key; so runs of blocks check
//! independently and together check exactly what one pass from the first block would.

use rayon::prelude::*;

use super::block::{self, BlockDecoder};
use super::reader::{Table, VerifyReport};
use crate::error::{Error, Result};

/// Blocks per task: large enough that scheduling costs nothing, small enough to spread a table
/// of a few thousand blocks over every core.
const BLOCKS_PER_TASK: u64 = 256;

impl<D: AsRef<[u8]> + Sync> Table<D> {
    /// Check everything: every block's crc, its decoding, its padding, key order within and
    /// across blocks, the last-key array and the key count. Runs on the rayon pool.
    pub fn verify(&self) -> Result<VerifyReport> {
        self.verify_summing(|_| 0).map(|(report, _)| report)
    }

    /// [`verify`](Self::verify), also returning the wrapping sum of `f(key)` over every key (an
    /// order-independent digest of the set, from the same single decode).
    pub(crate) fn verify_summing(
        &self,
        f: impl Fn(u64) -> u64 + Sync,
    ) -> Result<(VerifyReport, u64)> {
        let n = self.block_count();
        let runs: Vec<Result<(u64, u64)>> = (0..n.div_ceil(BLOCKS_PER_TASK))
            .into_par_iter()
            .map(|r| {
                let blocks = r * BLOCKS_PER_TASK..((r + 1) * BLOCKS_PER_TASK).min(n);
                let (mut keys, mut sum) = (0u64, 0u64);
                for i in blocks {
                    self.verify_block(i, |k| {
                        keys += 1;
                        sum = sum.wrapping_add(f(k));
                    })?;
                }
                Ok((keys, sum))
            })
            .collect();
        let (mut keys, mut sum) = (0u64, 0u64);
        // The first error in block order, whichever task found it first.
        for run in runs {
            let (k, s) = run?;
            keys += k;
            sum = sum.wrapping_add(s);
        }
        if keys != self.len() {
            return Err(self.attach(Error::corrupt(
                "table header key count",
                24,
                format!("{keys} (keys decoded)"),
                self.len(),
            )));
        }
        Ok((VerifyReport { keys, blocks: n }, sum))
    }

    /// Check block `i` (crc, decoding, order after the previous block's last key, its own last
    /// key against the last-key array, zero padding), calling `visit` on each key.
    fn verify_block(&self, i: u64, mut visit: impl FnMut(u64)) -> Result<()> {
        let off = self.block_offset(i);
        let bytes = self.block_bytes(i);
        let last_keys = self.last_keys();
        let layout = self.layout(i);
        let mut d = BlockDecoder::new(bytes, i, off, self.codec(), self.decode_table(), layout)
            .map_err(|e| self.attach(e))?;
        let mut prev = i.checked_sub(1).map(|j| last_keys[j as usize]);
        let mut last = None;
        while let Some(k) = d.next().map_err(|e| self.attach(e))? {
            if let Some(p) = prev
                && k <= p
            {
                return Err(self.attach(Error::corrupt(
                    format!("block {i} first key"),
                    off + 4,
                    format!("a key greater than {p:#018x} (previous block's last)"),
                    format!("{k:#018x}"),
                )));
            }
            prev = Some(k);
            last = Some(k);
            visit(k);
        }
        if last != Some(last_keys[i as usize]) {
            return Err(self.attach(Error::corrupt(
                format!("block {i} last key"),
                off,
                format!("{:#018x} (footer)", last_keys[i as usize]),
                format!("{last:#018x?}"),
            )));
        }
        let stream = d.stream();
        let used = d.bit_position();
        let first_pad_byte = used.div_ceil(8) as usize;
        let pad_ok = (used % 8 == 0
            || crate::codec::bitio::read(stream, used, (8 - used % 8) as u32) == 0)
            && stream[first_pad_byte.min(stream.len())..]
                .iter()
                .all(|&x| x == 0);
        if !pad_ok {
            return Err(self.attach(Error::corrupt(
                format!("block {i} padding"),
                off + (bytes.len() - block::BLOCK_TRAILER_LEN - stream.len()) as u64 + used / 8,
                "zero bits after the last delta",
                "non-zero bits",
            )));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::table::{TableOptions, build_bytes};

    fn table() -> (Vec<u64>, Vec<u8>) {
        let mut s = 3;
        let mut keys: Vec<u64> = (0..60_000)
            .map(|_| crate::sample::splitmix64(&mut s))
            .collect();
        keys.sort_unstable();
        keys.dedup();
        let bytes = build_bytes(&keys, &TableOptions::default().with_block_size(256)).unwrap();
        (keys, bytes)
    }

    #[test]
    fn runs_of_blocks_check_the_whole_table_and_report_the_first_fault() {
        let (keys, bytes) = table();
        let t = Table::from_bytes(bytes.clone()).unwrap();
        assert!(t.block_count() > 4 * BLOCKS_PER_TASK, "{}", t.block_count());
        let (report, sum) = t.verify_summing(|k| k.rotate_left(7)).unwrap();
        assert_eq!(report.keys, keys.len() as u64);
        let want = keys
            .iter()
            .fold(0u64, |a, &k| a.wrapping_add(k.rotate_left(7)));
        assert_eq!(sum, want);
        // Damage two blocks in different runs: the error names the earlier one.
        let mut bad = bytes;
        for i in [300u64, 900] {
            let at = t.block_offset(i) as usize + 20;
            bad[at] ^= 0x10;
        }
        let e = Table::from_bytes(bad).unwrap().verify().unwrap_err();
        assert!(e.to_string().contains("block 300"), "{e}");
    }
}
