//! Exact online verification: a store created to keep shingle sets answers `ingest` and
//! `check_documents` exactly as a brute-force oracle that compares each document with every
//! document stored before it (exact word 3-shingle Jaccard, the most similar, ties to the
//! earliest stored) — on template pages with many siblings just under the threshold, random
//! families, CJK text and copies; for thresholds 0.5 to 1.0 and higher ones asked later;
//! however the input is split into calls, across compaction, reopening and re-crawls.

use simdex::dedup::sketch::SketchShape;
use simdex::dedup::verify::{jaccard, shingle_set};
use simdex::store::{
    CreateOptions, DocId, Document, IngestOptions, Recipe, Store, StoreOptions, SyncPolicy, Verdict,
};

use crate::common;

/// A site: a template of 200 words around short articles, each article's siblings a few words
/// apart (Jaccard near 0.85-0.95), some pages repeated exactly, a few in CJK script.
fn corpus(n: usize, seed: u64) -> Vec<(String, String)> {
    let mut st = seed;
    let word = |st: &mut u64| format!("w{}", common::splitmix(st) % 3000);
    let template: Vec<String> = (0..200).map(|_| word(&mut st)).collect();
    let mut bases: Vec<Vec<String>> = Vec::new();
    let mut out = Vec::new();
    for i in 0..n {
        let r = common::splitmix(&mut st);
        let text = if i % 23 == 22 {
            // CJK: runs of Han characters (bigram tokens).
            let k = 5 + r % 20;
            (0..k)
                .map(|j| {
                    let c = 0x4e00 + ((r >> (j % 40)) + j * 7) % 40;
                    char::from_u32(c as u32)
                        .unwrap()
                        .to_string()
                        .repeat(1 + (j % 3) as usize)
                })
                .collect::<Vec<_>>()
                .join("")
        } else if i % 5 == 4 {
            // Short texts of few words: sets of 1 to 6 shingles, whose Jaccards sit exactly on
            // thresholds (1/2, 2/3, 3/4, ...) and whose prefixes are one or two shingles.
            let k = 3 + r % 6;
            (0..k)
                .map(|j| format!("s{}", (r >> (8 + 3 * j)) % 4))
                .collect::<Vec<_>>()
                .join(" ")
        } else if i % 13 == 12 && !out.is_empty() {
            // An exact copy of an earlier page.
            let (_, t): &(String, String) = &out[(r % out.len() as u64) as usize];
            t.clone()
        } else {
            let article = if !bases.is_empty() && !r.is_multiple_of(3) {
                let mut a = bases[(r >> 8) as usize % bases.len()].clone();
                for _ in 0..(r >> 20) % 5 {
                    let at = (common::splitmix(&mut st) % a.len() as u64) as usize;
                    a[at] = word(&mut st);
                }
                a
            } else {
                let a: Vec<String> = (0..20 + r % 40).map(|_| word(&mut st)).collect();
                bases.push(a.clone());
                a
            };
            let body = article.join(" ");
            match i % 3 {
                // Most pages carry the template; some are the article alone.
                0 => body,
                _ => format!("{} {body}", template.join(" ")),
            }
        };
        out.push((format!("https://site.example/{i}"), text));
    }
    out
}

/// The oracle: each document with words against every document stored before it; a
/// duplicate (the most similar, ties to the earliest stored) or new (stored).
fn oracle(docs: &[(String, String)], t: f64) -> Vec<Option<(String, f64)>> {
    let mut stored: Vec<(usize, Vec<u64>)> = Vec::new();
    let mut out = Vec::new();
    for (i, (_, text)) in docs.iter().enumerate() {
        let set = shingle_set(text, 3);
        if set.is_empty() {
            out.push(None);
            continue;
        }
        let mut best: Option<(usize, f64)> = None;
        for (j, s) in &stored {
            let sim = jaccard(&set, s);
            if sim >= t && best.is_none_or(|b| sim > b.1) {
                best = Some((*j, sim));
            }
        }
        match best {
            Some((j, sim)) => out.push(Some((docs[j].0.clone(), sim))),
            None => {
                stored.push((i, set));
                out.push(None);
            }
        }
    }
    out
}

fn exact_store(dir: &std::path::Path, t0: f64, sample: &[(String, String)]) -> Store {
    exact_store_of(dir, t0, false, sample)
}

