//! Document stores: a generated template-heavy corpus with planted near-duplicates streamed
//! through `Store::ingest`; answers checked against exact Jaccard, against splitting the input
//! differently, across compaction and reopening; recipes, string ids, replacement, deletes.

use std::sync::Arc;

use simdex::dedup::sketch::SketchShape;
use simdex::dedup::verify::{jaccard, shingle_set};
use simdex::store::{
    CreateOptions, DocId, Document, IngestOptions, Recipe, Store, StoreOptions, SyncPolicy, Verdict,
};

use crate::common;

/// Pages of one site: a shared template (header, a long navigation list, footer) around a
/// unique article; every 7th page re-posts an earlier article with one or two words changed
/// (a planted near-duplicate), every 11th one in the template's second version. Returns
/// (url, text, index of the planted original).
fn site(n: usize, seed: u64) -> Vec<(String, String, Option<usize>)> {
    let mut st = seed;
    let mut word = |st: &mut u64| {
        let r = common::splitmix(st);
        // Zipf-like: small numbers are common words.
        format!("w{}", (r % 1000) * (r >> 40) % 5000)
    };
    let words = |st: &mut u64, k: usize, word: &mut dyn FnMut(&mut u64) -> String| {
        (0..k).map(|_| word(st)).collect::<Vec<_>>()
    };
    let header = words(&mut st, 25, &mut word).join(" ");
    let nav1: Vec<String> = (0..120)
        .map(|_| words(&mut st, 3, &mut word).join(" "))
        .collect();
    let mut nav2 = nav1.clone();
    for i in (0..120).step_by(9) {
        nav2[i] = words(&mut st, 3, &mut word).join(" ");
    }
    let footer = words(&mut st, 60, &mut word).join(" ");
    let mut articles: Vec<Vec<String>> = Vec::new();
    let mut out = Vec::new();
    for i in 0..n {
        let (article, planted) = if i % 7 == 6 {
            let src = (common::splitmix(&mut st) % articles.len() as u64) as usize;
            let mut a = articles[src].clone();
            for _ in 0..1 + i % 2 {
                let at = (common::splitmix(&mut st) % a.len() as u64) as usize;
                a[at] = word(&mut st);
            }
            (a, Some(src))
        } else {
            let len = 150 + (common::splitmix(&mut st) % 200) as usize;
            (words(&mut st, len, &mut word), None)
        };
        let nav = if i % 11 == 10 { &nav2 } else { &nav1 };
        let text = format!(
            "{header}\n{}\n{}\n{footer}",
            nav.join("\n"),
            article.join(" ")
        );
        articles.push(article);
        out.push((format!("https://docs.example.org/page/{i}"), text, planted));
    }
    out
}

fn create(dir: &std::path::Path, recipe: Recipe) -> Store {
    Store::create(
        dir,
        &CreateOptions::default().with_k(7).with_recipe(Some(recipe)),
    )
    .unwrap();
    Store::open(dir, &StoreOptions::default().with_sync(SyncPolicy::Manual)).unwrap()
}

fn counts_recipe() -> Recipe {
    Recipe::new(2, false, SketchShape::default(), None).unwrap()
}

fn ingest_in(store: &Store, docs: &[(DocId, &str)], sizes: &[usize], t: f64) -> Vec<Verdict> {
    let opts = IngestOptions::default().with_verify(Some(t));
    let mut out = Vec::new();
    let mut at = 0;
    for &s in sizes.iter().cycle() {
        if at >= docs.len() {
            break;
        }
        let end = (at + s).min(docs.len());
        let part: Vec<Document<'_>> = docs[at..end]
            .iter()
            .map(|(id, text)| Document { id, text })
            .collect();
        out.extend(store.ingest(&part, &opts).unwrap());
        at = end;
    }
    out
}

