//! Indexes: build one from fingerprints, open it read-only (mapped or in memory), and query it.

use std::ffi::c_char;

use memmap2::Mmap;
use simdex::{BuildOptions, Index, Match};

use crate::ffi::*;
use crate::results::{Rows, simdex_rows};

/// Open the index in memory (read whole at open) instead of mapping its files.
pub const SIMDEX_INDEX_IN_MEMORY: u32 = 1;
/// Map the index and read it into the page cache at open, so first queries do not fault.
pub const SIMDEX_INDEX_POPULATE: u32 = 2;

/// An index open read-only: a set of fingerprints and its permuted tables.
pub struct simdex_index {
    magic: u64,
    inner: Opened,
}

enum Opened {
    Mapped(Index<Mmap>),
    Memory(Index<Vec<u8>>),
}

impl Tagged for simdex_index {
    const MAGIC: u64 = INDEX_MAGIC;
    const KIND: &'static str = "simdex_index";
    fn magic(&self) -> u64 {
        self.magic
    }
}

/// The same call on either kind of index.
macro_rules! either {
    ($h:expr, $i:ident => $e:expr) => {
        match &$h.inner {
            Opened::Mapped($i) => $e,
            Opened::Memory($i) => $e,
        }
    };
}

impl simdex_index {
    fn k_or_default(&self, k: u32) -> u32 {
        match k {
            SIMDEX_K_DEFAULT => either!(self, i => i.design().k()),
            k => k,
        }
    }
}

/// Build an index at `path` (which must not exist) from `n` fingerprints, in any order
/// (repeats are kept once), for queries within `k` bits (the design is chosen for `k` and `n`).
/// Writes in a staging directory and renames it into place: a failed or cancelled build leaves
/// nothing behind.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn simdex_index_build(
    path: *const c_char,
    fingerprints: *const u64,
    n: usize,
    k: u32,
    cancel: *const simdex_cancel,
    err: *mut *mut c_char,
) -> simdex_status {
    unsafe {
        guard(err, || {
            let dir = path_arg(path)?;
            let fps = slice(fingerprints, n, "fingerprints")?;
            let watch = Watch(cancel_of(cancel)?);
            let opts = BuildOptions::default()
                .with_k(k)
                .with_progress(watch.progress());
            simdex::build_index(&dir, fps.iter().map(|&f| Ok(f)), &opts)?;
            Ok(())
        })
    }
}

/// Open the index at `path`; `flags` is 0 or a combination of `SIMDEX_INDEX_` flags. On
/// success `*out` is the handle, for `simdex_index_close`. Thread-safe: any number of threads
/// may query one handle at once.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn simdex_index_open(
    path: *const c_char,
    flags: u32,
    out: *mut *mut simdex_index,
    err: *mut *mut c_char,
) -> simdex_status {
    unsafe {
        guard(err, || {
            let slot = crate::ffi::out(out, "out")?;
            let dir = path_arg(path)?;
            if flags & !(SIMDEX_INDEX_IN_MEMORY | SIMDEX_INDEX_POPULATE) != 0 {
                return invalid(format!("unknown index flags {flags:#x}"));
            }
            let inner = match flags & SIMDEX_INDEX_IN_MEMORY {
                0 => Opened::Mapped(Index::open_with(
                    &dir,
                    &simdex::OpenOptions::default()
                        .with_populate(flags & SIMDEX_INDEX_POPULATE != 0),
                )?),
                _ => Opened::Memory(Index::open_in_memory(&dir)?),
            };
            *slot = Box::into_raw(Box::new(simdex_index {
                magic: INDEX_MAGIC,
                inner,
            }));
            Ok(())
        })
    }
}

/// Close an index and free its handle (NULL is ignored). The last call on the handle.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn simdex_index_close(index: *mut simdex_index) -> simdex_status {
    unsafe {
        guard(std::ptr::null_mut(), || {
            if !index.is_null() {
                handle(index.cast_const(), "the index")?;
                let mut b = Box::from_raw(index);
                b.magic = 0;
            }
            Ok(())
        })
    }
}

