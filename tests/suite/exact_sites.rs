//! Exact online verification on real sites: every HTML page of each directory named by
//! `SIMDEX_EXACT_HTML` (paths separated as `PATH` is, e.g. the `html` directories of Debian's
//! documentation packages: one generator's pages with hundreds of near-siblings), in path
//! order, checked and ingested by an exact HTML store, against a brute-force oracle over the
//! pages' visible text (the recipe's own extraction): no difference, for stores created for
//! 0.5 to 1.0 and a higher threshold asked later, in one call and in calls of odd sizes.
//! `SIMDEX_EXACT_HTML_PAGES=N` takes each site's first N pages only. Skipped when the variable
//! is unset; `SIMDEX_REQUIRE_EXACT_HTML=1` makes that a failure.

use simdex::Simhasher;
use simdex::dedup::verify::{jaccard, shingle_set};

use super::exact::{answers, exact_store_of, run};

/// The pages under `dir` (`.html`, `.htm`; valid UTF-8 ones), ids their paths below it, in
/// path order.
fn site(dir: &std::path::Path) -> Vec<(String, String)> {
    let mut files = Vec::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        let list = std::fs::read_dir(&d).unwrap_or_else(|e| panic!("{}: {e}", d.display()));
        for e in list {
            let p = e.unwrap().path();
            let meta = std::fs::symlink_metadata(&p).unwrap();
            if meta.is_dir() {
                todo.push(p);
            } else if meta.is_file() && p.extension().is_some_and(|x| x == "html" || x == "htm") {
                files.push(p);
            }
        }
    }
    files.sort();
    files
        .into_iter()
        .filter_map(|p| {
            let text = String::from_utf8(std::fs::read(&p).unwrap()).ok()?;
            let id = p.strip_prefix(dir).unwrap().to_string_lossy().into_owned();
            Some((id, text))
        })
        .collect()
}

/// Per page, the earlier pages at Jaccard ≥ `floor` with it and their similarity (empty sets
/// meet nothing): every pair compared, on two threads, but for sizes that cannot reach it.
fn similar_pairs(sets: &[Vec<u64>], floor: f64) -> Vec<Vec<(usize, f64)>> {
    let rows = |i: usize| -> Vec<(usize, f64)> {
        let a = &sets[i];
        if a.is_empty() {
            return Vec::new();
        }
        (0..i)
            .filter(|&j| {
                let (x, y) = (a.len().min(sets[j].len()), a.len().max(sets[j].len()));
                x > 0 && x as f64 >= floor * y as f64 - 1e-9
            })
            .filter_map(|j| {
                let sim = jaccard(a, &sets[j]);
                (sim >= floor).then_some((j, sim))
            })
            .collect()
    };
    std::thread::scope(|s| {
        let odd = s.spawn(|| (1..sets.len()).step_by(2).map(rows).collect::<Vec<_>>());
        let mut even = (0..sets.len()).step_by(2).map(rows);
        let mut odd = odd.join().unwrap().into_iter();
        (0..sets.len())
            .map(|i| match i % 2 {
                0 => even.next(),
                _ => odd.next(),
            })
            .map(Option::unwrap)
            .collect()
    })
}

/// The oracle's answers at `t`: a page is stored unless an earlier stored page reaches `t`
/// (then the most similar, ties to the earliest, is its match); a page without words is
/// neither.
fn oracle(
    docs: &[(String, String)],
    sets: &[Vec<u64>],
    pairs: &[Vec<(usize, f64)>],
    t: f64,
) -> Vec<Option<(String, f64)>> {
    let mut stored = vec![false; docs.len()];
    let mut out = Vec::with_capacity(docs.len());
    for i in 0..docs.len() {
        let mut best: Option<(usize, f64)> = None;
        for &(j, sim) in &pairs[i] {
            if stored[j] && sim >= t && best.is_none_or(|b| sim > b.1) {
                best = Some((j, sim));
            }
        }
        match best {
            Some((j, sim)) => out.push(Some((docs[j].0.clone(), sim))),
            None => {
                stored[i] = !sets[i].is_empty();
                out.push(None);
            }
        }
    }
    out
}

#[test]
fn real_sites_equal_the_brute_force_oracle() {
    let Some(dirs) = std::env::var_os("SIMDEX_EXACT_HTML") else {
        assert!(
            std::env::var_os("SIMDEX_REQUIRE_EXACT_HTML").is_none(),
            "SIMDEX_REQUIRE_EXACT_HTML is set but SIMDEX_EXACT_HTML names no site"
        );
        eprintln!("skipped: SIMDEX_EXACT_HTML names no site");
        return;
    };
    let pages: usize = std::env::var("SIMDEX_EXACT_HTML_PAGES").map_or(usize::MAX, |v| {
        v.parse().expect("SIMDEX_EXACT_HTML_PAGES: a number")
    });
    for dir in std::env::split_paths(&dirs) {
        let mut docs = site(&dir);
        docs.truncate(pages);
        assert!(docs.len() >= 100, "{}: {} pages", dir.display(), docs.len());
        let sets: Vec<Vec<u64>> = docs
            .iter()
            .map(|(_, html)| shingle_set(&Simhasher::visible_text(html), 3))
            .collect();
        let pairs = similar_pairs(&sets, 0.5);
        let mut found = 0;
        // Each store's own threshold and a higher one asked later (1.0 has none).
        let thresholds = [(0.5, 0.75), (0.7, 0.85), (0.9, 0.95), (1.0, 1.0)];
        for (t0, later) in thresholds {
            let asked = if later > t0 {
                vec![t0, later]
            } else {
                vec![t0]
            };
            for t in asked {
                let want = oracle(&docs, &sets, &pairs, t);
                let dups = want.iter().filter(|w| w.is_some()).count();
                found += dups;
                // The store learns its order from the first tenth, as `ingest` does from
                // its first documents.
                let sample = &docs[..docs.len() / 10];
                let tmp = tempfile::tempdir().unwrap();
                let store = exact_store_of(tmp.path(), t0, true, sample);
                let checked = answers(&run(&store, &docs, &[4096], t, true));
                let got = answers(&run(&store, &docs, &[1, 7, 64, 300], t, false));
                let wrong: Vec<usize> = (0..docs.len()).filter(|&i| got[i] != want[i]).collect();
                eprintln!(
                    "{}: {} pages, t0 {t0} t {t}: {dups} duplicates, {} differences",
                    dir.display(),
                    docs.len(),
                    wrong.len()
                );
                if let Some(&i) = wrong.first() {
                    panic!(
                        "{}, t0 {t0} t {t}: page {} answered {:?}, the oracle {:?}",
                        dir.display(),
                        docs[i].0,
                        got[i],
                        want[i]
                    );
                }
                assert_eq!(checked, got, "check-only, t0 {t0} t {t}");
            }
        }
        assert!(
            found > 0,
            "{}: no near-duplicates at any threshold",
            dir.display()
        );
    }
}