/// An exact store at `t0` in `dir`, of HTML pages if `html`, its order learned from `sample`.
pub(super) fn exact_store_of(
    dir: &std::path::Path,
    t0: f64,
    html: bool,
    sample: &[(String, String)],
) -> Store {
    let recipe = Recipe::new(2, html, SketchShape::for_store(true), None)
        .unwrap()
        .with_exact(Some(t0))
        .unwrap();
    // Without a sample, the order is the hash order alone.
    let recipe = match sample.is_empty() {
        true => recipe,
        false => recipe.learn_order(sample.iter().map(|d| d.1.as_str())),
    };
    let dir = dir.join("st");
    Store::create(
        &dir,
        &CreateOptions::default().with_k(3).with_recipe(Some(recipe)),
    )
    .unwrap();
    Store::open(&dir, &StoreOptions::default().with_sync(SyncPolicy::Manual)).unwrap()
}

/// The verdicts as the oracle's shape: the match and similarity of each duplicate.
pub(super) fn answers(v: &[Verdict]) -> Vec<Option<(String, f64)>> {
    v.iter()
        .map(|v| match v {
            Verdict::Duplicate { id, similarity, .. } => Some((id.to_string(), *similarity)),
            _ => None,
        })
        .collect()
}

pub(super) fn run(
    store: &Store,
    docs: &[(String, String)],
    sizes: &[usize],
    t: f64,
    check: bool,
) -> Vec<Verdict> {
    let ids: Vec<DocId> = docs.iter().map(|d| DocId::parse(&d.0)).collect();
    let opts = IngestOptions::default().with_verify(Some(t));
    let mut out = Vec::new();
    let (mut at, mut i) = (0, 0);
    while at < docs.len() {
        let n = sizes[i % sizes.len()].min(docs.len() - at);
        let batch: Vec<Document<'_>> = (at..at + n)
            .map(|j| Document {
                id: &ids[j],
                text: &docs[j].1,
            })
            .collect();
        out.extend(match check {
            true => store.check_documents(&batch, &opts).unwrap(),
            false => store.ingest(&batch, &opts).unwrap(),
        });
        at += n;
        i += 1;
    }
    out
}

#[test]
fn online_answers_equal_the_brute_force_oracle() {
    let docs = corpus(900, 3);
    let mut compared = 0;
    for t0 in [0.5, 0.7, 0.9, 1.0] {
        for t in [t0, (t0 + 1.0) / 2.0] {
            let want = oracle(&docs, t);
            let dups = want.iter().filter(|w| w.is_some()).count();
            assert!(dups > 30, "t {t}: {dups} duplicates");
            // One call; calls of odd sizes (sample: the first 100 pages, or none).
            for (sizes, sample) in [
                (&[4096][..], &docs[..100]),
                (&[1, 7, 64, 300][..], &docs[..0]),
            ] {
                let dir = tempfile::tempdir().unwrap();
                let store = exact_store(dir.path(), t0, sample);
                // check-only first (stores nothing), then ingest: the same answers.
                let checked = answers(&run(&store, &docs, &[4096], t, true));
                let got = answers(&run(&store, &docs, sizes, t, false));
                for (i, (g, w)) in got.iter().zip(&want).enumerate() {
                    assert_eq!(g, w, "t0 {t0} t {t} sizes {sizes:?}: document {i}");
                }
                assert_eq!(checked, got, "check-only, t0 {t0} t {t}");
                compared += 1;
            }
        }
    }
    assert_eq!(compared, 16);
}

/// A document with more distinct shingles than a set may hold is refused with its id before
/// anything of its call is logged (a log holding it would not open again), and the store opens.
#[test]
fn a_document_beyond_the_set_bound_is_refused_before_it_is_logged() {
    let dir = tempfile::tempdir().unwrap();
    let store = exact_store(dir.path(), 0.9, &[]);
    let huge: String = (0..simdex::store::sets::MAX_SET_LEN + 3)
        .map(|i| format!("w{i} "))
        .collect();
    let ids = [DocId::parse("small"), DocId::parse("huge")];
    let docs = [
        Document {
            id: &ids[0],
            text: "a small page of a few words",
        },
        Document {
            id: &ids[1],
            text: &huge,
        },
    ];
    let err = store
        .ingest(&docs, &IngestOptions::default().with_verify(Some(0.9)))
        .unwrap_err()
        .to_string();
    assert!(err.contains("huge") && err.contains("at most"), "{err}");
    store.close().unwrap();
    let store = Store::open(dir.path().join("st"), &StoreOptions::default()).unwrap();
    store.verify().unwrap();
    assert_eq!(
        store.stats().delta_pairs,
        0,
        "nothing of the refused chunk was logged"
    );
}