/// Every stored fingerprint within `k` bits of `fingerprint` (`SIMDEX_K_DEFAULT`: the design's
/// k), by distance then value. `*len` is set to their number; the first `min(*len, cap)` are
/// written to `fingerprints` and `distances` (each of `cap` elements; NULL when `cap` is 0).
/// When `*len > cap`, call again with a larger buffer. Thread-safe.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn simdex_index_near(
    index: *const simdex_index,
    fingerprint: u64,
    k: u32,
    fingerprints: *mut u64,
    distances: *mut u32,
    cap: usize,
    len: *mut usize,
    err: *mut *mut c_char,
) -> simdex_status {
    unsafe {
        guard(err, || {
            let idx = handle(index, "the index")?;
            let fps = slice_mut(fingerprints, cap, "fingerprints")?;
            let ds = slice_mut(distances, cap, "distances")?;
            let n = crate::ffi::out(len, "len")?;
            let k = idx.k_or_default(k);
            let m: Vec<Match> = either!(idx, i => i.near(fingerprint, k))?;
            for (j, x) in m.iter().take(cap).enumerate() {
                fps[j] = x.fingerprint;
                ds[j] = x.distance;
            }
            *n = m.len();
            Ok(())
        })
    }
}

/// `*found` = 1 if some stored fingerprint is within `k` bits of `fingerprint`, else 0.
/// Thread-safe.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn simdex_index_has_near(
    index: *const simdex_index,
    fingerprint: u64,
    k: u32,
    found: *mut i32,
    err: *mut *mut c_char,
) -> simdex_status {
    unsafe {
        guard(err, || {
            let idx = handle(index, "the index")?;
            let f = crate::ffi::out(found, "found")?;
            let k = idx.k_or_default(k);
            *f = either!(idx, i => i.has_near(fingerprint, k))? as i32;
            Ok(())
        })
    }
}

/// The matches of `n` queries, on all cores: `*out` gets rows without ids, for
/// `simdex_rows_free`. Cancellable; thread-safe.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn simdex_index_near_many(
    index: *const simdex_index,
    fingerprints: *const u64,
    n: usize,
    k: u32,
    cancel: *const simdex_cancel,
    out: *mut *mut simdex_rows,
    err: *mut *mut c_char,
) -> simdex_status {
    unsafe {
        guard(err, || {
            let idx = handle(index, "the index")?;
            let qs = slice(fingerprints, n, "fingerprints")?;
            let slot = crate::ffi::out(out, "out")?;
            let watch = Watch(cancel_of(cancel)?);
            let k = idx.k_or_default(k);
            let r = either!(idx, i => i.near_many_with(qs, k, &watch.progress()))?;
            let rows = Rows {
                offsets: r.offsets.iter().map(|&o| o as u64).collect(),
                fingerprints: r.matches.iter().map(|m| m.fingerprint).collect(),
                distances: r.matches.iter().map(|m| m.distance).collect(),
                ids: None,
            };
            *slot = rows.into_raw();
            Ok(())
        })
    }
}

/// What `simdex_index_get_stats` reports.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct simdex_index_stats {
    /// Fingerprints stored.
    pub keys: u64,
    /// The largest distance the design answers.
    pub k: u32,
    /// Permuted tables.
    pub tables: u32,
    /// Fingerprints per block.
    pub block_size: u32,
    /// Bytes of the table files.
    pub disk_bytes: u64,
    /// Bytes the index holds in memory (the block-key arrays; the tables are mapped).
    pub memory_bytes: u64,
}

/// Sizes of the index. Thread-safe.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn simdex_index_get_stats(
    index: *const simdex_index,
    out: *mut simdex_index_stats,
    err: *mut *mut c_char,
) -> simdex_status {
    unsafe {
        guard(err, || {
            let idx = handle(index, "the index")?;
            let slot = crate::ffi::out(out, "out")?;
            let s = either!(idx, i => i.stats());
            *slot = simdex_index_stats {
                keys: s.keys,
                k: s.k,
                tables: s.tables as u32,
                block_size: s.block_size,
                disk_bytes: s.disk_bytes,
                memory_bytes: s.memory_bytes,
            };
            Ok(())
        })
    }
}

/// A directory argument.
pub(crate) unsafe fn path_arg(p: *const c_char) -> Result<std::path::PathBuf> {
    unsafe { crate::ffi::path(p, "path") }
}