/// Reported duplicates are truly similar (exact Jaccard >= 0.85), every page with an earlier
/// page at Jaccard >= 0.95 is reported, and the answers name the pages by their URLs.
#[test]
fn planted_duplicates_are_found_and_reports_are_true() {
    let pages = site(1500, 7);
    let dir = tempfile::tempdir().unwrap();
    let store = create(&dir.path().join("s"), counts_recipe());
    let docs: Vec<(DocId, &str)> = pages
        .iter()
        .map(|(u, t, _)| (DocId::Key(Arc::from(u.as_str())), t.as_str()))
        .collect();
    let verdicts = ingest_in(&store, &docs, &[docs.len()], 0.9);
    let sets: Vec<Vec<u64>> = pages.iter().map(|(_, t, _)| shingle_set(t, 3)).collect();
    let pos = |id: &DocId| {
        pages
            .iter()
            .position(|(u, _, _)| DocId::Key(u.as_str().into()) == *id)
    };
    let (mut reported, mut planted_close, mut found) = (0, 0, 0);
    for (i, v) in verdicts.iter().enumerate() {
        if let Verdict::Duplicate { id, similarity, .. } = v {
            reported += 1;
            let j = pos(id).expect("an answer names a stored page");
            assert!(j < i, "page {i} matched a later page {j}");
            let exact = jaccard(&sets[i], &sets[j]);
            assert!(
                exact >= 0.85,
                "page {i} ~ {j}: exact {exact:.3}, estimated {similarity}"
            );
        }
        let close = (0..i).any(|j| jaccard(&sets[i], &sets[j]) >= 0.95);
        if close {
            planted_close += 1;
            found += usize::from(matches!(v, Verdict::Duplicate { .. }));
        }
    }
    assert!(planted_close >= 150, "the corpus plants near-duplicates");
    assert!(
        found as f64 >= 0.97 * planted_close as f64,
        "{found} of {planted_close} found"
    );
    assert!(
        reported < 400,
        "{reported} reported: template siblings are not duplicates"
    );
    // Stored: every new page, by its URL; duplicates are not stored.
    let stored = verdicts.iter().filter(|v| **v == Verdict::New).count();
    assert_eq!(
        store.stats().pairs + store.stats().delta_pairs,
        stored as u64
    );
    for ((id, _), v) in docs.iter().zip(&verdicts) {
        assert_eq!(store.doc_id(id).unwrap().is_some(), *v == Verdict::New);
    }
}

/// The same verdicts however the input is split into calls, with a compaction and a reopen
/// between calls, and from `check_documents` (which stores nothing).
#[test]
fn answers_do_not_depend_on_how_the_input_is_split() {
    let pages = site(5000, 3);
    let docs: Vec<(DocId, &str)> = pages
        .iter()
        .enumerate()
        .map(|(i, (u, t, _))| match i % 3 {
            0 => (DocId::Num(i as u64 * 1000), t.as_str()),
            _ => (DocId::Key(Arc::from(u.as_str())), t.as_str()),
        })
        .collect();
    let dir = tempfile::tempdir().unwrap();
    let whole = {
        let s = create(&dir.path().join("whole"), counts_recipe());
        let check: Vec<Document<'_>> = docs
            .iter()
            .map(|(id, text)| Document { id, text })
            .collect();
        let dry = s
            .check_documents(&check, &IngestOptions::default().with_verify(Some(0.9)))
            .unwrap();
        assert_eq!(s.stats().delta_pairs, 0, "check_documents stores nothing");
        let v = ingest_in(&s, &docs, &[docs.len()], 0.9);
        assert_eq!(dry, v);
        v
    };
    assert!(
        whole
            .iter()
            .filter(|v| matches!(v, Verdict::Duplicate { .. }))
            .count()
            > 500
    );
    for sizes in [&[1usize][..], &[37, 400, 1], &[4095, 2]] {
        let p = dir.path().join(format!("split-{}", sizes[0]));
        let s = create(&p, counts_recipe());
        let mut got = Vec::new();
        let half = docs.len() / 2;
        got.extend(ingest_in(&s, &docs[..half], sizes, 0.9));
        s.compact().unwrap();
        drop(s);
        let s = Store::open(&p, &StoreOptions::default()).unwrap();
        got.extend(ingest_in(&s, &docs[half..], sizes, 0.9));
        assert_eq!(got, whole, "split into calls of {sizes:?}");
        s.verify().unwrap();
    }
}

