//! Reading ahead when the tables are not in memory.
//!
//! A CPU prefetch never faults a page in, so when an index's files are not in the page cache a
//! query's t probes each wait for their own disk read, one after another. For that case the
//! query first asks the kernel for every probe's block (`madvise(MADV_WILLNEED)`: asynchronous
//! reads, all in flight at once) and then decodes. The hint costs a system call per probe, so it
//! is made only while a sample of the tables' pages (`mincore`) says they are not resident.

use super::reader::Table;

/// Pages sampled per table to judge residency.
const SAMPLES: usize = 16;

impl<D: AsRef<[u8]>> Table<D> {
    /// Ask the kernel to start reading block `i` (in range) if it is not in memory. A hint:
    /// no effect on results; a no-op off Unix.
    #[inline]
    pub(crate) fn will_need_block(&self, i: u64) {
        will_need(self.block_bytes(i));
    }

    /// The fraction of a sample of the table's pages that is in memory (1.0 off Unix, and for
    /// tables read into the heap).
    pub(crate) fn resident_fraction(&self) -> f64 {
        resident_fraction(self.bytes())
    }
}

#[cfg(unix)]
fn page() -> usize {
    // SAFETY: sysconf has no preconditions.
    let p = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    if p > 0 { p as usize } else { 4096 }
}

#[cfg(unix)]
fn will_need(bytes: &[u8]) {
    if bytes.is_empty() {
        return;
    }
    let pg = page();
    let start = bytes.as_ptr() as usize & !(pg - 1);
    let end = bytes.as_ptr() as usize + bytes.len();
    // SAFETY: the range covers pages of a live mapping (the slice's); MADV_WILLNEED only
    // schedules reads and never changes contents. Errors (e.g. heap memory) are ignored.
    unsafe {
        libc::madvise(start as *mut libc::c_void, end - start, libc::MADV_WILLNEED);
    }
}

#[cfg(not(unix))]
fn will_need(_: &[u8]) {}

#[cfg(unix)]
fn resident_fraction(bytes: &[u8]) -> f64 {
    let pg = page();
    if bytes.len() < pg {
        return 1.0;
    }
    let base = bytes.as_ptr() as usize & !(pg - 1);
    let pages = (bytes.as_ptr() as usize + bytes.len() - base).div_ceil(pg);
    let mut resident = 0;
    let mut asked = 0;
    for s in 0..SAMPLES.min(pages) {
        let at = base + (s * pages / SAMPLES.min(pages)) * pg;
        let mut v = 0u8;
        // SAFETY: one page of a live mapping, one byte of output.
        let r = unsafe { libc::mincore(at as *mut libc::c_void, pg, &mut v) };
        if r == 0 {
            asked += 1;
            resident += usize::from(v & 1 == 1);
        }
    }
    if asked == 0 {
        1.0
    } else {
        resident as f64 / asked as f64
    }
}

#[cfg(not(unix))]
fn resident_fraction(_: &[u8]) -> f64 {
    1.0
}
