//! Footprint: bits per fingerprint on disk and reader heap, per codec and block size, against raw
//! 64 bits and the information bound, extrapolated to 8 × 10^9 fingerprints (64 GB raw).
//!
//! `cargo bench --bench footprint` (n = 1M, 10M);
//! `SIMDEX_FOOTPRINT_SIZES=1000000,10000000,100000000,1000000000 cargo bench --bench footprint`
//! for the opt-in series (1B needs ~9 GB of RAM for the sorted keys and ~6 GB of disk per table;
//! tables are built one at a time and deleted after measuring).
//!
//! Memory is not a criterion measurement: this binary prints markdown tables. Reader heap is
//! measured with a counting global allocator around `Table::open` (the mmap'd file itself is
//! page cache, not heap).
//!
//! Extrapolation to n = 8 × 10^9: the information bound log2 C(2^64, n) / n falls by almost
//! exactly log2 of the scale factor (64 − log2 n + log2 e), and the codecs' excess over the bound
//! is nearly independent of n (the second table checks that on the measured series), so
//! bits(8e9) = bound(8e9) + excess(largest n measured). Keys per block scale inversely with bits
//! per key, which gives the reader's memory at 8e9: the last-key array (8 bytes per block) and
//! its search directory (at most 1 byte per block).

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};

use simdex::codec::Codec;
use simdex::design::Design;
use simdex::sample;
use simdex::table::{self, Table, TableOptions, information_bound};

struct Counting;

static HEAP: AtomicUsize = AtomicUsize::new(0);

// SAFETY: defers to the system allocator; only counts bytes.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        HEAP.fetch_add(l.size(), Ordering::Relaxed);
        unsafe { System.alloc(l) }
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        HEAP.fetch_sub(l.size(), Ordering::Relaxed);
        unsafe { System.dealloc(p, l) }
    }
    unsafe fn alloc_zeroed(&self, l: Layout) -> *mut u8 {
        HEAP.fetch_add(l.size(), Ordering::Relaxed);
        unsafe { System.alloc_zeroed(l) }
    }
    unsafe fn realloc(&self, p: *mut u8, l: Layout, new: usize) -> *mut u8 {
        HEAP.fetch_add(new, Ordering::Relaxed);
        HEAP.fetch_sub(l.size(), Ordering::Relaxed);
        unsafe { System.realloc(p, l, new) }
    }
}

#[global_allocator]
static ALLOC: Counting = Counting;

const N_8E9: u64 = 8_000_000_000;

struct Row {
    n: u64,
    codec: Codec,
    block: u32,
    bits: f64,
    heap: u64,
    keys_per_block: f64,
}

fn main() {
    if std::env::args().any(|a| a == "--test" || a == "--list") {
        return;
    }
    let sizes: Vec<u64> = std::env::var("SIMDEX_FOOTPRINT_SIZES")
        .ok()
        .map(|s| s.split(',').filter_map(|x| x.trim().parse().ok()).collect())
        .unwrap_or_else(|| vec![1_000_000, 10_000_000]);
    let dir = tempfile::tempdir().unwrap();
    let mut rows = Vec::new();
    println!(
        "| n | codec | B | bits/fp on disk | % of raw 64 | bound | excess | reader heap | heap bits/fp |"
    );
    println!("|---|---|---|---|---|---|---|---|---|");
    for &n in &sizes {
        let mut keys = sample::random(n as usize, n);
        keys.sort_unstable();
        keys.dedup();
        let bound = information_bound(keys.len() as u64);
        for codec in Codec::ALL {
            for block in [256u32, 1024, 4096] {
                let path = dir.path().join("t.sxt");
                let opts = TableOptions::default()
                    .with_block_size(block)
                    .with_codec(codec);
                table::build_file(&path, &opts, || Ok(keys.iter().map(|&k| Ok(k)))).unwrap();
                let before = HEAP.load(Ordering::Relaxed);
                let t = Table::open(&path).unwrap();
                let heap = (HEAP.load(Ordering::Relaxed) - before) as u64;
                let st = t.stats();
                let row = Row {
                    n: st.keys,
                    codec,
                    block,
                    bits: st.bits_per_key,
                    heap,
                    keys_per_block: st.keys as f64 / st.blocks as f64,
                };
                println!(
                    "| {} | {} | {} | {:.2} | {:.1}% | {:.2} | {:+.2} | {:.2} MiB | {:.3} |",
                    row.n,
                    codec,
                    block,
                    row.bits,
                    row.bits / 64.0 * 100.0,
                    bound,
                    row.bits - bound,
                    row.heap as f64 / 1048576.0,
                    row.heap as f64 * 8.0 / st.keys as f64
                );
                drop(t);
                std::fs::remove_file(&path).unwrap();
                rows.push(row);
            }
        }
    }

    // Check the extrapolation rule on the measured series: predict each larger n from the
    // smallest n by shifting with the bound, and compare.
    println!();
    println!(
        "Extrapolation check: bits predicted from n = {} by bound shift vs measured",
        sizes[0]
    );
    println!();
    println!("| codec | B | n | predicted bits/fp | measured | error |");
    println!("|---|---|---|---|---|---|");
    for r in rows.iter().filter(|r| r.n != rows[0].n) {
        let base = rows
            .iter()
            .find(|b| b.n == rows[0].n && b.codec == r.codec && b.block == r.block)
            .unwrap();
        let predicted = base.bits - information_bound(base.n) + information_bound(r.n);
        println!(
            "| {} | {} | {} | {:.2} | {:.2} | {:+.2} |",
            r.codec,
            r.block,
            r.n,
            predicted,
            r.bits,
            r.bits - predicted
        );
    }

    // Extrapolate from the largest n measured.
    let largest = rows.iter().map(|r| r.n).max().unwrap();
    let bound8 = information_bound(N_8E9);
    println!();
    println!(
        "Extrapolated to n = 8e9 (raw: 64 GB per table; bound {bound8:.2} bits/fp), from n = {largest}:"
    );
    println!();
    print!("| codec | B | bits/fp | GB per table | % of raw |");
    let designs: Vec<Design> = ["4", "10", "16", "20"]
        .iter()
        .map(|d| Design::by_name(d, 3).unwrap())
        .collect();
    for d in &designs {
        print!(" design {} ({} tables) GB |", d.name(), d.tables().len());
    }
    println!(" RAM per table (last keys, directory) | RAM, 20 tables |");
    print!("|---|---|---|---|---|");
    for _ in &designs {
        print!("---|");
    }
    println!("---|---|");
    for r in rows.iter().filter(|r| r.n == largest) {
        let bits = bound8 + (r.bits - information_bound(r.n));
        let gb = N_8E9 as f64 * bits / 8.0 / 1e9;
        let kpb = r.keys_per_block * r.bits / bits;
        let ram = N_8E9 as f64 / kpb * 9.0;
        print!(
            "| {} | {} | {:.2} | {:.1} | {:.1}% |",
            r.codec,
            r.block,
            bits,
            gb,
            bits / 64.0 * 100.0
        );
        for d in &designs {
            print!(" {:.0} |", gb * d.tables().len() as f64);
        }
        println!(" {:.2} GB | {:.1} GB |", ram / 1e9, ram * 20.0 / 1e9);
    }
}
