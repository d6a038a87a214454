//! Sketches against exact Jaccard: for pairs of word 3-shingle sets at known similarity (a
//! document and an edited copy, documents of 50 to 2000 words), how often a sketch's decision
//! "similarity >= T" differs from the exact one, by band of exact Jaccard, for several shapes;
//! and the bytes of each against an exact set compressed (Elias-Fano of 32-bit hashes).
//! Prints tables; BENCHMARKS.md ("Documents in the store") quotes them.
//!
//! `cargo bench --bench sketch`

use simdex::dedup::sketch::SketchShape;
use simdex::dedup::verify::jaccard;
use simdex::sample::splitmix64;

/// A set of `n` shingle hashes and a copy sharing about `frac` of the union.
fn pair(n: usize, frac: f64, s: &mut u64) -> (Vec<u64>, Vec<u64>) {
    // |A ∩ B| / |A ∪ B| = frac with |A| = |B| = n: shared = 2n·frac / (1 + frac).
    let shared = ((2.0 * n as f64 * frac) / (1.0 + frac)).round() as usize;
    let common: Vec<u64> = (0..shared).map(|_| splitmix64(s)).collect();
    let mut a = common.clone();
    let mut b = common;
    a.extend((shared..n).map(|_| splitmix64(s)));
    b.extend((shared..n).map(|_| splitmix64(s)));
    a.sort_unstable();
    b.sort_unstable();
    (a, b)
}

fn main() {
    let t = 0.9;
    let shapes = [(128, 4), (256, 4), (128, 8), (512, 2), (256, 8)];
    let bands: [(f64, f64); 6] = [
        (0.70, 0.80),
        (0.80, 0.85),
        (0.85, 0.88),
        (0.88, 0.92),
        (0.92, 0.95),
        (0.95, 1.01),
    ];
    let mut s = 42u64;
    let trials = 4000;
    println!("decisions at T = {t} that differ from exact Jaccard's, {trials} pairs per cell");
    println!("(sets of 50 to 2000 shingles, log-uniform; exact Jaccard uniform in the band)\n");
    print!("| exact Jaccard |");
    for (bins, bits) in shapes {
        print!(" {bins}×{bits} ({} B) |", bins * bits / 8);
    }
    println!();
    print!("|---|");
    for _ in shapes {
        print!("---:|");
    }
    println!();
    for (lo, hi) in bands {
        print!("| {lo:.2}–{:.2} |", hi.min(1.0));
        for (bins, bits) in shapes {
            let shape = SketchShape::new(bins, bits).unwrap();
            let mut s2 = s;
            let mut wrong = 0;
            for _ in 0..trials {
                let u = (splitmix64(&mut s2) % 1_000_000) as f64 / 1e6;
                let n = (50.0 * 40f64.powf(u)) as usize;
                let frac = lo + (hi.min(1.0) - lo) * (splitmix64(&mut s2) % 1000) as f64 / 1000.0;
                let (a, b) = pair(n, frac, &mut s2);
                let exact = jaccard(&a, &b) >= t;
                let est = shape
                    .similarity(&shape.sketch(&a), &shape.sketch(&b))
                    .unwrap()
                    >= t;
                wrong += usize::from(exact != est);
            }
            print!(" {:.2}% |", 100.0 * wrong as f64 / trials as f64);
        }
        println!();
        s = splitmix64(&mut s);
    }
    println!(
        "\nbytes per document: a sketch is fixed; an exact set of n shingles as sorted 32-bit"
    );
    println!("hashes in Elias-Fano takes about n × (2 + log2(2^32 / n)) bits:\n");
    println!("| shingles | exact set (EF) | 128-byte sketch |");
    println!("|---:|---:|---:|");
    for n in [50u64, 200, 1000, 5000] {
        let bits = n as f64 * (2.0 + (4_294_967_296.0 / n as f64).log2());
        println!("| {n} | {:.0} B | 128 B |", bits / 8.0);
    }
}
