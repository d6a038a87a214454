//! `populate`: every table page mapped at open, answers unchanged. Its own test binary with one
//! test, so that nothing else maps or unmaps files in this process while the resident set is
//! measured. (The store's `populate` is tested in `store.rs`.)

use crate::common;

use common::*;
use simdex::Index;
use simdex::index::{self, BuildOptions, DesignChoice, OpenOptions};

/// Bytes of file-backed pages mapped into this process (`RssFile`), where Linux says.
fn rss_file() -> Option<u64> {
    let s = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = s.lines().find(|l| l.starts_with("RssFile:"))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}

/// Ask the kernel to drop the cached pages of every file in `dir` that no map holds (Linux;
/// elsewhere nothing).
fn evict(dir: &std::path::Path) {
    #[cfg(target_os = "linux")]
    for e in std::fs::read_dir(dir).unwrap() {
        use std::os::fd::AsRawFd;
        let f = std::fs::File::open(e.unwrap().path()).unwrap();
        // SAFETY: a valid descriptor; the advice changes what is cached, never a file's bytes.
        unsafe { libc::posix_fadvise(f.as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED) };
    }
    #[cfg(not(target_os = "linux"))]
    let _ = dir;
}

#[test]
fn populate_maps_every_page_at_open_and_answers_alike() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("idx");
    let mut s = 3;
    // Tables of about 16 MiB: a plain open reads each one's header and footer, and where the
    // page cache holds a table in 2 MiB folios (tables are written in 2 MiB chunks, so that it
    // does), mapping a page of one maps the whole folio; three folios a table are then still
    // well under half of it.
    let fps = random_keys(3_000_000, 8);
    let opts = BuildOptions::default()
        .with_design(DesignChoice::Named("4".into()))
        .with_block_size(Some(256));
    index::build(&path, fps.iter().map(|&f| Ok(f)), &opts).unwrap();
    let bytes: u64 = std::fs::read_dir(&path)
        .unwrap()
        .map(|e| e.unwrap().metadata().unwrap().len())
        .sum();
    assert!(bytes > 64 << 20, "the index is {bytes} bytes");

    // Run the open path once first: its code pages are file-backed too.
    drop(Index::open(&path).unwrap());
    let before = rss_file();
    let plain = Index::open(&path).unwrap();
    let after_plain = rss_file();
    // Most of the tables out of the page cache first (what no map holds), so that populate
    // reads them from disk, as a service's restart does (through a map of its own that asks
    // for 2 MiB folios, `os::read_in_huge_folios`).
    evict(&path);
    let populated = Index::open_with(&path, &OpenOptions::default().with_populate(true)).unwrap();
    let after_populated = rss_file();
    if cfg!(target_os = "linux")
        && let (Some(a), Some(b), Some(c)) = (before, after_plain, after_populated)
    {
        // A plain open reads headers and footers (8 bytes per 256-byte block), with the
        // kernel's fault-around (or whole 2 MiB folios); populate maps everything.
        assert!(b - a < bytes / 2, "plain open mapped {} of {bytes}", b - a);
        assert!(
            c - b >= bytes * 9 / 10,
            "populate mapped {} of {bytes} bytes",
            c - b
        );
    }
    for i in 0..2_000usize {
        let q = match i % 3 {
            0 => flip_bits(fps[i * 101 % fps.len()], (i % 4) as u32, &mut s),
            1 => splitmix(&mut s),
            _ => fps[i * 7 % fps.len()],
        };
        assert_eq!(populated.near(q, 3).unwrap(), plain.near(q, 3).unwrap());
    }
    populated.verify().unwrap();
}