/// Answers stay exact across compaction, reopening, a second run over new pages and a
/// re-crawl (a stored page changed under its id is never its own duplicate); a threshold
/// below the store's is refused.
#[test]
fn answers_stay_exact_across_compaction_reopening_and_recrawls() {
    let docs = corpus(600, 9);
    let (first, second) = docs.split_at(350);
    let dir = tempfile::tempdir().unwrap();
    let want = oracle(&docs, 0.8);
    {
        let store = exact_store(dir.path(), 0.8, first);
        let got = answers(&run(&store, first, &[128], 0.8, false));
        assert_eq!(got, want[..350]);
        store.compact().unwrap();
        store.close().unwrap();
    }
    let store = Store::open(
        dir.path().join("st"),
        &StoreOptions::default().with_sync(SyncPolicy::Manual),
    )
    .unwrap();
    let got = answers(&run(&store, second, &[200], 0.8, false));
    assert_eq!(got, want[350..]);
    let err = store
        .check_documents(&[], &IngestOptions::default().with_verify(Some(0.7)))
        .unwrap_err()
        .to_string();
    assert!(err.contains("below the 0.8"), "{err}");
    // A re-crawl: page 0 changed under its id replaces it (no duplicate of its old self);
    // the same text again is already stored.
    let id = DocId::parse(&docs[0].0);
    let changed = format!("{} and one more sentence", docs[0].1);
    let opts = IngestOptions::default().with_verify(Some(0.8));
    let recrawl = || {
        let doc = Document {
            id: &id,
            text: &changed,
        };
        store.ingest(&[doc], &opts).unwrap().remove(0)
    };
    let v = recrawl();
    assert!(
        !matches!(&v, Verdict::Duplicate { id: m, .. } if *m == id),
        "{v:?}"
    );
    assert_eq!(recrawl(), Verdict::AlreadyStored);
    store.verify().unwrap();
}

/// A long page edited by one word at a time, under its id: every edit replaces the stored
/// version. One added word often moves neither the fingerprint nor the sketch (an exact
/// store's is 8 bytes), so only the sets tell the versions apart; the same text again is
/// already stored, within one call and across calls.
#[test]
fn every_edit_of_a_page_replaces_it_however_small() {
    let dir = tempfile::tempdir().unwrap();
    let store = exact_store(dir.path(), 0.9, &[]);
    let mut st = 5u64;
    let base: Vec<String> = (0..1500)
        .map(|_| format!("w{}", common::splitmix(&mut st) % 5000))
        .collect();
    let id = DocId::parse("page");
    let opts = IngestOptions::default().with_verify(Some(0.9));
    let mut text = base.join(" ");
    let put = |texts: &[&str]| -> Vec<Verdict> {
        let docs: Vec<Document<'_>> = texts
            .iter()
            .map(|t| Document { id: &id, text: t })
            .collect();
        store.ingest(&docs, &opts).unwrap()
    };
    assert_eq!(put(&[&text]), [Verdict::New]);
    for i in 0..150 {
        let edited = format!("{text} extra{i}");
        // Alone, and in one call after the version it edits.
        let got = match i % 2 {
            0 => put(&[&edited]),
            _ => put(&[&text, &edited]).split_off(1),
        };
        assert_ne!(got, [Verdict::AlreadyStored], "edit {i}");
        text = edited;
    }
    assert_eq!(put(&[&text]), [Verdict::AlreadyStored]);
    assert_eq!(
        put(&[&text, &text]),
        [Verdict::AlreadyStored, Verdict::AlreadyStored]
    );
    // The stored version is the last: its text under another id is a copy of it.
    let probe = DocId::parse("probe");
    let v = store
        .check_documents(
            &[Document {
                id: &probe,
                text: &text,
            }],
            &opts,
        )
        .unwrap();
    assert_eq!(
        v,
        [Verdict::Duplicate {
            id: id.clone(),
            similarity: 1.0,
            distance: 0
        }]
    );
}