/// Documents survive compaction and reopening with their string ids and sketches; deleting an
/// id removes its document; a document put again under its id replaces the old one.
#[test]
fn documents_persist_and_are_replaced_and_deleted() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("s");
    // IDF weights learned from the fewest documents a store accepts.
    let sample: Vec<String> = (0..simdex::store::MIN_LEARN_DOCS)
        .map(|i| format!("a b c d w{}", i % 37))
        .collect();
    let learn = |n: usize| {
        Recipe::learn(
            2,
            false,
            SketchShape::default(),
            sample[..n].iter().map(|s| s.as_str()),
        )
    };
    let e = Store::create(
        dir.path().join("few"),
        &CreateOptions::default().with_recipe(Some(learn(sample.len() - 1).unwrap())),
    )
    .unwrap_err();
    assert!(e.to_string().contains("at least 1000"), "{e}");
    assert!(!dir.path().join("few").exists());
    let recipe = learn(sample.len()).unwrap();
    let store = create(&p, recipe.clone());
    let url = DocId::Key("https://example.org/a".into());
    let text = "the quick brown fox jumps over the lazy dog again and again";
    let v = store
        .ingest(&[Document { id: &url, text }], &IngestOptions::default())
        .unwrap();
    assert_eq!(v, vec![Verdict::New]);
    let n = store.doc_id(&url).unwrap().unwrap();
    store.compact().unwrap();
    drop(store);
    let store = Store::open(&p, &StoreOptions::default()).unwrap();
    assert_eq!(store.recipe(), Some(&recipe));
    let d = store.doc(n).unwrap().unwrap();
    assert_eq!(d.key.as_deref(), Some("https://example.org/a"));
    assert_eq!(&*d.sketch, &recipe.hash(text).sketch[..]);
    // Again: already stored (a retry), not a duplicate of itself, and not stored twice.
    let again = store
        .ingest(&[Document { id: &url, text }], &IngestOptions::default())
        .unwrap();
    assert_eq!(again, vec![Verdict::AlreadyStored]);
    // Replaced by a different text under the same id: one fingerprint for it.
    let other = "an entirely different page about the store and its documents";
    store
        .ingest(
            &[Document {
                id: &url,
                text: other,
            }],
            &IngestOptions::default(),
        )
        .unwrap();
    let fp = recipe.hash(other).fingerprint.unwrap();
    assert_eq!(store.pairs().unwrap(), vec![(fp, n)]);
    store.compact().unwrap();
    assert_eq!(store.generation().docs_count(), 1);
    store.delete(n).unwrap();
    assert_eq!(store.doc(n).unwrap(), None);
    assert_eq!(store.doc_id(&url).unwrap(), None);
    store.compact().unwrap();
    assert_eq!(store.generation().docs_count(), 0);
    store.verify().unwrap();
    // Two copies in one call: the second is a duplicate of the first, unless compared with the
    // store only.
    let (a, b) = (DocId::Num(1), DocId::Num(2));
    let fresh = "twice the same words that nothing stored resembles at all, here";
    let twice_fresh = [
        Document {
            id: &a,
            text: fresh,
        },
        Document {
            id: &b,
            text: fresh,
        },
    ];
    let v = store
        .check_documents(&twice_fresh, &IngestOptions::default())
        .unwrap();
    assert!(v[0] == Verdict::New && matches!(&v[1], Verdict::Duplicate { id, .. } if *id == a));
    let only = IngestOptions::default().with_store_only(true);
    assert_eq!(
        store.check_documents(&twice_fresh, &only).unwrap(),
        vec![Verdict::New; 2]
    );
    // Empty documents are nobody's duplicate and are not stored.
    let e = DocId::Num(5);
    let v = store
        .ingest(
            &[Document {
                id: &e,
                text: " ... ",
            }],
            &IngestOptions::default(),
        )
        .unwrap();
    assert_eq!(v, vec![Verdict::Empty]);
}

