//! Simhash throughput, one thread: MB/s of text for tokenization alone and for whole
//! fingerprints with each shingle size, on generated English-like text and on Chinese text.
//!
//! `cargo bench --bench simhash`

use std::time::Instant;

use simdex::sample::splitmix64;
use simdex::simhash::{SimhashOptions, Simhasher, tokens};

fn english(bytes: usize, seed: u64) -> Vec<String> {
    let vocab: Vec<String> = (0..5000u64)
        .map(|i| {
            let mut s = i;
            let len = 2 + splitmix64(&mut s) % 9;
            (0..len)
                .map(|_| (b'a' + (splitmix64(&mut s) % 26) as u8) as char)
                .collect()
        })
        .collect();
    let mut s = seed;
    let mut docs = Vec::new();
    let mut total = 0;
    while total < bytes {
        let words: Vec<&str> = (0..400)
            .map(|_| {
                // Zipf-ish: small ranks far more often.
                let r = splitmix64(&mut s) % 5000;
                vocab[(r * r / 5000) as usize].as_str()
            })
            .collect();
        let d = words.join(" ") + ".";
        total += d.len();
        docs.push(d);
    }
    docs
}

fn chinese(bytes: usize) -> Vec<String> {
    let para = "近日，国家统计局发布了最新的经济数据。数据显示，今年前三季度国内生产总值同比增长，\
        消费市场持续回暖，就业形势总体稳定。专家认为，随着一系列政策措施落地见效，经济运行有望保持平稳。";
    let mut docs = Vec::new();
    let mut total = 0;
    let mut i = 0u32;
    while total < bytes {
        let d = format!("{para}{i}{para}");
        total += d.len();
        docs.push(d);
        i += 1;
    }
    docs
}

fn rate(docs: &[String], f: impl Fn(&str) -> u64) -> f64 {
    let bytes: usize = docs.iter().map(|d| d.len()).sum();
    let t0 = Instant::now();
    let mut acc = 0u64;
    for d in docs {
        acc ^= f(d);
    }
    std::hint::black_box(acc);
    bytes as f64 / t0.elapsed().as_secs_f64() / 1e6
}

fn main() {
    if std::env::args().any(|a| a == "--test" || a == "--list") {
        return;
    }
    println!("| text | step | MB/s (1 thread) |");
    println!("|---|---|---:|");
    for (name, docs) in [
        ("English-like", english(20 << 20, 1)),
        ("Chinese", chinese(20 << 20)),
    ] {
        let r = rate(&docs, |d| tokens::normalize(d).len() as u64);
        println!("| {name} | NFKC + lowercase | {r:.1} |");
        let r = rate(&docs, |d| tokens::tokens(d).len() as u64);
        println!("| {name} | tokens (incl. normalization) | {r:.1} |");
        for shingle in [1usize, 2, 3] {
            let h = Simhasher::new(
                SimhashOptions::default()
                    .with_shingle(shingle)
                    .with_weights(None),
            )
            .unwrap();
            let r = rate(&docs, |d| h.hash_text(d));
            println!("| {name} | fingerprint, shingle {shingle} | {r:.1} |");
        }
    }
}
