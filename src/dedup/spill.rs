//! Verified pairs put in order within a memory bound: sorted runs spilled to unnamed temporary
//! files and merged, so listing the pairs of a corpus (quadratic in a group of near-copies)
//! never holds more than the bound, however many there are.

use std::io::{BufReader, BufWriter, Read, Seek, Write};
use std::path::{Path, PathBuf};

use crate::{Error, Result};

/// A verified pair: rows `a < b`, their fingerprints' distance, their Jaccard.
pub(crate) type Verified = (u32, u32, u32, f64);

/// Bytes a pair takes in a run.
const RECORD: usize = 20;
/// Runs merged at once (open files, and one buffer each).
const FAN: usize = 32;
/// Each run's buffer, at most.
const MAX_BUF: usize = 64 << 10;

/// Pairs in `(a, b)` order: pushed in any order, read back sorted (see the module docs).
#[derive(Debug)]
pub struct PairSpill {
    dir: PathBuf,
    max: usize,
    buf: usize,
    held: Vec<Verified>,
    runs: Vec<std::fs::File>,
    total: u64,
}

impl PairSpill {
    /// Holding about `mem_bytes` (at least 1024 pairs and 4 KiB buffers): half for pairs
    /// waiting to be spilled, half for the buffers of the runs merged, spilling to files in
    /// `dir`.
    pub fn new(dir: &Path, mem_bytes: u64) -> PairSpill {
        let half = (mem_bytes / 2) as usize;
        PairSpill {
            dir: dir.to_path_buf(),
            max: (half / std::mem::size_of::<Verified>()).max(1024),
            buf: (half / FAN).clamp(4096, MAX_BUF),
            held: Vec::new(),
            runs: Vec::new(),
            total: 0,
        }
    }

    /// Bytes the held pairs may take, and the merge's buffers.
    pub fn memory_bytes(&self) -> u64 {
        (self.max * std::mem::size_of::<Verified>() + FAN * self.buf) as u64
    }

    /// Pairs pushed.
    pub fn len(&self) -> u64 {
        self.total
    }

    /// True when no pair was pushed.
    pub fn is_empty(&self) -> bool {
        self.total == 0
    }

    /// Add a pair.
    pub fn push(&mut self, p: (u32, u32, u32, f64)) -> Result<()> {
        if self.held.len() >= self.max {
            self.spill()?;
        }
        if self.held.capacity() == 0 {
            self.held.reserve_exact(self.max.min(1 << 16));
        }
        self.held.push(p);
        self.total += 1;
        Ok(())
    }

    /// The held pairs, sorted, as a run; runs merged into one when there are `FAN`.
    fn spill(&mut self) -> Result<()> {
        use rayon::slice::ParallelSliceMut;
        self.held.par_sort_unstable_by_key(|p| (p.0, p.1));
        let mut file = self.temp()?;
        {
            let mut w = BufWriter::with_capacity(self.buf, &mut file);
            for &p in &self.held {
                w.write_all(&encode(p)).map_err(|e| self.err("write", e))?;
            }
            w.flush().map_err(|e| self.err("write", e))?;
        }
        self.held.clear();
        self.runs.push(file);
        if self.runs.len() >= FAN {
            let mut merged = self.temp()?;
            let runs = std::mem::take(&mut self.runs);
            {
                let mut w = BufWriter::with_capacity(self.buf, &mut merged);
                self.merge(runs, Vec::new(), |p| {
                    w.write_all(&encode(p)).map_err(|e| self.err("write", e))
                })?;
                w.flush().map_err(|e| self.err("write", e))?;
            }
            self.runs.push(merged);
        }
        Ok(())
    }

    fn temp(&self) -> Result<std::fs::File> {
        tempfile::tempfile_in(&self.dir)
            .map_err(|e| Error::io_in_dir(&self.dir, "create a temporary file in", e))
    }

    fn err(&self, op: &'static str, e: std::io::Error) -> Error {
        Error::io_in_dir(&self.dir, op, e)
    }

