//! The Rust side of the bindings' call benchmark (benches/bindings.sh runs every language on
//! the same index and queries): `Index::near_many` in batches of 1,000 and `Index::near`, one
//! call at a time, best of three rounds.
//!
//!     cargo bench -p simdex-c --bench calls -- INDEX_DIR QUERIES.u64
//!
//! Prints `rust<TAB>what<TAB>nanoseconds` lines: per key for batches, per call for single
//! queries. Run with RAYON_NUM_THREADS=1 for one thread.

use std::time::Instant;

fn main() {
    let args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| a != "--bench")
        .collect();
    let [index, queries] = args.as_slice() else {
        eprintln!("usage: calls INDEX_DIR QUERIES.u64");
        std::process::exit(2);
    };
    let idx = simdex::Index::open(index).expect("open the index");
    let bytes = std::fs::read(queries).expect("read the queries");
    let qs: Vec<u64> = bytes
        .chunks_exact(8)
        .map(|c| u64::from_le_bytes(c.try_into().unwrap()))
        .collect();
    let mut batch = f64::MAX;
    let mut single = f64::MAX;
    let mut through_c = f64::MAX;
    let cpath = std::ffi::CString::new(index.as_str()).unwrap();
    let mut handle = std::ptr::null_mut();
    let st = unsafe {
        simdex_c::simdex_index_open(cpath.as_ptr(), 0, &mut handle, std::ptr::null_mut())
    };
    assert_eq!(st, simdex_c::SIMDEX_OK);
    let (mut fps, mut ds) = ([0u64; 64], [0u32; 64]);
    let mut rows = 0;
    for _ in 0..3 {
        let t = Instant::now();
        for chunk in qs.chunks(1000) {
            rows += idx.near_many(chunk, 3).expect("near_many").matches.len();
        }
        batch = batch.min(t.elapsed().as_nanos() as f64 / qs.len() as f64);
        let t = Instant::now();
        for &q in &qs {
            rows += idx.near(q, 3).expect("near").len();
        }
        single = single.min(t.elapsed().as_nanos() as f64 / qs.len() as f64);
        let t = Instant::now();
        for &q in &qs {
            let mut n = 0;
            unsafe {
                simdex_c::simdex_index_near(
                    handle,
                    q,
                    3,
                    fps.as_mut_ptr(),
                    ds.as_mut_ptr(),
                    64,
                    &mut n,
                    std::ptr::null_mut(),
                )
            };
            rows += n;
        }
        through_c = through_c.min(t.elapsed().as_nanos() as f64 / qs.len() as f64);
    }
    unsafe { simdex_c::simdex_index_close(handle) };
    assert!(rows > 0, "the queries matched nothing");
    println!("rust\tnear_many per key (batches of 1000)\t{batch:.0}");
    println!("rust\tnear per call\t{single:.0}");
    println!("rust, through the C ABI\tnear per call\t{through_c:.0}");
}
