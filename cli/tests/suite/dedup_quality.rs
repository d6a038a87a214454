//! Near-duplicates on template-heavy pages (generated here: every page is a large shared template
//! around a small unique article; some articles appear twice, edited): `dedup --verify` equals
//! the exact answer, and the default weights (IDF learned from the corpus) keep template
//! siblings apart far better than count weights.

use crate::common;
use common::{ok, simdex};

use std::collections::BTreeSet;

use simdex::sample::splitmix64;
use simdex::simhash::eval;

type Pairs = BTreeSet<(String, String)>;

/// (id, text) pages, the exact near-duplicate pairs (word 3-shingle Jaccard >= 0.9), and the
/// planted ones (an article and its edited copy).
fn corpus(pages: usize, seed: u64) -> (Vec<(String, String)>, Pairs, Pairs) {
    let mut s = seed;
    let word = |s: &mut u64| format!("w{}", splitmix64(s) % 4000);
    let template: Vec<String> = (0..400).map(|_| word(&mut s)).collect();
    let mut out = Vec::new();
    let mut planted = Pairs::new();
    while out.len() < pages {
        let n = 20 + (splitmix64(&mut s) % 120) as usize;
        let body: Vec<String> = (0..n).map(|_| word(&mut s)).collect();
        let page = |body: &[String]| format!("{} {}", template.join(" "), body.join(" "));
        out.push((format!("p{}", out.len()), page(&body)));
        if splitmix64(&mut s).is_multiple_of(4) {
            let mut edited = body.clone();
            for _ in 0..splitmix64(&mut s) % 4 {
                let i = (splitmix64(&mut s) % edited.len() as u64) as usize;
                edited[i] = word(&mut s);
            }
            planted.insert((format!("p{}", out.len() - 1), format!("p{}", out.len())));
            out.push((format!("p{}", out.len()), page(&edited)));
        }
    }
    let sets: Vec<Vec<u64>> = out
        .iter()
        .map(|(_, t)| eval::shingle_set(t, eval::TRUTH_SHINGLE))
        .collect();
    let truth = eval::Row::similar_pairs(&sets, 0.9)
        .into_iter()
        .map(|(i, j)| (out[i as usize].0.clone(), out[j as usize].0.clone()))
        .collect();
    (out, truth, planted)
}

fn pairs(tsv: &str) -> BTreeSet<(String, String)> {
    tsv.lines()
        .map(|l| {
            let f: Vec<&str> = l.split('\t').collect();
            let (a, b) = (f[0].to_string(), f[1].to_string());
            if a < b { (a, b) } else { (b, a) }
        })
        .collect()
}

fn norm(set: &BTreeSet<(String, String)>) -> BTreeSet<(String, String)> {
    set.iter()
        .map(|(a, b)| {
            if a < b {
                (a.clone(), b.clone())
            } else {
                (b.clone(), a.clone())
            }
        })
        .collect()
}

#[test]
fn verify_is_exact_and_default_weights_discount_the_template() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let (docs, truth, planted) = corpus(600, 11);
    let (truth, planted) = (norm(&truth), norm(&planted));
    assert!(
        truth.len() >= 50,
        "the corpus plants near-duplicates: {}",
        truth.len()
    );
    let jsonl: String = docs
        .iter()
        .map(|(id, t)| format!("{{\"id\":\"{id}\",\"text\":\"{t}\"}}\n"))
        .collect();
    std::fs::write(d.join("pages.jsonl"), jsonl).unwrap();
    let run = |args: &[&str]| {
        let mut all = vec!["dedup", "--jsonl", "pages.jsonl", "--quiet"];
        all.extend_from_slice(args);
        pairs(&ok(&simdex(&all, None, d)))
    };
    // Verification finds the exact answer here (every true pair lies within 7 bits).
    let verified = run(&["--verify", "jaccard:0.9"]);
    let missed = truth.difference(&verified).count();
    let wrong = verified.difference(&truth).count();
    assert_eq!(wrong, 0, "verified pairs are near-duplicates");
    assert!(
        missed * 20 <= truth.len(),
        "recall >= 0.95: missed {missed} of {}",
        truth.len()
    );
    // Fingerprints alone, k = 3: IDF weights (the default) against counts.
    let precision = |got: &BTreeSet<(String, String)>| {
        got.intersection(&truth).count() as f64 / got.len().max(1) as f64
    };
    let idf = run(&[]);
    let count = run(&["--weights", "count"]);
    let found = |got: &Pairs| planted.intersection(got).count() as f64 / planted.len() as f64;
    let msg = format!(
        "idf: precision {:.3}, planted found {:.3} ({} pairs); count: {:.3}, {:.3} ({} pairs)",
        precision(&idf),
        found(&idf),
        idf.len(),
        precision(&count),
        found(&count),
        count.len()
    );
    // Template siblings stay apart under the default weights; the planted copies are found.
    assert!(precision(&idf) >= 0.95 && precision(&count) < 0.7, "{msg}");
    assert!(found(&idf) >= 0.25, "{msg}");
    eprintln!("{msg}");
    // calibrate recommends, also as JSON.
    let c = ok(&simdex(
        &[
            "calibrate",
            "--jsonl",
            "pages.jsonl",
            "--shingles",
            "2",
            "--with-idf",
            "--json",
        ],
        None,
        d,
    ));
    assert!(
        c.contains("\"best_f1\":{\"setting\"") && c.contains("\"candidate_k\""),
        "{c}"
    );
}