/// Documents need a document store; other settings than the recipe's are refused; bad
/// options and ids are errors, not panics.
#[test]
fn refusals() {
    let dir = tempfile::tempdir().unwrap();
    let raw = dir.path().join("raw");
    Store::create(&raw, &CreateOptions::default()).unwrap();
    let raw = Store::open(&raw, &StoreOptions::default()).unwrap();
    let id = DocId::Num(1);
    let one = [Document {
        id: &id,
        text: "a b c",
    }];
    let e = raw.ingest(&one, &IngestOptions::default()).unwrap_err();
    assert!(e.to_string().contains("raw fingerprints"), "{e}");
    let s = create(&dir.path().join("docs"), counts_recipe());
    let e = s
        .recipe()
        .unwrap()
        .check_request(Some(3), None)
        .unwrap_err();
    assert!(e.to_string().contains("2-word shingles"), "{e}");
    for opts in [
        IngestOptions::default().with_k(Some(8)),
        IngestOptions::default().with_verify(Some(1.5)),
        IngestOptions::default().with_verify(Some(f64::NAN)),
    ] {
        assert!(s.ingest(&one, &opts).is_err(), "{opts:?}");
    }
    let long = DocId::Key("x".repeat(simdex::store::MAX_KEY_BYTES + 1).into());
    let empty = DocId::Key("".into());
    for id in [&long, &empty] {
        let e = s
            .ingest(&[Document { id, text: "a b c" }], &IngestOptions::default())
            .unwrap_err();
        assert!(e.to_string().contains("string id"), "{e}");
    }
    // A numeric id held by a string-keyed document is not silently overwritten.
    let url = DocId::Key("u".into());
    s.ingest(
        &[Document {
            id: &url,
            text: "one two three four",
        }],
        &IngestOptions::default(),
    )
    .unwrap();
    let n = s.doc_id(&url).unwrap().unwrap();
    let clash = DocId::Num(n);
    let e = s
        .ingest(
            &[Document {
                id: &clash,
                text: "completely other words here",
            }],
            &IngestOptions::default(),
        )
        .unwrap_err();
    assert!(e.to_string().contains("taken by the document"), "{e}");
    // Raw pairs are refused: they would bypass the recipe and carry no sketch.
    for e in [
        s.insert(0xfeed, n).unwrap_err(),
        s.insert_many(&[(0xfeed, 77)]).unwrap_err(),
    ] {
        assert!(e.to_string().contains("a document store"), "{e}");
    }
    assert!(s.ids_of(0xfeed).unwrap().is_empty());
}

/// A crc-valid log record that its writer would never log is refused at open, naming the log
/// and the record, not replayed into a store that could then never compact it: a document
/// with an empty key, with a sketch of another size than the store's, or any document in a
/// store of raw fingerprints.
#[test]
fn logged_documents_that_do_not_fit_the_store_are_refused_at_open() {
    use simdex::store::DocMeta;
    use simdex::store::wal::{Put, Record, encode_record, file_name};
    let sketch = SketchShape::default().bytes();
    let put = |key: Option<&str>, sketch: usize| Put {
        fingerprint: 0xabc,
        id: 5,
        replaces: false,
        doc: DocMeta {
            key: key.map(Arc::from),
            sketch: vec![1u8; sketch].into(),
            set: None,
        },
        prefix: None,
    };
    // Append `rec` to the live log of the store in `dir`, as a writer would frame it.
    let append = |dir: &std::path::Path, rec: &Record| {
        let log = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| n.starts_with("wal-"))
            .max()
            .unwrap();
        assert_eq!(log, file_name(0));
        let path = dir.join(&log);
        let mut bytes = std::fs::read(&path).unwrap();
        bytes.extend(encode_record(rec, bytes.len() as u64));
        std::fs::write(&path, bytes).unwrap();
    };
    let cases = [
        (true, put(Some(""), sketch), "a string id of 0 bytes"),
        (true, put(None, sketch + 1), "a sketch of"),
        (
            false,
            put(None, sketch),
            "documents in a store of raw fingerprints",
        ),
    ];
    for (docs, p, why) in cases {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("s");
        let opts = CreateOptions::default().with_k(3);
        let opts = if docs {
            opts.with_recipe(Some(counts_recipe()))
        } else {
            opts
        };
        Store::create(&dir, &opts).unwrap();
        // A record that fits replays (the control).
        if docs {
            append(&dir, &Record::Docs(vec![put(Some("k"), sketch)]));
            let s = Store::open(&dir, &StoreOptions::default()).unwrap();
            assert_eq!(s.ids_of(0xabc).unwrap(), [5]);
        }
        append(&dir, &Record::Docs(vec![p]));
        let Err(err) = Store::open(&dir, &StoreOptions::default()) else {
            panic!("a misfit record was replayed ({why})");
        };
        let err = err.to_string();
        assert!(err.contains(why), "{err}");
        assert!(
            err.contains("log record") && err.contains(&file_name(0)),
            "{err}"
        );
    }
}