    /// Call `f` with every pair, in `(a, b)` order.
    pub fn finish(mut self, mut f: impl FnMut((u32, u32, u32, f64)) -> Result<()>) -> Result<()> {
        use rayon::slice::ParallelSliceMut;
        let mut held = std::mem::take(&mut self.held);
        held.par_sort_unstable_by_key(|p| (p.0, p.1));
        let runs = std::mem::take(&mut self.runs);
        self.merge(runs, held, &mut f)
    }

    /// Merge sorted `runs` (files, read from their start) and the sorted `held` into `f`.
    fn merge(
        &self,
        runs: Vec<std::fs::File>,
        held: Vec<Verified>,
        mut f: impl FnMut(Verified) -> Result<()>,
    ) -> Result<()> {
        use std::cmp::Reverse;
        use std::collections::BinaryHeap;
        let mut readers = Vec::with_capacity(runs.len());
        for mut file in runs {
            file.rewind().map_err(|e| self.err("read", e))?;
            readers.push(BufReader::with_capacity(self.buf, file));
        }
        let mut held = held.into_iter().peekable();
        let mut heap = BinaryHeap::new();
        for (i, r) in readers.iter_mut().enumerate() {
            if let Some(p) = self.next(r)? {
                heap.push(Reverse(((p.0, p.1), i, p.2, p.3.to_bits())));
            }
        }
        loop {
            let from_held = match (heap.peek(), held.peek()) {
                (None, None) => return Ok(()),
                (None, Some(_)) => true,
                (Some(_), None) => false,
                (Some(Reverse((key, ..))), Some(h)) => (h.0, h.1) < *key,
            };
            if from_held {
                f(held.next().expect("peeked"))?;
                continue;
            }
            let Reverse(((a, b), i, d, jac)) = heap.pop().expect("peeked");
            f((a, b, d, f64::from_bits(jac)))?;
            if let Some(p) = self.next(&mut readers[i])? {
                heap.push(Reverse(((p.0, p.1), i, p.2, p.3.to_bits())));
            }
        }
    }

    /// The next pair of a run, or `None` at its end.
    fn next(&self, r: &mut BufReader<std::fs::File>) -> Result<Option<Verified>> {
        let mut buf = [0u8; RECORD];
        match r.read_exact(&mut buf) {
            Ok(()) => Ok(Some(decode(&buf))),
            Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => Ok(None),
            Err(e) => Err(self.err("read", e)),
        }
    }
}

fn encode(p: Verified) -> [u8; RECORD] {
    let mut b = [0u8; RECORD];
    b[0..4].copy_from_slice(&p.0.to_le_bytes());
    b[4..8].copy_from_slice(&p.1.to_le_bytes());
    b[8..12].copy_from_slice(&p.2.to_le_bytes());
    b[12..20].copy_from_slice(&p.3.to_le_bytes());
    b
}

fn decode(b: &[u8; RECORD]) -> Verified {
    let word = |i: usize| u32::from_le_bytes(b[i..i + 4].try_into().expect("4 bytes"));
    (
        word(0),
        word(4),
        word(8),
        f64::from_le_bytes(b[12..20].try_into().expect("8 bytes")),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spilled_runs_merge_in_order() {
        let dir = tempfile::tempdir().unwrap();
        let mut next = crate::dedup::xorshift(7);
        // 1024 pairs a run: about 170 runs, so cascades of FAN runs into one.
        let mut s = PairSpill::new(dir.path(), 1);
        let mut want = Vec::new();
        for _ in 0..170_000 {
            let x = next();
            let p = (
                (x % 5000) as u32,
                (x >> 20) as u32 % 5000 + 5000,
                (x >> 40) as u32 % 8,
                (x >> 50) as f64,
            );
            want.push(p);
            s.push(p).unwrap();
        }
        assert_eq!(s.len(), 170_000);
        want.sort_by_key(|p| (p.0, p.1));
        let mut got = Vec::new();
        s.finish(|p| {
            got.push(p);
            Ok(())
        })
        .unwrap();
        let key = |v: &[Verified]| v.iter().map(|p| (p.0, p.1)).collect::<Vec<_>>();
        assert_eq!(key(&got), key(&want));
        let mut a = got.clone();
        let mut b = want.clone();
        a.sort_by(|x, y| x.partial_cmp(y).unwrap());
        b.sort_by(|x, y| x.partial_cmp(y).unwrap());
        assert_eq!(a, b);
    }
}