/// Groups of identical pages (one of 3 000 copies, others of a few) and of near-copies: the
/// verified answer is every pair of each group in (first, second) input order, exactly the
/// brute-force one, the same under a small `--mem` (pairs spilled in order, batches of
/// candidates bounded) as under the default, and clusters need no memory for the copies' pairs
/// (a 3 000-copy group's 4.5 million pairs once made a 32 MiB run impossible).
#[test]
fn copies_cost_no_pairs_and_pairs_stream_in_order_within_mem() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let mut s = 5u64;
    let word = |s: &mut u64| format!("w{}", splitmix64(s) % 4000);
    let base: Vec<String> = (0..60).map(|_| word(&mut s)).collect();
    let mut docs: Vec<String> = Vec::new();
    for i in 0..3400 {
        let text = match i % 17 {
            // Near-copies: the base with one word changed near its end.
            0 => {
                let mut t = base.clone();
                t[55] = word(&mut s);
                t.join(" ")
            }
            // Small groups of other identical texts.
            1 => format!("small group {} of copies here", i % 5),
            _ => base.join(" "),
        };
        docs.push(text);
    }
    let jsonl: String = docs
        .iter()
        .enumerate()
        .map(|(i, t)| format!("{{\"id\":\"d{i}\",\"text\":\"{t}\"}}\n"))
        .collect();
    std::fs::write(d.join("c.jsonl"), jsonl).unwrap();
    let run = |args: &[&str]| {
        let mut all = vec![
            "dedup",
            "--jsonl",
            "c.jsonl",
            "--quiet",
            "--verify",
            "jaccard:0.9",
        ];
        all.extend_from_slice(args);
        ok(&simdex(&all, None, d))
    };
    let sets: Vec<Vec<u64>> = docs
        .iter()
        .map(|t| eval::shingle_set(t, eval::TRUTH_SHINGLE))
        .collect();
    // Candidates are the pairs within the default candidate k (11) of count-weight
    // fingerprints (`hash`'s, in input order).
    let fps: Vec<u64> = ok(&simdex(&["hash", "--jsonl", "c.jsonl", "--quiet"], None, d))
        .lines()
        .map(|l| u64::from_str_radix(l.split('\t').next().unwrap(), 16).unwrap())
        .collect();
    let truth: Vec<(usize, usize)> = eval::Row::similar_pairs(&sets, 0.9)
        .into_iter()
        .map(|(i, j)| (i.min(j) as usize, i.max(j) as usize))
        .filter(|&(i, j)| (fps[i] ^ fps[j]).count_ones() <= 11)
        .collect();
    let got = run(&["--mem", "24M"]);
    let listed: Vec<(usize, usize)> = got
        .lines()
        .map(|l| {
            let f: Vec<&str> = l.split('\t').collect();
            let n = |x: &str| x[1..].parse::<usize>().unwrap();
            (n(f[0]), n(f[1]))
        })
        .collect();
    assert!(listed.is_sorted(), "pairs in input order");
    let mut want = truth.clone();
    want.sort_unstable();
    assert_eq!(listed.len(), want.len());
    assert!(listed == want, "the brute-force pairs");
    assert!(want.len() > 4_000_000, "{} pairs", want.len());
    assert!(got == run(&[]), "the same under the default --mem");
    let clusters = run(&["--clusters", "--mem", "24M"]);
    assert_eq!(clusters.lines().count(), 1 + 5, "{clusters:.200}");
}