fn docs_of<'a>(v: &'a [(DocId, &'a str)]) -> Vec<Document<'a>> {
    v.iter().map(|(id, text)| Document { id, text }).collect()
}

/// A retry is "already stored", never a near-duplicate of its own stored version, whether the
/// earlier copy is in the store or earlier in the same call; a changed document under a stored
/// id replaces it and is compared with the others only.
#[test]
fn retries_are_already_stored_and_never_their_own_duplicates() {
    let dir = tempfile::tempdir().unwrap();
    let s = create(&dir.path().join("s"), counts_recipe());
    let (a, b, c) = (DocId::parse("a"), DocId::parse("7"), DocId::parse("c"));
    let ta = "the first unique document about cats and their many habits at home";
    let tb = "a second unique document about dogs and the parks they like best";
    let first = [(a.clone(), ta), (b.clone(), tb)];
    let opts = IngestOptions::default().with_verify(Some(0.5));
    assert_eq!(
        s.ingest(&docs_of(&first), &opts).unwrap(),
        vec![Verdict::New; 2]
    );
    for round in 0..2 {
        assert_eq!(
            s.check_documents(&docs_of(&first), &opts).unwrap(),
            vec![Verdict::AlreadyStored; 2],
            "round {round}"
        );
        assert_eq!(
            s.ingest(&docs_of(&first), &opts).unwrap(),
            vec![Verdict::AlreadyStored; 2],
            "round {round}"
        );
        s.compact().unwrap();
    }
    assert_eq!(s.pairs().unwrap().len(), 2);
    // A changed page under a stored id: new (it replaces the old one), not a duplicate of it.
    let ta2 = "the first unique document about cats and their many habits at night";
    let v = s.ingest(&docs_of(&[(a.clone(), ta2)]), &opts).unwrap();
    assert_eq!(v, vec![Verdict::New]);
    assert_eq!(s.pairs().unwrap().len(), 2);
    // ... while another id with the old text is a duplicate of it.
    let v = s
        .check_documents(&docs_of(&[(c.clone(), ta)]), &opts)
        .unwrap();
    assert!(
        matches!(&v[0], Verdict::Duplicate { id, .. } if *id == a),
        "{v:?}"
    );
    // The same id twice in one call (stored, and checked only): the second is already stored.
    let tc = "one more page that nothing stored resembles in any way at all";
    let twice = [(c.clone(), tc), (c.clone(), tc)];
    for check_only in [true, false] {
        let v = match check_only {
            true => s.check_documents(&docs_of(&twice), &opts).unwrap(),
            false => s.ingest(&docs_of(&twice), &opts).unwrap(),
        };
        assert_eq!(
            v,
            vec![Verdict::New, Verdict::AlreadyStored],
            "{check_only}"
        );
    }
}

/// A string id whose hash slot is taken by a numeric id lives further in its window; deleting
/// that numeric id leaves the key findable (a re-ingest replaces it, no second copy), and a
/// key whose whole window is taken is refused.
#[test]
fn a_key_survives_a_delete_inside_its_window() {
    use simdex::store::{KEY_SEED, KEY_WINDOW};
    let dir = tempfile::tempdir().unwrap();
    let s = create(&dir.path().join("s"), counts_recipe());
    let key = "https://example.org/page";
    let n = xxhash_rust::xxh3::xxh3_64_with_seed(key.as_bytes(), KEY_SEED);
    let k = DocId::parse(key);
    let opts = IngestOptions::default().with_verify(Some(0.5));
    let one = |id: &DocId, t: &str| s.ingest(&docs_of(&[(id.clone(), t)]), &opts).unwrap();
    let old = "one two three four five six seven eight nine ten";
    assert_eq!(
        one(
            &DocId::Num(n),
            "alpha beta gamma delta epsilon zeta eta theta"
        ),
        vec![Verdict::New]
    );
    assert_eq!(one(&k, old), vec![Verdict::New]);
    assert_eq!(s.doc_id(&k).unwrap(), Some(n.wrapping_add(1)));
    for compact in [false, true] {
        if compact {
            s.compact().unwrap();
        }
        assert_eq!(
            s.delete_documents(&[DocId::Num(n)]).unwrap(),
            u64::from(!compact)
        );
        assert_eq!(s.doc_id(&k).unwrap(), Some(n.wrapping_add(1)), "{compact}");
    }
    assert_eq!(
        one(
            &k,
            "red orange yellow green blue indigo violet black white grey"
        ),
        vec![Verdict::New]
    );
    assert_eq!(
        s.pairs().unwrap().len(),
        1,
        "the key was replaced, not stored twice"
    );
    let v = s
        .check_documents(&docs_of(&[(DocId::parse("copy"), old)]), &opts)
        .unwrap();
    assert_eq!(v, vec![Verdict::New], "the old text of the key is gone");
    // Deleting by key.
    assert_eq!(
        s.delete_documents(&[k.clone(), DocId::parse("absent")])
            .unwrap(),
        1
    );
    assert_eq!(s.doc_id(&k).unwrap(), None);
    // A full window refuses the key, with a message saying why.
    let texts: Vec<String> = (0..KEY_WINDOW)
        .map(|i| format!("filler page number {i} with words"))
        .collect();
    for i in 0..KEY_WINDOW {
        s.ingest(
            &docs_of(&[(DocId::Num(n.wrapping_add(i)), &texts[i as usize])]),
            &IngestOptions::default().with_store_only(true),
        )
        .unwrap();
    }
    let e = s.ingest(&docs_of(&[(k.clone(), old)]), &opts).unwrap_err();
    assert!(e.to_string().contains("window"), "{e}");
    s.verify().unwrap();
}

/// Several threads ingest into one store (and one checks) at once, from plain threads and from
/// the jobs of a rayon pool of two threads, as Python runs its long calls: every call returns
/// (a mutex held across a join of the pool they share hung this), and every document is stored
/// exactly once.
#[test]
fn concurrent_ingest_from_threads_and_pool_jobs_does_not_hang() {
    let dir = tempfile::tempdir().unwrap();
    let s = Arc::new(create(&dir.path().join("s"), counts_recipe()));
    let texts: Vec<String> = (0..6000u64)
        .map(|i| {
            let mut st = i;
            (0..40)
                .map(|_| format!("w{}", common::splitmix(&mut st) % 3000))
                .collect::<Vec<_>>()
                .join(" ")
        })
        .collect();
    let ids: Vec<DocId> = (0..6000).map(|i| DocId::parse(&format!("id{i}"))).collect();
    let (tx, rx) = std::sync::mpsc::channel();
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(2)
        .build()
        .unwrap();
    let (s2, texts, ids) = (Arc::clone(&s), Arc::new(texts), Arc::new(ids));
    std::thread::spawn(move || {
        let writer = |t: usize| {
            let part: Vec<(DocId, &str)> = (t..6000)
                .step_by(8)
                .map(|i| (ids[i].clone(), texts[i].as_str()))
                .collect();
            for c in part.chunks(500) {
                s2.ingest(&docs_of(c), &IngestOptions::default().with_k(Some(4)))
                    .unwrap();
            }
        };
        std::thread::scope(|sc| {
            for t in 0..4 {
                sc.spawn(move || writer(t));
            }
            pool.in_place_scope(|ps| {
                for t in 4..8 {
                    ps.spawn(move |_| writer(t));
                }
                ps.spawn(|_| {
                    let part: Vec<(DocId, &str)> = (0..100)
                        .map(|i| (ids[i].clone(), texts[i].as_str()))
                        .collect();
                    for _ in 0..30 {
                        s2.check_documents(&docs_of(&part), &IngestOptions::default())
                            .unwrap();
                        let _ = s2.stats();
                    }
                });
            });
        });
        tx.send(()).unwrap();
    });
    rx.recv_timeout(std::time::Duration::from_secs(120))
        .expect("concurrent ingest hung (deadlock)");
    // Each document is stored once: as new, or as a duplicate it is not stored.
    let stored = s.pairs().unwrap().len();
    assert!(stored > 0 && stored <= 6000, "{stored}");
    s.verify().unwrap();
}