/// Many small compactions append to the shingle sets (their records stay put, replaced pages'
/// become dead bytes); expiry by time deletes exactly the pages stored before it; an explicit
/// compaction then rewrites the sets to what a store ingested fresh with the survivors holds;
/// and later answers equal the oracle's over the survivors.
#[test]
fn expiry_deletes_what_was_stored_before_and_compaction_reclaims_it() {
    use simdex::store::Expiry;
    let docs = corpus(500, 21);
    let (old, new) = docs.split_at(300);
    let dir = tempfile::tempdir().unwrap();
    let store = exact_store(dir.path(), 0.8, &docs[..100]);
    store.close().unwrap();
    // A delta of a few dozen pages: a compaction every call or two.
    let opts = StoreOptions::default()
        .with_sync(SyncPolicy::Manual)
        .with_max_delta(60);
    let store = Store::open(dir.path().join("st"), &opts).unwrap();
    let first = run(&store, &old[..150], &[40], 0.8, false);
    std::thread::sleep(std::time::Duration::from_millis(5));
    let cut = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64;
    std::thread::sleep(std::time::Duration::from_millis(5));
    let second = run(&store, &old[150..], &[40], 0.8, false);
    assert!(store.counters().compactions >= 3, "{:?}", store.counters());
    let both: Vec<Verdict> = first.iter().chain(&second).cloned().collect();
    assert_eq!(answers(&both), oracle(old, 0.8));
    // A re-crawl of a page of the second half: its old record is dead from then on.
    let survivor = (150..300)
        .find(|&i| second[i - 150] == Verdict::New)
        .unwrap();
    let recrawled = format!("{} and a changed footer", old[survivor].1);
    let id = DocId::parse(&old[survivor].0);
    let page = Document {
        id: &id,
        text: &recrawled,
    };
    let v = store
        .ingest(&[page], &IngestOptions::default().with_verify(Some(0.8)))
        .unwrap();
    store.compact().unwrap();
    let s = store.stats();
    assert!(s.sets_live_bytes < s.sets_bytes - 16, "{s:?}");

    let stored_first = first.iter().filter(|v| **v == Verdict::New).count() as u64;
    assert!(stored_first > 20, "{stored_first}");
    assert_eq!(
        store.expire(Expiry::StoredBefore(cut)).unwrap(),
        stored_first
    );
    assert_eq!(store.expire(Expiry::StoredBefore(cut)).unwrap(), 0);
    store.compact().unwrap();
    let s = store.stats();
    assert_eq!(s.sets_bytes, s.sets_live_bytes + 16, "rewritten: {s:?}");

    // The survivors, as stored (the re-crawled page last, changed).
    let mut survivors: Vec<(String, String)> = (150..300)
        .filter(|&i| second[i - 150] == Verdict::New && i != survivor)
        .map(|i| old[i].clone())
        .collect();
    if v[0] == Verdict::New {
        survivors.push((old[survivor].0.clone(), recrawled.clone()));
    }
    assert_eq!(store.stats().documents, survivors.len() as u64);
    let fresh_dir = tempfile::tempdir().unwrap();
    let fresh = exact_store(fresh_dir.path(), 0.8, &docs[..100]);
    let again = run(&fresh, &survivors, &[64], 0.8, false);
    assert!(again.iter().all(|v| *v == Verdict::New));
    fresh.compact().unwrap();
    assert_eq!(fresh.stats().sets_bytes, s.sets_bytes);
    let (a, b) = (fresh.stats(), s);
    let size = |s: &simdex::store::StoreStats| {
        s.sets_bytes + s.doc_map_bytes + s.table_bytes + s.id_map_bytes
    };
    assert!(size(&b) as f64 <= 1.05 * size(&a) as f64, "{a:?} / {b:?}");

    // Later pages are answered against the survivors only, exactly.
    let mut list = survivors.clone();
    list.extend_from_slice(new);
    let want = oracle(&list, 0.8);
    let got = answers(&run(&store, new, &[33], 0.8, false));
    assert_eq!(got, want[survivors.len()..]);
    // Expiry by seq: everything stored so far.
    store.compact().unwrap();
    let all = store.stats().documents;
    let next = store.stats().max_seq + 1;
    assert_eq!(store.expire(Expiry::SeqBelow(next)).unwrap(), all);
    store.compact().unwrap();
    assert_eq!(store.stats().documents, 0);
    store.verify().unwrap();
}

/// What a compaction that failed (or lost power) while appending leaves at the end of the
/// shared sets file is dead bytes: the store opens and verifies, the next compaction appends
/// after them, and answers stay exact.
#[test]
fn a_torn_append_to_the_sets_is_dead_bytes() {
    use std::io::Write;
    let docs = corpus(300, 5);
    let dir = tempfile::tempdir().unwrap();
    let store = exact_store(dir.path(), 0.8, &docs[..100]);
    let mut got = run(&store, &docs[..150], &[50], 0.8, false);
    store.compact().unwrap();
    let gen_dir = store.generation().dir().to_path_buf();
    store.close().unwrap();
    let garbage: Vec<u8> = (0..1000u32).map(|i| (i * 7) as u8).collect();
    let mut f = std::fs::OpenOptions::new()
        .append(true)
        .open(gen_dir.join("SETS"))
        .unwrap();
    f.write_all(&garbage).unwrap();
    drop(f);
    let store = Store::open(
        dir.path().join("st"),
        &StoreOptions::default().with_sync(SyncPolicy::Manual),
    )
    .unwrap();
    store.verify().unwrap();
    got.extend(run(&store, &docs[150..], &[50], 0.8, false));
    store.compact().unwrap();
    let s = store.stats();
    assert!(s.sets_bytes >= s.sets_live_bytes + 16 + 1000, "{s:?}");
    store.verify().unwrap();
    assert_eq!(answers(&got), oracle(&docs, 0.8));
}
