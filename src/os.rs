//! The operating system's memory and writeback hints, a leaf module (nothing of simdex below
//! it): reading ahead when the tables are not in memory, huge pages for the in-memory last-key
//! arrays, tables read into memory, populated table maps and in-memory hash tables, and
//! writeback started while a large file is written.
//!
//! A CPU prefetch never faults a page in, so when an index's files are not in the page cache a
//! query's t probes each wait for their own disk read, one after another. For that case the
//! query first asks the kernel for every probe's block (`madvise(MADV_WILLNEED)`: asynchronous
//! reads, all in flight at once) and then decodes. The hint costs a system call per probe, so it
//! is made only while a sample of the tables' pages (`mincore`) says they are not resident.

/// Pages sampled per mapping to judge residency.
const SAMPLES: usize = 16;

/// Ask for transparent huge pages under `v`'s buffer (Linux; a no-op elsewhere, for buffers
/// under 2 MiB, and where the kernel declines). Call before the buffer is written: pages are
/// chosen when first touched.
///
/// Every probe searches a last-key array at a random place. At 100M fingerprints those arrays
/// are 16 MiB per table, so with 4 KiB pages each probe also misses the TLB and walks the page
/// tables; 2 MiB pages cover them in a few dozen TLB entries. Measured at 100M (design 10, one
/// thread, interleaved pairs): about 1.1x (docs/log/benchmarks.md).
pub(crate) fn huge_pages<T>(v: &mut Vec<T>) {
    #[cfg(target_os = "linux")]
    {
        const HUGE: usize = 2 << 20;
        let bytes = v.capacity() * std::mem::size_of::<T>();
        if bytes < HUGE {
            return;
        }
        let pg = page();
        let p = v.as_mut_ptr() as usize;
        let start = (p + pg - 1) & !(pg - 1);
        let end = (p + bytes) & !(pg - 1);
        // SAFETY: the range lies inside the vector's own allocation; MADV_HUGEPAGE changes how
        // pages are backed, never their contents. Errors (no THP in this kernel) are ignored.
        unsafe {
            libc::madvise(start as *mut libc::c_void, end - start, libc::MADV_HUGEPAGE);
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = v;
}

/// Read `file` whole into a buffer in transparent huge pages where the kernel allows
/// ([`huge_pages`]): for a table read into memory, whose probes each touch a random page (the
/// TLB covers 2 MiB pages where it covers only a few MiB of 4 KiB ones).
/// Only a regular file is read, and only its length when opened: a device or a pipe would
/// otherwise be read for ever.
pub(crate) fn read_into_huge_pages(file: std::fs::File) -> std::io::Result<Vec<u8>> {
    use std::io::{Error, ErrorKind, Read};
    let meta = file.metadata()?;
    if !meta.is_file() {
        return Err(Error::new(ErrorKind::InvalidInput, "not a regular file"));
    }
    let len = meta.len();
    let too_big = || Error::new(ErrorKind::OutOfMemory, format!("no memory for {len} bytes"));
    let mut v = Vec::new();
    v.try_reserve_exact(usize::try_from(len).map_err(|_| too_big())?)
        .map_err(|_| too_big())?;
    huge_pages(&mut v);
    file.take(len).read_to_end(&mut v)?;
    Ok(v)
}

/// Read what is not yet cached of a file mapping (`bytes`, a whole map from its page-aligned
/// start) into the page cache in 2 MiB folios (Linux 5.14 on: `MADV_HUGEPAGE`, then
/// `MADV_POPULATE_READ`; elsewhere, or where the kernel declines, nothing). The map is the
/// caller's to drop: a map of the same file made afterwards with `MAP_POPULATE` enters the
/// 2 MiB folios in 2 MiB pages, with no hint left on it.
///
/// A populated table is read at random, a block a probe, and with 4 KiB pages every probe
/// also walks the page tables. Linux maps a file in 2 MiB pages only where its page cache
/// holds 2 MiB folios, and a cold file read by `MAP_POPULATE` gets folios as large as its
/// read-ahead window: with the common 128 KiB window, none of 2 MiB; here (8 MiB) none for
/// the 6 MiB tables of a 1M-key index. With `MADV_HUGEPAGE` set before the read, a fault
/// reads a whole 2 MiB folio. Pages already in the cache keep their folios (a warm file maps
/// as it is cached), and a kernel that finds no free 2 MiB of memory falls back to small
/// ones. The reader's own map does not carry the hint: under it, a page evicted later would
/// fault back in with its whole 2 MiB.
pub(crate) fn read_in_huge_folios(bytes: &[u8]) {
    // A file whose sampled pages are all cached is left as it is cached (mapping it twice
    // would only double the open's page-table work).
    #[cfg(target_os = "linux")]
    if !bytes.is_empty() && resident_fraction(bytes) < 1.0 {
        let (start, len) = (bytes.as_ptr() as *mut libc::c_void, bytes.len());
        // SAFETY: the range is a live mapping's (the slice's, which starts at the map's
        // page-aligned start); both hints change how pages are backed and when they are read,
        // never their contents. A failed hint is not an error: the caller's populated map
        // reads the file anyway.
        unsafe {
            libc::madvise(start, len, libc::MADV_HUGEPAGE);
            libc::madvise(start, len, libc::MADV_POPULATE_READ);
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = bytes;
}

#[cfg(unix)]
fn page() -> usize {
    // SAFETY: sysconf has no preconditions.
    let p = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    if p > 0 { p as usize } else { 4096 }
}

/// Ask the kernel to start reading the pages under `bytes` (a hint: no effect on contents; a
/// no-op off Unix and for heap memory).
#[cfg(unix)]
pub(crate) fn will_need(bytes: &[u8]) {
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
pub(crate) fn will_need(_: &[u8]) {}

/// The fraction of a sample of the pages under `bytes` that is in memory (1.0 off Unix, and for
/// buffers under a page).
#[cfg(unix)]
pub(crate) fn resident_fraction(bytes: &[u8]) -> f64 {
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
pub(crate) fn resident_fraction(_: &[u8]) -> f64 {
    1.0
}

/// Give the heap's free memory back to the system. A compaction frees a delta's worth of small
/// allocations, made and freed on different threads; glibc keeps them in its arenas, where
/// they counted as the process's memory until reused (measured: 100 MB of an exact ingest's
/// 1.06 GB peak at 1M documents).
pub(crate) fn release_free_heap() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim only returns free memory to the system; it is thread-safe.
    unsafe {
        libc::malloc_trim(0);
    }
}

/// A writer to a file that asks the kernel to start writing back every [`WRITEBACK_STEP`]
/// bytes written through it (`sync_file_range(SYNC_FILE_RANGE_WRITE)`: asynchronous; Linux;
/// a plain writer elsewhere), so that the fsync that ends a large write waits for its last
/// few megabytes, not all of it, while the writer's thread has CPU work to do meanwhile.
pub(crate) struct Writeback<'f> {
    file: &'f std::fs::File,
    /// The file offset of the next byte, and of the first not yet handed to writeback.
    at: u64,
    started: u64,
}

/// Bytes between two writeback requests.
const WRITEBACK_STEP: u64 = 8 << 20;

impl<'f> Writeback<'f> {
    /// Writes to `file` (opened to append, or positioned) whose next byte is at offset `at`.
    pub(crate) fn new(file: &'f std::fs::File, at: u64) -> Writeback<'f> {
        Writeback {
            file,
            at,
            started: at,
        }
    }
}

impl std::io::Write for Writeback<'_> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let n = (&mut &*self.file).write(buf)?;
        self.at += n as u64;
        if self.at - self.started >= WRITEBACK_STEP {
            #[cfg(target_os = "linux")]
            {
                use std::os::fd::AsRawFd;
                // SAFETY: a plain system call on an open descriptor; it reads no memory of
                // ours. A failure is harmless (the final fsync writes everything anyway).
                unsafe {
                    libc::sync_file_range(
                        self.file.as_raw_fd(),
                        self.started as libc::off64_t,
                        (self.at - self.started) as libc::off64_t,
                        libc::SYNC_FILE_RANGE_WRITE,
                    );
                }
            }
            self.started = self.at;
        }
        Ok(n)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}
