//! A file writer whose writes reach the file as whole, aligned 2 MiB chunks, so that a table
//! just written can be mapped in 2 MiB pages.
//!
//! A mapped table is read at random: every probe's block is on a page of its own, and with
//! 4 KiB pages each costs a page walk (at 100M keys, a populated map of a table cached in
//! 2 MiB pages answered in 0.85x the time of the same bytes cached in 4 KiB ones, on a 2-core
//! VM, docs/log/benchmarks.md, “a directory that names the block”). Linux can map a file in 2 MiB
//! pages only where its page cache
//! holds it in 2 MiB folios, and the page cache (ext4 and xfs on recent kernels) sizes a file's
//! folios after the writes that filled it: 8 KiB writes leave 8 KiB folios, which no later
//! reader of the file can map in 2 MiB pages until they are evicted. A table written through
//! [`ChunkWriter`] is written in aligned 2 MiB `pwrite`s (all but its ends and what a seek
//! rewrites), so it is cached in 2 MiB folios from the start. Elsewhere it is a plain buffered
//! writer: the bytes on disk are the same.

use std::fs::File;
use std::io::{self, Seek, SeekFrom, Write};

/// The chunk: the size of an x86-64 huge page.
const CHUNK: usize = 2 << 20;

/// A buffered writer over `File` that writes whole aligned [`CHUNK`]s where the writes are
/// sequential. Seeks are allowed; a seek writes out what is buffered first.
#[derive(Debug)]
pub(crate) struct ChunkWriter {
    file: File,
    /// The chunk at `base`: bytes `lo..hi` of it are buffered, not yet written.
    buf: Vec<u8>,
    base: u64,
    lo: usize,
    /// The position, `base + cur`, within `lo..=hi`.
    cur: usize,
    hi: usize,
}

impl ChunkWriter {
    /// A writer at the start of `file`.
    pub(crate) fn new(file: File) -> ChunkWriter {
        ChunkWriter {
            file,
            buf: vec![0; CHUNK],
            base: 0,
            lo: 0,
            cur: 0,
            hi: 0,
        }
    }

    /// Write the buffered bytes out; the position stays.
    fn write_out(&mut self) -> io::Result<()> {
        if self.hi > self.lo {
            write_at(
                &self.file,
                &self.buf[self.lo..self.hi],
                self.base + self.lo as u64,
            )?;
        }
        self.lo = self.cur;
        self.hi = self.cur;
        Ok(())
    }
}

impl Write for ChunkWriter {
    fn write(&mut self, data: &[u8]) -> io::Result<usize> {
        let n = data.len().min(CHUNK - self.cur);
        self.buf[self.cur..self.cur + n].copy_from_slice(&data[..n]);
        self.cur += n;
        self.hi = self.hi.max(self.cur);
        if self.cur == CHUNK {
            self.write_out()?;
            self.base += CHUNK as u64;
            (self.lo, self.cur, self.hi) = (0, 0, 0);
        }
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.write_out()
    }
}

impl Seek for ChunkWriter {
    fn seek(&mut self, to: SeekFrom) -> io::Result<u64> {
        let here = self.base + self.cur as u64;
        let target = match to {
            SeekFrom::Start(n) => Some(n),
            SeekFrom::Current(d) => here.checked_add_signed(d),
            SeekFrom::End(d) => {
                let end = self.file.metadata()?.len().max(self.base + self.hi as u64);
                end.checked_add_signed(d)
            }
        };
        let target = target.ok_or_else(|| {
            io::Error::new(io::ErrorKind::InvalidInput, "seek to a negative position")
        })?;
        self.write_out()?;
        self.base = target - target % CHUNK as u64;
        let at = (target - self.base) as usize;
        (self.lo, self.cur, self.hi) = (at, at, at);
        Ok(target)
    }
}

/// Write all of `data` at `offset` of `file`, leaving its cursor alone.
#[cfg(unix)]
fn write_at(file: &File, data: &[u8], offset: u64) -> io::Result<()> {
    std::os::unix::fs::FileExt::write_all_at(file, data, offset)
}

/// Write all of `data` at `offset` of `file`.
#[cfg(not(unix))]
fn write_at(mut file: &File, data: &[u8], offset: u64) -> io::Result<()> {
    file.seek(SeekFrom::Start(offset))?;
    file.write_all(data)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Cursor, Read};

    /// Random writes of every size, seeks back and forward (past the end too): the file ends up
    /// byte for byte as a `Cursor` given the same calls.
    #[test]
    fn writes_what_a_cursor_holds() {
        let mut x = 0x853c_49e6_748f_ea9bu64;
        let mut rand = move |n: u64| crate::sample::splitmix64(&mut x) % n;
        for round in 0..6 {
            let tmp = tempfile::tempfile().unwrap();
            let mut w = ChunkWriter::new(tmp.try_clone().unwrap());
            let mut want = Cursor::new(Vec::new());
            let mut len = 0u64;
            for step in 0..300 {
                let size = match rand(4) {
                    0 => rand(16) as usize,
                    1 => rand(5000) as usize,
                    2 => 4096,
                    _ => rand(3 * CHUNK as u64) as usize,
                };
                let data: Vec<u8> = (0..size).map(|i| (i as u64 + step + round) as u8).collect();
                if rand(10) == 0 {
                    let to = match rand(3) {
                        0 => SeekFrom::Start(rand(len + 10)),
                        1 => SeekFrom::End(-(rand(len.min(5000) + 1) as i64)),
                        _ => SeekFrom::Current(-(rand(100).min(want.position()) as i64)),
                    };
                    assert_eq!(w.seek(to).unwrap(), want.seek(to).unwrap());
                }
                w.write_all(&data).unwrap();
                want.write_all(&data).unwrap();
                len = len.max(want.position());
            }
            w.flush().unwrap();
            let mut got = Vec::new();
            let mut f = tmp;
            f.seek(SeekFrom::Start(0)).unwrap();
            f.read_to_end(&mut got).unwrap();
            assert!(got == want.into_inner(), "round {round}");
        }
    }

    #[test]
    fn sequential_writes_go_out_in_whole_chunks() {
        let tmp = tempfile::tempfile().unwrap();
        let mut w = ChunkWriter::new(tmp.try_clone().unwrap());
        w.write_all(&vec![7; CHUNK + 100]).unwrap();
        // One whole chunk written, the rest buffered.
        assert_eq!(tmp.metadata().unwrap().len(), CHUNK as u64);
        w.write_all(&vec![8; CHUNK - 100]).unwrap();
        assert_eq!(tmp.metadata().unwrap().len(), 2 * CHUNK as u64);
        assert!(w.seek(SeekFrom::Current(-(3 * CHUNK as i64))).is_err());
    }
}
