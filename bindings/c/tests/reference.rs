//! The Rust API's answers on the corpus every binding's test generates (tests/corpus.md): the
//! C, Go and Java tests assert these same digests, so all four give the same answers.

use simdex::{CreateOptions, DocId, Document, IngestOptions, Recipe, Store, StoreOptions, Verdict};

/// The digests the bindings' tests assert (tests/corpus.md says how each is computed).
const INGEST: u64 = 0x09b5_b283_8960_81e6;
const CHECK: u64 = 0x6b06_e1bb_f733_4ec6;
const DELETED: u64 = 489;
const CHECK_AFTER: u64 = 0x2119_b886_88d9_bbd6;

/// Documents per call (the answers do not depend on it).
const CALL: usize = 10_000;

fn splitmix64(s: &mut u64) -> u64 {
    *s = s.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *s;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// Document `i` of the corpus.
fn text(i: u64) -> String {
    if i % 997 == 996 {
        return String::new();
    }
    let mut s = (i / 4).wrapping_mul(0x100_0000_01B3).wrapping_add(1);
    let mut words: Vec<u64> = (0..80).map(|_| splitmix64(&mut s) % 5000).collect();
    let mut t = i ^ 0xABCDEF;
    for _ in 0..i % 4 {
        let r = splitmix64(&mut t);
        words[(r % 80) as usize] = (r >> 20) % 5000;
    }
    let w: Vec<String> = words.iter().map(|w| format!("w{w}")).collect();
    w.join(" ")
}

/// FNV-1a over each verdict: its kind (one byte), its distance (i32, little-endian, -1 unless
/// a duplicate), its match's id (empty unless a duplicate) and a 0xFF byte.
fn digest(verdicts: &[Verdict]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    let mut eat = |bytes: &[u8]| {
        for &b in bytes {
            h = (h ^ b as u64).wrapping_mul(0x100_0000_01B3);
        }
    };
    for v in verdicts {
        let (kind, dist, id) = match v {
            Verdict::New => (0u8, -1i32, String::new()),
            Verdict::Duplicate { id, distance, .. } => (1, *distance as i32, id.to_string()),
            Verdict::Empty => (2, -1, String::new()),
            Verdict::AlreadyStored => (3, -1, String::new()),
            _ => unreachable!("a verdict kind the bindings do not know"),
        };
        eat(&[kind]);
        eat(&dist.to_le_bytes());
        eat(id.as_bytes());
        eat(&[0xFF]);
    }
    h
}

fn run(store: &Store, prefix: &str, range: std::ops::Range<u64>, write: bool) -> Vec<Verdict> {
    let ids: Vec<DocId> = range
        .clone()
        .map(|i| DocId::parse(&format!("{prefix}{i}")))
        .collect();
    let texts: Vec<String> = range.map(text).collect();
    let opts = IngestOptions::default().with_verify(Some(0.85));
    let mut all = Vec::new();
    for (c, t) in ids.chunks(CALL).zip(texts.chunks(CALL)) {
        let docs: Vec<Document<'_>> = c
            .iter()
            .zip(t)
            .map(|(id, text)| Document { id, text })
            .collect();
        all.extend(match write {
            true => store.ingest(&docs, &opts).unwrap(),
            false => store.check_documents(&docs, &opts).unwrap(),
        });
    }
    all
}

#[test]
fn the_rust_api_gives_the_digests_the_bindings_assert() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("docs");
    let recipe = Recipe::new(2, false, Default::default(), None)
        .unwrap()
        .with_exact(Some(0.8))
        .unwrap();
    Store::create(&path, &CreateOptions::default().with_recipe(Some(recipe))).unwrap();
    let store = Store::open(&path, &StoreOptions::default()).unwrap();
    let verdicts = run(&store, "doc-", 0..100_000, true);
    let dups = verdicts
        .iter()
        .filter(|v| matches!(v, Verdict::Duplicate { .. }))
        .count();
    let empty = verdicts.iter().filter(|v| **v == Verdict::Empty).count();
    // The corpus has what the tests need: new documents, duplicates, documents without words.
    assert!(
        (20_000..60_000).contains(&dups) && empty == 100,
        "{dups} duplicates, {empty} empty"
    );
    let ingest = digest(&verdicts);
    let check = digest(&run(&store, "new-", 0..1000, false));
    let ids: Vec<DocId> = (0..1000)
        .map(|i| DocId::parse(&format!("doc-{i}")))
        .collect();
    let deleted = store.delete_documents(&ids).unwrap();
    store.compact().unwrap();
    store.close().unwrap();
    let store = Store::open(&path, &StoreOptions::default()).unwrap();
    let after = digest(&run(&store, "new-", 0..1000, false));
    println!("{ingest:#x} {check:#x} {deleted} {after:#x}");
    assert_eq!(
        (ingest, check, deleted, after),
        (INGEST, CHECK, DELETED, CHECK_AFTER)
    );
}
